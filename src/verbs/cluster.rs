//! The cluster verbs: a Ballista scheduler and executor that know runpack's SQL.
//!
//! In: addresses and folders. Out: a running Apache DataFusion Ballista scheduler
//! ([`scheduler`]) or executor ([`executor`]), the crates' own, with runpack's SQL functions
//! registered ([`crate::sql::engine`]), until the process is stopped. `runpack build` and
//! `runpack query` reach them with `--engine df://HOST:PORT` (docs/cluster.md).

use std::net::SocketAddr;
use std::sync::Arc;

use crate::core::error::{Error, Result};

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
        ..Default::default()
    };
    let refused =
        move |e: ballista_core::error::BallistaError| Error::Refused(format!("Ballista scheduler on {bound}: {e}"));
    config.validate().map_err(refused)?;
    let config = Arc::new(config);
    let cluster = ballista_scheduler::cluster::BallistaCluster::new_from_config(&config).await.map_err(refused)?;
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
    let config = ballista_executor::executor_process::ExecutorProcessConfig {
        bind_host: opts.bind_host.clone(),
        external_host: Some(opts.external_host.clone().unwrap_or_else(|| opts.bind_host.clone())),
        port: opts.flight_port,
        grpc_port: opts.grpc_port,
        scheduler_host: opts.scheduler_host,
        scheduler_port: opts.scheduler_port,
        scheduler_connect_timeout_seconds: 30,
        vcores: opts.concurrent_tasks,
        work_dir: opts.work_dir,
        executor_heartbeat_interval_seconds: opts.heartbeat_seconds,
        override_function_registry: Some(Arc::new(crate::sql::engine::function_registry())),
        ..Default::default()
    };
    ballista_executor::executor_process::start_executor_process(Arc::new(config))
        .await
        .map_err(|e| Error::Refused(format!("{name}: {e}")))
}
