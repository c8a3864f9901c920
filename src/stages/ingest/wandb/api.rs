//! Run lists from the W&B API: JSON documents (an array of runs, a `{"totalCount", "runs"}`
//! page, or one run object) and JSON Lines (one run per line), as scripts dump
//! `wandb.Api().runs()`; and the mapping of one run object — from these files or from a row of
//! a flattened CSV dump — to a `wandb_runs` row.
//!
//! In: a run object with any of the keys the Python API (`id`, `name`, `state`, `group`,
//! `job_type`, `tags`, `created_at`, `config`, `summary`, `url`, `historyLineCount`,
//! `lastHistoryStep`) or GraphQL (`name` as id with `displayName`, `createdAt`, `jobType`,
//! `summaryMetrics`) use, plus flattened `config.<key>`/`summary.<key>` keys. Out: a
//! [`RunRow`]; per file, the records and the `totalCount` the page reports.
//!
//! Positions: JSON Lines rows carry their line; rows of a JSON document carry the 1-based
//! number of the run in its list.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::rows::{self, RunKey, RunRow};
use super::values;
use super::{Out, Plan};
use crate::core::error::{Error, Result};
use crate::core::report::{BuildReport, Position, SourceRef, Violation};
use crate::stages::ingest::convert::{json_text, whole_number};
use crate::stages::ingest::records::Item;

/// One run of a run list.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Input index.
    pub k: usize,
    /// Line (JSON Lines) or 1-based number in the list (JSON).
    pub number: u64,
    /// The run object.
    pub obj: Map<String, Value>,
}

/// What a run list says about a run's history.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// `historyLineCount`.
    pub history_line_count: Option<u64>,
    /// `lastHistoryStep`.
    pub last_history_step: Option<i64>,
    /// The summary's `_step`.
    pub summary_step: Option<i64>,
    /// Why the counts above cannot be trusted: `historyLineCount` or `lastHistoryStep` holds
    /// a value of another kind (see [`history_count_problem`]).
    pub unusable: Option<String>,
}

/// What is wrong with a run object's `historyLineCount` (a count, at least 0) or
/// `lastHistoryStep` (a step, at least -1: the API gives -1 for a run that logged no history),
/// when either holds a value of another kind; `None` when both are absent, null or right.
pub fn history_count_problem(obj: &Map<String, Value>) -> Option<String> {
    [("historyLineCount", 0), ("lastHistoryStep", -1)].into_iter().find_map(|(key, least)| match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(v) if whole_number(v).is_some_and(|n| n >= least) => None,
        Some(v) => Some(format!(
            "`{key}` must be a whole number of at least {least}, found {}",
            crate::stages::ingest::path::describe(v)
        )),
    })
}

/// Every run list of a source.
#[derive(Debug, Default)]
pub struct Lists {
    /// Runs in input order.
    pub entries: Vec<Entry>,
    /// `totalCount` by input index.
    pub totals: Vec<(usize, u64)>,
    /// History expectations by run id (or name when there is no id).
    pub expect: BTreeMap<String, Expect>,
}

/// Reads the runs of one run-list file.
///
/// Errors: [`Error::Config`] when the file holds no run list; bad JSON Lines lines are
/// `Out::Bad` items, not errors.
fn read_list(
    plan: &Plan,
    k: usize,
    out: &mut dyn FnMut(Entry) -> Result<()>,
    bad: &mut dyn FnMut(Out) -> Result<()>,
) -> Result<Option<u64>> {
    let input = &plan.inputs[k];
    if input.rel.ends_with(".jsonl") || input.rel.ends_with(".jsonl.gz") || input.rel.ends_with(".jsonl.zst") {
        let reader = crate::stages::ingest::files::open(input)?;
        crate::stages::ingest::records::jsonl(reader, &input.rel, &mut |item| match item {
            Item::Record(obj, Position::Line(n)) => out(Entry { k, number: n, obj }),
            Item::Record(obj, _) => out(Entry { k, number: 0, obj }),
            Item::Bad { at, rule, message, raw } => bad(Out::Bad { at, rule, message, raw }),
        })?;
        return Ok(None);
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut crate::stages::ingest::files::open(input)?, &mut text).map_err(|e| {
        let at = Position::Pointer(String::new());
        crate::stages::ingest::records::read_failed_at(&input.rel, at, "before the end of the file", &e)
    })?;
    let bytes = text.trim_start_matches('\u{feff}').as_bytes();
    let rewritten = crate::stages::ingest::lenient::rewrite(bytes);
    let doc: Value = serde_json::from_slice(rewritten.as_deref().unwrap_or(bytes)).map_err(|e| {
        Error::source_violation(
            &input.rel,
            Position::Line(e.line() as u64),
            format!("column {}", e.column()),
            "json",
            format!("not valid JSON: {e}"),
        )
    })?;
    let (list, total) = match doc {
        Value::Array(a) => (a, None),
        Value::Object(mut o) => {
            let total = o.get("totalCount").or_else(|| o.get("total_count")).and_then(Value::as_u64);
            match o.remove("runs").or_else(|| o.remove("data")) {
                Some(Value::Array(a)) => (a, total),
                _ if is_run(&o) => (vec![Value::Object(o)], None),
                _ => {
                    return Err(Error::config(
                        &input.rel,
                        "a JSON document of a W&B source must be a run list: an array of runs, an object with a \
                         `runs` array (API pages) or one run object (with `id` or `name` and `config` or `summary`)",
                    ));
                }
            }
        }
        other => {
            return Err(Error::config(
                &input.rel,
                format!("expected a W&B run list, found {}", crate::stages::ingest::path::describe(&other)),
            ));
        }
    };
    for (i, v) in list.into_iter().enumerate() {
        let number = i as u64 + 1;
        match v {
            Value::Object(obj) => out(Entry { k, number, obj })?,
            other => bad(Out::Bad {
                raw: Some(other.to_string()),
                at: Position::Line(number),
                rule: "record",
                message: format!(
                    "run {number} of the list is {}, not an object",
                    crate::stages::ingest::path::describe(&other)
                ),
            })?,
        }
    }
    Ok(total)
}

/// Whether an object looks like one run.
pub fn is_run(o: &Map<String, Value>) -> bool {
    ["id", "name", "run_id"].iter().any(|k| o.contains_key(*k))
        && ["config", "summary", "state", "summaryMetrics"].iter().any(|k| o.contains_key(*k))
}

/// The run id of a run object: `id`, `run_id`, `runId`, or GraphQL's `name` (when a
/// `displayName` is present).
pub fn run_id(o: &Map<String, Value>) -> Option<String> {
    // an id of digits only may come as a JSON number (or a CSV cell typed as one): its text
    let s = |k: &str| match o.get(k)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) if n.is_u64() || n.is_i64() => Some(n.to_string()),
        _ => None,
    };
    s("id")
        .or_else(|| s("run_id"))
        .or_else(|| s("runId"))
        .or_else(|| if o.contains_key("displayName") { s("name") } else { None })
}

/// Reads every run list of the plan (first pass).
///
/// Errors: as `read_list`.
pub fn scan_lists(plan: &Plan) -> Result<Lists> {
    let mut lists = Lists::default();
    for k in 0..plan.inputs.len() {
        if plan.kinds[k] != super::Kind::RunList {
            continue;
        }
        let total = read_list(
            plan,
            k,
            &mut |e| {
                lists.entries.push(e);
                Ok(())
            },
            &mut |_| Ok(()),
        )?;
        if let Some(t) = total {
            lists.totals.push((k, t));
        }
    }
    for e in &lists.entries {
        let key = run_id(&e.obj).or_else(|| e.obj.get("name").and_then(Value::as_str).map(String::from));
        let Some(key) = key else { continue };
        // a summary that cannot be read is reported with the run's row
        let summary = summary_of(&e.obj).ok().flatten();
        let x = Expect {
            history_line_count: e
                .obj
                .get("historyLineCount")
                .and_then(whole_number)
                .and_then(|n| u64::try_from(n).ok()),
            // the API gives -1 for a run that logged no history
            last_history_step: e.obj.get("lastHistoryStep").and_then(whole_number).filter(|s| *s >= 0),
            // a bad summary `_step` is reported with the run's row, and leaves its history unchecked
            summary_step: summary.as_ref().and_then(|s| rows::step_of(s.get("_step")).ok().flatten()),
            unusable: history_count_problem(&e.obj).or_else(|| {
                summary.as_ref().and_then(|s| rows::step_of(s.get("_step")).err()).map(|m| format!("its summary: {m}"))
            }),
        };
        lists.expect.insert(key, x);
    }
    Ok(lists)
}

/// The first JSON path where two values differ (`$.summary.reward`).
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => {
                        if let Some(d) = first_difference(p, q, &format!("{path}.{k}")) {
                            return Some(d);
                        }
                    }
                    _ => return Some(format!("{path}.{k}")),
                }
            }
            None
        }
        _ if a == b => None,
        _ => Some(path.to_string()),
    }
}

/// Reports run `id` found a second time (`second`) after `first`, each (place, record):
/// identical copies are a warning and a dropped duplicate (`None`: drop the second); for
/// copies that differ, the message naming the first difference, for the caller to make each
/// copy a bad record of (`wandb-duplicate`).
pub(super) fn run_listed_twice(
    report: &mut BuildReport,
    name: &str,
    id: &str,
    first: (&SourceRef, &Value),
    second: (&SourceRef, &Value),
) -> Option<String> {
    let ((f, a), (s, b)) = (first, second);
    let places =
        if f.file == s.file { format!("twice in {}", s.file) } else { format!("in {} and {}", f.file, s.file) };
    match first_difference(a, b, "$") {
        None => {
            report
                .duplicates_dropped
                .entry(name.to_string())
                .or_default()
                .add(|| format!("run {id}: identical copies at {f} and {s}; the second was dropped"));
            report.warn(
                name,
                "duplicate",
                Some(s.clone()),
                format!("run {id} is listed twice ({places}); the copies are identical and the second was dropped"),
            );
            None
        }
        Some(path) => Some(format!(
            "run {id} is listed twice with different values at {path}: {} at {f} vs {} at {s}; neither copy is \
             kept",
            values_at(a, &path),
            values_at(b, &path),
        )),
    }
}

/// A record of a run list: (input index, record number).
pub type RecordAt = (usize, u64);

/// A copy of a run listed twice with different values: the message, and the run as found
/// (JSON text; `None`: its row is written instead).
pub type Conflict = (String, Option<String>);

/// Checks run lists for runs listed twice and totals not reached (case B25). Identical copies
/// after the first are dropped (counted in the report); a `totalCount` the unique runs do not
/// match is a violation. Returns the records to drop, and the records of runs listed twice
/// with different values, each with its message (every copy is a bad record).
pub fn check_duplicates(
    plan: &Plan,
    lists: &Lists,
    name: &str,
    report: &mut BuildReport,
) -> (BTreeSet<RecordAt>, BTreeMap<RecordAt, Conflict>) {
    let mut skip = BTreeSet::new();
    let mut conflicts = BTreeMap::new();
    let mut seen: BTreeMap<String, &Entry> = BTreeMap::new();
    let mut duplicates: Vec<String> = Vec::new();
    let rel = |k: usize| plan.inputs[k].rel.clone();
    let at = |e: &Entry| SourceRef { file: rel(e.k), at: Position::Line(e.number) };
    let mut unique = 0u64;
    for e in &lists.entries {
        let Some(id) = run_id(&e.obj) else {
            unique += 1;
            continue;
        };
        match seen.get(id.as_str()) {
            None => {
                seen.insert(id, e);
                unique += 1;
            }
            Some(first) => {
                let (a, b) = (Value::Object(first.obj.clone()), Value::Object(e.obj.clone()));
                let places = if first.k == e.k {
                    format!("twice in {}", rel(e.k))
                } else {
                    format!("in {} and {}", rel(first.k), rel(e.k))
                };
                duplicates.push(format!("{id}, {places}"));
                match run_listed_twice(report, name, &id, (&at(first), &a), (&at(e), &b)) {
                    None => {
                        skip.insert((e.k, e.number));
                    }
                    Some(message) => {
                        conflicts.insert((first.k, first.number), (message.clone(), super::record_raw(&first.obj)));
                        conflicts.insert((e.k, e.number), (message, super::record_raw(&e.obj)));
                    }
                }
            }
        }
    }
    let totals: BTreeSet<u64> = lists.totals.iter().map(|(_, t)| *t).collect();
    if totals.len() > 1 {
        let list: Vec<String> = lists.totals.iter().map(|(k, t)| format!("{} says {t}", rel(*k))).collect();
        report.violation(Violation {
            scope: crate::core::report::Scope::Source,
            table: name.to_string(),
            source: None,
            path: "$.totalCount".into(),
            rule: "wandb-total".into(),
            key: None,
            message: format!("the pages of this run list disagree on totalCount: {}", list.join(", ")),
            finding: None,
        });
    } else if let Some(&total) = totals.iter().next()
        && total != unique
    {
        let dup =
            if duplicates.is_empty() { String::new() } else { format!(" (duplicate: {})", duplicates.join("; ")) };
        let what = if unique < total {
            format!("{} run(s) reported by the API are missing from the pages", total - unique)
        } else {
            "the pages hold more runs than the API reported".to_string()
        };
        report.violation(Violation {
            scope: crate::core::report::Scope::Source,
            table: name.to_string(),
            source: Some(SourceRef { file: rel(lists.totals[0].0), at: Position::Pointer(String::new()) }),
            path: "$.totalCount".into(),
            rule: "wandb-total".into(),
            key: None,
            message: format!("expected {total} runs, got {unique} unique{dup}; {what}"),
            finding: None,
        });
    }
    (skip, conflicts)
}

fn values_at(v: &Value, path: &str) -> String {
    let mut cur = Some(v);
    for part in path.trim_start_matches('$').split('.').filter(|p| !p.is_empty()) {
        cur = cur.and_then(|c| c.get(part));
    }
    match cur {
        Some(v) => crate::stages::ingest::path::describe(v),
        None => "absent".into(),
    }
}

/// The value at `key` of `m`: the key itself, or else the dotted path it names through
/// nested objects (`a.b` in `{"a": {"b": 1}}`), as an export flattens them.
fn dotted<'m>(m: &'m Map<String, Value>, key: &str) -> Option<&'m Value> {
    if let Some(v) = m.get(key) {
        return Some(v);
    }
    let (head, rest) = key.split_once('.')?;
    match m.get(head)? {
        Value::Object(inner) => dotted(inner, rest),
        _ => None,
    }
}

/// Whether two values of a run are the same value: numbers by value (`10` and `10.0`), the
/// rest as JSON.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        _ => a == b,
    }
}

/// The summary of a run object, whatever its shape (object, JSON or Python-dict text);
/// `None` when the run has none (no key, null, an empty cell).
///
/// Errors: the summary's JSON path and what it holds instead of an object (text that is
/// neither JSON nor a Python literal, or one of another value), so that the run is a bad
/// record rather than a run without its summary.
pub fn summary_of(o: &Map<String, Value>) -> std::result::Result<Option<Map<String, Value>>, String> {
    let Some((key, v)) = ["summary", "summaryMetrics", "summary_metrics"].iter().find_map(|k| Some((*k, o.get(*k)?)))
    else {
        return Ok(None);
    };
    let expected = "an object of summary values (JSON, or a Python dict as `api.runs()` writes it)";
    match v {
        Value::Null => Ok(None),
        Value::Object(m) => Ok(Some(m.clone())),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => match values::parse_text(s) {
            Ok(Value::Object(m)) => Ok(Some(m)),
            // Python's `None`, as `api.runs()` writes a run without a summary
            Ok(Value::Null) => Ok(None),
            Ok(other) => {
                Err(format!("$.{key}: expected {expected}, found {}", crate::stages::ingest::path::describe(&other)))
            }
            Err(m) => Err(format!("$.{key}: expected {expected}, found text that is neither: {m}")),
        },
        other => Err(format!("$.{key}: expected {expected}, found {}", crate::stages::ingest::path::describe(other))),
    }
}

const KNOWN: [&str; 26] = [
    "id",
    "run_id",
    "runId",
    "name",
    "run_name",
    "displayName",
    "display_name",
    "state",
    "group",
    "job_type",
    "jobType",
    "tags",
    "notes",
    "created_at",
    "createdAt",
    "url",
    "entity",
    "project",
    "config",
    "summary",
    "summaryMetrics",
    "summary_metrics",
    "historyLineCount",
    "lastHistoryStep",
    "runtime",
    "heartbeatAt",
];

/// A field of text given as a list or an object (or tags given as a number, a flag or an
/// object) would be lost as null: the record's problem, with its JSON path.
fn shape_problem(obj: &Map<String, Value>) -> std::result::Result<(), String> {
    for k in [
        "id",
        "run_id",
        "runId",
        "displayName",
        "display_name",
        "name",
        "run_name",
        "state",
        "group",
        "job_type",
        "jobType",
        "notes",
        "url",
        "entity",
        "project",
    ] {
        if let Some(v @ (Value::Array(_) | Value::Object(_))) = obj.get(k) {
            return Err(format!(
                "{}: expected a string, found {}",
                crate::stages::ingest::path::render(&[crate::stages::ingest::path::Seg::Key(k.to_string())]),
                crate::stages::ingest::path::describe(v)
            ));
        }
    }
    if let Some(v @ (Value::Number(_) | Value::Bool(_) | Value::Object(_))) = obj.get("tags") {
        return Err(format!(
            "$.tags: expected a list of tags (or their text), found {}",
            crate::stages::ingest::path::describe(v)
        ));
    }
    Ok(())
}

/// A run's tags: the API's list, or an export's text of one (`['a', 'b']` or `a, b`).
fn tags_of(obj: &Map<String, Value>, source: &str) -> std::result::Result<Option<Vec<String>>, String> {
    Ok(match obj.get("tags") {
        Some(Value::Array(a)) => {
            Some(a.iter().map(|t| t.as_str().map(String::from).unwrap_or_else(|| json_text(t))).collect())
        }
        // the API's JSON gives a list: text there is no export's spelling of one, and splitting
        // it on commas would be a guess
        Some(v @ Value::String(s)) if !s.is_empty() && source == "api-runs-json" => {
            return Err(format!("$.tags: expected a list of tags, found {}", crate::stages::ingest::path::describe(v)));
        }
        // a CSV cell holds the list as text: `['a', 'b']` or `a, b`
        Some(Value::String(s)) if !s.is_empty() => match values::parse_text(s) {
            Ok(Value::Array(a)) => {
                Some(a.iter().map(|t| t.as_str().map(String::from).unwrap_or_else(|| json_text(t))).collect())
            }
            _ => Some(s.split(',').map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).collect()),
        },
        _ => None,
    })
}

/// A JSON object, its keys in the input's order.
type JsonObject = Map<String, Value>;

/// The columns of a run record that runpack does not name: `config.<key>` columns (returned
/// second), `summary.<key>` and `_<key>` columns (added to `summary`, an export's copy of a
/// value it holds checked against it), and the rest (returned first).
fn other_columns(
    obj: &Map<String, Value>,
    summary: &mut Map<String, Value>,
) -> std::result::Result<(JsonObject, JsonObject), String> {
    let mut fields = Map::new();
    let mut flat_config = Map::new();
    for (k, v) in obj {
        if KNOWN.contains(&k.as_str()) || k.is_empty() {
            continue;
        }
        if let Some(key) = k.strip_prefix("config.").or_else(|| k.strip_prefix("config/")) {
            flat_config.insert(key.to_string(), v.clone());
        } else if let Some(key) = k.strip_prefix("summary.").or_else(|| k.strip_prefix("summary/")) {
            match dotted(summary, key) {
                // an export's flattened copy of a value the summary holds (pandas writes an
                // integer column with a gap as floats, and a missing value as an empty cell)
                Some(before) if same_value(before, v) || v.is_null() => {}
                Some(before) => {
                    return Err(format!(
                        "{}: summary key {key:?} is given twice, as {} in the summary and as {} here; one would be \
                         lost",
                        crate::stages::ingest::path::render(&[crate::stages::ingest::path::Seg::Key(k.clone())]),
                        crate::stages::ingest::path::describe(before),
                        crate::stages::ingest::path::describe(v)
                    ));
                }
                None => {
                    summary.insert(key.to_string(), v.clone());
                }
            }
        } else if k.starts_with('_') {
            summary.insert(k.clone(), v.clone());
        } else {
            fields.insert(k.clone(), v.clone());
        }
    }
    Ok((fields, flat_config))
}

/// Adds an export's `config.<key>` columns to the run's config; a key given both ways with
/// different values is the record's problem.
fn merge_config_columns(
    config: &mut Map<String, Value>,
    flat_config: Map<String, Value>,
) -> std::result::Result<(), String> {
    for (k, v) in values::normalise_config(&Value::Object(flat_config)).map_err(|m| format!("config columns: {m}"))? {
        match dotted(config, &k) {
            Some(before) if !same_value(before, &v) && !v.is_null() => {
                return Err(format!(
                    "config key {k:?} is given twice, as {} in the config and as {} in a `config.{k}` column; \
                     one would be lost",
                    crate::stages::ingest::path::describe(before),
                    crate::stages::ingest::path::describe(&v)
                ));
            }
            Some(_) => {}
            None => {
                config.insert(k, v);
            }
        }
    }
    Ok(())
}

/// Maps a run object to a `wandb_runs` row.
///
/// Errors: a message when the config cannot be read (not an object, bad text).
pub fn run_row(
    obj: &Map<String, Value>,
    source: &'static str,
    file: &str,
) -> std::result::Result<(RunRow, Map<String, Value>), String> {
    let str_of = |k: &str| {
        obj.get(k).and_then(|v| match v {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
    };
    shape_problem(obj)?;
    let mut row = RunRow { source, source_files: vec![file.to_string()], ..Default::default() };
    row.run_id = run_id(obj);
    let graphql = obj.contains_key("displayName");
    row.name = str_of("displayName")
        .or_else(|| str_of("display_name"))
        .or_else(|| if graphql { None } else { str_of("name") })
        .or_else(|| str_of("run_name"));
    row.state = str_of("state");
    row.group = str_of("group");
    row.job_type = str_of("job_type").or_else(|| str_of("jobType"));
    row.notes = str_of("notes");
    row.url = str_of("url");
    row.entity = str_of("entity");
    row.project = str_of("project");
    if let Some(u) = &row.url
        && let Some(rest) = u.split("wandb.ai/").nth(1)
    {
        let parts: Vec<&str> = rest.split('/').collect();
        if parts.len() >= 4 && parts[2] == "runs" {
            row.entity = row.entity.or_else(|| Some(parts[0].to_string()));
            row.project = row.project.or_else(|| Some(parts[1].to_string()));
            if row.run_id.is_none() {
                row.run_id =
                    Some(parts[3].split(['?', '#']).next().unwrap_or("").to_string()).filter(|s| !s.is_empty());
            }
        }
    }
    row.tags = tags_of(obj, source)?;
    let created_key = if obj.contains_key("created_at") { "created_at" } else { "createdAt" };
    let created = obj.get(created_key);
    if let Some(problem) = created.and_then(rows::created_at_problem) {
        return Err(format!("$.{created_key}: {problem}"));
    }
    row.created_at = created.and_then(rows::created_at);
    // config
    let mut config: Map<String, Value> = Map::new();
    if let Some(c) = obj.get("config") {
        row.config_raw = Some(match c {
            Value::String(s) => s.clone(),
            other => json_text(other),
        });
        config = values::normalise_config(c).map_err(|m| format!("$.config: {m}"))?;
    }
    let mut summary = summary_of(obj)?.unwrap_or_default();
    let (fields, flat_config) = other_columns(obj, &mut summary)?;
    if !flat_config.is_empty() {
        if row.config_raw.is_none() {
            row.config_raw = Some(json_text(&Value::Object(flat_config.clone())));
        }
        merge_config_columns(&mut config, flat_config)?;
    }
    if row.config_raw.is_some() {
        row.config = Some(config);
    }
    row.runtime_s = summary
        .get("_runtime")
        .cloned()
        .or_else(|| summary.get("_wandb").and_then(|w| w.get("runtime")).cloned())
        .or_else(|| obj.get("runtime").cloned())
        .filter(|v| v.is_number());
    // the API's counts of a run's history: a value of another kind is said, never dropped
    // (the history's completeness is checked against them)
    if let Some(problem) = history_count_problem(obj) {
        return Err(problem);
    }
    row.last_step = obj
        .get("lastHistoryStep")
        .and_then(whole_number)
        .filter(|s| *s >= 0)
        .map(|s| Ok(Some(s)))
        .unwrap_or_else(|| rows::step_of(summary.get("_step")).map_err(|m| format!("summary: {m}")))?
        .map(Value::from);
    row.history_rows = obj.get("historyLineCount").and_then(whole_number).filter(|n| *n >= 0).map(Value::from);
    let plain = values::split_summary(&summary).plain;
    if !summary.is_empty() {
        row.summary = Some(plain);
    }
    if !fields.is_empty() {
        row.fields = Some(fields);
    }
    Ok((row, summary))
}

/// Emits the rows of a run-list file.
///
/// Errors: as `read_list`; a config that cannot be read is a bad record.
pub fn emit_list(plan: &Plan, k: usize, out: &mut dyn FnMut(Out) -> Result<()>) -> Result<()> {
    let table = plan.opts.table;
    if !matches!(table, super::WandbTable::Runs | super::WandbTable::Histograms) {
        return Ok(());
    }
    let rel = plan.inputs[k].rel.clone();
    let mut entries: Vec<Entry> = Vec::new();
    let mut bad: Vec<Out> = Vec::new();
    read_list(
        plan,
        k,
        &mut |e| {
            entries.push(e);
            Ok(())
        },
        &mut |o| {
            bad.push(o);
            Ok(())
        },
    )?;
    for o in bad {
        out(o)?;
    }
    for e in entries {
        if plan.skip.contains(&(e.k, e.number)) {
            continue;
        }
        emit_run(plan, &e.obj, "api-runs-json", &rel, Position::Line(e.number), out)?;
    }
    Ok(())
}

/// Emits the row (runs) or the summary histograms (histograms) of one run object.
pub fn emit_run(
    plan: &Plan,
    obj: &Map<String, Value>,
    source: &'static str,
    rel: &str,
    at: Position,
    out: &mut dyn FnMut(Out) -> Result<()>,
) -> Result<()> {
    let (row, summary) = match run_row(obj, source, rel) {
        Ok(x) => x,
        Err(message) => return out(Out::Bad { at, rule: "wandb-run", message, raw: super::record_raw(obj) }),
    };
    let key = RunKey { run_id: row.run_id.clone(), run_name: row.name.clone() };
    let histograms = plan.opts.table == super::WandbTable::Histograms;
    rows::summary_histograms(&key, &summary, histograms, &at, out)?;
    if !histograms {
        out(Out::Row(row.into_map(&plan.opts), at))?;
    }
    Ok(())
}
