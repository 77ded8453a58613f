//! The projections' integration tests: gc, tamper detection, verify.

mod gc;
mod tamper;
mod verify;
