//! JSON values into typed Arrow columns, with every misfit reported.
//!
//! In: a batch of records (JSON objects with their source place) and a target type per column.
//! Out: one Arrow array per column, the problems found (row, JSON path, message) and the
//! events worth counting (non-finite tokens, coerced strings). A value that does not fit its
//! column is never coerced silently: `3.5` is never an integer, `"12"` never a number unless
//! the source opts in (`coerce_numeric_strings`), integers that a `Float64` cannot hold
//! exactly are refused. A row with a problem gets nulls where the value did not fit and is
//! marked bad; the caller drops or rejects it.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanBuilder, Date32Builder, Float64Builder, Int64Builder, ListArray, StringBuilder, StructArray,
    TimestampMicrosecondBuilder, UInt64Builder,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, Field, Fields, TimeUnit};
use serde_json::Value;

use super::lenient::{self, Special};
use super::path::{self, Seg, describe};
use crate::core::report::SourceRef;
use crate::core::schema::FieldDescriptor;
use crate::core::spec::NonFinite;

/// The shape runpack converts a value into.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// `Boolean`.
    Bool,
    /// `Int64`.
    Int64,
    /// `UInt64`.
    UInt64,
    /// `Float64`.
    Float64,
    /// `Utf8` holding a JSON string's text.
    Str,
    /// `Utf8` holding a string's text, or the JSON text of a list or object (a logged value
    /// that is no number: the `value_text` of the long-form formats), whose non-finite
    /// numbers are counted as [`Target::Json`]'s are.
    Text,
    /// `Utf8` holding the JSON text of any value.
    Json,
    /// `Utf8` holding the JSON text of an object (an `object` field without `fields`).
    JsonObject,
    /// `Timestamp(Microsecond, "UTC")`.
    Timestamp,
    /// `Date32`.
    Date,
    /// `List` of the element target.
    List(Box<Target>),
    /// `Struct` with named members.
    Struct(Vec<(String, Target)>),
}

impl Target {
    /// The target for a declared field.
    pub fn from_descriptor(f: &FieldDescriptor) -> Target {
        match f.field_type.as_str() {
            "string" => Target::Str,
            "integer" if f.format.as_deref() == Some("uint64") => Target::UInt64,
            "integer" => Target::Int64,
            "number" => Target::Float64,
            "boolean" => Target::Bool,
            "datetime" => Target::Timestamp,
            "date" => Target::Date,
            "array" => Target::List(Box::new(f.items.as_deref().map(Target::from_descriptor).unwrap_or(Target::Json))),
            "object" => match &f.fields {
                Some(fs) => Target::Struct(fs.iter().map(|m| (m.name.clone(), Target::from_descriptor(m))).collect()),
                None => Target::JsonObject,
            },
            _ => Target::Json,
        }
    }

    /// The target for an Arrow type (inferred columns).
    pub fn from_arrow(dt: &DataType) -> Target {
        match dt {
            DataType::Boolean => Target::Bool,
            DataType::Int64 => Target::Int64,
            DataType::UInt64 => Target::UInt64,
            DataType::Float64 => Target::Float64,
            DataType::Timestamp(_, _) => Target::Timestamp,
            DataType::Date32 => Target::Date,
            DataType::List(f) => Target::List(Box::new(Target::from_arrow(f.data_type()))),
            DataType::Struct(fs) => {
                Target::Struct(fs.iter().map(|f| (f.name().clone(), Target::from_arrow(f.data_type()))).collect())
            }
            _ => Target::Str,
        }
    }

    /// The Arrow type this target produces.
    pub fn arrow_type(&self) -> DataType {
        match self {
            Target::Bool => DataType::Boolean,
            Target::Int64 => DataType::Int64,
            Target::UInt64 => DataType::UInt64,
            Target::Float64 => DataType::Float64,
            Target::Str | Target::Text | Target::Json | Target::JsonObject => DataType::Utf8,
            Target::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some(crate::core::schema::UTC.into())),
            Target::Date => DataType::Date32,
            Target::List(t) => DataType::List(Arc::new(Field::new("item", t.arrow_type(), true))),
            Target::Struct(m) => DataType::Struct(Fields::from(
                m.iter().map(|(n, t)| Field::new(n, t.arrow_type(), true)).collect::<Vec<_>>(),
            )),
        }
    }

    fn expected(&self) -> &'static str {
        match self {
            Target::Bool => "boolean",
            Target::Int64 => "integer",
            Target::UInt64 => "unsigned integer",
            Target::Float64 => "number",
            Target::Str => "string",
            Target::Text => "string, list or object",
            Target::Json => "any value",
            Target::JsonObject => "object",
            Target::Timestamp => "timestamp string with a time zone",
            Target::Date => "date string (YYYY-MM-DD)",
            Target::List(_) => "array",
            Target::Struct(_) => "object",
        }
    }
}

/// Options of one source that change how values are read.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    /// Values are CSV text cells, typed by parsing them.
    pub textual: bool,
    /// The CSV cells that mean null (Table Schema `missingValues`; `[""]` unless the source's
    /// schema says otherwise), made null before a record is typed; empty for other formats.
    /// Any other cell is a value: with `missingValues: []` an empty cell is the empty string,
    /// and not an integer.
    pub missing_values: Vec<String>,
    /// Per column (top-level), the text values that mean null there (a source field's
    /// `missingValues`): each read as null is counted as a coercion.
    pub field_missing: Vec<(String, Vec<String>)>,
    /// Bare `NaN`/`Infinity` handling.
    pub nonfinite: NonFinite,
    /// Accept the strings `NaN`, `Infinity`, `-Infinity` (any case) in number columns.
    pub coerce_nonfinite_strings: bool,
    /// Accept numeric strings in number/integer columns.
    pub coerce_numeric_strings: bool,
    /// The source's format fixes its columns ([`Format::fixed_columns`]): it takes none of the
    /// options a type problem's finding may hint at (`coerce_numeric_strings`,
    /// `coerce_nonfinite_strings`, a `[[source.field]]`), and its findings say none of them.
    ///
    /// [`Format::fixed_columns`]: crate::core::spec::Format::fixed_columns
    pub fixed_columns: bool,
    /// The source's format takes `coerce_numeric_strings` and `coerce_nonfinite_strings`
    /// ([`Format::takes_coerce`]): a number written as text in a column of numbers is said
    /// with them (in a format of fixed columns, in its number columns only).
    ///
    /// [`Format::takes_coerce`]: crate::core::spec::Format::takes_coerce
    pub coerce_options: bool,
    /// Zone for datetimes written without one.
    pub assume_timezone: Option<chrono_tz::Tz>,
    /// Keys of a record that name no column are violations (declared schemas).
    pub strict_keys: bool,
    /// A row with a value no column can be made of (an empty key, lists and objects nested
    /// too deep: `unnameable`) is a problem: a source that rejects, whose inference passed
    /// such rows over.
    pub reject_unnameable: bool,
    /// A text cell `1` or `0` of a boolean column is true or false (the Table Schema's default
    /// `trueValues` and `falseValues`): with a declared schema only, so that a column typed by
    /// reading the input never turns numbers into booleans.
    pub boolean_digits: bool,
    /// The columns declared `boolean` by a `[[source.field]]` (the rest of the source typed by
    /// reading it), whose text cells `1` and `0` are read as [`ConvertOptions::boolean_digits`]
    /// says.
    pub boolean_digit_fields: Vec<String>,
    /// Where each inferred shape was first seen (for messages).
    pub first_seen: BTreeMap<String, (String, SourceRef)>,
}

/// A value that does not fit, in row `row`.
#[derive(Debug, Clone)]
pub struct Problem {
    /// Row index inside the batch.
    pub row: usize,
    /// Rendered JSON path.
    pub path: String,
    /// Expected and found.
    pub message: String,
    /// The facts behind the message that choose a remedy (a value of another type).
    pub finding: Option<crate::core::report::Finding>,
}

/// Something counted but accepted.
#[derive(Debug, Clone)]
pub struct Event {
    /// `nonfinite`, `coercion` or `negative-zero` (a `-0` read as the integer 0).
    pub kind: &'static str,
    /// Row index inside the batch.
    pub row: usize,
    /// Rendered JSON path.
    pub path: String,
    /// What was read (`NaN`, `"Infinity" → inf`).
    pub detail: String,
}

/// Result of converting a batch.
#[derive(Debug)]
pub struct Converted {
    /// One array per requested column.
    pub columns: Vec<ArrayRef>,
    /// Values that did not fit.
    pub problems: Vec<Problem>,
    /// Accepted but counted values.
    pub events: Vec<Event>,
    /// Per requested column: whether any record had its key (`null` included), which tells a
    /// key whose values are all null from a key no record has.
    pub present: Vec<bool>,
}

struct PathNode {
    parent: Option<Rc<PathNode>>,
    seg: Seg,
}

/// The top-level key a value is under (its column).
fn column_of(p: &Rc<PathNode>) -> String {
    let mut cur = p.clone();
    while let Some(parent) = cur.parent.clone() {
        cur = parent;
    }
    match &cur.seg {
        Seg::Key(k) => k.clone(),
        _ => String::new(),
    }
}

fn render(p: &Rc<PathNode>) -> String {
    let mut segs = Vec::new();
    let mut cur = Some(p.clone());
    while let Some(n) = cur {
        segs.push(n.seg.clone());
        cur = n.parent.clone();
    }
    segs.reverse();
    path::render(&segs)
}

/// Pattern path of a value (indices replaced by `[]`) for first-seen lookups.
fn pattern(p: &Rc<PathNode>) -> String {
    let mut segs = Vec::new();
    let mut cur = Some(p.clone());
    while let Some(n) = cur {
        segs.push(match &n.seg {
            Seg::Index(_) => Seg::Elem,
            s => s.clone(),
        });
        cur = n.parent.clone();
    }
    segs.reverse();
    path::render(&segs)
}

struct Cell<'a> {
    v: Option<&'a Value>,
    row: usize,
    path: Rc<PathNode>,
}

struct Ctx<'o> {
    opts: &'o ConvertOptions,
    problems: Vec<Problem>,
    events: Vec<Event>,
}

impl Ctx<'_> {
    fn problem(&mut self, cell: &Cell, message: String) {
        self.problems.push(Problem { row: cell.row, path: render(&cell.path), message, finding: None });
    }

    /// A value of another type than its column's: `message`, and what was found.
    fn type_problem(&mut self, cell: &Cell, message: String, finding: crate::core::report::Finding) {
        self.problems.push(Problem { row: cell.row, path: render(&cell.path), message, finding: Some(finding) });
    }

    fn mismatch(&mut self, cell: &Cell, target: &Target, v: &Value) {
        let first = self.opts.first_seen.get(&pattern(&cell.path));
        let found = describe(v);
        let (message, decided_at) = match (&cell.path.seg, first) {
            (Seg::Index(_), Some((kind, at))) => {
                let message = format!(
                    "list element is {found} while earlier elements are {kind} (first seen at {at}); heterogeneous \
                     arrays are not supported: declare the field with type `any` to keep its JSON text, or \
                     declare a struct and map the positions in SQL"
                );
                self.problem(cell, message);
                return;
            }
            (_, Some((kind, at))) => (
                format!(
                    "expected {}, found {found} (the column holds {kind} values, the type the value at {at} decided)",
                    target.expected()
                ),
                Some(at.to_string()),
            ),
            (_, None) => (format!("expected {}, found {found}", target.expected()), None),
        };
        // what an option of the source would read otherwise (none for a format that takes none)
        let options = !self.opts.fixed_columns;
        // (an integer column of a fixed format cannot be declared a number: no NaN is said)
        let nonfinite_string = self.opts.coerce_options
            && (matches!(target, Target::Float64) || (options && matches!(target, Target::Int64)))
            && matches!(v, Value::String(s) if nonfinite_string(s).is_some());
        // as `coerce_numeric_strings` reads them
        let numeric_string = self.opts.coerce_options
            && match (target, v) {
                (Target::Float64, Value::String(s)) => s.parse::<f64>().is_ok_and(f64::is_finite),
                (Target::Int64, Value::String(s)) => s.parse::<i64>().is_ok(),
                _ => false,
            };
        let decimal_comma = options
            && matches!(target, Target::Float64)
            && matches!(v, Value::String(s) if crate::core::report::is_decimal_comma(s));
        // a text that stands for a missing value in the column itself, not in a part of it
        let missing = match v {
            Value::String(s)
                if cell.path.parent.is_none()
                    && matches!(target, Target::Float64 | Target::Int64 | Target::UInt64 | Target::Bool)
                    && crate::core::values::missing_text(s) =>
            {
                Some(s.clone())
            }
            _ => None,
        };
        let finding = crate::core::report::Finding::Type {
            column: column_of(&cell.path),
            expected: target.expected().to_string(),
            found,
            nonfinite_string,
            numeric_string,
            decimal_comma,
            decided_at,
            missing,
        };
        self.type_problem(cell, message, finding);
    }

    fn event(&mut self, kind: &'static str, cell: &Cell, detail: String) {
        self.events.push(Event { kind, row: cell.row, path: render(&cell.path), detail });
    }
}

/// Where a row holds a value no column can be made of, and why: a key that is empty, at any
/// depth, or lists and objects nested deeper than [`super::MAX_NESTING`] in a column not
/// `declared` (Arrow IPC, in which sources are staged, refuses such schemas). The path is a
/// JSON path (`$.b[""]`).
pub(crate) fn unnameable(
    row: &serde_json::Map<String, Value>,
    declared: &dyn Fn(&str) -> bool,
) -> Option<(String, String)> {
    /// The value's depth, and whether it holds an empty key (no path is built: most rows have
    /// neither, and this runs for each row of a source that rejects).
    fn walk(v: &Value) -> (usize, bool) {
        let inner = |vs: &mut dyn Iterator<Item = &Value>| {
            vs.map(walk).fold((0, false), |(d, e), (d2, e2)| (d.max(d2), e || e2))
        };
        match v {
            Value::Array(a) => {
                let (d, e) = inner(&mut a.iter());
                (1 + d, e)
            }
            Value::Object(o) => {
                let (d, e) = inner(&mut o.values());
                (1 + d, e || o.contains_key(""))
            }
            _ => (0, false),
        }
    }
    /// The path of the first empty key in `v`, under `at`.
    fn empty_key(v: &Value, at: &mut Vec<Seg>) -> Option<String> {
        let found = match v {
            Value::Array(a) => {
                at.push(Seg::Elem);
                a.iter().find_map(|x| empty_key(x, at))
            }
            Value::Object(o) => o.iter().find_map(|(k, x)| {
                at.push(Seg::Key(k.clone()));
                let found = if k.is_empty() { Some(path::render(at)) } else { empty_key(x, at) };
                at.pop();
                found
            }),
            _ => return None,
        };
        if matches!(v, Value::Array(_)) {
            at.pop();
        }
        found
    }
    row.iter().find_map(|(k, v)| {
        let (depth, empty) = walk(v);
        if k.is_empty() || empty {
            let mut at = vec![Seg::Key(k.clone())];
            let p = if k.is_empty() { path::render(&at) } else { empty_key(v, &mut at)? };
            return Some((p, "the key \"\" (empty) cannot name a column or a field; rename it in the input".into()));
        }
        (depth > super::MAX_NESTING && !declared(k)).then(|| {
            (
                path::render(&[Seg::Key(k.clone())]),
                format!(
                    "lists and objects nested {depth} levels deep; runpack reads at most {} levels (declare the \
                     column as type \"any\" to keep it as JSON text)",
                    super::MAX_NESTING
                ),
            )
        })
    })
}

/// Converts `records` into arrays for `columns` (name, target).
pub fn convert(
    records: &[&serde_json::Map<String, Value>],
    columns: &[(String, Target)],
    opts: &ConvertOptions,
) -> Converted {
    let mut ctx = Ctx { opts, problems: Vec::new(), events: Vec::new() };
    // one pass over each record's entries puts every value under its column (a record's keys
    // are looked up once, with a fast hash, instead of once per column)
    let index: ahash::AHashMap<&str, usize> = columns.iter().enumerate().map(|(i, (n, _))| (n.as_str(), i)).collect();
    let mut by_column: Vec<Vec<Option<&Value>>> = columns.iter().map(|_| vec![None; records.len()]).collect();
    let mut unknown: Vec<(usize, &String)> = Vec::new();
    for (row, r) in records.iter().enumerate() {
        for (k, v) in r.iter() {
            match index.get(k.as_str()) {
                Some(&i) => by_column[i][row] = Some(v),
                None => unknown.push((row, k)),
            }
        }
    }
    // a CSV cell of a nested column (object, array) holds its JSON text, as runpack's own CSV
    // output writes it: read as the JSON it is (NaN tokens as JSON Lines reads them); a cell
    // that is no JSON stays text, which the column then refuses. An `any` cell stays text: a
    // free-text cell that happens to read as JSON is not turned into a value.
    let nested = |t: &Target| matches!(t, Target::JsonObject | Target::List(_) | Target::Struct(_));
    let parsed: Vec<Vec<Option<Value>>> = columns
        .iter()
        .zip(&by_column)
        .map(|((_, t), values)| match (opts.textual, nested(t)) {
            (true, true) => values
                .iter()
                .map(|v| match v {
                    Some(Value::String(s)) => nested_json_cell(s),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        })
        .collect();
    let present = by_column.iter().map(|values| values.iter().any(Option::is_some)).collect();
    let mut arrays = Vec::with_capacity(columns.len());
    for (((name, target), values), parsed) in columns.iter().zip(by_column).zip(&parsed) {
        let p = Rc::new(PathNode { parent: None, seg: Seg::Key(name.clone()) });
        let missing = opts.field_missing.iter().find(|(n, _)| n == name).map(|(_, m)| m);
        let cells: Vec<Cell> = values
            .into_iter()
            .enumerate()
            .map(|(row, v)| {
                let cell = Cell { v: parsed.get(row).and_then(Option::as_ref).or(v), row, path: p.clone() };
                match (missing, cell.v) {
                    // a text the field's missingValues lists: null, and said
                    (Some(m), Some(Value::String(s))) if m.iter().any(|x| x == s) => {
                        let detail = format!("string {} read as null (missingValues)", path::short_json_string(s));
                        ctx.event("coercion", &cell, detail);
                        Cell { v: None, ..cell }
                    }
                    _ => cell,
                }
            })
            .collect();
        arrays.push(build(&cells, target, &mut ctx));
    }
    // rows of a source that rejects which no column could be made of: inference passed them
    // over, and they are set aside here
    if opts.reject_unnameable {
        // (a row a column's type refused already is set aside for that)
        let refused: ahash::AHashSet<usize> = ctx.problems.iter().map(|p| p.row).collect();
        for (row, r) in records.iter().enumerate().filter(|(row, _)| !refused.contains(row)) {
            if let Some((path, message)) = unnameable(r, &|k| index.contains_key(k)) {
                ctx.problems.push(Problem { row, path, message, finding: None });
            }
        }
    }
    if opts.strict_keys {
        for (row, k) in unknown {
            ctx.problems.push(Problem {
                row,
                path: path::render(&[Seg::Key(k.clone())]),
                message: "key not in the declared schema".into(),
                finding: None,
            });
        }
    }
    Converted { columns: arrays, problems: ctx.problems, events: ctx.events, present }
}

/// The JSON value a CSV cell's text holds, when it is an object or an array (bare `NaN` and
/// infinities read as JSON Lines reads them); `None` otherwise.
fn nested_json_cell(s: &str) -> Option<Value> {
    let t = s.trim();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    let rewritten = lenient::rewrite(t.as_bytes());
    super::strict::from_slice(rewritten.as_deref().unwrap_or(t.as_bytes())).ok()
}

fn build(cells: &[Cell], target: &Target, ctx: &mut Ctx) -> ArrayRef {
    match target {
        Target::Bool => {
            let mut b = BooleanBuilder::with_capacity(cells.len());
            for c in cells {
                b.append_option(to_bool(c, ctx));
            }
            Arc::new(b.finish())
        }
        Target::Int64 => {
            let mut b = Int64Builder::with_capacity(cells.len());
            for c in cells {
                b.append_option(to_i64(c, ctx));
            }
            Arc::new(b.finish())
        }
        Target::UInt64 => {
            let mut b = UInt64Builder::with_capacity(cells.len());
            for c in cells {
                b.append_option(to_u64(c, ctx));
            }
            Arc::new(b.finish())
        }
        Target::Float64 => {
            let mut b = Float64Builder::with_capacity(cells.len());
            for c in cells {
                b.append_option(to_f64(c, ctx));
            }
            Arc::new(b.finish())
        }
        Target::Str => {
            let mut b = StringBuilder::with_capacity(cells.len(), cells.len() * 8);
            for c in cells {
                match c.v {
                    None | Some(Value::Null) => b.append_null(),
                    Some(Value::String(s)) if lenient::special(s).is_none() => b.append_value(s),
                    Some(v) => {
                        ctx.mismatch(c, &Target::Str, v);
                        b.append_null();
                    }
                }
            }
            Arc::new(b.finish())
        }
        Target::Json | Target::JsonObject | Target::Text => build_text(cells, target, ctx),
        Target::Timestamp => {
            let mut b = TimestampMicrosecondBuilder::with_capacity(cells.len()).with_timezone(crate::core::schema::UTC);
            for c in cells {
                b.append_option(to_timestamp(c, ctx));
            }
            Arc::new(b.finish())
        }
        Target::Date => {
            let mut b = Date32Builder::with_capacity(cells.len());
            for c in cells {
                b.append_option(to_date(c, ctx));
            }
            Arc::new(b.finish())
        }
        Target::List(elem) => build_list(cells, target, elem, ctx),
        Target::Struct(members) => build_struct(cells, target, members, ctx),
    }
}

/// A text column of JSON values (`any`, `object`) or text (a string as it is, a list or an
/// object as JSON text); non-finite numbers inside are counted, each by its own path.
fn build_text(cells: &[Cell], target: &Target, ctx: &mut Ctx) -> ArrayRef {
    let mut b = StringBuilder::with_capacity(cells.len(), cells.len() * 8);
    for c in cells {
        match c.v {
            None | Some(Value::Null) => b.append_null(),
            // an `object` field holds objects: anything else is the wrong type
            Some(v) if *target == Target::JsonObject && !v.is_object() => {
                ctx.mismatch(c, target, v);
                b.append_null()
            }
            // text: a string as it is, a list or an object as JSON text
            Some(Value::String(s)) if *target == Target::Text && lenient::special(s).is_none() => b.append_value(s),
            Some(v) if *target == Target::Text && !(v.is_array() || v.is_object()) => {
                ctx.mismatch(c, target, v);
                b.append_null()
            }
            Some(v) => {
                // non-finite numbers inside the text are counted like any other, each
                // named by its own path
                let mut tokens = Vec::new();
                nonfinite_tokens(v, &mut Vec::new(), &mut tokens);
                for (inner, t) in tokens {
                    let at = format!("{}{}", render(&c.path), &path::render(&inner)[1..]);
                    ctx.events.push(Event { kind: "nonfinite", row: c.row, path: at, detail: t });
                }
                b.append_value(json_text(v))
            }
        }
    }
    Arc::new(b.finish())
}

/// A list column of `elem` items, each item converted at its own path.
fn build_list(cells: &[Cell], target: &Target, elem: &Target, ctx: &mut Ctx) -> ArrayRef {
    let mut offsets = Vec::with_capacity(cells.len() + 1);
    offsets.push(0i32);
    let mut valid = Vec::with_capacity(cells.len());
    let mut children = Vec::new();
    for c in cells {
        match c.v {
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let p = Rc::new(PathNode { parent: Some(c.path.clone()), seg: Seg::Index(i) });
                    children.push(Cell { v: Some(item), row: c.row, path: p });
                }
                valid.push(true);
            }
            None | Some(Value::Null) => valid.push(false),
            Some(v) => {
                ctx.mismatch(c, target, v);
                valid.push(false);
            }
        }
        offsets.push(children.len() as i32);
    }
    let values = build(&children, elem, ctx);
    let field = Arc::new(Field::new("item", elem.arrow_type(), true));
    Arc::new(ListArray::new(field, OffsetBuffer::new(offsets.into()), values, Some(NullBuffer::from(valid))))
}

/// A struct column of `members`; a key that is not a member is a problem at its path.
fn build_struct(cells: &[Cell], target: &Target, members: &[(String, Target)], ctx: &mut Ctx) -> ArrayRef {
    let mut valid = Vec::with_capacity(cells.len());
    let mut member_cells: Vec<Vec<Cell>> = members.iter().map(|_| Vec::with_capacity(cells.len())).collect();
    for c in cells {
        let obj = match c.v {
            Some(Value::Object(o)) => Some(o),
            None | Some(Value::Null) => None,
            Some(v) => {
                ctx.mismatch(c, target, v);
                None
            }
        };
        valid.push(obj.is_some());
        for (i, (name, _)) in members.iter().enumerate() {
            let p = Rc::new(PathNode { parent: Some(c.path.clone()), seg: Seg::Key(name.clone()) });
            member_cells[i].push(Cell { v: obj.and_then(|o| o.get(name)), row: c.row, path: p });
        }
        if let Some(o) = obj {
            for k in o.keys() {
                if !members.iter().any(|(n, _)| n == k) {
                    let p = Rc::new(PathNode { parent: Some(c.path.clone()), seg: Seg::Key(k.clone()) });
                    let parent = render(&c.path);
                    let cell = Cell { v: None, row: c.row, path: p };
                    ctx.problem(&cell, format!("key not in schema for struct {}", parent.trim_start_matches("$.")));
                }
            }
        }
    }
    let fields: Vec<Field> = members.iter().map(|(n, t)| Field::new(n, t.arrow_type(), true)).collect();
    let arrays: Vec<ArrayRef> = members.iter().zip(member_cells.iter()).map(|((_, t), cs)| build(cs, t, ctx)).collect();
    if fields.is_empty() {
        return Arc::new(StructArray::new_empty_fields(cells.len(), Some(NullBuffer::from(valid))));
    }
    Arc::new(StructArray::new(Fields::from(fields), arrays, Some(NullBuffer::from(valid))))
}

/// The non-finite tokens (`NaN`, `Infinity`, `-Infinity`) read anywhere inside `v`.
fn nonfinite_tokens(v: &Value, at: &mut Vec<Seg>, out: &mut Vec<(Vec<Seg>, String)>) {
    match v {
        Value::String(t) => {
            if let Some(sp) = lenient::special(t).filter(Special::is_nonfinite) {
                out.push((at.clone(), sp.token().to_string()));
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                at.push(Seg::Index(i));
                nonfinite_tokens(x, at, out);
                at.pop();
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                at.push(Seg::Key(k.clone()));
                nonfinite_tokens(x, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// JSON text of a value, with runpack's internal markers turned back into what they stand for:
/// bare `NaN`/`Infinity`/`-Infinity` as those strings, an integer beyond 64 bits as the digits
/// it was read as (JSON numbers have no size limit), a number kept as written
/// ([`lenient::Special::Float`]) as its token.
pub fn json_text(v: &Value) -> String {
    serde_json::to_string(&Unmarked(v)).expect("a JSON value serializes")
}

/// [`json_text`] as a raw JSON value, to be written as it is inside other JSON.
pub fn json_raw(v: &Value) -> Box<serde_json::value::RawValue> {
    serde_json::value::to_raw_value(&Unmarked(v)).expect("a JSON value serializes")
}

/// A value serialized with its markers undone (see [`json_text`]); keys are left as they are.
struct Unmarked<'a>(&'a Value);

impl serde::Serialize for Unmarked<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::String(t) => match lenient::special(t) {
                Some(Special::BigInt(d) | Special::Float(d)) => {
                    match serde_json::value::RawValue::from_string(d.to_string()) {
                        Ok(digits) => digits.serialize(s),
                        Err(_) => s.serialize_str(d),
                    }
                }
                Some(sp) => s.serialize_str(sp.token()),
                None => s.serialize_str(t),
            },
            Value::Array(a) => s.collect_seq(a.iter().map(Unmarked)),
            Value::Object(o) => s.collect_map(o.iter().map(|(k, v)| (k, Unmarked(v)))),
            other => other.serialize(s),
        }
    }
}

pub(crate) use crate::core::values::underflows_to_zero;

/// Parses a CSV cell as a float (`1.5`, `1e-3`, `nan`, `inf`, `-Infinity`).
pub fn parse_text_float(s: &str) -> Option<f64> {
    let t = s.trim();
    if t.is_empty() || t != s {
        return None;
    }
    t.parse::<f64>().ok()
}

/// The integer a JSON number holds exactly: an integer, or a float without a fraction (`5.0`:
/// pandas writes an integer column with gaps so) within ±2^53; `None` for anything else (a
/// fraction, a float beyond 2^53, an integer beyond 64 bits, a value that is no number).
pub(crate) fn whole_number(v: &Value) -> Option<i64> {
    if let Some(n) = v.as_i64() {
        return Some(n);
    }
    let f = v.as_f64().filter(|f| f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0)?;
    (!v.is_u64()).then_some(f as i64)
}

/// The non-finite float a string names, in any case: JSON's extension tokens written as
/// strings (`"NaN"`, `"Infinity"`, `"-Infinity"`), and Python's `str()` of such a float
/// (`"nan"`, `"inf"`, `"-inf"`), as a logger that writes values as text gives them.
pub(super) fn nonfinite_string(s: &str) -> Option<f64> {
    match s.to_ascii_lowercase().as_str() {
        "nan" => Some(f64::NAN),
        "infinity" | "+infinity" | "inf" | "+inf" => Some(f64::INFINITY),
        "-infinity" | "-inf" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// Whether `c` is a top-level cell of a column a `[[source.field]]` declares `boolean`.
fn declared_boolean(c: &Cell, opts: &ConvertOptions) -> bool {
    c.path.parent.is_none() && matches!(&c.path.seg, Seg::Key(k) if opts.boolean_digit_fields.contains(k))
}

fn to_bool(c: &Cell, ctx: &mut Ctx) -> Option<bool> {
    match c.v? {
        Value::Null => None,
        Value::Bool(b) => Some(*b),
        // a text cell: the Table Schema's default `trueValues` and `falseValues`
        Value::String(s) if ctx.opts.textual => match s.as_str() {
            "true" | "True" | "TRUE" => Some(true),
            "false" | "False" | "FALSE" => Some(false),
            "1" | "0" if ctx.opts.boolean_digits || declared_boolean(c, ctx.opts) => Some(s == "1"),
            _ => {
                ctx.mismatch(c, &Target::Bool, c.v?);
                None
            }
        },
        v => {
            ctx.mismatch(c, &Target::Bool, v);
            None
        }
    }
}

/// Whether a JSON number is a negative zero (`-0`, `-0.0`: serde_json reads both as the float
/// -0.0).
fn negative_zero(n: &serde_json::Number) -> bool {
    !n.is_i64() && !n.is_u64() && n.as_f64().is_some_and(|f| f == 0.0 && f.is_sign_negative())
}

/// The integer 0 for a negative zero `text` in an integer column, counted (a
/// `negative-zero` event: the build says so in a warning), as an integer has no sign of zero.
fn integer_zero<T: Default>(c: &Cell, ctx: &mut Ctx, text: &str) -> Option<T> {
    ctx.event("negative-zero", c, format!("{text} read as the integer 0"));
    Some(T::default())
}

fn to_i64(c: &Cell, ctx: &mut Ctx) -> Option<i64> {
    match c.v? {
        Value::Null => None,
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Some(i)
            } else if n.is_u64() {
                ctx.problem(c, format!("integer {n} out of range for Int64 (above 9223372036854775807)"));
                None
            } else if negative_zero(n) {
                integer_zero(c, ctx, "-0")
            } else {
                float_to_int(c, ctx, n.as_f64().unwrap_or(f64::NAN), &n.to_string())
            }
        }
        Value::String(s) => {
            if let Some(sp) = lenient::special(s) {
                match sp {
                    Special::BigInt(d) => ctx.problem(
                        c,
                        format!("integer {d} out of range for Int64 (-9223372036854775808 to 9223372036854775807)"),
                    ),
                    Special::Float(t) => return float_to_int(c, ctx, sp.as_f64().unwrap_or(f64::NAN), t),
                    _ => ctx.problem(c, format!("expected integer, found {}", sp.token())),
                }
                return None;
            }
            if ctx.opts.textual {
                if let Ok(i) = s.parse::<i64>() {
                    if i == 0 && s.starts_with('-') {
                        return integer_zero(c, ctx, s);
                    }
                    return Some(i);
                }
                if integer_text(s) {
                    ctx.problem(c, format!("integer {s} out of range for Int64"));
                    return None;
                }
                // a CSV cell `NaN` is no fraction: a value an integer column cannot hold
                if nonfinite_string(s).is_some() {
                    ctx.mismatch(c, &Target::Int64, c.v?);
                    return None;
                }
                if let Some(f) = parse_text_float(s) {
                    return float_to_int(c, ctx, f, s);
                }
            } else if ctx.opts.coerce_numeric_strings
                && let Ok(i) = s.parse::<i64>()
            {
                ctx.event("coercion", c, format!("string {} read as integer {i}", path::short_json_string(s)));
                return Some(i);
            }
            ctx.mismatch(c, &Target::Int64, c.v?);
            None
        }
        v => {
            ctx.mismatch(c, &Target::Int64, v);
            None
        }
    }
}

/// Whether a text cell is written as an integer: an optional sign, then decimal digits.
fn integer_text(s: &str) -> bool {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

fn float_to_int(c: &Cell, ctx: &mut Ctx, f: f64, text: &str) -> Option<i64> {
    whole_float(c, ctx, f, text, -9.223372036854776e18..9.223372036854776e18, "Int64").map(|f| f as i64)
}

/// A whole float (`4.0`, `1e2`) as an unsigned integer, as [`float_to_int`] reads it for
/// signed ones.
fn float_to_u64(c: &Cell, ctx: &mut Ctx, f: f64, text: &str) -> Option<u64> {
    whole_float(c, ctx, f, text, 0.0..1.8446744073709552e19, "UInt64").map(|f| f as u64)
}

/// `f` when it is a whole number in `range` (the values integer type `name` holds); else a
/// problem (out of range, or a fraction) and `None`.
fn whole_float(c: &Cell, ctx: &mut Ctx, f: f64, text: &str, range: std::ops::Range<f64>, name: &str) -> Option<f64> {
    if f.is_finite() && f.abs() >= 9007199254740992.0 {
        // beyond 2^53 floats skip integers: the written number may not be the one read
        ctx.problem(
            c,
            format!(
                "number {text} is written as a float of 2^53 or more, where floats cannot tell every integer \
                 apart; write it as an integer (no fraction or exponent) for an integer column"
            ),
        );
        return None;
    }
    // the number as written: a fraction however small (`2.0000000000000000001`, `1e-400`),
    // though the float has none
    if lenient::written_whole(text) == Some(false) {
        ctx.problem(c, format!("fractional value {text} for integer column"));
        return None;
    }
    if f.fract() == 0.0 && range.contains(&f) {
        Some(f)
    } else if f.is_finite() && f.fract() == 0.0 || f.is_infinite() && text.bytes().any(|b| b.is_ascii_digit()) {
        // (a YAML number beyond the float's range, `1e400`, reads as infinite)
        ctx.problem(c, format!("integer {text} out of range for {name}"));
        None
    } else {
        ctx.problem(c, format!("fractional value {text} for integer column"));
        None
    }
}

fn to_u64(c: &Cell, ctx: &mut Ctx) -> Option<u64> {
    match c.v? {
        Value::Null => None,
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                Some(u)
            } else if let Some(i) = n.as_i64() {
                ctx.problem(c, format!("negative value {i} for unsigned integer column"));
                None
            } else if negative_zero(n) {
                integer_zero(c, ctx, "-0")
            } else {
                float_to_u64(c, ctx, n.as_f64().unwrap_or(f64::NAN), &n.to_string())
            }
        }
        Value::String(s) => {
            match lenient::special(s) {
                Some(Special::BigInt(d)) => {
                    ctx.problem(c, format!("integer {d} out of range for UInt64 (0 to 18446744073709551615)"));
                    return None;
                }
                Some(sp @ Special::Float(t)) => return float_to_u64(c, ctx, sp.as_f64().unwrap_or(f64::NAN), t),
                _ => {}
            }
            if ctx.opts.textual {
                if let Ok(u) = s.parse::<u64>() {
                    return Some(u);
                }
                if s.parse::<i64>() == Ok(0) {
                    // `-0`, `-00`: read by an integer, zero has no sign
                    return integer_zero(c, ctx, s);
                }
                if integer_text(s) {
                    ctx.problem(c, format!("integer {s} out of range for UInt64"));
                    return None;
                }
                if let Some(f) = parse_text_float(s) {
                    return float_to_u64(c, ctx, f, s);
                }
            }
            ctx.mismatch(c, &Target::UInt64, c.v?);
            None
        }
        v => {
            ctx.mismatch(c, &Target::UInt64, v);
            None
        }
    }
}

/// For the text of an integer (optional `-` and `+`, then ASCII digits only), whether a 64-bit
/// float holds it exactly; `None` for any other text.
fn integer_text_exact_as_f64(s: &str) -> Option<bool> {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(match (s.parse::<i64>(), s.parse::<u64>()) {
        (Ok(i), _) => (i as f64) as i128 == i as i128,
        (_, Ok(u)) => (u as f64) as u128 == u as u128,
        // beyond 64 bits: exact when the float's own digits are the text's (leading zeros aside)
        _ => {
            let significant = digits.trim_start_matches('0');
            s.parse::<f64>().is_ok_and(|f| f.is_finite() && format!("{:.0}", f.abs()) == significant)
        }
    })
}

fn int_to_f64(c: &Cell, ctx: &mut Ctx, exact: bool, f: f64, n: &serde_json::Number) -> Option<f64> {
    if exact {
        return Some(f);
    }
    // in a column typed by reading the input, the value that made it a float column is named:
    // the column holds both, which only `any` keeps exactly
    let first = ctx.opts.first_seen.get(&pattern(&c.path));
    let message = match first {
        Some((kind, at)) => format!(
            "integer {n} cannot be stored exactly as a 64-bit float (the column holds {kind} values, the type the \
             value at {at} decided)"
        ),
        None => format!("integer {n} cannot be stored exactly as a 64-bit float"),
    };
    let decided_at = first.map(|(_, at)| at.to_string());
    let finding = crate::core::report::Finding::Type {
        column: column_of(&c.path),
        expected: Target::Float64.expected().to_string(),
        found: format!("integer {n}"),
        nonfinite_string: false,
        numeric_string: false,
        decimal_comma: false,
        decided_at,
        missing: None,
    };
    ctx.type_problem(c, message, finding);
    None
}

fn to_f64(c: &Cell, ctx: &mut Ctx) -> Option<f64> {
    match c.v? {
        Value::Null => None,
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let f = i as f64;
                int_to_f64(c, ctx, f as i128 == i as i128, f, n)
            } else if let Some(u) = n.as_u64() {
                let f = u as f64;
                int_to_f64(c, ctx, f as u128 == u as u128, f, n)
            } else {
                n.as_f64()
            }
        }
        Value::String(s) => {
            if let Some(sp) = lenient::special(s) {
                if let Special::Float(t) = sp {
                    // a float read from its own text; below the smallest float it would be 0,
                    // beyond the largest (a YAML number: JSON's reader refuses it) infinite
                    let f = sp.as_f64().unwrap_or(f64::NAN);
                    if f.is_infinite() {
                        ctx.problem(c, format!("number {t} is out of range for a 64-bit float"));
                        return None;
                    }
                    if underflows_to_zero(t, f) {
                        ctx.problem(c, format!("number {t} is too small for a 64-bit float (it would read as 0)"));
                        return None;
                    }
                    return Some(f);
                }
                return match sp.as_f64() {
                    Some(f) => {
                        ctx.event("nonfinite", c, sp.token().to_string());
                        match ctx.opts.nonfinite {
                            NonFinite::Ieee => Some(f),
                            NonFinite::Null => None,
                        }
                    }
                    None => {
                        ctx.problem(c, format!("integer {} cannot be stored exactly as a 64-bit float", sp.token()));
                        None
                    }
                };
            }
            if ctx.opts.textual {
                // an integer's text is held to what JSON's is: exact as a float, or refused
                if integer_text_exact_as_f64(s) == Some(false) {
                    let finding = crate::core::report::Finding::InexactInteger { column: column_of(&c.path) };
                    ctx.type_problem(c, format!("integer {s} cannot be stored exactly as a 64-bit float"), finding);
                    return None;
                }
                if let Some(f) = parse_text_float(s) {
                    // a number too large for a float (`1e400`) is not an infinity
                    if f.is_infinite() && s.bytes().any(|b| b.is_ascii_digit()) {
                        ctx.problem(c, format!("number {s} is out of range for a 64-bit float"));
                        return None;
                    }
                    if underflows_to_zero(s, f) {
                        ctx.problem(c, format!("number {s} is too small for a 64-bit float (it would read as 0)"));
                        return None;
                    }
                    if !f.is_finite() {
                        ctx.event("nonfinite", c, s.to_string());
                        if ctx.opts.nonfinite == NonFinite::Null {
                            return None;
                        }
                    }
                    return Some(f);
                }
            } else {
                if ctx.opts.coerce_nonfinite_strings
                    && let Some(f) = nonfinite_string(s)
                {
                    let ieee = if f.is_nan() {
                        "NaN"
                    } else if f > 0.0 {
                        "Infinity"
                    } else {
                        "-Infinity"
                    };
                    ctx.event(
                        "coercion",
                        c,
                        format!("string {} read as the number {ieee}", path::short_json_string(s)),
                    );
                    return Some(f);
                }
                if ctx.opts.coerce_numeric_strings
                    && let Ok(f) = s.parse::<f64>()
                    && f.is_finite()
                {
                    if underflows_to_zero(s.trim(), f) {
                        ctx.problem(
                            c,
                            format!(
                                "string {} holds a number too small for a 64-bit float (it would read as 0)",
                                path::short_json_string(s)
                            ),
                        );
                        return None;
                    }
                    // held to what the same number written as JSON is held to
                    if integer_text_exact_as_f64(s.trim()) == Some(false) {
                        ctx.problem(
                            c,
                            format!(
                                "string {} holds an integer that cannot be stored exactly as a 64-bit float",
                                path::short_json_string(s)
                            ),
                        );
                        return None;
                    }
                    ctx.event("coercion", c, format!("string {} read as {f}", path::short_json_string(s)));
                    return Some(f);
                }
            }
            ctx.mismatch(c, &Target::Float64, c.v?);
            None
        }
        v => {
            ctx.mismatch(c, &Target::Float64, v);
            None
        }
    }
}

/// An error for a date outside years 1 to 9999 (`+10000-01-01`, `0000-01-01`), which RFC 3339,
/// Python's `datetime` and the Table Schema readers cannot hold.
fn out_of_years(d: chrono::NaiveDate, s: &str) -> Result<(), String> {
    use chrono::Datelike;
    if (1..=9999).contains(&d.year()) {
        Ok(())
    } else {
        Err(format!(
            "{} is outside years 1 to 9999, which RFC 3339 and most readers cannot hold",
            path::short_json_string(s)
        ))
    }
}

/// Parses an ISO 8601 / RFC 3339 timestamp into microseconds since the Unix epoch (UTC).
/// Text without an offset is read in `assume` when given; otherwise it is an error message.
pub fn parse_timestamp(s: &str, assume: Option<chrono_tz::Tz>) -> Result<i64, String> {
    use chrono::{DateTime, NaiveDateTime, TimeZone};
    let leap = || {
        Err(format!(
            "timestamp {} is a leap second (:60), which a timestamp cannot hold (UTC time stamps count no leap \
             seconds); write the second before or after it in the source",
            path::short_json_string(s)
        ))
    };
    let micros = |dt: chrono::DateTime<chrono::FixedOffset>| -> Result<i64, String> {
        if dt.timestamp_subsec_nanos() >= 1_000_000_000 {
            return leap();
        }
        out_of_years(dt.naive_utc().date(), s)?;
        if !dt.timestamp_subsec_nanos().is_multiple_of(1000) {
            return Err(format!(
                "timestamp {} has digits below a microsecond, which runpack does not store; round it in the source",
                path::short_json_string(s)
            ));
        }
        Ok(dt.timestamp_micros())
    };
    if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
        return micros(dt);
    }
    // the date part exactly YYYY-MM-DD, as RFC 3339 has it (chrono's %Y-%m-%d alone is lenient)
    if !s.get(..10).is_some_and(strict_date) {
        return Err(format!("expected an ISO 8601 timestamp, found string {}", path::short_json_string(s)));
    }
    // a trailing Z (UTC) read as the offset +00:00, for the forms RFC 3339 parsing leaves out
    // (no seconds: `2025-03-01T12:00Z`, as the zone-less `2025-03-01T12:00` is read)
    let zoned = match s.strip_suffix(['Z', 'z']) {
        Some(local) => std::borrow::Cow::Owned(format!("{local}+00:00")),
        None => std::borrow::Cow::Borrowed(s),
    };
    for fmt in [
        "%Y-%m-%d %H:%M:%S%.f%:z",
        "%Y-%m-%dT%H:%M:%S%.f%z",
        "%Y-%m-%d %H:%M:%S%.f%z",
        "%Y-%m-%dT%H:%M%:z",
        "%Y-%m-%dT%H:%M%z",
    ] {
        if let Ok(dt) = DateTime::parse_from_str(&zoned, fmt) {
            return micros(dt);
        }
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(s, fmt) {
            let nanos = naive.and_utc().timestamp_subsec_nanos();
            if nanos >= 1_000_000_000 {
                return leap();
            }
            if !nanos.is_multiple_of(1000) {
                return Err(format!(
                    "timestamp {} has digits below a microsecond, which runpack does not store; round it in the source",
                    path::short_json_string(s)
                ));
            }
            return match assume {
                Some(tz) => match tz.from_local_datetime(&naive) {
                    chrono::LocalResult::Single(dt) => {
                        out_of_years(dt.naive_utc().date(), s)?;
                        Ok(dt.timestamp_micros())
                    }
                    _ => Err(format!("local time {s:?} does not exist or is ambiguous in {tz}")),
                },
                None => Err(format!(
                    "timestamp without time zone {}; add an offset or set assume_timezone",
                    path::short_json_string(s)
                )),
            };
        }
    }
    Err(format!("expected an ISO 8601 timestamp, found string {}", path::short_json_string(s)))
}

fn to_timestamp(c: &Cell, ctx: &mut Ctx) -> Option<i64> {
    match c.v? {
        Value::Null => None,
        Value::String(s) => match parse_timestamp(s, ctx.opts.assume_timezone) {
            Ok(t) => Some(t),
            Err(m) => {
                ctx.problem(c, m);
                None
            }
        },
        v => {
            ctx.mismatch(c, &Target::Timestamp, v);
            None
        }
    }
}

/// True for text shaped `YYYY-MM-DD` (four, two and two ASCII digits).
fn strict_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter().enumerate().all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

fn to_date(c: &Cell, ctx: &mut Ctx) -> Option<i32> {
    match c.v? {
        Value::Null => None,
        // exactly YYYY-MM-DD: chrono alone also takes `2024-1-5`, `+2024-01-05` and leading blanks
        Value::String(s) => match strict_date(s).then(|| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")) {
            Some(Ok(d)) => match out_of_years(d, s) {
                Ok(()) => Some((d - chrono::NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch")).num_days() as i32),
                Err(m) => {
                    ctx.problem(c, m);
                    None
                }
            },
            _ => {
                ctx.mismatch(c, &Target::Date, c.v?);
                None
            }
        },
        v => {
            ctx.mismatch(c, &Target::Date, v);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_finite_string_in_a_number_column_is_told_from_other_strings() {
        let c = conv(
            &[r#"{"x": "NaN", "i": "-infinity", "s": 0.5}"#, r#"{"x": "12", "i": "Nan\u0000", "s": "a"}"#],
            &[("x", Target::Float64), ("i", Target::Int64), ("s", Target::Str)],
            &ConvertOptions { coerce_options: true, ..ConvertOptions::default() },
        );
        let found: Vec<(String, String, bool)> = c
            .problems
            .iter()
            .map(|p| match &p.finding {
                Some(crate::core::report::Finding::Type {
                    expected,
                    found,
                    nonfinite_string,
                    decided_at: None,
                    ..
                }) => (expected.clone(), found.clone(), *nonfinite_string),
                other => panic!("{}: {other:?}", p.message),
            })
            .collect();
        let expect = [
            ("number", "string \"NaN\"", true),
            ("number", "string \"12\"", false),
            ("integer", "string \"-infinity\"", true),
            ("integer", "string \"Nan\\u0000\"", false),
            ("string", "number 0.5", false),
        ];
        let expect: Vec<(String, String, bool)> =
            expect.iter().map(|(e, f, n)| (e.to_string(), f.to_string(), *n)).collect();
        assert_eq!(found, expect);
    }
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Float64Type, Int64Type};

    #[test]
    fn integer_text_is_exact_as_a_float_only_when_a_float_holds_it() {
        assert_eq!(integer_text_exact_as_f64("9007199254740992"), Some(true));
        assert_eq!(integer_text_exact_as_f64("9007199254740993"), Some(false));
        assert_eq!(integer_text_exact_as_f64("-9007199254740993"), Some(false));
        assert_eq!(integer_text_exact_as_f64("+12"), Some(true));
        // 2^64 is a float; 2^64 + 1 is not
        assert_eq!(integer_text_exact_as_f64("18446744073709551616"), Some(true));
        assert_eq!(integer_text_exact_as_f64("18446744073709551617"), Some(false));
        assert_eq!(integer_text_exact_as_f64("-018446744073709551616"), Some(true));
        for not_integer in ["", "-", "1.5", "1e3", " 1", "0x10"] {
            assert_eq!(integer_text_exact_as_f64(not_integer), None, "{not_integer:?}");
        }
    }

    #[test]
    fn json_text_writes_big_integers_as_their_digits() {
        let line = r#"{"a": -99999999999999999999, "b": [18446744073709551616, NaN], "c": "int:5", "d": 1.5}"#;
        let v: Value = serde_json::from_slice(&lenient::rewrite(line.as_bytes()).unwrap()).unwrap();
        assert_eq!(
            json_text(&v),
            r#"{"a":-99999999999999999999,"b":[18446744073709551616,"NaN"],"c":"int:5","d":1.5}"#
        );
        // a key that looks like a marker stays a string
        let k = format!("{{\"{}int:7\":1}}", lenient::MARK);
        let v: Value = serde_json::from_str(&k).unwrap();
        assert_eq!(json_text(&v), k);
    }

    fn conv(lines: &[&str], cols: &[(&str, Target)], opts: &ConvertOptions) -> Converted {
        let vals: Vec<Value> = lines
            .iter()
            .map(|l| {
                let b = lenient::rewrite(l.as_bytes()).unwrap_or_else(|| l.as_bytes().to_vec());
                serde_json::from_slice(&b).unwrap()
            })
            .collect();
        let recs: Vec<&serde_json::Map<String, Value>> = vals.iter().map(|v| v.as_object().unwrap()).collect();
        let cols: Vec<(String, Target)> = cols.iter().map(|(n, t)| (n.to_string(), t.clone())).collect();
        convert(&recs, &cols, opts)
    }

    #[test]
    fn integers_are_strict() {
        let c = conv(
            &[r#"{"step": 1}"#, r#"{"step": "2"}"#, r#"{"step": 3.5}"#, r#"{"step": 4.0}"#],
            &[("step", Target::Int64)],
            &ConvertOptions::default(),
        );
        let msgs: Vec<String> = c.problems.iter().map(|p| format!("{}:{}: {}", p.row, p.path, p.message)).collect();
        assert_eq!(
            msgs,
            vec!["1:$.step: expected integer, found string \"2\"", "2:$.step: fractional value 3.5 for integer column"]
        );
        assert_eq!(c.columns[0].as_primitive::<Int64Type>().value(3), 4);
    }

    #[test]
    fn csv_integers_beyond_64_bits_are_out_of_range() {
        let opts = ConvertOptions { textual: true, ..ConvertOptions::default() };
        let c = conv(
            &[
                r#"{"i": "12345678901234567890", "u": "123456789012345678901"}"#,
                r#"{"i": "-9223372036854775809", "u": "-1"}"#,
                r#"{"i": "+7", "u": "18446744073709551615"}"#,
            ],
            &[("i", Target::Int64), ("u", Target::UInt64)],
            &opts,
        );
        let msgs: Vec<String> = c.problems.iter().map(|p| format!("{}:{}: {}", p.row, p.path, p.message)).collect();
        assert_eq!(
            msgs,
            vec![
                "0:$.i: integer 12345678901234567890 out of range for Int64",
                "1:$.i: integer -9223372036854775809 out of range for Int64",
                "0:$.u: integer 123456789012345678901 out of range for UInt64",
                "1:$.u: integer -1 out of range for UInt64",
            ]
        );
        assert_eq!(c.columns[0].as_primitive::<Int64Type>().value(2), 7);
    }

    #[test]
    fn unsigned_integers_dates_and_timestamps_are_strict_alike() {
        let c = conv(
            &[
                r#"{"u": 4.0, "d": "2024-01-05", "t": "2016-12-31T23:59Z"}"#,
                r#"{"u": 1e2, "d": "2024-1-5", "t": "2016-12-31T23:59:60Z"}"#,
                r#"{"u": 1.5, "d": "+2024-01-05", "t": "2024-06-30 23:59:60.5+00:00"}"#,
                r#"{"u": 2e20, "d": " 2024-01-05", "t": "2024-1-5 10:00:00+00:00"}"#,
            ],
            &[("u", Target::UInt64), ("d", Target::Date), ("t", Target::Timestamp)],
            &ConvertOptions::default(),
        );
        let msgs: Vec<String> = c.problems.iter().map(|p| format!("{}:{}: {}", p.row, p.path, p.message)).collect();
        let leap = "is a leap second (:60), which a timestamp cannot hold (UTC time stamps count no leap seconds); \
                    write the second before or after it in the source";
        assert_eq!(
            msgs,
            vec![
                "2:$.u: fractional value 1.5 for integer column".to_string(),
                "3:$.u: number 2e+20 is written as a float of 2^53 or more, where floats cannot tell every \
                 integer apart; write it as an integer (no fraction or exponent) for an integer column"
                    .into(),
                "1:$.d: expected date string (YYYY-MM-DD), found string \"2024-1-5\"".into(),
                "2:$.d: expected date string (YYYY-MM-DD), found string \"+2024-01-05\"".into(),
                "3:$.d: expected date string (YYYY-MM-DD), found string \" 2024-01-05\"".into(),
                format!("1:$.t: timestamp \"2016-12-31T23:59:60Z\" {leap}"),
                format!("2:$.t: timestamp \"2024-06-30 23:59:60.5+00:00\" {leap}"),
                "3:$.t: expected an ISO 8601 timestamp, found string \"2024-1-5 10:00:00+00:00\"".into(),
            ]
        );
        // minutes without seconds, with a Z, as the zone-less form is read
        let t = c.columns[2].as_primitive::<arrow::datatypes::TimestampMicrosecondType>();
        assert_eq!(t.value(0), 1_483_228_740_000_000);
        let u = c.columns[0].as_primitive::<arrow::datatypes::UInt64Type>();
        assert_eq!((u.value(0), u.value(1)), (4, 100));
    }

    #[test]
    fn nonfinite_tokens_are_ieee() {
        let c = conv(
            &[r#"{"x": NaN}"#, r#"{"x": -Infinity}"#, r#"{"x": null}"#, r#"{}"#],
            &[("x", Target::Float64)],
            &ConvertOptions::default(),
        );
        let a = c.columns[0].as_primitive::<Float64Type>();
        assert!(a.value(0).is_nan() && !a.is_null(0));
        assert_eq!(a.value(1), f64::NEG_INFINITY);
        assert!(a.is_null(2) && a.is_null(3));
        assert_eq!(c.events.len(), 2);
    }

    #[test]
    fn struct_extra_keys_and_list_mismatch() {
        let t = Target::Struct(vec![("seed".into(), Target::Int64)]);
        let c = conv(&[r#"{"meta": {"seed": 1, "retry": 2}}"#], &[("meta", t)], &ConvertOptions::default());
        assert_eq!(c.problems[0].path, "$.meta.retry");
        assert_eq!(c.problems[0].message, "key not in schema for struct meta");
        let c = conv(
            &[r#"{"span": [0, 4, "PER"]}"#],
            &[("span", Target::List(Box::new(Target::Int64)))],
            &ConvertOptions::default(),
        );
        assert_eq!(c.problems[0].path, "$.span[2]");
    }
}
