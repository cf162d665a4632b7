#!/usr/bin/python3
"""The torch backend's throughput against KernelBench's own way (issue 22):
N KernelBench-format candidates (variants of the honest CUDA load_inline
examples, each unique so that every one really compiles) through one worker
(`crucible run --workers 1`), against the same N evaluated one after another
as KernelBench's script does (a fresh process each: compile, 5 correctness
trials, 100 timed trials and the reference's: tests/gpu/kb_eval_one.py).

  torch_bench.py --crucible BIN --src ROOT --python PY --work DIR [--n 64]

Prints BENCH lines: evaluations per minute of both and their ratio; exits 1
when crucible did not give N records or the ratio is below the goal (5x).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_tasks import problem_path  # noqa: E402

GOAL = 5.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crucible", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--work", required=True)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--skip-sequential", action="store_true")
    ap.add_argument("--seq-n", type=int, default=0,
                    help="evaluate only the first K sequentially (its rate stands for all N: "
                         "one evaluation costs the same whichever comes first); 0 = all")
    a = ap.parse_args()
    tasks = os.path.join(a.src, "tasks", "torch")
    bases = sorted(glob.glob(os.path.join(a.src, "tasks", "torch-candidates", "*", "cuda_*.py")))
    if not bases:
        print("BENCH error: no CUDA candidates in tasks/torch-candidates")
        return 1
    cdir = os.path.join(a.work, "cands")
    os.makedirs(cdir, exist_ok=True)
    jobs = []
    for i in range(a.n):
        base = bases[i % len(bases)]
        task = os.path.basename(os.path.dirname(base))
        src = open(base).read()
        # a unique extension name and source: a compile of its own, as 64 samples of a policy are
        src = src.replace('name="crucible_', 'name="bench%02d_' % i, 1)
        src = src.replace('#include <torch/extension.h>', '#include <torch/extension.h>\n// bench variant %d' % i, 1)
        path = os.path.join(cdir, "%02d_%s_%s" % (i, task, os.path.basename(base)))
        with open(path, "w") as f:
            f.write(src)
        jobs.append((task, path))
    manifest = os.path.join(a.work, "manifest.jsonl")
    with open(manifest, "w") as m:
        for task, path in jobs:
            m.write(json.dumps({"task": task, "file": path, "job_id": os.path.basename(path)}) + "\n")

    # crucible: one worker, its compile pool and pipelining as configured by default
    out = os.path.join(a.work, "crucible.jsonl")
    cmd = [a.crucible, "run", tasks, manifest, "--backends", "torch", "--workers", "1",
           "--out", out, "--log-dir", os.path.join(a.work, "logs"), "--compile-timeout-s", "300"]
    print("BENCH crucible command:", " ".join(cmd), flush=True)
    t0 = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tc = time.time() - t0
    open(os.path.join(a.work, "crucible_run.txt"), "w").write(r.stdout)
    recs = [json.loads(l) for l in open(out)] if os.path.exists(out) else []
    st = {}
    for rec in recs:
        st[rec["status"]] = st.get(rec["status"], 0) + 1
    print("BENCH crucible: %d evaluations in %.1f s: %.2f per minute (%s)"
          % (len(recs), tc, 60.0 * len(recs) / tc, ", ".join("%s %d" % kv for kv in sorted(st.items()))),
          flush=True)
    if a.skip_sequential:
        return 0 if len(recs) == a.n else 1

    # KernelBench-style: one after another, a fresh process and a fresh build dir each
    ts = time.time()
    ok = 0
    seq = jobs[:a.seq_n] if 0 < a.seq_n < len(jobs) else jobs
    with open(os.path.join(a.work, "sequential.jsonl"), "w") as f:
        for i, (task, path) in enumerate(seq):
            env = dict(os.environ, TORCH_EXTENSIONS_DIR=os.path.join(a.work, "kb_ext", str(i)))
            p = subprocess.run([a.python, os.path.join(a.src, "tests", "gpu", "kb_eval_one.py"),
                                problem_path(a.src, task), path],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else json.dumps(
                {"error": p.stderr[-300:]})
            f.write(line + "\n")
            try:
                ok += bool(json.loads(line).get("correctness"))
            except ValueError:
                pass
    tk = time.time() - ts
    print("BENCH kernelbench-sequential: %d evaluations in %.1f s: %.2f per minute (%d correct)"
          % (len(seq), tk, 60.0 * len(seq) / tk, ok), flush=True)
    ratio = (len(recs) / tc) / (len(seq) / tk) if recs else 0.0
    print("BENCH ratio: %.2fx evaluations per minute, crucible over kernelbench-sequential "
          "(goal >= %.0fx)" % (ratio, GOAL), flush=True)
    return 0 if len(recs) == a.n and ratio >= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
