//! The library's error type.
//!
//! In: failures from every stage. Out: one [`Error`] whose `Display` names the place (file, line,
//! column or JSON path) and what was expected and found, and whose [`Error::exit_code`] tells the
//! command-line front end which exit status to use (1 = the data is invalid, 2 = anything else).

use std::path::PathBuf;

use crate::core::report::Violation;

/// Result alias used across the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in runpack.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A pipeline, schema or card-metadata file is wrong (unknown key, bad value, missing file).
    /// `location` is `path` or `path:line:column` when known.
    #[error("{location}: {message}")]
    Config {
        /// `path[:line[:column]]` of the offending definition.
        location: String,
        /// What was expected and what was found.
        message: String,
    },

    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder involved.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },

    /// The input data broke the declared rules. Every violation is listed (up to the cap given
    /// to the build), sorted by table and source location; `total` counts all of them.
    #[error("{}", render_violations(violations, *total, *checked))]
    Invalid {
        /// The violations kept for display (at most `--max-errors`).
        violations: Vec<Violation>,
        /// How many violations were found in all.
        total: usize,
        /// What the violations cover: less than all the input when the build stopped early, so
        /// that fixing these may bring more to light.
        checked: crate::core::report::Checked,
        /// What to do about them, chosen from what every violation found, not only the kept
        /// ones ([`crate::core::report::violation_hints`]).
        hints: Vec<String>,
        /// What the build warned of before it stopped (an empty input, a declared field no
        /// record has): said too, as a build that succeeds says them.
        warnings: Vec<crate::core::report::Warning>,
    },

    /// A SQL query failed to plan or run (DataFusion's message is kept as is, followed by a
    /// hint when a value did not convert to the type a cast asked for).
    #[error(
        "{context}{}: {}{}{}{}{}{}",
        sql_place(source),
        sql_message(source),
        cast_hint(source),
        memory_hint(source),
        lost_hint(source),
        ambiguous_hint(source),
        way_out_hint(source)
    )]
    Sql {
        /// Which query (table name, card section, or "query").
        context: String,
        /// DataFusion's error.
        #[source]
        source: Box<datafusion::error::DataFusionError>,
    },

    /// Arrow or Parquet failed on data runpack produced or read.
    #[error("{context}: {source}")]
    Format {
        /// The file or table concerned.
        context: String,
        /// The library's error, with its own causes (or runpack's message, as an error).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A library runpack calls panicked while runpack was doing `context` (the Parquet reader
    /// on a corrupt file, for one); `message` is the panic's.
    #[error("{context}: stopped on an internal error of a library runpack uses: {message}")]
    Panicked {
        /// What runpack was doing (`query`, a file being read).
        context: String,
        /// The panic's message.
        message: String,
    },

    /// A request to the Hugging Face Hub failed. The message never contains the token.
    #[error("{message}")]
    Hub {
        /// What failed and why (the causes' text included, the token never).
        message: String,
        /// The HTTP stack's or the Xet client's error, when one was behind it (`-v` shows
        /// the causes it holds that the message does not).
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// The Hugging Face Hub answered a request with an error status (after any retries). The
    /// message is the server's own (`X-Error-Message` or the JSON `error`), never the token.
    #[error("{what}: HTTP {status}: {message}{}", request_id.as_ref().map(|r| format!(" (request id {r})")).unwrap_or_default())]
    HubStatus {
        /// The step that failed (`commit to acme/toy@main`, `LFS batch`, …).
        what: String,
        /// The HTTP status code.
        status: u16,
        /// The server's explanation.
        message: String,
        /// `X-Request-Id` (or the CDN's trace id) when the server sent one.
        request_id: Option<String>,
        /// `X-Error-Code` (`RepoNotFound`, `RevisionNotFound`, `EntryNotFound`, …) when sent.
        error_code: Option<String>,
    },

    /// A release folder or target is in a state that forbids the operation
    /// (for example: the version already exists and `--force` was not given).
    #[error("{0}")]
    Refused(String),
}

impl Error {
    /// The process exit status this error maps to: 1 when the data is invalid, 2 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Invalid { .. } => 1,
            _ => 2,
        }
    }

    /// Builds an [`Error::Invalid`] of `violations`, all of them, every input checked, with no
    /// hints or warnings (a check outside a build's report).
    pub fn invalid(violations: Vec<Violation>) -> Self {
        Error::Invalid {
            total: violations.len(),
            violations,
            checked: crate::core::report::Checked::All,
            hints: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Builds an [`Error::Invalid`] of one violation of a source's raw input: file `file` at
    /// `at` (a line or JSON pointer), `path` inside it (a JSON path, `column 7`, or empty),
    /// the rule broken and what was found. The table is left empty, for the reader that knows
    /// the source's name to fill in.
    pub fn source_violation(
        file: &str,
        at: crate::core::report::Position,
        path: impl Into<String>,
        rule: &str,
        message: impl Into<String>,
    ) -> Self {
        Error::invalid(vec![Violation::of_source(file, at, path, rule, message)])
    }

    /// Builds an [`Error::Hub`] said by `message`, with no cause behind it.
    pub fn hub(message: impl Into<String>) -> Self {
        Error::Hub { message: message.into(), source: None }
    }

    /// Builds an [`Error::Hub`] said by `message` (which says `cause` too) with `cause` as its
    /// source.
    pub fn hub_caused(message: impl Into<String>, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Hub { message: message.into(), source: Some(Box::new(cause)) }
    }

    /// Builds a [`Error::Config`] error for `location` (a path, or `path:line:col`).
    pub fn config(location: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Config { location: location.into(), message: message.into() }
    }

    /// Builds an [`Error::Config`] error for a JSON file at `path` that serde_json could not
    /// read: placed at `path:line:column` (column 1 where serde_json says 0, at a line's end),
    /// the message without the position serde_json appends to it.
    pub fn json_file(path: impl std::fmt::Display, e: &serde_json::Error) -> Self {
        let message = e.to_string();
        let what = message.strip_suffix(&format!(" at line {} column {}", e.line(), e.column())).unwrap_or(&message);
        Error::config(format!("{path}:{}:{}", e.line(), e.column().max(1)), what)
    }

    /// Builds an [`Error::Refused`] error for a path the user gave that is not there
    /// (`<place>: no such file or folder`), worded alike by every command.
    pub fn not_found(place: impl std::fmt::Display) -> Self {
        Error::Refused(format!("{place}: no such file or folder"))
    }

    /// Builds an [`Error::Io`] error for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    /// Builds an [`Error::Sql`] error for the query named `context`.
    pub fn sql(context: impl Into<String>, source: datafusion::error::DataFusionError) -> Self {
        Error::Sql { context: context.into(), source: Box::new(source) }
    }

    /// [`Error::sql`] for an error of parsing `sql`: a syntax error found at the end of the
    /// text (`found: the end of the SQL`), where the SQL parser names no place, gets the line
    /// and column of its last character (1-based, columns in characters).
    pub fn sql_parse(context: impl Into<String>, source: datafusion::error::DataFusionError, sql: &str) -> Self {
        let mut context = context.into();
        // (an error that names no place and is not about the end, such as DataFusion's own
        // `Missing LOCATION clause`, is placed nowhere)
        if matches!(syntax_error(&source), Some((_, SqlPlace::End))) {
            let text = sql.trim_end();
            let line = text.matches('\n').count() + 1;
            let column = text.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0).max(1);
            context.push_str(&format!(" (SQL line {line}, column {column}, its end)"));
        }
        Error::sql(context, source)
    }

    /// Builds an [`Error::Format`] error from a library's error (kept as the cause, so that
    /// `-v` can show the causes behind it) or from a message (`String`, `&str`).
    pub fn format(context: impl Into<String>, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Error::Format { context: context.into(), source: source.into() }
    }
}

/// A message saying what a library's error means for runpack's work, with that error kept as
/// its cause (shown by `-v`).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Explained {
    /// What went wrong, in runpack's words.
    pub message: String,
    /// The error behind it.
    #[source]
    pub cause: Box<dyn std::error::Error + Send + Sync>,
}

/// The panics the process's hook saw, newest last, each as `message (at file:line)`.
static PANICS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Installs the process's panic hook (the `runpack` command does, first thing). A panic is
/// kept, message and place, for [`take_panic`] instead of being printed: the code that catches
/// it ([`catch_panic`]) turns it into an error that names the file being read, and one that
/// nothing catches is reported by the command as an internal error. With `RUST_BACKTRACE`
/// set (not `0`), the default hook still prints it with its backtrace.
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    let backtrace = std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0");
    std::panic::set_hook(Box::new(move |info| {
        let place = info.location().map(|l| format!(" (at {}:{})", l.file(), l.line())).unwrap_or_default();
        if let Ok(mut seen) = PANICS.lock() {
            seen.push(format!("{}{place}", panic_message(info.payload())));
        }
        if backtrace {
            default(info);
        }
    }));
}

/// The newest panic the hook of [`install_panic_hook`] kept (`message (at file:line)`), and
/// forgets them all.
pub fn take_panic() -> Option<String> {
    PANICS.lock().ok().and_then(|mut seen| std::mem::take(&mut *seen).pop())
}

/// The text of a panic's payload (`panic!`'s message; `a panic` when it carries none).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string())
}

/// Runs `f`; a panic inside it (the Parquet reader's on a corrupt file, for one) comes back
/// as its message, for the caller to name what was being read.
pub fn catch_panic<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        take_panic();
        panic_message(p.as_ref())
    })
}

/// Where in the SQL text DataFusion found the problem (` (SQL line 1, column 13)`), when it
/// says.
fn sql_place(e: &datafusion::error::DataFusionError) -> String {
    if let Some((_, place)) = syntax_error(e) {
        return match place {
            SqlPlace::At(line, column) => format!(" (SQL line {line}, column {column})"),
            SqlPlace::End | SqlPlace::Unsaid => String::new(),
        };
    }
    match e.diagnostic().and_then(|d| d.span) {
        Some(span) => format!(" (SQL line {}, column {})", span.start.line, span.start.column),
        None => String::new(),
    }
}

/// Where the SQL parser found a syntax error.
enum SqlPlace {
    /// A line and column (1-based), which sqlparser writes into its text (`… at Line: 1,
    /// Column: 7`).
    At(u64, u64),
    /// The end of the text: sqlparser's `found: EOF`, which names no place.
    End,
    /// No place: DataFusion's own errors (`Missing LOCATION clause`) name none.
    Unsaid,
}

/// The SQL parser's message and the place it names, when `e` is a syntax error.
fn syntax_error(e: &datafusion::error::DataFusionError) -> Option<(String, SqlPlace)> {
    use datafusion::sql::sqlparser::parser::ParserError;
    let datafusion::error::DataFusionError::SQL(p, _) = e.find_root() else { return None };
    let text = match p.as_ref() {
        ParserError::TokenizerError(t) | ParserError::ParserError(t) => t.clone(),
        ParserError::RecursionLimitExceeded => format!(
            "the SQL nests deeper than the parser's recursion limit ({} levels of parentheses, subqueries or \
             expressions inside expressions)",
            crate::core::options::SQL_RECURSION_LIMIT
        ),
    };
    let place = text.rfind(" at Line: ").and_then(|i| {
        let (line, column) = text[i + " at Line: ".len()..].split_once(", Column: ")?;
        Some((i, line.trim().parse().ok()?, column.trim().parse().ok()?))
    });
    Some(match place {
        Some((i, line, column)) => (text[..i].to_string(), SqlPlace::At(line, column)),
        None if text.contains("found: EOF") => (text.replace("found: EOF", "found: the end of the SQL"), SqlPlace::End),
        None => (text, SqlPlace::Unsaid),
    })
}

/// `text` with its control characters written as Rust escapes (`\n`, `\t`, `\u{1b}`), so
/// that one value stays on one line and no escape sequence reaches a terminal.
pub fn escape_control(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

/// DataFusion's message, without the request to report a bug that DataFusion 55 adds when no
/// signature of a function takes the argument types given (`sum` of a text column): that is
/// a mistake in the SQL, said by the part kept (the function, the types, the candidates).
fn sql_message(e: &datafusion::error::DataFusionError) -> String {
    if let Some((message, _)) = syntax_error(e) {
        return format!("SQL syntax error: {message}");
    }
    // a planning error from an analyzer rule comes wrapped in the rule's name (`the SIMILAR TO
    // check`, `type_coercion`), which tells a user nothing: the planning error alone
    if let datafusion::error::DataFusionError::Context(_, inner) = e
        && matches!(**inner, datafusion::error::DataFusionError::Plan(_))
    {
        return sql_message(inner);
    }
    // a cast that failed while DataFusion folded the SQL's constants: the cast's error alone
    if folded_constant(e) {
        return sql_message(e.find_root());
    }
    let text = e.to_string();
    if let Some(said) = unplanned(&text) {
        return said;
    }
    match text.find("No function matches the given name and argument types") {
        Some(i) if text.contains("Internal error") => {
            let tail = &text[i..];
            let note = if tail.contains("Utf8") {
                "\nhint: Utf8 and Utf8View are text; a text column that holds numbers reads as one with CAST(x AS DOUBLE)"
            } else {
                ""
            };
            format!("{tail}{note}")
        }
        // names from the data may hold terminal escapes: shown escaped (line breaks stay)
        _ if text.chars().any(|c| c.is_control() && c != '\n') => {
            text.split('\n').map(escape_control).collect::<Vec<_>>().join("\n")
        }
        _ => text,
    }
}

/// DataFusion 55's "not implemented" for a join or a subquery it does not plan, which prints
/// the parser's tree (`Unsupported JOIN operator Semi(On(BinaryOp { left: … }))`), and its
/// failed check of a window's input order, which prints the physical plan: said without the
/// tree or the plan, with what to write instead. `None` for other messages.
fn unplanned(text: &str) -> Option<String> {
    const JOIN: &str = "Unsupported JOIN operator ";
    const EXPR: &str = "Physical plan does not support logical expression ";
    let head =
        |at: usize| -> String { text[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect() };
    if let Some(i) = text.find(JOIN) {
        let op = head(i + JOIN.len());
        let written = match op.as_str() {
            "Semi" => "SEMI JOIN",
            "Anti" => "ANTI JOIN",
            "AsOf" => "ASOF JOIN",
            "CrossApply" => "CROSS APPLY",
            "OuterApply" => "OUTER APPLY",
            "StraightJoin" => "STRAIGHT_JOIN",
            _ => op.as_str(),
        };
        let instead = match op.as_str() {
            "Semi" | "Anti" => format!(
                "; write LEFT {written} (or RIGHT {written}), which keeps the rows of the side it names: \
                 a LEFT {written} b ON a.k = b.k"
            ),
            "AsOf" => "; for each row the nearest row before it, join and keep one per row: \
                       SELECT * FROM (SELECT a.*, b.x, row_number() OVER (PARTITION BY a.id ORDER BY b.t DESC) AS n \
                       FROM a LEFT JOIN b ON b.t <= a.t) WHERE n = 1"
                .to_string(),
            "CrossApply" | "OuterApply" => "; write a JOIN (or LEFT JOIN) of a subquery, or unnest()".to_string(),
            _ => String::new(),
        };
        return Some(format!("DataFusion 55 does not plan {written}{instead}"));
    }
    // the sanity check of a window's input order: DataFusion 55 does not find its own sort of
    // a call nested in another (-abs(x), sqrt(abs(x))) to be that order
    const ORDER: &str = "does not satisfy order requirements: [";
    if text.contains("Plan: [\"") && text.contains("WindowAggExec") && text.contains(ORDER) {
        return Some(
            "DataFusion 55 could not plan a window ordered or partitioned by an expression over a call nested in \
             another (-abs(x), sqrt(abs(x)), a CASE over abs(x)). Compute it in a subquery first: SELECT …, rank() OVER \
             (ORDER BY o) FROM (SELECT *, -abs(x) AS o FROM t)"
                .to_string(),
        );
    }
    let i = text.find(EXPR)?;
    Some(match head(i + EXPR.len()).as_str() {
        "InSubquery" | "Exists" => {
            "DataFusion 55 plans IN (subquery) and EXISTS (subquery) as conditions of WHERE and \
             HAVING only, not in a select list or a function's arguments. In a select list, join: SELECT o.k, s.k IS \
             NOT NULL AS found FROM t o LEFT JOIN (SELECT DISTINCT k FROM i) s ON s.k = o.k is EXISTS (SELECT 1 FROM i \
             WHERE i.k = o.k) (and k IN (SELECT k FROM i) where neither side holds a NULL)"
                .to_string()
        }
        "ScalarSubquery" => "DataFusion 55 plans a subquery that gives one value from the outer query's columns only \
             where each condition naming them is an = (WHERE i.k = o.k, not i.k < o.k, IS NOT DISTINCT FROM, or a \
             UNION inside). Join and group instead: SELECT o.k, max(i.x) FROM t o LEFT JOIN t i ON i.k < o.k GROUP BY \
             o.k"
        .to_string(),
        other => format!("DataFusion 55 does not plan {other} here"),
    })
}

/// What to do about a value that a cast in SQL could not convert: DataFusion names the value,
/// not the row it came from.
fn cast_hint(e: &datafusion::error::DataFusionError) -> &'static str {
    use datafusion::arrow::error::ArrowError;
    match e.find_root() {
        datafusion::error::DataFusionError::ArrowError(a, _)
            if matches!(**a, ArrowError::CastError(_) | ArrowError::ParseError(_)) && folded_constant(e) =>
        {
            "\nhint: the value is written in the SQL: a constant cast by CAST, or to the type of what it is \
             compared with or computed beside (`int_col = 'abc'` casts 'abc' to an integer); write a value of that \
             type, or cast the column instead (`CAST(int_col AS VARCHAR) = 'abc'`)"
        }
        datafusion::error::DataFusionError::ArrowError(a, _)
            if matches!(**a, ArrowError::CastError(_) | ArrowError::ParseError(_)) =>
        {
            "\nhint: the rows holding such a value are those of `x IS NOT NULL AND TRY_CAST(x AS type) IS NULL` (a \
             source's rows name their file and line in `_source_file` and `_source_line`); `TRY_CAST(x AS type)` \
             in place of the cast reads them as NULL, without a word; in a pipeline, declaring the column's type in \
             the source's schema instead reports every such value with its file and line"
        }
        _ => "",
    }
}

/// What to write for a column name two tables of a query hold: DataFusion 55 reads the column
/// of a `JOIN … USING (k)` unqualified in the select list of one such join only, not in
/// `WHERE`, `EXCLUDE` or beside a second join.
fn ambiguous_hint(e: &datafusion::error::DataFusionError) -> String {
    const SAID: &str = "Ambiguous reference to unqualified field ";
    let text = e.to_string();
    let Some(i) = text.find(SAID) else { return String::new() };
    // the column as DataFusion names it, up to the end of its word
    let k: String = text[i + SAID.len()..].chars().take_while(|c| !c.is_whitespace()).collect();
    let k = escape_control(&k);
    format!(
        "\nhint: name the table the column is read from (`a.{k}`, where a is the table's name or alias): two tables \
         of the query hold a column {k}. After a JOIN … USING ({k}), DataFusion 55 reads {k} without its table only in \
         the select list of one such join; in a LEFT or RIGHT JOIN, name the side that keeps every row"
    )
}

/// What to write for DataFusion 55 errors that name no way out: two aggregates of one query
/// with one name (DataFusion names an aggregate by its arguments with their casts left out,
/// before the select list's aliases, so `sum(CAST(x AS DOUBLE)) AS a, sum(x) AS b` is refused
/// as two `sum(x)`), a struct's member after an index (`l[1].c`, which DataFusion does not
/// read), a window ordered by an interval, a division by zero in a row.
fn way_out_hint(e: &datafusion::error::DataFusionError) -> &'static str {
    let text = e.to_string();
    if text.contains("Divide by zero error") {
        "\nhint: a row divides by zero: x / NULLIF(y, 0) gives NULL there, and the rows are those of y = 0 (a \
         source's rows name their file and line in `_source_file` and `_source_line`)"
    } else if text.contains("Cannot run range queries on datatype: Interval") {
        "\nhint: a window ordered by an interval: DataFusion 55 orders intervals by their months, then their days, \
         then the rest, not by their length; order by date_part('epoch', x) (a month counts 30 days), or by the \
         timestamps themselves"
    } else if text.contains("Cannot run range queries on datatype: Duration") {
        "\nhint: DataFusion 55 orders a window by a duration only with a ROWS frame (rank() OVER (ORDER BY d ROWS \
         BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)); or order it by date_part('epoch', d), the seconds"
    } else if text.contains("Dot access not supported for non-string expr") {
        "\nhint: after an index or a function call, DataFusion 55 reads a struct's member in brackets only: \
         write l[1]['c'] for l[1].c"
    } else if text.contains("Schema contains duplicate unqualified field name") && text.contains('(') {
        "\nhint: DataFusion 55 names an aggregate by its arguments with their casts left out, before the aliases \
         are given: sum(CAST(x AS DOUBLE)) AS a and sum(x) AS b are both sum(x) to it. Write one of them another way \
         (sum(x * 1.0), sum(x) * 1.0), or compute the cast in a subquery"
    } else {
        ""
    }
}

/// Whether `e` failed while DataFusion folded the SQL's constants (its `simplify_expressions`
/// rule): a value cast there is written in the SQL, not read from a row.
fn folded_constant(e: &datafusion::error::DataFusionError) -> bool {
    match e {
        datafusion::error::DataFusionError::Context(rule, inner) => {
            rule.contains("'simplify_expressions'") || folded_constant(inner)
        }
        _ => false,
    }
}

/// What to do when a process of a Ballista cluster stopped during a job: Ballista says it in
/// the words of its transport (`GrpcConnectionError`, `Shuffle fetch partition error`,
/// `h2 protocol error`), which name neither the process nor the way out.
fn lost_hint(e: &datafusion::error::DataFusionError) -> &'static str {
    const SAID: [&str; 4] =
        ["GrpcConnectionError", "Shuffle fetch partition error", "h2 protocol error", "FetchFailed"];
    let text = e.to_string();
    if SAID.iter().any(|s| text.contains(s)) {
        "\nhint: a process of the cluster stopped during the job (an executor that held rows the job needed, or the \
         scheduler): nothing is released; start what stopped (`runpack cluster executor …`, `runpack cluster \
         scheduler …`) and run the command again"
    } else {
        ""
    }
}

/// What to do when an operator that cannot spill (or cannot spill any further) finds the
/// memory pool full.
fn memory_hint(e: &datafusion::error::DataFusionError) -> String {
    match e.find_root() {
        datafusion::error::DataFusionError::ResourcesExhausted(_) => format!(
            "\nhint: the SQL needed more memory than its pool ({} MiB unless set); in `runpack query`, \
             `SET datafusion.runtime.memory_limit = '4G';` before the query raises it",
            crate::core::options::SQL_MEMORY_LIMIT_BYTES >> 20
        ),
        _ => String::new(),
    }
}

fn render_violations(violations: &[Violation], total: usize, checked: crate::core::report::Checked) -> String {
    let mut out = String::new();
    for v in violations {
        out.push_str(&v.to_string());
        out.push('\n');
    }
    if total > violations.len() {
        out.push_str(&format!("... and {} more ({} violations in all)\n", total - violations.len(), total));
    }
    out.push_str(&format!("{total} violation{} found", if total == 1 { "" } else { "s" }));
    out.push_str(checked.said());
    out
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn a_hub_error_keeps_its_cause_and_says_only_its_message() {
        let cause = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "connection reset by peer");
        let e = Error::hub_caused("download data/t.parquet: the connection kept breaking", cause);
        assert_eq!(e.to_string(), "download data/t.parquet: the connection kept breaking");
        let source = std::error::Error::source(&e).expect("a cause");
        assert_eq!(source.to_string(), "connection reset by peer");
        assert!(std::error::Error::source(&Error::hub("no cause")).is_none());
    }

    #[test]
    fn a_cluster_process_lost_during_a_job_is_said_with_the_way_out() {
        let lost = datafusion::error::DataFusionError::Execution(
            "Job 038JF failed: Shuffle fetch partition error from Executor 0f5f: GrpcConnectionError(...)".into(),
        );
        let e = Error::sql("table t", lost).to_string();
        assert!(e.contains("hint: a process of the cluster stopped during the job"), "{e}");
        let other = Error::sql("table t", datafusion::error::DataFusionError::Execution("division by zero".into()));
        assert!(!other.to_string().contains("hint"));
    }
}
