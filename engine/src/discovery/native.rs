//! cmdlog's own command files, `.cmdlog/commands/*.md` in the workspace and the
//! home folder, read by seed 002's oh-my-pi rules (DESIGN §6): frontmatter errors
//! are fatal, the `markdown` dialect expands them.

use std::path::PathBuf;

use crate::command::{
    CommandKind, CommandSource, CommandSpec, CommandType, Dialect, InputDescriptor,
};
use crate::event::Origin;

use super::{
    DiscoveryConfig, DiscoveryError, Pass, ProviderId, Walk, canonical, describe, frontmatter,
    list, truthy,
};

const WALK: Walk = Walk {
    recursive: false,
    hidden: false,
    gitignore: true,
    extension: "md",
    any_case: false,
};

pub(super) fn roots(config: &DiscoveryConfig) -> Vec<(PathBuf, bool)> {
    vec![
        (config.workspace.join(".cmdlog/commands"), false),
        (config.home.join(".cmdlog/commands"), false),
    ]
}

pub(super) fn discover(pass: &mut Pass<'_>) -> Result<(), DiscoveryError> {
    let mut seen = std::collections::BTreeSet::new();
    for (item, (root, _)) in roots(pass.config).into_iter().enumerate() {
        // When the workspace is the home folder, a user and a project root coincide.
        if !seen.insert(canonical(&root)) {
            continue;
        }
        let level = ["project", "user"][item.min(1)];
        for path in pass.files(ProviderId::Native, &root, WALK) {
            let Some(file) = pass.read(ProviderId::Native, &path) else {
                continue;
            };
            let fm = frontmatter::parse_strict(&file.text).map_err(|e| DiscoveryError {
                path: file.path.clone(),
                line: e.line,
                message: e.message,
            })?;
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let Some(name) = pass.name(ProviderId::Native, &file, stem.trim()) else {
                continue;
            };
            let template = fm.body.trim().to_string();
            let field = |keys: &[&str]| {
                keys.iter()
                    .find_map(|k| fm.fields.get(*k))
                    .map(|v| v.trim().to_string())
                    .filter(|v| !v.is_empty())
            };
            let mut command =
                CommandSpec::new(name, CommandSource::SkillDirCommand, CommandKind::File);
            command.source_label = "Custom".into();
            command.command_type = Some(CommandType::Prompt);
            command.dialect = Some(Dialect::Markdown);
            command.description = describe(field(&["description"]).as_deref(), &template);
            command.argument_hint = field(&["argument-hint", "argument_hint"]);
            command.when_to_use = field(&["when_to_use", "when-to-use"]);
            command.model_invocable = !truthy(
                fm.fields
                    .get("disable-model-invocation")
                    .or(fm.fields.get("disable_model_invocation")),
            );
            command.model = field(&["model"]);
            command.allowed_tools = list(
                fm.fields
                    .get("allowed-tools")
                    .or(fm.fields.get("allowed_tools")),
            );
            if truthy(fm.fields.get("attachments")) {
                command.input = Some(InputDescriptor {
                    hint: command.argument_hint.clone().unwrap_or_default(),
                    attachments: true,
                });
            }
            let origin = Origin {
                path: file.path,
                content_hash: file.content_hash,
            };
            pass.found(
                ProviderId::Native.reference(level, item),
                origin,
                command,
                template,
            );
        }
    }
    Ok(())
}
