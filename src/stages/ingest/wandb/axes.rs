//! Custom x-axes: `wandb.define_metric(name, step_metric=…)`.
//!
//! W&B keeps one internal `_step` per history row; a metric defined with a `step_metric` is
//! plotted against that other metric instead (an eval curve against `eval/step`, say). The
//! definitions are recorded in two places:
//! - the `.wandb` log holds a `MetricRecord` per `define_metric` call: `name` or `glob_name`
//!   (`eval/*`) and `step_metric`;
//! - a synced run's config holds them under `_wandb` (`value.m` in `config.yaml`, `m` in a
//!   config read as plain values): a list of objects keyed by the `MetricRecord` field numbers,
//!   `"1"` the name, `"4"` the step metric's name or `"5"` its 1-based index in the list.
//!
//! A history row of a metric that has a step metric gets `x_axis` (the step metric's name)
//! and `x` (its value in the same history row; the W&B client copies the last value into
//! every row it writes with such a metric). The step metric's own rows get none.

use serde_json::{Map, Value};

/// One definition: which metrics (a name, or a glob with `*`) go against which step metric.
#[derive(Debug, Clone, PartialEq)]
struct Def {
    pattern: String,
    glob: bool,
    step_metric: String,
}

/// The custom x-axes of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct XAxes {
    defs: Vec<Def>,
}

/// A run with no custom x-axes.
pub static NONE: XAxes = XAxes { defs: Vec::new() };

impl XAxes {
    /// Adds one `define_metric` call (`MetricRecord`): a metric `name` or a `glob` pattern, and
    /// its step metric (ignored when empty: a definition of summary or goal only).
    pub fn define(&mut self, name: &str, glob: &str, step_metric: &str) {
        if step_metric.is_empty() || (name.is_empty() && glob.is_empty()) {
            return;
        }
        let (pattern, glob) = if name.is_empty() { (glob, true) } else { (name, false) };
        self.defs.push(Def { pattern: pattern.to_string(), glob, step_metric: step_metric.to_string() });
    }

    /// Adds the definitions a run's config holds under `_wandb` (`{"value": {"m": […]}}` as
    /// `config.yaml` writes it, or `{"m": […]}`). Entries that are not definitions are skipped.
    pub fn from_config(&mut self, config: &Map<String, Value>) {
        let Some(w) = config.get("_wandb") else { return };
        let w = w.get("value").unwrap_or(w);
        let Some(list) = w.get("m").and_then(Value::as_array) else { return };
        let name_at = |i: usize| list.get(i).and_then(|e| e.get("1")).and_then(Value::as_str);
        for e in list {
            let Some(name) = e.get("1").and_then(Value::as_str) else { continue };
            let step = match (e.get("4").and_then(Value::as_str), e.get("5").and_then(Value::as_u64)) {
                (Some(s), _) => Some(s),
                (None, Some(i)) if i >= 1 => name_at(i as usize - 1),
                _ => None,
            };
            if let Some(step) = step {
                self.define(name, "", step);
            }
        }
    }

    /// Whether no metric has a custom x-axis.
    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }

    /// The step metric of `metric`: the last definition naming it exactly, else the last glob
    /// matching it; none for a step metric itself.
    pub fn step_metric_of(&self, metric: &str) -> Option<&str> {
        let exact = self.defs.iter().rev().find(|d| !d.glob && d.pattern == metric);
        let found = exact.or_else(|| self.defs.iter().rev().find(|d| d.glob && matches(&d.pattern, metric)))?;
        (found.step_metric != metric).then_some(found.step_metric.as_str())
    }
}

/// Whether `name` matches `pattern`, whose `*` stands for any run of characters.
fn matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_win_over_globs_and_a_step_metric_has_none() {
        let mut a = XAxes::default();
        a.define("", "eval/*", "eval/step");
        a.define("eval/special", "", "epoch");
        a.define("train/loss", "", "");
        assert_eq!(a.step_metric_of("eval/acc"), Some("eval/step"));
        assert_eq!(a.step_metric_of("eval/special"), Some("epoch"));
        assert_eq!(a.step_metric_of("eval/step"), None);
        assert_eq!(a.step_metric_of("train/loss"), None);
        assert!(matches("a*b*c", "axxbyyc") && !matches("a*b*c", "axxc") && !matches("ab*ba", "aba"));
    }

    #[test]
    fn a_synced_config_names_step_metrics_by_index() {
        let config = serde_json::json!({"_wandb": {"value": {"m": [
            {"1": "train/global_step", "6": [3]},
            {"1": "train/loss", "5": 1, "6": [1, 3]},
            {"1": "eval/acc", "4": "eval/step"}
        ]}}});
        let mut a = XAxes::default();
        a.from_config(config.as_object().unwrap());
        assert_eq!(a.step_metric_of("train/loss"), Some("train/global_step"));
        assert_eq!(a.step_metric_of("eval/acc"), Some("eval/step"));
        assert_eq!(a.step_metric_of("train/global_step"), None);
    }
}
