#!/usr/bin/env python3
"""fake_openai.py — an OpenAI-compatible chat-completions server for the rollout tests.

Speaks the real protocol: POST /v1/chat/completions with n, usage fields, and
server-sent-event streaming (stream: true; usage in a last chunk with
stream_options.include_usage; data: [DONE]). It answers with kernels taken
from tasks/examples/<task>/candidates, so the judge's feedback loop runs for
real: on turn 1 the k-th choice served for a task gets fast, slow, wrong, broken (k mod 4); every
later turn follows the previous answer: broken -> wrong -> slow -> fast.
The previous answer is read back from the conversation ("Attempt: <file>").

Faults, each on every Nth request (--faults 429:7,500:11,slow:13,drop:17,invalid:19):
429 (with Retry-After: 0), 500, slow (sleeps --slow-s before answering),
drop (closes the connection without an answer; mid-stream when streaming),
invalid (200 with a body that is not JSON). GET /stats gives the counts.
Prints "listening on PORT" once it serves. Python stdlib only.
"""
import argparse
import hashlib
import json
import os
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ORDER = ["fast", "slow", "wrong", "broken"]
NEXT = {"broken": "wrong", "wrong": "slow", "slow": "fast", "fast": "fast", "nowrite": "fast"}

lock = threading.Lock()
stats = {"requests": 0, "answered": 0, "faults": {}, "streamed": 0, "choices": 0,
         "answers_by_key": {}, "max_in_flight": 0, "in_flight": 0}


def candidate(root, task, name):
    path = os.path.join(root, task, "candidates", name + ".c")
    with open(path) as f:
        return f.read()


first_turns = {}  # task -> first-turn choices served: one request per sample still varies


def plan(messages, index, task=None):
    """The candidate for this choice: turn 1 by order of arrival, later turns after the last answer."""
    last = None
    for m in messages:
        if m.get("role") == "assistant":
            hit = re.search(r"Attempt: (\w+)\.c", m.get("content") or "")
            if hit:
                last = hit.group(1)
    if last is None:
        with lock:
            k = first_turns.get(task, 0)
            first_turns[task] = k + 1
        return ORDER[k % len(ORDER)]
    return NEXT.get(last, "fast")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _json(self, code, obj, extra=None):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/stats":
            with lock:
                out = dict(stats)
                keys = stats["answers_by_key"]
                out["repeated_answers"] = sum(v - 1 for v in keys.values() if v > 1)
                out["answers_by_key"] = len(keys)
            self._json(200, out)
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        with lock:
            stats["requests"] += 1
            k = stats["requests"]
            stats["in_flight"] += 1
            stats["max_in_flight"] = max(stats["max_in_flight"], stats["in_flight"])
        try:
            self._serve(raw, k)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with lock:
                stats["in_flight"] -= 1

    def _fault(self, k):
        for name, every in self.server.faults:
            if every > 0 and k % every == 0:
                with lock:
                    stats["faults"][name] = stats["faults"].get(name, 0) + 1
                return name
        return None

    def _serve(self, raw, k):
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._json(404, {"error": {"message": "no such route"}})
        if self.server.key and self.headers.get("Authorization") != "Bearer " + self.server.key:
            return self._json(401, {"error": {"message": "bad key"}})
        try:
            req = json.loads(raw)
        except ValueError:
            return self._json(400, {"error": {"message": "body is not JSON"}})
        if self.server.delay_s:
            time.sleep(self.server.delay_s)
        fault = self._fault(k)
        if fault == "429":
            return self._json(429, {"error": {"message": "rate limited"}}, {"Retry-After": "0"})
        if fault == "500":
            return self._json(500, {"error": {"message": "internal error"}})
        if fault == "slow":
            time.sleep(self.server.slow_s)
        if fault == "drop" and not req.get("stream"):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault == "invalid":
            body = b'{"id": "chatcmpl-x", "choices": [{"index": 0, "mess'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        messages = req.get("messages") or []
        first = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        hit = re.search(r"Task: (\S+)", first)
        task = hit.group(1) if hit else "vector_add"
        n = int(req.get("n") or 1)
        texts = []
        for i in range(n):
            name = plan(messages, i, task)
            texts.append("Attempt: %s.c\nHere is the kernel.\n```c\n%s```\n" %
                         (name, candidate(self.server.root, task, name)))
        prompt_tokens = sum(len(m.get("content") or "") for m in messages) // 4
        usage = {"prompt_tokens": prompt_tokens,
                 "completion_tokens": sum(len(t) for t in texts) // 4}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        key = hashlib.sha1(json.dumps(messages, sort_keys=True).encode()).hexdigest()
        created = int(time.time())
        if req.get("stream"):
            return self._stream(req, texts, usage, created, fault, key, n)
        with lock:
            stats["answered"] += 1
            stats["choices"] += n
            stats["answers_by_key"][key] = stats["answers_by_key"].get(key, 0) + 1
        self._json(200, {
            "id": "chatcmpl-%d" % k, "object": "chat.completion", "created": created,
            "model": req.get("model", "fake"),
            "choices": [{"index": i, "message": {"role": "assistant", "content": t},
                         "finish_reason": "stop"} for i, t in enumerate(texts)],
            "usage": usage})

    def _stream(self, req, texts, usage, created, fault, key, n):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def event(obj):
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()

        base = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": created,
                "model": req.get("model", "fake")}
        for i in range(len(texts)):
            event(dict(base, choices=[{"index": i, "delta": {"role": "assistant"},
                                       "finish_reason": None}]))
        pieces = 0
        for i, t in enumerate(texts):
            for off in range(0, len(t), 256):
                event(dict(base, choices=[{"index": i, "delta": {"content": t[off:off + 256]},
                                           "finish_reason": None}]))
                pieces += 1
                if fault == "drop" and pieces == 2:
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
            event(dict(base, choices=[{"index": i, "delta": {}, "finish_reason": "stop"}]))
        if (req.get("stream_options") or {}).get("include_usage"):
            event(dict(base, choices=[], usage=usage))
        self.wfile.write(b": keep-alive comment\n\ndata: [DONE]\n\n")
        self.wfile.flush()
        with lock:
            stats["answered"] += 1
            stats["streamed"] += 1
            stats["choices"] += n
            stats["answers_by_key"][key] = stats["answers_by_key"].get(key, 0) + 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", "tasks",
                                                   "examples"))
    ap.add_argument("--faults", default="")
    ap.add_argument("--slow-s", type=float, default=2.0)
    ap.add_argument("--delay-s", type=float, default=0.0)
    ap.add_argument("--key", default="")
    a = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    srv.root = a.root
    srv.slow_s = a.slow_s
    srv.delay_s = a.delay_s
    srv.key = a.key
    srv.faults = []
    for part in filter(None, a.faults.split(",")):
        name, every = part.split(":")
        srv.faults.append((name, int(every)))
    print("listening on %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
