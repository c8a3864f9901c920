//! TensorBoard event files (`events.out.tfevents.<time>.<host>.<pid>.<n>`), as PyTorch's and
//! tensorboardX's `SummaryWriter` (the Trainer's `report_to="tensorboard"`, TRL, OpenRLHF),
//! verl's `tensorboard` logger and `tf.summary` write them, shaped into rows of fixed columns.
//!
//! A file is a sequence of TFRecords (`tensorflow/core/lib/io/record_writer.cc`): the data's
//! length (u64, little-endian), the length's masked CRC-32C, the data, the data's masked
//! CRC-32C. Each record's data is an `Event` protobuf (`tensorflow/core/util/event.proto`):
//! `wall_time` (seconds since the Unix epoch, a double), `step`, and one of `file_version`,
//! `summary`, `session_log`, …. A `Summary` holds values, each with a `tag` and one of
//! `simple_value` (a float32), `histo`, `image`, `audio` or `tensor` (a `TensorProto`, as
//! TF2's `tf.summary.scalar` and the text plugin write), with the writing plugin in its
//! `metadata`.
//!
//! `tensorboard`: one row per summary value, in long form: `log_dir` (the writer's folder,
//! relative to the pipeline, from the file's path), `step` (Int64), `wall_time` (Float64,
//! seconds), `tag`, `kind` (`scalar`, `text`, `hparam`, `histogram`, `image`, `audio`, or the
//! plugin of another tensor: `hparams`, `pr_curves`, …; `tensor` without one), `value`
//! (Float64: a scalar's value, a float32 widened exactly; NaN and ±Infinity kept) and
//! `value_text` (a text summary's text). `add_hparams` writes a run's hyperparameters into a
//! folder of its own below the writer's, named by the time: each is a row of kind `hparam`
//! (its name the tag, its value a number or a text), in the writer's `log_dir`. Rows of other
//! kinds say what was logged, where and when, without its content.

use std::io::Read;

use prost::Message;
use serde_json::{Map, Value};

use super::convert::Target;
use super::records::Item;
use super::wandb::pylit;
use crate::core::error::{Error, Result};
use crate::core::report::Position;

/// Columns of `tensorboard`.
pub fn columns() -> Vec<(String, Target)> {
    vec![
        ("log_dir".into(), Target::Str),
        ("step".into(), Target::Int64),
        ("wall_time".into(), Target::Float64),
        ("tag".into(), Target::Str),
        ("kind".into(), Target::Str),
        ("value".into(), Target::Float64),
        ("value_text".into(), Target::Text),
    ]
}

/// The writer's folder of the event file at `rel` (a path relative to the pipeline): the
/// file's folder, or the one above it when that is named by a time, as `add_hparams` names
/// the folder it writes (`1733400000.123456`); `.` at the top.
pub fn log_dir(rel: &str) -> String {
    let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
    let (parent, last) = dir.rsplit_once('/').unwrap_or(("", dir));
    let timed = !last.is_empty() && last.chars().all(|c| c.is_ascii_digit() || c == '.') && last.contains('.');
    let dir = if timed { parent } else { dir };
    if dir.is_empty() { ".".into() } else { dir.to_string() }
}

/// Whether file name `name` is a TensorBoard event file's (`events.out.tfevents.…`).
pub fn is_event_file(name: &str) -> bool {
    name.starts_with("events.out.tfevents.")
}

/// Whether the file at `path` (`rel` names it for its compression: `.gz`, `.zst`) starts as a
/// TFRecord file does: a length and its checksum.
///
/// Errors: what it holds instead, or why it cannot be read, as a sentence.
pub fn first_record_ok(path: &std::path::Path, rel: &str) -> std::result::Result<(), String> {
    let input = super::files::InputFile { rel: rel.to_string(), path: path.to_path_buf(), captures: vec![] };
    let mut f = super::files::open(&input).map_err(|e| format!("cannot be read: {e}"))?;
    let header = read_header(&mut f).map_err(|e| format!("cannot be read: {e}"))?;
    match header.len() {
        0 => Err("an empty TensorBoard event file (its writer wrote nothing yet)".into()),
        _ if data_length(&header).is_some() => Ok(()),
        _ => Err("named as a TensorBoard event file, but no TFRecord file: its first record's length and checksum \
                  do not match"
            .into()),
    }
}

/// A record's header: its 12 bytes, or fewer where the input ends.
fn read_header(reader: &mut dyn Read) -> std::io::Result<Vec<u8>> {
    let mut header = Vec::with_capacity(12);
    reader.take(12).read_to_end(&mut header)?;
    Ok(header)
}

/// The length of a record's data its whole `header` gives, when the length's checksum matches.
fn data_length(header: &[u8]) -> Option<u64> {
    let (len, crc) = header.split_at_checked(8)?;
    let stored = u32::from_le_bytes(crc.try_into().ok()?);
    (masked_crc(len) == stored).then(|| u64::from_le_bytes(len.try_into().expect("8 bytes")))
}

// The messages of event.proto, summary.proto and tensor.proto that rows use (prost skips the
// other fields); field numbers as TensorFlow defines them.

#[derive(Clone, PartialEq, Message)]
struct Event {
    #[prost(double, tag = "1")]
    wall_time: f64,
    #[prost(int64, tag = "2")]
    step: i64,
    #[prost(message, optional, tag = "5")]
    summary: Option<Summary>,
}

#[derive(Clone, PartialEq, Message)]
struct Summary {
    #[prost(message, repeated, tag = "1")]
    value: Vec<SummaryValue>,
}

#[derive(Clone, PartialEq, Message)]
struct SummaryValue {
    #[prost(string, tag = "1")]
    tag: String,
    #[prost(string, tag = "7")]
    node_name: String,
    #[prost(float, optional, tag = "2")]
    simple_value: Option<f32>,
    #[prost(bytes = "vec", optional, tag = "3")]
    obsolete_old_style_histogram: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "4")]
    image: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "5")]
    histo: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "6")]
    audio: Option<Vec<u8>>,
    #[prost(message, optional, tag = "8")]
    tensor: Option<Tensor>,
    #[prost(message, optional, tag = "9")]
    metadata: Option<SummaryMetadata>,
}

#[derive(Clone, PartialEq, Message)]
struct SummaryMetadata {
    #[prost(message, optional, tag = "1")]
    plugin_data: Option<PluginData>,
}

#[derive(Clone, PartialEq, Message)]
struct PluginData {
    #[prost(string, tag = "1")]
    plugin_name: String,
    #[prost(bytes = "vec", tag = "2")]
    content: Vec<u8>,
}

// tensorboard/plugins/hparams/plugin_data.proto and api.proto: a run's hyperparameters

#[derive(Clone, PartialEq, Message)]
struct HParamsPluginData {
    #[prost(message, optional, tag = "3")]
    session_start_info: Option<SessionStartInfo>,
}

#[derive(Clone, PartialEq, Message)]
struct SessionStartInfo {
    #[prost(btree_map = "string, message", tag = "1")]
    hparams: std::collections::BTreeMap<String, ProtoValue>,
}

/// `google.protobuf.Value`.
#[derive(Clone, PartialEq, Message)]
struct ProtoValue {
    #[prost(double, optional, tag = "2")]
    number_value: Option<f64>,
    #[prost(string, optional, tag = "3")]
    string_value: Option<String>,
    #[prost(bool, optional, tag = "4")]
    bool_value: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct Tensor {
    #[prost(int32, tag = "1")]
    dtype: i32,
    #[prost(message, optional, tag = "2")]
    tensor_shape: Option<TensorShape>,
    #[prost(bytes = "vec", tag = "4")]
    tensor_content: Vec<u8>,
    #[prost(float, repeated, tag = "5")]
    float_val: Vec<f32>,
    #[prost(double, repeated, tag = "6")]
    double_val: Vec<f64>,
    #[prost(int32, repeated, tag = "7")]
    int_val: Vec<i32>,
    #[prost(bytes = "vec", repeated, tag = "8")]
    string_val: Vec<Vec<u8>>,
    /// DT_HALF's and DT_BFLOAT16's values, their 16 bits each.
    #[prost(int32, repeated, tag = "13")]
    half_val: Vec<i32>,
    #[prost(int64, repeated, tag = "10")]
    int64_val: Vec<i64>,
    #[prost(bool, repeated, tag = "11")]
    bool_val: Vec<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct TensorShape {
    #[prost(message, repeated, tag = "2")]
    dim: Vec<Dim>,
}

#[derive(Clone, PartialEq, Message)]
struct Dim {
    #[prost(int64, tag = "1")]
    size: i64,
}

// DataType of types.proto
const DT_FLOAT: i32 = 1;
const DT_DOUBLE: i32 = 2;
const DT_INT32: i32 = 3;
const DT_STRING: i32 = 7;
const DT_INT64: i32 = 9;
const DT_BOOL: i32 = 10;
const DT_BFLOAT16: i32 = 14;
const DT_HALF: i32 = 19;

/// The largest record [`next_record`] takes for one: a length read in damaged bytes whose
/// checksum happens to match (one place in 2^32) is not read past this.
const NEXT_RECORD_MAX_BYTES: u64 = 64 << 20;

/// After a record `header` whose length's checksum does not match: the next place in `reader`
/// where a record's length and its data both match their checksums, as (bytes skipped from
/// the header's start, the bytes read from that place on); `None` when the input ends first.
/// TensorFlow's reader stops at such a header; the records after the damage are still whole.
fn next_record(reader: &mut dyn std::io::BufRead, header: &[u8]) -> std::io::Result<Option<(u64, Vec<u8>)>> {
    // bytes from the place `skipped` bytes after the header's start
    let mut window: Vec<u8> = header[1..].to_vec();
    let mut skipped = 1u64;
    let mut ended = false;
    // reads until `window` holds `want` bytes or the input ends
    let mut fill = |window: &mut Vec<u8>, want: usize, ended: &mut bool| -> std::io::Result<()> {
        while window.len() < want && !*ended {
            let more = (want - window.len()).max(64 << 10) as u64;
            *ended = (&mut *reader).take(more).read_to_end(window)? == 0;
        }
        Ok(())
    };
    loop {
        let mut at = 0;
        while at + 12 <= window.len() {
            if let Some(len) = data_length(&window[at..at + 12]).filter(|&l| l <= NEXT_RECORD_MAX_BYTES) {
                let end = at + 12 + len as usize + 4;
                fill(&mut window, end, &mut ended)?;
                if window.len() >= end
                    && masked_crc(&window[at + 12..end - 4])
                        == u32::from_le_bytes(window[end - 4..end].try_into().expect("4 bytes"))
                {
                    window.drain(..at);
                    return Ok(Some((skipped + at as u64, window)));
                }
            }
            at += 1;
        }
        // no record starts before the last 11 bytes, which a header may still begin in
        let gone = window.len().saturating_sub(11);
        window.drain(..gone);
        skipped += gone as u64;
        if ended {
            return Ok(None);
        }
        let want = window.len() + (64 << 10);
        fill(&mut window, want, &mut ended)?;
    }
}

/// A TFRecord checksum as written: CRC-32C, rotated right by 15 bits, plus a constant.
fn masked_crc(data: &[u8]) -> u32 {
    crc32c::crc32c(data).rotate_right(15).wrapping_add(0xa282_ead8)
}

/// Reads the TFRecords of an event file and hands each summary value to `sink` as an
/// [`Item::Record`] at the event's record number (1-based, as [`Position::Line`]). Events
/// without a summary (the file's version, session logs, graphs) give no row.
///
/// What cannot be read is an [`Item::Bad`] at its record: a checksum that does not match (a
/// length's: reading goes on at the next record whose checksums match, and record numbers
/// count on from there; the data's: that record is left out), an `Event` that does not
/// decode, or the file ending inside a record (rule `truncated`: a writer still running, or
/// stopped mid-record).
///
/// Errors: the file cannot be read.
pub fn read(
    mut reader: Box<dyn std::io::BufRead + Send>,
    rel: &str,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<()> {
    let bad =
        |n: u64, rule: &'static str, message: String| Item::Bad { at: Position::Line(n), rule, message, raw: None };
    let mut number = 0u64;
    let mut offset = 0u64;
    let mut data = Vec::new();
    loop {
        number += 1;
        let header = read_header(&mut reader).map_err(|e| read_error(rel, number, &e))?;
        let got = header.len();
        if got == 0 {
            return Ok(());
        }
        if got < 12 {
            let message = format!(
                "the file ends inside event record {number}'s header (at byte {offset}, {got} of its 12 bytes are \
                 there): a writer still running, or stopped mid-record"
            );
            return sink(bad(number, "truncated", message));
        }
        let Some(len) = data_length(&header) else {
            let found = next_record(&mut reader, &header).map_err(|e| read_error(rel, number, &e))?;
            let Some((skipped, rest)) = found else {
                let message = format!(
                    "event record {number} at byte {offset}: its length's checksum does not match (a damaged file, or \
                     not a TFRecord file), and no later record whose checksums match was found"
                );
                return sink(bad(number, "checksum", message));
            };
            let message = format!(
                "event record {number} at byte {offset}: its length's checksum does not match (a damaged file); \
                 {skipped} bytes skipped, to the next record whose checksums match, at byte {} (record numbers \
                 go on from there)",
                offset + skipped
            );
            sink(bad(number, "checksum", message))?;
            offset += skipped;
            reader = Box::new(std::io::Cursor::new(rest).chain(reader));
            continue;
        };
        data.clear();
        let want = len + 4;
        let got = (&mut reader).take(want).read_to_end(&mut data).map_err(|e| read_error(rel, number, &e))? as u64;
        if got < want {
            // the length runs past the end, but whole records follow in what is there (a damaged
            // length, or a file cut short with another written after it): read on from them
            let mut there = std::io::Cursor::new(std::mem::take(&mut data));
            if let Some((skipped, rest)) = next_record(&mut there, &header).map_err(|e| read_error(rel, number, &e))? {
                let message = format!(
                    "event record {number} at byte {offset}: its length ({len} bytes) runs past the end of the file, \
                     but whole records follow; {skipped} bytes skipped, to the next record whose checksums match, at \
                     byte {} (record numbers go on from there)",
                    offset + skipped
                );
                sink(bad(number, "checksum", message))?;
                offset += skipped;
                reader = Box::new(std::io::Cursor::new(rest));
                continue;
            }
            let message = format!(
                "the file ends inside event record {number} (its {len} bytes of data and 4 of checksum from byte \
                 {}: {got} are there): a writer still running, or stopped mid-record",
                offset + 12
            );
            return sink(bad(number, "truncated", message));
        }
        let body = &data[..len as usize];
        let stored = u32::from_le_bytes(data[len as usize..].try_into().expect("4 bytes"));
        offset += 12 + want;
        if masked_crc(body) != stored {
            sink(bad(number, "checksum", format!("event record {number}: its data's checksum does not match")))?;
            continue;
        }
        let event = match Event::decode(body) {
            Ok(e) => e,
            Err(e) => {
                sink(bad(number, "record", format!("event record {number} is no TensorBoard Event: {e}")))?;
                continue;
            }
        };
        let Some(summary) = event.summary else { continue };
        for v in summary.value {
            for r in rows(event.step, event.wall_time, v) {
                sink(Item::Record(r, Position::Line(number)))?;
            }
        }
    }
}

fn read_error(rel: &str, number: u64, e: &std::io::Error) -> Error {
    super::records::read_failed_at(rel, Position::Line(number), &format!("at event record {number}"), e)
}

/// The rows of one summary value logged at `step` and `wall_time`: one, or one per
/// hyperparameter of the hparams plugin's session start.
fn rows(step: i64, wall_time: f64, v: SummaryValue) -> Vec<Map<String, Value>> {
    let row = |tag: String, kind: &str, value: Value, text: Value| {
        let mut row = Map::with_capacity(6);
        row.insert("step".into(), Value::from(step));
        row.insert("wall_time".into(), pylit::float(wall_time));
        row.insert("tag".into(), Value::String(tag));
        row.insert("kind".into(), Value::String(kind.into()));
        row.insert("value".into(), value);
        row.insert("value_text".into(), text);
        row
    };
    let plugin = v.metadata.and_then(|m| m.plugin_data).filter(|p| !p.plugin_name.is_empty());
    if let Some(p) = &plugin
        && p.plugin_name == "hparams"
        && let Ok(HParamsPluginData { session_start_info: Some(start) }) = HParamsPluginData::decode(&p.content[..])
    {
        return start
            .hparams
            .into_iter()
            .map(|(name, v)| match (v.number_value, v.string_value, v.bool_value) {
                (Some(f), ..) => row(name, "hparam", pylit::float(f), Value::Null),
                (_, Some(s), _) => row(name, "hparam", Value::Null, Value::String(s)),
                (_, _, Some(b)) => row(name, "hparam", Value::Null, Value::String(b.to_string())),
                _ => row(name, "hparam", Value::Null, Value::Null),
            })
            .collect();
    }
    let plugin = plugin.map(|p| p.plugin_name);
    let (kind, value, text) = if let Some(f) = v.simple_value {
        ("scalar".to_string(), pylit::float(f64::from(f)), Value::Null)
    } else if let Some(t) = v.tensor {
        // a text is the text plugin's (or a string tensor's without a plugin): another
        // plugin's strings are its own encoding (custom scalars' layout)
        let texts = plugin.as_deref().is_none_or(|p| p == "text");
        match (scalar(&t), text(&t).filter(|_| texts)) {
            (Some((value, text)), _) => ("scalar".to_string(), value, text),
            (_, Some(s)) => ("text".to_string(), Value::Null, Value::String(s)),
            _ => (plugin.unwrap_or_else(|| "tensor".into()), Value::Null, Value::Null),
        }
    } else if v.histo.is_some() || v.obsolete_old_style_histogram.is_some() {
        ("histogram".to_string(), Value::Null, Value::Null)
    } else if v.image.is_some() {
        ("image".to_string(), Value::Null, Value::Null)
    } else if v.audio.is_some() {
        ("audio".to_string(), Value::Null, Value::Null)
    } else {
        (plugin.unwrap_or_else(|| "tensor".into()), Value::Null, Value::Null)
    };
    let tag = if v.tag.is_empty() { v.node_name } else { v.tag };
    vec![row(tag, &kind, value, text)]
}

/// The `value` and `value_text` of a tensor of one number (`tf.summary.scalar`), from its
/// typed values or its raw little-endian content: the number, or an integer beyond ±2^53 as
/// its digits (as `trainer-state` keeps them).
fn scalar(t: &Tensor) -> Option<(Value, Value)> {
    let elements: i64 = t.tensor_shape.as_ref().map_or(1, |s| s.dim.iter().map(|d| d.size).product());
    // several values in a tensor of one element (no shape said, or a shape of one): no scalar
    let values = match t.dtype {
        DT_FLOAT => t.float_val.len(),
        DT_DOUBLE => t.double_val.len(),
        DT_INT32 => t.int_val.len(),
        DT_INT64 => t.int64_val.len(),
        DT_BOOL => t.bool_val.len(),
        DT_HALF | DT_BFLOAT16 => t.half_val.len(),
        _ => 0,
    };
    if elements != 1 || values > 1 {
        return None;
    }
    if t.dtype == DT_INT64
        && let Some(&i) = t.int64_val.first()
        && i.unsigned_abs() > 1 << 53
    {
        return Some((Value::Null, Value::String(i.to_string())));
    }
    number(t).map(|f| (pylit::float(f), Value::Null))
}

/// The number a tensor of one element holds.
fn number(t: &Tensor) -> Option<f64> {
    let raw = |n: usize| (t.tensor_content.len() == n).then_some(t.tensor_content.as_slice());
    let bits16 = || t.half_val.first().map(|&b| b as u16).or_else(|| raw(2).map(|b| u16::from_le_bytes([b[0], b[1]])));
    match t.dtype {
        DT_HALF => {
            type F16 = <arrow::datatypes::Float16Type as arrow::datatypes::ArrowPrimitiveType>::Native;
            bits16().map(|b| F16::from_bits(b).to_f64())
        }
        // a bfloat16 is the upper half of a float32's bits: widened exactly by a shift
        DT_BFLOAT16 => bits16().map(|b| f64::from(f32::from_bits(u32::from(b) << 16))),
        DT_FLOAT => t
            .float_val
            .first()
            .map(|&f| f64::from(f))
            .or_else(|| raw(4).map(|b| f64::from(f32::from_le_bytes(b.try_into().expect("4 bytes"))))),
        DT_DOUBLE => {
            t.double_val.first().copied().or_else(|| raw(8).map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes"))))
        }
        DT_INT32 => t.int_val.first().map(|&i| f64::from(i)),
        // within ±2^53, exact (beyond, `scalar` keeps the digits)
        DT_INT64 => t.int64_val.first().map(|&i| i as f64),
        DT_BOOL => t.bool_val.first().map(|&b| if b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

/// The text a string tensor holds (the text plugin): its one string, or the JSON text of the
/// list of its strings; bytes that are no UTF-8 are replaced by U+FFFD (TensorBoard shows
/// them so).
fn text(t: &Tensor) -> Option<String> {
    if t.dtype != DT_STRING || t.string_val.is_empty() {
        return None;
    }
    let strings: Vec<String> = t.string_val.iter().map(|s| String::from_utf8_lossy(s).into_owned()).collect();
    match strings.as_slice() {
        [one] => Some(one.clone()),
        _ => Some(serde_json::to_string(&strings).expect("strings serialise")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TFRecord holding `data`, as TensorFlow's record writer frames it.
    fn record(data: &[u8]) -> Vec<u8> {
        let mut out = (data.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(&masked_crc(&out.clone()).to_le_bytes());
        out.extend_from_slice(data);
        out.extend_from_slice(&masked_crc(data).to_le_bytes());
        out
    }

    fn items(bytes: Vec<u8>) -> Vec<String> {
        let mut got = Vec::new();
        read(Box::new(std::io::Cursor::new(bytes)), "events.out.tfevents.1", &mut |item| {
            got.push(match item {
                Item::Record(r, at) => format!("{at} {}", Value::Object(r)),
                Item::Bad { at, rule, message, .. } => format!("{at}! {rule}: {message}"),
            });
            Ok(())
        })
        .unwrap();
        got
    }

    fn scalar_event(step: i64, tag: &str, f: f32) -> Vec<u8> {
        let value = SummaryValue { tag: tag.into(), simple_value: Some(f), ..Default::default() };
        Event { wall_time: 1.5, step, summary: Some(Summary { value: vec![value] }) }.encode_to_vec()
    }

    #[test]
    fn scalars_and_texts_are_rows_and_other_kinds_say_what_was_logged() {
        let text = Tensor { dtype: DT_STRING, string_val: vec![b"a sample".to_vec()], ..Default::default() };
        let tf2 = Tensor { dtype: DT_FLOAT, tensor_content: 0.25f32.to_le_bytes().to_vec(), ..Default::default() };
        let values = vec![
            SummaryValue { tag: "text".into(), tensor: Some(text), ..Default::default() },
            SummaryValue { tag: "tf2".into(), tensor: Some(tf2), ..Default::default() },
            SummaryValue { tag: "h".into(), histo: Some(vec![]), ..Default::default() },
        ];
        let mut bytes = record(&Event { wall_time: 1.0, step: 0, summary: None }.encode_to_vec());
        bytes.extend(record(&scalar_event(3, "train/loss", 0.1)));
        bytes.extend(record(&scalar_event(4, "train/loss", f32::NAN)));
        bytes.extend(record(
            &Event { wall_time: 2.0, step: 5, summary: Some(Summary { value: values }) }.encode_to_vec(),
        ));
        let got = items(bytes);
        assert_eq!(
            got,
            [
                r#"2 {"step":3,"wall_time":1.5,"tag":"train/loss","kind":"scalar","value":0.10000000149011612,"value_text":null}"#,
                "3 {\"step\":4,\"wall_time\":1.5,\"tag\":\"train/loss\",\"kind\":\"scalar\",\"value\":\"\u{FDD0}NaN\",\"value_text\":null}",
                r#"4 {"step":5,"wall_time":2.0,"tag":"text","kind":"text","value":null,"value_text":"a sample"}"#,
                r#"4 {"step":5,"wall_time":2.0,"tag":"tf2","kind":"scalar","value":0.25,"value_text":null}"#,
                r#"4 {"step":5,"wall_time":2.0,"tag":"h","kind":"histogram","value":null,"value_text":null}"#,
            ]
        );
    }

    #[test]
    fn tensors_of_other_types_and_plugins_keep_their_values() {
        let value = |tag: &str, tensor: Tensor, plugin: Option<&str>| SummaryValue {
            tag: tag.into(),
            tensor: Some(tensor),
            metadata: plugin
                .map(|p| SummaryMetadata { plugin_data: Some(PluginData { plugin_name: p.into(), content: vec![] }) }),
            ..Default::default()
        };
        let half = Tensor { dtype: DT_HALF, half_val: vec![0x3c00], ..Default::default() };
        let bf16 = Tensor { dtype: DT_BFLOAT16, half_val: vec![0x3fc0], ..Default::default() };
        let big = Tensor { dtype: DT_INT64, int64_val: vec![(1 << 53) + 1], ..Default::default() };
        let strings =
            Tensor { dtype: DT_STRING, string_val: vec![b"a".to_vec(), b"b\xff".to_vec()], ..Default::default() };
        let layout = Tensor { dtype: DT_STRING, string_val: vec![b"\x12(\n".to_vec()], ..Default::default() };
        let values = vec![
            value("half", half, None),
            value("bf16", bf16, None),
            value("big", big, None),
            value("texts", strings, Some("text")),
            value("layout", layout, Some("custom_scalars")),
        ];
        let got: Vec<String> = values
            .into_iter()
            .flat_map(|v| rows(1, 2.0, v))
            .map(|r| format!("{} {} {} {}", r["tag"], r["kind"], r["value"], r["value_text"]))
            .collect();
        assert_eq!(
            got,
            [
                "\"half\" \"scalar\" 1.0 null",
                "\"bf16\" \"scalar\" 1.5 null",
                "\"big\" \"scalar\" null \"9007199254740993\"",
                "\"texts\" \"text\" null \"[\\\"a\\\",\\\"b\u{FFFD}\\\"]\"",
                "\"layout\" \"custom_scalars\" null null",
            ]
        );
    }

    #[test]
    fn a_damaged_or_cut_file_is_said_at_its_record() {
        let good = record(&scalar_event(1, "a", 1.0));
        // the data's checksum wrong: that record alone is left out
        let mut bytes = good.clone();
        let n = bytes.len();
        bytes[n - 1] ^= 1;
        bytes.extend(good.clone());
        let got = items(bytes);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], "1! checksum: event record 1: its data's checksum does not match");
        assert!(got[1].starts_with("2 {"), "{got:?}");
        // cut inside the second record
        let mut bytes = good.clone();
        bytes.extend(&good[..good.len() - 3]);
        let got = items(bytes);
        assert!(got[1].starts_with("2! truncated: the file ends inside event record 2"), "{got:?}");
        // not a TFRecord file at all
        let got = items(b"{\"step\": 1, \"loss\": 0.5}\n".to_vec());
        assert!(got[0].contains("its length's checksum does not match"), "{got:?}");
        assert!(got[0].ends_with("and no later record whose checksums match was found"), "{got:?}");
        // a damaged length: the records after it are read, from the next one whose checksums
        // match (the damaged one's bytes, and a record cut by the damage, skipped)
        let second = record(&scalar_event(2, "a", 2.0));
        let mut bytes = good.clone();
        let mut damaged = second.clone();
        damaged[1] ^= 1;
        bytes.extend(&damaged);
        bytes.extend(&second[..7]);
        for step in 3..=4 {
            bytes.extend(record(&scalar_event(step, "a", step as f32)));
        }
        let got = items(bytes);
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(got[0].starts_with("1 {"), "{got:?}");
        assert_eq!(
            got[1],
            format!(
                "2! checksum: event record 2 at byte {}: its length's checksum does not match (a damaged file); {} \
                 bytes skipped, to the next record whose checksums match, at byte {} (record numbers go on from there)",
                good.len(),
                second.len() + 7,
                good.len() + second.len() + 7
            )
        );
        assert!(got[2].starts_with("3 {") && got[2].contains("\"step\":3"), "{got:?}");
        assert!(got[3].starts_with("4 {") && got[3].contains("\"step\":4"), "{got:?}");
        // a record cut short, then whole records (a file written after a cut one): they are read
        let big = record(&scalar_event(5, &"x".repeat(400), 5.0));
        let mut bytes = good.clone();
        bytes.extend(&big[..100]);
        bytes.extend(record(&scalar_event(6, "a", 6.0)));
        let got = items(bytes);
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[1].starts_with("2! checksum: event record 2 at byte"), "{got:?}");
        assert!(
            got[1].contains("runs past the end of the file, but whole records follow; 100 bytes skipped"),
            "{got:?}"
        );
        assert!(got[2].starts_with("3 {") && got[2].contains("\"step\":6"), "{got:?}");
        // several values in a tensor of one element are no scalar
        let mut t = Tensor { dtype: DT_DOUBLE, double_val: vec![3.0, 4.0], ..Default::default() };
        assert_eq!(scalar(&t), None);
        t.double_val.truncate(1);
        assert_eq!(scalar(&t).map(|(v, _)| v), Some(serde_json::json!(3.0)));
    }
}
