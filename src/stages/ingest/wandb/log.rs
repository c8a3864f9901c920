//! The binary transaction log of a W&B run: `run-<id>.wandb`.
//!
//! In: the bytes of a `.wandb` file as written by the W&B client (Python `datastore.py` up to
//! 0.17, the Go `wandb-core` `transactionlog` package after; format version 0). Out: the
//! protobuf records it holds, decoded into [`Event`]s (history rows, summary and config
//! updates, the run record, system-metric samples, the exit record), each with its byte offset
//! and 1-based record number; when the file is cut short, a [`Stop`] naming the byte offset
//! where reading stopped and why (every record before it is returned); and when a part inside
//! it is damaged, a [`Skip`] for each: reading goes on at the next 32 KiB block, as LevelDB's
//! log reader does, so only the records in the damaged part are lost.
//!
//! Framing (LevelDB log format with a W&B file header): the file starts with a 7-byte header,
//! `":W&B"`, the magic `0xBEE1` (little-endian `u16`) and the version byte `0`. The rest is cut
//! into 32 KiB blocks (the header counts towards the first). Each block holds chunks: a 7-byte
//! chunk header (`u32` checksum, `u16` length, `u8` type, little-endian) and `length` data
//! bytes; the types are FULL (1), FIRST (2), MIDDLE (3) and LAST (4), and a record is one FULL
//! chunk or FIRST, MIDDLE…, LAST. A chunk never starts in the last 6 bytes of a block; those are
//! zero padding, as is an all-zero chunk header. The checksum covers the type byte and the data:
//! W&B writes the plain CRC-32 (IEEE, as zlib computes it); a LevelDB writer uses the masked
//! CRC-32C (Castagnoli, rotated right by 15 bits plus `0xa282ead8`). Both are accepted.
//!
//! Records are `Record` messages of `wandb/proto/wandb_internal.proto`; only the fields runpack
//! uses are declared here (prost skips the others).

use std::io::Read;

use prost::Message;
use serde_json::{Map, Value};

/// Size of a block, in bytes.
pub const BLOCK: usize = 32 * 1024;
/// Size of the file header and of a chunk header, in bytes.
pub const HEADER: usize = 7;
/// The file identifier.
pub const IDENT: &[u8; 4] = b":W&B";
/// The file magic number.
pub const MAGIC: u16 = 0xBEE1;

/// Where and why reading a log stopped before its end.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    /// Byte offset of the first byte not read as part of an intact record.
    pub offset: u64,
    /// What was wrong there.
    pub reason: String,
    /// Whether the file ends there, inside a record or chunk (a writer stopped mid-way), rather
    /// than being damaged in its last block.
    pub truncated: bool,
}

/// A damaged part of a log that reading skipped: from the first byte of the record the damage
/// broke to where reading went on, the start of the next 32 KiB block (LevelDB's log reader
/// does the same) or the next intact chunk that starts a record. The records in between are
/// lost; the ones after it are read.
#[derive(Debug, Clone, PartialEq)]
pub struct Skip {
    /// Byte offset of the first byte skipped.
    pub offset: u64,
    /// Byte offset where reading went on.
    pub resumed: u64,
    /// What was wrong.
    pub reason: String,
}

/// One decoded record.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Byte offset of the record's first chunk header.
    pub offset: u64,
    /// 1-based number of the record in the file.
    pub number: u64,
    /// What the record says.
    pub event: Event,
}

/// The records runpack reads; anything else is [`Event::Other`].
#[derive(Debug, Clone)]
pub enum Event {
    /// `HistoryRecord`: one `wandb.log` call. `items` maps key paths (the key, or the nested
    /// key parts) to values parsed from their JSON text; `step` is `HistoryStep.num`.
    History {
        /// `HistoryStep.num` when present.
        step: Option<i64>,
        /// Key path → value.
        items: Vec<(Vec<String>, Value)>,
    },
    /// `SummaryRecord`: updates and removals of summary keys.
    Summary {
        /// Key path → new value.
        update: Vec<(Vec<String>, Value)>,
        /// Key paths removed.
        remove: Vec<Vec<String>>,
    },
    /// `ConfigRecord`: updates and removals of config keys.
    Config {
        /// Key path → new value.
        update: Vec<(Vec<String>, Value)>,
        /// Key paths removed.
        remove: Vec<Vec<String>>,
    },
    /// `RunRecord`: the run's identity and settings at start.
    Run(Box<RunInfo>),
    /// `StatsRecord`: one sample of system metrics.
    Stats {
        /// Seconds since the Unix epoch (with the nanoseconds as a fraction).
        timestamp: Option<f64>,
        /// Metric name → value.
        items: Vec<(String, Value)>,
    },
    /// `RunExitRecord`.
    Exit {
        /// Process exit code.
        exit_code: i32,
        /// Run time in whole seconds.
        runtime: i32,
    },
    /// `MetricRecord`: one `define_metric` call (see [`super::axes`]).
    Metric {
        /// The metric's name (empty for a glob).
        name: String,
        /// The glob the definition applies to (`eval/*`; empty for a name).
        glob_name: String,
        /// The metric it is plotted against (empty: none).
        step_metric: String,
    },
    /// `FinalRecord`: the last record of a finished log.
    Final,
    /// `EnvironmentRecord`: the run's host, OS, Python, git and hardware (wandb 0.19 and later
    /// write it in place of `wandb-metadata.json` in an offline run).
    Environment(Box<super::environment::Environment>),
    /// Any other record (output, files, telemetry, …).
    Other,
}

/// The fields of a `RunRecord` that runpack keeps.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// Run id.
    pub run_id: String,
    /// Entity (user or team).
    pub entity: String,
    /// Project.
    pub project: String,
    /// Group.
    pub group: String,
    /// Job type.
    pub job_type: String,
    /// Display name.
    pub display_name: String,
    /// Notes.
    pub notes: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Start time, seconds since the Unix epoch.
    pub start_time: Option<f64>,
    /// Start time as the record holds it: (seconds, nanoseconds).
    pub start_exact: Option<(i64, i32)>,
    /// Whether this log continues an earlier run (resume).
    pub resumed: bool,
    /// The config the run started with.
    pub config: Vec<(Vec<String>, Value)>,
    /// First step of this log (resumed runs).
    pub starting_step: i64,
}

// ---- protobuf messages (field numbers from wandb_internal.proto) ----

#[derive(Clone, PartialEq, Message)]
struct PbRecord {
    #[prost(int64, tag = "1")]
    num: i64,
    #[prost(oneof = "PbRecordType", tags = "2, 3, 5, 7, 12, 17, 18, 20, 26")]
    record_type: Option<PbRecordType>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
#[allow(clippy::large_enum_variant)]
enum PbRecordType {
    #[prost(message, tag = "2")]
    History(PbHistory),
    #[prost(message, tag = "3")]
    Summary(PbUpdates),
    #[prost(message, tag = "5")]
    Config(PbUpdates),
    #[prost(message, tag = "7")]
    Stats(PbStats),
    #[prost(message, tag = "12")]
    Metric(PbMetric),
    #[prost(message, tag = "17")]
    Run(PbRun),
    #[prost(message, tag = "18")]
    Exit(PbExit),
    #[prost(message, tag = "20")]
    Final(PbEmpty),
    #[prost(message, tag = "26")]
    Environment(super::environment::Environment),
}

/// `HistoryRecord { repeated HistoryItem item = 1; HistoryStep step = 2; }`
#[derive(Clone, PartialEq, Message)]
struct PbHistory {
    #[prost(message, repeated, tag = "1")]
    item: Vec<PbItem>,
    #[prost(message, optional, tag = "2")]
    step: Option<PbStep>,
}

/// `HistoryItem`, `SummaryItem`, `ConfigItem`: `key = 1`, `nested_key = 2`, `value_json = 16`.
#[derive(Clone, PartialEq, Message)]
struct PbItem {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(string, repeated, tag = "2")]
    nested_key: Vec<String>,
    #[prost(string, tag = "16")]
    value_json: String,
}

#[derive(Clone, PartialEq, Message)]
struct PbStep {
    #[prost(int64, tag = "1")]
    num: i64,
}

/// `SummaryRecord` / `ConfigRecord { repeated …Item update = 1; repeated …Item remove = 2; }`
#[derive(Clone, PartialEq, Message)]
struct PbUpdates {
    #[prost(message, repeated, tag = "1")]
    update: Vec<PbItem>,
    #[prost(message, repeated, tag = "2")]
    remove: Vec<PbItem>,
}

/// `StatsRecord { StatsType stats_type = 1; Timestamp timestamp = 2; repeated StatsItem item = 3; }`
#[derive(Clone, PartialEq, Message)]
struct PbStats {
    #[prost(int32, tag = "1")]
    stats_type: i32,
    #[prost(message, optional, tag = "2")]
    timestamp: Option<PbTimestamp>,
    #[prost(message, repeated, tag = "3")]
    item: Vec<PbStatsItem>,
}

/// `StatsItem { string key = 1; string value_json = 16; }`
#[derive(Clone, PartialEq, Message)]
struct PbStatsItem {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(string, tag = "16")]
    value_json: String,
}

/// `google.protobuf.Timestamp { int64 seconds = 1; int32 nanos = 2; }`
#[derive(Clone, PartialEq, Message)]
struct PbTimestamp {
    #[prost(int64, tag = "1")]
    seconds: i64,
    #[prost(int32, tag = "2")]
    nanos: i32,
}

/// `RunRecord` (subset).
#[derive(Clone, PartialEq, Message)]
struct PbRun {
    #[prost(string, tag = "1")]
    run_id: String,
    #[prost(string, tag = "2")]
    entity: String,
    #[prost(string, tag = "3")]
    project: String,
    #[prost(message, optional, tag = "4")]
    config: Option<PbUpdates>,
    #[prost(string, tag = "6")]
    run_group: String,
    #[prost(string, tag = "7")]
    job_type: String,
    #[prost(string, tag = "8")]
    display_name: String,
    #[prost(string, tag = "9")]
    notes: String,
    #[prost(string, repeated, tag = "10")]
    tags: Vec<String>,
    #[prost(int64, tag = "14")]
    starting_step: i64,
    #[prost(message, optional, tag = "17")]
    start_time: Option<PbTimestamp>,
    #[prost(bool, tag = "18")]
    resumed: bool,
}

/// `MetricRecord { string name = 1; string glob_name = 2; string step_metric = 4; … }`
#[derive(Clone, PartialEq, Message)]
struct PbMetric {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    glob_name: String,
    #[prost(string, tag = "4")]
    step_metric: String,
}

/// `RunExitRecord { int32 exit_code = 1; int32 runtime = 2; }`
#[derive(Clone, PartialEq, Message)]
struct PbExit {
    #[prost(int32, tag = "1")]
    exit_code: i32,
    #[prost(int32, tag = "2")]
    runtime: i32,
}

#[derive(Clone, PartialEq, Message)]
struct PbEmpty {}

// ---- framing ----

/// Checks the 7-byte file header.
///
/// Errors: a message saying what the first bytes are instead.
pub fn check_header(head: &[u8]) -> Result<(), String> {
    if head.len() < HEADER {
        return Err(format!("the file is {} bytes long, shorter than the 7-byte W&B log header", head.len()));
    }
    if &head[..4] != IDENT {
        return Err(format!(
            "the file does not start with the W&B log identifier \":W&B\" (found {:02x?})",
            &head[..4]
        ));
    }
    let magic = u16::from_le_bytes([head[4], head[5]]);
    if magic != MAGIC {
        return Err(format!("bad W&B log magic number {magic:#06x} (expected {MAGIC:#06x})"));
    }
    if head[6] != 0 {
        return Err(format!("W&B log format version {} is not supported (only version 0)", head[6]));
    }
    Ok(())
}

fn crc_ok(stored: u32, type_and_data: &[u8]) -> bool {
    if crc32fast::hash(type_and_data) == stored {
        return true;
    }
    let c = crc32c::crc32c(type_and_data);
    c.rotate_right(15).wrapping_add(0xa282_ead8) == stored
}

/// What [`read_frames`] calls per record: (byte offset, record number, bytes).
pub type FrameFn<'a> = dyn FnMut(u64, u64, &[u8]) -> Result<(), String> + 'a;

/// Reads the records of a log, calling `f` with (byte offset, record number, record bytes) for
/// every intact record, in order. Damage inside the file (a checksum mismatch, zeros where a
/// chunk header fits, a chunk that cannot be) skips to the next block, noted in `skipped`, and
/// reading goes on there; the chunks that continue a broken record are skipped with it, and a
/// record left unfinished is skipped alone.
///
/// Returns `Ok(None)` when the log ends cleanly, `Ok(Some(stop))` when the file ends inside a
/// record or chunk, or is damaged in its last block (every record before has been delivered).
///
/// Errors: `Err(message)` when the file is not a W&B log at all (bad header) or cannot be read.
// One piece: a block-by-block state machine (the record being assembled, its offset, the
// record count, the skips) whose damage handling (`damaged!`) leaves the chunk loop or the
// function; split, that state would travel in a struct and every exit come back as a value.
pub fn read_frames(mut r: impl Read, f: &mut FrameFn, skipped: &mut Vec<Skip>) -> Result<Option<Stop>, String> {
    let mut block = vec![0u8; BLOCK];
    let mut block_start: u64 = 0;
    let mut record: Vec<u8> = Vec::new();
    let mut record_offset: Option<u64> = None;
    let mut number: u64 = 0;
    let mut first = true;
    loop {
        let n = read_full(&mut r, &mut block).map_err(|e| format!("read failed at byte {block_start}: {e}"))?;
        // damage at byte `$at` of this block: drop the record being assembled and go on at the
        // next block; in the last block (shorter than 32 KiB) reading stops there
        macro_rules! damaged {
            ($at:expr, $reason:expr) => {{
                let from = record_offset.take().unwrap_or($at);
                record.clear();
                if n < BLOCK {
                    return Ok(Some(Stop { offset: from, reason: $reason, truncated: false }));
                }
                let resumed = block_start + BLOCK as u64;
                match skipped.last_mut() {
                    // the chunks of one broken record, met block after block, are one skip
                    Some(last) if last.resumed == from => last.resumed = resumed,
                    _ => skipped.push(Skip { offset: from, resumed, reason: $reason }),
                }
                break;
            }};
        }
        if n == 0 {
            break;
        }
        let mut i = 0usize;
        if first {
            check_header(&block[..n])?;
            i = HEADER;
            first = false;
        }
        while i + HEADER <= n {
            let at = block_start + i as u64;
            let h = &block[i..i + HEADER];
            let checksum = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
            let len = u16::from_le_bytes([h[4], h[5]]) as usize;
            let kind = h[6];
            if checksum == 0 && len == 0 && kind == 0 {
                // a writer pads only the last 6 bytes of a block, which no chunk header fits
                // in: zeros where a header fits are damage (zeroed, or never written)
                if block[i..n].iter().any(|&b| b != 0) {
                    damaged!(at, "an all-zero chunk header followed by non-zero bytes".to_string());
                }
                damaged!(
                    at,
                    format!("{} zero bytes from byte {at} to the end of the block, where records were", n - i)
                );
            }
            let end = i + HEADER + len;
            if end > BLOCK {
                damaged!(at, format!("chunk at byte {at} claims {len} bytes, past the end of its 32 KiB block"));
            }
            if end > n {
                return Ok(Some(stop(
                    record_offset.unwrap_or(at),
                    &format!(
                        "the file ends inside the record (chunk at byte {at} needs {len} bytes, {} are there)",
                        n - i - HEADER
                    ),
                )));
            }
            if !crc_ok(checksum, &block[i + HEADER - 1..end]) {
                damaged!(at, format!("checksum mismatch in the chunk at byte {at}"));
            }
            let data = &block[i + HEADER..end];
            match kind {
                1 | 2 => {
                    // a record left unfinished before this intact chunk: it alone is lost
                    if let Some(o) = record_offset.take() {
                        let reason = "a record was left unfinished (FIRST without LAST)".to_string();
                        skipped.push(Skip { offset: o, resumed: at, reason });
                    }
                    if kind == 1 {
                        number += 1;
                        f(at, number, data)?;
                    } else {
                        record.clear();
                        record.extend_from_slice(data);
                        record_offset = Some(at);
                    }
                }
                3 | 4 => {
                    let Some(o) = record_offset else {
                        // the rest of a record whose start was lost: this chunk alone is
                        // skipped, the block read on; right after a skip (the record it
                        // broke), it joins that skip
                        let reason =
                            format!("a {} chunk without a FIRST chunk", if kind == 3 { "MIDDLE" } else { "LAST" });
                        let resumed = block_start + end as u64;
                        match skipped.last_mut() {
                            Some(last) if last.resumed == at => last.resumed = resumed,
                            _ => skipped.push(Skip { offset: at, resumed, reason }),
                        }
                        i = end;
                        if BLOCK - i < HEADER {
                            break;
                        }
                        continue;
                    };
                    record.extend_from_slice(data);
                    if kind == 4 {
                        number += 1;
                        f(o, number, &record)?;
                        record_offset = None;
                    }
                }
                other => {
                    damaged!(at, format!("unknown chunk type {other} at byte {at}"));
                }
            }
            i = end;
            if BLOCK - i < HEADER {
                break;
            }
        }
        if n < BLOCK {
            // a short block is the end of the file
            if let Some(o) = record_offset {
                return Ok(Some(stop(o, "the file ends inside a record that spans blocks")));
            }
            let tail = if i + HEADER > n && i < n { &block[i..n] } else { &[][..] };
            if !tail.is_empty() && tail.iter().any(|&b| b != 0) {
                return Ok(Some(stop(block_start + i as u64, "the file ends inside a chunk header")));
            }
            return Ok(None);
        }
        block_start += BLOCK as u64;
    }
    if first {
        return Err("the file is empty (no W&B log header)".into());
    }
    if let Some(o) = record_offset {
        return Ok(Some(stop(o, "the file ends inside a record that spans blocks")));
    }
    Ok(None)
}

/// Where a file that ends inside a record or chunk stops being read.
fn stop(offset: u64, reason: &str) -> Stop {
    Stop { offset, reason: reason.to_string(), truncated: true }
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

// ---- records ----

/// Decodes one record's bytes.
///
/// Errors: a message when the bytes are not a `Record` message or a value is not JSON.
pub fn decode(bytes: &[u8]) -> Result<Event, String> {
    let rec = PbRecord::decode(bytes).map_err(|e| format!("not a W&B protobuf record: {e}"))?;
    Ok(match rec.record_type {
        Some(PbRecordType::History(h)) => Event::History { step: h.step.map(|s| s.num), items: items(&h.item)? },
        Some(PbRecordType::Summary(u)) => Event::Summary { update: items(&u.update)?, remove: paths(&u.remove) },
        Some(PbRecordType::Config(u)) => Event::Config { update: items(&u.update)?, remove: paths(&u.remove) },
        Some(PbRecordType::Stats(s)) => Event::Stats {
            timestamp: s.timestamp.map(|t| t.seconds as f64 + t.nanos as f64 / 1e9),
            items: s
                .item
                .iter()
                .map(|i| Ok((i.key.clone(), value(&i.value_json).map_err(|m| format!("stats {}: {m}", i.key))?)))
                .collect::<Result<_, String>>()?,
        },
        Some(PbRecordType::Run(r)) => Event::Run(Box::new(RunInfo {
            run_id: r.run_id,
            entity: r.entity,
            project: r.project,
            group: r.run_group,
            job_type: r.job_type,
            display_name: r.display_name,
            notes: r.notes,
            tags: r.tags,
            start_time: r.start_time.as_ref().map(|t| t.seconds as f64 + t.nanos as f64 / 1e9),
            start_exact: r.start_time.as_ref().map(|t| (t.seconds, t.nanos)),
            resumed: r.resumed,
            config: match &r.config {
                Some(c) => items(&c.update)?,
                None => Vec::new(),
            },
            starting_step: r.starting_step,
        })),
        Some(PbRecordType::Metric(m)) => {
            Event::Metric { name: m.name, glob_name: m.glob_name, step_metric: m.step_metric }
        }
        Some(PbRecordType::Exit(e)) => Event::Exit { exit_code: e.exit_code, runtime: e.runtime },
        Some(PbRecordType::Final(_)) => Event::Final,
        Some(PbRecordType::Environment(e)) => Event::Environment(Box::new(e)),
        None => Event::Other,
    })
}

fn path_of(i: &PbItem) -> Vec<String> {
    if i.nested_key.is_empty() { vec![i.key.clone()] } else { i.nested_key.clone() }
}

fn items(list: &[PbItem]) -> Result<Vec<(Vec<String>, Value)>, String> {
    list.iter()
        .map(|i| {
            let p = path_of(i);
            let v = value(&i.value_json).map_err(|m| format!("{}: {m}", p.join(".")))?;
            Ok((p, v))
        })
        .collect()
}

fn paths(list: &[PbItem]) -> Vec<Vec<String>> {
    list.iter().map(path_of).collect()
}

/// Parses a `value_json` text (JSON with Python's bare `NaN`/`Infinity` tokens).
pub fn value(text: &str) -> Result<Value, String> {
    let bytes = text.as_bytes();
    let rewritten = crate::stages::ingest::lenient::rewrite(bytes);
    serde_json::from_slice(rewritten.as_deref().unwrap_or(bytes))
        .map_err(|e| format!("value is not JSON ({e}): {text:.80}"))
}

/// Sets `path` in a nested object to `v` (creating objects on the way).
pub fn set_path(root: &mut Map<String, Value>, path: &[String], v: Value) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut cur = root;
    for p in parents {
        let slot = cur.entry(p.clone()).or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        cur = slot.as_object_mut().expect("object");
    }
    cur.insert(last.clone(), v);
}

/// Removes `path` from a nested object.
pub fn remove_path(root: &mut Map<String, Value>, path: &[String]) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut cur = root;
    for p in parents {
        match cur.get_mut(p).and_then(Value::as_object_mut) {
            Some(next) => cur = next,
            None => return,
        }
    }
    // the other keys keep their order
    cur.shift_remove(last);
}

/// What [`read_all`] gives: the intact records decoded, where reading stopped early, and the
/// damaged parts skipped.
pub type LogRead = (Vec<Entry>, Option<Stop>, Vec<Skip>);

/// Reads a whole log: every intact record decoded, where reading stopped early, and the
/// damaged parts it skipped (see [`read_frames`]). A record that passed its checksum but is
/// no valid protobuf record (or holds a value that is not JSON) is skipped too, as one damaged
/// part: its framing is whole, so the records after it are read.
///
/// Errors: a message when the file is not a W&B log (bad header).
pub fn read_all(r: impl Read) -> Result<LogRead, String> {
    let mut out: Vec<Entry> = Vec::new();
    let mut undecodable: Vec<(u64, u64, String)> = Vec::new();
    let mut skipped = Vec::new();
    let stop = read_frames(
        r,
        &mut |offset, number, bytes| {
            match decode(bytes) {
                Ok(event) => out.push(Entry { offset, number, event }),
                Err(m) => {
                    undecodable.push((offset, offset + (HEADER + bytes.len()) as u64, format!("record {number}: {m}")))
                }
            }
            Ok(())
        },
        &mut skipped,
    )?;
    for (offset, end, reason) in undecodable {
        // reading went on at the next record read, whole or not
        let resumed = out.iter().map(|e| e.offset).find(|&o| o > offset).unwrap_or(end);
        skipped.push(Skip { offset, resumed, reason });
    }
    skipped.sort_by_key(|s| s.offset);
    Ok((out, stop, skipped))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes records in the W&B framing (IEEE CRC), for tests.
    pub fn frame(records: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(IDENT);
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.push(0);
        for r in records {
            let mut rest: &[u8] = r;
            let mut first = true;
            loop {
                let left = BLOCK - out.len() % BLOCK;
                if left < HEADER {
                    out.extend(std::iter::repeat_n(0u8, left));
                    continue;
                }
                let take = rest.len().min(left - HEADER);
                let last = take == rest.len();
                let kind: u8 = match (first, last) {
                    (true, true) => 1,
                    (true, false) => 2,
                    (false, false) => 3,
                    (false, true) => 4,
                };
                let mut td = vec![kind];
                td.extend_from_slice(&rest[..take]);
                out.extend_from_slice(&crc32fast::hash(&td).to_le_bytes());
                out.extend_from_slice(&(take as u16).to_le_bytes());
                out.extend_from_slice(&td);
                rest = &rest[take..];
                first = false;
                if last {
                    break;
                }
            }
        }
        out
    }

    fn history(step: i64, key: &str, v: &str) -> Vec<u8> {
        PbRecord {
            num: step,
            record_type: Some(PbRecordType::History(PbHistory {
                item: vec![
                    PbItem { key: "_step".into(), nested_key: vec![], value_json: step.to_string() },
                    PbItem { key: String::new(), nested_key: vec![key.into()], value_json: v.into() },
                ],
                step: Some(PbStep { num: step }),
            })),
        }
        .encode_to_vec()
    }

    #[test]
    fn reads_records_across_blocks() {
        let mut recs: Vec<Vec<u8>> = (0..2000).map(|i| history(i, "loss", &format!("{}", i as f64 / 3.0))).collect();
        recs.push(history(2000, "big", &format!("\"{}\"", "x".repeat(80_000))));
        recs.push(history(2001, "nan", "NaN"));
        let bytes = frame(&recs);
        assert!(bytes.len() > 3 * BLOCK);
        let (entries, stop, _) = read_all(&bytes[..]).unwrap();
        assert!(stop.is_none(), "{stop:?}");
        assert_eq!(entries.len(), 2002);
        match &entries[1999].event {
            Event::History { step, items } => {
                assert_eq!(*step, Some(1999));
                assert_eq!(items[1].1, serde_json::json!(1999.0 / 3.0));
            }
            other => panic!("{other:?}"),
        }
        match &entries[2001].event {
            Event::History { items, .. } => {
                assert!(crate::stages::ingest::lenient::special(items[1].1.as_str().unwrap()).is_some())
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_record_that_does_not_decode_is_skipped_and_reading_goes_on() {
        // whole framing, but the second record's bytes are no protobuf message
        let bytes = frame(&[history(0, "loss", "0.5"), vec![0xff, 0xff, 0xff], history(1, "loss", "0.25")]);
        let (entries, stop, skipped) = read_all(&bytes[..]).unwrap();
        assert!(stop.is_none(), "{stop:?}");
        assert_eq!(entries.iter().map(|e| e.number).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(skipped.len(), 1);
        assert_eq!(
            (skipped[0].offset, skipped[0].resumed),
            (entries[0].offset + 7 + history(0, "loss", "0.5").len() as u64, entries[1].offset)
        );
        assert!(skipped[0].reason.starts_with("record 2: not a W&B protobuf record"), "{:?}", skipped[0]);
    }

    #[test]
    fn truncation_and_corruption_stop_with_an_offset() {
        // enough records for several 32 KiB blocks
        let recs: Vec<Vec<u8>> = (0..3000).map(|i| history(i, "loss", "0.5")).collect();
        let bytes = frame(&recs);
        assert!(bytes.len() > 3 * BLOCK);
        // cut in the middle of record 51
        let mut offsets = Vec::new();
        let mut skipped = Vec::new();
        read_frames(
            &bytes[..],
            &mut |o, _, _| {
                offsets.push(o);
                Ok(())
            },
            &mut skipped,
        )
        .unwrap();
        assert!(skipped.is_empty());
        let cut = offsets[50] as usize + 10;
        let (entries, stop, skipped) = read_all(&bytes[..cut]).unwrap();
        assert_eq!(entries.len(), 50);
        assert!(skipped.is_empty());
        let stop = stop.unwrap();
        assert_eq!(stop.offset, offsets[50]);
        assert!(stop.reason.contains("ends inside"), "{}", stop.reason);
        // flip a byte inside record 21: the rest of its block is skipped, the next blocks read
        let mut bad = bytes.clone();
        bad[offsets[20] as usize + 9] ^= 0xff;
        let (entries, stop, skipped) = read_all(&bad[..]).unwrap();
        assert!(stop.is_none(), "{stop:?}");
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert_eq!(skipped[0].offset, offsets[20]);
        assert!(skipped[0].reason.contains("checksum mismatch"), "{}", skipped[0].reason);
        // the records that start in a later block, after the one that may span into it
        let later: Vec<u64> = offsets.iter().copied().filter(|&o| o >= BLOCK as u64).collect();
        let steps: Vec<i64> = entries
            .iter()
            .map(|e| match &e.event {
                Event::History { step, .. } => step.unwrap(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(&steps[..20], &(0..20).collect::<Vec<_>>()[..]);
        assert_eq!(entries.len(), 20 + later.len());
        assert_eq!(entries[20].offset, later[0]);
        assert_eq!(*steps.last().unwrap(), 2999);
        assert!(skipped[0].resumed <= later[0] && skipped[0].resumed >= BLOCK as u64, "{skipped:?}");
        // zeros from record 21 to the end of its block (a writer pads 6 bytes at most): the same
        let mut zeroed = bytes.clone();
        zeroed[offsets[20] as usize..BLOCK].fill(0);
        let (entries, stop, skipped) = read_all(&zeroed[..]).unwrap();
        assert!(stop.is_none(), "{stop:?}");
        assert_eq!(entries.len(), 20 + later.len());
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert!(skipped[0].reason.contains("zero bytes"), "{}", skipped[0].reason);
        // not a log
        assert!(read_all(&b"hello world"[..]).unwrap_err().contains(":W&B"));
    }

    #[test]
    fn a_record_left_unfinished_loses_itself_only() {
        let chunk = |kind: u8, data: &[u8]| {
            let mut td = vec![kind];
            td.extend_from_slice(data);
            let mut c = crc32fast::hash(&td).to_le_bytes().to_vec();
            c.extend_from_slice(&(data.len() as u16).to_le_bytes());
            c.extend_from_slice(&td);
            c
        };
        // a LAST chunk whose start is gone, then an intact FULL record in the same block
        let mut bytes = frame(&[]);
        let orphan_at = bytes.len() as u64;
        bytes.extend(chunk(4, b"end of a record"));
        let full_at = bytes.len() as u64;
        bytes.extend(chunk(1, &history(6, "loss", "0.5")));
        let (entries, _, skipped) = read_all(&bytes[..]).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].offset, full_at);
        assert_eq!((skipped[0].offset, skipped[0].resumed), (orphan_at, full_at));
        // a FIRST chunk whose record never ends, then an intact FULL record
        let mut bytes = frame(&[]);
        let first_at = bytes.len() as u64;
        bytes.extend(chunk(2, b"half a record"));
        let full_at = bytes.len() as u64;
        bytes.extend(chunk(1, &history(7, "loss", "0.5")));
        let (entries, stop, skipped) = read_all(&bytes[..]).unwrap();
        assert!(stop.is_none(), "{stop:?}");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].offset, full_at);
        assert_eq!(
            skipped,
            [Skip {
                offset: first_at,
                resumed: full_at,
                reason: "a record was left unfinished (FIRST without LAST)".into()
            }]
        );
    }

    #[test]
    fn masked_crc32c_is_accepted() {
        let data = b"\x01abc";
        let c = crc32c::crc32c(data).rotate_right(15).wrapping_add(0xa282_ead8);
        assert!(crc_ok(c, data));
        assert!(crc_ok(crc32fast::hash(data), data));
        assert!(!crc_ok(0x1234, data));
    }
}
