//! OTLP/HTTP for logs, as the OpenTelemetry protocol specification writes it
//! (`opentelemetry-proto` `docs/specification.md`, "OTLP/HTTP"): a body in
//! binary protobuf (`application/x-protobuf`) or in the spec's JSON mapping
//! (`application/json`), gzip when `Content-Encoding` says so; the answer an
//! `ExportLogsServiceResponse` in the request's encoding, a `google.rpc.Status`
//! for a bad request.

use std::io::Read;

use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use prost::Message;

use crate::limits::OTLP_BODY_BYTES_MAX;

/// How a request's body is encoded (and its answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `application/x-protobuf`
    Protobuf,
    /// `application/json` (the OTLP JSON mapping)
    Json,
}

impl Encoding {
    /// The encoding a `Content-Type` names (its parameters ignored), if OTLP has it.
    pub fn from_content_type(value: &str) -> Option<Encoding> {
        let media = value.split(';').next()?.trim().to_ascii_lowercase();
        match media.as_str() {
            "application/x-protobuf" | "application/protobuf" => Some(Encoding::Protobuf),
            "application/json" => Some(Encoding::Json),
            _ => None,
        }
    }

    /// The `Content-Type` of an answer in this encoding.
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }
}

/// Why a request's body cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtlpError {
    /// Past the size cmdlog reads (before or after gzip): 413.
    #[error("the request body is over {max} bytes{after}", after = if *.inflated { " once decompressed" } else { "" })]
    TooLarge {
        /// The limit.
        max: usize,
        /// Whether it was the decompressed body.
        inflated: bool,
    },
    /// A `Content-Encoding` other than gzip or identity.
    #[error("Content-Encoding {0:?} is not supported: send gzip or none")]
    Encoding(String),
    /// Over what one request may carry once decoded (records, messages,
    /// nesting), counted before decoding: 413.
    #[error("{0}")]
    Bounded(super::bounds::Bound),
    /// Not gzip, not protobuf, not OTLP JSON: 400, never retried.
    #[error("not an OTLP ExportLogsServiceRequest ({what}): {message}")]
    Bad {
        /// Which decoding failed: `gzip`, `protobuf`, `JSON`.
        what: &'static str,
        /// Why.
        message: String,
    },
}

/// The request in `body` (as received, `content_encoding` its header).
pub fn decode(
    encoding: Encoding,
    content_encoding: Option<&str>,
    body: &[u8],
) -> Result<ExportLogsServiceRequest, OtlpError> {
    if body.len() > OTLP_BODY_BYTES_MAX {
        return Err(OtlpError::TooLarge {
            max: OTLP_BODY_BYTES_MAX,
            inflated: false,
        });
    }
    let inflated;
    let bytes = match content_encoding.map(|e| e.trim().to_ascii_lowercase()) {
        None => body,
        Some(e) if e.is_empty() || e == "identity" => body,
        Some(e) if e == "gzip" => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(body)
                .take(OTLP_BODY_BYTES_MAX as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| OtlpError::Bad {
                    what: "gzip",
                    message: e.to_string(),
                })?;
            if out.len() > OTLP_BODY_BYTES_MAX {
                return Err(OtlpError::TooLarge {
                    max: OTLP_BODY_BYTES_MAX,
                    inflated: true,
                });
            }
            inflated = out;
            &inflated
        }
        Some(other) => return Err(OtlpError::Encoding(other)),
    };
    let counted = match encoding {
        Encoding::Protobuf => super::bounds::check_protobuf(bytes),
        Encoding::Json => super::bounds::check_json(bytes),
    };
    match counted {
        Ok(()) | Err(super::bounds::Bound::Malformed) => {}
        Err(bound) => return Err(OtlpError::Bounded(bound)),
    }
    let request: ExportLogsServiceRequest = match encoding {
        Encoding::Protobuf => {
            ExportLogsServiceRequest::decode(bytes).map_err(|e| OtlpError::Bad {
                what: "protobuf",
                message: e.to_string(),
            })?
        }
        Encoding::Json => serde_json::from_slice(bytes).map_err(|e| OtlpError::Bad {
            what: "JSON",
            message: e.to_string(),
        })?,
    };
    let records: usize = request
        .resource_logs
        .iter()
        .flat_map(|r| &r.scope_logs)
        .map(|s| s.log_records.len())
        .sum();
    if records > crate::limits::OTLP_RECORDS_MAX {
        return Err(OtlpError::Bounded(super::bounds::Bound::Records));
    }
    Ok(request)
}

/// The answer to a request whose records were taken but `rejected` (with
/// `why`): the spec's full success (an empty message) when none was.
pub fn response(encoding: Encoding, rejected: u64, why: &str) -> Vec<u8> {
    let answer = ExportLogsServiceResponse {
        partial_success: (rejected > 0).then(|| ExportLogsPartialSuccess {
            rejected_log_records: i64::try_from(rejected).unwrap_or(i64::MAX),
            error_message: why.to_string(),
        }),
    };
    match encoding {
        Encoding::Protobuf => answer.encode_to_vec(),
        // The spec leaves `partial_success` unset on full success: `{}`, not
        // the generated type's `{"partialSuccess":null}`.
        Encoding::Json if answer.partial_success.is_none() => b"{}".to_vec(),
        Encoding::Json => serde_json::to_vec(&answer).unwrap_or_else(|_| b"{}".to_vec()),
    }
}

/// `google.rpc.Status`, the body of an OTLP/HTTP error answer (not among the
/// generated messages of `opentelemetry-proto`).
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// The body of an error answer: a `google.rpc.Status` with `code` (gRPC's:
/// 3 invalid argument, 8 resource exhausted, 14 unavailable, 16
/// unauthenticated) and `message`.
pub fn status(encoding: Encoding, code: i32, message: &str) -> Vec<u8> {
    match encoding {
        Encoding::Protobuf => RpcStatus {
            code,
            message: message.to_string(),
        }
        .encode_to_vec(),
        Encoding::Json => serde_json::json!({"code": code, "message": message})
            .to_string()
            .into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const JSON: &str = r#"{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"claude-code"}}]},"scopeLogs":[{"scope":{"name":"com.anthropic.claude_code.events"},"logRecords":[{"timeUnixNano":"1700000000000000000","body":{"stringValue":"claude_code.user_prompt"},"attributes":[{"key":"event.sequence","value":{"intValue":3}},{"key":"cost_usd","value":{"intValue":"0"}}]}]}]}]}"#;

    #[test]
    fn both_encodings_and_gzip_decode_to_the_same_request() {
        let from_json = decode(Encoding::Json, None, JSON.as_bytes()).unwrap();
        assert_eq!(
            from_json.resource_logs[0].scope_logs[0].log_records.len(),
            1
        );
        let bytes = from_json.encode_to_vec();
        assert_eq!(decode(Encoding::Protobuf, None, &bytes).unwrap(), from_json);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&bytes).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(
            decode(Encoding::Protobuf, Some("gzip"), &gz).unwrap(),
            from_json
        );
    }

    #[test]
    fn bad_bodies_are_named_and_bombs_stopped() {
        let e = decode(Encoding::Protobuf, None, b"\x0a\xff\xff").unwrap_err();
        assert!(e.to_string().contains("protobuf"), "{e}");
        let e = decode(Encoding::Json, None, b"{\"resourceLogs\":7}").unwrap_err();
        assert!(matches!(e, OtlpError::Bad { what: "JSON", .. }), "{e}");
        assert!(matches!(
            decode(Encoding::Json, Some("br"), b"{}"),
            Err(OtlpError::Encoding(_))
        ));
        // A few kilobytes that inflate past the limit.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..=(OTLP_BODY_BYTES_MAX >> 20) {
            gz.write_all(&zeros).unwrap();
        }
        let gz = gz.finish().unwrap();
        assert!(gz.len() < OTLP_BODY_BYTES_MAX / 100);
        assert!(matches!(
            decode(Encoding::Protobuf, Some("gzip"), &gz),
            Err(OtlpError::TooLarge { inflated: true, .. })
        ));
    }

    #[test]
    fn answers_are_the_specs() {
        assert_eq!(response(Encoding::Json, 0, ""), b"{}");
        assert!(response(Encoding::Protobuf, 0, "").is_empty());
        let partial: serde_json::Value =
            serde_json::from_slice(&response(Encoding::Json, 2, "no session.id")).unwrap();
        assert_eq!(partial["partialSuccess"]["rejectedLogRecords"], 2);
        let back = ExportLogsServiceResponse::decode(
            response(Encoding::Protobuf, 2, "no session.id").as_slice(),
        )
        .unwrap();
        assert_eq!(back.partial_success.unwrap().rejected_log_records, 2);
        assert_eq!(
            RpcStatus::decode(status(Encoding::Protobuf, 3, "bad").as_slice())
                .unwrap()
                .code,
            3
        );
    }
}
