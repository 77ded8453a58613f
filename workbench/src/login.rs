//! The login page: where a browser gives the daemon's token once, for a
//! session cookie the pages accept (the API's routes never do).

use askama::Template;

use crate::PageError;
use crate::text::shown;

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage {
    title: String,
    query: String,
    error: String,
    next: String,
}

/// The login page; `error` says why the last try failed, `next` is the
/// workbench page to go back to (a `/ui/` path; anything else is dropped).
pub fn login_page(error: &str, next: &str) -> Result<String, PageError> {
    let next = if next.starts_with("/ui/") && !next.starts_with("/ui//") && !next.contains('\\') {
        next
    } else {
        "/ui/"
    };
    LoginPage {
        title: "Log in".into(),
        query: String::new(),
        error: shown(error),
        next: shown(next),
    }
    .render()
    .map_err(PageError::from)
}

#[derive(Template)]
#[template(path = "message.html")]
struct MessagePage {
    title: String,
    query: String,
    text: String,
}

/// A page that says why what was asked for cannot be shown.
pub fn message_page(title: &str, text: &str) -> Result<String, PageError> {
    MessagePage {
        title: shown(title),
        query: String::new(),
        text: shown(text),
    }
    .render()
    .map_err(PageError::from)
}
