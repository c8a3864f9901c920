//! DataFusion sessions as runpack makes them, shared by the build, the card, verify and query.
//!
//! In: SQL text and Parquet files with the schema their caller knows (a release's manifest,
//! a table's declared schema). Out: Arrow record batches. Every session refuses `SIMILAR TO`,
//! reads only (no DDL or DML) and nests SQL as deep as [`SQL_RECURSION_LIMIT`]. Nothing is
//! inferred from a sample of the data, so a column that only appears in a later file is
//! there, and shards written with another string encoding are read as the declared type.
//! A release's top-level string columns are read as `Utf8View` (DataFusion's own type for
//! Parquet text, faster to group and compare; see [`string_views`]), which print as any text
//! does. Printing is [`crate::sql::print`]'s; registering a release or raw files is the query
//! verb's ([`crate::verbs::query`]).
//!
//! Parquet min/max statistics leave NaN out, while SQL orders NaN above every number, so a
//! float column's statistics may not be used to skip data (apache/datafusion#15812) nor to
//! answer `max(x)` without reading it. Tables with floating-point columns therefore never
//! give statistics to the planner, and a scan of one prunes row groups and pages by
//! statistics only when none of its filters reads a float column (filters on a run id or a
//! step still skip what they can); filters made while a query runs (top-k, join, aggregate
//! dynamic filters) are turned off for such tables, as their columns are not known in
//! advance.

use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, SchemaRef};
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;

use crate::core::error::{Error, Result};
use crate::core::options::{SQL_MEMORY_LIMIT_BYTES, SQL_RECURSION_LIMIT};

use super::groups;

/// A DataFusion session with runpack's settings and SQL functions, for a build. Operators that
/// can spill (sorts, aggregations, joins) spill to temporary files beyond
/// [`SQL_MEMORY_LIMIT_BYTES`], so memory does not grow with the input.
///
/// It runs every plan as one partition: rows then leave each operator in an order fixed by
/// its input (groups in the order they are first met, `array_agg` items in row order), not by
/// which thread finished first, so the same inputs give the same tables and card sections.
/// The build's other stages (parsing, encoding, hashing) keep the other cores busy.
pub fn session() -> SessionContext {
    session_with_partitions(1, false)
}

/// Parses `sql` into statements as the sessions runpack makes do ([`SQL_RECURSION_LIMIT`]).
///
/// Errors: the parser's, for the caller to place in the SQL text.
pub fn parse_statements(
    sql: &str,
) -> std::result::Result<
    std::collections::VecDeque<datafusion::sql::parser::Statement>,
    datafusion::error::DataFusionError,
> {
    datafusion::sql::parser::DFParserBuilder::new(sql)
        .with_recursion_limit(SQL_RECURSION_LIMIT)
        .build()?
        .parse_statements()
}

/// A [`session`] for queries over finished Parquet files (`runpack query`): twice as many
/// partitions as cores. DataFusion splits a scan into contiguous byte ranges of the files, one
/// per partition, and each range takes whole row groups, so two ranges over a few large row
/// groups can differ by one row group (a release's 6 row groups split 188,000 against 228,000
/// rows); finer ranges let the runtime's threads even that out. The build keeps one
/// partition (see [`session`]). A `GROUP BY` of a text column (alone or beside one text or
/// `Int64` column) runs its per-partition stage as a [`groups::ViewGroupsExec`]; a moving float sum or mean runs as a
/// [`super::window::MovingSumExec`].
pub fn query_session() -> SessionContext {
    session_with_partitions(query_partitions(), true)
}

/// The partitions a [`query_session`] splits scans into: twice the cores.
pub fn query_partitions() -> usize {
    2 * cores()
}

/// The number of cores the process may use (2 when unknown).
fn cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
}

pub(super) fn session_with_partitions(partitions: usize, own_operators: bool) -> SessionContext {
    finish(state_builder(partitions, own_operators).build())
}

/// The session state every runpack session starts from: its settings, DataFusion's
/// functions, the memory limit and (with `own_operators`, for plans that run in this
/// process, not on a cluster) runpack's operators: the `GROUP BY` of text keys
/// ([`groups::ViewGroupBy`]), the join on text keys ([`super::join::ViewJoin`]) and moving
/// float sums ([`super::window::MovingSums`]).
/// [`finish`] adds what runs on the client.
pub(super) fn state_builder(partitions: usize, own_operators: bool) -> SessionStateBuilder {
    let mut config =
        SessionConfig::new().with_target_partitions(partitions).with_batch_size(8192).with_information_schema(true);
    config.options_mut().execution.parquet.schema_force_view_types = false;
    config.options_mut().execution.time_zone = Some("+00:00".into());
    // each partition reads the files the plan gave it: a partition that took a sibling's
    // files as it went idle made each partition's rows, and so a float sum's partial sums,
    // change from run to run ([`super::floatsum`]); the bench's queries took as long either way
    config.options_mut().execution.enable_file_stream_work_stealing = false;
    // errors name where in the SQL text they are
    config.options_mut().sql_parser.collect_spans = true;
    config.options_mut().sql_parser.recursion_limit =
        datafusion::common::config::ConfigNonZeroUsize::try_new(SQL_RECURSION_LIMIT).expect("not zero");
    // the written casts to floats are marked before type coercion adds its own
    // ([`super::coercion`]); a scalar subquery may give NULL ([`super::subquery`])
    let analyzer: Vec<Arc<dyn datafusion::optimizer::AnalyzerRule + Send + Sync>> =
        [Arc::new(super::coercion::MarkWrittenCasts) as _, Arc::new(super::subquery::NullableScalarSubqueries) as _]
            .into_iter()
            .chain(datafusion::optimizer::Analyzer::new().rules)
            .collect();
    // an outer join's null-filled side loses its constants before sorts are placed, and the
    // plan is as DataFusion made it after ([`NullFilledSides`])
    let mut physical = datafusion::physical_optimizer::optimizer::PhysicalOptimizer::new().rules;
    physical.insert(0, Arc::new(NullFilledSides));
    physical.push(Arc::new(NullFilledSidesDone));
    let mut builder = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_analyzer_rules(analyzer)
        .with_physical_optimizer_rules(physical)
        // after DataFusion's own rules, which turn a NOT IN into a join
        .with_optimizer_rule(Arc::new(RefuseCorrelatedNotIn));
    if own_operators {
        builder = builder
            .with_physical_optimizer_rule(Arc::new(groups::ViewGroupBy))
            .with_physical_optimizer_rule(Arc::new(super::join::ViewJoin))
            .with_physical_optimizer_rule(Arc::new(super::window::MovingSums))
            .with_physical_optimizer_rule(Arc::new(FilterBeforeComputing));
    }
    match datafusion::execution::runtime_env::RuntimeEnvBuilder::new()
        .with_memory_pool(super::memory::SessionPool::new(SQL_MEMORY_LIMIT_BYTES))
        .build_arc()
    {
        Ok(runtime) => builder = builder.with_runtime_env(runtime),
        Err(e) => tracing::warn!("no memory limit for SQL: {e}"),
    }
    builder
}

/// A session over `state`: the `SIMILAR TO` check, integer arithmetic that fails rather than
/// wraps ([`super::overflow`]), the sorted table list and runpack's SQL functions (which
/// replace DataFusion's `min`, `max`, `sum` and `avg`).
pub(super) fn finish(mut state: datafusion::execution::SessionState) -> SessionContext {
    // after DataFusion's own rules: every plan a session runs passes it
    state.add_analyzer_rule(Arc::new(RefuseSimilarTo));
    // after type coercion, which gives both operands of an operator one type
    state.add_analyzer_rule(Arc::new(super::overflow::CheckIntegerArithmetic));
    // after type coercion too: the casts of integers to floats it added
    state.add_analyzer_rule(Arc::new(super::coercion::CheckCoercedCasts));
    // after the checks of integer arithmetic: the float operators and functions left
    state.add_analyzer_rule(Arc::new(super::nan::OneNaN));
    // (on the state itself: every command makes a session, and `SessionContext::state` copies it)
    for name in
        ["to_timestamp", "to_timestamp_seconds", "to_timestamp_millis", "to_timestamp_micros", "to_timestamp_nanos"]
    {
        let zoned = state.scalar_functions().get(name).map(|f| ZonedTimestamps(f.as_ref().clone()));
        if let Some(z) = zoned {
            let _ = datafusion::execution::FunctionRegistry::register_udf(
                &mut state,
                Arc::new(datafusion::logical_expr::ScalarUDF::new_from_impl(z)),
            );
        }
    }
    let ctx = SessionContext::new_with_state(state);
    // `SHOW TABLES` and `information_schema` list the tables by name, the same on every run
    let catalog = ctx.catalog("datafusion").expect("the default catalog");
    let public = Arc::new(SortedSchema(datafusion::catalog::MemorySchemaProvider::new()));
    if let Err(e) = catalog.register_schema("public", public) {
        tracing::warn!("tables listed in no fixed order: {e}");
    }
    crate::sql::udf::register(&ctx);
    ctx
}

/// One of DataFusion 55's `to_timestamp` functions, giving the type it promised.
///
/// With the session's time zone set (UTC), they promise timestamps in it when planned, and
/// give timestamps without a zone when they read text: a debug build stopped on the
/// difference, a release build failed in a `named_struct` or a list of them, and `DESCRIBE`
/// named a type the query did not give. The instants are UTC's; the zone is put on them.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ZonedTimestamps(datafusion::logical_expr::ScalarUDF);

impl datafusion::logical_expr::ScalarUDFImpl for ZonedTimestamps {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn aliases(&self) -> &[String] {
        self.0.aliases()
    }
    fn signature(&self) -> &datafusion::logical_expr::Signature {
        self.0.signature()
    }
    fn return_type(
        &self,
        arg_types: &[arrow::datatypes::DataType],
    ) -> datafusion::error::Result<arrow::datatypes::DataType> {
        self.0.return_type(arg_types)
    }
    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> datafusion::error::Result<arrow::datatypes::FieldRef> {
        self.0.return_field_from_args(args)
    }
    fn coerce_types(
        &self,
        arg_types: &[arrow::datatypes::DataType],
    ) -> datafusion::error::Result<Vec<arrow::datatypes::DataType>> {
        self.0.coerce_types(arg_types)
    }
    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> datafusion::error::Result<datafusion::logical_expr::ColumnarValue> {
        use arrow::datatypes::DataType::Timestamp;
        let promised = args.return_field.data_type().clone();
        // (the function itself: `ScalarUDF` checks what it gives against what it promised)
        let given = self.0.inner().invoke_with_args(args)?;
        match (given.data_type(), &promised) {
            (Timestamp(unit, None), Timestamp(promised_unit, Some(_))) if unit == *promised_unit => {
                given.cast_to(&promised, None)
            }
            _ => Ok(given),
        }
    }
    fn with_updated_config(
        &self,
        config: &datafusion::config::ConfigOptions,
    ) -> Option<datafusion::logical_expr::ScalarUDF> {
        let updated = self.0.inner().with_updated_config(config)?;
        Some(datafusion::logical_expr::ScalarUDF::new_from_impl(ZonedTimestamps(updated)))
    }
    fn documentation(&self) -> Option<&datafusion::logical_expr::Documentation> {
        self.0.documentation()
    }
}

/// The tables of a session's default schema, named in sorted order: DataFusion's own keeps
/// them in a hash map, and `SHOW TABLES`, `information_schema.tables` and
/// `information_schema.columns` would list them in another order on each run.
#[derive(Debug)]
struct SortedSchema(datafusion::catalog::MemorySchemaProvider);

#[async_trait::async_trait]
impl datafusion::catalog::SchemaProvider for SortedSchema {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.0.table_names();
        names.sort();
        names
    }

    async fn table(
        &self,
        name: &str,
    ) -> datafusion::error::Result<Option<Arc<dyn datafusion::catalog::TableProvider>>> {
        self.0.table(name).await
    }

    fn register_table(
        &self,
        name: String,
        table: Arc<dyn datafusion::catalog::TableProvider>,
    ) -> datafusion::error::Result<Option<Arc<dyn datafusion::catalog::TableProvider>>> {
        self.0.register_table(name, table)
    }

    fn deregister_table(
        &self,
        name: &str,
    ) -> datafusion::error::Result<Option<Arc<dyn datafusion::catalog::TableProvider>>> {
        self.0.deregister_table(name)
    }

    fn table_exist(&self, name: &str) -> bool {
        self.0.table_exist(name)
    }
}

/// Puts a filter back below the projection DataFusion moved under it, where the projection
/// computes values: so that its expressions meet only the rows the filter keeps.
///
/// DataFusion moves a projection that narrows the columns below the filter above it
/// (`SELECT id, a + b … WHERE id <> 1`), and computes every row's values before the filter:
/// an expression that fails on a value (an integer overflow, a cast of `'x'` to a number, a
/// value type coercion would change, [`super::coercion`]) then stopped a query on a row its
/// `WHERE` leaves out. A projection of columns alone is left where it is.
#[derive(Debug)]
struct FilterBeforeComputing;

impl datafusion::physical_optimizer::PhysicalOptimizerRule for FilterBeforeComputing {
    fn optimize(
        &self,
        plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
        _: &datafusion::config::ConfigOptions,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        use datafusion::common::tree_node::{Transformed, TreeNode};
        use datafusion::physical_plan::ExecutionPlan;
        use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder};
        use datafusion::physical_plan::projection::ProjectionExec;
        plan.transform_up(|node| {
            let Some(filter) = node.downcast_ref::<FilterExec>() else { return Ok(Transformed::no(node)) };
            let Some(projection) = filter.input().downcast_ref::<ProjectionExec>() else {
                return Ok(Transformed::no(node));
            };
            let computes = projection
                .expr()
                .iter()
                .any(|e| e.expr.downcast_ref::<datafusion::physical_expr::expressions::Column>().is_none());
            if !computes || filter.projection().is_some() || filter.fetch().is_some() {
                return Ok(Transformed::no(node));
            }
            // the predicate in the projection's input columns: only where it reads columns the
            // projection passes on as they are
            let Some(predicate) =
                datafusion::physical_expr::projection::update_expr(filter.predicate(), projection.expr(), true)?
            else {
                return Ok(Transformed::no(node));
            };
            let below = FilterExecBuilder::from(filter)
                .with_input(projection.input().clone())
                .with_predicate(predicate)
                .build()?;
            let above = ProjectionExec::try_new(projection.expr().to_vec(), Arc::new(below))?;
            Ok(Transformed::yes(Arc::new(above) as Arc<dyn ExecutionPlan>))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "filter before computing"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Hides the constants of the sides an outer join fills with nulls, while sorts are placed.
///
/// DataFusion 55 keeps, through a `LEFT`, `RIGHT` or `FULL` join, what a side's filter made
/// constant (`WHERE k = 1`), though the join gives that column nulls in the rows the other
/// side alone has. Its sort placement then left that column out of an `ORDER BY`:
/// `… FROM (… WHERE k = 1) l FULL JOIN … ORDER BY l.k, r.k` sorted by `r.k` alone, and a
/// `LIMIT` kept the wrong rows. This rule, first of the physical ones, puts a
/// [`ForgetConstantsExec`] above each such side that holds constants;
/// [`NullFilledSidesDone`], after the sorts are placed, takes them away again.
#[derive(Debug)]
struct NullFilledSides;

impl datafusion::physical_optimizer::PhysicalOptimizerRule for NullFilledSides {
    fn optimize(
        &self,
        plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
        _: &datafusion::config::ConfigOptions,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        use datafusion::common::JoinType;
        use datafusion::common::tree_node::{Transformed, TreeNode};
        use datafusion::physical_plan::ExecutionPlan;
        use datafusion::physical_plan::joins::{HashJoinExec, NestedLoopJoinExec, SortMergeJoinExec};
        plan.transform_up(|node| {
            let join_type = if let Some(j) = node.downcast_ref::<HashJoinExec>() {
                *j.join_type()
            } else if let Some(j) = node.downcast_ref::<SortMergeJoinExec>() {
                j.join_type()
            } else if let Some(j) = node.downcast_ref::<NestedLoopJoinExec>() {
                *j.join_type()
            } else {
                return Ok(Transformed::no(node));
            };
            // which sides the join fills with nulls: (left, right)
            let filled = match join_type {
                JoinType::Left => (false, true),
                JoinType::Right => (true, false),
                JoinType::Full => (true, true),
                _ => return Ok(Transformed::no(node)),
            };
            let children: Vec<Arc<dyn ExecutionPlan>> = node.children().into_iter().cloned().collect();
            let [left, right] = children.as_slice() else { return Ok(Transformed::no(node)) };
            let hide = |side: &Arc<dyn ExecutionPlan>, filled: bool| -> Arc<dyn ExecutionPlan> {
                if filled && !side.properties().equivalence_properties().constants().is_empty() {
                    Arc::new(ForgetConstantsExec::new(side.clone()))
                } else {
                    side.clone()
                }
            };
            let (l, r) = (hide(left, filled.0), hide(right, filled.1));
            if Arc::ptr_eq(&l, left) && Arc::ptr_eq(&r, right) {
                return Ok(Transformed::no(node));
            }
            let recompute = datafusion::physical_plan::execution_plan::ReplaceChildrenOptions::new(
                datafusion::physical_plan::execution_plan::ChildrenPropertiesMode::Recompute,
            );
            Ok(Transformed::yes(node.replace_children(vec![l, r], recompute)?))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "null-filled sides"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Takes away the [`ForgetConstantsExec`]s [`NullFilledSides`] placed, last of DataFusion's
/// physical rules: the plan that runs (on a cluster too) holds none.
#[derive(Debug)]
struct NullFilledSidesDone;

impl datafusion::physical_optimizer::PhysicalOptimizerRule for NullFilledSidesDone {
    fn optimize(
        &self,
        plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
        _: &datafusion::config::ConfigOptions,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        use datafusion::common::tree_node::{Transformed, TreeNode};
        plan.transform_up(|node| match node.downcast_ref::<ForgetConstantsExec>() {
            Some(f) => Ok(Transformed::yes(f.input.clone())),
            None => Ok(Transformed::no(node)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "null-filled sides done"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Its input as it is, with no constant, ordering or equivalence of columns said of it
/// ([`NullFilledSides`]).
#[derive(Debug)]
struct ForgetConstantsExec {
    input: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
    properties: Arc<datafusion::physical_plan::PlanProperties>,
}

impl ForgetConstantsExec {
    fn new(input: Arc<dyn datafusion::physical_plan::ExecutionPlan>) -> Self {
        let p = input.properties();
        let properties = Arc::new(datafusion::physical_plan::PlanProperties::new(
            datafusion::physical_expr::EquivalenceProperties::new(input.schema()),
            p.partitioning.clone(),
            p.emission_type,
            p.boundedness,
        ));
        ForgetConstantsExec { input, properties }
    }
}

impl datafusion::physical_plan::DisplayAs for ForgetConstantsExec {
    fn fmt_as(&self, _: datafusion::physical_plan::DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "ForgetConstantsExec")
    }
}

impl datafusion::physical_plan::ExecutionPlan for ForgetConstantsExec {
    fn name(&self) -> &str {
        "ForgetConstantsExec"
    }

    fn properties(&self) -> &Arc<datafusion::physical_plan::PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _: &mut dyn FnMut(
            &Arc<dyn datafusion::physical_expr::PhysicalExpr>,
        ) -> datafusion::error::Result<datafusion::common::tree_node::TreeNodeRecursion>,
    ) -> datafusion::error::Result<datafusion::common::tree_node::TreeNodeRecursion> {
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn datafusion::physical_plan::ExecutionPlan>>,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        match <[_; 1]>::try_from(children) {
            Ok([input]) => Ok(Arc::new(ForgetConstantsExec::new(input))),
            Err(_) => Err(datafusion::error::DataFusionError::Internal("one child expected".into())),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<datafusion::execution::TaskContext>,
    ) -> datafusion::error::Result<datafusion::execution::SendableRecordBatchStream> {
        self.input.execute(partition, context)
    }
}

/// Refuses a plan with `SIMILAR TO` ([`uses_similar_to`]) or a `FULL JOIN … USING`
/// ([`full_join_using`]) when it is analyzed, before it runs: queries, tables and card sections
/// alike.
#[derive(Debug)]
struct RefuseSimilarTo;

impl datafusion::optimizer::AnalyzerRule for RefuseSimilarTo {
    fn analyze(
        &self,
        plan: datafusion::logical_expr::LogicalPlan,
        _: &datafusion::config::ConfigOptions,
    ) -> datafusion::error::Result<datafusion::logical_expr::LogicalPlan> {
        if uses_similar_to(&plan) {
            return Err(datafusion::error::DataFusionError::Plan(SIMILAR_TO_REFUSED.into()));
        }
        if full_join_using(&plan) {
            return Err(datafusion::error::DataFusionError::Plan(FULL_JOIN_USING_REFUSED.into()));
        }
        if let Some(message) = float_cut_by_bits(&plan) {
            return Err(datafusion::error::DataFusionError::Plan(message));
        }
        if let Some(message) = intervals_ordered(&plan) {
            return Err(datafusion::error::DataFusionError::Plan(message));
        }
        if let Some(message) = in_subquery_without_nulls(&plan) {
            return Err(datafusion::error::DataFusionError::Plan(message));
        }
        Ok(plan)
    }

    fn name(&self) -> &str {
        "the SIMILAR TO check"
    }
}

/// Refuses a `NOT IN` over a correlated subquery that DataFusion 55 plans as a null-aware
/// anti join with more than its one key: a join on two keys is refused by its executor in
/// words about joins, and one whose correlation is not an equality (`WHERE i.k < o.k`) drops
/// every row when any outer row's subquery holds a NULL. A `NOT IN` without correlation is a
/// null-aware join on its one key, computed as SQL says, and passes; so does one whose two
/// sides of the `IN` cannot be NULL (`_source_line`).
#[derive(Debug)]
struct RefuseCorrelatedNotIn;

impl datafusion::optimizer::OptimizerRule for RefuseCorrelatedNotIn {
    fn rewrite(
        &self,
        plan: datafusion::logical_expr::LogicalPlan,
        _: &dyn datafusion::optimizer::OptimizerConfig,
    ) -> datafusion::error::Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::LogicalPlan>>
    {
        match &plan {
            datafusion::logical_expr::LogicalPlan::Join(j)
                if j.null_aware
                    && match j.on.as_slice() {
                        // DataFusion sets `null_aware` when any column of the condition may be
                        // NULL; a NULL of the correlation alone matches nothing, as SQL has it
                        [(l, r)] => {
                            use datafusion::logical_expr::ExprSchemable;
                            j.filter.is_some()
                                && (l.nullable(j.left.schema()).unwrap_or(true)
                                    || r.nullable(j.right.schema()).unwrap_or(true))
                        }
                        _ => true,
                    } =>
            {
                let said = if j.on.is_empty() { KEYLESS_NOT_IN_REFUSED } else { CORRELATED_NOT_IN_REFUSED };
                Err(datafusion::error::DataFusionError::Plan(said.into()))
            }
            _ => Ok(datafusion::common::tree_node::Transformed::no(plan)),
        }
    }

    fn apply_order(&self) -> Option<datafusion::optimizer::ApplyOrder> {
        Some(datafusion::optimizer::ApplyOrder::BottomUp)
    }

    fn name(&self) -> &str {
        "the correlated NOT IN check"
    }
}

/// Whether a filter of `plan` holds an `IN (subquery)` that DataFusion 55 computes as if NULLs
/// were not there, over values that may be NULL: one beneath `OR` that counts as negated (a
/// `NOT IN`, or an `IN` beneath a `NOT`), or one beneath anything but `AND`, `OR` and `NOT`
/// (`CASE`, `IS NULL`, a comparison), in a `WHERE`, a `HAVING` or a join's `ON`. DataFusion
/// plans those as a join that marks each row matched or not, so `x NOT IN (…)` is true where
/// SQL says NULL: `n NOT IN (SELECT n … WHERE n IS NULL) OR id = 1` kept every row. A
/// condition of its own (`WHERE x NOT IN (…) AND …`) is a join that knows NULLs, and an `IN`
/// beneath `OR` alone gives the rows SQL gives.
fn in_subquery_without_nulls(plan: &datafusion::logical_expr::LogicalPlan) -> Option<String> {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::logical_expr::utils::split_conjunction;
    use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator};
    // the expressions a condition of its own rules NULL out (`x IS NOT NULL AND …`)
    fn not_null(predicate: &Expr) -> Vec<&Expr> {
        split_conjunction(predicate)
            .into_iter()
            .filter_map(|c| match c {
                Expr::IsNotNull(x) => Some(x.as_ref()),
                _ => None,
            })
            .collect()
    }
    // whether the subquery's one column cannot be NULL: by its type, or by a condition of its
    // own in the subquery's WHERE (`SELECT y FROM i WHERE y IS NOT NULL`)
    fn gives_no_null(sub: &LogicalPlan) -> bool {
        if sub.schema().fields().iter().all(|f| !f.is_nullable()) {
            return true;
        }
        let mut plan = sub;
        while let LogicalPlan::SubqueryAlias(a) = plan {
            plan = a.input.as_ref();
        }
        let LogicalPlan::Projection(p) = plan else { return false };
        let Some(first) = p.expr.first() else { return false };
        let column = match first {
            Expr::Alias(a) => a.expr.as_ref(),
            e => e,
        };
        matches!(p.input.as_ref(), LogicalPlan::Filter(f) if not_null(&f.predicate).contains(&column))
    }
    let nullable =
        |i: &datafusion::logical_expr::expr::InSubquery, schema: &datafusion::common::DFSchema, guarded: &[&Expr]| {
            (i.expr.nullable(schema).unwrap_or(true) && !guarded.contains(&i.expr.as_ref()))
                || !gives_no_null(&i.subquery.subquery)
        };
    // `e`, beneath `negated` NOTs (odd) and below `top` (a condition of its own) or not
    fn wrong(
        e: &Expr,
        negated: bool,
        top: bool,
        nullable: &dyn Fn(&datafusion::logical_expr::expr::InSubquery) -> bool,
    ) -> bool {
        match e {
            Expr::BinaryExpr(BinaryExpr { left, op: Operator::And, right }) => {
                wrong(left, negated, top && !negated, nullable) || wrong(right, negated, top && !negated, nullable)
            }
            Expr::BinaryExpr(BinaryExpr { left, op: Operator::Or, right }) => {
                wrong(left, negated, false, nullable) || wrong(right, negated, false, nullable)
            }
            Expr::Not(inner) => wrong(inner, !negated, top, nullable),
            Expr::InSubquery(i) => !top && negated != i.negated && nullable(i),
            other => {
                let mut found = false;
                let _ = other.apply(|x| {
                    if let Expr::InSubquery(i) = x {
                        found = nullable(i);
                    }
                    Ok(if found { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
                });
                found
            }
        }
    }
    first_finding(plan, |node, schema| match node {
        LogicalPlan::Filter(f) => {
            let guarded = not_null(&f.predicate);
            wrong(&f.predicate, false, true, &|i| nullable(i, schema, &guarded))
                .then(|| IN_SUBQUERY_BENEATH_REFUSED.into())
        }
        // a join's ON condition: no condition there is one of its own
        LogicalPlan::Join(j) => j.filter.as_ref().and_then(|filter| {
            let guarded = not_null(filter);
            wrong(filter, false, false, &|i| nullable(i, schema, &guarded)).then(|| IN_SUBQUERY_IN_ON_REFUSED.into())
        }),
        _ => None,
    })
}

/// Why an `IN (subquery)` beneath `OR`, `NOT` or another expression is refused
/// ([`in_subquery_without_nulls`]).
pub(crate) const IN_SUBQUERY_BENEATH_REFUSED: &str = "x NOT IN (SELECT y …) beneath OR (or an IN beneath NOT, or either \
     inside CASE, IS NULL or a comparison) is computed by DataFusion 55 as if NULLs were not there: where x is NULL, or \
     the subquery gives a NULL and no match, it is true or false where SQL says NULL, so `x NOT IN (…) OR p` keeps rows \
     SQL drops. Rule the NULLs out where they do not matter: WHERE x IS NOT NULL AND (x NOT IN (SELECT y FROM i WHERE y \
     IS NOT NULL) OR p) runs. Or move each NOT inward (NOT (x IN …) is x NOT IN …) and write EXISTS: x NOT IN (SELECT y \
     FROM i) is true exactly where NOT EXISTS (SELECT 1 FROM i WHERE i.y = x OR i.y IS NULL OR x IS NULL) is, and x IN \
     (…) where EXISTS (SELECT 1 FROM i WHERE i.y = x) is";

/// Why a `NOT IN (subquery)` in a join's `ON` is refused ([`in_subquery_without_nulls`]).
pub(crate) const IN_SUBQUERY_IN_ON_REFUSED: &str = "x NOT IN (SELECT y …) in a join's ON (or an IN beneath NOT, CASE, \
     IS NULL or a comparison there) is computed by DataFusion 55 as if NULLs were not there, where x or y may be NULL. \
     Filter the side before the join: LEFT JOIN (SELECT * FROM c WHERE x NOT IN (SELECT y …)) c ON …; or rule the NULLs \
     out in the ON (c.x IS NOT NULL AND c.x NOT IN (SELECT y FROM i WHERE y IS NOT NULL))";

/// Why a `NOT IN` over a correlated subquery is refused ([`RefuseCorrelatedNotIn`]).
pub(crate) const CORRELATED_NOT_IN_REFUSED: &str = "NOT IN over a subquery that names the outer query's columns \
     (x NOT IN (SELECT y FROM i WHERE i.k < o.k)) is computed wrongly by DataFusion 55 where y or x may be NULL: a NULL \
     in the subquery of one outer row drops the rows of every other, or the query is refused. Write NOT EXISTS \
     (SELECT 1 FROM i WHERE i.k < o.k AND (i.y = o.x OR i.y IS NULL OR o.x IS NULL)): it keeps the meaning of NOT IN, \
     NULLs included";

/// Why a `NOT IN` DataFusion 55 plans without a join key is refused ([`RefuseCorrelatedNotIn`]):
/// `3 NOT IN (SELECT y FROM i)` kept every row where `i` holds a NULL.
pub(crate) const KEYLESS_NOT_IN_REFUSED: &str = "NOT IN over a value that names no column of the rows it filters \
     (3 NOT IN (SELECT y FROM i)) is computed wrongly by DataFusion 55 where y may be NULL: a NULL among the y is passed \
     over, so rows are kept where SQL says NULL. Write NOT EXISTS (SELECT 1 FROM i WHERE i.y = 3 OR i.y IS NULL), the \
     subquery's own conditions ANDed in: it keeps the meaning of NOT IN, NULLs included";

fn has_float(dt: &DataType) -> bool {
    crate::core::schema::type_contains(dt, &|t| t.is_floating())
}

/// Registers Parquet `files` as table `name` with `schema`; a table with floating-point
/// columns is registered as a [`NanSafeParquet`] (see the module docs). `order`: columns the
/// rows of each file are known to be sorted by (ascending, nulls last; see [`declared_order`]),
/// so that DataFusion can skip sorts and aggregate groups as they end; empty when unknown.
/// `rows`: the table's number of rows when the caller knows it (a release's manifest, a table
/// just built), told to the planner of a [`NanSafeParquet`], which reads no statistics.
///
/// Errors: [`Error::Io`] for a path that cannot be made absolute, [`Error::Sql`] when
/// DataFusion refuses the table.
pub async fn register_parquet(
    ctx: &SessionContext,
    name: &str,
    files: &[PathBuf],
    schema: SchemaRef,
    order: &[String],
    rows: Option<u64>,
) -> Result<()> {
    if files.is_empty() {
        // a table without any file (no rows, no split): an empty table of that schema (one a
        // cluster can plan, there)
        let empty: Arc<dyn datafusion::catalog::TableProvider> = if super::engine::is_remote(ctx) {
            Arc::new(datafusion::datasource::empty::EmptyTable::new(super::engine::without_views(&schema)))
        } else {
            Arc::new(
                datafusion::datasource::MemTable::try_new(schema, vec![vec![]])
                    .map_err(|e| Error::sql(format!("table {name}"), e))?,
            )
        };
        ctx.register_table(datafusion::common::TableReference::bare(name), empty)
            .map_err(|e| Error::sql(format!("table {name}"), e))?;
        return Ok(());
    }
    let urls = files
        .iter()
        .map(|p| {
            // an object store's URL (a cluster's share) as it is, a path made absolute
            let text = p.to_string_lossy();
            let abs =
                if text.contains("://") { p.clone() } else { std::path::absolute(p).map_err(|e| Error::io(p, e))? };
            ListingTableUrl::parse(abs.to_string_lossy()).map_err(|e| Error::sql(format!("table {name}"), e))
        })
        .collect::<Result<Vec<_>>>()?;
    // on a cluster the scheduler plans the scan from the table's description: no runpack
    // table provider, text as plain `Utf8` (see crate::sql::engine)
    let remote = super::engine::is_remote(ctx);
    let schema = if remote { super::engine::without_views(&schema) } else { schema };
    let floats: std::collections::BTreeSet<String> =
        schema.fields().iter().filter(|f| has_float(f.data_type())).map(|f| f.name().clone()).collect();
    let listing = |pruning: bool| -> Result<Arc<ListingTable>> {
        let mut options = datafusion::config::TableParquetOptions::default();
        options.global.pruning = pruning;
        options.global.enable_page_index = pruning;
        options.global.schema_force_view_types = false;
        let format = ParquetFormat::default().with_options(options);
        let mut options = ListingOptions::new(Arc::new(format)).with_file_extension(".parquet");
        if !order.is_empty() {
            options = options.with_file_sort_order(vec![sort_exprs(order)]);
        }
        let config = ListingTableConfig::new_with_multi_paths(urls.clone())
            .with_listing_options(options)
            .with_schema(schema.clone());
        Ok(Arc::new(ListingTable::try_new(config).map_err(|e| Error::sql(format!("table {name}"), e))?))
    };
    let table: Arc<dyn datafusion::catalog::TableProvider> = if floats.is_empty() {
        listing(true)?
    } else if remote {
        // the session reads no statistics and makes no dynamic filters
        // ([`super::engine::Engine::session`]): a scan without pruning is NaN-safe
        listing(false)?
    } else {
        let state = ctx.state_ref();
        let mut state = state.write();
        no_dynamic_filters(state.config_mut().options_mut());
        let rows = rows.and_then(|n| usize::try_from(n).ok());
        Arc::new(NanSafeParquet { pruned: listing(true)?, unpruned: listing(false)?, floats, rows })
    };
    ctx.register_table(datafusion::common::TableReference::bare(name), table)
        .map_err(|e| Error::sql(format!("table {name}"), e))?;
    Ok(())
}

/// Turns off the filters a query makes while it runs (top-k, join and aggregate dynamic
/// filters): they would prune a float column by statistics that leave NaN out.
pub fn no_dynamic_filters(options: &mut datafusion::config::ConfigOptions) {
    let optimizer = &mut options.optimizer;
    optimizer.enable_dynamic_filter_pushdown = false;
    optimizer.enable_topk_dynamic_filter_pushdown = false;
    optimizer.enable_join_dynamic_filter_pushdown = false;
    optimizer.enable_aggregate_dynamic_filter_pushdown = false;
}

/// A session's settings that make every scan NaN-safe without [`NanSafeParquet`]: no file
/// statistics, no dynamic filters (a cluster's sessions, which get plain listings).
pub fn nan_safe_settings(options: &mut datafusion::config::ConfigOptions) {
    options.execution.collect_statistics = false;
    no_dynamic_filters(options);
}

/// Parquet files of a table with floating-point columns, scanned with statistics pruning
/// only when no filter of the scan reads one of those columns.
#[derive(Debug)]
pub struct NanSafeParquet {
    pruned: Arc<ListingTable>,
    unpruned: Arc<ListingTable>,
    /// The top-level columns that hold floats (at any depth).
    floats: std::collections::BTreeSet<String>,
    /// The table's number of rows, when known.
    rows: Option<usize>,
}

impl NanSafeParquet {
    fn pick(&self, filters: &[datafusion::prelude::Expr]) -> &Arc<ListingTable> {
        let reads_float = filters.iter().any(|f| f.column_refs().iter().any(|c| self.floats.contains(&c.name)));
        if reads_float { &self.unpruned } else { &self.pruned }
    }

    /// `state` with file statistics off, so that the planner never takes a float column's
    /// min/max for the data's.
    fn without_statistics(
        state: &dyn datafusion::catalog::Session,
    ) -> datafusion::error::Result<datafusion::execution::SessionState> {
        let mut state = state
            .as_any()
            .downcast_ref::<datafusion::execution::SessionState>()
            .ok_or_else(|| datafusion::error::DataFusionError::Internal("a session state was expected".into()))?
            .clone();
        state.config_mut().options_mut().execution.collect_statistics = false;
        Ok(state)
    }

    /// `plan` (a scan of the files) told the table's number of rows, and nothing else: the
    /// planner then builds a join's hash table on its smaller side. Statistics of values
    /// stay unknown, as a float column's minimum and maximum leave NaN out. The count is
    /// marked inexact, so that no aggregate is answered from it.
    fn with_row_count(
        &self,
        plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
    ) -> Arc<dyn datafusion::physical_plan::ExecutionPlan> {
        use datafusion::common::stats::Precision;
        use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder};
        use datafusion::datasource::source::DataSourceExec;
        let Some(rows) = self.rows else { return plan };
        let Some(config) =
            plan.downcast_ref::<DataSourceExec>().and_then(|exec| exec.data_source().downcast_ref::<FileScanConfig>())
        else {
            return plan;
        };
        let statistics =
            datafusion::common::Statistics::new_unknown(config.file_schema()).with_num_rows(Precision::Inexact(rows));
        let config = FileScanConfigBuilder::from(config.clone()).with_statistics(statistics).build();
        DataSourceExec::from_data_source(config)
    }
}

#[async_trait::async_trait]
impl datafusion::catalog::TableProvider for NanSafeParquet {
    fn schema(&self) -> SchemaRef {
        self.unpruned.schema()
    }

    fn table_type(&self) -> datafusion::datasource::TableType {
        datafusion::datasource::TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&datafusion::prelude::Expr],
    ) -> datafusion::error::Result<Vec<datafusion::logical_expr::TableProviderFilterPushDown>> {
        self.unpruned.supports_filters_pushdown(filters)
    }

    async fn scan(
        &self,
        state: &dyn datafusion::catalog::Session,
        projection: Option<&Vec<usize>>,
        filters: &[datafusion::prelude::Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        let state = Self::without_statistics(state)?;
        Ok(self.with_row_count(self.pick(filters).scan(&state, projection, filters, limit).await?))
    }

    async fn scan_with_args<'a>(
        &self,
        state: &dyn datafusion::catalog::Session,
        args: datafusion::catalog::ScanArgs<'a>,
    ) -> datafusion::error::Result<datafusion::catalog::ScanResult> {
        let state = Self::without_statistics(state)?;
        let mut result = self.pick(args.filters().unwrap_or(&[])).scan_with_args(&state, args).await?;
        result = datafusion::catalog::ScanResult::new(self.with_row_count(result.into_inner()));
        Ok(result)
    }
}

/// `schema` with its top-level `Utf8` columns read as `Utf8View`.
///
/// A view column decodes a dictionary-encoded Parquet column by pointing into the
/// dictionary rather than copying every value, and DataFusion groups and compares views
/// without first gathering their bytes (GROUP BY a checkpoint URI over 416,000 rows: ~16 %
/// faster). Views print as any text does ([`print`](fn@crate::sql::print::print)), so only SQL that asks for a column's
/// type (`arrow_typeof`, `DESCRIBE`, `information_schema`) sees the difference. Used for
/// release tables in `runpack query`; a build reads earlier tables with their declared
/// types.
pub fn string_views(schema: &SchemaRef) -> SchemaRef {
    retyped(schema, &DataType::Utf8, &DataType::Utf8View)
}

/// `schema` with its top-level columns of type `from` given type `to` (names, nullability
/// and metadata kept); `schema` itself when it has none.
pub fn retyped(schema: &SchemaRef, from: &DataType, to: &DataType) -> SchemaRef {
    if !schema.fields().iter().any(|f| f.data_type() == from) {
        return schema.clone();
    }
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .map(
            |f| if f.data_type() == from { Arc::new(f.as_ref().clone().with_data_type(to.clone())) } else { f.clone() },
        )
        .collect();
    Arc::new(arrow::datatypes::Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// Ascending, nulls-last sort expressions over columns `cols` (the order runpack sorts in).
pub fn sort_exprs(cols: &[String]) -> Vec<datafusion::logical_expr::SortExpr> {
    cols.iter()
        .map(|c| datafusion::prelude::Expr::Column(datafusion::common::Column::from_name(c)).sort(true, false))
        .collect()
}

/// The columns by which the rows of a release table's files are sorted, as far as DataFusion
/// compares them as the build sorted them: [`crate::core::schema::row_order`] up to the first
/// `_source_line` of JSON Pointers (sorted in document order, which is not text order) or
/// the first column that is not a boolean, number, string, date or timestamp.
pub fn declared_order(schema: &crate::core::schema::TableSchema, arrow: &arrow::datatypes::Schema) -> Vec<String> {
    use arrow::datatypes::DataType as T;
    let mut out = Vec::new();
    for c in crate::core::schema::row_order(schema, |c| arrow.field_with_name(c).is_ok()) {
        let Ok(f) = arrow.field_with_name(&c) else { break };
        let comparable = match f.data_type() {
            T::Utf8 | T::LargeUtf8 => c != "_source_line",
            t => {
                t.is_integer() || t.is_floating() || matches!(t, T::Boolean | T::Date32 | T::Date64 | T::Timestamp(..))
            }
        };
        if !comparable {
            break;
        }
        out.push(c);
    }
    out
}

/// What SQL may do in runpack: read. `SET`/`SHOW` statements are allowed when `statements`;
/// DDL (CREATE, DROP) and DML (INSERT, COPY … TO) never are, so a query cannot write files.
pub fn read_only(statements: bool) -> datafusion::execution::context::SQLOptions {
    datafusion::execution::context::SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(statements)
}

/// Runs one read-only SQL statement and collects the result.
pub async fn run(ctx: &SessionContext, sql: &str) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let df = match ctx.sql_with_options(sql, read_only(false)).await {
        Ok(df) => df,
        Err(e) => {
            // a table that is not there: the tables that are, and the closest name
            let context = parse_statements(sql)
                .ok()
                .and_then(|mut statements| statements.pop_front())
                .map(|st| unknown_table_context(ctx, "query", &st))
                .unwrap_or_else(|| "query".into());
            return Err(Error::sql(context, e));
        }
    };
    if let Some(e) = check_written(sql, df.logical_plan()) {
        return Err(Error::sql("query", e));
    }
    let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
    let mut stream = df.execute_stream().await.map_err(|e| Error::sql("query", e))?;
    let mut batches = Vec::new();
    while let Some(b) = stream.next().await {
        batches.push(b.map_err(|e| Error::sql("query", e))?);
    }
    Ok((schema, batches))
}

/// The result of `sql` in a query session where `setup` (statements separated by `;`) ran
/// first, as CSV lines with a
/// header, or the error's message (for the SQL checks' unit tests).
#[cfg(test)]
pub(super) async fn csv_after(setup: &str, sql: &str) -> std::result::Result<String, String> {
    let ctx = query_session();
    for statement in setup.split(';') {
        ctx.sql(statement).await.unwrap().collect().await.unwrap();
    }
    let (_, batches) = run_script(&ctx, sql).await.map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut w = arrow::csv::WriterBuilder::new().with_header(true).build(&mut out);
    for b in &batches {
        w.write(b).unwrap();
    }
    drop(w);
    Ok(String::from_utf8(out).unwrap())
}

/// Runs every statement of `sql` in order (`SET …; SELECT …`) and returns the last result.
/// Statements that would write (DDL, DML such as `COPY … TO`) are refused.
///
/// Errors: [`Error::Config`] for an empty script, [`Error::Sql`] naming the statement (`query`
/// for a script of one, `query, statement 2 of 3` otherwise) that failed to plan or run.
pub async fn run_script(ctx: &SessionContext, sql: &str) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let (schema, stream, context) = run_script_stream(ctx, sql).await?;
    let batches = datafusion::physical_plan::common::collect(stream).await.map_err(|e| Error::sql(context, e))?;
    Ok((schema, batches))
}

/// Runs every statement of `sql` but the last to its end, and returns the last one's result
/// as a stream of record batches (with the executed plan's schema), and the name its errors
/// go by. See [`run_script`].
pub async fn run_script_stream(
    ctx: &SessionContext,
    sql: &str,
) -> Result<(SchemaRef, datafusion::physical_plan::SendableRecordBatchStream, String)> {
    let mut statements: Vec<_> = parse_statements(sql)
        .map_err(|e| {
            let context = match statement_at(sql) {
                Some((i, count)) if count > 1 => format!("query, statement {i} of {count}"),
                _ => "query".to_string(),
            };
            Error::sql_parse(context, e, sql)
        })?
        .into();
    let count = statements.len();
    let context = |i: usize| if count == 1 { "query".to_string() } else { format!("query, statement {i} of {count}") };
    let Some(last) = statements.pop() else {
        return Err(Error::config("query", "no SQL statement given"));
    };
    for (i, st) in statements.into_iter().enumerate() {
        let (_, stream) = start_statement(ctx, st, &context(i + 1)).await?;
        datafusion::physical_plan::common::collect(stream).await.map_err(|e| Error::sql(context(i + 1), e))?;
        // a `SET datafusion.runtime.memory_limit` gives the session DataFusion's own pool
        super::memory::keep(ctx).map_err(|e| Error::sql(context(i + 1), e))?;
    }
    let (schema, stream) = start_statement(ctx, last, &context(count)).await?;
    Ok((schema, stream, context(count)))
}

/// Which statement of `sql` fails to parse, and how many statements `sql` holds (statements
/// end at each `;` outside strings, quoted names and comments; empty ones do not count):
/// `(2, 3)` for `SELECT 1; SELEC 2; SELECT 3`. The statements are told apart by the SQL
/// tokenizer and parsed one by one; where the tokenizer itself fails (a string or comment
/// never closed), the statement is the one that construct opens in, and the last. `None` when
/// every statement parses alone.
fn statement_at(sql: &str) -> Option<(usize, usize)> {
    let Some(tokens) = tokens(sql) else { return unclosed_at(sql) };
    let statements = statement_spans(sql, &tokens);
    let count = statements.len();
    statements.iter().position(|&(a, b)| parse_statements(&sql[a..b]).is_err()).map(|i| (i + 1, count))
}

/// The byte ranges of the statements of `sql` split into `tokens`: from a statement's first
/// token to the `;` after it (or the end); empty statements left out.
fn statement_spans(sql: &str, tokens: &[datafusion::sql::sqlparser::tokenizer::TokenWithSpan]) -> Vec<(usize, usize)> {
    use datafusion::sql::sqlparser::tokenizer::Token;
    let mut statements = Vec::new();
    let mut start: Option<usize> = None;
    for t in tokens {
        match &t.token {
            Token::SemiColon => {
                if let Some(from) = start.take() {
                    statements.push((from, byte_at(sql, t.span.start.line, t.span.start.column)));
                }
            }
            Token::Whitespace(_) | Token::EOF => {}
            _ => {
                start.get_or_insert_with(|| byte_at(sql, t.span.start.line, t.span.start.column));
            }
        }
    }
    statements.extend(start.map(|from| (from, sql.len())));
    statements
}

/// The tokens of `sql` with their places; `None` when it does not split into tokens.
fn tokens(sql: &str) -> Option<Vec<datafusion::sql::sqlparser::tokenizer::TokenWithSpan>> {
    datafusion::sql::sqlparser::tokenizer::Tokenizer::new(&datafusion::sql::sqlparser::dialect::GenericDialect {}, sql)
        .tokenize_with_location()
        .ok()
}

/// The tokens of statement `st` as the parser writes it back, whitespace left out; `None`
/// where the tokenizer refuses that text.
fn statement_tokens(
    st: &datafusion::sql::parser::Statement,
) -> Option<Vec<datafusion::sql::sqlparser::tokenizer::Token>> {
    use datafusion::sql::sqlparser::tokenizer::Token;
    Some(tokens(&st.to_string())?.into_iter().map(|t| t.token).filter(|t| !matches!(t, Token::Whitespace(_))).collect())
}

/// Whether `t` is the unquoted keyword `k`, in any case.
fn is_keyword(t: &datafusion::sql::sqlparser::tokenizer::Token, k: &str) -> bool {
    matches!(t, datafusion::sql::sqlparser::tokenizer::Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k))
}

/// For SQL the tokenizer refuses: the longest part up to a `;` that it reads, ending with that
/// `;`, holds the statements before the one in error, which is the last (a construct never
/// closed takes the rest of the text).
fn unclosed_at(sql: &str) -> Option<(usize, usize)> {
    use datafusion::sql::sqlparser::tokenizer::Token;
    let before = sql.match_indices(';').rev().find_map(|(i, _)| {
        let prefix = &sql[..=i];
        let tokens = tokens(prefix)?;
        let last = tokens.iter().rev().find(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))?;
        matches!(last.token, Token::SemiColon).then_some((prefix, tokens))
    });
    let count = before.map_or(0, |(prefix, tokens)| statement_spans(prefix, &tokens).len());
    Some((count + 1, count + 1))
}

/// The byte offset in `sql` of 1-based `line` and `column` (in characters), as the SQL
/// tokenizer counts them.
fn byte_at(sql: &str, line: u64, column: u64) -> usize {
    let mut offset = 0;
    for (n, text) in sql.split_inclusive('\n').enumerate() {
        if n as u64 + 1 == line {
            return offset
                + text.char_indices().nth(column.saturating_sub(1) as usize).map(|(i, _)| i).unwrap_or(text.len());
        }
        offset += text.len();
    }
    sql.len()
}

/// `context` with what helps when statement `st` names a table there is not (it failed to
/// plan): the tables there are, and the one meant when a name is close (or differs only in
/// case, as SQL folds an unquoted name to lower case); `context` as it is otherwise.
fn unknown_table_context(ctx: &SessionContext, context: &str, st: &datafusion::sql::parser::Statement) -> String {
    let mut tables: Vec<String> =
        ctx.catalog("datafusion").and_then(|c| c.schema("public")).map(|s| s.table_names()).unwrap_or_default();
    tables.sort();
    let Ok((refs, _)) = datafusion::sql::resolve::resolve_table_references(st, true) else {
        return context.to_string();
    };
    let Some(unknown) = refs.iter().find(|r| !tables.iter().any(|t| t == r.table())) else {
        return context.to_string();
    };
    let name = unknown.table();
    if tables.is_empty() {
        return context.to_string();
    }
    let quoted = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    let hint = if let Some(t) = tables.iter().find(|t| t.to_lowercase() == name && t.as_str() != name) {
        format!("; did you mean {}? SQL reads a name without quotes in lower case", quoted(t))
    } else {
        let close = tables
            .iter()
            .map(|t| (strsim::jaro_winkler(&t.to_lowercase(), &name.to_lowercase()), t))
            .filter(|(score, _)| *score > 0.85)
            .max_by(|a, b| a.0.total_cmp(&b.0));
        close.map(|(_, t)| format!("; did you mean {t}?")).unwrap_or_default()
    };
    format!("{context} (the tables: {}{hint})", tables.join(", "))
}

/// Plans one statement (refusing any that would write) and starts it.
async fn start_statement(
    ctx: &SessionContext,
    st: datafusion::sql::parser::Statement,
    context: &str,
) -> Result<(SchemaRef, datafusion::physical_plan::SendableRecordBatchStream)> {
    let sql_err = |e| Error::sql(context, e);
    // kept to say which table a failed plan names that is not there
    let statement = st.clone();
    let plan = match ctx.state().statement_to_plan(st).await {
        Ok(p) => p,
        // DataFusion plans no `SET TIME ZONE`: say what it does plan instead of its AST
        Err(e) if e.to_string().contains("SET variant not implemented yet: SetTimeZone") => {
            return Err(Error::Refused(format!(
                "{context}: SET TIME ZONE is not part of DataFusion's SQL; write SET datafusion.execution.time_zone \
                 = '+05:00' (an offset; times are shown in UTC, +00:00, unless set)"
            )));
        }
        Err(e) => return Err(Error::sql(unknown_table_context(ctx, context, &statement), e)),
    };
    read_only(true).verify_plan(&plan).map_err(sql_err)?;
    if let Some(e) = check_statements(std::slice::from_ref(&statement), &plan) {
        return Err(Error::sql(context, e));
    }
    let plan = match (&plan, described_query(&statement)) {
        (datafusion::logical_expr::LogicalPlan::DescribeTable(d), Some(query)) => {
            // DataFusion describes a query's plan before type coercion (a UNION or a CASE typed
            // by its first branch): the types it runs with instead
            let inner = query.clone();
            let query = ctx.state().statement_to_plan(query).await.map_err(sql_err)?;
            // what running the query would refuse, DESCRIBE refuses
            if let Some(e) = check_statements(std::slice::from_ref(&inner), &query) {
                return Err(Error::sql(context, e));
            }
            let df = ctx.execute_logical_plan(query).await.map_err(sql_err)?;
            let schema = df.create_physical_plan().await.map_err(sql_err)?.schema();
            datafusion::logical_expr::LogicalPlan::DescribeTable(datafusion::logical_expr::DescribeTable {
                schema,
                output_schema: d.output_schema.clone(),
            })
        }
        _ => plan,
    };
    let df = ctx.execute_logical_plan(plan).await.map_err(sql_err)?;
    let task = Arc::new(df.task_ctx());
    // the executed plan's schema: the logical plan's may predate type coercion (a CASE or
    // UNION typed by its first branch)
    let physical = df.create_physical_plan().await.map_err(sql_err)?;
    let schema = physical.schema();
    let stream = datafusion::physical_plan::execute_stream(physical, task).map_err(sql_err)?;
    Ok((schema, stream))
}

/// The query of a `DESCRIBE <query>` statement, as a statement of its own.
fn described_query(st: &datafusion::sql::parser::Statement) -> Option<datafusion::sql::parser::Statement> {
    use datafusion::sql::sqlparser::ast::{DescribeAlias, Statement};
    match st {
        datafusion::sql::parser::Statement::Statement(s) => match s.as_ref() {
            Statement::Explain { describe_alias: DescribeAlias::Describe | DescribeAlias::Desc, statement, .. }
                if matches!(statement.as_ref(), Statement::Query(_)) =>
            {
                Some(datafusion::sql::parser::Statement::Statement(statement.clone()))
            }
            _ => None,
        },
        _ => None,
    }
}

/// The checks that need the SQL as written beside `plan` (the plan of its last statement): a
/// name SQL folds to another column's ([`case_folded_name`]), a `USING` column read from the
/// side of an outer join that lacks rows ([`outer_join_side`]). The first error found.
pub(crate) fn check_written(
    sql: &str,
    plan: &datafusion::logical_expr::LogicalPlan,
) -> Option<datafusion::error::DataFusionError> {
    let statements: Vec<_> = parse_statements(sql).ok()?.into_iter().collect();
    check_statements(&statements, plan)
}

/// [`check_written`] over statements already parsed.
fn check_statements(
    statements: &[datafusion::sql::parser::Statement],
    plan: &datafusion::logical_expr::LogicalPlan,
) -> Option<datafusion::error::DataFusionError> {
    if let Some((written, other)) = statements.iter().find_map(|st| case_folded_name(st, plan)) {
        return Some(case_folded(&written, &other));
    }
    // (the text is read again only for a plan that has what EXCEPT and INTERSECT plan as)
    if semi_or_anti_join(plan)
        && let Some(e) = set_operation_all(statements)
    {
        return Some(e);
    }
    outer_join_side(statements, plan)
}

/// A `LEFT` or `RIGHT JOIN … USING (k)` (or `NATURAL`) whose `k` is read, above the join, from
/// the side that lacks rows: DataFusion 55 gives an unqualified `k` the left side's, `*`'s `k`
/// the side whose name sorts first, and a later `JOIN … USING (k)` the left side's, so `k`
/// would be null in the rows only the other side has, where SQL gives their key. A read of
/// that side's `k` is taken as written when the SQL names it (`r.k`, `r.*`) and writes neither
/// an unqualified `k` nor a bare `*` that could have read it instead. Reads are looked for in
/// the nodes above the join up to the query block's alias, not in other branches or
/// subqueries; a join of a view the SQL does not name (its tables' names not written) was
/// checked with the view. The error names the column and the side to write.
fn outer_join_side(
    statements: &[datafusion::sql::parser::Statement],
    plan: &datafusion::logical_expr::LogicalPlan,
) -> Option<datafusion::error::DataFusionError> {
    use datafusion::common::Column;
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::logical_expr::{Expr, JoinConstraint, JoinType, LogicalPlan};
    use datafusion::sql::sqlparser::tokenizer::Token;
    use std::collections::HashSet;
    let outer_using = |node: &LogicalPlan| {
        matches!(node, LogicalPlan::Join(j) if j.join_constraint == JoinConstraint::Using
            && matches!(j.join_type, JoinType::Left | JoinType::Right))
    };
    let mut any = false;
    let _ = plan.apply_with_subqueries(|node| {
        any = outer_using(node);
        Ok(if any { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
    });
    if !any {
        return None;
    }
    /// The SQL as written: its qualified names (`r.k` as ("r", "k"), `r.*` as ("r", "*")), its
    /// other names (an unqualified `k`; not an alias after `AS`, nor the names of `USING (…)`),
    /// every name, and whether a bare `*` is selected; names as SQL reads them (without quotes
    /// in lower case).
    #[derive(Default)]
    struct Written {
        qualified: HashSet<(String, String)>,
        unqualified: HashSet<String>,
        words: HashSet<String>,
        star: bool,
    }
    let mut w = Written::default();
    for st in statements {
        let t = statement_tokens(st)?;
        let name = |t: &Token| match t {
            Token::Word(w) if w.quote_style.is_some() => Some(w.value.clone()),
            Token::Word(w) => Some(w.value.to_lowercase()),
            _ => None,
        };
        let keyword = |t: Option<&Token>, k: &str| t.is_some_and(|t| is_keyword(t, k));
        let mut in_using = false;
        for i in 0..t.len() {
            let (before, after) = (i.checked_sub(1).map(|i| &t[i]), t.get(i + 1));
            match &t[i] {
                Token::LParen if keyword(before, "using") => in_using = true,
                Token::RParen => in_using = false,
                Token::Mul if matches!(before, Some(Token::Period)) => {}
                Token::Mul => {
                    w.star |= matches!(before, Some(Token::Comma))
                        || ["select", "distinct", "all"].iter().any(|k| keyword(before, k))
                }
                Token::Word(_) => {
                    let n = name(&t[i]).expect("a word");
                    w.words.insert(n.clone());
                    if matches!(after, Some(Token::Period)) {
                        match t.get(i + 2) {
                            Some(Token::Mul) => {
                                w.qualified.insert((n, "*".into()));
                            }
                            Some(next) => {
                                if let Some(m) = name(next) {
                                    w.qualified.insert((n, m));
                                }
                            }
                            None => {}
                        }
                    } else if !matches!(before, Some(Token::Period)) && !keyword(before, "as") && !in_using {
                        w.unqualified.insert(n);
                    }
                }
                _ => {}
            }
        }
    }
    let table = |c: &Column| c.relation.as_ref().map(|r| r.table().to_string()).unwrap_or_default();
    let side = |c: &Column| c.relation.as_ref().map(|r| r.to_string()).unwrap_or_default();
    // a read of the side that lacks rows taken as written
    let as_written = |c: &Column| {
        let t = table(c);
        (w.qualified.contains(&(t.clone(), c.name.clone())) || w.qualified.contains(&(t, "*".into())))
            && !w.unqualified.contains(&c.name)
            && !w.star
    };
    /// Walks `node` with the nodes above it in its query block (`above`, nearest last).
    fn walk<'a>(
        node: &'a LogicalPlan,
        above: &mut Vec<&'a LogicalPlan>,
        check: &mut dyn FnMut(&LogicalPlan, &[&LogicalPlan]) -> Option<String>,
    ) -> Option<String> {
        if let Some(e) = check(node, above) {
            return Some(e);
        }
        let mut found = None;
        let _ = node.apply_subqueries(|sub| {
            found = walk(sub, &mut Vec::new(), check);
            Ok(if found.is_some() { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
        });
        if found.is_some() {
            return found;
        }
        // the columns above an alias are the alias's
        let mut fresh = Vec::new();
        let stack = if matches!(node, LogicalPlan::SubqueryAlias(_)) { &mut fresh } else { above };
        stack.push(node);
        for input in node.inputs() {
            if let Some(e) = walk(input, stack, check) {
                return Some(e);
            }
        }
        stack.pop();
        None
    }
    let mut check = |node: &LogicalPlan, above: &[&LogicalPlan]| -> Option<String> {
        let LogicalPlan::Join(j) = node else { return None };
        if !outer_using(node) {
            return None;
        }
        let (kind, pairs): (&str, Vec<(Column, Column)>) = match j.join_type {
            JoinType::Left => (
                "LEFT",
                j.on.iter().filter_map(|(l, r)| Some((r.try_as_col()?.clone(), l.try_as_col()?.clone()))).collect(),
            ),
            _ => (
                "RIGHT",
                j.on.iter().filter_map(|(l, r)| Some((l.try_as_col()?.clone(), r.try_as_col()?.clone()))).collect(),
            ),
        };
        // a join of a view, whose SQL names neither side
        if pairs.iter().all(|(lack, keep)| !w.words.contains(&table(lack)) && !w.words.contains(&table(keep))) {
            return None;
        }
        let names: Vec<&str> = pairs.iter().map(|(l, _)| l.name.as_str()).collect();
        let using = format!("{kind} JOIN … USING ({})", names.join(", "));
        for node in above.iter().rev() {
            let later_using = matches!(node, LogicalPlan::Join(j) if j.join_constraint == JoinConstraint::Using);
            for e in node.expressions() {
                let mut hit = None;
                let _ = e.apply(|e| {
                    if let Expr::Column(c) = e
                        && let Some(p) = pairs.iter().find(|(lack, _)| lack == c)
                        && (later_using || !as_written(c))
                    {
                        hit = Some(p.clone());
                        return Ok(TreeNodeRecursion::Stop);
                    }
                    Ok(TreeNodeRecursion::Continue)
                });
                let Some((lack, keep)) = hit else { continue };
                let k = &keep.name;
                return Some(if later_using {
                    format!(
                        "the JOIN … USING ({k}) after the {using} would join on {lack}, the side that lacks rows: null \
                         in the rows only {keep_side} has (DataFusion 55 joins a later USING on the left side's {k}). \
                         Write that join with ON and {keep}",
                        lack = lack.flat_name(),
                        keep_side = side(&keep),
                        keep = keep.flat_name(),
                    )
                } else {
                    format!(
                        "{k} of the {using} would be read from {lack}, the side that lacks rows: null in the rows only \
                         {keep_side} has, where SQL gives their key (DataFusion 55 reads an unqualified {k} from the \
                         left side, and the {k} of * from the side whose name sorts first). Write {keep} instead of \
                         {k}, and list the columns instead of *",
                        lack = side(&lack),
                        keep_side = side(&keep),
                        keep = keep.flat_name(),
                    )
                });
            }
        }
        None
    };
    walk(plan, &mut Vec::new(), &mut check).map(datafusion::error::DataFusionError::Plan)
}

/// The error of a name written without quotes (`written`) that reads another column than
/// `other`, which it spells but for case.
fn case_folded(written: &str, other: &str) -> datafusion::error::DataFusionError {
    let lower = written.to_lowercase();
    let quoted = format!("\"{}\"", other.replace('"', "\"\""));
    datafusion::error::DataFusionError::Plan(format!(
        "{written}, written without quotes, reads column {lower} (SQL reads a name without quotes in lower case), \
         and the table also has a column {quoted}: write {quoted} to read that one, or {lower} to read the other"
    ))
}

/// A name written without quotes and with capitals (`Loss`, `LOSS`) in statement `st`, which
/// SQL reads in lower case (`loss`), where the tables `plan` scans have a column (or a struct
/// field) of that lower-case name and another one that differs from it only in case (`Loss`):
/// the query would read `loss` where it may mean the other, without a word. Every name of the
/// statement is looked at, not only its expressions' (`USING (Loss)`, `EXCLUDE (Loss)`). The
/// name as written and the other column's.
fn case_folded_name(
    st: &datafusion::sql::parser::Statement,
    plan: &datafusion::logical_expr::LogicalPlan,
) -> Option<(String, String)> {
    use datafusion::common::tree_node::TreeNodeRecursion;
    use datafusion::sql::sqlparser::tokenizer::Token;
    let datafusion::sql::parser::Statement::Statement(st) = st else { return None };
    // the names of the columns and struct fields scanned, by their lower-case form
    let mut names: std::collections::HashMap<String, std::collections::BTreeSet<String>> = Default::default();
    fn add(
        names: &mut std::collections::HashMap<String, std::collections::BTreeSet<String>>,
        f: &arrow::datatypes::Field,
    ) {
        names.entry(f.name().to_lowercase()).or_default().insert(f.name().clone());
        match f.data_type() {
            arrow::datatypes::DataType::Struct(children) => children.iter().for_each(|c| add(names, c)),
            arrow::datatypes::DataType::List(c) | arrow::datatypes::DataType::LargeList(c) => add(names, c),
            _ => {}
        }
    }
    let _ = plan.apply_with_subqueries(|node| {
        if let datafusion::logical_expr::LogicalPlan::TableScan(scan) = node {
            scan.source.schema().fields().iter().for_each(|f| add(&mut names, f));
        }
        Ok(TreeNodeRecursion::Continue)
    });
    if names.values().all(|n| n.len() < 2) {
        return None;
    }
    // the statement as written (its text keeps each name's quotes)
    for t in tokens(&st.to_string())? {
        let Token::Word(w) = t.token else { continue };
        let lower = w.value.to_lowercase();
        if w.quote_style.is_some() || w.value == lower {
            continue;
        }
        if let Some(same) = names.get(&lower).filter(|n| n.len() > 1 && n.contains(&lower)) {
            // the column it spells, when there is one of that case (`Loss`), else another
            let other = same.get(&w.value).or_else(|| same.iter().find(|n| **n != lower)).expect("two names").clone();
            return Some((w.value, other));
        }
    }
    None
}

/// Why a query with `SIMILAR TO` is refused (see [`uses_similar_to`]).
pub(crate) const SIMILAR_TO_REFUSED: &str = "SIMILAR TO is read by DataFusion as a regular expression that may match \
     anywhere in the text, not as SQL's whole-value pattern, so its answers would be wrong; write `x ~ '^(…)$'` (a \
     regular expression, anchored) or LIKE";

/// Whether `plan` (or a subquery of it) has a `SIMILAR TO`, which DataFusion 55 matches as an
/// unanchored regular expression (`'abc' SIMILAR TO 'b'` is true), not as SQL's pattern over
/// the whole value.
pub(crate) fn uses_similar_to(plan: &datafusion::logical_expr::LogicalPlan) -> bool {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    let mut found = false;
    let _ = plan.apply_with_subqueries(|node| {
        found = node
            .expressions()
            .iter()
            .any(|e| e.exists(|e| Ok(matches!(e, datafusion::logical_expr::Expr::SimilarTo(_)))).unwrap_or(false));
        Ok(if found { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
    });
    found
}

/// An interval that `plan` compares, sorts, groups or takes the `min` or `max` of: DataFusion
/// 55 orders `Interval` values by their months, then their days, then the rest, not by their
/// length (`INTERVAL '36 hours' < INTERVAL '1 day'`, and `'24 hours' <> '1 day'`), with no
/// word. A duration (`Duration`, what two timestamps subtracted give) compared with a duration
/// is ordered by its length and passes; compared with an `INTERVAL` it is cast to one, which
/// passes beside an interval of hours, minutes or seconds alone. The message names the
/// expression and what to write. `None` when no interval is so used.
fn intervals_ordered(plan: &datafusion::logical_expr::LogicalPlan) -> Option<String> {
    use datafusion::logical_expr::expr::{AggregateFunction, WindowFunction};
    use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator};
    // an interval, or a list or struct holding one (compared member by member)
    let interval = |e: &Expr, schema: &datafusion::common::DFSchema| {
        e.get_type(schema).is_ok_and(|t| {
            crate::core::schema::type_contains(&t, &|t| {
                matches!(
                    t,
                    DataType::Interval(
                        arrow::datatypes::IntervalUnit::MonthDayNano | arrow::datatypes::IntervalUnit::DayTime
                    )
                )
            })
        })
    };
    // a duration cast to an interval, or an interval written in hours, minutes or seconds
    // alone: months and days 0, so that the order of the rest is the order of lengths
    // (`"end" - start > INTERVAL '12 hours'`)
    fn nanoseconds_only(e: &Expr, schema: &datafusion::common::DFSchema) -> bool {
        use datafusion::common::ScalarValue;
        match e {
            Expr::Cast(c) => matches!(c.expr.get_type(schema), Ok(DataType::Duration(_))),
            Expr::Literal(ScalarValue::IntervalMonthDayNano(Some(v)), _) => v.months == 0 && v.days == 0,
            Expr::Literal(ScalarValue::IntervalDayTime(Some(v)), _) => v.days == 0,
            _ => false,
        }
    }
    // functions that take an interval without comparing it; any other is refused
    const KEEP_ORDER: [&str; 17] = [
        "date_bin",
        "date_part",
        "datepart",
        "to_char",
        "arrow_typeof",
        "arrow_cast",
        "make_array",
        "make_list",
        "array_append",
        "array_prepend",
        "array_concat",
        "array_element",
        "array_length",
        "cardinality",
        "get_field",
        "named_struct",
        "coalesce",
    ];
    // (a comparison is named by its kind: its operands show runpack's marks of written casts
    // and intervals as Arrow spells them)
    let said = |what: &str, e: &Expr| {
        let shown = match e {
            Expr::AggregateFunction(_) | Expr::WindowFunction(_) | Expr::Column(_) => {
                format!(" {}", e.human_display())
            }
            _ => String::new(),
        };
        format!(
            "{what}{shown}: DataFusion 55 orders intervals by their months, then their days, then the rest, not by \
             their length (INTERVAL '36 hours' < INTERVAL '1 day', and INTERVAL '24 hours' <> INTERVAL '1 day'). \
             Order lengths in seconds, date_part('epoch', x) (a month counts 30 days), or compare the timestamps \
             themselves (end > start + INTERVAL '1 day')"
        )
    };
    first_finding(plan, |node, schema| {
        // what the node itself orders or groups by
        let keys: Vec<(&str, &Expr)> = match node {
            LogicalPlan::Sort(s) => s.expr.iter().map(|k| ("ORDER BY", &k.expr)).collect(),
            LogicalPlan::Aggregate(a) => a
                .group_expr
                .iter()
                .flat_map(|g| match g {
                    Expr::GroupingSet(set) => set.distinct_expr(),
                    g => vec![g],
                })
                .map(|g| ("GROUP BY", g))
                .collect(),
            LogicalPlan::Join(j) => j.on.iter().flat_map(|(l, r)| [("the join key", l), ("the join key", r)]).collect(),
            _ => Vec::new(),
        };
        if let Some((what, e)) = keys.into_iter().find(|(_, e)| interval(e, schema)) {
            return Some(said(what, e));
        }
        if let LogicalPlan::Distinct(_) = node
            && let Some(f) = node.schema().fields().iter().find(|f| {
                matches!(
                    f.data_type(),
                    DataType::Interval(
                        arrow::datatypes::IntervalUnit::MonthDayNano | arrow::datatypes::IntervalUnit::DayTime
                    )
                )
            })
        {
            return Some(said("DISTINCT over", &Expr::Column(datafusion::common::Column::from_name(f.name()))));
        }
        first_in_expressions(node, |x| {
            let what = match x {
                Expr::BinaryExpr(BinaryExpr {
                    left,
                    op:
                        Operator::Eq
                        | Operator::NotEq
                        | Operator::Lt
                        | Operator::LtEq
                        | Operator::Gt
                        | Operator::GtEq
                        | Operator::IsDistinctFrom
                        | Operator::IsNotDistinctFrom,
                    right,
                }) => (interval(left, schema) && !(nanoseconds_only(left, schema) && nanoseconds_only(right, schema)))
                    .then(|| "a comparison of intervals".to_string()),
                Expr::Between(b) => interval(&b.expr, schema).then(|| "a BETWEEN of intervals".to_string()),
                Expr::InList(l) => interval(&l.expr, schema).then(|| "an IN list of intervals".to_string()),
                Expr::InSubquery(i) => interval(&i.expr, schema).then(|| "an IN (subquery) of intervals".to_string()),
                Expr::Case(c) => c
                    .expr
                    .as_ref()
                    .is_some_and(|e| interval(e, schema))
                    .then(|| "a CASE x WHEN … of intervals".to_string()),
                Expr::ScalarFunction(f) if !KEEP_ORDER.contains(&f.func.name()) => {
                    f.args.iter().any(|a| interval(a, schema)).then(|| format!("{} of intervals", f.func.name()))
                }
                Expr::AggregateFunction(AggregateFunction { func, params }) => ((matches!(func.name(), "min" | "max")
                    || params.distinct)
                    && params.args.iter().any(|a| interval(a, schema))
                    || params.order_by.iter().any(|o| interval(&o.expr, schema)))
                .then(|| "the aggregate".to_string()),
                Expr::WindowFunction(w) => {
                    let WindowFunction { params, .. } = w.as_ref();
                    (params.partition_by.iter().any(|p| interval(p, schema))
                        || params.order_by.iter().any(|o| interval(&o.expr, schema)))
                    .then(|| "the window".to_string())
                }
                _ => None,
            };
            what.map(|w| said(&w, x))
        })
    })
}

/// A bitwise operator (`^`, `&`, `|`, `<<`, `>>`) to which type coercion gave a float cut to
/// an integer: DataFusion 55 reads `x ^ 2` as the XOR of bits, not a power, and casts a float
/// operand to `BIGINT` first (`1e-5 ^ 2` is 2), with no word. The message names the operand
/// and what to write. `None` when no such operator is planned (a float the SQL cast itself is
/// left as written).
fn float_cut_by_bits(plan: &datafusion::logical_expr::LogicalPlan) -> Option<String> {
    use datafusion::logical_expr::{BinaryExpr, Cast, Expr, ExprSchemable, Operator};
    first_finding(plan, |node, schema| {
        first_in_expressions(node, |e| {
            let Expr::BinaryExpr(BinaryExpr { left, op, right }) = e else { return None };
            let bits = matches!(
                op,
                Operator::BitwiseXor
                    | Operator::BitwiseAnd
                    | Operator::BitwiseOr
                    | Operator::BitwiseShiftLeft
                    | Operator::BitwiseShiftRight
            );
            [left, right].into_iter().find_map(|side| match side.as_ref() {
                Expr::Cast(Cast { expr, field })
                    if bits
                        && field.data_type().is_integer()
                        && expr.get_type(schema).is_ok_and(|t| t.is_floating()) =>
                {
                    let what = if *op == Operator::BitwiseXor {
                        "`^` is the XOR of bits in DataFusion's SQL, not a power: write power(x, y) for a power"
                    } else {
                        "a bitwise operator works on the bits of integers"
                    };
                    Some(format!(
                        "{what}; here the float {} would be cut to an integer first, with no word. CAST it to \
                         BIGINT yourself where its integer part is meant",
                        expr.human_display()
                    ))
                }
                _ => None,
            })
        })
    })
}

/// The first finding `f` makes at a node of `plan` or of its subqueries, given the node and
/// the schema its expressions are typed in (its inputs', merged; a leaf's own).
fn first_finding(
    plan: &datafusion::logical_expr::LogicalPlan,
    mut f: impl FnMut(&datafusion::logical_expr::LogicalPlan, &datafusion::common::DFSchema) -> Option<String>,
) -> Option<String> {
    use datafusion::common::tree_node::TreeNodeRecursion;
    let mut found = None;
    let _ = plan.apply_with_subqueries(|node| {
        let inputs = node.inputs();
        found = match inputs.as_slice() {
            [one] => f(node, one.schema()),
            [] => f(node, node.schema()),
            many => {
                let mut merged = datafusion::common::DFSchema::empty();
                for i in many {
                    merged.merge(i.schema());
                }
                f(node, &merged)
            }
        };
        Ok(if found.is_some() { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
    });
    found
}

/// The first finding `f` makes at an expression of `node`, at any depth.
fn first_in_expressions(
    node: &datafusion::logical_expr::LogicalPlan,
    mut f: impl FnMut(&datafusion::logical_expr::Expr) -> Option<String>,
) -> Option<String> {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    let mut found = None;
    for e in node.expressions() {
        let _ = e.apply(|x| {
            found = f(x);
            Ok(if found.is_some() { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
        });
        if found.is_some() {
            break;
        }
    }
    found
}

/// Whether `plan` (or a subquery of it) joins as DataFusion plans `EXCEPT` (a left anti join)
/// and `INTERSECT` (a left semi join).
fn semi_or_anti_join(plan: &datafusion::logical_expr::LogicalPlan) -> bool {
    use datafusion::common::tree_node::TreeNodeRecursion;
    use datafusion::logical_expr::{JoinType, LogicalPlan};
    let mut found = false;
    let _ = plan.apply_with_subqueries(|node| {
        found = matches!(node, LogicalPlan::Join(j) if matches!(j.join_type, JoinType::LeftAnti | JoinType::LeftSemi));
        Ok(if found { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
    });
    found
}

/// `EXCEPT ALL` or `INTERSECT ALL` written in `statements`: DataFusion 55 plans them as the
/// presence of rows, not their counts (`[1, 2, 2] EXCEPT ALL [2]` gave 1, where SQL gives 1
/// and 2; `[1, 2, 2] INTERSECT ALL [2]` gave 2 twice, where SQL gives it once). The message
/// says what to write.
fn set_operation_all(statements: &[datafusion::sql::parser::Statement]) -> Option<datafusion::error::DataFusionError> {
    for st in statements {
        let t = statement_tokens(st)?;
        for pair in t.windows(2) {
            if let Some(op) = ["EXCEPT", "INTERSECT"].into_iter().find(|k| is_keyword(&pair[0], k))
                && is_keyword(&pair[1], "ALL")
            {
                return Some(datafusion::error::DataFusionError::Plan(format!(
                    "{op} ALL is computed by DataFusion 55 as if each row were there once or not at all: a row that \
                     repeats is not counted (the rows 1, 2, 2 {op} ALL the row 2 would give {}). Write {op} where \
                     rows are meant once; to count repeats, number them on both sides with row_number() OVER \
                     (PARTITION BY every column) and {op} the numbered rows",
                    if op == "EXCEPT" { "1, where SQL gives 1 and 2" } else { "2 twice, where SQL gives 2 once" }
                )));
            }
        }
    }
    None
}

/// Why a `FULL JOIN … USING` is refused.
pub(crate) const FULL_JOIN_USING_REFUSED: &str = "FULL JOIN … USING (k) and NATURAL FULL JOIN give DataFusion 55's \
     join column k from one side, chosen by the tables' names: k is null in the rows only the other side has, where SQL \
     gives their key. Write FULL JOIN … ON l.k = r.k, and coalesce(l.k, r.k) AS k for the key";

/// Whether `plan` (or a subquery of it) joins with `FULL JOIN … USING` or `NATURAL FULL JOIN`.
pub(crate) fn full_join_using(plan: &datafusion::logical_expr::LogicalPlan) -> bool {
    use datafusion::common::tree_node::TreeNodeRecursion;
    use datafusion::logical_expr::{JoinConstraint, JoinType, LogicalPlan};
    let mut found = false;
    let _ = plan.apply_with_subqueries(|node| {
        found = matches!(node, LogicalPlan::Join(j) if j.join_constraint == JoinConstraint::Using
            && j.join_type == JoinType::Full);
        Ok(if found { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
    });
    found
}

/// The table names the statements of `sql` read (as SQL resolves them: an unquoted name in
/// lower case; common table expressions left out), or `None` when that cannot be told: the
/// SQL does not parse, or it reads `information_schema` (which lists every table).
pub fn tables_read(sql: &str) -> Option<std::collections::BTreeSet<String>> {
    let mut out = std::collections::BTreeSet::new();
    for st in parse_statements(sql).ok()? {
        let (refs, _) = datafusion::sql::resolve::resolve_table_references(&st, true).ok()?;
        for r in refs {
            if r.schema().is_some_and(|s| s.eq_ignore_ascii_case("information_schema")) {
                return None;
            }
            out.insert(r.table().to_string());
        }
    }
    Some(out)
}

/// True when `table` is one of the names `read` ([`tables_read`]) holds, also when only its
/// lower-case form is (an unquoted name that SQL folds: the table is then at hand for the
/// error that suggests the quoted name).
pub fn reads_table(read: &std::collections::BTreeSet<String>, table: &str) -> bool {
    read.contains(table) || read.contains(&table.to_lowercase())
}
