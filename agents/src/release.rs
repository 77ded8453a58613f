//! Which release of an agent the user runs, where its expansion rules changed
//! between releases (Claude Code: `docs/dialects.md`). In order:
//! `CMDLOG_AGENT_RELEASES` (`claude-code=2.1.197`, comma-separated) when set;
//! else the installed package of the executable found on `PATH`, read, never run
//! (design R11: cmdlog never executes a program a workspace may have planted). A
//! hook reads it from the variable the agent sets for its hooks (`AI_AGENT`), and
//! an import from the transcript's lines.
//!
//! Claude Code installs two ways, and both name their release in files: npm puts
//! `bin/claude` as a link to `…/node_modules/@anthropic-ai/claude-code/bin/claude.exe`
//! beside the package's `package.json`; the native installer links
//! `~/.local/bin/claude` to `~/.local/share/claude/versions/<release>`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use cmdlog_common::private_fs::{self, Expect};
use cmdlog_engine::KnownRelease;
use cmdlog_engine::expand::parse_version;

/// Largest `package.json` read.
const PACKAGE_JSON_BYTES_MAX: u64 = 256 * 1024;
/// Folders above the executable searched for its package.
const PACKAGE_DEPTH_MAX: usize = 3;

/// The agents whose rules cmdlog knows to differ between releases: the name
/// cmdlog gives them, their executable and their npm package.
const VERSIONED: &[(&str, &str, &str)] = &[("claude-code", "claude", "@anthropic-ai/claude-code")];

/// The releases of the agents installed here (see the module's comment), as seen
/// from `workspace`: nothing inside it is read.
pub fn installed_releases(workspace: &Path) -> Vec<KnownRelease> {
    if let Some(given) = std::env::var_os("CMDLOG_AGENT_RELEASES") {
        return given
            .to_string_lossy()
            .split(',')
            .filter_map(|pair| {
                let (agent, version) = pair.split_once('=')?;
                parse_version(version).map(|_| KnownRelease {
                    agent: agent.trim().to_string(),
                    version: version.trim().to_string(),
                    from: "CMDLOG_AGENT_RELEASES".into(),
                })
            })
            .collect();
    }
    let workspace = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    VERSIONED
        .iter()
        .filter_map(|(agent, exe, package)| {
            let path = on_path(exe, &workspace)?;
            let (version, from) = installed_version(&path, package)?;
            Some(KnownRelease {
                agent: agent.to_string(),
                version,
                from,
            })
        })
        .collect()
}

/// The release a hook's agent announced in its environment: Claude Code sets
/// `AI_AGENT=claude-code_2-1-332_harness` for its hooks.
pub fn hook_release() -> Option<KnownRelease> {
    let value = std::env::var("AI_AGENT").ok()?;
    let version = value
        .strip_prefix("claude-code_")?
        .split('_')
        .next()?
        .replace('-', ".");
    parse_version(&version)?;
    Some(KnownRelease {
        agent: "claude-code".into(),
        version,
        from: "AI_AGENT".into(),
    })
}

/// The real path of the first `exe` on `PATH` that lies in a trusted place: not a
/// relative `PATH` entry (`.`, `bin`), not inside the workspace (direnv's
/// `PATH_add bin`, `node_modules/.bin`), and in folders of this user or root that
/// no one else can write. Untrusted entries are skipped, not read.
fn on_path(exe: &str, workspace: &Path) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .filter_map(|dir| {
            let found = dir.join(exe);
            let meta = std::fs::metadata(&found).ok()?;
            (meta.is_file() && meta.mode() & 0o111 != 0).then_some(())?;
            std::fs::canonicalize(&found).ok()
        })
        .find(|real| trusted_place(real, workspace))
}

/// Whether `file` (a real path) lies outside `workspace`, and it and every folder
/// above it belong to this user or root, none writable by others unless sticky
/// (in `/tmp` others may add names, but not replace this user's).
fn trusted_place(file: &Path, workspace: &Path) -> bool {
    if file.starts_with(workspace) {
        return false;
    }
    let uid = private_fs::current_uid();
    file.ancestors().all(|p| {
        std::fs::symlink_metadata(p).is_ok_and(|m| {
            (m.uid() == uid || m.uid() == 0)
                && (m.mode() & 0o022 == 0 || (m.is_dir() && m.mode() & 0o1000 != 0))
        })
    })
}

/// The release the files of an installed `package` say, and which file said it.
fn installed_version(exe: &Path, package: &str) -> Option<(String, String)> {
    // npm: the package.json of the package the executable belongs to.
    for dir in exe.ancestors().skip(1).take(PACKAGE_DEPTH_MAX) {
        let manifest = dir.join("package.json");
        let Ok(bytes) = private_fs::read_untrusted(
            &manifest,
            Expect {
                bytes_max: PACKAGE_JSON_BYTES_MAX,
                private: false,
            },
        ) else {
            continue;
        };
        let Ok(json) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
            continue;
        };
        if json["name"] != package {
            continue;
        }
        let version = json["version"].as_str()?;
        parse_version(version)?;
        return Some((version.to_string(), manifest.display().to_string()));
    }
    // The native installer: the executable is named by its release.
    let name = exe.file_name()?.to_str()?;
    let folder = exe.parent()?.file_name()?;
    (folder == "versions" && parse_version(name).is_some())
        .then(|| (name.to_string(), exe.display().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_reads_the_release_claude_code_announces() {
        // Read here without touching the process environment: the parsing only.
        let parse = |v: &str| {
            v.strip_prefix("claude-code_")
                .and_then(|r| r.split('_').next())
                .map(|r| r.replace('-', "."))
        };
        assert_eq!(
            parse("claude-code_2-1-332_harness").as_deref(),
            Some("2.1.332")
        );
        assert_eq!(parse_version("2.1.332 (Claude Code)"), Some((2, 1, 332)));
    }
}
