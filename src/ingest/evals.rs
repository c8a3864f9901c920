//! Evaluation outputs as sources, shaped into rows of fixed columns.
//!
//! In: records of evaluation files. Out: rows for the standard `evaluations` and `eval_samples`
//! tables (the pipeline's SQL adds the checkpoint, benchmark and split from path captures or
//! joins). Formats (input-formats notes §5 and §8):
//!
//! - `tinker-eval-result`: a tinker-cookbook benchmark runner `<benchmark>/result.json`
//!   (`BenchmarkResult`): `benchmark` (its `name`), `score`, `num_examples`, `num_correct`,
//!   `num_errors`, `num_truncated`, `time_seconds` (seconds), `pass_at_k`
//!   (`List<Struct<k: Int64, value: Float64>>`, sorted by k; JSON keys are strings), `metrics`
//!   (JSON text).
//! - `tinker-eval-trajectories`: `<benchmark>/trajectories.jsonl` lines (`StoredTrajectory`):
//!   `idx`, `benchmark`, `example_id` (falls back to the text of `idx` in older files),
//!   `reward`, `correct` (reward > 0), `error`, `num_turns`, `response_tokens` (tokens of the
//!   assistant turns), `time_seconds`, `metrics` (JSON text), `text` (the assistant turns joined
//!   by blank lines; only with `keep_text = true`). Samples of one example share its id; number
//!   them in SQL (`row_number() OVER (PARTITION BY example_id ORDER BY _source_line)`).
//! - `eval-metrics`: a per-checkpoint `<checkpoint>_metrics.json` (`{checkpoint, id, ood,
//!   total}`): one row per split present: `checkpoint`, `split` (`id`, `ood`, `total`),
//!   `answer_accuracy`, `avg_response_len` (tokens), `avg_loss`, `count`, `pass_at_k` (as above,
//!   from `"pass@k"` keys).
//! - `eval-generations`: `<checkpoint>_{id,ood}_generations.jsonl` lines: `example_id` (text of
//!   `__idx`), `op` (text), `template`, `exact_match` (Boolean from 0/1), `response_tokens`
//!   (`resp_tokens`), `gold_answer`, `gen_answer`, `text` (`gen_solution_answer`; only with
//!   `keep_text = true`). The k samples of a prompt share `__idx`.
//!
//! Generation texts dominate the bytes of evaluation outputs: they are left out unless the
//! source asks for them.

use serde_json::{Map, Value};

use super::convert::{Target, json_text};

fn pass_at_k_target() -> Target {
    Target::List(Box::new(Target::Struct(vec![("k".into(), Target::Int64), ("value".into(), Target::Float64)])))
}

/// Columns of `tinker-eval-result`.
pub fn result_columns() -> Vec<(String, Target)> {
    vec![
        ("benchmark".into(), Target::Str),
        ("score".into(), Target::Float64),
        ("num_examples".into(), Target::Int64),
        ("num_correct".into(), Target::Int64),
        ("num_errors".into(), Target::Int64),
        ("num_truncated".into(), Target::Int64),
        ("time_seconds".into(), Target::Float64),
        ("pass_at_k".into(), pass_at_k_target()),
        ("metrics".into(), Target::Str),
    ]
}

/// Columns of `tinker-eval-trajectories`.
pub fn trajectory_columns(keep_text: bool) -> Vec<(String, Target)> {
    let mut c: Vec<(String, Target)> = vec![
        ("idx".into(), Target::Int64),
        ("benchmark".into(), Target::Str),
        ("example_id".into(), Target::Str),
        ("reward".into(), Target::Float64),
        ("correct".into(), Target::Bool),
        ("error".into(), Target::Str),
        ("num_turns".into(), Target::Int64),
        ("response_tokens".into(), Target::Int64),
        ("time_seconds".into(), Target::Float64),
        ("metrics".into(), Target::Str),
    ];
    if keep_text {
        c.push(("text".into(), Target::Str));
    }
    c
}

/// Columns of `eval-metrics`.
pub fn metrics_columns() -> Vec<(String, Target)> {
    vec![
        ("checkpoint".into(), Target::Str),
        ("split".into(), Target::Str),
        ("answer_accuracy".into(), Target::Float64),
        ("avg_response_len".into(), Target::Float64),
        ("avg_loss".into(), Target::Float64),
        ("count".into(), Target::Int64),
        ("pass_at_k".into(), pass_at_k_target()),
    ]
}

/// Columns of `eval-generations`.
pub fn generation_columns(keep_text: bool) -> Vec<(String, Target)> {
    let mut c: Vec<(String, Target)> = vec![
        ("example_id".into(), Target::Str),
        ("op".into(), Target::Str),
        ("template".into(), Target::Str),
        ("exact_match".into(), Target::Bool),
        ("response_tokens".into(), Target::Int64),
        ("gold_answer".into(), Target::Str),
        ("gen_answer".into(), Target::Str),
    ];
    if keep_text {
        c.push(("text".into(), Target::Str));
    }
    c
}

/// `{"pass@1": 0.5, "2": 0.7}` → `[{k: 1, value: 0.5}, {k: 2, value: 0.7}]`, sorted by k. Keys
/// that hold no integer are kept as JSON text in a struct the converter will reject, so that they
/// are reported rather than dropped.
fn pass_at_k(v: Option<&Value>) -> Value {
    let Some(Value::Object(m)) = v else { return Value::Null };
    let mut pairs: Vec<(i64, Value)> = Vec::new();
    let mut bad = Vec::new();
    for (k, val) in m {
        match k.trim_start_matches("pass@").parse::<i64>() {
            Ok(n) => pairs.push((n, val.clone())),
            Err(_) => bad.push(Value::String(k.clone())),
        }
    }
    pairs.sort_by_key(|(k, _)| *k);
    let mut out: Vec<Value> = pairs.into_iter().map(|(k, v)| serde_json::json!({"k": k, "value": v})).collect();
    for b in bad {
        out.push(serde_json::json!({"k": b, "value": null}));
    }
    Value::Array(out)
}

fn text_of(v: Option<&Value>) -> Value {
    match v {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(other) => Value::String(json_text(other)),
    }
}

/// Row of a `result.json`.
pub fn result_row(mut r: Map<String, Value>) -> Map<String, Value> {
    let mut row = Map::new();
    row.insert("benchmark".into(), r.remove("name").unwrap_or(Value::Null));
    for k in ["score", "num_examples", "num_correct", "num_errors", "num_truncated", "time_seconds"] {
        row.insert(k.into(), r.remove(k).unwrap_or(Value::Null));
    }
    row.insert("pass_at_k".into(), pass_at_k(r.get("pass_at_k")));
    row.insert("metrics".into(), r.get("metrics").map(json_text).map(Value::String).unwrap_or(Value::Null));
    row
}

/// Row of a `trajectories.jsonl` line.
pub fn trajectory_row(r: Map<String, Value>, keep_text: bool) -> Map<String, Value> {
    let turns = r.get("turns").and_then(Value::as_array).cloned().unwrap_or_default();
    let assistant: Vec<&Value> =
        turns.iter().filter(|t| t.get("role").and_then(Value::as_str) == Some("assistant")).collect();
    let tokens: Option<i64> = assistant.iter().map(|t| t.get("token_count").and_then(Value::as_i64)).sum();
    let mut row = Map::new();
    row.insert("idx".into(), r.get("idx").cloned().unwrap_or(Value::Null));
    row.insert("benchmark".into(), r.get("benchmark").cloned().unwrap_or(Value::Null));
    let id = match r.get("example_id") {
        Some(Value::String(s)) => Value::String(s.clone()),
        _ => match r.get("idx") {
            Some(Value::Number(n)) => Value::String(n.to_string()),
            _ => Value::Null,
        },
    };
    row.insert("example_id".into(), id);
    let reward = r.get("reward").cloned().unwrap_or(Value::Null);
    let correct = reward.as_f64().map(|x| Value::Bool(x > 0.0)).unwrap_or(Value::Null);
    row.insert("reward".into(), reward);
    row.insert("correct".into(), correct);
    row.insert("error".into(), text_of(r.get("error")));
    row.insert("num_turns".into(), Value::from(turns.len() as i64));
    row.insert("response_tokens".into(), tokens.map(Value::from).unwrap_or(Value::Null));
    row.insert("time_seconds".into(), r.get("time_seconds").cloned().unwrap_or(Value::Null));
    row.insert("metrics".into(), r.get("metrics").map(json_text).map(Value::String).unwrap_or(Value::Null));
    if keep_text {
        let text: Vec<&str> = assistant.iter().filter_map(|t| t.get("content").and_then(Value::as_str)).collect();
        row.insert("text".into(), if assistant.is_empty() { Value::Null } else { Value::String(text.join("\n\n")) });
    }
    row
}

/// Rows (one per split) of a `<checkpoint>_metrics.json`.
pub fn metrics_rows(r: Map<String, Value>) -> Vec<Map<String, Value>> {
    let mut out = Vec::new();
    for split in ["id", "ood", "total"] {
        let Some(Value::Object(s)) = r.get(split) else { continue };
        let mut row = Map::new();
        row.insert("checkpoint".into(), text_of(r.get("checkpoint")));
        row.insert("split".into(), Value::String(split.into()));
        for k in ["answer_accuracy", "avg_response_len", "avg_loss", "count"] {
            row.insert(k.into(), s.get(k).cloned().unwrap_or(Value::Null));
        }
        row.insert("pass_at_k".into(), pass_at_k(s.get("pass_at_k")));
        out.push(row);
    }
    out
}

/// Row of a `<checkpoint>_{id,ood}_generations.jsonl` line.
pub fn generation_row(r: Map<String, Value>, keep_text: bool) -> Map<String, Value> {
    let mut row = Map::new();
    row.insert("example_id".into(), text_of(r.get("__idx")));
    row.insert("op".into(), text_of(r.get("op")));
    row.insert("template".into(), text_of(r.get("template")));
    let em = match r.get("exact_match") {
        Some(Value::Number(n)) if n.as_i64() == Some(1) => Value::Bool(true),
        Some(Value::Number(n)) if n.as_i64() == Some(0) => Value::Bool(false),
        Some(other) => other.clone(),
        None => Value::Null,
    };
    row.insert("exact_match".into(), em);
    row.insert("response_tokens".into(), r.get("resp_tokens").cloned().unwrap_or(Value::Null));
    row.insert("gold_answer".into(), text_of(r.get("gold_answer")));
    row.insert("gen_answer".into(), text_of(r.get("gen_answer")));
    if keep_text {
        row.insert("text".into(), text_of(r.get("gen_solution_answer")));
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Map<String, Value> {
        serde_json::from_str::<Value>(s).unwrap().as_object().unwrap().clone()
    }

    #[test]
    fn shapes_tinker_results_and_trajectories() {
        let r = result_row(obj(
            r#"{"name":"gsm8k","score":0.5,"num_examples":4,"num_correct":2,"num_errors":1,"num_truncated":0,"metrics":{"a":1},"time_seconds":3.5,"pass_at_k":{"4":0.9,"1":0.5}}"#,
        ));
        assert_eq!(r["pass_at_k"], serde_json::json!([{"k":1,"value":0.5},{"k":4,"value":0.9}]));
        assert_eq!(r["benchmark"], "gsm8k");
        let t = trajectory_row(
            obj(
                r#"{"idx":3,"benchmark":"gsm8k","turns":[{"role":"user","content":"q","token_count":5},{"role":"assistant","content":"a","token_count":7}],"reward":1.0,"metrics":{},"logs":{},"error":null,"time_seconds":1.0}"#,
            ),
            true,
        );
        assert_eq!(t["example_id"], "3");
        assert_eq!(t["response_tokens"], 7);
        assert_eq!(t["correct"], true);
        assert_eq!(t["text"], "a");
    }

    #[test]
    fn shapes_checkpoint_metrics_and_generations() {
        let rows = metrics_rows(obj(
            r#"{"checkpoint":"checkpoint-100","id":{"answer_accuracy":0.5,"count":10,"pass_at_k":{"pass@1":0.5,"pass@2":0.6}},"total":{"answer_accuracy":0.4,"count":20}}"#,
        ));
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["split"], "id");
        assert_eq!(rows[0]["pass_at_k"][1]["k"], 2);
        let g = generation_row(
            obj(r#"{"op":3,"__idx":7,"prompt":"p","resp_tokens":12,"gen_solution_answer":"long","exact_match":1}"#),
            false,
        );
        assert_eq!(g["example_id"], "7");
        assert_eq!(g["op"], "3");
        assert_eq!(g["exact_match"], true);
        assert!(g.get("text").is_none());
    }
}
