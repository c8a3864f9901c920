//! Test helpers: the binary, temp folders, copies of the example, the Python checkers.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `runpack` binary under test.
pub fn bin() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_runpack"));
    c.env_remove("SOURCE_DATE_EPOCH").env("RUST_LOG", "warn");
    c
}

/// Runs a command and returns its output.
pub fn run(cmd: &mut std::process::Command) -> Output {
    cmd.output().expect("command runs")
}

/// Runs `cmd` with its output captured, failing the test (the process killed) when it has not
/// ended within `secs` seconds: a command that would wait forever does not hang the tests.
pub fn run_within(cmd: &mut std::process::Command, secs: u64) -> Output {
    let mut child =
        cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("command runs");
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(secs) {
            child.kill().unwrap();
            panic!("{cmd:?} did not end within {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `../shared` when the folder exists (corpus and cases); tests that need it say so and skip.
pub fn shared() -> Option<PathBuf> {
    let p = repo().join("..").join("shared");
    p.is_dir().then_some(p)
}

/// The Python interpreter with the checkers installed (`.ci/run` sets `RUNPACK_PYTHON`).
pub fn python() -> PathBuf {
    if let Ok(p) = std::env::var("RUNPACK_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = repo().join(".venv/bin/python");
    if venv.exists() {
        return venv;
    }
    panic!(
        "this test checks runpack's output with Python readers (datasets, pyarrow, huggingface_hub): \
         run `.ci/run`, which installs them into a venv, or set RUNPACK_PYTHON to a python that has \
         tests/python/requirements.txt installed"
    );
}

/// `script` followed by an exit that skips the interpreter's teardown, once the script has run to
/// its end (an exception or `sys.exit` ends it before). pyarrow's thread pools, left running by
/// `datasets`, now and then abort the process during teardown ("terminate called without an
/// active exception", apache/arrow#45214, huggingface/datasets#7357) after all output is written.
pub fn python_script(script: &str) -> String {
    format!("{script}\nimport os as _os, sys as _sys\n_sys.stdout.flush()\n_sys.stderr.flush()\n_os._exit(0)\n")
}

/// Copies a folder tree.
pub fn copy_tree(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(from).unwrap();
        let dst = to.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// A writable copy of the example pipeline and the schemas it uses:
/// `<tmp>/pipelines/tinker-rl-bench` and `<tmp>/schemas/tinker-rl-bench`.
pub fn example_copy(tmp: &Path) -> PathBuf {
    copy_tree(&repo().join("pipelines/tinker-rl-bench"), &tmp.join("pipelines/tinker-rl-bench"));
    copy_tree(&repo().join("schemas/tinker-rl-bench"), &tmp.join("schemas/tinker-rl-bench"));
    tmp.join("pipelines/tinker-rl-bench")
}

/// The bundled example, built once per test run (read-only: copy before changing it).
pub fn example_release() -> &'static Path {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, p) = BUILT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let o = run(bin()
            .args(["build", "-q"])
            .arg(repo().join("pipelines/tinker-rl-bench"))
            .arg("--releases-dir")
            .arg(dir.path()));
        assert!(o.status.success(), "build failed: {}", stderr(&o));
        let release = PathBuf::from(stdout(&o).trim());
        (dir, release)
    });
    p
}

/// All files under `dir` as (relative path, bytes), sorted.
pub fn snapshot_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let rel = e.path().strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/");
            out.push((rel, std::fs::read(e.path()).unwrap()));
        }
    }
    out
}

/// A writable copy of field case `id` (e.g. "B01") from tests/fixtures/cases, in a temp folder.
pub fn case(id: &str) -> (tempfile::TempDir, PathBuf) {
    let root = repo().join("tests/fixtures/cases");
    let src = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("{id}-")))
        .unwrap_or_else(|| panic!("case {id} missing"));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    copy_tree(&src, &dir);
    (tmp, dir)
}

/// Runs a case folder's make.py with the test Python.
pub fn make(dir: &Path, args: &[&str]) {
    let o = run(std::process::Command::new(python()).arg("make.py").args(args).current_dir(dir));
    assert!(o.status.success(), "make.py {args:?}: {}", stderr(&o));
}

/// Writes `text` to `dir/name`, creating folders on the way.
pub fn write(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir.join(name).parent().unwrap()).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
}

/// Writes `bytes` gzip-compressed to `dir/name`, creating its folders.
pub fn write_gz(dir: &Path, name: &str, bytes: &[u8]) {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    std::fs::create_dir_all(dir.join(name).parent().unwrap()).unwrap();
    std::fs::write(dir.join(name), gz.finish().unwrap()).unwrap();
}

/// `runpack build <dir> --releases-dir <dir>/out <extra>`.
pub fn build(dir: &Path, extra: &[&str]) -> Output {
    run(bin().arg("build").arg(dir).arg("--releases-dir").arg(dir.join("out")).args(extra))
}

/// The release that [`build`] makes of pipeline `name` at version 0.1.0.
pub fn release(dir: &Path, name: &str) -> PathBuf {
    dir.join("out").join(name).join("0.1.0")
}

/// `runpack query -q --format csv <source> <sql>`; its stdout, asserting success.
pub fn query(source: &Path, sql: &str) -> String {
    query_with(source, sql, &[])
}

/// [`query`] with extra arguments.
pub fn query_with(source: &Path, sql: &str, extra: &[&str]) -> String {
    let o = run(bin().args(["query", "-q", "--format", "csv"]).arg(source).arg(sql).args(extra));
    assert!(o.status.success(), "query failed: {sql}: {}", stderr(&o));
    stdout(&o)
}

/// One JSON Lines row `{"k": k, "v": v}` (the k/v sources of the order and streaming tests).
pub fn line(k: i64, v: &str) -> String {
    format!("{{\"k\": {k}, \"v\": \"{v}\"}}\n")
}

/// `n` rows keyed `i / 2` (two rows per key, in key order), valued `<tag><i>`.
pub fn rows_in_key_order(n: i64, tag: &str) -> String {
    (0..n).map(|i| line(i / 2, &format!("{tag}{i}"))).collect()
}

/// The rows of [`rows_in_key_order`] from the second on, then one whose key (-1) belongs
/// first: in key order until the very last row.
pub fn rows_with_the_first_last(n: i64, tag: &str) -> String {
    (1..n).map(|i| line(i / 2, &format!("{tag}{i}"))).chain([line(-1, "last")]).collect()
}

/// A Table Schema of `k`, `v` and the provenance columns (`_source_line` of type
/// `line_type`: integer for lines, string for JSON pointers), with primary key `key`.
pub fn kv_schema(key: &[&str], line_type: &str) -> String {
    let fields = format!(
        r#"[{{"name":"k","type":"integer"}},{{"name":"v","type":"string"}},{{"name":"_source_file","type":"string"}},{{"name":"_source_line","type":"{line_type}"}}]"#
    );
    format!(r#"{{"fields":{fields},"primaryKey":{}}}"#, serde_json::json!(key))
}

/// A pipeline.toml (release `name`) of one source `raw` (`path`, `format`, then the TOML lines
/// `source`) and one table `t` that reads it with `sql` (then the TOML lines `table`).
pub fn one_source(name: &str, path: &str, format: &str, source: &str, sql: &str, table: &str) -> String {
    let sql = sql.replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "name = \"{name}\"\n[[source]]\nname = \"raw\"\npath = \"{path}\"\nformat = \"{format}\"\n{source}\
         [[table]]\nname = \"t\"\nquery = \"{sql}\"\n{table}"
    )
}

/// Asserts that a build or query stopped on exactly `n` violations (exit 1), and that its
/// errors say each of `said`.
pub fn assert_violations(o: &Output, n: usize, said: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    for s in said {
        assert!(err.contains(s), "{s}\n{err}");
    }
    let total = format!("{n} violation{} found", if n == 1 { "" } else { "s" });
    assert!(err.contains(&total), "{total}\n{err}");
}

/// `README.md:<n>:`, where `n` is the 1-based line of `text` on which the first `needle` starts.
pub fn readme_line(text: &str, needle: &str) -> String {
    let at = text.find(needle).unwrap_or_else(|| panic!("{needle:?} is in the text"));
    format!("README.md:{}:", line_at(text, at))
}

/// The 1-based line of `text` that byte `at` is on.
pub fn line_at(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// Writes `card` as the README.md of release `dir`, with its size and SHA-256 changed to
/// match in manifest.json and SHA256SUMS, as a hand edit followed by a fix-up would leave it.
pub fn write_card(dir: &Path, card: &str) {
    let path = dir.join("README.md");
    let before = std::fs::read(&path).unwrap();
    let (old_sha, old_len) = (runpack::stages::hash::sha256_bytes(&before), before.len());
    std::fs::write(&path, card).unwrap();
    let new_sha = runpack::stages::hash::sha256_bytes(card.as_bytes());
    let manifest = dir.join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let entry = format!("\"bytes\": {old_len},\n      \"sha256\": \"{old_sha}\"");
    assert!(text.contains(&entry), "README.md's entry in manifest.json");
    let old_manifest = runpack::stages::hash::sha256_bytes(text.as_bytes());
    let text = text.replace(&entry, &format!("\"bytes\": {},\n      \"sha256\": \"{new_sha}\"", card.len()));
    std::fs::write(&manifest, &text).unwrap();
    let sums = dir.join("SHA256SUMS");
    let listed = std::fs::read_to_string(&sums).unwrap();
    let listed = listed
        .replace(&old_sha, &new_sha)
        .replace(&old_manifest, &runpack::stages::hash::sha256_bytes(text.as_bytes()));
    std::fs::write(&sums, listed).unwrap();
}

/// Recomputes every file entry's size and SHA-256 in the manifest, croissant.json and
/// SHA256SUMS: a release
/// edited and sealed again, which checksums alone cannot tell from a built one.
pub fn reseal(dir: &Path) {
    use sha2::Digest;
    // croissant.json names each data file by its SHA-256 too
    let croissant = dir.join("croissant.json");
    if let Ok(text) = std::fs::read_to_string(&croissant) {
        let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        for d in doc["distribution"].as_array_mut().into_iter().flatten() {
            if let Some(Ok(bytes)) = d["contentUrl"].as_str().map(|p| std::fs::read(dir.join(p))) {
                d["sha256"] = hex::encode(sha2::Sha256::digest(&bytes)).into();
            }
        }
        std::fs::write(&croissant, serde_json::to_string_pretty(&doc).unwrap() + "\n").unwrap();
    }
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    for f in m["files"].as_array_mut().unwrap() {
        let p = dir.join(f["path"].as_str().unwrap());
        if let Ok(bytes) = std::fs::read(&p) {
            f["bytes"] = bytes.len().into();
            f["sha256"] = hex::encode(sha2::Sha256::digest(&bytes)).into();
        }
    }
    let text = serde_json::to_string_pretty(&m).unwrap();
    std::fs::write(dir.join("manifest.json"), &text).unwrap();
    let mut paths: Vec<String> =
        m["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect();
    paths.push("manifest.json".into());
    paths.sort();
    paths.dedup();
    let sums: String = paths
        .iter()
        .filter_map(|p| {
            std::fs::read(dir.join(p)).ok().map(|b| format!("{}  {p}\n", hex::encode(sha2::Sha256::digest(&b))))
        })
        .collect();
    std::fs::write(dir.join("SHA256SUMS"), sums).unwrap();
}

/// Runs Python `script` (with pyarrow, from the test venv) on `file`, which it changes in
/// place; fails the test when the script fails.
pub fn python_edit(script: &str, file: &Path) {
    let o = run(std::process::Command::new(python()).args(["-c", script]).arg(file));
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The columns (`table.column`) of the tables of pipeline `name` that `init` wrote with no
/// description in their Table Schemas, but for those of the tables named in `plain` (tables of
/// plain formats, whose columns no format describes).
pub fn undescribed(tmp: &Path, name: &str, plain: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(tmp.join("schemas").join(name)).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for f in files {
        let table = f.file_name().unwrap().to_str().unwrap().split('.').next().unwrap().to_string();
        if plain.contains(&table.as_str()) {
            continue;
        }
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        for field in doc["fields"].as_array().unwrap() {
            if field["description"].as_str().is_none_or(|d| d.trim().is_empty()) {
                out.push(format!("{table}.{}", field["name"].as_str().unwrap()));
            }
        }
    }
    out
}

/// Copies every file under `from` to the same place under `to`.
pub fn copy_files(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from).into_iter().flatten() {
        if e.file_type().is_file() {
            let dst = to.join(e.path().strip_prefix(from).unwrap());
            std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// Runs Python `script` with the real `wandb` client offline (its folder, `sys.argv[1]`, is a
/// temporary one), then copies the `wandb/` folder it wrote to `to/wandb`. A copy: the client's
/// service process goes on writing its debug logs for a moment after the script ends, and a
/// build that read them in place would find them changing.
pub fn wandb_client(script: &str, to: &Path) {
    let out = tempfile::tempdir().unwrap();
    let o = run(std::process::Command::new(python())
        .args(["-c", script])
        .arg(out.path())
        .env("WANDB_MODE", "offline")
        .env("WANDB_DIR", out.path())
        .env("WANDB_SILENT", "true")
        .env_remove("WANDB_API_KEY")
        .env("NO_PROXY", "*")
        .env("HTTPS_PROXY", "http://127.0.0.1:9"));
    assert!(o.status.success(), "the wandb client failed: {}", stderr(&o));
    copy_files(&out.path().join("wandb"), &to.join("wandb"));
}
