//! What a build found and did, besides the data: violations, warnings, widenings, coercions,
//! non-finite values and dropped duplicates.
//!
//! In: events recorded by ingest, validation and writing. Out: a [`BuildReport`] that the card
//! and the manifest summarise and the command line prints, and the [`Violation`] type used by
//! every check.

use std::fmt;

use serde::Serialize;

/// The first `shown` of `names`, then how many more: `a, b, c and 4 more`.
pub fn first_names(names: &[&str], shown: usize) -> String {
    let more = if names.len() > shown { format!(" and {} more", names.len() - shown) } else { String::new() };
    format!("{}{more}", names[..names.len().min(shown)].join(", "))
}

/// Where a value came from: a raw input file and the 1-based line (JSONL, CSV) or the JSON
/// pointer of the record (JSON documents).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SourceRef {
    /// Path of the raw file, relative to the pipeline folder.
    pub file: String,
    /// Line or JSON pointer inside the file.
    pub at: Position,
}

/// A place inside a raw file. Places order as they come in the file: lines by number,
/// JSON pointers in document order (array indices by number: `/runs/2` before `/runs/10`),
/// lines before pointers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum Position {
    /// 1-based line number (JSONL, CSV: the line the record starts on).
    Line(u64),
    /// RFC 6901 JSON pointer of the record inside a JSON document.
    Pointer(String),
}

impl Ord for Position {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self, other) {
            (Position::Line(a), Position::Line(b)) => a.cmp(b),
            (Position::Line(_), Position::Pointer(_)) => std::cmp::Ordering::Less,
            (Position::Pointer(_), Position::Line(_)) => std::cmp::Ordering::Greater,
            (Position::Pointer(a), Position::Pointer(b)) => {
                crate::core::values::compare_pointers(a, b).then_with(|| a.cmp(b))
            }
        }
    }
}

impl PartialOrd for Position {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Line(n) => write!(f, "{n}"),
            Position::Pointer(p) => write!(f, "{p}"),
        }
    }
}

impl fmt::Display for SourceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // a file name with a line break would split one message over two lines
        let file = crate::core::error::escape_control(&self.file);
        match &self.at {
            Position::Pointer(p) if p.is_empty() => write!(f, "{file}"),
            at => write!(f, "{file}:{at}"),
        }
    }
}

/// One broken rule, with everything a user needs to find and fix it.
///
/// Displayed as `file:line:$.path: message (table T, key K, rule R)`; the parts that are
/// unknown are left out.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Violation {
    /// Whether `table` names a table or a source.
    pub scope: Scope,
    /// Table or source the row belongs to.
    pub table: String,
    /// Where the row came from, when known.
    pub source: Option<SourceRef>,
    /// JSONPath-style location of the value inside the record (`$.meta.retry`,
    /// `$["train/return"]`) or the column name for table-level checks.
    pub path: String,
    /// The rule that failed: `type`, `required`, `unique`, `primaryKey`, `foreignKey`, `enum`,
    /// `pattern`, `minimum`, `maximum`, `minLength`, `maxLength`, `schema`, `json`, `encoding`.
    pub rule: String,
    /// Primary-key values of the row, rendered `k1=v1, k2=v2`, when the table has one; for a
    /// row of a table without a primary key that no `_source_*` column places, every column's
    /// value (its sort key), cut after 200 characters with `…`.
    pub key: Option<String>,
    /// What was expected and what was found.
    pub message: String,
    /// The facts behind `message` that a remedy is chosen by, for the rules that have them
    /// (absent from JSON when there are none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<Finding>,
}

/// What a [`Violation`] found, beyond its message: the facts that choose a remedy (a build's
/// hints, `init`'s next draft), so that nothing reads them back out of the message's words.
///
/// In JSON: an object with `kind` (`type` or `shared_key`) and the variant's fields.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// A value whose type is not its column's (rule `type`).
    Type {
        /// The column's type, in the message's words: `number`, `integer`, `string`, …
        expected: String,
        /// The value found, described as the message describes it: `string "NaN"`, `number 0.5`.
        found: String,
        /// Whether the value is a string that names a non-finite number (`"NaN"`, `"Infinity"`,
        /// `"-Infinity"`, any case) in a number or integer column: what a source's
        /// `coerce_nonfinite_strings` reads as the number.
        nonfinite_string: bool,
        /// Where the value that decided the column's type is (`file:line`), when the column's
        /// type was decided by reading the input rather than declared.
        decided_at: Option<String>,
    },
    /// Rows that share a primary key, and no keep rule chooses among them (rule `primaryKey`).
    SharedKey {
        /// How many rows share the key.
        rows: u64,
    },
}

/// What a [`Violation`]'s `table` names: an output table (its schema's rules, keys, splits)
/// or a source (a raw record that could not be read or typed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// An output table.
    Table,
    /// A source.
    Source,
}

impl Violation {
    /// A violation of a source's raw input: file `file` at `at` (a line or JSON pointer), `path`
    /// inside it (a JSON path, `column 7`, or empty), the rule broken and what was found. The
    /// source's name is left empty, for the reader that knows it to fill in.
    pub fn of_source(
        file: &str,
        at: Position,
        path: impl Into<String>,
        rule: &str,
        message: impl Into<String>,
    ) -> Violation {
        Violation {
            scope: Scope::Source,
            table: String::new(),
            source: Some(SourceRef { file: file.to_string(), at }),
            path: path.into(),
            rule: rule.into(),
            key: None,
            message: message.into(),
            finding: None,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `file:line:path: message`, without an empty part
        let place = match (&self.source, self.path.is_empty()) {
            (Some(src), false) => format!("{src}:{}", self.path),
            (Some(src), true) => src.to_string(),
            (None, _) => self.path.clone(),
        };
        if !place.is_empty() {
            write!(f, "{place}: ")?;
        }
        let scope = match self.scope {
            Scope::Table => "table",
            Scope::Source => "source",
        };
        // a raw file read outside a pipeline (`query` over files) has no source name
        let mut named = Vec::with_capacity(3);
        if !self.table.is_empty() {
            named.push(format!("{scope} {}", self.table));
        }
        if let Some(k) = &self.key {
            named.push(format!("key {k}"));
        }
        named.push(format!("rule {}", self.rule));
        write!(f, "{} ({})", self.message, named.join(", "))
    }
}

/// A note about something the build did that changed or dropped nothing silently but that a
/// user should know (shown on stderr, counted in the card and manifest).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Warning {
    /// Table or source concerned.
    pub table: String,
    /// Short machine-readable kind: `widening`, `nonfinite`, `coercion`, `duplicate`,
    /// `wide-table`, `large-cell`, `rejected`.
    pub kind: String,
    /// Where, when known.
    pub source: Option<SourceRef>,
    /// Human-readable text.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "warning: ")?;
        if let Some(src) = &self.source {
            write!(f, "{src}: ")?;
        }
        write!(f, "{}: {}", self.table, self.message)
    }
}

/// Counters of one kind of event, with the first few places it happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tally {
    /// How many times it happened.
    pub count: u64,
    /// Up to [`Tally::KEEP`] examples (`file:line:$.path` and what happened).
    pub examples: Vec<String>,
}

impl Tally {
    /// How many examples are kept.
    pub const KEEP: usize = 20;

    /// Counts one event and keeps its description if there is room.
    pub fn add(&mut self, example: impl FnOnce() -> String) {
        self.count += 1;
        if self.examples.len() < Self::KEEP {
            self.examples.push(example());
        }
    }

    /// Adds the counts and examples of `other`.
    pub fn merge(&mut self, other: Tally) {
        self.count += other.count;
        for e in other.examples {
            if self.examples.len() < Self::KEEP {
                self.examples.push(e);
            }
        }
    }
}

/// What a list of violations covers: all the input, or less when the build stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Checked {
    /// Every source and table was checked.
    #[default]
    All,
    /// Reading stopped at a source it cannot read on from (a JSON document that stops being
    /// JSON, a Parquet file that does not read): the sources after it and the tables were not
    /// checked.
    UpToSource,
    /// The sources broke their rules, so the tables' rules were not checked.
    Sources,
}

impl Checked {
    /// What follows `N violations found`: nothing, or what was not checked.
    pub fn said(self) -> &'static str {
        match self {
            Checked::All => "",
            Checked::UpToSource => {
                " before reading stopped at a source it cannot read on from (the sources after it and the tables \
                 were not checked)"
            }
            Checked::Sources => " in the sources (the tables' rules are checked once the sources keep to theirs)",
        }
    }
}

/// Everything a build observed, gathered across stages.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BuildReport {
    /// Violations kept for display (at most `max_errors`).
    pub violations: Vec<Violation>,
    /// All violations found, including those not kept.
    pub violations_total: usize,
    /// How many violations to keep.
    #[serde(skip)]
    pub max_errors: usize,
    /// Warnings, in the order they were found.
    pub warnings: Vec<Warning>,
    /// Non-finite tokens read, by source.
    pub nonfinite: std::collections::BTreeMap<String, Tally>,
    /// Strings coerced into numbers (opt-in), by source.
    pub coercions: std::collections::BTreeMap<String, Tally>,
    /// Rows written to `rejects/<name>.jsonl`, by source or table.
    pub rejected_rows: std::collections::BTreeMap<String, u64>,
    /// Rows dropped by a duplicate-key rule (and kept in the rejects file), by table.
    pub duplicates_dropped: std::collections::BTreeMap<String, Tally>,
}

impl BuildReport {
    /// An empty report keeping at most `max_errors` violations.
    pub fn new(max_errors: usize) -> Self {
        BuildReport { max_errors, ..Default::default() }
    }

    /// Records a violation.
    pub fn violation(&mut self, v: Violation) {
        self.violations_total += 1;
        if self.violations.len() < self.max_errors {
            self.violations.push(v);
        }
    }

    /// Records a warning.
    pub fn warn(&mut self, table: &str, kind: &str, source: Option<SourceRef>, message: String) {
        self.warnings.push(Warning { table: table.to_string(), kind: kind.to_string(), source, message });
    }

    /// Adds what `other` found after what this report holds (violations up to `max_errors`,
    /// all counted).
    pub fn absorb(&mut self, other: BuildReport) {
        self.violations_total += other.violations_total;
        for v in other.violations {
            if self.violations.len() < self.max_errors {
                self.violations.push(v);
            }
        }
        self.warnings.extend(other.warnings);
        for (mine, theirs) in [
            (&mut self.nonfinite, other.nonfinite),
            (&mut self.coercions, other.coercions),
            (&mut self.duplicates_dropped, other.duplicates_dropped),
        ] {
            for (k, t) in theirs {
                mine.entry(k).or_default().merge(t);
            }
        }
        for (k, n) in other.rejected_rows {
            *self.rejected_rows.entry(k).or_default() += n;
        }
    }

    /// Fails with [`crate::Error::Invalid`] when any violation was recorded.
    pub fn check(&mut self) -> crate::Result<()> {
        if self.violations_total == 0 {
            return Ok(());
        }
        Err(self.to_error())
    }

    /// The violations as [`crate::Error::Invalid`] (sorted), whether or not there are any.
    pub fn to_error(&mut self) -> crate::Error {
        self.to_error_checked(Checked::All)
    }

    /// [`BuildReport::to_error`], covering what `checked` says.
    pub fn to_error_checked(&mut self, checked: Checked) -> crate::Error {
        self.violations.sort();
        crate::Error::Invalid { violations: self.violations.clone(), total: self.violations_total, checked }
    }
}

#[cfg(test)]
mod tests {
    use super::Position;

    #[test]
    fn places_order_as_they_come_in_the_file() {
        let p = |s: &str| Position::Pointer(s.into());
        let mut v = vec![p("/runs/10"), p("/runs/2"), Position::Line(11), p("/runs/2/a"), Position::Line(9), p("")];
        v.sort();
        assert_eq!(v, vec![Position::Line(9), Position::Line(11), p(""), p("/runs/2"), p("/runs/2/a"), p("/runs/10")]);
    }
}
