//! Qwen Code's Web Shell at `/`, as `qwen serve` serves it: the `web-shell/`
//! folder of the Qwen Code the user installed (found through `qwen` on
//! `PATH`, never a copy of ours, never a folder inside the workspace), its
//! page and assets without the token (they hold no secret; the page asks for
//! the token and sends it on every API call), with the headers `qwen serve`
//! 0.24.4 gives them (`serve/web-shell-static.ts`).

use std::path::{Component, Path, PathBuf};

use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The Web Shell a route serves from, if any (from the daemon's state).
#[derive(Debug, Clone)]
pub(crate) struct Served(pub Option<WebShell>);

/// The Web Shell found, and the version of the package it came with.
#[derive(Debug, Clone)]
pub(crate) struct WebShell {
    /// The `web-shell/` folder.
    pub(crate) dir: PathBuf,
    /// The package's version (`package.json`).
    pub(crate) version: String,
}

/// The package whose Web Shell is served.
const PACKAGE: &str = "@qwen-code/qwen-code";
/// How far above the `qwen` it runs the package's folder may be.
const PACKAGE_DEPTH: usize = 10;
/// The largest `package.json` read.
const PACKAGE_JSON_BYTES_MAX: u64 = 1024 * 1024;

/// Why no Web Shell is served.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoWebShell {
    #[error("no `qwen` of {PACKAGE} on PATH (npm install -g {PACKAGE})")]
    NotInstalled,
    #[error("{} is inside the workspace, and a workspace's files are not served", .0.display())]
    InWorkspace(PathBuf),
    #[error("{} has no web-shell/index.html and assets/", .0.display())]
    Incomplete(PathBuf),
}

/// The Web Shell of the Qwen Code installed on `path` (the `PATH` value):
/// the first `qwen` there whose package (its real file's folder or one above)
/// is `@qwen-code/qwen-code` with a `web-shell/` holding `index.html` and
/// `assets/`, outside `workspace`. Why not, when none is: the last package
/// found that could not serve, else none installed.
pub(crate) fn find(
    path: Option<&std::ffi::OsStr>,
    workspace: &Path,
) -> Result<WebShell, NoWebShell> {
    let mut why = NoWebShell::NotInstalled;
    for dir in std::env::split_paths(path.unwrap_or_default()) {
        let Ok(real) = std::fs::canonicalize(dir.join("qwen")) else {
            continue;
        };
        if !real.is_file() {
            continue;
        }
        for package in real.ancestors().skip(1).take(PACKAGE_DEPTH) {
            if !is_package(package) {
                continue;
            }
            if package.starts_with(workspace) {
                why = NoWebShell::InWorkspace(package.to_path_buf());
                break;
            }
            let dir = package.join("web-shell");
            if !dir.join("index.html").is_file() || !dir.join("assets").is_dir() {
                why = NoWebShell::Incomplete(package.to_path_buf());
                break;
            }
            return Ok(WebShell {
                version: version(package).unwrap_or_default(),
                dir,
            });
        }
    }
    Err(why)
}

/// The package's `package.json`, when it names the package.
fn package_json(package: &Path) -> Option<serde_json::Value> {
    let file = package.join("package.json");
    let meta = std::fs::metadata(&file).ok()?;
    if !meta.is_file() || meta.len() > PACKAGE_JSON_BYTES_MAX {
        return None;
    }
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    (json["name"] == PACKAGE).then_some(json)
}

fn is_package(package: &Path) -> bool {
    package_json(package).is_some()
}

fn version(package: &Path) -> Option<String> {
    Some(package_json(package)?["version"].as_str()?.to_string())
}

/// The Web Shell to serve at `url`, said on stderr: where it is, or why
/// there is none.
pub(crate) fn announced(url: &str, workspace: &Path) -> Option<WebShell> {
    let clean = cmdlog_common::terminal::clean;
    match find(std::env::var_os("PATH").as_deref(), workspace) {
        Ok(shell) => {
            eprintln!(
                "cmdlog serve: Qwen Code's Web Shell ({}) at {url}/ from {}",
                clean(&shell.version),
                clean(&shell.dir.display().to_string())
            );
            Some(shell)
        }
        Err(why) => {
            eprintln!(
                "cmdlog serve: no Web Shell at {url}/: {}; --no-web says nothing of it",
                clean(&why.to_string())
            );
            None
        }
    }
}

/// Whether a GET is a browser loading a page (not the API or a fetch).
pub(crate) fn is_document_navigation(headers: &HeaderMap) -> bool {
    let is = |name: &str, value: &str| headers.get(name).is_some_and(|v| v == value);
    is("sec-fetch-mode", "navigate")
        || is("sec-fetch-dest", "document")
        || headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.starts_with("text/html"))
}

/// `GET /` and a page load of `/session/{id}`: the page, with `qwen serve`'s
/// headers (its policy: scripts and connections to this origin only, no
/// framing).
pub(super) async fn index(State(Served(shell)): State<Served>) -> Response {
    let Some(shell) = shell else {
        // Without the Web Shell, `/` opens the workbench.
        return axum::response::Redirect::to("/ui/").into_response();
    };
    let Ok(page) = tokio::fs::read(shell.dir.join("index.html")).await else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "Failed to load Web Shell",
        )
            .into_response();
    };
    let headers = [
        (header::CONTENT_TYPE, "text/html; charset=UTF-8"),
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (
            header::HeaderName::from_static("permissions-policy"),
            "camera=(), microphone=(self), geolocation=(), payment=(), clipboard-write=(self)",
        ),
        (header::CACHE_CONTROL, "no-cache"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ];
    (headers, page).into_response()
}

/// The page's Content-Security-Policy, as `qwen serve` 0.24.4 builds it for a
/// page of its own origin (`buildWebShellCsp`).
const CSP: &str = "default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval' 'wasm-unsafe-eval' data:; style-src 'self' 'unsafe-inline' data:; font-src 'self' data:; img-src 'self' data: blob:; media-src 'self' data:; worker-src 'self' blob:; base-uri 'none'; connect-src 'self' https://unpkg.com/@qwen-code/; frame-src http: https: blob:; frame-ancestors 'none'";

/// `GET /session/{id}` loaded as a page (the page's own address for a
/// session): the page; anything else is not a route.
pub(super) async fn session_page(
    served: State<Served>,
    UrlPath(_id): UrlPath<String>,
    headers: HeaderMap,
) -> Response {
    match is_document_navigation(&headers) {
        true => index(served).await,
        false => not_found(),
    }
}

/// `GET /assets/{*path}`: a file of the page's, by a plain relative path.
pub(super) async fn asset(
    State(Served(shell)): State<Served>,
    UrlPath(path): UrlPath<String>,
) -> Response {
    let Some(shell) = shell else {
        return not_found();
    };
    let Some(relative) = plain(&path) else {
        return not_found();
    };
    let cache = match hashed(&path) {
        true => "public, max-age=31536000, immutable",
        false => "no-cache",
    };
    file(&shell.dir.join("assets").join(relative), cache, &[]).await
}

/// `GET /sw.js` and `GET /manifest.webmanifest`, the page's service worker and
/// manifest.
pub(super) async fn service_worker(State(Served(shell)): State<Served>) -> Response {
    match shell {
        Some(shell) => {
            let allowed = [("service-worker-allowed", "/")];
            file(&shell.dir.join("sw.js"), "no-cache", &allowed).await
        }
        None => not_found(),
    }
}

pub(super) async fn manifest(State(Served(shell)): State<Served>) -> Response {
    match shell {
        Some(shell) => file(&shell.dir.join("manifest.webmanifest"), "no-cache", &[]).await,
        None => not_found(),
    }
}

/// `path` when every part of it is a plain name (no `..`, no hidden file, no
/// absolute path), of the characters asset names use.
fn plain(path: &str) -> Option<&Path> {
    let ok = !path.is_empty()
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b))
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(n) if !n.to_string_lossy().starts_with('.')));
    ok.then_some(Path::new(path))
}

/// Whether a name carries its content's hash (`index-C0YFCwlu.js`): it never
/// changes, and may be cached for good.
fn hashed(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some((stem, _)) = name.rsplit_once('.') else {
        return false;
    };
    stem.rsplit_once('-').is_some_and(|(_, hash)| {
        hash.len() >= 8
            && hash
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    })
}

/// A regular file (never a link) of the page's, with its type.
async fn file(
    path: &Path,
    cache: &'static str,
    extra: &[(&'static str, &'static str)],
) -> Response {
    match tokio::fs::symlink_metadata(path).await {
        Ok(meta) if meta.is_file() => {}
        _ => return not_found(),
    }
    let Ok(bytes) = tokio::fs::read(path).await else {
        return not_found();
    };
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(media_type(path)),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    for (name, value) in extra {
        headers.insert(*name, HeaderValue::from_static(value));
    }
    response
}

fn media_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "js" | "mjs" => "application/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "html" => "text/html; charset=utf-8",
        "json" | "map" => "application/json; charset=utf-8",
        "webmanifest" => "application/manifest+json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        "wasm" => "application/wasm",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not found").into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_asset_paths_are_served() {
        assert!(plain("index-C0YFCwlu.js").is_some());
        assert!(plain("fonts/a-1.woff2").is_some());
        for bad in [
            "",
            "../package.json",
            "a/../../b",
            "/etc/passwd",
            ".hidden",
            "a/.git/x",
            "a b",
        ] {
            assert!(plain(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn hashed_names_are_cached_for_good() {
        assert!(hashed("index-C0YFCwlu.js"));
        assert!(hashed("chunks/x-AbCdEf12.css"));
        assert!(!hashed("index.js"));
        assert!(!hashed("sw.js"));
        assert!(!hashed("a-short.js"));
    }
}
