//! The generated log the benches of what an auditor reads share (`search`,
//! `workbench`): realistic agent sessions — a prompt of 10–30 words, three
//! shell tool calls naming a file, three tool outputs of 20–60 lines (1–5 KB,
//! one in ten failed), a reply, 40 events a session — their words drawn by
//! Zipf's law over a vocabulary of 5,000, as natural text draws them.
//! Deterministic: every run sees the same log.

#![allow(dead_code)]

use cmdlog_store::{Durability, Log, LogConfig, NewRecord};
use serde_json::json;

pub(crate) fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small deterministic generator (xorshift), so every run sees the same log.
pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(crate) fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
    /// `n` words drawn as natural text draws them: by Zipf's law over
    /// [`Vocabulary`] (the word of rank r with weight 1/r).
    pub(crate) fn words(&mut self, n: usize) -> String {
        let vocabulary = vocabulary();
        (0..n)
            .map(|_| {
                let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64 * vocabulary.total;
                let rank = vocabulary.cumulative.partition_point(|&c| c < u);
                vocabulary.words[rank.min(vocabulary.words.len() - 1)].as_str()
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The words of the generated text by rank, and their cumulative Zipf
/// weights: the domain's words (`WORDS`) spread among 5,000 made-up ones,
/// `the` first, `migration` next, then one domain word every 40 ranks.
struct Vocabulary {
    words: Vec<String>,
    cumulative: Vec<f64>,
    total: f64,
}

fn vocabulary() -> &'static Vocabulary {
    static V: std::sync::OnceLock<Vocabulary> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        const SYLLABLES: [&str; 10] = [
            "ka", "lo", "mi", "ter", "san", "do", "ri", "vel", "pon", "gu",
        ];
        let mut domain = WORDS.iter();
        let words: Vec<String> = (1..=5000usize)
            .map(|rank| {
                let word = (rank == 1 || rank == 2 || rank % 40 == 0)
                    .then(|| domain.next())
                    .flatten();
                word.map(|w| w.to_string()).unwrap_or_else(|| {
                    rank.to_string()
                        .bytes()
                        .map(|d| SYLLABLES[(d - b'0') as usize])
                        .collect()
                })
            })
            .collect();
        let mut total = 0.0;
        let cumulative = (1..=words.len())
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        Vocabulary {
            words,
            cumulative,
            total,
        }
    })
}

const WORDS: &[&str] = &[
    "the",
    "migration",
    "payments",
    "webhook",
    "retry",
    "handler",
    "schema",
    "database",
    "test",
    "failing",
    "refactor",
    "module",
    "error",
    "timeout",
    "request",
    "response",
    "config",
    "build",
    "deploy",
    "cache",
    "user",
    "session",
    "token",
    "parser",
    "fix",
    "add",
    "remove",
    "update",
    "function",
    "struct",
    "async",
    "await",
    "queue",
    "worker",
    "index",
    "query",
    "latency",
    "log",
    "review",
    "plan",
    "explain",
    "coverage",
    "benchmark",
    "release",
    "version",
    "branch",
    "merge",
    "conflict",
    "lint",
    "format",
    "warning",
    "panic",
    "unwrap",
    "option",
    "result",
    "trait",
    "impl",
];
const FILES: &[&str] = &[
    "src/payments/webhook.ts",
    "src/payments/retry.ts",
    "src/db/migrations/0042_add_index.sql",
    "server/src/handler.rs",
    "lib/cache/store.go",
    "tests/e2e/checkout.spec.ts",
    "README.md",
    "docs/architecture.md",
    "Cargo.toml",
    "package.json",
];
const COMMANDS: &[&str] = &[
    "cargo test --workspace",
    "npm run build",
    "git status",
    "rg -n TODO src",
    "ls -la",
    "rm -rf target/tmp",
    "python3 -m pytest -q",
    "go test ./...",
    "make lint",
    "cat Cargo.toml",
];

/// Writes `events` events to `dir/log.redb`: sessions of a prompt, a few tool
/// calls with their outputs, a reply.
pub(crate) fn build_log(dir: &std::path::Path, events: usize) -> Log {
    let config = LogConfig {
        durability: Durability::Buffered,
        ..LogConfig::default()
    };
    let log = Log::open(dir.join("log.redb"), config).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut batch = Vec::with_capacity(1000);
    let mut n = 0usize;
    let mut at = 1_790_000_000_000u64;
    while n < events {
        let session = format!("s-{:06}", n / 40);
        let agent = rng.pick(&["claude-code", "codex", "gemini", "qwen-code"]);
        at += 1000;
        let record = |kind: &str, data: serde_json::Value| {
            NewRecord::new(
                json!({"at": at, "type": kind, "session": session, "agent": agent, "data": data})
                    .to_string()
                    .into_bytes(),
            )
            .stream(session.clone())
        };
        let words = 10 + (rng.next() % 20) as usize;
        let r = match n % 8 {
            0 => record(
                "session/prompt",
                json!({"text": rng.words(words), "delivery": "idle"}),
            ),
            1 | 3 | 5 => record(
                "session/update",
                json!({
                    "sessionUpdate": "tool_call", "toolCallId": format!("c{n}"), "title": "Bash",
                    "tool_name": "Bash", "kind": "execute", "status": "pending",
                    "rawInput": {"command": rng.pick(COMMANDS)},
                    "locations": [{"path": rng.pick(FILES)}],
                }),
            ),
            2 | 4 | 6 => {
                let lines = 20 + (rng.next() % 40) as usize;
                let output: String = (0..lines)
                    .map(|_| format!("{}: {}\n", rng.pick(FILES), rng.words(8)))
                    .collect();
                let status = if rng.next().is_multiple_of(10) {
                    "failed"
                } else {
                    "completed"
                };
                record(
                    "session/update",
                    json!({
                        "sessionUpdate": "tool_call_update", "toolCallId": format!("c{}", n - 1),
                        "status": status, "rawOutput": {"output": output},
                    }),
                )
            }
            _ => record(
                "session/update",
                json!({
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": rng.words(words * 2)},
                }),
            ),
        };
        batch.push(r);
        n += 1;
        if batch.len() == 1000 {
            log.append(std::mem::take(&mut batch)).unwrap();
        }
    }
    if !batch.is_empty() {
        log.append(batch).unwrap();
    }
    log
}

/// The generated log of `events` events: in a temporary folder (returned, to
/// keep it alive), or, with `CMDLOG_SEARCH_DIR`, in `DIR/<events>/` — made
/// once and reused by the next run of the same size (a 1,000,000-event log
/// takes minutes to make).
pub(crate) fn open_or_build(events: usize) -> (Option<tempfile::TempDir>, std::path::PathBuf, Log) {
    let (tmp, dir) = match std::env::var_os("CMDLOG_SEARCH_DIR") {
        Some(d) => (None, std::path::PathBuf::from(d).join(events.to_string())),
        None => {
            let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            let dir = tmp.path().to_path_buf();
            (Some(tmp), dir)
        }
    };
    std::fs::create_dir_all(&dir).unwrap();
    let log = if dir.join("log.redb").exists() {
        Log::open(dir.join("log.redb"), LogConfig::default()).unwrap()
    } else {
        build_log(&dir, events)
    };
    assert_eq!(
        log.head().seq as usize,
        events,
        "{} holds another log",
        dir.display()
    );
    (tmp, dir, log)
}
