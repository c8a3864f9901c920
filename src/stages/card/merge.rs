//! The dataset card at the root of a shared repo: several releases' configs in one card.
//!
//! In: the card the repo holds (`README.md` at its root, if any) and a release's own card. Out:
//! the card with the release written in ([`merge`]), and a card cut down to one release's
//! configs ([`restrict`]), which `verify hf://` checks against that release's data.
//!
//! What a merge writes (after huggingface/datasets #7600, where two `push_to_hub` of
//! different configs overwrote each other's card):
//!
//! ```text
//! configs, dataset_info   the release's entries replace those of the same config_name (and
//!                         the configs an earlier version of the release had); others stay
//! other keys              kept; the release's keys are added when missing (and win when
//!                         every config of the card is the release's own); tags are joined
//! body                    the release's text in a block between two HTML comments
//!                         (`<!-- runpack:begin <release> -->` … `<!-- runpack:end <release> -->`),
//!                         replaced in place on the next publish; other text stays
//! ```
//!
//! A release published into a folder of the repo (`--path-in-repo runs/a`) is written into
//! the root card with its config names prefixed by the folder ([`config_name`]: table
//! `metrics` in `runs/a` is config `runs-a-metrics`) and its `data_files` under the folder, so
//! that the root card names files that exist and two folders' tables of one name do not clash.
//! A release alone at the root gets its own card byte for byte.

use std::collections::{BTreeMap, BTreeSet};

use yaml_serde::{Mapping, Value as Yaml};

use crate::core::error::{Error, Result};

/// The name of a table's config in the repo's root card: the table's name for a release at
/// the root, else the folder (its `/` made `-`), a `-` and the table's name (`runs/a`,
/// `metrics` → `runs-a-metrics`). `datasets` refuses `/` in config names.
pub fn config_name(folder: &str, table: &str) -> String {
    if folder.is_empty() { table.to_string() } else { format!("{}-{table}", folder.replace('/', "-")) }
}

/// A card split into its front matter (a mapping; empty without one) and its body.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    /// The YAML front matter.
    pub meta: Mapping,
    /// Everything after the front matter.
    pub body: String,
}

impl Card {
    /// Splits a card's text.
    ///
    /// Errors: [`Error::Config`] naming `what` and the line when the front matter is not a
    /// YAML mapping.
    pub fn parse(text: &str, what: &str) -> Result<Card> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let Some(fm) = crate::stages::card::front_matter(text) else {
            return Ok(Card { meta: Mapping::new(), body: text.to_string() });
        };
        // the body starts after the closing `---` line
        let start = fm.as_ptr() as usize - text.as_ptr() as usize + fm.len();
        let rest = &text[start..];
        let rest = rest.strip_prefix("---").unwrap_or(rest);
        let body = rest.strip_prefix("\r\n").or_else(|| rest.strip_prefix('\n')).unwrap_or(rest).to_string();
        let value: Yaml = yaml_serde::from_str(fm).map_err(|e| {
            let place = crate::stages::card::yaml_error_place(fm, &e)
                .map(|(l, c)| format!(":{}:{c}", l + 1))
                .unwrap_or_default();
            Error::config(format!("{what}{place}"), format!("the card's front matter is not valid YAML: {e}"))
        })?;
        match value {
            Yaml::Null => Ok(Card { meta: Mapping::new(), body }),
            Yaml::Mapping(meta) => Ok(Card { meta, body }),
            _ => Err(Error::config(what, "the card's front matter is not a YAML mapping")),
        }
    }

    /// The card's text: `---`, the front matter, `---`, a blank line, the body.
    ///
    /// Errors: [`Error::Format`] when the front matter cannot be written as YAML.
    pub fn render(&self) -> Result<String> {
        let yaml = yaml_serde::to_string(&Yaml::Mapping(self.meta.clone())).map_err(|e| Error::format("card", e))?;
        let yaml = crate::stages::card::quote_yaml11_ambiguous(&yaml);
        Ok(format!("---\n{yaml}---\n\n{}\n", self.body.trim()))
    }

    /// The `configs` entries (empty when the card has none).
    fn configs(&self) -> Vec<Yaml> {
        self.meta.get("configs").and_then(|c| c.as_sequence()).cloned().unwrap_or_default()
    }

    /// The `dataset_info` entries: a single mapping is one entry.
    fn infos(&self) -> Vec<Yaml> {
        match self.meta.get("dataset_info") {
            Some(Yaml::Sequence(s)) => s.clone(),
            Some(m @ Yaml::Mapping(_)) => vec![m.clone()],
            _ => Vec::new(),
        }
    }

    /// The names of the card's configs, in order.
    pub fn config_names(&self) -> Vec<String> {
        self.configs().iter().map(entry_name).collect()
    }
}

/// The config an entry of `configs` or `dataset_info` is for (`default` when it names none,
/// as `datasets` reads it).
fn entry_name(v: &Yaml) -> String {
    v.get("config_name").and_then(|n| n.as_str()).unwrap_or("default").to_string()
}

fn truthy(v: Option<&Yaml>) -> bool {
    matches!(v, Some(Yaml::Bool(true)))
}

/// `data_files` (a path, a list of paths, or a list of `{split, path}`) with `f` applied to
/// every path; `None` when `f` refuses one.
fn map_paths(v: &Yaml, f: &dyn Fn(&str) -> Option<String>) -> Option<Yaml> {
    Some(match v {
        Yaml::String(s) => Yaml::String(f(s)?),
        Yaml::Sequence(items) => Yaml::Sequence(
            items
                .iter()
                .map(|it| match it {
                    Yaml::Mapping(m) => {
                        let mut m = m.clone();
                        if let Some(path) = m.get("path").cloned() {
                            m.insert("path".into(), map_paths(&path, f)?);
                        }
                        Some(Yaml::Mapping(m))
                    }
                    other => map_paths(other, f),
                })
                .collect::<Option<Vec<_>>>()?,
        ),
        other => other.clone(),
    })
}

/// `data_files` with every path under `folder`.
fn prefix_paths(v: &Yaml, folder: &str) -> Yaml {
    map_paths(v, &|s| Some(format!("{folder}/{s}"))).expect("every path takes a prefix")
}

/// `data_files` with `folder/` taken off the front of every path; `None` when a path is not
/// under `folder`.
fn strip_paths(v: &Yaml, folder: &str) -> Option<Yaml> {
    let want = format!("{folder}/");
    map_paths(v, &|s| s.strip_prefix(&want).map(str::to_string))
}

/// A release's card as the repo's root card holds it: config names by [`config_name`],
/// `data_files` (and `data_dir`) under `folder`. The card itself for a release at the root.
///
/// Errors: as [`Card::parse`].
pub fn for_root(release_card: &str, folder: &str) -> Result<Card> {
    let mut card = Card::parse(release_card, "README.md")?;
    if folder.is_empty() {
        return Ok(card);
    }
    let rename = |v: &Yaml| -> Yaml {
        let mut v = v.clone();
        if let Yaml::Mapping(m) = &mut v {
            let name = config_name(folder, &entry_name(&Yaml::Mapping(m.clone())));
            m.insert("config_name".into(), name.into());
            if let Some(files) = m.get("data_files").cloned() {
                m.insert("data_files".into(), prefix_paths(&files, folder));
            }
            if let Some(Yaml::String(d)) = m.get("data_dir").cloned() {
                m.insert("data_dir".into(), format!("{folder}/{d}").into());
            }
        }
        v
    };
    if card.meta.contains_key("configs") {
        let configs: Vec<Yaml> = card.configs().iter().map(rename).collect();
        card.meta.insert("configs".into(), Yaml::Sequence(configs));
    }
    if card.meta.contains_key("dataset_info") {
        let infos: Vec<Yaml> = card.infos().iter().map(rename).collect();
        card.meta.insert("dataset_info".into(), Yaml::Sequence(infos));
    }
    Ok(card)
}

/// The card `card` cut down to the configs of `tables` (root config name → table name): those
/// configs and `dataset_info` entries alone, renamed to the table names, their `data_files`
/// relative to `folder` again; other keys and the body as they are. `None` when the card
/// holds no config of these tables.
///
/// Errors: as [`Card::parse`].
pub fn restrict(card: &str, tables: &BTreeMap<String, String>, folder: &str) -> Result<Option<String>> {
    let mut c = Card::parse(card, "README.md")?;
    let back = |v: &Yaml| -> Option<Yaml> {
        let name = entry_name(v);
        let table = tables.get(&name)?;
        let mut v = v.clone();
        if let Yaml::Mapping(m) = &mut v {
            m.insert("config_name".into(), table.as_str().into());
            if !folder.is_empty() {
                if let Some(files) = m.get("data_files").cloned() {
                    // a path outside the folder stays as it is: it then names no file of the release
                    let stripped = strip_paths(&files, folder).unwrap_or(files);
                    m.insert("data_files".into(), stripped);
                }
                if let Some(Yaml::String(d)) = m.get("data_dir").cloned()
                    && let Some(rest) = d.strip_prefix(&format!("{folder}/"))
                {
                    m.insert("data_dir".into(), rest.into());
                }
            }
        }
        Some(v)
    };
    let configs: Vec<Yaml> = c.configs().iter().filter_map(back).collect();
    if configs.is_empty() {
        return Ok(None);
    }
    let infos: Vec<Yaml> = c.infos().iter().filter_map(back).collect();
    c.meta.insert("configs".into(), Yaml::Sequence(configs));
    if c.meta.contains_key("dataset_info") {
        c.meta.insert("dataset_info".into(), Yaml::Sequence(infos));
    }
    c.render().map(Some)
}

/// A release being written into the root card.
#[derive(Debug, Clone)]
pub struct Contribution<'a> {
    /// The release's own card (its `README.md`).
    pub card: &'a str,
    /// The release's name.
    pub release: &'a str,
    /// Its folder in the repo (empty: the root).
    pub folder: &'a str,
    /// Root config names this publish owns besides its own: the configs of an earlier version
    /// of the release in the same folder, which a new version without that table removes.
    pub replaces: BTreeSet<String>,
}

/// The key of a release's block in the body: its name, and its folder when it has one.
fn block_key(release: &str, folder: &str) -> String {
    if folder.is_empty() { release.to_string() } else { format!("{release} in {folder}") }
}

const BEGIN: &str = "<!-- runpack:begin ";
const END: &str = "<!-- runpack:end ";

/// A piece of a card's body: text, or a release's block.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Block { key: String, text: String },
}

/// The pieces of a body; an unclosed block runs to the end.
fn pieces(body: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find(BEGIN) {
        let after = &rest[i + BEGIN.len()..];
        let Some(close) = after.find("-->") else { break };
        let key = after[..close].trim().to_string();
        let inner_start = &after[close + 3..];
        let inner_start = inner_start.strip_prefix('\n').unwrap_or(inner_start);
        let end_marker = format!("{END}{key} -->");
        out.push(Piece::Text(rest[..i].to_string()));
        match inner_start.find(&end_marker) {
            Some(j) => {
                out.push(Piece::Block { key, text: inner_start[..j].trim_end().to_string() });
                let tail = &inner_start[j + end_marker.len()..];
                rest = tail.strip_prefix('\n').unwrap_or(tail);
            }
            None => {
                out.push(Piece::Block { key, text: inner_start.trim_end().to_string() });
                rest = "";
            }
        }
    }
    out.push(Piece::Text(rest.to_string()));
    out.retain(|p| !matches!(p, Piece::Text(t) if t.is_empty()));
    out
}

fn render_pieces(pieces: &[Piece]) -> String {
    let mut out = String::new();
    for p in pieces {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Block { key, text } => {
                if !out.is_empty() && !out.ends_with("\n\n") {
                    out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
                }
                out.push_str(&format!("{BEGIN}{key} -->\n{}\n{END}{key} -->\n", text.trim()));
            }
        }
    }
    out
}

/// Writes `release` into the repo's root card `remote` (see the module docs). `remote_owner`
/// names the release whose card `remote` is byte for byte, when it is one published at the
/// root (its body is then that release's block). Without a remote card, a release at the root
/// gets its own card unchanged; so does a release whose earlier version's card is all the
/// remote card holds.
///
/// Errors: [`Error::Config`] when either card's front matter is not a YAML mapping (the
/// remote card is then left alone: nothing is merged into a card that cannot be read).
pub fn merge(remote: Option<&str>, release: &Contribution<'_>, remote_owner: Option<&str>) -> Result<String> {
    let ours = for_root(release.card, release.folder)?;
    let Some(remote) = remote else {
        return if release.folder.is_empty() {
            Ok(release.card.to_string())
        } else {
            let body = render_pieces(&[Piece::Block {
                key: block_key(release.release, release.folder),
                text: ours.body.clone(),
            }]);
            Card { meta: ours.meta.clone(), body }.render()
        };
    };
    let theirs = Card::parse(remote, "README.md at the repo root")?;
    let our_names: BTreeSet<String> = ours.config_names().into_iter().collect();
    let owned: BTreeSet<&String> = our_names.iter().chain(&release.replaces).collect();
    let foreign: Vec<Yaml> = theirs.configs().into_iter().filter(|c| !owned.contains(&entry_name(c))).collect();
    let shared = !foreign.is_empty();

    // configs and dataset_info: ours in place of the same names, removed ones dropped
    let merge_list = |remote: Vec<Yaml>, mine: Vec<Yaml>, strip_default: bool| -> Vec<Yaml> {
        let mut mine: Vec<Yaml> = mine
            .into_iter()
            .map(|mut v| {
                if strip_default && let Yaml::Mapping(m) = &mut v {
                    m.shift_remove("default");
                }
                v
            })
            .collect();
        let mut out = Vec::new();
        for r in remote {
            let name = entry_name(&r);
            if let Some(i) = mine.iter().position(|m| entry_name(m) == name) {
                out.push(mine.remove(i));
            } else if !owned.contains(&name) {
                out.push(r);
            }
        }
        out.extend(mine);
        out
    };
    let other_default = foreign.iter().any(|c| truthy(c.get("default")));
    let mut meta = theirs.meta.clone();
    for (k, v) in &ours.meta {
        match k.as_str() {
            Some("configs" | "dataset_info") => {}
            Some("tags") => {
                let mut tags: Vec<Yaml> = meta.get("tags").and_then(|t| t.as_sequence()).cloned().unwrap_or_default();
                for t in v.as_sequence().into_iter().flatten() {
                    if !tags.contains(t) {
                        tags.push(t.clone());
                    }
                }
                meta.insert(k.clone(), Yaml::Sequence(tags));
            }
            // a card shared with other releases keeps what it says of the whole repo
            _ if shared && meta.contains_key(k) => {}
            _ => {
                meta.insert(k.clone(), v.clone());
            }
        }
    }
    let configs = merge_list(theirs.configs(), ours.configs(), other_default);
    let infos = merge_list(theirs.infos(), ours.infos(), false);
    for (key, list) in [("configs", configs), ("dataset_info", infos)] {
        if list.is_empty() {
            meta.shift_remove(key);
        } else {
            meta.insert(key.into(), Yaml::Sequence(list));
        }
    }

    // the body: our block in place of its earlier version, or added at the end
    let key = block_key(release.release, release.folder);
    let mut body = pieces(&theirs.body);
    if let Some(owner) = remote_owner
        && !body.iter().any(|p| matches!(p, Piece::Block { .. }))
    {
        body = vec![Piece::Block { key: block_key(owner, ""), text: theirs.body.trim_end().to_string() }];
    }
    let mine = Piece::Block { key: key.clone(), text: ours.body.trim_end().to_string() };
    match body.iter().position(|p| matches!(p, Piece::Block { key: k, .. } if *k == key)) {
        Some(i) => body[i] = mine,
        None => body.push(mine),
    }
    let alone = body.iter().all(|p| match p {
        Piece::Text(t) => t.trim().is_empty(),
        Piece::Block { key: k, .. } => *k == key,
    });
    if alone && release.folder.is_empty() {
        // the release's own card, when the merge added nothing to it
        if meta == ours.meta {
            return Ok(release.card.to_string());
        }
        return Card { meta, body: ours.body.clone() }.render();
    }
    Card { meta, body: render_pieces(&body) }.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "---\nlicense: mit\ntags:\n- tabular\nconfigs:\n- config_name: a\n  default: true\n  data_files:\n  - split: train\n    path: data/a.parquet\ndataset_info:\n- config_name: a\n  splits:\n  - name: train\n    num_examples: 3\n---\n\n# A\n\nRows of a.\n";
    const B: &str = "---\nlicense: apache-2.0\ntags:\n- tabular\n- rl\nconfigs:\n- config_name: b\n  default: true\n  data_files:\n  - split: train\n    path: data/b-*-of-*.parquet\ndataset_info:\n- config_name: b\n  splits:\n  - name: train\n    num_examples: 5\n---\n\n# B\n\nRows of b.\n";

    fn contribution<'a>(card: &'a str, release: &'a str, folder: &'a str) -> Contribution<'a> {
        Contribution { card, release, folder, replaces: BTreeSet::new() }
    }

    #[test]
    fn a_release_alone_keeps_its_card_byte_for_byte() {
        assert_eq!(merge(None, &contribution(A, "a", ""), None).unwrap(), A);
        // republished over its own earlier card
        assert_eq!(merge(Some(A), &contribution(A, "a", ""), Some("a")).unwrap(), A);
    }

    #[test]
    fn two_releases_at_the_root_share_the_card() {
        let merged = merge(Some(A), &contribution(B, "b", ""), Some("a")).unwrap();
        let c = Card::parse(&merged, "t").unwrap();
        assert_eq!(c.config_names(), vec!["a", "b"]);
        // one default: the card's
        let configs = c.configs();
        assert!(truthy(configs[0].get("default")) && configs[1].get("default").is_none(), "{merged}");
        assert_eq!(c.infos().len(), 2);
        // the card's own keys stay, tags are joined
        assert_eq!(c.meta.get("license").and_then(|l| l.as_str()), Some("mit"));
        let tags: Vec<&str> = c.meta["tags"].as_sequence().unwrap().iter().filter_map(|t| t.as_str()).collect();
        assert_eq!(tags, vec!["tabular", "rl"]);
        assert!(merged.contains("<!-- runpack:begin a -->\n# A\n\nRows of a.\n<!-- runpack:end a -->"), "{merged}");
        assert!(merged.contains("<!-- runpack:begin b -->\n# B\n\nRows of b.\n<!-- runpack:end b -->"), "{merged}");
        // b again, changed: its block and config replaced in place, a's kept
        let b2 = B.replace("num_examples: 5", "num_examples: 6").replace("Rows of b.", "Rows of b, v2.");
        let again = merge(Some(&merged), &contribution(&b2, "b", ""), None).unwrap();
        assert!(again.contains("Rows of b, v2.") && !again.contains("Rows of b.\n") && again.contains("Rows of a."));
        let c = Card::parse(&again, "t").unwrap();
        assert_eq!(c.config_names(), vec!["a", "b"]);
        assert_eq!(c.infos()[1]["splits"][0]["num_examples"].as_u64(), Some(6));
        // a, republished: its block replaced, b's untouched
        let a2 = A.replace("Rows of a.", "Rows of a, v2.");
        let third = merge(Some(&again), &contribution(&a2, "a", ""), None).unwrap();
        assert!(
            third.contains("Rows of a, v2.") && third.contains("Rows of b, v2.") && !third.contains("Rows of a.\n")
        );
    }

    #[test]
    fn a_folder_release_is_prefixed_and_named_by_its_folder() {
        let merged = merge(None, &contribution(A, "a", "runs/a"), None).unwrap();
        let c = Card::parse(&merged, "t").unwrap();
        assert_eq!(c.config_names(), vec!["runs-a-a"]);
        assert_eq!(c.configs()[0]["data_files"][0]["path"].as_str(), Some("runs/a/data/a.parquet"));
        assert_eq!(c.infos()[0]["config_name"].as_str(), Some("runs-a-a"));
        let both = merge(Some(&merged), &contribution(B, "b", "runs/b"), None).unwrap();
        let c = Card::parse(&both, "t").unwrap();
        assert_eq!(c.config_names(), vec!["runs-a-a", "runs-b-b"]);
        assert_eq!(c.configs()[1]["data_files"][0]["path"].as_str(), Some("runs/b/data/b-*-of-*.parquet"));
        // cut down to b's configs, b's card again (paths inside its folder)
        let tables = BTreeMap::from([("runs-b-b".to_string(), "b".to_string())]);
        let view = restrict(&both, &tables, "runs/b").unwrap().unwrap();
        let v = Card::parse(&view, "t").unwrap();
        assert_eq!(v.config_names(), vec!["b"]);
        assert_eq!(v.configs()[0]["data_files"][0]["path"].as_str(), Some("data/b-*-of-*.parquet"));
        assert_eq!(v.infos().len(), 1);
        let none = BTreeMap::from([("c".to_string(), "c".to_string())]);
        assert!(restrict(&both, &none, "").unwrap().is_none());
    }

    #[test]
    fn a_table_dropped_by_a_new_version_leaves_the_card() {
        let merged = merge(Some(A), &contribution(B, "b", ""), Some("a")).unwrap();
        let mut next = contribution(B, "b", "");
        next.replaces.insert("old".into());
        let with_old = merged
            .replace("- config_name: b\n", "- config_name: old\n  data_files: data/old.parquet\n- config_name: b\n");
        let out = merge(Some(&with_old), &next, None).unwrap();
        assert_eq!(Card::parse(&out, "t").unwrap().config_names(), vec!["a", "b"]);
    }

    #[test]
    fn a_card_that_is_no_mapping_is_refused() {
        let e = merge(Some("---\n- a\n---\nx\n"), &contribution(A, "a", ""), None).unwrap_err().to_string();
        assert!(e.contains("not a YAML mapping"), "{e}");
    }
}
