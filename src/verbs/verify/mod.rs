//! The `verify` verb for a release folder (or any folder with a dataset card).
//!
//! In: a folder. Out: a [`VerifyReport`]: one line per problem, and the files verified.
//!
//! With a `manifest.json`: every listed file must exist inside the folder (paths that leave it
//! are refused), have the listed size and SHA-256 (a file is never counted as verified by its
//! size alone), and hold the listed rows (Parquet footers, JSON Lines line counts); a Git LFS
//! pointer in place of a file is named as such (pointer to the expected object: "not
//! downloaded"; to another object: a distinct message); `SHA256SUMS` must agree; files not in
//! the manifest are reported. Every Parquet shard's Arrow schema must equal the manifest's.
//! The manifest must agree with itself (no path listed twice, a file in one split, shards
//! numbered `00000` to `n-1` of `n`, each table's `arrow_schema` the view of its `schema`),
//! and `datapackage.json` with it (each resource's Table Schema is its table's).
//!
//! With a `README.md`: its front matter must be plain YAML; every `configs[].data_files`
//! path or glob must match files (case-sensitive, with a hint for near misses), every data
//! file must belong to exactly one (config, split), `data_dir` must name a folder with data
//! files, split names must be loadable; shards of one split must share one Arrow schema; row
//! groups must stay under the dataset viewer's 300,000,000-byte limit. With a manifest too,
//! each config must serve its own table's files, with the manifest's splits.
//!
//! With `data` ([`run_with`], `verify --data`): every row is read as well ([`check_data`]),
//! which finds what checksums recomputed over a changed release hide.
//!
//! A digest in the manifest that is no SHA-256 (64 hex digits; a 40-hex git blob SHA-1, say)
//! makes the manifest malformed: said once, at its JSON pointer, and not as a mismatch.
//!
//! A snapshot folder of the Hugging Face cache (`snapshots/<commit>/…`, whose files are
//! symbolic links into the cache's `blobs/`) verifies like a release folder: a link into a
//! cache's `blobs/` is read as the file it points at ([`cache_blob_link`]); any other link is a
//! problem.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::core::error::{Error, Result};
use crate::core::numbers;
use crate::core::progress::{Progress, Silent, Unit};
use crate::core::schema::{schema_diff, type_name};
use crate::stages::hash;
use crate::stages::ingest::files::lfs_pointer;
use crate::stages::release::{Manifest, cache_blob_link, safe_relative};

mod data;
mod problem;
pub use data::{DATA_BATCH_BYTES, DATA_BATCH_ROWS, SPLIT_KEYS_BYTES, check_data};
pub use problem::{Problem, ProblemKind};

/// Outcome of a verification.
#[derive(Debug, Default, Clone)]
pub struct VerifyReport {
    /// What is wrong, in the order found; each prints as one line (`path: what is wrong`).
    pub problems: Vec<Problem>,
    /// Files whose SHA-256 matched, sorted, each once: every file the manifest lists, and
    /// manifest.json itself against its line in SHA256SUMS (so every file `sha256sum -c
    /// SHA256SUMS` checks).
    pub verified: Vec<String>,
    /// With [`run_with`]'s `data`: the rows read and checked, all tables together.
    pub rows_checked: Option<u64>,
}

impl VerifyReport {
    /// True when nothing is wrong.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// Adds a problem of `kind` said by `message`.
    pub fn push(&mut self, kind: ProblemKind, message: impl Into<String>) {
        self.problems.push(Problem::new(kind, message));
    }

    /// Adds a problem of `kind` for each of `messages`.
    pub fn extend(&mut self, kind: ProblemKind, messages: impl IntoIterator<Item = String>) {
        self.problems.extend(messages.into_iter().map(|m| Problem::new(kind, m)));
    }
}

/// Verifies the folder `dir`.
///
/// Errors: [`Error::Refused`] when `dir` is no folder or holds none of a release's own files
/// (`manifest.json`, `SHA256SUMS`, `README.md`, `data/`); everything else is a problem line.
pub fn run(dir: &Path) -> Result<VerifyReport> {
    run_with(dir, false)
}

/// Verifies the folder `dir` as [`run`] does, and with `data` reads every row as well (see
/// [`check_data`]): a release whose files were changed and sealed again (checksums recomputed)
/// passes the checksums, not this.
///
/// Errors: as [`run`]; [`Error::Io`] when the temporary folder for the row checks cannot be made.
pub fn run_with(dir: &Path, data: bool) -> Result<VerifyReport> {
    run_reporting(dir, data, &BTreeSet::new(), &Silent)
}

/// [`run_with`], reporting its progress: `hashing` (bytes hashed out of the total size the
/// manifest gives the files), then with `data` the `reading rows` step of [`check_data`].
///
/// Errors: as [`run_with`].
pub fn run_with_progress(dir: &Path, data: bool, progress: &dyn Progress) -> Result<VerifyReport> {
    run_reporting(dir, data, &BTreeSet::new(), progress)
}

/// Verifies `dir` as [`run_with`] does, where the files `footers_only` names (paths in the
/// release) hold only their last bytes, the rest of the file left empty: their content was
/// checked elsewhere (by `verify hf://` against the Hub's LFS SHA-256), so they are not hashed
/// and their lines are not counted; a Parquet file's footer (rows, schema, row groups) is read
/// as usual. They count as verified.
///
/// Errors: as [`run_with`].
pub fn run_published(dir: &Path, data: bool, footers_only: &BTreeSet<String>) -> Result<VerifyReport> {
    run_reporting(dir, data, footers_only, &Silent)
}

/// [`run_published`], reporting its progress to `progress`.
fn run_reporting(
    dir: &Path,
    data: bool,
    footers_only: &BTreeSet<String>,
    progress: &dyn Progress,
) -> Result<VerifyReport> {
    let (mut rep, manifest) = run_checks(dir, footers_only, progress)?;
    if data && let Some(m) = &manifest {
        check_data(dir, m, &mut rep, progress)?;
    }
    // one problem per line, whatever the file names hold: control characters are escaped
    for p in &mut rep.problems {
        p.message = crate::core::error::escape_control(&p.message);
    }
    // a file listed twice (a line of SHA256SUMS repeated) is one file verified
    rep.verified.sort();
    rep.verified.dedup();
    Ok(rep)
}

/// The checks of [`run`]; the report, and the manifest when it could be read.
fn run_checks(
    dir: &Path,
    footers_only: &BTreeSet<String>,
    progress: &dyn Progress,
) -> Result<(VerifyReport, Option<Manifest>)> {
    if !dir.exists() {
        return Err(Error::not_found(dir.display()));
    }
    if !dir.is_dir() {
        return Err(Error::Refused(format!("{}: not a folder", dir.display())));
    }
    // a folder with none of a release's own files and no data folder is not one (a wrong path,
    // a parent folder such as releases/<name>)
    if ["manifest.json", "SHA256SUMS", "README.md", "data"].iter().all(|f| matches!(entry(dir, f), Entry::Missing)) {
        return Err(Error::Refused(format!(
            "{} is not a release folder: it holds no manifest.json, SHA256SUMS, README.md or data folder (a \
             release is releases/<name>/<version>)",
            dir.display()
        )));
    }
    let mut rep = VerifyReport::default();
    let manifest = match entry(dir, "manifest.json") {
        Entry::Missing => {
            rep.push(
                ProblemKind::Missing,
                if matches!(entry(dir, "SHA256SUMS"), Entry::Readable) {
                    "manifest.json: missing, so row counts and schemas cannot be verified (checksums are checked \
                 against SHA256SUMS)"
                } else {
                    "manifest.json: missing, so row counts and schemas cannot be verified"
                },
            );
            None
        }
        Entry::Folder => {
            rep.push(ProblemKind::NotRegular, "manifest.json: a folder, not a file");
            None
        }
        // reported with the other symbolic links and the files that are not regular
        Entry::DanglingLink | Entry::Special => None,
        Entry::Readable => match Manifest::load(dir) {
            Ok(m) => Some(m),
            // placed as the release's other files are, by their path in it
            Err(crate::core::error::Error::Config { location, message }) => {
                let full = dir.join("manifest.json").display().to_string();
                let place = location.strip_prefix(&full).unwrap_or_default();
                rep.push(ProblemKind::Manifest, format!("manifest.json{place}: {message}"));
                None
            }
            Err(e @ crate::core::error::Error::Io { .. }) => {
                rep.push(ProblemKind::Unreadable, format!("manifest.json: cannot be read: {}", os_error(e)));
                None
            }
            Err(e) => {
                rep.push(ProblemKind::Manifest, format!("manifest.json: {e}"));
                None
            }
        },
    };
    match &manifest {
        // the checks that need no file's digest run while the files are hashed; their problems
        // follow the hashing's, as when they ran after it
        Some(m) => {
            let rest = std::thread::scope(|s| {
                let rest = s.spawn(|| {
                    let mut rest = VerifyReport::default();
                    let croissant = check_manifest_rest(dir, m, &mut rest);
                    check_release_files(dir, Some(m), &mut rest).map(|()| (rest, croissant))
                });
                let hashed = check_manifest(dir, m, &mut rep, footers_only, progress);
                let rest = rest.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                hashed.and(rest)
            })?;
            let (rest, croissant) = rest;
            rep.problems.extend(rest.problems);
            rep.verified.extend(rest.verified);
            if let Some(doc) = croissant {
                check_croissant_as_built(dir, m, &doc, &mut rep);
            }
        }
        // without the manifest, SHA256SUMS still says what each file should hold
        None => {
            check_sums_alone(dir, &mut rep);
            check_release_files(dir, None, &mut rep)?;
        }
    }
    Ok((rep, manifest))
}

/// The checks of the card, of Parquet row groups, and of links and special files, which need
/// no file's digest.
fn check_release_files(dir: &Path, manifest: Option<&Manifest>, rep: &mut VerifyReport) -> Result<()> {
    if dir.join("README.md").exists() {
        check_card(dir, manifest, rep)?;
    }
    check_row_groups(dir, rep);
    // symbolic links: the manifest's own files are reported by check_manifest
    let listed: BTreeSet<&str> = manifest.iter().flat_map(|m| m.files.iter().map(|f| f.path.as_str())).collect();
    for rel in walk(dir, |e| e.file_type().is_symlink() && !cache_blob_link(e.path())) {
        if !listed.contains(rel.as_str()) {
            rep.push(ProblemKind::NotRegular, format!("{rel}: a symbolic link; a release holds regular files only"));
        }
    }
    // pipes, sockets, devices
    for rel in walk(dir, |e| {
        let t = e.file_type();
        !t.is_file() && !t.is_dir() && !t.is_symlink()
    }) {
        if !listed.contains(rel.as_str()) {
            rep.push(
                ProblemKind::NotRegular,
                format!("{rel}: not a regular file (a pipe, socket or device); a release holds regular files only"),
            );
        }
    }
    Ok(())
}

/// Checks the files `SHA256SUMS` lists against their digests, as `sha256sum -c` would, for
/// a release without a readable manifest (no row counts or schemas then: those are the
/// manifest's). Silent when there is no `SHA256SUMS` that is a regular file.
fn check_sums_alone(dir: &Path, rep: &mut VerifyReport) {
    match entry(dir, "SHA256SUMS") {
        Entry::Readable => {}
        // both gone: each said, as each is a file the release lacks
        Entry::Missing => {
            rep.push(ProblemKind::Missing, "SHA256SUMS: missing too, so no file's checksum can be verified");
            return;
        }
        _ => return,
    }
    let text = match crate::stages::ingest::files::read_small(&dir.join("SHA256SUMS"), 64 << 20) {
        Ok(t) => t,
        Err(e) => {
            rep.push(ProblemKind::Unreadable, format!("SHA256SUMS: cannot be read: {}", os_error(e)));
            return;
        }
    };
    let mut readable = Vec::new();
    for (n, sha, path) in sums_entries(&text, &mut rep.problems) {
        if !safe_relative(&path) {
            rep.push(
                ProblemKind::Checksums,
                format!("SHA256SUMS:{n}: {path:?} is not a path inside the release (absolute, or with `..`)"),
            );
            continue;
        }
        match entry(dir, &path) {
            Entry::Readable => readable.push((sha, path)),
            // a missing manifest is said already
            Entry::Missing if path == "manifest.json" => {}
            Entry::Missing | Entry::DanglingLink => {
                rep.push(ProblemKind::Missing, format!("SHA256SUMS:{n}: {path} is missing"));
            }
            Entry::Folder => {
                rep.push(ProblemKind::NotRegular, format!("SHA256SUMS:{n}: {path} is a folder, not a file"))
            }
            // reported with the files that are not regular
            Entry::Special => {}
        }
    }
    let paths: Vec<PathBuf> = readable.iter().map(|(_, p)| dir.join(p)).collect();
    for ((sha, path), digest) in readable.iter().zip(hash::sha256_each(&paths)) {
        match digest {
            Ok(d) if d.sha256 == *sha => {}
            Ok(d) => rep.push(
                ProblemKind::Sha256Mismatch,
                format!("{path}: sha256 mismatch: SHA256SUMS says {sha}, found {}", d.sha256),
            ),
            // an unreadable manifest is said already, when it would not load
            Err(_) if path == "manifest.json" => {}
            Err(e) => rep.push(ProblemKind::Unreadable, format!("{path}: cannot be read: {}", os_error(e))),
        }
    }
}

/// Every Parquet file's row groups must stay under the dataset viewer's limit, and its
/// pages hold values (a page of none makes pyarrow refuse the file).
fn check_row_groups(dir: &Path, rep: &mut VerifyReport) {
    for rel in all_files(dir).into_iter().filter(|f| f.ends_with(".parquet")) {
        let p = dir.join(&rel);
        if lfs_pointer(&p).is_some() {
            continue;
        }
        // an unreadable footer is reported with the manifest's files
        let Ok(Ok(meta)) = crate::core::error::catch_panic(|| crate::stages::write::footer_with_page_index(&p)) else {
            continue;
        };
        // a page of no values: pyarrow, and so `datasets`, refuses the file
        if let Some((group, column)) = crate::stages::write::first_empty_page(&meta) {
            rep.push(
                ProblemKind::EmptyPage,
                format!(
                    "{rel}: row group {group}, column {column}: a data page of no values (apache/arrow-rs#10929), \
                     which pyarrow and `datasets` refuse to read (DuckDB and DataFusion read it); build the release \
                     again with this version of runpack, which cuts such a table's pages by size"
                ),
            );
        }
        for (i, rg) in meta.row_groups().iter().enumerate() {
            let size = rg.total_byte_size().max(0) as u64;
            if size > crate::stages::write::VIEWER_ROW_GROUP_LIMIT_BYTES {
                rep.push(ProblemKind::RowGroupSize, format!(
                    "{rel}: row group {i} holds {} bytes uncompressed, above the dataset viewer's limit of {} bytes \
                     (286.10 MiB); rewrite it with smaller row groups",
                    numbers::group_digits(size),
                    numbers::group_digits(crate::stages::write::VIEWER_ROW_GROUP_LIMIT_BYTES)
                ));
            }
        }
    }
}

/// The files under `dir`: regular files, and links into a Hugging Face cache's blobs.
fn all_files(dir: &Path) -> Vec<String> {
    walk(dir, |e| e.file_type().is_file() || (e.file_type().is_symlink() && cache_blob_link(e.path())))
}

/// The entries under `dir` (symbolic links not followed) that `keep` accepts, as
/// `/`-separated paths relative to `dir`, sorted; `.git/` and `.cache/huggingface/` are left out.
fn walk(dir: &Path, keep: impl Fn(&walkdir::DirEntry) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).min_depth(1).sort_by_file_name().into_iter().flatten() {
        if keep(&e) {
            let rel = crate::core::names::relative_path(dir, e.path());
            if rel.starts_with(".git/") || rel.starts_with(".cache/huggingface/") {
                continue;
            }
            out.push(rel);
        }
    }
    out
}

/// True for a SHA-256 digest as a manifest writes it: 64 lowercase hex digits.
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The files of `m` whose `sha256` is no SHA-256 digest (by index), each with its problem line
/// (the manifest is malformed: the file's content cannot be checked against it).
pub fn malformed_digests(m: &Manifest) -> Vec<(usize, String)> {
    m.files
        .iter()
        .enumerate()
        .filter(|(_, f)| !is_sha256(&f.sha256))
        .map(|(i, f)| {
            let what = if f.sha256.len() == 40 && f.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                "40 hex digits, the length of a git blob SHA-1".to_string()
            } else {
                format!("{} characters", f.sha256.chars().count())
            };
            (
                i,
                format!(
                    "manifest.json:/files/{i}/sha256: {:?} ({}) is not a SHA-256 digest (64 lowercase hex digits, found \
                     {what}): the manifest is malformed, {} cannot be checked against it",
                    f.sha256, f.path, f.path
                ),
            )
        })
        .collect()
}

/// Checks a release folder against its manifest, in order: the manifest's own counts and
/// lists, each file's presence, size and SHA-256, and the rows and schemas of the files that
/// read ([`check_manifest_rest`] does the rest). Each problem found is pushed to
/// `rep.problems`; each file whose digest matches to `rep.verified`.
fn check_manifest(
    dir: &Path,
    m: &Manifest,
    rep: &mut VerifyReport,
    footers_only: &BTreeSet<String>,
    progress: &dyn Progress,
) -> Result<()> {
    // a digest that is none: the file cannot be checked against it
    let malformed: BTreeMap<usize, String> = malformed_digests(m).into_iter().collect();
    rep.extend(ProblemKind::Manifest, malformed.values().cloned());
    check_counts(m, rep);
    check_lists(m, rep);
    let (good, changed) = check_files(dir, m, rep, footers_only, &malformed, progress);
    check_rows_and_schemas(dir, m, rep, footers_only, &good, &changed);
    Ok(())
}

/// The checks of the manifest that need no file's digest: its tables and splits against the
/// files, the data package, Croissant, files it leaves out, and `SHA256SUMS`.
///
/// Returns `croissant.json` when its checks found nothing: the rest of it is checked once the
/// files are hashed ([`check_croissant_as_built`]).
fn check_manifest_rest(dir: &Path, m: &Manifest, rep: &mut VerifyReport) -> Option<serde_json::Value> {
    let bad_digest: BTreeSet<&str> = malformed_digests(m).into_iter().map(|(i, _)| m.files[i].path.as_str()).collect();
    check_table_files(m, rep);
    check_datapackage(dir, m, rep);
    let croissant = check_croissant(dir, m, rep);
    check_split_names(m, rep);
    check_row_totals(m, rep);
    check_unexpected_files(dir, m, rep);
    check_sums(dir, m, rep, &bad_digest);
    croissant
}

/// Tables defined once, and counts of rejected rows that agree with the rejects files.
fn check_counts(m: &Manifest, rep: &mut VerifyReport) {
    // a table defined twice cannot be registered for SQL (which definition would hold?)
    let mut tables = BTreeMap::new();
    for t in &m.tables {
        *tables.entry(t.name.as_str()).or_insert(0usize) += 1;
    }
    for (name, n) in tables.into_iter().filter(|&(_, n)| n > 1) {
        rep.push(ProblemKind::Manifest, format!("manifest.json: table {name} is defined {n} times"));
    }
    // the counts of rejected rows agree with the rejects files (whose lines are checked
    // against their `rows` with the files): the card says them
    let rejects: BTreeMap<&str, Option<u64>> = m
        .files
        .iter()
        .filter(|f| f.kind == "rejects")
        .map(|f| (f.table.as_deref().unwrap_or(f.path.as_str()), f.rows))
        .collect();
    for (name, &n) in &m.report.rejected_rows {
        match rejects.get(name.as_str()) {
            Some(Some(rows)) if *rows == n => {}
            Some(Some(rows)) => rep.push(
                ProblemKind::Manifest,
                format!("manifest.json: report.rejected_rows gives {name} {n} rows, its rejects file holds {rows}"),
            ),
            Some(None) => {}
            None if n == 0 => {}
            None => rep.push(
                ProblemKind::Manifest,
                format!(
                    "manifest.json: report.rejected_rows gives {name} {n} rows, and no rejects file of it is listed"
                ),
            ),
        }
    }
    for (name, rows) in &rejects {
        if !m.report.rejected_rows.contains_key(*name) {
            rep.push(
                ProblemKind::Manifest,
                format!(
                    "manifest.json: rejects file of {name} ({}) is not counted in report.rejected_rows",
                    hash::rows(rows.unwrap_or(0))
                ),
            );
        }
    }
    for t in &m.tables {
        let listed = m.report.rejected_rows.get(&t.name).copied().unwrap_or(0);
        if t.rejected_rows.checked_add(t.duplicates_dropped) != Some(listed) {
            rep.push(
                ProblemKind::Manifest,
                format!(
                    "manifest.json: table {} has {} rejected and {} superseded rows, but its rejects file is counted \
                 as {listed} in report.rejected_rows",
                    t.name, t.rejected_rows, t.duplicates_dropped
                ),
            );
        }
    }
}

/// Paths listed once (in the files and in each table's and split's lists), one split per
/// file, and each table's Arrow schema the view of its Table Schema.
fn check_lists(m: &Manifest, rep: &mut VerifyReport) {
    // a path listed twice would count its rows twice
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &m.files {
        *seen.entry(f.path.as_str()).or_insert(0) += 1;
    }
    for (path, n) in seen.iter().filter(|&(_, n)| *n > 1) {
        rep.push(ProblemKind::Manifest, format!("{path}: listed {n} times in the manifest's files"));
    }
    for t in &m.tables {
        let lists = std::iter::once((format!("table {}", t.name), &t.files))
            .chain(t.splits.iter().map(|sp| (format!("table {} split {}", t.name, sp.name), &sp.files)));
        for (what, files) in lists {
            let mut seen = BTreeSet::new();
            for f in files.iter().filter(|f| !seen.insert(f.as_str())) {
                rep.push(ProblemKind::Manifest, format!("{f}: listed twice in the manifest's {what}"));
            }
        }
        // one split per file
        let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
        for sp in &t.splits {
            for f in &sp.files {
                if let Some(other) = owner.insert(f.as_str(), sp.name.as_str()).filter(|o| *o != sp.name) {
                    rep.push(
                        ProblemKind::Manifest,
                        format!("{f}: in splits {other} and {} of table {}", sp.name, t.name),
                    );
                }
            }
        }
        // the Arrow view of the schema is the schema's
        let want: Vec<(String, String)> =
            t.schema.arrow_schema().fields().iter().map(|f| (f.name().clone(), type_name(f.data_type()))).collect();
        let got: Vec<(String, String)> = t.arrow_schema.iter().map(|f| (f.name.clone(), f.data_type.clone())).collect();
        if want != got {
            let first = want.iter().zip(&got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
            let say = |v: Option<&(String, String)>| v.map(|(n, t)| format!("{n}: {t}")).unwrap_or("nothing".into());
            rep.push(
                ProblemKind::Manifest,
                format!(
                    "manifest.json: table {} arrow_schema[{first}] is {}, its schema gives {}",
                    t.name,
                    say(got.get(first)),
                    say(want.get(first))
                ),
            );
        }
    }
}

/// Each listed file is here, a regular file (not a Git LFS pointer) with the manifest's
/// size and SHA-256 (hashed with progress). Returns the paths that match (`good`) and those
/// whose content changed (`changed`, still read for what they hold).
fn check_files(
    dir: &Path,
    m: &Manifest,
    rep: &mut VerifyReport,
    footers_only: &BTreeSet<String>,
    malformed: &BTreeMap<usize, String>,
    progress: &dyn Progress,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut to_hash: Vec<(usize, PathBuf)> = Vec::new();
    let mut good: BTreeSet<String> = BTreeSet::new();
    for (i, f) in m.files.iter().enumerate() {
        if !safe_relative(&f.path) {
            rep.push(
                ProblemKind::Manifest,
                format!("{}: manifest path {}; refused", f.path, crate::stages::release::unsafe_path_reason(&f.path)),
            );
            continue;
        }
        let p = dir.join(&f.path);
        let meta = match std::fs::symlink_metadata(&p) {
            Ok(meta) => meta,
            // a folder on the way that cannot be read hides the file, which may well be there
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                rep.push(ProblemKind::Unreadable, format!("{}: cannot be read: {e}", f.path));
                continue;
            }
            Err(_) => {
                rep.push(
                    ProblemKind::Missing,
                    format!(
                        "{}: missing (manifest lists {} bytes, sha256 {})",
                        f.path,
                        numbers::group_digits(f.bytes),
                        f.sha256
                    ),
                );
                continue;
            }
        };
        if !(meta.is_file() || meta.is_symlink() && cache_blob_link(&p)) {
            let what = if meta.is_symlink() {
                "a symbolic link; a release holds regular files only"
            } else if meta.is_dir() {
                "a folder, not a file"
            } else {
                "not a regular file (a pipe, socket or device); a release holds regular files only"
            };
            rep.push(ProblemKind::NotRegular, format!("{}: {what}", f.path));
            continue;
        }
        if let Some(ptr) = lfs_pointer(&p) {
            if ptr.oid == f.sha256 && ptr.size == f.bytes {
                rep.push(ProblemKind::LfsPointer, format!(
                    "{}: not downloaded (Git LFS pointer to the expected object, sha256 {}, {} bytes); fetch it with `git lfs pull`",
                    f.path, ptr.oid, numbers::group_digits(ptr.size)
                ));
            } else {
                rep.push(ProblemKind::LfsPointer, format!(
                    "{}: Git LFS pointer to a different object (oid sha256:{}, {} bytes) than the manifest's (sha256 {}, {} bytes)",
                    f.path, ptr.oid, numbers::group_digits(ptr.size), f.sha256, numbers::group_digits(f.bytes)
                ));
            }
            continue;
        }
        if malformed.contains_key(&i) {
            continue;
        }
        if footers_only.contains(&f.path) {
            // checked elsewhere: its bytes are not here
            good.insert(f.path.clone());
            rep.verified.push(f.path.clone());
            continue;
        }
        to_hash.push((i, p));
    }
    // a file that cannot be read is one problem: the others are still checked
    progress.start("hashing", Unit::Bytes, Some(to_hash.iter().map(|(i, _)| m.files[*i].bytes).sum()));
    let digests = hash::sha256_each_counting(&to_hash.iter().map(|(_, p)| p.clone()).collect::<Vec<_>>(), &|n| {
        progress.advance(n)
    });
    progress.finish();
    let mut changed: BTreeSet<String> = BTreeSet::new();
    for ((i, path), d) in to_hash.iter().zip(digests) {
        let f = &m.files[*i];
        let d = match d {
            Ok(d) => d,
            Err(e) => {
                rep.push(ProblemKind::Unreadable, format!("{}: cannot be read: {}", f.path, os_error(e)));
                continue;
            }
        };
        let digest_differs = d.sha256 != f.sha256;
        if d.bytes != f.bytes {
            // a file of another size (cut short, grown) is said by its size first
            let digests =
                if digest_differs { format!(" (sha256 {}, expected {})", d.sha256, f.sha256) } else { String::new() };
            rep.push(
                ProblemKind::SizeMismatch,
                format!(
                    "{}: size {} bytes, manifest says {}{}{digests}",
                    f.path,
                    numbers::group_digits(d.bytes),
                    numbers::group_digits(f.bytes),
                    if d.bytes < f.bytes { smaller(path, &f.path) } else { "" },
                ),
            );
        } else if digest_differs {
            rep.push(
                ProblemKind::Sha256Mismatch,
                format!(
                    "{}: sha256 mismatch: expected {}, found {} (the size matches, the content does not)",
                    f.path, f.sha256, d.sha256
                ),
            );
        } else {
            good.insert(f.path.clone());
            rep.verified.push(f.path.clone());
        }
        if digest_differs {
            // its rows and schema still say what it holds instead (another table's file, an
            // older build's)
            changed.insert(f.path.clone());
        }
    }
    (good, changed)
}

/// Rows (Parquet) or lines (JSON Lines) of intact and changed files against the manifest's
/// counts, and each Parquet file's schema against its table's.
fn check_rows_and_schemas(
    dir: &Path,
    m: &Manifest,
    rep: &mut VerifyReport,
    footers_only: &BTreeSet<String>,
    good: &BTreeSet<String>,
    changed: &BTreeSet<String>,
) {
    // rows and schemas of intact files, and of changed files that still read
    for f in &m.files {
        let is_changed = changed.contains(&f.path);
        if !good.contains(&f.path) && !is_changed {
            continue;
        }
        let p = dir.join(&f.path);
        // rows of a Parquet file (and its schema), lines of a JSON Lines file
        let counted = match f.kind.as_str() {
            "parquet" => parquet_rows_schema(&p)
                .map(|(rows, schema)| (rows, "rows", Some(schema)))
                .map_err(|e| format!("not a readable Parquet file: {e}")),
            // only the footer of a file checked elsewhere is here
            "jsonl" | "rejects" if footers_only.contains(&f.path) => continue,
            "jsonl" | "rejects" => count_lines(&p)
                .map(|(n, cut)| (n, if cut { "lines, the last without its line end" } else { "lines" }, None))
                .map_err(|e| format!("cannot be read: {}", os_error(e))),
            _ => continue,
        };
        let (found, unit, schema) = match counted {
            Ok(c) => c,
            // a changed file that does not read is said once, by its checksum
            Err(_) if is_changed => continue,
            Err(e) => {
                rep.push(ProblemKind::Unreadable, format!("{}: {e}", f.path));
                continue;
            }
        };
        match f.rows {
            Some(n) if n == found => {}
            Some(n) => rep.push(
                ProblemKind::RowCount,
                format!("{}: {} {unit}, manifest says {}", f.path, numbers::group_digits(found), hash::rows(n)),
            ),
            None => rep.push(
                ProblemKind::RowCount,
                format!("{}: {} {unit}, the manifest gives no row count", f.path, numbers::group_digits(found)),
            ),
        }
        if let (Some(schema), Some(t)) = (schema, f.table.as_ref().and_then(|t| m.table(t))) {
            let diffs = schema_diff(&t.schema.arrow_schema(), &schema);
            if !diffs.is_empty() {
                rep.push(
                    ProblemKind::Schema,
                    format!("{}: schema differs from the manifest's table {}: {}", f.path, t.name, diffs.join("; ")),
                );
            }
        }
    }
}

/// The data files each table names are its Parquet files in the manifest; JSON Lines copies
/// exist exactly for the tables whose formats ask for them, with the table's rows.
fn check_table_files(m: &Manifest, rep: &mut VerifyReport) {
    // every data file a table or split names is a Parquet file of the manifest
    for t in &m.tables {
        let named: BTreeSet<&String> = t.files.iter().chain(t.splits.iter().flat_map(|s| s.files.iter())).collect();
        for f in named {
            let listed =
                m.files.iter().any(|e| &e.path == f && e.kind == "parquet" && e.table.as_deref() == Some(&t.name));
            if !safe_relative(f) {
                rep.push(
                    ProblemKind::Manifest,
                    format!(
                        "{f}: table {} names a data file whose path {}; refused",
                        t.name,
                        crate::stages::release::unsafe_path_reason(f)
                    ),
                );
            } else if !listed {
                rep.push(
                    ProblemKind::Manifest,
                    format!("{f}: table {} names a data file the manifest's file list does not hold", t.name),
                );
            }
        }
    }
    // a data file belongs to a table the manifest defines, and every table whose formats list
    // "jsonl" has its JSON Lines copies with its rows (and no other table has any)
    for f in m.files.iter().filter(|f| f.kind == "parquet" || f.kind == "jsonl") {
        if let Some(t) = f.table.as_deref().filter(|t| m.table(t).is_none()) {
            rep.push(
                ProblemKind::Manifest,
                format!("{}: belongs to table {t}, which the manifest does not define", f.path),
            );
        }
    }
    for t in &m.tables {
        let copies: Vec<&crate::stages::release::FileEntry> =
            m.files.iter().filter(|f| f.kind == "jsonl" && f.table.as_deref() == Some(&t.name)).collect();
        let rows: u64 = copies.iter().filter_map(|f| f.rows).sum();
        if !t.has_copies() {
            if let Some(f) = copies.first() {
                rep.push(
                    ProblemKind::Manifest,
                    format!(
                        "{}: a JSON Lines copy of table {}, whose formats ({}) list no \"jsonl\"",
                        f.path,
                        t.name,
                        t.formats.join(", ")
                    ),
                );
            }
        } else if copies.is_empty() && !t.files.is_empty() {
            rep.push(
                ProblemKind::Manifest,
                format!("table {}: the manifest lists no JSON Lines copy (jsonl/) of it", t.name),
            );
        } else if rows != t.rows {
            rep.push(
                ProblemKind::Manifest,
                format!(
                    "table {}: the manifest's JSON Lines copies count {rows} rows, its table entry says {}",
                    t.name, t.rows
                ),
            );
        }
    }
}

/// Each split's files carry its name and are numbered shards 0 to n-1 of n.
fn check_split_names(m: &Manifest, rep: &mut VerifyReport) {
    // each split's files carry its name, as a build names them: data/<table>/<split>.parquet,
    // or data/<table>.parquet for the one `train` split of a table without a split column
    // (either with -NNNNN-of-NNNNN before .parquet when sharded)
    let shard = regex::Regex::new(r"-\d{5}-of-\d{5}$").expect("valid");
    let numbered = regex::Regex::new(r"-(\d{5})-of-(\d{5})\.parquet$").expect("valid");
    for t in &m.tables {
        for sp in &t.splits {
            // shards are numbered 0 to n-1 of n, all of them present
            let shards: Vec<(u64, u64, &String)> = sp
                .files
                .iter()
                .filter_map(|f| {
                    let c = numbered.captures(f)?;
                    Some((c[1].parse().ok()?, c[2].parse().ok()?, f))
                })
                .collect();
            if !shards.is_empty() {
                let n = sp.files.len() as u64;
                let mut have: Vec<u64> = shards.iter().map(|(i, ..)| *i).collect();
                have.sort_unstable();
                if let Some((_, of, f)) = shards.iter().find(|(_, of, _)| *of != n) {
                    rep.push(
                        ProblemKind::Manifest,
                        format!(
                            "{f}: named one of {of} shards, but split {} of table {} has {n} files",
                            sp.name, t.name
                        ),
                    );
                } else if shards.len() as u64 != n || have != (0..n).collect::<Vec<_>>() {
                    let missing: Vec<String> =
                        (0..n).filter(|i| have.binary_search(i).is_err()).map(|i| format!("{i:05}")).collect();
                    rep.push(
                        ProblemKind::Manifest,
                        format!(
                            "table {} split {}: its {n} shards are not numbered 00000 to {:05} (missing {})",
                            t.name,
                            sp.name,
                            n - 1,
                            missing.join(", ")
                        ),
                    );
                }
            }
            for f in &sp.files {
                let stem = f.strip_prefix("data/").and_then(|x| x.strip_suffix(".parquet")).unwrap_or(f);
                let stem = shard.replace(stem, "");
                let own = stem == format!("{}/{}", t.name, sp.name)
                    || (t.splits.len() == 1 && sp.name == "train" && stem == t.name);
                if !own {
                    rep.push(
                        ProblemKind::Manifest,
                        format!(
                            "{f}: listed in split {} of table {}, but named for another table or split",
                            sp.name, t.name
                        ),
                    );
                }
            }
        }
    }
}

/// Table and split row totals agree with their files' entries.
fn check_row_totals(m: &Manifest, rep: &mut VerifyReport) {
    // table row totals
    for t in &m.tables {
        let sum: u64 = m
            .files
            .iter()
            .filter(|f| f.kind == "parquet" && f.table.as_deref() == Some(&t.name))
            .filter_map(|f| f.rows)
            .sum();
        if sum != t.rows {
            rep.push(
                ProblemKind::Manifest,
                format!(
                    "table {}: the manifest's file entries count {sum} rows, its table entry says {}",
                    t.name, t.rows
                ),
            );
        }
        // each split's rows, from its files' entries
        for sp in &t.splits {
            let sum: u64 =
                sp.files.iter().filter_map(|p| m.files.iter().find(|f| &f.path == p)).filter_map(|f| f.rows).sum();
            if sum != sp.rows {
                rep.push(
                    ProblemKind::Manifest,
                    format!(
                        "table {} split {}: the manifest's file entries count {sum} rows, its split entry says {}",
                        t.name, sp.name, sp.rows
                    ),
                );
            }
        }
        let split_sum: u64 = t.splits.iter().map(|sp| sp.rows).sum();
        if !t.splits.is_empty() && split_sum != t.rows {
            rep.push(
                ProblemKind::Manifest,
                format!("table {}: its splits count {split_sum} rows, its table entry says {}", t.name, t.rows),
            );
        }
    }
}

/// Files in the folder that the manifest does not list.
fn check_unexpected_files(dir: &Path, m: &Manifest, rep: &mut VerifyReport) {
    for rel in unexpected_files(dir, m) {
        rep.push(ProblemKind::Unexpected, format!("{rel}: unexpected file (not in the manifest)"));
    }
}

/// The files in release folder `dir` (regular files, and links into a Hugging Face cache's
/// blobs; `.git/` and `.cache/huggingface/` left out) that manifest `m` does not list, besides
/// `manifest.json`, `SHA256SUMS` and a downloaded copy's `.gitattributes`: what verify reports
/// as unexpected, and what keeps a build from taking the release for up to date.
pub fn unexpected_files(dir: &Path, m: &Manifest) -> Vec<String> {
    let listed: BTreeSet<&str> = m.files.iter().map(|f| f.path.as_str()).collect();
    // a Hub repository's own `.gitattributes` (which files are LFS), in a downloaded copy
    let own = ["manifest.json", "SHA256SUMS", ".gitattributes"];
    all_files(dir).into_iter().filter(|rel| !own.contains(&rel.as_str()) && !listed.contains(rel.as_str())).collect()
}

/// `SHA256SUMS` agrees with the manifest (and with `manifest.json`'s own digest) line by line.
fn check_sums(dir: &Path, m: &Manifest, rep: &mut VerifyReport, bad_digest: &BTreeSet<&str>) {
    // SHA256SUMS agrees
    let sums_path = dir.join("SHA256SUMS");
    let sums = match entry(dir, "SHA256SUMS") {
        Entry::Missing | Entry::DanglingLink => Some(Err(std::io::ErrorKind::NotFound.into())),
        Entry::Folder => Some(Err(std::io::Error::other("a folder, not a file"))),
        // reported with the files that are not regular
        Entry::Special => None,
        Entry::Readable => Some(std::fs::read_to_string(&sums_path)),
    };
    match sums {
        None => {}
        Some(sums) => match sums {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => rep.push(ProblemKind::Missing, "SHA256SUMS: missing"),
            Err(e) => rep.push(ProblemKind::Unreadable, format!("SHA256SUMS: cannot be read: {e}")),
            Ok(text) => {
                let mut seen = BTreeSet::new();
                for (n, sha, path) in sums_entries(&text, &mut rep.problems) {
                    let (sha, path) = (sha.as_str(), path.as_str());
                    seen.insert(path.to_string());
                    if path == "manifest.json" {
                        if !matches!(entry(dir, "manifest.json"), Entry::Readable) {
                            // missing or not a regular file: reported already
                            continue;
                        }
                        match hash::sha256_file(&dir.join("manifest.json")) {
                            Ok(d) if d.sha256 != sha => rep.push(
                                ProblemKind::Sha256Mismatch,
                                format!("manifest.json: sha256 mismatch: SHA256SUMS says {sha}, found {}", d.sha256),
                            ),
                            Ok(_) => rep.verified.push("manifest.json".into()),
                            Err(e) => rep.push(
                                ProblemKind::Unreadable,
                                format!("manifest.json: cannot be read: {}", os_error(e)),
                            ),
                        }
                    } else if let Some(f) = m.files.iter().find(|f| f.path == path) {
                        if f.sha256 != sha && !bad_digest.contains(f.path.as_str()) {
                            rep.push(
                                ProblemKind::Checksums,
                                format!(
                                    "SHA256SUMS:{n}: gives {path} the sha256 {sha}, the manifest gives {}",
                                    f.sha256
                                ),
                            );
                        }
                    } else {
                        rep.push(ProblemKind::Checksums, format!("SHA256SUMS:{n}: {path} is not in the manifest"));
                    }
                }
                for path in m.files.iter().map(|f| f.path.as_str()).chain(["manifest.json"]) {
                    if !seen.contains(path) {
                        rep.push(ProblemKind::Checksums, format!("SHA256SUMS: no line for {path}"));
                    }
                }
            }
        },
    }
}

/// The entries of a `SHA256SUMS` text: (1-based line, digest, path) of each line that is one
/// ([`sums_line`]); comment and blank lines are skipped, as `sha256sum -c` skips them, and any
/// other line is a problem pushed to `problems`. A path given a line again is a problem too
/// (runpack writes one line per file; `sha256sum -c` would check it twice), and that line is
/// left out.
fn sums_entries(text: &str, problems: &mut Vec<Problem>) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    let mut first: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let Some((sha, path)) = sums_line(line) else {
            problems.push(Problem::new(
                ProblemKind::Checksums,
                format!("SHA256SUMS:{}: not a `<sha256>  <path>` line", n + 1),
            ));
            continue;
        };
        match first.get(&path) {
            Some((at, first_sha)) => {
                let digests =
                    if *first_sha == sha { String::new() } else { format!(", which gives it {first_sha}, not {sha}") };
                problems.push(Problem::new(
                    ProblemKind::Checksums,
                    format!("SHA256SUMS:{}: {path} has a line already (line {at}{digests})", n + 1),
                ));
            }
            None => {
                first.insert(path.clone(), (n + 1, sha.clone()));
                out.push((n + 1, sha, path));
            }
        }
    }
    out
}

/// The digest (lowercase) and path of a `SHA256SUMS` line in any form GNU coreutils'
/// `sha256sum -c` reads: `<sha256>  <path>` (text mode), `<sha256> *<path>` (binary mode),
/// `<sha256> <path>`, a tab for the space, blanks before it all, a leading `\` for a path with
/// `\n` or `\\` escapes, a CRLF ending, and the BSD form `SHA256 (<path>) =
/// <sha256>` (also without the space before `=`, and OpenSSL's `SHA256(<path>)= <sha256>`);
/// `None` for anything else. The path is the file it opens: `./data/a.parquet`,
/// `data//a.parquet` and `data/./a.parquet` are `data/a.parquet` (an absolute path is kept as
/// it is, for the caller to refuse).
fn sums_line(line: &str) -> Option<(String, String)> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    // coreutils skips blanks before the line's content
    let line = line.trim_start_matches([' ', '\t']);
    let (escaped, line) = match line.strip_prefix('\\') {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let path_of = |p: &str| {
        let p = if escaped { p.replace("\\n", "\n").replace("\\\\", "\\") } else { p.to_string() };
        if p.starts_with('/') { p } else { crate::core::names::resolved_path(&p) }
    };
    // BSD form, as `sha256sum --tag` writes it: `SHA256 (<path>) = <sha256>`
    if let Some(tagged) = line.strip_prefix("SHA256 (").or_else(|| line.strip_prefix("SHA256(")) {
        let (p, sha) = tagged.rsplit_once(") = ").or_else(|| tagged.rsplit_once(")= "))?;
        let path = path_of(p);
        let ok = sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()) && !path.is_empty();
        return ok.then(|| (sha.to_ascii_lowercase(), path));
    }
    let sha = line.get(..64).filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))?;
    let rest = line[64..].strip_prefix([' ', '\t'])?;
    let rest = rest.strip_prefix([' ', '*']).unwrap_or(rest);
    let path = path_of(rest);
    (!path.is_empty()).then(|| (sha.to_ascii_lowercase(), path))
}

/// The lines of the file `p`, a last one without its line end among them, and whether there is
/// such a last line (a file cut short).
///
/// Errors: [`Error::Io`] when the file cannot be read.
fn count_lines(p: &Path) -> Result<(u64, bool)> {
    use std::io::Read;
    let mut f = std::fs::File::open(p).map_err(|e| Error::io(p, e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    let mut last = b'\n';
    loop {
        let k = f.read(&mut buf).map_err(|e| Error::io(p, e))?;
        if k == 0 {
            // a last line without its line end (a file cut short) is a line too
            let cut = last != b'\n';
            return Ok((n + u64::from(cut), cut));
        }
        n += memchr::memchr_iter(b'\n', &buf[..k]).count() as u64;
        last = buf[k - 1];
    }
}

/// Rows and Arrow schema of the Parquet file `p`, from its footer. The error is the reason
/// alone (the caller names the file).
fn parquet_rows_schema(p: &Path) -> std::result::Result<(u64, arrow::datatypes::SchemaRef), String> {
    let f = std::fs::File::open(p).map_err(|e| e.to_string())?;
    let b = open_parquet(f)?;
    let rows = b.metadata().file_metadata().num_rows() as u64;
    Ok((rows, b.schema().clone()))
}

/// The Parquet reader of `f`, its footer read. A damaged footer can make the readers panic
/// (the Arrow schema it embeds is decoded by arrow-ipc, which panics on some bytes): that is
/// an error like any other, the reason alone (the caller names the file).
fn open_parquet(
    f: std::fs::File,
) -> std::result::Result<parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder<std::fs::File>, String> {
    crate::core::error::catch_panic(|| {
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| e.to_string())
    })
    .map_err(|panic| format!("the Parquet reader stopped on {panic}"))
    .and_then(|r| r)
}

pub use crate::stages::card::front_matter;

/// A data file glob/path of a card, with what it matched.
struct CardPath {
    config: String,
    split: String,
    pattern: String,
    /// Where the card gives it: `README.md:<line>:`.
    at: String,
}

/// `README.md:<line>:` for the key or item at `path` of the card's front matter (paths and
/// lines of [`crate::stages::card::yaml_lines`]), or `README.md:` when the path is not there.
fn readme_at(lines: &BTreeMap<String, usize>, path: &str) -> String {
    match lines.get(path) {
        Some(l) => format!("README.md:{l}:"),
        None => "README.md:".into(),
    }
}

/// Whether release file `path` (`/`-separated, relative to the release) is one that the card's
/// `data_files` pattern `pattern` names, read as the Hub and `datasets` read it (fsspec's
/// glob: `*` and `?` within one name, `[…]` and `[!…]` classes, `**` for any folders); a
/// pattern that is no glob names the file spelled as it is.
pub fn data_files_match(pattern: &str, path: &str) -> bool {
    // `./data/x.parquet` names `data/x.parquet`, as `datasets` resolves it
    let mut pattern = pattern;
    while let Some(rest) = pattern.strip_prefix("./") {
        pattern = rest;
    }
    // a hidden file or folder is matched only by a pattern that names its dot, as `datasets`
    // resolves patterns
    let options =
        glob::MatchOptions { case_sensitive: true, require_literal_separator: true, require_literal_leading_dot: true };
    match glob::Pattern::new(pattern) {
        Ok(p) => p.matches_with(path, options),
        Err(_) => pattern == path,
    }
}

/// Problems of a card's `configs` against the files of `dir` (or of a remote listing): the
/// front matter reads as YAML the way `datasets` reads it, configs are well formed, each
/// `data_files` pattern matches files, and each data file is in one config and split.
pub fn card_problems(card: &str, files: &[String], empty: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    let Some(fm) = front_matter(card) else {
        out.push(crate::stages::card::no_front_matter_problem(card));
        return out;
    };
    let yaml: yaml_serde::Value = match yaml_serde::from_str(fm) {
        Ok(v) => v,
        Err(e) => {
            // the parser counts lines from the front matter, which starts on the card's line 2
            let line = regex::Regex::new(r"\bline (\d+)").expect("valid");
            let text = e.to_string();
            let message = line.replace_all(&text, |c: &regex::Captures| {
                format!("line {}", c[1].parse::<u64>().map(|n| n + 1).unwrap_or(0))
            });
            let at = crate::stages::card::yaml_error_place(fm, &e)
                .map(|(line, column)| format!("{}:{column}:", line + 1))
                .unwrap_or_default();
            out.push(format!("README.md:{at} front matter is not valid YAML: {message}"));
            return out;
        }
    };
    // the front matter starts on the card's line 2
    let lines = crate::stages::card::yaml_lines(fm, 2);
    let at = |path: &str| readme_at(&lines, path);
    for t in crate::stages::card::non_plain_yaml(fm, 2) {
        out.push(format!("README.md: {t}"));
    }
    for a in crate::stages::card::yaml11_ambiguous(fm) {
        // the front matter starts on the card's line 2
        out.push(format!(
            "README.md:{}: `{}` is a string to YAML 1.2 but {} to PyYAML, which `datasets` and `huggingface_hub` \
             read the card with; quote it",
            a.line + 1,
            a.value,
            a.pyyaml
        ));
    }
    let data_exts = [".parquet", ".jsonl", ".json", ".csv", ".arrow", ".txt", ".tsv", ".jsonl.gz", ".jsonl.zst"];
    let is_data = |f: &str| {
        data_exts.iter().any(|e| f.ends_with(e))
            && f != "manifest.json"
            && f != "datapackage.json"
            && f != "croissant.json"
            && !f.starts_with("rejects/")
    };
    out.extend(dataset_info_problems(&yaml, &lines));
    // the data files a config must list (those of tables without rows stay out of configs)
    let listable = |f: &&String| is_data(f) && (f.starts_with("data/") || !f.contains('/')) && !empty.contains(*f);
    match yaml.get("configs") {
        None if files.iter().any(|f| listable(&f)) => out.push(
            "README.md: the card lists no configs, so `datasets` guesses configs and splits from the file names; \
             list each config's data_files"
                .into(),
        ),
        Some(c) if c.as_sequence().is_none() => {
            out.push(format!("{} configs is {}, not a list of configs", at("configs"), yaml_kind(c)));
        }
        _ => {}
    }
    let paths = match yaml.get("configs").and_then(|c| c.as_sequence()) {
        Some(configs) => config_paths(configs, files, &is_data, &at, &mut out),
        None => Vec::new(),
    };
    if paths.is_empty() {
        return out;
    }
    out.extend(data_files_problems(&paths, files, &listable));
    out
}

/// The `data_files` patterns of each config with their splits, pushing to `out` the problems
/// of names, defaults, `data_dir` and entries that are not patterns; `at` places a front
/// matter path in the card.
fn config_paths(
    configs: &[yaml_serde::Value],
    files: &[String],
    is_data: &dyn Fn(&str) -> bool,
    at: &dyn Fn(&str) -> String,
    out: &mut Vec<String>,
) -> Vec<CardPath> {
    let mut paths: Vec<CardPath> = Vec::new();
    config_names_and_defaults(configs, at, out);
    for (ci, c) in configs.iter().enumerate() {
        let name = c.get("config_name").and_then(|v| v.as_str()).unwrap_or("").to_string();
        let here = format!("configs[{ci}]");
        match c.get("config_name") {
            Some(yaml_serde::Value::String(n)) if !n.is_empty() => {}
            None | Some(yaml_serde::Value::Null) | Some(yaml_serde::Value::String(_)) => {
                out.push(format!("{} configs[{ci}] has no config_name", at(&here)))
            }
            Some(other) => out.push(format!(
                "{} configs[{ci}]: config_name is {}, not a string",
                at(&format!("{here}.config_name")),
                yaml_kind(other)
            )),
        }
        // any other key of a config is passed to `datasets`' Parquet builder: `columns`,
        // `filters` and `features` load other data than the files hold, others fail the load
        if let Some(m) = c.as_mapping() {
            for k in m.keys() {
                let key = k.as_str().unwrap_or("");
                if !matches!(key, "config_name" | "data_files" | "data_dir" | "default") {
                    out.push(format!(
                        "{} config `{name}`: `{}` is passed to `datasets`' Parquet builder, which then loads other \
                         data than the release's files hold (`columns`, `filters`, `features`) or fails on a key it \
                         does not know; a config holds config_name, data_files and default",
                        at(&format!("{here}.{key}")),
                        if key.is_empty() { format!("{k:?}") } else { key.to_string() }
                    ));
                }
            }
        }
        let data_dir = c.get("data_dir").and_then(|v| v.as_str());
        if let Some(dd) = data_dir {
            let prefix = format!("{}/", dd.trim_end_matches('/'));
            let n = files.iter().filter(|f| f.starts_with(&prefix) && is_data(f)).count();
            let at = at(&format!("{here}.data_dir"));
            if n == 0 {
                out.push(format!("{at} config `{name}`: data_dir `{dd}` holds no data files"));
            } else {
                out.push(format!(
                    "{at} config `{name}`: data_dir `{dd}` is accepted by the Hub but its split assignment is guessed from file names; list explicit data_files"
                ));
            }
        }
        let base = data_dir.map(|d| format!("{}/", d.trim_end_matches('/'))).unwrap_or_default();
        let mut add = |split: &str, p: &str, path: String| {
            paths.push(CardPath {
                config: name.clone(),
                split: split.into(),
                pattern: format!("{base}{p}"),
                at: at(&path),
            })
        };
        let files_at = format!("{here}.data_files");
        match c.get("data_files") {
            Some(yaml_serde::Value::String(s)) => add("train", s, files_at),
            Some(yaml_serde::Value::Sequence(items)) => {
                for (j, it) in items.iter().enumerate() {
                    let item_at = format!("{files_at}[{j}]");
                    match it {
                        yaml_serde::Value::String(s) => add("train", s, item_at),
                        yaml_serde::Value::Mapping(_) => {
                            let split = it.get("split").and_then(|v| v.as_str()).unwrap_or("train").to_string();
                            if !crate::core::names::valid_split_name(&split) {
                                out.push(format!(
                                    "{} config `{name}`: split {split:?} is not loadable (a split name must match ^\\w+(\\.\\w+)*$); use {:?}",
                                    at(&format!("{item_at}.split")),
                                    crate::core::names::suggest_split_name(&split)
                                ));
                            }
                            match it.get("path") {
                                Some(yaml_serde::Value::String(p)) => add(&split, p, format!("{item_at}.path")),
                                Some(yaml_serde::Value::Sequence(ps)) => {
                                    for (k, p) in ps.iter().enumerate() {
                                        if let Some(p) = p.as_str() {
                                            add(&split, p, format!("{item_at}.path[{k}]"));
                                        }
                                    }
                                }
                                _ => out.push(format!("{} config `{name}` split `{split}` has no path", at(&item_at))),
                            }
                        }
                        _ => out.push(format!("{} config `{name}`: unreadable data_files entry", at(&item_at))),
                    }
                }
            }
            None => {}
            Some(_) => out.push(format!("{} config `{name}`: data_files must be a string or a list", at(&files_at))),
        }
    }
    paths
}

/// The problems of the configs' names and defaults, pushed to `out`: `datasets` takes one
/// config per name and at most one default, and reads any value Python takes as true as a
/// `default: true`.
fn config_names_and_defaults(configs: &[yaml_serde::Value], at: &dyn Fn(&str) -> String, out: &mut Vec<String>) {
    // each name with the configs that give it
    let mut named: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (ci, c) in configs.iter().enumerate() {
        if let Some(n) = c.get("config_name").and_then(|v| v.as_str()).filter(|n| !n.is_empty()) {
            named.entry(n).or_default().push(ci);
        }
    }
    for (n, given) in named.iter().filter(|(_, g)| g.len() > 1) {
        out.push(format!(
            "{} config `{n}` is defined {} times in configs; a config name is used once",
            at(&format!("configs[{}]", given[1])),
            given.len()
        ));
    }
    for (ci, c) in configs.iter().enumerate() {
        if let Some(d) = c.get("default").filter(|d| !d.is_bool()) {
            out.push(format!(
                "{} configs[{ci}]: default is {}, not true or false (`datasets` takes any value Python \
                 reads as true for true)",
                at(&format!("configs[{ci}].default")),
                yaml_kind(d)
            ));
        }
    }
    let defaults: Vec<(usize, String)> = configs
        .iter()
        .enumerate()
        .filter(|(_, c)| c.get("default").is_some_and(python_truthy))
        .map(|(ci, c)| (ci, format!("`{}`", c.get("config_name").and_then(|v| v.as_str()).unwrap_or(""))))
        .collect();
    if defaults.len() > 1 {
        out.push(format!(
            "{} configs {} are each `default: true`; a card has one default config at most (`datasets` \
             refuses several)",
            at(&format!("configs[{}].default", defaults[1].0)),
            defaults.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
}

/// Problems of the files the card's patterns match: a pattern that matches none, a file in
/// several splits of a config or in several configs, a data file in none.
fn data_files_problems(paths: &[CardPath], files: &[String], listable: &dyn Fn(&&String) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    // each file with the (config, split, place in the card) of each pattern that matches it
    let mut owners: BTreeMap<&str, Vec<(&str, &str, &str)>> = BTreeMap::new();
    for cp in paths {
        let matched: Vec<&String> = files.iter().filter(|f| data_files_match(&cp.pattern, f)).collect();
        if matched.is_empty() {
            let hint = files.iter().find(|f| f.to_lowercase() == cp.pattern.to_lowercase());
            out.push(format!(
                "{} config `{}` split `{}`: `{}` matches no file{}",
                cp.at,
                cp.config,
                cp.split,
                cp.pattern,
                hint.map(|h| format!(" (did you mean `{h}`? paths are case-sensitive)")).unwrap_or_default()
            ));
        }
        for f in matched {
            owners.entry(f.as_str()).or_default().push((&cp.config, &cp.split, &cp.at));
        }
    }
    let configs: BTreeSet<&str> = paths.iter().map(|p| p.config.as_str()).collect();
    for cfg in &configs {
        for (f, os) in &owners {
            // this config's splits that match the file, each with the places of its patterns
            let mut splits: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for (_, s, at) in os.iter().filter(|(c, ..)| c == cfg) {
                splits.entry(s).or_default().push(at);
            }
            // a file a split lists twice (the same path, or globs that overlap): `datasets`
            // reads it twice, and the split holds each of its rows twice
            for (split, ats) in splits.iter().filter(|(_, ats)| ats.len() > 1) {
                let n = ats.len();
                out.push(format!(
                    "{} config `{cfg}` split `{split}`: `{f}` is matched {n} times by its data_files; `datasets` \
                     reads it {n} times, each row {n} times",
                    ats[1]
                ));
            }
            if splits.len() > 1 {
                out.push(format!(
                    "README.md: config `{cfg}`: `{f}` is matched by several splits ({}); a file belongs to one split",
                    splits.keys().copied().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    for (f, os) in &owners {
        let in_configs: BTreeSet<&str> = os.iter().map(|(c, ..)| *c).collect();
        if in_configs.len() > 1 {
            out.push(format!(
                "README.md: `{f}` is in several configs ({}); a file belongs to one config and split",
                in_configs.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    for f in files.iter().filter(listable) {
        if f.ends_with(".md") {
            continue;
        }
        if !owners.contains_key(f.as_str()) {
            out.push(format!("README.md: `{f}` is in no config and split"));
        }
    }
    out
}

/// The Parquet files that the manifest says hold no rows: an empty split stays out of the
/// card's `configs` (the `datasets` library refuses it).
pub fn empty_parquet_files(manifest: Option<&Manifest>) -> BTreeSet<String> {
    manifest
        .map(|m| m.files.iter().filter(|f| f.kind == "parquet" && f.rows == Some(0)).map(|f| f.path.clone()).collect())
        .unwrap_or_default()
}

/// What stands at a name in the release folder, told before anything is opened (a pipe or
/// device would block the reading).
enum Entry {
    Missing,
    DanglingLink,
    Folder,
    /// A pipe, socket or device: never opened.
    Special,
    /// A regular file, or a link to one.
    Readable,
}

fn entry(dir: &Path, name: &str) -> Entry {
    let path = dir.join(name);
    if std::fs::symlink_metadata(&path).is_err() {
        return Entry::Missing;
    }
    match std::fs::metadata(&path) {
        Err(_) => Entry::DanglingLink,
        Ok(m) if m.is_dir() => Entry::Folder,
        Ok(m) if m.is_file() => Entry::Readable,
        Ok(_) => Entry::Special,
    }
}

/// The reason of a read error without the path it carries: a problem line names the file
/// once, by its path in the release.
fn os_error(e: crate::core::error::Error) -> String {
    match e {
        crate::core::error::Error::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// `croissant.json` against the manifest: Croissant 1.1, a `cr:FileObject` for each data file
/// whose `contentUrl` and `sha256` are the manifest's, and a record set for each table with a
/// field per column.
fn check_croissant(dir: &Path, m: &Manifest, rep: &mut VerifyReport) -> Option<serde_json::Value> {
    use serde_json::Value;
    let path = dir.join("croissant.json");
    if !m.files.iter().any(|f| f.path == "croissant.json") || !path.is_file() {
        return None;
    }
    let Ok(text) = crate::stages::ingest::files::read_small(&path, 64 << 20) else { return None };
    let doc = match serde_json::from_str::<Value>(&text) {
        Ok(doc) if doc.is_object() => doc,
        Err(e) => {
            rep.push(
                ProblemKind::Croissant,
                match crate::core::error::Error::json_file("croissant.json", &e) {
                    crate::core::error::Error::Config { location, message } => {
                        format!("{location}: not valid JSON: {message}")
                    }
                    other => other.to_string(),
                },
            );
            return None;
        }
        Ok(other) => {
            rep.push(
                ProblemKind::Croissant,
                format!(
                    "croissant.json: expected a Croissant dataset (a JSON object), found {}",
                    crate::stages::ingest::path::describe(&other)
                ),
            );
            return None;
        }
    };
    let before = rep.problems.len();
    let conforms = doc.get("conformsTo").and_then(Value::as_str);
    if conforms != Some(crate::stages::croissant::CROISSANT_VERSION) {
        rep.push(
            ProblemKind::Croissant,
            format!(
                "croissant.json: /conformsTo is {}, expected \"{}\"",
                conforms.map(|c| format!("{c:?}")).unwrap_or_else(|| "missing".into()),
                crate::stages::croissant::CROISSANT_VERSION
            ),
        );
    }
    let distribution = doc.get("distribution").and_then(Value::as_array).cloned().unwrap_or_default();
    let objects: BTreeMap<&str, (usize, Option<&str>)> = distribution
        .iter()
        .enumerate()
        .filter(|(_, d)| d.get("@type").and_then(Value::as_str) == Some("cr:FileObject"))
        .filter_map(|(i, d)| Some((d.get("contentUrl")?.as_str()?, (i, d.get("sha256").and_then(Value::as_str)))))
        .collect();
    for f in m.files.iter().filter(|f| f.kind == "parquet" || f.kind == "jsonl") {
        match objects.get(f.path.as_str()) {
            None => {
                rep.push(ProblemKind::Croissant, format!("croissant.json: no FileObject has contentUrl {}", f.path))
            }
            Some((i, sha)) if *sha != Some(f.sha256.as_str()) => rep.push(
                ProblemKind::Croissant,
                format!(
                    "croissant.json: /distribution/{i} ({}) has sha256 {}, the manifest says {}",
                    f.path,
                    sha.unwrap_or("(none)"),
                    f.sha256
                ),
            ),
            Some(_) => {}
        }
    }
    for (url, (i, _)) in &objects {
        if !m.files.iter().any(|f| f.path == *url && (f.kind == "parquet" || f.kind == "jsonl")) {
            rep.push(
                ProblemKind::Croissant,
                format!("croissant.json: /distribution/{i} names {url}, which is no data file of the manifest"),
            );
        }
    }
    let sets = doc.get("recordSet").and_then(Value::as_array).cloned().unwrap_or_default();
    for t in m.tables.iter().filter(|t| !t.files.is_empty()) {
        let Some(set) = sets.iter().find(|s| s.get("@id").and_then(Value::as_str) == Some(t.name.as_str())) else {
            rep.push(ProblemKind::Croissant, format!("croissant.json: no record set describes table {}", t.name));
            continue;
        };
        let names: Vec<&str> = set
            .get("field")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|f| f.get("name").and_then(Value::as_str))
            .collect();
        let columns: Vec<&str> = t.arrow_schema.iter().map(|f| f.name.as_str()).collect();
        if names != columns {
            rep.push(
                ProblemKind::Croissant,
                format!(
                    "croissant.json: the record set of table {} has fields {}, the table's columns are {}",
                    t.name,
                    names.join(", "),
                    columns.join(", ")
                ),
            );
        }
    }
    // the rest of the document is what a build writes: checked once the files agree
    (rep.problems.len() == before).then_some(doc)
}

/// `croissant.json` (`doc`) against the one a build writes from the manifest `m` and the
/// Parquet footers of the release in `dir`, with `doc`'s own card texts (name shown, description,
/// citation, licence, keywords, `rai:` fields): a field read from another column, of another
/// type, a transform or inline data added, a key taken away make a Croissant loader read other
/// data than the files hold. Distributions and record sets are compared by `@id`, in any order
/// (a manifest may list its tables in another); the first difference of each is named by its
/// JSON pointer. Made only when every Parquet file matched its digest (a damaged footer, or a
/// pipe in a file's place, is said with the manifest's files).
fn check_croissant_as_built(dir: &Path, m: &Manifest, doc: &serde_json::Value, rep: &mut VerifyReport) {
    use serde_json::Value;
    if !m.files.iter().filter(|f| f.kind == "parquet").all(|f| rep.verified.contains(&f.path)) {
        return;
    }
    let Ok(text) = crate::stages::croissant::croissant(m, &crate::core::spec::CardDef::default(), dir) else { return };
    let Ok(Value::Object(mut want)) = serde_json::from_str::<Value>(&text) else { return };
    let Value::Object(got) = doc else { return };
    let mut got = got.clone();
    let from_card = |k: &str| {
        ["alternateName", "description", "citeAs", "license", "keywords"].contains(&k) || k.starts_with("rai:")
    };
    want.retain(|k, _| !from_card(k));
    for (k, v) in got.iter().filter(|(k, _)| from_card(k)) {
        want.insert(k.clone(), v.clone());
    }
    let say = |rep: &mut VerifyReport, ptr: String, found: &Value, wanted: &Value| {
        rep.push(
            ProblemKind::Croissant,
            format!(
                "croissant.json: {} is {} where a build writes {} from the manifest and the Parquet files",
                if ptr.is_empty() { "the document".to_string() } else { ptr },
                crate::stages::ingest::path::describe(found),
                crate::stages::ingest::path::describe(wanted)
            ),
        )
    };
    for list in ["distribution", "recordSet"] {
        let wanted = want.remove(list).unwrap_or_default();
        let found = got.remove(list).unwrap_or_default();
        let wanted: &[Value] = wanted.as_array().map_or(&[], Vec::as_slice);
        for (i, item) in found.as_array().into_iter().flatten().enumerate() {
            let id = item.get("@id");
            let at = format!("/{list}/{i}");
            match wanted.iter().find(|w| w.get("@id") == id) {
                Some(w) => {
                    if let Some(ptr) = first_difference(w, item, at.clone()) {
                        let inner = &ptr[at.len()..];
                        say(rep, ptr.clone(), pointer_or_null(item, inner), pointer_or_null(w, inner));
                    }
                }
                None => say(rep, at, item.get("@id").unwrap_or(&Value::Null), &Value::Null),
            }
        }
        let ids: Vec<&Value> = found.as_array().into_iter().flatten().filter_map(|f| f.get("@id")).collect();
        for id in wanted.iter().filter_map(|w| w.get("@id")).filter(|id| !ids.contains(id)) {
            rep.push(
                ProblemKind::Croissant,
                format!("croissant.json: /{list} has no entry with @id {id}, which a build writes"),
            );
        }
    }
    let (want, got) = (Value::Object(want), Value::Object(got));
    if let Some(ptr) = first_difference(&want, &got, String::new()) {
        say(rep, ptr.clone(), pointer_or_null(&got, &ptr), pointer_or_null(&want, &ptr));
    }
}

/// `datapackage.json` against the manifest: each resource's path is a JSON Lines copy the
/// manifest lists, of the table the resource is named for, and each table has a resource
/// (`frictionless validate` fails on a resource whose file is missing).
fn check_datapackage(dir: &Path, m: &Manifest, rep: &mut VerifyReport) {
    let path = dir.join("datapackage.json");
    if !m.files.iter().any(|f| f.path == "datapackage.json") || !path.is_file() {
        return;
    }
    let Some(doc) = read_datapackage(&path, rep) else { return };
    let before = rep.problems.len();
    let resources = doc.get("resources").and_then(|r| r.as_array()).cloned().unwrap_or_default();
    check_resources(m, &resources, rep);
    // the rest of the package is what a build writes from the manifest (its title and
    // licence come from the card): a resource given twice, another format or profile, a
    // `bytes` or `hash` that is not the file's would make Frictionless refuse the package
    if rep.problems.len() == before {
        check_package_as_built(m, &doc, &resources, rep);
    }
}

/// `datapackage.json` at `path` as a JSON object; `None` (said in `rep` when it is no JSON
/// object) when it is not one.
fn read_datapackage(path: &Path, rep: &mut VerifyReport) -> Option<serde_json::Value> {
    let Ok(text) = crate::stages::ingest::files::read_small(path, 64 << 20) else { return None };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(doc) if doc.is_object() => Some(doc),
        // placed as the manifest's syntax errors are
        Err(e) => {
            let place = match crate::core::error::Error::json_file("datapackage.json", &e) {
                crate::core::error::Error::Config { location, message } => {
                    format!("{location}: not valid JSON: {message}")
                }
                other => other.to_string(),
            };
            rep.push(ProblemKind::DataPackage, place);
            None
        }
        Ok(other) => {
            rep.push(
                ProblemKind::DataPackage,
                format!(
                    "datapackage.json: expected a data package (a JSON object), found {}",
                    crate::stages::ingest::path::describe(&other)
                ),
            );
            None
        }
    }
}

/// Each of the package's `resources` against the manifest: its Table Schema is its table's,
/// its paths are the table's JSON Lines copies, and every table with copies has a resource.
fn check_resources(m: &Manifest, resources: &[serde_json::Value], rep: &mut VerifyReport) {
    let mut described = BTreeSet::new();
    for (i, r) in resources.iter().enumerate() {
        let name = r.get("name").and_then(|n| n.as_str()).unwrap_or_default();
        described.insert(name.to_string());
        let paths: Vec<&str> = match r.get("path") {
            Some(serde_json::Value::String(p)) => vec![p.as_str()],
            Some(serde_json::Value::Array(ps)) => ps.iter().filter_map(|p| p.as_str()).collect(),
            _ => vec![],
        };
        // the resource's Table Schema is the manifest's table's
        if let Some(t) = m.table(name) {
            let want = crate::stages::release::resource_schema(m, t);
            let got = r.get("schema").cloned().unwrap_or_default();
            if let Some(ptr) = first_difference(&want, &got, String::new()) {
                // what packages held before the enum of JSON text columns was left out
                let message = if got == crate::stages::release::package_schema_as_is(&t.schema) {
                    format!(
                        "datapackage.json: /resources/{i}/schema{ptr} ({name}) holds the enum of a column kept as JSON \
                         text, which Frictionless readers compare with the column's text and refuse (an earlier \
                         runpack wrote it); build the release again"
                    )
                } else {
                    format!(
                        "datapackage.json: /resources/{i}/schema{ptr} ({name}) differs from the manifest's schema of \
                         table {name}: {} there, {} here",
                        crate::stages::ingest::path::describe(pointer_or_null(&want, &ptr)),
                        crate::stages::ingest::path::describe(pointer_or_null(&got, &ptr))
                    )
                };
                rep.push(ProblemKind::DataPackage, message);
            }
        }
        for p in paths {
            let listed = m.files.iter().any(|f| f.path == p && f.kind == "jsonl" && f.table.as_deref() == Some(name));
            if !listed {
                rep.push(
                    ProblemKind::DataPackage,
                    format!(
                        "datapackage.json: /resources/{i} ({name}) names {p}, which is not a JSON Lines copy of table \
                     {name} in the manifest"
                    ),
                );
            }
        }
    }
    for t in m.tables.iter().filter(|t| t.has_copies() && !described.contains(&t.name)) {
        rep.push(ProblemKind::DataPackage, format!("datapackage.json: no resource describes table {}", t.name));
    }
}

/// The package `doc` against the one a build writes from the manifest `m` (with `doc`'s own
/// title and licence); its `resources` compared by table name, in any order.
fn check_package_as_built(
    m: &Manifest,
    doc: &serde_json::Value,
    resources: &[serde_json::Value],
    rep: &mut VerifyReport,
) {
    use serde_json::Value;
    let title = doc.get("title").and_then(Value::as_str);
    let license = doc.pointer("/licenses/0/name").and_then(Value::as_str);
    let mut want: Value =
        serde_json::from_str(&crate::stages::release::datapackage(m, title, license)).unwrap_or_default();
    let mut got = doc.clone();
    let differs = |want: &Value, got: &Value, at: &str| {
        first_difference(want, got, String::new()).map(|ptr| {
            format!(
                "datapackage.json: {} is {} where a build writes {} from the manifest",
                if at.is_empty() && ptr.is_empty() { "the document".to_string() } else { format!("{at}{ptr}") },
                crate::stages::ingest::path::describe(pointer_or_null(got, &ptr)),
                crate::stages::ingest::path::describe(pointer_or_null(want, &ptr))
            )
        })
    };
    // resources by their table, in any order (Frictionless reads them by name)
    let wanted: Vec<Value> = want
        .get_mut("resources")
        .map(Value::take)
        .and_then(|r| match r {
            Value::Array(a) => Some(a),
            _ => None,
        })
        .unwrap_or_default();
    if let Value::Object(o) = &mut got {
        o.insert("resources".into(), Value::Null);
    }
    if let Value::Object(o) = &mut want {
        o.insert("resources".into(), Value::Null);
    }
    rep.extend(ProblemKind::DataPackage, differs(&want, &got, ""));
    let mut seen = BTreeSet::new();
    for (i, r) in resources.iter().enumerate() {
        let name = r.get("name").and_then(Value::as_str).unwrap_or_default();
        if !seen.insert(name) {
            rep.push(
                ProblemKind::DataPackage,
                format!("datapackage.json: /resources/{i} describes table {name} a second time"),
            );
            continue;
        }
        if let Some(w) = wanted.iter().find(|w| w.get("name").and_then(Value::as_str) == Some(name)) {
            rep.extend(ProblemKind::DataPackage, differs(w, r, &format!("/resources/{i}")));
        }
    }
}

/// The JSON pointer (under `at`) of the first place where `a` and `b` differ, in `a`'s key
/// order; `None` when they are equal.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: String) -> Option<String> {
    use serde_json::Value;
    let key = crate::stages::ingest::path::pointer_token;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x
            .iter()
            .find_map(|(k, v)| first_difference(v, y.get(k).unwrap_or(&Value::Null), format!("{at}/{}", key(k))))
            .or_else(|| y.keys().find(|k| !x.contains_key(*k)).map(|k| format!("{at}/{}", key(k)))),
        (Value::Array(x), Value::Array(y)) => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (v, w))| first_difference(v, w, format!("{at}/{i}")))
            .or_else(|| (x.len() != y.len()).then(|| format!("{at}/{}", x.len().min(y.len())))),
        _ => (a != b).then_some(at),
    }
}

fn pointer_or_null<'v>(v: &'v serde_json::Value, ptr: &str) -> &'v serde_json::Value {
    v.pointer(ptr).unwrap_or(&serde_json::Value::Null)
}

fn check_card(dir: &Path, manifest: Option<&Manifest>, rep: &mut VerifyReport) -> Result<()> {
    let path = dir.join("README.md");
    let listed = manifest.is_some_and(|m| m.files.iter().any(|f| f.path == "README.md"));
    let link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink()) && !cache_blob_link(&path);
    match entry(dir, "README.md") {
        Entry::Readable if !(listed && link) => {}
        // a link, a folder or a file missing is reported with the manifest's files when it
        // lists README.md; otherwise with the other links and files that are not regular
        _ if listed => return Ok(()),
        Entry::Folder => {
            rep.push(ProblemKind::NotRegular, "README.md: a folder, not a file");
            return Ok(());
        }
        Entry::Readable => {}
        Entry::Missing | Entry::DanglingLink | Entry::Special => return Ok(()),
    }
    // a Git LFS pointer in the card's place is said with the manifest's files
    if lfs_pointer(&path).is_some() {
        if !listed {
            rep.push(
                ProblemKind::LfsPointer,
                "README.md: a Git LFS pointer, not the dataset card; fetch it (`git lfs pull`)",
            );
        }
        return Ok(());
    }
    let card = match crate::stages::ingest::files::read_small(&path, 16 << 20) {
        Ok(c) => c,
        // a card that is not UTF-8 passes its digest, but no reader takes it (`datasets`,
        // the Hub's card parser)
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::InvalidData => {
            let at = std::fs::read(&path)
                .ok()
                .and_then(|b| std::str::from_utf8(&b).err().map(|e| format!(" at byte {}", e.valid_up_to())))
                .unwrap_or_default();
            rep.push(
                ProblemKind::Card,
                format!(
                    "README.md: expected UTF-8 text, found bytes that are not{at}; card readers (`datasets`) refuse it"
                ),
            );
            return Ok(());
        }
        // said once, with the manifest's files when it lists the card
        Err(_) if listed => return Ok(()),
        Err(e) => {
            rep.push(ProblemKind::Unreadable, format!("README.md: cannot be read: {}", os_error(e)));
            return Ok(());
        }
    };
    check_card_text(dir, manifest, &card, rep);
    Ok(())
}

/// The problems of `card` (a dataset card's text) against the release in `dir` and its
/// manifest: the checks `verify` makes of the release's own `README.md` (data files matched,
/// splits, counts and features against the Parquet files). `verify hf://` checks the card at
/// the repo root with it, cut down to the release's configs.
pub fn card_text_problems(dir: &Path, manifest: &Manifest, card: &str) -> Vec<String> {
    let mut rep = VerifyReport::default();
    check_card_text(dir, Some(manifest), card, &mut rep);
    rep.problems.into_iter().map(|p| p.message).collect()
}

fn check_card_text(dir: &Path, manifest: Option<&Manifest>, card: &str, rep: &mut VerifyReport) {
    // a file the manifest does not list is reported as unexpected already, not again as one
    // the card leaves out
    let files: Vec<String> = match manifest {
        Some(m) => all_files(dir).into_iter().filter(|f| m.files.iter().any(|e| e.path == *f)).collect(),
        None => all_files(dir),
    };
    rep.extend(ProblemKind::Card, card_problems(card, &files, &empty_parquet_files(manifest)));
    // shards of one split share one schema; row groups under the viewer limit
    let Some(fm) = front_matter(card) else { return };
    let Ok(yaml) = yaml_serde::from_str::<yaml_serde::Value>(fm) else { return };
    let Some(configs) = yaml.get("configs").and_then(|c| c.as_sequence()) else { return };
    let lines = crate::stages::card::yaml_lines(fm, 2);
    let at = |path: &str| readme_at(&lines, path);
    for (ci, c) in configs.iter().enumerate() {
        check_config(dir, manifest, &yaml, &files, (ci, c), &at, rep);
    }
}

/// Checks one config of the card against the files: its table, its splits' files (as the
/// manifest has them), their shared schema, and its `dataset_info` (splits, example counts,
/// features and their types).
fn check_config(
    dir: &Path,
    manifest: Option<&Manifest>,
    yaml: &yaml_serde::Value,
    files: &[String],
    (ci, c): (usize, &yaml_serde::Value),
    at: &dyn Fn(&str) -> String,
    rep: &mut VerifyReport,
) {
    let name = c.get("config_name").and_then(|v| v.as_str()).unwrap_or("");
    // an unnamed config is reported by card_problems
    if !name.is_empty() && manifest.is_some_and(|m| m.table(name).is_none()) {
        rep.push(
            ProblemKind::Card,
            format!("{} config `{name}` names no table of the manifest", at(&format!("configs[{ci}].config_name"))),
        );
    }
    let mut splits: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let entries = data_files_entries(c);
    // the splits data_files names, whether or not their paths match a file (a path that
    // matches none is reported by card_problems)
    let named: BTreeSet<String> = entries.iter().map(|(split, _)| split.clone()).collect();
    for (split, pat) in entries {
        for f in files.iter().filter(|f| f.ends_with(".parquet") && data_files_match(&pat, f)) {
            splits.entry(split.clone()).or_default().push(f.clone());
        }
    }
    // the config serves its own table's files, split by split as the manifest has them
    if let Some((m, t)) = manifest.and_then(|m| m.table(name).map(|t| (m, t))) {
        let place = at(&format!("configs[{ci}].data_files"));
        check_config_splits(m, t, name, &place, &splits, &named, rep);
    }
    // what the card's dataset_info says of this config: (split → examples, feature names)
    let info = dataset_info(yaml, name);
    if let Some(info) = &info {
        // `datasets` refuses a card whose splits are not the data files' (Expected more
        // splits / Unexpected splits)
        let data: BTreeSet<&String> = named.iter().collect();
        let card: BTreeSet<&String> = info.examples.keys().collect();
        if !info.examples.is_empty() && !info.bad_counts && data != card {
            rep.push(
                ProblemKind::Card,
                format!(
                    "{} dataset_info of config `{name}` names the splits {card:?}, and its data_files the \
                 splits {data:?} (`datasets` refuses to load it)",
                    at(&format!("{}.splits", info.path))
                ),
            );
        }
    }
    // the features are compared once per config, with its first Parquet file
    let mut features_checked = false;
    for (split, shards) in splits {
        let (first, rows) = read_split_files(dir, manifest, name, &split, &shards, rep);
        let Some(info) = &info else { continue };
        if let (Some(rows), Some((said, path))) = (rows, info.examples.get(&split))
            && rows != *said
        {
            rep.push(
                ProblemKind::Card,
                format!(
                    "{} dataset_info of config `{name}` gives split `{split}` {said} examples, and its \
                 Parquet files hold {rows} rows (`datasets` refuses to load it: NonMatchingSplitsSizesError)",
                    at(path)
                ),
            );
        }
        if let (Some(features), Some((f0, schema)), false) = (&info.features, &first, features_checked) {
            features_checked = true;
            check_features(info, features, name, f0, schema, at, rep);
        }
    }
}

/// A config's `data_files` as (split, pattern) pairs; a bare pattern is of split `train`.
fn data_files_entries(c: &yaml_serde::Value) -> Vec<(String, String)> {
    let mut entries: Vec<(String, String)> = Vec::new();
    match c.get("data_files") {
        Some(yaml_serde::Value::String(s)) => entries.push(("train".into(), s.clone())),
        Some(yaml_serde::Value::Sequence(items)) => {
            for it in items {
                if let Some(s) = it.as_str() {
                    entries.push(("train".into(), s.to_string()));
                } else {
                    let split = it.get("split").and_then(|v| v.as_str()).unwrap_or("train").to_string();
                    match it.get("path") {
                        Some(yaml_serde::Value::String(p)) => entries.push((split, p.clone())),
                        Some(yaml_serde::Value::Sequence(ps)) => {
                            for p in ps.iter().filter_map(|p| p.as_str()) {
                                entries.push((split.clone(), p.to_string()));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        _ => {}
    }
    entries
}

/// The files a config's splits match (`splits`, by the split names of `named`) are the
/// manifest's table's, split by split.
fn check_config_splits(
    m: &Manifest,
    t: &crate::stages::release::TableEntry,
    name: &str,
    place: &str,
    splits: &BTreeMap<String, Vec<String>>,
    named: &BTreeSet<String>,
    rep: &mut VerifyReport,
) {
    let mut foreign = false;
    for (split, shards) in splits {
        for f in shards {
            let owner = m.files.iter().find(|e| &e.path == f).and_then(|e| e.table.as_deref());
            if owner.is_some_and(|o| o != name) {
                foreign = true;
                rep.push(
                    ProblemKind::Card,
                    format!(
                        "{place} config `{name}` split {split} names {f}, a file of table {}",
                        owner.unwrap_or_default()
                    ),
                );
            }
        }
    }
    let ours: BTreeSet<&str> = named.iter().map(String::as_str).collect();
    // a split without rows is left out of the card (`datasets` cannot load an empty one)
    let theirs: BTreeSet<&str> = t.splits.iter().filter(|s| s.rows > 0).map(|s| s.name.as_str()).collect();
    if !theirs.is_empty() && ours != theirs {
        rep.push(
            ProblemKind::Card,
            format!(
                "{place} config `{name}` has the splits {ours:?}, the manifest's table {name} the splits {theirs:?}"
            ),
        );
    } else if !foreign {
        for sp in t.splits.iter().filter(|s| s.rows > 0) {
            let want: BTreeSet<&String> = sp.files.iter().collect();
            let got: BTreeSet<&String> = splits.get(&sp.name).map(|v| v.iter().collect()).unwrap_or_default();
            if want != got && !got.is_empty() && got.iter().all(|f| m.files.iter().any(|e| &e.path == *f)) {
                rep.push(
                    ProblemKind::Card,
                    format!(
                        "{place} config `{name}` split {} matches the files {got:?}, the manifest's split the files \
                     {want:?}",
                        sp.name
                    ),
                );
            }
        }
    }
}

/// Reads the footers of a split's Parquet files: the first file's name and schema (the other
/// files' schemas compared with it), and the rows of all when every one was read.
fn read_split_files(
    dir: &Path,
    manifest: Option<&Manifest>,
    name: &str,
    split: &str,
    shards: &[String],
    rep: &mut VerifyReport,
) -> (Option<(String, arrow::datatypes::SchemaRef)>, Option<u64>) {
    let mut first: Option<(String, arrow::datatypes::SchemaRef)> = None;
    // rows of the split's Parquet files, when every one was read
    let mut rows: Option<u64> = Some(0);
    for s in shards {
        let p = dir.join(s);
        if lfs_pointer(&p).is_some() {
            if manifest.is_none() {
                rep.push(
                    ProblemKind::LfsPointer,
                    format!("{s}: a Git LFS pointer, not Parquet data; fetch the LFS object (e.g. `git lfs pull`)"),
                );
            }
            // its rows are unknown: no count is compared with the card's
            rows = None;
            continue;
        }
        let f = match std::fs::File::open(&p) {
            Ok(f) => f,
            // reported with the manifest's files, or as unexpected
            Err(_) => {
                rows = None;
                continue;
            }
        };
        let b = match open_parquet(f) {
            Ok(b) => b,
            Err(e) => {
                if manifest.is_none() {
                    rep.push(ProblemKind::Unreadable, format!("{s}: not readable as Parquet: {e}"));
                }
                rows = None;
                continue;
            }
        };
        rows = rows.map(|r| r + b.metadata().file_metadata().num_rows().max(0) as u64);
        let schema = b.schema().clone();
        match &first {
            None => first = Some((s.clone(), schema)),
            Some((f0, s0)) => {
                for d in schema_pair_diff(s0, f0, &schema, s) {
                    rep.push(ProblemKind::Card, format!("config `{name}` split `{split}`: {d}"));
                }
            }
        }
    }
    (first, rows)
}

/// A config's `dataset_info` features against the columns of its first Parquet file `f0`:
/// the same names, and the types the file holds.
fn check_features(
    info: &CardInfo,
    features: &[(String, Option<String>, String)],
    name: &str,
    f0: &str,
    schema: &arrow::datatypes::SchemaRef,
    at: &dyn Fn(&str) -> String,
    rep: &mut VerifyReport,
) {
    // `datasets` reads the columns by name: another order is no problem, other names are
    let listed: BTreeSet<&str> = features.iter().map(|(n, ..)| n.as_str()).collect();
    let columns: BTreeSet<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let missing: Vec<&&str> = columns.difference(&listed).collect();
    let extra: Vec<&&str> = listed.difference(&columns).collect();
    let said = match (extra.is_empty(), missing.is_empty()) {
        (true, true) => None,
        (false, false) => {
            Some(format!("lists the features {extra:?}, which {f0} does not hold, and not its columns {missing:?}"))
        }
        (false, true) => Some(format!("lists the features {extra:?}, which {f0} does not hold")),
        (true, false) => Some(format!("does not list the columns {missing:?} of {f0}")),
    };
    if let Some(said) = said {
        let here = at(&format!("{}.features", info.path));
        rep.push(ProblemKind::Card, format!("{here} dataset_info of config `{name}` {said}"));
    }
    // a type other than the column's: `datasets` casts the column to it, or fails
    for (feature, said, path) in features.iter().filter_map(|(n, d, p)| Some((n, d.as_ref()?, p))) {
        let Ok(field) = schema.field_with_name(feature) else { continue };
        if let Some(have) = file_feature_type(field.data_type())
            && have != *said
        {
            rep.push(
                ProblemKind::Card,
                format!(
                    "{} dataset_info of config `{name}` gives feature `{feature}` the type {said}, and \
                 {f0} holds it as {have} (`datasets` would cast it, or fail to)",
                    at(path)
                ),
            );
        }
    }
}

/// What a card's `dataset_info` says of one config, with the paths in the front matter where
/// it says it (see [`crate::stages::card::yaml_lines`]).
struct CardInfo {
    /// The config's entry: `dataset_info[i]`, or `dataset_info` for a card with one mapping.
    path: String,
    /// Each split's `num_examples`, with the path of that key.
    examples: BTreeMap<String, (u64, String)>,
    /// The features when the card lists them: name, type as [`card_feature_type`] spells it
    /// (when it can), and the feature's path.
    features: Option<Vec<(String, Option<String>, String)>>,
    /// Whether a split's `num_examples` is no whole number (said on its own).
    bad_counts: bool,
}

/// What a YAML value is, for messages: `a string "x"`, `a number 5`, `a mapping`, …
fn yaml_kind(v: &yaml_serde::Value) -> String {
    match v {
        yaml_serde::Value::Null => "null".into(),
        yaml_serde::Value::Bool(b) => format!("a boolean {b}"),
        yaml_serde::Value::Number(n) => format!("a number {n}"),
        yaml_serde::Value::String(t) => format!("a string {t:?}"),
        yaml_serde::Value::Sequence(_) => "a list".into(),
        yaml_serde::Value::Mapping(_) => "a mapping".into(),
        yaml_serde::Value::Tagged(_) => "a tagged value".into(),
    }
}

/// Whether Python reads the YAML value as true (`bool(value)`), as `datasets` does with a
/// config's `default`.
fn python_truthy(v: &yaml_serde::Value) -> bool {
    match v {
        yaml_serde::Value::Null => false,
        yaml_serde::Value::Bool(b) => *b,
        yaml_serde::Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        yaml_serde::Value::String(t) => !t.is_empty(),
        yaml_serde::Value::Sequence(s) => !s.is_empty(),
        yaml_serde::Value::Mapping(m) => !m.is_empty(),
        yaml_serde::Value::Tagged(_) => true,
    }
}

/// Problems of the card's `dataset_info` that `datasets` stops on: a config given twice (it
/// keeps the last), `features` that are not a list, a feature without a `name`, and a
/// feature whose type is missing or not of the Hub's YAML form ([`feature_form_problems`]).
/// Messages start with `README.md:<line>:` from `lines` ([`crate::stages::card::yaml_lines`]).
fn dataset_info_problems(yaml: &yaml_serde::Value, lines: &BTreeMap<String, usize>) -> Vec<String> {
    let at = |path: &str| readme_at(lines, path);
    let mut out = Vec::new();
    // each entry with its path in the front matter
    let entries: Vec<(String, &yaml_serde::Value)> = match yaml.get("dataset_info") {
        None => return out,
        Some(yaml_serde::Value::Sequence(items)) => {
            items.iter().enumerate().map(|(i, e)| (format!("dataset_info[{i}]"), e)).collect()
        }
        Some(one @ yaml_serde::Value::Mapping(_)) => vec![("dataset_info".to_string(), one)],
        Some(other) => {
            out.push(format!(
                "{} dataset_info is {}, not a mapping or a list of them",
                at("dataset_info"),
                yaml_kind(other)
            ));
            return out;
        }
    };
    let mut named: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (path, e) in &entries {
        let name = e.get("config_name").and_then(|v| v.as_str()).unwrap_or("default").to_string();
        named.entry(name).or_default().push(path);
    }
    for (n, given) in named.iter().filter(|(_, g)| g.len() > 1) {
        out.push(format!(
            "{} dataset_info gives config `{n}` {} times; `datasets` reads the last, so give it once",
            at(given[1]),
            given.len()
        ));
    }
    for (path, e) in entries {
        let name = e.get("config_name").and_then(|v| v.as_str()).unwrap_or("default");
        // each split: a name and whole counts (`datasets` adds them up)
        if let Some(splits) = e.get("splits").and_then(|s| s.as_sequence()) {
            for (j, sp) in splits.iter().enumerate() {
                let here = format!("{path}.splits[{j}]");
                if !matches!(sp.get("name"), Some(yaml_serde::Value::String(_))) {
                    out.push(format!("{} dataset_info of config `{name}`: splits[{j}] has no name", at(&here)));
                }
                for key in ["num_examples", "num_bytes"] {
                    match sp.get(key) {
                        None => {}
                        Some(v) if v.as_u64().is_some() => {}
                        Some(other) => out.push(format!(
                            "{} dataset_info of config `{name}`: splits[{j}].{key} is {}, not a whole number \
                             (`datasets` fails to load it)",
                            at(&format!("{here}.{key}")),
                            yaml_kind(other)
                        )),
                    }
                }
            }
        }
        match e.get("features") {
            None => {}
            Some(yaml_serde::Value::Sequence(fs)) => {
                for (i, f) in fs.iter().enumerate() {
                    let here = at(&format!("{path}.features[{i}]"));
                    let label = match f.get("name") {
                        Some(yaml_serde::Value::String(n)) => format!("feature `{n}`"),
                        _ => {
                            out.push(format!("{here} dataset_info of config `{name}`: features[{i}] has no name"));
                            format!("features[{i}]")
                        }
                    };
                    for p in feature_form_problems(f) {
                        out.push(format!("{here} dataset_info of config `{name}`: {label} {p}"));
                    }
                }
            }
            Some(other) => out.push(format!(
                "{} dataset_info of config `{name}`: features is {}, not a list of named features",
                at(&format!("{path}.features")),
                yaml_kind(other)
            )),
        }
    }
    out
}

/// What keeps a card feature from being one of the Hub's YAML forms: a mapping with a string
/// `dtype` (or a class label as its `dtype`), a `list`, `large_list` or `sequence` (of a dtype,
/// a feature, or named features), a `struct` (a list of named features), or a `class_label`.
/// Empty when it is one.
fn feature_form_problems(f: &yaml_serde::Value) -> Vec<String> {
    if let Some(d) = f.get("dtype") {
        return match d {
            yaml_serde::Value::String(_) => Vec::new(),
            // the class label form many Hub cards use: `dtype: {class_label: {names: …}}`
            yaml_serde::Value::Mapping(m) if m.contains_key("class_label") => Vec::new(),
            other => vec![format!("has a dtype that is {}, not a name or a class label", yaml_kind(other))],
        };
    }
    if let Some(fs) = f.get("struct") {
        return match fs {
            yaml_serde::Value::Sequence(items) => items.iter().flat_map(named_feature_problems).collect(),
            other => vec![format!("has a struct that is {}, not a list of named features", yaml_kind(other))],
        };
    }
    if let Some(i) = f.get("list").or_else(|| f.get("large_list")).or_else(|| f.get("sequence")) {
        return match i {
            yaml_serde::Value::String(_) => Vec::new(),
            yaml_serde::Value::Sequence(items) => items.iter().flat_map(named_feature_problems).collect(),
            m @ yaml_serde::Value::Mapping(_) => feature_form_problems(m),
            other => vec![format!("has list items of {}, not a dtype or a feature", yaml_kind(other))],
        };
    }
    if f.get("class_label").is_some() {
        return Vec::new();
    }
    vec!["has no type (a dtype, list, large_list, sequence, struct or class_label)".into()]
}

/// [`feature_form_problems`] of a member of a struct or of a list of named features, which
/// also needs its `name`.
fn named_feature_problems(f: &yaml_serde::Value) -> Vec<String> {
    match f.get("name") {
        Some(yaml_serde::Value::String(n)) => {
            feature_form_problems(f).into_iter().map(|p| format!("(field `{n}`) {p}")).collect()
        }
        _ => vec!["has a field without a name".into()],
    }
}

/// The type of a card feature (a `datasets` feature in the Hub's YAML form) spelled as
/// [`file_feature_type`] spells Arrow types: its `dtype` (`int64`; `large_string` and
/// `large_binary` as `string` and `binary`, which hold the same values), `list<…>` for a
/// `list`, `large_list` or `sequence` of a dtype or a feature, `struct<a: …, b: …>` (fields by
/// name) for a `struct` or a `list` of named features, and a `sequence` of named features as
/// `datasets` reads it, a struct of lists. `None` for a form that is not compared (class
/// labels, a `dtype` that is not a name).
fn card_feature_type(f: &yaml_serde::Value) -> Option<String> {
    let fields = |items: &[yaml_serde::Value], wrap: &dyn Fn(String) -> String| -> Option<String> {
        let mut fields = items
            .iter()
            .map(|i| Some(format!("{}: {}", i.get("name")?.as_str()?, wrap(card_feature_type(i)?))))
            .collect::<Option<Vec<_>>>()?;
        fields.sort();
        Some(format!("struct<{}>", fields.join(", ")))
    };
    let same = |t: String| t;
    let dtype = |d: &str| match d {
        "large_string" => "string".to_string(),
        "large_binary" => "binary".to_string(),
        other => other.to_string(),
    };
    // runpack's cards write no class label: `datasets` reads a class label's values as label
    // indexes (an integer out of its names' range, or a string not among them)
    let labelled = |v: &yaml_serde::Value| v.get("class_label").is_some();
    if f.get("dtype").is_some_and(labelled) || labelled(f) {
        return Some("class_label".into());
    }
    if let Some(d) = f.get("dtype") {
        return d.as_str().map(dtype);
    }
    if let Some(fs) = f.get("struct") {
        return fields(fs.as_sequence()?, &same);
    }
    // a list of fixed length (`length: 3`): `datasets` fails on a row of another length
    if let Some(n) = f.get("length").filter(|n| n.as_i64() != Some(-1)) {
        let mut unsized_f = f.clone();
        if let Some(m) = unsized_f.as_mapping_mut() {
            m.remove("length");
        }
        let n = n.as_i64().map_or_else(|| yaml_kind(n), |n| n.to_string());
        return Some(format!("{} of length {n}", card_feature_type(&unsized_f)?));
    }
    let (inner, legacy) = match (f.get("list").or_else(|| f.get("large_list")), f.get("sequence")) {
        (Some(i), _) => (i, false),
        (None, Some(i)) => (i, true),
        (None, None) => return None,
    };
    match inner {
        yaml_serde::Value::String(d) => Some(format!("list<{}>", dtype(d))),
        yaml_serde::Value::Sequence(items) if legacy => fields(items, &|t| format!("list<{t}>")),
        yaml_serde::Value::Sequence(items) => Some(format!("list<{}>", fields(items, &same)?)),
        yaml_serde::Value::Mapping(_) => Some(format!("list<{}>", card_feature_type(inner)?)),
        _ => None,
    }
}

/// The type of a Parquet column as [`card_feature_type`] spells a card's: the `datasets`
/// dtype of a scalar runpack stores ([`crate::stages::card::scalar_dtype`]), `list<…>`, and
/// `struct<…>` with its fields by name. `None` when a part has no dtype runpack writes.
fn file_feature_type(dt: &arrow::datatypes::DataType) -> Option<String> {
    match dt {
        arrow::datatypes::DataType::List(item) | arrow::datatypes::DataType::LargeList(item) => {
            Some(format!("list<{}>", file_feature_type(item.data_type())?))
        }
        arrow::datatypes::DataType::Struct(fs) => {
            let mut fields = fs
                .iter()
                .map(|f| Some(format!("{}: {}", f.name(), file_feature_type(f.data_type())?)))
                .collect::<Option<Vec<_>>>()?;
            fields.sort();
            Some(format!("struct<{}>", fields.join(", ")))
        }
        scalar => crate::stages::card::scalar_dtype(scalar),
    }
}

/// The `dataset_info` of config `name` in a card's metadata (a list of per-config entries,
/// or one mapping for a card with one config): each split's `num_examples`, and the names of
/// the `features` when the card lists them. `None` when the card has no entry for it.
fn dataset_info(yaml: &yaml_serde::Value, name: &str) -> Option<CardInfo> {
    let info = yaml.get("dataset_info")?;
    let (path, entry) = match info {
        yaml_serde::Value::Sequence(items) => {
            // `datasets` keeps the last entry of a name (a repeated one is reported by card_problems)
            let i = items
                .iter()
                .rposition(|i| i.get("config_name").and_then(|v| v.as_str()).unwrap_or("default") == name)?;
            (format!("dataset_info[{i}]"), &items[i])
        }
        one if one.get("config_name").and_then(|v| v.as_str()).unwrap_or(name) == name => {
            ("dataset_info".to_string(), one)
        }
        _ => return None,
    };
    let examples = entry
        .get("splits")
        .and_then(|s| s.as_sequence())
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(j, s)| {
            let examples = s.get("num_examples")?.as_u64()?;
            Some((s.get("name")?.as_str()?.to_string(), (examples, format!("{path}.splits[{j}].num_examples"))))
        })
        .collect();
    let features = entry.get("features").and_then(|f| f.as_sequence()).map(|fs| {
        fs.iter()
            .enumerate()
            .filter_map(|(k, f)| {
                let name = f.get("name").and_then(|n| n.as_str())?.to_string();
                Some((name, card_feature_type(f), format!("{path}.features[{k}]")))
            })
            .collect()
    });
    let bad_counts = entry
        .get("splits")
        .and_then(|s| s.as_sequence())
        .is_some_and(|sp| sp.iter().any(|s| s.get("num_examples").is_some_and(|n| n.as_u64().is_none())));
    Some(CardInfo { path, examples, features, bad_counts })
}

/// Differences between the schemas of two shards, phrased with both file names:
/// `run_date: Int64 in data/train-0.parquet vs Utf8 in data/train-1.parquet`.
fn schema_pair_diff(a: &arrow::datatypes::Schema, an: &str, b: &arrow::datatypes::Schema, bn: &str) -> Vec<String> {
    let mut out = Vec::new();
    for f in a.fields() {
        match b.field_with_name(f.name()) {
            Ok(g) if g.data_type() != f.data_type() => out.push(format!(
                "{}: {} in {an} vs {} in {bn}",
                f.name(),
                type_name(f.data_type()),
                type_name(g.data_type())
            )),
            Ok(g) if g.is_nullable() != f.is_nullable() => out.push(format!(
                "{}: {} in {an} vs {} in {bn}",
                f.name(),
                if f.is_nullable() { "nullable" } else { "not nullable" },
                if g.is_nullable() { "nullable" } else { "not nullable" }
            )),
            Ok(_) => {}
            Err(_) => out.push(format!("{}: in {an}, missing in {bn}", f.name())),
        }
    }
    for g in b.fields() {
        if a.field_with_name(g.name()).is_err() {
            out.push(format!("{}: in {bn}, missing in {an}", g.name()));
        }
    }
    if out.is_empty() {
        let an_: Vec<&String> = a.fields().iter().map(|f| f.name()).collect();
        let bn_: Vec<&String> = b.fields().iter().map(|f| f.name()).collect();
        if an_ != bn_ {
            out.push(format!("column order differs between {an} and {bn}"));
        }
    }
    out
}

/// What a file smaller than its manifest says is: a Parquet file that still ends as one
/// does (its footer's `PAR1`) was written again whole; another was cut short, or written
/// again (its bytes alone cannot tell).
fn smaller(path: &Path, rel: &str) -> &'static str {
    let last4 = |p: &std::path::Path| -> std::io::Result<[u8; 4]> {
        use std::io::{Read, Seek};
        let mut f = std::fs::File::open(p)?;
        f.seek(std::io::SeekFrom::End(-4))?;
        let mut b = [0u8; 4];
        f.read_exact(&mut b)?;
        Ok(b)
    };
    let ends_as_parquet = rel.ends_with(".parquet") && last4(path).is_ok_and(|b| &b == b"PAR1");
    if ends_as_parquet {
        ": a whole Parquet file of other bytes (written again)"
    } else {
        ": cut short, or written again"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_last_line_without_its_end_is_counted_and_said() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        for (text, want) in [("", (0, false)), ("{}\n", (1, false)), ("{}\n{\"a\": ", (2, true)), ("{\"a", (1, true))] {
            std::fs::write(&p, text).unwrap();
            assert_eq!(count_lines(&p).unwrap(), want, "{text:?}");
        }
    }

    #[test]
    fn links_into_a_cache_blob_store_are_files() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("datasets--a--b");
        std::fs::create_dir_all(repo.join("blobs")).unwrap();
        std::fs::create_dir_all(repo.join("snapshots/c0ffee/data")).unwrap();
        std::fs::write(repo.join("blobs/abc"), b"x").unwrap();
        let link = repo.join("snapshots/c0ffee/data/f.parquet");
        std::os::unix::fs::symlink("../../../blobs/abc", &link).unwrap();
        assert!(cache_blob_link(&link));
        // a link elsewhere, a dangling one, a regular file: no
        std::fs::write(t.path().join("other"), b"y").unwrap();
        let other = repo.join("snapshots/c0ffee/o");
        std::os::unix::fs::symlink(t.path().join("other"), &other).unwrap();
        assert!(!cache_blob_link(&other));
        let dangling = repo.join("snapshots/c0ffee/d");
        std::os::unix::fs::symlink("../../blobs/none", &dangling).unwrap();
        assert!(!cache_blob_link(&dangling));
        assert!(!cache_blob_link(&repo.join("blobs/abc")));
    }

    #[test]
    fn data_files_globs_read_as_the_hub_reads_them() {
        let m = data_files_match;
        assert!(m("data/t/test-0000[0-9]-of-*.parquet", "data/t/test-00003-of-00020.parquet"));
        assert!(!m("data/t/test-0000[0-9]-of-*.parquet", "data/t/test-00013-of-00020.parquet"));
        assert!(m("data/t/test-000[!0]?-of-*.parquet", "data/t/test-00013-of-00020.parquet"));
        assert!(m("data/*.parquet", "data/t.parquet") && !m("data/*.parquet", "data/t/a.parquet"));
        assert!(m("data/**/*.parquet", "data/t/a.parquet") && m("data/**/*.parquet", "data/a.parquet"));
        // hidden files only by a pattern that names the dot
        assert!(!m("data/*.parquet", "data/.x.parquet") && m("data/.*.parquet", "data/.x.parquet"));
        // braces are no glob to the Hub: a name spelled with them
        assert!(m("data/{t}.parquet", "data/{t}.parquet") && !m("data/{t}.parquet", "data/t.parquet"));
    }

    #[test]
    fn card_feature_types_read_as_datasets_reads_them() {
        let ty = |yaml: &str| {
            let f: yaml_serde::Value = yaml_serde::from_str(yaml).unwrap();
            assert!(feature_form_problems(&f).is_empty(), "{yaml}: {:?}", feature_form_problems(&f));
            card_feature_type(&f)
        };
        assert_eq!(ty("name: a\ndtype: large_string"), Some("string".into()));
        assert_eq!(ty("name: a\nlarge_list: int64"), Some("list<int64>".into()));
        assert_eq!(ty("name: a\nsequence: {list: int64}"), Some("list<list<int64>>".into()));
        assert_eq!(
            ty("name: a\nlist:\n- name: y\n  dtype: string\n- name: x\n  dtype: int64"),
            Some("list<struct<x: int64, y: string>>".into())
        );
        // a legacy sequence of named features is a struct of lists to `datasets`
        assert_eq!(ty("name: a\nsequence:\n- name: x\n  dtype: int64"), Some("struct<x: list<int64>>".into()));
        // class labels, in either form, are a type of their own (runpack writes none)
        assert_eq!(ty("name: a\ndtype:\n  class_label:\n    names: {'0': neg, '1': pos}"), Some("class_label".into()));
        assert_eq!(ty("name: a\nclass_label:\n  names: {'0': neg}"), Some("class_label".into()));
        // a list of fixed length, and one of any (-1)
        assert_eq!(ty("name: a\nlist: string\nlength: 3"), Some("list<string> of length 3".into()));
        assert_eq!(ty("name: a\nsequence: string\nlength: -1"), Some("list<string>".into()));
        let bad: yaml_serde::Value = yaml_serde::from_str("name: a\ndtype: {x: 1}").unwrap();
        assert_eq!(feature_form_problems(&bad), ["has a dtype that is a mapping, not a name or a class label"]);
    }

    #[test]
    fn a_type_difference_the_names_hide_is_spelled_out() {
        use arrow::datatypes::{DataType, Field, Schema};
        let list = |item: &str, nullable: bool| {
            Schema::new(vec![Field::new(
                "l",
                DataType::List(std::sync::Arc::new(Field::new(item, DataType::Utf8, nullable))),
                true,
            )])
        };
        assert_eq!(
            schema_diff(&list("item", true), &list("element", true)),
            vec!["`l`: List<item: Utf8> expected, List<element: Utf8> found"]
        );
        assert_eq!(
            schema_diff(&list("item", true), &list("item", false)),
            vec!["`l`: List<item: Utf8> expected, List<item: Utf8 not null> found"]
        );
        let int = Schema::new(vec![Field::new("l", DataType::Int64, true)]);
        assert_eq!(schema_diff(&list("item", true), &int), vec!["`l`: List<Utf8> expected, Int64 found"]);
    }

    #[test]
    fn sums_lines_in_every_form_sha256sum_reads() {
        let h = "ab".repeat(32);
        let hu = h.to_uppercase();
        for (line, path) in [
            (format!("{h}  data/a.parquet"), "data/a.parquet"),
            (format!("{hu} *data/a.parquet"), "data/a.parquet"),
            (format!("{h} README.md"), "README.md"),
            (format!("{h}  ./README.md\r"), "README.md"),
            (format!("\\{h}  data/new\\nline.parquet"), "data/new\nline.parquet"),
            (format!("{h}  two  spaces"), "two  spaces"),
            (format!("SHA256 (data/a.parquet) = {h}"), "data/a.parquet"),
            (format!("SHA256 (./x (1).parquet) = {hu}"), "x (1).parquet"),
            (format!("\\SHA256 (data/new\\nline.parquet) = {h}"), "data/new\nline.parquet"),
            // forms coreutils' sha256sum -c also reads: blanks before, a tab after the digest,
            // no space before the BSD form's `=`
            (format!(" \t{h}  data/a.parquet"), "data/a.parquet"),
            (format!("{h}\tdata/a.parquet"), "data/a.parquet"),
            (format!("SHA256 (data/a.parquet)= {h}"), "data/a.parquet"),
            (format!("SHA256(data/a.parquet)= {h}"), "data/a.parquet"),
            // a path is the file it opens
            (format!("{h}  data//./a.parquet"), "data/a.parquet"),
            (format!("{h}  /abs//a.parquet"), "/abs//a.parquet"),
        ] {
            assert_eq!(sums_line(&line), Some((h.clone(), path.to_string())), "{line}");
        }
        for bad in [
            h.clone(),
            format!("{h}x  a"),
            "short  a".to_string(),
            String::new(),
            format!("SHA256 () = {h}"),
            "SHA256 (a) = abc".to_string(),
        ] {
            assert_eq!(sums_line(&bad), None, "{bad}");
        }
    }
}
