//! Discovery: read the command files people already have (DESIGN §6).
//!
//! [`discover`] walks every provider's folders and returns what it found; it
//! writes nothing. [`crate::Engine::sync`] diffs that against the registry's file
//! registrations and appends only the changes.

mod bundled;
mod frontmatter;
mod plugins;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::command::{
    CommandKind, CommandName, CommandSource, CommandSpec, CommandType, Dialect, InputDescriptor,
};
use crate::event::Origin;
use crate::event::ProviderRef;

pub use bundled::BUNDLED;

/// Where discovery looks.
#[derive(Debug, Clone)]
pub struct DiscoveryConfig {
    /// `~`: the user's home folder.
    pub home: PathBuf,
    /// The workspace (project) folder.
    pub workspace: PathBuf,
    /// Largest command file read; larger ones are skipped with a warning. Default 1 MiB.
    pub file_bytes_max: u64,
}

impl DiscoveryConfig {
    /// Discovery of `workspace` for a user whose home is `home`.
    pub fn new(home: impl Into<PathBuf>, workspace: impl Into<PathBuf>) -> Self {
        DiscoveryConfig {
            home: home.into(),
            workspace: workspace.into(),
            file_bytes_max: 1024 * 1024,
        }
    }
}

/// One command found in a file (or bundled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// Provider and precedence (`item` = the index of the folder it came from).
    pub provider: ProviderRef,
    /// The file and the BLAKE3 of its bytes.
    pub origin: Origin,
    /// The command.
    pub command: CommandSpec,
    /// The template body.
    pub template: String,
}

/// Something discovery skipped or worked around.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The provider id.
    pub provider: String,
    /// The file or folder.
    pub path: String,
    /// BLAKE3 of the file's bytes, when a file was read.
    pub content_hash: Option<String>,
    /// What is wrong and what was done instead.
    pub message: String,
}

/// The result of one discovery pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovery {
    /// Commands found, provider by provider, folder by folder, file by file.
    pub commands: Vec<Discovered>,
    /// Warnings.
    pub warnings: Vec<Warning>,
}

/// A fatal discovery error: a native command file with broken frontmatter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}:{line}: invalid frontmatter: {message}; fix the YAML between the --- lines")]
pub struct DiscoveryError {
    /// The file.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// A provider's static description.
struct Provider {
    id: &'static str,
    priority: i32,
    label_level: fn(usize) -> &'static str,
}

/// Providers in registration order: ties at one priority keep this order
/// (claude-plugins before codex).
const PROVIDERS: [Provider; 7] = [
    Provider {
        id: "native",
        priority: 100,
        label_level: |i| ["project", "user"][i.min(1)],
    },
    Provider {
        id: "claude",
        priority: 80,
        label_level: |i| ["user", "project"][i.min(1)],
    },
    Provider {
        id: "claude-plugins",
        priority: 70,
        label_level: |_| "plugin",
    },
    Provider {
        id: "codex",
        priority: 70,
        label_level: |i| ["user", "project", "user"][i.min(2)],
    },
    Provider {
        id: "gemini",
        priority: 60,
        label_level: |i| ["user", "project", "user", "project"][i.min(3)],
    },
    Provider {
        id: "opencode",
        priority: 55,
        label_level: |i| ["project", "project", "user", "user"][i.min(3)],
    },
    Provider {
        id: "bundled",
        priority: bundled::PRIORITY,
        label_level: |_| "bundled",
    },
];

fn provider_ref(index: usize, item: usize) -> ProviderRef {
    let p = &PROVIDERS[index];
    ProviderRef {
        id: p.id.into(),
        priority: p.priority,
        level: (p.label_level)(item).into(),
        order: index as u32,
        item: item as u32,
    }
}

/// The longest a fallback description runs before `...`.
pub const DESCRIPTION_CHARS_MAX: usize = 60;

/// Frontmatter `description`, else the first non-empty body line, trimmed and cut to
/// 60 characters plus `...`.
pub fn describe(frontmatter: Option<&str>, body: &str) -> String {
    if let Some(d) = frontmatter.map(str::trim).filter(|d| !d.is_empty()) {
        return d.to_string();
    }
    let line = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() > DESCRIPTION_CHARS_MAX {
        format!(
            "{}...",
            line.chars().take(DESCRIPTION_CHARS_MAX).collect::<String>()
        )
    } else {
        line.to_string()
    }
}

/// The folders discovery reads (existing ones only), and whether each is read
/// recursively: what a daemon watches for hot reload.
pub fn watch_roots(config: &DiscoveryConfig) -> Vec<(PathBuf, bool)> {
    let (home, ws) = (&config.home, &config.workspace);
    let mut roots: Vec<(PathBuf, bool)> = [
        ws.join(".cmdlog/commands"),
        home.join(".cmdlog/commands"),
        home.join(".claude/commands"),
        ws.join(".claude/commands"),
        home.join(".codex/commands"),
        ws.join(".codex/commands"),
        home.join(".codex/prompts"),
        ws.join(".opencode/command"),
        ws.join(".opencode/commands"),
        home.join(".config/opencode/command"),
        home.join(".config/opencode/commands"),
        home.join(".claude/plugins"),
    ]
    .into_iter()
    .map(|p| (p, false))
    .chain(
        [
            home.join(".gemini/commands"),
            ws.join(".gemini/commands"),
            home.join(".qwen/commands"),
            ws.join(".qwen/commands"),
        ]
        .into_iter()
        .map(|p| (p, true)),
    )
    .filter(|(p, _)| p.is_dir())
    .collect();
    let mut plugins = Vec::new();
    for plugin in plugins::installed(home, &mut Vec::new()) {
        let dir = plugin.root.join("commands");
        if dir.is_dir() {
            plugins.push((dir, false));
        }
    }
    roots.extend(plugins);
    roots
}

/// Parses a command file's frontmatter as native files are read: `Ok((fields,
/// body))`, or the 1-based line and message of the YAML error. Never panics.
pub fn parse_frontmatter(
    text: &str,
) -> Result<(std::collections::BTreeMap<String, String>, String), (usize, String)> {
    frontmatter::parse_strict(text)
        .map(|f| (f.fields, f.body))
        .map_err(|e| (e.line, e.message))
}

/// Parses a Gemini/Qwen TOML command: `Ok((prompt, description))`, or the error
/// message. Never panics.
pub fn parse_toml_command(text: &str) -> Result<(Option<String>, Option<String>), String> {
    #[derive(Deserialize)]
    struct TomlCommand {
        prompt: Option<String>,
        description: Option<String>,
    }
    toml::from_str::<TomlCommand>(text)
        .map(|c| (c.prompt, c.description))
        .map_err(|e| e.message().to_string())
}

struct Pass<'a> {
    config: &'a DiscoveryConfig,
    out: Discovery,
}

/// Reads every provider. Provider failures are isolated (a warning, and the others
/// still load); only a native file's broken frontmatter is fatal.
pub fn discover(config: &DiscoveryConfig) -> Result<Discovery, DiscoveryError> {
    let mut pass = Pass {
        config,
        out: Discovery::default(),
    };
    let (home, ws) = (&config.home, &config.workspace);
    pass.markdown(
        0,
        &[ws.join(".cmdlog/commands"), home.join(".cmdlog/commands")],
        Flavour::Native,
    )?;
    pass.markdown(
        1,
        &[home.join(".claude/commands"), ws.join(".claude/commands")],
        Flavour::Plain,
    )?;
    for (item, plugin) in plugins::installed(home, &mut pass.out.warnings)
        .into_iter()
        .enumerate()
    {
        pass.markdown_root(
            2,
            item,
            &plugin.root.join("commands"),
            &Flavour::Plugin(plugin.name),
        )?;
    }
    pass.markdown(
        3,
        &[
            home.join(".codex/commands"),
            ws.join(".codex/commands"),
            home.join(".codex/prompts"),
        ],
        Flavour::Codex,
    )?;
    let gemini_roots = [
        home.join(".gemini/commands"),
        ws.join(".gemini/commands"),
        home.join(".qwen/commands"),
        ws.join(".qwen/commands"),
    ];
    let mut seen = BTreeSet::new();
    for (item, root) in gemini_roots.iter().enumerate() {
        if seen.insert(canonical(root)) {
            pass.toml_root(4, item, root);
        }
    }
    pass.markdown(
        5,
        &[
            ws.join(".opencode/command"),
            ws.join(".opencode/commands"),
            home.join(".config/opencode/command"),
            home.join(".config/opencode/commands"),
        ],
        Flavour::Plain,
    )?;
    for (item, b) in BUNDLED.iter().enumerate() {
        pass.out
            .commands
            .push(bundled::discovered(b, provider_ref(6, item)));
    }
    Ok(pass.out)
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

enum Flavour {
    /// cmdlog's own files: frontmatter errors are fatal.
    Native,
    /// Claude, OpenCode.
    Plain,
    /// Codex: frontmatter `name` overrides the file name.
    Codex,
    /// A Claude plugin: plugin source, never model-invocable.
    Plugin(String),
}

/// A file read for discovery.
struct FileText {
    path: String,
    content_hash: String,
    text: String,
}

impl Pass<'_> {
    fn warn(&mut self, provider: usize, path: &str, content_hash: Option<&str>, message: String) {
        self.out.warnings.push(Warning {
            provider: PROVIDERS[provider].id.into(),
            path: path.into(),
            content_hash: content_hash.map(str::to_string),
            message,
        });
    }

    fn found(
        &mut self,
        provider: usize,
        item: usize,
        file: FileText,
        command: CommandSpec,
        template: String,
    ) {
        self.out.commands.push(Discovered {
            provider: provider_ref(provider, item),
            origin: Origin {
                path: file.path,
                content_hash: file.content_hash,
            },
            command,
            template,
        });
    }

    fn markdown(
        &mut self,
        provider: usize,
        roots: &[PathBuf],
        flavour: Flavour,
    ) -> Result<(), DiscoveryError> {
        let mut seen = BTreeSet::new();
        for (item, root) in roots.iter().enumerate() {
            // When the workspace is the home folder, a user and a project root coincide.
            if seen.insert(canonical(root)) {
                self.markdown_root(provider, item, root, &flavour)?;
            }
        }
        Ok(())
    }

    /// The files under `root` with extension `ext`: hidden entries and ignored paths
    /// skipped, only regular files. A `root` that is itself a symlink is followed (as
    /// the agents do: people keep their command folders in dotfile repositories);
    /// inside it, a symlinked file is read only when it resolves to a file inside the
    /// same root, and symlinked folders are not entered.
    fn files(&mut self, provider: usize, root: &Path, recursive: bool, ext: &str) -> Vec<PathBuf> {
        if !root.is_dir() {
            return Vec::new();
        }
        let root_real = canonical(root);
        let mut walk = ignore::WalkBuilder::new(root);
        walk.hidden(true)
            .git_ignore(true)
            .require_git(false)
            .git_global(false)
            .git_exclude(false)
            .parents(true)
            .follow_links(false)
            .sort_by_file_name(|a, b| a.cmp(b));
        if !recursive {
            walk.max_depth(Some(1));
        }
        let mut files = Vec::new();
        for entry in walk.build() {
            match entry {
                Ok(e) => {
                    let wanted = e.path().extension().is_some_and(|x| x == ext);
                    let kind = e.file_type();
                    if wanted && kind.is_some_and(|t| t.is_file()) {
                        files.push(e.into_path());
                    } else if wanted && kind.is_some_and(|t| t.is_symlink()) {
                        match std::fs::canonicalize(e.path()) {
                            Ok(target) if target.starts_with(&root_real) && target.is_file() => {
                                files.push(e.into_path());
                            }
                            Ok(target) => {
                                let message = format!(
                                    "a symbolic link to {}, outside {}: not followed",
                                    target.display(),
                                    root.display()
                                );
                                self.warn(provider, &e.path().display().to_string(), None, message);
                            }
                            Err(err) => {
                                let message = format!("a broken symbolic link ({err}); skipped");
                                self.warn(provider, &e.path().display().to_string(), None, message);
                            }
                        }
                    }
                }
                Err(e) => {
                    let message =
                        format!("cannot read part of this folder: {e}; the rest still loads");
                    self.warn(provider, &root.display().to_string(), None, message);
                }
            }
        }
        files
    }

    fn read(&mut self, provider: usize, path: &Path) -> Option<FileText> {
        let shown = path.display().to_string();
        let max = self.config.file_bytes_max;
        let bytes = match std::fs::metadata(path) {
            Ok(m) if m.len() > max => {
                let message = format!(
                    "file is {} bytes, over the {max}-byte limit for command files; skipped",
                    m.len()
                );
                self.warn(provider, &shown, None, message);
                return None;
            }
            Ok(_) => std::fs::read(path),
            Err(e) => Err(e),
        };
        let bytes = match bytes {
            Ok(b) => b,
            Err(e) => {
                self.warn(provider, &shown, None, format!("cannot read: {e}; skipped"));
                return None;
            }
        };
        let content_hash = blake3::hash(&bytes).to_hex().to_string();
        match String::from_utf8(bytes) {
            Ok(text) => Some(FileText {
                path: shown,
                content_hash,
                text,
            }),
            Err(e) => {
                let message = format!("not UTF-8 text ({e}); skipped");
                self.warn(provider, &shown, Some(&content_hash), message);
                None
            }
        }
    }

    fn name(&mut self, provider: usize, file: &FileText, raw: &str) -> Option<CommandName> {
        match CommandName::new(raw.to_lowercase()) {
            Ok(n) => Some(n),
            Err(e) => {
                let message = format!("{e}; rename the file (or its `name`) to use it");
                self.warn(provider, &file.path, Some(&file.content_hash), message);
                None
            }
        }
    }

    fn markdown_root(
        &mut self,
        provider: usize,
        item: usize,
        root: &Path,
        flavour: &Flavour,
    ) -> Result<(), DiscoveryError> {
        for path in self.files(provider, root, false, "md") {
            let Some(file) = self.read(provider, &path) else {
                continue;
            };
            let fm = match flavour {
                Flavour::Native => {
                    frontmatter::parse_strict(&file.text).map_err(|e| DiscoveryError {
                        path: file.path.clone(),
                        line: e.line,
                        message: e.message,
                    })?
                }
                _ => {
                    let (fm, error) = frontmatter::parse_lenient(&file.text);
                    if let Some(e) = error {
                        let message = format!(
                            "line {}: invalid frontmatter ({}); read it as `key: value` lines instead",
                            e.line, e.message
                        );
                        self.warn(provider, &file.path, Some(&file.content_hash), message);
                    }
                    fm
                }
            };
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let raw_name = match flavour {
                Flavour::Codex => fm
                    .fields
                    .get("name")
                    .filter(|n| !n.trim().is_empty())
                    .cloned()
                    .unwrap_or(stem),
                _ => stem,
            };
            let Some(name) = self.name(provider, &file, raw_name.trim()) else {
                continue;
            };
            let plugin = match flavour {
                Flavour::Plugin(p) => Some(p.as_str()),
                _ => None,
            };
            let template = fm.body.trim().to_string();
            let command = markdown_spec(name, &fm.fields, &template, plugin);
            self.found(provider, item, file, command, template);
        }
        Ok(())
    }

    fn toml_root(&mut self, provider: usize, item: usize, root: &Path) {
        #[derive(Deserialize)]
        struct TomlCommand {
            prompt: Option<String>,
            description: Option<String>,
        }
        for path in self.files(provider, root, true, "toml") {
            let Some(file) = self.read(provider, &path) else {
                continue;
            };
            let parsed: TomlCommand = match toml::from_str(&file.text) {
                Ok(p) => p,
                Err(e) => {
                    let line = e
                        .span()
                        .map_or(1, |span| file.text[..span.start].matches('\n').count() + 1);
                    let message = format!(
                        "line {line}: invalid TOML ({}); skipped",
                        e.message().trim()
                    );
                    self.warn(provider, &file.path, Some(&file.content_hash), message);
                    continue;
                }
            };
            let Some(prompt) = parsed.prompt else {
                let message =
                    "no `prompt` field; a Gemini/Qwen command needs one; skipped".to_string();
                self.warn(provider, &file.path, Some(&file.content_hash), message);
                continue;
            };
            // `dir/sub/x.toml` under a root is `/dir:sub:x`.
            let relative = path.strip_prefix(root).unwrap_or(&path).with_extension("");
            let raw_name = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(":");
            let Some(name) = self.name(provider, &file, &raw_name) else {
                continue;
            };
            if prompt.contains("!{") || prompt.contains("@{") {
                let message = "contains !{...} shell or @{...} file injection; cmdlog never runs them, the text is kept as written".to_string();
                self.warn(provider, &file.path, Some(&file.content_hash), message);
            }
            let mut command =
                CommandSpec::new(name, CommandSource::SkillDirCommand, CommandKind::File);
            command.command_type = Some(CommandType::Prompt);
            command.dialect = Some(Dialect::Gemini);
            command.model_invocable = true;
            command.description = describe(parsed.description.as_deref(), &prompt);
            self.found(provider, item, file, command, prompt);
        }
    }
}

fn truthy(v: Option<&String>) -> bool {
    v.is_some_and(|v| matches!(v.trim(), "true" | "yes" | "on" | "1"))
}

/// The spec of a Markdown command file.
fn markdown_spec(
    name: CommandName,
    fields: &std::collections::BTreeMap<String, String>,
    body: &str,
    plugin: Option<&str>,
) -> CommandSpec {
    let field = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| fields.get(*k))
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let (source, label) = match plugin {
        Some(p) => (CommandSource::PluginCommand, format!("Plugin: {p}")),
        None => (CommandSource::SkillDirCommand, "Custom".to_string()),
    };
    let mut command = CommandSpec::new(name, source, CommandKind::File);
    command.source_label = label;
    command.command_type = Some(CommandType::Prompt);
    command.dialect = Some(Dialect::Markdown);
    command.description = describe(field(&["description"]).as_deref(), body);
    command.argument_hint = field(&["argument-hint", "argument_hint"]);
    command.when_to_use = field(&["when_to_use", "when-to-use"]);
    command.model_invocable = plugin.is_none()
        && !truthy(
            fields
                .get("disable-model-invocation")
                .or(fields.get("disable_model_invocation")),
        );
    command.model = field(&["model"]);
    command.allowed_tools = field(&["allowed-tools", "allowed_tools"])
        .map(|v| {
            v.split(',')
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect()
        })
        .unwrap_or_default();
    if truthy(fields.get("attachments")) {
        command.input = Some(InputDescriptor {
            hint: command.argument_hint.clone().unwrap_or_default(),
            attachments: true,
        });
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions() {
        assert_eq!(describe(Some(" Given "), "body"), "Given");
        assert_eq!(describe(None, "\n\n  First line  \nsecond"), "First line");
        assert_eq!(describe(Some("  "), "x"), "x");
        let long = "a".repeat(61);
        assert_eq!(describe(None, &long), format!("{}...", "a".repeat(60)));
        assert_eq!(describe(None, &"é".repeat(60)), "é".repeat(60));
        assert_eq!(describe(None, ""), "");
    }
}
