//! What an OTLP/HTTP request is answered, as the OTLP specification's
//! "OTLP/HTTP Response" section gives each case: 200 with an
//! `ExportLogsServiceResponse` (its `partial_success` naming the records not
//! taken), 400 for a body that is not a request or records the log refuses
//! (never retried), 413 past the size cmdlog reads, 415 for another media
//! type, 503 with `Retry-After` while the log cannot take writes or too many
//! requests wait (retried by the exporters). The error bodies are a
//! `google.rpc.Status` in the request's encoding. A server only moves the
//! bytes.

use crate::record::AppendBatchError;

use super::Ingested;
use super::wire::{Encoding, OtlpError, response, status};

/// Seconds an exporter is asked to wait before sending again.
const RETRY_AFTER_SECS: u32 = 5;

/// gRPC status codes the error bodies carry.
const INVALID_ARGUMENT: i32 = 3;
const RESOURCE_EXHAUSTED: i32 = 8;
const UNAVAILABLE: i32 = 14;

/// An answer: its HTTP status, `Content-Type`, body, and `Retry-After`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` of the body.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
    /// Seconds to wait before retrying, when the exporter should.
    pub retry_after_secs: Option<u32>,
}

impl Answer {
    fn with(encoding: Encoding, status: u16, body: Vec<u8>) -> Answer {
        Answer {
            status,
            content_type: encoding.content_type(),
            body,
            retry_after_secs: None,
        }
    }

    /// 415: a media type OTLP/HTTP does not have.
    pub fn unsupported_media(content_type: &str) -> Answer {
        Answer {
            status: 415,
            content_type: "text/plain; charset=utf-8",
            body: format!(
                "OTLP/HTTP takes application/x-protobuf or application/json, not {content_type:?}\n"
            )
            .into_bytes(),
            retry_after_secs: None,
        }
    }

    /// 200 with nothing refused: a signal taken and not recorded (metrics,
    /// traces).
    pub fn taken(encoding: Encoding) -> Answer {
        Answer::with(encoding, 200, response(encoding, 0, ""))
    }

    /// 503, retry later: the log cannot take writes now, or too many
    /// requests wait (`why`).
    pub fn unavailable(encoding: Encoding, why: &str) -> Answer {
        Answer {
            retry_after_secs: Some(RETRY_AFTER_SECS),
            ..Answer::with(encoding, 503, status(encoding, UNAVAILABLE, why))
        }
    }

    /// 413: the body was not read whole (`why`: past the size cmdlog reads).
    pub fn not_read(encoding: Encoding, why: &str) -> Answer {
        Answer::with(
            encoding,
            413,
            status(encoding, RESOURCE_EXHAUSTED, &format!("not read: {why}")),
        )
    }

    /// The body could not be decoded: 413 past a bound, else 400.
    pub fn undecoded(encoding: Encoding, e: &OtlpError) -> Answer {
        match e {
            OtlpError::TooLarge { .. } | OtlpError::Bounded(_) => Answer::with(
                encoding,
                413,
                status(encoding, RESOURCE_EXHAUSTED, &e.to_string()),
            ),
            _ => Answer::with(
                encoding,
                400,
                status(encoding, INVALID_ARGUMENT, &e.to_string()),
            ),
        }
    }

    /// What the append of a decoded request came to: 200 with the records not
    /// taken, 503 when the log may take it later, else 400.
    pub fn ingested(encoding: Encoding, result: Result<Ingested, AppendBatchError>) -> Answer {
        match result {
            Ok(report) => Answer::with(
                encoding,
                200,
                response(encoding, report.rejected, &report.why_rejected),
            ),
            Err(e) if e.retryable() => Answer::unavailable(encoding, &format!("not recorded: {e}")),
            Err(e) => Answer::with(
                encoding,
                400,
                status(encoding, INVALID_ARGUMENT, &format!("not recorded: {e}")),
            ),
        }
    }
}
