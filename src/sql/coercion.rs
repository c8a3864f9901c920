//! Values that SQL's type coercion would change fail rather than change.
//!
//! DataFusion gives both sides of a `UNION`, the arguments of `coalesce`, the branches of a
//! `CASE` one type, and casts each value to it. Some values do not survive the cast: a
//! `DOUBLE` holds integers exactly only up to 2^53 (`SELECT i FROM a UNION ALL SELECT f FROM b`
//! turned 9007199254740993 into 9007199254740992), the text `007` beside a float became 7,
//! `1e-20` beside a `DECIMAL(10, 1)` became 0, the default `0.5` of `lag(i, 1, 0.5)` became 0,
//! with no word. runpack says it instead.
//!
//! Two analyzer rules do it:
//! - [`MarkWrittenCasts`], before type coercion, marks the casts the SQL wrote
//!   (`CAST(i AS DOUBLE)`, `i::float`): those change values because they were asked to.
//! - [`CheckCoercedCasts`], after it, makes each cast that coercion added an [`ExactCast`]
//!   call, where the value is kept as it is and the cast can change it: a `SELECT`'s (or a
//!   `UNION`'s) output column, a row of `VALUES`, a grouping key, a window function's value,
//!   and, on the way there, the arguments of `coalesce`, `nullif`, `nvl`, `nvl2`, `ifnull`,
//!   `greatest`, `least`, of the functions that build lists, structs and maps (`[i, 0.5]`,
//!   `array_append`, `named_struct`, …), of `lag`, `lead`, `first_value`, `last_value` and
//!   `nth_value`, a `CASE`'s `THEN` or `ELSE`. It refuses a default of `lag` or `lead` that
//!   their own cast would change, and puts the written casts back as they were.
//!
//! [`ExactCast`] casts, casts the result back, and fails at the first value that does not come
//! back the same. Casts that cannot change a value are left as they are: to a wider integer or
//! float, of an integer to a float that holds all of its values, to text.
//!
//! Left to change as SQL has it: arithmetic and comparisons with a float (`i * 0.5`,
//! `i > 1e3`, `coalesce(i, 0.5) > 10`), the arguments of other functions and of aggregates
//! (`stddev(i)`, `sqrt(i)`, `sum(coalesce(i, 0.5))`) and an ordering, whose results are
//! computed values, not the value kept; the grouping expressions of `ROLLUP`, `CUBE` and
//! `GROUPING SETS`, which `grouping(…)` matches as written.

use std::sync::Arc;

use arrow::array::Array;
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::{Alias, Case, Cast, ScalarFunction, WindowFunction};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};

/// The functions whose result holds their arguments as they are.
const KEEPING: [&str; 22] = [
    "coalesce",
    "nullif",
    "nvl",
    "nvl2",
    "ifnull",
    "greatest",
    "least",
    "make_array",
    "make_list",
    "array_concat",
    "array_cat",
    "list_concat",
    "list_cat",
    "array_append",
    "array_push_back",
    "list_append",
    "array_prepend",
    "array_push_front",
    "list_prepend",
    "array_union",
    "named_struct",
    "struct",
];

/// The window functions whose result is a value of their arguments (and `lag`'s and `lead`'s
/// default).
const KEEPING_WINDOWS: [&str; 5] = ["lag", "lead", "first_value", "last_value", "nth_value"];

/// The name of the marker [`MarkWrittenCasts`] puts in place of a written cast, for
/// [`CheckCoercedCasts`] to put back.
const WRITTEN: &str = "written_cast";

/// The name of the checking function.
const EXACT: &str = "exact_cast";

/// A written cast, held while type coercion runs (it casts as `CAST` does).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Written {
    to: FieldRef,
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

/// The analyzer rule, first of all, that marks each cast the SQL wrote (see the module docs),
/// in every node of a plan and in its subqueries, keeping each expression's name.
#[derive(Debug)]
pub struct MarkWrittenCasts;

impl datafusion::optimizer::AnalyzerRule for MarkWrittenCasts {
    fn analyze(&self, plan: LogicalPlan, _: &datafusion::config::ConfigOptions) -> DfResult<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            super::overflow::rewrite_expressions(node, |e, _| {
                e.transform_up(|e| match e {
                    Expr::Cast(Cast { expr, field }) => {
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
                })
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "mark written casts"
    }
}

/// The analyzer rule, after type coercion, that checks the casts coercion added (see the
/// module docs) and puts back the casts [`MarkWrittenCasts`] marked.
#[derive(Debug)]
pub struct CheckCoercedCasts;

impl datafusion::optimizer::AnalyzerRule for CheckCoercedCasts {
    fn analyze(&self, plan: LogicalPlan, _: &datafusion::config::ConfigOptions) -> DfResult<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            // kept as they are: an output column of a projection (a union's coerced inputs are
            // projections), a row of VALUES, a grouping key, a window function's value (an
            // aggregate's or another window function's arguments are not: see [`checked`])
            let kept = matches!(
                node,
                LogicalPlan::Projection(_)
                    | LogicalPlan::Values(_)
                    | LogicalPlan::Aggregate(_)
                    | LogicalPlan::Window(_)
            );
            super::overflow::rewrite_expressions(node, |e, schema| checked(e, kept, schema))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "check coerced casts"
    }
}

/// `args`, each checked as a value `kept` ([`checked`]), and whether one changed.
fn checked_all(args: Vec<Expr>, kept: bool, schema: &DFSchema) -> DfResult<(Vec<Expr>, bool)> {
    let mut transformed = false;
    let args = args
        .into_iter()
        .map(|a| {
            let a = checked(a, kept, schema)?;
            transformed |= a.transformed;
            Ok(a.data)
        })
        .collect::<DfResult<Vec<_>>>()?;
    Ok((args, transformed))
}

/// `e` with its written casts put back and, where its value is `kept`, a coerced cast that can
/// change a value made an [`ExactCast`] call.
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
            match from {
                Some(from) if can_change(&from, field.data_type()) => {
                    Ok(Transformed::yes(exact_cast_call(inner.data, field.data_type())))
                }
                _ => Ok(inner.update_data(|expr| Expr::Cast(Cast::new_from_field(Box::new(expr), field)))),
            }
        }
        Expr::ScalarFunction(ScalarFunction { func, args }) if KEEPING.contains(&func.name()) => {
            let (args, transformed) = checked_all(args, kept, schema)?;
            Ok(Transformed::new_transformed(Expr::ScalarFunction(ScalarFunction { func, args }), transformed))
        }
        Expr::WindowFunction(w) if KEEPING_WINDOWS.contains(&w.fun.name()) => {
            let WindowFunction { fun, params } = *w;
            let mut params = params;
            let (args, transformed) = checked_all(std::mem::take(&mut params.args), kept, schema)?;
            // `lag` and `lead` cast their default (a literal) to the value's type as they run:
            // refused here where that would change it (left as written otherwise: two calls
            // that write it apart stay two)
            if matches!(fun.name(), "lag" | "lead")
                && let [value, _, Expr::Literal(default, _)] = args.as_slice()
                && let Ok(to) = value.get_type(schema)
                && can_change(&default.data_type(), &to)
                && !default.is_null()
            {
                let cast = default.cast_to(&to).map_err(|e| {
                    DataFusionError::Plan(format!(
                        "{}: its default {default} ({}) is no value of {to}, the type of the values it stands in for: \
                         {e}",
                        fun.name(),
                        default.data_type()
                    ))
                })?;
                if cast.cast_to(&default.data_type()).ok().as_ref() != Some(default) {
                    return Err(DataFusionError::Plan(format!(
                        "{}: its default {default} ({}) would become {}, the type of the values it stands in for, \
                         without a word: write the default as a value of that type",
                        fun.name(),
                        default.data_type(),
                        shown_as(&cast.to_string(), &default.to_string(), &to)
                    )));
                }
            }
            params.args = args;
            let w = Expr::WindowFunction(Box::new(WindowFunction { fun, params }));
            // the partition, order and frame are the window's own
            let rest = w.map_children(|c| checked(c, false, schema))?;
            Ok(Transformed::new_transformed(rest.data, transformed || rest.transformed))
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
                when_then_expr.into_iter().map(|(w, t)| Ok((go(w, false)?, go(t, kept)?))).collect::<DfResult<_>>()?;
            let else_expr = else_expr.map(|e| go(e, kept)).transpose()?;
            Ok(Transformed::new_transformed(Expr::Case(Case { expr, when_then_expr, else_expr }), transformed))
        }
        // subqueries are their own plans, which the rule visits
        e => e.map_children(|c| checked(c, false, schema)),
    }
}

/// `e` cast to `to` by an [`ExactCast`] call, named in its messages as the SQL writes it.
fn exact_cast_call(e: Expr, to: &DataType) -> Expr {
    let label = e.human_display().to_string();
    let args = vec![
        e,
        Expr::Literal(ScalarValue::Utf8(Some(label)), None),
        Expr::Literal(ScalarValue::Utf8(Some(to.to_string())), None),
    ];
    Expr::ScalarFunction(ScalarFunction::new_udf(exact_cast_udf(), args))
}

/// Whether a cast from `from` to `to` can give a value other than the one it was: `false` for
/// a type to itself, to text, from null, to a wider integer or float, of an integer to a
/// float whose mantissa holds all of its values, of text to other text or to a date or time.
fn can_change(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    let text = |t: &DataType| matches!(t, Utf8 | LargeUtf8 | Utf8View);
    let int_bits = |t: &DataType| match t {
        Int8 => Some((8, true)),
        UInt8 => Some((8, false)),
        Int16 => Some((16, true)),
        UInt16 => Some((16, false)),
        Int32 => Some((32, true)),
        UInt32 => Some((32, false)),
        Int64 => Some((64, true)),
        UInt64 => Some((64, false)),
        _ => None,
    };
    let float_mantissa = |t: &DataType| match t {
        Float16 => Some(11),
        Float32 => Some(24),
        Float64 => Some(53),
        _ => None,
    };
    if from == to || text(to) || *from == Null {
        return false;
    }
    match (int_bits(from), int_bits(to), float_mantissa(from), float_mantissa(to)) {
        // a wider integer holds every value: of the same sign, or unsigned into a signed wider
        (Some((f, fs)), Some((t, ts)), _, _) => !((fs == ts && t >= f) || (!fs && ts && t > f)),
        (Some((f, _)), None, _, Some(m)) => f > m,
        (None, None, Some(f), Some(t)) => t < f,
        _ => true,
    }
}

/// The checking function, made once.
fn exact_cast_udf() -> Arc<ScalarUDF> {
    static F: std::sync::OnceLock<Arc<ScalarUDF>> = std::sync::OnceLock::new();
    F.get_or_init(|| Arc::new(exact_cast())).clone()
}

/// `exact_cast(value, label, type)` as a function to register.
fn exact_cast() -> ScalarUDF {
    ScalarUDF::new_from_impl(ExactCast { signature: Signature::any(3, Volatility::Immutable) })
}

/// The checking functions, to register on a session (an executor of a cluster runs them).
pub fn functions() -> Vec<ScalarUDF> {
    vec![exact_cast()]
}

/// `exact_cast(value, label, type)`: `value` cast to `type` (the text of an Arrow type:
/// `Float64`, `List(Float64)`), where each value comes back the same when cast back; `label`
/// names `value` in the message. Added by [`CheckCoercedCasts`], not meant to be written.
///
/// Errors: a planning error where the arguments are not a value and two texts (a type Arrow
/// reads); an execution error naming the first value that would change, `label`, what it
/// would become and the ways out; the cast's own error where it fails (`CAST('a' AS DOUBLE)`).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ExactCast {
    signature: Signature,
}

/// The type an [`ExactCast`] call's third argument names.
fn target(arg: Option<&ScalarValue>) -> DfResult<DataType> {
    match arg {
        Some(ScalarValue::Utf8(Some(t))) => t
            .parse::<DataType>()
            .map_err(|e| DataFusionError::Plan(format!("{EXACT}: the third argument, {t:?}, is no Arrow type: {e}"))),
        _ => Err(DataFusionError::Plan(format!(
            "{EXACT} is the check runpack adds where SQL casts a value to mix it with others; it takes a value, its \
             name and a type, as texts"
        ))),
    }
}

impl ScalarUDFImpl for ExactCast {
    fn name(&self) -> &str {
        EXACT
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> DfResult<DataType> {
        Err(DataFusionError::Internal(format!("{EXACT}: typed from its arguments")))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let to = target(args.scalar_arguments.get(2).copied().flatten())?;
        if !matches!(args.scalar_arguments.get(1).copied().flatten(), Some(ScalarValue::Utf8(Some(_)))) {
            return target(None).map(|t| Arc::new(Field::new(EXACT, t, true)));
        }
        // null where the value is: as the cast it stands for
        let nullable = args.arg_fields.first().is_none_or(|f| f.is_nullable());
        Ok(Arc::new(Field::new(EXACT, to, nullable)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [value, ColumnarValue::Scalar(ScalarValue::Utf8(Some(label))), ColumnarValue::Scalar(to)] =
            args.args.as_slice()
        else {
            return target(None).map(|_| ColumnarValue::Scalar(ScalarValue::Null));
        };
        let to = target(Some(to))?;
        let scalar = matches!(value, ColumnarValue::Scalar(_));
        let given = value.to_array(args.number_rows.max(1))?;
        // the cast as SQL does it: a value it cannot cast is an error
        let options = arrow::compute::CastOptions { safe: false, ..Default::default() };
        let cast = match arrow::compute::cast_with_options(&given, &to, &options) {
            Ok(cast) => cast,
            Err(e) => return Err(beyond(&given, &to, label).unwrap_or_else(|| e.into())),
        };
        if let Some(i) = first_changed(&given, &cast)? {
            let was = ScalarValue::try_from_array(&given, i)?;
            let became = ScalarValue::try_from_array(&cast, i)?;
            let from = given.data_type();
            let why = match (from.is_integer(), &to) {
                (true, DataType::Float64) => " (a DOUBLE holds every integer up to 2^53, 9007199254740992)",
                (true, DataType::Float32) => " (a FLOAT holds every integer up to 2^24, 16777216)",
                (true, DataType::Float16) => " (a half float holds every integer up to 2^11, 2048)",
                _ => "",
            };
            return Err(DataFusionError::Execution(format!(
                "{label}: the value {was} ({from}) would become {}{why}: SQL gives it that type to mix it with other \
                 values (a UNION, CASE, coalesce, greatest, a list, …), which would change it without a word. Give \
                 the values one type yourself with CAST where a change is meant (casting the other side keeps this \
                 one), or keep them apart",
                shown_as(&exact_text(&became), &was.to_string(), &to)
            )));
        }
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&cast, 0)?)
        } else {
            ColumnarValue::Array(cast)
        })
    }
}

/// The error of an [`ExactCast`] whose number does not fit the type SQL mixes it in
/// (`CASE … THEN 1.5::DECIMAL(10, 2) ELSE 1e300 END`: 1e300 beyond DECIMAL(33, 15)): the
/// first such value, named as the values that would change are. `None` where the value is
/// not a number, or none fails on its own (the cast's own error is kept then).
fn beyond(given: &arrow::array::ArrayRef, to: &DataType, label: &str) -> Option<DataFusionError> {
    let numeric = |t: &DataType| t.is_numeric();
    if !numeric(given.data_type()) || !numeric(to) {
        return None;
    }
    let cast = arrow::compute::cast(given, to).ok()?;
    let i = (0..given.len()).find(|&i| given.is_valid(i) && cast.is_null(i))?;
    let was = ScalarValue::try_from_array(given, i).ok()?;
    // a literal's label is its value: said once; a float in its shortest form (1e300)
    let label = if label == was.to_string() { "a value written in the SQL" } else { label };
    // (an expression of long literals is shown cut: 1e300 written with every digit is 301 long)
    let label = match label.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &label[..at]),
        None => label.to_string(),
    };
    let (was, why) = match was {
        ScalarValue::Float64(Some(v)) if !v.is_finite() => (format!("{v:?}"), "a DECIMAL holds no NaN or infinity"),
        ScalarValue::Float32(Some(v)) if !v.is_finite() => (format!("{v:?}"), "a DECIMAL holds no NaN or infinity"),
        ScalarValue::Float64(Some(v)) => (format!("{v:?}"), "a DOUBLE holds numbers this large"),
        ScalarValue::Float32(Some(v)) => (format!("{v:?}"), "a DOUBLE holds numbers this large"),
        other => (other.to_string(), "a DOUBLE holds numbers this large"),
    };
    let why = if why.starts_with("a DECIMAL") {
        format!("{why}; CAST(x AS DOUBLE) on each side keeps it")
    } else {
        format!("CAST(x AS DOUBLE) on each side: {why}")
    };
    Some(DataFusionError::Execution(format!(
        "{label}: the value {was} ({}) does not fit {to}: SQL gives it that type to mix it with other values (a UNION, \
         CASE, coalesce, greatest, a list, …). Give the values one type yourself with CAST: {why}",
        given.data_type()
    )))
}

/// Whether every value of integer array `a` is within ±2^`bits` (a float of that mantissa
/// holds it); `false` for another type.
fn within(a: &arrow::array::ArrayRef, bits: u32) -> bool {
    use arrow::array::AsArray;
    use arrow::datatypes::{Int32Type, Int64Type, UInt32Type, UInt64Type};
    let limit = 1u64 << bits;
    match a.data_type() {
        DataType::Int64 => a.as_primitive::<Int64Type>().values().iter().all(|v| v.unsigned_abs() <= limit),
        DataType::UInt64 => a.as_primitive::<UInt64Type>().values().iter().all(|v| *v <= limit),
        DataType::Int32 => a.as_primitive::<Int32Type>().values().iter().all(|v| u64::from(v.unsigned_abs()) <= limit),
        DataType::UInt32 => a.as_primitive::<UInt32Type>().values().iter().all(|v| u64::from(*v) <= limit),
        _ => false,
    }
}

/// `became` (of type `to`) as a message shows it beside `was`: with its type, and said to be
/// another number where the two read the same (`0.1` as a FLOAT).
/// `v` as text, a whole float with every digit it holds (`9223372036854775808`, where Arrow
/// shows the shortest text that reads back, `9223372036854776000`).
fn exact_text(v: &ScalarValue) -> String {
    match v {
        // (Rust's own float text is the shortest too: the digits through i128, which holds
        // every whole float below 2^127 exactly)
        ScalarValue::Float64(Some(f)) if f.fract() == 0.0 && f.abs() < 1.7e38 => format!("{}", *f as i128),
        ScalarValue::Float32(Some(f)) if f.fract() == 0.0 && f.abs() < 1.7e38 => format!("{}", *f as i128),
        other => other.to_string(),
    }
}

fn shown_as(became: &str, was: &str, to: &DataType) -> String {
    if became == was { format!("{became} ({to}), another number shown the same") } else { format!("{became} ({to})") }
}

/// The first row whose value in `given` does not come back from `cast` (the same values cast
/// to another type) cast back: a null where a value was, or another value. `None` where every
/// value comes back, or where Arrow cannot compare the type.
fn first_changed(given: &arrow::array::ArrayRef, cast: &arrow::array::ArrayRef) -> DfResult<Option<usize>> {
    // integers a float holds: every value within its mantissa (the common case, checked
    // without casting back)
    if let Some(bits) = match cast.data_type() {
        DataType::Float64 => Some(53),
        DataType::Float32 => Some(24),
        _ => None,
    } && within(given, bits)
    {
        return Ok(None);
    }
    // text read as a date or a time: the same instant however it is written (`2024-01-01` and
    // `2024-01-01T00:00:00`), so the instants are compared, in nanoseconds
    if matches!(given.data_type(), DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
        && cast.data_type().is_temporal()
    {
        let tz = match cast.data_type() {
            DataType::Timestamp(_, tz) => tz.clone(),
            _ => None,
        };
        let fine = DataType::Timestamp(arrow::datatypes::TimeUnit::Nanosecond, tz);
        let (Ok(written), Ok(kept)) = (arrow::compute::cast(given, &fine), arrow::compute::cast(cast, &fine)) else {
            return Ok(None);
        };
        let Ok(same) = arrow::array::make_comparator(written.as_ref(), kept.as_ref(), Default::default()) else {
            return Ok(None);
        };
        return Ok((0..given.len())
            .find(|&i| written.is_valid(i) && (kept.is_null(i) || same(i, i) != std::cmp::Ordering::Equal)));
    }
    let back = match arrow::compute::cast(cast, given.data_type()) {
        Ok(back) => back,
        // a type Arrow does not cast back: left unchecked, as SQL has it
        Err(_) => return Ok(None),
    };
    let Ok(same) = arrow::array::make_comparator(given.as_ref(), back.as_ref(), Default::default()) else {
        return Ok(None);
    };
    Ok((0..given.len()).find(|&i| {
        given.is_valid(i) && (cast.is_null(i) || back.is_null(i) || same(i, i) != std::cmp::Ordering::Equal)
    }))
}

#[cfg(test)]
mod tests {
    use super::super::session::csv_after;

    /// The result of `sql` over `t(i, j, f, s)` (Int64, Int32, Float64, Utf8; 2^53 + 1,
    /// 2^24 + 1, 0.5, `007` in the first row) as CSV lines with a header, or the error's message.
    async fn run(sql: &str) -> Result<String, String> {
        let setup = "CREATE TABLE t AS SELECT * FROM (VALUES (9007199254740993, arrow_cast(16777217, 'Int32'), 0.5, '007'), \
             (3, arrow_cast(4, 'Int32'), 1.5, '3'), (NULL, NULL, NULL, NULL)) AS v(i, j, f, s)";
        csv_after(setup, sql).await
    }

    #[tokio::test]
    async fn a_number_beyond_the_mixed_type_is_named() {
        let e = run("SELECT CASE WHEN f > 1 THEN f * 1e300 ELSE arrow_cast(1.5, 'Decimal128(20, 2)') END AS c FROM t")
            .await
            .unwrap_err();
        assert!(e.contains("the value 1.5e300 (Float64) does not fit Decimal128("), "{e}");
        assert!(e.contains("CAST(x AS DOUBLE) on each side: a DOUBLE holds numbers this large"), "{e}");
        let e =
            run("SELECT CASE WHEN f > 1 THEN f / 0.0 * 0.0 ELSE arrow_cast(1.5, 'Decimal128(20, 2)') END AS c FROM t")
                .await
                .unwrap_err();
        assert!(e.contains("a DECIMAL holds no NaN or infinity; CAST(x AS DOUBLE) on each side keeps it"), "{e}");
        let e = run("SELECT 1e300 AS c UNION ALL SELECT arrow_cast(1.5, 'Decimal128(20, 2)')").await.unwrap_err();
        assert!(e.contains("a value written in the SQL: the value 1e300 (Float64) does not fit"), "{e}");
    }

    #[tokio::test]
    async fn a_value_coercion_would_change_fails_naming_it() {
        let rounded = [
            "SELECT i FROM t UNION ALL SELECT f FROM t",
            "SELECT f FROM t UNION SELECT i FROM t",
            "SELECT coalesce(i, 0.5) AS c FROM t",
            "SELECT nullif(i, 0.5) AS c FROM t",
            "SELECT CASE WHEN f > 1 THEN f ELSE i END AS k FROM t",
            "SELECT CASE WHEN f < 1 THEN i ELSE 0.5 END AS k FROM t",
            "SELECT greatest(i, 0.5) AS g FROM t",
            "SELECT [i, 0.5] AS l FROM t",
            // in a subquery, a grouping key, a window's value
            "SELECT (SELECT coalesce(i, 0.5) FROM t WHERE i > 5) AS m",
            "SELECT coalesce(i, f) AS k, count(*) AS n FROM t GROUP BY coalesce(i, f)",
            "SELECT first_value(coalesce(i, 0.5)) OVER (ORDER BY f) AS v FROM t",
            "SELECT max(x) AS m FROM (SELECT i AS x FROM t UNION ALL SELECT f FROM t)",
            // inside lists and structs
            "SELECT [i] AS l FROM t UNION ALL SELECT [f] FROM t",
            "SELECT coalesce([i], [f]) AS l FROM t",
            "SELECT array_append([i], f) AS l FROM t",
            "SELECT named_struct('a', i) AS s FROM t UNION ALL SELECT named_struct('a', f) FROM t",
        ];
        for sql in rounded {
            let e = run(sql).await.unwrap_err();
            assert!(e.contains("9007199254740993") && e.contains("would become"), "{sql}: {e}");
            assert!(e.contains("without a word"), "{sql}: {e}");
        }
        let e = run("SELECT i FROM t UNION ALL SELECT f FROM t").await.unwrap_err();
        assert!(
            e.contains("t.i: the value 9007199254740993 (Int64) would become 9007199254740992 (Float64) (a DOUBLE holds every integer up to 2^53"),
            "{e}"
        );
        // the value it would become with every digit: 2^63, not Arrow's shortest text
        let e = run("SELECT 9223372036854775807 AS x UNION ALL SELECT f FROM t").await.unwrap_err();
        assert!(e.contains("would become 9223372036854775808 (Float64)"), "{e}");
        // a 32-bit integer beside a FLOAT: 2^24 + 1 has no exact FLOAT
        let e = run("SELECT j FROM t UNION ALL SELECT arrow_cast(f, 'Float32') FROM t").await.unwrap_err();
        assert!(e.contains("t.j: the value 16777217 (Int32) would become"), "{e}");
        assert!(e.contains("up to 2^24"), "{e}");
        // text beside a float, a float beside a decimal, a lag's default beside integers
        let e = run("SELECT coalesce(s, f) AS c FROM t").await.unwrap_err();
        assert!(e.contains("t.s: the value 007 (Utf8) would become 7"), "{e}");
        let e = run("SELECT arrow_cast(1.5, 'Decimal128(10, 1)') AS d UNION ALL SELECT 1e-20").await.unwrap_err();
        assert!(e.contains("the value 1e-20") || e.contains("the value 0.00000000000000000001"), "{e}");
        let e = run("SELECT lag(i, 1, 0.5) OVER (ORDER BY f) AS l FROM t").await.unwrap_err();
        assert!(e.contains("lag: its default 0.5 (Float64) would become 0 (Int64)"), "{e}");
        let e = run("SELECT lead(f, 1, 9007199254740993) OVER (ORDER BY f) AS l FROM t").await.unwrap_err();
        assert!(e.contains("lead: its default 9007199254740993 (Int64) would become"), "{e}");
        // a default that the type holds is kept
        assert_eq!(
            run("SELECT lag(f, 1, 2) OVER (ORDER BY f) AS l FROM t WHERE f IS NOT NULL").await.unwrap(),
            "l\n2.0\n0.5\n"
        );
        // a written cast reads the text as asked
        assert_eq!(run("SELECT CAST(s AS DOUBLE) AS d FROM t WHERE s = '007'").await.unwrap(), "d\n7.0\n");
    }

    #[tokio::test]
    async fn a_full_join_using_is_refused_and_an_inner_one_kept() {
        for sql in ["SELECT * FROM t a FULL JOIN t b USING (i)", "SELECT * FROM t a NATURAL FULL JOIN t b"] {
            let e = run(sql).await.unwrap_err();
            assert!(e.contains("FULL JOIN … USING (k) and NATURAL FULL JOIN"), "{sql}: {e}");
        }
        assert!(run("SELECT a.i, b.f FROM t a LEFT JOIN t b USING (i)").await.is_ok());
        assert_eq!(run("SELECT count(*) AS n FROM t a JOIN t b USING (i)").await.unwrap(), "n\n2\n");
    }

    #[tokio::test]
    async fn an_outer_join_using_key_from_the_side_that_lacks_rows_is_refused() {
        // `*` takes k from the side whose name sorts first (here the right side, `a`), an
        // unqualified k from the left side
        let setup = "CREATE TABLE z (k INT, x TEXT) AS VALUES (1, 'x'), (2, 'y'); \
                     CREATE TABLE a (k INT, y TEXT) AS VALUES (1, 'p'), (3, 'q')";
        let run = |sql: &'static str| csv_after(setup, sql);
        for (sql, lacking, keep) in [
            ("SELECT * FROM z LEFT JOIN a USING (k) ORDER BY x", "from a", "Write z.k instead of k"),
            ("SELECT * FROM z NATURAL LEFT JOIN a ORDER BY x", "from a", "Write z.k instead of k"),
            ("SELECT k, x, y FROM z RIGHT JOIN a USING (k) ORDER BY y", "from z", "Write a.k instead of k"),
            ("SELECT k, count(*) FROM a RIGHT JOIN z USING (k) GROUP BY k", "from a", "Write z.k instead of k"),
            ("SELECT n FROM (SELECT *, 1 AS n FROM z LEFT JOIN a USING (k))", "from a", "Write z.k"),
            // the other side named somewhere does not make an unqualified k read it
            ("SELECT k FROM z RIGHT JOIN a USING (k) WHERE z.k IS NULL", "from z", "Write a.k instead of k"),
            ("SELECT z.*, k AS kk FROM z RIGHT JOIN a USING (k)", "from z", "Write a.k"),
            // a later USING joins on the left side's k
            ("SELECT a.y FROM z RIGHT JOIN a USING (k) JOIN a AS b USING (k)", "would join on z.k", "ON and a.k"),
        ] {
            let e = run(sql).await.unwrap_err();
            assert!(e.contains(lacking) && e.contains(keep), "{sql}: {e}");
        }
        // the side named, or the side that keeps the rows read, gives SQL's answer
        assert_eq!(
            run("SELECT z.k, x, y FROM z LEFT JOIN a USING (k) ORDER BY x").await.unwrap(),
            "k,x,y\n1,x,p\n2,y,\n"
        );
        assert_eq!(
            run("SELECT k, x, y FROM z LEFT JOIN a USING (k) ORDER BY x").await.unwrap(),
            "k,x,y\n1,x,p\n2,y,\n"
        );
        assert_eq!(run("SELECT * FROM a LEFT JOIN z USING (k) ORDER BY y").await.unwrap(), "k,y,x\n1,p,x\n3,q,\n");
        assert_eq!(
            run("SELECT a.k, x, y FROM z RIGHT JOIN a USING (k) ORDER BY y").await.unwrap(),
            "k,x,y\n1,x,p\n3,,q\n"
        );
        // the other side's k, named, is SQL's too: null where that side lacks the row
        assert_eq!(
            run("SELECT z.*, a.* FROM z LEFT JOIN a USING (k) ORDER BY x").await.unwrap(),
            "k,x,k,y\n1,x,1,p\n2,y,,\n"
        );
        assert_eq!(run("SELECT a.k FROM z LEFT JOIN a USING (k) ORDER BY x").await.unwrap(), "k\n1\n\"\"\n");
        // a k of another branch, subquery or alias is not the join's
        for (sql, want) in [
            ("SELECT k FROM a UNION ALL SELECT z.k FROM z LEFT JOIN a USING (k) ORDER BY k", "k\n1\n1\n2\n3\n"),
            ("SELECT z.k, (SELECT max(k) FROM a) AS m FROM z LEFT JOIN a USING (k) ORDER BY k", "k,m\n1,3\n2,3\n"),
            ("SELECT k FROM (SELECT z.k FROM z LEFT JOIN a USING (k)) a ORDER BY k", "k\n1\n2\n"),
            ("SELECT z.k, a.y FROM z LEFT JOIN a USING (k) LEFT JOIN a AS b USING (k) ORDER BY k", "k,y\n1,p\n2,\n"),
        ] {
            assert_eq!(run(sql).await.unwrap(), want, "{sql}");
        }
    }

    #[tokio::test]
    async fn describe_gives_the_types_a_query_runs_with() {
        assert_eq!(
            run("DESCRIBE SELECT 1 AS x UNION ALL SELECT 0.5").await.unwrap(),
            "column_name,data_type,is_nullable\nx,Float64,NO\n"
        );
        let got = run("DESC SELECT CASE WHEN i > 1 THEN i ELSE 0.5 END AS c FROM t").await.unwrap();
        assert!(got.starts_with("column_name,data_type,is_nullable\nc,Float64,"), "{got}");
        // a query that running refuses, DESCRIBE refuses
        let e = run("DESCRIBE SELECT i FROM t a RIGHT JOIN t b USING (i)").await.unwrap_err();
        assert!(e.contains("RIGHT JOIN … USING (i) would be read from a"), "{e}");
    }

    #[tokio::test]
    async fn the_check_is_no_function_to_call_and_leaves_grouping_sets_alone() {
        let e = run("SELECT exact_cast(i, 1, 2) FROM t").await.unwrap_err();
        assert!(e.contains("exact_cast is the check runpack adds"), "{e}");
        // ROLLUP over a coerced expression plans as DataFusion plans it
        assert!(
            run("SELECT coalesce(j, 0.5) AS c, count(*) AS n FROM t GROUP BY ROLLUP(coalesce(j, 0.5))").await.is_ok()
        );
        assert!(
            run("SELECT f, CAST(j AS DOUBLE) AS c, count(*) AS n FROM t GROUP BY ROLLUP(f, CAST(j AS DOUBLE))")
                .await
                .is_ok()
        );
        // a literal's union keeps its nullability
        let e = run("SELECT max(x) AS m FROM (SELECT 9007199254740993 AS x UNION ALL SELECT 0.5)").await.unwrap_err();
        assert!(e.contains("the value 9007199254740993"), "{e}");
        assert_eq!(run("SELECT max(x) AS m FROM (SELECT 1 AS x UNION ALL SELECT 0.5)").await.unwrap(), "m\n1.0\n");
        // a row the WHERE leaves out is not computed (DataFusion had moved the projection below
        // the filter), nor its overflow
        assert_eq!(run("SELECT greatest(i, f) AS g FROM t WHERE i < 5").await.unwrap(), "g\n3.0\n");
        assert_eq!(
            run("SELECT i + 9223372036854775800 AS g FROM t WHERE i < 5").await.unwrap(),
            "g\n9223372036854775803\n"
        );
        // compared, ordered, summed: computed as floats, as SQL computes them
        for sql in [
            "SELECT count(*) AS n FROM t WHERE coalesce(i, 0.5) > 10",
            "SELECT sum(coalesce(i, 0.5)) AS s FROM t",
            "SELECT i FROM t ORDER BY coalesce(i, f) DESC",
            "SELECT sqrt(coalesce(i, 0.5)) AS r FROM t",
        ] {
            assert!(run(sql).await.is_ok(), "{sql}: {:?}", run(sql).await);
        }
        // lag's default as written, twice: two windows, as DataFusion has them
        let sql =
            "SELECT lag(f, 1, 0) OVER (ORDER BY f) AS a, lag(f, 1, 0.0) OVER (ORDER BY f) AS b FROM t WHERE f > 1";
        assert_eq!(run(sql).await.unwrap(), "a,b\n0.0,0.0\n");
        // a time of day lost to a date is a change; a date written as text is the same instant
        // as a timestamp
        let e = run("SELECT arrow_cast('2024-01-01', 'Date32') AS d UNION ALL SELECT '2024-01-01T12:30:00'")
            .await
            .unwrap_err();
        assert!(e.contains("the value 2024-01-01T12:30:00 (Utf8) would become 2024-01-01 (Date32)"), "{e}");
        let sql = "SELECT max(x) AS m FROM (SELECT arrow_cast('2024-01-01T00:00:00', 'Timestamp(Nanosecond, None)') AS x \
                   UNION ALL SELECT '2024-01-02')";
        assert_eq!(run(sql).await.unwrap(), "m\n2024-01-02T00:00:00\n");
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
