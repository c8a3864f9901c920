//! `runpack cluster`: a Ballista scheduler or executor that knows runpack's SQL.

use std::io::Write;

use crate::core::error::Error;

/// The cluster's processes.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ClusterCommand {
    /// Run a Ballista scheduler: it plans the SQL that `runpack build` and `runpack query` send
    /// with `--engine df://HOST:PORT` and hands its tasks to the executors.
    ///
    /// Prints `scheduler listening on df://HOST:PORT` on stdout once it accepts connections,
    /// then serves until stopped (Ctrl-C, SIGTERM).
    Scheduler {
        /// Address to listen on; port 0 takes any free port (the line printed names it).
        #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50050")]
        bind: std::net::SocketAddr,
        /// Host name executors and clients reach the scheduler by [default: the bound IP].
        #[arg(long, value_name = "HOST")]
        external_host: Option<String>,
        /// Seconds without a heartbeat after which an executor is taken for dead; its tasks
        /// then run again on the others, or the job fails.
        #[arg(long, value_name = "SECONDS", default_value_t = 180)]
        executor_timeout: u64,
    },
    /// Run a Ballista executor: it registers with the scheduler, runs the tasks it is given
    /// and serves their results over Arrow Flight. It reads the files the SQL names by their
    /// paths: those must be the paths the client sees (a shared folder), or URLs of an object
    /// store (`s3://`, `gs://`) it reaches with the credentials in its environment.
    ///
    /// Serves until stopped (Ctrl-C, SIGTERM).
    Executor {
        /// The scheduler, HOST:PORT.
        #[arg(long, value_name = "HOST:PORT")]
        scheduler: String,
        /// IP address to listen on.
        #[arg(long, value_name = "IP", default_value = "127.0.0.1")]
        bind_host: String,
        /// Host name the scheduler and clients reach this executor by [default: --bind-host].
        #[arg(long, value_name = "HOST")]
        external_host: Option<String>,
        /// Port of the Arrow Flight service that serves results.
        #[arg(long, value_name = "PORT", default_value_t = 50051)]
        port: u16,
        /// Port of the gRPC service the scheduler sends tasks to.
        #[arg(long, value_name = "PORT", default_value_t = 50052)]
        grpc_port: u16,
        /// Folder for shuffle files and spills [default: a temporary folder].
        #[arg(long, value_name = "DIR")]
        work_dir: Option<std::path::PathBuf>,
        /// Tasks run at once [default: one per core].
        #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
        concurrent_tasks: usize,
        /// Seconds between heartbeats to the scheduler (keep it below the scheduler's
        /// --executor-timeout).
        #[arg(long, value_name = "SECONDS", default_value_t = 60)]
        heartbeat: u64,
    },
}

/// Runs a cluster process until it is stopped; exit 0 when stopped by a signal.
pub(crate) fn run(command: ClusterCommand) -> Result<u8, Error> {
    let runtime = super::runtime()?;
    match command {
        ClusterCommand::Scheduler { bind, external_host, executor_timeout } => runtime.block_on(async {
            let opts = crate::verbs::cluster::SchedulerOptions {
                bind,
                external_host: external_host.clone(),
                executor_timeout_seconds: executor_timeout,
            };
            let (bound, serve) = crate::verbs::cluster::scheduler(opts).await?;
            let host = external_host.unwrap_or_else(|| bound.ip().to_string());
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "scheduler listening on df://{host}:{}", bound.port());
            let _ = out.flush();
            drop(out);
            tokio::select! {
                r = serve => r.map(|_| 0),
                _ = tokio::signal::ctrl_c() => Ok(0),
            }
        }),
        ClusterCommand::Executor {
            scheduler,
            bind_host,
            external_host,
            port,
            grpc_port,
            work_dir,
            concurrent_tasks,
            heartbeat,
        } => {
            let (host, sport) = scheduler
                .rsplit_once(':')
                .and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?)))
                .filter(|(h, p)| !h.is_empty() && *p != 0)
                .ok_or_else(|| {
                    Error::config("--scheduler", format!("{scheduler:?} is not HOST:PORT (such as 127.0.0.1:50050)"))
                })?;
            if let Some(dir) = &work_dir {
                std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            }
            let opts = crate::verbs::cluster::ExecutorOptions {
                scheduler_host: host,
                scheduler_port: sport,
                bind_host,
                external_host,
                flight_port: port,
                grpc_port,
                work_dir: work_dir.map(|d| d.display().to_string()),
                concurrent_tasks,
                heartbeat_seconds: heartbeat,
            };
            // Ballista's executor stops by itself on SIGTERM and Ctrl-C
            runtime.block_on(crate::verbs::cluster::executor(opts)).map(|_| 0)
        }
    }
}
