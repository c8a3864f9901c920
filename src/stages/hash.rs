//! Hashing: SHA-256 (FIPS 180-4) of files for manifests and `SHA256SUMS`, and the git blob
//! SHA-1 (`sha1("blob <len>\0" + bytes)`) the Hub reports for files stored in git.
//!
//! In: file paths. Out: lowercase hex digests and byte counts. Files are read in 1 MiB blocks,
//! or mapped from the page cache from 4 MiB on (memory does not grow with file size);
//! [`sha256_files`] spreads files over the machine's cores.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::core::error::{Error, Result};
use crate::core::numbers::group_digits;

/// Digest and size of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDigest {
    /// Lowercase hex SHA-256.
    pub sha256: String,
    /// Size in bytes.
    pub bytes: u64,
}

/// SHA-256 and size of a file.
///
/// Errors: [`Error::Io`] naming the file.
pub fn sha256_file(path: &Path) -> Result<FileDigest> {
    sha256_file_counting(path, &|_| {})
}

/// [`sha256_file`], telling `read` of the bytes as they are hashed.
///
/// Errors: as [`sha256_file`].
pub fn sha256_file_counting(path: &Path, read: &(dyn Fn(u64) + Sync)) -> Result<FileDigest> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let size = f.metadata().map_err(|e| Error::io(path, e))?.len();
    if size >= MAP_BYTES
        && let Some(d) = sha256_mapped(&f, size, read)
    {
        return Ok(d);
    }
    sha256_read(&mut f, read).map_err(|e| Error::io(path, e))
}

/// SHA-256 and size of what `r` gives to its end (a decompressed stream), read in 1 MiB
/// blocks.
///
/// Errors: the reader's.
pub fn sha256_reader(mut r: impl Read) -> std::io::Result<FileDigest> {
    sha256_read(&mut r, &|_| {})
}

/// [`sha256_reader`], telling `read` of the bytes as they are hashed.
fn sha256_read(r: &mut dyn Read, read: &(dyn Fn(u64) + Sync)) -> std::io::Result<FileDigest> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        bytes += n as u64;
        read(n as u64);
    }
    Ok(FileDigest { sha256: hex::encode(h.finalize()), bytes })
}

/// Files of this size or more are hashed from a mapping of the page cache ([`sha256_mapped`]).
const MAP_BYTES: u64 = 4 << 20;

/// How much of a file [`sha256_mapped`] maps at once: the mapped pages it has touched count in
/// the process's resident memory until they are unmapped, two windows at most (the one hashed
/// and the next).
const MAP_WINDOW_BYTES: u64 = 2 << 20;

/// SHA-256 of the `size` bytes of `f`, read through read-only memory mappings of 2 MiB at a
/// time; `None` when the file cannot be mapped (some FUSE and network file systems), to be
/// read instead.
///
/// Reading copies each byte from the page cache into a buffer before hashing it; a mapping
/// hashes the page cache itself. On an 82.9 MB Parquet file, SHA-NI on one core: 52 ms
/// against 59 ms with 256 KiB or 1 MiB reads (Xeon; [`update_ahead`] makes the difference),
/// and 50 ms against 61-63 ms on an EPYC.
/// A second thread maps each window with its pages in place (`MAP_POPULATE`) while the one
/// before is hashed: touched one by one, the pages of an 81 MB file took 4.4 ms of page
/// faults on the hashing thread (EPYC).
/// A file truncated by another process while it is hashed ends the process with SIGBUS (as
/// it ends ripgrep when it maps a file); a file changed in place gives a digest that is no
/// version's, as a read does.
fn sha256_mapped(f: &std::fs::File, size: u64, read: &(dyn Fn(u64) + Sync)) -> Option<FileDigest> {
    let windows: Vec<(u64, usize)> = (0..size)
        .step_by(usize::try_from(MAP_WINDOW_BYTES).ok()?)
        .map(|offset| Some((offset, usize::try_from(MAP_WINDOW_BYTES.min(size - offset)).ok()?)))
        .collect::<Option<_>>()?;
    std::thread::scope(|s| {
        // a rendezvous: the next window is mapped while this one is hashed, and no further
        let (tx, rx) = std::sync::mpsc::sync_channel::<Option<memmap2::Mmap>>(0);
        let windows = &windows;
        s.spawn(move || {
            for &(offset, len) in windows {
                // SAFETY: the mapping is read-only and private to this function; its bytes
                // are only read while it lives. A concurrent truncation is the SIGBUS said
                // above.
                let map = unsafe { memmap2::MmapOptions::new().offset(offset).len(len).populate().map(f) }.ok();
                let mapped = map.is_some();
                // the hashing side stopped, or a window did not map (after others did: the
                // file is read whole instead)
                if tx.send(map).is_err() || !mapped {
                    break;
                }
            }
        });
        let mut h = Sha256::new();
        for _ in windows {
            let map = rx.recv().ok()??;
            for piece in map.chunks(1 << 20) {
                update_ahead(&mut h, piece);
                read(piece.len() as u64);
            }
        }
        Some(FileDigest { sha256: hex::encode(h.finalize()), bytes: size })
    })
}

/// How far ahead of the hashing [`update_ahead`] asks for bytes, and how much it hashes
/// between two asks.
const AHEAD_BYTES: usize = 2048;
const AHEAD_STEP_BYTES: usize = 1024;

/// Feeds `data` to `h`, asking the CPU to load each cache line 2 KiB before it is hashed.
///
/// sha2's SHA-NI code reads its input 64 bytes at a time, slower than the hardware's
/// prefetcher follows a stream across 4 KiB pages: on a Xeon (2 cores, SHA-NI), SHA-256 ran at
/// 1.15 GB/s over bytes that were not in the core's caches against 1.71 GB/s over bytes that
/// were (ring's and aws-lc's code alike). Asking ahead gives 1.6-1.7 GB/s on such bytes: an
/// 82.9 MB file mapped from the page cache hashed in 52 ms against 76 ms (medians of 7).
/// Bytes just read into a buffer are in the caches already: they are hashed as they are.
fn update_ahead(h: &mut Sha256, data: &[u8]) {
    let mut at = 0;
    while at < data.len() {
        let end = (at + AHEAD_STEP_BYTES).min(data.len());
        #[cfg(target_arch = "x86_64")]
        for line in (at + AHEAD_BYTES..(end + AHEAD_BYTES).min(data.len())).step_by(64) {
            // SAFETY: `line` is inside `data`; a prefetch only hints the cache, it reads
            // nothing and cannot fault.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(data.as_ptr().add(line).cast());
            }
        }
        h.update(&data[at..end]);
        at = end;
    }
}

/// SHA-256 of many files, using every core; results in input order.
///
/// Errors: the first file (in input order) that cannot be read; see [`sha256_each`] for every
/// file's own result.
pub fn sha256_files(paths: &[PathBuf]) -> Result<Vec<FileDigest>> {
    sha256_each(paths).into_iter().collect()
}

/// SHA-256 of many files, using every core: each file's digest or [`Error::Io`] naming it, in
/// input order.
pub fn sha256_each(paths: &[PathBuf]) -> Vec<Result<FileDigest>> {
    sha256_each_counting(paths, &|_| {})
}

/// [`sha256_each`], telling `read` of the bytes as they are hashed (from several threads).
pub fn sha256_each_counting(paths: &[PathBuf], read: &(dyn Fn(u64) + Sync)) -> Vec<Result<FileDigest>> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(paths.len().max(1));
    // the largest files first, so that no thread starts a large file while the others are
    // nearly done (one file is hashed by one thread)
    let mut order: Vec<usize> = (0..paths.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(std::fs::metadata(&paths[i]).map(|m| m.len()).unwrap_or(0)));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Result<FileDigest>>>> =
        paths.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&i) = order.get(k) else { break };
                    *results[i].lock().expect("lock") = Some(sha256_file_counting(&paths[i], read));
                }
            });
        }
    });
    results.into_iter().map(|m| m.into_inner().expect("lock").expect("computed")).collect()
}

/// Digests of files taken while something else read them, by path: a file read to its end
/// once need not be read again to be hashed. Cloning shares the same set.
#[derive(Debug, Clone, Default)]
pub struct ReadDigests(std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<PathBuf, FileDigest>>>);

impl ReadDigests {
    /// The digest of `path`, if a [`HashingReader`] read it to its end.
    pub fn get(&self, path: &Path) -> Option<FileDigest> {
        self.0.lock().expect("lock").get(path).cloned()
    }

    /// A reader of `inner` (the bytes of the file at `path`, from its start) that records
    /// the file's digest here when it reaches the end.
    pub fn reader<R>(&self, path: &Path, inner: R) -> HashingReader<R> {
        HashingReader { inner, hasher: Sha256::new(), bytes: 0, path: path.to_path_buf(), digests: Some(self.clone()) }
    }
}

/// A reader that passes bytes through from an inner reader and computes their SHA-256 and
/// count on the way; made by [`ReadDigests::reader`]. A read that fails or stops before the
/// end records nothing.
pub struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
    path: PathBuf,
    /// Where the digest goes; taken when it is recorded.
    digests: Option<ReadDigests>,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            self.hasher.update(&buf[..n]);
            self.bytes += n as u64;
        } else if !buf.is_empty()
            && let Some(digests) = self.digests.take()
        {
            let sha256 = hex::encode(std::mem::take(&mut self.hasher).finalize());
            let digest = FileDigest { sha256, bytes: self.bytes };
            digests.0.lock().expect("lock").insert(std::mem::take(&mut self.path), digest);
        }
        Ok(n)
    }
}

/// A writer that passes bytes through to an inner writer and computes their SHA-256 and count
/// on the way, so that a file is hashed while it is written instead of read back afterwards.
pub struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    bytes: u64,
}

impl<W> HashingWriter<W> {
    /// Wraps `inner`; nothing is hashed yet.
    pub fn new(inner: W) -> Self {
        HashingWriter { inner, hasher: Sha256::new(), bytes: 0 }
    }

    /// Bytes passed through so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The inner writer, and the digest and size of every byte passed through it. Flush the
    /// inner writer yourself if it buffers.
    pub fn finish(self) -> (W, FileDigest) {
        (self.inner, FileDigest { sha256: hex::encode(self.hasher.finalize()), bytes: self.bytes })
    }
}

/// The most a [`HashingWriter`] passes to its inner writer at once: small enough that the
/// bytes the inner writer has just read (the kernel's copy into the page cache) are still in
/// the core's L2 cache when they are hashed. Hashing a multi-MiB buffer after writing it all
/// reads it from memory a second time; on a 2-core Xeon, writing and hashing 1 GiB of 8 MiB
/// buffers took 1.0-1.3 s this way against 1.1-2.9 s whole.
pub const WRITE_PIECE_BYTES: usize = 256 * 1024;

impl<W: std::io::Write> std::io::Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let piece = &buf[..buf.len().min(WRITE_PIECE_BYTES)];
        let n = self.inner.write(piece)?;
        self.hasher.update(&piece[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// SHA-256 of bytes, lowercase hex.
pub fn sha256_bytes(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// Git blob SHA-1 of a file (the `oid` the Hub lists for files not stored in LFS).
pub fn git_blob_sha1(path: &Path) -> Result<String> {
    use sha1::Sha1;
    let len = std::fs::metadata(path).map_err(|e| Error::io(path, e))?.len();
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = Sha1::new();
    h.update(format!("blob {len}\0").as_bytes());
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// A count of rows in words: `1 row`, `1,234 rows`.
pub fn rows(n: u64) -> String {
    format!("{} row{}", group_digits(n), if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_read_to_its_end_leaves_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.jsonl");
        std::fs::write(&path, "{\"a\": 1}\n".repeat(100_000)).unwrap();
        let digests = ReadDigests::default();
        let mut whole = Vec::new();
        digests.reader(&path, std::fs::File::open(&path).unwrap()).read_to_end(&mut whole).unwrap();
        assert_eq!(digests.get(&path), Some(sha256_file(&path).unwrap()));
        // a read that stops early records nothing
        let other = ReadDigests::default();
        let mut part = [0u8; 100];
        other.reader(&path, std::fs::File::open(&path).unwrap()).read_exact(&mut part).unwrap();
        assert_eq!(other.get(&path), None);
    }

    #[test]
    fn hashing_ahead_gives_the_plain_digest() {
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        for len in [0, 1, 63, 1023, 1024, 1025, 2047, 2048, 2049, 3072, 10_000] {
            let mut h = Sha256::new();
            update_ahead(&mut h, &bytes[..len]);
            assert_eq!(h.finalize(), Sha256::digest(&bytes[..len]), "{len} bytes");
        }
    }

    #[test]
    fn mapped_and_read_files_give_the_same_digest_and_count() {
        let dir = tempfile::tempdir().unwrap();
        // one byte under, at and over the size from which files are mapped; over one window
        for size in
            [MAP_BYTES - 1, MAP_BYTES, MAP_BYTES + (3 << 20) + 7, 2 * MAP_WINDOW_BYTES, 2 * MAP_WINDOW_BYTES + 5]
        {
            let path = dir.path().join(format!("f{size}"));
            let bytes: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            std::fs::write(&path, &bytes).unwrap();
            let counted = std::sync::atomic::AtomicU64::new(0);
            let d = sha256_file_counting(&path, &|n| {
                counted.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            })
            .unwrap();
            assert_eq!(d, FileDigest { sha256: hex::encode(Sha256::digest(&bytes)), bytes: size });
            assert_eq!(counted.into_inner(), size);
        }
    }

    #[test]
    fn hashing_writer_matches_file_digest() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut w = HashingWriter::new(std::fs::File::create(&p).unwrap());
        for chunk in [&b"hello "[..], b"", b"world\n"] {
            w.write_all(chunk).unwrap();
        }
        let (_, d) = w.finish();
        assert_eq!(d, sha256_file(&p).unwrap());
        assert_eq!(d.bytes, 12);
    }

    /// Buffers longer than a piece, and an inner writer that takes fewer bytes than offered,
    /// hash exactly the bytes that reached it, in order.
    #[test]
    fn hashing_writer_hashes_what_the_inner_writer_took() {
        use std::io::Write;
        struct Takes1000(Vec<u8>);
        impl Write for Takes1000 {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                let n = buf.len().min(1000);
                self.0.extend_from_slice(&buf[..n]);
                Ok(n)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let data: Vec<u8> = (0..3 * WRITE_PIECE_BYTES + 17).map(|i| (i * 7 % 251) as u8).collect();
        let mut big = HashingWriter::new(Vec::new());
        big.write_all(&data).unwrap();
        let (inner, d) = big.finish();
        assert_eq!(inner, data);
        assert_eq!((d.sha256.as_str(), d.bytes), (sha256_bytes(&data).as_str(), data.len() as u64));
        let mut small = HashingWriter::new(Takes1000(Vec::new()));
        small.write_all(&data[..5000]).unwrap();
        assert_eq!(small.write(&data[5000..]).unwrap(), 1000);
        let (inner, d) = small.finish();
        assert_eq!(inner.0, &data[..6000]);
        assert_eq!(d.sha256, sha256_bytes(&data[..6000]));
    }

    #[test]
    fn digests_and_units() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"hello\n").unwrap();
        assert_eq!(sha256_file(&p).unwrap().sha256, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
        assert_eq!(git_blob_sha1(&p).unwrap(), "ce013625030ba8dba906f756967f9e9ca394464a");
    }
}
