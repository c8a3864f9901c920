//! External sort of a table's rows by its key columns, in bounded memory.
//!
//! In: record batches in any order, the indices of the key columns, a memory budget in bytes
//! and a folder for temporary files. Out: the same rows in ascending key order (nulls last),
//! as record batches of at most [`OUT_ROWS`] rows. Rows with equal keys keep their input order
//! (the sort is stable), which the duplicate-key rules rely on.
//!
//! Rows are buffered up to the budget, sorted, and written to a temporary Arrow IPC file (a
//! "run"); the runs are then merged with one small batch of each in memory. Input that fits in
//! the budget is sorted in memory and never touches the disk.
//!
//! Rows that come in order of the first key column (all rows of a run, or of a checkpoint,
//! together) need not wait for the end of the input: once 32 MiB are buffered, the groups
//! of that column that are complete are sorted and handed on ([`ExternalSort::push_to`]), and
//! no run is written. A row that then breaks that order is said ([`Pushed::Disordered`]):
//! the rows handed on are wrong, and the caller sorts again without handing groups on early.
//!
//! [`OrderCheck`] watches rows go by and tells whether they came in key order already, so
//! that rows known to be in order can skip the sort altogether.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::PathBuf;

use arrow::array::{ArrayRef, AsArray, BinaryArray, RecordBatch};
use arrow::compute::interleave_record_batch;
use arrow::datatypes::{DataType, SchemaRef};
use arrow::row::{OwnedRow, RowConverter, Rows, SortField};

use crate::core::error::{Error, Result};

/// Rows per output batch.
pub const OUT_ROWS: usize = 8192;
/// Bytes of rows buffered before groups of the first key column that have ended are handed
/// on ([`ExternalSort::push_to`]): far below a sort's budget, so that rows in groups flow on
/// with little memory.
const GROUPS_BYTES: usize = 32 << 20;
/// Rows per batch inside a run file (small, so that merging many runs stays small).
const RUN_BATCH_ROWS: usize = 1024;
/// Bytes of rows per batch the sort hands on, about: rows of large cells go a few at a time
/// (bounded memory, and no string array beyond the 2 GiB its 32-bit offsets reach).
const CHUNK_BYTES: usize = 32 << 20;

/// Rows per batch for rows of `bytes` bytes over `rows` rows: at most `max_rows`, at least 1,
/// about [`CHUNK_BYTES`].
fn rows_per_chunk(bytes: usize, rows: usize, max_rows: usize) -> usize {
    if rows == 0 || bytes == 0 {
        return max_rows;
    }
    ((CHUNK_BYTES as u128 * rows as u128 / bytes as u128) as usize).clamp(1, max_rows)
}

/// Sorts batches pushed into it; see the module docs.
pub struct ExternalSort {
    schema: SchemaRef,
    keys: Vec<usize>,
    converter: RowConverter,
    buffered: Vec<RecordBatch>,
    buffered_bytes: usize,
    budget_bytes: usize,
    dir: PathBuf,
    runs: Vec<PathBuf>,
    /// Groups of the first key column, handed on early while the rows come in its order.
    groups: Groups,
    /// The rows handed on before the end of the input.
    early_rows: u64,
    /// The buffered bytes at which groups are next handed on.
    next_hand_on: usize,
}

/// Where the sort stands with the groups of its first key column.
enum Groups {
    /// Not handed on early ([`ExternalSort::push`]), or the rows broke the order before any
    /// group was handed on.
    Off,
    /// Watching the order; `None` until the first rows (whose own types it compares).
    Watching(Option<OrderCheck>),
}

/// What [`ExternalSort::push_to`] did with a batch.
#[derive(Debug, PartialEq, Eq)]
pub enum Pushed {
    /// The rows are buffered, written to a run, or handed on in key order.
    Taken,
    /// The batch breaks the order of the first key column after groups were handed on: the
    /// rows handed on are not in order with it, and the batch is not taken. The sort must
    /// start again with [`ExternalSort::push`].
    Disordered,
}

impl ExternalSort {
    /// A sorter over `schema` by the columns `keys`, buffering at most `budget_bytes` of rows
    /// before writing a run under `dir`.
    pub fn new(schema: SchemaRef, keys: Vec<usize>, budget_bytes: usize, dir: PathBuf) -> Result<Self> {
        let converter = key_converter(&schema, &keys)?;
        Ok(ExternalSort {
            schema,
            keys,
            converter,
            buffered: Vec::new(),
            buffered_bytes: 0,
            budget_bytes,
            dir,
            runs: Vec::new(),
            groups: Groups::Off,
            early_rows: 0,
            next_hand_on: GROUPS_BYTES.min(budget_bytes),
        })
    }

    /// The same sorter, handing on the complete groups of the first key column early while
    /// the rows come in its order ([`Self::push_to`]).
    pub fn with_early_groups(mut self) -> Self {
        self.groups = Groups::Watching(None);
        self
    }

    /// The rows handed on before the end of the input ([`Self::push_to`]).
    pub fn early_rows(&self) -> u64 {
        self.early_rows
    }

    fn rows(&self, b: &RecordBatch) -> Result<Rows> {
        let cols: Vec<ArrayRef> = self.keys.iter().map(|&k| sortable(b.schema_ref(), k, b.column(k))).collect();
        self.converter.convert_columns(&cols).map_err(|e| Error::format("sort", e))
    }

    /// Adds rows.
    ///
    /// Errors: [`Error::Format`] when the rows cannot be converted for comparison, and
    /// [`Error::Io`] when a run cannot be written.
    pub fn push(&mut self, b: RecordBatch) -> Result<()> {
        if self.buffer(b)? {
            self.spill()?;
        }
        Ok(())
    }

    /// Adds rows; with [`Self::with_early_groups`], hands `out` the groups of the first key
    /// column that the rows so far have ended, sorted, once 32 MiB are buffered
    /// (or the budget, if smaller) and no run was written. Rows handed on are in final
    /// order: everything after them sorts after.
    ///
    /// Errors: those of [`Self::push`], and `out`'s.
    pub fn push_to(&mut self, b: RecordBatch, out: &mut dyn FnMut(RecordBatch) -> Result<()>) -> Result<Pushed> {
        if b.num_rows() == 0 {
            return Ok(Pushed::Taken);
        }
        if let Groups::Watching(watch) = &mut self.groups {
            let check = watch.get_or_insert_with(|| {
                let schema = b.schema();
                OrderCheck::new(&schema, vec![schema.field(self.keys[0]).name().clone()])
            });
            check.observe(&b)?;
            if !check.in_order() {
                if self.early_rows > 0 {
                    return Ok(Pushed::Disordered);
                }
                self.groups = Groups::Off;
            }
        }
        let full = self.buffer(b)?;
        if self.runs.is_empty() && self.buffered_bytes > self.next_hand_on {
            if self.hand_on_groups(out)? {
                self.next_hand_on = GROUPS_BYTES.min(self.budget_bytes);
                return Ok(Pushed::Taken);
            }
            // one group holds most of the buffer: tried again when it has doubled
            self.next_hand_on = self.buffered_bytes.saturating_mul(2);
        }
        if full {
            self.spill()?;
        }
        Ok(Pushed::Taken)
    }

    /// Buffers `b` (in the sort's schema); whether the buffer is now over budget.
    fn buffer(&mut self, b: RecordBatch) -> Result<bool> {
        if b.num_rows() == 0 {
            return Ok(false);
        }
        // SQL engines may produce physical types (views) other than the planned ones: the
        // batches' own schema is the one to sort and spill with
        if self.buffered.is_empty() && self.runs.is_empty() && b.schema() != self.schema {
            self.schema = b.schema();
            self.converter = key_converter(&self.schema, &self.keys)?;
        }
        let b = if b.schema() == self.schema {
            b
        } else {
            let cols = b
                .columns()
                .iter()
                .zip(self.schema.fields())
                .map(|(c, f)| arrow::compute::cast(c, f.data_type()))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| Error::format("sort", e))?;
            RecordBatch::try_new(self.schema.clone(), cols).map_err(|e| Error::format("sort", e))?
        };
        self.buffered_bytes += b.get_array_memory_size();
        self.buffered.push(b);
        Ok(self.buffered_bytes > self.budget_bytes)
    }

    /// Hands `out` the buffered rows of every group of the first key column but the last
    /// one (which later rows may add to), sorted, in whole batches of [`OUT_ROWS`] (the rest
    /// stays buffered); whether any were handed on. The rows came in that column's order
    /// (checked by [`Self::push_to`]), so those groups are complete.
    fn hand_on_groups(&mut self, out: &mut dyn FnMut(RecordBatch) -> Result<()>) -> Result<bool> {
        // the check of the first key column knows the last row's value
        let Groups::Watching(Some(check)) = &self.groups else { return Ok(false) };
        let Some(last) = check.last() else { return Ok(false) };
        // the first row of the last group: rows before it are in groups that have ended
        let mut split = None;
        for (i, b) in self.buffered.iter().enumerate().rev() {
            let Some(rows) = check.rows(b)? else { return Ok(false) };
            // rows are in that column's order: a binary search finds the group's first row
            let (mut lo, mut hi) = (0, rows.num_rows());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if rows.row(mid) < last.row() { lo = mid + 1 } else { hi = mid }
            }
            if lo > 0 {
                split = Some((i, lo));
                break;
            }
        }
        let Some((i, at)) = split else { return Ok(false) };
        let mut rest: Vec<RecordBatch> = self.buffered.split_off(i + 1);
        let cut = self.buffered.pop().expect("batch i");
        if at < cut.num_rows() {
            rest.insert(0, cut.slice(at, cut.num_rows() - at));
        }
        self.buffered.push(cut.slice(0, at));
        self.buffered_bytes = self.buffered.iter().map(|b| b.get_array_memory_size()).sum();
        let complete: u64 = self.buffered.iter().map(|b| b.num_rows() as u64).sum();
        // the rows of a last short batch stay first in the buffer: sorted before everything
        // after them, they start the next batch handed on
        let kept = self.drain_sorted_but(OUT_ROWS, true, out)?;
        let kept_rows = kept.as_ref().map_or(0, |b| b.num_rows() as u64);
        self.early_rows += complete - kept_rows;
        rest.splice(0..0, kept);
        self.buffered_bytes = rest.iter().map(|b| b.get_array_memory_size()).sum();
        self.buffered = rest;
        // nothing handed on (the groups that ended hold less than a batch): the buffer is
        // still full, and goes to a run
        Ok(kept_rows < complete)
    }

    /// Hands the buffered rows to `out` in key order (stable), `chunk` rows at a time, and
    /// empties the buffer. Only the key columns are converted and sorted; the rows themselves
    /// are gathered chunk by chunk, so memory stays at the buffer plus one chunk.
    fn drain_sorted(&mut self, chunk: usize, out: &mut dyn FnMut(RecordBatch) -> Result<()>) -> Result<()> {
        self.drain_sorted_but(chunk, false, out).map(|_| ())
    }

    /// [`Self::drain_sorted`]; with `keep_last`, a last batch of fewer than `chunk` rows is
    /// returned rather than handed on (so that the rows handed on are cut in batches as a
    /// sort of everything at the end cuts them).
    fn drain_sorted_but(
        &mut self,
        chunk: usize,
        keep_last: bool,
        out: &mut dyn FnMut(RecordBatch) -> Result<()>,
    ) -> Result<Option<RecordBatch>> {
        if self.buffered.is_empty() {
            return Ok(None);
        }
        let order = match self.order_within_groups()? {
            Some(order) => order,
            None => {
                let keyed: Vec<Rows> = self.buffered.iter().map(|b| self.rows(b)).collect::<Result<_>>()?;
                let mut order: Vec<(usize, usize)> = Vec::with_capacity(keyed.iter().map(|r| r.num_rows()).sum());
                for (i, b) in self.buffered.iter().enumerate() {
                    order.extend((0..b.num_rows()).map(|r| (i, r)));
                }
                // a stable sort: equal keys keep their input order
                order.sort_by(|&(ab, ar), &(bb, br)| keyed[ab].row(ar).cmp(&keyed[bb].row(br)));
                order
            }
        };
        let refs: Vec<&RecordBatch> = self.buffered.iter().collect();
        let chunk = rows_per_chunk(self.buffered_bytes, order.len(), chunk);
        let mut kept = None;
        for picks in order.chunks(chunk) {
            let b = interleave_record_batch(&refs, picks).map_err(|e| Error::format("sort", e))?;
            if keep_last && picks.len() < chunk {
                kept = Some(b);
            } else {
                out(b)?;
            }
        }
        self.buffered.clear();
        self.buffered_bytes = 0;
        Ok(kept)
    }

    /// The buffered rows' key order, as (batch, row) pairs, when they came in order of the
    /// first key column (checked by [`Self::push_to`]) and there are more key columns: each
    /// group of equal first keys is already in its place, so only its own rows are sorted,
    /// by the other key columns (stably). `None` when the rows are not known to be so, or
    /// the first key column's values cannot be compared for equality.
    ///
    /// The same order as comparing whole keys, for less: the first key is neither converted
    /// nor compared row against row (long texts such as Tinker URIs cost most there).
    fn order_within_groups(&self) -> Result<Option<Vec<(usize, usize)>>> {
        let in_order = matches!(&self.groups, Groups::Watching(Some(check)) if check.in_order());
        if !in_order || self.keys.len() < 2 {
            return Ok(None);
        }
        let first = self.keys[0];
        let rest = key_converter(&self.schema, &self.keys[1..])?;
        let mut order: Vec<(usize, usize)> = Vec::with_capacity(self.buffered.iter().map(|b| b.num_rows()).sum());
        // the rows of each group of equal first keys: a range of `order`
        let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
        let mut keyed: Vec<Rows> = Vec::with_capacity(self.buffered.len());
        let mut last_first: Option<ArrayRef> = None;
        for (i, b) in self.buffered.iter().enumerate() {
            // compared as the sort compares them: NaNs made one, pointers made keys
            let column = sortable(&self.schema, first, b.column(first));
            let Ok(parts) = arrow::compute::partition(std::slice::from_ref(&column)) else { return Ok(None) };
            // whether the batch's first row is in the group of the batch before's last
            let continues = match &last_first {
                Some(before) => match arrow::array::make_comparator(before, &column, Default::default()) {
                    Ok(cmp) => cmp(before.len() - 1, 0).is_eq(),
                    Err(_) => return Ok(None),
                },
                None => false,
            };
            for (j, part) in parts.ranges().into_iter().enumerate() {
                let start = order.len();
                order.extend(part.map(|r| (i, r)));
                match groups.last_mut() {
                    Some(group) if j == 0 && continues => group.end = order.len(),
                    _ => groups.push(start..order.len()),
                }
            }
            let cols: Vec<ArrayRef> =
                self.keys[1..].iter().map(|&k| sortable(b.schema_ref(), k, b.column(k))).collect();
            keyed.push(rest.convert_columns(&cols).map_err(|e| Error::format("sort", e))?);
            last_first = Some(column);
        }
        for group in groups {
            // a stable sort: equal keys keep their input order
            order[group].sort_by(|&(ab, ar), &(bb, br)| keyed[ab].row(ar).cmp(&keyed[bb].row(br)));
        }
        Ok(Some(order))
    }

    fn spill(&mut self) -> Result<()> {
        if self.buffered.is_empty() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let path = self.dir.join(format!("run-{:05}.arrow", self.runs.len()));
        let mut w = staging_file(&path, &self.schema)?;
        let shown = path.display().to_string();
        self.drain_sorted(RUN_BATCH_ROWS, &mut |b| w.write(&b).map_err(|e| Error::format(&shown, e)))?;
        w.finish().map_err(|e| Error::format(path.display().to_string(), e))?;
        self.runs.push(path);
        Ok(())
    }

    /// Ends the input; calls `out` with the sorted rows, batch by batch.
    pub fn finish(mut self, out: &mut dyn FnMut(RecordBatch) -> Result<()>) -> Result<()> {
        if self.runs.is_empty() {
            return self.drain_sorted(OUT_ROWS, out);
        }
        self.spill()?;
        self.merge(out)
    }

    fn merge(&self, out: &mut dyn FnMut(RecordBatch) -> Result<()>) -> Result<()> {
        struct Run {
            reader: arrow::ipc::reader::FileReader<std::io::BufReader<std::fs::File>>,
            batch: usize,
            rows: Rows,
            pos: usize,
        }
        let mut batches: Vec<RecordBatch> = Vec::new();
        let mut runs: Vec<Run> = Vec::new();
        let mut heap: BinaryHeap<Reverse<(OwnedRow, usize)>> = BinaryHeap::new();
        for (i, path) in self.runs.iter().enumerate() {
            let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
            let mut reader = arrow::ipc::reader::FileReader::try_new(std::io::BufReader::new(f), None)
                .map_err(|e| Error::format(path.display().to_string(), e))?;
            if let Some(b) = reader.next() {
                let b = b.map_err(|e| Error::format(path.display().to_string(), e))?;
                let rows = self.rows(&b)?;
                heap.push(Reverse((rows.row(0).owned(), i)));
                batches.push(b);
                runs.push(Run { reader, batch: batches.len() - 1, rows, pos: 0 });
            } else {
                return Err(Error::format(path.display().to_string(), "empty sort run"));
            }
        }
        // runs are numbered in input order, so ties resolve to the earlier run: stable
        let out_rows = rows_per_chunk(
            batches.iter().map(|b| b.get_array_memory_size()).sum(),
            batches.iter().map(|b| b.num_rows()).sum(),
            OUT_ROWS,
        );
        let mut picks: Vec<(usize, usize)> = Vec::with_capacity(out_rows);
        while let Some(Reverse((_, i))) = heap.pop() {
            let run = &mut runs[i];
            picks.push((run.batch, run.pos));
            run.pos += 1;
            if run.pos == run.rows.num_rows() {
                if let Some(b) = run.reader.next() {
                    let b = b.map_err(|e| Error::format(self.runs[i].display().to_string(), e))?;
                    run.rows = self.rows(&b)?;
                    batches.push(b);
                    run.batch = batches.len() - 1;
                    run.pos = 0;
                    heap.push(Reverse((run.rows.row(0).owned(), i)));
                }
            } else {
                heap.push(Reverse((run.rows.row(run.pos).owned(), i)));
            }
            if picks.len() == out_rows || heap.is_empty() {
                let refs: Vec<&RecordBatch> = batches.iter().collect();
                let merged = interleave_record_batch(&refs, &picks).map_err(|e| Error::format("sort", e))?;
                out(merged)?;
                picks.clear();
                // drop batches no run points at any more
                let live: Vec<usize> = runs.iter().map(|r| r.batch).collect();
                let mut keep: Vec<RecordBatch> = Vec::with_capacity(live.len());
                for r in runs.iter_mut() {
                    keep.push(batches[r.batch].clone());
                    r.batch = keep.len() - 1;
                }
                batches = keep;
                drop(live);
            }
        }
        for p in &self.runs {
            let _ = std::fs::remove_file(p);
        }
        Ok(())
    }
}

/// Row converter for the columns `keys` of `schema` in the sort's order: ascending, nulls
/// last.
fn key_converter(schema: &SchemaRef, keys: &[usize]) -> Result<RowConverter> {
    let fields: Vec<SortField> = keys
        .iter()
        .map(|&k| {
            let data_type =
                if is_pointer_column(schema, k) { DataType::Binary } else { schema.field(k).data_type().clone() };
            SortField::new_with_options(
                data_type,
                arrow::compute::SortOptions { descending: false, nulls_first: false },
            )
        })
        .collect();
    RowConverter::new(fields).map_err(|e| Error::format("sort", e))
}

/// Whether column `k` of `schema` is a `_source_line` held as text: JSON Pointers (RFC 6901)
/// of the records of a `format = "json"` source, or line numbers a query cast to text to
/// share the column with them.
fn is_pointer_column(schema: &SchemaRef, k: usize) -> bool {
    let f = schema.field(k);
    f.name() == "_source_line" && matches!(f.data_type(), DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
}

/// Column `k` of a batch as the sort compares it: a `_source_line` of JSON Pointers becomes
/// [`pointer_order_key`]s, so that `/runs/2` comes before `/runs/10` as it does in the file;
/// any other column is itself.
fn sortable(schema: &SchemaRef, k: usize, column: &ArrayRef) -> ArrayRef {
    if !is_pointer_column(schema, k) {
        return crate::core::values::positive_nan(column);
    }
    // SQL's text is a string view; staged and read rows hold plain strings
    let keys: BinaryArray = match column.data_type() {
        DataType::Utf8View => column.as_string_view().iter().map(|p| p.map(pointer_order_key)).collect(),
        DataType::LargeUtf8 => column.as_string::<i64>().iter().map(|p| p.map(pointer_order_key)).collect(),
        _ => column.as_string::<i32>().iter().map(|p| p.map(pointer_order_key)).collect(),
    };
    std::sync::Arc::new(keys)
}

/// A byte string whose order is the document order of the JSON Pointer `pointer` (RFC 6901)
/// among pointers into one document: reference tokens compare one by one, array indices
/// (decimal digits) by number and before object keys, keys by their bytes; a pointer comes
/// before the pointers below it. A text that is no pointer (it does not start with `/`) is
/// one token: a line number written as text (`"9"` before `"11"`) orders by number.
fn pointer_order_key(pointer: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(pointer.len() + 8);
    let tokens = match pointer.strip_prefix('/') {
        Some(rest) => rest,
        None if pointer.is_empty() => return out,
        // no pointer: one token
        None => pointer,
    };
    for token in tokens.split('/') {
        match token.parse::<u64>() {
            Ok(i) if token.bytes().all(|b| b.is_ascii_digit()) => {
                out.push(1);
                out.extend_from_slice(&i.to_be_bytes());
            }
            _ => {
                // a zero byte ends the token; one inside it is escaped as 0x00 0xFF
                out.push(2);
                for b in token.bytes() {
                    out.push(b);
                    if b == 0 {
                        out.push(0xFF);
                    }
                }
                out.extend_from_slice(&[0, 0]);
            }
        }
    }
    out
}

/// Creates an Arrow IPC file for rows staged between two steps of a build (a source's rows,
/// a sort run): written once, read once, so its buffers are LZ4-frame compressed (Arrow IPC
/// body compression, Arrow columnar format 1.0), which costs less than writing them whole.
///
/// Errors: [`Error::Io`] when the file cannot be created, [`Error::Format`] when the writer
/// cannot start.
pub fn staging_file(
    path: &std::path::Path,
    schema: &SchemaRef,
) -> Result<arrow::ipc::writer::FileWriter<std::io::BufWriter<std::fs::File>>> {
    let f = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let options = arrow::ipc::writer::IpcWriteOptions::default()
        .try_with_compression(Some(arrow::ipc::CompressionType::LZ4_FRAME))
        .map_err(|e| Error::format(path.display().to_string(), e))?;
    arrow::ipc::writer::FileWriter::try_new_with_options(std::io::BufWriter::with_capacity(1 << 20, f), schema, options)
        .map_err(|e| Error::format(path.display().to_string(), e))
}

/// Watches record batches go by and tells whether their rows arrive in ascending order of
/// some key columns (nulls last, the order of [`ExternalSort`]); equal keys count as in order.
///
/// Costs one row conversion of the key columns per batch; once a row is out of order it
/// stops looking.
pub struct OrderCheck {
    columns: Vec<String>,
    indices: Vec<usize>,
    converter: Option<RowConverter>,
    last: Option<OwnedRow>,
    in_order: bool,
    /// The row of the last batch seen that came out of order (0-based in that batch).
    out_of_order: Option<usize>,
}

impl OrderCheck {
    /// A check of the order by `columns` (names of `schema`'s fields). A column `schema` does
    /// not have, or of a type rows cannot be compared by, makes the check say "not in order";
    /// so does a `_source_line` of JSON Pointers.
    pub fn new(schema: &SchemaRef, columns: Vec<String>) -> Self {
        let indices: Option<Vec<usize>> = columns.iter().map(|c| schema.index_of(c).ok()).collect();
        // JSON Pointers in `_source_line` sort in document order in runpack's sort but in
        // text order in SQL, so rows keyed by them are never declared to SQL as ordered
        let indices = indices.filter(|ix| !ix.iter().any(|&k| is_pointer_column(schema, k)));
        let converter = indices.as_ref().and_then(|ix| key_converter(schema, ix).ok());
        let in_order = converter.is_some();
        OrderCheck {
            columns,
            indices: indices.unwrap_or_default(),
            converter,
            last: None,
            in_order,
            out_of_order: None,
        }
    }

    /// Looks at the next rows.
    ///
    /// Errors: [`Error::Format`] when the key columns cannot be converted for comparison.
    pub fn observe(&mut self, b: &RecordBatch) -> Result<()> {
        if !self.in_order || b.num_rows() == 0 {
            return Ok(());
        }
        let Some(rows) = self.rows(b)? else { return Ok(()) };
        let after_last = self.last.as_ref().is_none_or(|last| last.row() <= rows.row(0));
        self.out_of_order =
            if after_last { (1..rows.num_rows()).find(|&i| rows.row(i - 1) > rows.row(i)) } else { Some(0) };
        self.in_order = self.out_of_order.is_none();
        self.last = self.in_order.then(|| rows.row(rows.num_rows() - 1).owned());
        Ok(())
    }

    /// The key columns of `b`'s rows, as the check compares them; `None` when the check
    /// cannot compare rows (it says "not in order").
    ///
    /// Errors: [`Error::Format`] when the key columns cannot be converted.
    pub fn rows(&self, b: &RecordBatch) -> Result<Option<Rows>> {
        let Some(converter) = &self.converter else { return Ok(None) };
        let cols: Vec<ArrayRef> =
            self.indices.iter().map(|&k| crate::core::values::positive_nan(b.column(k))).collect();
        converter.convert_columns(&cols).map(Some).map_err(|e| Error::format("sort", e))
    }

    /// The key of the last row seen, while every row came in order.
    pub fn last(&self) -> Option<&OwnedRow> {
        self.last.as_ref()
    }

    /// The key columns.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Whether every row seen so far came in key order.
    pub fn in_order(&self) -> bool {
        self.in_order
    }

    /// The first row of the last batch seen whose key comes before the row's before it
    /// (0-based in that batch), once a row came out of order.
    pub fn first_out_of_order(&self) -> Option<usize> {
        self.out_of_order
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::values::compare_pointers;
    use arrow::array::{AsArray, Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Int64Type, Schema};
    use std::sync::Arc;

    #[test]
    fn rows_of_large_cells_are_handed_on_a_few_at_a_time() {
        assert_eq!(rows_per_chunk(0, 0, OUT_ROWS), OUT_ROWS);
        assert_eq!(rows_per_chunk(1 << 20, 1000, OUT_ROWS), OUT_ROWS);
        assert_eq!(rows_per_chunk(300 * (8 << 20), 300, OUT_ROWS), 4);
        assert_eq!(rows_per_chunk(usize::MAX / 2, 1, OUT_ROWS), 1);
        // 40 rows of 2 MiB: sorted, then handed on 16 at a time
        let schema = Arc::new(Schema::new(vec![Field::new("t", DataType::Utf8, false)]));
        let rows: Vec<String> =
            (0..40).map(|i| ((b'a' + (39 - i) as u8 % 26) as char).to_string().repeat(2 << 20)).collect();
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(rows))]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut sort = ExternalSort::new(schema, vec![0], 1 << 30, dir.path().to_path_buf()).unwrap();
        sort.push(batch).unwrap();
        let mut sizes = Vec::new();
        let mut last = String::new();
        sort.finish(&mut |b| {
            sizes.push(b.num_rows());
            for v in b.column(0).as_string::<i32>().iter().flatten() {
                assert!(last.as_str() <= v);
                last = v.to_string();
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(sizes.iter().sum::<usize>(), 40);
        assert!(sizes.iter().all(|&n| n <= 16), "{sizes:?}");
    }

    #[test]
    fn json_pointers_sort_in_document_order() {
        let mut ptrs = vec!["/runs/10", "/runs/2", "", "/runs/2/x", "/a", "/runs/b", "/runs/02x", "/0"];
        ptrs.sort_by_key(|p| pointer_order_key(p));
        assert_eq!(ptrs, vec!["", "/0", "/a", "/runs/2", "/runs/2/x", "/runs/10", "/runs/02x", "/runs/b"]);
        // compared without building keys, in the same order
        for a in &ptrs {
            for b in &ptrs {
                assert_eq!(compare_pointers(a, b), pointer_order_key(a).cmp(&pointer_order_key(b)), "{a} {b}");
            }
        }
        // line numbers cast to text order by number
        let mut lines = vec!["11", "9", "100", "10"];
        lines.sort_by_key(|p| pointer_order_key(p));
        assert_eq!(lines, vec!["9", "10", "11", "100"]);
        // the sorter orders records of a `format = "json"` source the same way
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("_source_line", DataType::Utf8, false),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![1, 1, 1])),
                // in text order, not in document order
                Arc::new(StringArray::from(vec!["/runs/10", "/runs/100", "/runs/9"])),
            ],
        )
        .unwrap();
        let mut sort = ExternalSort::new(schema.clone(), vec![0, 1], 1 << 20, std::env::temp_dir()).unwrap();
        sort.push(batch.clone()).unwrap();
        let mut out = Vec::new();
        sort.finish(&mut |b| {
            out.extend(b.column(1).as_string::<i32>().iter().map(|s| s.unwrap().to_string()));
            Ok(())
        })
        .unwrap();
        assert_eq!(out, vec!["/runs/9", "/runs/10", "/runs/100"]);
        let mut check = OrderCheck::new(&schema, vec!["k".into(), "_source_line".into()]);
        check.observe(&batch).unwrap();
        assert!(!check.in_order());
    }

    #[test]
    fn sorts_across_runs_stably() {
        let schema: SchemaRef =
            Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true), Field::new("v", DataType::Utf8, true)]));
        let dir = tempfile::tempdir().unwrap();
        let mut s = ExternalSort::new(schema.clone(), vec![0], 2_000, dir.path().join("runs")).unwrap();
        let mut expected = Vec::new();
        for chunk in 0..20i64 {
            let keys: Vec<i64> = (0..50).map(|i| (i * 7 + chunk * 13) % 37).collect();
            let vals: Vec<String> = keys.iter().enumerate().map(|(i, _)| format!("{chunk}-{i}")).collect();
            for (k, v) in keys.iter().zip(&vals) {
                expected.push((*k, v.clone()));
            }
            let b = RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(Int64Array::from(keys)), Arc::new(StringArray::from(vals))],
            )
            .unwrap();
            s.push(b).unwrap();
        }
        expected.sort_by_key(|(k, _)| *k); // stable: equal keys keep input order
        let mut got = Vec::new();
        s.finish(&mut |b| {
            let k = b.column(0).as_primitive::<Int64Type>();
            let v = b.column(1).as_string::<i32>();
            for i in 0..b.num_rows() {
                got.push((k.value(i), v.value(i).to_string()));
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(got, expected);
    }

    /// Batches of (k, j, v) rows: `groups` values of k in order, each with `per` rows whose j
    /// runs backwards (so the rows are in order of k but not of (k, j)).
    fn grouped(groups: std::ops::Range<i64>, per: i64) -> (SchemaRef, Vec<RecordBatch>) {
        let schema: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("j", DataType::Int64, true),
            Field::new("v", DataType::Utf8, true),
        ]));
        let batches = groups
            .map(|k| {
                let j: Vec<i64> = (0..per).map(|i| (per - i) / 2).collect();
                let v: Vec<String> = (0..per).map(|i| format!("{k}-{i}")).collect();
                RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        Arc::new(Int64Array::from(vec![k; per as usize])),
                        Arc::new(Int64Array::from(j)),
                        Arc::new(StringArray::from(v)),
                    ],
                )
                .unwrap()
            })
            .collect();
        (schema, batches)
    }

    fn triples(b: &RecordBatch) -> Vec<(i64, i64, String)> {
        let (k, j, v) = (
            b.column(0).as_primitive::<Int64Type>(),
            b.column(1).as_primitive::<Int64Type>(),
            b.column(2).as_string::<i32>(),
        );
        (0..b.num_rows()).map(|i| (k.value(i), j.value(i), v.value(i).to_string())).collect()
    }

    #[test]
    fn groups_of_the_first_key_column_are_handed_on_before_the_end_without_runs() {
        let (schema, batches) = grouped(0..400, 60);
        let mut expected: Vec<_> = batches.iter().flat_map(triples).collect();
        expected.sort_by_key(|(k, j, _)| (*k, *j)); // stable
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs");
        let mut s = ExternalSort::new(schema, vec![0, 1], 300_000, runs.clone()).unwrap().with_early_groups();
        let mut sizes = Vec::new();
        let mut got = Vec::new();
        let mut handed_early = 0;
        for b in batches {
            let pushed = s.push_to(b, &mut |o| {
                sizes.push(o.num_rows());
                got.extend(triples(&o));
                Ok(())
            });
            assert_eq!(pushed.unwrap(), Pushed::Taken);
            handed_early = got.len();
        }
        assert!(handed_early >= 2 * OUT_ROWS, "{handed_early} rows handed on before the end");
        assert_eq!(s.early_rows(), handed_early as u64);
        s.finish(&mut |o| {
            sizes.push(o.num_rows());
            got.extend(triples(&o));
            Ok(())
        })
        .unwrap();
        assert_eq!(got, expected);
        assert!(!runs.exists(), "no run written");
        // cut as a sort of everything at the end cuts: whole batches, then the rest
        let n = sizes.len();
        assert!(sizes[..n - 1].iter().all(|&r| r == OUT_ROWS), "{sizes:?}");
    }

    /// Rows in order of a text first key (nulls last, groups cut across batches at random)
    /// with float and text keys after it (ties, nulls, -0.0, NaNs of both signs) and a unique
    /// value: the sort group by group gives the rows and order of a sort of whole keys.
    #[test]
    fn sorting_group_by_group_orders_rows_as_whole_keys_do() {
        use arrow::array::Float64Array;
        let schema: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("f", DataType::Float64, true),
            Field::new("t", DataType::Utf8, true),
            Field::new("v", DataType::Int64, false),
        ]));
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for case in 0..40 {
            let groups = 1 + next() % 30;
            let mut rows: Vec<(Option<String>, Option<f64>, Option<String>)> = Vec::new();
            for g in 0..=groups {
                // the last group is the null one, when there is one
                let k = (g < groups).then(|| format!("tinker://run-{g:04}/sampler_weights/{:06}", g * 100));
                if g == groups && case % 2 == 0 {
                    break;
                }
                for _ in 0..1 + next() % 40 {
                    let f = match next() % 8 {
                        0 => None,
                        1 => Some(-0.0),
                        2 => Some(0.0),
                        3 => Some(f64::NAN),
                        4 => Some(-f64::NAN),
                        _ => Some((next() % 5) as f64),
                    };
                    let t =
                        (next() % 5 != 0).then(|| ["gsm8k", "math500", "aime24"][(next() % 3) as usize].to_string());
                    rows.push((k.clone(), f, t));
                }
            }
            let mut batches = Vec::new();
            let mut at = 0;
            while at < rows.len() {
                let n = (1 + next() % 25).min((rows.len() - at) as u64) as usize;
                let part = &rows[at..at + n];
                batches.push(
                    RecordBatch::try_new(
                        schema.clone(),
                        vec![
                            Arc::new(StringArray::from(part.iter().map(|r| r.0.clone()).collect::<Vec<_>>())),
                            Arc::new(Float64Array::from(part.iter().map(|r| r.1).collect::<Vec<_>>())),
                            Arc::new(StringArray::from(part.iter().map(|r| r.2.clone()).collect::<Vec<_>>())),
                            Arc::new(Int64Array::from_iter_values(at as i64..(at + n) as i64)),
                        ],
                    )
                    .unwrap(),
                );
                at += n;
            }
            let dir = tempfile::tempdir().unwrap();
            let sorted = |early: bool, budget: usize| {
                let mut s = ExternalSort::new(
                    schema.clone(),
                    vec![0, 1, 2],
                    budget,
                    dir.path().join(format!("r{early}{budget}")),
                )
                .unwrap();
                if early {
                    s = s.with_early_groups();
                }
                let mut got: Vec<i64> = Vec::new();
                let mut take = |o: RecordBatch| {
                    got.extend(o.column(3).as_primitive::<Int64Type>().values().iter().copied());
                    Ok(())
                };
                for b in &batches {
                    assert_eq!(s.push_to(b.clone(), &mut take).unwrap(), Pushed::Taken);
                }
                s.finish(&mut take).unwrap();
                got
            };
            let whole = sorted(false, 1 << 30);
            assert_eq!(whole.len(), rows.len());
            assert_eq!(sorted(true, 1 << 30), whole, "case {case}: in memory");
            assert_eq!(sorted(true, 4_000), whole, "case {case}: through runs");
        }
    }

    #[test]
    fn a_group_out_of_order_after_groups_were_handed_on_is_said() {
        let (schema, mut batches) = grouped(0..400, 60);
        let (_, late) = grouped(3..4, 60);
        batches.extend(late);
        let dir = tempfile::tempdir().unwrap();
        let mut s = ExternalSort::new(schema.clone(), vec![0, 1], 300_000, dir.path().join("runs"))
            .unwrap()
            .with_early_groups();
        let pushed: Vec<Pushed> = batches.into_iter().map(|b| s.push_to(b, &mut |_| Ok(())).unwrap()).collect();
        assert!(s.early_rows() > 0);
        assert_eq!(pushed.last(), Some(&Pushed::Disordered));
        assert!(pushed[..400].iter().all(|p| *p == Pushed::Taken));
        // out of order before anything was handed on: sorted whole, through runs
        let (_, mut batches) = grouped(5..8, 30);
        batches.extend(grouped(0..5, 30).1);
        batches.extend(grouped(8..40, 30).1);
        let mut expected: Vec<_> = batches.iter().flat_map(triples).collect();
        expected.sort_by_key(|(k, j, _)| (*k, *j));
        let mut s =
            ExternalSort::new(schema, vec![0, 1], 20_000, dir.path().join("runs2")).unwrap().with_early_groups();
        let mut got = Vec::new();
        for b in batches {
            assert_eq!(s.push_to(b, &mut |_| panic!("nothing handed on early")).unwrap(), Pushed::Taken);
        }
        s.finish(&mut |o| {
            got.extend(triples(&o));
            Ok(())
        })
        .unwrap();
        assert_eq!(got, expected);
        assert!(dir.path().join("runs2").exists(), "sorted through runs");
    }

    #[test]
    fn order_check_sees_ties_batch_edges_and_nulls() {
        let schema: SchemaRef = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true)]));
        let batch =
            |v: Vec<Option<i64>>| RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(v))]).unwrap();
        let seen = |batches: Vec<Vec<Option<i64>>>| {
            let mut c = OrderCheck::new(&schema, vec!["k".into()]);
            for b in batches {
                c.observe(&batch(b)).unwrap();
            }
            c.in_order()
        };
        assert!(seen(vec![vec![Some(1), Some(1), Some(2)], vec![Some(2), Some(5), None], vec![None]]));
        assert!(!seen(vec![vec![Some(1), Some(3)], vec![Some(2)]]), "across batches");
        assert!(!seen(vec![vec![Some(1), None, Some(2)]]), "nulls come last");
        assert!(!seen(vec![vec![Some(3), Some(2)], vec![Some(4)]]), "stays out of order");
        assert!(!OrderCheck::new(&schema, vec!["missing".into()]).in_order());
    }
}
