//! A bench whose holders' sockets live in a state folder of its own.

/// Runs this bench again as a child whose `XDG_STATE_HOME` is `dir` (set
/// before anything reads the environment) and exits with its status; in the
/// child, returns.
pub(crate) fn in_own_state_folder(dir: &std::path::Path) {
    if std::env::var_os("CMDLOG_HELD_CHILD").is_some() {
        return;
    }
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(std::env::args().skip(1))
        .env("CMDLOG_HELD_CHILD", "1")
        .env("XDG_STATE_HOME", dir)
        .status()
        .unwrap();
    std::process::exit(status.code().unwrap_or(1));
}
