//! The memory pool of runpack's SQL sessions: DataFusion's greedy pool of
//! [`SQL_MEMORY_LIMIT_BYTES`](crate::core::options::SQL_MEMORY_LIMIT_BYTES), except that the batches
//! a `RepartitionExec` holds between its input and output partitions are never refused.
//!
//! Why: in DataFusion 55.2, a `RepartitionExec` that cannot reserve memory for a batch writes it
//! to a spill file, and the spill file reader can wait forever on one file while the batch it
//! needs is in another (apache/datafusion#24883; 55.2, the newest release, still has it). The
//! query then hangs with every thread parked: about one run in three of a two-key `GROUP BY`
//! over 350,000 rows with `batch_size = 1` (each one-row batch counts the whole buffers it
//! shares, so the limit is reached at once).
//!
//! So a repartition's batches are counted apart and never refused, and it never spills. Most
//! of the time it holds few: its output channels stop taking batches while every one of them
//! has one waiting. An output partition read more slowly than the others can hold more
//! (apache/datafusion#22090); that memory is not limited here: a query that may use more
//! memory beats one that never ends. Sorts, joins and aggregations keep the limit and spill
//! as before, and a repartition's bytes never make them spill.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::common::Result;
use datafusion::execution::memory_pool::{
    GreedyMemoryPool, MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation, TrackConsumersPool,
};

/// The name DataFusion gives a repartition's reservations (`RepartitionExec[3]`).
const REPARTITION: &str = "RepartitionExec[";

/// A [`MemoryPool`] that refuses nothing to a repartition and passes everything else to a
/// greedy pool of `limit` bytes, whose "resources exhausted" errors name the top 5 consumers.
#[derive(Debug)]
pub struct SessionPool {
    /// Sorts, joins, aggregations and runpack's operators.
    limited: TrackConsumersPool<GreedyMemoryPool>,
    /// Bytes repartitions hold now.
    repartitions: AtomicUsize,
}

impl SessionPool {
    /// A pool of `limit` bytes for everything but repartitions.
    pub fn new(limit: usize) -> Arc<SessionPool> {
        let top = std::num::NonZeroUsize::new(5).expect("not zero");
        Arc::new(SessionPool {
            limited: TrackConsumersPool::new(GreedyMemoryPool::new(limit), top),
            repartitions: 0.into(),
        })
    }

    /// Bytes that repartitions hold now (not counted against the limit).
    pub fn repartition_bytes(&self) -> usize {
        self.repartitions.load(Ordering::Relaxed)
    }
}

/// As DataFusion's pools show themselves in "resources exhausted" errors: the limited pool,
/// then the repartitions' bytes.
impl std::fmt::Display for SessionPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, and {} bytes held by repartitions (not limited)", self.limited, self.repartition_bytes())
    }
}

/// Puts a [`SessionPool`] back in `ctx` after `SET datafusion.runtime.memory_limit = …`,
/// which gives a session DataFusion's own pool of that size (where a repartition can hang
/// again). A pool without a limit (after `RESET`) is kept: nothing spills there.
///
/// Errors: DataFusion's, when the runtime cannot be rebuilt.
pub fn keep(ctx: &datafusion::prelude::SessionContext) -> Result<()> {
    let state = ctx.state_ref();
    let mut state = state.write();
    let runtime = state.runtime_env().clone();
    let MemoryLimit::Finite(limit) = runtime.memory_pool.memory_limit() else { return Ok(()) };
    if runtime.memory_pool.is::<SessionPool>() {
        return Ok(());
    }
    let rebuilt = datafusion::execution::runtime_env::RuntimeEnvBuilder::from_runtime_env(&runtime)
        .with_memory_pool(SessionPool::new(limit))
        .build_arc()?;
    *state = datafusion::execution::SessionStateBuilder::from(state.clone()).with_runtime_env(rebuilt).build();
    Ok(())
}

/// Whether `consumer` is a repartition's.
fn repartition(consumer: &MemoryConsumer) -> bool {
    consumer.name().starts_with(REPARTITION)
}

impl MemoryPool for SessionPool {
    fn name(&self) -> &str {
        "runpack"
    }

    fn register(&self, consumer: &MemoryConsumer) {
        if !repartition(consumer) {
            self.limited.register(consumer)
        }
    }

    fn unregister(&self, consumer: &MemoryConsumer) {
        if !repartition(consumer) {
            self.limited.unregister(consumer)
        }
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        if repartition(reservation.consumer()) {
            self.repartitions.fetch_add(additional, Ordering::Relaxed);
        } else {
            self.limited.grow(reservation, additional)
        }
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        if repartition(reservation.consumer()) {
            self.repartitions.fetch_sub(shrink, Ordering::Relaxed);
        } else {
            self.limited.shrink(reservation, shrink)
        }
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
        if repartition(reservation.consumer()) {
            self.repartitions.fetch_add(additional, Ordering::Relaxed);
            Ok(())
        } else {
            self.limited.try_grow(reservation, additional)
        }
    }

    fn reserved(&self) -> usize {
        self.limited.reserved() + self.repartition_bytes()
    }

    fn memory_limit(&self) -> MemoryLimit {
        self.limited.memory_limit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repartitions_are_never_refused_and_do_not_use_the_limit() {
        let pool: Arc<dyn MemoryPool> = SessionPool::new(1000);
        let sort = MemoryConsumer::new("ExternalSorter[0]").register(&pool);
        let repartition = MemoryConsumer::new("RepartitionExec[1]").register(&pool);
        repartition.try_grow(1 << 30).unwrap();
        sort.try_grow(1000).unwrap();
        assert!(sort.try_grow(1).is_err(), "the limit still holds for the others");
        assert_eq!(pool.reserved(), (1 << 30) + 1000);
        repartition.shrink(1 << 29);
        assert_eq!(pool.reserved(), (1 << 29) + 1000);
        drop(repartition);
        drop(sort);
        assert_eq!(pool.reserved(), 0);
        assert!(matches!(pool.memory_limit(), MemoryLimit::Finite(1000)));
    }

    /// `SET datafusion.runtime.memory_limit` sets the limit of runpack's pool, not a pool of
    /// DataFusion's own; the session's functions and operators stay.
    #[tokio::test]
    async fn a_memory_limit_set_in_sql_keeps_this_pool() {
        let ctx = super::super::session::query_session();
        let pool = || ctx.runtime_env().memory_pool.clone();
        assert!(pool().is::<SessionPool>());
        super::super::session::run_script(&ctx, "SET datafusion.runtime.memory_limit = '64M'; SELECT 1").await.unwrap();
        assert!(pool().is::<SessionPool>(), "{}", pool());
        assert!(matches!(pool().memory_limit(), MemoryLimit::Finite(n) if n == 64 << 20));
        let (_, rows) =
            super::super::session::run_script(&ctx, "SELECT tinker_run_id('tinker://abc/weights/x')").await.unwrap();
        assert_eq!(rows[0].num_rows(), 1);
    }

    /// The spills of the repartitions in the plan of a two-key `GROUP BY` of 20,000 rows read
    /// one row per batch and spread over 2 partitions, in a session whose pool is `pool`, and its result's
    /// lines in sorted order.
    async fn repartition_spills(pool: Arc<dyn MemoryPool>) -> (usize, Vec<String>) {
        use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        use datafusion::physical_plan::ExecutionPlanVisitor;
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Utf8, false),
            Field::new("i", DataType::Int64, false),
        ]));
        let n = 20_000;
        let a = StringArray::from_iter_values((0..n).map(|k| format!("text number {}", k % 50)));
        let i = Int64Array::from_iter_values((0..n).map(|k| k % 7));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(a), Arc::new(i)]).unwrap();
        // one partition: a round-robin repartition spreads its one-row batches over two
        let table = datafusion::datasource::MemTable::try_new(schema, vec![vec![batch]]).unwrap();
        let config = datafusion::prelude::SessionConfig::new().with_target_partitions(2).with_batch_size(1);
        let runtime =
            datafusion::execution::runtime_env::RuntimeEnvBuilder::new().with_memory_pool(pool).build_arc().unwrap();
        let ctx = datafusion::prelude::SessionContext::new_with_config_rt(config, runtime);
        ctx.register_table("t", Arc::new(table)).unwrap();
        let df = ctx.sql("SELECT a, i, count(*) AS n FROM t GROUP BY a, i").await.unwrap();
        let plan = df.create_physical_plan().await.unwrap();
        let batches = datafusion::physical_plan::collect(plan.clone(), ctx.task_ctx()).await.unwrap();
        let rows = datafusion::arrow::util::pretty::pretty_format_batches(&batches).unwrap().to_string();
        struct Spills(usize);
        impl ExecutionPlanVisitor for Spills {
            type Error = std::convert::Infallible;
            fn pre_visit(
                &mut self,
                plan: &dyn datafusion::physical_plan::ExecutionPlan,
            ) -> std::result::Result<bool, Self::Error> {
                if plan.name() == "RepartitionExec" {
                    self.0 += plan.metrics().and_then(|m| m.spill_count()).unwrap_or(0);
                }
                Ok(true)
            }
        }
        let mut spills = Spills(0);
        datafusion::physical_plan::accept(plan.as_ref(), &mut spills).unwrap();
        let mut rows: Vec<String> = rows.lines().map(String::from).collect();
        rows.sort();
        (spills.0, rows)
    }

    /// A repartition that would spill with DataFusion's own pool (one-row slices each count
    /// the whole 20,000-row buffers) holds its batches in this one, and the result is the same.
    /// (DataFusion's pool cannot hang here: the repartition that spills has one input, and the
    /// hang needs two writing at once.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_repartition_never_spills() {
        let limit = 1 << 20;
        let greedy =
            Arc::new(TrackConsumersPool::new(GreedyMemoryPool::new(limit), std::num::NonZeroUsize::new(5).unwrap()));
        let timeout = std::time::Duration::from_secs(60);
        let (theirs, their_rows) = tokio::time::timeout(timeout, repartition_spills(greedy)).await.expect("finished");
        let (ours, our_rows) =
            tokio::time::timeout(timeout, repartition_spills(SessionPool::new(limit))).await.expect("finished");
        assert!(theirs > 0, "DataFusion's pool makes the repartition spill");
        assert_eq!(ours, 0);
        assert_eq!(our_rows, their_rows);
        assert_eq!(our_rows.len(), 350 + 4, "50 texts x 7 numbers, and the table's frame");
    }
}
