//! A turn that says more than one reply. Codex 0.171 goes on with a turn when a
//! sub-agent's notification comes in after its model answered: the turn then
//! says a second reply, and its `Stop` hook fires with whichever reply the turn
//! had then — the first, the second, or each in turn. The rollout holds both.
//! An import into the hooks' log joins each reply to the hooks' by its text and
//! adds the one no hook saw; it never states a reply twice
//! (tests/agents-real/interactive-codex.test.mjs showed each of these orders).

use serde_json::{Value, json};

use super::{codex_rollout, events, hook};
use cmdlog_test_support::Workspace;

const FIRST: &str = "tool said: {\"agent_id\":\"a1\",\"nickname\":\"Godel\"}";
const SECOND: &str = "reply to: the sub-agent is done";

/// (source, text) of each reply.
type Said = Vec<(String, String)>;

/// The session's replies as the log says them: (source, text) of each reply
/// event, and (source, text of the reply it names) of each `agent/observed`
/// of one.
fn replies(all: &[Value], session: &str) -> (Said, Said) {
    let by_seq = |seq: &Value| all.iter().find(|e| e["seq"] == *seq).unwrap();
    let source = |e: &Value| e["observed"]["source"].as_str().unwrap_or("").to_string();
    let mut stated = Vec::new();
    let mut observed = Vec::new();
    for e in all.iter().filter(|e| e["session"] == session) {
        if e["data"]["sessionUpdate"] == "agent_message_chunk" {
            let text = e["data"]["content"]["text"].as_str().unwrap();
            stated.push((source(e), text.to_string()));
        } else if e["type"] == "agent/observed"
            && e["data"]["fact"].as_str().unwrap().starts_with("reply:")
        {
            let of = by_seq(&e["data"]["of"]);
            let text = of["data"]["content"]["text"].as_str().unwrap();
            observed.push((source(e), text.to_string()));
        }
    }
    (stated, observed)
}

#[test]
fn each_reply_of_a_turn_is_joined_by_its_text_whichever_the_hooks_saw() {
    let hooks = |s: &str| (String::from("codex hook"), s.to_string());
    let rollout = |s: &str| (String::from("codex transcript"), s.to_string());
    for (stops, added, joined) in [
        // The Stop fired on the first reply; the second no hook saw.
        (vec![FIRST], vec![rollout(SECOND)], vec![rollout(FIRST)]),
        // The Stop fired once the turn was over.
        (vec![SECOND], vec![rollout(FIRST)], vec![rollout(SECOND)]),
        // It fired on each.
        (
            vec![FIRST, SECOND],
            vec![],
            vec![rollout(FIRST), rollout(SECOND)],
        ),
    ] {
        let w = Workspace::new();
        let sid = "01a2b3c4-0000-7000-8000-00000000a2a2";
        let p = |name: &str, rest: Value| {
            let mut base = json!({"session_id": sid, "cwd": w.ws.path(), "hook_event_name": name,
                "permission_mode": "default", "model": "m1", "turn_id": "t1"});
            for (k, x) in rest.as_object().unwrap() {
                base[k] = x.clone();
            }
            base
        };
        let mut payloads = vec![p("UserPromptSubmit", json!({"prompt": "delegate"}))];
        for reply in &stops {
            payloads.push(p("Stop", json!({"last_assistant_message": reply})));
        }
        for payload in payloads {
            assert!(hook(&w, "codex", &payload).status.success());
        }
        let head = events(&w).last().unwrap()["seq"].as_u64().unwrap();

        let line = |ts: &str, payload: Value| {
            json!({"timestamp": format!("2026-12-07T04:22:{ts}Z"), "type": "event_msg", "payload": payload})
                .to_string()
        };
        let item = |id: &str, kind: &str, text: &str| {
            line(
                id,
                json!({"type": "item_completed", "thread_id": sid, "turn_id": "t1",
                "item": {"type": kind, "id": format!("i-{id}"), "content": [{"type": "Text", "text": text}]}}),
            )
        };
        let lines = [
            json!({"timestamp": "2026-12-07T04:22:17.000Z", "type": "session_meta",
                "payload": {"id": sid, "source": "vscode", "originator": "codex-tui"}})
            .to_string(),
            item("17.200", "UserMessage", "delegate"),
            item("17.300", "AgentMessage", FIRST),
            item("17.500", "AgentMessage", SECOND),
            line(
                "17.600",
                json!({"type": "task_complete", "turn_id": "t1", "last_agent_message": SECOND}),
            ),
        ];
        codex_rollout(&w, sid, &lines);
        w.ok(&["import", "--from", "codex"]);

        let all = events(&w);
        let (stated, observed) = replies(&all, sid);
        let mut expected: Vec<_> = stops.iter().map(|s| hooks(s)).collect();
        expected.extend(added.clone());
        assert_eq!(
            stated, expected,
            "the replies stated, with the Stops {stops:?}"
        );
        assert_eq!(
            observed, joined,
            "the rollout's replies joined to the hooks', with the Stops {stops:?}"
        );
        let differs = all
            .iter()
            .filter(|e| e["seq"].as_u64().unwrap() > head && e["type"] == "agent/observed")
            .filter(|e| e["data"]["differs"].is_object())
            .count();
        assert_eq!(differs, 0, "no reply is said differently: {all:#?}");
        let verify = w.run(&["verify"]);
        assert!(
            verify.status.success(),
            "verify, with the Stops {stops:?}: {}",
            String::from_utf8_lossy(&verify.stdout)
        );
    }
}
