#!/usr/bin/python3
"""Where a GPU torch job's times went, from a worker's log at debug level with
CR_TORCH_TRACE=1 (tests/gpu/call.sh's torch-ex and torch-hacks-gpu parts keep
it): per job its verdict, the cross-check's "missed" quartiles (torch_timing.c),
and medians over its timed pairs of each side's RUN pieces on one clock
(CLOCK_MONOTONIC: the judge's "torch clocks" line, the harness's trace line):

  wake      the judge letting RUN run (before its SIGCONT) to the harness seeing it
  span      the harness's start event's record to its synchronise's return
  back      the synchronise's return to the harness saying done
  seen      its done to the judge seeing it
  wait      the main thread's wait for a core in RUN (exec.c cr_exec_wait_us), taken
            off the wall time by the cross-check (docs/torch.md section 4)

and for each the candidate's less the reference's, pair by pair (median): a
difference that stays one way over a job's pairs is a bias of the cross-check's.

  torch_pairs.py WORKER.log [SUBSTRING ...]    (only the jobs whose name has one)
"""
import re
import statistics
import sys

VERDICT = re.compile(r"info: job (\S+) attempt \d+: (\S+)")
XCHK = re.compile(r"missed quartiles (\S+) / (\S+) / (\S+) us")
TRACE = re.compile(r"crucible-torch: (candidate|reference) RUN host us: .*; events ([\d.]+); "
                   r"clocks us: seen ([\d.]+), start ([\d.]+), end ([\d.]+), done ([\d.]+)")
CLOCKS = re.compile(r"torch clocks us: pair (\d+): candidate RUN let run ([\d.]+), seen done "
                    r"([\d.]+); reference RUN let run ([\d.]+), seen done ([\d.]+)")
PAIR = re.compile(r"torch pair (\d+): .*RUN's waits for a core (-?[\d.]+) / (-?[\d.]+)")
PARTS = ("wake", "span", "back", "seen", "wait")
WARMUP = 3  # torch_judge.c's S_WARMUP: the first pairs, untimed


def jobs(lines):
    """(job, verdict, cross-check quartiles or None, pairs) per job, in log order: a
    pair is {"candidate": parts, "reference": parts}, parts a dict over PARTS."""
    out, pend, pairs, waits, xchk = [], {}, [], {}, None
    for line in lines:
        m = TRACE.search(line)
        if m:
            pend[m.group(1)] = [float(g) for g in m.groups()[1:]]
            continue
        m = PAIR.search(line)
        if m:
            waits[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
            continue
        m = CLOCKS.search(line)
        if m and len(pend) == 2 and int(m.group(1)) < WARMUP:
            pend = {}
            continue
        if m and len(pend) == 2:
            i = int(m.group(1))
            c0, cd, r0, rd = (float(g) for g in m.groups()[1:])
            pair = {}
            for side, t0, td, k in (("candidate", c0, cd, 0), ("reference", r0, rd, 1)):
                _evt, seen, start, end, done = pend[side]
                w = waits.get(i, (-1.0, -1.0))[k]
                pair[side] = {"wake": seen - t0, "span": end - start, "back": done - end,
                              "seen": td - done, "wait": w}
            pairs.append(pair)
            pend = {}
            continue
        m = XCHK.search(line)
        if m:
            xchk = tuple(float(g) for g in m.groups())
            continue
        m = VERDICT.search(line)
        if m and m.group(2) not in ("assigned", "compiled"):
            out.append((m.group(1), m.group(2), xchk, pairs))
            pend, pairs, waits, xchk = {}, [], {}, None
    return out


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0 if len(argv) > 1 else 2
    want = argv[2:]
    with open(argv[1], errors="replace") as f:
        found = jobs(f)
    for job, verdict, xchk, pairs in found:
        if want and not any(w in job for w in want):
            continue
        q = "/".join("%.1f" % v for v in xchk) if xchk else "-"
        print("%s %s: %d pairs, missed quartiles %s us" % (job, verdict, len(pairs), q))
        for part in PARTS:
            c = [p["candidate"][part] for p in pairs]
            r = [p["reference"][part] for p in pairs]
            if not c or (part == "wait" and min(c + r) < 0):
                continue
            d = statistics.median(a - b for a, b in zip(c, r))
            print("  %-5s candidate %8.1f  reference %8.1f  difference %+7.1f us (medians)"
                  % (part, statistics.median(c), statistics.median(r), d))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
