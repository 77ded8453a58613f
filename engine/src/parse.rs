//! Slash-line parsing and argument splitting: the one place text becomes a
//! command name and arguments.

use crate::command::CommandName;

/// A syntactically valid slash line before resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedLine {
    /// The lowercased name.
    pub name: CommandName,
    /// The exact text after the name, separator whitespace included.
    pub raw_input: String,
}

/// Parses `/name rest`. `None` when the line does not start with `/` followed by a
/// valid name (after lowercasing): such a line is not a command.
pub fn parse_line(line: &str) -> Option<ParsedLine> {
    let rest = line.strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (token, raw_input) = rest.split_at(end);
    let name = CommandName::new(token.to_lowercase()).ok()?;
    Some(ParsedLine {
        name,
        raw_input: raw_input.to_string(),
    })
}

/// Splits arguments on whitespace; `'…'` and `"…"` keep spaces and are removed; no
/// backslash escapes; an unclosed quote runs to the end; quotes may sit inside a
/// token (`a"b c"d` → `ab cd`).
pub fn parse_command_args(input: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut current = String::new();
    let mut in_token = false;
    let mut quote: Option<char> = None;
    for c in input.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_token = true;
            }
            None if c.is_whitespace() => {
                if in_token {
                    args.push(std::mem::take(&mut current));
                    in_token = false;
                }
            }
            None => {
                current.push(c);
                in_token = true;
            }
        }
    }
    if in_token {
        args.push(current);
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> Option<(String, String)> {
        parse_line(line).map(|p| (p.name.to_string(), p.raw_input))
    }

    #[test]
    fn lines() {
        assert_eq!(parsed("/help"), Some(("help".into(), "".into())));
        assert_eq!(
            parsed("/Model  gpt x "),
            Some(("model".into(), "  gpt x ".into()))
        );
        assert_eq!(
            parsed("/git:commit\tmsg"),
            Some(("git:commit".into(), "\tmsg".into()))
        );
        // OpenCode names nest with `/`: `/team/review` is a command name.
        assert_eq!(
            parsed("/team/review x"),
            Some(("team/review".into(), " x".into()))
        );
        for miss in ["help", " /help", "/", "/ help", "//x", "/héllo", ""] {
            assert_eq!(parsed(miss), None, "{miss:?}");
        }
    }

    #[test]
    fn args() {
        let a = |s: &str| parse_command_args(s);
        assert_eq!(a("a b  c"), vec!["a", "b", "c"]);
        assert_eq!(a(r#"'a b' "c d" e"#), vec!["a b", "c d", "e"]);
        assert_eq!(a(r#"a"b c"d"#), vec!["ab cd"]);
        assert_eq!(a(r#"x "unclosed rest"#), vec!["x", "unclosed rest"]);
        assert_eq!(a(r#"a\ b"#), vec![r"a\", "b"]);
        assert_eq!(a(r#""""#), vec![""]);
        assert_eq!(a("   "), Vec::<String>::new());
        assert_eq!(a(r#""it's""#), vec!["it's"]);
    }
}
