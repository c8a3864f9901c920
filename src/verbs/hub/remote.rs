//! What the Hub holds, and whether it is what a reader of the release should get.
//!
//! In: a commit of a dataset repo (read through the paginated tree listing) and a manifest
//! (the local release's with `--against`, else the one published beside the files). Out: a
//! [`RemoteVerifyReport`] with one line per problem, and each verified file with the digest it
//! was checked by ([`FileCheck`]).
//!
//! ```text
//! LFS file       sha256 = lfs.oid (= the manifest's), size       bytes with --download/--data
//! regular file   bytes downloaded: git blob sha1 = the tree's oid, sha256 = the manifest's
//!                (with --against: the local copy's git blob sha1 = the tree's oid)
//! reader checks  the card and manifest against the data, as a local verify makes them, on a
//!                folder of the Hub's files: Parquet files not downloaded stand in by their
//!                footers (two range requests each); a release in a folder needs its configs
//!                in the root card
//! ```
//!
//! A root card merged with other releases' configs ([`crate::stages::card::merge`]) is checked by its
//! configs of this release. Files under a folder with its own `manifest.json` belong to the
//! release there. `.gitattributes` and `.gitignore` at the repo root belong to the repo, not to
//! a release, and are never reported as extra.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use futures::StreamExt;

use super::cache::{self, Check, Fetched, HubCache, Want};
use super::client::HubClient;
use super::{HubTarget, RepoId, join_repo_path};
use crate::core::error::{Error, Result};
use crate::core::numbers;
use crate::core::progress::{Progress, Unit};
use crate::stages::hash;
use crate::stages::release::Manifest;
use crate::verbs::verify::{Problem, ProblemKind};

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
    Differs(ProblemKind, String),
    /// Stored in git (or Xet only) and no git SHA-1 is known locally: only its bytes can tell.
    NeedsContent,
}

/// The kind of a digest mismatch: of the size too when `expected` and `found` bytes differ.
fn by_size(expected: u64, found: u64) -> ProblemKind {
    if expected == found { ProblemKind::Sha256Mismatch } else { ProblemKind::SizeMismatch }
}

/// A file whose listed size is not the manifest's (its digest matching, or none listed).
fn size_differs(expected: u64, listed: u64) -> Match {
    Match::Differs(
        ProblemKind::SizeMismatch,
        format!(
            "size mismatch: expected {} bytes, the Hub lists {}",
            numbers::group_digits(expected),
            numbers::group_digits(listed)
        ),
    )
}

/// Compares one expected file with the remote entry.
pub(crate) fn compare(e: &Expected, remote: Option<&RemoteFile>) -> Match {
    let Some(r) = remote else { return Match::Missing };
    match (&r.lfs_sha256, &e.git_sha1) {
        (Some(oid), _) => {
            if *oid != e.sha256 {
                Match::Differs(
                    by_size(e.bytes, r.size),
                    format!(
                        "sha256 mismatch: expected {} (manifest), the Hub has {oid}{}",
                        e.sha256,
                        size_note(e.bytes, r.size)
                    ),
                )
            } else if r.size != e.bytes {
                size_differs(e.bytes, r.size)
            } else {
                Match::Same
            }
        }
        (None, Some(sha1)) => {
            if *sha1 == r.git_sha1 && r.size == e.bytes {
                Match::Same
            } else {
                Match::Differs(
                    by_size(e.bytes, r.size),
                    format!(
                        "git blob sha1 mismatch: expected {sha1}, the Hub has {}{}",
                        r.git_sha1,
                        size_note(e.bytes, r.size)
                    ),
                )
            }
        }
        (None, None) => {
            if r.size != e.bytes {
                size_differs(e.bytes, r.size)
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
    /// Also download every file and hash its bytes (cached copies are fetched again).
    pub download: bool,
    /// Also read every row (`verify --data`): every file is downloaded (cached copies that
    /// match are used).
    pub data: bool,
}

/// How one file of the Hub was found to hold what the manifest says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCheck {
    /// Path in the repo.
    pub path: String,
    /// `lfs` or `regular` (stored in git).
    pub storage: &'static str,
    /// The digest compared with the Hub's listing: `sha256` (an LFS file's `lfs.oid`, equal to
    /// the manifest's) or `git-sha1` (a regular file's blob id, the tree's `oid`).
    pub algorithm: &'static str,
    /// That digest.
    pub digest: String,
    /// True when the bytes were downloaded (or read from the cache) and hashed: with SHA-256
    /// against the manifest, and for a regular file with git blob SHA-1 against the tree.
    pub hashed: bool,
}

/// Outcome of a remote verification.
#[derive(Debug, Clone, Default)]
pub struct RemoteVerifyReport {
    /// The commit checked.
    pub commit: String,
    /// What is wrong, in the order found; each prints as one line (`path: what is wrong`).
    pub problems: Vec<Problem>,
    /// Files whose content matched, and how.
    pub verified: Vec<FileCheck>,
    /// What was found that is no problem (a card merged with other releases' configs).
    pub notes: Vec<String>,
    /// Parquet shards (the tables' data files) in the manifest.
    pub data_files: usize,
    /// Parquet shards that match.
    pub data_files_matching: usize,
    /// Files downloaded (with `download`, or to hash files stored in git).
    pub downloaded_files: usize,
    /// Whether the reader's checks ran (the card and manifest against the data, as a local
    /// `verify` makes them): not with `against`.
    pub reader_checks: bool,
}

impl RemoteVerifyReport {
    /// True when nothing is wrong.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// Adds a problem of `kind` said by `message`.
    fn push(&mut self, kind: ProblemKind, message: String) {
        self.problems.push(Problem::new(kind, message));
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

/// The want of a file as the Hub lists it: an LFS file by `sha256` (the manifest's, or its
/// `lfs.oid`; named by its `lfs.oid`), a regular file by the tree's git blob SHA-1.
fn listed_want(path: &str, r: &RemoteFile, sha256: &str) -> Want {
    Want {
        path: path.to_string(),
        etag: r.etag().to_string(),
        bytes: r.size,
        check: match &r.lfs_sha256 {
            Some(_) => Check::Sha256(sha256.to_string()),
            None => Check::GitSha1(r.git_sha1.clone()),
        },
    }
}

/// What [`fetch_and_compare`] found of one file.
struct Fetch {
    verdict: Match,
    /// Whether its bytes were downloaded (not found in the cache).
    downloaded: bool,
    /// The verified copy in the cache, when its bytes matched what the listing says.
    copy: Option<PathBuf>,
}

/// Fetches a listed file's bytes (from the cache when it holds them and `download` is not
/// asked) and compares them with the manifest's SHA-256 and size, refining `verdict`.
#[allow(clippy::too_many_arguments)]
async fn fetch_and_compare(
    client: &HubClient,
    cache: &HubCache,
    (repo, commit): (&RepoId, &str),
    (path, r): (&str, &RemoteFile),
    e: &Expected,
    mut verdict: Match,
    download: bool,
    progress: &dyn Progress,
) -> Result<Fetch> {
    let want = listed_want(path, r, &e.sha256);
    let reuse = !download;
    let fetched = cache::fetch(client, cache, repo, commit, &want, reuse, progress).await?;
    let downloaded = matches!(fetched, Fetched::Downloaded(..) | Fetched::Bad { .. });
    let mut copy = None;
    match fetched {
        Fetched::Cached(p) | Fetched::Downloaded(p, _) => {
            // an LFS file was checked by the manifest's SHA-256; a regular one by the
            // tree's git blob SHA-1, and now by the manifest's SHA-256
            if r.lfs_sha256.is_none() {
                let d = hash::sha256_file(&p)?;
                if d.sha256 == e.sha256 && d.bytes == e.bytes {
                    if matches!(verdict, Match::NeedsContent) {
                        verdict = Match::Same;
                    }
                } else if !matches!(verdict, Match::Differs(..)) {
                    verdict = Match::Differs(
                        by_size(e.bytes, d.bytes),
                        format!(
                            "sha256 mismatch: expected {} (manifest), the Hub serves {}{}",
                            e.sha256,
                            d.sha256,
                            size_note(e.bytes, d.bytes)
                        ),
                    );
                }
            } else if matches!(verdict, Match::NeedsContent) {
                verdict = Match::Same;
            }
            copy = Some(p);
        }
        Fetched::Bad { found_bytes, found_sha256, .. } => {
            verdict = Match::Differs(
                by_size(e.bytes, found_bytes),
                match &r.lfs_sha256 {
                    Some(_) => format!(
                        "the downloaded bytes do not match: sha256 expected {} (manifest), found {found_sha256}{}; the listing's size and hash were not enough to see it",
                        e.sha256,
                        size_note(e.bytes, found_bytes)
                    ),
                    None => format!(
                        "the tree lists git blob sha1 {} (oid) for this regular file, and the bytes the Hub serves \
                     have another ({} bytes, sha256 {found_sha256}): the listing and the content disagree",
                        r.git_sha1,
                        numbers::group_digits(found_bytes)
                    ),
                },
            );
        }
    }
    Ok(Fetch { verdict, downloaded, copy })
}

/// Records the verdict on expected file `e` (at `path` in the repo; `remote` its listing):
/// verified (with `hashed` when its bytes were hashed), or a problem, its release path then in
/// `named`.
fn record(
    rep: &mut RemoteVerifyReport,
    named: &mut BTreeSet<String>,
    path: &str,
    e: &Expected,
    remote: Option<&RemoteFile>,
    verdict: Match,
    hashed: bool,
) {
    match verdict {
        Match::Same => {
            let r = remote.expect("same");
            let (storage, algorithm, digest) = match &r.lfs_sha256 {
                Some(oid) => ("lfs", "sha256", oid.clone()),
                None => ("regular", "git-sha1", r.git_sha1.clone()),
            };
            rep.verified.push(FileCheck { path: path.to_string(), storage, algorithm, digest, hashed });
            if e.data_kind.is_some() {
                rep.data_files_matching += 1;
            }
        }
        Match::Missing => {
            named.insert(e.rel.clone());
            rep.push(
                ProblemKind::Missing,
                format!(
                    "{path}: missing on the Hub (manifest lists {} bytes, sha256 {})",
                    numbers::group_digits(e.bytes),
                    e.sha256
                ),
            )
        }
        Match::Differs(kind, why) => {
            named.insert(e.rel.clone());
            rep.push(kind, format!("{path}: {why}"));
        }
        Match::NeedsContent => unreachable!("resolved by downloading"),
    }
}

/// Files on the Hub under the release's folder that its manifest does not list are problems;
/// files of another release in a folder below (its own `manifest.json`) are a note.
fn unlisted_files(target: &HubTarget, tree: &RemoteTree, expected: &[Expected], rep: &mut RemoteVerifyReport) {
    let repo = &target.repo;
    let wanted: BTreeSet<String> = expected.iter().map(|e| join_repo_path(&target.path, &e.rel)).collect();
    // a folder below with its own manifest.json holds another release, verified on its own
    let nested = |path: &str| -> Option<String> {
        let mut folder = path;
        while let Some((up, _)) = folder.rsplit_once('/') {
            folder = up;
            if folder == target.path || !folder.starts_with(&target.path) {
                return None;
            }
            if tree.contains_key(&format!("{folder}/manifest.json")) {
                return Some(folder.to_string());
            }
        }
        None
    };
    let mut others: BTreeMap<String, usize> = BTreeMap::new();
    for (path, r) in tree {
        if wanted.contains(path) || repo_housekeeping(path) {
            continue;
        }
        if let Some(folder) = nested(path) {
            *others.entry(folder).or_default() += 1;
            continue;
        }
        {
            rep.push(
                ProblemKind::Unexpected,
                format!(
                    "{path}: on the Hub but not in the manifest ({} bytes{})",
                    numbers::group_digits(r.size),
                    r.lfs_sha256.as_ref().map(|s| format!(", sha256 {s}")).unwrap_or_default()
                ),
            );
        }
    }
    for (folder, n) in others {
        let there = HubTarget { repo: repo.clone(), revision: target.revision.clone(), path: folder.clone() };
        rep.notes.push(format!(
            "{n} file(s) under {folder}/ belong to the release published there (its own manifest.json): verify it \
             with `runpack verify {there}`"
        ));
    }
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
    let fetch_all = opts.download || opts.data;
    // the local release is read first: a mistake there needs no trip to the Hub
    let local = match &opts.against {
        Some(dir) => Some(local_expected(dir)?.1),
        None => None,
    };
    let commit = client.revision(repo, &target.revision).await?;
    let tree = remote_tree(client, repo, &commit, &target.path).await?;
    let mut rep = RemoteVerifyReport { commit: commit.clone(), ..Default::default() };
    // release path → the verified copy in the cache (or, for a merged card, the view of it
    // written to `scratch`)
    let mut copies: BTreeMap<String, PathBuf> = BTreeMap::new();
    let scratch = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let mut views: BTreeSet<String> = BTreeSet::new();
    let (expected, manifest) = match local {
        Some(expected) => (expected, None),
        None => {
            let (expected, manifest) =
                published_expected(client, cache, target, &commit, &tree, &mut copies, progress).await?;
            (expected, Some(manifest))
        }
    };
    let malformed: BTreeSet<String> = manifest
        .iter()
        .flat_map(|m| crate::verbs::verify::malformed_digests(m).into_iter().map(|(i, _)| m.files[i].path.clone()))
        .collect();
    rep.data_files = expected.iter().filter(|e| e.data_kind.is_some()).count();
    let total: u64 = if fetch_all { expected.iter().map(|e| e.bytes).sum() } else { 0 };
    if fetch_all {
        progress.start("checking files", Unit::Bytes, Some(total));
    } else {
        progress.start("checking files", Unit::None, None);
    }
    // release paths the listing or the bytes found wrong
    let mut named: BTreeSet<String> = BTreeSet::new();
    for e in &expected {
        let path = join_repo_path(&target.path, &e.rel);
        let remote = tree.get(&path);
        if malformed.contains(&e.rel) {
            // the manifest says nothing it can be checked against (the reader's checks say so)
            if manifest.is_none() || remote.is_none() {
                named.insert(e.rel.clone());
            }
            continue;
        }
        let mut verdict = compare(e, remote);
        let mut hashed = false;
        if let Some(r) = remote
            && (fetch_all || verdict == Match::NeedsContent || (r.lfs_sha256.is_none() && verdict != Match::Same))
        {
            let fetched =
                fetch_and_compare(client, cache, (repo, &commit), (&path, r), e, verdict, opts.download, progress)
                    .await?;
            if fetched.downloaded {
                rep.downloaded_files += 1;
            }
            verdict = fetched.verdict;
            if let Some(p) = fetched.copy {
                hashed = true;
                copies.insert(e.rel.clone(), p);
            }
        }
        // a root card merged with other releases' configs is this release's card and more
        if verdict != Match::Same
            && e.rel == "README.md"
            && target.path.is_empty()
            && let (Some(m), Some(p)) = (&manifest, copies.get("README.md"))
            && let Some(view) = merged_card_view(m, p, scratch.path())?
        {
            rep.notes.push(
                "README.md: the repo's card also holds other releases' configs (merged by publish); this release's \
                 configs in it are checked against its data"
                    .to_string(),
            );
            let r = remote.expect("fetched");
            rep.verified.push(FileCheck {
                path: path.clone(),
                storage: "regular",
                algorithm: "git-sha1",
                digest: r.git_sha1.clone(),
                hashed: true,
            });
            copies.insert("README.md".into(), view);
            views.insert("README.md".into());
            continue;
        }
        record(&mut rep, &mut named, &path, e, remote, verdict, hashed);
    }
    progress.finish();
    unlisted_files(target, &tree, &expected, &mut rep);
    if let Some(m) = &manifest {
        rep.reader_checks = true;
        let found = Found { copies: &copies, views: &views, named: &named };
        reader_checks(client, target, &commit, &tree, m, &found, scratch.path(), opts.data, &mut rep).await?;
    }
    Ok(rep)
}

/// What the listing checks found, for the reader's checks.
#[derive(Clone, Copy)]
struct Found<'a> {
    /// Release path → its verified copy.
    copies: &'a BTreeMap<String, PathBuf>,
    /// The copies that are views written for the check (a merged card cut down).
    views: &'a BTreeSet<String>,
    /// Release paths already named by a problem.
    named: &'a BTreeSet<String>,
}

/// The card at `path`, cut down to the configs of `m`'s tables, in a file beside it, when it is
/// a card merged with other configs; `None` otherwise.
fn merged_card_view(m: &Manifest, path: &std::path::Path, scratch: &std::path::Path) -> Result<Option<PathBuf>> {
    let Ok(text) = std::fs::read_to_string(path) else { return Ok(None) };
    let Ok(card) = crate::stages::card::merge::Card::parse(&text, "README.md") else { return Ok(None) };
    let tables: BTreeMap<String, String> = m.tables.iter().map(|t| (t.name.clone(), t.name.clone())).collect();
    if card.config_names().iter().all(|n| tables.contains_key(n)) {
        return Ok(None);
    }
    let Some(view) = crate::stages::card::merge::restrict(&text, &tables, "")? else { return Ok(None) };
    let out = scratch.join("README-view.md");
    std::fs::write(&out, view).map_err(|e| Error::io(&out, e))?;
    Ok(Some(out))
}

/// The checks a local `verify` makes of the card and the manifest against the data, run on
/// the Hub's files: a folder holds the downloaded (or cached) files, and for each LFS file not
/// downloaded its footer alone (read with two range requests), since the listing checked its
/// bytes. For a release in a folder, the root card's configs of this release are checked too.
#[allow(clippy::too_many_arguments)]
async fn reader_checks(
    client: &HubClient,
    target: &HubTarget,
    commit: &str,
    tree: &RemoteTree,
    m: &Manifest,
    found: &Found<'_>,
    scratch: &std::path::Path,
    data: bool,
    rep: &mut RemoteVerifyReport,
) -> Result<()> {
    let Found { copies, views, named } = *found;
    let dir = &scratch.join("release");
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut footers_only = BTreeSet::new();
    let mut stubs: Vec<(String, u64, PathBuf)> = Vec::new();
    let rels = m.files.iter().map(|f| f.path.as_str()).chain(["manifest.json", "SHA256SUMS"]);
    for rel in rels {
        if !crate::stages::release::safe_relative(rel) {
            continue;
        }
        let dest = dir.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        // a file found wrong is named already; an LFS file stands in by its footer, so that the
        // card's other checks still see it
        let copy = if named.contains(rel) { None } else { copies.get(rel) };
        match copy {
            Some(p) if views.contains(rel) => {
                // the merged card cut down to this release's configs: its bytes were checked
                // by the listing
                std::fs::rename(p, &dest).map_err(|e| Error::io(&dest, e))?;
                footers_only.insert(rel.to_string());
            }
            Some(p) => {
                let real = std::fs::canonicalize(p).map_err(|e| Error::io(p, e))?;
                link(&real, &dest)?;
            }
            None => {
                let Some(r) = tree.get(&join_repo_path(&target.path, rel)) else { continue };
                if r.lfs_sha256.is_none() {
                    continue;
                }
                stubs.push((join_repo_path(&target.path, rel), r.size, dest));
                footers_only.insert(rel.to_string());
            }
        }
    }
    // the footers are read FOOTERS_AT_ONCE at a time
    let read: Vec<Result<()>> = futures::stream::iter(stubs.iter())
        .map(|(path, size, dest)| footer_stub(client, &target.repo, commit, path, *size, dest))
        .buffer_unordered(FOOTERS_AT_ONCE)
        .collect()
        .await;
    read.into_iter().collect::<Result<Vec<()>>>()?;
    let local = crate::verbs::verify::run_published(dir, data, &footers_only)?;
    let files: BTreeSet<&str> =
        m.files.iter().map(|f| f.path.as_str()).chain(["manifest.json", "SHA256SUMS", "README.md"]).collect();
    for Problem { kind, message: p, .. } in local.problems {
        let head = p.split(':').next().unwrap_or("");
        if named.contains(head) || named.iter().any(|n| p.contains(&format!("`{n}`"))) {
            // said already, from the listing
            continue;
        }
        let line = if files.contains(head) && !target.path.is_empty() { format!("{}/{p}", target.path) } else { p };
        if !rep.problems.iter().any(|q| q.message == line) {
            rep.push(kind, line);
        }
    }
    // a release in a folder: the root card must describe it, or `datasets` cannot load it
    if !target.path.is_empty() {
        let tables: BTreeMap<String, String> = m
            .tables
            .iter()
            .filter(|t| t.rows > 0)
            .map(|t| (crate::stages::card::merge::config_name(&target.path, &t.name), t.name.clone()))
            .collect();
        if tables.is_empty() {
            return Ok(());
        }
        let names = tables.keys().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
        let card =
            match client.read_small(&target.repo, commit, "README.md", 16 << 20).await {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(Error::HubStatus { status: 404, .. }) => {
                    rep.push(ProblemKind::Card, format!(
                    "README.md at the repo root: missing, so `datasets` finds no config of this release (expected \
                     {names}); publish the release again to write them in"
                ));
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
        match crate::stages::card::merge::restrict(&card, &tables, &target.path) {
            Ok(Some(view)) => {
                for p in crate::verbs::verify::card_text_problems(dir, m, &view) {
                    rep.push(ProblemKind::Card, format!("README.md at the repo root, this release's configs: {p}"));
                }
            }
            Ok(None) => rep.push(ProblemKind::Card, format!(
                "README.md at the repo root: no config of this release (expected {names}), so `datasets` cannot load \
                 it by name; publish the release again to write them in"
            )),
            Err(e) => rep.push(ProblemKind::Card, format!("README.md at the repo root: {e}")),
        }
    }
    Ok(())
}

#[cfg(unix)]
fn link(target: &std::path::Path, at: &std::path::Path) -> Result<()> {
    std::os::unix::fs::symlink(target, at).map_err(|e| Error::io(at, e))
}

#[cfg(not(unix))]
fn link(target: &std::path::Path, at: &std::path::Path) -> Result<()> {
    std::fs::copy(target, at).map(|_| ()).map_err(|e| Error::io(at, e))
}

/// Parquet footers read at once (two range requests each).
const FOOTERS_AT_ONCE: usize = 8;

/// Largest Parquet footer read for the reader's checks (64 MiB).
const FOOTER_MAX: u64 = 64 << 20;

/// Writes at `dest` a file of `size` bytes holding only the last bytes of the Parquet file
/// `path` (its footer: metadata, its length, `PAR1`), read with range requests; the rest is a
/// hole. A file whose end is no Parquet footer gets its last 8 bytes alone (the footer read
/// then says what is wrong).
async fn footer_stub(
    client: &HubClient,
    repo: &RepoId,
    commit: &str,
    path: &str,
    size: u64,
    dest: &std::path::Path,
) -> Result<()> {
    use std::io::{Seek, Write};
    let tail = |from: u64| async move {
        let resp = client.download(repo, commit, path, Some(from)).await?;
        let partial = resp.status().as_u16() == 206;
        let bytes = resp.bytes().await.map_err(|e| Error::hub_caused(format!("read the end of {path}: {e}"), e))?;
        // a server that ignores the range sends the whole file
        let skip = if partial { 0 } else { (from as usize).min(bytes.len()) };
        Ok::<Vec<u8>, Error>(bytes[skip..].to_vec())
    };
    let mut f = std::fs::File::create(dest).map_err(|e| Error::io(dest, e))?;
    f.set_len(size).map_err(|e| Error::io(dest, e))?;
    if size < 12 {
        return Ok(());
    }
    let end = tail(size - 8).await?;
    let mut start = size - 8;
    let mut bytes = end.clone();
    if end.len() == 8 && &end[4..] == b"PAR1" {
        let len = u64::from(u32::from_le_bytes([end[0], end[1], end[2], end[3]]));
        if len + 8 <= size - 4 && len <= FOOTER_MAX {
            start = size - 8 - len;
            bytes = tail(start).await?;
        }
    }
    f.seek(std::io::SeekFrom::Start(start)).map_err(|e| Error::io(dest, e))?;
    f.write_all(&bytes[..bytes.len().min((size - start) as usize)]).map_err(|e| Error::io(dest, e))?;
    Ok(())
}

/// The expected files from the manifest published at `commit` (`copies` gets the cached
/// manifest and `SHA256SUMS`), and the manifest.
async fn published_expected(
    client: &HubClient,
    cache: &HubCache,
    target: &HubTarget,
    commit: &str,
    tree: &RemoteTree,
    copies: &mut BTreeMap<String, PathBuf>,
    progress: &dyn Progress,
) -> Result<(Vec<Expected>, Manifest)> {
    let repo = &target.repo;
    let get = async |rel: &str| -> Result<(PathBuf, u64, String)> {
        let path = join_repo_path(&target.path, rel);
        let r = tree.get(&path).ok_or_else(|| {
            Error::Refused(format!(
                "{target}: no {rel} at commit {}; pass --against <release-dir> to compare with a local release",
                super::short(commit)
            ))
        })?;
        let want = listed_want(&path, r, r.lfs_sha256.as_deref().unwrap_or_default());
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
    let mut out = Vec::new();
    for f in &manifest.files {
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
    copies.insert("manifest.json".into(), mpath);
    copies.insert("SHA256SUMS".into(), spath);
    Ok((out, manifest))
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
        assert!(matches!(compare(&exp(None), Some(&lfs("t", 3))), Match::Differs(_, m) if m.contains("size matches")));
        assert!(matches!(compare(&exp(None), Some(&lfs("s", 4))), Match::Differs(..)));
        assert_eq!(compare(&exp(Some("g")), Some(&git("g", 3))), Match::Same);
        assert!(matches!(compare(&exp(Some("g")), Some(&git("h", 3))), Match::Differs(..)));
        assert_eq!(compare(&exp(None), Some(&git("h", 3))), Match::NeedsContent);
    }
}
