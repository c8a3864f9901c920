//! A Ballista cluster from the runpack binary (`runpack cluster scheduler|executor`) on
//! loopback: queries and builds run on it give what they give embedded, byte for byte, and a
//! build whose executor dies commits no partial release.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use crate::util::*;

/// A scheduler and its executors, stopped when dropped.
struct Cluster {
    scheduler: Child,
    executors: Vec<Child>,
    /// `df://127.0.0.1:PORT`.
    address: String,
    dir: tempfile::TempDir,
}

/// A port free now on loopback (the executor's services need theirs given).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Cluster {
    /// A scheduler on a port of its choosing and `n` executors of two tasks each.
    fn start(n: usize) -> Cluster {
        Cluster::start_with_env(n, &[])
    }

    /// [`Cluster::start`], each process with the environment variables `env` set.
    fn start_with_env(n: usize, env: &[(&str, &str)]) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let mut scheduler = bin()
            .args(["cluster", "scheduler", "--bind", "127.0.0.1:0", "--executor-timeout", "6"])
            .envs(env.iter().copied())
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.path().join("scheduler.log")).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(scheduler.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let address =
            line.trim().strip_prefix("scheduler listening on ").unwrap_or_else(|| panic!("{line:?}")).to_string();
        assert!(address.starts_with("df://127.0.0.1:"), "{address}");
        let mut cluster = Cluster { scheduler, executors: Vec::new(), address, dir };
        for _ in 0..n {
            cluster.add_executor_with_env(env);
        }
        cluster
    }

    fn add_executor_with_env(&mut self, env: &[(&str, &str)]) {
        let i = self.executors.len();
        let work = self.dir.path().join(format!("executor-{i}"));
        let scheduler = self.address.trim_start_matches("df://").to_string();
        let child = bin()
            .args(["cluster", "executor", "--scheduler", &scheduler, "--concurrent-tasks", "2", "--heartbeat", "1"])
            .args(["--port", &free_port().to_string(), "--grpc-port", &free_port().to_string()])
            .arg("--work-dir")
            .arg(&work)
            .envs(env.iter().copied())
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.dir.path().join(format!("executor-{i}.log"))).unwrap())
            .spawn()
            .unwrap();
        self.executors.push(child);
    }

    /// The last lines the scheduler logged (for a failure's message).
    fn scheduler_log(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("scheduler.log")).unwrap_or_default();
        let lines: Vec<&str> =
            text.lines().filter(|l| l.starts_with("warning") || l.starts_with("error") || l.contains("Job")).collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// The folder the builds stage their sources in (loopback: every process sees it).
    fn share(&self) -> PathBuf {
        self.dir.path().join("share")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for c in self.executors.iter_mut().chain([&mut self.scheduler]) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `runpack query --format csv SOURCE SQL` (on `engine` when given): stdout, asserting success.
fn query_on(source: &Path, sql: &str, format: &str, engine: Option<&str>) -> String {
    let mut cmd = bin();
    cmd.args(["query", "-q", "--format", format]).arg(source).arg(sql);
    if let Some(e) = engine {
        cmd.args(["--engine", e]);
    }
    let o = run(&mut cmd);
    assert!(o.status.success(), "query {sql} on {engine:?}: {}", stderr(&o));
    stdout(&o)
}

/// `runpack build PIPELINE --releases-dir OUT [--engine … --engine-share …]`, not started.
fn build_cmd(pipeline: &Path, out: &Path, cluster: Option<&Cluster>) -> std::process::Command {
    let mut cmd = bin();
    cmd.args(["build", "-q"]).arg(pipeline).arg("--releases-dir").arg(out).env("SOURCE_DATE_EPOCH", "1700000000");
    if let Some(c) = cluster {
        cmd.args(["--engine", &c.address]).arg("--engine-share").arg(c.share());
    }
    cmd
}

/// [`build_cmd`], run; the output.
fn build_on(pipeline: &Path, out: &Path, cluster: Option<&Cluster>) -> std::process::Output {
    run(&mut build_cmd(pipeline, out, cluster))
}

/// Asserts that two release folders hold the same files with the same bytes.
fn assert_same_release(embedded: &Path, clustered: &Path) {
    let a = snapshot_files(embedded);
    let b = snapshot_files(clustered);
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&a), names(&b), "the same files");
    let differ: Vec<String> = a
        .iter()
        .zip(&b)
        .filter(|((_, x), (_, y))| x != y)
        .map(|((name, x), (_, y))| {
            let (x, y) = (String::from_utf8_lossy(x), String::from_utf8_lossy(y));
            let first = x.lines().zip(y.lines()).find(|(a, b)| a != b);
            format!("{name} (first at {first:?})")
        })
        .collect();
    assert!(differ.is_empty(), "differ between the embedded and the cluster build: {differ:#?}");
}

/// A pipeline of three JSON Lines files of `rows_per_file` rows each, keys interleaved across the files,
/// a table that groups them (array_agg, string_agg, window functions, runpack's functions) and
/// one that joins it back: work that a cluster splits into tasks.
fn multi_file_pipeline(dir: &Path, rows_per_file: usize) -> PathBuf {
    let p = dir.join("pipelines/multi");
    for f in 0..3 {
        let mut text = String::new();
        for i in 0..rows_per_file {
            let k = i * 3 + f;
            let uri = format!("tinker://run-{}/weights/{:06}", k % 7, k % 50);
            let score = if k % 97 == 0 { "NaN".to_string() } else { format!("{}", (k % 13) as f64 / 4.0) };
            text.push_str(&format!(
                "{{\"id\": {k}, \"group\": \"g{}\", \"uri\": \"{uri}\", \"score\": {score}}}\n",
                k % 11
            ));
        }
        write(&p, &format!("raw/part-{f}.jsonl"), &text);
    }
    write(
        &p,
        "pipeline.toml",
        r#"name = "multi"
version = "0.1.0"

[[source]]
name = "rows"
path = "raw/*.jsonl"
format = "jsonl"

[[table]]
name = "items"
query = """
SELECT id, "group", tinker_run_id(uri) AS run, tinker_checkpoint(uri) AS checkpoint, score,
       row_number() OVER (PARTITION BY "group" ORDER BY id) AS rank_in_group
FROM rows
"""

[[table]]
name = "groups"
query = """
SELECT "group", count(*) AS n, max(score) AS max_score, min(id) AS first_id,
       array_agg(id ORDER BY id) AS ids, string_agg(DISTINCT run, ',' ORDER BY run) AS runs
FROM items GROUP BY "group"
"""

[[table]]
name = "best"
query = """
SELECT i.id, i."group", i.score, g.n
FROM items i JOIN groups g ON i."group" = g."group"
WHERE i.rank_in_group <= 3
"""

[card]
license = "apache-2.0"
"#,
    );
    p
}

#[test]
fn queries_and_builds_on_a_cluster_match_the_embedded_ones() {
    let cluster = Cluster::start(2);
    let release = example_release();
    // three of the documented queries, in more than one output format; `ties`: the ORDER BY
    // leaves rows of equal values in no set order (here and embedded alike), so the lines
    // are compared as a set and the order of the sort key checked
    for (sql, format, ties) in [
        ("SELECT model, max(peak_accuracy) FROM training_runs GROUP BY model ORDER BY 2 DESC NULLS LAST", "csv", true),
        ("SELECT kind, count(*) FROM checkpoints GROUP BY kind ORDER BY kind", "table", false),
        ("SELECT name, step, source_files FROM checkpoints ORDER BY tinker_uri LIMIT 2", "json", false),
    ] {
        let embedded = query_on(release, sql, format, None);
        let clustered = query_on(release, sql, format, Some(&cluster.address));
        assert!(embedded.lines().count() >= 2, "{sql}: {embedded}");
        if ties {
            let sorted = |t: &str| {
                let mut l: Vec<String> = t.lines().map(String::from).collect();
                l.sort();
                l
            };
            assert_eq!(sorted(&embedded), sorted(&clustered), "{sql}");
            let peaks: Vec<f64> =
                clustered.lines().skip(1).filter_map(|l| l.rsplit(',').next()?.parse().ok()).collect();
            assert!(peaks.len() > 5 && peaks.windows(2).all(|w| w[0] >= w[1]), "{clustered}");
        } else {
            assert_eq!(embedded, clustered, "{sql}");
        }
    }

    // the bundled example, and a generated input of several files, built both ways
    let tmp = tempfile::tempdir().unwrap();
    let example = example_copy(tmp.path());
    let multi = multi_file_pipeline(tmp.path(), 4000);
    for (pipeline, name, version) in [(&example, "tinker-rl-bench", "1.0.0"), (&multi, "multi", "0.1.0")] {
        let embedded_out = tmp.path().join("embedded");
        let cluster_out = tmp.path().join("cluster");
        let o = build_on(pipeline, &embedded_out, None);
        assert!(o.status.success(), "embedded build of {name}: {}", stderr(&o));
        let o = build_on(pipeline, &cluster_out, Some(&cluster));
        assert!(o.status.success(), "cluster build of {name}: {}", stderr(&o));
        assert_same_release(&embedded_out.join(name).join(version), &cluster_out.join(name).join(version));
    }
    // the build's folder in the share is gone
    let left: Vec<_> = std::fs::read_dir(cluster.share()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_build_on_a_cluster_needs_a_share_and_a_scheduler_that_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = multi_file_pipeline(tmp.path(), 10);
    let out = tmp.path().join("out");
    let o = run(bin()
        .args(["build", "-q"])
        .arg(&pipeline)
        .arg("--releases-dir")
        .arg(&out)
        .args(["--engine", "df://127.0.0.1:9"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("needs --engine-share"), "{}", stderr(&o));
    let o = run(bin()
        .args(["build", "-q"])
        .arg(&pipeline)
        .arg("--releases-dir")
        .arg(&out)
        .args(["--engine", "127.0.0.1:9"]));
    assert!(stderr(&o).contains("df://HOST:PORT"), "{}", stderr(&o));
    // nothing listens on the port: the error names the engine, and no release is made
    let port = free_port();
    let o = run(bin()
        .args(["build", "-q"])
        .arg(&pipeline)
        .arg("--releases-dir")
        .arg(&out)
        .args(["--engine", &format!("df://127.0.0.1:{port}")])
        .arg("--engine-share")
        .arg(tmp.path().join("share")));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("127.0.0.1:{port}")), "{}", stderr(&o));
    assert!(!out.join("multi").join("0.1.0").exists());
}

#[test]
fn an_executor_killed_mid_build_fails_the_build_cleanly_or_is_replaced() {
    let mut cluster = Cluster::start(2);
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = multi_file_pipeline(tmp.path(), 30_000);
    let out = tmp.path().join("out");
    let mut build =
        build_cmd(&pipeline, &out, Some(&cluster)).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // the source is staged: the first table's job is about to run on the executors
    let started = std::time::Instant::now();
    let staged = || {
        std::fs::read_dir(cluster.share()).into_iter().flatten().flatten().any(|d| {
            d.path().join("rows.parquet").exists()
                && std::fs::metadata(d.path().join("rows.parquet")).is_ok_and(|m| m.len() > 0)
        })
    };
    while !staged() && build.try_wait().unwrap().is_none() && started.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(build.try_wait().unwrap().is_none(), "the build ended before an executor was killed");
    let killed = &mut cluster.executors[0];
    killed.kill().unwrap();
    killed.wait().unwrap();
    // the build ends, one way or the other, without hanging
    let waited = std::time::Instant::now();
    let status = loop {
        if let Some(s) = build.try_wait().unwrap() {
            break s;
        }
        if waited.elapsed().as_secs() > 240 {
            let _ = build.kill();
            panic!(
                "the build did not end within 240 s of the executor's death; the scheduler:\n{}",
                cluster.scheduler_log()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let o = build.wait_with_output().unwrap();
    let err = stderr(&o);
    let release = out.join("multi").join("0.1.0");
    eprintln!("the build after an executor was killed: {status}; {}", err.trim());
    if status.success() {
        // Ballista ran the lost tasks again: the release is the embedded build's
        let embedded = tmp.path().join("embedded");
        let e = build_on(&pipeline, &embedded, None);
        assert!(e.status.success(), "{}", stderr(&e));
        assert_same_release(&embedded.join("multi").join("0.1.0"), &release);
    } else {
        assert_eq!(status.code(), Some(2), "{err}");
        assert!(err.contains(&cluster.address), "the error names the engine: {err}");
        // no release, and no half-written one beside where it would be
        let left: Vec<_> = std::fs::read_dir(out.join("multi"))
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        assert!(left.iter().all(|n| !n.contains("0.1.0")), "{left:?}");
    }
}

/// Runs `cmd` and returns its output, failing the test when it has not ended within
/// `seconds` (the process is then killed).
fn run_within(cmd: &mut std::process::Command, seconds: u64, what: &str) -> std::process::Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed().as_secs() > seconds {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("{what} did not end within {seconds} s: {}", stderr(&o));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_job_that_fails_or_unions_on_the_cluster_ends_with_its_answer() {
    let cluster = Cluster::start(2);
    let release = example_release();
    // a UNION ALL of aggregates under an ORDER BY: Ballista's scheduler cuts each task's plan
    // to its partitions, and used to drop the tasks' statuses (the client then waited for ever)
    let sql = "SELECT k, n FROM (SELECT 1 AS k, 28 AS n UNION ALL SELECT 2, count(*) FROM training_runs \
               UNION ALL SELECT 3, count(*) FROM checkpoints) ORDER BY k";
    let embedded = query_on(release, sql, "csv", None);
    let mut cmd = bin();
    cmd.args(["query", "-q", "--format", "csv"]).arg(release).arg(sql).args(["--engine", &cluster.address]);
    let o = run_within(&mut cmd, 60, "a UNION ALL query on the cluster");
    assert!(o.status.success(), "{}\n{}", stderr(&o), cluster.scheduler_log());
    assert_eq!(stdout(&o), embedded);
    assert_eq!(embedded.lines().count(), 4, "{embedded}");

    // a plan that fails on the executors: the job's error, naming the engine, exit 2
    let mut cmd = bin();
    cmd.args(["query", "-q", "--format", "csv"])
        .arg(release)
        .arg("SELECT CAST(name AS INT) FROM checkpoints")
        .args(["--engine", &cluster.address]);
    let o = run_within(&mut cmd, 60, "a failing query on the cluster");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(&format!("on the engine {}", cluster.address)), "{err}");
    assert!(err.contains("failed") && err.contains("Cannot cast string"), "{err}");

    // the same in a build: the table and the engine are named, nothing is released, the
    // share is left empty
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = multi_file_pipeline(tmp.path(), 50);
    let toml = std::fs::read_to_string(pipeline.join("pipeline.toml")).unwrap();
    std::fs::write(
        pipeline.join("pipeline.toml"),
        toml.replace("tinker_run_id(uri) AS run", "CAST(\"group\" AS INT) AS run"),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let mut cmd = build_cmd(&pipeline, &out, Some(&cluster));
    let o = run_within(&mut cmd, 120, "a failing build on the cluster");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("table items") && err.contains(&format!("on the engine {}", cluster.address)), "{err}");
    assert!(err.contains("Cannot cast string 'g"), "{err}");
    assert!(!out.join("multi").join("0.1.0").exists());
    let left: Vec<_> = std::fs::read_dir(cluster.share()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_killed_builds_folder_in_the_share_is_removed_by_the_next_build_and_a_live_ones_is_not() {
    let cluster = Cluster::start(2);
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = multi_file_pipeline(tmp.path(), 30_000);
    let out = tmp.path().join("out");
    // a folder a running build holds (this test process holds its lock)
    let live = cluster.share().join(".runpack-build-live");
    std::fs::create_dir_all(&live).unwrap();
    std::fs::write(live.join("rows.parquet"), b"in use").unwrap();
    let held = std::fs::File::open(&live).unwrap();
    held.lock().unwrap();
    let mut build =
        build_cmd(&pipeline, &out, Some(&cluster)).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    // killed (SIGKILL) while it stages its source in the share
    let started = std::time::Instant::now();
    let staging =
        || {
            std::fs::read_dir(cluster.share()).into_iter().flatten().flatten().any(|d| {
                d.path() != live && std::fs::read_dir(d.path()).into_iter().flatten().flatten().next().is_some()
            })
        };
    while !staging() && started.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(build.try_wait().unwrap().is_none(), "the build ended before it was killed");
    build.kill().unwrap();
    build.wait().unwrap();
    let folders = || {
        let mut v: Vec<String> = std::fs::read_dir(cluster.share())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = folders();
    assert_eq!(before.len(), 2, "the killed build's folder is left: {before:?}");
    // the next build removes it, and leaves the live one
    let small = multi_file_pipeline(&tmp.path().join("small"), 20);
    let o = build_on(&small, &tmp.path().join("out2"), Some(&cluster));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(folders(), vec![".runpack-build-live".to_string()]);
    assert_eq!(std::fs::read(live.join("rows.parquet")).unwrap(), b"in use");
    // once its lock is let go, it is stale too
    drop(held);
    let o = build_on(&small, &tmp.path().join("out3"), Some(&cluster));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(folders().is_empty(), "{:?}", folders());
}

/// A loopback S3 server (`moto_server`, from tests/python/requirements.txt), stopped when
/// dropped.
struct S3Server {
    child: Child,
    endpoint: String,
}

impl S3Server {
    fn start() -> S3Server {
        let moto = python().with_file_name("moto_server");
        let port = free_port();
        let child = std::process::Command::new(&moto)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e} (pip install -r tests/python/requirements.txt)", moto.display()));
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed().as_secs() < 60, "moto_server did not listen on {port}");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        S3Server { child, endpoint: format!("http://127.0.0.1:{port}") }
    }

    /// Runs a boto3 script with `s3` a client of this server; its stdout.
    fn boto(&self, script: &str) -> String {
        let code = format!(
            "import boto3\ns3 = boto3.client('s3', endpoint_url='{}', region_name='us-east-1', \
             aws_access_key_id='k', aws_secret_access_key='s')\n{script}",
            self.endpoint
        );
        let o = run(std::process::Command::new(python()).arg("-c").arg(code));
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_build_with_an_s3_share_matches_the_embedded_build() {
    let s3 = S3Server::start();
    s3.boto("s3.create_bucket(Bucket='share')");
    const SECRET: &str = "secret-never-printed-7f3a";
    let env = [
        ("AWS_ACCESS_KEY_ID", "runpack-test"),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL", s3.endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
    ];
    let cluster = Cluster::start_with_env(2, &env);
    let tmp = tempfile::tempdir().unwrap();
    let example = example_copy(tmp.path());
    let embedded = tmp.path().join("embedded");
    let o = build_on(&example, &embedded, None);
    assert!(o.status.success(), "{}", stderr(&o));
    // a killed build's prefix, of a process of this host that is gone
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    s3.boto(&format!(
        "s3.put_object(Bucket='share', Key='runs/.runpack-build-1-dead/owner', Body=b'{} 4194304 1\\n')\n\
         s3.put_object(Bucket='share', Key='runs/.runpack-build-1-dead/sources/x.parquet', Body=b'x')",
        host.trim()
    ));
    let clustered = tmp.path().join("cluster");
    let o = run(bin()
        .args(["build"])
        .arg(&example)
        .arg("--releases-dir")
        .arg(&clustered)
        .args(["--engine", &cluster.address, "--engine-share", "s3://share/runs"])
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .env("RUST_LOG", "runpack=info")
        .envs(env));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}\n{}", cluster.scheduler_log());
    assert!(!err.contains(SECRET), "the secret key is printed: {err}");
    let (a, b) = (embedded.join("tinker-rl-bench/1.0.0"), clustered.join("tinker-rl-bench/1.0.0"));
    assert_same_release(&a, &b);
    let release = std::fs::read_to_string(b.join("manifest.json")).unwrap();
    assert!(!release.contains(SECRET) && !release.contains("s3://"), "{release}");
    // the build read its sources from the bucket, and left nothing there (the killed build's
    // prefix included)
    assert!(err.contains(".parquet copied to s3://share/runs/.runpack-build-"), "{err}");
    assert!(err.contains("removing s3://share/runs/.runpack-build-1-dead, left by a build that was killed"), "{err}");
    let left = s3.boto("print(sorted(o['Key'] for o in s3.list_objects_v2(Bucket='share').get('Contents', [])))");
    assert_eq!(left.trim(), "[]");
    // and a query of the release on the same cluster
    let sql = "SELECT kind, count(*) FROM checkpoints GROUP BY kind ORDER BY kind";
    assert_eq!(query_on(&b, sql, "csv", Some(&cluster.address)), query_on(&b, sql, "csv", None));
    // wrong credentials: the build fails naming the share, never the secret
    let mut bad = env;
    bad[1].1 = "wrong-secret-4c1d";
    let o = run(bin()
        .args(["build", "-q"])
        .arg(&example)
        .arg("--releases-dir")
        .arg(tmp.path().join("bad"))
        .args(["--engine", &cluster.address, "--engine-share", "s3://missing-bucket/runs"])
        .envs(bad));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("s3://missing-bucket"), "{err}");
    assert!(!err.contains("wrong-secret-4c1d"), "{err}");
}
