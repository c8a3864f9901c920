//! Writing a table: record batches → Parquet (zstd) and, when the pipeline asks for them,
//! JSON Lines copies.
//!
//! In: the rows of one table, already sorted and validated, as Arrow record batches. Out:
//! `data/<table>.parquet` (and `jsonl/<table>.jsonl`), or, past `max_shard_bytes`,
//! `data/<table>-00000-of-0000N.parquet` (and `jsonl/<table>-00000-of-0000N.jsonl`) with the
//! same rows in the same shard of each format.
//!
//! Guarantees: every data file is at most `max_shard_bytes` bytes (a shard that ends up larger
//! is split again); every Parquet row group stays under `row_group_bytes` of uncompressed data
//! (the dataset viewer refuses row groups above 300,000,000 bytes); output bytes depend only on
//! the rows and the options (no timestamps, no hash-map order).
//!
//! The JSON Lines copies are encoded by [`crate::core::jsonl`], non-finite floats as `null`
//! (the Parquet files keep them, and the writer counts them per column: [`WrittenFile::nonfinite`]).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Float64Type, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{CdcOptions, WriterProperties};

use crate::core::error::{Error, Result};
use crate::core::jsonl::{NonFiniteAs, encode_jsonl_as};
pub use crate::core::options::WriteOptions;
use crate::stages::hash::{FileDigest, HashingWriter};

/// The dataset viewer's limit on a row group's uncompressed size, in bytes.
pub const VIEWER_ROW_GROUP_LIMIT_BYTES: u64 = 300_000_000;

/// One file written for a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    /// Path relative to the release folder (`data/runs.parquet`).
    pub path: String,
    /// `parquet` or `jsonl`.
    pub format: &'static str,
    /// Rows in the file.
    pub rows: u64,
    /// SHA-256 and size of the file's bytes, computed while they were written.
    pub digest: crate::stages::hash::FileDigest,
    /// NaN and infinities in the file's rows, by column (columns without any left out):
    /// the Parquet file keeps them, its JSON Lines copy holds `null` in their place.
    pub nonfinite: BTreeMap<String, NonFiniteCount>,
    /// The table's Parquet pages are cut by size, not by content: with content-defined
    /// pages the writer wrote a page of no values (apache/arrow-rs#10929), which pyarrow
    /// refuses to read, so the table's files were written again without them. Holds the
    /// column path where that page was found (`None`: pages cut by content).
    pub pages_cut_by_size: Option<String>,
}

/// How many NaN, +Infinity and -Infinity values a column holds (inside its lists and
/// structs too). In `manifest.json`: `{"NaN": 3, "Infinity": 1}`, zero counts left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NonFiniteCount {
    /// NaN values.
    #[serde(rename = "NaN", default, skip_serializing_if = "is_zero")]
    pub nan: u64,
    /// +Infinity values.
    #[serde(rename = "Infinity", default, skip_serializing_if = "is_zero")]
    pub pos_inf: u64,
    /// -Infinity values.
    #[serde(rename = "-Infinity", default, skip_serializing_if = "is_zero")]
    pub neg_inf: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl NonFiniteCount {
    /// All three counts together.
    pub fn total(&self) -> u64 {
        self.nan + self.pos_inf + self.neg_inf
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &NonFiniteCount) {
        self.nan += other.nan;
        self.pos_inf += other.pos_inf;
        self.neg_inf += other.neg_inf;
    }

    fn observe(&mut self, v: f64) {
        if v.is_nan() {
            self.nan += 1;
        } else if v == f64::INFINITY {
            self.pos_inf += 1;
        } else if v == f64::NEG_INFINITY {
            self.neg_inf += 1;
        }
    }
}

/// Adds the NaN and infinities of each column of `batch` to `counts`, by column name; a
/// value under a null list or struct is not counted (no file holds it).
pub fn count_nonfinite(batch: &RecordBatch, counts: &mut BTreeMap<String, NonFiniteCount>) {
    for (f, col) in batch.schema().fields().iter().zip(batch.columns()) {
        if !holds_floats(f.data_type()) {
            continue;
        }
        let mut c = NonFiniteCount::default();
        count_in(col.as_ref(), 0..col.len(), &mut c);
        if c.total() > 0 {
            counts.entry(f.name().clone()).or_default().add(&c);
        }
    }
}

fn holds_floats(dt: &DataType) -> bool {
    match dt {
        DataType::Float64 => true,
        DataType::List(f) => holds_floats(f.data_type()),
        DataType::Struct(fs) => fs.iter().any(|f| holds_floats(f.data_type())),
        _ => false,
    }
}

fn count_in(a: &dyn Array, rows: std::ops::Range<usize>, c: &mut NonFiniteCount) {
    match a.data_type() {
        DataType::Float64 => {
            let f = a.as_primitive::<Float64Type>();
            // values first (a null's slot holds some value too), validity only for the rare
            // non-finite one
            let start = rows.start;
            for (k, &v) in f.values()[rows].iter().enumerate() {
                if !v.is_finite() && f.is_valid(start + k) {
                    c.observe(v);
                }
            }
        }
        DataType::List(_) => {
            let l = a.as_list::<i32>();
            let offsets = l.value_offsets();
            for i in rows {
                if l.is_valid(i) {
                    count_in(l.values().as_ref(), offsets[i] as usize..offsets[i + 1] as usize, c);
                }
            }
        }
        DataType::Struct(fs) => {
            let s = a.as_struct();
            for (f, col) in fs.iter().zip(s.columns()) {
                if !holds_floats(f.data_type()) {
                    continue;
                }
                if s.null_count() == 0 {
                    count_in(col.as_ref(), rows.clone(), c);
                } else {
                    for i in rows.clone().filter(|&i| s.is_valid(i)) {
                        count_in(col.as_ref(), i..i + 1, c);
                    }
                }
            }
        }
        _ => {}
    }
}

/// A piece of JSON Lines text for a copy's thread: the encoded batch, and the byte range of
/// the rows that go to the shard.
type LinesPiece = (Arc<Vec<u8>>, std::ops::Range<usize>);

struct Shard {
    parquet: Sink<ParquetCommand>,
    /// The JSON Lines copy, when the table has copies.
    jsonl: Option<Sink<LinesPiece>>,
    parquet_path: PathBuf,
    jsonl_path: PathBuf,
    /// JSON Lines bytes of the shard's rows (for a table without copies, the sizes of their
    /// values, [`row_ends`]): they foresee the Parquet size.
    jsonl_bytes: u64,
    /// NaN and infinities of the shard's rows, by column.
    nonfinite: BTreeMap<String, NonFiniteCount>,
    rows: u64,
    /// JSON Lines bytes of the rows in the Parquet row group being written.
    row_group_bytes: u64,
}

/// Largest dictionary page of a column chunk, in bytes (128 KiB): a column with more
/// distinct values than that (measurements, ids) is written plain after the first ones
/// instead of being interned whole; columns with few values (names, labels, flags) keep
/// their dictionary.
pub const DICTIONARY_PAGE_BYTES: usize = 128 << 10;

/// The content-defined chunking a table's Parquet files are written with: the chunker's
/// defaults (pyarrow's: pages of 256 KiB to 1 MiB of values, `norm_level` 0), or `None`
/// when pages are cut by size.
pub fn cdc_options(opts: &WriteOptions) -> Option<CdcOptions> {
    opts.content_defined_chunking.then(CdcOptions::default)
}

/// The writer's own limits of a content-defined Parquet page, in rows and in bytes: 2^40,
/// none in practice, so that only the chunker cuts pages (at most 1 MiB of values each, or
/// one larger value). Not `usize::MAX`: the writer adds the row limit to a row offset.
const CDC_WRITER_PAGE_LIMIT: usize = 1 << 40;

/// The Parquet writer's settings of a table of `schema`: zstd, row groups of
/// `opts.row_group_rows`, page statistics, content-defined pages when asked, and deltas for
/// `_source_line`.
///
/// Errors: [`Error::Format`] for a zstd level the codec refuses.
fn table_properties(schema: &SchemaRef, opts: &WriteOptions) -> Result<WriterProperties> {
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(opts.zstd_level).map_err(|e| Error::format("zstd level", e))?,
        ))
        .set_max_row_group_row_count(Some(opts.row_group_rows))
        .set_created_by(format!("runpack {}", env!("CARGO_PKG_VERSION")))
        .set_dictionary_page_size_limit(DICTIONARY_PAGE_BYTES)
        // page statistics (the column index) and the offset index are the writer's default:
        // with content-defined pages they make the Hub's "Optimized Parquet"
        .set_statistics_enabled(parquet::file::properties::EnabledStatistics::Page)
        .set_content_defined_chunking(cdc_options(opts));
    // a page cut every 20,000 rows or 1 MiB (the writer's defaults) would fall at fixed
    // places and shift with every row inserted before it: content-defined pages are cut
    // by the chunker alone (1 MiB of values, or one value larger than that). Cut by size
    // too, a page that fills at the end of a chunk is written, then the chunk's own break
    // writes a page of no values (apache/arrow-rs#10929), which pyarrow may refuse to read
    let props = if opts.content_defined_chunking {
        props.set_data_page_row_count_limit(CDC_WRITER_PAGE_LIMIT).set_data_page_size_limit(CDC_WRITER_PAGE_LIMIT)
    } else {
        props
    };
    // floats without a dictionary: measurements are mostly distinct, so a float column's
    // dictionary filled up and fell back in every column chunk, and a fallback at a
    // content-defined page's end wrote a page of no values (apache/arrow-rs#10929; one of
    // 150 float column chunks of the bench's 5 GB build), which made the table be written
    // again with pages cut by size; every float leaf, inside lists and structs too
    let leaves = parquet::arrow::ArrowSchemaConverter::new().convert(schema).map_err(|e| Error::format("schema", e))?;
    let props = leaves
        .columns()
        .iter()
        .filter(|c| {
            matches!(c.physical_type(), parquet::basic::Type::FLOAT | parquet::basic::Type::DOUBLE)
                || matches!(c.logical_type_ref(), Some(parquet::basic::LogicalType::Float16))
        })
        .fold(props, |p, c| p.set_column_dictionary_enabled(c.path().clone(), false));
    // line numbers are distinct and rising: deltas, not a dictionary
    Ok(match schema.field_with_name("_source_line") {
        Ok(f) if f.data_type() == &DataType::Int64 => {
            let line = parquet::schema::types::ColumnPath::from("_source_line");
            props
                .set_column_dictionary_enabled(line.clone(), false)
                .set_column_encoding(line, parquet::basic::Encoding::DELTA_BINARY_PACKED)
        }
        _ => props,
    }
    .build())
}

/// The footer of Parquet file `path` with its page index (column and offset indexes, when
/// written).
///
/// Errors: [`Error::Io`] or [`Error::Format`] when the file's metadata cannot be read.
pub fn footer_with_page_index(path: &Path) -> Result<parquet::file::metadata::ParquetMetaData> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    parquet::file::metadata::ParquetMetaDataReader::new()
        .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Optional)
        .parse_and_finish(&f)
        .map_err(|e| Error::format(path.display().to_string(), e))
}

/// The first data page of no values in a Parquet file's footer `meta`, as (row group, column
/// path), read from its offset index (a page whose first row is the next one's, or the row
/// group's end); `None` when there is none or the file has no offset index. Such a page
/// (apache/arrow-rs#10929) makes pyarrow refuse the file.
pub fn first_empty_page(meta: &parquet::file::metadata::ParquetMetaData) -> Option<(usize, String)> {
    for (i, (rg, columns)) in meta.row_groups().iter().zip(meta.offset_index()?).enumerate() {
        for (c, column) in columns.iter().enumerate() {
            let firsts: Vec<i64> = column.page_locations().iter().map(|p| p.first_row_index).collect();
            if firsts.windows(2).any(|w| w[0] == w[1]) || firsts.last().is_some_and(|&l| l >= rg.num_rows()) {
                return Some((i, rg.column(c).column_path().string()));
            }
        }
    }
    None
}

/// Streams one table into shards.
pub struct TableWriter {
    name: String,
    schema: SchemaRef,
    root: PathBuf,
    opts: WriteOptions,
    /// The table's pages are cut by size: content-defined, the writer wrote a page of no
    /// values ([`WrittenFile::pages_cut_by_size`]).
    pages_cut_by_size: Option<String>,
    /// Whether JSON Lines copies are written beside the Parquet files.
    copies: bool,
    props: WriterProperties,
    current: Option<Shard>,
    done: Vec<DoneShard>,
    next_index: usize,
    /// Parquet bytes per JSONL byte seen in closed shards (used to foresee the Parquet size).
    ratio: f64,
    /// Largest JSON Lines encoding of a batch so far, in bytes (the next buffer's capacity).
    lines_capacity: usize,
    /// Line ends of the batch being written, kept between batches.
    ends: Vec<usize>,
}

impl TableWriter {
    /// A writer for table `name` under release folder `root`, with JSON Lines copies when
    /// `copies`. `name` may hold one `/` (`<table>/<split>`), which becomes a folder under
    /// `data/` and `jsonl/`.
    pub fn new(name: &str, schema: SchemaRef, root: &Path, opts: WriteOptions, copies: bool) -> Result<Self> {
        let dirs: &[&str] = if copies { &["data", "jsonl"] } else { &["data"] };
        for d in dirs {
            let p = root.join(d);
            std::fs::create_dir_all(&p).map_err(|e| Error::io(&p, e))?;
        }
        let props = table_properties(&schema, &opts)?;
        Ok(TableWriter {
            name: name.to_string(),
            schema,
            root: root.to_path_buf(),
            opts,
            copies,
            props,
            current: None,
            done: Vec::new(),
            next_index: 0,
            pages_cut_by_size: None,
            ratio: 0.5,
            lines_capacity: 0,
            ends: Vec::new(),
        })
    }

    fn open_shard(&mut self) -> Result<Shard> {
        let i = self.next_index;
        self.next_index += 1;
        // `.<table>-[<split>-]<n>`: table and split names hold no `-`, so every table's
        // unfinished files have a prefix of their own ([`remove_unfinished`])
        let flat = self.name.replace('/', "-");
        let parquet_path = self.root.join("data").join(format!(".{flat}-{i:05}.parquet.part"));
        let jsonl_path = self.root.join("jsonl").join(format!(".{flat}-{i:05}.jsonl.part"));
        let pf = File::create(&parquet_path).map_err(|e| Error::io(&parquet_path, e))?;
        let parquet = ArrowWriter::try_new(pf, self.schema.clone(), Some(self.props.clone()))
            .map_err(|e| Error::format(parquet_path.display().to_string(), e))?;
        let shown = parquet_path.display().to_string();
        let written = parquet_path.clone();
        // the writer splits a batch longer than a row group by calling itself on the rest, once
        // per row group: batches go in row-group-sized slices, so small row groups cannot
        // overflow the thread's stack
        let group = self.opts.row_group_rows.max(1);
        let parquet = Sink::start(parquet_path.clone(), move |rx| {
            let mut writer = parquet;
            for cmd in rx {
                match cmd {
                    ParquetCommand::Rows(b) => (0..b.num_rows())
                        .step_by(group)
                        .try_for_each(|at| writer.write(&b.slice(at, group.min(b.num_rows() - at)))),
                    ParquetCommand::Flush => writer.flush(),
                }
                .map_err(|e| Error::format(&shown, e))?;
            }
            writer.into_inner().map_err(|e| Error::format(&shown, e))?;
            // hashed once written, not as it is written: the writer writes a row group at
            // once when it closes it (tens of MB), and hashing it then, on this thread,
            // held up every thread that feeds it (~40 ms per 80 MB); read back from the page
            // cache, the file is hashed when this thread is otherwise done (for a table's last
            // file, while the next table runs)
            crate::stages::hash::sha256_file(&written)
        });
        if !self.copies {
            return Ok(Shard {
                parquet,
                jsonl: None,
                parquet_path,
                jsonl_path,
                jsonl_bytes: 0,
                nonfinite: BTreeMap::new(),
                rows: 0,
                row_group_bytes: 0,
            });
        }
        let jf = File::create(&jsonl_path).map_err(|e| Error::io(&jsonl_path, e))?;
        let jsonl_shown = jsonl_path.clone();
        let jsonl = Sink::start(jsonl_path.clone(), move |rx| {
            // a buffer no larger than the pieces the hashing writer passes on, so that a
            // whole piece goes straight to the file instead of being copied into the buffer
            let mut w = HashingWriter::new(BufWriter::with_capacity(
                crate::stages::hash::WRITE_PIECE_BYTES,
                EarlyWriteback::new(jf),
            ));
            for (text, range) in rx {
                let text: Arc<Vec<u8>> = text;
                w.write_all(&text[range]).map_err(|e| Error::io(&jsonl_shown, e))?;
            }
            let (mut file, digest) = w.finish();
            file.flush().map_err(|e| Error::io(&jsonl_shown, e))?;
            Ok(digest)
        });
        Ok(Shard {
            parquet,
            jsonl: Some(jsonl),
            parquet_path,
            jsonl_path,
            jsonl_bytes: 0,
            nonfinite: BTreeMap::new(),
            rows: 0,
            row_group_bytes: 0,
        })
    }

    /// Writes a batch (rows in final order).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let mut lines = Vec::new();
        let mut ends = std::mem::take(&mut self.ends);
        ends.clear();
        if self.copies {
            lines.reserve(self.lines_capacity);
            encode_jsonl_as(batch, &mut lines, &mut ends, NonFiniteAs::Null)?;
            self.lines_capacity = self.lines_capacity.max(lines.len());
        } else {
            // no copy to write: the rows are sized from their values, without encoding them
            row_ends(batch, &mut ends);
        }
        let written = self.write_encoded(batch, Arc::new(lines), &ends);
        self.ends = ends;
        written
    }

    /// Writes `batch`, whose JSON Lines encoding is `lines` (row i ends at `ends[i]`); for a
    /// table without copies, `lines` is empty and `ends` are [`row_ends`].
    fn write_encoded(&mut self, batch: &RecordBatch, lines: Arc<Vec<u8>>, ends: &[usize]) -> Result<()> {
        let mut start = 0usize;
        while start < batch.num_rows() {
            if self.current.is_none() {
                let s = self.open_shard()?;
                self.current = Some(s);
            }
            // rows that fit in this shard (JSONL exact, Parquet foreseen from the JSONL size,
            // so that the cut never depends on how far the Parquet thread has got)
            let cap = self.opts.max_shard_bytes;
            let copies = self.copies;
            let mut end = start;
            {
                let shard = self.current.as_ref().expect("open");
                let mut jbytes = shard.jsonl_bytes;
                while end < batch.num_rows() {
                    let len = (ends[end] - if end == 0 { 0 } else { ends[end - 1] }) as u64;
                    let pq_est = (jbytes + len) as f64 * self.ratio;
                    if shard.rows + (end - start) as u64 > 0 && ((copies && jbytes + len > cap) || pq_est > cap as f64)
                    {
                        break;
                    }
                    jbytes += len;
                    end += 1;
                }
            }
            if end == start {
                self.close_shard()?;
                continue;
            }
            let shard = self.current.as_mut().expect("open");
            let from = if start == 0 { 0 } else { ends[start - 1] };
            shard.jsonl_bytes += (ends[end - 1] - from) as u64;
            let cap = (self.opts.row_group_bytes as f64 * 0.9) as u64;
            // the files are written (and hashed) on their own threads while this one goes on
            send_parquet_rows(&mut shard.parquet, &mut shard.row_group_bytes, batch, ends, start..end, cap)?;
            count_nonfinite(&batch.slice(start, end - start), &mut shard.nonfinite);
            if let Some(jsonl) = shard.jsonl.as_mut() {
                jsonl.send((lines.clone(), from..ends[end - 1]))?;
            }
            shard.rows += (end - start) as u64;
            start = end;
        }
        Ok(())
    }

    fn close_shard(&mut self) -> Result<()> {
        let Some(shard) = self.current.take() else { return Ok(()) };
        let jsonl_digest = shard.jsonl.map(Sink::finish).transpose()?;
        let parquet_digest = shard.parquet.finish()?;
        // a page of no values that the writer would keep there (apache/arrow-rs#10929): the
        // table is written again, its pages cut by size
        let empty_page = match self.opts.content_defined_chunking {
            true => first_empty_page(&footer_with_page_index(&shard.parquet_path)?),
            false => None,
        };
        if let Some((_, column)) = empty_page {
            self.opts.content_defined_chunking = false;
            self.props = table_properties(&self.schema, &self.opts)?;
            self.pages_cut_by_size = Some(column);
            let copy = jsonl_digest.is_some().then_some(shard.jsonl_path);
            // the shards closed before are written again too: the table's pages cut one way
            for d in std::mem::take(&mut self.done) {
                let copy = d.jsonl.map(|(p, _)| p);
                self.rewrite(d.parquet.0, copy, d.rows, 1)?;
            }
            return self.rewrite(shard.parquet_path, copy, shard.rows, 1);
        }
        let pq = parquet_digest.bytes;
        if shard.jsonl_bytes > 0 {
            self.ratio = self.ratio.max(pq as f64 / shard.jsonl_bytes as f64);
        }
        let max = self.opts.max_shard_bytes;
        // a row is never cut: one that alone makes a file above the limit is refused, in
        // either format (a shard holds more than one row only while both fit)
        let jsonl_over = jsonl_digest.is_some() && shard.jsonl_bytes > max;
        if shard.rows <= 1 && (pq > max || jsonl_over) {
            let (what, bytes) =
                if pq > max { ("a Parquet file", pq) } else { ("a JSON Lines file", shard.jsonl_bytes) };
            return Err(Error::Refused(format!(
                "table {}: a single row makes {what} of {}, above --max-shard-bytes {}",
                self.name,
                crate::core::numbers::human_bytes(bytes),
                crate::core::numbers::human_bytes(max)
            )));
        }
        if pq > max {
            let copy = jsonl_digest.is_some().then_some(shard.jsonl_path);
            return self.rewrite(shard.parquet_path, copy, shard.rows, 2);
        }
        self.done.push(DoneShard {
            parquet: (shard.parquet_path, parquet_digest),
            jsonl: jsonl_digest.map(|d| (shard.jsonl_path, d)),
            rows: shard.rows,
            nonfinite: shard.nonfinite,
        });
        Ok(())
    }

    /// Writes a closed shard again, as `parts` shards (2: an oversized shard's halves).
    ///
    /// The shard is read back a batch at a time and each batch written as it is read, so that
    /// memory holds a batch, not the shard: a table of gigabytes is written again in the
    /// memory of its first writing. Its files are removed once read.
    fn rewrite(&mut self, parquet_path: PathBuf, jsonl_path: Option<PathBuf>, rows: u64, parts: u64) -> Result<()> {
        let shown = || parquet_path.display().to_string();
        let f = File::open(&parquet_path).map_err(|e| Error::io(&parquet_path, e))?;
        let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
            .map_err(|e| Error::format(shown(), e))?;
        let batch_rows = rewrite_batch_rows(builder.metadata());
        let reader = builder.with_batch_size(batch_rows).build().map_err(|e| Error::format(shown(), e))?;
        let size = rows.div_ceil(parts.max(1)).max(1);
        // rows written to the part being written, when one is open
        let mut part: Option<u64> = None;
        for batch in reader {
            let mut batch = batch.map_err(|e| Error::format(shown(), e))?;
            while batch.num_rows() > 0 {
                let written = match part {
                    Some(n) => n,
                    None => {
                        let s = self.open_shard()?;
                        self.current = Some(s);
                        if parts > 1 {
                            // tighten the foresight so that the parts are closed early enough
                            self.ratio *= 1.5;
                        }
                        0
                    }
                };
                let take = (size - written).min(batch.num_rows() as u64) as usize;
                self.write(&batch.slice(0, take))?;
                batch = batch.slice(take, batch.num_rows() - take);
                part = Some(written + take as u64);
                if written + take as u64 == size {
                    self.close_shard()?;
                    part = None;
                }
            }
        }
        if part.is_some() {
            self.close_shard()?;
        }
        std::fs::remove_file(&parquet_path).map_err(|e| Error::io(&parquet_path, e))?;
        if let Some(jsonl_path) = jsonl_path {
            std::fs::remove_file(&jsonl_path).map_err(|e| Error::io(&jsonl_path, e))?;
        }
        Ok(())
    }

    /// Closes the last shard and gives the files their final names.
    pub fn finish(mut self) -> Result<Vec<WrittenFile>> {
        if self.current.is_none() && self.done.is_empty() {
            let s = self.open_shard()?;
            self.current = Some(s);
        }
        self.close_shard()?;
        let n = self.done.len();
        let mut out = Vec::new();
        for (i, DoneShard { parquet: (pq, pq_digest), jsonl, rows, nonfinite }) in self.done.into_iter().enumerate() {
            let stem = if n == 1 { self.name.clone() } else { format!("{}-{i:05}-of-{n:05}", self.name) };
            let place = |from: &Path, rel: &str| -> Result<()> {
                if let Some(parent) = self.root.join(rel).parent() {
                    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
                }
                std::fs::rename(from, self.root.join(rel)).map_err(|e| Error::io(from, e))
            };
            let pq_rel = format!("data/{stem}.parquet");
            place(&pq, &pq_rel)?;
            out.push(WrittenFile {
                path: pq_rel,
                format: "parquet",
                rows,
                digest: pq_digest,
                nonfinite: nonfinite.clone(),
                pages_cut_by_size: self.pages_cut_by_size.clone(),
            });
            if let Some((jl, jl_digest)) = jsonl {
                let jl_rel = format!("jsonl/{stem}.jsonl");
                place(&jl, &jl_rel)?;
                out.push(WrittenFile {
                    path: jl_rel,
                    format: "jsonl",
                    rows,
                    digest: jl_digest,
                    nonfinite,
                    pages_cut_by_size: self.pages_cut_by_size.clone(),
                });
            }
        }
        Ok(out)
    }
}

/// Deletes the files of table `table` whose writing did not finish (its `.part` files under
/// `data/` and `jsonl/` of release folder `root`; a finished table has none). Other tables'
/// files are left alone: one may still be being written.
///
/// Errors: [`Error::Io`] when a folder cannot be listed or a file deleted.
pub fn remove_unfinished(root: &Path, table: &str) -> Result<()> {
    let prefix = format!(".{table}-");
    for d in ["data", "jsonl"] {
        let dir = root.join(d);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries {
            let path = e.map_err(|e| Error::io(&dir, e))?.path();
            let ours = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix));
            if ours && path.extension().is_some_and(|x| x == "part") {
                std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
            }
        }
    }
    Ok(())
}

/// A closed shard waiting for its final name: (path, digest) of each format written, its
/// rows, and their NaN and infinities by column.
struct DoneShard {
    parquet: (PathBuf, FileDigest),
    jsonl: Option<(PathBuf, FileDigest)>,
    rows: u64,
    nonfinite: BTreeMap<String, NonFiniteCount>,
}

/// What the thread of a Parquet file is asked to do.
enum ParquetCommand {
    /// Append these rows to the open row group.
    Rows(RecordBatch),
    /// Close the open row group.
    Flush,
}

/// One output file written on its own thread from commands sent in order through a bounded
/// channel (so at most a few batches wait in memory). Every decision about rows, row groups
/// and shards is taken by the sender, so the file's bytes do not depend on thread timing.
struct Sink<C: Send + 'static> {
    tx: Option<std::sync::mpsc::SyncSender<C>>,
    thread: Option<std::thread::JoinHandle<Result<FileDigest>>>,
    path: PathBuf,
}

impl<C: Send + 'static> Sink<C> {
    /// Runs `write` on a new thread over the commands; it returns the digest of the file.
    fn start(
        path: PathBuf,
        write: impl FnOnce(std::sync::mpsc::Receiver<C>) -> Result<FileDigest> + Send + 'static,
    ) -> Sink<C> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<C>(4);
        let thread = std::thread::spawn(move || write(rx));
        Sink { tx: Some(tx), thread: Some(thread), path }
    }

    fn send(&mut self, cmd: C) -> Result<()> {
        let tx = self.tx.as_ref().expect("open");
        if tx.send(cmd).is_err() {
            // the thread stopped on an error: report it
            return match self.join() {
                Err(e) => Err(e),
                Ok(_) => Err(Error::format(self.path.display().to_string(), "the writer stopped early")),
            };
        }
        Ok(())
    }

    fn join(&mut self) -> Result<FileDigest> {
        self.tx = None;
        match self.thread.take().expect("running").join() {
            Ok(r) => r,
            Err(_) => Err(Error::format(self.path.display().to_string(), "the writer thread panicked")),
        }
    }

    /// Ends the file; the digest and size of all of it.
    fn finish(mut self) -> Result<FileDigest> {
        self.join()
    }
}

impl<C: Send + 'static> Drop for Sink<C> {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A file that has the kernel start writing each [`WRITEBACK_BYTES`] written to disk, without
/// waiting (Linux `sync_file_range` with `SYNC_FILE_RANGE_WRITE`), so that the release's
/// `fsync` before it takes its place finds little left to write: a JSON Lines copy of a
/// gigabyte is then on disk as it is written, not all at the end.
struct EarlyWriteback {
    file: File,
    written: u64,
    started: u64,
}

/// Bytes written between two starts of writeback ([`EarlyWriteback`]).
const WRITEBACK_BYTES: u64 = 32 << 20;

impl EarlyWriteback {
    fn new(file: File) -> Self {
        EarlyWriteback { file, written: 0, started: 0 }
    }
}

impl Write for EarlyWriteback {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.written - self.started >= WRITEBACK_BYTES {
            #[cfg(target_os = "linux")]
            {
                use std::os::fd::AsRawFd;
                // SAFETY: the descriptor is this open file's; the call only starts writeback of
                // the range (a failure leaves the bytes to the fsync before the commit)
                unsafe {
                    libc::sync_file_range(
                        self.file.as_raw_fd(),
                        self.started as libc::off64_t,
                        (self.written - self.started) as libc::off64_t,
                        libc::SYNC_FILE_RANGE_WRITE,
                    );
                }
            }
            self.started = self.written;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Sends rows `range` of `batch` to `parquet`, in slices small enough to keep row groups
/// under `cap` bytes; a row's JSON Lines size (`ends[i]` is the end of row i's line) stands for
/// its uncompressed Parquet size (it is not smaller). `row_group_bytes` counts the open row
/// group's bytes.
fn send_parquet_rows(
    parquet: &mut Sink<ParquetCommand>,
    row_group_bytes: &mut u64,
    batch: &RecordBatch,
    ends: &[usize],
    range: std::ops::Range<usize>,
    cap: u64,
) -> Result<()> {
    let len = |i: usize| (ends[i] - if i == 0 { 0 } else { ends[i - 1] }) as u64;
    let mut s = range.start;
    while s < range.end {
        let mut e = s;
        let mut bytes = 0u64;
        while e < range.end && (e == s || bytes + len(e) <= cap / 8) {
            bytes += len(e);
            e += 1;
        }
        if *row_group_bytes > 0 && *row_group_bytes + bytes > cap {
            parquet.send(ParquetCommand::Flush)?;
            *row_group_bytes = 0;
        }
        parquet.send(ParquetCommand::Rows(batch.slice(s, e - s)))?;
        *row_group_bytes += bytes;
        s = e;
    }
    Ok(())
}

/// Sizes of `batch`'s rows as cumulative ends (row i ends at `ends[i]`), like the line ends
/// of its JSON Lines encoding, for a table written without copies: the bytes of each row's
/// values (a fixed-width value its width, a string or binary value its length, a list or
/// struct the sum of its items, a null 1). They decide the cuts between shards and row
/// groups, so they depend on the values alone, never on buffer capacities.
///
/// Own code: Arrow sizes whole arrays (`get_array_memory_size`, buffer capacities), not rows.
pub fn row_ends(batch: &RecordBatch, ends: &mut Vec<usize>) {
    let mut sizes = vec![0u64; batch.num_rows()];
    for column in batch.columns() {
        add_row_sizes(column.as_ref(), &mut sizes);
    }
    let mut end = 0usize;
    ends.extend(sizes.iter().map(|&n| {
        end += n as usize;
        end
    }));
}

/// Rows per batch when a written Parquet file is read back to be written again: about 8 MiB
/// of uncompressed values per batch by the footer's row group sizes, at most 8,192 rows and
/// at least one (a table of large cells is read a few rows at a time).
fn rewrite_batch_rows(meta: &parquet::file::metadata::ParquetMetaData) -> usize {
    let (bytes, rows) = meta
        .row_groups()
        .iter()
        .fold((0u64, 0u64), |(b, r), g| (b + g.total_byte_size().max(0) as u64, r + g.num_rows().max(0) as u64));
    let per_row = bytes.checked_div(rows).unwrap_or(0).max(1);
    ((8u64 << 20) / per_row).clamp(1, 8192) as usize
}

/// Adds the bytes of each value of `array` to `sizes[i]` (`sizes.len() == array.len()`); a
/// null counts at least 1.
fn add_row_sizes(array: &dyn Array, sizes: &mut [u64]) {
    if array.null_count() == 0 {
        return add_value_sizes(array, sizes);
    }
    let mut own = vec![0u64; sizes.len()];
    add_value_sizes(array, &mut own);
    for (i, (size, n)) in sizes.iter_mut().zip(own).enumerate() {
        *size += if array.is_null(i) { n.max(1) } else { n };
    }
}

/// [`add_row_sizes`] without the rule for nulls.
fn add_value_sizes(array: &dyn Array, sizes: &mut [u64]) {
    use arrow::array::AsArray;
    // the bytes of the child rows `offsets[i]..offsets[i + 1]`, for each row i
    fn ranges(child: &dyn Array, offsets: impl Iterator<Item = (usize, usize)>, sizes: &mut [u64]) {
        let mut inner = vec![0u64; child.len()];
        add_row_sizes(child, &mut inner);
        let mut prefix = Vec::with_capacity(inner.len() + 1);
        prefix.push(0u64);
        for n in &inner {
            prefix.push(prefix[prefix.len() - 1] + n);
        }
        for (size, (a, b)) in sizes.iter_mut().zip(offsets) {
            *size += prefix[b] - prefix[a];
        }
    }
    let windows = |o: &[i32]| o.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect::<Vec<_>>();
    let windows64 = |o: &[i64]| o.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect::<Vec<_>>();
    match array.data_type() {
        DataType::Utf8 | DataType::Binary => {
            for (size, (a, b)) in sizes.iter_mut().zip(windows(array.to_data().buffer::<i32>(0))) {
                *size += (b - a) as u64;
            }
        }
        DataType::LargeUtf8 | DataType::LargeBinary => {
            for (size, (a, b)) in sizes.iter_mut().zip(windows64(array.to_data().buffer::<i64>(0))) {
                *size += (b - a) as u64;
            }
        }
        DataType::Utf8View | DataType::BinaryView => {
            // a view's first 4 bytes are its value's length
            for (size, view) in sizes.iter_mut().zip(array.to_data().buffer::<u128>(0)) {
                *size += (*view as u32) as u64;
            }
        }
        DataType::List(_) => {
            let list = array.as_list::<i32>();
            ranges(list.values().as_ref(), windows(list.value_offsets()).into_iter(), sizes);
        }
        DataType::LargeList(_) => {
            let list = array.as_list::<i64>();
            ranges(list.values().as_ref(), windows64(list.value_offsets()).into_iter(), sizes);
        }
        DataType::Map(..) => {
            let map = array.as_map();
            ranges(map.entries(), windows(map.value_offsets()).into_iter(), sizes);
        }
        DataType::FixedSizeList(_, n) => {
            let list = array.as_fixed_size_list();
            let n = *n as usize;
            let start = list.offset() * n;
            ranges(list.values().as_ref(), (0..list.len()).map(|i| (start + i * n, start + (i + 1) * n)), sizes);
        }
        DataType::Struct(_) => {
            for child in array.as_struct().columns() {
                add_row_sizes(child.as_ref(), sizes);
            }
        }
        DataType::Boolean | DataType::Null => sizes.iter_mut().for_each(|s| *s += 1),
        other => {
            let width = other.primitive_width().unwrap_or(8) as u64;
            sizes.iter_mut().for_each(|s| *s += width);
        }
    }
}

/// Number of columns above which the dataset viewer refuses a table.
pub const VIEWER_MAX_COLUMNS: usize = 1000;

/// Counts the leaf columns of a schema (struct members count individually).
pub fn leaf_columns(schema: &arrow::datatypes::Schema) -> usize {
    fn count(dt: &DataType) -> usize {
        match dt {
            DataType::Struct(fs) => fs.iter().map(|f| count(f.data_type())).sum(),
            DataType::List(f) => count(f.data_type()),
            _ => 1,
        }
    }
    schema.fields().iter().map(|f| count(f.data_type())).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Float64Array, ListArray};
    use arrow::datatypes::{Field, Schema};
    use std::sync::Arc;

    #[test]
    fn float_leaves_have_no_dictionary_at_any_depth() {
        let item = Arc::new(Field::new("item", DataType::Float64, true));
        let schema = Arc::new(Schema::new(vec![
            Field::new("f", DataType::Float32, true),
            Field::new("l", DataType::List(item), true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let props = table_properties(&schema, &WriteOptions::default()).unwrap();
        let path =
            |p: &str| parquet::schema::types::ColumnPath::from(p.split('.').map(String::from).collect::<Vec<_>>());
        assert!(!props.dictionary_enabled(&path("f")));
        assert!(!props.dictionary_enabled(&path("l.list.item")));
        assert!(props.dictionary_enabled(&path("s")));
    }

    #[test]
    fn a_shard_written_again_is_read_back_about_8_mib_at_a_time() {
        let meta = |texts: Vec<String>| {
            let schema = Arc::new(Schema::new(vec![Field::new("t", DataType::Utf8, false)]));
            let column = Arc::new(arrow::array::StringArray::from(texts)) as ArrayRef;
            let batch = RecordBatch::try_new(schema.clone(), vec![column]).unwrap();
            let file = tempfile::tempfile().unwrap();
            let mut w = ArrowWriter::try_new(file.try_clone().unwrap(), schema, None).unwrap();
            w.write(&batch).unwrap();
            w.close().unwrap();
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap().metadata().clone()
        };
        // short rows: the reader's usual 8,192; 3 MiB rows: two at a time; 20 MiB rows: one
        assert_eq!(rewrite_batch_rows(&meta(vec!["x".into(); 100])), 8192);
        assert_eq!(rewrite_batch_rows(&meta(vec!["y".repeat(3 << 20); 3])), 2);
        assert_eq!(rewrite_batch_rows(&meta(vec!["z".repeat(20 << 20); 2])), 1);
        assert_eq!(rewrite_batch_rows(&meta(vec![])), 8192);
    }

    #[test]
    fn a_page_of_no_values_is_found_from_the_offset_index() {
        // content-defined pages and a value over 1 MiB: the writer adds a page of no values
        let schema = Arc::new(Schema::new(vec![Field::new("blob", DataType::Utf8, false)]));
        let blob = arrow::array::StringArray::from(vec!["a".repeat(1_100_000), "b".into()]);
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(blob) as ArrayRef]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let written = |cdc: bool| {
            let opts = WriteOptions { content_defined_chunking: cdc, ..WriteOptions::default() };
            let path = dir.path().join(format!("{cdc}.parquet"));
            let props = table_properties(&schema, &opts).unwrap();
            let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema.clone(), Some(props)).unwrap();
            w.write(&batch).unwrap();
            w.close().unwrap();
            first_empty_page(&footer_with_page_index(&path).unwrap())
        };
        assert_eq!(written(true), Some((0, "blob".to_string())));
        assert_eq!(written(false), None);
    }

    #[test]
    fn a_table_s_unfinished_files_are_removed_and_no_other_table_s() {
        let dir = tempfile::tempdir().unwrap();
        let names = [
            "data/.a-00000.parquet.part",
            "jsonl/.a-00001.jsonl.part",
            "data/.a-train-00000.parquet.part",
            "data/.ab-00000.parquet.part",
            "data/.a__b-00000.parquet.part",
            "data/.b-a-00000.parquet.part",
            "data/a.parquet",
            "jsonl/.a-00000.jsonl",
        ];
        for n in names {
            std::fs::create_dir_all(dir.path().join(n).parent().unwrap()).unwrap();
            std::fs::write(dir.path().join(n), "x").unwrap();
        }
        remove_unfinished(dir.path(), "a").unwrap();
        let left: Vec<&str> = names.into_iter().filter(|n| dir.path().join(n).exists()).collect();
        assert_eq!(
            left,
            [
                "data/.ab-00000.parquet.part",
                "data/.a__b-00000.parquet.part",
                "data/.b-a-00000.parquet.part",
                "data/a.parquet",
                "jsonl/.a-00000.jsonl"
            ]
        );
    }

    #[test]
    fn rows_are_sized_by_their_values_in_sliced_and_nested_columns() {
        use arrow::array::{Int64Array, ListArray, StringArray, StringViewArray, StructArray};
        use arrow::datatypes::Int64Type;
        let text = StringArray::from(vec![Some("a"), Some("bcd"), None]);
        let view = StringViewArray::from(vec![Some("a long string of 27 bytes!!"), Some(""), Some("xy")]);
        let ints = Int64Array::from(vec![1, 2, 3]);
        let list =
            ListArray::from_iter_primitive::<Int64Type, _, _>(vec![Some(vec![Some(1), Some(2)]), Some(vec![]), None]);
        let inner = StructArray::from(vec![(
            Arc::new(Field::new("s", DataType::Utf8, true)),
            Arc::new(StringArray::from(vec!["xyz", "", "12345"])) as ArrayRef,
        )]);
        let schema = Schema::new(vec![
            Field::new("text", DataType::Utf8, true),
            Field::new("view", DataType::Utf8View, true),
            Field::new("int", DataType::Int64, false),
            Field::new("list", list.data_type().clone(), true),
            Field::new("inner", inner.data_type().clone(), true),
        ]);
        let columns: Vec<ArrayRef> =
            vec![Arc::new(text), Arc::new(view), Arc::new(ints), Arc::new(list), Arc::new(inner)];
        let batch = RecordBatch::try_new(Arc::new(schema), columns).unwrap();
        let mut ends = Vec::new();
        row_ends(&batch, &mut ends);
        // 1 + 27 + 8 + 16 + 3; 3 + 0 + 8 + 0 + 0; null (1) + 2 + 8 + null (1) + 5
        assert_eq!(ends, [55, 66, 83]);
        // a slice is sized as the rows it holds, not the arrays behind it
        let mut ends = Vec::new();
        row_ends(&batch.slice(1, 2), &mut ends);
        assert_eq!(ends, [11, 28]);
    }

    #[test]
    fn copies_write_null_for_non_finite_floats_and_the_counts_say_how_many() {
        let item = Arc::new(Field::new("item", DataType::Float64, true));
        let schema = Arc::new(Schema::new(vec![
            Field::new("f", DataType::Float64, true),
            Field::new("l", DataType::List(item.clone()), true),
        ]));
        let lists = ListArray::new(
            item,
            arrow::buffer::OffsetBuffer::from_lengths([2, 1, 0]),
            Arc::new(Float64Array::from(vec![f64::NEG_INFINITY, 1.0, f64::NAN])),
            Some(vec![true, false, true].into()),
        );
        let b = RecordBatch::try_new(
            schema,
            vec![Arc::new(Float64Array::from(vec![Some(f64::NAN), Some(f64::INFINITY), None])), Arc::new(lists)],
        )
        .unwrap();
        let (mut out, mut ends) = (Vec::new(), Vec::new());
        encode_jsonl_as(&b, &mut out, &mut ends, NonFiniteAs::Null).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"f\":null,\"l\":[null,1.0]}\n{\"f\":null,\"l\":null}\n{\"f\":null,\"l\":[]}\n"
        );
        // the NaN under the null list is in no file: not counted
        let mut counts = BTreeMap::new();
        count_nonfinite(&b, &mut counts);
        count_nonfinite(&b.slice(1, 2), &mut counts);
        assert_eq!(counts["f"], NonFiniteCount { nan: 1, pos_inf: 2, neg_inf: 0 });
        assert_eq!(counts["l"], NonFiniteCount { nan: 0, pos_inf: 0, neg_inf: 1 });
        assert_eq!(serde_json::to_string(&counts["l"]).unwrap(), "{\"-Infinity\":1}");
    }
}
