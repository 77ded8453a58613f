//! How a verb reaches a hub: the standard NATS options (`push`, `clone`,
//! `witness`, `hub`, `verify --against`), with the secrets kept off the
//! command line.

use std::path::PathBuf;

use clap::Args;
use cmdlog_hub::HubOptions;

use super::super::CliError;

/// Where a hub is and how to reach it: the standard NATS options.
#[derive(Args, Debug, Clone)]
pub(crate) struct HubArgs {
    /// The hub's NATS URL (`nats://host:4222`, `tls://…`; several, comma-separated).
    /// Credentials do not belong here (every user can read a command line): give
    /// them in NATS_USER/NATS_PASSWORD, NATS_TOKEN, a file (--password-file,
    /// --token-file, --creds), or the whole URL in NATS_URL
    #[arg(value_name = "URL", env = "NATS_URL", hide_env_values = true)]
    pub(crate) url: String,
    /// The JetStream stream that holds the logs
    #[arg(long, env = "CMDLOG_HUB_STREAM", default_value = "CMDLOG")]
    pub(crate) stream: String,
    /// User name (with --password)
    #[arg(long, env = "NATS_USER", hide_env_values = true)]
    pub(crate) user: Option<String>,
    /// Password (with --user), from the environment: a value on the command line is
    /// refused (use --password-file)
    #[arg(long, env = "NATS_PASSWORD", hide_env_values = true)]
    pub(crate) password: Option<String>,
    /// A file holding the password (its first line)
    #[arg(long, value_name = "FILE", conflicts_with = "password")]
    pub(crate) password_file: Option<PathBuf>,
    /// Token, from the environment: a value on the command line is refused (use
    /// --token-file)
    #[arg(long, env = "NATS_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// A file holding the token (its first line)
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    pub(crate) token_file: Option<PathBuf>,
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

impl HubArgs {
    /// The options the hub library takes. A secret that reached the command line
    /// (in the URL, or as --password/--token) is refused before anything is sent:
    /// every user of the machine can read a process's arguments.
    pub(crate) fn options(&self) -> Result<HubOptions, CliError> {
        let from_env = |name: &str, value: &str| std::env::var(name).is_ok_and(|v| v == value);
        refuse_url_secrets(&self.url)?;
        for (flag, var, value) in [
            ("--password", "NATS_PASSWORD", &self.password),
            ("--token", "NATS_TOKEN", &self.token),
        ] {
            if let Some(value) = value
                && !from_env(var, value)
            {
                return Err(CliError::usage(format!(
                    "{flag} was given on the command line, where every user of this machine can read it (ps)"
                ))
                .hint(format!("set {var}, or use {flag}-file FILE")));
            }
        }
        let secret = |file: &Option<PathBuf>| -> Result<Option<String>, CliError> {
            let Some(file) = file else { return Ok(None) };
            let bytes = cmdlog_common::private_fs::read_untrusted(
                file,
                cmdlog_common::private_fs::Expect {
                    bytes_max: 64 * 1024,
                    private: false,
                },
            )
            .map_err(|e| CliError::usage(format!("{}: {e}", file.display())))?;
            let text = String::from_utf8_lossy(&bytes);
            Ok(Some(text.lines().next().unwrap_or("").trim().to_string()))
        };
        Ok(HubOptions {
            url: self.url.clone(),
            stream: self.stream.clone(),
            user: self.user.clone(),
            password: secret(&self.password_file)?.or_else(|| self.password.clone()),
            token: secret(&self.token_file)?.or_else(|| self.token.clone()),
            creds: self.creds.clone(),
            tls_ca: self.tls_ca.clone(),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
        })
    }
}

/// Refuses a hub URL that carries credentials, unless it came from `NATS_URL`:
/// every user of this machine can read a command line (`ps`).
pub(crate) fn refuse_url_secrets(url: &str) -> Result<(), CliError> {
    let shown = cmdlog_hub::shown_url(url);
    if shown == url || std::env::var("NATS_URL").is_ok_and(|v| v == url) {
        return Ok(());
    }
    Err(CliError::usage(format!(
        "the hub URL {shown} was given with credentials on the command line, where every user of this machine can read them (ps)"
    ))
    .hint("give the URL without them and the secret in NATS_PASSWORD or NATS_TOKEN (or --password-file, --token-file, --creds), or the whole URL in NATS_URL"))
}

/// A runtime for the hub verbs (multi-threaded: a clone's appends block).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::hub(format!("cannot start the runtime: {e}")))
}
