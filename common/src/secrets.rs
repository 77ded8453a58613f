//! Common secrets, found by pattern and replaced before text enters the log (a
//! hook's payload, an imported transcript) or leaves it (`export --redact`):
//! API keys of the well-known providers, bearer tokens, passwords in URLs,
//! private keys, and `password=`/`token:`-style assignments. Each match becomes
//! `[REDACTED:kind]`, so a reader sees that something was there and what.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

/// The kinds and their patterns, most specific first.
const PATTERNS: [(&str, &str); 10] = [
    (
        "private_key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    ),
    ("api_key", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"),
    ("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
    ),
    ("gitlab_token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("bearer_token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}"),
    (
        "url_password",
        r"(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@",
    ),
    (
        "assigned_secret",
        r#"(?i)\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)\b\s*["']?\s*[=:]\s*["']?[^\s"',;]{6,}"#,
    ),
];

fn compiled() -> &'static [(&'static str, Regex)] {
    static COMPILED: OnceLock<Vec<(&'static str, Regex)>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        PATTERNS
            .iter()
            .map(|(kind, p)| (*kind, Regex::new(p).expect("the secret patterns compile")))
            .collect()
    })
}

/// The patterns, for callers that take a list of regular expressions.
pub fn secret_patterns() -> Vec<Regex> {
    compiled().iter().map(|(_, r)| r.clone()).collect()
}

/// What a redaction replaced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redaction {
    /// How many secrets.
    pub count: u64,
    /// Of which kinds.
    pub kinds: BTreeSet<String>,
}

/// Replaces the secrets in `text`; `None` when there are none.
pub fn redact_text(text: &str, found: &mut Redaction) -> Option<String> {
    let mut out: Option<String> = None;
    for (kind, pattern) in compiled() {
        let current = out.as_deref().unwrap_or(text);
        let n = pattern.find_iter(current).count();
        if n == 0 {
            continue;
        }
        found.count += n as u64;
        found.kinds.insert((*kind).to_string());
        let replaced = if *kind == "url_password" {
            // Keep the scheme and user; only the password goes.
            pattern
                .replace_all(current, |c: &regex::Captures<'_>| {
                    let m = &c[0];
                    match (m.find("://"), m.rfind(':')) {
                        (Some(scheme), Some(colon)) if colon > scheme + 2 => {
                            format!("{}:[REDACTED:url_password]@", &m[..colon])
                        }
                        _ => "[REDACTED:url_password]@".to_string(),
                    }
                })
                .into_owned()
        } else {
            pattern
                .replace_all(current, format!("[REDACTED:{kind}]").as_str())
                .into_owned()
        };
        out = Some(replaced);
    }
    out
}

/// Replaces the secrets in every string of `value`.
pub fn redact_value(value: &mut Value, found: &mut Redaction) {
    match value {
        Value::String(text) => {
            if let Some(r) = redact_text(text, found) {
                *text = r;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(v, found)),
        Value::Object(map) => map.values_mut().for_each(|v| redact_value(v, found)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn common_secrets_are_replaced_and_counted() {
        let mut value = json!({
            "prompt": "use sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123 and AKIAABCDEFGHIJKLMNOP",
            "tool_input": {"command": "curl -H 'Authorization: Bearer abcdefghijklmnop.qrstuvwx' https://bob:hunter22@example.com/x"},
            "list": ["ghp_abcdefghijklmnopqrstuvwxyz0123456789", "password = s3cr3tvalue", "nothing here"],
            "n": 42,
        });
        let mut found = Redaction::default();
        redact_value(&mut value, &mut found);
        let text = value.to_string();
        for gone in [
            "sk-ant",
            "AKIAABCD",
            "abcdefghijklmnop.qrstuvwx",
            "hunter22",
            "ghp_abc",
            "s3cr3tvalue",
        ] {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
        assert!(
            text.contains("https://bob:[REDACTED:url_password]@example.com"),
            "{text}"
        );
        assert!(text.contains("nothing here"));
        assert_eq!(found.count, 6, "{text}");
        assert!(found.kinds.contains("api_key") && found.kinds.contains("bearer_token"));
        let mut clean = json!({"prompt": "review src/lib.rs, it has a token bucket"});
        let mut none = Redaction::default();
        redact_value(&mut clean, &mut none);
        assert_eq!(none.count, 0);
    }
}
