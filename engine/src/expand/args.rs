//! How each agent splits what the user typed into arguments.

/// Options of the shell-style tokenizer.
#[derive(Debug, Clone, Copy)]
pub(super) struct ShellWords {
    /// A word starting with `#` begins a comment running to the end of the line.
    pub(super) comments: bool,
    /// Unquoted shell operators (`|`, `;`, `&`, `<`, `>`, `(`, `)`) end a word and are
    /// dropped (Claude's `shell-quote`).
    pub(super) operators: bool,
    /// On an unclosed quote or a trailing backslash: `true` stops and drops the
    /// partial word and the rest (Codex's `shlex`); `false` keeps the rest as the
    /// last word.
    pub(super) stop_at_unterminated: bool,
}

/// POSIX-style words: whitespace (space, tab, newline) separates; `'…'` is literal;
/// `"…"` keeps `\$ \` \" \\` escapes; a bare `\x` is `x`.
pub(super) fn shell_words(input: &str, options: ShellWords) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = input.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '#' if options.comments && !in_word => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '|' | ';' | '&' | '<' | '>' | '(' | ')' if options.operators => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                let mut closed = false;
                for c in chars.by_ref() {
                    if c == '\'' {
                        closed = true;
                        break;
                    }
                    word.push(c);
                }
                if !closed && options.stop_at_unterminated {
                    return words;
                }
            }
            '"' => {
                in_word = true;
                let mut closed = false;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => {
                            closed = true;
                            break;
                        }
                        '\\' => match chars.peek() {
                            Some(&e @ ('$' | '`' | '"' | '\\')) => {
                                word.push(e);
                                chars.next();
                            }
                            Some('\n') => {
                                chars.next();
                            }
                            _ => word.push('\\'),
                        },
                        c => word.push(c),
                    }
                }
                if !closed && options.stop_at_unterminated {
                    return words;
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(e) => {
                    word.push(e);
                    in_word = true;
                }
                None if options.stop_at_unterminated => return words,
                None => {}
            },
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// OpenCode's tokens: `[Image N]`, `"…"`, `'…'` or runs of anything else, each with
/// one leading and one trailing quote character stripped. No escapes.
pub(super) fn opencode_words(input: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut rest = input;
    while let Some(c) = rest.chars().next() {
        if c.is_whitespace() {
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let len = image_token(rest)
            .or_else(|| quoted(rest, '"'))
            .or_else(|| quoted(rest, '\''))
            .unwrap_or_else(|| {
                if c == '"' || c == '\'' {
                    // An unmatched quote is skipped.
                    0
                } else {
                    rest.find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
                        .unwrap_or(rest.len())
                }
            });
        if len == 0 {
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let token = &rest[..len];
        let token = token.strip_prefix(['"', '\'']).unwrap_or(token);
        let token = token.strip_suffix(['"', '\'']).unwrap_or(token);
        words.push(token.to_string());
        rest = &rest[len..];
    }
    words
}

/// `[Image N]` (case-insensitive) at the start of `text`: its length.
fn image_token(text: &str) -> Option<usize> {
    let lower = text.get(..6)?.to_ascii_lowercase();
    if lower != "[image" {
        return None;
    }
    let after = &text[6..];
    let spaces = after.len() - after.trim_start().len();
    if spaces == 0 {
        return None;
    }
    let digits = after[spaces..]
        .bytes()
        .take_while(u8::is_ascii_digit)
        .count();
    if digits == 0 || after.as_bytes().get(spaces + digits) != Some(&b']') {
        return None;
    }
    Some(6 + spaces + digits + 1)
}

/// A `q…q` run at the start of `text`: its length with both quotes.
fn quoted(text: &str, q: char) -> Option<usize> {
    let body = text.strip_prefix(q)?;
    body.find(q).map(|end| end + 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODEX: ShellWords = ShellWords {
        comments: true,
        operators: false,
        stop_at_unterminated: true,
    };
    const CLAUDE: ShellWords = ShellWords {
        comments: true,
        operators: true,
        stop_at_unterminated: false,
    };

    #[test]
    fn shell_words_as_the_agents_split_them() {
        assert_eq!(
            shell_words(r#"a "b c" 'd e' f\ g"#, CODEX),
            ["a", "b c", "d e", "f g"]
        );
        assert_eq!(shell_words("x #42 y\nz", CODEX), ["x", "z"]);
        assert_eq!(shell_words(r#"a "unterminated b"#, CODEX), ["a"]);
        assert_eq!(shell_words(r#"say "\"hi\"""#, CODEX), ["say", "\"hi\""]);
        assert_eq!(
            shell_words("a | b; c && d > e", CLAUDE),
            ["a", "b", "c", "d", "e"]
        );
        assert_eq!(shell_words(r#"a "open"#, CLAUDE), ["a", "open"]);
        assert_eq!(shell_words("$HOME", CLAUDE), ["$HOME"]);
    }

    #[test]
    fn opencode_tokens() {
        assert_eq!(opencode_words("a 'b c' \"d\""), ["a", "b c", "d"]);
        assert_eq!(
            opencode_words(r#"foo"bar baz" qux"#),
            ["foo", "bar baz", "qux"]
        );
        assert_eq!(opencode_words("it's"), ["it", "s"]);
        assert_eq!(
            opencode_words("[Image 1] caption"),
            ["[Image 1]", "caption"]
        );
        assert_eq!(opencode_words(r#""unterminated x"#), ["unterminated", "x"]);
    }
}
