//! JSONPath-style locations of values inside a record (`$.meta.retry`, `$["train/return"]`,
//! `$.span[2]`, `$.tool_calls[]`), as used in every violation message.

use std::fmt::Write;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Seg {
    /// An object key.
    Key(String),
    /// An array index (0-based).
    Index(usize),
    /// "Any element" of an array (used for element types).
    Elem,
}

/// Renders a path: keys made of `[A-Za-z0-9_]` use dot notation, others bracket notation
/// with a JSON string.
pub fn render(segs: &[Seg]) -> String {
    let mut s = String::from("$");
    for seg in segs {
        match seg {
            Seg::Key(k) if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                s.push('.');
                s.push_str(k);
            }
            Seg::Key(k) => {
                let _ = write!(s, "[{}]", serde_json::to_string(k).expect("string"));
            }
            Seg::Index(i) => {
                let _ = write!(s, "[{i}]");
            }
            Seg::Elem => s.push_str("[]"),
        }
    }
    s
}

/// A key as one token of an RFC 6901 JSON pointer: `~` as `~0`, `/` as `~1`.
pub fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The reference tokens of RFC 6901 JSON pointer `pointer`, unescaped (`/a~1b/0` → `a/b`,
/// `0`); none for `""`, the whole document; `None` for a text that is no pointer (it starts
/// with another character than `/`).
pub fn pointer_tokens(pointer: &str) -> Option<Vec<String>> {
    match pointer.strip_prefix('/') {
        Some(rest) => Some(rest.split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).collect()),
        None if pointer.is_empty() => Some(Vec::new()),
        None => None,
    }
}

/// The array index a pointer token names: digits without a leading zero, as RFC 6901 says
/// (`0`, `12`; not `01`, `-1`, `+1`).
pub fn pointer_index(token: &str) -> Option<usize> {
    let digits = !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit());
    (digits && (token == "0" || !token.starts_with('0'))).then(|| token.parse().ok()).flatten()
}

/// The top-level key a JSONPath-style place names (`$.meta.retry` → `meta`, `$["a/b"][0]` →
/// `a/b`); `None` for the record itself or an index (`$`, `$[3]`).
pub fn top_key(path: &str) -> Option<String> {
    let rest = path.strip_prefix('$')?;
    if let Some(r) = rest.strip_prefix('.') {
        let name: String = r.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        return (!name.is_empty()).then_some(name);
    }
    let r = rest.strip_prefix('[')?;
    if !r.starts_with('"') {
        return None;
    }
    serde_json::Deserializer::from_str(r).into_iter::<String>().next()?.ok()
}

/// Describes a JSON value for "found …" messages: `string "NaN"`, `number 3.5`, `boolean
/// true`, `an object`, `an array`, `null`. Long strings are shortened.
pub fn describe(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => match super::lenient::special(s) {
            Some(sp @ super::lenient::Special::BigInt(_)) => format!("integer {}", sp.token()),
            Some(sp @ super::lenient::Special::Float(_)) => format!("number {}", sp.token()),
            Some(sp) => sp.token().to_string(),
            None => format!("string {}", short_json_string(s)),
        },
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// A JSON string literal, cut after 60 characters.
pub fn short_json_string(s: &str) -> String {
    if s.chars().count() > 60 {
        let cut: String = s.chars().take(60).collect();
        format!("{}…", serde_json::to_string(&cut).expect("string").trim_end_matches('"')) + "\""
    } else {
        serde_json::to_string(s).expect("string")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_are_read_as_rfc_6901_says() {
        assert_eq!(pointer_tokens(""), Some(vec![]));
        assert_eq!(pointer_tokens("/a~1b/0/~0x"), Some(vec!["a/b".to_string(), "0".into(), "~x".into()]));
        assert_eq!(pointer_tokens("runs"), None);
        assert_eq!(pointer_tokens("/a/"), Some(vec!["a".to_string(), String::new()]));
        for (t, i) in
            [("0", Some(0)), ("12", Some(12)), ("01", None), ("00", None), ("-1", None), ("+1", None), ("", None)]
        {
            assert_eq!(pointer_index(t), i, "{t:?}");
        }
    }

    #[test]
    fn top_keys_of_paths() {
        assert_eq!(top_key("$.meta.retry").as_deref(), Some("meta"));
        assert_eq!(top_key("$[\"a/b\"][0]").as_deref(), Some("a/b"));
        assert_eq!(top_key("$"), None);
        assert_eq!(top_key("$[3]"), None);
    }

    #[test]
    fn renders_paths() {
        assert_eq!(render(&[Seg::Key("meta".into()), Seg::Key("retry".into())]), "$.meta.retry");
        assert_eq!(render(&[Seg::Key("train/return".into())]), "$[\"train/return\"]");
        assert_eq!(render(&[Seg::Key("span".into()), Seg::Index(2)]), "$.span[2]");
        assert_eq!(render(&[Seg::Key("tool_calls".into()), Seg::Elem]), "$.tool_calls[]");
    }
}
