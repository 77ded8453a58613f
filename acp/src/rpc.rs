//! JSON-RPC 2.0 over newline-delimited JSON: ACP's stdio transport
//! (agentclientprotocol.com/protocol/v1/transports: one message per line, UTF-8,
//! no embedded newlines). Both sides send requests, so a peer keeps its own id
//! space for what it asks and answers the other side's requests by their ids.
//!
//! Framing is tokio-util's `LinesCodec` (with a line limit); messages stay
//! `serde_json::Value`s, so nothing the other side sent is dropped or rewritten
//! on its way through.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{oneshot, watch};

use crate::lines::{Line, LineReader};
use crate::outbox::{Outbox, outbox, write_lines};

pub use crate::limits::LINE_BYTES_MAX;

/// JSON-RPC's "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC's "invalid params".
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC's "internal error".
pub const INTERNAL_ERROR: i64 = -32603;
/// The code a request gets when the connection closed before its answer.
pub const CONNECTION_CLOSED: i64 = -32099;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The error code (JSON-RPC's, or the agent's own).
    pub code: i64,
    /// What went wrong, as the sender put it.
    pub message: String,
    /// Anything else the sender attached.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with `code` and `message`, no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    fn from_value(error: &Value) -> Self {
        RpcError {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            data: error.get("data").cloned(),
        }
    }

    /// The error object as JSON-RPC writes it.
    pub fn to_value(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (JSON-RPC error {})", self.message, self.code)
    }
}

/// A message the other side sent that is not an answer to ours.
#[derive(Debug, Clone)]
pub enum Incoming {
    /// It asks something; answer with [`Peer::respond`].
    Request {
        /// Its id, to answer by.
        id: Value,
        /// What it asks.
        method: String,
        /// With what.
        params: Value,
    },
    /// It tells something.
    Notification {
        /// What it tells.
        method: String,
        /// With what.
        params: Value,
    },
}

/// What a message is, by JSON-RPC's rules.
#[derive(Debug, PartialEq)]
pub enum Kind<'a> {
    /// A method and an id: it wants an answer.
    Request {
        /// Its id.
        id: &'a Value,
        /// Its method.
        method: &'a str,
    },
    /// A method without an id.
    Notification {
        /// Its method.
        method: &'a str,
    },
    /// An answer: an id with a result or an error.
    Response {
        /// The id of the request it answers.
        id: &'a Value,
    },
    /// None of these.
    Invalid,
}

/// Classifies a message: a method with an id is a request, without one a
/// notification; an id with a result or an error is a response.
pub fn kind(message: &Value) -> Kind<'_> {
    let id = message.get("id");
    match (message.get("method").and_then(Value::as_str), id) {
        (Some(method), Some(id)) => Kind::Request { id, method },
        (Some(method), None) => Kind::Notification { method },
        (None, Some(id)) if message.get("result").is_some() || message.get("error").is_some() => {
            Kind::Response { id }
        }
        _ => Kind::Invalid,
    }
}

type Pending = Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>;

/// One side of a JSON-RPC connection.
pub struct Peer {
    out: Outbox,
    pending: Arc<Pending>,
    next_id: AtomicU64,
    closed: watch::Receiver<bool>,
}

impl Peer {
    /// Starts reading `reader` and writing `writer`. `handler` gets the other
    /// side's requests and notifications on the reading task, in the order they
    /// came and before any answer that came after them is handed out, so what it
    /// records keeps the connection's order; it must not block (spawn instead).
    pub fn start<R, W, H>(reader: R, writer: W, mut handler: H) -> Arc<Peer>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
        H: FnMut(&Arc<Peer>, Incoming) + Send + 'static,
    {
        let (out, lines) = outbox();
        let (closed_tx, closed) = watch::channel(false);
        let pending: Arc<Pending> = Arc::default();
        let peer = Arc::new(Peer {
            out: out.clone(),
            pending: Arc::clone(&pending),
            next_id: AtomicU64::new(1),
            closed,
        });
        let weak = Arc::downgrade(&peer);
        tokio::spawn(write_lines(writer, lines));
        tokio::spawn(async move {
            let mut lines = LineReader::new(reader, LINE_BYTES_MAX);
            while let Some(line) = lines.next().await {
                let line = match line {
                    Ok(Line::Text(line)) => line,
                    Ok(Line::Oversized { bytes, .. }) => {
                        let _ = out.send(error_response(
                            Value::Null,
                            &RpcError::new(
                                -32600,
                                format!("message of {bytes} bytes, over {LINE_BYTES_MAX}"),
                            ),
                        ));
                        continue;
                    }
                    Err(_) => break,
                };
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                let Ok(message) = serde_json::from_str::<Value>(line) else {
                    let _ = out.send(error_response(
                        Value::Null,
                        &RpcError::new(-32700, "parse error: not JSON"),
                    ));
                    continue;
                };
                match kind(&message) {
                    Kind::Response { id } => {
                        let waiter = id.as_u64().and_then(|id| lock(&pending).remove(&id));
                        if let Some(waiter) = waiter {
                            let answer = match message.get("error") {
                                Some(error) => Err(RpcError::from_value(error)),
                                None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                            };
                            let _ = waiter.send(answer);
                        }
                    }
                    Kind::Request { id, method } => {
                        if let Some(peer) = weak.upgrade() {
                            handler(
                                &peer,
                                Incoming::Request {
                                    id: id.clone(),
                                    method: method.to_string(),
                                    params: message.get("params").cloned().unwrap_or(Value::Null),
                                },
                            );
                        }
                    }
                    Kind::Notification { method } => {
                        if let Some(peer) = weak.upgrade() {
                            handler(
                                &peer,
                                Incoming::Notification {
                                    method: method.to_string(),
                                    params: message.get("params").cloned().unwrap_or(Value::Null),
                                },
                            );
                        }
                    }
                    Kind::Invalid => {
                        let _ = out.send(error_response(
                            Value::Null,
                            &RpcError::new(-32600, "invalid request"),
                        ));
                    }
                }
            }
            // The other side is gone: every question still open gets its answer.
            for (_, waiter) in lock(&pending).drain() {
                let _ = waiter.send(Err(RpcError::new(
                    CONNECTION_CLOSED,
                    "the connection closed before the answer",
                )));
            }
            let _ = closed_tx.send(true);
        });
        peer
    }

    /// The request message `request` would send, and its id, without sending it.
    pub fn prepare(&self, method: &str, params: Value) -> (u64, Value) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        (
            id,
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
    }

    /// Sends a prepared request and waits for its answer.
    pub async fn send_prepared(&self, id: u64, message: Value) -> Result<Value, RpcError> {
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        if *self.closed.borrow() || self.out.send(message.to_string()).is_err() {
            lock(&self.pending).remove(&id);
            return Err(RpcError::new(CONNECTION_CLOSED, "the connection is closed"));
        }
        rx.await
            .unwrap_or_else(|_| Err(RpcError::new(CONNECTION_CLOSED, "the connection is closed")))
    }

    /// Sends a request and waits for its answer.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let (id, message) = self.prepare(method, params);
        self.send_prepared(id, message).await
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) {
        let _ = self.out.send(notification(method, params).to_string());
    }

    /// Answers the other side's request `id`.
    pub fn respond(&self, id: Value, answer: Result<Value, RpcError>) {
        let _ = self.out.send(response(id, answer).to_string());
    }

    /// Resolves once the other side closed its output.
    #[cfg(test)]
    pub async fn closed(&self) {
        let mut closed = self.closed.clone();
        let _ = closed.wait_for(|c| *c).await;
    }
}

/// A notification message.
pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// The response message to request `id`.
pub fn response(id: Value, answer: Result<Value, RpcError>) -> Value {
    match answer {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_value()}),
    }
}

fn error_response(id: Value, error: &RpcError) -> String {
    response(id, Err(error.clone())).to_string()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;

    #[test]
    fn messages_are_classified_by_json_rpc_rules() {
        assert!(matches!(
            kind(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize"})),
            Kind::Request {
                method: "initialize",
                ..
            }
        ));
        assert!(matches!(
            kind(&json!({"jsonrpc": "2.0", "method": "session/update"})),
            Kind::Notification { .. }
        ));
        assert!(matches!(
            kind(&json!({"jsonrpc": "2.0", "id": "a", "result": null})),
            Kind::Response { .. }
        ));
        assert!(matches!(
            kind(&json!({"jsonrpc": "2.0", "id": 3, "error": {"code": 1, "message": "x"}})),
            Kind::Response { .. }
        ));
        assert_eq!(kind(&json!({"jsonrpc": "2.0", "id": 3})), Kind::Invalid);
        assert_eq!(kind(&json!([1])), Kind::Invalid);
    }

    #[tokio::test]
    async fn both_sides_ask_and_answer_over_one_pipe_pair() {
        let (a_read, b_write) = tokio::io::duplex(1 << 16);
        let (b_read, a_write) = tokio::io::duplex(1 << 16);
        let a = Peer::start(a_read, a_write, |_: &Arc<Peer>, _| {});
        let (told_tx, mut told) = mpsc::unbounded_channel();
        let _b = Peer::start(
            b_read,
            b_write,
            move |b: &Arc<Peer>, incoming| match incoming {
                Incoming::Request { id, method, params } if method == "add" => {
                    let sum = params["a"].as_i64().unwrap() + params["b"].as_i64().unwrap();
                    b.respond(id, Ok(json!(sum)));
                }
                Incoming::Request { id, method, .. } => {
                    b.respond(id, Err(RpcError::new(METHOD_NOT_FOUND, method)));
                }
                Incoming::Notification { method, .. } => {
                    let _ = told_tx.send(method);
                }
            },
        );
        a.notify("hello", json!({}));
        let (x, y) = tokio::join!(
            a.request("add", json!({"a": 2, "b": 3})),
            a.request("add", json!({"a": 10, "b": 20}))
        );
        assert_eq!((x.unwrap(), y.unwrap()), (json!(5), json!(30)));
        let e = a.request("nope", json!({})).await.unwrap_err();
        assert_eq!(e.code, METHOD_NOT_FOUND);
        assert_eq!(told.recv().await.as_deref(), Some("hello"));
    }

    #[tokio::test]
    async fn a_closed_connection_answers_every_open_question() {
        let (a_read, b_write) = tokio::io::duplex(1 << 16);
        let (_b_read, a_write) = tokio::io::duplex(1 << 16);
        let a = Peer::start(a_read, a_write, |_: &Arc<Peer>, _| {});
        let asking = tokio::spawn({
            let a = Arc::clone(&a);
            async move { a.request("slow", json!({})).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        drop(b_write);
        let answer = asking.await.unwrap().unwrap_err();
        assert_eq!(answer.code, CONNECTION_CLOSED);
        a.closed().await;
    }
}
