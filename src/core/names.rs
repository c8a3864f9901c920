//! Names runpack checks: split names that the `datasets` library loads and that can name the
//! split's files on every filesystem, and relative paths as the file system resolves them.

/// A relative path with its empty and `.` parts dropped, as the file system resolves it:
/// `./raw/m.jsonl`, `raw//m.jsonl` and `raw/./m.jsonl` are `raw/m.jsonl`. Empty when nothing
/// is left (`./`); `..` parts are kept, for the caller to refuse.
pub fn resolved_path(path: &str) -> String {
    path.split('/').filter(|p| !p.is_empty() && *p != ".").collect::<Vec<_>>().join("/")
}

/// The order of relative paths part by part, as a sorted walk of the folders reads them: a
/// folder's files before those of a folder whose name extends its name (`run-x/a.wandb`
/// before `run-x-1/a.wandb`, which bytes alone would put first, `-` coming before `/`), and
/// the digits of a part by their number (`run-x-2` before `run-x-10`, `checkpoint-50` before
/// `checkpoint-100`). The order in which a source reads its files, and in which the keep
/// rules take its rows.
pub fn path_order(a: &str, b: &str) -> std::cmp::Ordering {
    let mut x = a.split('/');
    let mut y = b.split('/');
    loop {
        match (x.next(), y.next()) {
            (None, None) => return std::cmp::Ordering::Equal,
            (None, Some(_)) => return std::cmp::Ordering::Less,
            (Some(_), None) => return std::cmp::Ordering::Greater,
            (Some(p), Some(q)) => match natural_order(p, q) {
                std::cmp::Ordering::Equal => {}
                other => return other,
            },
        }
    }
}

/// Two names in order, runs of digits compared by the number they write (leading zeros
/// aside, then as written), other text by its bytes.
fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let run = |s: &[u8], k: usize| s[k..].iter().take_while(|c| c.is_ascii_digit()).count();
            let (n, m) = (run(a, i), run(b, j));
            let (p, q) = (&a[i..i + n], &b[j..j + m]);
            let strip = |d: &[u8]| -> usize { d.iter().take_while(|c| **c == b'0').count() };
            let (p0, q0) = (&p[strip(p)..], &q[strip(q)..]);
            let by_number = p0.len().cmp(&q0.len()).then_with(|| p0.cmp(q0));
            match by_number.then_with(|| p.cmp(q)) {
                Ordering::Equal => {}
                other => return other,
            }
            (i, j) = (i + n, j + m);
        } else {
            match a[i].cmp(&b[j]) {
                Ordering::Equal => {}
                other => return other,
            }
            (i, j) = (i + 1, j + 1);
        }
    }
    (a.len() - i).cmp(&(b.len() - j))
}

/// Split names `datasets` can load: `^\w+(\.\w+)*$` over the whole name, and not `all`
/// (the `datasets` library's keyword for every split together).
pub fn valid_split_name(name: &str) -> bool {
    !name.is_empty()
        && name != "all"
        && name.split('.').all(|part| !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_'))
}

/// A split name the Hub would accept, suggested for an invalid one (`all`, which the
/// `datasets` library keeps for every split together, becomes `all_`; a name of blanks,
/// `train`).
pub fn suggest_split_name(name: &str) -> String {
    let s: String =
        name.trim().chars().map(|c| if c.is_alphanumeric() || c == '_' || c == '.' { c } else { '_' }).collect();
    let s = s.trim_matches('.').to_string();
    match s.as_str() {
        "all" => "all_".into(),
        // nothing of the name is left: one of the datasets library's usual names
        "" => "train".into(),
        _ => s,
    }
}

/// Why a row's split name (`None`: null) cannot be a split of a table whose declared splits
/// are `allowed` (empty: any name the `datasets` library loads), or `None` when it can.
pub fn split_problem(name: Option<&str>, allowed: &[String]) -> Option<String> {
    match name {
        None => Some("the split column is null".to_string()),
        Some("") => Some("the split column is the empty string, which names no split".to_string()),
        Some(name) if !crate::core::names::valid_split_name(name) => Some(format!(
            "split name {name:?} cannot be loaded by `datasets` (names must match ^\\w+(\\.\\w+)*$); use {:?}",
            crate::core::names::suggest_split_name(name)
        )),
        Some(name) if !allowed.is_empty() && !allowed.iter().any(|a| a == name) => {
            Some(format!("split {name:?} is not one of the table's splits ({})", allowed.join(", ")))
        }
        Some(name) => split_file_problem(name),
    }
}

/// Longest split name, in bytes: its files are named after it (`data/<table>/<split>.parquet`,
/// with a shard suffix while they are written), and a file name holds 255 bytes.
pub const MAX_SPLIT_NAME_BYTES: usize = 200;

/// Why a split name that `datasets` loads cannot name the split's files everywhere: a name
/// Windows reserves for a device (`con`, `nul`, `com1`, … with any extension), or one longer
/// than [`MAX_SPLIT_NAME_BYTES`]; `None` when it can.
pub fn split_file_problem(name: &str) -> Option<String> {
    let (stem, rest) = name.split_once('.').map_or((name, ""), |(s, r)| (s, r));
    if windows_device(name) {
        let dot = if rest.is_empty() { "" } else { "." };
        return Some(format!(
            "split name {name:?} names its files {name}.parquet and {name}.jsonl, which Windows reserves for a \
             device (`{stem}`, whatever follows the dot; a clone of the dataset fails there); use {:?}",
            format!("{stem}_{dot}{rest}")
        ));
    }
    if name.len() > MAX_SPLIT_NAME_BYTES {
        return Some(format!(
            "split name of {} bytes (at most {MAX_SPLIT_NAME_BYTES}: its files are named after it)",
            name.len()
        ));
    }
    None
}

/// Whether Windows reserves a file or folder `name` for a device: `con`, `prn`, `aux`, `nul`,
/// `com0`–`com9`, `lpt0`–`lpt9` (and the superscript digits), in any case, whatever follows
/// the first dot.
pub fn windows_device(name: &str) -> bool {
    let stem = name.split_once('.').map_or(name, |(s, _)| s).to_lowercase();
    ["con", "prn", "aux", "nul"].contains(&stem.as_str())
        || ["com", "lpt"].iter().any(|p| {
            stem.strip_prefix(p).is_some_and(|d| {
                let mut c = d.chars();
                matches!((c.next(), c.next()), (Some('0'..='9' | '¹' | '²' | '³'), None))
            })
        })
}

/// `path` relative to `root`, with `/` between its parts (`path` itself when it is not under
/// `root`); bytes of a name that are not UTF-8 shown as U+FFFD.
pub fn relative_path(root: &std::path::Path, path: &std::path::Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_ordered_part_by_part() {
        let mut paths = vec!["w/run-1-x-1/a.wandb", "w/run-1-x/a.wandb", "w/run-0-x/a.wandb", "w/a.json"];
        paths.sort_by(|a, b| path_order(a, b));
        assert_eq!(paths, ["w/a.json", "w/run-0-x/a.wandb", "w/run-1-x/a.wandb", "w/run-1-x-1/a.wandb"]);
        let mut names = vec!["x-10", "x-2", "x", "x-1", "checkpoint-100", "checkpoint-50", "a007", "a7", "a08"];
        names.sort_by(|a, b| path_order(a, b));
        assert_eq!(names, ["a007", "a7", "a08", "checkpoint-50", "checkpoint-100", "x", "x-1", "x-2", "x-10"]);
    }
}
