#![no_main]
//! Template expansion never panics, in any dialect, with any input and named
//! arguments.
use std::collections::BTreeMap;

use cmdlog_engine::Dialect;
use cmdlog_engine::expand::{ExpandInput, expand};

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

libfuzzer_sys::fuzz_target!(|data: (&str, &str, &str)| {
    let (template, input, name) = data;
    let names = vec![name.to_string(), "arg".to_string()];
    let variables = BTreeMap::from([("CLAUDE_PLUGIN_ROOT".to_string(), name.to_string())]);
    // The current rules, and an older release's where they differ.
    let releases = [None, cmdlog_engine::expand::parse_version("2.1.197")];
    for dialect in DIALECTS {
        for release in releases {
            let input = ExpandInput {
                name: "x",
                raw_input: input,
                arguments: &names,
                variables: &variables,
                release,
            };
            let _ = expand(template, dialect, &input);
        }
        let _ = cmdlog_engine::expand::injections(template, dialect);
    }
});
