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
        while let Some(v) = seq.next_element_seed(Seed)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        // records of one file tend to have the same number of keys: a record starts with room
        // for as many as the previous one had, instead of growing (and rehashing)
        let mut out = if self.record { Map::with_capacity(RECORD_KEYS.get()) } else { Map::new() };
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(Seed)?;
            match out.entry(k) {
                serde_json::map::Entry::Vacant(e) => {
                    e.insert(v);
                }
                serde_json::map::Entry::Occupied(e) => return Err(repeated_key(e.key())),
            }
        }
        if self.record {
            RECORD_KEYS.set(out.len().min(MAX_KEYS_HINT));
        }
        Ok(Value::Object(out))
    }
}

/// The error of an object that names `key` twice.
pub(super) fn repeated_key<E: de::Error>(key: &str) -> E {
    E::custom(format_args!(
        "key {} appears twice in one object (a reader would keep only the last value)",
        serde_json::to_string(key).unwrap_or_default()
    ))
}

/// Largest capacity a record's object starts with.
const MAX_KEYS_HINT: usize = 1024;

thread_local! {
    /// Keys of the last record this thread read.
    static RECORD_KEYS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
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
        let v = from_slice(br#"{"f": 1.5, "u": 18446744073709551615, "n": null}"#).unwrap();
        assert_eq!(v["u"], serde_json::json!(18446744073709551615u64));
    }
}
