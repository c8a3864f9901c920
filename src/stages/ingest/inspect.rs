//! Inspect AI eval logs (PyPI `inspect-ai` 0.3, `inspect_ai/log/_recorders/eval.py` and
//! `json.py`), read into rows of fixed columns.
//!
//! A source's files may be `.eval` logs (a ZIP archive of `header.json`,
//! `samples/{id}_epoch_{n}.json`, `summaries.json`, `reductions.json` and `_journal/`; members
//! stored, deflated or, since 0.3.206, zstd-compressed) or `.json` logs (one document: the header's
//! keys plus `samples`). In a `.eval` log, `_source_line` names the ZIP member
//! (`header.json`, `samples/q1_epoch_1.json`); in a `.json` log, the JSON pointer of the record
//! (`/samples/3`). A problem inside a record is named by its JSON path in that member or record.
//!
//! - `inspect-evals`: one row per task × scorer × metric of the log's `results` (for the
//!   standard `evaluations` table): `eval_id`, `run_id`, `task`, `task_version` (text), `model`,
//!   `created` (ISO 8601 text, as written), `status` (`success`, `error`, `cancelled`, …),
//!   `error` (the message of a failed eval's `error`, else null),
//!   `total_samples`, `completed_samples`, `scorer` (the score's `name`), `reducer` (over epochs,
//!   null when none is named), `metric` (`accuracy`, `stderr`, …), `value` (Float64), `params`
//!   (JSON text of the metric's params), and the eval's own: `tags`, `metadata` (JSON text of
//!   the log's current ones, edits included, or else the eval's), `task_args`, `model_args`,
//!   and how it ran: `revision` (the git origin and commit it ran at), `packages` (versions),
//!   `config` (limit, epochs, …), `model_generate_config`, `dataset` (name, location, samples),
//!   `plan` (the solvers), `stats` (start and end times, tokens per model) and `extra` (the
//!   eval's other keys) (JSON text; each null when empty). A log without results (an eval that failed) gives one
//!   row whose `scorer` and `metric` are null, so that it is not lost unseen.
//! - `inspect-samples`: one row per sample × epoch (for `eval_samples`): `eval_id`, `task`,
//!   `model` (the log's), `sample_id` (its `id`, a string or an integer, as text), `epoch`,
//!   `target` (text, or JSON text of a list of targets), `scores` (JSON text, scorer → value:
//!   `{"match": "C"}`), `error` (its message, null when none), `total_time`, `working_time`
//!   (seconds), `input_tokens`, `output_tokens`, `total_tokens` (summed over the models used),
//!   `uuid`, `extra` (JSON text of the sample's `metadata`), `score_metadata` (JSON text,
//!   scorer → its score's `metadata`), `score_extra` (JSON text, scorer → its score's other
//!   keys: `reason`, …), `stop_reason` (the output's), `error_retries` (JSON text of the
//!   messages of the errors retried; their tracebacks left out, as the error's), `limit` (JSON text of the limit that stopped the
//!   sample: `{"type": "token", "limit": 100}`), `started_at`, `completed_at` (ISO 8601 text,
//!   as written), `other` (JSON text of the sample's other keys: `role_usage`, `turn_count`,
//!   `error_retries`, …; each null when empty), and, with `keep_text = true`, `input` (text, or
//!   JSON text of a list of messages), `output` (the completion), `score_answers` and
//!   `score_explanations` (JSON text, scorer → its score's `answer`, `explanation`: the
//!   model's text). A score's `history` (its edits) is left out: `value` is the current one.

use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use super::convert::{Target, json_text, whole_number};
use super::evals::{ShapeProblems, float_like, key_path, problem};
use super::files::InputFile;
use super::lenient;
use super::records::{self, Item};
use crate::core::error::{Error, Result};
use crate::core::report::Position;
use crate::core::spec::Format;

/// Columns of `inspect-evals`.
pub fn eval_columns() -> Vec<(String, Target)> {
    vec![
        ("eval_id".into(), Target::Str),
        ("run_id".into(), Target::Str),
        ("task".into(), Target::Str),
        ("task_version".into(), Target::Str),
        ("model".into(), Target::Str),
        ("created".into(), Target::Str),
        ("status".into(), Target::Str),
        ("error".into(), Target::Str),
        ("total_samples".into(), Target::Int64),
        ("completed_samples".into(), Target::Int64),
        ("scorer".into(), Target::Str),
        ("reducer".into(), Target::Str),
        ("metric".into(), Target::Str),
        ("value".into(), Target::Float64),
        ("params".into(), Target::Json),
        ("tags".into(), Target::Json),
        ("metadata".into(), Target::Json),
        ("task_args".into(), Target::Json),
        ("model_args".into(), Target::Json),
        ("revision".into(), Target::Json),
        ("packages".into(), Target::Json),
        ("config".into(), Target::Json),
        ("model_generate_config".into(), Target::Json),
        ("dataset".into(), Target::Json),
        ("plan".into(), Target::Json),
        ("stats".into(), Target::Json),
        ("extra".into(), Target::Json),
    ]
}

/// Keys of a log's `eval` that [`eval_rows`] gives columns of their own; it keeps the others
/// in `extra`.
const EVAL_KEYS: [&str; 15] = [
    "eval_id",
    "run_id",
    "task",
    "task_version",
    "model",
    "created",
    "tags",
    "metadata",
    "task_args",
    "model_args",
    "revision",
    "packages",
    "config",
    "model_generate_config",
    "dataset",
];

/// Columns of `inspect-samples`.
pub fn sample_columns(keep_text: bool) -> Vec<(String, Target)> {
    let mut c: Vec<(String, Target)> = vec![
        ("eval_id".into(), Target::Str),
        ("task".into(), Target::Str),
        ("model".into(), Target::Str),
        ("sample_id".into(), Target::Str),
        ("epoch".into(), Target::Int64),
        ("target".into(), Target::Text),
        ("scores".into(), Target::Json),
        ("error".into(), Target::Str),
        ("total_time".into(), Target::Float64),
        ("working_time".into(), Target::Float64),
        ("input_tokens".into(), Target::Int64),
        ("output_tokens".into(), Target::Int64),
        ("total_tokens".into(), Target::Int64),
        ("uuid".into(), Target::Str),
        ("extra".into(), Target::Json),
        ("score_metadata".into(), Target::Json),
        ("score_extra".into(), Target::Json),
        ("stop_reason".into(), Target::Str),
        ("error_retries".into(), Target::Json),
        ("limit".into(), Target::Json),
        ("started_at".into(), Target::Str),
        ("completed_at".into(), Target::Str),
        ("other".into(), Target::Json),
    ];
    if keep_text {
        c.push(("input".into(), Target::Text));
        c.push(("output".into(), Target::Str));
        c.push(("score_answers".into(), Target::Json));
        c.push(("score_explanations".into(), Target::Json));
    }
    c
}

/// Keys of a sample that [`sample_row`] gives columns of their own (or leaves out as texts,
/// [`SAMPLE_TEXT_KEYS`]); the others go to `other`.
const SAMPLE_KEYS: [&str; 15] = [
    "id",
    "error_retries",
    "stop_reason",
    "epoch",
    "target",
    "scores",
    "error",
    "total_time",
    "working_time",
    "model_usage",
    "uuid",
    "metadata",
    "limit",
    "started_at",
    "completed_at",
];

/// The first bytes of a ZIP archive (a local file header).
const ZIP_MAGIC: &[u8; 4] = b"PK\x03\x04";

/// Whether `path` looks like an Inspect log: a `.eval` file that is a ZIP archive with a
/// `header.json` or `_journal/start.json` member, or a `.json` file whose first kilobytes hold
/// Inspect's top-level `"version"` and `"eval"` keys (formats `inspect-evals` and
/// `inspect-samples`).
pub fn is_inspect_log(path: &Path) -> bool {
    match path.extension().and_then(|e| e.to_str()) {
        Some("eval") => std::fs::File::open(path)
            .ok()
            .and_then(|f| zip::ZipArchive::new(f).ok())
            .is_some_and(|z| z.index_for_name("header.json").or(z.index_for_name("_journal/start.json")).is_some()),
        Some("json") => {
            let mut head = vec![0u8; 4096];
            let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
            let head = String::from_utf8_lossy(&head[..n]);
            let start = head.trim_start();
            start.starts_with('{') && head.contains("\"eval\"") && head.contains("\"version\"")
        }
        _ => false,
    }
}

/// Keys of a sample that hold texts (the prompt, the conversation, the model's output and the
/// events of the run), left out of a sample's record unless the source keeps texts.
const SAMPLE_TEXT_KEYS: [&str; 7] = ["input", "messages", "output", "events", "attachments", "store", "events_data"];

/// Reads one Inspect log into `sink`, for a source of `format`.
///
/// `inspect-evals` records: the log's header (`{version, status, eval, results, …}` without
/// samples). `inspect-samples` records: `{"eval": {eval_id, task, model}, "sample": {…}}`,
/// the sample without its texts unless `keep_text` (then with its `input` and `output` only).
///
/// Errors: [`Error::Io`] for a file that cannot be read; [`Error::Format`] for a `.eval` file
/// that is no ZIP archive or has neither `header.json` nor `_journal/start.json`. A member that
/// is no JSON is an [`Item::Bad`] at the member.
pub fn read(
    format: Format,
    keep_text: bool,
    input: &InputFile,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<()> {
    let mut magic = [0u8; 4];
    let is_zip = std::fs::File::open(&input.path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map(|_| &magic == ZIP_MAGIC)
        .unwrap_or(false);
    if is_zip { read_eval(format, keep_text, input, sink) } else { read_json(format, keep_text, input, sink) }
}

/// The eval's identity a sample row carries.
fn eval_context(header: &Map<String, Value>) -> Value {
    let eval = header.get("eval").and_then(Value::as_object);
    let get = |k: &str| eval.and_then(|e| e.get(k)).cloned().unwrap_or(Value::Null);
    serde_json::json!({"eval_id": get("eval_id"), "task": get("task"), "model": get("model")})
}

/// A sample as its record: without texts (or with its input and output only), and its
/// scores without the model's text.
fn sample_record(context: &Value, mut sample: Map<String, Value>, keep_text: bool) -> Map<String, Value> {
    let mut kept = Map::new();
    if keep_text {
        kept.insert("input".into(), sample.get("input").cloned().unwrap_or(Value::Null));
        let completion = sample.get("output").and_then(|o| o.get("completion")).cloned().unwrap_or(Value::Null);
        kept.insert("output".into(), completion);
    }
    // why the model stopped (`stop`, `max_tokens`, …): no text of the model's; Inspect writes
    // it with the output's first choice (`ModelOutput.stop_reason` reads it there)
    let output = sample.get("output");
    let stop = output
        .and_then(|o| o.get("stop_reason"))
        .or_else(|| output.and_then(|o| o.get("choices")).and_then(|c| c.get(0)).and_then(|c| c.get("stop_reason")));
    if let Some(stop) = stop {
        kept.insert("stop_reason".into(), stop.clone());
    }
    // a retried error's message, without its traceback and the events it holds
    if let Some(Value::Array(retries)) = sample.get_mut("error_retries") {
        for r in retries.iter_mut() {
            let message = r.get("message").cloned().unwrap_or_else(|| Value::String(json_text(r)));
            *r = message;
        }
    }
    for k in SAMPLE_TEXT_KEYS {
        sample.shift_remove(k);
    }
    if let Some(Value::Object(scores)) = sample.get_mut("scores") {
        for s in scores.values_mut() {
            if let Value::Object(s) = s {
                if !keep_text {
                    s.shift_remove("answer");
                    s.shift_remove("explanation");
                }
                s.shift_remove("history");
            }
        }
    }
    sample.extend(kept);
    let mut r = Map::new();
    r.insert("eval".into(), context.clone());
    r.insert("sample".into(), Value::Object(sample));
    r
}

fn read_eval(
    format: Format,
    keep_text: bool,
    input: &InputFile,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<()> {
    let file = std::fs::File::open(&input.path).map_err(|e| Error::io(&input.path, e))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| Error::format(&input.rel, format!("expected an Inspect .eval log (a ZIP archive): {e}")))?;
    // a name the archive lists twice: the ZIP reader keeps one of its members, other readers
    // may keep the other, so neither is read (as a JSON key written twice is refused)
    let twice = names_listed_twice(&input.path).map_err(|e| Error::io(&input.path, e))?;
    let listed_twice = |name: &str| twice.iter().find(|(n, _)| n == name).map(|(_, times)| *times);
    let said_twice = |name: &str, times: usize| Item::Bad {
        at: Position::Pointer(name.into()),
        rule: "archive",
        message: format!(
            "the archive lists ZIP member {name} {times} times: ZIP readers keep one of them, and which one \
             differs, so none is read; keep one (the log was written to again, or edited)"
        ),
        raw: None,
    };
    // the header of a finished log; a log still being written has only the journal's start
    let header_member = ["header.json", "_journal/start.json"].into_iter().find(|m| zip.index_for_name(m).is_some());
    let Some(header_member) = header_member else {
        return Err(Error::format(
            &input.rel,
            "expected an Inspect .eval log with a header.json member (or _journal/start.json), found neither",
        ));
    };
    if let Some(times) = listed_twice(header_member) {
        return sink(said_twice(header_member, times));
    }
    let mut header: Option<Map<String, Value>> = None;
    let mut failed: Option<Item> = None;
    read_member(&mut zip, &input.rel, header_member, &mut |item| {
        match item {
            Item::Record(r, _) => header = Some(r),
            bad => failed = Some(bad),
        }
        Ok(())
    })?;
    if format == Format::InspectEvals {
        if header_member != "header.json" {
            return Err(Error::format(
                &input.rel,
                "expected a header.json member (the log of a finished eval), found only _journal/start.json: the eval \
                 is still running or was stopped before it wrote its results",
            ));
        }
        return match (header, failed) {
            (Some(h), _) => sink(Item::Record(h, Position::Pointer(header_member.into()))),
            (None, Some(bad)) => sink(bad),
            (None, None) => Ok(()),
        };
    }
    let context = match (&header, failed) {
        (Some(h), _) => eval_context(h),
        (None, Some(bad)) => return sink(bad),
        (None, None) => Value::Null,
    };
    let names: Vec<String> = zip
        .file_names()
        .filter(|n| n.starts_with("samples/") && n.ends_with(".json"))
        .map(str::to_string)
        .collect::<Vec<_>>();
    // archive order is the order the samples finished: by name instead, for the same rows from
    // the same samples however they were written
    let mut names = names;
    names.sort();
    if let Some(missing) = header.as_ref().and_then(|h| samples_missing(h, &names)) {
        sink(Item::Bad { at: Position::Pointer("samples/".into()), rule: "archive", message: missing, raw: None })?;
    }
    for name in names {
        if let Some(times) = listed_twice(&name) {
            sink(said_twice(&name, times))?;
            continue;
        }
        read_member(&mut zip, &input.rel, &name, &mut |item| match item {
            Item::Record(r, at) => sink(Item::Record(sample_record(&context, r, keep_text), at)),
            bad => sink(bad),
        })?;
    }
    Ok(())
}

/// Why a finished log's archive holds fewer sample members than its header counts
/// (`results.total_samples`), naming the missing members where the header's sample ids and
/// epochs name them; `None` when it holds them all, or the header does not say (a log that
/// did not finish, or was written with `log_samples` off).
fn samples_missing(header: &Map<String, Value>, names: &[String]) -> Option<String> {
    let eval = header.get("eval")?;
    if header.get("status")?.as_str()? != "success"
        || eval.pointer("/config/log_samples").and_then(Value::as_bool) == Some(false)
    {
        return None;
    }
    let total = header.get("results")?.get("total_samples")?.as_u64()?;
    if names.len() as u64 >= total {
        return None;
    }
    // the members Inspect names `samples/{id}_epoch_{n}.json`, when they are as many
    let epochs = eval.pointer("/config/epochs").and_then(Value::as_u64).unwrap_or(1);
    let ids: Vec<String> = eval
        .pointer("/dataset/sample_ids")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)).collect())
        .unwrap_or_default();
    let expected: Vec<String> =
        ids.iter().flat_map(|id| (1..=epochs).map(move |n| format!("samples/{id}_epoch_{n}.json"))).collect();
    let missing: Vec<&str> = expected.iter().filter(|e| !names.contains(e)).map(String::as_str).collect();
    let named = if expected.len() as u64 == total && !missing.is_empty() {
        format!(": {} missing", crate::core::report::first_names(&missing, 5))
    } else {
        String::new()
    };
    Some(format!(
        "the log's header counts {total} samples (results.total_samples) and the archive holds {} sample member{}{named}; \
         the archive was cut short or edited, so its other samples are not in the table",
        names.len(),
        if names.len() == 1 { "" } else { "s" }
    ))
}

/// The names the central directory of ZIP archive `path` lists more than once, each with how
/// many times. (The zip crate keeps one entry per name, without a word: it cannot say this.)
/// An archive whose directory cannot be found is said to list none: the ZIP reader names
/// what is wrong with it.
fn names_listed_twice(path: &Path) -> std::io::Result<Vec<(String, usize)>> {
    use std::io::{Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    // the end of central directory record: 22 bytes and a comment of up to 65,535
    let tail_len = len.min(22 + 65_535);
    f.seek(SeekFrom::Start(len - tail_len))?;
    let mut tail = vec![0u8; tail_len as usize];
    f.read_exact(&mut tail)?;
    let Some(eocd) = (0..tail.len().saturating_sub(21)).rev().find(|&i| tail[i..].starts_with(b"PK\x05\x06")) else {
        return Ok(Vec::new());
    };
    let u16_at = |b: &[u8], i: usize| u16::from_le_bytes([b[i], b[i + 1]]) as u64;
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]) as u64;
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    let eocd_at = len - tail_len + eocd as u64;
    let mut size = u32_at(&tail, eocd + 12);
    let mut end = eocd_at;
    // ZIP64: the sizes are in the ZIP64 record its locator (20 bytes before) points at
    if (size == 0xFFFF_FFFF || u16_at(&tail, eocd + 10) == 0xFFFF)
        && eocd >= 20
        && tail[eocd - 20..].starts_with(b"PK\x06\x07")
    {
        let at = u64_at(&tail, eocd - 20 + 8);
        let mut record = [0u8; 56];
        f.seek(SeekFrom::Start(at))?;
        f.read_exact(&mut record)?;
        if !record.starts_with(b"PK\x06\x06") {
            return Ok(Vec::new());
        }
        size = u64_at(&record, 40);
        end = at;
    }
    // the central directory ends where the end record starts (an archive may have bytes before it)
    let Some(start) = end.checked_sub(size) else { return Ok(Vec::new()) };
    f.seek(SeekFrom::Start(start))?;
    let mut dir = Vec::new();
    f.take(size).read_to_end(&mut dir)?;
    let mut counts: std::collections::BTreeMap<&[u8], usize> = std::collections::BTreeMap::new();
    let mut i = 0;
    while i + 46 <= dir.len() && dir[i..].starts_with(b"PK\x01\x02") {
        let (n, m, k) = (u16_at(&dir, i + 28) as usize, u16_at(&dir, i + 30) as usize, u16_at(&dir, i + 32) as usize);
        let Some(name) = dir.get(i + 46..i + 46 + n) else { break };
        *counts.entry(name).or_default() += 1;
        i += 46 + n + m + k;
    }
    Ok(counts
        .into_iter()
        .filter(|(_, times)| *times > 1)
        .map(|(name, times)| (String::from_utf8_lossy(name).into_owned(), times))
        .collect())
}

/// Reads ZIP member `name` of `rel` as one JSON record at pointer `name`.
fn read_member<R: std::io::Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
    rel: &str,
    name: &str,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<()> {
    let mut bytes = Vec::new();
    let read = zip.by_name(name).map_err(std::io::Error::other).and_then(|mut m| m.read_to_end(&mut bytes));
    if let Err(e) = read {
        return sink(Item::Bad {
            at: Position::Pointer(name.into()),
            rule: "archive",
            message: format!("ZIP member {name} cannot be read: {e}"),
            raw: None,
        });
    }
    let reader: Box<dyn std::io::BufRead + Send> = Box::new(std::io::Cursor::new(bytes));
    records::json_record(reader, &format!("{rel}:{name}"), &mut |item| {
        sink(match item {
            Item::Record(r, _) => Item::Record(r, Position::Pointer(name.into())),
            Item::Bad { rule, message, raw, .. } => Item::Bad {
                at: Position::Pointer(name.into()),
                rule,
                message: format!("ZIP member {name}: {message}"),
                raw,
            },
        })
    })
}

fn read_json(
    format: Format,
    keep_text: bool,
    input: &InputFile,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<()> {
    if format == Format::InspectEvals {
        // the whole document but its samples, which can hold most of its bytes
        return records::json_record(super::files::open(input)?, &input.rel, &mut |item| match item {
            Item::Record(mut r, at) => {
                r.shift_remove("samples");
                r.shift_remove("reductions");
                sink(Item::Record(r, at))
            }
            bad => sink(bad),
        });
    }
    let mut context = Value::Null;
    records::json(super::files::open(input)?, &input.rel, "/eval", &mut |item| {
        if let Item::Record(r, _) = item {
            context = eval_context(&Map::from_iter([("eval".to_string(), Value::Object(r))]));
        }
        Ok(())
    })?;
    let mut samples = 0u64;
    let result = records::json(super::files::open(input)?, &input.rel, "/samples", &mut |item| {
        samples += 1;
        match item {
            Item::Record(r, at) => sink(Item::Record(sample_record(&context, r, keep_text), at)),
            bad => sink(bad),
        }
    });
    // a log written without samples (`--no-log-samples`) has no `samples` key: no sample rows
    match result {
        Err(Error::Config { .. }) if samples == 0 => Ok(()),
        other => other,
    }
}

/// Rows of a log's header: one per scorer × metric.
///
/// Errors: the header is no Inspect log's (no `eval` object), or its `results` do not have
/// Inspect's shape (each problem at its JSON path).
pub fn eval_rows(h: &Map<String, Value>) -> Result<Vec<Map<String, Value>>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let Some(eval) = h.get("eval").and_then(Value::as_object) else {
        let keys: Vec<&str> = h.keys().map(String::as_str).take(5).collect();
        problems.push((
            "$.eval".into(),
            format!("expected an Inspect log header (`version`, `status`, `eval`, `results`), found keys {keys:?}"),
        ));
        return Err(problems);
    };
    let text = |v: Option<&Value>| match v {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(other) => Value::String(json_text(other)),
    };
    let mut base = Map::new();
    for k in ["eval_id", "run_id", "task", "task_version", "model", "created"] {
        base.insert(k.into(), text(eval.get(k)));
    }
    base.insert("status".into(), text(h.get("status")));
    // an eval that failed says why in its `error` (`message`, `traceback`): the message is kept
    let error = match h.get("error") {
        Some(Value::Object(e)) => text(e.get("message")),
        other => text(other),
    };
    base.insert("error".into(), error);
    // what tells evals of one task and model apart (a checkpoint in `metadata`, a tag, an
    // argument): the log's current tags and metadata (Inspect 0.3.2xx, with later edits), or
    // the eval's as it ran
    let non_empty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) if m.is_empty() => None,
        Some(Value::Array(a)) if a.is_empty() => None,
        Some(v) => Some(v.clone()),
    };
    for k in ["tags", "metadata"] {
        // the log's own, when it has them, are the eval's with every later edit: empty there
        // is all removed, not unknown
        let current = match h.get(k) {
            None | Some(Value::Null) => non_empty(eval.get(k)),
            given => non_empty(given),
        };
        base.insert(k.into(), current.unwrap_or(Value::Null));
    }
    for k in ["task_args", "model_args", "revision", "packages", "config", "model_generate_config", "dataset"] {
        base.insert(k.into(), non_empty(eval.get(k)).unwrap_or(Value::Null));
    }
    // how the eval ran: its solvers (`plan`), its times and tokens (`stats`), and the eval's
    // keys no column holds
    for k in ["plan", "stats"] {
        base.insert(k.into(), non_empty(h.get(k)).unwrap_or(Value::Null));
    }
    let extra: Map<String, Value> =
        eval.iter().filter(|(k, _)| !EVAL_KEYS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    base.insert("extra".into(), non_empty(Some(&Value::Object(extra))).unwrap_or(Value::Null));
    let results = match h.get("results") {
        None | Some(Value::Null) => None,
        Some(Value::Object(r)) => Some(r),
        Some(other) => {
            problem(&mut problems, "$.results".into(), "an object", other);
            return Err(problems);
        }
    };
    for k in ["total_samples", "completed_samples"] {
        let v = results.and_then(|r| r.get(k)).cloned().unwrap_or(Value::Null);
        if !v.is_null() && whole_number(&v).is_none_or(|n| n < 0) {
            problem(&mut problems, format!("$.results.{k}"), "a count (a whole number of at least 0)", &v);
        }
        base.insert(k.into(), v);
    }
    let mut rows = Vec::new();
    let scores = match results.and_then(|r| r.get("scores")) {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(a)) => a.as_slice(),
        Some(other) => {
            problem(&mut problems, "$.results.scores".into(), "a list of scores", other);
            &[][..]
        }
    };
    for (i, s) in scores.iter().enumerate() {
        let at = format!("$.results.scores[{i}]");
        let Value::Object(s) = s else {
            problem(&mut problems, at, "a score object (`name`, `scorer`, `metrics`)", s);
            continue;
        };
        let metrics = match s.get("metrics") {
            Some(Value::Object(m)) => m,
            other => {
                problem(&mut problems, format!("{at}.metrics"), "an object of metrics", other.unwrap_or(&Value::Null));
                continue;
            }
        };
        for (key, m) in metrics {
            let mat = key_path(&format!("{at}.metrics"), key);
            let Value::Object(m) = m else {
                problem(&mut problems, mat, "a metric object (`name`, `value`, `params`)", m);
                continue;
            };
            let value = m.get("value").cloned().unwrap_or(Value::Null);
            if !float_like(&value) {
                problem(&mut problems, format!("{mat}.value"), "a number", &value);
            }
            let mut row = base.clone();
            row.insert("scorer".into(), text(s.get("name")));
            row.insert("reducer".into(), text(s.get("reducer")));
            row.insert("metric".into(), text(m.get("name").or(Some(&Value::String(key.clone())))));
            row.insert("value".into(), value);
            let params = m.get("params").cloned().unwrap_or(Value::Null);
            let params = if params.as_object().is_some_and(Map::is_empty) { Value::Null } else { params };
            row.insert("params".into(), params);
            rows.push(row);
        }
    }
    if rows.is_empty() {
        let mut row = base;
        for k in ["scorer", "reducer", "metric", "value", "params"] {
            row.insert(k.into(), Value::Null);
        }
        rows.push(row);
    }
    if problems.is_empty() { Ok(rows) } else { Err(problems) }
}

/// Row of a sample record (`{"eval": {…}, "sample": {…}}`, see [`read`]); problems are named
/// by their path in the sample.
///
/// Errors: the sample has no `id` or `epoch`, its `epoch` is no integer ≥ 1, a token count is
/// no integer, or a time no number.
pub fn sample_row(r: &Map<String, Value>, keep_text: bool) -> Result<Map<String, Value>, ShapeProblems> {
    let mut problems = ShapeProblems::new();
    let empty = Map::new();
    let s = r.get("sample").and_then(Value::as_object).unwrap_or(&empty);
    let eval = r.get("eval").and_then(Value::as_object).unwrap_or(&empty);
    let mut row = Map::new();
    for k in ["eval_id", "task", "model"] {
        row.insert(k.into(), eval.get(k).cloned().unwrap_or(Value::Null));
    }
    let id = match s.get("id") {
        Some(Value::String(t)) if lenient::special(t).is_none() => Value::String(t.clone()),
        Some(v @ Value::Number(_)) if whole_number(v).is_some() || v.is_u64() => Value::String(json_text(v)),
        other => {
            problem(
                &mut problems,
                "$.id".into(),
                "a sample id (a string or an integer)",
                other.unwrap_or(&Value::Null),
            );
            Value::Null
        }
    };
    row.insert("sample_id".into(), id);
    let epoch = s.get("epoch").cloned().unwrap_or(Value::Null);
    if whole_number(&epoch).is_none_or(|e| e < 1) {
        problem(&mut problems, "$.epoch".into(), "an epoch (an integer of at least 1)", &epoch);
    }
    row.insert("epoch".into(), epoch);
    let target = match s.get("target") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(t)) => Value::String(t.clone()),
        Some(other) => Value::String(json_text(other)),
    };
    row.insert("target".into(), target);
    // each scorer's value, and its metadata, answer and explanation where it has one
    // and the score's other keys (`reason`, …)
    let mut parts: [Option<Map<String, Value>>; 5] = [None, None, None, None, None];
    const SCORE_KEYS: [&str; 5] = ["value", "metadata", "answer", "explanation", "history"];
    match s.get("scores") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            parts[0] = Some(Map::new());
            for (scorer, score) in m {
                for (i, k) in SCORE_KEYS[..4].iter().enumerate() {
                    let v = score.get(*k).cloned().unwrap_or(Value::Null);
                    let empty = v.is_null() || v.as_object().is_some_and(Map::is_empty);
                    if i == 0 || !empty {
                        parts[i].get_or_insert_with(Map::new).insert(scorer.clone(), v);
                    }
                }
                let rest: Map<String, Value> = score
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(k, v)| !SCORE_KEYS.contains(&k.as_str()) && !v.is_null())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if !rest.is_empty() {
                    parts[4].get_or_insert_with(Map::new).insert(scorer.clone(), Value::Object(rest));
                }
            }
        }
        Some(other) => problem(&mut problems, "$.scores".into(), "an object of scores", other),
    }
    let [values, score_metadata, answers, explanations, score_extra] =
        parts.map(|p| p.map(Value::Object).unwrap_or(Value::Null));
    row.insert("scores".into(), values);
    let error = match s.get("error") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::Object(e)) => e.get("message").cloned().unwrap_or_else(|| Value::String(json_text(&s["error"]))),
        Some(Value::String(e)) => Value::String(e.clone()),
        Some(other) => Value::String(json_text(other)),
    };
    row.insert("error".into(), error);
    for k in ["total_time", "working_time"] {
        let v = s.get(k).cloned().unwrap_or(Value::Null);
        if !float_like(&v) {
            problem(&mut problems, format!("$.{k}"), "a number of seconds", &v);
        }
        row.insert(k.into(), v);
    }
    let mut totals: [Option<i64>; 3] = [None, None, None];
    if let Some(usage) = s.get("model_usage") {
        match usage {
            Value::Object(models) => {
                for (model, u) in models {
                    for (i, k) in ["input_tokens", "output_tokens", "total_tokens"].iter().enumerate() {
                        let Some(v) = u.get(*k).filter(|v| !v.is_null()) else { continue };
                        match whole_number(v).filter(|n| *n >= 0) {
                            Some(n) => totals[i] = Some(totals[i].unwrap_or(0).saturating_add(n)),
                            None => problem(
                                &mut problems,
                                format!("{}.{k}", key_path("$.model_usage", model)),
                                "a count of tokens (an integer ≥ 0)",
                                v,
                            ),
                        }
                    }
                }
            }
            Value::Null => {}
            other => problem(&mut problems, "$.model_usage".into(), "an object (model → usage)", other),
        }
    }
    for (i, k) in ["input_tokens", "output_tokens", "total_tokens"].iter().enumerate() {
        row.insert((*k).into(), totals[i].map(Value::from).unwrap_or(Value::Null));
    }
    row.insert("uuid".into(), s.get("uuid").cloned().unwrap_or(Value::Null));
    let metadata = s.get("metadata").cloned().unwrap_or(Value::Null);
    let metadata = if metadata.as_object().is_some_and(Map::is_empty) { Value::Null } else { metadata };
    row.insert("extra".into(), metadata);
    row.insert("score_metadata".into(), score_metadata);
    row.insert("score_extra".into(), score_extra);
    let stop = s.get("stop_reason").cloned().unwrap_or(Value::Null);
    if !matches!(stop, Value::Null | Value::String(_)) {
        problem(&mut problems, "$.output.stop_reason".into(), "a string", &stop);
    }
    row.insert("stop_reason".into(), stop);
    let retries = s.get("error_retries").cloned().unwrap_or(Value::Null);
    let retries = if retries.as_array().is_some_and(Vec::is_empty) { Value::Null } else { retries };
    row.insert("error_retries".into(), retries);
    row.insert("limit".into(), s.get("limit").cloned().unwrap_or(Value::Null));
    for k in ["started_at", "completed_at"] {
        let v = s.get(k).cloned().unwrap_or(Value::Null);
        if !matches!(v, Value::Null | Value::String(_)) {
            problem(&mut problems, format!("$.{k}"), "a time (ISO 8601 text)", &v);
        }
        row.insert(k.into(), v);
    }
    let other: Map<String, Value> = s
        .iter()
        .filter(|(k, _)| !SAMPLE_KEYS.contains(&k.as_str()) && !SAMPLE_TEXT_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    row.insert("other".into(), if other.is_empty() { Value::Null } else { Value::Object(other) });
    if keep_text {
        row.insert("score_answers".into(), answers);
        row.insert("score_explanations".into(), explanations);
        let input = match s.get("input") {
            None | Some(Value::Null) => Value::Null,
            Some(Value::String(t)) => Value::String(t.clone()),
            Some(other) => Value::String(json_text(other)),
        };
        row.insert("input".into(), input);
        let output = s.get("output").cloned().unwrap_or(Value::Null);
        if !matches!(output, Value::Null | Value::String(_)) {
            problem(&mut problems, "$.output.completion".into(), "a string", &output);
        }
        row.insert("output".into(), output);
    }
    if problems.is_empty() { Ok(row) } else { Err(problems) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Map<String, Value> {
        serde_json::from_str::<Value>(s).unwrap().as_object().unwrap().clone()
    }

    #[test]
    fn a_header_gives_a_row_per_scorer_and_metric() {
        let h = obj(
            r#"{"version": 2, "status": "success", "eval": {"eval_id": "e1", "run_id": "r1", "task": "arith", "task_version": 0, "model": "mockllm/model", "created": "2026-01-01T00:00:00+00:00"},
                "results": {"total_samples": 4, "completed_samples": 4, "scores": [
                  {"name": "match", "scorer": "match", "metrics": {"accuracy": {"name": "accuracy", "value": 0.5, "params": {}}, "stderr": {"name": "stderr", "value": 0.25}}},
                  {"name": "includes", "scorer": "includes", "reducer": "mean", "metrics": {"accuracy": {"name": "accuracy", "value": 1.0}}}]}}"#,
        );
        let rows = eval_rows(&h).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(
            (rows[1]["scorer"].as_str(), rows[1]["metric"].as_str(), &rows[1]["value"]),
            (Some("match"), Some("stderr"), &Value::from(0.25))
        );
        assert_eq!((rows[2]["reducer"].as_str(), rows[0]["task_version"].as_str()), (Some("mean"), Some("0")));
        // a failed eval: one row, no scorer
        let rows = eval_rows(&obj(r#"{"status": "error", "eval": {"eval_id": "e2"}}"#)).unwrap();
        assert_eq!((rows.len(), &rows[0]["metric"]), (1, &Value::Null));
        let e = eval_rows(&obj(r#"{"eval": {}, "results": {"scores": [{"metrics": {"acc": {"value": "high"}}}, 3]}}"#))
            .unwrap_err();
        assert_eq!(
            e.into_iter().map(|(p, m)| format!("{p}: {m}")).collect::<Vec<_>>(),
            vec![
                "$.results.scores[0].metrics.acc.value: expected a number, found string \"high\"",
                "$.results.scores[1]: expected a score object (`name`, `scorer`, `metrics`), found number 3",
            ]
        );
    }

    #[test]
    fn how_the_eval_ran_is_kept_beside_each_score() {
        let doc = r#"{"status": "success", "eval": {"eval_id": "e", "task": "arith", "model": "m",
            "revision": {"type": "git", "origin": "https://example.org/evals.git", "commit": "9f3c2e1"},
            "packages": {"inspect_ai": "0.3.285"}, "config": {"epochs": 2, "limit": 10},
            "model_generate_config": {}, "dataset": {"name": "arith", "samples": 10}, "task_file": "arith.py"},
            "plan": {"steps": [{"solver": "generate"}]},
            "stats": {"started_at": "2026-03-15T09:00:00+00:00", "completed_at": "2026-03-15T09:01:00+00:00"},
            "results": {"scores": [{"name": "match", "scorer": "match", "metrics": {"accuracy": {"name": "accuracy", "value": 0.5}}}]}}"#;
        let rows = eval_rows(&obj(doc)).unwrap();
        let got = ["revision", "packages", "config", "model_generate_config", "dataset", "plan", "stats", "extra"]
            .map(|k| rows[0][k].to_string());
        assert!(got[0].contains(r#""commit":"9f3c2e1""#), "{}", got[0]);
        assert_eq!(got[1..3], [r#"{"inspect_ai":"0.3.285"}"#, r#"{"epochs":2,"limit":10}"#]);
        // empty is null, as for the other JSON columns
        assert_eq!(got[3], "null");
        assert_eq!(got[4], r#"{"name":"arith","samples":10}"#);
        assert!(got[6].contains("09:01:00"), "{}", got[6]);
        // the eval's keys no column holds
        assert_eq!(got[7], r#"{"task_file":"arith.py"}"#);
    }

    #[test]
    fn tags_and_metadata_are_the_logs_with_its_edits() {
        let eval = r#""eval": {"eval_id": "e", "tags": ["a"], "metadata": {"ckpt": 1}, "task_args": {"n": 2}, "model_args": {}}"#;
        let got = |top: &str| {
            let rows = eval_rows(&obj(&format!("{{{top}{eval}}}"))).unwrap();
            ["tags", "metadata", "task_args", "model_args"].map(|k| rows[0][k].to_string())
        };
        // an older log: the eval's own
        assert_eq!(got(""), ["[\"a\"]", "{\"ckpt\":1}", "{\"n\":2}", "null"]);
        assert_eq!(got(r#""tags": null, "#), ["[\"a\"]", "{\"ckpt\":1}", "{\"n\":2}", "null"]);
        // edited: the log's, and removed all when empty
        assert_eq!(got(r#""tags": ["b"], "metadata": {}, "#), ["[\"b\"]", "null", "{\"n\":2}", "null"]);
        assert_eq!(got(r#""tags": [], "metadata": {"ckpt": 3}, "#), ["null", "{\"ckpt\":3}", "{\"n\":2}", "null"]);
    }

    #[test]
    fn a_sample_keeps_ids_scores_and_usage_without_texts() {
        let ctx = serde_json::json!({"eval_id": "e1", "task": "arith", "model": "m"});
        let sample = obj(r#"{"id": 2, "epoch": 1, "input": "Say hi", "target": ["hi", "hello"], "messages": [],
                "scores": {"match": {"value": "I", "answer": "hey", "explanation": "hey!", "history": []},
                           "judge": {"value": 0.5, "metadata": {"grader": "g"}, "history": [{"value": 1}], "reason": "refusal"}},
                "metadata": {}, "output": {"completion": "hey", "choices": [{"message": {}, "stop_reason": "max_tokens"}]},
                "model_usage": {"a": {"input_tokens": 2, "output_tokens": 3, "total_tokens": 5}, "b": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}},
                "total_time": 0.5, "working_time": 0.25, "uuid": "u", "limit": {"type": "token", "limit": 100},
                "started_at": "2026-12-07T09:37:31+00:00", "completed_at": "2026-12-07T09:37:32+00:00",
                "turn_count": 1, "error_retries": [{"message": "boom", "traceback": "T", "traceback_ansi": "T"}],
                "store": {"k": "v"}}"#);
        let r = sample_record(&ctx, sample.clone(), false);
        assert!(!json_text(&Value::Object(r.clone())).contains("hey"));
        let row = sample_row(&r, false).unwrap();
        assert_eq!((row["sample_id"].as_str(), row["target"].as_str()), (Some("2"), Some(r#"["hi","hello"]"#)));
        assert_eq!(row["scores"], serde_json::json!({"match": "I", "judge": 0.5}));
        assert_eq!(row["score_metadata"], serde_json::json!({"judge": {"grader": "g"}}));
        assert_eq!((&row["input_tokens"], &row["total_tokens"]), (&Value::from(3), &Value::from(7)));
        assert_eq!(row["limit"], serde_json::json!({"type": "token", "limit": 100}));
        assert_eq!(row["completed_at"].as_str(), Some("2026-12-07T09:37:32+00:00"));
        // every key of the sample has a column, or is a text left out
        assert_eq!(row["other"], serde_json::json!({"turn_count": 1}));
        assert_eq!(row["score_extra"], serde_json::json!({"judge": {"reason": "refusal"}}));
        assert_eq!(
            (row["stop_reason"].as_str(), &row["error_retries"]),
            (Some("max_tokens"), &serde_json::json!(["boom"]))
        );
        assert!(!json_text(&Value::Object(row.clone())).contains("\"T\""));
        assert!(row.get("output").is_none() && row.get("score_answers").is_none());
        let row = sample_row(&sample_record(&ctx, sample, true), true).unwrap();
        assert_eq!((row["input"].as_str(), row["output"].as_str()), (Some("Say hi"), Some("hey")));
        assert_eq!(row["score_answers"], serde_json::json!({"match": "hey"}));
        assert_eq!(row["score_explanations"], serde_json::json!({"match": "hey!"}));
        assert_eq!(row["other"], serde_json::json!({"turn_count": 1}));
        // a sample without those keys has nulls
        let row = sample_row(&sample_record(&ctx, obj(r#"{"id": 1, "epoch": 1}"#), true), true).unwrap();
        for k in [
            "scores",
            "score_metadata",
            "score_extra",
            "stop_reason",
            "error_retries",
            "limit",
            "other",
            "score_answers",
            "score_explanations",
        ] {
            assert_eq!(row[k], Value::Null, "{k}");
        }
        let e = sample_row(&sample_record(&ctx, obj(r#"{"id": 1.5, "epoch": 0}"#), false), false).unwrap_err();
        assert_eq!(
            e.into_iter().map(|(p, m)| format!("{p}: {m}")).collect::<Vec<_>>(),
            vec![
                "$.id: expected a sample id (a string or an integer), found number 1.5",
                "$.epoch: expected an epoch (an integer of at least 1), found number 0",
            ]
        );
    }
}
