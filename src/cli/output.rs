//! What the command line shows while and after working: progress bars (on a terminal only)
//! and the build summary.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

use crate::core::progress::{Progress, Unit};
use crate::core::report::{Position, SourceRef, Violation, Warning};
use crate::verbs::build::BuildOutcome;

/// Writes `text` and a line break to stdout, with every secret the process holds replaced
/// ([`crate::core::secrets::redact`]). A reader that went away (`| head`) is no error: what
/// the command did stays done.
///
/// Errors: [`crate::core::error::Error::Io`] at `<stdout>` when the line cannot be written (a
/// full disk): a document a script reads must not be lost without a word.
pub fn print_out(text: &str) -> Result<(), crate::core::error::Error> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{}", crate::core::secrets::redact(text)).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(crate::core::error::Error::io("<stdout>", e)),
        _ => Ok(()),
    }
}

/// Progress shown with indicatif on stderr.
pub struct Bar {
    bar: std::sync::Mutex<Option<ProgressBar>>,
}

/// A progress display when stderr is a terminal and output is not quieted.
pub fn progress(quiet: bool) -> Option<Bar> {
    (!quiet && std::io::stderr().is_terminal()).then(|| Bar { bar: std::sync::Mutex::new(None) })
}

impl Progress for Bar {
    fn start(&self, step: &str, unit: Unit, total: Option<u64>) {
        // a step not finished (a build that stopped) leaves no line behind
        if let Some(b) = self.bar.lock().expect("lock").take() {
            b.finish_and_clear();
        }
        let bar = match total {
            Some(n) => ProgressBar::new(n),
            None => ProgressBar::new_spinner(),
        };
        let style = ProgressStyle::with_template(template(unit, total.is_some()));
        bar.set_style(style.unwrap_or_else(|_| ProgressStyle::default_spinner()));
        bar.set_message(step.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        *self.bar.lock().expect("lock") = Some(bar);
    }
    fn advance(&self, n: u64) {
        if let Some(b) = self.bar.lock().expect("lock").as_ref() {
            b.inc(n);
        }
    }
    fn finish(&self) {
        if let Some(b) = self.bar.lock().expect("lock").take() {
            b.finish_and_clear();
        }
    }
    fn rename(&self, step: &str) {
        if let Some(b) = self.bar.lock().expect("lock").as_ref() {
            b.set_message(step.to_string());
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The progress line of a step counting `unit`s, out of a known total or not (indicatif's
/// template syntax).
fn template(unit: Unit, total: bool) -> &'static str {
    match (unit, total) {
        (Unit::None, _) => "{spinner} {msg} {elapsed}",
        (Unit::Rows, false) => "{spinner} {msg}: {human_pos} rows {elapsed}",
        (Unit::Rows, true) => "{spinner} {msg}: {human_pos}/{human_len} rows ({percent}%, {eta} left) {elapsed}",
        (Unit::Bytes, false) => "{spinner} {msg}: {bytes} ({bytes_per_sec}) {elapsed}",
        (Unit::Bytes, true) => {
            "{spinner} {msg}: {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left) {wide_bar:.dim} {elapsed}"
        }
    }
}

/// Prints the per-table summary of a build on stderr.
pub fn summary(o: &BuildOutcome) {
    for t in &o.manifest.tables {
        let mut extra = String::new();
        if t.rejected_rows > 0 {
            extra.push_str(&format!(", {} rejected", crate::core::numbers::group_digits(t.rejected_rows)));
        }
        if t.duplicates_dropped > 0 {
            let s = if t.duplicates_dropped == 1 { "" } else { "s" };
            extra.push_str(&format!(
                ", {} duplicate{s} superseded",
                crate::core::numbers::group_digits(t.duplicates_dropped)
            ));
            // a row set aside with its record leaves its key to no row: said apart
            if let Some(w) = o.report.set_aside_whole.get(&t.name) {
                extra.push_str(&format!(
                    " ({} set aside with {} record{}: {} in no row kept)",
                    crate::core::numbers::group_digits(w.count),
                    if w.count == 1 { "its" } else { "their" },
                    if w.count == 1 { "" } else { "s" },
                    if w.count == 1 { "a key" } else { "keys" },
                ));
            }
        }
        let files = t.files.len();
        say!(
            "table {}: {} in {files} Parquet file{}{extra}",
            t.name,
            crate::stages::hash::rows(t.rows),
            if files == 1 { "" } else { "s" }
        );
    }
    for (name, n) in &o.manifest.report.rejected_rows {
        if o.manifest.table(name).is_none() {
            say!("source {name}: {} rejected while reading (in rejects/{name}.jsonl)", crate::stages::hash::rows(*n));
        }
    }
    let nonfinite: u64 = o.manifest.report.nonfinite_values.values().sum();
    if nonfinite > 0 {
        say!("non-finite values read: {nonfinite}");
        for (src, tally) in &o.report.nonfinite {
            say!("  source {src}: {}", tally.count);
            for e in &tally.examples {
                say!("    {e}");
            }
            let more = tally.count.saturating_sub(tally.examples.len() as u64);
            if more > 0 {
                say!("    … and {more} more (manifest.json counts them: report.nonfinite_values)");
            }
        }
    }
    for (src, tally) in &o.report.coercions {
        say!("strings coerced in {src}: {}", tally.count);
        for e in &tally.examples {
            say!("  {e}");
        }
        let more = tally.count.saturating_sub(tally.examples.len() as u64);
        if more > 0 {
            say!("  … and {more} more");
        }
    }
    for (t, tally) in &o.report.duplicates_dropped {
        // a table's duplicate-key rule, or a source's identical copies (W&B runs listed twice)
        if o.manifest.table(t).is_some() {
            say!("table {t}: {} superseded by the duplicate-key rule", crate::stages::hash::rows(tally.count));
        } else {
            say!("source {t}: {} dropped as identical copies", crate::stages::hash::rows(tally.count));
        }
        for e in &tally.examples {
            say!("  {e}");
        }
        let more = tally.count.saturating_sub(tally.examples.len() as u64);
        if more > 0 {
            if o.manifest.table(t).is_some() {
                say!("  … and {more} more (rejects/{t}.jsonl holds each, with its reason)");
            } else {
                say!("  … and {more} more");
            }
        }
    }
}

/// Where a violation or warning came from, as JSON fields: `file`, and `line` (a number) or
/// `pointer` (an RFC 6901 JSON pointer into a JSON document); none when unknown.
fn place_json(src: Option<&SourceRef>, doc: &mut serde_json::Map<String, serde_json::Value>) {
    if let Some(src) = src {
        doc.insert("file".into(), src.file.clone().into());
        match &src.at {
            Position::Line(n) => doc.insert("line".into(), (*n).into()),
            Position::Pointer(p) => doc.insert("pointer".into(), p.clone().into()),
        };
    }
}

/// A warning as JSON: `table`, `kind`, its place, `message`.
fn warning_json(w: &Warning) -> serde_json::Value {
    let mut doc = serde_json::Map::new();
    doc.insert("table".into(), w.table.clone().into());
    doc.insert("kind".into(), w.kind.clone().into());
    place_json(w.source.as_ref(), &mut doc);
    doc.insert("message".into(), w.quoted.as_ref().unwrap_or(&w.message).clone().into());
    doc.into()
}

/// A violation as JSON: what it concerns (`scope`, `table`), its place (`file`, `line` or
/// `pointer`, `path` inside the record), `rule`, `key`, `message`, `text`, the line the text
/// output prints, and `finding` where the rule has one ([`crate::core::report::Finding`]).
fn violation_json(v: &Violation) -> serde_json::Value {
    let mut doc = serde_json::Map::new();
    doc.insert("scope".into(), serde_json::to_value(v.scope).unwrap_or_default());
    doc.insert("table".into(), v.table.clone().into());
    place_json(v.source.as_ref(), &mut doc);
    doc.insert("path".into(), v.path.clone().into());
    doc.insert("rule".into(), v.rule.clone().into());
    doc.insert("key".into(), v.key.clone().into());
    doc.insert("message".into(), v.message.clone().into());
    doc.insert("text".into(), v.to_string().into());
    if let Some(finding) = &v.finding {
        doc.insert("finding".into(), serde_json::to_value(finding).unwrap_or_default());
    }
    doc.into()
}

/// The JSON document of `build --format json`: `ok`, the `release` folder, `name`,
/// `version`, `unchanged`, each table with its `rows`, `rejected_rows`, `duplicates_dropped`,
/// `files` (path, kind, rows, bytes) and `bytes`; `rejected_rows` by source or table,
/// `nonfinite_values` and `coerced_values` by source (count and first places), `warnings`,
/// `notes` (as given: what the card lacks before it is published, which the
/// release does not record), `unread_files` (each file under `raw/` that no source reads, as
/// given), `violations` (empty: a build that succeeds has none) and `hints` (empty too).
pub fn build_json(o: &BuildOutcome, notes: &[String], unread: &[String]) -> serde_json::Value {
    let m = &o.manifest;
    let tables: Vec<serde_json::Value> = m
        .tables
        .iter()
        .map(|t| {
            let files: Vec<&crate::stages::release::FileEntry> =
                m.files.iter().filter(|f| f.table.as_deref() == Some(t.name.as_str())).collect();
            serde_json::json!({
                "name": t.name,
                "rows": t.rows,
                "rejected_rows": t.rejected_rows,
                "duplicates_dropped": t.duplicates_dropped,
                "bytes": files.iter().map(|f| f.bytes).sum::<u64>(),
                "files": files
                    .iter()
                    .map(|f| serde_json::json!({"path": f.path, "kind": f.kind, "rows": f.rows, "bytes": f.bytes}))
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({
        "ok": true,
        "release": o.release_dir.display().to_string(),
        "name": m.name,
        "version": m.version,
        "unchanged": o.unchanged,
        "tables": tables,
        "rejected_rows": m.report.rejected_rows,
        "nonfinite_values": tallies_json(&o.report.nonfinite),
        "coerced_values": tallies_json(&o.report.coercions),
        "warnings": o.report.warnings.iter().map(warning_json).collect::<Vec<_>>(),
        "notes": notes,
        "unread_files": unread,
        "violations": [],
        "violations_total": 0,
        "violations_checked": crate::core::report::Checked::All,
        "hints": [],
    })
}

/// Counts by source, each with its first places (`file:line:$.path` and what was read), as
/// the text output lists them: `{"<source>": {"count": n, "examples": […]}}`.
fn tallies_json(t: &std::collections::BTreeMap<String, crate::core::report::Tally>) -> serde_json::Value {
    t.iter().map(|(k, v)| (k.clone(), serde_json::json!({"count": v.count, "examples": v.examples}))).collect()
}

/// The JSON document of `build --format json` when the data broke the rules (exit status 1):
/// `ok` false, no `release` (nothing was written), and the `violations` (at most
/// `--max-errors`, sorted) with `violations_total`, `violations_checked` (what they cover:
/// `all`, `up_to_source` or `sources`; see [`crate::core::report::Checked`]), `hints`, the
/// `hint:` lines stderr gives ([`super::build_hints`]), and the `warnings` of the build so far.
pub fn build_failed_json(
    name: &str,
    version: &str,
    violations: &[Violation],
    (total, checked): (usize, crate::core::report::Checked),
    hints: &[String],
    warnings: &[Warning],
) -> serde_json::Value {
    serde_json::json!({
        "ok": false,
        "release": null,
        "name": name,
        "version": version,
        "unchanged": false,
        "tables": [],
        "rejected_rows": {},
        "warnings": warnings.iter().map(warning_json).collect::<Vec<_>>(),
        "violations": violations.iter().map(violation_json).collect::<Vec<_>>(),
        "violations_total": total,
        "violations_checked": checked,
        "hints": super::build_hints(violations.len(), total, hints),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_progress_template_is_valid() {
        for unit in [Unit::None, Unit::Rows, Unit::Bytes] {
            for total in [false, true] {
                assert!(ProgressStyle::with_template(template(unit, total)).is_ok(), "{unit:?} {total}");
            }
        }
    }
}
