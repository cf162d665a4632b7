/* judge_const.h — the constants both judges (cpu_judge.c and cuda/) share:
 * one value each, so that the CPU and the CUDA backend time and check
 * under the same rules (docs/design.md §4). A constant that only one
 * backend uses stays in that backend's file. */
#ifndef CR_JUDGE_CONST_H
#define CR_JUDGE_CONST_H

#define CR_JUDGE_DEFAULT_BUDGET_S 1.0 /* per bench case (JobOptions.time_budget_s) */
#define CR_JUDGE_DEFAULT_RSE 0.005    /* 0.5%: docs/design.md §4 */
#define CR_JUDGE_MIN_SAMPLES 10       /* per side, before any stopping rule applies */
#define CR_JUDGE_MAX_SAMPLES 10000    /* per side */
/* Share of the time budget the candidate-only loop of the `cached` policy
 * gets: the candidate's half of an A B A B loop, so it keeps about the
 * samples interleaving gave it and the reference's half is what is saved
 * (both backends; their minimum-time and hard-cap rules scale with it). */
#define CR_JUDGE_CACHED_BUDGET_SHARE 0.5
#define CR_JUDGE_HARD_CAP 5.0   /* x budget: stop even below CR_JUDGE_MIN_SAMPLES */
#define CR_JUDGE_VERIFY_ONE_IN 8 /* ~1 in 8 timed candidate outputs re-verified */
/* The host's roofline floor takes 8x the copy bandwidth measured at worker
 * start: that figure is one core's memcpy on a host that may be busy then (a
 * 2x margin flagged an honest vector_add under a parallel test run), and the
 * floor is only there to stop impossible times, which are orders of
 * magnitude off (the CPU and torch judges, roofline.c). */
#define CR_JUDGE_HOST_BW_MARGIN 8.0
#define CR_JUDGE_GPU_BW_MARGIN 1.25 /* a GPU's roofline floor: 1.25x its measured copy
                                       bandwidth (the CUDA and torch judges) */
/* A roofline floor's flop rate, above any device's peak with room: per SM and
 * clock on a GPU 65536 (Hopper's fp8 sparse tensor rate is 16384, Blackwell's
 * fp8 sparse and fp4 dense about 32768), per core and clock on a CPU 8192
 * (AMX does 2048 int8 operations, 1024 bf16). The CUDA and torch judges. */
#define CR_JUDGE_GPU_FLOPS_PER_SM_CLK 65536.0
#define CR_JUDGE_HOST_FLOPS_PER_CORE_CLK 8192.0

/* Input set indices (cr_rng_seed's `set`): 0 and 1 are the two verification
 * runs, timing draws from CR_JUDGE_SET_TIMED upwards, and the stream that
 * picks the verified timed samples uses a set no input uses. */
#define CR_JUDGE_SET_TIMED 2u
#define CR_JUDGE_SET_SAMPLING 0xffffffffu

#endif
