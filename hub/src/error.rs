//! The hub's errors.

/// A hub failed, refused, or cannot be reached as asked. The hub's URL is shown
/// without its credentials.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HubError {
    /// The connection options do not go together.
    #[error("{0}")]
    Options(String),
    /// The hub at `hub` failed or refused.
    #[error("hub {hub}: {what}")]
    At {
        /// The hub's URL, without credentials.
        hub: String,
        /// What happened.
        what: String,
    },
}

impl HubError {
    /// An error of the hub at `hub` (shown without credentials).
    pub(crate) fn at(hub: &str, what: impl std::fmt::Display) -> HubError {
        HubError::At {
            hub: hub.to_string(),
            what: what.to_string(),
        }
    }
}
