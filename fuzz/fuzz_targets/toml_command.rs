#![no_main]
//! Gemini/Qwen TOML command parsing never panics.
libfuzzer_sys::fuzz_target!(|text: &str| {
    let _ = cmdlog_engine::discovery::parse_toml_command(text);
});
