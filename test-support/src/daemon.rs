//! A `cmdlog serve` child of a test workspace, killed and reaped when dropped.

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::Workspace;

/// A running daemon and the URL it printed into `.cmdlog/daemon.json`.
pub struct Daemon {
    pub child: Child,
    pub url: String,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Workspace {
    /// `.cmdlog/daemon.json` in the workspace.
    pub fn daemon_json(&self) -> PathBuf {
        self.ws.path().join(".cmdlog/daemon.json")
    }

    /// `cmdlog serve` on a free loopback port.
    pub fn serve(&self, extra: &[&str]) -> Daemon {
        self.serve_at("127.0.0.1:0", extra)
    }

    /// `cmdlog serve --addr ADDR`.
    pub fn serve_at(&self, addr: &str, extra: &[&str]) -> Daemon {
        self.serve_with(addr, extra, None)
    }

    /// `cmdlog serve --addr ADDR`, with `CMDLOG_TOKEN` set to `token_env` (or unset);
    /// returns once the daemon wrote its URL.
    pub fn serve_with(&self, addr: &str, extra: &[&str], token_env: Option<&str>) -> Daemon {
        self.serve_env(addr, extra, token_env, &[])
    }

    /// `cmdlog serve --addr ADDR` with more environment (for an agent behind it).
    pub fn serve_env(
        &self,
        addr: &str,
        extra: &[&str],
        token_env: Option<&str>,
        env: &[(&str, &str)],
    ) -> Daemon {
        let _ = std::fs::remove_file(self.daemon_json());
        let mut command = self.cmd(&["serve", "--addr", addr]);
        match token_env {
            Some(t) => command.env("CMDLOG_TOKEN", t),
            None => command.env_remove("CMDLOG_TOKEN"),
        };
        command.envs(env.iter().copied());
        let child = command
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The guard kills and reaps the child on every path, a failed start included.
        let mut daemon = Daemon {
            child,
            url: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(text) = std::fs::read_to_string(self.daemon_json())
                && let Ok(info) = serde_json::from_str::<Value>(&text)
            {
                daemon.url = info["url"].as_str().unwrap().to_string();
                return daemon;
            }
            assert!(Instant::now() < deadline, "the daemon did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// An HTTP client that returns every status instead of failing on 4xx/5xx.
pub fn http() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

fn answer(res: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> (u16, Value) {
    let mut res = res.unwrap();
    let status = res.status().as_u16();
    let text = res.body_mut().read_to_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// POST a JSON body; the status and the JSON answer (a string if not JSON).
pub fn post(url: &str, body: Value) -> (u16, Value) {
    post_with(&http(), url, body)
}

/// The same on a given client, so a loop reuses one keep-alive connection.
pub fn post_with(agent: &ureq::Agent, url: &str, body: Value) -> (u16, Value) {
    answer(
        agent
            .post(url)
            .header("content-type", "application/json")
            .send(body.to_string()),
    )
}

pub fn get(url: &str) -> (u16, Value) {
    answer(http().get(url).call())
}

pub fn delete(url: &str) -> (u16, Value) {
    answer(http().delete(url).call())
}

/// One SSE frame: its `id:` line (none for the stream's own frames), its
/// `event:` name and its `data:` envelope.
#[derive(Debug, Clone)]
pub struct Frame {
    pub id: Option<u64>,
    pub kind: String,
    pub data: Value,
}

impl Frame {
    /// `data.update.sessionUpdate` of a `session_update` frame.
    pub fn update_kind(&self) -> Option<&str> {
        (self.kind == "session_update")
            .then(|| self.data["data"]["update"]["sessionUpdate"].as_str())
            .flatten()
    }
}

/// Reads SSE frames until `enough` says stop (asked once per frame).
pub fn read_frames(
    url: &str,
    last_event_id: Option<&str>,
    mut enough: impl FnMut(&[Frame]) -> bool,
) -> Vec<Frame> {
    // A stream has no overall deadline; a silent one fails after a while.
    let streaming: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_recv_body(Some(Duration::from_secs(120)))
        .build()
        .into();
    let mut request = streaming.get(url);
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id);
    }
    let res = request.call().unwrap();
    assert_eq!(res.status().as_u16(), 200, "GET {url}");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(res.into_body().into_reader()));
    let mut frames = Vec::new();
    let (mut id, mut kind, mut data) = (None, String::new(), String::new());
    let mut done = enough(&frames);
    while !done {
        let Some(line) = lines.next() else {
            panic!("the stream ended before enough frames: {frames:#?}");
        };
        let line = line.unwrap();
        if line.is_empty() {
            if !data.is_empty() {
                let envelope: Value = serde_json::from_str(&data).unwrap();
                assert_eq!(
                    envelope["id"].as_u64(),
                    id,
                    "the id line matches the envelope"
                );
                assert_eq!(envelope["type"].as_str(), Some(kind.as_str()));
                assert_eq!(envelope["v"], 1);
                frames.push(Frame {
                    id: id.take(),
                    kind: std::mem::take(&mut kind),
                    data: envelope,
                });
                done = enough(&frames);
            }
            data.clear();
        } else if let Some(v) = line.strip_prefix("id: ") {
            id = Some(v.parse::<u64>().unwrap());
        } else if let Some(v) = line.strip_prefix("event: ") {
            kind = v.to_string();
        } else if let Some(v) = line.strip_prefix("data: ") {
            data.push_str(v);
        }
    }
    frames
}

/// Reads a stream to its end (a closed or dead session's).
pub fn read_to_end(url: &str, last_event_id: Option<&str>) -> Vec<Frame> {
    let streaming: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_recv_body(Some(Duration::from_secs(60)))
        .build()
        .into();
    let mut request = streaming.get(url);
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id);
    }
    let res = request.call().unwrap();
    assert_eq!(res.status().as_u16(), 200, "GET {url}");
    let text = res.into_body().read_to_string().unwrap();
    let mut frames = Vec::new();
    for block in text.split("\n\n") {
        let mut frame = Frame {
            id: None,
            kind: String::new(),
            data: Value::Null,
        };
        let mut data = String::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id: ") {
                frame.id = v.parse().ok();
            } else if let Some(v) = line.strip_prefix("event: ") {
                frame.kind = v.to_string();
            } else if let Some(v) = line.strip_prefix("data: ") {
                data.push_str(v);
            }
        }
        if !data.is_empty() {
            frame.data = serde_json::from_str(&data).unwrap();
            frames.push(frame);
        }
    }
    frames
}
