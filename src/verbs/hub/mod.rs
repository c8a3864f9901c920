//! The Hugging Face Hub end of a release: publish it, prove what the Hub holds, read it back.
//!
//! In: a release folder (see [`crate::stages::release`]), a dataset repo on a Hub endpoint, an optional
//! access [`Token`], and the local Hugging Face cache folder. Out: one commit on the Hub
//! ([`publish`]), a comparison of the Hub's files with a manifest ([`remote`]), and a verified
//! copy of a published release in the cache ([`cache`]) that [`crate::sql::session`] can read.
//! Side effects: HTTP requests to the endpoint (and to the storage URLs it hands out), files in
//! the cache folder. The library reads no environment variables: the command line resolves
//! `HF_TOKEN`, `HF_ENDPOINT`, `HF_HOME`, `HF_HUB_CACHE` and `HF_HUB_OFFLINE` and passes values in.
//!
//! The protocol is the one the official `huggingface_hub` client speaks (its `_commit_api.py`,
//! `lfs.py`, `file_download.py`); Xet uploads go through the `hf-xet` crate, as under Python:
//!
//! ```text
//! publish:  revision ─► tree ─► validate-yaml ─► preupload ─► xet-write-token ─► hf-xet (new chunks)
//!           | 404: LFS batch ─► PUT (basic | multipart + completion) ─► verify
//!           ─► ONE NDJSON commit (parentCommit = head read) ─► tree ─► tag
//! verify:   revision ─► tree (paginated) ─► [resolve downloads] ─► compare with the manifest
//! query:    revision ─► tree ─► resolve downloads into blobs/ + snapshots/ ─► sha256 check ─► SQL
//! ```
//!
//! - [`client`]: HTTP, retries (408/429/5xx with backoff, `Retry-After` and `RateLimit`
//!   honoured; other 4xx fatal at once) and the endpoints, one method each.
//! - [`publish`]: pre-flight checks, the upload plan, the commit and its recovery rules.
//! - [`remote`]: the remote tree as path → size, git blob SHA-1, LFS SHA-256; remote verify.
//! - [`cache`]: the cache layout shared with the Python client (hub-docs `local-cache.md`).
//! - [`xet`]: uploads to the Hub's Xet storage through `hf-xet`.

pub mod cache;
pub mod client;
pub mod publish;
pub mod remote;
pub mod xet;

use std::fmt;
use std::time::Duration;

use crate::core::error::{Error, Result};

pub use client::HubClient;

/// The Hub's default endpoint.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// An access token. Its `Debug` output is redacted and it has no `Display`, so it cannot end up
/// in a message, a log line or a file by accident; only the HTTP layer reads it.
#[derive(Clone)]
pub struct Token(String);

/// `text` with every secret this process holds replaced: a token read ([`Token::new`]) by
/// `<token>`, an object store's credentials by `***` ([`crate::core::secrets`]).
pub use crate::core::secrets::redact;

impl Token {
    /// Wraps a token; surrounding whitespace (a token file's final newline) is removed.
    /// Returns `None` for an empty string. The secret is remembered for [`redact`].
    pub fn new(token: impl Into<String>) -> Option<Token> {
        let t = token.into().trim().to_string();
        if t.is_empty() {
            return None;
        }
        crate::core::secrets::remember(&t, "<token>");
        Some(Token(t))
    }

    /// Checks that the token can be sent in an HTTP header: visible ASCII only (RFC 9110 §5.5
    /// allows nothing else to be relied on), so a token file with a stray character is refused
    /// rather than the request going out without a token.
    ///
    /// Errors: [`Error::Config`] naming `origin` (where the token came from) and the position
    /// of the first character that is not allowed, never the token itself.
    pub fn check(&self, origin: &str) -> Result<()> {
        match self.0.char_indices().find(|(_, c)| !c.is_ascii_graphic()) {
            None => Ok(()),
            Some((i, c)) => Err(Error::config(
                origin,
                format!(
                    "the token holds a character that cannot be sent in an HTTP header ({} at character {} of {})",
                    c.escape_unicode(),
                    self.0[..i].chars().count() + 1,
                    self.0.chars().count()
                ),
            )),
        }
    }

    /// The secret, for the `Authorization` header and for scrubbing server messages.
    pub(crate) fn secret(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// A dataset repository id, `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RepoId {
    /// User or organisation.
    pub namespace: String,
    /// Repository name.
    pub name: String,
}

impl RepoId {
    /// Parses `namespace/name` (each part made of letters, digits, `-`, `_`, `.`).
    ///
    /// Errors: [`Error::Config`] naming the value.
    pub fn parse(s: &str) -> Result<RepoId> {
        let ok = |p: &str| {
            !p.is_empty()
                && p.len() <= 96
                && !p.starts_with(['-', '.'])
                && p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        match s.split_once('/') {
            Some((ns, name)) if ok(ns) && ok(name) => Ok(RepoId { namespace: ns.into(), name: name.into() }),
            _ => Err(Error::config(
                "--repo",
                format!("{s:?} is not a repo id: expected <namespace>/<name> (letters, digits, -, _, .)"),
            )),
        }
    }
}

impl fmt::Display for RepoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A published release named by URL: `hf://datasets/<namespace>/<name>[@<revision>][/<path>]`.
///
/// The revision defaults to `main`; a revision holding `/` is written URL-encoded
/// (`@refs%2Fpr%2F1`) or as `refs/pr/<n>`. `path` is the folder of the release inside the
/// repo (empty for the repo root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubTarget {
    /// The dataset repo.
    pub repo: RepoId,
    /// Branch, tag or commit.
    pub revision: String,
    /// Folder inside the repo, without leading or trailing `/` (empty: the root).
    pub path: String,
}

impl HubTarget {
    /// True when `s` uses the `hf://` scheme.
    pub fn is_hub_url(s: &str) -> bool {
        s.starts_with("hf://")
    }

    /// Parses an `hf://datasets/…` URL.
    ///
    /// Errors: [`Error::Config`] for another repo type or a malformed URL.
    pub fn parse(s: &str) -> Result<HubTarget> {
        let bad = |why: &str| {
            Error::config(s, format!("{why}; expected hf://datasets/<namespace>/<name>[@<revision>][/<path>]"))
        };
        let rest = s.strip_prefix("hf://").ok_or_else(|| bad("not an hf:// URL"))?;
        let rest = rest.strip_prefix("datasets/").ok_or_else(|| bad("only dataset repos are supported"))?;
        let (ns, rest) = rest.split_once('/').ok_or_else(|| bad("no repo name"))?;
        let (name_rev, path) = match rest.split_once('@') {
            Some((name, after)) => {
                // the revision ends at the next `/`, except for refs/pr/<n> and refs/convert/<x>
                let (rev, path) = if let Some(r) = after.strip_prefix("refs/") {
                    let mut parts = r.splitn(3, '/');
                    let kind = parts.next().unwrap_or("");
                    let id = parts.next().unwrap_or("");
                    let path = parts.next().unwrap_or("");
                    (format!("refs/{kind}/{id}"), path.to_string())
                } else {
                    match after.split_once('/') {
                        Some((rev, path)) => (rev.to_string(), path.to_string()),
                        None => (after.to_string(), String::new()),
                    }
                };
                ((name.to_string(), Some(percent_decode(&rev))), path)
            }
            None => match rest.split_once('/') {
                Some((name, path)) => ((name.to_string(), None), path.to_string()),
                None => ((rest.to_string(), None), String::new()),
            },
        };
        let repo = RepoId::parse(&format!("{ns}/{}", name_rev.0)).map_err(|_| bad("bad repo id"))?;
        let revision = name_rev.1.unwrap_or_else(|| "main".into());
        if revision.is_empty() {
            return Err(bad("empty revision"));
        }
        revision_name(&revision, s)?;
        let path = repo_folder(&path, s)?;
        Ok(HubTarget { repo, revision, path })
    }
}

impl fmt::Display for HubTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hf://datasets/{}@{}", self.repo, self.revision)?;
        if !self.path.is_empty() {
            write!(f, "/{}", self.path)?;
        }
        Ok(())
    }
}

/// How transient failures are retried (408, 429, 500, 502, 503, 504, network errors).
///
/// The waits grow exponentially from `min_delay` to `max_delay`, with jitter. A 429 whose
/// `RateLimit` header says `r=0` waits its `t` seconds; otherwise an integer `Retry-After`
/// (seconds) is waited. Server-requested waits longer than `max_server_wait` fail at once
/// (the message says how long the server asked for). The defaults follow the Python client
/// (5 retries, 1 s doubling to 8 s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: usize,
    /// First backoff wait.
    pub min_delay: Duration,
    /// Longest backoff wait.
    pub max_delay: Duration,
    /// Longest wait accepted from `Retry-After` or `RateLimit`.
    pub max_server_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 5,
            min_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(8),
            max_server_wait: Duration::from_secs(300),
        }
    }
}

/// Where and how to reach the Hub.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// Endpoint URL without a trailing `/` (default [`DEFAULT_ENDPOINT`]).
    pub endpoint: String,
    /// Access token; required to publish, optional to read public repos.
    pub token: Option<Token>,
    /// Retries of transient failures.
    pub retry: RetryPolicy,
    /// Time allowed for one API request (not for uploads and downloads, which have an idle
    /// timeout of the same length instead).
    pub request_timeout: Duration,
}

impl HubConfig {
    /// A configuration for `endpoint` with default retries and a 60 s request timeout.
    pub fn new(endpoint: impl Into<String>, token: Option<Token>) -> HubConfig {
        HubConfig {
            endpoint: endpoint.into().trim_end_matches('/').to_string(),
            token,
            retry: RetryPolicy::default(),
            request_timeout: Duration::from_secs(60),
        }
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters (`refs/pr/1` → `refs%2Fpr%2F1`).
pub(crate) fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Percent-encodes each segment of a `/`-separated path, keeping the `/`.
pub(crate) fn encode_path(s: &str) -> String {
    s.split('/').map(encode_component).collect::<Vec<_>>().join("/")
}

/// Decodes `%XX` escapes (invalid escapes are kept as they are).
pub(crate) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A folder inside a repo as the Hub names files: `path` without the `/`s around it, checked
/// to stay inside the repo. `what` names where the path was given, for the error.
///
/// Errors: [`Error::Config`] for an empty segment (`a//b`), a `.` or `..` segment, a `\\`, or
/// a `.git` or `.cache` segment (folders `huggingface_hub` refuses to commit into).
pub(crate) fn repo_folder(path: &str, what: &str) -> Result<String> {
    let folder = path.trim_matches('/');
    if folder.is_empty() {
        return Ok(String::new());
    }
    let bad = |why: &str| Err(Error::config(what, format!("{path:?} is not a folder of the repo: {why}")));
    if folder.contains('\\') {
        return bad("a repo path separates folders with `/`, not `\\`");
    }
    for segment in folder.split('/') {
        match segment {
            "" => return bad("it has an empty folder name (`//`)"),
            "." | ".." => return bad("`.` and `..` are not folders inside the repo"),
            ".git" | ".cache" => return bad("the Hub keeps `.git` and `.cache` for itself"),
            _ => {}
        }
    }
    Ok(folder.to_string())
}

/// Checks `revision` as git checks a ref name (git-check-ref-format), which is also what keeps
/// it inside the cache's `refs/` folder: no `.` or `..` part, no part that starts with `.` or
/// ends with `.lock`, no empty part, no `..` anywhere, no control character, space, `~`, `^`,
/// `:`, `?`, `*`, `[`, `\\` or `@{`, no `/` at either end, no `.` at the end, and not `@`
/// alone.
///
/// Errors: [`Error::Config`] naming `what` (where the revision was given) and the rule.
pub(crate) fn revision_name(revision: &str, what: &str) -> Result<()> {
    let bad = |why: &str| Err(Error::config(what, format!("{revision:?} is not a revision name: {why}")));
    if revision.is_empty() {
        return bad("it is empty");
    }
    if revision.chars().any(|c| c.is_control() || " ~^:?*[\\".contains(c)) || revision.contains("@{") {
        return bad("a ref name holds no blank, control character, `~`, `^`, `:`, `?`, `*`, `[`, `\\` or `@{`");
    }
    for part in revision.split('/') {
        if part.is_empty() {
            return bad("it has an empty part (a `/` at an end, or `//`)");
        }
        if part.starts_with('.') || part.ends_with(".lock") {
            return bad("no part of a ref name starts with `.` (`..` included) or ends with `.lock`");
        }
    }
    if revision.contains("..") {
        return bad("a ref name holds no `..`");
    }
    if revision.ends_with('.') || revision == "@" {
        return bad("a ref name does not end with `.`, and is not `@` alone");
    }
    Ok(())
}

/// Joins a folder inside the repo and a path inside the release.
pub(crate) fn join_repo_path(prefix: &str, rel: &str) -> String {
    if prefix.is_empty() { rel.to_string() } else { format!("{prefix}/{rel}") }
}

/// True for a full 40-hex commit id.
pub(crate) fn is_commit_id(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The first 7 characters of a commit id, as git shows it.
pub(crate) fn short(commit: &str) -> &str {
    &commit[..commit.len().min(7)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_redacted() {
        let t = Token::new("hf_secret\n").unwrap();
        assert_eq!(format!("{t:?}"), "Token(<redacted>)");
        assert_eq!(t.secret(), "hf_secret");
        assert!(Token::new("  ").is_none());
    }

    #[test]
    fn a_token_that_cannot_be_sent_is_refused_and_any_token_is_redacted() {
        let t = Token::new("hf_SECRET\ntoken123").unwrap();
        let e = t.check("HF_TOKEN").unwrap_err().to_string();
        assert!(e.contains("HF_TOKEN") && e.contains("character 10 of 18"), "{e}");
        assert!(!e.contains("SECRET"), "{e}");
        assert!(Token::new("hf_fine_token").unwrap().check("HF_TOKEN").is_ok());
        assert_eq!(redact("request id req-Bearer hf_SECRET\ntoken123"), "request id req-Bearer <token>");
    }

    #[test]
    fn hub_urls() {
        let t = HubTarget::parse("hf://datasets/acme/toy").unwrap();
        assert_eq!((t.repo.to_string(), t.revision.as_str(), t.path.as_str()), ("acme/toy".into(), "main", ""));
        let t = HubTarget::parse("hf://datasets/acme/ci-runs@v1.0/runs/a/").unwrap();
        assert_eq!((t.revision.as_str(), t.path.as_str()), ("v1.0", "runs/a"));
        let t = HubTarget::parse("hf://datasets/acme/toy@refs/pr/3/data").unwrap();
        assert_eq!((t.revision.as_str(), t.path.as_str()), ("refs/pr/3", "data"));
        let t = HubTarget::parse("hf://datasets/acme/toy@refs%2Fpr%2F3").unwrap();
        assert_eq!(t.revision, "refs/pr/3");
        assert_eq!(t.to_string(), "hf://datasets/acme/toy@refs/pr/3");
        assert!(HubTarget::parse("hf://models/acme/toy").is_err());
        assert!(HubTarget::parse("hf://datasets/acme").is_err());
        assert!(RepoId::parse("acme/../x").is_err());
    }

    #[test]
    fn encoding() {
        assert_eq!(encode_component("refs/pr/1"), "refs%2Fpr%2F1");
        assert_eq!(encode_path("data/a b.parquet"), "data/a%20b.parquet");
        assert_eq!(percent_decode("refs%2Fpr%2F1"), "refs/pr/1");
        assert_eq!(percent_decode("100%"), "100%");
    }
}
