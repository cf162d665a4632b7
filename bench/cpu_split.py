#!/usr/bin/env python3
"""The cost of the judge/executor split on the CPU backend (docs/judge.md).

  python3 bench/cpu_split.py --new build --old OLD_BUILD [--runs 10] [--out DIR]

Both folders hold `crucible` and its runner programs: --new the split judge, --old one built
from a commit before it (the one-process judge). In the same run, for each:

spread      RUNS fresh evaluations of vector_add's fast candidate (each its own cluster and
            runner, default settings): median of the candidate, of the reference, the speedup;
            the spread of the candidate's medians (max/min - 1)
examples    every C example task with all its candidates through `crucible run`: wall time
            (one cluster, default workers), the statuses (must be the same for both)
overhead    (new only) the executors' empty-command medians, from the runners' debug logs:
            the time each call costs on top of its own work (taken off every sample)

Prints a table and writes OUT/cpu_split.json. Needs no GPU.
"""
import argparse, glob, json, os, re, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EX = os.path.join(ROOT, "tasks/examples")
C_TASKS = sorted(d for d in os.listdir(EX)
                 if not d.endswith("_cuda") and os.path.isdir(os.path.join(EX, d)))


def run(binary, tasks, cands, work, extra=()):
    """One `crucible run`; returns (records, wall seconds, log dir)."""
    logs = os.path.join(work, "logs")
    os.makedirs(logs, exist_ok=True)
    t0 = time.time()
    cmd = [os.path.join(binary, "crucible"), "run", tasks] + ([cands] if cands else []) + [
        "--log-dir", logs, "--log-level", "debug"] + list(extra)
    p = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=900)
    wall = time.time() - t0
    if p.returncode != 0:
        sys.exit("crucible run failed (%d): %s" % (p.returncode, p.stderr[-2000:]))
    recs = [json.loads(l) for l in open(os.path.join(work, "crucible-results.jsonl"))]
    return recs, wall, logs


def spread(binary, runs, scratch):
    cand = os.path.join(scratch, "cands", "vector_add")
    os.makedirs(cand, exist_ok=True)
    shutil.copy(os.path.join(EX, "vector_add/candidates/fast.c"), os.path.join(cand, "fast.c"))
    rows = []
    for i in range(runs):
        work = tempfile.mkdtemp(dir=scratch)
        recs, _, _ = run(binary, os.path.join(EX, "vector_add"), os.path.join(scratch, "cands"),
                         work, ["--workers", "1"])
        b = recs[0]["profile"]["cases"][0]
        rows.append((b["median_us"], b["ref_median_us"], b["speedup"], b.get("rse", 0)))
    med = [r[0] for r in rows]
    return {"medians_us": med, "ref_medians_us": [r[1] for r in rows],
            "speedups": [r[2] for r in rows], "rse": [r[3] for r in rows],
            "spread": max(med) / min(med) - 1, "median_of_medians_us": statistics.median(med),
            "median_speedup": statistics.median(r[2] for r in rows)}


def examples(binary, scratch):
    work = tempfile.mkdtemp(dir=scratch)
    recs, wall, logs = run(binary, EX, None, work)
    statuses = {r["job_id"]: r["status"] for r in recs if r.get("backend", "c") == "c"}
    over = []
    for f in glob.glob(os.path.join(logs, "worker-*.log")):
        for m in re.finditer(r"empty command: reference ([0-9.]+) us, candidate ([0-9.]+) us",
                             open(f, errors="replace").read()):
            over += [float(m.group(1)), float(m.group(2))]
    return {"wall_s": wall, "records": len(statuses), "statuses": statuses,
            "empty_command_us": over}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--new", required=True)
    ap.add_argument("--old", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="cr_split_")
    res = {}
    for name, b in (("old", a.old), ("new", a.new)):
        res[name] = {"spread": spread(os.path.abspath(b), a.runs, scratch),
                     "examples": examples(os.path.abspath(b), scratch)}
    same = res["old"]["examples"]["statuses"] == res["new"]["examples"]["statuses"]
    print("| judge | vector_add fast: median of medians | spread of %d | median speedup |"
          " C examples wall | records |" % a.runs)
    print("|---|---|---|---|---|---|")
    for name in ("old", "new"):
        s, e = res[name]["spread"], res[name]["examples"]
        print("| %s | %.1f us | %.2f%% | %.3f | %.1f s | %d |" % (
            name, s["median_of_medians_us"], 100 * s["spread"], s["median_speedup"],
            e["wall_s"], e["records"]))
    ov = res["new"]["examples"]["empty_command_us"]
    if ov:
        print("empty command (new): median %.2f us, min %.2f, max %.2f over %d executors" % (
            statistics.median(ov), min(ov), max(ov), len(ov)))
    print("same statuses for every C example candidate: %s" % same)
    if not same:
        for k in sorted(res["old"]["examples"]["statuses"]):
            o = res["old"]["examples"]["statuses"].get(k)
            n = res["new"]["examples"]["statuses"].get(k)
            if o != n:
                print("  %s: old %s, new %s" % (k, o, n))
    os.makedirs(a.out, exist_ok=True)
    json.dump(res, open(os.path.join(a.out, "cpu_split.json"), "w"), indent=1)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
