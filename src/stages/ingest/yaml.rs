//! YAML documents as sources (`format = "yaml"`): run configs, framework config dumps.
//!
//! In: a file holding one YAML document. Out: its records, as a `json` source's: the elements
//! of the sequence at `record_path` (a JSON pointer; default: the root), each at its pointer
//! (`/runs/2`), or the mapping there as one record. Values map to JSON's: `.nan`, `.inf` and
//! `-.inf` are the non-finite numbers (as bare `NaN`/`Infinity` tokens in JSON), and an
//! integer beyond 64 bits or a number that a 64-bit float would change (`1e-400`,
//! `2.0000000000000000001`, `1e400`) reaches its column as written, as from JSON. What JSON
//! cannot hold is a problem at its place: a key that is not a string (`1: a`), a tagged value
//! (`!!binary …`, `!Custom x`); such a record keeps its text as written for `rejects/`. A
//! document that is not YAML is one bad record at pointer `""` whose message names the line
//! and column; a file of several documents (`---`) is refused whole.

use std::io::Read;

use serde::Deserialize;

use serde_json::{Map, Value};

use super::lenient;
use super::records::Item;
use crate::core::error::{Error, Result};
use crate::core::report::Position;

/// Reads the records of the YAML document of `reader` (file `rel`) at `pointer`.
///
/// Errors: [`Error::Io`] for a file that cannot be read, [`Error::Format`] for a file of more
/// than one document, [`Error::Config`] for a `pointer` the document does not hold or that
/// holds a scalar.
pub fn read(
    reader: Box<dyn std::io::BufRead + Send>,
    rel: &str,
    pointer: &str,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<()> {
    read_with(reader, rel, pointer, sink, false)
}

/// Reads the records of the YAML document of `reader` (file `rel`), as [`read`] does at the
/// root, but gives a record that holds values JSON cannot (a key `1`, a tag) as a record,
/// without them, rather than as a bad one: what `runpack init` looks at to tell a document's
/// shape (its arrays of records), whose records a read then sets aside one by one.
pub fn look(
    reader: Box<dyn std::io::BufRead + Send>,
    rel: &str,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<()> {
    read_with(reader, rel, "", sink, true)
}

/// [`read`]; with `whole`, records keep no problem of the values they hold ([`look`]).
fn read_with(
    mut reader: Box<dyn std::io::BufRead + Send>,
    rel: &str,
    pointer: &str,
    sink: &mut dyn FnMut(Item) -> Result<()>,
    whole: bool,
) -> Result<()> {
    let mut text = String::new();
    if let Err(e) = reader.read_to_string(&mut text) {
        if super::files::broken_stream(&e) {
            let at = Position::Pointer(String::new());
            return Err(super::records::read_failed_at(rel, at, "before the end of the document", &e));
        }
        if e.kind() == std::io::ErrorKind::InvalidData {
            return sink(Item::Bad {
                at: Position::Pointer(String::new()),
                rule: "encoding",
                message: "expected UTF-8 text, found bytes that are not".into(),
                raw: None,
            });
        }
        return Err(Error::io(rel, e));
    }
    // a byte-order mark starts no YAML: skipped, as in JSON and CSV files
    let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
    // numbers a float would change are read from their text; the text as written is parsed for
    // the place of a syntax error
    let held = held_to_text(body);
    let parsed = match &held {
        Some(t) if yaml_serde::Deserializer::from_str(t).all(|d| serde::de::IgnoredAny::deserialize(d).is_ok()) => t,
        _ => body,
    };
    let mut documents = Vec::new();
    for doc in yaml_serde::Deserializer::from_str(parsed) {
        match <yaml_serde::Value as serde::Deserialize>::deserialize(doc) {
            Ok(v) => documents.push(v),
            Err(e) => {
                // a repeated key is placed at its second line (the parser names the mapping's start)
                let at = crate::stages::card::yaml_error_place(body, &e)
                    .map(|(line, column)| format!(" at line {line}, column {column}"))
                    .unwrap_or_default();
                let mut shown = e.to_string();
                // the parser's own place is the mapping's start, for a repeated key: said once, ours
                if !at.is_empty()
                    && let Some(i) = shown.rfind(" at line ")
                    && shown[i + 9..].split(" column ").all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                {
                    shown.truncate(i);
                }
                // YAML itself has no limit: the reader's values stop at 64 bits
                // (the parser names a null key, and no key that is a list or a mapping)
                let shown = shown
                    .replace("duplicate entry with null key", "duplicate entry with key null")
                    .replace("duplicate entry in YAML map", "duplicate entry with key of a list or mapping");
                let repeated = match shown.strip_prefix("duplicate entry with key ") {
                    Some(key) => Some((".", key)),
                    None => shown.split_once(": duplicate entry with key "),
                };
                let message = if let Some((path, key)) = repeated {
                    let path = if path == "." { String::new() } else { format!(" (in {path})") };
                    format!("expected each key of a mapping once, found {key} again{at}{path}")
                } else if shown.contains("integer") && (shown.contains("u128") || shown.contains("i128")) {
                    format!("expected integers of at most 64 bits, found a larger one{at}: quote it to keep it as text")
                } else if shown.contains("repetition limit exceeded") || shown.contains("recursion limit exceeded") {
                    // valid YAML whose aliases would repeat a value past what the reader builds
                    // (a "billion laughs" document), or that nests past its depth
                    format!(
                        "expected a document the reader can expand, found one whose aliases or nesting go past its \
                         limit{at} ({shown}): write the values out, or nest them less"
                    )
                } else if shown.contains("invalid value:") {
                    // valid YAML whose tag refuses its value (`!!float 1e400`, `!!int 1.5`)
                    format!("expected a value its YAML tag allows{at}, found one it does not: {shown}")
                } else {
                    format!("expected a YAML document, found text that is not YAML{at}: {shown}")
                };
                return sink(Item::Bad {
                    at: Position::Pointer(String::new()),
                    rule: "yaml",
                    message,
                    raw: Some(text.chars().take(4096).collect()),
                });
            }
        }
    }
    if documents.len() > 1 {
        return Err(Error::format(
            rel,
            format!(
                "holds {} YAML documents (separated by `---`); a yaml source reads one document per file: split them \
                 into files",
                documents.len()
            ),
        ));
    }
    let Some(mut doc) = documents.pop() else { return Ok(()) };
    // `<<: *anchor` merges the anchored mapping's keys, as YAML's merge key says; keys written
    // beside it win
    if let Err(found) = merge_keys(&mut doc) {
        return sink(Item::Bad {
            at: Position::Pointer(String::new()),
            rule: "yaml",
            message: format!("expected a mapping or a list of mappings to merge at `<<`, found {found}"),
            raw: None,
        });
    }
    let mut problems = Vec::new();
    let root = to_json(doc, "", &mut problems);
    // a document of nothing (an empty file, comments alone, `~`, `---`) holds no record
    if root.is_null() && pointer.is_empty() {
        return Ok(());
    }
    let Some(tokens) = super::path::pointer_tokens(pointer) else {
        return Err(Error::config(rel, format!("record_path {pointer:?} must start with '/'")));
    };
    let mut at = &root;
    for t in &tokens {
        let next = match at {
            Value::Object(m) => m.get(t),
            Value::Array(a) => super::path::pointer_index(t).and_then(|i| a.get(i)),
            _ => None,
        };
        at = next.ok_or_else(|| Error::config(rel, format!("record_path {pointer:?} is not in this document")))?;
    }
    // problems of the records below the pointer go with their record; others name the document
    let record = |p: &str, sink: &mut dyn FnMut(Item) -> Result<()>, v: &Value| -> Result<()> {
        let inside: Vec<&(String, String)> =
            problems.iter().filter(|(q, _)| q == p || q.starts_with(&format!("{p}/"))).collect();
        match v {
            Value::Object(m) if inside.is_empty() || whole => {
                sink(Item::Record(m.clone(), Position::Pointer(p.to_string())))
            }
            Value::Object(_) => {
                let message = inside.iter().map(|(q, m)| format!("{q}: {m}")).collect::<Vec<_>>().join("; ");
                // the record as written: what JSON cannot hold (a key `1`, a tag) is its problem
                let raw = written_at(body, p).unwrap_or_else(|| super::convert::json_text(v));
                sink(Item::Bad { at: Position::Pointer(p.to_string()), rule: "yaml", message, raw: Some(raw) })
            }
            other => sink(Item::Bad {
                at: Position::Pointer(p.to_string()),
                rule: "record",
                message: format!("expected a record (a mapping), found {}", super::path::describe(other)),
                raw: Some(super::convert::json_text(other)),
            }),
        }
    };
    match at {
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                record(&format!("{pointer}/{i}"), sink, v)?;
            }
            Ok(())
        }
        Value::Object(_) => record(pointer, sink, at),
        other => Err(Error::config(
            rel,
            format!(
                "record_path {pointer:?} holds {} in this file, not a sequence of records or a record mapping",
                super::path::describe(other)
            ),
        )),
    }
}

/// `text` with each plain scalar value whose number a 64-bit float would change written as the
/// marker of [`lenient::Special::Float`] (`x: 1e-400` → `x: "\uFDD0num:1e-400"`), so that a
/// column sees the number as written, as in JSON: a whole float whose text is not whole
/// (`1e-400` reads as 0.0, `2.0000000000000000001` as 2.0), and a number beyond the float's
/// range (`1e400`, which the YAML parser reads as the string). `None` when there is none, or
/// the text is not YAML (the parser's error is reported as it is).
fn held_to_text(text: &str) -> Option<String> {
    use saphyr_parser::{Event, ScalarStyle};
    // a number of 15 significant digits or fewer and no exponent reads as a whole float only
    // when it is whole: most documents need no walk
    if !maybe_changed_by_a_float(text.as_bytes()) {
        return None;
    }
    // each scalar's place, its value, whether it carries the float tag (`!!float 1e-400`), and
    // the marker's kind: `num` for a number a float changes, `int` for an integer beyond 64
    // bits, which the parser refuses (the document whole): its record's problem, as in JSON
    let mut found: Vec<(std::ops::Range<usize>, String, bool, &str)> = Vec::new();
    let walked = crate::stages::card::walk_yaml(text, &mut |n| {
        let Event::Scalar(v, ScalarStyle::Plain, _, tag) = n.event else { return };
        let float_tag = tag.as_ref().is_some_and(|t| t.is_yaml_core_schema() && t.suffix == "float");
        if !n.is_key && tag.is_none() && beyond_64_bits(v) {
            found.push((n.chars.clone(), v.to_string(), false, "int"));
        } else if !n.is_key && (tag.is_none() || float_tag) && changed_by_a_float(v) {
            found.push((n.chars.clone(), v.to_string(), float_tag, "num"));
        }
    });
    if walked.is_err() || found.is_empty() {
        return None;
    }
    // the parser's marks count characters; the text is cut in bytes
    let bytes_at: Vec<usize> = text.char_indices().map(|(b, _)| b).chain([text.len()]).collect();
    let mut out = String::with_capacity(text.len() + 16 * found.len());
    let mut at = 0;
    for (chars, value, float_tag, kind) in found {
        let (Some(&start), Some(&end)) = (bytes_at.get(chars.start), bytes_at.get(chars.end)) else { return None };
        // the scalar's place starts at its anchor or tag (`&lr 1e-400`, `!!float 1e-400`)
        let Some(before) = text[start..end].trim_end().strip_suffix(value.as_str()) else {
            // not the scalar's text alone (folded over lines): left to the float
            continue;
        };
        if start < at || !before.split_whitespace().all(|t| t.starts_with(['&', '!'])) {
            continue;
        }
        out.push_str(&text[at..start]);
        // an anchor stays, so that its aliases read the marker too; the float tag goes, as the
        // marker is a string
        for t in before.split_whitespace().filter(|t| t.starts_with('&') || !float_tag) {
            out.push_str(t);
            out.push(' ');
        }
        let shown = if kind == "int" { value.strip_prefix('+').unwrap_or(&value) } else { &value };
        out.push_str(&format!("\"\\u{:04X}{kind}:{shown}\"", u32::from(lenient::MARK)));
        at = start + before.len() + value.len();
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// The text of the node at JSON pointer `pointer` in YAML document `text`, as written (cut to
/// 4 KiB, trailing white space and comment lines off, a block's lines without the indent its
/// first line had in the file); an alias as the alias (`*t`); `None` when the walk does not
/// find it (a node a merge key gave).
fn written_at(text: &str, pointer: &str) -> Option<String> {
    use saphyr_parser::Event;
    let want = super::path::pointer_tokens(pointer)?;
    // (first, after last) character of the node
    let (mut from, mut to) = (None, None);
    crate::stages::card::walk_yaml(text, &mut |n| {
        if n.is_key || to.is_some() || n.tokens != want.as_slice() {
            return;
        }
        match n.event {
            Event::MappingStart(..) | Event::SequenceStart(..) if from.is_none() => from = Some(n.chars.start),
            Event::MappingEnd | Event::SequenceEnd if from.is_some() => to = Some(n.chars.end),
            Event::Alias(_) if from.is_none() => (from, to) = (Some(n.chars.start), Some(n.chars.end)),
            _ => {}
        }
    })
    .ok()?;
    let chars: Vec<usize> = text.char_indices().map(|(b, _)| b).chain([text.len()]).collect();
    let (a, b) = (*chars.get(from?)?, *chars.get(to?)?);
    // (the comment lines before the next node are not the record's)
    let mut written = text.get(a..b)?.trim_end();
    while let Some((before, last)) = written.rsplit_once('\n')
        && last.trim_start().starts_with('#')
    {
        written = before.trim_end();
    }
    // a block record's lines under its first, as they are under it in the file (`run: a\n1: x`)
    let column = text[..a].rsplit('\n').next().map_or(0, |l| l.chars().count());
    let mut lines = written.split('\n');
    let mut out = lines.next().unwrap_or_default().to_string();
    for l in lines {
        let spaces = l.len() - l.trim_start_matches(' ').len();
        out.push('\n');
        out.push_str(&l[spaces.min(column)..]);
    }
    Some(out.chars().take(4096).collect())
}

/// Whether plain scalar `v` is a decimal integer that no 64-bit integer holds
/// (`123456789012345678901234567890`): the YAML parser refuses it.
fn beyond_64_bits(v: &str) -> bool {
    let digits = v.strip_prefix(['-', '+']).unwrap_or(v);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && v.parse::<i64>().is_err()
        && v.strip_prefix('+').unwrap_or(v).parse::<u64>().is_err()
}

/// Whether `text` may hold a number that a 64-bit float changes: an exponent after a digit
/// (`1e-400`), or 16 digits or more in a row, a point among them (`2.0000000000000000001`).
fn maybe_changed_by_a_float(text: &[u8]) -> bool {
    let mut run = 0;
    for (i, &b) in text.iter().enumerate() {
        if b.is_ascii_digit() {
            run += 1;
            if run >= 16 {
                return true;
            }
        } else if b != b'.' {
            run = 0;
        }
        if matches!(b, b'e' | b'E') && i > 0 && text[i - 1].is_ascii_digit() {
            return true;
        }
    }
    false
}

/// Whether the plain scalar `v`, which the YAML parser reads as a float (or, beyond its range,
/// as a string), is a number that the float changes: see [`held_to_text`].
fn changed_by_a_float(v: &str) -> bool {
    let unsigned = v.strip_prefix('+').unwrap_or(v);
    if !v.bytes().any(|b| b.is_ascii_digit()) || unsigned.starts_with(['+', '-']) && v.starts_with('+') {
        return false;
    }
    match unsigned.parse::<f64>() {
        Ok(f) if f.is_infinite() => true,
        Ok(f) => f.fract() == 0.0 && lenient::written_whole(v) == Some(false),
        Err(_) => false,
    }
}

/// Merges each `<<` of `v` into its mapping, as YAML's merge key says: keys written beside it
/// win, then the mappings of a list in their order. A mapping merged is merged first itself, so
/// that a merge through an anchor that merges (`b: &b {<<: *a, n: 3}`, then `<<: *b`) gives
/// `a`'s keys too. Errors: what was found at a `<<` that is no mapping nor list of mappings.
///
/// runpack's own: `yaml_serde::Value::apply_merge` merges a mapping before the `<<` of the
/// mapping merged into it is, and keeps that `<<` as a key (its other keys are lost).
fn merge_keys(v: &mut yaml_serde::Value) -> std::result::Result<(), String> {
    use yaml_serde::Value as Y;
    match v {
        Y::Mapping(m) => {
            for value in m.values_mut() {
                merge_keys(value)?;
            }
            let Some(merge) = m.remove("<<") else { return Ok(()) };
            let sources = match merge {
                Y::Mapping(one) => vec![one],
                Y::Sequence(many) => many
                    .into_iter()
                    .map(|x| match x {
                        Y::Mapping(one) => Ok(one),
                        _ => Err("a list holding another value than a mapping".to_string()),
                    })
                    .collect::<std::result::Result<_, _>>()?,
                Y::Tagged(_) => return Err("a tagged value".into()),
                _ => return Err("a scalar".into()),
            };
            for source in sources {
                for (k, x) in source {
                    m.entry(k).or_insert(x);
                }
            }
            Ok(())
        }
        Y::Sequence(items) => items.iter_mut().try_for_each(merge_keys),
        Y::Tagged(t) => merge_keys(&mut t.value),
        _ => Ok(()),
    }
}

/// A YAML value as JSON; what JSON cannot hold is noted in `problems` (JSON pointer, message)
/// and given as null.
fn to_json(v: yaml_serde::Value, at: &str, problems: &mut Vec<(String, String)>) -> Value {
    use yaml_serde::Value as Y;
    match v {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                match serde_json::Number::from_f64(f) {
                    Some(x) => Value::Number(x),
                    // runpack's mark for the bare token, read as the IEEE value in number columns
                    None => {
                        let token = if f.is_nan() {
                            "NaN"
                        } else if f > 0.0 {
                            "Infinity"
                        } else {
                            "-Infinity"
                        };
                        Value::String(format!("{}{token}", lenient::MARK))
                    }
                }
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(
            items.into_iter().enumerate().map(|(i, v)| to_json(v, &format!("{at}/{i}"), problems)).collect(),
        ),
        Y::Mapping(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                let key = match k {
                    Y::String(s) => s,
                    other => {
                        // (on one line: a key that is a list or a mapping, as JSON writes it)
                        let shown = super::convert::json_text(&to_json(other, at, &mut Vec::new()));
                        problems.push((
                            at.to_string(),
                            format!("expected string keys, found the key {shown} (quote it to make it a string)"),
                        ));
                        continue;
                    }
                };
                let place = format!("{at}/{}", super::path::pointer_token(&key));
                let value = to_json(v, &place, problems);
                out.insert(key, value);
            }
            Value::Object(out)
        }
        Y::Tagged(t) => {
            problems.push((at.to_string(), format!("expected a plain value, found a value tagged {}", t.tag)));
            Value::Null
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str, pointer: &str) -> Vec<String> {
        let mut out = Vec::new();
        read(Box::new(std::io::Cursor::new(text.to_string())), "c.yaml", pointer, &mut |item| {
            out.push(match item {
                Item::Record(r, at) => format!("{at}: {}", super::super::convert::json_text(&Value::Object(r))),
                Item::Bad { at, message, .. } => format!("{at}: bad: {message}"),
            });
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn a_record_set_aside_keeps_its_text_as_written() {
        let raws = |text: &str, pointer: &str| -> Vec<String> {
            let mut out = Vec::new();
            read(Box::new(std::io::Cursor::new(text.to_string())), "c.yaml", pointer, &mut |item| {
                if let Item::Bad { raw, .. } = item {
                    out.push(raw.unwrap_or_default());
                }
                Ok(())
            })
            .unwrap();
            out
        };
        // a key that is no string, a tag: as written, not as the record JSON could hold
        let flow = "runs: [{run: a, 1: x}, {run: b}, {run: c, acc: !custom 3}]\n";
        assert_eq!(raws(flow, "/runs"), ["{run: a, 1: x}", "{run: c, acc: !custom 3}"]);
        let block = "runs:\n  - run: a\n    1: x\n  # b next\n  - run: b\n  - run: c\n    acc: !custom 3\nname: s\n";
        assert_eq!(raws(block, "/runs"), ["run: a\n1: x", "run: c\nacc: !custom 3"]);
        let nested = "runs:\n  - run: a\n    1: x\n    cfg:\n      lr: 1\n";
        assert_eq!(raws(nested, "/runs"), ["run: a\n1: x\ncfg:\n  lr: 1"]);
        assert_eq!(raws("a: 1\n2: b\n", ""), ["a: 1\n2: b"]);
        assert_eq!(written_at("x:\n  y: [1, {z: 2}]\n", "/x/y/1").as_deref(), Some("{z: 2}"));
        assert_eq!(written_at("x: [1]\n", "/y"), None);
        assert_eq!(written_at("runs: [&t {v: !x 1}, *t]\n", "/runs/1").as_deref(), Some("*t"));
        // a key that is a list is said on one line
        let bad = records("runs:\n  - {run: a, [1, 2]: x}\n", "/runs");
        assert_eq!(
            bad,
            ["/runs/0: bad: /runs/0: expected string keys, found the key [1,2] (quote it to make it a string)"]
        );
    }

    #[test]
    fn a_repeated_key_is_placed_at_its_second_line() {
        let r = records("a: 1\nb: 2\nc: 3\nd: 4\na: 5\n", "");
        assert_eq!(r.len(), 1);
        assert!(r[0].ends_with("expected each key of a mapping once, found \"a\" again at line 5, column 1"), "{r:?}");
        // inside a list's mapping: the place once (the parser's own is the mapping's start)
        let r = records("- id: 1\n  score: 0.5\n  score: 0.6\n", "");
        assert!(r[0].ends_with("found \"score\" again at line 3, column 3 (in .[0])"), "{r:?}");
        // in flow style, a key inside another, quoted, a null key
        for (text, said) in [
            ("m: {ab: 1, b: 2, b: 3}\n", "found \"b\" again at line 1, column 18"),
            ("{a: 1, a: 2}\n", "found \"a\" again at line 1, column 8"),
            ("a: 1\n\"b\": 2\n'b': 3\n", "found \"b\" again at line 3, column 1"),
            ("null: 1\nnull: 2\n", "found null again at line 2, column 1"),
        ] {
            let r = records(text, "");
            assert!(r[0].contains(said), "{text:?}: {r:?}");
        }
    }

    #[test]
    fn numbers_a_float_would_change_are_held_to_their_text() {
        // the records as read, markers and all (json_text writes a marker as its token)
        let read_raw = |text: &str| {
            let mut out = Vec::new();
            read(Box::new(std::io::Cursor::new(text.to_string())), "c.yaml", "", &mut |item| {
                out.push(match item {
                    Item::Record(r, _) => serde_json::to_string(&r).unwrap().replace(lenient::MARK, "@"),
                    Item::Bad { message, .. } => format!("bad: {message}"),
                });
                Ok(())
            })
            .unwrap();
            out
        };
        let r = read_raw("tiny: 1e-400\nbig: -1e400\nnear: 2.0000000000000000001\nlr: 1.0e-5\nn: 12\n");
        let want =
            r#"{"tiny":"@num:1e-400","big":"@num:-1e400","near":"@num:2.0000000000000000001","lr":0.00001,"n":12}"#;
        assert_eq!(r, vec![want]);
        // under an anchor and its aliases, with the float tag, in a merged mapping
        let r = read_raw(
            "small: &s 1e-400\nruns: [{v: *s}, {v: !!float 1e-400}, {v: !!float &t 2.0000000000000000001}, {v: *t}]\n",
        );
        let want = r#"{"small":"@num:1e-400","runs":[{"v":"@num:1e-400"},{"v":"@num:1e-400"},{"v":"@num:2.0000000000000000001"},{"v":"@num:2.0000000000000000001"}]}"#;
        assert_eq!(r, vec![want]);
        let r = read_raw("base: &b {lr: 1e-400}\nrun:\n  <<: *b\n  seed: 1\n");
        assert_eq!(r, vec![r#"{"base":{"lr":"@num:1e-400"},"run":{"seed":1,"lr":"@num:1e-400"}}"#]);
        // a merge through an anchor that merges gives the first anchor's keys too (PyYAML gives
        // `a`'s `n`, formats.md says)
        let r = read_raw("a: &a {x: 0.5, n: 2}\nb: &b {<<: *a, n: 3}\nc: {id: 1, <<: *b}\nd: {<<: [*b, {z: 1}]}\n");
        let want = r#"{"a":{"x":0.5,"n":2},"b":{"n":3,"x":0.5},"c":{"id":1,"n":3,"x":0.5},"d":{"n":3,"x":0.5,"z":1}}"#;
        assert_eq!(r, vec![want]);
        let r = read_raw("a: {<<: 5}\n");
        assert!(r[0].contains("to merge at `<<`, found a scalar"), "{r:?}");
        // the string tag keeps a string
        let r = read_raw("v: !!str 1e-400\n");
        assert_eq!(r, vec![r#"{"v":"1e-400"}"#]);
        // in flow style, under an anchor and its alias, in a sequence; quoted ones are strings,
        // and words stay words
        let r = read_raw("a: &x {v: +1.e-999}\nb: *x\nc: [1e-400, '1e-400']\nd: inf\n");
        let want = r#"{"a":{"v":"@num:+1.e-999"},"b":{"v":"@num:+1.e-999"},"c":["@num:1e-400","1e-400"],"d":"inf"}"#;
        assert_eq!(r, vec![want]);
        // a key is a key: not a string, and said so
        let r = read_raw("1e-400: k\n");
        assert!(r[0].contains("expected string keys, found the key 0.0"), "{r:?}");
        // nothing to hold: the text is parsed as it is
        assert!(held_to_text("lr: 1.0e-5\nx: 1e5\ny: 123456789012345678\nz: 0.1\n").is_none());
        assert!(!maybe_changed_by_a_float(b"a: 1.5\nb: 12345.678901\nname: e5\n"));
        // a tag that refuses its value is said as such, not as text that is not YAML
        let r = read_raw("v: !!int 1.5\n");
        assert!(r[0].starts_with("bad: expected a value its YAML tag allows at line 1"), "{r:?}");
        // with the float tag, a number beyond the float's range is held to its text too
        assert_eq!(read_raw("v: !!float 1e400\n"), vec![r#"{"v":"@num:1e400"}"#]);
        // a syntax error is placed in the text as written
        let r = read_raw("a: 1e-400\nb: [1e-400\n");
        assert!(r[0].contains("line 3"), "{r:?}");
    }

    #[test]
    fn plain_scalars_are_read_by_yaml_1_2() {
        // formats.md's table of what PyYAML (YAML 1.1) reads otherwise
        assert_eq!(
            records("a: yes\nb: off\ne: 1_000\nf: 1e-6\ng: 0o17\nh: 017\n", ""),
            vec![r#": {"a":"yes","b":"off","e":"1_000","f":1e-6,"g":15,"h":"017"}"#]
        );
    }

    #[test]
    fn a_byte_order_mark_is_skipped() {
        assert_eq!(records("\u{feff}a: 1\nb: 2\n", ""), records("a: 1\nb: 2\n", ""));
        assert_eq!(records("\u{feff}- {a: 1}\n- {a: 2}\n", "").len(), 2);
    }

    #[test]
    fn records_of_a_yaml_document() {
        assert_eq!(
            records("model: qwen\nlr: 1.0e-5\nloss: .nan\ntags: [a, b]\n", ""),
            vec![r#": {"model":"qwen","lr":0.00001,"loss":"NaN","tags":["a","b"]}"#]
        );
        assert_eq!(
            records("runs:\n  - {name: a, steps: 3}\n  - {name: b, 1: x}\n  - 7\n", "/runs"),
            vec![
                r#"/runs/0: {"name":"a","steps":3}"#,
                "/runs/1: bad: /runs/1: expected string keys, found the key 1 (quote it to make it a string)",
                "/runs/2: bad: expected a record (a mapping), found number 7",
            ]
        );
        assert!(
            records("a: [1, 2\n", "")[0]
                .starts_with(": bad: expected a YAML document, found text that is not YAML at line")
        );
        // aliases that would repeat a value a billion times: valid YAML past the reader's limit
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for (i, name) in ["b", "c", "d", "e", "f", "g", "h", "i", "j"].iter().enumerate() {
            let prev = ["a", "b", "c", "d", "e", "f", "g", "h", "i"][i];
            bomb.push_str(&format!("{name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
        }
        assert!(
            records(&bomb, "")[0].contains("found one whose aliases or nesting go past its limit"),
            "{:?}",
            records(&bomb, "")
        );
        // merge keys: the keys written beside `<<` win
        assert_eq!(
            records(
                "base: &b {lr: 0.1, seed: 1}\nruns:\n  - {<<: *b, name: a}\n  - {<<: *b, name: b, lr: 0.2}\n",
                "/runs"
            ),
            vec![r#"/runs/0: {"name":"a","lr":0.1,"seed":1}"#, r#"/runs/1: {"lr":0.2,"name":"b","seed":1}"#]
        );
        assert!(records("runs:\n  - {<<: 3, name: a}\n", "/runs")[0].contains("to merge at `<<`"));
        // an integer beyond 64 bits reaches its column as written, a problem of its record alone
        for big in ["12345678901234567890123", "-12345678901234567890123"] {
            let got = records(&format!("runs:\n  - {{id: {big}}}\n  - {{id: 2}}\n"), "/runs");
            assert_eq!(got.len(), 2, "{got:?}");
            // (the marker the JSON reader gives such a number, written as the number)
            assert_eq!(got[0], format!("/runs/0: {{\"id\":{big}}}"), "{got:?}");
            assert_eq!(got[1], r#"/runs/1: {"id":2}"#);
        }
        // in a key, the parser's refusal stands, said
        let got = records("12345678901234567890123: a\n", "");
        assert!(got[0].starts_with(": bad: expected integers of at most 64 bits, found a larger one"), "{got:?}");
        assert!(got[0].ends_with("quote it to keep it as text"), "{got:?}");
        let e = read(Box::new(std::io::Cursor::new("a: 1\n---\na: 2\n".to_string())), "c.yaml", "", &mut |_| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("holds 2 YAML documents"), "{e}");
    }
}
