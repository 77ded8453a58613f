//! Sizes as ratchets: what the code measures today is recorded below, and a
//! change may lower a number, never raise it (then the record is lowered with
//! it, so the next change is held to the new figure). Hard ceilings beside
//! them: no file over 800 lines, no function outside tests over 150, no verb
//! (`src/cli/*.rs`) over 250, `src/main.rs` under 200.

use super::{read, source_files};

/// Lines of the binary's `src/`.
const SRC_LINES: usize = 4564;
/// Lines of the longest source file.
const FILE_LINES: usize = 719;
/// Lines of the longest function outside tests.
const FUNCTION_LINES: usize = 137;
/// Functions outside tests over 100 lines.
const FUNCTIONS_OVER_100: usize = 26;
/// `json!` outside tests: JSON built by hand where a typed view would say
/// what it holds.
const JSON_MACROS: usize = 190;
/// Names the engine's root re-exports (the event schema and the rest live in
/// modules of their own).
const ENGINE_ROOT_NAMES: usize = 59;

const FILE_LINES_CEILING: usize = 800;
const FUNCTION_LINES_CEILING: usize = 150;
const VERB_LINES_CEILING: usize = 250;
const MAIN_LINES_CEILING: usize = 200;

/// A function's place and length.
#[derive(Debug)]
pub(crate) struct Function {
    pub file: String,
    pub name: String,
    pub line: usize,
    pub lines: usize,
    pub in_test: bool,
}

/// Every `fn` with a body in `text`, with its length from the `fn` line to its
/// closing brace. Strings, characters and comments are skipped so braces in
/// them do not count; a `#[cfg(test)]` item's functions are marked as tests.
pub(crate) fn functions(file: &str, text: &str) -> Vec<Function> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    // Open braces: the function each one opened (an index in `out`), whether a
    // test item opened it.
    let mut braces: Vec<(Option<usize>, bool)> = Vec::new();
    // A `fn` seen whose body has not opened yet: index in `out`.
    let mut pending: Option<usize> = None;
    let mut test_attr = false;
    let mut parens = 0i32;
    let mut line = 1;
    let mut i = 0;
    let in_test = |braces: &[(Option<usize>, bool)]| braces.iter().any(|b| b.1);
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'\n' => line += 1,
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < bytes.len() {
                    if bytes[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if bytes[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if bytes[i] == b'\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                }
                continue;
            }
            b'r' if (bytes.get(i + 1) == Some(&b'"') || bytes.get(i + 1) == Some(&b'#'))
                && (i == 0 || !is_ident(bytes[i - 1])) =>
            {
                // A raw string: r"…", r#"…"#.
                let mut j = i + 1;
                let mut hashes = 0;
                while bytes.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if bytes.get(j) == Some(&b'"') {
                    j += 1;
                    let close: Vec<u8> = std::iter::once(b'"')
                        .chain(std::iter::repeat_n(b'#', hashes))
                        .collect();
                    while j < bytes.len() && !bytes[j..].starts_with(&close) {
                        if bytes[j] == b'\n' {
                            line += 1;
                        }
                        j += 1;
                    }
                    i = j + close.len();
                    continue;
                }
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    if bytes.get(i) == Some(&b'\n') {
                        line += 1;
                    }
                    i += 1;
                }
                i += 1;
                continue;
            }
            b'\'' => {
                // A character ('x', '\n', '\u{…}') or a lifetime ('a).
                if bytes.get(i + 1) == Some(&b'\\') {
                    i += 2;
                    while i < bytes.len() && bytes[i] != b'\'' {
                        i += 1;
                    }
                    i += 1;
                    continue;
                }
                let width = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                if bytes.get(i + 1 + width) == Some(&b'\'') {
                    i += 2 + width;
                    continue;
                }
            }
            b'#' if bytes[i..].starts_with(b"#[cfg(test)]") => test_attr = true,
            b'(' => parens += 1,
            b')' => parens -= 1,
            b';' if parens == 0 => {
                // A declaration without a body, or the item the attribute was on.
                pending = None;
                test_attr = false;
            }
            b'{' => {
                let opened = if parens == 0 { pending.take() } else { None };
                braces.push((opened, test_attr));
                test_attr = false;
            }
            b'}' => {
                if let Some((Some(f), _)) = braces.pop() {
                    let f: &mut Function = &mut out[f];
                    f.lines = line - f.line + 1;
                }
            }
            b'f' if bytes[i..].starts_with(b"fn ")
                && (i == 0 || !is_ident(bytes[i - 1]))
                && parens == 0 =>
            {
                let name: String = text[i + 3..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push(Function {
                    file: file.to_string(),
                    name,
                    line,
                    lines: 0,
                    in_test: test_attr || in_test(&braces),
                });
                pending = Some(out.len() - 1);
                i += 3;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out.retain(|f| f.lines > 0);
    out
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[test]
fn sizes_only_go_down() {
    let mut problems = Vec::new();
    let mut src_lines = 0;
    let mut longest_file = (0, String::new());
    let mut longest_function = (0, String::new());
    let mut over_100 = Vec::new();
    for file in source_files() {
        let file = file.trim_start_matches("./").to_string();
        let text = read(&file);
        let n = text.lines().count();
        if n > longest_file.0 {
            longest_file = (n, file.clone());
        }
        if n > FILE_LINES_CEILING {
            problems.push(format!(
                "{file} has {n} lines (at most {FILE_LINES_CEILING}): split it along its seams"
            ));
        }
        if file.starts_with("src/") {
            src_lines += n;
        }
        if file.starts_with("src/cli/") && n > VERB_LINES_CEILING {
            problems.push(format!(
                "{file} has {n} lines (a verb at most {VERB_LINES_CEILING}): what it decides belongs in a library crate"
            ));
        }
        if file == "src/main.rs" && n >= MAIN_LINES_CEILING {
            problems.push(format!(
                "src/main.rs has {n} lines: verbs belong in src/cli/"
            ));
        }
        for f in functions(&file, &text).into_iter().filter(|f| !f.in_test) {
            let place = format!("{}:{} `{}`", f.file, f.line, f.name);
            if f.lines > longest_function.0 {
                longest_function = (f.lines, place.clone());
            }
            if f.lines > FUNCTION_LINES_CEILING {
                problems.push(format!(
                    "{place} has {} lines (at most {FUNCTION_LINES_CEILING}): split it",
                    f.lines
                ));
            }
            if f.lines > 100 {
                over_100.push(place);
            }
        }
    }
    let json_macros: usize = source_files()
        .iter()
        .filter(|f| !f.starts_with("test-support/"))
        .map(|f| {
            let text = read(f.trim_start_matches("./"));
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
            code.matches("json!(").count()
        })
        .sum();
    let engine_root_names = engine_root_names(&read("engine/src/lib.rs"));
    let checks = [
        (
            "SRC_LINES",
            "lines of src/",
            src_lines,
            SRC_LINES,
            String::new(),
        ),
        (
            "FILE_LINES",
            "lines of the longest file",
            longest_file.0,
            FILE_LINES,
            longest_file.1,
        ),
        (
            "FUNCTION_LINES",
            "lines of the longest function",
            longest_function.0,
            FUNCTION_LINES,
            longest_function.1,
        ),
        (
            "FUNCTIONS_OVER_100",
            "functions over 100 lines",
            over_100.len(),
            FUNCTIONS_OVER_100,
            over_100.join(", "),
        ),
        (
            "JSON_MACROS",
            "json! outside tests",
            json_macros,
            JSON_MACROS,
            String::new(),
        ),
        (
            "ENGINE_ROOT_NAMES",
            "names the engine's root re-exports",
            engine_root_names,
            ENGINE_ROOT_NAMES,
            String::new(),
        ),
    ];
    for (name, what, now, recorded, which) in checks {
        if now > recorded {
            problems.push(format!(
                "{what}: {now}, over the {recorded} recorded ({which}): sizes only go down"
            ));
        } else if now < recorded {
            problems.push(format!(
                "{what}: {now}, under the {recorded} recorded: lower {name} in tests/tidy/size.rs to {now}"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The names `pub use` statements of a crate root re-export.
fn engine_root_names(lib: &str) -> usize {
    lib.split("pub use ")
        .skip(1)
        .map(|rest| {
            let statement = rest.split(';').next().unwrap_or("");
            match statement.split_once('{') {
                Some((_, names)) => names
                    .split(',')
                    .filter(|n| !n.trim().trim_end_matches('}').is_empty())
                    .count(),
                None => 1,
            }
        })
        .sum()
}

#[test]
fn the_scanner_measures_functions_and_knows_tests() {
    let text = r##"
fn one() {
    let s = "}";
    let c = '}';
    let r = r#"}"#;
    // }
    /* { */
}

trait T {
    fn declared(&self);
    fn provided<'a>(&'a self) -> &'a str {
        "x"
    }
}

#[cfg(test)]
mod tests {
    fn helper() {}
}
"##;
    let found = functions("x.rs", text);
    let got: Vec<(&str, usize, bool)> = found
        .iter()
        .map(|f| (f.name.as_str(), f.lines, f.in_test))
        .collect();
    assert_eq!(
        got,
        [
            ("one", 7, false),
            ("provided", 3, false),
            ("helper", 1, true)
        ]
    );
}
