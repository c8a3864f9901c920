//! Validation of an output table against its Table Schema.
//!
//! In: the table's rows as sorted record batches (sorted by primary key, then by source file
//! and line), the [`TableSchema`], the duplicate-key policy, and the key sets of the tables its
//! foreign keys reference. Out: the rows to keep, and for every other row a [`Violation`]
//! (or, with [`OnInvalid::Reject`], a line in `rejects/<table>.jsonl`).
//!
//! Rules checked (Frictionless Table Schema v1): `required`, `unique`, `enum`, `pattern` (whole
//! value), `minimum`, `maximum`, `minLength`, `maxLength`, `primaryKey` (unique and not null),
//! and the same value rules but `unique` on each item of an `array` (its `items` descriptor;
//! a runpack extension: the item is named `field[k]`, k from 0),
//! `foreignKeys` (every non-null key exists in the referenced table). Each violation names the
//! table, the row's primary key, the field, the rule, the value found and the raw
//! `_source_file:_source_line` the row came from (or the first of its `source_files`).
//!
//! Memory: rows stream through; only the current primary-key group, the values of `unique`
//! columns and the referenced key sets are held.

// Rows are checked by index across several parallel arrays (columns, reasons, sources).
#![allow(clippy::needless_range_loop)]

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::row::{OwnedRow, RowConverter, SortField};
use serde_json::Value;

use crate::core::error::{Error, Result};
use crate::core::names::split_problem;
use crate::core::report::{BuildReport, Finding, Position, SourceRef, Violation};
use crate::core::schema::TableSchema;
use crate::core::spec::DuplicatePolicy;
use crate::core::values::Num;
use crate::stages::ingest::OnInvalid;
use crate::stages::rejects::{RejectBody, Rejects};

/// Keys of a referenced table, for foreign-key checks.
#[derive(Debug, Default)]
pub struct KeySet {
    /// Arrow types of the key columns.
    pub types: Vec<DataType>,
    /// Row-encoded keys.
    pub keys: HashSet<OwnedRow>,
}

/// Rows of a step held back together, at most, for records kept whole; past it the whole key
/// tells where rows held back end.
const WHOLE_RECORD_ROWS: usize = 16_384;

/// A row a keep rule set aside: why, and the place of the row kept in its stead (as said,
/// and as read).
#[derive(Debug, Clone)]
struct Superseded {
    why: String,
    by: String,
    by_at: Option<SourceRef>,
    /// Set aside with its record (`record_columns`), not for a row of its own key: no row
    /// kept holds its key.
    whole: bool,
}

/// Checks the rows of one table as they stream by.
pub struct Validator<'a> {
    table: String,
    schema: &'a TableSchema,
    arrow: SchemaRef,
    policy: DuplicatePolicy,
    on_invalid: OnInvalid,
    pk_idx: Vec<usize>,
    pk_conv: Option<RowConverter>,
    /// The key columns that tell where rows held back end, and their converter: the table's
    /// `record_columns` (the rows of a step) when the rule keeps records whole
    /// ([`Validator::with_record_columns`]), else the key.
    carry_idx: Vec<usize>,
    carry_conv: Option<RowConverter>,
    carry: Option<RecordBatch>,
    /// A step of more rows than [`WHOLE_RECORD_ROWS`] was said (once per table).
    parts_said: bool,
    /// The column whose values order a key's rows for a keep rule, before their file and
    /// line, and its name ([`Validator::with_order_by`]).
    order_by: Option<(usize, String)>,
    patterns: BTreeMap<usize, regex::Regex>,
    /// Compiled `pattern` of the `items` of array columns, by column index.
    item_patterns: BTreeMap<usize, regex::Regex>,
    unique: BTreeMap<usize, (RowConverter, HashSet<OwnedRow>)>,
    /// Foreign keys: the key's columns, the referenced table and columns as written in
    /// messages (`checkpoints(tinker_uri)`), the referenced keys, and their row converter.
    fks: Vec<(Vec<usize>, String, &'a KeySet, RowConverter)>,
    collect_keys: Vec<(Vec<String>, Vec<usize>, RowConverter, KeySet)>,
    /// The split column and the allowed split names (empty: any loadable name).
    split: Option<(usize, Vec<String>)>,
    /// The split names seen, by their lower case: two that differ only in case would name one
    /// file on a case-insensitive filesystem.
    split_cases: BTreeMap<String, String>,
    /// Rows kept.
    pub rows_kept: u64,
}

impl<'a> Validator<'a> {
    /// Checks column `column` as the table's split column too: a row whose split name is null,
    /// not loadable or not among `allowed` breaks rule `split` (reported, or rejected with
    /// `--on-invalid reject`).
    pub fn with_split(mut self, column: usize, allowed: Vec<String>) -> Self {
        self.split = Some((column, allowed));
        self
    }

    /// A validator for `table`. `refs` holds the key sets of referenced tables by (table,
    /// columns); `collect` lists the column sets whose keys later tables reference.
    pub fn new(
        table: &str,
        schema: &'a TableSchema,
        arrow: SchemaRef,
        policy: DuplicatePolicy,
        on_invalid: OnInvalid,
        refs: &'a BTreeMap<(String, Vec<String>), KeySet>,
        collect: Vec<Vec<String>>,
    ) -> Result<Self> {
        let idx = |name: &str| -> Result<usize> {
            arrow.index_of(name).map_err(|_| Error::config(format!("table {table}"), format!("no column `{name}`")))
        };
        let pk_idx: Vec<usize> = schema.primary_key.iter().map(|k| idx(k)).collect::<Result<_>>()?;
        let converter_of = |idx: &[usize]| -> Result<Option<RowConverter>> {
            if idx.is_empty() {
                return Ok(None);
            }
            converter(&idx.iter().map(|&i| arrow.field(i).data_type().clone()).collect::<Vec<_>>()).map(Some)
        };
        let pk_conv = converter_of(&pk_idx)?;
        // held back by the whole key, unless `with_record_columns` names a step
        let carry_idx = pk_idx.clone();
        let carry_conv = converter_of(&carry_idx)?;
        let mut patterns = BTreeMap::new();
        let mut item_patterns = BTreeMap::new();
        let mut unique = BTreeMap::new();
        let compile =
            |p: &str| regex::Regex::new(&format!("^(?:{p})$")).map_err(|e| Error::config(table, e.to_string()));
        for (i, f) in schema.fields.iter().enumerate() {
            if let Some(p) = &f.constraints.pattern {
                patterns.insert(i, compile(p)?);
            }
            if let Some(p) = f.items.as_ref().and_then(|it| it.constraints.pattern.as_ref()) {
                item_patterns.insert(i, compile(p)?);
            }
            if f.constraints.unique {
                unique.insert(i, (converter(&[arrow.field(i).data_type().clone()])?, HashSet::new()));
            }
        }
        let mut fks = Vec::new();
        for fk in &schema.foreign_keys {
            let cols: Vec<usize> = fk.fields.iter().map(|k| idx(k)).collect::<Result<_>>()?;
            let target =
                if fk.reference.resource.is_empty() { table.to_string() } else { fk.reference.resource.clone() };
            let set = refs.get(&(target.clone(), fk.reference.fields.clone())).ok_or_else(|| {
                Error::config(
                    format!("table {table}"),
                    format!("foreign key references `{target}`, which is not an earlier table of this pipeline"),
                )
            })?;
            // a key matches a value of its own type only: a cast would make "1e0" the number
            // 1, or 1.5 the integer 1 (Frictionless readers compare typed values)
            let kind = |dt: &DataType| {
                let d = crate::core::schema::FieldDescriptor::from_arrow(&arrow::datatypes::Field::new(
                    "",
                    dt.clone(),
                    true,
                ));
                match d.format {
                    Some(f) => format!("{} ({f}, {})", d.field_type, crate::core::schema::type_name(dt)),
                    None => format!("{} ({})", d.field_type, crate::core::schema::type_name(dt)),
                }
            };
            for (j, (&c, name)) in cols.iter().zip(&fk.fields).enumerate() {
                let (here, there) = (arrow.field(c).data_type(), &set.types[j]);
                if here != there {
                    return Err(Error::config(
                        format!("table {table}"),
                        format!(
                            "foreign key column `{name}` is {}, and the column `{}` of table {target} it references \
                             is {}; a key only matches values of its own type: declare both with one type",
                            kind(here),
                            fk.reference.fields[j],
                            kind(there)
                        ),
                    ));
                }
            }
            // named with the columns it references: `checkpoints(tinker_uri)`
            let target = format!("{target}({})", fk.reference.fields.join(", "));
            fks.push((cols, target, set, converter(&set.types)?));
        }
        let mut collect_keys = Vec::new();
        for cols in collect {
            let idxs: Vec<usize> = cols.iter().map(|k| idx(k)).collect::<Result<_>>()?;
            let types: Vec<DataType> = idxs.iter().map(|&i| arrow.field(i).data_type().clone()).collect();
            collect_keys.push((cols, idxs.clone(), converter(&types)?, KeySet { types, keys: HashSet::new() }));
        }
        Ok(Validator {
            table: table.to_string(),
            schema,
            arrow,
            policy,
            on_invalid,
            pk_idx,
            pk_conv,
            carry_idx,
            carry_conv,
            carry: None,
            parts_said: false,
            order_by: None,
            patterns,
            item_patterns,
            unique,
            fks,
            collect_keys,
            split: None,
            split_cases: BTreeMap::new(),
            rows_kept: 0,
        })
    }

    /// Keeps the records of a step whole under a keep rule: `columns` (a table's
    /// `record_columns`), the primary key's first columns, name a step; rows are held back by
    /// them, so that a step's rows are checked together. Nothing changes for the rule `error`
    /// or no columns.
    ///
    /// Errors: [`Error::Config`] when `columns` are not the primary key's first columns, or are
    /// all of it.
    pub fn with_record_columns(mut self, columns: &[String]) -> Result<Self> {
        if columns.is_empty() || self.policy == DuplicatePolicy::Error {
            return Ok(self);
        }
        let key = &self.schema.primary_key;
        if key.is_empty() {
            return Err(Error::config(
                format!("table {}", self.table),
                format!(
                    "record_columns [{}] name the first columns of a primary key, and the table has none: declare its \
                     primaryKey in the table's schema, or leave record_columns out",
                    columns.join(", ")
                ),
            ));
        }
        if columns.len() >= key.len() || key[..columns.len()] != *columns {
            return Err(Error::config(
                format!("table {}", self.table),
                format!(
                    "record_columns [{}] must be the primary key's first columns, fewer than all of it (the key: \
                     [{}]): the rows of a step share them, and differ in the rest",
                    columns.join(", "),
                    key.join(", ")
                ),
            ));
        }
        self.carry_idx = self.pk_idx[..columns.len()].to_vec();
        let types: Vec<DataType> = self.carry_idx.iter().map(|&i| self.arrow.field(i).data_type().clone()).collect();
        self.carry_conv = Some(converter(&types)?);
        Ok(self)
    }

    /// Orders the rows of a key by column `column` (a table's `order_by`) for a keep rule: the
    /// last (or first) by its value is kept, rows of equal values by their file and line. A row
    /// of a duplicated key whose value there is null cannot be placed: a violation of the key.
    /// Nothing changes for the rule `error` (the column is checked all the same) or no column.
    ///
    /// Errors: [`Error::Config`] when the table has no such column, or its type has no order
    /// (a list, a map, a struct), or the table has no primary key.
    pub fn with_order_by(mut self, column: Option<&str>) -> Result<Self> {
        let Some(name) = column else { return Ok(self) };
        let at = format!("table {}", self.table);
        if self.schema.primary_key.is_empty() {
            return Err(Error::config(
                at,
                format!(
                    "order_by = \"{name}\" orders the rows that share a primary key, and the table has none: declare \
                     its primaryKey in the table's schema, or leave order_by out"
                ),
            ));
        }
        let Ok(i) = self.arrow.index_of(name) else {
            return Err(Error::config(
                at,
                format!("order_by names `{name}`, which is no column of the table; name a column of its query"),
            ));
        };
        let t = self.arrow.field(i).data_type();
        if t.is_nested() {
            return Err(Error::config(
                at,
                format!(
                    "order_by names `{name}`, a column of type {t}, whose values have no order; name a number, time or text"
                ),
            ));
        }
        if self.policy != DuplicatePolicy::Error {
            self.order_by = Some((i, name.to_string()));
        }
        Ok(self)
    }

    /// Checks a batch; returns the rows to write (possibly fewer). With a primary key, rows
    /// are held back until the next call shows where their last key group ends.
    pub fn push(
        &mut self,
        batch: RecordBatch,
        report: &mut BuildReport,
        rejects: &mut Rejects,
    ) -> Result<Option<RecordBatch>> {
        if batch.num_rows() == 0 {
            return Ok(None);
        }
        let Some(conv) = &self.carry_conv else { return self.process(batch, report, rejects).map(Some) };
        // the rows held back are processed on their own when the new batch starts another
        // key group (the common case, which copies nothing); a group that goes on across the
        // edge is joined up first
        let batch = match self.carry.take() {
            None => {
                self.carry = Some(batch);
                return Ok(None);
            }
            Some(held) => {
                let key = |b: &RecordBatch, row: usize| {
                    conv.convert_columns(&self.carry_columns(&b.slice(row, 1)))
                        .map_err(|e| Error::format(&self.table, e))
                };
                if key(&held, held.num_rows() - 1)?.row(0) != key(&batch, 0)?.row(0) {
                    self.carry = Some(batch);
                    return self.process(held, report, rejects).map(Some);
                }
                arrow::compute::concat_batches(&self.arrow, &[held, batch])
                    .map_err(|e| Error::format(&self.table, e))?
            }
        };
        // the last key group of the joined rows is held back in turn
        let rows = conv.convert_columns(&self.carry_columns(&batch)).map_err(|e| Error::format(&self.table, e))?;
        let last_group = |rows: &arrow::row::Rows| {
            let mut cut = batch.num_rows() - 1;
            while cut > 0 && rows.row(cut) == rows.row(cut - 1) {
                cut -= 1;
            }
            cut
        };
        let mut cut = last_group(&rows);
        // a step of more rows than that: the whole key tells where to cut, so that memory stays
        // bounded (its records are then checked in parts)
        if batch.num_rows() - cut > WHOLE_RECORD_ROWS
            && let Some(pk) = &self.pk_conv
        {
            cut =
                last_group(&pk.convert_columns(&self.key_columns(&batch)).map_err(|e| Error::format(&self.table, e))?);
            // said once: a stopped attempt's rows of such a step may stay beside the later's
            if !self.parts_said {
                self.parts_said = true;
                let step = render_key(&self.schema.primary_key[..self.carry_idx.len()], &self.carry_idx, &batch, cut);
                let at = SourceColumn::find(&batch).at(cut);
                report.warn(
                    &self.table,
                    "record-in-parts",
                    at,
                    format!(
                        "table {}: the step ({step}) has more than {} rows: its records are kept or set aside in \
                         parts (record_columns), so a stopped attempt's rows of a metric the later attempt did not log \
                         at such a step may stay beside the later attempt's",
                        self.table,
                        crate::core::numbers::group_digits(WHOLE_RECORD_ROWS as u64)
                    ),
                );
            }
        }
        self.carry = Some(batch.slice(cut, batch.num_rows() - cut));
        if cut == 0 {
            return Ok(None);
        }
        self.process(batch.slice(0, cut), report, rejects).map(Some)
    }

    /// Processes what is held back; call once after the last batch.
    pub fn finish(&mut self, report: &mut BuildReport, rejects: &mut Rejects) -> Result<Option<RecordBatch>> {
        match self.carry.take() {
            Some(c) => self.process(c, report, rejects).map(Some),
            None => Ok(None),
        }
    }

    /// The key sets of this table's referenced column sets (after the last batch).
    pub fn take_keys(&mut self) -> Vec<(Vec<String>, KeySet)> {
        std::mem::take(&mut self.collect_keys).into_iter().map(|(cols, _, _, k)| (cols, k)).collect()
    }

    fn key_columns(&self, b: &RecordBatch) -> Vec<ArrayRef> {
        self.pk_idx.iter().map(|&i| key_value(b.column(i))).collect()
    }

    fn carry_columns(&self, b: &RecordBatch) -> Vec<ArrayRef> {
        self.carry_idx.iter().map(|&i| key_value(b.column(i))).collect()
    }

    fn process(&mut self, b: RecordBatch, report: &mut BuildReport, rejects: &mut Rejects) -> Result<RecordBatch> {
        let n = b.num_rows();
        let mut reasons: Reasons = vec![Vec::new(); n];
        let mut superseded: Vec<Option<Superseded>> = vec![None; n];
        let sources = SourceColumn::find(&b);
        self.field_problems(&b, &mut reasons);
        self.split_problems(&b, &mut reasons)?;
        self.foreign_key_problems(&b, &mut reasons)?;
        self.key_problems(&b, &sources, &mut reasons, &mut superseded)?;
        let out = self.act(&b, &sources, &reasons, &superseded, report, rejects)?;
        for (_, idxs, conv, set) in &mut self.collect_keys {
            let cols: Vec<ArrayRef> = idxs.iter().map(|&i| key_value(out.column(i))).collect();
            let rows = conv.convert_columns(&cols).map_err(|e| Error::format(&self.table, e))?;
            for r in 0..out.num_rows() {
                set.keys.insert(rows.row(r).owned());
            }
        }
        self.rows_kept += out.num_rows() as u64;
        Ok(out)
    }

    /// Each field's constraints (and its items'), and what the conversion guarantees of
    /// stored values, row by row.
    fn field_problems(&self, b: &RecordBatch, reasons: &mut Reasons) {
        let n = b.num_rows();
        for (i, f) in self.schema.fields.iter().enumerate() {
            let col = b.column(i);
            let c = &f.constraints;
            let stored_checks = f.needs_stored_checks();
            // a column with no rule on its values, and no null where one is refused, has
            // nothing to say: not visited cell by cell
            let must = c.required || self.schema.primary_key.contains(&f.name);
            let items = f.items.as_deref().is_some_and(|it| !it.constraints.is_empty());
            if !has_value_rules(c) && !stored_checks && !items && (!must || col.null_count() == 0) {
                continue;
            }
            for r in 0..n {
                if col.is_null(r) {
                    if must {
                        reasons[r].push(Reason::new(
                            f.name.clone(),
                            "required",
                            "value is null but the field is required".into(),
                        ));
                    }
                    continue;
                }
                let pattern = self.patterns.get(&i);
                for (rule, message) in value_problems(c, f.is_json_text(), pattern, col, r) {
                    reasons[r].push(Reason::new(f.name.clone(), rule, message));
                }
                // what the conversion guarantees of values, which a table's SQL can break: JSON
                // text that is JSON, dates and datetimes in years 1 to 9999 (at any depth)
                if stored_checks {
                    stored_value_problems(f, col, r, &f.name, &mut |at, message| {
                        reasons[r].push(Reason::new(at, "type", message))
                    });
                }
                // the items of an array, each checked against the items' constraints
                if let Some(items) = f.items.as_deref().filter(|it| !it.constraints.is_empty())
                    && let Some(list) = col.as_list_opt::<i32>()
                {
                    let values = list.values();
                    let offsets = list.value_offsets();
                    let pattern = self.item_patterns.get(&i);
                    for (k, j) in (offsets[r] as usize..offsets[r + 1] as usize).enumerate() {
                        let at = format!("{}[{k}]", f.name);
                        if values.is_null(j) {
                            if items.constraints.required {
                                reasons[r].push(Reason::new(
                                    at,
                                    "required",
                                    "item is null but items are required".into(),
                                ));
                            }
                            continue;
                        }
                        for (rule, message) in
                            value_problems(&items.constraints, items.is_json_text(), pattern, values, j)
                        {
                            reasons[r].push(Reason::new(at.clone(), rule, message));
                        }
                    }
                }
            }
        }
    }

    /// Split names: valid, declared, and not differing from another only in case.
    fn split_problems(&mut self, b: &RecordBatch, reasons: &mut Reasons) -> Result<()> {
        if let Some((ci, allowed)) = &self.split {
            let names =
                arrow::compute::cast(b.column(*ci), &DataType::Utf8).map_err(|e| Error::format(&self.table, e))?;
            let names = names.as_string::<i32>();
            for (r, why) in reasons.iter_mut().enumerate() {
                let name = names.is_valid(r).then(|| names.value(r));
                if let Some(message) = split_problem(name, allowed) {
                    why.push(Reason::new(self.arrow.field(*ci).name().clone(), "split", message));
                } else if let Some(name) = name {
                    match self.split_cases.get(&name.to_lowercase()) {
                        Some(first) if first != name => why.push(Reason::new(
                            self.arrow.field(*ci).name().clone(),
                            "split",
                            format!(
                                "splits {first:?} and {name:?} differ only in case: their files would be one file \
                                 on a case-insensitive filesystem (macOS, Windows); give each split its own name"
                            ),
                        )),
                        Some(_) => {}
                        None => {
                            self.split_cases.insert(name.to_lowercase(), name.to_string());
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Foreign keys: each non-null key matches a row of the referenced table.
    fn foreign_key_problems(&self, b: &RecordBatch, reasons: &mut Reasons) -> Result<()> {
        let n = b.num_rows();
        for (cols, target, set, conv) in &self.fks {
            let arrays: Vec<ArrayRef> = cols
                .iter()
                .zip(&set.types)
                .map(|(&c, t)| arrow::compute::cast(b.column(c), t).map(|a| key_value(&a)))
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| Error::format(&self.table, e))?;
            let rows = conv.convert_columns(&arrays).map_err(|e| Error::format(&self.table, e))?;
            for r in 0..n {
                // a key that is null in every part refers to nothing; one null in some parts
                // must match a referenced row that is null in the same parts (as Frictionless
                // readers check it)
                if cols.iter().all(|&c| b.column(c).is_null(r)) {
                    continue;
                }
                // NaN equals no value, a referenced NaN included (as Frictionless readers check it)
                let nan = arrays.iter().any(|a| is_nan_at(a, r));
                if nan || !set.keys.contains(&rows.row(r).owned()) {
                    let names: Vec<&str> = cols.iter().map(|&c| self.schema.fields[c].name.as_str()).collect();
                    let vals: Vec<String> = cols.iter().map(|&c| cell_json(b.column(c), r).to_string()).collect();
                    let why = if nan { " (NaN equals no value)" } else { "" };
                    reasons[r].push(Reason::new(
                        names.join(", "),
                        "foreignKey",
                        format!("value {} has no matching row in table {target}{why}", vals.join(", ")),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Primary-key groups (duplicates refused, or chosen among by the table's rule, marking
    /// the others `superseded`), then unique columns.
    fn key_problems(
        &mut self,
        b: &RecordBatch,
        sources: &SourceColumn,
        reasons: &mut Reasons,
        superseded: &mut [Option<Superseded>],
    ) -> Result<()> {
        let n = b.num_rows();
        // each unique column's values in row format, for the checks below
        let unique_rows: Vec<(usize, arrow::row::Rows)> = self
            .unique
            .iter()
            .map(|(&i, (conv, _))| {
                conv.convert_columns(&[key_value(b.column(i))])
                    .map(|rows| (i, rows))
                    .map_err(|e| Error::format(&self.table, e))
            })
            .collect::<Result<_>>()?;
        let rejecting = self.on_invalid == OnInvalid::Reject;
        // primary key groups, in row order; each group's rows are checked for unique values
        // once the duplicate-key rule has chosen among them (among the rows of their records,
        // when records are kept whole: see `supersede_whole_records`)
        if let Some(conv) = &self.pk_conv {
            let key_columns = self.key_columns(b);
            let rows = conv.convert_columns(&key_columns).map_err(|e| Error::format(&self.table, e))?;
            let records = match &self.carry_conv {
                Some(c) if self.carry_idx.len() < self.pk_idx.len() => {
                    Some(c.convert_columns(&self.carry_columns(b)).map_err(|e| Error::format(&self.table, e))?)
                }
                _ => None,
            };
            let mut records_start = 0;
            let mut start = 0;
            while start < n {
                let mut end = start + 1;
                while end < n && rows.row(end) == rows.row(start) {
                    end += 1;
                }
                {
                    if end - start > 1 {
                        let places: Vec<String> = (start..end)
                            .map(|r| {
                                sources.at(r).map(|s| s.to_string()).unwrap_or_else(|| {
                                    "a row without _source_file/_source_line (select them to name raw lines)"
                                        .to_string()
                                })
                            })
                            .collect();
                        match self.policy {
                            DuplicatePolicy::Error => {
                                // different rows a query made of one raw line: no keep rule can
                                // choose among them
                                let same_line = sources.at(start).is_some()
                                    && places.iter().all(|p| *p == places[0])
                                    && !same_rows(b, &(start..end).collect::<Vec<_>>())?;
                                // rows of one raw line say the same places: each says its rank too
                                let places_repeat =
                                    places.iter().collect::<std::collections::BTreeSet<_>>().len() < places.len();
                                // with --on-invalid reject, a row set aside for its own reasons
                                // makes no valid row a duplicate: the one valid row is kept (the
                                // others say the key they shared)
                                // (a `unique` value a row kept before holds is such a reason)
                                if rejecting {
                                    for r in start..end {
                                        if reasons[r].is_empty() {
                                            let taken = unique_reasons(&self.unique, &unique_rows, self.schema, b, r);
                                            reasons[r].extend(taken);
                                        }
                                    }
                                }
                                let valid: Vec<usize> = (start..end).filter(|&r| reasons[r].is_empty()).collect();
                                let kept = (rejecting && valid.len() == 1).then(|| valid[0]);
                                for r in (start..end).filter(|&r| Some(r) != kept) {
                                    reasons[r].push(Reason {
                                        kept_at: None,
                                        field: self.schema.primary_key.join(", "),
                                        rule: "primaryKey".into(),
                                        // rows no `_source_*` column places are told apart by
                                        // their rank (one line each, not the same line again)
                                        message: if sources.at(r).is_some() && !places_repeat {
                                            format!(
                                                "{} rows share this primary key: {}",
                                                end - start,
                                                some_places(&places)
                                            )
                                        } else if sources.at(r).is_some() {
                                            format!(
                                                "{} rows share this primary key: {}; this is row {} of them",
                                                end - start,
                                                some_places(&places),
                                                r - start + 1
                                            )
                                        } else {
                                            format!(
                                                "{} rows share this primary key; this is row {} of them, which no \
                                                 _source_file/_source_line places (select them to name raw lines)",
                                                end - start,
                                                r - start + 1
                                            )
                                        },
                                        finding: Some(Finding::SharedKey { rows: (end - start) as u64, same_line }),
                                    });
                                }
                            }
                            // rows whose key has a null share no key: each breaks `required` on
                            // its own, and no rule chooses among them
                            DuplicatePolicy::KeepLast | DuplicatePolicy::KeepFirst
                                if key_columns.iter().any(|c| c.is_null(start)) => {}
                            DuplicatePolicy::KeepLast | DuplicatePolicy::KeepFirst => self.choose_duplicate(
                                b,
                                start..end,
                                &places,
                                sources,
                                &unique_rows,
                                reasons,
                                superseded,
                            )?,
                        }
                    }
                }
                let records_end = match &records {
                    Some(p) => end == n || p.row(end) != p.row(records_start),
                    None => true,
                };
                if records_end {
                    if records.is_some() {
                        self.supersede_whole_records(b, records_start..end, sources, reasons, superseded);
                    }
                    for r in records_start..end {
                        check_unique(&mut self.unique, &unique_rows, self.schema, b, r, rejecting, superseded, reasons);
                    }
                    records_start = end;
                }
                start = end;
            }
        } else {
            for r in 0..n {
                check_unique(&mut self.unique, &unique_rows, self.schema, b, r, rejecting, superseded, reasons);
            }
        }
        Ok(())
    }

    /// With a keep rule and `record_columns`, a raw record that gives several rows (a Tinker
    /// metrics line: a row per metric) is kept or set aside whole: a row of `group` (the rows of
    /// one step) whose record's other rows were superseded is set aside with them. With
    /// `keep-last`, so is a row of the step from the same file, written before the first record
    /// that logs the step again: a run resumed from a checkpoint logs its steps again, and the
    /// stopped attempt's records of those steps go, those of metrics the resumed attempt did
    /// not log there too.
    fn supersede_whole_records(
        &self,
        b: &RecordBatch,
        group: std::ops::Range<usize>,
        sources: &SourceColumn,
        reasons: &Reasons,
        superseded: &mut [Option<Superseded>],
    ) {
        // the records some of whose rows were superseded, by their place
        let gone: BTreeMap<String, (String, Option<SourceRef>)> = group
            .clone()
            .filter_map(|r| {
                let s = superseded[r].as_ref()?;
                Some((sources.at(r)?.to_string(), (s.by.clone(), s.by_at.clone())))
            })
            .collect();
        if gone.is_empty() {
            return;
        }
        // with keep-last, by file: the first line that logs the step again after a line of the
        // same file (a row kept over one of another file, as `order_by` may keep an earlier
        // file's, says nothing of the lines before it)
        let mut again: BTreeMap<String, (u64, String, Option<SourceRef>)> = BTreeMap::new();
        // by file: the last line of the step a row of that file superseded (the stopped
        // attempt's), and the lines of the step there
        let mut stopped_last: BTreeMap<String, u64> = BTreeMap::new();
        let mut lines: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
        if self.policy == DuplicatePolicy::KeepLast {
            for r in group.clone() {
                let Some(own) = sources.at(r) else { continue };
                if let Position::Line(l) = own.at {
                    lines.entry(own.file.clone()).or_default().insert(l);
                }
                let Some(s) = superseded[r].as_ref() else { continue };
                if let Some(at @ SourceRef { file, at: Position::Line(line) }) = &s.by_at
                    && *file == own.file
                {
                    let e = again.entry(file.clone()).or_insert((*line, s.by.clone(), Some(at.clone())));
                    if *line < e.0 {
                        *e = (*line, s.by.clone(), Some(at.clone()));
                    }
                    if let Position::Line(l) = own.at {
                        let m = stopped_last.entry(file.clone()).or_insert(l);
                        *m = (*m).max(l);
                    }
                }
            }
        }
        // a line of the step before the line that logs it again is the stopped attempt's when
        // it comes before that attempt's last line of the step, or right after it (the lines
        // between are all the step's) and not right before the later attempt's; a line
        // between the two attempts' lines that no such run of lines ties to either stays
        // by file: the end of the run of the step's lines from the stopped attempt's last one,
        // and the start of the run that reaches the later attempt's first (consecutive lines)
        let runs: BTreeMap<&String, (u64, u64)> = stopped_last
            .iter()
            .filter_map(|(file, &last)| {
                let l = lines.get(file)?;
                let first = again.get(file)?.0;
                let mut end = last;
                while l.contains(&(end + 1)) {
                    end += 1;
                }
                let mut start = first;
                while start > 0 && l.contains(&(start - 1)) {
                    start -= 1;
                }
                Some((file, (end, start)))
            })
            .collect();
        let stopped = |file: &String, line: u64| -> bool {
            let (Some(&last), Some(&(end, start))) = (stopped_last.get(file), runs.get(file)) else { return false };
            line <= last || (line <= end && line < start)
        };
        // records each of which has a row kept over a row of the other (an `order_by` value
        // of each row, not of the record): kept or set aside row by row, since set aside whole
        // they would leave keys to no row
        let mut over: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for r in group.clone() {
            if let (Some(s), Some(own)) = (superseded[r].as_ref(), sources.at(r)) {
                over.entry(s.by.clone()).or_default().insert(own.to_string());
            }
        }
        let crossed = |place: &String| -> bool {
            let (mut seen, mut todo) = (BTreeSet::new(), vec![place]);
            while let Some(p) = todo.pop() {
                for q in over.get(p).into_iter().flatten() {
                    if q == place {
                        return true;
                    }
                    if seen.insert(q) {
                        todo.push(q);
                    }
                }
            }
            false
        };
        let crossed: BTreeSet<String> = over.keys().filter(|p| crossed(p)).cloned().collect();
        let rule = self.policy.as_str();
        let rows = group.clone();
        // the places of the records set aside whole here, each with where its step is kept
        let mut set_aside: BTreeMap<String, (String, Option<SourceRef>)> = BTreeMap::new();
        for r in group {
            if superseded[r].is_some() || !reasons[r].is_empty() {
                continue;
            }
            let Some(at) = sources.at(r) else { continue };
            if crossed.contains(&at.to_string()) {
                continue;
            }
            let key = render_key(&self.schema.primary_key, &self.pk_idx, b, r);
            let (why, by, by_at) = if let Some((by, by_at)) = gone.get(&at.to_string()) {
                let why = format!(
                    "row ({key}) of a record whose other rows were superseded by the rows at {by} ({rule} rule): a \
                     record is kept or set aside whole"
                );
                (why, by.clone(), by_at.clone())
            } else if let (Position::Line(line), Some((first, by, by_at))) = (&at.at, again.get(&at.file))
                && line < first
                && stopped(&at.file, *line)
            {
                let why = format!(
                    "row ({key}) of a step that the record at {by} logs again ({rule} rule): the records of the step \
                     before it are set aside with those it supersedes"
                );
                (why, by.clone(), by_at.clone())
            } else {
                continue;
            };
            set_aside.insert(at.to_string(), (by.clone(), by_at.clone()));
            superseded[r] = Some(Superseded { why, by, by_at, whole: true });
        }
        // a row superseded by one that went with its record names where the step's rows are kept
        for r in rows {
            let Some(s) = superseded[r].as_mut() else { continue };
            let mut hops = 0;
            while let Some((by, by_at)) = set_aside.get(&s.by)
                && hops < set_aside.len()
            {
                if hops == 0 {
                    s.why = format!("{}, itself set aside with its record for the rows at {by}", s.why);
                }
                (s.by, s.by_at) = (by.clone(), by_at.clone());
                hops += 1;
            }
        }
    }

    /// The `keep-last` / `keep-first` rule on the rows `group` sharing a primary key (their
    /// places in `places`): marks every row but the kept one superseded, or, when the rule
    /// cannot order the rows, each a violation of the key.
    #[allow(clippy::too_many_arguments)]
    fn choose_duplicate(
        &self,
        b: &RecordBatch,
        group: std::ops::Range<usize>,
        places: &[String],
        sources: &SourceColumn,
        unique_rows: &[(usize, arrow::row::Rows)],
        reasons: &mut Reasons,
        superseded: &mut [Option<Superseded>],
    ) -> Result<()> {
        let (start, end) = (group.start, group.end);
        let rejecting = self.on_invalid == OnInvalid::Reject;
        // with --on-invalid reject, the rule picks among the rows that pass
        // validation: a valid row is not superseded by one that is rejected
        // (the invalid ones go to the rejects with their own reasons)
        // (nor by one whose unique values earlier rows already hold)
        let valid: Vec<usize> = if rejecting {
            (start..end).filter(|&r| reasons[r].is_empty() && !unique_taken(&self.unique, unique_rows, r)).collect()
        } else {
            Vec::new()
        };
        let pool: Vec<usize> = if valid.is_empty() { (start..end).collect() } else { valid };
        let rule = self.policy.as_str();
        // rows the rule cannot order are violations of the key, not a choice
        let key = self.schema.primary_key.join(", ");
        let mut unordered = |rows: &[usize], message: String, finding: Option<Finding>| {
            for &r in rows {
                let mut reason = Reason::new(key.clone(), "primaryKey", message.clone());
                reason.finding = finding.clone();
                reasons[r].push(reason);
            }
        };
        // a row without a file and line (a NULL `_source_file` or
        // `_source_line`, from a join or a literal row) has no place in the
        // order the rule reads
        let unplaced: Vec<usize> = (start..end).filter(|&r| sources.ordered_at(r).is_none()).collect();
        if !unplaced.is_empty() {
            for &r in &unplaced {
                // ranked, so that two such rows do not say the same line
                let message = format!(
                    "{} rows share this primary key ({}), and this one (row {} of them) has no \
                 _source_file/_source_line, so the {rule} rule cannot place it",
                    end - start,
                    some_places(places),
                    r - start + 1
                );
                unordered(&[r], message, None);
            }
        }
        // the rule chooses among the rows it can place: with --on-invalid reject the unplaced
        // ones go to the rejects, and the rows kept hold the key once
        // with `order_by`, a row without a value there has no place either
        // (a float's NaN orders nothing either; -0.0 and 0.0 are one value, as in keys)
        let ordered = self.order_by.as_ref().map(|(i, name)| (b.column(*i), name));
        let floats: Option<Box<dyn Fn(usize) -> f64 + '_>> = ordered.and_then(|(c, _)| {
            use arrow::datatypes::{Float16Type, Float32Type, Float64Type};
            let f: Box<dyn Fn(usize) -> f64> = match c.data_type() {
                DataType::Float64 => Box::new(move |r| c.as_primitive::<Float64Type>().value(r)),
                DataType::Float32 => Box::new(move |r| f64::from(c.as_primitive::<Float32Type>().value(r))),
                DataType::Float16 => Box::new(move |r| c.as_primitive::<Float16Type>().value(r).to_f64()),
                _ => return None,
            };
            Some(f)
        });
        let valued =
            |r: usize| ordered.is_none_or(|(c, _)| c.is_valid(r)) && floats.as_ref().is_none_or(|f| !f(r).is_nan());
        if let Some((_, name)) = ordered {
            for r in (start..end).filter(|&r| !valued(r)) {
                let message = format!(
                    "{} rows share this primary key ({}), and this one (row {} of them) has no `{name}` \
                     (order_by) to order it by (null or NaN), so the {rule} rule cannot place it; give every row \
                     a value there, or order by file and line (no order_by)",
                    end - start,
                    some_places(places),
                    r - start + 1
                );
                unordered(&[r], message, None);
            }
        }
        let placed = |r: usize| sources.ordered_at(r).is_some() && valued(r);
        let mut pool: Vec<usize> = pool.into_iter().filter(|&r| placed(r)).collect();
        // files part by part (`run-x/` before `run-x-1/`, the folder W&B names a run's next
        // session when the first's name is taken), each file's rows in the order they came;
        // with `order_by`, its values first
        let file = |r: usize| sources.ordered_at(r).map(|s| s.file).unwrap_or_default();
        let by_value = match ordered {
            Some(_) if floats.is_some() => None,
            Some((col, _)) => Some(
                arrow::array::make_comparator(col.as_ref(), col.as_ref(), arrow::compute::SortOptions::default())
                    .map_err(|e| Error::config(format!("table {}", self.table), format!("order_by: {e}")))?,
            ),
            None => None,
        };
        let order = |a: usize, b: usize| {
            let value = match (&floats, &by_value) {
                // no NaN is left in the pool: the order is total
                (Some(f), _) => f(a).partial_cmp(&f(b)).unwrap_or(std::cmp::Ordering::Equal),
                (None, Some(cmp)) => cmp(a, b),
                (None, None) => std::cmp::Ordering::Equal,
            };
            // (rows of one file: in the order they came, as the stable sort keeps them)
            value.then_with(|| crate::core::names::path_order(&file(a), &file(b))).then(a.cmp(&b))
        };
        pool.sort_by(|&a, &b| order(a, b));
        let Some(&last) = pool.last() else { return Ok(()) };
        let keep = if self.policy == DuplicatePolicy::KeepLast { last } else { pool[0] };
        let kept_at = places[keep - start].clone();
        // rows of one raw line (a query that makes several rows of a line):
        // no order tells them apart, so the rule cannot choose, unless
        // they are the same row
        let tied: Vec<usize> = pool.iter().copied().filter(|&r| places[r - start] == kept_at).collect();
        if tied.len() > 1 && !same_rows(b, &tied)? {
            for (k, &r) in tied.iter().enumerate() {
                // ranked, so that the rows of one line do not say the same line
                let message = format!(
                    "{} different rows share this primary key and come from the same raw \
                 line {kept_at}, so the {rule} rule cannot choose between them (this is row {} of them); \
                 give each row the query makes of a line its own key",
                    tied.len(),
                    k + 1
                );
                unordered(&[r], message, Some(Finding::SharedKey { rows: tied.len() as u64, same_line: true }));
            }
            return Ok(());
        }
        // a row set aside for its own reasons that the rule would have kept: the row kept is
        // another (a resumed run's record of a step set aside leaves the stopped attempt's),
        // said in its reasons and counted ([`KEPT_INSTEAD`])
        if rejecting {
            let which = if self.policy == DuplicatePolicy::KeepLast { "last" } else { "first" };
            let beyond = |r: usize| {
                let o = order(r, keep);
                if self.policy == DuplicatePolicy::KeepLast { o.is_gt() } else { o.is_lt() }
            };
            let passed_over: Vec<usize> =
                (start..end).filter(|&r| r != keep && placed(r) && !reasons[r].is_empty() && beyond(r)).collect();
            for r in passed_over {
                let message = format!(
                    "this row, set aside, was the {which} of its key; the {rule} rule kept the row at {kept_at} \
                     instead"
                );
                let mut reason = Reason::new(key.clone(), KEPT_INSTEAD, message);
                reason.kept_at = Some(kept_at.clone());
                reasons[r].push(reason);
            }
        }
        let invalid = |r: usize| !reasons[r].is_empty() || unique_taken(&self.unique, unique_rows, r);
        // (an unplaced row is a violation, never superseded: it is said or rejected)
        for r in (start..end).filter(|&r| r != keep && placed(r) && (!rejecting || !invalid(r))) {
            superseded[r] = Some(Superseded {
                why: format!(
                    "duplicate primary key ({}); superseded by the row at {kept_at} ({rule} rule{})",
                    render_key(&self.schema.primary_key, &self.pk_idx, b, r),
                    ordered.map(|(_, name)| format!(", by `{name}`")).unwrap_or_default(),
                ),
                by: kept_at.clone(),
                by_at: sources.at(keep),
                whole: false,
            });
        }
        Ok(())
    }

    /// Sets aside superseded rows (to the rejects) and rows with problems (violations of
    /// the build, or rejects with `--on-invalid reject`); returns the rows kept.
    fn act(
        &self,
        b: &RecordBatch,
        sources: &SourceColumn,
        reasons: &Reasons,
        superseded: &[Option<Superseded>],
        report: &mut BuildReport,
        rejects: &mut Rejects,
    ) -> Result<RecordBatch> {
        let n = b.num_rows();
        let mut keep = vec![true; n];
        for r in 0..n {
            if let Some(Superseded { why, whole, .. }) = &superseded[r] {
                keep[r] = false;
                let src = sources.reject_at(r);
                let tally = report.duplicates_dropped.entry(self.table.clone()).or_default();
                let at = src.as_ref().map(|s| s.to_string()).unwrap_or_default();
                tally.add(|| format!("{at}: {why}"));
                if *whole {
                    let key = render_key(&self.schema.primary_key, &self.pk_idx, b, r);
                    report.set_aside_whole.entry(self.table.clone()).or_default().add(|| format!("{key} ({at})"));
                }
                rejects.add(
                    &self.table,
                    src.as_ref(),
                    std::slice::from_ref(why),
                    RejectBody::Record(row_json(b, r)),
                )?;
                continue;
            }
            if reasons[r].is_empty() {
                continue;
            }
            let key = if !self.pk_idx.is_empty() {
                Some(render_key(&self.schema.primary_key, &self.pk_idx, b, r))
            } else if sources.at(r).is_none() {
                // no key and no source: the row's own values name it (its sort key is every column)
                let names: Vec<String> = b.schema().fields().iter().map(|f| f.name().clone()).collect();
                let all: Vec<usize> = (0..names.len()).collect();
                let text = render_key(&names, &all, b, r);
                Some(match text.char_indices().nth(200) {
                    Some((cut, _)) => format!("{}…", &text[..cut]),
                    None => text,
                })
            } else {
                None
            };
            match self.on_invalid {
                OnInvalid::Fail => {
                    for reason in &reasons[r] {
                        report.violation(Violation {
                            scope: crate::core::report::Scope::Table,
                            table: self.table.clone(),
                            source: sources.at(r),
                            path: reason.field.clone(),
                            rule: reason.rule.clone(),
                            key: key.clone(),
                            message: reason.message.clone(),
                            finding: reason.finding.clone(),
                        });
                    }
                }
                OnInvalid::Reject => {
                    keep[r] = false;
                    if let Some(k) = reasons[r].iter().find(|x| x.rule == KEPT_INSTEAD) {
                        let at = sources.reject_at(r).map(|s| s.to_string()).unwrap_or_default();
                        let key = key.clone().unwrap_or_default();
                        let kept = k.kept_at.clone().unwrap_or_default();
                        let tally = report.kept_instead.entry(self.table.clone()).or_default();
                        tally.add(|| format!("{key} at {at}, kept {kept}"));
                    }
                    let texts: Vec<String> =
                        reasons[r].iter().map(|x| format!("{}: {} ({})", x.field, x.message, x.rule)).collect();
                    rejects.add(
                        &self.table,
                        sources.reject_at(r).as_ref(),
                        &texts,
                        RejectBody::Record(row_json(b, r)),
                    )?;
                }
            }
        }
        if keep.iter().all(|&k| k) {
            return Ok(b.clone());
        }
        let mask = BooleanArray::from(keep);
        arrow::compute::filter_record_batch(b, &mask).map_err(|e| Error::format(&self.table, e))
    }
}

/// Problems of each row of a batch.
type Reasons = Vec<Vec<Reason>>;

/// The rule of the reason a row set aside gets when a keep rule would have kept it, and kept
/// another row of its key instead.
const KEPT_INSTEAD: &str = "kept-instead";

/// One problem of a row: the field (or path inside it) it is at, the rule broken, what was
/// expected and found, and the facts a remedy is chosen by.
#[derive(Debug, Clone)]
struct Reason {
    field: String,
    rule: String,
    message: String,
    finding: Option<Finding>,
    /// For [`KEPT_INSTEAD`]: where the row the keep rule kept instead is (`file:line`).
    kept_at: Option<String>,
}

impl Reason {
    /// A problem without a finding.
    fn new(field: String, rule: impl Into<String>, message: String) -> Self {
        Reason { field, rule: rule.into(), message, finding: None, kept_at: None }
    }
}

/// `a` as keys compare it: a float's -0.0 is the value 0.0 (`-0.0 + 0.0` is `0.0` in IEEE 754,
/// and every other value, NaN included, is itself), as SQL and Frictionless readers compare
/// numbers; other types are unchanged.
fn key_value(a: &ArrayRef) -> ArrayRef {
    let zero: Option<Box<dyn arrow::array::Datum>> = match a.data_type() {
        DataType::Float64 => Some(Box::new(arrow::array::Float64Array::new_scalar(0.0))),
        DataType::Float32 => Some(Box::new(arrow::array::Float32Array::new_scalar(0.0))),
        _ => None,
    };
    match zero {
        Some(z) => arrow::compute::kernels::numeric::add(a, z.as_ref()).unwrap_or_else(|_| a.clone()),
        None => a.clone(),
    }
}

fn converter(types: &[DataType]) -> Result<RowConverter> {
    RowConverter::new(types.iter().map(|t| SortField::new(t.clone())).collect())
        .map_err(|e| Error::format("row converter", e))
}

/// Whether row `r` of `a` is a floating-point NaN.
fn is_nan_at(a: &ArrayRef, r: usize) -> bool {
    use arrow::datatypes::{Float16Type, Float32Type, Float64Type};
    a.is_valid(r)
        && match a.data_type() {
            DataType::Float64 => a.as_primitive::<Float64Type>().value(r).is_nan(),
            DataType::Float32 => a.as_primitive::<Float32Type>().value(r).is_nan(),
            DataType::Float16 => a.as_primitive::<Float16Type>().value(r).is_nan(),
            _ => false,
        }
}

/// The values of each `unique` column seen in the rows kept so far, with the converter that
/// puts a column's values in row format.
type UniqueSeen = BTreeMap<usize, (RowConverter, HashSet<OwnedRow>)>;

/// Whether a `unique` value of row `r` is already held by a row kept before it.
fn unique_taken(seen: &UniqueSeen, rows: &[(usize, arrow::row::Rows)], r: usize) -> bool {
    rows.iter().any(|(i, rows)| seen.get(i).is_some_and(|(_, seen)| seen.contains(&rows.row(r).owned())))
}

/// A reason for each `unique` value of row `r` that a row kept before it holds. NaN equals no
/// value, another NaN included (as Frictionless readers compare values, and as foreign keys
/// are checked).
fn unique_reasons(
    seen: &UniqueSeen,
    rows: &[(usize, arrow::row::Rows)],
    schema: &TableSchema,
    b: &RecordBatch,
    r: usize,
) -> Vec<Reason> {
    let comparable = |i: usize| b.column(i).is_valid(r) && !is_nan_at(b.column(i), r);
    rows.iter()
        .filter(|(i, rows)| comparable(*i) && seen.get(i).is_some_and(|(_, seen)| seen.contains(&rows.row(r).owned())))
        .map(|(i, _)| {
            Reason::new(
                schema.fields[*i].name.clone(),
                "unique",
                format!("value {} appears in an earlier row", cell_json(b.column(*i), r)),
            )
        })
        .collect()
}

/// Checks row `r`'s `unique` columns against the rows kept before it, adding a reason for
/// each value already held, and records its values when it is kept. A row the duplicate-key
/// rule drops takes no values; with `rejecting` (`--on-invalid reject`) neither does a row
/// with any reason, so a value of a rejected row never makes a later row a duplicate.
#[allow(clippy::too_many_arguments)]
fn check_unique(
    seen: &mut UniqueSeen,
    rows: &[(usize, arrow::row::Rows)],
    schema: &TableSchema,
    b: &RecordBatch,
    r: usize,
    rejecting: bool,
    superseded: &[Option<Superseded>],
    reasons: &mut [Vec<Reason>],
) {
    if superseded[r].is_some() || (rejecting && !reasons[r].is_empty()) {
        return;
    }
    let before = reasons[r].len();
    reasons[r].extend(unique_reasons(seen, rows, schema, b, r));
    if rejecting && reasons[r].len() > before {
        return;
    }
    let comparable = |i: usize| b.column(i).is_valid(r) && !is_nan_at(b.column(i), r);
    for (i, rows) in rows {
        if comparable(*i)
            && let Some((_, seen)) = seen.get_mut(i)
        {
            seen.insert(rows.row(r).owned());
        }
    }
}

/// Whether rows `rows` of `b` hold the same values in every column (NaN equal to NaN).
///
/// Errors: [`Error::Format`] for a column type Arrow cannot compare.
fn same_rows(b: &RecordBatch, rows: &[usize]) -> Result<bool> {
    for c in b.columns() {
        let cmp = arrow::array::make_comparator(c.as_ref(), c.as_ref(), Default::default())
            .map_err(|e| Error::format("duplicate rows", e))?;
        if rows.windows(2).any(|w| cmp(w[0], w[1]) != std::cmp::Ordering::Equal) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Row `r` of `b` named by the columns `idx` (named `names`): `id=2, split=test`; a text with
/// control characters is shown as a JSON string, so that a message stays one line.
pub(crate) fn render_key(names: &[String], idx: &[usize], b: &RecordBatch, r: usize) -> String {
    names
        .iter()
        .zip(idx)
        .map(|(n, &i)| {
            let v = cell_json(b.column(i), r);
            match v {
                // text with control characters is shown escaped, so that a message stays one line
                Value::String(s) if s.chars().any(char::is_control) => format!("{n}={}", Value::String(s)),
                Value::String(s) => format!("{n}={s}"),
                other => format!("{n}={other}"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `c` has a rule that [`value_problems`] checks.
fn has_value_rules(c: &crate::core::schema::Constraints) -> bool {
    c.enum_values.is_some()
        || c.pattern.is_some()
        || c.minimum.is_some()
        || c.maximum.is_some()
        || c.min_length.is_some()
        || c.max_length.is_some()
}

/// What breaks constraints `c` in the non-null value at `r` of `col` (a top-level cell, or an
/// item of an array), as (rule, message): `enum` (compared by JSON value, numbers by value;
/// the text of a JSON-text column, `json_text`, is read as JSON first), `pattern` (`pattern`
/// compiled from `c.pattern`), `minimum`/`maximum`, `minLength`/`maxLength`. `required` and `unique` are the
/// caller's.
fn value_problems(
    c: &crate::core::schema::Constraints,
    json_text: bool,
    pattern: Option<&regex::Regex>,
    col: &ArrayRef,
    r: usize,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(allowed) = &c.enum_values {
        let v = cell_json(col, r);
        // a JSON-text column (`any`, an `object` without `fields`) holds the value as its text
        let v = match (&v, json_text) {
            (Value::String(text), true) => serde_json::from_str(text).unwrap_or(v),
            _ => v,
        };
        if !allowed.iter().any(|a| json_eq(a, &v)) {
            out.push(("enum", format!("value {v} is not one of {}", Value::Array(allowed.clone()))));
        }
    }
    if let Some(re) = pattern
        && let Some(s) = col.as_string_opt::<i32>()
    {
        let v = s.value(r);
        if !re.is_match(v) {
            out.push((
                "pattern",
                format!(
                    "value {} does not match {}",
                    crate::stages::ingest::path::short_json_string(v),
                    c.pattern.as_deref().unwrap_or("")
                ),
            ));
        }
    }
    if (c.minimum.is_some() || c.maximum.is_some())
        && let Some(x) = Num::at(col, r)
    {
        // NaN compares false with every bound: a bounded column refuses it rather than let it
        // through under the bounds the card shows
        if x.is_nan() {
            let (rule, bounds) = match (&c.minimum, &c.maximum) {
                (Some(lo), Some(hi)) => ("minimum", format!("between {lo} and {hi}")),
                (Some(lo), None) => ("minimum", format!("at least {lo}")),
                (None, Some(hi)) => ("maximum", format!("at most {hi}")),
                (None, None) => ("minimum", String::new()),
            };
            out.push((rule, format!("value NaN is not a number {bounds} (a bounded column does not take NaN)")));
        }
        if let Some(min) = &c.minimum
            && x.cmp(Num::of(min)) == Some(std::cmp::Ordering::Less)
        {
            out.push(("minimum", format!("value {} is below the minimum {min}", cell_json(col, r))));
        }
        if let Some(max) = &c.maximum
            && x.cmp(Num::of(max)) == Some(std::cmp::Ordering::Greater)
        {
            out.push(("maximum", format!("value {} is above the maximum {max}", cell_json(col, r))));
        }
    }
    if c.min_length.is_some() || c.max_length.is_some() {
        let len = match col.data_type() {
            DataType::Utf8 => Some(col.as_string::<i32>().value(r).chars().count() as u64),
            DataType::List(_) => Some(col.as_list::<i32>().value_length(r) as u64),
            _ => None,
        };
        if let Some(len) = len {
            if let Some(m) = c.min_length.filter(|&m| len < m) {
                out.push(("minLength", format!("length {len} is below {m}")));
            }
            if let Some(m) = c.max_length.filter(|&m| len > m) {
                out.push(("maxLength", format!("length {len} is above {m}")));
            }
        }
    }
    out
}

/// JSON equality with numbers compared by value (`1` equals `1.0`), down arrays and objects.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => Num::of(x).cmp(Num::of(y)) == Some(std::cmp::Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// The value of one cell as JSON (non-finite floats as strings), for messages and rejects.
pub fn cell_json(a: &ArrayRef, r: usize) -> Value {
    let one = RecordBatch::try_new(
        Arc::new(arrow::datatypes::Schema::new(vec![arrow::datatypes::Field::new("v", a.data_type().clone(), true)])),
        vec![a.slice(r, 1)],
    );
    match one {
        Ok(b) => {
            let mut out = Vec::new();
            let mut ends = Vec::new();
            if crate::core::jsonl::encode_jsonl(&b, &mut out, &mut ends).is_ok()
                && let Ok(Value::Object(mut m)) = serde_json::from_slice::<Value>(&out)
            {
                return m.remove("v").unwrap_or(Value::Null);
            }
            Value::Null
        }
        Err(_) => Value::Null,
    }
}

/// One row as a JSON object.
pub fn row_json(b: &RecordBatch, r: usize) -> Value {
    let row = b.slice(r, 1);
    if let Some(v) = batch_json(&row) {
        return v;
    }
    // a type the JSON Lines of a release never holds (a table's SQL made nanoseconds, say):
    // column by column
    let mut object = serde_json::Map::new();
    for (i, field) in row.schema().fields().iter().enumerate() {
        object.insert(field.name().clone(), cell_value(row.column(i), 0));
    }
    Value::Object(object)
}

/// The value at row `r` of `col` as a release's JSON Lines would hold it, or, for a type
/// they never hold (nanosecond timestamps, say), as Arrow's JSON writer gives it (or else as
/// Arrow prints it), so that a reject's record keeps what was found.
pub fn cell_value(col: &ArrayRef, r: usize) -> Value {
    let field = arrow::datatypes::Field::new("v", col.data_type().clone(), true);
    let one = RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(vec![field])), vec![col.slice(r, 1)]).ok();
    let arrow_json = |b: &RecordBatch| -> Option<Value> {
        let mut w = arrow::json::LineDelimitedWriter::new(Vec::new());
        w.write(b).ok()?;
        w.finish().ok()?;
        serde_json::from_slice(&w.into_inner()).ok()
    };
    one.as_ref().and_then(|b| batch_json(b).or_else(|| arrow_json(b))).and_then(|v| v.get("v").cloned()).unwrap_or_else(
        || match col.is_null(r) {
            true => Value::Null,
            false => Value::String(arrow::util::display::array_value_to_string(col, r).unwrap_or_default()),
        },
    )
}

/// The one row of `b` as a JSON object (none when the JSON Lines encoder refuses a type).
fn batch_json(b: &RecordBatch) -> Option<Value> {
    let mut out = Vec::new();
    let mut ends = Vec::new();
    crate::core::jsonl::encode_jsonl(b, &mut out, &mut ends).ok()?;
    serde_json::from_slice::<Value>(&out).ok()
}

/// What the conversion guarantees of a stored value, checked at row `r` of `col` (field `f`,
/// named `at` in messages) and inside its lists and objects: `any` holds strict JSON text, an
/// `object` without `fields` the JSON text of an object, dates and datetimes fall in years 1
/// to 9999. Each problem goes to `out` as (path, message).
fn stored_value_problems(
    f: &crate::core::schema::FieldDescriptor,
    col: &ArrayRef,
    r: usize,
    at: &str,
    out: &mut dyn FnMut(String, String),
) {
    if col.is_null(r) {
        return;
    }
    if let Some(shown) = out_of_years(col, r) {
        out(at.to_string(), format!("{shown} is outside years 1 to 9999, which RFC 3339 and most readers cannot hold"));
        return;
    }
    match col.data_type() {
        DataType::Utf8 if f.is_json_text() => {
            let text = col.as_string::<i32>().value(r);
            match serde_json::from_str::<serde_json::Value>(text) {
                Err(e) => out(
                    at.to_string(),
                    format!(
                        "expected JSON text, found text that is no JSON ({e}): {}",
                        crate::stages::ingest::path::short_json_string(text)
                    ),
                ),
                Ok(v) if f.field_type == "object" && !v.is_object() => out(
                    at.to_string(),
                    format!("expected an object, found {}", crate::stages::ingest::path::describe(&v)),
                ),
                Ok(_) => {}
            }
        }
        DataType::List(_) => {
            let Some(items) = f.items.as_deref().filter(|it| it.needs_stored_checks()) else { return };
            let list = col.as_list::<i32>();
            let values = list.values();
            let offsets = list.value_offsets();
            for (k, j) in (offsets[r] as usize..offsets[r + 1] as usize).enumerate() {
                stored_value_problems(items, values, j, &format!("{at}[{k}]"), out);
            }
        }
        DataType::Struct(_) => {
            let Some(fields) = f.fields.as_ref() else { return };
            let st = col.as_struct();
            for child in fields.iter().filter(|c| c.needs_stored_checks()) {
                if let Some(c) = st.column_by_name(&child.name) {
                    stored_value_problems(child, c, r, &format!("{at}.{}", child.name), out);
                }
            }
        }
        _ => {}
    }
}

/// The value at row `r` of a date or microsecond timestamp column when it falls outside
/// years 1 to 9999 (as text), else `None`.
pub fn out_of_years(col: &ArrayRef, r: usize) -> Option<String> {
    use arrow::datatypes::{Date32Type, TimeUnit, TimestampMicrosecondType};
    // 0001-01-01 and 9999-12-31 in days, and their first and last microsecond, from 1970
    let outside = match col.data_type() {
        DataType::Date32 => !(-719_162..=2_932_896).contains(&col.as_primitive::<Date32Type>().value(r)),
        DataType::Timestamp(TimeUnit::Microsecond, _) => !(-62_135_596_800_000_000..=253_402_300_799_999_999)
            .contains(&col.as_primitive::<TimestampMicrosecondType>().value(r)),
        _ => false,
    };
    outside.then(|| cell_json(col, r).to_string())
}

/// The first [`PLACES_SHOWN`] of the places of rows that share a key, and how many more: a
/// message per row that named every place would grow with the square of the rows. A place
/// several rows share is named once, with their count (`a.jsonl:1 (3 rows)`).
fn some_places(places: &[String]) -> String {
    first_places(places, PLACES_SHOWN)
}

/// The first `shown` distinct places of `places`, in their order, each that several rows
/// share with their count (`a.jsonl:1 (3 rows)`), and how many more (`, and 4 more`).
fn first_places(places: &[String], shown: usize) -> String {
    // a place that several rows share (the rows of one raw line) is named once, with its count
    let mut distinct: Vec<(&str, usize)> = Vec::new();
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for p in places {
        match at.get(p.as_str()) {
            Some(&i) => distinct[i].1 += 1,
            None => {
                at.insert(p, distinct.len());
                distinct.push((p, 1));
            }
        }
    }
    let named: Vec<String> = distinct
        .iter()
        .take(shown)
        .map(|(p, n)| if *n > 1 { format!("{p} ({n} rows)") } else { p.to_string() })
        .collect();
    match distinct.len() - named.len() {
        0 => named.join(", "),
        more => format!("{}, and {more} more", named.join(", ")),
    }
}

/// How many places of the rows sharing a key a message names.
const PLACES_SHOWN: usize = 10;

/// Finds where each row of a table came from: `_source_file` + `_source_line` columns, or the
/// first entry of a `source_files` list column.
pub struct SourceColumn<'b> {
    file: Option<&'b arrow::array::StringArray>,
    line: Option<&'b ArrayRef>,
    list: Option<&'b arrow::array::ListArray>,
}

impl<'b> SourceColumn<'b> {
    /// Looks the columns up in `b`.
    pub fn find(b: &'b RecordBatch) -> Self {
        let file = b.column_by_name("_source_file").and_then(|c| c.as_string_opt::<i32>());
        let line = b.column_by_name("_source_line");
        let list = b.column_by_name("source_files").and_then(|c| c.as_list_opt::<i32>());
        SourceColumn { file, line, list }
    }

    /// The place row `r` came from, for a rejects line: as [`SourceColumn::at`], but a
    /// `_source_line` held as text (a table whose rows come from line-numbered and JSON
    /// documents alike) stays text, so that the rejects file's `_source_line` has one JSON
    /// type, as the table's column has.
    pub fn reject_at(&self, r: usize) -> Option<SourceRef> {
        let mut at = self.at(r)?;
        if let (Position::Line(n), Some(l)) = (&at.at, self.line)
            && l.data_type() == &DataType::Utf8
        {
            at.at = Position::Pointer(n.to_string());
        }
        Some(at)
    }

    /// The place row `r` came from, when it has both a file and a line (or pointer) to order
    /// it by, as the keep rules order rows: `None` for a null `_source_line` too, which
    /// [`SourceColumn::at`] gives as the file alone.
    pub fn ordered_at(&self, r: usize) -> Option<SourceRef> {
        if self.file.is_some() && self.line.is_some_and(|l| l.is_null(r)) {
            return None;
        }
        self.at(r)
    }

    /// The place row `r` came from.
    pub fn at(&self, r: usize) -> Option<SourceRef> {
        if let Some(f) = self.file
            && f.is_valid(r)
        {
            let at = match self.line {
                Some(l) if l.is_valid(r) => match l.data_type() {
                    DataType::Int64 => Position::Line(l.as_primitive::<arrow::datatypes::Int64Type>().value(r) as u64),
                    DataType::Utf8 => {
                        let s = l.as_string::<i32>().value(r);
                        match s.parse::<u64>() {
                            Ok(n) => Position::Line(n),
                            Err(_) => Position::Pointer(s.to_string()),
                        }
                    }
                    _ => Position::Pointer(String::new()),
                },
                _ => Position::Pointer(String::new()),
            };
            return Some(SourceRef { file: f.value(r).to_string(), at });
        }
        if let Some(l) = self.list
            && l.is_valid(r)
            && l.value_length(r) > 0
        {
            let v = l.value(r);
            if let Some(s) = v.as_string_opt::<i32>() {
                let first = s.value(0);
                // entries are `file:line` or `file:/json/pointer`
                return Some(match first.split_once(":/").map(|(f, p)| (f, format!("/{p}"))) {
                    Some((f, p)) => SourceRef { file: f.into(), at: Position::Pointer(p) },
                    None => match first.rsplit_once(':') {
                        Some((f, n)) if n.parse::<u64>().is_ok() => {
                            SourceRef { file: f.into(), at: Position::Line(n.parse().expect("checked")) }
                        }
                        _ => SourceRef { file: first.to_string(), at: Position::Pointer(String::new()) },
                    },
                });
            }
        }
        None
    }
}

/// Values of a table's `report_repeats` columns that more than one row holds
/// ([`repeated_values`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Repeats {
    /// The values that repeat.
    pub values: u64,
    /// The rows that hold them.
    pub rows: u64,
    /// The values whose rows differ in another column (nulls included).
    pub differing: u64,
    /// The first five values (`model="base", task="gsm8k"`: texts quoted and escaped, a
    /// backtick as `\u{60}`, a null as `null`), in order, each with its rows' first three places in path order, a place
    /// several rows share named once with their count (`raw/results.csv:3, raw/r.jsonl:2 (2
    /// rows), and 4 more`; empty unless the table keeps `_source_file` and `_source_line`),
    /// and whether its rows differ.
    pub first: Vec<(String, String, bool)>,
}

/// The values of `columns` that more than one row of `table` (registered in `ctx`) holds:
/// `None` when none does. Rows differ where another column (the provenance columns left out)
/// holds two values, or a value and a null, as `count(DISTINCT …)` tells them (`-0.0` and
/// `0.0` apart). Two queries over the table, one counting, one giving the first five values:
/// memory holds the groups of one `GROUP BY`, not the rows.
///
/// Errors: [`Error::Config`] for a column the table lacks, one named twice, or one of
/// nested values (structs, lists, maps); [`Error::Sql`] when a query fails.
pub async fn repeated_values(
    ctx: &datafusion::prelude::SessionContext,
    table: &str,
    columns: &[String],
) -> Result<Option<Repeats>> {
    use arrow::datatypes::DataType;
    let quoted = |c: &str| format!("\"{}\"", c.replace('"', "\"\""));
    let schema = ctx.table(quoted(table)).await.map_err(|e| Error::sql(format!("table {table}"), e))?.schema().clone();
    let refused = |why: String| Err(Error::config(format!("table {table}"), format!("`report_repeats` {why}")));
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    for (i, c) in columns.iter().enumerate() {
        let Some(f) = schema.fields().iter().find(|f| f.name() == c) else {
            return refused(format!("names `{c}`, which is no column of the table (those: {})", names.join(", ")));
        };
        if columns[..i].contains(c) {
            return refused(format!("names `{c}` twice"));
        }
        if f.data_type().is_nested() {
            return refused(format!(
                "names `{c}`, a column of nested values ({}): name columns of plain values (text, numbers, times)",
                f.data_type()
            ));
        }
    }
    // the other columns: rows that hold two values of one, or a value and a null, differ
    let others: Vec<String> = schema
        .fields()
        .iter()
        .filter(|f| !columns.contains(f.name()) && !f.name().starts_with("_source_"))
        .map(|f| {
            let c = quoted(f.name());
            format!("count(DISTINCT {c}) > 1 OR (count(DISTINCT {c}) = 1 AND count({c}) < count(*))")
        })
        .collect();
    let differ = if others.is_empty() { "false".to_string() } else { others.join(" OR ") };
    let places = if names.iter().any(|n| n == "_source_file") && names.iter().any(|n| n == "_source_line") {
        "array_agg(_source_file || ':' || CAST(_source_line AS VARCHAR) ORDER BY _source_file, _source_line)"
    } else {
        "CAST(make_array() AS VARCHAR[])"
    };
    let key: Vec<String> = columns.iter().map(|c| quoted(c)).collect();
    // (names no column of a table is likely to have: the key's own columns are selected too)
    let grouped = format!(
        "SELECT {key}, count(*) AS \"_repeat rows\", {differ} AS \"_repeat differ\", {places} AS \"_repeat places\" \
         FROM {t} GROUP BY {key} HAVING count(*) > 1",
        t = quoted(table),
        key = key.join(", "),
    );
    let run = |sql: String| async move {
        crate::sql::session::run(ctx, &sql).await.map_err(|e| match e {
            Error::Sql { source, .. } => Error::sql(format!("table {table}: report_repeats"), *source),
            e => e,
        })
    };
    let (_, counts) = run(format!(
        "SELECT count(*), coalesce(sum(\"_repeat rows\"), 0), coalesce(sum(CASE WHEN \"_repeat differ\" THEN 1 ELSE 0 \
         END), 0) FROM ({grouped})"
    ))
    .await?;
    let count = |i: usize| -> u64 {
        counts
            .first()
            .filter(|b| b.num_rows() == 1)
            .map(|b| {
                let c = arrow::compute::cast(b.column(i), &DataType::UInt64).expect("a count");
                c.as_primitive::<arrow::datatypes::UInt64Type>().value(0)
            })
            .unwrap_or(0)
    };
    let (values, rows, differing) = (count(0), count(1), count(2));
    if values == 0 {
        return Ok(None);
    }
    let (_, batches) = run(format!(
        "SELECT {key}, \"_repeat places\", \"_repeat differ\" FROM ({grouped}) ORDER BY {key} LIMIT 5",
        key = key.join(", ")
    ))
    .await?;
    let mut first = Vec::new();
    for b in &batches {
        let n = columns.len();
        let p = b.column(n).as_list::<i32>();
        let d = b.column(n + 1).as_boolean();
        for r in 0..b.num_rows() {
            // each value as SQL would write it: a text quoted and escaped, a null bare
            let shown: Vec<String> = columns
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let a = b.column(i);
                    let v = if a.is_null(r) {
                        "null".to_string()
                    } else {
                        let text = arrow::util::display::array_value_to_string(a, r).unwrap_or_default();
                        match a.data_type() {
                            // (a backtick as an escape too: the card's code spans would pair with it)
                            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                                format!("{text:?}").replace('`', "\\u{60}")
                            }
                            _ => text,
                        }
                    };
                    format!("{c}={v}")
                })
                .collect();
            let places = p.value(r);
            let places = arrow::compute::cast(&places, &DataType::Utf8).expect("text");
            // in the order a walk of the folders reads them (`r/2` before `r/10`)
            let mut places: Vec<String> =
                places.as_string::<i32>().iter().flatten().map(crate::core::error::escape_control).collect();
            places.sort_by(|a, b| crate::core::names::path_order(a, b));
            first.push((shown.join(", "), first_places(&places, 3), d.value(r)));
        }
    }
    Ok(Some(Repeats { values, rows, differing, first }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn repeated_values_are_counted_named_and_told_apart() {
        let ctx = crate::sql::session::query_session();
        let setup = "CREATE TABLE t AS SELECT column1 AS v, column2 AS n, column3 AS s, column4 AS l FROM (VALUES \
                     ('a, n=1', 1, named_struct('a', 3), [1]), ('a, n=1', 1, named_struct('a', 4), [1]), \
                     ('b', CAST(NULL AS INT), named_struct('a', 5), [2]), ('b', NULL, named_struct('a', 5), [2]), \
                     ('null', 2, named_struct('a', 5), [3]), ('c', 3, named_struct('a', 5), [3]))";
        ctx.sql(setup).await.unwrap().collect().await.unwrap();
        let cols = |c: &[&str]| c.iter().map(|c| c.to_string()).collect::<Vec<_>>();
        // names the query's own columns could take (`v`, `n`) and a struct that differs
        let r = repeated_values(&ctx, "t", &cols(&["v", "n"])).await.unwrap().unwrap();
        assert_eq!((r.values, r.rows, r.differing), (2, 4, 1));
        assert_eq!(
            r.first,
            vec![
                ("v=\"a, n=1\", n=1".to_string(), String::new(), true),
                ("v=\"b\", n=null".to_string(), String::new(), false)
            ]
        );
        assert_eq!(repeated_values(&ctx, "t", &cols(&["n"])).await.unwrap().map(|r| r.values), Some(2));
        let refused = |c: &'static [&'static str]| {
            let ctx = &ctx;
            async move { repeated_values(ctx, "t", &cols(c)).await.unwrap_err().to_string() }
        };
        assert!(refused(&["v", "v"]).await.contains("names `v` twice"));
        assert!(refused(&["s"]).await.contains("names `s`, a column of nested values"));
        assert!(refused(&["x"]).await.contains("names `x`, which is no column of the table (those: v, n, s, l)"));
    }

    #[test]
    fn places_rows_share_are_named_once_with_their_count() {
        let places: Vec<String> = ["a:1", "a:1", "b:2", "a:1"].map(String::from).to_vec();
        assert_eq!(some_places(&places), "a:1 (3 rows), b:2");
        let many: Vec<String> = (0..25).map(|i| format!("f:{i}")).collect();
        assert!(some_places(&many).ends_with("f:9, and 15 more"), "{}", some_places(&many));
        let mut sorted: Vec<String> =
            ["r/10.jsonl:1", "r/2.jsonl:10", "r/2.jsonl:9", "r/2.jsonl:9"].map(String::from).to_vec();
        sorted.sort_by(|a, b| crate::core::names::path_order(a, b));
        assert_eq!(first_places(&sorted, 2), "r/2.jsonl:9 (2 rows), r/2.jsonl:10, and 1 more");
    }
    use crate::core::names::split_file_problem;
    use crate::core::values::compare_numbers;

    #[test]
    fn split_names_windows_keeps_for_devices_are_refused_with_a_name_that_is_not() {
        for name in ["con", "CON", "nul.v2", "com0", "lpt9", "com\u{b9}"] {
            let m = split_file_problem(name).unwrap_or_else(|| panic!("{name}"));
            assert!(m.contains("which Windows reserves for a device"), "{m}");
        }
        assert!(split_file_problem("con.v2").unwrap().ends_with("use \"con_.v2\""));
        for name in ["console", "com10", "train", "lpt", "nul_"] {
            assert_eq!(split_file_problem(name), None, "{name}");
        }
        assert!(split_file_problem(&"x".repeat(201)).unwrap().contains("201 bytes"));
    }

    #[test]
    fn numbers_compare_exactly_across_integers_and_floats() {
        use std::cmp::Ordering::*;
        let n = |t: &str| serde_json::from_str::<serde_json::Number>(t).unwrap();
        assert_eq!(compare_numbers(&n("9007199254740993"), &n("9007199254740992.0")), Some(Greater));
        assert_eq!(compare_numbers(&n("9007199254740992.0"), &n("9007199254740993")), Some(Less));
        assert_eq!(compare_numbers(&n("9007199254740993"), &n("9007199254740992.5")), Some(Greater));
        assert_eq!(compare_numbers(&n("10000000000000000001"), &n("1e19")), Some(Greater));
        assert_eq!(compare_numbers(&n("1"), &n("1.0")), Some(Equal));
        assert_eq!(compare_numbers(&n("-3"), &n("-2.5")), Some(Less));
        assert_eq!(compare_numbers(&n("-2"), &n("-2.5")), Some(Greater));
        assert_eq!(compare_numbers(&n("5"), &n("1e300")), Some(Less));
        assert_eq!(compare_numbers(&n("5"), &n("-1e300")), Some(Greater));
        assert!(!json_eq(&serde_json::json!(9007199254740993u64), &serde_json::json!(9007199254740992.0)));
        assert!(json_eq(&serde_json::json!([1.0, 2.5, {"a": 1}]), &serde_json::json!([1, 2.5, {"a": 1.0}])));
        assert!(!json_eq(&serde_json::json!([1, 2]), &serde_json::json!([1, 2, 3])));
        assert!(!json_eq(&serde_json::json!({"a": 1}), &serde_json::json!({"a": 1, "b": 2})));
    }
}
