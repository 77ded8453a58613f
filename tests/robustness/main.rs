//! What must hold when things go wrong: SIGKILL crash cycles, fault sweeps, the lifecycle state machine against a model, and the attacker's catalogue.

mod crash;
mod faults;
mod hostile;
mod lifecycle_model;
mod security;
mod trust;
mod wal_damage;
