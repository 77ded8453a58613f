//! The red team's findings against the capture paths (`docs/security.md`,
//! "Hostile workspaces"): each case is what an attacker planted or did, and what
//! must hold afterwards.

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;

use cmdlog_test_support::Workspace;
use serde_json::Value;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// N1: a repository ships a settings file and, beside it, a "backup" that links to
/// the user's `authorized_keys`; installing the hooks must not write through it.
#[test]
fn hooks_install_writes_through_no_planted_link() {
    let w = Workspace::new();
    let keys = w.home.path().join(".ssh/authorized_keys");
    std::fs::create_dir_all(keys.parent().unwrap()).unwrap();
    std::fs::write(&keys, "ssh-ed25519 AAAA mine\n").unwrap();
    let settings = "{\n  /* ssh-ed25519 AAAA attacker */\n  \"model\": \"opus\"\n}\n";
    w.put("ws/.claude/settings.json", settings);
    let dir = w.ws.path().join(".claude");
    symlink(&keys, dir.join("settings.json.cmdlog-backup")).unwrap();
    // Every name a writer might use beside the file, planted too.
    symlink(&keys, dir.join(".settings.json.cmdlog-tmp")).unwrap();
    let o = w.run(&["hooks", "install", "claude-code"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(read(&keys), "ssh-ed25519 AAAA mine\n", "authorized_keys untouched");
    let after = read(&dir.join("settings.json"));
    assert!(after.contains("hook claude-code"), "{after}");
    assert!(
        std::fs::symlink_metadata(dir.join("settings.json"))
            .unwrap()
            .file_type()
            .is_file()
    );
}

/// N1: a settings folder that links out of the workspace is not written into.
#[test]
fn hooks_install_refuses_a_settings_folder_that_leads_out_of_the_workspace() {
    let w = Workspace::new();
    let elsewhere = tempfile::tempdir().unwrap();
    symlink(elsewhere.path(), w.ws.path().join(".claude")).unwrap();
    let o = w.run(&["hooks", "install", "claude-code"]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("outside"), "{err}");
    assert!(std::fs::read_dir(elsewhere.path()).unwrap().next().is_none());
}

/// N11: a settings file that is a link (a dotfiles repository) stays a link; the
/// file it points to is edited.
#[test]
fn hooks_install_edits_what_a_dotfiles_link_points_to() {
    let w = Workspace::new();
    let dotfiles = w.home.path().join("dotfiles/claude.json");
    std::fs::create_dir_all(dotfiles.parent().unwrap()).unwrap();
    std::fs::write(&dotfiles, "{\"model\": \"opus\"}\n").unwrap();
    std::fs::set_permissions(&dotfiles, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = w.home.path().join(".claude/settings.json");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    symlink(&dotfiles, &link).unwrap();
    w.ok(&["hooks", "install", "claude-code", "--scope", "user"]);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    let edited = read(&dotfiles);
    assert!(edited.contains("hook claude-code"), "{edited}");
    assert_eq!(
        std::fs::metadata(&dotfiles).unwrap().mode() & 0o777,
        0o640,
        "the file keeps its mode"
    );
    let v: Value = serde_json::from_str(&edited).unwrap();
    assert_eq!(v["model"], "opus");
    w.ok(&["hooks", "uninstall", "claude-code", "--scope", "user"]);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(!read(&dotfiles).contains("hook claude-code"));
}
