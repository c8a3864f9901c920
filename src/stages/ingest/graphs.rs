//! Dependency-graph scoring outputs of per-model evaluation folders (input-formats notes §8:
//! `scripts/score_dependency_graphs.py` and `scripts/aggregate_graph_pass_results.py`), shaped
//! into rows of fixed columns for the standard `evaluations` table.
//!
//! - `graph-pass-results`: a `graph_results/<run>/results.json` document
//!   (`{"files": {<file>: {per_template, total, ks, prompt_counts}}}`), one row per file ×
//!   template × operation × k: `file` (the scored generations file's name), `template` (null
//!   for the file's total over templates), `op` (text; null for the total over operations), `k`
//!   (Int64, from `"pass@k"`), `pass_at_k` (Float64), `prompts` (Int64, from `prompt_counts`).
//!   `per_op_pass_at_columns`, the same values keyed the other way round, is not read twice.
//! - `graph-score-report`: `<generated>_score_report.jsonl` lines (one appended per scoring run),
//!   one row per scored file and one for the run's `aggregate`: `scope` (`file` |
//!   `aggregate`), `generated_path`, `gold_dir`, `results_dir`, `file` (the file's path; null
//!   for the aggregate), `skipped` (Boolean), the counters `total`, `missing_solution`,
//!   `missing_gold`, `parse_fail`, `perfect`, `value_mismatch`, `dependency_mismatch`,
//!   `answer_mismatch`, `extra_nodes`, `missing_nodes`, `perfect_with_extra`,
//!   `unused_gold_entries`, `files` and `skipped_files` (the aggregate's files scored and skipped)
//!   (Int64), `template_stats`
//!   (JSON text), `results_path` (the file's `.graph_results.jsonl`, or the aggregate's
//!   `report_path`). The runs of one report are told apart by `_source_line`.

use serde_json::{Map, Value};

use super::convert::{Target, whole_number};
use super::evals::{ShapeProblems, float_like, key_path, problem};

/// Columns of `graph-pass-results`.
pub fn pass_columns() -> Vec<(String, Target)> {
    vec![
        ("file".into(), Target::Str),
        ("template".into(), Target::Str),
        ("op".into(), Target::Str),
        ("k".into(), Target::Int64),
        ("pass_at_k".into(), Target::Float64),
        ("prompts".into(), Target::Int64),
    ]
}

/// The counters of a scored file and of a run's aggregate, in the order the scorer writes them.
pub(crate) const COUNTERS: [&str; 13] = [
    "total",
    "missing_solution",
    "missing_gold",
    "parse_fail",
    "perfect",
    "value_mismatch",
    "dependency_mismatch",
    "answer_mismatch",
    "extra_nodes",
    "missing_nodes",
    "perfect_with_extra",
    "unused_gold_entries",
    "files",
];

/// Columns of `graph-score-report`.
pub fn report_columns() -> Vec<(String, Target)> {
    let mut c: Vec<(String, Target)> = vec![
        ("scope".into(), Target::Str),
        ("generated_path".into(), Target::Str),
        ("gold_dir".into(), Target::Str),
        ("results_dir".into(), Target::Str),
        ("file".into(), Target::Str),
        ("skipped".into(), Target::Bool),
    ];
    c.extend(COUNTERS.iter().map(|k| (k.to_string(), Target::Int64)));
    c.push(("skipped_files".into(), Target::Int64));
    c.push(("template_stats".into(), Target::Json));
    c.push(("results_path".into(), Target::Str));
    c
}

/// The rows of one block of pass rates (`{op: {"pass@k": f}}` and the block's total).
#[allow(clippy::too_many_arguments)]
fn pass_block(
    file: &str,
    template: Option<&str>,
    block: &Value,
    counts: Option<&Value>,
    base: &str,
    rows: &mut Vec<Map<String, Value>>,
    problems: &mut ShapeProblems,
) {
    let Value::Object(block) = block else {
        problem(problems, base.to_string(), "an object of pass rates", block);
        return;
    };
    let mut one = |op: Option<&str>,
                   rates: &Value,
                   at_rates: String,
                   prompts: Option<&Value>,
                   problems: &mut ShapeProblems| {
        let Value::Object(rates) = rates else {
            problem(problems, at_rates, "an object of \"pass@k\" values", rates);
            return;
        };
        for (key, v) in rates {
            let k = key.strip_prefix("pass@").and_then(|k| k.parse::<i64>().ok());
            let Some(k) = k else {
                problems.push((key_path(&at_rates, key), format!("expected a key \"pass@<k>\", found {key:?}")));
                continue;
            };
            if !float_like(v) {
                problem(problems, key_path(&at_rates, key), "a number", v);
                continue;
            }
            let mut row = Map::new();
            row.insert("file".into(), Value::String(file.to_string()));
            row.insert("template".into(), template.map(|t| Value::String(t.into())).unwrap_or(Value::Null));
            row.insert("op".into(), op.map(|t| Value::String(t.into())).unwrap_or(Value::Null));
            row.insert("k".into(), Value::from(k));
            row.insert("pass_at_k".into(), v.clone());
            row.insert("prompts".into(), prompts.filter(|p| whole_number(p).is_some()).cloned().unwrap_or(Value::Null));
            rows.push(row);
        }
    };
    match block.get("per_op_pass_at_k") {
        None | Some(Value::Null) => {}
        Some(Value::Object(ops)) => {
            for (op, rates) in ops {
                let prompts = counts.and_then(|c| c.get("per_op")).and_then(|p| p.get(op));
                one(Some(op), rates, key_path(&key_path(base, "per_op_pass_at_k"), op), prompts, problems);
            }
        }
        Some(other) => problem(problems, key_path(base, "per_op_pass_at_k"), "an object of operations", other),
    }
    if let Some(total) = block.get("total_pass_at_k") {
        one(None, total, key_path(base, "total_pass_at_k"), counts.and_then(|c| c.get("total")), problems);
    }
}

/// Rows of a `results.json` document.
///
/// Errors: the document has no `files` object, or a file's entry, a block or a pass rate is
/// not of the aggregator's shape (each at its JSON path).
pub fn pass_rows(r: &Map<String, Value>) -> Result<Vec<Map<String, Value>>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let Some(files) = r.get("files").and_then(Value::as_object) else {
        let keys: Vec<&str> = r.keys().map(String::as_str).take(5).collect();
        problems.push((
            "$.files".into(),
            format!("expected graph pass results (`{{\"files\": {{<file>: {{per_template, total, ks, prompt_counts}}}}}}`), found keys {keys:?}"),
        ));
        return Err(problems);
    };
    let mut rows = Vec::new();
    for (file, entry) in files {
        let base = key_path("$.files", file);
        let Value::Object(entry) = entry else {
            problem(&mut problems, base, "an object", entry);
            continue;
        };
        let counts = entry.get("prompt_counts");
        match entry.get("per_template") {
            None | Some(Value::Null) => {}
            Some(Value::Object(templates)) => {
                for (t, block) in templates {
                    let c = counts.and_then(|c| c.get("per_template")).and_then(|p| p.get(t));
                    pass_block(
                        file,
                        Some(t),
                        block,
                        c,
                        &key_path(&key_path(&base, "per_template"), t),
                        &mut rows,
                        &mut problems,
                    );
                }
            }
            Some(other) => problem(&mut problems, key_path(&base, "per_template"), "an object of templates", other),
        }
        if let Some(total) = entry.get("total") {
            let c = counts.and_then(|c| c.get("total"));
            pass_block(file, None, total, c, &key_path(&base, "total"), &mut rows, &mut problems);
        }
    }
    if problems.is_empty() { Ok(rows) } else { Err(problems) }
}

fn report_row(
    scope: &str,
    line: &Map<String, Value>,
    stats: &Map<String, Value>,
    base: &str,
    problems: &mut ShapeProblems,
) -> Map<String, Value> {
    let text = |v: Option<&Value>| match v {
        None | Some(Value::Null) => Value::Null,
        Some(v @ Value::String(_)) => v.clone(),
        Some(other) => Value::String(super::convert::json_text(other)),
    };
    let mut row = Map::new();
    row.insert("scope".into(), Value::String(scope.into()));
    for k in ["generated_path", "gold_dir", "results_dir"] {
        row.insert(k.into(), text(line.get(k)));
    }
    row.insert("file".into(), if scope == "file" { text(stats.get("file")) } else { Value::Null });
    // a file's `skipped` is a flag; the aggregate's counts the files skipped
    let (skipped, skipped_files) = match (scope, stats.get("skipped")) {
        ("file", Some(Value::Bool(b))) => (Value::Bool(*b), Value::Null),
        ("file", None | Some(Value::Null)) => (Value::Bool(false), Value::Null),
        (_, None | Some(Value::Null)) => (Value::Null, Value::Null),
        ("aggregate", Some(n)) if whole_number(n).is_some() => (Value::Null, n.clone()),
        (_, Some(other)) => {
            let expected = if scope == "file" { "a boolean" } else { "an integer count" };
            problem(problems, key_path(base, "skipped"), expected, other);
            (Value::Null, Value::Null)
        }
    };
    row.insert("skipped".into(), skipped);
    for k in COUNTERS {
        let v = match stats.get(k) {
            None | Some(Value::Null) => Value::Null,
            Some(v) if whole_number(v).is_some() => v.clone(),
            Some(v) => {
                problem(problems, key_path(base, k), "an integer count", v);
                Value::Null
            }
        };
        row.insert(k.into(), v);
    }
    row.insert("skipped_files".into(), skipped_files);
    row.insert("template_stats".into(), stats.get("template_stats").cloned().unwrap_or(Value::Null));
    let results = if scope == "file" { stats.get("results_path") } else { stats.get("report_path") };
    row.insert("results_path".into(), text(results));
    row
}

/// Rows of a `_score_report.jsonl` line: one per scored file, then the aggregate.
///
/// Errors: the line has neither `per_file` nor `aggregate` (no score report), `per_file` is no
/// list of objects, or a counter is no integer (each at its JSON path).
pub fn report_rows(r: &Map<String, Value>) -> Result<Vec<Map<String, Value>>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    if !r.contains_key("per_file") && !r.contains_key("aggregate") {
        let keys: Vec<&str> = r.keys().map(String::as_str).take(5).collect();
        problems.push((
            "$.per_file".into(),
            format!(
                "expected a score report (`gold_dir`, `generated_path`, `results_dir`, `per_file`, `aggregate`), found \
                 keys {keys:?}"
            ),
        ));
        return Err(problems);
    }
    let mut rows = Vec::new();
    match r.get("per_file") {
        None | Some(Value::Null) => {}
        Some(Value::Array(files)) => {
            for (i, f) in files.iter().enumerate() {
                let base = format!("$.per_file[{i}]");
                match f {
                    Value::Object(stats) => rows.push(report_row("file", r, stats, &base, &mut problems)),
                    other => problem(&mut problems, base, "an object of counts", other),
                }
            }
        }
        Some(other) => problem(&mut problems, "$.per_file".into(), "a list of scored files", other),
    }
    match r.get("aggregate") {
        None | Some(Value::Null) => {}
        Some(Value::Object(stats)) => rows.push(report_row("aggregate", r, stats, "$.aggregate", &mut problems)),
        Some(other) => problem(&mut problems, "$.aggregate".into(), "an object of counts", other),
    }
    if problems.is_empty() { Ok(rows) } else { Err(problems) }
}

/// Whether `path` is named as the scorer names its reports (`<generated>_score_report.jsonl`).
pub fn is_score_report(path: &std::path::Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with("_score_report.jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Map<String, Value> {
        serde_json::from_str::<Value>(s).unwrap().as_object().unwrap().clone()
    }

    #[test]
    fn pass_results_give_a_row_per_template_op_and_k() {
        let rows = pass_rows(&obj(
            r#"{"files": {"a.graph_results.jsonl": {
                "per_template": {"default": {"per_op_pass_at_k": {"2": {"pass@1": 0.5}}, "per_op_pass_at_columns": {"pass@1": {"2": 0.5}},
                                             "total_pass_at_k": {"pass@1": 0.5}}},
                "total": {"per_op_pass_at_k": {"2": {"pass@1": 0.5}}, "total_pass_at_k": {"pass@1": 0.5}},
                "ks": [1], "prompt_counts": {"per_template": {"default": {"per_op": {"2": 4}, "total": 4}}, "total": {"per_op": {"2": 4}, "total": 4}}}}}"#,
        ))
        .unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!(
            (rows[0]["template"].as_str(), rows[0]["op"].as_str(), &rows[0]["prompts"]),
            (Some("default"), Some("2"), &Value::from(4))
        );
        assert_eq!((&rows[3]["template"], &rows[3]["op"]), (&Value::Null, &Value::Null));
        let e = pass_rows(&obj(r#"{"files": {"a": {"total": {"total_pass_at_k": {"pass@x": 1, "pass@2": "hi"}}}}}"#))
            .unwrap_err();
        assert_eq!(e[0].0, "$.files.a.total.total_pass_at_k[\"pass@x\"]");
        assert_eq!(
            e[1],
            ("$.files.a.total.total_pass_at_k[\"pass@2\"]".into(), "expected a number, found string \"hi\"".into())
        );
    }
}
