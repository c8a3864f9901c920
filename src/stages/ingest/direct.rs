//! The fast path of JSON Lines: records decoded straight into Arrow builders, with no JSON
//! value tree in between.
//!
//! In: a run of raw lines ([`LineChunk`]) and the columns of a source whose types are all flat
//! (string, integer, unsigned integer, number, boolean). Out: one array per column and the
//! events to count (non-finite tokens), or nothing at all when any line holds something the
//! fast path does not take: an invalid line, a value of another type, a key that names no
//! column or is repeated, an integer beyond 64 bits, a float below the smallest one
//! (`1e-400`). The caller then converts the
//! whole run the general way ([`super::convert`]), which yields the same rows and the exact
//! problems; so both paths agree on every input, and the fast one is only ever a shortcut for
//! clean data.
//!
//! Lines are read as [`super::records::parse_line`] reads them: LF or CRLF ends, a byte-order
//! mark on line 1, blank lines skipped, Python's bare `NaN`, `Infinity` and `-Infinity`
//! tokens read as [`super::lenient`] reads them. A run is checked to be
//! UTF-8 once, as a whole (a run that is not goes the general way), and each line is then
//! parsed as text, so that no string is checked again on its own.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow::array::{ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder, UInt64Builder};

use super::convert::{Event, Target};
use super::lenient::{self, MARK, Special};
use super::path::{self, Seg};
use super::records::LineChunk;
use crate::core::spec::NonFinite;

/// The event of a negative zero (`-0`, `-0.0`) read as the integer 0, as the general path
/// counts it.
fn negative_zero(v: f64, row: usize, path: &str) -> Option<Event> {
    (v == 0.0 && v.is_sign_negative()).then(|| Event {
        kind: "negative-zero",
        row,
        path: path.to_string(),
        detail: "-0 read as the integer 0".into(),
    })
}

/// A column the fast path can fill.
enum Builder {
    Str(StringBuilder),
    Int64(Int64Builder),
    UInt64(UInt64Builder),
    Float64(Float64Builder),
    Bool(BooleanBuilder),
}

impl Builder {
    /// A builder for `rows` values; a string column reserves `text_bytes` for their text.
    fn new(target: &Target, rows: usize, text_bytes: usize) -> Option<Builder> {
        Some(match target {
            Target::Str => Builder::Str(StringBuilder::with_capacity(rows, text_bytes)),
            Target::Int64 => Builder::Int64(Int64Builder::with_capacity(rows)),
            Target::UInt64 => Builder::UInt64(UInt64Builder::with_capacity(rows)),
            Target::Float64 => Builder::Float64(Float64Builder::with_capacity(rows)),
            Target::Bool => Builder::Bool(BooleanBuilder::with_capacity(rows)),
            _ => return None,
        })
    }

    fn append_null(&mut self) {
        match self {
            Builder::Str(b) => b.append_null(),
            Builder::Int64(b) => b.append_null(),
            Builder::UInt64(b) => b.append_null(),
            Builder::Float64(b) => b.append_null(),
            Builder::Bool(b) => b.append_null(),
        }
    }

    /// The bytes of text a string column holds (0 for other columns).
    fn text_bytes(&self) -> usize {
        match self {
            Builder::Str(b) => b.values_slice().len(),
            _ => 0,
        }
    }

    fn finish(self) -> ArrayRef {
        match self {
            Builder::Str(mut b) => Arc::new(b.finish()),
            Builder::Int64(mut b) => Arc::new(b.finish()),
            Builder::UInt64(mut b) => Arc::new(b.finish()),
            Builder::Float64(mut b) => Arc::new(b.finish()),
            Builder::Bool(mut b) => Arc::new(b.finish()),
        }
    }
}

/// Decodes runs of lines for one source; see the module docs.
pub struct Decoder {
    index: ahash::AHashMap<String, usize>,
    names: Vec<String>,
    /// Whether each name is written in JSON as it is (no quote, backslash or control
    /// character), so that a key's bytes can be compared with it.
    plain: Vec<bool>,
    targets: Vec<Target>,
    /// The JSON path of each column, as events name it.
    paths: Vec<String>,
    nonfinite: NonFinite,
    /// Each column's share of a run's bytes in the last run decoded (its text's bytes per
    /// 65,536 bytes of lines, plus 1; 0 before the first run), so that a string column
    /// reserves about what it will hold. Growing it as it fills copied its text again at
    /// each doubling (0.6 % of a build's CPU); reserving the whole run for each column would
    /// hold that much memory, unused, as long as its batch lives.
    text_share: Vec<AtomicUsize>,
}

/// What a run of lines decoded into.
pub struct Decoded {
    /// One array per column, in column order.
    pub columns: Vec<ArrayRef>,
    /// The line number of each row.
    pub lines: Vec<u64>,
    /// Values accepted but counted (non-finite tokens), by row.
    pub events: Vec<Event>,
    /// Per column: whether any line had its key (`null` included).
    pub present: Vec<bool>,
}

impl Decoder {
    /// A decoder for `columns` (name, target), or `None` when a column is not flat.
    pub fn new(columns: &[(String, Target)], nonfinite: NonFinite) -> Option<Decoder> {
        if !columns
            .iter()
            .all(|(_, t)| matches!(t, Target::Str | Target::Int64 | Target::UInt64 | Target::Float64 | Target::Bool))
        {
            return None;
        }
        Some(Decoder {
            index: columns.iter().enumerate().map(|(i, (n, _))| (n.clone(), i)).collect(),
            names: columns.iter().map(|(n, _)| n.clone()).collect(),
            plain: columns.iter().map(|(n, _)| n.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\')).collect(),
            targets: columns.iter().map(|(_, t)| t.clone()).collect(),
            paths: columns.iter().map(|(n, _)| path::render(&[Seg::Key(n.clone())])).collect(),
            nonfinite,
            text_share: columns.iter().map(|_| AtomicUsize::new(0)).collect(),
        })
    }

    /// Decodes every line of `chunk`; `None` when a line needs the general path.
    pub fn decode(&self, chunk: &LineChunk) -> Option<Decoded> {
        let rows = chunk.lines.len();
        let run = chunk.bytes.len();
        let mut builders: Vec<Builder> = self
            .targets
            .iter()
            .zip(&self.text_share)
            .map(|(t, share)| {
                let text = match share.load(Ordering::Relaxed) {
                    // the text of all string columns together is at most the run's bytes
                    0 => run / 8,
                    // with 1/64 to spare: runs differ a little
                    s => (run as u128 * s as u128 / 65_536) as usize + run / 64,
                };
                Builder::new(t, rows, text)
            })
            .collect::<Option<_>>()?;
        // the row that last set each column: a column not set by the current row gets a null
        let mut set_by: Vec<usize> = vec![usize::MAX; self.targets.len()];
        let mut lines = Vec::with_capacity(rows);
        let mut events = Vec::new();
        // the run is checked to be UTF-8 once, so that each line is parsed as text and its
        // strings are not checked again one by one; a run that is not goes the general way,
        // which names the line
        let text = std::str::from_utf8(&chunk.bytes).ok()?;
        let mut start = 0;
        for &(line_no, end) in &chunk.lines {
            // line ends are at `\n` bytes, so every slice boundary is a character boundary
            let mut line = &text[start..end];
            start = end;
            line = line.strip_suffix('\n').unwrap_or(line);
            line = line.strip_suffix('\r').unwrap_or(line);
            if line_no == 1 {
                line = line.strip_prefix('\u{feff}').unwrap_or(line);
            }
            if line.bytes().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            let row = lines.len();
            self.record(line, &mut builders, &mut set_by, row, &mut events)?;
            for (b, set) in builders.iter_mut().zip(&set_by) {
                if *set != row {
                    b.append_null();
                }
            }
            lines.push(line_no);
        }
        for (b, share) in builders.iter().zip(&self.text_share) {
            share.store((b.text_bytes() as u128 * 65_536 / run.max(1) as u128) as usize + 1, Ordering::Relaxed);
        }
        // in the general path's order: column by column, then row by row
        events.sort_by_key(|e| (self.paths.iter().position(|p| *p == e.path), e.row));
        let present = set_by.iter().map(|&row| row != usize::MAX).collect();
        Some(Decoded { columns: builders.into_iter().map(Builder::finish).collect(), lines, events, present })
    }

    /// Appends the record `line` as row `row`: each key's value to its column, `set_by` told
    /// which columns it set. `None` when the line is not a flat JSON object of the columns'
    /// types, each key once.
    fn record(
        &self,
        line: &str,
        builders: &mut [Builder],
        set_by: &mut [usize],
        row: usize,
        events: &mut Vec<Event>,
    ) -> Option<()> {
        let bytes = line.as_bytes();
        let mut s = Scan { text: line, at: 0 };
        s.take(b'{')?;
        s.blank();
        if s.peek()? == b'}' {
            s.at += 1;
        } else {
            // records tend to list their keys in one order: the column after the last one
            // is tried first, by comparing its name with the key's bytes
            let mut guess = 0;
            loop {
                s.take(b'"')?;
                let col = match self.names.get(guess) {
                    Some(n)
                        if self.plain[guess]
                            && bytes[s.at..].starts_with(n.as_bytes())
                            && bytes.get(s.at + n.len()) == Some(&b'"') =>
                    {
                        s.at += n.len() + 1;
                        guess
                    }
                    _ => *self.index.get(s.string()?.as_ref())?,
                };
                s.take(b':')?;
                s.blank();
                // a repeated key goes to the general path, which names it
                if set_by[col] == row {
                    return None;
                }
                set_by[col] = row;
                let mut cell = Cell { dec: self, col, row, events: &mut *events };
                let builder = &mut builders[col];
                match s.peek()? {
                    b'"' => {
                        s.at += 1;
                        let v = s.string()?;
                        cell.str(builder, &v)?;
                    }
                    b'n' => {
                        s.word("null")?;
                        builder.append_null();
                    }
                    b't' => {
                        s.word("true")?;
                        cell.bool(builder, true)?;
                    }
                    b'f' => {
                        s.word("false")?;
                        cell.bool(builder, false)?;
                    }
                    // Python's bare tokens, which the general path reads too
                    b'N' => {
                        s.word("NaN")?;
                        cell.special(builder, Special::NaN)?;
                    }
                    b'I' => {
                        s.word("Infinity")?;
                        cell.special(builder, Special::PosInf)?;
                    }
                    b'-' if bytes.get(s.at + 1) == Some(&b'I') => {
                        s.word("-Infinity")?;
                        cell.special(builder, Special::NegInf)?;
                    }
                    _ => {
                        let n = s.number()?;
                        cell.number(builder, n)?;
                    }
                }
                guess = col + 1;
                s.blank();
                match s.peek()? {
                    b',' => s.at += 1,
                    b'}' => {
                        s.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        s.blank();
        (s.at == bytes.len()).then_some(())
    }
}

/// One record's text, scanned byte by byte. Only the grammar of a flat JSON object is taken
/// (RFC 8259: an object whose values are strings, numbers, `true`, `false` or `null`), and
/// Python's bare `NaN`, `Infinity` and `-Infinity`; any other byte ends the scan with `None`,
/// and the run goes to the general path, which names the problem.
///
/// Kept beside serde_json, which the general path uses, because this path only has to tell
/// clean records from the rest, not say why: a key is compared with the name of the column
/// expected next, and a number is parsed by the standard library's correctly rounded `f64`
/// parser. That took a third fewer instructions than serde_json's serde path on the bench's
/// inputs (docs/performance.md, "JSON parsers").
struct Scan<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// Steps over JSON whitespace (space, tab, LF, CR).
    fn blank(&mut self) {
        let b = self.text.as_bytes();
        while matches!(b.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Takes `byte`, after whitespace.
    fn take(&mut self, byte: u8) -> Option<()> {
        self.blank();
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Takes `word` (`true`, `false`, `null` after their first byte was seen).
    fn word(&mut self, word: &str) -> Option<()> {
        self.text[self.at..].starts_with(word).then(|| self.at += word.len())
    }

    /// The string whose opening quote was taken, unescaped; the scan moves past its closing
    /// quote. A string with an escape is unescaped by serde_json, which refuses a bad one.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let b = self.text.as_bytes();
        let start = self.at;
        let mut end = start + memchr::memchr2(b'"', b'\\', &b[start..])?;
        let escaped = b[end] == b'\\';
        while b[end] == b'\\' {
            // the escaped byte is never the closing quote
            end += 2;
            end += memchr::memchr2(b'"', b'\\', b.get(end..)?)?;
        }
        self.at = end + 1;
        if escaped {
            return serde_json::from_str::<String>(&self.text[start - 1..=end]).ok().map(Cow::Owned);
        }
        // a control character must be escaped; the test is branch-free, so it is vectorised
        let body = &b[start..end];
        if body.iter().fold(false, |seen, &c| seen | (c < 0x20)) {
            return None;
        }
        Some(Cow::Borrowed(&self.text[start..end]))
    }

    /// The number that starts here, as JSON writes one (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`).
    fn number(&mut self) -> Option<Number> {
        let b = self.text.as_bytes();
        let start = self.at;
        let digits = |at: &mut usize| {
            let from = *at;
            while b.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at > from
        };
        let mut at = start + usize::from(b[start] == b'-');
        match b.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => {
                digits(&mut at);
            }
            _ => return None,
        }
        let mut whole = true;
        if b.get(at) == Some(&b'.') {
            at += 1;
            whole = false;
            digits(&mut at).then_some(())?;
        }
        if matches!(b.get(at), Some(b'e' | b'E')) {
            at += 1;
            whole = false;
            if matches!(b.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            digits(&mut at).then_some(())?;
        }
        self.at = at;
        let token = &self.text[start..at];
        Some(if !whole {
            // out of a 64-bit float's range: the general path names it
            let f = token.parse::<f64>().ok().filter(|f| f.is_finite())?;
            // a float that reads as a whole number the token is not: below the smallest
            // float (`1e-400`), the general path names it; rounded to one
            // (`2.0000000000000000001`), only a float column takes it
            // (`as i64` and back tells a whole float below 2^63 without a call to `trunc`; a
            // larger float, whole, takes the same path either way: integer columns refuse it)
            if (f as i64) as f64 == f && lenient::written_whole(token) == Some(false) {
                if f == 0.0 {
                    return None;
                }
                Number::Rounded(f)
            } else {
                Number::Float(f)
            }
        } else if b[start] == b'-' {
            // `-0` is the float -0.0, as serde_json reads it; an integer below i64's range
            // goes to the general path, which names it
            match token.parse::<i64>().ok()? {
                0 => Number::Float(-0.0),
                v => Number::Int(v),
            }
        } else {
            // beyond u64's range: the general path names it
            Number::UInt(token.parse::<u64>().ok()?)
        })
    }
}

/// A number token, typed as the general path's serde_json types it: a whole number as `u64`
/// (`i64` when negative), anything else, and `-0`, as `f64`; a float that the general path
/// reads from its text, as [`lenient::Special::Float`], apart.
enum Number {
    Int(i64),
    UInt(u64),
    Float(f64),
    /// A float that rounds to a whole number the token is not (`2.0000000000000000001`).
    Rounded(f64),
}

/// One cell of a row: a value appended to its column's builder, or `None` when the value is
/// not of the column's type.
struct Cell<'a> {
    dec: &'a Decoder,
    col: usize,
    row: usize,
    events: &'a mut Vec<Event>,
}

impl Cell<'_> {
    fn bool(&self, builder: &mut Builder, v: bool) -> Option<()> {
        match builder {
            Builder::Bool(b) => b.append_value(v),
            _ => return None,
        }
        Some(())
    }

    fn number(&mut self, builder: &mut Builder, n: Number) -> Option<()> {
        match n {
            Number::Int(v) => match builder {
                Builder::Int64(b) => b.append_value(v),
                // the integers a 64-bit float holds exactly
                Builder::Float64(b) if v as f64 as i128 == v as i128 => b.append_value(v as f64),
                _ => return None,
            },
            Number::UInt(v) => match builder {
                Builder::UInt64(b) => b.append_value(v),
                Builder::Int64(b) if v <= i64::MAX as u64 => b.append_value(v as i64),
                Builder::Float64(b) if v as f64 as u128 == v as u128 => b.append_value(v as f64),
                _ => return None,
            },
            Number::Float(v) => match builder {
                Builder::Float64(b) => b.append_value(v),
                // `3.0` in an integer column is the integer 3, as in the general path;
                // beyond 2^53 the general path refuses it: the float may not be the number
                // written
                Builder::Int64(b) if v.fract() == 0.0 && v.abs() < 9007199254740992.0 => {
                    self.events.extend(negative_zero(v, self.row, &self.dec.paths[self.col]));
                    b.append_value(v as i64)
                }
                Builder::UInt64(b) if v.fract() == 0.0 && (0.0..9007199254740992.0).contains(&v) => {
                    self.events.extend(negative_zero(v, self.row, &self.dec.paths[self.col]));
                    b.append_value(v as u64)
                }
                _ => return None,
            },
            Number::Rounded(v) => match builder {
                Builder::Float64(b) => b.append_value(v),
                _ => return None,
            },
        }
        Some(())
    }

    fn str(&mut self, builder: &mut Builder, v: &str) -> Option<()> {
        match builder {
            // the general path reads a string that starts with the marker of its rewrite as
            // the token it marks: a float column takes it so, a text column leaves it there
            Builder::Str(b) if !v.starts_with(MARK) => b.append_value(v),
            Builder::Float64(_) => return self.special(builder, lenient::special(v)?),
            _ => return None,
        }
        Some(())
    }

    /// A bare `NaN`, `Infinity` or `-Infinity`: a float column takes it as its setting says,
    /// and the token is counted.
    fn special(&mut self, builder: &mut Builder, special: Special) -> Option<()> {
        let Builder::Float64(b) = builder else { return None };
        if !special.is_nonfinite() {
            return None;
        }
        let f = special.as_f64()?;
        self.events.push(Event {
            kind: "nonfinite",
            row: self.row,
            path: self.dec.paths[self.col].clone(),
            detail: special.token().to_string(),
        });
        match self.dec.nonfinite {
            NonFinite::Ieee => b.append_value(f),
            NonFinite::Null => b.append_null(),
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Float64Type, Int64Type};

    fn chunk(text: &str) -> LineChunk {
        let mut c = LineChunk::default();
        for (i, line) in text.split_inclusive('\n').enumerate() {
            c.bytes.extend_from_slice(line.as_bytes());
            c.lines.push((i as u64 + 1, c.bytes.len()));
        }
        c
    }

    fn decoder() -> Decoder {
        let cols = [("s", Target::Str), ("i", Target::Int64), ("f", Target::Float64), ("b", Target::Bool)];
        Decoder::new(&cols.map(|(n, t)| (n.to_string(), t)), NonFinite::Ieee).unwrap()
    }

    #[test]
    fn decodes_clean_lines_with_nulls_nan_and_blank_lines() {
        let d = decoder()
            .decode(&chunk("\u{feff}{\"s\": \"a\", \"i\": 1, \"f\": 2}\r\n\n{\"f\": NaN, \"b\": true, \"s\": null}\n"))
            .unwrap();
        assert_eq!(d.lines, vec![1, 3]);
        assert_eq!(d.columns[0].as_string::<i32>().iter().collect::<Vec<_>>(), vec![Some("a"), None]);
        assert_eq!(d.columns[1].as_primitive::<Int64Type>().iter().collect::<Vec<_>>(), vec![Some(1), None]);
        let f = d.columns[2].as_primitive::<Float64Type>();
        assert_eq!(f.value(0), 2.0);
        assert!(f.value(1).is_nan() && f.is_valid(1));
        assert_eq!(d.events.len(), 1);
        assert_eq!((d.events[0].row, d.events[0].path.as_str(), d.events[0].detail.as_str()), (1, "$.f", "NaN"));
    }

    #[test]
    fn leaves_anything_unusual_to_the_general_path() {
        for bad in [
            "{\"s\": 1}",
            "{\"i\": 1.5}",
            "{\"i\": 1e19}",
            "{\"i\": 9223372036854775808}",
            "{\"f\": 9007199254740993}",
            "{\"f\": \"1.5\"}",
            "{\"i\": NaN}",
            "{\"s\": \"a\", \"s\": \"b\"}",
            "{\"other\": 1}",
            "{\"s\": {\"x\": 1}}",
            "[1]",
            "{\"s\": \"a\"} x",
            "{\"s\": \"a\"",
            "{\"i\": 123456789012345678901234}",
            "{\"f\": 123456789012345678901234}",
            "{\"f\": -9223372036854775809}",
            "{\"i\": -9223372036854775809}",
            "{\"i\": -9223372036854776832}",
        ] {
            assert!(decoder().decode(&chunk(&format!("{{\"s\": \"ok\"}}\n{bad}\n"))).is_none(), "{bad}");
        }
    }
}
