//! Tinker's own files (tinker-cookbook, `tinker_cookbook/stores/training_store.py` and
//! `checkpoint_utils.py` at commit 9dfcc3a2cf44).
//!
//! In: records of `metrics.jsonl` and `checkpoints.jsonl`. Out: rows of fixed shape.
//!
//! - `tinker-metrics`: one row per (record, metric key) — long form, because the key set drifts
//!   from row to row (evals every few steps, error counters after the first error):
//!   `step: Int64` (the record's `step`, null when absent), `metric: Utf8` (the key, literally,
//!   `env/all/reward/total`), `value: Float64` (numbers; bare `NaN`/`Infinity` kept as IEEE
//!   values), `value_text: Utf8` (strings, which supervised runs may log, and the JSON text of
//!   any other value). A record without metrics gives no row, unless its `step` is not an
//!   integer: then one row whose `metric` is null, so that the step's type is checked.
//! - `tinker-checkpoints`: one row per record: `name: Utf8` (`000020`, `final`, …),
//!   `batch: Int64` (completed optimizer steps), `epoch: Int64`, `final: Boolean`,
//!   `rolling: Boolean`, `state_path: Utf8` (`tinker://…/weights/<name>`), `sampler_path: Utf8`
//!   (`tinker://…/sampler_weights/<name>`), `extra: Utf8` (JSON text of any other keys).
//!
//! Duplicated steps after a resume and the doubled run ids seen in the wild are left for the
//! pipeline's SQL and table rules to resolve; nothing is dropped here.

use serde_json::{Map, Value};

use super::convert::{Target, json_text};

/// Columns of the `tinker-metrics` format.
pub fn metrics_columns() -> Vec<(String, Target)> {
    vec![
        ("step".into(), Target::Int64),
        ("metric".into(), Target::Str),
        ("value".into(), Target::Float64),
        ("value_text".into(), Target::Text),
    ]
}

/// Columns of the `tinker-checkpoints` format.
pub fn checkpoints_columns() -> Vec<(String, Target)> {
    vec![
        ("name".into(), Target::Str),
        ("batch".into(), Target::Int64),
        ("epoch".into(), Target::Int64),
        ("final".into(), Target::Bool),
        ("rolling".into(), Target::Bool),
        ("state_path".into(), Target::Str),
        ("sampler_path".into(), Target::Str),
        ("extra".into(), Target::JsonObject),
    ]
}

/// Long rows of one `metrics.jsonl` record.
pub fn metrics_rows(record: Map<String, Value>) -> Vec<Map<String, Value>> {
    let step = record.get("step").cloned().unwrap_or(Value::Null);
    let mut rows = Vec::with_capacity(record.len());
    for (k, v) in record {
        if k == "step" {
            continue;
        }
        let mut row = Map::with_capacity(4);
        row.insert("step".into(), step.clone());
        row.insert("metric".into(), Value::String(k));
        let (value, text) = value_columns(v);
        row.insert("value".into(), value);
        row.insert("value_text".into(), text);
        rows.push(row);
    }
    // a record without metrics whose step is not an integer (`{"step": "five"}`) gives one row
    // whose metric is null, so that the step's type is checked and the record is not lost
    // unseen; one with a good step or none (`{}`) holds nothing to keep
    // (what the conversion reads as an Int64: 3 and 3.0, not 2^63)
    let integer_step = step.is_null()
        || step.is_i64()
        || step.as_f64().is_some_and(|f| !step.is_u64() && f.fract() == 0.0 && f.abs() < i64::MAX as f64);
    if rows.is_empty() && !integer_step {
        let mut row = Map::with_capacity(4);
        row.insert("step".into(), step);
        for k in ["metric", "value", "value_text"] {
            row.insert(k.into(), Value::Null);
        }
        rows.push(row);
    }
    rows
}

/// A logged value as the long form's (`value`, `value_text`): a number (or a non-finite
/// token) in `value`; a string as it is, a list or an object (written as JSON text by the
/// conversion, which counts the non-finite numbers inside) and a boolean as JSON text in
/// `value_text`; an integer a float cannot hold exactly (beyond ±2^53, or beyond 64 bits) as
/// its digits in `value_text`, as W&B's history keeps it; null in neither.
pub fn value_columns(v: Value) -> (Value, Value) {
    const EXACT: u64 = 1 << 53;
    match v {
        Value::Number(ref n)
            if n.as_u64().is_some_and(|u| u > EXACT) || n.as_i64().is_some_and(|i| i.unsigned_abs() > EXACT) =>
        {
            (Value::Null, Value::String(n.to_string()))
        }
        Value::Number(_) => (v, Value::Null),
        // beyond 64 bits too (read as a marked string)
        Value::String(ref s) if let Some(super::lenient::Special::BigInt(digits)) = super::lenient::special(s) => {
            (Value::Null, Value::String(digits.to_string()))
        }
        Value::String(ref s) if super::lenient::special(s).is_some() => (v, Value::Null),
        Value::String(_) => (Value::Null, v),
        Value::Null => (Value::Null, Value::Null),
        list @ (Value::Array(_) | Value::Object(_)) => (Value::Null, list),
        other => (Value::Null, Value::String(json_text(&other))),
    }
}

/// The fixed-shape row of one `checkpoints.jsonl` record.
pub fn checkpoint_row(mut record: Map<String, Value>) -> Map<String, Value> {
    let mut row = Map::with_capacity(8);
    for k in ["name", "batch", "epoch", "final", "rolling", "state_path", "sampler_path"] {
        // `shift_remove` keeps the order of the keys left for `extra`
        row.insert(k.into(), record.shift_remove(k).unwrap_or(Value::Null));
    }
    // written as JSON text by the conversion, which also counts non-finite numbers inside
    let extra = if record.is_empty() { Value::Null } else { Value::Object(record) };
    row.insert("extra".into(), extra);
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_go_long() {
        let rec: Value = serde_json::from_str(r#"{"step": 3, "optim/lr": 0.0001, "note": "x", "b": true}"#).unwrap();
        let rows = metrics_rows(rec.as_object().unwrap().clone());
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0]["metric"], "optim/lr");
        assert_eq!(rows[0]["step"], 3);
        assert_eq!(rows[1]["value_text"], "x");
        assert_eq!(rows[2]["value_text"], "true");
        // an integer a float cannot hold exactly keeps its digits, as text
        for (big, exact) in [
            ("9007199254740993", false),
            ("-9007199254740993", false),
            ("9007199254740992", true),
            ("123456789012345678901234567890", false),
            ("-123456789012345678901234567890", false),
        ] {
            let line = format!(r#"{{"step": 1, "n": {big}}}"#);
            let rewritten = super::super::lenient::rewrite(line.as_bytes());
            let rec: Value = serde_json::from_slice(rewritten.as_deref().unwrap_or(line.as_bytes())).unwrap();
            let rows = metrics_rows(rec.as_object().unwrap().clone());
            let want = if exact {
                (Value::from(big.parse::<i64>().unwrap()), Value::Null)
            } else {
                (Value::Null, Value::from(big))
            };
            assert_eq!((rows[0]["value"].clone(), rows[0]["value_text"].clone()), want, "{big}");
        }
    }

    #[test]
    fn checkpoint_extra_keys_keep_their_order() {
        let line = r#"{"name": "a", "batch": 20, "zeta": 1, "alpha": 2, "mid": 3, "state_path": "s"}"#;
        let row = checkpoint_row(serde_json::from_str(line).unwrap());
        assert_eq!(serde_json::to_string(&row["extra"]).unwrap(), r#"{"zeta":1,"alpha":2,"mid":3}"#);
    }

    #[test]
    fn checkpoint_extra_keys_are_kept() {
        let rec: Value =
            serde_json::from_str(r#"{"name": "000020", "batch": 20, "rolling": true, "elapsed_tokens": 5}"#).unwrap();
        let row = checkpoint_row(rec.as_object().unwrap().clone());
        assert_eq!(row["extra"], serde_json::json!({"elapsed_tokens": 5}));
        assert_eq!(row["rolling"], true);
    }
}
