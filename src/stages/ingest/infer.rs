//! Type inference over the whole input (never a prefix).
//!
//! In: every record of every file of a source. Out: one Arrow type per column, the first
//! place each shape was seen, the widenings that happened (a struct that gained a field), and
//! the problems that make a column's type undecidable.
//!
//! Rules:
//! - null never decides a type; a column that is null everywhere is an error asking for a
//!   declared type, and so is a list that is empty everywhere;
//! - integers and floats merge to `Float64`; a number token with a fraction or exponent is a
//!   float (`1.0` and `2e0` make `Float64`), and a float column never becomes an integer one;
//!   an integer merged so is held exactly (one beyond ±2^53 is a violation, never rounded);
//! - a JSON `-0` (serde_json reads it as the float -0.0, as it does `-0.0`) takes the type the
//!   column's other values give it: an integer column stays one (the reader reads the value as
//!   0 and says so in a warning), a float column keeps -0.0; alone it makes `Float64`;
//! - a CSV cell is a number only when written as the tools that write numbers write them, so
//!   that no value changes its meaning by being read as one: `-0` (the integer type has no
//!   negative zero), leading zeros (`007`), a `+` sign, and an exponent form of an integer
//!   without a sign in the exponent (`1e5`, `0e523456`: ids and hashes look so, where Python,
//!   JavaScript, R, Excel and C write `1e+05`) keep their column text; `1e-05`, `1.5e+16`,
//!   `1.5e16` and `-0.0` are numbers;
//! - integers above `i64::MAX` make `UInt64`; negative and above-`i64::MAX` values in one
//!   column cannot share a type and are reported with both lines;
//! - objects merge into one struct (key order of first appearance) whatever the key order or
//!   missing keys of each row;
//! - a text that stands for a missing value (`"n/a"`, `"-"`, `""`, `"none"`) decides no type:
//!   the column takes its other values' type, and the reader reports the text as a type
//!   violation (a source field's `missingValues` reads it as null); a column of such texts
//!   alone is text;
//! - the first shape seen wins; values of another shape are reported by the reader as type
//!   violations that name where the first shape was seen.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields};
use serde_json::Value;

use super::lenient::{self, Special};
use super::path::{self, Seg};
use crate::core::report::SourceRef;

/// The inferred shape of one value position.
#[derive(Debug, Clone, Default)]
pub struct Node {
    /// What was seen.
    pub kind: Kind,
    /// First place a non-null value was seen (for messages).
    pub first: Option<SourceRef>,
}

/// Shapes.
#[derive(Debug, Clone, Default)]
pub enum Kind {
    /// Only nulls (or nothing) seen so far.
    #[default]
    Unknown,
    /// `true` / `false`.
    Bool,
    /// Integers; remembers the first negative value and the first above `i64::MAX`.
    Int {
        /// First negative integer.
        negative: Option<SourceRef>,
        /// First integer above `i64::MAX`.
        above_i64: Option<SourceRef>,
    },
    /// Floats (and integers mixed with floats).
    Float,
    /// Strings.
    Str,
    /// Only texts that stand for a missing value (`"n/a"`, `"-"`, `""`;
    /// [`crate::core::values::missing_text`]): the type the column's other values give it,
    /// or text when none comes. So a results table whose first accuracy is `"n/a"` is a
    /// number column, and the reader names that value.
    Missing,
    /// Only non-finite strings (`"NaN"`, `"Infinity"`, `"-Infinity"`, any case) of a source that reads them as
    /// numbers (`coerce_nonfinite_strings`): a float column, unless another string comes (or,
    /// with [`Inference::nonfinite_alone_text`], unless no number comes).
    NonFinite,
    /// Only JSON negative zeros (`-0`, `-0.0`): a float column, unless an integer comes, which
    /// makes it an integer column.
    NegZero,
    /// Arrays, with the element node.
    List(Box<Node>),
    /// Objects, with member nodes in first-seen order.
    Struct(Vec<(String, Node)>),
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Unknown => "null",
            Kind::Bool => "boolean",
            Kind::Int { .. } => "int64",
            Kind::Float => "float64",
            Kind::Str | Kind::Missing => "string",
            Kind::NonFinite | Kind::NegZero => "float64",
            Kind::List(_) => "array",
            Kind::Struct(_) => "object",
        }
    }
}

/// A widening: a struct gained a member after its first appearance.
#[derive(Debug, Clone)]
pub struct Widening {
    /// Path of the new member (`$.meta.retry`).
    pub path: String,
    /// Path of the struct it joined (`$.meta`).
    pub parent: String,
    /// Where it first appeared.
    pub first: SourceRef,
}

/// A column whose type cannot be decided.
#[derive(Debug, Clone)]
pub struct TypeProblem {
    /// Rendered path (`$.comment`, `$.tool_calls[]`).
    pub path: String,
    /// Why, and what to do.
    pub message: String,
    /// For problems caused by the data (not by a missing declaration): the place to cite.
    pub at: Option<SourceRef>,
}

/// Accumulates observations for one source.
#[derive(Debug, Default)]
pub struct Inference {
    /// Top-level columns, first-seen order.
    pub columns: Vec<(String, Node)>,
    index: ahash::AHashMap<String, usize>,
    /// Structs that gained members.
    pub widenings: Vec<Widening>,
    /// Whether values are CSV text cells (typed by their content).
    pub textual: bool,
    /// Whether the strings the converter reads as non-finite numbers (`"NaN"`, `"Infinity"`,
    /// `"-Infinity"`, in any case) count as numbers where a column holds numbers (the source's
    /// `coerce_nonfinite_strings`), whatever their order.
    pub nonfinite_strings: bool,
    /// Whether a column of such strings alone, no number, is text rather than a float column
    /// (`query` of raw files, where nothing declares the reading: a name such as `"Nan"`
    /// stays text).
    pub nonfinite_alone_text: bool,
}

/// The class of one scalar value.
enum Scalar<'a> {
    Null,
    Bool,
    Int(bool /*negative*/, bool /*above i64*/),
    Float,
    Str,
    /// A text that stands for a missing value (`"n/a"`, `"-"`): it decides no type.
    Missing,
    /// `"NaN"`, `"Infinity"` or `"-Infinity"` (any case), read as a number where the column is one.
    NonFinite,
    /// A JSON negative zero, which fits an integer column as well as a float one.
    NegZero,
    /// A CSV cell that reads as a number but not as the number it is written as (`007`,
    /// `-0`, `1e5`, `+5`): its column is text, whatever other values it holds.
    NumberText,
    Other(std::marker::PhantomData<&'a Value>),
}

fn classify<'a>(v: &'a Value, textual: bool, nonfinite_strings: bool) -> Scalar<'a> {
    match v {
        Value::Null => Scalar::Null,
        Value::Bool(_) => Scalar::Bool,
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Scalar::Int(i < 0, false)
            } else if n.is_u64() {
                Scalar::Int(false, true)
            } else if n.as_f64().is_some_and(|f| f == 0.0 && f.is_sign_negative()) {
                Scalar::NegZero
            } else {
                Scalar::Float
            }
        }
        Value::String(s) => {
            if let Some(sp) = lenient::special(s) {
                return match sp {
                    // too large for any integer type: typed as an integer column, and the
                    // reader reports the value as out of range
                    Special::BigInt(d) => Scalar::Int(d.starts_with('-'), !d.starts_with('-')),
                    _ => Scalar::Float,
                };
            }
            // the strings the converter reads as non-finite numbers (super::convert)
            if nonfinite_strings && super::convert::nonfinite_string(s).is_some() {
                return Scalar::NonFinite;
            }
            if crate::core::values::missing_text(s) {
                return Scalar::Missing;
            }
            if textual { classify_text(s) } else { Scalar::Str }
        }
        _ => Scalar::Other(std::marker::PhantomData),
    }
}

/// True for an integer written the plain way: optional `-`, no leading zeros, no `+`, not
/// `-0` (an integer has no negative zero: read as one, its text would become `0`).
fn plain_integer(s: &str) -> bool {
    let d = s.strip_prefix('-').unwrap_or(s);
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !d.starts_with('0'))
}

/// True for a float written the plain way (`1.5`, `-0.25`, `1e-07`, `1.5e16`, `nan`, `inf`):
/// no `+` sign, no leading zeros that a number would drop (`007`, `01.5`), and not an integer
/// with an unsigned exponent (`1e5`, `0e523456`), which ids and hashes are and number writers
/// do not write.
fn plain_float(s: &str) -> bool {
    // a number below the smallest float (`1e-400`) would read as 0: not plainly a float
    match super::convert::parse_text_float(s) {
        Some(f) if !s.starts_with('+') && !super::convert::underflows_to_zero(s, f) => {}
        _ => return false,
    }
    let d = s.strip_prefix('-').unwrap_or(s);
    let (mantissa, exponent) = match d.find(['e', 'E']) {
        Some(i) => (&d[..i], Some(&d[i + 1..])),
        None => (d, None),
    };
    let int_part: &str = mantissa.split('.').next().unwrap_or("");
    let unsigned_exponent_of_an_integer =
        exponent.is_some_and(|e| !e.starts_with(['+', '-'])) && !mantissa.contains('.');
    let leading_zero = int_part.len() > 1 && int_part.starts_with('0');
    !(leading_zero || unsigned_exponent_of_an_integer)
}

/// The class of a CSV cell by its text (a cell that means null was made null before). Only
/// plainly written numbers are typed as numbers, so that text such as a zero-padded
/// checkpoint name (`000060`), an id `0e523456` or `-0` stays text.
fn classify_text<'a>(s: &str) -> Scalar<'a> {
    if plain_integer(s) {
        if let Ok(i) = s.parse::<i64>() {
            return Scalar::Int(i < 0, false);
        }
        if s.parse::<u64>().is_ok() {
            return Scalar::Int(false, true);
        }
    }
    // `-0` is no plain integer, and its float would be read back as `-0.0`
    if plain_float(s) && s != "-0" {
        return Scalar::Float;
    }
    match s {
        "true" | "false" | "True" | "False" | "TRUE" | "FALSE" => Scalar::Bool,
        _ if s.parse::<i128>().is_ok() || super::convert::parse_text_float(s).is_some() => Scalar::NumberText,
        _ => Scalar::Str,
    }
}

impl Inference {
    /// A fresh inference; `textual` for CSV cells.
    pub fn new(textual: bool) -> Self {
        Inference { textual, ..Default::default() }
    }

    /// Observes one record.
    pub fn observe(&mut self, record: &serde_json::Map<String, Value>, src: &SourceRef) {
        for (k, v) in record {
            let idx = match self.index.get(k) {
                Some(&i) => i,
                None => {
                    self.columns.push((k.clone(), Node::default()));
                    self.index.insert(k.clone(), self.columns.len() - 1);
                    self.columns.len() - 1
                }
            };
            let mut segs = vec![Seg::Key(k.clone())];
            let how = Reading { textual: self.textual, nonfinite_strings: self.nonfinite_strings };
            let node = &mut self.columns[idx].1;
            observe(node, v, src, &mut segs, how, &mut self.widenings);
        }
    }

    /// The Arrow field of each column, or the problems that prevent deciding it.
    ///
    /// Problems: a column or member that is null everywhere, a list or an object empty
    /// everywhere, and an integer column holding both negative values and values above
    /// `i64::MAX`.
    pub fn fields(&self) -> (Vec<Field>, Vec<TypeProblem>) {
        let mut fields = Vec::new();
        let mut problems = Vec::new();
        for (name, node) in &self.columns {
            let mut segs = vec![Seg::Key(name.clone())];
            let dt = to_type(node, &mut segs, &mut problems, self.nonfinite_alone_text);
            fields.push(Field::new(name, dt, true));
        }
        (fields, problems)
    }
}

/// How an [`Inference`] reads scalar values (see its fields of the same names).
#[derive(Clone, Copy)]
struct Reading {
    textual: bool,
    nonfinite_strings: bool,
}

fn observe(
    node: &mut Node,
    v: &Value,
    src: &SourceRef,
    segs: &mut Vec<Seg>,
    how: Reading,
    widenings: &mut Vec<Widening>,
) {
    match v {
        Value::Array(items) => {
            match &node.kind {
                Kind::Unknown | Kind::Missing => {
                    node.kind = Kind::List(Box::default());
                    node.first = Some(src.clone());
                }
                Kind::List(_) => {}
                _ => return, // shape conflict: reported by the reader
            }
            if let Kind::List(elem) = &mut node.kind {
                for (i, item) in items.iter().enumerate() {
                    segs.push(Seg::Index(i));
                    observe(elem, item, src, segs, how, widenings);
                    segs.pop();
                }
            }
        }
        Value::Object(map) => {
            match &node.kind {
                Kind::Unknown | Kind::Missing => {
                    node.kind = Kind::Struct(Vec::new());
                    node.first = Some(src.clone());
                }
                Kind::Struct(_) => {}
                _ => return,
            }
            let seen_before = node.first.as_ref() != Some(src);
            if let Kind::Struct(members) = &mut node.kind {
                for (k, item) in map {
                    let i = match members.iter().position(|(n, _)| n == k) {
                        Some(i) => i,
                        None => {
                            members.push((k.clone(), Node::default()));
                            if seen_before {
                                let parent = path::render(segs);
                                segs.push(Seg::Key(k.clone()));
                                widenings.push(Widening { path: path::render(segs), parent, first: src.clone() });
                                segs.pop();
                            }
                            members.len() - 1
                        }
                    };
                    segs.push(Seg::Key(k.clone()));
                    observe(&mut members[i].1, item, src, segs, how, widenings);
                    segs.pop();
                }
            }
        }
        _ => observe_scalar(node, v, src, how),
    }
}

/// Observes scalar `v` (not a list or an object) in `node`: the column's kind widens as its
/// values ask (an integer column with a float becomes a float column, a number that text
/// would change makes it text), and `node.first` names the value that decided it.
fn observe_scalar(node: &mut Node, v: &Value, src: &SourceRef, how: Reading) {
    let class = classify(v, how.textual, how.nonfinite_strings);
    // a missing value's text decides nothing: the first other value decides, and is named
    if matches!(node.kind, Kind::Missing) && !matches!(class, Scalar::Null | Scalar::Other(_) | Scalar::Missing) {
        node.kind = Kind::Unknown;
        node.first = None;
    }
    let first = node.first.is_none();
    match (class, &mut node.kind) {
        (Scalar::Null, _) | (Scalar::Other(_), _) => return,
        (Scalar::Missing, k @ Kind::Unknown) => *k = Kind::Missing,
        (Scalar::Bool, k @ Kind::Unknown) => *k = Kind::Bool,
        (Scalar::Int(neg, big), k @ Kind::Unknown) => {
            *k = Kind::Int { negative: neg.then(|| src.clone()), above_i64: big.then(|| src.clone()) }
        }
        (Scalar::Int(neg, big), Kind::Int { negative, above_i64 }) => {
            if neg && negative.is_none() {
                *negative = Some(src.clone());
            }
            if big && above_i64.is_none() {
                *above_i64 = Some(src.clone());
            }
        }
        (Scalar::Float, k @ Kind::Unknown) => *k = Kind::Float,
        (Scalar::Float, k @ Kind::Int { .. }) => {
            // the column's type is decided here: messages name this first float
            *k = Kind::Float;
            node.first = Some(src.clone());
        }
        (Scalar::Int(..), Kind::Float) => {}
        // a negative zero takes the type the column's other values give it
        (Scalar::NegZero, k @ Kind::Unknown) => *k = Kind::NegZero,
        (Scalar::NegZero, Kind::Int { .. } | Kind::Float) => {}
        (Scalar::Int(neg, big), k @ Kind::NegZero) => {
            *k = Kind::Int { negative: neg.then(|| src.clone()), above_i64: big.then(|| src.clone()) };
            node.first = Some(src.clone());
        }
        (Scalar::Float, k @ Kind::NegZero) => {
            *k = Kind::Float;
            node.first = Some(src.clone());
        }
        (Scalar::Str, k @ Kind::Unknown) => *k = Kind::Str,
        // a cell that a number would change: the column keeps every cell's text, and
        // messages name this cell as where the column became text
        (
            Scalar::NumberText,
            k @ (Kind::Unknown | Kind::Int { .. } | Kind::Float | Kind::NonFinite | Kind::NegZero),
        ) => {
            *k = Kind::Str;
            node.first = Some(src.clone());
        }
        // a non-finite string takes the type the column's other values give it
        (Scalar::NonFinite, k @ Kind::Unknown) => *k = Kind::NonFinite,
        (Scalar::NonFinite, k @ Kind::Int { .. }) => *k = Kind::Float,
        (Scalar::NegZero, k @ Kind::NonFinite) => *k = Kind::Float,
        // the value that decides the type is where messages say it was first seen
        (decided @ (Scalar::Int(..) | Scalar::Float | Scalar::Str | Scalar::Bool), k @ Kind::NonFinite) => {
            *k = match decided {
                Scalar::Str => Kind::Str,
                Scalar::Bool => Kind::Bool,
                _ => Kind::Float,
            };
            node.first = Some(src.clone());
        }
        _ => {} // same kind, or a conflict the reader reports
    }
    if first {
        node.first = Some(src.clone());
    }
}

fn to_type(node: &Node, segs: &mut Vec<Seg>, problems: &mut Vec<TypeProblem>, nonfinite_text: bool) -> DataType {
    match &node.kind {
        Kind::Unknown => {
            let (what, hint) = if matches!(segs.last(), Some(Seg::Elem)) {
                (
                    "no input has an element in this list, so its element type is unknown",
                    "declare the field's `items` type",
                )
            } else {
                ("no input file has a non-null value for it, so its type is unknown", "declare its type")
            };
            problems.push(TypeProblem {
                path: path::render(segs),
                message: format!("{what}; {hint} (a [[source.field]] in pipeline.toml)"),
                at: None,
            });
            DataType::Utf8
        }
        Kind::Bool => DataType::Boolean,
        Kind::Int { negative, above_i64 } => match (negative, above_i64) {
            (Some(n), Some(b)) => {
                problems.push(TypeProblem {
                    path: path::render(segs),
                    message: format!(
                        "no single integer type holds both the negative value at {n} and the value above \
                         9223372036854775807 at {b}; declare the column's type as `any` to keep both exactly, as \
                         their JSON text (a [[source.field]] in pipeline.toml, or `query --schema`; `number` holds \
                         only the integers a 64-bit float holds exactly)"
                    ),
                    at: Some(b.clone()),
                });
                DataType::Int64
            }
            (None, Some(_)) => DataType::UInt64,
            _ => DataType::Int64,
        },
        Kind::Float | Kind::NegZero => DataType::Float64,
        // such strings and no number: a source that reads them as numbers takes them for
        // numbers; where nothing declares them so (`query` of raw files), text
        Kind::NonFinite if !nonfinite_text => DataType::Float64,
        Kind::Str | Kind::NonFinite | Kind::Missing => DataType::Utf8,
        Kind::List(elem) => {
            segs.push(Seg::Elem);
            let dt = to_type(elem, segs, problems, nonfinite_text);
            segs.pop();
            DataType::List(Arc::new(Field::new("item", dt, true)))
        }
        Kind::Struct(members) if members.is_empty() => {
            // no input decides the column's fields: a matter for the pipeline (exit 2, as a
            // column null everywhere), not a violation that a reject could remove
            let first = node.first.as_ref().map(|at| format!(" (the first: {at})")).unwrap_or_default();
            problems.push(TypeProblem {
                path: path::render(segs),
                message: format!(
                    "every input has an empty object `{{}}` here{first}, and Parquet stores no struct without \
                     fields; declare it, or the object holding it, `type = \"object\"` without fields (kept as \
                     JSON text), or declare its fields (a [[source.field]] in pipeline.toml)"
                ),
                at: None,
            });
            // what the values are, so that converting them adds no second message
            DataType::Struct(Fields::empty())
        }
        Kind::Struct(members) => {
            let mut fields = Vec::new();
            for (k, n) in members {
                segs.push(Seg::Key(k.clone()));
                fields.push(Field::new(k, to_type(n, segs, problems, nonfinite_text), true));
                segs.pop();
            }
            DataType::Struct(Fields::from(fields))
        }
    }
}

/// Where each shape was first seen, by rendered path (`$.args` → `shapes.jsonl:1`), with the
/// shape's name; used to make type-violation messages name both places.
pub fn first_seen(inf: &Inference) -> BTreeMap<String, (String, SourceRef)> {
    let mut out = BTreeMap::new();
    fn walk(node: &Node, segs: &mut Vec<Seg>, out: &mut BTreeMap<String, (String, SourceRef)>) {
        if let Some(f) = &node.first {
            out.insert(path::render(segs), (node.kind.name().to_string(), f.clone()));
        }
        match &node.kind {
            Kind::List(e) => {
                segs.push(Seg::Elem);
                walk(e, segs, out);
                segs.pop();
            }
            Kind::Struct(m) => {
                for (k, n) in m {
                    segs.push(Seg::Key(k.clone()));
                    walk(n, segs, out);
                    segs.pop();
                }
            }
            _ => {}
        }
    }
    for (name, node) in &inf.columns {
        let mut segs = vec![Seg::Key(name.clone())];
        walk(node, &mut segs, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::report::Position;

    fn infer(lines: &[&str]) -> (Vec<Field>, Vec<TypeProblem>, Inference) {
        let mut inf = Inference::new(false);
        for (i, l) in lines.iter().enumerate() {
            let v: Value = serde_json::from_str(l).unwrap();
            let src = SourceRef { file: "f.jsonl".into(), at: Position::Line(i as u64 + 1) };
            inf.observe(v.as_object().unwrap(), &src);
        }
        let (f, p) = inf.fields();
        (f, p, inf)
    }

    #[test]
    fn nonfinite_strings_take_the_type_of_the_other_values_in_any_order() {
        let typed = |lines: &[&str]| {
            let mut inf = Inference::new(false);
            inf.nonfinite_strings = true;
            for (i, l) in lines.iter().enumerate() {
                let v: Value = serde_json::from_str(l).unwrap();
                inf.observe(v.as_object().unwrap(), &SourceRef { file: "f".into(), at: Position::Line(i as u64) });
            }
            inf.fields().0[0].data_type().clone()
        };
        // as the converter reads them: in any case
        // (and Python's `str()` of such floats)
        for lines in [
            [r#"{"v":"NaN"}"#, r#"{"v":2}"#],
            [r#"{"v":2}"#, r#"{"v":"-Infinity"}"#],
            [r#"{"v":"nan"}"#, r#"{"v":2}"#],
            [r#"{"v":"-inf"}"#, r#"{"v":2}"#],
            [r#"{"v":2}"#, r#"{"v":"inf"}"#],
        ] {
            assert_eq!(typed(&lines), DataType::Float64, "{lines:?}");
        }
        // such strings alone: numbers for a source that reads them so
        assert_eq!(typed(&[r#"{"v":"NaN"}"#]), DataType::Float64);
        for lines in [[r#"{"v":"NaN"}"#, r#"{"v":"x"}"#], [r#"{"v":"x"}"#, r#"{"v":"NaN"}"#]] {
            assert_eq!(typed(&lines), DataType::Utf8, "{lines:?}");
        }
        // messages name the value that decided the type, not the non-finite string before it
        let mut inf = Inference::new(false);
        inf.nonfinite_strings = true;
        for (i, l) in [r#"{"v":"NaN"}"#, r#"{"v":true}"#].iter().enumerate() {
            let v: Value = serde_json::from_str(l).unwrap();
            inf.observe(v.as_object().unwrap(), &SourceRef { file: "f".into(), at: Position::Line(i as u64 + 1) });
        }
        assert_eq!(first_seen(&inf)["$.v"].1.to_string(), "f:2");
        // without the coercion they are text
        let (f, _, _) = infer(&[r#"{"v":"NaN"}"#]);
        assert_eq!(f[0].data_type(), &DataType::Utf8);
    }

    #[test]
    fn csv_cells_that_a_number_would_change_keep_their_column_text_in_any_order() {
        let typed = |cells: &[&str]| {
            let mut inf = Inference::new(true);
            for (i, c) in cells.iter().enumerate() {
                let record = serde_json::json!({ "c": c });
                inf.observe(record.as_object().unwrap(), &SourceRef { file: "f".into(), at: Position::Line(i as u64) });
            }
            inf.fields().0[0].data_type().clone()
        };
        for cells in [
            ["12345678", "0e523456"],
            ["0e523456", "12345678"],
            ["1", "007"],
            ["007", "1"],
            ["-0", "1"],
            ["1.5", "-0"],
            ["1", "1e5"],
            ["+5", "1"],
        ] {
            assert_eq!(typed(&cells), DataType::Utf8, "{cells:?}");
        }
        for cells in [["1e-05", "0.5"], ["12345678", "1.5"], ["-0.0", "1"], ["1.5e16", "2"], ["1E+05", "3"]] {
            assert_eq!(typed(&cells), DataType::Float64, "{cells:?}");
        }
        assert_eq!(typed(&["0", "-2"]), DataType::Int64);
    }

    #[test]
    fn a_missing_values_text_decides_no_type_and_the_value_that_does_is_named() {
        let typed = |textual: bool, values: &[serde_json::Value]| {
            let mut inf = Inference::new(textual);
            for (i, v) in values.iter().enumerate() {
                let record = serde_json::json!({ "c": v });
                let at = SourceRef { file: "f".into(), at: Position::Line(i as u64 + 1) };
                inf.observe(record.as_object().unwrap(), &at);
            }
            (inf.fields().0[0].data_type().clone(), first_seen(&inf)["$.c"].1.to_string())
        };
        use serde_json::json;
        assert_eq!(typed(true, &[json!("n/a"), json!("0.5"), json!("-")]), (DataType::Float64, "f:2".into()));
        assert_eq!(typed(true, &[json!("NA"), json!("3")]), (DataType::Int64, "f:2".into()));
        assert_eq!(typed(false, &[json!("None"), json!(""), json!(true)]), (DataType::Boolean, "f:3".into()));
        assert_eq!(typed(false, &[json!("--"), json!([1])]).0, DataType::new_list(DataType::Int64, true));
        // such texts alone, or beside other text, are text; the first text of another kind decides
        assert_eq!(typed(false, &[json!("n/a"), json!("null")]), (DataType::Utf8, "f:1".into()));
        assert_eq!(typed(true, &[json!("-"), json!("ok"), json!("1")]), (DataType::Utf8, "f:2".into()));
        // after a number, one is the reader's to report
        assert_eq!(typed(false, &[json!(1.5), json!("n/a")]), (DataType::Float64, "f:1".into()));
    }

    #[test]
    fn a_json_negative_zero_takes_the_type_of_the_other_values() {
        for (lines, dt) in [
            ([r#"{"n":-0}"#, r#"{"n":3}"#], DataType::Int64),
            ([r#"{"n":3}"#, r#"{"n":-0}"#], DataType::Int64),
            ([r#"{"n":-0.0}"#, r#"{"n":0.5}"#], DataType::Float64),
            ([r#"{"n":-0}"#, r#"{"n":-0}"#], DataType::Float64),
        ] {
            let (f, p, _) = infer(&lines);
            assert!(p.is_empty());
            assert_eq!(f[0].data_type(), &dt, "{lines:?}");
        }
    }

    #[test]
    fn merges_numbers_and_structs() {
        let (f, p, inf) = infer(&[
            r#"{"a": 1, "m": {"seed": 1, "env": "x"}, "l": []}"#,
            r#"{"a": 1.5, "m": {"env": "y", "seed": 2, "retry": 2}, "l": [1, 2.5]}"#,
        ]);
        assert!(p.is_empty());
        assert_eq!(f[0].data_type(), &DataType::Float64);
        assert_eq!(crate::core::schema::type_name(f[1].data_type()), "Struct<seed: Int64, env: Utf8, retry: Int64>");
        assert_eq!(crate::core::schema::type_name(f[2].data_type()), "List<Float64>");
        assert_eq!(inf.widenings[0].path, "$.m.retry");
        assert_eq!(inf.widenings[0].first.to_string(), "f.jsonl:2");
        // the float that made `a` a float column is where it was first seen as one
        let (_, at) = &first_seen(&inf)["$.a"];
        assert_eq!(at.to_string(), "f.jsonl:2");
    }

    #[test]
    fn undecidable_types_are_problems() {
        let (_, p, _) = infer(&[r#"{"c": null, "l": []}"#]);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].path, "$.c");
        assert_eq!(p[1].path, "$.l[]");
        let (f, p, _) = infer(&[r#"{"s": 18446744073709551615}"#, r#"{"s": 42}"#]);
        assert!(p.is_empty());
        assert_eq!(f[0].data_type(), &DataType::UInt64);
        let (_, p, _) = infer(&[r#"{"s": -1}"#, r#"{"s": 18446744073709551615}"#]);
        assert!(p[0].message.contains("f.jsonl:1") && p[0].message.contains("f.jsonl:2"), "{p:?}");
    }
}
