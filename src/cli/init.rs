//! `runpack init`: arguments and what it prints.

use std::path::PathBuf;

use super::hub::ReportFormat;
use crate::core::error::Error;
use crate::verbs::init::{InitOptions, InitOutcome};

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Folder of raw outputs (read, never changed).
    folder: PathBuf,
    /// Pipeline and release name (default: the folder's name, in lower case).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Folder that holds pipelines; the schemas go to `schemas/` beside it.
    #[arg(long, value_name = "DIR", default_value = "pipelines")]
    pipelines_dir: PathBuf,
    /// Output format: `text` (a summary on stderr, the pipeline folder on stdout) or `json`
    /// (one document: the files found and their formats, the files not read and why, the
    /// sources, tables and files written).
    #[arg(long, value_enum, default_value = "text")]
    format: ReportFormat,
}

impl InitArgs {
    /// The output format asked for.
    pub fn format(&self) -> ReportFormat {
        self.format
    }
}

/// Runs `init` and prints what it did.
pub fn run(a: InitArgs, quiet: bool) -> Result<u8, Error> {
    let opts = InitOptions { folder: a.folder, name: a.name, pipelines_dir: a.pipelines_dir };
    let progress = if a.format == ReportFormat::Text { super::output::progress(quiet) } else { None };
    let outcome = crate::verbs::init::init(
        &opts,
        progress.as_ref().map(|p| p as &dyn crate::core::progress::Progress).unwrap_or(&crate::core::progress::Silent),
    )?;
    match a.format {
        ReportFormat::Json => {
            let text = serde_json::to_string_pretty(&outcome).map_err(|e| Error::format("init", e))?;
            super::output::print_out(&text)?;
        }
        ReportFormat::Text => {
            if !quiet {
                summary(&outcome);
            }
            super::output::print_out(&outcome.pipeline)?;
        }
    }
    Ok(0)
}

/// Prints what `init` found, wrote and could not read, on stderr.
fn summary(o: &InitOutcome) {
    let formats: Vec<String> = o.found.formats.iter().map(|(f, n)| format!("{n} {f}")).collect();
    // a file read by several tables (a trackio database, an Inspect log) counts once
    let read = o.sources.iter().flat_map(|s| &s.files).collect::<std::collections::BTreeSet<_>>().len();
    // (the formats of a file several formats read add up to more than the files)
    let several = o.found.formats.values().sum::<usize>() > read;
    say!(
        "found {} file{} in {}: {read} read ({}{})",
        o.found.files,
        if o.found.files == 1 { "" } else { "s" },
        o.folder,
        formats.join(", "),
        if several { "; a file can be read as several formats" } else { "" }
    );
    if o.found.hidden_skipped > 0 {
        let shown: Vec<&str> = o.found.hidden.iter().take(3).map(String::as_str).collect();
        let more = o.found.hidden.len().saturating_sub(shown.len());
        say!(
            "  {} hidden file(s) or folder(s) (.*) not looked at: {}{}",
            o.found.hidden_skipped,
            shown.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        );
    }
    if !o.not_read.is_empty() {
        say!("not read ({} file{}):", o.not_read.len(), if o.not_read.len() == 1 { "" } else { "s" });
        // a reason many files share (logs, diffs, a database's journal) is said once, after
        // the files with reasons of their own (`--format json` lists each file)
        let mut by_reason: Vec<(&str, Vec<&str>)> = Vec::new();
        for n in &o.not_read {
            match by_reason.iter_mut().find(|(r, _)| *r == n.reason) {
                Some((_, files)) => files.push(&n.file),
                None => by_reason.push((&n.reason, vec![&n.file])),
            }
        }
        let (shared, own): (Vec<_>, Vec<_>) = by_reason.into_iter().partition(|(_, files)| files.len() >= 3);
        for (reason, files) in own {
            for f in files {
                say!("  {f}: {reason}");
            }
        }
        for (reason, files) in shared {
            say!("  {} files: {reason}: {}", files.len(), crate::core::report::first_names(&files, 3));
        }
    }
    for n in &o.notes {
        say!("note: {n}");
    }
    say!("tables ({}):", o.tables.len());
    let width = o.tables.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for (t, s) in o.tables.iter().zip(&o.sources) {
        let key = match (&t.on_duplicate_key, t.primary_key.is_empty()) {
            (_, true) => ", no key".to_string(),
            (Some(policy), false) => format!(", key ({}) {policy}", t.primary_key.join(", ")),
            (None, false) => format!(", key ({})", t.primary_key.join(", ")),
        };
        let files = s.files.len();
        let path = if s.path.len() == 1 { s.path[0].clone() } else { format!("{} paths", s.path.len()) };
        say!(
            "  {:<width$}  {}, {} column{}{key}; {} {path} ({files} file{})",
            t.name,
            crate::stages::hash::rows(t.rows),
            t.columns.len(),
            if t.columns.len() == 1 { "" } else { "s" },
            s.format,
            if files == 1 { "" } else { "s" },
        );
        for d in s.declared.iter().filter(|d| d.reason != crate::verbs::init::OWN_SOURCE) {
            say!("    {}: declared {} ({})", d.column, d.field_type, d.reason);
        }
    }
    say!("wrote:");
    for w in &o.written {
        say!("  {w}");
    }
    say!("todo in {}/pipeline.toml:", o.pipeline);
    for t in &o.todo {
        say!("  {t}");
    }
    say!("next: runpack build {}", o.pipeline);
}
