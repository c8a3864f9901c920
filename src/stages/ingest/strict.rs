//! JSON values with every key kept: an object that names a key twice is an error, not a
//! silent "last one wins" (what JSON parsers, serde_json included, do by default).
//!
//! In: JSON text. Out: a `serde_json::Value`, or an error naming the repeated key.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A `Value` deserialized with duplicate keys refused.
pub struct StrictValue(pub Value);

impl<'de> serde::Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor { record: true }).map(StrictValue)
    }
}

/// `record`: the value is a whole record (a JSONL line, an element at a record path), not a
/// value nested in one.
struct StrictVisitor {
    record: bool,
}

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map(Value::Number).unwrap_or(Value::Null))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        loop {
            let _in = enter(|| out.len().to_string());
            match seq.next_element_seed(Seed)? {
                Some(v) => out.push(v),
                None => break,
            }
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        // records of one file tend to have the same number of keys: a record starts with room
        // for as many as the previous one had, instead of growing (and rehashing)
        let mut out = if self.record { Map::with_capacity(RECORD_KEYS.get()) } else { Map::new() };
        while let Some(k) = map.next_key::<String>()? {
            let v = {
                let _in = enter(|| k.replace('~', "~0").replace('/', "~1"));
                map.next_value_seed(Seed)?
            };
            match out.entry(k) {
                serde_json::map::Entry::Vacant(e) => {
                    e.insert(v);
                }
                serde_json::map::Entry::Occupied(e) => {
                    TRACKED.with_borrow(|t| {
                        if let Some(path) = t {
                            REPEATED_AT.set(Some(path.iter().map(|s| format!("/{s}")).collect()));
                        }
                    });
                    return Err(repeated_key(e.key()));
                }
            }
        }
        if self.record {
            RECORD_KEYS.set(out.len().min(MAX_KEYS_HINT));
        }
        Ok(Value::Object(out))
    }
}

/// What [`repeated_key`] says of the object; [`repeated_key_pointer`] finds which one it is.
pub(super) const REPEATED: &str = "appears twice in one object";

/// The error of an object that names `key` twice.
pub(super) fn repeated_key<E: de::Error>(key: &str) -> E {
    E::custom(format_args!(
        "key {} {REPEATED} (a reader would keep only the last value)",
        serde_json::to_string(key).unwrap_or_default()
    ))
}

/// Largest capacity a record's object starts with.
const MAX_KEYS_HINT: usize = 1024;

thread_local! {
    /// Keys of the last record this thread read.
    static RECORD_KEYS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// While [`repeated_key_pointer`] parses again: the JSON Pointer of the value being read,
    /// one segment per object or array entered (`None` in an ordinary parse, which pays
    /// nothing for it).
    static TRACKED: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
    /// Where the tracked parse found the repeated key.
    static REPEATED_AT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Pushes segment `seg` while [`TRACKED`] is on; pops it when the returned guard drops.
fn enter(seg: impl FnOnce() -> String) -> Option<Entered> {
    TRACKED.with_borrow_mut(|t| t.as_mut().map(|p| p.push(seg()))).map(|_| Entered)
}

/// Pops the segment [`enter`] pushed.
struct Entered;

impl Drop for Entered {
    fn drop(&mut self) {
        TRACKED.with_borrow_mut(|t| t.as_mut().map(Vec::pop));
    }
}

/// The JSON Pointer ([RFC 6901](https://www.rfc-editor.org/rfc/rfc6901)) of the object that
/// names a key twice in JSON text `text`, found by parsing it again with the path tracked
/// (only after a parse failed, so that ordinary parses pay nothing); `""` for the record's own
/// object, `None` where no key repeats.
pub fn repeated_key_pointer(text: &[u8]) -> Option<String> {
    TRACKED.set(Some(Vec::new()));
    REPEATED_AT.set(None);
    let _ = serde_json::from_slice::<StrictValue>(text);
    TRACKED.set(None);
    REPEATED_AT.take()
}

/// A value nested in a record.
struct Seed;

impl<'de> DeserializeSeed<'de> for Seed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(StrictVisitor { record: false })
    }
}

/// Parses JSON text with duplicate keys refused.
pub fn from_slice(text: &[u8]) -> serde_json::Result<Value> {
    serde_json::from_slice::<StrictValue>(text).map(|s| s.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_repeated_keys_at_any_depth() {
        assert!(from_slice(br#"{"a": 1, "b": {"c": [1, {"d": 2}]}}"#).is_ok());
        let e = from_slice(br#"{"a": 1, "a": 2}"#).unwrap_err().to_string();
        assert!(e.contains("key \"a\" appears twice"), "{e}");
        assert!(from_slice(br#"{"x": [{"b": 1, "b": 2}]}"#).is_err());
        assert_eq!(repeated_key_pointer(br#"{"x": [{"b": 1, "b": 2}]}"#).as_deref(), Some("/x/0"));
        assert_eq!(repeated_key_pointer(br#"{"a/b": {"c~": {"d": 1, "d": 2}}}"#).as_deref(), Some("/a~1b/c~0"));
        assert_eq!(repeated_key_pointer(br#"{"a": 1, "a": 2}"#).as_deref(), Some(""));
        assert_eq!(repeated_key_pointer(br#"{"a": [1, 2], "b": {"c": 1}}"#), None);
        // an ordinary parse after it tracks nothing
        assert!(from_slice(br#"{"a": {"b": 1, "b": 2}}"#).is_err());
        assert!(TRACKED.with_borrow(Option::is_none));
        let v = from_slice(br#"{"f": 1.5, "u": 18446744073709551615, "n": null}"#).unwrap();
        assert_eq!(v["u"], serde_json::json!(18446744073709551615u64));
    }
}
