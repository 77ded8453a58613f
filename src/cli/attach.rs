//! `cmdlog attach`: the terminal client of seed 003, in line mode, on the daemon's
//! `qwen serve` wire. It asks the event stream for the log records behind the
//! frames (`?cmdlog=1`), renders them with the same `SessionView` reducer replay
//! uses, submits typed lines as prompts, and resumes the stream with the last
//! event id after a dropped connection.

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
    attach(AttachConfig {
        url,
        token: args.token,
        session: args.session,
    })
    .map(|()| 0)
}

use std::io::{BufRead, BufReader, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cmdlog_engine::Event;
use cmdlog_replay::SessionView;
use serde_json::{Value, json};

use clap::Args;

use super::{CliError, VerbResult};
use crate::render;

/// The features a daemon must offer before the client starts.
const REQUIRED_FEATURES: [&str; 3] = ["session_create", "session_prompt", "session_events"];

/// How the client connects.
pub(crate) struct AttachConfig {
    pub(crate) url: String,
    pub(crate) token: Option<String>,
    pub(crate) session: Option<String>,
}

struct Client {
    agent: ureq::Agent,
    url: String,
    token: Option<String>,
}

impl Client {
    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value), CliError> {
        let url = format!("{}{path}", self.url);
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let result = match (method, body) {
            ("POST", body) => {
                let mut r = self
                    .agent
                    .post(&url)
                    .header("content-type", "application/json");
                if let Some(a) = &auth {
                    r = r.header("authorization", a);
                }
                r.send(body.unwrap_or(json!({})).to_string())
            }
            _ => {
                let mut r = self.agent.get(&url);
                if let Some(a) = &auth {
                    r = r.header("authorization", a);
                }
                r.call()
            }
        };
        let mut res = result.map_err(|e| {
            CliError::io(format!("cannot reach the daemon at {}: {e}", self.url))
                .hint("start it with `cmdlog serve`")
        })?;
        let status = res.status().as_u16();
        let text = res.body_mut().read_to_string().unwrap_or_default();
        Ok((
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        ))
    }
}

/// What the renderer remembers between events, to print only what is new.
#[derive(Default)]
struct Screen {
    view: SessionView,
    text_len: usize,
    thought_len: usize,
    tools: Vec<(String, String)>,
    permissions: usize,
    resolved: usize,
    model: Option<String>,
    runs: usize,
    /// The last log seq shown.
    last_id: u64,
    /// The last event id of the wire seen: where to resume.
    wire_id: u64,
    died: bool,
}

impl Screen {
    /// A screen for `session` (the reducer ignores other sessions' events).
    fn new(session: &str) -> Self {
        Screen {
            view: SessionView::new(session),
            ..Screen::default()
        }
    }

    /// Folds one event and prints what changed.
    fn show<W: Write>(&mut self, event: &Event, out: &mut render::Human<W>) {
        self.last_id = self.last_id.max(event.seq);
        self.view.apply(event);
        let v = &self.view;
        if v.assistant_text.len() > self.text_len {
            let _ = write!(out, "{}", &v.assistant_text[self.text_len..]);
            self.text_len = v.assistant_text.len();
        }
        if v.thoughts.len() > self.thought_len {
            // Thoughts are dimmed.
            let _ = out.paint(
                true,
                "2",
                &format!("(thinking) {}", &v.thoughts[self.thought_len..]),
            );
            let _ = writeln!(out);
            self.thought_len = v.thoughts.len();
        }
        for call in &v.tool_calls {
            let seen = self.tools.iter_mut().find(|(id, _)| *id == call.id);
            match seen {
                Some((_, status)) if *status == call.status => {}
                Some((_, status)) => {
                    let _ = writeln!(out, "[tool {} {}: {}]", call.id, call.title, call.status);
                    *status = call.status.clone();
                }
                None => {
                    let _ = writeln!(out, "[tool {} {}: {}]", call.id, call.title, call.status);
                    self.tools.push((call.id.clone(), call.status.clone()));
                }
            }
        }
        for p in &v.permissions[self.permissions..] {
            let _ = writeln!(
                out,
                "[permission {} requested: answer /allow or /deny]",
                p.request_id
            );
        }
        self.permissions = v.permissions.len();
        let resolved = v
            .permissions
            .iter()
            .filter(|p| p.resolved.is_some())
            .count();
        if resolved > self.resolved {
            for p in v
                .permissions
                .iter()
                .filter(|p| p.resolved.is_some())
                .skip(self.resolved)
            {
                let decision = match p
                    .resolved
                    .as_ref()
                    .and_then(|(_, d)| cmdlog_acp::permission_decision(d))
                {
                    Some(cmdlog_acp::PermissionDecision::Selected(option)) => option,
                    _ => "cancelled".to_string(),
                };
                let _ = writeln!(out, "[permission {} resolved: {decision}]", p.request_id);
            }
            self.resolved = resolved;
        }
        if v.model != self.model {
            let _ = writeln!(
                out,
                "[model: {}]",
                v.model.as_deref().unwrap_or("(default)")
            );
            self.model = v.model.clone();
        }
        for run in v.runs.iter().skip(self.runs) {
            if let Some(outcome) = &run.outcome {
                let shown = match outcome {
                    cmdlog_engine::Outcome::Success { text, prompt, .. } => prompt
                        .as_deref()
                        .or(text.as_deref())
                        .unwrap_or("ok")
                        .to_string(),
                    cmdlog_engine::Outcome::Error { text, .. } => format!("error: {text}"),
                };
                let _ = writeln!(out, "[/{}] {shown}", run.name);
                self.runs += 1;
            } else {
                break;
            }
        }
        if v.ended.is_some() && !self.died {
            let _ = writeln!(out, "[session ended: disconnected]");
            self.died = true;
        }
        let _ = out.flush();
    }
}

/// The log event behind a frame (`_meta.cmdlog.event`, sent to `?cmdlog=1`
/// subscribers); `None` for frames without one (`replay_complete`, …).
fn frame_event(frame: &Value) -> Option<Event> {
    let source = frame.get("_meta")?.get("cmdlog")?;
    let seq = source.get("seq")?.as_u64()?;
    Event::decode(seq, source.get("event")?.to_string().as_bytes()).ok()
}

/// Follows the session's events, reconnecting with the last seen event id.
fn follow(client: Arc<Client>, session: String, screen: Arc<Mutex<Screen>>) {
    loop {
        let last = screen.lock().unwrap_or_else(|p| p.into_inner()).wire_id;
        let url = format!("{}/session/{session}/events?cmdlog=1", client.url);
        let mut request = client
            .agent
            .get(&url)
            .header("Last-Event-ID", last.to_string());
        if let Some(t) = &client.token {
            request = request.header("authorization", format!("Bearer {t}"));
        }
        if let Ok(res) = request.call()
            && res.status().as_u16() == 200
        {
            let mut data = String::new();
            for line in BufReader::new(res.into_body().into_reader()).lines() {
                let Ok(line) = line else { break };
                if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                } else if line.is_empty() && !data.is_empty() {
                    if let Ok(value) = serde_json::from_str::<Value>(&data) {
                        let mut screen = screen.lock().unwrap_or_else(|p| p.into_inner());
                        if let Some(id) = value.get("id").and_then(Value::as_u64) {
                            screen.wire_id = screen.wire_id.max(id);
                        }
                        if let Some(event) = frame_event(&value)
                            && event.seq > screen.last_id
                        {
                            screen.show(&event, &mut render::Human::stdout(false));
                        }
                        if screen.died {
                            return;
                        }
                    }
                    data.clear();
                }
            }
        }
        eprintln!(
            "[connection lost; reconnecting from event {}]",
            screen.lock().unwrap_or_else(|p| p.into_inner()).wire_id
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Runs the client until stdin ends or `/quit`.
pub(crate) fn attach(config: AttachConfig) -> Result<(), CliError> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(5)))
        .build()
        .into();
    let client = Arc::new(Client {
        agent,
        url: config.url.trim_end_matches('/').to_string(),
        token: config.token,
    });
    let (status, caps) = client.request("GET", "/capabilities", None)?;
    if status == 401 {
        return Err(CliError::io("the daemon wants a token")
            .hint("pass --token or set CMDLOG_DAEMON_TOKEN"));
    }
    let features: Vec<&str> = caps["features"]
        .as_array()
        .map(|f| f.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    if let Some(missing) = REQUIRED_FEATURES.iter().find(|f| !features.contains(f)) {
        return Err(CliError::io(format!(
            "the daemon at {} does not offer {missing}; attach needs {}",
            client.url,
            REQUIRED_FEATURES.join(", ")
        )));
    }
    let (status, created) = client.request(
        "POST",
        "/session",
        Some(json!({"sessionId": config.session, "sessionScope": "thread"})),
    )?;
    if status != 200 {
        return Err(CliError::io(format!(
            "cannot open the session: {}",
            render::clean(created["error"].as_str().unwrap_or("?"))
        )));
    }
    let session = created["sessionId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    eprintln!(
        "[attached to session {} at {}; /quit to leave, Ctrl-C cancels]",
        render::clean(&session),
        render::clean(&client.url)
    );

    let screen = Arc::new(Mutex::new(Screen::new(&session)));
    {
        let (client, session, screen) = (Arc::clone(&client), session.clone(), Arc::clone(&screen));
        std::thread::spawn(move || follow(client, session, screen));
    }
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
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let path = |route: &str| format!("/session/{session}/{route}");
        let (status, answer) = if line == "/quit" {
            break;
        } else if let Some(model) = line.strip_prefix("/model ") {
            client.request(
                "POST",
                &path("model"),
                Some(json!({"modelId": model.trim()})),
            )?
        } else if let Some(rest) = line
            .strip_prefix("/allow")
            .or_else(|| line.strip_prefix("/deny"))
        {
            let allow = line.starts_with("/allow");
            let pending = screen
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .view
                .permissions
                .iter()
                .rev()
                .find(|p| {
                    p.resolved.is_none() && (rest.trim().is_empty() || p.request_id == rest.trim())
                })
                .map(|p| (p.request_id.clone(), p.options.clone()));
            let Some((id, options)) = pending else {
                eprintln!("[no permission request is waiting]");
                continue;
            };
            let Some(option) = choose_option(&options, allow) else {
                eprintln!(
                    "[permission {} offers no option to {}]",
                    render::clean(&id),
                    if allow { "allow" } else { "deny" }
                );
                continue;
            };
            client.request(
                "POST",
                &path(&format!("permission/{id}")),
                Some(json!({"outcome": {"outcome": "selected", "optionId": option}})),
            )?
        } else {
            client.request(
                "POST",
                &path("prompt"),
                Some(json!({"prompt": [{"type": "text", "text": line}]})),
            )?
        };
        if !(200..300).contains(&status) {
            eprintln!(
                "[{}]",
                render::clean(answer["error"].as_str().unwrap_or("request failed"))
            );
        }
    }
    Ok(())
}

/// The option `/allow` (or `/deny`) picks: the first ACP option of an
/// `allow_*` (or `reject_*`) kind, or one named so.
fn choose_option(options: &Value, allow: bool) -> Option<String> {
    let list = options.as_array()?;
    let wanted = if allow { "allow" } else { "reject" };
    list.iter()
        .find_map(|o| {
            let kind = o.get("kind").and_then(Value::as_str)?;
            kind.starts_with(wanted)
                .then(|| o.get("optionId")?.as_str().map(str::to_string))?
        })
        .or_else(|| {
            list.iter().find_map(|o| {
                let id = o.as_str().or_else(|| o.get("optionId")?.as_str())?;
                let named = if allow {
                    ["allow", "yes"]
                } else {
                    ["deny", "reject"]
                };
                named
                    .iter()
                    .any(|n| id.starts_with(n))
                    .then(|| id.to_string())
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, kind: &str, data: Value) -> Event {
        frame_event(
            &json!({"id": seq, "v": 1, "type": "session_update", "data": {}, "_meta": {"cmdlog": {
                "seq": seq, "type": kind,
                "event": {"type": kind, "session": "s", "agent": "main", "at": seq, "data": data},
            }}}),
        )
        .unwrap()
    }

    #[test]
    fn renders_only_what_is_new() {
        let mut screen = Screen::new("s");
        let mut out = render::Human::new(Vec::new(), false);
        screen.show(&event(1, "session/update", json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}})), &mut out);
        screen.show(&event(2, "session/update", json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lo"}})), &mut out);
        screen.show(&event(3, "session/update", json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})), &mut out);
        screen.show(&event(4, "session/update", json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "read", "status": "pending"})), &mut out);
        screen.show(&event(5, "session/update", json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})), &mut out);
        screen.show(
            &event(
                6,
                "permission/requested",
                json!({"request_id": "r1", "options": ["allow"]}),
            ),
            &mut out,
        );
        screen.show(
            &event(
                7,
                "permission/resolved",
                json!({"request_id": "r1", "decision": "allow"}),
            ),
            &mut out,
        );
        screen.show(
            &event(8, "session/model_switched", json!({"model": "opus"})),
            &mut out,
        );
        screen.show(&event(9, "future/thing", json!({"x": 1})), &mut out);
        screen.show(
            &event(10, "session/died", json!({"reason": "crash"})),
            &mut out,
        );
        let text = String::from_utf8(out.into_inner()).unwrap();
        assert_eq!(
            text,
            "Hello\x1b[2m(thinking) hmm\x1b[0m\n[tool t1 read: pending]\n[tool t1 read: completed]\n[permission r1 requested: answer /allow or /deny]\n[permission r1 resolved: allow]\n[model: opus]\n[session ended: disconnected]\n"
        );
        assert!(screen.died);
        assert_eq!(screen.last_id, 10);
    }

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
            screen.show(&event(seq, kind, data), &mut out);
        }
        let text = String::from_utf8(out.into_inner()).unwrap();
        // Only the dimming cmdlog adds itself is an escape.
        assert_eq!(text.matches('\x1b').count(), 2, "{text:?}");
        assert!(
            !text.contains('\x07') && !text.contains('\u{9b}'),
            "{text:?}"
        );
        assert!(text.contains("\\u{1b}]0;owned"), "{text:?}");
    }

    #[test]
    fn other_frames_are_ignored() {
        assert!(
            frame_event(&json!({"v": 1, "type": "replay_complete", "data": {"replayedCount": 0}}))
                .is_none()
        );
        assert!(frame_event(&json!({"nonsense": true})).is_none());
    }

    #[test]
    fn allow_and_deny_pick_acp_options_by_kind() {
        let acp = json!([
            {"optionId": "ok-1", "name": "Allow", "kind": "allow_once"},
            {"optionId": "no-1", "name": "Reject", "kind": "reject_once"},
        ]);
        assert_eq!(choose_option(&acp, true).as_deref(), Some("ok-1"));
        assert_eq!(choose_option(&acp, false).as_deref(), Some("no-1"));
        let plain = json!(["allow", "deny"]);
        assert_eq!(choose_option(&plain, false).as_deref(), Some("deny"));
        assert_eq!(
            choose_option(&json!([{"optionId": "x", "kind": "allow_once"}]), false),
            None
        );
    }
}
