#![no_main]
//! Frontmatter parsing never panics; an error names a line inside the file.
libfuzzer_sys::fuzz_target!(|text: &str| {
    if let Err((line, _)) = cmdlog_engine::parse_frontmatter(text) {
        assert!(line >= 1 && line <= text.lines().count().max(1) + 1);
    }
});
