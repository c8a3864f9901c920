//! SQL functions runpack adds to DataFusion for pipelines and queries.
//!
//! In: SQL calls. Out: scalar values. Registered on every session runpack creates.
//!
//! `sum` and `avg` over floating-point values replace DataFusion's own in moving window frames
//! (`ROWS 2 PRECEDING`), which add each row entering the frame and subtract each row leaving
//! it: one NaN or infinity made every later frame NaN, and a large value left the small ones
//! beside it lost (`1e20, 1, 1` summed to 0 once `1e20` left). runpack's keep count of the
//! NaNs and infinities in the frame and the exact sum of the finite values, rounded once.
//!
//! `sum` of `Int64` and `UInt64` fails when the sum leaves the type's range
//! (`src/sql/intsum.rs`); DataFusion's wraps around. So do integer `+`, `-` and `*`
//! (`checked_add`, `checked_subtract`, `checked_multiply`: `src/sql/overflow.rs`).
//!
//! `min` and `max` replace DataFusion's own: their grouped fast path for floating-point
//! columns compares with a partial order and so may skip a NaN or keep the wrong zero
//! depending on row order (apache/datafusion#24432). runpack's grouped `min` and `max` of
//! `Float64` compare in IEEE 754's total order, as DataFusion's accumulator without groups
//! does: with `GROUP BY`, `max(x)` is NaN when a NaN is in the group, as it is without.
//! Other float types have no grouped path.
//!
//! `array_sum` (and `list_sum`) of a list of integers gives an integer: `Int64`, or `UInt64`
//! for `UInt64` elements, failing when the sum leaves the type's range. DataFusion 55's
//! converts the integers to `Float64` first, and `2^53 + 1` became `2^53` without a word.
//! Lists of other types are DataFusion's.
//!
//! Tinker URIs (grammar of the tinker SDK's `ParsedCheckpointTinkerPath.from_tinker_path`:
//! `tinker://<training_run_id>/<weights|sampler_weights>/<checkpoint name>`, exactly three
//! parts); each returns NULL when the text does not follow the grammar:
//! - `tinker_run_id(uri)`: the first part, as written (a doubled `:train:0:train:0` suffix is
//!   kept: repairing it is the pipeline's decision);
//! - `tinker_kind(uri)`: `weights` or `sampler_weights`;
//! - `tinker_checkpoint(uri)`: the checkpoint name (`000020`, `final`).
//!
//! JSON text columns (fields typed `any`): `json_typeof(text)` (`null`, `boolean`, `number`,
//! `string`, `array`, `object`), `json_int(text)` (the integer, else NULL), `json_float(text)`
//! (any number, else NULL; `"NaN"`-style strings are not numbers), `json_str(text)` (the
//! string, else NULL), `json_get(text, key)` (the JSON text of an object's member, or of an
//! array's element when `key` is a 0-based index such as `'2'`; else NULL).
//!
//! W&B: `wandb_run_id(text)`: the 8-character W&B run id (`[a-z0-9]{8}`) in a run URL
//! (`https://wandb.ai/<entity>/<project>/runs/<id>`) or a bare id, else NULL.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Builder, Int64Builder, StringBuilder};
use arrow::datatypes::DataType;
use datafusion::common::Result as DfResult;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF, Volatility, create_udf};
use datafusion::prelude::SessionContext;
use serde_json::Value;

/// Registers every function on `ctx`.
pub fn register(ctx: &SessionContext) {
    for f in super::overflow::functions().into_iter().chain(super::coercion::functions()) {
        ctx.register_udf(f);
    }
    ctx.register_udf(super::nan::function().as_ref().clone());
    ctx.register_udf(super::subquery::function().as_ref().clone());
    for f in
        [datafusion::functions_aggregate::min_max::min_udaf(), datafusion::functions_aggregate::min_max::max_udaf()]
    {
        let max = f.name() == "max";
        ctx.register_udaf(datafusion::logical_expr::AggregateUDF::new_from_impl(Patched(f, Patch::TotalOrder { max })));
    }
    for (f, avg) in [
        (datafusion::functions_aggregate::sum::sum_udaf(), false),
        (datafusion::functions_aggregate::average::avg_udaf(), true),
    ] {
        ctx.register_udaf(datafusion::logical_expr::AggregateUDF::new_from_impl(Patched(f, Patch::WindowSum { avg })));
    }
    let array_sum = datafusion::functions_nested::array_sum::array_sum_udf();
    ctx.register_udf(ScalarUDF::new_from_impl(IntegerListSum(array_sum.as_ref().clone())));
    ctx.register_udf(str_fn("tinker_run_id", |s| tinker_part(s, 0)));
    ctx.register_udf(str_fn("tinker_kind", |s| tinker_part(s, 1)));
    ctx.register_udf(str_fn("tinker_checkpoint", |s| tinker_part(s, 2)));
    ctx.register_udf(str_fn("json_typeof", |s| {
        // the JSON checked whole without reading its numbers (`1e400` is a number beyond the
        // float range, valid JSON), typed by its first character
        let raw = serde_json::from_str::<&serde_json::value::RawValue>(s).ok()?;
        let t = match raw.get().as_bytes().first()? {
            b'n' => "null",
            b't' | b'f' => "boolean",
            b'"' => "string",
            b'[' => "array",
            b'{' => "object",
            _ => "number",
        };
        Some(t.to_string())
    }));
    ctx.register_udf(str_fn("json_str", |s| match serde_json::from_str::<Value>(s) {
        Ok(Value::String(x)) => Some(x),
        _ => None,
    }));
    ctx.register_udf(str_fn("wandb_run_id", wandb_run_id));
    ctx.register_udf(int_fn("json_int", |s| match serde_json::from_str::<Value>(s) {
        // serde_json reads the integer `-0` as the float -0.0
        Ok(Value::Number(n)) => n.as_i64().or_else(|| (s.trim() == "-0").then_some(0)),
        _ => None,
    }));
    ctx.register_udf(float_fn("json_float", |s| match serde_json::from_str::<Value>(s) {
        // a number below the smallest float is NULL, as one beyond the largest is (not 0)
        Ok(Value::Number(n)) => n.as_f64().filter(|f| *f != 0.0 || !nonzero_digits(s)),
        _ => None,
    }));
    ctx.register_udf(create_udf(
        "json_get",
        vec![DataType::Utf8, DataType::Utf8],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(|args: &[ColumnarValue]| -> DfResult<ColumnarValue> {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let (texts, keys) = (arrays[0].as_string::<i32>(), arrays[1].as_string::<i32>());
            let mut b = StringBuilder::new();
            for i in 0..texts.len() {
                let v = (texts.is_valid(i) && keys.is_valid(i)).then(|| json_member(texts.value(i), keys.value(i)));
                b.append_option(v.flatten());
            }
            Ok(ColumnarValue::Array(Arc::new(b.finish()) as ArrayRef))
        }),
    ));
}

/// The JSON text of member `key` of the object `text`, or of element `key` (a 0-based index)
/// of the array `text`, as written there: a number keeps every digit (a float would round an
/// integer beyond 2^53). `None` for a member that is absent or `null`, or text that is no
/// object or array.
fn json_member(text: &str, key: &str) -> Option<String> {
    use serde_json::value::RawValue;
    let t = text.trim_start();
    let member: &RawValue = if t.starts_with('{') {
        let members: std::collections::HashMap<String, &RawValue> = serde_json::from_str(t).ok()?;
        members.get(key).copied()?
    } else if t.starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(t).ok()?;
        // an index as JSON writes one: digits, no sign, no leading zero (`+1` and `01` are none)
        let canonical =
            key == "0" || !key.is_empty() && !key.starts_with('0') && key.bytes().all(|b| b.is_ascii_digit());
        items.get(canonical.then(|| key.parse::<usize>().ok()).flatten()?).copied()?
    } else {
        return None;
    };
    (member.get() != "null").then(|| member.get().to_string())
}

/// Whether the digits of the JSON number `text` before its exponent hold one that is not 0.
fn nonzero_digits(text: &str) -> bool {
    text.trim().split(['e', 'E']).next().unwrap_or("").bytes().any(|b| (b'1'..=b'9').contains(&b))
}

fn tinker_part(s: &str, i: usize) -> Option<String> {
    let rest = s.strip_prefix("tinker://")?;
    let parts: Vec<&str> = rest.split('/').collect();
    if parts.len() != 3
        || !(parts[1] == "weights" || parts[1] == "sampler_weights")
        || parts.iter().any(|p| p.is_empty())
    {
        return None;
    }
    Some(parts[i].to_string())
}

/// The W&B run id in a URL or bare text (8 lowercase letters or digits).
pub fn wandb_run_id(s: &str) -> Option<String> {
    let is_id = |t: &str| t.len() == 8 && t.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let t = s.trim().trim_end_matches('/');
    if is_id(t) {
        return Some(t.to_string());
    }
    // a run's page is <entity>/<project>/runs/<id>: the `runs` after two segments at least, so
    // that an entity or project named `runs` is not taken for it
    let path = t.split(['?', '#']).next()?;
    let path = match path.split_once("://") {
        Some((_, rest)) => rest.split_once('/').map_or("", |(_, p)| p),
        None => path,
    };
    let segments: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    (2..segments.len().saturating_sub(1))
        .find(|&i| segments[i] == "runs" && is_id(segments[i + 1]))
        .map(|i| segments[i + 1].to_string())
}

fn str_fn(name: &str, f: fn(&str) -> Option<String>) -> ScalarUDF {
    create_udf(
        name,
        vec![DataType::Utf8],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(move |args: &[ColumnarValue]| -> DfResult<ColumnarValue> {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let a = arrays[0].as_string::<i32>();
            let mut b = StringBuilder::with_capacity(a.len(), a.len() * 8);
            for i in 0..a.len() {
                b.append_option(if a.is_valid(i) { f(a.value(i)) } else { None });
            }
            Ok(ColumnarValue::Array(Arc::new(b.finish())))
        }),
    )
}

fn int_fn(name: &str, f: fn(&str) -> Option<i64>) -> ScalarUDF {
    create_udf(
        name,
        vec![DataType::Utf8],
        DataType::Int64,
        Volatility::Immutable,
        Arc::new(move |args: &[ColumnarValue]| -> DfResult<ColumnarValue> {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let a = arrays[0].as_string::<i32>();
            let mut b = Int64Builder::with_capacity(a.len());
            for i in 0..a.len() {
                b.append_option(if a.is_valid(i) { f(a.value(i)) } else { None });
            }
            Ok(ColumnarValue::Array(Arc::new(b.finish())))
        }),
    )
}

fn float_fn(name: &str, f: fn(&str) -> Option<f64>) -> ScalarUDF {
    create_udf(
        name,
        vec![DataType::Utf8],
        DataType::Float64,
        Volatility::Immutable,
        Arc::new(move |args: &[ColumnarValue]| -> DfResult<ColumnarValue> {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let a = arrays[0].as_string::<i32>();
            let mut b = Float64Builder::with_capacity(a.len());
            for i in 0..a.len() {
                b.append_option(if a.is_valid(i) { f(a.value(i)) } else { None });
            }
            Ok(ColumnarValue::Array(Arc::new(b.finish())))
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each frame's value of a moving `sum` (or `avg`) over `rows` rows ending at each value.
    fn moving(values: &[f64], rows: usize, avg: bool) -> Vec<Option<f64>> {
        let mut acc = SlidingFloatSum::new(avg);
        let mut out = Vec::new();
        for (i, &v) in values.iter().enumerate() {
            acc.add(v, 1);
            if i >= rows {
                acc.add(values[i - rows], -1);
            }
            out.push(acc.value());
        }
        out
    }

    #[tokio::test]
    async fn json_numbers_are_read_as_written() {
        let sql = "SELECT json_int('-0') AS a, json_int(' 7 ') AS b, json_int('-0.0') AS c, json_int('1e2') AS d, \
                   json_int('9223372036854775808') AS e, json_float('-0') AS f, json_float('1e-400') AS g";
        let got = super::super::session::csv_after("SELECT 1", sql).await.unwrap();
        assert_eq!(got, "a,b,c,d,e,f,g\n0,7,,,,-0.0,\n");
        // valid JSON beyond the float range is typed all the same
        let sql = "SELECT json_typeof('1e400') AS a, json_typeof(' [1e400]') AS b, json_typeof('{\"a\": 1e400}') AS c, \
                   json_typeof('\"x\"') AS d, json_typeof('false') AS e, json_typeof('null') AS f, json_typeof('[1,') AS g, \
                   json_typeof('nul') AS h";
        let got = super::super::session::csv_after("SELECT 1", sql).await.unwrap();
        assert_eq!(got, "a,b,c,d,e,f,g,h\nnumber,array,object,string,boolean,null,,\n");
    }

    #[test]
    fn moving_sums_are_exact_sums_rounded_once() {
        // the large values leave the small ones' sum intact
        let mut v = vec![3.4e38, 3.3e38];
        v.extend([0.5; 8]);
        assert_eq!(moving(&v, 3, false)[4..], [Some(1.5); 6]);
        assert_eq!(moving(&v, 3, true)[4..], [Some(0.5); 6]);
        assert_eq!(moving(&[1e36, 1e18, 1.0, 2.0], 1, false), [Some(1e36), Some(1e18), Some(1.0), Some(2.0)]);
        assert_eq!(moving(&[1e20, 1.0, 1.0, -1e20, 5.0], 5, false)[3..], [Some(2.0), Some(7.0)]);
        // two values: their sum as IEEE 754 rounds it (once, to nearest, ties to even),
        // subnormal, huge and overflowing sums included
        let mut next = crate::core::testing::xorshift(0x2545_f491_4f6c_dd1d_u64);
        let values: Vec<f64> = (0..20_000)
            .map(|_| {
                let r = next();
                match r % 4 {
                    // any bits but NaN and infinity
                    0 => f64::from_bits(r >> 2 & !(0x7ff << 52) | ((r >> 8) % 0x7ff) << 52),
                    1 => f64::from_bits(r >> 12),
                    2 => (r >> 11) as f64 * if r & 1 == 0 { 1e-300 } else { 1e290 },
                    _ => -((r >> 11) as f64),
                }
            })
            .collect();
        let got = moving(&values, 2, false);
        for i in 1..values.len() {
            let want = values[i - 1] + values[i];
            assert_eq!(got[i].map(f64::to_bits), Some(want.to_bits()), "{} + {}", values[i - 1], values[i]);
        }
        // zeros: -0.0 alone sums to -0.0, as IEEE 754 has it
        assert_eq!(
            moving(&[-0.0, -0.0, 1.0, -1.0], 2, false).iter().map(|x| x.unwrap().to_bits()).collect::<Vec<_>>(),
            [(-0.0f64).to_bits(), (-0.0f64).to_bits(), 1.0f64.to_bits(), 0.0f64.to_bits()]
        );
        // a mean whose sum is beyond the floats
        assert_eq!(moving(&[1.7e308, 1.7e308, 1.0], 3, true)[..2], [Some(1.7e308), Some(1.7e308)]);
        assert_eq!(moving(&[1.7e308, 1.7e308], 2, false)[1], Some(f64::INFINITY));
        // non-finite values counted, not added
        let with_nan = moving(&[1.0, f64::NAN, 2.0, 3.0], 2, false);
        assert!(with_nan[1].is_some_and(f64::is_nan) && with_nan[2].is_some_and(f64::is_nan));
        assert_eq!((with_nan[0], with_nan[3]), (Some(1.0), Some(5.0)));
    }

    #[tokio::test]
    async fn grouped_float_min_and_max_are_the_ungrouped_ones() {
        use arrow::array::{Float64Array, Int64Array, RecordBatch, StringArray};
        use arrow::datatypes::{Field, Schema};
        let mut next = crate::core::testing::xorshift(0x9e37_79b9_7f4a_7c15_u64);
        let kinds = [f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, 1.5, -2.5, f64::MAX, f64::MIN];
        let (mut k, mut v, mut i) = (Vec::new(), Vec::new(), Vec::new());
        for n in 0..4_000 {
            let r = next();
            // group "e" has nulls only, group "n" one NaN among numbers
            let key = ["a", "b", "c", "d", "e", "n"][(r % 6) as usize];
            k.push(key);
            v.push(match key {
                "e" => None,
                "n" => Some(if n == 2_000 { f64::NAN } else { (r >> 20) as f64 }),
                _ if (r >> 8).is_multiple_of(5) => None,
                _ => Some(kinds[((r >> 12) % kinds.len() as u64) as usize]),
            });
            i.push((r >> 32) as i64 % 10);
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, false),
            Field::new("v", DataType::Float64, true),
            Field::new("i", DataType::Int64, false),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(StringArray::from(k)), Arc::new(Float64Array::from(v)), Arc::new(Int64Array::from(i))],
        )
        .unwrap();
        let parts = (0..4).map(|p| (0..10).map(|c| batch.slice(p * 1_000 + c * 100, 100)).collect()).collect();
        let ctx = super::super::session::session_with_partitions(4, true);
        let table = datafusion::datasource::MemTable::try_new(schema, parts).unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
        let bits = |batches: &[RecordBatch], col: usize| -> Vec<Option<u64>> {
            batches
                .iter()
                .flat_map(|b| b.column(col).as_primitive::<arrow::datatypes::Float64Type>().iter().collect::<Vec<_>>())
                .map(|x| x.map(f64::to_bits))
                .collect()
        };
        let exprs = "max(v), min(v), max(v) FILTER (WHERE i > 3), min(v) FILTER (WHERE i > 3)";
        let grouped = format!("SELECT k, {exprs} FROM t GROUP BY k ORDER BY k");
        let (_, got) = super::super::session::run(&ctx, &grouped).await.unwrap();
        let (_, plan) = super::super::session::run(&ctx, &format!("EXPLAIN {grouped}")).await.unwrap();
        let plan = arrow::util::pretty::pretty_format_batches(&plan).unwrap().to_string();
        assert!(plan.contains("AggregateExec"), "{plan}");
        let keys: Vec<String> = got
            .iter()
            .flat_map(|b| b.column(0).as_string::<i32>().iter().map(|s| s.unwrap().to_string()).collect::<Vec<_>>())
            .collect();
        assert_eq!(keys, ["a", "b", "c", "d", "e", "n"]);
        for (row, key) in keys.iter().enumerate() {
            // no GROUP BY: DataFusion's own accumulator, batch by batch
            let (_, want) =
                super::super::session::run(&ctx, &format!("SELECT {exprs} FROM t WHERE k = '{key}'")).await.unwrap();
            for col in 0..4 {
                assert_eq!(bits(&got, col + 1)[row], bits(&want, col)[0], "group {key}, column {col}");
            }
        }
        // what the groups hold: a NaN is the greatest value; a group of nulls is NULL
        let (_, n) = super::super::session::run(&ctx, "SELECT max(v) FROM t GROUP BY k HAVING k = 'n'").await.unwrap();
        assert!(bits(&n, 0)[0].is_some_and(|b| f64::from_bits(b).is_nan()));
        let (_, e) = super::super::session::run(&ctx, "SELECT max(v) FROM t GROUP BY k HAVING k = 'e'").await.unwrap();
        assert_eq!(bits(&e, 0), [None]);
    }

    #[test]
    fn json_members_keep_their_text_and_floats_that_do_not_fit_are_null() {
        assert_eq!(
            json_member(r#"{"a": {"b": 12345678901234567890123}}"#, "a").as_deref(),
            Some(r#"{"b": 12345678901234567890123}"#)
        );
        assert_eq!(json_member(r#"{"n": 1.50, "z": null}"#, "n").as_deref(), Some("1.50"));
        assert_eq!(json_member(r#"{"n": 1.50, "z": null}"#, "z"), None);
        assert_eq!(json_member(r#"[1, "two", [3]]"#, "2").as_deref(), Some("[3]"));
        assert_eq!(json_member("[10, 20]", "0").as_deref(), Some("10"));
        assert_eq!(
            (json_member("[10, 20]", "+1"), json_member("[10, 20]", "01"), json_member("[10, 20]", "")),
            (None, None, None)
        );
        assert_eq!((json_member("[1]", "x"), json_member("7", "0"), json_member("{", "a")), (None, None, None));
        assert!(nonzero_digits("1e-400") && nonzero_digits("-0.001e-999") && !nonzero_digits("0.0e5"));
    }

    #[test]
    fn parses_tinker_and_wandb_ids() {
        let u = "tinker://39aa5eb2-e234-5a95-ab68-896e4cac8c45:train:0/sampler_weights/final";
        assert_eq!(tinker_part(u, 0).unwrap(), "39aa5eb2-e234-5a95-ab68-896e4cac8c45:train:0");
        assert_eq!(tinker_part(u, 1).unwrap(), "sampler_weights");
        assert_eq!(tinker_part("tinker://x/other/final", 1), None);
        assert_eq!(tinker_part("training_interrupted", 0), None);
        assert_eq!(wandb_run_id("https://wandb.ai/e/p/runs/gj72vya7").unwrap(), "gj72vya7");
        // an entity named `runs` and a project that looks like an id
        assert_eq!(wandb_run_id("https://wandb.ai/runs/rlhfexp1/runs/abcd1234").unwrap(), "abcd1234");
        assert_eq!(wandb_run_id("https://wandb.ai/e/runs/runs/abcd1234/logs?x=1").unwrap(), "abcd1234");
        assert_eq!(wandb_run_id("e/p/runs/abcd1234").unwrap(), "abcd1234");
        assert_eq!(wandb_run_id("https://wandb.ai/runs/abcd1234"), None);
        assert_eq!(wandb_run_id("https://wandb.ai/e/p/runs/56b99b24-03bd-5d00-ae23-831933ef53b2"), None);
    }
}

/// What runpack changes in one of DataFusion's aggregate functions (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Patch {
    /// `min` or `max` (`max` true): the grouped accumulator of `Float64` results is
    /// [`TotalOrderGroups`]; for other float results it is turned off.
    TotalOrder { max: bool },
    /// `sum` (`avg` false) or `avg`: the moving-frame accumulator for `Float64` results is
    /// [`SlidingFloatSum`].
    WindowSum { avg: bool },
}

/// Whether `aggregate` is runpack's `sum` or `avg` with a `Float64` result and one argument,
/// without `DISTINCT`: `Some(avg)`, else `None`. Its moving-frame accumulator is a
/// [`SlidingFloatSum`] when that argument is a `Float64` too (the caller checks it against
/// the input's schema).
pub(super) fn moving_float_sum(
    aggregate: &datafusion::physical_expr::aggregate::AggregateFunctionExpr,
) -> Option<bool> {
    let inner: &dyn std::any::Any = aggregate.fun().inner().as_ref();
    let Patched(_, Patch::WindowSum { avg }) = inner.downcast_ref::<Patched>()? else {
        return None;
    };
    let floats = aggregate.field().data_type() == &DataType::Float64 && aggregate.expressions().len() == 1;
    (floats && !aggregate.is_distinct() && !aggregate.ignore_nulls()).then_some(*avg)
}

/// One of DataFusion's aggregate functions with a [`Patch`]; everything else is the wrapped
/// function's.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Patched(Arc<datafusion::logical_expr::AggregateUDF>, Patch);

impl Patched {
    /// Whether this is `sum` of integers (a `return_type` of `Int64` or `UInt64`), summed by
    /// [`super::intsum`].
    fn sums_integers(&self, return_type: &DataType) -> bool {
        self.1 == (Patch::WindowSum { avg: false }) && super::intsum::checked(return_type)
    }

    /// Whether this is `sum` of integers without `DISTINCT`.
    fn integer_sum(&self, args: &datafusion::logical_expr::function::AccumulatorArgs) -> bool {
        self.sums_integers(args.return_field.data_type()) && !args.is_distinct
    }

    /// `Some(avg)` when this is `sum` or `avg` of `Float64` values into a `Float64`, without
    /// `DISTINCT`: its partial sums are added in one order ([`super::floatsum`]).
    fn float_sum(&self, args: &datafusion::logical_expr::function::AccumulatorArgs) -> Option<bool> {
        let Patch::WindowSum { avg } = self.1 else { return None };
        let floats = args.return_field.data_type() == &DataType::Float64
            && args.expr_fields.len() == 1
            && args.expr_fields[0].data_type() == &DataType::Float64;
        (floats && !args.is_distinct).then_some(avg)
    }
}

impl datafusion::logical_expr::AggregateUDFImpl for Patched {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn aliases(&self) -> &[String] {
        self.0.aliases()
    }
    fn signature(&self) -> &datafusion::logical_expr::Signature {
        self.0.signature()
    }
    fn return_type(&self, arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        self.0.return_type(arg_types)
    }
    fn state_fields(
        &self,
        args: datafusion::logical_expr::function::StateFieldsArgs,
    ) -> datafusion::error::Result<Vec<arrow::datatypes::FieldRef>> {
        // a partition's partial sum of integers may leave the result's type and come back
        if self.sums_integers(args.return_type()) && !args.is_distinct {
            return Ok(vec![super::intsum::state_field(args.name)]);
        }
        self.0.state_fields(args)
    }
    fn accumulator(
        &self,
        args: datafusion::logical_expr::function::AccumulatorArgs,
    ) -> datafusion::error::Result<Box<dyn datafusion::logical_expr::Accumulator>> {
        if self.integer_sum(&args) {
            return Ok(Box::new(super::intsum::CheckedSum::new(args.return_field.data_type())));
        }
        if self.sums_integers(args.return_field.data_type()) && args.is_distinct {
            let data_type = args.return_field.data_type().clone();
            return Ok(Box::new(super::intsum::CheckedDistinctSum::new(self.0.accumulator(args)?, &data_type)));
        }
        if let Some(avg) = self.float_sum(&args) {
            return Ok(Box::new(super::floatsum::FloatSum::new(avg)));
        }
        self.0.accumulator(args)
    }
    fn groups_accumulator_supported(&self, args: datafusion::logical_expr::function::AccumulatorArgs) -> bool {
        if self.integer_sum(&args) || self.float_sum(&args).is_some() {
            return true;
        }
        match (self.1, args.return_field.data_type()) {
            (Patch::TotalOrder { .. }, DataType::Float64) => true,
            (Patch::TotalOrder { .. }, DataType::Float16 | DataType::Float32) => false,
            _ => self.0.groups_accumulator_supported(args),
        }
    }
    fn create_groups_accumulator(
        &self,
        args: datafusion::logical_expr::function::AccumulatorArgs,
    ) -> datafusion::error::Result<Box<dyn datafusion::logical_expr::GroupsAccumulator>> {
        if self.integer_sum(&args) {
            return Ok(Box::new(super::intsum::CheckedSumGroups::new(args.return_field.data_type())));
        }
        if let Some(avg) = self.float_sum(&args) {
            return Ok(Box::new(super::floatsum::FloatSumGroups::new(avg)));
        }
        match (self.1, args.return_field.data_type()) {
            (Patch::TotalOrder { max }, DataType::Float64) => Ok(Box::new(TotalOrderGroups::new(max))),
            _ => self.0.create_groups_accumulator(args),
        }
    }
    fn create_sliding_accumulator(
        &self,
        args: datafusion::logical_expr::function::AccumulatorArgs,
    ) -> datafusion::error::Result<Box<dyn datafusion::logical_expr::Accumulator>> {
        if let Patch::WindowSum { avg } = self.1 {
            let floats = args.return_field.data_type() == &DataType::Float64
                && args.expr_fields.first().is_some_and(|f| f.data_type() == &DataType::Float64);
            if floats && !args.is_distinct {
                return Ok(Box::new(SlidingFloatSum::new(avg)));
            }
        }
        if self.integer_sum(&args) {
            return Ok(Box::new(super::intsum::CheckedSum::new(args.return_field.data_type())));
        }
        self.0.create_sliding_accumulator(args)
    }
    fn is_descending(&self) -> Option<bool> {
        self.0.is_descending()
    }
    fn order_sensitivity(&self) -> datafusion::logical_expr::utils::AggregateOrderSensitivity {
        self.0.inner().order_sensitivity()
    }
    fn coerce_types(&self, arg_types: &[DataType]) -> datafusion::error::Result<Vec<DataType>> {
        self.0.coerce_types(arg_types)
    }
    fn reverse_expr(&self) -> datafusion::logical_expr::ReversedUDAF {
        self.0.reverse_udf()
    }
    fn value_from_stats(
        &self,
        args: &datafusion::logical_expr::StatisticsArgs,
    ) -> Option<datafusion::common::ScalarValue> {
        self.0.value_from_stats(args)
    }
    fn default_value(&self, data_type: &DataType) -> datafusion::error::Result<datafusion::common::ScalarValue> {
        self.0.default_value(data_type)
    }
    fn simplify_expr_op_literal(
        &self,
        agg_function: &datafusion::logical_expr::expr::AggregateFunction,
        arg: &datafusion::logical_expr::Expr,
        op: datafusion::logical_expr::Operator,
        lit: &datafusion::logical_expr::Expr,
        arg_is_left: bool,
    ) -> datafusion::error::Result<Option<datafusion::logical_expr::Expr>> {
        // DataFusion rewrites `sum(x + 1), sum(x + 2)` as `sum(x) + count(x)`, … : then
        // `sum(x)` can overflow where `sum(x + 1)` does not, and the `+` after it wraps (and
        // floats round differently). runpack sums what the SQL says.
        if let Patch::WindowSum { avg: false } = self.1 {
            return Ok(None);
        }
        self.0.simplify_expr_op_literal(agg_function, arg, op, lit, arg_is_left)
    }
    fn documentation(&self) -> Option<&datafusion::logical_expr::Documentation> {
        self.0.documentation()
    }
    fn set_monotonicity(&self, data_type: &DataType) -> datafusion::logical_expr::SetMonotonicity {
        self.0.inner().set_monotonicity(data_type)
    }
}

/// `min` or `max` of `Float64` values per group, in the total order of IEEE 754
/// (`f64::total_cmp`: -NaN < -inf < … < -0.0 < 0.0 < … < inf < NaN), which is the order of
/// DataFusion's own accumulator without groups: the same value for a group whatever the
/// order of its rows, a NaN included. Nulls are left out; a group without a value is NULL.
/// Its state is the value itself, as DataFusion's.
#[derive(Debug)]
struct TotalOrderGroups {
    max: bool,
    /// Each group's value so far (`None`: no value yet).
    values: Vec<Option<f64>>,
}

impl TotalOrderGroups {
    fn new(max: bool) -> Self {
        Self { max, values: Vec::new() }
    }

    /// Folds `values` (one per row) into the groups of `groups`, leaving out the rows
    /// `filter` does not keep.
    fn fold(
        &mut self,
        values: &[ArrayRef],
        groups: &[usize],
        filter: Option<&arrow::array::BooleanArray>,
        total: usize,
    ) -> DfResult<()> {
        self.values.resize(total, None);
        let a = values[0].as_primitive::<arrow::datatypes::Float64Type>();
        let keep = if self.max { std::cmp::Ordering::Greater } else { std::cmp::Ordering::Less };
        for (row, &g) in groups.iter().enumerate() {
            if a.is_null(row) || filter.is_some_and(|f| !f.is_valid(row) || !f.value(row)) {
                continue;
            }
            let v = a.value(row);
            let slot = &mut self.values[g];
            // as DataFusion's accumulator: a value equal in the order (the same bits) is not taken
            if slot.is_none_or(|cur| v.total_cmp(&cur) == keep) {
                *slot = Some(v);
            }
        }
        Ok(())
    }
}

impl datafusion::logical_expr::GroupsAccumulator for TotalOrderGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&arrow::array::BooleanArray>,
        total_num_groups: usize,
    ) -> DfResult<()> {
        self.fold(values, group_indices, opt_filter, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: datafusion::logical_expr::EmitTo) -> DfResult<ArrayRef> {
        Ok(Arc::new(arrow::array::Float64Array::from(emit_to.take_needed(&mut self.values))))
    }

    fn state(&mut self, emit_to: datafusion::logical_expr::EmitTo) -> DfResult<Vec<ArrayRef>> {
        Ok(vec![self.evaluate(emit_to)?])
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> DfResult<()> {
        self.fold(values, group_indices, None, total_num_groups)
    }

    /// Each row as its own group: its value, or NULL where `opt_filter` leaves the row out.
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&arrow::array::BooleanArray>,
    ) -> DfResult<Vec<ArrayRef>> {
        let a = values[0].as_primitive::<arrow::datatypes::Float64Type>();
        let kept: arrow::array::Float64Array = (0..a.len())
            .map(|row| {
                let keep = a.is_valid(row) && opt_filter.is_none_or(|f| f.is_valid(row) && f.value(row));
                keep.then(|| a.value(row))
            })
            .collect();
        Ok(vec![Arc::new(kept)])
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.values.capacity() * std::mem::size_of::<Option<f64>>()
    }
}

/// The sum (or mean) of the `Float64` values in a moving window frame: rows enter with
/// `update_batch` and leave with `retract_batch`, in the same order. NaNs and infinities are
/// counted, not added, so that one leaving the frame leaves no trace. The finite values are
/// summed exactly ([`super::exact::ExactSum`]): a value leaving takes away exactly what it
/// brought, whatever the sizes of the others (a compensated sum keeps one float of
/// correction, which a large value's rounding fills, so that the small values that follow
/// are lost: `3.4e38, 3.3e38, 0.5, 0.5, 0.5` summed over 3 rows gave 0 once the large ones
/// had left). The frame's sum is the exact sum rounded once; its mean, that sum over the
/// count. The frame's result: NULL without a non-null value, NaN with a NaN or both
/// infinities, an infinity with one, else the sum (or mean). A mean whose frame's sum is
/// beyond the floats is the exact sum scaled down by 2^64, over the count, scaled back, so
/// that it is finite whenever it can be.
#[derive(Debug, Default)]
pub(super) struct SlidingFloatSum {
    /// A mean rather than a sum.
    avg: bool,
    /// Non-null values in the frame.
    count: u64,
    nan: u64,
    pos_inf: u64,
    neg_inf: u64,
    /// The exact sum of the finite values in the frame.
    exact: super::exact::ExactSum,
}

impl SlidingFloatSum {
    /// An empty frame's sum (`avg` false) or mean.
    pub(super) fn new(avg: bool) -> Self {
        Self { avg, ..Default::default() }
    }

    /// The frame's value, as [`datafusion::logical_expr::Accumulator::evaluate`] gives it.
    pub(super) fn value(&mut self) -> Option<f64> {
        self.frame(self.avg)
    }

    /// The frame's sum, or (`mean`) its mean.
    fn frame(&mut self, mean: bool) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        Some(if self.nan > 0 || (self.pos_inf > 0 && self.neg_inf > 0) {
            f64::NAN
        } else if self.pos_inf > 0 {
            f64::INFINITY
        } else if self.neg_inf > 0 {
            f64::NEG_INFINITY
        } else {
            self.finite(mean)
        })
    }

    /// `v` enters the frame (`sign` 1) or leaves it (`sign` -1).
    pub(super) fn add(&mut self, v: f64, sign: i64) {
        let step = |n: &mut u64| *n = n.wrapping_add_signed(sign);
        step(&mut self.count);
        if v.is_nan() {
            step(&mut self.nan);
        } else if v == f64::INFINITY {
            step(&mut self.pos_inf);
        } else if v == f64::NEG_INFINITY {
            step(&mut self.neg_inf);
        } else {
            self.exact.add(v, sign);
        }
        if self.count == 0 {
            // an empty frame starts again from nothing
            self.exact = Default::default();
        }
    }

    fn feed(&mut self, values: &[ArrayRef], sign: i64) -> DfResult<()> {
        let a = values[0].as_primitive::<arrow::datatypes::Float64Type>();
        for v in a.iter().flatten() {
            self.add(v, sign);
        }
        Ok(())
    }

    /// The sum (or, `mean`, the mean) of the frame's finite values.
    fn finite(&mut self, mean: bool) -> f64 {
        let sum = self.exact.sum(0);
        if !mean {
            return sum;
        }
        let count = self.count as f64;
        if sum.is_finite() {
            return sum / count;
        }
        const UP: f64 = 18_446_744_073_709_551_616.0; // 2^64
        self.exact.sum(64) / count * UP
    }
}

impl datafusion::logical_expr::Accumulator for SlidingFloatSum {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        self.feed(values, 1)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        self.feed(values, -1)
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn evaluate(&mut self) -> DfResult<datafusion::common::ScalarValue> {
        Ok(datafusion::common::ScalarValue::Float64(self.value()))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }

    /// The state of DataFusion's own accumulators: `[sum]`, or `[count, sum]` for `avg`.
    fn state(&mut self) -> DfResult<Vec<datafusion::common::ScalarValue>> {
        use datafusion::common::ScalarValue;
        let sum = ScalarValue::Float64(self.frame(false));
        Ok(if self.avg { vec![ScalarValue::UInt64(Some(self.count)), sum] } else { vec![sum] })
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        if !self.avg {
            return self.feed(states, 1);
        }
        // each state's sum counts as one value here: add the other values of its count
        let counts = states[0].as_primitive::<arrow::datatypes::UInt64Type>();
        let sums = states[1].as_primitive::<arrow::datatypes::Float64Type>();
        for (c, s) in counts.iter().zip(sums.iter()) {
            if let (Some(c), Some(s)) = (c, s)
                && c > 0
            {
                self.add(s, 1);
                self.count += c - 1;
            }
        }
        Ok(())
    }
}

/// DataFusion's `array_sum`, with lists of integers summed as integers (see the module docs).
#[derive(Debug, PartialEq, Eq, Hash)]
struct IntegerListSum(ScalarUDF);

impl IntegerListSum {
    /// The type a list of `t` is summed in, when it holds integers.
    fn integer_sum_type(t: &DataType) -> Option<DataType> {
        let element = match t {
            DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => f.data_type(),
            _ => return None,
        };
        match element {
            DataType::UInt64 => Some(DataType::UInt64),
            e if e.is_integer() => Some(DataType::Int64),
            _ => None,
        }
    }
}

impl datafusion::logical_expr::ScalarUDFImpl for IntegerListSum {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn aliases(&self) -> &[String] {
        self.0.aliases()
    }
    fn signature(&self) -> &datafusion::logical_expr::Signature {
        self.0.signature()
    }
    fn coerce_types(&self, arg_types: &[DataType]) -> DfResult<Vec<DataType>> {
        if let [DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _)] = arg_types
            && f.data_type().is_nested()
        {
            return Err(datafusion::error::DataFusionError::Plan(format!(
                "{} sums a list of numbers; this one holds {}: sum flatten(l) for every number at any depth",
                self.name(),
                crate::core::schema::type_name(f.data_type())
            )));
        }
        match arg_types {
            [t] => match Self::integer_sum_type(t) {
                Some(sum) => {
                    let field = Arc::new(arrow::datatypes::Field::new_list_field(sum, true));
                    Ok(vec![match t {
                        DataType::LargeList(_) => DataType::LargeList(field),
                        _ => DataType::List(field),
                    }])
                }
                None => self.0.coerce_types(arg_types),
            },
            _ => self.0.coerce_types(arg_types),
        }
    }
    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        match arg_types {
            [t] => match Self::integer_sum_type(t) {
                Some(sum) => Ok(sum),
                None => self.0.return_type(arg_types),
            },
            _ => self.0.return_type(arg_types),
        }
    }
    fn invoke_with_args(&self, args: datafusion::logical_expr::ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let sum_type = match args.args.as_slice() {
            [a] => Self::integer_sum_type(&a.data_type()),
            _ => None,
        };
        let Some(sum_type) = sum_type else {
            return self.0.inner().invoke_with_args(args);
        };
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let lists = args.args[0].clone().into_array(args.number_rows)?;
        let (offsets, values): (Vec<usize>, ArrayRef) = match lists.data_type() {
            DataType::List(_) => {
                let l = lists.as_list::<i32>();
                (l.value_offsets().iter().map(|&o| o as usize).collect(), l.values().clone())
            }
            DataType::LargeList(_) => {
                let l = lists.as_list::<i64>();
                (l.value_offsets().iter().map(|&o| o as usize).collect(), l.values().clone())
            }
            other => {
                return Err(datafusion::error::DataFusionError::Internal(format!(
                    "array_sum of {other} after coercion to a list"
                )));
            }
        };
        // each value as i128: no sum of a list's values (fewer than 2^64) overflows it
        let value = |i: usize| -> i128 {
            match values.data_type() {
                DataType::UInt64 => values.as_primitive::<arrow::datatypes::UInt64Type>().value(i) as i128,
                _ => values.as_primitive::<arrow::datatypes::Int64Type>().value(i) as i128,
            }
        };
        let mut sums: Vec<Option<i128>> = Vec::with_capacity(lists.len());
        for row in 0..lists.len() {
            let mut sum = None;
            if lists.is_valid(row) {
                for i in offsets[row]..offsets[row + 1] {
                    if values.is_valid(i) {
                        sum = Some(sum.unwrap_or(0) + value(i));
                    }
                }
            }
            sums.push(sum);
        }
        let overflow = |s: i128| {
            datafusion::error::DataFusionError::Execution(format!(
                "array_sum overflows {sum_type}: a list's integers came to {s}"
            ))
        };
        let out: ArrayRef = if sum_type == DataType::UInt64 {
            let v: Vec<Option<u64>> = sums
                .into_iter()
                .map(|s| s.map(|s| u64::try_from(s).map_err(|_| overflow(s))).transpose())
                .collect::<DfResult<_>>()?;
            Arc::new(arrow::array::UInt64Array::from(v))
        } else {
            let v: Vec<Option<i64>> = sums
                .into_iter()
                .map(|s| s.map(|s| i64::try_from(s).map_err(|_| overflow(s))).transpose())
                .collect::<DfResult<_>>()?;
            Arc::new(arrow::array::Int64Array::from(v))
        };
        if scalar {
            Ok(ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(&out, 0)?))
        } else {
            Ok(ColumnarValue::Array(out))
        }
    }
    fn documentation(&self) -> Option<&datafusion::logical_expr::Documentation> {
        self.0.documentation()
    }
}
