//! Registering and ending commands and the receipt resolver.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use cmdlog_store::{AppendError, BlobError};

use super::handler::NewRegistration;
use super::{Engine, Inner, lock};
use crate::attachments::FileReceiptResolver;
use crate::command::{CommandName, CommandSpec, InvalidName};
use crate::event::Scope;
use crate::event::{EventData, NewEvent, Registered, Seq, UnregisterReason, Unregistered};
use crate::registry::Registration;

/// `register` failed; nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// Same name, same layer, same provider, overlapping modes.
    #[error(
        "/{name} is already registered by provider {provider} in this scope for overlapping modes (registration seq {existing}); dispose it first or restrict supported_modes"
    )]
    Conflict {
        /// The name.
        name: String,
        /// The provider.
        provider: String,
        /// The registration in the way.
        existing: Seq,
    },
    /// A prompt command needs a template and no handler; others need a handler.
    #[error("/{name}: {message}")]
    Shape {
        /// The name.
        name: String,
        /// What is wrong.
        message: &'static str,
    },
    /// A file receipt resolver is already registered.
    #[error("a file receipt resolver is already registered; dispose it before registering another")]
    ResolverTaken,
    /// Storing the template failed.
    #[error("could not store the template of /{name}: {source}")]
    Template {
        /// The name.
        name: String,
        /// Why.
        source: BlobError,
    },
    /// Appending the registration failed.
    #[error("could not record the registration of /{name}: {source}")]
    Append {
        /// The name.
        name: String,
        /// Why.
        source: AppendError,
    },
}

impl Engine {
    /// Registers a command. Returns its disposer.
    pub async fn register(&self, new: NewRegistration) -> Result<Disposer, RegisterError> {
        let name = new.command.name.to_string();
        let shape = |message| RegisterError::Shape {
            name: name.clone(),
            message,
        };
        match (new.command.is_prompt(), &new.handler, &new.template) {
            (true, None, Some(_)) | (false, Some(_), None) => {}
            (true, _, _) => return Err(shape("a prompt command takes a template and no handler")),
            (false, _, _) => return Err(shape("a local command takes a handler and no template")),
        }
        let _writes = self.inner.registry_writes.lock().await;
        if let Some(existing) = self.with_state(|s| {
            s.registry
                .active()
                .find(|r| {
                    r.scope == new.scope
                        && r.provider.id == new.provider.id
                        && names_overlap(&r.command, &new.command)
                        && r.command
                            .effective_modes()
                            .iter()
                            .any(|m| new.command.supports(*m))
                })
                .map(|r| r.seq)
        }) {
            return Err(RegisterError::Conflict {
                name,
                provider: new.provider.id,
                existing,
            });
        }
        let template = match new.template {
            Some(text) => Some(
                self.inner
                    .log
                    .put_blob_async(text.into_bytes())
                    .await
                    .map_err(|source| RegisterError::Template {
                        name: name.clone(),
                        source,
                    })?
                    .to_hex(),
            ),
            None => None,
        };
        let agent = match &new.scope {
            Scope::Agent(a) => Some(a.clone()),
            Scope::Global => None,
        };
        let event = NewEvent {
            observed: None,
            at: self.now(),
            session: None,
            agent,
            data: EventData::Registered(Box::new(Registered {
                scope: new.scope,
                provider: new.provider,
                command: new.command,
                template,
                origin: new.origin,
            })),
        };
        let mut handlers = self.inner.handlers.lock().await;
        let seq = self
            .append(vec![event])
            .await
            .map_err(|source| RegisterError::Append { name, source })?
            .first;
        if let Some(handler) = new.handler {
            handlers.insert(seq, handler);
        }
        drop(handlers);
        drop(_writes);
        self.notify();
        Ok(Disposer {
            engine: Arc::downgrade(&self.inner),
            registration: seq,
            disposed: AtomicBool::new(false),
        })
    }

    /// Ends an active registration with `reason`. `Ok(false)` when it was not active.
    pub async fn unregister(
        &self,
        registration: Seq,
        reason: UnregisterReason,
    ) -> Result<bool, AppendError> {
        let _writes = self.inner.registry_writes.lock().await;
        let active = self.with_state(|s| {
            s.registry
                .get(registration)
                .is_some_and(Registration::is_active)
        });
        if !active {
            return Ok(false);
        }
        self.append(vec![NewEvent {
            observed: None,
            at: self.now(),
            session: None,
            agent: None,
            data: EventData::Unregistered(Unregistered {
                registration,
                reason,
            }),
        }])
        .await?;
        self.inner.handlers.lock().await.remove(&registration);
        drop(_writes);
        self.notify();
        Ok(true)
    }

    /// Registers the sole file receipt resolver. A second one is an error until the
    /// first handle is disposed.
    pub fn register_receipt_resolver(
        &self,
        resolver: impl FileReceiptResolver,
    ) -> Result<ResolverHandle, RegisterError> {
        let mut slot = lock(&self.inner.receipts);
        if slot.is_some() {
            return Err(RegisterError::ResolverTaken);
        }
        let id = self.inner.next_observer.fetch_add(1, Ordering::SeqCst);
        *slot = Some((id, Arc::new(resolver)));
        Ok(ResolverHandle {
            engine: Arc::downgrade(&self.inner),
            id,
        })
    }
}

fn names_overlap(a: &CommandSpec, b: &CommandSpec) -> bool {
    std::iter::once(&b.name)
        .chain(&b.alt_names)
        .any(|n| a.answers_to(n.as_str()))
}

/// Validates a command name typed by a person (lowercased first).
pub fn command_name(text: &str) -> Result<CommandName, InvalidName> {
    CommandName::new(text.trim_start_matches('/').to_lowercase())
}

/// Removes exactly the resolver it was returned for.
#[derive(Debug)]
pub struct ResolverHandle {
    engine: Weak<Inner>,
    id: u64,
}

impl ResolverHandle {
    /// Unregisters the resolver (a no-op if the engine is gone).
    pub fn dispose(self) {
        if let Some(inner) = self.engine.upgrade() {
            let mut slot = lock(&inner.receipts);
            if slot.as_ref().is_some_and(|(id, _)| *id == self.id) {
                *slot = None;
            }
        }
    }
}

/// Ends one registration, exactly once.
#[derive(Debug)]
pub struct Disposer {
    engine: Weak<Inner>,
    registration: Seq,
    disposed: AtomicBool,
}

impl Disposer {
    /// Seq of the registration it ends.
    pub fn registration(&self) -> Seq {
        self.registration
    }

    /// Appends `registry/unregistered` (reason `disposed`) the first time;
    /// `Ok(false)` on later calls or when the registration already ended.
    pub async fn dispose(&self) -> Result<bool, AppendError> {
        if self.disposed.swap(true, Ordering::SeqCst) {
            return Ok(false);
        }
        let Some(inner) = self.engine.upgrade() else {
            return Err(AppendError::Closed);
        };
        let result = Engine { inner }
            .unregister(self.registration, UnregisterReason::Disposed)
            .await;
        if result.is_err() {
            self.disposed.store(false, Ordering::SeqCst);
        }
        result
    }

    /// Keeps the registration for the engine's lifetime. Dropping a disposer does too;
    /// this says so.
    pub fn forget(self) {}
}
