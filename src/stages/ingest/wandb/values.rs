//! Config, summary and metadata values of W&B runs, in every shape they arrive in.
//!
//! In: a run's config as a JSON object, a JSON string, a Python-literal string or the text of
//! a `config.yaml` (with `{desc, value}` wrappers up to wandb 0.16, `{value}` wrappers from
//! 0.18); a summary object that may hold rich values (`{"_type": "histogram", …}`,
//! `{"_type": "image-file", …}`); a `wandb-metadata.json` object. Out: the normalised config
//! (wrappers removed one level deep, `_wandb*` keys dropped, numbers kept as numbers), the
//! summary split into scalars, histograms and media references, and metadata with personal
//! fields redacted.

use serde_json::{Map, Value};

use super::pylit;

/// Normalises a run config (case B26).
///
/// Rules: a string is parsed (JSON, else a Python literal); an object whose keys are exactly
/// `{desc, value}` or `{value}` is replaced by its `value` (one level only, so a config entry
/// that itself holds `value`/`unit` keeps them); top-level keys starting with `_wandb` are
/// dropped, and so is the `wandb_version` header of `config.yaml` files.
///
/// Errors: a message when the config is neither an object nor a string holding one.
pub fn normalise_config(raw: &Value) -> Result<Map<String, Value>, String> {
    let obj = match raw {
        Value::Object(o) => o.clone(),
        Value::String(s) => match parse_text(s)? {
            Value::Object(o) => o,
            other => {
                return Err(format!(
                    "config text holds {}, not an object",
                    crate::stages::ingest::path::describe(&other)
                ));
            }
        },
        Value::Null => Map::new(),
        other => return Err(format!("config is {}, not an object", crate::stages::ingest::path::describe(other))),
    };
    let mut out = Map::new();
    for (k, v) in obj {
        if k.starts_with("_wandb") || k == "wandb_version" {
            continue;
        }
        out.insert(k, unwrap(v));
    }
    Ok(out)
}

/// `{desc, value}` or `{value}` → `value`; anything else unchanged.
pub fn unwrap(v: Value) -> Value {
    match v {
        Value::Object(mut o) if o.contains_key("value") && o.keys().all(|k| k == "value" || k == "desc") => {
            o.remove("value").unwrap_or(Value::Null)
        }
        other => other,
    }
}

/// Parses text holding JSON (with bare `NaN`/`Infinity`) or a Python literal.
///
/// Errors: the Python-literal parser's message.
pub fn parse_text(s: &str) -> Result<Value, String> {
    let bytes = s.trim().as_bytes();
    let rewritten = crate::stages::ingest::lenient::rewrite(bytes);
    if let Ok(v) = serde_json::from_slice::<Value>(rewritten.as_deref().unwrap_or(bytes)) {
        return Ok(v);
    }
    pylit::parse(s)
}

/// Reads the text of a YAML file into JSON values (non-finite floats become markers).
///
/// Errors: the YAML parser's message with line and column.
pub fn yaml(text: &str) -> Result<Value, String> {
    // a byte-order mark opens the file (as PyYAML reads it), not a second document
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut y: yaml_serde::Value = yaml_serde::from_str(text).map_err(|e| {
        let m = e.to_string();
        if m.contains("more than one document") {
            "the file holds more than one YAML document (a `---` line after the first); a run's config is one \
             mapping"
                .to_string()
        } else if m.contains("as u128") || m.contains("as i128") {
            // the YAML reader holds integers of 64 bits (PyYAML's Python ints have no limit)
            format!("{m}: an integer beyond 64 bits, which runpack's YAML reader cannot hold; quote it to keep its digits as text")
        } else {
            m
        }
    })?;
    // a merge key (`<<: *defaults`), as PyYAML, which W&B reads and writes config.yaml with,
    // applies it: only a plain `<<`, not a quoted `'<<'` (an ordinary key to PyYAML)
    let plain_merge = regex::Regex::new(r"(?m)(^|[\s{,\[-])<<[ \t]*:").expect("static pattern");
    if plain_merge.is_match(text) {
        y.apply_merge().map_err(|e| format!("a YAML merge key (`<<`) that cannot be applied: {e}"))?;
    }
    Ok(yaml_to_json(y))
}

fn yaml_to_json(y: yaml_serde::Value) -> Value {
    match y {
        yaml_serde::Value::Null => Value::Null,
        yaml_serde::Value::Bool(b) => Value::Bool(b),
        yaml_serde::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Number(i.into())
            } else if let Some(u) = n.as_u64() {
                Value::Number(u.into())
            } else {
                pylit::float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        yaml_serde::Value::String(s) => Value::String(s),
        yaml_serde::Value::Sequence(items) => Value::Array(items.into_iter().map(yaml_to_json).collect()),
        yaml_serde::Value::Mapping(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                let key = match k {
                    yaml_serde::Value::String(s) => s,
                    other => match yaml_to_json(other) {
                        Value::String(s) => s,
                        v => v.to_string(),
                    },
                };
                out.insert(key, yaml_to_json(v));
            }
            Value::Object(out)
        }
        yaml_serde::Value::Tagged(t) => yaml_to_json(t.value),
    }
}

/// A histogram recovered from a rich summary or history value.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// Bin edges (one more than the counts): `bins` as given, or `min + i·size` for
    /// `packedBins {min, size, count}`.
    pub edges: Vec<Value>,
    /// Counts per bin (`values`).
    pub counts: Vec<Value>,
    /// Why the value is not a histogram W&B writes, when it is not: `values` or the bins
    /// missing or not lists of numbers, edges not one more than the counts, a `packedBins`
    /// count that is not the number of counts. Such a histogram is a violation at its record.
    pub problem: Option<String>,
}

/// What a summary or history value is.
#[derive(Debug, Clone, PartialEq)]
pub enum Rich {
    /// A plain value (number, string, boolean, null, list, object without `_type`).
    Plain,
    /// `{"_type": "histogram", …}`.
    Histogram(Histogram),
    /// Any other `_type` (`image-file`, `table-file`, `html-file`, `graph`, …): the type name.
    Media(String),
}

/// Classifies a value.
pub fn rich(v: &Value) -> Rich {
    let Some(o) = v.as_object() else { return Rich::Plain };
    let Some(t) = o.get("_type").and_then(Value::as_str) else { return Rich::Plain };
    if t != "histogram" {
        return Rich::Media(t.to_string());
    }
    let mut problem = None;
    let mut fail = |m: String| {
        problem.get_or_insert(m);
    };
    let numbers = |v: &[Value]| {
        v.iter()
            .all(|x| x.is_number() || x.as_str().is_some_and(|t| crate::stages::ingest::lenient::special(t).is_some()))
    };
    let counts = match o.get("values") {
        Some(Value::Array(c)) if numbers(c) => c.clone(),
        Some(Value::Array(_)) => {
            fail("`values` holds something other than numbers".into());
            Vec::new()
        }
        Some(other) => {
            fail(format!("`values` must be a list of counts, found {}", crate::stages::ingest::path::describe(other)));
            Vec::new()
        }
        None => {
            fail("no `values` (the counts)".into());
            Vec::new()
        }
    };
    let edges = match (o.get("bins"), o.get("packedBins")) {
        (Some(Value::Array(b)), _) if numbers(b) => b.clone(),
        (Some(b), _) => {
            fail(format!("`bins` must be a list of numbers, found {}", crate::stages::ingest::path::describe(b)));
            Vec::new()
        }
        (None, Some(Value::Object(p))) => {
            let num = |k: &str| p.get(k).and_then(Value::as_f64);
            match (num("min"), num("size")) {
                (Some(min), Some(size)) => {
                    let count = match p.get("count") {
                        None => counts.len() as u64,
                        Some(c) => c.as_u64().unwrap_or_else(|| {
                            fail(format!("`packedBins.count` must be a count, found {c}"));
                            0
                        }),
                    };
                    if count != counts.len() as u64 {
                        fail(format!("`packedBins.count` is {count}, and `values` holds {} counts", counts.len()));
                    }
                    (0..=count).map(|i| pylit::float(min + i as f64 * size)).collect()
                }
                _ => {
                    fail("`packedBins` needs the numbers `min` and `size`".into());
                    Vec::new()
                }
            }
        }
        (None, Some(p)) => {
            fail(format!("`packedBins` must be an object, found {}", crate::stages::ingest::path::describe(p)));
            Vec::new()
        }
        (None, None) => {
            fail("no `bins` or `packedBins` (the bin edges)".into());
            Vec::new()
        }
    };
    if edges.len() != counts.len() + 1 {
        fail(format!(
            "{} bin edges for {} counts; a histogram has one edge more than counts",
            edges.len(),
            counts.len()
        ));
    }
    Rich::Histogram(Histogram { edges, counts, problem })
}

/// A summary split by kind.
#[derive(Debug, Clone, Default)]
pub struct SplitSummary {
    /// Plain values (`_wandb` removed).
    pub plain: Map<String, Value>,
    /// Histograms by key.
    pub histograms: Vec<(String, Histogram)>,
    /// Media references by key: (key, `_type`).
    pub media: Vec<(String, String)>,
}

/// Splits a summary object (case B27): plain values stay; histograms and media references are
/// taken out; the internal `_wandb` key is dropped.
pub fn split_summary(summary: &Map<String, Value>) -> SplitSummary {
    let mut out = SplitSummary::default();
    for (k, v) in summary {
        if k == "_wandb" {
            continue;
        }
        match rich(v) {
            Rich::Plain => {
                out.plain.insert(k.clone(), v.clone());
            }
            Rich::Histogram(h) => out.histograms.push((k.clone(), h)),
            Rich::Media(t) => out.media.push((k.clone(), t)),
        }
    }
    out
}

/// Whether a key names a credential (`wandb_api_key`, `hf_token`, `OPENAI_API_KEY`,
/// `secret`, `password`) and `value` looks like one: 16 characters or more of a token's
/// alphabet, or a W&B config entry's `{"value": …}` that does. A tokenizer's `pad_token`
/// (`"<pad>"`) or a `max_tokens` number is no secret.
pub fn secret_entry(key: &str, value: &Value) -> bool {
    if let Some(inner) = value.as_object().filter(|o| o.len() <= 2).and_then(|o| o.get("value")) {
        return inner.is_string() && secret_entry(key, inner);
    }
    static KEY: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let key_re = KEY.get_or_init(|| {
        regex::Regex::new(
            r"(?i)(?:^|[_./-])(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|token|secret|password|passwd|credentials?)$",
        )
        .expect("static pattern")
    });
    let Value::String(s) = value else { return false };
    // camelCase names a credential as snake_case does: `hubToken` is `hub_Token`
    key_re.is_match(&crate::core::schema::snake_words(key))
        && s.len() >= 16
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'/' | b'=' | b'.'))
}

/// Replaces the named keys of a metadata object (at any depth) by `"REDACTED"` when they hold
/// a non-null value, a key that names a credential when its value looks like one (a config's
/// `wandb_api_key`), and in every other string the credentials it holds (see
/// [`scrub_credentials`]); returns how many values were changed.
pub fn redact(v: &mut Value, keys: &[String]) -> usize {
    let mut n = 0;
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if secret_entry(k, x)
                    && let Some(inner) = x.as_object_mut().and_then(|o| o.get_mut("value"))
                {
                    // a W&B config entry keeps its shape: its value alone is replaced
                    *inner = Value::String("REDACTED".into());
                    n += 1;
                } else if keys.iter().any(|r| r == k) || secret_entry(k, x) {
                    if !x.is_null() {
                        *x = Value::String("REDACTED".into());
                        n += 1;
                    }
                } else {
                    n += redact(x, keys);
                }
            }
        }
        Value::Array(a) => {
            for x in a {
                n += redact(x, keys);
            }
        }
        Value::String(s) => {
            if let Some(clean) = scrub_credentials(s) {
                *s = clean;
                n += 1;
            }
        }
        _ => {}
    }
    n
}

/// Replaces the credentials (see [`scrub_credentials`]) in every text of a `wandb_runs` row
/// but the columns that name the run and its files: config, summary, notes, tags and the
/// others, `config_raw` (JSON text) read and written again when it holds one. `metadata` is
/// left alone: [`redact`] made it. Returns the columns changed, in row order.
pub fn scrub_run_row(m: &mut Map<String, Value>) -> Vec<String> {
    const KEPT: [&str; 8] =
        ["run_id", "entity", "project", "source", "source_files", "created_at", "metadata", "state"];
    let mut changed = Vec::new();
    for (k, v) in m.iter_mut() {
        if KEPT.contains(&k.as_str()) {
            continue;
        }
        let n = if k == "config_raw" {
            match v.as_str().and_then(|t| serde_json::from_str::<Value>(t).ok()) {
                Some(mut parsed) => {
                    let n = redact(&mut parsed, &[]);
                    if n > 0 {
                        *v = Value::String(crate::stages::ingest::convert::json_text(&parsed));
                    }
                    n
                }
                None => redact(v, &[]),
            }
        } else {
            redact(v, &[])
        };
        if n > 0 {
            changed.push(k.clone());
        }
    }
    changed
}

/// `text` with the credentials it holds replaced by `REDACTED`, or `None` when it holds none:
/// the user and password of a URL (`https://alice:ghp_…@github.com/…`, as a git remote
/// holds them; a password may hold `/`, as AWS secret keys do; an SSH URL's user alone,
/// `ssh://git@…`, is no secret and is kept), the values of a URL's query parameters that
/// carry secrets (`?api_key=…`, `&token=…`, `#access_token=…`, `&X-Amz-Signature=…`), a
/// bearer token (`Bearer …`) or basic credentials (`Authorization: Basic …`), a secret set as
/// an environment variable (`WANDB_API_KEY=…`), a JSON Web Token (`eyJ….….…`), and tokens of
/// the forms Hugging Face (`hf_…`), GitHub (`ghp_…`, `github_pat_…`), GitLab (`glpat-…`),
/// OpenAI and Anthropic (`sk-…`), Slack (`xox…-`) and AWS (`AKIA…`) give out. A run's metadata keeps the command
/// line and git remote it ran with, where such tokens end up.
pub fn scrub_credentials(text: &str) -> Option<String> {
    static URL: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    static BARE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    static TOKEN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    static QUERY: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    static ENV: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    static FLAG: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    // a command line's flag that names a secret, and its value of 8 characters or more
    // (`--hub_token hf_…`, `--api-key=…`; `--max_new_tokens 512` names none)
    let flag = FLAG.get_or_init(|| {
        regex::Regex::new(
            r#"(?i)(--[A-Za-z0-9_.-]*(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|token|secret|password|passwd)(?:=|\s+))[^\s"'-][^\s"']{7,}"#,
        )
        .expect("static pattern")
    });
    // an environment variable's secret set on a command line (`WANDB_API_KEY=…`, `HF_TOKEN=…`)
    let env = ENV.get_or_init(|| {
        regex::Regex::new(r#"\b([A-Z][A-Z0-9_]*(?:API_KEY|TOKEN|SECRET|PASSWORD|SECRET_ACCESS_KEY)=)[^\s"']+"#)
            .expect("static pattern")
    });
    // `scheme://user@`, `scheme://user:password@` up to the last `@` before the path (a password
    // may hold `@`), or one whose password holds `/` (never `?` or `#`)
    let url = URL.get_or_init(|| {
        regex::Regex::new(r"([A-Za-z][A-Za-z0-9+.-]*)://([^/\s?#]+|[^/@\s:]*:[^@\s?#]*)@").expect("static pattern")
    });
    // `user:password@host` without a scheme
    let bare = BARE.get_or_init(|| {
        regex::Regex::new(r#"(^|[\s"'=(,;])([^\s:/@"']+):[^\s@/"']+@[A-Za-z0-9-]+\.[A-Za-z0-9.-]*[A-Za-z]"#)
            .expect("static pattern")
    });
    // the prefixes no word has are found inside longer text too; `sk-` and `xox` at a word's start
    let token = TOKEN
        .get_or_init(|| regex::Regex::new(&crate::core::secrets::token_forms_pattern(false)).expect("static pattern"));
    // a query parameter that carries a secret, and a bearer token
    let query = QUERY.get_or_init(|| {
        regex::Regex::new(
            r#"(?i)([?&#](?:api[_-]?key|access[_-]?token|auth[_-]?token|id[_-]?token|refresh[_-]?token|private[_-]?token|token|secret|client[_-]?secret|password|passwd|pwd|key|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token)=)[^&#\s"']+|(\bbearer\s+)[A-Za-z0-9._~+/-]{8,}=*|(\bauthorization:\s*basic\s+)[A-Za-z0-9+/]+=*"#,
        )
        .expect("static pattern")
    });
    let out = url.replace_all(text, |c: &regex::Captures| {
        let user = &c[2];
        // an SSH URL's user without a password is the account logged into (`ssh://git@github.com/…`),
        // never a secret: SSH takes its keys from elsewhere
        let ssh_user = c[1].to_ascii_lowercase().ends_with("ssh") && !user.contains(':');
        // a host, a port and a path that holds `@` (`https://registry:443/@scope/pkg`): no user at all
        let port_then_path = user.split_once(':').is_some_and(|(_, rest)| {
            rest.split_once('/').is_some_and(|(port, _)| port.bytes().all(|b| b.is_ascii_digit()))
        });
        if ssh_user || port_then_path { c[0].to_string() } else { format!("{}://REDACTED@", &c[1]) }
    });
    let out = bare.replace_all(&out, |c: &regex::Captures| {
        // `mailto:alice@example.com` names an address, not a user and password
        if c[2].eq_ignore_ascii_case("mailto") {
            c[0].to_string()
        } else {
            let host = c[0].rsplit_once('@').map_or("", |(_, h)| h);
            format!("{}REDACTED@{host}", &c[1])
        }
    });
    let out = query.replace_all(&out, |c: &regex::Captures| {
        format!("{}REDACTED", c.get(1).or_else(|| c.get(2)).or_else(|| c.get(3)).map_or("", |m| m.as_str()))
    });
    let out = env.replace_all(&out, "${1}REDACTED");
    let out = flag.replace_all(&out, "${1}REDACTED");
    let out = token.replace_all(&out, "REDACTED");
    (out != text).then(|| out.into_owned())
}

/// `text` with the values of its keys that name a credential replaced by `REDACTED`, when it
/// is the JSON text of an object (a config logged as a text: `{"hub_token": "…"}`), and
/// `None` otherwise; the rest of the text is kept as written. Keys are told as
/// [`secret_entry`] tells them, at any depth.
pub fn scrub_json_text(text: &str) -> Option<String> {
    fn secrets(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                for (k, x) in o {
                    match x {
                        Value::String(s) if secret_entry(k, x) => out.push(s.clone()),
                        _ => secrets(x, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| secrets(x, out)),
            _ => {}
        }
    }
    let trimmed = text.trim_start();
    if !trimmed.starts_with('{') {
        return None;
    }
    let parsed: Value = serde_json::from_str(text).ok()?;
    let mut found = Vec::new();
    secrets(&parsed, &mut found);
    let mut out = text.to_string();
    for s in found {
        // the value as JSON writes it, quotes included
        let written = serde_json::to_string(&s).ok()?;
        out = out.replace(&written, "\"REDACTED\"");
    }
    (out != text).then_some(out)
}

/// Looks up `key` in an object: the literal key first, then as a dotted path of nested keys.
pub fn lookup<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if let Some(v) = obj.get(key) {
        return Some(v);
    }
    let mut parts = key.split('.');
    let mut cur = obj.get(parts.next()?)?;
    for p in parts {
        cur = cur.as_object()?.get(p)?;
    }
    Some(cur)
}

/// A batch with credentials replaced, and the rows changed with their names (tags, metrics).
pub type Scrubbed = (arrow::array::RecordBatch, Vec<(usize, String)>);

/// `batch` (rows of `tensorboard`, or of trackio's metrics) with the credentials its logged
/// texts hold replaced by `REDACTED`, and the rows changed (with their names, from column
/// `name_column`: `tag`, `metric`), or `None` when none holds one. A text (`value_text`) is
/// scrubbed as a W&B run's logged texts are ([`scrub_credentials`]), and a text that is the
/// JSON of an object has the values of its keys that name a credential replaced
/// ([`scrub_json_text`]); a value whose name names a credential (`hf_token`, `train/api_key`)
/// and that looks like one is replaced whole. A batch without `value_text` (a schema that
/// leaves it out) is kept.
///
/// Errors: the column is not text (a schema that declares it otherwise).
pub fn scrub_value_texts(
    batch: &arrow::array::RecordBatch,
    name_column: &str,
) -> crate::core::error::Result<Option<Scrubbed>> {
    use arrow::array::{Array, AsArray};
    let Ok(at) = batch.schema().index_of("value_text") else { return Ok(None) };
    let column = batch.column(at);
    let fail = |e: arrow::error::ArrowError| crate::core::error::Error::format("value_text", e);
    let texts = arrow::compute::cast(column, &arrow::datatypes::DataType::Utf8).map_err(fail)?;
    let texts = texts.as_string::<i32>();
    let tags =
        batch.column_by_name(name_column).and_then(|t| arrow::compute::cast(t, &arrow::datatypes::DataType::Utf8).ok());
    let tag = |r: usize| tags.as_ref().map(|t| t.as_string::<i32>()).filter(|t| t.is_valid(r)).map(|t| t.value(r));
    let mut changed = Vec::new();
    let scrubbed: arrow::array::StringArray = (0..texts.len())
        .map(|r| {
            if texts.is_null(r) {
                return None;
            }
            let text = texts.value(r);
            let named = tag(r).is_some_and(|t| secret_entry(t, &Value::String(text.into())));
            let clean = if named {
                Some("REDACTED".to_string())
            } else {
                // a config logged as JSON text, then the credentials any text may hold
                let json = scrub_json_text(text);
                scrub_credentials(json.as_deref().unwrap_or(text)).or(json)
            };
            match clean {
                Some(clean) => {
                    changed.push((r, tag(r).unwrap_or_default().to_string()));
                    Some(clean)
                }
                None => Some(text.to_string()),
            }
        })
        .collect();
    if changed.is_empty() {
        return Ok(None);
    }
    let scrubbed = arrow::compute::cast(&scrubbed, column.data_type()).map_err(fail)?;
    let mut columns = batch.columns().to_vec();
    columns[at] = scrubbed;
    let batch = arrow::array::RecordBatch::try_new(batch.schema(), columns).map_err(fail)?;
    Ok(Some((batch, changed)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn three_config_shapes_normalise_alike() {
        let want = json!({"lr": 0.001, "batch_size": 64});
        let dict = json!({"lr": 0.001, "batch_size": 64, "_wandb": {"cli_version": "0.22.1"}});
        let text = json!("{\"lr\": 0.001, \"batch_size\": 64}");
        let wrapped = json!({"lr": {"desc": null, "value": 0.001}, "batch_size": {"desc": "per device", "value": 64}, "_wandb": {"desc": null, "value": {}}});
        for c in [dict, text, wrapped] {
            assert_eq!(Value::Object(normalise_config(&c).unwrap()), want);
        }
        let y = yaml("wandb_version: 1\n\nlr:\n  desc: null\n  value: 0.001\nschedule:\n  desc: null\n  value:\n    unit: steps\n    value: 100\n").unwrap();
        let n = normalise_config(&y).unwrap();
        assert_eq!(Value::Object(n), json!({"lr": 0.001, "schedule": {"unit": "steps", "value": 100}}));
        assert!(normalise_config(&json!([1])).is_err());
        assert_eq!(Value::Object(normalise_config(&json!("{'a': True}")).unwrap()), json!({"a": true}));
    }

    #[test]
    fn yaml_scalars() {
        let y = yaml("a: 1e-08\nb: 1.0e-06\nc: 0.18.3\nd: .nan\n").unwrap();
        assert_eq!(y["a"], json!(1e-8));
        assert_eq!(y["b"], json!(1e-6));
        assert_eq!(y["c"], json!("0.18.3"));
        assert!(crate::stages::ingest::lenient::special(y["d"].as_str().unwrap()).is_some());
        assert_eq!(yaml("\u{feff}wandb_version: 1\nlr:\n  value: 0.1\n").unwrap()["lr"]["value"], json!(0.1));
    }

    #[test]
    fn yaml_merge_keys_apply_as_pyyaml_applies_them() {
        let y = yaml("base: &c {lr: 0.5, bs: 8}\nmerged:\n  <<: *c\n  bs: 16\n  desc: merged\n").unwrap();
        assert_eq!(y["merged"], json!({"lr": 0.5, "bs": 16, "desc": "merged"}));
        // a quoted '<<' is a key like any other, as PyYAML's yaml.dump writes one
        assert_eq!(yaml("'<<': 5\n").unwrap(), json!({"<<": 5}));
        let e = yaml("big: 123456789012345678901234567890\n").unwrap_err();
        assert!(e.contains("an integer beyond 64 bits"), "{e}");
        let e = yaml("a: 1\n---\nb: 2\n").unwrap_err();
        assert!(e.contains("more than one YAML document"), "{e}");
    }

    #[test]
    fn summaries_split_rich_values() {
        let s = json!({"loss": 0.31, "_wandb": {"runtime": 1},
            "p": {"_type": "histogram", "values": [3, 5, 2], "packedBins": {"min": 0.0, "size": 0.1, "count": 3}},
            "img": {"_type": "image-file", "path": "x.png"}});
        let sp = split_summary(s.as_object().unwrap());
        assert_eq!(Value::Object(sp.plain), json!({"loss": 0.31}));
        assert_eq!(sp.histograms[0].1.edges.len(), 4);
        assert!((sp.histograms[0].1.edges[3].as_f64().unwrap() - 0.3).abs() < 1e-12);
        assert_eq!(sp.media, vec![("img".to_string(), "image-file".to_string())]);
    }

    #[test]
    fn redaction_and_lookup() {
        let mut m = json!({"email": "a@b.c", "git": {"email": null}, "host": "h"});
        assert_eq!(redact(&mut m, &["email".into()]), 1);
        assert_eq!(m["email"], "REDACTED");
        // credentials in any string: a git remote's user and password, tokens in arguments
        let mut m = json!({
            "git": {"remote": "https://alice:ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/a/b.git"},
            "args": ["--hf_token", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "--lr=0.1", "--key=sk-proj-abcdefghijklmnopqrstuv"],
            "program": "https://github.com/a/b and hf_short"
        });
        assert_eq!(redact(&mut m, &[]), 3);
        assert_eq!(m["git"]["remote"], "https://REDACTED@github.com/a/b.git");
        assert_eq!(m["args"], json!(["--hf_token", "REDACTED", "--lr=0.1", "--key=REDACTED"]));
        assert_eq!(m["program"], "https://github.com/a/b and hf_short");
        // inside longer text, and a user and password without a scheme
        assert_eq!(
            scrub_credentials("xxhf_abcdefghijklmnopqrstuvwxyz123456 user:pass@host.com, git@github.com:a/b.git")
                .as_deref(),
            Some("xxREDACTED REDACTED@host.com, git@github.com:a/b.git")
        );
        assert_eq!(scrub_credentials("task-abcdefghijklmnopqrstuvwxyz and mailto-free text"), None);
        // a key that names a credential, when its value looks like one; a W&B entry's shape kept
        let mut c = json!({
            "wandb_api_key": "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
            "hf_token": {"value": "hf_ANOTHERSECRETabcdefghijklmn", "desc": null},
            "OPENAI_API_KEY": "sk-abc", "eos_token": "<|endoftext|>", "pad_token": "[PAD]",
            "max_new_tokens": 512, "tokenizer_name": "Qwen/Qwen3-8B-Instruct-2507-FP8", "token": null
        });
        assert_eq!(redact(&mut c, &[]), 2);
        assert_eq!(c["wandb_api_key"], "REDACTED");
        assert_eq!(c["hf_token"], json!({"value": "REDACTED", "desc": null}));
        assert_eq!(c["OPENAI_API_KEY"], "sk-abc");
        assert_eq!(c["eos_token"], "<|endoftext|>");
        assert_eq!(c["tokenizer_name"], "Qwen/Qwen3-8B-Instruct-2507-FP8");
        // a name that starts as an OpenAI key does, without a key's run of random characters
        assert_eq!(scrub_credentials("sk-learn-baseline-experiment-01"), None);
        // a Hugging Face token of 20 characters or more after its prefix, in any text
        assert_eq!(scrub_credentials("key hf_HISTSECRETabcdefghij").as_deref(), Some("key REDACTED"));
        // a command line's flags that name a secret; other flags keep their values
        assert_eq!(
            scrub_credentials("train.py --api_key 0123456789abcdef --hub-token=s3cr3tvalue --max_new_tokens 51234567")
                .as_deref(),
            Some("train.py --api_key REDACTED --hub-token=REDACTED --max_new_tokens 51234567")
        );
        assert_eq!(scrub_credentials("--token short --password --lr 1"), None);
        // a config logged as JSON text: its secret entries, the text otherwise as written
        assert_eq!(
            scrub_json_text(r#"{"a": {"hub_token": "abcdefgh12345678"}, "pad_token": "<pad>", "lr": 1}"#).as_deref(),
            Some(r#"{"a": {"hub_token": "REDACTED"}, "pad_token": "<pad>", "lr": 1}"#)
        );
        assert_eq!(scrub_json_text("not json {"), None);
        assert!(secret_entry("train/password", &json!("0123456789abcdefgh")));
        // camelCase as snake_case; a word that only ends in one is none
        assert!(secret_entry("hubToken", &json!("abcdefghijklmnopqrstuvwxyz123456")));
        assert!(secret_entry("openaiAPIKey", &json!("abcdefghijklmnopqrstuvwxyz123456")));
        assert!(!secret_entry("maxtoken", &json!("abcdefghijklmnopqrstuvwxyz123456")));
        // a secret with `/` (AWS) or `@` in it, secrets in a query string or a fragment,
        // bearer tokens, basic credentials, JWTs and secrets set as environment variables
        let scrubbed = [
            ("s3://AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY@bucket/x", "s3://REDACTED@bucket/x"),
            ("https://bob:pa/ss@host.example/g", "https://REDACTED@host.example/g"),
            ("https://user:p@ss@host.com/x", "https://REDACTED@host.com/x"),
            (
                "https://api.example.com/x?api_key=abcdef0123&page=2&Token=zz#top",
                "https://api.example.com/x?api_key=REDACTED&page=2&Token=REDACTED#top",
            ),
            (
                "https://g.com/api?private_token=GL1 https://x.com/cb#access_token=FR&state=1",
                "https://g.com/api?private_token=REDACTED https://x.com/cb#access_token=REDACTED&state=1",
            ),
            ("Authorization: Bearer abcdefghijklmnop.qrs", "Authorization: Bearer REDACTED"),
            (
                "Authorization: Basic dXNlcjpwYXNzd29yZA== and a Basic configuration",
                "Authorization: Basic REDACTED and a Basic configuration",
            ),
            ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJlMTIz end", "jwt REDACTED end"),
            (
                "WANDB_API_KEY=0123456789abcdef python train.py HF_TOKEN=x1 MAX_TOKENS=5",
                "WANDB_API_KEY=REDACTED python train.py HF_TOKEN=REDACTED MAX_TOKENS=5",
            ),
            ("AWS_SECRET_ACCESS_KEY=wJalr/K7+x aws s3 ls", "AWS_SECRET_ACCESS_KEY=REDACTED aws s3 ls"),
        ];
        for (text, want) in scrubbed {
            assert_eq!(scrub_credentials(text).as_deref(), Some(want), "{text}");
        }
        // no user and password in these
        for kept in ["mailto:alice@example.com", "time 12:30@home", "ckpt epoch:3@step:100"] {
            assert_eq!(scrub_credentials(kept), None, "{kept}");
        }
        // no user in these: a port then a path that holds `@`, a query without secrets
        for kept in ["https://registry.npmjs.org:443/@scope/pkg", "https://host/a?page=2&q=x@y", "https://host:8080/p"]
        {
            assert_eq!(scrub_credentials(kept), None, "{kept}");
        }
        // an SSH URL's user alone is no secret; with a password, or over HTTPS, it may be one
        assert_eq!(scrub_credentials("ssh://git@github.com/a/b.git and git+ssh://git@host/c"), None);
        assert_eq!(
            scrub_credentials("ssh://git:pw@host/a https://ghtoken@github.com/b").as_deref(),
            Some("ssh://REDACTED@host/a https://REDACTED@github.com/b")
        );
        let o = json!({"a.b": 1, "c": {"d": 2}});
        assert_eq!(lookup(o.as_object().unwrap(), "a.b"), Some(&json!(1)));
        assert_eq!(lookup(o.as_object().unwrap(), "c.d"), Some(&json!(2)));
    }
}
