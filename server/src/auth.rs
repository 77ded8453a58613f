//! Who may reach the daemon: the `Host` it is addressed by (a DNS rebinding page
//! names its own host), the browser `Origin` of a daemon without a token, and the
//! bearer token in front of every route but `/health`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::state::{Access, ApiError, AppState};

/// The loopback names a local daemon answers to.
pub(crate) const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// Refuses requests addressed to a host the daemon does not answer to, and browser
/// requests from an origin nobody allowed on a daemon without a token.
pub(super) async fn require_host_and_origin(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(e) = check_host(&state.access, request.headers()) {
        return e.into_response();
    }
    if let Err(e) = check_origin(&state.access, request.headers()) {
        return e.into_response();
    }
    next.run(request).await
}

fn check_host(access: &Access, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(hosts) = &access.hosts else {
        return Ok(());
    };
    // HTTP/1.0 clients may send none; browsers (the rebinding threat) always do.
    let Some(host) = headers.get(header::HOST) else {
        return Ok(());
    };
    let refuse = |shown: &str| {
        ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "this daemon does not answer to host {shown:?}: use http://127.0.0.1:{port}, or start it with --allow-host NAME",
                port = access.port
            ),
        )
    };
    let text = host.to_str().map_err(|_| refuse("(not ASCII)"))?;
    let (name, port) = split_host(text);
    let name = name.to_ascii_lowercase();
    let port_ok = port.is_none_or(|p| p.parse::<u16>() == Ok(access.port));
    if port_ok && hosts.contains(&name) {
        Ok(())
    } else {
        Err(refuse(text))
    }
}

/// `name[:port]`, with `[v6]` names kept bracketed.
fn split_host(text: &str) -> (&str, Option<&str>) {
    if text.starts_with('[') {
        return match text.find(']') {
            Some(end) => {
                let (name, rest) = text.split_at(end + 1);
                (name, rest.strip_prefix(':'))
            }
            None => (text, None),
        };
    }
    match text.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (text, None),
    }
}

fn check_origin(access: &Access, headers: &HeaderMap) -> Result<(), ApiError> {
    if access.token.is_some() {
        return Ok(());
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("");
    if access.origins.iter().any(|o| o == origin) || own_origin(access, origin) {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        format!(
            "browser requests from origin {origin:?} are refused by a daemon without a token: start it with --allow-origin {origin} (or with --token)"
        ),
    ))
}

/// Whether `origin` is the daemon's own on loopback (a page it serves, as
/// `qwen serve` serves the Web Shell): a page elsewhere cannot send it, and
/// one rebound to the loopback address names its own host.
fn own_origin(access: &Access, origin: &str) -> bool {
    LOOPBACK_HOSTS
        .iter()
        .any(|host| origin == format!("http://{host}:{}", access.port))
}

pub(super) async fn require_token(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    // A hook proves itself with the key in daemon.json (which only this user can
    // read) instead of the token, on its own route only.
    let hook_key = request
        .headers()
        .get("x-cmdlog-hook-key")
        .and_then(|v| v.to_str().ok());
    if request.uri().path().starts_with("/hook/")
        && hook_key.is_some_and(|k| state.capture.daemon.key_matches(k))
    {
        return next.run(request).await;
    }
    // The Web Shell's page for a session, loaded by the browser: no secret in
    // it, and the page asks for the token itself.
    if state.access.web_shell.is_some()
        && request.method() == axum::http::Method::GET
        && request.uri().path().starts_with("/session/")
        && request.uri().path()["/session/".len()..].split('/').count() == 1
        && crate::web_shell::is_document_navigation(request.headers())
    {
        return next.run(request).await;
    }
    if let Some(token) = &state.access.token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        // Constant time: the comparison does not reveal how much of the token matched.
        let ok: bool = given.as_bytes().ct_eq(token.as_bytes()).into();
        if !ok {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "missing or wrong bearer token: send Authorization: Bearer <token>",
            )
            .into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn only_loopback_names_on_the_bound_port_reach_a_local_daemon() {
        let access = Access {
            token: None,
            hosts: Some(LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect()),
            port: 4170,
            origins: vec!["http://app.example".into()],
            web_shell: None,
        };
        for ok in [
            "127.0.0.1:4170",
            "localhost:4170",
            "LOCALHOST:4170",
            "[::1]:4170",
            "localhost",
        ] {
            assert!(
                check_host(&access, &headers(&[("host", ok)])).is_ok(),
                "{ok}"
            );
        }
        for bad in [
            "evil.example:4170",
            "evil.example",
            "127.0.0.1:80",
            "localhost.evil.example:4170",
            "[::1]:1",
        ] {
            assert!(
                check_host(&access, &headers(&[("host", bad)])).is_err(),
                "{bad}"
            );
        }
        assert!(check_origin(&access, &headers(&[("origin", "http://evil.example")])).is_err());
        assert!(check_origin(&access, &headers(&[("origin", "http://app.example")])).is_ok());
        assert!(check_origin(&access, &headers(&[])).is_ok());
        // Its own page, on any loopback name; not another port.
        assert!(check_origin(&access, &headers(&[("origin", "http://localhost:4170")])).is_ok());
        assert!(check_origin(&access, &headers(&[("origin", "http://127.0.0.1:4171")])).is_err());
        let with_token = Access {
            token: Some("t".into()),
            ..access
        };
        assert!(check_origin(&with_token, &headers(&[("origin", "http://evil.example")])).is_ok());
    }
}
