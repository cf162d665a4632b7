/* topo.h — machine topology through hwloc: cache sizes, pinning, CPU model.
 *
 * The CPU judge flushes the last-level cache before every timed sample, so it
 * needs its size; it pins the timing thread so candidate and reference run on
 * the same core; and it names the CPU in the record's device field. */
#ifndef CR_TOPO_H
#define CR_TOPO_H

#include <stddef.h>
#include <stdint.h>

/* 32 MiB: larger than the L3 slice one core sees on most servers, so a flush
 * of twice this size still evicts everything when detection fails. */
#define CR_TOPO_LLC_FALLBACK (32ull << 20)

/* Size in bytes of the largest last-level cache (the deepest cache level
 * hwloc reports; the largest instance of it). Returns 0 with *out set, or a
 * negative code when hwloc reports no cache (virtual machines often hide
 * them): *out is then CR_TOPO_LLC_FALLBACK. */
int cr_topo_llc_bytes(uint64_t *out);

/* Pins the calling thread to one CPU; cpu < 0 picks the first CPU of the
 * thread's current affinity mask (so a worker bound to a GPU's cores keeps
 * its runners there). Returns 0, -EINVAL when cpu is not in the allowed set,
 * or -errno from sched_setaffinity. */
int cr_topo_pin_self(int cpu);

/* Writes the CPU model ("AMD EPYC 7763 64-Core Processor") into buf, from
 * hwloc's CPUModel info, else /proc/cpuinfo, else the machine name from
 * uname. Always NUL-terminates when len > 0. Returns 0, or -ENOENT when only
 * the machine name was found. */
int cr_topo_cpu_model(char *buf, size_t len);

/* This host's memcpy bandwidth, in bytes read plus written per second: the
 * best of CR_TOPO_BW_ROUNDS copies of CR_TOPO_BW_BYTES on the calling thread
 * (about 0.1 s). The CPU judge's roofline floor stands on it. Returns 0, or
 * -ENOMEM. */
#define CR_TOPO_BW_BYTES (64u << 20) /* well past any last-level cache */
#define CR_TOPO_BW_ROUNDS 5          /* the best of 5: the first faults pages in */
int cr_topo_copy_bw(double *bw);

/* Binds the whole calling process (every thread, and every child it forks
 * later, which inherit the mask) to the CPUs local to the PCI device
 * pci_bus_id ("00000000:65:00.0" as NVML writes it, or "65:00.0"): those of
 * the device's first non-I/O ancestor in hwloc's topology, within the CPUs
 * this process may use. Writes what it bound to ("CPUs 0-15 (NUMA node 0)")
 * into desc. Returns 0; -ENODEV when hwloc does not know the device (or its
 * ancestor has no allowed CPU), -EINVAL on a malformed bus id, -ENOENT when
 * the topology cannot be loaded, or -errno when binding fails: the affinity
 * is then unchanged. Changes no device setting. */
int cr_topo_bind_to_pci(const char *pci_bus_id, char *desc, size_t len);

#endif
