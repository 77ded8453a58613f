//! The team hub: logs replicated to a NATS JetStream stream (`docs/hub.md`).
//!
//! One stream per hub (`CMDLOG` unless `--stream` says otherwise) holds every
//! log, one subject each: `cmdlog.log.<log id>` (`cmdlog.<stream>.log.<log id>`
//! in another stream). A record is one message: the
//! record's bytes as payload, its seq, chain hash and stream key (the session)
//! as headers. Records go in atomic batches whose first message carries
//! `Nats-Expected-Last-Subject-Sequence`: a batch lands whole, and only where it
//! continues what the hub holds of that log, so a fork or a second writer is
//! refused at the hub and nothing there is overwritten. Blobs go to the Object
//! Store bucket `<stream>-blobs`, named by their BLAKE3 hash.

pub(crate) mod push;
pub(crate) mod read;

use std::path::PathBuf;
use std::time::Duration;

use async_nats::jetstream::{self, stream};
use clap::Args;

/// The header names (values are ASCII).
pub(crate) const SEQ: &str = "Cmdlog-Seq";
pub(crate) const HASH: &str = "Cmdlog-Hash";
pub(crate) const STREAM_KEY: &str = "Cmdlog-Stream";
pub(crate) const HOST: &str = "Cmdlog-Host";

/// Where a hub is and how to reach it: the standard NATS options.
#[derive(Args, Debug, Clone)]
pub(crate) struct HubArgs {
    /// The hub's NATS URL (`nats://host:4222`, `tls://…`; several, comma-separated)
    #[arg(value_name = "URL")]
    pub(crate) url: String,
    /// The JetStream stream that holds the logs
    #[arg(long, env = "CMDLOG_HUB_STREAM", default_value = "CMDLOG")]
    pub(crate) stream: String,
    /// User name (with --password)
    #[arg(long, env = "NATS_USER", hide_env_values = true)]
    pub(crate) user: Option<String>,
    /// Password (with --user)
    #[arg(long, env = "NATS_PASSWORD", hide_env_values = true)]
    pub(crate) password: Option<String>,
    /// Token
    #[arg(long, env = "NATS_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// A `.creds` file (JWT and NKey seed)
    #[arg(long, env = "NATS_CREDS")]
    pub(crate) creds: Option<PathBuf>,
    /// CA certificate to trust for TLS (PEM)
    #[arg(long, env = "NATS_CA")]
    pub(crate) tls_ca: Option<PathBuf>,
    /// Client certificate for TLS (PEM, with --tls-key)
    #[arg(long, env = "NATS_CERT")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// Client key for TLS (PEM)
    #[arg(long, env = "NATS_KEY")]
    pub(crate) tls_key: Option<PathBuf>,
}

/// A connected hub.
#[derive(Clone)]
pub(crate) struct Hub {
    pub(crate) client: async_nats::Client,
    pub(crate) js: jetstream::Context,
    /// The stream's name.
    pub(crate) name: String,
    /// The URL without credentials, for messages.
    pub(crate) shown: String,
}

/// A hub error, with the URL shown without its credentials.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct HubError(pub(crate) String);

impl HubError {
    pub(crate) fn at(hub: &str, what: impl std::fmt::Display) -> HubError {
        HubError(format!("hub {hub}: {what}"))
    }
}

/// `url` with any `user:password@` removed.
pub(crate) fn shown_url(url: &str) -> String {
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

/// The subjects' prefix for a stream: `cmdlog.log` for the default stream,
/// `cmdlog.<stream>.log` for another (two streams on one server cannot share
/// subjects).
pub(crate) fn prefix(stream: &str) -> String {
    if stream == DEFAULT_STREAM {
        "cmdlog.log".into()
    } else {
        format!("cmdlog.{stream}.log")
    }
}

/// The default stream's name.
pub(crate) const DEFAULT_STREAM: &str = "CMDLOG";

/// The blobs' bucket for a stream.
pub(crate) fn bucket(stream: &str) -> String {
    format!("{stream}-blobs")
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

impl HubArgs {
    /// A hub at `url` with the credentials of the standard environment variables
    /// (`NATS_USER`/`NATS_PASSWORD`, `NATS_TOKEN`, `NATS_CREDS`, `NATS_CA`,
    /// `NATS_CERT`/`NATS_KEY`).
    pub(crate) fn from_env(url: &str, stream: &str) -> HubArgs {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let path = |name: &str| var(name).map(PathBuf::from);
        HubArgs {
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
    pub(crate) async fn connect(&self) -> Result<Hub, HubError> {
        let shown = shown_url(&self.url);
        let (url_user, url_password, url_token) = url_credentials(&self.url);
        let user = self.user.clone().or(url_user);
        let password = self.password.clone().or(url_password);
        let token = self.token.clone().or(url_token);
        let mut options = async_nats::ConnectOptions::new()
            .name("cmdlog")
            .connection_timeout(Duration::from_secs(5))
            .request_timeout(Some(Duration::from_secs(10)))
            .max_reconnects(None);
        if let (Some(user), Some(password)) = (&user, &password) {
            options = options.user_and_password(user.clone(), password.clone());
        } else if user.is_some() || password.is_some() {
            return Err(HubError(
                "give both --user and --password (or NATS_USER and NATS_PASSWORD)".into(),
            ));
        }
        if let Some(token) = &token {
            options = options.token(token.clone());
        }
        if let Some(creds) = &self.creds {
            options = options
                .credentials_file(creds)
                .await
                .map_err(|e| HubError(format!("credentials file {}: {e}", creds.display())))?;
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
            _ => return Err(HubError("give both --tls-cert and --tls-key".into())),
        }
        // The addresses without their credentials (given to the options above).
        let client = options
            .connect(shown.as_str())
            .await
            .map_err(|e| HubError::at(&shown, format!("cannot connect: {e}")))?;
        let js = jetstream::new(client.clone());
        Ok(Hub {
            client,
            js,
            name: self.stream.clone(),
            shown,
        })
    }
}

impl Hub {
    pub(crate) fn subject(&self, log_id: &str) -> String {
        format!("{}.{log_id}", prefix(&self.name))
    }

    /// Every log's subject.
    pub(crate) fn all_logs(&self) -> String {
        format!("{}.*", prefix(&self.name))
    }

    /// The stream, created if missing: every log's subject, file storage, no
    /// limits, deletes and purges denied, atomic batches and direct reads allowed.
    pub(crate) async fn stream(&self) -> Result<stream::Stream, HubError> {
        let config = stream::Config {
            name: self.name.clone(),
            description: Some("cmdlog logs, one subject per log (docs/hub.md)".into()),
            subjects: vec![self.all_logs()],
            storage: stream::StorageType::File,
            deny_delete: true,
            deny_purge: true,
            allow_direct: true,
            allow_atomic_publish: true,
            ..Default::default()
        };
        let stream = self
            .js
            .get_or_create_stream(config)
            .await
            .map_err(|e| self.error(format!("stream {}: {e}", self.name)))?;
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
    pub(crate) async fn existing_stream(&self) -> Result<stream::Stream, HubError> {
        self.js.get_stream(&self.name).await.map_err(|e| {
            self.error(format!(
                "no stream {} ({e}); `cmdlog push {}` creates it",
                self.name, self.shown
            ))
        })
    }

    pub(crate) fn error(&self, what: impl std::fmt::Display) -> HubError {
        HubError::at(&self.shown, what)
    }
}

/// What the hub holds of one log: its last record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HubHead {
    pub(crate) seq: u64,
    /// Hex chain hash.
    pub(crate) hash: String,
    /// The stream sequence of that message.
    pub(crate) stream_seq: u64,
    pub(crate) host: String,
    /// When the hub stored it, RFC 3339.
    pub(crate) pushed_at: String,
}

/// A header's value as text.
pub(crate) fn header<'a>(headers: &'a async_nats::HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|v| v.as_str())
}

/// The last record the hub holds of `log_id`, if any.
pub(crate) async fn head(
    hub: &Hub,
    stream: &stream::Stream,
    log_id: &str,
) -> Result<Option<HubHead>, HubError> {
    use async_nats::jetstream::stream::DirectGetErrorKind;
    match stream
        .direct_get_last_for_subject(hub.subject(log_id))
        .await
    {
        Ok(message) => {
            let seq = header(&message.headers, SEQ)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| {
                    hub.error(format!(
                        "message {} of log {log_id} has no {SEQ} header: not written by cmdlog",
                        message.sequence
                    ))
                })?;
            Ok(Some(HubHead {
                seq,
                hash: header(&message.headers, HASH).unwrap_or("").to_string(),
                stream_seq: message.sequence,
                host: header(&message.headers, HOST).unwrap_or("").to_string(),
                pushed_at: rfc3339(message.time),
            }))
        }
        Err(e) if e.kind() == DirectGetErrorKind::NotFound => Ok(None),
        Err(e) => Err(hub.error(format!("reading the last record of log {log_id}: {e}"))),
    }
}

/// A JetStream time as RFC 3339.
pub(crate) fn rfc3339(time: async_nats::datetime::DateTime) -> String {
    let ms = (time.unix_timestamp_nanos() / 1_000_000).max(0) as u64;
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// A current-thread runtime for the hub verbs.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, HubError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| HubError(format!("cannot start the runtime: {e}")))
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
