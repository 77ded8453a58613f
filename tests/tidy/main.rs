//! Keeps the docs and the code in step, and the module graph acyclic (as
//! rust-analyzer's `xtask/src/tidy.rs` does for its own):
//!
//! - every file `docs/architecture.md`'s file map names exists, and every source
//!   file of every crate is named there (by its path, or by its folder);
//! - every limit in a crate's `limits.rs` is in the limits table of
//!   `docs/architecture.md` with the same value, and the table names no other;
//! - no two modules of one crate import each other, directly or round a longer
//!   cycle (top-level modules, and the modules inside each folder module);
//! - sizes only go down (`size.rs`): the lines of `src/`, of the longest file and
//!   of the longest function, and the count of functions over 100 lines, each
//!   held at what it is, never over 800 lines a file, 150 a function, 250 a verb.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod size;

/// The crates whose `src/` the checks read, the binary's included.
const CRATES: [&str; 13] = [
    "common",
    "store",
    "tlog",
    "engine",
    "replay",
    "acp",
    "agents",
    "hub",
    "index",
    "workbench",
    "server",
    "test-support",
    ".",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every `.rs` file under `dir`, as paths relative to the repository.
fn rust_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root()).unwrap();
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

fn source_files() -> Vec<String> {
    CRATES
        .iter()
        .flat_map(|c| rust_files(&root().join(c).join("src")))
        .collect()
}

/// The backquoted paths in the first column of every table row of the file map
/// (`## Map` sections): `src/cli/<verb>.rs` style names are patterns; a name
/// ending in `/` is a folder.
fn mapped_paths(doc: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_map = false;
    for line in doc.lines() {
        if line.starts_with("## ") || line.starts_with("### ") {
            in_map = line.contains("Map of") || line.contains("File map");
            continue;
        }
        if !in_map || !line.starts_with("| `") {
            continue;
        }
        let first = line.split('|').nth(1).unwrap_or("");
        for part in first.split('`').skip(1).step_by(2) {
            out.push(part.trim().to_string());
        }
    }
    out
}

#[test]
fn the_file_map_names_every_source_file_and_only_real_ones() {
    let doc = read("docs/architecture.md");
    let mapped = mapped_paths(&doc);
    assert!(mapped.len() > 20, "the file map was not found");
    let mut problems = Vec::new();
    for path in &mapped {
        let exists = if let Some((dir, rest)) = path.split_once('<') {
            // `src/cli/<verb>.rs`: the folder exists and holds files of that shape.
            let suffix = rest.split_once('>').map(|(_, s)| s).unwrap_or("");
            rust_files(&root().join(dir))
                .iter()
                .any(|f| f.ends_with(suffix))
        } else {
            root().join(path.trim_end_matches('/')).exists()
        };
        if !exists {
            problems.push(format!("the map names {path}, which does not exist"));
        }
    }
    for file in source_files() {
        let file = file.trim_start_matches("./").to_string();
        let named = mapped.iter().any(|m| {
            m == &file
                || (m.ends_with('/') && file.starts_with(m.as_str()))
                || m.split_once('<').is_some_and(|(dir, rest)| {
                    let suffix = rest.split_once('>').map(|(_, s)| s).unwrap_or("");
                    file.starts_with(dir)
                        && !file[dir.len()..].contains('/')
                        && file.ends_with(suffix)
                })
        });
        if !named {
            problems.push(format!("{file} is not in docs/architecture.md's file map"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A limit's value: a count or bytes, or a duration in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    Number(u128),
    Micros(u128),
}

/// Evaluates a limit's initializer: products of integer literals and earlier
/// constants, or `Duration::from_{secs,millis,micros}(n)`.
fn eval(expr: &str, known: &BTreeMap<String, Value>) -> Option<Value> {
    let expr = expr.trim();
    for (unit, scale) in [("secs", 1_000_000), ("millis", 1_000), ("micros", 1)] {
        let head = format!("Duration::from_{unit}(");
        if let Some(inner) = expr.strip_prefix(&head).and_then(|r| r.strip_suffix(')')) {
            let Value::Number(n) = eval(inner, known)? else {
                return None;
            };
            return Some(Value::Micros(n * scale));
        }
    }
    let mut product = 1u128;
    for factor in expr.split('*') {
        let factor = factor.trim().replace('_', "");
        let n = match factor.parse::<u128>() {
            Ok(n) => n,
            Err(_) => match known.get(factor.trim())? {
                Value::Number(n) => *n,
                Value::Micros(_) => return None,
            },
        };
        product *= n;
    }
    Some(Value::Number(product))
}

/// The limits of one `limits.rs`: name → value.
fn code_limits(rel: &str) -> BTreeMap<String, Value> {
    let text = read(rel);
    let mut known = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = line
            .strip_prefix("pub const ")
            .or_else(|| line.strip_prefix("pub(crate) const "))
            .or_else(|| line.strip_prefix("const "))
        else {
            continue;
        };
        if rest.starts_with('_') {
            continue; // a `const _: () = assert!(…)`
        }
        let (name, rest) = rest.split_once(':').expect("a typed const");
        let expr = rest
            .split_once('=')
            .map(|(_, e)| e.trim_end_matches(';'))
            .expect("an initialized const");
        let value = eval(expr, &known)
            .unwrap_or_else(|| panic!("{rel}: cannot read the value of {name}: {expr}"));
        known.insert(name.trim().to_string(), value);
    }
    known
}

/// A value as the docs write it: `16 MiB`, `255 KiB`, `4096`, `10,000`, `2 s`,
/// `100 ms`, `50 µs`.
fn doc_value(text: &str) -> Option<Value> {
    let text = text.trim().replace(',', "");
    let (number, unit) = match text.split_once(' ') {
        Some((n, u)) => (n, u.trim()),
        None => (text.as_str(), ""),
    };
    let n: u128 = number.parse().ok()?;
    Some(match unit {
        "" => Value::Number(n),
        "KiB" => Value::Number(n * 1024),
        "MiB" => Value::Number(n * 1024 * 1024),
        "s" => Value::Micros(n * 1_000_000),
        "ms" => Value::Micros(n * 1_000),
        "µs" => Value::Micros(n),
        _ => return None,
    })
}

#[test]
fn every_limit_is_documented_with_its_value() {
    let doc = read("docs/architecture.md");
    let section = doc
        .split("\n## Limits")
        .nth(1)
        .expect("docs/architecture.md has a `## Limits` section");
    let section = section.split("\n## ").next().unwrap();
    // | crate | `NAME` | value | what |
    let mut documented: BTreeMap<(String, String), String> = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 5 || !cells[2].starts_with('`') {
            continue;
        }
        documented.insert(
            (cells[1].to_string(), cells[2].trim_matches('`').to_string()),
            cells[3].to_string(),
        );
    }
    let mut problems = Vec::new();
    let mut in_code = BTreeSet::new();
    for krate in CRATES {
        let rel = format!("{krate}/src/limits.rs");
        if !root().join(&rel).exists() {
            continue;
        }
        let name = format!("cmdlog-{krate}");
        for (limit, value) in code_limits(&rel) {
            in_code.insert((name.clone(), limit.clone()));
            match documented.get(&(name.clone(), limit.clone())) {
                None => problems.push(format!("{name} {limit} is not in the limits table")),
                Some(text) if doc_value(text) != Some(value) => problems.push(format!(
                    "{name} {limit}: the docs say {text}, the code {value:?}"
                )),
                Some(_) => {}
            }
        }
    }
    for key in documented.keys() {
        if !in_code.contains(key) {
            problems.push(format!(
                "the limits table names {} {}, which the code does not have",
                key.0, key.1
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The module a source file is, as a path of names below the crate root.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts
        .last()
        .is_some_and(|l| l == "mod" || l == "lib" || l == "main")
    {
        parts.pop();
    }
    parts
}

/// The modules a file names through `crate::a::b` and `super::b` paths.
fn references(module: &[String], is_folder_module: bool, text: &str) -> Vec<Vec<String>> {
    let code: String = text
        .lines()
        .take_while(|l| !l.starts_with("#[cfg(test)]"))
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    let words = |rest: &str| -> Vec<String> {
        rest.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .next()
            .unwrap_or("")
            .split("::")
            .filter(|w| !w.is_empty() && w.chars().next().is_some_and(|c| c.is_lowercase()))
            .map(str::to_string)
            .collect()
    };
    for (i, _) in code.match_indices("crate::") {
        if code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        out.push(words(&code[i + "crate::".len()..]));
    }
    for (i, _) in code.match_indices("super::") {
        if code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        // `super` of a folder module's `mod.rs` is its parent's parent.
        let mut base = module.to_vec();
        base.pop();
        if is_folder_module {
            base.pop();
        }
        base.extend(words(&code[i + "super::".len()..]));
        out.push(base);
    }
    // `use crate::{a, b}` and `use super::{a, b}` groups.
    for (prefix, base) in [
        ("crate::{", Vec::new()),
        ("super::{", {
            let mut b = module.to_vec();
            b.pop();
            b
        }),
    ] {
        for (i, _) in code.match_indices(prefix) {
            let group = &code[i + prefix.len()..];
            let group = &group[..group.find('}').unwrap_or(0)];
            for item in group.split(',') {
                let mut path = base.clone();
                path.extend(words(item.trim()));
                out.push(path);
            }
        }
    }
    out
}

fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            match state.get(next.as_str()) {
                Some(1) => {
                    let from = stack.iter().position(|n| n == next).unwrap();
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(next, edges, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in edges.keys() {
        if !state.contains_key(node.as_str()) {
            let mut stack = Vec::new();
            if let Some(c) = visit(node, edges, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_two_modules_of_a_crate_import_each_other() {
    let mut problems = Vec::new();
    for krate in CRATES {
        let src = root().join(krate).join("src");
        // Edges between siblings: the modules directly inside the same parent.
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for file in rust_files(&src) {
            let path = root().join(&file);
            let module = module_of(&src, &path);
            if module.is_empty() {
                continue; // the crate root declares and re-exports
            }
            let folder = path.file_name().is_some_and(|n| n == "mod.rs");
            let text = std::fs::read_to_string(&path).unwrap();
            for target in references(&module, folder, &text) {
                // The first name where the two paths part is the sibling pair.
                let common = module
                    .iter()
                    .zip(&target)
                    .take_while(|(a, b)| a == b)
                    .count();
                if common >= module.len() || common >= target.len() {
                    continue; // a parent or a child of its own: inside the room
                }
                let from = module[..=common].join("::");
                let to = target[..=common].join("::");
                edges.entry(from).or_default().insert(to);
            }
        }
        if let Some(cycle) = find_cycle(&edges) {
            problems.push(format!("{krate}: {}", cycle.join(" -> ")));
        }
    }
    assert!(
        problems.is_empty(),
        "import cycles:\n{}",
        problems.join("\n")
    );
}

/// The paths a section of `docs/architecture.md` names in backquotes: every
/// file (`.rs`, `.md`) or folder (`/` at the end); a `<name>` in one stands for
/// any file of that folder, `{a,b}` for each of them.
fn section_paths(doc: &str, heading: &str) -> Vec<String> {
    let Some(start) = doc.find(heading) else {
        return Vec::new();
    };
    let rest = &doc[start + heading.len()..];
    let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    section
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| {
            !t.contains(' ') && (t.ends_with(".rs") || t.ends_with(".md") || t.ends_with('/'))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn where_to_put_and_the_writers_name_real_files() {
    let doc = read("docs/architecture.md");
    let mut problems = Vec::new();
    for heading in ["## Where to put", "## Who writes to the log"] {
        let paths = section_paths(&doc, heading);
        assert!(paths.len() > 5, "{heading}: the section was not found");
        for path in paths {
            // `engine/src/discovery/<agent>.rs`: the folder; `a/{b,c}.rs`: each.
            let candidates: Vec<String> = if let Some((dir, _)) = path.split_once('<') {
                vec![dir.to_string()]
            } else if let Some((head, rest)) = path.split_once('{') {
                let (alts, tail) = rest.split_once('}').unwrap_or((rest, ""));
                alts.split(',')
                    .map(|a| format!("{head}{a}{tail}"))
                    .collect()
            } else {
                vec![path.clone()]
            };
            for c in candidates {
                if !root().join(&c).exists() {
                    problems.push(format!("{heading}: {c} does not exist"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
