//! transformers Trainer states (`TrainerState.save_to_json` in
//! `transformers/trainer_callback.py`), as the Trainer and TRL's trainers built on it (SFT,
//! DPO, GRPO, …) write them, shaped into rows of fixed columns.
//!
//! `trainer-state`: a `trainer_state.json` document: `global_step`, `epoch`, `max_steps`, …,
//! and `log_history`, the list of every log call so far, each an object of the metrics logged
//! (`loss`, `grad_norm`, `learning_rate`, `rewards/…/mean`, `eval_loss`, `train_runtime`, …)
//! with the `step` and `epoch` they were logged at (`json.dumps`, so a NaN loss is a bare
//! `NaN`). The Trainer saves the whole log with each checkpoint (`checkpoint-<step>/`) and,
//! with `save_state()`, in its output folder: a later state holds an earlier one's log whole.
//! One row per entry of `log_history` and metric, in long form: `output_dir` (the run's output
//! folder, relative to the pipeline: the file's folder, or the one above a checkpoint's
//! folder), `step` (Int64), `epoch` (Float64), `entry` (Int64: the entry's 0-based place in
//! `log_history`, which tells apart two logs of one metric at one step, such as an evaluation
//! run again after training), `metric`, `value` (Float64, NaN and ±Infinity kept) and
//! `value_text` (a string, list or object logged, or an integer beyond ±2^53 as its digits, as
//! in `tinker-metrics`).

use serde_json::{Map, Value};

use super::convert::Target;
use super::evals::{ShapeProblems, float_like, problem};

/// Columns of `trainer-state`.
pub fn columns() -> Vec<(String, Target)> {
    vec![
        ("output_dir".into(), Target::Str),
        ("step".into(), Target::Int64),
        ("epoch".into(), Target::Float64),
        ("entry".into(), Target::Int64),
        ("metric".into(), Target::Str),
        ("value".into(), Target::Float64),
        ("value_text".into(), Target::Text),
    ]
}

/// Whether folder name `name` is a checkpoint's: `checkpoint-500` as the Trainer names it,
/// `last-checkpoint` as it pushes one to the Hub, `checkpoint-final` and the like.
pub fn is_checkpoint_folder(name: &str) -> bool {
    name.to_ascii_lowercase().contains("checkpoint")
}

/// The step of a checkpoint folder as the Trainer names it (`checkpoint-500` → 500).
pub fn checkpoint_step(name: &str) -> Option<u64> {
    name.strip_prefix("checkpoint-")?.parse().ok()
}

/// The run's output folder of the Trainer state at `rel` (a path relative to the pipeline):
/// the file's folder, or the one above it when that is a checkpoint's; `.` at the top.
pub fn output_dir(rel: &str) -> String {
    let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
    let (parent, last) = dir.rsplit_once('/').unwrap_or(("", dir));
    let dir = if is_checkpoint_folder(last) { parent } else { dir };
    if dir.is_empty() { ".".into() } else { dir.to_string() }
}

/// Long rows of a `trainer_state.json` document.
///
/// Errors: the document has no `log_history` list (no Trainer state), an entry is no object,
/// its `step` is missing or no integer, or its `epoch` is no number (each at its JSON path).
pub fn rows(r: &Map<String, Value>) -> Result<Vec<Map<String, Value>>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let Some(history) = r.get("log_history").and_then(Value::as_array) else {
        if let Some(found) = r.get("log_history") {
            problem(&mut problems, "$.log_history".into(), "the list of log entries", found);
            return Err(problems);
        }
        let keys: Vec<&str> = r.keys().map(String::as_str).take(5).collect();
        problems.push((
            "$.log_history".into(),
            format!(
                "expected a transformers Trainer state (`log_history`, `global_step`, `epoch`, …), found keys {keys:?}"
            ),
        ));
        return Err(problems);
    };
    let mut rows = Vec::new();
    for (i, entry) in history.iter().enumerate() {
        let at = format!("$.log_history[{i}]");
        let Value::Object(entry) = entry else {
            problem(&mut problems, at, "an object of logged values", entry);
            continue;
        };
        let Some(step) = entry.get("step").cloned() else {
            let keys: Vec<&str> = entry.keys().map(String::as_str).take(5).collect();
            problems.push((
                format!("{at}.step"),
                format!("expected the step logged at, missing; the entry holds keys {keys:?}"),
            ));
            continue;
        };
        if step.as_i64().is_none_or(|s| s < 0) {
            problem(&mut problems, format!("{at}.step"), "the step logged at (an integer, 0 or more)", &step);
            continue;
        }
        let epoch = entry.get("epoch").cloned().unwrap_or(Value::Null);
        if !float_like(&epoch) {
            problem(&mut problems, format!("{at}.epoch"), "a number", &epoch);
            continue;
        }
        for (k, v) in entry {
            if k == "step" || k == "epoch" {
                continue;
            }
            let (value, text) = super::tinker::value_columns(v.clone());
            let mut row = Map::with_capacity(6);
            row.insert("step".into(), step.clone());
            row.insert("epoch".into(), epoch.clone());
            row.insert("entry".into(), Value::from(i as u64));
            row.insert("metric".into(), Value::String(k.clone()));
            row.insert("value".into(), value);
            row.insert("value_text".into(), text);
            rows.push(row);
        }
    }
    if problems.is_empty() { Ok(rows) } else { Err(problems) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn every_logged_value_is_a_row_of_its_entry() {
        let d = doc(serde_json::json!({
            "global_step": 20,
            "log_history": [
                {"epoch": 0.5, "grad_norm": 1.5, "learning_rate": 4e-05, "loss": 2.25, "step": 10},
                {"epoch": 1.0, "eval_loss": 1.75, "step": 20},
                {"epoch": 1.0, "eval_loss": 1.5, "step": 20},
                {"epoch": 1.0, "step": 20}
            ]
        }));
        let got: Vec<String> = rows(&d)
            .unwrap()
            .iter()
            .map(|r| format!("{} {} {} {} {}", r["step"], r["epoch"], r["entry"], r["metric"], r["value"]))
            .collect();
        assert_eq!(
            got,
            [
                "10 0.5 0 \"grad_norm\" 1.5",
                "10 0.5 0 \"learning_rate\" 0.00004",
                "10 0.5 0 \"loss\" 2.25",
                "20 1.0 1 \"eval_loss\" 1.75",
                "20 1.0 2 \"eval_loss\" 1.5",
            ]
        );
    }

    #[test]
    fn a_state_names_its_runs_output_folder() {
        assert_eq!(output_dir("raw/grpo/trainer_state.json"), "raw/grpo");
        assert_eq!(output_dir("raw/grpo/checkpoint-500/trainer_state.json"), "raw/grpo");
        assert_eq!(output_dir("raw/grpo/last-checkpoint/trainer_state.json"), "raw/grpo");
        assert_eq!(output_dir("checkpoint-5/trainer_state.json"), ".");
        assert_eq!(output_dir("trainer_state.json"), ".");
        assert_eq!((checkpoint_step("checkpoint-1000"), checkpoint_step("last-checkpoint")), (Some(1000), None));
    }

    #[test]
    fn what_is_no_trainer_state_is_said_at_its_path() {
        let e = rows(&doc(serde_json::json!({"global_step": 1, "log_history": null}))).unwrap_err();
        assert_eq!(e, [("$.log_history".to_string(), "expected the list of log entries, found null".to_string())]);
        let e = rows(&doc(serde_json::json!({"results": {}}))).unwrap_err();
        assert_eq!(e[0].0, "$.log_history");
        assert!(e[0].1.contains("expected a transformers Trainer state"), "{e:?}");
        let e =
            rows(&doc(serde_json::json!({"log_history": [3, {"loss": 1}, {"step": 2.5}, {"step": 1, "epoch": "x"}]})))
                .unwrap_err();
        let paths: Vec<&str> = e.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            ["$.log_history[0]", "$.log_history[1].step", "$.log_history[2].step", "$.log_history[3].epoch"]
        );
        assert_eq!(e[1].1, "expected the step logged at, missing; the entry holds keys [\"loss\"]");
    }
}
