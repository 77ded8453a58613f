//! Every read verb while `cmdlog serve` holds the log (issue 39): the holder
//! answers the reads of other cmdlog processes, and each verb prints what it
//! prints once the holder has stopped.

use cmdlog_test_support::Workspace;

/// The verbs compared, with their arguments; `SESSION` is replaced by a
/// session of the log.
const VERBS: &[&[&str]] = &[
    &["log"],
    &["log", "--json", "--all"],
    &["log", "--session", "SESSION"],
    &["sessions"],
    &["sessions", "--json"],
    &["audit"],
    &["audit", "--json"],
    &["show", "3"],
    &["replay", "--session", "SESSION"],
    &["verify"],
    &["verify", "--json"],
    &["export"],
    &["report", "--session", "SESSION", "-o", "-"],
    &["drift"],
    &["key"],
    &["prove", "3"],
    &["checkpoint"],
    &["hooks", "status"],
];

fn outputs(w: &Workspace, session: &str) -> Vec<(String, i32, String)> {
    VERBS
        .iter()
        .map(|verb| {
            let args: Vec<&str> = verb
                .iter()
                .map(|a| if *a == "SESSION" { session } else { a })
                .collect();
            let o = w.run(&args);
            (
                args.join(" "),
                o.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&o.stdout).into_owned(),
            )
        })
        .collect()
}

#[test]
fn every_read_verb_answers_the_same_while_serve_holds_the_log() {
    let w = Workspace::new();
    for line in ["/help", "/help", "/help"] {
        w.ok(&["run", line]);
    }
    let sessions: serde_json::Value = serde_json::from_str(&w.ok(&["sessions", "--json"])).unwrap();
    let session = sessions[0]["id"].as_str().unwrap().to_string();
    let daemon = w.serve(&[]);
    let held = outputs(&w, &session);
    drop(daemon);
    let after = outputs(&w, &session);
    for ((verb, code, out), (_, code_after, out_after)) in held.iter().zip(&after) {
        assert_eq!(
            (code, out),
            (code_after, out_after),
            "`cmdlog {verb}` while serve held the log, then after it stopped"
        );
        assert_eq!(*code, 0, "`cmdlog {verb}`: {out}");
    }
}

#[test]
fn a_read_while_held_never_writes_and_names_what_it_cannot_do() {
    let w = Workspace::new();
    w.ok(&["run", "/help"]);
    let _daemon = w.serve(&[]);
    // Appends are refused while held, with the daemon named, never half done.
    let o = w.run(&["gc"]);
    assert_ne!(o.status.code(), Some(0));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("held by cmdlog serve"), "{said}");
}
