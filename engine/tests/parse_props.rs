//! Properties of the parsers: they never panic, and quoted tokens round-trip.
//! proptest prints the failing input and its seed; set PROPTEST_CASES for more cases.

use cmdlog_engine::{Dialect, expand, parse_command_args, parse_line};
use proptest::prelude::*;

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
        let _ = expand(&input, Dialect::Markdown, &any_text);
        let _ = expand(&any_text, Dialect::Gemini, &input);
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
    fn raw_input_is_exactly_what_follows_the_name(name in "[a-z][a-z0-9:-]{0,20}", rest in "(\\s[^\\n]{0,40})?") {
        let parsed = parse_line(&format!("/{name}{rest}")).expect("a valid line parses");
        prop_assert_eq!(parsed.name.as_str(), name.as_str());
        prop_assert_eq!(parsed.raw_input, rest);
    }

    #[test]
    fn expansion_never_rescans_arguments(arg in "[$@{}A-Za-z0-9:]{0,16}") {
        // Whatever an argument holds, it lands verbatim: placeholders in it stay text.
        prop_assert_eq!(expand("<$1>", Dialect::Markdown, &format!("'{arg}'")), format!("<{arg}>"));
    }
}
