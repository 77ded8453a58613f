//! The oh-my-pi rules of seed 002 (cmdlog's native files and the `pi` dialect), and
//! the first Gemini rule, kept for registrations made before the per-agent dialects.

use crate::parse::parse_command_args;

/// The `markdown` dialect: `$1`…, `$ARGUMENTS`, `$@`, `${@:N}`, `{{args}}`.
pub(super) fn markdown(template: &str, raw_input: &str) -> String {
    expand_markdown(template, &parse_command_args(raw_input))
}

/// The `gemini` dialect of the first release.
pub(super) fn gemini(template: &str, raw_input: &str) -> String {
    expand_gemini(template, raw_input.trim())
}

const ARGS_PLACEHOLDERS: [&str; 3] = ["{{args}}", "{{ARGUMENTS}}", "{{arguments}}"];

fn expand_markdown(template: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let mut out = String::with_capacity(template.len() + all.len());
    let mut rest = template;
    while let Some(i) = rest.find(['$', '{']) {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let (replacement, consumed) = markdown_token(rest, args, &all);
        match replacement {
            Some(text) => out.push_str(&text),
            None => out.push_str(&rest[..consumed]),
        }
        rest = &rest[consumed..];
    }
    out.push_str(rest);
    out
}

/// At a `$` or `{`: the replacement (if a placeholder starts here) and how many bytes
/// it spans (at least one char).
fn markdown_token(at: &str, args: &[String], all: &str) -> (Option<String>, usize) {
    if let Some(p) = ARGS_PLACEHOLDERS.iter().find(|p| at.starts_with(*p)) {
        return (Some(all.to_string()), p.len());
    }
    if at.starts_with("$ARGUMENTS") {
        return (Some(all.to_string()), "$ARGUMENTS".len());
    }
    if at.starts_with("$@") {
        return (Some(all.to_string()), 2);
    }
    if let Some(body) = at.strip_prefix("${@:")
        && let Some(close) = body.find('}')
        && let Some(slice) = slice_args(&body[..close], args)
    {
        return (Some(slice), "${@:".len() + close + 1);
    }
    if let Some(body) = at.strip_prefix('$') {
        let digits = body.len() - body.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0
            && let Ok(n) = body[..digits].parse::<usize>()
            && n >= 1
        {
            let value = args.get(n - 1).cloned().unwrap_or_default();
            return (Some(value), 1 + digits);
        }
    }
    (None, at.chars().next().map_or(1, char::len_utf8))
}

/// `N` or `N:L` (1-based start) into the joined slice; `None` when malformed.
fn slice_args(spec: &str, args: &[String]) -> Option<String> {
    let (start, len) = match spec.split_once(':') {
        Some((s, l)) => (s.parse::<usize>().ok()?, Some(l.parse::<usize>().ok()?)),
        None => (spec.parse::<usize>().ok()?, None),
    };
    let from = start.max(1) - 1;
    let tail = args.get(from..).unwrap_or(&[]);
    let taken = match len {
        Some(l) => &tail[..l.min(tail.len())],
        None => tail,
    };
    Some(taken.join(" "))
}

fn expand_gemini(template: &str, args: &str) -> String {
    if template.contains("{{args}}") {
        template.replace("{{args}}", args)
    } else if args.is_empty() {
        template.to_string()
    } else {
        format!("{template}\n\n{args}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(t: &str, input: &str) -> String {
        markdown(t, input)
    }

    #[test]
    fn markdown_placeholders() {
        assert_eq!(
            md("fix $1 in $2", "a.rs 'the parser'"),
            "fix a.rs in the parser"
        );
        assert_eq!(md("[$3]", "a"), "[]");
        assert_eq!(md("all: $ARGUMENTS / $@", "x  y"), "all: x y / x y");
        assert_eq!(md("${@:2}|${@:2:1}|${@:9}", "a b c"), "b c|b|");
        assert_eq!(md("{{args}} {{ARGUMENTS}} {{arguments}}", "q"), "q q q");
        assert_eq!(md("$10", "1 2 3 4 5 6 7 8 9 ten"), "ten");
        assert_eq!(
            md("cost $ 5, $0, ${x}, {y}, ${@:z}", "a"),
            "cost $ 5, $0, ${x}, {y}, ${@:z}"
        );
    }

    #[test]
    fn substitution_is_not_recursive() {
        assert_eq!(md("$1 and $2", "'$2' b"), "$2 and b");
        assert_eq!(md("$ARGUMENTS", "{{args}}"), "{{args}}");
    }

    #[test]
    fn gemini_dialect() {
        let g = gemini;
        assert_eq!(g("Review {{args}}.", "  a b "), "Review a b.");
        assert_eq!(g("Review.", " a b"), "Review.\n\na b");
        assert_eq!(g("Review.", "  "), "Review.");
        assert_eq!(g("Run !{ls} @{f}", ""), "Run !{ls} @{f}");
    }

    #[test]
    fn unicode_survives() {
        assert_eq!(md("é $1 ü {", "ñ"), "é ñ ü {");
    }
}
