//! YAML frontmatter between `---` lines, with the lenient `key: value` fallback.

use std::collections::BTreeMap;

/// A command file split into its frontmatter fields and its body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Frontmatter {
    /// Scalar fields as text; lists joined with `,`.
    pub(crate) fields: BTreeMap<String, String>,
    /// Each top-level `key: value` line's value as written (one pair of quotes
    /// removed): what an agent that does not parse YAML shows (`argument-hint:
    /// [pr] [priority]` is text, not a list).
    pub(crate) raw: BTreeMap<String, String>,
    /// Everything after the closing `---`.
    pub(crate) body: String,
    /// Whether the file opened with a frontmatter (`---`).
    pub(crate) opened: bool,
}

/// Frontmatter that is not valid YAML (or not closed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct FrontmatterError {
    /// 1-based line in the file.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Splits `text` into (frontmatter text, its first line number in the file, body).
/// `Ok(None)` when the file has no frontmatter.
fn split(text: &str) -> Result<Option<(&str, usize, &str)>, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok(None);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare == "---" || bare == "..." {
            let yaml = &rest[..offset];
            let body = &rest[offset + line.len()..];
            return Ok(Some((yaml, 2, body)));
        }
        offset += line.len();
    }
    Err(FrontmatterError {
        line: 1,
        message: "frontmatter opened with --- is never closed; end it with a line holding only ---"
            .into(),
    })
}

fn scalar(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(","),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Strict parse: YAML errors are returned with their line in the file (cmdlog's
/// native files: the YAML as written).
pub(crate) fn parse_strict(text: &str) -> Result<Frontmatter, FrontmatterError> {
    parse(text, false)
}

/// Strict parse of an agent's file: an argument hint is text as written, as the
/// agents show it, even where YAML would read a list or fail.
pub(crate) fn parse_agent(text: &str) -> Result<Frontmatter, FrontmatterError> {
    parse(text, true)
}

fn parse(text: &str, hints_as_text: bool) -> Result<Frontmatter, FrontmatterError> {
    let Some((yaml, first_line, body)) = split(text)? else {
        return Ok(Frontmatter {
            fields: BTreeMap::new(),
            raw: BTreeMap::new(),
            body: text.strip_prefix('\u{feff}').unwrap_or(text).to_string(),
            opened: false,
        });
    };
    let fields = if yaml.trim().is_empty() {
        BTreeMap::new()
    } else {
        let map: BTreeMap<String, serde_json::Value> = serde_saphyr::from_str(&if hints_as_text {
            quote_hints(yaml)
        } else {
            std::borrow::Cow::Borrowed(yaml)
        })
        .map_err(|e| FrontmatterError {
            line: first_line
                + e.location()
                    .map(|l| (l.line() as usize).saturating_sub(1))
                    .unwrap_or(0),
            message: first_line_of(&e.to_string()),
        })?;
        map.into_iter().map(|(k, v)| (k, scalar(&v))).collect()
    };
    Ok(Frontmatter {
        fields,
        raw: raw_lines(yaml),
        body: body.to_string(),
        opened: true,
    })
}

/// The agents show an argument hint as written: `argument-hint: [pr] [priority]` is
/// text, though YAML would read a list (or fail). Such values are quoted first.
fn quote_hints(yaml: &str) -> std::borrow::Cow<'_, str> {
    let is_hint = |l: &str| l.starts_with("argument-hint:") || l.starts_with("argument_hint:");
    if !yaml.lines().any(is_hint) {
        return std::borrow::Cow::Borrowed(yaml);
    }
    let mut out = String::with_capacity(yaml.len() + 8);
    for line in yaml.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        match bare.split_once(':') {
            Some((key, value))
                if is_hint(bare)
                    && !value.trim().is_empty()
                    && !value.trim_start().starts_with(['\'', '"']) =>
            {
                out.push_str(key);
                out.push_str(": '");
                out.push_str(&value.trim().replace('\'', "''"));
                out.push('\'');
                out.push_str(&line[bare.len()..]);
            }
            _ => out.push_str(line),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Top-level `key: value` lines, values as written.
fn raw_lines(yaml: &str) -> BTreeMap<String, String> {
    yaml.lines()
        .filter(|l| !l.starts_with([' ', '\t', '#', '-']))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), unquote(v.trim()).to_string()))
        .filter(|(k, _)| !k.is_empty() && !k.contains(char::is_whitespace))
        .collect()
}

/// The parser's message without its own position prefix (`error: line 1 column 14: `):
/// the file line is reported separately.
fn first_line_of(message: &str) -> String {
    let line = message.lines().next().unwrap_or(message).trim();
    let line = line.strip_prefix("error: ").unwrap_or(line);
    match line
        .strip_prefix("line ")
        .and_then(|rest| rest.split_once(": "))
    {
        Some((position, rest)) if position.contains("column") => rest.to_string(),
        _ => line.to_string(),
    }
}

/// Lenient parse for non-native providers: on a YAML error, reads `key: value` lines
/// and returns the error as a warning. An unclosed frontmatter leaves the whole text
/// as the body.
pub(crate) fn parse_lenient(text: &str) -> (Frontmatter, Option<FrontmatterError>) {
    match parse_agent(text) {
        Ok(fm) => (fm, None),
        Err(error) => {
            let fm = match split(text) {
                Ok(Some((yaml, _, body))) => Frontmatter {
                    fields: raw_lines(yaml),
                    raw: raw_lines(yaml),
                    body: body.to_string(),
                    opened: true,
                },
                _ => Frontmatter {
                    fields: BTreeMap::new(),
                    raw: BTreeMap::new(),
                    body: text.to_string(),
                    opened: false,
                },
            };
            (fm, Some(error))
        }
    }
}

fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_frontmatter_is_all_body() {
        let fm = parse_strict("Do the thing\n").unwrap();
        assert!(fm.fields.is_empty());
        assert_eq!(fm.body, "Do the thing\n");
    }

    #[test]
    fn yaml_fields_and_body() {
        let fm = parse_strict(
            "---\ndescription: Review code\nallowed-tools: [Read, Grep]\ndisable-model-invocation: true\n---\nBody $1\n",
        )
        .unwrap();
        assert_eq!(fm.fields["description"], "Review code");
        assert_eq!(fm.fields["allowed-tools"], "Read,Grep");
        assert_eq!(fm.fields["disable-model-invocation"], "true");
        assert_eq!(fm.body, "Body $1\n");
    }

    #[test]
    fn errors_carry_the_file_line() {
        let err =
            parse_strict("---\ndescription: ok\nbad: [unclosed\nmore: x\n---\nbody").unwrap_err();
        assert!(err.line >= 3, "{err:?}");
        let err = parse_strict("---\ndescription: x\n").unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.message.contains("never closed"));
        let err = parse_strict("---\n- a list\n---\n").unwrap_err();
        assert_eq!(err.line, 2, "{err:?}");
    }

    #[test]
    fn argument_hints_are_text_as_written() {
        let fm = parse_agent("---\nargument-hint: [pr-number] [priority]\ndescription: x\n---\nB")
            .unwrap();
        assert_eq!(fm.fields["argument-hint"], "[pr-number] [priority]");
        let fm = parse_agent("---\nargument-hint: [file]\n---\nB").unwrap();
        assert_eq!(fm.fields["argument-hint"], "[file]");
        assert!(
            parse_strict("---\nargument-hint: [pr] [p]\n---\nB").is_err(),
            "native files are YAML as written"
        );
        let fm = parse_agent("---\nargument-hint: \"<a> 'b'\"\n---\nB").unwrap();
        assert_eq!(fm.fields["argument-hint"], "<a> 'b'");
    }

    #[test]
    fn lenient_falls_back_to_key_value_lines() {
        let (fm, err) = parse_lenient(
            "---\ndescription: \"Has: colons\" [oops\nargument-hint: <file>\n---\nText",
        );
        assert!(err.is_some());
        assert_eq!(fm.fields["argument-hint"], "<file>");
        assert_eq!(fm.body, "Text");
        let (fm, err) = parse_lenient("---\nunclosed: yes\nText");
        assert!(err.is_some());
        assert_eq!(fm.body, "---\nunclosed: yes\nText");
    }
}
