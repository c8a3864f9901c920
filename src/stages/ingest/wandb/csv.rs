//! CSV exports of W&B: the UI's runs table and chart panels, `api.runs()` dumps and
//! `run.history()` / `scan_history()` dumps.
//!
//! In: a CSV file (RFC 4180, multi-line cells allowed) and its header. Out: the flavour
//! ([`detect`]) and the rows it yields: runs (UI table, API dump) or long history rows (history
//! dump, chart panel). Cells are typed as W&B and pandas write them: numbers (`1.0`, `1e-08`,
//! `nan`), `True`/`False`/`true`/`false`, `None`, Python or JSON containers (`{'runtime': 1}`,
//! `["a","b"]`), anything else is text; an empty cell is a value that was not logged. A column
//! with an empty header (or `Unnamed: 0`) is a pandas index and is not read.

use serde_json::{Map, Value};

use super::rows::{self, Record, RunKey};
use super::{Out, Plan, pylit};
use crate::core::error::{Error, Result};
use crate::core::report::Position;

/// The CSV flavours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsvKind {
    /// UI "Export CSV" of the runs table (`Name`, `State`, …).
    UiRuns,
    /// A dump of `wandb.Api().runs()` (one row per run).
    ApiRuns,
    /// A dump of `run.history()` or `run.scan_history()` (one row per step).
    History,
    /// UI "Export CSV" of a line-chart panel.
    Chart,
}

const RUN_MARKERS: [&str; 15] = [
    "name",
    "run_name",
    "display_name",
    "displayName",
    "id",
    "run_id",
    "state",
    "createdAt",
    "created_at",
    "config",
    "summary",
    "tags",
    "group",
    "job_type",
    "url",
];

fn is_index(h: &str) -> bool {
    h.is_empty() || h.starts_with("Unnamed: ")
}

/// Tells the flavour of a CSV export from its header. A header that fits both a runs dump and
/// several runs' history (`_step` beside `run_id`/`name` and no other run column) is read as
/// what the source's `table` asks for.
///
/// Errors: a message listing the columns and the flavours runpack knows.
pub fn detect(header: &[String], table: super::WandbTable) -> std::result::Result<CsvKind, String> {
    let cols: Vec<&str> = header.iter().map(String::as_str).filter(|h| !is_index(h)).collect();
    // (a column without a name after the first, empty in every row or not, does not hide
    // the flavour: a value under it is a bad row)
    let metrics: Vec<&String> = header.iter().skip(1).filter(|h| !is_index(h)).collect();
    if !metrics.is_empty() && metrics.iter().all(|h| h.contains(" - ")) && !is_index(&header[0]) {
        return Ok(CsvKind::Chart);
    }
    if header.first().map(String::as_str) == Some("Name") {
        return Ok(CsvKind::UiRuns);
    }
    // a `_step` column with nothing of a run but whose it is (`run_id`, `name`) is history:
    // several runs' `run.history()` in one file; a runs dump flattens its summary's `_step`
    // beside run columns such as `state`
    let identity = ["name", "run_name", "display_name", "displayName", "id", "run_id"];
    if cols.contains(&"_step")
        && !cols.iter().any(|c| RUN_MARKERS.contains(c) && !identity.contains(c))
        && table != super::WandbTable::Runs
    {
        return Ok(CsvKind::History);
    }
    if cols.iter().filter(|c| RUN_MARKERS.contains(c)).count() >= 2 {
        return Ok(CsvKind::ApiRuns);
    }
    if cols.contains(&"_runtime") && cols.contains(&"_timestamp") {
        return Ok(CsvKind::History);
    }
    let shown: Vec<&str> = cols.iter().take(8).copied().collect();
    Err(format!(
        "cannot tell which W&B export this CSV is (columns: {}{}): expected a runs-table export (first column \
         `Name`), a chart-panel export (`<run> - <metric>` columns), an api.runs() dump (`name`/`id` with \
         `state`, `config`, `summary`, …) or a history dump (`_step`); read other CSV files, such as a W&B \
         Table export, with format = \"csv\"",
        shown.join(", "),
        if cols.len() > 8 { ", …" } else { "" }
    ))
}

/// Types one cell of a runs table (config, summary, metadata columns): a number only in the
/// spellings Python and JavaScript write (`written_as_number`), so that `1.10` (a version)
/// stays text.
pub fn cell(s: &str) -> Value {
    typed(s, false)
}

/// Types one metric cell of a history or chart-panel export: a number also with the trailing
/// zeros of pandas' `float_format` (`0.5000`), which every value of such a column has.
pub fn metric_cell(s: &str) -> Value {
    typed(s, true)
}

fn typed(s: &str, trailing_zeros: bool) -> Value {
    let t = s.trim();
    match t {
        "" | "None" | "null" => return Value::Null,
        "True" | "true" => return Value::Bool(true),
        "False" | "false" => return Value::Bool(false),
        _ => {}
    }
    if pylit::special_number(t)
        && let Some(n) = pylit::number(t)
    {
        return n;
    }
    if written_as_number(t, trailing_zeros)
        && let Some(n) = pylit::number(t)
    {
        // a number beyond the 64-bit float range (`1e400`) stays as written, not infinite
        let infinite = [f64::INFINITY, f64::NEG_INFINITY].iter().any(|&i| n == pylit::nonfinite(i));
        return if infinite { Value::String(s.to_string()) } else { n };
    }
    if pylit::looks_like_container(t)
        && let Ok(v) = pylit::parse(t)
    {
        return v;
    }
    Value::String(s.to_string())
}

/// True when `t` is a number as Python's `repr` and JavaScript's `String()` write one (what
/// pandas and the W&B UI put in their CSV files): an optional `-`, no leading zeros, a
/// fraction that ends in a digit other than 0 unless it is `.0` (any fraction with
/// `trailing_zeros`, as pandas' `float_format` writes them), an exponent. Other spellings
/// (`000020`, `+1`, `2024_01_01`, `.5`, `1.`) are text, as a checkpoint name or a date is.
fn written_as_number(t: &str, trailing_zeros: bool) -> bool {
    let body = t.strip_prefix('-').unwrap_or(t);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(int)
        && (int == "0" || !int.starts_with('0'))
        && frac.is_none_or(|f| digits(f) && (trailing_zeros || f == "0" || !f.ends_with('0')))
        && exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)))
}

/// Reads the header of a CSV input.
///
/// Errors: [`Error::Format`] naming the file.
pub fn header(input: &crate::stages::ingest::files::InputFile) -> Result<Vec<String>> {
    let mut r = csv::ReaderBuilder::new().has_headers(true).from_reader(crate::stages::ingest::files::open(input)?);
    let h = r.headers().map_err(|e| Error::format(&input.rel, format!("cannot read the CSV header: {e}")))?;
    Ok(h.iter().map(|s| s.trim_start_matches('\u{feff}').to_string()).collect())
}

/// What [`records`] calls per record: (line, header, cells, output).
type RecordFn<'a> = dyn FnMut(u64, &[String], &csv::StringRecord, &mut dyn FnMut(Out) -> Result<()>) -> Result<()> + 'a;

/// Streams the records of a CSV input: (line, header, cells); a malformed line is `Out::Bad`.
fn records(plan: &Plan, k: usize, out: &mut dyn FnMut(Out) -> Result<()>, f: &mut RecordFn) -> Result<()> {
    let rel = plan.inputs[k].rel.clone();
    // lines counted from the bytes, as the `csv` format counts them (CRLF files included)
    // the bytes of the record being read are kept, for the `raw` of a row that cannot be read
    let lines = crate::stages::ingest::records::LineLog::keeping_text(Default::default());
    let mut r = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(lines.wrap(crate::stages::ingest::files::open(&plan.inputs[k])?));
    // a column named twice is refused, as by the `csv` format: one copy's values would be lost
    let header: Vec<String> = crate::stages::ingest::records::csv_header(&mut r, &rel, &lines)?
        .iter()
        .map(|s| s.trim_start_matches('\u{feff}').to_string())
        .collect();
    lines.check_header(r.position().byte(), &rel)?;
    let line_of = |p: &csv::Position| lines.line_at(p.byte());
    let mut rec = csv::StringRecord::new();
    // the last record read, passed on once the next is read or the end is seen whole: at the
    // end, a quote still open means the file was cut inside that record's cell
    let mut held: Option<(u64, csv::StringRecord)> = None;
    // the buffer of the record passed on last, read into again (no record copied)
    let mut spare = csv::StringRecord::new();
    loop {
        let pos = r.position().line();
        let start = r.position().byte();
        lines.forget_before(start);
        let read = r.read_record(&mut rec);
        if !matches!(read, Ok(false))
            && let Some((line, h)) = held.take()
        {
            f(line, &header, &h, out)?;
            spare = h;
        }
        match read {
            Ok(false) => {
                if let Some((line, h)) = held.take() {
                    if lines.open_quote() {
                        return Err(Error::source_violation(
                            &rel,
                            Position::Line(line),
                            "",
                            "csv",
                            "a quoted cell of this record is never closed: the file ends inside it, so it was cut \
                             short (the cell's value is not whole); the file is refused, even with \
                             --on-invalid=reject; export it again",
                        ));
                    }
                    f(line, &header, &h, out)?;
                }
                // W&B ends an export with a closing quote, pandas with a line break: a last
                // line with neither may have been cut (a number cut short still reads as one)
                if !lines.ends_with_line_break() && !lines.ends_with_quote() {
                    let last = lines.line_at(r.position().byte());
                    return out(Out::Warn {
                        at: Some(Position::Line(last)),
                        kind: "wandb-csv-end",
                        message: "the file ends without a line break or a closing quote after this line (W&B \
                                  quotes every cell, pandas ends every line): it may have been cut short; \
                                  compare it with the export"
                            .to_string(),
                    });
                }
                return Ok(());
            }
            Ok(true) => {
                let line = rec.position().map(line_of).unwrap_or(pos);
                if lines.stray_before(r.position().byte()) {
                    let message = crate::stages::ingest::records::STRAY_TEXT.to_string();
                    let raw = Some(lines.text(start, r.position().byte()));
                    out(Out::Bad { at: Position::Line(line), rule: "csv", message, raw })?;
                    continue;
                }
                // a cell under a column without a name (other than the first, a pandas index)
                // would be lost: the row is refused, as by the `csv` format
                if let Some(k) = header.iter().zip(rec.iter()).skip(1).position(|(h, v)| is_index(h) && !v.is_empty()) {
                    let message = format!(
                        "cell {} holds a value but its column has no name in the header (or pandas' `Unnamed: n`); name the column",
                        k + 2
                    );
                    let raw = Some(lines.text(start, r.position().byte()));
                    out(Out::Bad { at: Position::Line(line), rule: "csv", message, raw })?;
                    continue;
                }
                held = Some((line, std::mem::replace(&mut rec, std::mem::take(&mut spare))));
            }
            Err(e) => {
                // a compressed stream that breaks: the rest of the file cannot be read
                if let Some(stop) = crate::stages::ingest::records::csv_read_failed(&rel, &lines, start, &e) {
                    return Err(stop);
                }
                let line = e.position().map(line_of).unwrap_or(pos + 1);
                let message = crate::stages::ingest::records::csv_error_message(&e);
                let fatal = !matches!(e.kind(), csv::ErrorKind::UnequalLengths { .. } | csv::ErrorKind::Utf8 { .. });
                let raw = (!fatal).then(|| lines.text(start, r.position().byte()));
                out(Out::Bad { at: Position::Line(line), rule: "csv", message, raw })?;
                if fatal {
                    return Ok(());
                }
            }
        }
    }
}

/// The run id of a history dump that has no id column: the `run_capture` capture, else the
/// file name when it is a run id.
fn file_run_id(plan: &Plan, k: usize) -> Option<String> {
    let input = &plan.inputs[k];
    if let Some(c) = &plan.opts.run_capture {
        return input.captures.iter().find(|(n, _)| n == c).map(|(_, v)| v.clone());
    }
    let name = input.rel.rsplit('/').next().unwrap_or("");
    let stem = name.split('.').next().unwrap_or("");
    super::is_run_id(stem).then(|| stem.to_string())
}

/// Emits the rows of a CSV input of flavour `kind`.
///
/// Errors: [`Error::Config`] when a history dump has no run id.
pub fn emit(plan: &Plan, k: usize, kind: CsvKind, out: &mut dyn FnMut(Out) -> Result<()>) -> Result<()> {
    use super::WandbTable as T;
    let rel = plan.inputs[k].rel.clone();
    let table = plan.opts.table;
    match kind {
        CsvKind::UiRuns | CsvKind::ApiRuns => {
            if !matches!(table, T::Runs | T::Histograms) {
                return Ok(());
            }
            let source = if kind == CsvKind::UiRuns { "ui-runs-csv" } else { "api-runs-csv" };
            records(plan, k, out, &mut |line, header, rec, out| {
                let (obj, extra) = run_object(kind, header, rec);
                if kind == CsvKind::UiRuns {
                    let at = Position::Line(line);
                    let (mut row, _) = match super::api::run_row(&obj, source, &rel) {
                        Ok(x) => x,
                        Err(message) => {
                            return out(Out::Bad { at, rule: "wandb-run", message, raw: super::record_raw(&obj) });
                        }
                    };
                    if table == T::Runs {
                        if !extra.is_empty() {
                            row.fields = Some(extra);
                        }
                        out(Out::Row(row.into_map(&plan.opts), at))?;
                    }
                    Ok(())
                } else {
                    super::api::emit_run(plan, &obj, source, &rel, Position::Line(line), out)
                }
            })
        }
        CsvKind::History => {
            if !matches!(table, T::History | T::Histograms) {
                return Ok(());
            }
            let fixed = file_run_id(plan, k);
            let histograms = table == T::Histograms;
            // the run name of the file's first row, while its run id comes from the file name
            let mut first_name: Option<String> = None;
            records(plan, k, out, &mut |line, header, rec, out| {
                let mut values = Map::new();
                let mut run_id = fixed.clone();
                let mut run_name = None;
                for (h, c) in header.iter().zip(rec.iter()) {
                    if is_index(h) {
                        continue;
                    }
                    match h.as_str() {
                        "run_id" | "id" => run_id = Some(c.to_string()).filter(|s| !s.is_empty()).or(run_id),
                        "run_name" | "name" => run_name = Some(c.to_string()).filter(|s| !s.is_empty()),
                        // an empty cell is a key not logged at that step (pandas writes a
                        // logged None so too: a CSV export cannot tell them apart)
                        _ => match metric_cell(c) {
                            Value::Null => {}
                            v => {
                                values.insert(h.clone(), v);
                            }
                        },
                    }
                }
                if run_id.is_none() {
                    return Err(Error::config(
                        &rel,
                        "this history dump has no run id: it has no `run_id` column and its file name is not a W&B run \
                         id; name the run with a {capture} in the source's path and set [source.wandb] run_capture",
                    ));
                }
                // one id from the file name for rows of several runs would merge them
                if run_id == fixed && !header.iter().any(|h| h == "run_id" || h == "id") {
                    match (&first_name, &run_name) {
                        (None, Some(n)) => first_name = Some(n.clone()),
                        (Some(a), Some(b)) if a != b => {
                            return Err(Error::config(
                                format!("{rel}:{line}"),
                                format!(
                                    "the rows name several runs (`{a}`, `{b}`), and the file name gives them one run id \
                                     (`{}`); add a `run_id` column, or write one file per run",
                                    fixed.as_deref().unwrap_or("")
                                ),
                            ));
                        }
                        _ => {}
                    }
                }
                let run = RunKey { run_id, run_name };
                rows::history_rows(
                    Record { run: &run, values, sampled: false, axes: &super::axes::NONE },
                    histograms,
                    &Position::Line(line),
                    out,
                )
            })
        }
        CsvKind::Chart => {
            if table != T::History {
                return Ok(());
            }
            chart(plan, k, out)
        }
    }
}

/// A run object from one row of a runs export, and (UI table) the columns that are not the
/// table's standard ones.
fn run_object(kind: CsvKind, header: &[String], rec: &csv::StringRecord) -> (Map<String, Value>, Map<String, Value>) {
    let mut obj = Map::new();
    let mut extra = Map::new();
    for (h, c) in header.iter().zip(rec.iter()) {
        if is_index(h) {
            continue;
        }
        if kind == CsvKind::UiRuns {
            let key = match h.as_str() {
                "Name" => "name",
                "State" => "state",
                "Notes" => "notes",
                "Tags" => "tags",
                "Created" => "created_at",
                "Runtime" => "runtime",
                "ID" | "Run ID" => "id",
                "Group" => "group",
                "Job Type" => "job_type",
                _ => {
                    extra.insert(h.clone(), cell(c));
                    continue;
                }
            };
            let v = match key {
                "notes" if c == "-" => Value::Null,
                "runtime" => cell(c),
                _ if c.is_empty() => Value::Null,
                _ => Value::String(c.to_string()),
            };
            obj.insert(key.into(), v);
        } else {
            // config and summary cells keep their text: the original is kept as provenance
            let v = match h.as_str() {
                "config" | "summary" if !c.is_empty() => Value::String(c.to_string()),
                "name" | "run_name" | "id" | "run_id" | "state" | "group" | "job_type" | "url" | "createdAt"
                | "created_at" => {
                    if c.is_empty() {
                        Value::Null
                    } else {
                        Value::String(c.to_string())
                    }
                }
                _ => cell(c),
            };
            obj.insert(h.clone(), v);
        }
    }
    (obj, extra)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Part {
    Value,
    Min,
    Max,
}

/// Splits a chart column name: `<run> - <metric>[__MIN|__MAX]`, on the last `" - "`.
fn series(h: &str) -> Option<(String, String, Part)> {
    let (base, part) = if let Some(b) = h.strip_suffix("__MIN") {
        (b, Part::Min)
    } else if let Some(b) = h.strip_suffix("__MAX") {
        (b, Part::Max)
    } else {
        (h, Part::Value)
    };
    let i = base.rfind(" - ")?;
    Some((base[..i].to_string(), base[i + 3..].to_string(), part))
}

/// Whether a chart series is a group of runs (a grouped panel names it `<group key>: <value>`,
/// `algo: UCEA`), not a run.
fn is_group(series: &str) -> bool {
    series.split_once(": ").is_some_and(|(key, value)| !key.is_empty() && !value.is_empty())
}

/// The rows of a chart-panel export: one per series (a run, or a group of runs), x value and
/// metric, with the series' `__MIN`/`__MAX` in `value_min`/`value_max`. A run's step is the x
/// value when the x axis is `Step`, else its `_step` series (a whole number, or a violation).
/// A group's `_step` series is the mean of its runs' steps (26.5): it is read as the `_step`
/// metric's rows (mean, min and max), and the group's rows have a null `step`.
fn chart(plan: &Plan, k: usize, out: &mut dyn FnMut(Out) -> Result<()>) -> Result<()> {
    let header = header(&plan.inputs[k])?;
    let x_name = header[0].clone();
    // (run, metric) → column of value, min, max
    let mut groups: Vec<(String, String, [Option<usize>; 3])> = Vec::new();
    for (i, h) in header.iter().enumerate().skip(1) {
        let Some((run, metric, part)) = series(h) else { continue };
        let g = match groups.iter().position(|(r, m, _)| *r == run && *m == metric) {
            Some(g) => g,
            None => {
                groups.push((run, metric, [None; 3]));
                groups.len() - 1
            }
        };
        groups[g].2[part as usize] = Some(i);
    }
    let mut runs: Vec<String> = Vec::new();
    for (r, _, _) in &groups {
        if !runs.contains(r) {
            runs.push(r.clone());
        }
    }
    records(plan, k, out, &mut |line, header, rec, out| {
        let at = Position::Line(line);
        let raw = || super::record_raw(&header.iter().zip(rec.iter()).map(|(h, v)| (h.clone(), v.into())).collect());
        let get = |i: Option<usize>| i.and_then(|i| rec.get(i)).map(metric_cell).unwrap_or(Value::Null);
        let x = metric_cell(rec.get(0).unwrap_or(""));
        for run in &runs {
            // a grouped panel's series is a group of runs: its `_step` is their mean (26.5),
            // with its min and max, kept as the `_step` metric's rows; its rows have no step
            let grouped = is_group(run);
            let step = if x_name == "Step" {
                rows::step_of(Some(&x))
            } else if grouped {
                Ok(None)
            } else {
                match groups.iter().find(|(r, m, _)| r == run && m == "_step") {
                    Some((_, _, c)) => rows::step_of(Some(&get(c[0]))),
                    None => Ok(None),
                }
            };
            let step = match step {
                Ok(step) => step,
                // a group's x step is a bucket of its runs' steps
                Err(_) if grouped => None,
                Err(message) => {
                    let message = format!("run {run}: {message}");
                    out(Out::Bad { at: at.clone(), rule: "type", message, raw: raw() })?;
                    continue;
                }
            };
            let mut any = false;
            for (r, metric, cols) in &groups {
                if r != run || (metric == "_step" && x_name != "Step" && !grouped) {
                    continue;
                }
                let (v, lo, hi) = (get(cols[0]), get(cols[1]), get(cols[2]));
                if v.is_null() && lo.is_null() && hi.is_null() {
                    continue;
                }
                any = true;
                let (value, text) = match &v {
                    // written as JSON text by the conversion (a string quoted, a boolean bare),
                    // which counts non-finite numbers inside
                    Value::String(t) if crate::stages::ingest::lenient::special(t).is_none() => {
                        (Value::Null, v.clone())
                    }
                    Value::Bool(_) | Value::Array(_) | Value::Object(_) => (Value::Null, v.clone()),
                    _ => (v.clone(), Value::Null),
                };
                let is_num = |v: &Value| {
                    v.is_number() || v.as_str().is_some_and(|t| crate::stages::ingest::lenient::special(t).is_some())
                };
                // a bound or an x that is no number is said, not made null
                let mut bad = None;
                for (what, c) in
                    [(format!("{metric}__MIN"), &lo), (format!("{metric}__MAX"), &hi), (x_name.clone(), &x)]
                {
                    if !c.is_null() && !is_num(c) && bad.is_none() {
                        bad = Some(format!(
                            "run {run}: `{what}` holds {}, not a number",
                            crate::stages::ingest::path::describe(c)
                        ));
                    }
                }
                if let Some(message) = bad {
                    out(Out::Bad { at: at.clone(), rule: "type", message, raw: raw() })?;
                    continue;
                }
                let num = |v: Value| if is_num(&v) { v } else { Value::Null };
                let mut m = Map::new();
                m.insert("run_id".into(), Value::Null);
                m.insert("run_name".into(), Value::String(run.clone()));
                m.insert("step".into(), step.map(Value::from).unwrap_or(Value::Null));
                m.insert("metric".into(), Value::String(metric.clone()));
                m.insert("value".into(), value);
                m.insert("value_text".into(), text);
                m.insert("value_min".into(), num(lo));
                m.insert("value_max".into(), num(hi));
                m.insert("x_axis".into(), Value::String(x_name.clone()));
                m.insert("x".into(), num(x.clone()));
                m.insert("sampled".into(), Value::Bool(false));
                out(Out::Row(m, at.clone()))?;
            }
            if any {
                out(Out::Step { run: RunKey { run_id: None, run_name: Some(run.clone()) }, step })?;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::super::WandbTable;
    use super::*;
    use serde_json::json;

    fn h(cols: &[&str]) -> Vec<String> {
        cols.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flavours_are_detected() {
        assert_eq!(detect(&h(&["Name", "State", "lr"]), WandbTable::History).unwrap(), CsvKind::UiRuns);
        assert_eq!(detect(&h(&["Step", "a - loss", "a - loss__MIN"]), WandbTable::History).unwrap(), CsvKind::Chart);
        assert_eq!(detect(&h(&["", "name", "state", "_step"]), WandbTable::History).unwrap(), CsvKind::ApiRuns);
        assert_eq!(detect(&h(&["", "_runtime", "loss", "_step"]), WandbTable::History).unwrap(), CsvKind::History);
        let e = detect(&h(&["text", "score"]), WandbTable::History).unwrap_err();
        // a header both a runs dump and several runs' history fit is what the table asks for
        let both = h(&["", "id", "name", "_step", "loss"]);
        assert_eq!(detect(&both, WandbTable::History).unwrap(), CsvKind::History);
        assert_eq!(detect(&both, WandbTable::Runs).unwrap(), CsvKind::ApiRuns);
        assert!(e.contains("columns: text, score") && e.contains("format = \"csv\""), "{e}");
    }

    #[test]
    fn series_split_on_the_last_dash() {
        assert_eq!(
            series("gpt2_char_to_token1729578574.2848036 - train/loss__MIN").unwrap(),
            ("gpt2_char_to_token1729578574.2848036".into(), "train/loss".into(), Part::Min)
        );
        assert_eq!(series("algo: UCEA - a - b").unwrap().0, "algo: UCEA - a");
    }

    #[test]
    fn cells() {
        assert_eq!(cell("533476352.0"), json!(533476352.0));
        assert_eq!(cell("{'runtime': 1257}"), json!({"runtime": 1257}));
        assert_eq!(cell("['seed_9999', 'soft']"), json!(["seed_9999", "soft"]));
        assert_eq!(cell("False"), json!(false));
        assert_eq!(cell(""), Value::Null);
        assert_eq!(cell("cuda:0"), json!("cuda:0"));
        assert_eq!(cell("{not python"), json!("{not python"));
        // numbers as Python and JavaScript write them; other spellings stay text
        assert_eq!(cell("1e-08"), json!(1e-8));
        assert_eq!(cell("-1.5e+21"), json!(-1.5e21));
        assert_eq!(cell("0.0"), json!(0.0));
        assert_eq!(cell("nan"), pylit::nonfinite(f64::NAN));
        for text in ["000020", "1.10", "+1", "2024_01_01", ".5", "1.", "01.5", "1e", "0x10", "1e400", "-1e400"] {
            assert_eq!(cell(text), json!(text), "{text}");
        }
        // a metric column written with pandas' float_format (`%.4f`) keeps trailing zeros
        assert_eq!(metric_cell("0.5000"), json!(0.5));
        assert_eq!(metric_cell("1.10"), json!(1.1));
        assert_eq!(metric_cell("-0.10"), json!(-0.1));
        for text in ["000020", "+1", ".5", "1e400"] {
            assert_eq!(metric_cell(text), json!(text), "{text}");
        }
    }
}
