//! Claude Code's commands and skills (code.claude.com/docs/en/skills; the
//! "Commands" page; CHANGELOG 1.0.45, 2.1.3): `.claude/commands/**/*.md` (a
//! sub-folder is a namespace: `frontend/component.md` is `/frontend:component`),
//! `.claude/skills/<name>/SKILL.md`, in the user's folder (`~/.claude` or
//! `$CLAUDE_CONFIG_DIR`) and in the project folders from the workspace up to the
//! repository root. A personal command or skill beats a project one of the same
//! name, and a skill beats a command.

use std::path::{Path, PathBuf};

use crate::command::{
    CommandKind, CommandName, CommandSource, CommandSpec, CommandType, Dialect, InputDescriptor,
};
use crate::event::Origin;

use super::frontmatter::{self, Frontmatter};
use super::{
    DiscoveryConfig, FileText, Pass, ProviderId, Walk, cut, list, metadata, segments, truthy,
};

/// How Claude Code reads command folders: recursive, hidden files included,
/// `.gitignore` not consulted, lower-case `.md` only.
pub(super) const WALK: Walk = Walk {
    recursive: true,
    hidden: true,
    gitignore: false,
    extension: "md",
    any_case: false,
};

/// The fields mapped to the command spec; the others are kept as metadata.
const MAPPED: [&str; 4] = ["description", "argument-hint", "arguments", "when_to_use"];

pub(super) fn roots(config: &DiscoveryConfig) -> Vec<(PathBuf, bool)> {
    let user = config.claude_dir();
    let mut roots = vec![(user.join("skills"), true), (user.join("commands"), true)];
    for dir in config.project_dirs() {
        roots.push((dir.join(".claude/skills"), true));
        roots.push((dir.join(".claude/commands"), true));
    }
    roots.push((user.join("plugins"), false));
    roots
}

pub(super) fn discover(pass: &mut Pass<'_>) {
    let user = pass.config.claude_dir();
    let projects = pass.project_dirs.clone();
    let mut item = 0;
    // Skills first (any skill beats any command), then commands; personal first.
    let mut skill_roots = vec![("user", user.join("skills"))];
    skill_roots.extend(
        projects
            .iter()
            .map(|d| ("project", d.join(".claude/skills"))),
    );
    for (level, root) in &skill_roots {
        for (dir, name) in skill_dirs(root) {
            if let Some(found) = read_skill(pass, &dir, &name, None) {
                let (command, template, origin) = found;
                pass.found(
                    ProviderId::Claude.reference(level, item),
                    origin,
                    command,
                    template,
                );
            }
        }
        item += 1;
    }
    let mut command_roots = vec![("user", user.join("commands"))];
    command_roots.extend(
        projects
            .iter()
            .map(|d| ("project", d.join(".claude/commands"))),
    );
    for (level, root) in &command_roots {
        for (command, template, origin) in read_commands(pass, ProviderId::Claude, root, None) {
            pass.found(
                ProviderId::Claude.reference(level, item),
                origin,
                command,
                template,
            );
        }
        item += 1;
    }
}

/// The entries `<root>/<name>/SKILL.md` (one level only; an entry may be a link to a
/// folder), sorted by name.
pub(super) fn skill_dirs(root: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<(PathBuf, String)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().join("SKILL.md").is_file())
        .map(|e| (e.path(), e.file_name().to_string_lossy().into_owned()))
        .collect();
    dirs.sort();
    dirs
}

/// Reads a command folder: every `.md` file is a command named by its path, folders
/// joined with `:`; a folder holding a `SKILL.md` is one command named after the
/// folder (its other files are not commands). `plugin` names a plugin's commands
/// `plugin:…`.
pub(super) fn read_commands(
    pass: &mut Pass<'_>,
    provider: ProviderId,
    root: &Path,
    plugin: Option<&Plugin>,
) -> Vec<(CommandSpec, String, Origin)> {
    let files = pass.files(provider, root, WALK);
    let skill_folders: Vec<PathBuf> = files
        .iter()
        .filter(|f| {
            f.file_name()
                .is_some_and(|n| n.eq_ignore_ascii_case("SKILL.md"))
        })
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .filter(|d| d != root)
        .collect();
    let mut out = Vec::new();
    for path in files {
        if let Some(folder) = skill_folders.iter().find(|d| path.starts_with(d)) {
            if path.parent() == Some(folder.as_path())
                && path
                    .file_name()
                    .is_some_and(|n| n.eq_ignore_ascii_case("SKILL.md"))
            {
                let mut segs = segments(root, folder);
                let last = segs.pop().unwrap_or_default();
                if let Some(found) =
                    read_skill(pass, folder, &last, plugin.map(|p| (p, segs.clone())))
                {
                    out.push(found);
                }
            }
            continue;
        }
        let Some(file) = pass.read(provider, &path) else {
            continue;
        };
        let mut segs = segments(root, &path);
        if let Some(p) = plugin {
            segs.insert(0, p.name.clone());
        }
        let Some(name) = pass.name(provider, &file, &segs.join(":")) else {
            continue;
        };
        let fm = lenient(pass, provider, &file);
        let kind = match plugin {
            Some(_) => Item::PluginCommand,
            None => Item::Command,
        };
        let (command, template) = spec(name, &fm, kind, plugin, None);
        out.push((command, template, origin(file)));
    }
    out
}

/// Reads `<dir>/SKILL.md` as the skill `name` (a plugin's: `plugin:…`, with the
/// frontmatter `name` when set; a personal or project skill keeps its folder name).
pub(super) fn read_skill(
    pass: &mut Pass<'_>,
    dir: &Path,
    name: &str,
    plugin: Option<(&Plugin, Vec<String>)>,
) -> Option<(CommandSpec, String, Origin)> {
    let provider = match plugin {
        Some(_) => ProviderId::ClaudePlugins,
        None => ProviderId::Claude,
    };
    let file = pass.read(provider, &dir.join("SKILL.md"))?;
    let fm = lenient(pass, provider, &file);
    let given = fm
        .fields
        .get("name")
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty());
    let full = match &plugin {
        Some((p, namespace)) => {
            let mut segs = vec![p.name.clone()];
            segs.extend(namespace.iter().cloned());
            segs.push(given.clone().unwrap_or_else(|| name.to_string()));
            segs.join(":")
        }
        None => name.to_string(),
    };
    let name = pass.name(provider, &file, &full)?;
    let kind = match plugin {
        Some(_) => Item::PluginSkill,
        None => Item::Skill,
    };
    let (mut command, template) =
        spec(name, &fm, kind, plugin.as_ref().map(|(p, _)| *p), Some(dir));
    // A plugin skill with a `name` answers to the bare name too, when it is free.
    if let (Some(_), Some(bare)) = (&plugin, given)
        && let Ok(bare) = CommandName::new(bare.to_lowercase())
        && bare != command.name
    {
        command.alt_names.push(bare);
    }
    Some((command, template, origin(file)))
}

/// What a Claude plugin brings to its commands.
#[derive(Debug, Clone)]
pub(super) struct Plugin {
    /// The plugin's name: the namespace of its commands.
    pub(super) name: String,
    /// `${CLAUDE_PLUGIN_ROOT}`.
    pub(super) root: PathBuf,
    /// `${CLAUDE_PLUGIN_DATA}`.
    pub(super) data: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    Command,
    Skill,
    PluginCommand,
    PluginSkill,
}

fn lenient(pass: &mut Pass<'_>, provider: ProviderId, file: &FileText) -> Frontmatter {
    let (fm, error) = frontmatter::parse_lenient(&file.text);
    if let Some(e) = error {
        let message = format!(
            "line {}: invalid frontmatter ({}); read it as `key: value` lines instead, as Claude Code loads such a file with what it can read",
            e.line, e.message
        );
        pass.warn(provider, &file.path, Some(&file.content_hash), message);
    }
    fm
}

fn origin(file: FileText) -> Origin {
    Origin {
        path: file.path,
        content_hash: file.content_hash,
    }
}

/// Claude Code's fallback description: the first non-empty body line, without a
/// leading Markdown heading marker, cut to 97 characters and `...` past 100.
pub(super) fn fallback_description(body: &str) -> String {
    let line = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let line = line.trim_start_matches('#').trim();
    cut(line, 100, 97)
}

fn kind_is_skill(item: Item) -> bool {
    matches!(item, Item::Skill | Item::PluginSkill)
}

fn spec(
    name: CommandName,
    fm: &Frontmatter,
    item: Item,
    plugin: Option<&Plugin>,
    skill_dir: Option<&Path>,
) -> (CommandSpec, String) {
    let field = |key: &str| {
        fm.fields
            .get(key)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let (source, kind, label) = match (item, plugin) {
        (Item::Command, _) => (
            CommandSource::SkillDirCommand,
            CommandKind::File,
            "Custom".to_string(),
        ),
        (Item::Skill, _) => (
            CommandSource::SkillDirCommand,
            CommandKind::Skill,
            "Skill".to_string(),
        ),
        (Item::PluginCommand, p) => (
            CommandSource::PluginCommand,
            CommandKind::File,
            format!("Plugin: {}", p.map_or("", |p| p.name.as_str())),
        ),
        (Item::PluginSkill, p) => (
            CommandSource::PluginSkill,
            CommandKind::Skill,
            format!("Plugin: {}", p.map_or("", |p| p.name.as_str())),
        ),
    };
    // The body as Claude Code sends it: after a frontmatter, from its first
    // character that is not whitespace; its end (a final newline) as written. A
    // skill's starts with the folder it lives in.
    let body = if fm.opened {
        fm.body.trim_start()
    } else {
        fm.body.as_str()
    };
    let template = match (kind_is_skill(item), skill_dir) {
        (true, Some(dir)) => format!("Base directory for this skill: {}\n\n{body}", dir.display()),
        _ => body.to_string(),
    };
    let mut command = CommandSpec::new(name, source, kind);
    command.source_label = label;
    command.command_type = Some(CommandType::Prompt);
    command.dialect = Some(Dialect::Claude);
    let description = field("description");
    command.description = description
        .clone()
        .unwrap_or_else(|| fallback_description(&template));
    // Shown as written: `[pr-number] [priority]` is text, not a YAML list.
    command.argument_hint = fm
        .raw
        .get("argument-hint")
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .or_else(|| field("argument-hint"));
    command.when_to_use = field("when_to_use");
    command.arguments = list(fm.fields.get("arguments"))
        .into_iter()
        .filter(|a| !a.chars().all(|c| c.is_ascii_digit()))
        .collect();
    command.model = field("model");
    command.allowed_tools = list(fm.fields.get("allowed-tools"));
    command.user_invocable = fm
        .fields
        .get("user-invocable")
        .is_none_or(|v| truthy(Some(v)));
    let disabled = truthy(fm.fields.get("disable-model-invocation"));
    // Plugin commands reach the model only with a description or when_to_use of
    // their own; everything else unless disabled.
    command.model_invocable = !disabled
        && (item != Item::PluginCommand || description.is_some() || command.when_to_use.is_some());
    command.metadata = metadata(&fm.fields, &MAPPED);
    if let Some(p) = plugin {
        command
            .variables
            .insert("CLAUDE_PLUGIN_ROOT".into(), p.root.display().to_string());
        command
            .variables
            .insert("CLAUDE_PLUGIN_DATA".into(), p.data.display().to_string());
    }
    if let Some(dir) = skill_dir {
        command
            .variables
            .insert("CLAUDE_SKILL_DIR".into(), dir.display().to_string());
    }
    if truthy(fm.fields.get("attachments")) {
        command.input = Some(InputDescriptor {
            hint: command.argument_hint.clone().unwrap_or_default(),
            attachments: true,
        });
    }
    (command, template)
}
