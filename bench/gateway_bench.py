#!/usr/bin/env python3
"""One trainer step of N completions (default 1,024: 8 C tasks x 16 prompts x 8
samples) judged four ways on one local cluster (a coordinator, --workers CPU
workers, the gateway), each with the same sources, after a warm-up pass that
fills the workers' compile caches, so the ways differ only in their front door:

  cli      `crucible submit MANIFEST --batch B` then `crucible results B`
  python   crucible.Client.score(jobs): one native batch through the gateway
  slime    N concurrent slime-shaped POST /reward/slime requests (one sample each)
  openrlhf N concurrent OpenRLHF-shaped POST /reward/openrlhf requests

Prints a markdown table: wall time, and the gateway's own time per request
(GET /v1/health: handler time less the time spent waiting for records).
Usage: python3 bench/gateway_bench.py [--n 1024] [--workers 2] [--ways cli,python,slime,openrlhf]
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "python"), os.path.join(HERE, "..", "python", "tests")]
from cluster import BIN, C_TASKS, EXAMPLES, QUICK, Cluster, as_completion, candidates  # noqa: E402
from crucible import Client, Job  # noqa: E402


def step(n, tag):
    """n jobs: task t, prompt p, sample s; the salt keeps each way's jobs new
    while the sources (and so the compile cache entries) are the same."""
    jobs = []
    per_task = n // len(C_TASKS)
    for task in C_TASKS:
        cands = candidates(task)
        for k in range(per_task):
            p, s = divmod(k, 8)
            name, src, _ = cands[k % len(cands)]
            jobs.append(Job(task=task, completion=as_completion(src, 0),
                            group_id=f"{task}-p{p}", job_id=f"{tag}-{task}-p{p}-s{s}"))
    return jobs


def post(cl, path, body):
    c = http.client.HTTPConnection("127.0.0.1", cl.hport, timeout=900)
    c.request("POST", path + "?timeout_s=800", json.dumps(body).encode(),
              {"Content-Type": "application/json", "Authorization": "Bearer " + cl.token})
    r = c.getresponse()
    out = (r.status, json.loads(r.read()))
    c.close()
    return out


def health(cl):
    return Client(cl.url, cl.token).health()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ways", default="cli,python,slime,openrlhf")
    a = ap.parse_args()
    cl = Cluster(workers=a.workers, max_body=64 << 20)
    client = Client(cl.url, cl.token, timeout=1800)
    rows = []

    def row(*r):
        """One way's line, printed as soon as it is measured (a run cut
        short still says what it measured)."""
        rows.append(r)
        w, sec, g, o, e = r
        print(f"| {w} | {sec:.1f} | {g}/{a.n} | {o} | {e} |", flush=True)

    print("| way | wall (s) | records | gateway time per request | note |")
    print("|---|---|---|---|---|", flush=True)
    try:
        t0 = time.monotonic()
        warm = client.score(step(a.n, "warm"), timeout=1800)
        row("warm-up (python, compile caches cold)", time.monotonic() - t0,
            sum(r is not None for r in warm.records), "", "")
        for way in a.ways.split(","):
            jobs = step(a.n, way)
            h0 = health(cl)
            t0 = time.monotonic()
            if way == "cli":
                d = tempfile.mkdtemp()
                man = os.path.join(d, "step.jsonl")
                with open(man, "w") as f:
                    for j in jobs:
                        f.write(json.dumps({"task": j.task, "source": j.completion.split("```c\n")[1].rsplit("\n```", 1)[0],
                                            "job_id": j.job_id, "group_id": j.group_id}) + "\n")
                env = dict(os.environ, CRUCIBLE_INSECURE="1",
                           CRUCIBLE_CLIENTS_ENDPOINT=f"tcp://127.0.0.1:{cl.cport}")
                opts = ["--time-budget-s", "0.005", "--rse-target", "0.2"]
                subprocess.run([BIN, "submit", EXAMPLES, man, "--batch", "cli-step", *opts],
                               env=env, check=True, capture_output=True)
                out = subprocess.run([BIN, "results", "cli-step"], env=env, check=True,
                                     capture_output=True).stdout
                got = len(out.splitlines())
                extra = ""
            elif way == "python":
                res = client.score(jobs, timeout=1800)
                got = sum(r is not None for r in res.records)
                extra = f"{len(res.groups)} groups"
            else:
                def one(j, i):
                    if way == "slime":
                        return post(cl, "/reward/slime", {"prompt": f"{j.group_id}/{i}",
                                                          "response": j.completion, "label": j.task})
                    return post(cl, "/reward/openrlhf", {"query": [f"{j.group_id}/{i}" + j.completion],
                                                         "prompts": [f"{j.group_id}/{i}"],
                                                         "labels": [j.task]})
                with concurrent.futures.ThreadPoolExecutor(256) as ex:
                    outs = list(ex.map(one, jobs, [f"{way}{i}" for i in range(len(jobs))]))
                got = sum(st == 200 for st, _ in outs)
                extra = ""
            wall = time.monotonic() - t0
            h1 = health(cl)
            dn = h1["remote_reward_requests"] - h0["remote_reward_requests"]
            over = ""
            if dn:
                tot = (h1["remote_reward_overhead_us"] * h1["remote_reward_requests"]
                       - h0["remote_reward_overhead_us"] * h0["remote_reward_requests"])
                over = f"{tot / dn:.0f} µs"
            row(way, wall, got, over, extra)
    finally:
        cl.stop()


if __name__ == "__main__":
    main()
