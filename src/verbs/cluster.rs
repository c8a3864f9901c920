//! The cluster verbs: a Ballista scheduler and executor that know runpack's SQL.
//!
//! In: addresses and folders. Out: a running Apache DataFusion Ballista scheduler
//! ([`scheduler`]) or executor ([`executor`]), the crates' own, with runpack's SQL functions
//! registered ([`crate::sql::engine`]), until the process is stopped. `runpack build` and
//! `runpack query` reach them with `--engine df://HOST:PORT` (docs/cluster.md).

use std::net::SocketAddr;
use std::sync::Arc;

use ballista_core::error::Result as BallistaResult;
use ballista_scheduler::state::execution_graph::ExecutionGraphBox;

use crate::core::error::{Error, Result};

/// How the scheduler hands out tasks: the executors ask for them when they have free slots
/// (pull), rather than the scheduler counting each executor's free slots (push). Ballista
/// 55.0's push scheduler does not give back the slots of a task that ends while its stage
/// is run again after an executor was lost; that executor then gets no more tasks, and the
/// job can wait for ever.
const SCHEDULING: ballista_core::config::TaskSchedulingPolicy = ballista_core::config::TaskSchedulingPolicy::PullStaged;

/// How to run a scheduler.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// Address to listen on (port 0: any free port).
    pub bind: SocketAddr,
    /// Host name the executors and clients reach this scheduler by (default: the bound IP).
    pub external_host: Option<String>,
    /// Seconds without a heartbeat after which an executor is taken for dead and its tasks
    /// run again elsewhere.
    pub executor_timeout_seconds: u64,
}

/// Binds the scheduler's address and returns it (with the port chosen when 0 was asked),
/// and the future that serves until the process ends.
///
/// Errors: [`Error::Io`] when the address cannot be bound; [`Error::Refused`] naming the
/// scheduler when Ballista refuses its settings.
pub async fn scheduler(opts: SchedulerOptions) -> Result<(SocketAddr, impl std::future::Future<Output = Result<()>>)> {
    let listener = tokio::net::TcpListener::bind(opts.bind).await.map_err(|e| Error::io(opts.bind.to_string(), e))?;
    let bound = listener.local_addr().map_err(|e| Error::io(opts.bind.to_string(), e))?;
    let config = ballista_scheduler::config::SchedulerConfig {
        bind_host: bound.ip().to_string(),
        bind_port: bound.port(),
        external_host: opts.external_host.clone().unwrap_or_else(|| bound.ip().to_string()),
        executor_timeout_seconds: opts.executor_timeout_seconds,
        // checked twice within the timeout
        expire_dead_executor_interval_seconds: (opts.executor_timeout_seconds / 2).clamp(1, 15),
        no_executors_grace_period_seconds: opts.executor_timeout_seconds,
        override_session_builder: Some(Arc::new(crate::sql::engine::cluster_state)),
        // executors ask for tasks when they have free slots (see [`SCHEDULING`])
        scheduling_policy: SCHEDULING,
        ..Default::default()
    };
    let refused =
        move |e: ballista_core::error::BallistaError| Error::Refused(format!("Ballista scheduler on {bound}: {e}"));
    config.validate().map_err(refused)?;
    let config = Arc::new(config);
    let cluster = ballista_scheduler::cluster::BallistaCluster::new_from_config(&config).await.map_err(refused)?;
    // a job whose stages ran again ends failed ([`NoRerunResults`])
    let cluster = ballista_scheduler::cluster::BallistaCluster::new(
        cluster.cluster_state(),
        Arc::new(NoRerunResults(cluster.job_state())),
    );
    let server = ballista_scheduler::scheduler_process::create_scheduler::<
        datafusion_proto::protobuf::LogicalPlanNode,
        datafusion_proto::protobuf::PhysicalPlanNode,
    >(cluster, config)
    .await
    .map_err(refused)?;
    let serve = async move {
        ballista_scheduler::scheduler_process::start_grpc_service_with_listener(listener, server).await.map_err(refused)
    };
    Ok((bound, serve))
}

/// Ballista's job state, but for a job that succeeds after some of its stages ran again: it
/// ends failed, naming those stages.
///
/// Ballista runs a stage again when an executor that held its shuffle output is lost, or a
/// task could not fetch it. Ballista 55.0 was seen to finish such jobs with rows counted
/// twice: an executor killed during a `GROUP BY` over a join left every group's sums 1.5 to
/// 1.9 times their value, with the right number of groups and exit 0 (8 of 13 kills during
/// that job), where the other tables of the build were right. A job whose stages ran once is
/// as it was. The client learns how a job ended from the status saved here (Ballista pushes
/// it to the client as it is saved), so no client sees the job succeed first.
struct NoRerunResults(Arc<dyn ballista_scheduler::cluster::JobState>);

/// The stages of `graph` that ran more than once (attempt numbers from 0), with their attempts.
fn rerun_stages(graph: &ballista_scheduler::state::execution_graph::ExecutionGraphBox) -> Vec<(usize, usize)> {
    use ballista_scheduler::state::execution_stage::ExecutionStage as S;
    let mut rerun: Vec<(usize, usize)> = graph
        .stages()
        .iter()
        .map(|(id, stage)| {
            let attempt = match stage {
                S::UnResolved(s) => s.stage_attempt_num,
                S::Resolved(s) => s.stage_attempt_num,
                S::Running(s) => s.stage_attempt_num,
                S::Successful(s) => s.stage_attempt_num,
                S::Failed(s) => s.stage_attempt_num,
            };
            (*id, attempt)
        })
        .filter(|(_, attempt)| *attempt > 0)
        .collect();
    rerun.sort_unstable();
    rerun
}

#[async_trait::async_trait]
impl ballista_scheduler::cluster::JobState for NoRerunResults {
    fn accept_job(&self, job_id: &ballista_core::JobId, job_name: &str, queued_at: u64) -> BallistaResult<()> {
        self.0.accept_job(job_id, job_name, queued_at)
    }

    fn pending_job_number(&self) -> usize {
        self.0.pending_job_number()
    }

    async fn submit_job(
        &self,
        job_id: ballista_core::JobId,
        graph: &ExecutionGraphBox,
        subscriber: Option<ballista_core::JobStatusSubscriber>,
    ) -> BallistaResult<()> {
        self.0.submit_job(job_id, graph, subscriber).await
    }

    async fn get_jobs(&self) -> BallistaResult<std::collections::HashSet<ballista_core::JobId>> {
        self.0.get_jobs().await
    }

    async fn get_all_jobs(&self) -> BallistaResult<std::collections::HashSet<ballista_core::JobId>> {
        self.0.get_all_jobs().await
    }

    async fn get_job_status(
        &self,
        job_id: &ballista_core::JobId,
    ) -> BallistaResult<Option<ballista_core::serde::protobuf::JobStatus>> {
        self.0.get_job_status(job_id).await
    }

    async fn get_execution_graph(&self, job_id: &ballista_core::JobId) -> BallistaResult<Option<ExecutionGraphBox>> {
        self.0.get_execution_graph(job_id).await
    }

    async fn save_job(&self, job_id: &ballista_core::JobId, graph: &ExecutionGraphBox) -> BallistaResult<()> {
        use ballista_core::serde::protobuf::job_status::Status;
        let succeeded = matches!(graph.status().status, Some(Status::Successful(_)));
        let rerun = if succeeded { rerun_stages(graph) } else { Vec::new() };
        if rerun.is_empty() {
            return self.0.save_job(job_id, graph).await;
        }
        let stages: Vec<String> = rerun.iter().map(|(id, attempt)| format!("{id} ({} runs)", attempt + 1)).collect();
        let message = format!(
            "stage{} {} of this job ran again (an executor was lost, or a task could not fetch a shuffle \
             output), and Ballista 55.0 was seen to count rows twice after such a rerun: the job is failed rather \
             than its result kept. Run the build again",
            if stages.len() == 1 { "" } else { "s" },
            stages.join(", ")
        );
        tracing::warn!("job {job_id}: {message}");
        let mut failed = graph.cloned();
        failed.fail_job(message);
        self.0.save_job(job_id, &failed).await
    }

    async fn fail_unscheduled_job(&self, job_id: &ballista_core::JobId, reason: String) -> BallistaResult<()> {
        self.0.fail_unscheduled_job(job_id, reason).await
    }

    async fn remove_job(&self, job_id: &ballista_core::JobId) -> BallistaResult<()> {
        self.0.remove_job(job_id).await
    }

    async fn try_acquire_job(&self, job_id: &ballista_core::JobId) -> BallistaResult<Option<ExecutionGraphBox>> {
        self.0.try_acquire_job(job_id).await
    }

    async fn job_state_events(&self) -> BallistaResult<ballista_scheduler::cluster::JobStateEventStream> {
        self.0.job_state_events().await
    }

    async fn create_or_update_session(
        &self,
        session_id: &str,
        config: &datafusion::prelude::SessionConfig,
    ) -> BallistaResult<Arc<datafusion::prelude::SessionContext>> {
        self.0.create_or_update_session(session_id, config).await
    }

    async fn remove_session(&self, session_id: &str) -> BallistaResult<()> {
        self.0.remove_session(session_id).await
    }

    fn produce_config(&self) -> datafusion::prelude::SessionConfig {
        self.0.produce_config()
    }
}

/// How to run an executor.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    /// The scheduler's host.
    pub scheduler_host: String,
    /// The scheduler's port.
    pub scheduler_port: u16,
    /// The IP address the executor's services listen on.
    pub bind_host: String,
    /// Host name the scheduler and clients reach this executor by (default: `bind_host`).
    pub external_host: Option<String>,
    /// Port of the Arrow Flight service that serves the executor's results.
    pub flight_port: u16,
    /// Port of the gRPC service the scheduler sends tasks to.
    pub grpc_port: u16,
    /// Folder for shuffle files and spills (default: a temporary folder).
    pub work_dir: Option<String>,
    /// Tasks run at once (0: one per core).
    pub concurrent_tasks: usize,
    /// Seconds between heartbeats to the scheduler.
    pub heartbeat_seconds: u64,
}

/// Runs an executor until the process is stopped (or the scheduler stops it).
///
/// Errors: [`Error::Refused`] naming the executor when Ballista refuses its settings or its
/// services stop with an error.
pub async fn executor(opts: ExecutorOptions) -> Result<()> {
    let name = format!("Ballista executor on {}:{}", opts.bind_host, opts.flight_port);
    // a folder of its own when none is given, removed when the executor stops
    let temp = match &opts.work_dir {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("runpack-executor-")
                .tempdir()
                .map_err(|e| Error::io(std::env::temp_dir(), e))?,
        ),
    };
    let work_dir = match (&opts.work_dir, &temp) {
        (Some(d), _) => d.clone(),
        (None, Some(t)) => t.path().display().to_string(),
        (None, None) => unreachable!("a temporary folder is made when none is given"),
    };
    // the tasks read object store shares (s3://, gs://) with this process's credentials
    let stores = Arc::new(crate::sql::engine::StoresFromEnv::default());
    let spill = work_dir.clone();
    let runtime: ballista_core::RuntimeProducer =
        Arc::new(move |_| crate::sql::engine::runtime_with_stores(stores.clone(), Some(&spill)));
    let config = ballista_executor::executor_process::ExecutorProcessConfig {
        bind_host: opts.bind_host.clone(),
        external_host: Some(opts.external_host.clone().unwrap_or_else(|| opts.bind_host.clone())),
        port: opts.flight_port,
        grpc_port: opts.grpc_port,
        scheduler_host: opts.scheduler_host,
        scheduler_port: opts.scheduler_port,
        scheduler_connect_timeout_seconds: 30,
        vcores: opts.concurrent_tasks,
        work_dir: Some(work_dir),
        executor_heartbeat_interval_seconds: opts.heartbeat_seconds,
        override_function_registry: Some(Arc::new(crate::sql::engine::function_registry())),
        override_runtime_producer: Some(runtime),
        task_scheduling_policy: SCHEDULING,
        override_execution_engine: Some(Arc::new(StagesWithoutMetrics::default())),
        ..Default::default()
    };
    ballista_executor::executor_process::start_executor_process(Arc::new(config))
        .await
        .map_err(|e| Error::Refused(format!("{name}: {e}")))
}

/// Ballista's execution engine, with each task reporting no operator metrics.
///
/// Ballista 55.0's scheduler cuts a stage's plan down to each task's partitions: under a
/// `UNION ALL`, a task's plan can have fewer operators than its stage's. The scheduler then
/// refuses that task's metrics ("task metrics array size 6 does not equal with the stage
/// metrics array size 5"), drops the task's status with them, and the job never ends: its
/// client waits for ever. A task that sends no metrics is taken as it is. (The metrics only
/// feed the scheduler's log of a stage's plan.)
#[derive(Debug, Default)]
struct StagesWithoutMetrics {
    shuffle_clients: Arc<ClientPool>,
}

impl ballista_executor::execution_engine::ExecutionEngine for StagesWithoutMetrics {
    fn create_query_stage_exec(
        &self,
        job_id: ballista_core::JobId,
        stage_id: usize,
        task_id: usize,
        global_output_partition_ids: Vec<usize>,
        plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
        work_dir: &str,
        config: &datafusion::prelude::SessionConfig,
    ) -> datafusion::error::Result<Arc<dyn ballista_executor::execution_engine::QueryStageExecutor>> {
        let engine =
            ballista_executor::execution_engine::DefaultExecutionEngine::with_client_pool(self.shuffle_clients.clone());
        let stage = engine.create_query_stage_exec(
            job_id,
            stage_id,
            task_id,
            global_output_partition_ids,
            plan,
            work_dir,
            config,
        )?;
        Ok(Arc::new(NoMetrics(stage)))
    }
}

/// A query stage that reports no operator metrics ([`StagesWithoutMetrics`]).
#[derive(Debug)]
struct NoMetrics(Arc<dyn ballista_executor::execution_engine::QueryStageExecutor>);

impl std::fmt::Display for NoMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[async_trait::async_trait]
impl ballista_executor::execution_engine::QueryStageExecutor for NoMetrics {
    async fn execute_query_stage(
        &self,
        task_id: usize,
        context: Arc<datafusion::execution::TaskContext>,
    ) -> datafusion::error::Result<Vec<ballista_core::serde::protobuf::ShuffleWritePartition>> {
        self.0.execute_query_stage(task_id, context).await
    }

    fn collect_plan_metrics(&self) -> Vec<datafusion::physical_plan::metrics::MetricsSet> {
        Vec::new()
    }

    fn collect_runtime_stats_reports(&self) -> Vec<ballista_core::serde::protobuf::RuntimeStatsReport> {
        self.0.collect_runtime_stats_reports()
    }

    fn collect_window_state_reports(
        &self,
    ) -> datafusion::error::Result<Vec<ballista_core::serde::protobuf::WindowStateReport>> {
        self.0.collect_window_state_reports()
    }

    fn collect_column_stats(&self) -> Vec<ballista_core::serde::protobuf::TaskColumnStats> {
        self.0.collect_column_stats()
    }
}

/// Connections to other executors for reading shuffle results, kept open between tasks and
/// dropped after [`IDLE_CLIENT_SECONDS`] unused (what Ballista's executor does by default:
/// one connection per fetch would run a shuffle-heavy job out of ports).
#[derive(Default)]
struct ClientPool {
    idle: Arc<std::sync::Mutex<PoolMap>>,
}

impl std::fmt::Debug for ClientPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idle: usize = self.idle.lock().map(|m| m.values().map(Vec::len).sum()).unwrap_or(0);
        f.debug_struct("ClientPool").field("idle", &idle).finish()
    }
}

/// Idle clients by executor and settings, with the time each was returned.
type PoolMap = std::collections::HashMap<
    (String, u16, ballista_core::utils::GrpcClientConfig),
    Vec<(ballista_core::client::BallistaClient, std::time::Instant)>,
>;

/// Seconds an idle connection to another executor is kept.
const IDLE_CLIENT_SECONDS: u64 = 30;

#[async_trait::async_trait]
impl ballista_core::client_pool::BallistaClientPool for ClientPool {
    async fn acquire(
        &self,
        host: &str,
        port: u16,
        config: &ballista_core::utils::GrpcClientConfig,
        customize_endpoint: Option<Arc<ballista_core::extension::BallistaConfigGrpcEndpoint>>,
    ) -> ballista_core::error::Result<ballista_core::client_pool::PooledClient> {
        self.evict_idle().await;
        let key = (host.to_string(), port, config.clone());
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).get_mut(&key).and_then(|v| v.pop());
        let client = match idle {
            Some((c, _)) => c,
            None => {
                ballista_core::client::BallistaClient::try_new(
                    host,
                    port,
                    config.max_message_size,
                    config.use_tls,
                    customize_endpoint,
                    config.io_retries_times,
                    config.io_retry_wait_time_ms,
                    config.initial_connection_window_size,
                    config.initial_stream_window_size,
                )
                .await?
            }
        };
        let pool = self.idle.clone();
        Ok(ballista_core::client_pool::PooledClient::new(
            client,
            Box::new(move |c| {
                let mut idle = pool.lock().unwrap_or_else(|p| p.into_inner());
                idle.entry(key).or_default().push((c, std::time::Instant::now()));
            }),
        ))
    }

    async fn evict_idle(&self) {
        let limit = std::time::Duration::from_secs(IDLE_CLIENT_SECONDS);
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.retain(|_, clients| {
            clients.retain(|(_, since)| since.elapsed() < limit);
            !clients.is_empty()
        });
    }
}
