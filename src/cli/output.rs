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

/// Where an `-o`/`--output` goes: standard output for `-` (as in every tool
/// people use), else a file only its owner can read, created or truncated
/// (exports and reports hold what the log holds).
pub(crate) fn open_output(path: &std::path::Path) -> Result<Box<dyn Write>, super::CliError> {
    use std::os::unix::fs::OpenOptionsExt;
    if path.as_os_str() == "-" {
        return Ok(Box::new(io::stdout().lock()));
    }
    let mut options = std::fs::OpenOptions::new();
    let file = options.write(true).create(true).truncate(true).mode(0o600);
    let cannot = |e| super::CliError::usage(format!("cannot write {}: {e}", path.display()));
    Ok(Box::new(file.open(path).map_err(cannot)?))
}
