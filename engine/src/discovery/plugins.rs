//! `~/.claude/plugins/installed_plugins.json`: which Claude plugins are installed
//! and where. Entries keep the file's order (plugins, then each plugin's installs).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};

use super::Warning;

/// One installed plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plugin {
    /// The plugin name (the key before `@marketplace`).
    pub(crate) name: String,
    /// Its install folder; commands live in `commands/`.
    pub(crate) root: PathBuf,
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
}

#[derive(Deserialize)]
struct InstalledPlugins {
    plugins: Ordered<Installs>,
}

/// The installed plugins, in file order. A missing file means none; an unreadable or
/// malformed one is a warning and none.
pub(crate) fn installed(home: &Path, warnings: &mut Vec<Warning>) -> Vec<Plugin> {
    let path = home.join(".claude/plugins/installed_plugins.json");
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
            let root = match install.install_path.strip_prefix("~/") {
                Some(rest) => home.join(rest),
                None => PathBuf::from(&install.install_path),
            };
            out.push(Plugin {
                name: name.clone(),
                root,
            });
        }
    }
    out
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
        let plugins = installed(home.path(), &mut warnings);
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
        assert!(installed(home.path(), &mut warnings).is_empty());
        assert!(warnings[0].message.contains("plugin commands skipped"));
    }
}
