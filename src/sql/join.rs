//! An inner equi-join on one or two keys, one of them text, in `runpack query`: each
//! distinct Arrow string view of a probe batch is looked up once, instead of hashing every
//! row's bytes.
//!
//! In: the physical plan DataFusion made for a statement. Out: the same plan, in which each
//! `HashJoinExec` that collects its left side whole (`CollectLeft`) for an `INNER JOIN` (or
//! the right semi join DataFusion makes of `IN`, `EXISTS` and joins to distinct rows) on
//! one or two equalities, of `Utf8View` keys or of one `Utf8View` and one `Int64` key, with
//! no other join condition, is a [`ViewJoinExec`]: same output schema, partitioning,
//! ordering and rows. Left to DataFusion: other join types, an `ON` condition beyond the
//! equalities, `IS NOT DISTINCT FROM` keys, three keys or more, keys of other types, joins
//! with a row limit or a dynamic filter, and partitioned joins.
//!
//! Why: a release's text columns are read as `Utf8View` (see [`super::session::string_views`]).
//! Views decoded from a dictionary-encoded Parquet column point at the dictionary's bytes,
//! so every row that holds the same value carries the same 16-byte view (see
//! [`super::groups`]). DataFusion 55's hash join hashes and compares each probe row's full
//! bytes: a 60-byte checkpoint URI per row of a release's samples, about 50 ns a row. Here
//! the left side's distinct keys are numbered once, a probe batch's distinct views are
//! looked up in a small map, and a row whose numbers are the row before's is not looked up.
//! When every probe row matches one left row, in order, the probe side's columns are passed
//! on as they are, not copied.
//!
//! Memory: the left side is held whole, as by `HashJoinExec` in this mode, and reserved in
//! the session's memory pool; a query whose left side the pool cannot hold fails as
//! DataFusion's would. Output batches hold at most the session's batch size of rows.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch, StringViewArray, UInt32Array};
use arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{JoinType, NullEquality};
use datafusion::config::ConfigOptions;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::execution_plan::ReplaceChildrenOptions;
use datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet, RecordOutput};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::StreamExt;

/// The physical optimizer rule that puts a [`ViewJoinExec`] in place of each `HashJoinExec`
/// it can stand for (see the module docs). Runs after DataFusion's own rules.
#[derive(Debug, Default)]
pub struct ViewJoin;

impl PhysicalOptimizerRule for ViewJoin {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|p| {
            if let Some(join) = p.downcast_ref::<HashJoinExec>()
                && eligible(join)?
            {
                return Ok(Transformed::yes(Arc::new(ViewJoinExec::new(Arc::clone(&p))?) as Arc<dyn ExecutionPlan>));
            }
            Ok(Transformed::no(p))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "view_join"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Whether `join` is one [`ViewJoinExec`] computes the same way.
fn eligible(join: &HashJoinExec) -> Result<bool> {
    if !matches!(join.join_type(), JoinType::Inner | JoinType::RightSemi)
        || *join.partition_mode() != PartitionMode::CollectLeft
        || join.filter().is_some()
        || join.null_equality() != NullEquality::NullEqualsNothing
        || join.null_aware
        || join.fetch().is_some()
        || !join.dynamic_expressions_produced().is_empty()
        || !(1..=2).contains(&join.on().len())
    {
        return Ok(false);
    }
    let (left, right) = (join.left().schema(), join.right().schema());
    let mut text = false;
    for (l, r) in join.on() {
        let t = l.data_type(&left)?;
        if t != r.data_type(&right)? || !matches!(t, DataType::Utf8View | DataType::Int64) {
            return Ok(false);
        }
        text |= t == DataType::Utf8View;
    }
    Ok(text)
}

/// An inner (or right semi) equi-join of a left side held whole with a right side streamed
/// through, on one or two `Utf8View` or `Int64` keys (one of them text): DataFusion's
/// `HashJoinExec` in `CollectLeft` mode, computed with per-batch maps of string views (see
/// the module docs). Output: for each right row in order, one row per matching left row
/// (left rows in their order; one row per matching right row for a semi join), with the
/// join's projection; record batches of at most the session's batch size.
#[derive(Debug)]
pub struct ViewJoinExec {
    /// The `HashJoinExec` this stands for: its schema, properties, keys, projection and inputs.
    join: Arc<dyn ExecutionPlan>,
    /// The left side, numbered once and shared by every output partition.
    left: Arc<tokio::sync::OnceCell<std::result::Result<Arc<LeftSide>, Arc<DataFusionError>>>>,
    metrics: ExecutionPlanMetricsSet,
}

impl ViewJoinExec {
    /// Stands for `join`, a `HashJoinExec` the rule found eligible.
    ///
    /// Errors: [`DataFusionError::Internal`] when `join` is not a `HashJoinExec`.
    pub fn new(join: Arc<dyn ExecutionPlan>) -> Result<Self> {
        if !join.is::<HashJoinExec>() {
            return Err(DataFusionError::Internal("a HashJoinExec was expected".into()));
        }
        Ok(Self { join, left: Arc::default(), metrics: ExecutionPlanMetricsSet::new() })
    }

    fn hash_join(&self) -> &HashJoinExec {
        self.join.downcast_ref::<HashJoinExec>().expect("checked by new")
    }
}

impl DisplayAs for ViewJoinExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "ViewJoinExec: string views looked up once per batch, for ")?;
        self.hash_join().fmt_as(t, f)
    }
}

impl ExecutionPlan for ViewJoinExec {
    fn name(&self) -> &str {
        "ViewJoinExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.join.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.join.children()
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        self.join.maintains_input_order()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.join.apply_expressions(f)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let recompute = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute);
        Ok(Arc::new(Self::new(Arc::clone(&self.join).replace_children(children, recompute)?)?))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let join = self.hash_join();
        let probe = join.right().execute(partition, Arc::clone(&context))?;
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let left_plan = Arc::clone(join.left());
        let left_keys: Vec<_> = join.on().iter().map(|(l, _)| Arc::clone(l)).collect();
        let right_keys: Vec<_> = join.on().iter().map(|(_, r)| Arc::clone(r)).collect();
        // a semi join gives the right side's columns alone: those the projection indexes
        let semi = *join.join_type() == JoinType::RightSemi;
        let left_columns = if semi { 0 } else { left_plan.schema().fields().len() };
        let projection: Vec<usize> = match &join.projection {
            Some(p) => p.iter().copied().collect(),
            None => (0..join.join_schema().fields().len()).collect(),
        };
        let schema = self.schema();
        let batch_size = context.session_config().batch_size();
        let once = Arc::clone(&self.left);
        struct State {
            once: Arc<tokio::sync::OnceCell<std::result::Result<Arc<LeftSide>, Arc<DataFusionError>>>>,
            left_plan: Arc<dyn ExecutionPlan>,
            left_keys: Vec<Arc<dyn PhysicalExpr>>,
            context: Arc<TaskContext>,
            left: Option<Arc<LeftSide>>,
            probe: SendableRecordBatchStream,
            prober: Option<Prober>,
            right_keys: Vec<Arc<dyn PhysicalExpr>>,
            projection: Vec<usize>,
            left_columns: usize,
            semi: bool,
            schema: SchemaRef,
            batch_size: usize,
            baseline: BaselineMetrics,
            /// The probe batch being joined, and the next of its rows to join.
            current: Option<(RecordBatch, Vec<u64>, Cursor)>,
        }
        let state = State {
            once,
            left_plan,
            left_keys,
            context,
            left: None,
            probe,
            prober: None,
            right_keys,
            projection,
            left_columns,
            semi,
            schema: Arc::clone(&schema),
            batch_size,
            baseline,
            current: None,
        };
        let stream = futures::stream::try_unfold(state, |mut s| async move {
            if s.left.is_none() {
                let built = s
                    .once
                    .get_or_init(|| async {
                        LeftSide::collect(Arc::clone(&s.left_plan), &s.left_keys, Arc::clone(&s.context))
                            .await
                            .map(Arc::new)
                            .map_err(Arc::new)
                    })
                    .await;
                let left = built.clone().map_err(DataFusionError::Shared)?;
                s.prober = Some(Prober::new(&left));
                s.left = Some(left);
            }
            let left = Arc::clone(s.left.as_ref().expect("set above"));
            // an empty left side matches nothing: the right side is not read
            if left.tuples.is_empty() {
                s.baseline.done();
                return Ok(None);
            }
            loop {
                if let Some((batch, codes, at)) = s.current.as_mut() {
                    let timer = s.baseline.elapsed_compute().timer();
                    let (left_rows, right_rows) = left.pairs(codes, at, s.batch_size, s.semi);
                    let out = (!left_rows.is_empty())
                        .then(|| {
                            output(&s.schema, &s.projection, s.left_columns, &left.batch, batch, left_rows, right_rows)
                        })
                        .transpose()?;
                    if at.row >= batch.num_rows() {
                        s.current = None;
                    }
                    drop(timer);
                    if let Some(out) = out {
                        return Ok(Some((out.record_output(&s.baseline), s)));
                    }
                    continue;
                }
                match s.probe.next().await {
                    Some(batch) => {
                        let batch = batch?;
                        let _timer = s.baseline.elapsed_compute().timer();
                        let codes = s.prober.as_mut().expect("set above").codes(&left, &s.right_keys, &batch)?;
                        s.current = Some((batch, codes, Cursor::default()));
                    }
                    None => {
                        s.baseline.done();
                        return Ok(None);
                    }
                }
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A probe row's key that matches no left row: a null, or a value the left side lacks.
const NO_MATCH: u64 = u64::MAX;

/// The numbers of one key column's distinct left values.
enum LeftKey {
    /// Text, by bytes.
    Text(FastMap<Box<[u8]>, u32>),
    /// Integers.
    Int(FastMap<i64, u32>),
}

/// The left side of a join, held whole: its rows, the numbers of its keys' values, and its
/// rows by key.
struct LeftSide {
    batch: RecordBatch,
    keys: Vec<LeftKey>,
    /// Left rows grouped by key, each group in row order.
    rows: Vec<u32>,
    /// A key's numbers (the first column's in the high 32 bits) to its group in `rows`, as
    /// (start, length).
    tuples: FastMap<u64, (u32, u32)>,
    /// The left side's memory, reserved in the session's pool while it is held.
    _reservation: MemoryReservation,
}

impl std::fmt::Debug for LeftSide {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_struct("LeftSide").field("rows", &self.batch.num_rows()).field("keys", &self.tuples.len()).finish()
    }
}

impl LeftSide {
    /// Reads every partition of `plan`, and numbers the values of `key_exprs`.
    ///
    /// Errors: the input's, DataFusion's "resources exhausted" when the session's memory pool
    /// cannot hold the left side, and [`DataFusionError::Execution`] beyond 4 billion rows.
    async fn collect(
        plan: Arc<dyn ExecutionPlan>,
        key_exprs: &[Arc<dyn PhysicalExpr>],
        context: Arc<TaskContext>,
    ) -> Result<Self> {
        let reservation = MemoryConsumer::new("ViewJoinExec left side").register(context.memory_pool());
        let schema = plan.schema();
        // each buffer counted once: the text views of a Parquet column's batches share its
        // pages' buffers, which counting batch by batch would count again for each batch
        // (24.7 GB asked for a left side read 2 rows at a time); refused as soon as the pool
        // cannot hold what was read
        let mut counted = datafusion::common::utils::memory::RecordBatchMemoryCounter::new();
        let mut batches = Vec::new();
        let mut stream = datafusion::physical_plan::execute_stream(plan, context)?;
        while let Some(b) = stream.next().await {
            let b = b?;
            reservation.try_grow(counted.count_batch(&b))?;
            batches.push(b);
        }
        let batch = arrow::compute::concat_batches(&schema, &batches)?;
        // what the batches' buffers held is held by the one batch now, with its new buffers
        let held = datafusion::common::utils::memory::RecordBatchMemoryCounter::new().count_batch(&batch);
        drop(batches);
        reservation.try_resize(held)?;
        let rows = u32::try_from(batch.num_rows())
            .map_err(|_| DataFusionError::Execution("a join's left side holds more than 4 billion rows".into()))?;
        let arrays: Vec<ArrayRef> =
            key_exprs.iter().map(|e| e.evaluate(&batch)?.into_array(batch.num_rows())).collect::<Result<_>>()?;
        let mut keys = Vec::with_capacity(arrays.len());
        let mut codes = vec![0u64; batch.num_rows()];
        for (k, array) in arrays.iter().enumerate() {
            let shift = if k == 0 && arrays.len() == 2 { 32 } else { 0 };
            let number = |slot: &mut u64, n: usize| {
                if *slot != NO_MATCH {
                    *slot |= (n as u64) << shift;
                }
            };
            let key = match array.data_type() {
                DataType::Utf8View => {
                    let texts = array
                        .as_any()
                        .downcast_ref::<StringViewArray>()
                        .ok_or_else(|| unexpected("Utf8View", array))?;
                    let mut map: FastMap<Box<[u8]>, u32> = FastMap::default();
                    for (i, slot) in codes.iter_mut().enumerate() {
                        if texts.is_null(i) {
                            *slot = NO_MATCH;
                            continue;
                        }
                        let next = map.len() as u32;
                        let n = *map.entry(texts.value(i).as_bytes().into()).or_insert(next);
                        number(slot, n as usize);
                    }
                    LeftKey::Text(map)
                }
                _ => {
                    let ints = array.as_any().downcast_ref::<Int64Array>().ok_or_else(|| unexpected("Int64", array))?;
                    let mut map: FastMap<i64, u32> = FastMap::default();
                    for (i, slot) in codes.iter_mut().enumerate() {
                        if ints.is_null(i) {
                            *slot = NO_MATCH;
                            continue;
                        }
                        let next = map.len() as u32;
                        let n = *map.entry(ints.value(i)).or_insert(next);
                        number(slot, n as usize);
                    }
                    LeftKey::Int(map)
                }
            };
            keys.push(key);
        }
        // rows grouped by key, in row order within each key
        let mut order: Vec<u32> = (0..rows).filter(|&i| codes[i as usize] != NO_MATCH).collect();
        order.sort_by_key(|&i| codes[i as usize]);
        let mut tuples: FastMap<u64, (u32, u32)> = FastMap::default();
        let mut start = 0;
        while start < order.len() {
            let code = codes[order[start] as usize];
            let end = start + order[start..].iter().take_while(|&&i| codes[i as usize] == code).count();
            tuples.insert(code, (start as u32, (end - start) as u32));
            start = end;
        }
        let held = order.capacity() * 4
            + tuples.capacity() * 24
            + keys
                .iter()
                .map(|k| match k {
                    LeftKey::Text(m) => m.capacity() * 32 + m.keys().map(|b| b.len()).sum::<usize>(),
                    LeftKey::Int(m) => m.capacity() * 16,
                })
                .sum::<usize>();
        reservation.try_grow(held)?;
        Ok(Self { batch, keys, rows: order, tuples, _reservation: reservation })
    }

    /// The pairs of matching (left row, right row) of a probe batch whose rows' key numbers
    /// are `codes`, from `at` (a probe row, and how many of its matches were already given)
    /// on, at most `limit` of them; `at` moves past them. A row with more matches than
    /// `limit` is given over several calls. With `semi`, each matching right row is given once.
    fn pairs(&self, codes: &[u64], at: &mut Cursor, limit: usize, semi: bool) -> (Vec<u32>, Vec<u32>) {
        let room = limit.min(codes.len() - at.row);
        let mut left = Vec::with_capacity(room);
        let mut right = Vec::with_capacity(room);
        let mut last: Option<(u64, Option<(u32, u32)>)> = None;
        while at.row < codes.len() && left.len() < limit {
            let code = codes[at.row];
            let range = match last {
                _ if code == NO_MATCH => None,
                Some((c, range)) if c == code => range,
                _ => {
                    let range = self.tuples.get(&code).copied();
                    last = Some((code, range));
                    range
                }
            };
            let Some((start, len)) = range else {
                at.row += 1;
                continue;
            };
            // a semi join gives a right row once, with its first match
            let len = if semi { 1 } else { len as usize };
            if len == 1 {
                // a run of right rows that match one left row each, as far as the batch has room
                let stop = codes.len().min(at.row + limit - left.len());
                let end = at.row + 1 + codes[at.row + 1..stop].iter().take_while(|&&c| c == code).count();
                left.resize(left.len() + end - at.row, self.rows[start as usize]);
                right.extend(at.row as u32..end as u32);
                at.row = end;
                continue;
            }
            let (start, len) = (start as usize + at.given, len - at.given);
            let take = len.min(limit - left.len());
            left.extend_from_slice(&self.rows[start..start + take]);
            right.resize(left.len(), at.row as u32);
            if take < len {
                at.given += take;
            } else {
                at.row += 1;
                at.given = 0;
            }
        }
        (left, right)
    }
}

/// Where the join of a probe batch is: the next row, and how many of its matches were given.
#[derive(Debug, Default)]
struct Cursor {
    row: usize,
    given: usize,
}

/// The per-stream numbering of probe batches' keys.
struct Prober {
    keys: Vec<ProbeKey>,
}

/// A probe key column's numbering state.
struct ProbeKey {
    /// Number by view, for the batch being read (text keys).
    by_view: FastMap<u128, u64>,
    /// Whether views repeat enough for `by_view` to pay (cleared once they do not).
    use_views: bool,
}

impl Prober {
    fn new(left: &LeftSide) -> Self {
        Self { keys: left.keys.iter().map(|_| ProbeKey { by_view: FastMap::default(), use_views: true }).collect() }
    }

    /// Each row's key numbers (as in [`LeftSide::tuples`]), or [`NO_MATCH`].
    fn codes(&mut self, left: &LeftSide, exprs: &[Arc<dyn PhysicalExpr>], batch: &RecordBatch) -> Result<Vec<u64>> {
        let n = batch.num_rows();
        let mut codes = vec![0u64; n];
        let two = exprs.len() == 2;
        for (k, ((expr, key), state)) in exprs.iter().zip(&left.keys).zip(&mut self.keys).enumerate() {
            let array = expr.evaluate(batch)?.into_array(n)?;
            let shift: u32 = if k == 0 && two { 32 } else { 0 };
            match key {
                LeftKey::Text(map) => {
                    let texts = array
                        .as_any()
                        .downcast_ref::<StringViewArray>()
                        .ok_or_else(|| unexpected("Utf8View", &array))?;
                    let by_bytes = |i: usize| map.get(texts.value(i).as_bytes()).copied();
                    state.by_view.clear();
                    let mut distinct = 0;
                    // a run of rows with one view (rows sorted by the key) is looked up once
                    number_runs(texts.views(), texts.nulls(), &mut codes, shift, |i, view| {
                        if !state.use_views {
                            return by_bytes(i);
                        }
                        match state.by_view.get(&view) {
                            Some(&x) => (x != NO_MATCH).then_some(x as u32),
                            None => {
                                distinct += 1;
                                let x = by_bytes(i);
                                state.by_view.insert(view, x.map_or(NO_MATCH, u64::from));
                                x
                            }
                        }
                    });
                    // a batch where views repeat less than twice on average is looked up by
                    // bytes from here on
                    if state.use_views && n >= 1024 && distinct * 2 > n {
                        state.use_views = false;
                    }
                }
                LeftKey::Int(map) => {
                    let ints =
                        array.as_any().downcast_ref::<Int64Array>().ok_or_else(|| unexpected("Int64", &array))?;
                    number_runs(ints.values(), ints.nulls(), &mut codes, shift, |_, v| map.get(&v).copied());
                }
            }
        }
        Ok(codes)
    }
}

/// Numbers the rows of one key column run by run: a run of non-null rows with one value
/// (`values`: string views or integers) gets the number `number` gives for its first row
/// and value ([`number_run`]); a null row is [`NO_MATCH`].
fn number_runs<T: PartialEq + Copy>(
    values: &[T],
    nulls: Option<&arrow::buffer::NullBuffer>,
    codes: &mut [u64],
    shift: u32,
    mut number: impl FnMut(usize, T) -> Option<u32>,
) {
    let nulls = nulls.filter(|b| b.null_count() > 0);
    let null = |i: usize| nulls.is_some_and(|b| b.is_null(i));
    let mut i = 0;
    while i < values.len() {
        if null(i) {
            codes[i] = NO_MATCH;
            i += 1;
            continue;
        }
        let v = values[i];
        let end = i + 1 + values[i + 1..].iter().enumerate().take_while(|&(j, &w)| w == v && !null(i + 1 + j)).count();
        number_run(&mut codes[i..end], number(i, v), shift);
        i = end;
    }
}

/// Adds a key's `number` (shifted by `shift`) to the numbers of a run of rows that hold its
/// value, or marks them [`NO_MATCH`] when the left side lacks it.
fn number_run(codes: &mut [u64], number: Option<u32>, shift: u32) {
    match number {
        Some(x) => {
            for c in codes.iter_mut().filter(|c| **c != NO_MATCH) {
                *c |= u64::from(x) << shift;
            }
        }
        None => codes.fill(NO_MATCH),
    }
}

/// The join's output rows for the pairs (`left_rows[j]`, `right_rows[j]`): the columns of
/// `projection` (indexes into the left side's columns, then the right side's). When the right
/// rows are the whole probe batch in order, its columns are used as they are.
fn output(
    schema: &SchemaRef,
    projection: &[usize],
    left_columns: usize,
    left: &RecordBatch,
    right: &RecordBatch,
    left_rows: Vec<u32>,
    right_rows: Vec<u32>,
) -> Result<RecordBatch> {
    let whole = right_rows.len() == right.num_rows() && right_rows.iter().enumerate().all(|(i, &r)| r as usize == i);
    let left_rows = UInt32Array::from(left_rows);
    let right_rows = UInt32Array::from(right_rows);
    let columns = projection
        .iter()
        .map(|&c| {
            if c < left_columns {
                Ok(arrow::compute::take(left.column(c), &left_rows, None)?)
            } else if whole {
                Ok(Arc::clone(right.column(c - left_columns)))
            } else {
                Ok(arrow::compute::take(right.column(c - left_columns), &right_rows, None)?)
            }
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(left_rows.len()));
    Ok(RecordBatch::try_new_with_options(Arc::clone(schema), columns, &options)?)
}

fn unexpected(want: &str, array: &ArrayRef) -> DataFusionError {
    DataFusionError::Internal(format!("a {want} join key was expected, not {}", array.data_type()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::groups::tests::{answer, write};
    use arrow::array::{Float64Array, StringArray};
    use arrow::datatypes::{Field, Schema};

    /// Keys of every shape: inline (up to 12 bytes) and long, empty, non-ASCII and null.
    fn key(r: u64) -> Option<String> {
        let names = ["", "a", "twelve bytes", "thirteen byte", "é", "tinker://run-1/sampler_weights/000100"];
        match r % 13 {
            0 => None,
            n if n < 6 => Some(names[n as usize].to_string()),
            n => Some(format!("tinker://2f0a-{:02}/sampler_weights/{:06}", n, r % 23)),
        }
    }

    /// `rows` rows of (k text, b text, i integer, v float): keys from [`key`], `b` one of a
    /// few labels or null, `i` below `ints` or null, `v` quarters.
    fn table(rows: usize, seed: u64, ints: u64) -> RecordBatch {
        let mut next = crate::core::testing::xorshift(seed);
        let (mut k, mut b, mut i, mut v) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rows {
            let r = next();
            k.push(key(r));
            b.push(match (r >> 20) % 5 {
                0 => None,
                n => Some(["gsm8k", "math", "a benchmark name", "mmlu"][n as usize - 1].to_string()),
            });
            i.push((!(r >> 30).is_multiple_of(9)).then_some(((r >> 33) % ints) as i64));
            v.push(((r >> 40) % 17) as f64 / 4.0);
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("b", DataType::Utf8, true),
            Field::new("i", DataType::Int64, true),
            Field::new("v", DataType::Float64, false),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(k)),
            Arc::new(StringArray::from(b)),
            Arc::new(Int64Array::from(i)),
            Arc::new(Float64Array::from(v)),
        ];
        RecordBatch::try_new(schema, columns).unwrap()
    }

    /// A session (with or without runpack's operators) that reads `t` (the probe side: three
    /// files, dictionary-encoded, plain, and sorted by `k`) and `e` (the left side).
    async fn session(ours: bool, dir: &std::path::Path, batch_size: usize) -> datafusion::prelude::SessionContext {
        let ctx = crate::sql::session::session_with_partitions(4, ours);
        let set = format!("SET datafusion.execution.batch_size = {batch_size}");
        ctx.sql(&set).await.unwrap().collect().await.unwrap();
        let t: Vec<_> = ["t1", "t2", "t3"].iter().map(|f| dir.join(format!("{f}.parquet"))).collect();
        let e = vec![dir.join("e.parquet")];
        let schema = crate::sql::session::string_views(&table(0, 1, 1).schema());
        crate::sql::session::register_parquet(&ctx, "t", &t, Arc::clone(&schema), &[], Some(20_000)).await.unwrap();
        crate::sql::session::register_parquet(&ctx, "e", &e, schema, &[], Some(600)).await.unwrap();
        ctx
    }

    #[tokio::test]
    async fn joining_by_views_gives_datafusions_answers() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(20_000, 0x2545_f491_4f6c_dd1d, 40);
        write(&dir.path().join("t1.parquet"), &t.slice(0, 12_000), true, 3_000);
        // plain pages: every long value has views of its own
        write(&dir.path().join("t2.parquet"), &t.slice(12_000, 4_000), false, 5_000);
        // rows in key order: runs of one view
        let rest = t.slice(16_000, 4_000);
        let order = arrow::compute::sort_to_indices(rest.column(0), None, None).unwrap();
        write(&dir.path().join("t3.parquet"), &arrow::compute::take_record_batch(&rest, &order).unwrap(), true, 4_000);
        // the left side: keys repeated (a probe row matches several rows), and some the
        // probe side lacks (integers up to 60, of which t holds those below 40)
        write(&dir.path().join("e.parquet"), &table(600, 0x9e37_79b9_7f4a_7c15, 60), true, 600);
        let ours = session(true, dir.path(), 100).await;
        let theirs = session(false, dir.path(), 100).await;
        for sql in [
            // one text key
            "SELECT t.k, t.b, t.i, t.v, e.i AS ei, e.v AS ev FROM t JOIN e ON t.k = e.k WHERE t.i < 2 \
             ORDER BY 1, 2, 3, 4, 5, 6",
            // two text keys, as the samples and evaluations of a release
            "SELECT t.b, t.i, avg(t.v), count(*) FROM t JOIN e ON t.k = e.k AND t.b = e.b GROUP BY 1, 2 ORDER BY 1, 2",
            "SELECT t.k, t.b, t.v, e.i FROM t JOIN e ON e.b = t.b AND e.k = t.k WHERE t.i = 5 ORDER BY 1, 2, 3, 4",
            // a text key and an integer one, either way round
            "SELECT t.k, t.i, t.v, e.v FROM t JOIN e ON t.k = e.k AND t.i = e.i ORDER BY 1, 2, 3, 4",
            "SELECT t.k, t.v, e.b FROM t JOIN e ON t.i = e.i AND t.k = e.k ORDER BY 1, 2, 3",
            // keys computed, not columns
            "SELECT upper(t.k) AS u, count(*) FROM t JOIN e ON upper(t.k) = lower(e.k) GROUP BY 1 ORDER BY 1",
            "SELECT t.i, count(*) FROM t JOIN e ON substr(t.k, 1, 12) = substr(e.k, 1, 12) AND t.i + 1 = e.i \
             GROUP BY 1 ORDER BY 1",
            // each right row matches once: its columns passed on as they are
            "SELECT t.k, t.b, t.v, d.n FROM t JOIN (SELECT k, b, count(*) AS n FROM e GROUP BY k, b) d \
             ON t.k = d.k AND t.b = d.b ORDER BY 1, 2, 3, 4",
            // semi joins: to distinct rows, IN and EXISTS
            "SELECT t.k, t.b, t.v FROM t JOIN (SELECT DISTINCT k, b FROM e) d ON t.k = d.k AND t.b = d.b \
             ORDER BY 1, 2, 3",
            "SELECT t.k, t.v FROM t WHERE t.k IN (SELECT k FROM e WHERE i < 20) ORDER BY 1, 2",
            "SELECT t.b, count(*) FROM t WHERE EXISTS (SELECT 1 FROM e WHERE e.k = t.k AND e.i = t.i) \
             GROUP BY 1 ORDER BY 1",
            // a left side that matches nothing, and one with no rows
            "SELECT count(*) FROM t JOIN e ON t.k = e.k AND t.b = 'no such label'",
            "SELECT count(*) FROM t JOIN (SELECT * FROM e WHERE v > 100) z ON t.k = z.k",
            // a probe row with more matches than a batch holds (100 rows)
            "SELECT t.k, count(*), sum(z.v) FROM t JOIN (SELECT e.k, e.v FROM e, e AS f WHERE f.i < 1) z \
             ON t.k = z.k WHERE t.i < 4 GROUP BY 1 ORDER BY 1",
        ] {
            let (got, plan) = answer(&ours, sql).await;
            let (want, their_plan) = answer(&theirs, sql).await;
            assert_eq!(got, want, "{sql}");
            assert!(plan.contains("ViewJoinExec"), "{sql}\n{plan}");
            assert!(!their_plan.contains("ViewJoinExec"));
        }
        // what DataFusion keeps
        for sql in [
            "SELECT t.k, count(*), sum(e.v) FROM t LEFT JOIN e ON t.k = e.k GROUP BY 1 ORDER BY 1",
            "SELECT t.k, count(*), sum(e.v) FROM t JOIN e ON t.k = e.k AND t.v < e.v GROUP BY 1 ORDER BY 1",
            "SELECT t.k, count(*), sum(e.v) FROM t JOIN e ON t.k IS NOT DISTINCT FROM e.k GROUP BY 1 ORDER BY 1",
            "SELECT count(*) FROM t JOIN e ON t.k = e.k AND t.b = e.b AND t.i = e.i",
            "SELECT count(*) FROM t JOIN e ON t.i = e.i",
            "SELECT count(*) FROM t JOIN e ON t.k = e.k AND t.v = e.v",
        ] {
            let (got, plan) = answer(&ours, sql).await;
            let (want, _) = answer(&theirs, sql).await;
            assert_eq!(got, want, "{sql}");
            assert!(!plan.contains("ViewJoinExec"), "{sql}\n{plan}");
        }
    }

    /// Writes `t` (2,000 rows from `seed`, dictionary-encoded, in each of its three files) and
    /// `e` (dictionary-encoded or plain) into `dir`.
    fn small_tables(dir: &std::path::Path, seed: u64, e: RecordBatch, dictionary: bool) {
        let t = table(2_000, seed, 40);
        for f in ["t1", "t2", "t3"] {
            write(&dir.join(format!("{f}.parquet")), &t, true, 2_000);
        }
        write(&dir.join("e.parquet"), &e, dictionary, e.num_rows());
    }

    #[tokio::test]
    async fn a_left_side_read_a_few_rows_at_a_time_counts_its_text_once() {
        // plain pages: each batch's views point into the page's buffer, which a left side read
        // 2 rows at a time would count 2,500 times (about 500 MB, over the session's pool)
        let dir = tempfile::tempdir().unwrap();
        small_tables(dir.path(), 7, table(5_000, 11, 60), false);
        let sql = "SELECT count(*), sum(t.v), sum(e.v) FROM t JOIN e ON t.k = e.k";
        let (want, _) = answer(&session(true, dir.path(), 8192).await, sql).await;
        let (got, plan) = answer(&session(true, dir.path(), 2).await, sql).await;
        assert_eq!(got, want);
        assert!(plan.contains("ViewJoinExec"), "{plan}");
    }

    #[tokio::test]
    async fn a_left_side_the_memory_pool_cannot_hold_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        small_tables(dir.path(), 3, table(600, 5, 60), true);
        let ctx = session(true, dir.path(), 100).await;
        let plan =
            ctx.sql("SELECT count(*) FROM t JOIN e ON t.k = e.k").await.unwrap().create_physical_plan().await.unwrap();
        let pool = Arc::new(datafusion::execution::memory_pool::GreedyMemoryPool::new(1 << 10));
        let runtime =
            datafusion::execution::runtime_env::RuntimeEnvBuilder::new().with_memory_pool(pool).build_arc().unwrap();
        let task = Arc::new(TaskContext::default().with_runtime(runtime));
        let e = datafusion::physical_plan::collect(plan, task).await.unwrap_err();
        assert!(e.to_string().contains("Resources exhausted"), "{e}");
    }
}
