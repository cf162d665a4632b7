#!/usr/bin/python3
"""crucible's median of each honest CUDA/Triton torch example against
triton.testing.do_bench of the same candidate in a fresh process (issue 22:
agreement within 2% on the honest fast ones).

  torch_dobench.py --results RESULTS.jsonl --src ROOT [--python PY] [--tol 0.02]

RESULTS is check_examples.py's (crucible run's) JSONL. One line per
candidate, then a summary; exits 1 when any is outside the tolerance.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_tasks import problem_path  # noqa: E402

ONE = r'''
import sys, torch, triton.testing
ref_src, new_src = open(sys.argv[1]).read(), open(sys.argv[2]).read()
ctx, nctx = {}, {}
exec(compile(ref_src, sys.argv[1], "exec"), ctx)
torch.manual_seed(42)
init = ctx["get_init_inputs"]()
exec(compile(new_src, sys.argv[2], "exec"), nctx)
with torch.no_grad():
    torch.manual_seed(42)
    new = nctx["ModelNew"](*init).cuda().eval()
    torch.manual_seed(42)
    xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ctx["get_inputs"]()]
    ms = triton.testing.do_bench(lambda: new(*xs), warmup=100, rep=500, return_mode="median")
print(ms * 1000.0)
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--tol", type=float, default=0.02)
    ap.add_argument("--prebuild", type=int, default=8,
                    help="processes that build the candidates' extensions first, at once "
                         "(load_inline's nvcc takes ~70 s each; the timed runs then load "
                         "them from the shared TORCH_EXTENSIONS_DIR, one at a time)")
    a = ap.parse_args()
    jobs = []
    for line in open(a.results):
        rec = json.loads(line)
        name = os.path.basename(rec["job_id"])
        if rec["status"] in ("OK", "STATUS_OK") and (name.startswith("cuda_") or
                                                     name.startswith("triton_")):
            jobs.append(rec)
    env = dict(os.environ)
    env.setdefault("TORCH_EXTENSIONS_DIR", tempfile.mkdtemp(prefix="cr-dobench-ext-"))
    # the builds in parallel, off the GPU's timing: importing a candidate runs its
    # load_inline, which compiles into the shared folder
    builds = []
    for rec in jobs:
        if os.path.basename(rec["job_id"]).startswith("cuda_"):
            builds.append([a.python, "-c", "import runpy, sys; runpy.run_path(sys.argv[1])",
                           os.path.join(a.src, "tasks", "torch-candidates", rec["job_id"])])
    running = []
    while builds or running:
        while builds and len(running) < max(1, a.prebuild):
            running.append(subprocess.Popen(builds.pop(0), env=env, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
        running[0].wait()
        running.pop(0)
    n = bad = 0
    for rec in jobs:
        job = rec["job_id"]
        task = job.split("/")[0]
        cases = (rec.get("profile") or {}).get("cases") or [{}]
        ours = cases[0].get("median_us", 0)
        p = subprocess.run([a.python, "-c", ONE, problem_path(a.src, task),
                            os.path.join(a.src, "tasks", "torch-candidates", job)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            theirs = float(p.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            print("ERR  %-40s do_bench failed: %s" % (job, p.stderr.strip()[-200:]))
            bad += 1
            n += 1
            continue
        d = ours / theirs - 1 if theirs > 0 else float("inf")
        ok = abs(d) <= a.tol
        n += 1
        bad += not ok
        print("%-4s %-40s crucible %9.2f us  do_bench %9.2f us  %+6.1f%%"
              % ("ok" if ok else "OFF", job, ours, theirs, 100 * d))
    print("dobench: %d of %d within %.0f%% of do_bench" % (n - bad, n, 100 * a.tol))
    return 1 if bad or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
