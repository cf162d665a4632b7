"""The gateway, the Python client and the trainer adapters against a real
cluster: a coordinator, CPU workers and `crucible gateway` as processes."""
from __future__ import annotations

import asyncio
import http.client
import json
import math
import os
import re
import sys
import time
import unittest
import urllib.parse

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.dirname(_HERE)]

import crucible  # noqa: E402
from crucible import Client, CrucibleError, Job  # noqa: E402
from cluster import C_TASKS, Cluster, as_completion, candidates  # noqa: E402

STEP_TIMEOUT = 400.0


def _advantages(rewards):
    """The coordinator's formula (common/reward.c): (r - mean) / (std + 1e-6)
    over the members with a reward, population std; no reward: 0."""
    have = [r for r in rewards if r is not None]
    if not have:
        return [0.0] * len(rewards)
    m = sum(have) / len(have)
    sd = math.sqrt(sum((r - m) ** 2 for r in have) / len(have))
    return [0.0 if r is None else (r - m) / (sd + 1e-6) for r in rewards]


class GatewayTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cl = Cluster(workers=3, max_body=1 << 20)
        cls.client = Client(cls.cl.url, token=cls.cl.token, timeout=STEP_TIMEOUT)

    @classmethod
    def tearDownClass(cls):
        cls.cl.stop()

    def raw(self, method, path, body=None, headers=None):
        """One raw HTTP exchange: (status, parsed JSON or text)."""
        u = urllib.parse.urlparse(self.cl.url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
        h = {"Authorization": "Bearer " + self.cl.token, "Content-Type": "application/json"}
        h.update(headers or {})
        h = {k: v for k, v in h.items() if v is not None}
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        text = r.read()
        conn.close()
        try:
            return r.status, json.loads(text)
        except ValueError:
            return r.status, text

    # ---- a GRPO step through the Python client ----

    def test_step_256_in_groups_of_8(self):
        jobs, want = [], []
        for t, task in enumerate(C_TASKS):
            cands = candidates(task)
            for p in range(4):  # 4 prompts per task, 8 samples each
                for s in range(8):
                    name, src, exp = cands[(p + s) % len(cands)]
                    jobs.append(Job(task=task, completion=as_completion(src, s % 4),
                                    group_id=f"{task}-p{p}", job_id=f"{task}-p{p}-s{s}"))
                    want.append(exp)
        self.assertEqual(len(jobs), 256)
        t0 = time.monotonic()
        res = self.client.score(jobs, options={"time_budget_s": 0.005}, timeout=STEP_TIMEOUT)
        self.assertTrue(res.complete, f"not complete after {time.monotonic() - t0:.0f} s")
        self.assertEqual(len(res.rewards), 256)
        for j, rec, exp in zip(jobs, res.records, want):
            self.assertIsNotNone(rec, j.job_id)
            self.assertEqual(rec.job_id, j.job_id)  # in order
            self.assertEqual(rec.status, exp, f"{j.job_id}: {rec.message}")
            if exp == "OK":
                self.assertGreater(rec.reward_or_none, 0.0)
            else:
                self.assertEqual(rec.reward_or_none, 0.0)
            self.assertIsInstance(rec.compile, crucible.CompileResult)
        self.assertEqual(len(res.groups), 32)
        for gid, g in res.groups.items():
            self.assertEqual(len(g.job_ids), 8)
            rw = [res.records[res.job_ids.index(j)].reward_or_none for j in g.job_ids]
            for a, b in zip(g.advantages, _advantages(rw)):
                self.assertAlmostEqual(a, b, places=6)
        adv = res.advantages
        self.assertTrue(all(a is not None for a in adv))
        # the stream replays the same records by seq, each group after its last record
        seen, groups, last = 0, 0, None
        for ev in self.client.stream(res.batch_id, timeout=60):
            if isinstance(ev, crucible.RewardRecord):
                seen += 1
            elif isinstance(ev, crucible.Group):
                groups += 1
            else:
                last = ev
        self.assertEqual((seen, groups), (256, 32))
        self.assertIn("done", last)
        # resumable: after seq 250 only 6 records remain
        tail = [e for e in self.client.stream(res.batch_id, after=250, timeout=60)
                if isinstance(e, crucible.RewardRecord)]
        self.assertEqual([r.seq for r in tail], list(range(251, 257)))
        g = self.client.wait_group(res.batch_id, "relu-p0", timeout=10)
        self.assertEqual(len(g.advantages), 8)

    def test_async_client_and_cancel(self):
        async def go():
            ac = crucible.AsyncClient(self.cl.url, self.cl.token, 120)
            src = candidates("vector_add")[1][1]  # fast.c
            ack = await ac.submit([Job(task="vector_add", source=src, job_id="a")],
                                  batch_id="py-async-1")
            self.assertEqual(ack.accepted + ack.duplicate, 1)
            res = await ac.result("py-async-1", timeout=120)
            events = [e async for e in ac.stream("py-async-1", timeout=30)]
            return res, events
        res, events = asyncio.run(go())
        self.assertEqual(res.records[0].status, "OK")
        self.assertEqual(sum(isinstance(e, crucible.RewardRecord) for e in events), 1)
        # cancel: a batch of slow candidates, cancelled at once
        slow = [c for c in candidates("matmul") if c[0] == "slow.c"][0][1]
        self.client.submit([Job(task="matmul", source=slow + f"\n// {i}\n") for i in range(30)],
                           batch_id="py-cancel-1")
        n = self.client.cancel("py-cancel-1")
        self.assertGreater(n, 0)
        r = self.client.result("py-cancel-1", timeout=120)
        self.assertTrue(r.complete)
        self.assertIn("CANCELLED", {x.status for x in r.records})
        self.assertTrue(all(x.reward_or_none is None for x in r.records if x.status == "CANCELLED"))

    # ---- the trainer adapters, each with its trainer's exact call shape ----

    def _env(self):
        os.environ["CRUCIBLE_GATEWAY_URL"] = self.cl.url
        os.environ["CRUCIBLE_TOKEN"] = self.cl.token

    def _samples(self):
        """(task, completion, expected reward > 0?) for fast/wrong/broken of two tasks."""
        out = []
        for task in ("relu", "saxpy"):
            for name, src, exp in candidates(task):
                if name in ("fast.c", "wrong.c", "broken.c"):
                    out.append((task, as_completion(src, len(out) % 4), exp == "OK"))
        return out

    def _verdicts(self):
        """The workers' verdict lines so far: what a failed reward check was given."""
        lines = []
        for name in sorted(n for n in os.listdir(self.cl.dir) if n.startswith("w") and
                           n.endswith(".log")):
            lines += [l for l in self.cl.log(name[:-4]).splitlines()
                      if re.search(r"attempt \d+: [A-Z_]+", l)]
        return "\n".join(lines[-40:])

    def _check(self, rewards, samples):
        self.assertEqual(len(rewards), len(samples))
        for r, (task, _, good) in zip(rewards, samples):
            self.assertIsNotNone(r, task)
            if (r > 0) != good:
                self.fail("%s: reward %r, expected %s; the workers' last verdicts:\n%s"
                          % (task, r, "> 0" if good else "<= 0", self._verdicts()))

    def test_adapter_verl_batch(self):
        from crucible import verl
        self._env()
        s = self._samples()
        rewards = verl.compute_score(
            data_sources=["kernelbench"] * len(s), solution_strs=[c for _, c, _ in s],
            ground_truths=[t for t, _, _ in s],
            extra_infos=[{"index": i // 2, "split": "train"} for i in range(len(s))])
        self._check(rewards, s)

    def test_adapter_verl_async(self):
        from crucible import verl
        self._env()
        s = self._samples()

        async def go():
            return await asyncio.gather(*[
                verl.compute_score_async(data_source="kernelbench", solution_str=c,
                                         ground_truth=json.dumps({"task": t}),
                                         extra_info={"index": i}, reward_router_address=None,
                                         reward_model_tokenizer=None)
                for i, (t, c, _) in enumerate(s)])
        self._check(asyncio.run(go()), s)

    def test_adapter_trl(self):
        from crucible import trl
        self._env()
        s = self._samples()
        prompts = [[{"role": "user", "content": f"write {t}"}] for t, _, _ in s]
        completions = [[{"role": "assistant", "content": c}] for _, c, _ in s]
        rewards = trl.crucible_kernel_reward(prompts=prompts, completions=completions,
                                             completion_ids=[[1, 2, 3]] * len(s),
                                             task=[t for t, _, _ in s], trainer_state=None)
        self._check(rewards, s)
        rewards = asyncio.run(trl.crucible_kernel_reward_async(
            prompts=[f"write {t}" for t, _, _ in s], completions=[c for _, c, _ in s],
            completion_ids=[[1]] * len(s), task=[t for t, _, _ in s]))
        self._check(rewards, s)

    def test_adapter_areal(self):
        from concurrent.futures import ProcessPoolExecutor
        from crucible import areal
        self._env()
        s = self._samples()
        # as AReaL's AsyncRewardWrapper calls it: one sample per call, in a process pool
        with ProcessPoolExecutor(4) as ex:
            futs = [ex.submit(areal.crucible_reward_fn, f"write {t}", c, [1, 2], [3, 4],
                              task=t, query_id=str(i)) for i, (t, c, _) in enumerate(s)]
            rewards = [f.result(300) for f in futs]
        self._check(rewards, s)

    def test_adapter_verifiers(self):
        from crucible import verifiers
        self._env()
        s = self._samples()

        async def go():
            return await asyncio.gather(*[
                verifiers.crucible_kernel_reward(
                    completion=[{"role": "assistant", "content": c}], answer=t,
                    prompt=[{"role": "user", "content": f"write {t}"}], state={}, task="default",
                    info={})
                for t, c, _ in s])
        self._check(asyncio.run(go()), s)

    # ---- remote-reward shapes ----

    def test_openrlhf_shape(self):
        src = candidates("vector_add")[1][1]
        prompt = "<|user|>write vector_add<|assistant|>"
        st, body = self.raw("POST", "/reward/openrlhf", {
            "query": [prompt + "```c\n" + src + "```"], "prompts": [prompt],
            "labels": ["vector_add"]})
        self.assertEqual(st, 200, body)
        self.assertEqual(len(body["rewards"]), 1)
        self.assertGreater(body["rewards"][0], 0)
        self.assertEqual(body["scores"], body["rewards"])
        self.assertEqual(body["extra_logs"]["status"], ["OK"])

    def test_slime_shape_and_retry_judged_once(self):
        wrong = [c for c in candidates("saxpy") if c[0] == "wrong.c"][0][1]
        req = {"prompt": "write saxpy", "response": "```c\n" + wrong + "```",
               "label": "saxpy"}
        before = self.client.status()["done"]
        st, r1 = self.raw("POST", "/reward/slime", req)
        self.assertEqual((st, r1), (200, 0.0))
        for _ in range(3):  # the trainer's retries
            st, r2 = self.raw("POST", "/reward/slime", req)
            self.assertEqual((st, r2), (200, 0.0))
        self.assertEqual(self.client.status()["done"], before + 1)
        # an unknown task is the caller's error, named
        st, e = self.raw("POST", "/reward/slime", dict(req, label="no_such_task"))
        self.assertEqual(st, 400)
        self.assertEqual(e["error"]["code"], "unknown_task")

    def test_timeout_is_explicit(self):
        slow = [c for c in candidates("matmul") if c[0] == "slow.c"][0][1]
        req = {"prompt": "p-timeout", "response": slow + "\n// t\n", "label": "matmul"}
        t0 = time.monotonic()
        st, body = self.raw("POST", "/reward/slime?timeout_s=0.05", req)
        self.assertLess(time.monotonic() - t0, 5)
        self.assertIn(st, (200, 504))
        if st == 504:
            self.assertEqual(body["error"]["code"], "timeout")

    # ---- hostile input: clear 4xx, and the gateway keeps serving ----

    def test_hostile_requests(self):
        st, e = self.raw("POST", "/reward/slime", {"prompt": "p", "response": "r", "label": "relu"},
                         headers={"Authorization": "Bearer wrong-token-wrong-token"})
        self.assertEqual(st, 401)
        st, e = self.raw("POST", "/reward/slime", {"prompt": "p"}, headers={"Authorization": None})
        self.assertEqual(st, 401)
        st, e = self.raw("POST", "/v1/batches", b"{not json")
        self.assertEqual((st, e["error"]["code"]), (400, "malformed_json"))
        st, e = self.raw("POST", "/v1/batches", b"[1,2]")
        self.assertEqual(st, 400)
        st, e = self.raw("POST", "/v1/batches", b"x" * (2 << 20))
        self.assertEqual(st, 413)
        st, e = self.raw("POST", "/v1/batches", b"{}", headers={"Content-Type": "text/plain"})
        self.assertEqual(st, 415)
        st, e = self.raw("POST", "/v1/batches", {"jobs": [{"task": "relu"}]})
        self.assertEqual(st, 400)
        st, e = self.raw("POST", "/v1/batches", {"jobs": [{"task": "nope", "source": "x"}]})
        self.assertEqual((st, e["error"]["code"]), (400, "unknown_task"))
        st, e = self.raw("POST", "/v1/batches", {"jobs": [{"task": "relu", "source": "x"}],
                                                 "options": {"time_budget_s": "fast"}})
        self.assertEqual(st, 400)
        st, e = self.raw("GET", "/v1/nowhere")
        self.assertEqual(st, 404)
        st, e = self.raw("DELETE", "/v1/batches")
        self.assertEqual(st, 405)
        st, e = self.raw("GET", "/v1/batches/does-not-exist")
        self.assertEqual(st, 404)
        with self.assertRaises(CrucibleError) as cm:
            Client(self.cl.url, token="bad-token-bad-token", timeout=5).status()
        self.assertEqual(cm.exception.status, 401)
        self.assertTrue(self.client.health()["ok"])

    # ---- a worker killed mid-step ----

    def test_worker_killed_mid_step(self):
        jobs = []
        for t, task in enumerate(("layernorm", "softmax_rows", "transpose", "sum_reduce")):
            for i, (name, src, exp) in enumerate(candidates(task)):
                for k in range(3):
                    jobs.append(Job(task=task, source=src + f"\n// kill test {k}\n",
                                    group_id=f"kill-{task}", job_id=f"{task}-{name}-{k}"))
        ack = self.client.submit(jobs, batch_id="py-kill-1")
        self.assertEqual(ack.accepted, len(jobs))
        # wait for the first record, then SIGKILL a worker that is busy
        for ev in self.client.stream("py-kill-1", timeout=120):
            if isinstance(ev, crucible.RewardRecord):
                break
        self.cl.kill("w0")
        try:
            res = self.client.result("py-kill-1", [j.job_id for j in jobs], timeout=STEP_TIMEOUT)
        finally:
            self.cl.start_worker(0)
        self.assertTrue(res.complete)
        for j, rec in zip(jobs, res.records):
            self.assertIsNotNone(rec, j.job_id)  # every sample answered
            if rec.status in ("INFRA_ERROR", "WORKER_LOST"):
                self.assertIsNone(rec.reward_or_none)  # an explicit null, never 0
            else:
                self.assertIsNotNone(rec.reward_or_none)


if __name__ == "__main__":
    unittest.main()
