//! Sessions: creating, closing, and appending their domain events.

use cmdlog_store::AppendError;

use super::Engine;
use crate::command::Mode;
use crate::event::{EventData, NewEvent, Seq, SessionCreated, SessionEnded};
use crate::state::SessionState;

/// Appending a domain event failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// No such session: create it first.
    #[error("unknown session {session:?}; create it first (the CLI does with --session)")]
    Unknown {
        /// The id.
        session: String,
    },
    /// The session was closed or died; nothing may follow.
    #[error("session {session:?} ended at seq {ended}; start a new session")]
    Ended {
        /// The id.
        session: String,
        /// Seq of its end.
        ended: Seq,
    },
    /// A session id breaks the rules.
    #[error(
        "invalid session id {session:?}: use 1 to 128 of A-Z a-z 0-9 . _ : - starting with a letter or digit"
    )]
    InvalidId {
        /// The id.
        session: String,
    },
    /// The append failed.
    #[error(transparent)]
    Append(#[from] AppendError),
}

impl Engine {
    /// What the fold knows of `session`.
    pub fn session(&self, session: &str) -> Option<SessionState> {
        self.with_state(|s| s.sessions.get(session).cloned())
    }

    /// Creates `session` if it does not exist; `Ok(true)` when created. An ended
    /// session is an error.
    pub async fn ensure_session(
        &self,
        session: &str,
        agent: &str,
        mode: Mode,
    ) -> Result<bool, SessionError> {
        if !valid_id(session) {
            return Err(SessionError::InvalidId {
                session: session.into(),
            });
        }
        match self.check_session(session) {
            Ok(()) => Ok(false),
            Err(SessionError::Unknown { .. }) => {
                self.append(vec![NewEvent {
                    observed: None,
                    at: self.now(),
                    session: Some(session.into()),
                    agent: Some(agent.into()),
                    data: EventData::SessionCreated(SessionCreated {
                        mode: Some(mode),
                        parent: None,
                    }),
                }])
                .await?;
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }

    /// Closes `session`: nothing may follow it.
    pub async fn close_session(
        &self,
        session: &str,
        reason: Option<String>,
    ) -> Result<Seq, SessionError> {
        self.append_session_event(
            session,
            None,
            EventData::SessionClosed(SessionEnded {
                reason,
                details: None,
            }),
        )
        .await
    }

    /// Appends a domain event to an open session.
    pub async fn append_session_event(
        &self,
        session: &str,
        agent: Option<&str>,
        data: EventData,
    ) -> Result<Seq, SessionError> {
        self.check_session(session)?;
        Ok(self
            .append(vec![NewEvent {
                observed: None,
                at: self.now(),
                session: Some(session.into()),
                agent: agent.map(str::to_string),
                data,
            }])
            .await?
            .first)
    }

    /// Appends domain events in one batch and one durable commit, in order:
    /// `(session, agent, data)`, where a `None` session is a log-wide event. Every
    /// session must be open, or nothing is appended. Returns the first seq.
    pub async fn append_events(
        &self,
        events: Vec<(Option<String>, Option<String>, EventData)>,
    ) -> Result<Seq, SessionError> {
        for (session, _, _) in &events {
            if let Some(session) = session {
                self.check_session(session)?;
            }
        }
        let at = self.now();
        let events = events
            .into_iter()
            .map(|(session, agent, data)| NewEvent {
                observed: None,
                at,
                session,
                agent,
                data,
            })
            .collect();
        Ok(self.append(events).await?.first)
    }

    /// `Ok` when `session` exists and has not ended; otherwise why not.
    pub fn check_session(&self, session: &str) -> Result<(), SessionError> {
        match self.session(session) {
            Some(SessionState {
                ended: Some(ended), ..
            }) => Err(SessionError::Ended {
                session: session.into(),
                ended,
            }),
            Some(SessionState {
                created: Some(_), ..
            }) => Ok(()),
            _ => Err(SessionError::Unknown {
                session: session.into(),
            }),
        }
    }
}

/// Whether `id` is a valid session or agent id: 1 to 128 of `A-Za-z0-9._:-`,
/// starting with a letter or digit.
pub fn valid_id(id: &str) -> bool {
    id.len() <= crate::limits::ID_BYTES_MAX
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:-".contains(c))
}
