//! Parse rate of serde_json, sonic-rs and simd-json on a JSON Lines file, one line at a time,
//! through serde's `Deserializer` into a visitor that touches every key and value (the way
//! runpack's fast path reads records), plus sonic-rs's own lazy object iterator.
//!
//! Usage: `json-parsers <file.jsonl> [serde|raw|sonic|simd|lazy|none]` (no name: the three serde
//! paths; `raw`: serde_json's raw values, numbers parsed by Rust's `str::parse`). Prints GB/s
//! of input. Bare `NaN` tokens are replaced by `null` first, as runpack
//! rewrites them before parsing. `none` does only the reading and splitting, so that
//! instruction counts (`valgrind --tool=callgrind`) can subtract it.

use std::fmt;
use std::time::Instant;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};

/// What the visitor adds up: the sum of floats, of integers, and the bytes of keys and strings,
/// printed so that the parsers' results can be compared and no work is optimised away.
type Acc = (f64, u64, usize);

/// A record; its values read by [`Field`], or by [`RawField`] when `.1` is set.
struct Record<'a>(&'a mut Acc, bool);

impl<'de> DeserializeSeed<'de> for Record<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Record<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        while let Some(k) = m.next_key::<std::borrow::Cow<'de, str>>()? {
            self.0 .2 += k.len();
            if self.1 {
                m.next_value_seed(RawField(self.0))?;
            } else {
                m.next_value_seed(Field(self.0))?;
            }
        }
        Ok(())
    }
}

struct Field<'a>(&'a mut Acc);

impl<'de> DeserializeSeed<'de> for Field<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Field<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a flat value")
    }
    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.0 .0 += v;
        Ok(())
    }
    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.0 .1 = self.0 .1.wrapping_add(v as u64);
        Ok(())
    }
    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.0 .1 = self.0 .1.wrapping_add(v);
        Ok(())
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.0 .2 += v.len();
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
}

/// A value read as its text (`RawValue`, serde_json only), numbers then parsed by Rust's own
/// `str::parse::<f64>` (exact, Eisel-Lemire) rather than by serde_json's `float_roundtrip` path.
struct RawField<'a>(&'a mut Acc);

impl<'de> DeserializeSeed<'de> for RawField<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let t = <&'de serde_json::value::RawValue as serde::Deserialize>::deserialize(d)?.get();
        match t.as_bytes()[0] {
            b'"' => self.0 .2 += t.len() - 2,
            b'n' | b't' | b'f' => {}
            _ if t.bytes().all(|b| b.is_ascii_digit() || b == b'-') => {
                self.0 .1 = self.0 .1.wrapping_add(t.parse::<i64>().unwrap() as u64)
            }
            _ => self.0 .0 += t.parse::<f64>().unwrap(),
        }
        Ok(())
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: json-parsers <file.jsonl> [serde|raw|sonic|simd|lazy|none]");
    let which = args.next().unwrap_or_default();
    let text = std::fs::read_to_string(&path).expect("a UTF-8 file").replace("NaN", "null");
    let lines: Vec<&str> = text.lines().collect();
    let bytes = text.len() as f64;
    let run = |name: &str, f: &mut dyn FnMut(&str, &mut Acc)| {
        if which == name || (which.is_empty() && name != "lazy") {
            let mut acc: Acc = (0.0, 0, 0);
            let t = Instant::now();
            for l in &lines {
                f(l, &mut acc);
            }
            println!("{name:6} {:.3} GB/s {acc:?}", bytes / t.elapsed().as_secs_f64() / 1e9);
        }
    };
    run("serde", &mut |l, acc| Record(acc, false).deserialize(&mut serde_json::Deserializer::from_str(l)).unwrap());
    run("raw", &mut |l, acc| Record(acc, true).deserialize(&mut serde_json::Deserializer::from_str(l)).unwrap());
    run("sonic", &mut |l, acc| Record(acc, false).deserialize(&mut sonic_rs::Deserializer::from_str(l)).unwrap());
    let (mut buf, mut buffers) = (Vec::new(), simd_json::Buffers::default());
    run("simd", &mut |l, acc| {
        buf.clear();
        buf.extend_from_slice(l.as_bytes());
        let mut de = simd_json::Deserializer::from_slice_with_buffers(&mut buf, &mut buffers).unwrap();
        Record(acc, false).deserialize(&mut de).unwrap()
    });
    run("lazy", &mut |l, acc| {
        use sonic_rs::JsonValueTrait;
        for kv in sonic_rs::to_object_iter(l) {
            let (k, v) = kv.unwrap();
            acc.2 += k.len();
            if let Some(x) = v.as_u64() {
                acc.1 = acc.1.wrapping_add(x);
            } else if let Some(x) = v.as_f64() {
                acc.0 += x;
            } else if let Some(s) = v.as_str() {
                acc.2 += s.len();
            }
        }
    });
    if which == "none" {
        println!("none: {} lines", lines.len());
    }
}
