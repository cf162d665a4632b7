#!/usr/bin/python3
"""Programs started inside a GPU torch executor's sandbox run (docs/torch.md §5).

On a GPU the sandbox lets Triton's JIT start ptxas and the C compiler. This enters the same
sandbox with the GPU profile (threads and programs allowed: cr_pysandbox_enter, as
crucible-torch does on a GPU) in a fresh process, checks that a SIGSYS handler is refused
with EPERM, stacks the second filter as crucible-torch does after the first call
(cr_pysandbox_lock with allow_exec), and starts /sbin/ldconfig -p, gcc and, where the
toolkit has it, ptxas (and ldconfig once more with close_fds=False, which Python 3.11
starts by posix_spawn): every one must exit 0.

What it guards: on the H200 in session 15 every program Triton started died of SIGSYS
(Python's vfork child sets SIGSYS back before exec, which the first filter trapped), and in
session 16 every Triton candidate was a sandbox_violation, "denied system call rt_sigaction
(13)" (13 is the call's number): LLVM, inside Triton, installs a SIGSYS handler as it
compiles. Under a JIT the first filter now refuses that with EPERM, and on a GPU the second
filter no longer traps the handlers compilers install before or after exec. On the old code
the programs exit -31 or 86.

  check_sandbox_subprocess.py --build BUILD_DIR --src SOURCE_DIR
"""
import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile


PTXAS = next((p for p in (os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin",
                                        "ptxas"), shutil.which("ptxas") or "")
              if p and os.access(p, os.X_OK)), "")


def child(build):
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
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        return child(os.path.abspath(a.build))
    # every program exits 0: Python's vfork or posix_spawn child sets SIGSYS back, which
    # under a JIT is refused with EPERM (before: trapped, the child died of SIGSYS, -31);
    # the second filter no longer traps the handlers the compilers install (before: 86)
    want = " ".join(["0"] * (4 if PTXAS else 3))
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--build", a.build, "--src",
                        a.src, "--child"], capture_output=True, text=True, timeout=120)
    got = [l[6:] for l in p.stdout.splitlines() if l.startswith("CODES ")]
    ok = got == [want] and "SIGSYS handler refused" in p.stdout
    print("%s exits %s (want %s)\n%s" % ("ok  " if ok else "FAIL", got[0] if got else "none",
                                         want, p.stdout + p.stderr[-600:]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
