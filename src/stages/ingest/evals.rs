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

use super::convert::{Target, json_text, whole_number};
use super::lenient;
use super::path::{self, Seg};
use crate::core::spec::Format;

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
        ("metrics".into(), Target::Json),
        ("extra".into(), Target::Json),
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
        ("metrics".into(), Target::Json),
        ("extra".into(), Target::Json),
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
        ("extra".into(), Target::Json),
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
        ("extra".into(), Target::Json),
    ];
    if keep_text {
        c.push(("text".into(), Target::Str));
    }
    c
}

/// The keys of a `result.json` that have columns of their own.
const RESULT_KEYS: [&str; 9] = [
    "name",
    "score",
    "num_examples",
    "num_correct",
    "num_errors",
    "num_truncated",
    "time_seconds",
    "pass_at_k",
    "metrics",
];
/// The keys of a trajectory line that have columns of their own (`turns` is summed up in
/// `num_turns`, `response_tokens` and, with `keep_text`, `text`).
const TRAJECTORY_KEYS: [&str; 8] =
    ["idx", "benchmark", "example_id", "reward", "error", "turns", "time_seconds", "metrics"];
/// The keys of a split of a `*_metrics.json` that have columns of their own.
const SPLIT_KEYS: [&str; 5] = ["answer_accuracy", "avg_response_len", "avg_loss", "count", "pass_at_k"];
/// The keys of a generation line that have columns of their own (`gen_solution_answer` is
/// `text`, kept only with `keep_text`).
const GENERATION_KEYS: [&str; 8] =
    ["__idx", "op", "template", "exact_match", "resp_tokens", "gold_answer", "gen_answer", "gen_solution_answer"];

/// `r`, a raw record of `format`, as a rejects file keeps it: without the texts that the
/// table leaves out too, so that a rejected record publishes no text that its row would not
/// have: without `keep_text`, a generation's `gen_solution_answer` and the `content` of every
/// turn of a trajectory; with it, the `content` of a trajectory's turns other than the
/// assistant's (the prompts, which the table never keeps). Records of other formats are given
/// back as they are.
pub fn without_texts(
    format: crate::core::spec::Format,
    mut r: Map<String, Value>,
    keep_text: bool,
) -> Map<String, Value> {
    use crate::core::spec::Format;
    match format {
        Format::EvalGenerations if !keep_text => {
            r.shift_remove("gen_solution_answer");
        }
        Format::LmEvalSamples => r = super::lmeval::without_texts(r, keep_text),
        Format::LightevalDetails => r = super::lighteval::without_texts(r, keep_text),
        Format::VerlGenerations => r = super::verl::without_texts(r, keep_text),
        Format::TinkerEvalTrajectories => match r.get_mut("turns") {
            Some(Value::Array(turns)) => {
                for t in turns.iter_mut() {
                    match t {
                        Value::Object(t)
                            if !(keep_text && t.get("role").and_then(Value::as_str) == Some("assistant")) =>
                        {
                            t.shift_remove("content");
                        }
                        // a turn that is no object may hold a prompt: its kind only
                        Value::String(_) | Value::Array(_) => *t = Value::String(format!("({} left out)", kind_of(t))),
                        _ => {}
                    }
                }
            }
            Some(t @ (Value::String(_) | Value::Object(_))) => *t = Value::String(format!("({} left out)", kind_of(t))),
            _ => {}
        },
        _ => {}
    }
    r
}

/// A value by its kind, without its text (`a string of 12 characters`, `an array of 2
/// items`), for messages and rejects that must not repeat a prompt; other values as
/// [`path::describe`] gives them.
fn kind_of(v: &Value) -> String {
    match v {
        Value::String(s) if lenient::special(s).is_none() => format!("a string of {} characters", s.chars().count()),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(o) => format!("an object of {} keys", o.len()),
        other => path::describe(other),
    }
}

/// Sets a trajectory's `correct` column from its converted `reward` column (reward > 0; null
/// for a null or NaN reward), so that the two agree whatever the conversion did to the reward
/// (a numeric string read as a number with `coerce_numeric_strings`).
pub fn correct_from_reward(columns: &[(String, Target)], arrays: &mut [arrow::array::ArrayRef]) {
    use arrow::array::{Array, AsArray, BooleanArray};
    let at = |name: &str| columns.iter().position(|(n, _)| n == name);
    let (Some(r), Some(c)) = (at("reward"), at("correct")) else { return };
    let Some(reward) = arrays[r].as_primitive_opt::<arrow::datatypes::Float64Type>() else { return };
    let correct: BooleanArray = reward.iter().map(|v| v.filter(|x| !x.is_nan()).map(|x| x > 0.0)).collect();
    if correct.len() == arrays[c].len() {
        arrays[c] = std::sync::Arc::new(correct);
    }
}

/// The keys of `r` that no column holds, as one object (the `extra` column, JSON text), or
/// null when there are none: nothing of a record is dropped unsaid.
fn extra(r: &Map<String, Value>, columns: &[&str]) -> Value {
    let rest: Map<String, Value> =
        r.iter().filter(|(k, _)| !columns.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    if rest.is_empty() { Value::Null } else { Value::Object(rest) }
}

/// A record that does not have its format's shape: (JSON path in the raw record, what was
/// expected and found), every one found.
pub type ShapeProblems = Vec<(String, String)>;

fn at(segs: &[&str]) -> String {
    path::render(&segs.iter().map(|s| Seg::Key(s.to_string())).collect::<Vec<_>>())
}

/// Records that the value at JSON path `path` is not what the format holds there.
pub(crate) fn problem(out: &mut ShapeProblems, path: String, expected: &str, found: &Value) {
    out.push((path, format!("expected {expected}, found {}", path::describe(found))));
}

/// The JSON path of `key` under the object at `base` (`$.results` + `gsm8k` → `$.results.gsm8k`).
pub(crate) fn key_path(base: &str, key: &str) -> String {
    format!("{base}{}", &path::render(&[Seg::Key(key.to_string())])[1..])
}

/// A part of a results document set aside on its own: a task's entry that is no object, or
/// a metric's value with its standard error.
#[derive(Debug, PartialEq)]
pub struct BadPart {
    /// JSON pointer of the part under the document (`/results/gsm8k/exact_match,strict-match`).
    pub pointer: String,
    /// Every problem found in the part.
    pub problems: ShapeProblems,
    /// The part as found, in the document's shape (`{"results": {"gsm8k": {…}}}`).
    pub record: Map<String, Value>,
}

/// The metric key a standard error's key goes with (`acc_stderr,none` → `acc,none`,
/// `acc_stderr` → `acc`), as lm-eval and lighteval name them; `None` for a key of no standard
/// error.
pub(crate) fn metric_of_stderr(key: &str) -> Option<String> {
    match key.split_once(',') {
        Some((m, f)) => m.strip_suffix("_stderr").map(|m| format!("{m},{f}")),
        None => key.strip_suffix("_stderr").map(str::to_string),
    }
}

/// A results document (lm-eval's `results` and `groups`, lighteval's `results`) whose
/// problems all lie inside task entries, split in two: the document without the parts that
/// hold them, and those parts, so that one bad value sets aside its own metric (a row), not
/// the document's every result. `None` when a problem lies elsewhere (the document is no
/// results document, or has no task entries): the document is then set aside whole.
pub fn split_results(
    obj: &Map<String, Value>,
    problems: &ShapeProblems,
    sections: &[&str],
) -> Option<(Map<String, Value>, Vec<BadPart>)> {
    let mut rest = obj.clone();
    let mut parts = Vec::new();
    let mut placed = 0;
    for section in sections {
        let Some(tasks) = obj.get(*section).and_then(Value::as_object) else { continue };
        let base = key_path("$", section);
        for (task, entry) in tasks {
            let task_at = key_path(&base, task);
            let task_pointer = format!("/{}/{}", path::pointer_token(section), path::pointer_token(task));
            let whole: ShapeProblems = problems.iter().filter(|(p, _)| *p == task_at).cloned().collect();
            let Value::Object(entry) = entry else {
                if !whole.is_empty() {
                    placed += whole.len();
                    let record = results_part(obj, section, task, "");
                    parts.push(BadPart { pointer: task_pointer, problems: whole, record });
                    rest.get_mut(*section).and_then(Value::as_object_mut).map(|t| t.shift_remove(task));
                }
                continue;
            };
            // the problems of each key of the entry, a standard error's with its metric's
            let mut by_metric: Vec<(String, ShapeProblems)> = Vec::new();
            for key in entry.keys() {
                let at = key_path(&task_at, key);
                let found: ShapeProblems = problems.iter().filter(|(p, _)| *p == at).cloned().collect();
                if found.is_empty() {
                    continue;
                }
                placed += found.len();
                let metric = metric_of_stderr(key).filter(|m| entry.contains_key(m)).unwrap_or_else(|| key.clone());
                match by_metric.iter_mut().find(|(m, _)| *m == metric) {
                    Some((_, p)) => p.extend(found),
                    None => by_metric.push((metric, found)),
                }
            }
            for (metric, found) in by_metric {
                let record = results_part(obj, section, task, &metric);
                if let (Some(e), Some(Value::Object(gone))) = (
                    rest.get_mut(*section).and_then(|t| t.get_mut(task)).and_then(Value::as_object_mut),
                    record.get(*section).and_then(|t| t.get(task)),
                ) {
                    for k in gone.keys() {
                        e.shift_remove(k);
                    }
                }
                parts.push(BadPart {
                    pointer: format!("{task_pointer}/{}", path::pointer_token(&metric)),
                    problems: found,
                    record,
                });
            }
        }
    }
    (placed == problems.len() && !parts.is_empty()).then_some((rest, parts))
}

/// A number, a non-finite token that reads as a float (`NaN`, `Infinity`) or null.
pub(crate) fn float_like(v: &Value) -> bool {
    match v {
        Value::Null | Value::Number(_) => true,
        Value::String(s) => lenient::special(s).is_some_and(|s| s.as_f64().is_some()),
        _ => false,
    }
}

/// The part of a results document (lm-eval's, lighteval's) that one row comes from, for its
/// reject: its value (`section`/`task`/`key`) with its standard error, the document's entries
/// for `task` that the row's columns read (`versions`, `n-shot`, `n-samples`,
/// `higher_is_better`, `task_hashes`, `summary_tasks`), and the values that name the model
/// and the run (`model_name`, `date`; of `config`, `model` and `model_args`; of
/// `config_general`, `model_name`, `lighteval_sha`, `start_time`, `end_time`). Not the
/// document whole: a problem shared by every row (a `model_name` that is no text) would
/// otherwise copy the document into each row's reject.
pub fn results_part(doc: &Map<String, Value>, section: &str, task: &str, key: &str) -> Map<String, Value> {
    const PER_TASK: [&str; 6] = ["versions", "n-shot", "n-samples", "higher_is_better", "task_hashes", "summary_tasks"];
    let pick = |o: &Map<String, Value>, keys: &[&str]| -> Map<String, Value> {
        keys.iter().filter_map(|k| Some((k.to_string(), o.get(*k)?.clone()))).collect()
    };
    let mut part = Map::new();
    for (k, v) in doc {
        match (k.as_str(), v) {
            (s, Value::Object(o)) if s == section => {
                let values = match o.get(task) {
                    Some(Value::Object(entry)) => Value::Object(
                        entry
                            .iter()
                            .filter(|(e, _)| *e == key || metric_of_stderr(e).as_deref() == Some(key))
                            .map(|(e, v)| (e.clone(), v.clone()))
                            .collect(),
                    ),
                    // a task's entry that is no object is the part whole
                    Some(other) => other.clone(),
                    None => continue,
                };
                part.insert(k.clone(), Value::Object(Map::from_iter([(task.to_string(), values)])));
            }
            ("config", Value::Object(o)) => {
                part.insert(k.clone(), Value::Object(pick(o, &["model", "model_args"])));
            }
            ("config_general", Value::Object(o)) => {
                let keys = ["model_name", "lighteval_sha", "start_time", "end_time"];
                part.insert(k.clone(), Value::Object(pick(o, &keys)));
            }
            (s, Value::Object(o)) if PER_TASK.contains(&s) => {
                if let Some(t) = o.get(task) {
                    part.insert(k.clone(), Value::Object(Map::from_iter([(task.to_string(), t.clone())])));
                }
            }
            ("model_name" | "date", v) => {
                part.insert(k.clone(), v.clone());
            }
            _ => {}
        }
    }
    part
}

/// What a source's options let through a results document's number checks, for the column's
/// conversion to read and count: numbers written as text (`coerce_numeric_strings`), and
/// non-finite floats written as text (`coerce_nonfinite_strings`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Coerce {
    /// `"0.6011"`.
    pub numbers: bool,
    /// `"NaN"`, `"Infinity"`, `"-inf"`.
    pub nonfinite: bool,
}

/// The words a results document's problem names `option` by, after what it found (a number or
/// a non-finite float written as text: `` (`option = true` in the source reads it``), by which
/// `runpack init` knows the option to write.
pub fn option_reads_it(option: &str) -> String {
    format!(" (`{option} = true` in the source reads it")
}

/// Checks a results document's number (a metric's value, its standard error): a number, a
/// non-finite token or null, or a string `coerce` lets through. Anything else is a problem at
/// `path` (`expected` what), and a string an option would read names the option.
pub(crate) fn number_ok(out: &mut ShapeProblems, path: String, v: &Value, coerce: Coerce, expected: &str) -> bool {
    let numeric_text = matches!(v, Value::String(s) if s.parse::<f64>().is_ok_and(f64::is_finite));
    let nonfinite_text = matches!(v, Value::String(s) if super::convert::nonfinite_string(s).is_some());
    if float_like(v) || (coerce.numbers && numeric_text) || (coerce.nonfinite && nonfinite_text) {
        return true;
    }
    let hint = if numeric_text {
        format!("{} as the number)", option_reads_it("coerce_numeric_strings"))
    } else if nonfinite_text {
        format!("{} as the float)", option_reads_it("coerce_nonfinite_strings"))
    } else {
        String::new()
    };
    out.push((path, format!("expected {expected}, found {}{hint}", path::describe(v))));
    false
}

/// A JSON number, a non-finite token or null (what a float column takes).
fn is_float_like(v: &Value) -> bool {
    match v {
        Value::Null | Value::Number(_) => true,
        Value::String(s) => lenient::special(s).is_some(),
        _ => false,
    }
}

/// The text of an identifier: a string as it is, an integer (of any size, or a float holding
/// one exactly, `7.0`) as its digits; `Err` for anything else (a fraction, a boolean, an
/// object), `Ok(None)` for null or nothing.
fn id_text(v: Option<&Value>) -> Result<Option<String>, ()> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => match lenient::special(s) {
            None => Ok(Some(s.clone())),
            Some(lenient::Special::BigInt(d)) => Ok(Some(d.to_string())),
            Some(_) => Err(()),
        },
        Some(Value::Number(n)) => {
            match n.as_u64().map(|u| u.to_string()).or_else(|| whole_number(v?).map(|i| i.to_string())) {
                Some(t) => Ok(Some(t)),
                None => Err(()),
            }
        }
        Some(_) => Err(()),
    }
}

/// `{"pass@1": 0.5, "2": 0.7}` (at `base` in the record) → `[{k: 1, value: 0.5}, {k: 2,
/// value: 0.7}]`, sorted by k. A key that names no positive k, a k named twice (`"1"` and
/// `"pass@1"`) and a value that is not a number are problems, as is anything but an object.
fn pass_at_k(v: Option<&Value>, base: &[&str], problems: &mut ShapeProblems) -> Value {
    let m = match v {
        None | Some(Value::Null) => return Value::Null,
        Some(Value::Object(m)) => m,
        Some(other) => {
            problem(problems, at(base), "an object of pass@k values (`{\"pass@1\": 0.5, …}`)", other);
            return Value::Null;
        }
    };
    let mut pairs: std::collections::BTreeMap<i64, Value> = std::collections::BTreeMap::new();
    // each k with the key that named it first, whatever its value: a k named twice is a
    // problem of its own beside a bad value
    let mut named: std::collections::BTreeMap<i64, &str> = std::collections::BTreeMap::new();
    for (key, val) in m {
        let mut segs = base.to_vec();
        segs.push(key);
        let digits = key.strip_prefix("pass@").unwrap_or(key);
        let k = digits.bytes().all(|b| b.is_ascii_digit()).then(|| digits.parse::<i64>().ok()).flatten();
        let Some(k) = k.filter(|k| *k > 0) else {
            let found = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && k.is_none() {
                " (this k is beyond 64 bits)"
            } else {
                ""
            };
            problems.push((at(&segs), format!("expected a key `k` or `pass@k` with k a positive integer{found}")));
            continue;
        };
        if let Some(first) = named.get(&k) {
            problems.push((at(&segs), format!("k = {k} is given twice (also as key {first:?})")));
            continue;
        }
        named.insert(k, key);
        if !is_float_like(val) {
            problem(problems, at(&segs), "a number", val);
            continue;
        }
        // pass@k is the chance that one of k samples is right: an infinity is none (a NaN,
        // a value not computed, as some evaluators write it with fewer than k samples, is kept)
        let x = match val {
            Value::String(t) => lenient::special(t).and_then(|sp| sp.as_f64()),
            v => v.as_f64(),
        };
        if x.is_some_and(|x| !x.is_nan() && !(0.0..=1.0).contains(&x)) {
            problems.push((at(&segs), format!("expected a pass@k value from 0 to 1, found {}", path::describe(val))));
            continue;
        }
        pairs.insert(k, val.clone());
    }
    Value::Array(pairs.into_iter().map(|(k, v)| serde_json::json!({"k": k, "value": v})).collect())
}

/// A problem for each of `keys` of `r` that holds a number below 0 (a count of examples;
/// other kinds of value are the conversion's to judge), at its path under `base`.
fn counts(r: &Map<String, Value>, keys: &[&str], base: &[&str], problems: &mut ShapeProblems) {
    for key in keys {
        if let Some(v) = r.get(*key).filter(|v| v.as_f64().is_some_and(|x| x < 0.0)) {
            let mut segs = base.to_vec();
            segs.push(key);
            problem(problems, at(&segs), "a count (a whole number of at least 0)", v);
        }
    }
}

/// A text column's value that must be a scalar (an id, an answer, a template): strings as
/// they are, numbers as their text (integers of any size as their digits, non-finite ones as
/// `NaN`/`Infinity`/`-Infinity`), booleans as `true`/`false`; an object or an array is a
/// problem at `path`.
fn scalar_text(v: Option<&Value>, path: &[&str], problems: &mut ShapeProblems) -> Value {
    match v {
        Some(Value::String(s)) => match lenient::special(s) {
            Some(sp) => Value::String(sp.token().to_string()),
            None => Value::String(s.clone()),
        },
        Some(v @ (Value::Array(_) | Value::Object(_))) => {
            problem(problems, at(path), "a string or a number", v);
            Value::Null
        }
        other => text_of(other),
    }
}

/// A text column's value that must be a string or null (an error message, a generation):
/// anything else, a non-finite token included, is a problem at `path`.
fn string_or_null(v: Option<&Value>, path: &[&str], problems: &mut ShapeProblems) -> Value {
    match v {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) if lenient::special(s).is_none() => Value::String(s.clone()),
        Some(other) => {
            problem(problems, at(path), "a string or null", other);
            Value::Null
        }
    }
}

/// A text column's value: strings as they are, integers as their digits, other numbers as
/// serde_json writes them (`0.1`, `100000.0`), booleans as `true`/`false`, objects and
/// arrays as JSON text.
fn text_of(v: Option<&Value>) -> Value {
    match v {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(other) => Value::String(json_text(other)),
    }
}

/// Row of a `result.json`.
///
/// Errors: the record is no `BenchmarkResult` (neither `name` nor `score`), `name` is not a
/// string, or `pass_at_k` is not an object of numbers keyed by k.
pub fn result_row(r: &Map<String, Value>) -> Result<Map<String, Value>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    if !r.contains_key("name") && !r.contains_key("score") {
        let keys: Vec<&str> = r.keys().map(String::as_str).take(5).collect();
        problems.push((
            "$".into(),
            format!(
                "expected a benchmark result (`name`, `score`, `num_examples`, …), found an object with keys {keys:?} \
                 (a run's summary.json maps benchmarks to results: read it as a json source)"
            ),
        ));
        return Err(problems);
    }
    let name = r.get("name").cloned().unwrap_or(Value::Null);
    if !matches!(name, Value::Null | Value::String(_)) {
        problem(&mut problems, "$.name".into(), "a string", &name);
    }
    let mut row = Map::new();
    row.insert("benchmark".into(), name);
    for k in ["score", "num_examples", "num_correct", "num_errors", "num_truncated", "time_seconds"] {
        row.insert(k.into(), r.get(k).cloned().unwrap_or(Value::Null));
    }
    counts(r, &["num_examples", "num_correct", "num_errors", "num_truncated"], &[], &mut problems);
    if let (Some(correct), Some(examples)) =
        (r.get("num_correct").and_then(Value::as_f64), r.get("num_examples").and_then(Value::as_f64))
        && correct > examples
    {
        problems.push((
            "$.num_correct".into(),
            format!("expected at most num_examples ({examples}) correct examples, found {correct}"),
        ));
    }
    row.insert("pass_at_k".into(), pass_at_k(r.get("pass_at_k"), &["pass_at_k"], &mut problems));
    let metrics = r.get("metrics").cloned().unwrap_or(Value::Null);
    match &metrics {
        Value::Null => {}
        Value::Object(m) => {
            for (k, v) in m.iter().filter(|(_, v)| !is_float_like(v)) {
                problem(&mut problems, at(&["metrics", k]), "a number", v);
            }
        }
        other => problem(&mut problems, "$.metrics".into(), "an object of metric values", other),
    }
    row.insert("metrics".into(), metrics);
    row.insert("extra".into(), extra(r, &RESULT_KEYS));
    if problems.is_empty() { Ok(row) } else { Err(problems) }
}

/// The roles of a trajectory's turns (tinker-cookbook's `Message.role`).
pub const TURN_ROLES: [&str; 4] = ["user", "assistant", "environment", "grader"];

const ROLE_EXPECTED: &str = "a role: \"user\", \"assistant\", \"environment\" or \"grader\"";

/// Row of a `trajectories.jsonl` line.
///
/// Errors: the record has neither `idx` nor `example_id` (no trajectory); a turn's `role` is
/// not one of [`TURN_ROLES`] (missing included); `turns` is not a list of objects; a turn's
/// `token_count` is not an integer ≥ 0 (or null), or (with `keep_text`) an assistant turn's `content` not a
/// string; `example_id` is neither a string nor an integer; `error` is neither a string nor
/// null.
pub fn trajectory_row(r: &Map<String, Value>, keep_text: bool) -> Result<Map<String, Value>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    if [r.get("idx"), r.get("example_id")].iter().all(|v| v.is_none_or(Value::is_null)) {
        let keys: Vec<&str> = r.keys().map(String::as_str).take(5).collect();
        problems.push((
            "$".into(),
            format!(
                "expected a trajectory (`idx` or `example_id`, `turns`, `reward`, …), found an object with keys {keys:?}"
            ),
        ));
        return Err(problems);
    }
    let error = string_or_null(r.get("error"), &["error"], &mut problems);
    let turns: &[Value] = match r.get("turns") {
        None | Some(Value::Null) => &[],
        Some(Value::Array(a)) => a,
        Some(other) => {
            // by its kind only: a text here may be a prompt, which no message repeats
            problems.push(("$.turns".into(), format!("expected a list of turns, found {}", kind_of(other))));
            &[]
        }
    };
    let mut assistant: Vec<&Map<String, Value>> = Vec::new();
    let mut tokens: Option<i64> = Some(0);
    let mut text: Vec<&str> = Vec::new();
    for (i, t) in turns.iter().enumerate() {
        let turn = format!("$.turns[{i}]");
        let Value::Object(t) = t else {
            problems.push((
                turn,
                format!("expected a turn object (`role`, `content`, `token_count`), found {}", kind_of(t)),
            ));
            continue;
        };
        // a role spelled otherwise ("Assistant", "model") would silently lose the turn's
        // tokens and text, so only the format's four are taken
        let count_ok = |v: &Value| v.is_null() || whole_number(v).is_some_and(|n| n >= 0);
        match t.get("role") {
            Some(Value::String(role)) if role == "assistant" => {}
            Some(Value::String(role)) if TURN_ROLES.contains(&role.as_str()) => {
                // another role's count is not summed, but it is checked as the assistant's is
                if let Some(v) = t.get("token_count").filter(|v| !count_ok(v)) {
                    problem(&mut problems, format!("{turn}.token_count"), "a count of tokens (an integer ≥ 0)", v);
                }
                continue;
            }
            other => {
                problem(&mut problems, format!("{turn}.role"), ROLE_EXPECTED, other.unwrap_or(&Value::Null));
                continue;
            }
        }
        assistant.push(t);
        match t.get("token_count") {
            None | Some(Value::Null) => tokens = None,
            Some(v) => match whole_number(v).filter(|n| *n >= 0) {
                Some(n) => match tokens.map(|sum| sum.checked_add(n)) {
                    Some(None) => problems.push((
                        format!("{turn}.token_count"),
                        "the assistant turns' token counts add up beyond 9223372036854775807".into(),
                    )),
                    sum => tokens = sum.flatten(),
                },
                None => problem(&mut problems, format!("{turn}.token_count"), "a count of tokens (an integer ≥ 0)", v),
            },
        }
        if keep_text {
            match t.get("content") {
                None | Some(Value::Null) => {}
                Some(Value::String(c)) => text.push(c),
                Some(other) => problem(&mut problems, format!("{turn}.content"), "a string", other),
            }
        }
    }
    // older files have no example_id: the text of idx stands for it
    let id = match id_text(r.get("example_id")) {
        Ok(Some(t)) => Value::String(t),
        Ok(None) => id_text(r.get("idx")).ok().flatten().map(Value::String).unwrap_or(Value::Null),
        Err(()) => {
            problem(&mut problems, "$.example_id".into(), "a string or an integer", &r["example_id"]);
            Value::Null
        }
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut row = Map::new();
    row.insert("idx".into(), r.get("idx").cloned().unwrap_or(Value::Null));
    row.insert("benchmark".into(), r.get("benchmark").cloned().unwrap_or(Value::Null));
    row.insert("example_id".into(), id);
    let reward = r.get("reward").cloned().unwrap_or(Value::Null);
    row.insert("reward".into(), reward);
    // set from the converted reward once the batch is converted (correct_from_reward)
    row.insert("correct".into(), Value::Null);
    row.insert("error".into(), error);
    // a line without turns says nothing of them: not zero turns
    let has_turns = matches!(r.get("turns"), Some(Value::Array(_)));
    row.insert("num_turns".into(), if has_turns { Value::from(turns.len() as i64) } else { Value::Null });
    row.insert("response_tokens".into(), tokens.filter(|_| has_turns).map(Value::from).unwrap_or(Value::Null));
    row.insert("time_seconds".into(), r.get("time_seconds").cloned().unwrap_or(Value::Null));
    row.insert("metrics".into(), r.get("metrics").cloned().unwrap_or(Value::Null));
    row.insert("extra".into(), extra(r, &TRAJECTORY_KEYS));
    if keep_text {
        // no assistant turn with content: no text, which differs from an empty one
        row.insert("text".into(), if text.is_empty() { Value::Null } else { Value::String(text.join("\n\n")) });
    }
    Ok(row)
}

/// The splits of a `<checkpoint>_metrics.json`, in row order.
const SPLITS: [&str; 3] = ["id", "ood", "total"];

/// The split (`id`, `ood`, `total`) a problem of [`metrics_rows`] lies in, from its JSON path
/// (`$.ood.pass_at_k.pass@0` is in `ood`); `None` for a problem of the whole document.
pub fn metrics_split_of(path: &str) -> Option<&'static str> {
    let rest = path.strip_prefix("$.")?;
    SPLITS.into_iter().find(|s| rest.strip_prefix(s).is_some_and(|r| r.is_empty() || r.starts_with(['.', '['])))
}

/// Rows (one per split) of a `<checkpoint>_metrics.json`.
///
/// Errors: a key other than `checkpoint`, the splits and `per_template` (kept in the `extra`
/// of the `total` row, or of the last split's), a split that is not an object, a record with
/// no split, or a split's `pass_at_k` that is not an object of numbers keyed by k.
pub fn metrics_rows(r: &Map<String, Value>) -> Result<Vec<Map<String, Value>>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    for (k, v) in r {
        if k != "checkpoint" && k != "per_template" && !SPLITS.contains(&k.as_str()) {
            problems.push((
                at(&[k]),
                format!(
                    "unknown key, holding {} (expected `checkpoint`, `id`, `ood`, `total`, `per_template`)",
                    path::describe(v)
                ),
            ));
        }
    }
    let checkpoint = scalar_text(r.get("checkpoint"), &["checkpoint"], &mut problems);
    let mut out = Vec::new();
    for split in SPLITS {
        let s = match r.get(split) {
            None | Some(Value::Null) => continue,
            Some(Value::Object(s)) => s,
            Some(other) => {
                problem(&mut problems, at(&[split]), "an object of the split's metrics", other);
                continue;
            }
        };
        let mut row = Map::new();
        row.insert("checkpoint".into(), checkpoint.clone());
        row.insert("split".into(), Value::String(split.into()));
        for k in ["answer_accuracy", "avg_response_len", "avg_loss", "count"] {
            row.insert(k.into(), s.get(k).cloned().unwrap_or(Value::Null));
        }
        counts(s, &["count"], &[split], &mut problems);
        row.insert("pass_at_k".into(), pass_at_k(s.get("pass_at_k"), &[split, "pass_at_k"], &mut problems));
        row.insert("extra".into(), extra(s, &SPLIT_KEYS));
        out.push(row);
    }
    if out.is_empty() && problems.is_empty() {
        problems.push(("$".into(), "no split: expected at least one of `id`, `ood`, `total`".into()));
    }
    // the per-template results describe the whole checkpoint: kept in the `extra` of its
    // `total` row (or of its last split's)
    if let Some(t) = r.get("per_template").filter(|t| !t.is_null())
        && let Some(i) = out.iter().position(|row| row["split"] == "total").or(out.len().checked_sub(1))
    {
        let row = &mut out[i];
        let mut extra = match row.remove("extra") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        if extra.get("per_template").is_some_and(|v| !v.is_null()) {
            // the split has its own: one place cannot hold both
            let split = row["split"].as_str().unwrap_or_default().to_string();
            problems.push((
                at(&["per_template"]),
                format!(
                    "the checkpoint's per_template goes into the extra of its `{split}` row, which holds \
                     `{split}.per_template` already; keep one of them"
                ),
            ));
        }
        extra.insert("per_template".into(), t.clone());
        row.insert("extra".into(), Value::Object(extra));
    }
    if problems.is_empty() { Ok(out) } else { Err(problems) }
}

/// Whether the `per_template` in the `extra` of the row of `split` (see [`metrics_rows`]) is
/// the checkpoint's, from the top of the `raw` document, rather than the split's own.
pub(crate) fn per_template_from_top(raw: &Map<String, Value>, split: &str) -> bool {
    let present = |v: Option<&Value>| v.is_some_and(|v| !v.is_null());
    present(raw.get("per_template")) && !present(raw.get(split).and_then(|s| s.get("per_template")))
}

/// Row of a `<checkpoint>_{id,ood}_generations.jsonl` line.
///
/// Errors: `__idx` missing or not an integer (or string), `op` neither an integer nor a
/// string, `resp_tokens` not a count of tokens, `exact_match` other than 0, 1, true or false, (with
/// `keep_text`) `gen_solution_answer` neither a string nor null.
pub fn generation_row(r: &Map<String, Value>, keep_text: bool) -> Result<Map<String, Value>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let mut id_of = |key: &str, required: bool| match id_text(r.get(key)) {
        Ok(Some(t)) => Value::String(t),
        Ok(None) => {
            if required {
                problems.push((at(&[key]), "missing: every generation names its prompt's index".into()));
            }
            Value::Null
        }
        Err(()) => {
            problem(&mut problems, at(&[key]), "an integer or a string", &r[key]);
            Value::Null
        }
    };
    let example_id = id_of("__idx", true);
    let op = id_of("op", false);
    let tokens = match r.get("resp_tokens") {
        None | Some(Value::Null) => Value::Null,
        Some(v) => match whole_number(v).filter(|n| *n >= 0) {
            Some(n) => Value::from(n),
            None => {
                problem(&mut problems, "$.resp_tokens".into(), "a count of tokens (an integer ≥ 0)", v);
                Value::Null
            }
        },
    };
    let em = match r.get("exact_match") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::Bool(b)) => Value::Bool(*b),
        Some(v) => match whole_number(v) {
            Some(1) => Value::Bool(true),
            Some(0) => Value::Bool(false),
            _ => {
                problem(&mut problems, "$.exact_match".into(), "0 or 1 (or true or false)", v);
                Value::Null
            }
        },
    };
    let template = scalar_text(r.get("template"), &["template"], &mut problems);
    let gold = scalar_text(r.get("gold_answer"), &["gold_answer"], &mut problems);
    let generated = scalar_text(r.get("gen_answer"), &["gen_answer"], &mut problems);
    let text = keep_text.then(|| string_or_null(r.get("gen_solution_answer"), &["gen_solution_answer"], &mut problems));
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut row = Map::new();
    row.insert("example_id".into(), example_id);
    row.insert("op".into(), op);
    row.insert("template".into(), template);
    row.insert("exact_match".into(), em);
    row.insert("response_tokens".into(), tokens);
    row.insert("gold_answer".into(), gold);
    row.insert("gen_answer".into(), generated);
    row.insert("extra".into(), extra(r, &GENERATION_KEYS));
    if let Some(text) = text {
        row.insert("text".into(), text);
    }
    Ok(row)
}

/// The raw path of the `i`-th entry of a row's `pass_at_k` list (entries are sorted by k):
/// `["pass_at_k", "pass@7"]`, under the split's key for a checkpoint's metrics (`split`).
pub fn pass_at_k_raw_key(raw: &Map<String, Value>, split: Option<&str>, i: usize) -> Option<Vec<String>> {
    let base = match split {
        Some(s) => raw.get(s)?,
        None => &Value::Object(raw.clone()),
    };
    let m = base.get("pass_at_k")?.as_object()?;
    let mut ks: Vec<(i64, &String)> = m
        .keys()
        .filter_map(|key| {
            let digits = key.strip_prefix("pass@").unwrap_or(key);
            let k = digits.bytes().all(|b| b.is_ascii_digit()).then(|| digits.parse::<i64>().ok()).flatten()?;
            (k > 0).then_some((k, key))
        })
        .collect();
    ks.sort();
    let key = ks.get(i)?.1.clone();
    Some(split.map(String::from).into_iter().chain(["pass_at_k".to_string(), key]).collect())
}

/// Where column `column` of a shaped `row` (read from the `raw` record) stands in the raw
/// record, as keys from its root, for a place `rest` inside the column (`.per_template.A`):
/// `benchmark` of a result is its `name`, `count` of a checkpoint's split row is
/// `<split>.count`, `extra` holds keys of the record (of its split's object, for a metrics
/// document, but for the checkpoint's `per_template` at the top), …; `None` when the column
/// keeps its name.
pub fn raw_column(
    format: Format,
    raw: Option<&Map<String, Value>>,
    row: &Map<String, Value>,
    column: &str,
    rest: &str,
) -> Option<Vec<String>> {
    let renamed = match (format, column) {
        (Format::EvalMetrics, "extra") => {
            let split = row.get("split")?.as_str()?;
            let member = rest.strip_prefix('.').and_then(|r| r.split(['.', '[']).next());
            let top = member == Some("per_template") && raw.is_some_and(|raw| per_template_from_top(raw, split));
            return Some(if top { Vec::new() } else { vec![split.to_string()] });
        }
        (Format::TinkerEvalResult | Format::TinkerEvalTrajectories | Format::EvalGenerations, "extra") => {
            return Some(Vec::new());
        }
        (Format::TinkerEvalResult, "benchmark") => "name",
        (Format::EvalMetrics, "answer_accuracy" | "avg_response_len" | "avg_loss" | "count") => {
            return Some(vec![row.get("split")?.as_str()?.to_string(), column.to_string()]);
        }
        (Format::EvalGenerations, "example_id") => "__idx",
        (Format::EvalGenerations, "response_tokens") => "resp_tokens",
        (Format::EvalGenerations, "text") => "gen_solution_answer",
        _ => return None,
    };
    Some(vec![renamed.to_string()])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Map<String, Value> {
        serde_json::from_str::<Value>(s).unwrap().as_object().unwrap().clone()
    }

    #[test]
    fn a_results_document_is_split_where_its_problems_lie() {
        let doc =
            obj(r#"{"results": {"a": 3, "b/c": {"em": "x", "em_stderr": 0.1, "f1": 0.5}, "d": {"acc,none": 0.5}},
                "config_general": {}}"#);
        let problems: ShapeProblems = vec![
            ("$.results.a".into(), "expected an object".into()),
            ("$.results[\"b/c\"].em".into(), "expected a number".into()),
        ];
        let (rest, parts) = split_results(&doc, &problems, &["results"]).unwrap();
        assert_eq!(
            Value::Object(rest),
            serde_json::json!({"results": {"b/c": {"f1": 0.5}, "d": {"acc,none": 0.5}}, "config_general": {}})
        );
        let pointers: Vec<&str> = parts.iter().map(|p| p.pointer.as_str()).collect();
        assert_eq!(pointers, ["/results/a", "/results/b~1c/em"]);
        assert_eq!(
            Value::Object(parts[1].record.clone()),
            serde_json::json!({"results": {"b/c": {"em": "x", "em_stderr": 0.1}}, "config_general": {}})
        );
        // a standard error's problem goes with its metric
        let problems: ShapeProblems = vec![("$.results.d[\"acc_stderr,none\"]".into(), "expected a number".into())];
        let doc = obj(r#"{"results": {"d": {"acc,none": 0.5, "acc_stderr,none": "x"}}}"#);
        let (_, parts) = split_results(&doc, &problems, &["results"]).unwrap();
        assert_eq!(parts[0].pointer, "/results/d/acc,none");
        // a problem outside the task entries: no split
        let problems: ShapeProblems = vec![("$.results".into(), "expected lm-eval results".into())];
        assert_eq!(split_results(&doc, &problems, &["results"]), None);
        assert_eq!(split_results(&doc, &ShapeProblems::new(), &["results"]), None);
    }

    #[test]
    fn a_trajectory_without_assistant_content_has_no_text() {
        let text = |line: &str| trajectory_row(&obj(line), true).unwrap()["text"].clone();
        assert_eq!(text(r#"{"idx":0,"reward":1,"turns":[{"role":"assistant","token_count":3}]}"#), Value::Null);
        assert_eq!(text(r#"{"idx":0,"reward":1,"turns":[{"role":"assistant","content":""}]}"#), "");
        assert_eq!(text(r#"{"idx":0,"reward":1,"turns":[{"role":"assistant","content":"4"}]}"#), "4");
    }

    #[test]
    fn shapes_tinker_results_and_trajectories() {
        let r = result_row(&obj(
            r#"{"name":"gsm8k","score":0.5,"num_examples":4,"num_correct":2,"num_errors":1,"num_truncated":0,"metrics":{"a":1},"time_seconds":3.5,"pass_at_k":{"4":0.9,"1":0.5}}"#,
        ))
        .unwrap();
        assert_eq!(r["pass_at_k"], serde_json::json!([{"k":1,"value":0.5},{"k":4,"value":0.9}]));
        assert_eq!(r["benchmark"], "gsm8k");
        let t = trajectory_row(
            &obj(
                r#"{"idx":3,"benchmark":"gsm8k","turns":[{"role":"user","content":"q","token_count":5},{"role":"assistant","content":"a","token_count":7}],"reward":1.0,"metrics":{},"logs":{},"error":null,"time_seconds":1.0}"#,
            ),
            true,
        )
        .unwrap();
        assert_eq!(t["example_id"], "3");
        assert_eq!(t["response_tokens"], 7);
        assert_eq!(t["text"], "a");
    }

    #[test]
    fn shapes_checkpoint_metrics_and_generations() {
        let rows = metrics_rows(&obj(
            r#"{"checkpoint":"checkpoint-100","id":{"answer_accuracy":0.5,"count":10,"pass_at_k":{"pass@1":0.5,"pass@2":0.6}},"total":{"answer_accuracy":0.4,"count":20}}"#,
        ))
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["split"], "id");
        assert_eq!(rows[0]["pass_at_k"][1]["k"], 2);
        let g = generation_row(
            &obj(r#"{"op":3,"__idx":7,"prompt":"p","resp_tokens":12,"gen_solution_answer":"long","exact_match":1}"#),
            false,
        )
        .unwrap();
        assert_eq!(g["example_id"], "7");
        assert_eq!(g["op"], "3");
        assert_eq!(g["exact_match"], true);
        assert!(g.get("text").is_none());
        // keys without a column of their own are kept in `extra`; the generation text is not
        assert_eq!(g["extra"], serde_json::json!({"prompt": "p"}));
        let rows = metrics_rows(&obj(
            r#"{"checkpoint":"c","id":{"answer_accuracy":0.5,"per_op_accuracy":{"3":0.5},"bogus":[1]}}"#,
        ))
        .unwrap();
        assert_eq!(rows[0]["extra"], serde_json::json!({"per_op_accuracy": {"3": 0.5}, "bogus": [1]}));
        let t = trajectory_row(&obj(r#"{"idx":1,"turns":[],"logs":{"expected":"4","extracted":"5"}}"#), false).unwrap();
        assert_eq!(t["extra"], serde_json::json!({"logs": {"expected": "4", "extracted": "5"}}));
        assert_eq!((&t["num_turns"], &t["response_tokens"]), (&Value::from(0), &Value::from(0)));
        // no turns at all: unknown, not zero
        let t = trajectory_row(&obj(r#"{"idx":2,"reward":0.0}"#), false).unwrap();
        assert_eq!((&t["num_turns"], &t["response_tokens"]), (&Value::Null, &Value::Null));
        let r = result_row(&obj(r#"{"name":"gsm8k","score":0.5}"#)).unwrap();
        assert_eq!(r["extra"], Value::Null);
    }

    fn problems<T>(r: Result<T, ShapeProblems>) -> Vec<String> {
        r.err().expect("problems").into_iter().map(|(p, m)| format!("{p}: {m}")).collect()
    }

    #[test]
    fn records_without_their_shape_are_named_by_raw_path() {
        assert_eq!(
            problems(trajectory_row(
                &obj(
                    r#"{"idx":4,"example_id":1.5,"turns":[{"role":"assistant","content":["p"],"token_count":"7"},3,{"role":1}]}"#
                ),
                true
            )),
            vec![
                "$.turns[0].token_count: expected a count of tokens (an integer ≥ 0), found string \"7\"",
                "$.turns[0].content: expected a string, found an array",
                "$.turns[1]: expected a turn object (`role`, `content`, `token_count`), found number 3",
                "$.turns[2].role: expected a role: \"user\", \"assistant\", \"environment\" or \"grader\", found number 1",
                "$.example_id: expected a string or an integer, found number 1.5",
            ]
        );
        // a role outside the format's four, or none, is named rather than the turn dropped
        assert_eq!(
            problems(trajectory_row(
                &obj(
                    r#"{"idx":4,"turns":[{"role":"Assistant","content":"4","token_count":7},{"content":"x"},{"role":"grader"}]}"#
                ),
                true
            )),
            vec![
                "$.turns[0].role: expected a role: \"user\", \"assistant\", \"environment\" or \"grader\", found string \"Assistant\"",
                "$.turns[1].role: expected a role: \"user\", \"assistant\", \"environment\" or \"grader\", found null",
            ]
        );
        // every turn's count is checked, not only the assistant's that are summed
        assert_eq!(
            problems(trajectory_row(
                &obj(
                    r#"{"idx":4,"turns":[{"role":"user","token_count":"seven"},{"role":"environment","token_count":-3},{"role":"grader","token_count":1.5},{"role":"user","token_count":null},{"role":"assistant","token_count":2}]}"#
                ),
                false
            )),
            vec![
                "$.turns[0].token_count: expected a count of tokens (an integer ≥ 0), found string \"seven\"",
                "$.turns[1].token_count: expected a count of tokens (an integer ≥ 0), found number -3",
                "$.turns[2].token_count: expected a count of tokens (an integer ≥ 0), found number 1.5",
            ]
        );
        assert_eq!(
            problems(trajectory_row(&obj(r#"{"idx":3,"turns":"oops"}"#), false)),
            vec!["$.turns: expected a list of turns, found a string of 4 characters"]
        );
        // an integer id keeps its digits; the fallback to idx takes 5.0 as 5
        let t = trajectory_row(&obj(r#"{"idx":3,"example_id":777,"turns":[]}"#), false).unwrap();
        assert_eq!(t["example_id"], "777");
        let t = trajectory_row(&obj(r#"{"idx":5.0,"turns":[]}"#), false).unwrap();
        assert_eq!(t["example_id"], "5");
        assert_eq!(
            problems(result_row(&obj(
                r#"{"name":7,"score":0.5,"pass_at_k":{"1":0.5,"pass@1":0.9,"-1":0.3,"x":0.1,"2":"a"}}"#
            ))),
            vec![
                "$.name: expected a string, found number 7",
                "$.pass_at_k[\"pass@1\"]: k = 1 is given twice (also as key \"1\")",
                "$.pass_at_k[\"-1\"]: expected a key `k` or `pass@k` with k a positive integer",
                "$.pass_at_k.x: expected a key `k` or `pass@k` with k a positive integer",
                "$.pass_at_k.2: expected a number, found string \"a\"",
            ]
        );
        // a k named twice is said beside a value out of range
        assert_eq!(
            problems(result_row(&obj(r#"{"name":"g","score":0.5,"pass_at_k":{"1":1.5,"pass@1":0.2}}"#))),
            vec![
                "$.pass_at_k.1: expected a pass@k value from 0 to 1, found number 1.5",
                "$.pass_at_k[\"pass@1\"]: k = 1 is given twice (also as key \"1\")",
            ]
        );
        assert_eq!(
            problems(result_row(&obj(r#"{"name":"g","score":0.5,"pass_at_k":[0.5]}"#))),
            vec!["$.pass_at_k: expected an object of pass@k values (`{\"pass@1\": 0.5, …}`), found an array"]
        );
        assert!(
            problems(result_row(&obj(r#"{"gsm8k":{"score":0.5}}"#)))[0].starts_with("$: expected a benchmark result")
        );
        assert_eq!(
            problems(metrics_rows(&obj(
                r#"{"checkpoint":"c","test":{"count":2},"ood":[0.25,4],"id":{"pass_at_k":"0.9"}}"#
            ))),
            vec![
                "$.test: unknown key, holding an object (expected `checkpoint`, `id`, `ood`, `total`, `per_template`)",
                "$.id.pass_at_k: expected an object of pass@k values (`{\"pass@1\": 0.5, …}`), found string \"0.9\"",
                "$.ood: expected an object of the split's metrics, found an array",
            ]
        );
        assert_eq!(
            problems(metrics_rows(&obj(r#"{"checkpoint":"c"}"#))),
            vec!["$: no split: expected at least one of `id`, `ood`, `total`"]
        );
        // a checkpoint's per_template and its total split's own cannot share one place
        assert_eq!(
            problems(metrics_rows(&obj(
                r#"{"checkpoint":"c","total":{"count":1,"per_template":{"A":1}},"per_template":{"B":2}}"#
            ))),
            vec![
                "$.per_template: the checkpoint's per_template goes into the extra of its `total` row, which holds \
                 `total.per_template` already; keep one of them"
            ]
        );
        // NaN read from a bare token is a number
        let r = result_row(&obj("{\"name\":\"g\",\"score\":0.5,\"pass_at_k\":{\"1\":\"\u{FDD0}NaN\"}}")).unwrap();
        assert_eq!(r["pass_at_k"][0]["k"], 1);
    }

    #[test]
    fn generations_and_identifiers_are_checked_not_reshaped() {
        assert_eq!(
            problems(generation_row(&obj(r#"{"op":1.5,"resp_tokens":-5,"exact_match":2}"#), false)),
            vec![
                "$.__idx: missing: every generation names its prompt's index",
                "$.op: expected an integer or a string, found number 1.5",
                "$.resp_tokens: expected a count of tokens (an integer ≥ 0), found number -5",
                "$.exact_match: expected 0 or 1 (or true or false), found number 2",
            ]
        );
        let g = generation_row(&obj(r#"{"__idx":7.0,"op":"3","exact_match":0}"#), false).unwrap();
        assert_eq!(
            (g["example_id"].as_str(), g["op"].as_str(), &g["exact_match"]),
            (Some("7"), Some("3"), &Value::Bool(false))
        );
        // identifiers of any size keep their digits
        let t = trajectory_row(&obj(r#"{"example_id":12345678901234567890,"turns":[]}"#), false).unwrap();
        assert_eq!(t["example_id"], "12345678901234567890");
        let t = trajectory_row(&obj("{\"example_id\":\"\u{FDD0}int:123456789012345678901234\",\"turns\":[]}"), false)
            .unwrap();
        assert_eq!(t["example_id"], "123456789012345678901234");
        // a line of another format is no trajectory; an error and a generation are text or nothing
        assert_eq!(
            problems(trajectory_row(&obj(r#"{"step":0,"optim/lr":0.1}"#), false)),
            vec![
                "$: expected a trajectory (`idx` or `example_id`, `turns`, `reward`, …), found an object with keys [\"step\", \"optim/lr\"]"
            ]
        );
        assert_eq!(
            problems(trajectory_row(&obj("{\"idx\":1,\"error\":false}"), false)),
            vec!["$.error: expected a string or null, found boolean false"]
        );
        assert_eq!(
            trajectory_row(&obj(r#"{"idx":1,"error":"timeout (300s)"}"#), false).unwrap()["error"],
            "timeout (300s)"
        );
        assert_eq!(
            problems(generation_row(&obj(r#"{"__idx":1,"gen_solution_answer":["a","b"]}"#), true)),
            vec!["$.gen_solution_answer: expected a string or null, found an array"]
        );
        assert!(generation_row(&obj(r#"{"__idx":1,"gen_solution_answer":["a","b"]}"#), false).is_ok());
        // token counts that add up beyond 64 bits are named, not capped
        let big = r#"{"role":"assistant","token_count":5000000000000000000}"#;
        assert_eq!(
            problems(trajectory_row(&obj(&format!(r#"{{"idx":1,"turns":[{big},{big}]}}"#)), false)),
            vec!["$.turns[1].token_count: the assistant turns' token counts add up beyond 9223372036854775807"]
        );
        // an infinite reward is a correct (or wrong) answer; NaN and null say nothing
        let columns = trajectory_columns(false);
        let mut arrays: Vec<arrow::array::ArrayRef> = columns
            .iter()
            .map(|(name, t)| match name.as_str() {
                "reward" => std::sync::Arc::new(arrow::array::Float64Array::from(vec![
                    Some(f64::INFINITY),
                    Some(f64::NEG_INFINITY),
                    Some(f64::NAN),
                    Some(0.5),
                    Some(0.0),
                    None,
                ])) as arrow::array::ArrayRef,
                _ => arrow::array::new_null_array(&t.arrow_type(), 6),
            })
            .collect();
        correct_from_reward(&columns, &mut arrays);
        let c = columns.iter().position(|(n, _)| n == "correct").unwrap();
        let got: Vec<Option<bool>> = arrow::array::AsArray::as_boolean(&arrays[c]).iter().collect();
        assert_eq!(got, vec![Some(true), Some(false), None, Some(true), Some(false), None]);
        assert_eq!(
            problems(result_row(&obj(r#"{"name":"g","pass_at_k":{"pass@+3":0.5}}"#))),
            vec!["$.pass_at_k[\"pass@+3\"]: expected a key `k` or `pass@k` with k a positive integer"]
        );
    }

    #[test]
    fn converter_paths_name_the_raw_record() {
        let row = obj(r#"{"split":"ood","count":"x"}"#);
        let keys = |v: &[&str]| Some(v.iter().map(|k| k.to_string()).collect::<Vec<_>>());
        assert_eq!(raw_column(Format::EvalMetrics, None, &row, "count", ""), keys(&["ood", "count"]));
        assert_eq!(raw_column(Format::TinkerEvalResult, None, &row, "benchmark", ""), keys(&["name"]));
        assert_eq!(raw_column(Format::EvalGenerations, None, &row, "response_tokens", ""), keys(&["resp_tokens"]));
        assert_eq!(raw_column(Format::EvalGenerations, None, &row, "gold_answer", ""), None);
        assert_eq!(raw_column(Format::Jsonl, None, &row, "count", ""), None);
        // a metrics row's extra is its split's, but for the checkpoint's per_template at the top
        let raw = obj(r#"{"ood":{"per_template":{"Q":1}},"total":{},"per_template":{"A":1}}"#);
        let total = obj(r#"{"split":"total"}"#);
        assert_eq!(raw_column(Format::EvalMetrics, Some(&raw), &total, "extra", ".per_template.A"), keys(&[]));
        assert_eq!(raw_column(Format::EvalMetrics, Some(&raw), &total, "extra", ".per_op"), keys(&["total"]));
        assert_eq!(raw_column(Format::EvalMetrics, Some(&raw), &row, "extra", ".per_template.Q"), keys(&["ood"]));
    }
}
