//! The command model (seed 000 + seed 001 fields), name validation, and effective modes.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a command may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A terminal UI with dialogs.
    Interactive,
    /// A headless CLI run (text or JSON out).
    NonInteractive,
    /// An ACP client (Zed and others).
    Acp,
}

impl Mode {
    /// All modes, in their canonical order.
    pub const ALL: [Mode; 3] = [Mode::Interactive, Mode::NonInteractive, Mode::Acp];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Interactive => "interactive",
            Mode::NonInteractive => "non_interactive",
            Mode::Acp => "acp",
        }
    }

    /// Parses a snake_case name (`-` accepted for `_`).
    pub fn parse(text: &str) -> Option<Mode> {
        match text.replace('-', "_").as_str() {
            "interactive" => Some(Mode::Interactive),
            "non_interactive" => Some(Mode::NonInteractive),
            "acp" => Some(Mode::Acp),
            _ => None,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a command executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommandType {
    /// Produces a prompt for the model (skills, file commands, MCP prompts).
    #[serde(rename = "prompt")]
    Prompt,
    /// Runs local logic without a UI.
    #[serde(rename = "local")]
    Local,
    /// Needs the interactive UI (dialogs).
    #[serde(rename = "local-jsx")]
    LocalJsx,
}

/// The loader-side classification of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandKind {
    /// Compiled into the host.
    BuiltIn,
    /// Loaded from a command file.
    File,
    /// A skill.
    Skill,
    /// A prompt from an MCP server.
    McpPrompt,
}

/// The user-facing classification of where a command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommandSource {
    /// Built into the host.
    BuiltinCommand,
    /// A skill shipped with the host.
    BundledSkill,
    /// A user or project command file.
    SkillDirCommand,
    /// A command from a plugin.
    PluginCommand,
    /// A prompt from an MCP server.
    McpPrompt,
    /// Reserved.
    WorkflowCommand,
    /// Reserved.
    PluginSkill,
    /// Reserved.
    DynamicSkill,
    /// Reserved.
    BuiltinPluginSkill,
    /// Reserved.
    McpSkill,
}

impl CommandSource {
    /// The default label shown to users for this source.
    pub fn default_label(self) -> &'static str {
        match self {
            CommandSource::BuiltinCommand => "Built-in",
            CommandSource::BundledSkill => "Skill",
            CommandSource::SkillDirCommand => "Custom",
            CommandSource::PluginCommand => "Plugin",
            CommandSource::McpPrompt => "MCP",
            _ => "Other",
        }
    }
}

/// How a prompt template expands its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// oh-my-pi's rules (seed 002, DESIGN §6): `$1`…, `$ARGUMENTS`, `$@`, `${@:N}`,
    /// `{{args}}`. cmdlog's native files and the `pi` dialect; also what every
    /// Markdown file was registered with before the per-agent dialects (kept, so old
    /// runs replay and drift-check as they expanded then).
    #[default]
    Markdown,
    /// The first Gemini/Qwen rule (`{{args}}` = the trimmed input, appended when
    /// absent): kept for registrations made before the per-agent dialects.
    Gemini,
    /// Claude Code commands, skills and plugin commands (docs/dialects.md).
    Claude,
    /// Codex custom prompts (`/prompts:<name>`).
    Codex,
    /// Gemini CLI TOML commands.
    #[serde(rename = "gemini_cli")]
    GeminiCli,
    /// Qwen Code TOML commands.
    QwenToml,
    /// Qwen Code Markdown commands.
    QwenMarkdown,
    /// OpenCode commands.
    #[serde(rename = "opencode")]
    OpenCode,
}

/// A command's optional free-form input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct InputDescriptor {
    /// Placeholder shown before the user types.
    #[serde(default)]
    pub hint: String,
    /// Whether attachments may accompany an invocation.
    #[serde(default)]
    pub attachments: bool,
}

/// A command name: lowercase `^[a-z0-9_.][a-z0-9_.:/-]{0,127}$` — the agents'
/// namespaces (`frontend:component`, `prompts:review`, `team/review`, `gcp.deploy`)
/// included.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CommandName(String);

/// A name that breaks the rules, with the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid command name {name:?}: {rule}")]
pub struct InvalidName {
    /// The name as given.
    pub name: String,
    /// The rule it breaks.
    pub rule: &'static str,
}

pub use crate::limits::NAME_BYTES_MAX;

impl CommandName {
    /// Validates `name` as it must be stored (already lowercase).
    pub fn new(name: impl Into<String>) -> Result<Self, InvalidName> {
        let name = name.into();
        let fail = |rule| {
            Err(InvalidName {
                name: name.clone(),
                rule,
            })
        };
        let Some(first) = name.chars().next() else {
            return fail("it is empty");
        };
        if name.len() > NAME_BYTES_MAX {
            return fail("it is longer than 128 characters");
        }
        if !(first.is_ascii_lowercase() || first.is_ascii_digit() || "_.".contains(first)) {
            return fail("it must start with a lowercase letter, a digit, '_' or '.'");
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.:/-".contains(c))
        {
            return fail("only a-z, 0-9, '_', '.', ':', '/' and '-' are allowed");
        }
        Ok(CommandName(name))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for CommandName {
    type Error = InvalidName;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        CommandName::new(value)
    }
}

impl From<CommandName> for String {
    fn from(value: CommandName) -> Self {
        value.0
    }
}

impl fmt::Display for CommandName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The full spec of a command as registered (and as logged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandSpec {
    /// Its name.
    pub name: CommandName,
    /// Other names that resolve to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alt_names: Vec<CommandName>,
    /// One-line summary.
    #[serde(default)]
    pub description: String,
    /// User-facing source class.
    pub source: CommandSource,
    /// User-facing source label ("Built-in", "Custom", "Plugin: x").
    pub source_label: String,
    /// Loader-side class.
    pub kind: CommandKind,
    /// How it executes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_type: Option<CommandType>,
    /// Explicit modes; inferred when absent (see [`CommandSpec::effective_modes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported_modes: Option<Vec<Mode>>,
    /// Whether a user may invoke it with a slash line.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub user_invocable: bool,
    /// Whether the model may invoke it as a tool.
    #[serde(default, skip_serializing_if = "is_false")]
    pub model_invocable: bool,
    /// Hidden from listings (still resolvable).
    #[serde(default, skip_serializing_if = "is_false")]
    pub hidden: bool,
    /// Argument hint shown after the name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    /// When the model should use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_to_use: Option<String>,
    /// Usage examples.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Free-form input descriptor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<InputDescriptor>,
    /// Whether `command/run` records the raw input.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub record_input: bool,
    /// Stable plugin-owned identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_id: Option<String>,
    /// How its template expands (prompt commands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<Dialect>,
    /// The model a file command asks for (frontmatter `model`), kept as metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tools a file command allows (frontmatter `allowed-tools`), kept as metadata.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// Named arguments (Claude's `arguments` frontmatter): `$name` placeholders, in
    /// the order they take the positional arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<String>,
    /// Variables the template expands, as they were at registration
    /// (`CLAUDE_PLUGIN_ROOT`, `CLAUDE_PLUGIN_DATA`, `CLAUDE_SKILL_DIR`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, String>,
    /// The agent's own frontmatter fields, kept as given (OpenCode `agent`,
    /// `subtask`; Claude `disable-model-invocation`, `context`; …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, serde_json::Value>,
}

impl CommandSpec {
    /// A spec with the given name, source and kind and every other field at its default.
    pub fn new(name: CommandName, source: CommandSource, kind: CommandKind) -> Self {
        CommandSpec {
            name,
            alt_names: Vec::new(),
            description: String::new(),
            source,
            source_label: source.default_label().to_string(),
            kind,
            command_type: None,
            supported_modes: None,
            user_invocable: true,
            model_invocable: false,
            hidden: false,
            argument_hint: None,
            when_to_use: None,
            examples: Vec::new(),
            input: None,
            record_input: true,
            definition_id: None,
            dialect: None,
            model: None,
            allowed_tools: Vec::new(),
            arguments: Vec::new(),
            variables: BTreeMap::new(),
            metadata: BTreeMap::new(),
        }
    }

    /// The modes it runs in (seed 000 `getEffectiveSupportedModes`): explicit
    /// `supported_modes`; else by command type (`prompt` → all, `local` and
    /// `local-jsx` → interactive); else by kind (`built_in` → interactive, others → all).
    pub fn effective_modes(&self) -> Vec<Mode> {
        if let Some(modes) = &self.supported_modes {
            return modes.clone();
        }
        match (self.command_type, self.kind) {
            (Some(CommandType::Prompt), _) => Mode::ALL.to_vec(),
            (Some(CommandType::Local | CommandType::LocalJsx), _) => vec![Mode::Interactive],
            (None, CommandKind::BuiltIn) => vec![Mode::Interactive],
            (None, _) => Mode::ALL.to_vec(),
        }
    }

    /// Whether it runs in `mode`.
    pub fn supports(&self, mode: Mode) -> bool {
        self.effective_modes().contains(&mode)
    }

    /// Whether it runs through the template expander rather than a handler.
    pub fn is_prompt(&self) -> bool {
        self.command_type == Some(CommandType::Prompt)
            || (self.command_type.is_none() && self.kind != CommandKind::BuiltIn)
    }

    /// Whether it answers to `name` (its name or an alias).
    pub fn answers_to(&self, name: &str) -> bool {
        self.name.as_str() == name || self.alt_names.iter().any(|a| a.as_str() == name)
    }

    /// The ACP `AvailableCommand` object: `name`, `description`, and `input.hint`
    /// (the input descriptor's hint, else the argument hint) when there is one.
    pub fn acp_available_command(&self) -> serde_json::Value {
        let mut c = serde_json::json!({"name": self.name, "description": self.description});
        let hint = self
            .input
            .as_ref()
            .map(|i| i.hint.clone())
            .filter(|h| !h.is_empty())
            .or_else(|| self.argument_hint.clone());
        if let Some(hint) = hint {
            c["input"] = serde_json::json!({ "hint": hint });
        }
        c
    }

    /// `/name <argument hint>`, as listings show it.
    pub fn usage(&self) -> String {
        match &self.argument_hint {
            Some(hint) => format!("/{} {hint}", self.name),
            None => format!("/{}", self.name),
        }
    }

    /// Whether the model may invoke it: built-ins never may.
    pub fn is_model_invocable(&self) -> bool {
        self.model_invocable && self.kind != CommandKind::BuiltIn && !self.hidden
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: CommandKind, command_type: Option<CommandType>) -> CommandSpec {
        let mut s = CommandSpec::new(
            CommandName::new("test").unwrap(),
            CommandSource::BuiltinCommand,
            kind,
        );
        s.command_type = command_type;
        s
    }

    #[test]
    fn explicit_modes_win_over_inference() {
        let mut s = spec(CommandKind::BuiltIn, Some(CommandType::Local));
        s.supported_modes = Some(vec![Mode::Interactive]);
        assert_eq!(s.effective_modes(), vec![Mode::Interactive]);
        s.supported_modes = Some(vec![Mode::NonInteractive, Mode::Acp]);
        assert_eq!(s.effective_modes(), vec![Mode::NonInteractive, Mode::Acp]);
    }

    #[test]
    fn local_infers_interactive_only_per_design_decision() {
        // Seed 000's test says "local infers all modes"; its function and DESIGN §4 say
        // interactive only. We follow the function.
        let s = spec(CommandKind::BuiltIn, Some(CommandType::Local));
        assert_eq!(s.effective_modes(), vec![Mode::Interactive]);
    }

    #[test]
    fn inference_table() {
        use CommandKind::*;
        use CommandType::*;
        let all = Mode::ALL.to_vec();
        let interactive = vec![Mode::Interactive];
        for (kind, ty, expected) in [
            (BuiltIn, Some(LocalJsx), &interactive),
            (Skill, Some(Prompt), &all),
            (BuiltIn, None, &interactive),
            (File, None, &all),
            (Skill, None, &all),
            (McpPrompt, None, &all),
        ] {
            assert_eq!(
                &spec(kind, ty).effective_modes(),
                expected,
                "{kind:?} {ty:?}"
            );
        }
    }

    #[test]
    fn names_follow_the_rules() {
        for ok in [
            "help",
            "git:commit",
            "ext.cmd",
            "a",
            "0day",
            "a-b_c",
            "team/review",
            "prompts:review",
            ".hidden:caf_",
            &"x".repeat(128),
        ] {
            assert!(CommandName::new(ok).is_ok(), "{ok}");
        }
        for (bad, rule) in [
            ("", "empty"),
            ("Help", "start"),
            ("-x", "start"),
            ("/x", "start"),
            ("a b", "only"),
            ("hélp", "only"),
            ("a\0", "only"),
            (&"x".repeat(129), "longer"),
        ] {
            let err = CommandName::new(bad).unwrap_err();
            assert!(err.rule.contains(rule), "{bad:?}: {err}");
        }
    }

    #[test]
    fn spec_json_omits_defaults_and_reads_them_back() {
        let s = spec(CommandKind::BuiltIn, Some(CommandType::LocalJsx));
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("user_invocable"), "{json}");
        assert!(json.contains(r#""command_type":"local-jsx""#), "{json}");
        assert_eq!(serde_json::from_str::<CommandSpec>(&json).unwrap(), s);
        assert!(serde_json::from_str::<CommandSpec>(&json.replace("\"test\"", "\"Bad\"")).is_err());
    }

    #[test]
    fn built_ins_are_never_model_invocable() {
        let mut s = spec(CommandKind::BuiltIn, Some(CommandType::Local));
        s.model_invocable = true;
        assert!(!s.is_model_invocable());
    }
}
