//! What an OTLP logs request costs once decoded, counted before it is decoded.
//!
//! A decoded message takes a few hundred bytes of memory however few bytes it
//! took on the wire: a 16 MiB protobuf of empty log records (two bytes each) is
//! eight million `LogRecord`s, about 1.5 GB. So the body's messages are counted
//! first — the protobuf by walking its wire format along the OTLP logs schema
//! (`opentelemetry-proto` `logs/v1/logs.proto`, `common/v1/common.proto`), the
//! JSON by counting its objects outside strings — and a request over
//! [`OTLP_MESSAGES_MAX`] messages, [`OTLP_RECORDS_MAX`] records or
//! [`OTLP_DEPTH_MAX`] levels of nesting is refused before anything is allocated.

use crate::limits::{OTLP_DEPTH_MAX, OTLP_MESSAGES_MAX, OTLP_RECORDS_MAX};

/// Why a request is refused by its size once decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Bound {
    /// More log records than one request may carry.
    #[error(
        "the request carries more than {OTLP_RECORDS_MAX} log records; send smaller batches (the SDKs' default is 512)"
    )]
    Records,
    /// More messages (records, attributes, values) than one request may carry.
    #[error(
        "the request carries more than {OTLP_MESSAGES_MAX} messages (records, attributes and values); send smaller batches"
    )]
    Messages,
    /// Values nested deeper than cmdlog reads.
    #[error("the request nests values more than {OTLP_DEPTH_MAX} levels deep")]
    Depth,
    /// Not a well-formed protobuf message: the decoder names it.
    #[error("malformed")]
    Malformed,
}

/// The messages of the OTLP logs schema that hold other messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Request,
    ResourceLogs,
    Resource,
    ScopeLogs,
    Scope,
    Record,
    KeyValue,
    AnyValue,
    ArrayValue,
    KeyValueList,
    /// A message of the schema holding no message cmdlog counts.
    Leaf,
}

impl Kind {
    /// The kind of the message in field `field` of this one, when that field
    /// holds a message (else its bytes are a string or bytes).
    fn child(self, field: u64) -> Option<Kind> {
        use Kind::*;
        Some(match (self, field) {
            (Request, 1) => ResourceLogs,
            (ResourceLogs, 1) => Resource,
            (ResourceLogs, 2) => ScopeLogs,
            (Resource, 1) | (Scope, 3) | (Record, 6) | (KeyValueList, 1) => KeyValue,
            (Resource, 3) => Leaf,
            (ScopeLogs, 1) => Scope,
            (ScopeLogs, 2) => Record,
            (Record, 5) | (KeyValue, 2) | (ArrayValue, 1) => AnyValue,
            (AnyValue, 5) => ArrayValue,
            (AnyValue, 6) => KeyValueList,
            _ => return None,
        })
    }
}

/// Counts.
#[derive(Debug, Default)]
struct Count {
    records: usize,
    messages: usize,
}

/// Checks a protobuf `ExportLogsServiceRequest` against the limits, reading its
/// wire format only.
pub(super) fn check_protobuf(bytes: &[u8]) -> Result<(), Bound> {
    let mut count = Count::default();
    walk(bytes, Kind::Request, 0, &mut count)
}

fn walk(mut bytes: &[u8], kind: Kind, depth: usize, count: &mut Count) -> Result<(), Bound> {
    if depth > OTLP_DEPTH_MAX {
        return Err(Bound::Depth);
    }
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                varint(&mut bytes)?;
            }
            1 => bytes = bytes.get(8..).ok_or(Bound::Malformed)?,
            5 => bytes = bytes.get(4..).ok_or(Bound::Malformed)?,
            2 => {
                let len = usize::try_from(varint(&mut bytes)?).map_err(|_| Bound::Malformed)?;
                let inner = bytes.get(..len).ok_or(Bound::Malformed)?;
                bytes = &bytes[len..];
                if let Some(child) = kind.child(field) {
                    count.messages += 1;
                    if count.messages > OTLP_MESSAGES_MAX {
                        return Err(Bound::Messages);
                    }
                    if child == Kind::Record {
                        count.records += 1;
                        if count.records > OTLP_RECORDS_MAX {
                            return Err(Bound::Records);
                        }
                    }
                    walk(inner, child, depth + 1, count)?;
                }
            }
            _ => return Err(Bound::Malformed),
        }
    }
    Ok(())
}

fn varint(bytes: &mut &[u8]) -> Result<u64, Bound> {
    let mut value = 0u64;
    for i in 0..10 {
        let (&byte, rest) = bytes.split_first().ok_or(Bound::Malformed)?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(Bound::Malformed)
}

/// Checks a JSON request against the limits: every message is a JSON object, so
/// the objects outside strings bound the messages (records are checked once
/// decoded), and their nesting the depth.
pub(super) fn check_json(bytes: &[u8]) -> Result<(), Bound> {
    let mut objects = 0usize;
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                // Request, resourceLogs[], {…}, scopeLogs[], {…}, logRecords[],
                // {…} come before the first value: allow for them.
                if depth > OTLP_DEPTH_MAX * 2 + 8 {
                    return Err(Bound::Depth);
                }
                if b == b'{' {
                    objects += 1;
                    if objects > OTLP_MESSAGES_MAX {
                        return Err(Bound::Messages);
                    }
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
    use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
    use prost::Message;

    fn request(records: usize, attributes: usize) -> ExportLogsServiceRequest {
        let record = LogRecord {
            attributes: (0..attributes)
                .map(|i| KeyValue {
                    key: format!("k{i}"),
                    value: Some(AnyValue {
                        value: Some(any_value::Value::StringValue("v".into())),
                    }),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                scope_logs: vec![ScopeLogs {
                    log_records: vec![record; records],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    #[test]
    fn a_request_within_the_limits_passes_in_both_encodings() {
        let r = request(512, 20);
        assert_eq!(check_protobuf(&r.encode_to_vec()), Ok(()));
        assert_eq!(check_json(&serde_json::to_vec(&r).unwrap()), Ok(()));
    }

    #[test]
    fn too_many_records_or_messages_or_levels_are_counted_before_decoding() {
        let r = request(OTLP_RECORDS_MAX + 1, 0);
        assert_eq!(check_protobuf(&r.encode_to_vec()), Err(Bound::Records));
        let r = request(OTLP_MESSAGES_MAX / 64, 40);
        assert_eq!(check_protobuf(&r.encode_to_vec()), Err(Bound::Messages));
        assert_eq!(
            check_json(&serde_json::to_vec(&r).unwrap()),
            Err(Bound::Messages)
        );
        // Values in arrays in values, deeper and deeper.
        let mut value = AnyValue {
            value: Some(any_value::Value::IntValue(1)),
        };
        for _ in 0..OTLP_DEPTH_MAX + 2 {
            value = AnyValue {
                value: Some(any_value::Value::ArrayValue(
                    opentelemetry_proto::tonic::common::v1::ArrayValue {
                        values: vec![value],
                    },
                )),
            };
        }
        let mut r = request(1, 0);
        r.resource_logs[0].scope_logs[0].log_records[0].body = Some(value);
        assert_eq!(check_protobuf(&r.encode_to_vec()), Err(Bound::Depth));
        assert_eq!(
            check_json(&serde_json::to_vec(&r).unwrap()),
            Err(Bound::Depth)
        );
    }

    #[test]
    fn braces_inside_strings_are_not_objects() {
        let text = "{".repeat(OTLP_MESSAGES_MAX + 10);
        let body = serde_json::json!({"resourceLogs": [{"scopeLogs": [{"logRecords": [
            {"body": {"stringValue": text}}
        ]}]}]});
        assert_eq!(check_json(&serde_json::to_vec(&body).unwrap()), Ok(()));
    }
}
