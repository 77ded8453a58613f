//! The daemon's terminal client (`cmdlog attach`, seed 003) on the `qwen serve`
//! wire, without the terminal: it checks the daemon offers what it needs,
//! opens a session, follows its event stream with the log records behind the
//! frames (`?cmdlog=1`) — resuming with the last event id after a dropped
//! connection — and folds them with the `SessionView` reducer replay uses into
//! what is new to show. What a typed line asks for is [`Input::parse`]; the
//! binary reads the keyboard and paints.

use std::io::{BufRead, BufReader};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cmdlog_engine::Event;
use cmdlog_engine::event::Outcome;
use cmdlog_replay::SessionView;
use serde_json::{Value, json};

/// The features a daemon must offer before the client starts.
pub const REQUIRED_FEATURES: [&str; 3] = ["session_create", "session_prompt", "session_events"];

/// Why the client could not go on.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// No answer from the daemon.
    #[error("cannot reach the daemon at {url}: {reason}")]
    Unreachable {
        /// The daemon's URL.
        url: String,
        /// What the connection said.
        reason: String,
    },
    /// The daemon answered 401.
    #[error("the daemon wants a token")]
    TokenWanted,
    /// The daemon lacks a feature the client needs.
    #[error("the daemon at {url} does not offer {missing}; attach needs {}", REQUIRED_FEATURES.join(", "))]
    MissingFeature {
        /// The daemon's URL.
        url: String,
        /// The first feature missing.
        missing: String,
    },
    /// The daemon refused to open the session (its error).
    #[error("cannot open the session: {0}")]
    SessionRefused(String),
}

/// A connection to one daemon.
pub struct Client {
    agent: ureq::Agent,
    url: String,
    token: Option<String>,
}

impl Client {
    /// A client of the daemon at `url`, with its bearer `token`.
    pub fn new(url: &str, token: Option<String>) -> Client {
        Client {
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_connect(Some(Duration::from_secs(5)))
                .build()
                .into(),
            url: url.trim_end_matches('/').to_string(),
            token,
        }
    }

    /// The daemon's URL, without a trailing slash.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `GET` (no body) or `POST` `path`; the status and the answer (JSON, or
    /// its text as a JSON string).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value), AttachError> {
        let url = format!("{}{path}", self.url);
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let result = if method == "POST" {
            let mut r = self
                .agent
                .post(&url)
                .header("content-type", "application/json");
            if let Some(a) = &auth {
                r = r.header("authorization", a);
            }
            r.send(body.unwrap_or(json!({})).to_string())
        } else {
            let mut r = self.agent.get(&url);
            if let Some(a) = &auth {
                r = r.header("authorization", a);
            }
            r.call()
        };
        let mut res = result.map_err(|e| AttachError::Unreachable {
            url: self.url.clone(),
            reason: e.to_string(),
        })?;
        let status = res.status().as_u16();
        let text = res.body_mut().read_to_string().unwrap_or_default();
        Ok((
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        ))
    }

    /// Checks the daemon offers [`REQUIRED_FEATURES`] and opens `session` (a new
    /// one when `None`); its id.
    pub fn open(&self, session: Option<&str>) -> Result<String, AttachError> {
        let (status, caps) = self.request("GET", "/capabilities", None)?;
        if status == 401 {
            return Err(AttachError::TokenWanted);
        }
        let features: Vec<&str> = caps["features"]
            .as_array()
            .map(|f| f.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(missing) = REQUIRED_FEATURES.iter().find(|f| !features.contains(f)) {
            return Err(AttachError::MissingFeature {
                url: self.url.clone(),
                missing: missing.to_string(),
            });
        }
        let (status, created) = self.request(
            "POST",
            "/session",
            Some(json!({"sessionId": session, "sessionScope": "thread"})),
        )?;
        if status != 200 {
            return Err(AttachError::SessionRefused(
                created["error"].as_str().unwrap_or("?").to_string(),
            ));
        }
        Ok(created["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    /// Follows `session`'s events until it ends, handing what is new to `show`,
    /// reconnecting from the last event id after a dropped connection (`lost`
    /// is told where it resumes).
    pub fn follow(
        &self,
        session: &str,
        screen: &Mutex<Screen>,
        mut show: impl FnMut(Vec<Shown>),
        mut lost: impl FnMut(u64),
    ) {
        loop {
            let last = lock(screen).wire_id;
            let url = format!("{}/session/{session}/events?cmdlog=1", self.url);
            let mut request = self
                .agent
                .get(&url)
                .header("Last-Event-ID", last.to_string());
            if let Some(t) = &self.token {
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
                            let mut screen = lock(screen);
                            show(screen.frame(&value));
                            if screen.ended {
                                return;
                            }
                        }
                        data.clear();
                    }
                }
            }
            lost(lock(screen).wire_id);
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Something new to show, in order. The text is the agent's, unescaped: the
/// terminal that shows it escapes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// More of the agent's reply, to print as it comes.
    Text(String),
    /// More of its thoughts (a terminal dims them).
    Thought(String),
    /// A line of its own: a tool call's status, a permission, a model, a run.
    Note(String),
}

/// What the client remembers between events, to show only what is new.
#[derive(Default)]
pub struct Screen {
    view: SessionView,
    text_len: usize,
    thought_len: usize,
    tools: Vec<(String, String)>,
    permissions: usize,
    resolved: usize,
    model: Option<String>,
    runs: usize,
    /// The last log seq shown.
    pub last_seq: u64,
    /// The last event id of the wire seen: where to resume.
    pub wire_id: u64,
    /// The session ended.
    pub ended: bool,
    /// Turns ended so far.
    turns: u64,
    /// Whether the agent's text shown last left its line open (no newline).
    line_open: bool,
}

impl Screen {
    /// A screen for `session` (the reducer ignores other sessions' events).
    pub fn new(session: &str) -> Self {
        Screen {
            view: SessionView::new(session),
            ..Screen::default()
        }
    }

    /// The session as folded so far.
    pub fn view(&self) -> &SessionView {
        &self.view
    }

    /// Takes one frame of the wire: what it shows that is new.
    pub fn frame(&mut self, frame: &Value) -> Vec<Shown> {
        if let Some(id) = frame.get("id").and_then(Value::as_u64) {
            self.wire_id = self.wire_id.max(id);
        }
        match frame_event(frame) {
            Some(event) if event.seq > self.last_seq => self.show(&event),
            _ => Vec::new(),
        }
    }

    /// Folds one event; what changed.
    pub fn show(&mut self, event: &Event) -> Vec<Shown> {
        self.last_seq = self.last_seq.max(event.seq);
        self.view.apply(event);
        let mut out = Vec::new();
        let v = &self.view;
        if v.assistant_text.len() > self.text_len {
            out.push(Shown::Text(v.assistant_text[self.text_len..].to_string()));
            self.text_len = v.assistant_text.len();
        }
        if v.thoughts.len() > self.thought_len {
            out.push(Shown::Thought(format!(
                "(thinking) {}",
                &v.thoughts[self.thought_len..]
            )));
            self.thought_len = v.thoughts.len();
        }
        for call in &v.tool_calls {
            let line = || {
                Shown::Note(format!(
                    "[tool {} {}: {}]",
                    call.id, call.title, call.status
                ))
            };
            match self.tools.iter_mut().find(|(id, _)| *id == call.id) {
                Some((_, status)) if *status == call.status => {}
                Some((_, status)) => {
                    out.push(line());
                    status.clone_from(&call.status);
                }
                None => {
                    out.push(line());
                    self.tools.push((call.id.clone(), call.status.clone()));
                }
            }
        }
        for p in &v.permissions[self.permissions..] {
            out.push(Shown::Note(format!(
                "[permission {} requested: answer /allow or /deny]",
                p.request_id
            )));
        }
        self.permissions = v.permissions.len();
        let resolved: Vec<_> = v
            .permissions
            .iter()
            .filter(|p| p.resolved.is_some())
            .collect();
        for p in &resolved[self.resolved.min(resolved.len())..] {
            let decision = match p
                .resolved
                .as_ref()
                .and_then(|(_, d)| cmdlog_acp::permission_decision(d))
            {
                Some(cmdlog_acp::PermissionDecision::Selected(option)) => option,
                _ => "cancelled".to_string(),
            };
            out.push(Shown::Note(format!(
                "[permission {} resolved: {decision}]",
                p.request_id
            )));
        }
        self.resolved = resolved.len();
        if v.model != self.model {
            out.push(Shown::Note(format!(
                "[model: {}]",
                v.model.as_deref().unwrap_or("(default)")
            )));
            self.model.clone_from(&v.model);
        }
        for run in v.runs.iter().skip(self.runs) {
            let Some(outcome) = &run.outcome else { break };
            let shown = match outcome {
                Outcome::Success { text, prompt, .. } => prompt
                    .as_deref()
                    .or(text.as_deref())
                    .unwrap_or("ok")
                    .to_string(),
                Outcome::Error { text, .. } => format!("error: {text}"),
            };
            out.push(Shown::Note(format!("[/{}] {shown}", run.name)));
            self.runs += 1;
        }
        if v.ended.is_some() && !self.ended {
            out.push(Shown::Note("[session ended: disconnected]".into()));
            self.ended = true;
        }
        let turn_ended = v.turns > self.turns;
        self.turns = v.turns;
        self.end_lines(out, turn_ended)
    }

    /// Ends the agent's open line where a line of cmdlog's own follows it, and
    /// where its turn ended: what is typed next, or shown next, starts a line.
    fn end_lines(&mut self, shown: Vec<Shown>, turn_ended: bool) -> Vec<Shown> {
        let mut out = Vec::with_capacity(shown.len() + 1);
        for item in shown {
            match &item {
                Shown::Text(text) if !text.is_empty() => self.line_open = !text.ends_with('\n'),
                Shown::Text(_) => {}
                Shown::Thought(_) | Shown::Note(_) => {
                    if std::mem::take(&mut self.line_open) {
                        out.push(Shown::Text("\n".into()));
                    }
                }
            }
            out.push(item);
        }
        if turn_ended && std::mem::take(&mut self.line_open) {
            out.push(Shown::Text("\n".into()));
        }
        out
    }
}

/// The log event behind a frame (`_meta.cmdlog.event`, sent to `?cmdlog=1`
/// subscribers); `None` for frames without one (`replay_complete`, …).
pub fn frame_event(frame: &Value) -> Option<Event> {
    let source = frame.get("_meta")?.get("cmdlog")?;
    let seq = source.get("seq")?.as_u64()?;
    Event::decode(seq, source.get("event")?.to_string().as_bytes()).ok()
}

/// What a typed line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Nothing (an empty line).
    Nothing,
    /// `/quit`.
    Quit,
    /// `/model ID`.
    Model(String),
    /// `/allow [REQUEST]` or `/deny [REQUEST]` (the latest waiting request when
    /// none is named).
    Permission {
        /// `/allow` (else `/deny`).
        allow: bool,
        /// The request named, if any.
        request: Option<String>,
    },
    /// Anything else: a prompt, as typed.
    Prompt(String),
}

impl Input {
    /// Reads a typed line.
    pub fn parse(line: &str) -> Input {
        let line = line.trim_end();
        if line.is_empty() {
            Input::Nothing
        } else if line == "/quit" {
            Input::Quit
        } else if let Some(model) = line.strip_prefix("/model ") {
            Input::Model(model.trim().to_string())
        } else if let Some((allow, rest)) = line
            .strip_prefix("/allow")
            .map(|r| (true, r))
            .or_else(|| line.strip_prefix("/deny").map(|r| (false, r)))
        {
            let rest = rest.trim();
            Input::Permission {
                allow,
                request: (!rest.is_empty()).then(|| rest.to_string()),
            }
        } else {
            Input::Prompt(line.to_string())
        }
    }

    /// The request it makes of `session` on `screen`: a route and a body, or
    /// why there is none.
    pub fn request(
        &self,
        session: &str,
        screen: &Screen,
    ) -> Result<Option<(String, Value)>, NoAnswer> {
        let path = |route: &str| format!("/session/{session}/{route}");
        Ok(Some(match self {
            Input::Nothing | Input::Quit => return Ok(None),
            Input::Model(model) => (path("model"), json!({"modelId": model})),
            Input::Prompt(text) => (
                path("prompt"),
                json!({"prompt": [{"type": "text", "text": text}]}),
            ),
            Input::Permission { allow, request } => {
                let waiting = screen
                    .view
                    .permissions
                    .iter()
                    .rev()
                    .find(|p| {
                        p.resolved.is_none() && request.as_ref().is_none_or(|r| p.request_id == *r)
                    })
                    .ok_or(NoAnswer::NothingWaits)?;
                let option =
                    choose_option(&waiting.options, *allow).ok_or_else(|| NoAnswer::NoOption {
                        request: waiting.request_id.clone(),
                        wanted: if *allow { "allow" } else { "deny" },
                    })?;
                (
                    path(&format!("permission/{}", waiting.request_id)),
                    json!({"outcome": {"outcome": "selected", "optionId": option}}),
                )
            }
        }))
    }
}

/// Why `/allow` or `/deny` asks nothing of the daemon.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoAnswer {
    /// No permission request (or none of that id) waits for a vote.
    #[error("no permission request is waiting")]
    NothingWaits,
    /// The request offers no option of that kind.
    #[error("permission {request} offers no option to {wanted}")]
    NoOption {
        /// The request's id.
        request: String,
        /// `allow` or `deny`.
        wanted: &'static str,
    },
}

/// Starts following `session` on its own thread.
pub fn follow_in_background(
    client: Arc<Client>,
    session: String,
    screen: Arc<Mutex<Screen>>,
    show: impl FnMut(Vec<Shown>) + Send + 'static,
    lost: impl FnMut(u64) + Send + 'static,
) {
    std::thread::spawn(move || client.follow(&session, &screen, show, lost));
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

    fn frame(seq: u64, kind: &str, data: Value) -> Value {
        json!({"id": seq, "v": 1, "type": "session_update", "data": {}, "_meta": {"cmdlog": {
            "seq": seq, "type": kind,
            "event": {"type": kind, "session": "s", "agent": "main", "at": seq, "data": data},
        }}})
    }

    #[test]
    fn shows_only_what_is_new() {
        let mut screen = Screen::new("s");
        let frames = [
            frame(
                1,
                "session/update",
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}}),
            ),
            frame(
                2,
                "session/update",
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lo"}}),
            ),
            frame(
                3,
                "session/update",
                json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}),
            ),
            frame(
                4,
                "session/update",
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "read", "status": "pending"}),
            ),
            frame(
                5,
                "session/update",
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
            ),
            frame(
                6,
                "permission/requested",
                json!({"request_id": "r1", "options": ["allow"]}),
            ),
            frame(
                7,
                "permission/resolved",
                json!({"request_id": "r1", "decision": "allow"}),
            ),
            frame(8, "session/model_switched", json!({"model": "opus"})),
            frame(9, "future/thing", json!({"x": 1})),
            frame(
                9,
                "session/update",
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "again"}}),
            ),
            frame(10, "session/died", json!({"reason": "crash"})),
        ];
        let shown: Vec<Shown> = frames.iter().flat_map(|f| screen.frame(f)).collect();
        let note = |s: &str| Shown::Note(s.into());
        assert_eq!(
            shown,
            [
                Shown::Text("Hel".into()),
                Shown::Text("lo".into()),
                // The agent's line is ended before a line of cmdlog's own.
                Shown::Text("\n".into()),
                Shown::Thought("(thinking) hmm".into()),
                note("[tool t1 read: pending]"),
                note("[tool t1 read: completed]"),
                note("[permission r1 requested: answer /allow or /deny]"),
                note("[permission r1 resolved: allow]"),
                note("[model: opus]"),
                note("[session ended: disconnected]"),
            ]
        );
        assert!(screen.ended);
        assert_eq!((screen.last_seq, screen.wire_id), (10, 10));
    }

    #[test]
    fn the_agents_last_line_is_ended_with_its_turn() {
        let mut screen = Screen::new("s");
        let text = |seq, t: &str| {
            frame(
                seq,
                "session/update",
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}}),
            )
        };
        let end = |seq| {
            frame(
                seq,
                "session/update",
                json!({"sessionUpdate": "turn_complete", "stopReason": "end_turn"}),
            )
        };
        let frames = [
            text(1, "You said: hello daemon"),
            end(2),
            // A turn whose text ends its line, and one with no text at all.
            text(3, "done\n"),
            end(4),
            end(5),
        ];
        let shown: Vec<Shown> = frames.iter().flat_map(|f| screen.frame(f)).collect();
        let t = |s: &str| Shown::Text(s.into());
        assert_eq!(shown, [t("You said: hello daemon"), t("\n"), t("done\n")]);
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
    fn typed_lines_become_requests() {
        let mut screen = Screen::new("s");
        screen.frame(&frame(
            1,
            "permission/requested",
            json!({"request_id": "r1", "options": [
                {"optionId": "ok-1", "kind": "allow_once"}, {"optionId": "no-1", "kind": "reject_once"}]}),
        ));
        let ask = |line: &str| Input::parse(line).request("s", &screen);
        assert_eq!(Input::parse("/quit"), Input::Quit);
        assert_eq!(ask("  ").unwrap(), None);
        assert_eq!(
            ask("/deny").unwrap().unwrap(),
            (
                "/session/s/permission/r1".into(),
                json!({"outcome": {"outcome": "selected", "optionId": "no-1"}})
            )
        );
        assert_eq!(
            ask("/model opus ").unwrap().unwrap(),
            ("/session/s/model".into(), json!({"modelId": "opus"}))
        );
        assert_eq!(
            ask("/allow r9").unwrap_err().to_string(),
            "no permission request is waiting"
        );
        assert_eq!(
            ask("hi /there").unwrap().unwrap().1["prompt"][0]["text"],
            "hi /there"
        );
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
