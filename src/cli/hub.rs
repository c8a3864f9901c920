//! The Hub verbs on the command line: `publish`, `verify hf://…`, `query hf://…`.
//!
//! In: parsed arguments and the environment: `HF_TOKEN` (else `HF_TOKEN_PATH`, else
//! `$HF_HOME/token`), `HF_ENDPOINT`, `HF_HOME` (default `$XDG_CACHE_HOME/huggingface` or
//! `~/.cache/huggingface`), `HF_HUB_CACHE` (else `HUGGINGFACE_HUB_CACHE`, else `$HF_HOME/hub`),
//! `HF_HUB_OFFLINE`, `HF_XET_CACHE` (default `$HF_HOME/xet`). Out: results on stdout, progress
//! and notes on stderr, the exit code.
//! The token is read here, handed to the library wrapped in [`Token`], and never printed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::core::error::Error;
use crate::core::numbers::{group_digits, human_bytes};
use crate::core::progress::{Progress, Silent};
use crate::verbs::hub::cache::HubCache;
use crate::verbs::hub::publish::{DEFAULT_MAX_FILE_BYTES, PublishOptions, PublishOutcome, TagMode, Transfer};
use crate::verbs::hub::remote::RemoteVerifyOptions;
use crate::verbs::hub::{DEFAULT_ENDPOINT, HubClient, HubConfig, HubTarget, RepoId, RetryPolicy, Token};

/// Arguments of `publish`.
#[derive(Debug, clap::Args)]
pub struct PublishArgs {
    /// Release folder (releases/<name>/<version>).
    release: PathBuf,
    /// Dataset repo to publish to, as <namespace>/<name>.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    repo: String,
    /// Branch to commit to; with --create-pr, the base of the pull request.
    #[arg(long, default_value = "main")]
    revision: String,
    /// Folder of the repo to publish into (default: the repo root). The `/`s around it are
    /// dropped; `.`, `..`, `.git`, `.cache` and empty folder names are refused. The release's
    /// configs are also written into the card at the repo root, named `<folder>-<table>`.
    #[arg(long, value_name = "PATH", default_value = "", hide_default_value = true)]
    path_in_repo: String,
    /// Also delete the files of the folder that no earlier version of this release published
    /// (by default they are kept and listed). At the repo root, the card is then the release's
    /// own instead of a merge.
    #[arg(long)]
    delete_unlisted: bool,
    /// Publish even when the folder holds a newer version of this release (by default that
    /// is refused before anything is sent).
    #[arg(long)]
    allow_older_version: bool,
    /// Publish even when the release holds text of an access token's form (`hf_…`, `sk-…`,
    /// `ghp_…`; by default that is refused before anything is sent). The token publish uses is
    /// refused whatever this says.
    #[arg(long)]
    allow_token_like: bool,
    /// Create the repo when it does not exist (an existing repo is fine).
    #[arg(long)]
    create: bool,
    /// With --create: make the new repo private.
    #[arg(long, requires = "create")]
    private: bool,
    /// Open a pull request with the commit instead of committing to the branch (no tag).
    #[arg(long, conflicts_with = "tag")]
    create_pr: bool,
    /// Print the plan (each file with its size, sha256, LFS or regular, upload or skip; the
    /// deletions; the files kept; repo, revision and commit message) and stop. Reads the Hub,
    /// sends nothing.
    #[arg(long)]
    dry_run: bool,
    /// Commit title (default: "Publish <name> <version>").
    #[arg(short, long, value_name = "TEXT")]
    message: Option<String>,
    /// Tag to put on the commit (default: the release version).
    #[arg(long, value_name = "NAME", conflicts_with = "no_tag")]
    tag: Option<String>,
    /// Do not tag the commit.
    #[arg(long)]
    no_tag: bool,
    /// Largest file accepted, in bytes (decimal: 50000000000 is 50 GB, 46.6 GiB). Larger files
    /// are refused before anything is sent.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_FILE_BYTES)]
    max_file_bytes: u64,
    /// Seconds to wait for the commit's answer; after that the branch is read again to learn
    /// whether the commit landed.
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0)]
    commit_timeout: f64,
    /// Commit requests sent at most (after HTTP 412 conflicts, lost answers or 429).
    #[arg(long, value_name = "N", default_value_t = 5)]
    commit_attempts: usize,
    /// How the large files travel: `auto` uses Xet storage when the Hub offers it (only the
    /// chunks it does not hold yet are sent) and Git LFS otherwise; `xet` fails when the Hub
    /// offers no Xet; `lfs` sends whole files through Git LFS.
    #[arg(long, value_enum, default_value = "auto")]
    transfer: TransferArg,
    /// Output format: `text`, or `json` (one document: the outcome, `files` with each file's
    /// action, storage and digests, `deletions`, `kept`, `warnings`, and what was uploaded:
    /// `transfer`, `uploaded_bytes`, `xet`).
    #[arg(long, value_enum, default_value = "text")]
    format: ReportFormat,
    #[command(flatten)]
    net: NetArgs,
}

impl PublishArgs {
    /// The output format asked for.
    pub fn format(&self) -> ReportFormat {
        self.format
    }
}

/// `publish --transfer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum TransferArg {
    /// Xet when the Hub offers it, else Git LFS.
    Auto,
    /// Xet only.
    Xet,
    /// Git LFS only.
    Lfs,
}

/// Options shared by the commands that reach the Hub.
#[derive(Debug, Clone, clap::Args)]
pub struct NetArgs {
    /// File holding the access token (default: HF_TOKEN, else the file HF_TOKEN_PATH, else
    /// HF_HOME/token).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Retries of a request after a transient failure (HTTP 408, 429, 5xx, lost connection)
    /// [default: 5].
    #[arg(long, value_name = "N")]
    retries: Option<usize>,
    /// First wait before a retry, in milliseconds; it doubles up to --retry-max-delay-ms. A
    /// server's Retry-After or RateLimit header overrides it [default: 1000].
    #[arg(long, value_name = "MS")]
    retry_delay_ms: Option<u64>,
    /// Longest wait between retries, in milliseconds [default: 8000].
    #[arg(long, value_name = "MS")]
    retry_max_delay_ms: Option<u64>,
    /// Seconds allowed for one API request or a stalled transfer [default: 60].
    #[arg(long, value_name = "SECONDS")]
    request_timeout: Option<f64>,
}

const RETRIES: usize = 5;
const RETRY_DELAY_MS: u64 = 1000;
const RETRY_MAX_DELAY_MS: u64 = 8000;
const REQUEST_TIMEOUT_S: f64 = 60.0;

impl NetArgs {
    /// The options given on the command line, by name.
    fn given(&self) -> Vec<&'static str> {
        [
            ("--token-file", self.token_file.is_some()),
            ("--retries", self.retries.is_some()),
            ("--retry-delay-ms", self.retry_delay_ms.is_some()),
            ("--retry-max-delay-ms", self.retry_max_delay_ms.is_some()),
            ("--request-timeout", self.request_timeout.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }
}

/// Refuses options of a published release given for a local `source`.
///
/// Errors: [`Error::Refused`] naming them.
fn local_source(source: &std::path::Path, given: Vec<&'static str>) -> Result<(), Error> {
    if given.is_empty() {
        return Ok(());
    }
    Err(Error::Refused(format!(
        "{} appl{} to a published release (hf://datasets/<namespace>/<name>), not to {}",
        given.join(", "),
        if given.len() == 1 { "ies" } else { "y" },
        source.display()
    )))
}

/// Extra options of `verify` for a published release.
#[derive(Debug, Clone, clap::Args)]
pub struct VerifyHubArgs {
    /// With hf://: compare the Hub with this local release instead of the manifest published
    /// beside the files.
    #[arg(long, value_name = "RELEASE_DIR")]
    against: Option<PathBuf>,
    /// With hf://: also download every file (into the Hugging Face cache, fetched again even
    /// when cached) and hash its bytes.
    #[arg(long)]
    download: bool,
    #[command(flatten)]
    net: NetArgs,
}

impl VerifyHubArgs {
    /// Refuses these options for a local release folder.
    ///
    /// Errors: [`Error::Refused`] naming the options given.
    pub fn for_local(&self, release: &std::path::Path) -> Result<(), Error> {
        let mut given = Vec::new();
        if self.against.is_some() {
            given.push("--against");
        }
        if self.download {
            given.push("--download");
        }
        given.extend(self.net.given());
        local_source(release, given)
    }
}

/// Extra options of `query` for a published release.
#[derive(Debug, Clone, clap::Args)]
pub struct QueryHubArgs {
    #[command(flatten)]
    net: NetArgs,
}

impl QueryHubArgs {
    /// Refuses these options for a local source.
    ///
    /// Errors: [`Error::Refused`] naming the options given.
    pub fn for_local(&self, source: &std::path::Path) -> Result<(), Error> {
        local_source(source, self.net.given())
    }
}

/// True when the argument names a published release (`hf://…`).
pub fn is_hub(arg: impl AsRef<std::ffi::OsStr>) -> bool {
    arg.as_ref().to_str().is_some_and(HubTarget::is_hub_url)
}

/// What the environment says about the Hub.
struct HubEnv {
    endpoint: String,
    token: Option<Token>,
    cache: PathBuf,
    /// hf-xet's cache (`HF_XET_CACHE`, else `$HF_HOME/xet`, as hf-xet finds it under Python).
    xet_cache: PathBuf,
    offline: bool,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// `HF_HOME`, else `$XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface`.
fn hf_home() -> PathBuf {
    let home = var("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    var("HF_HOME").map(PathBuf::from).unwrap_or_else(|| {
        var("XDG_CACHE_HOME").map(PathBuf::from).unwrap_or_else(|| home.join(".cache")).join("huggingface")
    })
}

/// Remembers the Hub tokens the environment holds (`HF_TOKEN`, the file `HF_TOKEN_PATH` or
/// `HF_HOME/token`) for [`crate::core::secrets::redact`], whatever the command: a token found
/// in the data (a config that logged it) is then `<token>` in every message, as in a publish's.
pub fn remember_tokens() {
    let path = token_path(&hf_home());
    // a token file is a line: anything larger is no token, and is not read whole
    let from_file = std::fs::File::open(&path).ok().and_then(|f| {
        let mut t = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(f, 4096), &mut t).ok().map(|_| t)
    });
    for t in var("HF_TOKEN").into_iter().chain(from_file) {
        crate::core::secrets::remember(t.trim(), "<token>");
    }
}

/// The token file: `HF_TOKEN_PATH`, else `token` in `hf_home`.
fn token_path(hf_home: &Path) -> PathBuf {
    var("HF_TOKEN_PATH").map(PathBuf::from).unwrap_or_else(|| hf_home.join("token"))
}

fn hub_env(token_file: Option<&Path>) -> Result<HubEnv, Error> {
    let hf_home = hf_home();
    let token = match token_file {
        Some(f) => {
            let t = std::fs::read_to_string(f).map_err(|e| {
                Error::config(f.display().to_string(), format!("cannot read the token file (--token-file): {e}"))
            })?;
            let t = Token::new(t).ok_or_else(|| Error::config(f.display().to_string(), "the token file is empty"))?;
            t.check(&f.display().to_string())?;
            Some(t)
        }
        None => match var("HF_TOKEN").and_then(Token::new) {
            Some(t) => {
                t.check("HF_TOKEN")?;
                Some(t)
            }
            None => {
                let path = token_path(&hf_home);
                match std::fs::read_to_string(&path).ok().and_then(Token::new) {
                    Some(t) => {
                        t.check(&path.display().to_string())?;
                        Some(t)
                    }
                    None => None,
                }
            }
        },
    };
    let cache = var("HF_HUB_CACHE")
        .or_else(|| var("HUGGINGFACE_HUB_CACHE"))
        .map(PathBuf::from)
        .unwrap_or_else(|| hf_home.join("hub"));
    let offline =
        var("HF_HUB_OFFLINE").is_some_and(|v| matches!(v.trim().to_lowercase().as_str(), "1" | "on" | "yes" | "true"));
    let endpoint = var("HF_ENDPOINT").unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
    // a value that is no http(s) address would fail every request the same way: said at once
    match reqwest::Url::parse(endpoint.trim()) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
        _ => {
            return Err(Error::config(
                "HF_ENDPOINT",
                format!("{endpoint:?} is not an http(s) address such as https://huggingface.co"),
            ));
        }
    }
    let xet_cache = var("HF_XET_CACHE").map(PathBuf::from).unwrap_or_else(|| hf_home.join("xet"));
    Ok(HubEnv { endpoint: endpoint.trim_end_matches('/').to_string(), token, cache, xet_cache, offline })
}

fn seconds(s: f64, flag: &str) -> Result<Duration, Error> {
    Duration::try_from_secs_f64(s)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| Error::config(flag, format!("{s} is not a positive number of seconds")))
}

fn client(env: &HubEnv, net: &NetArgs) -> Result<HubClient, Error> {
    let mut config = HubConfig::new(&env.endpoint, env.token.clone());
    let delay = net.retry_delay_ms.unwrap_or(RETRY_DELAY_MS);
    config.retry = RetryPolicy {
        max_retries: net.retries.unwrap_or(RETRIES),
        min_delay: Duration::from_millis(delay),
        max_delay: Duration::from_millis(net.retry_max_delay_ms.unwrap_or(RETRY_MAX_DELAY_MS).max(delay)),
        ..RetryPolicy::default()
    };
    config.request_timeout = seconds(net.request_timeout.unwrap_or(REQUEST_TIMEOUT_S), "--request-timeout")?;
    HubClient::new(&config)
}

use super::runtime;

fn progress_of(bar: &Option<super::output::Bar>) -> &dyn Progress {
    bar.as_ref().map(|p| p as &dyn Progress).unwrap_or(&Silent)
}

/// `runpack publish`.
pub fn publish(a: PublishArgs, quiet: bool) -> Result<u8, Error> {
    let env = hub_env(a.net.token_file.as_deref())?;
    let client = client(&env, &a.net)?;
    let opts = PublishOptions { offline: env.offline, ..publish_options(&a, &env)? };
    let bar = super::output::progress(quiet || a.format == ReportFormat::Json);
    let report = runtime()?.block_on(crate::verbs::hub::publish::run(&client, &opts, progress_of(&bar)))?;
    if a.format == ReportFormat::Json {
        super::output::print_out(&format!("{:#}", publish_json(&report)))?;
        return Ok(0);
    }
    // written whole once the lines are made (print_out: a line that cannot be written is an error)
    let mut out = Vec::new();
    let flush = |out: &[u8]| super::output::print_out(String::from_utf8_lossy(out).trim_end_matches('\n'));
    let target = format!(
        "datasets/{}@{}{}",
        report.repo,
        report.revision,
        if report.path_in_repo.is_empty() { String::new() } else { format!(" (folder {})", report.path_in_repo) }
    );
    if !quiet {
        for w in &report.warnings {
            say!("warning: {w}");
        }
    }
    if report.outcome == PublishOutcome::DryRun {
        print_plan(&mut out, &report, &target, a.create_pr);
        flush(&out)?;
        return Ok(0);
    }
    if !quiet {
        say_uploads(&report);
    }
    print_outcome(&mut out, &report, &target, a.create_pr, quiet);
    if !out.is_empty() {
        flush(&out)?;
    }
    if let Some(t) = &report.tag
        && !quiet
    {
        say!("{t}");
    }
    Ok(0)
}

/// The options of `publish` from its arguments.
fn publish_options(a: &PublishArgs, env: &HubEnv) -> Result<PublishOptions, Error> {
    let mut opts = PublishOptions::new(&a.release, RepoId::parse(&a.repo)?);
    opts.revision = a.revision.clone();
    opts.path_in_repo = a.path_in_repo.clone();
    opts.create = a.create;
    opts.private = a.private;
    opts.create_pr = a.create_pr;
    opts.dry_run = a.dry_run;
    opts.delete_unlisted = a.delete_unlisted;
    opts.allow_older_version = a.allow_older_version;
    opts.allow_token_like = a.allow_token_like;
    opts.commit_message = a.message.clone();
    opts.tag = match (a.no_tag, a.tag.clone()) {
        (true, _) => TagMode::None,
        (false, Some(t)) => TagMode::Named(t),
        (false, None) => TagMode::Version,
    };
    opts.max_file_bytes = a.max_file_bytes;
    opts.commit_timeout = seconds(a.commit_timeout, "--commit-timeout")?;
    if a.commit_attempts == 0 {
        return Err(Error::config("--commit-attempts", "0 is not a number of attempts (1 or more)"));
    }
    opts.max_commit_attempts = a.commit_attempts;
    opts.xet_cache = Some(env.xet_cache.clone());
    opts.transfer = match a.transfer {
        TransferArg::Auto => Transfer::Auto,
        TransferArg::Xet => Transfer::Xet,
        TransferArg::Lfs => Transfer::Lfs,
    };
    Ok(opts)
}

/// Prints a dry run's plan: each file with its size, sha256, storage and action, the
/// deletions, the files kept, the card's note and a total.
fn print_plan(out: &mut impl Write, report: &crate::verbs::hub::publish::PublishReport, target: &str, create_pr: bool) {
    let _ = writeln!(
        out,
        "plan: publish {} to {target}{}",
        report.release,
        match &report.head {
            Some(h) => format!(", on top of {h}"),
            None if report.offline => " (HF_HUB_OFFLINE: the repo was not read; LFS/regular guessed locally)".into(),
            None => " (the repo or branch does not exist yet: LFS/regular guessed locally)".into(),
        }
    );
    if create_pr {
        let _ = writeln!(out, "as a pull request");
    }
    let _ = writeln!(out, "commit message: {}", report.commit_message);
    let width = report.files.iter().map(|f| group_digits(f.bytes).len()).max().unwrap_or(1);
    for f in &report.files {
        let _ = writeln!(
            out,
            "{:<6}  {:<7}  {:>width$} bytes  sha256 {}  {}",
            if f.upload { "upload" } else { "skip" },
            if f.lfs { "lfs" } else { "regular" },
            group_digits(f.bytes),
            f.sha256,
            f.path
        );
    }
    for d in &report.deletions {
        let _ = writeln!(out, "{:<6}  {:<7}  {:>width$}        {:<71}  {d}", "delete", "", "", "");
    }
    for k in &report.kept {
        let _ = writeln!(out, "{:<6}  {:<7}  {:>width$}        {:<71}  {k}", "keep", "", "", "");
    }
    if let Some(c) = &report.card {
        let _ = writeln!(out, "{c}");
    }
    let up: Vec<_> = report.files.iter().filter(|f| f.upload).collect();
    let _ = writeln!(
        out,
        "{} file(s) to upload ({}), {} unchanged, {} deletion(s), {} file(s) kept (not published by this release); \
         nothing was sent (--dry-run)",
        up.len(),
        human_bytes(up.iter().map(|f| f.bytes).sum()),
        report.files.len() - up.len(),
        report.deletions.len(),
        report.kept.len()
    );
}

/// Says on stderr what was uploaded (through Xet or as LFS objects), the files kept and the
/// card's note.
fn say_uploads(report: &crate::verbs::hub::publish::PublishReport) {
    let unchanged = report.files.iter().filter(|f| !f.upload).count();
    match &report.xet {
        Some(x) => say!(
            "uploaded {} file(s) of {} through Xet: {} sent ({} in new chunks, the rest already stored); \
             {} file(s) unchanged; {} deletion(s)",
            report.uploaded_objects,
            human_bytes(x.file_bytes),
            human_bytes(report.uploaded_bytes),
            human_bytes(x.new_bytes),
            unchanged,
            report.deletions.len()
        ),
        None => say!(
            "uploaded {} LFS object(s) ({}); {} already stored on the Hub; {} file(s) unchanged; {} deletion(s)",
            report.uploaded_objects,
            human_bytes(report.uploaded_bytes),
            report.reused_objects,
            unchanged,
            report.deletions.len()
        ),
    }
    if !report.kept.is_empty() {
        const NAMED: usize = 10;
        let names: Vec<&str> = report.kept.iter().map(String::as_str).collect();
        say!(
            "kept {} file(s) this release did not publish: {}",
            report.kept.len(),
            crate::core::report::first_names(&names, NAMED)
        );
    }
    if let Some(c) = &report.card {
        say!("{c}");
    }
}

/// Prints the outcome: the commit (or pull request) made, or why none was.
fn print_outcome(
    out: &mut impl Write,
    report: &crate::verbs::hub::publish::PublishReport,
    target: &str,
    create_pr: bool,
    quiet: bool,
) {
    match &report.outcome {
        PublishOutcome::DryRun => {}
        PublishOutcome::PullRequestExists { num, url, head } => {
            let _ = writeln!(
                out,
                "pull request #{num} already holds {} at {head}: {url}; no pull request was opened",
                report.release
            );
        }
        PublishOutcome::Unchanged { head } => {
            let _ = writeln!(out, "unchanged: {target} already holds {} at {head}; no commit was made", report.release);
        }
        PublishOutcome::Committed { commit, commit_url, pull_request_url, attempts, note } => {
            if !quiet {
                if let Some(n) = note {
                    say!("note: {n}");
                }
                if *attempts > 1 {
                    say!("commit requests sent: {attempts}");
                }
            }
            match pull_request_url {
                Some(pr) if create_pr => {
                    let _ = writeln!(out, "opened pull request {pr} with commit {commit} on {target}");
                }
                _ => {
                    let _ = writeln!(out, "committed {commit} to {target}");
                }
            }
            if let Some(u) = commit_url
                && !quiet
            {
                say!("{u}");
            }
        }
    }
}

/// How `verify` and `publish` print their report (each option's help names its JSON fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Lines for a person, then a summary.
    Text,
    /// One JSON document on stdout.
    Json,
}

/// The JSON document of `publish --format json`.
fn publish_json(r: &crate::verbs::hub::publish::PublishReport) -> serde_json::Value {
    use serde_json::json;
    let outcome = match &r.outcome {
        PublishOutcome::DryRun => json!({"kind": "dry_run"}),
        PublishOutcome::Unchanged { head } => json!({"kind": "unchanged", "commit": head}),
        PublishOutcome::Committed { commit, commit_url, pull_request_url, attempts, note } => json!({
            "kind": if pull_request_url.is_some() { "pull_request" } else { "committed" }, "commit": commit,
            "commit_url": commit_url, "pull_request_url": pull_request_url, "commit_requests": attempts, "note": note,
        }),
        PublishOutcome::PullRequestExists { num, url, head } => {
            json!({"kind": "pull_request_exists", "pull_request": num, "pull_request_url": url, "commit": head})
        }
    };
    let files: Vec<serde_json::Value> = r
        .files
        .iter()
        .map(|f| {
            json!({
                "path": f.path, "bytes": f.bytes, "sha256": f.sha256, "storage": if f.lfs { "lfs" } else { "regular" },
                "action": if f.upload { "upload" } else { "skip" }, "root_card": f.root_card,
            })
        })
        .collect();
    json!({
        "repo": r.repo.to_string(), "revision": r.revision, "path_in_repo": r.path_in_repo, "release": r.release,
        "head": r.head, "offline": r.offline, "commit_message": r.commit_message, "outcome": outcome, "files": files,
        "deletions": r.deletions, "kept": r.kept, "card": r.card, "tag": r.tag, "warnings": r.warnings,
        "uploaded_objects": r.uploaded_objects, "uploaded_bytes": r.uploaded_bytes, "reused_objects": r.reused_objects,
        "transfer": r.transfer.map(Transfer::name),
        "xet": r.xet.map(|x| json!({
            "file_bytes": x.file_bytes, "new_bytes": x.new_bytes, "xorb_bytes": x.xorb_bytes, "shard_bytes": x.shard_bytes,
        })),
    })
}

/// `runpack verify hf://…`.
pub fn verify(
    target: impl AsRef<std::ffi::OsStr>,
    a: VerifyHubArgs,
    data: bool,
    format: ReportFormat,
    quiet: bool,
) -> Result<u8, Error> {
    let target = HubTarget::parse(&target.as_ref().to_string_lossy())?;
    let env = hub_env(a.net.token_file.as_deref())?;
    if env.offline {
        return Err(Error::Refused(format!("HF_HUB_OFFLINE is set: verifying {target} needs the network")));
    }
    let client = client(&env, &a.net)?;
    let cache = HubCache::new(&env.cache);
    let opts = RemoteVerifyOptions { target: target.clone(), against: a.against, download: a.download, data };
    let bar = super::output::progress(quiet || format == ReportFormat::Json);
    let rep = runtime()?.block_on(crate::verbs::hub::remote::verify(&client, &cache, &opts, progress_of(&bar)))?;
    if format == ReportFormat::Json {
        let files: Vec<serde_json::Value> = rep
            .verified
            .iter()
            .map(|f| {
                serde_json::json!({
                    "path": f.path, "storage": f.storage, "algorithm": f.algorithm, "digest": f.digest,
                    "hashed": f.hashed,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "target": target.to_string(), "commit": rep.commit, "ok": rep.ok(), "problems": rep.problems,
            "notes": rep.notes, "files": files,
        });
        super::output::print_out(&format!("{doc:#}"))?;
        return Ok(if rep.ok() { 0 } else { 1 });
    }
    for p in &rep.problems {
        super::output::print_out(&p.to_string())?;
    }
    if rep.data_files > 0 && rep.data_files_matching < rep.data_files {
        super::output::print_out(&format!(
            "{} of {} Parquet shards match the manifest",
            rep.data_files_matching, rep.data_files
        ))?;
    }
    if !quiet {
        for n in &rep.notes {
            say!("note: {n}");
        }
    }
    if rep.ok() {
        if !quiet {
            let lfs = rep.verified.iter().filter(|f| f.algorithm == "sha256").count();
            let git = rep.verified.len() - lfs;
            let hashed = rep.verified.iter().filter(|f| f.hashed).count();
            let mut how = Vec::new();
            if lfs > 0 {
                how.push(format!("{lfs} LFS file(s) by sha256 = lfs.oid and size"));
            }
            if git > 0 {
                how.push(format!("{git} regular file(s) by git blob sha1 = the tree's oid"));
            }
            if hashed > 0 {
                how.push(format!(
                    "{hashed} of them {} and hashed with sha256 against the manifest",
                    if opts.download { "downloaded" } else { "downloaded (or read from the cache)" }
                ));
            }
            if rep.reader_checks {
                how.push("the card and manifest checked against the data".into());
            }
            super::output::print_out(&format!(
                "ok: {} files of {target} at commit {} verified ({})",
                rep.verified.len(),
                rep.commit,
                how.join("; ")
            ))?;
        }
        Ok(0)
    } else {
        if !quiet {
            say!(
                "{} problem{} found in {target} at commit {}",
                rep.problems.len(),
                if rep.problems.len() == 1 { "" } else { "s" },
                rep.commit
            );
        }
        Ok(1)
    }
}

/// `runpack query hf://… SQL`.
pub fn query(
    target: impl AsRef<std::ffi::OsStr>,
    sql: &str,
    shown: crate::sql::print::Shown,
    a: QueryHubArgs,
    quiet: bool,
    timing: bool,
) -> Result<u8, Error> {
    let target = HubTarget::parse(&target.as_ref().to_string_lossy())?;
    let env = hub_env(a.net.token_file.as_deref())?;
    let client = if env.offline { None } else { Some(client(&env, &a.net)?) };
    let cache = HubCache::new(&env.cache);
    let bar = super::output::progress(quiet);
    runtime()?.block_on(async {
        // only the tables the SQL reads are downloaded
        let read = crate::sql::session::tables_read(sql);
        let fetched =
            crate::verbs::hub::cache::fetch_release(client.as_ref(), &cache, &target, read.as_ref(), progress_of(&bar))
                .await?;
        tracing::info!(
            "{target} at {}: {} file(s) downloaded ({} bytes), {} from the cache at {}",
            fetched.commit,
            fetched.downloaded_files,
            fetched.downloaded_bytes,
            fetched.cached_files,
            cache.root().display()
        );
        let ctx = crate::sql::session::query_session();
        let started = std::time::Instant::now();
        let manifest = crate::verbs::query::register_release_tables(&ctx, &fetched.dir, read.as_ref()).await?;
        let files: Vec<_> = crate::verbs::query::release_parquet_files(&fetched.dir, &manifest)
            .into_iter()
            .filter(|(_, p)| p.exists())
            .collect();
        let hint = super::verify_hint(&target.to_string());
        super::run_and_print(&ctx, sql, shown, timing, started)
            .await
            .map_err(|e| crate::verbs::query::name_broken_file(e, &files, &hint))
    })
}
