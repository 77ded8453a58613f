//! Link options for the `cmdlog` binary.
//!
//! `cmdlog hook` and `cmdlog run` are processes of a few milliseconds, and the
//! dynamic loader's relocations of a large position-independent binary were a
//! third of `cmdlog --version` (measured with `perf`). Where the linker knows
//! them, relative relocations are packed (`-z pack-relative-relocs`, DT_RELR):
//! the binary keeps its address randomisation and the loader does a fraction of
//! the work.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux && linker_packs_relative_relocs() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the system linker (through `cc`) accepts `-z pack-relative-relocs`.
fn linker_packs_relative_relocs() -> bool {
    let Ok(out) = std::env::var("OUT_DIR") else {
        return false;
    };
    let dir = std::path::Path::new(&out);
    let source = dir.join("probe.c");
    if std::fs::write(&source, "int main(void) { return 0; }\n").is_err() {
        return false;
    }
    Command::new("cc")
        .arg("-Wl,-z,pack-relative-relocs")
        .arg("-o")
        .arg(dir.join("probe"))
        .arg(&source)
        .output()
        .is_ok_and(|o| o.status.success() && o.stderr.is_empty())
}
