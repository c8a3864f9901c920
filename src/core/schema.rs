//! Table schemas: the Frictionless Table Schema files under `schemas/`, their Arrow form, and
//! the reverse mapping used to describe inferred tables.
//!
//! In: a JSON file in Frictionless Table Schema form (<https://specs.frictionlessdata.io/table-schema/>,
//! v1 with the v2 `items` idea for arrays). Out: a [`TableSchema`] and its Arrow
//! [`Schema`].
//!
//! Type mapping (Frictionless → Arrow):
//!
//! | `type` | Arrow |
//! |---|---|
//! | `string` | `Utf8` |
//! | `integer` | `Int64`; with `"format": "uint64"`: `UInt64` |
//! | `number` | `Float64` |
//! | `boolean` | `Boolean` |
//! | `datetime` | `Timestamp(Microsecond, "UTC")` |
//! | `date` | `Date32` |
//! | `array` | `List<items>`; `items` is a field descriptor (runpack extension, required) |
//! | `object` | `Struct<fields>` when `fields` is given (runpack extension); else `Utf8` JSON text |
//! | `any` | `Utf8` holding the value's JSON text |
//!
//! Constraints understood: `required`, `unique`, `enum`, `pattern` (whole-value match),
//! `minimum`, `maximum`, `minLength`, `maxLength`. Table level: `primaryKey`, `foreignKeys`
//! (references to an earlier output table of the same pipeline; a reference to the same table,
//! `""`, is refused, as it is not checked).

use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray, StructArray, new_null_array};
use arrow::compute::{CastOptions, cast_with_options};
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use serde::{Deserialize, Serialize};

use crate::core::error::{Error, Result};

/// Arrow time zone used for every `datetime` column.
pub const UTC: &str = "UTC";

/// A Frictionless Table Schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TableSchema {
    /// Optional JSON Schema profile URL (ignored).
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Optional title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the table holds; used in the dataset card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The columns, in output order.
    pub fields: Vec<FieldDescriptor>,
    /// Column(s) whose values identify a row; rows are sorted by them.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "one_or_many")]
    pub primary_key: Vec<String>,
    /// References to rows of other tables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_keys: Vec<ForeignKey>,
    /// Strings that mean "missing" in textual inputs (CSV). Default `[""]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_values: Option<Vec<String>>,
}

/// One column of a [`TableSchema`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FieldDescriptor {
    /// Column name, used literally (`train/return` stays `train/return`).
    #[serde(default)]
    pub name: String,
    /// Frictionless type (see the module table).
    #[serde(rename = "type", default = "default_type")]
    pub field_type: String,
    /// Type-specific format (`uint64` for integers; free text otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Optional title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the column means, with its unit; shown in the card's column dictionary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// An example value (documentation only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example: Option<serde_json::Value>,
    /// Value rules.
    #[serde(default, skip_serializing_if = "Constraints::is_empty")]
    pub constraints: Constraints,
    /// Element descriptor of an `array` field (runpack extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Box<FieldDescriptor>>,
    /// Member fields of an `object` field (runpack extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<FieldDescriptor>>,
    /// The text values that mean null in this column (Table Schema v2's field `missingValues`:
    /// `["n/a", "-"]`): a source's field only, in a `csv`, `jsonl`, `json` or `yaml` source;
    /// each value read as null is counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_values: Option<Vec<String>>,
}

fn default_type() -> String {
    "any".to_string()
}

/// Frictionless field constraints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Constraints {
    /// The value must not be null.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// No two rows share a non-null value.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unique: bool,
    /// Allowed values.
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub enum_values: Option<Vec<serde_json::Value>>,
    /// Regular expression the whole string value must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Smallest allowed number (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<serde_json::Number>,
    /// Largest allowed number (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<serde_json::Number>,
    /// Shortest allowed string or list, in characters or elements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Longest allowed string or list, in characters or elements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
}

impl Constraints {
    /// True when no constraint is set.
    pub fn is_empty(&self) -> bool {
        *self == Constraints::default()
    }
}

/// A Frictionless foreign key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForeignKey {
    /// Local column(s).
    #[serde(deserialize_with = "one_or_many")]
    pub fields: Vec<String>,
    /// The referenced table and column(s).
    pub reference: Reference,
}

/// Target of a [`ForeignKey`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// Referenced table name (an earlier table of the pipeline; `""`, this table, is refused).
    pub resource: String,
    /// Referenced column(s).
    #[serde(deserialize_with = "one_or_many")]
    pub fields: Vec<String>,
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

impl TableSchema {
    /// Reads and checks a schema file.
    ///
    /// Errors: [`Error::Io`] when the file cannot be read, [`Error::Config`] naming the file,
    /// line and column for JSON or structure errors, and naming the field for unknown types,
    /// duplicate names, or keys that name no field.
    pub fn load(path: &Path) -> Result<TableSchema> {
        let text = crate::core::spec::read_definition(path)?;
        // serde would read a struct from an array too ("invalid length 3, expected struct …")
        let start = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
        if let Some(c) = start.chars().next().filter(|c| *c != '{') {
            let found = match c {
                '[' => "an array",
                '"' => "a string",
                _ => "no JSON object",
            };
            return Err(Error::config(
                path.display().to_string(),
                format!("a Table Schema is a JSON object ({{\"fields\": [...]}}); this file holds {found}"),
            ));
        }
        let schema: TableSchema = serde_json::from_str(&text).map_err(|e| Error::json_file(path.display(), &e))?;
        schema.check_at().map_err(|(at, m)| Error::config(format!("{}:{at}", path.display()), m))?;
        Ok(schema)
    }

    /// Checks internal consistency: known types, unique names, key columns that exist.
    ///
    /// Errors: what is wrong, for the user (see [`TableSchema::check_at`] for where).
    pub fn check(&self) -> std::result::Result<(), String> {
        self.check_at().map_err(|(_, m)| m)
    }

    /// [`TableSchema::check`], with the JSON pointer (RFC 6901) of the part that is wrong:
    /// `(pointer, message)`, such as `("/primaryKey/0", "primaryKey names `stepp`, …")`.
    pub fn check_at(&self) -> std::result::Result<(), (String, String)> {
        let mut seen = std::collections::BTreeSet::new();
        for (i, f) in self.fields.iter().enumerate() {
            let at = |part: &str| format!("/fields/{i}{part}");
            if f.name.is_empty() {
                return Err((at(""), "a field has no `name`".into()));
            }
            column_name(&f.name).map_err(|m| (at("/name"), m))?;
            if !seen.insert(f.name.as_str()) {
                return Err((at("/name"), format!("field `{}` is declared twice", f.name)));
            }
            f.arrow_type().map_err(|m| (at(""), format!("field `{}`: {m}", f.name)))?;
            f.check_constraints().map_err(|m| (at(""), format!("field `{}`: {m}", f.name)))?;
            if let Some(m) = f.unchecked_format() {
                return Err((at(""), format!("field `{}`: {m}", f.name)));
            }
            if f.constraints.unique && !f.is_scalar() {
                return Err((
                    at("/constraints/unique"),
                    format!(
                        "field `{}`: `unique` on a field of type `{}`: only scalar values (string, integer, number, \
                         boolean, date, datetime) are compared as keys",
                        f.name, f.field_type
                    ),
                ));
            }
        }
        for (j, k) in self.primary_key.iter().enumerate() {
            let at = format!("/primaryKey/{j}");
            match self.field(k) {
                None => return Err((at, format!("primaryKey names `{k}`, which is not a field"))),
                Some(f) if !f.is_scalar() => {
                    return Err((
                        at,
                        format!(
                            "primaryKey names `{k}`, of type `{}`: a key is made of scalar values (string, integer, \
                             number, boolean, date, datetime)",
                            f.field_type
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        for (n, fk) in self.foreign_keys.iter().enumerate() {
            let at = |part: &str| format!("/foreignKeys/{n}{part}");
            if fk.reference.resource.is_empty() {
                return Err((
                    at("/reference/resource"),
                    format!(
                        "foreign key {:?} references its own table (`\"resource\": \"\"`), which runpack does not \
                         check; put the referenced rows in a table of their own",
                        fk.fields
                    ),
                ));
            }
            if fk.fields.is_empty() {
                return Err((at("/fields"), "a foreign key names no field: list the fields it is made of".into()));
            }
            for (j, k) in fk.fields.iter().enumerate() {
                if !seen.contains(k.as_str()) {
                    return Err((
                        at(&format!("/fields/{j}")),
                        format!("foreignKeys names `{k}`, which is not a field"),
                    ));
                }
            }
            if fk.fields.len() != fk.reference.fields.len() {
                return Err((
                    at(""),
                    format!(
                        "foreign key {:?} has {} fields but references {}",
                        fk.fields,
                        fk.fields.len(),
                        fk.reference.fields.len()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The Arrow schema of the table. Fields are nullable unless `required`.
    pub fn arrow_schema(&self) -> SchemaRef {
        let fields: Vec<Field> =
            self.fields.iter().map(|f| f.arrow_field().expect("checked by TableSchema::check")).collect();
        Arc::new(Schema::new(fields))
    }

    /// The descriptor of column `name`.
    pub fn field(&self, name: &str) -> Option<&FieldDescriptor> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Describes an Arrow schema (for tables whose schema was inferred).
    pub fn from_arrow(schema: &Schema) -> TableSchema {
        TableSchema {
            profile: None,
            title: None,
            description: None,
            fields: schema.fields().iter().map(|f| FieldDescriptor::from_arrow(f)).collect(),
            primary_key: vec![],
            foreign_keys: vec![],
            missing_values: None,
        }
    }
}

/// The column sets of each table that the foreign keys of `tables` (name, schema) refer to,
/// by referenced table (a key without `resource` refers to its own table), each set once.
pub fn referenced_columns<'a>(
    tables: impl IntoIterator<Item = (&'a str, &'a TableSchema)>,
) -> std::collections::BTreeMap<String, Vec<Vec<String>>> {
    let mut out: std::collections::BTreeMap<String, Vec<Vec<String>>> = Default::default();
    for (name, schema) in tables {
        for fk in &schema.foreign_keys {
            let target = if fk.reference.resource.is_empty() { name } else { fk.reference.resource.as_str() };
            let sets = out.entry(target.to_string()).or_default();
            if !sets.contains(&fk.reference.fields) {
                sets.push(fk.reference.fields.clone());
            }
        }
    }
    out
}

/// An order of items `0..deps.len()` where each comes after the items `deps[i]` names, earlier
/// items first where there is a choice; and the items left out, in a cycle (or after one).
pub fn dependency_order(deps: &[std::collections::BTreeSet<usize>]) -> (Vec<usize>, Vec<usize>) {
    let mut done = vec![false; deps.len()];
    let mut order = Vec::new();
    while let Some(i) = (0..deps.len()).find(|&i| !done[i] && deps[i].iter().all(|&d| done[d])) {
        done[i] = true;
        order.push(i);
    }
    let stuck = (0..deps.len()).filter(|&i| !done[i]).collect();
    (order, stuck)
}

/// Why a constraint below a top-level field or a top-level array's items is refused.
/// True for the scalar Arrow types runpack stores as they are (a Table Schema scalar's type):
/// Null, Boolean, Int64, UInt64, Float64, Utf8, Date32 and microsecond timestamps.
pub fn is_stored_scalar(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Null
            | DataType::Boolean
            | DataType::Int64
            | DataType::UInt64
            | DataType::Float64
            | DataType::Utf8
            | DataType::Date32
            | DataType::Timestamp(TimeUnit::Microsecond, _)
    )
}

/// A column label as Frictionless readers read it: without the blanks at its edges (Python's
/// `str.strip()`: Unicode white space and the separators U+001C to U+001F).
pub fn trimmed_label(name: &str) -> &str {
    name.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// `name` with a `_` where camelCase starts a word (`hubToken` → `hub_Token`, `nShot2Acc` →
/// `n_Shot2_Acc`), so that its words split as snake_case's do.
pub(crate) fn snake_words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut after_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() && after_lower {
            out.push('_');
        }
        after_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(c);
    }
    out
}

/// Checks the name of a table's column: one with a blank (any Unicode white space) at its start
/// or end is refused, because Frictionless readers trim header labels and would then find no
/// column of that name in the release's `datapackage.json`; one holding a NUL (U+0000) is
/// refused, because readers that pass names as C strings (the `datasets` library, through
/// Arrow's C interface) cut it there and then find no such column.
///
/// Errors: a message naming the column and how to rename it in the table's SQL.
pub fn column_name(name: &str) -> std::result::Result<(), String> {
    let trimmed = trimmed_label(name);
    let rename = |to: &str| format!("rename it in the table's SQL (`… AS \"{}\"`)", to.replace('"', "\"\""));
    if name.is_empty() {
        return Err(format!("a column has an empty name, which no file or schema can hold; {}", rename("name")));
    }
    if trimmed != name {
        return Err(format!(
            "column {name:?} begins or ends with a blank: Frictionless readers trim column labels, so \
             `datapackage.json` could not describe it; {}",
            rename(if trimmed.is_empty() { "name" } else { trimmed })
        ));
    }
    if name.contains('\0') {
        return Err(format!(
            "column {name:?} holds a NUL character (U+0000), where readers that take names as C strings (the \
             `datasets` library) cut it; {}",
            rename(&name.replace('\0', "_"))
        ));
    }
    Ok(())
}

/// Checks a `pattern` constraint: a regular expression that runpack (Rust `regex` syntax) and
/// Frictionless readers (Python `re`, which the Table Schema spec's XML Schema regular
/// expressions are read with in practice) both compile and read alike, matched against the
/// whole value.
///
/// Refused, with the construct named: inline flags other than a group's own `i`, `m`, `s`
/// (`(?i)abc`, `(?x:…)`, `(?U:…)`; `(?i:abc)` passes), Unicode classes
/// (`\pL`, `\p{Greek}`), POSIX classes (`[[:alpha:]]`), nested classes and class set
/// operations (`[a-z&&[^x]]`, `--`, `~~`), braced hex escapes (`\x{41}`), `(?<name>…)` groups
/// (Python spells them `(?P<name>…)`) and group names that are not identifiers, the
/// assertions Python lacks (`\z`, `\b{start}`, `\<`, `\>`), a repetition of a repetition
/// (`a**`) and blanks inside a counted repetition (`a{ 2 }`). A pattern is parsed on its own,
/// so one that is only valid once wrapped in `^(?:…)$` (`a)|(b`) is refused too.
///
/// Errors: a message naming the construct and its position (characters, counted from 1).
fn check_pattern(pattern: &str) -> std::result::Result<(), String> {
    use regex_syntax::ast::{self, Ast, ClassSet, ClassSetItem, GroupKind};
    let ast = ast::parse::Parser::new().parse(pattern).map_err(|e| format!("invalid pattern: {e}"))?;
    let refuse = |span: &ast::Span, what: &str| {
        Err(format!(
            "pattern {pattern:?}: {what} at character {} ({:?}) is read differently or refused by \
             Python's `re`, which Frictionless readers match patterns with",
            pattern[..span.start.offset].chars().count() + 1,
            &pattern[span.start.offset..span.end.offset]
        ))
    };
    fn class_item<'a>(item: &'a ClassSetItem, out: &mut Vec<(&'a ast::Span, &'static str)>) {
        match item {
            ClassSetItem::Ascii(c) => out.push((&c.span, "a POSIX class")),
            ClassSetItem::Unicode(c) => out.push((&c.span, "a Unicode class")),
            ClassSetItem::Bracketed(c) => out.push((&c.span, "a class inside a class")),
            ClassSetItem::Literal(l) => literal(l, out),
            ClassSetItem::Range(r) => {
                literal(&r.start, out);
                literal(&r.end, out);
            }
            ClassSetItem::Union(u) => u.items.iter().for_each(|i| class_item(i, out)),
            ClassSetItem::Empty(_) | ClassSetItem::Perl(_) => {}
        }
    }
    fn literal<'a>(l: &'a ast::Literal, out: &mut Vec<(&'a ast::Span, &'static str)>) {
        if matches!(l.kind, ast::LiteralKind::HexBrace(_)) {
            out.push((&l.span, "a braced hex escape"));
        }
    }
    let mut found: Vec<(&ast::Span, &'static str)> = Vec::new();
    let mut stack = vec![&ast];
    while let Some(node) = stack.pop() {
        match node {
            Ast::Flags(f) => found.push((&f.span, "an inline flag")),
            Ast::Literal(l) => literal(l, &mut found),
            Ast::ClassUnicode(c) => found.push((&c.span, "a Unicode class")),
            Ast::Assertion(a) => {
                use ast::AssertionKind::*;
                if !matches!(a.kind, StartLine | EndLine | StartText | WordBoundary | NotWordBoundary) {
                    found.push((&a.span, "an assertion"));
                }
            }
            Ast::ClassBracketed(c) => match &c.kind {
                ClassSet::BinaryOp(op) => found.push((&op.span, "a class set operation")),
                ClassSet::Item(item) => class_item(item, &mut found),
            },
            Ast::Repetition(r) => {
                if matches!(*r.ast, Ast::Repetition(_)) {
                    // `a**`, `x{2}{3}`: Python refuses a repeat of a repeat
                    found.push((&r.span, "a repetition of a repetition"));
                } else if pattern[r.op.span.start.offset..r.op.span.end.offset].contains(char::is_whitespace) {
                    // `a{ 2 }`: Python reads braces with blanks as text
                    found.push((&r.op.span, "a counted repetition with blanks"));
                }
                stack.push(&r.ast)
            }
            Ast::Group(g) => {
                match &g.kind {
                    GroupKind::CaptureName { starts_with_p: false, .. } => {
                        found.push((&g.span, "a `(?<name>…)` group"))
                    }
                    GroupKind::CaptureName { name, .. }
                        if !name
                            .name
                            .chars()
                            .enumerate()
                            .all(|(i, c)| c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())) =>
                    {
                        found.push((&name.span, "a group name that is not an identifier"))
                    }
                    GroupKind::NonCapturing(flags) => {
                        // scoped i, m and s (and their negation) mean the same to Python's `re`
                        use ast::{Flag, FlagsItemKind};
                        let shared = |k: &FlagsItemKind| {
                            matches!(
                                k,
                                FlagsItemKind::Negation
                                    | FlagsItemKind::Flag(
                                        Flag::CaseInsensitive | Flag::MultiLine | Flag::DotMatchesNewLine
                                    )
                            )
                        };
                        if let Some(item) = flags.items.iter().find(|i| !shared(&i.kind)) {
                            found.push((&item.span, "an inline flag"))
                        }
                    }
                    _ => {}
                }
                stack.push(&g.ast);
            }
            Ast::Alternation(a) => stack.extend(a.asts.iter()),
            Ast::Concat(c) => stack.extend(c.asts.iter()),
            Ast::Empty(_) | Ast::Dot(_) | Ast::ClassPerl(_) => {}
        }
    }
    if let Some((span, what)) = found.iter().min_by_key(|(span, _)| span.start.offset) {
        return refuse(span, what);
    }
    regex::Regex::new(&format!("^(?:{pattern})$")).map(drop).map_err(|e| format!("invalid pattern: {e}"))
}

const IGNORED_BELOW: &str =
    "constraints are checked on top-level fields and the items of a top-level array only, and would be ignored here";

impl FieldDescriptor {
    /// Constraints that no value could meet are mistakes in the schema, not in the data: an
    /// `enum` value of another type than the field's, a `minimum` above the `maximum`, a
    /// `minLength` above the `maxLength`.
    /// So are constraints where runpack would not check them, rather than be ignored: `minimum`
    /// and `maximum` on a field that is not `integer` or `number`, `pattern` on one that is not
    /// `string`, `minLength`/`maxLength` on one that is neither `string` nor `array`, an empty
    /// `enum`, `unique` on the items of an array, and any constraint on the `fields` of an
    /// object or deeper than the items of a top-level array (those are not validated).
    fn check_constraints(&self) -> std::result::Result<(), String> {
        let c = &self.constraints;
        let t = self.field_type.as_str();
        if self.items.is_some() && t != "array" {
            return Err(format!("`items` describes the elements of an `array` field, not of a `{t}` one"));
        }
        if self.fields.is_some() && t != "object" {
            return Err(format!("`fields` describes the members of an `object` field, not of a `{t}` one"));
        }
        let misplaced = |what: &str, types: &str| {
            Err(format!("{what} applies to {types} fields, not `{t}`: runpack would not check it"))
        };
        if (c.minimum.is_some() || c.maximum.is_some()) && !matches!(t, "integer" | "number") {
            return misplaced("minimum/maximum", "`integer` and `number`");
        }
        if let Some(p) = &c.pattern {
            if t != "string" {
                return misplaced("pattern", "`string`");
            }
            check_pattern(p)?;
        }
        if (c.min_length.is_some() || c.max_length.is_some()) && !matches!(t, "string" | "array") {
            return misplaced("minLength/maxLength", "`string` and `array`");
        }
        if c.enum_values.as_ref().is_some_and(|v| v.is_empty()) {
            return Err("enum lists no value: no value can meet it".into());
        }
        if let Some(items) = &self.items {
            if items.constraints.unique {
                return Err("items: unique applies to a whole column, not to the items of an array".into());
            }
            items.check_constraints().map_err(|m| format!("items: {m}"))?;
            items.unchecked_below().map_err(|m| format!("items: {m}"))?;
        }
        if let Some(f) = self.fields.iter().flatten().find(|f| f.has_constraints()) {
            return Err(format!("fields: `{}`: {IGNORED_BELOW}", f.name));
        }
        if let Some(values) = &c.enum_values {
            let fits = |v: &serde_json::Value| match self.field_type.as_str() {
                "integer" => v.is_i64() || v.is_u64(),
                "number" => v.is_number(),
                "string" => v.is_string(),
                "boolean" => v.is_boolean(),
                _ => true,
            };
            if let Some(v) = values.iter().find(|v| !fits(v)) {
                return Err(format!("enum value {v} is not of the field's type `{}`", self.field_type));
            }
        }
        // Table Schema gives minimum and maximum the field's type: Frictionless readers fail on
        // a fraction on an integer field (a whole number written as 1e3 or 0.0 they read)
        let whole = |n: &serde_json::Number| n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0);
        if t == "integer"
            && let Some((what, n)) = [("minimum", &c.minimum), ("maximum", &c.maximum)]
                .into_iter()
                .find_map(|(w, n)| n.as_ref().filter(|n| !whole(n)).map(|n| (w, n)))
        {
            return Err(format!("{what} {n} is not an integer, as an `integer` field's {what} must be"));
        }
        if let (Some(lo), Some(hi)) = (&c.minimum, &c.maximum)
            && crate::core::values::compare_numbers(lo, hi) == Some(std::cmp::Ordering::Greater)
        {
            return Err(format!("minimum {lo} is above maximum {hi}: no value can meet both"));
        }
        if let (Some(lo), Some(hi)) = (c.min_length, c.max_length)
            && lo > hi
        {
            return Err(format!("minLength {lo} is above maxLength {hi}: no value can meet both"));
        }
        Ok(())
    }

    /// True when this descriptor, its `items` or its `fields` (at any depth) set a constraint.
    pub fn has_constraints(&self) -> bool {
        !self.constraints.is_empty()
            || self.items.as_deref().is_some_and(FieldDescriptor::has_constraints)
            || self.fields.iter().flatten().any(FieldDescriptor::has_constraints)
    }

    /// Refuses constraints below this descriptor's own level (the items of its items, the
    /// fields of its object): runpack would not check them.
    fn unchecked_below(&self) -> std::result::Result<(), String> {
        if self.items.as_deref().is_some_and(FieldDescriptor::has_constraints) {
            return Err(format!("items: {IGNORED_BELOW}"));
        }
        match self.fields.iter().flatten().find(|f| f.has_constraints()) {
            Some(f) => Err(format!("fields: `{}`: {IGNORED_BELOW}", f.name)),
            None => Ok(()),
        }
    }

    /// A plain descriptor with a name and a type.
    pub fn new(name: impl Into<String>, field_type: impl Into<String>) -> Self {
        FieldDescriptor {
            name: name.into(),
            field_type: field_type.into(),
            format: None,
            title: None,
            description: None,
            example: None,
            constraints: Constraints::default(),
            items: None,
            fields: None,
            missing_values: None,
        }
    }

    /// Whether this field, or a field or item inside it, is `date`, `datetime`, `any` or an
    /// `object` without `fields`: the types whose stored values the validator checks again.
    pub fn needs_stored_checks(&self) -> bool {
        matches!(self.field_type.as_str(), "date" | "datetime" | "any")
            || self.is_json_text()
            || self.items.as_deref().is_some_and(FieldDescriptor::needs_stored_checks)
            || self.fields.iter().flatten().any(FieldDescriptor::needs_stored_checks)
    }

    /// True when the column holds JSON text (`any`, or `object` without `fields`).
    pub fn is_json_text(&self) -> bool {
        self.field_type == "any" || (self.field_type == "object" && self.fields.is_none())
    }

    /// Whether values of this field are scalars (not `array`, `object` or `any`), which keys
    /// and `unique` compare.
    pub fn is_scalar(&self) -> bool {
        matches!(self.field_type.as_str(), "string" | "integer" | "number" | "boolean" | "date" | "datetime")
    }

    /// Why this field's `format` (or one of its items' or members') is one runpack would not
    /// honour, when it is: runpack reads every type in its default form, and only integers
    /// have a format of their own (`uint64`).
    pub fn unchecked_format(&self) -> Option<String> {
        let own = match (self.field_type.as_str(), self.format.as_deref()) {
            (_, None | Some("default")) | ("integer", Some(_)) => None,
            (t, Some(f)) => Some(format!(
                "format `{f}` on a `{t}` field is not checked nor used by runpack (it reads the type's default \
                 form); remove it"
            )),
        };
        own.or_else(|| self.items.as_deref().and_then(FieldDescriptor::unchecked_format))
            .or_else(|| self.fields.iter().flatten().find_map(FieldDescriptor::unchecked_format))
    }

    /// The Arrow data type of this field (see the module table).
    ///
    /// Errors: a message naming the unsupported type or the missing `items`.
    pub fn arrow_type(&self) -> std::result::Result<DataType, String> {
        Ok(match self.field_type.as_str() {
            "string" => DataType::Utf8,
            "integer" => match self.format.as_deref() {
                None | Some("default") | Some("int64") => DataType::Int64,
                Some("uint64") => DataType::UInt64,
                Some(other) => return Err(format!("unknown integer format `{other}` (use uint64)")),
            },
            "number" => DataType::Float64,
            "boolean" => DataType::Boolean,
            "datetime" => DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into())),
            "date" => DataType::Date32,
            "any" => DataType::Utf8,
            "object" => match &self.fields {
                None => DataType::Utf8,
                Some(fields) => {
                    // Parquet writes no struct without members, and a name twice would
                    // write an object with a repeated key
                    if fields.is_empty() {
                        return Err("an `object` with `fields` needs at least one field (leave `fields` out to \
                                    keep any object as JSON text)"
                            .into());
                    }
                    let mut out = Vec::with_capacity(fields.len());
                    let mut names = std::collections::BTreeSet::new();
                    for f in fields {
                        if f.name.is_empty() {
                            return Err("a member of the object's `fields` has no `name`".into());
                        }
                        if !names.insert(f.name.as_str()) {
                            return Err(format!("member `{}` of the object's `fields` is declared twice", f.name));
                        }
                        out.push(f.arrow_field().map_err(|m| format!("{}.{m}", f.name))?);
                    }
                    DataType::Struct(Fields::from(out))
                }
            },
            "array" => {
                let items =
                    self.items.as_ref().ok_or("an `array` field needs `items` (a field descriptor of its elements)")?;
                let mut item = items.as_ref().clone();
                if item.name.is_empty() {
                    item.name = "item".into();
                }
                DataType::List(Arc::new(item.arrow_field()?))
            }
            other => {
                return Err(format!(
                    "type `{other}` is not supported (use string, integer, number, boolean, \
                     datetime, date, array, object or any)"
                ));
            }
        })
    }

    /// The Arrow field: name, type and nullability (`required` makes it non-nullable, except
    /// inside lists where elements stay nullable).
    pub fn arrow_field(&self) -> std::result::Result<Field, String> {
        let name = if self.name.is_empty() { "item" } else { &self.name };
        Ok(Field::new(name, self.arrow_type()?, true))
    }

    /// Describes an Arrow field with the reverse of the module's mapping.
    pub fn from_arrow(field: &Field) -> FieldDescriptor {
        let mut d = FieldDescriptor::new(field.name().clone(), "any");
        match field.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => d.field_type = "string".into(),
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => d.field_type = "integer".into(),
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 => d.field_type = "integer".into(),
            DataType::UInt64 => {
                d.field_type = "integer".into();
                d.format = Some("uint64".into());
            }
            DataType::Float16 | DataType::Float32 | DataType::Float64 => d.field_type = "number".into(),
            DataType::Boolean => d.field_type = "boolean".into(),
            DataType::Timestamp(_, _) => d.field_type = "datetime".into(),
            DataType::Date32 | DataType::Date64 => d.field_type = "date".into(),
            DataType::List(item) | DataType::LargeList(item) => {
                d.field_type = "array".into();
                let mut it = FieldDescriptor::from_arrow(item);
                it.name = String::new();
                d.items = Some(Box::new(it));
            }
            DataType::Struct(fields) => {
                d.field_type = "object".into();
                d.fields = Some(fields.iter().map(|f| FieldDescriptor::from_arrow(f)).collect());
            }
            _ => d.field_type = "any".into(),
        }
        d
    }
}

/// Renders an Arrow type the way the cases and reports write it (`Int64`, `List<Utf8>`,
/// `Struct<a: Int64, b: Utf8>`, `Timestamp(Microsecond, "UTC")`).
pub fn type_name(dt: &DataType) -> String {
    match dt {
        DataType::List(f) | DataType::LargeList(f) => format!("List<{}>", type_name(f.data_type())),
        DataType::Struct(fields) => format!(
            "Struct<{}>",
            fields.iter().map(|f| format!("{}: {}", f.name(), type_name(f.data_type()))).collect::<Vec<_>>().join(", ")
        ),
        DataType::Timestamp(unit, Some(tz)) => format!("Timestamp({unit:?}, \"{tz}\")"),
        DataType::Dictionary(k, v) => format!("Dictionary<{}, {}>", type_name(k), type_name(v)),
        other => format!("{other}"),
    }
}

/// [`type_name`] with what it leaves out: the names and nullability of list items and struct
/// members, and large lists told from lists (`List<item: Utf8>`, `List<element: Utf8 not
/// null>`); for messages about two types whose [`type_name`]s are the same.
pub fn type_detail(dt: &DataType) -> String {
    let field = |f: &arrow::datatypes::Field| {
        format!("{}: {}{}", f.name(), type_detail(f.data_type()), if f.is_nullable() { "" } else { " not null" })
    };
    match dt {
        DataType::List(f) => format!("List<{}>", field(f)),
        DataType::LargeList(f) => format!("LargeList<{}>", field(f)),
        DataType::Struct(fields) => {
            format!("Struct<{}>", fields.iter().map(|f| field(f)).collect::<Vec<_>>().join(", "))
        }
        DataType::Dictionary(k, v) => format!("Dictionary<{}, {}>", type_detail(k), type_detail(v)),
        other => type_name(other),
    }
}

/// `want` with each timestamp that `have` stores in a finer unit (nanoseconds against
/// microseconds) given `have`'s unit, down lists (items) and structs (members by name); the
/// declared time zone stays. Other types are `want`'s.
pub fn finer_time_units(want: &DataType, have: &DataType) -> DataType {
    use arrow::datatypes::TimeUnit;
    fn rank(u: &TimeUnit) -> u8 {
        match u {
            TimeUnit::Second => 0,
            TimeUnit::Millisecond => 1,
            TimeUnit::Microsecond => 2,
            TimeUnit::Nanosecond => 3,
        }
    }
    match (want, have) {
        (DataType::Timestamp(w, tz), DataType::Timestamp(h, _)) if rank(h) > rank(w) => {
            DataType::Timestamp(*h, tz.clone())
        }
        (
            DataType::List(w),
            DataType::List(h) | DataType::LargeList(h) | DataType::FixedSizeList(h, _) | DataType::ListView(h),
        ) => {
            DataType::List(Arc::new(w.as_ref().clone().with_data_type(finer_time_units(w.data_type(), h.data_type()))))
        }
        (DataType::Struct(ws), DataType::Struct(hs)) => DataType::Struct(
            ws.iter()
                .map(|w| match hs.iter().find(|h| h.name() == w.name()) {
                    Some(h) => {
                        Arc::new(w.as_ref().clone().with_data_type(finer_time_units(w.data_type(), h.data_type())))
                    }
                    None => w.clone(),
                })
                .collect::<arrow::datatypes::Fields>(),
        ),
        _ => want.clone(),
    }
}

/// Whether `dt`, or a type inside it (list items, struct members, map entries, at any depth),
/// is one that `is` picks.
pub fn type_contains(dt: &DataType, is: &dyn Fn(&DataType) -> bool) -> bool {
    is(dt)
        || match dt {
            DataType::List(f)
            | DataType::LargeList(f)
            | DataType::FixedSizeList(f, _)
            | DataType::ListView(f)
            | DataType::LargeListView(f)
            | DataType::Map(f, _) => type_contains(f.data_type(), is),
            DataType::Struct(fs) => fs.iter().any(|f| type_contains(f.data_type(), is)),
            _ => false,
        }
}

/// What makes a struct's members unstorable, said of the struct: two members of one name, or
/// one with an empty name (Parquet readers, `datasets` and Frictionless schemas cannot tell
/// such members apart). Nested structs are left to their own check.
pub fn struct_member_problem(fs: &Fields) -> Option<String> {
    let mut seen = std::collections::BTreeSet::new();
    for f in fs {
        if f.name().is_empty() {
            return Some("holds a struct with a member of empty name".into());
        }
        if !seen.insert(f.name()) {
            return Some(format!("holds a struct with two members named `{}`", f.name()));
        }
    }
    None
}

/// The first struct inside `dt` (in lists too) whose members [`struct_member_problem`]
/// refuses, with its problem.
pub fn nested_member_problem(dt: &DataType) -> Option<String> {
    match dt {
        DataType::Struct(fs) => {
            struct_member_problem(fs).or_else(|| fs.iter().find_map(|f| nested_member_problem(f.data_type())))
        }
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::ListView(f)
        | DataType::LargeListView(f) => nested_member_problem(f.data_type()),
        _ => None,
    }
}

/// The canonical Arrow type runpack stores for a query result type.
pub fn canonical(dt: &DataType) -> std::result::Result<DataType, String> {
    Ok(match dt {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
        DataType::Dictionary(_, v)
            if matches!(v.as_ref(), DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) =>
        {
            DataType::Utf8
        }
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => DataType::Int64,
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 => DataType::Int64,
        DataType::UInt64 => DataType::UInt64,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => DataType::Float64,
        DataType::Boolean => DataType::Boolean,
        DataType::Timestamp(_, _) => DataType::Timestamp(TimeUnit::Microsecond, Some(crate::core::schema::UTC.into())),
        DataType::Date32 | DataType::Date64 => DataType::Date32,
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::ListView(f)
        | DataType::LargeListView(f) => DataType::List(Arc::new(Field::new("item", canonical(f.data_type())?, true))),
        DataType::Struct(fs) => {
            if let Some(m) = struct_member_problem(fs) {
                return Err(format!("{m}; name its members apart in the SQL (named_struct('a', …, 'b', …))"));
            }
            DataType::Struct(Fields::from(
                fs.iter()
                    .map(|f| Ok(Field::new(f.name(), canonical(f.data_type())?, true)))
                    .collect::<std::result::Result<Vec<_>, String>>()?,
            ))
        }
        // integer arithmetic on unsigned values gives scale-0 decimals; values that do not fit
        // Int64 fail the conversion rather than wrap
        DataType::Decimal128(_, 0) | DataType::Decimal256(_, 0) => DataType::Int64,
        DataType::Null => return Err("is NULL in every row, so it has no type; CAST it in the SQL".into()),
        other => return Err(format!("has type {other}, which runpack does not store; CAST it in the SQL")),
    })
}

/// Converts `a` to `to` without losing information: a number, time or boolean must convert
/// back to itself (see [`conform_each`]), text must convert at all.
///
/// Errors: the first value that does not fit, or the cast's message.
pub fn conform(a: &ArrayRef, to: &DataType) -> std::result::Result<ArrayRef, String> {
    if a.data_type() == to {
        return Ok(a.clone());
    }
    if *a.data_type() == DataType::Null {
        return Ok(new_null_array(to, a.len()));
    }
    let strict = CastOptions { safe: false, ..Default::default() };
    match to {
        DataType::List(item) => {
            let as_list = match a.data_type() {
                DataType::List(_) => a.clone(),
                other => {
                    let inner = match other {
                        DataType::LargeList(f)
                        | DataType::FixedSizeList(f, _)
                        | DataType::ListView(f)
                        | DataType::LargeListView(f) => f.clone(),
                        _ => return Err(format!("cannot store {} as {}", type_name(other), type_name(to))),
                    };
                    cast_with_options(a, &DataType::List(inner), &strict).map_err(|e| e.to_string())?
                }
            };
            let l = as_list.as_list::<i32>();
            let values = conform(l.values(), item.data_type())?;
            Ok(Arc::new(ListArray::new(item.clone(), l.offsets().clone(), values, l.nulls().cloned())))
        }
        DataType::Struct(fields) => {
            let s =
                a.as_struct_opt().ok_or_else(|| format!("cannot store {} as a struct", type_name(a.data_type())))?;
            let mut children = Vec::new();
            for f in fields {
                let child = match s.column_by_name(f.name()) {
                    Some(c) => conform(c, f.data_type())?,
                    None => new_null_array(f.data_type(), s.len()),
                };
                children.push(child);
            }
            Ok(Arc::new(StructArray::new(fields.clone(), children, s.nulls().cloned())))
        }
        // a number, time or boolean must convert back to itself: no integer above 2^53 rounded
        // by a float, no fraction cut by an integer, no nanoseconds cut to microseconds; text
        // read as a float must keep its number (`"1e-400"` is not 0)
        _ if converts_back(a.data_type()) && !to.is_nested() || is_text(a.data_type()) && to.is_floating() => {
            let (out, lost) = conform_each(a, to)?;
            match lost.iter().position(|&l| l) {
                Some(r) => Err(format!(
                    "value {} cannot be stored as {} without changing it",
                    arrow::util::display::array_value_to_string(a, r).unwrap_or_default(),
                    type_name(to)
                )),
                None => Ok(out),
            }
        }
        _ => cast_with_options(a, to, &strict).map_err(|e| e.to_string()),
    }
}

/// Whether `dt` is text, in any of Arrow's string layouts.
fn is_text(dt: &DataType) -> bool {
    matches!(dt, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// `a` as text of the Utf8 layout, when it is text.
fn as_text(a: &ArrayRef) -> Option<ArrayRef> {
    match a.data_type() {
        DataType::Utf8 => Some(a.clone()),
        dt if is_text(dt) => cast_with_options(a, &DataType::Utf8, &Default::default()).ok(),
        _ => None,
    }
}

/// Types whose values convert back to themselves when a conversion lost nothing: numbers,
/// times, booleans, and lists and structs of them.
fn converts_back(dt: &DataType) -> bool {
    match dt {
        DataType::List(f) | DataType::LargeList(f) => converts_back(f.data_type()),
        DataType::Struct(fs) => fs.iter().all(|f| converts_back(f.data_type())),
        other => other.is_numeric() || other.is_temporal() || *other == DataType::Boolean,
    }
}

/// Converts `a` to `to` value by value, for when [`conform`] refused the column: the converted
/// column, with null where a value was lost, and for each row whether its value was lost or
/// changed. A value is changed when it does not convert back to itself: an integer above
/// 2^53 rounded by a float, a fraction cut by an integer, nanoseconds cut to microseconds, also
/// inside lists and structs. Text is not compared back (`"1.0"` read as the number 1 is the
/// conversion asked for), so a text value counts only when it does not convert at all.
///
/// Errors: the cast's, when Arrow cannot convert the type at all.
pub fn conform_each(a: &ArrayRef, to: &DataType) -> std::result::Result<(ArrayRef, Vec<bool>), String> {
    // a struct or a list member by member: a struct of text beside numbers does not convert
    // back as a whole, and its numbers must be compared all the same
    if let Some((out, lost)) = nested_each(a, to)? {
        return null_where_lost(out, lost);
    }
    let safe = CastOptions { safe: true, ..Default::default() };
    let out = cast_with_options(a, to, &safe).map_err(|e| e.to_string())?;
    let back = if converts_back(a.data_type()) { cast_with_options(&out, a.data_type(), &safe).ok() } else { None };
    let as_f64 = |x: &ArrayRef| cast_with_options(x, &DataType::Float64, &safe).ok();
    let changed: Box<dyn Fn(usize) -> bool> = match &back {
        None => Box::new(|_| false),
        // floats by value: -0.0 stored as the integer 0 is not a change
        Some(b) if a.data_type().is_floating() => match (as_f64(a), as_f64(b)) {
            (Some(x), Some(y)) => Box::new(move |r| {
                let (x, y) = (
                    x.as_primitive::<arrow::datatypes::Float64Type>(),
                    y.as_primitive::<arrow::datatypes::Float64Type>(),
                );
                // NaN widened and narrowed back is NaN: no change
                let (u, v) = (x.value(r), y.value(r));
                y.is_null(r) || !(u == v || (u.is_nan() && v.is_nan()))
            }),
            _ => Box::new(|_| false),
        },
        Some(b) => match arrow::compute::kernels::cmp::distinct(b, a) {
            Ok(d) => Box::new(move |r| d.value(r)),
            // lists and structs, which `distinct` does not compare: row by row
            Err(_) => Box::new(move |r| b.slice(r, 1).to_data() != a.slice(r, 1).to_data()),
        },
    };
    // text read as a float: a number below or beyond the float's range is changed by it (the
    // casts only for text, not for every column converted)
    let text_float = is_text(a.data_type()) && to.is_floating();
    let text_changed: Box<dyn Fn(usize) -> bool> = match text_float.then(|| (as_text(a), as_f64(&out))) {
        Some((Some(t), Some(f))) => Box::new(move |r| {
            let f = f.as_primitive::<arrow::datatypes::Float64Type>();
            f.is_valid(r) && crate::core::values::float_text_changed(t.as_string::<i32>().value(r).trim(), f.value(r))
        }),
        _ => Box::new(|_| false),
    };
    let lost: Vec<bool> =
        (0..a.len()).map(|r| a.is_valid(r) && (out.is_null(r) || changed(r) || text_changed(r))).collect();
    null_where_lost(out, lost)
}

/// `out` with null in each row whose value was `lost`, and `lost`.
fn null_where_lost(out: ArrayRef, lost: Vec<bool>) -> std::result::Result<(ArrayRef, Vec<bool>), String> {
    let out = if lost.iter().any(|&x| x) {
        arrow::compute::nullif(&out, &arrow::array::BooleanArray::from(lost.clone())).map_err(|e| e.to_string())?
    } else {
        out
    };
    Ok((out, lost))
}

/// [`conform_each`] of a struct into a struct (each member the target names, by name; a member
/// `a` lacks is null) or of a list into a list (its values, then each row's): the converted
/// column, and each row whose value lost or changed a member or an item. `None` for other
/// types. A row that is null itself loses nothing.
fn nested_each(a: &ArrayRef, to: &DataType) -> std::result::Result<Option<(ArrayRef, Vec<bool>)>, String> {
    match (a.data_type(), to) {
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let s = a.as_struct();
            let mut lost = vec![false; a.len()];
            let mut children = Vec::with_capacity(fields.len());
            for f in fields {
                let child = match s.column_by_name(f.name()) {
                    Some(c) => {
                        let (out, changed) = conform_each(c, f.data_type())?;
                        for (r, l) in lost.iter_mut().enumerate() {
                            *l |= changed[r] && s.is_valid(r);
                        }
                        out
                    }
                    None => new_null_array(f.data_type(), s.len()),
                };
                children.push(child);
            }
            let out = StructArray::try_new(fields.clone(), children, s.nulls().cloned()).map_err(|e| e.to_string())?;
            Ok(Some((Arc::new(out), lost)))
        }
        (DataType::List(_), DataType::List(item)) => {
            let l = a.as_list::<i32>();
            let (values, changed) = conform_each(l.values(), item.data_type())?;
            let offsets = l.offsets();
            let lost = (0..a.len())
                .map(|r| {
                    let (from, until) = (offsets[r] as usize, offsets[r + 1] as usize);
                    a.is_valid(r) && changed[from..until].iter().any(|&c| c)
                })
                .collect();
            let out = ListArray::try_new(item.clone(), offsets.clone(), values, l.nulls().cloned())
                .map_err(|e| e.to_string())?;
            Ok(Some((Arc::new(out), lost)))
        }
        _ => Ok(None),
    }
}

/// Differences between two schemas, by field: `name: A vs B`, missing or extra fields.
pub fn schema_diff(want: &arrow::datatypes::Schema, got: &arrow::datatypes::Schema) -> Vec<String> {
    let mut out = Vec::new();
    for (i, f) in want.fields().iter().enumerate() {
        match got.field_with_name(f.name()) {
            Err(_) => out.push(format!("`{}` missing", f.name())),
            Ok(g) => {
                if g.data_type() != f.data_type() {
                    // names that read the same differ in what they leave out
                    let (want, got) = match (type_name(f.data_type()), type_name(g.data_type())) {
                        (w, h) if w == h => (type_detail(f.data_type()), type_detail(g.data_type())),
                        names => names,
                    };
                    out.push(format!("`{}`: {want} expected, {got} found", f.name()));
                } else if got.index_of(f.name()).ok() != Some(i) {
                    out.push(format!(
                        "`{}`: at position {} instead of {}",
                        f.name(),
                        got.index_of(f.name()).unwrap_or(0),
                        i
                    ));
                }
            }
        }
    }
    for g in got.fields() {
        if want.field_with_name(g.name()).is_err() {
            out.push(format!("`{}` not expected", g.name()));
        }
    }
    out
}

/// The columns a table's rows are ordered by: its primary key (every field when it has
/// none), then the provenance columns that `has` and the key does not name.
pub fn row_order(schema: &TableSchema, has: impl Fn(&str) -> bool) -> Vec<String> {
    let mut cols = if schema.primary_key.is_empty() {
        schema.fields.iter().map(|f| f.name.clone()).collect()
    } else {
        schema.primary_key.clone()
    };
    for extra in PROVENANCE {
        if has(extra) && !cols.iter().any(|c| c == extra) {
            cols.push(extra.to_string());
        }
    }
    cols
}

/// The provenance columns a build adds to every source row; they break ties of the key.
pub const PROVENANCE: [&str; 2] = ["_source_file", "_source_line"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_come_first_and_a_cycle_is_left_out() {
        use std::collections::BTreeSet;
        let deps =
            |d: &[&[usize]]| d.iter().map(|x| x.iter().copied().collect::<BTreeSet<usize>>()).collect::<Vec<_>>();
        assert_eq!(dependency_order(&deps(&[&[1], &[], &[0]])), (vec![1, 0, 2], vec![]));
        assert_eq!(dependency_order(&deps(&[&[], &[2], &[1], &[1]])), (vec![0], vec![1, 2, 3]));
    }

    #[test]
    fn a_schema_problem_is_placed_by_its_json_pointer() {
        let at = |json: &str| serde_json::from_str::<TableSchema>(json).unwrap().check_at().unwrap_err();
        let (p, m) = at(r#"{"fields":[{"name":"step","type":"integer"}],"primaryKey":["stepp"]}"#);
        assert_eq!(p, "/primaryKey/0");
        assert!(m.contains("primaryKey names `stepp`"), "{m}");
        let (p, m) = at(r#"{"fields":[{"name":"a","type":"string"},{"name":"b","type":"integr"}]}"#);
        assert_eq!(p, "/fields/1");
        assert!(m.contains("field `b`: type `integr` is not supported"), "{m}");
        let (p, _) = at(r#"{"fields":[{"name":"a","type":"string"},{"name":"a","type":"string"}]}"#);
        assert_eq!(p, "/fields/1/name");
        let (p, m) = at(
            r#"{"fields":[{"name":"a","type":"string"}],"foreignKeys":[{"fields":["b"],"reference":{"resource":"t","fields":["x"]}}]}"#,
        );
        assert_eq!(p, "/foreignKeys/0/fields/0");
        assert!(m.contains("foreignKeys names `b`, which is not a field"), "{m}");
    }

    #[test]
    fn referenced_columns_are_gathered_once_per_table() {
        let child: TableSchema = serde_json::from_str(
            r#"{"fields":[{"name":"a","type":"integer"},{"name":"p","type":"integer"}],
                "foreignKeys":[{"fields":["p"],"reference":{"resource":"parent","fields":["id"]}},
                               {"fields":["p"],"reference":{"resource":"parent","fields":["id"]}},
                               {"fields":["a"],"reference":{"resource":"","fields":["p"]}}]}"#,
        )
        .unwrap();
        let got = referenced_columns([("child", &child)]);
        assert_eq!(got["parent"], vec![vec!["id".to_string()]]);
        assert_eq!(got["child"], vec![vec!["p".to_string()]]);
    }

    #[test]
    fn conform_each_keeps_a_float32_nan_and_finds_what_changes() {
        let a: ArrayRef = Arc::new(arrow::array::Float32Array::from(vec![0.5, f32::NAN, f32::INFINITY]));
        let (out, lost) = conform_each(&a, &DataType::Float64).unwrap();
        assert_eq!(lost, vec![false, false, false]);
        assert!(out.as_primitive::<arrow::datatypes::Float64Type>().value(1).is_nan());
        // a NaN has no integer, a fraction is cut: both lost
        let a: ArrayRef = Arc::new(arrow::array::Float64Array::from(vec![2.0, f64::NAN, 1.5]));
        let (_, lost) = conform_each(&a, &DataType::Int64).unwrap();
        assert_eq!(lost, vec![false, true, true]);
    }

    #[test]
    fn conform_each_compares_the_numbers_of_a_struct_that_holds_text_and_of_a_list_of_them() {
        let acc: ArrayRef = Arc::new(arrow::array::Float64Array::from(vec![0.75, f64::NAN, 2.0, 1.0]));
        let name: ArrayRef = Arc::new(arrow::array::StringArray::from(vec!["a", "b", "c", "d"]));
        let from =
            Fields::from(vec![Field::new("acc", DataType::Float64, true), Field::new("name", DataType::Utf8, true)]);
        let a: ArrayRef = Arc::new(StructArray::new(from, vec![acc, name], None));
        let to = Fields::from(vec![Field::new("acc", DataType::Int64, true), Field::new("name", DataType::Utf8, true)]);
        let (out, lost) = conform_each(&a, &DataType::Struct(to.clone())).unwrap();
        assert_eq!(lost, vec![true, true, false, false]);
        assert!(out.is_null(0) && out.is_null(1) && out.is_valid(2));
        assert_eq!(out.as_struct().column(0).as_primitive::<arrow::datatypes::Int64Type>().value(2), 2);
        assert!(conform(&a, &DataType::Struct(to.clone())).is_err());
        // a list of such structs: the row of a changed item
        let item = Arc::new(Field::new("item", a.data_type().clone(), true));
        let offsets = arrow::buffer::OffsetBuffer::new(vec![0, 1, 3, 4].into());
        let list: ArrayRef = Arc::new(ListArray::new(item, offsets, a, None));
        let to_list = DataType::List(Arc::new(Field::new("item", DataType::Struct(to), true)));
        let (out, lost) = conform_each(&list, &to_list).unwrap();
        assert_eq!(lost, vec![true, true, false]);
        assert!(out.is_null(0) && out.is_valid(2));
    }

    #[test]
    fn text_read_as_a_float_is_held_to_its_number() {
        // below and beyond the float's range the value would change; words are what they name
        let a: ArrayRef = Arc::new(arrow::array::StringArray::from(vec![
            "0.5",
            "1e-400",
            "1e400",
            "inf",
            "NaN",
            "0e-400",
            "-2",
            "9007199254740993",
            "9007199254740992",
        ]));
        let (out, lost) = conform_each(&a, &DataType::Float64).unwrap();
        assert_eq!(lost, vec![false, true, true, false, false, false, false, true, false]);
        assert!(out.is_null(1) && out.is_null(2));
        let e = conform(&a, &DataType::Float64).unwrap_err();
        assert_eq!(e, "value 1e-400 cannot be stored as Float64 without changing it");
        let a: ArrayRef = Arc::new(arrow::array::StringArray::from(vec!["0.5", "1e3"]));
        assert!(conform(&a, &DataType::Float64).is_ok());
    }

    #[test]
    fn constraints_no_value_can_meet_are_schema_errors() {
        let check = |fields: &str| {
            let s: TableSchema = serde_json::from_str(&format!(r#"{{"fields":[{fields}]}}"#)).unwrap();
            s.check()
        };
        let e = check(r#"{"name":"s","type":"string","constraints":{"enum":["a",1]}}"#).unwrap_err();
        assert!(e.contains("field `s`: enum value 1 is not of the field's type `string`"), "{e}");
        let e = check(r#"{"name":"i","type":"integer","constraints":{"enum":["a","b"]}}"#).unwrap_err();
        assert!(e.contains("enum value \"a\""), "{e}");
        let e = check(r#"{"name":"x","type":"number","constraints":{"minimum":10,"maximum":1}}"#).unwrap_err();
        assert!(e.contains("minimum 10 is above maximum 1"), "{e}");
        let e = check(r#"{"name":"x","type":"string","constraints":{"minLength":5,"maxLength":2}}"#).unwrap_err();
        assert!(e.contains("minLength 5 is above maxLength 2"), "{e}");
        let e = check(r#"{"name":"x","type":"integer","constraints":{"enum":[]}}"#).unwrap_err();
        assert!(e.contains("field `x`: enum lists no value"), "{e}");
        // exactly, above 2^53
        let e = check(
            r#"{"name":"x","type":"integer","constraints":{"minimum":9007199254740993,"maximum":9007199254740992}}"#,
        )
        .unwrap_err();
        assert!(e.contains("minimum 9007199254740993 is above maximum 9007199254740992"), "{e}");
        let e = check(r#"{"name":"v","type":"string","items":{"type":"string","constraints":{"pattern":"x"}}}"#)
            .unwrap_err();
        assert!(
            e.contains("field `v`: `items` describes the elements of an `array` field, not of a `string` one"),
            "{e}"
        );
        let e = check(r#"{"name":"v","type":"integer","fields":[{"name":"a","type":"integer"}]}"#).unwrap_err();
        assert!(e.contains("`fields` describes the members of an `object` field"), "{e}");
        // a format runpack does not honour, also on items
        let e = check(r#"{"name":"m","type":"string","format":"email"}"#).unwrap_err();
        assert!(e.contains("field `m`: format `email` on a `string` field is not checked nor used"), "{e}");
        let e = check(r#"{"name":"d","type":"array","items":{"type":"date","format":"%d/%m/%Y"}}"#).unwrap_err();
        assert!(e.contains("field `d`: format `%d/%m/%Y` on a `date` field"), "{e}");
        assert!(
            check(r#"{"name":"u","type":"integer","format":"uint64"},{"name":"s","type":"string","format":"default"}"#)
                .is_ok()
        );
    }

    #[test]
    fn keys_are_scalars_and_a_reference_to_the_same_table_is_refused() {
        let check = |json: &str| serde_json::from_str::<TableSchema>(json).unwrap().check();
        let e = check(r#"{"fields":[{"name":"id","type":"string"},{"name":"tags","type":"array","items":{"type":"string"}}],"primaryKey":["id","tags"]}"#).unwrap_err();
        assert!(e.contains("primaryKey names `tags`, of type `array`: a key is made of scalar values"), "{e}");
        let e = check(r#"{"fields":[{"name":"o","type":"object","constraints":{"unique":true}}]}"#).unwrap_err();
        assert!(e.contains("field `o`: `unique` on a field of type `object`"), "{e}");
        let e = check(r#"{"fields":[{"name":"id","type":"string"},{"name":"parent","type":"string"}],"foreignKeys":[{"fields":"parent","reference":{"resource":"","fields":"id"}}]}"#).unwrap_err();
        assert!(e.contains("references its own table"), "{e}");
        let s: TableSchema = serde_json::from_str(
            r#"{"fields":[{"name":"a","type":"integer"}],"foreignKeys":[{"fields":[],"reference":{"resource":"p","fields":[]}}]}"#,
        )
        .unwrap();
        assert_eq!(
            s.check_at().unwrap_err(),
            ("/foreignKeys/0/fields".into(), "a foreign key names no field: list the fields it is made of".into())
        );
        let e = check(r#"{"fields":[{"name":"v","type":"object","fields":[{"name":"a","type":"integer"},{"name":"a","type":"integer"}]}]}"#).unwrap_err();
        assert!(e.contains("field `v`: member `a` of the object's `fields` is declared twice"), "{e}");
        let e = check(r#"{"fields":[{"name":"v","type":"object","fields":[]}]}"#).unwrap_err();
        assert!(e.contains("field `v`: an `object` with `fields` needs at least one field"), "{e}");
    }

    #[test]
    fn constraints_runpack_would_not_check_are_schema_errors() {
        let check = |fields: &str| {
            let s: TableSchema = serde_json::from_str(&format!(r#"{{"fields":[{fields}]}}"#)).unwrap();
            s.check()
        };
        let e = check(r#"{"name":"i","type":"integer","constraints":{"minimum":0.5}}"#).unwrap_err();
        assert!(e.contains("field `i`: minimum 0.5 is not an integer, as an `integer` field's minimum must be"), "{e}");
        let e = check(r#"{"name":"i","type":"integer","constraints":{"minimum":0,"maximum":999.5}}"#).unwrap_err();
        assert!(e.contains("maximum 999.5 is not an integer"), "{e}");
        assert!(check(r#"{"name":"i","type":"integer","constraints":{"minimum":0.0,"maximum":1e3}}"#).is_ok());
        assert!(check(r#"{"name":"x","type":"number","constraints":{"minimum":0.5}}"#).is_ok());
        let e = check(r#"{"name":"s","type":"string","constraints":{"minimum":1}}"#).unwrap_err();
        assert!(e.contains("field `s`: minimum/maximum applies to `integer` and `number` fields, not `string`"), "{e}");
        for (pattern, construct) in [
            ("(?i)abc", "an inline flag at character 1 (\"(?i)\")"),
            ("a(?x:b)", "an inline flag at character 4 (\"x\")"),
            ("a(?i-U:b)", "an inline flag at character 6 (\"U\")"),
            (r"\pL+", "a Unicode class at character 1"),
            (r"x[\p{Greek}]", "a Unicode class at character 3"),
            ("[[:alpha:]]+", "a POSIX class at character 2"),
            ("[a-z&&[^x]]", "a class set operation"),
            ("[a[bc]]", "a class inside a class"),
            (r"\x{41}", "a braced hex escape"),
            ("(?<n>a)", "a `(?<name>…)` group"),
            (r"a\z", "an assertion at character 2"),
            (r"\<a", "an assertion at character 1"),
            ("a**", "a repetition of a repetition at character 1"),
            ("x{2}{3}", "a repetition of a repetition"),
            ("a{ 2 }", "a counted repetition with blanks at character 2"),
            ("(?P<a.b>x)", "a group name that is not an identifier"),
        ] {
            let json = serde_json::json!({"name": "s", "type": "string", "constraints": {"pattern": pattern}});
            let e = check(&json.to_string()).unwrap_err();
            assert!(e.starts_with(&format!("field `s`: pattern {pattern:?}: {construct}")), "{pattern}: {e}");
            assert!(e.contains("Python's `re`"), "{e}");
        }
        // valid only once wrapped in ^(?:…)$, which would make it "starts with a or ends with b"
        let e = check(r#"{"name":"s","type":"string","constraints":{"pattern":"a)|(b"}}"#).unwrap_err();
        assert!(e.starts_with("field `s`: invalid pattern:"), "{e}");
        // items are checked alike
        let e = check(r#"{"name":"v","type":"array","items":{"type":"string","constraints":{"pattern":"(?i)a"}}}"#)
            .unwrap_err();
        assert!(e.starts_with("field `v`: items: pattern \"(?i)a\": an inline flag"), "{e}");
        // the shared syntax passes: classes, escapes, anchors, groups, lazy and bounded repeats
        for pattern in [
            r"tinker://[^/]+/(weights|sampler_weights)/\d{3,}",
            r"(?P<run>[\w-]+):train:\d+",
            r"(?:a|b)*?\.\x41\u00e9\t[\s\-]{0,2}",
            r"\bword\B.^$\A",
            r"run-(?i:[a-f]+)(?-s:.)(?m:x)",
        ] {
            let json = serde_json::json!({"name": "s", "type": "string", "constraints": {"pattern": pattern}});
            check(&json.to_string()).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        }
        let e = check(r#"{"name":"run id ","type":"string"}"#).unwrap_err();
        assert!(e.starts_with("column \"run id \" begins or ends with a blank"), "{e}");
        assert!(e.ends_with("rename it in the table's SQL (`… AS \"run id\"`)"), "{e}");
        assert!(check(r#"{"name":"a\u001f","type":"string"}"#).unwrap_err().contains("begins or ends with a blank"));
        let e = check(r#"{"name":"a\u0000b","type":"string"}"#).unwrap_err();
        assert!(e.starts_with("column \"a\\0b\" holds a NUL character (U+0000)"), "{e}");
        assert!(e.ends_with("(`… AS \"a_b\"`)"), "{e}");
        let e = check(r#"{"name":"n","type":"number","constraints":{"pattern":"a+"}}"#).unwrap_err();
        assert!(e.contains("pattern applies to `string` fields, not `number`"), "{e}");
        let e = check(r#"{"name":"b","type":"boolean","constraints":{"maxLength":3}}"#).unwrap_err();
        assert!(e.contains("minLength/maxLength applies to `string` and `array` fields"), "{e}");
        assert!(check(r#"{"name":"l","type":"array","items":{"type":"number","constraints":{"minimum":0}}}"#).is_ok());
        let e =
            check(r#"{"name":"l","type":"array","items":{"type":"string","constraints":{"minimum":0}}}"#).unwrap_err();
        assert!(e.contains("field `l`: items: minimum/maximum applies to"), "{e}");
        let e = check(r#"{"name":"l","type":"array","items":{"type":"string","constraints":{"unique":true}}}"#)
            .unwrap_err();
        assert!(e.contains("field `l`: items: unique applies to a whole column"), "{e}");
        let e = check(
            r#"{"name":"l","type":"array","items":{"type":"array","items":{"type":"string","constraints":{"required":true}}}}"#,
        )
        .unwrap_err();
        assert!(
            e.contains("field `l`: items: items: constraints are checked on top-level fields and the items"),
            "{e}"
        );
        let e = check(
            r#"{"name":"o","type":"object","fields":[{"name":"a","type":"array","items":{"type":"string","constraints":{"required":true}}}]}"#,
        )
        .unwrap_err();
        assert!(e.contains("field `o`: fields: `a`: constraints are checked"), "{e}");
        assert!(
            check(r#"{"name":"l","type":"array","items":{"type":"number"},"constraints":{"minLength":1}}"#).is_ok()
        );
        assert!(
            check(r#"{"name":"x","type":"number","constraints":{"enum":[1,2.5],"minimum":0,"maximum":3}}"#).is_ok()
        );
    }

    #[test]
    fn a_schema_json_error_says_its_position_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        std::fs::write(&p, "{\"fields\": [}").unwrap();
        let e = TableSchema::load(&p).unwrap_err().to_string();
        assert!(e.contains("s.json:1:13:"), "{e}");
        assert!(!e.contains("at line 1 column"), "{e}");
    }

    #[test]
    fn maps_types_and_keys() {
        let s: TableSchema = serde_json::from_str(
            r#"{"fields":[{"name":"id","type":"string","constraints":{"required":true}},
                {"name":"v","type":"array","items":{"type":"number"}},
                {"name":"m","type":"object","fields":[{"name":"a","type":"integer","format":"uint64"}]},
                {"name":"t","type":"datetime"}],
                "primaryKey":"id"}"#,
        )
        .unwrap();
        s.check().unwrap();
        let a = s.arrow_schema();
        assert_eq!(type_name(a.field(1).data_type()), "List<Float64>");
        assert_eq!(type_name(a.field(2).data_type()), "Struct<a: UInt64>");
        assert_eq!(type_name(a.field(3).data_type()), "Timestamp(Microsecond, \"UTC\")");
        assert_eq!(s.primary_key, vec!["id"]);
        let back = TableSchema::from_arrow(&a);
        assert_eq!(back.fields[1].items.as_ref().unwrap().field_type, "number");
    }

    #[test]
    fn rejects_unknown_keys_and_types() {
        let e = serde_json::from_str::<TableSchema>(r#"{"fields":[],"primarykey":"x"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `primarykey`"), "{e}");
        let s: TableSchema = serde_json::from_str(r#"{"fields":[{"name":"a","type":"geopoint"}]}"#).unwrap();
        assert!(s.check().unwrap_err().contains("geopoint"));
    }
}
