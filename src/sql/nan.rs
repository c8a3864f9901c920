//! One NaN for the floats SQL computes.
//!
//! `0.0 / 0.0`, `'Infinity'::double - 'Infinity'::double` and `sqrt(-1.0)` give, on x86, a NaN
//! with the sign bit set. Arrow compares floats in IEEE 754's total order, where that NaN is
//! neither equal to the NaN read from data (`'NaN'`, the sign bit clear) nor above every
//! number: `a / b = 'NaN'::double` was false for `0.0 / 0.0`, `GROUP BY a / b` and
//! `count(DISTINCT a / b)` split NaNs that print alike, and a join on a ratio missed them.
//!
//! An analyzer rule ([`OneNaN`]) wraps each float arithmetic (`+`, `-`, `*`, `/`, `%` and
//! unary `-`, one call around a whole chain of them) and each call of a function that returns a
//! float in [`PositiveNan`] (`positive_nan(x)`), which gives NaN as the one quiet NaN with the
//! sign bit clear and every other value as it is. A release stores that
//! NaN too ([`crate::core::values::positive_nan`]). Column names stay as written (`a / b`).

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result as DfResult};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};

/// The SQL name of [`PositiveNan`].
const NAME: &str = "positive_nan";

/// `positive_nan(x)`: a float `x` with each NaN made the quiet NaN with the sign bit clear;
/// `Float32` or `Float64` in, the same type out.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PositiveNan {
    signature: Signature,
}

impl ScalarUDFImpl for PositiveNan {
    fn name(&self) -> &str {
        NAME
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(arg_types.first().cloned().unwrap_or(DataType::Float64))
    }
    // null exactly where its argument may be: the plan's schema, made before the call was put
    // in, stays true
    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> DfResult<arrow::datatypes::FieldRef> {
        let (data_type, nullable) = match args.arg_fields.first() {
            Some(f) => (f.data_type().clone(), f.is_nullable()),
            None => (DataType::Float64, true),
        };
        Ok(Arc::new(arrow::datatypes::Field::new(NAME, data_type, nullable)))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        match args.args.into_iter().next() {
            Some(ColumnarValue::Array(a)) => Ok(ColumnarValue::Array(crate::core::values::positive_nan(&a))),
            Some(ColumnarValue::Scalar(s)) => Ok(ColumnarValue::Scalar(match s {
                datafusion::common::ScalarValue::Float64(Some(v)) if v.is_nan() => {
                    datafusion::common::ScalarValue::Float64(Some(f64::NAN))
                }
                datafusion::common::ScalarValue::Float32(Some(v)) if v.is_nan() => {
                    datafusion::common::ScalarValue::Float32(Some(f32::NAN))
                }
                other => other,
            })),
            None => Err(datafusion::error::DataFusionError::Plan(format!("{NAME} takes one float"))),
        }
    }
}

/// [`PositiveNan`] as a function to register and call.
pub fn function() -> Arc<ScalarUDF> {
    static F: std::sync::OnceLock<Arc<ScalarUDF>> = std::sync::OnceLock::new();
    F.get_or_init(|| {
        Arc::new(ScalarUDF::new_from_impl(PositiveNan {
            signature: Signature::uniform(1, vec![DataType::Float32, DataType::Float64], Volatility::Immutable),
        }))
    })
    .clone()
}

/// The analyzer rule that wraps the floats SQL computes in [`PositiveNan`] (see the module
/// docs). It runs after type coercion, which gives each operator its operands' type.
#[derive(Debug)]
pub struct OneNaN;

impl datafusion::optimizer::AnalyzerRule for OneNaN {
    fn analyze(&self, plan: LogicalPlan, _: &datafusion::config::ConfigOptions) -> DfResult<LogicalPlan> {
        let f = function();
        plan.transform_up_with_subqueries(|node| {
            super::overflow::rewrite_expressions(node, |e, schema| e.transform_up(|x| wrap(x, schema, &f)))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "one NaN"
    }
}

/// `x` in a call of `f` when it computes a `Float32` or `Float64`: an arithmetic operator, a
/// unary minus, or a function other than `f` itself.
///
/// The rule runs bottom-up, so an operand that computes a float is already a call of `f`, and
/// an operand that computes and is not one computes no float. After type coercion a float
/// operator has two float operands. Deciding from the operands that way types each node once:
/// typing every operator whole typed its operands again at each level, and planning a chain
/// of N float `+` grew with N squared or worse.
///
/// An operator or unary minus takes the calls off its operands before it is wrapped itself:
/// a NaN among them gives a NaN whatever its sign, which the one call around the whole
/// arithmetic makes positive. `x + x + x` becomes `positive_nan(x + x + x)`, not a call at
/// every level, whose names DataFusion builds as text at each level.
fn wrap(x: Expr, schema: &DFSchema, f: &Arc<ScalarUDF>) -> DfResult<Transformed<Expr>> {
    let float = match &x {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Plus | Operator::Minus | Operator::Multiply | Operator::Divide | Operator::Modulo,
            right,
        }) => is_float(left, schema) && is_float(right, schema),
        // `-x` flips the sign bit of a NaN too
        Expr::Negative(inner) => is_float(inner, schema),
        Expr::ScalarFunction(s) if s.func.name() != NAME => {
            matches!(type_of(&x, schema), Ok(DataType::Float32 | DataType::Float64))
        }
        _ => false,
    };
    if !float {
        return Ok(Transformed::no(x));
    }
    let x = match x {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            Expr::BinaryExpr(BinaryExpr::new(Box::new(unwrapped(*left)), op, Box::new(unwrapped(*right))))
        }
        Expr::Negative(inner) => Expr::Negative(Box::new(unwrapped(*inner))),
        other => other,
    };
    Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(f.clone(), vec![x]))))
}

/// `e` without a call of [`PositiveNan`] around it.
fn unwrapped(e: Expr) -> Expr {
    match e {
        Expr::ScalarFunction(mut s) if s.func.name() == NAME && s.args.len() == 1 => s.args.remove(0),
        other => other,
    }
}

/// Whether the operand `e` of a node [`wrap`] visits is a float, given that its own operands
/// were visited first: a call of [`PositiveNan`] is one, an operator, unary minus or function
/// left unwrapped is not, and anything else (a column, a literal, a cast) is typed.
fn is_float(e: &Expr, schema: &DFSchema) -> bool {
    match e {
        Expr::ScalarFunction(s) => s.func.name() == NAME,
        Expr::BinaryExpr(BinaryExpr {
            op: Operator::Plus | Operator::Minus | Operator::Multiply | Operator::Divide | Operator::Modulo,
            ..
        })
        | Expr::Negative(_) => false,
        _ => has_float_type(e, schema),
    }
}

/// The type of `e` in `schema`, as [`ExprSchemable::get_type`] gives it, without the names
/// DataFusion 55 builds on the way: its `get_type` of a function call makes the text of the
/// call's whole name, and of each argument's, so typing each call of a nested chain
/// (`checked_add(checked_add(…), k)`, the integer `+` of hundreds of terms) grew with the cube
/// of its length. The rule runs after type coercion: arguments have the types the functions
/// take.
fn type_of(e: &Expr, schema: &DFSchema) -> DfResult<DataType> {
    match e {
        Expr::ScalarFunction(s) => {
            let fields = s
                .args
                .iter()
                .map(|a| type_of(a, schema).map(|t| Arc::new(arrow::datatypes::Field::new("", t, true))))
                .collect::<DfResult<Vec<_>>>()?;
            let literals: Vec<Option<&datafusion::common::ScalarValue>> =
                s.args.iter().map(|a| if let Expr::Literal(v, _) = a { Some(v) } else { None }).collect();
            let args = datafusion::logical_expr::ReturnFieldArgs { arg_fields: &fields, scalar_arguments: &literals };
            Ok(s.func.return_field_from_args(args)?.data_type().clone())
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (l, r) = (type_of(left, schema)?, type_of(right, schema)?);
            datafusion::logical_expr::binary::BinaryTypeCoercer::new(&l, op, &r).get_result_type()
        }
        Expr::Alias(a) => type_of(&a.expr, schema),
        Expr::Negative(inner) => type_of(inner, schema),
        other => other.get_type(schema),
    }
}

/// Whether `e` types as `Float32` or `Float64` in `schema`.
fn has_float_type(e: &Expr, schema: &DFSchema) -> bool {
    matches!(e.get_type(schema), Ok(DataType::Float32 | DataType::Float64))
}
