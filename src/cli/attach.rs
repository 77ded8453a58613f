//! `cmdlog attach`: the terminal client of seed 003, in line mode, on the daemon's
//! `qwen serve` wire (`cmdlog_server::attach` holds it): typed lines go out as
//! prompts, model switches and permission answers; what the session does comes
//! back as it happens, escaped for the terminal.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use clap::Args;
use cmdlog_server::attach::{AttachError, Client, Input, Screen, Shown, follow_in_background};

use super::{CliError, VerbResult};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct AttachArgs {
    /// The daemon's URL (`cmdlog serve` prints it; .cmdlog/daemon.json has it)
    #[arg(long, env = "CMDLOG_DAEMON_URL")]
    daemon_url: Option<String>,
    /// Bearer token for the daemon
    #[arg(long, env = "CMDLOG_DAEMON_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Session to attach to (created if new) [default: a new session]
    #[arg(long)]
    session: Option<String>,
}

pub(crate) fn exec(args: AttachArgs) -> VerbResult {
    let Some(url) = args.daemon_url else {
        return Err(CliError::usage(
            "attach needs the daemon's URL: pass --daemon-url or set CMDLOG_DAEMON_URL (start one with `cmdlog serve`)",
        ));
    };
    attach(&url, args.token, args.session.as_deref()).map(|()| 0)
}

impl From<AttachError> for CliError {
    fn from(e: AttachError) -> CliError {
        let hint = match &e {
            AttachError::Unreachable { .. } => Some("start it with `cmdlog serve`"),
            AttachError::TokenWanted => Some("pass --token or set CMDLOG_DAEMON_TOKEN"),
            _ => None,
        };
        let error = CliError::io(render::clean(&e.to_string()));
        match hint {
            Some(h) => error.hint(h),
            None => error,
        }
    }
}

/// Prints what is new, escaped.
fn print<W: Write>(shown: Vec<Shown>, out: &mut render::Human<W>) {
    for item in shown {
        let _ = match item {
            Shown::Text(text) => write!(out, "{text}"),
            Shown::Thought(text) => out.paint(true, "2", &text).and_then(|()| writeln!(out)),
            Shown::Note(line) => writeln!(out, "{line}"),
        };
    }
    let _ = out.flush();
}

/// Runs the client until stdin ends or `/quit`.
pub(crate) fn attach(
    url: &str,
    token: Option<String>,
    session: Option<&str>,
) -> Result<(), CliError> {
    let client = Arc::new(Client::new(url, token));
    let session = client.open(session)?;
    eprintln!(
        "[attached to session {} at {}; /quit to leave, Ctrl-C cancels]",
        render::clean(&session),
        render::clean(client.url())
    );
    let screen = Arc::new(Mutex::new(Screen::new(&session)));
    follow_in_background(
        Arc::clone(&client),
        session.clone(),
        Arc::clone(&screen),
        |shown| print(shown, &mut render::Human::stdout(false)),
        |from| eprintln!("[connection lost; reconnecting from event {from}]"),
    );
    {
        // Ctrl-C cancels the session's in-flight work instead of killing the client.
        let (client, session) = (Arc::clone(&client), session.clone());
        std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            while runtime.block_on(tokio::signal::ctrl_c()).is_ok() {
                let _ = client.request("POST", &format!("/session/{session}/cancel"), None);
                eprintln!("[cancelled]");
            }
        });
    }
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let input = Input::parse(&line);
        if input == Input::Quit {
            break;
        }
        let asked = input.request(&session, &screen.lock().unwrap_or_else(|p| p.into_inner()));
        let (route, body) = match asked {
            Ok(Some(request)) => request,
            Ok(None) => continue,
            Err(why) => {
                eprintln!("[{}]", render::clean(&why.to_string()));
                continue;
            }
        };
        let (status, answer) = client.request("POST", &route, Some(body))?;
        if !(200..300).contains(&status) {
            eprintln!(
                "[{}]",
                render::clean(answer["error"].as_str().unwrap_or("request failed"))
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn agent_text_reaches_the_terminal_escaped() {
        let mut screen = Screen::new("s");
        let mut out = render::Human::new(Vec::new(), false);
        let hostile = "\x1b]0;owned\x07\x1b[2J\x1b]52;c;Zm9v\x07\u{9b}";
        for (seq, kind, data) in [
            (
                1,
                "session/update",
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": hostile}}),
            ),
            (
                2,
                "session/update",
                json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": hostile}}),
            ),
            (
                3,
                "session/update",
                json!({"sessionUpdate": "tool_call", "toolCallId": hostile, "title": hostile, "status": "pending"}),
            ),
            (
                4,
                "permission/requested",
                json!({"request_id": hostile, "options": ["allow"]}),
            ),
            (5, "session/model_switched", json!({"model": hostile})),
        ] {
            let frame = json!({"id": seq, "_meta": {"cmdlog": {"seq": seq, "type": kind,
                "event": {"type": kind, "session": "s", "agent": "main", "at": seq, "data": data}}}});
            print(screen.frame(&frame), &mut out);
        }
        let text = String::from_utf8(out.into_inner()).unwrap();
        // Only the dimming cmdlog adds itself is an escape.
        assert_eq!(text.matches('\x1b').count(), 2, "{text:?}");
        assert!(
            !text.contains('\x07') && !text.contains('\u{9b}'),
            "{text:?}"
        );
        assert!(text.contains("\\u{1b}]0;owned"), "{text:?}");
        assert!(text.starts_with("\\u{1b}]0;owned"), "{text:?}");
    }
}
