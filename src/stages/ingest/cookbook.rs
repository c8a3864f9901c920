//! tinker-cookbook's newer run files (tinker-cookbook 0.6, `tinker_cookbook/stores/training_store.py`,
//! `utils/trace.py`, `rl/rollout_logging.py`, `stores/eval_store.py`), shaped into rows of fixed
//! columns.
//!
//! - `tinker-timings`: `timing_spans.jsonl` lines (`{"step": 3, "spans": [{"name", "duration",
//!   "wall_start", "wall_end"}]}`), one row per span: `step` (Int64), `span_index` (Int64, the
//!   span's place in its line, from 0), `span` (Utf8, its `name`), `duration`, `wall_start`,
//!   `wall_end` (Float64 seconds; wall times count from the step's first span), `extra` (JSON
//!   text of a span's other keys). For the standard `timings` table.
//! - `tinker-rollouts`: rollout summaries, one trajectory per line, in either layout:
//!   `iteration_NNNNNN/train_rollout_summaries.jsonl` and `…/eval_<name>_rollout_summaries.jsonl`
//!   (written since 0.5) or the flat `train_iteration_NNNNNN_rollout_summaries.jsonl` and
//!   `eval_<name>_iteration_NNNNNN_rollout_summaries.jsonl` of the older docs. One row per
//!   trajectory: `schema_version`, `split` (`train`, `eval/<name>`), `iteration`, `group_idx`,
//!   `traj_idx`, `tags` (`List<Utf8>`), `sampling_client_step`, `total_reward`, `final_reward`,
//!   `final_ob_len`, `num_steps`, `trajectory_metrics` (JSON text), `extra`. For the standard
//!   `rollouts` table; (`split`, `iteration`, `group_idx`, `traj_idx`) names a trajectory.
//! - `tinker-rollout-steps`: the same files, one row per item of a trajectory's `steps`:
//!   `split`, `iteration`, `group_idx`, `traj_idx`, `step_idx`, `ob_len`, `ac_len` (tokens),
//!   `reward`, `episode_done`, `metrics`, `logs` (JSON text), `extra`. For `rollout_steps`.
//! - `tinker-eval-run`: an eval store's `runs/<run_id>/metadata.json` (`RunMetadata`): `run_id`,
//!   `model_name`, `checkpoint_path` (`tinker://…`), `checkpoint_name`, `benchmarks`
//!   (`List<Utf8>`), `timestamp` (ISO text, as written), `config`, `scores` (JSON text), `extra`.
//!   The store's `<benchmark>/result.json` and `trajectories.jsonl` are `tinker-eval-result` and
//!   `tinker-eval-trajectories` (see [`super::evals`]); its `runs.jsonl` index is plain `jsonl`.
//!
//! A value of the wrong kind is a problem at its JSON path in the raw line (`$.spans[1].duration`),
//! so the whole line is rejected (or a violation), never part of it.

use std::path::Path;

use serde_json::{Map, Value};

use super::convert::{Target, whole_number};
use super::evals::ShapeProblems;
use super::lenient;
use super::path;

/// Columns of `tinker-timings`.
pub fn timing_columns() -> Vec<(String, Target)> {
    vec![
        ("step".into(), Target::Int64),
        ("span_index".into(), Target::Int64),
        ("span".into(), Target::Str),
        ("duration".into(), Target::Float64),
        ("wall_start".into(), Target::Float64),
        ("wall_end".into(), Target::Float64),
        ("extra".into(), Target::Json),
    ]
}

/// Columns of `tinker-rollouts`.
pub fn rollout_columns() -> Vec<(String, Target)> {
    vec![
        ("schema_version".into(), Target::Int64),
        ("split".into(), Target::Str),
        ("iteration".into(), Target::Int64),
        ("group_idx".into(), Target::Int64),
        ("traj_idx".into(), Target::Int64),
        ("tags".into(), Target::List(Box::new(Target::Str))),
        ("sampling_client_step".into(), Target::Int64),
        ("total_reward".into(), Target::Float64),
        ("final_reward".into(), Target::Float64),
        ("final_ob_len".into(), Target::Int64),
        ("num_steps".into(), Target::Int64),
        ("trajectory_metrics".into(), Target::Json),
        ("extra".into(), Target::Json),
    ]
}

/// Columns of `tinker-rollout-steps`.
pub fn rollout_step_columns() -> Vec<(String, Target)> {
    vec![
        ("split".into(), Target::Str),
        ("iteration".into(), Target::Int64),
        ("group_idx".into(), Target::Int64),
        ("traj_idx".into(), Target::Int64),
        ("step_idx".into(), Target::Int64),
        ("ob_len".into(), Target::Int64),
        ("ac_len".into(), Target::Int64),
        ("reward".into(), Target::Float64),
        ("episode_done".into(), Target::Bool),
        ("metrics".into(), Target::Json),
        ("logs".into(), Target::Json),
        ("extra".into(), Target::Json),
    ]
}

/// Columns of `tinker-eval-run`.
pub fn eval_run_columns() -> Vec<(String, Target)> {
    vec![
        ("run_id".into(), Target::Str),
        ("model_name".into(), Target::Str),
        ("checkpoint_path".into(), Target::Str),
        ("checkpoint_name".into(), Target::Str),
        ("benchmarks".into(), Target::List(Box::new(Target::Str))),
        ("timestamp".into(), Target::Str),
        ("config".into(), Target::Json),
        ("scores".into(), Target::Json),
        ("extra".into(), Target::Json),
    ]
}

/// The kinds of value a column takes.
#[derive(Clone, Copy)]
enum Kind {
    /// A whole number (`3`, `3.0`).
    Int,
    /// A number, a bare `NaN`/`Infinity`/`-Infinity`.
    Float,
    /// `true` or `false`.
    Bool,
    /// A string.
    Str,
    /// An object.
    Object,
    /// A list of strings.
    Strings,
}

impl Kind {
    fn expected(self) -> &'static str {
        match self {
            Kind::Int => "an integer",
            Kind::Float => "a number",
            Kind::Bool => "true or false",
            Kind::Str => "a string",
            Kind::Object => "an object",
            Kind::Strings => "a list of strings",
        }
    }

    fn fits(self, v: &Value) -> bool {
        match (self, v) {
            (_, Value::Null) => true,
            (Kind::Int, v) => whole_number(v).is_some(),
            (Kind::Float, Value::Number(_)) => true,
            (Kind::Float, Value::String(s)) => lenient::special(s).is_some_and(|s| s.as_f64().is_some()),
            (Kind::Bool, Value::Bool(_)) => true,
            (Kind::Str, Value::String(s)) => lenient::special(s).is_none(),
            (Kind::Object, Value::Object(_)) => true,
            (Kind::Strings, Value::Array(a)) => a.iter().all(|v| Kind::Str.fits(v) && !v.is_null()),
            _ => false,
        }
    }
}

/// `r[key]` (null when absent), checked to be of `kind`: a value of another kind is a problem at
/// `base.key` and gives null.
fn take(r: &Map<String, Value>, key: &str, kind: Kind, base: &str, problems: &mut ShapeProblems) -> Value {
    let v = r.get(key).cloned().unwrap_or(Value::Null);
    if kind.fits(&v) {
        return v;
    }
    let place = format!("{base}{}", &path::render(&[path::Seg::Key(key.to_string())])[1..]);
    problems.push((place, format!("expected {}, found {}", kind.expected(), path::describe(&v))));
    Value::Null
}

/// The keys of `r` not in `known`, as one object, or null when there are none.
fn extra(r: &Map<String, Value>, known: &[&str]) -> Value {
    let rest: Map<String, Value> =
        r.iter().filter(|(k, _)| !known.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    if rest.is_empty() { Value::Null } else { Value::Object(rest) }
}

const SPAN_KEYS: [&str; 4] = ["name", "duration", "wall_start", "wall_end"];

/// Rows of one `timing_spans.jsonl` line: one per span. A line with an empty `spans` list
/// gives no row (it times nothing; the writer never writes one).
///
/// Errors: `spans` is missing or no list, a span is no object, or a value is of the wrong kind
/// (each named at its path: `$.spans[1].duration`).
pub fn timing_rows(r: &Map<String, Value>) -> Result<Vec<Map<String, Value>>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let step = take(r, "step", Kind::Int, "$", &mut problems);
    let spans = match r.get("spans") {
        Some(Value::Array(a)) => a.as_slice(),
        other => {
            let found = other.map(path::describe).unwrap_or_else(|| "nothing (no `spans` key)".into());
            problems.push((
                "$.spans".into(),
                format!(
                    "expected a list of spans ({{\"name\", \"duration\", \"wall_start\", \"wall_end\"}}), found {found}"
                ),
            ));
            return Err(problems);
        }
    };
    let rest = extra(r, &["step", "spans"]);
    if !rest.is_null() {
        let keys: Vec<&str> = rest.as_object().into_iter().flat_map(|o| o.keys().map(String::as_str)).collect();
        problems.push(("$".into(), format!("expected the keys `step` and `spans` only, found also {keys:?}")));
    }
    let mut rows = Vec::with_capacity(spans.len());
    for (i, s) in spans.iter().enumerate() {
        let base = format!("$.spans[{i}]");
        let Value::Object(s) = s else {
            problems.push((base, format!("expected a span object, found {}", path::describe(s))));
            continue;
        };
        let mut row = Map::with_capacity(7);
        row.insert("step".into(), step.clone());
        row.insert("span_index".into(), Value::from(i as i64));
        row.insert("span".into(), take(s, "name", Kind::Str, &base, &mut problems));
        for k in ["duration", "wall_start", "wall_end"] {
            row.insert(k.into(), take(s, k, Kind::Float, &base, &mut problems));
        }
        row.insert("extra".into(), extra(s, &SPAN_KEYS));
        rows.push(row);
    }
    if problems.is_empty() { Ok(rows) } else { Err(problems) }
}

/// The rollout summary versions this reader knows (`schema_version`).
pub const ROLLOUT_SCHEMA_VERSIONS: [i64; 1] = [1];

const ROLLOUT_KEYS: [&str; 12] = [
    "schema_version",
    "split",
    "iteration",
    "group_idx",
    "traj_idx",
    "tags",
    "sampling_client_step",
    "total_reward",
    "final_reward",
    "trajectory_metrics",
    "steps",
    "final_ob_len",
];
const STEP_KEYS: [&str; 7] = ["step_idx", "ob_len", "ac_len", "reward", "episode_done", "metrics", "logs"];
const ID_KEYS: [&str; 4] = ["split", "iteration", "group_idx", "traj_idx"];

/// The checked identity and fields of a rollout summary line, and its steps.
fn rollout_parts(r: &Map<String, Value>, problems: &mut ShapeProblems) -> (Map<String, Value>, Vec<Value>) {
    if !r.contains_key("traj_idx") && !r.contains_key("steps") {
        let keys: Vec<&str> = r.keys().map(String::as_str).take(5).collect();
        problems.push((
            "$".into(),
            format!(
                "expected a rollout summary (`schema_version`, `split`, `iteration`, `group_idx`, `traj_idx`, `steps`, …), \
                 found an object with keys {keys:?}"
            ),
        ));
        return (Map::new(), Vec::new());
    }
    let mut row = Map::new();
    let version = take(r, "schema_version", Kind::Int, "$", problems);
    if let Some(v) = whole_number(&version).filter(|v| !ROLLOUT_SCHEMA_VERSIONS.contains(v)) {
        problems.push((
            "$.schema_version".into(),
            format!("expected schema_version 1 (the rollout summary version runpack reads), found {v}"),
        ));
    }
    row.insert("schema_version".into(), version);
    row.insert("split".into(), take(r, "split", Kind::Str, "$", problems));
    for k in ["iteration", "group_idx", "traj_idx"] {
        row.insert(k.into(), take(r, k, Kind::Int, "$", problems));
    }
    let steps = match r.get("steps") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(other) => {
            problems.push(("$.steps".into(), format!("expected a list of steps, found {}", path::describe(other))));
            Vec::new()
        }
    };
    (row, steps)
}

/// Row of one rollout summary line (one trajectory).
///
/// Errors: the line is no rollout summary (neither `traj_idx` nor `steps`), its
/// `schema_version` is not 1, or a value is of the wrong kind (at its path).
pub fn rollout_row(r: &Map<String, Value>) -> Result<Map<String, Value>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let (mut row, steps) = rollout_parts(r, &mut problems);
    if !problems.is_empty() && row.is_empty() {
        return Err(problems);
    }
    row.insert("tags".into(), take(r, "tags", Kind::Strings, "$", &mut problems));
    row.insert("sampling_client_step".into(), take(r, "sampling_client_step", Kind::Int, "$", &mut problems));
    for k in ["total_reward", "final_reward"] {
        row.insert(k.into(), take(r, k, Kind::Float, "$", &mut problems));
    }
    row.insert("final_ob_len".into(), take(r, "final_ob_len", Kind::Int, "$", &mut problems));
    let has_steps = matches!(r.get("steps"), Some(Value::Array(_)));
    row.insert("num_steps".into(), if has_steps { Value::from(steps.len() as i64) } else { Value::Null });
    row.insert("trajectory_metrics".into(), take(r, "trajectory_metrics", Kind::Object, "$", &mut problems));
    row.insert("extra".into(), extra(r, &ROLLOUT_KEYS));
    if problems.is_empty() { Ok(row) } else { Err(problems) }
}

/// Rows of one rollout summary line's `steps`, each with the trajectory's identity.
///
/// Errors: as [`rollout_row`]'s for the identity, and a step that is no object or holds a
/// value of the wrong kind (at its path: `$.steps[2].reward`).
pub fn rollout_step_rows(r: &Map<String, Value>) -> Result<Vec<Map<String, Value>>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let (id, steps) = rollout_parts(r, &mut problems);
    if !problems.is_empty() && id.is_empty() {
        return Err(problems);
    }
    let mut rows = Vec::with_capacity(steps.len());
    for (i, s) in steps.iter().enumerate() {
        let base = format!("$.steps[{i}]");
        let Value::Object(s) = s else {
            problems.push((base, format!("expected a step object, found {}", path::describe(s))));
            continue;
        };
        let mut row = Map::with_capacity(12);
        for k in ID_KEYS {
            row.insert(k.into(), id.get(k).cloned().unwrap_or(Value::Null));
        }
        for k in ["step_idx", "ob_len", "ac_len"] {
            row.insert(k.into(), take(s, k, Kind::Int, &base, &mut problems));
        }
        row.insert("reward".into(), take(s, "reward", Kind::Float, &base, &mut problems));
        row.insert("episode_done".into(), take(s, "episode_done", Kind::Bool, &base, &mut problems));
        row.insert("metrics".into(), take(s, "metrics", Kind::Object, &base, &mut problems));
        row.insert("logs".into(), take(s, "logs", Kind::Object, &base, &mut problems));
        row.insert("extra".into(), extra(s, &STEP_KEYS));
        rows.push(row);
    }
    if problems.is_empty() { Ok(rows) } else { Err(problems) }
}

const RUN_KEYS: [&str; 8] =
    ["run_id", "model_name", "checkpoint_path", "checkpoint_name", "benchmarks", "timestamp", "config", "scores"];

/// Row of an eval store's `metadata.json`.
///
/// Errors: the document has no `run_id` (no run's metadata), or a value is of the wrong kind
/// (at its path), or a score is no number.
pub fn eval_run_row(r: &Map<String, Value>) -> Result<Map<String, Value>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    if r.get("run_id").is_none_or(Value::is_null) {
        let keys: Vec<&str> = r.keys().map(String::as_str).take(5).collect();
        problems.push((
            "$.run_id".into(),
            format!(
                "expected an eval run's metadata (`run_id`, `model_name`, `benchmarks`, `scores`, …), found an object \
                 with keys {keys:?}"
            ),
        ));
        return Err(problems);
    }
    let mut row = Map::new();
    for k in ["run_id", "model_name", "checkpoint_path", "checkpoint_name"] {
        row.insert(k.into(), take(r, k, Kind::Str, "$", &mut problems));
    }
    row.insert("benchmarks".into(), take(r, "benchmarks", Kind::Strings, "$", &mut problems));
    row.insert("timestamp".into(), take(r, "timestamp", Kind::Str, "$", &mut problems));
    row.insert("config".into(), take(r, "config", Kind::Object, "$", &mut problems));
    let scores = take(r, "scores", Kind::Object, "$", &mut problems);
    for (k, v) in scores.as_object().into_iter().flatten() {
        if !Kind::Float.fits(v) {
            let place = format!("$.scores{}", &path::render(&[path::Seg::Key(k.clone())])[1..]);
            problems.push((place, format!("expected a number, found {}", path::describe(v))));
        }
    }
    row.insert("scores".into(), scores);
    row.insert("extra".into(), extra(r, &RUN_KEYS));
    if problems.is_empty() { Ok(row) } else { Err(problems) }
}

/// Whether `path`'s file name is tinker-cookbook's `timing_spans.jsonl` (format
/// `tinker-timings`).
pub fn is_timing_spans(path: &Path) -> bool {
    file_name(path) == Some("timing_spans.jsonl")
}

/// Whether `path`'s file name is a rollout summary file of either layout (format
/// `tinker-rollouts` and `tinker-rollout-steps`): `train_rollout_summaries.jsonl` or
/// `eval_<name>_rollout_summaries.jsonl` in an `iteration_NNNNNN` folder, or the flat
/// `train_iteration_NNNNNN_rollout_summaries.jsonl` and
/// `eval_<name>_iteration_NNNNNN_rollout_summaries.jsonl`.
pub fn is_rollout_summaries(path: &Path) -> bool {
    let Some(name) = file_name(path) else { return false };
    let Some(stem) = name.strip_suffix("_rollout_summaries.jsonl") else { return false };
    let iteration =
        |s: &str| s.strip_prefix("iteration_").is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
    let in_folder = path.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str()).is_some_and(iteration);
    let base_ok = |b: &str| b == "train" || b.strip_prefix("eval_").is_some_and(|n| !n.is_empty());
    if in_folder && base_ok(stem) {
        return true;
    }
    // flat: `<base>_iteration_NNNNNN`
    stem.rfind("_iteration_").is_some_and(|i| base_ok(&stem[..i]) && iteration(&stem[i + 1..]))
}

/// Whether `path` is an eval store's run metadata, `runs/<run_id>/metadata.json` (format
/// `tinker-eval-run`).
pub fn is_eval_run_metadata(path: &Path) -> bool {
    file_name(path) == Some("metadata.json")
        && path.parent().and_then(Path::parent).and_then(|p| p.file_name()).is_some_and(|n| n == "runs")
}

fn file_name(path: &Path) -> Option<&str> {
    path.file_name().and_then(|n| n.to_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Map<String, Value> {
        serde_json::from_str::<Value>(s).unwrap().as_object().unwrap().clone()
    }

    fn problems<T>(r: Result<T, ShapeProblems>) -> Vec<String> {
        r.err().expect("problems").into_iter().map(|(p, m)| format!("{p}: {m}")).collect()
    }

    #[test]
    fn timing_spans_become_one_row_each() {
        let rows = timing_rows(&obj(
            r#"{"step": 2, "spans": [{"name": "sample", "duration": 0.5, "wall_start": 0.0, "wall_end": 0.5},
                {"name": "train", "duration": 1.0, "wall_start": 0.5, "wall_end": 1.5, "depth": 1}]}"#,
        ))
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[1]["span"].as_str(), &rows[1]["span_index"]), (Some("train"), &Value::from(1)));
        assert_eq!(rows[1]["extra"], serde_json::json!({"depth": 1}));
        assert_eq!(rows[0]["extra"], Value::Null);
        assert_eq!(
            problems(timing_rows(&obj(r#"{"step": 2, "spans": [{"name": 3, "duration": "x"}, 4]}"#))),
            vec![
                "$.spans[0].name: expected a string, found number 3",
                "$.spans[0].duration: expected a number, found string \"x\"",
                "$.spans[1]: expected a span object, found number 4",
            ]
        );
        assert_eq!(
            problems(timing_rows(&obj(r#"{"step": 1.5}"#))),
            vec![
                "$.step: expected an integer, found number 1.5",
                "$.spans: expected a list of spans ({\"name\", \"duration\", \"wall_start\", \"wall_end\"}), found nothing (no `spans` key)",
            ]
        );
    }

    #[test]
    fn rollouts_and_their_steps() {
        let line = r#"{"schema_version": 1, "split": "eval/gsm8k", "iteration": 3, "group_idx": 0, "traj_idx": 1,
            "tags": ["math"], "sampling_client_step": null, "total_reward": 1.0, "final_reward": 0.0,
            "trajectory_metrics": {"correct": 1.0}, "final_ob_len": 70, "new_key": true,
            "steps": [{"step_idx": 0, "ob_len": 40, "ac_len": 12, "reward": 1.0, "episode_done": true, "metrics": {}, "logs": {"a": "b"}}]}"#;
        let row = rollout_row(&obj(line)).unwrap();
        assert_eq!(row["num_steps"], 1);
        assert_eq!(row["extra"], serde_json::json!({"new_key": true}));
        let steps = rollout_step_rows(&obj(line)).unwrap();
        assert_eq!(steps.len(), 1);
        assert_eq!((steps[0]["split"].as_str(), &steps[0]["traj_idx"]), (Some("eval/gsm8k"), &Value::from(1)));
        assert_eq!(steps[0]["logs"], serde_json::json!({"a": "b"}));
        assert_eq!(
            problems(rollout_row(&obj(r#"{"schema_version": 2, "traj_idx": 0, "tags": "math", "steps": {}}"#))),
            vec![
                "$.schema_version: expected schema_version 1 (the rollout summary version runpack reads), found 2",
                "$.steps: expected a list of steps, found an object",
                "$.tags: expected a list of strings, found string \"math\"",
            ]
        );
        assert_eq!(
            problems(rollout_step_rows(&obj(r#"{"traj_idx": 0, "steps": [{"reward": "high", "episode_done": 1}]}"#))),
            vec![
                "$.steps[0].reward: expected a number, found string \"high\"",
                "$.steps[0].episode_done: expected true or false, found number 1",
            ]
        );
        assert!(problems(rollout_row(&obj(r#"{"step": 0}"#)))[0].starts_with("$: expected a rollout summary"));
    }

    #[test]
    fn eval_run_metadata() {
        let row = eval_run_row(&obj(
            r#"{"run_id": "r1", "model_name": "m", "checkpoint_path": null, "checkpoint_name": null,
                "benchmarks": ["gsm8k"], "timestamp": "2026-01-01T00:00:00", "config": {}, "scores": {"gsm8k": 0.5}}"#,
        ))
        .unwrap();
        assert_eq!(row["benchmarks"], serde_json::json!(["gsm8k"]));
        assert_eq!(row["extra"], Value::Null);
        assert_eq!(
            problems(eval_run_row(&obj(r#"{"run_id": "r1", "scores": {"gsm8k": "0.5"}, "benchmarks": [1]}"#))),
            vec![
                "$.benchmarks: expected a list of strings, found an array",
                "$.scores.gsm8k: expected a number, found string \"0.5\"",
            ]
        );
    }

    #[test]
    fn file_names_of_both_rollout_layouts() {
        for yes in [
            "run/iteration_000003/train_rollout_summaries.jsonl",
            "run/iteration_000003/eval_gsm8k_rollout_summaries.jsonl",
            "run/train_iteration_000003_rollout_summaries.jsonl",
            "run/eval_gsm8k_iteration_000003_rollout_summaries.jsonl",
        ] {
            assert!(is_rollout_summaries(Path::new(yes)), "{yes}");
        }
        for no in
            ["run/train_rollout_summaries.jsonl", "run/iteration_x/train_rollout_summaries.jsonl", "run/metrics.jsonl"]
        {
            assert!(!is_rollout_summaries(Path::new(no)), "{no}");
        }
        assert!(is_timing_spans(Path::new("a/timing_spans.jsonl")));
        assert!(is_eval_run_metadata(Path::new("evals/runs/r1/metadata.json")));
        assert!(!is_eval_run_metadata(Path::new("evals/r1/metadata.json")));
    }
}
