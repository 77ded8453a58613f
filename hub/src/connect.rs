//! Reaching a hub: the NATS options (credentials from flags, the environment or
//! the URL itself, never shown), the connection, the stream.

use std::path::PathBuf;

use async_nats::ServerAddr;
use async_nats::jetstream::{self, stream};

use crate::error::HubError;
use crate::layout;
use crate::limits::{CONNECT_WAIT, REQUEST_WAIT, STREAM_WAIT};

/// Where a hub is and how to reach it: the standard NATS options.
#[derive(Debug, Clone, Default)]
pub struct HubOptions {
    /// The hub's NATS URL (`nats://host:4222`, `tls://…`; several, comma-separated)
    pub url: String,
    /// The JetStream stream that holds the logs
    pub stream: String,
    /// User name (with --password)
    pub user: Option<String>,
    /// Password (with --user)
    pub password: Option<String>,
    /// Token
    pub token: Option<String>,
    /// A `.creds` file (JWT and NKey seed)
    pub creds: Option<PathBuf>,
    /// CA certificate to trust for TLS (PEM)
    pub tls_ca: Option<PathBuf>,
    /// Client certificate for TLS (PEM, with --tls-key)
    pub tls_cert: Option<PathBuf>,
    /// Client key for TLS (PEM)
    pub tls_key: Option<PathBuf>,
}

/// A connected hub.
#[derive(Clone)]
pub struct Hub {
    /// The NATS connection.
    pub client: async_nats::Client,
    /// JetStream on it.
    pub js: jetstream::Context,
    /// The stream's name.
    pub name: String,
    /// The URL without credentials, for messages.
    pub shown: String,
    /// Whether this connection created the stream (with one replica).
    pub created: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// `url` with any `user:password@` removed.
pub fn shown_url(url: &str) -> String {
    url.split(',')
        .map(|u| match (u.find("://"), u.rfind('@')) {
            (Some(scheme), Some(at)) if at > scheme => {
                format!("{}{}", &u[..scheme + 3], &u[at + 1..])
            }
            (None, Some(at)) => u[at + 1..].to_string(),
            _ => u.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The servers of a comma-separated list (`nats://a:4222,nats://b:4222`, the
/// way every NATS client names a cluster), each parsed; one that does not
/// parse is named.
pub(crate) fn servers(list: &str) -> Result<Vec<ServerAddr>, HubError> {
    let servers = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<ServerAddr>()
                .map_err(|e| HubError::Options(format!("server {s:?} of the list {list:?}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if servers.is_empty() {
        return Err(HubError::Options(
            "no server given: name the hub as nats://host:4222 (several, comma-separated)".into(),
        ));
    }
    Ok(servers)
}

/// Credentials written into the URL (`nats://user:password@host`, or
/// `nats://token@host`), taken from the first address that has them.
fn url_credentials(url: &str) -> (Option<String>, Option<String>, Option<String>) {
    for u in url.split(',') {
        let rest = u.split_once("://").map_or(u, |(_, r)| r);
        if let Some((userinfo, _)) = rest.rsplit_once('@') {
            return match userinfo.split_once(':') {
                Some((user, pass)) => (Some(user.to_string()), Some(pass.to_string()), None),
                None => (None, None, Some(userinfo.to_string())),
            };
        }
    }
    (None, None, None)
}

impl HubOptions {
    /// A hub at `url` with the credentials of the standard environment variables
    /// (`NATS_USER`/`NATS_PASSWORD`, `NATS_TOKEN`, `NATS_CREDS`, `NATS_CA`,
    /// `NATS_CERT`/`NATS_KEY`).
    pub fn from_env(url: &str, stream: &str) -> HubOptions {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let path = |name: &str| var(name).map(PathBuf::from);
        HubOptions {
            url: url.to_string(),
            stream: stream.to_string(),
            user: var("NATS_USER"),
            password: var("NATS_PASSWORD"),
            token: var("NATS_TOKEN"),
            creds: path("NATS_CREDS"),
            tls_ca: path("NATS_CA"),
            tls_cert: path("NATS_CERT"),
            tls_key: path("NATS_KEY"),
        }
    }

    /// Connects (the client reconnects by itself after a drop).
    pub async fn connect(&self) -> Result<Hub, HubError> {
        let shown = shown_url(&self.url);
        let (url_user, url_password, url_token) = url_credentials(&self.url);
        let user = self.user.clone().or(url_user);
        let password = self.password.clone().or(url_password);
        let token = self.token.clone().or(url_token);
        let mut options = async_nats::ConnectOptions::new()
            .name("cmdlog")
            .connection_timeout(CONNECT_WAIT)
            .request_timeout(Some(REQUEST_WAIT))
            .max_reconnects(None);
        if let (Some(user), Some(password)) = (&user, &password) {
            options = options.user_and_password(user.clone(), password.clone());
        } else if user.is_some() || password.is_some() {
            return Err(HubError::Options(
                "give both --user and --password (or NATS_USER and NATS_PASSWORD)".into(),
            ));
        }
        if let Some(token) = &token {
            options = options.token(token.clone());
        }
        if let Some(creds) = &self.creds {
            options = options.credentials_file(creds).await.map_err(|e| {
                HubError::Options(format!("credentials file {}: {e}", creds.display()))
            })?;
        }
        if let Some(ca) = &self.tls_ca {
            options = options.add_root_certificates(ca.clone()).require_tls(true);
        }
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => {
                options = options
                    .add_client_certificate(cert.clone(), key.clone())
                    .require_tls(true);
            }
            (None, None) => {}
            _ => {
                return Err(HubError::Options(
                    "give both --tls-cert and --tls-key".into(),
                ));
            }
        }
        // The addresses without their credentials (given to the options above):
        // a cluster's servers, any of which the client connects to and fails
        // over between.
        let client = options
            .connect(servers(&shown)?)
            .await
            .map_err(|e| HubError::at(&shown, format!("cannot connect: {e}")))?;
        let js = jetstream::new(client.clone());
        Ok(Hub {
            client,
            js,
            name: self.stream.clone(),
            shown,
            created: Default::default(),
        })
    }
}

impl Hub {
    /// A log's subject on this hub.
    pub fn subject(&self, log_id: &str) -> String {
        layout::subject(&self.name, log_id)
    }

    /// Every log's subject on this hub.
    pub fn all_logs(&self) -> String {
        layout::all_logs(&self.name)
    }

    /// The stream, created if missing: every log's subject, file storage, no
    /// limits, deletes and purges denied, atomic batches and direct reads allowed.
    pub async fn stream(&self) -> Result<stream::Stream, HubError> {
        // One replica when push creates it; `hub init --replicas N` for a cluster.
        use async_nats::jetstream::{ErrorCode, context::GetStreamErrorKind};
        let config = crate::config::stream_config(&self.name, 1);
        let stream = match self.js.get_stream(&self.name).await {
            Ok(stream) => stream,
            Err(e)
                if !matches!(e.kind(), GetStreamErrorKind::JetStream(j)
                    if j.error_code() == ErrorCode::STREAM_NOT_FOUND) =>
            {
                return Err(self.unanswered(&e));
            }
            Err(_) => {
                let made = self.js.create_stream(config).await;
                match made {
                    Ok(stream) => {
                        self.created
                            .store(true, std::sync::atomic::Ordering::Relaxed);
                        stream
                    }
                    // Made by another pusher meanwhile.
                    Err(e) => self
                        .js
                        .get_stream(&self.name)
                        .await
                        .map_err(|_| self.error(format!("stream {}: {e}", self.name)))?,
                }
            }
        };
        let info = stream.cached_info();
        if !info.config.allow_atomic_publish || !info.config.allow_direct {
            return Err(self.error(format!(
                "stream {} exists without allow_atomic and allow_direct; cmdlog needs both (nats stream edit {} --allow-atomic --allow-direct)",
                self.name, self.name
            )));
        }
        Ok(stream)
    }

    /// The stream if it exists.
    /// A request that times out (a cluster electing a leader after a node
    /// died) is sent again for up to [`STREAM_WAIT`]; a stream that is not
    /// there is said at once.
    pub async fn existing_stream(&self) -> Result<stream::Stream, HubError> {
        use async_nats::jetstream::context::GetStreamErrorKind;
        let deadline = tokio::time::Instant::now() + STREAM_WAIT;
        let mut pause = std::time::Duration::from_millis(200);
        loop {
            match self.js.get_stream(&self.name).await {
                Ok(stream) => return Ok(stream),
                Err(e)
                    if e.kind() == GetStreamErrorKind::Request
                        && tokio::time::Instant::now() + pause < deadline =>
                {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(std::time::Duration::from_secs(2));
                }
                Err(e) if e.kind() == GetStreamErrorKind::Request => {
                    return Err(self.unanswered(&e));
                }
                Err(e) => {
                    return Err(self.error(format!(
                        "no stream {} ({e}); `cmdlog push {}` creates it",
                        self.name, self.shown
                    )));
                }
            }
        }
    }

    /// The stream's servers did not answer a request about it.
    fn unanswered(&self, e: &dyn std::fmt::Display) -> HubError {
        self.error(format!(
            "stream {}: the hub did not answer ({e}); a cluster that lost its quorum answers once a majority of its nodes is back",
            self.name
        ))
    }

    /// An error of this hub.
    pub fn error(&self, what: impl std::fmt::Display) -> HubError {
        HubError::at(&self.shown, what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_show_in_urls() {
        assert_eq!(shown_url("nats://alice:s3cret@hub:4222"), "nats://hub:4222");
        assert_eq!(shown_url("tok@hub:4222"), "hub:4222");
        assert_eq!(
            shown_url("nats://a:b@h1:4222,nats://h2:4222"),
            "nats://h1:4222,nats://h2:4222"
        );
        assert_eq!(shown_url("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
    }

    #[test]
    fn credentials_in_the_url_are_taken_from_it() {
        assert_eq!(
            url_credentials("nats://alice:pw@hub:4222"),
            (Some("alice".into()), Some("pw".into()), None)
        );
        assert_eq!(
            url_credentials("nats://h1:4222,nats://tok@h2:4222"),
            (None, None, Some("tok".into()))
        );
        assert_eq!(url_credentials("nats://hub:4222"), (None, None, None));
    }
}
