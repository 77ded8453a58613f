//! Gemini CLI's TOML commands (google-gemini/gemini-cli `docs/cli/custom-commands.md`,
//! `docs/extensions/reference.md`; `packages/cli/src/services/FileCommandLoader.ts`):
//! `~/.gemini/commands/**/*.toml`, `<project>/.gemini/commands/**/*.toml` and each
//! enabled extension's `commands/` (`~/.gemini/extensions/<ext>/`), dot-files
//! included. `git/commit.toml` is `/git:commit`; characters outside
//! `[A-Za-z0-9_.-]` become `_`. A project command wins over a user command, and an
//! extension command that collides is renamed `/<extension>.<name>`. The model
//! cannot invoke them.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::command::{CommandKind, CommandSource, CommandSpec, CommandType, Dialect};
use crate::event::Origin;

use super::{DiscoveryConfig, FileText, Pass, ProviderId, Walk, canonical, cut, segments};

pub(super) const WALK: Walk = Walk {
    recursive: true,
    hidden: true,
    gitignore: false,
    extension: "toml",
    any_case: false,
};

/// A folder of TOML (or Markdown) commands and where it stands.
pub(super) struct CommandRoot {
    pub(super) path: PathBuf,
    pub(super) level: &'static str,
    /// The extension it belongs to, if any.
    pub(super) extension: Option<String>,
}

pub(super) fn roots(config: &DiscoveryConfig) -> Vec<(PathBuf, bool)> {
    command_roots(config)
        .into_iter()
        .map(|r| (r.path, true))
        .collect()
}

/// Project first (it wins), then the user's, then enabled extensions by name; the
/// project folder is skipped when the workspace is the home folder.
fn command_roots(config: &DiscoveryConfig) -> Vec<CommandRoot> {
    let mut roots = Vec::new();
    if canonical(&config.workspace) != canonical(&config.home) {
        roots.push(CommandRoot {
            path: config.workspace.join(".gemini/commands"),
            level: "project",
            extension: None,
        });
    }
    roots.push(CommandRoot {
        path: config.home.join(".gemini/commands"),
        level: "user",
        extension: None,
    });
    for (name, dir) in extensions(config) {
        roots.push(CommandRoot {
            path: dir.join("commands"),
            level: "extension",
            extension: Some(name),
        });
    }
    roots
}

/// Installed and enabled Gemini CLI extensions, by name.
fn extensions(config: &DiscoveryConfig) -> Vec<(String, PathBuf)> {
    let base = config.home.join(".gemini/extensions");
    let Ok(entries) = std::fs::read_dir(&base) else {
        return Vec::new();
    };
    let enablement: serde_json::Value =
        std::fs::read_to_string(base.join("extension-enablement.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
    let mut found = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let dir = entry.path();
        let Ok(text) = std::fs::read_to_string(dir.join("gemini-extension.json")) else {
            continue;
        };
        let name = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|m| m.get("name").and_then(|n| n.as_str()).map(str::to_string))
            .unwrap_or_else(|| entry.file_name().to_string_lossy().into_owned());
        if enabled(&enablement, &name, &config.workspace) {
            found.push((name, dir));
        }
    }
    found.sort();
    found
}

/// An extension is enabled unless `extension-enablement.json`'s `overrides` for it
/// say otherwise for this workspace: each rule is a path (with a trailing `*` for
/// everything under it), `!` first to disable; the last matching rule wins.
fn enabled(enablement: &serde_json::Value, name: &str, workspace: &Path) -> bool {
    let Some(rules) = enablement
        .get(name)
        .and_then(|e| e.get("overrides"))
        .and_then(|o| o.as_array())
    else {
        return true;
    };
    let here = format!("{}/", canonical(workspace).display());
    let mut on = true;
    for rule in rules.iter().filter_map(|r| r.as_str()) {
        let (disable, path) = match rule.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, rule),
        };
        let matches = match path.strip_suffix('*') {
            Some(prefix) => here.starts_with(prefix),
            None => here.trim_end_matches('/') == path.trim_end_matches('/'),
        };
        if matches {
            on = !disable;
        }
    }
    on
}

/// Gemini CLI's name for a path segment: characters outside `[A-Za-z0-9_.-]` become
/// `_` (one per UTF-16 unit), and a segment over 50 characters is cut to 47 and `...`.
pub(super) fn sanitize_segment(segment: &str) -> String {
    let mut out = String::new();
    for c in segment.chars() {
        if c.is_ascii_alphanumeric() || "_-.".contains(c) {
            out.push(c);
        } else {
            out.push_str(&"_".repeat(c.len_utf16()));
        }
    }
    cut(&out, 50, 47)
}

#[derive(Deserialize)]
struct TomlCommand {
    prompt: Option<toml::Value>,
    description: Option<toml::Value>,
}

/// A TOML command's prompt and description, or the warning it gets.
pub(super) fn parse_toml(file: &FileText) -> Result<(String, Option<String>), String> {
    let parsed: TomlCommand = toml::from_str(&file.text).map_err(|e| {
        let line = e
            .span()
            .map_or(1, |span| file.text[..span.start].matches('\n').count() + 1);
        format!(
            "line {line}: invalid TOML ({}); skipped",
            e.message().trim()
        )
    })?;
    let prompt = match parsed.prompt {
        Some(toml::Value::String(p)) => p,
        Some(_) => return Err("the 'prompt' field must be a string; skipped".into()),
        None => return Err("the 'prompt' field is required; skipped".into()),
    };
    let description = match parsed.description {
        Some(toml::Value::String(d)) => Some(d),
        Some(_) => return Err("the 'description' field must be a string; skipped".into()),
        None => None,
    };
    Ok((prompt, description))
}

/// Gemini CLI's description: the given one or `Custom command from <file>`, control
/// characters dropped, whitespace collapsed, cut to 97 and `...` past 100;
/// `[extension] ` first for an extension's command.
pub(super) fn description(given: Option<&str>, path: &Path, extension: Option<&str>) -> String {
    let text = match given.filter(|d| !d.is_empty()) {
        Some(d) => d.to_string(),
        None => format!(
            "Custom command from {}",
            path.file_name().unwrap_or_default().to_string_lossy()
        ),
    };
    let text: String = text
        .chars()
        .filter(|c| !c.is_control() || c.is_whitespace())
        .collect();
    let text = cut(
        &text.split_whitespace().collect::<Vec<_>>().join(" "),
        100,
        97,
    );
    match extension {
        Some(ext) => format!("[{ext}] {text}"),
        None => text,
    }
}

/// `name`, or when a project or user command (or an earlier extension) took it,
/// `<extension>.<name>` (then a number after it).
pub(super) fn extension_name(
    pass: &Pass<'_>,
    provider: ProviderId,
    extension: &str,
    name: &str,
) -> String {
    if !pass.taken(provider, name) {
        return name.to_string();
    }
    let renamed = format!("{}.{name}", extension.to_lowercase());
    let mut candidate = renamed.clone();
    let mut n = 1;
    while pass.taken(provider, &candidate) {
        candidate = format!("{renamed}{n}");
        n += 1;
    }
    candidate
}

pub(super) fn discover(pass: &mut Pass<'_>) {
    let provider = ProviderId::Gemini;
    for (item, root) in command_roots(pass.config).into_iter().enumerate() {
        for path in pass.files(provider, &root.path, WALK) {
            let Some(file) = pass.read(provider, &path) else {
                continue;
            };
            let (prompt, given) = match parse_toml(&file) {
                Ok(p) => p,
                Err(message) => {
                    pass.warn(provider, &file.path, Some(&file.content_hash), message);
                    continue;
                }
            };
            let base = segments(&root.path, &path)
                .iter()
                .map(|s| sanitize_segment(s))
                .collect::<Vec<_>>()
                .join(":")
                .to_lowercase();
            // The project's command of a name wins over the user's (an earlier item).
            let raw = match &root.extension {
                Some(ext) => extension_name(pass, provider, ext, &base),
                None => base,
            };
            let Some(name) = pass.name(provider, &file, &raw) else {
                continue;
            };
            let mut command =
                CommandSpec::new(name, CommandSource::SkillDirCommand, CommandKind::File);
            command.source_label = match &root.extension {
                Some(ext) => format!("Extension: {ext}"),
                None => "Custom".into(),
            };
            command.command_type = Some(CommandType::Prompt);
            command.dialect = Some(Dialect::GeminiCli);
            command.description = description(given.as_deref(), &path, root.extension.as_deref());
            let origin = Origin {
                path: file.path,
                content_hash: file.content_hash,
            };
            pass.found(
                provider.reference(root.level, item),
                origin,
                command,
                prompt,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_gemini_cli_makes_them() {
        assert_eq!(sanitize_segment("Commit Msg:v2"), "Commit_Msg_v2");
        assert_eq!(sanitize_segment("café"), "caf_");
        assert_eq!(sanitize_segment("a😀"), "a__");
        assert_eq!(
            sanitize_segment(&"x".repeat(60)),
            format!("{}...", "x".repeat(47))
        );
    }
}
