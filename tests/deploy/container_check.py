#!/usr/bin/python3
"""container_check.py FILE: a structural check of deploy/Containerfile.

No Dockerfile linter (hadolint) is packaged in Debian 12, and CI has no
container engine, so the file is parsed here: continuation lines joined,
every instruction known, every stage FROM a pinned CUDA image tag (no
:latest), COPY --from naming a defined stage, exec-form JSON arrays valid,
apt-get update paired with install and list cleanup in one RUN, an
ENTRYPOINT running crucible, and every binary the runtime copies is built by
CMakeLists.txt. Exits 1 listing every problem."""
import json
import re
import sys

KNOWN = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME",
         "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}


def main(path, cmake):
    errs, lines, cur = [], [], ""
    for raw in open(path):
        s = raw.rstrip("\n")
        if not cur and (not s.strip() or s.lstrip().startswith("#")):
            continue
        if s.endswith("\\"):
            cur += s[:-1] + " "
            continue
        lines.append(cur + s)
        cur = ""
    if cur:
        errs.append("file ends inside a continued line")
    stages, entry = [], None
    for ln in lines:
        m = re.match(r"\s*([A-Za-z]+)\s+(.*)", ln)
        if not m:
            errs.append("not an instruction: %r" % ln[:60])
            continue
        ins, arg = m.group(1).upper(), m.group(2).strip()
        if ins not in KNOWN:
            errs.append("unknown instruction %s" % ins)
        if m.group(1) != ins:
            errs.append("instruction %s not upper case" % m.group(1))
        if ins == "FROM":
            f = arg.split()
            img = f[0]
            if not re.match(r"^nvidia/cuda:\d+\.\d+(\.\d+)?-[a-z]+-[a-z0-9.]+$", img):
                errs.append("FROM %s: expected a pinned nvidia/cuda:<version>-<flavour>-<os> tag" % img)
            if len(f) == 3 and f[1].upper() == "AS":
                stages.append(f[2])
            elif len(f) != 1:
                errs.append("FROM %s: malformed" % arg)
        if ins == "COPY":
            m2 = re.match(r"--from=(\S+)", arg)
            if m2 and m2.group(1) not in stages:
                errs.append("COPY --from=%s: no such stage" % m2.group(1))
            if m2:
                for b in re.findall(r"/usr/local/bin/(crucible[\w-]*)", arg):
                    if "add_executable(%s " % b not in cmake and "add_executable(%s\n" % b not in cmake:
                        errs.append("COPY of %s: not a CMake executable" % b)
        if ins in ("CMD", "ENTRYPOINT", "VOLUME") or (ins == "HEALTHCHECK" and "CMD [" in arg):
            j = arg[arg.index("CMD") + 3:].strip() if ins == "HEALTHCHECK" else arg
            if j.startswith("["):
                try:
                    v = json.loads(j)
                    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                        raise ValueError
                except ValueError:
                    errs.append("%s: invalid exec-form JSON %s" % (ins, j))
                if ins == "ENTRYPOINT":
                    entry = json.loads(j)
        if ins == "RUN" and "apt-get update" in arg:
            if "apt-get install" not in arg or "rm -rf /var/lib/apt/lists" not in arg:
                errs.append("RUN with apt-get update must install and clean lists in one layer")
        if ins == "EXPOSE" and not all(re.match(r"^\d+(/tcp|/udp)?$", p) for p in arg.split()):
            errs.append("EXPOSE %s: not ports" % arg)
    if not lines or not lines[0].upper().startswith("FROM"):
        errs.append("the first instruction must be FROM")
    if not entry or not entry[0].endswith("/crucible"):
        errs.append("ENTRYPOINT must run crucible")
    for e in errs:
        print("container_check: " + e)
    print("container_check: %d instructions, %d stages, %d problems" % (len(lines), len(stages) + 1, len(errs)))
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], open(sys.argv[2]).read()))
