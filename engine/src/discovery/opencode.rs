//! OpenCode commands (opencode.ai/docs/commands; `packages/opencode/src/config/
//! config.ts` `loadCommand`): `{command,commands}/**/*.md` under each configuration
//! folder — `$OPENCODE_CONFIG_DIR`, `~/.opencode`, every `.opencode` from the
//! workspace up to the repository root, `~/.config/opencode` — the sub-path is part
//! of the name (`team/review.md` is `/team/review`) and a frontmatter `name` replaces
//! it; and the `command` (or `commands`) object of `opencode.json{,c}`. A Markdown
//! command wins over a JSON one; a project command over a global one. The frontmatter
//! `agent`, `model` and `subtask` are kept. The model cannot invoke them.

use std::path::{Path, PathBuf};

use crate::command::{CommandKind, CommandSource, CommandSpec, CommandType, Dialect};
use crate::event::Origin;

use super::{DiscoveryConfig, Pass, ProviderId, Walk, frontmatter, metadata};

const WALK: Walk = Walk {
    recursive: true,
    hidden: true,
    gitignore: false,
    extension: "md",
    any_case: false,
};

/// The configuration folders, the one that wins first, with their level.
fn config_dirs(config: &DiscoveryConfig, projects: &[PathBuf]) -> Vec<(PathBuf, &'static str)> {
    let mut dirs = Vec::new();
    if let Some(dir) = &config.opencode_config_dir {
        dirs.push((dir.clone(), "user"));
    }
    dirs.push((config.home.join(".opencode"), "user"));
    // OpenCode merges the project folders nearest first, so the farthest wins.
    for dir in projects.iter().rev() {
        dirs.push((dir.join(".opencode"), "project"));
    }
    dirs.push((config.home.join(".config/opencode"), "user"));
    dirs
}

pub(super) fn roots(config: &DiscoveryConfig) -> Vec<(PathBuf, bool)> {
    config_dirs(config, &config.project_dirs())
        .into_iter()
        .flat_map(|(dir, _)| [(dir.join("command"), true), (dir.join("commands"), true)])
        .collect()
}

/// `opencode.json` and `opencode.jsonc` files, the one that wins first.
fn json_files(config: &DiscoveryConfig, projects: &[PathBuf]) -> Vec<(PathBuf, &'static str)> {
    let mut files = Vec::new();
    for (dir, level) in config_dirs(config, projects) {
        for name in ["opencode.json", "opencode.jsonc"] {
            files.push((dir.join(name), level));
        }
    }
    for dir in projects {
        for name in ["opencode.json", "opencode.jsonc"] {
            files.push((dir.join(name), "project"));
        }
    }
    files
}

fn spec_fields(command: &mut CommandSpec, fields: &std::collections::BTreeMap<String, String>) {
    command.command_type = Some(CommandType::Prompt);
    command.dialect = Some(Dialect::OpenCode);
    command.source_label = "Custom".into();
    command.description = fields
        .get("description")
        .map(|d| d.trim().to_string())
        .unwrap_or_default();
    command.model = fields
        .get("model")
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty());
    command.metadata = metadata(fields, &["description", "name", "template"]);
}

pub(super) fn discover(pass: &mut Pass<'_>) {
    let provider = ProviderId::OpenCode;
    let mut item = 0;
    for (dir, level) in config_dirs(pass.config, &pass.project_dirs) {
        for sub in ["command", "commands"] {
            let root = dir.join(sub);
            for path in pass.files(provider, &root, WALK) {
                let Some(file) = pass.read(provider, &path) else {
                    continue;
                };
                let (fm, error) = frontmatter::parse_lenient(&file.text);
                if let Some(e) = error {
                    let message = format!(
                        "line {}: invalid frontmatter ({}); read it as `key: value` lines instead",
                        e.line, e.message
                    );
                    pass.warn(provider, &file.path, Some(&file.content_hash), message);
                }
                let relative = path
                    .strip_prefix(&root)
                    .unwrap_or(&path)
                    .with_extension("")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                let raw = fm
                    .fields
                    .get("name")
                    .map(|n| n.trim().to_string())
                    .filter(|n| !n.is_empty())
                    .unwrap_or(relative);
                let Some(name) = pass.name(provider, &file, &raw) else {
                    continue;
                };
                let mut command =
                    CommandSpec::new(name, CommandSource::SkillDirCommand, CommandKind::File);
                spec_fields(&mut command, &fm.fields);
                let origin = Origin {
                    path: file.path,
                    content_hash: file.content_hash,
                };
                pass.found(
                    provider.reference(level, item),
                    origin,
                    command,
                    fm.body.trim().to_string(),
                );
            }
            item += 1;
        }
    }
    for (path, level) in json_files(pass.config, &pass.project_dirs) {
        read_json(pass, &path, level, item);
        item += 1;
    }
}

/// The `command` (or `commands`) object of one `opencode.json{,c}`: each entry is a
/// command with a `template` and optional `description`, `agent`, `model`, `subtask`.
fn read_json(pass: &mut Pass<'_>, path: &Path, level: &str, item: usize) {
    let provider = ProviderId::OpenCode;
    if !path.is_file() {
        return;
    }
    let Some(file) = pass.read(provider, path) else {
        return;
    };
    let value: serde_json::Value =
        match jsonc_parser::parse_to_serde_value(&file.text, &Default::default()) {
            Ok(v) => v,
            Err(e) => {
                let message = format!("not valid JSON ({e}); its commands are skipped");
                pass.warn(provider, &file.path, Some(&file.content_hash), message);
                return;
            }
        };
    let mut entries: Vec<(String, serde_json::Value)> = Vec::new();
    for key in ["commands", "command"] {
        if let Some(map) = value.get(key).and_then(|v| v.as_object()) {
            for (name, entry) in map {
                // `command` wins when both name one.
                entries.retain(|(n, _)| n != name);
                entries.push((name.clone(), entry.clone()));
            }
        }
    }
    for (raw, entry) in entries {
        let shown = format!("{}#command/{raw}", file.path);
        let Some(template) = entry.get("template").and_then(|t| t.as_str()) else {
            let message = format!("command {raw:?} has no `template` string; skipped");
            pass.warn(provider, &shown, Some(&file.content_hash), message);
            continue;
        };
        let Ok(name) = crate::command::CommandName::new(raw.to_lowercase()) else {
            let message = format!("command {raw:?} is not a name cmdlog can register; skipped");
            pass.warn(provider, &shown, Some(&file.content_hash), message);
            continue;
        };
        let fields: std::collections::BTreeMap<String, String> = entry
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        let text = v
                            .as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| v.to_string());
                        (k.clone(), text)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut command = CommandSpec::new(name, CommandSource::SkillDirCommand, CommandKind::File);
        spec_fields(&mut command, &fields);
        let origin = Origin {
            path: shown,
            content_hash: file.content_hash.clone(),
        };
        pass.found(
            provider.reference(level, item),
            origin,
            command,
            template.trim().to_string(),
        );
    }
}
