//! Claude Code plugins (code.claude.com/docs/en/plugins-reference, settings
//! `enabledPlugins`): `~/.claude/plugins/installed_plugins.json` says which are
//! installed and where (versions 1 and 2, file order kept); the settings files say
//! which are enabled (`.claude/settings.local.json` over `.claude/settings.json` over
//! `~/.claude/settings.json`, key by key; no entry: enabled). An enabled plugin's
//! commands are `/plugin:command` (sub-folders add segments), its skills
//! `/plugin:skill`; `.claude-plugin/plugin.json` may name other command folders.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};

use super::claude::{self, read_commands, read_skill, skill_dirs};
use super::{Pass, ProviderId, Warning};

/// One installed plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plugin {
    /// The `name@marketplace` key.
    pub(crate) key: String,
    /// The plugin name (the key before `@marketplace`).
    pub(crate) name: String,
    /// Its install folder.
    pub(crate) root: PathBuf,
    /// `user`, `project`, `local` or `managed` (version 2), and the project a
    /// project or local install belongs to.
    pub(crate) scope: Option<String>,
    pub(crate) project: Option<PathBuf>,
}

/// A JSON object read as key-value pairs in file order.
struct Ordered<V>(Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct OrderedVisitor<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for OrderedVisitor<V> {
            type Value = Ordered<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    out.push(entry);
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(OrderedVisitor(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Installs {
    /// Version 2: a list of installs per plugin.
    Many(Vec<Install>),
    /// Version 1: one install per plugin.
    One(Install),
}

#[derive(Deserialize)]
struct Install {
    #[serde(rename = "installPath")]
    install_path: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default, rename = "projectPath")]
    project_path: Option<String>,
}

#[derive(Deserialize)]
struct InstalledPlugins {
    plugins: Ordered<Installs>,
}

/// The installed plugins, in file order. A missing file means none; an unreadable or
/// malformed one is a warning and none.
pub(crate) fn installed(
    claude_dir: &Path,
    home: &Path,
    warnings: &mut Vec<Warning>,
) -> Vec<Plugin> {
    let path = claude_dir.join("plugins/installed_plugins.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            warnings.push(warning(
                &path,
                format!("cannot read: {e}; plugin commands skipped"),
            ));
            return Vec::new();
        }
    };
    let parsed: InstalledPlugins = match serde_json::from_str(&text) {
        Ok(p) => p,
        Err(e) => {
            let message =
                format!("not a valid installed_plugins.json ({e}); plugin commands skipped");
            warnings.push(warning(&path, message));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for (key, installs) in parsed.plugins.0 {
        let name = key.split('@').next().unwrap_or(&key).to_string();
        let installs = match installs {
            Installs::Many(v) => v,
            Installs::One(i) => vec![i],
        };
        for install in installs {
            let expand = |p: &str| match p.strip_prefix("~/") {
                Some(rest) => home.join(rest),
                None => PathBuf::from(p),
            };
            out.push(Plugin {
                key: key.clone(),
                name: name.clone(),
                root: expand(&install.install_path),
                scope: install.scope,
                project: install.project_path.as_deref().map(expand),
            });
        }
    }
    out
}

/// `enabledPlugins` of the settings files, each key from the most specific file
/// that names it.
fn enabled_plugins(pass: &mut Pass<'_>) -> BTreeMap<String, bool> {
    let config = pass.config;
    let files = [
        config.claude_dir().join("settings.json"),
        config.workspace.join(".claude/settings.json"),
        config.workspace.join(".claude/settings.local.json"),
    ];
    let mut enabled = BTreeMap::new();
    for path in files {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let parsed: Result<serde_json::Value, _> =
            jsonc_parser::parse_to_serde_value(&text, &Default::default());
        let value = match parsed {
            Ok(v) => v,
            Err(e) => {
                let message = format!("not valid JSON ({e}); its enabledPlugins are ignored");
                pass.warn(
                    ProviderId::ClaudePlugins,
                    &path.display().to_string(),
                    None,
                    message,
                );
                continue;
            }
        };
        if let Some(map) = value.get("enabledPlugins").and_then(|v| v.as_object()) {
            for (key, on) in map {
                // `false` disables; `true` or a list of versions enables.
                enabled.insert(key.clone(), !matches!(on, serde_json::Value::Bool(false)));
            }
        }
    }
    enabled
}

/// `.claude-plugin/plugin.json`: the plugin's name and command folders.
#[derive(Deserialize, Default)]
struct Manifest {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    commands: Option<Paths>,
    #[serde(default)]
    skills: Option<Paths>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Paths {
    One(String),
    Many(Vec<String>),
    /// The object form (`{"name": {"source": …}}`) is not read.
    Other(serde::de::IgnoredAny),
}

impl Paths {
    fn list(&self) -> Vec<String> {
        match self {
            Paths::One(p) => vec![p.clone()],
            Paths::Many(v) => v.clone(),
            Paths::Other(_) => Vec::new(),
        }
    }
}

/// Reads every enabled plugin's commands and skills.
pub(super) fn discover(pass: &mut Pass<'_>) {
    let config = pass.config;
    let claude_dir = config.claude_dir();
    let installs = installed(&claude_dir, &config.home, &mut pass.out.warnings);
    if installs.is_empty() {
        return;
    }
    let enabled = enabled_plugins(pass);
    let workspace = super::canonical(&config.workspace);
    let mut item = 0;
    for install in installs {
        if enabled.get(&install.key) == Some(&false) {
            continue;
        }
        // A project or local install belongs to its project only.
        if matches!(install.scope.as_deref(), Some("project" | "local"))
            && install
                .project
                .as_deref()
                .is_some_and(|p| super::canonical(p) != workspace)
        {
            continue;
        }
        let manifest_path = install.root.join(".claude-plugin/plugin.json");
        let manifest: Manifest = match std::fs::read_to_string(&manifest_path) {
            Ok(text) => match serde_json::from_str(&text) {
                Ok(m) => m,
                Err(e) => {
                    let message = format!("not a valid plugin.json ({e}); the defaults are used");
                    pass.warn(
                        ProviderId::ClaudePlugins,
                        &manifest_path.display().to_string(),
                        None,
                        message,
                    );
                    Manifest::default()
                }
            },
            Err(_) => Manifest::default(),
        };
        let plugin = claude::Plugin {
            name: manifest
                .name
                .clone()
                .unwrap_or_else(|| install.name.clone()),
            data: claude_dir.join("plugins/data").join(
                install
                    .key
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                            c
                        } else {
                            '-'
                        }
                    })
                    .collect::<String>(),
            ),
            root: install.root.clone(),
        };
        let relative = |p: &str| install.root.join(p.trim_start_matches("./"));
        let command_roots: Vec<PathBuf> = match &manifest.commands {
            Some(paths) => paths.list().iter().map(|p| relative(p)).collect(),
            None => vec![install.root.join("commands")],
        };
        let mut skill_roots = vec![install.root.join("skills")];
        if let Some(paths) = &manifest.skills {
            skill_roots.extend(paths.list().iter().map(|p| relative(p)));
        }
        let mut found = Vec::new();
        for root in &skill_roots {
            for (dir, name) in skill_dirs(root) {
                found.extend(read_skill(pass, &dir, &name, Some((&plugin, Vec::new()))));
            }
        }
        if install.root.join("SKILL.md").is_file() {
            let name = install.name.clone();
            found.extend(read_skill(
                pass,
                &install.root,
                &name,
                Some((&plugin, Vec::new())),
            ));
        }
        for root in &command_roots {
            if root.is_file() {
                // A single file listed in plugin.json: `/plugin:<stem>`.
                let parent = root.parent().unwrap_or(&install.root).to_path_buf();
                found.extend(
                    read_commands(pass, ProviderId::ClaudePlugins, &parent, Some(&plugin))
                        .into_iter()
                        .filter(|(_, _, o)| Path::new(&o.path) == root.as_path()),
                );
            } else {
                found.extend(read_commands(
                    pass,
                    ProviderId::ClaudePlugins,
                    root,
                    Some(&plugin),
                ));
            }
        }
        for (command, template, origin) in found {
            pass.found(
                ProviderId::ClaudePlugins.reference("plugin", item),
                origin,
                command,
                template,
            );
        }
        item += 1;
    }
}

fn warning(path: &Path, message: String) -> Warning {
    Warning {
        provider: "claude-plugins".into(),
        path: path.display().to_string(),
        content_hash: None,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_versions_in_file_order() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".claude/plugins");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("installed_plugins.json"),
            r#"{"version":2,"plugins":{
                "zeta@market":[{"scope":"user","installPath":"/p/zeta/1"},{"installPath":"/p/zeta/2"}],
                "alpha@market":{"installPath":"~/alpha"}}}"#,
        )
        .unwrap();
        let mut warnings = Vec::new();
        let plugins = installed(&home.path().join(".claude"), home.path(), &mut warnings);
        assert!(warnings.is_empty());
        let got: Vec<_> = plugins
            .iter()
            .map(|p| (p.name.as_str(), p.root.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("zeta", PathBuf::from("/p/zeta/1")),
                ("zeta", PathBuf::from("/p/zeta/2")),
                ("alpha", home.path().join("alpha")),
            ]
        );
    }

    #[test]
    fn malformed_file_is_a_warning() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".claude/plugins");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("installed_plugins.json"), "{not json").unwrap();
        let mut warnings = Vec::new();
        assert!(installed(&home.path().join(".claude"), home.path(), &mut warnings).is_empty());
        assert!(warnings[0].message.contains("plugin commands skipped"));
    }
}
