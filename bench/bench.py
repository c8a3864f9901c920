"""runpack benchmark: build, verify, queries and unchanged rebuilds against DuckDB and sha256sum.

Generates synthetic post-training logs of a given total size:
  metrics.jsonl      per-step metrics of many runs, ~25 sparse keys per step, bare NaN tokens
  generations.jsonl  per-example evaluation samples with ~1 KB generation texts
  checkpoints.jsonl  one row per (run, checkpoint)
  evaluations.jsonl  one row per (checkpoint, benchmark)
then times, on the same machine in the same run (medians of --runs; of 5 x --runs for the
queries, which take milliseconds):
  build      runpack build (read, validate, write zstd Parquet + JSONL, hash)
             vs DuckDB COPY (SELECT * FROM read_json_auto(...)) TO ... (FORMAT parquet, COMPRESSION zstd)
  verify     runpack verify of the release vs sha256sum over the same files
  queries    GROUP BY checkpoint, a join of evaluations to checkpoints, a filter on one run's
             metrics: runpack query vs DuckDB over the same Parquet files
  rebuild    runpack build with unchanged inputs vs a full build
and the peak resident memory of each process.
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

TARGETS = {"build": 0.8, "verify": 0.2, "query": 1.2, "rebuild": 0.05}
RSS_LIMIT_MIB = 512
# queries take milliseconds, so each is timed this many times more often than the rest
QUERY_RUNS = 5


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
            line = json.dumps({"tinker_uri": f"tinker://{rid}/sampler_weights/{name}", "benchmark": "gsm8k",
                               "example_id": i % 5000, "sample": 0, "reward": float(i % 3 == 0),
                               "response_tokens": 100 + i % 400, "text": text[i % 500:] + text[: i % 500]}) + "\n"
            f.write(line)
            written += len(line)
            i += 1
    with open(os.path.join(dir, "evaluations.jsonl"), "w") as f:
        for rid, name in ckpts:
            f.write(json.dumps({"tinker_uri": f"tinker://{rid}/sampler_weights/{name}", "benchmark": "gsm8k",
                                "score": rnd.random(), "num_examples": 5000}) + "\n")
    return runs


def write_pipeline(dir):
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
    gen = [("tinker_uri", "string"), ("benchmark", "string"), ("example_id", "integer"), ("sample", "integer"),
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
        f.write('name = "bench"\n')
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runpack", required=True)
    ap.add_argument("--size", default="1GB")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "runpack-bench"))
    a = ap.parse_args()
    size = parse_size(a.size)
    work = a.workdir
    shutil.rmtree(work, ignore_errors=True)
    data = os.path.join(work, "pipeline")
    print(f"generating {size / 1e9:.2f} GB of inputs in {data} ...", file=sys.stderr)
    runs = generate(data, size)
    write_pipeline(data)
    inputs = sum(os.path.getsize(os.path.join(data, f)) for f in os.listdir(data) if f.endswith(".jsonl"))
    py = sys.executable
    duck = os.path.join(work, "duck.py")
    with open(duck, "w") as f:
        f.write("import duckdb, sys, time\ncon = duckdb.connect()\ncon.execute('SET threads TO 2')\n"
                "start = time.perf_counter()\n"
                "for sql in sys.argv[1:]:\n    con.execute(sql).fetchall()\n"
                "print(time.perf_counter() - start)\n")
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

    # build vs DuckDB's plain conversion
    counter = [0]
    def out_dir():
        counter[0] += 1
        return os.path.join(work, f"releases-{counter[0]}")
    def duck_convert():
        out = os.path.join(work, "duck-out")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        sqls = [f"COPY (SELECT * FROM read_json_auto('{data}/{n}.jsonl')) TO '{out}/{n}.parquet' (FORMAT parquet, COMPRESSION zstd)"
                for n in ("metrics", "generations", "checkpoints", "evaluations")]
        return [py, duck] + sqls
    compare("build (read, validate, Parquet + JSONL, hash) vs DuckDB COPY to Parquet",
            lambda: [a.runpack, "build", "-q", data, "--releases-dir", out_dir()], duck_convert, TARGETS["build"])
    release = os.path.join(work, f"releases-{counter[0]}", "bench", "0.1.0")
    files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(release) for f in fs if f != "SHA256SUMS")
    compare("verify vs sha256sum of the same files", lambda: [a.runpack, "verify", "-q", release],
            lambda: ["sha256sum"] + files, TARGETS["verify"], theirs_clock="process")
    parquet = lambda t: f"read_parquet('{release}/data/{t}*.parquet')"
    queries = [
        ("query: GROUP BY checkpoint",
         "SELECT tinker_uri, avg(reward), count(*) FROM samples GROUP BY tinker_uri ORDER BY tinker_uri",
         f"SELECT tinker_uri, avg(reward), count(*) FROM {parquet('samples')} GROUP BY tinker_uri ORDER BY tinker_uri"),
        ("query: evaluations JOIN checkpoints",
         "SELECT c.training_run_id, max(e.score) FROM evaluations e JOIN checkpoints c ON c.tinker_uri = e.tinker_uri GROUP BY 1 ORDER BY 1",
         f"SELECT c.training_run_id, max(e.score) FROM {parquet('evaluations')} e JOIN {parquet('checkpoints')} c ON c.tinker_uri = e.tinker_uri GROUP BY 1 ORDER BY 1"),
        ("query: one run's metrics",
         f"SELECT step, \"env/all/reward/total\" FROM metrics WHERE run_id = '{runs[len(runs) // 2]}' ORDER BY step",
         f"SELECT step, \"env/all/reward/total\" FROM {parquet('metrics')} WHERE run_id = '{runs[len(runs) // 2]}' ORDER BY step"),
    ]
    for name, ours, theirs in queries:
        compare(name, lambda q=ours: [a.runpack, "query", "-q", "--timing", "--format", "csv", release, q],
                lambda q=theirs: [py, duck, q], TARGETS["query"], ours_clock="timing", runs=QUERY_RUNS * a.runs)
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

    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True).stdout.strip()
    print(f"\ninputs: {inputs / 1e9:.2f} GB ({inputs:,} bytes) of JSON Lines; {os.cpu_count()} cores ({cpu}); "
          f"medians of {a.runs} runs ({QUERY_RUNS * a.runs} for the queries)")
    print("build, verify and rebuild: runpack's whole process; queries: runpack's SQL only (query --timing).\n"
          "DuckDB: its SQL only, timed inside its process; sha256sum: whole process\n")
    print(f"| measurement | runpack s | baseline s | ratio | target | met | runpack peak RSS MiB | baseline peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for name, ours, theirs, ratio, target, orss, trss in rows:
        met = "yes" if ratio <= target else f"no (by {ratio / target:.2f}x)"
        print(f"| {name} | {ours:.3f} | {theirs:.3f} | {ratio:.2f} | <= {target} | {met} | {orss:.0f} | {trss:.0f} |")
    peak = max(r[5] for r in rows)
    print(f"\nrunpack peak RSS: {peak:.0f} MiB (target <= {RSS_LIMIT_MIB} MiB: {'met' if peak <= RSS_LIMIT_MIB else 'missed'})")


if __name__ == "__main__":
    main()
