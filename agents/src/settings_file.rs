//! The agent's settings file on disk, handled as something a cloned repository
//! may have planted: its real place is found without trusting links (a link is
//! followed only to a regular file inside the workspace, the home folder or the
//! agent's configured folder — a dotfiles repository, say), it is read with a
//! size cap, and it is replaced by a file written under a fresh, exclusive name
//! and renamed over it (never through a link cmdlog did not make). The original
//! is kept in the user's private state folder, not beside the file.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use cmdlog_common::private_fs::{self, Expect};

use crate::install::{Edit, SettingsError, install, uninstall};
use crate::kind::AgentKind;
use crate::pristine::{self, Pristine, text_hash};

/// Largest settings file read, in bytes.
const SETTINGS_BYTES_MAX: u64 = 4 * 1024 * 1024;

/// Where a settings file really is, and what is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsFile {
    /// The path the agent reads (maybe a link).
    pub path: PathBuf,
    /// The regular file edited: `path`, or what its link points to.
    pub target: PathBuf,
}

fn io_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SettingsError {
    let path = path.to_path_buf();
    move |source| SettingsError::Io {
        action,
        path,
        source,
    }
}

/// Finds the file behind `path`: it, or (for a link) the regular file the link
/// resolves to, which must lie inside one of `roots`; a missing file's nearest
/// existing folder must lie inside one of them too.
pub fn locate_settings(path: &Path, roots: &[PathBuf]) -> Result<SettingsFile, SettingsError> {
    let roots: Vec<PathBuf> = roots
        .iter()
        .filter_map(|r| std::fs::canonicalize(r).ok())
        .collect();
    let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
    let outside = |p: &Path| SettingsError::Shape {
        path: path.to_path_buf(),
        what: format!(
            "it leads to {}, outside the workspace and the home folder; cmdlog writes no settings there",
            p.display()
        ),
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() || meta.is_file() => {
            let target = std::fs::canonicalize(path).map_err(io_error("resolve", path))?;
            if !std::fs::metadata(&target).is_ok_and(|m| m.is_file()) {
                return Err(SettingsError::Shape {
                    path: path.to_path_buf(),
                    what: "it is not a regular file".into(),
                });
            }
            if !inside(&target) {
                return Err(outside(&target));
            }
            Ok(SettingsFile {
                path: path.to_path_buf(),
                target,
            })
        }
        Ok(_) => Err(SettingsError::Shape {
            path: path.to_path_buf(),
            what: "it is not a regular file".into(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut existing = path.parent();
            while let Some(dir) = existing {
                if std::fs::symlink_metadata(dir).is_ok() {
                    break;
                }
                existing = dir.parent();
            }
            let dir = existing.unwrap_or(Path::new("/"));
            let real = std::fs::canonicalize(dir).map_err(io_error("resolve", dir))?;
            if !inside(&real) {
                return Err(outside(&real));
            }
            // The folders still missing are made under the real one.
            let rest = path.strip_prefix(dir).unwrap_or(path);
            Ok(SettingsFile {
                path: path.to_path_buf(),
                target: real.join(rest),
            })
        }
        Err(e) => Err(io_error("read", path)(e)),
    }
}

/// The settings file's text, or nothing when there is none yet.
pub fn read_settings(file: &SettingsFile) -> Result<String, SettingsError> {
    let expect = Expect {
        bytes_max: SETTINGS_BYTES_MAX,
        private: false,
    };
    match private_fs::read_untrusted(&file.target, expect) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| SettingsError::Shape {
            path: file.path.clone(),
            what: "it is not UTF-8 text".into(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(SettingsError::Io {
            action: "read",
            path: file.path.clone(),
            source,
        }),
    }
}

/// Writes `edit.after` over the settings file: the original is copied to a new
/// file in the private state folder (returned), the new text goes to a fresh
/// exclusive file beside the target (its mode the original's), synced, and is
/// renamed over the target. A link in front of the target stays as it was.
pub fn write_settings(
    file: &SettingsFile,
    edit: &Edit,
    secret: bool,
) -> Result<Option<PathBuf>, SettingsError> {
    let target = &file.target;
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).map_err(io_error("create the folder of", target))?;
    }
    let original = std::fs::metadata(target).ok();
    let backup = match &original {
        Some(_) => Some(keep_original(target, &edit.before)?),
        None => None,
    };
    let (tmp, mut out) =
        private_fs::create_fresh_beside(target).map_err(io_error("write beside", target))?;
    let written = (|| {
        out.write_all(edit.after.as_bytes())?;
        let mode = match &original {
            Some(meta) => meta.permissions().mode() & 0o7777,
            None => 0o644,
        };
        // A secret is for its owner: no group or other bits.
        let mode = if secret { mode & !0o077 } else { mode };
        out.set_permissions(std::fs::Permissions::from_mode(mode))?;
        out.sync_all()?;
        std::fs::rename(&tmp, target)?;
        if let Some(dir) = target.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error("replace", target)(e));
    }
    Ok(backup)
}

/// A copy of `text` (a settings file's content before cmdlog changed it) in the
/// user's private state folder, under a new name.
fn keep_original(target: &Path, text: &str) -> Result<PathBuf, SettingsError> {
    let dir = private_fs::state_dir()
        .and_then(|d| private_fs::ensure_private_dir(&d.join("settings-backups")))
        .map_err(io_error("keep a copy of", target))?;
    let mut key =
        cmdlog_common::ids::hex(&blake3::hash(target.to_string_lossy().as_bytes()).as_bytes()[..8]);
    key.push('-');
    key.push_str(&cmdlog_common::time::now_ms().to_string());
    let stem = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for attempt in 0..16 {
        let name = format!("{stem}.{key}.{attempt}");
        match private_fs::create_new(&dir.join(&name)) {
            Ok(mut f) => {
                f.write_all(text.as_bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(io_error("keep a copy of", target))?;
                return Ok(dir.join(name));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_error("keep a copy of", target)(e)),
        }
    }
    Err(SettingsError::Shape {
        path: target.to_path_buf(),
        what: "no fresh name for its copy".into(),
    })
}

/// What `hooks install` or `hooks uninstall` will do to a settings file: the
/// edit to show, and how it is written ([`apply_settings`]).
#[derive(Debug, Clone)]
pub struct SettingsPlan {
    /// The text before and after.
    pub edit: Edit,
    action: Action,
    /// What the edit is about (the original's record is kept under it).
    what: String,
    /// Whether the new text holds a secret (the daemon's token): the file is
    /// then written owner-only.
    secret: bool,
}

#[derive(Debug, Clone)]
enum Action {
    /// Write the new text, after remembering the file as it was (on cmdlog's
    /// first install into it).
    Install(Option<Pristine>),
    /// Give the file back as it was before cmdlog's install: its text, or no
    /// file (and none of the folders made for it).
    Restore(Pristine),
    /// Write the text with cmdlog's entries taken out (the user changed the file
    /// since the install).
    Remove,
}

impl SettingsPlan {
    /// Marks the new text as holding a secret: the file is written owner-only.
    pub fn holding_a_secret(mut self) -> SettingsPlan {
        self.secret = self.edit.changed();
        self
    }

    /// What to tell the user when writing this plan takes group or other bits
    /// off the file (it is to hold a secret), said before it is written.
    pub fn tightening(&self, file: &SettingsFile) -> Option<String> {
        let mode = std::fs::metadata(&file.target).ok()?.permissions().mode() & 0o7777;
        (self.secret && mode & 0o077 != 0).then(|| {
            format!(
                "{} was mode 0{mode:o}; now 0{:o}: it holds the daemon's token, which no one else may read",
                file.path.display(),
                mode & !0o077
            )
        })
    }

    /// Whether applying it removes the file (there was none before cmdlog's).
    pub fn removes_file(&self) -> bool {
        matches!(&self.action, Action::Restore(p) if p.before.is_none())
    }

    /// The edit as a unified diff of the file `label` names, `secret` (the
    /// daemon's token an edit writes) shown as `***`.
    pub fn diff(&self, label: &str, secret: Option<&str>) -> String {
        let hide = |text: &str| match secret {
            Some(s) if !s.is_empty() => text.replace(s, "***"),
            _ => text.to_string(),
        };
        let (before, after) = (hide(&self.edit.before), hide(&self.edit.after));
        similar::TextDiff::from_lines(before.as_str(), after.as_str())
            .unified_diff()
            .context_radius(2)
            .header(label, label)
            .to_string()
    }
}

/// Plans adding cmdlog's hooks of `agent` to `file`, whose text is `text`.
pub fn plan_install(
    file: &SettingsFile,
    text: &str,
    agent: AgentKind,
    command: &str,
) -> Result<SettingsPlan, SettingsError> {
    let edit = install(&file.path, text, agent, command)?;
    Ok(plan_adding(file, text, pristine::what(agent, false), edit))
}

/// Plans `edit` (cmdlog's entries added to `file`, whose text is `text`),
/// remembering the file as it was under `what` on the first install.
pub(crate) fn plan_adding(
    file: &SettingsFile,
    text: &str,
    what: String,
    edit: Edit,
) -> SettingsPlan {
    let record = edit.changed().then(|| {
        let installed = text_hash(&edit.after);
        match pristine::recall(&file.target, &what) {
            // Installed before and untouched since: what came before that stays.
            Some(earlier) if earlier.installed == text_hash(text) => Pristine {
                installed,
                ..earlier
            },
            _ => {
                let exists = std::fs::symlink_metadata(&file.target).is_ok();
                Pristine {
                    path: file.target.clone(),
                    agent: what.clone(),
                    before: exists.then(|| text.to_string()),
                    made_dirs: pristine::missing_dirs(&file.target),
                    installed,
                }
            }
        }
    });
    SettingsPlan {
        edit,
        action: Action::Install(record),
        what,
        secret: false,
    }
}

/// Plans taking cmdlog's hooks of `agent` out of `file`, whose text is `text`:
/// the file as it was before the install when it is still exactly as cmdlog
/// left it, else the file with cmdlog's entries removed.
pub fn plan_uninstall(
    file: &SettingsFile,
    text: &str,
    agent: AgentKind,
) -> Result<SettingsPlan, SettingsError> {
    let removed = uninstall(&file.path, text, agent)?;
    Ok(plan_removing(
        file,
        text,
        pristine::what(agent, false),
        removed,
    ))
}

/// Plans taking cmdlog's entries out (`removed`: the syntax tree's way): the
/// file as it was before the install instead, while it is as cmdlog left it.
pub(crate) fn plan_removing(
    file: &SettingsFile,
    text: &str,
    what: String,
    removed: Edit,
) -> SettingsPlan {
    match pristine::recall(&file.target, &what) {
        Some(record) if record.installed == text_hash(text) && removed.changed() => SettingsPlan {
            edit: Edit {
                before: text.to_string(),
                after: record.before.clone().unwrap_or_default(),
                events: removed.events,
            },
            action: Action::Restore(record),
            what,
            secret: false,
        },
        _ => SettingsPlan {
            edit: removed,
            action: Action::Remove,
            what,
            secret: false,
        },
    }
}

/// Carries out `plan` on `file`; returns where the file as it was is kept.
pub fn apply_settings(
    file: &SettingsFile,
    plan: &SettingsPlan,
) -> Result<Option<PathBuf>, SettingsError> {
    match &plan.action {
        Action::Install(record) => {
            if let Some(record) = record {
                pristine::remember(record)
                    .map_err(io_error("remember the original of", &file.path))?;
            }
            write_settings(file, &plan.edit, plan.secret)
        }
        Action::Remove => {
            let kept = write_settings(file, &plan.edit, plan.secret)?;
            pristine::forget(&file.target, &plan.what);
            Ok(kept)
        }
        Action::Restore(record) => {
            let kept = if record.before.is_some() {
                write_settings(file, &plan.edit, plan.secret)?
            } else {
                let kept = keep_original(&file.target, &plan.edit.before)?;
                std::fs::remove_file(&file.target).map_err(io_error("remove", &file.path))?;
                // Only folders cmdlog made, and only while they are empty.
                for dir in record.made_dirs.iter().rev() {
                    if std::fs::remove_dir(dir).is_err() {
                        break;
                    }
                }
                Some(kept)
            };
            pristine::forget(&file.target, &plan.what);
            Ok(kept)
        }
    }
}
