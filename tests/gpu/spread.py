#!/usr/bin/env python3
"""The precision summary of the GPU tests (tests/gpu/run.sh precision) and
benchmarks (bench/gpu_bench.py --parts precision): for records of one
candidate evaluated in several fresh runners, per bench case, the spread
(max/min - 1) of each kind of median and each runner's level offset (judge
note 11).

    spread.py RECORDS.jsonl
"""
import json
import sys

KEYS = ("median_us", "raw_median_us", "mean_us", "ref_median_us")


def summary(recs):
    """Lines describing the records' bench cases."""
    out = ["precision: %d runs, statuses %s" % (len(recs), sorted({r["status"] for r in recs}))]
    for r in recs:
        if r.get("status") != "OK":  # an honest candidate's: say what was wrong
            out.append("  not OK: %s %s %s: %s" % (r.get("job_id", "?"), r.get("status"),
                                                 ",".join(r.get("hack_flags", [])),
                                                 (r.get("message") or "")[:300]))
    by = {}
    for r in recs:
        for c in (r.get("profile") or {}).get("cases", []):
            by.setdefault(c.get("case_index", 0), []).append(c)
    for k, cs in sorted(by.items()):
        for key in KEYS:
            m = [c.get(key, 0) for c in cs]
            spread = (max(m) / min(m) - 1) * 100 if min(m) > 0 else 0
            out.append("  case %d %-15s %s us; spread max/min - 1 %.3f%%"
                       % (k, key, " ".join("%.3f" % x for x in m), spread))
        out.append("  case %d %-15s %s us" % (k, "level_offset_us", " ".join(
            "%+.3f" % c.get("level_offset_us", 0) for c in cs)))
        out.append("  case %d samples %s iqr %s clock %s" % (
            k, [c.get("samples", 0) for c in cs], ["%.2f" % c.get("iqr_us", 0) for c in cs],
            sorted({round(c.get("mean_sm_clock_mhz", 0)) for c in cs})))
    return out


if __name__ == "__main__":
    print("\n".join(summary([json.loads(l) for l in open(sys.argv[1]) if l.strip()])))
