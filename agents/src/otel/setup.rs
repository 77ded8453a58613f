//! `cmdlog otel setup|remove <agent>`: the settings that point an agent's
//! OpenTelemetry log export at `cmdlog serve`, each in the agent's own place
//! and syntax (`docs/agents.md`, "Telemetry"), added and taken out like the
//! hooks (`settings_file.rs`: the original kept, given back byte for byte while
//! the file is as cmdlog left it).
//!
//! - Claude Code: the `env` of its settings — `CLAUDE_CODE_ENABLE_TELEMETRY`,
//!   `OTEL_LOGS_EXPORTER=otlp`, the logs endpoint and protocol, the daemon's
//!   token as a header. User settings only: 2.1.332 ignores telemetry
//!   variables in a project's settings (a repository may only turn it off).
//! - Gemini CLI and Qwen Code: their settings' `telemetry` object (`target:
//!   local`, `otlpProtocol: http`, `otlpEndpoint`: they add `/v1/logs`). They
//!   take no headers from settings: a daemon with a token needs
//!   `OTEL_EXPORTER_OTLP_HEADERS` in their environment.
//! - Codex: an `[otel]` table appended to `config.toml` (`exporter = {
//!   otlp-http = … }`, `metrics_exporter = "none"`), taken out again as written.

use std::path::{Path, PathBuf};

use jsonc_parser::cst::CstInputValue;
use serde_json::Value;

use crate::install::{Edit, Scope, SettingsError, parse_settings};
use crate::kind::AgentKind;
use crate::settings_file::{SettingsFile, SettingsPlan, plan_adding, plan_removing};

/// Where the agent's telemetry goes: the daemon's base URL, and its token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exporter {
    /// `http://127.0.0.1:4170`: the agents post to `/v1/logs` under it.
    pub url: String,
    /// The daemon's bearer token, when it has one.
    pub token: Option<String>,
}

impl Exporter {
    fn logs_endpoint(&self) -> String {
        format!("{}/v1/logs", self.url.trim_end_matches('/'))
    }
}

/// The file an agent's telemetry settings are in, for `scope`; an error saying
/// why where the agent does not read them there.
pub fn telemetry_settings_path(
    agent: AgentKind,
    scope: Scope,
    workspace: &Path,
    home: &Path,
) -> Result<PathBuf, SettingsError> {
    let refused = |why| {
        Err(SettingsError::Scope {
            agent: agent.display_name(),
            why,
        })
    };
    match (agent, scope) {
        (AgentKind::ClaudeCode, Scope::Project) => refused(
            "2.1.332 ignores telemetry variables in a project's settings (a repository may only turn telemetry off): use --scope user",
        ),
        (AgentKind::Codex, Scope::Project) => {
            refused("reads [otel] from the user's config.toml ($CODEX_HOME): use --scope user")
        }
        (AgentKind::Codex, Scope::User) => Ok(std::env::var_os("CODEX_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".codex"))
            .join("config.toml")),
        (agent, scope) => Ok(crate::install::settings_path(agent, scope, workspace, home)),
    }
}

/// The settings cmdlog sets, as (key, value) in the agent's object.
fn entries(agent: AgentKind, exporter: &Exporter) -> Vec<(&'static str, Value)> {
    match agent {
        AgentKind::ClaudeCode => {
            let mut env = vec![
                ("CLAUDE_CODE_ENABLE_TELEMETRY", Value::from("1")),
                ("OTEL_LOGS_EXPORTER", Value::from("otlp")),
                (
                    "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
                    Value::from("http/protobuf"),
                ),
                (
                    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
                    Value::from(exporter.logs_endpoint()),
                ),
                // The log is the user's own record: prompts and tool inputs in it.
                ("OTEL_LOG_USER_PROMPTS", Value::from("1")),
                ("OTEL_LOG_TOOL_DETAILS", Value::from("1")),
            ];
            if let Some(token) = &exporter.token {
                env.push((
                    "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
                    Value::from(format!("Authorization=Bearer {token}")),
                ));
            }
            env
        }
        _ => vec![
            ("enabled", Value::from(true)),
            ("target", Value::from("local")),
            ("otlpProtocol", Value::from("http")),
            (
                "otlpEndpoint",
                Value::from(exporter.url.trim_end_matches('/')),
            ),
            ("logPrompts", Value::from(true)),
        ],
    }
}

/// The object the entries go in.
fn object_name(agent: AgentKind) -> &'static str {
    match agent {
        AgentKind::ClaudeCode => "env",
        _ => "telemetry",
    }
}

/// The first line of the `[otel]` table cmdlog appends to Codex's config.
const CODEX_MARK: &str =
    "# cmdlog: Codex's telemetry to cmdlog serve (`cmdlog otel remove codex` takes it out)";

fn codex_block(exporter: &Exporter) -> String {
    let quote = |s: &str| Value::from(s).to_string();
    let headers = exporter
        .token
        .as_ref()
        .map(|t| {
            format!(
                ", headers = {{ authorization = {} }}",
                quote(&format!("Bearer {t}"))
            )
        })
        .unwrap_or_default();
    format!(
        "{CODEX_MARK}\n[otel]\nlog_user_prompt = true\nmetrics_exporter = \"none\"\nexporter = {{ otlp-http = {{ endpoint = {}, protocol = \"binary\"{headers} }} }}\n",
        quote(&exporter.logs_endpoint())
    )
}

/// The edit that adds the telemetry settings (`text` the file's).
pub fn setup(
    path: &Path,
    text: &str,
    agent: AgentKind,
    exporter: &Exporter,
) -> Result<Edit, SettingsError> {
    let shape = |what: String| SettingsError::Shape {
        path: path.to_path_buf(),
        what,
    };
    if agent == AgentKind::Codex {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| shape(format!("it is not TOML Codex can read: {e}")))?;
        let block = codex_block(exporter);
        if text.contains(&block) {
            return Ok(unchanged(text));
        }
        if table.contains_key("otel") {
            return Err(shape(
                "it has an [otel] table already: point its exporter at the daemon by hand, or remove it first".into(),
            ));
        }
        let mut after = text.to_string();
        if !after.is_empty() && !after.ends_with('\n') {
            after.push('\n');
        }
        if !after.is_empty() {
            after.push('\n');
        }
        after.push_str(&block);
        return Ok(Edit {
            before: text.to_string(),
            after,
            events: vec!["[otel]".into()],
        });
    }
    let root = parse_settings(path, text, agent)?;
    let object = root
        .object_value()
        .or_else(|| root.value().is_none().then(|| root.object_value_or_set()))
        .ok_or_else(|| shape("the settings are not a JSON object".into()))?;
    let name = object_name(agent);
    let inner = match object.get(name) {
        Some(prop) => prop
            .object_value()
            .ok_or_else(|| shape(format!("\"{name}\" is not an object")))?,
        None => object.object_value_or_set(name),
    };
    let mut added = Vec::new();
    for (key, value) in entries(agent, exporter) {
        match inner
            .get(key)
            .and_then(|p| p.value())
            .and_then(|v| v.to_serde_value())
        {
            Some(v) if v == value => {}
            Some(other) => {
                return Err(shape(format!(
                    "{name}.{key} is {other} already: cmdlog would set {value}; change or remove it first"
                )));
            }
            None => {
                inner.append(key, to_input(&value));
                added.push(format!("{name}.{key}"));
            }
        }
    }
    if added.is_empty() {
        return Ok(unchanged(text));
    }
    let mut after = root.to_string();
    if !after.ends_with('\n') {
        after.push('\n');
    }
    Ok(Edit {
        before: text.to_string(),
        after,
        events: added,
    })
}

/// The edit that takes cmdlog's telemetry settings out (those that still hold
/// the values cmdlog set; an object left empty goes too).
pub fn remove(
    path: &Path,
    text: &str,
    agent: AgentKind,
    exporter: &Exporter,
) -> Result<Edit, SettingsError> {
    if text.trim().is_empty() {
        return Ok(unchanged(text));
    }
    if agent == AgentKind::Codex {
        // The block as cmdlog wrote it (whatever the URL): from the mark to the
        // end of its `exporter` line.
        let Some(start) = text.find(CODEX_MARK) else {
            return Ok(unchanged(text));
        };
        let rest = &text[start..];
        let end = rest
            .find("\nexporter = ")
            .and_then(|i| rest[i + 1..].find('\n').map(|j| start + i + 1 + j + 1))
            .unwrap_or(text.len());
        let mut before_block = text[..start].to_string();
        if before_block.ends_with("\n\n") {
            before_block.pop();
        }
        let after = format!("{before_block}{}", &text[end..]);
        return Ok(Edit {
            before: text.to_string(),
            after,
            events: vec!["[otel]".into()],
        });
    }
    let root = parse_settings(path, text, agent)?;
    let name = object_name(agent);
    let Some(inner) = root
        .object_value()
        .and_then(|o| o.get(name))
        .and_then(|p| p.object_value())
    else {
        return Ok(unchanged(text));
    };
    // Every key cmdlog may have set (the header's, whatever the token was).
    let ours = entries(
        agent,
        &Exporter {
            url: exporter.url.clone(),
            token: Some(String::new()),
        },
    );
    let mut removed = Vec::new();
    for prop in inner.properties() {
        let Some(key) = prop.decoded_name() else {
            continue;
        };
        let value = prop.value().and_then(|v| v.to_serde_value());
        // Ours by key and value; the endpoint and the token whatever they are
        // (the daemon may have moved since).
        let is_ours = ours.iter().any(|(k, v)| {
            *k == key
                && (Some(v) == value.as_ref()
                    || matches!(
                        *k,
                        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"
                            | "OTEL_EXPORTER_OTLP_LOGS_HEADERS"
                            | "otlpEndpoint"
                    ))
        });
        if is_ours {
            prop.remove();
            removed.push(format!("{name}.{key}"));
        }
    }
    if removed.is_empty() {
        return Ok(unchanged(text));
    }
    if inner.properties().is_empty()
        && let Some(prop) = root.object_value().and_then(|o| o.get(name))
    {
        prop.remove();
    }
    Ok(Edit {
        before: text.to_string(),
        after: root.to_string(),
        events: removed,
    })
}

fn unchanged(text: &str) -> Edit {
    Edit {
        before: text.to_string(),
        after: text.to_string(),
        events: Vec::new(),
    }
}

fn to_input(value: &Value) -> CstInputValue {
    match value {
        Value::Bool(b) => CstInputValue::from(*b),
        Value::String(s) => CstInputValue::from(s.as_str()),
        other => CstInputValue::from(other.to_string().as_str()),
    }
}

/// What the user needs to know once `setup` is written: where the telemetry
/// goes, and the header an agent cannot read from its settings.
pub fn after_setup(agent: AgentKind, exporter: &Exporter) -> Vec<String> {
    let mut lines = Vec::new();
    if exporter.token.is_some() && matches!(agent, AgentKind::Gemini | AgentKind::Qwen) {
        lines.push(format!(
            "{} takes no headers from its settings: set OTEL_EXPORTER_OTLP_HEADERS=\"Authorization=Bearer $CMDLOG_TOKEN\" in its environment",
            agent.display_name()
        ));
    }
    lines.push(format!(
        "the agent sends its telemetry to {} while `cmdlog serve` runs there (it batches events every few seconds, and at exit)",
        exporter.logs_endpoint()
    ));
    lines
}

/// Plans `setup` on `file` (the original remembered on the first one).
pub fn plan_setup(
    file: &SettingsFile,
    text: &str,
    agent: AgentKind,
    exporter: &Exporter,
) -> Result<SettingsPlan, SettingsError> {
    let edit = setup(&file.path, text, agent, exporter)?;
    let secret = exporter.token.is_some() && edit.after.contains("Bearer ");
    let plan = plan_adding(file, text, crate::pristine::what(agent, true), edit);
    Ok(if secret {
        plan.holding_a_secret()
    } else {
        plan
    })
}

/// Plans `remove` on `file`: the file as it was before `setup` while it is as
/// cmdlog left it.
pub fn plan_remove(
    file: &SettingsFile,
    text: &str,
    agent: AgentKind,
    exporter: &Exporter,
) -> Result<SettingsPlan, SettingsError> {
    let removed = remove(&file.path, text, agent, exporter)?;
    Ok(plan_removing(
        file,
        text,
        crate::pristine::what(agent, true),
        removed,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exporter(token: Option<&str>) -> Exporter {
        Exporter {
            url: "http://127.0.0.1:4170".into(),
            token: token.map(str::to_string),
        }
    }

    #[test]
    fn claude_gets_its_env_and_loses_only_it() {
        let path = Path::new("/h/.claude/settings.json");
        let text = "{\n  \"model\": \"opus\",\n  \"env\": {\n    \"FOO\": \"1\"\n  }\n}\n";
        let edit = setup(path, text, AgentKind::ClaudeCode, &exporter(Some("t0k"))).unwrap();
        let v: Value = serde_json::from_str(&edit.after).unwrap();
        assert_eq!(v["env"]["FOO"], "1");
        assert_eq!(v["env"]["OTEL_LOGS_EXPORTER"], "otlp");
        assert_eq!(
            v["env"]["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"],
            "http://127.0.0.1:4170/v1/logs"
        );
        assert_eq!(
            v["env"]["OTEL_EXPORTER_OTLP_LOGS_HEADERS"],
            "Authorization=Bearer t0k"
        );
        assert_eq!(v["model"], "opus");
        // Again: nothing to do.
        let again = setup(
            path,
            &edit.after,
            AgentKind::ClaudeCode,
            &exporter(Some("t0k")),
        )
        .unwrap();
        assert!(!again.changed());
        let back = remove(path, &edit.after, AgentKind::ClaudeCode, &exporter(None)).unwrap();
        let v: Value = serde_json::from_str(&back.after).unwrap();
        assert_eq!(v, serde_json::json!({"model": "opus", "env": {"FOO": "1"}}));
        // A value of the user's is not overwritten.
        let theirs = "{\"env\": {\"OTEL_LOGS_EXPORTER\": \"console\"}}";
        let e = setup(path, theirs, AgentKind::ClaudeCode, &exporter(None)).unwrap_err();
        assert!(
            e.to_string()
                .contains("env.OTEL_LOGS_EXPORTER is \"console\""),
            "{e}"
        );
    }

    #[test]
    fn gemini_gets_a_telemetry_object_that_goes_when_emptied() {
        let path = Path::new("/w/.gemini/settings.json");
        let text = "{\n  // mine\n  \"theme\": \"dark\"\n}\n";
        let edit = setup(path, text, AgentKind::Gemini, &exporter(None)).unwrap();
        assert!(edit.after.contains("// mine"));
        let v: Value =
            jsonc_parser::parse_to_serde_value::<Value>(&edit.after, &Default::default()).unwrap();
        assert_eq!(v["telemetry"]["otlpEndpoint"], "http://127.0.0.1:4170");
        assert_eq!(v["telemetry"]["otlpProtocol"], "http");
        let back = remove(path, &edit.after, AgentKind::Gemini, &exporter(None)).unwrap();
        assert!(!back.after.contains("telemetry"), "{}", back.after);
        assert!(back.after.contains("\"theme\": \"dark\""));
    }

    #[test]
    fn codex_gets_an_otel_table_appended_and_taken_out() {
        let path = Path::new("/h/.codex/config.toml");
        let text = "model = \"gpt-5\"\n\n[features]\nhooks = true\n";
        let edit = setup(path, text, AgentKind::Codex, &exporter(Some("t"))).unwrap();
        let table: toml::Table = edit.after.parse().unwrap();
        let http = &table["otel"]["exporter"]["otlp-http"];
        assert_eq!(
            http["endpoint"].as_str(),
            Some("http://127.0.0.1:4170/v1/logs")
        );
        assert_eq!(http["protocol"].as_str(), Some("binary"));
        assert_eq!(http["headers"]["authorization"].as_str(), Some("Bearer t"));
        assert_eq!(table["otel"]["metrics_exporter"].as_str(), Some("none"));
        assert_eq!(table["features"]["hooks"].as_bool(), Some(true));
        let back = remove(path, &edit.after, AgentKind::Codex, &exporter(None)).unwrap();
        assert_eq!(back.after, text);
        let theirs = "[otel]\nenvironment = \"dev\"\n";
        assert!(setup(path, theirs, AgentKind::Codex, &exporter(None)).is_err());
    }

    #[test]
    fn claude_project_scope_is_refused_with_why() {
        let e = telemetry_settings_path(
            AgentKind::ClaudeCode,
            Scope::Project,
            Path::new("/w"),
            Path::new("/h"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("--scope user"), "{e}");
    }
}
