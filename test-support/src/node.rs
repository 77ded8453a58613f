//! A suite of Node tests (`node --test`) run from a Rust test: skipped loudly
//! when its packages are not installed, required where a variable says so (CI),
//! its TAP summary and the figure lines it prints shown.

use std::path::Path;
use std::process::Command;

/// One Node suite: its folder, files, what must be installed, how.
pub struct NodeSuite<'a> {
    /// The folder of its package.json.
    pub dir: &'a Path,
    /// The test files, run one at a time.
    pub tests: &'a [&'a str],
    /// Paths under `node_modules` that must exist.
    pub installed: &'a [&'a str],
    /// The variable that makes a missing install a failure (`1`).
    pub required_by: &'a str,
    /// The command that installs it.
    pub install: &'a str,
    /// What it tests, for the skip message.
    pub what: &'a str,
    /// Lines of its output to show beside the summary (figures it prints).
    pub figures: &'a [&'a str],
    /// The `cmdlog` binary it runs.
    pub cmdlog: &'a str,
    /// Variables to take out of its environment.
    pub unset: &'a [&'a str],
}

impl NodeSuite<'_> {
    /// Runs it; panics with its report when it fails or runs nothing.
    pub fn run(&self) {
        let required = std::env::var_os(self.required_by).is_some_and(|v| v == "1");
        let installed = self
            .installed
            .iter()
            .all(|p| self.dir.join("node_modules").join(p).exists());
        let node = Command::new("node").arg("--version").output();
        if !installed || node.is_err() {
            assert!(
                !required,
                "{} is not installed: run `{}` (node and npm must be on PATH)",
                self.what, self.install
            );
            eprintln!(
                "\n*** SKIPPED {}: not installed; run `{}` to test it ***\n",
                self.what, self.install
            );
            return;
        }
        let mut cmd = Command::new("node");
        cmd.args(["--test", "--test-concurrency=1", "--test-reporter=tap"])
            .args(self.tests)
            .current_dir(self.dir)
            .env("CMDLOG_BIN", self.cmdlog);
        for name in self.unset {
            cmd.env_remove(name);
        }
        let out = cmd.output().expect("node runs");
        let report = String::from_utf8_lossy(&out.stdout);
        let summary: Vec<&str> = report
            .lines()
            .filter(|l| {
                (l.starts_with("# ") && !l.starts_with("# Subtest"))
                    || self.figures.iter().any(|f| l.contains(f))
            })
            .collect();
        eprintln!("{}", summary.join("\n"));
        assert!(
            out.status.success(),
            "{} failed:\n{report}\n{}\n{}",
            self.what,
            String::from_utf8_lossy(&out.stderr),
            failures(&report)
        );
        assert!(
            summary
                .iter()
                .any(|l| l.starts_with("# pass ") && l != &"# pass 0"),
            "no test ran: {summary:?}"
        );
    }
}

/// The failed tests of a TAP report with the first lines of each one's error,
/// blank lines left out: printed last, where a log cut to its head and tail
/// still shows why.
fn failures(report: &str) -> String {
    const PER_FAILURE: usize = 14;
    const IN_ALL: usize = 90;
    let mut out = vec!["failed, in short:".to_owned()];
    let mut lines = report.lines();
    while let Some(line) = lines.next() {
        if !line.trim_start().starts_with("not ok ") {
            continue;
        }
        out.push(line.trim().to_owned());
        let mut kept = 0;
        for detail in lines.by_ref() {
            let detail = detail.trim();
            if detail == "..." {
                break;
            }
            if detail.is_empty() || kept == PER_FAILURE {
                continue;
            }
            out.push(format!("    {detail}"));
            kept += 1;
        }
    }
    if out.len() > IN_ALL {
        let left = out.len() - IN_ALL;
        out.truncate(IN_ALL);
        out.push(format!("… {left} more lines in the report above"));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::failures;

    #[test]
    fn the_digest_names_each_failure_with_its_error() {
        let report = "ok 1 - fine\n# Subtest: b\nnot ok 2 - b\n  ---\n  error: |-\n    waited 60000 ms for the dialog; the screen was:\n\n\n    Invalid auth method selected.\n  ...\nok 3 - c\n";
        let digest = failures(report);
        assert!(digest.contains("not ok 2 - b"), "{digest}");
        assert!(
            digest.contains("    waited 60000 ms for the dialog"),
            "{digest}"
        );
        assert!(digest.contains("Invalid auth method selected."), "{digest}");
        assert!(!digest.contains("ok 1 - fine"), "{digest}");
        assert!(!digest.contains("\n\n"), "{digest}");
    }
}
