//! The floors of `src/`: a file imports from its own floor and the floors below it, never from
//! one above (cli > verbs > stages > sql > core). Read from the `crate::` and `super::` paths
//! of every file.

use std::path::{Path, PathBuf};

/// The floors, bottom first.
const FLOORS: [&str; 5] = ["core", "sql", "stages", "verbs", "cli"];

/// Imports that run up a floor, each with why it stays: (file, floor it reads).
const ALLOWED: [(&str, &str); 0] = [];

/// An import from a floor above: file (relative to `src/`), line, the path as written.
#[derive(Debug, PartialEq)]
struct Upward {
    file: String,
    line: usize,
    path: String,
}

/// The module path of a file relative to `src/` (`stages/ingest/mod.rs` → `stages::ingest`).
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel.trim_end_matches(".rs").split('/').map(String::from).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The top-level items a `use crate::{…}` group names (`core::error::Error, sql` → `core`, `sql`).
fn group_items(group: &str) -> Vec<String> {
    let (mut depth, mut item, mut out) = (0, String::new(), Vec::new());
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => out.push(std::mem::take(&mut item)),
            _ => {}
        }
        if !(c == ',' && depth == 0) {
            item.push(c);
        }
    }
    out.push(item);
    out.into_iter().filter_map(|i| first_ident(i.trim())).collect()
}

/// The identifier `text` starts with.
fn first_ident(text: &str) -> Option<String> {
    let end = text.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(text.len());
    (end > 0).then(|| text[..end].to_string())
}

/// The floors of the crate root's items that are not floors themselves (`crate::Error`), from
/// `lib.rs`'s `pub use crate::<floor>::…` lines.
fn root_reexports(lib: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for line in lib.lines() {
        let Some(rest) = line.trim().strip_prefix("pub use crate::") else { continue };
        let Some(floor) = FLOORS.iter().position(|f| first_ident(rest).as_deref() == Some(*f)) else { continue };
        let names = match (rest.find('{'), rest.rfind('}')) {
            (Some(a), Some(b)) => rest[a + 1..b].split(',').map(|n| n.trim().to_string()).collect(),
            _ => vec![rest.trim_end_matches(';').rsplit("::").next().unwrap_or_default().to_string()],
        };
        out.extend(names.into_iter().map(|n| (n, floor)));
    }
    out
}

/// The imports of `text` (the file `rel` under `src/`) that come from a floor above the
/// file's own. Comments are skipped; `crate::{a, b}` groups count each item; `super::` paths
/// are resolved from the file's module (and from `mod tests` inside it).
fn upward_imports(rel: &str, text: &str, reexports: &[(String, usize)]) -> Vec<Upward> {
    let file_module = module_of(rel);
    let Some(own) = file_module.first().and_then(|m| FLOORS.iter().position(|f| f == m)) else {
        return Vec::new();
    };
    let mut module = file_module.clone();
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_start();
        if line.starts_with("//") {
            continue;
        }
        // a module inside the file (`mod tests {`): `super::` starts one level deeper
        if !raw.starts_with(' ')
            && let Some(rest) = line.strip_prefix("mod ").or_else(|| line.strip_prefix("pub(crate) mod "))
            && rest.trim_end().ends_with('{')
        {
            module = file_module.clone();
            module.extend(first_ident(rest));
        }
        let code = line.split(" // ").next().unwrap_or(line);
        let mut floors: Vec<(usize, String)> = Vec::new();
        for (at, _) in code.match_indices("crate::") {
            if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let rest = &code[at + "crate::".len()..];
            let names = match rest.strip_prefix('{') {
                Some(group) => group_items(&group[..group.find('}').map_or(group.len(), |_| closing(group))]),
                None => first_ident(rest).into_iter().collect(),
            };
            for name in names {
                let floor = FLOORS
                    .iter()
                    .position(|f| *f == name)
                    .or_else(|| reexports.iter().find(|(n, _)| *n == name).map(|(_, f)| *f));
                floors.push((floor.unwrap_or(usize::MAX), format!("crate::{name}")));
            }
        }
        for (at, _) in code.match_indices("super::") {
            if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut rest = &code[at..];
            let mut path = module.clone();
            while let Some(r) = rest.strip_prefix("super::") {
                path.pop();
                rest = r;
            }
            if path.is_empty()
                && let Some(name) = first_ident(rest)
            {
                let floor = FLOORS.iter().position(|f| *f == name);
                floors
                    .push((floor.unwrap_or(usize::MAX), code[at..].split(['(', ';', ' ']).next().unwrap_or("").into()));
            }
        }
        for (floor, path) in floors {
            if floor == usize::MAX || floor > own {
                out.push(Upward { file: rel.to_string(), line: n + 1, path });
            }
        }
    }
    out
}

/// The length of a `{…}` group's inside, up to its matching brace (`group` starts after `{`).
fn closing(group: &str) -> usize {
    let mut depth = 1;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    group.len()
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_file_imports_from_a_floor_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let reexports = root_reexports(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    assert!(reexports.iter().any(|(n, f)| n == "Error" && *f == 0), "{reexports:?}");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut upward = Vec::new();
    let mut checked = 0;
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        if FLOORS.iter().any(|floor| rel.starts_with(&format!("{floor}/"))) {
            checked += 1;
        }
        let found = upward_imports(&rel, &std::fs::read_to_string(f).unwrap(), &reexports);
        upward.extend(found.into_iter().filter(|u| {
            !ALLOWED.iter().any(|(file, floor)| u.file == *file && u.path.starts_with(&format!("crate::{floor}")))
        }));
    }
    assert!(checked > 40, "only {checked} files found under the floors of {}", src.display());
    let shown: Vec<String> = upward.iter().map(|u| format!("src/{}:{}: {}", u.file, u.line, u.path)).collect();
    assert!(shown.is_empty(), "imports from a floor above (cli > verbs > stages > sql > core):\n{}", shown.join("\n"));
    // every exception is still needed: one that no longer imports upward is removed from ALLOWED
    for (file, floor) in ALLOWED {
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        assert!(
            upward_imports(file, &text, &reexports).iter().any(|u| u.path.starts_with(&format!("crate::{floor}"))),
            "{file} no longer imports from {floor}: remove it from ALLOWED"
        );
    }
}

#[test]
fn the_floor_check_finds_imports_from_above() {
    let reexports = root_reexports("pub use crate::core::error::{Error, Result};\n");
    assert_eq!(reexports, [("Error".to_string(), 0), ("Result".to_string(), 0)]);
    let text = "\
//! A doc line that mentions crate::verbs::build is no import.
use crate::core::error::{Error, Result};
use crate::sql::session::run;
use crate::{core::spec, stages::hash};
fn f() -> crate::Result<()> {
    let _ = crate::cli::main; // and crate::verbs in a comment
    super::super::verbs::query::x();
    Ok(())
}
#[cfg(test)]
mod tests {
    use super::super::card::y;
    use super::super::super::cli::z;
}
";
    let found = upward_imports("stages/transform.rs", text, &reexports);
    let paths: Vec<(usize, &str)> = found.iter().map(|u| (u.line, u.path.as_str())).collect();
    assert_eq!(
        paths,
        [(6, "crate::cli"), (7, "super::super::verbs::query::x"), (13, "super::super::super::cli::z")],
        "{found:?}"
    );
    // the same lines from a file on the top floor import nothing from above
    assert_eq!(upward_imports("cli/output.rs", text, &reexports), []);
    // a file on the bottom floor may not read the one above it, even inside a group
    let found = upward_imports("core/spec.rs", "use crate::{core::error::Error, sql::session};\n", &reexports);
    assert_eq!(found, [Upward { file: "core/spec.rs".into(), line: 1, path: "crate::sql".into() }]);
    // a name the crate root does not re-export from a floor is not passed over
    assert_eq!(upward_imports("core/x.rs", "use crate::pipeline::Progress;\n", &reexports).len(), 1);
    // lib.rs and main.rs are above every floor
    assert_eq!(upward_imports("lib.rs", "pub mod cli;\nuse crate::cli::main;\n", &reexports), []);
}

/// Every path under `src/` that README.md, docs/*.md, Cargo.toml or a source comment names
/// (`src/sql/groups.rs`, `src/verbs/hub/`) exists: a file moved takes its mentions with it.
#[test]
fn every_source_path_the_docs_name_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts: Vec<PathBuf> = vec![root.join("README.md"), root.join("Cargo.toml")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            texts.push(p);
        }
    }
    rust_files(&root.join("src"), &mut texts);
    let named = regex::Regex::new(r"\bsrc/[a-z_]+(?:/[a-z_]+)*(?:\.rs|/)").unwrap();
    let mut missing = Vec::new();
    for t in &texts {
        let text = std::fs::read_to_string(t).unwrap();
        for (n, line) in text.lines().enumerate() {
            for m in named.find_iter(line) {
                // another project's paths, quoted where its files are read
                let foreign = ["src/lighteval/"].iter().any(|f| m.as_str().starts_with(f));
                if !foreign && !root.join(m.as_str()).exists() {
                    missing.push(format!("{}:{}: {}", t.strip_prefix(root).unwrap().display(), n + 1, m.as_str()));
                }
            }
        }
    }
    assert!(missing.is_empty(), "paths that no longer exist:\n{}", missing.join("\n"));
}

/// Every file and folder directly under a floor of `src/` is named in the layout of
/// docs/development.md (`groups.rs`, `hub/`), and every floor's name in README's: a file
/// added takes a line of the map with it.
#[test]
fn the_layout_in_the_docs_names_every_file_of_each_floor() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/development.md")).unwrap();
    let layout = doc.split("## Layout of the code").nth(1).unwrap().split("```").nth(1).unwrap();
    let words: Vec<&str> = layout.split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',').collect();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let map = readme.split("## Layout of the code").nth(1).unwrap().split("```").nth(1).unwrap();
    let mut unnamed = Vec::new();
    for floor in FLOORS {
        let readme_line = map.lines().find(|l| l.starts_with(floor)).unwrap_or_default();
        for e in std::fs::read_dir(root.join("src").join(floor)).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let shown = if e.path().is_dir() { format!("{name}/") } else { name.clone() };
            // a floor's mod.rs is its folder's line
            if name != "mod.rs" && !words.contains(&shown.as_str()) {
                unnamed.push(format!("docs/development.md: src/{floor}/{shown}"));
            }
            // README's map names the modules of the two lowest floors, but tests' helpers
            let module = name.trim_end_matches(".rs");
            if ["core", "sql"].contains(&floor)
                && !["mod", "testing"].contains(&module)
                && !readme_line.split([' ', '·']).any(|w| w == module)
            {
                unnamed.push(format!("README.md: {floor} {module}"));
            }
        }
    }
    assert!(unnamed.is_empty(), "files the layout maps do not name:\n{}", unnamed.join("\n"));
}
