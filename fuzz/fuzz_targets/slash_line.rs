#![no_main]
//! A typed line never panics the slash-line parser, and a parsed name is valid.
libfuzzer_sys::fuzz_target!(|line: &str| {
    if let Some(parsed) = cmdlog_engine::parse::parse_line(line) {
        assert!(cmdlog_engine::CommandName::new(parsed.name.as_str()).is_ok());
        assert!(line.ends_with(&parsed.raw_input));
    }
});
