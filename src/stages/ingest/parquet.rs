//! Parquet files as a source (`format = "parquet"`), for shards produced by other tools.
//!
//! In: Parquet files. Out: record batches with one schema for all files: the declared one, or
//! the files' own schema when every file agrees on it (compared after mapping equivalent types
//! to runpack's canonical ones: a dictionary-encoded string column is a string column). Files
//! that disagree are reported column by column with both file names
//! (`run_date: Int64 in data/train-0.parquet vs Utf8 in data/train-1.parquet`); a declared type
//! for the column (`[[source.field]]`) casts every file to it. A Git LFS pointer is refused
//! before any Parquet parsing. `_source_line` is the 1-based row number in the file.

use std::fs::File;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, new_null_array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::files::{InputFile, lfs_pointer, lfs_pointer_error};
use crate::core::error::{Error, Result};
use crate::core::report::{Position, SourceRef, Violation};
use crate::core::schema::{TableSchema, canonical, type_name};
use crate::core::spec::{ColumnsPolicy, NonFinite, SourceDef};

/// Reads the Arrow schema of a Parquet file (refusing LFS pointers).
pub fn file_schema(input: &InputFile) -> Result<SchemaRef> {
    if let Some(p) = lfs_pointer(&input.path) {
        return Err(lfs_pointer_error(&input.rel, &p));
    }
    let f = File::open(&input.path).map_err(|e| Error::io(&input.path, e))?;
    let b = crate::core::error::catch_panic(|| ParquetRecordBatchReaderBuilder::try_new(f))
        .map_err(|p| unreadable(input, format!("the Parquet reader stopped on {p}")))?
        .map_err(|e| unreadable(input, e))?;
    Ok(b.schema().clone())
}

/// The columns a Parquet source yields, each of runpack's canonical type for the file's (or the
/// type declared for it), or the violations that stop it: a column of another type in another
/// file, and, unless the source's `columns` is `union`, a column missing from a file.
///
/// `context` names the source where the pipeline defines it (`pipeline.toml (source name)`),
/// for an error about the source as a whole.
///
/// Errors: [`Error::Config`] naming file and column for a type runpack does not store, or
/// `context` when the files' column sets differ, [`Error::Invalid`] for the violations, and
/// those of reading a footer.
pub fn plan(
    src: &SourceDef,
    inputs: &[InputFile],
    declared: Option<&TableSchema>,
    context: &str,
) -> Result<Vec<Field>> {
    let schemas: Vec<SchemaRef> = inputs.iter().map(file_schema).collect::<Result<_>>()?;
    let fields = match declared {
        Some(d) => d.arrow_schema().fields().iter().map(|f| f.as_ref().clone()).collect(),
        None => plan_columns(src, inputs, &schemas, false, context)?,
    };
    for (input, schema) in inputs.iter().zip(&schemas) {
        zoned_or_assumed(src, input, schema, &fields)?;
    }
    Ok(fields)
}

/// Refuses a column of `input` that holds timestamps without a time zone and is read as a
/// timestamp (inferred or declared), unless the source's `assume_timezone` says in which zone
/// they were written; that applies to top-level columns only (see [`read`]).
///
/// Errors: [`Error::Config`] naming the file and the column.
fn zoned_or_assumed(src: &SourceDef, input: &InputFile, schema: &Schema, fields: &[Field]) -> Result<()> {
    let has_timestamp =
        |dt: &DataType| crate::core::schema::type_contains(dt, &|t| matches!(t, DataType::Timestamp(..)));
    for f in schema.fields().iter().filter(|f| has_naive_timestamp(f.data_type())) {
        let read_as_time = fields.iter().any(|g| g.name() == f.name() && has_timestamp(g.data_type()));
        let top = matches!(f.data_type(), DataType::Timestamp(_, None));
        let message = match (read_as_time, &src.assume_timezone, top) {
            (false, ..) | (true, Some(_), true) => continue,
            (true, Some(_), false) => format!(
                "column `{}` holds timestamps without a time zone inside a list or struct; assume_timezone \
                 applies to top-level columns: write the file with zoned timestamps",
                f.name()
            ),
            (true, None, _) => format!(
                "column `{}` holds timestamps without a time zone ({}): their instant is unknown; set \
                 assume_timezone on the source (\"UTC\", or the zone they were written in)",
                f.name(),
                type_name(f.data_type())
            ),
        };
        return Err(Error::config(&input.rel, message));
    }
    Ok(())
}

/// The columns to read raw Parquet files with for SQL alone (`runpack query`), as [`plan`]
/// infers them, except that nothing is lost in reading: a timestamp keeps a unit finer than
/// microseconds, and a column of a type runpack does not store (null, map, …) keeps the file's
/// own type, so that the SQL can read or cast it.
///
/// Errors: as [`plan`].
pub fn plan_for_query(src: &SourceDef, inputs: &[InputFile]) -> Result<Vec<Field>> {
    let schemas: Vec<SchemaRef> = inputs.iter().map(file_schema).collect::<Result<_>>()?;
    plan_columns(src, inputs, &schemas, true, &format!("source {}", src.name))
}

/// One type for two files' types that differ only where one of them is null in every row
/// (Arrow's `Null`, at any depth of lists and structs): the other file's type there; `None`
/// when they differ otherwise.
pub fn merge_nulls(a: &DataType, b: &DataType) -> Option<DataType> {
    match (a, b) {
        (DataType::Null, t) | (t, DataType::Null) => Some(t.clone()),
        (DataType::List(x), DataType::List(y)) => {
            let t = merge_nulls(x.data_type(), y.data_type())?;
            Some(DataType::List(Arc::new(x.as_ref().clone().with_data_type(t).with_nullable(true))))
        }
        (DataType::Struct(x), DataType::Struct(y)) if x.len() == y.len() => {
            let members = x
                .iter()
                .zip(y.iter())
                .map(|(f, g)| {
                    (f.name() == g.name())
                        .then(|| merge_nulls(f.data_type(), g.data_type()))
                        .flatten()
                        .map(|t| Arc::new(f.as_ref().clone().with_data_type(t).with_nullable(true)))
                })
                .collect::<Option<Vec<_>>>()?;
            Some(DataType::Struct(members.into()))
        }
        _ => (a == b).then(|| a.clone()),
    }
}

/// The columns inferred from the files' `schemas` (one per input, in order); see [`plan`]
/// and [`plan_for_query`] (`as_in_file`); `context` names the source in an error about all
/// of its files.
fn plan_columns(
    src: &SourceDef,
    inputs: &[InputFile],
    schemas: &[SchemaRef],
    as_in_file: bool,
    context: &str,
) -> Result<Vec<Field>> {
    let overrides: Vec<(String, DataType)> =
        src.fields.iter().map(|f| (f.name.clone(), f.arrow_type().expect("checked at load"))).collect();
    let canon = |f: &Field, file: &str| -> Result<DataType> {
        if let Some((_, t)) = overrides.iter().find(|(n, _)| n == f.name()) {
            return Ok(t.clone());
        }
        match canonical(f.data_type()) {
            // SQL alone reads a timestamp without a zone as it is: no zone is made up for it;
            // and a decimal as a decimal (`DECIMAL(5, 0)` / 2 is 0.5, and one of 38 digits fits)
            Ok(_)
                if as_in_file
                    && matches!(
                        f.data_type(),
                        DataType::Timestamp(_, None) | DataType::Decimal128(..) | DataType::Decimal256(..)
                    ) =>
            {
                Ok(f.data_type().clone())
            }
            Ok(t) if as_in_file => Ok(crate::core::schema::finer_time_units(&t, f.data_type())),
            Ok(t) => Ok(t),
            Err(_) if as_in_file => Ok(f.data_type().clone()),
            // a column null in every row of a file takes the other files' type (checked at the end)
            Err(_) if f.data_type() == &DataType::Null => Ok(DataType::Null),
            // the source is read before any SQL: the way out is a declared type, or none
            Err(_) => Err(Error::config(file, unstored_type(f))),
        }
    };
    // a name twice in one file: one of the columns would be lost, or the table refused later
    // with no file named
    for (input, schema) in inputs.iter().zip(schemas) {
        let mut seen = std::collections::BTreeSet::new();
        if let Some(f) = schema.fields().iter().find(|f| !seen.insert(f.name())) {
            return Err(Error::config(
                &input.rel,
                format!("column `{}` appears more than once in the file; rename one of them", f.name()),
            ));
        }
        // and inside a struct: its members would be lost or refused the same way
        if let Some((f, m)) = schema
            .fields()
            .iter()
            .find_map(|f| crate::core::schema::nested_member_problem(f.data_type()).map(|m| (f, m)))
        {
            return Err(Error::config(
                &input.rel,
                format!("column `{}` {m}; rewrite the file with the members named apart", f.name()),
            ));
        }
    }
    let mut fields: Vec<Field> = Vec::new();
    // the file each column's type was taken from
    let mut typed_by: Vec<&str> = Vec::new();
    for f in schemas[0].fields() {
        fields.push(Field::new(f.name(), canon(f, &inputs[0].rel)?, true));
        typed_by.push(&inputs[0].rel);
    }
    let mut violations = Vec::new();
    // a problem of one file's columns, named by the file and the column
    let schema_problem = |file: &str, column: &str, message: String| Violation {
        scope: crate::core::report::Scope::Source,
        table: src.name.clone(),
        source: Some(SourceRef { file: file.to_string(), at: Position::Pointer(String::new()) }),
        path: column.to_string(),
        rule: "schema".into(),
        key: None,
        message,
        finding: None,
    };
    // SQL alone has no [[source.field]] and no cast before the table is read
    let cast_hint = if as_in_file {
        "query the files of each type apart (a glob or a folder each) and CAST in the SQL"
    } else {
        "declare the column's type ([[source.field]]) to cast every file to it"
    };
    // files whose column sets differ: a matter for the pipeline (columns = "union", or separate
    // sources), said for every file at once as for the other formats
    if src.columns == ColumnsPolicy::Same {
        let per_file: Vec<(String, std::collections::BTreeSet<String>)> = inputs
            .iter()
            .zip(schemas)
            .map(|(i, s)| (i.rel.clone(), s.fields().iter().map(|f| f.name().clone()).collect()))
            .collect();
        super::same_columns(context, &per_file)?;
    }
    for (input, schema) in inputs.iter().zip(schemas).skip(1) {
        for f in schema.fields() {
            let t = canon(f, &input.rel)?;
            match fields.iter().position(|g| g.name() == f.name()) {
                // a column null in every row of a file (Arrow's Null type) takes the type the other
                // files give it, as a JSON key null in every record does (a build: at the top
                // level, the only place it reads a Null type); any other difference is a clash
                Some(i) if fields[i].data_type() != &t => match merge_nulls(fields[i].data_type(), &t) {
                    Some(merged) => {
                        if &merged != fields[i].data_type() {
                            fields[i] = Field::new(f.name(), merged, true);
                            typed_by[i] = &input.rel;
                        }
                    }
                    None => violations.push(schema_problem(
                        &input.rel,
                        f.name(),
                        format!(
                            "{}: {} in {} vs {} in {}; {cast_hint}",
                            f.name(),
                            type_name(fields[i].data_type()),
                            typed_by[i],
                            type_name(&t),
                            input.rel
                        ),
                    )),
                },
                Some(_) => {}
                // a column of this file alone (`columns = "union"`: the others were checked above)
                None => {
                    fields.push(Field::new(f.name(), t, true));
                    typed_by.push(&input.rel);
                }
            }
        }
    }
    if !violations.is_empty() {
        return Err(Error::invalid(violations));
    }
    // a build stores no column without a type: one null in every row of every file needs one declared
    if !as_in_file && let Some((i, f)) = fields.iter().enumerate().find(|(_, f)| f.data_type() == &DataType::Null) {
        return Err(Error::config(typed_by[i], unstored_type(f)));
    }
    Ok(fields)
}

/// Why a Parquet source's column `f` of a type runpack does not store cannot be read, and
/// what to do.
fn unstored_type(f: &Field) -> String {
    let what = match f.data_type() {
        DataType::Null => {
            "is null in every row, so it has no type; declare its type with a [[source.field]]".to_string()
        }
        DataType::Decimal32(..) | DataType::Decimal64(..) | DataType::Decimal128(..) | DataType::Decimal256(..) => {
            "is a decimal, which runpack does not store; declare it with a [[source.field]] as `string` (its exact \
             text) or `number` (a 64-bit float, refused where that changes a value)"
                .to_string()
        }
        DataType::Map(..) => "is a map, which no runpack type holds; write the file with a list of {key, value} \
                              structs instead, or leave the column out of the file"
            .to_string(),
        other => format!(
            "has type {}, which runpack does not store; declare its type with a [[source.field]] if Arrow can cast it",
            type_name(other)
        ),
    };
    format!("column `{}` {what}", f.name())
}

/// Whether `dt` is, or holds, a timestamp without a time zone.
pub fn has_naive_timestamp(dt: &DataType) -> bool {
    crate::core::schema::type_contains(dt, &|t| matches!(t, DataType::Timestamp(_, None)))
}

/// A column of timestamps without a time zone, read as wall-clock times in `tz`: the same
/// unit, zoned UTC. A time that `tz` skips (a DST gap) or repeats (a DST fold) is null, with
/// its row (0-based) and why.
fn zone_naive(a: &ArrayRef, tz: chrono_tz::Tz) -> (ArrayRef, Vec<(usize, String)>) {
    use arrow::array::AsArray;
    use arrow::datatypes::{
        TimeUnit, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
    };
    use chrono::{Offset, TimeZone};
    let DataType::Timestamp(unit, None) = a.data_type() else { return (a.clone(), Vec::new()) };
    let per_sec: i64 = match unit {
        TimeUnit::Second => 1,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    };
    let values: Vec<Option<i64>> = match unit {
        TimeUnit::Second => a.as_primitive::<TimestampSecondType>().iter().collect(),
        TimeUnit::Millisecond => a.as_primitive::<TimestampMillisecondType>().iter().collect(),
        TimeUnit::Microsecond => a.as_primitive::<TimestampMicrosecondType>().iter().collect(),
        TimeUnit::Nanosecond => a.as_primitive::<TimestampNanosecondType>().iter().collect(),
    };
    let mut problems = Vec::new();
    let out: Vec<Option<i64>> = values
        .iter()
        .enumerate()
        .map(|(r, v)| {
            let v = (*v)?;
            let local = chrono::DateTime::from_timestamp(v.div_euclid(per_sec), 0)?.naive_utc();
            match tz.offset_from_local_datetime(&local) {
                chrono::LocalResult::Single(off) => {
                    let shift = i64::from(off.fix().local_minus_utc()).checked_mul(per_sec)?;
                    v.checked_sub(shift)
                }
                chrono::LocalResult::Ambiguous(..) => {
                    problems.push((r, format!("{local} happens twice in {tz} (a clock set back)")));
                    None
                }
                chrono::LocalResult::None => {
                    problems.push((r, format!("{local} does not exist in {tz} (a clock set forward)")));
                    None
                }
            }
        })
        .collect();
    let zoned: ArrayRef = match unit {
        TimeUnit::Second => Arc::new(arrow::array::TimestampSecondArray::from(out).with_timezone("UTC")),
        TimeUnit::Millisecond => Arc::new(arrow::array::TimestampMillisecondArray::from(out).with_timezone("UTC")),
        TimeUnit::Microsecond => Arc::new(arrow::array::TimestampMicrosecondArray::from(out).with_timezone("UTC")),
        TimeUnit::Nanosecond => Arc::new(arrow::array::TimestampNanosecondArray::from(out).with_timezone("UTC")),
    };
    (zoned, problems)
}

/// The violation of a Parquet file that does not read (`<file>: not readable as Parquet: …`,
/// rule `parquet`): the input's data is broken, as a JSON document that does not parse is.
fn unreadable(input: &InputFile, why: impl std::fmt::Display) -> Error {
    unreadable_at(input, Position::Pointer(String::new()), why)
}

/// [`unreadable`], at `at` (the 1-based row a failing batch starts at).
fn unreadable_at(input: &InputFile, at: Position, why: impl std::fmt::Display) -> Error {
    Error::source_violation(&input.rel, at, "", "parquet", format!("not readable as Parquet: {why}"))
}

/// What a batch of the Parquet file at `path` from `first_row` (1-based) that does not read
/// says after `why`, the reader's error: `why (column `b`, a batch of rows from row 8193 on)`,
/// with the column when reading each column alone finds the one that fails.
pub fn batch_failure(path: &std::path::Path, first_row: u64, why: &str) -> String {
    let column = failing_column(path, first_row).map(|c| format!("column `{c}`, ")).unwrap_or_default();
    format!("{why} ({column}a batch of rows from row {first_row} on)")
}

/// The first top-level column of the Parquet file at `path` whose batch of 8,192 rows from
/// `first_row` (1-based) does not read, each column read alone; `None` when each reads alone
/// or the file does not open. For naming what failed once a batch of every column did.
fn failing_column(path: &std::path::Path, first_row: u64) -> Option<String> {
    use parquet::arrow::ProjectionMask;
    use parquet::arrow::arrow_reader::{ArrowReaderMetadata, RowSelection, RowSelector};
    let file = File::open(path).ok()?;
    // the footer read once, for every column
    let meta = ArrowReaderMetadata::load(&file, Default::default()).ok()?;
    let skip = usize::try_from(first_row.saturating_sub(1)).ok()?;
    // a selection past the file's rows fails by itself: it would blame the first column
    let rows = usize::try_from(meta.metadata().file_metadata().num_rows()).ok()?;
    let take = rows.checked_sub(skip).filter(|&n| n > 0)?.min(8192);
    meta.schema().fields().iter().enumerate().find_map(|(i, field)| {
        let b = ParquetRecordBatchReaderBuilder::new_with_metadata(file.try_clone().ok()?, meta.clone());
        let mask = ProjectionMask::roots(b.parquet_schema(), [i]);
        let selection = RowSelection::from(vec![RowSelector::skip(skip), RowSelector::select(take)]);
        let read = crate::core::error::catch_panic(|| {
            b.with_projection(mask)
                .with_row_selection(selection)
                .with_batch_size(8192)
                .build()
                .and_then(|mut r| r.try_for_each(|b| b.map(drop)).map_err(Into::into))
        });
        matches!(read, Err(_) | Ok(Err(_))).then(|| field.name().clone())
    })
}

/// A value of one Parquet file that could not be cast.
#[derive(Debug, Clone)]
pub struct CastProblem {
    /// 1-based row number in the file.
    pub row: u64,
    /// The column's name.
    pub column: String,
    /// What is wrong, for the user.
    pub message: String,
    /// The value as found (see [`crate::stages::validate::cell_value`]), for a reject's record.
    pub found: serde_json::Value,
}

/// A non-finite value of a float column read from one Parquet file: NaN or an infinity stored
/// as such, or text read as one (`"NaN"`, `"inf"`, `"-Infinity"`).
#[derive(Debug, Clone)]
pub struct NonFiniteRead {
    /// 1-based row number in the file.
    pub row: u64,
    /// Where in the row: `$.loss`, `$.scores[2]`, `$.stats.max` (a JSONPath, as JSON's).
    pub path: String,
    /// The value as stored: the float's name (`NaN`, `Infinity`, `-Infinity`) or the text.
    pub found: String,
}

/// Reads one file, converted to `fields`; calls `sink` with each batch, the 1-based row
/// number of its first row, the values that could not be converted and the non-finite values
/// of its float columns. With `nonfinite` = [`NonFinite::Null`], those are null in the batch.
pub fn read(
    input: &InputFile,
    fields: &[Field],
    assume_timezone: Option<chrono_tz::Tz>,
    nonfinite: NonFinite,
    sink: &mut dyn FnMut(RecordBatch, u64, Vec<CastProblem>, Vec<NonFiniteRead>) -> Result<()>,
) -> Result<()> {
    if let Some(p) = lfs_pointer(&input.path) {
        return Err(lfs_pointer_error(&input.rel, &p));
    }
    let f = File::open(&input.path).map_err(|e| Error::io(&input.path, e))?;
    let stopped = |p| unreadable(input, format!("the Parquet reader stopped on {p}"));
    let mut reader = crate::core::error::catch_panic(|| {
        ParquetRecordBatchReaderBuilder::try_new(f).and_then(|b| b.with_batch_size(8192).build())
    })
    .map_err(stopped)?
    .map_err(|e| unreadable(input, e))?;
    let schema: SchemaRef = Arc::new(Schema::new(fields.to_vec()));
    let mut first_row = 1u64;
    // the reader panics on some corrupt pages: a violation at the rows of the batch, as an error is
    let failed = |first_row: u64, why: String| {
        unreadable_at(input, Position::Line(first_row), batch_failure(&input.path, first_row, &why))
    };
    while let Some(b) = crate::core::error::catch_panic(|| reader.next())
        .map_err(|p| failed(first_row, format!("the Parquet reader stopped on {p}")))?
    {
        let b = b.map_err(|e| failed(first_row, e.to_string()))?;
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(fields.len());
        let mut problems = Vec::new();
        let mut nonfinite_read = Vec::new();
        for f in fields {
            // a timestamp without a zone is a wall-clock time in the source's assume_timezone
            // (plan refuses one without it)
            let zoned = match (b.column_by_name(f.name()), assume_timezone) {
                (Some(c), Some(tz)) if matches!(c.data_type(), DataType::Timestamp(_, None)) => {
                    let (z, bad) = zone_naive(c, tz);
                    for (r, message) in bad {
                        problems.push(CastProblem {
                            row: first_row + r as u64,
                            column: f.name().clone(),
                            message,
                            found: crate::stages::validate::cell_value(c, r),
                        });
                    }
                    Some(z)
                }
                (c, _) => c.cloned(),
            };
            let col = match zoned.as_ref() {
                None => new_null_array(f.data_type(), b.num_rows()),
                Some(c) => match crate::core::schema::conform(c, f.data_type()) {
                    Ok(a) => a,
                    Err(_) => {
                        // the rows whose value does not fit are named; the rest are kept
                        let (a, lost) = crate::core::schema::conform_each(c, f.data_type())
                            .map_err(|e| Error::format(&input.rel, format!("column `{}`: {e}", f.name())))?;
                        for r in (0..a.len()).filter(|&r| lost[r]) {
                            let v = arrow::util::display::array_value_to_string(c, r).unwrap_or_default();
                            problems.push(CastProblem {
                                row: first_row + r as u64,
                                column: f.name().clone(),
                                message: format!(
                                    "value {v:?} ({}) cannot be stored as {} without changing it",
                                    type_name(c.data_type()),
                                    type_name(f.data_type())
                                ),
                                found: crate::stages::validate::cell_value(c, r),
                            });
                        }
                        a
                    }
                },
            };
            let col = match zoned.as_ref() {
                Some(c) if f.data_type().is_floating() => {
                    let (col, rows) = nonfinite_rows(c, col, nonfinite).map_err(|e| Error::format(&input.rel, e))?;
                    let path = super::path::render(&[super::path::Seg::Key(f.name().clone())]);
                    nonfinite_read.extend(rows.into_iter().map(|(r, found)| NonFiniteRead {
                        row: first_row + r as u64,
                        path: path.clone(),
                        found,
                    }));
                    col
                }
                // floats in lists and structs, at any depth
                Some(_) if has_nonfinite(&col) => {
                    let slots: Vec<Slot> =
                        (0..col.len()).map(|r| Some((r, vec![super::path::Seg::Key(f.name().clone())]))).collect();
                    let mut found = Vec::new();
                    let col = nonfinite_nested(&col, &slots, nonfinite, &mut found)
                        .map_err(|e| Error::format(&input.rel, e))?;
                    nonfinite_read.extend(found.into_iter().map(|(r, path, found)| NonFiniteRead {
                        row: first_row + r as u64,
                        path,
                        found,
                    }));
                    col
                }
                _ => col,
            };
            cols.push(col);
        }
        // in the file's order: row by row, columns in turn
        nonfinite_read.sort_by_key(|v| v.row);
        let n = b.num_rows() as u64;
        let out = RecordBatch::try_new(schema.clone(), cols).map_err(|e| Error::format(&input.rel, e))?;
        sink(out, first_row, problems, nonfinite_read)?;
        first_row += n;
    }
    Ok(())
}

/// The rows of the float column `col` (converted from `found`) that hold NaN or an infinity,
/// each with its value as `found` holds it; with [`NonFinite::Null`], `col` with those rows
/// null.
///
/// Errors: Arrow's, when the column cannot be masked.
fn nonfinite_rows(
    found: &ArrayRef,
    col: ArrayRef,
    nonfinite: NonFinite,
) -> std::result::Result<(ArrayRef, Vec<(usize, String)>), arrow::error::ArrowError> {
    use arrow::array::AsArray;
    let floats = arrow::compute::cast(&col, &DataType::Float64)?;
    let floats = floats.as_primitive::<arrow::datatypes::Float64Type>();
    let rows: Vec<(usize, String)> = (0..floats.len())
        .filter(|&r| floats.is_valid(r) && !floats.value(r).is_finite())
        .map(|r| {
            let v = floats.value(r);
            let name = match () {
                _ if found.data_type().is_floating() && v.is_nan() => "NaN".to_string(),
                _ if found.data_type().is_floating() => if v > 0.0 { "Infinity" } else { "-Infinity" }.to_string(),
                _ => {
                    // text as stored; quoted where spaces or control characters would not show
                    let t = arrow::util::display::array_value_to_string(found, r).unwrap_or_default();
                    if t.trim() != t || t.chars().any(char::is_control) {
                        serde_json::Value::String(t).to_string()
                    } else {
                        t
                    }
                }
            };
            (r, name)
        })
        .collect();
    if rows.is_empty() || nonfinite == NonFinite::Ieee {
        return Ok((col, rows));
    }
    let mut mask = vec![false; col.len()];
    for (r, _) in &rows {
        mask[*r] = true;
    }
    let col = arrow::compute::nullif(&col, &arrow::array::BooleanArray::from(mask))?;
    Ok((col, rows))
}

/// Whether `a` holds a NaN or an infinity in a float inside a list or struct (at any depth).
fn has_nonfinite(a: &ArrayRef) -> bool {
    use arrow::array::AsArray;
    match a.data_type() {
        DataType::List(_) => has_nonfinite(a.as_list::<i32>().values()),
        DataType::LargeList(_) => has_nonfinite(a.as_list::<i64>().values()),
        DataType::FixedSizeList(_, _) => has_nonfinite(a.as_fixed_size_list().values()),
        DataType::Struct(_) => a.as_struct().columns().iter().any(has_nonfinite),
        dt if dt.is_floating() => arrow::compute::cast(a, &DataType::Float64).is_ok_and(|f| {
            let f = f.as_primitive::<arrow::datatypes::Float64Type>();
            f.iter().any(|v| v.is_some_and(|v| !v.is_finite()))
        }),
        _ => false,
    }
}

/// A slot of a nested column: its row in the batch and its path there, or `None` for a value
/// no row reaches (past a list's last offset).
type Slot = Option<(usize, Vec<super::path::Seg>)>;

/// The NaN and infinities of `a` at any depth of lists and structs, each added to `found` with
/// its row, its path (`$.scores[2]`) and its name, given each of `a`'s values' slot; with
/// [`NonFinite::Null`], `a` with them null.
///
/// Errors: Arrow's, when a column cannot be masked or put together again.
fn nonfinite_nested(
    a: &ArrayRef,
    slots: &[Slot],
    nonfinite: NonFinite,
    found: &mut Vec<(usize, String, String)>,
) -> std::result::Result<ArrayRef, arrow::error::ArrowError> {
    use super::path::{Seg, render};
    use arrow::array::{AsArray, FixedSizeListArray, LargeListArray, ListArray, StructArray};
    // the slots of a list's values, from its offsets
    fn inner<O: arrow::array::OffsetSizeTrait>(offsets: &[O], len: usize, slots: &[Slot]) -> Vec<Slot> {
        let mut out: Vec<Slot> = vec![None; len];
        for (r, w) in offsets.windows(2).enumerate() {
            let Some(Some((row, path))) = slots.get(r) else { continue };
            for (k, i) in (w[0].as_usize()..w[1].as_usize()).enumerate() {
                if let Some(o) = out.get_mut(i) {
                    let mut p = path.clone();
                    p.push(Seg::Index(k));
                    *o = Some((*row, p));
                }
            }
        }
        out
    }
    if !has_nonfinite(a) && !a.data_type().is_floating() {
        return Ok(a.clone());
    }
    Ok(match a.data_type() {
        DataType::List(f) => {
            let l = a.as_list::<i32>();
            let values = nonfinite_nested(l.values(), &inner(l.offsets(), l.values().len(), slots), nonfinite, found)?;
            Arc::new(ListArray::try_new(f.clone(), l.offsets().clone(), values, l.nulls().cloned())?)
        }
        DataType::LargeList(f) => {
            let l = a.as_list::<i64>();
            let values = nonfinite_nested(l.values(), &inner(l.offsets(), l.values().len(), slots), nonfinite, found)?;
            Arc::new(LargeListArray::try_new(f.clone(), l.offsets().clone(), values, l.nulls().cloned())?)
        }
        DataType::FixedSizeList(f, n) => {
            let l = a.as_fixed_size_list();
            let size = (*n).max(0) as usize;
            let offsets: Vec<i32> = (0..=slots.len()).map(|r| (r * size) as i32).collect();
            let values = nonfinite_nested(l.values(), &inner(&offsets, l.values().len(), slots), nonfinite, found)?;
            Arc::new(FixedSizeListArray::try_new(f.clone(), *n, values, l.nulls().cloned())?)
        }
        DataType::Struct(fields) => {
            let st = a.as_struct();
            let mut children = Vec::with_capacity(fields.len());
            for (f, c) in fields.iter().zip(st.columns()) {
                let member: Vec<Slot> = slots
                    .iter()
                    .map(|s| {
                        s.as_ref().map(|(row, path)| {
                            let mut p = path.clone();
                            p.push(Seg::Key(f.name().clone()));
                            (*row, p)
                        })
                    })
                    .collect();
                children.push(nonfinite_nested(c, &member, nonfinite, found)?);
            }
            Arc::new(StructArray::try_new(fields.clone(), children, st.nulls().cloned())?)
        }
        dt if dt.is_floating() => {
            let (col, rows) = nonfinite_rows(a, a.clone(), nonfinite)?;
            for (i, name) in rows {
                if let Some(Some((row, path))) = slots.get(i) {
                    found.push((*row, render(path), name));
                }
            }
            col
        }
        _ => a.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `rows` rows of two columns, `a` (Int64) and `b` (text).
    fn file(dir: &std::path::Path, rows: i64) -> InputFile {
        let path = dir.join("f.parquet");
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Utf8, false),
        ]));
        let a = arrow::array::Int64Array::from_iter_values(0..rows);
        let b = arrow::array::StringArray::from_iter_values((0..rows).map(|i| format!("value {i}")));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(a), Arc::new(b)]).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(File::create(&path).unwrap(), schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        InputFile { rel: "f.parquet".into(), path, captures: Vec::new() }
    }

    #[test]
    fn a_file_that_reads_blames_no_column_whatever_batch_is_asked() {
        let dir = tempfile::tempdir().unwrap();
        let input = file(dir.path(), 10_000);
        // the first batch, the last (shorter than 8,192 rows), and rows past the end
        for first_row in [1, 8193, 9_999, 20_000] {
            assert_eq!(failing_column(&input.path, first_row), None, "from row {first_row}");
        }
    }

    #[test]
    fn the_column_whose_pages_are_corrupt_is_the_one_blamed() {
        let dir = tempfile::tempdir().unwrap();
        let input = file(dir.path(), 10_000);
        let meta = ParquetRecordBatchReaderBuilder::try_new(File::open(&input.path).unwrap()).unwrap();
        let (start, len) = meta.metadata().row_group(0).column(1).byte_range();
        let mut bytes = std::fs::read(&input.path).unwrap();
        // the middle of column b's chunk, past its first page header
        let from = usize::try_from(start + len / 3).unwrap();
        bytes[from..from + 64].fill(0xFF);
        std::fs::write(&input.path, bytes).unwrap();
        assert_eq!(failing_column(&input.path, 1).as_deref(), Some("b"));
    }
}
