//! Properties of the parsers: they never panic, and quoted tokens round-trip.
//! proptest prints the failing input and its seed; set PROPTEST_CASES for more cases.

use std::collections::BTreeMap;

use cmdlog_engine::Dialect;
use cmdlog_engine::expand::{ExpandInput, expand};
use cmdlog_engine::parse::{parse_command_args, parse_line};
use proptest::prelude::*;

const DIALECTS: [Dialect; 8] = [
    Dialect::Markdown,
    Dialect::Gemini,
    Dialect::Claude,
    Dialect::Codex,
    Dialect::GeminiCli,
    Dialect::QwenToml,
    Dialect::QwenMarkdown,
    Dialect::OpenCode,
];

fn run(template: &str, dialect: Dialect, raw_input: &str, names: &[String]) -> Option<String> {
    let vars = BTreeMap::from([("CLAUDE_PLUGIN_ROOT".to_string(), "/p".to_string())]);
    let input = ExpandInput {
        name: "x",
        raw_input,
        arguments: names,
        variables: &vars,
        release: None,
    };
    expand(template, dialect, &input).ok()
}

/// A token and the quoting that keeps it whole.
fn quoted_token() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        // Bare: no whitespace, no quotes, not empty.
        "[^\\s'\"]{1,12}".prop_map(|t| (t.clone(), t)),
        // Double-quoted: may hold spaces and single quotes.
        "[^\"]{0,12}".prop_map(|t| (t.clone(), format!("\"{t}\""))),
        // Single-quoted: may hold spaces and double quotes.
        "[^']{0,12}".prop_map(|t| (t.clone(), format!("'{t}'"))),
    ]
}

proptest! {
    #[test]
    fn parsers_never_panic(input in "\\PC{0,200}", any_text in any::<String>()) {
        let _ = parse_command_args(&input);
        let _ = parse_command_args(&any_text);
        let _ = parse_line(&input);
        let _ = parse_line(&format!("/{any_text}"));
        for dialect in DIALECTS {
            let _ = run(&input, dialect, &any_text, &["a".into(), input.clone()]);
            let _ = run(&any_text, dialect, &input, &[]);
        }
    }

    #[test]
    fn text_without_placeholders_is_never_altered(
        text in "[^$\\\\{}!@\\s][^$\\\\{}!@]{0,80}[^$\\\\{}!@\\s]",
        args in "( [a-z0-9 ]{1,20})?",
    ) {
        for dialect in DIALECTS {
            let expanded = run(&text, dialect, &args, &[]).expect("plain text expands");
            if args.trim().is_empty() {
                prop_assert_eq!(&expanded, &text, "{:?}", dialect);
            } else {
                // Dialects that append the arguments keep the text as its start.
                prop_assert!(expanded.starts_with(&text), "{:?}: {:?}", dialect, expanded);
            }
        }
    }

    #[test]
    fn quoted_tokens_round_trip(
        tokens in proptest::collection::vec(quoted_token(), 0..8),
        gaps in proptest::collection::vec("[ \\t]{1,3}", 8),
    ) {
        let mut line = String::from(gaps[0].as_str());
        for (i, (_, quoted)) in tokens.iter().enumerate() {
            line.push_str(quoted);
            line.push_str(&gaps[(i + 1) % gaps.len()]);
        }
        let expected: Vec<String> = tokens.into_iter().map(|(t, _)| t).collect();
        prop_assert_eq!(parse_command_args(&line), expected);
    }

    #[test]
    fn raw_input_is_exactly_what_follows_the_name(name in "[a-z][a-z0-9:/-]{0,20}", rest in "(\\s[^\\n]{0,40})?") {
        let parsed = parse_line(&format!("/{name}{rest}")).expect("a valid line parses");
        prop_assert_eq!(parsed.name.as_str(), name.as_str());
        prop_assert_eq!(parsed.raw_input, rest);
    }

    #[test]
    fn expansion_never_rescans_arguments(arg in "[$@{}A-Za-z0-9:]{0,16}") {
        // Whatever an argument holds, it lands verbatim: placeholders in it stay text.
        prop_assert_eq!(run("<$1>", Dialect::Markdown, &format!("'{arg}'"), &[]), Some(format!("<{arg}>")));
        prop_assert_eq!(run("<$0>", Dialect::Claude, &format!(" '{arg}'"), &[]), Some(format!("<{arg}>")));
        prop_assert_eq!(run("<$ARGUMENTS>", Dialect::Claude, &format!(" {arg}"), &[]), Some(format!("<{arg}>")));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn event_decoding_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300), seq in any::<u64>()) {
        let _ = cmdlog_engine::Event::decode(seq, &bytes);
        // Near misses of real records too.
        let mut record = br#"{"at":1,"type":"command/done","data":{"run":2,"outcome":{"kind":"success"},"elapsed_us":3}}"#.to_vec();
        if !bytes.is_empty() {
            let at = bytes[0] as usize % record.len();
            record[at] = bytes[bytes.len() - 1];
        }
        let _ = cmdlog_engine::Event::decode(seq, &record);
    }

    #[test]
    fn discovery_never_panics_on_any_file(markdown in "\\PC{0,200}", toml in "\\PC{0,200}", front in "(---\n)?[a-z:\\[\\]{}\" -]{0,60}\n(---\n)?") {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let claude = ws.path().join(".claude/commands");
        let gemini = ws.path().join(".gemini/commands");
        std::fs::create_dir_all(&claude).unwrap();
        std::fs::create_dir_all(&gemini).unwrap();
        std::fs::write(claude.join("a.md"), format!("{front}{markdown}")).unwrap();
        std::fs::write(gemini.join("b.toml"), &toml).unwrap();
        let native = ws.path().join(".cmdlog/commands");
        std::fs::create_dir_all(&native).unwrap();
        std::fs::write(native.join("c.md"), format!("{front}{markdown}")).unwrap();
        // Native frontmatter errors are errors, never panics; the others still load.
        let _ = cmdlog_engine::discovery::discover(&cmdlog_engine::discovery::DiscoveryConfig::new(home.path(), ws.path()));
        std::fs::remove_file(native.join("c.md")).unwrap();
        let found = cmdlog_engine::discovery::discover(&cmdlog_engine::discovery::DiscoveryConfig::new(home.path(), ws.path())).unwrap();
        prop_assert!(found.commands.iter().any(|c| c.origin.path.ends_with("a.md")), "a Claude file always loads");
    }
}
