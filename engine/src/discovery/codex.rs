//! Codex custom prompts (openai/codex `docs/prompts.md`; `codex-rs/core/src/
//! custom_prompts.rs`): `$CODEX_HOME/prompts/*.md` (`~/.codex/prompts`), not
//! recursive, the extension matched in any case, hidden files included; the file
//! stem is the name, invoked as `/prompts:<name>`; the frontmatter is read line by
//! line for `description` and `argument-hint` (a `name` there is ignored). The
//! model cannot invoke them. Codex has no project folder for prompts.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::command::{CommandKind, CommandSource, CommandSpec, CommandType, Dialect};
use crate::event::Origin;
use crate::expand::derived_hint;

use super::{DiscoveryConfig, Pass, ProviderId, Walk};

const WALK: Walk = Walk {
    recursive: false,
    hidden: true,
    gitignore: false,
    extension: "md",
    any_case: true,
};

fn prompts_dir(config: &DiscoveryConfig) -> PathBuf {
    config
        .codex_home
        .clone()
        .unwrap_or_else(|| config.home.join(".codex"))
        .join("prompts")
}

pub(super) fn roots(config: &DiscoveryConfig) -> Vec<(PathBuf, bool)> {
    vec![(prompts_dir(config), false)]
}

/// Codex's frontmatter: the first line `---`, up to the next `---` line; `key:
/// value` lines, keys lower-cased, one pair of quotes removed; `#` lines skipped.
/// Unterminated, the whole file is the body.
fn frontmatter(text: &str) -> (BTreeMap<String, String>, &str) {
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return (BTreeMap::new(), text);
    };
    if first.trim() != "---" {
        return (BTreeMap::new(), text);
    }
    let mut fields = BTreeMap::new();
    let mut offset = first.len();
    for line in lines {
        offset += line.len();
        let trimmed = line.trim();
        if trimmed == "---" {
            return (fields, &text[offset..]);
        }
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some((k, v)) = trimmed.split_once(':') {
            let v = v.trim();
            let v = ['"', '\'']
                .iter()
                .find_map(|q| v.strip_prefix(*q).and_then(|r| r.strip_suffix(*q)))
                .unwrap_or(v);
            fields.insert(k.trim().to_lowercase(), v.to_string());
        }
    }
    (BTreeMap::new(), text)
}

pub(super) fn discover(pass: &mut Pass<'_>) {
    let root = prompts_dir(pass.config);
    for path in pass.files(ProviderId::Codex, &root, WALK) {
        let Some(file) = pass.read(ProviderId::Codex, &path) else {
            continue;
        };
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(name) = pass.name(ProviderId::Codex, &file, &format!("prompts:{stem}")) else {
            continue;
        };
        let (fields, body) = frontmatter(&file.text);
        let template = body.to_string();
        let mut command = CommandSpec::new(name, CommandSource::SkillDirCommand, CommandKind::File);
        command.source_label = "Prompt".into();
        command.command_type = Some(CommandType::Prompt);
        command.dialect = Some(Dialect::Codex);
        command.description = fields
            .get("description")
            .filter(|d| !d.is_empty())
            .cloned()
            .unwrap_or_else(|| "send saved prompt".into());
        command.argument_hint = fields
            .get("argument-hint")
            .or(fields.get("argument_hint"))
            .filter(|h| !h.is_empty())
            .cloned()
            .or_else(|| derived_hint(&template, Dialect::Codex));
        let origin = Origin {
            path: file.path,
            content_hash: file.content_hash,
        };
        pass.found(
            ProviderId::Codex.reference("user", 0),
            origin,
            command,
            template,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_as_codex_reads_it() {
        let (f, body) = frontmatter(
            "---\nName: ignored\ndescription: \"Review\"\n# note\nargument_hint: FILE=\n---\nBody\n",
        );
        assert_eq!(f["description"], "Review");
        assert_eq!(f["name"], "ignored");
        assert_eq!(f["argument_hint"], "FILE=");
        assert_eq!(body, "Body\n");
        let (f, body) = frontmatter("---\ndescription: x\nno end\n");
        assert!(f.is_empty());
        assert_eq!(body, "---\ndescription: x\nno end\n");
    }
}
