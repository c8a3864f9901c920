//! Property tests of the JSON Lines reader: random records with mixed types, non-finite tokens,
//! missing and reordered keys never panic, and every value either lands exactly or is reported
//! with its line and path; floats round-trip through Parquet and JSON Lines unchanged; the
//! fast path of JSON Lines gives exactly what the general path gives, or leaves the lines to it.

use std::io::Cursor;

use proptest::prelude::*;
use runpack::core::report::{Position, SourceRef};
use runpack::stages::ingest::convert::{ConvertOptions, Target, convert};
use runpack::stages::ingest::infer::Inference;
use runpack::stages::ingest::records::{self, Item};
use serde_json::{Map, Value};

/// One value as JSON text (bare NaN/Infinity tokens included).
fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (-1000i64..1000).prop_map(|i| i.to_string()),
        (-1000i64..1000).prop_map(|i| format!("{i}.5")),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<u64>().prop_map(|u| u.to_string()),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| serde_json::to_string(&f).unwrap()),
        Just("NaN".to_string()),
        Just("Infinity".to_string()),
        Just("-Infinity".to_string()),
        Just("null".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        "[a-z \"\\\\]{0,8}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        Just("18446744073709551616".to_string()),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| format!("[{}]", v.join(", "))),
            prop::collection::vec(("[abc]", inner), 0..3).prop_map(|kv| {
                let mut seen = std::collections::BTreeSet::new();
                let parts: Vec<String> = kv
                    .into_iter()
                    .filter(|(k, _)| seen.insert(k.clone()))
                    .map(|(k, v)| format!("\"{k}\": {v}"))
                    .collect();
                format!("{{{}}}", parts.join(", "))
            }),
        ]
    })
}

/// A record: some of the keys k0..k4 in any order.
fn record() -> impl Strategy<Value = String> {
    prop::collection::vec((0usize..5, value()), 0..6).prop_map(|kv| {
        let mut seen = std::collections::BTreeSet::new();
        let parts: Vec<String> =
            kv.into_iter().filter(|(k, _)| seen.insert(*k)).map(|(k, v)| format!("\"k{k}\": {v}")).collect();
        format!("{{{}}}", parts.join(", "))
    })
}

/// A value as runpack writes it to JSON Lines (non-finite floats as strings, ints widened to
/// floats in float columns).
fn expected(v: &Value, t: &Target) -> Value {
    use runpack::stages::ingest::lenient::{Special, special};
    match (v, t) {
        (Value::String(s), _) if special(s).is_some() => match special(s).unwrap() {
            Special::BigInt(d) => serde_json::from_str(d).unwrap(),
            sp => Value::String(sp.token().to_string()),
        },
        (Value::Number(n), Target::Float64) => serde_json::json!(n.as_f64().unwrap()),
        // a negative zero (`-0`, `-0.0`) in an integer column is the integer 0, counted (a
        // `negative-zero` event, which the build names in a warning)
        (Value::Number(n), Target::Int64 | Target::UInt64) if !n.is_i64() && !n.is_u64() && n.as_f64() == Some(0.0) => {
            serde_json::json!(0)
        }
        (Value::Array(a), Target::List(e)) => Value::Array(a.iter().map(|x| expected(x, e)).collect()),
        (Value::Object(o), Target::Struct(m)) => Value::Object(
            m.iter().map(|(k, t)| (k.clone(), o.get(k).map(|x| expected(x, t)).unwrap_or(Value::Null))).collect(),
        ),
        (v, Target::Json) => Value::String(runpack::stages::ingest::convert::json_text(v)),
        (v, _) => v.clone(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn every_value_lands_exactly_or_is_reported(lines in prop::collection::vec(record(), 1..12)) {
        let text = lines.join("\n") + "\n";
        let mut recs: Vec<(Map<String, Value>, Position)> = Vec::new();
        records::jsonl(Box::new(Cursor::new(text.into_bytes())), "p.jsonl", &mut |item| {
            match item {
                Item::Record(o, at) => recs.push((o, at)),
                Item::Bad { at, message, .. } => panic!("generated lines are valid JSON: {at}: {message}"),
            }
            Ok(())
        }).unwrap();
        prop_assert_eq!(recs.len(), lines.len());
        let mut inf = Inference::new(false);
        for (o, at) in &recs {
            inf.observe(o, &SourceRef { file: "p.jsonl".into(), at: at.clone() });
        }
        let (fields, problems) = inf.fields();
        let undecided: Vec<String> = problems.iter().map(|p| p.path.clone()).collect();
        let columns: Vec<(String, Target)> =
            fields.iter().map(|f| (f.name().clone(), Target::from_arrow(f.data_type()))).collect();
        let opts = ConvertOptions { first_seen: runpack::stages::ingest::infer::first_seen(&inf), ..Default::default() };
        let refs: Vec<&Map<String, Value>> = recs.iter().map(|(o, _)| o).collect();
        let out = convert(&refs, &columns, &opts);
        for (row, (o, _)) in recs.iter().enumerate() {
            for (ci, (name, t)) in columns.iter().enumerate() {
                let path = runpack::stages::ingest::path::render(&[runpack::stages::ingest::path::Seg::Key(name.clone())]);
                let reported = out.problems.iter().any(|p| p.row == row && (p.path == path || p.path.starts_with(&format!("{path}.")) || p.path.starts_with(&format!("{path}["))));
                let undecidable = undecided.iter().any(|u| u == &path || u.starts_with(&format!("{path}.")) || u.starts_with(&format!("{path}[")));
                if reported || undecidable {
                    continue;
                }
                let got = runpack::stages::validate::cell_json(&out.columns[ci], row);
                let want = o.get(name).map(|v| expected(v, t)).unwrap_or(Value::Null);
                prop_assert_eq!(got, want, "row {} column {}", row + 1, name);
            }
        }
        for p in &out.problems {
            prop_assert!(p.row < recs.len());
            prop_assert!(p.path.starts_with("$."), "{}", p.path);
        }
    }

    #[test]
    fn floats_round_trip_through_parquet_and_jsonl(values in prop::collection::vec(any::<f64>().prop_filter("finite", |f| f.is_finite()), 1..50)) {
        let dir = tempfile::tempdir().unwrap();
        let text: String = values.iter().map(|v| format!("{{\"x\": {}}}\n", serde_json::to_string(v).unwrap())).collect();
        std::fs::write(dir.path().join("f.jsonl"), &text).unwrap();
        let mut recs = Vec::new();
        records::jsonl(Box::new(Cursor::new(text.clone().into_bytes())), "f.jsonl", &mut |item| {
            if let Item::Record(o, _) = item { recs.push(o) }
            Ok(())
        }).unwrap();
        let refs: Vec<&Map<String, Value>> = recs.iter().collect();
        let cols = vec![("x".to_string(), Target::Float64)];
        let out = convert(&refs, &cols, &ConvertOptions::default());
        prop_assert!(out.problems.is_empty());
        let schema = std::sync::Arc::new(arrow::datatypes::Schema::new(vec![arrow::datatypes::Field::new("x", arrow::datatypes::DataType::Float64, true)]));
        let batch = arrow::array::RecordBatch::try_new(schema.clone(), out.columns).unwrap();
        // through Parquet and back
        let mut w = runpack::stages::write::TableWriter::new("t", schema, dir.path(), runpack::stages::write::WriteOptions::default(), true).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        let f = std::fs::File::open(dir.path().join("data/t.parquet")).unwrap();
        let back: Vec<arrow::array::RecordBatch> = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap().map(|b| b.unwrap()).collect();
        let mut jsonl = Vec::new();
        let mut ends = Vec::new();
        for b in &back {
            runpack::core::jsonl::encode_jsonl(b, &mut jsonl, &mut ends).unwrap();
        }
        let expected: String = values.iter().map(|v| format!("{{\"x\":{}}}\n", serde_json::to_string(v).unwrap())).collect();
        prop_assert_eq!(String::from_utf8(jsonl).unwrap(), expected);
        prop_assert_eq!(std::fs::read_to_string(dir.path().join("jsonl/t.jsonl")).unwrap(), text.replace(": ", ":"));
    }
}

/// Numbers in every shape JSON allows, and tokens it does not.
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "-0.0",
    "0.0e0",
    "3.0",
    "-3.0",
    "1e5",
    "1E+5",
    "-1.5e-3",
    "2.5E-0",
    "0.12345678901234567890123",
    "2.0000000000000000001",
    "4503599627370496.5",
    "0.99999999999999999",
    "99999999999999999e-1",
    "-1.0e-999",
    "0.0e-999",
    "1e400",
    "-1e400",
    "1e-400",
    "-1e-400",
    "4.9e-324",
    "1.7976931348623157e308",
    "9007199254740993",
    "9007199254740992.0",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "01",
    "-01",
    "1.",
    ".5",
    "+1",
    "1e",
    "1e+",
    "-",
    "1x",
    "0x1",
    "1.5.2",
    "--1",
    "nul",
    "tru",
    "falsey",
    "nulll",
    "Infinityy",
    "Infinity",
    "-Infinity",
    "NaN",
    "-NaN",
    "+Infinity",
    "NaNx",
    "-I",
    "Inf",
    "nan",
    "-",
];

/// Strings with escapes, good and bad, and raw control characters.
const STRINGS: &[&str] = &[
    r#""""#,
    r#""a\u00e9b""#,
    r#""\ud83d\ude00""#,
    r#""\ud800""#,
    r#""a\tb\n""#,
    "\"a\tb\"",
    r#""a\"#,
    r#""abc"#,
    r#""\\""#,
    r#""\/""#,
    r#""\x""#,
    "\"\u{1}\"",
    "\"\u{7f}\"",
    r#""\"""#,
    r#""\u00""#,
    "\"\u{fdd0}NaN\"",
    "\"\u{fdd0}int:123456789012345678901\"",
];

/// Whitespace between tokens, JSON's four kinds.
const GAPS: &[&str] = &["", " ", "\t", " \r "];

/// A flat value for the fast-path test: mostly what the declared columns take, sometimes not.
fn flat_value() -> impl Strategy<Value = String> {
    prop_oneof![
        (-1000i64..1000).prop_map(|i| i.to_string()),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<u64>().prop_map(|u| u.to_string()),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| serde_json::to_string(&f).unwrap()),
        (-1000i64..1000).prop_map(|i| format!("{i}.0")),
        Just("NaN".to_string()),
        Just("-Infinity".to_string()),
        Just("null".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        "[a-zN\\\"\u{e9}]{0,8}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        Just("123456789012345678901234".to_string()),
        Just("-9223372036854775809".to_string()),
        Just("-9223372036854775808".to_string()),
        // numbers in every shape JSON allows, and tokens it does not
        prop::sample::select(NUMBERS).prop_map(str::to_string),
        // strings with escapes, good and bad, and raw control characters
        prop::sample::select(STRINGS).prop_map(str::to_string),
    ]
}

/// A flat record over k0..k5 (k5 names no column), keys maybe repeated or escaped, values
/// typed by key, with or without whitespace between tokens.
fn flat_record() -> impl Strategy<Value = String> {
    let key = (0usize..6, any::<bool>())
        .prop_map(|(k, escaped)| if escaped { format!("k\\u003{k}") } else { format!("k{k}") });
    let gap = prop::sample::select(GAPS);
    (prop::collection::vec((key, flat_value()), 0..7), gap, any::<bool>()).prop_map(|(kv, gap, trailing)| {
        let parts: Vec<String> = kv.into_iter().map(|(k, v)| format!("{gap}\"{k}\"{gap}:{gap}{v}{gap}")).collect();
        format!("{gap}{{{}}}{}", parts.join(","), if trailing { gap } else { "" })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn the_fast_path_agrees_with_the_general_path(lines in prop::collection::vec(flat_record(), 1..10), keep_clean in any::<bool>()) {
        fast_path_agrees(lines, keep_clean)?;
    }
}

/// Every number and string token of the fast-path test, in every column and between every
/// kind of whitespace, one line each: the same on both paths.
#[test]
fn the_fast_path_agrees_on_every_token() {
    // exact halfway values written with more than 768 digits, which serde_json would round
    // otherwise than Rust's parser (2^53 + 1, 1 + 2^-53, 2^52 + 0.5)
    let long = [
        format!("9007199254740993{}e-753", "0".repeat(753)),
        format!("100000000000000011102230246251565404236316680908203125{}e-853", "0".repeat(800)),
        format!("45035996273704965{}e-801", "0".repeat(800)),
    ];
    let long: Vec<&str> = long.iter().map(String::as_str).collect();
    for token in NUMBERS.iter().chain(STRINGS).chain(&["null", "true", "false"]).chain(&long) {
        for key in ["k0", "k1", "k2", "k3", "k4", "k5", "k\\u0032", "k11", "k0k1"] {
            for gap in GAPS {
                let line = format!("{gap}{{{gap}\"{key}\"{gap}:{gap}{token}{gap}}}{gap}");
                for keep_clean in [false, true] {
                    if let Err(e) = fast_path_agrees(vec![line.clone()], keep_clean) {
                        panic!("{line:?}: {e}");
                    }
                }
            }
        }
    }
}

/// Decodes `lines` on the fast path and on the general path (only the lines the general path
/// takes without a problem when `keep_clean`): either the fast path leaves them to the general
/// one, or both give the same columns and events.
fn fast_path_agrees(lines: Vec<String>, keep_clean: bool) -> Result<(), TestCaseError> {
    use runpack::stages::ingest::direct::Decoder;
    let columns: Vec<(String, Target)> = [Target::Str, Target::Int64, Target::Float64, Target::Bool, Target::UInt64]
        .into_iter()
        .enumerate()
        .map(|(i, t)| (format!("k{i}"), t))
        .collect();
    // half of the runs keep only lines the general path takes without a problem, so the
    // fast path gets exercised, not just refused
    let lines: Vec<String> = if keep_clean {
        lines
            .into_iter()
            .filter(|l| match records::parse_line(l.as_bytes(), 2) {
                Some(Item::Record(o, _)) => {
                    convert(&[&o], &columns, &ConvertOptions { strict_keys: true, ..Default::default() })
                        .problems
                        .is_empty()
                }
                _ => false,
            })
            .collect()
    } else {
        lines
    };
    let mut chunk = records::LineChunk::default();
    for (i, l) in lines.iter().enumerate() {
        chunk.bytes.extend_from_slice(l.as_bytes());
        chunk.bytes.push(b'\n');
        chunk.lines.push((i as u64 + 2, chunk.bytes.len()));
    }
    let opts = ConvertOptions { strict_keys: true, ..Default::default() };
    let fast = Decoder::new(&columns, opts.nonfinite).unwrap().decode(&chunk);
    let mut recs = Vec::new();
    for item in chunk.items() {
        match item {
            Item::Record(o, _) => recs.push(o),
            Item::Bad { .. } => prop_assert!(fast.is_none(), "a bad line on the fast path"),
        }
    }
    let refs: Vec<&Map<String, Value>> = recs.iter().collect();
    let slow = convert(&refs, &columns, &opts);
    if keep_clean {
        prop_assert!(fast.is_some(), "clean lines take the fast path: {:?}", lines);
    }
    if let Some(fast) = fast {
        prop_assert!(slow.problems.is_empty(), "{:?}", slow.problems);
        prop_assert_eq!(fast.lines.len(), recs.len());
        for (a, b) in fast.columns.iter().zip(&slow.columns) {
            prop_assert_eq!(a.to_data(), b.to_data());
        }
        let ev = |e: &runpack::stages::ingest::convert::Event| (e.kind, e.row, e.path.clone(), e.detail.clone());
        prop_assert_eq!(fast.events.iter().map(ev).collect::<Vec<_>>(), slow.events.iter().map(ev).collect::<Vec<_>>());
    }
    Ok(())
}

#[test]
fn max_errors_caps_the_list_but_counts_all() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (0..250)
        .map(|i| format!("{{\"step\": {i}, \"x\": {}}}\n", if i % 2 == 0 { "1.5".into() } else { format!("\"s{i}\"") }))
        .collect();
    std::fs::write(dir.path().join("m.jsonl"), lines).unwrap();
    std::fs::write(
        dir.path().join("pipeline.toml"),
        "name = \"cap\"\n[[source]]\nname = \"raw\"\npath = \"m.jsonl\"\nformat = \"jsonl\"\n[[table]]\nname = \"t\"\nquery = \"SELECT * FROM raw\"\n",
    )
    .unwrap();
    let o = crate::util::run(
        crate::util::bin()
            .arg("build")
            .arg(dir.path())
            .arg("--releases-dir")
            .arg(dir.path().join("out"))
            .args(["--max-errors", "7"]),
    );
    assert_eq!(o.status.code(), Some(1));
    let err = crate::util::stderr(&o);
    assert_eq!(err.lines().filter(|l| l.starts_with("m.jsonl:")).count(), 7, "{err}");
    assert!(err.contains("and 118 more (125 violations in all)"), "{err}");
    assert!(err.contains("hint: --max-errors 125 lists every violation"), "{err}");
}
