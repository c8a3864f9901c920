//! Records out of raw files: JSON Lines, JSON documents, CSV.
//!
//! In: an opened input (see [`super::files`]). Out: a stream of JSON objects, each with its
//! place in the file (1-based line, or the JSON pointer of the record), delivered to a
//! callback; and the problems that stop a line from being a record (invalid UTF-8, invalid
//! JSON, a truncated last line, a value that is not an object), each naming file and line.
//!
//! JSON Lines: LF or CRLF line ends, a UTF-8 byte-order mark, blank lines and a missing final
//! newline are accepted. JSON documents are streamed: only one record is held in memory.
//! CSV (RFC 4180, multi-line quoted cells allowed): cells are kept as text and typed later;
//! a first column with an empty header (a pandas index) is skipped, and so is any other
//! column with an empty header as long as it holds no value (a row with one is refused).

use std::io::BufRead;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::lenient;
use crate::core::error::{Error, Result};
use crate::core::report::Position;
pub use crate::core::spec::Dialect;

/// What a reader hands to its callback.
pub enum Item {
    /// One record.
    Record(Map<String, Value>, Position),
    /// A line or value that could not be read as a record.
    Bad {
        /// Where.
        at: Position,
        /// Rule name (`json`, `encoding`, `truncated`, `record`).
        rule: &'static str,
        /// What was expected and found.
        message: String,
        /// The raw text, for the rejects file (cut to 4 KiB).
        raw: Option<String>,
    },
}

/// Reads JSON Lines.
pub fn jsonl(mut reader: Box<dyn BufRead + Send>, rel: &str, sink: &mut dyn FnMut(Item) -> Result<()>) -> Result<()> {
    refuse_utf16_json(&mut reader, rel)?;
    let mut buf = Vec::with_capacity(4096);
    let mut line_no: u64 = 0;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(|e| read_failed(rel, line_no, &e))?;
        if n == 0 {
            return Ok(());
        }
        line_no += 1;
        if let Some(item) = parse_line(&buf, line_no) {
            sink(item)?;
        }
    }
}

/// The error of a read that failed after `lines` whole lines of `rel`. A compressed file whose
/// stream breaks (zstd's "incomplete frame", gzip's unexpected end or corrupt data; see
/// [`super::files::broken_stream`]) is a violation at the line it could not read, rule
/// `compressed`: the input's data is broken, as a Parquet file that does not read is. Any
/// other failure is an [`Error::Format`].
fn read_failed(rel: &str, lines: u64, e: &std::io::Error) -> Error {
    let place = match lines {
        0 => "before its first line".to_string(),
        n => format!("after line {}", crate::core::numbers::group_digits(n)),
    };
    read_failed_at(rel, Position::Line(lines + 1), &place, e)
}

/// [`read_failed`] for a read that failed at `place` (`after line 3`, `before the end of the
/// document`), the violation placed `at`.
pub(crate) fn read_failed_at(rel: &str, at: Position, place: &str, e: &std::io::Error) -> Error {
    if super::files::broken_stream(e) {
        return Error::source_violation(
            rel,
            at,
            "",
            "compressed",
            format!(
                "the compressed stream breaks {place}: {e}; the file is cut short, damaged, or followed by bytes that \
                 are not compressed data (a truncated or partly downloaded file?)"
            ),
        );
    }
    Error::format(rel, format!("read failed {place}: {e}"))
}

/// [`read_failed`] for a CSV reader (`start`: the byte the failing record starts at, as
/// `lines` counts them), when the error is one of reading (a compressed stream that breaks):
/// the source cannot be read on, even when bad rows are set aside. `None` for a CSV error.
pub(crate) fn csv_read_failed(rel: &str, lines: &LineLog, start: u64, e: &csv::Error) -> Option<Error> {
    match e.kind() {
        csv::ErrorKind::Io(io) => Some(read_failed(rel, lines.line_at(start).saturating_sub(1), io)),
        _ => None,
    }
}

/// A run of raw JSON Lines lines, for parsing elsewhere (another thread).
#[derive(Debug, Default)]
pub struct LineChunk {
    /// The lines' bytes, back to back (each with its `\n` when it had one).
    pub bytes: Vec<u8>,
    /// For each line: its 1-based number and its end offset in `bytes`.
    pub lines: Vec<(u64, usize)>,
}

impl LineChunk {
    /// Parses every line, in order.
    pub fn items(&self) -> impl Iterator<Item = Item> + '_ {
        self.lines.iter().enumerate().filter_map(|(i, &(no, end))| {
            let start = if i == 0 { 0 } else { self.lines[i - 1].1 };
            parse_line(&self.bytes[start..end], no)
        })
    }
}

/// Reads JSON Lines as chunks of about `chunk_bytes` bytes of whole lines: a chunk ends with
/// the first line that reaches `chunk_bytes`.
///
/// The reader's buffer is copied into the chunk whole and its line ends are found with
/// `memchr` afterwards, rather than line by line with `BufRead::read_until` (whose byte
/// search is not vectorised: 1.4 % of a build's CPU, against 0.3 %).
pub fn jsonl_chunks(
    mut reader: Box<dyn BufRead + Send>,
    rel: &str,
    chunk_bytes: usize,
    sink: &mut dyn FnMut(LineChunk) -> Result<()>,
) -> Result<()> {
    refuse_utf16_json(&mut reader, rel)?;
    // room for a whole chunk and one more buffer of the reader's up front: growing the
    // buffer would copy it again and again
    let fresh = || LineChunk { bytes: Vec::with_capacity(chunk_bytes + (512 << 10)), lines: Vec::new() };
    let mut chunk = fresh();
    let mut line_no: u64 = 0;
    // the bytes of `chunk` whose line ends are recorded
    let mut scanned = 0;
    loop {
        let piece = reader.fill_buf().map_err(|e| read_failed(rel, line_no, &e))?;
        if piece.is_empty() {
            break;
        }
        let n = piece.len();
        chunk.bytes.extend_from_slice(piece);
        reader.consume(n);
        while let Some(at) = memchr::memchr(b'\n', &chunk.bytes[scanned..]) {
            scanned += at + 1;
            line_no += 1;
            chunk.lines.push((line_no, scanned));
            if scanned >= chunk_bytes {
                // the bytes after this line begin the next chunk
                let mut next = fresh();
                next.bytes.extend_from_slice(&chunk.bytes[scanned..]);
                chunk.bytes.truncate(scanned);
                sink(std::mem::replace(&mut chunk, next))?;
                scanned = 0;
            }
        }
    }
    // a last line without its newline
    if scanned < chunk.bytes.len() {
        line_no += 1;
        chunk.lines.push((line_no, chunk.bytes.len()));
    }
    if !chunk.lines.is_empty() {
        sink(chunk)?;
    }
    Ok(())
}

/// Parses one raw line (with its `\n` when it had one); `None` for a blank line.
pub fn parse_line(buf: &[u8], line_no: u64) -> Option<Item> {
    let had_newline = buf.last() == Some(&b'\n');
    let mut line: &[u8] = buf;
    if had_newline {
        line = &line[..line.len() - 1];
    }
    if line.last() == Some(&b'\r') {
        line = &line[..line.len() - 1];
    }
    if line_no == 1 {
        line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let at = Position::Line(line_no);
    let rewritten = lenient::rewrite(line);
    let parsed: std::result::Result<Value, _> = super::strict::from_slice(rewritten.as_deref().unwrap_or(line));
    // a parse that succeeded checked the UTF-8 of every string, and bytes outside strings are
    // ASCII syntax; only a failed parse needs to know whether the encoding was the cause
    if parsed.is_err()
        && let Err(e) = std::str::from_utf8(line)
    {
        // the last line cut inside a character (its last bytes begin one): a writer stopped
        if !had_newline && e.error_len().is_none() {
            return Some(Item::Bad {
                at,
                rule: "truncated",
                message: format!(
                    "truncated last line (it ends without a newline inside a character, at byte {} of the line); \
                     the writing process was probably stopped",
                    e.valid_up_to() + 1
                ),
                raw: Some(String::from_utf8_lossy(&line[..line.len().min(4096)]).into_owned()),
            });
        }
        return Some(Item::Bad {
            at,
            rule: "encoding",
            message: format!("invalid UTF-8 at byte {} of the line", e.valid_up_to() + 1),
            raw: Some(String::from_utf8_lossy(&line[..line.len().min(4096)]).into_owned()),
        });
    }
    Some(match parsed {
        Ok(Value::Object(obj)) => Item::Record(obj, at),
        Ok(other) => Item::Bad {
            at,
            rule: "record",
            message: format!("expected a JSON object, found {}", super::path::describe(&other)),
            raw: Some(raw(line)),
        },
        Err(e) if e.is_eof() && !had_newline => Item::Bad {
            at,
            rule: "truncated",
            // the column alone: serde_json's "line 1" is the line's own, not the file's
            message: format!(
                "truncated last line (it ends without a newline in the middle of a value: {} at column {}); \
                 the writing process was probably stopped",
                serde_what(&e),
                match &rewritten {
                    Some(r) if e.line() == 1 => lenient::original_column(r, e.column()),
                    _ => e.column(),
                }
            ),
            raw: Some(raw(line)),
        },
        Err(e) => {
            // the column in the line as written, not in its rewritten form
            let column = match &rewritten {
                Some(r) if e.line() == 1 => lenient::original_column(r, e.column()),
                _ => e.column(),
            };
            let mut message = json_message(&e, JsonPlace::Column(column));
            // a key named twice inside a nested object: which object (parsed again to find it)
            if serde_what(&e).contains(super::strict::REPEATED)
                && let Some(pointer) =
                    super::strict::repeated_key_pointer(rewritten.as_deref().unwrap_or(line)).filter(|p| !p.is_empty())
            {
                // (a key may hold any character: the pointer is shown escaped)
                let pointer = crate::core::error::escape_control(&pointer);
                message =
                    message.replacen(super::strict::REPEATED, &format!("appears twice in the object at {pointer}"), 1);
            }
            if line.starts_with(b"\xEF\xBB\xBF") {
                // a file's byte order mark in the middle: files joined together
                message.push_str(
                    "; the line starts with a byte order mark (U+FEFF), which only a file's first line may carry: \
                     were files joined together?",
                );
            }
            Item::Bad { at, rule: "json", message, raw: Some(raw(line)) }
        }
    })
}

/// serde_json's error as runpack says it: `not valid JSON: <what>`, with the column alone for
/// one line of JSON Lines (serde_json counts lines from the start of that line, so its "line 1"
/// would contradict the file's line number said in front), and what a lone UTF-16 surrogate
/// escape is, which serde_json names after the escape that should have followed it.
pub(crate) fn json_message(e: &serde_json::Error, place: JsonPlace) -> String {
    let what = serde_what(e);
    let place = match place {
        JsonPlace::Column(column) if e.line() == 1 => format!(" at column {column}"),
        JsonPlace::Said => String::new(),
        _ => format!(" at line {} column {}", e.line(), e.column()),
    };
    if what == "recursion limit exceeded" {
        // valid JSON, deeper than the parser goes: the limit is the reader's, not the input's fault
        return format!(
            "nested 128 or more arrays or objects deep (the record's own object counts as one){place}, \
             beyond what runpack reads (serde_json's recursion limit, which keeps a hostile input from \
             exhausting the stack)"
        );
    }
    if what == "number out of range" {
        return format!(
            "a number beyond the range of a 64-bit float (about ±1.8e308){place}; write an infinity as the bare \
             token Infinity or -Infinity"
        );
    }
    if what == "invalid unicode code point" {
        // what serde_json says of a byte that is no UTF-8 in a document read from a file
        return format!(
            "not UTF-8 text{place}: a byte there is no UTF-8 (a file in another encoding, such as Latin-1: save it \
             as UTF-8)"
        );
    }
    let mut m = format!("not valid JSON: {what}{place}");
    if what.contains("hex escape") || what.contains("surrogate") {
        m.push_str(
            " (a UTF-16 surrogate escape, \\uD800 to \\uDFFF, is text only as a high-low pair such as \
             \\uD83D\\uDE00; a lone one is not)",
        );
    }
    m
}

/// Where [`json_message`] says a serde_json error is.
pub(crate) enum JsonPlace {
    /// One line of JSON Lines: the column to say (in the line as written, when it was rewritten:
    /// see [`lenient::original_column`]).
    Column(usize),
    /// A whole document, whose place no one else says: its line and column.
    Document,
    /// Said by the caller (`file:line:column N`): nothing.
    Said,
}

/// serde_json's message without the place it appends (` at line 1 column 7`).
pub(crate) fn serde_what(e: &serde_json::Error) -> String {
    let text = e.to_string();
    text.strip_suffix(&format!(" at line {} column {}", e.line(), e.column())).map(str::to_string).unwrap_or(text)
}

fn raw(line: &[u8]) -> String {
    String::from_utf8_lossy(&line[..line.len().min(4096)]).into_owned()
}

/// Reads the records of a JSON document at `pointer` (RFC 6901; `""` = the root): each element
/// if it is an array, or the object itself.
///
/// Errors: [`Error::Invalid`] naming the line and column where the document stops being JSON,
/// [`Error::Config`] for a `pointer` the document does not hold.
pub fn json(
    mut reader: Box<dyn BufRead + Send>,
    rel: &str,
    pointer: &str,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<()> {
    // a file of no bytes (created and never written) holds no record, as an empty JSON Lines
    // file holds none; the build's warning names it
    if reader.fill_buf().map_err(|e| Error::io(rel, e))?.is_empty() {
        return Ok(());
    }
    match json_syntax(reader, rel, pointer, sink)? {
        Ok(Found::Records) => Ok(()),
        Ok(Found::Missing(_)) => {
            Err(Error::config(rel, format!("record_path {pointer:?} does not exist in this file")))
        }
        Ok(Found::Scalar(what)) => Err(Error::config(
            rel,
            format!("record_path {pointer:?} holds {what} in this file, not an array of records or a record object"),
        )),
        Err(e) => Err(Error::source_violation(
            rel,
            Position::Line(e.line() as u64),
            format!("column {}", e.column()),
            "json",
            // the place is the violation's own (`file:line:column N`), not said twice
            json_message(&e, JsonPlace::Said),
        )),
    }
}

/// Reads a JSON document that is one record (a benchmark result, a checkpoint's metrics):
/// the root object at pointer `""`, or, when the document is no JSON, one [`Item::Bad`] at the
/// same pointer whose message names the line and column where it stops being JSON, so that
/// the file is rejected like a bad line of JSON Lines.
pub fn json_record(reader: Box<dyn BufRead + Send>, rel: &str, sink: &mut dyn FnMut(Item) -> Result<()>) -> Result<()> {
    let mut items = 0u64;
    // the records of an array (at `/0`, `/1`, …): a list, not the one record of the file
    let mut listed = 0u64;
    // the document's record, passed on only once the document has been read to its end: a
    // document followed by more text (a result written twice) is rejected whole, not kept
    // and rejected both
    let mut held: Vec<Item> = Vec::new();
    let mut counted = |item: Item| {
        items += 1;
        match &item {
            Item::Record(_, Position::Pointer(p)) | Item::Bad { at: Position::Pointer(p), .. } if !p.is_empty() => {
                listed += 1;
            }
            _ => held.push(item),
        }
        Ok(())
    };
    // a bad document is placed at pointer "", where a good one's record is (one type for
    // `_source_line` in its rejects); the message says the line and column
    let read = json_syntax(reader, rel, "", &mut counted)?;
    if read.is_ok() {
        for item in held {
            sink(item)?;
        }
    }
    if listed > 0 && read.is_ok() {
        return sink(Item::Bad {
            at: Position::Pointer(String::new()),
            rule: "shape",
            message: format!(
                "expected a JSON object (one record), found an array of {listed} item(s): this format reads one \
                 record per file"
            ),
            raw: None,
        });
    }
    match read {
        // a document that is one value but no record (`5`, `null`): a bad record, as above
        Ok(Found::Scalar(what)) => sink(Item::Bad {
            at: Position::Pointer(String::new()),
            rule: "shape",
            message: format!("expected a JSON object (one record), found {what}"),
            raw: None,
        }),
        // a document with no record at all (`[]`) would give no row and no problem
        Ok(_) if items == 0 => sink(Item::Bad {
            at: Position::Pointer(String::new()),
            rule: "shape",
            message: "expected a JSON object (one record), found a document that holds none (an empty array)".into(),
            raw: None,
        }),
        Ok(_) => Ok(()),
        Err(e) => sink(Item::Bad {
            at: Position::Pointer(String::new()),
            rule: "json",
            message: json_message(&e, JsonPlace::Document),
            raw: None,
        }),
    }
}

/// The visits of a serde visitor for the scalar JSON values, each giving `$make(kind)`:
/// `kind` names the value's JSON type (`a boolean`, `a number`, `a string`, `null`), for a
/// visitor that says what a document holds where it wanted a list or an object.
macro_rules! json_scalars {
    ($ty:ty, $make:expr) => {
        fn visit_bool<E>(self, _: bool) -> std::result::Result<$ty, E> {
            Ok(($make)("a boolean"))
        }
        fn visit_i64<E>(self, _: i64) -> std::result::Result<$ty, E> {
            Ok(($make)("a number"))
        }
        fn visit_u64<E>(self, _: u64) -> std::result::Result<$ty, E> {
            Ok(($make)("a number"))
        }
        fn visit_f64<E>(self, _: f64) -> std::result::Result<$ty, E> {
            Ok(($make)("a number"))
        }
        fn visit_str<E>(self, _: &str) -> std::result::Result<$ty, E> {
            Ok(($make)("a string"))
        }
        fn visit_unit<E>(self) -> std::result::Result<$ty, E> {
            Ok(($make)("null"))
        }
    };
}
pub(crate) use json_scalars;

/// What a JSON document holds at a pointer, once read by [`json_syntax`].
#[derive(Debug)]
pub(super) enum Found {
    /// An array (each item passed on) or an object (passed on as one record).
    Records,
    /// A scalar (`a string`, `null`): no record.
    Scalar(&'static str),
    /// Nothing: the pointer leads nowhere. The root object's first five keys, in document
    /// order (none when the root is no object).
    Missing(Vec<String>),
}

/// [`json`], with the syntax error (if any) given back rather than reported, and what
/// `pointer` holds when it is not records.
pub(super) fn json_syntax(
    mut reader: Box<dyn BufRead + Send>,
    rel: &str,
    pointer: &str,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<std::result::Result<Found, serde_json::Error>> {
    let Some(tokens) = super::path::pointer_tokens(pointer) else {
        return Err(Error::config(rel, format!("record_path {pointer:?} must start with '/'")));
    };
    refuse_utf16_json(&mut reader, rel)?;
    // a UTF-8 byte order mark (as some Windows editors write) is not part of the document
    if reader.fill_buf().map_err(|e| Error::io(rel, e))?.starts_with(b"\xEF\xBB\xBF") {
        reader.consume(3);
    }
    let mut de = serde_json::Deserializer::from_reader(lenient::LenientRead::new(reader));
    let mut state = NavState { sink, error: None, found: false, scalar: None, root_keys: None };
    let seed = Nav { path: &tokens, pointer: pointer.to_string(), state: &mut state, root: true };
    let res = seed.deserialize(&mut de).and_then(|_| de.end());
    if let Some(e) = state.error.take() {
        return Err(e);
    }
    if let Err(e) = res {
        if e.is_io() {
            // the file could not be read to its end (a compressed stream cut short): not the
            // JSON's fault, and no line or column of it to name
            let at = Position::Pointer(String::new());
            return Err(read_failed_at(rel, at, "before the end of the document", &std::io::Error::from(e)));
        }
        return Ok(Err(e));
    }
    if let Some(what) = state.scalar {
        return Ok(Ok(Found::Scalar(what)));
    }
    if !state.found {
        return Ok(Ok(Found::Missing(state.root_keys.unwrap_or_default())));
    }
    Ok(Ok(Found::Records))
}

struct NavState<'s> {
    sink: &'s mut dyn FnMut(Item) -> Result<()>,
    error: Option<Error>,
    found: bool,
    /// What the record_path points at when it is no array or object.
    scalar: Option<&'static str>,
    /// The first keys of the first object walked through (the root, when it is an object).
    root_keys: Option<Vec<String>>,
}

impl Nav<'_, '_, '_> {
    /// Notes a scalar met where the records should be.
    fn scalar(self, what: &'static str) {
        if self.path.is_empty() {
            self.state.scalar = Some(what);
        }
    }
}

struct Nav<'p, 's, 'x> {
    path: &'p [String],
    pointer: String,
    state: &'x mut NavState<'s>,
    /// Whether this is the document's root value.
    root: bool,
}

impl<'de> DeserializeSeed<'de> for Nav<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Nav<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a JSON object or array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        if self.path.is_empty() {
            // the object itself is the record
            let obj: Map<String, Value> =
                match serde::Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(map))? {
                    super::strict::StrictValue(Value::Object(o)) => o,
                    _ => Map::new(),
                };
            self.state.found = true;
            let item = Item::Record(obj, Position::Pointer(self.pointer.clone()));
            if let Err(e) = (self.state.sink)(item) {
                self.state.error = Some(e);
                return Err(serde::de::Error::custom("stopped"));
            }
            return Ok(());
        }
        // a key named twice on the way is refused, as inside records: a reader would keep one
        // of the two values, and runpack would read the other
        let mut keys = std::collections::HashSet::new();
        let mut matched = false;
        while let Some(key) = map.next_key::<String>()? {
            let wanted = !matched && key == self.path[0];
            if keys.contains(&key) {
                return Err(super::strict::repeated_key(&key));
            }
            if self.root && keys.len() < 5 {
                self.state.root_keys.get_or_insert_default().push(key.clone());
            }
            keys.insert(key);
            if wanted {
                matched = true;
                let nav =
                    Nav { path: &self.path[1..], pointer: self.pointer.clone(), state: &mut *self.state, root: false };
                map.next_value_seed(nav)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        if self.path.is_empty() {
            self.state.found = true;
            let mut i = 0usize;
            while let Some(super::strict::StrictValue(v)) = seq.next_element()? {
                let at = Position::Pointer(format!("{}/{i}", self.pointer));
                let item = match v {
                    Value::Object(o) => Item::Record(o, at),
                    other => Item::Bad {
                        at,
                        rule: "record",
                        message: format!("expected a JSON object, found {}", super::path::describe(&other)),
                        raw: Some(super::convert::json_text(&other)),
                    },
                };
                if let Err(e) = (self.state.sink)(item) {
                    self.state.error = Some(e);
                    return Err(serde::de::Error::custom("stopped"));
                }
                i += 1;
            }
            return Ok(());
        }
        let want: Option<usize> = super::path::pointer_index(&self.path[0]);
        let mut i = 0usize;
        loop {
            if Some(i) == want {
                if seq
                    .next_element_seed(Nav {
                        path: &self.path[1..],
                        pointer: self.pointer.clone(),
                        state: &mut *self.state,
                        root: false,
                    })?
                    .is_none()
                {
                    return Ok(());
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_unit<E: serde::de::Error>(self) -> std::result::Result<(), E> {
        self.scalar("null");
        Ok(())
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> std::result::Result<(), E> {
        self.scalar("a boolean");
        Ok(())
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> std::result::Result<(), E> {
        self.scalar("a number");
        Ok(())
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> std::result::Result<(), E> {
        self.scalar("a number");
        Ok(())
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> std::result::Result<(), E> {
        self.scalar("a number");
        Ok(())
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> std::result::Result<(), E> {
        self.scalar("a string");
        Ok(())
    }
}

/// The header of a CSV file: its column names, in order (an empty name marks a column that
/// is skipped, as a pandas index).
///
/// Errors: [`Error::Format`] when the header cannot be read, [`Error::Config`] at the
/// header's line (of `lines`, which the reader reads through) when it names a column twice.
pub(crate) fn csv_header<R: std::io::Read>(
    rdr: &mut csv::Reader<R>,
    rel: &str,
    lines: &LineLog,
) -> Result<csv::StringRecord> {
    let headers = rdr.headers().map_err(|e| Error::format(rel, format!("cannot read the CSV header: {e}")))?.clone();
    let mut seen = std::collections::BTreeSet::new();
    for h in headers.iter().filter(|h| !h.is_empty()) {
        if !seen.insert(h) {
            return Err(Error::config(
                format!("{rel}:{}", lines.header_line()),
                format!("the CSV header names column `{h}` twice; rename one (its values would be lost)"),
            ));
        }
    }
    Ok(headers)
}

/// The column names a CSV file's header gives (without the skipped, empty ones), for a file
/// that may hold no row at all: its columns still exist.
///
/// Errors: those of the header (see [`csv`](fn@csv)).
pub fn csv_columns(mut reader: Box<dyn BufRead + Send>, rel: &str, dialect: Dialect) -> Result<Vec<String>> {
    refuse_utf16(&mut reader, rel)?;
    skip_lines(&mut reader, dialect.header_row - 1).map_err(|e| read_failed(rel, 0, &e))?;
    let lines = LineLog::keeping_text(dialect);
    let mut rdr = dialect_reader(dialect).from_reader(lines.wrap(reader));
    Ok(csv_header(&mut rdr, rel, &lines)?.iter().filter(|h| !h.is_empty()).map(str::to_string).collect())
}

/// Refuses a text file that starts with a UTF-16 byte order mark (Excel's "Unicode text"),
/// whose every other byte would read as a NUL.
///
/// Errors: [`Error::Format`] at line 1 of `rel`, saying to save the file as UTF-8.
pub(crate) fn refuse_utf16(reader: &mut Box<dyn BufRead + Send>, rel: &str) -> Result<()> {
    refuse_utf16_saying(reader, rel, "\"CSV UTF-8\" in Excel")
}

/// [`refuse_utf16`] for JSON and JSON Lines, whose way to UTF-8 is no spreadsheet's.
pub(crate) fn refuse_utf16_json(reader: &mut Box<dyn BufRead + Send>, rel: &str) -> Result<()> {
    refuse_utf16_saying(reader, rel, "`iconv -f UTF-16 -t UTF-8`")
}

fn refuse_utf16_saying(reader: &mut Box<dyn BufRead + Send>, rel: &str, how: &str) -> Result<()> {
    // what cannot be read (a compressed stream cut short) is said by the reading, with the
    // lines read before it
    let Ok(head) = reader.fill_buf() else { return Ok(()) };
    let which = match head {
        [0xFF, 0xFE, ..] => "UTF-16 little-endian",
        [0xFE, 0xFF, ..] => "UTF-16 big-endian",
        _ => return Ok(()),
    };
    Err(Error::format(
        format!("{rel}:1"),
        format!("the file is {which} text (its byte order mark says so); save it as UTF-8 ({how})"),
    ))
}

/// The delimiter a header of one column, `header`, is likely written with when it is not
/// `delimiter`: a tab, a semicolon or a vertical bar it holds, with its name in words.
pub fn other_delimiter(header: &str, delimiter: u8) -> Option<(u8, &'static str)> {
    [(b'\t', "tabs"), (b';', "semicolons"), (b'|', "vertical bars")]
        .into_iter()
        .find(|(b, _)| *b != delimiter && header.as_bytes().contains(b))
}

/// Reads past the first `n` lines of `reader` (each ended by LF, CRLF or a CR alone), whatever
/// they hold; the bytes read.
fn skip_lines(reader: &mut Box<dyn BufRead + Send>, n: u64) -> std::io::Result<u64> {
    let mut bytes = 0u64;
    let mut left = n;
    // a CR was the last byte read: a LF right after it is the same line end
    let mut after_cr = false;
    while left > 0 || after_cr {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        if after_cr {
            after_cr = false;
            if buf[0] == b'\n' {
                reader.consume(1);
                bytes += 1;
            }
            continue;
        }
        match memchr::memchr2(b'\n', b'\r', buf) {
            Some(i) => {
                after_cr = buf[i] == b'\r';
                reader.consume(i + 1);
                bytes += i as u64 + 1;
                left -= 1;
            }
            None => {
                let len = buf.len();
                reader.consume(len);
                bytes += len as u64;
            }
        }
    }
    Ok(bytes)
}

/// A csv crate reader of `dialect`: a header row, every row as long as it.
fn dialect_reader(dialect: Dialect) -> csv::ReaderBuilder {
    let mut b = csv::ReaderBuilder::new();
    b.has_headers(true).flexible(false).delimiter(dialect.delimiter).comment(dialect.comment);
    match dialect.quote {
        Some(q) => b.quote(q),
        None => b.quoting(false),
    };
    b
}

/// Whether the first column of a CSV file whose header leaves its first name empty (pandas'
/// index) holds the rows' positions (0, 1, 2, …) in every row: `Some(true)`, or `Some(false)`
/// at the first row that does not (`pd.concat(frames).to_csv()` counts 0, 1, 0, 1; a sorted
/// frame 2, 0, 1). `None` when the first name is not empty, or the file cannot be read as CSV
/// (the reading that follows says why). Reads the file through: [`fn@csv`] cannot wait for its
/// last row to decide the first row's columns.
pub fn csv_index_positions(mut reader: Box<dyn BufRead + Send>, dialect: Dialect) -> Option<bool> {
    skip_lines(&mut reader, dialect.header_row - 1).ok()?;
    let mut rdr = dialect_reader(dialect).from_reader(reader);
    if !rdr.byte_headers().ok()?.get(0).is_some_and(<[u8]>::is_empty) {
        return None;
    }
    let mut record = csv::ByteRecord::new();
    let mut row: u64 = 0;
    let mut digits = String::new();
    while rdr.read_byte_record(&mut record).ok()? {
        digits.clear();
        let _ = std::fmt::Write::write_fmt(&mut digits, format_args!("{row}"));
        if record.get(0) != Some(digits.as_bytes()) {
            return Some(false);
        }
        row += 1;
    }
    Some(true)
}

/// Comment lines above the header whose text [`CommentLines`] keeps.
const PREAMBLE_LINES: usize = 3;

/// Bytes of each such line kept.
const PREAMBLE_BYTES: usize = 200;

/// Comment lines a CSV file holds, above its header and among its rows, skipped as its
/// dialect's `comment` says: a row whose first cell starts with the comment character is one.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CommentLines {
    /// How many.
    pub count: u64,
    /// The first ten, as 1-based lines.
    pub first: Vec<u64>,
    /// The first three above the header, each with its line and its text (its first 200
    /// bytes): a note on how the file was made (`# sweep summary, 5-shot`).
    pub above_header: Vec<(u64, String)>,
}

impl CommentLines {
    fn add(&mut self, lines: Vec<u64>) {
        self.count += lines.len() as u64;
        let room = 10usize.saturating_sub(self.first.len());
        self.first.extend(lines.into_iter().take(room));
    }
}

/// Reads CSV with a header row, as `dialect` says it is written (RFC 4180 by default, or
/// tab-separated); every cell is a string. Returns the comment lines skipped among the rows
/// (none unless `dialect.comment` is set).
///
/// `index_positions` says, when the header's first name is empty (pandas' index), whether
/// that column holds the rows' positions in every row ([`csv_index_positions`]); `None`
/// leaves it to the first row.
///
/// Errors: [`Error::Format`] for a header that cannot be read, a quote never closed, or a
/// comment line with a CR alone in it (the lines after it would be read as the comment).
pub fn csv(
    mut reader: Box<dyn BufRead + Send>,
    rel: &str,
    dialect: Dialect,
    index_positions: Option<bool>,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<CommentLines> {
    refuse_utf16(&mut reader, rel)?;
    // the lines above the header (`header_row`), whatever they hold
    skip_lines(&mut reader, dialect.header_row - 1).map_err(|e| read_failed(rel, 0, &e))?;
    // the csv crate counts the LF of a CRLF only when it reads the next record, and a record's
    // position is where the reading started, before any blank lines (rust-csv issue 395):
    // lines are counted here from the bytes instead
    // it also keeps the bytes of the record being read: a rejected row's `raw` is its text
    let lines = LineLog::keeping_text(dialect);
    let mut rdr = dialect_reader(dialect).from_reader(lines.wrap(reader));
    let line_of = |p: &csv::Position| lines.line_at(p.byte());
    let headers = csv_header(&mut rdr, rel, &lines)?;
    lines.check_header(rdr.position().byte(), rel)?;
    let header_line = lines.header_line();
    // a comment line with a CR alone in it runs on to the next LF: the lines between are lost
    let over_cr = |lines: &LineLog| match lines.comment_over_cr() {
        Some(line) => Err(Error::format(
            format!("{rel}:{line}"),
            format!(
                "a comment line (starting with {:?}) holds a CR with no LF after it (old Mac line ends): a CSV \
                 reader reads a comment to the next LF, so the lines after that CR would be lost; save the file with \
                 LF line ends",
                char::from(dialect.comment.unwrap_or(b'#'))
            ),
        )),
        None => Ok(()),
    };
    over_cr(&lines)?;
    let mut comments = CommentLines::default();
    // a blank line of a file of one column is a row whose cell is empty (null unless
    // missingValues says otherwise), as polars writes a null and DuckDB reads it; the csv
    // crate skips it. Blank lines after the last row end the file.
    let one_column = match headers.iter().collect::<Vec<_>>().as_slice() {
        [h] if !h.is_empty() => Some(h.to_string()),
        _ => None,
    };
    // a file of another delimiter read with commas: one column, its name the whole header
    if let Some(h) = one_column.as_deref().filter(|_| !dialect.named)
        && let Some((d, what)) = other_delimiter(h, dialect.delimiter)
    {
        return Err(Error::format(
            format!("{rel}:{header_line}"),
            format!(
                "the header is one column, {h:?}, that holds {what}: a file whose cells are separated by them? set \
                 delimiter = \"{}\" on the source (or delimiter = \"{}\" to read it as one column)",
                (d as char).escape_default(),
                (dialect.delimiter as char).escape_default()
            ),
        ));
    }
    lines.forget_before(rdr.position().byte());
    lines.blank_lines_before(rdr.position().byte());
    // the comments above the header (a note on how the file was made) are skipped and counted,
    // the first ones with their text
    comments.add(lines.comment_lines_before(rdr.position().byte()));
    comments.above_header = lines.preamble();
    let mut record = csv::StringRecord::new();
    // each record is handed on when the next one is read: the csv crate ends a quoted cell
    // that is never closed at the end of the file without an error, so the last record is
    // checked for that first (its last cell would hold every line after the quote). A row of
    // the wrong length waits too: when it is the last one and a quote is left open, the quote
    // is what broke it (its last cell swallowed the lines after it), not the count of cells.
    // (the source's quote character, `"` unless `quote` sets another)
    let q = dialect.quote.map_or('"', char::from);
    let never_closed = || {
        format!(
            "a quoted cell opened in this record is never closed: its last cell would hold every line to the end \
             of the file, and the rows after it cannot be told apart (so the file is refused whole, even with \
             --on-invalid=reject); close the quote or escape it as {q}{q}{}",
            if q == '"' { "" } else { " (the source's `quote`)" }
        )
    };
    let mut held: Option<Item> = None;
    // a first column without a name is pandas' index: when it holds the rows' positions (0, 1,
    // 2, …, a RangeIndex) it is left out, as the rows' order gives them; other values (labels,
    // such as model names or `describe()`'s `count` and `mean`) are kept, as column `index`
    // (pandas' name for it once reset; `level_0` when `index` is taken, and the first of
    // `level_1`, `level_2`, … not taken when that is too). The whole column tells which, read
    // before (`index_positions`): frames written one after the other count 0, 1, 0, 1.
    let taken = |name: &str| headers.iter().any(|h| h == name);
    let index_name = std::iter::once("index".to_string())
        .chain((0..).map(|n| format!("level_{n}")))
        .find(|name| !taken(name))
        .expect("a name not taken");
    let mut positions: Option<bool> = index_positions;
    let mut row: u64 = 0;
    loop {
        let pos = rdr.position().line();
        let start = rdr.position().byte();
        let read = match rdr.read_record(&mut record) {
            // a comment line the file ends with, without a line end: no record
            Ok(true) if lines.open_comment_from(start) => Ok(false),
            Err(e) if matches!(e.kind(), csv::ErrorKind::UnequalLengths { .. }) && lines.open_comment_from(start) => {
                Ok(false)
            }
            read => read,
        };
        match read {
            Ok(false) => {
                over_cr(&lines)?;
                comments.add(lines.comment_lines_before(u64::MAX));
                match held.take() {
                    // the rows after the quote cannot be told apart: the file is not
                    // read, even when bad rows are set aside
                    Some(Item::Record(_, at) | Item::Bad { at, .. }) if lines.open_quote() => {
                        return Err(Error::source_violation(rel, at, "", "csv", never_closed()));
                    }
                    Some(item) => sink(item)?,
                    // no record after the header, and a quote left open: the header's
                    None if lines.open_quote() => {
                        return Err(Error::format(
                            format!("{rel}:{header_line}"),
                            "a quoted cell opened in the CSV header is never closed: the header would hold \
                             every line of the file; close the quote",
                        ));
                    }
                    None => {}
                }
                return Ok(comments);
            }
            Ok(true) => {
                let line = record.position().map(line_of).unwrap_or(pos);
                // the held record is not the last: its bytes are not needed
                lines.forget_before(start);
                let text = || Some(lines.text(start, rdr.position().byte()));
                let mut obj = Map::new();
                let mut unnamed = None;
                let mut index_broken = None;
                for (k, (h, v)) in headers.iter().zip(record.iter()).enumerate() {
                    if h.is_empty() {
                        if k == 0 {
                            // pandas' index: row positions are left out, labels kept
                            if *positions.get_or_insert(v == "0") {
                                if v != row.to_string() {
                                    index_broken = Some(v.to_string());
                                }
                            } else {
                                obj.insert(index_name.clone(), Value::String(v.to_string()));
                            }
                        } else if !v.is_empty() && unnamed.is_none() {
                            // any other column without a name must be empty, or its value
                            // would be lost
                            unnamed = Some(k + 1);
                        }
                        continue;
                    }
                    obj.insert(h.to_string(), Value::String(v.to_string()));
                }
                row += 1;
                let stray = lines.stray_before(rdr.position().byte());
                let item = match (unnamed, index_broken) {
                    _ if stray => {
                        Item::Bad { at: Position::Line(line), rule: "csv", message: STRAY_TEXT.into(), raw: text() }
                    }
                    (_, Some(v)) => Item::Bad {
                        at: Position::Line(line),
                        rule: "csv",
                        message: format!(
                            "cell 1, in the first column, which has no name, holds {v:?} where the row's position {} \
                             was expected: the column held the rows' positions (0, 1, 2, …: a pandas index, left \
                             out) up to here, and its other values would be lost; name the column in the header",
                            row - 1
                        ),
                        raw: text(),
                    },
                    (Some(k), None) => Item::Bad {
                        at: Position::Line(line),
                        rule: "csv",
                        message: format!(
                            "cell {k} holds a value but its column has no name in the header; name the column"
                        ),
                        raw: text(),
                    },
                    (None, None) => Item::Record(obj, Position::Line(line)),
                };
                over_cr(&lines)?;
                comments.add(lines.comment_lines_before(rdr.position().byte()));
                if let Some(column) = &one_column {
                    for at in lines.blank_lines_before(rdr.position().byte()) {
                        let empty = Map::from_iter([(column.clone(), Value::String(String::new()))]);
                        if let Some(item) = held.replace(Item::Record(empty, Position::Line(at))) {
                            sink(item)?;
                        }
                    }
                }
                if let Some(item) = held.replace(item) {
                    sink(item)?;
                }
            }
            Err(e) => {
                if let Some(item) = held.take() {
                    sink(item)?;
                }
                // the file could not be read on (a compressed stream that breaks): what comes
                // after cannot be read, so the source is not, even when bad rows are set aside
                if let Some(stop) = csv_read_failed(rel, &lines, start, &e) {
                    return Err(stop);
                }
                let line = e.position().map(line_of).unwrap_or(pos + 1);
                let mut message = csv_error_message(&e);
                // a comment line above the header was taken for it
                if matches!(e.kind(), csv::ErrorKind::UnequalLengths { .. })
                    && dialect.comment.is_none()
                    && dialect.header_row == 1
                    && headers.get(0).is_some_and(|h| h.trim_start().starts_with('#'))
                {
                    message.push_str(COMMENT_HEADER);
                }
                // a row of the wrong length or with a cell that is not UTF-8 was read whole:
                // the rejects file keeps its text (bytes that are not UTF-8 as U+FFFD)
                lines.forget_before(start);
                let raw = matches!(e.kind(), csv::ErrorKind::UnequalLengths { .. } | csv::ErrorKind::Utf8 { .. })
                    .then(|| lines.text(start, rdr.position().byte()));
                // a comment line among the rows (said once: not when the header's hint is said)
                if matches!(e.kind(), csv::ErrorKind::UnequalLengths { .. })
                    && dialect.comment.is_none()
                    && !message.ends_with(COMMENT_HEADER)
                    && raw.as_deref().is_some_and(|r| r.starts_with('#'))
                {
                    message.push_str(COMMENT_ROW);
                }
                let bad = Item::Bad { at: Position::Line(line), rule: "csv", message, raw };
                match e.kind() {
                    csv::ErrorKind::UnequalLengths { .. } => held = Some(bad),
                    csv::ErrorKind::Utf8 { .. } => sink(bad)?,
                    _ => return sink(bad).map(|()| comments),
                }
            }
        }
    }
}

/// What a CSV reader's error says about the record it stopped at: a row of the wrong length,
/// a cell that is not UTF-8 (its 1-based number and byte offset in the cell), or the
/// reader's own message.
pub(crate) fn csv_error_message(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
            format!("row has {len} cell{}, the header has {expected_len}", if *len == 1 { "" } else { "s" })
        }
        csv::ErrorKind::Utf8 { err, .. } => format!(
            "cell {} is not valid UTF-8 (a bad byte {} bytes into the cell); save the file as UTF-8",
            err.field() + 1,
            err.valid_up_to()
        ),
        _ => e.to_string(),
    }
}

/// What a row of the wrong length says when the header, line 1, starts with `#`.
const COMMENT_HEADER: &str = " (line 1, read as the header, starts with `#`: a comment line? set comment = \"#\" on \
     the source to skip lines that start with it; a header that starts with `#` too would be skipped with them: then \
     set header_row to the header's line instead)";

/// What a row of the wrong length says when it starts with `#`.
const COMMENT_ROW: &str =
    " (the line starts with `#`: a comment line? set comment = \"#\" on the source to skip lines that start with it)";

/// The problem of a CSV record in which text follows the closing quote of a cell.
pub(crate) const STRAY_TEXT: &str = "text follows the closing quote of a quoted cell (`\"ab\"c`), which RFC 4180 does \
     not allow and which would be joined to the cell; quote the whole cell, or write a quote inside it as \"\"";

/// Where the line breaks are in the bytes read through [`LineLog::wrap`], to name the line
/// a CSV record starts on.
#[derive(Default, Clone)]
pub(crate) struct LineLog(std::rc::Rc<std::cell::RefCell<LineState>>);

#[derive(Default)]
struct LineState {
    /// How the file is written.
    dialect: Dialect,
    /// Bytes read so far.
    offset: u64,
    /// The last byte read, if any.
    last: Option<u8>,
    /// Line breaks (LF, or CR without LF) before the first entry of `ends`.
    breaks: u64,
    /// Offsets and bytes of the CR and LF bytes not yet passed by [`LineLog::line_at`].
    ends: std::collections::VecDeque<(u64, u8)>,
    /// Where the bytes read so far leave a CSV reader (RFC 4180 as the csv crate reads it).
    quote: QuoteState,
    /// Offsets of text right after the closing quote of a cell (`"ab"c`), which RFC 4180
    /// does not allow and the csv crate joins to the cell, not yet passed by
    /// [`LineLog::stray_before`].
    stray: std::collections::VecDeque<u64>,
    /// Offsets and lines of blank lines outside quoted cells (a line end right after
    /// another), not yet passed by [`LineLog::blank_lines_before`]: the csv crate skips them,
    /// and in a file of one column each is a row whose cell is empty.
    blank: std::collections::VecDeque<(u64, u64)>,
    /// The last byte read outside a quoted cell ended a line.
    line_ended: bool,
    /// Line breaks read so far (LF, CR, and CRLF as one).
    lines_read: u64,
    /// A byte other than a byte order mark was read.
    started: bool,
    /// The line the header starts on: the first that is neither blank nor a comment.
    header_line: Option<u64>,
    /// The bytes read are inside a comment line (from the dialect's comment byte at the start
    /// of a record to the LF that ends it, as the csv crate reads comments).
    in_comment: bool,
    /// The last byte read was a CR inside a comment line.
    comment_cr: bool,
    /// The line of a comment that holds a CR with no LF after it: the csv crate reads the
    /// comment on to the next LF, over the lines a CR alone ends (old Mac files).
    comment_over_cr: Option<u64>,
    /// Offsets of the comment byte and of the LF that ends each comment line (`u64::MAX`
    /// while it runs), not yet passed by [`LineLog::line_at`].
    comment_spans: std::collections::VecDeque<(u64, u64)>,
    /// Offsets and lines of comment lines not yet passed by [`LineLog::comment_lines_before`].
    comment_lines: std::collections::VecDeque<(u64, u64)>,
    /// The first comment lines above the header, each with its text (its first bytes): a note
    /// on how the file was made, said where the comments are counted.
    preamble: Vec<(u64, Vec<u8>)>,
    /// The comment line being read is one of `preamble`'s.
    in_preamble: bool,
    /// Whether the bytes read are kept for [`LineLog::text`].
    keep: bool,
    /// The bytes read from offset `kept_from` on, after the first `kept_skip` (see
    /// [`LineLog::text`]): the record being read and what the reader has read ahead of it.
    kept: Vec<u8>,
    /// Bytes at the front of `kept` already let go; they are dropped in one move once they
    /// are half of it, not record by record.
    kept_skip: usize,
    /// The offset of `kept[kept_skip]`.
    kept_from: u64,
}

/// The quoting state of a CSV reader between two bytes: a quote opens a quoted cell only at
/// the start of a cell; inside one, `""` is a quote and a lone `"` closes it.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum QuoteState {
    #[default]
    CellStart,
    Unquoted,
    Quoted,
    /// A `"` inside a quoted cell: the end of the cell, or the first half of `""`.
    QuoteInQuoted,
    /// Blanks (spaces, tabs) after the closing quote of a cell, which readers keep in the
    /// cell (`"a" ,b` gives `a `), as Python's csv does.
    BlankAfterQuote,
}

impl QuoteState {
    /// The state after byte `b` of a file written as `dialect` says.
    fn next(self, b: u8, dialect: Dialect) -> QuoteState {
        use QuoteState::*;
        // the delimiter ends a cell unquoted, or quoted and closed, whatever byte it is (a tab
        // is no blank after a closing quote in a tab-separated file)
        if b == dialect.delimiter {
            return match self {
                Quoted => Quoted,
                CellStart | Unquoted | QuoteInQuoted | BlankAfterQuote => CellStart,
            };
        }
        // the dialect's quote byte is matched as `"` below; a `"` that is not it is text
        let b = match dialect.quote {
            Some(q) if b == q => b'"',
            _ if b == b'"' => 0,
            _ => b,
        };
        match (self, b) {
            (CellStart, b'"') => Quoted,
            (CellStart | Unquoted, b'\n' | b'\r') => CellStart,
            (CellStart | Unquoted, _) => Unquoted,
            (Quoted, b'"') => QuoteInQuoted,
            (Quoted, _) => Quoted,
            (QuoteInQuoted, b'"') => Quoted,
            (QuoteInQuoted | BlankAfterQuote, b'\n' | b'\r') => CellStart,
            (QuoteInQuoted | BlankAfterQuote, b' ' | b'\t') => BlankAfterQuote,
            (QuoteInQuoted | BlankAfterQuote, _) => Unquoted,
        }
    }
}

impl LineLog {
    /// A log of a file written as `dialect` says, that also keeps the bytes of the record
    /// being read, for [`LineLog::text`]; its reader lets them go with
    /// [`LineLog::forget_before`].
    pub(crate) fn keeping_text(dialect: Dialect) -> LineLog {
        let log = LineLog::default();
        {
            let mut s = log.0.borrow_mut();
            s.keep = true;
            s.dialect = dialect;
            // the lines above the header were read past (`header_row`): counted from there
            s.breaks = dialect.header_row.saturating_sub(1);
            s.lines_read = s.breaks;
        }
        log
    }

    pub(crate) fn wrap<R: std::io::Read>(&self, inner: R) -> LineReader<R> {
        LineReader { inner, log: self.clone() }
    }

    /// The 1-based line of the first byte at or after `offset` that ends no line: where a
    /// record whose reading started at `offset` begins (`offset` never decreases from one call
    /// to the next).
    pub(crate) fn line_at(&self, mut offset: u64) -> u64 {
        let mut s = self.0.borrow_mut();
        loop {
            // a comment line where the record would start is passed, to its LF
            while s.comment_spans.front().is_some_and(|&(start, _)| start < offset) {
                s.comment_spans.pop_front();
            }
            if let Some(&(start, end)) = s.comment_spans.front()
                && start == offset
            {
                s.comment_spans.pop_front();
                offset = end;
            }
            let Some(&(at, byte)) = s.ends.front() else { break };
            if at > offset {
                break;
            }
            if at == offset {
                offset += 1;
            }
            s.ends.pop_front();
            // LF ends a line, and so does a CR that no LF follows (old Mac files)
            let crlf = byte == b'\r' && s.ends.front() == Some(&(at + 1, b'\n'));
            s.breaks += u64::from(byte == b'\n' || (byte == b'\r' && !crlf));
        }
        s.breaks + 1
    }

    /// Whether text follows a closing quote (`"ab"c`) before byte `end` (offsets passed in
    /// increasing order): in the record that ends there, as records are read in order.
    pub(crate) fn stray_before(&self, end: u64) -> bool {
        let mut s = self.0.borrow_mut();
        let mut found = false;
        while s.stray.front().is_some_and(|&at| at < end) {
            s.stray.pop_front();
            found = true;
        }
        found
    }

    /// The 1-based lines of the blank lines before byte `end` (offsets passed in increasing
    /// order), not given by an earlier call.
    pub(crate) fn blank_lines_before(&self, end: u64) -> Vec<u64> {
        lines_before(&mut self.0.borrow_mut().blank, end)
    }

    /// The 1-based lines of the comment lines that start before byte `end` (offsets passed
    /// in increasing order), not given by an earlier call.
    pub(crate) fn comment_lines_before(&self, end: u64) -> Vec<u64> {
        lines_before(&mut self.0.borrow_mut().comment_lines, end)
    }

    /// The first comment lines above the header, each with its line and its text (its first
    /// [`PREAMBLE_BYTES`] bytes, as UTF-8 with bad bytes replaced).
    pub(crate) fn preamble(&self) -> Vec<(u64, String)> {
        let s = self.0.borrow();
        s.preamble.iter().map(|(line, text)| (*line, String::from_utf8_lossy(text).trim_end().to_string())).collect()
    }

    /// Whether the reading of a record that starts at byte `offset` meets only line ends, then
    /// a comment line that runs to the end of the input (no LF after it): the csv crate reads
    /// that comment as a record of one empty cell.
    pub(crate) fn open_comment_from(&self, offset: u64) -> bool {
        let s = self.0.borrow();
        let Some(&(start, end)) = s.comment_spans.iter().find(|(at, _)| *at >= offset) else { return false };
        let ends = s.ends.iter().filter(|(at, _)| (offset..start).contains(at)).count() as u64;
        end == u64::MAX && s.in_comment && ends == start - offset
    }

    /// The line the header starts on: the dialect's `header_row` (1 unless set), or the first
    /// line after the blank lines and comment lines below it.
    pub(crate) fn header_line(&self) -> u64 {
        let s = self.0.borrow();
        s.header_line.unwrap_or(s.dialect.header_row)
    }

    /// The line of a comment line that holds a CR with no LF after it, if one was read: the
    /// csv crate reads the comment on to the next LF, so the lines after that CR are lost.
    pub(crate) fn comment_over_cr(&self) -> Option<u64> {
        self.0.borrow().comment_over_cr
    }

    /// Refuses a CSV header (ending at byte `end`) in which text follows a closing quote.
    ///
    /// Errors: [`Error::Format`] at line 1 of `rel`.
    pub(crate) fn check_header(&self, end: u64, rel: &str) -> Result<()> {
        if self.stray_before(end) {
            let line = self.header_line();
            return Err(Error::format(format!("{rel}:{line}"), format!("the CSV header: {STRAY_TEXT}")));
        }
        Ok(())
    }

    /// True when the bytes read so far end with a line break (or nothing was read): at the
    /// end of the input, a last line that was written whole.
    pub(crate) fn ends_with_line_break(&self) -> bool {
        matches!(self.0.borrow().last, None | Some(b'\n' | b'\r'))
    }

    /// True when the bytes read so far end inside a quoted cell: at the end of the input,
    /// a quote that was never closed.
    pub(crate) fn open_quote(&self) -> bool {
        self.0.borrow().quote == QuoteState::Quoted
    }

    /// True when the bytes read so far end with a closing quote (a quoted last cell that is
    /// whole, as W&B ends its exports).
    pub(crate) fn ends_with_quote(&self) -> bool {
        let s = self.0.borrow();
        s.last == Some(b'"') && s.quote != QuoteState::Quoted
    }

    /// The text of the bytes from offset `start` to `end` as they were read, without the
    /// line break that ends them, for a rejects file (cut as [`raw`] cuts); the bytes before
    /// `start` are let go. Empty when they were let go already.
    pub(crate) fn text(&self, start: u64, end: u64) -> String {
        self.forget_before(start);
        let s = self.0.borrow();
        let kept = &s.kept[s.kept_skip..];
        let len = end.saturating_sub(s.kept_from).min(kept.len() as u64) as usize;
        // a record's reading starts before the blank lines and comment lines ahead of it
        let mut first = 0;
        loop {
            first += kept[first..len].iter().position(|b| !matches!(b, b'\n' | b'\r')).unwrap_or(len - first);
            match s.dialect.comment {
                Some(c) if kept.get(first) == Some(&c) && first < len => {
                    first += memchr::memchr(b'\n', &kept[first..len]).map_or(len - first, |n| n + 1);
                }
                _ => break,
            }
        }
        let bytes = &kept[first..len];
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        raw(bytes.strip_suffix(b"\r").unwrap_or(bytes))
    }

    /// Lets go of the bytes before offset `end` (a record handed on whole).
    pub(crate) fn forget_before(&self, end: u64) {
        let mut s = self.0.borrow_mut();
        let n = end.saturating_sub(s.kept_from).min((s.kept.len() - s.kept_skip) as u64) as usize;
        s.kept_skip += n;
        s.kept_from += n as u64;
        if s.kept_skip >= 1 << 16 && 2 * s.kept_skip >= s.kept.len() {
            let skip = s.kept_skip;
            s.kept.drain(..skip);
            s.kept_skip = 0;
        }
    }
}

/// Takes the (offset, line) entries of `queue` whose offset is before `end` from its front: their
/// lines.
fn lines_before(queue: &mut std::collections::VecDeque<(u64, u64)>, end: u64) -> Vec<u64> {
    let mut lines = Vec::new();
    while let Some(&(_, line)) = queue.front().filter(|&&(at, _)| at < end) {
        queue.pop_front();
        lines.push(line);
    }
    lines
}

/// A reader that logs the line breaks of what it reads into its [`LineLog`].
pub(crate) struct LineReader<R> {
    inner: R,
    log: LineLog,
}

impl<R: std::io::Read> std::io::Read for LineReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut s = self.log.0.borrow_mut();
        for i in memchr::memchr2_iter(b'\n', b'\r', &buf[..n]) {
            let at = s.offset + i as u64;
            s.ends.push_back((at, buf[i]));
        }
        let (mut q, dialect) = (s.quote, s.dialect);
        // a byte order mark is no text of the first cell (the csv crate leaves it out)
        let skip = if s.offset == 0 && buf[..n].starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
        let mut line_ended = s.line_ended;
        for (i, &b) in buf[..n].iter().enumerate().skip(skip) {
            let at = s.offset + i as u64;
            let prev = i.checked_sub(1).map_or(s.last, |j| Some(buf[j]));
            // a CRLF is one line break, counted at its CR
            let breaks = u64::from(b == b'\r' || (b == b'\n' && prev != Some(b'\r')));
            if s.in_comment {
                // the csv crate reads a comment line to its LF, whatever comes before
                if s.comment_cr && b != b'\n' && s.comment_over_cr.is_none() {
                    s.comment_over_cr = s.comment_lines.back().map(|&(_, line)| line).or(Some(s.lines_read));
                }
                s.comment_cr = b == b'\r';
                if s.in_preamble
                    && !matches!(b, b'\n' | b'\r')
                    && let Some((_, text)) = s.preamble.last_mut().filter(|(_, t)| t.len() < PREAMBLE_BYTES)
                {
                    text.push(b);
                }
                if b == b'\n' {
                    s.in_comment = false;
                    s.in_preamble = false;
                    if let Some(span) = s.comment_spans.back_mut() {
                        span.1 = at;
                    }
                    line_ended = true;
                }
                s.lines_read += breaks;
                continue;
            }
            let record_start = q == QuoteState::CellStart && (line_ended || !s.started);
            s.started = true;
            if record_start && dialect.comment == Some(b) {
                s.in_comment = true;
                s.comment_cr = false;
                let line = s.lines_read + 1;
                s.comment_spans.push_back((at, u64::MAX));
                s.comment_lines.push_back((at, line));
                s.in_preamble = s.header_line.is_none() && s.preamble.len() < PREAMBLE_LINES;
                if s.in_preamble {
                    s.preamble.push((line, vec![b]));
                }
                continue;
            }
            if record_start && !matches!(b, b'\n' | b'\r') && s.header_line.is_none() {
                s.header_line = Some(s.lines_read + 1);
            }
            let next = q.next(b, dialect);
            if matches!(q, QuoteState::QuoteInQuoted | QuoteState::BlankAfterQuote) && next == QuoteState::Unquoted {
                s.stray.push_back(at);
            }
            let ends_line = matches!(b, b'\n' | b'\r') && q != QuoteState::Quoted;
            // a line that ends where it starts, outside quotes (the LF of a CRLF ends the
            // line its CR ended)
            let crlf_half = b == b'\n' && prev == Some(b'\r');
            if ends_line && q == QuoteState::CellStart && line_ended && !crlf_half {
                let line = s.lines_read + 1;
                s.blank.push_back((at, line));
            }
            s.lines_read += breaks;
            line_ended = ends_line;
            q = next;
        }
        s.line_ended = line_ended;
        s.quote = q;
        if s.keep {
            s.kept.extend_from_slice(&buf[..n]);
        }
        s.offset += n as u64;
        if n > 0 {
            s.last = Some(buf[n - 1]);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`super::csv`] without the comment lines it skipped.
    fn csv(
        reader: Box<dyn BufRead + Send>,
        rel: &str,
        dialect: Dialect,
        index_positions: Option<bool>,
        sink: &mut dyn FnMut(Item) -> Result<()>,
    ) -> Result<()> {
        super::csv(reader, rel, dialect, index_positions, sink).map(drop)
    }

    /// Chunks of whole lines, as `BufRead::read_until` line by line would cut them: a chunk
    /// ends with the first line that reaches `chunk_bytes`.
    /// Chunks as (bytes, lines).
    type Chunks = Vec<(Vec<u8>, Vec<(u64, usize)>)>;

    fn chunks_line_by_line(bytes: &[u8], chunk_bytes: usize) -> Chunks {
        let mut out = Vec::new();
        let mut chunk = (Vec::new(), Vec::new());
        let mut reader = bytes;
        let mut line_no = 0;
        loop {
            let n = reader.read_until(b'\n', &mut chunk.0).unwrap();
            if n == 0 {
                break;
            }
            line_no += 1;
            chunk.1.push((line_no, chunk.0.len()));
            if chunk.0.len() >= chunk_bytes {
                out.push(std::mem::take(&mut chunk));
            }
        }
        if !chunk.1.is_empty() {
            out.push(chunk);
        }
        out
    }

    #[test]
    fn chunks_end_where_line_by_line_reading_ends_them() {
        let mut next = crate::core::testing::xorshift(0x2545_f491_4f6c_dd1d_u64);
        for case in 0..200 {
            let mut bytes = Vec::new();
            for _ in 0..next() % 60 {
                let len = match next() % 5 {
                    0 => 0,
                    1 => 300,
                    _ => next() % 40,
                };
                bytes.extend((0..len).map(|i| b'a' + (i % 26) as u8));
                bytes.extend_from_slice(if next().is_multiple_of(4) { b"\r\n" } else { b"\n" });
            }
            if case % 3 == 0 {
                // a last line without its newline
                bytes.extend_from_slice(b"{\"x\": 1}");
            }
            let chunk_bytes = [1, 2, 17, 64, 1000, 1 << 20][case % 6];
            let buffer = [1, 3, 16, 256 << 10][case % 4];
            let reader = Box::new(std::io::BufReader::with_capacity(buffer, std::io::Cursor::new(bytes.clone())));
            let mut got = Vec::new();
            jsonl_chunks(reader, "t.jsonl", chunk_bytes, &mut |c| {
                got.push((c.bytes, c.lines));
                Ok(())
            })
            .unwrap();
            assert_eq!(got, chunks_line_by_line(&bytes, chunk_bytes), "case {case}");
        }
    }

    fn collect(f: impl FnOnce(&mut dyn FnMut(Item) -> Result<()>) -> Result<()>) -> Vec<String> {
        let mut out = Vec::new();
        f(&mut |item| {
            out.push(match item {
                Item::Record(o, at) => format!("{at} {}", Value::Object(o)),
                Item::Bad { at, rule, message, .. } => format!("{at} {rule}: {message}"),
            });
            Ok(())
        })
        .unwrap();
        out
    }

    fn boxed(s: &'static [u8]) -> Box<dyn BufRead + Send> {
        Box::new(std::io::Cursor::new(s))
    }

    #[test]
    fn jsonl_accepts_bom_crlf_blank_and_flags_truncation() {
        let got = collect(|s| jsonl(boxed(b"\xEF\xBB\xBF{\"a\":1}\r\n\n[1]\n{\"a\":\xff}\n{\"a\":"), "f", s));
        assert_eq!(got[0], "1 {\"a\":1}");
        assert!(got[1].starts_with("3 record: expected a JSON object, found an array"), "{got:?}");
        assert!(got[2].starts_with("4 encoding"), "{got:?}");
        assert!(got[3].starts_with("5 truncated"), "{got:?}");
        let got = collect(|s| jsonl(boxed(b"{\"a\":1}\n\xEF\xBB\xBF{\"a\":2}\n"), "f", s));
        assert!(
            got[1].starts_with(
                "2 json: not valid JSON: expected value at column 1; the line starts with a byte order mark"
            ),
            "{got:?}"
        );
    }

    #[test]
    fn a_one_record_document_that_is_a_scalar_is_a_bad_record() {
        for (text, found) in [(&b"\"hello\""[..], "a string"), (b"null", "null"), (b"5", "a number")] {
            let got = collect(|s| json_record(Box::new(std::io::Cursor::new(text)), "f", s));
            assert_eq!(got, vec![format!(" shape: expected a JSON object (one record), found {found}")]);
        }
        // a list of records is no record either, whatever it holds
        for (text, n) in [(&br#"[{"a":1},{"b":2}]"#[..], 2), (br#"[{"a":1}]"#, 1), (b"[{\"a\":1}, 5]", 2)] {
            let got = collect(|s| json_record(Box::new(std::io::Cursor::new(text)), "f", s));
            assert_eq!(
                got,
                vec![format!(
                    " shape: expected a JSON object (one record), found an array of {n} item(s): this format reads \
                     one record per file"
                )]
            );
        }
        let got = collect(|s| json_record(Box::new(std::io::Cursor::new(&br#"[{"a":1},"#[..])), "f", s));
        assert!(got[0].starts_with(" json: "), "{got:?}");
        // a byte that is no UTF-8 (Latin-1's é) is said as such
        let got = collect(|s| json_record(Box::new(std::io::Cursor::new(&b"{\"a\": \"caf\xe9\"}"[..])), "f", s));
        assert_eq!(
            got,
            [
                " json: not UTF-8 text at line 1 column 11: a byte there is no UTF-8 (a file in another encoding, such as \
              Latin-1: save it as UTF-8)"
            ]
        );
    }

    #[test]
    fn json_pointer_streams_records() {
        let got = collect(|s| {
            json(boxed(br#"{"meta":{"x":1},"experiments":[{"a":NaN},{"b":2}],"z":[1]}"#), "f", "/experiments", s)
        });
        assert_eq!(got, vec!["/experiments/0 {\"a\":\"\u{FDD0}NaN\"}", "/experiments/1 {\"b\":2}"]);
        let got = collect(|s| json(boxed(br#"[{"a":1}]"#), "f", "", s));
        assert_eq!(got, vec!["/0 {\"a\":1}"]);
        let got = collect(|s| json(boxed(b"\xEF\xBB\xBF{\"a\":1}"), "f", "", s));
        assert_eq!(got, vec![" {\"a\":1}"]);
    }

    #[test]
    fn a_bad_json_line_is_placed_by_column_and_a_lone_surrogate_is_explained() {
        let got = collect(|s| jsonl(boxed(b"{\"a\": 1}\n{\"a\": }\n{\"a\": \"\\ud800\"}\n"), "f", s));
        assert_eq!(got[1], "2 json: not valid JSON: expected value at column 7");
        assert!(got[2].starts_with("3 json: not valid JSON: unexpected end of hex escape at column 14"), "{got:?}");
        assert!(got[2].ends_with("a lone one is not)"), "{got:?}");
        // valid JSON deeper than the parser goes is said as the reader's limit
        let deep: &'static str = format!("{{\"a\":{}1{}}}\n", "[".repeat(200), "]".repeat(200)).leak();
        let got = collect(|s| jsonl(boxed(deep.as_bytes()), "f", s));
        assert!(got[0].starts_with("1 json: nested 128 or more arrays or objects deep"), "{got:?}");
        assert!(!got[0].contains("not valid"), "{got:?}");
        // the limit: 127 levels with the record's own object read, 128 not
        for (arrays, read) in [(126, true), (127, false)] {
            let line: &'static str = format!("{{\"a\":{}1{}}}\n", "[".repeat(arrays), "]".repeat(arrays)).leak();
            let got = collect(|s| jsonl(boxed(line.as_bytes()), "f", s));
            assert_eq!(!got[0].contains("nested 128 or more"), read, "{arrays}: {got:?}");
        }
        let got = collect(|s| jsonl(boxed(b"{\"a\": 1e400}\n"), "f", s));
        assert_eq!(
            got[0],
            "1 json: a number beyond the range of a 64-bit float (about ±1.8e308) at column 11; write an infinity as \
             the bare token Infinity or -Infinity"
        );
    }

    #[test]
    fn a_compressed_stream_cut_short_is_said_with_the_lines_read_before() {
        // read as a source reads its files: through `files::open`, which tells the
        // decompressor's errors from those of reading the file
        let dir = tempfile::tempdir().unwrap();
        let open = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let file = super::super::files::InputFile { rel: name.into(), path, captures: vec![] };
            super::super::files::open(&file).unwrap()
        };
        let text: String = (1..=3000).map(|i| format!("{{\"step\":{i},\"loss\":0.5}}\n")).collect();
        let mut z = zstd::encode_all(text.as_bytes(), 3).unwrap();
        z.truncate(z.len() - 8);
        let e = jsonl(open("m.jsonl.zst", &z), "m.jsonl.zst", &mut |_| Ok(())).unwrap_err().to_string();
        assert!(
            e.contains("m.jsonl.zst:1: the compressed stream breaks before its first line: incomplete frame"),
            "{e}"
        );
        assert!(e.contains("the file is cut short, damaged, or followed by bytes that are not compressed data"), "{e}");
        let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut g, text.as_bytes()).unwrap();
        let mut g = g.finish().unwrap();
        g.truncate(g.len() - 8);
        let e = jsonl(open("m.jsonl.gz", &g), "m.jsonl.gz", &mut |_| Ok(())).unwrap_err().to_string();
        assert!(e.contains("the compressed stream breaks after line 3,000"), "{e}");
    }

    #[test]
    fn json_pointer_to_a_scalar_says_what_is_there() {
        let mut sink = |_: Item| Ok(());
        let e = json(boxed(br#"{"experiments":[],"other":1}"#), "f", "/other", &mut sink).unwrap_err().to_string();
        assert!(e.contains("record_path \"/other\" holds a number in this file, not an array of records"), "{e}");
        let e = json(boxed(br#"{"other":1}"#), "f", "/nosuch", &mut sink).unwrap_err().to_string();
        assert!(e.contains("record_path \"/nosuch\" does not exist in this file"), "{e}");
    }

    #[test]
    fn a_key_named_twice_on_the_way_to_the_records_is_refused() {
        // Python's json keeps the last "a" (x = 2, 3); reading the first would lose them
        for (text, pointer, key, column) in [
            (&br#"{"a": [{"x":1}], "a": [{"x":2},{"x":3}]}"#[..], "/a", "a", 21),
            (br#"{"meta": 1, "meta": 2, "a": [{"x":1}]}"#, "/a", "meta", 19),
            (br#"{"r": {"b": 0, "a": [{"x":1}], "b": 1}}"#, "/r/a", "b", 35),
        ] {
            let e = json(boxed(text), "f", pointer, &mut |_| Ok(())).unwrap_err().to_string();
            let want = format!("key \"{key}\" appears twice in one object (a reader would keep only the last value)");
            assert!(e.contains(&want) && e.contains(&format!("column {column}")), "{e}");
        }
        // a key named once, beside others, is read as before
        let got = collect(|s| json(boxed(br#"{"b": 1, "a": [{"x":1}], "c": {"d": 1}}"#), "f", "/a", s));
        assert_eq!(got, vec!["/a/0 {\"x\":1}"]);
    }

    const HASH: Dialect =
        Dialect { delimiter: b',', quote: Some(b'"'), named: false, comment: Some(b'#'), header_row: 1 };

    /// Items and skipped comment lines of `text` read with `dialect`, each item with its raw text.
    fn read_commented(text: &'static [u8], dialect: Dialect) -> (Vec<String>, Result<CommentLines>) {
        let mut out = Vec::new();
        let r = super::csv(boxed(text), "f.csv", dialect, None, &mut |item| {
            out.push(match item {
                Item::Record(o, at) => format!("{at} {}", Value::Object(o)),
                Item::Bad { at, raw, .. } => format!("{at} bad {raw:?}"),
            });
            Ok(())
        });
        (out, r)
    }

    #[test]
    fn csv_comment_lines_are_skipped_and_lines_stay_right() {
        let text = b"# results, merged by hand\r\n\r\n#  on 2026-11-02\r\nrun,score\r\n# gsm8k\r\na,\"0.5\r\n# not a comment\"\r\n\r\n#b,0.6\r\nc,0.7,x\r\n\"#d\",0.8\r\n# end\r\n";
        let (got, r) = read_commented(text, HASH);
        assert_eq!(
            got,
            vec![
                "6 {\"run\":\"a\",\"score\":\"0.5\\r\\n# not a comment\"}",
                "10 bad Some(\"c,0.7,x\")",
                "11 {\"run\":\"#d\",\"score\":\"0.8\"}",
            ]
        );
        let above = vec![(1, "# results, merged by hand".to_string()), (3, "#  on 2026-11-02".to_string())];
        assert_eq!(r.unwrap(), CommentLines { count: 5, first: vec![1, 3, 5, 9, 12], above_header: above });
        // without `comment`, the first line is the header; a `#` line among rows is said to be one
        let (got, _) = read_commented(b"# note\nrun,score\na,1\n", Dialect::default());
        assert_eq!(got[0], "2 bad Some(\"run,score\")");
        let mut said = Vec::new();
        super::csv(boxed(b"run,score\na,1\n# mid\n"), "f.csv", Dialect::default(), None, &mut |item| {
            if let Item::Bad { message, .. } = item {
                said.push(message);
            }
            Ok(())
        })
        .unwrap();
        assert!(said[0].ends_with(COMMENT_ROW), "{said:?}");
    }

    #[test]
    fn csv_header_row_skips_the_lines_above_it_and_lines_stay_right() {
        let third = Dialect { header_row: 3, ..Dialect::default() };
        for text in [
            &b"# notes, 5-shot\n\n#,model,acc\n1,base,0.55\n2,\"a\nb\",0.7\n"[..],
            b"# notes\r\n\r\n#,model,acc\r\n1,base,0.55\r\n2,\"a\nb\",0.7\r\n",
        ] {
            let (got, r) = read_commented(text, third);
            assert_eq!(
                got,
                vec![
                    "4 {\"#\":\"1\",\"model\":\"base\",\"acc\":\"0.55\"}",
                    "5 {\"#\":\"2\",\"model\":\"a\\nb\",\"acc\":\"0.7\"}"
                ],
                "{text:?}"
            );
            assert_eq!(r.unwrap().count, 0);
            assert_eq!(csv_columns(boxed(text), "f.csv", third).unwrap(), ["#", "model", "acc"]);
        }
        // a header named twice is named at its line
        let e = super::csv(boxed(b"x\ny\na,a\n"), "f.csv", third, None, &mut |_| Ok(())).unwrap_err();
        assert!(e.to_string().starts_with("f.csv:3:"), "{e}");
    }

    #[test]
    fn csv_comment_line_that_ends_the_file_without_a_line_end_is_no_row() {
        for text in [&b"run,score\na,0.5\n# end"[..], b"run,score\r\na,0.5\r\n\r\n# end", b"run,score\ra,0.5\r# end"] {
            let (out, r) = read_commented(text, HASH);
            assert_eq!(out, vec!["2 {\"run\":\"a\",\"score\":\"0.5\"}"], "{text:?}");
            assert_eq!(r.unwrap().count, 1, "{text:?}");
        }
    }

    #[test]
    fn csv_comment_lines_leave_blank_rows_of_one_column_on_their_lines() {
        let (got, r) = read_commented(b"#c\nx\n1\n\n# c\n\n2\n", HASH);
        assert_eq!(got, vec!["3 {\"x\":\"1\"}", "4 {\"x\":\"\"}", "6 {\"x\":\"\"}", "7 {\"x\":\"2\"}"]);
        assert_eq!(r.unwrap().first, vec![1, 5]);
    }

    #[test]
    fn csv_header_errors_name_the_header_line_below_comments() {
        let e = super::csv(boxed(b"# a\n# b\nx,x\n1,2\n"), "f.csv", HASH, None, &mut |_| Ok(())).unwrap_err();
        assert!(e.to_string().starts_with("f.csv:3:"), "{e}");
    }

    #[test]
    fn csv_comment_with_a_cr_alone_is_refused_rather_than_lose_the_lines_after_it() {
        let (got, r) = read_commented(b"run,score\ra,1\r# note\rb,2\rc,3\n", HASH);
        let e = r.unwrap_err().to_string();
        assert!(e.starts_with("f.csv:3:") && e.contains("CR with no LF"), "{e} {got:?}");
    }

    #[test]
    fn csv_lines_are_right_with_crlf_endings() {
        let got = collect(|s| {
            csv(
                boxed(b"a,b\r\n1,x\r\n2,\"y\r\nz\"\r\n\r\n3\r\n4,w\n5,v\r\n\r\n6,u\r\n"),
                "f",
                Dialect::default(),
                None,
                s,
            )
        });
        assert_eq!(
            got,
            vec![
                "2 {\"a\":\"1\",\"b\":\"x\"}",
                "3 {\"a\":\"2\",\"b\":\"y\\r\\nz\"}",
                "6 csv: row has 1 cell, the header has 2",
                "7 {\"a\":\"4\",\"b\":\"w\"}",
                "8 {\"a\":\"5\",\"b\":\"v\"}",
                "10 {\"a\":\"6\",\"b\":\"u\"}",
            ]
        );
    }

    #[test]
    fn csv_lines_are_right_with_cr_endings() {
        let got = collect(|s| csv(boxed(b"a,b\r1,x\r\r2,y\r3,z\n\n4,w"), "f", Dialect::default(), None, s));
        assert_eq!(
            got,
            vec![
                "2 {\"a\":\"1\",\"b\":\"x\"}",
                "4 {\"a\":\"2\",\"b\":\"y\"}",
                "5 {\"a\":\"3\",\"b\":\"z\"}",
                "7 {\"a\":\"4\",\"b\":\"w\"}",
            ]
        );
    }

    /// The items of a CSV text, and the error that stopped the reading, if any.
    fn read_csv(text: &'static [u8]) -> (Vec<String>, Option<String>) {
        let mut out = Vec::new();
        let r = csv(boxed(text), "f", Dialect::default(), None, &mut |item| {
            out.push(match item {
                Item::Record(o, at) => format!("{at} {}", Value::Object(o)),
                Item::Bad { at, rule, message, .. } => format!("{at} {rule}: {message}"),
            });
            Ok(())
        });
        (out, r.err().map(|e| e.to_string()))
    }

    #[test]
    fn csv_quote_never_closed_refuses_the_file_rather_than_swallow_it() {
        let (got, e) = read_csv(b"step,loss,name\n1,0.5,a\n2,0.4,\"b\n3,0.1,c\n");
        assert_eq!(got, vec![r#"2 {"step":"1","loss":"0.5","name":"a"}"#], "{got:?}");
        let e = e.unwrap();
        assert!(e.contains("f:3: a quoted cell opened in this record is never closed"), "{e}");
        assert!(e.contains("the rows after it cannot be told apart"), "{e}");
        // closed quotes across lines, and a quote inside an unquoted cell, are fine
        let got = collect(|s| {
            csv(boxed(b"a,b\n1,\"x\ny\"\n2,5\" screen\n3,\"z\"\"\n\"\n"), "f", Dialect::default(), None, s)
        });
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got.iter().all(|g| !g.contains("csv:")), "{got:?}");
        let got = collect(|s| csv(boxed(b"a,b\n5\" screen,\"x\ny\"\n"), "f", Dialect::default(), None, s));
        assert_eq!(got, vec![r#"2 {"a":"5\" screen","b":"x\ny"}"#], "{got:?}");
        // unclosed: without a final newline, a lone quote at the end, after a bare quote
        for text in [&b"a,b\nr,\"abc"[..], b"a,b\n1,x\n2,\"", b"a,b\n5\" screen,\"abc\ndef\n", b"a,b\r\n1,\"x\r\n"] {
            let mut sink = |_: Item| Ok(());
            let e = csv(boxed(text), "f", Dialect::default(), None, &mut sink).unwrap_err().to_string();
            assert!(e.contains("a quoted cell opened in this record is never closed"), "{e}");
        }
    }

    #[test]
    fn csv_quote_never_closed_in_a_middle_cell_is_named_as_such() {
        // the quote opened in the first cell swallows the rest of the file: one cell short
        let (got, e) = read_csv(b"step,loss,name\n1,0.5,a\n\"2,0.4,b\n3,0.1,c\n");
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(e.unwrap().contains("f:3: a quoted cell opened in this record is never closed"));
        // a short row that is not the last one, and a short last row without an open quote,
        // are said to be short
        let got = collect(|s| csv(boxed(b"a,b\n1\n2,\"x\"\n3\n"), "f", Dialect::default(), None, s));
        assert_eq!(
            got,
            vec![
                "2 csv: row has 1 cell, the header has 2",
                r#"3 {"a":"2","b":"x"}"#,
                "4 csv: row has 1 cell, the header has 2"
            ]
        );
    }

    #[test]
    fn csv_rows_set_aside_far_into_a_file_keep_their_text() {
        // past the bytes let go in one move (64 KiB), the kept text still lines up
        let mut text = String::from("a,b\n");
        for i in 0..20_000 {
            text.push_str(&format!("{i},x{i}\n"));
        }
        text.push_str("late,\"q\"z\n");
        for i in 0..3 {
            text.push_str(&format!("{i},y\n"));
        }
        let mut raws = Vec::new();
        let text: &'static str = text.leak();
        csv(boxed(text.as_bytes()), "f", Dialect::default(), None, &mut |item| {
            if let Item::Bad { raw, .. } = item {
                raws.push(raw);
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(raws, vec![Some("late,\"q\"z".to_string())]);
    }

    #[test]
    fn csv_rows_set_aside_keep_their_text_as_written() {
        let mut raws = Vec::new();
        let text = b"a,b\n1,x\n\n2,\"say \"\"hi\"\"\"!\r\n3,y\n4,\"p\"q,z\n";
        csv(boxed(text), "f", Dialect::default(), None, &mut |item| {
            if let Item::Bad { raw, .. } = item {
                raws.push(raw);
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(raws, vec![Some("2,\"say \"\"hi\"\"\"!".to_string()), Some("4,\"p\"q,z".to_string())]);
    }

    #[test]
    fn csv_row_of_the_wrong_length_keeps_its_text_for_the_rejects_file() {
        let mut raws = Vec::new();
        csv(boxed(b"a,b,c\n1,\"x,y\"\n2,3,4\n"), "f", Dialect::default(), None, &mut |item| {
            if let Item::Bad { raw, .. } = item {
                raws.push(raw);
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(raws, vec![Some("1,\"x,y\"".to_string())]);
    }

    #[test]
    fn csv_header_with_a_quote_never_closed_is_an_error() {
        let mut sink = |_: Item| Ok(());
        let e = csv(boxed(b"a,\"b,c\n1,2,3\n"), "f.csv", Dialect::default(), None, &mut sink).unwrap_err().to_string();
        assert!(e.contains("f.csv:1: a quoted cell opened in the CSV header is never closed"), "{e}");
        // a header alone is fine
        assert!(csv(boxed(b"a,b\n"), "f.csv", Dialect::default(), None, &mut sink).is_ok());
    }

    #[test]
    fn csv_keeps_text_and_lines() {
        let got = collect(|s| csv(boxed(b",name,v\n0,\"a\nb\",1.0\n1,c,\n"), "f", Dialect::default(), None, s));
        assert_eq!(got, vec!["2 {\"name\":\"a\\nb\",\"v\":\"1.0\"}", "4 {\"name\":\"c\",\"v\":\"\"}"]);
    }

    #[test]
    fn csv_refuses_a_value_in_an_unnamed_column_after_the_first() {
        // the first column unnamed is a pandas index; the third may stay unnamed while empty
        let got = collect(|s| csv(boxed(b",a,,c\n0,1,,3\n1,4,5,6\n"), "f", Dialect::default(), None, s));
        assert_eq!(
            got,
            vec![
                "2 {\"a\":\"1\",\"c\":\"3\"}",
                "3 csv: cell 3 holds a value but its column has no name in the header; name the column"
            ]
        );
    }

    #[test]
    fn json_lines_and_documents_in_utf16_are_said_as_such() {
        let utf16: Vec<u8> =
            [0xFF, 0xFE].into_iter().chain("{\"a\":1}\n".encode_utf16().flat_map(u16::to_le_bytes)).collect();
        let said = "f.jsonl:1: the file is UTF-16 little-endian text (its byte order mark says so); save it as UTF-8 \
                    (`iconv -f UTF-16 -t UTF-8`)";
        let owned = |b: &[u8]| -> Box<dyn BufRead + Send> { Box::new(std::io::Cursor::new(b.to_vec())) };
        let e = jsonl(owned(&utf16), "f.jsonl", &mut |_| Ok(())).unwrap_err().to_string();
        assert!(e.contains(said), "{e}");
        let e = jsonl_chunks(owned(&utf16), "f.jsonl", 1 << 20, &mut |_| Ok(())).unwrap_err().to_string();
        assert!(e.contains(said), "{e}");
        let e = json(owned(&utf16), "f.jsonl", "", &mut |_| Ok(())).unwrap_err().to_string();
        assert!(e.contains(said), "{e}");
    }

    #[test]
    fn csv_text_after_a_closing_quote_is_a_bad_record() {
        let got = collect(|s| {
            csv(boxed(b"a,b\n\"x5\" x6,1\n\"ok\" ,2\n\"y\"\"z\",\"3\" \r\n"), "f", Dialect::default(), None, s)
        });
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0], format!("2 csv: {STRAY_TEXT}"));
        // blanks after a closing quote stay in the cell, as Python's csv and pandas read them
        assert_eq!(got[1], "3 {\"a\":\"ok \",\"b\":\"2\"}");
        assert_eq!(got[2], "4 {\"a\":\"y\\\"z\",\"b\":\"3 \"}");
        let e = csv(boxed(b"\"a\"x,b\n1,2\n"), "f", Dialect::default(), None, &mut |_| Ok(())).unwrap_err().to_string();
        assert!(e.contains("f:1") && e.contains(&format!("the CSV header: {STRAY_TEXT}")), "{e}");
    }

    const TAB: Dialect = Dialect { delimiter: b'\t', quote: Some(b'"'), named: true, comment: None, header_row: 1 };

    #[test]
    fn a_pandas_index_of_labels_is_kept_and_one_of_positions_left_out() {
        // `df.describe().to_csv()`: the index names the statistics
        let got = collect(|s| csv(boxed(b",acc,index\ncount,2,x\nmean,0.55,y\n"), "f", Dialect::default(), None, s));
        assert_eq!(
            got,
            [
                "2 {\"level_0\":\"count\",\"acc\":\"2\",\"index\":\"x\"}",
                "3 {\"level_0\":\"mean\",\"acc\":\"0.55\",\"index\":\"y\"}"
            ]
        );
        let got = collect(|s| csv(boxed(b",acc\ngpt,0.5\n"), "f", Dialect::default(), None, s));
        assert_eq!(got, ["2 {\"index\":\"gpt\",\"acc\":\"0.5\"}"]);
        // `index` and `level_0` both taken: the next name not taken, no value overwritten
        let got = collect(|s| csv(boxed(b",index,level_0\nm,q,x\n"), "f", Dialect::default(), None, s));
        assert_eq!(got, ["2 {\"level_1\":\"m\",\"index\":\"q\",\"level_0\":\"x\"}"]);
        // positions, then a value that is none: said, not lost
        let got = collect(|s| csv(boxed(b",acc\n0,0.5\n1,0.6\n7,0.7\n"), "f", Dialect::default(), None, s));
        assert_eq!(got[..2], ["2 {\"acc\":\"0.5\"}", "3 {\"acc\":\"0.6\"}"]);
        assert!(got[2].starts_with("4 csv: cell 1, in the first column, which has no name, holds \"7\" where the row's position 2 was expected"), "{got:?}");
        // read through first, as a source reads a file: the column holds labels, kept
        let text = b",acc\n0,0.5\n1,0.6\n7,0.7\n";
        assert_eq!(csv_index_positions(boxed(text), Dialect::default()), Some(false));
        let got = collect(|s| csv(boxed(text), "f", Dialect::default(), Some(false), s));
        assert_eq!(got[2], "4 {\"index\":\"7\",\"acc\":\"0.7\"}");
        // `pd.concat(frames).to_csv()`: each frame counts from 0
        let text = b",acc\n0,0.5\n1,0.6\n0,0.7\n1,0.8\n";
        assert_eq!(csv_index_positions(boxed(text), Dialect::default()), Some(false));
        let got = collect(|s| csv(boxed(text), "f", Dialect::default(), Some(false), s));
        assert_eq!(got[0], "2 {\"index\":\"0\",\"acc\":\"0.5\"}");
        assert_eq!(got.len(), 4, "{got:?}");
        // positions in every row, and a header whose first name is not empty
        assert_eq!(csv_index_positions(boxed(b",acc\n0,0.5\n1,0.6\n"), Dialect::default()), Some(true));
        assert_eq!(csv_index_positions(boxed(b"a,acc\n5,0.5\n"), Dialect::default()), None);
    }

    #[test]
    fn a_blank_line_of_a_file_of_one_column_is_a_row_of_an_empty_cell() {
        // polars' write_csv of [1, None, 3]; CRLF, and blank lines at the end (no rows)
        for text in [&b"a\n1\n\n3\n\n"[..], b"a\r\n1\r\n\r\n3\r\n\r\n"] {
            let got = collect(|s| csv(boxed(text), "f", Dialect::default(), None, s));
            assert_eq!(got, ["2 {\"a\":\"1\"}", "3 {\"a\":\"\"}", "4 {\"a\":\"3\"}"], "{text:?}");
        }
        // a blank line inside a quoted cell is text; one after the header is a row
        let got = collect(|s| csv(boxed(b"a\n\n\"x\n\ny\"\n\n\n2\n"), "f", Dialect::default(), None, s));
        assert_eq!(
            got,
            ["2 {\"a\":\"\"}", "3 {\"a\":\"x\\n\\ny\"}", "6 {\"a\":\"\"}", "7 {\"a\":\"\"}", "8 {\"a\":\"2\"}"]
        );
        // files of two columns skip blank lines, as every reader does
        let got = collect(|s| csv(boxed(b"a,b\n1,2\n\n3,4\n"), "f", Dialect::default(), None, s));
        assert_eq!(got.len(), 2, "{got:?}");
    }

    #[test]
    fn a_utf16_file_is_refused_with_what_to_do() {
        let text: Vec<u8> =
            [0xFF, 0xFE].into_iter().chain("a\tb\n".encode_utf16().flat_map(u16::to_le_bytes)).collect();
        let text: &'static [u8] = Box::leak(text.into_boxed_slice());
        let e = csv(boxed(text), "f.tsv", TAB, None, &mut |_| Ok(())).unwrap_err().to_string();
        assert_eq!(
            e,
            "f.tsv:1: the file is UTF-16 little-endian text (its byte order mark says so); save it as UTF-8 (\"CSV UTF-8\" in Excel)"
        );
        assert!(csv_columns(boxed(text), "f.tsv", TAB).is_err());
    }

    #[test]
    fn quotes_are_text_without_a_quote_character() {
        // a CoNLL-style file: a lone `"` token would open a cell that swallows the lines to
        // the next one
        let text = b"id\tword\n1\tHe\n2\t\"\n3\thi\n4\t\"\n5\t.\n";
        let plain = Dialect { quote: None, ..TAB };
        let got = collect(|s| csv(boxed(text), "f.tsv", plain, None, s));
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(got[1], "3 {\"id\":\"2\",\"word\":\"\\\"\"}");
        // quoted as RFC 4180 says, the same bytes are three rows: the quote runs to line 5
        let got = collect(|s| csv(boxed(text), "f.tsv", TAB, None, s));
        assert_eq!(got.len(), 3, "{got:?}");
        // another quote character: `'` quotes, `"` is text
        let single = Dialect { quote: Some(b'\''), ..TAB };
        let got = collect(|s| csv(boxed(b"a\tb\n'x\ty'\t\"z\n"), "f.tsv", single, None, s));
        assert_eq!(got, ["2 {\"a\":\"x\\ty\",\"b\":\"\\\"z\"}"]);
        // a quote left open is said with the source's quote character
        let e = csv(boxed(b"a\tb\n'x\ty\n"), "f.tsv", single, None, &mut |_| Ok(())).unwrap_err().to_string();
        assert!(e.contains("close the quote or escape it as '' (the source's `quote`)"), "{e}");
    }

    #[test]
    fn a_byte_order_mark_does_not_open_or_close_quotes() {
        // the mark before a quoted header cell: the csv crate leaves it out, and so does the
        // quote tracking (the file was refused as a quote never closed)
        let got = collect(|s| csv(boxed(b"\xEF\xBB\xBF\"x\t\"\"\"\tw\n1\t2\n3\t4\n"), "f.tsv", TAB, None, s));
        assert_eq!(got, ["2 {\"x\\t\\\"\":\"1\",\"w\":\"2\"}", "3 {\"x\\t\\\"\":\"3\",\"w\":\"4\"}"]);
        // text after a closing quote behind the mark is still found
        let e = csv(boxed(b"\xEF\xBB\xBF\"a\"x\tb\n1\t2\n"), "f.tsv", TAB, None, &mut |_| Ok(())).unwrap_err();
        assert!(e.to_string().contains(STRAY_TEXT), "{e}");
    }

    #[test]
    fn a_header_of_one_column_holding_another_delimiter_is_refused_unless_named() {
        let e = csv(boxed(b"run\tloss\na\t0.5\n"), "f.csv", Dialect::default(), None, &mut |_| Ok(())).unwrap_err();
        let e = e.to_string();
        assert!(e.starts_with("f.csv:1: the header is one column, \"run\\tloss\", that holds tabs"), "{e}");
        assert!(
            e.contains("set delimiter = \"\\t\" on the source (or delimiter = \",\" to read it as one column)"),
            "{e}"
        );
        let e = csv(boxed(b"run;loss\na;0,5\n"), "f.csv", Dialect::default(), None, &mut |_| Ok(())).unwrap_err();
        assert!(e.to_string().contains("that holds semicolons"), "{e}");
        // named as the source's delimiter: one column, as asked
        let named = Dialect { named: true, ..Dialect::default() };
        let got = collect(|s| csv(boxed(b"run;loss\na;0.5\n"), "f.csv", named, None, s));
        assert_eq!(got, ["2 {\"run;loss\":\"a;0.5\"}"]);
    }

    #[test]
    fn tab_separated_cells_are_split_on_tabs_only() {
        // commas are text; a quoted cell may hold a tab and a line break; a tab right after a
        // closing quote ends the cell (it is no blank kept in it)
        let text = b"a\tb,c\n1,5\t\"x\ty\"\n\"p\nq\"\t2\n\"z\" \t3\n4\t\"w\"x\n";
        let got = collect(|s| csv(boxed(text), "f.tsv", TAB, None, s));
        assert_eq!(
            got,
            vec![
                "2 {\"a\":\"1,5\",\"b,c\":\"x\\ty\"}",
                "3 {\"a\":\"p\\nq\",\"b,c\":\"2\"}",
                "5 {\"a\":\"z \",\"b,c\":\"3\"}",
                format!("6 csv: {STRAY_TEXT}").as_str(),
            ]
        );
        assert_eq!(csv_columns(boxed(b"x\ty,z\n"), "f.tsv", TAB).unwrap(), vec!["x", "y,z"]);
        let got = collect(|s| csv(boxed(b"a\tb\n1\t2\t3\n"), "f.tsv", TAB, None, s));
        assert_eq!(got, vec!["2 csv: row has 3 cells, the header has 2"]);
    }
}
