#!/usr/bin/env python3
"""GPU benchmark and end-to-end check, run on the GPU machine (nothing installed there).

  python3 bench/gpu_bench.py --bin .device/bin --out $OUT [--parts examples,sabotage,grpo,seq]

examples  every CUDA example through coordinator + one worker: status vs candidates/expected.json
sabotage  an illegal access, a kernel that never ends, then an honest candidate, same worker
grpo      64 candidates (8 tasks x 8 samples: fast, naive, wrong and a compile error, each
          sample's source unique so nothing hits the compile cache) through coordinator + one
          worker, once per reference policy: wall time, evaluations per minute, GPU-busy
          fraction (verify + profile seconds of all records / wall); the cluster's logs in
          OUT/logs_POLICY/, and with --log-level debug the runners' phase times summed
seq       the same candidates evaluated one after another by a sequential script: for each,
          compile reference and candidate with nvcc, start a process, evaluate (the judge
          driver), on all 64 grpo candidates (--seq-count N: N of them, spread over the
          tasks and the sample kinds); evaluations per minute
precision the fast vector_add candidate evaluated 10 times through coordinator + one worker
          (each job in its own runner process, budget 1 s), once per reference policy, on
          vector_add with a third bench case of 1M floats (~7.5 us) beside its ~11 and ~52 us
          ones: the spread of the medians (max/min - 1), raw and reported, and each runner's
          level offset
Never changes a GPU setting: workers run with clock policy observe.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS = sorted(d for d in os.listdir(os.path.join(ROOT, "tasks/examples")) if d.endswith("_cuda"))


def log(out, *a):
    line = " ".join(str(x) for x in a)
    print(line, flush=True)
    with open(os.path.join(out, "bench.log"), "a") as f:
        f.write(line + "\n")


def task_dir(t):
    return os.path.join(ROOT, "tasks/examples", t)


def cuda_tasks_dir(tmp):
    d = os.path.join(tmp, "cuda_tasks")
    os.makedirs(d, exist_ok=True)
    for t in TASKS:
        dst = os.path.join(d, t)
        if not os.path.exists(dst):
            os.symlink(task_dir(t), dst)
    return d


def crucible_run(args, bin_dir, tasks, cands, out_jsonl, extra, timeout):
    cmd = [os.path.join(bin_dir, "crucible"), "run", tasks] + ([cands] if cands else []) + [
        "--backends", "cuda", "--workers", "1", "--compile-jobs", str(args.compile_jobs),
        "--clock-policy", "observe", "--out", out_jsonl, "--log-level", args.log_level] + extra + \
        args.run_args.split()
    env = dict(os.environ)
    env.update(args.env_vars)  # --env: the cluster and its judges see them (runners inherit)
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    wall = time.time() - t0
    recs = [json.loads(l) for l in open(out_jsonl)] if os.path.exists(out_jsonl) else []
    return p, wall, recs


def part_examples(args, tmp):
    tasks = cuda_tasks_dir(tmp)
    out_jsonl = os.path.join(args.out, "examples.jsonl")
    p, wall, recs = crucible_run(args, args.bin, tasks, None, out_jsonl,
                                 ["--time-budget-s", "0.5"], 400)
    with open(os.path.join(args.out, "examples.txt"), "w") as f:
        f.write(p.stdout + p.stderr)
    bad = 0
    for r in recs:
        t, name = r["task"], r["job_id"].split("/")[-1]
        exp = json.load(open(os.path.join(task_dir(t), "candidates/expected.json"))).get(name)
        ok = exp == r["status"]
        bad += not ok
        sp = (r.get("profile") or {}).get("speedup_geomean", 0)
        log(args.out, "example %-22s %-10s %-14s expected %-10s %s speedup %.2f %s" % (
            t, name, r["status"], exp, "ok" if ok else "MISMATCH", sp,
            ("" if ok else r.get("message", "")[:200])))
    log(args.out, "examples: %d records, %d mismatches, exit %d, %.1f s" % (len(recs), bad, p.returncode, wall))


def part_sabotage(args, tmp):
    tasks = cuda_tasks_dir(tmp)
    man = os.path.join(tmp, "sabotage.jsonl")
    va = task_dir("vector_add_cuda")
    with open(man, "w") as f:
        for i, (name, path) in enumerate([("fault", "tests/gpu/sabotage/fault.cu"),
                                          ("hang", "tests/gpu/sabotage/hang.cu"),
                                          ("after", os.path.join(va, "candidates/fast.cu"))]):
            f.write(json.dumps({"task": "vector_add_cuda", "file": os.path.join(ROOT, path),
                                "job_id": "%d-%s" % (i, name)}) + "\n")
    out_jsonl = os.path.join(args.out, "sabotage.jsonl")
    # one compile thread and credit for one job in flight at a time keeps the order
    p, wall, recs = crucible_run(args, args.bin, tasks, man, out_jsonl,
                                 ["--time-budget-s", "0.5", "--run-timeout-s", "15"], 200)
    for r in sorted(recs, key=lambda r: r["job_id"]):
        log(args.out, "sabotage %-10s %-14s worker %s  %s" % (r["job_id"], r["status"],
            r.get("worker_id", ""), r.get("message", "")[:160]))
    log(args.out, "sabotage: exit %d, %.1f s" % (p.returncode, wall))


def grpo_candidates(tmp):
    """64 (task, name, path): per task 3 fast, 2 naive, 2 wrong, 1 not compiling; unique text."""
    d = os.path.join(tmp, "grpo_src")
    os.makedirs(d, exist_ok=True)
    plan = ["fast.cu", "naive.cu", "wrong.cu", "fast.cu", "broken", "naive.cu", "fast.cu", "wrong.cu"]
    out = []
    for t in TASKS:
        for i, c in enumerate(plan):
            if c == "broken":
                src = open(os.path.join(task_dir(t), "candidates/fast.cu")).read()
                src = src.replace("solve(", "solve(undeclared_type_t u, ", 1)
            else:
                src = open(os.path.join(task_dir(t), "candidates", c)).read()
            src += "\n// sample %d of %s\n" % (i, t)  # unique: no compile-cache hit
            path = os.path.join(d, "%s_%d.cu" % (t, i))
            open(path, "w").write(src)
            out.append((t, "%s#%d" % (c, i), path))
    return out


def busy_fraction(recs, wall):
    s = 0.0
    for r in recs:
        s += (r.get("verify") or {}).get("seconds", 0) + (r.get("profile") or {}).get("seconds", 0)
    return s / wall if wall > 0 else 0


def phase_summary(log_path):
    """Sums of the runner phases in a worker log written at --log-level debug (the runner's
    stderr and the supervisor's report lines), or None when the log has none."""
    import re
    sums, n = {}, 0
    pats = {"runner (request to report)": r"(?:report complete|stdout ended) ([0-9.]+) s",
            "launch checks on": r"launch checks on ([0-9.]+)",
            "verify": r"verify ([0-9.]+) \(checks off",
            "warm-up": r"warm-up ([0-9.]+), timing",
            "timing": r"timing ([0-9.]+), \d+ timed",
            "timed outputs checked": r"timed outputs checked ([0-9.]+)",
            "judge setup": r"cuda judge seconds: setup ([0-9.]+)",
            # the serving judge (docs/judge.md §6): its executors' wait, and the
            # wait before timing for the next job's executor started ahead
            "executors ready": r"cuda executors ready ([0-9.]+) s after the judge began",
            "quiet wait": r"quiet for timing after ([0-9.]+) s"}
    try:
        with open(log_path) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        for k, p in pats.items():
            m = re.search(p, line)
            if m:
                sums[k] = sums.get(k, 0.0) + float(m.group(1))
                n += k == "runner (request to report)"
    if not n:
        return None
    return "%d runners, seconds summed: " % n + ", ".join("%s %.2f" % kv for kv in sums.items())


def part_grpo(args, tmp):
    tasks = cuda_tasks_dir(tmp)
    cands = grpo_candidates(tmp)
    man = os.path.join(tmp, "grpo.jsonl")
    with open(man, "w") as f:
        for k, (t, name, path) in enumerate(cands):
            f.write(json.dumps({"task": t, "file": path, "job_id": "%s/%02d" % (t, k),
                                "group_id": t, "sample_index": k % 8}) + "\n")
    for pol in args.policies.split(","):
        out_jsonl = os.path.join(args.out, "grpo_%s.jsonl" % pol)
        # fresh compile cache per policy: candidates and references compile again
        shutil.rmtree("/tmp/crucible-work", ignore_errors=True)
        p, wall, recs = crucible_run(args, args.bin, tasks, man, out_jsonl,
                                     ["--time-budget-s", str(args.budget), "--ref-policy", pol,
                                      "--log-dir", os.path.join(args.out, "logs_" + pol)], 500)
        by = {}
        for r in recs:
            by[r["status"]] = by.get(r["status"], 0) + 1
        log(args.out, "grpo policy=%s: %d records %s, wall %.1f s, %.1f evals/min, GPU-busy %.1f%%, exit %d"
            % (pol, len(recs), by, wall, len(recs) / wall * 60, 100 * busy_fraction(recs, wall), p.returncode))
        summary = phase_summary(os.path.join(args.out, "logs_" + pol, "worker-w0.log"))
        if summary:
            log(args.out, "grpo policy=%s phases: %s" % (pol, summary))
        if p.returncode != 0:
            log(args.out, p.stderr[-2000:])


def part_seq(args, tmp):
    # all 64, or N of them taken as k samples per task, the task's i-th starting at
    # sample kind k*t+i so that the kinds are covered as evenly as the count allows
    allc = grpo_candidates(tmp)
    per = max(1, min(8, args.seq_count // len(TASKS)))
    cands = [allc[8 * t + (per * t + j) % 8] for t in range(len(TASKS)) for j in range(per)]
    drv = os.path.join(args.bin, "cr_cuda_judge_driver")
    t0 = time.time()
    by = {}
    for k, (t, name, path) in enumerate(cands):
        w = tempfile.mkdtemp(prefix="seq", dir=tmp)  # nothing cached: compile everything
        p = subprocess.run([drv, "--budget", str(args.budget), "--work", os.path.join(w, "c"),
                            "--task-work", os.path.join(w, "t"), task_dir(t), path],
                           capture_output=True, text=True, timeout=300)
        st = "?"
        for line in p.stdout.splitlines():
            try:
                st = json.loads(line).get("status", st)
            except ValueError:
                pass
        if p.returncode != 0 and st == "?":
            st = "COMPILE_ERROR" if "compile" in (p.stderr + p.stdout).lower() else "exit%d" % p.returncode
        by[st] = by.get(st, 0) + 1
    wall = time.time() - t0
    log(args.out, "sequential: %d candidates %s, wall %.1f s, %.1f evals/min" % (len(cands), by, wall, len(cands) / wall * 60))


def part_precision(args, tmp):
    d = os.path.join(tmp, "prec_tasks", "vector_add_cuda")
    shutil.copytree(task_dir("vector_add_cuda"), d)
    t = json.load(open(os.path.join(d, "task.json")))
    t["cases"].append({"n": 1 << 20})
    t["bench_cases"] = [len(t["cases"]) - 1] + t["bench_cases"]
    json.dump(t, open(os.path.join(d, "task.json"), "w"))
    man = os.path.join(tmp, "prec.jsonl")
    with open(man, "w") as f:
        for k in range(10):
            f.write(json.dumps({"task": "vector_add_cuda", "job_id": "prec/%02d" % k,
                                "file": os.path.join(d, "candidates/fast.cu")}) + "\n")
    sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
    from spread import summary  # the same summary as tests/gpu/run.sh precision
    for pol in args.policies.split(","):
        # a fresh cluster per policy: under cached, the first job measures the
        # reference and the nine after it use its medians
        out_jsonl = os.path.join(args.out, "precision_%s.jsonl" % pol)
        p, wall, recs = crucible_run(args, args.bin, os.path.dirname(d), man, out_jsonl,
                                     ["--time-budget-s", "1", "--ref-policy", pol, "--log-dir",
                                      os.path.join(args.out, "logs_precision_" + pol)], 400)
        recs.sort(key=lambda r: r.get("job_id", ""))
        log(args.out, "precision policy=%s: exit %d" % (pol, p.returncode))
        for line in summary(recs):
            log(args.out, line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, ".device/bin"))
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/cr_bench_out"))
    ap.add_argument("--parts", default="examples,sabotage,grpo,seq")
    ap.add_argument("--policies", default="interleaved,cached")
    ap.add_argument("--budget", type=float, default=0.5)
    ap.add_argument("--seq-count", type=int, default=64,
                    help="seq: how many of the 64 grpo candidates (a multiple of 8)")
    ap.add_argument("--compile-jobs", type=int, default=12)
    ap.add_argument("--run-args", default="",
                    help="more `crucible run` arguments for every cluster, e.g. '--runner-per-job --spares 0'")
    ap.add_argument("--log-level", default="warn",
                    help="crucible run's; grpo's cluster logs go to logs_POLICY/")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="an environment variable for every cluster (repeatable), e.g. "
                         "CRUCIBLE_SERVE_KEPT_REFS=4 CRUCIBLE_SERVE_SPARES=3 (docs/judge.md §6)")
    args = ap.parse_args()
    args.env_vars = {}
    for kv in args.env:
        name, eq, value = kv.partition("=")
        if not eq or not name:
            ap.error("--env %r: expected NAME=VALUE" % kv)
        args.env_vars[name] = value
    os.makedirs(args.out, exist_ok=True)
    if args.env_vars:
        log(args.out, "environment: %s" % " ".join("%s=%s" % kv for kv in sorted(args.env_vars.items())))
    tmp = tempfile.mkdtemp(prefix="crbench")
    try:
        for part in args.parts.split(","):
            t0 = time.time()
            globals()["part_" + part](args, tmp)
            log(args.out, "[%s took %.1f s]" % (part, time.time() - t0))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
