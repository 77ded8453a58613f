//! Discovery over fixture trees: a temp HOME and workspace holding files of every
//! provider, collisions inside and across providers, hidden and ignored files, and
//! bad frontmatter; checked against expected listings and expansions
//! (`UPDATE_EXPECT=1 cargo test` rewrites the expectations).

use cmdlog_engine::discovery::*;
use cmdlog_engine::*;
use cmdlog_test_support::tree::{Tree, engine_at, expand_line, rt};
use expect_test::{Expect, expect};

fn every_provider() -> Tree {
    let t = Tree::new();
    t.write("ws/.cmdlog/commands/deploy.md", "---\ndescription: Deploy a service\nargument-hint: <service> [env]\n---\nDeploy $1 to ${@:2}.\n")
        .write("~/.cmdlog/commands/deploy.md", "User-level deploy, shadowed by the project one\n")
        // Claude: user before project inside the provider.
        .write("~/.claude/commands/review.md", "---\ndescription: Review (user)\nwhen_to_use: after edits\n---\nReview $ARGUMENTS as the user likes it.\n")
        .write("ws/.claude/commands/review.md", "---\ndescription: Review (project)\n---\nProject review of $ARGUMENTS\n")
        .write("ws/.claude/commands/broken.md", "---\ndescription: \"Broken: [yaml\nargument-hint: <x>\n---\nStill works with $0\n")
        // Claude Code reads hidden and git-ignored files, and sub-folders as namespaces.
        .write("ws/.claude/commands/private.md", "git-ignored, still read\n")
        .write("ws/.gitignore", ".claude/commands/private.md\n")
        .write("ws/.claude/commands/.hidden.md", "hidden\n")
        .write("ws/.claude/commands/notes.txt", "not markdown\n")
        .write("ws/.claude/commands/sub/nested.md", "a namespaced command\n")
        .write("ws/.claude/commands/Bad Name.md", "invalid name\n")
        .write("ws/.claude/commands/quiet.md", "---\ndisable-model-invocation: true\nallowed-tools: Read, Grep\nmodel: haiku\n---\nA very long first line that goes on well past the sixty character limit for descriptions\n")
        // Claude plugins: registered before codex at the same priority.
        .write(
            "~/.claude/plugins/installed_plugins.json",
            r#"{"version":2,"plugins":{"tools@market":[{"installPath":"~/plugins/tools"}]}}"#,
        )
        .write("~/plugins/tools/commands/lint.md", "---\ndescription: Lint (plugin)\n---\nLint $ARGUMENTS\n")
        .write("~/plugins/tools/commands/review.md", "Plugin review\n")
        // Not a Codex folder: never read.
        .write("~/.codex/commands/lint.md", "Lint (codex) $1\n")
        .write("~/.codex/prompts/draft.md", "---\nname: draft-pr\ndescription: Draft a PR\n---\nDraft a PR for $ARGUMENTS\n")
        // Gemini / Qwen TOML, recursive, dir:name.
        .write("ws/.gemini/commands/git/commit.toml", "description = \"Commit\"\nprompt = \"\"\"Write a commit message for: {{args}}\"\"\"\n")
        .write("~/.qwen/commands/summarize.toml", "prompt = \"Summarize the discussion.\"\n")
        .write("~/.gemini/commands/bad.toml", "prompt = \"unclosed\n")
        .write("~/.gemini/commands/inject.toml", "prompt = \"Files: @{src/main.rs} and !{ls}\"\n")
        // OpenCode.
        .write("ws/.opencode/command/test.md", "Run the tests for $1\n");
    t
}

fn listing(t: &Tree, discovery: &Discovery) -> String {
    let mut out = String::new();
    for d in &discovery.commands {
        let c = &d.command;
        let modes: Vec<&str> = c.effective_modes().iter().map(|m| m.as_str()).collect();
        out.push_str(&format!(
            "/{} {}@{}[{}] {:?} {:?} {} model_invocable={} hint={:?} {}\n",
            c.name,
            d.provider.id,
            d.provider.priority,
            d.provider.level,
            c.source_label,
            c.description,
            modes.join(","),
            c.model_invocable,
            c.argument_hint.as_deref().unwrap_or(""),
            t.shorten(&d.origin.path),
        ));
    }
    for w in &discovery.warnings {
        out.push_str(&format!(
            "warning {} {}: {}\n",
            w.provider,
            t.shorten(&w.path),
            w.message
        ));
    }
    out
}

#[test]
fn every_provider_with_its_rules() {
    let t = every_provider();
    let discovery = discover(&t.config()).unwrap();
    let check = |e: Expect| e.assert_eq(&listing(&t, &discovery));
    check(expect![[r#"
        /deploy native@100[project] "Custom" "Deploy a service" interactive,non_interactive,acp model_invocable=true hint="<service> [env]" ws/.cmdlog/commands/deploy.md
        /deploy native@100[user] "Custom" "User-level deploy, shadowed by the project one" interactive,non_interactive,acp model_invocable=true hint="" ~/.cmdlog/commands/deploy.md
        /review claude@80[user] "Custom" "Review (user)" interactive,non_interactive,acp model_invocable=true hint="" ~/.claude/commands/review.md
        /.hidden claude@80[project] "Custom" "hidden" interactive,non_interactive,acp model_invocable=true hint="" ws/.claude/commands/.hidden.md
        /broken claude@80[project] "Custom" "\"Broken: [yaml" interactive,non_interactive,acp model_invocable=true hint="<x>" ws/.claude/commands/broken.md
        /private claude@80[project] "Custom" "git-ignored, still read" interactive,non_interactive,acp model_invocable=true hint="" ws/.claude/commands/private.md
        /quiet claude@80[project] "Custom" "A very long first line that goes on well past the sixty character limit for descriptions" interactive,non_interactive,acp model_invocable=false hint="" ws/.claude/commands/quiet.md
        /review claude@80[project] "Custom" "Review (project)" interactive,non_interactive,acp model_invocable=true hint="" ws/.claude/commands/review.md
        /sub:nested claude@80[project] "Custom" "a namespaced command" interactive,non_interactive,acp model_invocable=true hint="" ws/.claude/commands/sub/nested.md
        /tools:lint claude-plugins@70[plugin] "Plugin: tools" "Lint (plugin)" interactive,non_interactive,acp model_invocable=true hint="" ~/plugins/tools/commands/lint.md
        /tools:review claude-plugins@70[plugin] "Plugin: tools" "Plugin review" interactive,non_interactive,acp model_invocable=false hint="" ~/plugins/tools/commands/review.md
        /prompts:draft codex@70[user] "Prompt" "Draft a PR" interactive,non_interactive,acp model_invocable=false hint="" ~/.codex/prompts/draft.md
        /git:commit gemini@60[project] "Custom" "Commit" interactive,non_interactive,acp model_invocable=false hint="" ws/.gemini/commands/git/commit.toml
        /inject gemini@60[user] "Custom" "Custom command from inject.toml" interactive,non_interactive,acp model_invocable=false hint="" ~/.gemini/commands/inject.toml
        /summarize qwen@60[user] "Custom" "Custom command from summarize.toml" interactive,non_interactive,acp model_invocable=true hint="" ~/.qwen/commands/summarize.toml
        /test opencode@55[project] "Custom" "" interactive,non_interactive,acp model_invocable=false hint="" ws/.opencode/command/test.md
        /review bundled@-1000[bundled] "Skill" "Review code changes for bugs, risks and missing tests" interactive,non_interactive,acp model_invocable=true hint="[path or ref]" bundled:review
        /explain bundled@-1000[bundled] "Skill" "Explain how a piece of code works" interactive,non_interactive,acp model_invocable=true hint="<path or symbol>" bundled:explain
        /commit-message bundled@-1000[bundled] "Skill" "Write a commit message for the staged changes" interactive,non_interactive,acp model_invocable=true hint="[context]" bundled:commit-message
        /fix-tests bundled@-1000[bundled] "Skill" "Find and fix the cause of failing tests" interactive,non_interactive,acp model_invocable=true hint="[test name or command]" bundled:fix-tests
        warning claude ws/.claude/commands/Bad Name.md: invalid command name "bad name": only a-z, 0-9, '_', '.', ':', '/' and '-' are allowed; rename the file (or its `name`) to use it
        warning claude ws/.claude/commands/broken.md: line 2: invalid frontmatter (unclosed quote); read it as `key: value` lines instead, as Claude Code loads such a file with what it can read
        warning gemini ~/.gemini/commands/bad.toml: line 1: invalid TOML (invalid basic string, expected `"`); skipped
    "#]]);
}

#[test]
fn resolution_and_expansion_match_the_agents() {
    let t = every_provider();
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let engine = engine_at(dir.path()).await;
        engine.sync(&discover(&t.config()).unwrap()).await.unwrap();
        let winners: Vec<String> = engine
            .list("main", Mode::NonInteractive)
            .iter()
            .map(|r| {
                format!(
                    "/{} <- {} {}",
                    r.command.name,
                    r.provider.id,
                    t.shorten(
                        &r.origin
                            .as_ref()
                            .map(|o| o.path.clone())
                            .unwrap_or_default()
                    )
                )
            })
            .collect();
        expect![[r#"
            /.hidden <- claude ws/.claude/commands/.hidden.md
            /broken <- claude ws/.claude/commands/broken.md
            /commit-message <- bundled bundled:commit-message
            /deploy <- native ws/.cmdlog/commands/deploy.md
            /explain <- bundled bundled:explain
            /fix-tests <- bundled bundled:fix-tests
            /git:commit <- gemini ws/.gemini/commands/git/commit.toml
            /help <- builtin 
            /inject <- gemini ~/.gemini/commands/inject.toml
            /model <- builtin 
            /private <- claude ws/.claude/commands/private.md
            /prompts:draft <- codex ~/.codex/prompts/draft.md
            /quiet <- claude ws/.claude/commands/quiet.md
            /review <- claude ~/.claude/commands/review.md
            /sub:nested <- claude ws/.claude/commands/sub/nested.md
            /summarize <- qwen ~/.qwen/commands/summarize.toml
            /test <- opencode ws/.opencode/command/test.md
            /tools:lint <- claude-plugins ~/plugins/tools/commands/lint.md
            /tools:review <- claude-plugins ~/plugins/tools/commands/review.md"#]]
        .assert_eq(&winners.join("\n"));

        let mut out = String::new();
        for line in [
            "/deploy api prod eu",
            "/review src/lib.rs",
            "/broken 'a b' c",
            "/tools:lint --fix",
            "/prompts:draft 42",
            "/git:commit  fix the \"parser\" ",
            "/summarize",
            "/summarize in French",
            "/inject",
            "/test unit",
            "/explain engine.rs",
        ] {
            out.push_str(&format!(
                "{line}\n=> {}\n",
                expand_line(&engine, line).await
            ));
        }
        expect![[r#"
            /deploy api prod eu
            => Deploy api to prod eu.
            /review src/lib.rs
            => Review src/lib.rs as the user likes it.

            /broken 'a b' c
            => Still works with a b

            /tools:lint --fix
            => Lint --fix

            /prompts:draft 42
            => Draft a PR for 42

            /git:commit  fix the "parser" 
            => Write a commit message for: fix the "parser"
            /summarize
            => Summarize the discussion.
            /summarize in French
            => Summarize the discussion.

            /summarize in French
            /inject
            => Files: @{src/main.rs} and !{ls}
            /test unit
            => Run the tests for unit
            /explain engine.rs
            => Explain how engine.rs works.
            Start with its purpose in one paragraph, then walk through the control flow and the
            data it touches, then list the invariants it relies on and where they are enforced.
            Quote the lines you refer to with their file and line numbers.
        "#]]
        .assert_eq(&out);

        let mi: Vec<String> = engine
            .model_invocable("main")
            .iter()
            .map(|r| r.command.name.to_string())
            .collect();
        assert!(
            mi.contains(&"tools:lint".to_string()) && !mi.contains(&"tools:review".to_string()),
            "plugin commands are model-invocable with a description of their own"
        );
        assert!(
            !mi.contains(&"prompts:draft".to_string()) && !mi.contains(&"test".to_string()),
            "Codex and OpenCode commands are never model-invocable"
        );
        assert!(
            !mi.contains(&"quiet".to_string()),
            "disable-model-invocation"
        );
        assert!(mi.contains(&"review".to_string()));
        let quiet = engine.find("main", Mode::Acp, "quiet").unwrap();
        assert_eq!(quiet.command.model.as_deref(), Some("haiku"));
        assert_eq!(quiet.command.allowed_tools, vec!["Read", "Grep"]);
    });
}

#[test]
fn native_frontmatter_errors_are_fatal_with_path_and_line() {
    let t = Tree::new();
    t.write("ws/.cmdlog/commands/ok.md", "fine\n").write(
        "ws/.cmdlog/commands/bad.md",
        "---\ndescription: fine\ntags: [unclosed\n---\nbody\n",
    );
    let err = discover(&t.config()).unwrap_err();
    assert!(err.path.ends_with(".cmdlog/commands/bad.md"), "{err}");
    assert_eq!(err.line, 3, "{err}");
    assert!(
        err.to_string().contains("bad.md:3: invalid frontmatter"),
        "{err}"
    );

    // The same file as a Claude command is a warning and still registers.
    let t = Tree::new();
    t.write(
        "ws/.claude/commands/bad.md",
        "---\ndescription: fine\ntags: [unclosed\n---\nbody\n",
    );
    let d = discover(&t.config()).unwrap();
    assert_eq!(d.commands[0].command.name.as_str(), "bad");
    assert_eq!(d.commands[0].command.description, "fine");
    assert!(
        d.warnings[0]
            .message
            .starts_with("line 3: invalid frontmatter"),
        "{:?}",
        d.warnings
    );
}

#[test]
fn sync_appends_only_changes_and_warns_once() {
    let t = Tree::new();
    t.write("ws/.claude/commands/a.md", "A $0\n")
        .write("ws/.claude/commands/b.md", "B\n")
        .write("ws/.claude/commands/Bad Name.md", "x\n");
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let engine = engine_at(dir.path()).await;
        let first = engine.sync(&discover(&t.config()).unwrap()).await.unwrap();
        assert_eq!(
            (
                first.added,
                first.changed,
                first.removed,
                first.warnings.len()
            ),
            (2 + BUNDLED.len(), 0, 0, 1)
        );

        let head = engine.log().head().seq;
        let again = engine.sync(&discover(&t.config()).unwrap()).await.unwrap();
        assert_eq!(
            engine.log().head().seq,
            head,
            "no file change appends nothing"
        );
        assert_eq!(again.unchanged, 2 + BUNDLED.len());
        assert!(again.warnings.is_empty(), "warnings are logged once");

        let a_before = engine.find("main", Mode::NonInteractive, "a").unwrap();
        t.write("ws/.claude/commands/a.md", "A changed $0\n");
        t.remove("ws/.claude/commands/b.md");
        t.write("ws/.claude/commands/c.md", "C\n");
        let report = engine.sync(&discover(&t.config()).unwrap()).await.unwrap();
        assert_eq!((report.added, report.changed, report.removed), (1, 1, 1));
        let events: Vec<Event> = engine
            .log()
            .range(head + 1, u64::MAX)
            .unwrap()
            .into_iter()
            .map(|r| Event::decode(r.seq, &r.bytes).unwrap())
            .collect();
        let shape: Vec<String> = events
            .iter()
            .map(|e| match &e.data {
                EventData::Registered(r) => format!("registered /{}", r.command.name),
                EventData::Unregistered(u) => {
                    format!("unregistered {} {:?}", u.registration, u.reason)
                }
                other => other.type_name().to_string(),
            })
            .collect();
        let b = a_before.seq + 1;
        assert_eq!(
            shape,
            vec![
                format!("unregistered {} FileChanged", a_before.seq),
                "registered /a".to_string(),
                "registered /c".to_string(),
                format!("unregistered {b} FileRemoved"),
            ]
        );
        assert_eq!(expand_line(&engine, "/a x").await, "A changed x\n");
        // The old template is what was active before the edit.
        let old = cmdlog_replay_free_state_at(&engine, head);
        assert_eq!(
            old.registry
                .resolve("main", Mode::NonInteractive, "a")
                .unwrap()
                .template,
            a_before.template
        );
    });
}

/// The registry as of `until`, folded from the log (replay's `state_at`, which this
/// crate cannot depend on).
fn cmdlog_replay_free_state_at(engine: &Engine, until: Seq) -> LogState {
    let mut state = LogState::default();
    fold_log(engine.log(), &mut state, 1, until).unwrap();
    state
}

#[test]
fn unreadable_and_odd_entries_do_not_stop_the_others() {
    use std::os::unix::fs::symlink;
    let t = Tree::new();
    t.write("ws/.claude/commands/ok.md", "fine\n");
    let dir = t.ws.path().join(".claude/commands");
    symlink(&dir, dir.join("loop")).unwrap();
    symlink(dir.join("ok.md"), dir.join("link.md")).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(dir.join("fifo.md"))
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(dir.join("binary.md"), [0xff, 0xfe, 0x00]).unwrap();
    std::fs::write(dir.join("huge.md"), vec![b'x'; 2 * 1024 * 1024]).unwrap();
    let d = discover(&t.config()).unwrap();
    let names: Vec<&str> = d
        .commands
        .iter()
        .filter(|c| c.provider.id == "claude")
        .map(|c| c.command.name.as_str())
        .collect();
    assert_eq!(
        names,
        vec!["link", "ok"],
        "a link to a file inside the folder is read; looping folder links, FIFOs and bad files are skipped"
    );
    let messages: Vec<String> = d
        .warnings
        .iter()
        .map(|w| t.shorten(&format!("{}: {}", w.path, w.message)))
        .collect();
    assert!(
        messages.iter().any(|m| m.contains("binary.md: not UTF-8")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("huge.md: file is 2097152 bytes")),
        "{messages:?}"
    );
}
