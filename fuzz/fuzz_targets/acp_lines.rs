#![no_main]
//! Any bytes from an ACP peer are read as lines without a panic (an oversized line
//! measured, the rest kept), and each line that is JSON is classified and its
//! payload checks answer without a panic.
use cmdlog_acp::{Line, LineReader, check_content_block, check_permission_options, check_session_update, kind, permission_decision};

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let mut lines = LineReader::new(bytes, 256);
        let mut total = 0u64;
        while let Some(line) = lines.next().await {
            match line.unwrap() {
                Line::Text(text) => {
                    total += text.len() as u64;
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                        let _ = kind(&v);
                        let _ = check_session_update(&v["params"]["update"]);
                        let _ = check_content_block(&v);
                        let _ = check_permission_options(&v["params"]["options"]);
                        let _ = permission_decision(&v["result"]);
                    }
                }
                Line::Oversized { bytes: n, .. } => {
                    assert!(n > 256);
                    total += n;
                }
            }
        }
        // Bytes that are not UTF-8 are read lossily: each becomes U+FFFD, three
        // bytes of text.
        assert!(total <= 3 * bytes.len() as u64);
    });
});
