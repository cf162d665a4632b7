"""The Python client of `crucible gateway`: standard library only (urllib over
HTTP/JSON), so neither protobuf nor a ZeroMQ binding has to match the trainer's.

    from crucible import Client, Job
    c = Client("http://127.0.0.1:8470", token="...")
    res = c.score([Job(task="vector_add", completion=text, group_id="p0"), ...], timeout=600)
    res.rewards      # in job order; None = no reward (an infrastructure failure)
    res.groups       # GRPO groups with the coordinator's advantages

Every call has a deadline and ends by it: with what is done (BatchResult.complete
False, missing records None) or with CrucibleError. Submits are idempotent by
batch_id, so a submit that failed in transit is retried with the same id.
"""
from __future__ import annotations

import asyncio
import json
import os
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, AsyncIterator, Dict, Iterable, Iterator, List, Optional, Union

from .records import BatchResult, Group, RewardRecord, SubmitAck

DEFAULT_URL = os.environ.get("CRUCIBLE_GATEWAY_URL", "http://127.0.0.1:8470")
# Statuses worth a retry: the gateway or the coordinator is busy or restarting.
_RETRY_HTTP = (429, 502, 503)


class CrucibleError(Exception):
    """A request the gateway refused (status 4xx) or could not answer in time."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


@dataclass
class Job:
    """One candidate. `completion` is the model's text (the gateway takes the
    kernel out of its fenced blocks); `source` is kernel source used verbatim."""
    task: str
    completion: Optional[str] = None
    source: Optional[str] = None
    job_id: Optional[str] = None
    group_id: Optional[str] = None
    sample_index: Optional[int] = None
    turn: Optional[int] = None

    def to_json(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"task": self.task}
        if self.source is not None:
            d["source"] = self.source
        else:
            d["completion"] = self.completion or ""
        for k in ("job_id", "group_id", "sample_index", "turn"):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        return d


def _job_json(j: Union[Job, Dict[str, Any]]) -> Dict[str, Any]:
    return j.to_json() if isinstance(j, Job) else dict(j)


def new_batch_id(prefix: str = "py-") -> str:
    return prefix + secrets.token_hex(8)


class Client:
    """Synchronous client. Thread-safe: every call opens its own connection."""

    def __init__(self, url: str = DEFAULT_URL, token: Optional[str] = None,
                 timeout: float = 600.0):
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("CRUCIBLE_TOKEN")
        self.timeout = timeout

    # ---- transport ----

    def _request(self, method: str, path: str, body: Any = None,
                 timeout: Optional[float] = None, params: Optional[Dict[str, Any]] = None,
                 stream: bool = False):
        """One HTTP exchange, retried on connection errors and 429/502/503 until
        the deadline. Returns the decoded JSON (or the open response when stream)."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        q = dict(params or {})
        url = self.url + path
        data = json.dumps(body).encode() if body is not None else None
        delay = 0.1
        while True:
            left = deadline - time.monotonic()
            q["timeout_s"] = f"{max(left - 0.5, 0.0):.3f}"  # the gateway answers first
            req = urllib.request.Request(url + "?" + urllib.parse.urlencode(q), data=data,
                                         method=method)
            if data is not None:
                req.add_header("Content-Type", "application/json")
            if self.token:
                req.add_header("Authorization", "Bearer " + self.token)
            try:
                resp = urllib.request.urlopen(req, timeout=max(left, 0.1) + 5)
                if stream:
                    return resp
                with resp:
                    return json.loads(resp.read() or b"null")
            except urllib.error.HTTPError as e:
                payload = e.read()
                try:
                    err = json.loads(payload).get("error", {})
                except (ValueError, AttributeError):
                    err = {}
                if e.code in _RETRY_HTTP and time.monotonic() + delay < deadline:
                    time.sleep(delay)
                    delay = min(delay * 2, 2.0)
                    continue
                raise CrucibleError(e.code, err.get("code", "http"),
                                    err.get("message", payload.decode(errors="replace"))) from None
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
                if time.monotonic() + delay >= deadline:
                    raise CrucibleError(0, "unreachable", f"{self.url}: {e}") from None
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    # ---- the API ----

    def submit(self, jobs: Iterable[Union[Job, Dict[str, Any]]], *, batch_id: Optional[str] = None,
               tasks: Optional[List[Dict[str, Any]]] = None,
               options: Optional[Dict[str, Any]] = None, timeout: Optional[float] = None) -> SubmitAck:
        """Submits a batch (idempotent by batch_id); returns once the coordinator has it."""
        body: Dict[str, Any] = {"batch_id": batch_id or new_batch_id(),
                                "jobs": [_job_json(j) for j in jobs]}
        if tasks:
            body["tasks"] = tasks
        if options:
            body["options"] = options
        try:
            r = self._request("POST", "/v1/batches", body, timeout=timeout)
        except CrucibleError as e:
            if e.status != 504:
                raise
            # no SubmitAck in time: the same batch again is safe
            r = self._request("POST", "/v1/batches", body, timeout=timeout)
        return SubmitAck(batch_id=r["batch_id"], accepted=r.get("accepted", 0),
                         duplicate=r.get("duplicate", 0), rejected=r.get("rejected", 0),
                         errors=list(r.get("errors", [])), state=r.get("state", ""))

    def result(self, batch_id: str, job_ids: Optional[List[str]] = None,
               timeout: Optional[float] = None) -> BatchResult:
        """Waits (up to timeout) for the batch to finish; records in job_ids order
        (default: the order the batch was submitted in)."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            r = self._request("GET", f"/v1/batches/{_q(batch_id)}/result",
                              timeout=max(deadline - time.monotonic(), 0.1))
            if r.get("complete") or time.monotonic() >= deadline - 0.5:
                return _batch_result(r, job_ids)

    def score(self, jobs: List[Union[Job, Dict[str, Any]]], *, batch_id: Optional[str] = None,
              tasks: Optional[List[Dict[str, Any]]] = None, options: Optional[Dict[str, Any]] = None,
              timeout: Optional[float] = None) -> BatchResult:
        """submit + result: a whole step at once; records and rewards in job order."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        js = [_job_json(j) for j in jobs]
        for i, j in enumerate(js):
            j.setdefault("job_id", f"j{i:06d}")
        ack = self.submit(js, batch_id=batch_id, tasks=tasks, options=options, timeout=timeout)
        return self.result(ack.batch_id, [j["job_id"] for j in js],
                           timeout=max(deadline - time.monotonic(), 0.1))

    def stream(self, batch_id: str, after: int = 0,
               timeout: Optional[float] = None) -> Iterator[Union[RewardRecord, Group, Dict[str, Any]]]:
        """Records (and each group right after the record that completed it) as
        they finish; ends with a dict {"done"|"timeout"|"error": ...}. Resumes
        after seq `after`, and by itself after a dropped connection."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            resp = self._request("GET", f"/v1/batches/{_q(batch_id)}/records",
                                 params={"after": after}, stream=True,
                                 timeout=max(deadline - time.monotonic(), 0.1))
            try:
                with resp:
                    for line in resp:
                        line = line.strip()
                        if not line:
                            continue  # keepalive
                        ev = json.loads(line)
                        if "record" in ev:
                            rec = RewardRecord.from_json(ev["record"])
                            after = max(after, rec.seq)
                            yield rec
                        elif "group" in ev:
                            yield Group.from_json(ev["group"])
                        else:
                            yield ev
                            return
            except (ConnectionError, OSError, ValueError):
                if time.monotonic() >= deadline:
                    yield {"timeout": {"last_seq": after}}
                    return
                continue  # resume after the last seq seen

    def wait_group(self, batch_id: str, group_id: str, timeout: Optional[float] = None) -> Group:
        return Group.from_json(self._request(
            "GET", f"/v1/batches/{_q(batch_id)}/groups/{_q(group_id)}", timeout=timeout))

    def cancel(self, batch_id: str, job_id: Optional[str] = None,
               timeout: Optional[float] = None) -> int:
        params = {"job_id": job_id} if job_id else None
        r = self._request("POST", f"/v1/batches/{_q(batch_id)}/cancel", {}, params=params,
                          timeout=timeout)
        return int(r.get("cancelled", 0))

    def status(self, batch_id: Optional[str] = None, timeout: Optional[float] = 10.0) -> Dict[str, Any]:
        if batch_id:
            return self._request("GET", f"/v1/batches/{_q(batch_id)}", timeout=timeout)
        return self._request("GET", "/v1/status", timeout=timeout)

    def health(self) -> Dict[str, Any]:
        return self._request("GET", "/v1/health", timeout=5.0)


class AsyncClient:
    """The same API for asyncio: each call runs the synchronous one in a thread,
    so many steps (or per-sample calls) can wait at once."""

    def __init__(self, url: str = DEFAULT_URL, token: Optional[str] = None,
                 timeout: float = 600.0):
        self.sync = Client(url, token, timeout)

    async def submit(self, jobs, **kw) -> SubmitAck:
        jobs = list(jobs)
        return await asyncio.to_thread(self.sync.submit, jobs, **kw)

    async def result(self, batch_id: str, job_ids=None, timeout=None) -> BatchResult:
        return await asyncio.to_thread(self.sync.result, batch_id, job_ids, timeout)

    async def score(self, jobs, **kw) -> BatchResult:
        jobs = list(jobs)
        return await asyncio.to_thread(self.sync.score, jobs, **kw)

    async def wait_group(self, batch_id: str, group_id: str, timeout=None) -> Group:
        return await asyncio.to_thread(self.sync.wait_group, batch_id, group_id, timeout)

    async def cancel(self, batch_id: str, job_id=None, timeout=None) -> int:
        return await asyncio.to_thread(self.sync.cancel, batch_id, job_id, timeout)

    async def status(self, batch_id=None, timeout=10.0):
        return await asyncio.to_thread(self.sync.status, batch_id, timeout)

    async def stream(self, batch_id: str, after: int = 0, timeout=None) -> AsyncIterator[Any]:
        loop = asyncio.get_running_loop()
        q: asyncio.Queue = asyncio.Queue()
        end = object()

        def pump():
            try:
                for ev in self.sync.stream(batch_id, after, timeout):
                    loop.call_soon_threadsafe(q.put_nowait, ev)
            except Exception as e:  # handed to the consumer
                loop.call_soon_threadsafe(q.put_nowait, e)
            loop.call_soon_threadsafe(q.put_nowait, end)

        fut = loop.run_in_executor(None, pump)
        while True:
            ev = await q.get()
            if ev is end:
                break
            if isinstance(ev, Exception):
                raise ev
            yield ev
        await fut


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _batch_result(r: Dict[str, Any], job_ids: Optional[List[str]]) -> BatchResult:
    recs = {}
    for o in r.get("records", []):
        if o is not None:
            rec = RewardRecord.from_json(o)
            recs[rec.job_id] = rec
    ids = list(job_ids) if job_ids is not None else list(r.get("job_ids", []))
    groups = {g["group_id"]: Group.from_json(g) for g in r.get("groups", [])}
    return BatchResult(batch_id=r["batch_id"], job_ids=ids, records=[recs.get(i) for i in ids],
                       groups=groups, complete=bool(r.get("complete")), state=r.get("state", ""))
