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

use std::io::BufRead;

use serde_json::{Map, Value};

use super::convert::Target;
use super::evals::{ShapeProblems, float_like, problem};
use super::records::{self, Found, Item};
use crate::core::error::Result;
use crate::core::report::Position;

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

/// What a Trainer state says of its save: the step it was saved at and the run's planned
/// steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub struct SaveHead {
    /// `global_step`.
    pub global_step: Option<u64>,
    /// `max_steps`: two saves that differ in it are of different runs.
    pub max_steps: Option<u64>,
}

/// The [`SaveHead`] of the Trainer state at `path`, the document read through (its log
/// unkept), as [`read`] reads it.
///
/// Errors: the file cannot be opened, or is no JSON object (cut short while saving), as text.
pub fn save_head(path: &std::path::Path) -> std::result::Result<SaveHead, String> {
    let file = std::io::BufReader::new(std::fs::File::open(path).map_err(|e| e.to_string())?);
    serde_json::from_reader(super::lenient::LenientRead::new(file)).map_err(|e| e.to_string())
}

/// The run's output folder of the Trainer state at `rel` (a path relative to the pipeline):
/// the file's folder, or the one above it when that is a checkpoint's; `.` at the top.
pub fn output_dir(rel: &str) -> String {
    let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
    let (parent, last) = dir.rsplit_once('/').unwrap_or(("", dir));
    let dir = if is_checkpoint_folder(last) { parent } else { dir };
    if dir.is_empty() { ".".into() } else { dir.to_string() }
}

/// Reads a `trainer_state.json` document entry by entry: each entry of `log_history` is an
/// [`Item::Record`] at pointer `/log_history/<i>`, so that the document is never held whole
/// (a long run's state is tens of MB). Everything else in the document is skipped unread.
///
/// What is no Trainer state is one [`Item::Bad`]: `log_history` missing (at pointer ``,
/// naming the document's first keys) or no list (at `/log_history`), an entry that is no
/// object (at its own pointer), a document that stops being JSON (at ``, with its line and
/// column; the entries read before that point are kept, as a run killed while saving its
/// state leaves them).
///
/// Errors: the file cannot be read to its end.
pub fn read(reader: Box<dyn BufRead + Send>, rel: &str, sink: &mut dyn FnMut(Item) -> Result<()>) -> Result<()> {
    let bad = |at: &str, rule: &'static str, message: String| Item::Bad {
        at: Position::Pointer(at.into()),
        rule,
        message,
        raw: None,
    };
    let mut entries = 0u64;
    let mut each = |item: Item| match item {
        Item::Record(_, Position::Pointer(ref p)) if p == HISTORY => {
            sink(bad(HISTORY, "shape", "expected the list of log entries, found an object".into()))
        }
        item => {
            entries += 1;
            sink(item)
        }
    };
    let found = records::json_syntax(reader, rel, HISTORY, &mut each)?;
    match found {
        Ok(Found::Records) => Ok(()),
        Ok(Found::Scalar(what)) => {
            sink(bad(HISTORY, "shape", format!("expected the list of log entries, found {what}")))
        }
        // (the root's first five keys; none when the root is no object)
        Ok(Found::Missing(keys)) if keys.is_empty() => sink(bad(
            "",
            "shape",
            "expected a transformers Trainer state (an object with `log_history`), found a document that is no \
             object, or an empty one"
                .into(),
        )),
        Ok(Found::Missing(keys)) => sink(bad(
            "",
            "shape",
            format!(
                "expected a transformers Trainer state (`log_history`, `global_step`, `epoch`, …), found keys {keys:?}{}",
                if keys.len() == 5 { " and maybe more" } else { "" }
            ),
        )),
        Err(e) => {
            let mut message = records::json_message(&e, records::JsonPlace::Document);
            match entries {
                0 => {}
                1 => message.push_str(" (the log entry before it is read)"),
                n => message.push_str(&format!(" (the {n} log entries before it are read)")),
            }
            sink(bad("", "json", message))
        }
    }
}

/// Where a Trainer state's entries are.
const HISTORY: &str = "/log_history";

/// Columns of `trainer-runs` (`output_dir` and `checkpoint` come from the file's path, see
/// [`output_dir`] and [`checkpoint_of`]).
pub fn run_columns() -> Vec<(String, Target)> {
    let mut columns: Vec<(String, Target)> =
        vec![("output_dir".into(), Target::Str), ("checkpoint".into(), Target::Str)];
    columns.extend(RUN_FIELDS.iter().map(|(name, target)| (name.to_string(), target.clone())));
    columns.extend([
        ("log_entries".into(), Target::Int64),
        ("last_logged_step".into(), Target::Int64),
        ("extra".into(), Target::JsonObject),
    ]);
    columns
}

/// The fields of a Trainer state that `trainer-runs` keeps as columns of their own, as
/// `TrainerState` names them; the others (`stateful_callbacks`, `trial_name`,
/// `trial_params`, `is_world_process_zero`, …) are in `extra`.
const RUN_FIELDS: [(&str, Target); 13] = [
    ("global_step", Target::Int64),
    ("max_steps", Target::Int64),
    ("epoch", Target::Float64),
    ("num_train_epochs", Target::Int64),
    ("logging_steps", Target::Int64),
    ("eval_steps", Target::Int64),
    ("save_steps", Target::Int64),
    ("train_batch_size", Target::Int64),
    ("num_input_tokens_seen", Target::Int64),
    ("total_flos", Target::Float64),
    ("best_metric", Target::Float64),
    ("best_global_step", Target::Int64),
    ("best_model_checkpoint", Target::Str),
];

/// The checkpoint folder of the Trainer state at `rel` (`checkpoint-500`), or `None` for the
/// state the output folder holds itself (`save_state()`'s).
pub fn checkpoint_of(rel: &str) -> Option<String> {
    let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
    let last = dir.rsplit('/').next().unwrap_or(dir);
    is_checkpoint_folder(last).then(|| last.to_string())
}

/// Reads a `trainer_state.json` document as one record of `trainer-runs` (at pointer ``):
/// the fields of [`run_columns`] as found (their types are checked as the row is converted),
/// `log_entries` (how many entries `log_history` holds), `last_logged_step` (the `step` of
/// its last entry) and `extra` (the document's other keys, as an object). `log_history` is
/// read entry by entry and not kept, so the document is never held whole.
///
/// What is no Trainer state is one [`Item::Bad`] at pointer ``: a document that is no
/// object, or one without `log_history` (rule `shape`), or that stops being JSON (rule
/// `json`, with its line and column).
///
/// Errors: the file cannot be read to its end.
pub fn read_run(
    mut reader: Box<dyn BufRead + Send>,
    rel: &str,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<()> {
    use serde::Deserialize as _;
    let bad = |rule: &'static str, message: String| Item::Bad {
        at: Position::Pointer(String::new()),
        rule,
        message,
        raw: None,
    };
    records::refuse_utf16_json(&mut reader, rel)?;
    // a UTF-8 byte order mark (as some Windows editors write) is not part of the document
    if reader.fill_buf().map_err(|e| crate::core::error::Error::io(rel, e))?.starts_with(b"\xEF\xBB\xBF") {
        reader.consume(3);
    }
    let mut de = serde_json::Deserializer::from_reader(super::lenient::LenientRead::new(reader));
    let read = StateRun::deserialize(&mut de).and_then(|r| de.end().map(|()| r));
    match read {
        Ok(StateRun::Object { mut fields, history: Some(History(Ok((entries, last_step)))) }) => {
            let mut row = Map::with_capacity(RUN_FIELDS.len() + 3);
            for (name, _) in &RUN_FIELDS {
                row.insert(name.to_string(), fields.remove(*name).unwrap_or(Value::Null));
            }
            row.insert("log_entries".into(), Value::from(entries));
            row.insert("last_logged_step".into(), last_step.unwrap_or(Value::Null));
            row.insert("extra".into(), if fields.is_empty() { Value::Null } else { Value::Object(fields) });
            sink(Item::Record(row, Position::Pointer(String::new())))
        }
        Ok(StateRun::Object { history: Some(History(Err(what))), .. }) => {
            let message = format!("expected the list of log entries at /log_history, found {what}");
            sink(bad("shape", message))
        }
        Ok(StateRun::Object { fields, history: None }) => {
            let keys: Vec<&str> = fields.keys().map(String::as_str).take(5).collect();
            sink(bad(
                "shape",
                format!(
                    "expected a transformers Trainer state (`log_history`, `global_step`, `epoch`, …), found keys {keys:?}{}",
                    if fields.len() > 5 { format!(" and {} more", fields.len() - 5) } else { String::new() }
                ),
            ))
        }
        Ok(StateRun::Other(what)) => {
            sink(bad("shape", format!("expected a transformers Trainer state (a JSON object), found {what}")))
        }
        Err(e) if e.is_io() => Err(records::read_failed_at(
            rel,
            Position::Pointer(String::new()),
            "before the end of the document",
            &std::io::Error::from(e),
        )),
        Err(e) => sink(bad("json", records::json_message(&e, records::JsonPlace::Document))),
    }
}

/// A Trainer state read for `trainer-runs`: its keys but `log_history`, and of `log_history`
/// (when there is one) how many entries and the last `step` logged, or what it is when it is
/// no list; or what the document is when it is no object.
enum StateRun {
    Object { fields: Map<String, Value>, history: Option<History> },
    Other(&'static str),
}

impl<'de> serde::Deserialize<'de> for StateRun {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = StateRun;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON document")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<StateRun, A::Error> {
                let mut fields = Map::new();
                let mut history = None;
                while let Some(key) = map.next_key::<String>()? {
                    // a key named twice: a reader would keep one of the two values
                    if fields.contains_key(&key) || (key == "log_history" && history.is_some()) {
                        return Err(super::strict::repeated_key(&key));
                    }
                    if key == "log_history" {
                        history = Some(map.next_value::<History>()?);
                    } else {
                        fields.insert(key, map.next_value()?);
                    }
                }
                Ok(StateRun::Object { fields, history })
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<StateRun, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(StateRun::Other("an array"))
            }
            records::json_scalars!(StateRun, StateRun::Other);
        }
        d.deserialize_any(V)
    }
}

/// `log_history` read for `trainer-runs`: how many entries, and the last `step` logged as
/// `trainer-state` reads one (an integer, 0 or more; an entry without one is counted, not
/// taken for the last step); or, when it is no list, what it is.
struct History(std::result::Result<(u64, Option<Value>), &'static str>);

impl<'de> serde::Deserialize<'de> for History {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = History;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("the list of log entries")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<History, A::Error> {
                // one entry at a time: an entry is a log call's few values
                let (mut n, mut last) = (0u64, None);
                while let Some(entry) = seq.next_element::<Value>()? {
                    n += 1;
                    if let Some(step) = entry.get("step").filter(|s| s.as_u64().is_some()) {
                        last = Some(step.clone());
                    }
                }
                Ok(History(Ok((n, last))))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<History, A::Error> {
                while map.next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?.is_some() {}
                Ok(History(Err("an object")))
            }
            records::json_scalars!(History, |what| History(Err(what)));
        }
        d.deserialize_any(V)
    }
}

/// The place in `log_history` of the entry at `at` (`/log_history/3` → 3).
pub fn entry_of(at: &str) -> Option<u64> {
    at.strip_prefix(HISTORY)?.strip_prefix('/')?.parse().ok()
}

/// Long rows of one entry of a Trainer state's `log_history`: one per value logged beside
/// `step` and `epoch`, with those two (`entry` and `output_dir` come from the entry's place,
/// see [`entry_of`] and [`output_dir`]).
///
/// Errors: the entry's `step` is missing or no integer of 0 or more, or its `epoch` is no
/// number (each at its JSON path in the entry).
pub fn rows(entry: &Map<String, Value>) -> Result<Vec<Map<String, Value>>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let Some(step) = entry.get("step").cloned() else {
        let keys: Vec<&str> = entry.keys().map(String::as_str).take(5).collect();
        problems
            .push(("$.step".into(), format!("expected the step logged at, missing; the entry holds keys {keys:?}")));
        return Err(problems);
    };
    if step.as_i64().is_none_or(|s| s < 0) {
        problem(&mut problems, "$.step".into(), "the step logged at (an integer, 0 or more)", &step);
        return Err(problems);
    }
    let epoch = entry.get("epoch").cloned().unwrap_or(Value::Null);
    if !float_like(&epoch) {
        problem(&mut problems, "$.epoch".into(), "a number", &epoch);
        return Err(problems);
    }
    let mut rows = Vec::with_capacity(entry.len().saturating_sub(2));
    for (k, v) in entry {
        if k == "step" || k == "epoch" {
            continue;
        }
        let (value, text) = super::tinker::value_columns(v.clone());
        let mut row = Map::with_capacity(6);
        row.insert("step".into(), step.clone());
        row.insert("epoch".into(), epoch.clone());
        row.insert("metric".into(), Value::String(k.clone()));
        row.insert("value".into(), value);
        row.insert("value_text".into(), text);
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`read`] makes of document `text`: records as `pointer keys`, bad items as
    /// `pointer! message`.
    fn items(text: &str) -> Vec<String> {
        let mut got = Vec::new();
        let reader: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(text.as_bytes().to_vec()));
        read(reader, "trainer_state.json", &mut |item| {
            got.push(match item {
                Item::Record(r, at) => format!("{at} {}", r.keys().cloned().collect::<Vec<_>>().join(",")),
                Item::Bad { at, message, .. } => format!("{at}! {message}"),
            });
            Ok(())
        })
        .unwrap();
        got
    }

    #[test]
    fn every_logged_value_is_a_row_of_its_entry() {
        let history = serde_json::json!({
            "global_step": 20,
            "log_history": [
                {"epoch": 0.5, "grad_norm": 1.5, "learning_rate": 4e-05, "loss": 2.25, "step": 10},
                {"epoch": 1.0, "eval_loss": 1.75, "step": 20},
                {"epoch": 1.0, "step": 20}
            ]
        });
        let got: Vec<String> = history["log_history"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|e| rows(e.as_object().unwrap()).unwrap())
            .map(|r| format!("{} {} {} {}", r["step"], r["epoch"], r["metric"], r["value"]))
            .collect();
        assert_eq!(
            got,
            [
                "10 0.5 \"grad_norm\" 1.5",
                "10 0.5 \"learning_rate\" 0.00004",
                "10 0.5 \"loss\" 2.25",
                "20 1.0 \"eval_loss\" 1.75"
            ]
        );
        assert_eq!(
            items(&history.to_string()),
            [
                "/log_history/0 epoch,grad_norm,learning_rate,loss,step",
                "/log_history/1 epoch,eval_loss,step",
                "/log_history/2 epoch,step"
            ]
        );
        assert_eq!((entry_of("/log_history/12"), entry_of("/log_history"), entry_of("")), (Some(12), None, None));
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
        assert_eq!(
            items(r#"{"global_step": 1, "log_history": null}"#),
            ["/log_history! expected the list of log entries, found null"]
        );
        assert_eq!(
            items(r#"{"global_step": 1, "log_history": {"loss": 1}}"#),
            ["/log_history! expected the list of log entries, found an object"]
        );
        let got = items(r#"{"results": {}, "a": 1, "b": 2, "c": 3, "d": 4, "e": 5}"#);
        assert_eq!(
            got,
            ["! expected a transformers Trainer state (`log_history`, `global_step`, `epoch`, …), found keys \
                 [\"results\", \"a\", \"b\", \"c\", \"d\"] and maybe more"]
        );
        assert_eq!(
            items("[1, 2]"),
            ["! expected a transformers Trainer state (an object with `log_history`), found a document that is no \
              object, or an empty one"]
        );
        assert_eq!(items(r#"{"log_history": [3]}"#), ["/log_history/0! expected a JSON object, found number 3"]);
        let e = |v: Value| rows(v.as_object().unwrap()).unwrap_err();
        assert_eq!(
            e(serde_json::json!({"loss": 1})),
            [(
                "$.step".to_string(),
                "expected the step logged at, missing; the entry holds keys [\"loss\"]".to_string()
            )]
        );
        assert_eq!(e(serde_json::json!({"step": 2.5}))[0].0, "$.step");
        assert_eq!(e(serde_json::json!({"step": 1, "epoch": "x"}))[0].0, "$.epoch");
    }

    /// What [`read_run`] makes of document `text`: the record's JSON text, or `! message`.
    fn run_items(text: &str) -> Vec<String> {
        let mut got = Vec::new();
        let reader: Box<dyn BufRead + Send> = Box::new(std::io::Cursor::new(text.as_bytes().to_vec()));
        read_run(reader, "trainer_state.json", &mut |item| {
            got.push(match item {
                Item::Record(r, _) => Value::Object(r).to_string(),
                Item::Bad { rule, message, .. } => format!("{rule}! {message}"),
            });
            Ok(())
        })
        .unwrap();
        got
    }

    #[test]
    fn a_state_is_one_run_row_and_its_log_is_counted_not_kept() {
        let got = run_items(
            "{\"best_metric\": NaN, \"best_model_checkpoint\": \"out/checkpoint-10\", \"global_step\": 30,\n\
             \"log_history\": [{\"loss\": NaN, \"step\": 10}, {\"eval\": {\"a\": [1, 2]}, \"step\": 20}, {\"loss\": 1}],\n\
             \"max_steps\": 100, \"trial_name\": null, \"stateful_callbacks\": {\"TrainerControl\": {}}}",
        );
        let row: Value = serde_json::from_str(&got[0]).unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(row["global_step"], 30);
        assert_eq!(row["max_steps"], 100);
        assert_eq!(row["best_metric"], "\u{FDD0}NaN");
        assert_eq!(row["best_model_checkpoint"], "out/checkpoint-10");
        assert_eq!(row["epoch"], Value::Null);
        // three entries; the last has no step: the last step logged is the one before
        assert_eq!(row["log_entries"], 3);
        assert_eq!(row["last_logged_step"], 20);
        assert_eq!(row["extra"], serde_json::json!({"trial_name": null, "stateful_callbacks": {"TrainerControl": {}}}));
        assert!(row.get("log_history").is_none());
    }

    #[test]
    fn what_is_no_state_is_one_bad_record_for_the_run_row() {
        assert_eq!(
            run_items("[1, 2]"),
            ["shape! expected a transformers Trainer state (a JSON object), found an array"]
        );
        assert_eq!(
            run_items(r#"{"results": {}}"#),
            [
                "shape! expected a transformers Trainer state (`log_history`, `global_step`, `epoch`, …), found keys [\"results\"]"
            ]
        );
        let cut = run_items("{\"global_step\": 3, \"log_history\": [{\"step\": 1},\n{\"st");
        assert!(cut[0].starts_with("json! not valid JSON: EOF while parsing") && cut[0].contains("line 2"), "{cut:?}");
        assert_eq!(
            run_items(r#"{"log_history": {"a": 1}}"#),
            ["shape! expected the list of log entries at /log_history, found an object"]
        );
        assert_eq!(
            run_items(r#"{"log_history": null}"#),
            ["shape! expected the list of log entries at /log_history, found null"]
        );
        let twice = run_items(r#"{"global_step": 20, "log_history": [], "global_step": 21}"#);
        assert!(twice[0].starts_with("json! ") && twice[0].contains("key \"global_step\" appears twice"), "{twice:?}");
        // steps that are no step as trainer-state reads them are not the last step logged
        let row: Value = serde_json::from_str(
            &run_items(r#"{"log_history": [{"step": 4}, {"step": 1e3}, {"step": -1}, {"step": 5.0}]}"#)[0],
        )
        .unwrap();
        assert_eq!((row["log_entries"].clone(), row["last_logged_step"].clone()), (Value::from(4), Value::from(4)));
        // a document followed by more text is no state either
        assert!(run_items(r#"{"log_history": []} {}"#)[0].starts_with("json! "), "trailing text");
    }

    #[test]
    fn a_state_cut_short_keeps_the_entries_before_the_cut() {
        let got = items("{\"log_history\": [{\"step\": 1, \"loss\": 1},\n{\"step\": 2, \"lo");
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], "/log_history/0 step,loss");
        assert!(got[1].starts_with("! not valid JSON: EOF while parsing") && got[1].contains("line 2"), "{got:?}");
        assert!(got[1].ends_with("(the log entry before it is read)"), "{got:?}");
    }
}
