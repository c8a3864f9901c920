//! W&B run directories and their transaction logs.
//!
//! In: the files of a source, sorted by path. A run directory is a folder named
//! `run-<YYYYmmdd_HHMMSS>-<id>` or `offline-run-<YYYYmmdd_HHMMSS>-<id>` (the time is local; the
//! id is the run id). Its files are read from the folder itself (the legacy layout of wandb
//! 0.8/0.9) or from `files/` (current layouts): `config.yaml`, `wandb-summary.json`,
//! `wandb-metadata.json`, `wandb-history.jsonl`, `wandb-events.jsonl`; the transaction log
//! `run-<id>.wandb` sits in the folder itself. Only the files the source's path matches are
//! read, and `latest-run/` (a link to or a copy of another run directory) never is.
//!
//! Out: each input's flavour ([`classify`]); for a run directory one `wandb_runs` row (from its
//! first matched file, combining config, summary, metadata and the log's run record), history
//! rows from the log or, without a log, from `wandb-history.jsonl`, and system metrics from the
//! log's stats records or `wandb-events.jsonl`.

use serde_json::{Map, Value};

use super::log::{self, Event};
use super::rows::{self, Record, RunKey, RunRow};
use super::{Kind, Out, Plan, WandbTable, values};
use crate::core::error::{Error, Result};
use crate::core::report::Position;
use crate::stages::ingest::files::InputFile;
use crate::stages::ingest::records::Item;

/// The files of a run directory runpack reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member {
    /// `config.yaml`.
    Config,
    /// `wandb-summary.json`.
    Summary,
    /// `wandb-metadata.json`.
    Metadata,
    /// `wandb-history.jsonl` (legacy layout).
    History,
    /// `wandb-events.jsonl` (legacy layout).
    Events,
}

/// One run directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// Path relative to the pipeline.
    pub rel: String,
    /// Run id from the folder name.
    pub run_id: String,
    /// Whether the folder is an `offline-run-…` (never synced).
    pub offline: bool,
    /// Input indexes of its matched files, in path order.
    pub members: Vec<usize>,
}

fn dir_name(name: &str) -> Option<(String, bool)> {
    let re = regex::Regex::new(r"^(offline-)?run-\d{8}_\d{6}-([A-Za-z0-9_-]+)$").expect("static pattern");
    let c = re.captures(name)?;
    Some((c[2].to_string(), c.get(1).is_some()))
}

fn strip_compression(name: &str) -> &str {
    name.strip_suffix(".gz").or_else(|| name.strip_suffix(".zst")).unwrap_or(name)
}

/// Tells each input's flavour and groups run directories.
///
/// `table` decides a CSV header that fits two flavours ([`super::csv::detect`]).
///
/// Errors: [`Error::Config`] naming the file when a CSV export's flavour cannot be told or a
/// run-directory file lies outside a run directory.
pub fn classify(inputs: &[InputFile], table: super::WandbTable) -> Result<(Vec<Kind>, Vec<RunDir>)> {
    let mut kinds = Vec::with_capacity(inputs.len());
    let mut dirs: Vec<RunDir> = Vec::new();
    for (k, input) in inputs.iter().enumerate() {
        let parts: Vec<&str> = input.rel.split('/').collect();
        let name = strip_compression(parts[parts.len() - 1]);
        if parts.contains(&"latest-run") {
            kinds.push(Kind::Ignored("latest-run is a link to or a copy of another run directory".into()));
            continue;
        }
        // the innermost run directory on the path
        let found = (0..parts.len() - 1).rev().find_map(|j| dir_name(parts[j]).map(|d| (j, d)));
        if let Some((j, (run_id, offline))) = found {
            let depth = parts.len() - 1 - j;
            let in_files = depth == 2 && parts[j + 1] == "files";
            let member = match name {
                "config.yaml" => Some(Member::Config),
                "wandb-summary.json" => Some(Member::Summary),
                "wandb-metadata.json" => Some(Member::Metadata),
                "wandb-history.jsonl" => Some(Member::History),
                "wandb-events.jsonl" => Some(Member::Events),
                _ => None,
            };
            let rel = parts[..=j].join("/");
            let d = match dirs.iter().position(|d| d.rel == rel) {
                Some(d) => d,
                None => {
                    dirs.push(RunDir { rel: rel.clone(), run_id, offline, members: Vec::new() });
                    dirs.len() - 1
                }
            };
            // the same member twice (beside files/ and in it): the first is read, the other named
            let twice = member.and_then(|m| {
                dirs[d].members.iter().find(|&&other| kinds[other] == Kind::Dir(d, m)).map(|&other| &inputs[other].rel)
            });
            let kind = if depth == 1 && name.ends_with(".wandb") {
                Kind::Log(Some(d))
            } else if let (Some(first), true) = (twice, depth == 1 || in_files) {
                Kind::Ignored(format!("a second {name} of its run directory: {first} is the one read"))
            } else if let Some(m) = member.filter(|_| depth == 1 || in_files) {
                Kind::Dir(d, m)
            } else {
                Kind::Ignored("a run-directory file runpack does not read".into())
            };
            if !matches!(kind, Kind::Ignored(_)) {
                dirs[d].members.push(k);
            }
            kinds.push(kind);
            continue;
        }
        let kind = if name.ends_with(".wandb") {
            Kind::Log(None)
        } else if matches!(
            name,
            "config.yaml" | "wandb-summary.json" | "wandb-metadata.json" | "wandb-history.jsonl" | "wandb-events.jsonl"
        ) {
            return Err(Error::config(
                &input.rel,
                "a W&B run-directory file outside a run directory: the run id comes from the folder name, \
                 `run-<YYYYmmdd_HHMMSS>-<id>` or `offline-run-<YYYYmmdd_HHMMSS>-<id>`",
            ));
        } else if name.ends_with(".csv") {
            let header = super::csv::header(input)?;
            if header.is_empty() {
                // nothing to tell its flavour by, and no record: said in the warning of files not read
                kinds.push(Kind::Ignored("an empty file: no header, no record".into()));
                continue;
            }
            Kind::Csv(super::csv::detect(&header, table).map_err(|m| Error::config(&input.rel, m))?)
        } else if name.ends_with(".json") || name.ends_with(".jsonl") {
            Kind::RunList
        } else {
            Kind::Ignored("not a W&B export file".into())
        };
        kinds.push(kind);
    }
    Ok((kinds, dirs))
}

fn read_text(input: &InputFile) -> Result<String> {
    let mut s = String::new();
    std::io::Read::read_to_string(&mut crate::stages::ingest::files::open(input)?, &mut s).map_err(|e| {
        let at = Position::Pointer(String::new());
        crate::stages::ingest::records::read_failed_at(&input.rel, at, "before the end of the file", &e)
    })?;
    Ok(s)
}

/// What [`summary_step`] finds: the step and the summary's path, none, or why it cannot tell.
pub type SummaryStep = std::result::Result<Option<(i64, String)>, String>;

/// The `_step` of run directory `d`'s `wandb-summary.json` and that file's path, when it has
/// one (`Ok(None)` without a summary or a step), or why the summary cannot be read as JSON or
/// its `_step` is no step (then the history cannot be checked against it).
pub fn summary_step(plan: &Plan, d: usize) -> SummaryStep {
    let Some(k) = plan.member(d, Member::Summary) else { return Ok(None) };
    let rel = &plan.inputs[k].rel;
    let summary = read_json(&plan.inputs[k]).map_err(|e| e.to_string())?;
    let step = rows::step_of(summary.get("_step")).map_err(|m| format!("{rel}: {m}"))?;
    Ok(step.map(|s| (s, rel.clone())))
}

fn read_json(input: &InputFile) -> Result<Value> {
    let text = read_text(input)?;
    let bytes = text.trim_start_matches('\u{feff}').as_bytes();
    let rewritten = crate::stages::ingest::lenient::rewrite(bytes);
    serde_json::from_slice(rewritten.as_deref().unwrap_or(bytes))
        .map_err(|e| Error::format(format!("{}:{}", input.rel, e.line()), format!("not valid JSON: {e}")))
}

/// One system-metrics sample of a log: (record number, timestamp, metric → value).
pub type StatsSample = (u64, Option<f64>, Vec<(String, Value)>);

/// What [`jsonl`] calls per record.
type ObjFn<'a> = dyn FnMut(Map<String, Value>, Position, &mut dyn FnMut(Out) -> Result<()>) -> Result<()> + 'a;

/// A history record with its keys joined by dots, or why they could not be (see
/// [`rows::flatten`]) with the record as logged, written as JSON (for the rejected record's
/// `raw`).
pub type Flat = std::result::Result<Map<String, Value>, (String, Option<String>)>;

/// Everything a `.wandb` log says, folded.
#[derive(Debug, Default)]
pub struct Folded {
    /// The log's environment records, merged (see [`log::Event::Environment`]).
    pub environment: Option<super::environment::Environment>,
    /// The run record.
    pub run: Option<log::RunInfo>,
    /// Config after every update.
    pub config: Map<String, Value>,
    /// Summary after every update.
    pub summary: Map<String, Value>,
    /// Exit record: (exit code, runtime).
    pub exit: Option<(i32, i32)>,
    /// History records: (record number, step, values).
    pub history: Vec<(u64, Option<i64>, Flat)>,
    /// Stats records: (record number, timestamp, values).
    pub stats: Vec<StatsSample>,
    /// Where reading stopped early.
    pub stop: Option<log::Stop>,
    /// Damaged parts that reading skipped, going on after each.
    pub skipped: Vec<log::Skip>,
    /// Records read.
    pub records: u64,
    /// The run's custom x-axes (its `MetricRecord`s).
    pub axes: super::axes::XAxes,
}

/// Reads and folds a log.
///
/// Errors: [`Error::Config`] when the file is not a W&B log.
pub fn fold(input: &InputFile) -> Result<Folded> {
    let f = std::fs::File::open(&input.path).map_err(|e| Error::io(&input.path, e))?;
    let (entries, stop, skipped) =
        log::read_all(std::io::BufReader::new(f)).map_err(|m| Error::config(&input.rel, m))?;
    let mut out = Folded { stop, skipped, records: entries.len() as u64, ..Default::default() };
    for e in entries {
        match e.event {
            Event::Run(r) => {
                for (p, v) in &r.config {
                    log::set_path(&mut out.config, p, v.clone());
                }
                out.run = Some(*r);
            }
            Event::Config { update, remove } => {
                for (p, v) in update {
                    log::set_path(&mut out.config, &p, v);
                }
                for p in remove {
                    log::remove_path(&mut out.config, &p);
                }
            }
            Event::Summary { update, remove } => {
                for (p, v) in update {
                    log::set_path(&mut out.summary, &p, v);
                }
                for p in remove {
                    log::remove_path(&mut out.summary, &p);
                }
            }
            Event::History { step, items } => {
                let mut m = Map::new();
                for (p, v) in items {
                    log::set_path(&mut m, &p, v);
                }
                // a bad `_step` is reported when the record is emitted (rows::history_rows)
                let step = rows::step_of(m.get("_step")).ok().flatten().or(step);
                let flat = rows::flatten(m).map_err(|(message, record)| (message, super::record_raw(&record)));
                out.history.push((e.number, step, flat));
            }
            Event::Stats { timestamp, items } => out.stats.push((e.number, timestamp, items)),
            Event::Exit { exit_code, runtime } => out.exit = Some((exit_code, runtime)),
            Event::Metric { name, glob_name, step_metric } => out.axes.define(&name, &glob_name, &step_metric),
            Event::Environment(e) => match &mut out.environment {
                Some(first) => first.merge_later(&e),
                None => out.environment = Some(*e),
            },
            Event::Final | Event::Other => {}
        }
    }
    Ok(out)
}

fn log_run_id(plan: &Plan, k: usize, dir: Option<usize>, folded: &Folded) -> Option<String> {
    folded
        .run
        .as_ref()
        .map(|r| r.run_id.clone())
        .filter(|s| !s.is_empty())
        .or_else(|| dir.map(|d| plan.dirs[d].run_id.clone()))
        .or_else(|| log_name_run_id(&plan.inputs[k].rel))
}

/// The run id a `.wandb` log's file name gives (`run-<id>.wandb`), if it is so named.
pub fn log_name_run_id(rel: &str) -> Option<String> {
    let name = rel.rsplit('/').next().unwrap_or("");
    name.strip_prefix("run-").and_then(|n| n.strip_suffix(".wandb")).map(String::from)
}

fn stop_warning(rel: &str, folded: &Folded, out: &mut dyn FnMut(Out) -> Result<()>) -> Result<()> {
    for s in &folded.skipped {
        out(Out::Warn {
            at: None,
            kind: "wandb-log-damaged",
            message: format!(
                "{rel}: bytes {} to {} are damaged ({}) and were skipped, with the records in them; reading \
                 went on after them ({} intact record(s) read in all)",
                s.offset, s.resumed, s.reason, folded.records
            ),
        })?;
    }
    // a log read to its end without the exit record W&B writes when a run ends: a copy made
    // while the run was going, or a run killed (nothing is lost that was written)
    if folded.exit.is_none() && folded.stop.is_none() && folded.skipped.is_empty() && folded.records > 0 {
        out(Out::Warn {
            at: None,
            kind: "wandb-log-unfinished",
            message: format!(
                "{rel}: the log ends without the run's exit record after {} intact record(s): the run was still \
                 going, or was killed, when the file was written or copied; the history holds what was logged up \
                 to there",
                folded.records
            ),
        })?;
    }
    // a log of its header alone: the run logged nothing, or the file was cut right after it
    if folded.records == 0 && folded.stop.is_none() && folded.skipped.is_empty() {
        out(Out::Warn {
            at: None,
            kind: "wandb-log-damaged",
            message: format!(
                "{rel}: the log holds no record after its header: the run logged nothing, or the file was cut \
                 short right after the header"
            ),
        })?;
    }
    if let Some(s) = &folded.stop {
        out(Out::Warn {
            at: None,
            kind: "wandb-log-damaged",
            message: format!(
                "{rel}: reading stopped at byte {}: {}; the {} intact record(s) before it were read ({})",
                s.offset,
                s.reason,
                folded.records,
                if s.truncated {
                    "the writing process was probably stopped"
                } else {
                    "the records after it were not read"
                }
            ),
        })?;
    }
    Ok(())
}

/// Emits what a `.wandb` log contributes to the source's table.
///
/// Errors: [`Error::Config`] when the file is not a W&B log.
pub fn emit_log(plan: &Plan, k: usize, dir: Option<usize>, out: &mut dyn FnMut(Out) -> Result<()>) -> Result<()> {
    let input = &plan.inputs[k];
    let table = plan.opts.table;
    if table == WandbTable::Runs {
        if dir.is_none() {
            let folded = fold(input)?;
            stop_warning(&input.rel, &folded, out)?;
            let (row, summary) = match row_from(plan, None, Some((k, &folded)))? {
                Ok(x) => x,
                Err(message) => {
                    return out(Out::Bad { at: Position::Line(1), rule: "wandb-run", message, raw: None });
                }
            };
            let run = RunKey { run_id: row.run_id.clone(), run_name: row.name.clone() };
            rows::summary_histograms(&run, &summary, false, &Position::Line(1), out)?;
            return out(Out::Row(row.into_map(&plan.opts), Position::Line(1)));
        }
        if plan.is_anchor(k) {
            return emit_dir_row(plan, dir.expect("some"), out);
        }
        // the log is read with the directory's row; report its damage here
        let folded = fold(input)?;
        return stop_warning(&input.rel, &folded, out);
    }
    let mut folded = fold(input)?;
    stop_warning(&input.rel, &folded, out)?;
    // a synced run's config names its x-axes too (an offline log holds MetricRecords only)
    let config = folded.config.clone();
    folded.axes.from_config(&config);
    let run = RunKey {
        run_id: log_run_id(plan, k, dir, &folded),
        run_name: folded.run.as_ref().map(|r| r.display_name.clone()).filter(|s| !s.is_empty()),
    };
    match table {
        WandbTable::History | WandbTable::Histograms => {
            let histograms = table == WandbTable::Histograms;
            for (number, step, values) in &folded.history {
                let mut values = match values {
                    Ok(values) => values.clone(),
                    Err((message, raw)) => {
                        let at = Position::Line(*number);
                        let (message, raw) = (message.clone(), raw.clone());
                        out(Out::Bad { at, rule: "wandb-history", message, raw })?;
                        continue;
                    }
                };
                if let Some(s) = step
                    && !values.contains_key("_step")
                {
                    values.insert("_step".into(), Value::from(*s));
                }
                rows::history_rows(
                    Record { run: &run, values, sampled: false, axes: &folded.axes },
                    histograms,
                    &Position::Line(*number),
                    out,
                )?;
            }
            let has_summary_file = dir.is_some_and(|d| plan.member(d, Member::Summary).is_some());
            if histograms && !has_summary_file {
                rows::summary_histograms(&run, &folded.summary, true, &Position::Line(folded.records), out)?;
            }
        }
        WandbTable::System => {
            let start = folded.run.as_ref().and_then(|r| r.start_time);
            for (number, ts, items) in &folded.stats {
                let mut values = Map::new();
                for (key, v) in items {
                    let name = if key.starts_with("system.") { key.clone() } else { format!("system.{key}") };
                    values.insert(name, v.clone());
                }
                if let Some(t) = ts {
                    values.insert("_timestamp".into(), super::pylit::float(*t));
                    if let Some(s) = start {
                        values.insert("_runtime".into(), super::pylit::float(t - s));
                    }
                }
                rows::system_rows(&run, &values, &Position::Line(*number), out)?;
            }
        }
        WandbTable::Runs => unreachable!("handled above"),
    }
    Ok(())
}

/// Emits what a run-directory file contributes to the source's table.
///
/// Errors: [`Error::Io`], [`Error::Format`] for unreadable files.
pub fn emit_member(plan: &Plan, k: usize, d: usize, m: Member, out: &mut dyn FnMut(Out) -> Result<()>) -> Result<()> {
    let input = &plan.inputs[k];
    let has_log = plan.log_of(d).is_some();
    let run = RunKey { run_id: Some(plan.dirs[d].run_id.clone()), run_name: None };
    match (plan.opts.table, m) {
        (WandbTable::Runs, _) if plan.is_anchor(k) => emit_dir_row(plan, d, out),
        (WandbTable::History | WandbTable::Histograms, Member::History) if !has_log => {
            let histograms = plan.opts.table == WandbTable::Histograms;
            let axes = dir_axes(plan, d);
            jsonl(input, out, &mut |obj, at, out| match rows::flatten(obj) {
                Ok(values) => {
                    rows::history_rows(Record { run: &run, values, sampled: false, axes: &axes }, histograms, &at, out)
                }
                Err((message, record)) => {
                    out(Out::Bad { at, rule: "wandb-history", message, raw: super::record_raw(&record) })
                }
            })
        }
        (WandbTable::System, Member::Events) if !has_log => jsonl(input, out, &mut |obj, at, out| {
            let mut obj = obj;
            obj.shift_remove("_wandb");
            rows::system_rows(&run, &obj, &at, out)
        }),
        (WandbTable::Histograms, Member::Summary) => {
            // a summary that is no JSON is a bad record, as for the runs table
            let v = match read_json(input) {
                Ok(v) => v,
                Err(Error::Format { context, source: message }) => {
                    let message = format!("the run's summary ({context}): {message}");
                    return out(Out::Bad { at: Position::Line(1), rule: "wandb-run", message, raw: None });
                }
                Err(e) => return Err(e),
            };
            let summary = v.as_object().cloned().unwrap_or_default();
            rows::summary_histograms(&run, &summary, true, &Position::Line(1), out)
        }
        _ => Ok(()),
    }
}

/// The custom x-axes a run directory's `config.yaml` names (none when it has no readable
/// config: the runs table reports a config that cannot be read).
fn dir_axes(plan: &Plan, d: usize) -> super::axes::XAxes {
    let mut axes = super::axes::XAxes::default();
    if let Some(k) = plan.member(d, Member::Config)
        && let Ok(text) = read_text(&plan.inputs[k])
        && let Ok(Value::Object(raw)) = values::yaml(&text)
    {
        axes.from_config(&raw);
    }
    axes
}

fn jsonl(input: &InputFile, out: &mut dyn FnMut(Out) -> Result<()>, f: &mut ObjFn) -> Result<()> {
    let reader = crate::stages::ingest::files::open(input)?;
    crate::stages::ingest::records::jsonl(reader, &input.rel, &mut |item| match item {
        Item::Record(obj, at) => f(obj, at, out),
        Item::Bad { at, rule, message, raw } => out(Out::Bad { at, rule, message, raw }),
    })
}

fn emit_dir_row(plan: &Plan, d: usize, out: &mut dyn FnMut(Out) -> Result<()>) -> Result<()> {
    let folded = match plan.log_of(d) {
        Some(k) => Some((k, fold(&plan.inputs[k])?)),
        None => None,
    };
    if let Some((k, f)) = &folded
        && plan.is_anchor(*k)
    {
        stop_warning(&plan.inputs[*k].rel, f, out)?;
    }
    let (row, summary) = match row_from(plan, Some(d), folded.as_ref().map(|(k, f)| (*k, f)))? {
        Ok(x) => x,
        Err(message) => return out(Out::Bad { at: Position::Line(1), rule: "wandb-run", message, raw: None }),
    };
    let run = RunKey { run_id: row.run_id.clone(), run_name: row.name.clone() };
    rows::summary_histograms(&run, &summary, false, &Position::Line(1), out)?;
    out(Out::Row(row.into_map(&plan.opts), Position::Line(1)))
}

/// A `wandb_runs` row and the run's full summary.
type RunAndSummary = (RunRow, Map<String, Value>);

/// Fills a run's row from its run directory `d`: `config.yaml`, `wandb-summary.json` (into
/// `summary`) and `wandb-metadata.json`. A file that cannot be read is the run's bad record
/// (`Ok(Err(message))`).
fn from_run_dir(
    plan: &Plan,
    d: usize,
    row: &mut RunRow,
    summary: &mut Map<String, Value>,
) -> Result<std::result::Result<(), String>> {
    row.run_id = Some(plan.dirs[d].run_id.clone());
    row.source_files = plan.dirs[d].members.iter().map(|&k| plan.inputs[k].rel.clone()).collect();
    if let Some(k) = plan.member(d, Member::Config) {
        let input = &plan.inputs[k];
        // a config that cannot be read is a bad record of the run, as a summary is
        let text = match read_text(input) {
            Ok(text) => text,
            Err(Error::Format { source: message, .. }) => {
                return Ok(Err(format!("the run's config ({}) cannot be read: {message}", input.rel)));
            }
            Err(e) => return Err(e),
        };
        let raw = match values::yaml(&text) {
            Ok(raw) => raw,
            Err(m) => return Ok(Err(format!("the run's config ({}) cannot be read: {m}", input.rel))),
        };
        row.config_raw = Some(crate::stages::ingest::convert::json_text(&raw));
        row.config = match values::normalise_config(&raw) {
            Ok(config) => Some(config),
            Err(m) => return Ok(Err(format!("the run's config ({}): {m}", input.rel))),
        };
    }
    if let Some(k) = plan.member(d, Member::Summary) {
        // a summary that is no JSON object is a bad record of the run, as a run list's is
        let rel = &plan.inputs[k].rel;
        match read_json(&plan.inputs[k]) {
            Ok(Value::Object(o)) => *summary = o,
            Ok(other) => {
                return Ok(Err(format!(
                    "{rel}: the run's summary: expected a JSON object, found {}",
                    crate::stages::ingest::path::describe(&other)
                )));
            }
            Err(Error::Format { context, source: message }) => {
                return Ok(Err(format!("the run's summary ({context}): {message}")));
            }
            Err(e) => return Err(e),
        }
    }
    if let Some(k) = plan.member(d, Member::Metadata) {
        let mut meta = match read_json(&plan.inputs[k]) {
            Ok(meta @ Value::Object(_)) => meta,
            // a metadata that is no JSON object is a bad record of the run, as a summary is
            Ok(other) => {
                return Ok(Err(format!(
                    "{}: the run's metadata: expected a JSON object, found {}",
                    plan.inputs[k].rel,
                    crate::stages::ingest::path::describe(&other)
                )));
            }
            Err(Error::Format { context, source: message }) => {
                return Ok(Err(format!("the run's metadata ({context}): {message}")));
            }
            Err(e) => return Err(e),
        };
        values::redact(&mut meta, &plan.opts.redact);
        let s = |key: &str| meta.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(String::from);
        row.state = s("state");
        row.project = s("project");
        row.job_type = s("jobType");
        row.created_at = meta.get("startedAt").and_then(rows::created_at);
        if row.state.is_none()
            && let Some(code) = meta.get("exitcode").and_then(Value::as_i64)
        {
            row.state = Some(if code == 0 { "finished" } else { "failed" }.into());
        }
        row.metadata = Some(meta);
    }
    Ok(Ok(()))
}

/// Fills a run's row from its `.wandb` log `k` (folded into `f`): the run record, and the
/// config and summary over the run directory's when the log is whole; the exit state; the
/// environment record as the metadata, when the run directory has none. An environment record
/// whose time is no timestamp is the run's bad record (`Ok(Err(message))`).
fn from_log(
    plan: &Plan,
    d: Option<usize>,
    (k, f): (usize, &Folded),
    row: &mut RunRow,
    summary: &mut Map<String, Value>,
) -> Result<std::result::Result<(), String>> {
    if d.is_none() {
        row.source_files = vec![plan.inputs[k].rel.clone()];
    }
    row.run_id = log_run_id(plan, k, d, f);
    if let Some(r) = &f.run {
        let s = |x: &str| Some(x.to_string()).filter(|s| !s.is_empty());
        row.entity = s(&r.entity);
        row.project = s(&r.project).or(row.project.take());
        row.name = s(&r.display_name);
        row.group = s(&r.group);
        row.job_type = s(&r.job_type).or(row.job_type.take());
        row.notes = s(&r.notes);
        row.tags = Some(r.tags.clone());
        // to the nanosecond, as the record holds it: digits below a microsecond are then said
        // when the column is written, as they are of any other time
        if let Some((secs, nanos)) = r.start_exact {
            match rows::exact_time(secs, nanos) {
                Some(t) => row.created_at = Some(t),
                None => {
                    return Ok(Err(format!(
                        "{}: the run record's start_time: seconds {secs} and nanos {nanos} are no time in the years 1 \
                         to 9999",
                        plan.inputs[k].rel
                    )));
                }
            }
        }
    }
    // a whole log holds every config and summary update of the run, so it is read over
    // the directory's `config.yaml` and `wandb-summary.json`; those stand in for a log
    // that has none, or that lost records (cut short or damaged: its last updates may be
    // what was lost)
    let whole = f.stop.is_none() && f.skipped.is_empty();
    if row.config.is_none() || (whole && !f.config.is_empty()) {
        let raw = Value::Object(f.config.clone());
        row.config_raw = Some(crate::stages::ingest::convert::json_text(&raw));
        row.config = Some(values::normalise_config(&raw).map_err(|m| Error::config(&plan.inputs[k].rel, m))?);
    }
    if summary.is_empty() || (whole && !f.summary.is_empty()) {
        *summary = f.summary.clone();
    }
    match f.exit {
        Some((0, _)) => row.state = Some("finished".into()),
        Some(_) => row.state = Some("failed".into()),
        None if row.state.is_none() => row.state = f.stop.as_ref().map(|_| "crashed".to_string()),
        None => {}
    }
    if let Some((_, rt)) = f.exit {
        row.runtime_s = Some(Value::from(rt));
    }
    // a recent client's offline run keeps in its log what `wandb-metadata.json` holds
    if row.metadata.is_none()
        && let Some(env) = &f.environment
    {
        let json = match env.to_json() {
            Ok(json) => json,
            Err(m) => return Ok(Err(format!("{}: the run's environment record: {m}", plan.inputs[k].rel))),
        };
        let mut meta = Value::Object(json);
        values::redact(&mut meta, &plan.opts.redact);
        if row.created_at.is_none() {
            row.created_at = meta.get("startedAt").and_then(rows::created_at);
        }
        row.metadata = Some(meta);
    }
    Ok(Ok(()))
}

/// The `wandb_runs` row of a run directory and/or a log, with the full summary; or, as the
/// inner error, the problem of a summary whose `_step` is no step (a bad record, named by
/// the summary's file).
///
/// Errors: [`Error::Config`] when the config cannot be read.
fn row_from(
    plan: &Plan,
    d: Option<usize>,
    log: Option<(usize, &Folded)>,
) -> Result<std::result::Result<RunAndSummary, String>> {
    let mut row = RunRow { source: if d.is_some() { "run-dir" } else { "wandb-log" }, ..Default::default() };
    let mut summary: Map<String, Value> = Map::new();
    if let Some(d) = d
        && let Err(bad) = from_run_dir(plan, d, &mut row, &mut summary)?
    {
        return Ok(Err(bad));
    }
    if let Some((k, f)) = log
        && let Err(bad) = from_log(plan, d, (k, f), &mut row, &mut summary)?
    {
        return Ok(Err(bad));
    }
    if let Some(rt) = summary
        .get("_runtime")
        .cloned()
        .or_else(|| summary.get("_wandb").and_then(|w| w.get("runtime")).cloned())
        .filter(Value::is_number)
    {
        row.runtime_s = Some(rt);
    }
    row.last_step = match rows::step_of(summary.get("_step")) {
        Ok(step) => step.map(Value::from),
        Err(message) => {
            let file = d
                .and_then(|d| plan.member(d, Member::Summary))
                .or(log.map(|(k, _)| k))
                .map(|k| plan.inputs[k].rel.clone())
                .unwrap_or_default();
            return Ok(Err(format!("{file}: the run's summary: {message}")));
        }
    };
    if !summary.is_empty() {
        row.summary = Some(values::split_summary(&summary).plain);
    }
    Ok(Ok((row, summary)))
}
