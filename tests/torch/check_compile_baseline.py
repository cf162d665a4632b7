#!/usr/bin/python3
"""A torch task's "baseline": "torch.compile" (docs/torch.md §1) through `crucible run`.

The reference's executor compiles the model at LOAD and the candidate is timed against
that. With a PyTorch that has no torch.compile (Debian's 1.13), or one whose compiler the
CPU sandbox does not let run (inductor starts a C++ compiler), the job must be INVALID_TASK
with a message that names the baseline; where it compiles (a GPU), OK with the record's
profile naming the baseline "torch.compile:default".

  check_compile_baseline.py --crucible build/crucible
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crucible", required=True)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cr-compile-baseline-")
    tasks = os.path.join(work, "tasks")
    os.makedirs(tasks)
    shutil.copy(os.path.join(SRC, "tasks", "torch", "l1_relu.py"), tasks)
    with open(os.path.join(tasks, "torch.json"), "w") as f:
        json.dump({"baseline": "torch.compile"}, f)
    man = os.path.join(work, "manifest.jsonl")
    with open(man, "w") as f:
        f.write(json.dumps({"task": "l1_relu", "job_id": "clamp", "file": os.path.join(
            SRC, "tasks", "torch-candidates", "l1_relu", "torch_clamp.py")}) + "\n")
    out = os.path.join(work, "results.jsonl")
    r = subprocess.run([a.crucible, "run", tasks, man, "--backends", "torch", "--workers", "1",
                        "--out", out, "--log-dir", os.path.join(work, "logs"),
                        "--time-budget-s", "0.05", "--run-timeout-s", "300"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    recs = [json.loads(l) for l in open(out)] if os.path.exists(out) else []
    if len(recs) != 1:
        print("FAIL: %d records (crucible run exit %d)\n%s" % (len(recs), r.returncode,
                                                             r.stdout[-2000:]))
        return 1
    rec = recs[0]
    status, msg = rec["status"].replace("STATUS_", ""), rec.get("message", "")
    base = (rec.get("profile") or {}).get("baseline", "")
    print("status %s, baseline %r: %s" % (status, base, msg[:300]))
    ok = (status == "INVALID_TASK" and "baseline torch.compile" in msg) or \
        (status == "OK" and base == "torch.compile:default")
    print("ok" if ok else "FAIL")
    if ok:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
