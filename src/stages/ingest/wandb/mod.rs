//! Weights & Biases exports as sources: `format = "wandb"`.
//!
//! In: the files of one `[[source]]` — any mix of the export flavours people commit:
//! - UI runs-table CSV (`wandb_export_<time>.csv`: `Name, State, Notes, User, Tags, Created,
//!   Runtime, Sweep`, then config and summary columns, or a user-chosen subset);
//! - UI chart-panel CSV (an x column, then `<run> - <metric>` columns with optional
//!   `__MIN`/`__MAX`; grouped series are named `<group>: <value> - <metric>`);
//! - `api.runs()` dumps: CSV (flattened `config.*`/`summary.*` columns, or `config`/`summary`
//!   cells holding Python-dict text), JSON (an array of runs, or `{"totalCount", "runs"}` pages)
//!   and JSON Lines;
//! - `run.history()` / `scan_history()` CSVs (`_step`, `_runtime`, `_timestamp`, sparse
//!   metric columns, an optional unnamed pandas index);
//! - run directories `wandb/run-<YYYYmmdd_HHMMSS>-<id>/` and `offline-run-…`: the legacy 0.8
//!   layout (`config.yaml`, `wandb-summary.json`, `wandb-metadata.json`, `wandb-history.jsonl`,
//!   `wandb-events.jsonl` in the folder) and the current layout (the same under `files/`);
//! - the binary transaction log `run-<id>.wandb` (see [`log`]).
//!
//! The flavour of each file is detected from its place, name and content; a file that fits
//! none is an error naming the file and what was found.
//!
//! Out: the rows of one standard table, chosen with `[source.wandb] table = …` (see
//! [`columns`] for the exact columns): `runs` (one row per run), `history` (one row per run,
//! step and metric), `system` (system metrics, one row per run, timestamp and metric: a
//! separate, time-keyed stream, never joined on steps) or `histograms` (one row per histogram
//! value, from summaries and history).
//!
//! Checks (before any row is converted): runs listed twice across pages are dropped when the
//! copies agree (counted) and are violations when they differ; a `totalCount` that the unique
//! runs do not reach is a violation; a run's history that looks sampled (fewer rows than the
//! run list's `historyLineCount`/`lastHistoryStep`/summary `_step` say, exactly 500 rows that
//! are not steps 0–499, or steps with a constant stride above 1) is a violation, or with
//! `on_sampled = "accept"` a warning ("sampled export") and `sampled = true` on its rows;
//! damaged `.wandb` logs give every intact record and a warning naming the byte offset where
//! reading stopped; media values (images, tables, …) are counted in a warning per key and type.

pub mod api;
pub mod axes;
pub mod csv;
pub mod environment;
pub mod log;
pub mod pylit;
pub mod rows;
pub mod run_dir;
pub mod values;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use self::rows::RunKey;
use super::convert::Target;
use super::files::InputFile;
use super::records::Item;
use crate::core::error::{Error, Result};
use crate::core::report::{BuildReport, Position, SourceRef, Violation};
use crate::core::spec::SourceDef;

use crate::core::spec::WandbColumn;
pub use crate::core::spec::{ExtraColumn, OnSampled, WandbOptions, WandbTable};

fn target(kind: &str) -> Option<Target> {
    Some(match kind {
        "number" => Target::Float64,
        "integer" => Target::Int64,
        "string" => Target::Str,
        "boolean" => Target::Bool,
        "any" => Target::Json,
        _ => return None,
    })
}

fn columns_of(table: WandbTable) -> Vec<(String, Target)> {
    table
        .columns()
        .into_iter()
        .map(|(name, kind)| {
            let target = match kind {
                WandbColumn::Text => Target::Str,
                WandbColumn::Integer => Target::Int64,
                WandbColumn::Number => Target::Float64,
                WandbColumn::Boolean => Target::Bool,
                WandbColumn::Timestamp => Target::Timestamp,
                WandbColumn::Json => Target::Json,
                WandbColumn::JsonObject => Target::JsonObject,
                WandbColumn::TextList => Target::List(Box::new(Target::Str)),
                WandbColumn::NumberList => Target::List(Box::new(Target::Float64)),
            };
            (name.to_string(), target)
        })
        .collect()
}

/// The columns of a source's table.
///
/// - `runs`: `entity, project, run_id, name, state, group, job_type` (Utf8), `tags`
///   (`List<Utf8>`), `notes` (Utf8), `created_at` (Timestamp µs UTC), `runtime_s` (Float64
///   seconds), `last_step` (Int64), `history_rows` (Int64, the run's `historyLineCount`), `url`,
///   `config` (JSON text, normalised: wrappers removed, `_wandb` dropped), `config_raw` (JSON
///   text of the config as found), `summary` (JSON text of the plain summary values: no
///   `_wandb`, histograms or media), `fields` (JSON text of export columns whose role the export
///   does not say: UI tables and flattened dumps mix config and summary), `metadata` (JSON text
///   of `wandb-metadata.json`, redacted), `source` (the flavour: `ui-runs-csv`, `api-runs-csv`,
///   `api-runs-json`, `run-dir`, `wandb-log`), `source_files` (`List<Utf8>`), then the extra
///   columns of `[[source.wandb.column]]`.
/// - `history`: `run_id, run_name` (Utf8; chart exports only have names), `step` (Int64
///   `_step`), `timestamp` (Float64 `_timestamp`, Unix seconds as logged), `runtime_s` (Float64
///   `_runtime`), `metric` (Utf8, the key as logged; nested keys dotted), `value` (Float64;
///   NaN/±Infinity kept), `value_text` (Utf8: the JSON text of a value that is no number, so
///   that a string keeps its quotes, `"true"`, beside the boolean `true`; an integer beyond
///   ±2^53 as its digits; a logged `None` gives a row with both null), `value_min`,
///   `value_max` (Float64, chart `__MIN`/`__MAX`), `x_axis` (Utf8: the chart's x column, or
///   the metric's own step metric, `wandb.define_metric(…, step_metric=…)`, from a `.wandb`
///   log's definitions or a config's `_wandb`; see [`axes`]), `x` (Float64, its value in the
///   same row), `sampled` (Boolean).
/// - `system`: `run_id`, `timestamp` (Float64 Unix seconds), `runtime_s`, `metric` (the literal
///   name, `system.gpu.0.gpu`; `.wandb` stats keys get the `system.` prefix the W&B server adds),
///   `value`, `value_text`.
/// - `histograms`: `run_id`, `key`, `step` (Int64), `origin` (`summary` | `history`),
///   `bin_edges` (`List<Float64>`, one more than the counts), `counts` (`List<Float64>`).
pub fn columns(o: &WandbOptions) -> Vec<(String, Target)> {
    let mut cols = columns_of(o.table);
    for c in &o.columns {
        cols.push((c.name.clone(), target(&c.kind).expect("checked at load")));
    }
    cols
}

/// What the flavour readers hand out.
#[derive(Debug, Clone)]
pub enum Out {
    /// A row of the source's table.
    Row(Map<String, Value>, Position),
    /// A line or record that could not be read.
    Bad {
        /// Where.
        at: Position,
        /// Rule name.
        rule: &'static str,
        /// What was wrong.
        message: String,
        /// The record as read, for the rejects file's `raw`: a line's text, or a record
        /// (a run, a history step, a CSV row by its header's names) written as JSON text;
        /// `None` when nothing of it could be read.
        raw: Option<String>,
    },
    /// Something to report once (a damaged log, an ignored file).
    Warn {
        /// Where.
        at: Option<Position>,
        /// Warning kind.
        kind: &'static str,
        /// Text.
        message: String,
    },
    /// A history record of `run` at `step` was seen (for the sampling checks).
    Step {
        /// Which run.
        run: RunKey,
        /// Its `_step`.
        step: Option<i64>,
    },
    /// A media value (or a histogram where no histogram table is built) was skipped.
    Media {
        /// Summary or history key.
        key: String,
        /// Its `_type`.
        kind: String,
    },
}

/// The flavour of one input.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A `.wandb` transaction log, with the run directory it is in.
    Log(Option<usize>),
    /// A file of a run directory.
    Dir(usize, run_dir::Member),
    /// A CSV export.
    Csv(csv::CsvKind),
    /// A JSON or JSON Lines run list.
    RunList,
    /// Not read, with the reason.
    Ignored(String),
}

/// What the first pass found: each input's flavour, run directories, and the outcome of the
/// checks that the second pass applies.
#[derive(Debug)]
pub struct Plan {
    /// The options.
    pub opts: WandbOptions,
    /// All inputs of the source.
    pub inputs: Vec<InputFile>,
    /// Flavour by input index.
    pub kinds: Vec<Kind>,
    /// Run directories.
    pub dirs: Vec<run_dir::RunDir>,
    /// Run-list records dropped as identical copies: (input index, record number).
    pub skip: BTreeSet<(usize, u64)>,
    /// Run-list records of a run listed twice with different values, (input index, record
    /// number) → the message and the run as found (JSON text; `None`: its row is written
    /// instead): each copy is a bad record (rejected with `--on-invalid reject`), since neither
    /// can be told to be the right one.
    pub conflicts: BTreeMap<api::RecordAt, api::Conflict>,
    /// Runs whose history export was accepted as sampled, by run id or name.
    pub sampled: BTreeSet<String>,
}

impl Plan {
    /// Whether input `k` is the first matched file of its run directory.
    pub fn is_anchor(&self, k: usize) -> bool {
        match &self.kinds[k] {
            Kind::Dir(d, _) | Kind::Log(Some(d)) => self.dirs[*d].members.first() == Some(&k),
            _ => false,
        }
    }

    /// Input index of a run directory's member of kind `m`.
    pub fn member(&self, d: usize, m: run_dir::Member) -> Option<usize> {
        self.dirs[d].members.iter().copied().find(|&k| self.kinds[k] == Kind::Dir(d, m))
    }

    /// Input index of a run directory's `.wandb` log.
    pub fn log_of(&self, d: usize) -> Option<usize> {
        self.dirs[d].members.iter().copied().find(|&k| self.kinds[k] == Kind::Log(Some(d)))
    }

    fn run_sampled(&self, run: &RunKey) -> bool {
        run.run_id.as_ref().or(run.run_name.as_ref()).is_some_and(|r| self.sampled.contains(r))
    }
}

/// Emits everything input `k` contributes to the source's table.
fn emit(plan: &Plan, k: usize, out: &mut dyn FnMut(Out) -> Result<()>) -> Result<()> {
    let input = &plan.inputs[k];
    match &plan.kinds[k] {
        Kind::Ignored(_) => Ok(()),
        Kind::RunList => api::emit_list(plan, k, out),
        Kind::Csv(c) => csv::emit(plan, k, *c, out),
        Kind::Log(dir) => run_dir::emit_log(plan, k, *dir, out),
        Kind::Dir(d, m) => run_dir::emit_member(plan, k, *d, *m, out),
    }
    .map_err(|e| match e {
        Error::Config { .. } | Error::Io { .. } | Error::Invalid { .. } => e,
        other => Error::format(input.rel.clone(), other),
    })
}

/// Second pass: the items input `k` yields, for the converter.
///
/// Errors: as the first pass ([`prepare`]); the data problems were reported there.
pub fn read(plan: &Plan, k: usize, sink: &mut dyn FnMut(Item) -> Result<()>) -> Result<()> {
    let sampled = &plan.sampled;
    let csv = matches!(plan.kinds[k], Kind::Csv(_));
    // credentials are replaced in what a bad record says and keeps for the rejects file too,
    // as in its row
    let clean = |text: String| values::scrub_credentials(&text).unwrap_or(text);
    emit(plan, k, &mut |o| match o {
        // an identical copy of a run a CSV export lists twice (see `prepare`)
        Out::Row(_, Position::Line(n)) if csv && plan.skip.contains(&(k, n)) => Ok(()),
        // a run listed twice with different values: each copy is a bad record
        Out::Row(m, Position::Line(n)) if plan.conflicts.contains_key(&(k, n)) => {
            let (message, raw) = plan.conflicts[&(k, n)].clone();
            sink(Item::Bad {
                at: Position::Line(n),
                rule: "wandb-duplicate",
                message: clean(message),
                raw: raw.or_else(|| record_raw(&m)).map(clean),
            })
        }
        Out::Row(mut m, at) => {
            // credentials a run's config, summary, notes or tags hold, or a logged text (said in
            // the first pass)
            scrub_row(plan.opts.table, &mut m);
            if !sampled.is_empty()
                && let Some(Value::Bool(false)) = m.get("sampled")
            {
                let key = RunKey {
                    run_id: m.get("run_id").and_then(Value::as_str).map(String::from),
                    run_name: m.get("run_name").and_then(Value::as_str).map(String::from),
                };
                if plan.run_sampled(&key) {
                    m.insert("sampled".into(), Value::Bool(true));
                }
            }
            sink(Item::Record(m, at))
        }
        Out::Bad { at, rule, message, raw } => {
            sink(Item::Bad { at, rule, message: clean(message), raw: raw.map(clean) })
        }
        Out::Warn { .. } | Out::Step { .. } | Out::Media { .. } => Ok(()),
    })
}

#[derive(Default)]
struct Steps {
    files: BTreeSet<usize>,
    /// Each history record's `_step`, with the input it is in.
    steps: Vec<(i64, usize)>,
    rows: u64,
}

/// One warning for the histograms a source skipped (none when another source reads them) and
/// one for its media values, each with the count of values and the keys (with their `_type`s).
fn warn_media(
    media: &BTreeMap<(String, String), u64>,
    histograms_elsewhere: bool,
    name: &str,
    report: &mut BuildReport,
) {
    let mut histograms: (u64, Vec<String>) = (0, Vec::new());
    let mut others: (u64, BTreeMap<&str, Vec<&str>>) = (0, BTreeMap::new());
    for ((key, kind), n) in media {
        if kind == "histogram" {
            histograms.0 += n;
            histograms.1.push(format!("`{key}`"));
        } else {
            others.0 += n;
            others.1.entry(key).or_default().push(kind);
        }
    }
    let keys = |names: &[String]| {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        crate::core::report::first_names(&names, 5)
    };
    if histograms.0 > 0 && !histograms_elsewhere {
        report.warn(
            name,
            "wandb-media",
            None,
            format!(
                "{} histogram value(s) skipped ({}): histograms are not part of this table (read them with a source \
                 of table = \"histograms\")",
                crate::core::numbers::group_digits(histograms.0),
                keys(&histograms.1)
            ),
        );
    }
    if others.0 > 0 {
        let named: Vec<String> =
            others.1.iter().map(|(key, kinds)| format!("`{key}` ({})", kinds.join(", "))).collect();
        report.warn(
            name,
            "wandb-media",
            None,
            format!(
                "{} media value(s) skipped ({}): media values are references to files, not data, and are not read",
                crate::core::numbers::group_digits(others.0),
                keys(&named)
            ),
        );
    }
}

/// First pass over a source: detects each input's flavour, groups run directories, reports
/// warnings (damaged logs, ignored files, skipped media values) and runs the run-list and
/// sampled-history checks, recording violations in `report`.
///
/// `histograms_elsewhere`: another source of the pipeline reads histograms (`table =
/// "histograms"`), so the histograms this one skips are not said.
///
/// `context` names the source in the pipeline file (`./pipeline.toml (source w)`), for
/// errors in its options.
///
/// Errors: [`Error::Config`] naming the file when its flavour cannot be detected or a run id
/// cannot be found, and naming `context` when `run_capture` names no capture or a
/// `[[source.wandb.column]]` names a key no run has; [`Error::Io`] for unreadable files.
pub fn prepare(
    src: &SourceDef,
    inputs: &[InputFile],
    context: &str,
    histograms_elsewhere: bool,
    report: &mut BuildReport,
) -> Result<Plan> {
    let opts = src.wandb.clone().expect("checked at load");
    if let Some(c) = &opts.run_capture
        && let Some(first) = inputs.first()
        && !first.captures.iter().any(|(n, _)| n == c)
    {
        return Err(Error::config(context, format!("run_capture = {c:?} names no {{capture}} of the source's path")));
    }
    let (kinds, dirs) = run_dir::classify(inputs, opts.table)?;
    let mut plan = Plan {
        opts,
        inputs: inputs.to_vec(),
        kinds,
        dirs,
        skip: BTreeSet::new(),
        conflicts: BTreeMap::new(),
        sampled: BTreeSet::new(),
    };
    let table = plan.opts.table;
    let name = src.name.clone();
    warn_ignored(&plan, inputs, &name, context, report)?;
    warn_superseded(&plan, inputs, &name, report);
    // run lists: duplicates, totals, expectations
    let lists = api::scan_lists(&plan)?;
    if table == WandbTable::Runs {
        (plan.skip, plan.conflicts) = api::check_duplicates(&plan, &lists, &name, report);
    }
    let FilePass {
        per_run, media, credentials, csv_skip, csv_conflicts, read_names, filled, runs_read, damaged, ..
    } = FilePass::read(&plan, inputs, &name, report)?;
    warn_media(&media, histograms_elsewhere, &name, report);
    if !credentials.is_empty() {
        let n = credentials.len();
        let named: Vec<String> =
            credentials.iter().map(|(run, columns)| format!("{run} ({})", columns.join(", "))).collect();
        report.warn(
            &name,
            "wandb-credentials",
            None,
            format!(
                "{n} run{} credentials (a URL's user and password, access tokens) in {}, replaced by REDACTED: {}",
                if n == 1 { " holds" } else { "s hold" },
                if n == 1 { "its texts" } else { "their texts" },
                crate::core::report::first_names(&named.iter().map(String::as_str).collect::<Vec<_>>(), 5)
            ),
        );
    }
    if runs_read > 0
        && let Some(c) = plan.opts.columns.iter().zip(&filled).find_map(|(c, f)| (!f).then_some(c))
    {
        return Err(Error::config(
            format!("{context}, [[source.wandb.column]] {}", c.name),
            format!(
                "from = {:?} names a key none of the {} run(s) read has (`config.<key>` and `summary.<key>` \
                 read that object, then the export's unassigned columns; a bare key reads config, summary, then \
                 those columns; a key is looked up as written, then as a dotted path)",
                c.from,
                crate::core::numbers::group_digits(runs_read)
            ),
        ));
    }
    plan.skip.extend(csv_skip);
    plan.conflicts.extend(csv_conflicts);
    if table == WandbTable::History {
        check_sampling(&mut plan, &lists, &per_run, &read_names, &damaged, &name, report);
    }
    Ok(plan)
}

/// What one pass over every file of a W&B source finds, for the checks after it.
#[derive(Default)]
struct FilePass {
    /// The steps of each run's history (by id, else name), with the files they are in.
    per_run: BTreeMap<String, Steps>,
    /// Media values skipped, by (key, kind).
    media: BTreeMap<(String, String), u64>,
    /// Runs whose texts held credentials, replaced: the run (its id, or its place), and the
    /// columns.
    credentials: Vec<(String, Vec<String>)>,
    /// The runs of runs-table CSV exports, by id: (where first seen, the row), as the run
    /// lists' runs are checked for duplicates.
    csv_runs: BTreeMap<String, (usize, SourceRef, Value)>,
    /// Rows of those exports that repeat a run: (file, line).
    csv_skip: BTreeSet<(usize, u64)>,
    /// Rows of those exports that contradict each other, with the message.
    csv_conflicts: BTreeMap<(usize, u64), (String, Option<String>)>,
    /// The ids and names runs' histories give them.
    read_names: BTreeSet<String>,
    /// Whether any run gives each `[[source.wandb.column]]` a value (a `from` that matches no
    /// run is a typo, not a column of nulls).
    filled: Vec<bool>,
    runs_read: u64,
    /// `.wandb` logs with records lost (cut short, or a damaged part skipped), with what their
    /// warnings say (a failed build prints its violations, which repeat it).
    damaged: BTreeMap<usize, Vec<String>>,
}

impl FilePass {
    /// Reads every file of the source once, passing its warnings to `report`.
    fn read(plan: &Plan, inputs: &[InputFile], name: &str, report: &mut BuildReport) -> Result<FilePass> {
        let table = plan.opts.table;
        let extra = plan.opts.columns.clone();
        let mut pass = FilePass { filled: vec![false; extra.len()], ..FilePass::default() };
        for (k, input) in inputs.iter().enumerate() {
            let rel = input.rel.clone();
            let runs_csv = table == WandbTable::Runs && matches!(plan.kinds[k], Kind::Csv(_));
            emit(plan, k, &mut |o| {
                if let Out::Row(m, at) = &o {
                    if table == WandbTable::Runs {
                        pass.runs_read += 1;
                    }
                    let changed = credentials_in(table, m);
                    if !changed.is_empty() {
                        // a run without an id (a UI export without its `ID` column) is named by its place
                        let run = m
                            .get("run_id")
                            .and_then(Value::as_str)
                            .map(String::from)
                            .unwrap_or_else(|| SourceRef { file: rel.clone(), at: at.clone() }.to_string());
                        // a run listed twice is named once, with the columns of both copies
                        match pass.credentials.iter_mut().find(|(r, _)| *r == run) {
                            Some((_, columns)) => {
                                for c in changed {
                                    if !columns.contains(&c) {
                                        columns.push(c);
                                    }
                                }
                            }
                            None => pass.credentials.push((run, changed)),
                        }
                    }
                    // found in the run's config, summary or unassigned columns, null or not
                    if table == WandbTable::Runs {
                        let object = |k: &str| m.get(k).and_then(Value::as_object);
                        for (f, c) in pass.filled.iter_mut().zip(&extra) {
                            *f |=
                                rows::extra_lookup(c, object("config"), object("summary"), object("fields")).is_some();
                        }
                    }
                }
                match o {
                    Out::Row(m, Position::Line(n)) if runs_csv => {
                        let Some(id) = m.get("run_id").and_then(Value::as_str).map(String::from) else { return Ok(()) };
                        let mut row = m;
                        row.shift_remove("source_files");
                        let here = SourceRef { file: rel.clone(), at: Position::Line(n) };
                        match pass.csv_runs.get(&id) {
                            None => {
                                pass.csv_runs.insert(id, (k, here, Value::Object(row)));
                            }
                            Some((first_k, first, before)) => {
                                match api::run_listed_twice(
                                    report,
                                    name,
                                    &id,
                                    (first, before),
                                    (&here, &Value::Object(row)),
                                ) {
                                    None => {
                                        pass.csv_skip.insert((k, n));
                                    }
                                    Some(message) => {
                                        if let Position::Line(m) = first.at {
                                            pass.csv_conflicts.insert((*first_k, m), (message.clone(), None));
                                        }
                                        pass.csv_conflicts.insert((k, n), (message, None));
                                    }
                                }
                            }
                        }
                    }
                    Out::Warn { at, kind, message } => {
                        if kind == "wandb-log-damaged" {
                            pass.damaged.entry(k).or_default().push(message.clone());
                        }
                        report.warn(name, kind, at.map(|at| SourceRef { file: rel.clone(), at }), message)
                    }
                    Out::Step { run, step } => {
                        // the ids and names a run's history gives it, to match run lists by (once
                        // a run, not once a row)
                        let seen =
                            run.run_id.as_ref().or(run.run_name.as_ref()).is_some_and(|k| pass.per_run.contains_key(k));
                        if !seen {
                            pass.read_names.extend(run.run_id.iter().chain(&run.run_name).cloned());
                        }
                        let key = run.run_id.or(run.run_name).unwrap_or_default();
                        let e = pass.per_run.entry(key).or_default();
                        e.files.insert(k);
                        e.rows += 1;
                        if let Some(s) = step {
                            e.steps.push((s, k));
                        }
                    }
                    Out::Media { key, kind } => *pass.media.entry((key, kind)).or_default() += 1,
                    Out::Row(..) | Out::Bad { .. } => {}
                }
                Ok(())
            })?;
        }
        Ok(pass)
    }
}

/// Warns of the files the W&B reader leaves out; a path that matched only such files is an
/// error naming `context` (a mistake in the path, not a source without runs).
fn warn_ignored(plan: &Plan, inputs: &[InputFile], name: &str, context: &str, report: &mut BuildReport) -> Result<()> {
    let ignored: Vec<String> = plan
        .kinds
        .iter()
        .zip(inputs)
        .filter_map(|(k, i)| match k {
            Kind::Ignored(why) => Some(format!("{} ({why})", i.rel)),
            _ => None,
        })
        .collect();
    // a path that matched only such files (`wandb/*` beside the logs wandb links there) reads
    // nothing: a mistake in the path, not a source without runs
    if !ignored.is_empty() && ignored.len() == inputs.len() {
        return Err(Error::config(
            context,
            format!(
                "the path matches {} file(s), none of which this W&B reader reads: {}{}; a run folder's files \
                 are matched by a pattern that goes into it (`wandb/**`, `wandb/*run-*/**`)",
                ignored.len(),
                ignored.iter().take(5).map(String::as_str).collect::<Vec<_>>().join(", "),
                if ignored.len() > 5 { ", …" } else { "" }
            ),
        ));
    }
    if !ignored.is_empty() {
        let shown: Vec<&String> = ignored.iter().take(10).collect();
        report.warn(
            name,
            "wandb-ignored",
            None,
            format!(
                "{} matched file(s) hold nothing this W&B reader uses and were not read: {}{}",
                ignored.len(),
                shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "),
                if ignored.len() > 10 { ", …" } else { "" }
            ),
        );
    }
    Ok(())
}

/// Warns of a run folder's history and events files left out because its `.wandb` log is read.
fn warn_superseded(plan: &Plan, inputs: &[InputFile], name: &str, report: &mut BuildReport) {
    let table = plan.opts.table;
    // a run directory's history and events files, when its `.wandb` log is read instead
    let mut superseded: Vec<String> = Vec::new();
    for d in 0..plan.dirs.len() {
        let Some(log) = plan.log_of(d) else { continue };
        for m in [run_dir::Member::History, run_dir::Member::Events] {
            let read_here = match m {
                run_dir::Member::History => matches!(table, WandbTable::History | WandbTable::Histograms),
                _ => table == WandbTable::System,
            };
            if let Some(k) = plan.member(d, m).filter(|_| read_here) {
                superseded.push(format!("{} (the run's log {} is read)", inputs[k].rel, inputs[log].rel));
            }
        }
    }
    if !superseded.is_empty() {
        report.warn(
            name,
            "wandb-superseded",
            None,
            format!(
                "{} file(s) not read, as their run's `.wandb` log holds the same records and more: {}",
                superseded.len(),
                superseded.join(", ")
            ),
        );
    }
}

/// Whether a file is a chart-panel export (one metric, or a few, of each run: two panels of a
/// run hold the same steps).
fn exported_chart(kind: &Kind) -> bool {
    matches!(kind, Kind::Csv(csv::CsvKind::Chart))
}

/// Whether a history file's flavour can be sampled (exports made through the W&B API or UI);
/// logs and run-directory history files are complete by construction.
fn exported(kind: &Kind) -> bool {
    matches!(kind, Kind::Csv(csv::CsvKind::History) | Kind::Csv(csv::CsvKind::Chart))
}

/// Checks that each run's history was read whole: see [`check_run_history`] and the runs of
/// which no history row was read at all (damaged logs, run folders, run lists).
fn check_sampling(
    plan: &mut Plan,
    lists: &api::Lists,
    per_run: &BTreeMap<String, Steps>,
    read_names: &BTreeSet<String>,
    damaged: &BTreeMap<usize, Vec<String>>,
    name: &str,
    report: &mut BuildReport,
) {
    for (run, st) in per_run {
        check_run_history(plan, lists, damaged, name, run, st, report);
    }
    damaged_without_rows(plan, per_run, damaged, name, report);
    run_dirs_without_history(plan, lists, per_run, read_names, name, report);
    listed_runs_without_history(plan, lists, per_run, read_names, name, report);
}

/// Checks one run's history rows (`st`, read from its files): repeated steps are warned of,
/// and history that is incomplete, missing or sampled against what the run lists or the run's
/// own summary report is a violation (or a warning, with `on_sampled = "accept"`).
fn check_run_history(
    plan: &mut Plan,
    lists: &api::Lists,
    damaged: &BTreeMap<usize, Vec<String>>,
    name: &str,
    run: &str,
    st: &Steps,
    report: &mut BuildReport,
) {
    let steps = repeated_steps(plan, name, run, st, report);
    let file_list = st.files.iter().map(|&k| plan.inputs[k].rel.clone()).collect::<Vec<_>>().join(", ");
    let max = steps.last().copied();
    let rows = st.rows;
    let mut problem: Option<String> = None;
    // a log whose records were lost holds less history than the run logged (the warning
    // says which bytes)
    if let Some((_, why)) = st.files.iter().find_map(|k| damaged.get_key_value(k)) {
        problem = Some(format!(
            "{LOG_CUT}: {}; so {} rows (max `_step` {}) are not all the run logged",
            why.join("; "),
            crate::core::numbers::group_digits(rows),
            max.map(|m| m.to_string()).unwrap_or_else(|| "none".into())
        ));
    }
    if problem.is_none()
        && let Some(why) = lists.expect.get(run).and_then(|exp| exp.unusable.as_ref())
    {
        problem = Some(format!(
            "history not checked: {file_list} has {} rows (max `_step` {}), and the run list, which says how \
             far the run logged, cannot be read: {why}",
            crate::core::numbers::group_digits(rows),
            max.map(|m| m.to_string()).unwrap_or_else(|| "none".into()),
        ));
    }
    if let Some(exp) = lists.expect.get(run).filter(|_| problem.is_none()) {
        let mut reported = Vec::new();
        if let Some(n) = exp.history_line_count {
            reported.push(format!("{} rows", crate::core::numbers::group_digits(n)));
        }
        let last = exp.last_history_step.or(exp.summary_step);
        if let Some(l) = last {
            let what = if exp.last_history_step.is_some() { "lastHistoryStep" } else { "summary _step" };
            reported.push(format!("{what} {l}"));
        }
        let short_rows = exp.history_line_count.is_some_and(|n| rows < n);
        let short_step = last.is_some_and(|l| max.is_none_or(|m| m < l));
        if short_rows || short_step {
            problem = Some(format!(
                "{HISTORY_INCOMPLETE}: {file_list} has {} rows (max `_step` {}); the run reports {}",
                crate::core::numbers::group_digits(rows),
                max.map(|m| m.to_string()).unwrap_or_else(|| "none".into()),
                match reported.len() {
                    2 => format!("{} ({})", reported[0], reported[1]),
                    _ => reported.join(""),
                }
            ));
        }
    }
    // a run directory's history file against the run's own summary (a copy made while the
    // run was going, or cut short): its last `_step` was logged, so the history holds it
    if problem.is_none() && !lists.expect.contains_key(run) {
        problem = against_summary(plan, st, &file_list, max);
    }
    let from_export = st.files.iter().any(|&k| exported(&plan.kinds[k]));
    // a run list that gives the history's length and last step, both matched, says the
    // history is whole, whatever its steps look like
    let vouched = lists.expect.get(run).is_some_and(|exp| {
        exp.history_line_count == Some(rows) && exp.last_history_step.is_none_or(|l| max == Some(l))
    });
    if problem.is_none() && from_export && !vouched && steps.len() >= 3 {
        let stride = steps[1] - steps[0];
        let constant = stride > 1 && steps.windows(2).all(|w| w[1] - w[0] == stride);
        let contiguous = steps.windows(2).all(|w| w[1] - w[0] == 1);
        if constant {
            problem = Some(format!(
                "history looks sampled: {file_list} has {} rows with `_step` every {stride} ({} … {})",
                crate::core::numbers::group_digits(rows),
                steps[0],
                steps[steps.len() - 1]
            ));
        } else if steps.len() == 500 && !contiguous {
            problem = Some(format!(
                "history looks sampled: {file_list} has exactly 500 rows (run.history() keeps 500 by default) \
                 and `_step` is not contiguous ({} … {}); export with scan_history() or read the run's .wandb log",
                steps[0],
                steps[steps.len() - 1]
            ));
        }
    }
    let Some(p) = problem else { return };
    let first = st
        .files
        .iter()
        .next()
        .map(|&k| SourceRef { file: plan.inputs[k].rel.clone(), at: Position::Pointer(String::new()) });
    incomplete(plan, report, name, run, &p, first);
}

/// A run directory's history (`st`) against the run's own summary: incomplete when the
/// summary's `_step` (the highest over the run's directories: a resumed run has one per
/// session) is past the last step read (`max`); unchecked when no summary can be read.
fn against_summary(plan: &Plan, st: &Steps, file_list: &str, max: Option<i64>) -> Option<String> {
    let rows = st.rows;
    // the highest over the run's directories (a resumed run has one per session); a
    // summary whose `_step` is no step leaves the history unchecked
    let read: Vec<std::result::Result<Option<(i64, String)>, String>> = st
        .files
        .iter()
        .filter_map(|&k| match plan.kinds[k] {
            Kind::Dir(d, run_dir::Member::History) => Some(run_dir::summary_step(plan, d)),
            _ => None,
        })
        .collect();
    let summary_step = read.iter().filter_map(|r| r.as_ref().ok().cloned().flatten()).max();
    // a summary that cannot be read cannot vouch for the history either
    let unreadable = read.iter().find_map(|r| r.as_ref().err());
    if let (None, Some(e)) = (&summary_step, unreadable) {
        return Some(format!(
            "history not checked: {file_list} has {} rows (max `_step` {}), and the run's summary, which \
             says how far the run logged, cannot be read: {e}",
            crate::core::numbers::group_digits(rows),
            max.map(|m| m.to_string()).unwrap_or_else(|| "none".into()),
        ));
    }
    if let Some((l, summary)) = summary_step
        && max.is_none_or(|m| m < l)
    {
        return Some(format!(
            "{HISTORY_INCOMPLETE}: {file_list} has {} rows (max `_step` {}); the run's {summary} reports \
             summary _step {l}",
            crate::core::numbers::group_digits(rows),
            max.map(|m| m.to_string()).unwrap_or_else(|| "none".into()),
        ));
    }
    None
}

/// Warns of `_step` values a run logged twice, in one file or in two of its files, and
/// returns the run's distinct steps in order.
fn repeated_steps(plan: &Plan, name: &str, run: &str, st: &Steps, report: &mut BuildReport) -> Vec<i64> {
    let mut placed = st.steps.clone();
    placed.sort_unstable();
    // a step logged twice in one file, and a step logged in two files (the run folders of a
    // resumed run, which logs the steps since its last checkpoint again; two exports of one
    // run): both records become rows, which only a primary key would catch
    let (mut within, mut within_first) = (0u64, None);
    let (mut across, mut across_first) = (0u64, None);
    let mut last_across = None;
    for w in placed.windows(2) {
        let ((step, a), (next, b)) = (w[0], w[1]);
        if step != next {
            continue;
        }
        if a == b {
            within += 1;
            within_first.get_or_insert((step, a));
        } else if !exported_chart(&plan.kinds[a]) && !exported_chart(&plan.kinds[b]) && last_across != Some(step) {
            // (chart panels are exported one metric at a time: their steps repeat by design)
            across += 1;
            across_first.get_or_insert((step, a, b));
            last_across = Some(step);
        }
    }
    let mut steps: Vec<i64> = placed.iter().map(|&(s, _)| s).collect();
    steps.dedup();
    let file_ref = |k: usize| SourceRef { file: plan.inputs[k].rel.clone(), at: Position::Pointer(String::new()) };
    if let Some((step, k)) = within_first {
        report.warn(
            name,
            "wandb-repeated-step",
            Some(file_ref(k)),
            format!(
                "run {run}: {} history record(s) repeat a `_step` logged before in this file (the first: \
                 {step}); each becomes rows of the table, which a primaryKey (run_id, step, metric) would \
                 refuse",
                crate::core::numbers::group_digits(within)
            ),
        );
    }
    if let Some((step, a, b)) = across_first {
        // each file's first and last `_step`: two that both start at the first step and
        // overlap are sessions counting from the start again (a run resumed offline: W&B
        // numbers `_step` from 0 in each offline session), not steps logged again
        let span = |k: usize| {
            let of: Vec<i64> = st.steps.iter().filter(|(_, f)| *f == k).map(|(s, _)| *s).collect();
            (of.iter().min().copied(), of.iter().max().copied())
        };
        let ((a_first, a_last), (b_first, _)) = (span(a), span(b));
        let restarted = a_first.is_some() && a_first == b_first && a_last > b_first;
        let (why, rows) = if restarted {
            (
                format!(
                    "{RESTARTED_SESSIONS}, as each session of a run resumed offline does: equal `_step` values are \
                     different steps, so keep the sessions apart (by `_source_file`, or by the run's x-axis, `x`) \
                     rather than keep one row of each"
                ),
                "which a primaryKey (run_id, step, metric) would refuse",
            )
        } else {
            (
                RESUMED_SESSIONS.to_string(),
                "which a primaryKey (run_id, step, metric) refuses, unless the table keeps the later session's \
                 (on_duplicate_key = \"keep-last\" with record_columns = [\"run_id\", \"step\"] and order_by = \
                 \"timestamp\", as `runpack init` writes)",
            )
        };
        report.warn(
            name,
            "wandb-repeated-step",
            Some(file_ref(b)),
            format!(
                "run {run}: {} `_step` value(s) are logged in more than one of the run's files (the first: \
                 {step}, in {} and in {}; {why}){REPEATED_ROWS}, {rows}",
                crate::core::numbers::group_digits(across),
                plan.inputs[a].rel,
                plan.inputs[b].rel
            ),
        );
    }
    steps
}

/// What a warning of a run's files says when they count `_step` from the same start (sessions
/// of a run resumed offline): their equal steps are different steps, which no keep rule may
/// choose among.
pub const RESTARTED_SESSIONS: &str = "both files count `_step` from the same start";

/// What the `wandb-repeated-step` warning says of a run's sessions that log the steps since a
/// checkpoint again (a resumed run), which a table's keep rule can take care of.
pub const RESUMED_SESSIONS: &str = "a resumed run's folders log the steps since its last checkpoint again";

/// Where the `wandb-repeated-step` warning goes on from what it found to what a table makes
/// of it.
pub const REPEATED_ROWS: &str = "; each record becomes rows of the table";

/// A log that lost records before its first history row: no row says the run is there, so
/// the run's history is reported incomplete at the log.
fn damaged_without_rows(
    plan: &mut Plan,
    per_run: &BTreeMap<String, Steps>,
    damaged: &BTreeMap<usize, Vec<String>>,
    name: &str,
    report: &mut BuildReport,
) {
    // a log that lost records before its first history row: no row says the run is there
    let with_rows: BTreeSet<usize> = per_run.values().flat_map(|st| st.files.iter().copied()).collect();
    for (&k, why) in damaged.iter().filter(|(k, _)| !with_rows.contains(k)) {
        let rel = plan.inputs[k].rel.clone();
        let run = match plan.kinds[k] {
            Kind::Log(Some(d)) => plan.dirs[d].run_id.clone(),
            _ => run_dir::log_name_run_id(&rel).unwrap_or_else(|| rel.clone()),
        };
        let p = format!("{LOG_CUT}: {}; no history row of the run was read", why.join("; "));
        incomplete(plan, report, name, &run, &p, Some(SourceRef { file: rel, at: Position::Pointer(String::new()) }));
    }
}

/// A run directory whose summary says the run logged steps, of which no history row was
/// read: its history is reported missing (or unchecked, when the summary cannot be read).
fn run_dirs_without_history(
    plan: &mut Plan,
    lists: &api::Lists,
    per_run: &BTreeMap<String, Steps>,
    read_names: &BTreeSet<String>,
    name: &str,
    report: &mut BuildReport,
) {
    // a run directory whose summary says the run logged steps, of which no history row was
    // read (no history file or `.wandb` log among the matched files, or an empty one); a
    // resumed run counts its directories together (the highest `_step`)
    let mut dir_runs: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (d, dir) in plan.dirs.iter().enumerate() {
        dir_runs.entry(dir.run_id.clone()).or_default().push(d);
    }
    for (run, dirs) in &dir_runs {
        let run = run.as_str();
        if per_run.contains_key(run) || read_names.contains(run) || lists.expect.contains_key(run) {
            continue;
        }
        let steps: Vec<(usize, run_dir::SummaryStep)> =
            dirs.iter().map(|&d| (d, run_dir::summary_step(plan, d))).collect();
        let best = steps
            .iter()
            .filter_map(|(d, r)| r.as_ref().ok().cloned().flatten().map(|(l, s)| (l, s, *d)))
            .max_by_key(|(l, ..)| *l);
        // a summary that cannot be read cannot say that the run logged no history either
        let unreadable = steps.iter().find_map(|(d, r)| r.as_ref().err().map(|e| (*d, e.clone())));
        let read: Vec<&str> = dirs
            .iter()
            .flat_map(|&d| [plan.member(d, run_dir::Member::History), plan.log_of(d)])
            .flatten()
            .map(|k| plan.inputs[k].rel.as_str())
            .collect();
        let what = if read.is_empty() {
            format!(
                "{} has no wandb-history.jsonl or .wandb log among the matched files",
                dirs.iter().map(|&d| plan.dirs[d].rel.as_str()).collect::<Vec<_>>().join(", ")
            )
        } else {
            format!("{} {} no history row", read.join(", "), if read.len() == 1 { "holds" } else { "hold" })
        };
        let summary_at = |d: usize| {
            plan.member(d, run_dir::Member::Summary)
                .map(|k| SourceRef { file: plan.inputs[k].rel.clone(), at: Position::Pointer(String::new()) })
        };
        let Some((l, summary, d)) = best else {
            if let Some((d, e)) = unreadable {
                let p = format!(
                    "history not checked: {what}, and the run's summary, which says how far the run logged, cannot \
                     be read: {e}"
                );
                incomplete(plan, report, name, run, &p, summary_at(d));
            }
            continue;
        };
        let at = summary_at(d);
        let p = format!("history missing: {what}; the run's {summary} reports summary _step {l}");
        incomplete(plan, report, name, run, &p, at);
    }
}

/// A run the run lists say has history, of which no row was read at all: its history is
/// reported missing at its entry in the list.
fn listed_runs_without_history(
    plan: &mut Plan,
    lists: &api::Lists,
    per_run: &BTreeMap<String, Steps>,
    read_names: &BTreeSet<String>,
    name: &str,
    report: &mut BuildReport,
) {
    // a run the lists say has history, of which no row was read at all (by any of its ids
    // and names: a chart export names runs, a run list may give ids)
    for (run, exp) in &lists.expect {
        let entry = lists.entries.iter().find(|e| {
            api::run_id(&e.obj).or_else(|| e.obj.get("name").and_then(Value::as_str).map(String::from)).as_ref()
                == Some(run)
        });
        let names: Vec<String> = entry
            .map(|e| {
                ["id", "run_id", "runId", "name", "displayName", "display_name"]
                    .iter()
                    .filter_map(|k| match e.obj.get(*k)? {
                        Value::String(s) => Some(s.clone()),
                        Value::Number(n) => Some(n.to_string()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        if per_run.contains_key(run) || read_names.contains(run) || names.iter().any(|n| read_names.contains(n)) {
            continue;
        }
        let mut reported = Vec::new();
        if let Some(n) = exp.history_line_count.filter(|&n| n > 0) {
            reported.push(format!("{} rows", crate::core::numbers::group_digits(n)));
        }
        match (exp.last_history_step, exp.summary_step) {
            (Some(l), _) => reported.push(format!("lastHistoryStep {l}")),
            (None, Some(l)) => reported.push(format!("summary _step {l}")),
            (None, None) => {}
        }
        // placed at the run's entry in its list
        let at = entry.map(|e| SourceRef { file: plan.inputs[e.k].rel.clone(), at: Position::Line(e.number) });
        if let Some(why) = &exp.unusable {
            // how far the run logged cannot be read: no history read is not shown to be whole
            let p = format!(
                "history not checked: no history row of the run was read, and the run list, which says how far \
                 the run logged, cannot be read: {why}"
            );
            incomplete(plan, report, name, run, &p, at);
            continue;
        }
        if reported.is_empty() {
            continue;
        }
        let p = format!("history missing: no history row of the run was read; the run reports {}", reported.join(", "));
        incomplete(plan, report, name, run, &p, at);
    }
}

/// How the problem of a run whose history was read short of what the run logged starts (a log
/// cut short, files that hold fewer rows than its summary reports), as against a sampled
/// export's.
pub const HISTORY_INCOMPLETE: &str = "history incomplete";

/// How the problem of a run whose log lost records starts (a run killed while it wrote, a
/// log cut short or damaged): no sample of an export.
const LOG_CUT: &str = "history incomplete, its log cut short or damaged";

/// Reports problem `p` of run `run`'s history: a violation, or with `on_sampled = "accept"` a
/// warning and the run's rows marked sampled.
fn incomplete(plan: &mut Plan, report: &mut BuildReport, name: &str, run: &str, p: &str, at: Option<SourceRef>) {
    match plan.opts.on_sampled {
        OnSampled::Error => report.violation(Violation {
            scope: crate::core::report::Scope::Source,
            table: name.to_string(),
            source: at,
            path: format!("run {run}"),
            rule: "wandb-sampled".into(),
            key: None,
            message: format!(
                "{p}; the release would look complete but is not (set [source.wandb] on_sampled = \"accept\" \
                 to build it marked as a sampled export)"
            ),
            finding: None,
        }),
        OnSampled::Accept => {
            // a log cut short is said as such, not as a sample
            let what = if p.starts_with(LOG_CUT) { "" } else { "sampled export: " };
            report.warn(name, "wandb-sampled", None, format!("run {run}: {what}{p}"));
            plan.sampled.insert(run.to_string());
        }
    }
}

/// Replaces the credentials a row of `table` holds by `REDACTED`: a run's texts
/// ([`values::scrub_run_row`]), a history or system row's logged text (`value_text`); the
/// columns changed (`value_text of <metric>` for a logged text).
fn scrub_row(table: WandbTable, m: &mut Map<String, Value>) -> Vec<String> {
    if table == WandbTable::Runs {
        return values::scrub_run_row(m);
    }
    let changed = m.get_mut("value_text").is_some_and(|v| values::redact(v, &[]) > 0);
    match m.get("metric").and_then(Value::as_str) {
        Some(metric) if changed => vec![format!("value_text of {metric}")],
        None if changed => vec!["value_text".into()],
        _ => vec![],
    }
}

/// The columns of a row of `table` that [`scrub_row`] would change, the row left as it is:
/// for the first pass's warning. Only a run row is copied whole; a history or system row's
/// logged text alone, when it has one (most rows hold a number).
fn credentials_in(table: WandbTable, m: &Map<String, Value>) -> Vec<String> {
    match (table, m.get("value_text")) {
        (WandbTable::Runs, _) => scrub_row(table, &mut m.clone()),
        (_, Some(text)) if !text.is_null() => {
            let mut row = Map::new();
            row.insert("value_text".into(), text.clone());
            if let Some(metric) = m.get("metric") {
                row.insert("metric".into(), metric.clone());
            }
            scrub_row(table, &mut row)
        }
        _ => Vec::new(),
    }
}

/// A W&B run id as found in directory and file names (`[a-z0-9]+`, usually 8 characters).
pub fn is_run_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// A record written as JSON text, for [`Out::Bad`]'s `raw`.
pub(crate) fn record_raw(obj: &Map<String, Value>) -> Option<String> {
    Some(crate::stages::ingest::convert::json_raw(&Value::Object(obj.clone())).get().to_string())
}
