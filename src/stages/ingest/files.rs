//! Finding and opening raw input files.
//!
//! In: path patterns relative to the pipeline folder (`raw/{run}/metrics.jsonl`,
//! `logs/**/*.jsonl`). Out: the matching files, sorted by path, each with the values of its
//! `{capture}` segments; and readers that undo zstd (all frames, skippable frames ignored) and
//! gzip (all members) compression, found by magic bytes, not by file name.
//!
//! Pattern syntax: `*` any run of characters inside one path segment, `?` one character,
//! `**` any number of whole segments, `{name}` one segment (or part of one) captured into the
//! column `name`.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::core::error::{Error, Result};
use crate::stages::hash::ReadDigests;

/// One matched input file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct InputFile {
    /// Path relative to the pipeline folder, with `/` separators.
    pub rel: String,
    /// Absolute or working-directory-relative path to open.
    pub path: PathBuf,
    /// `(capture name, value)` pairs, in pattern order.
    pub captures: Vec<(String, String)>,
}

/// A compiled path pattern.
#[derive(Debug)]
pub struct PathPattern {
    regex: regex::Regex,
    /// The same pattern with every capture as long as it can be: a path it matches with other
    /// capture values than `regex` can be split more than one way.
    greedy: regex::Regex,
    /// Capture names in order.
    pub names: Vec<String>,
    root: String,
    /// How many folder levels below `root` a match lies at most (`None` for a pattern with
    /// `**`): the walk goes no deeper, so `metrics.jsonl` does not walk the folder's subtree.
    depth: Option<usize>,
}

impl PathPattern {
    /// Compiles `pattern`.
    ///
    /// Errors: a message when a capture name is not a valid column name or the pattern is
    /// absolute or leaves the pipeline folder.
    pub fn new(pattern: &str) -> std::result::Result<PathPattern, String> {
        if pattern.starts_with('/') || pattern.split('/').any(|s| s == "..") {
            return Err(format!("path `{pattern}` must stay inside the pipeline folder"));
        }
        let mut re = String::from("^");
        // the pattern as `re`, but with greedy captures; the rest is pushed to both
        let mut greedy = String::from("^");
        let mut names = Vec::new();
        let name_ok = regex::Regex::new(r"^[a-z_][a-z0-9_]*$").expect("static pattern");
        let chars: Vec<char> = pattern.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            match c {
                '*' if chars.get(i + 1) == Some(&'*') => {
                    let part = if chars.get(i + 2) == Some(&'/') { "(?:[^/]+/)*" } else { ".*" };
                    re.push_str(part);
                    greedy.push_str(part);
                    i += if part == ".*" { 2 } else { 3 };
                    continue;
                }
                '*' => {
                    re.push_str("[^/]*");
                    greedy.push_str("[^/]*");
                }
                '?' => {
                    re.push_str("[^/]");
                    greedy.push_str("[^/]");
                }
                '{' => {
                    let end = chars[i..]
                        .iter()
                        .position(|&c| c == '}')
                        .ok_or_else(|| format!("unclosed `{{` in path `{pattern}`"))?;
                    let name: String = chars[i + 1..i + end].iter().collect();
                    if !name_ok.is_match(&name) {
                        return Err(format!("capture `{{{name}}}` in `{pattern}` must match [a-z_][a-z0-9_]*"));
                    }
                    re.push_str(&format!("(?P<{name}>[^/]+?)"));
                    greedy.push_str(&format!("(?P<{name}>[^/]+)"));
                    names.push(name);
                    i += end + 1;
                    continue;
                }
                c => {
                    re.push_str(&regex::escape(&c.to_string()));
                    greedy.push_str(&regex::escape(&c.to_string()));
                }
            }
            i += 1;
        }
        re.push('$');
        greedy.push('$');
        let regex = regex::Regex::new(&re).map_err(|e| format!("bad path pattern `{pattern}`: {e}"))?;
        let greedy = regex::Regex::new(&greedy).map_err(|e| format!("bad path pattern `{pattern}`: {e}"))?;
        let literal_end = pattern.find(['*', '?', '{']).unwrap_or(pattern.len());
        let (root, rest) = match pattern[..literal_end].rfind('/') {
            Some(k) => (pattern[..k].to_string(), &pattern[k + 1..]),
            None => (String::new(), pattern),
        };
        // `*`, `?` and a capture stay within one name; only `**` crosses folders
        let depth = (!pattern.contains("**")).then(|| rest.split('/').count());
        Ok(PathPattern { regex, greedy, names, root, depth })
    }

    /// The folder the pattern's files lie below (`raw/runs` of `raw/runs/{run}/*.jsonl`; empty
    /// for a pattern that starts with a wildcard): what a walk for its files starts from.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// Matches a relative path; returns the captures (each as short as the match allows).
    pub fn captures(&self, rel: &str) -> Option<Vec<(String, String)>> {
        let caps = self.regex.captures(rel)?;
        Some(self.names.iter().map(|n| (n.clone(), caps[n.as_str()].to_string())).collect())
    }

    /// When the captures of a matched path could be split more than one way
    /// (`{ckpt}_{split}_generations.jsonl` on `global_step_100_id_generations.jsonl`), a
    /// message giving two readings; `None` when the match is unique.
    pub fn ambiguity(&self, rel: &str) -> Option<String> {
        let short = self.captures(rel)?;
        let caps = self.greedy.captures(rel)?;
        let long: Vec<(String, String)> =
            self.names.iter().map(|n| (n.clone(), caps[n.as_str()].to_string())).collect();
        if short == long {
            return None;
        }
        let show = |c: &[(String, String)]| c.iter().map(|(n, v)| format!("{n}={v:?}")).collect::<Vec<_>>().join(", ");
        Some(format!(
            "the path's captures can be read more than one way ({} or {}); put a character that no value \
             holds between captures, or a folder level",
            show(&short),
            show(&long)
        ))
    }
}

/// What an error of the walk for path pattern `p` (under `root`) means: nothing, for a broken
/// link the pattern does not match or a loop at the deepest level it reaches (`Ok`); else
/// the error, a loop named with the link it goes back to.
fn walk_error(e: walkdir::Error, base: &Path, root: &Path, pat: &PathPattern, p: &str) -> Result<()> {
    let path = e.path().map(Path::to_path_buf).unwrap_or_else(|| root.to_path_buf());
    // a broken symbolic link the pattern does not match is none of the source's business
    let broken_link = std::fs::symlink_metadata(&path).is_ok() && std::fs::metadata(&path).is_err();
    if broken_link && path.starts_with(base) && pat.captures(&relative_path(base, &path)).is_none() {
        return Ok(());
    }
    // a link back to a folder above it, at the deepest level the pattern
    // reaches: the walk would not go into it, so it loops nowhere
    if e.loop_ancestor().is_some() && pat.depth.is_some_and(|d| e.depth() >= d) {
        return Ok(());
    }
    if let Some(ancestor) = e.loop_ancestor() {
        return Err(Error::io(
            path,
            std::io::Error::other(format!(
                "a symbolic link back to {}, which holds it: a loop the path pattern {p:?} \
                     would walk without end (remove the link, or name files above it)",
                ancestor.display()
            )),
        ));
    }
    let source = e.into_io_error().unwrap_or_else(|| std::io::Error::other("walk failed"));
    let source =
        if broken_link { std::io::Error::other(format!("a symbolic link to nothing ({source})")) } else { source };
    Err(Error::io(path, source))
}

/// Whether `path`'s parts below `base` are UTF-8 text.
pub fn is_utf8_below(base: &Path, path: &Path) -> bool {
    path.strip_prefix(base).is_ok_and(|r| r.to_str().is_some())
}

/// `path` below `base` as text, each byte that is not UTF-8 written `\xFF`: distinct paths
/// stay distinct, and the name can be typed back in a shell's `$'…'`.
pub fn escaped_below(base: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path);
    let mut out = String::new();
    for chunk in rel.as_os_str().as_encoded_bytes().utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

/// `path` relative to `base`, with `/` between its parts; bytes that are not UTF-8 shown as
/// U+FFFD (see [`is_utf8_below`]).
fn relative_path(base: &Path, path: &Path) -> String {
    crate::core::names::relative_path(base, path)
}

/// Whether `rel` (a path relative to the pipeline folder `dir`) is one the pipeline's
/// `not_read` leaves out on purpose: an entry as written, or one its globs match. An entry
/// that names a file there as written (`raw/r*2/log.jsonl`, a run folder named with a `*`) is
/// that file alone, not a glob that would match other runs' files too.
pub fn not_read_matcher<'a>(dir: &Path, not_read: &'a [String]) -> impl Fn(&str) -> bool + 'a {
    let globs: Vec<PathPattern> =
        not_read.iter().filter(|p| !dir.join(p.as_str()).is_file()).filter_map(|p| PathPattern::new(p).ok()).collect();
    move |rel: &str| not_read.iter().any(|p| p == rel) || globs.iter().any(|g| g.captures(rel).is_some())
}

/// The files of source `index` of `spec`: those its `path` matches ([`find`]), but the ones
/// the pipeline's `not_read` leaves out on purpose (a run's log that `runpack init` found
/// unreadable, in a folder its `{run}` names).
///
/// Errors: as [`find`].
pub fn source_files(spec: &crate::core::spec::PipelineSpec, index: usize, context: &str) -> Result<Vec<InputFile>> {
    let src = &spec.def.sources[index];
    let found = find(&spec.dir, &src.path.list(), context)?;
    let not_read: Vec<String> = spec.def.not_read.as_ref().map(|p| p.list()).unwrap_or_default();
    if not_read.is_empty() {
        return Ok(found);
    }
    let left_out = not_read_matcher(&spec.dir, &not_read);
    Ok(found.into_iter().filter(|f| !left_out(&f.rel)).collect())
}

/// Lists the files under `base` matching any of `patterns`, sorted by relative path.
///
/// Errors: [`Error::Config`] for bad patterns or captures that differ between patterns,
/// [`Error::Io`] for unreadable folders.
pub fn find(base: &Path, patterns: &[String], context: &str) -> Result<Vec<InputFile>> {
    let mut out: Vec<InputFile> = Vec::new();
    let mut names: Option<Vec<String>> = None;
    for p in patterns {
        // `./raw/m.jsonl`, `raw//m.jsonl` and `raw/./m.jsonl` name the file `raw/m.jsonl` names
        let trailing = p.ends_with('/') && p.len() > 1;
        let mut normal = crate::core::names::resolved_path(p);
        // (`./` is the folder itself, as `.` is: no `/` of its own)
        if trailing && !normal.is_empty() {
            normal.push('/');
        }
        let p = if p.starts_with('/') { p } else { &normal };
        let pat = PathPattern::new(p).map_err(|m| Error::config(context, m))?;
        match &names {
            None => names = Some(pat.names.clone()),
            Some(n) if *n != pat.names => {
                return Err(Error::config(context, "all paths of one source must have the same {captures}"));
            }
            _ => {}
        }
        let root = base.join(&pat.root);
        let before = out.len();
        if !root.exists() && patterns.len() > 1 {
            return Err(Error::config(
                context,
                format!("path {p:?} matches no file under {}{}", base.display(), literal_brackets_hint(&[p])),
            ));
        }
        if !root.exists() {
            continue;
        }
        let relative = |path: &Path| relative_path(base, path);
        // a pattern without wildcards or captures names one file: read it, walk nothing
        if !p.contains(['*', '?', '{']) {
            let path = base.join(p);
            let rel = relative(&path);
            if path.is_file()
                && let Some(captures) = pat.captures(&rel)
            {
                out.push(InputFile { rel, path, captures });
                continue;
            }
        }
        let mut folders: Vec<String> = Vec::new();
        let walk = walkdir::WalkDir::new(&root).follow_links(true).sort_by_file_name();
        let walk = match pat.depth {
            Some(d) => walk.max_depth(d),
            None => walk,
        };
        for entry in walk {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    walk_error(e, base, &root, &pat, p)?;
                    continue;
                }
            };
            if !entry.file_type().is_file() && !entry.file_type().is_dir() {
                // a FIFO, socket or device the pattern matches: its bytes are no file's
                // (a FIFO would block the build, a device never end), so it is not skipped
                // without a word
                let rel = relative(entry.path());
                if pat.captures(&rel).is_some() {
                    return Err(Error::config(
                        format!("{context}: {rel}"),
                        format!(
                            "path pattern {p:?} matches {rel}, which is not a regular file (a named pipe, socket \
                             or device); move it away or narrow the pattern"
                        ),
                    ));
                }
                continue;
            }
            if !entry.file_type().is_file() {
                // a folder the pattern matches: named when the pattern matches no file
                if entry.file_type().is_dir() && entry.depth() > 0 && folders.len() < 3 {
                    let rel = relative(entry.path());
                    // (a folder named as it is gets a glob to use from the caller)
                    if pat.captures(&rel).is_some() && rel != p.trim_end_matches('/') {
                        folders.push(rel);
                    }
                }
                continue;
            }
            let rel = relative(entry.path());
            if let Some(captures) = pat.captures(&rel) {
                if !is_utf8_below(base, entry.path()) {
                    // two such names can read as one text: neither may stand for the other
                    let shown = escaped_below(base, entry.path());
                    return Err(Error::config(
                        format!("{context}: {shown}"),
                        format!(
                            "path pattern {p:?} matches a file whose path is not UTF-8 (shown with \\x escapes); \
                             tables and the manifest name a file by its path as text, so rename it"
                        ),
                    ));
                }
                if let Some(m) = pat.ambiguity(&rel) {
                    return Err(Error::config(format!("{context}: {rel}"), format!("path pattern {p:?}: {m}")));
                }
                out.push(InputFile { rel, path: entry.path().to_path_buf(), captures });
            }
        }
        if out.len() == before && !folders.is_empty() {
            return Err(Error::config(
                context,
                format!(
                    "path {p:?} matches folders ({}{}) but no file: a path names files; add \"/**\" to read every \
                     file under them, or a name such as \"/*.jsonl\"",
                    folders.join(", "),
                    if folders.len() == 3 { ", …" } else { "" }
                ),
            ));
        }
        if out.len() == before && patterns.len() > 1 {
            return Err(Error::config(
                context,
                format!("path {p:?} matches no file under {}{}", base.display(), literal_brackets_hint(&[p])),
            ));
        }
    }
    // (part by part: a run folder's files before those of a folder named after it, `-1`)
    out.sort_by(|a, b| crate::core::names::path_order(&a.rel, &b.rel).then_with(|| a.path.cmp(&b.path)));
    out.dedup_by(|a, b| a.rel == b.rel);
    Ok(out)
}

/// Size limit under which a file is checked for being a Git LFS pointer, in bytes.
pub const LFS_POINTER_MAX_BYTES: u64 = 1024;

/// A Git LFS pointer file (<https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md>).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LfsPointer {
    /// sha256 of the object, lowercase hex.
    pub oid: String,
    /// Size of the object in bytes.
    pub size: u64,
}

/// Reads `path` as an LFS pointer if it is one (small file, first line
/// `version https://git-lfs.github.com/spec/v1`, an `oid sha256:` and a `size` line).
pub fn lfs_pointer(path: &Path) -> Option<LfsPointer> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > LFS_POINTER_MAX_BYTES {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    if lines.next()? != "version https://git-lfs.github.com/spec/v1" {
        return None;
    }
    let mut oid = None;
    let mut size = None;
    for l in lines {
        if let Some(o) = l.strip_prefix("oid sha256:") {
            oid = Some(o.trim().to_string());
        } else if let Some(s) = l.strip_prefix("size ") {
            size = s.trim().parse().ok();
        }
    }
    Some(LfsPointer { oid: oid?, size: size? })
}

/// The error for an input that is an LFS pointer.
pub fn lfs_pointer_error(rel: &str, p: &LfsPointer) -> Error {
    Error::Refused(format!(
        "{rel} is a Git LFS pointer (object of {} bytes, oid sha256:{}), not data; \
         fetch the LFS object first (e.g. `git lfs pull`)",
        crate::core::numbers::group_digits(p.size),
        p.oid
    ))
}

/// Opens a raw input, undoing zstd or gzip compression detected by magic bytes.
///
/// Errors: [`Error::Io`] naming the file; an LFS pointer is refused with a message naming the
/// object it points to.
pub fn open(file: &InputFile) -> Result<Box<dyn BufRead + Send>> {
    open_hashing(file, None)
}

/// [`open`], and when `digests` is given, the raw (compressed) bytes are hashed as they are
/// read and the file's digest is recorded there once it is read to its end.
///
/// Errors: as [`open`].
pub fn open_hashing(file: &InputFile, digests: Option<&ReadDigests>) -> Result<Box<dyn BufRead + Send>> {
    if let Some(p) = lfs_pointer(&file.path) {
        return Err(lfs_pointer_error(&file.rel, &p));
    }
    let f = Counted(File::open(&file.path).map_err(|e| Error::io(&file.path, e))?);
    let f: Box<dyn Read + Send> = match digests {
        Some(d) => Box::new(d.reader(&file.path, f)),
        None => Box::new(f),
    };
    let mut reader = BufReader::with_capacity(256 * 1024, f);
    let head = reader.fill_buf().map_err(|e| Error::io(&file.path, e))?;
    let zstd_frame = head.len() >= 4
        && (head[..4] == [0x28, 0xB5, 0x2F, 0xFD] || (head[0] & 0xF0 == 0x50 && head[1..4] == [0x2A, 0x4D, 0x18]));
    if zstd_frame {
        let dec = zstd::stream::read::Decoder::with_buffer(reader).map_err(|e| Error::io(&file.path, e))?;
        return Ok(Box::new(BufReader::with_capacity(256 * 1024, Decoding(dec))));
    }
    if head.len() >= 2 && head[..2] == [0x1F, 0x8B] {
        let dec = flate2::bufread::MultiGzDecoder::new(reader);
        return Ok(Box::new(BufReader::with_capacity(256 * 1024, Decoding(dec))));
    }
    // a Parquet file named as text (`.jsonl`) is said as such, not as bytes that are no UTF-8
    // on every line (a `.parquet` file opened here is one that its format reads by path)
    if head.starts_with(b"PAR1") && !file.rel.to_ascii_lowercase().ends_with(".parquet") {
        return Err(Error::format(
            &file.rel,
            "holds Parquet data (it starts with PAR1), not text; read it with format = \"parquet\"",
        ));
    }
    // a name that promises compression the bytes do not hold: a partly written download, or a
    // misnamed file, never read as plain text. An empty file holds no record, compressed or
    // not: it is read as nothing, and the build's empty-input warning names it
    if let Some((ext, kind)) = compression_named(&file.rel)
        && !head.is_empty()
    {
        let found =
            format!("bytes that do not start as {kind} data does ({})", hex::encode(&head[..head.len().min(4)]));
        return Err(Error::format(&file.rel, format!("named {ext}, but {found}; expected {kind}-compressed data")));
    }
    Ok(Box::new(reader))
}

/// A decompressor whose own errors (a stream cut short, damaged, or followed by other bytes)
/// carry [`BrokenStream`], told apart from the errors of reading the file (which carry the
/// operating system's code and pass through as they are).
struct Decoding<R>(R);

impl<R: Read> Read for Decoding<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf).map_err(|e| {
            if e.raw_os_error().is_some() || e.kind() == std::io::ErrorKind::Interrupted {
                e
            } else {
                std::io::Error::new(e.kind(), BrokenStream(e.to_string()))
            }
        })
    }
}

/// The error of a compressed input whose stream breaks, as its decompressor said it.
#[derive(Debug)]
pub struct BrokenStream(pub String);

impl std::fmt::Display for BrokenStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BrokenStream {}

/// Whether `e`, from a reader [`open`] gave, is a compressed stream that breaks
/// ([`BrokenStream`]), rather than a failure to read the file.
pub fn broken_stream(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<BrokenStream>())
}

/// Bytes of raw input files read through [`open`] by this process so far, counted as they
/// come off the disk (before decompression), by every build the process runs: progress takes
/// differences of it.
pub fn raw_bytes_read() -> u64 {
    RAW_BYTES_READ.load(std::sync::atomic::Ordering::Relaxed)
}

static RAW_BYTES_READ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A raw input file whose bytes read are added to [`raw_bytes_read`].
struct Counted(File);

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        RAW_BYTES_READ.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// Whether a file or folder named `name` is hidden, and not looked into by `runpack init` nor
/// named by a build: a name that starts with `.` (`.git`, `.cache`, `.ipynb_checkpoints`),
/// except the folders lm-eval names after a model given by a relative path (its
/// `sanitize_model_name` writes `./out/checkpoint-200` as `.__out__checkpoint-200`).
pub fn is_hidden(name: &str) -> bool {
    name.starts_with('.') && !name.trim_start_matches('.').starts_with("__")
}

/// Whether file name `name` has one of the extensions `runpack init` looks at (`.json`,
/// `.jsonl`, `.csv`, `.tsv`, `.parquet`, `.yaml`, `.db`, `.eval`, …), behind the compression
/// it promises: the files a build names when no source reads them.
pub fn named_readable(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let compressed = compression_named(&name).map_or(0, |(x, _)| x.len());
    let name = &name[..name.len() - compressed];
    [".json", ".jsonl", ".ndjson", ".csv", ".tsv", ".parquet", ".yaml", ".yml", ".db", ".eval"]
        .iter()
        .any(|e| name.ends_with(e))
}

/// The compression a file's name promises, as (its extension, the format): `.gz` gzip,
/// `.zst` or `.zstd` zstd, in any case; `None` for another name.
pub fn compression_named(rel: &str) -> Option<(&'static str, &'static str)> {
    let name = rel.to_ascii_lowercase();
    [(".gz", "gzip"), (".zst", "zstd"), (".zstd", "zstd")].into_iter().find(|(x, _)| name.ends_with(x))
}

/// Reads at most `limit` bytes of a small side file (card metadata and the like).
pub fn read_small(path: &Path, limit: u64) -> Result<String> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut s = String::new();
    f.take(limit + 1).read_to_string(&mut s).map_err(|e| Error::io(path, e))?;
    if s.len() as u64 > limit {
        return Err(Error::config(path.display().to_string(), format!("file is larger than {limit} bytes")));
    }
    Ok(s)
}

/// For a path that matched nothing: a note when it holds `[` or `]`, which a shell glob
/// reads as a class of characters and a source's path reads as they are (only `*`, `?`,
/// `**` and `{capture}` are special); else nothing.
pub fn literal_brackets_hint<S: AsRef<str>>(paths: &[S]) -> String {
    if paths.iter().any(|p| p.as_ref().contains(['[', ']'])) {
        "; `[` and `]` are read as they are, not as a class of characters (only `*`, `?`, `**` and {capture} are \
         special in a path): list the files, or use `*`"
            .into()
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_that_promises_compression_the_bytes_lack_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes, said) in [
            (
                "p.jsonl.zst",
                &b"{\"a\":1}\n"[..],
                "p.jsonl.zst: named .zst, but bytes that do not start as zstd data does (7b226122)",
            ),
            // and Parquet data read as text, whatever the name
            ("q.jsonl", &b"PAR1\x15\x04"[..], "q.jsonl: holds Parquet data (it starts with PAR1), not text"),
        ] {
            std::fs::write(dir.path().join(name), bytes).unwrap();
            let input = InputFile { path: dir.path().join(name), rel: name.into(), captures: Default::default() };
            let e = open(&input).err().expect("refused").to_string();
            assert!(e.contains(said), "{e}");
        }
        // an empty file, as an empty `.jsonl` is: no record (the build's warning names it)
        std::fs::write(dir.path().join("e.jsonl.gz"), b"").unwrap();
        let input =
            InputFile { path: dir.path().join("e.jsonl.gz"), rel: "e.jsonl.gz".into(), captures: Default::default() };
        let mut text = String::new();
        open(&input).unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "");
    }

    #[test]
    fn a_pattern_that_matches_only_folders_says_so() {
        let dir = tempfile::tempdir().unwrap();
        for run in ["run-1", "run-2"] {
            std::fs::create_dir_all(dir.path().join("wandb").join(run).join("files")).unwrap();
            std::fs::write(dir.path().join("wandb").join(run).join("files/config.yaml"), "a: 1\n").unwrap();
        }
        let e = find(dir.path(), &["wandb/*".into()], "p.toml (source w)").unwrap_err().to_string();
        assert!(
            e.contains("path \"wandb/*\" matches folders (wandb/run-1, wandb/run-2) but no file: a path names files; add \"/**\""),
            "{e}"
        );
        assert_eq!(find(dir.path(), &["wandb/**".into()], "p").unwrap().len(), 2);
        assert!(find(dir.path(), &["wandb/*/nothing".into()], "p").unwrap().is_empty());
    }

    #[test]
    fn patterns_capture_segments() {
        let p = PathPattern::new("raw/results/{run}_metrics.jsonl").unwrap();
        assert_eq!(p.captures("raw/results/arith_metrics.jsonl").unwrap(), vec![("run".into(), "arith".into())]);
        assert!(p.captures("raw/results/x/arith_metrics.jsonl").is_none());
        let p = PathPattern::new("logs/**/*.jsonl").unwrap();
        assert!(p.captures("logs/a.jsonl").is_some());
        assert!(p.captures("logs/x/y/a.jsonl").is_some());
        assert!(PathPattern::new("../x").is_err());
    }

    #[test]
    fn captures_that_split_more_than_one_way_are_found() {
        let p = PathPattern::new("raw/{model}/{ckpt}_{split}_generations.jsonl").unwrap();
        assert_eq!(p.ambiguity("raw/m/step100_id_generations.jsonl"), None);
        let m = p.ambiguity("raw/m/global_step_100_id_generations.jsonl").unwrap();
        assert!(
            m.starts_with(
                "the path's captures can be read more than one way (model=\"m\", ckpt=\"global\", \
                 split=\"step_100_id\" or model=\"m\", ckpt=\"global_step_100\", split=\"id\")"
            ),
            "{m}"
        );
        // a capture alone in its segment, or beside literals only, is read one way
        let p = PathPattern::new("raw/{run}/metrics_{n}.jsonl").unwrap();
        assert_eq!(p.ambiguity("raw/a_b/metrics_1_2.jsonl"), None);
    }
}
