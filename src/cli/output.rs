//! What the command line shows while and after working: progress bars (on a terminal only)
//! and the build summary.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

use crate::core::progress::{Progress, Unit};
use crate::verbs::build::BuildOutcome;

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
}

/// The progress line of a step counting `unit`s, out of a known total or not (indicatif's
/// template syntax).
fn template(unit: Unit, total: bool) -> &'static str {
    match (unit, total) {
        (Unit::None, _) => "{spinner} {msg} {elapsed}",
        (Unit::Rows, false) => "{spinner} {msg}: {human_pos} rows {elapsed}",
        (Unit::Rows, true) => "{spinner} {msg}: {human_pos}/{human_len} rows {elapsed}",
        (Unit::Bytes, false) => "{spinner} {msg}: {bytes} {elapsed}",
        (Unit::Bytes, true) => "{spinner} {msg}: {bytes}/{total_bytes} ({bytes_per_sec}) {elapsed}",
    }
}

/// Prints the per-table summary of a build on stderr.
pub fn summary(o: &BuildOutcome) {
    for t in &o.manifest.tables {
        let mut extra = String::new();
        if t.rejected_rows > 0 {
            extra.push_str(&format!(", {} rejected", t.rejected_rows));
        }
        if t.duplicates_dropped > 0 {
            extra.push_str(&format!(", {} duplicates superseded", t.duplicates_dropped));
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
            for e in &tally.examples {
                say!("  {src}: {e}");
            }
        }
    }
    for (src, tally) in &o.report.coercions {
        say!("strings coerced in {src}: {}", tally.count);
        for e in &tally.examples {
            say!("  {e}");
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
    }
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
