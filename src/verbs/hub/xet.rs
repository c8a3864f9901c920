//! Uploads through the Hub's Xet storage, with the `hf-xet` crate (huggingface/xet-core).
//!
//! In: where the Hub's content-addressed store (CAS) is and a write token for it ([`XetAccess`],
//! from `GET /api/datasets/{repo}/xet-write-token/{revision}` or from the `X-Xet-*` headers of
//! an LFS batch answer that picked `xet`), and the files to send. Out: [`XetStats`], the bytes
//! that travelled. Side effects: chunks (xorbs) and file records (shards) stored in the CAS;
//! hf-xet's shard cache and staging files, in the cache folder the caller passes.
//!
//! hf-xet cuts each file into content-defined chunks and sends only the chunks the CAS does not
//! hold yet. It knows them from its shard cache (the chunks sent from this cache folder before)
//! and by asking the CAS about the first chunk of each file and about one chunk in about 1024. The commit that follows
//! names each file by its SHA-256, as an LFS pointer: the Hub finds the file's Xet record by
//! that SHA-256, which hf-xet stores with it. hf-xet reads its tuning settings from `HF_XET_*`
//! environment variables, as it does under the Python client.
//!
//! hf-xet is called directly, not through the `hf-hub` crate (1.0.0): hf-hub uploads to Xet only
//! inside its own commit ([`super::publish`] says why that commit is not used).

use std::path::PathBuf;

use xet::xet_session::{HeaderMap, Sha256Policy, XetConfig, XetSessionBuilder};

use super::RetryPolicy;

use crate::core::error::{Error, Result};
use crate::core::progress::{Progress, Unit};

/// Where and how to upload to the CAS.
#[derive(Clone)]
pub struct XetAccess {
    /// The CAS endpoint (`casUrl`).
    pub cas_url: String,
    /// The CAS write token (`accessToken`).
    pub access_token: String,
    /// When the token expires, in Unix seconds (`exp`).
    pub expires: u64,
    /// Where a fresh token is read before this one expires (a `GET` answering `casUrl`,
    /// `accessToken` and `exp`).
    pub refresh_url: String,
    /// The headers of that `GET` (the Hub token).
    pub refresh_headers: HeaderMap,
}

impl std::fmt::Debug for XetAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XetAccess")
            .field("cas_url", &self.cas_url)
            .field("expires", &self.expires)
            .field("refresh_url", &self.refresh_url)
            .finish_non_exhaustive()
    }
}

/// One file to send.
#[derive(Debug, Clone)]
pub struct XetFile {
    /// The local file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its SHA-256, lowercase hex (stored with the file's Xet record).
    pub sha256: String,
}

/// What an upload through Xet sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XetStats {
    /// Bytes of the files handed to Xet.
    pub file_bytes: u64,
    /// Bytes of those files in chunks the CAS did not hold (before compression).
    pub new_bytes: u64,
    /// Bytes sent to the CAS: new chunks, compressed, in xorbs.
    pub xorb_bytes: u64,
    /// Bytes sent to the CAS: the file records (shards).
    pub shard_bytes: u64,
}

impl XetStats {
    /// Bytes that travelled to the CAS (xorbs and shards).
    pub fn sent_bytes(&self) -> u64 {
        self.xorb_bytes + self.shard_bytes
    }

    /// Adds another upload's numbers.
    pub fn add(&mut self, other: &XetStats) {
        self.file_bytes += other.file_bytes;
        self.new_bytes += other.new_bytes;
        self.xorb_bytes += other.xorb_bytes;
        self.shard_bytes += other.shard_bytes;
    }
}

/// Uploads `files` to the CAS of `access` in one Xet upload session. `cache` is hf-xet's cache
/// folder (its shard cache and staging); the Python client's is `$HF_HOME/xet`. Each file's
/// record is checked against its size and SHA-256. Failed CAS requests are retried as `retry`
/// says (retries, first wait, longest wait), in place of hf-xet's own `HF_XET_CLIENT_RETRY_*`.
///
/// Errors: [`Error::Hub`] naming the CAS and what hf-xet reported (a refused token, a CAS that
/// cannot be reached, a file whose record does not match it).
pub async fn upload(
    access: &XetAccess,
    files: &[XetFile],
    cache: &std::path::Path,
    retry: &RetryPolicy,
    progress: &dyn Progress,
) -> Result<XetStats> {
    let cas = &access.cas_url;
    fn fail<E: std::error::Error + Send + Sync + 'static>(cas: &str, what: &str, e: E) -> Error {
        Error::hub_caused(format!("Xet upload to {cas}: {what}: {e}; nothing was committed"), e)
    }
    let mut config = XetConfig::new();
    config.client.retry_max_attempts = retry.max_retries;
    config.client.retry_base_delay = retry.min_delay;
    config.client.retry_max_duration = retry.max_delay;
    let session = XetSessionBuilder::new_with_config(config)
        .with_cache_dir(cache)
        .build()
        .map_err(|e| fail(cas, "cannot start an upload session", e))?;
    let commit = session
        .new_upload_commit()
        .map_err(|e| fail(cas, "cannot start an upload", e))?
        .with_endpoint(cas.clone())
        .with_token_info(access.access_token.clone(), access.expires)
        .with_token_refresh_url(access.refresh_url.clone(), access.refresh_headers.clone())
        .build()
        .await
        .map_err(|e| fail(cas, "cannot start an upload", e))?;
    let total: u64 = files.iter().map(|f| f.bytes).sum();
    progress.start("uploading (Xet)", Unit::Bytes, Some(total));
    let mut handles = Vec::with_capacity(files.len());
    for f in files {
        let h = commit
            .upload_from_path(f.path.clone(), Sha256Policy::from_hex(&f.sha256))
            .await
            .map_err(|e| fail(cas, &f.path.display().to_string(), e))?;
        handles.push((f, h));
    }
    for (f, h) in &handles {
        let meta = h.finalize_ingestion().await.map_err(|e| fail(cas, &f.path.display().to_string(), e))?;
        let info = &meta.xet_info;
        if info.file_size() != Some(f.bytes) || info.sha256.as_deref().map(str::to_lowercase) != Some(f.sha256.clone())
        {
            return Err(Error::hub(format!(
                "Xet upload to {cas}: {}: the Xet record has {} bytes and sha256 {}, the file {} bytes and sha256 {}",
                f.path.display(),
                info.file_size().map(|n| n.to_string()).unwrap_or_else(|| "unknown".into()),
                info.sha256.as_deref().unwrap_or("unknown"),
                f.bytes,
                f.sha256
            )));
        }
        progress.advance(f.bytes);
    }
    let report = commit.commit().await.map_err(|e| fail(cas, "finishing the upload", e))?;
    progress.finish();
    let m = &report.dedup_metrics;
    Ok(XetStats {
        file_bytes: m.total_bytes,
        new_bytes: m.new_bytes,
        xorb_bytes: m.xorb_bytes_uploaded,
        shard_bytes: m.shard_bytes_uploaded,
    })
}
