#!/usr/bin/python3
"""One candidate evaluated the way KernelBench's own script does it (its
src/kernelbench/eval.py, eval_kernel_against_ref with the defaults of
scripts/eval_from_generations.py), in this fresh process: the baseline of
tests/gpu/torch_bench.py. Facts carried over, not code: seed 42 for the init
inputs and both models' weights, 5 correctness trials with seeds drawn from
42, atol = rtol = 1e-4 (fp32), 100 timed trials with CUDA events, then the
reference timed the same way (its excessive-speedup check, on by default).

  kb_eval_one.py PROBLEM.py CANDIDATE.py   -> one JSON line on stdout
"""
import json
import sys
import time

import torch


def set_seed(s):
    torch.manual_seed(s)
    torch.cuda.manual_seed(s)


def timed(model, inputs, n=100, warmup=3):
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(warmup):
        model(*inputs)
    torch.cuda.synchronize()
    times = []
    for _ in range(n):
        flush.zero_()
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        model(*inputs)
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sum(times) / len(times)


def main():
    t0 = time.time()
    ref_src = open(sys.argv[1]).read()
    new_src = open(sys.argv[2]).read()
    res = {"compiled": False, "correctness": False, "runtime": -1.0, "ref_runtime": -1.0,
           "metadata": {}}
    ctx = {}
    exec(compile(ref_src, sys.argv[1], "exec"), ctx)
    set_seed(42)
    init = ctx["get_init_inputs"]()
    with torch.no_grad():
        set_seed(42)
        model = ctx["Model"](*init).cuda()
    try:
        nctx = {}
        exec(compile(new_src, sys.argv[2], "exec"), nctx)  # load_inline compiles here
        with torch.no_grad():
            set_seed(42)
            new = nctx["ModelNew"](*init).cuda()
        torch.cuda.synchronize()
        res["compiled"] = True
    except Exception as e:
        res["metadata"]["compilation_error"] = str(e)[:300]
        print(json.dumps(res))
        return 0
    torch.manual_seed(42)
    seeds = [torch.randint(0, 2 ** 32 - 1, (1,)).item() for _ in range(5)]
    passed = 0
    with torch.no_grad():
        for s in seeds:
            set_seed(s)
            xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ctx["get_inputs"]()]
            out = model(*xs)
            torch.cuda.synchronize()
            got = new(*xs)
            torch.cuda.synchronize()
            if out.shape == got.shape and torch.allclose(out, got.to(out.dtype), atol=1e-4, rtol=1e-4):
                passed += 1
        res["metadata"]["correctness_trials"] = "(%d / 5)" % passed
        res["correctness"] = passed == 5
        if res["correctness"]:
            set_seed(42)
            xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ctx["get_inputs"]()]
            res["runtime"] = timed(new, xs)
            res["ref_runtime"] = timed(model, xs)
    res["seconds"] = time.time() - t0
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
