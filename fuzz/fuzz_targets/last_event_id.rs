#![no_main]
//! The SSE Last-Event-ID parser never panics and accepts only plain decimal seqs.
libfuzzer_sys::fuzz_target!(|data: (&str, &str)| {
    let (header, query) = data;
    match cmdlog_server::parse_last_event_id(Some(header), Some(query)) {
        Ok(cmdlog_server::Resume::After(n)) => assert_eq!(header.trim().parse::<u64>().ok(), Some(n)),
        Ok(cmdlog_server::Resume::Live) => assert!(header.trim().is_empty()),
        Err(_) => {}
    }
});
