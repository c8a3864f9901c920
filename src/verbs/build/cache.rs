//! Unchanged rebuilds: a release whose inputs and pipeline have not changed is not rebuilt.
//!
//! In: the pipeline, the build options, the existing release's manifest, and a small stat
//! cache beside the releases (`<releases>/<name>/.runpack-input-cache.json`: for each input,
//! and each file of the release as the build wrote it, its path, [`FileStamp`] and SHA-256).
//! Out: whether the existing release is exactly what a build would produce again.
//!
//! An input whose stamp (size, modification time, and on Unix its inode, device and status
//! change time, which no program can set back) matches the cache is not read again; any
//! other input is hashed. The release is up to date when the runpack version, the pipeline's
//! definition hash, the build options and the list of inputs with their SHA-256 all equal what
//! its manifest records. The stat cache is an optimisation only: deleting it costs one hashing
//! pass.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::core::error::{Error, Result};
use crate::core::spec::PipelineSpec;
use crate::stages::release::{HashedPath, Manifest};

/// What a file's metadata says of its content without reading it: two stamps of one path
/// that are equal mean the file was neither rewritten nor replaced in between, however its
/// modification time was set (`touch -d` changes the status change time; `mv` or a
/// re-pointed link changes the inode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    /// Size in bytes.
    pub bytes: u64,
    /// Modification time, nanoseconds since the Unix epoch (-1 when unknown).
    pub mtime_ns: i64,
    /// Status change time (`st_ctime`), nanoseconds since the Unix epoch; none off Unix.
    #[serde(default)]
    pub ctime_ns: Option<i64>,
    /// Inode number; none off Unix.
    #[serde(default)]
    pub inode: Option<u64>,
    /// Device number; none off Unix.
    #[serde(default)]
    pub device: Option<u64>,
}

impl FileStamp {
    /// The stamp of `path` now (links followed).
    ///
    /// Errors: [`Error::Io`] when its metadata cannot be read.
    pub fn of(path: &Path) -> Result<FileStamp> {
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        Ok(Self::from_metadata(&meta))
    }

    fn from_metadata(meta: &std::fs::Metadata) -> FileStamp {
        #[cfg(unix)]
        let (ctime_ns, inode, device) = {
            use std::os::unix::fs::MetadataExt;
            let ns = meta.ctime().saturating_mul(1_000_000_000).saturating_add(meta.ctime_nsec());
            (Some(ns), Some(meta.ino()), Some(meta.dev()))
        };
        #[cfg(not(unix))]
        let (ctime_ns, inode, device) = (None, None, None);
        FileStamp { bytes: meta.len(), mtime_ns: mtime_ns(meta), ctime_ns, inode, device }
    }

    /// Whether the stamp can vouch for a file's content (its modification time is known).
    fn usable(&self) -> bool {
        self.mtime_ns >= 0
    }
}

/// One cached input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedInput {
    /// The input's stamp when it was hashed.
    #[serde(flatten)]
    pub stamp: FileStamp,
    /// Lowercase hex SHA-256.
    pub sha256: String,
}

/// The stat cache of one pipeline's inputs and of its release's files as the build wrote
/// them, keyed by absolute path.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct InputCache {
    /// Entries by absolute path.
    pub inputs: BTreeMap<String, CachedInput>,
}

fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(-1)
}

impl InputCache {
    /// Where the cache of `spec` lives under `releases_dir`.
    pub fn path(releases_dir: &Path, spec: &PipelineSpec) -> PathBuf {
        releases_dir.join(&spec.def.name).join(".runpack-input-cache.json")
    }

    /// Reads the cache (an empty one when missing or unreadable).
    pub fn load(path: &Path) -> InputCache {
        std::fs::read_to_string(path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
    }

    /// Writes the cache atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_string(self).expect("serializable")).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
    }

    /// SHA-256 of `file`, from the cache when its [`FileStamp`] matches, else computed (and
    /// cached with the stamp taken before reading, so that a file changed while it was read is
    /// read again next time).
    ///
    /// Errors: [`Error::Io`] when the file cannot be read.
    pub fn sha256(&mut self, file: &Path) -> Result<String> {
        let abs = std::path::absolute(file).map_err(|e| Error::io(file, e))?;
        let key = abs.to_string_lossy().to_string();
        let stamp = FileStamp::of(file)?;
        if let Some(c) = self.inputs.get(&key)
            && c.stamp == stamp
            && stamp.usable()
        {
            return Ok(c.sha256.clone());
        }
        let d = crate::stages::hash::sha256_file(file)?;
        self.inputs.insert(key, CachedInput { stamp, sha256: d.sha256.clone() });
        Ok(d.sha256)
    }

    /// Records the digest of a file a build read, with its stamp from before the build read
    /// it (and found unchanged after).
    pub fn record(&mut self, file: &Path, stamp: FileStamp, sha256: &str) {
        if let Ok(abs) = std::path::absolute(file) {
            self.inputs.insert(abs.to_string_lossy().to_string(), CachedInput { stamp, sha256: sha256.to_string() });
        }
    }
}

/// The stamp of every file the sources of `spec` name now, by the path
/// [`crate::stages::ingest::files::find`] gives; a source whose files cannot be listed is left out
/// (reading it fails with the reason).
pub fn input_stamps(spec: &PipelineSpec) -> BTreeMap<PathBuf, FileStamp> {
    let mut stamps = BTreeMap::new();
    for (i, src) in spec.def.sources.iter().enumerate() {
        for f in crate::stages::ingest::files::source_files(spec, i, &src.name).unwrap_or_default() {
            if let Ok(stamp) = FileStamp::of(&f.path) {
                stamps.insert(f.path, stamp);
            }
        }
    }
    stamps
}

/// The pipeline's definition files with their digests, and the digest of their listing.
pub fn definition_digest(spec: &PipelineSpec) -> Result<(Vec<HashedPath>, String)> {
    let files: Vec<HashedPath> = spec
        .definition_files()
        .into_iter()
        .map(|rel| {
            let d = crate::stages::hash::sha256_file(&spec.dir.join(&rel))?;
            Ok(HashedPath { path: rel, bytes: d.bytes, sha256: d.sha256 })
        })
        .collect::<Result<_>>()?;
    let listing: String = files.iter().map(|f| format!("{}  {}\n", f.sha256, f.path)).collect();
    Ok((files, crate::stages::hash::sha256_bytes(listing.as_bytes())))
}

/// `input a is new`, or `inputs a, b, c and 4 more are new`: every path counted, the first
/// three named.
fn inputs_that(paths: &[&str], one: &str, many: &str) -> String {
    match paths {
        [p] => format!("input {p} {one}"),
        _ => format!("inputs {} {many}", crate::core::report::first_names(paths, 3)),
    }
}

/// What differs between the release `manifest` describes and what building `spec` with
/// `build_settings` would produce: `None` when nothing does (same runpack, pipeline
/// definition, options, and inputs by SHA-256, and every file of the release still there with
/// its size and SHA-256, taken from `cache` when its stamp is the one the build recorded),
/// else every difference, for the user
/// (`pipeline files changed: pipeline.toml; input raw/a.jsonl changed`; of the release's own
/// files, the first missing one).
///
/// Errors: [`Error::Io`] when an input cannot be hashed, [`Error::Config`] when the sources'
/// files cannot be listed.
pub fn stale(
    spec: &PipelineSpec,
    release: &Path,
    manifest: &Manifest,
    build_settings: &BTreeMap<String, serde_json::Value>,
    cache: &mut InputCache,
) -> Result<Option<String>> {
    if manifest.runpack_version != env!("CARGO_PKG_VERSION") {
        return Ok(Some(format!("it was built by runpack {}", manifest.runpack_version)));
    }
    // every difference is said: a refusal naming only the first would leave the others
    // to be found one --force at a time
    let mut changes: Vec<String> = Vec::new();
    let (files, pipeline_sha) = definition_digest(spec)?;
    if manifest.pipeline.sha256 != pipeline_sha {
        let changed: Vec<&str> = files
            .iter()
            .filter(|f| !manifest.pipeline.files.iter().any(|m| m.path == f.path && m.sha256 == f.sha256))
            .map(|f| f.path.as_str())
            .chain(
                manifest
                    .pipeline
                    .files
                    .iter()
                    .filter(|m| !files.iter().any(|f| f.path == m.path))
                    .map(|m| m.path.as_str()),
            )
            .collect();
        changes.push(format!("pipeline files changed: {}", changed.join(", ")));
    }
    if &manifest.build != build_settings {
        let changed: Vec<String> = manifest
            .build
            .keys()
            .chain(build_settings.keys())
            .filter(|k| manifest.build.get(*k) != build_settings.get(*k))
            .map(|k| if k == "sources" { "the sources".to_string() } else { format!("--{}", k.replace('_', "-")) })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        changes.push(format!("build options changed: {}", changed.join(", ")));
    }
    if let Some(f) = manifest.files.iter().find(|f| {
        !crate::stages::release::safe_relative(&f.path)
            || std::fs::metadata(release.join(&f.path)).map(|m| m.len()).ok() != Some(f.bytes)
    }) {
        changes.push(format!("its file {} is missing or has another size", f.path));
    } else {
        // a file changed in place, its size kept: told by its stamp (recorded when the build
        // wrote it), else by its hash
        let altered: Vec<&str> = manifest
            .files
            .iter()
            .filter(|f| cache.sha256(&release.join(&f.path)).map_or(true, |d| d != f.sha256))
            .map(|f| f.path.as_str())
            .collect();
        if !altered.is_empty() {
            let (one, many) = ("changed since it was built", "changed since they were built");
            let files = match altered.as_slice() {
                [f] => format!("its file {f} {one}"),
                _ => format!("its files {} {many}", crate::core::report::first_names(&altered, 3)),
            };
            changes.push(format!("{files} (`runpack verify` says how)"));
        }
    }
    // a file put in the release's folder by hand: the release no longer verifies, and a
    // rebuild (--force) would not keep it
    let extra = crate::verbs::verify::unexpected_files(release, manifest);
    if !extra.is_empty() {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        changes.push(format!(
            "its folder holds {} the release does not list: {} (`runpack verify` says so too)",
            if extra.len() == 1 { "a file" } else { "files" },
            crate::core::report::first_names(&extra, 3)
        ));
    }
    let mut current: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (i, src) in spec.def.sources.iter().enumerate() {
        for f in crate::stages::ingest::files::source_files(spec, i, &src.name)? {
            current.insert(f.rel.clone(), f.path.clone());
        }
    }
    let gone: Vec<&str> =
        manifest.inputs.iter().filter(|i| !current.contains_key(&i.path)).map(|i| i.path.as_str()).collect();
    if !gone.is_empty() {
        changes.push(inputs_that(&gone, "is no longer there", "are no longer there"));
    }
    let known: std::collections::BTreeSet<&str> = manifest.inputs.iter().map(|i| i.path.as_str()).collect();
    let new: Vec<&str> = current.keys().map(String::as_str).filter(|rel| !known.contains(rel)).collect();
    if !new.is_empty() {
        changes.push(inputs_that(&new, "is new", "are new"));
    }
    let mut changed: Vec<&str> = Vec::new();
    for input in &manifest.inputs {
        if let Some(path) = current.get(&input.path)
            && cache.sha256(path)? != input.sha256
        {
            changed.push(&input.path);
        }
    }
    if !changed.is_empty() {
        changes.push(inputs_that(&changed, "changed", "changed"));
    }
    Ok((!changes.is_empty()).then(|| changes.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_new_input_is_counted() {
        assert_eq!(inputs_that(&["raw/a"], "is new", "are new"), "input raw/a is new");
        assert_eq!(inputs_that(&["a", "b"], "is new", "are new"), "inputs a, b are new");
        assert_eq!(
            inputs_that(&["a", "b", "c", "d", "e"], "is no longer there", "are no longer there"),
            "inputs a, b, c and 2 more are no longer there"
        );
    }

    #[test]
    fn a_saved_cache_loads_back_and_spares_hashing_an_unchanged_file() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("a.jsonl");
        std::fs::write(&input, "{\"step\":1}\n").unwrap();
        let stamp = FileStamp::of(&input).unwrap();
        let mut cache = InputCache::default();
        // a digest no file has: taken from the cache, it proves nothing was hashed
        cache.record(&input, stamp, "cached");
        let path = dir.path().join("cache.json");
        cache.save(&path).unwrap();
        let mut loaded = InputCache::load(&path);
        assert_eq!(loaded.inputs, cache.inputs);
        assert_eq!(loaded.sha256(&input).unwrap(), "cached");
        // rewritten with the same size and its modification time set back: hashed again
        let mtime = std::fs::metadata(&input).unwrap().modified().unwrap();
        std::fs::write(&input, "{\"step\":2}\n").unwrap();
        std::fs::File::options().write(true).open(&input).unwrap().set_modified(mtime).unwrap();
        assert_eq!(loaded.sha256(&input).unwrap(), crate::stages::hash::sha256_bytes(b"{\"step\":2}\n"));
    }
}
