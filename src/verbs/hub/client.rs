//! HTTP to the Hub: one method per endpoint, retries, and error messages.
//!
//! In: a [`HubConfig`]. Out: typed answers of the Hub API, or an
//! [`Error::HubStatus`] / [`Error::Hub`] naming the step, the status, the server's message and
//! the request id. The token goes only into `Authorization` headers of requests to the
//! endpoint (marked sensitive, so `Debug` output of a request hides it); it is never sent to
//! the pre-signed storage URLs the Hub hands out, and it is scrubbed from server messages.
//!
//! Retry rules (`HubClient::send`, after huggingface_hub `utils/_http.py` `http_backoff`):
//! 408, 429, 500, 502, 503, 504 and network errors are retried with backoff
//! ([`RetryPolicy`]); every other 4xx is permanent and fails at once. The
//! commit POST is never sent through this loop (`HubClient::send_once`): a lost answer is
//! resolved by [`super::publish`] by re-reading the branch.
//!
//! Why this is runpack's own code and not the `hf-hub` crate's `HFClient` (1.0.0): hf-hub's
//! errors keep the status, the body, `X-Request-Id`, `X-Error-Code`, `X-Error-Message` and the
//! `Retry-After` of a 429, and no other header. With hf-hub's retries off and this module's loop
//! around its repo-info call, the test `a_rate_limited_read_waits_as_long_as_the_hub_asks` fails:
//! a read the Hub limits for 2 s (`RateLimit: "api";r=0;t=2`, or a 503 with `Retry-After: 2`)
//! is sent again after about 30 ms. Every other Hub test passed that way. The Hub's `RateLimit`
//! gives the seconds until its 5-minute window resets, so every call here needs the headers.
//! Other gaps, per endpoint: its tree and paths-info entries read `lfs.sha256` where the Hub sends
//! `lfs.oid` (the digest comes back as `None`), and its pages send the token to any `Link` URL;
//! it has no Git LFS upload; its commit is re-sent without checking whether a lost one landed.
//! Xet uploads use `hf-xet`, the crate `hf-hub` uses too ([`super::xet`]).

use std::time::Duration;

use backon::BackoffBuilder;
use reqwest::header::{HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};

use super::{HubConfig, RepoId, RetryPolicy, Token, encode_component, encode_path};
use crate::core::error::{Error, Result};

/// Media type of the git-lfs batch API.
const LFS_JSON: &str = "application/vnd.git-lfs+json";

/// A client for one Hub endpoint.
#[derive(Debug, Clone)]
pub struct HubClient {
    http: reqwest::Client,
    endpoint: String,
    token: Option<Token>,
    retry: RetryPolicy,
    request_timeout: Duration,
}

/// Why one request failed (before deciding whether to retry it).
#[derive(Debug, Clone)]
pub(crate) enum Failure {
    /// The server answered with an error status.
    Status {
        /// HTTP status code.
        status: u16,
        /// The server's message.
        message: String,
        /// `X-Request-Id` or a CDN trace id.
        request_id: Option<String>,
        /// `X-Error-Code`.
        error_code: Option<String>,
        /// Wait the server asked for (`RateLimit` with `r=0`, or an integer `Retry-After`).
        wait: Option<Duration>,
    },
    /// No answer: connection refused or reset, timeout, body cut short.
    Network {
        /// What the HTTP stack said (with its causes).
        message: String,
        /// True when the request timed out.
        timeout: bool,
        /// The host name, when the resolver says it does not exist (a misspelled endpoint,
        /// or a machine without a network whose resolver answers so): asking again gives the
        /// same answer. A resolver that cannot be reached is retried.
        unknown_host: Option<String>,
    },
}

/// Whether a transport error's text says the host name does not exist: getaddrinfo's
/// `EAI_NONAME` and `EAI_NODATA` as glibc, macOS and Windows word them (`EAI_AGAIN`, "Temporary
/// failure in name resolution", is left to the retries).
fn unknown_host(message: &str) -> bool {
    message.contains("dns error")
        && [
            "Name or service not known",
            "No address associated with hostname",
            "nodename nor servname provided",
            "No such host is known",
        ]
        .iter()
        .any(|m| message.contains(m))
}

impl Failure {
    /// True for failures worth retrying: 408, 429, 500, 502, 503, 504 and network errors.
    pub(crate) fn retryable(&self) -> bool {
        match self {
            Failure::Status { status, .. } => matches!(status, 408 | 429 | 500 | 502 | 503 | 504),
            Failure::Network { unknown_host, .. } => unknown_host.is_none(),
        }
    }

    /// The status code, when the server answered.
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            Failure::Status { status, .. } => Some(*status),
            Failure::Network { .. } => None,
        }
    }

    /// One-line description.
    pub(crate) fn describe(&self) -> String {
        match self {
            Failure::Status { status: 429, message, .. } => format!("rate limited (HTTP 429: {message})"),
            Failure::Status { status, message, request_id, .. } => format!(
                "HTTP {status}: {message}{}",
                request_id.as_ref().map(|r| format!(" (request id {r})")).unwrap_or_default()
            ),
            Failure::Network { message, timeout: true, .. } => format!("no answer in time ({message})"),
            Failure::Network { message, .. } => format!("no answer ({message})"),
        }
    }

    /// The library error for this failure of step `what`.
    pub(crate) fn into_error(self, what: &str) -> Error {
        match self {
            Failure::Status { status, message, request_id, error_code, .. } => {
                Error::HubStatus { what: what.to_string(), status, message, request_id, error_code }
            }
            Failure::Network { message, unknown_host: Some(host), .. } => Error::hub(format!(
                "{what}: the host name {host} is not known to this machine's resolver (no network, or a misspelled \
                 HF_ENDPOINT?): {message}"
            )),
            Failure::Network { message, .. } => Error::hub(format!("{what}: no answer from the Hub: {message}")),
        }
    }
}

/// `GET /api/datasets/{repo}/revision/{rev}`: the commit a revision points at.
#[derive(Debug, Clone, Deserialize)]
pub struct RepoInfo {
    /// The 40-hex commit id.
    pub sha: Option<String>,
    /// Whether the repo is private.
    #[serde(default)]
    pub private: bool,
}

/// One entry of a tree listing or paths-info answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct TreeEntry {
    /// `file` or `directory`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Path in the repo.
    pub path: String,
    /// Git blob SHA-1 (for an LFS file: of its pointer file).
    #[serde(default)]
    pub oid: String,
    /// Size in bytes (the real size, for LFS files too).
    #[serde(default)]
    pub size: u64,
    /// Present for files stored in LFS.
    #[serde(default)]
    pub lfs: Option<LfsInfo>,
    /// Present for files stored in Xet.
    #[serde(default, rename = "xetHash")]
    pub xet_hash: Option<String>,
}

/// The `lfs` object of a tree entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct LfsInfo {
    /// SHA-256 of the content, lowercase hex.
    pub oid: String,
    /// Size in bytes.
    pub size: u64,
}

/// One file of a preupload request.
#[derive(Debug, Clone, Serialize)]
pub struct PreuploadFile {
    /// Path in the repo.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Base64 of the first 512 bytes.
    pub sample: String,
}

/// The Hub's answer for one file of a preupload request.
#[derive(Debug, Clone, Deserialize)]
pub struct PreuploadAnswer {
    /// Path in the repo.
    pub path: String,
    /// `lfs` or `regular`.
    #[serde(rename = "uploadMode")]
    pub upload_mode: String,
    /// True when the repo's `.gitignore` excludes the path.
    #[serde(default, rename = "shouldIgnore")]
    pub should_ignore: bool,
    /// The remote file's oid at the revision (SHA-256 for LFS, git blob SHA-1 otherwise).
    #[serde(default)]
    pub oid: Option<String>,
}

/// One object of an LFS batch answer.
#[derive(Debug, Clone, Deserialize)]
pub struct LfsObject {
    /// SHA-256, lowercase hex.
    pub oid: String,
    /// Size in bytes.
    #[serde(default)]
    pub size: u64,
    /// What to do; absent when the Hub already stores the object.
    #[serde(default)]
    pub actions: Option<LfsActions>,
    /// A per-object refusal (sent with HTTP 200).
    #[serde(default)]
    pub error: Option<LfsError>,
}

/// `actions` of an LFS object.
#[derive(Debug, Clone, Deserialize)]
pub struct LfsActions {
    /// Where to upload (basic: one PUT; multipart: `header.chunk_size` and part URLs).
    pub upload: Option<LfsAction>,
    /// Where to confirm the upload.
    pub verify: Option<LfsAction>,
}

/// One LFS action.
#[derive(Debug, Clone, Deserialize)]
pub struct LfsAction {
    /// URL.
    pub href: String,
    /// Headers; for multipart uploads `chunk_size` and one numbered key per part URL.
    #[serde(default)]
    pub header: std::collections::BTreeMap<String, String>,
}

/// A per-object error of an LFS batch answer.
#[derive(Debug, Clone, Deserialize)]
pub struct LfsError {
    /// Error code.
    #[serde(default)]
    pub code: i64,
    /// Message.
    #[serde(default)]
    pub message: String,
}

/// An LFS batch answer.
#[derive(Debug, Clone, Deserialize)]
pub struct LfsBatch {
    /// The transfer the server chose (`basic`, `multipart`, `xet`).
    #[serde(default)]
    pub transfer: Option<String>,
    /// One entry per requested object.
    #[serde(default)]
    pub objects: Vec<LfsObject>,
}

/// The answer of `xet-write-token`: where the Hub's Xet storage (CAS) is, and a write token.
#[derive(Clone, Deserialize)]
pub struct XetToken {
    /// The CAS endpoint.
    #[serde(rename = "casUrl")]
    pub cas_url: String,
    /// The CAS write token.
    #[serde(rename = "accessToken")]
    pub access_token: String,
    /// When the token expires, in Unix seconds.
    pub exp: u64,
}

impl std::fmt::Debug for XetToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XetToken").field("cas_url", &self.cas_url).field("exp", &self.exp).finish_non_exhaustive()
    }
}

/// Answer of a successful commit.
#[derive(Debug, Clone, Deserialize)]
pub struct CommitAnswer {
    /// The new commit's id.
    #[serde(rename = "commitOid")]
    pub commit_oid: String,
    /// Its web URL.
    #[serde(default, rename = "commitUrl")]
    pub commit_url: Option<String>,
    /// With `create_pr`: the pull request's URL.
    #[serde(default, rename = "pullRequestUrl")]
    pub pull_request_url: Option<String>,
}

/// A pull request of the repo (an entry of the discussions listing).
#[derive(Debug, Clone, Deserialize)]
pub struct PullRequest {
    /// Its number; its head is the ref `refs/pr/<num>`.
    pub num: u64,
    /// Its title (the commit title for one opened by a commit with `create_pr`).
    #[serde(default)]
    pub title: String,
    /// `open`, `draft`, `closed` or `merged`.
    #[serde(default)]
    pub status: String,
    /// True for pull requests (the listing also holds discussions).
    #[serde(default, rename = "isPullRequest")]
    pub is_pull_request: bool,
}

impl PullRequest {
    /// True while it can still be merged (`open` or `draft`).
    pub fn is_open(&self) -> bool {
        matches!(self.status.as_str(), "open" | "draft")
    }
}

/// A git ref of the repo.
#[derive(Debug, Clone, Deserialize)]
pub struct GitRef {
    /// Short name (`main`, `v1.0.0`).
    pub name: String,
    /// The commit it points at.
    #[serde(rename = "targetCommit")]
    pub target_commit: String,
}

/// `GET /api/datasets/{repo}/refs`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Refs {
    /// Branches.
    #[serde(default)]
    pub branches: Vec<GitRef>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<GitRef>,
}

/// Outcome of [`HubClient::create_repo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    /// The repo was created.
    New,
    /// It existed already (HTTP 409).
    Existed,
}

/// Outcome of [`HubClient::create_tag`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagCreated {
    /// The tag was created.
    New,
    /// A tag of that name existed already (HTTP 409).
    Existed,
}

impl HubClient {
    /// A client for `config`.
    ///
    /// Errors: [`Error::Hub`] when the HTTP stack cannot be set up.
    pub fn new(config: &HubConfig) -> Result<HubClient> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("runpack/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(20))
            .read_timeout(config.request_timeout)
            .build()
            .map_err(|e| Error::hub_caused(format!("HTTP client: {e}"), e))?;
        Ok(HubClient {
            http,
            endpoint: config.endpoint.trim_end_matches('/').to_string(),
            token: config.token.clone(),
            retry: config.retry,
            request_timeout: config.request_timeout,
        })
    }

    /// The endpoint URL.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The retry policy (its waits also pace repeated commit attempts).
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// True when a token is set.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    fn api(&self, repo: &RepoId, tail: &str) -> String {
        format!("{}/api/datasets/{}/{}{tail}", self.endpoint, repo.namespace, repo.name)
    }

    /// The `Authorization` header, marked sensitive.
    fn auth(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(t) = &self.token
            && let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {}", t.secret()))
        {
            v.set_sensitive(true);
            h.insert(reqwest::header::AUTHORIZATION, v);
        }
        h
    }

    /// A request to the endpoint, with the token. A URL that the server handed out (an LFS
    /// verify action, a next-page link) gets the token only when it is on the endpoint's
    /// origin (scheme, host and port), as a browser would send credentials.
    pub(crate) fn hub(&self, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
        let r = self.http.request(method, url).timeout(self.request_timeout);
        if same_origin(url, &self.endpoint) { r.headers(self.auth()) } else { r }
    }

    /// A request to a storage URL handed out by the Hub: no token, no overall timeout.
    pub(crate) fn storage(&self, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
        let url = if url.starts_with('/') { format!("{}{url}", self.endpoint) } else { url.to_string() };
        self.http.request(method, url)
    }

    /// Removes the token from a text that came from the server.
    pub(crate) fn scrub(&self, s: &str) -> String {
        match &self.token {
            Some(t) if s.contains(t.secret()) => s.replace(t.secret(), "<token>"),
            _ => s.to_string(),
        }
    }

    /// Reads the error of a response that is not a success.
    pub(crate) async fn failure(&self, resp: reqwest::Response) -> Failure {
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let header = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::to_string);
        let request_id = header("x-request-id")
            .or_else(|| header("x-amzn-trace-id"))
            .or_else(|| header("x-amz-cf-id"))
            .map(|s| self.scrub(&s));
        let error_code = header("x-error-code").map(|s| self.scrub(&s));
        let wait = server_wait(&headers);
        let body = resp.text().await.unwrap_or_default();
        let from_body = serde_json::from_str::<serde_json::Value>(&body).ok().and_then(|v| match v.get("error") {
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(serde_json::Value::Array(a)) => Some(
                a.iter()
                    .map(|e| e.as_str().map(str::to_string).unwrap_or(e.to_string()))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            _ => v.get("errors").and_then(|e| e.as_array()).map(|a| {
                a.iter()
                    .map(|e| e.get("message").and_then(|m| m.as_str()).unwrap_or("").to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            }),
        });
        let mut message = header("x-error-message").or(from_body).unwrap_or_else(|| {
            let t = body.trim();
            if t.is_empty() {
                reqwest::StatusCode::from_u16(status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or("no message")
                    .to_string()
            } else {
                t.chars().take(500).collect()
            }
        });
        message = self.scrub(&message);
        Failure::Status { status, message, request_id, error_code, wait }
    }

    /// Describes a transport error with its causes.
    pub(crate) fn network(&self, e: &reqwest::Error) -> Failure {
        let mut message = e.to_string();
        let mut src = std::error::Error::source(e);
        while let Some(s) = src {
            let t = s.to_string();
            if !message.contains(&t) {
                message.push_str(": ");
                message.push_str(&t);
            }
            src = s.source();
        }
        let host = e.url().and_then(|u| u.host_str()).unwrap_or("of the Hub").to_string();
        Failure::Network {
            unknown_host: unknown_host(&message).then_some(host),
            message: self.scrub(&message),
            timeout: e.is_timeout(),
        }
    }

    /// The backoff waits of one retried request: doubling from `min_delay`, jittered, never
    /// longer than `max_delay` (backon adds its jitter after its own cap).
    fn backoff(&self) -> impl Iterator<Item = Duration> + use<> {
        let max = self.retry.max_delay;
        backon::ExponentialBuilder::default()
            .with_min_delay(self.retry.min_delay)
            .with_max_delay(max)
            .with_factor(2.0)
            .with_max_times(self.retry.max_retries)
            .with_jitter()
            .build()
            .map(move |d| d.min(max))
    }

    /// Sends a request built by `make` (called again for each attempt), retrying transient
    /// failures; a redirect or success status is returned as is.
    ///
    /// Errors: [`Error::HubStatus`] for an error status (at once for permanent ones, after the
    /// last retry otherwise); [`Error::Hub`] when no answer came.
    pub(crate) async fn send(
        &self,
        what: &str,
        make: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response> {
        let mut waits = self.backoff();
        let mut attempt = 1usize;
        loop {
            let failure = match self.send_once(make()).await {
                Ok(r) => return Ok(r),
                Err(f) => f,
            };
            let next = if failure.retryable() { waits.next() } else { None };
            let Some(backoff) = next else {
                let mut err = failure.into_error(what);
                if attempt > 1
                    && let Error::Hub { message: m, .. } = &mut err
                {
                    m.push_str(&format!(" (after {attempt} attempts)"));
                }
                return Err(err);
            };
            let wait = match &failure {
                Failure::Status { wait: Some(w), .. } => {
                    if *w > self.retry.max_server_wait {
                        return Err(Error::hub(format!(
                            "{what}: {}; the server asks to wait {} s, longer than the {} s runpack waits: try again later",
                            failure.describe(),
                            w.as_secs(),
                            self.retry.max_server_wait.as_secs()
                        )));
                    }
                    *w
                }
                _ => backoff,
            };
            tracing::warn!(
                "{what}: {}; waiting {:.1} s{}, then retrying (attempt {} of {})",
                failure.describe(),
                wait.as_secs_f64(),
                if matches!(&failure, Failure::Status { wait: Some(_), .. }) { " as the server asked" } else { "" },
                attempt + 1,
                self.retry.max_retries + 1
            );
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// Sends a request once; any status other than 2xx/3xx is a [`Failure`].
    pub(crate) async fn send_once(
        &self,
        req: reqwest::RequestBuilder,
    ) -> std::result::Result<reqwest::Response, Failure> {
        match req.send().await {
            Ok(r) if r.status().is_success() || r.status().is_redirection() => Ok(r),
            Ok(r) => Err(self.failure(r).await),
            Err(e) => Err(self.network(&e)),
        }
    }

    async fn json<T: serde::de::DeserializeOwned>(&self, what: &str, resp: reqwest::Response) -> Result<T> {
        let text = resp.text().await.map_err(|e| self.network(&e).into_error(what))?;
        serde_json::from_str(&text).map_err(|e| {
            Error::hub(format!(
                "{what}: unexpected answer from the Hub ({e}): {}",
                self.scrub(&text.chars().take(200).collect::<String>())
            ))
        })
    }

    /// `GET /api/datasets/{repo}/revision/{rev}`: the commit `revision` points at.
    ///
    /// Errors: [`Error::HubStatus`] (404 with `X-Error-Code` `RepoNotFound` or
    /// `RevisionNotFound` when either is missing).
    pub async fn revision(&self, repo: &RepoId, revision: &str) -> Result<String> {
        // not hf-hub's `info()`: its error drops the `RateLimit` wait (module docs)
        let what = format!("read {repo}@{revision}");
        let url = self.api(repo, &format!("/revision/{}", encode_component(revision)));
        let resp = self.send(&what, || self.hub(reqwest::Method::GET, &url)).await?;
        let info: RepoInfo = self.json(&what, resp).await?;
        info.sha.ok_or_else(|| Error::hub(format!("{what}: the answer has no commit id (`sha`)")))
    }

    /// `POST /api/repos/create` for a dataset repo; an existing repo (409) is not an error.
    pub async fn create_repo(&self, repo: &RepoId, private: bool) -> Result<Created> {
        let what = format!("create {repo}");
        let url = format!("{}/api/repos/create", self.endpoint);
        let body = serde_json::json!({
            "name": repo.name, "organization": repo.namespace, "type": "dataset", "private": private,
        });
        match self.send(&what, || self.hub(reqwest::Method::POST, &url).json(&body)).await {
            Ok(_) => Ok(Created::New),
            Err(Error::HubStatus { status: 409, .. }) => Ok(Created::Existed),
            Err(e) => Err(e),
        }
    }

    /// `POST /api/validate-yaml`: the Hub's check of a dataset card. Returns its warnings.
    ///
    /// Errors: [`Error::Refused`] listing the Hub's objections when it rejects the card.
    pub async fn validate_yaml(&self, content: &str) -> Result<Vec<String>> {
        let what = "validate README.md";
        let url = format!("{}/api/validate-yaml", self.endpoint);
        let body = serde_json::json!({ "repoType": "dataset", "content": content });
        let resp = match self.send(what, || self.hub(reqwest::Method::POST, &url).json(&body)).await {
            Ok(r) => r,
            Err(Error::HubStatus { status: 400 | 422, message, .. }) => {
                return Err(Error::Refused(format!("README.md: the Hub rejects the card's metadata: {message}")));
            }
            Err(e) => return Err(e),
        };
        #[derive(Deserialize)]
        struct Msg {
            #[serde(default)]
            message: String,
        }
        #[derive(Deserialize)]
        struct Answer {
            #[serde(default)]
            warnings: Vec<Msg>,
        }
        let a: Answer = self.json(what, resp).await?;
        Ok(a.warnings.into_iter().map(|m| m.message).collect())
    }

    /// `POST /api/datasets/{repo}/preupload/{rev}` for at most 256 files.
    pub async fn preupload(
        &self,
        repo: &RepoId,
        revision: &str,
        files: &[PreuploadFile],
        create_pr: bool,
    ) -> Result<Vec<PreuploadAnswer>> {
        let what = format!("preupload to {repo}@{revision}");
        let mut url = self.api(repo, &format!("/preupload/{}", encode_component(revision)));
        if create_pr {
            url.push_str("?create_pr=1");
        }
        let body = serde_json::json!({ "files": files });
        let resp = self.send(&what, || self.hub(reqwest::Method::POST, &url).json(&body)).await?;
        #[derive(Deserialize)]
        struct Answer {
            files: Vec<PreuploadAnswer>,
        }
        let a: Answer = self.json(&what, resp).await?;
        Ok(a.files)
    }

    /// `POST /datasets/{repo}.git/info/lfs/objects/batch` (upload) for at most 256
    /// `(sha256, size)` objects, offering `transfers` (`basic`, `multipart`, `xet`).
    pub async fn lfs_batch(
        &self,
        repo: &RepoId,
        revision: &str,
        objects: &[(String, u64)],
        transfers: &[&str],
    ) -> Result<LfsBatch> {
        let what = format!("LFS batch for {repo}");
        let url = format!("{}/datasets/{}/{}.git/info/lfs/objects/batch", self.endpoint, repo.namespace, repo.name);
        let body = serde_json::json!({
            "operation": "upload",
            "transfers": transfers,
            "objects": objects.iter().map(|(oid, size)| serde_json::json!({"oid": oid, "size": size})).collect::<Vec<_>>(),
            "hash_algo": "sha256",
            "ref": { "name": revision },
        });
        let resp = self
            .send(&what, || {
                self.hub(reqwest::Method::POST, &url)
                    .header(reqwest::header::ACCEPT, LFS_JSON)
                    .header(reqwest::header::CONTENT_TYPE, LFS_JSON)
                    .body(body.to_string())
            })
            .await?;
        self.json(&what, resp).await
    }

    /// The URL of `xet-write-token` for `revision` (with `create_pr=1` for a pull request).
    pub fn xet_write_token_url(&self, repo: &RepoId, revision: &str, create_pr: bool) -> String {
        let url = self.api(repo, &format!("/xet-write-token/{}", encode_component(revision)));
        if create_pr { format!("{url}?create_pr=1") } else { url }
    }

    /// `GET /api/datasets/{repo}/xet-write-token/{rev}`: the CAS to upload to and a write token
    /// for it. The token is remembered so that no message shows it ([`super::redact`]).
    ///
    /// Errors: [`Error::HubStatus`] (404 when the Hub offers no Xet storage).
    pub async fn xet_write_token(&self, repo: &RepoId, revision: &str, create_pr: bool) -> Result<XetToken> {
        let what = format!("Xet write token for {repo}@{revision}");
        let url = self.xet_write_token_url(repo, revision, create_pr);
        let resp = self.send(&what, || self.hub(reqwest::Method::GET, &url)).await?;
        let token: XetToken = self.json(&what, resp).await?;
        let _ = super::Token::new(token.access_token.clone());
        Ok(token)
    }

    /// The headers that carry the token to `url` (none when `url` is not on the endpoint's
    /// origin): what hf-xet sends when it reads a fresh Xet token there.
    pub(crate) fn auth_headers_for(&self, url: &str) -> HeaderMap {
        if same_origin(url, &self.endpoint) { self.auth() } else { HeaderMap::new() }
    }

    /// `POST` an LFS verify action (with the token, as the Python client does).
    pub async fn lfs_verify(&self, action: &LfsAction, oid: &str, size: u64) -> Result<()> {
        let what = format!("verify LFS object {oid}");
        let body = serde_json::json!({ "oid": oid, "size": size });
        self.send(&what, || {
            let mut r = self.hub(reqwest::Method::POST, &action.href).json(&body);
            for (k, v) in &action.header {
                r = r.header(k, v);
            }
            r
        })
        .await?;
        Ok(())
    }

    /// `POST` the completion of a multipart upload (no token: the URL is pre-signed).
    pub async fn lfs_complete(&self, href: &str, oid: &str, etags: &[String]) -> Result<()> {
        let what = format!("complete multipart upload of {oid}");
        let parts: Vec<_> =
            etags.iter().enumerate().map(|(i, e)| serde_json::json!({"partNumber": i + 1, "etag": e})).collect();
        let body = serde_json::json!({ "oid": oid, "parts": parts });
        self.send(&what, || {
            self.storage(reqwest::Method::POST, href)
                .header(reqwest::header::ACCEPT, LFS_JSON)
                .header(reqwest::header::CONTENT_TYPE, LFS_JSON)
                .body(body.to_string())
        })
        .await?;
        Ok(())
    }

    /// `POST /api/datasets/{repo}/commit/{rev}` once, with an NDJSON body and a timeout. The
    /// failure is returned as is: the caller decides what a lost answer means.
    pub(crate) async fn commit_once(
        &self,
        repo: &RepoId,
        revision: &str,
        body: Vec<u8>,
        create_pr: bool,
        timeout: Duration,
    ) -> std::result::Result<CommitAnswer, Failure> {
        let mut url = self.api(repo, &format!("/commit/{}", encode_component(revision)));
        if create_pr {
            url.push_str("?create_pr=1");
        }
        let req = self
            .hub(reqwest::Method::POST, &url)
            .timeout(timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/x-ndjson")
            .body(body);
        let resp = self.send_once(req).await?;
        let text = resp.text().await.map_err(|e| self.network(&e))?;
        serde_json::from_str(&text).map_err(|e| Failure::Network {
            message: format!(
                "unreadable commit answer ({e}): {}",
                self.scrub(&text.chars().take(200).collect::<String>())
            ),
            timeout: false,
            unknown_host: None,
        })
    }

    /// `GET /api/datasets/{repo}/tree/{rev}/{path}?recursive=true`, following the `Link:
    /// <…>; rel="next"` pages. Returns files only. A folder that does not exist gives an
    /// empty list.
    pub async fn tree(&self, repo: &RepoId, revision: &str, path: &str) -> Result<Vec<TreeEntry>> {
        // not hf-hub's `list_tree`: its entries lose `lfs.oid`, the sha256 verify checks
        let what = format!("list files of {repo}@{revision}");
        let mut url = self.api(repo, &format!("/tree/{}", encode_component(revision)));
        if !path.is_empty() {
            url.push('/');
            url.push_str(&encode_path(path));
        }
        url.push_str("?recursive=true&expand=false");
        let mut out = Vec::new();
        let mut next = Some(url);
        while let Some(u) = next.take() {
            let resp = match self.send(&what, || self.hub(reqwest::Method::GET, &u)).await {
                Ok(r) => r,
                Err(Error::HubStatus { status: 404, error_code: Some(code), .. })
                    if code == "EntryNotFound" && !path.is_empty() =>
                {
                    return Ok(Vec::new());
                }
                Err(e) => return Err(e),
            };
            next = resp.headers().get_all(reqwest::header::LINK).iter().find_map(|v| next_link(v.to_str().ok()?));
            if let Some(n) = &next
                && n.starts_with('/')
            {
                next = Some(format!("{}{n}", self.endpoint));
            }
            let page: Vec<TreeEntry> = self.json(&what, resp).await?;
            out.extend(page.into_iter().filter(|e| e.kind == "file"));
        }
        Ok(out)
    }

    /// `POST /api/datasets/{repo}/paths-info/{rev}` (JSON body): the entries of `paths` that
    /// exist at `revision` (files and folders; a missing path is left out, as the Hub does). At
    /// most 1000 paths per call (the Hub's limit).
    pub async fn paths_info(&self, repo: &RepoId, revision: &str, paths: &[&str]) -> Result<Vec<TreeEntry>> {
        // not hf-hub's `get_paths_info`: its entries lose `lfs.oid`, as its tree's do
        let what = format!("read paths of {repo}@{revision}");
        let url = self.api(repo, &format!("/paths-info/{}", encode_component(revision)));
        let body = serde_json::json!({ "paths": paths, "expand": false });
        let resp = self.send(&what, || self.hub(reqwest::Method::POST, &url).json(&body)).await?;
        self.json(&what, resp).await
    }

    /// The bytes of a small file at `revision` (a card, a manifest), read into memory.
    ///
    /// Errors: [`Error::HubStatus`] or [`Error::Hub`] when it cannot be downloaded (404 when it
    /// is not there); [`Error::Refused`] when the file holds more than
    /// `max` bytes.
    pub async fn read_small(&self, repo: &RepoId, revision: &str, path: &str, max: u64) -> Result<Vec<u8>> {
        let what = format!("read {path} from {repo}@{}", super::short(revision));
        let resp = self.download(repo, revision, path, None).await?;
        if resp.content_length().is_some_and(|n| n > max) {
            return Err(Error::Refused(format!("{what}: larger than {max} bytes")));
        }
        let mut out = Vec::new();
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = futures::StreamExt::next(&mut stream).await {
            let chunk = chunk.map_err(|e| self.network(&e).into_error(&what))?;
            out.extend_from_slice(&chunk);
            if out.len() as u64 > max {
                return Err(Error::Refused(format!("{what}: larger than {max} bytes")));
            }
        }
        Ok(out)
    }

    /// `GET /api/datasets/{repo}/discussions?type=pull_request&status=all`, every page (`p`
    /// counts from 0 until `start` + the page's length reaches `count`, as huggingface_hub's
    /// `get_repo_discussions` pages). Newest first, as the Hub lists them.
    pub async fn pull_requests(&self, repo: &RepoId) -> Result<Vec<PullRequest>> {
        let what = format!("list pull requests of {repo}");
        #[derive(Deserialize)]
        struct Page {
            #[serde(default)]
            discussions: Vec<PullRequest>,
            #[serde(default)]
            count: usize,
            #[serde(default)]
            start: usize,
        }
        let mut out = Vec::new();
        for p in 0.. {
            let url = self.api(repo, &format!("/discussions?type=pull_request&status=all&p={p}"));
            let resp = self.send(&what, || self.hub(reqwest::Method::GET, &url)).await?;
            let page: Page = self.json(&what, resp).await?;
            let n = page.discussions.len();
            out.extend(page.discussions.into_iter().filter(|d| d.is_pull_request));
            if n == 0 || page.start + n >= page.count {
                break;
            }
        }
        Ok(out)
    }

    /// `GET /api/datasets/{repo}/refs`: branches and tags.
    pub async fn refs(&self, repo: &RepoId) -> Result<Refs> {
        let what = format!("list refs of {repo}");
        let url = self.api(repo, "/refs");
        let resp = self.send(&what, || self.hub(reqwest::Method::GET, &url)).await?;
        self.json(&what, resp).await
    }

    /// `POST /api/datasets/{repo}/tag/{rev}`: tags a commit.
    pub async fn create_tag(&self, repo: &RepoId, commit: &str, tag: &str, message: &str) -> Result<TagCreated> {
        let what = format!("tag {repo}@{} as {tag}", super::short(commit));
        let url = self.api(repo, &format!("/tag/{}", encode_component(commit)));
        let body = serde_json::json!({ "tag": tag, "message": message });
        match self.send(&what, || self.hub(reqwest::Method::POST, &url).json(&body)).await {
            Ok(_) => Ok(TagCreated::New),
            Err(Error::HubStatus { status: 409, .. }) => Ok(TagCreated::Existed),
            Err(e) => Err(e),
        }
    }

    /// The download URL of a file: `{E}/datasets/{repo}/resolve/{rev}/{path}`.
    pub fn resolve_url(&self, repo: &RepoId, revision: &str, path: &str) -> String {
        format!(
            "{}/datasets/{}/{}/resolve/{}/{}",
            self.endpoint,
            repo.namespace,
            repo.name,
            encode_component(revision),
            encode_path(path)
        )
    }

    /// `GET` a file (following the redirect to storage, where the token is dropped), from
    /// byte `from` on when given. Returns the response (200 or 206).
    pub(crate) async fn download(
        &self,
        repo: &RepoId,
        revision: &str,
        path: &str,
        from: Option<u64>,
    ) -> Result<reqwest::Response> {
        let what = format!("download {path} from {repo}@{}", super::short(revision));
        let url = self.resolve_url(repo, revision, path);
        self.send(&what, || {
            let mut r = self.http.get(&url).headers(self.auth());
            if let Some(n) = from {
                r = r.header(reqwest::header::RANGE, format!("bytes={n}-"));
            }
            r
        })
        .await
    }
}

/// The wait a 429/503 answer asks for: `RateLimit: "api";r=0;t=<s>` first, then an integer
/// `Retry-After` (HTTP-date values are ignored, as the Python client does).
fn server_wait(h: &HeaderMap) -> Option<Duration> {
    if let Some(rl) = h.get("ratelimit").and_then(|v| v.to_str().ok()) {
        let mut r = None;
        let mut t = None;
        for part in rl.split(';') {
            let part = part.trim();
            if let Some(v) = part.strip_prefix("r=") {
                r = v.trim().parse::<u64>().ok();
            } else if let Some(v) = part.strip_prefix("t=") {
                t = v.trim().parse::<u64>().ok();
            }
        }
        if r == Some(0)
            && let Some(t) = t
        {
            return Some(Duration::from_secs(t));
        }
    }
    h.get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// The `rel="next"` URL of a `Link` header.
/// True when `url` is on the origin (scheme, host, port) of `endpoint`, or is a path on it.
fn same_origin(url: &str, endpoint: &str) -> bool {
    if url.starts_with('/') && !url.starts_with("//") {
        return true;
    }
    match (reqwest::Url::parse(url), reqwest::Url::parse(endpoint)) {
        (Ok(a), Ok(b)) => {
            a.scheme() == b.scheme()
                && a.host_str().map(str::to_ascii_lowercase) == b.host_str().map(str::to_ascii_lowercase)
                && a.port_or_known_default() == b.port_or_known_default()
        }
        _ => false,
    }
}

fn next_link(h: &str) -> Option<String> {
    h.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| matches!(p.trim().replace(' ', "").as_str(), "rel=\"next\"" | "rel=next"))
            .then(|| url.trim().trim_start_matches('<').trim_end_matches('>').to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_goes_only_to_the_endpoint_origin() {
        let e = "http://127.0.0.1:18080";
        assert!(same_origin("http://127.0.0.1:18080/api/datasets/a/b/tree/main", e));
        assert!(same_origin("/api/x", e));
        assert!(!same_origin("//evil.example/api/x", e));
        assert!(!same_origin("http://127.0.0.1:18081/verify", e));
        assert!(!same_origin("https://127.0.0.1:18080/verify", e));
        assert!(!same_origin("http://localhost:18080/verify", e));
        assert!(same_origin("https://HuggingFace.co:443/api/x", "https://huggingface.co"));
        assert!(!same_origin("https://huggingface.co.evil.example/api", "https://huggingface.co"));
        let client =
            HubClient::new(&crate::verbs::hub::HubConfig::new(e, crate::verbs::hub::Token::new("hf_origin_test")))
                .unwrap();
        let has_auth = |url: &str| {
            let r = client.hub(reqwest::Method::POST, url).build().unwrap();
            r.headers().contains_key(reqwest::header::AUTHORIZATION)
        };
        assert!(has_auth("http://127.0.0.1:18080/api/x"));
        assert!(!has_auth("http://127.0.0.1:18081/verify"));
    }

    #[test]
    fn backoff_waits_stay_under_the_longest_wait() {
        let mut config =
            crate::verbs::hub::HubConfig::new("http://127.0.0.1:18080", crate::verbs::hub::Token::new("hf_x"));
        config.retry.max_retries = 50;
        config.retry.max_delay = Duration::from_secs(2);
        let client = HubClient::new(&config).unwrap();
        let waits: Vec<Duration> = client.backoff().collect();
        assert_eq!(waits.len(), 50);
        assert!(waits.iter().all(|w| *w <= Duration::from_secs(2)), "{waits:?}");
        assert!(waits[0] >= Duration::from_secs(1), "{waits:?}");
    }

    #[test]
    fn waits_from_headers() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(server_wait(&h), Some(Duration::from_secs(2)));
        h.insert("ratelimit", HeaderValue::from_static("\"api\";r=0;t=55"));
        assert_eq!(server_wait(&h), Some(Duration::from_secs(55)));
        h.insert("ratelimit", HeaderValue::from_static("\"api\";r=10;t=55"));
        assert_eq!(server_wait(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(server_wait(&h), None);
    }

    #[test]
    fn link_header() {
        assert_eq!(next_link("<http://h/api/x?cursor=2>; rel=\"next\"").as_deref(), Some("http://h/api/x?cursor=2"));
        assert_eq!(next_link("<http://h/a>; rel=\"prev\""), None);
    }

    #[test]
    fn classification() {
        let s =
            |status| Failure::Status { status, message: String::new(), request_id: None, error_code: None, wait: None };
        for code in [408, 429, 500, 502, 503, 504] {
            assert!(s(code).retryable(), "{code}");
        }
        for code in [400, 401, 403, 404, 409, 412, 413, 422] {
            assert!(!s(code).retryable(), "{code}");
        }
        assert!(Failure::Network { message: String::new(), timeout: true, unknown_host: None }.retryable());
    }

    #[test]
    fn a_host_name_that_does_not_exist_is_not_asked_again() {
        let glibc = "error sending request for url (http://hub.invalid/api): client error (Connect): dns error: \
                     failed to lookup address information: Name or service not known";
        assert!(unknown_host(glibc));
        assert!(unknown_host(
            "dns error: failed to lookup address information: nodename nor servname provided, or not known"
        ));
        // a resolver that cannot be reached may answer later; a refused connection is no DNS answer
        assert!(!unknown_host("dns error: failed to lookup address information: Temporary failure in name resolution"));
        assert!(!unknown_host("client error (Connect): tcp connect error: Connection refused (os error 111)"));
        let f = Failure::Network { message: glibc.into(), timeout: false, unknown_host: Some("hub.invalid".into()) };
        assert!(!f.retryable());
        let e = f.into_error("read a/b@main").to_string();
        let said = "the host name hub.invalid is not known to this machine's resolver (no network, or a misspelled HF_ENDPOINT?)";
        assert!(e.contains(said), "{e}");
    }
}
