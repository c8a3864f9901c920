//! Integers that SQL's type coercion would round into floats fail rather than change.
//!
//! DataFusion gives both sides of a `UNION`, the arguments of `coalesce`, the branches of a
//! `CASE` one type; an integer beside a float becomes a float. A `DOUBLE` holds integers
//! exactly only up to 2^53 (a `FLOAT` up to 2^24): `SELECT i FROM a UNION ALL SELECT f FROM b`
//! turned 9007199254740993 into 9007199254740992 with no word. PostgreSQL and DuckDB round
//! the same way; runpack says it instead.
//!
//! Two analyzer rules do it:
//! - [`MarkWrittenCasts`], before type coercion, marks the casts to a float the SQL wrote
//!   (`CAST(i AS DOUBLE)`, `i::float`): those round because they were asked to.
//! - [`CheckCoercedCasts`], after it, makes each cast of an integer to a float that coercion
//!   added an [`ExactFloat`] call, where the value is kept as it is: a `SELECT`'s (or a
//!   `UNION`'s) output column, a row of `VALUES`, an argument of `coalesce`, `nullif`, `nvl`,
//!   `nvl2`, `ifnull`, `greatest`, `least` or `make_array` (`[i, 0.5]`), a `CASE`'s `THEN` or
//!   `ELSE`. It puts the written casts back as they were.
//!
//! Left to round as floats do: arithmetic with a float (`i * 0.5`), comparisons with a float
//! (`i > 1e3`), and the arguments of other functions and aggregates (`stddev(i)`, `sqrt(i)`),
//! whose results are computed values, not the integer kept.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Float32Type, Float64Type, Int64Type, UInt64Type};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::{Alias, Case, Cast, ScalarFunction};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

/// The functions whose result is one of their arguments, kept as it is.
const CHOOSING: [&str; 8] = ["coalesce", "nullif", "nvl", "nvl2", "ifnull", "greatest", "least", "make_array"];

/// The name of the marker [`MarkWrittenCasts`] puts in place of a written cast to a float, for
/// [`CheckCoercedCasts`] to put back.
const WRITTEN: &str = "written_cast_to_float";

/// The float types a cast is checked into, with the name of the checking function and the
/// type's SQL name.
const CHECKED: [(DataType, &str, &str); 2] =
    [(DataType::Float64, "exact_double", "DOUBLE"), (DataType::Float32, "exact_float", "FLOAT")];

/// A written cast to a float, held while type coercion runs (it casts as `CAST` does).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Written {
    to: arrow::datatypes::FieldRef,
    signature: Signature,
}

impl ScalarUDFImpl for Written {
    fn name(&self) -> &str {
        WRITTEN
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> DfResult<DataType> {
        Ok(self.to.data_type().clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        match args.args.as_slice() {
            [v] => v.cast_to(self.to.data_type(), None),
            _ => Err(DataFusionError::Internal(format!("{WRITTEN}: one argument expected"))),
        }
    }
}

/// The analyzer rule, first of all, that marks each cast to a float the SQL wrote (see the
/// module docs), in every node of a plan and in its subqueries, keeping each expression's name.
#[derive(Debug)]
pub struct MarkWrittenCasts;

impl datafusion::optimizer::AnalyzerRule for MarkWrittenCasts {
    fn analyze(&self, plan: LogicalPlan, _: &datafusion::config::ConfigOptions) -> DfResult<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            let names = NamePreserver::new(&node);
            node.map_expressions(|e| {
                let saved = names.save(&e);
                let out = e.transform_up(|e| match e {
                    Expr::Cast(Cast { expr, field }) if field.data_type().is_floating() => {
                        let marker = ScalarUDF::new_from_impl(Written {
                            to: field,
                            signature: Signature::any(1, Volatility::Immutable),
                        });
                        Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(
                            Arc::new(marker),
                            vec![*expr],
                        ))))
                    }
                    e => Ok(Transformed::no(e)),
                })?;
                Ok(if out.transformed { out.update_data(|e| saved.restore(e)) } else { out })
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "mark written casts to floats"
    }
}

/// The analyzer rule, after type coercion, that checks the casts coercion added (see the
/// module docs) and puts back the casts [`MarkWrittenCasts`] marked.
#[derive(Debug)]
pub struct CheckCoercedCasts;

impl datafusion::optimizer::AnalyzerRule for CheckCoercedCasts {
    fn analyze(&self, plan: LogicalPlan, _: &datafusion::config::ConfigOptions) -> DfResult<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            // an output column of a projection (a union's coerced inputs are projections) and a
            // row of VALUES are kept as they are
            let kept = matches!(node, LogicalPlan::Projection(_) | LogicalPlan::Values(_));
            // the schema the node's expressions are typed in: its inputs' (a leaf's own)
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
                let out = checked(e, kept, &schema)?;
                Ok(if out.transformed { out.update_data(|e| saved.restore(e)) } else { out })
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "check casts of integers to floats"
    }
}

/// `e` with its written casts put back and, where its value is `kept`, a coerced cast of an
/// integer to a float made an [`ExactFloat`] call.
fn checked(e: Expr, kept: bool, schema: &DFSchema) -> DfResult<Transformed<Expr>> {
    match e {
        Expr::Alias(Alias { expr, relation, name, metadata }) => Ok(checked(*expr, kept, schema)?
            .update_data(|expr| Expr::Alias(Alias { expr: Box::new(expr), relation, name, metadata }))),
        Expr::ScalarFunction(ScalarFunction { func, args }) if func.name() == WRITTEN => {
            let Some(to) =
                (func.inner().as_ref() as &dyn std::any::Any).downcast_ref::<Written>().map(|w| w.to.clone())
            else {
                return Err(DataFusionError::Internal(format!("{WRITTEN}: not the marker")));
            };
            let [arg] = <[Expr; 1]>::try_from(args)
                .map_err(|_| DataFusionError::Internal(format!("{WRITTEN}: one argument expected")))?;
            let arg = checked(arg, false, schema)?.data;
            Ok(Transformed::yes(Expr::Cast(Cast::new_from_field(Box::new(arg), to))))
        }
        Expr::Cast(Cast { expr, field }) if kept => {
            let inner = checked(*expr, false, schema)?;
            let from = inner.data.get_type(schema).ok();
            match CHECKED.iter().find(|(to, _, _)| to == field.data_type()) {
                Some((_, name, _)) if from.as_ref().is_some_and(|f| rounds(f, field.data_type())) => {
                    let label = Expr::Literal(ScalarValue::Utf8(Some(inner.data.schema_name().to_string())), None);
                    let f = exact_float_udf(name);
                    Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(f, vec![inner.data, label]))))
                }
                _ => Ok(inner.update_data(|expr| Expr::Cast(Cast::new_from_field(Box::new(expr), field)))),
            }
        }
        Expr::ScalarFunction(ScalarFunction { func, args }) if CHOOSING.contains(&func.name()) => {
            let mut transformed = false;
            let args = args
                .into_iter()
                .map(|a| {
                    let a = checked(a, true, schema)?;
                    transformed |= a.transformed;
                    Ok(a.data)
                })
                .collect::<DfResult<Vec<_>>>()?;
            Ok(Transformed::new_transformed(Expr::ScalarFunction(ScalarFunction { func, args }), transformed))
        }
        Expr::Case(Case { expr, when_then_expr, else_expr }) => {
            let mut transformed = false;
            let mut go = |e: Box<Expr>, kept: bool| -> DfResult<Box<Expr>> {
                let e = checked(*e, kept, schema)?;
                transformed |= e.transformed;
                Ok(Box::new(e.data))
            };
            let expr = expr.map(|e| go(e, false)).transpose()?;
            let when_then_expr =
                when_then_expr.into_iter().map(|(w, t)| Ok((go(w, false)?, go(t, true)?))).collect::<DfResult<_>>()?;
            let else_expr = else_expr.map(|e| go(e, true)).transpose()?;
            Ok(Transformed::new_transformed(Expr::Case(Case { expr, when_then_expr, else_expr }), transformed))
        }
        // subqueries are their own plans, which the rule visits
        e => e.map_children(|c| checked(c, false, schema)),
    }
}

/// Whether a cast from integer type `from` to float type `to` can round: `from` holds integers
/// beyond `to`'s 53 (or 24) bits of mantissa.
fn rounds(from: &DataType, to: &DataType) -> bool {
    let bits = match from {
        DataType::Int8 | DataType::UInt8 => 8,
        DataType::Int16 | DataType::UInt16 => 16,
        DataType::Int32 | DataType::UInt32 => 32,
        DataType::Int64 | DataType::UInt64 => 64,
        _ => return false,
    };
    let mantissa = if *to == DataType::Float32 { 24 } else { 53 };
    bits > mantissa
}

/// The checking function called `name`, made once.
fn exact_float_udf(name: &str) -> Arc<ScalarUDF> {
    static F: std::sync::OnceLock<Vec<Arc<ScalarUDF>>> = std::sync::OnceLock::new();
    let all = F.get_or_init(|| functions().into_iter().map(Arc::new).collect());
    all.iter().find(|f| f.name() == name).expect("one of CHECKED's names").clone()
}

/// The checking functions, to register on a session (an executor of a cluster runs them).
pub fn functions() -> Vec<ScalarUDF> {
    CHECKED
        .iter()
        .map(|(to, name, sql)| {
            ScalarUDF::new_from_impl(ExactFloat {
                to: to.clone(),
                name,
                sql,
                signature: Signature::any(2, Volatility::Immutable),
            })
        })
        .collect()
}

/// `exact_double(i, label)` and `exact_float(i, label)`: integer `i` as a `DOUBLE` (`FLOAT`),
/// where each value has an exact one; `label` names `i` in the message.
///
/// Errors: an execution error naming the first integer that would round, `label`, the float
/// it would become and the ways out.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ExactFloat {
    to: DataType,
    name: &'static str,
    sql: &'static str,
    signature: Signature,
}

impl ScalarUDFImpl for ExactFloat {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> DfResult<DataType> {
        Ok(self.to.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [value, ColumnarValue::Scalar(ScalarValue::Utf8(Some(label)))] = args.args.as_slice() else {
            return Err(DataFusionError::Internal(format!("{}: an integer and its name expected", self.name)));
        };
        let scalar = matches!(value, ColumnarValue::Scalar(_));
        let ints = value.to_array(args.number_rows.max(1))?;
        let floats = arrow::compute::cast(&ints, &self.to)?;
        if let Some((v, f)) = first_rounded(&ints, &floats)? {
            let (mantissa, how) =
                if self.to == DataType::Float32 { ("2^24", "16777216") } else { ("2^53", "9007199254740992") };
            return Err(DataFusionError::Execution(format!(
                "{label}: the integer {v} has no exact {sql}; it was mixed with floats (a UNION, CASE, coalesce, \
                 greatest, …), which would make it {f} without a word. A {sql} holds every integer up to {mantissa} \
                 ({how}). Round it knowingly with CAST({label} AS {sql}), or keep every value exact with DECIMAL \
                 on both sides (CAST(… AS DECIMAL(38, 10)))",
                sql = self.sql
            )));
        }
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&floats, 0)?)
        } else {
            ColumnarValue::Array(floats)
        })
    }
}

/// The first integer of `ints` whose float in `floats` is another number, with that float.
fn first_rounded(ints: &ArrayRef, floats: &ArrayRef) -> DfResult<Option<(String, String)>> {
    let wide: Vec<f64> = match floats.data_type() {
        DataType::Float32 => floats.as_primitive::<Float32Type>().values().iter().map(|f| f64::from(*f)).collect(),
        _ => floats.as_primitive::<Float64Type>().values().to_vec(),
    };
    let signed = ints.data_type().is_signed_integer();
    let exact = arrow::compute::cast(ints, if signed { &DataType::Int64 } else { &DataType::UInt64 })?;
    for (i, f) in wide.iter().enumerate() {
        if exact.is_null(i) {
            continue;
        }
        let v = if signed {
            i128::from(exact.as_primitive::<Int64Type>().value(i))
        } else {
            i128::from(exact.as_primitive::<UInt64Type>().value(i))
        };
        // `f` is integral and below 2^65, so `as` converts it exactly
        if *f as i128 != v {
            return Ok(Some((v.to_string(), format!("{f:.1}"))));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::super::session::{query_session, run_script};

    /// The result of `sql` over `t(i, j, f)` (Int64, Int32, Float64; 2^53 + 1, 2^24 + 1, 0.5
    /// in the first row) as CSV lines with a header, or the error's message.
    async fn run(sql: &str) -> Result<String, String> {
        let ctx = query_session();
        let setup = "CREATE TABLE t AS SELECT * FROM (VALUES (9007199254740993, arrow_cast(16777217, 'Int32'), 0.5), \
             (3, arrow_cast(4, 'Int32'), 1.5), (NULL, NULL, NULL)) AS v(i, j, f)";
        ctx.sql(setup).await.unwrap().collect().await.unwrap();
        let (_, batches) = run_script(&ctx, sql).await.map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        let mut w = arrow::csv::WriterBuilder::new().with_header(true).build(&mut out);
        for b in &batches {
            w.write(b).unwrap();
        }
        drop(w);
        Ok(String::from_utf8(out).unwrap())
    }

    #[tokio::test]
    async fn an_integer_coercion_would_round_fails_naming_it() {
        let rounded = [
            "SELECT i FROM t UNION ALL SELECT f FROM t",
            "SELECT f FROM t UNION SELECT i FROM t",
            "SELECT coalesce(i, 0.5) AS c FROM t",
            "SELECT nullif(i, 0.5) AS c FROM t",
            "SELECT CASE WHEN f > 1 THEN f ELSE i END AS k FROM t",
            "SELECT CASE WHEN f < 1 THEN i ELSE 0.5 END AS k FROM t",
            "SELECT greatest(i, 0.5) AS g FROM t",
            "SELECT [i, 0.5] AS l FROM t",
            // in a subquery, and under an aggregate that keeps the value
            "SELECT (SELECT max(coalesce(i, 0.5)) FROM t) AS m",
            "SELECT max(x) AS m FROM (SELECT i AS x FROM t UNION ALL SELECT f FROM t)",
        ];
        for sql in rounded {
            let e = run(sql).await.unwrap_err();
            assert!(e.contains("t.i: the integer 9007199254740993 has no exact DOUBLE"), "{sql}: {e}");
            assert!(e.contains("would make it 9007199254740992.0 without a word"), "{sql}: {e}");
            assert!(e.contains("CAST(t.i AS DOUBLE)"), "{sql}: {e}");
        }
        // a 32-bit integer beside a FLOAT: 2^24 + 1 has no exact FLOAT
        let e = run("SELECT j FROM t UNION ALL SELECT arrow_cast(f, 'Float32') FROM t").await.unwrap_err();
        assert!(e.contains("t.j: the integer 16777217 has no exact FLOAT"), "{e}");
        assert!(e.contains("up to 2^24 (16777216)"), "{e}");
    }

    #[tokio::test]
    async fn written_casts_arithmetic_comparisons_and_exact_integers_keep_their_values() {
        // casts the SQL wrote round as asked, in every form
        assert_eq!(
            run("SELECT CAST(i AS DOUBLE) AS a, i::double AS b, TRY_CAST(i AS DOUBLE) AS c FROM t WHERE i > 5")
                .await
                .unwrap(),
            "a,b,c\n9007199254740992.0,9007199254740992.0,9007199254740992.0\n"
        );
        assert_eq!(
            run("SELECT CAST(i AS DOUBLE) AS x FROM t WHERE i > 5 UNION ALL SELECT f FROM t WHERE f = 0.5 ORDER BY x")
                .await
                .unwrap(),
            "x\n0.5\n9007199254740992.0\n"
        );
        // arithmetic and comparisons with a float are computed values, as floats compute them
        assert_eq!(
            run("SELECT i * 1.0 AS m, i = 9007199254740992.0 AS eq FROM t WHERE i > 5").await.unwrap(),
            "m,eq\n9007199254740992.0,true\n"
        );
        // integers that a float holds exactly pass, nulls stay null, names stay as written
        assert_eq!(
            run("SELECT coalesce(i, 0.5), greatest(j, f) AS g FROM t WHERE i IS NULL OR i < 5 ORDER BY g NULLS LAST")
                .await
                .unwrap(),
            "\"coalesce(t.i,Float64(0.5))\",g\n3.0,4.0\n0.5,\n"
        );
        assert_eq!(
            run("SELECT i FROM t WHERE i < 5 UNION ALL SELECT f FROM t WHERE f IS NULL ORDER BY i").await.unwrap(),
            "i\n3.0\n\"\"\n"
        );
        // a written cast in a grouping, its name kept for the projection above
        assert_eq!(
            run("SELECT CAST(j AS DOUBLE) AS g, count(*) AS n FROM t GROUP BY CAST(j AS DOUBLE) ORDER BY g NULLS LAST")
                .await
                .unwrap(),
            "g,n\n4.0,1\n16777217.0,1\n,1\n"
        );
    }
}
