//! The projections' integration tests: gc, tamper detection, verify, the
//! sessions fold kept current.

mod gc;
mod sessions_fold;
mod tamper;
mod verify;
