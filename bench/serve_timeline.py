#!/usr/bin/env python3
"""Where a worker's time goes, job by job, from its log at --log-level debug.

  python3 bench/serve_timeline.py LOGDIR/worker-w0.log [--jobs]

For each judge exchange (the supervisor's "report complete X s after its request" line, the
judge's stderr block after it and the job's "attempt N: STATUS" line) it takes: the request's
time (the report's less X), the worker's idle time before it (since the last report), when the
job's compile ended against its request, and the judge's own figures (executors ready, the
quiet wait before timing, setup / verify / timing and clean-up). Prints the sums, medians and
90th percentiles; --jobs adds one line a job. Reads only the log: nothing on the GPU.
"""
import re
import sys

TS = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d{3}) ")
PATS = {
    "ready": re.compile(r"executors ready ([0-9.]+) s after the (?:judge began|request)"),
    "quiet": re.compile(r"quiet for timing after ([0-9.]+) s"),
    "setup": re.compile(r"cuda judge seconds: setup ([0-9.]+)"),
    "verify": re.compile(r"verify ([0-9.]+) \(checks off"),
    "timing": re.compile(r"timing and clean-up ([0-9.]+)"),
}
KEPT = re.compile(r"executors ready .*the reference's kept from (?:the last|an earlier) job")
REPORT = re.compile(r"(?:judge|runner) pid \d+: (?:report complete|stdout ended) ([0-9.]+) s")
DONE = re.compile(r"job (\S+) attempt \d+: (\w+)")
COMPILED = re.compile(r"job (\S+) attempt \d+: compiled in")


def secs(line):
    m = TS.match(line)
    if not m:
        return None
    h, mi, s, ms = (int(g) for g in m.groups())
    return h * 3600 + mi * 60 + s + ms / 1000.0


def parse(path):
    jobs, cur, compiled, last_report = [], None, {}, None
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        t = secs(line)
        m = COMPILED.search(line)
        if m and t is not None:
            compiled[m.group(1)] = t
            continue
        m = REPORT.search(line)
        if m and t is not None:
            x = float(m.group(1))
            cur = {"req": t - x, "dur": x, "report": t,
                   "idle": (t - x - last_report) if last_report is not None else None}
            last_report = t
            continue
        if cur is None:
            continue
        for k, p in PATS.items():
            mm = p.search(line)
            if mm and k not in cur:
                cur[k] = float(mm.group(1))
        if KEPT.search(line):
            cur["kept"] = 1
        m = DONE.search(line)
        if m and "compiled" not in line and "assigned" not in line:
            cur["job"], cur["status"] = m.group(1), m.group(2)
            c = compiled.get(m.group(1))
            cur["compiled_vs_req"] = (c - cur["req"]) if c is not None else None
            jobs.append(cur)
            cur = None
    return jobs


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))] if v else 0.0


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    jobs = parse(sys.argv[1])
    if not jobs:
        print("serve_timeline: no judge exchanges in %s (was it written at --log-level debug?)"
              % sys.argv[1])
        return 1
    if "--jobs" in sys.argv:
        print("%-44s %-13s %7s %7s %7s %6s %6s %6s %6s %7s" % (
            "job", "status", "idle", "judge", "compile", "ready", "quiet", "setup", "verify",
            "timing"))
        for j in jobs:
            f = lambda k: ("%7.3f" % j[k]) if j.get(k) is not None else "      -"
            print("%-44s %-13s %s %s %s %s %s %s %s %s" % (
                j["job"][-44:], j["status"][:13], f("idle"), f("dur"), f("compiled_vs_req"),
                f("ready"), f("quiet"), f("setup"), f("verify"), f("timing")))
    span = jobs[-1]["report"] - jobs[0]["req"]
    print("serve_timeline: %d exchanges over %.1f s (first request to last report)" % (len(jobs), span))
    for k, label in [("idle", "worker idle between a report and the next request"),
                     ("dur", "request to report"), ("ready", "executors ready"),
                     ("quiet", "quiet wait before timing"), ("setup", "judge setup"),
                     ("verify", "verify"), ("timing", "timing and clean-up")]:
        v = [j[k] for j in jobs if j.get(k) is not None]
        if v:
            print("  %-52s n %3d  sum %7.2f s  median %.3f  p90 %.3f  max %.3f" % (
                label, len(v), sum(v), pct(v, 0.5), pct(v, 0.9), max(v)))
    ready = [j for j in jobs if j.get("ready") is not None]
    if ready:
        kept = [j["ready"] for j in ready if j.get("kept")]
        made = [j["ready"] for j in ready if not j.get("kept")]
        print("  jobs whose reference executor was kept: %d of %d (ready sum %.2f s; the others "
              "%.2f s)" % (len(kept), len(ready), sum(kept), sum(made)))
    late = [j for j in jobs if j.get("compiled_vs_req") is not None and j["compiled_vs_req"] > 0]
    print("  requests sent before their job's compile ended: %d (a worker waiting on compiles "
          "shows here as idle)" % len(late))
    return 0


if __name__ == "__main__":
    sys.exit(main())
