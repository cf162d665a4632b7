#!/usr/bin/python3
"""A torch executor that cannot set itself up says why (docs/torch.md, "Installing").

The programs are copied into a fresh folder without libcrucible-pysandbox.so, the
library crucible-torch loads from beside itself to enter its sandbox (as a device
pack that stopped at the script left them in session 13); one torch job is run
there. Its record must be INFRA_ERROR and name the missing library; before the
change it read "the reference ended its process (exit 1)" and named nothing.

  check_setup_error.py --build BUILD_DIR --src SOURCE_DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="cr-torch-setup-")
    try:
        for prog in ("crucible", "crucible-runner", "crucible-executor", "crucible-torch"):
            shutil.copy2(os.path.join(a.build, prog), os.path.join(tmp, prog))
        out = os.path.join(tmp, "out.jsonl")
        task = os.path.join(a.src, "tasks", "torch", "l1_relu.py")
        cand = os.path.join(a.src, "tasks", "torch-candidates", "l1_relu", "torch_clamp.py")
        man = os.path.join(tmp, "manifest.jsonl")
        with open(man, "w") as f:
            f.write(json.dumps({"task": "l1_relu", "file": cand, "job_id": "setup"}) + "\n")
        p = subprocess.run([os.path.join(tmp, "crucible"), "run", os.path.dirname(task), man,
                            "--backends", "torch", "--workers", "1", "--max-attempts", "1",
                            "--time-budget-s", "0.05", "--out", out],
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, CR_TORCH_DEVICE="cpu"))
        recs = [json.loads(l) for l in open(out)] if os.path.exists(out) else []
        if len(recs) != 1:
            print("FAIL: %d records (exit %d): %s" % (len(recs), p.returncode, p.stderr[-800:]))
            return 1
        r = recs[0]
        msg = r.get("message", "")
        if r["status"] != "INFRA_ERROR" or "libcrucible-pysandbox.so" not in msg:
            print("FAIL: %s: %s" % (r["status"], msg[:400]))
            return 1
        print("ok: %s: %s" % (r["status"], msg[:300]))
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
