//! Output helpers shared by the verbs.

use std::io::{self, Write};

pub(crate) fn print_json(out: &mut impl Write, value: &impl serde::Serialize) -> io::Result<()> {
    let text = serde_json::to_string_pretty(value).expect("cmdlog's views serialize");
    writeln!(out, "{text}")
}

/// Whether to colour stdout: a terminal, and `NO_COLOR` unset.
pub(crate) fn colour() -> bool {
    use std::io::IsTerminal;
    io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Creates (or truncates) a file only its owner can read: exports and reports hold
/// what the log holds.
pub(crate) fn owner_only_file(path: &std::path::Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}
