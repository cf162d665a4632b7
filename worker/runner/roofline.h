/* roofline.h — the roofline floor (docs/hacks.md #16), one rule for every
 * backend: a case cannot take less time than its declared bytes at the
 * device's bandwidth, nor less than its declared flops at its peak rate,
 * both taken generously (judge_const.h), so only impossible times are
 * flagged. */
#ifndef CR_ROOFLINE_H
#define CR_ROOFLINE_H

#include "crucible.pb-c.h"

#include <stddef.h>

/* The floor of a case on this host's cores: bytes at the host's copy
 * bandwidth (host_copy_bw, B/s; 0 = unknown) times CR_JUDGE_HOST_BW_MARGIN
 * per core the task may use, and flops at cr_judge_host_peak_flops; the
 * larger, or 0 (no floor) when neither is known or it is below what a sample
 * resolves (50 us). For the CPU judge and the torch judge's CPU jobs. */
double cr_judge_host_floor_us(double bytes, double flops, double host_copy_bw, int cores);

/* What cr_judge_host_floor_us took, in words, for the verdict's message. */
void cr_judge_host_basis(char *out, size_t len, double bytes, double flops, double host_copy_bw,
                         int cores);

/* Flop/s no code reaches on `cores` of this host: its highest clock (the
 * largest cpufreq maximum of its CPUs, else /proc/cpuinfo's fastest, either
 * doubled for boost a driver or a VM does not report; else 6 GHz) times
 * CR_JUDGE_HOST_FLOPS_PER_CORE_CLK per core. */
double cr_judge_host_peak_flops(int cores);

/* The floor of a case on a GPU, in us: bytes at bw (B/s, its margin taken)
 * and flops at rate (flop/s above its peak), the larger; 0 when neither is
 * known. For the CUDA judge and the torch judge's GPU jobs. */
double cr_judge_gpu_floor_us(double bytes, double flops, double bw, double rate);

/* Flop/s no kernel reaches on a GPU of `sms` SMs at max_clock_mhz:
 * CR_JUDGE_GPU_FLOPS_PER_SM_CLK per SM and clock; 0 when either is unknown. */
double cr_judge_gpu_peak_flops(int sms, double max_clock_mhz);

/* The roofline verdict: a median below the floor (floor_us 0 = none) is
 * HACK_DETECTED / below_roofline, the message naming the floor's basis and
 * where it is impossible ("machine", "GPU"). Returns 1 when it fired. */
int cr_judge_roofline(Crucible__RewardRecord *rec, int c, double median_us, double floor_us,
                      const char *basis, const char *where);

#endif
