//! Qwen Code's commands (QwenLM/qwen-code `docs/users/features/commands.md`,
//! `docs/users/extension/introduction.md`; `packages/cli/src/services/
//! FileCommandLoader.ts`, `command-factory.ts`): Markdown (recommended) and TOML
//! (deprecated) files under `~/.qwen/commands/`, `<project>/.qwen/commands/` and
//! each extension's command folders, recursive. `git/commit.md` is `/git:commit`
//! (a `:` inside a segment becomes `_`); a Markdown file wins over a TOML file of
//! the same name, a project command over a user command, and an extension command
//! that collides is renamed `/<extension>.<name>`. User and project commands are
//! model-invocable unless `disable-model-invocation`; an extension's only with a
//! description or `when_to_use` of its own.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::command::{CommandKind, CommandSource, CommandSpec, CommandType, Dialect};
use crate::event::Origin;

use super::gemini::{CommandRoot, description, extension_name, parse_toml};
use super::{DiscoveryConfig, Pass, ProviderId, Walk, frontmatter, metadata, segments, truthy};

const MARKDOWN: Walk = Walk {
    recursive: true,
    hidden: true,
    gitignore: false,
    extension: "md",
    any_case: false,
};

const TOML: Walk = Walk {
    extension: "toml",
    ..MARKDOWN
};

pub(super) fn roots(config: &DiscoveryConfig) -> Vec<(PathBuf, bool)> {
    command_roots(config)
        .into_iter()
        .map(|r| (r.path, true))
        .collect()
}

/// Project first, then the user's, then extensions by name.
fn command_roots(config: &DiscoveryConfig) -> Vec<CommandRoot> {
    let mut roots = vec![
        CommandRoot {
            path: config.workspace.join(".qwen/commands"),
            level: "project",
            extension: None,
        },
        CommandRoot {
            path: config.home.join(".qwen/commands"),
            level: "user",
            extension: None,
        },
    ];
    let base = config.home.join(".qwen/extensions");
    let mut extensions = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&base) {
        for entry in entries.filter_map(Result::ok) {
            let dir = entry.path();
            let Ok(text) = std::fs::read_to_string(dir.join("qwen-extension.json")) else {
                continue;
            };
            let manifest: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            let name = manifest
                .get("displayName")
                .or(manifest.get("name"))
                .and_then(|n| n.as_str())
                .map(str::to_string)
                .unwrap_or_else(|| entry.file_name().to_string_lossy().into_owned());
            let folders: Vec<PathBuf> = match manifest.get("commands") {
                Some(serde_json::Value::String(p)) => vec![dir.join(p)],
                Some(serde_json::Value::Array(list)) => list
                    .iter()
                    .filter_map(|p| p.as_str())
                    .map(|p| dir.join(p))
                    .collect(),
                _ => vec![dir.join("commands")],
            };
            for folder in folders.into_iter().filter(|f| f.is_dir()) {
                extensions.push((name.clone(), folder));
            }
        }
    }
    extensions.sort();
    roots.extend(extensions.into_iter().map(|(name, path)| CommandRoot {
        path,
        level: "extension",
        extension: Some(name),
    }));
    roots
}

pub(super) fn discover(pass: &mut Pass<'_>) {
    let provider = ProviderId::Qwen;
    for (item, root) in command_roots(pass.config).into_iter().enumerate() {
        // Markdown first: it wins over a TOML file of the same name.
        let mut files: Vec<(PathBuf, bool)> = pass
            .files(provider, &root.path, MARKDOWN)
            .into_iter()
            .map(|p| (p, true))
            .collect();
        let markdown_names: Vec<PathBuf> =
            files.iter().map(|(p, _)| p.with_extension("")).collect();
        for path in pass.files(provider, &root.path, TOML) {
            if markdown_names.contains(&path.with_extension("")) {
                continue;
            }
            files.push((path, false));
        }
        for (path, markdown) in files {
            let Some(file) = pass.read(provider, &path) else {
                continue;
            };
            let (template, fields) = if markdown {
                let text = file.text.replace("\r\n", "\n");
                let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
                match frontmatter::parse_agent(text) {
                    Ok(fm) => (fm.body.trim().to_string(), fm.fields),
                    Err(e) => {
                        let message = format!(
                            "line {}: invalid frontmatter ({}); skipped, as Qwen Code skips it",
                            e.line, e.message
                        );
                        pass.warn(provider, &file.path, Some(&file.content_hash), message);
                        continue;
                    }
                }
            } else {
                match parse_toml(&file) {
                    Ok((prompt, description)) => {
                        let mut fields = BTreeMap::new();
                        if let Some(d) = description {
                            fields.insert("description".to_string(), d);
                        }
                        (prompt, fields)
                    }
                    Err(message) => {
                        pass.warn(provider, &file.path, Some(&file.content_hash), message);
                        continue;
                    }
                }
            };
            let base = segments(&root.path, &path)
                .iter()
                .map(|s| s.replace(':', "_"))
                .collect::<Vec<_>>()
                .join(":")
                .to_lowercase();
            let raw = match &root.extension {
                Some(ext) => extension_name(pass, provider, ext, &base),
                None => base,
            };
            let Some(name) = pass.name(provider, &file, &raw) else {
                continue;
            };
            let given = fields
                .get("description")
                .map(|d| d.trim().to_string())
                .filter(|d| !d.is_empty());
            let when_to_use = fields
                .get("when_to_use")
                .map(|d| d.trim().to_string())
                .filter(|d| !d.is_empty());
            let mut command =
                CommandSpec::new(name, CommandSource::SkillDirCommand, CommandKind::File);
            command.source_label = match &root.extension {
                Some(ext) => format!("Extension: {ext}"),
                None => "Custom".into(),
            };
            command.command_type = Some(CommandType::Prompt);
            command.dialect = Some(if markdown {
                Dialect::QwenMarkdown
            } else {
                Dialect::QwenToml
            });
            command.description = description(given.as_deref(), &path, root.extension.as_deref());
            command.argument_hint = fields
                .get("argument-hint")
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty());
            command.model_invocable = !truthy(fields.get("disable-model-invocation"))
                && (root.extension.is_none() || given.is_some() || when_to_use.is_some());
            command.when_to_use = when_to_use;
            command.metadata = metadata(&fields, &["description", "argument-hint", "when_to_use"]);
            let origin = Origin {
                path: file.path,
                content_hash: file.content_hash,
            };
            pass.found(
                provider.reference(root.level, item),
                origin,
                command,
                template,
            );
        }
    }
}
