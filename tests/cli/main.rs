//! The `cmdlog` command line, run as a user runs it in a temp workspace: the verbs, discovery of every agent's command files, attachments, audit and the bad-input catalogue.

mod attachments;
mod audit;
mod bad_input;
mod discovery;
mod verbs;
mod verifiable;
