//! The rows of runpack's standard W&B tables, built from what every flavour yields.
//!
//! In: a run's fields ([`RunRow`]) or one history/system record (a JSON object of key → value
//! as logged). Out: JSON objects with exactly the columns of `wandb_runs`, `wandb_history`,
//! `wandb_system` or `wandb_histograms` (see [`super::columns`]), and notes about values that
//! do not fit a column (media references), handed to the caller.

use serde_json::{Map, Value};

use super::values::{self, Rich};
use super::{ExtraColumn, Out, WandbOptions};
use crate::stages::ingest::lenient;

/// Everything a `wandb_runs` row can hold; `None` is null.
#[derive(Debug, Clone, Default)]
pub struct RunRow {
    /// Entity (user or team).
    pub entity: Option<String>,
    /// Project.
    pub project: Option<String>,
    /// Immutable run id (8 characters for generated ids).
    pub run_id: Option<String>,
    /// Display name.
    pub name: Option<String>,
    /// finished | running | crashed | failed | killed (as exported).
    pub state: Option<String>,
    /// Run group.
    pub group: Option<String>,
    /// Job type.
    pub job_type: Option<String>,
    /// Tags.
    pub tags: Option<Vec<String>>,
    /// Notes.
    pub notes: Option<String>,
    /// Creation time, RFC 3339 in UTC.
    pub created_at: Option<String>,
    /// Run time in seconds.
    pub runtime_s: Option<Value>,
    /// Last history step (`_step` of the summary, `lastHistoryStep`).
    pub last_step: Option<Value>,
    /// Number of history rows the run reports (`historyLineCount`).
    pub history_rows: Option<Value>,
    /// Run URL.
    pub url: Option<String>,
    /// Normalised config.
    pub config: Option<Map<String, Value>>,
    /// The config as found, as JSON text.
    pub config_raw: Option<String>,
    /// Plain summary values.
    pub summary: Option<Map<String, Value>>,
    /// Columns of the export whose role (config or summary) the export does not say.
    pub fields: Option<Map<String, Value>>,
    /// `wandb-metadata.json`, redacted.
    pub metadata: Option<Value>,
    /// Export flavour.
    pub source: &'static str,
    /// Files the row was assembled from (paths relative to the pipeline).
    pub source_files: Vec<String>,
}

fn s(v: &Option<String>) -> Value {
    v.as_ref().map(|x| Value::String(x.clone())).unwrap_or(Value::Null)
}

impl RunRow {
    /// The row as a JSON object with the `wandb_runs` columns (and the requested extra columns).
    pub fn into_map(self, opts: &WandbOptions) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("entity".into(), s(&self.entity.clone().or_else(|| opts.entity.clone())));
        m.insert("project".into(), s(&self.project.clone().or_else(|| opts.project.clone())));
        m.insert("run_id".into(), s(&self.run_id));
        m.insert("name".into(), s(&self.name));
        m.insert("state".into(), s(&self.state));
        m.insert("group".into(), s(&self.group));
        m.insert("job_type".into(), s(&self.job_type));
        m.insert(
            "tags".into(),
            self.tags
                .as_ref()
                .map(|t| Value::Array(t.iter().cloned().map(Value::String).collect()))
                .unwrap_or(Value::Null),
        );
        m.insert("notes".into(), s(&self.notes));
        m.insert("created_at".into(), s(&self.created_at));
        m.insert("runtime_s".into(), self.runtime_s.clone().unwrap_or(Value::Null));
        m.insert("last_step".into(), self.last_step.clone().unwrap_or(Value::Null));
        m.insert("history_rows".into(), self.history_rows.clone().unwrap_or(Value::Null));
        m.insert("url".into(), s(&self.url));
        // objects, written as JSON text by the conversion (which counts non-finite numbers)
        let object =
            |o: &Option<Map<String, Value>>| o.as_ref().map(|o| Value::Object(o.clone())).unwrap_or(Value::Null);
        m.insert("config".into(), object(&self.config));
        m.insert("config_raw".into(), s(&self.config_raw));
        m.insert("summary".into(), object(&self.summary));
        m.insert("fields".into(), object(&self.fields));
        m.insert("metadata".into(), self.metadata.clone().unwrap_or(Value::Null));
        m.insert("source".into(), Value::String(self.source.to_string()));
        m.insert("source_files".into(), Value::Array(self.source_files.iter().cloned().map(Value::String).collect()));
        for c in &opts.columns {
            m.insert(c.name.clone(), self.extra(c));
        }
        m
    }

    fn extra(&self, c: &ExtraColumn) -> Value {
        extra_lookup(c, self.config.as_ref(), self.summary.as_ref(), self.fields.as_ref())
            .cloned()
            .unwrap_or(Value::Null)
    }
}

/// The value `[[source.wandb.column]]` `c` takes from a run's config, summary and unassigned
/// export columns (`fields`): `None` when the key is in none of them (a null value is found).
pub fn extra_lookup<'a>(
    c: &ExtraColumn,
    config: Option<&'a Map<String, Value>>,
    summary: Option<&'a Map<String, Value>>,
    fields: Option<&'a Map<String, Value>>,
) -> Option<&'a Value> {
    let (scope, key) = match c.from.split_once('.') {
        Some(("config", k)) => ("config", k),
        Some(("summary", k)) => ("summary", k),
        _ => ("", c.from.as_str()),
    };
    let find = |o: Option<&'a Map<String, Value>>| o.and_then(|o| values::lookup(o, key));
    match scope {
        "config" => find(config).or_else(|| find(fields)),
        "summary" => find(summary).or_else(|| find(fields)),
        _ => find(config).or_else(|| find(summary)).or_else(|| find(fields)),
    }
}

/// Ids of a history record that are not metrics.
pub const HISTORY_KEYS: [&str; 4] = ["_step", "_runtime", "_timestamp", "_wandb"];

/// Reads a W&B step (`_step`): an integer, or a float with no fraction (pandas writes an
/// integer column with gaps as floats: `12.0`); `Ok(None)` when absent or null.
///
/// Errors: a message naming what was found instead (a fraction, text, a boolean, a number
/// below 0, a value beyond 64-bit integers), for the caller to report at the record.
pub fn step_of(v: Option<&Value>) -> std::result::Result<Option<i64>, String> {
    let found = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => {
            // W&B counts steps from 0
            match n.as_i64() {
                Some(i) if i >= 0 => return Ok(Some(i)),
                Some(i) => {
                    return Err(format!(
                        "`_step` must be an integer step, found {i}, below 0 (W&B counts steps from 0)"
                    ));
                }
                None => {}
            }
            match n.as_f64() {
                // 2^63 as a float is just beyond i64
                Some(f) if f.fract() == 0.0 && (0.0..9.223_372_036_854_776e18).contains(&f) => {
                    return Ok(Some(f as i64));
                }
                Some(f) if f.fract() == 0.0 && f < 0.0 && f > -9.3e18 => {
                    return Err(format!(
                        "`_step` must be an integer step, found {n}, below 0 (W&B counts steps from 0)"
                    ));
                }
                Some(f) if f.is_finite() && f.fract() != 0.0 => format!("the fraction {n}"),
                _ => format!("{n}, beyond 64-bit integers"),
            }
        }
        Some(other) => crate::stages::ingest::path::describe(other),
    };
    Err(format!("`_step` must be an integer step, found {found}"))
}

/// Flattens nested objects without `_type` into dotted keys (`{"a": {"b": 1}}` → `a.b`).
///
/// Errors: when two keys flatten to one dotted key (`"a.b"` and `"a": {"b"}`), one value would
/// be lost: a message naming both keys by their paths in the record (`$["a.b"]`, `$.a.b`), and
/// the record as given, for the rejected record's `raw`.
pub fn flatten(obj: Map<String, Value>) -> std::result::Result<Map<String, Value>, (String, Map<String, Value>)> {
    if let Some(message) = collision(&obj) {
        return Err((message, obj));
    }
    fn go(prefix: &str, obj: Map<String, Value>, out: &mut Map<String, Value>) {
        for (k, v) in obj {
            let key = if prefix.is_empty() { k } else { format!("{prefix}.{k}") };
            match v {
                Value::Object(o) if nested(&o) => go(&key, o, out),
                other => {
                    out.insert(key, other);
                }
            }
        }
    }
    // nothing nested: the record is its own flat form
    if !obj.values().any(|v| v.as_object().is_some_and(nested)) {
        return Ok(obj);
    }
    let mut out = Map::new();
    go("", obj, &mut out);
    Ok(out)
}

/// Whether [`flatten`] joins an object's keys into its parent's (a plain object, not a rich
/// value with `_type`).
fn nested(o: &Map<String, Value>) -> bool {
    !o.contains_key("_type") && !o.is_empty()
}

/// The message of the first two keys of `obj` that [`flatten`] would join into one dotted key.
fn collision(obj: &Map<String, Value>) -> Option<String> {
    use crate::stages::ingest::path::{Seg, render};
    fn go(
        prefix: &str,
        segs: &mut Vec<Seg>,
        obj: &Map<String, Value>,
        seen: &mut ahash::AHashMap<String, String>,
    ) -> Option<String> {
        for (k, v) in obj {
            let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            segs.push(Seg::Key(k.clone()));
            let found = match v {
                Value::Object(o) if nested(o) => go(&key, segs, o, seen),
                _ => seen.insert(key.clone(), render(segs)).map(|first| {
                    format!(
                        "the keys {first} and {} both name metric `{key}` once nested keys are joined with dots; one \
                         value would be lost: rename one when logging",
                        render(segs)
                    )
                }),
            };
            segs.pop();
            if found.is_some() {
                return found;
            }
        }
        None
    }
    if !obj.values().any(|v| v.as_object().is_some_and(nested)) {
        return None;
    }
    go("", &mut Vec::new(), obj, &mut ahash::AHashMap::new())
}

/// Identity of the run a history record belongs to.
#[derive(Debug, Clone, Default)]
pub struct RunKey {
    /// Run id (null for chart exports, which only have display names).
    pub run_id: Option<String>,
    /// Display name.
    pub run_name: Option<String>,
}

/// Value columns of one logged value: (`value`, `value_text`). A number goes to `value`
/// (non-finite ones too); anything else goes to `value_text`, which the conversion writes as
/// the value's JSON text ([`Target::Json`](crate::stages::ingest::convert::Target::Json)), so that the
/// boolean `true` and the string `"true"`, or the integer `5` and the string `"5"`, stay
/// apart. An integer a float cannot hold exactly (beyond ±2^53, or beyond 64 bits) goes to
/// `value_text` as its digits. A logged `None` (JSON `null`) gives both null: the row says the
/// key was logged at that step, with no value.
fn value_columns(v: &Value) -> (Value, Value) {
    const EXACT: u64 = 1 << 53;
    match v {
        Value::Null => (Value::Null, Value::Null),
        Value::Number(n)
            if n.as_u64().is_some_and(|u| u > EXACT) || n.as_i64().is_some_and(|i| i.unsigned_abs() > EXACT) =>
        {
            (Value::Null, v.clone())
        }
        Value::Number(_) => (v.clone(), Value::Null),
        Value::String(t) if lenient::special(t).is_some_and(|s| s.as_f64().is_some()) => (v.clone(), Value::Null),
        // text (an integer beyond 64 bits among them), booleans, lists and objects: written as
        // JSON text by the conversion, which counts the non-finite numbers inside
        other => (Value::Null, other.clone()),
    }
}

/// One history or system record: what goes where.
pub struct Record<'a> {
    /// Which run.
    pub run: &'a RunKey,
    /// The record (flattened keys → values).
    pub values: Map<String, Value>,
    /// Whether the run's export was found to be sampled.
    pub sampled: bool,
    /// The run's custom x-axes.
    pub axes: &'a super::axes::XAxes,
}

/// Emits the `wandb_history` rows of one record (one per metric), or its histograms for the
/// `wandb_histograms` table, and notes about media values.
pub fn history_rows(
    rec: Record,
    histograms: bool,
    at: &crate::core::report::Position,
    out: &mut dyn FnMut(Out) -> crate::Result<()>,
) -> crate::Result<()> {
    let step = match step_of(rec.values.get("_step")) {
        Ok(step) => step,
        Err(message) => {
            return out(Out::Bad { at: at.clone(), rule: "type", message, raw: super::record_raw(&rec.values) });
        }
    };
    let timestamp = rec.values.get("_timestamp").cloned().unwrap_or(Value::Null);
    let runtime = rec.values.get("_runtime").cloned().unwrap_or(Value::Null);
    if !histograms {
        out(Out::Step { run: rec.run.clone(), step })?;
    }
    for (k, v) in &rec.values {
        if HISTORY_KEYS.contains(&k.as_str()) {
            continue;
        }
        match values::rich(v) {
            Rich::Histogram(h) => {
                if histograms {
                    match &h.problem {
                        Some(m) => out(bad_histogram(k, v, m, at))?,
                        None => {
                            out(Out::Row(histogram_row(rec.run, k, step.map(Value::from), "history", &h), at.clone()))?
                        }
                    }
                } else {
                    // counted and said, as in the runs table: the histograms table reads them
                    out(Out::Media { key: k.clone(), kind: "histogram".into() })?;
                }
            }
            Rich::Media(t) => {
                if !histograms {
                    out(Out::Media { key: k.clone(), kind: t })?;
                }
            }
            Rich::Plain if !histograms => {
                let (value, text) = value_columns(v);
                let mut m = Map::new();
                m.insert("run_id".into(), s(&rec.run.run_id));
                m.insert("run_name".into(), s(&rec.run.run_name));
                m.insert("step".into(), step.map(Value::from).unwrap_or(Value::Null));
                m.insert("timestamp".into(), timestamp.clone());
                m.insert("runtime_s".into(), runtime.clone());
                m.insert("metric".into(), Value::String(k.clone()));
                m.insert("value".into(), value);
                m.insert("value_text".into(), text);
                m.insert("sampled".into(), Value::Bool(rec.sampled));
                // a metric defined against a step metric: that metric's value in this row
                if let Some(x_axis) = rec.axes.step_metric_of(k) {
                    let x = rec.values.get(x_axis).map(|v| value_columns(v).0).unwrap_or(Value::Null);
                    m.insert("x_axis".into(), Value::String(x_axis.to_string()));
                    m.insert("x".into(), x);
                }
                out(Out::Row(m, at.clone()))?;
            }
            Rich::Plain => {}
        }
    }
    Ok(())
}

/// Emits the `wandb_system` rows of one system-metrics sample (one per metric).
pub fn system_rows(
    run: &RunKey,
    values: &Map<String, Value>,
    at: &crate::core::report::Position,
    out: &mut dyn FnMut(Out) -> crate::Result<()>,
) -> crate::Result<()> {
    let timestamp = values.get("_timestamp").cloned().unwrap_or(Value::Null);
    let runtime = values.get("_runtime").cloned().unwrap_or(Value::Null);
    for (k, v) in values {
        if HISTORY_KEYS.contains(&k.as_str()) {
            continue;
        }
        let (value, text) = value_columns(v);
        let mut m = Map::new();
        m.insert("run_id".into(), s(&run.run_id));
        m.insert("timestamp".into(), timestamp.clone());
        m.insert("runtime_s".into(), runtime.clone());
        m.insert("metric".into(), Value::String(k.clone()));
        m.insert("value".into(), value);
        m.insert("value_text".into(), text);
        out(Out::Row(m, at.clone()))?;
    }
    Ok(())
}

/// A `wandb_histograms` row.
pub fn histogram_row(
    run: &RunKey,
    key: &str,
    step: Option<Value>,
    origin: &str,
    h: &values::Histogram,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("run_id".into(), s(&run.run_id));
    m.insert("key".into(), Value::String(key.to_string()));
    m.insert("step".into(), step.unwrap_or(Value::Null));
    m.insert("origin".into(), Value::String(origin.to_string()));
    m.insert("bin_edges".into(), Value::Array(h.edges.clone()));
    m.insert("counts".into(), Value::Array(h.counts.clone()));
    m
}

/// The violation of a histogram that is not one W&B writes (see [`values::Histogram`]).
fn bad_histogram(key: &str, value: &Value, problem: &str, at: &crate::core::report::Position) -> Out {
    Out::Bad {
        at: at.clone(),
        rule: "wandb-histogram",
        message: format!("histogram `{key}`: {problem}"),
        raw: super::record_raw(&Map::from_iter([(key.to_string(), value.clone())])),
    }
}

/// Emits the histogram rows and media notes of a run summary (histograms take the summary's
/// `_step`).
pub fn summary_histograms(
    run: &RunKey,
    summary: &Map<String, Value>,
    histograms: bool,
    at: &crate::core::report::Position,
    out: &mut dyn FnMut(Out) -> crate::Result<()>,
) -> crate::Result<()> {
    let split = values::split_summary(summary);
    if histograms {
        let step = summary.get("_step").cloned();
        for (k, h) in &split.histograms {
            match &h.problem {
                Some(m) => out(bad_histogram(k, summary.get(k).unwrap_or(&Value::Null), m, at))?,
                None => out(Out::Row(histogram_row(run, k, step.clone(), "summary", h), at.clone()))?,
            }
        }
    } else {
        for (k, t) in split.media {
            out(Out::Media { key: k, kind: t })?;
        }
        for (k, _) in split.histograms {
            out(Out::Media { key: k, kind: "histogram".into() })?;
        }
    }
    Ok(())
}

/// Normalises a creation time: RFC 3339 text kept (in UTC), W&B API times without an offset
/// read as UTC, epoch seconds converted. `None` for a value that is none of these (see
/// [`created_at_problem`]).
pub fn created_at(v: &Value) -> Option<String> {
    use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
    match v {
        Value::String(t) if !t.trim().is_empty() => {
            let t = t.trim();
            if let Ok(d) = DateTime::parse_from_rfc3339(t) {
                return Some(d.with_timezone(&Utc).to_rfc3339_opts(SecondsFormat::AutoSi, true));
            }
            for f in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
                if let Ok(n) = NaiveDateTime::parse_from_str(t, f) {
                    return Some(n.and_utc().to_rfc3339_opts(SecondsFormat::AutoSi, true));
                }
            }
            // epoch seconds as text (a CSV cell)
            epoch_text(t).and_then(epoch)
        }
        Value::Number(n) => epoch(n.as_f64()?),
        _ => None,
    }
}

/// Why a run's creation time `v` cannot be read ([`created_at`] gives none for it): for the
/// message of a violation at `$.created_at`. `None` when it reads, or is null or empty.
pub fn created_at_problem(v: &Value) -> Option<String> {
    if v.is_null() || v.as_str().is_some_and(|t| t.trim().is_empty()) || created_at(v).is_some() {
        return None;
    }
    let seconds = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(t) => epoch_text(t.trim()),
        _ => None,
    };
    Some(match (v, seconds) {
        (_, Some(n)) => format!(
            "epoch seconds {n} are not a time in the years 1 to 9999 (epoch milliseconds? divide by 1000 in the \
             export)"
        ),
        (other, None) => format!(
            "expected an ISO 8601 time (`2024-05-13T12:59:30Z`, or without an offset for UTC) or epoch seconds, \
             found {}",
            crate::stages::ingest::path::describe(other)
        ),
    })
}

/// The number of seconds a text written as a decimal number gives (`1715605641`,
/// `1715605641.5`, `-3`); `None` for any other text.
fn epoch_text(t: &str) -> Option<f64> {
    let digits = t.strip_prefix('-').unwrap_or(t);
    let plain = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if plain { t.parse().ok() } else { None }
}

/// A protobuf `Timestamp` (seconds and nanoseconds since the Unix epoch) as RFC 3339 text in
/// UTC, with 0, 3, 6 or 9 digits of fraction as ProtoJSON writes it
/// (`2026-12-03T12:51:39.125Z`); `None` outside the years 1 to 9999 or for nanoseconds outside
/// 0 to 999,999,999 (what ProtoJSON refuses).
pub fn exact_time(secs: i64, nanos: i32) -> Option<String> {
    const FIRST: i64 = -62_135_596_800;
    const LAST: i64 = 253_402_300_799;
    let nanos = u32::try_from(nanos).ok().filter(|n| *n < 1_000_000_000)?;
    (FIRST..=LAST).contains(&secs).then_some(())?;
    chrono::DateTime::from_timestamp(secs, nanos).map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
}

/// RFC 3339 text (UTC, microseconds) of epoch seconds, for times in the years 1 to 9999 (the
/// times RFC 3339 writes with four digits).
pub fn epoch(secs: f64) -> Option<String> {
    const LAST: f64 = 253_402_300_799.0;
    const FIRST: f64 = -62_135_596_800.0;
    if !(FIRST..=LAST).contains(&secs) {
        return None;
    }
    let micros = (secs * 1e6).round() as i64;
    chrono::DateTime::from_timestamp_micros(micros).map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flatten_keeps_rich_values() {
        let o = json!({"a": {"b": 1, "c": {"d": 2}}, "h": {"_type": "histogram"}, "e": {}});
        let f = flatten(o.as_object().unwrap().clone()).unwrap();
        assert_eq!(Value::Object(f), json!({"a.b": 1, "a.c.d": 2, "h": {"_type": "histogram"}, "e": {}}));
        let record = json!({"a.b": 1, "a": {"b": 2}}).as_object().unwrap().clone();
        let (e, kept) = flatten(record.clone()).unwrap_err();
        assert_eq!(
            e,
            "the keys $[\"a.b\"] and $.a.b both name metric `a.b` once nested keys are joined with dots; one value \
             would be lost: rename one when logging"
        );
        assert_eq!(kept, record, "the record is kept whole, for the rejected record's raw");
    }

    #[test]
    fn times_and_steps() {
        assert_eq!(created_at(&json!("2024-05-13T12:59:30")).unwrap(), "2024-05-13T12:59:30Z");
        assert_eq!(created_at(&json!("2026-03-02T07:54:57.000Z")).unwrap(), "2026-03-02T07:54:57Z");
        assert_eq!(created_at(&json!(1741075230.5)).unwrap(), "2025-03-04T08:00:30.500Z");
        assert_eq!(step_of(Some(&json!(3.0))), Ok(Some(3)));
        assert_eq!(step_of(Some(&json!(null))), Ok(None));
        let e = |v: Value| step_of(Some(&v)).unwrap_err();
        assert_eq!(e(json!(3.5)), "`_step` must be an integer step, found the fraction 3.5");
        assert_eq!(e(json!("3")), "`_step` must be an integer step, found string \"3\"");
        assert_eq!(e(json!(true)), "`_step` must be an integer step, found boolean true");
        assert_eq!(e(json!(1e20)), "`_step` must be an integer step, found 1e+20, beyond 64-bit integers");
        assert_eq!(e(json!(-1)), "`_step` must be an integer step, found -1, below 0 (W&B counts steps from 0)");
        assert_eq!(e(json!(-2.0)), "`_step` must be an integer step, found -2.0, below 0 (W&B counts steps from 0)");
        assert_eq!(step_of(Some(&json!(0))), Ok(Some(0)));
    }
}
