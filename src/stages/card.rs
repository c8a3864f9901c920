//! The dataset card: `README.md` with the Hugging Face Hub's YAML metadata.
//!
//! In: the pipeline's `[card]` table, the release manifest, the build report, the results of
//! the card sections' queries, and optional extra front matter. Out: the card text, and checks
//! that the Hub and `datasets` would otherwise only run after an upload.
//!
//! Front matter (hub-docs `datasetcard.md`, `datasets` `utils/metadata.py` and `info.py`):
//! `license` (a Hub licence id), `pretty_name`, `tags`, `size_categories` (the bucket of the
//! largest table's row count: `n<1K`, `1K<n<10K`, …), `configs` (one per table, split `train`,
//! `data_files` the table's Parquet files, one `default: true`), `dataset_info` (one per table:
//! `features` from the schema, `splits[].num_examples` exact, `num_bytes` = uncompressed
//! Parquet bytes, `download_size` = Parquet file bytes, `dataset_size`). The JSON Lines copies
//! stay out of `configs`: a repository has a single loader module per config set.
//!
//! Body: summary table, one section per table (rows, key, column dictionary from the schema
//! descriptions), the pipeline's extra sections (with query results as tables), data-quality
//! counts and policies, provenance (every input with its SHA-256), and how to verify, load and
//! query. Every number is computed from the release.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::DataType;
use datafusion::prelude::SessionContext;
use yaml_serde::{Mapping, Value as Yaml};

use crate::core::error::{Error, Result};
use crate::core::report::BuildReport;
use crate::core::spec::PipelineSpec;
use crate::stages::release::Manifest;

pub mod merge;

/// Warnings a card lists, beside those of the kinds it always shows (the build prints them all).
const CARD_WARNINGS: usize = 20;

/// The kinds of warning a card shows every one of: a run's history accepted as sampled, a
/// table's repeated values, a keep rule that chose after rows were set aside (what the data
/// lacks, or where it disagrees).
const ALWAYS_SHOWN: [&str; 3] = ["wandb-sampled", "repeated-values", "kept-after-rejects"];

/// How many of a source's coerced values the card names.
const CARD_COERCIONS: usize = 3;

/// How many of the files `not_read` leaves out the card names.
const CARD_NOT_READ: usize = 10;

/// Licence ids the Hub accepts in card metadata (hub-docs `docs/hub/repositories-licenses.md`).
pub const LICENSES: &[&str] = &[
    "apache-2.0",
    "mit",
    "openrail",
    "bigscience-openrail-m",
    "creativeml-openrail-m",
    "bigscience-bloom-rail-1.0",
    "bigcode-openrail-m",
    "afl-3.0",
    "artistic-2.0",
    "bsl-1.0",
    "bsd",
    "bsd-2-clause",
    "bsd-3-clause",
    "bsd-3-clause-clear",
    "c-uda",
    "cc",
    "cc0-1.0",
    "cc-by-2.0",
    "cc-by-2.5",
    "cc-by-3.0",
    "cc-by-4.0",
    "cc-by-sa-3.0",
    "cc-by-sa-4.0",
    "cc-by-nc-2.0",
    "cc-by-nc-3.0",
    "cc-by-nc-4.0",
    "cc-by-nd-4.0",
    "cc-by-nc-nd-3.0",
    "cc-by-nc-nd-4.0",
    "cc-by-nc-sa-2.0",
    "cc-by-nc-sa-3.0",
    "cc-by-nc-sa-4.0",
    "cdla-sharing-1.0",
    "cdla-permissive-1.0",
    "cdla-permissive-2.0",
    "wtfpl",
    "ecl-2.0",
    "epl-1.0",
    "epl-2.0",
    "etalab-2.0",
    "eupl-1.1",
    "eupl-1.2",
    "agpl-3.0",
    "gfdl",
    "gpl",
    "gpl-2.0",
    "gpl-3.0",
    "lgpl",
    "lgpl-2.1",
    "lgpl-3.0",
    "isc",
    "h-research",
    "intel-research",
    "lppl-1.3c",
    "ms-pl",
    "apple-ascl",
    "apple-amlr",
    "mpl-2.0",
    "odc-by",
    "odbl",
    "openrail++",
    "osl-3.0",
    "postgresql",
    "ofl-1.1",
    "ncsa",
    "unlicense",
    "zlib",
    "pddl",
    "lgpl-lr",
    "deepfloyd-if-license",
    "fair-noncommercial-research-license",
    "llama2",
    "llama3",
    "llama3.1",
    "llama3.2",
    "llama3.3",
    "llama4",
    "gemma",
    "unknown",
    "other",
];

/// `size_categories` labels (huggingface/datasets `utils/resources/size_categories.json`).
pub const SIZE_CATEGORIES: &[&str] = &[
    "n<1K",
    "1K<n<10K",
    "10K<n<100K",
    "100K<n<1M",
    "1M<n<10M",
    "10M<n<100M",
    "100M<n<1B",
    "1B<n<10B",
    "10B<n<100B",
    "100B<n<1T",
    "n>1T",
];

/// The `size_categories` label for `rows` (half-open decades: 999 → `n<1K`, 1,000 → `1K<n<10K`).
pub fn size_category(rows: u64) -> &'static str {
    let mut bound = 1_000u64;
    for label in &SIZE_CATEGORIES[..SIZE_CATEGORIES.len() - 1] {
        if rows < bound {
            return label;
        }
        bound = bound.saturating_mul(10);
        if bound == u64::MAX {
            break;
        }
    }
    "n>1T"
}

/// What PyYAML (YAML 1.1 implicit resolvers, as `yaml.SafeLoader` applies them) reads a plain
/// scalar as, when not a string: `"a boolean"` (`yes`, `On`, `NO`, …), `"a number"` (`1_000`,
/// `1:20`, `.5`), `"null"`, `"a date"` (`2024-01-01`, timestamps), `"a merge key"` (`<<`) or
/// `"a value key"` (`=`, which SafeLoader cannot construct). Source: PyYAML 6
/// `yaml/resolver.py`.
pub fn pyyaml_kind(value: &str) -> Option<&'static str> {
    static RESOLVERS: std::sync::LazyLock<Vec<(&'static str, regex::Regex)>> = std::sync::LazyLock::new(|| {
        [
            ("a boolean", r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$"),
            (
                "a number",
                r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
            ),
            (
                "a number",
                r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
            ),
            ("a merge key", r"^<<$"),
            ("null", r"^(?:~|null|Null|NULL|)$"),
            (
                "a date",
                r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$",
            ),
            ("a value key", r"^=$"),
        ]
        .into_iter()
        .map(|(kind, re)| (kind, regex::Regex::new(re).expect("valid resolver")))
        .collect()
    });
    RESOLVERS.iter().find(|(_, re)| re.is_match(value)).map(|(kind, _)| *kind)
}

/// A plain scalar of a YAML text that YAML 1.2 (runpack, the Hub) reads as a string and PyYAML
/// (`datasets`, `huggingface_hub`) as something else (see [`pyyaml_kind`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmbiguousScalar {
    /// Byte range of the scalar in the text.
    pub bytes: std::ops::Range<usize>,
    /// 1-based line of the text it starts on.
    pub line: usize,
    /// The scalar.
    pub value: String,
    /// What PyYAML reads it as.
    pub pyyaml: &'static str,
}

/// The plain scalars of `text` (keys and values) that YAML 1.2 reads as strings and PyYAML as
/// another type: `config_name: yes` is the string "yes" to the Hub and `True` to `datasets`.
/// Invalid YAML gives what was found before the error (the caller reports the error).
pub fn yaml11_ambiguous(text: &str) -> Vec<AmbiguousScalar> {
    use saphyr_parser::{Event, Parser, ScalarStyle};
    // the parser's marks count characters; the text is cut in bytes
    let bytes_at: Vec<usize> = text.char_indices().map(|(b, _)| b).chain([text.len()]).collect();
    let mut out = Vec::new();
    for ev in Parser::new_from_str(text) {
        let Ok((Event::Scalar(value, ScalarStyle::Plain, _, None), span)) = ev else {
            if ev.is_err() {
                break;
            }
            continue;
        };
        let Some(pyyaml) = pyyaml_kind(&value) else { continue };
        // a scalar YAML 1.2 reads as a string too would not have been written plain as one
        if !matches!(yaml_serde::from_str::<Yaml>(&value), Ok(Yaml::String(_))) {
            continue;
        }
        let (Some(&start), Some(&end)) = (bytes_at.get(span.start.index()), bytes_at.get(span.end.index())) else {
            continue;
        };
        out.push(AmbiguousScalar { bytes: start..end, line: span.start.line(), value: value.into_owned(), pyyaml });
    }
    out
}

/// `text` with every scalar of [`yaml11_ambiguous`] single-quoted, so that PyYAML reads the
/// strings YAML 1.2 does.
pub fn quote_yaml11_ambiguous(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for a in yaml11_ambiguous(text) {
        if text[a.bytes.clone()] != a.value {
            // a plain scalar folded over lines; left as it is (names never are)
            continue;
        }
        out.push_str(&text[at..a.bytes.start]);
        out.push('\'');
        out.push_str(&a.value.replace('\'', "''"));
        out.push('\'');
        at = a.bytes.end;
    }
    out.push_str(&text[at..]);
    out
}

/// One node of a YAML text as [`walk_yaml`] meets it.
pub(crate) struct YamlNode<'e, 'p> {
    /// The parser's event.
    pub event: &'e saphyr_parser::Event<'e>,
    /// Its line in the text, 1-based.
    pub line: usize,
    /// Where it is in the text, in characters from its start (not bytes): its first, and the one
    /// after its last.
    pub chars: std::ops::Range<usize>,
    /// Where it sits, in dotted form with `[i]` for sequence items; for a mapping's key, the
    /// mapping's path.
    pub path: &'p str,
    /// The same place as the reference tokens of a JSON pointer (`["runs", "0"]`).
    pub tokens: &'p [String],
    /// Whether it is a mapping's key.
    pub is_key: bool,
    /// Whether it is the end of a mapping or a sequence (`chars` ends where it does), met at
    /// the place of the mapping or sequence it ends.
    pub end: bool,
}

/// Calls `visit` for each node of `text` in document order, with its path; stops at the first
/// syntax error and returns it as (line, column, what), both 1-based, counted in `text`.
pub(crate) fn walk_yaml(
    text: &str,
    visit: &mut dyn FnMut(YamlNode),
) -> std::result::Result<(), (usize, usize, String)> {
    use saphyr_parser::{Event, Parser};
    enum Frame {
        Map { key: Option<String>, expecting_key: bool },
        Seq { index: usize },
    }
    fn path(stack: &[Frame]) -> String {
        let mut p = String::new();
        for f in stack {
            match f {
                Frame::Map { key: Some(k), expecting_key: false } => {
                    if !p.is_empty() {
                        p.push('.');
                    }
                    p.push_str(k);
                }
                Frame::Map { .. } => {}
                Frame::Seq { index } => p.push_str(&format!("[{index}]")),
            }
        }
        p
    }
    fn tokens(stack: &[Frame]) -> Vec<String> {
        stack
            .iter()
            .filter_map(|f| match f {
                Frame::Map { key: Some(k), expecting_key: false } => Some(k.clone()),
                Frame::Map { .. } => None,
                Frame::Seq { index } => Some(index.to_string()),
            })
            .collect()
    }
    fn done(stack: &mut [Frame]) {
        match stack.last_mut() {
            Some(Frame::Map { expecting_key, .. }) => *expecting_key = !*expecting_key,
            Some(Frame::Seq { index }) => *index += 1,
            None => {}
        }
    }
    let mut stack: Vec<Frame> = Vec::new();
    for ev in Parser::new_from_str(text) {
        let (ev, span) = ev.map_err(|e| (e.marker().line(), e.marker().col() + 1, e.info().to_string()))?;
        let end = matches!(ev, Event::SequenceEnd | Event::MappingEnd);
        // (an end is met at the place of what it ends: the stack without its frame)
        let at: &[Frame] = if end { &stack[..stack.len().saturating_sub(1)] } else { &stack };
        let is_key = !end && matches!(stack.last(), Some(Frame::Map { expecting_key: true, .. }));
        visit(YamlNode {
            event: &ev,
            line: span.start.line(),
            chars: span.start.index()..span.end.index(),
            path: &path(at),
            tokens: &tokens(at),
            is_key,
            end,
        });
        match ev {
            Event::Scalar(value, ..) => {
                if is_key && let Some(Frame::Map { key, .. }) = stack.last_mut() {
                    *key = Some(value.to_string());
                }
                done(&mut stack);
            }
            Event::Alias(_) => done(&mut stack),
            Event::SequenceStart(..) => stack.push(Frame::Seq { index: 0 }),
            Event::MappingStart(..) => stack.push(Frame::Map { key: None, expecting_key: true }),
            Event::SequenceEnd | Event::MappingEnd => {
                stack.pop();
                done(&mut stack);
            }
            _ => {}
        }
    }
    Ok(())
}

/// The keys of `text` that a mapping gives a second time, each with its 1-based line in
/// `text` and its dotted path ([`yaml_lines`]'s form), in document order. YAML forbids them,
/// and a parser's error names no place for them.
pub fn repeated_yaml_keys(text: &str) -> Vec<(usize, String)> {
    repeated_yaml_key_places(text).into_iter().map(|(line, _, path)| (line, path)).collect()
}

/// Where a YAML parse error of `text` is, as (line, column), 1-based in `text`: the second
/// of a repeated key for a "duplicate entry" error (whose own place is the mapping's start),
/// else the parser's own place.
pub fn yaml_error_place(text: &str, e: &yaml_serde::Error) -> Option<(usize, usize)> {
    if e.to_string().contains("duplicate entry")
        && let Some(&(line, column, _)) = repeated_yaml_key_places(text).first()
    {
        return Some((line, column));
    }
    e.location().map(|l| (l.line(), l.column()))
}

/// [`repeated_yaml_keys`] with each key's column too: (line, column, path), both 1-based,
/// the column in characters from the line's start (a flow mapping's second `b` in
/// `{ab: 1, b: 2, b: 3}` is at column 15).
fn repeated_yaml_key_places(text: &str) -> Vec<(usize, usize, String)> {
    use saphyr_parser::Event;
    let mut seen = std::collections::BTreeSet::new();
    let mut starts = Vec::new();
    let _ = walk_yaml(text, &mut |n| {
        if let (true, Event::Scalar(key, ..)) = (n.is_key, n.event) {
            // one path is one mapping: the items of a sequence have paths of their own
            let path = if n.path.is_empty() { key.to_string() } else { format!("{}.{key}", n.path) };
            if !seen.insert(path.clone()) {
                starts.push((n.line, n.chars.start, path));
            }
        }
    });
    // a key's column: characters from the last line end before it
    starts
        .into_iter()
        .map(|(line, at, path)| {
            let before: Vec<char> = text.chars().take(at).collect();
            let column = before.iter().rev().take_while(|&&c| c != '\n' && c != '\r').count() + 1;
            (line, column, path)
        })
        .collect()
}

/// The line of each key and sequence item of `text`, by its path in the dotted form of
/// [`non_plain_yaml`] (`dataset_info[0].features[2]`, `configs[1].config_name`): for a
/// mapping's member, the line of its key. Lines are the file's: `first_line` is the 1-based
/// line of the file that `text` starts on. A text that is not valid YAML gives the paths
/// before the error.
pub fn yaml_lines(text: &str, first_line: usize) -> BTreeMap<String, usize> {
    use saphyr_parser::Event;
    let mut lines = BTreeMap::new();
    let _ = walk_yaml(text, &mut |n| {
        if n.end {
            return;
        }
        let path = match (n.is_key, n.event) {
            (true, Event::Scalar(key, ..)) if n.path.is_empty() => key.to_string(),
            (true, Event::Scalar(key, ..)) => format!("{}.{key}", n.path),
            (true, _) => return,
            // a sequence's item: a mapping's value has its key's line
            (false, _) if n.path.ends_with(']') => n.path.to_string(),
            (false, _) => return,
        };
        lines.entry(path).or_insert(n.line + first_line - 1);
    });
    lines
}

/// Problems with YAML that is not plain data: tags outside the YAML core schema
/// (`!!python/tuple`, `!custom`), anchors and aliases. Each entry is `key.path: message`, the
/// path in dotted form with `[i]` for sequence items (`dataset_info.features[2].array3_d.shape`).
/// A text that is not valid YAML gives one entry with the line and column. Lines are the
/// file's: `first_line` is the 1-based line of the file that `text` starts on (2 for a card's
/// front matter, after its `---`).
pub fn non_plain_yaml(text: &str, first_line: usize) -> Vec<String> {
    use saphyr_parser::Event;
    let line = |l: usize| l + first_line - 1;
    let core = ["str", "int", "float", "bool", "null", "map", "seq"];
    let mut out = Vec::new();
    let walked = walk_yaml(text, &mut |n| {
        let path = if n.path.is_empty() { "(root)" } else { n.path };
        let at = if n.is_key { format!("{path} (a key)") } else { path.to_string() };
        let (anchor, tag) = match n.event {
            Event::Alias(_) => {
                out.push(format!("{path}: YAML alias (line {}); write the value out instead", line(n.line)));
                return;
            }
            Event::Scalar(_, _, anchor, tag) => (*anchor, tag.as_deref()),
            Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) => (*anchor, tag.as_deref()),
            _ => return,
        };
        if let Some(t) = tag
            && !(t.is_yaml_core_schema() && core.contains(&t.suffix.as_str()))
        {
            let full = if t.handle == "!" { format!("!{}", t.suffix) } else { format!("{}{}", t.handle, t.suffix) };
            out.push(format!(
                "{at}: the value carries the YAML tag `{full}` (line {}); card metadata may only hold maps, \
                 sequences, strings, numbers, booleans and null",
                line(n.line)
            ));
        }
        if anchor > 0 {
            out.push(format!("{at}: YAML anchor (line {}); write the value out instead", line(n.line)));
        }
    });
    if let Err((l, col, info)) = walked {
        out.push(format!("line {}, column {col}: not valid YAML: {info}", line(l)));
    }
    out
}

/// Checks of the card metadata that need no data, run before a build writes anything.
/// Returns the extra front matter to merge, if the pipeline names one.
///
/// Errors: [`Error::Config`] for an unknown licence id, extra metadata that is not a YAML
/// mapping, holds tags, or sets keys runpack generates (`configs`, `dataset_info`).
pub fn preflight(spec: &PipelineSpec) -> Result<Option<Mapping>> {
    let at = format!("{} [card]", spec.file.display());
    if let Some(l) = &spec.def.card.license
        && !LICENSES.contains(&l.as_str())
    {
        return Err(Error::config(
            at,
            format!(
                "license {l:?} is not a Hub licence id (examples: apache-2.0, mit, cc-by-4.0; use \"other\" for a custom licence)"
            ),
        ));
    }
    section_references(spec)?;
    let Some(rel) = &spec.def.card.metadata else { return Ok(None) };
    let path = spec.dir.join(rel);
    let text = crate::stages::ingest::files::read_small(&path, 1 << 20)?;
    let problems = non_plain_yaml(&text, 1);
    if !problems.is_empty() {
        return Err(Error::config(path.display().to_string(), problems.join("\n")));
    }
    let value: Yaml = yaml_serde::from_str(&text).map_err(|e| {
        let loc = yaml_error_place(&text, &e)
            .map(|(line, column)| format!("{}:{line}:{column}", path.display()))
            .unwrap_or_else(|| path.display().to_string());
        Error::config(loc, format!("not valid YAML: {e}"))
    })?;
    // an empty file adds nothing
    let value = if value.is_null() { Yaml::Mapping(Mapping::new()) } else { value };
    let Yaml::Mapping(m) = value else {
        return Err(Error::config(path.display().to_string(), "card metadata must be a YAML mapping"));
    };
    for k in ["configs", "dataset_info"] {
        if m.contains_key(k) {
            return Err(Error::config(
                path.display().to_string(),
                format!("`{k}` is generated from the release; remove it"),
            ));
        }
    }
    if let Some(Yaml::String(l)) = m.get("license")
        && !LICENSES.contains(&l.as_str())
    {
        return Err(Error::config(path.display().to_string(), format!("license {l:?} is not a Hub licence id")));
    }
    // a key both places set would lose one value: they must agree
    for (k, mine) in [("license", &spec.def.card.license), ("pretty_name", &spec.def.card.pretty_name)] {
        if let (Some(mine), Some(theirs)) = (mine, m.get(k))
            && theirs.as_str() != Some(mine.as_str())
        {
            return Err(Error::config(
                path.display().to_string(),
                format!(
                    "`{k}` is {} here and {mine:?} in the pipeline's [card]; set it in one place",
                    yaml_serde::to_string(theirs).unwrap_or_default().trim()
                ),
            ));
        }
    }
    if let Some(tags) = m.get("tags")
        && !tags.as_sequence().is_some_and(|t| t.iter().all(|x| x.as_str().is_some()))
    {
        return Err(Error::config(path.display().to_string(), "`tags` must be a list of strings"));
    }
    if let Some(sc) = m.get("size_categories") {
        return Err(Error::config(
            path.display().to_string(),
            format!(
                "`size_categories` ({}) is computed from the row counts; remove it",
                yaml_serde::to_string(sc).unwrap_or_default().trim()
            ),
        ));
    }
    Ok(Some(m))
}

/// Result of one card section's query.
pub struct SectionResult {
    /// Heading.
    pub title: String,
    /// Prose.
    pub text: Option<String>,
    /// The query result as a Markdown table.
    pub table: Option<String>,
}

/// Checks that each card section's query reads only sources, views and tables of the pipeline
/// (names without a schema; `information_schema.…` and the like are left to SQL), so that a
/// misspelled name is found before any source is read, not after every table is built.
///
/// Errors: [`Error::Config`] at the section's `query` line of pipeline.toml, naming what
/// there is and the closest name; SQL that does not parse is left to the run, which names its
/// place.
fn section_references(spec: &PipelineSpec) -> Result<()> {
    let def = &spec.def;
    let names: Vec<&str> = def
        .sources
        .iter()
        .map(|s| s.name.as_str())
        .chain(def.views.iter().map(|v| v.name.as_str()))
        .chain(def.tables.iter().map(|t| t.name.as_str()))
        .collect();
    if !def.card.sections.iter().any(|s| s.query.is_some()) {
        return Ok(());
    }
    // table functions (`generate_series(1, 3)`) are references too
    let functions: Vec<String> = crate::sql::session::session().state().table_functions().keys().cloned().collect();
    for s in &def.card.sections {
        let Some(q) = &s.query else { continue };
        let Ok(statements) = crate::sql::session::parse_statements(q) else { continue };
        for st in statements {
            let Ok((refs, _)) = datafusion::sql::resolve::resolve_table_references(&st, true) else { continue };
            let known = |n: &str| names.contains(&n) || functions.iter().any(|f| f == n);
            let Some(unknown) = refs.iter().find(|r| r.schema().is_none() && !known(r.table())) else {
                continue;
            };
            let name = unknown.table();
            let close = names
                .iter()
                .map(|n| (strsim::jaro_winkler(n, name), n))
                .filter(|(score, _)| *score > 0.85)
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, n)| format!("; did you mean {n}?"))
                .unwrap_or_default();
            let at = match spec.card_section_query_line(&s.title) {
                Some(line) => format!("{}:{line}", spec.file.display()),
                None => spec.file.display().to_string(),
            };
            let mut sorted = names.clone();
            sorted.sort();
            return Err(Error::config(
                format!("{at} [card] section {:?}", s.title),
                format!(
                    "the query reads `{name}`, which is no source, view or table of the pipeline (those: {}{close})",
                    sorted.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Runs the card sections' queries over the built tables.
pub async fn run_sections(ctx: &SessionContext, spec: &PipelineSpec) -> Result<Vec<SectionResult>> {
    let mut out = Vec::new();
    for s in &spec.def.card.sections {
        let table = match &s.query {
            Some(q) => {
                let (schema, batches) = crate::sql::session::run(ctx, q).await.map_err(|e| {
                    let at = match spec.card_section_query_line(&s.title) {
                        Some(line) => format!("{}:{line}", spec.file.display()),
                        None => spec.file.display().to_string(),
                    };
                    Error::config(format!("{at} [card] section {:?}", s.title), e.to_string())
                })?;
                Some(markdown_table(&schema, &batches))
            }
            None => None,
        };
        out.push(SectionResult { title: s.title.clone(), text: s.text.clone(), table });
    }
    Ok(out)
}

/// Renders record batches as a Markdown table (strings as is, numbers in JSON form, nulls empty).
pub fn markdown_table(schema: &arrow::datatypes::SchemaRef, batches: &[RecordBatch]) -> String {
    let mut s = String::new();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let _ = writeln!(s, "| {} |", names.iter().map(|n| esc_data(n)).collect::<Vec<_>>().join(" | "));
    let _ = writeln!(s, "|{}", names.iter().map(|_| "---|").collect::<String>());
    for b in batches {
        for r in 0..b.num_rows() {
            let cells: Vec<String> = (0..b.num_columns())
                .map(|c| {
                    let col = b.column(c);
                    if col.is_null(r) {
                        // told apart from an empty string
                        "_null_".to_string()
                    } else {
                        esc_data(&arrow::util::display::array_value_to_string(col, r).unwrap_or_default())
                    }
                })
                .collect();
            let _ = writeln!(s, "| {} |", cells.join(" | "));
        }
    }
    s
}

fn esc(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A data value or column name as the text of a Markdown table cell, shown as it is: the
/// characters Markdown or HTML would act on are escaped (`|`, `\`, `` ` ``, `*`, `<`, `>`,
/// `&`, a `]` that would close a link's text), control characters are written as escapes
/// (`\n`, `\t`).
fn esc_data(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.char_indices() {
        match c {
            // a `]` that a `(` or `[` follows would close a link's text (`[x](url)`, `![x](url)`
            // an image); `[[source.field]]` stays as it is
            ']' if s[i + 1..].starts_with(['(', '[']) => out.push_str("\\]"),
            '|' | '\\' | '`' | '*' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            // only where it would start an entity (`&lt;`); `W&B` stays as it is
            '&' if entity_follows(&s[i + 1..]) => out.push_str("&amp;"),
            // only at a word's edge, where it could start or end emphasis (`_null_`); a run
            // of them inside a word (`eval_gsm8k`, `EleutherAI__pythia`) stays as it is
            '_' if !(s[..i].trim_end_matches('_').chars().next_back().is_some_and(char::is_alphanumeric)
                && s[i..].trim_start_matches('_').chars().next().is_some_and(char::is_alphanumeric)) =>
            {
                out.push_str("\\_")
            }
            c if c.is_control() => out.push_str(&c.escape_default().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// A message of the build (a warning, a reason) as Markdown prose, outside tables: its code
/// spans (`` `report_repeats` ``) as written, every other character Markdown or HTML would act
/// on escaped as [`esc_data`] escapes it (a value `<b>` or `*x*` quoted in it shows as it is),
/// a line break as a space. A backtick that closes no span is escaped.
fn esc_prose(s: &str) -> String {
    let s = s.replace('\n', " ");
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    while let Some(open) = rest.find('`') {
        out.push_str(&esc_data(&rest[..open]));
        let fence = rest[open..].bytes().take_while(|b| *b == b'`').count();
        let after = &rest[open + fence..];
        match closing_fence(after, fence) {
            Some(end) => {
                out.push_str(&rest[open..open + fence + end + fence]);
                rest = &after[end + fence..];
            }
            None => {
                out.push_str(&"\\`".repeat(fence));
                rest = after;
            }
        }
    }
    out.push_str(&esc_data(rest));
    out
}

/// Where in `s` the next run of exactly `fence` backticks starts: the end of a code span
/// opened by that many (CommonMark §6.1).
fn closing_fence(s: &str, fence: usize) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'`' {
            let n = b[i..].iter().take_while(|c| **c == b'`').count();
            if n == fence {
                return Some(i);
            }
            i += n;
        } else {
            i += 1;
        }
    }
    None
}

/// True when `rest` (the text after a `&`) would make it an HTML entity: `#x3c;`, `lt;`.
fn entity_follows(rest: &str) -> bool {
    let body = rest.strip_prefix('#').unwrap_or(rest);
    let n = body.chars().take_while(char::is_ascii_alphanumeric).count();
    n > 0 && body[n..].starts_with(';')
}

/// `s` as a Markdown code span inside a table cell: a fence longer than any run of backticks
/// in `s` (CommonMark §6.1), `|` escaped for the table, control characters as escapes.
fn code(s: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let body: String = s
        .chars()
        .map(|c| match c {
            '|' => "\\|".to_string(),
            c if c.is_control() => c.escape_default().to_string(),
            c => c.to_string(),
        })
        .collect();
    let pad = if body.starts_with('`') || body.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// The `dataset_info` feature of an Arrow type.
fn feature(name: Option<&str>, dt: &DataType) -> Yaml {
    let mut m = Mapping::new();
    if let Some(n) = name {
        m.insert("name".into(), n.into());
    }
    match dt {
        DataType::List(f) => {
            let inner = match f.data_type() {
                DataType::Struct(fs) => {
                    Yaml::Sequence(fs.iter().map(|c| feature(Some(c.name()), c.data_type())).collect())
                }
                other => match feature(None, other) {
                    Yaml::Mapping(mut im) if im.len() == 1 && im.contains_key("dtype") => {
                        im.remove("dtype").expect("dtype")
                    }
                    y => y,
                },
            };
            m.insert("list".into(), inner);
        }
        DataType::Struct(fs) => {
            m.insert(
                "struct".into(),
                Yaml::Sequence(fs.iter().map(|c| feature(Some(c.name()), c.data_type())).collect()),
            );
        }
        other => {
            m.insert("dtype".into(), dtype(other).into());
        }
    }
    Yaml::Mapping(m)
}

/// The `datasets` dtype runpack writes for a scalar Arrow type it stores (`int64`, `string`,
/// `timestamp[us, tz=UTC]`, …); `None` for other types, whose spelling is pyarrow's.
pub fn scalar_dtype(dt: &DataType) -> Option<String> {
    crate::core::schema::is_stored_scalar(dt).then(|| dtype(dt))
}

fn dtype(dt: &DataType) -> String {
    match dt {
        DataType::Null => "null".into(),
        DataType::Boolean => "bool".into(),
        DataType::Int64 => "int64".into(),
        DataType::UInt64 => "uint64".into(),
        DataType::Float64 => "float64".into(),
        DataType::Utf8 => "string".into(),
        DataType::Date32 => "date32".into(),
        DataType::Timestamp(_, Some(tz)) => format!("timestamp[us, tz={tz}]"),
        DataType::Timestamp(_, None) => "timestamp[us]".into(),
        other => other.to_string().to_lowercase(),
    }
}

/// Uncompressed bytes of a Parquet file's row groups.
fn parquet_uncompressed_bytes(path: &Path) -> Result<u64> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let reader = parquet::file::serialized_reader::SerializedFileReader::new(f)
        .map_err(|e| Error::format(path.display().to_string(), e))?;
    use parquet::file::reader::FileReader;
    Ok(reader.metadata().row_groups().iter().map(|rg| rg.total_byte_size().max(0) as u64).sum())
}

/// Writes the card: YAML front matter (licence, tags, size category, one config per table
/// with rows and its `dataset_info`, merged with `extra`, the front matter of a card already
/// on the Hub), then the body: an overview, a section per table, the pipeline's own
/// sections, data quality, provenance, how to verify, query and load, and the citation.
///
/// Errors: a Parquet file of the release that cannot be read for its size.
pub fn render(
    spec: &PipelineSpec,
    manifest: &Manifest,
    report: &BuildReport,
    sections: &[SectionResult],
    extra: Option<&Mapping>,
    root: &Path,
) -> Result<String> {
    let default_table = default_config(spec, manifest);
    let (yaml, sizes) = card_metadata(spec, manifest, &default_table, extra, root)?;
    let mut b = overview(spec, manifest, &default_table, &sizes);
    b.push_str("## Tables\n\n");
    // the sources each table reads (a pipeline that built has SQL that parses)
    let readers = crate::stages::transform::readers(spec).unwrap_or_default();
    for (i, t) in manifest.tables.iter().enumerate() {
        let index = spec.def.tables.iter().position(|d| d.name == t.name).unwrap_or(i);
        let rejected: Vec<(&str, u64)> = spec
            .def
            .sources
            .iter()
            .filter(|s| readers.get(&s.name).is_some_and(|r| r.contains(&Some(index))))
            .filter_map(|s| Some((s.name.as_str(), *manifest.report.rejected_rows.get(&s.name).filter(|n| **n > 0)?)))
            .collect();
        b.push_str(&table_section(spec, t, &rejected));
    }
    for s in sections {
        let _ = writeln!(b, "## {}\n", s.title);
        if let Some(t) = &s.text {
            let _ = writeln!(b, "{}\n", t.trim());
        }
        if let Some(t) = &s.table {
            let _ = writeln!(b, "{t}");
        }
    }
    b.push_str(&data_quality(spec, manifest, report));
    b.push_str(&provenance(spec, manifest));
    b.push_str(&verify_and_query(spec, manifest, &default_table));
    Ok(format!("---\n{yaml}---\n\n{}", b.trim_end().to_string() + "\n"))
}

/// The card's default config: the pipeline's `default_table` (else its first table) when it
/// has rows, else the first table with rows (a config the card lists).
fn default_config(spec: &PipelineSpec, manifest: &Manifest) -> String {
    let card = &spec.def.card;
    // the default config must be one the card lists: a table with rows
    let declared_default = card.default_table.clone().unwrap_or_else(|| spec.def.tables[0].name.clone());
    let has_rows = |name: &str| manifest.table(name).is_some_and(|t| t.rows > 0);
    if has_rows(&declared_default) {
        declared_default
    } else {
        manifest.tables.iter().find(|t| t.rows > 0).map(|t| t.name.clone()).unwrap_or(declared_default)
    }
}

/// The card's YAML front matter, and each table's Parquet bytes (for the overview).
fn card_metadata(
    spec: &PipelineSpec,
    manifest: &Manifest,
    default_table: &str,
    extra: Option<&Mapping>,
    root: &Path,
) -> Result<(String, BTreeMap<String, u64>)> {
    let card = &spec.def.card;
    let max_rows = manifest.tables.iter().map(|t| t.rows).max().unwrap_or(0);

    // front matter
    let mut fm = Mapping::new();
    if let Some(l) = &card.license {
        fm.insert("license".into(), l.as_str().into());
    }
    if let Some(p) = &card.pretty_name {
        fm.insert("pretty_name".into(), p.as_str().into());
    }
    let mut tags: Vec<String> = card.tags.clone();
    if !tags.iter().any(|t| t == "tabular") {
        tags.push("tabular".into());
    }
    fm.insert("tags".into(), Yaml::Sequence(tags.iter().map(|t| t.as_str().into()).collect()));
    fm.insert("size_categories".into(), Yaml::Sequence(vec![size_category(max_rows).into()]));
    let mut configs = Vec::new();
    let mut infos = Vec::new();
    let mut sizes: BTreeMap<String, u64> = BTreeMap::new();
    for t in &manifest.tables {
        let mut c = Mapping::new();
        c.insert("config_name".into(), t.name.as_str().into());
        if t.name == default_table {
            c.insert("default".into(), true.into());
        }
        // the `datasets` library refuses a split without rows ("corresponds to no data"), and
        // with it the whole config: empty splits stay out of `configs` and `dataset_info`
        // (their files are still in the release, and the body says so)
        let loadable: Vec<&crate::stages::release::SplitEntry> = t.splits.iter().filter(|s| s.rows > 0).collect();
        let mut data_files = Vec::new();
        for sp in &loadable {
            let path: Yaml = split_path(sp).into();
            let mut split = Mapping::new();
            split.insert("split".into(), sp.name.as_str().into());
            split.insert("path".into(), path);
            data_files.push(Yaml::Mapping(split));
        }
        c.insert("data_files".into(), Yaml::Sequence(data_files));
        if !loadable.is_empty() {
            configs.push(Yaml::Mapping(c));
        }

        // the sizes of what `data_files` lists: an empty split's file is left out with it
        let mut num_bytes = 0u64;
        let mut download = 0u64;
        for f in loadable.iter().flat_map(|s| &s.files) {
            num_bytes += parquet_uncompressed_bytes(&root.join(f))?;
            download += manifest.files.iter().find(|e| &e.path == f).map(|e| e.bytes).unwrap_or(0);
        }
        // the body's table counts every Parquet file of the table, empty splits' included
        let all: u64 =
            t.files.iter().filter_map(|f| manifest.files.iter().find(|e| &e.path == f)).map(|e| e.bytes).sum();
        sizes.insert(t.name.clone(), all);
        let mut info = Mapping::new();
        info.insert("config_name".into(), t.name.as_str().into());
        let arrow = t.schema.arrow_schema();
        info.insert(
            "features".into(),
            Yaml::Sequence(arrow.fields().iter().map(|f| feature(Some(f.name()), f.data_type())).collect()),
        );
        let mut splits = Vec::new();
        for s in &loadable {
            let mut sp = Mapping::new();
            let mut bytes = 0u64;
            for f in &s.files {
                bytes += parquet_uncompressed_bytes(&root.join(f))?;
            }
            sp.insert("name".into(), s.name.as_str().into());
            sp.insert("num_bytes".into(), bytes.into());
            sp.insert("num_examples".into(), s.rows.into());
            splits.push(Yaml::Mapping(sp));
        }
        info.insert("splits".into(), Yaml::Sequence(splits));
        info.insert("download_size".into(), download.into());
        info.insert("dataset_size".into(), num_bytes.into());
        if !loadable.is_empty() {
            infos.push(Yaml::Mapping(info));
        }
    }
    if !configs.is_empty() {
        fm.insert("configs".into(), Yaml::Sequence(configs));
        fm.insert("dataset_info".into(), Yaml::Sequence(infos));
    }
    if let Some(extra) = extra {
        for (k, v) in extra {
            match (k.as_str(), fm.get_mut(k)) {
                // tags of both places, the pipeline's first
                (Some("tags"), Some(Yaml::Sequence(mine))) => {
                    for t in v.as_sequence().into_iter().flatten() {
                        if !mine.contains(t) {
                            mine.push(t.clone());
                        }
                    }
                }
                // license and pretty_name agree (checked by preflight)
                (_, Some(_)) => {}
                (_, None) => {
                    fm.insert(k.clone(), v.clone());
                }
            }
        }
    }
    // names such as `yes`, `on` or `2024-01-01` are strings to YAML 1.2 and not to PyYAML,
    // which `datasets` reads cards with: they are quoted
    let yaml =
        quote_yaml11_ambiguous(&yaml_serde::to_string(&Yaml::Mapping(fm)).map_err(|e| Error::format("card", e))?);
    Ok((yaml, sizes))
}

/// The card's title, description, release line and table of tables.
fn overview(spec: &PipelineSpec, manifest: &Manifest, default_table: &str, sizes: &BTreeMap<String, u64>) -> String {
    let card = &spec.def.card;
    let mut b = String::new();
    let title = card.pretty_name.clone().unwrap_or_else(|| spec.def.name.clone());
    let _ = writeln!(b, "# {title}\n");
    if let Some(d) = &card.description {
        let _ = writeln!(b, "{}\n", d.trim());
    }
    let _ = writeln!(
        b,
        "Release `{}` version `{}`, built by runpack {} from the pipeline `{}` (definition sha256 `{}`).\n",
        manifest.name, manifest.version, manifest.runpack_version, spec.def.name, manifest.pipeline.sha256
    );
    let _ = writeln!(b, "| table (config) | rows | columns | Parquet bytes | description |\n|---|---|---|---|---|");
    for t in &manifest.tables {
        let desc = table_description(spec, &t.name, &t.schema).lines().next().unwrap_or("").to_string();
        let _ = writeln!(
            b,
            "| `{}`{} | {} | {} | {} | {} |",
            t.name,
            if t.name == default_table && t.rows > 0 { " (default)" } else { "" },
            crate::core::numbers::group_digits(t.rows),
            t.schema.fields.len(),
            crate::core::numbers::group_digits(sizes[&t.name]),
            esc(&desc)
        );
    }
    b.push('\n');

    b
}

/// A table's section: description, rows, key and duplicate rule, the rows its sources
/// (`source_rejects`: name, rows) set aside, files, empty splits, foreign keys and the column
/// dictionary with each column's rules.
fn table_section(
    spec: &PipelineSpec,
    t: &crate::stages::release::TableEntry,
    source_rejects: &[(&str, u64)],
) -> String {
    let mut b = String::new();
    let _ = writeln!(b, "### `{}`\n", t.name);
    let desc = table_description(spec, &t.name, &t.schema);
    if !desc.is_empty() {
        let _ = writeln!(b, "{}\n", desc.trim());
    }
    let _ = write!(b, "{}", crate::stages::hash::rows(t.rows));
    if !t.schema.primary_key.is_empty() {
        let _ = write!(b, ", one per ({})", t.schema.primary_key.join(", "));
    }
    let repeats =
        spec.def.tables.iter().find(|d| d.name == t.name).map(|d| &d.report_repeats).filter(|r| !r.is_empty());
    if let (true, Some(r)) = (t.schema.primary_key.is_empty(), repeats) {
        // rows that should be one, kept each: counted in a warning below
        let _ = write!(b, "; no primary key (values of ({}) that repeat are counted under Data quality)", r.join(", "));
    } else if t.schema.primary_key.is_empty() {
        // no key: nothing tells two rows apart, and equal rows are all kept
        b.push_str("; no primary key (rows are not checked for duplicates)");
    } else {
        let _ = write!(b, "; duplicate-key rule `{}`", t.on_duplicate_key);
    }
    if t.duplicates_dropped > 0 {
        let _ = write!(
            b,
            " ({} superseded, kept in `rejects/{}.jsonl`)",
            crate::stages::hash::rows(t.duplicates_dropped),
            t.name
        );
    }
    if t.rejected_rows > 0 {
        let _ = write!(
            b,
            "; {} rejected by validation (in `rejects/{}.jsonl`)",
            crate::stages::hash::rows(t.rejected_rows),
            t.name
        );
    }
    for (source, n) in source_rejects {
        let _ = write!(
            b,
            "; {} of source `{source}` rejected while reading (in `rejects/{source}.jsonl`)",
            crate::stages::hash::rows(*n)
        );
    }
    let _ = writeln!(b, ". Files: {}.\n", t.files.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", "));
    let empty: Vec<String> = t.splits.iter().filter(|s| s.rows == 0).map(|s| format!("`{}`", s.name)).collect();
    if !empty.is_empty() {
        let what = if empty.len() == t.splits.len() {
            "The table has no rows, so it is left out of the card's `configs`".to_string()
        } else {
            format!(
                "Split{} {} {} no rows, so {} left out of this config's `data_files`",
                if empty.len() == 1 { "" } else { "s" },
                empty.join(", "),
                if empty.len() == 1 { "has" } else { "have" },
                if empty.len() == 1 { "it is" } else { "they are" }
            )
        };
        let _ = writeln!(
            b,
            "{what} (the `datasets` library refuses a split without rows); its Parquet and JSON Lines files are in the release all the same.\n"
        );
    }
    for fk in &t.schema.foreign_keys {
        let _ = writeln!(
            b,
            "Foreign key: ({}) → `{}`({}).\n",
            fk.fields.join(", "),
            fk.reference.resource,
            fk.reference.fields.join(", ")
        );
    }
    let _ = writeln!(b, "| column | type | description |\n|---|---|---|");
    for (f, a) in t.schema.fields.iter().zip(&t.arrow_schema) {
        let mut d = f.description.clone().unwrap_or_default();
        let c = &f.constraints;
        let mut rules = Vec::new();
        if c.required || t.schema.primary_key.contains(&f.name) {
            rules.push("required".to_string());
        }
        if c.unique {
            rules.push("unique".into());
        }
        if let Some(e) = &c.enum_values {
            rules.push(format!("one of {}", e.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")));
        }
        if let Some(p) = &c.pattern {
            rules.push(format!("matches `{p}`"));
        }
        if let Some(m) = &c.minimum {
            rules.push(format!("≥ {m}"));
        }
        if let Some(m) = &c.maximum {
            rules.push(format!("≤ {m}"));
        }
        match (c.min_length, c.max_length) {
            (Some(lo), Some(hi)) => rules.push(format!("length {lo} to {hi}")),
            (Some(lo), None) => rules.push(format!("length ≥ {lo}")),
            (None, Some(hi)) => rules.push(format!("length ≤ {hi}")),
            (None, None) => {}
        }
        if !rules.is_empty() {
            d = format!("{d} ({})", rules.join("; "));
        }
        let _ = writeln!(b, "| {} | `{}` | {} |", code(&f.name), esc(&a.data_type), esc(d.trim()));
    }
    b.push('\n');
    b
}

/// The "Data quality" section: non-finite values, coercions, rejected and superseded rows,
/// and the build's warnings (the first [`CARD_WARNINGS`], and every sampled W&B history).
fn data_quality(spec: &PipelineSpec, manifest: &Manifest, report: &BuildReport) -> String {
    let mut b = String::new();
    b.push_str("## Data quality\n\n");
    b.push_str(
        "Non-finite floats (`NaN`, `Infinity`, `-Infinity`) are kept as IEEE values in Parquet (NaN is a value, \
         distinct from null), and `manifest.json` counts them per column (`nonfinite_values`).",
    );
    // said only of a release that has JSON Lines copies
    if manifest.tables.iter().any(|t| t.has_copies()) {
        b.push_str(
            " JSON has no such numbers: the JSON Lines copies hold `null` in their place, as pandas and `datasets` \
             write them.",
        );
    }
    let to_null: Vec<String> = spec
        .def
        .sources
        .iter()
        .filter(|s| s.nonfinite == crate::core::spec::NonFinite::Null)
        .map(|s| format!("`{}`", s.name))
        .collect();
    if !to_null.is_empty() {
        let _ = write!(
            b,
            " Source{} {} {} read with `nonfinite = \"null\"`: {} non-finite values became nulls.",
            if to_null.len() == 1 { "" } else { "s" },
            to_null.join(", "),
            if to_null.len() == 1 { "is" } else { "are" },
            if to_null.len() == 1 { "its" } else { "their" }
        );
    }
    b.push_str(
        " The counts below are of the values read from the sources (rows rejected later included), each \
         source counting what it read (a file two sources read counts for each); values that a table's SQL \
         computes are not counted.\n\n",
    );
    let _ = writeln!(b, "| check | count |\n|---|---|");
    let nonfinite: u64 = manifest.report.nonfinite_values.values().sum();
    let coerced: u64 = manifest.report.coerced_values.values().sum();
    let rejected: u64 = manifest.tables.iter().map(|t| t.rejected_rows).sum::<u64>()
        + manifest
            .report
            .rejected_rows
            .iter()
            .filter(|(k, _)| manifest.table(k).is_none())
            .map(|(_, v)| v)
            .sum::<u64>();
    let dups: u64 = manifest.report.duplicates_dropped.values().sum();
    // what the published files hold, strings read as NaN included
    let in_tables: u64 = manifest.tables.iter().flat_map(|t| t.nonfinite_values.values()).map(|c| c.total()).sum();
    // summed over the sources: a file two sources read counts twice, as the line above says
    let _ = writeln!(b, "| non-finite values read, summed over the sources | {nonfinite} |");
    let _ = writeln!(b, "| strings coerced (opt-in: numbers written as text, missingValues) | {coerced} |");
    let _ = writeln!(b, "| non-finite values in the tables' Parquet files | {in_tables} |");
    let _ = writeln!(b, "| rows rejected by validation | {rejected} |");
    let _ = writeln!(b, "| rows superseded by duplicate-key rules | {dups} |");
    let _ = writeln!(b, "| warnings | {} |\n", manifest.report.warnings);
    b.push_str(&nonfinite_in_copies(manifest));
    for (name, n) in &manifest.report.nonfinite_values {
        let nulls =
            spec.def.sources.iter().any(|s| &s.name == name && s.nonfinite == crate::core::spec::NonFinite::Null);
        let fate = if nulls { "written as nulls" } else { "kept as IEEE values where a table selects them" };
        let s = if *n == 1 { "" } else { "s" };
        // where, as the build names them
        let shown: Vec<String> = report
            .nonfinite
            .get(name)
            .map(|t| t.examples.iter().take(CARD_COERCIONS).map(|e| esc_prose(e)).collect())
            .unwrap_or_default();
        let first = if shown.is_empty() {
            String::new()
        } else {
            format!(
                "; the first: {}{}",
                shown.join("; "),
                if *n as usize > shown.len() { "; the build names up to 20" } else { "" }
            )
        };
        let _ = writeln!(b, "- source `{name}`: {n} non-finite value{s} read, {fate}{first}.");
    }
    // values the sources' options changed, each source with its first few, so that no value is
    // changed without a word where a reader looks
    for (name, t) in report.coercions.iter().filter(|(_, t)| t.count > 0) {
        let shown: Vec<String> = t.examples.iter().take(CARD_COERCIONS).map(|e| esc_prose(e)).collect();
        let _ = writeln!(
            b,
            "- source `{name}`: {} string{} read as {} (the source's options), the first: {}{}.",
            t.count,
            if t.count == 1 { "" } else { "s" },
            if t.count == 1 { "a number or null" } else { "numbers or nulls" },
            shown.join("; "),
            if t.count as usize > shown.len() { "; the build names up to 20" } else { "" }
        );
    }
    for (name, n) in &manifest.report.rejected_rows {
        let _ = writeln!(
            b,
            "- `rejects/{name}.jsonl`: {}, each with its source file, line and reasons.",
            crate::stages::hash::rows(*n)
        );
    }
    // rows a keep rule set aside with their record leave keys that no row holds (a metric only
    // a stopped attempt logged at a step the resumed one logged again): named, not only counted
    for (name, t) in report.set_aside_whole.iter().filter(|(_, t)| t.count > 0) {
        let shown: Vec<String> = t.examples.iter().take(CARD_COERCIONS).map(|e| esc_prose(e)).collect();
        let _ = writeln!(
            b,
            "- table `{name}`: {} set aside with {} record{} (`record_columns`: a stopped attempt's record of a step \
             logged again), {} in no row kept; the first: {}{}.",
            crate::stages::hash::rows(t.count),
            if t.count == 1 { "its" } else { "their" },
            if t.count == 1 { "" } else { "s" },
            if t.count == 1 { "its key" } else { "their keys" },
            shown.join("; "),
            if t.count as usize > shown.len() { format!("; all in `rejects/{name}.jsonl`") } else { String::new() }
        );
    }
    // what the runs' metadata leaves out, said where a reader looks for it
    for src in &spec.def.sources {
        if let Some(w) = src.wandb.as_ref().filter(|w| w.table == crate::core::spec::WandbTable::Runs) {
            let keys: Vec<String> = w.redact.iter().map(|k| code(k)).collect();
            let _ = writeln!(
                b,
                "- source {}: the runs' `metadata` has {} replaced by `REDACTED`; any credential (a URL's user and \
                 password, an access token) in the runs' texts (metadata, config, summary, notes, tags) is replaced too.",
                code(&src.name),
                if keys.is_empty() { "no key".to_string() } else { keys.join(", ") }
            );
        }
    }
    // files the pipeline reads for no table, on purpose: a reader of the data learns of them
    // here (those a table leaves out with its reason are said below)
    let not_read: Vec<String> = spec
        .def
        .not_read
        .as_ref()
        .map(|p| p.list())
        .unwrap_or_default()
        .into_iter()
        .filter(|f| !spec.def.left_out.iter().any(|l| &l.file == f))
        .collect();
    if !not_read.is_empty() {
        let named: Vec<String> = not_read.iter().take(CARD_NOT_READ).map(|f| code(f)).collect();
        let _ = writeln!(
            b,
            "- Raw files the release does not hold, listed in `not_read` in `pipeline.toml`, which says why each is \
             left out (by choice, or as it could not be read): {}{}.",
            named.join(", "),
            if not_read.len() > named.len() {
                format!(", and {} more", not_read.len() - named.len())
            } else {
                String::new()
            }
        );
    }
    // files under raw/ no source reads and not_read does not name: a reader of the data
    // learns that the release may lack them
    if !report.unread_raw.is_empty() {
        let named: Vec<String> = report.unread_raw.iter().take(CARD_NOT_READ).map(|f| code(f)).collect();
        let more = report.unread_raw.len() - named.len();
        let _ = writeln!(
            b,
            "- Raw files under `raw/` that no source reads and `not_read` does not name (added since the pipeline was \
             written, or missed by its paths): {}{}.",
            named.join(", "),
            if more > 0 { format!(", and {more} more") } else { String::new() }
        );
    }
    // what the tables lack, as the pipeline says it
    for l in &spec.def.left_out {
        let _ = writeln!(
            b,
            "- table {} leaves out {}; when the pipeline was written: {}",
            code(&l.table),
            code(&l.file),
            esc_prose(&l.reason)
        );
    }
    // the first 20 warnings, and every run whose history was accepted as sampled or
    // incomplete, and every table's repeated values (what the data lacks, or where it
    // disagrees, is never left out of its card)
    let mut shown = 0usize;
    for w in &report.warnings {
        let always = ALWAYS_SHOWN.contains(&w.kind.as_str());
        if !always && shown == CARD_WARNINGS {
            continue;
        }
        shown += usize::from(!always);
        let _ = writeln!(b, "- warning: {}", esc_prose(&w.public()));
    }
    let others = report.warnings.iter().filter(|w| !ALWAYS_SHOWN.contains(&w.kind.as_str())).count();
    if others > CARD_WARNINGS {
        let _ = writeln!(b, "- … and {} more warnings (the build prints them all).", others - CARD_WARNINGS);
    }
    b.push('\n');

    b
}

/// The "Provenance" section: every raw input with its size and SHA-256, and the tables whose
/// rows keep their raw file and line.
fn provenance(spec: &PipelineSpec, manifest: &Manifest) -> String {
    let mut b = String::new();
    b.push_str("## Provenance\n\n");
    let _ = writeln!(b, "Raw inputs ({} files), paths relative to the pipeline folder:\n", manifest.inputs.len());
    let _ = writeln!(b, "| file | bytes | sha256 | read by |\n|---|---|---|---|");
    for i in &manifest.inputs {
        let _ = writeln!(
            b,
            "| {} | {} | `{}` | {} |",
            code(&i.path),
            crate::core::numbers::group_digits(i.bytes),
            i.sha256,
            i.sources.join(", ")
        );
    }
    b.push('\n');
    // said of the tables that hold such columns only: a table may leave them out
    let holding = |cols: &[&str]| -> Vec<String> {
        manifest
            .tables
            .iter()
            .filter(|t| cols.iter().all(|c| t.schema.fields.iter().any(|f| f.name == *c)))
            .map(|t| code(&t.name))
            .collect()
    };
    let (lines, merged) = (holding(&["_source_file", "_source_line"]), holding(&["source_files"]));
    if !lines.is_empty() {
        let _ = writeln!(
            b,
            "Each row of {} keeps the raw file and line (or JSON pointer) it came from, in `_source_file` \
             and `_source_line`.",
            lines.join(", ")
        );
    }
    if !merged.is_empty() {
        let _ =
            writeln!(b, "Each row of {} lists the raw files it was merged from, in `source_files`.", merged.join(", "));
    }
    if lines.is_empty() && merged.is_empty() {
        b.push_str("No table keeps the raw file and line of its rows; the inputs above are every file read.\n");
    }
    // prompts and responses a source leaves out: the release does not hold them
    for src in spec.def.sources.iter().filter(|s| !s.keep_text) {
        let columns = |keep| crate::stages::ingest::format_columns(src.format, keep).unwrap_or_default();
        let kept = columns(false);
        let texts: Vec<String> = columns(true)
            .into_iter()
            .filter(|(c, _)| !kept.iter().any(|(k, _)| k == c))
            .map(|(c, _)| code(&c))
            .collect();
        if !texts.is_empty() {
            let _ = writeln!(
                b,
                "\nThe source `{}` ({}) leaves the texts {} out (`keep_text = false`): no table holds them.",
                src.name,
                src.format.name(),
                texts.join(", ")
            );
        }
    }
    b.push('\n');

    b
}

/// The "Verify and query" section, how to load the release, and the citation.
fn verify_and_query(spec: &PipelineSpec, manifest: &Manifest, default_table: &str) -> String {
    let card = &spec.def.card;
    let mut b = String::new();
    b.push_str("## Verify and query\n\n");
    b.push_str(
        "Check every file against its published SHA-256:\n\n```sh\nsha256sum -c SHA256SUMS\nrunpack verify .\n```\n\n",
    );
    let copied: Vec<String> = manifest.tables.iter().filter(|t| t.has_copies()).map(|t| code(&t.name)).collect();
    if !copied.is_empty() {
        let _ = writeln!(
            b,
            "`datapackage.json` describes the JSON Lines copies (`jsonl/`) of {} as a Frictionless data package; \
             `frictionless validate datapackage.json` checks every row against its table's schema, keys included.\n",
            copied.join(", ")
        );
    }
    b.push_str(
        "`croissant.json` describes the release as Croissant 1.1 metadata: every data file with its SHA-256, and a \
         record set per table.\n\n",
    );
    let first = &manifest.tables[0];
    let _ = writeln!(b, "Query with SQL:\n\n```sh\nrunpack query . \"SELECT count(*) FROM {}\"\n```\n", first.name);
    b.push_str(&how_to_load(manifest, default_table));
    if let Some(c) = &card.citation {
        let _ = writeln!(b, "## Citation\n\n```\n{}\n```\n", c.trim());
    }
    b
}

/// The path of a split's Parquet files as the card's `data_files` names them: the file, or
/// `<stem>-*-of-*.parquet` for its shards.
pub fn split_path(split: &crate::stages::release::SplitEntry) -> String {
    if split.files.len() == 1 {
        return split.files[0].clone();
    }
    // shards are named <stem>-00000-of-0000N.parquet
    let first = split.files.first().map(String::as_str).unwrap_or_default();
    let stem = first.rsplit_once("-00000-of-").map(|(s, _)| s).unwrap_or(first);
    format!("{stem}-*-of-*.parquet")
}

/// The Python name a snippet of the card gives table `name`'s data: the name, or the name
/// and `_` when it is a Python keyword or a name the snippet uses itself.
fn python_name(name: &str) -> String {
    const TAKEN: [&str; 39] = [
        "and",
        "as",
        "assert",
        "async",
        "await",
        "break",
        "class",
        "continue",
        "def",
        "del",
        "elif",
        "else",
        "except",
        "finally",
        "for",
        "from",
        "global",
        "if",
        "import",
        "in",
        "is",
        "lambda",
        "nonlocal",
        "not",
        "or",
        "pass",
        "raise",
        "return",
        "try",
        "while",
        "with",
        "yield",
        "pl",
        "duckdb",
        "repo",
        "base",
        "load_dataset",
        "print",
        "datasets",
    ];
    if TAKEN.contains(&name) { format!("{name}_") } else { name.to_string() }
}

/// The card's "How to load" section: Python for the `datasets` library (one line per config),
/// polars and DuckDB (the `hf://` paths of each table's Parquet files, per split), generated
/// from the release. `<namespace>` stands for the Hub namespace the release is published
/// under; with the release folder's path in `repo` and `base`, the same code reads the local
/// copy.
pub fn how_to_load(manifest: &Manifest, default_table: &str) -> String {
    use std::fmt::Write as _;
    let mut b = String::from(
        "## How to load

",
    );
    let loadable: Vec<&crate::stages::release::TableEntry> = manifest.tables.iter().filter(|t| t.rows > 0).collect();
    if loadable.is_empty() {
        b.push_str(
            "No table has rows, so the card lists no configs to load.

",
        );
        return b;
    }
    let repo = format!("<namespace>/{}", manifest.name);
    let _ = writeln!(
        b,
        "Replace `<namespace>` with the Hub namespace the dataset is published under, or set `repo` and `base` \
         to the absolute path of a local copy of the release (`datasets` does not read `.` as a folder).\n"
    );
    let _ = writeln!(b, "With the `datasets` library, one config per table (`{default_table}` is the default):\n");
    let _ = writeln!(b, "```python\nfrom datasets import load_dataset\n\nrepo = \"{repo}\"");
    for t in &loadable {
        let _ = writeln!(b, "{} = load_dataset(repo, \"{}\")", python_name(&t.name), t.name);
    }
    b.push_str("```\n\n");
    // one path per split with rows, each table's in split order
    let paths = |t: &crate::stages::release::TableEntry| -> Vec<(String, String)> {
        let split_files = t.splits.iter().filter(|s| s.rows > 0);
        let one = t.splits.iter().filter(|s| s.rows > 0).count() == 1;
        split_files
            .map(|s| {
                let name = if one { python_name(&t.name) } else { format!("{}_{}", t.name, s.name.replace('.', "_")) };
                (name, split_path(s))
            })
            .collect()
    };
    let _ = writeln!(b, "With polars, from the Parquet files:\n");
    let _ = writeln!(b, "```python\nimport polars as pl\n\nbase = \"hf://datasets/{repo}\"");
    for t in &loadable {
        for (name, path) in paths(t) {
            let _ = writeln!(b, "{name} = pl.read_parquet(f\"{{base}}/{path}\")");
        }
    }
    b.push_str("```\n\n");
    let _ = writeln!(b, "With DuckDB, in SQL over the same files:\n");
    // Parquet's minimum and maximum leave NaN out, and DuckDB reads them as saying there is
    // none (duckdb/duckdb#25521): `isnan` then finds none, and `max` skips them
    let with_nan: Vec<&str> =
        loadable.iter().filter(|t| t.nonfinite_values.values().any(|c| c.nan > 0)).map(|t| t.name.as_str()).collect();
    if !with_nan.is_empty() {
        let names: Vec<String> = with_nan.iter().map(|n| code(n)).collect();
        let _ = writeln!(
            b,
            "{} NaN values: DuckDB reads them with `can_have_nan = true`. Without it, DuckDB takes the files' \
             minimum and maximum, which leave NaN out, to mean there is none: `isnan` finds none, and `max` skips \
             them.\n",
            match names.len() {
                1 => format!("Table {} holds", names[0]),
                _ => format!("Tables {} hold", names.join(", ")),
            }
        );
    }
    let _ = writeln!(b, "```python\nimport duckdb\n\nbase = \"hf://datasets/{repo}\"");
    for t in &loadable {
        let nan = with_nan.contains(&t.name.as_str());
        for (_, path) in paths(t) {
            let from = if nan {
                format!("read_parquet('{{base}}/{path}', can_have_nan = true)")
            } else {
                format!("'{{base}}/{path}'")
            };
            let _ = writeln!(b, "duckdb.sql(f\"SELECT count(*) FROM {from}\").show()");
        }
    }
    b.push_str("```\n\n");
    b
}

/// The card's lines on the NaN and infinities of tables with JSON Lines copies: per table and
/// column, how many became `null` in the copies (the Parquet files keep them). Empty when no
/// copy holds such a `null`.
pub fn nonfinite_in_copies(manifest: &Manifest) -> String {
    use std::fmt::Write as _;
    let mut b = String::new();
    for t in manifest.tables.iter().filter(|t| t.has_copies() && !t.nonfinite_values.is_empty()) {
        let total: u64 = t.nonfinite_values.values().map(|c| c.total()).sum();
        let columns: Vec<String> = t
            .nonfinite_values
            .iter()
            .map(|(c, n)| {
                let parts: Vec<String> = [(n.nan, "NaN"), (n.pos_inf, "+Infinity"), (n.neg_inf, "-Infinity")]
                    .into_iter()
                    .filter(|(k, _)| *k > 0)
                    .map(|(k, what)| format!("{} {what}", crate::core::numbers::group_digits(k)))
                    .collect();
                format!("{} ({})", code(c), parts.join(", "))
            })
            .collect();
        let _ = writeln!(
            b,
            "- table `{}`: {} non-finite value{} became `null` in the JSON Lines copies: {}. The Parquet files keep \
             them exactly.",
            t.name,
            crate::core::numbers::group_digits(total),
            if total == 1 { "" } else { "s" },
            columns.join("; ")
        );
    }
    b
}

fn table_description(spec: &PipelineSpec, name: &str, schema: &crate::core::schema::TableSchema) -> String {
    spec.def
        .tables
        .iter()
        .find(|t| t.name == name)
        .and_then(|t| t.description.clone())
        .or_else(|| schema.description.clone())
        .unwrap_or_default()
}

/// Reads the YAML front matter of a card.
pub fn front_matter(text: &str) -> Option<&str> {
    // a byte order mark before it, as some editors write, is no content (PyYAML skips it)
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n"))?;
    // an empty front matter closes on the line after the first
    if rest == "---" || rest.starts_with("---\n") || rest.starts_with("---\r\n") {
        return Some("");
    }
    let end = rest
        .find("\n---\n")
        .or_else(|| rest.find("\n---\r\n"))
        .or_else(|| rest.strip_suffix("\n---").map(|r| r.len()))?;
    Some(&rest[..end + 1])
}

/// Why a card has no front matter [`front_matter`] reads, as a message that starts with
/// `README.md:` (and the line, where one is to blame): its first line is no `---`, or no later
/// line is `---` alone (a line `--- ` with blanks after it is no end to `datasets`, which then
/// reads no metadata).
pub fn no_front_matter_problem(text: &str) -> String {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(|l| l.trim_end_matches('\r')) != Some("---") {
        return "README.md: no YAML front matter (the card must start with a line `---`)".into();
    }
    match lines.position(|l| l.trim_end() == "---") {
        Some(i) => format!(
            "README.md:{}: the front matter's closing line is `---` with blanks after it; `datasets` needs `---` \
             alone on the line, and reads no metadata without it",
            i + 2
        ),
        None => "README.md: the front matter has no closing line `---`; `datasets` reads no metadata without it".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::names::{suggest_split_name, valid_split_name};

    #[test]
    fn names_and_values_show_as_they_are_in_markdown() {
        assert_eq!(code("step"), "`step`");
        assert_eq!(code("x`y"), "``x`y``");
        assert_eq!(code("`a"), "`` `a ``");
        assert_eq!(code("line\nbreak|x"), "`line\\nbreak\\|x`");
        assert_eq!(esc_data("<b>html</b> & *x* `c` a|b"), "&lt;b&gt;html&lt;/b&gt; & \\*x\\* \\`c\\` a\\|b");
        assert_eq!(esc_data("W&B &lt; &#60;"), "W&B &amp;lt; &amp;#60;");
        assert_eq!(esc_data("_null_ eval_gsm8k a__b __c"), "\\_null\\_ eval_gsm8k a__b \\_\\_c");
        assert_eq!(esc_data("tab\there"), "tab\\there");
        assert_eq!(
            esc_data("![i](http://x/y.png) [l](u) [r][x] [[t]]"),
            "![i\\](http://x/y.png) [l\\](u) [r\\][x] [[t]]"
        );
        // a message: its code spans as written, the values it quotes escaped
        assert_eq!(
            esc_prose("v=\"<b>\", w=\"*x*\" in `report_repeats` and ``a`b``; a|b\nc ` alone"),
            "v=\"&lt;b&gt;\", w=\"\\*x\\*\" in `report_repeats` and ``a`b``; a\\|b c \\` alone"
        );
    }

    #[test]
    fn a_front_matter_is_read_as_datasets_reads_it() {
        assert_eq!(front_matter("---\n---\n# x\n"), Some(""));
        assert_eq!(front_matter("---\na: 1\n---\n"), Some("a: 1\n"));
        assert_eq!(front_matter("---\na: 1\n--- \n"), None);
        assert_eq!(
            no_front_matter_problem("---\na: 1\n--- \n"),
            "README.md:3: the front matter's closing line is `---` with blanks after it; `datasets` needs `---` \
             alone on the line, and reads no metadata without it"
        );
        assert!(no_front_matter_problem("---\na: 1\n").contains("no closing line `---`"));
        assert!(no_front_matter_problem("# card\n").contains("must start with a line `---`"));
    }

    #[test]
    fn buckets_and_split_names() {
        assert_eq!(size_category(0), "n<1K");
        assert_eq!(size_category(999), "n<1K");
        assert_eq!(size_category(1000), "1K<n<10K");
        assert_eq!(size_category(2_400_000), "1M<n<10M");
        assert!(valid_split_name("test.v2"));
        assert!(valid_split_name("eval_gsm8k"));
        assert!(!valid_split_name("eval-gsm8k"));
        assert!(!valid_split_name("math500 "));
        assert!(!valid_split_name("valid\n"));
        assert_eq!(suggest_split_name("eval-gsm8k"), "eval_gsm8k");
        assert_eq!(suggest_split_name(" "), "train");
    }

    #[test]
    fn a_repeated_key_is_placed_at_its_second_line() {
        let text = "tags:\n- x\nconfigs:\n- config_name: a\n  config_name: b\n- config_name: c\ntags: []\n";
        assert_eq!(repeated_yaml_keys(text), vec![(5, "configs[0].config_name".to_string()), (7, "tags".to_string())]);
        let e = yaml_serde::from_str::<Yaml>(text).unwrap_err();
        assert_eq!(yaml_error_place(text, &e), Some((5, 3)));
    }

    #[test]
    fn yaml_lines_give_each_key_and_item_its_line() {
        let text = "configs:\n- config_name: a\n  data_files: x\ndataset_info:\n  features:\n  - name: k\n    dtype: int64\n  -\n    name: v\n";
        let lines = yaml_lines(text, 2);
        let want = [
            ("configs", 2),
            ("configs[0]", 3),
            ("configs[0].config_name", 3),
            ("configs[0].data_files", 4),
            ("dataset_info", 5),
            ("dataset_info.features", 6),
            ("dataset_info.features[0]", 7),
            ("dataset_info.features[0].dtype", 8),
            ("dataset_info.features[0].name", 7),
            ("dataset_info.features[1]", 10),
            ("dataset_info.features[1].name", 10),
        ];
        let got: Vec<(&str, usize)> = lines.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn tags_are_found() {
        let p = non_plain_yaml("a:\n  shape: !!python/tuple [3, 64]\n  ok: !!str x\nf:\n- x: 1\n- y: !custom [1]\n", 1);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].starts_with("a.shape:"), "{p:?}");
        assert!(p[0].contains("tag:yaml.org,2002:python/tuple"), "{p:?}");
        assert!(p[1].starts_with("f[1].y:"), "{p:?}");
        assert!(p[1].contains("(line 6)"), "{p:?}");
        let p = non_plain_yaml("a: &x 1\nb: *x\n", 2);
        assert_eq!(
            p,
            [
                "a: YAML anchor (line 2); write the value out instead",
                "b: YAML alias (line 3); write the value out instead"
            ]
        );
    }

    #[test]
    fn names_pyyaml_reads_as_other_types_are_quoted() {
        for (v, kind) in [
            ("yes", "a boolean"),
            ("OFF", "a boolean"),
            ("1_000", "a number"),
            ("1:20", "a number"),
            ("2024-01-01", "a date"),
            ("2024-1-5 10:00:00", "a date"),
            ("<<", "a merge key"),
            ("=", "a value key"),
            ("~", "null"),
        ] {
            assert_eq!(pyyaml_kind(v), Some(kind), "{v}");
        }
        for v in ["y", "train", "1e5", "0o17", "yes please", "2024-01-01x"] {
            assert_eq!(pyyaml_kind(v), None, "{v}");
        }
        let value = Yaml::Mapping(
            [
                ("config_name", Yaml::String("yes".into())),
                ("split", Yaml::String("2024-01-01".into())),
                ("key", Yaml::String("<<".into())),
                ("n", Yaml::Number(3.into())),
                ("default", Yaml::Bool(true)),
                ("s", Yaml::String("it's on".into())),
                ("l", Yaml::Sequence(vec![Yaml::String("on".into()), Yaml::String("train".into())])),
            ]
            .into_iter()
            .map(|(k, v)| (Yaml::String(k.into()), v))
            .collect(),
        );
        let text = yaml_serde::to_string(&value).unwrap();
        assert_eq!(yaml11_ambiguous(&text).len(), 4, "{text}");
        let quoted = quote_yaml11_ambiguous(&text);
        assert_eq!(
            quoted,
            "config_name: 'yes'\nsplit: '2024-01-01'\nkey: '<<'\nn: 3\ndefault: true\ns: it's on\nl:\n- 'on'\n- train\n"
        );
        // the same value to YAML 1.2, and nothing left for PyYAML to read otherwise
        assert_eq!(yaml_serde::from_str::<Yaml>(&quoted).unwrap(), value);
        assert!(yaml11_ambiguous(&quoted).is_empty());
    }
}
