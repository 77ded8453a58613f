#![no_main]
//! Frontmatter parsing never panics; an error names a line inside the file, counting
//! line breaks as YAML does (`\n`, `\r\n` and a lone `\r`).
libfuzzer_sys::fuzz_target!(|text: &str| {
    if let Err(cmdlog_engine::discovery::FrontmatterError { line, .. }) = cmdlog_engine::discovery::parse_frontmatter(text) {
        let bytes = text.as_bytes();
        let breaks = (0..bytes.len())
            .filter(|&i| bytes[i] == b'\n' || (bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n')))
            .count();
        assert!(line >= 1 && line <= breaks + 2, "line {line} of a text with {breaks} line breaks");
    }
});
