"""runpack benchmark: builds, verify, queries and unchanged rebuilds against DuckDB and sha256sum.

Generates synthetic post-training logs of a given total size:
  metrics.jsonl      per-step metrics of many runs, ~25 sparse keys per step, bare NaN tokens
  generations.jsonl  per-example evaluation samples (3 benchmarks, 2 splits) with ~1 KB texts
  checkpoints.jsonl  one row per (run, checkpoint)
  evaluations.jsonl  one row per (checkpoint, benchmark)
then times, on the same machine in the same run (medians of --runs; of --short-runs for verify and
the queries, which take tens of milliseconds and move by a few from run to run):
  build        a Parquet-only release (read, validate, write zstd Parquet, hash)
               vs DuckDB COPY (SELECT * FROM read_json_auto(...)) TO ... (FORMAT parquet, COMPRESSION zstd)
  build-jsonl  a release with JSON Lines copies of every table vs DuckDB writing Parquet and JSON
               and Python's hashlib hashing every input and output with SHA-256
  verify       runpack verify of the release vs sha256sum over the same files
  queries      five queries over whole tables: runpack query vs DuckDB over the same Parquet files
  rebuild      runpack build with unchanged inputs vs a full build
the peak resident memory of each process, the peak memory of one build of --rss-size of input,
and the top of a CPU profile of one build (perf record, where perf is installed).
With --engine, only the Parquet-only build, embedded and on a Ballista cluster (a scheduler and
two executors from the same binary, on loopback): time, and peak memory of every process.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time

TARGETS = {"build": 0.8, "build-jsonl": 0.35, "verify": 0.2, "query": 1.0, "rebuild": 0.05}
BENCHMARKS = ("gsm8k", "math500", "aime24")
RSS_LIMIT_MIB = 512


def parse_size(s):
    s = s.strip().upper()
    for unit, mult in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3), ("B", 1)):
        if s.endswith(unit):
            return int(float(s[: -len(unit)]) * mult)
    return int(s)


def generate(dir, size):
    """Writes the four inputs; metrics and generations each take half of `size` bytes."""
    os.makedirs(dir, exist_ok=True)
    rnd = random.Random(7)
    keys = [f"env/all/{k}" for k in ("reward/total", "correct", "format", "ac_tokens_per_turn", "ob_tokens_per_turn",
                                     "turns_per_episode", "total_episodes", "total_ac_tokens", "total_ob_tokens",
                                     "by_group/frac_mixed", "by_group/frac_all_good", "by_group/frac_all_bad")]
    keys += ["optim/lr", "optim/entropy", "optim/kl_sample_train_v1", "optim/kl_sample_train_v2",
             "progress/done_frac", "progress/batch", "time/total", "time/train", "time/sample",
             "time/save_checkpoint", "test/env/all/reward/total", "test/env/all/correct", "teacher_kl"]
    runs = []
    with open(os.path.join(dir, "metrics.jsonl"), "w") as f:
        written, run, step = 0, 0, 0
        while written < size // 2:
            if step == 2000:
                run, step = run + 1, 0
            rid = f"{run:08x}-0000-5000-8000-000000000000:train:0"
            if step == 0:
                runs.append(rid)
            parts = [f'"run_id": "{rid}"', f'"step": {step}']
            for k in keys:
                r = rnd.random()
                if k.startswith("test/") and step % 10:
                    continue
                if r < 0.05:
                    continue
                parts.append(f'"{k}": {"NaN" if r < 0.055 else repr(rnd.random())}')
            line = "{" + ", ".join(parts) + "}\n"
            f.write(line)
            written += len(line)
            step += 1
    ckpts = [(rid, f"{n:06d}") for rid in runs for n in range(100, 2001, 100)]
    with open(os.path.join(dir, "checkpoints.jsonl"), "w") as f:
        for rid, name in ckpts:
            f.write(json.dumps({"training_run_id": rid, "name": name, "step": int(name),
                                "tinker_uri": f"tinker://{rid}/sampler_weights/{name}"}) + "\n")
    text = "".join(rnd.choice("abcdefghij klmnopqrstuvwxyz0123456789.,") for _ in range(1000))
    with open(os.path.join(dir, "generations.jsonl"), "w") as f:
        written, i = 0, 0
        while written < size // 2:
            rid, name = ckpts[(i // 5000) % len(ckpts)]
            line = json.dumps({"tinker_uri": f"tinker://{rid}/sampler_weights/{name}", "benchmark": BENCHMARKS[i % 3],
                               "split": "test" if i % 5 else "validation", "example_id": i % 5000, "sample": 0, "reward": float((i // 3) % 4 == 0),
                               "response_tokens": 100 + i % 400, "text": text[i % 500:] + text[: i % 500]}) + "\n"
            f.write(line)
            written += len(line)
            i += 1
    with open(os.path.join(dir, "evaluations.jsonl"), "w") as f:
        for rid, name in ckpts:
            for b in BENCHMARKS:
                f.write(json.dumps({"tinker_uri": f"tinker://{rid}/sampler_weights/{name}", "benchmark": b,
                                    "score": rnd.random(), "num_examples": 5000}) + "\n")
    return runs


def write_pipeline(dir, formats):
    """Writes pipeline.toml, and the schemas it declares, into `dir`, beside the inputs; the
    release's files are `formats` (`["parquet"]` or `["parquet", "jsonl"]`)."""
    metric_keys = []
    with open(os.path.join(dir, "metrics.jsonl")) as f:
        for line in f:
            for k in json.loads(line.replace("NaN", "null")):
                if k not in metric_keys:
                    metric_keys.append(k)
            if len(metric_keys) > 26:
                break
    def schema(fields, pk, fks=()):
        return {"fields": [{"name": n, "type": t} for n, t in fields], "primaryKey": pk,
                "foreignKeys": [{"fields": a, "reference": {"resource": r, "fields": b}} for a, r, b in fks]}
    os.makedirs(os.path.join(dir, "schemas"), exist_ok=True)
    fields = [("run_id", "string"), ("step", "integer")] + [(k, "number") for k in metric_keys if k not in ("run_id", "step")]
    json.dump(schema(fields + [("_source_file", "string"), ("_source_line", "integer")], ["run_id", "step"]), open(os.path.join(dir, "schemas/metrics.json"), "w"))
    json.dump(schema(fields, []), open(os.path.join(dir, "schemas/metrics_src.json"), "w"))
    gen = [("tinker_uri", "string"), ("benchmark", "string"), ("split", "string"), ("example_id", "integer"), ("sample", "integer"),
           ("reward", "number"), ("response_tokens", "integer"), ("text", "string")]
    json.dump(schema(gen, []), open(os.path.join(dir, "schemas/gen_src.json"), "w"))
    json.dump(schema(gen + [("_source_file", "string"), ("_source_line", "integer")], ["tinker_uri", "benchmark", "example_id", "sample"]), open(os.path.join(dir, "schemas/samples.json"), "w"))
    ck = [("training_run_id", "string"), ("name", "string"), ("step", "integer"), ("tinker_uri", "string")]
    json.dump(schema(ck, []), open(os.path.join(dir, "schemas/ck_src.json"), "w"))
    json.dump(schema(ck, ["training_run_id", "name"]), open(os.path.join(dir, "schemas/checkpoints.json"), "w"))
    ev = [("tinker_uri", "string"), ("benchmark", "string"), ("score", "number"), ("num_examples", "integer")]
    json.dump(schema(ev, []), open(os.path.join(dir, "schemas/ev_src.json"), "w"))
    json.dump(schema(ev, ["tinker_uri", "benchmark"]), open(os.path.join(dir, "schemas/evaluations.json"), "w"))
    with open(os.path.join(dir, "pipeline.toml"), "w") as f:
        f.write(f'name = "bench"\nformats = {json.dumps(formats)}\n')
        for name, path, sch in (("metrics_src", "metrics.jsonl", "metrics_src"), ("gen_src", "generations.jsonl", "gen_src"),
                                ("ck_src", "checkpoints.jsonl", "ck_src"), ("ev_src", "evaluations.jsonl", "ev_src")):
            f.write(f'[[source]]\nname = "{name}"\npath = "{path}"\nformat = "jsonl"\nschema = "schemas/{sch}.json"\n')
        for name, src, sch in (("metrics", "metrics_src", "metrics"), ("samples", "gen_src", "samples"),
                               ("checkpoints", "ck_src", "checkpoints"), ("evaluations", "ev_src", "evaluations")):
            cols = "*" if name in ("metrics", "samples") else "* EXCLUDE (_source_file, _source_line)"
            f.write(f'[[table]]\nname = "{name}"\nschema = "schemas/{sch}.json"\nquery = "SELECT {cols} FROM {src}"\n')


def timed(cmd, clock="process"):
    """Runs `cmd`; returns (seconds, peak RSS in MiB). `clock` says whose seconds: "process"
    (wall time of the whole process), "stdout" (the number the command prints last: the DuckDB
    script times only its SQL, so Python's start and `import duckdb`, ~0.35 s, do not count
    against it) or "timing" (runpack query --timing's `elapsed: <s> s` on stderr: the same
    span, registering the tables, planning and running). Dirty pages are flushed first, so
    that writing back what an earlier run wrote does not land on this one."""
    os.sync()
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    outputs = {}
    readers = [threading.Thread(target=lambda n=n, f=f: outputs.__setitem__(n, f.read()))
               for n, f in (("out", p.stdout), ("err", p.stderr))]
    for r in readers:
        r.start()
    _, status, usage = os.wait4(p.pid, 0)
    elapsed = time.perf_counter() - start
    for r in readers:
        r.join()
    err = outputs["err"].decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{err}")
    if clock == "stdout":
        elapsed = float(outputs["out"].decode().split()[-1])
    elif clock == "timing":
        elapsed = float(next(l for l in err.splitlines() if l.startswith("elapsed: ")).split()[1])
    return elapsed, usage.ru_maxrss / 1024


def median(xs):
    return statistics.median(xs)


DUCK = """import duckdb, hashlib, os, sys, time
con = duckdb.connect()
con.execute('SET threads TO 2')
start = time.perf_counter()
args = sys.argv[1:]
hashed = args[args.index('--hash') + 1:] if '--hash' in args else []
for sql in args[: len(args) - len(hashed) - (1 if hashed else 0)]:
    con.execute(sql).fetchall()
for d in hashed:
    for root, _, files in os.walk(d) if os.path.isdir(d) else [(os.path.dirname(d), [], [os.path.basename(d)])]:
        for name in sorted(files):
            h = hashlib.sha256()
            with open(os.path.join(root, name), 'rb') as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
print(time.perf_counter() - start)
"""


def queries(runs, parquet):
    """The five queries over whole tables: (name, runpack's SQL, DuckDB's SQL). Each returns a
    few rows, so that printing does not count; the two spellings compute the same thing."""
    metric = '"env/all/reward/total"'
    moving = (f"SELECT count(*), sum(ma) FROM (SELECT avg({metric}) OVER (PARTITION BY run_id ORDER BY step "
              "ROWS BETWEEN 49 PRECEDING AND CURRENT ROW) AS ma FROM {t})")
    keys = ['"env/all/correct"', '"optim/lr"', '"optim/entropy"', '"time/total"', metric]
    accuracy = ("SELECT s.benchmark, s.split, avg(s.reward) AS accuracy, count(*) FROM {s} s JOIN {e} e "
                "ON s.tinker_uri = e.tinker_uri AND s.benchmark = e.benchmark GROUP BY 1, 2 ORDER BY 1, 2")
    distinct = "SELECT benchmark, count(DISTINCT example_id) FROM {s} GROUP BY 1 ORDER BY 1"
    return [
        ("query: mean, min, max, p95 of a metric per run",
         f"SELECT run_id, avg({metric}), min({metric}), max({metric}), approx_percentile_cont({metric}, 0.95) "
         "FROM metrics GROUP BY run_id ORDER BY run_id",
         f"SELECT run_id, avg({metric}), min({metric}), max({metric}), approx_quantile({metric}, 0.95) "
         f"FROM {parquet('metrics')} GROUP BY run_id ORDER BY run_id"),
        ("query: moving average over 50 steps per run", moving.format(t="metrics"), moving.format(t=parquet("metrics"))),
        ("query: last value of every metric of every run",
         "SELECT run_id, " + ", ".join(f"last_value({k} ORDER BY step)" for k in keys) + " FROM metrics GROUP BY run_id ORDER BY run_id",
         "SELECT run_id, " + ", ".join(f"last({k} ORDER BY step)" for k in keys) + f" FROM {parquet('metrics')} GROUP BY run_id ORDER BY run_id"),
        ("query: samples JOIN evaluations, accuracy by benchmark and split",
         accuracy.format(s="samples", e="evaluations"), accuracy.format(s=parquet("samples"), e=parquet("evaluations"))),
        ("query: COUNT(DISTINCT example_id) per benchmark", distinct.format(s="samples"), distinct.format(s=parquet("samples"))),
    ]


def profile(runpack, data, work):
    """The build's CPU profile: the top symbols of `perf record` (software clock), or why not."""
    perf = shutil.which("perf")
    if not perf:
        return "perf is not installed (Debian: linux-perf): no profile"
    out = os.path.join(work, "perf.data")
    rec = subprocess.run([perf, "record", "-e", "cpu-clock", "-F", "999", "-g", "-o", out, "--", runpack, "build", "-q",
                          data, "--releases-dir", os.path.join(work, "releases-profile")], capture_output=True, text=True)
    if rec.returncode != 0:
        return f"perf record failed: {rec.stderr.strip().splitlines()[-1:]}"
    rep = subprocess.run([perf, "report", "-i", out, "--stdio", "--no-children", "--sort", "symbol",
                          "--percent-limit", "1", "-g", "none", "--fields", "overhead,sym"], capture_output=True, text=True)
    rows = []
    for line in rep.stdout.splitlines():
        parts = line.split()
        if not line.strip() or line.startswith("#") or not parts[0].endswith("%"):
            continue
        # "12.34%  [.] symbol  -  -": the share and the symbol, highest share first
        symbol = " ".join(p for p in parts[1:] if p != "-")
        rows.append((float(parts[0].rstrip("%")), symbol))
    rows.sort(key=lambda r: -r[0])
    return "\n".join(f"{share:6.2f}%  {symbol}" for share, symbol in rows[:25])


def build_rss(runpack, size, work):
    """Peak resident memory of a Parquet-only build of `size` bytes of input, in MiB, and its seconds."""
    data = os.path.join(work, f"pipeline-{size}")
    print(f"generating {size / 1e9:.2f} GB of inputs in {data} ...", file=sys.stderr)
    generate(data, size)
    write_pipeline(data, ["parquet"])
    t, rss = timed([runpack, "build", "-q", data, "--releases-dir", os.path.join(work, f"releases-{size}")])
    shutil.rmtree(data, ignore_errors=True)
    shutil.rmtree(os.path.join(work, f"releases-{size}"), ignore_errors=True)
    return t, rss


def vm_hwm_mib(pid):
    """Peak resident memory of a running process so far (VmHWM), in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def engine_bench(runpack, data, work, runs, executors=2):
    """--engine: the Parquet-only build embedded and on a Ballista cluster of `executors`
    executors started from `runpack` on loopback (runpack cluster scheduler|executor). Prints
    the medians of `runs` builds and the peak memory of each process; checks that the two
    releases hold the same bytes."""
    procs = []
    try:
        sched = subprocess.Popen([runpack, "cluster", "scheduler", "--bind", "127.0.0.1:0"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(("scheduler", sched))
        address = sched.stdout.readline().strip().split()[-1]
        for i in range(executors):
            e = subprocess.Popen([runpack, "cluster", "executor", "--scheduler", address[len("df://"):],
                                  "--port", str(free_port()), "--grpc-port", str(free_port()),
                                  "--work-dir", os.path.join(work, f"executor-{i}")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append((f"executor {i}", e))
        share = os.path.join(work, "share")
        results = {}
        for mode in ("embedded", "cluster"):
            times, rss = [], []
            for r in range(runs):
                out = os.path.join(work, f"releases-{mode}")
                shutil.rmtree(out, ignore_errors=True)
                cmd = [runpack, "build", "-q", data, "--releases-dir", out]
                if mode == "cluster":
                    cmd += ["--engine", address, "--engine-share", share]
                t, m = timed(cmd)
                times.append(t); rss.append(m)
            results[mode] = (median(times), max(rss))
        same = all(open(os.path.join(dp, f), "rb").read() == open(os.path.join(dp.replace("releases-embedded", "releases-cluster"), f), "rb").read()
                   for dp, _, fs in os.walk(os.path.join(work, "releases-embedded")) for f in fs)
        peaks = [(name, vm_hwm_mib(p.pid)) for name, p in procs]
    finally:
        for _, p in procs:
            p.terminate()
            p.wait()
    print(f"\nbuild, Parquet only, medians of {runs} runs; {executors} executors on this machine (loopback)\n")
    print("| engine | build s | runpack peak RSS MiB | cluster processes' peak RSS MiB |")
    print("|---|---|---|---|")
    print(f"| embedded | {results['embedded'][0]:.3f} | {results['embedded'][1]:.0f} | |")
    cluster = ", ".join(f"{n} {m:.0f}" for n, m in peaks)
    print(f"| cluster ({address}) | {results['cluster'][0]:.3f} | {results['cluster'][1]:.0f} | {cluster} |")
    print(f"\nthe two releases hold the same bytes: {'yes' if same else 'NO'}")
    if not same:
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runpack", required=True)
    ap.add_argument("--size", default="1GB")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--short-runs", type=int, default=9,
                    help="runs of each short measurement (verify and the queries, tens of milliseconds), for their medians")
    ap.add_argument("--rss-size", default="5GB", help="also build this much input once, for peak memory (0: skip)")
    ap.add_argument("--workdir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "runpack-bench"))
    ap.add_argument("--engine", action="store_true",
                    help="only compare the build embedded and on a Ballista cluster started from --runpack on loopback")
    a = ap.parse_args()
    size = parse_size(a.size)
    work = a.workdir
    shutil.rmtree(work, ignore_errors=True)
    # runs a copy, as `cargo install` places one: a file the linker wrote stays in the page
    # cache in small pieces, and each process then takes ~20 % more page faults to map its code
    # (`SELECT 1`, whole process: 1,083 faults and 8.5 ms from target/release, 895 and 5.8 ms
    # from a copy)
    os.makedirs(os.path.join(work, "bin"))
    installed = os.path.join(work, "bin", "runpack")
    shutil.copy2(a.runpack, installed)
    a.runpack = installed
    data = os.path.join(work, "pipeline")
    print(f"generating {size / 1e9:.2f} GB of inputs in {data} ...", file=sys.stderr)
    runs = generate(data, size)
    write_pipeline(data, ["parquet"])
    if a.engine:
        engine_bench(a.runpack, data, work, a.runs)
        return
    inputs = [os.path.join(data, f) for f in sorted(os.listdir(data)) if f.endswith(".jsonl")]
    # the same inputs (hard links) in a pipeline that also writes JSON Lines copies
    data_jsonl = os.path.join(work, "pipeline-jsonl")
    os.makedirs(data_jsonl)
    for f in inputs:
        os.link(f, os.path.join(data_jsonl, os.path.basename(f)))
    write_pipeline(data_jsonl, ["parquet", "jsonl"])
    input_bytes = sum(os.path.getsize(f) for f in inputs)
    py = sys.executable
    duck = os.path.join(work, "duck.py")
    with open(duck, "w") as f:
        f.write(DUCK)
    rows = []

    def compare(name, ours_cmd, theirs_cmd, target, ours_clock="process", theirs_clock="stdout", runs=a.runs):
        ours, theirs, ours_rss, theirs_rss = [], [], [], []
        for _ in range(runs):
            t, r = timed(ours_cmd(), ours_clock)
            ours.append(t); ours_rss.append(r)
            t, r = timed(theirs_cmd(), theirs_clock)
            theirs.append(t); theirs_rss.append(r)
        ratio = median(ours) / median(theirs)
        rows.append((name, median(ours), median(theirs), ratio, target, max(ours_rss), max(theirs_rss)))

    counter = [0]
    def out_dir():
        counter[0] += 1
        return os.path.join(work, f"releases-{counter[0]}")
    def duck_out():
        out = os.path.join(work, "duck-out")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        return out
    names = ("metrics", "generations", "checkpoints", "evaluations")
    def duck_convert():
        out = duck_out()
        return [py, duck] + [f"COPY (SELECT * FROM read_json_auto('{data}/{n}.jsonl')) TO '{out}/{n}.parquet' "
                             "(FORMAT parquet, COMPRESSION zstd)" for n in names]
    def duck_same_work():
        out = duck_out()
        sqls = []
        for n in names:
            sqls.append(f"CREATE OR REPLACE TABLE t AS SELECT * FROM read_json_auto('{data}/{n}.jsonl')")
            sqls.append(f"COPY t TO '{out}/{n}.parquet' (FORMAT parquet, COMPRESSION zstd)")
            sqls.append(f"COPY t TO '{out}/{n}.jsonl' (FORMAT json)")
        return [py, duck] + sqls + ["--hash"] + inputs + [out]
    compare("build, Parquet only (read, validate, Parquet, SHA-256) vs DuckDB COPY to Parquet",
            lambda: [a.runpack, "build", "-q", data, "--releases-dir", out_dir()], duck_convert, TARGETS["build"])
    release = os.path.join(work, f"releases-{counter[0]}", "bench", "0.1.0")
    compare("build with JSONL copies vs DuckDB to Parquet + JSON + hashlib SHA-256 of inputs and outputs",
            lambda: [a.runpack, "build", "-q", data_jsonl, "--releases-dir", out_dir()], duck_same_work, TARGETS["build-jsonl"])
    files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(release) for f in fs if f != "SHA256SUMS")
    compare("verify vs sha256sum of the same files", lambda: [a.runpack, "verify", "-q", release],
            lambda: ["sha256sum"] + files, TARGETS["verify"], theirs_clock="process", runs=a.short_runs)
    parquet = lambda t: f"read_parquet('{release}/data/{t}*.parquet')"
    for name, ours, theirs in queries(runs, parquet):
        compare(name, lambda q=ours: [a.runpack, "query", "-q", "--timing", "--format", "csv", release, q],
                lambda q=theirs: [py, duck, q], TARGETS["query"], ours_clock="timing", runs=a.short_runs)
    # unchanged rebuild vs full build
    rb = os.path.join(work, "releases-rebuild")
    full, again, full_rss, again_rss = [], [], [], []
    for _ in range(a.runs):
        shutil.rmtree(rb, ignore_errors=True)
        t, r = timed([a.runpack, "build", "-q", data, "--releases-dir", rb])
        full.append(t); full_rss.append(r)
        t, r = timed([a.runpack, "build", "-q", data, "--releases-dir", rb])
        again.append(t); again_rss.append(r)
    rows.append(("unchanged rebuild vs full build", median(again), median(full), median(again) / median(full),
                 TARGETS["rebuild"], max(again_rss), max(full_rss)))
    prof = profile(a.runpack, data, work)
    for d in os.listdir(work):
        if d.startswith("releases-"):
            shutil.rmtree(os.path.join(work, d), ignore_errors=True)
    big = parse_size(a.rss_size) if a.rss_size not in ("0", "") else 0
    big_result = build_rss(a.runpack, big, work) if big else None

    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True).stdout.strip()
    print(f"\ninputs: {input_bytes / 1e9:.2f} GB ({input_bytes:,} bytes) of JSON Lines; {os.cpu_count()} cores ({cpu}); "
          f"medians of {a.runs} runs (verify and queries: {a.short_runs})")
    print("builds, verify and rebuild: runpack's whole process; queries: runpack's SQL only (query --timing).\n"
          "DuckDB: its SQL (and hashing) only, timed inside its process; sha256sum: whole process\n")
    print("| measurement | runpack s | baseline s | ratio | target | met | runpack peak RSS MiB | baseline peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for name, ours, theirs, ratio, target, orss, trss in rows:
        met = "yes" if ratio <= target else f"no (by {ratio / target:.2f}x)"
        print(f"| {name} | {ours:.3f} | {theirs:.3f} | {ratio:.2f} | <= {target} | {met} | {orss:.0f} | {trss:.0f} |")
    peak = max(r[5] for r in rows)
    print(f"\nrunpack peak RSS at {input_bytes / 1e9:.2f} GB: {peak:.0f} MiB (target <= {RSS_LIMIT_MIB} MiB: "
          f"{'met' if peak <= RSS_LIMIT_MIB else 'missed'})")
    if big_result:
        t, rss = big_result
        print(f"runpack peak RSS at {big / 1e9:.2f} GB: {rss:.0f} MiB in {t:.1f} s (target <= {RSS_LIMIT_MIB} MiB: "
              f"{'met' if rss <= RSS_LIMIT_MIB else 'missed'})")
    print("\nprofile of one Parquet-only build (perf record -e cpu-clock; share of samples, symbols over 1 %):")
    print(prof)


if __name__ == "__main__":
    main()
