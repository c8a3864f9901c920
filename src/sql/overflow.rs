//! Integer `+`, `-`, `*` and unary `-` that fail rather than wrap.
//!
//! DataFusion adds, subtracts and multiplies integers with wrapping arithmetic:
//! `9223372036854775807 + 1` is `-9223372036854775808`, with no word (its `BinaryExpr` can
//! check, but no setting of a SQL session asks it to). PostgreSQL and DuckDB fail instead. So
//! does runpack: an analyzer rule ([`CheckIntegerArithmetic`]) turns each of these operators
//! between two integer operands into a call of [`CheckedArithmetic`], which uses arrow's
//! checked kernels and names the operation, the type and the way out when a result does not
//! fit; the unary minus likewise (`checked_negate`). Column names stay as written (`a + b`). Floats,
//! decimals, dates and intervals keep DataFusion's operators, and so do bit operations
//! (`<<`, `&`, …), which work on bits. Also kept: a `LIMIT`'s counts, the grouping expressions
//! of an aggregate of grouping sets (`ROLLUP`, `CUBE`: `grouping(…)` matches them as written), and
//! the arguments of table functions (`generate_series`), which are no plan's expressions.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result as DfResult};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};

/// The operators checked, and the name of the function each becomes.
const CHECKED: [(Operator, &str); 3] =
    [(Operator::Plus, "checked_add"), (Operator::Minus, "checked_subtract"), (Operator::Multiply, "checked_multiply")];

/// One checked operator as a SQL function of two integers of one type (the analyzer's type
/// coercion has made them one), or of one integer for the unary minus (`op` `None`),
/// returning that type.
///
/// Errors: an execution error naming the operation and its type when a result leaves the
/// type's range.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct CheckedArithmetic {
    op: Option<Operator>,
    name: &'static str,
    signature: Signature,
}

impl CheckedArithmetic {
    fn new(op: Option<Operator>, name: &'static str) -> Self {
        let arity = if op.is_some() { 2 } else { 1 };
        CheckedArithmetic { op, name, signature: Signature::any(arity, Volatility::Immutable) }
    }
}

/// The name of the checked unary minus.
const NEGATE: &str = "checked_negate";

/// The checked unary minus, as a function to call.
fn negate_udf() -> Arc<ScalarUDF> {
    static F: std::sync::OnceLock<Arc<ScalarUDF>> = std::sync::OnceLock::new();
    F.get_or_init(|| Arc::new(ScalarUDF::new_from_impl(CheckedArithmetic::new(None, NEGATE)))).clone()
}

/// The four functions, to register on a session.
pub fn functions() -> Vec<ScalarUDF> {
    CHECKED
        .iter()
        .map(|(op, name)| ScalarUDF::new_from_impl(CheckedArithmetic::new(Some(*op), name)))
        .chain([negate_udf().as_ref().clone()])
        .collect()
}

impl ScalarUDFImpl for CheckedArithmetic {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        match arg_types {
            [a, b] if a == b && a.is_integer() => Ok(a.clone()),
            [a] if a.is_integer() && self.op.is_none() => Ok(a.clone()),
            _ => Err(DataFusionError::Plan(format!(
                "{}: expects two integers of one type, found {}",
                self.name,
                arg_types.iter().map(ToString::to_string).collect::<Vec<_>>().join(" and ")
            ))),
        }
    }

    // null exactly where an argument may be (an overflow is an error, not a null), as the
    // operator it stands for: a sum of columns that hold no NULL holds none
    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> DfResult<arrow::datatypes::FieldRef> {
        let types: Vec<DataType> = args.arg_fields.iter().map(|f| f.data_type().clone()).collect();
        let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
        Ok(std::sync::Arc::new(arrow::datatypes::Field::new(self.name, self.return_type(&types)?, nullable)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        match (self.op, args.args.as_slice()) {
            (Some(op), [a, b]) => apply(op, a, b),
            (None, [a]) => negate(a),
            _ => Err(DataFusionError::Internal(format!("{}: wrong number of arguments", self.name))),
        }
    }
}

/// `a op b` by arrow's checked kernels: a scalar when both are.
///
/// Errors: the overflow, named with the operation, its type and the way out.
fn apply(op: Operator, a: &ColumnarValue, b: &ColumnarValue) -> DfResult<ColumnarValue> {
    let scalars = matches!((a, b), (ColumnarValue::Scalar(_), ColumnarValue::Scalar(_)));
    let (l, r) = (datum(a)?, datum(b)?);
    let kernel = match op {
        Operator::Plus => arrow::compute::kernels::numeric::add,
        Operator::Minus => arrow::compute::kernels::numeric::sub,
        _ => arrow::compute::kernels::numeric::mul,
    };
    finish(kernel(l.as_ref(), r.as_ref()), scalars, |what| {
        format!(
            "{} does not fit {}; CAST an operand",
            what.strip_prefix("Overflow happened on: ").unwrap_or(what),
            a.data_type()
        )
    })
}

/// `-a` by arrow's checked kernel (the least value of a signed type has no negative).
///
/// Errors: the overflow, named with the value and its type.
fn negate(a: &ColumnarValue) -> DfResult<ColumnarValue> {
    let array = match a {
        ColumnarValue::Array(a) => a.clone(),
        ColumnarValue::Scalar(s) => s.to_array()?,
    };
    let scalar = matches!(a, ColumnarValue::Scalar(_));
    finish(arrow::compute::kernels::numeric::neg(array.as_ref()), scalar, |what| {
        format!(
            "-({}) does not fit {}; CAST the operand",
            what.strip_prefix("Overflow happened on: - ").unwrap_or(what),
            a.data_type()
        )
    })
}

/// A kernel's result as a column value (a scalar when the arguments were), or its overflow
/// as `integer overflow: <said>… to DECIMAL(38, 0) or DOUBLE for larger values`.
fn finish(
    out: Result<arrow::array::ArrayRef, arrow::error::ArrowError>,
    scalar: bool,
    said: impl Fn(&str) -> String,
) -> DfResult<ColumnarValue> {
    let out = out.map_err(|e| match e {
        arrow::error::ArrowError::ArithmeticOverflow(what) => DataFusionError::Execution(format!(
            "integer overflow: {} to DECIMAL(38, 0) or DOUBLE for larger values",
            said(&what)
        )),
        e => DataFusionError::ArrowError(Box::new(e), None),
    })?;
    Ok(if scalar {
        ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(&out, 0)?)
    } else {
        ColumnarValue::Array(out)
    })
}

/// An argument as arrow's kernels take it: an array, or a scalar of one row.
fn datum(v: &ColumnarValue) -> DfResult<Box<dyn arrow::array::Datum>> {
    Ok(match v {
        ColumnarValue::Array(a) => Box::new(a.clone()),
        ColumnarValue::Scalar(s) => Box::new(s.to_scalar()?),
    })
}

/// The analyzer rule that makes integer `+`, `-` and `*` [`CheckedArithmetic`] calls, in
/// every node of a plan and in its subqueries, keeping each expression's name.
#[derive(Debug)]
pub struct CheckIntegerArithmetic;

impl datafusion::optimizer::AnalyzerRule for CheckIntegerArithmetic {
    fn analyze(&self, plan: LogicalPlan, _: &datafusion::config::ConfigOptions) -> DfResult<LogicalPlan> {
        // the binary operators' functions (the fourth, the unary minus, is [`negate_udf`])
        let functions: Vec<(Operator, Arc<ScalarUDF>)> =
            CHECKED.iter().zip(functions()).map(|((op, _), f)| (*op, Arc::new(f))).collect();
        plan.transform_up_with_subqueries(|node| {
            rewrite_expressions(node, |e, schema| checked(e, schema, &functions).map(|(out, _)| out))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "checked integer arithmetic"
    }
}

/// `node` with `rewrite` applied to each of its expressions, typed in the schema of its inputs
/// (a leaf's own), each keeping its name; left alone: a `LIMIT`'s counts (constants the
/// planner must see as such), and the grouping expressions of an aggregate of grouping sets
/// (`ROLLUP`, `CUBE`: they are matched by `grouping(…)` and named by the set, which a rewrite
/// would break; its aggregates are rewritten). The analyzer rules that check values use it.
pub(super) fn rewrite_expressions(
    node: LogicalPlan,
    mut rewrite: impl FnMut(Expr, &DFSchema) -> DfResult<Transformed<Expr>>,
) -> DfResult<Transformed<LogicalPlan>> {
    if matches!(node, LogicalPlan::Limit(_)) {
        return Ok(Transformed::no(node));
    }
    if let LogicalPlan::Aggregate(a) = &node
        && a.group_expr.iter().any(|g| matches!(g, Expr::GroupingSet(_)))
    {
        // the aggregates alone: their arguments are computed as anywhere else
        let names = NamePreserver::new(&node);
        let schema = a.input.schema().as_ref().clone();
        let mut changed = false;
        let mut aggr = Vec::with_capacity(a.aggr_expr.len());
        for e in a.aggr_expr.iter().cloned() {
            let saved = names.save(&e);
            let out = rewrite(e, &schema)?;
            changed |= out.transformed;
            aggr.push(if out.transformed { saved.restore(out.data) } else { out.data });
        }
        if !changed {
            return Ok(Transformed::no(node));
        }
        let rebuilt = datafusion::logical_expr::Aggregate::try_new(a.input.clone(), a.group_expr.clone(), aggr)?;
        return Ok(Transformed::yes(LogicalPlan::Aggregate(rebuilt)));
    }
    let schema = match node.inputs().as_slice() {
        [] => node.schema().as_ref().clone(),
        inputs => {
            let mut merged = DFSchema::empty();
            for i in inputs {
                merged.merge(i.schema());
            }
            merged
        }
    };
    let names = NamePreserver::new(&node);
    node.map_expressions(|e| {
        let saved = names.save(&e);
        let out = rewrite(e, &schema)?;
        Ok(if out.transformed { out.update_data(|e| saved.restore(e)) } else { out })
    })
}

/// `e` with each `+`, `-` and `*` of two integers made a checked call, and `e`'s type when it
/// is such an operator (known from its operands, so that a chain of `a + b + c …` is typed
/// once, not at each level: typing a call types its arguments again).
fn checked(
    e: Expr,
    schema: &DFSchema,
    functions: &[(Operator, Arc<ScalarUDF>)],
) -> DfResult<(Transformed<Expr>, Option<DataType>)> {
    let e = match e {
        Expr::Negative(inner) => {
            let (x, xt) = checked(*inner, schema, functions)?;
            let transformed = x.transformed;
            let x = x.data;
            let xt = xt.or_else(|| x.get_type(schema).ok());
            return Ok(match xt {
                Some(t) if t.is_integer() => {
                    (Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(negate_udf(), vec![x]))), Some(t))
                }
                _ => (Transformed::new_transformed(Expr::Negative(Box::new(x)), transformed), None),
            });
        }
        e => e,
    };
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = e else {
        // subqueries are their own plans, which the rule visits
        let out = e.map_children(|c| checked(c, schema, functions).map(|(c, _)| c))?;
        return Ok((out, None));
    };
    let (l, lt) = checked(*left, schema, functions)?;
    let (r, rt) = checked(*right, schema, functions)?;
    let transformed = l.transformed || r.transformed;
    let (l, r) = (l.data, r.data);
    let Some((_, f)) = functions.iter().find(|(o, _)| *o == op) else {
        return Ok((
            Transformed::new_transformed(Expr::BinaryExpr(BinaryExpr::new(Box::new(l), op, Box::new(r))), transformed),
            None,
        ));
    };
    // an operand typed in no schema at hand (an outer reference) keeps its operator
    let lt = lt.or_else(|| l.get_type(schema).ok());
    let rt = rt.or_else(|| r.get_type(schema).ok());
    match (lt, rt) {
        (Some(lt), Some(rt)) if lt.is_integer() && lt == rt => {
            // two literals are computed here: a chain of them (`1 + 1 + …`) folds as it is
            // met, not call by call in the optimizer; an overflow is left to the call, which
            // says it when the query runs
            if let (Expr::Literal(x, None), Expr::Literal(y, None)) = (&l, &r)
                && let Ok(ColumnarValue::Scalar(v)) =
                    apply(op, &ColumnarValue::Scalar(x.clone()), &ColumnarValue::Scalar(y.clone()))
            {
                return Ok((Transformed::yes(Expr::Literal(v, None)), Some(lt)));
            }
            let call = Expr::ScalarFunction(ScalarFunction::new_udf(f.clone(), vec![l, r]));
            Ok((Transformed::yes(call), Some(lt)))
        }
        _ => Ok((
            Transformed::new_transformed(Expr::BinaryExpr(BinaryExpr::new(Box::new(l), op, Box::new(r))), transformed),
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::session::csv_after;

    /// The result of `sql` over `t(i, j, u, f)` (Int64, Int32, UInt64, Float64) as CSV lines
    /// with a header, or the error's message.
    async fn run(sql: &str) -> Result<String, String> {
        let setup = "CREATE TABLE t AS SELECT * FROM (VALUES (9223372036854775807, arrow_cast(2147483647, 'Int32'), \
             arrow_cast(1, 'UInt64'), 1.5), (-9223372036854775808, arrow_cast(-2147483648, 'Int32'), arrow_cast(0, 'UInt64'), \
             -2.5), (NULL, NULL, NULL, NULL), (3, arrow_cast(4, 'Int32'), arrow_cast(5, 'UInt64'), 1e308)) AS v(i, j, u, f)";
        csv_after(setup, sql).await
    }

    #[tokio::test]
    async fn integer_arithmetic_that_leaves_its_type_fails() {
        let overflows = [
            ("SELECT i + 1 FROM t", "integer overflow: 9223372036854775807 + 1 does not fit Int64"),
            ("SELECT i - 1 FROM t", "-9223372036854775808 - 1 does not fit Int64"),
            ("SELECT i * 2 FROM t", "9223372036854775807 * 2 does not fit Int64"),
            ("SELECT j + j FROM t", "2147483647 + 2147483647 does not fit Int32"),
            ("SELECT u - arrow_cast(2, 'UInt64') FROM t", "1 - 2 does not fit UInt64"),
            ("SELECT 9223372036854775807 + 1", "does not fit Int64"),
            // in a filter, a grouping, an ordering and a subquery too
            ("SELECT count(*) FROM t WHERE i + 1 > 0", "does not fit Int64"),
            ("SELECT count(*) FROM t GROUP BY i * 3", "does not fit Int64"),
            ("SELECT i FROM t ORDER BY i + 10", "does not fit Int64"),
            ("SELECT (SELECT max(i) + 1 FROM t)", "does not fit Int64"),
            ("SELECT count(*) FROM t WHERE EXISTS (SELECT 1 FROM t t2 WHERE t2.i + 1 = t.i)", "does not fit Int64"),
            // above an aggregate of grouping sets
            ("SELECT i + 1 AS k FROM t GROUP BY ROLLUP(i)", "does not fit Int64"),
            // the unary minus of the least value
            ("SELECT -i FROM t", "integer overflow: -(-9223372036854775808) does not fit Int64"),
            ("SELECT -(j) FROM t", "-(-2147483648) does not fit Int32"),
        ];
        for (sql, says) in overflows {
            let e = run(sql).await.unwrap_err();
            assert!(e.contains(says), "{sql}: {e}");
            assert!(e.contains("to DECIMAL(38, 0) or DOUBLE for larger values"), "{sql}: {e}");
        }
    }

    #[tokio::test]
    async fn arithmetic_in_range_keeps_its_values_types_and_names() {
        assert_eq!(
            run("SELECT j + 1, i - i, u * 2, 2 + 3 AS five FROM t WHERE i = 3").await.unwrap(),
            "t.j + Int64(1),t.i - t.i,t.u * Int64(2),five\n5,0,10,5\n"
        );
        assert_eq!(
            run("SELECT -i AS n, -(-i) AS p, -f AS g FROM t WHERE i = 3").await.unwrap(),
            "n,p,g\n-3,3,-1e308\n"
        );
        // a chain of literals folds as it is met (the query tests run 1,500 on the CLI's stack)
        let chain = format!("SELECT 1{} AS x", " + 1".repeat(100));
        assert_eq!(run(&chain).await.unwrap(), "x\n101\n");
        // grouping sets over arithmetic plan as before (their grouping expressions keep
        // DataFusion's operators), and a LIMIT's sum is a constant
        assert_eq!(
            run("SELECT j + 1 AS k, count(*) AS n FROM t WHERE i = 3 GROUP BY ROLLUP(j + 1) ORDER BY k NULLS LAST")
                .await
                .unwrap(),
            "k,n\n5,1\n,1\n"
        );
        assert!(run("SELECT grouping(j * 1) AS g FROM t GROUP BY CUBE(j * 1)").await.is_ok());
        assert_eq!(run("SELECT i FROM t WHERE i = 3 LIMIT 1 + 1").await.unwrap(), "i\n3\n");
        // a wider operand: Int32 + Int64 is Int64, checked as such
        assert_eq!(run("SELECT j + i AS s FROM t WHERE i = 3").await.unwrap(), "s\n7\n");
        assert!(run("SELECT j + 2147483648 FROM t").await.unwrap().contains("4294967295"));
        // nulls stay null; floats keep IEEE arithmetic (infinity, no error)
        assert_eq!(run("SELECT i + 1 AS x FROM t WHERE i IS NULL").await.unwrap(), "x\n\"\"\n");
        assert_eq!(run("SELECT f * 10 AS x FROM t WHERE i = 3").await.unwrap(), "x\ninf\n");
        // grouped by an expression and ordered by it, named as written
        assert_eq!(
            run("SELECT i % 2 + 1 AS g, count(*) AS n FROM t WHERE i IS NOT NULL GROUP BY i % 2 + 1 ORDER BY g")
                .await
                .unwrap(),
            "g,n\n1,1\n2,2\n"
        );
    }
}
