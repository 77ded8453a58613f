//! The auditor's workbench under `/ui/` (issue 42): the pages of
//! `cmdlog-workbench`, served read-only, with their own way in. A browser
//! gives the daemon's token once on `/ui/login` and gets a session cookie
//! (`HttpOnly`, `SameSite=Strict`, path `/ui`, expiring) that only these
//! pages accept: every route that prompts, votes or writes still takes the
//! bearer header alone, so a page of another origin cannot act through a
//! logged-in browser. A wrong token is answered the same way whatever it
//! is, and more slowly after repeated failures.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Form, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use subtle::ConstantTimeEq;

use crate::limits::UI_LOGIN_TTL;
use crate::state::AppState;
use crate::ui_downloads as downloads;
use crate::ui_page::{answer, html, local_site, page, with_mirror};

/// The cookie the workbench's pages accept.
const COOKIE: &str = "cmdlog_ui";

/// Readies the workbench as the daemon starts, and says where it is; with a
/// hub, starts mirroring the team's logs.
pub(crate) fn start(
    state: &Arc<AppState>,
    url: &str,
    hub: Option<cmdlog_hub::HubOptions>,
    witnesses: Vec<cmdlog_tlog::NoteVerifier>,
) {
    warm(state);
    announce(url, state.access.token.is_some());
    if let Some(hub) = hub {
        match cmdlog_common::private_fs::state_dir() {
            Ok(dir) => {
                eprintln!(
                    "cmdlog serve: the team's logs from {} at {url}/ui/hub/",
                    cmdlog_common::terminal::clean(&cmdlog_hub::shown_url(&hub.url))
                );
                state
                    .mirrors
                    .follow(hub, witnesses, dir, state.shutdown.clone());
            }
            Err(e) => eprintln!("cmdlog serve: no team view: the state folder: {e}"),
        }
    }
}

/// Folds the log's sessions on a thread of its own as the daemon starts, so
/// the first look at the sessions page of a big log does not wait for it.
fn warm(state: &Arc<AppState>) {
    let state = Arc::clone(state);
    let spawned = std::thread::Builder::new()
        .name("cmdlog-sessions".into())
        .spawn(move || {
            let Ok(engine) = state.engine() else { return };
            let mut fold = state.sessions.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = fold.update(engine.log()) {
                eprintln!(
                    "cmdlog serve: the workbench's sessions list stops at seq {}: {}",
                    fold.through(),
                    cmdlog_common::terminal::clean(&e.to_string())
                );
            }
        });
    if let Err(e) = spawned {
        eprintln!("cmdlog serve: the sessions list is folded on first use: {e}");
    }
}

/// Says on stderr where the workbench is.
fn announce(url: &str, token: bool) {
    let login = if token {
        " (log in with the token)"
    } else {
        ""
    };
    eprintln!("cmdlog serve: the workbench at {url}/ui/{login}");
}

/// The workbench's routes.
pub(crate) fn routes(state: &Arc<AppState>) -> Router<Arc<AppState>> {
    let pages = Router::new()
        .route("/ui/", get(sessions))
        .route("/ui/session/{id}", get(session))
        .route("/ui/event/{seq}", get(event))
        .route("/ui/search", get(search))
        .route("/ui/registry", get(registry))
        .route("/ui/drift", get(drift))
        .route("/ui/event/{seq}/proof", get(downloads::proof))
        .route("/ui/session/{id}/proofs", get(downloads::session_proofs))
        .route("/ui/blob/{hashes}", get(downloads::blob))
        .route("/ui/blob/{hashes}/raw", get(downloads::blob_raw))
        .route("/ui/hub/{log}/blob/{hashes}", get(downloads::team_blob))
        .route(
            "/ui/hub/{log}/blob/{hashes}/raw",
            get(downloads::team_blob_raw),
        )
        .route("/ui/checkpoint", get(checkpoint))
        .route("/ui/session/{id}/live", get(live))
        .route("/ui/hub/", get(team))
        .route("/ui/hub/search", get(team_search))
        .route("/ui/hub/{log}/", get(team_sessions))
        .route("/ui/hub/{log}/session/{id}", get(team_session))
        .route("/ui/hub/{log}/event/{seq}", get(team_event))
        .layer(middleware::from_fn_with_state(
            Arc::clone(state),
            require_login,
        ));
    Router::new()
        .route("/ui", get(|| async { Redirect::to("/ui/") }))
        .route("/ui/login", get(login_form).post(login))
        .route("/ui/logout", post(logout))
        .route("/ui/assets/{name}", get(asset))
        .merge(pages)
        .layer(middleware::map_response(page_headers))
}

/// What every workbench answer carries: its policy (nothing runs or loads
/// but the workbench's own), and no caching, framing or referrer.
async fn page_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(cmdlog_workbench::CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

fn cookie_of(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v)
}

fn bearer_ok(token: &str, headers: &HeaderMap) -> bool {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    given.as_bytes().ct_eq(token.as_bytes()).into()
}

/// A page is shown to the bearer of the token, or to a browser logged in;
/// anyone else gets the login page, with 401.
async fn require_login(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(token) = &state.access.token else {
        return next.run(request).await;
    };
    if bearer_ok(token, request.headers())
        || cookie_of(request.headers()).is_some_and(|id| state.logins.logged_in(id))
    {
        return next.run(request).await;
    }
    let next_page = request
        .uri()
        .path_and_query()
        .map_or("/ui/", |p| p.as_str())
        .to_string();
    html(
        StatusCode::UNAUTHORIZED,
        cmdlog_workbench::login_page("", &next_page),
    )
}

async fn sessions(
    State(state): State<Arc<AppState>>,
    Query(params): Query<cmdlog_workbench::ListParams>,
) -> Response {
    page(state, move |state, log| {
        let mut fold = state.sessions.lock().unwrap_or_else(|p| p.into_inner());
        fold.update(log)
            .map_err(|e| cmdlog_workbench::PageError::Log(e.to_string()))?;
        cmdlog_workbench::sessions_page(&fold, &params, &local_site(state))
    })
    .await
}

async fn session(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    Query(params): Query<cmdlog_workbench::SessionParams>,
) -> Response {
    page(state, move |state, log| {
        let mut fold = state.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let known = fold.update(log).is_ok().then_some(&*fold);
        cmdlog_workbench::session_page(log, &id, &params, known, &local_site(state))
    })
    .await
}

async fn registry(
    State(state): State<Arc<AppState>>,
    Query(params): Query<cmdlog_workbench::RegistryParams>,
) -> Response {
    page(state, move |_, log| {
        cmdlog_workbench::registry_page(log, &params)
    })
    .await
}

#[derive(Deserialize)]
struct DriftQuery {
    #[serde(default)]
    run: Option<u64>,
}

/// `GET /ui/drift[?run=SEQ]`: the prompt runs against today's command files,
/// discovered afresh for this page (the daemon's workspace and home).
async fn drift(State(state): State<Arc<AppState>>, Query(q): Query<DriftQuery>) -> Response {
    page(state, move |state, log| {
        let config =
            cmdlog_engine::discovery::DiscoveryConfig::from_env(&state.home, &state.workspace);
        let today = cmdlog_engine::discovery::discover(&config).map_err(|e| {
            cmdlog_workbench::PageError::Log(format!("discovering today's command files: {e}"))
        })?;
        cmdlog_workbench::drift_page(log, &today, q.run)
    })
    .await
}

async fn event(State(state): State<Arc<AppState>>, Path(seq): Path<u64>) -> Response {
    page(state, move |_, log| {
        cmdlog_workbench::event_page(log, seq, &cmdlog_workbench::Site::local())
    })
    .await
}

async fn search(
    State(state): State<Arc<AppState>>,
    Query(params): Query<cmdlog_workbench::SearchParams>,
) -> Response {
    page(state, move |_, log| {
        cmdlog_workbench::search_page(log.path(), log, &params)
    })
    .await
}

#[derive(Deserialize)]
struct NextQuery {
    #[serde(default)]
    next: String,
}

async fn login_form(Query(q): Query<NextQuery>) -> Response {
    html(StatusCode::OK, cmdlog_workbench::login_page("", &q.next))
}

#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    next: String,
}

/// Whether a browser's form was sent from the daemon's own page. A browser
/// says so in `Sec-Fetch-Site`; one too old to send it sends an `Origin` that
/// names the host it was sent to. (The pages send no referrer, so a
/// browser's `Origin` on their forms is `null`: the fetch metadata is what
/// tells.) A client that is not a browser sends neither.
fn same_origin(headers: &HeaderMap) -> bool {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text(header::HeaderName::from_static("sec-fetch-site")) {
        return matches!(site, "same-origin" | "none");
    }
    let Some(origin) = text(header::ORIGIN) else {
        return true;
    };
    let host = text(header::HOST).unwrap_or("");
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|o| !host.is_empty() && o.eq_ignore_ascii_case(host))
}

async fn login(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    if !same_origin(&headers) {
        return html(
            StatusCode::FORBIDDEN,
            cmdlog_workbench::login_page(
                "this form was sent from another site's page: log in from this daemon's own /ui/login",
                &form.next,
            ),
        );
    }
    let next = if form.next.starts_with("/ui/") && !form.next.starts_with("/ui//") {
        form.next.clone()
    } else {
        "/ui/".to_string()
    };
    let ok = match &state.access.token {
        None => true,
        Some(token) => bool::from(form.token.as_bytes().ct_eq(token.as_bytes())),
    };
    if !ok {
        tokio::time::sleep(state.logins.failed()).await;
        return html(
            StatusCode::UNAUTHORIZED,
            cmdlog_workbench::login_page("that is not this daemon's token", &next),
        );
    }
    let id = state.logins.log_in();
    let cookie = format!(
        "{COOKIE}={id}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}",
        UI_LOGIN_TTL.as_secs()
    );
    let mut response = Redirect::to(&next).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

async fn logout(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if let Some(id) = cookie_of(&headers) {
        state.logins.log_out(id);
    }
    let mut response = Redirect::to("/ui/login").into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("cmdlog_ui=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    response
}

async fn asset(Path(name): Path<String>) -> Response {
    match cmdlog_workbench::asset(&name) {
        Some(a) => (
            [
                (header::CONTENT_TYPE, a.content_type),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            a.bytes,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such workbench file").into_response(),
    }
}

#[derive(Deserialize)]
struct LiveQuery {
    #[serde(default)]
    after: u64,
}

/// `GET /ui/session/{id}/live?after=SEQ`: an SSE stream that says
/// `appended` (with the session's newest seq) each time the session gains
/// events after `after`; the page then fetches itself again. Read-only, and
/// it holds no engine between two appends: a store reopened ends it, and
/// the browser's `EventSource` comes back.
async fn live(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    Query(q): Query<LiveQuery>,
) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let log = match state.engine() {
        Ok(engine) => Arc::clone(engine.log()),
        Err(e) => return e.into_response(),
    };
    let head = log.subscribe();
    let stopped = state.shutdown.clone();
    let start = (log, head, q.after, id, stopped);
    let stream =
        futures_util::stream::unfold(start, |(log, mut head, after, id, stopped)| async move {
            loop {
                let (reader, key) = (Arc::clone(&log), id.clone());
                let newest = tokio::task::spawn_blocking(move || {
                    reader
                        .stream_seqs(&key, after)
                        .ok()
                        .and_then(|s| s.last().copied())
                })
                .await
                .ok()
                .flatten();
                if let Some(seq) = newest {
                    let event = Event::default().event("appended").data(seq.to_string());
                    return Some((
                        Ok::<_, std::convert::Infallible>(event),
                        (log, head, seq, id, stopped),
                    ));
                }
                tokio::select! {
                    changed = head.changed() => if changed.is_err() { return None },
                    () = stopped.cancelled() => return None,
                }
            }
        });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(std::time::Duration::from_secs(15)))
        .into_response()
}

/// `GET /ui/checkpoint`: to the log's signed checkpoint (a public route).
async fn checkpoint(State(state): State<Arc<AppState>>) -> Response {
    match state.transparency.as_ref() {
        Some(t) => Redirect::to(&format!("/log/{}/checkpoint", t.log_id)).into_response(),
        None => html(
            StatusCode::NOT_FOUND,
            cmdlog_workbench::message_page(
                "No checkpoint",
                "this log has no id, so it has no signed checkpoint: `cmdlog checkpoint` gives it one",
            ),
        ),
    }
}

/// `GET /ui/hub/`: every log of the hub `serve --hub` mirrors.
async fn team(State(state): State<Arc<AppState>>) -> Response {
    let Some(hub) = state.mirrors.hub.get().cloned() else {
        return html(
            StatusCode::NOT_FOUND,
            cmdlog_workbench::message_page(
                "No team view",
                "this daemon mirrors no hub: start it with `cmdlog serve --hub URL`",
            ),
        );
    };
    let unreachable = state
        .mirrors
        .unreachable
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let mut logs = Arc::clone(&state.mirrors.logs).lock_owned().await;
    let made = tokio::task::spawn_blocking(move || {
        let machines: Vec<cmdlog_workbench::Machine> = logs
            .iter_mut()
            .map(|(id, m)| {
                let opened = match (&m.path, &m.error) {
                    (Some(path), None) => {
                        cmdlog_store::Log::open(path, cmdlog_store::LogConfig::default())
                            .map_err(|e| e.to_string())
                    }
                    (_, e) => Err(e.clone().unwrap_or_default()),
                };
                let (sessions, head, error) = match opened {
                    Ok(log) => match m.sessions.update(&log) {
                        Ok(_) => (Some(m.sessions.len()), log.head().seq, None),
                        Err(e) => (None, log.head().seq, Some(e.to_string())),
                    },
                    Err(e) => (None, 0, Some(e)),
                };
                cmdlog_workbench::Machine {
                    log_id: id.clone(),
                    host: m.host.clone(),
                    sessions,
                    head,
                    error,
                }
            })
            .collect();
        cmdlog_workbench::team_page(&hub, &machines, unreachable.as_deref())
    })
    .await;
    answer(made)
}

/// Makes a page from the mirror of the hub's log `log_id`, on a blocking
/// thread, while no round of the mirroring has the clone open.
async fn mirror_page(
    state: Arc<AppState>,
    log_id: String,
    make: impl FnOnce(
        &cmdlog_store::Log,
        &mut crate::mirrors::Mirror,
        &cmdlog_workbench::Site,
    ) -> Result<String, cmdlog_workbench::PageError>
    + Send
    + 'static,
) -> Response {
    html(StatusCode::OK, with_mirror(&state, log_id, make).await)
}

async fn team_sessions(
    State(state): State<Arc<AppState>>,
    Path(log): Path<String>,
    Query(params): Query<cmdlog_workbench::ListParams>,
) -> Response {
    mirror_page(state, log, move |log, mirror, site| {
        mirror
            .sessions
            .update(log)
            .map_err(|e| cmdlog_workbench::PageError::Log(e.to_string()))?;
        cmdlog_workbench::sessions_page(&mirror.sessions, &params, site)
    })
    .await
}

async fn team_session(
    State(state): State<Arc<AppState>>,
    Path((log, id)): Path<(String, String)>,
    Query(params): Query<cmdlog_workbench::SessionParams>,
) -> Response {
    mirror_page(state, log, move |log, mirror, site| {
        let known = mirror
            .sessions
            .update(log)
            .is_ok()
            .then_some(&mirror.sessions);
        cmdlog_workbench::session_page(log, &id, &params, known, site)
    })
    .await
}

async fn team_event(
    State(state): State<Arc<AppState>>,
    Path((log, seq)): Path<(String, u64)>,
) -> Response {
    mirror_page(state, log, move |log, _, site| {
        cmdlog_workbench::event_page(log, seq, site)
    })
    .await
}

/// `GET /ui/hub/search?q=`: one search over every mirrored log of the hub.
async fn team_search(
    State(state): State<Arc<AppState>>,
    Query(params): Query<cmdlog_workbench::SearchParams>,
) -> Response {
    let logs = Arc::clone(&state.mirrors.logs).lock_owned().await;
    let made = tokio::task::spawn_blocking(move || {
        let opened: Vec<(cmdlog_workbench::Site, cmdlog_store::Log)> = logs
            .iter()
            .filter(|(_, m)| m.error.is_none())
            .filter_map(|(id, m)| {
                let log =
                    cmdlog_store::Log::open(m.path.as_ref()?, cmdlog_store::LogConfig::default())
                        .ok()?;
                Some((
                    cmdlog_workbench::Site::mirror(id, &m.host).witnessed(m.witnessed.clone()),
                    log,
                ))
            })
            .collect();
        let each: Vec<(cmdlog_workbench::Site, &cmdlog_store::Log)> = opened
            .iter()
            .map(|(site, log)| (site.clone(), log))
            .collect();
        cmdlog_workbench::team_search_page(&params.q, &each)
    })
    .await;
    answer(made)
}
