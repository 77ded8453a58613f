//! The agents people already run — Claude Code, Codex, Gemini CLI, Qwen Code — as
//! cmdlog records them. `docs/agents.md` cites each agent's documentation for
//! every field read here.
//!
//! - Hooks: one payload, a [`HookDelivery`] whichever path carries it → its
//!   events ([`HookDelivery::batch`]), recorded by [`record_delivery`] as one
//!   atomic unit (a `command/done` names its run's seq in the same append,
//!   sessions are created on first sight, a repeated delivery id is left out);
//!   the daemon's route and [`deliver`] both call it. [`deliver`] is what `cmdlog hook` does
//!   with a payload: through the daemon that holds the log ([`DaemonFile`]), else
//!   into the log after whatever waits in the [`Spill`] folder, else into it.
//! - Settings: cmdlog's entries in each agent's hook settings, edited as a syntax
//!   tree ([`install`], [`uninstall`], [`write_settings`]).
//! - Transcripts: `import --from` reads each agent's transcript format, keyed so
//!   that importing again adds nothing ([`import`]).
//! - The agreement check: cmdlog's expansion of an agent's command file beside the
//!   agent's own (recorded on the `command/done`).
//!
//! ```
//! use cmdlog_agents::{AgentKind, HookDelivery};
//!
//! let agent = AgentKind::parse("claude").unwrap();
//! assert_eq!(agent.name(), "claude-code");
//! let payload = r#"{"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "hi"}"#;
//! let delivery = HookDelivery::new(agent.name(), false, 0, payload.as_bytes().to_vec());
//! assert!(!delivery.batch(|| None).is_empty());
//! ```

mod agreement;
mod append;
mod daemon;
mod deliver;
mod delivery;
mod facts;
mod headless;
mod hook;
mod install;
mod kind;
mod limits;
pub mod otel;
mod payload;
mod plan;
mod pristine;
mod record;
mod release;
mod settings_file;
mod spill;
mod status;
mod tie;
mod transcripts;
mod updates;

pub use append::Batch;
pub use daemon::DaemonFile;
pub use deliver::{HookTarget, deliver, discovery_for, drain, hook_target};
pub use delivery::{DeliveryQuery, HookDelivery, RecentDeliveries, record_delivery};
pub use facts::FactCache;
pub use headless::hook_mode;
pub use install::{
    Edit, Scope, SettingsError, after_install, events, hook_command, install, settings_path,
    settings_roots, uninstall,
};
pub use kind::{AgentKind, UnknownAgent};
pub use limits::{
    HOOK_WAIT, OTLP_BODY_BYTES_MAX, OTLP_DEPTH_MAX, OTLP_MESSAGES_MAX, OTLP_RECORDS_MAX,
    OTLP_REQUESTS_IN_FLIGHT, OTLP_REQUESTS_WAITING_MAX, PAYLOAD_BYTES_MAX,
};
pub use payload::read_payload;
pub use record::{AppendBatchError, append_to, append_with};
pub use release::{hook_release, installed_releases};
pub use settings_file::{
    SettingsFile, SettingsPlan, apply_settings, locate_settings, plan_install, plan_uninstall,
    read_settings, write_settings,
};
pub use spill::{Refused, Spill, SpillEntry, SpillReport};
pub use status::{HookStatus, LastPayload, hooks_status};
pub use transcripts::{
    ImportError, ImportSummary, TranscriptRead, default_roots, files, import, read_transcript,
};
