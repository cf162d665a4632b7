"""A real cluster for the Python tests: a coordinator, CPU workers and the
gateway, each a `crucible` process (CRUCIBLE_BIN), on loopback ports the
kernel picked free, logs and database in a temporary folder."""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("CRUCIBLE_BIN", os.path.join(ROOT, "build", "crucible"))
EXAMPLES = os.path.join(ROOT, "tasks", "examples")
C_TASKS = ["vector_add", "relu", "saxpy", "matmul", "softmax_rows", "layernorm", "sum_reduce",
           "transpose"]

# quick judging: tests check verdicts, not timings
QUICK = ["--time-budget-s", "0.005", "--rse-target", "0.2", "--run-timeout-s", "60",
         "--heartbeat-ms", "200", "--liveness", "5"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, workers: int = 2, gateway_args=(), max_body: int = 1 << 20):
        self.dir = tempfile.mkdtemp(prefix="crucible-py-")
        self.token = secrets.token_hex(16)
        with open(os.path.join(self.dir, "tokens"), "w") as f:
            f.write("# test token\n" + self.token + "\n")
        self.cport, self.wport, self.hport = free_port(), free_port(), free_port()
        self.procs = {}
        env = dict(os.environ, CRUCIBLE_INSECURE="1")
        self.env = env
        self._start("coordinator", [BIN, "coordinator", "--db", os.path.join(self.dir, "c.db"),
                                    "--clients-endpoint", f"tcp://127.0.0.1:{self.cport}",
                                    "--workers-endpoint", f"tcp://127.0.0.1:{self.wport}",
                                    "--heartbeat-ms", "200", "--liveness", "5"])
        for i in range(workers):
            self.start_worker(i)
        self._start("gateway", [BIN, "gateway", "--clients-endpoint", f"tcp://127.0.0.1:{self.cport}",
                                "--listen", f"127.0.0.1:{self.hport}", "--tasks", EXAMPLES,
                                "--token-file", os.path.join(self.dir, "tokens"),
                                "--max-body", str(max_body), *QUICK, *gateway_args])
        self.url = f"http://127.0.0.1:{self.hport}"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.url + "/v1/health", timeout=1).read()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("the gateway did not come up")

    def start_worker(self, i: int) -> None:
        self._start(f"w{i}", [BIN, "worker", "--workers-endpoint", f"tcp://127.0.0.1:{self.wport}",
                              "--worker-id", f"w{i}", "--work-dir", os.path.join(self.dir, f"w{i}"),
                              "--compile-jobs", "1", "--heartbeat-ms", "200", "--liveness", "5"])

    def _start(self, name: str, argv) -> None:
        log = open(os.path.join(self.dir, name + ".log"), "wb")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                            env=self.env, start_new_session=True)
        log.close()

    def kill(self, name: str, sig=signal.SIGKILL) -> None:
        p = self.procs.pop(name)
        p.send_signal(sig)
        p.wait(10)

    def log(self, name: str) -> str:
        with open(os.path.join(self.dir, name + ".log"), errors="replace") as f:
            return f.read()

    def stop(self) -> None:
        for name in ["gateway"] + [n for n in self.procs if n.startswith("w")] + ["coordinator"]:
            p = self.procs.pop(name, None)
            if p is None:
                continue
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        if os.environ.get("CRUCIBLE_KEEP_TMP"):
            print("cluster left in", self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def candidates(task: str):
    """(file name, source, expected status) of a task's example candidates."""
    import json
    d = os.path.join(EXAMPLES, task, "candidates")
    with open(os.path.join(d, "expected.json")) as f:
        exp = json.load(f)
    out = []
    for name in sorted(exp):
        with open(os.path.join(d, name)) as f:
            out.append((name, f.read(), exp[name]))
    return out


def as_completion(src: str, style: int) -> str:
    """The source written the ways models write it."""
    if style == 0:
        return "Here is my kernel:\n\n```c\n" + src + "\n```\n"
    if style == 1:
        return ("First a sketch:\n```\nvoid helper(void);\n```\nAnd the final answer:\n```cpp\n"
                + src + "```")
    if style == 2:
        return "```c\n" + src.replace("void solve(", "extern \"C\" void solve(", 1) + "\n```"
    return src  # bare source, no fences
