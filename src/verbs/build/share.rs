//! A build's place in a cluster's share (`--engine-share`): what the executors read the
//! build's staged sources and written tables from.
//!
//! In: the engine and the share, a folder or an object store prefix (`s3://BUCKET/PREFIX`,
//! `gs://BUCKET/PREFIX`). Out: a `.runpack-build-*` folder of the build's own there, removed
//! when the build ends, and the paths or URLs the executors read.
//!
//! A build killed by a signal cannot remove its folder; the next build removes the ones that
//! are provably stale, never a live build's:
//! - In a folder, a build holds an exclusive lock (`flock`) on its `.runpack-build-*` folder
//!   while it runs; the kernel drops it when the process dies, `kill -9` included. A folder
//!   that can be locked belongs to a build that is gone. A build takes a shared lock on the
//!   share while it makes and locks its folder, and removes stale folders only while it holds
//!   the share exclusively: no folder is ever seen before it is locked.
//! - In an object store, a build writes `owner` (host name, process id and the process's
//!   start time) in its prefix first. A prefix whose owner is a process of this host that no
//!   longer runs (no such process id, or one started at another time) is removed; the
//!   prefixes of other hosts are left alone.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt as _;
use object_store::ObjectStoreExt as _;
use tokio::io::AsyncWriteExt as _;

use crate::core::error::{Error, Result};
use crate::core::options::BuildOptions;
use crate::sql::engine::Engine;

/// The name every build's folder in the share starts with.
const PREFIX: &str = ".runpack-build-";

/// Where `--engine-share` points.
pub(super) enum ShareAt {
    /// A folder the client and every executor reach by the same path.
    Folder(PathBuf),
    /// A prefix in an object store (`s3://BUCKET/PREFIX`, `gs://BUCKET/PREFIX`).
    Store(url::Url),
}

/// A build's use of a Ballista cluster (`--engine`): the engine, and the build's folder in
/// the share.
pub(super) struct Cluster {
    /// The scheduler.
    pub(super) engine: Engine,
    place: Place,
}

/// The build's folder in the share.
enum Place {
    /// In a shared folder, locked while the build runs.
    Folder { dir: PathBuf, _lock: Option<std::fs::File> },
    /// Under a prefix of an object store.
    Store {
        store: Arc<dyn object_store::ObjectStore>,
        /// `s3://BUCKET` (what the store is registered under).
        bucket: url::Url,
        /// The build's prefix in the bucket (`PREFIX/.runpack-build-…`).
        prefix: object_store::path::Path,
    },
}

impl Cluster {
    /// `None` without `--engine`; the engine and `--engine-share` with it.
    ///
    /// Errors: [`Error::Config`] for a bad address, a missing `--engine-share` or an object
    /// store URL that cannot be read.
    pub(super) fn engine(opts: &BuildOptions) -> Result<Option<(Engine, ShareAt)>> {
        let Some(address) = &opts.engine else { return Ok(None) };
        let engine = Engine::parse(address, "--engine (or RUNPACK_ENGINE)")?;
        let Some(share) = &opts.engine_share else {
            return Err(Error::config(
                "--engine",
                format!(
                    "a build on {} needs --engine-share (or RUNPACK_ENGINE_SHARE): a folder that this process and \
                     every executor reach by the same path, or an object store prefix (s3://BUCKET/PREFIX, \
                     gs://BUCKET/PREFIX), where the build stages its sources",
                    engine.address()
                ),
            ));
        };
        let text = share.to_string_lossy();
        if let Some((scheme, _)) = text.split_once("://") {
            let url = url::Url::parse(&text).map_err(|e| {
                Error::config("--engine-share", format!("{text:?} is not a URL ({e}); write s3://BUCKET/PREFIX"))
            })?;
            if !matches!(scheme, "s3" | "gs") {
                return Err(Error::config(
                    "--engine-share",
                    format!(
                        "{scheme}:// is not an object store runpack writes to; write s3://BUCKET/PREFIX or gs://BUCKET/PREFIX, or a folder"
                    ),
                ));
            }
            return Ok(Some((engine, ShareAt::Store(url))));
        }
        let share = std::path::absolute(share).map_err(|e| Error::io(share, e))?;
        Ok(Some((engine, ShareAt::Folder(share))))
    }

    /// Removes the stale folders of killed builds from the share (see the module's doc),
    /// then makes the build's own.
    ///
    /// Errors: [`Error::Io`] when the share cannot hold a folder; [`Error::Refused`] naming
    /// the share when the object store refuses.
    pub(super) async fn new((engine, at): (Engine, ShareAt)) -> Result<Cluster> {
        let place = match at {
            ShareAt::Folder(share) => new_folder(&share)?,
            ShareAt::Store(url) => new_prefix(&url).await?,
        };
        Ok(Cluster { engine, place })
    }

    /// The folder the build stages its sources and sort runs in: the build's folder in a
    /// shared folder, else `local` (the sources are then copied to the object store).
    pub(super) fn work(&self, local: &Path) -> PathBuf {
        match &self.place {
            Place::Folder { dir, .. } => dir.clone(),
            Place::Store { .. } => local.to_path_buf(),
        }
    }

    /// Lets `ctx` read the build's object store (a no-op for a shared folder).
    pub(super) fn register(&self, ctx: &datafusion::prelude::SessionContext) {
        if let Place::Store { store, bucket, .. } = &self.place {
            ctx.register_object_store(bucket, store.clone());
        }
    }

    /// Where the executors read `file`, a staged source written in [`Cluster::work`]: the
    /// file itself in a shared folder, else a copy of it in the object store (`file` is then
    /// removed).
    ///
    /// Errors: [`Error::Io`] for the file, [`Error::Refused`] naming the share for the store.
    pub(super) async fn place_source(&self, file: &Path) -> Result<PathBuf> {
        match &self.place {
            Place::Folder { .. } => Ok(file.to_path_buf()),
            Place::Store { .. } => {
                let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let to = self.upload(file, &format!("sources/{name}")).await?;
                std::fs::remove_file(file).map_err(|e| Error::io(file, e))?;
                Ok(to)
            }
        }
    }

    /// Places a written table's files in the share (hard links in a shared folder on the
    /// same file system, else copies) and returns where the executors read them.
    ///
    /// Errors: [`Error::Io`] for a file, [`Error::Refused`] naming the share for the store.
    pub(super) async fn share_table(&self, table: &str, files: &[PathBuf]) -> Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        match &self.place {
            Place::Folder { dir, .. } => {
                let dir = dir.join("tables").join(table);
                std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                for (i, f) in files.iter().enumerate() {
                    let to = dir.join(format!("{i:05}.parquet"));
                    if std::fs::hard_link(f, &to).is_err() {
                        std::fs::copy(f, &to).map_err(|e| Error::io(&to, e))?;
                    }
                    out.push(to);
                }
            }
            Place::Store { .. } => {
                for (i, f) in files.iter().enumerate() {
                    out.push(self.upload(f, &format!("tables/{table}/{i:05}.parquet")).await?);
                }
            }
        }
        Ok(out)
    }

    /// Removes the build's folder from the share.
    ///
    /// Errors: [`Error::Io`] or [`Error::Refused`] naming what could not be removed.
    pub(super) async fn remove(self) -> Result<()> {
        match &self.place {
            Place::Folder { dir, .. } => match std::fs::remove_dir_all(dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(dir, e)),
                _ => Ok(()),
            },
            Place::Store { store, bucket, prefix } => {
                delete_prefix(store.as_ref(), prefix).await.map_err(|e| store_error(bucket, prefix, &e))
            }
        }
    }

    /// Copies `file` to `name` under the build's prefix, in parts (bounded memory), and
    /// returns its URL.
    async fn upload(&self, file: &Path, name: &str) -> Result<PathBuf> {
        let Place::Store { store, bucket, prefix } = &self.place else { return Ok(file.to_path_buf()) };
        let to = object_store::path::Path::from(format!("{prefix}/{name}"));
        let failed = |e: &dyn std::fmt::Display| store_error(bucket, &to, e);
        let mut from = tokio::fs::File::open(file).await.map_err(|e| Error::io(file, e))?;
        let mut writer = object_store::buffered::BufWriter::new(store.clone(), to.clone());
        tokio::io::copy(&mut from, &mut writer).await.map_err(|e| failed(&e))?;
        writer.shutdown().await.map_err(|e| failed(&e))?;
        let url = format!("{}/{to}", bucket.as_str().trim_end_matches('/'));
        tracing::info!("{} copied to {url}", file.display());
        Ok(PathBuf::from(url))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // a build that failed before [`Cluster::remove`] leaves no folder behind (an object
        // store's prefix is removed by `remove` only: it needs the runtime)
        if let Place::Folder { dir, .. } = &self.place {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The error of an object store operation on `path`: the URL and what the store said (it
/// names no credentials).
fn store_error(bucket: &url::Url, path: &object_store::path::Path, e: &dyn std::fmt::Display) -> Error {
    let text = format!("the share {}/{path}: {e}", bucket.as_str().trim_end_matches('/'));
    Error::Refused(crate::sql::engine::redact(&text))
}

/// Removes the stale build folders of `share`, then makes and locks a new one.
fn new_folder(share: &Path) -> Result<Place> {
    std::fs::create_dir_all(share).map_err(|e| Error::io(share, e))?;
    let guard = std::fs::File::open(share).ok();
    if let Some(g) = &guard
        && g.try_lock().is_ok()
    {
        remove_stale_folders(share);
        let _ = g.unlock();
    }
    // no stale-folder removal runs while this build makes and locks its folder
    if let Some(g) = &guard {
        g.lock_shared().map_err(|e| Error::io(share, e))?;
    }
    let dir = tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-", std::process::id()))
        .tempdir_in(share)
        .map_err(|e| Error::io(share, e))?
        .keep();
    let lock = std::fs::File::open(&dir).ok().filter(|f| f.try_lock().is_ok());
    drop(guard);
    Ok(Place::Folder { dir, _lock: lock })
}

/// Removes the `.runpack-build-*` folders of `share` that no running build holds locked.
/// Called while holding the share exclusively.
fn remove_stale_folders(share: &Path) {
    let Ok(entries) = std::fs::read_dir(share) else { return };
    for e in entries.flatten() {
        let is_build = e.file_name().to_string_lossy().starts_with(PREFIX) && e.file_type().is_ok_and(|t| t.is_dir());
        if !is_build {
            continue;
        }
        let Ok(f) = std::fs::File::open(e.path()) else { continue };
        if f.try_lock().is_ok() {
            tracing::info!("removing {}, left by a build that was killed", e.path().display());
            if let Err(err) = std::fs::remove_dir_all(e.path()) {
                tracing::warn!("a killed build's folder {} was not removed: {err}", e.path().display());
            }
        }
    }
}

/// This process as `owner` records it: host name, process id, start time.
fn owner_line(pid: u32) -> Option<String> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    Some(format!("{} {pid} {}\n", host.trim(), process_start(pid)?))
}

/// A process's start time (clock ticks after boot, `/proc/PID/stat`'s field 22), or `None`
/// when no such process runs (or the system has no `/proc`).
fn process_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name, in parentheses, may hold spaces: the fields after it are plain
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_string)
}

/// Whether `owner` (an `owner` object's text) names a process of this host that is gone.
fn owner_gone(owner: &str) -> bool {
    let mut parts = owner.split_whitespace();
    let (Some(host), Some(pid), Some(start)) = (parts.next(), parts.next(), parts.next()) else { return false };
    let Ok(this_host) = std::fs::read_to_string("/proc/sys/kernel/hostname") else { return false };
    let Ok(pid) = pid.parse::<u32>() else { return false };
    host == this_host.trim() && process_start(pid).is_none_or(|s| s != start)
}

/// Removes the stale build prefixes under `url`'s prefix, then writes the owner of a new one.
async fn new_prefix(url: &url::Url) -> Result<Place> {
    let store = crate::sql::engine::store_from_env(url)?;
    let bucket = url::Url::parse(&format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default()))
        .map_err(|e| Error::config("--engine-share", format!("{url}: {e}")))?;
    let base = object_store::path::Path::from(url.path().trim_matches('/'));
    let listed = store.list_with_delimiter(Some(&base)).await.map_err(|e| store_error(&bucket, &base, &e))?;
    for dir in listed.common_prefixes {
        if !dir.filename().is_some_and(|n| n.starts_with(PREFIX)) {
            continue;
        }
        let owner = dir.clone().join("owner");
        let Ok(text) = store.get(&owner).await else { continue };
        let Ok(bytes) = text.bytes().await else { continue };
        if owner_gone(&String::from_utf8_lossy(&bytes)) {
            tracing::info!("removing {bucket}/{dir}, left by a build that was killed");
            if let Err(e) = delete_prefix(store.as_ref(), &dir).await {
                tracing::warn!("a killed build's prefix {bucket}/{dir} was not removed: {e}");
            }
        }
    }
    let pid = std::process::id();
    let unique = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let prefix = base.clone().join(format!("{PREFIX}{pid}-{unique:x}"));
    // without /proc the owner cannot be checked: the prefix is then never taken for stale
    let owner = owner_line(pid).unwrap_or_else(|| "? 0 ?\n".into());
    let at = prefix.clone().join("owner");
    store.put(&at, owner.into_bytes().into()).await.map_err(|e| store_error(&bucket, &at, &e))?;
    Ok(Place::Store { store, bucket, prefix })
}

/// Deletes every object under `prefix`.
async fn delete_prefix(
    store: &dyn object_store::ObjectStore,
    prefix: &object_store::path::Path,
) -> object_store::Result<()> {
    let listed = store.list(Some(prefix)).map(|m| m.map(|m| m.location)).boxed();
    let mut deleted = store.delete_stream(listed);
    while let Some(r) = deleted.next().await {
        r?;
    }
    Ok(())
}
