//! `sum` and `avg` of `Float64` values that give the same result on every run.
//!
//! A query runs on several partitions at once, each adding its rows in their order. DataFusion
//! then adds the partitions' partial sums in the order they finish, which changes from run to
//! run; float addition is not associative, so `SELECT sum(x)` over a million rows gave
//! `500161.97345980187` on most runs and `500161.9734598019` on others. runpack's final stage
//! keeps each group's partial sums and adds them at the end in one order (ascending, by IEEE
//! 754's total order), so the result depends on the rows alone. A partition's own sum is
//! DataFusion's: the rows of a partition come in the order of its files, and each partition
//! reads the files the plan gave it (the session turns off DataFusion's work stealing between
//! partitions, which let a partition that went idle read a sibling's files).
//!
//! The state is DataFusion's (`sum`: the partial sum; `avg`: the count, then the partial sum),
//! so a plan and a cluster's stages carry it as they carry DataFusion's.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array, UInt64Array};
use arrow::datatypes::{Float64Type, UInt64Type};
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::{Accumulator, EmitTo, GroupsAccumulator};

/// The partial sums of groups, added in one order at the end (see the module docs).
#[derive(Debug, Default)]
pub(super) struct FloatSumGroups {
    /// `avg` rather than `sum`.
    avg: bool,
    /// Each group's sum of the rows given to this accumulator (a partial stage's).
    sums: Vec<f64>,
    /// Each group's count of values: its rows and its partial states' counts.
    counts: Vec<u64>,
    /// Whether a group holds a value (a sum of no value is null).
    seen: Vec<bool>,
    /// The partial sums merged in, with their groups, in the order they came.
    partials: Vec<(usize, f64)>,
}

impl FloatSumGroups {
    /// An empty accumulator of `sum` (`avg` false) or `avg`.
    pub(super) fn new(avg: bool) -> Self {
        FloatSumGroups { avg, ..Default::default() }
    }

    fn grow(&mut self, total_num_groups: usize) {
        if self.sums.len() < total_num_groups {
            self.sums.resize(total_num_groups, 0.0);
            self.counts.resize(total_num_groups, 0);
            self.seen.resize(total_num_groups, false);
        }
    }

    /// Group `g`'s total (its partial sums and its rows' sum, added in ascending order) and
    /// count, leaving the accumulator as it is: a window's running sum evaluates again and
    /// again as rows come.
    fn total(&self, g: usize) -> (Option<f64>, u64) {
        if g >= self.seen.len() || !self.seen[g] {
            return (None, self.counts.get(g).copied().unwrap_or(0));
        }
        let mut values: Vec<f64> = self.partials.iter().filter(|(h, _)| *h == g).map(|(_, s)| *s).collect();
        if values.is_empty() {
            // (0.0 + the sum, as DataFusion's sum starts from 0.0)
            return (Some(0.0 + self.sums[g]), self.counts[g]);
        }
        values.push(self.sums[g]);
        values.sort_by(f64::total_cmp);
        (Some(values.iter().fold(0.0, |t, v| t + v)), self.counts[g])
    }

    /// The groups `emit_to` takes, each with its total (partial sums added in ascending
    /// order) and count; the groups left are numbered from 0 again.
    fn take(&mut self, emit_to: EmitTo) -> (Vec<Option<f64>>, Vec<u64>) {
        let n = match emit_to {
            EmitTo::All => self.sums.len(),
            EmitTo::First(n) => n.min(self.sums.len()),
        };
        let mut partials = std::mem::take(&mut self.partials);
        partials.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.total_cmp(&b.1)));
        let mut by_group = vec![Vec::new(); n];
        for (g, s) in partials {
            if g < n {
                by_group[g].push(s);
            } else {
                self.partials.push((g - n, s));
            }
        }
        let mut totals = Vec::with_capacity(n);
        for (g, mut values) in by_group.into_iter().enumerate() {
            if !self.seen[g] {
                totals.push(None);
                continue;
            }
            // the rows' own sum is one more partial sum
            if self.counts[g] > 0 || !values.is_empty() {
                values.push(self.sums[g]);
                values.sort_by(f64::total_cmp);
            }
            totals.push(Some(values.iter().fold(0.0, |t, v| t + v)));
        }
        let counts: Vec<u64> = self.counts.drain(..n).collect();
        self.sums.drain(..n);
        self.seen.drain(..n);
        (totals, counts)
    }
}

/// The rows of `values` that count: valid, and passing the filter.
fn counted(values: &dyn Array, filter: Option<&BooleanArray>, r: usize) -> bool {
    values.is_valid(r) && filter.is_none_or(|f| f.is_valid(r) && f.value(r))
}

impl GroupsAccumulator for FloatSumGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> DfResult<()> {
        self.grow(total_num_groups);
        let v = values[0].as_primitive::<Float64Type>();
        for (r, &g) in group_indices.iter().enumerate() {
            if counted(v, opt_filter, r) {
                self.sums[g] += v.value(r);
                self.counts[g] += 1;
                self.seen[g] = true;
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> DfResult<()> {
        self.grow(total_num_groups);
        let (counts, sums) = if self.avg {
            (Some(values[0].as_primitive::<UInt64Type>()), values[1].as_primitive::<Float64Type>())
        } else {
            (None, values[0].as_primitive::<Float64Type>())
        };
        for (r, &g) in group_indices.iter().enumerate() {
            if !sums.is_valid(r) {
                continue;
            }
            let count = counts.map(|c| c.value(r)).unwrap_or(1);
            // (an average's partial state of no value holds a sum of 0)
            if self.avg && count == 0 {
                continue;
            }
            self.partials.push((g, sums.value(r)));
            if self.avg {
                self.counts[g] += count;
            }
            self.seen[g] = true;
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> DfResult<ArrayRef> {
        let (totals, counts) = self.take(emit_to);
        Ok(Arc::new(if self.avg {
            totals
                .iter()
                .zip(&counts)
                .map(|(t, &c)| t.filter(|_| c > 0).map(|t| one_nan(t / c as f64)))
                .collect::<Float64Array>()
        } else {
            totals.into_iter().map(|t| t.map(one_nan)).collect::<Float64Array>()
        }))
    }

    fn state(&mut self, emit_to: EmitTo) -> DfResult<Vec<ArrayRef>> {
        let (totals, counts) = self.take(emit_to);
        if self.avg {
            let sums: Float64Array = totals.iter().map(|t| Some(t.unwrap_or(0.0))).collect();
            Ok(vec![Arc::new(UInt64Array::from(counts)), Arc::new(sums)])
        } else {
            Ok(vec![Arc::new(totals.into_iter().collect::<Float64Array>())])
        }
    }

    /// Each row as its own group's state: its value (and a count of 1), or no value where it
    /// is null or `opt_filter` leaves the row out.
    fn convert_to_state(&self, values: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> DfResult<Vec<ArrayRef>> {
        let v = values[0].as_primitive::<Float64Type>();
        let kept = |r: usize| counted(v, opt_filter, r).then(|| v.value(r));
        if self.avg {
            let counts: UInt64Array = (0..v.len()).map(|r| Some(u64::from(kept(r).is_some()))).collect();
            let sums: Float64Array = (0..v.len()).map(|r| Some(kept(r).unwrap_or(0.0))).collect();
            Ok(vec![Arc::new(counts), Arc::new(sums)])
        } else {
            Ok(vec![Arc::new((0..v.len()).map(kept).collect::<Float64Array>())])
        }
    }

    fn size(&self) -> usize {
        self.sums.capacity() * 8
            + self.counts.capacity() * 8
            + self.seen.capacity()
            + self.partials.capacity() * std::mem::size_of::<(usize, f64)>()
    }
}

/// `t`, a NaN made the one NaN of the data (`inf + -inf` gives one with the sign bit set on
/// x86; [`super::nan`]).
fn one_nan(t: f64) -> f64 {
    if t.is_nan() { f64::NAN } else { t }
}

/// [`FloatSumGroups`] of one group: `sum` or `avg` without `GROUP BY`.
#[derive(Debug)]
pub(super) struct FloatSum(FloatSumGroups);

impl FloatSum {
    /// An empty accumulator of `sum` (`avg` false) or `avg`.
    pub(super) fn new(avg: bool) -> Self {
        FloatSum(FloatSumGroups::new(avg))
    }
}

impl Accumulator for FloatSum {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        self.0.update_batch(values, &vec![0; values[0].len()], None, 1)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        self.0.merge_batch(states, &vec![0; states[0].len()], 1)
    }

    /// The total so far; the accumulator goes on (a running sum over a window evaluates it at
    /// every row).
    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        let (total, count) = self.0.total(0);
        let value = if self.0.avg { total.filter(|_| count > 0).map(|t| t / count as f64) } else { total };
        Ok(ScalarValue::Float64(value.map(one_nan)))
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        let (total, count) = self.0.total(0);
        Ok(if self.0.avg {
            vec![ScalarValue::UInt64(Some(count)), ScalarValue::Float64(Some(total.unwrap_or(0.0)))]
        } else {
            vec![ScalarValue::Float64(total)]
        })
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.0.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Partial sums merged in any order give one total, bit for bit.
    #[test]
    fn partial_sums_in_any_order_give_one_total() {
        let parts = [0.1, 1e16, -1e16, 0.2, 0.30000000000000004, 7.5e-9];
        let mut totals = std::collections::BTreeSet::new();
        for rotation in 0..parts.len() {
            let mut order = parts.to_vec();
            order.rotate_left(rotation);
            if rotation % 2 == 1 {
                order.reverse();
            }
            let mut acc = FloatSum::new(false);
            for p in order {
                acc.merge_batch(&[Arc::new(Float64Array::from(vec![p]))]).unwrap();
            }
            let ScalarValue::Float64(Some(t)) = acc.evaluate().unwrap() else { panic!() };
            totals.insert(t.to_bits());
        }
        assert_eq!(totals.len(), 1, "{totals:?}");
    }

    /// Evaluated row after row, as a window's running sum is: the total so far each time.
    #[test]
    fn a_running_sum_evaluates_again_and_again() {
        for avg in [false, true] {
            let mut acc = FloatSum::new(avg);
            let mut seen = Vec::new();
            for v in [1.0, 2.0, 3.0, 4.0] {
                acc.update_batch(&[Arc::new(Float64Array::from(vec![v]))]).unwrap();
                let ScalarValue::Float64(Some(t)) = acc.evaluate().unwrap() else { panic!() };
                seen.push(t);
            }
            assert_eq!(seen, if avg { vec![1.0, 1.5, 2.0, 2.5] } else { vec![1.0, 3.0, 6.0, 10.0] });
        }
        let mut empty = FloatSum::new(true);
        assert_eq!(empty.evaluate().unwrap(), ScalarValue::Float64(None));
    }

    #[test]
    fn groups_sum_and_average_with_nulls_filters_and_early_emits() {
        // a partial stage: rows of groups 0 and 1; group 2 holds only a null
        let mut partial = FloatSumGroups::new(true);
        let v: ArrayRef = Arc::new(Float64Array::from(vec![Some(1.0), Some(2.0), None, Some(4.0), Some(8.0)]));
        let filter = BooleanArray::from(vec![true, true, true, true, false]);
        partial.update_batch(&[v], &[0, 1, 2, 0, 1], Some(&filter), 3).unwrap();
        let state = partial.state(EmitTo::All).unwrap();
        assert_eq!(state[0].as_primitive::<UInt64Type>().values(), &[2, 1, 0]);
        // the final stage: that state twice, the second time in another order
        let mut last = FloatSumGroups::new(true);
        last.merge_batch(&state, &[0, 1, 2], 3).unwrap();
        last.merge_batch(&state, &[1, 0, 2], 3).unwrap();
        // groups 0 and 1 each hold (2 values, 5.0) and (1 value, 2.0); group 2 none
        let first = last.evaluate(EmitTo::First(1)).unwrap();
        assert_eq!(first.as_primitive::<Float64Type>().values(), &[7.0 / 3.0]);
        let rest = last.evaluate(EmitTo::All).unwrap();
        let rest = rest.as_primitive::<Float64Type>();
        assert_eq!((rest.len(), rest.value(0), rest.is_null(1)), (2, 7.0 / 3.0, true));
        // sum: a group of no value is null, one of -0.0 alone is 0.0 + -0.0
        let mut sum = FloatSumGroups::new(false);
        let v: ArrayRef = Arc::new(Float64Array::from(vec![None, Some(5.0)]));
        sum.update_batch(&[v], &[0, 1], None, 2).unwrap();
        let out = sum.evaluate(EmitTo::All).unwrap();
        let out = out.as_primitive::<Float64Type>();
        assert!(out.is_null(0) && out.value(1) == 5.0);
    }
}
