//! A real browser for the HTML cmdlog writes: Debian's `chromium`, headless,
//! with the flags that keep it off the network. Skipped loudly when there is
//! none; `CMDLOG_REQUIRE_BROWSER` (set by `.ci/run`, which installs it) makes a
//! missing browser a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The browser to use: `CMDLOG_CHROMIUM`, else `chromium` on the `PATH`; `None`
/// (after saying SKIPPED) when there is none and none is required.
pub fn chromium(test: &str) -> Option<PathBuf> {
    required(test, "CMDLOG_CHROMIUM", "chromium", "chromium")
}

/// Chromium's WebDriver: `CMDLOG_CHROMEDRIVER`, else `chromedriver` on the
/// `PATH` (Debian's `chromium-driver`); `None` (after saying SKIPPED) when
/// there is none and none is required.
pub fn chromedriver(test: &str) -> Option<PathBuf> {
    required(
        test,
        "CMDLOG_CHROMEDRIVER",
        "chromedriver",
        "chromium-driver",
    )
}

/// The program named by `$env`, else `name` on the `PATH`, when it runs
/// (`--version`); else SKIPPED said loudly, or a failure when
/// `CMDLOG_REQUIRE_BROWSER` is set.
fn required(test: &str, env: &str, name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os(env)
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        })
        .filter(|p| {
            Command::new(p)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    if found.is_none() {
        assert!(
            std::env::var_os("CMDLOG_REQUIRE_BROWSER").is_none(),
            "{test}: no {name} (CMDLOG_REQUIRE_BROWSER is set); `.ci/run` installs {package}"
        );
        eprintln!(
            "\n*** SKIPPED {test}: no {name} found (apt-get install {package}, or set {env}) ***\n"
        );
    }
    found
}

/// The document `page` (a local file) becomes once Chromium has loaded it and
/// run what it would run: `--dump-dom`, in a fresh profile, off the network.
pub fn rendered_dom(chromium: &Path, page: &Path) -> String {
    let profile = tempfile::tempdir().expect("a browser profile");
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed on {}: {}",
        page.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the DOM is UTF-8")
}
