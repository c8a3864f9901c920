//! JSON encoding of Arrow record batches: the JSON Lines copies of a release, query results
//! printed as JSON, rejected records and the checks of `verify --data`.
//!
//! One object per row, keys in schema order; integers as integer tokens
//! (exact, also for UInt64); floats in shortest round-trip form (`1.0`, `0.1`, `1e-7`);
//! non-finite floats as `null` in a release's copies, as pandas and `datasets` write them
//! (the Parquet files keep them, and the writer counts them per column:
//! [`crate::stages::write::WrittenFile::nonfinite`]), and as the strings `"NaN"`, `"Infinity"`, `"-Infinity"` in
//! other JSON ([`NonFiniteAs`]); timestamps as RFC 3339 UTC strings (`2025-03-01T12:00:00Z`); dates as
//! `YYYY-MM-DD`; lists as arrays; structs as objects.

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Date32Array, Float64Array, Int64Array, ListArray, RecordBatch, StringArray,
    StructArray, TimestampMicrosecondArray, UInt64Array,
};
use arrow::datatypes::{DataType, TimeUnit};

use crate::core::error::{Error, Result};

/// How a JSON encoding writes NaN, +Infinity and -Infinity, which JSON has no numbers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonFiniteAs {
    /// The strings `"NaN"`, `"Infinity"`, `"-Infinity"` (distinct from null): query results,
    /// rejected records.
    Strings,
    /// `null`, as pandas and `datasets` write them: a release's JSON Lines copies, which
    /// polars, DuckDB and pandas then read with the column's number type.
    Null,
}

/// Encodes every row of `batch` as a JSON line into `out`; `ends[i]` is the end offset of row i.
/// Non-finite floats are written as strings ([`NonFiniteAs::Strings`]).
pub fn encode_jsonl(batch: &RecordBatch, out: &mut Vec<u8>, ends: &mut Vec<usize>) -> Result<()> {
    encode_jsonl_as(batch, out, ends, NonFiniteAs::Strings)
}

/// Encodes every row of `batch` as a JSON line into `out`, non-finite floats as `nonfinite`
/// says; `ends[i]` is the end offset of row i.
pub fn encode_jsonl_as(
    batch: &RecordBatch,
    out: &mut Vec<u8>,
    ends: &mut Vec<usize>,
    nonfinite: NonFiniteAs,
) -> Result<()> {
    let schema = batch.schema();
    // each cell's text before its value, written in one piece: `{"a":` for the first,
    // `,"b":` for the others
    let prefixes: Vec<Vec<u8>> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut p = vec![if i == 0 { b'{' } else { b',' }];
            p.extend_from_slice(&serde_json::to_vec(f.name()).expect("string"));
            p.push(b':');
            p
        })
        .collect();
    let encs: Vec<Enc> = batch.columns().iter().map(|c| Enc::new(c, nonfinite)).collect::<Result<_>>()?;
    for row in 0..batch.num_rows() {
        if encs.is_empty() {
            out.push(b'{');
        }
        for (prefix, enc) in prefixes.iter().zip(&encs) {
            out.extend_from_slice(prefix);
            enc.write(out, row);
        }
        out.extend_from_slice(b"}\n");
        ends.push(out.len());
    }
    Ok(())
}

/// Each value of `array` as the JSON text a JSON Lines cell holds (`None` for a null), for
/// callers that place values one by one (a CSV cell holding a nested value).
///
/// Errors: [`Error::Format`] for an Arrow type the JSON Lines encoder does not write.
pub fn json_values(array: &ArrayRef) -> Result<Vec<Option<String>>> {
    let enc = Enc::new(array, NonFiniteAs::Strings)?;
    let mut buf = Vec::new();
    Ok((0..array.len())
        .map(|i| {
            array.is_valid(i).then(|| {
                buf.clear();
                enc.write(&mut buf, i);
                String::from_utf8_lossy(&buf).into_owned()
            })
        })
        .collect())
}

enum Enc<'a> {
    Null,
    Bool(&'a BooleanArray),
    I64(&'a Int64Array),
    U64(&'a UInt64Array),
    F64(&'a Float64Array, NonFiniteAs),
    Str(&'a StringArray),
    Ts(&'a TimestampMicrosecondArray),
    Date(&'a Date32Array),
    List(&'a ListArray, Box<Enc<'a>>),
    Struct(&'a StructArray, Vec<(Vec<u8>, Enc<'a>)>),
}

impl<'a> Enc<'a> {
    fn new(a: &'a ArrayRef, nonfinite: NonFiniteAs) -> Result<Enc<'a>> {
        Ok(match a.data_type() {
            DataType::Null => Enc::Null,
            DataType::Boolean => Enc::Bool(a.as_boolean()),
            DataType::Int64 => Enc::I64(a.as_primitive()),
            DataType::UInt64 => Enc::U64(a.as_primitive()),
            DataType::Float64 => Enc::F64(a.as_primitive(), nonfinite),
            DataType::Utf8 => Enc::Str(a.as_string()),
            DataType::Timestamp(TimeUnit::Microsecond, _) => Enc::Ts(a.as_primitive()),
            DataType::Date32 => Enc::Date(a.as_primitive()),
            DataType::List(_) => {
                let l = a.as_list::<i32>();
                Enc::List(l, Box::new(Enc::new(l.values(), nonfinite)?))
            }
            DataType::Struct(fields) => {
                let s = a.as_struct();
                let mut members = Vec::new();
                for (f, c) in fields.iter().zip(s.columns()) {
                    members.push((serde_json::to_vec(f.name()).expect("string"), Enc::new(c, nonfinite)?));
                }
                Enc::Struct(s, members)
            }
            other => return Err(Error::format("jsonl", format!("cannot write Arrow type {other} as JSON"))),
        })
    }

    fn write(&self, out: &mut Vec<u8>, i: usize) {
        let valid = match self {
            Enc::Null => false,
            Enc::Bool(a) => a.is_valid(i),
            Enc::I64(a) => a.is_valid(i),
            Enc::U64(a) => a.is_valid(i),
            Enc::F64(a, _) => a.is_valid(i),
            Enc::Str(a) => a.is_valid(i),
            Enc::Ts(a) => a.is_valid(i),
            Enc::Date(a) => a.is_valid(i),
            Enc::List(a, _) => a.is_valid(i),
            Enc::Struct(a, _) => a.is_valid(i),
        };
        if !valid {
            out.extend_from_slice(b"null");
            return;
        }
        match self {
            Enc::Null => {}
            Enc::Bool(a) => out.extend_from_slice(if a.value(i) { b"true" } else { b"false" }),
            Enc::I64(a) => write_int(out, a.value(i)),
            Enc::U64(a) => write_int(out, a.value(i)),
            Enc::F64(a, NonFiniteAs::Null) if !a.value(i).is_finite() => out.extend_from_slice(b"null"),
            Enc::F64(a, _) => write_f64(out, a.value(i)),
            Enc::Str(a) => write_json_str(out, a.value(i)),
            Enc::Ts(a) => {
                let s = format_timestamp_us(a.value(i));
                serde_json::to_writer(&mut *out, &s).expect("vec write")
            }
            Enc::Date(a) => {
                // a release's dates are checked to be in years 1 to 9999 before they are written;
                // one beyond chrono's years (a query's result) is written as its day number
                let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch");
                match epoch.checked_add_signed(chrono::Duration::days(a.value(i) as i64)) {
                    Some(d) => serde_json::to_writer(&mut *out, &d.format("%Y-%m-%d").to_string()).expect("vec write"),
                    None => write_int(out, a.value(i)),
                }
            }
            Enc::List(a, child) => {
                let offsets = a.value_offsets();
                out.push(b'[');
                for (k, j) in (offsets[i] as usize..offsets[i + 1] as usize).enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    child.write(out, j);
                }
                out.push(b']');
            }
            Enc::Struct(_, members) => {
                out.push(b'{');
                for (k, (key, enc)) in members.iter().enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(key);
                    out.push(b':');
                    enc.write(out, i);
                }
                out.push(b'}');
            }
        }
    }
}

/// Writes an integer token (no allocation), by `itoa`: about half the time of `write!` through
/// `core::fmt`, for the several integers of every row of a release's copies.
fn write_int<I: itoa::Integer>(out: &mut Vec<u8>, v: I) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Writes a JSON string literal: as serde_json writes it (escaping control characters, `"`
/// and backslash only), with a fast path for the common text that needs no escape at all.
fn write_json_str(out: &mut Vec<u8>, s: &str) {
    let needs_escape = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
    let bytes = s.as_bytes();
    let mut blocks = bytes.chunks_exact(32);
    // whole blocks are checked without branching per byte, which the compiler vectorises
    let mut escape = blocks.by_ref().any(|block| block.iter().fold(false, |acc, &b| acc | needs_escape(b)));
    escape = escape || blocks.remainder().iter().any(|&b| needs_escape(b));
    if escape {
        serde_json::to_writer(&mut *out, s).expect("vec write");
    } else {
        out.reserve(bytes.len() + 2);
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
    }
}

/// Writes a float in shortest round-trip form, or the string form of a non-finite value.
pub fn write_f64(out: &mut Vec<u8>, v: f64) {
    if v.is_nan() {
        out.extend_from_slice(b"\"NaN\"");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"\"Infinity\"" } else { b"\"-Infinity\"" });
    } else {
        serde_json::to_writer(&mut *out, &v).expect("vec write");
    }
}

/// `1740830400000000` → `2025-03-01T12:00:00Z` (fraction only when non-zero).
pub fn format_timestamp_us(us: i64) -> String {
    match chrono::DateTime::from_timestamp_micros(us) {
        Some(dt) => dt.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
        None => us.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{Field, Schema};
    use std::sync::Arc;

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let mut long = "plain text, long enough to fill whole blocks of thirty-two bytes ".repeat(3);
        for s in ["", "a", "quote \" here", "back\\slash", "tab\tnew\nline", "\u{1}", "é ü 漢字 🙂", "\u{7f}"] {
            for text in [s.to_string(), format!("{long}{s}"), format!("{s}{long}")] {
                let mut ours = Vec::new();
                write_json_str(&mut ours, &text);
                assert_eq!(ours, serde_json::to_vec(&text).unwrap(), "{text:?}");
            }
        }
        long.push('"');
        let mut ours = Vec::new();
        write_json_str(&mut ours, &long);
        assert_eq!(ours, serde_json::to_vec(&long).unwrap());
        let mut ints = Vec::new();
        for v in [0i128, -1, i64::MIN as i128, u64::MAX as i128] {
            write_int(&mut ints, v);
            ints.push(b' ');
        }
        assert_eq!(String::from_utf8(ints).unwrap(), format!("0 -1 {} {} ", i64::MIN, u64::MAX));
    }

    #[test]
    fn jsonl_is_exact_and_strict() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("f", DataType::Float64, true),
            Field::new("u", DataType::UInt64, true),
        ]));
        let b = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Float64Array::from(vec![Some(1.0), Some(f64::NAN), None, Some(1e-7)])),
                Arc::new(UInt64Array::from(vec![Some(u64::MAX), Some(42), None, Some(1 << 63)])),
            ],
        )
        .unwrap();
        let mut out = Vec::new();
        let mut ends = Vec::new();
        encode_jsonl(&b, &mut out, &mut ends).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"f\":1.0,\"u\":18446744073709551615}\n{\"f\":\"NaN\",\"u\":42}\n{\"f\":null,\"u\":null}\n{\"f\":1e-7,\"u\":9223372036854775808}\n"
        );
        assert_eq!(format_timestamp_us(1740830402250000), "2025-03-01T12:00:02.250Z");
    }
}
