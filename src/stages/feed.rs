//! Sources streamed straight into the one table query that reads them.
//!
//! In: a source whose schema is known before any of its rows is read (declared in the
//! pipeline, or fixed by its format; see [`crate::stages::ingest::stream_schema`]) and that exactly
//! one table's query reads, once. Out: a DataFusion table with one partition, whose record
//! batches are the source's kept rows in input order, converted by ingest on its own threads
//! while the table's query runs, through a bounded channel (at most [`FEED_BATCHES`] batches
//! wait in memory). A staged source is instead written to an Arrow IPC file first and read
//! back; the two give the same rows, reports and rejects.
//!
//! When the table's plan counts on the rows arriving in the order of some columns (its key),
//! that order is declared to DataFusion before it has been seen and checked as the rows go
//! by: a row out of order stops the feed with an error ([`Reading::disordered`] is set) and
//! the build then reads the source again, from its first row, into a plan that sorts it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::{BatchSplitStream, RecordBatchStreamAdapter};
use datafusion::physical_plan::streaming::PartitionStream;

use crate::core::error::{Error, Result};
use crate::core::spec::PipelineSpec;
use crate::stages::ingest::{IngestOptions, Streamed};
use crate::stages::rejects::Rejects;

/// Record batches that may wait between ingest and the table's query.
pub const FEED_BATCHES: usize = 2;

type Message = std::result::Result<RecordBatch, DataFusionError>;

/// The one partition of a streamed source: hands out its receiving end once.
#[derive(Debug)]
pub struct Feed {
    schema: SchemaRef,
    rx: Mutex<Option<tokio::sync::mpsc::Receiver<Message>>>,
    /// A scan asked for the rows again after they were handed out.
    reread: std::sync::atomic::AtomicBool,
}

/// The sending end of a [`Feed`], given to [`start`].
pub struct FeedSender(tokio::sync::mpsc::Sender<Message>);

impl Feed {
    /// A feed of rows of `schema`, and the end that fills it.
    pub fn new(schema: SchemaRef) -> (Arc<Feed>, FeedSender) {
        let (tx, rx) = tokio::sync::mpsc::channel(FEED_BATCHES);
        let feed = Feed { schema, rx: Mutex::new(Some(rx)), reread: std::sync::atomic::AtomicBool::new(false) };
        (Arc::new(feed), FeedSender(tx))
    }

    /// Drops the receiving end if no scan took it, so that the reading thread never waits
    /// for a query that will not come (it then reads the rest of the source without sending).
    pub fn close(&self) {
        if let Ok(mut rx) = self.rx.lock() {
            rx.take();
        }
    }

    /// Whether `plan` reads this feed exactly once: one scan of it, and no recursive query
    /// (whose scans run again on each step). A plan may only run over a feed if it does.
    pub fn read_once_by(self: &Arc<Self>, plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>) -> bool {
        use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
        use datafusion::physical_plan::recursive_query::RecursiveQueryExec;
        use datafusion::physical_plan::streaming::StreamingTableExec;
        let mut scans = 0;
        let mut recursive = false;
        let _ = plan.apply(|node| {
            if let Some(s) = node.downcast_ref::<StreamingTableExec>() {
                let me = Arc::as_ptr(self) as *const ();
                scans += s.partitions().iter().filter(|p| Arc::as_ptr(p) as *const () == me).count();
            }
            recursive |= node.downcast_ref::<RecursiveQueryExec>().is_some();
            Ok(TreeNodeRecursion::Continue)
        });
        scans == 1 && !recursive
    }

    /// Whether a scan asked for the rows a second time (the query's result is then wrong and
    /// the table must be built from a staged source).
    pub fn reread(&self) -> bool {
        self.reread.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl PartitionStream for Feed {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let rx = self.rx.lock().map(|mut r| r.take()).unwrap_or(None);
        let stream: futures::stream::BoxStream<'static, Message> = match rx {
            Some(rx) => Box::pin(futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|m| (m, rx)) })),
            None => {
                self.reread.store(true, std::sync::atomic::Ordering::SeqCst);
                Box::pin(futures::stream::once(async {
                    Err(DataFusionError::Execution("a streamed source can be read only once".into()))
                }))
            }
        };
        let stream = Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), stream));
        // batches cut to the session's batch size, as a scan of a staging file cuts them: the
        // table's writers then see the same batches, and write the same bytes, either way
        let metrics = datafusion::physical_plan::metrics::ExecutionPlanMetricsSet::new();
        Box::pin(BatchSplitStream::new(
            stream,
            ctx.session_config().batch_size(),
            datafusion::physical_plan::metrics::SplitMetrics::new(&metrics, 0),
        ))
    }
}

/// What reading a streamed source found, once it is over.
pub struct Reading {
    /// Source index in the pipeline.
    pub source: usize,
    /// The rejects files ingest wrote (to be adopted by the build's).
    pub rejects: Rejects,
    /// The rows kept and files read, or the error that stopped the read.
    pub result: Result<Streamed>,
    /// The rows broke the order declared for them.
    pub disordered: bool,
}

/// A source being read on its own thread.
pub struct Running {
    thread: std::thread::JoinHandle<Reading>,
}

impl Running {
    /// Waits for the read to end (all of the source is read even when the query stopped
    /// early, so that every problem in it is reported).
    pub fn join(self) -> Reading {
        self.thread.join().expect("the ingest thread does not panic")
    }
}

/// Reads source `index` of `spec` into `tx` on a new thread. `order`: the check of the order
/// the rows were declared to come in, run as they go by. Rejects are written
/// under `rejects_dir`; what it finds keeps at most `opts.max_errors` violations.
pub fn start(
    spec: Arc<PipelineSpec>,
    index: usize,
    tx: FeedSender,
    mut order: Option<crate::stages::sort::OrderCheck>,
    opts: IngestOptions,
    rejects_dir: PathBuf,
) -> Running {
    let thread = std::thread::spawn(move || {
        let mut rejects = Rejects::new(rejects_dir);
        let mut disordered = false;
        let mut open = true;
        let tx = tx.0;
        let result = {
            let mut out = |rb: &RecordBatch| -> Result<()> {
                if let Some(c) = &mut order {
                    c.observe(rb)?;
                    if !c.in_order() {
                        disordered = true;
                        return Err(Error::format(
                            format!("source {}", spec.def.sources[index].name),
                            "rows are not in key order",
                        ));
                    }
                }
                // a query that stopped reading no longer needs rows; the rest is still read
                if open && tx.blocking_send(Ok(rb.clone())).is_err() {
                    open = false;
                }
                Ok(())
            };
            crate::stages::ingest::stream(&spec, index, &opts, &mut rejects, &mut out)
        };
        if let Err(e) = &result {
            // stop the query: the build reports this error (or starts the table again)
            let _ = tx.blocking_send(Err(DataFusionError::Execution(format!("source not read: {e}"))));
        }
        Reading { source: index, rejects, result, disordered }
    });
    Running { thread }
}
