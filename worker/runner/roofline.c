/* roofline.c — the roofline floor of every backend (roofline.h). */
#define _GNU_SOURCE
#include "roofline.h"

#include "cpu_judge.h"
#include "judge_const.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A floor under 50 us is not applied: a sample is the executor's time less
 * the least cost of an empty command (exec.h), whose jitter is microseconds,
 * so a call that short can measure near nothing honestly (an honest tiny
 * case was flagged under load). Six times the slowest empty command seen on
 * the H200 host (bench/RESULTS.md). */
#define S_FLOOR_MIN_US 50.0
#define S_CLOCK_ROOM 2.0       /* above a reported clock: boost a cpufreq driver or a VM hides */
#define S_FALLBACK_MHZ 6000.0  /* above any CPU's clock: the floor stays a floor */

double cr_judge_host_floor_us(double bytes, double flops, double host_copy_bw, int cores)
{
    int n = cores > 0 ? cores : 1;
    double bw = host_copy_bw * CR_JUDGE_HOST_BW_MARGIN * n;
    double us = bytes > 0 && bw > 0 ? bytes / bw * 1e6 : 0; /* 0 = unknown */
    double rate = cr_judge_host_peak_flops(n);
    if (flops > 0 && rate > 0)
        us = fmax(us, flops / rate * 1e6);
    return us < S_FLOOR_MIN_US ? 0 : us; /* below what a sample resolves: no floor */
}

void cr_judge_host_basis(char *out, size_t len, double bytes, double flops, double host_copy_bw,
                         int cores)
{
    int n = cores > 0 ? cores : 1;
    snprintf(out, len, "%.4g bytes at %.0f GB/s, %.0fx this host's copy bandwidth; %.4g flops "
             "at %.0f GFLOP/s on %d core%s", bytes, host_copy_bw * CR_JUDGE_HOST_BW_MARGIN * n / 1e9,
             CR_JUDGE_HOST_BW_MARGIN * n, flops, cr_judge_host_peak_flops(n) / 1e9, n,
             n == 1 ? "" : "s");
}

/* The host's highest clock in MHz (roofline.h): the largest cpufreq maximum of
 * any CPU, else the fastest "cpu MHz" of /proc/cpuinfo, either with
 * S_CLOCK_ROOM above it (acpi-cpufreq reports no boost, a VM its nominal
 * clock), else S_FALLBACK_MHZ. */
static double s_host_max_mhz(void)
{
    double best = 0;
    char path[96];
    for (int cpu = 0; cpu < 4096; cpu++) { /* up to the first CPU without cpufreq */
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq",
                 cpu);
        FILE *f = fopen(path, "re");
        if (!f)
            break;
        double khz = 0;
        if (fscanf(f, "%lf", &khz) == 1 && khz > 0)
            best = fmax(best, khz / 1e3);
        fclose(f);
    }
    FILE *f = best > 0 ? NULL : fopen("/proc/cpuinfo", "re");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            const char *colon = strchr(line, ':');
            double mhz;
            if (strncmp(line, "cpu MHz", 7) == 0 && colon && sscanf(colon + 1, "%lf", &mhz) == 1)
                best = fmax(best, mhz);
        }
        fclose(f);
    }
    return best > 0 ? best * S_CLOCK_ROOM : S_FALLBACK_MHZ;
}

double cr_judge_host_peak_flops(int cores)
{
    static double mhz; /* read once: the host's clock does not change under a judge */
    if (!(mhz > 0))
        mhz = s_host_max_mhz();
    return (cores > 0 ? cores : 1) * mhz * 1e6 * CR_JUDGE_HOST_FLOPS_PER_CORE_CLK;
}

double cr_judge_gpu_floor_us(double bytes, double flops, double bw, double rate)
{
    double s = bytes > 0 && bw > 0 ? bytes / bw : 0;
    if (flops > 0 && rate > 0)
        s = fmax(s, flops / rate);
    return s * 1e6;
}

double cr_judge_gpu_peak_flops(int sms, double max_clock_mhz)
{
    return sms > 0 && max_clock_mhz > 0 ? sms * max_clock_mhz * 1e6 * CR_JUDGE_GPU_FLOPS_PER_SM_CLK
                                        : 0;
}

int cr_judge_roofline(Crucible__RewardRecord *rec, int c, double median_us, double floor_us,
                      const char *basis, const char *where)
{
    if (!(floor_us > 0) || !(median_us < floor_us))
        return 0;
    cr_judge_flag(rec, "below_roofline");
    cr_judge_fail(rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED,
                  "case %d: median %.3f us is below the roofline floor %.3f us (%s): impossible "
                  "on this %s", c, median_us, floor_us, basis, where);
    return 1;
}
