//! lm-evaluation-harness outputs (PyPI `lm-eval` 0.4, `lm_eval/loggers/evaluation_tracker.py`
//! and `lm_eval/evaluator.py`), shaped into rows of fixed columns.
//!
//! - `lm-eval-results`: a `results_<date>.json` document, one row per task × metric × filter of
//!   its `results` (for the standard `evaluations` table): `task`, `alias`, `is_group` (whether
//!   the task is a group of subtasks, whose rows aggregate theirs), `metric` (`acc`),
//!   `filter` (`none`, `strict-match`, …; the part after the comma of `"acc,none"`), `value`
//!   (Float64), `stderr` (Float64, from `"acc_stderr,none"`; lm-eval writes `"N/A"` where it
//!   computed none, read as null), `version` (text), `n_shot`, `n_samples_original`,
//!   `n_samples_effective` (Int64), `higher_is_better` (Boolean), `model_name`, `date` (Float64,
//!   Unix seconds as written), `task_hash`, and how the run was made: `model_args` (text, as
//!   written: `pretrained=…,revision=…`), `git_hash`, `lm_eval_version`, `config` (JSON text of
//!   the run's `config`: backend, batch size, `limit`, generation arguments, seeds),
//!   `task_config` (JSON text of the task's entry in `configs`) and `extra` (JSON text of the
//!   document's other keys: `transformers_version`, `chat_template`, `system_instruction`,
//!   times, the environment; null when none). A group's rows come from `groups` as well as
//!   `results` in older files: both are read, `results` first.
//! - `lm-eval-samples`: `samples_<task>_<date>.jsonl` lines (written with `--log_samples`), one
//!   row per document × filter: `task` (from the file's name, [`task_of_samples_file`], when no
//!   path capture is named so), `doc_id` (Int64), `filter`, `target` (text, or JSON text of a
//!   list), `doc_hash`, `prompt_hash`, `target_hash` (the identity of a document, its prompt and
//!   its target across runs), `metrics` (JSON text, metric → value, for the names the line's
//!   `metrics` lists), `extra` (JSON text of other keys), and, with `keep_text = true`, `doc`,
//!   `arguments`, `resps` and `filtered_resps` (JSON text).

use serde_json::{Map, Value};

use super::convert::{Target, json_text, whole_number};
use super::evals::{Coerce, ShapeProblems, float_like, key_path, metric_of_stderr, number_ok, problem};

/// The documents a group's subtasks hold and were run on (`n-samples`' `original` and
/// `effective`): the sums over the tasks with counts that `group_subtasks` (`groups`) reaches
/// from `task`, each once however many groups list it (a loop or a task listed twice counts
/// it once). `None` when a subtask reached has neither counts nor subtasks, is no name, or
/// the sums pass 2^63.
fn group_counts(r: &Map<String, Value>, groups: &Map<String, Value>, task: &str) -> Option<(i64, i64)> {
    let counts = r.get("n-samples").and_then(Value::as_object);
    let (mut seen, mut todo) = (std::collections::BTreeSet::new(), vec![task]);
    let mut sum = (0i64, 0i64);
    while let Some(t) = todo.pop() {
        if !seen.insert(t) {
            continue;
        }
        if let Some(c) = counts.and_then(|c| c.get(t)).filter(|_| t != task) {
            let (original, effective) = (c.get("original")?.as_i64()?, c.get("effective")?.as_i64()?);
            sum = (sum.0.checked_add(original)?, sum.1.checked_add(effective)?);
            continue;
        }
        for s in groups.get(t)?.as_array().filter(|a| !a.is_empty())? {
            todo.push(s.as_str()?);
        }
    }
    Some(sum)
}

/// The model a results file's `config.model_args` names, as lm-eval's own `get_model_name`
/// finds it for `model_name` (which files of lm-eval 0.3 and of 0.4 before 0.4.3 lack): the
/// value of the first of `peft=`, `delta=`, `pretrained=`, `model=`, `path=`, `engine=` in the
/// arguments' text (`pretrained=EleutherAI/pythia-410m,dtype=float32`), or of that key when
/// the arguments are an object. `None` when none is there: `config.model` is then the name
/// kept, though it names the harness's backend (`hf`), not the model.
pub fn model_of_args(args: &Value) -> Option<String> {
    const KEYS: [&str; 6] = ["peft", "delta", "pretrained", "model", "path", "engine"];
    match args {
        Value::String(text) => KEYS.iter().find_map(|k| {
            text.split(',').find_map(|part| part.trim().strip_prefix(k)?.strip_prefix('=').map(str::to_string))
        }),
        Value::Object(o) => KEYS.iter().find_map(|k| o.get(*k)?.as_str().map(str::to_string)),
        _ => None,
    }
    .filter(|m| !m.is_empty())
}

/// Columns of `lm-eval-results`.
pub fn result_columns() -> Vec<(String, Target)> {
    vec![
        ("task".into(), Target::Str),
        ("alias".into(), Target::Str),
        ("is_group".into(), Target::Bool),
        ("metric".into(), Target::Str),
        ("filter".into(), Target::Str),
        ("value".into(), Target::Float64),
        ("stderr".into(), Target::Float64),
        ("version".into(), Target::Str),
        ("n_shot".into(), Target::Int64),
        ("n_samples_original".into(), Target::Int64),
        ("n_samples_effective".into(), Target::Int64),
        ("higher_is_better".into(), Target::Bool),
        ("model_name".into(), Target::Str),
        ("date".into(), Target::Float64),
        ("task_hash".into(), Target::Str),
        ("model_args".into(), Target::Text),
        ("git_hash".into(), Target::Str),
        ("lm_eval_version".into(), Target::Str),
        ("config".into(), Target::Json),
        ("task_config".into(), Target::Json),
        ("extra".into(), Target::Json),
    ]
}

/// Keys of a results document that its rows' columns hold; [`result_rows`] keeps the others
/// in `extra`.
const RESULT_KEYS: [&str; 14] = [
    "results",
    "groups",
    "group_subtasks",
    "versions",
    "n-shot",
    "higher_is_better",
    "n-samples",
    "model_name",
    "date",
    "task_hashes",
    "config",
    "configs",
    "git_hash",
    "lm_eval_version",
];

/// The task of a samples file, from the name lm-eval gives it: `samples_<task>_<date>.jsonl`,
/// `<date>` as `%Y-%m-%dT%H-%M-%S.%f` (`2026-12-05T05-46-40.902732`), read from the right, so
/// that a task name may hold `_` (`arith_gen`); a compressed file's extension aside. `None` for
/// another name.
pub fn task_of_samples_file(rel: &str) -> Option<String> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let name = match super::files::compression_named(name) {
        Some((ext, _)) => &name[..name.len() - ext.len()],
        None => name,
    };
    let stem = name.strip_prefix("samples_")?.strip_suffix(".jsonl")?;
    let (task, date) = stem.rsplit_once('_')?;
    let b = date.as_bytes();
    let shape = b.len() >= 20
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 | 13 | 16 => c == b'-',
            10 => c == b'T',
            19 => c == b'.',
            _ => c.is_ascii_digit(),
        });
    (shape && !task.is_empty()).then(|| task.to_string())
}

/// Columns of `lm-eval-samples`.
pub fn sample_columns(keep_text: bool) -> Vec<(String, Target)> {
    let mut c: Vec<(String, Target)> = vec![
        ("doc_id".into(), Target::Int64),
        ("filter".into(), Target::Str),
        ("target".into(), Target::Text),
        ("doc_hash".into(), Target::Str),
        ("prompt_hash".into(), Target::Str),
        ("target_hash".into(), Target::Str),
        ("metrics".into(), Target::Json),
        ("extra".into(), Target::Json),
    ];
    if keep_text {
        for k in SAMPLE_TEXT_KEYS {
            c.push((k.into(), Target::Json));
        }
    }
    c
}

/// Keys of a sample line that hold the document, the prompts and the model's responses.
pub const SAMPLE_TEXT_KEYS: [&str; 4] = ["doc", "arguments", "resps", "filtered_resps"];

/// Keys of a task's entry that hold no metric: its name as shown (`alias`).
const NOT_METRICS: [&str; 1] = ["alias"];

/// The metric and filter a key of a task's entry names, and its standard error's key:
/// `acc,none` → (`acc`, `none`, `acc_stderr,none`); in an entry of lm-eval 0.3 (no key with a
/// filter), `acc` → (`acc`, `none`, `acc_stderr`), as lm-eval 0.4 names the unfiltered. `None`
/// for a key that holds no metric: `alias`, a standard error, and, beside keys with filters, a
/// key without one whose value is no number.
fn metric_key<'k>(key: &'k str, value: &Value, filtered_entry: bool) -> Option<(&'k str, &'k str, String)> {
    let (metric, filter, stderr_key) = match key.split_once(',') {
        Some((m, f)) => (m, f, format!("{m}_stderr,{f}")),
        None if NOT_METRICS.contains(&key) => return None,
        None if !filtered_entry || value.is_number() => (key, "none", format!("{key}_stderr")),
        None => return None,
    };
    (!metric.ends_with("_stderr")).then_some((metric, filter, stderr_key))
}

/// Whether a group's value in `groups` is its value in `results`: equal as JSON, or as the
/// numbers they write (`"0.5"` and `0.5`, `"Infinity"` and the bare token).
fn same_value(a: &Value, b: &Value) -> bool {
    let number = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => super::lenient::special(s)
            .and_then(|v| v.as_f64())
            .or_else(|| s.parse::<f64>().ok())
            .or_else(|| super::convert::nonfinite_string(s)),
        _ => None,
    };
    a == b || matches!((number(a), number(b)), (Some(x), Some(y)) if x == y || (x.is_nan() && y.is_nan()))
}

/// Rows of a `results_<date>.json` document.
///
/// A standard error whose metric the entry lacks makes a row of its own, its value null. A
/// group in both `results` and `groups` (lm-eval 0.4.0 to 0.4.2) is read from `results`, and
/// from `groups` the metrics `results` lacks.
///
/// Errors: the document has no `results` object (no lm-eval results), a task's entry is no
/// object, a metric's value or standard error is no number (each at its JSON path; a string
/// passes where `coerce` lets it, the source's `coerce_numeric_strings` and
/// `coerce_nonfinite_strings`), or a group's metric in `groups` differs from its value in
/// `results`.
pub fn result_rows(r: &Map<String, Value>, coerce: Coerce) -> Result<Vec<Map<String, Value>>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let results = match r.get("results") {
        Some(Value::Object(results)) => results,
        Some(other) => {
            problem(&mut problems, "$.results".into(), "an object of tasks", other);
            return Err(problems);
        }
        None => {
            let keys: Vec<&str> = r.keys().map(String::as_str).take(5).collect();
            problems.push((
                "$.results".into(),
                format!("expected lm-eval results (`results`, `versions`, `n-shot`, `config`, …), found keys {keys:?}"),
            ));
            return Err(problems);
        }
    };
    let per_task = |section: &str, task: &str| r.get(section).and_then(|s| s.get(task)).cloned().unwrap_or(Value::Null);
    let model_name = r
        .get("model_name")
        .cloned()
        .filter(|v| !v.is_null())
        .or_else(|| r.get("config").and_then(|c| c.get("model_args")).and_then(model_of_args).map(Value::String))
        .or_else(|| r.get("config").and_then(|c| c.get("model")).cloned())
        .unwrap_or(Value::Null);
    // how the run was made, as written: text where lm-eval writes text, JSON text of the rest
    let text = |v: Option<&Value>| match v {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(other) => Value::String(json_text(other)),
    };
    let model_args = text(r.get("config").and_then(|c| c.get("model_args")));
    let (git_hash, lm_eval_version) = (text(r.get("git_hash")), text(r.get("lm_eval_version")));
    let config = r.get("config").cloned().unwrap_or(Value::Null);
    let extra: Map<String, Value> =
        r.iter().filter(|(k, _)| !RESULT_KEYS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    let extra = if extra.is_empty() { Value::Null } else { Value::Object(extra) };
    // a group's row aggregates its subtasks' rows: said, so that an average over tasks can
    // leave it out (`group_subtasks` names each group's subtasks, `groups` lists groups in
    // older files); null when the file says neither
    let subtasks = r.get("group_subtasks").and_then(Value::as_object);
    let listed = r.get("groups").and_then(Value::as_object);
    let is_group = |task: &str| -> Value {
        if subtasks.is_none() && listed.is_none() {
            return Value::Null;
        }
        let has_subtasks = subtasks.and_then(|g| g.get(task)).and_then(Value::as_array).is_some_and(|a| !a.is_empty());
        Value::Bool(has_subtasks || listed.is_some_and(|g| g.contains_key(task)))
    };
    let mut rows = Vec::new();
    for section in ["results", "groups"] {
        let Some(tasks) = r.get(section).and_then(Value::as_object) else { continue };
        for (task, entry) in tasks {
            let at = key_path(&format!("$.{section}"), task);
            let Value::Object(entry) = entry else {
                problem(&mut problems, at, "an object of metric values", entry);
                continue;
            };
            // a group listed in both sections: what `results` holds of it is read there
            let in_results = (section == "groups").then(|| results.get(task).and_then(Value::as_object)).flatten();
            if section == "groups" && results.get(task).is_some() && in_results.is_none() {
                continue;
            }
            // (and, in `results`, the same group's entry in `groups`)
            let in_groups = (section == "results")
                .then(|| r.get("groups").and_then(|g| g.get(task)).and_then(Value::as_object))
                .flatten();
            let filtered_entry = entry.keys().any(|k| k.contains(','));
            // a group has no counts of its own in the file: those of its subtasks, summed
            let n_samples = match per_task("n-samples", task) {
                Value::Null => subtasks
                    .and_then(|g| group_counts(r, g, task))
                    .map(|(original, effective)| serde_json::json!({"original": original, "effective": effective}))
                    .unwrap_or(Value::Null),
                counts => counts,
            };
            let mut row_of = |metric: &str, filter: &str, value: Value, stderr: Value| {
                let mut row = Map::new();
                row.insert("task".into(), Value::String(task.clone()));
                row.insert("alias".into(), entry.get("alias").cloned().unwrap_or(Value::Null));
                row.insert("is_group".into(), is_group(task));
                row.insert("metric".into(), Value::String(metric.to_string()));
                row.insert("filter".into(), Value::String(filter.to_string()));
                row.insert("value".into(), value);
                row.insert("stderr".into(), stderr);
                let version = match per_task("versions", task) {
                    Value::Null => Value::Null,
                    Value::String(s) => Value::String(s),
                    other => Value::String(json_text(&other)),
                };
                row.insert("version".into(), version);
                row.insert("n_shot".into(), per_task("n-shot", task));
                row.insert("n_samples_original".into(), n_samples.get("original").cloned().unwrap_or(Value::Null));
                row.insert("n_samples_effective".into(), n_samples.get("effective").cloned().unwrap_or(Value::Null));
                let hib = per_task("higher_is_better", task).get(metric).cloned().unwrap_or(Value::Null);
                row.insert("higher_is_better".into(), hib);
                row.insert("model_name".into(), model_name.clone());
                row.insert("date".into(), r.get("date").cloned().unwrap_or(Value::Null));
                row.insert("task_hash".into(), per_task("task_hashes", task));
                row.insert("model_args".into(), model_args.clone());
                row.insert("git_hash".into(), git_hash.clone());
                row.insert("lm_eval_version".into(), lm_eval_version.clone());
                row.insert("config".into(), config.clone());
                row.insert("task_config".into(), per_task("configs", task));
                row.insert("extra".into(), extra.clone());
                rows.push(row);
            };
            for (key, value) in entry {
                if let Some(same) = in_results.and_then(|e| e.get(key)) {
                    if !same_value(same, value) {
                        problems.push((
                            key_path(&at, key),
                            format!(
                                "expected the group's value in `results` ({}), found {}: the two sections differ",
                                super::path::describe(same),
                                super::path::describe(value)
                            ),
                        ));
                    }
                    continue;
                }
                // a standard error without its metric: a row of its own, no value
                if let Some(metric_key) = metric_of_stderr(key) {
                    let (metric, filter) = metric_key.split_once(',').unwrap_or((&metric_key, "none"));
                    // (a group's metric may be in the other section, with this standard error)
                    let elsewhere = in_results.or(in_groups).is_some_and(|e| e.contains_key(&metric_key));
                    if !entry.contains_key(&metric_key) && !elsewhere && !metric.is_empty() {
                        let stderr = match value {
                            Value::String(s) if s == "N/A" => Value::Null,
                            v if number_ok(&mut problems, key_path(&at, key), v, coerce, "a number or \"N/A\"") => {
                                v.clone()
                            }
                            _ => continue,
                        };
                        row_of(metric, filter, Value::Null, stderr);
                    }
                    continue;
                }
                let Some((metric, filter, stderr_key)) = metric_key(key, value, filtered_entry) else { continue };
                if !number_ok(&mut problems, key_path(&at, key), value, coerce, "a number") {
                    continue;
                }
                let stderr = match entry.get(&stderr_key).or_else(|| in_results.or(in_groups)?.get(&stderr_key)) {
                    None | Some(Value::Null) => Value::Null,
                    Some(Value::String(s)) if s == "N/A" => Value::Null,
                    Some(v)
                        if number_ok(&mut problems, key_path(&at, &stderr_key), v, coerce, "a number or \"N/A\"") =>
                    {
                        v.clone()
                    }
                    Some(_) => Value::Null,
                };
                row_of(metric, filter, value.clone(), stderr);
            }
        }
    }
    if problems.is_empty() { Ok(rows) } else { Err(problems) }
}

const SAMPLE_KEYS: [&str; 12] = [
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
    "task",
];

/// Row of a `samples_<task>_<date>.jsonl` line.
///
/// Errors: the line has no `doc_id` (no sample), `doc_id` is no integer, `metrics` is no list
/// of metric names, a listed metric has no value on the line or a value that is no number (a
/// boolean counts as 0 or 1), or a hash is no string.
pub fn sample_row(r: &Map<String, Value>, keep_text: bool) -> Result<Map<String, Value>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let Some(doc_id) = r.get("doc_id") else {
        let keys: Vec<&str> = r.keys().map(String::as_str).take(5).collect();
        problems.push((
            "$.doc_id".into(),
            format!("expected an lm-eval sample (`doc_id`, `doc`, `target`, `resps`, …), found keys {keys:?}"),
        ));
        return Err(problems);
    };
    if whole_number(doc_id).is_none() {
        problem(&mut problems, "$.doc_id".into(), "an integer", doc_id);
    }
    let mut row = Map::new();
    row.insert("doc_id".into(), doc_id.clone());
    // lm-eval 0.4.0 wrote no `filter`: its samples are unfiltered, the results' `none`
    row.insert("filter".into(), r.get("filter").cloned().unwrap_or_else(|| Value::String("none".into())));
    let target = match r.get("target") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(t)) => Value::String(t.clone()),
        Some(other) => Value::String(json_text(other)),
    };
    row.insert("target".into(), target);
    for k in ["doc_hash", "prompt_hash", "target_hash"] {
        let v = r.get(k).cloned().unwrap_or(Value::Null);
        if !matches!(v, Value::Null | Value::String(_)) {
            problem(&mut problems, format!("$.{k}"), "a string", &v);
        }
        row.insert(k.into(), v);
    }
    let mut metrics = Map::new();
    match r.get("metrics") {
        // lm-eval 0.4.0 listed no metrics: its scores are the line's other numbers and booleans
        None => {
            for (k, v) in r.iter().filter(|(k, _)| !SAMPLE_KEYS.contains(&k.as_str())) {
                if v.is_boolean() || (v.is_number() && float_like(v)) {
                    metrics.insert(k.clone(), v.clone());
                }
            }
        }
        Some(Value::Null) => {}
        Some(Value::Array(names)) => {
            for (i, n) in names.iter().enumerate() {
                let Some(n) = n.as_str() else {
                    problem(&mut problems, format!("$.metrics[{i}]"), "a metric name", n);
                    continue;
                };
                match r.get(n) {
                    Some(v @ (Value::Bool(_) | Value::Null)) => {
                        metrics.insert(n.to_string(), v.clone());
                    }
                    Some(v) if float_like(v) => {
                        metrics.insert(n.to_string(), v.clone());
                    }
                    Some(v) => problem(&mut problems, key_path("$", n), "a number", v),
                    None => problems.push((
                        key_path("$", n),
                        format!("missing: `metrics` lists {n:?} (at $.metrics[{i}]) but the line has no value for it"),
                    )),
                }
            }
        }
        Some(other) => problem(&mut problems, "$.metrics".into(), "a list of metric names", other),
    }
    row.insert("metrics".into(), if metrics.is_empty() { Value::Null } else { Value::Object(metrics.clone()) });
    let rest: Map<String, Value> = r
        .iter()
        .filter(|(k, _)| !SAMPLE_KEYS.contains(&k.as_str()) && !metrics.contains_key(k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    row.insert("extra".into(), if rest.is_empty() { Value::Null } else { Value::Object(rest) });
    if keep_text {
        for k in SAMPLE_TEXT_KEYS {
            row.insert(k.into(), r.get(k).cloned().unwrap_or(Value::Null));
        }
    }
    if problems.is_empty() { Ok(row) } else { Err(problems) }
}

/// A sample line as a rejects file keeps it: without its document, prompts and responses
/// unless the source keeps texts.
pub fn without_texts(mut r: Map<String, Value>, keep_text: bool) -> Map<String, Value> {
    if !keep_text {
        for k in SAMPLE_TEXT_KEYS {
            r.shift_remove(k);
        }
    }
    r
}

/// Whether `path` is named as lm-eval names its outputs: `results_<date>.json` (format
/// `lm-eval-results`; lighteval's results have the same name, told apart by their content) or
/// `samples_<task>_<date>.jsonl` (format `lm-eval-samples`).
pub fn is_lm_eval_output(path: &std::path::Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return false };
    (name.starts_with("results_") && name.ends_with(".json"))
        || (name.starts_with("samples_") && name.ends_with(".jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Map<String, Value> {
        serde_json::from_str::<Value>(s).unwrap().as_object().unwrap().clone()
    }

    #[test]
    fn a_metric_without_a_filter_is_unfiltered_not_left_out() {
        // lm-eval 0.3, and a key added by hand to a 0.4 file
        let r = obj(
            r#"{"results": {"hellaswag": {"acc": 0.25, "acc_stderr": 0.5, "alias": "hs", "x,none": 1.5, "y": 2.0}},
                        "versions": {"hellaswag": 0}, "config": {"model": "hf-causal"}}"#,
        );
        let rows: Vec<String> = result_rows(&r, Coerce::default())
            .unwrap()
            .iter()
            .map(|x| format!("{} {} {} {}", x["metric"], x["filter"], x["value"], x["stderr"]))
            .collect();
        assert_eq!(rows, ["\"acc\" \"none\" 0.25 0.5", "\"x\" \"none\" 1.5 null", "\"y\" \"none\" 2.0 null"]);
    }

    #[test]
    fn a_file_without_model_name_names_the_model_of_its_arguments_not_the_backend() {
        let model = |config: &str| {
            let r = obj(&format!(r#"{{"results": {{"t": {{"acc,none": 0.5}}}}, "config": {config}}}"#));
            result_rows(&r, Coerce::default()).unwrap()[0]["model_name"].clone()
        };
        assert_eq!(
            model(r#"{"model": "hf", "model_args": "pretrained=meta-llama/Llama-3.2-1B,dtype=bfloat16"}"#),
            "meta-llama/Llama-3.2-1B"
        );
        assert_eq!(
            model(r#"{"model": "gpt2", "model_args": "pretrained=EleutherAI/pythia-410m"}"#),
            "EleutherAI/pythia-410m"
        );
        // an adapter names the model before its base, as lm-eval does
        assert_eq!(model(r#"{"model": "hf", "model_args": "pretrained=base,peft=me/adapter"}"#), "me/adapter");
        assert_eq!(
            model(r#"{"model": "vllm", "model_args": {"pretrained": "Qwen/Qwen3-0.6B", "tp": 1}}"#),
            "Qwen/Qwen3-0.6B"
        );
        // `model_name` when the file has one; the backend when the arguments name no model
        assert_eq!(model(r#"{"model": "hf", "model_args": "dtype=float32"}"#), "hf");
        let r = obj(
            r#"{"results": {"t": {"acc,none": 0.5}}, "model_name": "m", "config": {"model_args": "pretrained=x"}}"#,
        );
        assert_eq!(result_rows(&r, Coerce::default()).unwrap()[0]["model_name"], "m");
    }

    #[test]
    fn a_sample_of_lm_eval_0_4_0_is_unfiltered_and_its_scores_are_its_metrics() {
        let r = obj(
            r#"{"doc_id": 3, "target": "4", "resps": [["4"]], "filtered_resps": ["4"], "exact_match": 1.0, "note": "x"}"#,
        );
        let row = sample_row(&r, false).unwrap();
        assert_eq!(row["filter"], "none");
        assert_eq!(row["metrics"], serde_json::json!({"exact_match": 1.0}));
        assert_eq!(row["extra"], serde_json::json!({"note": "x"}));
    }

    #[test]
    fn a_group_row_is_told_from_its_subtasks_rows() {
        let r = obj(r#"{"results": {"suite": {"acc,none": 0.5}, "a": {"acc,none": 0.25}},
                        "group_subtasks": {"suite": ["a"], "a": []}}"#);
        let rows = result_rows(&r, Coerce::default()).unwrap();
        let of = |t: &str| rows.iter().find(|x| x["task"] == t).unwrap()["is_group"].clone();
        assert_eq!((of("suite"), of("a")), (Value::Bool(true), Value::Bool(false)));
        // older files list groups apart; a file that says neither leaves it unknown
        let r = obj(r#"{"results": {"a": {"acc,none": 0.25}}, "groups": {"suite": {"acc,none": 0.5}}}"#);
        let rows = result_rows(&r, Coerce::default()).unwrap();
        let of = |t: &str| rows.iter().find(|x| x["task"] == t).unwrap()["is_group"].clone();
        assert_eq!((of("suite"), of("a")), (Value::Bool(true), Value::Bool(false)));
        let rows = result_rows(&obj(r#"{"results": {"a": {"acc,none": 0.25}}}"#), Coerce::default()).unwrap();
        assert_eq!(rows[0]["is_group"], Value::Null);
    }

    #[test]
    fn a_groups_document_counts_are_its_subtasks_summed() {
        // mmlu holds mmlu_stem (two tasks, one run with --limit) and one task more; `x` holds a
        // task without counts: unknown, not a part
        let r = obj(r#"{"results": {"mmlu": {"acc,none": 0.5}, "mmlu_stem": {"acc,none": 0.5},
            "a": {"acc,none": 0.5}, "b": {"acc,none": 0.5}, "c": {"acc,none": 0.5}, "x": {"acc,none": 0.5}},
            "group_subtasks": {"mmlu": ["mmlu_stem", "c"], "mmlu_stem": ["a", "b"], "x": ["a", "d"],
                               "a": [], "b": [], "c": []},
            "n-samples": {"a": {"original": 100, "effective": 100}, "b": {"original": 311, "effective": 50},
                          "c": {"original": 10, "effective": 10}}}"#);
        let rows = result_rows(&r, Coerce::default()).unwrap();
        let of = |t: &str| {
            let row = rows.iter().find(|x| x["task"] == t).unwrap();
            (row["n_samples_original"].clone(), row["n_samples_effective"].clone())
        };
        assert_eq!(of("mmlu_stem"), (Value::from(411), Value::from(150)));
        assert_eq!(of("mmlu"), (Value::from(421), Value::from(160)));
        assert_eq!(of("b"), (Value::from(311), Value::from(50)));
        assert_eq!(of("x"), (Value::Null, Value::Null));
        // a task listed twice, or under two groups of one group, counts once; a loop ends;
        // groups nested deep and wide are summed at once
        let r = obj(r#"{"results": {"g": {"acc,none": 0.5}, "d": {"acc,none": 0.5}, "l": {"acc,none": 0.5},
            "g0": {"acc,none": 0.5}},
            "group_subtasks": {"g": ["a", "a"], "d": ["g", "a"], "l": ["l", "a"], "a": [],
                "g0": ["g1","g1","g1","g1","g1","g1","g1","g1","g1","g1"], "g1": ["g2","g2","g2","g2","g2","g2","g2","g2"],
                "g2": ["g3","g3","g3","g3","g3","g3","g3","g3"], "g3": ["g4","g4","g4","g4","g4","g4","g4","g4"],
                "g4": ["g5","g5","g5","g5","g5","g5","g5","g5"], "g5": ["g6","g6","g6","g6","g6","g6","g6","g6"],
                "g6": ["g7","g7","g7","g7","g7","g7","g7","g7"], "g7": ["g8","g8","g8","g8","g8","g8","g8","g8"],
                "g8": ["a"]},
            "n-samples": {"a": {"original": 10, "effective": 10}}}"#);
        let rows = result_rows(&r, Coerce::default()).unwrap();
        let of = |t: &str| {
            let row = rows.iter().find(|x| x["task"] == t).unwrap();
            (row["n_samples_original"].clone(), row["n_samples_effective"].clone())
        };
        for t in ["g", "d", "l", "g0"] {
            assert_eq!(of(t), (Value::from(10), Value::from(10)), "{t}");
        }
    }

    #[test]
    fn the_task_is_read_from_the_file_name_from_the_right() {
        for (name, task) in [
            ("raw/m/samples_arith_gen_2026-12-05T05-46-40.902732.jsonl", Some("arith_gen")),
            ("samples_gsm8k_2024-05-01T10-00-00.000001.jsonl.gz", Some("gsm8k")),
            ("samples_mmlu_abstract_algebra_2024-05-01T10-00-00.5.jsonl", Some("mmlu_abstract_algebra")),
            ("samples_gsm8k.jsonl", None),
            ("samples__2024-05-01T10-00-00.000001.jsonl", None),
            ("results_2024-05-01T10-00-00.000001.json", None),
        ] {
            assert_eq!(task_of_samples_file(name).as_deref(), task, "{name}");
        }
    }

    #[test]
    fn how_the_run_was_made_is_kept_beside_each_score() {
        let doc = r#"{"results": {"gsm8k": {"exact_match,strict-match": 0.7}},
            "configs": {"gsm8k": {"num_fewshot": 5, "dataset_path": "gsm8k"}},
            "config": {"model": "hf", "model_args": "pretrained=Qwen/Qwen2.5-1.5B,revision=989aa79", "batch_size": "auto", "limit": 10},
            "git_hash": "4f8a2b1", "lm_eval_version": "0.4.10", "transformers_version": "4.57.1",
            "chat_template": "{{ messages }}", "date": 1773493512.0}"#;
        let rows = result_rows(&obj(doc), Coerce::default()).unwrap();
        let got: Vec<String> = ["model_args", "git_hash", "lm_eval_version", "config", "task_config", "extra"]
            .iter()
            .map(|k| rows[0][*k].to_string())
            .collect();
        assert_eq!(got[0], r#""pretrained=Qwen/Qwen2.5-1.5B,revision=989aa79""#);
        assert_eq!(got[1..3], [r#""4f8a2b1""#, r#""0.4.10""#]);
        assert!(got[3].contains(r#""batch_size":"auto""#) && got[3].contains(r#""limit":10"#), "{}", got[3]);
        assert_eq!(got[4], r#"{"num_fewshot":5,"dataset_path":"gsm8k"}"#);
        // every key no column holds is in `extra`; none there, null
        assert_eq!(got[5], r#"{"transformers_version":"4.57.1","chat_template":"{{ messages }}"}"#);
        let bare = result_rows(&obj(r#"{"results": {"t": {"acc,none": 0.5}}}"#), Coerce::default()).unwrap();
        for k in ["model_args", "git_hash", "lm_eval_version", "config", "task_config", "extra"] {
            assert!(bare[0][k].is_null(), "{k}");
        }
        // model_args given as an object are JSON text
        let doc = r#"{"results": {"t": {"acc,none": 0.5}}, "config": {"model_args": {"pretrained": "m"}}}"#;
        assert_eq!(result_rows(&obj(doc), Coerce::default()).unwrap()[0]["model_args"], r#"{"pretrained":"m"}"#);
    }

    #[test]
    fn nothing_of_a_task_entry_is_left_out_unsaid() {
        let rows = |doc: &str, coerce| {
            result_rows(&obj(doc), coerce).map(|rows| {
                rows.iter()
                    .map(|r| format!("{} {} {} {} {}", r["task"], r["metric"], r["filter"], r["value"], r["stderr"]))
                    .collect::<Vec<_>>()
            })
        };
        // lm-eval 0.3: a value that is no number is a problem, not a key left out; `alias` no metric
        let e =
            rows(r#"{"results": {"h": {"alias": "h", "acc": 0.5, "acc_norm": "0.6 (approx)"}}}"#, Coerce::default());
        assert_eq!(e.unwrap_err()[0].0, "$.results.h.acc_norm");
        let e = rows(r#"{"results": {"h": {"alias": 5, "acc": 0.5}}}"#, Coerce::default()).unwrap();
        assert_eq!(e, [r#""h" "acc" "none" 0.5 null"#]);
        // numbers and non-finite floats written as text pass where the options say, stderr too
        let doc = r#"{"results": {"h": {"acc": "0.25", "acc_stderr": "0.1"}, "k": {"f1,none": "Infinity"}}}"#;
        assert_eq!(rows(doc, Coerce::default()).unwrap_err().len(), 2);
        let e = rows(doc, Coerce { numbers: true, nonfinite: false }).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].1.contains("`coerce_nonfinite_strings = true`"), "{e:?}");
        assert_eq!(rows(doc, Coerce { numbers: true, nonfinite: true }).unwrap().len(), 2);
        // a standard error without its metric is a row of its own
        let got = rows(r#"{"results": {"t": {"acc_stderr,none": 0.1}}}"#, Coerce::default()).unwrap();
        assert_eq!(got, [r#""t" "acc" "none" null 0.1"#]);
        // a group in both sections: `groups` adds what `results` lacks, and may not differ
        let doc = r#"{"results": {"g": {"acc,none": 0.5}}, "groups": {"g": {"acc,none": 0.5, "f1,none": 0.3}}}"#;
        assert_eq!(
            rows(doc, Coerce::default()).unwrap(),
            [r#""g" "acc" "none" 0.5 null"#, r#""g" "f1" "none" 0.3 null"#]
        );
        let doc = r#"{"results": {"g": {"acc,none": 0.5}}, "groups": {"g": {"acc,none": 0.9}}}"#;
        let e = rows(doc, Coerce::default()).unwrap_err();
        assert_eq!(e[0].0, "$.groups.g[\"acc,none\"]");
        assert!(e[0].1.contains("expected the group's value in `results` (number 0.5), found number 0.9"), "{e:?}");
        // a group's metric in `groups`, its standard error alone in `results`: one row; values
        // equal as numbers are the same
        let doc = r#"{"results": {"g": {"acc_stderr,none": 0.01}}, "groups": {"g": {"acc,none": 0.6, "acc_stderr,none": 0.01}}}"#;
        assert_eq!(rows(doc, Coerce::default()).unwrap(), [r#""g" "acc" "none" 0.6 0.01"#]);
        let doc = r#"{"results": {"g": {"acc,none": "0.5"}}, "groups": {"g": {"acc,none": 0.5}}}"#;
        assert_eq!(rows(doc, Coerce { numbers: true, nonfinite: false }).unwrap().len(), 1);
        // `results` that is no object is said as such
        let e = rows(r#"{"results": [], "versions": {}}"#, Coerce::default()).unwrap_err();
        assert_eq!(e[0].1, "expected an object of tasks, found an array");
    }

    #[test]
    fn results_give_a_row_per_task_metric_and_filter() {
        let rows = result_rows(&obj(
            r#"{"results": {"gsm8k": {"alias": "gsm8k", "exact_match,strict-match": 0.5, "exact_match_stderr,strict-match": 0.1,
                  "exact_match,flexible-extract": 0.75, "exact_match_stderr,flexible-extract": "N/A"}},
                "versions": {"gsm8k": 3.0}, "n-shot": {"gsm8k": 5}, "higher_is_better": {"gsm8k": {"exact_match": true}},
                "n-samples": {"gsm8k": {"original": 1319, "effective": 4}}, "model_name": "m", "date": 1700000000.5,
                "task_hashes": {"gsm8k": "abc"}}"#,
        ), Coerce::default())
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0]["filter"].as_str(), &rows[0]["stderr"]), (Some("strict-match"), &Value::from(0.1)));
        assert_eq!((rows[1]["value"].as_f64(), &rows[1]["stderr"]), (Some(0.75), &Value::Null));
        assert_eq!((rows[0]["version"].as_str(), &rows[0]["n_samples_effective"]), (Some("3.0"), &Value::from(4)));
        let e = result_rows(&obj(r#"{"results": {"t": {"acc,none": "high"}}}"#), Coerce::default()).unwrap_err();
        assert_eq!(e[0].0, "$.results.t[\"acc,none\"]");
    }

    #[test]
    fn a_sample_keeps_its_hashes_and_metrics() {
        let line = obj(
            r#"{"doc_id": 3, "doc": {"q": "2+2"}, "target": "4", "arguments": {"gen_args_0": {"arg_0": "Q: 2+2"}}, "resps": [["4"]],
                "filtered_resps": ["4"], "filter": "none", "metrics": ["acc", "acc_norm"], "doc_hash": "d", "prompt_hash": "p",
                "target_hash": "t", "acc": 1.0, "acc_norm": true, "task": "arith"}"#,
        );
        let row = sample_row(&line, false).unwrap();
        assert_eq!(row["metrics"], serde_json::json!({"acc": 1.0, "acc_norm": true}));
        assert_eq!((row["doc_hash"].as_str(), &row["extra"]), (Some("d"), &Value::Null));
        assert!(row.get("doc").is_none());
        assert_eq!(sample_row(&line, true).unwrap()["resps"], serde_json::json!([["4"]]));
        let e = sample_row(&obj(r#"{"doc_id": "x", "metrics": ["acc"]}"#), false).unwrap_err();
        assert_eq!(
            e.into_iter().map(|(p, m)| format!("{p}: {m}")).collect::<Vec<_>>(),
            vec![
                "$.doc_id: expected an integer, found string \"x\"",
                "$.acc: missing: `metrics` lists \"acc\" (at $.metrics[0]) but the line has no value for it",
            ]
        );
    }
}
