//! Python literals as pandas writes them into CSV cells of W&B exports.
//!
//! In: the text of one cell, such as `{'runtime': 1257}`, `['seed_9999', 'soft']`,
//! `{'_type': 'html-file', 'size': 273}`, `True`, `None`, `nan`, `1257.0` (Python `repr` of
//! dicts, lists, tuples, strings, numbers, booleans and `None`; JSON text is a subset and is
//! read too, so `["a","b"]`, `true` and `null` work as well). Out: a [`serde_json::Value`] in
//! which non-finite floats (`nan`, `inf`, `-inf`, `NaN`, `Infinity`) become runpack's marker
//! strings (see [`crate::stages::ingest::lenient`]) and integers beyond 64 bits the big-integer marker,
//! so the converter turns them into IEEE values or precise range errors.
//!
//! Errors are messages naming the byte offset inside the cell and what was found there.

use serde_json::{Map, Number, Value};

use crate::stages::ingest::lenient::MARK;

/// Parses one Python literal (the whole text must be one value, surrounding blanks allowed).
///
/// Errors: a message with the 1-based character position and what was found.
pub fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser { s: text.as_bytes(), i: 0, text };
    p.blank();
    let v = p.value(0)?;
    p.blank();
    if p.i != p.s.len() {
        return Err(p.err("end of the value"));
    }
    Ok(v)
}

/// Whether a cell looks like a Python or JSON container (`{…}`, `[…]`, `(…)`).
pub fn looks_like_container(text: &str) -> bool {
    let t = text.trim();
    (t.starts_with('{') && t.ends_with('}'))
        || (t.starts_with('[') && t.ends_with(']'))
        || (t.starts_with('(') && t.ends_with(')'))
}

/// A marker string for a non-finite float.
pub fn nonfinite(f: f64) -> Value {
    let token = if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    };
    Value::String(format!("{MARK}{token}"))
}

/// A JSON number for `f`, or the non-finite marker.
pub fn float(f: f64) -> Value {
    match Number::from_f64(f) {
        Some(n) => Value::Number(n),
        None => nonfinite(f),
    }
}

/// True for the tokens of a non-finite number that [`number`] reads (`nan`, `NaN`, `inf`,
/// `Infinity`, with their signs).
pub fn special_number(t: &str) -> bool {
    matches!(t, "nan" | "NaN" | "-nan" | "inf" | "Infinity" | "+inf" | "-inf" | "-Infinity")
}

/// Reads an integer or float token (Python or JSON spelling) into a value; `None` when the
/// text is not a number.
pub fn number(t: &str) -> Option<Value> {
    let t = t.trim();
    if t.is_empty() {
        return None;
    }
    match t {
        "nan" | "NaN" | "-nan" => return Some(nonfinite(f64::NAN)),
        "inf" | "Infinity" | "+inf" => return Some(nonfinite(f64::INFINITY)),
        "-inf" | "-Infinity" => return Some(nonfinite(f64::NEG_INFINITY)),
        _ => {}
    }
    let body = t.strip_prefix(['-', '+']).unwrap_or(t);
    if body.is_empty() || !body.bytes().next().is_some_and(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    if body.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        let digits: String = t.chars().filter(|c| *c != '_' && *c != '+').collect();
        if let Ok(i) = digits.parse::<i64>() {
            return Some(Value::Number(i.into()));
        }
        if let Ok(u) = digits.parse::<u64>() {
            return Some(Value::Number(u.into()));
        }
        return Some(Value::String(format!("{MARK}int:{digits}")));
    }
    if !body.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+')) {
        return None;
    }
    t.parse::<f64>().ok().map(float)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    text: &'a str,
}

const MAX_DEPTH: usize = 128;

impl Parser<'_> {
    fn err(&self, expected: &str) -> String {
        let pos = self.text[..self.i.min(self.text.len())].chars().count() + 1;
        match self.text.get(self.i..).and_then(|r| r.chars().next()) {
            Some(c) => format!("Python literal: expected {expected} at character {pos}, found {c:?}"),
            None => format!("Python literal: expected {expected} at character {pos}, found the end of the text"),
        }
    }

    fn blank(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.blank();
        if self.s.get(self.i) == Some(&b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(self.err("a value nested less deeply"));
        }
        self.blank();
        match self.s.get(self.i) {
            None => Err(self.err("a value")),
            Some(b'{') => {
                self.i += 1;
                let mut m = Map::new();
                loop {
                    if self.eat(b'}') {
                        return Ok(Value::Object(m));
                    }
                    let k = self.value(depth + 1)?;
                    let key = match k {
                        Value::String(s) => s,
                        Value::Null => "None".to_string(),
                        other => other.to_string(),
                    };
                    if !self.eat(b':') {
                        return Err(self.err("':' after a dict key"));
                    }
                    let v = self.value(depth + 1)?;
                    m.insert(key, v);
                    if !self.eat(b',') {
                        if self.eat(b'}') {
                            return Ok(Value::Object(m));
                        }
                        return Err(self.err("',' or '}'"));
                    }
                }
            }
            Some(&open @ (b'[' | b'(')) => {
                self.i += 1;
                let close = if open == b'[' { b']' } else { b')' };
                let mut items = Vec::new();
                loop {
                    if self.eat(close) {
                        return Ok(Value::Array(items));
                    }
                    items.push(self.value(depth + 1)?);
                    if !self.eat(b',') {
                        if self.eat(close) {
                            return Ok(Value::Array(items));
                        }
                        return Err(self.err(if close == b']' { "',' or ']'" } else { "',' or ')'" }));
                    }
                }
            }
            Some(b'\'' | b'"') => self.string(),
            Some(_) => {
                let start = self.i;
                // a string prefix (u'…', r'…', b'…')
                if matches!(self.s[self.i], b'u' | b'r' | b'b' | b'U' | b'R' | b'B')
                    && matches!(self.s.get(self.i + 1), Some(b'\'' | b'"'))
                {
                    let raw = matches!(self.s[self.i], b'r' | b'R');
                    self.i += 1;
                    if raw {
                        return self.raw_string();
                    }
                    return self.string();
                }
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric() || matches!(self.s[self.i], b'.' | b'-' | b'+' | b'_'))
                {
                    self.i += 1;
                }
                let tok = &self.text[start..self.i];
                match tok {
                    "True" | "true" => Ok(Value::Bool(true)),
                    "False" | "false" => Ok(Value::Bool(false)),
                    "None" | "null" => Ok(Value::Null),
                    "" => Err(self.err("a value")),
                    _ => match number(tok) {
                        Some(v) => Ok(v),
                        None => {
                            self.i = start;
                            Err(self.err("a number, string, True, False, None, dict, list or tuple"))
                        }
                    },
                }
            }
        }
    }

    fn raw_string(&mut self) -> Result<Value, String> {
        let q = self.s[self.i];
        let start = self.i + 1;
        let end = self.s[start..].iter().position(|&b| b == q).ok_or_else(|| self.err("a closing quote"))?;
        self.i = start + end + 1;
        Ok(Value::String(self.text[start..start + end].to_string()))
    }

    fn string(&mut self) -> Result<Value, String> {
        let q = self.s[self.i];
        self.i += 1;
        let mut out = String::new();
        loop {
            let Some(&b) = self.s.get(self.i) else {
                return Err(self.err("a closing quote"));
            };
            if b == q {
                self.i += 1;
                return Ok(Value::String(out));
            }
            if b == b'\\' {
                let Some(&e) = self.s.get(self.i + 1) else {
                    return Err(self.err("an escape"));
                };
                self.i += 2;
                match e {
                    b'n' => out.push('\n'),
                    b't' => out.push('\t'),
                    b'r' => out.push('\r'),
                    b'0' => out.push('\0'),
                    b'\\' | b'\'' | b'"' | b'/' => out.push(e as char),
                    b'x' | b'u' | b'U' => {
                        let n = match e {
                            b'x' => 2,
                            b'u' => 4,
                            _ => 8,
                        };
                        let hex = self.text.get(self.i..self.i + n).ok_or_else(|| self.err("hex digits"))?;
                        let code = u32::from_str_radix(hex, 16).map_err(|_| self.err("hex digits"))?;
                        self.i += n;
                        // JSON-style surrogate pairs
                        if (0xD800..0xDC00).contains(&code) && self.text.get(self.i..self.i + 2) == Some("\\u") {
                            let low = self
                                .text
                                .get(self.i + 2..self.i + 6)
                                .and_then(|h| u32::from_str_radix(h, 16).ok())
                                .filter(|l| (0xDC00..0xE000).contains(l));
                            if let Some(low) = low {
                                self.i += 6;
                                let c = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                                out.push(char::from_u32(c).unwrap_or('\u{FFFD}'));
                                continue;
                            }
                        }
                        out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                    }
                    b'\n' => {}
                    other => {
                        out.push('\\');
                        out.push(other as char);
                    }
                }
                continue;
            }
            // copy one UTF-8 character
            let rest = &self.text[self.i..];
            let c = rest.chars().next().expect("non-empty");
            out.push(c);
            self.i += c.len_utf8();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::ingest::convert::json_text;

    #[test]
    fn python_dicts_lists_and_scalars() {
        let v = parse("{'_type': 'html-file', 'size': 273, 'ok': True, 'x': None, 'f': 1257.0}").unwrap();
        assert_eq!(json_text(&v), r#"{"_type":"html-file","size":273,"ok":true,"x":null,"f":1257.0}"#);
        assert_eq!(json_text(&parse("['seed_9999', 'soft']").unwrap()), r#"["seed_9999","soft"]"#);
        assert_eq!(json_text(&parse("(1, 2,)").unwrap()), "[1,2]");
        assert_eq!(json_text(&parse(r#"["a","b"]"#).unwrap()), r#"["a","b"]"#);
        assert_eq!(json_text(&parse("{'a': nan, 'b': -inf}").unwrap()), r#"{"a":"NaN","b":"-Infinity"}"#);
        assert_eq!(json_text(&parse(r"'it\'s \u00e9'").unwrap()), r#""it's é""#);
        assert_eq!(json_text(&parse("{1: 'a'}").unwrap()), r#"{"1":"a"}"#);
        let big = parse("123456789012345678901234").unwrap();
        assert_eq!(
            crate::stages::ingest::lenient::special(big.as_str().unwrap()),
            Some(crate::stages::ingest::lenient::Special::BigInt("123456789012345678901234"))
        );
    }

    #[test]
    fn errors_name_the_place() {
        let e = parse("{'a': 1").unwrap_err();
        assert!(e.contains("character 8"), "{e}");
        let e = parse("{'a': array([1])}").unwrap_err();
        assert!(e.contains("character 7"), "{e}");
        assert!(parse("[1] x").is_err());
    }

    #[test]
    fn numbers() {
        assert_eq!(number("1.0"), Some(serde_json::json!(1.0)));
        assert_eq!(number("533476352"), Some(serde_json::json!(533476352)));
        assert_eq!(number("1e-08"), Some(serde_json::json!(1e-8)));
        assert_eq!(number("cuda:0"), None);
        assert_eq!(number("0.18.3"), None);
        assert_eq!(number("-"), None);
    }
}
