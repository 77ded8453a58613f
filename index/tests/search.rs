//! The index finds what a log holds: words, phrases and each facet, nothing
//! else; it is kept current by syncing, equal to a rebuild, and refuses a
//! query it cannot read with where and why.

use cmdlog_index::{IndexError, QueryError, Refresh, SearchIndex, Span};
use cmdlog_store::{Log, LogConfig, NewRecord};
use serde_json::{Value, json};

fn event(session: &str, agent: &str, kind: &str, data: Value) -> NewRecord {
    NewRecord::new(
        json!({"at": 1_796_000_000_000u64, "type": kind, "session": session, "agent": agent, "data": data})
            .to_string()
            .into_bytes(),
    )
    .stream(session.to_string())
}

fn first_events() -> Vec<NewRecord> {
    vec![
        event(
            "s1",
            "claude-code",
            "session/prompt",
            json!({"text": "fix the migration in payments", "delivery": "idle"}),
        ),
        event(
            "s1",
            "claude-code",
            "session/update",
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "rm -rf /tmp/x", "tool_name": "Bash", "rawInput": {"command": "rm -rf /tmp/x"}, "status": "failed"}),
        ),
        event(
            "s1",
            "claude-code",
            "session/update",
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "the migration is done"}}),
        ),
        event(
            "s2",
            "codex",
            "session/update",
            json!({"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "Edit", "kind": "edit", "locations": [{"path": "src/payments/webhook.ts"}]}),
        ),
    ]
}

fn seqs(index: &SearchIndex, log: &Log, query: &str) -> Vec<u64> {
    let (hits, total) = index.search(log, query, 100).unwrap();
    assert_eq!(hits.len(), total, "{query}");
    let mut seqs: Vec<u64> = hits.iter().map(|h| h.seq).collect();
    seqs.sort();
    seqs
}

#[test]
fn each_field_finds_what_it_should_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    log.append(first_events()).unwrap();
    let index = SearchIndex::open(&dir.path().join("index")).unwrap();
    assert_eq!(index.sync(&log).unwrap(), (4, 4));

    assert_eq!(seqs(&index, &log, "migration"), [1, 3]);
    assert_eq!(seqs(&index, &log, "MIGRATION done"), [3]);
    assert_eq!(seqs(&index, &log, "\"migration in payments\""), [1]);
    assert_eq!(
        seqs(&index, &log, "\"payments migration\""),
        Vec::<u64>::new()
    );
    assert_eq!(seqs(&index, &log, "type:prompt"), [1]);
    assert_eq!(seqs(&index, &log, "type:reply migration"), [3]);
    assert_eq!(seqs(&index, &log, "type:tool"), [2, 4]);
    assert_eq!(seqs(&index, &log, "tool:bash"), [2]);
    assert_eq!(seqs(&index, &log, "status:error"), [2]);
    assert_eq!(seqs(&index, &log, "file:src/payments"), [4]);
    assert_eq!(seqs(&index, &log, "file:src/payments/webhook.ts"), [4]);
    assert_eq!(seqs(&index, &log, "file:src/pay"), Vec::<u64>::new());
    assert_eq!(seqs(&index, &log, "agent:codex"), [4]);
    assert_eq!(seqs(&index, &log, "session:s1 -migration"), [2]);
    assert_eq!(seqs(&index, &log, "\"rm -rf\""), [2]);

    // A hit names its event, and its snippet shows the match.
    let (hits, _) = index.search(&log, "done", 10).unwrap();
    let hit = &hits[0];
    assert_eq!(
        (hit.seq, hit.session.as_deref(), hit.kind.as_str()),
        (3, Some("s1"), "session/update")
    );
    let marked: Vec<&str> = hit
        .highlights
        .iter()
        .map(|r| &hit.snippet[r.clone()])
        .collect();
    assert_eq!(marked, ["done"], "{hit:?}");
}

#[test]
fn a_query_it_cannot_read_is_refused_with_where_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    log.append(first_events()).unwrap();
    let index = SearchIndex::open(&dir.path().join("index")).unwrap();
    index.sync(&log).unwrap();
    let refused = |q: &str| match index.search(&log, q, 10) {
        Err(IndexError::Query(e)) => e,
        other => panic!("{q}: {other:?}"),
    };
    assert!(matches!(refused("seq:1"), QueryError::UnknownField(f) if f == "seq"));
    assert!(matches!(refused("  "), QueryError::Empty));
    assert!(matches!(
        refused(&"x".repeat(2000)),
        QueryError::TooLong(2000)
    ));
    match refused("migration \"unclosed") {
        QueryError::Syntax { position, .. } => assert!(position >= 11, "{position}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn syncing_as_the_log_grows_equals_a_rebuild_and_another_log_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    let index_dir = dir.path().join("index");
    log.append(first_events()[..2].to_vec()).unwrap();
    let index = SearchIndex::open(&index_dir).unwrap();
    assert_eq!(index.sync(&log).unwrap(), (2, 2));
    log.append(first_events()[2..].to_vec()).unwrap();
    assert_eq!(index.sync(&log).unwrap(), (2, 4));
    assert_eq!(index.sync(&log).unwrap(), (0, 4));
    let incremental = seqs(&index, &log, "migration OR type:tool");
    assert_eq!(index.covered().unwrap().through, 4);
    drop(index);

    let rebuilt_dir = dir.path().join("rebuilt");
    let rebuilt = SearchIndex::open(&rebuilt_dir).unwrap();
    assert_eq!(rebuilt.rebuild(&log).unwrap(), (4, 4));
    // A rebuild starts from nothing: the same again, nothing twice.
    assert_eq!(rebuilt.rebuild(&log).unwrap(), (4, 4));
    assert!(rebuilt.check(&log).unwrap().exact());
    assert_eq!(seqs(&rebuilt, &log, "migration OR type:tool"), incremental);

    // The same index against a log that is not the one it covers.
    let other = Log::open(dir.path().join("other.redb"), LogConfig::default()).unwrap();
    other
        .append(vec![event(
            "s9",
            "codex",
            "session/prompt",
            json!({"text": "x", "delivery": "idle"}),
        )])
        .unwrap();
    other.append(first_events()).unwrap();
    assert!(matches!(
        SearchIndex::open(&index_dir).unwrap().sync(&other),
        Err(IndexError::Diverged { through: 4, .. })
    ));
}

#[test]
fn verify_names_what_the_index_misses_adds_or_has_not_reached() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    log.append(first_events()).unwrap();
    let index_dir = dir.path().join("index");
    let index = SearchIndex::open(&index_dir).unwrap();
    index.sync(&log).unwrap();
    let exact = index.check(&log).unwrap();
    assert!(exact.exact(), "{exact:?}");

    // The log grows: the index has not reached its head.
    log.append(vec![event(
        "s1",
        "claude-code",
        "session/prompt",
        json!({"text": "later", "delivery": "idle"}),
    )])
    .unwrap();
    let stale = index.check(&log).unwrap();
    assert_eq!((stale.through, stale.head, stale.exact()), (4, 5, false));
    index.sync(&log).unwrap();
    assert!(index.check(&log).unwrap().exact());

    // A document lost from the index, and one for a seq the log lacks, under
    // the same claim of what it covers.
    drop(index);
    let raw = tantivy::Index::open_in_dir(&index_dir).unwrap();
    for name in ["cmdlog_words", "cmdlog_exact"] {
        raw.tokenizers()
            .register(name, tantivy::tokenizer::RawTokenizer::default());
    }
    let payload = raw.load_metas().unwrap().payload;
    let seq = raw.schema().get_field("seq").unwrap();
    let mut writer: tantivy::IndexWriter = raw.writer_with_num_threads(1, 15_000_000).unwrap();
    writer.delete_term(tantivy::Term::from_field_u64(seq, 2));
    let mut forged = tantivy::TantivyDocument::new();
    forged.add_u64(seq, 99);
    writer.add_document(forged).unwrap();
    let mut prepared = writer.prepare_commit().unwrap();
    prepared.set_payload(&payload.unwrap());
    prepared.commit().unwrap();
    drop(writer);
    let damaged = SearchIndex::open(&index_dir).unwrap().check(&log).unwrap();
    assert_eq!(
        (damaged.missing.clone(), damaged.extra.clone()),
        (vec![2], vec![99]),
        "{damaged:?}"
    );
    assert!(!damaged.exact());

    // verify names both, with the seqs, and changes nothing.
    let found = cmdlog_index::verify_beside(&dir.path().join("log.redb"), &log)
        .unwrap()
        .unwrap();
    let said: Vec<_> = found
        .problems
        .iter()
        .map(|(seq, m)| (*seq, m.as_str()))
        .collect();
    assert_eq!(said.len(), 2, "{said:?}");
    assert_eq!(said[0].0, Some(2));
    assert!(
        said[0].1.contains("misses 1 event(s)") && said[0].1.contains("seq 2"),
        "{said:?}"
    );
    assert_eq!(said[1].0, Some(99));
    assert!(said[1].1.contains("seq 99"), "{said:?}");
    // A missing document is not damage tantivy can see; a rebuild mends it.
    SearchIndex::open(&index_dir)
        .unwrap()
        .rebuild(&log)
        .unwrap();
    let mended = cmdlog_index::verify_beside(&dir.path().join("log.redb"), &log)
        .unwrap()
        .unwrap();
    assert!(mended.problems.is_empty(), "{:?}", mended.problems);
}

#[test]
fn since_and_until_keep_to_when_events_were_appended() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    let at = |t: u64, text: &str| {
        NewRecord::new(
            json!({"at": t, "type": "session/prompt", "session": "s1", "data": {"text": text, "delivery": "idle"}})
                .to_string()
                .into_bytes(),
        )
        .stream("s1")
    };
    log.append(vec![
        at(1_000, "deploy one"),
        at(2_000, "deploy two"),
        at(3_000, "deploy three"),
    ])
    .unwrap();
    let index = SearchIndex::open(&dir.path().join("index")).unwrap();
    index.sync(&log).unwrap();
    let found = |span| {
        let (hits, _) = index.search_in(&log, "deploy", 10, span).unwrap();
        let mut seqs: Vec<u64> = hits.iter().map(|h| h.seq).collect();
        seqs.sort();
        seqs
    };
    let span = |since, until| Span { since, until };
    assert_eq!(found(span(Some(2_000), None)), [2, 3]);
    assert_eq!(found(span(None, Some(2_000))), [1]);
    assert_eq!(found(span(Some(1_500), Some(3_000))), [2]);
}

#[test]
fn a_value_kept_as_a_blob_is_found_by_its_words() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    let big = format!(
        "{} the needle sits here {}",
        "hay ".repeat(10_000),
        "hay ".repeat(10_000)
    );
    let hash = log.put_blob(big.into_bytes()).unwrap();
    log.append(vec![event(
        "s1",
        "qwen-code",
        "agent/event",
        json!({"agent": "qwen-code", "event": "tool output", "data": {"output": {"cmdlog": "value stored as a blob", "blob": hash.to_hex(), "bytes": 80_020}}}),
    )])
    .unwrap();
    let index = SearchIndex::open(&dir.path().join("index")).unwrap();
    index.sync(&log).unwrap();
    let (hits, _) = index.search(&log, "needle", 10).unwrap();
    assert_eq!(hits.len(), 1);
    let marked: Vec<&str> = hits[0]
        .highlights
        .iter()
        .map(|r| &hits[0].snippet[r.clone()])
        .collect();
    assert_eq!(marked, ["needle"]);
}

#[test]
fn sessions_count_their_matching_events_best_first() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    log.append(first_events()).unwrap();
    let index = SearchIndex::open(&dir.path().join("index")).unwrap();
    index.sync(&log).unwrap();
    let sessions = index
        .search_sessions(&log, "migration OR webhook", Span::default())
        .unwrap();
    let counts: Vec<(&str, u64)> = sessions
        .iter()
        .map(|s| (s.session.as_str(), s.count))
        .collect();
    assert_eq!(counts.len(), 2, "{counts:?}");
    assert!(
        counts.contains(&("s1", 2)) && counts.contains(&("s2", 1)),
        "{counts:?}"
    );
    assert!(sessions.iter().all(|s| {
        s.best
            .as_ref()
            .is_some_and(|b| b.session.as_deref() == Some(&s.session))
    }));
    assert!(
        index
            .search_sessions(&log, "nowhere", Span::default())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn the_index_beside_a_rewritten_log_is_made_again_and_a_writer_elsewhere_is_waited_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let log = Log::open(&path, LogConfig::default()).unwrap();
        log.append(first_events()).unwrap();
        let done = cmdlog_index::beside(&path, &log, Refresh::Sync).unwrap();
        assert_eq!(
            (done.added, done.through, done.busy, done.rebuilt),
            (4, 4, false, false)
        );
    }
    // The log is replaced by another with other records at the same seqs.
    std::fs::remove_file(&path).unwrap();
    let log = Log::open(&path, LogConfig::default()).unwrap();
    let mut other = first_events();
    other.swap(0, 3);
    log.append(other).unwrap();
    let done = cmdlog_index::beside(&path, &log, Refresh::Sync).unwrap();
    assert_eq!((done.added, done.through, done.rebuilt), (4, 4, true));
    assert_eq!(seqs(&done.index, &log, "agent:codex"), [1]);

    // Another process holds the writer: the index is searched as it stands.
    let held = tantivy::Index::open_in_dir(dir.path().join("index")).unwrap();
    let writer: tantivy::IndexWriter = held.writer_with_num_threads(1, 15_000_000).unwrap();
    log.append(first_events()[..1].to_vec()).unwrap();
    let done = cmdlog_index::beside(&path, &log, Refresh::Sync).unwrap();
    assert_eq!((done.added, done.through, done.busy), (0, 4, true));
    drop(writer);
    let done = cmdlog_index::beside(&path, &log, Refresh::Sync).unwrap();
    assert_eq!((done.added, done.through, done.busy), (1, 5, false));
}

/// A phrase finds exactly the events that hold its words one after the
/// other, whatever else the query says (beside another word, under `OR`, left
/// out, written with hyphens): checked against reading every text, on texts
/// of few words so that phrases and near misses are many, with words too long
/// to index between some (which break a phrase).
#[test]
fn a_phrase_finds_exactly_the_events_that_hold_it() {
    let seed = cmdlog_test_support::seed();
    println!("seed {seed} (CMDLOG_SEED={seed} to run it again)");
    let mut state = seed;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    const WORDS: [&str; 6] = ["alpha", "Beta", "gamma", "delta", "eps", "zeta"];
    let long = "x".repeat(300);
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path().join("log.redb"), LogConfig::default()).unwrap();
    // Each event's words as indexed: lowercased, None where one is too long.
    let mut texts: Vec<Vec<Option<String>>> = Vec::new();
    let mut records = Vec::new();
    for _ in 0..300 {
        let n = 2 + next(12) as usize;
        let words: Vec<Option<String>> = (0..n)
            .map(|_| match next(10) {
                0 => None,
                _ => Some(WORDS[next(WORDS.len() as u64) as usize].to_string()),
            })
            .collect();
        let shown: Vec<&str> = words
            .iter()
            .map(|w| w.as_deref().unwrap_or(long.as_str()))
            .collect();
        let sep = [" ", "-", ", ", "\n"][next(4) as usize];
        records.push(event(
            "s",
            "codex",
            "session/prompt",
            json!({"text": shown.join(sep)}),
        ));
        texts.push(
            words
                .into_iter()
                .map(|w| w.map(|w| w.to_lowercase()))
                .collect(),
        );
    }
    // Indexed in three commits: three segments, which a phrase is searched
    // across on several threads.
    let index = SearchIndex::open(&dir.path().join("index")).unwrap();
    let mut records = records.into_iter();
    for _ in 0..3 {
        log.append(records.by_ref().take(100).collect()).unwrap();
        index.sync(&log).unwrap();
    }
    let holds = |text: &[Option<String>], phrase: &[&str]| {
        text.windows(phrase.len()).any(|w| {
            w.iter()
                .zip(phrase)
                .all(|(a, b)| a.as_deref() == Some(&b.to_lowercase()))
        })
    };
    let expect = |keep: &dyn Fn(&[Option<String>]) -> bool| -> Vec<u64> {
        (1..=texts.len() as u64)
            .filter(|&seq| keep(&texts[seq as usize - 1]))
            .collect()
    };
    for round in 0..60 {
        let len = 2 + next(3) as usize;
        let phrase: Vec<&str> = (0..len)
            .map(|_| WORDS[next(WORDS.len() as u64) as usize])
            .collect();
        let other = WORDS[next(WORDS.len() as u64) as usize];
        let quoted = format!("\"{}\"", phrase.join(" "));
        let word = |t: &[Option<String>]| holds(t, &[other]);
        let cases: Vec<(String, Vec<u64>)> = vec![
            (quoted.clone(), expect(&|t| holds(t, &phrase))),
            (
                format!("{other} {quoted}"),
                expect(&|t| holds(t, &phrase) && word(t)),
            ),
            (
                format!("{quoted} OR {other}"),
                expect(&|t| holds(t, &phrase) || word(t)),
            ),
            (
                format!("{other} -{quoted}"),
                expect(&|t| !holds(t, &phrase) && word(t)),
            ),
            // Unquoted, joined by a hyphen: one literal of several words.
            (phrase.join("-"), expect(&|t| holds(t, &phrase))),
        ];
        for (query, expected) in cases {
            let (hits, total) = index.search(&log, &query, 1000).unwrap();
            let mut found: Vec<u64> = hits.iter().map(|h| h.seq).collect();
            found.sort();
            assert_eq!(total, found.len(), "{query}");
            assert_eq!(found, expected, "round {round}, seed {seed}: {query}");
        }
    }
}
