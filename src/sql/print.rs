//! Query results printed: an aligned table, CSV, JSON or NDJSON, written to any `Write`,
//! batch by batch where the format allows. Text is escaped so that a result cannot move the
//! terminal's cursor; dates and times a format cannot show are named.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, SchemaRef};
use futures::StreamExt;

use crate::core::error::{Error, Result};
use crate::sql::session::parse_statements;

/// A result batch of `columns` under `schema` holding `rows` rows, as the batch it was made
/// from: a statement without columns (`SET …`) still has its row count.
///
/// Errors: [`Error::Format`] when the columns do not fit the schema.
fn result_batch(schema: SchemaRef, columns: Vec<arrow::array::ArrayRef>, rows: usize) -> Result<RecordBatch> {
    let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema, columns, &options).map_err(|e| Error::format("query result", e))
}

/// How query results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PrintFormat {
    /// An aligned text table.
    Table,
    /// CSV with a header row.
    Csv,
    /// One JSON array of objects.
    Json,
    /// One JSON object per line.
    Ndjson,
}

/// A print format, and the rows the table format shows at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    /// The format.
    pub format: PrintFormat,
    /// The table format's rows shown at most (`None`: all); the rows after them are counted
    /// and not held. The other formats print every row.
    pub max_rows: Option<usize>,
}

impl From<PrintFormat> for Shown {
    fn from(format: PrintFormat) -> Self {
        Shown { format, max_rows: None }
    }
}

/// What [`print_stream`] printed: the result's rows, and how many of them were shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Printed {
    /// Rows of the result.
    pub rows: usize,
    /// Rows printed (fewer than `rows` only for a table cut at [`Shown::max_rows`]).
    pub shown: usize,
}

/// `schema` with its repeated column names made unique (`step`, `step_1`, …; a join's
/// `SELECT a.step, b.step` names both `step`), so that JSON objects and CSV headers keep
/// every column: a JSON reader keeps only the last of two equal keys. `None` when every name
/// is already unique.
fn unique_names(schema: &SchemaRef) -> Option<SchemaRef> {
    // every name the query gave is kept by its first column; a suffix never takes one of them
    let given: std::collections::BTreeSet<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let mut taken: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut renamed = false;
    let mut fields = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        let mut name = f.name().clone();
        let mut n = 0;
        while taken.contains(&name) || (n > 0 && given.contains(name.as_str())) {
            n += 1;
            name = format!("{}_{n}", f.name());
        }
        renamed |= name != *f.name();
        taken.insert(name.clone());
        fields.push(f.as_ref().clone().with_name(name));
    }
    renamed.then(|| Arc::new(arrow::datatypes::Schema::new(fields)))
}

/// `batch` with every column in a type the JSON Lines encoder of releases writes
/// ([`crate::core::jsonl::encode_jsonl`]), so that any query result prints as JSON: smaller
/// integers as `Int64`, `Float16`/`Float32` as the `Float64` of their shortest decimal form
/// (a `REAL` 0.1 prints as 0.1), string views and large strings as `Utf8`, large and
/// fixed-size lists as lists, dictionaries as their values, a map as a list of
/// `{"key", "value"}` objects, and every other type (decimals, times, durations, intervals,
/// binary as hex, timestamps in units other than microseconds) as its text in Arrow's
/// display form, a JSON string.
///
/// Errors: [`Error::Format`] when Arrow cannot cast a column to that type.
fn json_ready(batch: &RecordBatch) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .map(json_column)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::format("query result", e))?;
    let fields: Vec<_> = batch
        .schema()
        .fields()
        .iter()
        .zip(&columns)
        .map(|(f, c)| arrow::datatypes::Field::new(f.name(), c.data_type().clone(), true))
        .collect();
    let schema = Arc::new(arrow::datatypes::Schema::new(fields));
    result_batch(schema, columns, batch.num_rows())
}

/// One column of [`json_ready`].
fn json_column(a: &arrow::array::ArrayRef) -> std::result::Result<arrow::array::ArrayRef, arrow::error::ArrowError> {
    use arrow::array::{Array, ArrayRef, AsArray};
    use arrow::datatypes::Field;
    let list = |f: &Arc<Field>, offsets, values: &ArrayRef, nulls| -> Result<ArrayRef, _> {
        let values = json_column(values)?;
        let field = Arc::new(Field::new(f.name(), values.data_type().clone(), true));
        Ok(Arc::new(arrow::array::ListArray::try_new(field, offsets, values, nulls)?) as ArrayRef)
    };
    // a time in UTC is written as the JSON Lines encoder writes it (`…Z`); one without a zone,
    // or in another zone, as the CSV and table formats show it (no `Z` for a time whose zone is
    // unknown, the offset kept)
    let utc = |tz: &Option<Arc<str>>| matches!(tz.as_deref(), Some("UTC" | "+00:00" | "Z"));
    // Arrow's display text, as a JSON string
    let as_text = || -> std::result::Result<ArrayRef, arrow::error::ArrowError> {
        let options = arrow::util::display::FormatOptions::default();
        let shown = arrow::util::display::ArrayFormatter::try_new(a.as_ref(), &options)?;
        let texts: arrow::array::StringArray =
            (0..a.len()).map(|i| a.is_valid(i).then(|| shown.value(i).to_string())).collect();
        Ok(Arc::new(texts))
    };
    match a.data_type() {
        DataType::Timestamp(_, tz) if !utc(tz) => as_text(),
        t if crate::core::schema::is_stored_scalar(t) => Ok(a.clone()),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::UInt8 | DataType::UInt16 | DataType::UInt32 => {
            arrow::compute::cast(a, &DataType::Int64)
        }
        DataType::Utf8View | DataType::LargeUtf8 => arrow::compute::cast(a, &DataType::Utf8),
        DataType::Float16 | DataType::Float32 => {
            // the shortest decimal that reads back as the same f32 (0.1, not 0.10000000149011612)
            let f = arrow::compute::cast(a, &DataType::Float32)?;
            let f = f.as_primitive::<arrow::datatypes::Float32Type>();
            let wide: arrow::array::Float64Array = f.unary(|x| x.to_string().parse::<f64>().unwrap_or(x as f64));
            Ok(Arc::new(wide))
        }
        DataType::Dictionary(_, v) => json_column(&arrow::compute::cast(a, v)?),
        DataType::List(f) => {
            let l = a.as_list::<i32>();
            list(f, l.offsets().clone(), l.values(), l.nulls().cloned())
        }
        DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            json_column(&arrow::compute::cast(a, &DataType::List(f.clone()))?)
        }
        DataType::Map(f, _) => {
            let m = a.as_map();
            let entries: ArrayRef = Arc::new(m.entries().clone());
            list(f, m.offsets().clone(), &entries, m.nulls().cloned())
        }
        DataType::Struct(_) => {
            let s = a.as_struct();
            let columns = s.columns().iter().map(json_column).collect::<std::result::Result<Vec<_>, _>>()?;
            let fields: Vec<Field> = s
                .fields()
                .iter()
                .zip(&columns)
                .map(|(f, c)| Field::new(f.name(), c.data_type().clone(), true))
                .collect();
            // a field name given twice (`named_struct('a', 1, 'a', 2)`) would be a JSON key
            // that hides another: the later ones get suffixes, as repeated columns do
            let fields = match unique_names(&Arc::new(arrow::datatypes::Schema::new(fields.clone()))) {
                Some(unique) => unique.fields().iter().map(|f| f.as_ref().clone()).collect(),
                None => fields,
            };
            Ok(Arc::new(arrow::array::StructArray::try_new_with_length(
                fields.into(),
                columns,
                s.nulls().cloned(),
                s.len(),
            )?))
        }
        _ => as_text(),
    }
}

/// `batch` with the control characters of its text columns and column names escaped (`\t`, `\n`,
/// `\u{1b}`), for the table format: a tab or line break would break the table's layout, and
/// an escape sequence would reach the terminal; texts that could be read as another value
/// quoted ([`shown_text`]: `'NULL'`, `'loss '`); non-finite floats as `NaN`, `Infinity`,
/// `-Infinity` ([`nonfinite_as_words`]).
///
/// Errors: [`Error::Format`] when the new batch cannot be assembled.
fn table_ready(batch: &RecordBatch, explain: bool) -> Result<RecordBatch> {
    use arrow::array::{Array, AsArray};
    let batch = &nonfinite_as_words(batch)?;
    // an EXPLAIN's plans keep their line breaks: the table shows them as lines
    let names: Vec<&str> = batch.schema_ref().fields().iter().map(|f| f.name().as_str()).collect();
    let plans = explain && names == ["plan_type", "plan"];
    let plan_lines = |v: &str| v.split('\n').map(crate::core::error::escape_control).collect::<Vec<_>>().join("\n");
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (i, c) in batch.columns().iter().enumerate() {
        let texts: Option<Vec<Option<&str>>> = match c.data_type() {
            DataType::Utf8 => Some(c.as_string::<i32>().iter().collect()),
            DataType::LargeUtf8 => Some(c.as_string::<i64>().iter().collect()),
            DataType::Utf8View => Some(c.as_string_view().iter().collect()),
            _ => None,
        };
        match texts {
            // the plans of an EXPLAIN are shown as lines, their indentation kept
            Some(t) if plans && i == 1 && t.iter().flatten().any(|v| v.chars().any(char::is_control)) => {
                let escaped: arrow::array::StringArray = t.iter().map(|v| v.map(plan_lines)).collect();
                let escaped =
                    arrow::compute::cast(&escaped, c.data_type()).map_err(|e| Error::format("query result", e))?;
                columns.push(escaped);
            }
            Some(t) if !(plans && i == 1) && t.iter().flatten().any(|v| holds_escaped(v) || misread(v)) => {
                // a backslash is escaped too where the column holds an escape, so that `\n`
                // written out is told from a line break
                let escapes = t.iter().flatten().any(|v| holds_escaped(v));
                let escaped: arrow::array::StringArray = t.iter().map(|v| v.map(|v| shown_text(v, escapes))).collect();
                let escaped =
                    arrow::compute::cast(&escaped, c.data_type()).map_err(|e| Error::format("query result", e))?;
                debug_assert_eq!(escaped.len(), c.len());
                columns.push(escaped);
            }
            // a list, struct or map shows the text inside it as it is: written out as the
            // table would show it, and escaped, when some of it holds a control character
            None if c.data_type().is_nested() => {
                // texts inside that could be read as another value, quoted as at the top
                let quoted = quoted_inside(c)?;
                let c = quoted.as_ref().unwrap_or(c);
                // the printer's options (see `print_stream`)
                let options = arrow::util::display::FormatOptions::default().with_null("NULL");
                let f = arrow::util::display::ArrayFormatter::try_new(c.as_ref(), &options)
                    .map_err(|e| Error::format("query result", e))?;
                let shown: Vec<Option<String>> =
                    (0..c.len()).map(|r| c.is_valid(r).then(|| f.value(r).to_string())).collect();
                if shown.iter().flatten().any(|v| holds_escaped(v)) {
                    let escaped: arrow::array::StringArray =
                        shown.iter().map(|v| v.as_deref().map(|v| escape_shown(v, false))).collect();
                    columns.push(Arc::new(escaped));
                } else {
                    columns.push(c.clone());
                }
            }
            _ => columns.push(c.clone()),
        }
    }
    // column names too: a key may hold any character
    let fields: Vec<arrow::datatypes::FieldRef> = batch
        .schema()
        .fields()
        .iter()
        .zip(&columns)
        .map(|(f, c)| {
            let name = crate::core::error::escape_control(f.name());
            Arc::new(f.as_ref().clone().with_name(name).with_data_type(c.data_type().clone()))
        })
        .collect();
    result_batch(Arc::new(arrow::datatypes::Schema::new(fields)), columns, batch.num_rows())
}

/// Nested array `a` with each text inside it that [`misread_inside`] names quoted as
/// [`shown_text`] quotes it (`['NULL', NULL]`, not `[NULL, NULL]`; `['']`; `['a, b']`), and
/// escaped, its backslashes too, where the texts beside it hold an escape, at any depth of
/// lists, structs and maps; `None` when it holds none.
///
/// Errors: [`Error::Format`] when an array cannot be assembled again.
fn quoted_inside(a: &arrow::array::ArrayRef) -> Result<Option<arrow::array::ArrayRef>> {
    use arrow::array::{
        Array, ArrayRef, AsArray, FixedSizeListArray, LargeListArray, ListArray, MapArray, StructArray,
    };
    let err = |e: arrow::error::ArrowError| Error::format("query result", e);
    Ok(match a.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let texts: Vec<Option<&str>> = match a.data_type() {
                DataType::Utf8 => a.as_string::<i32>().iter().collect(),
                DataType::LargeUtf8 => a.as_string::<i64>().iter().collect(),
                _ => a.as_string_view().iter().collect(),
            };
            let escapes = texts.iter().flatten().any(|v| holds_escaped(v));
            if !escapes && !texts.iter().flatten().any(|v| misread_inside(v)) {
                return Ok(None);
            }
            let shown: arrow::array::StringArray = texts
                .iter()
                .map(|v| {
                    v.map(|v| {
                        let out = escape_shown(v, escapes);
                        if misread_inside(v) { format!("'{}'", out.replace('\'', "''")) } else { out }
                    })
                })
                .collect();
            Some(arrow::compute::cast(&shown, a.data_type()).map_err(err)?)
        }
        DataType::List(f) => {
            let l = a.as_list::<i32>();
            quoted_inside(l.values())?
                .map(|v| Arc::new(ListArray::new(f.clone(), l.offsets().clone(), v, l.nulls().cloned())) as ArrayRef)
        }
        DataType::LargeList(f) => {
            let l = a.as_list::<i64>();
            quoted_inside(l.values())?.map(|v| {
                Arc::new(LargeListArray::new(f.clone(), l.offsets().clone(), v, l.nulls().cloned())) as ArrayRef
            })
        }
        DataType::FixedSizeList(f, n) => {
            let l = a.as_fixed_size_list();
            quoted_inside(l.values())?
                .map(|v| Arc::new(FixedSizeListArray::new(f.clone(), *n, v, l.nulls().cloned())) as ArrayRef)
        }
        DataType::Struct(fields) => {
            let st = a.as_struct();
            let mut changed = false;
            let mut columns = Vec::with_capacity(st.num_columns());
            for c in st.columns() {
                match quoted_inside(c)? {
                    Some(q) => {
                        changed = true;
                        columns.push(q);
                    }
                    None => columns.push(c.clone()),
                }
            }
            if !changed {
                return Ok(None);
            }
            Some(Arc::new(StructArray::try_new(fields.clone(), columns, st.nulls().cloned()).map_err(err)?))
        }
        DataType::Map(f, ordered) => {
            let m = a.as_map();
            let entries: ArrayRef = Arc::new(m.entries().clone());
            match quoted_inside(&entries)? {
                Some(e) => Some(Arc::new(
                    MapArray::try_new(
                        f.clone(),
                        m.offsets().clone(),
                        e.as_struct().clone(),
                        m.nulls().cloned(),
                        *ordered,
                    )
                    .map_err(err)?,
                )),
                None => None,
            }
        }
        _ => None,
    })
}

/// Whether `c` is a Unicode format character (category Cf: the bidirectional overrides and
/// isolates U+202A to U+202E and U+2066 to U+2069, the marks U+200E, U+200F and U+061C, the
/// zero-width space U+200B and U+2060, the byte order mark U+FEFF, U+00AD): shown, they
/// reorder or hide the text around them. The joiners U+200C and U+200D are left: Persian,
/// Indic scripts and emoji sequences write with them.
fn is_format_char(c: char) -> bool {
    matches!(c, '\u{ad}' | '\u{61c}' | '\u{180e}' | '\u{200b}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206f}' | '\u{feff}' | '\u{fff9}'..='\u{fffb}')
}

/// Whether the table format escapes `c`: a control character, or a format character
/// ([`is_format_char`]).
fn escaped_char(c: char) -> bool {
    c.is_control() || is_format_char(c)
}

/// Whether text `v` holds a character the table format escapes.
fn holds_escaped(v: &str) -> bool {
    v.chars().any(escaped_char)
}

/// `v` with the characters [`escaped_char`] names escaped (`\n`, `\u{202e}`), and its
/// backslashes when `backslashes`.
fn escape_shown(v: &str, backslashes: bool) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        if escaped_char(c) {
            out.extend(c.escape_default());
        } else if backslashes && c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether a text shown as it is could be read as another value in a table: `NULL` (the
/// table's null), blanks at either end (which the table's padding hides), or a leading `'`
/// (the quote [`shown_text`] puts around such texts).
fn misread(v: &str) -> bool {
    v.eq_ignore_ascii_case("NULL")
        || v.starts_with(char::is_whitespace)
        || v.ends_with(char::is_whitespace)
        || v.starts_with('\'')
}

/// Whether a text inside a list, struct or map could be read as another value there: as
/// [`misread`] says, or empty (`['']` would show as `[]`), or holding what separates the
/// values (`['a, b']` would show as two).
fn misread_inside(v: &str) -> bool {
    misread(v) || v.is_empty() || v.contains([',', '[', ']', '{', '}', ':'])
}

/// Text `v` as the table format shows it: control and format characters escaped (`\n`,
/// `\u{202e}`), and backslashes when `escapes` (the column holds an escape), and in single
/// quotes, as a SQL literal (`'NULL'`, `'loss '`, `'it''s'`), where [`misread`] says it could
/// be read as another value.
fn shown_text(v: &str, escapes: bool) -> String {
    let out = escape_shown(v, escapes);
    if misread(v) { format!("'{}'", out.replace('\'', "''")) } else { out }
}

/// `batch` with each float column (or dictionary of floats) that holds a NaN or an infinity
/// as text: `NaN`, `Infinity`, `-Infinity` (the words the JSON formats and runpack's JSON
/// Lines write, where Arrow's display writes `inf`), every finite value in Arrow's display
/// form and nulls kept. Other columns, nested ones included, and float columns of finite
/// values only, are left as they are.
///
/// Errors: [`Error::Format`] when the new batch cannot be assembled.
fn nonfinite_as_words(batch: &RecordBatch) -> Result<RecordBatch> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Float16Type, Float32Type, Float64Type};
    let nonfinite = |c: &arrow::array::ArrayRef| -> bool {
        match c.data_type() {
            DataType::Float16 => c.as_primitive::<Float16Type>().iter().flatten().any(|v| !v.is_finite()),
            DataType::Float32 => c.as_primitive::<Float32Type>().iter().flatten().any(|v| !v.is_finite()),
            DataType::Float64 => c.as_primitive::<Float64Type>().iter().flatten().any(|v| !v.is_finite()),
            _ => false,
        }
    };
    // a dictionary of floats is read through its values
    let unpacked = |c: &arrow::array::ArrayRef| -> Result<arrow::array::ArrayRef> {
        match c.data_type() {
            DataType::Dictionary(_, v) if v.is_floating() => {
                arrow::compute::cast(c, v).map_err(|e| Error::format("query result", e))
            }
            _ => Ok(c.clone()),
        }
    };
    let unpacked: Vec<arrow::array::ArrayRef> = batch.columns().iter().map(unpacked).collect::<Result<_>>()?;
    if !unpacked.iter().any(nonfinite) {
        return Ok(batch.clone());
    }
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut columns = Vec::with_capacity(batch.num_columns());
    for ((f, c), plain) in batch.schema().fields().iter().zip(batch.columns()).zip(&unpacked) {
        if !nonfinite(plain) {
            fields.push(f.as_ref().clone());
            columns.push(c.clone());
            continue;
        }
        let c = plain;
        let shown = arrow::util::display::ArrayFormatter::try_new(c.as_ref(), &Default::default())
            .map_err(|e| Error::format("query result", e))?;
        let as_f64 = arrow::compute::cast(c, &DataType::Float64).map_err(|e| Error::format("query result", e))?;
        let values = as_f64.as_primitive::<Float64Type>();
        let texts: arrow::array::StringArray = (0..c.len())
            .map(|i| {
                c.is_valid(i).then(|| match values.value(i) {
                    v if v.is_nan() => "NaN".to_string(),
                    v if v == f64::INFINITY => "Infinity".to_string(),
                    v if v == f64::NEG_INFINITY => "-Infinity".to_string(),
                    _ => shown.value(i).to_string(),
                })
            })
            .collect();
        fields.push(arrow::datatypes::Field::new(f.name(), DataType::Utf8, true));
        columns.push(Arc::new(texts) as arrow::array::ArrayRef);
    }
    result_batch(Arc::new(arrow::datatypes::Schema::new(fields)), columns, batch.num_rows())
}

/// `batch` with its nested columns (lists, structs, maps), which CSV has no form for, as
/// JSON text in one cell each (written as [`json_ready`] and the JSON formats write them),
/// and non-finite floats as `NaN`, `Infinity`, `-Infinity` ([`nonfinite_as_words`]).
///
/// Errors: [`Error::Format`] when a column cannot be made ready for JSON.
fn csv_ready(batch: &RecordBatch) -> Result<RecordBatch> {
    let batch = &nonfinite_as_words(batch)?;
    let nested = |t: &DataType| t.is_nested();
    if !batch.schema().fields().iter().any(|f| nested(f.data_type())) {
        return Ok(batch.clone());
    }
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
        if !nested(f.data_type()) {
            fields.push(f.as_ref().clone());
            columns.push(c.clone());
            continue;
        }
        let ready = json_column(c).map_err(|e| Error::format("query result", e))?;
        let texts: arrow::array::StringArray = crate::core::jsonl::json_values(&ready)?.into_iter().collect();
        fields.push(arrow::datatypes::Field::new(f.name(), DataType::Utf8, true));
        columns.push(Arc::new(texts) as arrow::array::ArrayRef);
    }
    result_batch(Arc::new(arrow::datatypes::Schema::new(fields)), columns, batch.num_rows())
}

/// Checks that every date, time, timestamp and duration of `batch` (nested ones included) can
/// be printed: Arrow's display, and with it every print format, reaches only the dates of
/// chrono (years -262143 to 262142), times of day within 24 hours, and durations in seconds
/// or milliseconds that fit in 64-bit milliseconds. `first_row` is the number of rows printed
/// before `batch`, so that the row named counts from the start of the result.
///
/// Errors: [`Error::Format`] naming the column (with its path inside a nested value), the row
/// (from 1), the stored integer and its Arrow type.
fn printable(batch: &RecordBatch, first_row: usize) -> Result<()> {
    use arrow::array::temporal_conversions::{as_date, as_datetime, as_duration, as_time};
    use arrow::array::{Array, ArrayRef, AsArray};
    use arrow::datatypes::*;
    /// Whether the timestamp `v` of type `T` is a date and time chrono holds, in UTC and, in
    /// zone `tz`, as local time.
    fn shown<T: ArrowPrimitiveType>(v: i64, tz: Option<&arrow::array::timezone::Tz>) -> bool {
        use chrono::{Offset, TimeZone};
        let Some(utc) = as_datetime::<T>(v) else { return false };
        tz.is_none_or(|tz| utc.checked_add_offset(tz.offset_from_utc_datetime(&utc).fix()).is_some())
    }
    /// The index (in `a`) of the first value that cannot be printed, and that value.
    fn first_bad(a: &ArrayRef) -> Option<(usize, i64)> {
        macro_rules! find {
            ($t:ty, $ok:expr) => {{
                let p = a.as_primitive::<$t>();
                (0..p.len()).find(|&i| p.is_valid(i) && !$ok(p.value(i) as i64)).map(|i| (i, p.value(i) as i64))
            }};
        }
        match a.data_type() {
            DataType::Date32 => find!(Date32Type, |v| as_date::<Date32Type>(v).is_some()),
            DataType::Date64 => find!(Date64Type, |v| as_date::<Date64Type>(v).is_some()),
            DataType::Timestamp(unit, tz) => {
                // in a zone, the local time must be a date too (UTC+14:00 of the last instant is not)
                let tz: Option<arrow::array::timezone::Tz> = tz.as_deref().and_then(|t| t.parse().ok());
                match unit {
                    TimeUnit::Second => find!(TimestampSecondType, |v| shown::<TimestampSecondType>(v, tz.as_ref())),
                    TimeUnit::Millisecond => {
                        find!(TimestampMillisecondType, |v| shown::<TimestampMillisecondType>(v, tz.as_ref()))
                    }
                    TimeUnit::Microsecond => {
                        find!(TimestampMicrosecondType, |v| shown::<TimestampMicrosecondType>(v, tz.as_ref()))
                    }
                    TimeUnit::Nanosecond => {
                        find!(TimestampNanosecondType, |v| shown::<TimestampNanosecondType>(v, tz.as_ref()))
                    }
                }
            }
            DataType::Time32(TimeUnit::Second) => find!(Time32SecondType, |v| as_time::<Time32SecondType>(v).is_some()),
            DataType::Time32(TimeUnit::Millisecond) => {
                find!(Time32MillisecondType, |v| as_time::<Time32MillisecondType>(v).is_some())
            }
            DataType::Time64(TimeUnit::Microsecond) => {
                find!(Time64MicrosecondType, |v| as_time::<Time64MicrosecondType>(v).is_some())
            }
            DataType::Time64(TimeUnit::Nanosecond) => {
                find!(Time64NanosecondType, |v| as_time::<Time64NanosecondType>(v).is_some())
            }
            DataType::Duration(TimeUnit::Second) => {
                find!(DurationSecondType, |v| as_duration::<DurationSecondType>(v).is_some())
            }
            DataType::Duration(TimeUnit::Millisecond) => {
                find!(DurationMillisecondType, |v| as_duration::<DurationMillisecondType>(v).is_some())
            }
            _ => None,
        }
    }
    /// The first value of `a` (or of its children) that cannot be printed: its path below
    /// the column, the index in `a` of the row holding it, the value and its type.
    fn walk(a: &ArrayRef) -> Option<(String, usize, i64, DataType)> {
        if let Some((i, v)) = first_bad(a) {
            return Some((String::new(), i, v, a.data_type().clone()));
        }
        // the row of `a` holding child index `j`, for list-like children
        let row_of = |offsets: &[i32], j: usize| offsets.partition_point(|&o| (o as usize) <= j).saturating_sub(1);
        match a.data_type() {
            DataType::List(_) => {
                let l = a.as_list::<i32>();
                let (path, j, v, t) = walk(l.values())?;
                Some((format!("[]{path}"), row_of(l.value_offsets(), j), v, t))
            }
            DataType::LargeList(f)
            | DataType::FixedSizeList(f, _)
            | DataType::ListView(f)
            | DataType::LargeListView(f) => walk(&arrow::compute::cast(a, &DataType::List(f.clone())).ok()?),
            DataType::Map(..) => {
                let m = a.as_map();
                let entries: ArrayRef = Arc::new(m.entries().clone());
                let (path, j, v, t) = walk(&entries)?;
                Some((format!("[]{path}"), row_of(m.value_offsets(), j), v, t))
            }
            DataType::Struct(fields) => {
                let s = a.as_struct();
                fields.iter().zip(s.columns()).find_map(|(f, c)| {
                    let (path, i, v, t) = walk(c)?;
                    Some((format!(".{}{path}", f.name()), i, v, t))
                })
            }
            DataType::Dictionary(_, value) => {
                let values = arrow::compute::cast(a, value).ok()?;
                walk(&values)
            }
            _ => None,
        }
    }
    // (a dictionary's values are not looked into here: it is walked whatever it holds)
    let temporal = |t: &DataType| t.is_temporal() || matches!(t, DataType::Duration(_) | DataType::Dictionary(..));
    for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
        // only columns that hold such values are walked (no cast of a dictionary or list of others)
        if !crate::core::schema::type_contains(f.data_type(), &temporal) {
            continue;
        }
        if let Some((path, i, v, t)) = walk(c) {
            use chrono::Datelike;
            return Err(Error::format(
                "query result",
                format!(
                    "column {:?}{path}, row {}: {v} (a {t} value) is outside what can be printed \
                     (dates of years {} to {}, times of day within 24 hours)",
                    f.name(),
                    first_row + i + 1,
                    chrono::NaiveDate::MIN.year(),
                    chrono::NaiveDate::MAX.year(),
                ),
            ));
        }
    }
    Ok(())
}

/// Writes `batches` to `out` in `format` (CSV: nested values as JSON text, see
/// `csv_ready`; JSON formats: see `json_ready` for how each Arrow type is written).
///
/// Errors: [`Error::Io`] naming `<stdout>` when `out` refuses the bytes (a closed pipe among
/// them), [`Error::Format`] for a value that cannot be printed.
pub fn print(
    format: PrintFormat,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    out: &mut dyn std::io::Write,
) -> Result<()> {
    let mut printer = Printer::new(format.into(), schema.clone(), false);
    for b in batches {
        printer.push(b, out)?;
    }
    printer.finish(out).map(|_| ())
}

/// Whether the last statement of `sql` is an `EXPLAIN` (its result is plans, whose line breaks
/// the table format keeps); `false` for SQL that does not parse.
pub fn is_explain(sql: &str) -> bool {
    parse_statements(sql)
        .ok()
        .and_then(|statements| statements.back().map(|st| matches!(st, datafusion::sql::parser::Statement::Explain(_))))
        .unwrap_or(false)
}

/// Writes the batches of `stream` to `out` as they come, in `shown`'s format: CSV, NDJSON and
/// JSON hold one batch at a time; the table format waits for all of them (its column widths
/// depend on every row), holding at most `shown.max_rows` rows and counting the others. With
/// `explain` (see [`is_explain`]), the table format prints the plans' lines as lines; other
/// text has its control characters escaped.
///
/// Errors: as [`print`](fn@print), and [`Error::Sql`] named `context` (see [`run_script_stream`](crate::sql::session::run_script_stream)) when
/// the query fails while it runs.
pub async fn print_stream(
    shown: Shown,
    schema: &SchemaRef,
    mut stream: datafusion::physical_plan::SendableRecordBatchStream,
    context: &str,
    explain: bool,
    out: &mut dyn std::io::Write,
) -> Result<Printed> {
    // a statement without a result (`SET …`) runs, and prints nothing (JSON: an empty array)
    let nothing = schema.fields().is_empty();
    let mut printer = Printer::new(shown, schema.clone(), explain);
    while let Some(b) = stream.next().await {
        let b = b.map_err(|e| Error::sql(context, e))?;
        if !nothing {
            printer.push(&b, out)?;
        }
    }
    match (nothing, shown.format) {
        (true, PrintFormat::Json) => {
            writeln!(out, "[]").map_err(|e| Error::io("stdout", e))?;
            Ok(Printed { rows: 0, shown: 0 })
        }
        (true, _) => Ok(Printed { rows: 0, shown: 0 }),
        (false, _) => printer.finish(out),
    }
}

/// A result being printed batch by batch.
struct Printer {
    format: PrintFormat,
    /// The result's schema, its repeated column names made unique for CSV and JSON
    /// ([`unique_names`]).
    schema: SchemaRef,
    /// Whether the batches take `schema`'s names (some were repeated).
    renamed: bool,
    /// Rows printed so far (JSON: a comma goes before every row but the first).
    rows: usize,
    /// CSV: whether the header is written.
    header: bool,
    /// The table format's batches, printed at the end.
    held: Vec<RecordBatch>,
    /// The table format's rows held at most (`None`: all).
    max_rows: Option<usize>,
    /// Rows held in `held`.
    held_rows: usize,
    /// Whether the result is an `EXPLAIN`'s plans (the table format keeps their line breaks).
    explain: bool,
}

impl Printer {
    fn new(shown: Shown, schema: SchemaRef, explain: bool) -> Self {
        let format = shown.format;
        let unique = (format != PrintFormat::Table).then(|| unique_names(&schema)).flatten();
        let renamed = unique.is_some();
        Printer {
            format,
            schema: unique.unwrap_or(schema),
            renamed,
            rows: 0,
            header: false,
            held: Vec::new(),
            max_rows: shown.max_rows,
            held_rows: 0,
            explain,
        }
    }

    fn push(&mut self, b: &RecordBatch, out: &mut dyn std::io::Write) -> Result<()> {
        let io = |e: std::io::Error| Error::io("<stdout>", e);
        // rows the table does not show are counted, not checked or held
        let room = match (self.format, self.max_rows) {
            (PrintFormat::Table, Some(max)) => max.saturating_sub(self.held_rows),
            _ => usize::MAX,
        };
        if room == 0 {
            self.rows += b.num_rows();
            return Ok(());
        }
        let cut;
        let b = if b.num_rows() > room {
            cut = b.slice(0, room);
            self.rows += b.num_rows() - room;
            &cut
        } else {
            b
        };
        printable(b, self.rows)?;
        let renamed;
        let b = if self.renamed {
            renamed = RecordBatch::try_new(self.schema.clone(), b.columns().to_vec())
                .map_err(|e| Error::format("query result", e))?;
            &renamed
        } else {
            b
        };
        match self.format {
            PrintFormat::Table => {
                self.held_rows += b.num_rows();
                self.held.push(b.clone())
            }
            PrintFormat::Csv if b.num_rows() > 0 => self.csv(b, out)?,
            PrintFormat::Csv => {}
            PrintFormat::Ndjson | PrintFormat::Json => {
                let mut buf = Vec::new();
                let mut ends = Vec::new();
                crate::core::jsonl::encode_jsonl(&json_ready(b)?, &mut buf, &mut ends)?;
                if self.format == PrintFormat::Ndjson {
                    out.write_all(&buf).map_err(io)?;
                } else {
                    let mut start = 0;
                    for (i, end) in ends.iter().enumerate() {
                        out.write_all(if self.rows + i == 0 { b"[" } else { b",\n" }).map_err(io)?;
                        out.write_all(&buf[start..end - 1]).map_err(io)?;
                        start = *end;
                    }
                }
            }
        }
        self.rows += b.num_rows();
        Ok(())
    }

    /// Writes `b` as CSV (RFC 4180), after the header if it is not written yet: a null is an
    /// empty field, an empty text `""`. Each batch is formatted in memory, so that a closed
    /// pipe is an I/O error like with the other formats.
    ///
    /// Arrow's CSV writer is not used: it writes a null and an empty text alike (an empty
    /// field), and a reader could not tell them apart. The values are Arrow's display, as
    /// that writer's.
    fn csv(&mut self, b: &RecordBatch, out: &mut dyn std::io::Write) -> Result<()> {
        let b = csv_ready(b)?;
        let mut buf = Vec::new();
        let field = |text: &str, quote_empty: bool, buf: &mut Vec<u8>| {
            if text.is_empty() && quote_empty || text.contains([',', '"', '\n', '\r']) {
                buf.push(b'"');
                buf.extend_from_slice(text.replace('"', "\"\"").as_bytes());
                buf.push(b'"');
            } else {
                buf.extend_from_slice(text.as_bytes());
            }
        };
        if !self.header {
            for (i, f) in b.schema().fields().iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                // a lone empty name would read as a blank line
                field(f.name(), b.num_columns() == 1, &mut buf);
            }
            buf.push(b'\n');
        }
        let options = arrow::util::display::FormatOptions::default();
        let formatters = b
            .columns()
            .iter()
            .map(|c| arrow::util::display::ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::format("query", e))?;
        // a dictionary's nulls may be in its values: the logical ones
        let nulls: Vec<Option<arrow::buffer::NullBuffer>> = b.columns().iter().map(|c| c.logical_nulls()).collect();
        let mut text = String::new();
        for row in 0..b.num_rows() {
            for (i, (f, n)) in formatters.iter().zip(&nulls).enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                if n.as_ref().is_some_and(|n| n.is_null(row)) {
                    // a row of one null column would read as a blank line
                    if b.num_columns() == 1 {
                        buf.extend_from_slice(b"\"\"");
                    }
                    continue;
                }
                text.clear();
                std::fmt::Write::write_fmt(&mut text, format_args!("{}", f.value(row)))
                    .map_err(|e| Error::format("query", e))?;
                field(&text, true, &mut buf);
            }
            buf.push(b'\n');
        }
        self.header = true;
        out.write_all(&buf).map_err(|e| Error::io("<stdout>", e))
    }

    fn finish(mut self, out: &mut dyn std::io::Write) -> Result<Printed> {
        let printed = Printed {
            rows: self.rows,
            shown: if self.format == PrintFormat::Table { self.held_rows } else { self.rows },
        };
        let io = |e: std::io::Error| Error::io("<stdout>", e);
        match self.format {
            PrintFormat::Table => {
                let mut all = std::mem::take(&mut self.held);
                if all.is_empty() {
                    all.push(RecordBatch::new_empty(self.schema.clone()));
                }
                let all = all.iter().map(|b| table_ready(b, self.explain)).collect::<Result<Vec<_>>>()?;
                // NULL is said, so that it differs from the empty string (also inside lists)
                let options = arrow::util::display::FormatOptions::default().with_null("NULL");
                let t = arrow::util::pretty::pretty_format_batches_with_options(&all, &options)
                    .map_err(|e| Error::format("query", e))?;
                writeln!(out, "{t}").map_err(io)?;
            }
            // a result without rows still has its header
            PrintFormat::Csv if !self.header => self.csv(&RecordBatch::new_empty(self.schema.clone()), out)?,
            PrintFormat::Json => out.write_all(if self.rows == 0 { b"[]\n" } else { b"]\n" }).map_err(io)?,
            PrintFormat::Csv | PrintFormat::Ndjson => {}
        }
        out.flush().map_err(io)?;
        Ok(printed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::session::{run_script, session};

    #[test]
    fn csv_tells_a_null_from_an_empty_text_also_in_a_dictionary_and_a_lone_column() {
        use arrow::array::{Array, DictionaryArray, Int32Array, StringArray};
        use arrow::datatypes::{Field, Int32Type, Schema};
        let values = Arc::new(StringArray::from(vec![Some(""), None, Some("a,\"b\"")]));
        let dict =
            DictionaryArray::<Int32Type>::try_new(Int32Array::from(vec![Some(0), Some(1), None, Some(2)]), values)
                .unwrap();
        let ids = Int32Array::from(vec![1, 2, 3, 4]);
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("s", dict.data_type().clone(), true),
        ]));
        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids), Arc::new(dict.clone())]).unwrap();
        let mut out = Vec::new();
        print(PrintFormat::Csv, &schema, &[b], &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "id,s\n1,\"\"\n2,\n3,\n4,\"a,\"\"b\"\"\"\n");
        // alone, a null cannot be an empty line (readers skip those)
        let one = Arc::new(Schema::new(vec![Field::new("s", dict.data_type().clone(), true)]));
        let b = RecordBatch::try_new(one.clone(), vec![Arc::new(dict)]).unwrap();
        let mut out = Vec::new();
        print(PrintFormat::Csv, &one, &[b], &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "s\n\"\"\n\"\"\n\"\"\n\"a,\"\"b\"\"\"\n");
    }

    #[test]
    fn repeated_names_get_suffixes_no_query_gave() {
        use arrow::datatypes::{Field, Schema};
        let schema = Arc::new(Schema::new(
            ["step", "step", "step_1", "a", "a", "a"]
                .iter()
                .map(|n| Field::new(*n, DataType::Int64, true))
                .collect::<Vec<_>>(),
        ));
        let names: Vec<String> = unique_names(&schema).unwrap().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["step", "step_2", "step_1", "a", "a_1", "a_2"]);
        let plain = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
        assert!(unique_names(&plain).is_none());
    }

    #[test]
    fn the_table_format_escapes_control_characters() {
        let schema =
            Arc::new(arrow::datatypes::Schema::new(vec![arrow::datatypes::Field::new("a", DataType::Utf8View, true)]));
        let col = arrow::array::StringViewArray::from(vec![Some("x\u{1b}[31mred\tz"), None, Some("plain")]);
        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(col)]).unwrap();
        let mut out = Vec::new();
        print(PrintFormat::Table, &schema, &[b], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("| x\\u{1b}[31mred\\tz |"), "{text}");
        assert!(!text.contains('\u{1b}') && !text.contains('\t'), "{text}");
        // a null is said, unlike the empty string
        assert!(text.contains("| NULL "), "{text}");
        // text inside a list is escaped too; a list without control characters is left alone
        let item = Arc::new(arrow::datatypes::Field::new("item", DataType::Utf8, true));
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![arrow::datatypes::Field::new(
            "l",
            DataType::List(item),
            true,
        )]));
        let mut lists = arrow::array::ListBuilder::new(arrow::array::StringBuilder::new());
        lists.values().append_value("a\nb\u{1b}");
        lists.values().append_null();
        lists.append(true);
        lists.append(false);
        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(lists.finish())]).unwrap();
        let mut out = Vec::new();
        print(PrintFormat::Table, &schema, &[b], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("| [a\\nb\\u{1b}, NULL] |"), "{text}");
        assert!(text.contains("| NULL "), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
    }

    #[test]
    fn the_table_format_quotes_texts_it_would_show_as_another_value() {
        use arrow::datatypes::{Field, Schema};
        let table = |values: Vec<Option<&str>>| {
            let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, true)]));
            let b =
                RecordBatch::try_new(schema.clone(), vec![Arc::new(arrow::array::StringArray::from(values))]).unwrap();
            let mut out = Vec::new();
            print(PrintFormat::Table, &schema, &[b], &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let text = table(vec![Some("NULL"), None, Some("loss "), Some(" x"), Some("it's"), Some("'q'"), Some("plain")]);
        for shown in
            ["| 'NULL'  |", "| NULL    |", "| 'loss ' |", "| ' x'    |", "| it's    |", "| '''q''' |", "| plain   |"]
        {
            assert!(text.contains(shown), "{shown}: {text}");
        }
        // a bidirectional override is escaped (shown, it reverses the text after it), and so
        // are the backslashes of a column that holds an escape
        let text = table(vec![Some("x\u{202e}y"), Some("a\\nb"), Some("a\nb")]);
        for shown in ["| x\\u{202e}y |", "| a\\\\nb      |", "| a\\nb       |"] {
            assert!(text.contains(shown), "{shown}: {text}");
        }
        assert!(!text.contains('\u{202e}'), "{text}");
        // inside a list and a struct too, a null kept apart
        let mut items = arrow::array::ListBuilder::new(arrow::array::StringBuilder::new());
        items.append_value([
            Some("NULL"),
            None,
            Some(" x"),
            Some("ok"),
            Some(""),
            Some("a, b"),
            Some("a\nb"),
            Some("c\\d"),
        ]);
        let items = Arc::new(items.finish()) as arrow::array::ArrayRef;
        let member = Arc::new(arrow::array::StringArray::from(vec![Some("null")])) as arrow::array::ArrayRef;
        let st = arrow::array::StructArray::from(vec![(Arc::new(Field::new("m", DataType::Utf8, true)), member)]);
        use arrow::array::Array;
        let schema = Arc::new(Schema::new(vec![
            Field::new("l", items.data_type().clone(), true),
            Field::new("s", st.data_type().clone(), true),
        ]));
        let b = RecordBatch::try_new(schema.clone(), vec![items, Arc::new(st)]).unwrap();
        let mut out = Vec::new();
        print(PrintFormat::Table, &schema, &[b], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("| ['NULL', NULL, ' x', ok, '', 'a, b', a\\nb, c\\\\d] | {m: 'null'} |"), "{text}");
        // inside a list too; the joiners of Persian and of emoji sequences are text
        let item = Arc::new(Field::new("item", DataType::Utf8, true));
        let schema = Arc::new(Schema::new(vec![Field::new("l", DataType::List(item), true)]));
        let mut lists = arrow::array::ListBuilder::new(arrow::array::StringBuilder::new());
        lists.values().append_value("\u{202e}evil");
        lists.append(true);
        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(lists.finish())]).unwrap();
        let mut out = Vec::new();
        print(PrintFormat::Table, &schema, &[b], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("[\\u{202e}evil]") && !text.contains('\u{202e}'), "{text}");
        assert!(table(vec![Some("می\u{200c}خواهم"), Some("👨\u{200d}👩")]).contains("👨\u{200d}👩"));
        // a backslash in a column with no escape is as written
        assert!(table(vec![Some("C:\\runs")]).contains("| C:\\runs |"));
    }

    #[test]
    fn csv_and_table_write_nonfinite_floats_as_the_json_formats_do() {
        use arrow::datatypes::Field;
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![
            Field::new("x", DataType::Float64, true),
            Field::new("y", DataType::Float32, true),
            Field::new("z", DataType::Float64, true),
        ]));
        let x = arrow::array::Float64Array::from(vec![Some(1.5), Some(f64::NAN), Some(f64::INFINITY), None]);
        let y = arrow::array::Float32Array::from(vec![Some(0.1), Some(f32::NEG_INFINITY), None, Some(2.0)]);
        let z = arrow::array::Float64Array::from(vec![Some(0.25), None, Some(1e300), Some(-3.0)]);
        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(x), Arc::new(y), Arc::new(z)]).unwrap();
        let text = |format| {
            let mut out = Vec::new();
            print(format, &schema, std::slice::from_ref(&b), &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        // finite values as Arrow writes them, in every column
        assert_eq!(text(PrintFormat::Csv), "x,y,z\n1.5,0.1,0.25\nNaN,-Infinity,\nInfinity,,1e300\n,2.0,-3.0\n");
        let table = text(PrintFormat::Table);
        assert!(table.contains("| Infinity | NULL      | 1e300 |"), "{table}");
        assert!(table.contains("| NaN      | -Infinity | NULL  |"), "{table}");
        let json = text(PrintFormat::Ndjson);
        assert!(json.contains(r#"{"x":"NaN","y":"-Infinity","z":null}"#), "{json}");
        // a dictionary of floats too
        let values = arrow::array::Float64Array::from(vec![f64::INFINITY, 1.5]);
        let keys = arrow::array::Int32Array::from(vec![Some(0), Some(1), None]);
        let dict = arrow::array::DictionaryArray::try_new(keys, Arc::new(values)).unwrap();
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![Field::new(
            "d",
            arrow::array::Array::data_type(&dict).clone(),
            true,
        )]));
        let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(dict)]).unwrap();
        let mut out = Vec::new();
        print(PrintFormat::Csv, &schema, &[b], &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "d\nInfinity\n1.5\n\"\"\n");
    }

    #[tokio::test]
    async fn repeated_column_names_are_made_unique_in_json_and_csv() {
        let ctx = session();
        let sql = "SELECT a.x, b.x, 9 AS x_1 FROM (VALUES (1)) a(x) CROSS JOIN (VALUES (2)) b(x)";
        let (schema, batches) = run_script(&ctx, sql).await.unwrap();
        for (format, expected) in
            // the name the query gave (`x_1`) stays its column's; the repeated `x` takes the next
            [(PrintFormat::Ndjson, "{\"x\":1,\"x_2\":2,\"x_1\":9}\n"), (PrintFormat::Csv, "x,x_2,x_1\n1,2,9\n")]
        {
            let mut out = Vec::new();
            print(format, &schema, &batches, &mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
    }

    #[tokio::test]
    async fn every_result_type_prints_as_json() {
        let ctx = session();
        let sql = "SELECT length('abc') AS i32, CAST(0.1 AS REAL) AS f32, CAST(2.5 AS DECIMAL(5,2)) AS dec, \
                   CAST('hi' AS BYTEA) AS bin, map(['k'], [arrow_cast(1, 'Int8')]) AS m, \
                   arrow_cast([1, 2], 'LargeList(Int32)') AS ll, arrow_cast('v', 'Dictionary(Int32, Utf8)') AS dict, \
                   CAST('12:30:00' AS TIME) AS t, named_struct('n', CAST(NULL AS DECIMAL(5,2))) AS s";
        let (schema, batches) = run_script(&ctx, sql).await.unwrap();
        for (format, expected) in [
            (
                PrintFormat::Ndjson,
                r#"{"i32":3,"f32":0.1,"dec":"2.50","bin":"6869","m":[{"key":"k","value":1}],"ll":[1,2],"dict":"v","t":"12:30:00","s":{"n":null}}"#.to_string() + "\n",
            ),
            (
                PrintFormat::Json,
                r#"[{"i32":3,"f32":0.1,"dec":"2.50","bin":"6869","m":[{"key":"k","value":1}],"ll":[1,2],"dict":"v","t":"12:30:00","s":{"n":null}}]"#.to_string() + "\n",
            ),
        ] {
            let mut out = Vec::new();
            print(format, &schema, &batches, &mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
        // CSV writes nested values as JSON text in one cell
        let mut out = Vec::new();
        print(PrintFormat::Csv, &schema, &batches, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "i32,f32,dec,bin,m,ll,dict,t,s\n3,0.1,2.50,6869,\"[{\"\"key\"\":\"\"k\"\",\"\"value\"\":1}]\",\"[1,2]\",v,12:30:00,\"{\"\"n\"\":null}\"\n"
        );
    }
}
