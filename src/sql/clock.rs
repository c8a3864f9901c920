//! A build's SQL gives the same rows at every build: the clock's functions (`now()`,
//! `current_timestamp`, `current_date`, `current_time`) read `SOURCE_DATE_EPOCH` when it is
//! set, and are refused otherwise; functions that give another value at each call
//! (`random()`, `uuid()`) are refused.
//!
//! In: a build's session ([`pin_clock`]). Out: its plans, with the clock's functions replaced
//! by the pinned time, or an error that names the function and what to write instead.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, Volatility};
use datafusion::scalar::ScalarValue;

/// The clock's functions, by their names in DataFusion 55 (`current_timestamp` is `now`,
/// `today` is `current_date`).
const CLOCK: [&str; 3] = ["now", "current_date", "current_time"];

/// Functions marked volatile that give the same value at every build: the file and row a
/// scanned value comes from, and runpack's `maybe_null` (a value as it is, volatile so that it
/// is not folded: [`super::subquery`]).
const STEADY: [&str; 3] = ["input_file_name", "file_row_index", "maybe_null"];

/// Adds the check to `ctx`'s analyzer: its tables, views and card sections are planned with
/// the clock read at `epoch` (seconds since 1970, UTC: `SOURCE_DATE_EPOCH`), or refused when
/// `epoch` is `None`.
pub fn pin_clock(ctx: &datafusion::prelude::SessionContext, epoch: Option<i64>) {
    ctx.add_analyzer_rule(Arc::new(PinClock { epoch }));
}

/// Checks `plan` as [`pin_clock`]'s analyzer will (a view's, which is analyzed only where a
/// table or card section reads it), so that the error names the view.
///
/// Errors: [`datafusion::error::DataFusionError::Plan`] naming the function refused.
pub fn check(plan: &LogicalPlan, epoch: Option<i64>) -> datafusion::error::Result<()> {
    use datafusion::optimizer::AnalyzerRule as _;
    PinClock { epoch }.analyze(plan.clone(), &datafusion::config::ConfigOptions::default()).map(|_| ())
}

#[derive(Debug)]
struct PinClock {
    epoch: Option<i64>,
}

impl datafusion::optimizer::AnalyzerRule for PinClock {
    fn analyze(
        &self,
        plan: LogicalPlan,
        _: &datafusion::config::ConfigOptions,
    ) -> datafusion::error::Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            // a column keeps its name (`now()`) where the pinned time replaces the function
            let names = datafusion::logical_expr::expr_rewriter::NamePreserver::new(&node);
            node.map_expressions(|e| {
                let name = names.save(&e);
                Ok(e.transform_up(|e| self.pin(e))?.update_data(|e| name.restore(e)))
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "the same rows at every build"
    }
}

impl PinClock {
    fn pin(&self, e: Expr) -> datafusion::error::Result<Transformed<Expr>> {
        let Expr::ScalarFunction(f) = &e else { return Ok(Transformed::no(e)) };
        let name = f.func.name().to_string();
        let plan_err = |m: String| Err(datafusion::error::DataFusionError::Plan(m));
        if CLOCK.contains(&name.as_str()) {
            let Some(epoch) = self.epoch else {
                return plan_err(format!(
                    "{name}() reads the clock, so each build would write other values: set SOURCE_DATE_EPOCH (seconds \
                     since 1970, UTC) to build with that time, or write the time as a literal \
                     (TIMESTAMP '2026-01-01T00:00:00Z')"
                ));
            };
            let day = epoch.div_euclid(86_400);
            let value = match name.as_str() {
                "now" => ScalarValue::TimestampNanosecond(epoch.checked_mul(1_000_000_000), None),
                "current_date" => ScalarValue::Date32(i32::try_from(day).ok()),
                _ => ScalarValue::Time64Nanosecond(Some(epoch.rem_euclid(86_400) * 1_000_000_000)),
            };
            if value.is_null() {
                return plan_err(format!(
                    "{name}() cannot read SOURCE_DATE_EPOCH {epoch}: a timestamp in nanoseconds holds the years 1677 to \
                     2262 only"
                ));
            }
            // the type the function gives (a timestamp in the session's zone)
            let to = e.to_field(&datafusion::common::DFSchema::empty())?.1.data_type().clone();
            return Ok(Transformed::yes(Expr::Cast(datafusion::logical_expr::Cast::new(
                Box::new(Expr::Literal(value, None)),
                to,
            ))));
        }
        if f.func.signature().volatility == Volatility::Volatile && !STEADY.contains(&name.as_str()) {
            return plan_err(format!(
                "{name}() gives another value at each call, so each build would write other values; to pick rows \
                 by chance, order them by a hash of their key (ORDER BY md5(CAST(id AS VARCHAR)))"
            ));
        }
        Ok(Transformed::no(e))
    }
}
