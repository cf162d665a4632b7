#!/usr/bin/env python3
"""The records of tests/gpu/nccl.sh (cr_cuda_judge_driver's JSON lines), in words.

  nccl_records.py line  < FILE.jsonl              status, speedup, median, flags, message
  nccl_records.py spread FILE.jsonl TASK WORLD    the OK runs' speedups and median spread
"""
import json
import statistics
import sys


def records(f):
    for line in f:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        p = r.get("profile") or {}
        c = (p.get("cases") or [{}])[0]
        yield r, p, c


def line(f):
    for r, p, c in records(f):
        print("%s speedup=%s median_us=%s ref_us=%s flags=%s msg=%s" % (
            r.get("status"), p.get("speedup_geomean"), c.get("median_us"),
            c.get("ref_median_us"), ",".join(r.get("hack_flags") or []) or "-",
            (r.get("message") or "")[:220].replace("\n", " ")))


def spread(path, task, world):
    with open(path) as f:
        rows = [(r.get("status"), p.get("speedup_geomean") or 0, c.get("median_us") or 0)
                for r, p, c in records(f)]
    ok = [x for x in rows if x[0] == "OK"]
    if not ok:
        print("  spread gpus=%s %s fast: no OK run of %d: %s" % (
            world, task, len(rows), sorted(set(str(x[0]) for x in rows))))
        return
    sp = [x[1] for x in ok]
    med = [x[2] for x in ok]
    m = statistics.median(med)
    print("  spread gpus=%s %s fast: %d/%d OK, speedup over the NCCL baseline median %.3f "
          "(%.3f..%.3f), median_us median %.2f, spread (max-min)/median %.2f%%" % (
              world, task, len(ok), len(rows), statistics.median(sp), min(sp), max(sp), m,
              100 * (max(med) - min(med)) / m if m else 0))


if __name__ == "__main__":
    if sys.argv[1:2] == ["line"]:
        line(sys.stdin)
    elif sys.argv[1:2] == ["spread"] and len(sys.argv) == 5:
        spread(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
