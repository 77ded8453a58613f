#![no_main]
//! Argument splitting never panics and never invents characters.
libfuzzer_sys::fuzz_target!(|input: &str| {
    for arg in cmdlog_engine::parse::parse_command_args(input) {
        assert!(arg.chars().all(|c| input.contains(c)));
    }
});
