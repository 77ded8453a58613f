//! What a workspace, another user or the environment may plant around a log, and
//! what cmdlog does: refuses by name, never writes through it, never lets a
//! folder above a project collect its sessions (design R11; git's
//! `safe.directory` and `GIT_CEILING_DIRECTORIES` for the same problem).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Output, Stdio};

use cmdlog_test_support::Workspace;

fn hook_in(w: &Workspace, dir: &Path, ceilings: Option<&Path>, payload: &str) -> Output {
    let mut cmd = w.cmd(&["hook", "claude-code"]);
    cmd.current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(c) = ceilings {
        cmd.env("CMDLOG_CEILING_DIRECTORIES", c);
    }
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn prompt(cwd: &Path, text: &str) -> String {
    serde_json::json!({
        "hook_event_name": "UserPromptSubmit",
        "session_id": "trust",
        "prompt": text,
        "cwd": cwd,
    })
    .to_string()
}

/// The log hooks record into when they can name no project.
fn private_hooks_log(w: &Workspace) -> std::path::PathBuf {
    w.home
        .path()
        .join(".local/state/cmdlog/hooks/.cmdlog/log.redb")
}

fn log_text(w: &Workspace, log: &Path) -> String {
    w.ok(&["--log", log.to_str().unwrap(), "log"])
}

#[test]
fn a_log_folder_that_is_a_link_or_a_strangers_or_open_to_others_is_refused() {
    let w = Workspace::new();
    assert!(w.run(&["run", "/help"]).status.success());
    let dot = w.ws.path().join(".cmdlog");
    // Another user's world-writable folder, linked in as .cmdlog.
    let shared = tempfile::tempdir().unwrap();
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    if cmdlog_test_support::running_as_root() {
        std::os::unix::fs::chown(shared.path(), Some(65534), Some(65534)).unwrap();
    }
    let moved = w.ws.path().join("moved");
    std::fs::rename(&dot, &moved).unwrap();
    std::os::unix::fs::symlink(shared.path(), &dot).unwrap();
    for verb in [&["run", "/help"][..], &["log"], &["verify"]] {
        let out = w.run(verb);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{verb:?}: {stderr}");
        assert!(
            stderr.contains("is a symbolic link cmdlog did not make"),
            "{verb:?}: {stderr}"
        );
    }
    assert_eq!(
        std::fs::read_dir(shared.path()).unwrap().count(),
        0,
        "nothing was started in the linked folder"
    );
    // The real folder back, but open to others: refused until it is the user's alone.
    std::fs::remove_file(&dot).unwrap();
    std::fs::rename(&moved, &dot).unwrap();
    std::fs::set_permissions(&dot, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = w.run(&["log"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("is mode 0777: others can write in it"),
        "{stderr}"
    );
    std::fs::set_permissions(&dot, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(w.ok(&["log"]).contains("/help"));
}

#[test]
fn a_hook_never_makes_a_log_at_the_root_nor_uses_a_folder_above_its_project() {
    let w = Workspace::new();
    let root_log_existed = Path::new("/.cmdlog").exists();
    // A payload whose cwd names no project, from a hook run at /.
    let lone = tempfile::tempdir().unwrap();
    let out = hook_in(
        &w,
        Path::new("/"),
        Some(lone.path()),
        &prompt(lone.path(), "from the root"),
    );
    assert!(out.status.success());
    if !root_log_existed {
        assert!(!Path::new("/.cmdlog").exists(), "a hook made /.cmdlog");
    }
    assert!(log_text(&w, &private_hooks_log(&w)).contains("from the root"));

    // A .cmdlog of our own above the project, and a ceiling between them: the
    // walk does not climb into the ceiling, the project's own folder is used.
    let outer = tempfile::tempdir().unwrap();
    std::fs::create_dir(outer.path().join(".cmdlog")).unwrap();
    let inner = outer.path().join("inner");
    std::fs::create_dir(&inner).unwrap();
    let out = hook_in(
        &w,
        &inner,
        Some(outer.path()),
        &prompt(&inner, "below a ceiling"),
    );
    assert!(out.status.success());
    assert!(log_text(&w, &inner.join(".cmdlog/log.redb")).contains("below a ceiling"));
    assert!(!outer.path().join(".cmdlog/log.redb").exists());
    // Without the ceiling the .cmdlog above is the project's.
    std::fs::remove_dir_all(inner.join(".cmdlog")).unwrap();
    let ceiling = outer.path().parent().unwrap();
    let out = hook_in(&w, &inner, Some(ceiling), &prompt(&inner, "no ceiling"));
    assert!(out.status.success());
    assert!(log_text(&w, &outer.path().join(".cmdlog/log.redb")).contains("no ceiling"));

    // Another user's .cmdlog above the project is never written.
    if !cmdlog_test_support::running_as_root() {
        eprintln!("SKIPPED (part): another user's .cmdlog needs root to make");
        return;
    }
    let theirs = tempfile::tempdir().unwrap();
    let their_dot = theirs.path().join(".cmdlog");
    std::fs::create_dir(&their_dot).unwrap();
    std::fs::set_permissions(&their_dot, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::os::unix::fs::chown(&their_dot, Some(65534), Some(65534)).unwrap();
    let project = theirs.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let out = hook_in(
        &w,
        &project,
        Some(theirs.path().parent().unwrap()),
        &prompt(&project, "not theirs"),
    );
    assert!(out.status.success());
    assert_eq!(std::fs::read_dir(&their_dot).unwrap().count(), 0);
    // Their .cmdlog marks no project: the folder the hook ran in is the project.
    assert!(log_text(&w, &project.join(".cmdlog/log.redb")).contains("not theirs"));
}

#[test]
fn keys_stay_out_of_the_workspace_and_in_a_folder_of_their_own() {
    let w = Workspace::new();
    assert!(w.run(&["run", "/help"]).status.success());
    // A relative XDG_CONFIG_HOME is ignored: the key goes under the home.
    let out = w
        .cmd(&["key"])
        .env("XDG_CONFIG_HOME", "conf")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!w.ws.path().join("conf").exists(), "a key in the workspace");
    let keys = w.home.path().join(".config/cmdlog/keys");
    assert!(keys.is_dir());
    // A keys folder others can reach is refused, not used.
    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = w.run(&["key"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a 0777 keys folder was used");
    assert!(stderr.contains("is mode 0777"), "{stderr}");
}

#[test]
fn tiles_never_follow_a_link_planted_in_the_output_folder() {
    let w = Workspace::new();
    for _ in 0..3 {
        assert!(w.run(&["run", "/help"]).status.success());
    }
    let out_dir = w.ws.path().join("tiles-out");
    std::fs::create_dir(&out_dir).unwrap();
    let victim = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(victim.path(), out_dir.join("tile")).unwrap();
    let out = w.run(&["tiles", "-o", out_dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert_eq!(std::fs::read_dir(victim.path()).unwrap().count(), 0);
}
