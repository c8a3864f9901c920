//! The NULL of a scalar subquery that finds no row.
//!
//! `(SELECT k FROM t WHERE false)` is NULL, whatever `k` holds. DataFusion 55 takes the
//! subquery's nullability from its column alone, so over a column that holds no NULL (a raw
//! file's `_source_line`, a literal) it folded `(…) IS NULL` to false, and a query that
//! selected the subquery failed on its NULL ("declared as non-nullable but contains null
//! values").
//!
//! An analyzer rule ([`NullableScalarSubqueries`]) puts each such subquery's column in a call
//! of [`MaybeNull`] (`maybe_null(x)`), which gives `x` as it is and says it may be NULL; the
//! plan's schemas above it are made again.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, Result as DfResult};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlan, Projection, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Subquery, Volatility,
};

/// The SQL name of [`MaybeNull`].
const NAME: &str = "maybe_null";

/// `maybe_null(x)`: `x` as it is, of `x`'s type, said to be nullable. Volatile, so that
/// DataFusion does not fold `maybe_null(1)` back into the literal `1`, which holds no NULL.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct MaybeNull {
    signature: Signature,
}

impl ScalarUDFImpl for MaybeNull {
    fn name(&self) -> &str {
        NAME
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(arg_types.first().cloned().unwrap_or(DataType::Null))
    }
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let data_type = args.arg_fields.first().map(|f| f.data_type().clone()).unwrap_or(DataType::Null);
        Ok(Arc::new(Field::new(NAME, data_type, true)))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        args.args
            .into_iter()
            .next()
            .ok_or_else(|| datafusion::error::DataFusionError::Plan(format!("{NAME} takes one value")))
    }
}

/// [`MaybeNull`] as a function to register and call.
pub fn function() -> Arc<ScalarUDF> {
    static F: std::sync::OnceLock<Arc<ScalarUDF>> = std::sync::OnceLock::new();
    F.get_or_init(|| {
        Arc::new(ScalarUDF::new_from_impl(MaybeNull { signature: Signature::any(1, Volatility::Volatile) }))
    })
    .clone()
}

/// The analyzer rule that makes each scalar subquery nullable (see the module docs). It runs
/// before the checks that read nullability (`NOT IN` beneath `OR`).
#[derive(Debug)]
pub struct NullableScalarSubqueries;

impl datafusion::optimizer::AnalyzerRule for NullableScalarSubqueries {
    fn analyze(&self, plan: LogicalPlan, _: &datafusion::config::ConfigOptions) -> DfResult<LogicalPlan> {
        // most plans hold none: left as they are
        let mut any = false;
        plan.apply_with_subqueries(|node| {
            node.apply_expressions(|e| {
                e.apply(|x| {
                    any |= matches!(x, Expr::ScalarSubquery(s) if never_null(s));
                    Ok(if any { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
                })
            })?;
            Ok(if any { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
        })?;
        if !any {
            return Ok(plan);
        }
        let f = function();
        plan.transform_up_with_subqueries(|node| {
            let node = node.map_expressions(|e| {
                e.transform_up(|x| match x {
                    Expr::ScalarSubquery(s) if never_null(&s) => {
                        Ok(Transformed::yes(Expr::ScalarSubquery(maybe_null(s, &f)?)))
                    }
                    other => Ok(Transformed::no(other)),
                })
            })?;
            // the schemas above a changed subquery say NULL may come
            Ok(Transformed::yes(node.data.recompute_schema()?))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "nullable scalar subqueries"
    }
}

/// Whether scalar subquery `s` says its one column holds no NULL.
fn never_null(s: &Subquery) -> bool {
    s.subquery.schema().fields().first().is_some_and(|f| !f.is_nullable())
}

/// `s` with its column in a call of `f`, under the column's own name.
fn maybe_null(s: Subquery, f: &Arc<ScalarUDF>) -> DfResult<Subquery> {
    let schema: &DFSchema = s.subquery.schema();
    let (qualifier, field) = schema.qualified_field(0);
    let column = Expr::Column(datafusion::common::Column::new(qualifier.cloned(), field.name()));
    let call = Expr::ScalarFunction(ScalarFunction::new_udf(f.clone(), vec![column]))
        .alias_qualified(qualifier.cloned(), field.name());
    let projection = Projection::try_new(vec![call], s.subquery.clone())?;
    Ok(Subquery { subquery: Arc::new(LogicalPlan::Projection(projection)), ..s })
}
