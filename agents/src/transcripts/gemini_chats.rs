//! What Gemini CLI's chat files say that its hook payloads do not: a turn's
//! reply as given (its `AfterAgent` repeats streamed chunks), the subagent
//! running now (its payloads carry the parent's session id), and the call
//! that started a subagent (for its chat's import). Every chat is read as an
//! untrusted file: a path from a payload only when it is one of Gemini's
//! chats under `~/.gemini/tmp`, no link followed, at most `CHAT_BYTES_MAX`.

use std::path::Path;

use serde_json::Value;

use super::gemini::message_text;

/// The call that started the subagent `child` of session `parent`, from the
/// parent's chat in `chats` (its `invoke_agent` call names the subagent's
/// session as `agentId`): `{toolUseId, agentType}` as the other agents' meta
/// files say it, or nothing. The chat is read as an untrusted file (no link
/// followed, at most `limits::CHAT_BYTES_MAX`).
pub(crate) fn delegation(chats: &Path, parent: &str, child: &str) -> Value {
    let Some(short) = parent.get(..8) else {
        return Value::Null;
    };
    let Ok(dir) = std::fs::read_dir(chats) else {
        return Value::Null;
    };
    let needle = format!("\"agentId\":\"{child}\"");
    for entry in dir.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with("session-") && name.ends_with(&format!("-{short}.jsonl"))) {
            continue;
        }
        let Some(bytes) = read_chat(&entry.path()) else {
            continue;
        };
        for line in String::from_utf8_lossy(&bytes).lines() {
            if !line.contains(&needle) {
                continue;
            }
            let record: Value = serde_json::from_str(line).unwrap_or_default();
            let calls = record["toolCalls"].as_array().into_iter().flatten();
            for call in calls {
                if call["agentId"] == child && call["name"] == "invoke_agent" {
                    let said = [
                        ("toolUseId", &call["id"]),
                        ("agentType", &call["args"]["agent_name"]),
                    ];
                    return Value::Object(
                        said.map(|(k, v)| (k.to_string(), v.clone()))
                            .into_iter()
                            .collect(),
                    );
                }
            }
        }
    }
    Value::Null
}

/// The text of the last `gemini` record of the chat at `path`: Gemini CLI 0.61's
/// `AfterAgent` hook gives a reply streamed in several chunks with the later
/// chunks repeated (`prompt_response`), while its chat has the reply as given.
/// `path` comes from a payload: it is read only when it is one of Gemini's chat
/// files under `gemini_tmp` (`~/.gemini/tmp`), a regular file of this user within
/// the size limit, opened without following a link.
pub(crate) fn last_reply(path: &Path, gemini_tmp: &Path) -> Option<String> {
    let bytes = read_chat(&chat_file(path, gemini_tmp)?)?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines().rev().find_map(|line| {
        let v: Value = serde_json::from_str(line).ok()?;
        (v["type"] == "gemini" && v["toolCalls"].as_array().is_none_or(Vec::is_empty))
            .then(|| message_text(&v["content"], false))
            .filter(|t| !t.is_empty())
    })
}

/// `path` (from a payload) when it is one of Gemini CLI's chat files under
/// `gemini_tmp`, named as it really is (no link on the way).
fn chat_file(path: &Path, gemini_tmp: &Path) -> Option<std::path::PathBuf> {
    let real = std::fs::canonicalize(path).ok()?;
    let root = std::fs::canonicalize(gemini_tmp).ok()?;
    let name = real.file_name()?.to_str()?;
    let in_chats = real
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|n| n == "chats");
    (real.starts_with(&root) && in_chats && name.starts_with("session-") && real == path)
        .then_some(real)
}

/// A chat's bytes, read as an untrusted file: a regular file of at most
/// `CHAT_BYTES_MAX`, opened without following a link or blocking.
fn read_chat(path: &Path) -> Option<Vec<u8>> {
    let expect = cmdlog_common::private_fs::Expect {
        bytes_max: crate::limits::CHAT_BYTES_MAX,
        private: false,
    };
    cmdlog_common::private_fs::read_untrusted(path, expect).ok()
}

/// The subagent of Gemini CLI session `session` running now, by the chats:
/// Gemini's hook payloads name no subagent (a subagent's calls come with its
/// parent's session id), but each subagent writes its own chat,
/// `chats/<session>/<its session id>.jsonl`, beside the session's
/// (`path`, checked as [`last_reply`] checks it). One runs while its chat
/// holds no summary (`$set` of `summary`, written when it completes) and the
/// session's chat names it in no `invoke_agent` call (written when that call
/// ends). The newest such chat, if several.
pub(crate) fn running_subagent(path: &Path, gemini_tmp: &Path, session: &str) -> Option<String> {
    if session.is_empty()
        || !session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return None;
    }
    let chat = chat_file(path, gemini_tmp)?;
    let folder = chat.parent()?.join(session);
    if !std::fs::symlink_metadata(&folder).ok()?.is_dir() {
        return None;
    }
    let mut running: Vec<(std::time::SystemTime, String)> = Vec::new();
    for entry in std::fs::read_dir(&folder).ok()?.flatten() {
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        let Some(bytes) = meta.is_file().then(|| read_chat(&entry.path())).flatten() else {
            continue;
        };
        let finished = String::from_utf8_lossy(&bytes).lines().any(|line| {
            line.starts_with("{\"$set\"")
                && serde_json::from_str::<Value>(line)
                    .is_ok_and(|v| v["$set"]["summary"].is_string())
        });
        if !finished {
            running.push((
                meta.modified().unwrap_or(std::time::UNIX_EPOCH),
                id.to_string(),
            ));
        }
    }
    if running.is_empty() {
        return None;
    }
    let parent = read_chat(&chat).unwrap_or_default();
    let parent = String::from_utf8_lossy(&parent);
    running.sort();
    running
        .into_iter()
        .rev()
        .map(|(_, id)| id)
        .find(|id| !parent.contains(&format!("\"agentId\":\"{id}\"")))
}
