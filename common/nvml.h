/* nvml.h — GPU clocks and identity through NVML, loaded at run time.
 *
 * libnvidia-ml.so.1 is opened with dlopen, so nothing links against the
 * driver and every program still starts on a machine without one. The
 * device is found by its PCI bus id ("0000:65:00.0", as cudaDeviceGetPCIBusId
 * and hwloc write it), never by index, because CUDA and NVML may number
 * devices differently.
 *
 * Every function returns 0 or a negative errno and never asserts: NVML codes
 * map to -ENOENT (no library, no symbol), -ENODEV (no such device), -EPERM
 * (not root), -ENOTSUP (not supported on this GPU), -EIO (anything else).
 * The NVML message of the last failure is kept in the handle
 * (cr_nvml_last_error).
 *
 * Clock locking changes a setting of a shared machine, so it is opt-in
 * (clock policy "lock:base" / "lock:<MHz>") and every lock is undone: the
 * judge resets on each of its exit paths, the worker resets at its start
 * (worker.c) and after a runner that ended without a report
 * (cr_nvml_reset_clocks_at, supervisor.c). */
#ifndef CR_NVML_H
#define CR_NVML_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The driver's library; a path with a '/' loads exactly that file (tests
 * point it at tests/fake_nvml's libnvidia-ml.so.1). */
#define CR_NVML_LIBRARY "libnvidia-ml.so.1"

/* Throttle ("clocks event") reason bits, values from nvml.h. */
#define CR_NVML_REASON_GPU_IDLE        0x1ull
#define CR_NVML_REASON_APP_CLOCKS      0x2ull
#define CR_NVML_REASON_SW_POWER_CAP    0x4ull
#define CR_NVML_REASON_HW_SLOWDOWN     0x8ull
#define CR_NVML_REASON_SYNC_BOOST      0x10ull
#define CR_NVML_REASON_SW_THERMAL      0x20ull
#define CR_NVML_REASON_HW_THERMAL      0x40ull
#define CR_NVML_REASON_HW_POWER_BRAKE  0x80ull
#define CR_NVML_REASON_DISPLAY_CLOCKS  0x100ull
/* The reasons that mean the SM clock was pulled below what was asked for
 * (power, thermal, hardware slowdown). Idle, application-clock and
 * sync-boost bits are informational and do not spoil a sample. */
#define CR_NVML_THROTTLE_MASK                                                     \
    (CR_NVML_REASON_SW_POWER_CAP | CR_NVML_REASON_HW_SLOWDOWN |                   \
     CR_NVML_REASON_SW_THERMAL | CR_NVML_REASON_HW_THERMAL |                      \
     CR_NVML_REASON_HW_POWER_BRAKE)

typedef struct cr_nvml cr_nvml_t;

typedef struct {
    char name[96];      /* "NVIDIA H200" */
    char uuid[96];      /* "GPU-xxxxxxxx-..." */
    int cc_major;       /* compute capability, e.g. 9 */
    int cc_minor;       /* e.g. 0 */
    unsigned max_sm_mhz; /* MHz, highest SM clock; 0 when unknown */
    unsigned base_mhz;  /* MHz, default applications (graphics) clock; 0 when unknown */
    uint64_t mem_total; /* bytes of device memory; 0 when unknown */
    uint64_t mem_free;  /* bytes free when asked; 0 when unknown */
} cr_nvml_info_t;

/* A parsed clock policy. */
typedef struct {
    int lock;           /* 0 = observe, 1 = lock */
    unsigned mhz;       /* MHz to lock at; 0 = base */
} cr_clock_policy_t;

/* Parses "observe" (also "" and NULL), "lock:base" or "lock:<MHz>" with MHz
 * in 1..10000. Returns 0, or CR_E_USAGE for anything else. */
int cr_clock_policy_parse(const char *s, cr_clock_policy_t *out);

/* Opens NVML from lib (NULL = CR_NVML_LIBRARY), initialises it and finds the
 * device at pci_bus_id. Returns 0 and *out (caller closes), or a negative
 * errno with *out NULL and, when err is given, a message in err. */
int cr_nvml_open(const char *lib, const char *pci_bus_id, cr_nvml_t **out, char *err,
                 size_t errlen);

/* Shuts NVML down and unloads it. Does NOT reset clocks: a caller that
 * locked calls cr_nvml_reset first. Safe on NULL; nulls *self_p. */
void cr_nvml_close(cr_nvml_t **self_p);

/* Current SM clock in MHz. */
int cr_nvml_sm_clock(cr_nvml_t *n, unsigned *mhz);

/* Current throttle (clocks event) reasons, the raw NVML bit mask. Uses
 * nvmlDeviceGetCurrentClocksEventReasons and falls back to the older
 * nvmlDeviceGetCurrentClocksThrottleReasons on drivers before R535. */
int cr_nvml_throttle_reasons(cr_nvml_t *n, uint64_t *reasons);

/* Name, uuid, compute capability and clocks. Fields NVML cannot give are
 * left empty / 0; returns an error only when the name cannot be read. */
int cr_nvml_info(cr_nvml_t *n, cr_nvml_info_t *info);

/* Locks the GPU clock (min = max) at mhz, or at the base clock when mhz is
 * 0: the default applications clock, else the highest SM clock. Stores the
 * clock locked at in *locked_mhz (may be NULL). Needs root: -EPERM otherwise. */
int cr_nvml_lock(cr_nvml_t *n, unsigned mhz, unsigned *locked_mhz);

/* Opens NVML and finds the device by its NVML index (the worker's --gpu).
 * Same contract as cr_nvml_open. */
int cr_nvml_open_index(const char *lib, unsigned index, cr_nvml_t **out, char *err,
                       size_t errlen);

/* Opens NVML from lib (NULL = CR_NVML_LIBRARY), stores the number of GPUs
 * it sees in *n (nvmlDeviceGetCount_v2) and closes it again: for
 * `crucible worker --gpus all`. Returns 0, or a negative errno with *n = 0
 * and, when err is given, a message in err. */
int cr_nvml_count(const char *lib, unsigned *n, char *err, size_t errlen);

/* Writes the device's PCI bus id ("00000000:65:00.0") into buf. 0 or negative. */
int cr_nvml_pci_bus_id(cr_nvml_t *n, char *buf, size_t len);

/* Undoes any clock lock (nvmlDeviceResetGpuLockedClocks). */
int cr_nvml_reset(cr_nvml_t *n);

/* Message of the last failed NVML call on this handle ("" when none). */
const char *cr_nvml_last_error(const cr_nvml_t *n);

/* Opens NVML from lib (NULL = CR_NVML_LIBRARY), resets the locked clocks of
 * the GPU at NVML index `index` and closes it again: for the supervisor
 * after a runner under a lock policy ended without a report (a killed
 * runner cannot undo its own lock). Returns 0 or a negative errno, with the
 * reason in err when given; -ENOENT when there is no NVML (no GPU driver:
 * nothing to reset). */
int cr_nvml_reset_clocks_at(const char *lib, unsigned index, char *err, size_t errlen);

/* NVLink between the GPUs at NVML indices idx[0..n) (n at most 64), pair by
 * pair: joined[i * n + j] = 1 when nvmlDeviceGetP2PStatus says the two can
 * reach each other over NVLink (NVML_P2P_CAPS_INDEX_NVLINK), 1 on the
 * diagonal, else 0. For the worker's GPU groups (docs/multigpu.md). Opens
 * NVML from lib (NULL = CR_NVML_LIBRARY) and closes it again. Returns 0, or
 * a negative errno with the reason in err (when given) and joined 0 off the
 * diagonal: -ENOENT without NVML or its P2P call, -ENODEV for an index it
 * does not know. */
int cr_nvml_nvlink_matrix(const char *lib, const unsigned *idx, int n, unsigned char *joined,
                          char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
