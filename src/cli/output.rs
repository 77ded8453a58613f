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

pub(crate) fn paint(on: bool, code: &str, text: &str) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}
