//! One fixture tree per agent, written from each agent's documentation (never copied
//! from public repositories): the names, descriptions, hints, precedence and
//! expansions a user of that agent knows (`docs/dialects.md`). `UPDATE_EXPECT=1
//! cargo test` rewrites the expectations.

use cmdlog_engine::*;
use cmdlog_engine::{discovery::*, event::*, expand::*};
use cmdlog_test_support::tree::{Tree, engine_at, rt};
use expect_test::{Expect, expect};

/// The commands one provider found, a line each, then its warnings.
fn listing(t: &Tree, provider: &str) -> String {
    let d = discover(&t.config()).unwrap();
    let mut out = String::new();
    for c in d.commands.iter().filter(|c| c.provider.id == provider) {
        let s = &c.command;
        out.push_str(&format!(
            "/{}{} [{} {}] {:?} hint={:?} model={} user={} {}\n",
            s.name,
            s.alt_names
                .iter()
                .map(|a| format!(" (/{a})"))
                .collect::<String>(),
            c.provider.level,
            c.provider.item,
            s.description,
            s.argument_hint.as_deref().unwrap_or(""),
            s.model_invocable,
            s.user_invocable,
            t.shorten(&c.origin.path),
        ));
    }
    for w in d.warnings.iter().filter(|w| w.provider == provider) {
        out.push_str(&format!("warning {}: {}\n", t.shorten(&w.path), w.message));
    }
    out
}

/// Each line run through a fresh engine: the winner's provider and what it expands
/// to (or its error), with the injections the run recorded.
fn runs(t: &Tree, lines: &[&str]) -> String {
    let discovery = discover(&t.config()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let engine = engine_at(dir.path()).await;
        engine.sync(&discovery).await.unwrap();
        let mut out = String::new();
        for line in lines {
            let ex = engine
                .execute(ExecuteRequest::new("s", "main", Mode::NonInteractive, line))
                .await
                .unwrap();
            let Some(ex) = ex else {
                out.push_str(&format!("{line}\n=> (not a command)\n"));
                continue;
            };
            let winner = engine
                .find("main", Mode::NonInteractive, &ex.name)
                .map(|r| r.provider.id)
                .unwrap_or_default();
            let text = match &ex.outcome {
                Outcome::Success {
                    prompt: Some(p), ..
                } => p.clone(),
                Outcome::Error { text, .. } => format!("ERROR {text}"),
                other => format!("{other:?}"),
            };
            out.push_str(&format!("{line}\n=> [{winner}] {text}\n"));
            if !ex.injections.is_empty() {
                out.push_str(&format!("   injections: {:?}\n", ex.injections));
            }
        }
        out
    })
}

fn check(actual: String, expected: Expect) {
    expected.assert_eq(&actual);
}

fn claude_tree() -> Tree {
    let t = Tree::new();
    // Personal beats project; a sub-folder is a namespace; a skill beats a command.
    t.write("~/.claude/commands/review.md", "---\ndescription: Review, my way\nargument-hint: [pr-number] [priority]\n---\nReview PR $0 at priority $1. Notes: $ARGUMENTS\n")
        .write("ws/.claude/commands/review.md", "Project review\n")
        .write("ws/.claude/commands/frontend/component.md", "# Make a component\n\nCreate the component $ARGUMENTS.\n")
        .write("ws/.claude/commands/deploy.md", "Command deploy, shadowed by the skill\n")
        .write("ws/.claude/skills/deploy/SKILL.md", "---\nname: Deploy It\ndescription: Deploy a service\nargument-hint: <env> [region]\narguments: [env, region]\ndisable-model-invocation: true\nallowed-tools: Bash(git status:*), Read\n---\nDeploy to $env in $region from ${CLAUDE_SKILL_DIR}.\n")
        .write("ws/.claude/skills/helper/SKILL.md", "---\ndescription: Background knowledge\nuser-invocable: false\n---\nHelp.\n")
        // Real text with dollars, and a file with no placeholder.
        .write("ws/.claude/commands/rate.md", "Quote $150/hour = $36,000 for $0; run awk '{print $1}'.\n")
        .write("ws/.claude/commands/tidy.md", "Tidy the code.\n")
        .write("ws/.claude/commands/trace.md", "Explain this trace:\n$ARGUMENTS\n")
        .write("ws/.claude/commands/legacy.md", "Args: $@ ${@:2} {{args}}\n")
        .write("ws/.claude/commands/status.md", "Status:\n!`git status --short`\nSee @src/main.rs and ask @alice.\n")
        // Plugins: one enabled (no entry), one disabled in the project's settings.
        .write(
            "~/.claude/plugins/installed_plugins.json",
            r#"{"version":2,"plugins":{
                "tools@market":[{"scope":"user","installPath":"~/plugins/tools"}],
                "off@market":[{"scope":"user","installPath":"~/plugins/off"}],
                "elsewhere@market":[{"scope":"project","projectPath":"/some/other/project","installPath":"~/plugins/elsewhere"}]}}"#,
        )
        .write("ws/.claude/settings.json", "// JSON with comments\n{\"enabledPlugins\": {\"off@market\": false}}\n")
        .write("~/plugins/tools/commands/help.md", "---\ndescription: The plugin's help\n---\nPlugin help for $ARGUMENTS\n")
        .write("~/plugins/tools/commands/ci/run.md", "Run CI with ${CLAUDE_PLUGIN_ROOT}/ci.sh $0\n")
        .write("~/plugins/tools/skills/fmt/SKILL.md", "---\nname: fancy\ndescription: Format fancily\n---\nFormat $ARGUMENTS\n")
        .write("~/plugins/off/commands/nope.md", "Disabled plugin\n")
        .write("~/plugins/elsewhere/commands/other.md", "Another project's plugin\n");
    t
}

#[test]
fn claude_code_names_precedence_and_fields() {
    let t = claude_tree();
    check(
        listing(&t, "claude"),
        expect![[r#"
        /deploy [project 1] "Deploy a service" hint="<env> [region]" model=false user=true ws/.claude/skills/deploy/SKILL.md
        /helper [project 1] "Background knowledge" hint="" model=true user=false ws/.claude/skills/helper/SKILL.md
        /review [user 2] "Review, my way" hint="[pr-number] [priority]" model=true user=true ~/.claude/commands/review.md
        /deploy [project 3] "Command deploy, shadowed by the skill" hint="" model=true user=true ws/.claude/commands/deploy.md
        /frontend:component [project 3] "Make a component" hint="" model=true user=true ws/.claude/commands/frontend/component.md
        /legacy [project 3] "Args: $@ ${@:2} {{args}}" hint="" model=true user=true ws/.claude/commands/legacy.md
        /rate [project 3] "Quote $150/hour = $36,000 for $0; run awk '{print $1}'." hint="" model=true user=true ws/.claude/commands/rate.md
        /review [project 3] "Project review" hint="" model=true user=true ws/.claude/commands/review.md
        /status [project 3] "Status:" hint="" model=true user=true ws/.claude/commands/status.md
        /tidy [project 3] "Tidy the code." hint="" model=true user=true ws/.claude/commands/tidy.md
        /trace [project 3] "Explain this trace:" hint="" model=true user=true ws/.claude/commands/trace.md
    "#]],
    );
    check(
        listing(&t, "claude-plugins"),
        expect![[r#"
        /tools:fancy (/fancy) [plugin 0] "Format fancily" hint="" model=true user=true ~/plugins/tools/skills/fmt/SKILL.md
        /tools:ci:run [plugin 0] "Run CI with ${CLAUDE_PLUGIN_ROOT}/ci.sh $0" hint="" model=false user=true ~/plugins/tools/commands/ci/run.md
        /tools:help [plugin 0] "The plugin's help" hint="" model=true user=true ~/plugins/tools/commands/help.md
    "#]],
    );
    let deploy = discover(&t.config())
        .unwrap()
        .commands
        .into_iter()
        .find(|c| c.command.name.as_str() == "deploy")
        .unwrap();
    assert_eq!(deploy.command.allowed_tools, ["Bash(git status:*)", "Read"]);
    assert_eq!(deploy.command.arguments, ["env", "region"]);
    assert_eq!(deploy.command.dialect, Some(Dialect::Claude));
}

#[test]
fn claude_code_expansions() {
    let t = claude_tree();
    let out = runs(
        &t,
        &[
            "/review 42 high please",
            "/frontend:component Button",
            "/deploy prod",
            "/rate acme",
            "/tidy src/lib.rs",
            "/tidy",
            "/trace   panicked at 'x'\n  at src/a.rs:3",
            "/legacy a b",
            "/status",
            "/tools:help me",
            "/tools:ci:run fast",
            "/fancy x.rs",
            "/help",
        ],
    );
    let root = t.home.path().join("plugins/tools").display().to_string();
    let skill =
        t.ws.path()
            .join(".claude/skills/deploy")
            .display()
            .to_string();
    check(
        out.replace(&root, "~/plugins/tools")
            .replace(&skill, "ws/.claude/skills/deploy"),
        expect![[r#"
            /review 42 high please
            => [claude] Review PR 42 at priority high. Notes: 42 high please

            /frontend:component Button
            => [claude] # Make a component

            Create the component Button.

            /deploy prod
            => [claude] Base directory for this skill: ws/.claude/skills/deploy

            Deploy to prod in  from ws/.claude/skills/deploy.

            /rate acme
            => [claude] Quote $150/hour = $36,000 for acme; run awk '{print $1}'.

            /tidy src/lib.rs
            => [claude] Tidy the code.


            ARGUMENTS: src/lib.rs
            /tidy
            => [claude] Tidy the code.

            /trace   panicked at 'x'
              at src/a.rs:3
            => [claude] Explain this trace:
            panicked at 'x'
              at src/a.rs:3

            /legacy a b
            => [claude] Args: $@ ${@:2} {{args}}


            ARGUMENTS: a b
            /status
            => [claude] Status:
            !`git status --short`
            See @src/main.rs and ask @alice.

               injections: ["!`git status --short`", "@src/main.rs"]
            /tools:help me
            => [claude-plugins] Plugin help for me

            /tools:ci:run fast
            => [claude-plugins] Run CI with ~/plugins/tools/ci.sh fast

            /fancy x.rs
            => [claude-plugins] Base directory for this skill: ~/plugins/tools/skills/fmt

            Format x.rs

            /help
            => [builtin] Success { text: Some("Commands available in non_interactive mode:\n\nBuilt-in:\n  /help                              List the commands available in this mode\n  /model [<model-id>]                Show or set the session model\n\nSkill:\n  /commit-message [context]          Write a commit message for the staged changes\n  /deploy <env> [region]             Deploy a service\n  /explain <path or symbol>          Explain how a piece of code works\n  /fix-tests [test name or command]  Find and fix the cause of failing tests\n\nCustom:\n  /frontend:component                Make a component\n  /legacy                            Args: $@ ${@:2} {{args}}\n  /rate                              Quote $150/hour = $36,000 for $0; run awk '{print $1}'.\n  /review [pr-number] [priority]     Review, my way\n  /status                            Status:\n  /tidy                              Tidy the code.\n  /trace                             Explain this trace:\n\nPlugin: tools:\n  /tools:ci:run                      Run CI with ${CLAUDE_PLUGIN_ROOT}/ci.sh $0\n  /tools:fancy                       Format fancily\n  /tools:help                        The plugin's help"), prompt: None, source_event_seq: None }
        "#]],
    );
}

fn codex_tree() -> Tree {
    let t = Tree::new();
    t.write("~/.codex/prompts/review.MD", "---\nname: ignored-by-codex\ndescription: Review a PR\nargument-hint: PR=<number> [PRIORITY=<p>]\n---\nReview PR #$PR with priority $PRIORITY. $1 stays.\n")
        .write("~/.codex/prompts/fix.md", "Fix issue #$1 then $2; all: $ARGUMENTS; cost $$1.\n")
        .write("~/.codex/prompts/plain.md", "No placeholders here.\n")
        .write("~/.codex/prompts/sub/nested.md", "Codex does not read sub-folders\n")
        .write("~/.codex/prompts/.hidden.md", "Hidden $1\n")
        // Codex has no project prompts folder.
        .write("ws/.codex/prompts/local.md", "Never read\n");
    t
}

#[test]
fn codex_prompts() {
    let t = codex_tree();
    check(
        listing(&t, "codex"),
        expect![[r#"
        /prompts:.hidden [user 0] "send saved prompt" hint="" model=false user=true ~/.codex/prompts/.hidden.md
        /prompts:fix [user 0] "send saved prompt" hint="" model=false user=true ~/.codex/prompts/fix.md
        /prompts:plain [user 0] "send saved prompt" hint="" model=false user=true ~/.codex/prompts/plain.md
        /prompts:review [user 0] "Review a PR" hint="PR=<number> [PRIORITY=<p>]" model=false user=true ~/.codex/prompts/review.MD
    "#]],
    );
    check(
        runs(
            &t,
            &[
                "/prompts:review PR=42 PRIORITY=high",
                "/prompts:review PR=42",
                "/prompts:review 42",
                "/prompts:fix 7 \"the parser\" extra",
                "/prompts:plain a b",
                "/review PR=1",
            ],
        ),
        expect![[r#"
        /prompts:review PR=42 PRIORITY=high
        => [codex] Review PR #42 with priority high. $1 stays.

        /prompts:review PR=42
        => [codex] ERROR Missing required args for /prompts:review: PRIORITY. Provide as key=value (quote values with spaces).
        /prompts:review 42
        => [codex] ERROR Could not parse /prompts:review: expected key=value but found '42'. Wrap values in double quotes if they contain spaces.
        /prompts:fix 7 "the parser" extra
        => [codex] Fix issue #7 then the parser; all: 7 the parser extra; cost $$1.

        /prompts:plain a b
        => [codex] No placeholders here.

        /review PR=1
        => [bundled] Review the changes in PR=1 (the working tree if nothing is named).
        For each problem give the file and line, why it matters, and a concrete fix.
        Look for: bugs and edge cases, error handling, concurrency, security, performance,
        and tests that are missing or do not assert what the code relies on.
        End with a short verdict: ready, ready after small fixes, or needs work.
    "#]],
    );
}

fn gemini_tree() -> Tree {
    let t = Tree::new();
    t.write(
        "~/.gemini/commands/deploy.toml",
        "description = \"User deploy\"\nprompt = \"User deploy {{args}}\"\n",
    )
    .write(
        "ws/.gemini/commands/deploy.toml",
        "description = \"Project deploy\"\nprompt = \"Project deploy {{args}}\"\n",
    )
    .write(
        "ws/.gemini/commands/git/commit.toml",
        "prompt = \"\"\"Write a commit message.\n!{git diff --staged}\"\"\"\n",
    )
    .write(
        "ws/.gemini/commands/My Review:v2.toml",
        "prompt = \"Review {{args}} with care.\\n!{grep -r {{args}} .}\"\n",
    )
    .write("ws/.gemini/commands/bad.toml", "description = 3\n")
    // Extensions: an enabled one whose `deploy` collides, and a disabled one.
    .write(
        "~/.gemini/extensions/gcp/gemini-extension.json",
        "{\"name\": \"gcp\", \"version\": \"1.0.0\"}",
    )
    .write(
        "~/.gemini/extensions/gcp/commands/deploy.toml",
        "description = \"Deploy to GCP\"\nprompt = \"GCP deploy\"\n",
    )
    .write(
        "~/.gemini/extensions/gcp/commands/logs.toml",
        "prompt = \"Show logs\"\n",
    )
    .write(
        "~/.gemini/extensions/off/gemini-extension.json",
        "{\"name\": \"off\"}",
    )
    .write(
        "~/.gemini/extensions/off/commands/nope.toml",
        "prompt = \"Disabled\"\n",
    );
    let ws = t.ws.path().canonicalize().unwrap().display().to_string();
    t.write(
        "~/.gemini/extensions/extension-enablement.json",
        &format!("{{\"off\": {{\"overrides\": [\"!{ws}/*\"]}}}}"),
    );
    t
}

#[test]
fn gemini_cli_commands() {
    let t = gemini_tree();
    check(
        listing(&t, "gemini"),
        expect![[r#"
        /my_review_v2 [project 0] "Custom command from My Review:v2.toml" hint="" model=false user=true ws/.gemini/commands/My Review:v2.toml
        /deploy [project 0] "Project deploy" hint="" model=false user=true ws/.gemini/commands/deploy.toml
        /git:commit [project 0] "Custom command from commit.toml" hint="" model=false user=true ws/.gemini/commands/git/commit.toml
        /deploy [user 1] "User deploy" hint="" model=false user=true ~/.gemini/commands/deploy.toml
        /gcp.deploy [extension 2] "[gcp] Deploy to GCP" hint="" model=false user=true ~/.gemini/extensions/gcp/commands/deploy.toml
        /logs [extension 2] "[gcp] Custom command from logs.toml" hint="" model=false user=true ~/.gemini/extensions/gcp/commands/logs.toml
        warning ws/.gemini/commands/bad.toml: the 'prompt' field is required; skipped
    "#]],
    );
    check(
        runs(
            &t,
            &[
                "/deploy   to   staging\n now",
                "/deploy",
                "/git:commit fix the parser",
                "/my_review_v2 It's complicated",
                "/gcp.deploy eu",
            ],
        ),
        expect![[r#"
        /deploy   to   staging
         now
        => [gemini] Project deploy to staging now
        /deploy
        => [gemini] Project deploy 
        /git:commit fix the parser
        => [gemini] Write a commit message.
        !{git diff --staged}

        /git:commit fix the parser
           injections: ["!{git diff --staged}"]
        /my_review_v2 It's complicated
        => [gemini] Review It's complicated with care.
        !{grep -r "It's complicated" .}
           injections: ["!{grep -r \"It's complicated\" .}"]
        /gcp.deploy eu
        => [gemini] GCP deploy

        /gcp.deploy eu
    "#]],
    );
}

fn qwen_tree() -> Tree {
    let t = Tree::new();
    t.write("ws/.qwen/commands/review.md", "---\ndescription: Review (Markdown)\nargument-hint: <files>\n---\n\nReview $ARGUMENTS carefully.\n")
        .write("ws/.qwen/commands/review.toml", "prompt = \"Review (TOML, loses to the Markdown file)\"\n")
        .write("~/.qwen/commands/review.md", "User review, loses to the project\n")
        .write("ws/.qwen/commands/plan.toml", "prompt = \"Plan {{args}}\"\n")
        .write("ws/.qwen/commands/quiet.md", "---\ndisable-model-invocation: true\n---\nQuiet\n")
        .write("~/.qwen/extensions/ops/qwen-extension.json", "{\"name\": \"ops\", \"commands\": \"cmds\"}")
        .write("~/.qwen/extensions/ops/cmds/review.md", "Ops review\n")
        .write("~/.qwen/extensions/ops/cmds/status.md", "---\ndescription: Ops status\n---\nStatus\n");
    t
}

#[test]
fn qwen_code_commands() {
    let t = qwen_tree();
    check(
        listing(&t, "qwen"),
        expect![[r#"
        /quiet [project 0] "Custom command from quiet.md" hint="" model=false user=true ws/.qwen/commands/quiet.md
        /review [project 0] "Review (Markdown)" hint="<files>" model=true user=true ws/.qwen/commands/review.md
        /plan [project 0] "Custom command from plan.toml" hint="" model=true user=true ws/.qwen/commands/plan.toml
        /review [user 1] "Custom command from review.md" hint="" model=true user=true ~/.qwen/commands/review.md
        /ops.review [extension 2] "[ops] Custom command from review.md" hint="" model=false user=true ~/.qwen/extensions/ops/cmds/review.md
        /status [extension 2] "[ops] Ops status" hint="" model=true user=true ~/.qwen/extensions/ops/cmds/status.md
    "#]],
    );
    check(
        runs(
            &t,
            &[
                "/review a.ts\n  b.ts",
                "/plan   the   week  ",
                "/ops.review now",
            ],
        ),
        expect![[r#"
            /review a.ts
              b.ts
            => [qwen] Review $ARGUMENTS carefully.

            /review a.ts
              b.ts
            /plan   the   week  
            => [qwen] Plan the   week
            /ops.review now
            => [qwen] Ops review

            /ops.review now
        "#]],
    );
}

fn opencode_tree() -> Tree {
    let t = Tree::new();
    t.write("ws/.opencode/command/team/review.md", "---\ndescription: Team review\nagent: plan\nsubtask: true\nmodel: anthropic/claude-sonnet\n---\nReview $1 for $2\n")
        .write("ws/.opencode/commands/named.md", "---\nname: renamed\n---\nRenamed $ARGUMENTS\n")
        .write("ws/.opencode/command/plain.md", "Explain\n")
        .write("~/.config/opencode/command/plain.md", "Global plain, loses to the project\n")
        .write("ws/opencode.jsonc", "{\n  // commands in the config file\n  \"command\": {\n    \"fromjson\": {\"template\": \"From JSON: $ARGUMENTS\", \"description\": \"A JSON command\"},\n    \"plain\": {\"template\": \"JSON plain, loses to Markdown\"}\n  }\n}\n");
    t
}

#[test]
fn opencode_commands() {
    let t = opencode_tree();
    check(
        listing(&t, "opencode"),
        expect![[r#"
        /plain [project 2] "" hint="" model=false user=true ws/.opencode/command/plain.md
        /team/review [project 2] "Team review" hint="" model=false user=true ws/.opencode/command/team/review.md
        /renamed [project 3] "" hint="" model=false user=true ws/.opencode/commands/named.md
        /plain [user 4] "" hint="" model=false user=true ~/.config/opencode/command/plain.md
        /fromjson [project 13] "A JSON command" hint="" model=false user=true ws/opencode.jsonc#command/fromjson
        /plain [project 13] "" hint="" model=false user=true ws/opencode.jsonc#command/plain
    "#]],
    );
    let review = discover(&t.config())
        .unwrap()
        .commands
        .into_iter()
        .find(|c| c.command.name.as_str() == "team/review")
        .unwrap();
    assert_eq!(review.command.metadata["agent"], "plan");
    assert_eq!(review.command.metadata["subtask"], "true");
    assert_eq!(
        review.command.model.as_deref(),
        Some("anthropic/claude-sonnet")
    );
    check(
        runs(
            &t,
            &[
                "/team/review src/a.ts security and speed",
                "/team/review",
                "/plain this module",
                "/renamed \"quoted  text\" kept",
                "/fromjson x",
            ],
        ),
        expect![[r#"
        /team/review src/a.ts security and speed
        => [opencode] Review src/a.ts for security and speed
        /team/review
        => [opencode] Review  for
        /plain this module
        => [opencode] Explain

        this module
        /renamed "quoted  text" kept
        => [opencode] Renamed "quoted  text" kept
        /fromjson x
        => [opencode] From JSON: x
    "#]],
    );
}

#[test]
fn an_old_registration_expands_as_it_did_when_it_was_made() {
    // A Claude file registered before the per-agent dialects carries `markdown`:
    // its runs replay with seed 002's rules ($1 is the first argument).
    let mut spec = CommandSpec::new(
        CommandName::new("review").unwrap(),
        CommandSource::SkillDirCommand,
        CommandKind::File,
    );
    spec.dialect = Some(Dialect::Markdown);
    let input = ExpandInput::new(&spec, " 42 high");
    assert_eq!(
        expand("PR $1, then ${@:2}", Dialect::Markdown, &input).unwrap(),
        "PR 42, then high"
    );
    spec.dialect = Some(Dialect::Claude);
    let input = ExpandInput::new(&spec, " 42 high");
    assert_eq!(
        expand("PR $1, then ${@:2}", Dialect::Claude, &input).unwrap(),
        "PR high, then ${@:2}"
    );
    let json = serde_json::to_string(&Dialect::Markdown).unwrap();
    assert_eq!(json, "\"markdown\"");
    assert_eq!(
        serde_json::to_string(&Dialect::GeminiCli).unwrap(),
        "\"gemini_cli\""
    );
}
