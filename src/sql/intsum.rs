//! `sum` of integers that fails rather than wraps.
//!
//! DataFusion's `sum` of an `Int64` (or `UInt64`) column adds with wrapping arithmetic:
//! `sum` of `9223372036854775807` and `1` is `-9223372036854775808`, with no word. runpack's
//! adds in 128 bits, where no sum of up to 2^64 values can overflow, and fails when the
//! result does not fit the result type, naming the sum it came to. A partition's partial sum goes
//! to the final sum as a `Decimal128(38, 0)` holding all 128 bits ([`state_field`]), so a sum
//! that leaves the type in one partition and comes back in another is still right.
//! Used with and without `GROUP BY`, and in moving window frames (values leave a frame
//! exactly as they came). `sum(DISTINCT x)` keeps DataFusion's set of distinct values and
//! sums them the same way ([`CheckedDistinctSum`]). DuckDB gives such sums as 128-bit
//! integers, PostgreSQL as `numeric`; the fix in SQL is `sum(CAST(x AS DECIMAL(38, 0)))`.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, ArrowPrimitiveType, AsArray, BooleanArray, PrimitiveArray};
use arrow::datatypes::{DataType, Decimal128Type, Field, FieldRef, Int64Type, UInt64Type};
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::{Accumulator, EmitTo, GroupsAccumulator};

/// Whether runpack sums a `sum` whose result is `data_type`: `Int64` and `UInt64`.
pub(super) fn checked(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Int64 | DataType::UInt64)
}

/// The type of a partial sum: all 128 bits, in an Arrow type every engine carries.
const STATE: DataType = DataType::Decimal128(38, 0);

/// The state field of a `sum` of integers named `name` (a partial sum, [`STATE`]).
pub(super) fn state_field(name: &str) -> FieldRef {
    Arc::new(Field::new(format!("{name}[sum]"), STATE, true))
}

/// Partial sums as a [`STATE`] array (its values are not held to 38 digits: all of an
/// `i128` passes through).
fn to_state(sums: &[Option<i128>]) -> DfResult<ArrayRef> {
    Ok(Arc::new(sums.iter().copied().collect::<arrow::array::Decimal128Array>().with_precision_and_scale(38, 0)?))
}

/// The values of an `Int64`, `UInt64` or partial-sum array, each widened, with its validity.
fn widened(a: &ArrayRef) -> Box<dyn Iterator<Item = Option<i128>> + '_> {
    match a.data_type() {
        DataType::Decimal128(..) => Box::new(a.as_primitive::<Decimal128Type>().iter()),
        DataType::UInt64 => Box::new(a.as_primitive::<UInt64Type>().iter().map(|v| v.map(i128::from))),
        _ => Box::new(a.as_primitive::<Int64Type>().iter().map(|v| v.map(i128::from))),
    }
}

/// The error of a sum that leaves `data_type`'s range.
fn overflow(sum: i128, data_type: &DataType) -> datafusion::error::DataFusionError {
    datafusion::error::DataFusionError::Execution(format!(
        "sum overflows {data_type}: a sum came to {sum} (the whole sum, or a part that the plan \
         sums first, such as one value's rows under count(DISTINCT)); sum(CAST(x AS DECIMAL(38, 0))) gives exact sums"
    ))
}

/// `sums` (None: no value) as an array of `data_type`, or the error of the first that does
/// not fit.
fn to_array(sums: &[Option<i128>], data_type: &DataType) -> DfResult<ArrayRef> {
    Ok(match data_type {
        DataType::UInt64 => Arc::new(
            sums.iter()
                .map(|s| s.map(|s| u64::try_from(s).map_err(|_| overflow(s, data_type))).transpose())
                .collect::<DfResult<arrow::array::UInt64Array>>()?,
        ),
        _ => Arc::new(
            sums.iter()
                .map(|s| s.map(|s| i64::try_from(s).map_err(|_| overflow(s, data_type))).transpose())
                .collect::<DfResult<arrow::array::Int64Array>>()?,
        ),
    })
}

/// `sum` of one group (without `GROUP BY`, or a moving window frame).
#[derive(Debug)]
pub(super) struct CheckedSum {
    data_type: DataType,
    sum: i128,
    /// Non-null values added (and not retracted).
    count: u64,
}

impl CheckedSum {
    /// An empty sum whose result is `data_type` (`Int64` or `UInt64`).
    pub(super) fn new(data_type: &DataType) -> Self {
        CheckedSum { data_type: data_type.clone(), sum: 0, count: 0 }
    }

    fn add(&mut self, a: &ArrayRef, sign: i128) {
        for v in widened(a).flatten() {
            self.sum += sign * v;
            self.count = if sign > 0 { self.count + 1 } else { self.count - 1 };
        }
    }
}

impl Accumulator for CheckedSum {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        self.add(&values[0], 1);
        Ok(())
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        self.add(&values[0], -1);
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        self.add(&states[0], 1);
        Ok(())
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        let sum = (self.count > 0).then_some(self.sum);
        ScalarValue::try_from_array(&to_array(&[sum], &self.data_type)?, 0)
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Decimal128((self.count > 0).then_some(self.sum), 38, 0)])
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// `sum(DISTINCT x)`: DataFusion's accumulator keeps the distinct values (its state, a list
/// of them); their sum is taken here, in 128 bits. (DataFusion's sums them with wrapping
/// arithmetic and gives no other way to read them.)
#[derive(Debug)]
pub(super) struct CheckedDistinctSum {
    inner: Box<dyn Accumulator>,
    data_type: DataType,
}

impl CheckedDistinctSum {
    /// `inner` is DataFusion's `sum(DISTINCT)` accumulator of `data_type` values.
    pub(super) fn new(inner: Box<dyn Accumulator>, data_type: &DataType) -> Self {
        CheckedDistinctSum { inner, data_type: data_type.clone() }
    }
}

impl Accumulator for CheckedDistinctSum {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        self.inner.update_batch(values)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        self.inner.merge_batch(states)
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        self.inner.state()
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        let state = self.inner.state()?;
        let Some(ScalarValue::List(list)) = state.first() else {
            return datafusion::common::internal_err!("sum(DISTINCT) state is not a list: {state:?}");
        };
        let values = list.values();
        let mut sum = None;
        for v in widened(values).flatten() {
            *sum.get_or_insert(0) += v;
        }
        ScalarValue::try_from_array(&to_array(&[sum], &self.data_type)?, 0)
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.inner.size()
    }
}

/// `sum` of each group of a `GROUP BY`.
#[derive(Debug)]
pub(super) struct CheckedSumGroups {
    data_type: DataType,
    /// Each group's sum; None until it has a value.
    sums: Vec<Option<i128>>,
}

impl CheckedSumGroups {
    /// Groups whose sums are `data_type` (`Int64` or `UInt64`).
    pub(super) fn new(data_type: &DataType) -> Self {
        CheckedSumGroups { data_type: data_type.clone(), sums: Vec::new() }
    }

    fn fold(&mut self, a: &ArrayRef, groups: &[usize], filter: Option<&BooleanArray>, total: usize) {
        self.sums.resize(total, None);
        match a.data_type() {
            DataType::Decimal128(..) => fold_into(&mut self.sums, a.as_primitive::<Decimal128Type>(), groups, filter),
            DataType::UInt64 => fold_into(&mut self.sums, a.as_primitive::<UInt64Type>(), groups, filter),
            _ => fold_into(&mut self.sums, a.as_primitive::<Int64Type>(), groups, filter),
        }
    }
}

/// Adds each row of `values` kept by `filter` to its group's sum in `sums`.
/// Without nulls or a filter, a plain loop over the values (a GROUP BY's usual case).
fn fold_into<T>(sums: &mut [Option<i128>], values: &PrimitiveArray<T>, groups: &[usize], filter: Option<&BooleanArray>)
where
    T: ArrowPrimitiveType,
    T::Native: Into<i128>,
{
    if values.null_count() == 0 && filter.is_none() {
        for (&g, &v) in groups.iter().zip(values.values().iter()) {
            *sums[g].get_or_insert(0) += v.into();
        }
        return;
    }
    for (row, &g) in groups.iter().enumerate() {
        if values.is_null(row) || filter.is_some_and(|f| !f.is_valid(row) || !f.value(row)) {
            continue;
        }
        *sums[g].get_or_insert(0) += values.value(row).into();
    }
}

impl GroupsAccumulator for CheckedSumGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> DfResult<()> {
        self.fold(&values[0], group_indices, opt_filter, total_num_groups);
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> DfResult<ArrayRef> {
        to_array(&emit_to.take_needed(&mut self.sums), &self.data_type)
    }

    fn state(&mut self, emit_to: EmitTo) -> DfResult<Vec<ArrayRef>> {
        Ok(vec![to_state(&emit_to.take_needed(&mut self.sums))?])
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> DfResult<()> {
        self.fold(&values[0], group_indices, None, total_num_groups);
        Ok(())
    }

    /// Each row as its own group: its value, or NULL where `opt_filter` leaves the row out.
    fn convert_to_state(&self, values: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> DfResult<Vec<ArrayRef>> {
        let kept: Vec<Option<i128>> = widened(&values[0])
            .enumerate()
            .map(|(row, v)| v.filter(|_| opt_filter.is_none_or(|f| f.is_valid(row) && f.value(row))))
            .collect();
        Ok(vec![to_state(&kept)?])
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.sums.capacity() * std::mem::size_of::<Option<i128>>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::session::{query_session, run_script};

    /// The first column of the result of `sql` over `t(k, i, u)` (i Int64, u UInt64), as text,
    /// or the error's message.
    async fn sums(sql: &str) -> Result<Vec<String>, String> {
        let ctx = query_session();
        let setup = "CREATE TABLE t AS SELECT * FROM (VALUES ('a', 9223372036854775807, arrow_cast(18446744073709551615, 'UInt64'), 1), \
             ('a', 1, arrow_cast(1, 'UInt64'), 2), ('a', -5, arrow_cast(0, 'UInt64'), 3), ('b', -9223372036854775808, arrow_cast(0, 'UInt64'), 4), \
             ('b', -1, arrow_cast(0, 'UInt64'), 5), ('c', NULL, NULL, 6), ('d', 2, arrow_cast(2, 'UInt64'), 7)) AS v(k, i, u, n)";
        // (runpack's statements refuse to write: the table is made through DataFusion's API)
        ctx.sql(setup).await.unwrap().collect().await.unwrap();
        let (_, batches) = run_script(&ctx, sql).await.map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for b in &batches {
            let col = arrow::util::display::ArrayFormatter::try_new(b.column(0).as_ref(), &Default::default()).unwrap();
            out.extend((0..b.num_rows()).map(|r| col.value(r).to_string()));
        }
        Ok(out)
    }

    #[tokio::test]
    async fn sums_that_leave_the_type_fail_with_the_exact_sum() {
        // without GROUP BY, grouped, over a window frame, DISTINCT: (SQL, what its error says)
        let overflows = [
            ("SELECT sum(i) FROM t WHERE n <= 2", "sum overflows Int64: a sum came to 9223372036854775808"),
            ("SELECT sum(i) FROM t WHERE n <= 2 OR k = 'd' GROUP BY k", "a sum came to 9223372036854775808"),
            ("SELECT sum(i) FROM t WHERE k = 'b' GROUP BY k", "a sum came to -9223372036854775809"),
            ("SELECT sum(i) FROM t WHERE k = 'b' GROUP BY k", "sum(CAST(x AS DECIMAL(38, 0))) gives exact sums"),
            ("SELECT sum(i) OVER (ORDER BY n ROWS 1 PRECEDING) FROM t", "sum overflows Int64"),
            ("SELECT sum(u) FROM t GROUP BY k", "sum overflows UInt64: a sum came to 18446744073709551616"),
            ("SELECT sum(DISTINCT i) FROM t WHERE n <= 2", "sum overflows Int64: a sum came to 9223372036854775808"),
            ("SELECT k, sum(DISTINCT u) FROM t GROUP BY k", "sum overflows UInt64"),
        ];
        for (sql, says) in overflows {
            let e = sums(sql).await.unwrap_err();
            assert!(e.contains(says), "{sql}: {e}");
        }
    }

    #[tokio::test]
    async fn sums_in_range_are_exact_even_past_an_overflow_on_the_way() {
        // 9223372036854775807 + 1 - 5 passes beyond Int64 and comes back
        assert_eq!(sums("SELECT sum(i) FROM t WHERE k = 'a'").await.unwrap(), ["9223372036854775803"]);
        assert_eq!(sums("SELECT sum(i) FROM t WHERE k = 'a' GROUP BY k").await.unwrap(), ["9223372036854775803"]);
        assert_eq!(sums("SELECT sum(i) FROM t WHERE k = 'a' AND n > 1").await.unwrap(), ["-4"]);
        assert_eq!(sums("SELECT sum(i) FROM t WHERE n IN (1, 3)").await.unwrap(), ["9223372036854775802"]);
        assert_eq!(
            sums("SELECT sum(i) FROM t WHERE k <> 'a' AND k <> 'b' GROUP BY k ORDER BY k").await.unwrap(),
            ["", "2"],
            "a group of nulls sums to null"
        );
        // a frame that held the overflowing values, once they have left
        assert_eq!(
            sums("SELECT sum(i) OVER (ORDER BY n ROWS 1 PRECEDING) FROM t WHERE n >= 5 ORDER BY n").await.unwrap(),
            ["-1", "-1", "2"]
        );
        assert_eq!(sums("SELECT sum(u) FROM t WHERE n > 1").await.unwrap(), ["3"]);
        // summed as written, not as sum(i) + count(i) and sum(i) + 2 * count(i)
        let both =
            "SELECT arrow_cast(sum(i + 1), 'Utf8') || ' ' || arrow_cast(sum(i + 2), 'Utf8') FROM t WHERE k = 'b'";
        assert_eq!(sums(both).await.unwrap(), ["-9223372036854775807 -9223372036854775805"]);
        assert_eq!(sums("SELECT sum(DISTINCT i) FROM t WHERE k = 'a'").await.unwrap(), ["9223372036854775803"]);
        assert_eq!(
            sums("SELECT sum(DISTINCT u) FROM t WHERE n > 1 GROUP BY k ORDER BY k").await.unwrap(),
            ["1", "0", "", "2"]
        );
        // a filter, and the skipped partial aggregation of many groups
        assert_eq!(sums("SELECT sum(i) FILTER (WHERE n > 1) FROM t WHERE k = 'a'").await.unwrap(), ["-4"]);
        let many = "SET datafusion.execution.skip_partial_aggregation_probe_rows_threshold = 1; \
                    SET datafusion.execution.skip_partial_aggregation_probe_ratio_threshold = 0.0; \
                    SELECT sum(s) FROM (SELECT n, sum(i) AS s FROM t WHERE n > 3 GROUP BY n)";
        assert_eq!(sums(many).await.unwrap(), ["-9223372036854775807"]);
    }
}
