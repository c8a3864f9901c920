//! lighteval outputs (PyPI `lighteval` 0.13, `src/lighteval/logging/evaluation_tracker.py` and
//! `info_loggers.py`), shaped into rows of fixed columns.
//!
//! - `lighteval-results`: a `results_<date>.json` document (`config_general`, `results`,
//!   `versions`, `config_tasks`, `summary_tasks`, `summary_general`), one row per task ×
//!   metric of its `results` (for the standard `evaluations` table): `task` (`lighteval|gsm8k|0`,
//!   or `all`, lighteval's average over the tasks), `metric`, `value` (Float64), `stderr`
//!   (Float64, from `<metric>_stderr`; lighteval writes NaN where it computed none, kept),
//!   `version` (text of `versions[task]`), `model_name`, `lighteval_sha` (from
//!   `config_general`), `start_time`, `end_time` (Float64, seconds of lighteval's monotonic clock), `hashes` (JSON text
//!   of `summary_tasks[task].hashes`, the task's compiled hashes, to compare runs), and how the
//!   run was made: `max_samples` (Int64, `--max-samples`, null when every document was used),
//!   `config_general` (JSON text: the model's configuration, revision and generation
//!   parameters among it), `task_config` (JSON text of `config_tasks[task]`), `task_summary`
//!   (JSON text of `summary_tasks[task]` but its hashes: truncated and padded counts) and
//!   `extra` (JSON text of the document's other keys, `summary_general`; null when none).
//! - `lighteval-details`: `details_<task>_<date>.parquet` files (a `datasets` Parquet of
//!   `Detail(doc, model_response, metric)`: columns `doc`, `metric`, `model_response`, each a
//!   struct), one row per example: `task` (the doc's `task_name`, else the file name's),
//!   `date_id` (from the file name), `doc_id` (the doc's `id`), `gold_index` (JSON text: an
//!   index or a list), `metrics` (JSON text, metric → value), `logprobs`,
//!   `argmax_logits_eq_gold` (JSON text), `truncated_tokens_count`, `padded_tokens_count`,
//!   `num_samples` (Int64), `specific` (JSON text), and, with `keep_text = true`, `query`,
//!   `instruction` (text), `choices`, `input`, `text`, `text_post_processed` and `reasonings`
//!   (JSON text). `_source_line` is the 1-based row of the Parquet file.

use std::path::Path;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::DataType;
use serde_json::{Map, Number, Value};

use super::convert::{Target, json_text};
use super::evals::{Coerce, ShapeProblems, float_like, key_path, number_ok, problem};
use super::files::InputFile;
use super::lenient;
use super::records::Item;
use crate::core::error::{Error, Result};
use crate::core::report::Position;

/// Columns of `lighteval-results`.
pub fn result_columns() -> Vec<(String, Target)> {
    vec![
        ("task".into(), Target::Str),
        ("metric".into(), Target::Str),
        ("value".into(), Target::Float64),
        ("stderr".into(), Target::Float64),
        ("version".into(), Target::Str),
        ("model_name".into(), Target::Str),
        ("lighteval_sha".into(), Target::Str),
        ("start_time".into(), Target::Float64),
        ("end_time".into(), Target::Float64),
        ("hashes".into(), Target::Json),
        ("max_samples".into(), Target::Int64),
        ("config_general".into(), Target::Json),
        ("task_config".into(), Target::Json),
        ("task_summary".into(), Target::Json),
        ("extra".into(), Target::Json),
    ]
}

/// Keys of a results document that its rows' columns hold; [`result_rows`] keeps the others
/// in `extra`.
const RESULT_KEYS: [&str; 5] = ["config_general", "results", "versions", "config_tasks", "summary_tasks"];

/// Keys of a detail's `doc` and `model_response` that hold texts: kept only with `keep_text`.
pub const TEXT_KEYS: [&str; 7] =
    ["query", "instruction", "choices", "input", "text", "text_post_processed", "reasonings"];

/// Columns of `lighteval-details`.
pub fn detail_columns(keep_text: bool) -> Vec<(String, Target)> {
    let mut c: Vec<(String, Target)> = vec![
        ("task".into(), Target::Str),
        ("date_id".into(), Target::Str),
        ("doc_id".into(), Target::Str),
        ("gold_index".into(), Target::Json),
        ("metrics".into(), Target::Json),
        ("logprobs".into(), Target::Json),
        ("argmax_logits_eq_gold".into(), Target::Json),
        ("truncated_tokens_count".into(), Target::Int64),
        ("padded_tokens_count".into(), Target::Int64),
        ("num_samples".into(), Target::Int64),
        ("specific".into(), Target::Json),
    ];
    if keep_text {
        for k in TEXT_KEYS {
            let t = if matches!(k, "query" | "instruction") { Target::Str } else { Target::Json };
            c.push((k.into(), t));
        }
    }
    c
}

/// Rows of a lighteval `results_<date>.json` document.
///
/// Errors: the document has no `results` object or no `config_general` (no lighteval
/// results), a task's entry is no object, or a metric's value is no number (each at its JSON
/// path; a string passes where `coerce` lets it, the source's `coerce_numeric_strings` and
/// `coerce_nonfinite_strings`).
pub fn result_rows(r: &Map<String, Value>, coerce: Coerce) -> Result<Vec<Map<String, Value>>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let (Some(results), Some(general)) =
        (r.get("results").and_then(Value::as_object), r.get("config_general").and_then(Value::as_object))
    else {
        let keys: Vec<&str> = r.keys().map(String::as_str).take(5).collect();
        problems.push((
            "$.config_general".into(),
            format!(
                "expected lighteval results (`config_general`, `results`, `versions`, `config_tasks`, …), found keys \
                 {keys:?}"
            ),
        ));
        return Err(problems);
    };
    let general_value = |k: &str| general.get(k).cloned().unwrap_or(Value::Null);
    let extra: Map<String, Value> =
        r.iter().filter(|(k, _)| !RESULT_KEYS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    let extra = if extra.is_empty() { Value::Null } else { Value::Object(extra) };
    // a count lighteval ran each task on at most (`--max-samples`), else null
    let max_samples = general_value("max_samples");
    if !max_samples.is_null() && super::convert::whole_number(&max_samples).is_none_or(|n| n < 0) {
        problem(
            &mut problems,
            "$.config_general.max_samples".into(),
            "a count (a whole number of at least 0)",
            &max_samples,
        );
    }
    let mut rows = Vec::new();
    for (task, entry) in results {
        let at = key_path("$.results", task);
        let Value::Object(entry) = entry else {
            problem(&mut problems, at, "an object of metric values", entry);
            continue;
        };
        for (metric, value) in entry {
            if metric.strip_suffix("_stderr").is_some_and(|m| entry.contains_key(m)) {
                continue;
            }
            if !number_ok(&mut problems, key_path(&at, metric), value, coerce, "a number") {
                continue;
            }
            let stderr_key = format!("{metric}_stderr");
            let stderr = match entry.get(&stderr_key) {
                None => Value::Null,
                Some(v) if number_ok(&mut problems, key_path(&at, &stderr_key), v, coerce, "a number") => v.clone(),
                Some(_) => Value::Null,
            };
            let version = match r.get("versions").and_then(|v| v.get(task)) {
                None | Some(Value::Null) => Value::Null,
                Some(Value::String(s)) => Value::String(s.clone()),
                Some(other) => Value::String(json_text(other)),
            };
            let hashes = r
                .get("summary_tasks")
                .and_then(|s| s.get(task))
                .and_then(|t| t.get("hashes"))
                .cloned()
                .unwrap_or(Value::Null);
            let mut row = Map::new();
            row.insert("task".into(), Value::String(task.clone()));
            row.insert("metric".into(), Value::String(metric.clone()));
            row.insert("value".into(), value.clone());
            row.insert("stderr".into(), stderr);
            row.insert("version".into(), version);
            row.insert("model_name".into(), general_value("model_name"));
            row.insert("lighteval_sha".into(), general_value("lighteval_sha"));
            row.insert("start_time".into(), general_value("start_time"));
            row.insert("end_time".into(), general_value("end_time"));
            row.insert("hashes".into(), hashes);
            row.insert("max_samples".into(), max_samples.clone());
            row.insert("config_general".into(), Value::Object(general.clone()));
            let task_config = r.get("config_tasks").and_then(|c| c.get(task)).cloned().unwrap_or(Value::Null);
            row.insert("task_config".into(), task_config);
            // the task's summary but its hashes (a column of their own)
            let summary = match r.get("summary_tasks").and_then(|s| s.get(task)) {
                Some(Value::Object(o)) => {
                    let rest: Map<String, Value> =
                        o.iter().filter(|(k, _)| *k != "hashes").map(|(k, v)| (k.clone(), v.clone())).collect();
                    if rest.is_empty() { Value::Null } else { Value::Object(rest) }
                }
                Some(other) => other.clone(),
                None => Value::Null,
            };
            row.insert("task_summary".into(), summary);
            row.insert("extra".into(), extra.clone());
            rows.push(row);
        }
    }
    if problems.is_empty() { Ok(rows) } else { Err(problems) }
}

/// The task and date of a details file named as lighteval names them:
/// `details_<task>_<date>.parquet`, where the date (`2026-05-05T17-54-23.123456`) holds no `_`.
pub fn details_name(path: &Path) -> Option<(String, String)> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_prefix("details_")?.strip_suffix(".parquet")?;
    let (task, date) = stem.rsplit_once('_')?;
    (!task.is_empty() && !date.is_empty()).then(|| (task.to_string(), date.to_string()))
}

/// Whether `path` is named as lighteval names its details (`details_<task>_<date>.parquet`).
pub fn is_details_file(path: &Path) -> bool {
    details_name(path).is_some()
}

/// Whether a `results_<date>.json` document is lighteval's (it has `config_general`), rather
/// than lm-eval's.
pub fn is_results_document(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return false };
    if !(name.starts_with("results_") && name.ends_with(".json")) {
        return false;
    }
    let mut head = vec![0u8; 8192];
    let n = std::fs::File::open(path).and_then(|mut f| std::io::Read::read(&mut f, &mut head)).unwrap_or(0);
    String::from_utf8_lossy(&head[..n]).contains("\"config_general\"")
}

/// Reads a details file into `sink`: one record per Parquet row,
/// `{"file_task", "date_id", "doc", "model_response", "metric"}`, at its 1-based row number.
///
/// Errors: [`Error::Format`] for a file that is no Parquet or lacks the `doc`, `metric` and
/// `model_response` columns.
pub fn read(input: &InputFile, sink: &mut dyn FnMut(Item) -> Result<()>) -> Result<()> {
    let f = std::fs::File::open(&input.path).map_err(|e| Error::io(&input.path, e))?;
    let unreadable = |e: &dyn std::fmt::Display| Error::format(&input.rel, format!("not readable as Parquet: {e}"));
    let builder =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| unreadable(&e))?;
    let columns: Vec<String> = builder.schema().fields().iter().map(|f| f.name().clone()).collect();
    let missing: Vec<&str> =
        ["doc", "metric", "model_response"].into_iter().filter(|c| !columns.iter().any(|n| n == c)).collect();
    if !missing.is_empty() {
        return Err(Error::format(
            &input.rel,
            format!(
                "expected lighteval details (struct columns `doc`, `metric`, `model_response`), missing {missing:?}; \
                 found columns {columns:?}"
            ),
        ));
    }
    let reader = builder.with_batch_size(1024).build().map_err(|e| unreadable(&e))?;
    let (task, date) = match details_name(&input.path) {
        Some((t, d)) => (Value::String(t), Value::String(d)),
        None => (Value::Null, Value::Null),
    };
    let mut row_no = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| unreadable(&format!("{e} (reading from row {})", row_no + 1)))?;
        for r in 0..batch.num_rows() {
            row_no += 1;
            let mut obj = Map::new();
            obj.insert("file_task".into(), task.clone());
            obj.insert("date_id".into(), date.clone());
            for c in ["doc", "metric", "model_response"] {
                let col = batch.column_by_name(c).expect("checked above");
                obj.insert(c.into(), cell(col, r));
            }
            sink(Item::Record(obj, Position::Line(row_no)))?;
        }
    }
    Ok(())
}

/// Reads every row of a Parquet file as a JSON object (see [`cell`]) into `row`, in order.
///
/// Errors: [`Error::Format`] for a file that is no Parquet (or stops reading), and what `row`
/// returns.
pub fn read_rows(input: &InputFile, row: &mut dyn FnMut(Map<String, Value>) -> Result<()>) -> Result<()> {
    let f = std::fs::File::open(&input.path).map_err(|e| Error::io(&input.path, e))?;
    let unreadable = |e: &dyn std::fmt::Display| Error::format(&input.rel, format!("not readable as Parquet: {e}"));
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .and_then(|b| b.with_batch_size(1024).build())
        .map_err(|e| unreadable(&e))?;
    let mut n = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| unreadable(&format!("{e} (reading from row {})", n + 1)))?;
        let schema = batch.schema();
        for r in 0..batch.num_rows() {
            n += 1;
            let mut obj = Map::new();
            for (i, f) in schema.fields().iter().enumerate() {
                let v = if batch.column(i).is_null(r) { Value::Null } else { cell(batch.column(i), r) };
                obj.insert(f.name().clone(), v);
            }
            row(obj)?;
        }
    }
    Ok(())
}

/// A float as a JSON value: NaN and ±Infinity as runpack's marker strings.
fn float(x: f64) -> Value {
    match Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None => {
            let token = if x.is_nan() {
                "NaN"
            } else if x > 0.0 {
                "Infinity"
            } else {
                "-Infinity"
            };
            Value::String(format!("{}{token}", lenient::MARK))
        }
    }
}

/// The value at row `r` of `a` as JSON (structs as objects without their null members,
/// lists as arrays); a type lighteval does not write is given as Arrow prints it.
pub fn cell(a: &ArrayRef, r: usize) -> Value {
    use arrow::datatypes as t;
    if a.is_null(r) {
        return Value::Null;
    }
    match a.data_type() {
        DataType::Boolean => Value::Bool(a.as_boolean().value(r)),
        DataType::Int8 => Value::from(a.as_primitive::<t::Int8Type>().value(r)),
        DataType::Int16 => Value::from(a.as_primitive::<t::Int16Type>().value(r)),
        DataType::Int32 => Value::from(a.as_primitive::<t::Int32Type>().value(r)),
        DataType::Int64 => Value::from(a.as_primitive::<t::Int64Type>().value(r)),
        DataType::UInt8 => Value::from(a.as_primitive::<t::UInt8Type>().value(r)),
        DataType::UInt16 => Value::from(a.as_primitive::<t::UInt16Type>().value(r)),
        DataType::UInt32 => Value::from(a.as_primitive::<t::UInt32Type>().value(r)),
        DataType::UInt64 => Value::from(a.as_primitive::<t::UInt64Type>().value(r)),
        DataType::Float32 => float(a.as_primitive::<t::Float32Type>().value(r) as f64),
        DataType::Float64 => float(a.as_primitive::<t::Float64Type>().value(r)),
        DataType::Utf8 => Value::String(a.as_string::<i32>().value(r).to_string()),
        DataType::LargeUtf8 => Value::String(a.as_string::<i64>().value(r).to_string()),
        DataType::Utf8View => Value::String(a.as_string_view().value(r).to_string()),
        DataType::List(_) => list(&a.as_list::<i32>().value(r)),
        DataType::LargeList(_) => list(&a.as_list::<i64>().value(r)),
        DataType::FixedSizeList(_, _) => list(&a.as_fixed_size_list().value(r)),
        DataType::Struct(fields) => {
            let s = a.as_struct();
            let mut m = Map::new();
            for (i, f) in fields.iter().enumerate() {
                let v = cell(s.column(i), r);
                if !v.is_null() {
                    m.insert(f.name().clone(), v);
                }
            }
            Value::Object(m)
        }
        DataType::Null => Value::Null,
        _ => Value::String(arrow::util::display::array_value_to_string(a, r).unwrap_or_default()),
    }
}

fn list(a: &ArrayRef) -> Value {
    Value::Array((0..a.len()).map(|i| cell(a, i)).collect())
}

fn int_or_null(v: Option<&Value>, at: &str, problems: &mut ShapeProblems) -> Value {
    match v {
        None | Some(Value::Null) => Value::Null,
        Some(v @ Value::Number(n)) if n.is_i64() || n.is_u64() => v.clone(),
        Some(v) => {
            problem(problems, at.into(), "an integer", v);
            Value::Null
        }
    }
}

/// Row of a details record (see [`read`]).
///
/// Errors: `doc` or `model_response` is no struct, or a metric's value is no number (a
/// boolean counts as 0 or 1), each at its path (`$.metric.em`).
pub fn detail_row(r: &Map<String, Value>, keep_text: bool) -> Result<Map<String, Value>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let empty = Map::new();
    let obj_at = |k: &str, problems: &mut ShapeProblems| match r.get(k) {
        Some(Value::Object(o)) => o,
        other => {
            problem(problems, format!("$.{k}"), "a struct", other.unwrap_or(&Value::Null));
            &empty
        }
    };
    let doc = obj_at("doc", &mut problems);
    let resp = obj_at("model_response", &mut problems);
    let mut metrics = Map::new();
    match r.get("metric") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                match v {
                    Value::Bool(_) => {
                        metrics.insert(k.clone(), v.clone());
                    }
                    v if float_like(v) => {
                        metrics.insert(k.clone(), v.clone());
                    }
                    v => problem(&mut problems, key_path("$.metric", k), "a number", v),
                }
            }
        }
        Some(other) => problem(&mut problems, "$.metric".into(), "a struct of metric values", other),
    }
    let text = |v: Option<&Value>| match v {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) if s.is_empty() => Value::Null,
        Some(v @ Value::String(_)) => v.clone(),
        Some(other) => Value::String(json_text(other)),
    };
    let mut row = Map::new();
    let task = match text(doc.get("task_name")) {
        Value::Null => r.get("file_task").cloned().unwrap_or(Value::Null),
        t => t,
    };
    row.insert("task".into(), task);
    row.insert("date_id".into(), r.get("date_id").cloned().unwrap_or(Value::Null));
    row.insert("doc_id".into(), text(doc.get("id")));
    row.insert("gold_index".into(), doc.get("gold_index").cloned().unwrap_or(Value::Null));
    row.insert("metrics".into(), if metrics.is_empty() { Value::Null } else { Value::Object(metrics) });
    for k in ["logprobs", "argmax_logits_eq_gold"] {
        row.insert(k.into(), resp.get(k).cloned().unwrap_or(Value::Null));
    }
    for k in ["truncated_tokens_count", "padded_tokens_count"] {
        let v = int_or_null(resp.get(k), &format!("$.model_response.{k}"), &mut problems);
        row.insert(k.into(), v);
    }
    let v = int_or_null(doc.get("num_samples"), "$.doc.num_samples", &mut problems);
    row.insert("num_samples".into(), v);
    row.insert("specific".into(), doc.get("specific").cloned().unwrap_or(Value::Null));
    if keep_text {
        for k in TEXT_KEYS {
            let v = doc.get(k).or_else(|| resp.get(k)).cloned().unwrap_or(Value::Null);
            let v = match (k, v) {
                ("query" | "instruction", Value::String(s)) => Value::String(s),
                ("query" | "instruction", Value::Null) => Value::Null,
                ("query" | "instruction", other) => Value::String(json_text(&other)),
                (_, v) => v,
            };
            row.insert(k.into(), v);
        }
    }
    if problems.is_empty() { Ok(row) } else { Err(problems) }
}

/// A details record as a rejects file keeps it: without its texts unless the source keeps
/// them (the few-shot examples, which hold texts too, go with them).
pub fn without_texts(mut r: Map<String, Value>, keep_text: bool) -> Map<String, Value> {
    if keep_text {
        return r;
    }
    for part in ["doc", "model_response"] {
        if let Some(Value::Object(o)) = r.get_mut(part) {
            for k in TEXT_KEYS.iter().chain(&["fewshot_samples", "original_query", "unconditioned_query"]) {
                o.shift_remove(*k);
            }
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Map<String, Value> {
        serde_json::from_str::<Value>(s).unwrap().as_object().unwrap().clone()
    }

    #[test]
    fn results_give_a_row_per_task_and_metric() {
        let rows = result_rows(&obj(
            r#"{"config_general": {"model_name": "m", "lighteval_sha": "abc", "start_time": 1.5, "end_time": 2.5},
                "results": {"lighteval|gsm8k|0": {"em": 0.5, "em_stderr": 0.1, "acc": 1}, "all": {"em": 0.5}},
                "versions": {"lighteval|gsm8k|0": 0}, "summary_tasks": {"lighteval|gsm8k|0": {"hashes": {"hash_examples": "h"}}}}"#,
        ), Coerce::default())
        .unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!((rows[0]["metric"].as_str(), &rows[0]["stderr"]), (Some("em"), &Value::from(0.1)));
        assert_eq!((rows[1]["metric"].as_str(), &rows[1]["stderr"]), (Some("acc"), &Value::Null));
        assert_eq!((rows[0]["version"].as_str(), rows[2]["task"].as_str()), (Some("0"), Some("all")));
        let e = result_rows(&obj(r#"{"config_general": {}, "results": {"t": {"em": "x"}}}"#), Coerce::default())
            .unwrap_err();
        assert_eq!(e[0], ("$.results.t.em".to_string(), "expected a number, found string \"x\"".to_string()));
    }

    #[test]
    fn how_the_run_was_made_is_kept_beside_each_score() {
        let doc = r#"{"config_general": {"model_name": "m", "max_samples": 8, "model_config": {"revision": "r1"}},
            "results": {"lighteval|gsm8k|0": {"em": 0.5}},
            "config_tasks": {"lighteval|gsm8k|0": {"hf_repo": "gsm8k"}},
            "summary_tasks": {"lighteval|gsm8k|0": {"hashes": {"hash_examples": "h"}, "truncated": 0, "padded": 2}},
            "summary_general": {"padded": 2}}"#;
        let rows = result_rows(&obj(doc), Coerce::default()).unwrap();
        let got: Vec<String> = ["max_samples", "config_general", "task_config", "task_summary", "extra", "hashes"]
            .iter()
            .map(|k| rows[0][*k].to_string())
            .collect();
        assert_eq!(got[0], "8");
        assert!(got[1].contains(r#""model_config":{"revision":"r1"}"#), "{}", got[1]);
        assert_eq!(
            got[2..],
            [
                r#"{"hf_repo":"gsm8k"}"#,
                r#"{"truncated":0,"padded":2}"#,
                r#"{"summary_general":{"padded":2}}"#,
                r#"{"hash_examples":"h"}"#
            ]
        );
        // a count that is no count is a problem at its path
        let doc = r#"{"config_general": {"max_samples": "all"}, "results": {"t": {"em": 1}}}"#;
        let e = result_rows(&obj(doc), Coerce::default()).unwrap_err();
        assert_eq!(e[0].0, "$.config_general.max_samples");
    }

    #[test]
    fn details_names_split_at_the_last_underscore() {
        let n =
            details_name(Path::new("d/details_lighteval|mmlu:us_foreign_policy|5_2026-05-05T17-54-23.123456.parquet"));
        assert_eq!(n, Some(("lighteval|mmlu:us_foreign_policy|5".into(), "2026-05-05T17-54-23.123456".into())));
        assert_eq!(details_name(Path::new("details.parquet")), None);
    }
}
