//! `croissant.json`: the release as Croissant 1.1 metadata (JSON-LD), beside `datapackage.json`.
//!
//! In: the manifest (files with their SHA-256, tables), the pipeline's `[card]` (name,
//! description, licence, citation, `[card.rai]`) and the Parquet files' footers. Out: one JSON-LD
//! document, the same bytes for the same release (keys in a fixed order, no clock but the
//! release's `created_at`).
//!
//! - The dataset: `name` (the release's), `alternateName` (the card's `pretty_name`),
//!   `description`, `license`, `citeAs`, `version`, `datePublished` (when the build had
//!   `SOURCE_DATE_EPOCH`), `keywords` (the card's tags) and the `rai:` properties of
//!   `[card.rai]`.
//! - `distribution`: a `cr:FileObject` per data file (Parquet, and JSON Lines copies), with its
//!   `contentUrl` (the path in the release), `encodingFormat` and `sha256`; a `cr:FileSet` per
//!   table held in several Parquet files (shards, splits), listing them in `includes`.
//! - `recordSet`: a `cr:RecordSet` per table, read from its Parquet files; a `cr:Field` per
//!   column typed from the Parquet schema (`sc:Text`, `sc:Integer`, `sc:Float`, `sc:Boolean`,
//!   `sc:Date`, `sc:DateTime`), lists as `isArray`, structs as `subField`s; `key` the table's
//!   primary key.

use std::path::Path;

use arrow::datatypes::{DataType, Field};
use serde_json::{Map, Value, json};

use crate::core::error::{Error, Result};
use crate::core::spec::CardDef;
use crate::stages::release::{Manifest, TableEntry};

/// The Croissant version the document conforms to.
pub const CROISSANT_VERSION: &str = "http://mlcommons.org/croissant/1.1";

/// The JSON-LD `@context` of Croissant 1.1, as the Croissant reference library writes it.
fn context() -> Value {
    json!({
        "@language": "en",
        "@vocab": "https://schema.org/",
        "arrayShape": "cr:arrayShape",
        "citeAs": "cr:citeAs",
        "column": "cr:column",
        "conformsTo": "dct:conformsTo",
        "containedIn": "cr:containedIn",
        "cr": "http://mlcommons.org/croissant/",
        "rai": "http://mlcommons.org/croissant/RAI/",
        "data": { "@id": "cr:data", "@type": "@json" },
        "dataType": { "@id": "cr:dataType", "@type": "@vocab" },
        "dct": "http://purl.org/dc/terms/",
        "equivalentProperty": "cr:equivalentProperty",
        "examples": { "@id": "cr:examples", "@type": "@json" },
        "extract": "cr:extract",
        "field": "cr:field",
        "fileProperty": "cr:fileProperty",
        "fileObject": "cr:fileObject",
        "fileSet": "cr:fileSet",
        "format": "cr:format",
        "includes": "cr:includes",
        "isArray": "cr:isArray",
        "isLiveDataset": "cr:isLiveDataset",
        "jsonPath": "cr:jsonPath",
        "key": "cr:key",
        "md5": "cr:md5",
        "parentField": "cr:parentField",
        "path": "cr:path",
        "recordSet": "cr:recordSet",
        "references": "cr:references",
        "regex": "cr:regex",
        "repeated": "cr:repeated",
        "replace": "cr:replace",
        "samplingRate": "cr:samplingRate",
        "sc": "https://schema.org/",
        "separator": "cr:separator",
        "source": "cr:source",
        "subField": "cr:subField",
        "transform": "cr:transform"
    })
}

/// `croissant.json` of the release in `root`, whose manifest lists every data file (Parquet
/// and JSON Lines), with a final newline.
///
/// Errors: [`Error::Io`] or [`Error::Format`] when a table's Parquet footer cannot be read.
pub fn croissant(manifest: &Manifest, card: &CardDef, root: &Path) -> Result<String> {
    let mut doc = Map::new();
    doc.insert("@context".into(), context());
    doc.insert("@type".into(), "sc:Dataset".into());
    doc.insert("name".into(), manifest.name.clone().into());
    if let Some(p) = &card.pretty_name {
        doc.insert("alternateName".into(), p.clone().into());
    }
    let description = card
        .description
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(String::from)
        .unwrap_or_else(|| format!("Release {} {} of {}.", manifest.name, manifest.version, manifest.name));
    doc.insert("description".into(), description.into());
    doc.insert("conformsTo".into(), CROISSANT_VERSION.into());
    if let Some(c) = card.citation.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
        doc.insert("citeAs".into(), c.into());
    }
    if let Some(l) = &card.license {
        doc.insert("license".into(), l.clone().into());
    }
    doc.insert("version".into(), manifest.version.clone().into());
    if let Some(t) = &manifest.created_at {
        doc.insert("datePublished".into(), t.clone().into());
    }
    if !card.tags.is_empty() {
        doc.insert("keywords".into(), card.tags.clone().into());
    }
    for (k, v) in card.rai.properties() {
        doc.insert(k.into(), v.trim().into());
    }

    let mut distribution = Vec::new();
    for f in manifest.files.iter().filter(|f| f.kind == "parquet" || f.kind == "jsonl") {
        distribution.push(json!({
            "@type": "cr:FileObject",
            "@id": f.path,
            "name": f.path,
            "contentUrl": f.path,
            "encodingFormat": if f.kind == "parquet" { "application/x-parquet" } else { "application/jsonlines" },
            "sha256": f.sha256,
        }));
    }
    let mut record_sets = Vec::new();
    for t in &manifest.tables {
        let files: Vec<&String> = t.splits.iter().flat_map(|s| s.files.iter()).collect();
        let Some(first) = files.first() else { continue };
        // one file: the record set reads it; several: a file set lists them
        let source = if files.len() == 1 {
            json!({ "fileObject": { "@id": first } })
        } else {
            let id = format!("{}-parquet-files", t.name);
            let mut includes: Vec<&String> = files.clone();
            includes.sort();
            distribution.push(json!({
                "@type": "cr:FileSet",
                "@id": id,
                "name": id,
                "encodingFormat": "application/x-parquet",
                "includes": includes,
            }));
            json!({ "fileSet": { "@id": id } })
        };
        record_sets.push(record_set(t, &root.join(first.as_str()), &source)?);
    }
    doc.insert("distribution".into(), distribution.into());
    doc.insert("recordSet".into(), record_sets.into());
    Ok(serde_json::to_string_pretty(&Value::Object(doc)).expect("JSON values serialize") + "\n")
}

/// The record set of table `t`, its fields typed from the Parquet footer of `parquet`, read
/// from `source` (a file object or file set reference).
fn record_set(t: &TableEntry, parquet: &Path, source: &Value) -> Result<Value> {
    let shown = parquet.display().to_string();
    let file = std::fs::File::open(parquet).map_err(|e| Error::io(parquet, e))?;
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| Error::format(&shown, e))?;
    let schema = builder.schema().clone();
    let mut fields = Vec::new();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    for f in schema.fields() {
        let id = format!("{}/{}", t.name, id_step(f.name(), &names));
        let described = t.schema.field(f.name()).and_then(|d| d.description.clone());
        let mut source = source.as_object().cloned().unwrap_or_default();
        source.insert("extract".into(), json!({ "column": f.name() }));
        fields.push(field(&id, f, described, &Value::Object(source), None));
    }
    let mut rs = Map::new();
    rs.insert("@type".into(), "cr:RecordSet".into());
    rs.insert("@id".into(), t.name.clone().into());
    rs.insert("name".into(), t.name.clone().into());
    if let Some(d) = t.schema.description.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
        rs.insert("description".into(), d.into());
    }
    if !t.schema.primary_key.is_empty() {
        let key: Vec<Value> = t
            .schema
            .primary_key
            .iter()
            .map(|c| json!({ "@id": format!("{}/{}", t.name, id_step(c, &names)) }))
            .collect();
        rs.insert("key".into(), if key.len() == 1 { key[0].clone() } else { key.into() });
    }
    rs.insert("field".into(), fields.into());
    Ok(Value::Object(rs))
}

/// A `cr:Field` for Arrow field `f`: typed, an array for a list, `subField`s for a struct
/// (each read by its JSON path inside the column, `path`).
fn field(id: &str, f: &Field, description: Option<String>, source: &Value, path: Option<&str>) -> Value {
    let mut out = Map::new();
    out.insert("@type".into(), "cr:Field".into());
    out.insert("@id".into(), id.into());
    out.insert("name".into(), f.name().clone().into());
    if let Some(d) = description.map(|d| d.trim().to_string()).filter(|d| !d.is_empty()) {
        out.insert("description".into(), d.into());
    }
    // a list (of lists) is an array of its innermost items, one `-1` per level
    let mut dt = f.data_type();
    let mut depth = 0;
    while let DataType::List(item) | DataType::LargeList(item) = dt {
        dt = item.data_type();
        depth += 1;
    }
    let mut source = source.as_object().cloned().unwrap_or_default();
    if let Some(p) = path {
        source.insert("transform".into(), json!({ "jsonPath": p }));
    }
    match dt {
        DataType::Struct(members) => {
            let mut subs = Vec::new();
            let names: Vec<&str> = members.iter().map(|m| m.name().as_str()).collect();
            for m in members {
                let sub_path = match path {
                    Some(p) => format!("{p}.{}", json_path_name(m.name())),
                    None => json_path_name(m.name()),
                };
                let base = Value::Object(
                    source.iter().filter(|(k, _)| *k != "transform").map(|(k, v)| (k.clone(), v.clone())).collect(),
                );
                subs.push(field(&format!("{id}/{}", id_step(m.name(), &names)), m, None, &base, Some(&sub_path)));
            }
            out.insert("subField".into(), subs.into());
        }
        other => {
            out.insert("dataType".into(), data_type(other).into());
            out.insert("source".into(), Value::Object(source));
        }
    }
    if depth > 0 {
        out.insert("isArray".into(), true.into());
        out.insert("arrayShape".into(), vec!["-1"; depth].join(",").into());
    }
    Value::Object(out)
}

/// A column's or struct member's name as a step of an `@id`: blanks made `_`, as mlcroissant
/// refuses an `@id` holding one (escaped or not); another `_` while that is the name of one
/// of `siblings` (the other names at its level), so that ids stay apart. The `name` stays as
/// it is.
fn id_step(name: &str, siblings: &[&str]) -> String {
    if !name.contains(char::is_whitespace) {
        return name.to_string();
    }
    let mut step: String = name.chars().map(|c| if c.is_whitespace() { '_' } else { c }).collect();
    while siblings.contains(&step.as_str()) {
        step.push('_');
    }
    step
}

/// A struct member's name as a step of a JSONPath (`cr:jsonPath`): as it is when it is a
/// plain name (`loss`), else quoted (`"actor/pg_loss"`, `"acc@1"`), as mlcroissant's JSONPath
/// parser reads a name holding `/`, `-`, `@`, `.` or a blank.
fn json_path_name(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain { name.to_string() } else { format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\"")) }
}

/// The Croissant data type of an Arrow type a release holds; text for a type Croissant has no
/// name for (a release's tables hold none).
fn data_type(dt: &DataType) -> &'static str {
    match dt {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Null => "sc:Text",
        DataType::Int64 | DataType::Int32 | DataType::UInt64 | DataType::UInt32 => "sc:Integer",
        DataType::Float64 | DataType::Float32 => "sc:Float",
        DataType::Boolean => "sc:Boolean",
        DataType::Date32 => "sc:Date",
        DataType::Timestamp(..) => "sc:DateTime",
        _ => "sc:Text",
    }
}
