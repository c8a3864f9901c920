//! What the Hub holds, and whether it is exactly a release.
//!
//! In: a commit of a dataset repo (read through the paginated tree listing) and a manifest
//! (the local release's with `--against`, else the one published beside the files). Out: a
//! [`RemoteVerifyReport`] with one line per missing, extra or differing file.
//!
//! Files stored in LFS are checked by their SHA-256 (`lfs.oid`, which must equal the
//! manifest's) and size; files stored in git by their git blob SHA-1 (computed from the local
//! copy, or by downloading the file and hashing it when there is no local copy). With
//! `download`, every file is also downloaded (through the cache, see [`super::cache`]) and its
//! SHA-256 recomputed, so an object whose stored bytes differ from its listed hash is found.
//! `.gitattributes` and `.gitignore` at the repo root belong to the repo, not to a release, and
//! are never reported as extra.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::cache::{self, Check, Fetched, HubCache, Want};
use super::client::HubClient;
use super::{HubTarget, RepoId, join_repo_path};
use crate::core::error::{Error, Result};
use crate::core::numbers;
use crate::core::progress::{Progress, Unit};
use crate::stages::hash;
use crate::stages::release::Manifest;

/// One file of a remote tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFile {
    /// Size in bytes.
    pub size: u64,
    /// Git blob SHA-1 (for LFS files: of the pointer file).
    pub git_sha1: String,
    /// SHA-256 of the content, for files stored in LFS.
    pub lfs_sha256: Option<String>,
    /// True when the Hub lists a Xet hash.
    pub xet: bool,
}

impl RemoteFile {
    /// The cache blob name: the LFS SHA-256, else the git SHA-1.
    pub fn etag(&self) -> &str {
        self.lfs_sha256.as_deref().unwrap_or(&self.git_sha1)
    }
}

/// Path in the repo → file.
pub type RemoteTree = BTreeMap<String, RemoteFile>;

/// The files under `prefix` (all when empty) at `commit`.
pub async fn remote_tree(client: &HubClient, repo: &RepoId, commit: &str, prefix: &str) -> Result<RemoteTree> {
    let entries = client.tree(repo, commit, prefix).await?;
    Ok(entries
        .into_iter()
        .map(|e| {
            (
                e.path,
                RemoteFile {
                    size: e.size,
                    git_sha1: e.oid,
                    lfs_sha256: e.lfs.map(|l| l.oid.to_lowercase()),
                    xet: e.xet_hash.is_some(),
                },
            )
        })
        .collect())
}

/// Files of a repo that no release owns.
pub(crate) fn repo_housekeeping(path: &str) -> bool {
    matches!(path, ".gitattributes" | ".gitignore")
}

/// What a file of the release must be.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    /// Path inside the release.
    pub rel: String,
    /// Size in bytes.
    pub bytes: u64,
    /// SHA-256, lowercase hex.
    pub sha256: String,
    /// Git blob SHA-1 when known (a local copy exists).
    pub git_sha1: Option<String>,
    /// `parquet` for the tables' shards; other files have `None`.
    pub data_kind: Option<String>,
}

/// How one expected file compares with the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Match {
    /// Same content (by SHA-256 for LFS, git SHA-1 otherwise).
    Same,
    /// Missing on the Hub.
    Missing,
    /// Different content; the text says how.
    Differs(String),
    /// Stored in git (or Xet only) and no git SHA-1 is known locally: only its bytes can tell.
    NeedsContent,
}

/// Compares one expected file with the remote entry.
pub(crate) fn compare(e: &Expected, remote: Option<&RemoteFile>) -> Match {
    let Some(r) = remote else { return Match::Missing };
    match (&r.lfs_sha256, &e.git_sha1) {
        (Some(oid), _) => {
            if *oid != e.sha256 {
                Match::Differs(format!(
                    "sha256 mismatch: expected {} (manifest), the Hub has {oid}{}",
                    e.sha256,
                    size_note(e.bytes, r.size)
                ))
            } else if r.size != e.bytes {
                Match::Differs(format!(
                    "size mismatch: expected {} bytes, the Hub lists {}",
                    numbers::group_digits(e.bytes),
                    numbers::group_digits(r.size)
                ))
            } else {
                Match::Same
            }
        }
        (None, Some(sha1)) => {
            if *sha1 == r.git_sha1 && r.size == e.bytes {
                Match::Same
            } else {
                Match::Differs(format!(
                    "git blob sha1 mismatch: expected {sha1}, the Hub has {}{}",
                    r.git_sha1,
                    size_note(e.bytes, r.size)
                ))
            }
        }
        (None, None) => {
            if r.size != e.bytes {
                Match::Differs(format!(
                    "size mismatch: expected {} bytes, the Hub lists {}",
                    numbers::group_digits(e.bytes),
                    numbers::group_digits(r.size)
                ))
            } else {
                Match::NeedsContent
            }
        }
    }
}

fn size_note(want: u64, got: u64) -> String {
    if want == got {
        " (the size matches, the content does not)".into()
    } else {
        format!(" (size {} bytes, expected {})", numbers::group_digits(got), numbers::group_digits(want))
    }
}

/// What `verify hf://…` is asked to do.
#[derive(Debug, Clone)]
pub struct RemoteVerifyOptions {
    /// The published release.
    pub target: HubTarget,
    /// A local release to compare with, instead of the manifest published beside the files.
    pub against: Option<PathBuf>,
    /// Also download every file and hash its bytes.
    pub download: bool,
}

/// Outcome of a remote verification.
#[derive(Debug, Clone, Default)]
pub struct RemoteVerifyReport {
    /// The commit checked.
    pub commit: String,
    /// One line per problem (`path: what is wrong`).
    pub problems: Vec<String>,
    /// Files whose content matched, with how (`sha256 (lfs.oid)`, `git-sha1`, `sha256 of the bytes`).
    pub verified: Vec<(String, String)>,
    /// Parquet shards (the tables' data files) in the manifest.
    pub data_files: usize,
    /// Parquet shards that match.
    pub data_files_matching: usize,
    /// Files downloaded (with `download`, or to hash files stored in git).
    pub downloaded_files: usize,
}

impl RemoteVerifyReport {
    /// True when nothing is wrong.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// The expected files of a local release folder: every manifest file plus `manifest.json`
/// and `SHA256SUMS`, with both digests computed from the local bytes.
pub(crate) fn local_expected(dir: &std::path::Path) -> Result<(Manifest, Vec<Expected>)> {
    if !dir.join("manifest.json").is_file() {
        return Err(Error::Refused(format!(
            "{}: not a release (no manifest.json); --against takes a release folder such as \
             releases/<name>/<version>",
            dir.display()
        )));
    }
    let manifest = Manifest::load(dir)?;
    let mut rels: Vec<(String, Option<String>)> =
        manifest.files.iter().map(|f| (f.path.clone(), data_kind(&f.kind))).collect();
    rels.push(("manifest.json".into(), None));
    rels.push(("SHA256SUMS".into(), None));
    let paths: Vec<PathBuf> = rels.iter().map(|(r, _)| dir.join(r)).collect();
    let digests = hash::sha256_files(&paths)?;
    let mut out = Vec::new();
    for (((rel, kind), p), d) in rels.into_iter().zip(&paths).zip(digests) {
        if let Some(f) = manifest.files.iter().find(|f| f.path == rel)
            && f.sha256 != d.sha256
        {
            return Err(Error::Refused(format!(
                "{}: the local copy does not match its manifest (sha256 {} expected, {} found); run `runpack verify {}`",
                rel,
                f.sha256,
                d.sha256,
                dir.display()
            )));
        }
        out.push(Expected {
            rel,
            bytes: d.bytes,
            sha256: d.sha256,
            git_sha1: Some(hash::git_blob_sha1(p)?),
            data_kind: kind,
        });
    }
    Ok((manifest, out))
}

fn data_kind(kind: &str) -> Option<String> {
    (kind == "parquet").then(|| kind.to_string())
}

/// Checks that the Hub holds exactly the release: see the module docs.
///
/// Errors: only when the Hub cannot be read (or the published manifest is missing or
/// unreadable); every difference is a line of the report.
pub async fn verify(
    client: &HubClient,
    cache: &HubCache,
    opts: &RemoteVerifyOptions,
    progress: &dyn Progress,
) -> Result<RemoteVerifyReport> {
    let target = &opts.target;
    let repo = &target.repo;
    // the local release is read first: a mistake there needs no trip to the Hub
    let local = match &opts.against {
        Some(dir) => Some(local_expected(dir)?.1),
        None => None,
    };
    let commit = client.revision(repo, &target.revision).await?;
    let tree = remote_tree(client, repo, &commit, &target.path).await?;
    let mut rep = RemoteVerifyReport { commit: commit.clone(), ..Default::default() };
    let expected = match local {
        Some(expected) => expected,
        None => published_expected(client, cache, target, &commit, &tree, &mut rep, progress).await?,
    };
    rep.data_files = expected.iter().filter(|e| e.data_kind.is_some()).count();
    let total: u64 = if opts.download { expected.iter().map(|e| e.bytes).sum() } else { 0 };
    if opts.download {
        progress.start("checking files", Unit::Bytes, Some(total));
    } else {
        progress.start("checking files", Unit::None, None);
    }
    for e in &expected {
        let path = join_repo_path(&target.path, &e.rel);
        let remote = tree.get(&path);
        let mut verdict = compare(e, remote);
        let mut how = match remote {
            Some(r) if r.lfs_sha256.is_some() => "sha256 (lfs.oid)",
            _ => "git-sha1",
        };
        if (opts.download || verdict == Match::NeedsContent)
            && let Some(r) = remote
        {
            let want = Want {
                path: path.clone(),
                etag: r.etag().to_string(),
                bytes: e.bytes,
                check: Check::Sha256(e.sha256.clone()),
            };
            match cache::fetch(client, cache, repo, &commit, &want, !opts.download, progress).await? {
                Fetched::Cached(_) => {
                    if verdict == Match::NeedsContent || verdict == Match::Same {
                        verdict = Match::Same;
                        how = "sha256 of the bytes (cached copy, hashed)";
                    }
                }
                Fetched::Downloaded(..) => {
                    rep.downloaded_files += 1;
                    if verdict == Match::NeedsContent || verdict == Match::Same {
                        verdict = Match::Same;
                        how = "sha256 of the downloaded bytes";
                    }
                }
                Fetched::Bad { found_bytes, found_sha256, .. } => {
                    rep.downloaded_files += 1;
                    verdict = Match::Differs(format!(
                        "the downloaded bytes do not match: sha256 expected {} (manifest), found {found_sha256}{}; the listing's size and hash were not enough to see it",
                        e.sha256,
                        size_note(e.bytes, found_bytes)
                    ));
                }
            }
        }
        match verdict {
            Match::Same => {
                rep.verified.push((e.rel.clone(), how.to_string()));
                if e.data_kind.is_some() {
                    rep.data_files_matching += 1;
                }
            }
            Match::Missing => rep.problems.push(format!(
                "{path}: missing on the Hub (manifest lists {} bytes, sha256 {})",
                numbers::group_digits(e.bytes),
                e.sha256
            )),
            Match::Differs(why) => rep.problems.push(format!("{path}: {why}")),
            Match::NeedsContent => unreachable!("resolved by downloading"),
        }
    }
    progress.finish();
    let wanted: std::collections::BTreeSet<String> =
        expected.iter().map(|e| join_repo_path(&target.path, &e.rel)).collect();
    for (path, r) in &tree {
        if !wanted.contains(path) && !repo_housekeeping(path) {
            rep.problems.push(format!(
                "{path}: on the Hub but not in the manifest ({} bytes{})",
                numbers::group_digits(r.size),
                r.lfs_sha256.as_ref().map(|s| format!(", sha256 {s}")).unwrap_or_default()
            ));
        }
    }
    Ok(rep)
}

/// The expected files from the manifest published at `commit`, checked against its
/// `SHA256SUMS`.
async fn published_expected(
    client: &HubClient,
    cache: &HubCache,
    target: &HubTarget,
    commit: &str,
    tree: &RemoteTree,
    rep: &mut RemoteVerifyReport,
    progress: &dyn Progress,
) -> Result<Vec<Expected>> {
    let repo = &target.repo;
    let get = async |rel: &str| -> Result<(PathBuf, u64, String)> {
        let path = join_repo_path(&target.path, rel);
        let r = tree.get(&path).ok_or_else(|| {
            Error::Refused(format!(
                "{target}: no {rel} at commit {}; pass --against <release-dir> to compare with a local release",
                super::short(commit)
            ))
        })?;
        let want = Want {
            path: path.clone(),
            etag: r.etag().to_string(),
            bytes: r.size,
            check: match &r.lfs_sha256 {
                Some(s) => Check::Sha256(s.clone()),
                None => Check::GitSha1(r.git_sha1.clone()),
            },
        };
        match cache::fetch(client, cache, repo, commit, &want, true, progress).await? {
            Fetched::Cached(p) | Fetched::Downloaded(p, _) => {
                let d = hash::sha256_file(&p)?;
                Ok((p, d.bytes, d.sha256))
            }
            Fetched::Bad { found_sha256, .. } => Err(Error::Refused(format!(
                "{path}: the Hub served bytes that do not match its own listing (sha256 {found_sha256})"
            ))),
        }
    };
    let (mpath, mbytes, msha) = get("manifest.json").await?;
    let manifest = Manifest::load(mpath.parent().expect("folder"))?;
    let (spath, sbytes, ssha) = get("SHA256SUMS").await?;
    let sums = std::fs::read_to_string(&spath).map_err(|e| Error::io(&spath, e))?;
    let listed: BTreeMap<&str, &str> = sums.lines().filter_map(|l| l.split_once("  ").map(|(s, p)| (p, s))).collect();
    match listed.get("manifest.json") {
        Some(s) if *s == msha => {}
        Some(s) => rep
            .problems
            .push(format!("{}: sha256 {msha}, but SHA256SUMS says {s}", join_repo_path(&target.path, "manifest.json"))),
        None => rep.problems.push(format!("{}: no line for manifest.json", join_repo_path(&target.path, "SHA256SUMS"))),
    }
    let mut out = Vec::new();
    for f in &manifest.files {
        if listed.get(f.path.as_str()) != Some(&f.sha256.as_str()) {
            rep.problems.push(format!(
                "{}: SHA256SUMS and manifest.json disagree about {}",
                join_repo_path(&target.path, "SHA256SUMS"),
                f.path
            ));
        }
        out.push(Expected {
            rel: f.path.clone(),
            bytes: f.bytes,
            sha256: f.sha256.clone(),
            git_sha1: None,
            data_kind: data_kind(&f.kind),
        });
    }
    let sha1 = |p: &PathBuf| hash::git_blob_sha1(p);
    out.push(Expected {
        rel: "manifest.json".into(),
        bytes: mbytes,
        sha256: msha,
        git_sha1: Some(sha1(&mpath)?),
        data_kind: None,
    });
    out.push(Expected {
        rel: "SHA256SUMS".into(),
        bytes: sbytes,
        sha256: ssha,
        git_sha1: Some(sha1(&spath)?),
        data_kind: None,
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(sha1: Option<&str>) -> Expected {
        Expected { rel: "a".into(), bytes: 3, sha256: "s".into(), git_sha1: sha1.map(str::to_string), data_kind: None }
    }

    #[test]
    fn comparisons() {
        let lfs = |oid: &str, size| RemoteFile { size, git_sha1: "p".into(), lfs_sha256: Some(oid.into()), xet: false };
        let git = |oid: &str, size| RemoteFile { size, git_sha1: oid.into(), lfs_sha256: None, xet: false };
        assert_eq!(compare(&exp(None), None), Match::Missing);
        assert_eq!(compare(&exp(None), Some(&lfs("s", 3))), Match::Same);
        assert!(matches!(compare(&exp(None), Some(&lfs("t", 3))), Match::Differs(m) if m.contains("size matches")));
        assert!(matches!(compare(&exp(None), Some(&lfs("s", 4))), Match::Differs(_)));
        assert_eq!(compare(&exp(Some("g")), Some(&git("g", 3))), Match::Same);
        assert!(matches!(compare(&exp(Some("g")), Some(&git("h", 3))), Match::Differs(_)));
        assert_eq!(compare(&exp(None), Some(&git("h", 3))), Match::NeedsContent);
    }
}
