//! `cmdlog hub list URL` and `cmdlog hub audit URL`: the logs a hub holds, and
//! one timeline of runs across all of them, read straight from the hub.

mod args;

pub(crate) use args::{HubArgs, refuse_url_secrets, runtime};

use std::io::Write;

use clap::{Args, Subcommand};
use serde_json::json;

use cmdlog_hub::{Audited, HubAuditFilter, HubSearchError, hub_audit, list};
use cmdlog_index::Span;

use super::audit::{audit_line, parse_since};
use super::output::colour;
use super::{CliError, VerbResult, hub_failure, store_failure};
use crate::render;

#[derive(Args, Debug)]
pub(crate) struct HubVerbArgs {
    #[command(subcommand)]
    verb: HubVerb,
}

#[derive(Subcommand, Debug)]
enum HubVerb {
    /// Make (or check and update) the hub's stream and buckets, with N replicas
    Init {
        #[command(flatten)]
        hub: HubArgs,
        /// Replicas of the stream and the buckets (a three-node cluster: 3)
        #[arg(long, default_value_t = 1)]
        replicas: usize,
    },
    /// The logs on the hub: id, host, head seq and hash, last push
    List {
        #[command(flatten)]
        hub: HubArgs,
    },
    /// One timeline of runs across every log on the hub
    Audit {
        #[command(flatten)]
        hub: HubArgs,
        /// Only runs since a time (2026-11-28, 2026-11-28T09:30:00Z) or a span back (24h)
        #[arg(long)]
        since: Option<String>,
        /// Only runs recorded by this agent (claude-code, codex, …)
        #[arg(long)]
        agent: Option<String>,
        /// Only this command
        #[arg(long)]
        command: Option<String>,
        /// Stay attached: show each run pushed afterwards once it settles
        #[arg(long)]
        follow: bool,
    },
    /// Full-text search over every log on the hub (each kept as a clone in
    /// your state folder, brought up to the hub before each search)
    Search {
        #[command(flatten)]
        hub: HubArgs,
        /// The query, as `cmdlog search` takes it
        query: String,
        #[command(flatten)]
        span: super::search::SpanArgs,
        /// The most hits shown
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
}

pub(crate) fn exec(args: HubVerbArgs, json: bool) -> VerbResult {
    match args.verb {
        HubVerb::Init { hub, replicas } => {
            let options = hub.options()?;
            let made = runtime()?
                .block_on(async { cmdlog_hub::init(&options.connect().await?, replicas).await })
                .map_err(hub_failure)?;
            let mut out = render::Human::stdout(json);
            if json {
                super::output::print_json(&mut out, &made)?;
            }
            for m in made.iter().filter(|_| !json) {
                writeln!(out, "{m}")?;
            }
            Ok(0)
        }
        HubVerb::List { hub } => list_logs(hub, json),
        HubVerb::Search {
            hub,
            query,
            span,
            limit,
        } => search(hub, &query, span.span()?, limit, json),
        HubVerb::Audit {
            hub,
            since,
            agent,
            command,
            follow,
        } => {
            let since = since.as_deref().map(parse_since).transpose()?;
            let command = command.map(|c| c.trim_start_matches('/').to_lowercase());
            let filter = HubAuditFilter {
                since,
                agent,
                command,
                ..Default::default()
            };
            audit_all(hub, filter, follow, json)
        }
    }
}

fn list_logs(args: HubArgs, json: bool) -> VerbResult {
    let options = args.options()?;
    let rt = runtime()?;
    let logs = rt
        .block_on(async {
            let hub = options.connect().await?;
            let stream = hub.existing_stream().await?;
            list(&hub, &stream).await
        })
        .map_err(hub_failure)?;
    let mut out = render::Human::stdout(json);
    if json {
        super::output::print_json(&mut out, &logs)?;
        return Ok(0);
    }
    writeln!(
        out,
        "{:<32}  {:<20} {:>9}  {:<64}  last push",
        "log", "host", "head seq", "head hash"
    )?;
    for log in &logs {
        writeln!(
            out,
            "{:<32}  {:<20} {:>9}  {:<64}  {}",
            render::clean(&log.id),
            render::clean(&log.host),
            log.head_seq,
            render::clean(&log.head_hash),
            log.last_push
        )?;
    }
    if logs.is_empty() {
        writeln!(
            out,
            "(no logs on this hub yet; `cmdlog push URL` adds this one)"
        )?;
    }
    Ok(0)
}

fn search(args: HubArgs, query: &str, span: Span, limit: usize, json: bool) -> VerbResult {
    let options = args.options()?;
    let state = cmdlog_common::private_fs::state_dir()
        .map_err(|e| CliError::io(format!("the state folder: {e}")))?;
    let found = runtime()?
        .block_on(async {
            let hub = options.connect().await?;
            let mirrors = cmdlog_hub::mirrors_dir(&state, &hub);
            cmdlog_hub::hub_search(&hub, &mirrors, query, limit, span).await
        })
        .map_err(|e| match e {
            HubSearchError::Hub(e) => hub_failure(e),
            HubSearchError::Query(q) => super::search::failure(q.into()),
            e => CliError::io(e.to_string()),
        })?;
    for (log, why) in &found.skipped {
        let (log, why) = (render::clean(log), render::clean(why));
        eprintln!("cmdlog: hub search: log {log} not searched: {why}");
    }
    if found.hits.is_empty() {
        let logs = found.logs;
        return Err(CliError::not_found(format!(
            "no match for {query:?} in {logs} log(s)"
        )));
    }
    let mut out = render::Human::stdout(json);
    for h in &found.hits {
        if json {
            writeln!(out, "{}", serde_json::to_string(h).map_err(store_failure)?)?;
            continue;
        }
        let short: String = h.log_id.chars().take(8).collect();
        writeln!(out, "log {short} ({})", render::clean(&h.host))?;
        super::search::print_hit(&mut out, &h.hit)?;
    }
    Ok(0)
}

fn audit_all(args: HubArgs, filter: HubAuditFilter, follow: bool, json: bool) -> VerbResult {
    let options = args.options()?;
    let mut out = render::Human::stdout(json);
    let on = colour();
    if !json {
        writeln!(
            out,
            "{:<8} {:<12} {:<23} {:>6}  {:<14} {:<7} {:<15} {:<40} {:<9} outcome",
            "log", "host", "time", "seq", "session", "agent", "mode", "command", "duration"
        )?;
    }
    // Each run as the merge gives it, by time; a message left out, as found.
    let read = runtime()?.block_on(async {
        let hub = options.connect().await?;
        hub_audit(&hub, &filter, follow, |found| -> Result<(), CliError> {
            let r = match found {
                Audited::Foreign { log_id, foreign: f } => {
                    eprintln!(
                        "cmdlog: hub audit: stream message {} of log {} is not the log's (claims seq {}: {}): forged, or another machine's with this id; left out",
                        f.stream_seq, render::clean(&log_id), f.seq, f.why
                    );
                    return Ok(());
                }
                Audited::Row(r) => r,
            };
            if json {
                let mut value = serde_json::to_value(&r.row).map_err(store_failure)?;
                value["log_id"] = json!(r.log_id);
                value["host"] = json!(r.host);
                writeln!(out, "{value}")?;
            } else {
                let (line, outcome, code) = audit_line(&r.row);
                let short: String = r.log_id.chars().take(8).collect();
                let host: String = r.host.chars().take(12).collect();
                write!(out, "{:<8} {:<12} {line} ", render::clean(&short), render::clean(&host))?;
                out.paint(on, code, &outcome)?;
                writeln!(out)?;
            }
            out.flush()?;
            Ok(())
        })
        .await
    })?;
    if read.rows == 0 && !json {
        writeln!(out, "(no runs match)")?;
    }
    Ok(0)
}
