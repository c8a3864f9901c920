//! A Hugging Face Hub-compatible server on 127.0.0.1 for the Hub tests, with faults on demand.
//!
//! Two listeners share one state: the endpoint (`url`, what `HF_ENDPOINT` points at) and a
//! storage origin (`cdn`, another port, so that LFS redirects leave the endpoint's origin as they
//! do on the real Hub). Served, as the official clients expect them (see
//! ../shared/docs/hub-protocol.md): repo create, validate-yaml, repo info and revision, preupload,
//! the LFS batch API (basic and multipart), object and part PUTs, multipart completion, verify,
//! the NDJSON commit with `parentCommit` checks and `create_pr`, tags, refs, the paginated tree,
//! paths-info (form or JSON), and resolve with `X-Repo-Commit` / `X-Linked-Etag` /
//! `X-Linked-Size` and a 302 to the storage origin for LFS files.
//!
//! Started with [`FakeHub::start_with_xet`], it also has Xet storage: `xet-write-token` (and
//! `xet-read-token`) answer `casUrl`, `accessToken`, `exp` for a Xet CAS on a third loopback
//! port: xet-core's own local CAS server (`xet-client`'s `simulation` feature, files under a
//! temporary folder). A commit's `lfsFile` that was not uploaded through LFS is looked up as
//! the Hub does, by its SHA-256 in the file records (shards) the CAS holds; its bytes are
//! rebuilt from the CAS's chunks and served on resolve, whose answer also carries `X-Xet-Hash`
//! and a `Link` with `rel="xet-auth"` to `xet-read-token` (a Xet client then reads the CAS); its
//! tree and paths-info entries carry `xetHash`. The token endpoints answer in the body (what
//! hf-xet reads) and in `X-Xet-*` headers (what the Python client reads). Without Xet, both
//! answer 404.
//!
//! Faults ([`Fault`]) are queued per route: an error status with headers, a connection reset
//! (the socket is closed without an answer), a commit that is applied but whose answer is lost,
//! another client's commit slipped in first, slow answers; and, as switches, refused
//! connections, altered or truncated objects, a Xet-only LFS batch.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use base64::Engine;
use sha2::Digest;
use tokio::sync::Notify;

/// A file in a commit's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Stored in git.
    Regular(Vec<u8>),
    /// Stored in LFS.
    Lfs { sha256: String, size: u64 },
}

impl Entry {
    /// Git blob SHA-1 (of the pointer file for LFS entries).
    pub fn oid(&self) -> String {
        match self {
            Entry::Regular(b) => git_sha1(b),
            Entry::Lfs { sha256, size } => git_sha1(pointer(sha256, *size).as_bytes()),
        }
    }
    pub fn size(&self) -> u64 {
        match self {
            Entry::Regular(b) => b.len() as u64,
            Entry::Lfs { size, .. } => *size,
        }
    }
}

fn pointer(sha256: &str, size: u64) -> String {
    format!("version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n")
}

pub fn git_sha1(b: &[u8]) -> String {
    use sha1::Digest as _;
    let mut h = sha1::Sha1::new();
    h.update(format!("blob {}\0", b.len()).as_bytes());
    h.update(b);
    hex::encode(h.finalize())
}

pub fn sha256(b: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(b))
}

#[derive(Debug, Clone)]
pub struct Commit {
    pub parent: Option<String>,
    pub tree: BTreeMap<String, Entry>,
    pub title: String,
}

#[derive(Debug, Clone, Default)]
pub struct Repo {
    pub branches: BTreeMap<String, String>,
    pub tags: BTreeMap<String, String>,
    pub commits: HashMap<String, Commit>,
    pub prs: u32,
    /// Pull requests by number (their head is the branch `refs/pr/<n>`).
    pub pulls: BTreeMap<u32, Pull>,
}

/// A pull request opened by a commit with `create_pr`.
#[derive(Debug, Clone)]
pub struct Pull {
    pub title: String,
    pub description: String,
    /// `open`, `draft`, `closed` or `merged`.
    pub status: String,
}

/// Which requests a fault applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Create,
    Revision,
    Preupload,
    Batch,
    ObjectPut,
    PartPut,
    Complete,
    Verify,
    Commit,
    Tag,
    Tree,
    Resolve,
    Cdn,
    XetToken,
}

/// What a fault does.
#[derive(Debug, Clone)]
pub enum Action {
    /// Answer with this status, headers and body instead.
    Status(u16, Vec<(&'static str, String)>, String),
    /// Close the connection without answering.
    Reset,
    /// Close the connection, and refuse every later connection.
    ResetAndRefuse,
    /// Commit only: apply the commit, then close the connection without answering.
    ApplyThenReset,
    /// Commit only: apply the commit, then answer after this delay.
    ApplyThenDelay(Duration),
    /// Commit only: apply the commit without the named path, then close the connection.
    ApplyPartialThenReset(String),
    /// Wait, then answer normally.
    Delay(Duration),
    /// Commit only: another client commits these regular files to the branch first.
    ConcurrentCommit(Vec<(String, Vec<u8>)>),
}

/// A queued fault: lets `skip` matching requests through, then acts on the next `times`.
#[derive(Debug, Clone)]
pub struct Fault {
    pub route: Route,
    pub skip: usize,
    pub times: usize,
    pub action: Action,
}

impl Fault {
    pub fn once(route: Route, action: Action) -> Fault {
        Fault { route, skip: 0, times: 1, action }
    }
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    pub path: String,
    pub query: String,
    pub authorization: Option<String>,
    pub range: Option<String>,
    pub at: Instant,
    pub body: Vec<u8>,
}

/// The offset of the byte an altered object's download serves flipped.
pub const ALTERED_BYTE: usize = 4;

#[derive(Default)]
pub struct StateInner {
    pub repos: BTreeMap<String, Repo>,
    pub objects: HashMap<String, Vec<u8>>,
    parts: HashMap<String, BTreeMap<u32, Vec<u8>>>,
    pub log: Vec<Req>,
    faults: Vec<Fault>,
    pub refuse: bool,
    pub altered: HashSet<String>,
    pub truncated: HashSet<String>,
    pub page_size: usize,
    pub multipart_above: u64,
    pub chunk_size: u64,
    pub xet_only: bool,
    /// SHA-256 → Xet file hash of the files committed after a Xet upload.
    pub xet_hashes: HashMap<String, String>,
    /// Seconds a Xet token is valid (default an hour).
    pub xet_token_ttl: Option<u64>,
    /// Xet is offered only in the LFS batch (as before `xet-write-token`): `xet-write-token`
    /// answers 404, except at the refresh URL the batch answer hands out (`?refresh=1`).
    pub xet_in_batch_only: bool,
    /// The `casUrl` handed out instead of the CAS's (a CAS that cannot be reached).
    pub cas_url: Option<String>,
    /// Paths whose tree and paths-info entries list a wrong git blob SHA-1 (`oid`).
    pub wrong_oid: HashSet<String>,
    /// Discussions per page of the discussions listing.
    pub discussion_page: usize,
    counter: u64,
}

struct Hub {
    url: String,
    cdn: String,
    st: Mutex<StateInner>,
    cas: Option<Cas>,
}

/// The Xet CAS behind the fake Hub.
struct Cas {
    url: String,
    dir: tempfile::TempDir,
    client: Arc<dyn xet_client::cas_client::DirectAccessClient>,
}

type Shared = Arc<Hub>;

#[derive(Clone)]
struct ConnKill(Arc<Notify>);

/// The running server; stops when dropped.
pub struct FakeHub {
    pub url: String,
    pub cdn: String,
    /// The Xet CAS (`start_with_xet`).
    pub cas: Option<String>,
    hub: Shared,
    rt: Option<tokio::runtime::Runtime>,
}

impl Drop for FakeHub {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

const GITATTRIBUTES: &str = "*.parquet filter=lfs diff=lfs merge=lfs -text\n*.arrow filter=lfs diff=lfs merge=lfs -text\n*.bin filter=lfs diff=lfs merge=lfs -text\n*.zst filter=lfs diff=lfs merge=lfs -text\n*.gz filter=lfs diff=lfs merge=lfs -text\n";

impl FakeHub {
    /// Starts the server on two ephemeral ports of 127.0.0.1.
    pub fn start() -> FakeHub {
        FakeHub::start_inner(false)
    }

    /// Starts the server with Xet storage: a Xet CAS server on a third port (see the module docs).
    pub fn start_with_xet() -> FakeHub {
        FakeHub::start_inner(true)
    }

    fn start_inner(xet: bool) -> FakeHub {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let cas = xet.then(|| rt.block_on(start_cas()));
        let (api, cdn) = rt.block_on(async {
            (
                tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
                tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
            )
        });
        let url = format!("http://127.0.0.1:{}", api.local_addr().unwrap().port());
        let cdn_url = format!("http://127.0.0.1:{}", cdn.local_addr().unwrap().port());
        let hub = Arc::new(Hub {
            url: url.clone(),
            cdn: cdn_url.clone(),
            st: Mutex::new(StateInner {
                page_size: 50,
                discussion_page: 50,
                multipart_above: 32 * 1024,
                chunk_size: 16 * 1024,
                ..Default::default()
            }),
            cas,
        });
        let app = router(hub.clone());
        rt.spawn(serve(api, app.clone(), hub.clone()));
        rt.spawn(serve(cdn, app, hub.clone()));
        let cas = hub.cas.as_ref().map(|c| c.url.clone());
        FakeHub { url, cdn: cdn_url, cas, hub, rt: Some(rt) }
    }

    pub fn state(&self) -> std::sync::MutexGuard<'_, StateInner> {
        self.hub.st.lock().unwrap()
    }

    /// Creates a dataset repo with the initial `.gitattributes` commit; returns its head.
    pub fn create_repo(&self, id: &str) -> String {
        let mut st = self.state();
        create(&mut st, id);
        st.repos[id].branches["main"].clone()
    }

    pub fn head(&self, id: &str, branch: &str) -> Option<String> {
        self.state().repos.get(id).and_then(|r| r.branches.get(branch).cloned())
    }

    /// The tree at a branch, tag or commit.
    pub fn tree(&self, id: &str, rev: &str) -> BTreeMap<String, Entry> {
        let st = self.state();
        let r = &st.repos[id];
        let c = resolve_rev(r, rev).expect("revision");
        r.commits[&c].tree.clone()
    }

    /// Commits on the branch's history (the initial commit included).
    pub fn history(&self, id: &str, branch: &str) -> Vec<String> {
        let st = self.state();
        let r = &st.repos[id];
        let mut out = Vec::new();
        let mut c = r.branches.get(branch).cloned();
        while let Some(id) = c {
            c = r.commits[&id].parent.clone();
            out.push(id);
        }
        out
    }

    /// Another client's commit of regular files (and deletions) to `branch`; returns its id.
    pub fn commit_files(&self, id: &str, branch: &str, files: &[(&str, &[u8])], delete: &[&str]) -> String {
        let mut st = self.state();
        let add: Vec<(String, Entry)> =
            files.iter().map(|(p, b)| (p.to_string(), Entry::Regular(b.to_vec()))).collect();
        other_commit(&mut st, id, branch, add, delete)
    }

    /// Another client's commit of LFS objects (stored first) to `branch`.
    pub fn commit_lfs(&self, id: &str, branch: &str, files: &[(&str, &[u8])]) -> String {
        let mut st = self.state();
        let mut add = Vec::new();
        for (p, b) in files {
            let sha = sha256(b);
            st.objects.insert(sha.clone(), b.to_vec());
            add.push((p.to_string(), Entry::Lfs { sha256: sha, size: b.len() as u64 }));
        }
        other_commit(&mut st, id, branch, add, &[])
    }

    pub fn fault(&self, f: Fault) {
        self.state().faults.push(f);
    }

    pub fn clear_faults(&self) {
        self.state().faults.clear();
    }

    pub fn requests(&self) -> Vec<Req> {
        self.state().log.clone()
    }

    pub fn clear_log(&self) {
        self.state().log.clear();
    }

    /// Requests whose method is `method` and whose path contains `part`.
    pub fn count(&self, method: &str, part: &str) -> usize {
        self.state().log.iter().filter(|r| r.method == method && r.path.contains(part)).count()
    }
}

/// Starts xet-core's local CAS server on a loopback port, its files in a temporary folder.
async fn start_cas() -> Cas {
    use xet_client::cas_client::{LocalServer, LocalServerConfig};
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let ctx = xet_runtime::core::XetContext::default().unwrap();
    let config = LocalServerConfig {
        data_directory: dir.path().to_path_buf(),
        host: "127.0.0.1".into(),
        port,
        in_memory: false,
    };
    let server = LocalServer::new(ctx, config).await.unwrap();
    let client = server.client();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        // the sender lives as long as the runtime: the server stops with it
        let _stop = stop;
        let _ = server.serve_until_stopped(listener, stopped).await;
    });
    Cas { url: format!("http://127.0.0.1:{port}"), dir, client }
}

/// The Xet file hash and bytes of the file whose SHA-256 is `sha256`, found as the Hub finds
/// it: in the file records (shards) the CAS holds, which carry each file's SHA-256.
async fn xet_file(cas: &Cas, sha256: &str) -> Option<(String, Vec<u8>)> {
    use xet_core_structures::metadata_shard::MDBShardInfo;
    let mut hash = None;
    for e in walkdir::WalkDir::new(cas.dir.path()).into_iter().filter_map(|e| e.ok()) {
        if !e.file_type().is_file() || e.path().extension().is_none_or(|x| x != "mdb") {
            continue;
        }
        let Ok(mut f) = std::fs::File::open(e.path()) else { continue };
        let Ok(info) = MDBShardInfo::load_from_reader(&mut f) else { continue };
        for fi in info.read_all_file_info_sections(&mut f).unwrap_or_default() {
            if fi.metadata_ext.as_ref().is_some_and(|m| m.sha256.hex() == sha256) {
                hash = Some(fi.metadata.file_hash);
            }
        }
    }
    let hash = hash?;
    let bytes = cas.client.get_file_data(&hash, None).await.ok()?;
    Some((hash.hex(), bytes.to_vec()))
}

fn create(st: &mut StateInner, id: &str) -> bool {
    if st.repos.contains_key(id) {
        return false;
    }
    let mut tree = BTreeMap::new();
    tree.insert(".gitattributes".to_string(), Entry::Regular(GITATTRIBUTES.as_bytes().to_vec()));
    let c = new_commit_id(st, "initial");
    let mut repo = Repo::default();
    repo.commits.insert(c.clone(), Commit { parent: None, tree, title: "initial commit".into() });
    repo.branches.insert("main".into(), c);
    st.repos.insert(id.to_string(), repo);
    true
}

fn new_commit_id(st: &mut StateInner, salt: &str) -> String {
    st.counter += 1;
    use sha1::Digest as _;
    hex::encode(sha1::Sha1::digest(format!("{}:{salt}", st.counter).as_bytes()))
}

fn other_commit(st: &mut StateInner, id: &str, branch: &str, add: Vec<(String, Entry)>, delete: &[&str]) -> String {
    let c = new_commit_id(st, "other");
    let r = st.repos.get_mut(id).expect("repo");
    let head = r.branches[branch].clone();
    let mut tree = r.commits[&head].tree.clone();
    for (p, e) in add {
        tree.insert(p, e);
    }
    for d in delete {
        tree.remove(*d);
    }
    r.commits.insert(c.clone(), Commit { parent: Some(head), tree, title: "another client".into() });
    r.branches.insert(branch.to_string(), c.clone());
    c
}

fn resolve_rev(r: &Repo, rev: &str) -> Option<String> {
    if let Some(c) = r.branches.get(rev).or_else(|| r.tags.get(rev)) {
        return Some(c.clone());
    }
    if rev.len() >= 7 {
        return r.commits.keys().find(|c| c.starts_with(&rev.to_lowercase())).cloned();
    }
    None
}

async fn serve(l: tokio::net::TcpListener, app: Router, hub: Shared) {
    loop {
        let Ok((sock, _)) = l.accept().await else { continue };
        if hub.st.lock().unwrap().refuse {
            drop(sock);
            continue;
        }
        let kill = Arc::new(Notify::new());
        let svc = app.clone().layer(axum::Extension(ConnKill(kill.clone())));
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(sock);
            let svc = hyper_util::service::TowerToHyperService::new(svc);
            let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, svc);
            tokio::select! {
                _ = conn => {}
                _ = kill.notified() => {}
            }
        });
    }
}

fn router(hub: Shared) -> Router {
    let api = "/api/datasets/{ns}/{name}";
    Router::new()
        .route("/api/repos/create", post(create_repo))
        .route("/api/validate-yaml", post(validate_yaml))
        .route(api, get(repo_info_main))
        .route(&format!("{api}/revision/{{rev}}"), get(repo_info))
        .route(&format!("{api}/preupload/{{rev}}"), post(preupload))
        .route(&format!("{api}/commit/{{rev}}"), post(commit))
        .route(&format!("{api}/tag/{{rev}}"), post(tag))
        .route(&format!("{api}/refs"), get(refs))
        .route(&format!("{api}/tree/{{rev}}"), get(tree_root))
        .route(&format!("{api}/tree/{{rev}}/{{*path}}"), get(tree_path))
        .route(&format!("{api}/paths-info/{{rev}}"), post(paths_info))
        .route(&format!("{api}/discussions"), get(discussions))
        .route(&format!("{api}/xet-write-token/{{rev}}"), get(xet_token))
        .route(&format!("{api}/xet-read-token/{{rev}}"), get(xet_token))
        .route("/datasets/{ns}/{name}/info/lfs/objects/batch", post(batch))
        .route("/datasets/{ns}/{name}/resolve/{rev}/{*path}", get(resolve))
        .route("/lfs/upload/{oid}", put(object_put))
        .route("/lfs/part/{oid}/{n}", put(part_put))
        .route("/lfs/complete/{oid}", post(complete))
        .route("/lfs/verify/{oid}", post(verify))
        .route("/lfs/objects/{oid}", get(cdn_get))
        .layer(axum::middleware::from_fn_with_state(hub.clone(), record))
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(hub)
}

async fn record(State(hub): State<Shared>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let refuse = hub.st.lock().unwrap().refuse;
    if refuse && let Some(kill) = parts.extensions.get::<ConnKill>() {
        // a kept-alive connection of a server that now refuses connections: drop it too
        kill.0.notify_one();
        std::future::pending::<()>().await;
    }
    let h = |k: &str| parts.headers.get(k).and_then(|v| v.to_str().ok()).map(str::to_string);
    hub.st.lock().unwrap().log.push(Req {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or("").to_string(),
        authorization: h("authorization"),
        range: h("range"),
        at: Instant::now(),
        body: bytes.to_vec(),
    });
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes))).await
}

/// Takes the next fault for `route`, if one is due.
fn take_fault(hub: &Hub, route: Route) -> Option<Action> {
    let mut st = hub.st.lock().unwrap();
    let i = st.faults.iter().position(|f| f.route == route)?;
    let f = &mut st.faults[i];
    if f.skip > 0 {
        f.skip -= 1;
        return None;
    }
    let action = f.action.clone();
    f.times -= 1;
    if f.times == 0 {
        st.faults.remove(i);
    }
    Some(action)
}

/// Runs the generic part of a fault: `Some(response)` when it replaces the answer. Resets never
/// return.
async fn generic(hub: &Hub, kill: &ConnKill, action: &Action) -> Option<Response> {
    match action {
        Action::Status(code, headers, body) => {
            let mut r = (StatusCode::from_u16(*code).unwrap(), body.clone()).into_response();
            for (k, v) in headers {
                r.headers_mut().insert(*k, HeaderValue::from_str(v).unwrap());
            }
            Some(r)
        }
        Action::Reset | Action::ResetAndRefuse => {
            if matches!(action, Action::ResetAndRefuse) {
                hub.st.lock().unwrap().refuse = true;
            }
            kill.0.notify_one();
            std::future::pending::<()>().await;
            None
        }
        Action::Delay(d) => {
            tokio::time::sleep(*d).await;
            None
        }
        _ => None,
    }
}

async fn fault_for(hub: &Hub, kill: &ConnKill, route: Route) -> Result<Option<Action>, Response> {
    match take_fault(hub, route) {
        None => Ok(None),
        Some(a) => match generic(hub, kill, &a).await {
            Some(r) => Err(r),
            None => Ok(Some(a)),
        },
    }
}

fn json(status: StatusCode, v: serde_json::Value) -> Response {
    (status, [("content-type", "application/json")], v.to_string()).into_response()
}

fn error(status: StatusCode, code: Option<&str>, msg: &str) -> Response {
    let mut r = json(status, serde_json::json!({ "error": msg }));
    if let Some(c) = code {
        r.headers_mut().insert("x-error-code", HeaderValue::from_str(c).unwrap());
    }
    r.headers_mut().insert("x-error-message", HeaderValue::from_str(msg).unwrap());
    r
}

fn authorized(h: &HeaderMap) -> bool {
    h.get("authorization").and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("Bearer ") && v.len() > 7)
}

type Ext = axum::Extension<ConnKill>;

async fn create_repo(State(hub): State<Shared>, axum::Extension(kill): Ext, h: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = fault_for(&hub, &kill, Route::Create).await {
        return r;
    }
    if !authorized(&h) {
        return error(StatusCode::UNAUTHORIZED, None, "Invalid credentials in Authorization header");
    }
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let name = v["name"].as_str().unwrap_or("");
    let ns = v["organization"].as_str().unwrap_or("user");
    let id = if name.contains('/') { name.to_string() } else { format!("{ns}/{name}") };
    let url = format!("{}/datasets/{id}", hub.url);
    let created = create(&mut hub.st.lock().unwrap(), &id);
    if created {
        json(StatusCode::OK, serde_json::json!({"url": url, "name": id, "id": id}))
    } else {
        json(StatusCode::CONFLICT, serde_json::json!({"error": "You already created this dataset repo", "url": url}))
    }
}

async fn validate_yaml(body: Bytes) -> Response {
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let content = v["content"].as_str().unwrap_or("");
    if content.contains("!!python") {
        return json(
            StatusCode::BAD_REQUEST,
            serde_json::json!({"errors": [{"message": "Error: YAML tags are not allowed"}], "warnings": []}),
        );
    }
    json(StatusCode::OK, serde_json::json!({"errors": [], "warnings": []}))
}

fn repo_json(hub: &Hub, id: &str, rev: &str) -> Response {
    let st = hub.st.lock().unwrap();
    let Some(r) = st.repos.get(id) else {
        return error(StatusCode::NOT_FOUND, Some("RepoNotFound"), &format!("Repository not found: {id}"));
    };
    let Some(c) = resolve_rev(r, rev) else {
        return error(StatusCode::NOT_FOUND, Some("RevisionNotFound"), &format!("Invalid rev id: {rev}"));
    };
    let commit = &r.commits[&c];
    let siblings: Vec<_> = commit
        .tree
        .iter()
        .map(|(p, e)| {
            let mut s = serde_json::json!({"rfilename": p, "size": e.size(), "blobId": e.oid()});
            if let Entry::Lfs { sha256, size } = e {
                s["lfs"] =
                    serde_json::json!({"sha256": sha256, "size": size, "pointerSize": pointer(sha256, *size).len()});
            }
            s
        })
        .collect();
    let (ns, name) = id.split_once('/').unwrap();
    json(
        StatusCode::OK,
        serde_json::json!({
            "_id": format!("{:0>24}", &c[..24]), "id": id, "author": ns, "sha": c, "private": false, "gated": false,
            "disabled": false, "downloads": 0, "likes": 0, "tags": [], "lastModified": "2026-01-01T00:00:00.000Z",
            "createdAt": "2026-01-01T00:00:00.000Z", "siblings": siblings, "cardData": {}, "description": name,
        }),
    )
}

async fn repo_info_main(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    if let Err(r) = fault_for(&hub, &kill, Route::Revision).await {
        return r;
    }
    repo_json(&hub, &format!("{ns}/{name}"), "main")
}

async fn repo_info(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path((ns, name, rev)): Path<(String, String, String)>,
) -> Response {
    if let Err(r) = fault_for(&hub, &kill, Route::Revision).await {
        return r;
    }
    repo_json(&hub, &format!("{ns}/{name}"), &rev)
}

async fn preupload(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path((ns, name, rev)): Path<(String, String, String)>,
    h: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(r) = fault_for(&hub, &kill, Route::Preupload).await {
        return r;
    }
    if !authorized(&h) {
        return error(StatusCode::UNAUTHORIZED, None, "Invalid credentials in Authorization header");
    }
    let id = format!("{ns}/{name}");
    let st = hub.st.lock().unwrap();
    let Some(r) = st.repos.get(&id) else {
        return error(StatusCode::NOT_FOUND, Some("RepoNotFound"), "Repository not found");
    };
    let tree = resolve_rev(r, &rev).map(|c| r.commits[&c].tree.clone()).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let mut files = Vec::new();
    for f in v["files"].as_array().cloned().unwrap_or_default() {
        let path = f["path"].as_str().unwrap_or("").to_string();
        let size = f["size"].as_u64().unwrap_or(0);
        let sample =
            base64::engine::general_purpose::STANDARD.decode(f["sample"].as_str().unwrap_or("")).unwrap_or_default();
        let tracked = [".parquet", ".arrow", ".bin", ".zst", ".gz"].iter().any(|e| path.ends_with(e));
        let lfs = tracked || size > 10 * 1024 * 1024 || (size > 1_000_000 && sample.contains(&0));
        let oid = tree.get(&path).map(|e| match e {
            Entry::Lfs { sha256, .. } => sha256.clone(),
            Entry::Regular(b) => git_sha1(b),
        });
        files.push(serde_json::json!({
            "path": path, "uploadMode": if lfs { "lfs" } else { "regular" }, "shouldIgnore": false, "oid": oid,
        }));
    }
    json(StatusCode::OK, serde_json::json!({ "files": files, "commitOid": resolve_rev(r, &rev) }))
}

async fn batch(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path((ns, name)): Path<(String, String)>,
    h: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(r) = fault_for(&hub, &kill, Route::Batch).await {
        return r;
    }
    if !authorized(&h) {
        return error(StatusCode::UNAUTHORIZED, None, "Invalid credentials in Authorization header");
    }
    if let Some(cas) = hub.cas.as_ref().filter(|_| hub.st.lock().unwrap().xet_in_batch_only) {
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        if v["transfers"].as_array().is_some_and(|t| t.iter().any(|x| x == "xet")) {
            // as huggingface.js and hf-hub expect it: the CAS and a token in each upload action's
            // headers, its href the URL a fresh token is read from
            let exp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 3600;
            let rev = v["ref"]["name"].as_str().unwrap_or("main");
            let href = format!("{}/api/datasets/{ns}/{name}/xet-write-token/{rev}?refresh=1", hub.url);
            let objects: Vec<_> = v["objects"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|o| {
                    serde_json::json!({"oid": o["oid"], "size": o["size"], "actions": {"upload": {"href": href,
                        "header": {"X-Xet-Cas-Url": cas.url, "X-Xet-Access-Token": "xet-cas-token",
                        "X-Xet-Token-Expiration": exp.to_string(), "X-Xet-Session-Id": "session-1"}}}})
                })
                .collect();
            return (
                StatusCode::OK,
                [("content-type", "application/vnd.git-lfs+json")],
                serde_json::json!({"transfer": "xet", "objects": objects}).to_string(),
            )
                .into_response();
        }
    }
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let st = hub.st.lock().unwrap();
    let mut objects = Vec::new();
    for o in v["objects"].as_array().cloned().unwrap_or_default() {
        let oid = o["oid"].as_str().unwrap_or("").to_string();
        let size = o["size"].as_u64().unwrap_or(0);
        if st.xet_only {
            objects.push(serde_json::json!({"oid": oid, "size": size, "actions": {"upload": {
                "href": format!("{}/api/xet-token", hub.url), "header": {"X-Xet-Cas-Url": "http://cas.invalid"}}}}));
            continue;
        }
        if st.objects.contains_key(&oid) {
            objects.push(serde_json::json!({"oid": oid, "size": size}));
            continue;
        }
        let verify = serde_json::json!({"href": format!("{}/lfs/verify/{oid}", hub.url)});
        let upload = if size > st.multipart_above {
            let mut header = serde_json::Map::new();
            header.insert("chunk_size".into(), st.chunk_size.to_string().into());
            for n in 1..=size.div_ceil(st.chunk_size) {
                header.insert(format!("{n:05}"), format!("{}/lfs/part/{oid}/{n}", hub.cdn).into());
            }
            serde_json::json!({"href": format!("{}/lfs/complete/{oid}", hub.cdn), "header": header})
        } else {
            serde_json::json!({"href": format!("{}/lfs/upload/{oid}", hub.cdn)})
        };
        objects.push(serde_json::json!({"oid": oid, "size": size, "authenticated": true,
            "actions": {"upload": upload, "verify": verify}}));
    }
    let transfer = if st.xet_only { "xet" } else { "basic" };
    (
        StatusCode::OK,
        [("content-type", "application/vnd.git-lfs+json")],
        serde_json::json!({"transfer": transfer, "objects": objects}).to_string(),
    )
        .into_response()
}

async fn object_put(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path(oid): Path<String>,
    h: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(r) = fault_for(&hub, &kill, Route::ObjectPut).await {
        return r;
    }
    if h.contains_key("authorization") {
        return error(StatusCode::BAD_REQUEST, None, "storage URLs take no Authorization header");
    }
    if sha256(&body) == oid {
        hub.st.lock().unwrap().objects.insert(oid, body.to_vec());
    }
    (StatusCode::OK, [("etag", "\"e\"")]).into_response()
}

async fn part_put(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path((oid, n)): Path<(String, u32)>,
    h: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(r) = fault_for(&hub, &kill, Route::PartPut).await {
        return r;
    }
    if h.contains_key("authorization") {
        return error(StatusCode::BAD_REQUEST, None, "storage URLs take no Authorization header");
    }
    let etag = format!("\"{}\"", &sha256(&body)[..32]);
    hub.st.lock().unwrap().parts.entry(oid).or_default().insert(n, body.to_vec());
    (StatusCode::OK, [("etag", etag)]).into_response()
}

async fn complete(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path(oid): Path<String>,
    h: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(r) = fault_for(&hub, &kill, Route::Complete).await {
        return r;
    }
    if h.contains_key("authorization") {
        return error(StatusCode::BAD_REQUEST, None, "the completion URL takes no Authorization header");
    }
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let mut st = hub.st.lock().unwrap();
    let parts = st.parts.remove(&oid).unwrap_or_default();
    let mut data = Vec::new();
    for (i, p) in v["parts"].as_array().cloned().unwrap_or_default().iter().enumerate() {
        let n = p["partNumber"].as_u64().unwrap_or(0) as u32;
        let Some(b) = parts.get(&n) else {
            return error(StatusCode::BAD_REQUEST, None, &format!("part {n} was not uploaded"));
        };
        if n as usize != i + 1 || p["etag"].as_str() != Some(&format!("\"{}\"", &sha256(b)[..32])) {
            return error(StatusCode::BAD_REQUEST, None, &format!("part {n}: wrong etag or order"));
        }
        data.extend_from_slice(b);
    }
    if sha256(&data) != oid {
        return error(StatusCode::BAD_REQUEST, None, "assembled object does not match its oid");
    }
    st.objects.insert(oid, data);
    json(StatusCode::OK, serde_json::json!({}))
}

async fn verify(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path(oid): Path<String>,
    h: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(r) = fault_for(&hub, &kill, Route::Verify).await {
        return r;
    }
    if !authorized(&h) {
        return error(StatusCode::UNAUTHORIZED, None, "Invalid credentials in Authorization header");
    }
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let st = hub.st.lock().unwrap();
    match st.objects.get(&oid) {
        Some(b) if Some(b.len() as u64) == v["size"].as_u64() => json(StatusCode::OK, serde_json::json!({})),
        _ => error(StatusCode::NOT_FOUND, None, &format!("object {oid} not found or wrong size")),
    }
}

/// Applies the NDJSON operations on top of `base`; `Err` is (status, message).
fn apply(
    st: &StateInner,
    base: &BTreeMap<String, Entry>,
    lines: &[serde_json::Value],
) -> Result<BTreeMap<String, Entry>, (StatusCode, String)> {
    let mut tree = base.clone();
    for l in lines {
        let v = &l["value"];
        let path = v["path"].as_str().unwrap_or("").to_string();
        match l["key"].as_str().unwrap_or("") {
            "file" => {
                let content = v["content"].as_str().unwrap_or("");
                let bytes = if v["encoding"] == "base64" {
                    base64::engine::general_purpose::STANDARD
                        .decode(content)
                        .map_err(|_| (StatusCode::BAD_REQUEST, format!("{path}: bad base64")))?
                } else {
                    content.as_bytes().to_vec()
                };
                tree.insert(path, Entry::Regular(bytes));
            }
            "lfsFile" => {
                let oid = v["oid"].as_str().unwrap_or("").to_string();
                let Some(obj) = st.objects.get(&oid) else {
                    return Err((StatusCode::BAD_REQUEST, format!("{path}: LFS object {oid} was not uploaded")));
                };
                if v["size"].as_u64().is_some_and(|s| s != obj.len() as u64) {
                    return Err((StatusCode::BAD_REQUEST, format!("{path}: size does not match the object")));
                }
                tree.insert(path, Entry::Lfs { sha256: oid, size: obj.len() as u64 });
            }
            "deletedFile" => {
                if tree.remove(&path).is_none() {
                    return Err((StatusCode::NOT_FOUND, format!("A file with this name doesn't exist: {path}")));
                }
            }
            "deletedFolder" => {
                let p = format!("{}/", path.trim_end_matches('/'));
                tree.retain(|k, _| !k.starts_with(&p));
            }
            other => return Err((StatusCode::BAD_REQUEST, format!("unknown operation {other}"))),
        }
    }
    Ok(tree)
}

async fn commit(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path((ns, name, rev)): Path<(String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
    h: HeaderMap,
    body: Bytes,
) -> Response {
    let action = match fault_for(&hub, &kill, Route::Commit).await {
        Err(r) => return r,
        Ok(a) => a,
    };
    if !authorized(&h) {
        return error(StatusCode::UNAUTHORIZED, None, "Invalid credentials in Authorization header");
    }
    let id = format!("{ns}/{name}");
    let create_pr = q.get("create_pr").is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
    let lines: Vec<serde_json::Value> =
        body.split(|b| *b == b'\n').filter(|l| !l.is_empty()).filter_map(|l| serde_json::from_slice(l).ok()).collect();
    let Some(header) = lines.first().filter(|l| l["key"] == "header") else {
        return error(StatusCode::BAD_REQUEST, None, "the first line must be the header");
    };
    let title = header["value"]["summary"].as_str().unwrap_or("").to_string();
    let parent_given = header["value"]["parentCommit"].as_str().map(str::to_string);
    if let Some(cas) = &hub.cas {
        // objects not uploaded through LFS: uploaded through Xet, if the CAS knows their SHA-256
        let wanted: Vec<String> = {
            let st = hub.st.lock().unwrap();
            lines
                .iter()
                .filter(|l| l["key"] == "lfsFile")
                .filter_map(|l| l["value"]["oid"].as_str())
                .filter(|oid| !st.objects.contains_key(*oid))
                .map(str::to_string)
                .collect()
        };
        for oid in wanted {
            if let Some((hash, bytes)) = xet_file(cas, &oid).await {
                let mut st = hub.st.lock().unwrap();
                st.objects.insert(oid.clone(), bytes);
                st.xet_hashes.insert(oid, hash);
            }
        }
    }
    let response = {
        let mut st = hub.st.lock().unwrap();
        if let Some(Action::ConcurrentCommit(files)) = &action {
            let add = files.iter().map(|(p, b)| (p.clone(), Entry::Regular(b.clone()))).collect();
            other_commit(&mut st, &id, &rev, add, &[]);
        }
        let Some(repo) = st.repos.get(&id) else {
            return error(StatusCode::NOT_FOUND, Some("RepoNotFound"), "Repository not found");
        };
        let Some(head) = repo.branches.get(&rev).cloned() else {
            return error(StatusCode::NOT_FOUND, Some("RevisionNotFound"), &format!("Invalid rev id: {rev}"));
        };
        let parent = match &parent_given {
            Some(p) if !head.starts_with(p.as_str()) => {
                if create_pr && repo.commits.contains_key(p) {
                    p.clone()
                } else {
                    return error(
                        StatusCode::PRECONDITION_FAILED,
                        None,
                        "Parent commit does not match the branch head.",
                    );
                }
            }
            _ => head.clone(),
        };
        let base = repo.commits[&parent].tree.clone();
        let mut ops = lines[1..].to_vec();
        if let Some(Action::ApplyPartialThenReset(skip)) = &action {
            ops.retain(|l| l["value"]["path"].as_str() != Some(skip.as_str()));
        }
        let tree = match apply(&st, &base, &ops) {
            Ok(t) => t,
            Err((s, m)) => return error(s, None, &m),
        };
        let c = new_commit_id(&mut st, &title);
        let repo = st.repos.get_mut(&id).unwrap();
        repo.commits.insert(c.clone(), Commit { parent: Some(parent), tree, title });
        let mut answer = serde_json::json!({
            "commitOid": c, "commitUrl": format!("{}/datasets/{id}/commit/{c}", hub.url), "commitMessage": header["value"]["summary"],
        });
        if create_pr {
            repo.prs += 1;
            let n = repo.prs;
            repo.branches.insert(format!("refs/pr/{n}"), c.clone());
            let description = header["value"]["description"].as_str().unwrap_or("").to_string();
            let title = header["value"]["summary"].as_str().unwrap_or("").to_string();
            repo.pulls.insert(n, Pull { title, description, status: "open".into() });
            answer["pullRequestUrl"] = format!("{}/datasets/{id}/discussions/{n}", hub.url).into();
        } else {
            repo.branches.insert(rev.clone(), c.clone());
        }
        json(StatusCode::OK, answer)
    };
    match action {
        Some(Action::ApplyThenReset) | Some(Action::ApplyPartialThenReset(_)) => {
            kill.0.notify_one();
            std::future::pending::<()>().await;
            response
        }
        Some(Action::ApplyThenDelay(d)) => {
            tokio::time::sleep(d).await;
            response
        }
        _ => response,
    }
}

async fn tag(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path((ns, name, rev)): Path<(String, String, String)>,
    h: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(r) = fault_for(&hub, &kill, Route::Tag).await {
        return r;
    }
    if !authorized(&h) {
        return error(StatusCode::UNAUTHORIZED, None, "Invalid credentials in Authorization header");
    }
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let tag = v["tag"].as_str().unwrap_or("").to_string();
    let mut st = hub.st.lock().unwrap();
    let Some(repo) = st.repos.get_mut(&format!("{ns}/{name}")) else {
        return error(StatusCode::NOT_FOUND, Some("RepoNotFound"), "Repository not found");
    };
    let Some(c) = resolve_rev(repo, &rev) else {
        return error(StatusCode::NOT_FOUND, Some("RevisionNotFound"), "Invalid rev id");
    };
    if repo.tags.contains_key(&tag) {
        return error(StatusCode::CONFLICT, None, &format!("Tag {tag} already exists"));
    }
    repo.tags.insert(tag, c);
    json(StatusCode::OK, serde_json::json!({}))
}

async fn refs(State(hub): State<Shared>, Path((ns, name)): Path<(String, String)>) -> Response {
    let st = hub.st.lock().unwrap();
    let Some(repo) = st.repos.get(&format!("{ns}/{name}")) else {
        return error(StatusCode::NOT_FOUND, Some("RepoNotFound"), "Repository not found");
    };
    let list = |m: &BTreeMap<String, String>, kind: &str| -> Vec<serde_json::Value> {
        m.iter()
            .filter(|(n, _)| !n.starts_with("refs/"))
            .map(|(n, c)| serde_json::json!({"name": n, "ref": format!("refs/{kind}/{n}"), "targetCommit": c}))
            .collect()
    };
    json(
        StatusCode::OK,
        serde_json::json!({"branches": list(&repo.branches, "heads"), "tags": list(&repo.tags, "tags"), "converts": []}),
    )
}

/// Tree entries (files and folders) under `path` (the root when empty).
fn entries(
    tree: &BTreeMap<String, Entry>,
    path: &str,
    recursive: bool,
    commit: &str,
    expand: bool,
    wrong_oid: &HashSet<String>,
    xet: &HashMap<String, String>,
) -> Option<Vec<serde_json::Value>> {
    let prefix = if path.is_empty() { String::new() } else { format!("{}/", path.trim_end_matches('/')) };
    if !path.is_empty() && !tree.keys().any(|k| k.starts_with(&prefix)) {
        return None;
    }
    let mut dirs = std::collections::BTreeSet::new();
    let mut files = Vec::new();
    for (p, e) in tree.iter().filter(|(p, _)| p.starts_with(&prefix)) {
        let rest = &p[prefix.len()..];
        let parts: Vec<&str> = rest.split('/').collect();
        for i in 1..parts.len() {
            if recursive || i == 1 {
                dirs.insert(format!("{prefix}{}", parts[..i].join("/")));
            }
        }
        if recursive || parts.len() == 1 {
            let oid = if wrong_oid.contains(p) { git_sha1(b"not these bytes") } else { e.oid() };
            let mut v = serde_json::json!({"type": "file", "oid": oid, "size": e.size(), "path": p});
            if let Entry::Lfs { sha256, size } = e {
                v["lfs"] =
                    serde_json::json!({"oid": sha256, "size": size, "pointerSize": pointer(sha256, *size).len()});
                if let Some(h) = xet.get(sha256) {
                    v["xetHash"] = h.clone().into();
                }
            }
            if expand {
                v["lastCommit"] =
                    serde_json::json!({"id": commit, "title": "commit", "date": "2026-01-01T00:00:00.000Z"});
                v["securityFileStatus"] = serde_json::json!({"status": "safe"});
            }
            files.push(v);
        }
    }
    let mut out: Vec<serde_json::Value> = dirs
        .into_iter()
        .map(|d| {
            let mut v = serde_json::json!({"type": "directory", "oid": git_sha1(d.as_bytes()), "size": 0, "path": d});
            if expand {
                v["lastCommit"] =
                    serde_json::json!({"id": commit, "title": "commit", "date": "2026-01-01T00:00:00.000Z"});
            }
            v
        })
        .collect();
    out.extend(files);
    out.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    Some(out)
}

fn truthy(q: &HashMap<String, String>, k: &str) -> bool {
    q.get(k).is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

async fn tree_any(
    hub: Shared,
    kill: ConnKill,
    ns: String,
    name: String,
    rev: String,
    path: String,
    q: HashMap<String, String>,
) -> Response {
    if let Err(r) = fault_for(&hub, &kill, Route::Tree).await {
        return r;
    }
    let id = format!("{ns}/{name}");
    let st = hub.st.lock().unwrap();
    let Some(repo) = st.repos.get(&id) else {
        return error(StatusCode::NOT_FOUND, Some("RepoNotFound"), "Repository not found");
    };
    let Some(c) = resolve_rev(repo, &rev) else {
        return error(StatusCode::NOT_FOUND, Some("RevisionNotFound"), "Invalid rev id");
    };
    let expand = truthy(&q, "expand");
    let Some(all) =
        entries(&repo.commits[&c].tree, &path, truthy(&q, "recursive"), &c, expand, &st.wrong_oid, &st.xet_hashes)
    else {
        return error(StatusCode::NOT_FOUND, Some("EntryNotFound"), &format!("{path} does not exist on \"{rev}\""));
    };
    let start: usize = q.get("cursor").and_then(|c| c.parse().ok()).unwrap_or(0);
    let size = if expand { st.page_size.min(50) } else { st.page_size };
    let page: Vec<_> = all.iter().skip(start).take(size).cloned().collect();
    let mut r = json(StatusCode::OK, serde_json::Value::Array(page));
    if start + size < all.len() {
        let mut params: Vec<String> =
            q.iter().filter(|(k, _)| *k != "cursor").map(|(k, v)| format!("{k}={v}")).collect();
        params.sort();
        params.push(format!("cursor={}", start + size));
        let p = if path.is_empty() { String::new() } else { format!("/{path}") };
        let link = format!(
            "<{}/api/datasets/{id}/tree/{}{p}?{}>; rel=\"next\"",
            hub.url,
            rev.replace('/', "%2F"),
            params.join("&")
        );
        r.headers_mut().insert("link", HeaderValue::from_str(&link).unwrap());
    }
    r
}

async fn tree_root(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path((ns, name, rev)): Path<(String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    tree_any(hub, kill, ns, name, rev, String::new(), q).await
}

async fn tree_path(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path((ns, name, rev, path)): Path<(String, String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    tree_any(hub, kill, ns, name, rev, path.trim_matches('/').to_string(), q).await
}

async fn paths_info(
    State(hub): State<Shared>,
    Path((ns, name, rev)): Path<(String, String, String)>,
    h: HeaderMap,
    body: Bytes,
) -> Response {
    let is_json = h.get("content-type").and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("json"));
    let (paths, expand): (Vec<String>, bool) = if is_json {
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        (
            v["paths"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .filter_map(|p| p.as_str().map(str::to_string))
                .collect(),
            v["expand"].as_bool().unwrap_or(false),
        )
    } else {
        let pairs = form_pairs(&String::from_utf8_lossy(&body));
        (
            pairs.iter().filter(|(k, _)| k == "paths").map(|(_, v)| v.clone()).collect(),
            pairs.iter().any(|(k, v)| k == "expand" && v.eq_ignore_ascii_case("true")),
        )
    };
    if paths.len() > 1000 {
        return error(StatusCode::PAYLOAD_TOO_LARGE, None, "too many paths");
    }
    let st = hub.st.lock().unwrap();
    let Some(repo) = st.repos.get(&format!("{ns}/{name}")) else {
        return error(StatusCode::NOT_FOUND, Some("RepoNotFound"), "Repository not found");
    };
    let Some(c) = resolve_rev(repo, &rev) else {
        return error(StatusCode::NOT_FOUND, Some("RevisionNotFound"), "Invalid rev id");
    };
    let tree = &repo.commits[&c].tree;
    let all = entries(tree, "", true, &c, expand, &st.wrong_oid, &st.xet_hashes).unwrap_or_default();
    let out: Vec<_> =
        all.into_iter().filter(|e| paths.iter().any(|p| e["path"].as_str() == Some(p.trim_matches('/')))).collect();
    json(StatusCode::OK, serde_json::Value::Array(out))
}

/// `GET /api/datasets/{repo}/discussions?type=&status=&p=`: the pull requests (this fake opens no
/// other discussions), newest first, `discussion_page` per page, as the Hub pages them (`count`,
/// `start`, `discussions`).
async fn discussions(
    State(hub): State<Shared>,
    Path((ns, name)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let st = hub.st.lock().unwrap();
    let id = format!("{ns}/{name}");
    let Some(repo) = st.repos.get(&id) else {
        return error(StatusCode::NOT_FOUND, Some("RepoNotFound"), "Repository not found");
    };
    let status = q.get("status").map(String::as_str).unwrap_or("all");
    let kind = q.get("type").map(String::as_str).unwrap_or("all");
    let all: Vec<serde_json::Value> = repo
        .pulls
        .iter()
        .rev()
        .filter(|(_, p)| status == "all" || p.status == status)
        .filter(|_| kind == "all" || kind == "pull_request")
        .map(|(n, p)| {
            serde_json::json!({
                "num": n, "title": p.title, "status": p.status, "isPullRequest": true,
                "createdAt": "2026-01-01T00:00:00.000Z", "author": {"name": "user"},
                "repo": {"name": id, "type": "dataset"}, "pinned": false, "numComments": 1, "topReactions": [],
            })
        })
        .collect();
    let page: usize = q.get("p").and_then(|p| p.parse().ok()).unwrap_or(0);
    let size = st.discussion_page.max(1);
    let items: Vec<_> = all.iter().skip(page * size).take(size).cloned().collect();
    json(
        StatusCode::OK,
        serde_json::json!({"discussions": items, "count": all.len(), "start": page * size, "numClosedDiscussions": 0}),
    )
}

/// `a=1&b=x%2Fy` → pairs, decoded (`+` is a space).
fn form_pairs(s: &str) -> Vec<(String, String)> {
    let dec = |t: &str| {
        let t = t.replace('+', " ");
        let b = t.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%'
                && i + 3 <= b.len()
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
    };
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (dec(k), dec(v)),
            None => (dec(p), String::new()),
        })
        .collect()
}

fn range_start(h: &HeaderMap) -> Option<usize> {
    let v = h.get("range")?.to_str().ok()?;
    v.strip_prefix("bytes=")?.split('-').next()?.parse().ok()
}

fn serve_bytes(h: &HeaderMap, data: &[u8], etag: &str, extra: &[(&'static str, String)]) -> Response {
    let total = data.len();
    let (status, body, range) = match range_start(h) {
        Some(n) if n < total => {
            (StatusCode::PARTIAL_CONTENT, data[n..].to_vec(), Some(format!("bytes {n}-{}/{total}", total - 1)))
        }
        _ => (StatusCode::OK, data.to_vec(), None),
    };
    let mut r = (status, body.clone()).into_response();
    let hm = r.headers_mut();
    hm.insert("content-length", HeaderValue::from(body.len()));
    hm.insert("etag", HeaderValue::from_str(&format!("\"{etag}\"")).unwrap());
    hm.insert("accept-ranges", HeaderValue::from_static("bytes"));
    if let Some(cr) = range {
        hm.insert("content-range", HeaderValue::from_str(&cr).unwrap());
    }
    for (k, v) in extra {
        hm.insert(*k, HeaderValue::from_str(v).unwrap());
    }
    r
}

async fn resolve(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path((ns, name, rev, path)): Path<(String, String, String, String)>,
    h: HeaderMap,
) -> Response {
    if let Err(r) = fault_for(&hub, &kill, Route::Resolve).await {
        return r;
    }
    let id = format!("{ns}/{name}");
    let st = hub.st.lock().unwrap();
    let Some(repo) = st.repos.get(&id) else {
        return error(StatusCode::NOT_FOUND, Some("RepoNotFound"), "Repository not found");
    };
    let Some(c) = resolve_rev(repo, &rev) else {
        return error(StatusCode::NOT_FOUND, Some("RevisionNotFound"), "Invalid rev id");
    };
    let commit_hdr = ("x-repo-commit", c.clone());
    match repo.commits[&c].tree.get(&path) {
        None => {
            let mut r = error(StatusCode::NOT_FOUND, Some("EntryNotFound"), &format!("{path} does not exist"));
            r.headers_mut().insert("x-repo-commit", HeaderValue::from_str(&c).unwrap());
            r
        }
        Some(Entry::Regular(b)) => serve_bytes(&h, b, &git_sha1(b), &[commit_hdr]),
        Some(Entry::Lfs { sha256, size }) => {
            let mut r = StatusCode::FOUND.into_response();
            let hm = r.headers_mut();
            hm.insert("location", HeaderValue::from_str(&format!("{}/lfs/objects/{sha256}", hub.cdn)).unwrap());
            hm.insert("x-linked-etag", HeaderValue::from_str(&format!("\"{sha256}\"")).unwrap());
            hm.insert("x-linked-size", HeaderValue::from(*size));
            hm.insert("etag", HeaderValue::from_str(&format!("\"{sha256}\"")).unwrap());
            hm.insert("x-repo-commit", HeaderValue::from_str(&c).unwrap());
            hm.insert("content-length", HeaderValue::from(0));
            if let Some(h) = st.xet_hashes.get(sha256) {
                // a Xet client reads the file from the CAS, with a token from the linked route
                hm.insert("x-xet-hash", HeaderValue::from_str(h).unwrap());
                let route = format!("{}/api/datasets/{ns}/{name}/xet-read-token/{c}", hub.url);
                hm.insert("link", HeaderValue::from_str(&format!("<{route}>; rel=\"xet-auth\"")).unwrap());
            }
            r
        }
    }
}

async fn cdn_get(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path(oid): Path<String>,
    h: HeaderMap,
) -> Response {
    if let Err(r) = fault_for(&hub, &kill, Route::Cdn).await {
        return r;
    }
    if h.contains_key("authorization") {
        return error(StatusCode::BAD_REQUEST, None, "the token must not reach the storage");
    }
    let st = hub.st.lock().unwrap();
    let Some(data) = st.objects.get(&oid) else {
        return error(StatusCode::NOT_FOUND, None, "no such object");
    };
    let mut data = data.clone();
    if st.altered.contains(&oid) {
        // a byte of the first page, after a Parquet file's `PAR1`: neither the listing nor a
        // read of the footer and page index sees it, only hashing the bytes
        let at = ALTERED_BYTE.min(data.len() - 1);
        data[at] ^= 0x01;
    }
    if st.truncated.contains(&oid) {
        data.truncate(data.len() * 9 / 10);
    }
    serve_bytes(&h, &data, &oid, &[])
}

/// `GET /api/datasets/{repo}/xet-write-token/{rev}` (and `xet-read-token`): the CAS and a token
/// for it, valid for an hour (`xet_token_ttl`); 404 without Xet storage.
async fn xet_token(
    State(hub): State<Shared>,
    axum::Extension(kill): Ext,
    Path((ns, name, _rev)): Path<(String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
    h: HeaderMap,
) -> Response {
    if let Err(r) = fault_for(&hub, &kill, Route::XetToken).await {
        return r;
    }
    let Some(cas) = hub.cas.as_ref().filter(|_| !hub.st.lock().unwrap().xet_in_batch_only || q.contains_key("refresh"))
    else {
        return error(StatusCode::NOT_FOUND, None, "Not Found");
    };
    if !authorized(&h) {
        return error(StatusCode::UNAUTHORIZED, None, "Invalid credentials in Authorization header");
    }
    if !hub.st.lock().unwrap().repos.contains_key(&format!("{ns}/{name}")) {
        return error(StatusCode::NOT_FOUND, Some("RepoNotFound"), "Repository not found");
    }
    let ttl = hub.st.lock().unwrap().xet_token_ttl.unwrap_or(3600);
    let exp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + ttl;
    let url = hub.st.lock().unwrap().cas_url.clone().unwrap_or_else(|| cas.url.clone());
    // as the Hub: in the body (hf-xet reads it) and in headers (the Python client reads them)
    let mut r = json(StatusCode::OK, serde_json::json!({"casUrl": url, "accessToken": "xet-cas-token", "exp": exp}));
    let hm = r.headers_mut();
    hm.insert("x-xet-cas-url", HeaderValue::from_str(&url).unwrap());
    hm.insert("x-xet-access-token", HeaderValue::from_static("xet-cas-token"));
    hm.insert("x-xet-token-expiration", HeaderValue::from(exp));
    r
}
