//! `publish`: a release folder becomes one commit of a dataset repo.
//!
//! In: a release folder, a [`PublishOptions`] and a [`HubClient`]. Out: a [`PublishReport`]
//! (the plan, what was uploaded, the commit, the tag). Side effects: objects uploaded to the
//! Hub's Xet or LFS storage, at most one commit landed on the branch (or one pull request
//! opened), and a tag.
//!
//! The steps, each done only when the previous one succeeded:
//!
//! ```text
//! pre-flight (no network) ─► hash ─► [create repo] ─► read head H ─► tree at H ─► validate card
//!   ─► preupload (LFS or regular; unchanged files skipped) ─► plan (─► stop here with --dry-run)
//!   ─► Xet (xet-write-token, new chunks through hf-xet; see [`super::xet`])
//!      | LFS batch ─► PUT objects (basic | multipart + completion) ─► verify
//!   ─► ONE NDJSON commit, parentCommit = H ─► tree at the new commit == release ─► tag
//! ```
//!
//! Pre-flight refuses, before any request, a release whose card names files that do not exist
//! or leaves data files out of every split ([`crate::verbs::verify::card_problems`]), whose card
//! front matter uses YAML tags, anchors or aliases ([`crate::stages::card::non_plain_yaml`]), or with a
//! file above the per-file size limit ([`DEFAULT_MAX_FILE_BYTES`] unless set).
//!
//! The commit is never re-sent blindly:
//!
//! - 429: the Hub refused it; the same commit is sent again after the wait the Hub asked for.
//! - 412 (someone else committed meanwhile): the head and the tree are read again. If none of
//!   the release's paths (nor anything under its folder) changed, the same operations are sent
//!   with the new head as `parentCommit`; otherwise publish stops and names the path.
//! - 408, 5xx, timeout, connection lost (the commit may or may not have landed): the head is
//!   read again. Unchanged: nothing landed, the same commit is sent again. Moved and the tree
//!   equals the release: it landed, done (no second commit). Moved without touching the
//!   release's paths: resent on the new head. Otherwise publish stops and names the paths.
//! - any other 4xx: fails at once with the server's message and request id.
//!
//! Attempts are bounded ([`PublishOptions::max_commit_attempts`]) with jittered, growing waits.
//! A release identical to what the branch holds makes no commit.
//!
//! Publish owns only what it published. A remote file is deleted only when the release's
//! earlier version in the same folder listed it (in the `manifest.json` published there, of a
//! release with the same name) and the new version no longer has it. Every other file of the
//! folder (a collaborator's notes, another release's tables) is kept, and named in the plan and
//! the summary; [`PublishOptions::delete_unlisted`] deletes those too. A version older than the
//! one the folder holds is refused unless [`PublishOptions::allow_older_version`].
//!
//! The dataset card at the repo root is merged, not replaced ([`crate::stages::card::merge`]): the
//! release's configs, `dataset_info` entries and text are written in, other configs and
//! metadata are kept. A release in a folder writes its configs (named after the folder, their
//! `data_files` under it) into the root card too, so `datasets` finds every release's files.
//! On HTTP 412 or a moved branch, the card is read again and merged again before the commit is
//! sent again.
//!
//! With `create_pr`, an open pull request whose head already holds the release is reported
//! instead of opening another, and a pull request opened by a commit whose answer was lost is
//! found among the open ones.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use backon::BackoffBuilder;
use base64::Engine;
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use super::client::{Failure, HubClient, LfsBatch, LfsObject, PreuploadFile, TagCreated};
use super::remote::{RemoteTree, remote_tree, repo_housekeeping};
use super::xet::{XetAccess, XetFile, XetStats};
use super::{RepoId, join_repo_path, short};
use crate::core::error::{Error, Result};
use crate::core::numbers;
use crate::core::progress::{Progress, Unit};
use crate::stages::hash;
use crate::stages::release::Manifest;

/// Default per-file size limit: 50,000,000,000 bytes (50 GB, 46.6 GiB), the Hub's long-standing
/// limit for one LFS file. The Hub's storage guide now recommends files under 200 GB (500 GB hard
/// limit); raise the limit with [`PublishOptions::max_file_bytes`] for such repos.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 50_000_000_000;

/// Files per folder above which the Hub's storage guide warns (10,000).
pub const FOLDER_FILES_GUIDANCE: usize = 10_000;

/// Files per repo above which the Hub's storage guide warns (100,000).
pub const REPO_FILES_GUIDANCE: usize = 100_000;

/// Preupload and LFS batch requests carry at most this many files (the Hub's limit).
const BATCH: usize = 256;

/// Files larger than this are sent to LFS when the repo does not exist yet (dry run only);
/// otherwise the Hub decides.
const REGULAR_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// Which tag to put on the commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagMode {
    /// The release version from `manifest.json`.
    Version,
    /// This name.
    Named(String),
    /// No tag.
    None,
}

/// What `publish` is asked to do.
#[derive(Debug, Clone)]
pub struct PublishOptions {
    /// The release folder.
    pub release_dir: PathBuf,
    /// The dataset repo.
    pub repo: RepoId,
    /// Branch to commit to (or the base of the pull request).
    pub revision: String,
    /// Folder of the release inside the repo, without surrounding `/` (empty: the root).
    pub path_in_repo: String,
    /// Create the repo first (an existing repo is fine).
    pub create: bool,
    /// Create it private.
    pub private: bool,
    /// Open a pull request instead of committing to the branch.
    pub create_pr: bool,
    /// Only plan: read the Hub, upload nothing, commit nothing.
    pub dry_run: bool,
    /// Commit title (default `Publish <name> <version>`).
    pub commit_message: Option<String>,
    /// Tag to create.
    pub tag: TagMode,
    /// Largest file accepted, in bytes (decimal).
    pub max_file_bytes: u64,
    /// Time allowed for the commit request before its outcome is checked by reading the branch.
    pub commit_timeout: Duration,
    /// Commit requests sent at most (412 conflicts, lost answers, 429).
    pub max_commit_attempts: usize,
    /// LFS objects uploaded at once.
    pub concurrency: usize,
    /// Also delete the files of the folder that no earlier version of this release published
    /// (the folder then holds exactly the release; at the root, the card is the release's own).
    pub delete_unlisted: bool,
    /// Publish a release that holds text of an access token's form (`hf_…`, `sk-…`; see
    /// [`crate::core::secrets::token_forms_pattern`]), refused by default. The token this process
    /// holds is refused whatever this says.
    pub allow_token_like: bool,
    /// Publish even when the folder holds a newer version of the release.
    pub allow_older_version: bool,
    /// How large files travel: Xet when the Hub offers it, else Git LFS (default); or one forced.
    pub transfer: Transfer,
    /// hf-xet's cache folder, shared with the Python client (`$HF_HOME/xet`). Its shard cache
    /// remembers the chunks sent from this machine, so a republish from here finds them all;
    /// `None`: a temporary folder (only the chunks the CAS's deduplication index finds are
    /// skipped).
    pub xet_cache: Option<PathBuf>,
    /// `HF_HUB_OFFLINE` is set: the release is checked (its files against the manifest, its
    /// card's gaps said), then the publish is refused before any request.
    pub offline: bool,
}

/// How the files stored outside git (LFS pointers in the commit) are uploaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transfer {
    /// Xet when the Hub offers it (its `xet-write-token` endpoint, or `xet` picked in the LFS
    /// batch answer), else Git LFS `basic`/`multipart`.
    #[default]
    Auto,
    /// Xet only: publish fails when the Hub does not offer it.
    Xet,
    /// Git LFS `basic`/`multipart` only (no Xet is offered to the Hub).
    Lfs,
}

impl Transfer {
    /// The name used on the command line and in reports: `auto`, `xet`, `lfs`.
    pub fn name(self) -> &'static str {
        match self {
            Transfer::Auto => "auto",
            Transfer::Xet => "xet",
            Transfer::Lfs => "lfs",
        }
    }
}

impl PublishOptions {
    /// Options with the defaults: branch `main`, repo root, tag = version, 50 GB file limit,
    /// 300 s commit timeout, 5 commit attempts, 4 uploads at once.
    pub fn new(release_dir: impl Into<PathBuf>, repo: RepoId) -> PublishOptions {
        PublishOptions {
            release_dir: release_dir.into(),
            repo,
            revision: "main".into(),
            path_in_repo: String::new(),
            create: false,
            private: false,
            create_pr: false,
            dry_run: false,
            commit_message: None,
            tag: TagMode::Version,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            commit_timeout: Duration::from_secs(300),
            max_commit_attempts: 5,
            concurrency: 4,
            delete_unlisted: false,
            allow_older_version: false,
            allow_token_like: false,
            transfer: Transfer::Auto,
            xet_cache: None,
            offline: false,
        }
    }
}

/// One file of the plan.
#[derive(Debug, Clone)]
pub struct PlannedFile {
    /// Path in the repo.
    pub path: String,
    /// The local file.
    pub local: PathBuf,
    /// Size in bytes.
    pub bytes: u64,
    /// SHA-256, lowercase hex.
    pub sha256: String,
    /// Stored in LFS (else in git).
    pub lfs: bool,
    /// To be sent; false when the branch already holds these bytes at this path.
    pub upload: bool,
    /// The repo's root card, merged from the card the branch holds and the release's card
    /// (for a release at the root, its `README.md`; for one in a folder, an extra file).
    pub root_card: bool,
    /// Git blob SHA-1 (files stored in git only).
    git_sha1: Option<String>,
}

/// How a publish ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishOutcome {
    /// `--dry-run`: nothing was sent.
    DryRun,
    /// The branch already holds the release: no commit.
    Unchanged {
        /// The branch head.
        head: String,
    },
    /// One commit landed.
    Committed {
        /// Its id.
        commit: String,
        /// Its web URL, when the Hub gave one.
        commit_url: Option<String>,
        /// With `create_pr`: the pull request.
        pull_request_url: Option<String>,
        /// Commit requests sent.
        attempts: usize,
        /// How a lost or refused answer was resolved, when one was.
        note: Option<String>,
    },
    /// `create_pr`: an open pull request already holds the release; no commit.
    PullRequestExists {
        /// Its number.
        num: u64,
        /// Its web URL.
        url: String,
        /// The commit at its head.
        head: String,
    },
}

/// What `publish` did.
#[derive(Debug, Clone)]
pub struct PublishReport {
    /// The repo.
    pub repo: RepoId,
    /// The branch (or pull request base).
    pub revision: String,
    /// Folder of the release in the repo.
    pub path_in_repo: String,
    /// Release name and version.
    pub release: String,
    /// The head the plan was made against (`None`: the repo or branch does not exist yet, or
    /// the Hub was not read).
    pub head: Option<String>,
    /// The plan was made without reading the Hub (`HF_HUB_OFFLINE`, a dry run): as if the repo
    /// held nothing, so every file is listed to upload and no deletion or merged card is known.
    pub offline: bool,
    /// Every file of the release.
    pub files: Vec<PlannedFile>,
    /// Paths deleted by the commit: files an earlier version of the release published that
    /// this one lacks (and, with `delete_unlisted`, every other file of the folder).
    pub deletions: Vec<String>,
    /// Files of the folder (of the whole repo, for a release at the root) that this publish
    /// leaves as they are: it did not publish them.
    pub kept: Vec<String>,
    /// How the root card was written, when it was merged with the card the branch holds.
    pub card: Option<String>,
    /// Commit title.
    pub commit_message: String,
    /// The outcome.
    pub outcome: PublishOutcome,
    /// What happened to the tag.
    pub tag: Option<String>,
    /// Warnings (Hub card warnings, folder sizes, tag not moved).
    pub warnings: Vec<String>,
    /// LFS objects sent (through Xet: files handed to Xet).
    pub uploaded_objects: usize,
    /// Bytes sent: whole LFS objects, plus, through Xet, the new chunks (compressed) and file
    /// records that went to the CAS.
    pub uploaded_bytes: u64,
    /// LFS objects the Hub already stored (not sent again).
    pub reused_objects: usize,
    /// How the objects travelled ([`Transfer::Xet`] or [`Transfer::Lfs`]; `None`: none sent).
    pub transfer: Option<Transfer>,
    /// Through Xet: what was sent, in detail.
    pub xet: Option<XetStats>,
}

/// What the release's card still lacks for the Hub's page, said before it goes there: no
/// `license` in its metadata, or a `TODO` left where the pipeline's `[card]` text goes (its
/// `pretty_name`, the description under the title, the citation; the placeholders
/// `runpack init` writes), as [`crate::core::spec::CardDef::unfinished`] says at build time.
/// The release is published all the same.
fn unfinished_card(card: &str) -> Vec<String> {
    let mut out = Vec::new();
    let front = crate::stages::card::front_matter(card);
    let meta = front.and_then(|fm| yaml_serde::from_str::<yaml_serde::Value>(fm).ok());
    // the text after the metadata, whose YAML comments also start with `# `
    let body = front.and_then(|fm| card.find(fm).map(|at| &card[at + fm.len()..])).unwrap_or(card);
    let field = |k: &str| meta.as_ref().and_then(|m| m.get(k)).filter(|v| !v.is_null());
    if field("license").is_none() {
        out.push(format!("README.md: {}", crate::core::spec::NO_LICENCE));
    }
    // the text of the section whose heading line starts with `heading`, up to the next `## `
    let section = |heading: &str| {
        let at = body.find(&format!("\n{heading}")).map(|i| i + 1)?;
        let text = &body[at + heading.len()..];
        Some(text.find("\n## ").map_or(text, |end| &text[..end]))
    };
    let pretty_name = field("pretty_name").and_then(|v| v.as_str());
    if [pretty_name, section("# "), section("## Citation")].into_iter().flatten().any(|t| t.contains("TODO")) {
        out.push("README.md: the card still holds a TODO (a placeholder left to write in pipeline.toml)".to_string());
    }
    out
}

/// A local file of the release.
#[derive(Debug, Clone)]
struct LocalFile {
    rel: String,
    path: PathBuf,
    bytes: u64,
}

/// Publishes a release: see the module docs.
///
/// Errors: [`Error::Config`] for a `path_in_repo` that leaves the repo or names no folder
/// (`..`, `a//b`; see `repo_folder`) or a `revision` that is no ref name; [`Error::Refused`] for pre-flight problems (all listed;
/// nothing was sent), a damaged release, a conflicting concurrent change (the path is named) or a branch that kept moving;
/// [`Error::HubStatus`] for a refusal by the Hub (its message and request id); [`Error::Hub`]
/// when the Hub could not be reached or the commit's outcome stays unknown.
pub async fn run(client: &HubClient, opts: &PublishOptions, progress: &dyn Progress) -> Result<PublishReport> {
    // the folder checked before anything is read or sent
    let opts =
        &PublishOptions { path_in_repo: super::repo_folder(&opts.path_in_repo, "--path-in-repo")?, ..opts.clone() };
    super::revision_name(&opts.revision, "--revision")?;
    // a tag that can never be made would otherwise fail after the commit has landed
    if let TagMode::Named(t) = &opts.tag {
        super::revision_name(t, "--tag")?;
    }
    let HashedRelease { manifest, locals, digests, warnings } = hashed_release(opts, progress)?;
    // a release that holds the token would publish it (a config that logged it, a card text)
    let rels: Vec<String> = locals.iter().map(|f| f.rel.clone()).collect();
    // (a token of another form or another account is looked for too, unless allowed)
    let forms = !opts.allow_token_like;
    match crate::stages::release::secret_held(&opts.release_dir, &rels, forms)? {
        None => {}
        Some((place, crate::stages::release::Held::Token)) => {
            return Err(Error::Refused(format!(
                "{place}: the release holds the Hub token (HF_TOKEN, --token-file or the token file), and \
                 publishing would make it public; nothing was sent. Take it out of the data (in the table's SQL, \
                 or with `redact` in a [source.wandb]) or the card, and build again"
            )));
        }
        Some((place, crate::stages::release::Held::LooksLike(form))) => {
            return Err(Error::Refused(format!(
                "{place}: the release holds what looks like {form}, and publishing would make it public; nothing \
                 was sent. Take it out of the data (in the table's SQL: leave the column out, or replace the \
                 value) or the card, and build again; pass --allow-token-like when it is no credential"
            )));
        }
    }
    let repo = &opts.repo;
    let prefix = opts.path_in_repo.clone();
    let card_text = std::fs::read_to_string(opts.release_dir.join("README.md"))
        .map_err(|e| Error::io(opts.release_dir.join("README.md"), e))?;
    let unfinished = unfinished_card(&card_text);
    // the card's gaps need no network: said also when the Hub cannot be reached
    let said_anyway = |e: Error| {
        for w in &unfinished {
            tracing::warn!("{w}");
        }
        e
    };
    if opts.offline && !opts.dry_run {
        return Err(said_anyway(Error::Refused(
            "HF_HUB_OFFLINE is set: publishing needs the network (the release itself was checked: its files \
             match its manifest); --dry-run plans offline, as if the repo held nothing"
                .into(),
        )));
    }
    if !opts.dry_run && !client.has_token() {
        return Err(Error::Refused(
            "publishing needs an access token with write access: set HF_TOKEN, pass --token-file, or log in (token file under HF_HOME)".into(),
        ));
    }
    if opts.create && !opts.dry_run {
        client.create_repo(repo, opts.private).await.map_err(said_anyway)?;
    }
    // offline, a dry run plans as for a repo that holds nothing yet, and says so
    let head = if opts.offline { None } else { branch_head(client, opts).await.map_err(said_anyway)? };
    let mut warnings = warnings;
    if opts.offline {
        warnings.push(
            "HF_HUB_OFFLINE is set: the repo on the Hub was not read; the plan is made as if it held nothing (every \
             file listed to upload, no deletion or merged card known)"
                .into(),
        );
    }
    warnings.extend(unfinished);
    let scratch = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let release = Release { manifest: &manifest, locals: &locals, digests: &digests, card: &card_text };
    let mut report = plan(client, opts, &release, head.as_deref(), scratch.path(), warnings).await?;
    let tag_name = match &opts.tag {
        TagMode::Version => Some(manifest.version.clone()),
        TagMode::Named(n) => Some(n.clone()),
        TagMode::None => None,
    };
    if opts.dry_run {
        // what the real run would warn of: a tag of that name elsewhere is not moved
        let changes = report.files.iter().any(|f| f.upload) || !report.deletions.is_empty();
        if let (Some(t), Some(_), true, false) = (&tag_name, &head, changes, opts.create_pr)
            && let Some(existing) = client.refs(repo).await.unwrap_or_default().tags.iter().find(|x| &x.name == t)
        {
            report.warnings.push(format!(
                "tag {t} already exists at {}: the new commit would not be tagged; pass --tag <name> to tag it",
                short(&existing.target_commit)
            ));
        }
        return Ok(report);
    }
    let head = head.expect("known when not a dry run");
    if !report.files.iter().any(|f| f.upload) && report.deletions.is_empty() {
        report.outcome = PublishOutcome::Unchanged { head: head.clone() };
        if !opts.create_pr
            && let Some(t) = &tag_name
        {
            report.tag = Some(tag(client, repo, &head, t, &report.release, &mut report.warnings).await?);
        }
        return Ok(report);
    }
    if opts.create_pr
        && let Some((num, pr_head)) = open_pull_request(client, opts, &report).await?
    {
        report.outcome =
            PublishOutcome::PullRequestExists { num, url: pull_request_url(client, repo, num), head: pr_head };
        return Ok(report);
    }
    upload_objects(client, opts, &mut report, scratch.path(), progress).await?;
    let mut state = CommitState { attempts: 0, notes: Vec::new(), parent: head, waits: commit_waits(client) };
    let answer = commit_release(client, opts, &release, scratch.path(), &mut report, &mut state, progress).await?;
    let note = (!state.notes.is_empty()).then(|| state.notes.join("; "));
    // the new commit must hold exactly the release
    let after = own_tree(client, repo, &answer.commit_oid, &prefix).await?;
    let diffs = differences(&report, &after);
    if !diffs.is_empty() {
        return Err(Error::hub(format!(
            "commit {} landed but does not hold the release: {}",
            short(&answer.commit_oid),
            diffs.join("; ")
        )));
    }
    if !opts.create_pr
        && let Some(t) = &tag_name
    {
        report.tag = Some(tag(client, repo, &answer.commit_oid, t, &report.release, &mut report.warnings).await?);
    }
    report.outcome = PublishOutcome::Committed {
        commit: answer.commit_oid,
        commit_url: answer.commit_url,
        pull_request_url: answer.pull_request_url,
        attempts: state.attempts,
        note,
    };
    Ok(report)
}

/// The local release checked before anything is sent ([`preflight`]), and every file hashed
/// and compared with the manifest. Errors: [`Error::Refused`] for a file that differs from
/// the manifest (the release is damaged).
fn hashed_release(opts: &PublishOptions, progress: &dyn Progress) -> Result<HashedRelease> {
    let (manifest, locals, warnings) = preflight(opts)?;
    // hash and compare with the manifest
    let total: u64 = locals.iter().map(|f| f.bytes).sum();
    progress.start("hashing", Unit::Bytes, Some(total));
    let digests = hash::sha256_files(&locals.iter().map(|f| f.path.clone()).collect::<Vec<_>>());
    progress.advance(total);
    progress.finish();
    let digests = digests?;
    for (f, d) in locals.iter().zip(&digests) {
        if let Some(m) = manifest.files.iter().find(|m| m.path == f.rel)
            && (m.sha256 != d.sha256 || m.bytes != d.bytes)
        {
            return Err(Error::Refused(format!(
                "{}: does not match the manifest (sha256 {} expected, {} found); the release is damaged: run `runpack verify {}`",
                f.rel,
                m.sha256,
                d.sha256,
                opts.release_dir.display()
            )));
        }
    }
    Ok(HashedRelease { manifest, locals, digests, warnings })
}

/// A local release checked and hashed before a publish.
struct HashedRelease {
    manifest: Manifest,
    locals: Vec<LocalFile>,
    /// The digest of each of `locals`, in order.
    digests: Vec<hash::FileDigest>,
    /// What the checks warn of.
    warnings: Vec<String>,
}

/// The commit the branch `opts.revision` points at; `None` when a dry run with `--create`
/// plans against a repo that does not exist yet. Errors: [`Error::Refused`] for a token the
/// Hub refuses, a missing repo (without `--create`) or branch.
async fn branch_head(client: &HubClient, opts: &PublishOptions) -> Result<Option<String>> {
    let repo = &opts.repo;
    Ok(match client.revision(repo, &opts.revision).await {
        Ok(h) => Some(h),
        // the Hub answers 401 both for a repo it will not show and for a token it refuses:
        // only the first says which repo or branch is missing
        Err(Error::HubStatus { status: 401, message, request_id, error_code, .. })
            if client.has_token() && !matches!(error_code.as_deref(), Some("RepoNotFound" | "RevisionNotFound")) =>
        {
            return Err(Error::Refused(format!(
                "the Hub refused the token (HTTP 401: {message}{}); check HF_TOKEN, --token-file or the token file under HF_HOME",
                request_id.map(|r| format!(", request id {r}")).unwrap_or_default()
            )));
        }
        // a repo --create would make: planned as empty (a missing branch stops the real run)
        Err(Error::HubStatus { status: 404 | 401, error_code, .. })
            if opts.dry_run && opts.create && error_code.as_deref() != Some("RevisionNotFound") =>
        {
            None
        }
        Err(Error::HubStatus { status: 404 | 401, error_code, .. }) => {
            let what = if error_code.as_deref() == Some("RevisionNotFound") {
                format!("branch `{}` does not exist in {repo}", opts.revision)
            } else {
                format!("dataset repo {repo} not found (or not visible with this token); pass --create to create it")
            };
            return Err(Error::Refused(what));
        }
        Err(e) => return Err(e),
    })
}

/// Commits the planned release, again and again while the branch moves under it (each time
/// re-planned against the new head: the card merged again, new LFS objects sent), within the
/// attempts `state` allows. Returns the Hub's answer to the commit that landed.
async fn commit_release(
    client: &HubClient,
    opts: &PublishOptions,
    release: &Release<'_>,
    scratch: &Path,
    report: &mut PublishReport,
    state: &mut CommitState,
    progress: &dyn Progress,
) -> Result<super::client::CommitAnswer> {
    loop {
        let ops = operations(report)?;
        match commit(client, opts, report, &ops, state).await? {
            Step::Done(answer) => return Ok(answer),
            Step::Replan(now) => {
                // the branch moved: what it holds now is merged again (card, deletions, kept files)
                let sent: BTreeSet<String> =
                    report.files.iter().filter(|f| f.upload && f.lfs).map(|f| f.sha256.clone()).collect();
                let mut warnings = std::mem::take(&mut report.warnings);
                let (uploaded, bytes, reused) = (report.uploaded_objects, report.uploaded_bytes, report.reused_objects);
                let (transfer, xet) = (report.transfer, report.xet);
                let mut next = plan(client, opts, release, Some(&now), scratch, Vec::new()).await?;
                for w in std::mem::take(&mut next.warnings) {
                    if !warnings.contains(&w) {
                        warnings.push(w);
                    }
                }
                next.warnings = warnings;
                (next.uploaded_objects, next.uploaded_bytes, next.reused_objects) = (uploaded, bytes, reused);
                (next.transfer, next.xet) = (transfer, xet);
                if next.files.iter().any(|f| f.upload && f.lfs && !sent.contains(&f.sha256)) {
                    upload_objects(client, opts, &mut next, scratch, progress).await?;
                }
                *report = next;
                state.parent = now;
            }
        }
    }
}

/// The local release, hashed.
struct Release<'a> {
    manifest: &'a Manifest,
    locals: &'a [LocalFile],
    digests: &'a [hash::FileDigest],
    /// Its card (`README.md`).
    card: &'a str,
}

/// Largest card or manifest read from the Hub to plan a publish (16 MiB).
const SMALL_FILE_MAX: u64 = 16 << 20;

/// The files under `prefix` at `commit`, and the root card when `prefix` is a folder (the
/// root card is then written too).
async fn own_tree(client: &HubClient, repo: &RepoId, commit: &str, prefix: &str) -> Result<RemoteTree> {
    let mut tree = remote_tree(client, repo, commit, prefix).await?;
    if !prefix.is_empty() {
        for e in client.paths_info(repo, commit, &["README.md"]).await? {
            if e.kind == "file" && e.path == "README.md" {
                tree.insert(
                    e.path,
                    super::remote::RemoteFile {
                        size: e.size,
                        git_sha1: e.oid,
                        lfs_sha256: e.lfs.map(|l| l.oid.to_lowercase()),
                        xet: e.xet_hash.is_some(),
                    },
                );
            }
        }
    }
    Ok(tree)
}

/// The manifest published at `path` of `commit`: `Ok(None)` when there is none; `Err(text)`
/// with what is wrong when it is no manifest runpack reads.
async fn remote_manifest(
    client: &HubClient,
    repo: &RepoId,
    commit: &str,
    path: &str,
) -> Result<Option<std::result::Result<Manifest, String>>> {
    let bytes = match client.read_small(repo, commit, path, SMALL_FILE_MAX).await {
        Ok(b) => b,
        Err(Error::HubStatus { status: 404, .. }) => return Ok(None),
        Err(Error::Refused(m)) => return Ok(Some(Err(m))),
        Err(e) => return Err(e),
    };
    Ok(Some(serde_json::from_slice::<Manifest>(&bytes).map_err(|e| format!("not a runpack manifest ({e})"))))
}

/// How two release versions compare: semantic versions (<https://semver.org>), else
/// dot-separated numbers; `None` when they cannot be ordered.
fn version_order(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    if let (Ok(x), Ok(y)) = (semver::Version::parse(a), semver::Version::parse(b)) {
        return Some(x.cmp(&y));
    }
    let nums = |v: &str| v.split('.').map(|p| p.parse::<u64>().ok()).collect::<Option<Vec<u64>>>();
    Some(nums(a)?.cmp(&nums(b)?))
}

/// Plans the commit against `head` (`None`: the repo or branch does not exist yet): which
/// files to send, which to delete and which to keep, and the merged root card.
async fn plan(
    client: &HubClient,
    opts: &PublishOptions,
    release: &Release<'_>,
    head: Option<&str>,
    scratch: &Path,
    mut warnings: Vec<String>,
) -> Result<PublishReport> {
    let repo = &opts.repo;
    let manifest = release.manifest;
    let before = match head {
        Some(h) => own_tree(client, repo, h, &opts.path_in_repo).await?,
        None => RemoteTree::new(),
    };
    let earlier = earlier_release(client, opts, manifest, head, &before, &mut warnings).await?;
    // an earlier version of this same release, whose files this publish may replace
    let same = earlier.as_ref().filter(|e| e.name == manifest.name);
    let card = root_card(client, opts, release, head, &before, earlier.as_ref(), same, scratch).await?;
    let mut files = planned_files(&opts.path_in_repo, release, card.file);
    if head.is_some() {
        let merged_sha1 = hash::git_blob_sha1(&card.local)?;
        if before.get(ROOT_CARD).map(|r| r.git_sha1.as_str()) != Some(merged_sha1.as_str()) {
            for w in client.validate_yaml(&card.text).await? {
                warnings.push(format!("README.md: the Hub warns: {w}"));
            }
        }
        classify(client, opts, &mut files).await?;
    }
    for f in files.iter_mut().filter(|f| !f.lfs) {
        f.git_sha1 = Some(hash::git_blob_sha1(&f.local)?);
    }
    mark_unchanged(&mut files, &before);
    let (deletions, kept) = removals(opts, same, &files, &before);
    let commit_message =
        opts.commit_message.clone().unwrap_or_else(|| format!("Publish {} {}", manifest.name, manifest.version));
    Ok(PublishReport {
        repo: repo.clone(),
        revision: opts.revision.clone(),
        path_in_repo: opts.path_in_repo.clone(),
        release: format!("{} {}", manifest.name, manifest.version),
        head: head.map(str::to_string),
        offline: opts.offline,
        files,
        deletions,
        kept,
        card: card.note,
        commit_message,
        outcome: PublishOutcome::DryRun,
        tag: None,
        warnings,
        uploaded_objects: 0,
        uploaded_bytes: 0,
        reused_objects: 0,
        transfer: None,
        xet: None,
    })
}

/// The card at the repo root.
const ROOT_CARD: &str = "README.md";

/// The release the folder holds at `head`, by its published manifest (`None`: none, or one
/// that cannot be read, with a warning). Refuses an older version of the same release over a
/// newer one unless `allow_older_version`; warns when the folder holds another release.
async fn earlier_release(
    client: &HubClient,
    opts: &PublishOptions,
    manifest: &Manifest,
    head: Option<&str>,
    before: &RemoteTree,
    warnings: &mut Vec<String>,
) -> Result<Option<Manifest>> {
    let (repo, prefix) = (&opts.repo, opts.path_in_repo.as_str());
    let mpath = join_repo_path(prefix, "manifest.json");
    let earlier = match (head, before.contains_key(&mpath)) {
        (Some(h), true) => remote_manifest(client, repo, h, &mpath).await?,
        _ => None,
    };
    let earlier = match earlier {
        Some(Ok(m)) => m,
        Some(Err(why)) => {
            warnings.push(format!(
                "`{mpath}` on the Hub is {why}: no file of the folder is taken for an earlier version of this release, \
                 so none is deleted"
            ));
            return Ok(None);
        }
        None => return Ok(None),
    };
    if earlier.name != manifest.name {
        warnings.push(format!(
            "`{mpath}` is release {} {}'s: this release's manifest.json and SHA256SUMS take its place, and its other \
             files are kept; publish each release into its own folder (--path-in-repo) to keep both verifiable",
            earlier.name, earlier.version
        ));
    } else if version_order(&earlier.version, &manifest.version) == Some(std::cmp::Ordering::Greater)
        && !opts.allow_older_version
    {
        return Err(Error::Refused(format!(
            "{repo}{}: holds version {} of {}, newer than {}: nothing was sent; pass --allow-older-version to \
             publish the older version over it",
            if prefix.is_empty() { String::new() } else { format!(" (folder {prefix})") },
            earlier.version,
            manifest.name,
            manifest.version
        )));
    }
    Ok(Some(earlier))
}

/// The root card a publish writes: the release's card merged into the one the branch holds.
struct RootCard {
    /// The merged card's text.
    text: String,
    /// The file it was written to, in the scratch folder.
    local: PathBuf,
    /// The planned file that sends it.
    file: PlannedFile,
    /// How it was merged, when the branch held a card that differs from the release's.
    note: Option<String>,
}

/// Merges the release's card into the root card the branch holds at `head` (see
/// [`crate::stages::card::merge`]) and writes the result into `scratch`.
///
/// `earlier` is the release the folder holds and `same` that release when it is an earlier
/// version of this one (its configs are replaced). Errors: [`Error::Refused`] for a root card
/// that is not UTF-8 or whose front matter cannot be merged into (nothing is sent).
#[allow(clippy::too_many_arguments)] // each argument is one input of the merge, none derived from another
async fn root_card(
    client: &HubClient,
    opts: &PublishOptions,
    release: &Release<'_>,
    head: Option<&str>,
    before: &RemoteTree,
    earlier: Option<&Manifest>,
    same: Option<&Manifest>,
    scratch: &Path,
) -> Result<RootCard> {
    let (repo, prefix) = (&opts.repo, opts.path_in_repo.as_str());
    let remote_card = match (head, before.get(ROOT_CARD)) {
        (Some(h), Some(_)) => Some(client.read_small(repo, h, ROOT_CARD, SMALL_FILE_MAX).await?),
        _ => None,
    };
    let root_release = if prefix.is_empty() {
        earlier.cloned()
    } else if remote_card.is_some() {
        match remote_manifest(client, repo, head.expect("a card was read"), "manifest.json").await? {
            Some(Ok(m)) => Some(m),
            _ => None,
        }
    } else {
        None
    };
    let remote_text = match &remote_card {
        Some(b) => Some(String::from_utf8(b.clone()).map_err(|_| {
            Error::Refused(format!("{repo}: README.md at the repo root is not UTF-8 text: it is not merged into"))
        })?),
        None => None,
    };
    // the card's body is an earlier root release's whole card when its bytes are that card's
    let remote_owner = match (&root_release, &remote_card) {
        (Some(r), Some(bytes)) => {
            r.files.iter().any(|f| f.path == ROOT_CARD && f.sha256 == hash::sha256_bytes(bytes)).then(|| r.name.clone())
        }
        _ => None,
    };
    let replaces: BTreeSet<String> = same
        .map(|e| e.tables.iter().map(|t| crate::stages::card::merge::config_name(prefix, &t.name)).collect())
        .unwrap_or_default();
    let contribution = crate::stages::card::merge::Contribution {
        card: release.card,
        release: &release.manifest.name,
        folder: prefix,
        replaces,
    };
    let merged = if opts.delete_unlisted && prefix.is_empty() {
        release.card.to_string()
    } else {
        crate::stages::card::merge::merge(remote_text.as_deref(), &contribution, remote_owner.as_deref()).map_err(
            |e| {
                Error::Refused(format!(
                    "{repo}: {e}; nothing was sent: runpack merges its configs into the card at the repo root and \
                     will not overwrite one it cannot read; fix the card's front matter on the Hub{}",
                    if prefix.is_empty() {
                        ", or pass --delete-unlisted to replace the card with the release's"
                    } else {
                        ""
                    }
                ))
            },
        )?
    };
    let note = remote_text.as_deref().filter(|_| merged != release.card).map(|remote| {
        let names = |t: &str| {
            crate::stages::card::merge::Card::parse(t, ROOT_CARD).map(|c| c.config_names()).unwrap_or_default()
        };
        let ours: BTreeSet<String> = names(&merged).into_iter().collect();
        let mine =
            crate::stages::card::merge::for_root(release.card, prefix).map(|c| c.config_names()).unwrap_or_default();
        let kept: Vec<String> = names(remote).into_iter().filter(|n| ours.contains(n) && !mine.contains(n)).collect();
        format!(
            "README.md at the repo root is merged: config{} {} written, {}",
            if mine.len() == 1 { "" } else { "s" },
            if mine.is_empty() { "none".into() } else { mine.join(", ") },
            if kept.is_empty() { "no other config kept".to_string() } else { format!("kept {}", kept.join(", ")) }
        )
    });
    let sha256 = hash::sha256_bytes(merged.as_bytes());
    let local = scratch.join(format!("README-{sha256}.md"));
    std::fs::write(&local, &merged).map_err(|e| Error::io(&local, e))?;
    let file = PlannedFile {
        path: ROOT_CARD.into(),
        local: local.clone(),
        bytes: merged.len() as u64,
        sha256,
        lfs: false,
        upload: true,
        root_card: true,
        git_sha1: None,
    };
    Ok(RootCard { text: merged, local, file, note })
}

/// The release's files under `prefix`, in path order, with the merged root card in place of
/// the release's own card (or beside them, for a release in a folder). Every file is to be
/// sent until [`mark_unchanged`] says otherwise.
fn planned_files(prefix: &str, release: &Release<'_>, root_card: PlannedFile) -> Vec<PlannedFile> {
    let mut files: Vec<PlannedFile> = release
        .locals
        .iter()
        .zip(release.digests)
        .map(|(f, d)| PlannedFile {
            path: join_repo_path(prefix, &f.rel),
            local: f.path.clone(),
            bytes: d.bytes,
            sha256: d.sha256.clone(),
            lfs: f.rel.ends_with(".parquet") || d.bytes > REGULAR_MAX_BYTES,
            upload: true,
            root_card: false,
            git_sha1: None,
        })
        .collect();
    match files.iter_mut().find(|f| f.path == ROOT_CARD) {
        Some(f) => *f = root_card,
        None => files.push(root_card),
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// Marks the files the branch already holds with the same content as not to be sent: LFS
/// files by sha256 and size, regular files by git blob sha1.
fn mark_unchanged(files: &mut [PlannedFile], before: &RemoteTree) {
    for f in files {
        if let Some(r) = before.get(&f.path) {
            let same = match (&r.lfs_sha256, f.lfs) {
                (Some(oid), true) => *oid == f.sha256 && r.size == f.bytes,
                (None, false) => Some(&r.git_sha1) == f.git_sha1.as_ref(),
                _ => false,
            };
            f.upload = !same;
        }
    }
}

/// The paths of the folder that the release does not write, split into those the commit
/// deletes (files the earlier version `same` published, or every one with
/// `delete_unlisted`) and those it keeps.
fn removals(
    opts: &PublishOptions,
    same: Option<&Manifest>,
    files: &[PlannedFile],
    before: &RemoteTree,
) -> (Vec<String>, Vec<String>) {
    let prefix = opts.path_in_repo.as_str();
    let wanted: BTreeSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let owned: BTreeSet<String> = same
        .map(|e| {
            e.files
                .iter()
                .map(|f| f.path.as_str())
                .chain(["manifest.json", "SHA256SUMS"])
                .filter(|p| crate::stages::release::safe_relative(p))
                .map(|p| join_repo_path(prefix, p))
                .collect()
        })
        .unwrap_or_default();
    let in_folder = |p: &str| prefix.is_empty() || p.starts_with(&format!("{prefix}/"));
    let mut deletions = Vec::new();
    let mut kept = Vec::new();
    for p in before.keys().filter(|p| !wanted.contains(p.as_str()) && !repo_housekeeping(p) && in_folder(p)) {
        if owned.contains(p) || opts.delete_unlisted {
            deletions.push(p.clone());
        } else {
            kept.push(p.clone());
        }
    }
    (deletions, kept)
}

/// The web URL of pull request `num`.
fn pull_request_url(client: &HubClient, repo: &RepoId, num: u64) -> String {
    format!("{}/datasets/{repo}/discussions/{num}", client.endpoint())
}

/// Pull requests looked at, newest first, when looking for one that holds the release.
const PULL_REQUESTS_LOOKED_AT: usize = 50;

/// The newest open pull request whose head holds the release (every file of the plan with the
/// same content, no file the plan deletes), with its head commit.
async fn open_pull_request(
    client: &HubClient,
    opts: &PublishOptions,
    report: &PublishReport,
) -> Result<Option<(u64, String)>> {
    let mut prs = client.pull_requests(&opts.repo).await?;
    prs.retain(|p| p.is_open());
    prs.sort_by_key(|p| std::cmp::Reverse(p.num));
    for pr in prs.into_iter().take(PULL_REQUESTS_LOOKED_AT) {
        let rev = format!("refs/pr/{}", pr.num);
        let head = match client.revision(&opts.repo, &rev).await {
            Ok(h) => h,
            // a pull request whose ref is gone holds nothing
            Err(Error::HubStatus { status: 404, .. }) => continue,
            Err(e) => return Err(e),
        };
        let tree = own_tree(client, &opts.repo, &head, &opts.path_in_repo).await?;
        if differences(report, &tree).is_empty() {
            return Ok(Some((pr.num, head)));
        }
    }
    Ok(None)
}

/// Pre-flight checks that need no network: everything wrong is listed in one error.
fn preflight(opts: &PublishOptions) -> Result<(Manifest, Vec<LocalFile>, Vec<String>)> {
    let dir = &opts.release_dir;
    if !dir.is_dir() {
        return Err(Error::Refused(format!("{} is not a release folder", dir.display())));
    }
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let on_disk = disk_files(dir);
    let manifest = if dir.join("manifest.json").is_file() {
        match Manifest::load(dir) {
            Ok(m) => Some(m),
            Err(e) => {
                problems.push(format!("manifest.json: {e}"));
                None
            }
        }
    } else {
        problems.push("manifest.json: missing; publish takes a release built by `runpack build`".into());
        None
    };
    card_preflight(dir, manifest.as_ref(), &on_disk, &mut problems);
    // the files to send
    let mut rels: Vec<String> = match &manifest {
        Some(m) => {
            m.files.iter().map(|f| f.path.clone()).chain(["manifest.json".into(), "SHA256SUMS".into()]).collect()
        }
        None => on_disk.clone(),
    };
    rels.sort();
    rels.dedup();
    let mut locals = Vec::new();
    for rel in rels {
        if !crate::stages::release::safe_relative(&rel) {
            problems.push(format!("{rel}: manifest path leaves the release folder; refused"));
            continue;
        }
        let path = dir.join(&rel);
        match std::fs::metadata(&path) {
            Err(_) => problems.push(format!("{rel}: missing (listed in the manifest)")),
            Ok(m) if !m.is_file() => problems.push(format!("{rel}: not a regular file")),
            Ok(m) => {
                if m.len() > opts.max_file_bytes {
                    problems.push(format!(
                        "{rel}: {} > limit {} per file",
                        numbers::human_bytes(m.len()),
                        numbers::human_bytes(opts.max_file_bytes)
                    ));
                }
                locals.push(LocalFile { rel, path, bytes: m.len() });
            }
        }
    }
    if let Some(m) = &manifest {
        let listed: BTreeSet<&str> = m.files.iter().map(|f| f.path.as_str()).collect();
        for f in &on_disk {
            if !listed.contains(f.as_str()) && f != "manifest.json" && f != "SHA256SUMS" {
                warnings.push(format!("{f}: not in the manifest; not published"));
            }
        }
    }
    warnings.extend(storage_guidance(&opts.path_in_repo, &locals));
    match manifest {
        Some(m) if problems.is_empty() => Ok((m, locals, warnings)),
        _ => Err(Error::Refused(format!(
            "publish refused before any upload: {} problem{} in {}:\n{}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            dir.display(),
            problems.iter().map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n")
        ))),
    }
}

/// The card's pre-flight problems, pushed to `problems`: missing, YAML that is not plain, and
/// what `verify` finds in its configs against the files the manifest lists (or, without a
/// manifest, the files `on_disk`).
fn card_preflight(dir: &Path, manifest: Option<&Manifest>, on_disk: &[String], problems: &mut Vec<String>) {
    let card_path = dir.join("README.md");
    match std::fs::read_to_string(&card_path) {
        Err(_) => problems.push("README.md: missing; a release needs its dataset card".into()),
        Ok(card) => {
            let mut seen = BTreeSet::new();
            if let Some(fm) = crate::verbs::verify::front_matter(&card) {
                for t in crate::stages::card::non_plain_yaml(fm, 2) {
                    let line = format!("README.md: {t}");
                    if seen.insert(line.clone()) {
                        problems.push(line);
                    }
                }
            }
            let listed: Vec<String> = match manifest {
                Some(m) => m.files.iter().map(|f| f.path.clone()).collect(),
                None => on_disk.to_vec(),
            };
            for p in crate::verbs::verify::card_problems(
                &card,
                &listed,
                &crate::verbs::verify::empty_parquet_files(manifest),
            ) {
                if seen.insert(p.clone()) {
                    problems.push(p);
                }
            }
        }
    }
}

/// The Hub's storage guidance for `locals` published under `path_in_repo`: a warning for each
/// folder over its files per folder, and one when the release is over its files per repo.
fn storage_guidance(path_in_repo: &str, locals: &[LocalFile]) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut per_folder: BTreeMap<String, usize> = BTreeMap::new();
    for f in locals {
        let folder = join_repo_path(path_in_repo, &f.rel);
        let folder = folder.rsplit_once('/').map(|(d, _)| d.to_string()).unwrap_or_default();
        *per_folder.entry(folder).or_default() += 1;
    }
    for (folder, n) in per_folder {
        if n > FOLDER_FILES_GUIDANCE {
            warnings.push(format!(
                "folder `{}` would hold {} files, over the Hub's guidance of {} files per folder",
                if folder.is_empty() { "/" } else { &folder },
                numbers::group_digits(n as u64),
                numbers::group_digits(FOLDER_FILES_GUIDANCE as u64)
            ));
        }
    }
    if locals.len() > REPO_FILES_GUIDANCE {
        warnings.push(format!(
            "the release has {} files, over the Hub's guidance of {} files per repo",
            numbers::group_digits(locals.len() as u64),
            numbers::group_digits(REPO_FILES_GUIDANCE as u64)
        ));
    }
    warnings
}

/// Every file under `dir`, relative, `/`-separated, sorted.
fn disk_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name().into_iter().flatten() {
        if e.file_type().is_file() {
            let rel = crate::core::names::relative_path(dir, e.path());
            if !rel.starts_with(".git/") && !rel.starts_with(".cache/") {
                out.push(rel);
            }
        }
    }
    out
}

/// Asks preupload which files go to LFS; refuses files the repo's `.gitignore` excludes.
async fn classify(client: &HubClient, opts: &PublishOptions, files: &mut [PlannedFile]) -> Result<()> {
    let mut ignored = Vec::new();
    for chunk in files.chunks_mut(BATCH) {
        let mut req = Vec::with_capacity(chunk.len());
        for f in chunk.iter() {
            req.push(PreuploadFile { path: f.path.clone(), size: f.bytes, sample: sample(&f.local)? });
        }
        let answers = client.preupload(&opts.repo, &opts.revision, &req, opts.create_pr).await?;
        let by_path: BTreeMap<&str, _> = answers.iter().map(|a| (a.path.as_str(), a)).collect();
        for f in chunk.iter_mut() {
            let a = by_path
                .get(f.path.as_str())
                .ok_or_else(|| Error::hub(format!("preupload: the Hub's answer does not mention {}", f.path)))?;
            // a zero-byte file is always regular (storage refuses empty objects)
            f.lfs = match a.upload_mode.as_str() {
                "lfs" => f.bytes > 0,
                "regular" => false,
                other => return Err(Error::hub(format!("preupload: unknown upload mode {other:?} for {}", f.path))),
            };
            if a.should_ignore {
                ignored.push(f.path.clone());
            }
        }
    }
    if !ignored.is_empty() {
        return Err(Error::Refused(format!(
            "the repo's .gitignore excludes {}: the published release would be incomplete; change the repo's .gitignore first",
            ignored.join(", ")
        )));
    }
    Ok(())
}

/// Base64 of a file's first 512 bytes.
fn sample(path: &Path) -> Result<String> {
    use std::io::Read;
    let mut buf = vec![0u8; 512];
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut n = 0;
    loop {
        let k = f.read(&mut buf[n..]).map_err(|e| Error::io(path, e))?;
        if k == 0 || n + k == buf.len() {
            n += k;
            break;
        }
        n += k;
    }
    Ok(base64::engine::general_purpose::STANDARD.encode(&buf[..n]))
}

/// The error for a Hub that takes uploads only through Xet when runpack cannot use it (`why`).
fn xet_only(client: &HubClient, repo: &RepoId, why: &str) -> Error {
    Error::hub(format!("the Hub at {} accepts uploads to {repo} only through Xet storage, {why}", client.endpoint()))
}

/// Why an LFS batch refusal that names Xet ends the publish.
fn refusal(transfer: Transfer, message: &str) -> String {
    if transfer == Transfer::Lfs {
        format!("and --transfer lfs forbids it (the LFS batch answered: {message}): publish with --transfer auto")
    } else {
        format!(
            "but it offers no Xet write token (xet-write-token answered HTTP 404; the LFS batch answered: {message})"
        )
    }
}

/// Uploads the LFS objects the Hub does not have yet: through Xet when the Hub offers it and
/// `opts.transfer` allows it, else through Git LFS (`basic` or `multipart`).
///
/// Xet is asked for as the Python client does since version 1.20 (`xet-write-token`, a 404
/// meaning no Xet), then as huggingface.js and hf-hub do (`xet` offered in the LFS batch; the
/// answer's `X-Xet-*` headers give the CAS and the token).
async fn upload_objects(
    client: &HubClient,
    opts: &PublishOptions,
    report: &mut PublishReport,
    scratch: &Path,
    progress: &dyn Progress,
) -> Result<()> {
    // one object per distinct sha256
    let mut objects: BTreeMap<String, (u64, PathBuf)> = BTreeMap::new();
    for f in report.files.iter().filter(|f| f.upload && f.lfs) {
        objects.entry(f.sha256.clone()).or_insert((f.bytes, f.local.clone()));
    }
    if objects.is_empty() {
        return Ok(());
    }
    let repo = &opts.repo;
    if opts.transfer != Transfer::Lfs {
        match client.xet_write_token(repo, &opts.revision, opts.create_pr).await {
            Ok(t) => {
                let refresh_url = client.xet_write_token_url(repo, &opts.revision, opts.create_pr);
                let access = XetAccess {
                    cas_url: t.cas_url,
                    access_token: t.access_token,
                    expires: t.exp,
                    refresh_headers: client.auth_headers_for(&refresh_url),
                    refresh_url,
                };
                return upload_xet(client, &access, &objects, report, &xet_cache(opts, scratch), progress).await;
            }
            // no Xet storage here: the LFS batch decides
            Err(Error::HubStatus { status: 404, .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let transfers: &[&str] =
        if opts.transfer == Transfer::Lfs { &["basic", "multipart"] } else { &["basic", "multipart", "xet"] };
    let list: Vec<(String, u64)> = objects.iter().map(|(k, (n, _))| (k.clone(), *n)).collect();
    let mut todo: Vec<(LfsObject, PathBuf)> = Vec::new();
    for chunk in list.chunks(BATCH) {
        let batch = match client.lfs_batch(repo, &opts.revision, chunk, transfers).await {
            Ok(b) => b,
            Err(Error::HubStatus { message, .. }) if message.to_lowercase().contains("xet") => {
                return Err(xet_only(client, repo, &refusal(opts.transfer, &client.scrub(&message))));
            }
            Err(e) => return Err(e),
        };
        if batch.transfer.as_deref() == Some("xet") {
            if opts.transfer == Transfer::Lfs {
                return Err(xet_only(client, repo, "and --transfer lfs forbids it: publish with --transfer auto"));
            }
            let access = batch_xet_access(client, repo, &batch)?;
            return upload_xet(client, &access, &objects, report, &xet_cache(opts, scratch), progress).await;
        }
        if opts.transfer == Transfer::Xet {
            return Err(Error::Refused(format!(
                "--transfer xet: the Hub at {} offers no Xet storage for {repo} (its xet-write-token endpoint \
                 answered HTTP 404 and its LFS batch answer picked `{}`); nothing was committed: publish with \
                 --transfer auto or --transfer lfs",
                client.endpoint(),
                batch.transfer.as_deref().unwrap_or("basic")
            )));
        }
        for obj in batch.objects {
            if let Some(err) = &obj.error {
                if err.message.to_lowercase().contains("xet") {
                    return Err(xet_only(client, repo, &refusal(opts.transfer, &client.scrub(&err.message))));
                }
                return Err(Error::hub(format!(
                    "LFS batch: the Hub refuses object {} ({} bytes): {} (code {})",
                    obj.oid,
                    obj.size,
                    client.scrub(&err.message),
                    err.code
                )));
            }
            let Some((_, path)) = objects.get(&obj.oid) else {
                return Err(Error::hub(format!(
                    "LFS batch: the Hub answered for an object not asked for: {}",
                    obj.oid
                )));
            };
            match &obj.actions {
                Some(a) if a.upload.is_some() => todo.push((obj.clone(), path.clone())),
                _ => report.reused_objects += 1,
            }
        }
    }
    let total: u64 = todo.iter().map(|(o, _)| o.size).sum();
    progress.start("uploading", Unit::Bytes, Some(total));
    let results: Vec<Result<u64>> = futures::stream::iter(todo.iter())
        .map(|(obj, path)| upload_one(client, obj, path, progress))
        .buffer_unordered(opts.concurrency.max(1))
        .collect()
        .await;
    progress.finish();
    for r in results {
        report.uploaded_bytes += r?;
        report.uploaded_objects += 1;
    }
    if !todo.is_empty() {
        report.transfer = Some(Transfer::Lfs);
    }
    Ok(())
}

/// The CAS and token an LFS batch answer that picked `xet` gives in its upload action's
/// headers (`X-Xet-Cas-Url`, `X-Xet-Access-Token`, `X-Xet-Token-Expiration`); the action's
/// `href` is where a fresh token is read.
fn batch_xet_access(client: &HubClient, repo: &RepoId, batch: &LfsBatch) -> Result<XetAccess> {
    let action = batch.objects.iter().find_map(|o| o.actions.as_ref().and_then(|a| a.upload.as_ref()));
    let header = |name: &str| {
        action.and_then(|a| a.header.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone()))
    };
    let (Some(a), Some(cas_url), Some(token), Some(exp)) = (
        action,
        header("X-Xet-Cas-Url"),
        header("X-Xet-Access-Token"),
        header("X-Xet-Token-Expiration").and_then(|v| v.trim().parse::<u64>().ok()),
    ) else {
        return Err(xet_only(
            client,
            repo,
            "but its LFS batch answer picked `xet` without the X-Xet-Cas-Url, X-Xet-Access-Token and \
             X-Xet-Token-Expiration headers that say where and how to upload; nothing was committed",
        ));
    };
    let _ = super::Token::new(token.clone());
    let refresh_url = if a.href.starts_with('/') { format!("{}{}", client.endpoint(), a.href) } else { a.href.clone() };
    Ok(XetAccess {
        cas_url,
        access_token: token,
        expires: exp,
        refresh_headers: client.auth_headers_for(&refresh_url),
        refresh_url,
    })
}

/// hf-xet's cache folder: `opts.xet_cache`, else one in the scratch folder.
fn xet_cache(opts: &PublishOptions, scratch: &Path) -> PathBuf {
    opts.xet_cache.clone().unwrap_or_else(|| scratch.join("xet"))
}

/// Uploads `objects` (sha256 → size, local file) through Xet and counts what was sent.
async fn upload_xet(
    client: &HubClient,
    access: &XetAccess,
    objects: &BTreeMap<String, (u64, PathBuf)>,
    report: &mut PublishReport,
    cache: &Path,
    progress: &dyn Progress,
) -> Result<()> {
    let files: Vec<XetFile> =
        objects.iter().map(|(sha, (n, path))| XetFile { path: path.clone(), bytes: *n, sha256: sha.clone() }).collect();
    let stats = super::xet::upload(access, &files, cache, client.retry_policy(), progress).await?;
    report.uploaded_objects += files.len();
    report.uploaded_bytes += stats.sent_bytes();
    report.transfer = Some(Transfer::Xet);
    report.xet.get_or_insert_with(XetStats::default).add(&stats);
    Ok(())
}

/// A request body streaming `len` bytes of `path` from `offset` (re-opened for every attempt).
fn file_body(path: &Path, offset: u64, len: u64) -> reqwest::Body {
    let state = (None::<tokio::fs::File>, path.to_path_buf(), len);
    let stream = futures::stream::try_unfold(state, move |(file, path, remaining)| async move {
        if remaining == 0 {
            return Ok::<_, std::io::Error>(None);
        }
        let mut f = match file {
            Some(f) => f,
            None => {
                let mut f = tokio::fs::File::open(&path).await?;
                f.seek(std::io::SeekFrom::Start(offset)).await?;
                f
            }
        };
        let n = remaining.min(1 << 20) as usize;
        let mut buf = vec![0u8; n];
        f.read_exact(&mut buf).await?;
        Ok(Some((buf, (Some(f), path, remaining - n as u64))))
    });
    reqwest::Body::wrap_stream(stream)
}

/// Uploads one object (basic or multipart), then calls its verify action. Returns its size.
// runpack's own code: the `hf-hub` crate (1.0.0) has no Git LFS upload
async fn upload_one(client: &HubClient, obj: &LfsObject, path: &Path, progress: &dyn Progress) -> Result<u64> {
    let actions = obj.actions.as_ref().expect("has actions");
    let upload = actions.upload.as_ref().expect("has upload");
    let size = std::fs::metadata(path).map_err(|e| Error::io(path, e))?.len();
    if size != obj.size {
        return Err(Error::hub(format!(
            "LFS batch: object {} is {} bytes, the Hub expects {}",
            obj.oid, size, obj.size
        )));
    }
    if let Some(chunk) = upload.header.get("chunk_size") {
        let chunk: u64 = chunk
            .trim()
            .parse()
            .ok()
            .filter(|c| *c > 0)
            .ok_or_else(|| Error::hub(format!("LFS batch: bad chunk_size {chunk:?} for {}", obj.oid)))?;
        let mut parts: Vec<(u64, &String)> =
            upload.header.iter().filter_map(|(k, v)| k.parse::<u64>().ok().map(|n| (n, v))).collect();
        parts.sort_by_key(|(n, _)| *n);
        let want = size.div_ceil(chunk);
        if parts.len() as u64 != want || parts.iter().enumerate().any(|(i, (n, _))| *n != i as u64 + 1) {
            return Err(Error::hub(format!(
                "LFS batch: {} part URLs for {} ({} bytes in parts of {}), expected {want}",
                parts.len(),
                obj.oid,
                size,
                chunk
            )));
        }
        let mut etags = Vec::with_capacity(parts.len());
        for (n, url) in parts {
            let offset = (n - 1) * chunk;
            let len = chunk.min(size - offset);
            let what = format!("upload part {n} of {}", path.display());
            let resp = client
                .send(&what, || {
                    client
                        .storage(reqwest::Method::PUT, url)
                        .header(reqwest::header::CONTENT_LENGTH, len)
                        .body(file_body(path, offset, len))
                })
                .await?;
            let etag =
                resp.headers().get(reqwest::header::ETAG).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
            if etag.is_empty() {
                return Err(Error::hub(format!("{what}: the storage answered without an ETag")));
            }
            etags.push(etag);
            progress.advance(len);
        }
        client.lfs_complete(&upload.href, &obj.oid, &etags).await?;
    } else {
        let what = format!("upload {}", path.display());
        client
            .send(&what, || {
                client
                    .storage(reqwest::Method::PUT, &upload.href)
                    .header(reqwest::header::CONTENT_LENGTH, size)
                    .body(file_body(path, 0, size))
            })
            .await?;
        progress.advance(size);
    }
    if let Some(v) = &actions.verify {
        client.lfs_verify(v, &obj.oid, size).await?;
    }
    Ok(size)
}

/// The operation lines of the commit (after the header).
fn operations(report: &PublishReport) -> Result<Vec<serde_json::Value>> {
    let mut ops = Vec::new();
    for f in report.files.iter().filter(|f| f.upload) {
        if f.lfs {
            ops.push(serde_json::json!({"key": "lfsFile", "value": {
                "path": f.path, "algo": "sha256", "oid": f.sha256, "size": f.bytes,
            }}));
        } else {
            let bytes = std::fs::read(&f.local).map_err(|e| Error::io(&f.local, e))?;
            ops.push(serde_json::json!({"key": "file", "value": {
                "path": f.path, "content": base64::engine::general_purpose::STANDARD.encode(bytes), "encoding": "base64",
            }}));
        }
    }
    for d in &report.deletions {
        ops.push(serde_json::json!({"key": "deletedFile", "value": {"path": d}}));
    }
    Ok(ops)
}

fn ndjson(summary: &str, description: &str, parent: &str, ops: &[serde_json::Value]) -> Vec<u8> {
    let header = serde_json::json!({"key": "header", "value": {
        "summary": summary, "description": description, "parentCommit": parent,
    }});
    let mut out = Vec::new();
    for line in std::iter::once(&header).chain(ops) {
        out.extend_from_slice(line.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

/// Where `tree` differs from the release (files missing or different, deletions not done).
fn differences(report: &PublishReport, tree: &RemoteTree) -> Vec<String> {
    let mut out = Vec::new();
    for f in &report.files {
        match tree.get(&f.path) {
            None => out.push(format!("`{}` missing", f.path)),
            Some(r) => {
                let same = match &r.lfs_sha256 {
                    Some(oid) => *oid == f.sha256 && r.size == f.bytes,
                    None => f.git_sha1.as_ref() == Some(&r.git_sha1),
                };
                if !same {
                    out.push(format!("`{}` differs", f.path));
                }
            }
        }
    }
    for d in &report.deletions {
        if tree.contains_key(d) {
            out.push(format!("`{d}` still present"));
        }
    }
    out
}

/// Paths of the plan whose remote state differs between two trees: the release's files (the
/// root card aside: it is merged again) and the files it deletes.
fn own_paths_changed(report: &PublishReport, before: &RemoteTree, after: &RemoteTree) -> Vec<String> {
    let own: BTreeSet<&str> = report
        .files
        .iter()
        .filter(|f| !f.root_card)
        .map(|f| f.path.as_str())
        .chain(report.deletions.iter().map(String::as_str))
        .collect();
    own.into_iter().filter(|p| before.get(*p) != after.get(*p)).map(str::to_string).collect()
}

/// True for a release's files that every release in a folder writes (`manifest.json`,
/// `SHA256SUMS`, `datapackage.json`, `croissant.json`): another release published into the
/// same folder replaces them, which is no change to this release's data.
fn shared_file(prefix: &str, path: &str) -> bool {
    let rel = if prefix.is_empty() { path } else { path.strip_prefix(&format!("{prefix}/")).unwrap_or(path) };
    matches!(rel, "manifest.json" | "SHA256SUMS" | "datapackage.json" | "croissant.json")
}

/// Why the commit is being sent again.
enum Retry {
    /// 412: the branch moved.
    Conflict,
    /// The answer was lost or was a transient error.
    Unknown(String),
}

/// What [`commit`] keeps across the plans of one publish.
struct CommitState {
    /// Commit requests sent.
    attempts: usize,
    /// How problems were resolved.
    notes: Vec<String>,
    /// The head the operations were planned against.
    parent: String,
    /// Waits between attempts.
    waits: backon::ExponentialBackoff,
}

fn commit_waits(client: &HubClient) -> backon::ExponentialBackoff {
    backon::ExponentialBuilder::default()
        .with_min_delay(client.retry_policy().min_delay)
        .with_max_delay(client.retry_policy().max_delay)
        .with_factor(2.0)
        .with_max_times(usize::MAX)
        .with_jitter()
        .build()
}

/// What one round of [`commit`] ended with.
enum Step {
    /// The commit landed (or the branch already holds the release).
    Done(super::client::CommitAnswer),
    /// The branch moved to this commit without touching the release's data: plan again.
    Replan(String),
}

/// Sends the commit and resolves refusals and lost answers (module docs).
// runpack's own code, not hf-hub's `create_commit`: that one re-sends a commit whose answer was
// lost without checking whether it landed (a duplicate commit), ignores `Retry-After` and does
// not re-plan on 412.
async fn commit(
    client: &HubClient,
    opts: &PublishOptions,
    report: &PublishReport,
    ops: &[serde_json::Value],
    state: &mut CommitState,
) -> Result<Step> {
    let repo = &opts.repo;
    let prefix = &opts.path_in_repo;
    let what = format!("commit to {repo}@{}", opts.revision);
    let description = format!(
        "runpack release {}: {} files, manifest.json sha256 {}",
        report.release,
        report.files.iter().filter(|f| prefix.is_empty() || !f.root_card).count(),
        report.files.iter().find(|f| f.path.ends_with("manifest.json")).map(|f| f.sha256.as_str()).unwrap_or("")
    );
    let before = match &report.head {
        Some(h) => own_tree(client, repo, h, prefix).await?,
        None => RemoteTree::new(),
    };
    loop {
        state.attempts += 1;
        let attempts = state.attempts;
        let body = ndjson(&report.commit_message, &description, &state.parent, ops);
        let failure = match client.commit_once(repo, &opts.revision, body, opts.create_pr, opts.commit_timeout).await {
            Ok(a) => return Ok(Step::Done(a)),
            Err(f) => f,
        };
        let give_up = |why: String| {
            Error::hub(format!(
                "{what}: {why}; gave up after {attempts} commit request{}",
                if attempts == 1 { "" } else { "s" }
            ))
        };
        let retry = match failure.status() {
            Some(429) => {
                if attempts >= opts.max_commit_attempts {
                    return Err(give_up(failure.describe()));
                }
                let wait = match &failure {
                    Failure::Status { wait: Some(w), .. } => *w,
                    _ => state.waits.next().unwrap_or(Duration::from_secs(1)),
                };
                let note = format!(
                    "rate limited (HTTP 429) on the commit; waited {:.1} s{} and sent the same commit again",
                    wait.as_secs_f64(),
                    if matches!(&failure, Failure::Status { wait: Some(_), .. }) { " as the Hub asked" } else { "" }
                );
                tracing::warn!("{what}: {}; {note}", failure.describe());
                state.notes.push(note);
                tokio::time::sleep(wait).await;
                continue;
            }
            Some(412) => Retry::Conflict,
            _ if failure.retryable() => Retry::Unknown(failure.describe()),
            _ => return Err(failure.into_error(&what)),
        };
        if opts.create_pr {
            // a pull request opened by the commit whose answer was lost holds the release
            if let Some((num, head)) = open_pull_request(client, opts, report).await? {
                let url = pull_request_url(client, repo, num);
                let note = format!(
                    "the commit's answer was lost ({}), but pull request #{num} holds the release: it was opened, not \
                     sent again",
                    failure.describe()
                );
                tracing::warn!("{what}: {note}");
                state.notes.push(note);
                let answer =
                    super::client::CommitAnswer { commit_oid: head, commit_url: None, pull_request_url: Some(url) };
                return Ok(Step::Done(answer));
            }
            if attempts >= opts.max_commit_attempts {
                return Err(give_up(failure.describe()));
            }
            let note = format!(
                "the commit failed ({}) and no open pull request holds the release: sent it again",
                failure.describe()
            );
            tracing::warn!("{what}: {note}");
            state.notes.push(note);
            tokio::time::sleep(state.waits.next().unwrap_or(Duration::from_secs(1))).await;
            continue;
        }
        // read the branch again before deciding anything
        let now = client.revision(repo, &opts.revision).await?;
        let parent = state.parent.clone();
        if now == parent {
            if let Retry::Unknown(why) = &retry {
                let note = format!("the commit failed ({why}) and the branch did not move: sent it again");
                tracing::warn!("{what}: {note}");
                state.notes.push(note);
            }
        } else if let Some(step) = branch_moved(client, opts, report, &before, &retry, &failure, state, &now).await? {
            return Ok(step);
        }
        if attempts >= opts.max_commit_attempts {
            return Err(match retry {
                Retry::Conflict => Error::Refused(format!(
                    "{what}: the branch kept moving: {attempts} commit requests were refused with HTTP 412 \
                     (someone else keeps committing); nothing was committed; re-run publish later"
                )),
                Retry::Unknown(why) => give_up(why),
            });
        }
        tokio::time::sleep(state.waits.next().unwrap_or(Duration::from_secs(1))).await;
        if now != parent {
            return Ok(Step::Replan(now));
        }
    }
}

/// What a failed commit (`retry`: refused with 412, or its answer lost) means once the branch
/// has moved to `now`: the commit landed (the branch holds the release exactly: `Done`), or
/// someone else changed the release's own files (refused, naming them), or the move touched
/// nothing of this release (`None`: noted, and the caller commits again on top of it).
#[allow(clippy::too_many_arguments)] // the failed attempt's whole context, none derived from another
async fn branch_moved(
    client: &HubClient,
    opts: &PublishOptions,
    report: &PublishReport,
    before: &RemoteTree,
    retry: &Retry,
    failure: &Failure,
    state: &mut CommitState,
    now: &str,
) -> Result<Option<Step>> {
    let repo = &opts.repo;
    let prefix = &opts.path_in_repo;
    let what = format!("commit to {repo}@{}", opts.revision);
    let parent = state.parent.clone();
    let after = own_tree(client, repo, now, prefix).await?;
    if differences(report, &after).is_empty() {
        let note = match retry {
            Retry::Unknown(why) => format!(
                "the commit's answer was lost ({why}), but the branch head {} holds the release exactly: \
                 the commit landed, not sent again",
                short(now)
            ),
            Retry::Conflict => format!("the branch moved to {} and already holds the release", short(now)),
        };
        tracing::warn!("{what}: {note}");
        state.notes.push(note);
        let answer =
            super::client::CommitAnswer { commit_oid: now.to_string(), commit_url: None, pull_request_url: None };
        return Ok(Some(Step::Done(answer)));
    }
    let mut changed = own_paths_changed(report, before, &after);
    // another release's manifest (and sums) in this folder is no change to this release
    if !changed.is_empty() && changed.iter().all(|p| shared_file(prefix, p)) {
        let mpath = join_repo_path(prefix, "manifest.json");
        if let Some(Ok(m)) = remote_manifest(client, repo, now, &mpath).await?
            && !report.release.starts_with(&format!("{} ", m.name))
        {
            changed.clear();
        }
    }
    if !changed.is_empty() {
        let list = changed.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ");
        return Err(Error::Refused(match retry {
            Retry::Conflict => format!(
                "{what}: HTTP 412: remote changed {list} since {} (the branch is now at {}); nothing was committed; re-run publish",
                short(&parent),
                short(now)
            ),
            Retry::Unknown(why) => format!(
                "{what}: {why}; the branch moved from {} to {} and differs from the release: {}; \
                 not committed again: re-run publish to complete it",
                short(&parent),
                short(now),
                differences(report, &after).join(", ")
            ),
        }));
    }
    let note = format!(
        "the branch moved from {} to {} without touching this release's data: merged the card again and sent \
         the commit on top of it",
        short(&parent),
        short(now)
    );
    tracing::warn!("{what}: {}; {note}", failure.describe());
    state.notes.push(note);
    Ok(None)
}

/// Tags `commit`; an existing tag is left where it is (a warning when that is elsewhere).
async fn tag(
    client: &HubClient,
    repo: &RepoId,
    commit: &str,
    name: &str,
    release: &str,
    warnings: &mut Vec<String>,
) -> Result<String> {
    match client.create_tag(repo, commit, name, &format!("runpack release {release}")).await {
        Ok(TagCreated::New) => Ok(format!("tagged {} as {name}", short(commit))),
        Ok(TagCreated::Existed) => {
            let refs = client.refs(repo).await.unwrap_or_default();
            match refs.tags.iter().find(|t| t.name == name) {
                Some(t) if t.target_commit == commit => Ok(format!("tag {name} already points at {}", short(commit))),
                Some(t) => {
                    warnings.push(format!(
                        "tag {name} already exists at {} and was not moved; pass --tag <name> to tag this commit",
                        short(&t.target_commit)
                    ));
                    Ok(format!("tag {name} left at {}", short(&t.target_commit)))
                }
                None => Ok(format!("tag {name} exists")),
            }
        }
        Err(e) => {
            warnings.push(format!("the commit landed, but tagging it failed: {e}"));
            Ok(format!("tag {name} not created"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_without_licence_or_with_a_todo_is_said() {
        let done = "---\nlicense: mit\nconfigs: []\n---\n# runs\n\nRuns of ours.\n";
        assert!(unfinished_card(done).is_empty());
        let placeholder = "---\nconfigs: []\n---\n# runs\n\nTODO: what the runs are\n\n## Tables\n";
        let said = unfinished_card(placeholder);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].contains("has no licence") && said[1].contains("still holds a TODO"), "{said:?}");
        let cite = "---\nlicense: mit\n---\n# runs\n\nRuns.\n\n## Citation\n\nTODO: how to cite\n";
        assert_eq!(unfinished_card(cite).len(), 1);
        let named = "---\nlicense: mit\npretty_name: TODO name\n---\n# runs\n\nRuns.\n";
        assert_eq!(unfinished_card(named).len(), 1);
        // a TODO in the data the card describes is the data's
        let data = "---\nlicense: mit\n---\n# runs\n\nRuns.\n\n## Tables\n\n- `note`: TODO in 3 rows\n";
        assert!(unfinished_card(data).is_empty());
        let commented = "---\nlicense: mit\n# TODO: a comment of the metadata\n---\n# runs\n\nRuns.\n";
        assert!(unfinished_card(commented).is_empty());
        assert_eq!(unfinished_card("---\nlicense:\n---\n").len(), 1, "an empty licence is none");
    }

    #[test]
    fn versions_are_ordered_by_semver_else_by_numbers() {
        use std::cmp::Ordering::*;
        assert_eq!(version_order("2.0.0", "1.10.0"), Some(Greater));
        assert_eq!(version_order("1.0.0-rc.1", "1.0.0"), Some(Less));
        assert_eq!(version_order("2024.10", "2024.9"), Some(Greater));
        assert_eq!(version_order("1.0", "1.0"), Some(Equal));
        assert_eq!(version_order("nightly", "1.0.0"), None);
    }

    #[test]
    fn the_files_every_release_of_a_folder_writes() {
        assert!(shared_file("", "manifest.json") && shared_file("runs/a", "runs/a/SHA256SUMS"));
        assert!(shared_file("runs/a", "runs/a/datapackage.json"));
        assert!(!shared_file("", "data/metrics.parquet") && !shared_file("runs/a", "runs/a/README.md"));
    }

    #[test]
    fn ndjson_header_first() {
        let ops = vec![serde_json::json!({"key": "deletedFile", "value": {"path": "a"}})];
        let body = String::from_utf8(ndjson("t", "d", "abc", &ops)).unwrap();
        let lines: Vec<&str> = body.lines().collect();
        assert_eq!(lines.len(), 2);
        let h: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(h["key"], "header");
        assert_eq!(h["value"]["parentCommit"], "abc");
    }
}
