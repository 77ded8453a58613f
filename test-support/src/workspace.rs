//! A workspace and a `HOME` in temp folders, and the `cmdlog` binary run inside
//! them with nothing of the caller's environment that would change what it does.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cmdlog_store::{BlobHash, Log, LogConfig};

/// The `cmdlog` binary cargo built beside the running test or bench
/// (`target/<profile>/cmdlog`), or `$CARGO_BIN_EXE_cmdlog` when cargo sets it.
pub fn cmdlog_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("CARGO_BIN_EXE_cmdlog") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("the test binary knows its path");
    // target/<profile>/deps/<test> -> target/<profile>/cmdlog
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test binary lives in target/<profile>/deps");
    let bin = profile.join("cmdlog");
    assert!(
        bin.exists(),
        "{} is missing: build the cmdlog binary first (cargo test builds it for the root package's tests)",
        bin.display()
    );
    bin
}

/// A workspace folder and a home folder, both temporary.
pub struct Workspace {
    pub ws: tempfile::TempDir,
    pub home: tempfile::TempDir,
}

impl Default for Workspace {
    fn default() -> Self {
        Self::new()
    }
}

impl Workspace {
    pub fn new() -> Self {
        Workspace {
            ws: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// Writes a file under the workspace, creating its folders; returns its path.
    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.ws.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// A path under the home (`~/…`) or the workspace (`ws/…`).
    pub fn path(&self, path: &str) -> PathBuf {
        match path.split_once('/') {
            Some(("~", rest)) => self.home.path().join(rest),
            Some(("ws", rest)) => self.ws.path().join(rest),
            _ => panic!("paths start with ~/ or ws/: {path}"),
        }
    }

    /// Writes a file under the home (`~/…`) or the workspace (`ws/…`), creating its
    /// folders; returns the workspace for chaining.
    pub fn put(&self, path: &str, text: &str) -> &Self {
        let full = self.path(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
        self
    }

    /// `CMDLOG_CEILING_DIRECTORIES` for the test: the folders that hold its
    /// workspace and its home.
    pub fn ceilings(&self) -> std::ffi::OsString {
        let parents =
            [self.ws.path(), self.home.path()].map(|p| p.parent().unwrap_or(p).to_path_buf());
        std::env::join_paths(parents).unwrap()
    }

    /// `cmdlog hook AGENT` in the workspace with `payload` on its stdin, waited for.
    pub fn hook(&self, agent: &str, payload: &[u8]) -> Output {
        use std::io::Write;
        let mut child = self
            .cmd(&["hook", agent])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(payload).unwrap();
        child.wait_with_output().unwrap()
    }

    /// The default log: `.cmdlog/log.redb` in the workspace.
    pub fn log_path(&self) -> PathBuf {
        self.ws.path().join(".cmdlog/log.redb")
    }

    /// `cmdlog ARGS` in the workspace, with the temp home, no colour, and none of
    /// the `CMDLOG_*` variables that point elsewhere.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(cmdlog_bin());
        cmd.args(args)
            .current_dir(self.ws.path())
            .env("HOME", self.home.path())
            // No folder above the test's own can change its result (a `.cmdlog`
            // in /tmp or /): project discovery stops below these.
            .env("CMDLOG_CEILING_DIRECTORIES", self.ceilings())
            .env_remove("CMDLOG_LOG")
            .env_remove("CMDLOG_SESSION")
            .env_remove("CMDLOG_DAEMON_URL")
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("OPENCODE_CONFIG_DIR")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("GEMINI_PROJECT_DIR")
            .env_remove("QWEN_PROJECT_DIR")
            .env_remove("GEMINI_CLI_HOME")
            .env_remove("QWEN_RUNTIME_DIR")
            .env_remove("QWEN_HOME")
            .env_remove("CMDLOG_AGENT_RELEASES")
            .env_remove("AI_AGENT")
            .env_remove("CLAUDE_CODE_ENTRYPOINT")
            .env_remove("CMDLOG_HUB_STREAM")
            .env_remove("CMDLOG_KEY")
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("NATS_USER")
            .env_remove("NATS_PASSWORD")
            .env_remove("NATS_TOKEN")
            .env_remove("NATS_CREDS")
            .env_remove("NATS_CA")
            .env_remove("NATS_CERT")
            .env_remove("NATS_KEY")
            .env_remove("NATS_URL")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// Stdout of a run that must succeed.
    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }

    /// The JSON a run that must succeed prints.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }

    /// The log's head seq and hash, read directly.
    pub fn head(&self) -> (u64, [u8; 32]) {
        let h = Log::open_read_only(self.log_path(), LogConfig::default())
            .unwrap()
            .head();
        (h.seq, h.hash.0)
    }

    /// Every stored blob's hash.
    pub fn blobs(&self) -> Vec<BlobHash> {
        let log = Log::open(self.log_path(), LogConfig::default()).unwrap();
        log.list_blobs()
            .unwrap()
            .into_iter()
            .map(|(h, _, _)| h)
            .collect()
    }
}
