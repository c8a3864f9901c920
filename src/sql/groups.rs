//! `GROUP BY` a text column in `runpack query`, alone or beside one text or `Int64` column:
//! a partial aggregation that looks up each distinct Arrow string view of a record batch
//! once, instead of hashing every row's bytes.
//!
//! In: the physical plan DataFusion made for a statement. Out: the same plan, in which each
//! partial `AggregateExec` (the per-partition first stage of a grouped aggregation) that
//! groups by one `Utf8View` expression, or by two of which one is `Utf8View` and the other
//! `Utf8View` or `Int64`, is a [`ViewGroupsExec`]: same output schema, partitioning and rows,
//! so DataFusion's final stage merges its output as it would the original's. Left to
//! DataFusion: grouping sets, three keys or more, keys of other types, aggregates with
//! `FILTER`, `DISTINCT` or `ORDER BY`, aggregates without a groups accumulator or whose state
//! gathers values in lists (`array_agg`, `string_agg`, `median`: it grows with the input),
//! `GROUP BY … LIMIT`, dynamic filters and input already sorted by the keys.
//!
//! Why: a release's text columns are read as `Utf8View` (see [`super::session::string_views`]). Views
//! decoded from a dictionary-encoded Parquet column point at the dictionary's bytes, so every
//! row that holds the same value carries the same 16-byte view, and within one array equal
//! views are equal strings (a view is the length with either the inline bytes, up to 12, or
//! a prefix, buffer index and offset: Arrow columnar format, "Variable-size Binary View
//! Layout"). DataFusion 55's partial aggregation hashes and compares each row's full bytes
//! (a 60-byte checkpoint URI per row of a release's samples); here a batch's views are
//! looked up in a small map and only each distinct view's bytes in the map that numbers the
//! column's strings. When views repeat little (plain-encoded pages, high-cardinality keys),
//! the rest of the stream looks the bytes up directly. With two keys, a row's group is found
//! by its pair of numbers (a string's number, an integer's bits) in one more map; a row with
//! the numbers of the row before it is not looked up.
//!
//! Memory stays bounded as in DataFusion's own partial stage, which may emit early: after
//! [`MAX_GROUPS`] groups, [`MAX_KEY_BYTES`] bytes of keys, or when the session's memory pool
//! cannot hold the groups' keys, maps and aggregate state (reserved there as they grow), the
//! groups so far are emitted as partial state and the stage starts again; the final stage
//! merges repeated groups.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, Int64Builder, NullBufferBuilder, RecordBatch, StringViewArray};
use arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::config::ConfigOptions;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::execution_plan::ReplaceChildrenOptions;
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet, RecordOutput};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, InputOrderMode, PlanProperties,
};
use futures::StreamExt;

/// Groups held by one partition before they are emitted as partial state (65,536).
pub const MAX_GROUPS: usize = 1 << 16;

/// Bytes of group keys held by one partition before they are emitted as partial state
/// (32 MiB).
pub const MAX_KEY_BYTES: usize = 32 << 20;

/// The physical optimizer rule that puts a [`ViewGroupsExec`] in place of each partial
/// `AggregateExec` it can stand for (see the module docs). Runs after DataFusion's own rules.
#[derive(Debug, Default)]
pub struct ViewGroupBy;

impl PhysicalOptimizerRule for ViewGroupBy {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|p| {
            if let Some(agg) = p.downcast_ref::<AggregateExec>()
                && eligible(agg)?
            {
                return Ok(Transformed::yes(Arc::new(ViewGroupsExec::new(agg.clone())) as Arc<dyn ExecutionPlan>));
            }
            Ok(Transformed::no(p))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "view_group_by"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Whether `agg` is a partial aggregation that [`ViewGroupsExec`] computes the same way.
fn eligible(agg: &AggregateExec) -> Result<bool> {
    let group_by = agg.group_expr();
    if *agg.mode() != AggregateMode::Partial
        || !group_by.is_single()
        || !(1..=2).contains(&group_by.expr().len())
        || agg.limit_options().is_some()
        || !agg.dynamic_expressions_produced().is_empty()
        || !matches!(agg.input_order_mode(), InputOrderMode::Linear)
        || agg.filter_expr().iter().any(Option::is_some)
    {
        return Ok(false);
    }
    // state that gathers a group's values (array_agg, string_agg, median) grows with the input,
    // by more than its accumulator reports: left to DataFusion, which can spill it
    let gathers = |a: &Arc<AggregateFunctionExpr>| -> Result<bool> {
        Ok(a.state_fields()?.iter().any(|f| {
            crate::core::schema::type_contains(f.data_type(), &|t| {
                matches!(
                    t,
                    DataType::List(_)
                        | DataType::LargeList(_)
                        | DataType::FixedSizeList(..)
                        | DataType::ListView(_)
                        | DataType::LargeListView(_)
                        | DataType::Map(..)
                )
            })
        }))
    };
    for a in agg.aggr_expr() {
        if a.is_distinct() || !a.order_bys().is_empty() || !a.groups_accumulator_supported() || gathers(a)? {
            return Ok(false);
        }
    }
    // one text column, or two columns of which one is text and the other text or Int64
    let input = agg.input_schema();
    let types = group_by.expr().iter().map(|(e, _)| e.data_type(&input)).collect::<Result<Vec<_>>>()?;
    Ok(types.contains(&DataType::Utf8View) && types.iter().all(|t| matches!(t, DataType::Utf8View | DataType::Int64)))
}

/// A partial aggregation grouped by a `Utf8View` expression, alone or beside one `Utf8View`
/// or `Int64` expression: DataFusion's `AggregateExec` in `Partial` mode, computed with a
/// per-batch map of string views (see the module docs). Output: one row per group (the keys,
/// then each aggregate's state fields), in the order the groups were first met, emitted when
/// the input ends or the bounds are reached, in record batches of at most the session's batch
/// size.
#[derive(Debug)]
pub struct ViewGroupsExec {
    /// The aggregation this stands for: its schema, properties, expressions and input.
    agg: AggregateExec,
    metrics: ExecutionPlanMetricsSet,
}

impl ViewGroupsExec {
    /// Stands for `agg`, which must be one the rule found eligible.
    pub fn new(agg: AggregateExec) -> Self {
        Self { agg, metrics: ExecutionPlanMetricsSet::new() }
    }
}

impl DisplayAs for ViewGroupsExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "ViewGroupsExec: string views looked up once per batch, for ")?;
        self.agg.fmt_as(t, f)
    }
}

impl ExecutionPlan for ViewGroupsExec {
    fn name(&self) -> &str {
        "ViewGroupsExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.agg.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![self.agg.input()]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.agg.apply_expressions(f)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let recompute = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute);
        let plan = Arc::new(self.agg.clone()).replace_children(children, recompute)?;
        match plan.downcast_ref::<AggregateExec>() {
            Some(agg) => Ok(Arc::new(Self::new(agg.clone()))),
            None => Err(DataFusionError::Internal("an AggregateExec was expected".into())),
        }
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.agg.input().execute(partition, Arc::clone(&context))?;
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let groups = Groups::new(&self.agg, self.schema(), context.session_config().batch_size())?;
        let reservation = MemoryConsumer::new(format!("ViewGroupsExec[{partition}]")).register(context.memory_pool());
        struct State {
            input: SendableRecordBatchStream,
            groups: Groups,
            ready: VecDeque<RecordBatch>,
            done: bool,
            baseline: BaselineMetrics,
            reservation: MemoryReservation,
        }
        let state = State { input, groups, ready: VecDeque::new(), done: false, baseline, reservation };
        let stream = futures::stream::try_unfold(state, |mut s| async move {
            loop {
                if let Some(batch) = s.ready.pop_front() {
                    let batch = batch.record_output(&s.baseline);
                    return Ok(Some((batch, s)));
                }
                if s.done {
                    s.baseline.done();
                    return Ok(None);
                }
                match s.input.next().await {
                    Some(batch) => {
                        let batch = batch?;
                        let _timer = s.baseline.elapsed_compute().timer();
                        s.groups.update(&batch)?;
                        // what the pool cannot hold is emitted, not an error (DataFusion's
                        // partial stage does the same)
                        if s.groups.full() || s.reservation.try_resize(s.groups.size()).is_err() {
                            s.ready = s.groups.emit()?.into();
                            s.reservation.resize(s.groups.size());
                        }
                    }
                    None => {
                        let _timer = s.baseline.elapsed_compute().timer();
                        s.done = true;
                        s.ready = s.groups.emit()?.into();
                        s.reservation.free();
                    }
                }
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema(), stream)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

type FastMap<K> = HashMap<K, usize, foldhash::fast::RandomState>;

/// A row's group key as numbers: each column's number (a text's, or an integer's bits; 0 when
/// null) and a bit per null column.
type Codes = (u64, u64, u8);

/// One column of a `GROUP BY`, with the numbers of its values and the keys of the groups.
enum Key {
    /// A `Utf8View` column: each distinct string numbered in the order first met.
    Text {
        /// Number by bytes.
        by_bytes: FastMap<Box<str>>,
        /// Number by view, for the batch being read.
        by_view: FastMap<u128>,
        /// Whether views repeat enough for `by_view` to pay (cleared once they do not).
        use_views: bool,
        /// The view of each group's key, in group order: an input's view when its text is
        /// inline (12 bytes or less), else one into `data`. Kept by hand, not in a
        /// `StringViewBuilder`, so that an inline view is copied whole (a builder makes it
        /// again from its bytes, with a call to copy them, for each group).
        views: Vec<u128>,
        /// The bytes of the keys longer than 12 bytes.
        data: Vec<u8>,
        /// Which groups' keys are null.
        nulls: NullBufferBuilder,
    },
    /// An `Int64` column: a value's bits are its number.
    Int { out: Int64Builder },
}

impl Key {
    fn new(data_type: &DataType) -> Self {
        match data_type {
            DataType::Int64 => Key::Int { out: Int64Builder::new() },
            _ => Key::Text {
                by_bytes: FastMap::default(),
                by_view: FastMap::default(),
                use_views: true,
                views: Vec::new(),
                data: Vec::new(),
                nulls: NullBufferBuilder::new(0),
            },
        }
    }

    /// Writes the number of each row of `array` (this column's values in a batch) to
    /// `numbers`, and sets `bit` in `nulls` for each null row. Returns the bytes of the
    /// strings first met.
    fn number(&mut self, array: &ArrayRef, numbers: &mut [u64], nulls: &mut [u8], bit: u8) -> Result<usize> {
        if let Some(n) = array.nulls().filter(|n| n.null_count() > 0) {
            for i in n.iter().enumerate().filter(|(_, valid)| !valid).map(|(i, _)| i) {
                nulls[i] |= bit;
            }
        }
        let mut new_bytes = 0;
        match self {
            Key::Int { .. } => {
                let values = array.as_any().downcast_ref::<Int64Array>().ok_or_else(|| unexpected("Int64", array))?;
                for (slot, v) in numbers.iter_mut().zip(values.values()) {
                    *slot = *v as u64;
                }
                // a null's number is 0 (its slot's value is undefined)
                for (slot, n) in numbers.iter_mut().zip(nulls.iter()) {
                    if n & bit != 0 {
                        *slot = 0;
                    }
                }
            }
            Key::Text { by_bytes, by_view, use_views, .. } => {
                let texts =
                    array.as_any().downcast_ref::<StringViewArray>().ok_or_else(|| unexpected("Utf8View", array))?;
                by_view.clear();
                let mut distinct_views = 0;
                // the previous row's view and number: rows sorted by the key repeat it
                let mut last: Option<(u128, u64)> = None;
                let mut intern = |s: &str| -> u64 {
                    if let Some(&k) = by_bytes.get(s) {
                        return k as u64;
                    }
                    let k = by_bytes.len();
                    by_bytes.insert(s.into(), k);
                    new_bytes += s.len();
                    k as u64
                };
                for (i, &view) in texts.views().iter().enumerate() {
                    numbers[i] = if nulls[i] & bit != 0 {
                        0
                    } else if let Some((v, k)) = last
                        && v == view
                    {
                        k
                    } else {
                        let k = if *use_views {
                            match by_view.get(&view) {
                                Some(&k) => k as u64,
                                None => {
                                    distinct_views += 1;
                                    let k = intern(texts.value(i));
                                    by_view.insert(view, k as usize);
                                    k
                                }
                            }
                        } else {
                            intern(texts.value(i))
                        };
                        last = Some((view, k));
                        k
                    };
                }
                // a batch where views repeat less than twice on average is numbered by bytes
                // from here on
                if *use_views && texts.len() >= 1024 && distinct_views * 2 > texts.len() {
                    *use_views = false;
                }
            }
        }
        Ok(new_bytes)
    }

    /// Appends row `i` of `array` to the groups' keys; returns the bytes of text appended.
    fn append(&mut self, array: &ArrayRef, rows: &[usize]) -> usize {
        match self {
            Key::Int { out } => {
                let values = array.as_any().downcast_ref::<Int64Array>().expect("checked by number");
                for &i in rows {
                    out.append_option(values.is_valid(i).then(|| values.value(i)));
                }
                0
            }
            Key::Text { views, data, nulls, .. } => {
                let texts = array.as_any().downcast_ref::<StringViewArray>().expect("checked by number");
                let mut bytes = 0;
                views.reserve(rows.len());
                for &i in rows {
                    if texts.is_null(i) {
                        views.push(0);
                        nulls.append_null();
                        continue;
                    }
                    let view = texts.views()[i];
                    let len = view as u32 as usize;
                    if len <= 12 {
                        views.push(view);
                    } else {
                        let text = texts.value(i).as_bytes();
                        // below MAX_KEY_BYTES (32 MiB) before the groups are emitted
                        let offset = u32::try_from(data.len()).expect("keys are emitted before 4 GiB");
                        data.extend_from_slice(text);
                        views.push(arrow::array::builder::make_view(text, 0, offset));
                    }
                    nulls.append_non_null();
                    bytes += len;
                }
                bytes
            }
        }
    }

    /// Bytes held besides the text counted by the caller: maps and builders' views.
    fn size(&self, groups: usize) -> usize {
        groups * std::mem::size_of::<u128>()
            + match self {
                Key::Int { .. } => 0,
                Key::Text { by_bytes, by_view, .. } => {
                    by_bytes.capacity() * (std::mem::size_of::<(Box<str>, usize)>() + 8)
                        + by_view.capacity() * (std::mem::size_of::<(u128, usize)>() + 8)
                }
            }
    }

    /// The groups' keys as a column; starts again with none.
    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(match self {
            Key::Int { out } => Arc::new(out.finish()),
            Key::Text { views, data, nulls, .. } => {
                let data = std::mem::take(data);
                let buffers = if data.is_empty() { vec![] } else { vec![arrow::buffer::Buffer::from_vec(data)] };
                Arc::new(StringViewArray::try_new(std::mem::take(views).into(), buffers, nulls.finish())?)
            }
        })
    }
}

fn unexpected(want: &str, array: &ArrayRef) -> DataFusionError {
    DataFusionError::Internal(format!("a {want} group key was expected, not {}", array.data_type()))
}

/// Largest number that [`Pairs`] finds in a table indexed by it (65,535).
const DIRECT_NUMBERS: u64 = 1 << 16;

/// Slots in all the [`Pairs`] tables of one partition (1,048,576: 4 MiB).
const DIRECT_SLOTS: usize = 1 << 20;

/// Where a slot for a new group goes: a table's index, or the map.
enum Slot {
    Direct(usize),
    Map,
}

/// The groups of the rows whose text column has one number, by the other column's number.
/// Small numbers (an integer such as a step or an example's index, or the number of a text)
/// index a table, as DuckDB's perfect hash aggregation does: no hashing, and 4 bytes a
/// group. Others go to a map. Once one number goes to the map the table grows no more, so a
/// number is only ever in one of them.
#[derive(Default)]
struct Pairs {
    /// The group + 1 at each number (0: none yet).
    direct: Vec<u32>,
    map: HashMap<u64, u32, foldhash::fast::RandomState>,
}

impl Pairs {
    /// The group of number `n`, or where a new group for it goes; `slots` counts the slots
    /// of every table of the partition, up to [`DIRECT_SLOTS`].
    fn get(&mut self, n: u64, slots: &mut usize) -> std::result::Result<usize, Slot> {
        if n < self.direct.len() as u64 {
            return match self.direct[n as usize] {
                0 => Err(Slot::Direct(n as usize)),
                g => Ok(g as usize - 1),
            };
        }
        if self.map.is_empty() && n < DIRECT_NUMBERS {
            let grow = (n as usize + 1).max(2 * self.direct.len()).min(DIRECT_NUMBERS as usize) - self.direct.len();
            if *slots + grow <= DIRECT_SLOTS {
                *slots += grow;
                self.direct.resize(self.direct.len() + grow, 0);
                return Err(Slot::Direct(n as usize));
            }
        }
        match self.map.get(&n) {
            Some(&g) => Ok(g as usize),
            None => Err(Slot::Map),
        }
    }

    /// Records group `g` (below [`MAX_GROUPS`]) for number `n` at `slot`, from [`Pairs::get`].
    fn set(&mut self, slot: Slot, n: u64, g: usize) {
        match slot {
            Slot::Direct(i) => self.direct[i] = g as u32 + 1,
            Slot::Map => {
                self.map.insert(n, g as u32);
            }
        }
    }

    fn size(&self) -> usize {
        self.direct.capacity() * 4 + self.map.capacity() * (std::mem::size_of::<(u64, u32)>() + 8)
    }
}

/// One partition's groups: the key columns, the aggregates' accumulators and the maps that
/// find a row's group.
struct Groups {
    /// The `GROUP BY` expressions (one or two).
    exprs: Vec<Arc<dyn PhysicalExpr>>,
    keys: Vec<Key>,
    aggregates: Vec<Arc<AggregateFunctionExpr>>,
    /// Each aggregate's argument expressions.
    arguments: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    accumulators: Vec<Box<dyn GroupsAccumulator>>,
    /// One key: the group of each text number.
    by_number: Vec<usize>,
    /// Two keys: the group of each pair of numbers.
    by_codes: HashMap<Codes, usize, foldhash::fast::RandomState>,
    /// Two keys, neither null: by the text column's number, the group of the other column's
    /// number.
    by_pair: Vec<Pairs>,
    /// Slots of all the `Pairs::direct` tables.
    direct_slots: usize,
    /// Two keys: which is the text column `by_pair` is indexed by (the first text one).
    outer: usize,
    /// One key: the group of the null key.
    null_group: Option<usize>,
    len: usize,
    /// Bytes of text held: the numbered strings and the groups' keys.
    key_bytes: usize,
    /// Each row's numbers of the batch being read, by key column, and its null bits.
    numbers: [Vec<u64>; 2],
    nulls: Vec<u8>,
    /// The group of each row of the batch being read.
    rows: Vec<usize>,
    /// The rows of the batch being read that started a group, in the groups' order.
    first_rows: Vec<usize>,
    schema: SchemaRef,
    batch_size: usize,
}

impl Groups {
    fn new(agg: &AggregateExec, schema: SchemaRef, batch_size: usize) -> Result<Self> {
        let aggregates = agg.aggr_expr().to_vec();
        let exprs: Vec<_> = agg.group_expr().expr().iter().map(|(e, _)| Arc::clone(e)).collect();
        let input = agg.input_schema();
        let keys: Vec<Key> = exprs.iter().map(|e| Ok(Key::new(&e.data_type(&input)?))).collect::<Result<_>>()?;
        let outer = usize::from(!matches!(keys[0], Key::Text { .. }));
        Ok(Self {
            exprs,
            keys,
            arguments: aggregates.iter().map(|a| a.expressions()).collect(),
            accumulators: accumulators(&aggregates)?,
            aggregates,
            by_number: Vec::new(),
            by_codes: HashMap::default(),
            by_pair: Vec::new(),
            direct_slots: 0,
            outer,
            null_group: None,
            len: 0,
            key_bytes: 0,
            numbers: [Vec::new(), Vec::new()],
            nulls: Vec::new(),
            rows: Vec::new(),
            first_rows: Vec::new(),
            schema,
            batch_size: batch_size.max(1),
        })
    }

    /// Adds the rows of `batch` to their groups.
    fn update(&mut self, batch: &RecordBatch) -> Result<()> {
        let n = batch.num_rows();
        let arrays = self.exprs.iter().map(|e| e.evaluate(batch)?.into_array(n)).collect::<Result<Vec<_>>>()?;
        self.nulls.clear();
        self.nulls.resize(n, 0);
        for (c, (key, array)) in self.keys.iter_mut().zip(&arrays).enumerate() {
            self.numbers[c].resize(n, 0);
            self.key_bytes += key.number(array, &mut self.numbers[c], &mut self.nulls, 1 << c)?;
        }
        self.rows.clear();
        if self.keys.len() == 1 {
            for i in 0..n {
                let group = if self.nulls[i] != 0 {
                    match self.null_group {
                        Some(g) => g,
                        None => {
                            self.null_group = Some(new_group(&mut self.first_rows, &mut self.len, i));
                            self.len - 1
                        }
                    }
                } else {
                    match self.by_number.get(self.numbers[0][i] as usize) {
                        Some(&g) => g,
                        // numbers are given in the order first met: a new one is the next
                        None => {
                            let g = new_group(&mut self.first_rows, &mut self.len, i);
                            self.by_number.push(g);
                            g
                        }
                    }
                };
                self.rows.push(group);
            }
        } else {
            // the fields apart, so that the loop reads the batch's numbers as slices while it
            // adds groups
            let Groups { numbers, nulls, by_pair, by_codes, direct_slots, rows, first_rows, len, outer, .. } = self;
            let (texts, others, nulls) = (&numbers[*outer][..n], &numbers[1 - *outer][..n], &nulls[..n]);
            rows.reserve(n);
            // the previous row's numbers and group: rows sorted by the keys repeat them
            let mut last: Option<(Codes, usize)> = None;
            for (i, ((&text, &other), &null)) in texts.iter().zip(others).zip(nulls).enumerate() {
                let codes = (text, other, null);
                let group = match last {
                    Some((c, g)) if c == codes => g,
                    _ => {
                        let g = if null == 0 {
                            // a map per number of the text column: smaller entries, fewer misses
                            let text = text as usize;
                            if text >= by_pair.len() {
                                by_pair.resize_with(text + 1, Pairs::default);
                            }
                            let pairs = &mut by_pair[text];
                            match pairs.get(other, direct_slots) {
                                Ok(g) => g,
                                Err(slot) => {
                                    let g = new_group(first_rows, len, i);
                                    pairs.set(slot, other, g);
                                    g
                                }
                            }
                        } else {
                            match by_codes.get(&codes) {
                                Some(&g) => g,
                                None => {
                                    let g = new_group(first_rows, len, i);
                                    by_codes.insert(codes, g);
                                    g
                                }
                            }
                        };
                        last = Some((codes, g));
                        g
                    }
                };
                rows.push(group);
            }
        }
        self.append_new_keys(&arrays);
        for (acc, args) in self.accumulators.iter_mut().zip(&self.arguments) {
            let values =
                args.iter().map(|e| e.evaluate(batch).and_then(|v| v.into_array(n))).collect::<Result<Vec<_>>>()?;
            acc.update_batch(&values, &self.rows, None, self.len)?;
        }
        Ok(())
    }

    /// Writes the keys of the groups the batch's rows started, from the key columns `arrays`:
    /// column by column, each looked at once (a call per group and column was 8 % of a
    /// `COUNT(DISTINCT)`'s time).
    fn append_new_keys(&mut self, arrays: &[ArrayRef]) {
        for (key, array) in self.keys.iter_mut().zip(arrays) {
            self.key_bytes += key.append(array, &self.first_rows);
        }
        self.first_rows.clear();
    }

    /// Bytes the groups hold: keys (numbered, and in the builders), maps, and the
    /// accumulators' state.
    fn size(&self) -> usize {
        self.accumulators.iter().map(|a| a.size()).sum::<usize>()
            + self.key_bytes
            + self.keys.iter().map(|k| k.size(self.len)).sum::<usize>()
            + self.by_number.capacity() * std::mem::size_of::<usize>()
            + self.by_codes.capacity() * (std::mem::size_of::<(Codes, usize)>() + 8)
            + self.by_pair.iter().map(Pairs::size).sum::<usize>()
            + self.by_pair.capacity() * std::mem::size_of::<Pairs>()
            + (self.numbers[0].capacity() + self.numbers[1].capacity()) * std::mem::size_of::<u64>()
            + self.nulls.capacity()
            + self.rows.capacity() * std::mem::size_of::<usize>()
    }

    /// Whether the groups so far should be emitted before more rows are read.
    fn full(&self) -> bool {
        self.len >= MAX_GROUPS || self.key_bytes >= MAX_KEY_BYTES
    }

    /// The groups so far as record batches of partial state (none when there are no
    /// groups); starts again with no groups.
    fn emit(&mut self) -> Result<Vec<RecordBatch>> {
        if self.len == 0 {
            return Ok(Vec::new());
        }
        let mut columns: Vec<ArrayRef> = self.keys.iter_mut().map(Key::finish).collect::<Result<_>>()?;
        for acc in &mut self.accumulators {
            columns.extend(acc.state(EmitTo::All)?);
        }
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)?;
        self.accumulators = accumulators(&self.aggregates)?;
        // new maps: cleared ones keep their capacity, which the memory pool would still be charged
        for key in &mut self.keys {
            if let Key::Text { by_bytes, by_view, .. } = key {
                *by_bytes = FastMap::default();
                *by_view = FastMap::default();
            }
        }
        self.by_number = Vec::new();
        self.by_codes = HashMap::default();
        self.by_pair = Vec::new();
        self.direct_slots = 0;
        self.null_group = None;
        self.len = 0;
        self.key_bytes = 0;
        let rows = batch.num_rows();
        Ok((0..rows).step_by(self.batch_size).map(|at| batch.slice(at, self.batch_size.min(rows - at))).collect())
    }
}

/// A new group of [`Groups`] (its `first_rows` and `len`), keyed by row `i` of the batch's key
/// columns; returns its index. Its keys are written once the batch's rows are numbered
/// ([`Groups::append_new_keys`]). A function of the two fields, so that a loop holding other
/// fields of the groups can call it.
fn new_group(first_rows: &mut Vec<usize>, len: &mut usize, i: usize) -> usize {
    first_rows.push(i);
    *len += 1;
    *len - 1
}

fn accumulators(aggregates: &[Arc<AggregateFunctionExpr>]) -> Result<Vec<Box<dyn GroupsAccumulator>>> {
    aggregates.iter().map(|a| a.create_groups_accumulator()).collect()
}

#[cfg(test)]
pub(in crate::sql) mod tests {
    use super::*;
    use arrow::array::{AsArray, Float64Array, Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};

    /// Writes `batch` to `path` as Parquet, dictionary-encoded or not, in row groups of `rows`.
    pub(in crate::sql) fn write(path: &std::path::Path, batch: &RecordBatch, dictionary: bool, rows: usize) {
        let props = parquet::file::properties::WriterProperties::builder()
            .set_dictionary_enabled(dictionary)
            .set_max_row_group_row_count(Some(rows))
            .build();
        let file = std::fs::File::create(path).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
        w.write(batch).unwrap();
        w.close().unwrap();
    }

    /// Rows with keys of every shape: inline (up to 12 bytes) and long, empty, non-ASCII and
    /// null; `v` holds quarters (sums are exact in any order), nulls and NaN.
    fn sample(rows: usize) -> RecordBatch {
        let names = ["", "a", "twelve bytes", "thirteen byte", "é", "tinker://run-1/sampler_weights/000100"];
        let mut next = crate::core::testing::xorshift(0x2545_f491_4f6c_dd1d_u64);
        let mut k = Vec::new();
        let mut v = Vec::new();
        let mut i = Vec::new();
        for _ in 0..rows {
            let r = next();
            k.push(match r % 11 {
                0 => None,
                n if n < 6 => Some(names[n as usize].to_string()),
                n => Some(format!("tinker://2f0a-{:02}/sampler_weights/{:06}", n, r % 40)),
            });
            v.push(match (r >> 8) % 17 {
                0 => None,
                1 => Some(f64::NAN),
                n => Some(n as f64 / 4.0),
            });
            i.push(((r >> 16) % 1000) as i64);
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("v", DataType::Float64, true),
            Field::new("i", DataType::Int64, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![Arc::new(StringArray::from(k)), Arc::new(Float64Array::from(v)), Arc::new(Int64Array::from(i))],
        )
        .unwrap()
    }

    /// The [`ViewGroupsExec`] of `plan` (there must be one).
    fn partial_stage(plan: &Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        let mut found = None;
        plan.apply(|n| {
            if n.is::<ViewGroupsExec>() {
                found = Some(Arc::clone(n));
            }
            Ok(TreeNodeRecursion::Continue)
        })
        .unwrap();
        found.expect("a ViewGroupsExec in the plan")
    }

    pub(in crate::sql) async fn answer(ctx: &datafusion::prelude::SessionContext, sql: &str) -> (String, String) {
        let (_, batches) = crate::sql::session::run(ctx, sql).await.unwrap();
        let (_, plan) = crate::sql::session::run(ctx, &format!("EXPLAIN {sql}")).await.unwrap();
        (
            arrow::util::pretty::pretty_format_batches(&batches).unwrap().to_string(),
            arrow::util::pretty::pretty_format_batches(&plan).unwrap().to_string(),
        )
    }

    /// A session (with or without [`ViewGroupBy`]) that reads `files` as table `t` in record
    /// batches of `batch_size` rows.
    async fn table(
        view_groups: bool,
        files: &[std::path::PathBuf],
        schema: SchemaRef,
        batch_size: usize,
    ) -> datafusion::prelude::SessionContext {
        let ctx = crate::sql::session::session_with_partitions(4, view_groups);
        let set = format!("SET datafusion.execution.batch_size = {batch_size}");
        ctx.sql(&set).await.unwrap().collect().await.unwrap();
        crate::sql::session::register_parquet(&ctx, "t", files, crate::sql::session::string_views(&schema), &[], None)
            .await
            .unwrap();
        ctx
    }

    #[tokio::test]
    async fn grouping_by_views_gives_datafusions_answers() {
        let dir = tempfile::tempdir().unwrap();
        let batch = sample(20_000);
        let files: Vec<_> = ["a", "b", "c"].iter().map(|f| dir.path().join(format!("{f}.parquet"))).collect();
        write(&files[0], &batch.slice(0, 12_000), true, 3_000);
        // plain pages: every long value has views of its own
        write(&files[1], &batch.slice(12_000, 4_000), false, 5_000);
        // rows in key order: runs of one view
        let rest = batch.slice(16_000, 4_000);
        let order = arrow::compute::sort_to_indices(rest.column(0), None, None).unwrap();
        write(&files[2], &arrow::compute::take_record_batch(&rest, &order).unwrap(), true, 4_000);
        let ours = table(true, &files, batch.schema(), 100).await;
        let theirs = table(false, &files, batch.schema(), 100).await;
        for sql in [
            "SELECT k, count(*), count(v), sum(v), avg(v), min(i), max(k), bool_or(i > 998) FROM t GROUP BY k ORDER BY k",
            "SELECT upper(k) AS u, sum(i) FROM t GROUP BY upper(k) ORDER BY u",
            "SELECT k FROM t WHERE i < 500 GROUP BY k ORDER BY k",
            "SELECT k, count(*) FROM t GROUP BY k HAVING count(*) > 400 ORDER BY k",
            // runpack's min and max of floats, in total order (NaN the greatest)
            "SELECT k, min(v), max(v) FROM t GROUP BY k ORDER BY k",
            "SELECT k, length(string_agg(k, '')) FROM t GROUP BY k ORDER BY k",
            // two keys: text and an integer, either way round, nulls in each
            "SELECT k, i, count(*), sum(v) FROM t GROUP BY k, i ORDER BY k, i",
            "SELECT i % 7 AS m, k, count(*), min(v) FROM t GROUP BY i % 7, k ORDER BY m, k",
            "SELECT k, CASE WHEN i % 5 = 0 THEN NULL ELSE i % 3 END AS j, count(*) FROM t \
             GROUP BY k, CASE WHEN i % 5 = 0 THEN NULL ELSE i % 3 END ORDER BY k, j",
            // two text keys, nulls in each
            "SELECT k, CASE WHEN i % 4 = 0 THEN NULL ELSE substr(k, 1 + i % 3, 4) END AS s, count(*), avg(v) \
             FROM t GROUP BY k, CASE WHEN i % 4 = 0 THEN NULL ELSE substr(k, 1 + i % 3, 4) END ORDER BY k, s",
            "SELECT upper(k) AS u, k, count(*) FROM t GROUP BY upper(k), k ORDER BY u, k",
            // integers that index no table (negative, large), or not after the first ones
            "SELECT k, i * 100003 - 50000000 AS j, count(*) FROM t GROUP BY k, i * 100003 - 50000000 ORDER BY k, j",
            "SELECT k, CASE WHEN i < 500 THEN i ELSE i * 1000 END AS j, count(*) FROM t \
             GROUP BY k, CASE WHEN i < 500 THEN i ELSE i * 1000 END ORDER BY k, j",
            // tables of 65,536 slots for each of ~200 texts: more than a partition's slots
            "SELECT k, (i * 65) % 65536 AS j, count(*), sum(v) FROM t GROUP BY k, (i * 65) % 65536 ORDER BY k, j",
        ] {
            let (got, plan) = answer(&ours, sql).await;
            let (want, their_plan) = answer(&theirs, sql).await;
            assert_eq!(got, want, "{sql}");
            assert!(plan.contains("ViewGroupsExec"), "{sql}\n{plan}");
            assert!(!their_plan.contains("ViewGroupsExec"));
        }
        // DataFusion plans a DISTINCT aggregate as two groupings, the outer one by k
        // by k and i, then by k: both stages are runpack's
        let sql = "SELECT k, count(DISTINCT i) FROM t GROUP BY k ORDER BY k";
        let (got, plan) = answer(&ours, sql).await;
        assert_eq!(got, answer(&theirs, sql).await.0);
        assert_eq!(plan.matches("ViewGroupsExec").count(), 2, "{plan}");
        // what DataFusion keeps
        for sql in [
            "SELECT k, i, arrow_cast(v IS NULL, 'Int64') AS n, count(*) FROM t \
             GROUP BY k, i, arrow_cast(v IS NULL, 'Int64') ORDER BY k, i, n",
            "SELECT k, v, count(*) FROM t GROUP BY k, v ORDER BY k, v",
            "SELECT i, i % 3 AS j, count(*) FROM t GROUP BY i, i % 3 ORDER BY i, j",
            "SELECT k, count(*) FILTER (WHERE i > 10) FROM t GROUP BY k ORDER BY k",
            "SELECT i, count(*) FROM t GROUP BY i ORDER BY i",
            "SELECT k, array_agg(i ORDER BY i) FROM t GROUP BY k ORDER BY k",
            // state that gathers values
            "SELECT k, array_sort(array_agg(i)) FROM t GROUP BY k ORDER BY k",
            "SELECT k, median(i) FROM t GROUP BY k ORDER BY k",
        ] {
            let (got, plan) = answer(&ours, sql).await;
            let (want, _) = answer(&theirs, sql).await;
            assert_eq!(got, want, "{sql}");
            assert!(!plan.contains("ViewGroupsExec"), "{sql}\n{plan}");
        }
    }

    #[tokio::test]
    async fn many_groups_are_emitted_early_and_merged() {
        let dir = tempfile::tempdir().unwrap();
        let distinct = MAX_GROUPS + 10_000;
        let rows = 2 * distinct;
        // one row group: one partition meets every key, each twice
        let keys: Vec<String> =
            (0..rows).map(|n| format!("user-{:08}-with-a-long-enough-name", n % distinct)).collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, false),
            Field::new("i", DataType::Int64, false),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(StringArray::from(keys)), Arc::new(Int64Array::from_iter_values(0..rows as i64))],
        )
        .unwrap();
        let files = vec![dir.path().join("a.parquet")];
        write(&files[0], &batch, true, rows);
        // batches of distinct keys: the groups are soon looked up by bytes, not views
        let ours = table(true, &files, schema.clone(), 4096).await;
        let theirs = table(false, &files, schema, 4096).await;
        let sql = "SELECT count(*), sum(n), sum(s), min(k), max(k), max(n) FROM \
                   (SELECT k, count(*) AS n, sum(i) AS s FROM t GROUP BY k)";
        let (got, plan) = answer(&ours, sql).await;
        assert!(plan.contains("ViewGroupsExec"), "{plan}");
        assert_eq!(got, answer(&theirs, sql).await.0);
        assert!(got.contains(&format!("| {distinct} ")), "{got}");
        // two keys: the same groups, each met twice, split by the parity of i
        let sql = "SELECT count(*), sum(n), min(k), max(k) FROM (SELECT k, i % 2 AS p, count(*) AS n FROM t GROUP BY k, i % 2)";
        let (got, plan) = answer(&ours, sql).await;
        assert!(plan.contains("ViewGroupsExec"), "{plan}");
        assert_eq!(got, answer(&theirs, sql).await.0);
        // the partial stage emitted more rows than there are groups: it started again
        let plan =
            ours.sql("SELECT k, count(*) FROM t GROUP BY k").await.unwrap().create_physical_plan().await.unwrap();
        let out = datafusion::physical_plan::collect(Arc::clone(&plan), ours.task_ctx()).await.unwrap();
        assert_eq!(out.iter().map(RecordBatch::num_rows).sum::<usize>(), distinct);
        let partial_rows = partial_stage(&plan).metrics().and_then(|m| m.output_rows()).unwrap();
        assert!(partial_rows > distinct && partial_rows <= rows, "{partial_rows}");
    }

    #[tokio::test]
    async fn groups_the_memory_pool_cannot_hold_are_emitted_early() {
        let dir = tempfile::tempdir().unwrap();
        let distinct = 40_000;
        let keys: Vec<String> =
            (0..2 * distinct).map(|n| format!("checkpoint-{:08}-{}", n % distinct, "x".repeat(150))).collect();
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Utf8, false)]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(keys))]).unwrap();
        let files = vec![dir.path().join("a.parquet")];
        write(&files[0], &batch, true, 2 * distinct);
        // fewer groups than MAX_GROUPS, more key bytes (40,000 of about 170, held twice) than a
        // 12 MiB pool holds
        let runtime = datafusion::execution::runtime_env::RuntimeEnvBuilder::new()
            .with_memory_limit(12 << 20, 1.0)
            .build_arc()
            .unwrap();
        let state = datafusion::execution::SessionStateBuilder::new()
            .with_config(datafusion::prelude::SessionConfig::new().with_target_partitions(2))
            .with_default_features()
            .with_runtime_env(runtime)
            .with_physical_optimizer_rule(Arc::new(ViewGroupBy))
            .build();
        let ctx = datafusion::prelude::SessionContext::new_with_state(state);
        crate::sql::session::register_parquet(&ctx, "t", &files, crate::sql::session::string_views(&schema), &[], None)
            .await
            .unwrap();
        let plan =
            ctx.sql("SELECT k, count(*) AS n FROM t GROUP BY k").await.unwrap().create_physical_plan().await.unwrap();
        // the partial stage alone, every partition: only it takes from the pool
        let partial = partial_stage(&plan);
        let mut counts: HashMap<String, i64> = HashMap::new();
        let mut partial_rows = 0;
        for p in 0..partial.properties().partitioning.partition_count() {
            let mut stream = partial.execute(p, ctx.task_ctx()).unwrap();
            while let Some(b) = stream.next().await {
                let b = b.unwrap();
                partial_rows += b.num_rows();
                let (k, n) = (b.column(0).as_string_view(), b.column(1).as_primitive::<arrow::datatypes::Int64Type>());
                for r in 0..b.num_rows() {
                    *counts.entry(k.value(r).to_string()).or_default() += n.value(r);
                }
            }
        }
        assert_eq!(counts.len(), distinct);
        assert!(counts.values().all(|&n| n == 2));
        assert!(partial_rows > distinct, "{partial_rows}");
    }
}
