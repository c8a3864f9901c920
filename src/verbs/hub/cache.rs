//! The local Hugging Face cache, shared with the Python client (hub-docs `docs/hub/local-cache.md`).
//!
//! In: a cache root (what `HF_HUB_CACHE` or `$HF_HOME/hub` names), a repo, a commit and the files
//! wanted with their expected size and digest. Out: verified files under `snapshots/`, and
//! [`fetch_release`] gives the folder of a published release, ready for [`crate::sql::session`].
//!
//! Layout written (the same the Python client writes and reads):
//!
//! ```text
//! <root>/datasets--<namespace>--<name>/
//!   refs/<revision>                the 40-hex commit, no trailing newline
//!   blobs/<etag>                   content; etag = SHA-256 for LFS files, git blob SHA-1 otherwise
//!   blobs/<etag>.incomplete        a download in progress (resumed with `Range: bytes=<n>-`)
//!   snapshots/<commit>/<path>      relative symlink to ../../blobs/<etag> (more ../ per folder)
//! ```
//!
//! A cached blob is used only after its size and digest match what is expected; a damaged one
//! is deleted and fetched again. A download is hashed completely before it is renamed into
//! `blobs/` (atomic on one file system), so a truncated or altered file never becomes a blob.
//! Concurrent processes writing the same blob are not coordinated (no `.locks/`): the last
//! rename wins, and both wrote verified bytes.
//!
//! Not the `hf-hub` crate's download into the same layout (1.0.0): it writes the body of its
//! `GET` into the blob without checking the status, hashes nothing, restarts a partial
//! `.incomplete` instead of resuming it, and uses a blob already there as it is.

use std::io::Write;
use std::path::{Path, PathBuf};

use futures::StreamExt;

use super::client::HubClient;
use super::{HubTarget, RepoId, join_repo_path, remote};
use crate::core::error::{Error, Result};
use crate::core::numbers;
use crate::core::progress::{Progress, Unit};
use crate::stages::hash;
use crate::stages::release::{Manifest, safe_relative};

/// A hub cache folder.
#[derive(Debug, Clone)]
pub struct HubCache {
    root: PathBuf,
}

/// The digest a file must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// SHA-256 of the content, lowercase hex.
    Sha256(String),
    /// Git blob SHA-1, lowercase hex.
    GitSha1(String),
}

/// One file wanted from a commit.
#[derive(Debug, Clone)]
pub struct Want {
    /// Path in the repo.
    pub path: String,
    /// Name of the blob: the LFS SHA-256, or the git blob SHA-1 for files stored in git.
    pub etag: String,
    /// Expected size in bytes.
    pub bytes: u64,
    /// Expected digest.
    pub check: Check,
}

/// Outcome of [`fetch`].
#[derive(Debug, Clone)]
pub enum Fetched {
    /// A cached blob matched; nothing was downloaded.
    Cached(PathBuf),
    /// Downloaded (this many bytes), verified and linked.
    Downloaded(PathBuf, u64),
    /// The bytes served do not match; nothing was kept.
    Bad {
        /// Size in bytes of what was received.
        found_bytes: u64,
        /// SHA-256 of what was received.
        found_sha256: String,
        /// The digest that was expected, as `sha256 <hex>` or `git-sha1 <hex>`.
        expected: String,
        /// The expected size in bytes.
        expected_bytes: u64,
    },
}

impl HubCache {
    /// The cache at `root` (created on first write).
    pub fn new(root: impl Into<PathBuf>) -> HubCache {
        HubCache { root: root.into() }
    }

    /// The cache root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/datasets--<namespace>--<name>`.
    pub fn repo_dir(&self, repo: &RepoId) -> PathBuf {
        self.root.join(format!("datasets--{}--{}", repo.namespace, repo.name))
    }

    /// `snapshots/<commit>` of a repo.
    pub fn snapshot(&self, repo: &RepoId, commit: &str) -> PathBuf {
        self.repo_dir(repo).join("snapshots").join(commit)
    }

    /// The commit recorded for `revision`, if any.
    pub fn read_ref(&self, repo: &RepoId, revision: &str) -> Option<String> {
        // a name that could leave refs/ is no ref of the cache
        super::revision_name(revision, "revision").ok()?;
        let t = std::fs::read_to_string(self.repo_dir(repo).join("refs").join(revision)).ok()?;
        let t = t.trim().to_string();
        super::is_commit_id(&t).then_some(t)
    }

    /// Records that `revision` points at `commit` (no trailing newline, atomic replace).
    ///
    /// Errors: [`Error::Config`] for a revision that is no ref name (as git checks ref names),
    /// [`Error::Io`] when the file cannot be written.
    pub fn write_ref(&self, repo: &RepoId, revision: &str, commit: &str) -> Result<()> {
        super::revision_name(revision, "revision")?;
        let path = self.repo_dir(repo).join("refs").join(revision);
        let dir = path.parent().expect("refs/…");
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
        tmp.write_all(commit.as_bytes()).map_err(|e| Error::io(&path, e))?;
        tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        Ok(())
    }

    fn blob(&self, repo: &RepoId, etag: &str) -> PathBuf {
        self.repo_dir(repo).join("blobs").join(etag)
    }

    /// Points `snapshots/<commit>/<path>` at `blobs/<etag>` with a relative symlink.
    fn link(&self, repo: &RepoId, commit: &str, path: &str, etag: &str) -> Result<PathBuf> {
        let link = self.snapshot(repo, commit).join(path);
        let dir = link.parent().expect("snapshot folder");
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let ups = "../".repeat(2 + path.matches('/').count());
        let target = PathBuf::from(format!("{ups}blobs/{etag}"));
        if std::fs::read_link(&link).ok().as_deref() == Some(target.as_path()) {
            return Ok(link);
        }
        if std::fs::symlink_metadata(&link).is_ok() {
            std::fs::remove_file(&link).map_err(|e| Error::io(&link, e))?;
        }
        symlink(&target, &link)?;
        Ok(link)
    }
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, link).map_err(|e| Error::io(link, e))
}

#[cfg(not(unix))]
fn symlink(target: &Path, link: &Path) -> Result<()> {
    let from = link.parent().expect("folder").join(target);
    std::fs::copy(&from, link).map(|_| ()).map_err(|e| Error::io(link, e))
}

/// Size and digest check of a file: `Ok(None)` when it matches, `Ok(Some((bytes, sha256)))`
/// with what was found otherwise.
fn check_file(path: &Path, want: &Want) -> Result<Option<(u64, String)>> {
    let d = hash::sha256_file(path)?;
    let ok = d.bytes == want.bytes
        && match &want.check {
            Check::Sha256(s) => &d.sha256 == s,
            Check::GitSha1(s) => &hash::git_blob_sha1(path)? == s,
        };
    Ok(if ok { None } else { Some((d.bytes, d.sha256)) })
}

fn expected_text(c: &Check) -> String {
    match c {
        Check::Sha256(s) => format!("sha256 {s}"),
        Check::GitSha1(s) => format!("git-sha1 {s}"),
    }
}

/// The verified cached copy of `want` at `commit`, without any network access: `Ok(None)`
/// when it is not cached.
///
/// Errors: [`Error::Refused`] when the cached copy does not match (it is left in place: the
/// caller cannot fetch a good one).
pub fn cached(cache: &HubCache, repo: &RepoId, commit: &str, want: &Want) -> Result<Option<PathBuf>> {
    let link = cache.snapshot(repo, commit).join(&want.path);
    if !link.exists() {
        return Ok(None);
    }
    match check_file(&link, want)? {
        None => Ok(Some(link)),
        Some((bytes, sha)) => Err(Error::Refused(format!(
            "{}: the cached copy is damaged (expected {} bytes, {}; found {} bytes, sha256 {sha}) and offline mode forbids fetching it again",
            want.path,
            numbers::group_digits(want.bytes),
            expected_text(&want.check),
            numbers::group_digits(bytes)
        ))),
    }
}

/// Makes `snapshots/<commit>/<want.path>` a verified copy: reuses a cached blob that matches
/// (unless `reuse` is false: then the bytes are always fetched again), otherwise downloads (resuming a `.incomplete` file by byte range), hashes, renames into
/// `blobs/` and links. A damaged cached blob is deleted first (and logged).
///
/// Errors: network and HTTP failures after retries, and file-system errors. Bytes that do not
/// match are not an error: they give [`Fetched::Bad`] and are deleted.
pub async fn fetch(
    client: &HubClient,
    cache: &HubCache,
    repo: &RepoId,
    commit: &str,
    want: &Want,
    reuse: bool,
    progress: &dyn Progress,
) -> Result<Fetched> {
    let blob = cache.blob(repo, &want.etag);
    if reuse && blob.exists() {
        match check_file(&blob, want)? {
            None => return Ok(Fetched::Cached(cache.link(repo, commit, &want.path, &want.etag)?)),
            Some((bytes, sha)) => {
                tracing::warn!(
                    "cached {} ({}) is damaged: expected {} bytes, {}; found {} bytes, sha256 {sha}; fetching it again",
                    want.path,
                    blob.display(),
                    numbers::group_digits(want.bytes),
                    expected_text(&want.check),
                    numbers::group_digits(bytes)
                );
                std::fs::remove_file(&blob).map_err(|e| Error::io(&blob, e))?;
            }
        }
    }
    let dir = blob.parent().expect("blobs");
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let part = dir.join(format!("{}.incomplete", want.etag));
    let mut fresh_tried = false;
    loop {
        let have = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
        let resume = have > 0 && have < want.bytes;
        if !resume && have > 0 {
            std::fs::remove_file(&part).map_err(|e| Error::io(&part, e))?;
        }
        let fresh = !resume;
        download_to(client, repo, commit, &want.path, &part, if resume { Some(have) } else { None }, progress).await?;
        match check_file(&part, want)? {
            None => {
                std::fs::rename(&part, &blob).map_err(|e| Error::io(&blob, e))?;
                let link = cache.link(repo, commit, &want.path, &want.etag)?;
                return Ok(Fetched::Downloaded(link, want.bytes));
            }
            Some((bytes, sha)) => {
                std::fs::remove_file(&part).map_err(|e| Error::io(&part, e))?;
                if fresh || fresh_tried {
                    return Ok(Fetched::Bad {
                        found_bytes: bytes,
                        found_sha256: sha,
                        expected: expected_text(&want.check),
                        expected_bytes: want.bytes,
                    });
                }
                // a resumed download may have joined two different versions: start over once
                fresh_tried = true;
            }
        }
    }
}

/// Downloads `path` into `part`, appending from byte `from` when the server honours the range
/// (206), starting over otherwise. A body cut short is resumed (up to 5 times).
async fn download_to(
    client: &HubClient,
    repo: &RepoId,
    commit: &str,
    path: &str,
    part: &Path,
    mut from: Option<u64>,
    progress: &dyn Progress,
) -> Result<()> {
    let mut cuts = 0;
    loop {
        let resp = client.download(repo, commit, path, from).await?;
        let append = from.is_some() && resp.status().as_u16() == 206;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(part)
            .map_err(|e| Error::io(part, e))?;
        let mut stream = resp.bytes_stream();
        let mut cut = None;
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(b) => {
                    file.write_all(&b).map_err(|e| Error::io(part, e))?;
                    progress.advance(b.len() as u64);
                }
                Err(e) => {
                    cut = Some(e);
                    break;
                }
            }
        }
        file.flush().map_err(|e| Error::io(part, e))?;
        let Some(e) = cut else { return Ok(()) };
        cuts += 1;
        if cuts > 5 {
            return Err(Error::hub_caused(format!("download {path}: the connection kept breaking: {e}"), e));
        }
        tracing::warn!("download {path}: connection broke ({e}); resuming");
        from = Some(std::fs::metadata(part).map(|m| m.len()).unwrap_or(0));
    }
}

/// A published release made available locally.
#[derive(Debug, Clone)]
pub struct FetchedRelease {
    /// The release folder inside `snapshots/<commit>/` (holds `manifest.json` and the tables).
    pub dir: PathBuf,
    /// The commit read.
    pub commit: String,
    /// Files downloaded.
    pub downloaded_files: usize,
    /// Bytes downloaded.
    pub downloaded_bytes: u64,
    /// Files taken from the cache after checking them.
    pub cached_files: usize,
}

/// Makes the release at `target` available in `cache`: its `manifest.json` and the files of
/// every table (of the tables `tables` names, when given: see [`crate::sql::session::reads_table`]),
/// each checked against the manifest's size and SHA-256 before use. With `client` set to
/// `None` (offline) only the cache is read: the revision through `refs/`, the files through
/// `snapshots/`; a full commit id whose files are all cached (and match the manifest) is read
/// from the cache without a request, online too.
///
/// Errors: [`Error::Refused`] for a file missing on the Hub, bytes that do not match the
/// manifest (the file is named with expected and found size and SHA-256), or, offline, a
/// release that is not cached.
pub async fn fetch_release(
    client: Option<&HubClient>,
    cache: &HubCache,
    target: &HubTarget,
    tables: Option<&std::collections::BTreeSet<String>>,
    progress: &dyn Progress,
) -> Result<FetchedRelease> {
    let repo = &target.repo;
    let Some(client) = client else { return cached_release(cache, target, tables) };
    // a commit never changes: when all of it is cached (and checks out), the Hub is not asked,
    // as huggingface_hub reads a cached file of a commit hash without a request
    if super::is_commit_id(&target.revision)
        && let Ok(cached) = cached_release(cache, target, tables)
    {
        return Ok(cached);
    }
    let commit = client.revision(repo, &target.revision).await?;
    if target.revision != commit {
        cache.write_ref(repo, &target.revision, &commit)?;
    }
    let tree = remote::remote_tree(client, repo, &commit, &target.path).await?;
    let mut out = FetchedRelease {
        dir: cache.snapshot(repo, &commit).join(&target.path),
        commit: commit.clone(),
        downloaded_files: 0,
        downloaded_bytes: 0,
        cached_files: 0,
    };
    let mpath = join_repo_path(&target.path, "manifest.json");
    let Some(mfile) = tree.get(&mpath) else {
        return Err(Error::Refused(format!(
            "{target}: no manifest.json at commit {}; is this a runpack release?",
            super::short(&commit)
        )));
    };
    let want = Want {
        path: mpath.clone(),
        etag: mfile.etag().to_string(),
        bytes: mfile.size,
        check: match &mfile.lfs_sha256 {
            Some(s) => Check::Sha256(s.clone()),
            None => Check::GitSha1(mfile.git_sha1.clone()),
        },
    };
    record(&mut out, fetch(client, cache, repo, &commit, &want, true, progress).await?, &want)?;
    let manifest = Manifest::load(&out.dir)?;
    let wants = table_wants(&manifest, target, tables, |rel, repo_path| {
        let f = tree.get(repo_path).ok_or_else(|| {
            Error::Refused(format!(
                "{rel}: listed in the manifest but missing on the Hub at commit {}",
                super::short(&commit)
            ))
        })?;
        Ok(f.etag().to_string())
    })?;
    let total: u64 = wants.iter().map(|w| w.bytes).sum();
    progress.start("downloading", Unit::Bytes, Some(total));
    for want in &wants {
        let got = fetch(client, cache, repo, &commit, want, true, progress).await;
        match got {
            Ok(f) => record(&mut out, f, want)?,
            Err(e) => {
                progress.finish();
                return Err(e);
            }
        }
    }
    progress.finish();
    Ok(out)
}

/// The table files of a manifest as [`Want`]s (checked by the manifest's SHA-256).
fn table_wants(
    manifest: &Manifest,
    target: &HubTarget,
    tables: Option<&std::collections::BTreeSet<String>>,
    etag: impl Fn(&str, &str) -> Result<String>,
) -> Result<Vec<Want>> {
    let mut wants = Vec::new();
    for t in manifest.tables.iter().filter(|t| tables.is_none_or(|r| crate::sql::session::reads_table(r, &t.name))) {
        for rel in &t.files {
            if !safe_relative(rel) {
                return Err(Error::Refused(format!("{rel}: manifest path leaves the release folder; refused")));
            }
            let f = manifest
                .files
                .iter()
                .find(|f| &f.path == rel)
                .ok_or_else(|| Error::Refused(format!("{rel}: table file not listed in manifest.files")))?;
            let repo_path = join_repo_path(&target.path, rel);
            wants.push(Want {
                etag: etag(rel, &repo_path)?,
                path: repo_path,
                bytes: f.bytes,
                check: Check::Sha256(f.sha256.clone()),
            });
        }
    }
    Ok(wants)
}

fn record(out: &mut FetchedRelease, f: Fetched, want: &Want) -> Result<()> {
    match f {
        Fetched::Cached(_) => out.cached_files += 1,
        Fetched::Downloaded(_, n) => {
            out.downloaded_files += 1;
            out.downloaded_bytes += n;
        }
        Fetched::Bad { found_bytes, found_sha256, expected, expected_bytes } => {
            return Err(Error::Refused(format!(
                "{}: the Hub served bytes that do not match: expected {} bytes, {expected}; received {} bytes, sha256 {found_sha256}; nothing was kept",
                want.path,
                numbers::group_digits(expected_bytes),
                numbers::group_digits(found_bytes)
            )));
        }
    }
    Ok(())
}

fn cached_release(
    cache: &HubCache,
    target: &HubTarget,
    tables: Option<&std::collections::BTreeSet<String>>,
) -> Result<FetchedRelease> {
    let repo = &target.repo;
    let commit = if super::is_commit_id(&target.revision) {
        target.revision.to_lowercase()
    } else {
        cache.read_ref(repo, &target.revision).ok_or_else(|| {
            Error::Refused(format!(
                "{target}: offline (HF_HUB_OFFLINE) and the cache at {} has no ref `{}` for this repo; run once online first",
                cache.root().display(),
                target.revision
            ))
        })?
    };
    let dir = cache.snapshot(repo, &commit).join(&target.path);
    if !dir.join("manifest.json").exists() {
        return Err(Error::Refused(format!(
            "{target}: offline (HF_HUB_OFFLINE) and commit {} is not in the cache at {}",
            super::short(&commit),
            cache.root().display()
        )));
    }
    let manifest = Manifest::load(&dir)?;
    let wants = table_wants(&manifest, target, tables, |_, _| Ok(String::new()))?;
    let mut cached_files = 1;
    for w in &wants {
        match cached(cache, repo, &commit, w)? {
            Some(_) => cached_files += 1,
            None => {
                return Err(Error::Refused(format!(
                    "{}: not in the cache and offline mode (HF_HUB_OFFLINE) forbids downloading it",
                    w.path
                )));
            }
        }
    }
    Ok(FetchedRelease { dir, commit, downloaded_files: 0, downloaded_bytes: 0, cached_files })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_and_links() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = HubCache::new(tmp.path());
        let repo = RepoId::parse("acme/toy").unwrap();
        let c = "7d".repeat(20);
        cache.write_ref(&repo, "main", &c).unwrap();
        assert_eq!(std::fs::read_to_string(tmp.path().join("datasets--acme--toy/refs/main")).unwrap(), c);
        assert_eq!(cache.read_ref(&repo, "main").as_deref(), Some(c.as_str()));
        let blob = cache.blob(&repo, "abc");
        std::fs::create_dir_all(blob.parent().unwrap()).unwrap();
        std::fs::write(&blob, b"x").unwrap();
        let link = cache.link(&repo, &c, "data/sub/f.parquet", "abc").unwrap();
        assert_eq!(std::fs::read_link(&link).unwrap(), PathBuf::from("../../../../blobs/abc"));
        assert_eq!(std::fs::read(&link).unwrap(), b"x");
    }
}
