//! What a build found and did, besides the data: violations, warnings, widenings, coercions,
//! non-finite values and dropped duplicates.
//!
//! In: events recorded by ingest, validation and writing. Out: a [`BuildReport`] that the card
//! and the manifest summarise and the command line prints, and the [`Violation`] type used by
//! every check.

use std::fmt;

use serde::Serialize;

/// The first `shown` of `names`, then how many more: `a, b, c and 4 more`; a control character
/// in a name is escaped (`\n`).
pub fn first_names(names: &[&str], shown: usize) -> String {
    let more = if names.len() > shown { format!(" and {} more", names.len() - shown) } else { String::new() };
    // a file name with a line break would split one message over two lines
    let first: Vec<String> =
        names[..names.len().min(shown)].iter().map(|n| crate::core::error::escape_control(n)).collect();
    format!("{}{more}", first.join(", "))
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
/// In JSON: an object with `kind` (`type`, `inexact_integer` or `shared_key`) and the variant's
/// fields. (`truncated` is made by the report from the violation's rule, for the hints.)
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// A value whose type is not its column's (rule `type`).
    Type {
        /// The top-level column the value is in (the first key of the violation's `path`).
        column: String,
        /// The column's type, in the message's words: `number`, `integer`, `string`, …
        expected: String,
        /// The value found, described as the message describes it: `string "NaN"`, `number 0.5`.
        found: String,
        /// Whether the value is a string that names a non-finite number (`"NaN"`, `"Infinity"`,
        /// `"-Infinity"`, any case) in a number or integer column: what a source's
        /// `coerce_nonfinite_strings` reads as the number.
        nonfinite_string: bool,
        /// Whether the value is a string that holds a number of the column's type (`"0.001"`
        /// in a number column, `"12"` in an integer one): what a source's
        /// `coerce_numeric_strings` reads as the number.
        numeric_string: bool,
        /// Whether the value is a string that holds a number written with a decimal comma
        /// (`"0,5"`, `"1.234,5"`) in a number column: runpack never reads it as another number.
        decimal_comma: bool,
        /// Where the value that decided the column's type is (`file:line`), when the column's
        /// type was decided by reading the input rather than declared.
        decided_at: Option<String>,
        /// The text, when the value is a string that stands for a missing value
        /// ([`super::values::missing_text`]) in a number, integer or boolean column itself
        /// (not in a part of one): what the column's `missingValues` can read as null.
        #[serde(skip_serializing_if = "Option::is_none")]
        missing: Option<String>,
    },
    /// An integer beyond ±2^53 in a float column of a source read as text cells (CSV): no
    /// 64-bit float holds it exactly (rule `type`).
    InexactInteger {
        /// The top-level column the value is in.
        column: String,
    },
    /// A file's last record cut short: its writer was stopped mid-write (rule `truncated`).
    Truncated,
    /// Rows that share a primary key, and no keep rule chooses among them (rule `primaryKey`).
    SharedKey {
        /// How many rows share the key.
        rows: u64,
        /// Whether they are different rows a query made of one raw line (an `unnest`, a
        /// join): a keep rule, which orders rows by their raw lines, cannot choose among them.
        same_line: bool,
    },
}

impl Finding {
    /// The finding without the values it names (`found`, `decided_at`, a count): what stays
    /// the same for every violation of one kind in one column. A text that stands for a
    /// missing value (`missing`) is kept: a hint lists it.
    pub fn without_values(&self) -> Finding {
        match self {
            Finding::Type {
                column,
                expected,
                nonfinite_string,
                numeric_string,
                decimal_comma,
                decided_at,
                missing,
                ..
            } => Finding::Type {
                column: column.clone(),
                expected: expected.clone(),
                found: String::new(),
                nonfinite_string: *nonfinite_string,
                numeric_string: *numeric_string,
                decimal_comma: *decimal_comma,
                decided_at: decided_at.as_ref().map(|_| String::new()),
                missing: missing.clone(),
            },
            Finding::InexactInteger { .. } | Finding::Truncated => self.clone(),
            Finding::SharedKey { same_line, .. } => Finding::SharedKey { rows: 0, same_line: *same_line },
        }
    }
}

/// Whether `s` is a number written with a decimal comma, as European CSV files write them:
/// `0,5`, `-12,25`, `1.234,5` (a point between thousands).
pub fn is_decimal_comma(s: &str) -> bool {
    let s = s.trim().strip_prefix(['-', '+']).unwrap_or(s.trim());
    let Some((int, frac)) = s.split_once(',') else { return false };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let grouped = |t: &str| {
        let mut parts = t.split('.');
        parts.next().is_some_and(|p| digits(p) && p.len() <= 3) && parts.all(|p| p.len() == 3 && digits(p))
    };
    digits(frac) && (digits(int) || grouped(int))
}

/// What a user can do about a build's violations, one hint per remedy, each naming the tables,
/// sources or columns it applies to; empty when no remedy is known. Chosen from what every
/// violation found (`findings`: scope, table or source, and [`Finding::without_values`]):
///
/// - rows that share a primary key: `on_duplicate_key = "keep-last"`, or, for rows a query
///   made of one raw line, a key of their own;
/// - numbers written as "NaN", "Infinity" or "-Infinity" strings: `coerce_nonfinite_strings`
///   (in a number column, or one typed by reading the input), or a `number` column (a
///   declared integer column holds none);
/// - numbers written as strings (`"0.001"`): `coerce_numeric_strings`;
/// - a column whose type its first value decided, broken by values of another type: a
///   `[[source.field]]` of type `any`;
/// - a CSV float column broken by an integer no float holds: a `[[source.field]]` of type
///   `string`.
pub fn violation_hints(findings: &std::collections::BTreeSet<(Scope, String, Finding)>) -> Vec<String> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut hints = Vec::new();
    let listed = |names: BTreeSet<&str>| names.into_iter().collect::<Vec<_>>().join(", ");
    let tables = |same: bool| -> BTreeSet<&str> {
        findings
            .iter()
            .filter(|(_, _, f)| matches!(f, Finding::SharedKey { same_line, .. } if *same_line == same))
            .map(|(_, t, _)| t.as_str())
            .collect()
    };
    // rows logged twice (a resumed run)
    let resumed = tables(false);
    if !resumed.is_empty() {
        hints.push(format!(
            "rows that share a primary key where the later one is the one to keep (a run resumed from a checkpoint \
             logs its steps again) can be chosen among: `on_duplicate_key = \"keep-last\"` in the [[table]] of {} \
             (or `--on-duplicate-key keep-last`) keeps the last of each, and rejects/ holds the others; the rule \
             orders rows by `_source_file` and `_source_line`, which the table's query must select (rows that share \
             a key for another reason are not the same: two values of one result in a table merged by hand are for \
             its author to settle, and a counter that started again needs what tells its rows apart in the key)",
            listed(resumed)
        ));
    }
    // rows a query made of one raw line (an unnest): no order tells them apart
    let made = tables(true);
    if !made.is_empty() {
        hints.push(format!(
            "different rows that a query made of one raw line share a primary key in {}: add the column that tells \
             them apart (the unnested value, the joined row's key) to the table's primaryKey; a keep rule cannot \
             choose among rows of one line",
            listed(made)
        ));
    }
    // a source's value of another type than its column's
    struct TypeFact<'a> {
        source: &'a str,
        column: &'a str,
        expected: &'a str,
        nonfinite: bool,
        numeric: bool,
        decided: bool,
        /// The text of a missing value (`"n/a"`) where a number or boolean was expected.
        missing: Option<String>,
    }
    let types: Vec<TypeFact> = findings
        .iter()
        .filter_map(|(scope, source, f)| match f {
            Finding::Type { column, expected, nonfinite_string, numeric_string, decided_at, missing, .. }
                if *scope == Scope::Source =>
            {
                Some(TypeFact {
                    source,
                    column,
                    expected,
                    nonfinite: *nonfinite_string,
                    numeric: *numeric_string,
                    decided: decided_at.is_some(),
                    missing: missing.clone(),
                })
            }
            _ => None,
        })
        .collect();
    let sources = |keep: &dyn Fn(&TypeFact) -> bool| -> BTreeSet<&str> {
        types.iter().filter(|t| keep(t)).map(|t| t.source).collect()
    };
    // (a column typed by reading the input becomes a number column with the option)
    let nonfinite = sources(&|t| t.nonfinite && (t.expected == "number" || t.decided));
    if !nonfinite.is_empty() {
        hints.push(format!(
            "numbers written as the strings \"NaN\", \"Infinity\" or \"-Infinity\" are read as numbers when their \
             source says so: `coerce_nonfinite_strings = true` in the [[source]] of {}",
            listed(nonfinite)
        ));
    }
    let whole: BTreeSet<String> = types
        .iter()
        .filter(|t| t.nonfinite && t.expected == "integer" && !t.decided)
        .map(|t| format!("{}.{}", t.source, t.column))
        .collect();
    if !whole.is_empty() {
        hints.push(format!(
            "an integer column holds no NaN or infinity ({}): declare it `number` ([[source.field]] type = \"number\", \
             and the table's schema), with `coerce_nonfinite_strings = true` in its [[source]]",
            whole.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let numeric = sources(&|t| t.numeric);
    if !numeric.is_empty() {
        hints.push(format!(
            "numbers written as strings (\"0.001\", \"12\") are read as numbers when their source says so: \
             `coerce_numeric_strings = true` in the [[source]] of {}",
            listed(numeric)
        ));
    }
    // numbers written with a decimal comma (European CSV files): text to runpack
    let commas: BTreeSet<(&str, &str)> = findings
        .iter()
        .filter_map(|(scope, source, f)| match f {
            Finding::Type { column, decimal_comma: true, .. } if *scope == Scope::Source => {
                Some((source.as_str(), column.as_str()))
            }
            _ => None,
        })
        .collect();
    if !commas.is_empty() {
        hints.push(format!(
            "numbers written with a decimal comma (\"0,5\") in {} are text to runpack, which never reads them as \
             other numbers: declare the column a string, {}, and convert it in the table's query \
             (CAST(replace(x, ',', '.') AS DOUBLE), when no value has a point between thousands)",
            commas.iter().map(|(s, c)| format!("{s}.{c}")).collect::<Vec<_>>().join(", "),
            field_tables(commas.iter().map(|(_, c)| *c), "string")
        ));
    }
    // texts that stand for a missing value among numbers or booleans: read as null when listed
    let mut missing: BTreeMap<(&str, &str), (&str, BTreeSet<&str>)> = BTreeMap::new();
    for t in &types {
        if let Some(text) = &t.missing {
            missing.entry((t.source, t.column)).or_insert((t.expected, BTreeSet::new())).1.insert(text);
        }
    }
    if !missing.is_empty() {
        let fields: Vec<String> = missing
            .iter()
            .map(|((_, column), (expected, texts))| {
                let texts: Vec<String> = texts.iter().map(|t| format!("{t:?}")).collect();
                format!("name = {column:?}, type = {expected:?} and missingValues = [{}]", texts.join(", "))
            })
            .collect();
        hints.push(format!(
            "a text that stands for a missing value among numbers or booleans ({}) is read as null, and counted, \
             when its source's field lists it among its missingValues: {}, each key on a line of its own (with the \
             texts the field lists already; a CSV source lists \"\" too: the field's list replaces the source's)",
            missing.keys().map(|(s, c)| format!("{s}.{c}")).collect::<Vec<_>>().join(", "),
            match fields.len() {
                1 => format!("a [[source.field]] table with {}", fields[0]),
                _ => format!("a [[source.field]] table for each ({})", fields.join("; ")),
            }
        ));
    }
    // a column whose type its first value decided, and values of other types broke: the way to
    // keep them all (a declared column has no value that decided it)
    let mixed: BTreeSet<(&str, &str)> = types
        .iter()
        .filter(|t| {
            t.decided && !t.nonfinite && !t.numeric && t.missing.is_none() && !commas.contains(&(t.source, t.column))
        })
        .map(|t| (t.source, t.column))
        .collect();
    if !mixed.is_empty() {
        hints.push(format!(
            "a column whose values are of several types on purpose ({}) is kept whole, as JSON text, when its \
             source declares it so: {}",
            mixed.iter().map(|(s, c)| format!("{s}.{c}")).collect::<Vec<_>>().join(", "),
            field_tables(mixed.iter().map(|(_, c)| *c), "any")
        ));
    }
    // a file whose writer was stopped mid-record: its other records can be read
    let cut: BTreeSet<&str> = findings
        .iter()
        .filter(|(scope, _, f)| *scope == Scope::Source && *f == Finding::Truncated)
        .map(|(_, source, _)| source.as_str())
        .collect();
    if !cut.is_empty() {
        hints.push(format!(
            "a file's last line cut short (its writer was stopped) can be set aside while its other lines are read: \
             `on_truncated = \"reject\"` in the [[source]] of {} keeps it in rejects/, named in a warning and the card",
            listed(cut)
        ));
    }
    // a CSV column typed float that holds an integer no float holds: its text kept as it is
    let inexact: BTreeSet<(&str, &str)> = findings
        .iter()
        .filter_map(|(scope, source, f)| match f {
            Finding::InexactInteger { column } if *scope == Scope::Source => Some((source.as_str(), column.as_str())),
            _ => None,
        })
        .collect();
    if !inexact.is_empty() {
        hints.push(format!(
            "a CSV column of numbers that holds integers beyond ±2^53 ({}) keeps them exactly as text when its \
             source declares it so: {} (CAST it in SQL where a number is needed)",
            inexact.iter().map(|(s, c)| format!("{s}.{c}")).collect::<Vec<_>>().join(", "),
            field_tables(inexact.iter().map(|(_, c)| *c), "string")
        ));
    }
    hints
}

/// How to declare `columns` of type `ty` in a source, as a hint says it on one line: a
/// `[[source.field]]` table per column, whose keys go on lines of their own (TOML has no
/// table and key on one line).
fn field_tables<'a>(columns: impl Iterator<Item = &'a str>, ty: &str) -> String {
    let tables: Vec<String> = columns.map(|c| format!("name = {c:?} and type = {ty:?}")).collect();
    match tables.len() {
        1 => format!("a [[source.field]] table with {}, each key on a line of its own", tables[0]),
        _ => format!("a [[source.field]] table for each ({}), each key on a line of its own", tables.join("; ")),
    }
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
    /// Human-readable text, as the card shows it.
    pub message: String,
    /// The text with lines of the input quoted (a comment above a CSV header), shown where the
    /// build runs (stderr, `--format json`), never in the card, which is published: the input's
    /// author did not write those lines for it. `None` when `message` quotes nothing.
    #[serde(skip)]
    pub quoted: Option<String>,
}

impl Warning {
    /// The warning as the card shows it: `message`, without lines quoted from the input.
    pub fn public(&self) -> String {
        self.render(&self.message)
    }

    fn render(&self, message: &str) -> String {
        match &self.source {
            Some(src) => format!("{src}: {}: {message}", self.table),
            None => format!("{}: {message}", self.table),
        }
    }
}

impl fmt::Display for Warning {
    /// `warning: ` and the text with its quoted lines, for the terminal.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "warning: {}", self.render(self.quoted.as_deref().unwrap_or(&self.message)))
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
    /// Files under the pipeline's `raw/` that no source reads and `not_read` does not name
    /// (added since the pipeline was written, or missed by its paths): the card names them.
    #[serde(skip)]
    pub unread_raw: Vec<String>,
    /// All violations found, including those not kept.
    pub violations_total: usize,
    /// How many violations to keep.
    #[serde(skip)]
    pub max_errors: usize,
    /// Where the last of the kept violations in sorted order is, once looked for.
    #[serde(skip)]
    last_kept: Option<usize>,
    /// Violations listed whatever `max_errors` leaves out ([`BuildReport::violation_shown`]).
    #[serde(skip)]
    shown: Vec<Violation>,
    /// What every violation found (kept or not), each kind once per table or source and
    /// column, without its values: what [`violation_hints`] chooses from.
    #[serde(skip)]
    findings: std::collections::BTreeSet<(Scope, String, Finding)>,
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
    /// Of those, the rows set aside with their record (`record_columns`) rather than for a
    /// later row of their own key, by table: no row kept holds their keys (a metric only the
    /// stopped attempt logged at a step logged again). Examples are `key (file:line)`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub set_aside_whole: std::collections::BTreeMap<String, Tally>,
    /// Rows set aside for their own reasons (`--on-invalid reject`) that a table's keep rule
    /// would have kept: it kept another row of their key instead, by table. Examples are
    /// `run=a, step=1 at raw.jsonl:2, kept raw.jsonl:1`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub kept_instead: std::collections::BTreeMap<String, Tally>,
}

impl BuildReport {
    /// An empty report keeping at most `max_errors` violations.
    pub fn new(max_errors: usize) -> Self {
        BuildReport { max_errors, ..Default::default() }
    }

    /// Records a violation: counted, and kept when it is among the first `max_errors` in
    /// sorted order (whichever came first: rows are checked column by column).
    pub fn violation(&mut self, v: Violation) {
        self.count(&v);
        self.keep(v);
    }

    /// Records a violation that is listed whatever `max_errors` leaves out (the one that
    /// stopped the reading); it takes one of the `max_errors` places.
    pub fn violation_shown(&mut self, v: Violation) {
        self.count(&v);
        self.show(v);
    }

    /// Counts `v`, and notes what it found for the hints.
    fn count(&mut self, v: &Violation) {
        self.violations_total += 1;
        if let Some(f) = &v.finding {
            self.findings.insert((v.scope, v.table.clone(), f.without_values()));
        } else if v.rule == "truncated" {
            // (the readers of every format name the rule; the finding is made here, once)
            self.findings.insert((v.scope, v.table.clone(), Finding::Truncated));
        }
    }

    /// Lists `v` whatever `max_errors` leaves out: the last of the others makes room.
    fn show(&mut self, v: Violation) {
        self.shown.push(v);
        // the place it takes: the last of the others goes
        while !self.violations.is_empty() && self.violations.len() + self.shown.len() > self.max_errors {
            if let Some((i, _)) = self.violations.iter().enumerate().max_by(|a, b| a.1.cmp(b.1)) {
                self.violations.remove(i);
            }
        }
        self.last_kept = None;
    }

    /// Keeps `v` if it sorts before the last kept violation, in its place; a replacement
    /// looks for the new last one (one pass over at most `max_errors`; violations come about
    /// in order, file by file and line by line, so replacements are few).
    fn keep(&mut self, v: Violation) {
        if self.violations.len() + self.shown.len() < self.max_errors {
            self.violations.push(v);
            self.last_kept = None;
            return;
        }
        let last = match self.last_kept {
            Some(i) => i,
            None => {
                let Some((i, _)) = self.violations.iter().enumerate().max_by(|a, b| a.1.cmp(b.1)) else { return };
                self.last_kept = Some(i);
                i
            }
        };
        if v < self.violations[last] {
            self.violations[last] = v;
            self.last_kept = None;
        }
    }

    /// Records a warning.
    pub fn warn(&mut self, table: &str, kind: &str, source: Option<SourceRef>, message: String) {
        self.warnings.push(Warning { table: table.to_string(), kind: kind.to_string(), source, message, quoted: None });
    }

    /// Records a warning whose text quotes lines of the input (`quoted`), which the card shows
    /// as `message` ([`Warning::quoted`]).
    pub fn warn_quoting(
        &mut self,
        table: &str,
        kind: &str,
        source: Option<SourceRef>,
        message: String,
        quoted: String,
    ) {
        let quoted = Some(quoted);
        self.warnings.push(Warning { table: table.to_string(), kind: kind.to_string(), source, message, quoted });
    }

    /// Adds what `other` found after what this report holds (violations up to `max_errors`,
    /// all counted).
    pub fn absorb(&mut self, other: BuildReport) {
        self.violations_total += other.violations_total;
        self.findings.extend(other.findings);
        for v in other.shown {
            self.show(v);
        }
        for v in other.violations {
            self.keep(v);
        }
        self.warnings.extend(other.warnings);
        for (mine, theirs) in [
            (&mut self.nonfinite, other.nonfinite),
            (&mut self.coercions, other.coercions),
            (&mut self.duplicates_dropped, other.duplicates_dropped),
            (&mut self.set_aside_whole, other.set_aside_whole),
            (&mut self.kept_instead, other.kept_instead),
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

    /// [`BuildReport::to_error`], the violations moved into the error rather than copied: for
    /// an error that a caller adds to this report's (a source that stops the reading), so that
    /// each is said once.
    pub fn take_error(&mut self) -> crate::Error {
        let e = self.to_error();
        self.violations.clear();
        self.violations_total = 0;
        self.findings.clear();
        e
    }

    /// [`BuildReport::to_error`], covering what `checked` says.
    pub fn to_error_checked(&mut self, checked: Checked) -> crate::Error {
        self.violations.append(&mut self.shown);
        self.violations.sort();
        self.last_kept = None;
        crate::Error::Invalid {
            violations: self.violations.clone(),
            total: self.violations_total,
            checked,
            hints: violation_hints(&self.findings),
            warnings: self.warnings.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Position;

    #[test]
    fn names_listed_keep_to_one_line() {
        assert_eq!(super::first_names(&["raw/new\nline.jsonl", "b", "c"], 2), "raw/new\\nline.jsonl, b and 1 more");
    }

    #[test]
    fn the_first_violations_in_sorted_order_are_kept_and_a_shown_one_stays() {
        let v = |line: u64| super::Violation::of_source("a.jsonl", Position::Line(line), "$.x", "type", "bad");
        let mut r = super::BuildReport::new(3);
        for line in [9, 7, 8, 2, 5, 1, 6] {
            r.violation(v(line));
        }
        r.violation_shown(v(40));
        let crate::Error::Invalid { violations, total, .. } = r.to_error() else { panic!() };
        let lines: Vec<String> = violations.iter().map(|x| x.source.as_ref().unwrap().at.to_string()).collect();
        assert_eq!((lines, total), (vec!["1".to_string(), "2".into(), "40".into()], 8));
    }

    #[test]
    fn numbers_with_a_decimal_comma_are_told_apart_and_get_their_hint() {
        for yes in ["0,5", "-12,25", "+3,0", "1.234,5", "12.345.678,9"] {
            assert!(super::is_decimal_comma(yes), "{yes}");
        }
        for no in ["0.5", "1,234.5", "a,5", ",5", "5,", "1.23,4", "1,2,3", ""] {
            assert!(!super::is_decimal_comma(no), "{no}");
        }
        let finding = |decimal_comma| super::Finding::Type {
            column: "loss".into(),
            expected: "number".into(),
            found: String::new(),
            nonfinite_string: false,
            numeric_string: false,
            decimal_comma,
            decided_at: Some(String::new()),
            missing: None,
        };
        let hints = |f| super::violation_hints(&[(super::Scope::Source, "s".to_string(), f)].into_iter().collect());
        let with = hints(finding(true));
        assert_eq!(with.len(), 1, "{with:?}");
        assert!(with[0].starts_with("numbers written with a decimal comma (\"0,5\") in s.loss are text"), "{with:?}");
        // another string: the column kept whole as JSON text
        assert!(hints(finding(false))[0].starts_with("a column whose values are of several types"));
    }

    #[test]
    fn a_last_line_cut_short_gets_the_hint_of_on_truncated() {
        let mut r = super::BuildReport::new(10);
        r.violation(super::Violation {
            scope: super::Scope::Source,
            table: "metrics_raw".into(),
            source: None,
            path: "$".into(),
            rule: "truncated".into(),
            key: None,
            message: "truncated last line".into(),
            finding: None,
        });
        let hints = super::violation_hints(&r.findings);
        assert_eq!(hints.len(), 1, "{hints:?}");
        assert!(hints[0].contains("`on_truncated = \"reject\"` in the [[source]] of metrics_raw"), "{hints:?}");
    }

    #[test]
    fn places_order_as_they_come_in_the_file() {
        let p = |s: &str| Position::Pointer(s.into());
        let mut v = vec![p("/runs/10"), p("/runs/2"), Position::Line(11), p("/runs/2/a"), Position::Line(9), p("")];
        v.sort();
        assert_eq!(v, vec![Position::Line(9), Position::Line(11), p(""), p("/runs/2"), p("/runs/2/a"), p("/runs/10")]);
    }
}
