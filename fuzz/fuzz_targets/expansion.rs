#![no_main]
//! Template expansion never panics, in either dialect.
libfuzzer_sys::fuzz_target!(|data: (&str, &str)| {
    let (template, input) = data;
    let _ = cmdlog_engine::expand(template, cmdlog_engine::Dialect::Markdown, input);
    let _ = cmdlog_engine::expand(template, cmdlog_engine::Dialect::Gemini, input);
});
