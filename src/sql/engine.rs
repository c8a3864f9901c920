//! Sessions whose plans run on an Apache DataFusion Ballista cluster (`--engine df://HOST:PORT`).
//!
//! In: an engine address. Out: a [`SessionContext`] that plans SQL on the client (parsing,
//! the `SIMILAR TO` check, DataFusion's logical optimizer, runpack's functions) and sends each
//! query's logical plan to the Ballista scheduler, which plans it physically and runs it on
//! its executors; the client reads the result as a stream of record batches. The scheduler
//! and executors must know runpack's SQL functions: `runpack cluster scheduler` and
//! `runpack cluster executor` are Ballista's scheduler and executor with them registered
//! ([`cluster_state`], [`function_registry`]).
//!
//! What runs where (docs/cluster.md says it for users):
//! - On the cluster: scans of Parquet files (by path: the executors must read
//!   the same paths), filters, joins, aggregations, window functions and runpack's SQL
//!   functions, which reach the executors by name.
//! - On the client: the card's sections ([`embedded_copy`]), and everything else. A table with floating-point columns is scanned without
//!   statistics pruning and the session reads no file statistics and makes no dynamic filters
//!   (what runpack's NaN-safe scan does per table embedded); the one-text-column `GROUP BY`
//!   operator ([`super::groups`]) is not used; text columns are read as `Utf8`, not
//!   `Utf8View` (Ballista sends results over Arrow Flight, which it keeps to plain strings).

use std::sync::Arc;

use arrow::datatypes::{DataType, SchemaRef};
#[cfg(test)]
use ballista_core::extension::SessionConfigExt as _;
use ballista_core::extension::SessionStateExt as _;
use datafusion::execution::SessionState;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::core::error::{Error, Result};

/// The environment variable that sets `--engine`.
pub const ENGINE_ENV: &str = "RUNPACK_ENGINE";

/// The port of a Ballista scheduler when an address gives none.
pub const DEFAULT_SCHEDULER_PORT: u16 = 50050;

/// A Ballista scheduler to run SQL on, as `df://HOST[:PORT]` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engine {
    /// The host name or IP address of the scheduler.
    pub host: String,
    /// Its gRPC port.
    pub port: u16,
}

impl Engine {
    /// Reads an engine address: `df://HOST[:PORT]` (port 50050 when left out).
    ///
    /// Errors: [`Error::Config`] naming `from` (the option or variable) for any other text.
    pub fn parse(address: &str, from: &str) -> Result<Engine> {
        let bad = |why: &str| {
            Error::config(
                from,
                format!("engine address {address:?}: {why}; write df://HOST:PORT (a Ballista scheduler)"),
            )
        };
        let Some(rest) = address.strip_prefix("df://") else {
            return Err(bad("it does not start with df://"));
        };
        let rest = rest.trim_end_matches('/');
        if rest.is_empty() || rest.contains('/') {
            return Err(bad("the host is missing or followed by a path"));
        }
        let (host, port) = match rest.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
                (h, p.parse::<u16>().map_err(|_| bad(&format!("port {p:?} is not a number from 1 to 65535")))?)
            }
            _ => (rest, DEFAULT_SCHEDULER_PORT),
        };
        if host.is_empty() || port == 0 {
            return Err(bad("the host or port is missing"));
        }
        Ok(Engine { host: host.to_string(), port })
    }

    /// The address as users write it (`df://HOST:PORT`), for messages.
    pub fn address(&self) -> String {
        format!("df://{}:{}", self.host, self.port)
    }

    /// A session with runpack's settings and functions whose queries run on this engine.
    /// `partitions`: the partitions a scan is split into (the executors' tasks).
    ///
    /// Errors: [`Error::Sql`] when Ballista refuses the session's settings.
    pub fn session(&self, partitions: usize) -> Result<SessionContext> {
        let mut state = super::session::state_builder(partitions, false).build();
        // NaN-safe scans (see crate::sql::session): no statistics, no dynamic filters
        super::session::nan_safe_settings(state.config_mut().options_mut());
        let url = format!("http://{}:{}", self.host, self.port);
        let mut state = state.upgrade_for_ballista(url.clone()).map_err(|e| Error::sql(self.address(), e))?;
        // Ballista's static planner: its adaptive one (55.0) leaves a job running for ever
        // when an executor that held a finished stage's output is lost
        state
            .config_mut()
            .options_mut()
            .set(ballista_core::config::BALLISTA_ADAPTIVE_PLANNER_ENABLED, "false")
            .map_err(|e| Error::sql(self.address(), e))?;
        state.config_mut().set_extension(Arc::new(SchedulerUrl(url)));
        state.config_mut().set_extension(Arc::new(KnownRows::default()));
        // Ballista's upgrade puts DataFusion's own functions back: runpack's go on top again
        Ok(super::session::finish(state))
    }
}

/// A session in this process that reads the tables `ctx` holds (the same files, views and
/// functions), with the settings of [`Engine::session`]: for SQL that runs on the client,
/// such as the card's sections (small queries over the tables just written).
///
/// Errors: [`Error::Sql`] when a table cannot be read from `ctx`'s catalog.
pub async fn embedded_copy(ctx: &SessionContext) -> Result<SessionContext> {
    let local = super::session::session();
    super::session::nan_safe_settings(local.state_ref().write().config_mut().options_mut());
    let Some(schema) = ctx.catalog("datafusion").and_then(|c| c.schema("public")) else {
        return Ok(local);
    };
    for name in schema.table_names() {
        let table = schema.table(&name).await.map_err(|e| Error::sql(format!("table {name}"), e))?;
        if let Some(t) = table {
            local
                .register_table(datafusion::common::TableReference::bare(name.as_str()), t)
                .map_err(|e| Error::sql(format!("table {name}"), e))?;
        }
    }
    Ok(local)
}

/// The scheduler a session sends its plans to (kept in its config for [`check_result`]).
#[derive(Debug)]
struct SchedulerUrl(String);

/// The rows of each staged source and built table a cluster's session reads, as the build
/// wrote them ([`know_rows`]).
#[derive(Debug, Default)]
struct KnownRows(std::sync::Mutex<std::collections::BTreeMap<String, u64>>);

/// Records that `name` (a staged source, a built table), as `ctx` reads it on a cluster, holds
/// `rows` rows; nothing for a session in this process.
pub fn know_rows(ctx: &SessionContext, name: &str, rows: u64) {
    if let Some(known) = ctx.state().config().get_extension::<KnownRows>() {
        known.0.lock().unwrap_or_else(|p| p.into_inner()).insert(name.to_string(), rows);
    }
}

/// Checks that a cluster's result of a query that keeps every row of `scanned` (projections,
/// windows and sorts over its one scan: [`crate::stages::transform`] tells) holds as many rows
/// as `scanned` does. When an executor is lost during a job, Ballista 55.0 may end the job
/// with rows of a lost shuffle missing (a window partitioned by a column held 57,272 of 90,000
/// rows); the build then fails rather than publish them. Sessions in this process, and names
/// whose rows are not known, pass.
///
/// Errors: [`Error::Refused`] naming the engine, the table, and both counts.
pub fn check_rows_kept(ctx: &SessionContext, table: &str, scanned: &str, rows: u64) -> Result<()> {
    let state = ctx.state();
    let (Some(known), Some(url)) =
        (state.config().get_extension::<KnownRows>(), state.config().get_extension::<SchedulerUrl>())
    else {
        return Ok(());
    };
    let want = known.0.lock().unwrap_or_else(|p| p.into_inner()).get(scanned).copied();
    match want {
        Some(want) if want != rows => Err(Error::Refused(format!(
            "table {table}: the engine {} returned {rows} rows where the query keeps every row of {scanned}, which \
             holds {want} (an executor lost during the job?); nothing is released: build again",
            url.0.replace("http://", "df://")
        ))),
        _ => Ok(()),
    }
}

/// Checks, once the result of `plan` (run in `ctx`) has been read, that the cluster's job
/// listed each of its result partitions once. When an executor is lost, Ballista 55.0 runs
/// its tasks again and may list a partition both where it was and where it ran again: the
/// client then reads its rows twice. Plans that ran in this process pass.
///
/// Errors: [`Error::Refused`] naming the engine and the partition listed twice, or the job
/// whose status cannot be read.
pub async fn check_result(
    ctx: &SessionContext,
    plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>,
) -> Result<()> {
    use ballista_core::serde::protobuf::{GetJobStatusParams, job_status, scheduler_grpc_client::SchedulerGrpcClient};
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    let Some(url) = ctx.state().config().get_extension::<SchedulerUrl>().map(|u| u.0.clone()) else {
        return Ok(());
    };
    let mut jobs = Vec::new();
    let _ = plan.apply(|p| {
        if let Some(d) = p.downcast_ref::<ballista_core::execution_plans::DistributedQueryExec<datafusion_proto::protobuf::LogicalPlanNode>>()
            && let Some(job) = d.job_id()
        {
            jobs.push(job.as_str().to_string());
        }
        Ok(TreeNodeRecursion::Continue)
    });
    let engine = url.replace("http://", "df://");
    for job in jobs {
        let failed =
            |e: &dyn std::fmt::Display| Error::Refused(format!("the engine {engine}: job {job}'s status: {e}"));
        let mut client = SchedulerGrpcClient::connect(url.clone()).await.map_err(|e| failed(&e))?;
        let status = client
            .get_job_status(GetJobStatusParams { job_id: job.clone() })
            .await
            .map_err(|e| failed(&e))?
            .into_inner();
        let Some(job_status::Status::Successful(done)) = status.status.and_then(|s| s.status) else { continue };
        let mut seen = std::collections::BTreeSet::new();
        for location in done.partition_location {
            let id = location.partition_id.map(|p| (p.stage_id, p.partition_id));
            if !seen.insert(id) {
                return Err(Error::Refused(format!(
                    "the engine {engine} listed result partition {} of job {job} twice (an executor was lost and \
                     its tasks ran again), so its rows would be read twice; nothing is released: build again",
                    id.map(|(_, p)| p.to_string()).unwrap_or_default()
                )));
            }
        }
    }
    Ok(())
}

/// Whether `ctx` sends its plans to a Ballista cluster ([`Engine::session`]).
pub fn is_remote(ctx: &SessionContext) -> bool {
    ctx.state_ref().read().config().options().extensions.get::<ballista_core::config::BallistaConfig>().is_some()
}

/// `schema` with its top-level `Utf8View` columns read as `Utf8` (what a cluster sends).
pub fn without_views(schema: &SchemaRef) -> SchemaRef {
    super::session::retyped(schema, &DataType::Utf8View, &DataType::Utf8)
}

/// The object stores of `s3://` and `gs://` URLs, made on first use from the standard
/// environment variables only (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`;
/// `GOOGLE_SERVICE_ACCOUNT`, `GOOGLE_APPLICATION_CREDENTIALS`): the client, the scheduler
/// and every executor read the share with the credentials of their own environment, and
/// none go over the network in a plan. Other URLs (`file://`) are DataFusion's.
#[derive(Debug, Default)]
pub struct StoresFromEnv {
    stores: datafusion::execution::object_store::DefaultObjectStoreRegistry,
}

impl datafusion::execution::object_store::ObjectStoreRegistry for StoresFromEnv {
    fn register_store(
        &self,
        url: &url::Url,
        store: Arc<dyn object_store::ObjectStore>,
    ) -> Option<Arc<dyn object_store::ObjectStore>> {
        self.stores.register_store(url, store)
    }

    fn deregister_store(&self, url: &url::Url) -> datafusion::error::Result<Arc<dyn object_store::ObjectStore>> {
        self.stores.deregister_store(url)
    }

    fn get_store(&self, url: &url::Url) -> datafusion::error::Result<Arc<dyn object_store::ObjectStore>> {
        if let Ok(store) = self.stores.get_store(url) {
            return Ok(store);
        }
        let store = store_from_env(url).map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
        self.stores.register_store(url, store.clone());
        Ok(store)
    }
}

/// The object store of an `s3://BUCKET/…` or `gs://BUCKET/…` URL, with credentials and
/// settings from the standard environment variables only ([`StoresFromEnv`]).
///
/// Errors: [`Error::Config`] for another scheme, a URL without a bucket, or settings the
/// store refuses (the message names the variables, never their values).
pub fn store_from_env(url: &url::Url) -> Result<Arc<dyn object_store::ObjectStore>> {
    let bucket = url.host_str().filter(|b| !b.is_empty());
    let refused = |e: &dyn std::fmt::Display, vars: &str| {
        Error::config(
            "--engine-share",
            redact(&format!(
                "{}://{}: the object store cannot be used ({e}); it is set by {vars}",
                url.scheme(),
                bucket.unwrap_or("")
            )),
        )
    };
    let Some(bucket) = bucket else {
        return Err(Error::config(
            "--engine-share",
            format!("{url}: no bucket; write s3://BUCKET/PREFIX or gs://BUCKET/PREFIX"),
        ));
    };
    match url.scheme() {
        "s3" => object_store::aws::AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .build()
            .map(|s| Arc::new(s) as Arc<dyn object_store::ObjectStore>)
            .map_err(|e| refused(&e, "AWS_REGION, AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID and the other AWS_* variables")),
        "gs" => object_store::gcp::GoogleCloudStorageBuilder::from_env()
            .with_bucket_name(bucket)
            .build()
            .map(|s| Arc::new(s) as Arc<dyn object_store::ObjectStore>)
            .map_err(|e| refused(&e, "GOOGLE_SERVICE_ACCOUNT or GOOGLE_APPLICATION_CREDENTIALS")),
        other => Err(Error::config(
            "--engine-share",
            format!("{other}:// is not an object store runpack reads; write s3://BUCKET/PREFIX or gs://BUCKET/PREFIX"),
        )),
    }
}

/// The environment variables whose values are secrets: never shown in a message.
const SECRET_VARS: [&str; 3] = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"];

/// `text` with the values of this process's credential variables (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, 8 characters or more) replaced by `***`, and
/// every other secret the process holds ([`crate::core::secrets`]): an object store's error
/// may quote what it was sent (an S3 server's answer names the key id it refused). The values
/// are remembered there, so that every message printed later is redacted of them too.
pub fn redact(text: &str) -> String {
    for var in SECRET_VARS {
        if let Ok(value) = std::env::var(var)
            && value.len() >= 8
        {
            crate::core::secrets::remember(&value, "***");
        }
    }
    crate::core::secrets::redact(text)
}

/// `e`, or, when its message holds a credential's value, an [`Error::Refused`] with the
/// same message [`redact`]ed.
pub fn redact_error(e: Error) -> Error {
    let text = e.to_string();
    let clean = redact(&text);
    if clean == text { e } else { Error::Refused(clean) }
}

/// A runtime whose object stores are [`StoresFromEnv`], spilling to `temp_dir` when given:
/// what a scheduler plans with and an executor runs tasks in.
///
/// Errors: DataFusion's, when the runtime cannot be made.
pub fn runtime_with_stores(
    stores: Arc<StoresFromEnv>,
    temp_dir: Option<&str>,
) -> datafusion::error::Result<Arc<datafusion::execution::runtime_env::RuntimeEnv>> {
    let mut builder = datafusion::execution::runtime_env::RuntimeEnvBuilder::new().with_object_store_registry(stores);
    if let Some(dir) = temp_dir {
        builder = builder.with_temp_file_path(dir);
    }
    builder.build_arc()
}

/// A runpack session's state, for reading its functions from.
fn runpack_state() -> SessionState {
    super::session::session_with_partitions(1, false).state()
}

/// The session state a scheduler plans a job in: Ballista's default state with runpack's
/// SQL functions (the same names, so a plan's `tinker_run_id` or `max` is runpack's).
///
/// Errors: DataFusion's, when the state cannot be made.
pub fn cluster_state(config: SessionConfig) -> datafusion::error::Result<SessionState> {
    static STORES: std::sync::OnceLock<Arc<StoresFromEnv>> = std::sync::OnceLock::new();
    let base = ballista_core::utils::default_session_builder(config)?;
    let runpack = runpack_state();
    // the scheduler lists the files of a scan in an object store share
    let runtime = runtime_with_stores(STORES.get_or_init(Default::default).clone(), None)?;
    Ok(datafusion::execution::SessionStateBuilder::new_from_existing(base)
        .with_runtime_env(runtime)
        .with_scalar_functions(runpack.scalar_functions().values().cloned().collect())
        .with_aggregate_functions(runpack.aggregate_functions().values().cloned().collect())
        .with_window_functions(runpack.window_functions().values().cloned().collect())
        .build())
}

/// The functions an executor runs plans with: DataFusion's and runpack's.
pub fn function_registry() -> ballista_core::registry::BallistaFunctionRegistry {
    let runpack = runpack_state();
    let mut registry = ballista_core::registry::BallistaFunctionRegistry::default();
    registry.scalar_functions.extend(runpack.scalar_functions().iter().map(|(k, v)| (k.clone(), v.clone())));
    registry.aggregate_functions.extend(runpack.aggregate_functions().iter().map(|(k, v)| (k.clone(), v.clone())));
    registry.window_functions.extend(runpack.window_functions().iter().map(|(k, v)| (k.clone(), v.clone())));
    registry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_addresses_are_read_or_refused_with_the_form_to_write() {
        assert_eq!(Engine::parse("df://h:1", "--engine").unwrap(), Engine { host: "h".into(), port: 1 });
        assert_eq!(Engine::parse("df://h", "--engine").unwrap().port, DEFAULT_SCHEDULER_PORT);
        for bad in ["h:1", "df://", "df://h:x", "df://h:0", "df://h:1/x", "http://h:1"] {
            let e = Engine::parse(bad, "--engine").unwrap_err().to_string();
            assert!(e.contains("df://HOST:PORT") && e.contains("--engine"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_cluster_knows_runpacks_functions() {
        let state = cluster_state(SessionConfig::new_with_ballista()).unwrap();
        assert!(state.scalar_functions().contains_key("tinker_run_id"));
        assert!(function_registry().scalar_functions.contains_key("json_get"));
    }
}
