#!/usr/bin/python3
"""Programs started inside a GPU torch executor's sandbox run (docs/torch.md §5).

On a GPU the sandbox lets Triton's JIT start ptxas and the C compiler; in session 15
every such child died of SIGSYS on the H200 (Python's vfork child resets the sandbox's
SIGSYS handler, a call the filter traps). This enters the same sandbox with the GPU
profile (threads and programs allowed: cr_pysandbox_enter, as crucible-torch does on a
GPU) in two fresh processes, stacks the second filter as crucible-torch does after the
first call (cr_pysandbox_lock with allow_exec), and starts /sbin/ldconfig -p, gcc and,
where the toolkit has it, ptxas in each (and ldconfig once more with close_fds=False,
which Python 3.11 starts by posix_spawn, as 3.13 does every program): all must
succeed, with crucible-torch's _fork_not_vfork and without it (the vfork child's reset of
SIGSYS's handler was trapped until the sandbox refused that call with EPERM under a JIT);
and in both, installing a SIGSYS handler must fail with EPERM. On the H200 in session 16
every Triton candidate was a sandbox_violation, "denied system call rt_sigaction (13)" (13
is the call's number): LLVM, inside Triton, installs a handler for every fatal signal,
SIGSYS among them, as it compiles, which the first filter trapped; and after the first call
the second filter trapped every handler a child installs before or after exec (Python's
forked child sets SIGPIPE back, gcc installs its own), which this shows on the CPU.

  check_sandbox_subprocess.py --build BUILD_DIR --src SOURCE_DIR
"""
import argparse
import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile


PTXAS = next((p for p in (os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin",
                                        "ptxas"), shutil.which("ptxas") or "")
              if p and os.access(p, os.X_OK)), "")


def child(build, src, fix):
    if fix:
        spec = importlib.util.spec_from_file_location(
            "crucible_torch", os.path.join(src, "worker", "runner", "torch", "crucible_torch.py"))
        ct = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ct)
        ct._fork_not_vfork()
    lib = ctypes.CDLL(os.path.join(build, "libcrucible-pysandbox.so"))
    echo, summary, net = ctypes.create_string_buffer(512), ctypes.create_string_buffer(512), ctypes.c_int(0)
    scratch = tempfile.mkdtemp(prefix="cr-sbx-")
    os.chmod(scratch, 0o755)
    os.chdir(scratch)
    uid = 65534 if os.geteuid() == 0 else 0
    rc = lib.cr_pysandbox_enter(scratch.encode(), ctypes.c_uint(uid), ctypes.c_int(1), ctypes.c_int(0),
                                ctypes.c_int(1), echo, ctypes.c_size_t(512), summary,
                                ctypes.c_size_t(512), ctypes.byref(net))
    if rc != 0:
        print("sandbox not entered: %s" % summary.value.decode())
        return 2
    with open("x.c", "w") as f:
        f.write("int f(int x) { return x + 1; }\n")
    with open("x.ptx", "w") as f:
        f.write(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n")
    os.environ["TMPDIR"] = os.getcwd()
    # LLVM (Triton's compiler, in the executor's process) installs a handler for every
    # fatal signal, SIGSYS among them: refused with EPERM, not trapped (session 16)
    import errno
    import signal
    try:
        signal.signal(signal.SIGSYS, lambda *a: None)
        print("SIGSYS handler installed")
    except OSError as e:
        print("SIGSYS handler %s" % ("refused" if e.errno == errno.EPERM else "error %s" % e))
    rc = lib.cr_pysandbox_lock(ctypes.c_int(1))
    if rc != 0:
        print("second filter not in force: %d" % rc)
        return 2
    cmds = [(["/sbin/ldconfig", "-p"], True),
            ([shutil.which("gcc") or "gcc", "-O2", "-shared", "-fPIC", "-o", "x.so", "x.c"], True),
            (["/sbin/ldconfig", "-p"], False)]  # Python 3.11's posix_spawn path
    if PTXAS:
        cmds.append(([PTXAS, "-arch=sm_90", "-o", "x.cubin", "x.ptx"], True))
    codes = []
    for cmd, close in cmds:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           close_fds=close)
        codes.append(p.returncode)
        print("  %s (close_fds %s): exit %d %s" % (os.path.basename(cmd[0]), close, p.returncode,
                                                  p.stderr.strip()[-200:]))
    print("CODES %s" % " ".join(str(c) for c in codes))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--child", choices=("fix", "nofix"))
    a = ap.parse_args()
    if a.child:
        return child(os.path.abspath(a.build), os.path.abspath(a.src), a.child == "fix")
    bad = 0
    n = 4 if PTXAS else 3
    # both succeed since SIGSYS's handler is refused with EPERM under a JIT (the vfork
    # child's reset of it no longer traps); before that nofix died of SIGSYS (-31)
    for mode, want in (("nofix", " ".join(["0"] * n)), ("fix", " ".join(["0"] * n))):
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--build", a.build, "--src",
                            a.src, "--child", mode], capture_output=True, text=True, timeout=120)
        got = [l[6:] for l in p.stdout.splitlines() if l.startswith("CODES ")]
        ok = got == [want] and "SIGSYS handler refused" in p.stdout
        bad += not ok
        print("%s %-6s exits %s (want %s)\n%s" % ("ok  " if ok else "FAIL", mode,
                                               got[0] if got else "none", want,
                                               p.stdout + p.stderr[-600:]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
