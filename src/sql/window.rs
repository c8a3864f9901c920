//! Moving sums and means of floats (`avg(x) OVER (PARTITION BY run ORDER BY step ROWS
//! BETWEEN 49 PRECEDING AND CURRENT ROW)`) computed in one pass over each record batch.
//!
//! In: the physical plan DataFusion made for a statement. Out: the same plan, in which each
//! `BoundedWindowAggExec` whose window functions are all runpack's `sum` or `avg` of a
//! `Float64` over a frame of `ROWS BETWEEN <n> PRECEDING AND CURRENT ROW` (or `CURRENT ROW AND
//! CURRENT ROW`), without `FILTER` or `DISTINCT`, over input sorted by its `PARTITION BY`
//! keys, is a [`MovingSumExec`]: same output schema, partitioning, order and values, bit for
//! bit. Left to DataFusion: other functions, other frames (`RANGE`, `GROUPS`, `UNBOUNDED`,
//! `FOLLOWING`), windows whose partitions are not contiguous in the input.
//!
//! Why: DataFusion 55 evaluates a moving frame row by row through the accumulator interface:
//! for each row it slices the argument array twice (the row entering the frame, the row
//! leaving it), calls the accumulator with each slice, turns the result into a `ScalarValue`
//! and collects those into an array: about 280 ns per row on a 2-core EPYC, 135 ms of the
//! bench's 485,576 metrics rows. Here each row is one step of the same moving sum (the one
//! [`super::udf`] gives `sum` and `avg` of floats), in the same order (the entering row added, then the
//! leaving row taken out, then the frame's value read), written straight into a
//! `Float64Builder`.
//!
//! Partitions are found as DataFusion finds them, with Arrow's `partition` kernel over the
//! `PARTITION BY` values; a batch's first rows continue the previous batch's last partition
//! when the kernel finds them equal to its last row.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Builder, RecordBatch};
use arrow::datatypes::{DataType, Float64Type};
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::config::ConfigOptions;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{WindowFrameBound, WindowFrameUnits};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::window::SlidingAggregateWindowExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::execution_plan::ReplaceChildrenOptions;
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet, RecordOutput};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::windows::BoundedWindowAggExec;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, InputOrderMode, PlanProperties,
};
use futures::StreamExt;

use super::udf::SlidingFloatSum;

/// The physical optimizer rule that puts a [`MovingSumExec`] in place of each
/// `BoundedWindowAggExec` it can stand for (see the module docs). Runs after DataFusion's own
/// rules.
#[derive(Debug, Default)]
pub struct MovingSums;

impl PhysicalOptimizerRule for MovingSums {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|p| {
            if let Some(window) = p.downcast_ref::<BoundedWindowAggExec>()
                && let Some(sums) = eligible(window)?
            {
                return Ok(Transformed::yes(
                    Arc::new(MovingSumExec::new(window.clone(), sums)) as Arc<dyn ExecutionPlan>
                ));
            }
            Ok(Transformed::no(p))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "moving_sums"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// One window function [`MovingSumExec`] computes: its argument, the rows before the current
/// one its frame holds, and whether it is a mean.
#[derive(Debug, Clone)]
struct MovingSum {
    argument: Arc<dyn PhysicalExpr>,
    preceding: usize,
    avg: bool,
}

/// The window functions of `window`, when [`MovingSumExec`] computes them all the same way.
fn eligible(window: &BoundedWindowAggExec) -> Result<Option<Vec<MovingSum>>> {
    if !matches!(window.input_order_mode, InputOrderMode::Sorted) {
        return Ok(None);
    }
    let schema = window.input().schema();
    let mut sums = Vec::new();
    for w in window.window_expr() {
        let Some(sliding) = w.as_any().downcast_ref::<SlidingAggregateWindowExpr>() else {
            return Ok(None);
        };
        let aggregate = sliding.get_aggregate_expr();
        let Some(avg) = super::udf::moving_float_sum(aggregate) else {
            return Ok(None);
        };
        let frame = w.get_window_frame();
        let preceding = match (&frame.units, &frame.start_bound, &frame.end_bound) {
            (
                WindowFrameUnits::Rows,
                WindowFrameBound::Preceding(ScalarValue::UInt64(Some(n))),
                WindowFrameBound::CurrentRow,
            ) => usize::try_from(*n).ok(),
            (WindowFrameUnits::Rows, WindowFrameBound::CurrentRow, WindowFrameBound::CurrentRow) => Some(0),
            _ => None,
        };
        // a frame longer than any input: left to DataFusion, which treats it the same
        let Some(preceding) = preceding.filter(|n| *n < u32::MAX as usize) else {
            return Ok(None);
        };
        // DataFusion keeps the FILTER clause private: the expression without one is built
        // again and compared
        let unfiltered = SlidingAggregateWindowExpr::new(
            Arc::new(aggregate.clone()),
            w.partition_by(),
            w.order_by(),
            Arc::clone(frame),
            None,
        );
        if format!("{unfiltered:?}") != format!("{sliding:?}") {
            return Ok(None);
        }
        // every function partitions the rows alike
        if w.partition_by().len() != window.window_expr()[0].partition_by().len()
            || w.partition_by().iter().zip(window.window_expr()[0].partition_by()).any(|(a, b)| a != b)
        {
            return Ok(None);
        }
        let arguments = aggregate.expressions();
        let [argument] = arguments.as_slice() else {
            return Ok(None);
        };
        if argument.data_type(&schema)? != DataType::Float64 {
            return Ok(None);
        }
        sums.push(MovingSum { argument: Arc::clone(argument), preceding, avg });
    }
    Ok((!sums.is_empty()).then_some(sums))
}

/// A window of moving float sums and means: DataFusion's `BoundedWindowAggExec` over input
/// sorted by its `PARTITION BY` keys, computed one batch at a time (see the module docs).
/// Output: each input batch with one `Float64` column per window function appended.
#[derive(Debug)]
pub struct MovingSumExec {
    /// The window this stands for: its schema, properties, expressions and input.
    window: BoundedWindowAggExec,
    sums: Vec<MovingSum>,
    metrics: ExecutionPlanMetricsSet,
}

impl MovingSumExec {
    fn new(window: BoundedWindowAggExec, sums: Vec<MovingSum>) -> Self {
        Self { window, sums, metrics: ExecutionPlanMetricsSet::new() }
    }
}

impl DisplayAs for MovingSumExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "MovingSumExec: one pass per batch, for ")?;
        self.window.fmt_as(t, f)
    }
}

impl ExecutionPlan for MovingSumExec {
    fn name(&self) -> &str {
        "MovingSumExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.window.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![self.window.input()]
    }

    fn input_distribution_requirements(&self) -> datafusion::physical_plan::InputDistributionRequirements {
        self.window.input_distribution_requirements()
    }

    fn required_input_ordering(&self) -> Vec<Option<datafusion::physical_expr::OrderingRequirements>> {
        self.window.required_input_ordering()
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        self.window.maintains_input_order()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.window.apply_expressions(f)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let recompute = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute);
        let plan = Arc::new(self.window.clone()).replace_children(children, recompute)?;
        match plan.downcast_ref::<BoundedWindowAggExec>() {
            Some(window) => match eligible(window)? {
                Some(sums) => Ok(Arc::new(Self::new(window.clone(), sums))),
                None => Ok(plan),
            },
            None => Err(DataFusionError::Internal("a BoundedWindowAggExec was expected".into())),
        }
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.window.input().execute(partition, Arc::clone(&context))?;
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let mut state = Frames {
            keys: self.window.partition_keys(),
            sums: self.sums.clone(),
            frames: self.sums.iter().map(|s| Frame::new(s.avg)).collect(),
            last_key: None,
            schema: self.schema(),
        };
        let stream = input.map(move |batch| {
            let batch = batch?;
            let _timer = baseline.elapsed_compute().timer();
            Ok(state.next(&batch)?.record_output(&baseline))
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema(), stream)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// One window function's frame in the partition being read: the running sum, and the
/// frame's values (null included), oldest first, so that each can leave in its turn.
struct Frame {
    sum: SlidingFloatSum,
    values: VecDeque<Option<f64>>,
}

impl Frame {
    fn new(avg: bool) -> Self {
        Self { sum: SlidingFloatSum::new(avg), values: VecDeque::new() }
    }
}

/// One output partition's state across batches.
struct Frames {
    keys: Vec<Arc<dyn PhysicalExpr>>,
    sums: Vec<MovingSum>,
    frames: Vec<Frame>,
    /// The previous batch's last `PARTITION BY` values (arrays of one row).
    last_key: Option<Vec<ArrayRef>>,
    schema: arrow::datatypes::SchemaRef,
}

impl Frames {
    /// `batch` with the window functions' values appended.
    fn next(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        let keys = self.keys.iter().map(|k| k.evaluate(batch)?.into_array(rows)).collect::<Result<Vec<ArrayRef>>>()?;
        // the starts of the batch's partitions; a first one that continues the previous
        // batch's last partition is left out
        let mut starts = Vec::new();
        if rows > 0 && !keys.is_empty() {
            let (joined, shift) = match &self.last_key {
                Some(last) => (
                    keys.iter()
                        .zip(last)
                        .map(|(k, l)| arrow::compute::concat(&[l.as_ref(), k.as_ref()]))
                        .collect::<std::result::Result<Vec<_>, _>>()?,
                    1,
                ),
                None => (keys.clone(), 0),
            };
            // a range starting at 0 goes on with the frames as they are (fresh on the first batch)
            starts.extend(
                arrow::compute::partition(&joined)?
                    .ranges()
                    .into_iter()
                    .filter(|r| r.start > 0)
                    .map(|r| r.start - shift),
            );
            self.last_key = Some(keys.iter().map(|k| k.slice(rows - 1, 1)).collect());
        }
        let mut columns = batch.columns().to_vec();
        for (sum, frame) in self.sums.iter().zip(&mut self.frames) {
            let values = sum.argument.evaluate(batch)?.into_array(rows)?;
            let values = values.as_primitive::<Float64Type>();
            let mut out = Float64Builder::with_capacity(rows);
            let mut next_start = starts.iter().peekable();
            for row in 0..rows {
                if next_start.next_if(|s| **s == row).is_some() {
                    *frame = Frame::new(sum.avg);
                }
                let value = values.is_valid(row).then(|| values.value(row));
                // as DataFusion's moving frame: the row entering, then the row leaving, then the value
                if let Some(v) = value {
                    frame.sum.add(v, 1);
                }
                frame.values.push_back(value);
                if frame.values.len() > sum.preceding + 1
                    && let Some(Some(v)) = frame.values.pop_front()
                {
                    frame.sum.add(v, -1);
                }
                out.append_option(frame.sum.value());
            }
            columns.push(Arc::new(out.finish()));
        }
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Float64Array, Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};

    use super::*;

    /// Rows in a random order: a text key (nulls, few values), a second key, a unique step,
    /// and floats of every kind (nulls, NaN, infinities, -0.0, values near the largest
    /// float, whose sums overflow, and small ones a large one would swallow).
    fn sample(rows: usize) -> RecordBatch {
        let mut next = crate::core::testing::xorshift(0x9e37_79b9_7f4a_7c15_u64);
        let (mut k, mut g, mut step, mut v) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for n in 0..rows {
            let r = next();
            k.push(match r % 7 {
                0 => None,
                m => Some(["run-a", "run-b", "", "é", "run-with-a-longer-name", "x"][m as usize - 1]),
            });
            g.push((r >> 4) as i64 % 3);
            // unique, in no order: ties would let two plans order rows differently
            step.push(((n as u64).wrapping_mul(0x5851_f42d) % (1 << 40)) as i64);
            v.push(match (r >> 8) % 23 {
                0 => None,
                1 => Some(f64::NAN),
                2 => Some(f64::INFINITY),
                3 => Some(f64::NEG_INFINITY),
                4 => Some(-0.0),
                5 => Some(1.7e308),
                6 => Some(-1.7e308),
                7 => Some(1e20),
                _ => Some(((r >> 16) % 2000) as f64 / 7.0 - 100.0),
            });
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("g", DataType::Int64, false),
            Field::new("step", DataType::Int64, false),
            Field::new("v", DataType::Float64, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(k)),
                Arc::new(Int64Array::from(g)),
                Arc::new(Int64Array::from(step)),
                Arc::new(Float64Array::from(v)),
            ],
        )
        .unwrap()
    }

    /// A session (with or without runpack's own operators) that reads `batch` as table `t`,
    /// in two partitions of batches of 37 rows, and runs plans in batches of `batch_size`.
    async fn table(own: bool, batch: &RecordBatch, batch_size: usize) -> datafusion::prelude::SessionContext {
        let ctx = super::super::session::session_with_partitions(4, own);
        let set = format!("SET datafusion.execution.batch_size = {batch_size}");
        ctx.sql(&set).await.unwrap().collect().await.unwrap();
        let half = batch.num_rows() / 2;
        let chunks =
            |b: RecordBatch| (0..b.num_rows()).step_by(37).map(|s| b.slice(s, 37.min(b.num_rows() - s))).collect();
        let parts = vec![chunks(batch.slice(0, half)), chunks(batch.slice(half, batch.num_rows() - half))];
        let table = datafusion::datasource::MemTable::try_new(batch.schema(), parts).unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
        ctx
    }

    /// The rows of `sql` (every float as its bits, so that NaNs and zeros compare exactly),
    /// and its plan.
    async fn answer(ctx: &datafusion::prelude::SessionContext, sql: &str) -> (Vec<String>, String) {
        let (_, batches) = super::super::session::run(ctx, sql).await.unwrap();
        let (_, plan) = super::super::session::run(ctx, &format!("EXPLAIN {sql}")).await.unwrap();
        let mut rows = Vec::new();
        for b in &batches {
            for r in 0..b.num_rows() {
                let cells: Vec<String> = b
                    .columns()
                    .iter()
                    .map(|c| match c.as_primitive_opt::<Float64Type>() {
                        Some(f) if f.is_valid(r) => format!("{:#x}", f.value(r).to_bits()),
                        _ => arrow::util::display::array_value_to_string(c, r).unwrap(),
                    })
                    .collect();
                rows.push(cells.join(","));
            }
        }
        (rows, arrow::util::pretty::pretty_format_batches(&plan).unwrap().to_string())
    }

    #[tokio::test]
    async fn moving_sums_give_datafusions_answers_bit_for_bit() {
        let batch = sample(3_000);
        for batch_size in [7, 8192] {
            let ours = table(true, &batch, batch_size).await;
            let theirs = table(false, &batch, batch_size).await;
            for sql in [
                "SELECT step, avg(v) OVER (PARTITION BY k ORDER BY step ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) FROM t ORDER BY step",
                "SELECT step, sum(v) OVER (PARTITION BY k ORDER BY step ROWS BETWEEN CURRENT ROW AND CURRENT ROW) FROM t ORDER BY step",
                "SELECT step, avg(v) OVER w1, sum(v) OVER w50, sum(v) OVER w0 FROM t \
                 WINDOW w1 AS (PARTITION BY k ORDER BY step ROWS 1 PRECEDING), \
                 w50 AS (PARTITION BY k ORDER BY step ROWS BETWEEN 50 PRECEDING AND CURRENT ROW), \
                 w0 AS (PARTITION BY k ORDER BY step ROWS BETWEEN 0 PRECEDING AND CURRENT ROW) ORDER BY step",
                "SELECT step, avg(v) OVER (PARTITION BY k, g ORDER BY step ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) FROM t ORDER BY step",
                "SELECT step, sum(v) OVER (ORDER BY step ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) FROM t ORDER BY step",
                "SELECT step, avg(v * 2 + 1) OVER (PARTITION BY g ORDER BY step ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t ORDER BY step",
                "SELECT step, avg(v) OVER (PARTITION BY k ORDER BY step ROWS BETWEEN 100000 PRECEDING AND CURRENT ROW) FROM t ORDER BY step",
                // rows leave the window in no fixed order: aggregates that do not depend on it
                "SELECT count(*), count(m), min(m), max(m) FROM (SELECT avg(v) OVER (PARTITION BY k ORDER BY step ROWS 49 PRECEDING) AS m FROM t)",
            ] {
                let (got, plan) = answer(&ours, sql).await;
                let (want, their_plan) = answer(&theirs, sql).await;
                assert_eq!(got, want, "{sql} in batches of {batch_size}");
                assert!(plan.contains("MovingSumExec"), "{sql}\n{plan}");
                assert!(!their_plan.contains("MovingSumExec"));
            }
            // what DataFusion keeps
            for sql in [
                "SELECT step, avg(v) FILTER (WHERE g > 0) OVER (PARTITION BY k ORDER BY step ROWS 3 PRECEDING) FROM t ORDER BY step",
                "SELECT step, avg(v) OVER (PARTITION BY k ORDER BY step ROWS BETWEEN 3 PRECEDING AND 1 FOLLOWING) FROM t ORDER BY step",
                "SELECT step, avg(v) OVER (PARTITION BY k ORDER BY step ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING) FROM t ORDER BY step",
                "SELECT step, sum(v) OVER (PARTITION BY k ORDER BY step ROWS UNBOUNDED PRECEDING) FROM t ORDER BY step",
                "SELECT step, sum(v) OVER (PARTITION BY k ORDER BY step RANGE BETWEEN 1000 PRECEDING AND CURRENT ROW) FROM t ORDER BY step",
                "SELECT step, sum(g) OVER (PARTITION BY k ORDER BY step ROWS 3 PRECEDING) FROM t ORDER BY step",
                "SELECT step, sum(v) OVER (PARTITION BY k ORDER BY step ROWS 3 PRECEDING), \
                 max(v) OVER (PARTITION BY k ORDER BY step ROWS 3 PRECEDING) FROM t ORDER BY step",
            ] {
                let (got, plan) = answer(&ours, sql).await;
                let (want, _) = answer(&theirs, sql).await;
                assert_eq!(got, want, "{sql} in batches of {batch_size}");
                assert!(!plan.contains("MovingSumExec"), "{sql}\n{plan}");
            }
        }
    }
}
