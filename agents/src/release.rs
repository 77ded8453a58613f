//! Which release of an agent the user runs, where its expansion rules changed
//! between releases (Claude Code: `docs/dialects.md`). In order:
//! `CMDLOG_AGENT_RELEASES` (`claude-code=2.1.197`, comma-separated) when set;
//! else the agent's own `--version`, asked of the executable found on `PATH` and
//! remembered per executable (its real path, size and modification time) in the
//! user's private state folder, so it is asked once per installed binary. A hook
//! reads it from the variable the agent sets for its hooks (`AI_AGENT`), and an
//! import from the transcript's lines.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cmdlog_common::private_fs::{self, Expect};
use cmdlog_engine::{KnownRelease, parse_version};
use serde::{Deserialize, Serialize};

/// How long an agent may take to print its version.
const VERSION_WAIT: Duration = Duration::from_secs(5);
/// Largest cache file read.
const CACHE_BYTES_MAX: u64 = 64 * 1024;

/// The agents whose rules cmdlog knows to differ between releases: the name
/// cmdlog gives them and their executable.
const VERSIONED: &[(&str, &str)] = &[("claude-code", "claude")];

/// The releases of the agents installed here (see the module's comment).
pub fn installed_releases() -> Vec<KnownRelease> {
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
    VERSIONED
        .iter()
        .filter_map(|(agent, exe)| {
            let path = on_path(exe)?;
            let version = cached_version(&path)?;
            Some(KnownRelease {
                agent: agent.to_string(),
                version,
                from: format!("{exe} --version"),
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

fn on_path(exe: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(exe))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    size: u64,
    modified_ns: i128,
    version: String,
}

fn cache_path() -> Option<PathBuf> {
    Some(private_fs::state_dir().ok()?.join("agent-releases.json"))
}

fn read_cache(path: &Path) -> BTreeMap<String, Seen> {
    private_fs::read_untrusted(
        path,
        Expect {
            bytes_max: CACHE_BYTES_MAX,
            private: true,
        },
    )
    .ok()
    .and_then(|bytes| serde_json::from_slice(&bytes).ok())
    .unwrap_or_default()
}

/// `exe --version`'s release, from the cache while the executable is the same.
fn cached_version(exe: &Path) -> Option<String> {
    let real = std::fs::canonicalize(exe).ok()?;
    let meta = std::fs::metadata(&real).ok()?;
    let modified_ns = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
    let key = real.to_string_lossy().into_owned();
    let cache = cache_path();
    let mut seen = cache.as_deref().map(read_cache).unwrap_or_default();
    if let Some(s) = seen.get(&key)
        && s.size == meta.len()
        && s.modified_ns == modified_ns
    {
        return Some(s.version.clone());
    }
    let version = ask_version(exe)?;
    seen.insert(
        key,
        Seen {
            size: meta.len(),
            modified_ns,
            version: version.clone(),
        },
    );
    if let Some(path) = cache {
        let _ = write_cache(&path, &seen);
    }
    Some(version)
}

fn write_cache(path: &Path, seen: &BTreeMap<String, Seen>) -> std::io::Result<()> {
    let (tmp, mut file) = private_fs::create_fresh_beside(path)?;
    let written = serde_json::to_vec(seen)
        .map_err(std::io::Error::other)
        .and_then(|bytes| file.write_all(&bytes))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Runs `exe --version` (at most [`VERSION_WAIT`]) and reads the first version
/// it prints (`2.1.332 (Claude Code)`).
fn ask_version(exe: &Path) -> Option<String> {
    let mut child = Command::new(exe)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < VERSION_WAIT => {
                std::thread::sleep(Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = String::new();
    child
        .stdout
        .take()?
        .take(4096)
        .read_to_string(&mut out)
        .ok()?;
    out.split_whitespace()
        .find(|word| parse_version(word).is_some())
        .map(str::to_string)
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
