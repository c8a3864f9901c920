//! Every command shown in README.md and docs/*.md runs.
//!
//! Each document runs in a fresh copy of the project's `pipelines/` and `schemas/`. The copy
//! also holds the bundled example's release with its input cache, built once per test run
//! ([`example_release`]): a document's `runpack build pipelines/tinker-rl-bench` finds it up
//! to date. A document's blocks run in order, so a later block may use what an earlier one
//! built. The documents follow these conventions:
//!
//! - ```` ```sh ````: commands. A line is one command (a trailing `\` continues it); `#` lines
//!   are comments. `runpack` is the binary under test; `cargo run [--release] -- X` is
//!   `runpack X`. Each command must exit 0.
//! - ```` ```sh exit=N ````: commands that must exit with status N (examples of bad input).
//! - ```` ```<lang> file=<path> ````: the block's text is written to `<path>` in the copy (a
//!   pipeline, a schema or a raw file that an example shows).
//! - ```` ```text output ````: lines the `sh` block before printed; each must appear, verbatim,
//!   in its commands' stdout or stderr.
//! - Any other block (`text`, `toml`, `json`) is not run.
//!
//! Commands run with `bash -c` (so quotes, `NAME=value` prefixes and `<` redirections work as
//! a reader's shell runs them) in the copy, with `HF_ENDPOINT` pointing at the loopback fake
//! Hub and `HF_HOME` in the copy: nothing reaches the network. A command whose program is
//! neither one the harness runs ([`RUNNABLE`]) nor listed in [`NOT_RUN`] fails the test.

use std::path::{Path, PathBuf};

use crate::hub_server::FakeHub;
use crate::util::*;

/// Programs a document's commands may call besides `runpack`, `cd` and `export`.
const RUNNABLE: &[&str] = &["cp", "mkdir", "ls", "cat", "sha256sum", "python", "frictionless"];

/// Commands shown but not run, each with why (matched as the start of the command).
const NOT_RUN: &[(&str, &str)] = &[
    (".ci/run", "runs the whole test suite, this test included"),
    ("cargo test", "runs tests of this suite"),
    ("bench/run", "builds runpack in release mode (about 20 minutes) and installs DuckDB from PyPI"),
    (
        "cargo run --release --manifest-path bench/json-parsers",
        "builds three JSON parsers in release mode, outside runpack's build",
    ),
    ("cargo install --path .", "installs into ~/.cargo/bin; the tests run the binary they built"),
    (
        "WANDB_MODE=offline python pipelines/tinker-wandb/make_wandb_runs.py",
        "tinker_wandb.rs runs it and checks its logs",
    ),
];

/// A fenced block of a Markdown document.
#[derive(Debug)]
struct Block {
    /// 1-based line of the block's first content line.
    line: usize,
    /// The info string's words (`sh`, `exit=1`, `file=raw/a.jsonl`).
    info: Vec<String>,
    text: String,
}

impl Block {
    /// The value of an info-string attribute (`file=…`, `exit=…`).
    fn attr(&self, key: &str) -> Option<&str> {
        self.info.iter().find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
    }

    fn lang(&self) -> &str {
        self.info.first().map(String::as_str).unwrap_or("")
    }
}

/// The fenced blocks of `md` (fences of three or more backticks, not indented).
fn blocks(md: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(String, Block)> = None;
    for (i, line) in md.lines().enumerate() {
        match &mut open {
            None => {
                let ticks = line.len() - line.trim_start_matches('`').len();
                if ticks >= 3 {
                    let info = line[ticks..].split_whitespace().map(String::from).collect();
                    open = Some(("`".repeat(ticks), Block { line: i + 2, info, text: String::new() }));
                }
            }
            Some((fence, b)) => {
                if line.trim_end() == fence.as_str() {
                    out.push(open.take().unwrap().1);
                } else {
                    b.text.push_str(line);
                    b.text.push('\n');
                }
            }
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    out
}

/// The commands of a `sh` block as (1-based line in the document, text), continuations joined.
fn commands(b: &Block) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in b.text.lines().enumerate() {
        let at = b.line + i;
        let (start, mut text) = match pending.take() {
            Some((s, t)) => (s, t + " " + line.trim()),
            None => {
                let t = line.trim();
                if t.is_empty() || t.starts_with('#') {
                    continue;
                }
                (at, t.to_string())
            }
        };
        if text.ends_with('\\') {
            text.pop();
            pending = Some((start, text.trim_end().to_string()));
        } else {
            out.push((start, text));
        }
    }
    out.extend(pending);
    out
}

/// `cargo run [--release] -- X` as `runpack X`; other commands as they are.
fn mapped(cmd: &str) -> String {
    for prefix in ["cargo run -- ", "cargo run --release -- "] {
        if let Some(rest) = cmd.strip_prefix(prefix) {
            return format!("runpack {rest}");
        }
    }
    cmd.to_string()
}

/// The program a command calls: its first word after `NAME=value` assignments.
fn program(cmd: &str) -> &str {
    cmd.split_whitespace().find(|w| !is_assignment(w)).unwrap_or("")
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with('-')
    })
}

/// What the harness does with a command.
#[derive(Debug, PartialEq)]
enum Plan<'a> {
    /// Change the folder later commands run in.
    Cd(&'a str),
    /// Set a variable for later commands.
    Export(&'a str, &'a str),
    /// Run it with bash.
    Run,
    /// Shown, not run (the reason).
    Skip(&'static str),
    /// A command the harness cannot run.
    Unknown,
}

fn plan(cmd: &str) -> Plan<'_> {
    if let Some((_, why)) = NOT_RUN.iter().find(|(start, _)| cmd.starts_with(start)) {
        return Plan::Skip(why);
    }
    if let Some(dir) = cmd.strip_prefix("cd ") {
        return Plan::Cd(dir.trim());
    }
    if let Some((name, value)) = cmd.strip_prefix("export ").and_then(|a| a.trim().split_once('=')) {
        return Plan::Export(name, value.trim_matches(['"', '\'']));
    }
    match program(cmd) {
        "runpack" => Plan::Run,
        p if RUNNABLE.contains(&p) => Plan::Run,
        _ => Plan::Unknown,
    }
}

/// One document's run: the project copy, the fake Hub, the folder and variables so far.
struct Session {
    root: tempfile::TempDir,
    hub: FakeHub,
    cwd: PathBuf,
    vars: Vec<(String, String)>,
    path: String,
    /// The test Python, whose folder is on `path`.
    python: Option<PathBuf>,
}

impl Session {
    fn new() -> Session {
        let root = tempfile::tempdir().unwrap();
        for dir in ["pipelines", "schemas"] {
            copy_tree(&repo().join(dir), &root.path().join(dir));
        }
        // the release folder of the example: its versions and its input cache
        copy_tree(example_release().parent().unwrap(), &root.path().join("releases/tinker-rl-bench"));
        let bin_dir = root.path().join(".bin");
        std::fs::create_dir_all(&bin_dir).unwrap();
        let exe = PathBuf::from(bin().get_program());
        #[cfg(unix)]
        std::os::unix::fs::symlink(&exe, bin_dir.join("runpack")).unwrap();
        let mut path = vec![bin_dir];
        // the test Python (and its `frictionless`), when the environment names one
        let python = std::env::var_os("RUNPACK_PYTHON").map(PathBuf::from).or_else(|| {
            let venv = repo().join(".venv/bin/python");
            venv.exists().then_some(venv)
        });
        if let Some(py) = &python {
            path.push(py.parent().unwrap().to_path_buf());
        }
        path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
        let path = std::env::join_paths(path).unwrap().to_string_lossy().into_owned();
        let cwd = root.path().to_path_buf();
        Session { root, hub: FakeHub::start(), cwd, vars: Vec::new(), path, python }
    }

    /// Runs `cmd` with bash in the current folder.
    fn run(&self, cmd: &str) -> std::process::Output {
        let mut c = std::process::Command::new("bash");
        c.arg("-c").arg(format!("set -o pipefail\n{cmd}")).current_dir(&self.cwd);
        // the environment the tests give the binary (no SOURCE_DATE_EPOCH, RUST_LOG=warn)
        for (k, v) in bin().get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        for k in
            ["HF_TOKEN", "HF_TOKEN_PATH", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HUB_OFFLINE", "XDG_CACHE_HOME"]
        {
            c.env_remove(k);
        }
        c.env("PATH", &self.path)
            .env("HF_ENDPOINT", &self.hub.url)
            .env("HF_HOME", self.root.path().join(".hf-home"))
            .env("HF_HUB_DISABLE_TELEMETRY", "1")
            .envs(self.vars.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null());
        run(&mut c)
    }
}

/// What running one document found.
struct DocRun {
    /// Each starting with `name:line:`.
    problems: Vec<String>,
    /// The reasons of the [`NOT_RUN`] commands it shows.
    shown: Vec<&'static str>,
}

/// Runs every block of the document `name` (text `md`).
fn run_document(name: &str, md: &str) -> DocRun {
    let mut problems = Vec::new();
    let mut shown = Vec::new();
    let mut s = Session::new();
    // the last `sh` block run: its line and what its commands printed
    let mut last: Option<(usize, String)> = None;
    for b in blocks(md) {
        if let Some(path) = b.attr("file") {
            write(s.root.path(), path, &b.text);
            continue;
        }
        if b.lang() == "text" && b.info.iter().any(|w| w == "output") {
            let Some((line, printed)) = &last else {
                problems.push(format!("{name}:{}: an output block follows no command", b.line));
                continue;
            };
            for want in b.text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                if !printed.contains(want) {
                    problems.push(format!("{name}:{line}: the block did not print\n  {want}\nit printed:\n{printed}"));
                }
            }
            continue;
        }
        if b.lang() != "sh" {
            continue;
        }
        let expected: i32 = match b.attr("exit").map(str::parse) {
            None => 0,
            Some(Ok(n)) => n,
            Some(Err(_)) => {
                problems.push(format!("{name}:{}: exit= needs a number", b.line));
                continue;
            }
        };
        let mut printed = String::new();
        for (line, cmd) in commands(&b) {
            let cmd = mapped(&cmd);
            match plan(&cmd) {
                Plan::Skip(why) => shown.push(why),
                Plan::Unknown => problems.push(format!(
                    "{name}:{line}: `{cmd}`: the harness cannot run `{}`: use `runpack`, `cd`, `export` or one of \
                     {RUNNABLE:?}, or list the command in NOT_RUN with a reason",
                    program(&cmd)
                )),
                Plan::Cd(dir) => {
                    let to = s.cwd.join(dir);
                    if to.is_dir() {
                        s.cwd = to;
                    } else {
                        problems.push(format!("{name}:{line}: `{cmd}`: no such folder"));
                    }
                }
                Plan::Export(k, v) => s.vars.push((k.to_string(), v.to_string())),
                Plan::Run => {
                    if s.python.is_none() && ["python", "frictionless"].contains(&program(&cmd)) {
                        // says how to get the Python tools the documents call
                        python();
                    }
                    let started = std::time::Instant::now();
                    let o = s.run(&cmd);
                    eprintln!("{name}:{line}: {:.2} s: {cmd}", started.elapsed().as_secs_f64());
                    if o.status.code() != Some(expected) {
                        problems.push(format!(
                            "{name}:{line}: `{cmd}` exited with {:?}, not {expected}\nstdout:\n{}\nstderr:\n{}",
                            o.status.code(),
                            stdout(&o),
                            stderr(&o)
                        ));
                    }
                    printed.push_str(&stdout(&o));
                    printed.push_str(&stderr(&o));
                }
            }
        }
        last = Some((b.line, printed));
    }
    DocRun { problems, shown }
}

/// README.md and every docs/*.md, as (name relative to the repository, text); only those
/// whose name holds `RUNPACK_DOCS` when it is set (`RUNPACK_DOCS=query.md`, to run one).
fn documents() -> Vec<(String, String)> {
    let mut names = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| Path::new("docs").join(p.file_name().unwrap()))
        .collect();
    docs.sort();
    names.extend(docs);
    let only = std::env::var("RUNPACK_DOCS").unwrap_or_default();
    names
        .into_iter()
        .map(|n| n.display().to_string())
        .filter(|n| n.contains(&only))
        .map(|n| {
            let text = std::fs::read_to_string(repo().join(&n)).unwrap();
            (n, text)
        })
        .collect()
}

#[test]
fn every_command_of_readme_and_docs_runs() {
    let docs = documents();
    assert!(!docs.is_empty(), "no document's name holds RUNPACK_DOCS");
    // documents run side by side, one per core: the other tests run meanwhile, some with timeouts
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(docs.len());
    let mut runs: Vec<(usize, DocRun)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((name, md)) = docs.get(i) else { return done };
                        done.push((i, run_document(name, md)));
                    }
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    runs.sort_by_key(|(i, _)| *i);
    let mut problems: Vec<String> = runs.iter().flat_map(|(_, r)| r.problems.clone()).collect();
    // the list stays short: a command no document shows any more leaves it
    if std::env::var_os("RUNPACK_DOCS").is_none() {
        for (cmd, why) in NOT_RUN {
            if !runs.iter().any(|(_, r)| r.shown.contains(why)) {
                problems.push(format!("NOT_RUN lists `{cmd}`, which no document shows: remove it"));
            }
        }
    }
    assert!(problems.is_empty(), "{} problem(s):\n\n{}", problems.len(), problems.join("\n\n"));
}

#[test]
fn the_harness_finds_failing_and_unknown_commands() {
    let md = "text\n\n```sh\nrunpack --version\nrunpack verify \\\n  no-such-release\nmake all\n```\n\n\
              ```sh exit=2\nrunpack verify no-such-release\n```\n\n```text output\nno-such-thing\n```\n";
    let DocRun { problems, shown } = run_document("t.md", md);
    assert!(shown.is_empty(), "{shown:?}");
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(
        problems[0].starts_with("t.md:5: `runpack verify no-such-release` exited with Some(2), not 0"),
        "{}",
        problems[0]
    );
    assert!(problems[1].starts_with("t.md:7: `make all`: the harness cannot run `make`"), "{}", problems[1]);
    assert!(problems[2].starts_with("t.md:11: the block did not print\n  no-such-thing"), "{}", problems[2]);
}

#[test]
fn commands_are_read_as_a_shell_reads_them() {
    let b = Block {
        line: 10,
        info: vec!["sh".into()],
        text: "# a comment\nHF_TOKEN=x runpack publish r \\\n  --repo a/b\n\ncargo run -- build p\n".into(),
    };
    let cmds = commands(&b);
    assert_eq!(
        cmds,
        [(11, "HF_TOKEN=x runpack publish r --repo a/b".to_string()), (14, "cargo run -- build p".into())]
    );
    assert_eq!(program(&cmds[0].1), "runpack");
    assert_eq!(mapped(&cmds[1].1), "runpack build p");
    assert_eq!(plan(".ci/run"), Plan::Skip("runs the whole test suite, this test included"));
    assert_eq!(plan("cd pipelines"), Plan::Cd("pipelines"));
    assert_eq!(plan("export HF_TOKEN=hf_xxx"), Plan::Export("HF_TOKEN", "hf_xxx"));
    assert_eq!(plan("rm -rf /"), Plan::Unknown);
}

/// The examples that end `runpack <verb> --help`: the lines after `Examples:`, without their
/// `# …` comments.
fn help_examples(verb: &str) -> Vec<String> {
    let o = run(bin().args([verb, "--help"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let help = stdout(&o);
    let (_, tail) = help.rsplit_once("\nExamples:\n").unwrap_or_else(|| panic!("{verb} --help ends with no examples"));
    tail.lines().map(|l| l.split("  # ").next().unwrap().trim().to_string()).filter(|l| !l.is_empty()).collect()
}

#[test]
fn every_example_of_every_help_runs() {
    // in this order, each verb's examples using what the ones before made (a release, a
    // published repo on the fake Hub)
    let mut md = String::from("```sh\nexport HF_TOKEN=hf_xxx\n");
    for verb in ["init", "build", "query", "publish", "verify"] {
        let examples = help_examples(verb);
        assert!(examples.len() >= 3, "{verb}: {examples:?}");
        for e in examples {
            assert!(e.starts_with("runpack "), "{verb}: {e}");
            md.push_str(&e);
            md.push('\n');
        }
    }
    md.push_str("```\n");
    let DocRun { problems, .. } = run_document("--help", &md);
    assert!(problems.is_empty(), "{} problem(s):\n\n{}", problems.len(), problems.join("\n\n"));
}
