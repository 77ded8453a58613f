//! `cmdlog hooks install|uninstall`: cmdlog's entries in an agent's own hook
//! settings. The file is edited as a concrete syntax tree (jsonc-parser's CST), so
//! every other key, hook, comment and the file's layout stay as they were; a file
//! that does not parse is refused with its path and line, never overwritten.
//! Installing twice changes nothing.

use std::path::{Path, PathBuf};

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use serde_json::Value;

use crate::kind::AgentKind;

/// A settings file cmdlog will not edit, or could not write.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// It is not JSON (with comments).
    #[error(
        "{}:{line}:{column}: {message}; fix the file first, cmdlog does not overwrite a settings file it cannot read",
        .path.display()
    )]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What the parser found.
        message: String,
    },
    /// It is JSON, but a part cmdlog edits has another shape.
    #[error("{}: {what}; fix the file first", .path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// The agent does not read these settings from the file of that scope.
    #[error("{agent}: {why}")]
    Scope {
        /// The agent's product name.
        agent: &'static str,
        /// Where it reads them, and the flag to use.
        why: &'static str,
    },
    /// Reading or writing it failed.
    #[error("cannot {action} {}: {source}", .path.display())]
    Io {
        /// What cmdlog was doing.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

/// The settings version Qwen Code 0.24 writes (`$version`).
const QWEN_SETTINGS_VERSION: u64 = 4;

/// Where the entries go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The workspace's settings (`.claude/settings.json`, …).
    Project,
    /// The user's settings (`~/.claude/settings.json`, …).
    User,
}

/// Claude Code's: its subagents' start and stop, and (last) its model
/// switches (`PostModelSwitch`, in 2.1.332; 2.1.197 ignores the name).
const CLAUDE: &[(&str, u64)] = &[
    ("SessionStart", 10),
    ("UserPromptSubmit", 10),
    ("UserPromptExpansion", 10),
    ("PreToolUse", 10),
    ("PostToolUse", 10),
    ("PostToolUseFailure", 10),
    ("PostToolBatch", 10),
    ("PermissionRequest", 10),
    ("PermissionDenied", 10),
    ("Stop", 10),
    ("StopFailure", 10),
    ("SubagentStart", 10),
    ("SubagentStop", 10),
    ("SessionEnd", 5),
    ("PostModelSwitch", 10),
];

/// Qwen Code took Claude Code's hook events, names and seconds alike; it has
/// subagents, and no model-switch hook: Claude Code's but the last.
const QWEN: &[(&str, u64)] = CLAUDE.split_at(CLAUDE.len() - 1).0;

/// The hook events cmdlog listens to, per agent, and the timeout it asks for (in
/// the agent's unit: seconds for Claude Code, Codex and Qwen Code, milliseconds
/// for Gemini CLI). Codex clamps `SessionEnd` and `Interrupt` to 3 s, and warns
/// at every start about a larger value.
pub fn events(agent: AgentKind) -> &'static [(&'static str, u64)] {
    match agent {
        AgentKind::Codex => &[
            ("SessionStart", 10),
            ("UserPromptSubmit", 10),
            ("PreToolUse", 10),
            ("PermissionRequest", 10),
            ("PostToolUse", 10),
            ("Stop", 10),
            ("SubagentStart", 10),
            ("SubagentStop", 10),
            ("Interrupt", 3),
            ("SessionEnd", 3),
        ],
        AgentKind::Gemini => &[
            ("SessionStart", 10_000),
            ("BeforeAgent", 10_000),
            ("AfterAgent", 10_000),
            ("BeforeTool", 10_000),
            ("AfterTool", 10_000),
            ("Notification", 10_000),
            ("SessionEnd", 5_000),
        ],
        AgentKind::ClaudeCode => CLAUDE,
        AgentKind::Qwen => QWEN,
    }
}

/// The settings file of `agent` in `scope`.
pub fn settings_path(agent: AgentKind, scope: Scope, workspace: &Path, home: &Path) -> PathBuf {
    let env_dir = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    match (agent, scope) {
        (AgentKind::ClaudeCode, Scope::Project) => workspace.join(".claude/settings.json"),
        (AgentKind::ClaudeCode, Scope::User) => env_dir("CLAUDE_CONFIG_DIR")
            .unwrap_or_else(|| home.join(".claude"))
            .join("settings.json"),
        (AgentKind::Codex, Scope::Project) => workspace.join(".codex/hooks.json"),
        (AgentKind::Codex, Scope::User) => env_dir("CODEX_HOME")
            .unwrap_or_else(|| home.join(".codex"))
            .join("hooks.json"),
        (AgentKind::Gemini, Scope::Project) => workspace.join(".gemini/settings.json"),
        (AgentKind::Gemini, Scope::User) => env_dir("GEMINI_CLI_HOME")
            .unwrap_or_else(|| home.to_path_buf())
            .join(".gemini/settings.json"),
        (AgentKind::Qwen, Scope::Project) => workspace.join(".qwen/settings.json"),
        (AgentKind::Qwen, Scope::User) => env_dir("QWEN_HOME")
            .unwrap_or_else(|| home.join(".qwen"))
            .join("settings.json"),
    }
}

/// The folders a settings file may lie in (or a link to it lead to): the
/// workspace, the home folder, and the agent's configured folder when its
/// variable names one.
pub fn settings_roots(agent: AgentKind, workspace: &Path, home: &Path) -> Vec<PathBuf> {
    let mut roots = vec![workspace.to_path_buf(), home.to_path_buf()];
    let var = match agent {
        AgentKind::ClaudeCode => "CLAUDE_CONFIG_DIR",
        AgentKind::Codex => "CODEX_HOME",
        AgentKind::Gemini => "GEMINI_CLI_HOME",
        AgentKind::Qwen => "QWEN_HOME",
    };
    if let Some(dir) = std::env::var_os(var).filter(|v| !v.is_empty()) {
        roots.push(PathBuf::from(dir));
    }
    roots
}

/// The command a hook entry runs: this binary, quoted for the agent's shell.
pub fn hook_command(exe: &Path, agent: AgentKind) -> String {
    let exe = exe.to_string_lossy();
    let quoted = shlex::try_quote(&exe)
        .map(|q| q.into_owned())
        .unwrap_or_else(|_| exe.into_owned());
    format!("{quoted} hook {}", agent.name())
}

/// Whether a handler is one of cmdlog's for `agent`.
fn is_ours(handler: &Value, agent: AgentKind) -> bool {
    handler["command"].as_str().is_some_and(|c| {
        c.contains("cmdlog") && c.trim_end().ends_with(&format!(" hook {}", agent.name()))
    })
}

/// How many of cmdlog's hook entries of `agent` a settings text holds (0 for a
/// text that does not parse).
pub(crate) fn hook_entries_of(text: &str, agent: AgentKind) -> usize {
    let Ok(value) = jsonc_parser::parse_to_serde_value::<Value>(text, &Default::default()) else {
        return 0;
    };
    value["hooks"]
        .as_object()
        .into_iter()
        .flat_map(|events| events.values())
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|group| group["hooks"].as_array())
        .flatten()
        .filter(|h| is_ours(h, agent))
        .count()
}

/// What an edit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// The text before (empty for a new file).
    pub before: String,
    /// The text after.
    pub after: String,
    /// Events added (install) or cleared (uninstall).
    pub events: Vec<String>,
}

impl Edit {
    /// Whether the text changes.
    pub fn changed(&self) -> bool {
        self.before != self.after
    }
}

/// What `agent` itself accepts in its settings file, so cmdlog edits no file the
/// agent would refuse to load (and never run a hook from). Claude Code 2.1 and
/// Codex 0.171 read strict JSON (Claude Code drops a file with a comment or a
/// trailing comma, and says "These settings did not load"); Gemini CLI 0.61 and
/// Qwen Code 0.24 strip `//` and `/* */` comments (`strip-json-comments`) and then
/// read strict JSON. Checked against the pinned CLIs (docs/agents.md).
fn syntax_of(agent: AgentKind) -> ParseOptions {
    ParseOptions {
        allow_comments: matches!(agent, AgentKind::Gemini | AgentKind::Qwen),
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// A settings file `agent` would not load: its path, line and column.
pub(crate) fn parse_settings(
    path: &Path,
    text: &str,
    agent: AgentKind,
) -> Result<CstRootNode, SettingsError> {
    parse(path, text, agent)
}

fn parse(path: &Path, text: &str, agent: AgentKind) -> Result<CstRootNode, SettingsError> {
    let source = if text.trim().is_empty() { "{}" } else { text };
    // The CST keeps comments whatever the options say, so the file is first read
    // as the agent reads it, then as a tree to edit.
    let syntax = syntax_of(agent);
    jsonc_parser::parse_to_value(source, &syntax)
        .map(drop)
        .and_then(|()| CstRootNode::parse(source, &syntax))
        .map_err(|e| {
            let offset = e.range().start.min(source.len());
            let line = source[..offset].matches('\n').count() + 1;
            let column = offset - source[..offset].rfind('\n').map_or(0, |i| i + 1) + 1;
            let reads = if syntax_of(agent).allow_comments {
                "JSON with comments"
            } else {
                "strict JSON"
            };
            SettingsError::Syntax {
                path: path.to_path_buf(),
                line,
                column,
                message: format!(
                    "{} ({} reads this file as {reads}, and would not load it)",
                    e.kind(),
                    agent.display_name()
                ),
            }
        })
}

/// Adds cmdlog's entry to every event of `agent` that lacks one.
pub fn install(
    path: &Path,
    text: &str,
    agent: AgentKind,
    command: &str,
) -> Result<Edit, SettingsError> {
    let shape = |what: String| SettingsError::Shape {
        path: path.to_path_buf(),
        what,
    };
    let root = parse(path, text, agent)?;
    let object = root
        .object_value()
        .or_else(|| root.value().is_none().then(|| root.object_value_or_set()));
    let Some(object) = object else {
        return Err(shape("the settings are not a JSON object".into()));
    };
    // Qwen Code writes its settings version into a file that lacks it; a file
    // cmdlog makes has it already, so Qwen leaves it as cmdlog wrote it (and
    // uninstall can remove it).
    if agent == AgentKind::Qwen && text.trim().is_empty() {
        object.append("$version", CstInputValue::from(QWEN_SETTINGS_VERSION));
    }
    let hooks = match object.get("hooks") {
        Some(prop) => prop
            .object_value()
            .ok_or_else(|| shape("\"hooks\" is not an object".into()))?,
        None => object.object_value_or_set("hooks"),
    };
    let mut added = Vec::new();
    for (event, timeout) in events(agent) {
        let list = match hooks.get(event) {
            Some(prop) => prop
                .array_value()
                .ok_or_else(|| shape(format!("hooks.{event} is not an array")))?,
            None => hooks.array_value_or_set(event),
        };
        let present = list.elements().iter().any(|group| {
            group.to_serde_value().is_some_and(|g| {
                g["hooks"]
                    .as_array()
                    .is_some_and(|hs| hs.iter().any(|h| is_ours(h, agent)))
            })
        });
        if present {
            continue;
        }
        let mut handler = vec![
            ("type".to_string(), CstInputValue::from("command")),
            ("command".to_string(), CstInputValue::from(command)),
            ("timeout".to_string(), CstInputValue::from(*timeout)),
        ];
        if matches!(agent, AgentKind::Gemini | AgentKind::Qwen) {
            handler.insert(0, ("name".to_string(), CstInputValue::from("cmdlog")));
        }
        list.ensure_multiline();
        list.append(CstInputValue::Object(vec![(
            "hooks".to_string(),
            CstInputValue::Array(vec![CstInputValue::Object(handler)]),
        )]));
        added.push(event.to_string());
    }
    let after = if added.is_empty() {
        text.to_string()
    } else {
        let mut out = root.to_string();
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out
    };
    Ok(Edit {
        before: text.to_string(),
        after,
        events: added,
    })
}

/// Removes cmdlog's entries of `agent`; groups, events and a `hooks` object left
/// empty go too.
pub fn uninstall(path: &Path, text: &str, agent: AgentKind) -> Result<Edit, SettingsError> {
    if text.trim().is_empty() {
        return Ok(Edit {
            before: text.into(),
            after: text.into(),
            events: Vec::new(),
        });
    }
    let root = parse(path, text, agent)?;
    let Some(hooks) = root
        .object_value()
        .and_then(|o| o.get("hooks"))
        .and_then(|p| p.object_value())
    else {
        return Ok(Edit {
            before: text.into(),
            after: text.into(),
            events: Vec::new(),
        });
    };
    let mut cleared = Vec::new();
    for prop in hooks.properties() {
        let Some(list) = prop.array_value() else {
            continue;
        };
        let mut touched = false;
        for group in list.elements() {
            let Some(group_object) = group.as_object() else {
                continue;
            };
            let Some(handlers) = group_object.get("hooks").and_then(|p| p.array_value()) else {
                continue;
            };
            for handler in handlers.elements() {
                if handler.to_serde_value().is_some_and(|h| is_ours(&h, agent)) {
                    handler.remove();
                    touched = true;
                }
            }
            if touched && handlers.elements().is_empty() {
                group.remove();
            }
        }
        if touched {
            cleared.push(prop.decoded_name().unwrap_or_default());
            if list.elements().is_empty() {
                prop.remove();
            }
        }
    }
    // A `hooks` object that held only cmdlog's entries goes too.
    if !cleared.is_empty()
        && hooks.properties().is_empty()
        && let Some(prop) = root.object_value().and_then(|o| o.get("hooks"))
    {
        prop.remove();
    }
    let after = if cleared.is_empty() {
        text.to_string()
    } else {
        root.to_string()
    };
    Ok(Edit {
        before: text.to_string(),
        after,
        events: cleared,
    })
}

/// What Codex needs before it runs a hook it did not see before (Codex 0.171:
/// it skips untrusted hooks without a word).
const CODEX_TRUST: &str = "Codex runs these hooks only once you trust them, and says nothing while it skips them:
  interactive: open /hooks in Codex and trust the cmdlog entries (again after each cmdlog reinstall: a changed command is untrusted);
  headless (codex exec): trust them once interactively, or pass --dangerously-bypass-hook-trust for the run;
  project hooks (.codex/hooks.json) also need the project trusted: `codex exec --trust`, or Codex's trust prompt.
`cmdlog hooks status` says when Codex's last payload arrived.";

/// What the user must still do once cmdlog's hooks are installed for
/// `agent`, when there is something (Codex: trust them).
pub fn after_install(agent: AgentKind) -> Option<&'static str> {
    (agent == AgentKind::Codex).then_some(CODEX_TRUST)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTINGS: &str = r#"{
  // The user's own settings: kept as they are.
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [{ "type": "command", "command": "~/bin/guard.sh" }]
      }
    ]
  },
  "permissions": { "allow": ["Read"] } // trailing comment
}
"#;

    #[test]
    fn install_keeps_everything_else_and_is_idempotent() {
        let path = Path::new("/p/.qwen/settings.json");
        let cmd = "/usr/bin/cmdlog hook qwen";
        let edit = install(path, SETTINGS, AgentKind::Qwen, cmd).unwrap();
        assert!(edit.changed());
        assert_eq!(edit.events.len(), events(AgentKind::Qwen).len());
        for kept in [
            "// The user's own settings",
            "~/bin/guard.sh",
            "\"opus\"",
            "// trailing comment",
            "\"allow\"",
        ] {
            assert!(edit.after.contains(kept), "{kept} in {}", edit.after);
        }
        let value =
            jsonc_parser::parse_to_serde_value::<Value>(&edit.after, &Default::default()).unwrap();
        assert_eq!(value["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        assert_eq!(value["hooks"]["SessionEnd"][0]["hooks"][0]["command"], cmd);
        let again = install(path, &edit.after, AgentKind::Qwen, cmd).unwrap();
        assert!(!again.changed() && again.events.is_empty());
        let removed = uninstall(path, &edit.after, AgentKind::Qwen).unwrap();
        let back = jsonc_parser::parse_to_serde_value::<Value>(&removed.after, &Default::default())
            .unwrap();
        assert_eq!(back["hooks"]["PreToolUse"].as_array().unwrap().len(), 1);
        assert!(back["hooks"].get("SessionEnd").is_none());
        assert!(removed.after.contains("// trailing comment"));
    }

    #[test]
    fn a_broken_file_is_refused_with_its_line() {
        let e = install(
            Path::new("/p/settings.json"),
            "{\n  \"a\": 1,\n  \"b\": [\n}\n",
            AgentKind::Qwen,
            "cmdlog hook qwen",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("/p/settings.json:4:"), "{e}");
        let e = install(
            Path::new("/p/s.json"),
            "{\"hooks\": 3}",
            AgentKind::Qwen,
            "c",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("\"hooks\" is not an object"), "{e}");
        let fresh = install(
            Path::new("/p/s.json"),
            "",
            AgentKind::Gemini,
            "cmdlog hook gemini",
        )
        .unwrap();
        let v: Value = serde_json::from_str(&fresh.after).unwrap();
        assert_eq!(v["hooks"]["BeforeAgent"][0]["hooks"][0]["name"], "cmdlog");
    }

    #[test]
    fn a_file_the_agent_would_not_load_is_refused_as_the_agent_reads_it() {
        let refused = |text: &str, agent: AgentKind| {
            install(Path::new("/p/settings.json"), text, agent, "cmdlog hook x")
                .unwrap_err()
                .to_string()
        };
        // A missing comma: every agent refuses the file, and so does cmdlog.
        for agent in AgentKind::ALL {
            let e = refused("{\n  \"env\": {}\n  \"model\": \"x\"\n}\n", agent);
            // Where the comma belongs: after `{}` on line 2.
            assert!(e.starts_with("/p/settings.json:2:12: "), "{agent:?}: {e}");
            assert!(e.contains(agent.display_name()), "{e}");
        }
        // A trailing comma: strict JSON for all four.
        for agent in AgentKind::ALL {
            refused("{\"model\": \"x\",}", agent);
        }
        // Comments: Claude Code and Codex read strict JSON; Gemini CLI and Qwen
        // Code strip comments first.
        let commented = "// mine\n{\"model\": \"x\" /* kept */}\n";
        for agent in [AgentKind::ClaudeCode, AgentKind::Codex] {
            let e = refused(commented, agent);
            assert!(e.starts_with("/p/settings.json:1:1: "), "{e}");
            assert!(e.contains("strict JSON"), "{e}");
        }
        for agent in [AgentKind::Gemini, AgentKind::Qwen] {
            let edit = install(Path::new("/p/s.json"), commented, agent, "cmdlog hook x").unwrap();
            assert!(edit.after.contains("/* kept */"), "{}", edit.after);
        }
        // Single quotes and bare names are not JSON for any of them.
        for agent in AgentKind::ALL {
            refused("{'model': 1}", agent);
            refused("{model: 1}", agent);
        }
    }
}
