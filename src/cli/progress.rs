//! Progress bars for long verbs.

use std::io::{self};

/// Logs at least this long get progress bars.
const PROGRESS_EVENTS_MIN: u64 = 20_000;

/// A progress bar on stderr, drawn only when stderr is a terminal and the work is
/// large; silent otherwise.
pub(crate) struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    pub(crate) fn new(total: u64, what: &str) -> Self {
        use std::io::IsTerminal;
        if total < PROGRESS_EVENTS_MIN || !io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg:>8} {wide_bar} {pos}/{len} events, {eta} left",
        ) {
            bar.set_style(style);
        }
        bar.set_message(what.to_string());
        Progress(Some(bar))
    }

    pub(crate) fn tick(&self) -> impl FnMut(u64) + '_ {
        move |seq| {
            if let Some(bar) = &self.0 {
                bar.set_position(seq);
            }
        }
    }

    pub(crate) fn finish(self) {
        if let Some(bar) = self.0 {
            bar.finish_and_clear();
        }
    }
}
