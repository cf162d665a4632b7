"""What the trainer adapters share: turning a trainer's sample into a Job,
scoring a whole step in one batch, and coalescing per-sample async calls into
batches. Kernel extraction (fenced blocks, last block, extern "C") is the
gateway's (`completion` jobs), so every trainer gets the same rule."""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
from typing import Any, Dict, List, Optional, Sequence

from .client import AsyncClient, Client, CrucibleError, Job

_TIMEOUT_S = float(os.environ.get("CRUCIBLE_TIMEOUT_S", "600"))


def client_from_env() -> Client:
    return Client(os.environ.get("CRUCIBLE_GATEWAY_URL", "http://127.0.0.1:8470"),
                  os.environ.get("CRUCIBLE_TOKEN"), _TIMEOUT_S)


def completion_text(c: Any) -> str:
    """A completion as text: a string, or chat messages (the last assistant turn)."""
    if isinstance(c, str):
        return c
    if isinstance(c, dict):
        return str(c.get("content", ""))
    if isinstance(c, (list, tuple)):
        for m in reversed(c):
            if isinstance(m, dict) and m.get("role", "assistant") == "assistant":
                return str(m.get("content", ""))
        return "\n".join(completion_text(m) for m in c)
    return str(c)


def task_name(*candidates: Any) -> Optional[str]:
    """The first candidate that names a task: a string, a dict's "task", or a JSON text of one."""
    for c in candidates:
        if isinstance(c, dict) and isinstance(c.get("task"), str):
            return c["task"]
        if isinstance(c, str) and c:
            if c.startswith("{"):
                try:
                    d = json.loads(c)
                    if isinstance(d, dict) and isinstance(d.get("task"), str):
                        return d["task"]
                except ValueError:
                    pass
            return c
    return None


def group_of(task: str, prompt: Any) -> str:
    """The GRPO group of a sample: its task and prompt (samples of one prompt)."""
    text = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)
    return "g-" + hashlib.blake2b(f"{task}\0{text}".encode(), digest_size=8).hexdigest()


def score_step(client: Client, tasks: Sequence[Optional[str]], completions: Sequence[Any],
               groups: Sequence[Optional[str]], timeout: Optional[float] = None,
               options: Optional[Dict[str, Any]] = None) -> List[Optional[float]]:
    """One batch for the whole step, rewards in order; None where there is no
    reward (an infrastructure failure, no task, or the gateway out of reach)."""
    jobs, where = [], []
    for i, (t, c, g) in enumerate(zip(tasks, completions, groups)):
        if t:
            jobs.append(Job(task=t, completion=completion_text(c), group_id=g or None,
                            job_id=f"j{i:06d}", sample_index=i))
            where.append(i)
    out: List[Optional[float]] = [None] * len(completions)
    if not jobs:
        return out
    try:
        res = client.score(jobs, timeout=_TIMEOUT_S if timeout is None else timeout,
                           options=options)
    except CrucibleError:
        return out
    for i, r in zip(where, res.rewards):
        out[i] = r
    return out


class Coalescer:
    """Per-sample async calls gathered into one batch: samples arriving within
    window_s of the first (or max_batch of them) go together, so a step that
    a trainer scores sample by sample is still judged in parallel."""

    def __init__(self, client: Optional[AsyncClient] = None, window_s: float = 0.05,
                 max_batch: int = 4096, timeout: Optional[float] = None):
        self.client = client
        self.window_s, self.max_batch = window_s, max_batch
        self.timeout = _TIMEOUT_S if timeout is None else timeout
        self._pending: List[tuple] = []
        self._timer: Optional[asyncio.TimerHandle] = None

    async def score(self, task: Optional[str], completion: Any, group: Optional[str]) -> Optional[float]:
        if not task:
            return None
        if self.client is None:
            c = client_from_env()
            self.client = AsyncClient(c.url, c.token, c.timeout)
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._pending.append((task, completion, group, fut))
        if len(self._pending) >= self.max_batch:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self.window_s, self._flush)
        return await fut

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if batch:
            asyncio.ensure_future(self._run(batch))

    async def _run(self, batch: List[tuple]) -> None:
        try:
            rewards = await asyncio.to_thread(
                score_step, self.client.sync, [b[0] for b in batch], [b[1] for b in batch],
                [b[2] for b in batch], self.timeout)
        except Exception:  # never leave a caller waiting
            rewards = [None] * len(batch)
        for b, r in zip(batch, rewards):
            if not b[3].done():
                b[3].set_result(r)
