//! verl generation dumps (volcengine/verl 0.8, `RayPPOTrainer._dump_generations` in
//! `verl/trainer/ppo/ray_trainer.py`) and metrics logs (`FileLogger` in
//! `verl/utils/tracking.py`), shaped into rows of fixed columns.
//!
//! `verl-metrics`: the JSON Lines log of `trainer.logger=["file"]`, written to
//! `$VERL_FILE_LOGGER_PATH` or `$VERL_FILE_LOGGER_ROOT/<project>/<experiment>.jsonl`: one line
//! per logging call, `{"step": N, "data": {"actor/pg_loss": …, "val-core/…": …}}` (later
//! versions add `elapsed_seconds`). Read in long form, as `tinker-metrics`: `step` (Int64),
//! `metric` (the key in `data` as logged; a top-level key other than `step` and `data`, such
//! as `elapsed_seconds`, is a metric of that name too), `value` (Float64, NaN and ±Infinity
//! kept), `value_text` (a string, or the JSON text of a list, object or boolean). A line
//! without a `data` object is a bad record.
//!
//! `verl-generations`: the `{step}.jsonl` files verl writes under `trainer.validation_data_dir`
//! (validation) and `trainer.rollout_data_dir` (training rollouts): one line per sample,
//! `{"input", "output", "gts", "score", "step", <reward extra keys>…}` (`json.dumps`, so a
//! NaN score is a bare `NaN`). One row per line, for the standard `eval_samples` table: `step`
//! (Int64), `score` (Float64, NaN and ±Infinity kept), `gts` (text: the ground truth as
//! written, or the JSON text of a list or object), `extra` (JSON text of the reward's extra
//! keys, such as `acc` or `pred`, and `request_id`), and, with `keep_text = true`, `input` and
//! `output` (the decoded prompt and response). The samples of one step are told apart by
//! `_source_line`.

use serde_json::{Map, Value};

use super::convert::{Target, json_text, whole_number};
use super::evals::{ShapeProblems, problem};
use super::lenient;

/// Keys of a line that are not the reward's extra keys.
const KEYS: [&str; 5] = ["input", "output", "gts", "score", "step"];

/// Keys of a line that hold texts: kept only with `keep_text`.
pub const TEXT_KEYS: [&str; 2] = ["input", "output"];

/// Columns of `verl-generations`.
pub fn columns(keep_text: bool) -> Vec<(String, Target)> {
    let mut c: Vec<(String, Target)> = vec![
        ("step".into(), Target::Int64),
        ("score".into(), Target::Float64),
        ("gts".into(), Target::Text),
        ("extra".into(), Target::Json),
    ];
    if keep_text {
        for k in TEXT_KEYS {
            c.push((k.into(), Target::Str));
        }
    }
    c
}

/// Row of a `{step}.jsonl` line.
///
/// Errors: the line lacks `step` or `score` (no verl sample), `step` is no integer, `score` is
/// no number, or `input`/`output` is no string.
pub fn row(r: &Map<String, Value>, keep_text: bool) -> Result<Map<String, Value>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let missing: Vec<&str> = ["step", "score"].into_iter().filter(|k| !r.contains_key(*k)).collect();
    if !missing.is_empty() {
        let keys: Vec<&str> = r.keys().map(String::as_str).take(5).collect();
        problems.push((
            format!("$.{}", missing[0]),
            format!(
                "expected a verl generation (`input`, `output`, `gts`, `score`, `step`, …), missing {missing:?}; found \
                 keys {keys:?}"
            ),
        ));
        return Err(problems);
    }
    let step = &r["step"];
    if whole_number(step).is_none() {
        problem(&mut problems, "$.step".into(), "an integer", step);
    }
    let score = &r["score"];
    let score_ok = match score {
        Value::Null | Value::Number(_) => true,
        Value::String(s) => lenient::special(s).is_some_and(|s| s.as_f64().is_some()),
        _ => false,
    };
    if !score_ok {
        problem(&mut problems, "$.score".into(), "a number", score);
    }
    for k in TEXT_KEYS {
        match r.get(k) {
            None | Some(Value::Null | Value::String(_)) => {}
            Some(v) => problem(&mut problems, format!("$.{k}"), "a string", v),
        }
    }
    let mut row = Map::new();
    row.insert("step".into(), step.clone());
    row.insert("score".into(), score.clone());
    let gts = match r.get("gts") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(other) => Value::String(json_text(other)),
    };
    row.insert("gts".into(), gts);
    let extra: Map<String, Value> =
        r.iter().filter(|(k, _)| !KEYS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    row.insert("extra".into(), if extra.is_empty() { Value::Null } else { Value::Object(extra) });
    if keep_text {
        for k in TEXT_KEYS {
            row.insert(k.into(), r.get(k).cloned().unwrap_or(Value::Null));
        }
    }
    if problems.is_empty() { Ok(row) } else { Err(problems) }
}

/// Columns of `verl-metrics`: those of the Tinker metrics log's long form.
pub fn metrics_columns() -> Vec<(String, Target)> {
    super::tinker::metrics_columns()
}

/// Long rows of one line of verl's file logger: one per metric of `data`, and one per other
/// top-level key than `step` (`elapsed_seconds`), in the line's order.
///
/// Errors: the line has no `step`, or its `data` is missing or no object.
pub fn metrics_rows(r: &Map<String, Value>) -> Result<Vec<Map<String, Value>>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let missing = |key: &str| {
        let keys: Vec<&str> = r.keys().map(String::as_str).take(5).collect();
        (
            format!("$.{key}"),
            format!("expected a line of verl's file logger (`step`, `data`), missing {key:?}; found keys {keys:?}"),
        )
    };
    if !r.contains_key("step") {
        problems.push(missing("step"));
    }
    let data = match r.get("data") {
        Some(Value::Object(d)) => Some(d),
        Some(other) => {
            problem(&mut problems, "$.data".into(), "an object of metrics", other);
            None
        }
        None => {
            problems.push(missing("data"));
            None
        }
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let step = &r["step"];
    if whole_number(step).is_none() {
        problem(&mut problems, "$.step".into(), "an integer", step);
        return Err(problems);
    }
    let outer = r.iter().filter(|(k, _)| *k != "step" && *k != "data");
    let mut rows = Vec::with_capacity(r.len() + data.map_or(0, Map::len));
    for (k, v) in outer.chain(data.into_iter().flatten()) {
        let mut row = Map::with_capacity(4);
        row.insert("step".into(), step.clone());
        row.insert("metric".into(), Value::String(k.clone()));
        let (value, text) = super::tinker::value_columns(v.clone());
        row.insert("value".into(), value);
        row.insert("value_text".into(), text);
        rows.push(row);
    }
    Ok(rows)
}

/// Whether a record is a line of verl's file logger: `step` and a `data` object, and no other
/// key but `elapsed_seconds`.
pub fn is_metrics_line(r: &Map<String, Value>) -> bool {
    r.contains_key("step")
        && r.get("data").is_some_and(Value::is_object)
        && r.keys().all(|k| matches!(k.as_str(), "step" | "data" | "elapsed_seconds"))
}

/// A line as a rejects file keeps it: without its prompt and response unless the source
/// keeps texts.
pub fn without_texts(mut r: Map<String, Value>, keep_text: bool) -> Map<String, Value> {
    if !keep_text {
        for k in TEXT_KEYS {
            r.shift_remove(k);
        }
    }
    r
}

/// Whether `path` is named as verl names its dumps: `<step>.jsonl`, the step a number.
pub fn is_dump_name(path: &std::path::Path) -> bool {
    path.extension().and_then(|e| e.to_str()) == Some("jsonl")
        && path
            .file_stem()
            .and_then(|s| s.to_str())
            .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Map<String, Value> {
        serde_json::from_str::<Value>(s).unwrap().as_object().unwrap().clone()
    }

    #[test]
    fn a_line_keeps_its_extra_keys() {
        let line = obj(
            r#"{"input": "q", "output": "a", "gts": ["1", "2"], "score": 1.0, "step": 5, "acc": true, "pred": "1"}"#,
        );
        let row = row(&line, false).unwrap();
        assert_eq!(row["gts"], Value::String("[\"1\",\"2\"]".into()));
        assert_eq!(row["extra"], serde_json::json!({"acc": true, "pred": "1"}));
        assert!(row.get("input").is_none());
        let e = super::row(&obj(r#"{"step": "x", "score": "high", "output": 3}"#), true).unwrap_err();
        assert_eq!(
            e.into_iter().map(|(p, m)| format!("{p}: {m}")).collect::<Vec<_>>(),
            vec![
                "$.step: expected an integer, found string \"x\"",
                "$.score: expected a number, found string \"high\"",
                "$.output: expected a string, found number 3",
            ]
        );
        assert!(is_dump_name(std::path::Path::new("val/12.jsonl")) && !is_dump_name(std::path::Path::new("a.jsonl")));
    }

    #[test]
    fn a_file_logger_line_is_one_row_per_metric() {
        let line =
            obj(r#"{"step": 3, "elapsed_seconds": 5.5, "data": {"actor/pg_loss": -0.1, "note": "x", "v": [1]}}"#);
        assert!(is_metrics_line(&line));
        let rows = metrics_rows(&line).unwrap();
        let got: Vec<String> = rows.iter().map(|r| Value::Object(r.clone()).to_string()).collect();
        assert_eq!(
            got,
            [
                r#"{"step":3,"metric":"elapsed_seconds","value":5.5,"value_text":null}"#,
                r#"{"step":3,"metric":"actor/pg_loss","value":-0.1,"value_text":null}"#,
                r#"{"step":3,"metric":"note","value":null,"value_text":"x"}"#,
                r#"{"step":3,"metric":"v","value":null,"value_text":[1]}"#,
            ]
        );
        let e = metrics_rows(&obj(r#"{"step": 1.5, "data": {}}"#)).unwrap_err();
        assert_eq!(e[0].1, "expected an integer, found number 1.5");
        let e = metrics_rows(&obj(r#"{"step": 1, "data": [1]}"#)).unwrap_err();
        assert_eq!((e[0].0.as_str(), e[0].1.as_str()), ("$.data", "expected an object of metrics, found an array"));
        let e = metrics_rows(&obj(r#"{"step": 1, "loss": 2}"#)).unwrap_err();
        assert!(e[0].1.contains("missing \"data\"; found keys [\"step\", \"loss\"]"), "{e:?}");
        assert!(!is_metrics_line(&obj(r#"{"step": 1, "data": {}, "run": "a"}"#)));
    }
}
