#![no_main]
//! Any bytes decode to an event or an error naming the seq, and a decoded event
//! encodes back to a record that decodes to the same event.
libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    match cmdlog_engine::Event::decode(7, bytes) {
        Ok(event) => {
            let again = cmdlog_engine::event::NewEvent { at: event.at, observed: event.observed.clone(), session: event.session.clone(), agent: event.agent.clone(), data: event.data.clone() };
            let decoded = cmdlog_engine::Event::decode(7, &again.encode()).expect("our own encoding decodes");
            assert_eq!(decoded.data.type_name(), event.data.type_name());
        }
        Err(e) => assert_eq!(e.seq, 7),
    }
});
