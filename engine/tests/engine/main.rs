//! The engine's integration tests: attachments, every agent's dialect and discovery, the lifecycle, parser properties, the prompt pipeline.

mod attachments;
mod dialects;
mod discovery;
mod lifecycle;
mod parse_props;
mod prompt;
