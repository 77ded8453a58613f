//! Discovery: read the command files people already have, each agent's files as
//! that agent reads them (`docs/dialects.md` is the normative table, with a citation
//! per rule): one module per agent.
//!
//! [`discover`] walks every provider's folders and returns what it found; it
//! writes nothing. [`crate::Engine::sync`] diffs that against the registry's file
//! registrations and appends only the changes.

mod bundled;
mod claude;
mod codex;
mod frontmatter;
mod gemini;
mod native;
mod opencode;
mod plugins;
mod qwen;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::command::{CommandName, CommandSpec};
use crate::event::{Origin, ProviderRef};

pub use bundled::BUNDLED;
pub use frontmatter::FrontmatterError;

/// Where discovery looks.
#[derive(Debug, Clone)]
pub struct DiscoveryConfig {
    /// `~`: the user's home folder.
    pub home: PathBuf,
    /// The workspace (project) folder.
    pub workspace: PathBuf,
    /// Largest command file read; larger ones are skipped with a warning. Default 1 MiB.
    pub file_bytes_max: u64,
    /// Codex's home (`$CODEX_HOME`); `~/.codex` when unset.
    pub codex_home: Option<PathBuf>,
    /// Claude Code's configuration folder (`$CLAUDE_CONFIG_DIR`); `~/.claude` when unset.
    pub claude_config_dir: Option<PathBuf>,
    /// OpenCode's extra configuration folder (`$OPENCODE_CONFIG_DIR`).
    pub opencode_config_dir: Option<PathBuf>,
}

impl DiscoveryConfig {
    /// Discovery of `workspace` for a user whose home is `home`, with the agents'
    /// default folders.
    pub fn new(home: impl Into<PathBuf>, workspace: impl Into<PathBuf>) -> Self {
        DiscoveryConfig {
            home: home.into(),
            workspace: workspace.into(),
            file_bytes_max: 1024 * 1024,
            codex_home: None,
            claude_config_dir: None,
            opencode_config_dir: None,
        }
    }

    /// [`DiscoveryConfig::new`], with the folders the agents take from the
    /// environment: `CODEX_HOME`, `CLAUDE_CONFIG_DIR`, `OPENCODE_CONFIG_DIR`.
    pub fn from_env(home: impl Into<PathBuf>, workspace: impl Into<PathBuf>) -> Self {
        let var = |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        DiscoveryConfig {
            codex_home: var("CODEX_HOME"),
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
            opencode_config_dir: var("OPENCODE_CONFIG_DIR"),
            ..DiscoveryConfig::new(home, workspace)
        }
    }

    /// `~/.claude` or `$CLAUDE_CONFIG_DIR`.
    fn claude_dir(&self) -> PathBuf {
        self.claude_config_dir
            .clone()
            .unwrap_or_else(|| self.home.join(".claude"))
    }

    /// The project folders an agent reads, nearest first: the workspace and each
    /// folder above it up to the repository root (the first holding `.git`), never
    /// the home folder. Without a repository, the workspace alone.
    fn project_dirs(&self) -> Vec<PathBuf> {
        let home = canonical(&self.home);
        let mut dirs = Vec::new();
        let mut at = Some(self.workspace.as_path());
        while let Some(dir) = at {
            if canonical(dir) == home {
                break;
            }
            dirs.push(dir.to_path_buf());
            if dir.join(".git").exists() {
                return dirs;
            }
            at = dir.parent();
        }
        vec![self.workspace.clone()]
    }
}

/// One command found in a file (or bundled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// Provider and precedence (`item` = its place among the provider's folders).
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

/// The providers, in registration order: ties at one priority keep this order
/// (claude-plugins before codex).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProviderId {
    Native,
    Claude,
    ClaudePlugins,
    Codex,
    Gemini,
    Qwen,
    OpenCode,
    Bundled,
}

impl ProviderId {
    fn id(self) -> &'static str {
        match self {
            ProviderId::Native => "native",
            ProviderId::Claude => "claude",
            ProviderId::ClaudePlugins => "claude-plugins",
            ProviderId::Codex => "codex",
            ProviderId::Gemini => "gemini",
            ProviderId::Qwen => "qwen",
            ProviderId::OpenCode => "opencode",
            ProviderId::Bundled => "bundled",
        }
    }

    fn priority(self) -> i32 {
        match self {
            ProviderId::Native => 100,
            ProviderId::Claude => 80,
            ProviderId::ClaudePlugins | ProviderId::Codex => 70,
            ProviderId::Gemini | ProviderId::Qwen => 60,
            ProviderId::OpenCode => 55,
            ProviderId::Bundled => bundled::PRIORITY,
        }
    }

    pub(crate) fn reference(self, level: &str, item: usize) -> ProviderRef {
        ProviderRef {
            id: self.id().into(),
            priority: self.priority(),
            level: level.into(),
            order: self as u32,
            item: item as u32,
        }
    }
}

pub use crate::limits::DESCRIPTION_CHARS_MAX;

/// Frontmatter `description`, else the first non-empty body line, trimmed and cut to
/// 60 characters plus `...` (cmdlog's native rule).
pub fn describe(frontmatter: Option<&str>, body: &str) -> String {
    if let Some(d) = frontmatter.map(str::trim).filter(|d| !d.is_empty()) {
        return d.to_string();
    }
    let line = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    cut(line, DESCRIPTION_CHARS_MAX, DESCRIPTION_CHARS_MAX)
}

/// `text` when it has at most `max` characters, else its first `keep` and `...`.
fn cut(text: &str, max: usize, keep: usize) -> String {
    if text.chars().count() > max {
        format!("{}...", text.chars().take(keep).collect::<String>())
    } else {
        text.to_string()
    }
}

/// The folders discovery reads (existing ones only), and whether each is read
/// recursively: what a daemon watches for hot reload.
pub fn watch_roots(config: &DiscoveryConfig) -> Vec<(PathBuf, bool)> {
    let mut roots = Vec::new();
    roots.extend(native::roots(config));
    roots.extend(claude::roots(config));
    roots.extend(codex::roots(config));
    roots.extend(gemini::roots(config));
    roots.extend(qwen::roots(config));
    roots.extend(opencode::roots(config));
    let mut seen = BTreeSet::new();
    roots.retain(|(p, _)| p.is_dir() && seen.insert(p.clone()));
    roots
}

/// Why `/name` names no command when the user probably meant a command file: the
/// loaded commands it may be a part of (`/frontend:component` for `/component`,
/// `/prompts:review` for `/review`), files of that name discovery skipped (with the
/// reason), and files of that name in an agent's command folder that no agent reads
/// (another extension). Empty when nothing looks meant.
pub fn unknown_command_hints(
    config: &DiscoveryConfig,
    discovery: &Discovery,
    name: &str,
) -> Vec<String> {
    let name = name.trim_start_matches('/').to_lowercase();
    let mut hints = Vec::new();
    for c in &discovery.commands {
        let full = c.command.name.as_str();
        let last = full.rsplit([':', '/', '.']).next().unwrap_or(full);
        if full != name && last == name {
            hints.push(format!(
                "{} is loaded as /{full} ({} names it so); type /{full}",
                c.origin.path, c.provider.id
            ));
        }
    }
    let stem_is = |path: &Path| {
        path.file_stem()
            .is_some_and(|s| s.to_string_lossy().to_lowercase() == name)
    };
    for w in &discovery.warnings {
        let path = Path::new(w.path.split('#').next().unwrap_or(&w.path));
        if stem_is(path) {
            hints.push(format!("{} was not loaded: {}", w.path, w.message));
        }
    }
    let loaded: BTreeSet<&str> = discovery
        .commands
        .iter()
        .map(|c| c.origin.path.as_str())
        .chain(discovery.warnings.iter().map(|w| w.path.as_str()))
        .collect();
    for (root, recursive) in watch_roots(config) {
        let mut walker = ignore::WalkBuilder::new(&root);
        walker.standard_filters(false).follow_links(false);
        if !recursive {
            walker.max_depth(Some(1));
        }
        for entry in walker.build().filter_map(Result::ok) {
            let path = entry.path();
            let shown = path.display().to_string();
            if entry.file_type().is_some_and(|t| t.is_file())
                && stem_is(path)
                && !loaded.contains(shown.as_str())
            {
                hints.push(format!(
                    "{shown} is in a command folder but is not read: its agent reads only {} files there",
                    expected_extension(&root)
                ));
            }
        }
    }
    hints
}

/// The files an agent reads in a command folder, for a hint.
fn expected_extension(root: &Path) -> &'static str {
    let text = root.display().to_string();
    if text.contains(".gemini") {
        ".toml"
    } else if text.contains(".qwen") {
        ".md and .toml"
    } else {
        ".md"
    }
}

/// Parses a command file's frontmatter as native files are read: `Ok((fields,
/// body))`, or the 1-based line and message of the YAML error. Never panics.
pub fn parse_frontmatter(
    text: &str,
) -> Result<(BTreeMap<String, String>, String), FrontmatterError> {
    frontmatter::parse_strict(text).map(|f| (f.fields, f.body))
}

/// A Gemini/Qwen TOML command that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TomlCommandError(String);

/// Parses a Gemini/Qwen TOML command: `Ok((prompt, description))`, or the error.
/// Never panics.
pub fn parse_toml_command(
    text: &str,
) -> Result<(Option<String>, Option<String>), TomlCommandError> {
    #[derive(Deserialize)]
    struct TomlCommand {
        prompt: Option<String>,
        description: Option<String>,
    }
    toml::from_str::<TomlCommand>(text)
        .map(|c| (c.prompt, c.description))
        .map_err(|e| TomlCommandError(e.message().to_string()))
}

/// Reads every provider. Provider failures are isolated (a warning, and the others
/// still load); only a native file's broken frontmatter is fatal.
pub fn discover(config: &DiscoveryConfig) -> Result<Discovery, DiscoveryError> {
    let mut pass = Pass {
        config,
        out: Discovery::default(),
        project_dirs: config.project_dirs(),
    };
    native::discover(&mut pass)?;
    claude::discover(&mut pass);
    plugins::discover(&mut pass);
    codex::discover(&mut pass);
    gemini::discover(&mut pass);
    qwen::discover(&mut pass);
    opencode::discover(&mut pass);
    for (item, b) in BUNDLED.iter().enumerate() {
        pass.out.commands.push(bundled::discovered(
            b,
            ProviderId::Bundled.reference("bundled", item),
        ));
    }
    Ok(pass.out)
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// How a provider walks its folders.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Walk {
    /// Into sub-folders.
    pub(crate) recursive: bool,
    /// Hidden files and folders too.
    pub(crate) hidden: bool,
    /// Skip what `.gitignore` files ignore.
    pub(crate) gitignore: bool,
    /// The file extension, and whether it matches in any case (`.MD`).
    pub(crate) extension: &'static str,
    pub(crate) any_case: bool,
}

/// A file read for discovery.
pub(crate) struct FileText {
    pub(crate) path: String,
    pub(crate) content_hash: String,
    pub(crate) text: String,
}

/// One discovery pass: what was found so far.
pub(crate) struct Pass<'a> {
    pub(crate) config: &'a DiscoveryConfig,
    pub(crate) out: Discovery,
    /// [`DiscoveryConfig::project_dirs`], looked up once per pass (each lookup
    /// resolves every folder up to the repository root).
    pub(crate) project_dirs: Vec<PathBuf>,
}

impl Pass<'_> {
    pub(crate) fn warn(
        &mut self,
        provider: ProviderId,
        path: &str,
        content_hash: Option<&str>,
        message: String,
    ) {
        self.out.warnings.push(Warning {
            provider: provider.id().into(),
            path: path.into(),
            content_hash: content_hash.map(str::to_string),
            message,
        });
    }

    pub(crate) fn found(
        &mut self,
        provider: ProviderRef,
        origin: Origin,
        command: CommandSpec,
        template: String,
    ) {
        self.out.commands.push(Discovered {
            provider,
            origin,
            command,
            template,
        });
    }

    /// The files under `root` the walk wants, sorted by path. A `root` that is itself
    /// a symlink is followed (as the agents do: people keep their command folders in
    /// dotfile repositories); inside it, a symlinked file is read only when it
    /// resolves to a file inside the same root, and symlinked folders are not entered.
    pub(crate) fn files(&mut self, provider: ProviderId, root: &Path, walk: Walk) -> Vec<PathBuf> {
        if !root.is_dir() {
            return Vec::new();
        }
        let root_real = canonical(root);
        let mut walker = ignore::WalkBuilder::new(root);
        walker
            .hidden(!walk.hidden)
            .ignore(false)
            .git_ignore(walk.gitignore)
            .require_git(false)
            .git_global(false)
            .git_exclude(false)
            .parents(walk.gitignore)
            .follow_links(false)
            .sort_by_file_name(|a, b| a.cmp(b));
        if !walk.recursive {
            walker.max_depth(Some(1));
        }
        let wanted = |p: &Path| {
            p.extension().is_some_and(|x| {
                let x = x.to_string_lossy();
                if walk.any_case {
                    x.eq_ignore_ascii_case(walk.extension)
                } else {
                    x == walk.extension
                }
            })
        };
        let mut files = Vec::new();
        for entry in walker.build() {
            match entry {
                Ok(e) => {
                    let kind = e.file_type();
                    if !wanted(e.path()) {
                        continue;
                    }
                    if kind.is_some_and(|t| t.is_file()) {
                        files.push(e.into_path());
                    } else if kind.is_some_and(|t| t.is_symlink()) {
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

    /// A command file's text: regular files of at most `file_bytes_max`, UTF-8.
    pub(crate) fn read(&mut self, provider: ProviderId, path: &Path) -> Option<FileText> {
        let shown = path.display().to_string();
        let max = self.config.file_bytes_max;
        let bytes = match std::fs::metadata(path) {
            Ok(m) if !m.is_file() => {
                self.warn(provider, &shown, None, "not a regular file; skipped".into());
                return None;
            }
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

    /// `raw` as a command name (lowercased), or a warning naming the file.
    pub(crate) fn name(
        &mut self,
        provider: ProviderId,
        file: &FileText,
        raw: &str,
    ) -> Option<CommandName> {
        match CommandName::new(raw.to_lowercase()) {
            Ok(n) => Some(n),
            Err(e) => {
                let message = format!("{e}; rename the file (or its `name`) to use it");
                self.warn(provider, &file.path, Some(&file.content_hash), message);
                None
            }
        }
    }

    /// Whether `name` is already taken by a command this provider found.
    pub(crate) fn taken(&self, provider: ProviderId, name: &str) -> bool {
        self.out
            .commands
            .iter()
            .any(|c| c.provider.id == provider.id() && c.command.answers_to(name))
    }
}

/// The path of `file` under `root`, without its extension, as name segments.
pub(crate) fn segments(root: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(root).unwrap_or(file).with_extension("");
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect()
}

/// Whether a frontmatter value says yes (`true`, `yes`, `on`, `1`, any case).
pub(crate) fn truthy(v: Option<&String>) -> bool {
    v.is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "true" | "yes" | "on" | "1"
        )
    })
}

/// A list field: a YAML list (joined with `,` by the parser) or words separated by
/// spaces or commas, outside parentheses (`Bash(git status:*)` is one item).
pub(crate) fn list(v: Option<&String>) -> Vec<String> {
    let Some(v) = v else {
        return Vec::new();
    };
    let mut items = Vec::new();
    let mut item = String::new();
    let mut depth = 0usize;
    for c in v.chars() {
        match c {
            '(' => {
                depth += 1;
                item.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                item.push(c);
            }
            ',' | ' ' | '\t' if depth == 0 => {
                if !item.trim().is_empty() {
                    items.push(item.trim().to_string());
                }
                item.clear();
            }
            c => item.push(c),
        }
    }
    if !item.trim().is_empty() {
        items.push(item.trim().to_string());
    }
    items
}

/// Every field not mapped elsewhere, kept as the agent gave it.
pub(crate) fn metadata(
    fields: &BTreeMap<String, String>,
    mapped: &[&str],
) -> BTreeMap<String, serde_json::Value> {
    fields
        .iter()
        .filter(|(k, _)| !mapped.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect()
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
