#!/usr/bin/python3
"""Runs the torch examples (tasks/torch/*.py with tasks/torch-candidates/) through
`crucible run` and checks every candidate's status (and flag) against
tasks/torch-candidates/expected.json. Standard library only.

  check_examples.py --crucible build/crucible [--needs cpu|cuda|triton|all]
                    [--logs DIR] [--workers N] [--only SUBSTRING,...]

--needs cpu (the default, for CI) runs the candidates that need no GPU; all
runs every one (the GPU machine), where a candidate's "status_gpu", when it has one
(a C++ extension for CPU tensors), is the status it must get. Prints one line per candidate and a
summary; exits 1 when any candidate's verdict differs from its expectation.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crucible", required=True)
    ap.add_argument("--needs", default="cpu", choices=("cpu", "cuda", "triton", "all"))
    ap.add_argument("--logs", default="")
    ap.add_argument("--workers", default="2")
    ap.add_argument("--only", default="", help="comma-separated substrings of the keys to run")
    ap.add_argument("--extra", action="append", default=[],
                    help="extra `crucible run` option, e.g. --extra=--time-budget-s=1")
    a = ap.parse_args()
    tasks = os.path.join(SRC, "tasks", "torch")
    cands = os.path.join(SRC, "tasks", "torch-candidates")
    with open(os.path.join(cands, "expected.json")) as f:
        expected = json.load(f)
    picked = {k: v for k, v in expected.items()
              if (a.needs == "all" or v["needs"] == a.needs or
                  (a.needs != "cpu" and v["needs"] == "cpu")) and any(o in k for o in a.only.split(","))}
    if not picked:
        print("check_examples: nothing to run")
        return 1
    work = a.logs or tempfile.mkdtemp(prefix="cr-torch-examples-")
    os.makedirs(work, exist_ok=True)
    manifest = os.path.join(work, "manifest.jsonl")
    with open(manifest, "w") as m:
        for key in sorted(picked):
            task, file = key.split("/", 1)
            m.write(json.dumps({"task": task, "file": os.path.join(cands, key),
                                "job_id": key}) + "\n")
    out = os.path.join(work, "results.jsonl")
    cmd = [a.crucible, "run", tasks, manifest, "--backends", "torch", "--workers", a.workers,
           "--out", out, "--log-dir", os.path.join(work, "logs"), "--time-budget-s", "0.2",
           "--compile-timeout-s", "900", "--run-timeout-s", "300"] + a.extra
    print("check_examples: %d candidates: %s" % (len(picked), " ".join(cmd)), flush=True)
    t0 = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(os.path.join(work, "run.txt"), "w") as f:
        f.write(r.stdout)
    got = {}
    if os.path.exists(out):
        with open(out) as f:
            for line in f:
                rec = json.loads(line)
                got[rec["job_id"]] = rec
    bad = 0
    for key in sorted(picked):
        want = dict(picked[key])
        if a.needs != "cpu" and "status_gpu" in want:  # what it gets on a GPU worker
            want["status"] = want["status_gpu"]
        rec = got.get(key)
        status = rec["status"].replace("STATUS_", "") if rec else "NO RECORD"
        flags = rec.get("hack_flags", []) if rec else []
        ok = status == want["status"] and (not want.get("flag") or want["flag"] in flags)
        if want["status"] == "OK" and flags:
            ok = False
        bad += not ok
        speed = ""
        if rec and (rec.get("profile") or {}).get("speedup_geomean"):
            speed = " %.2fx" % rec["profile"]["speedup_geomean"]
        print("%-4s %-45s %-14s want %-14s%s %s %s" % ("ok" if ok else "FAIL", key, status,
                                                     want["status"], speed, ",".join(flags),
                                                     "" if ok else (rec or {}).get("message", "")[:200]))
    print("check_examples: %d of %d as expected in %.0f s (crucible run exit %d); logs in %s"
          % (len(picked) - bad, len(picked), time.time() - t0, r.returncode, work))
    return 1 if bad or r.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
