/* fake_nvml.c — a stand-in libnvidia-ml.so.1 for tests.
 *
 * Implements the NVML entry points common/nvml.c uses, for one plausible
 * device (an H200-like GPU), so the clock-lock paths can be tested on any
 * machine and never against a real GPU. Every call is appended, one line
 * each ("nvmlDeviceSetGpuLockedClocks 1755 1755 -> 0"), to the file named by
 * $CR_FAKE_NVML_LOG, so a test can check which calls were made and in which
 * order, across processes.
 *
 * Knobs, read at each call:
 *   CR_FAKE_NVML_FAIL      comma list of function names that return
 *                          NVML_ERROR_NO_PERMISSION (4), as for a non-root caller
 *   CR_FAKE_NVML_REASONS   clocks-event reasons to report (strtoull, any base)
 *   CR_FAKE_NVML_COUNT     GPUs it has, 1 (default) to 8; GPU i sits on bus
 *                          00000000:<0x65 + i>:00.0 with a uuid ending in i + 1
 *   CR_FAKE_NVML_NVLINK    pairs joined by NVLink, "0-1,2-3" (default: none), as
 *                          nvmlDeviceGetP2PStatus(NVML_P2P_CAPS_INDEX_NVLINK) says
 * A bus id whose domain is ffff is "not found" (6). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE_SUCCESS 0
#define FAKE_UNINITIALIZED 1
#define FAKE_INVALID_ARGUMENT 2
#define FAKE_NO_PERMISSION 4
#define FAKE_NOT_FOUND 6
#define FAKE_INSUFFICIENT_SIZE 7

/* H200 SXM figures: 1980 MHz top SM clock; 1755 MHz stands in for the
 * default applications clock. */
#define FAKE_MAX_MHZ 1980u
#define FAKE_BASE_MHZ 1755u

#define FAKE_MAX_DEVS 8

typedef struct {
    char bus[64];      /* bus id the handle was asked for */
    unsigned locked;   /* MHz, 0 = not locked */
} fake_dev_t;

static fake_dev_t s_devs[FAKE_MAX_DEVS];

static unsigned s_count(void)
{
    const char *v = getenv("CR_FAKE_NVML_COUNT");
    long n = v ? strtol(v, NULL, 10) : 1;
    return n < 1 ? 1u : n > FAKE_MAX_DEVS ? (unsigned)FAKE_MAX_DEVS : (unsigned)n;
}

/* The index of a handle, or -1. */
static int s_index(const void *dev)
{
    for (int i = 0; i < FAKE_MAX_DEVS; i++)
        if (dev == (const void *)&s_devs[i])
            return i;
    return -1;
}

/* 1 when CR_FAKE_NVML_NVLINK lists the pair a-b (either way round). */
static int s_nvlinked(int a, int b)
{
    const char *p = getenv("CR_FAKE_NVML_NVLINK");
    while (p && *p) {
        int x = -1, y = -1;
        if (sscanf(p, "%d-%d", &x, &y) == 2 && ((x == a && y == b) || (x == b && y == a)))
            return 1;
        p = strchr(p, ',');
        p = p ? p + 1 : NULL;
    }
    return 0;
}
static int s_inits;    /* nvmlInit_v2 calls not yet shut down */

/* Marker a test can dlsym to be sure it loaded the fake, not a driver. */
int cr_fake_nvml = 1;

static void s_log(const char *fn, int rc, const char *fmt, ...)
{
    const char *path = getenv("CR_FAKE_NVML_LOG");
    if (path == NULL || path[0] == '\0')
        return;
    char line[512];
    int n = snprintf(line, sizeof line, "%s", fn);
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        line[n++] = ' ';
        n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
        va_end(ap);
    }
    n += snprintf(line + n, sizeof line - (size_t)n, " -> %d\n", rc);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    ssize_t w = write(fd, line, (size_t)n); /* O_APPEND + one write: lines never interleave */
    (void)w;
    close(fd);
}

static int s_fails(const char *fn)
{
    const char *list = getenv("CR_FAKE_NVML_FAIL");
    size_t len = strlen(fn);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t l = end ? (size_t)(end - p) : strlen(p);
        if (l == len && strncmp(p, fn, len) == 0)
            return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

/* The common prologue: injected failure, then "initialised?" and a handle check. */
static int s_check(const char *fn, const void *dev)
{
    if (s_fails(fn))
        return FAKE_NO_PERMISSION;
    if (s_inits <= 0)
        return FAKE_UNINITIALIZED;
    if (dev != NULL && s_index(dev) < 0)
        return FAKE_INVALID_ARGUMENT;
    return FAKE_SUCCESS;
}

int nvmlInit_v2(void)
{
    int rc = s_fails("nvmlInit_v2") ? FAKE_NO_PERMISSION : FAKE_SUCCESS;
    if (rc == FAKE_SUCCESS)
        s_inits++;
    s_log("nvmlInit_v2", rc, NULL);
    return rc;
}

int nvmlShutdown(void)
{
    int rc = s_inits > 0 ? FAKE_SUCCESS : FAKE_UNINITIALIZED;
    if (rc == FAKE_SUCCESS)
        s_inits--;
    s_log("nvmlShutdown", rc, NULL);
    return rc;
}

const char *nvmlErrorString(int rc)
{
    switch (rc) {
    case FAKE_SUCCESS: return "Success";
    case FAKE_UNINITIALIZED: return "Uninitialized";
    case FAKE_INVALID_ARGUMENT: return "Invalid Argument";
    case FAKE_NO_PERMISSION: return "Insufficient Permissions";
    case FAKE_NOT_FOUND: return "Not Found";
    case FAKE_INSUFFICIENT_SIZE: return "Insufficient Size";
    default: return "Unknown Error";
    }
}

int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev)
{
    int rc = s_check("nvmlDeviceGetHandleByPciBusId_v2", NULL);
    unsigned dom, b, d, f;
    if (rc == FAKE_SUCCESS && (bus == NULL || dev == NULL ||
                               sscanf(bus, "%x:%x:%x.%x", &dom, &b, &d, &f) != 4))
        rc = FAKE_INVALID_ARGUMENT;
    if (rc == FAKE_SUCCESS && dom == 0xffff)
        rc = FAKE_NOT_FOUND;
    if (rc == FAKE_SUCCESS) {
        int i = b >= 0x65 && b < 0x65 + s_count() ? (int)(b - 0x65) : 0;
        snprintf(s_devs[i].bus, sizeof s_devs[i].bus, "%s", bus);
        *dev = &s_devs[i];
    }
    s_log("nvmlDeviceGetHandleByPciBusId_v2", rc, "%s", bus ? bus : "(null)");
    return rc;
}

/* One device, or CR_FAKE_NVML_COUNT. */
int nvmlDeviceGetCount_v2(unsigned *count)
{
    int rc = s_check("nvmlDeviceGetCount_v2", NULL);
    if (rc == FAKE_SUCCESS && count == NULL)
        rc = FAKE_INVALID_ARGUMENT;
    if (rc == FAKE_SUCCESS)
        *count = s_count();
    s_log("nvmlDeviceGetCount_v2", rc, NULL);
    return rc;
}

/* Index 0 on bus 00000000:65:00.0 (an H200 slot), index i on 0x65 + i. */
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **dev)
{
    int rc = s_check("nvmlDeviceGetHandleByIndex_v2", NULL);
    if (rc == FAKE_SUCCESS && dev == NULL)
        rc = FAKE_INVALID_ARGUMENT;
    if (rc == FAKE_SUCCESS && index >= s_count())
        rc = FAKE_NOT_FOUND;
    if (rc == FAKE_SUCCESS) {
        snprintf(s_devs[index].bus, sizeof s_devs[index].bus, "00000000:%02x:00.0",
                 0x65 + index);
        *dev = &s_devs[index];
    }
    s_log("nvmlDeviceGetHandleByIndex_v2", rc, "%u", index);
    return rc;
}

/* nvmlPciInfo_t v3: busIdLegacy[16], domain, bus, device, pciDeviceId,
 * pciSubSystemId, busId[32]. */
int nvmlDeviceGetPciInfo_v3(void *dev, void *out)
{
    int rc = s_check("nvmlDeviceGetPciInfo_v3", dev);
    if (rc == FAKE_SUCCESS && out == NULL)
        rc = FAKE_INVALID_ARGUMENT;
    if (rc == FAKE_SUCCESS) {
        struct {
            char legacy[16];
            unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
            char bus_id[32];
        } *p = out;
        memset(p, 0, sizeof *p);
        const fake_dev_t *d = &s_devs[s_index(dev)];
        snprintf(p->bus_id, sizeof p->bus_id, "%.31s", d->bus);
        snprintf(p->legacy, sizeof p->legacy, "%.15s", d->bus + 4);
        p->bus = 0x65 + (unsigned)s_index(dev);
    }
    s_log("nvmlDeviceGetPciInfo_v3", rc, "");
    return rc;
}

int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz)
{
    int rc = s_check("nvmlDeviceGetClockInfo", dev);
    if (rc == FAKE_SUCCESS)
        *mhz = type == 2 ? 3201u : (s_devs[s_index(dev)].locked ? s_devs[s_index(dev)].locked : FAKE_MAX_MHZ);
    s_log("nvmlDeviceGetClockInfo", rc, "%d", type);
    return rc;
}

int nvmlDeviceGetMaxClockInfo(void *dev, int type, unsigned *mhz)
{
    int rc = s_check("nvmlDeviceGetMaxClockInfo", dev);
    if (rc == FAKE_SUCCESS)
        *mhz = type == 2 ? 3201u : FAKE_MAX_MHZ;
    s_log("nvmlDeviceGetMaxClockInfo", rc, "%d", type);
    return rc;
}

int nvmlDeviceGetDefaultApplicationsClock(void *dev, int type, unsigned *mhz)
{
    int rc = s_check("nvmlDeviceGetDefaultApplicationsClock", dev);
    if (rc == FAKE_SUCCESS)
        *mhz = type == 2 ? 3201u : FAKE_BASE_MHZ;
    s_log("nvmlDeviceGetDefaultApplicationsClock", rc, "%d", type);
    return rc;
}

static int s_reasons(const char *fn, void *dev, unsigned long long *r)
{
    int rc = s_check(fn, dev);
    if (rc == FAKE_SUCCESS) {
        const char *v = getenv("CR_FAKE_NVML_REASONS");
        *r = v ? strtoull(v, NULL, 0) : 0;
    }
    s_log(fn, rc, NULL);
    return rc;
}

int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *r)
{
    return s_reasons("nvmlDeviceGetCurrentClocksEventReasons", dev, r);
}

int nvmlDeviceGetCurrentClocksThrottleReasons(void *dev, unsigned long long *r)
{
    return s_reasons("nvmlDeviceGetCurrentClocksThrottleReasons", dev, r);
}

static int s_string(const char *fn, void *dev, char *buf, unsigned len, const char *value)
{
    int rc = s_check(fn, dev);
    if (rc == FAKE_SUCCESS && (buf == NULL || len <= strlen(value)))
        rc = FAKE_INSUFFICIENT_SIZE;
    if (rc == FAKE_SUCCESS)
        memcpy(buf, value, strlen(value) + 1);
    s_log(fn, rc, "%u", len);
    return rc;
}

int nvmlDeviceGetName(void *dev, char *buf, unsigned len)
{
    return s_string("nvmlDeviceGetName", dev, buf, len, "NVIDIA H200 (crucible fake)");
}

int nvmlDeviceGetUUID(void *dev, char *buf, unsigned len)
{
    char uuid[64];
    snprintf(uuid, sizeof uuid, "GPU-00000000-fake-4e56-4d4c-%012d", s_index(dev) + 1);
    return s_string("nvmlDeviceGetUUID", dev, buf, len, uuid);
}

/* nvmlGpuP2PCapsIndex_t NVML_P2P_CAPS_INDEX_NVLINK = 2; nvmlGpuP2PStatus_t OK = 0,
 * NOT_SUPPORTED = 4 (nvml.h) */
int nvmlDeviceGetP2PStatus(void *a, void *b, int caps, int *status)
{
    int rc = s_check("nvmlDeviceGetP2PStatus", a);
    if (rc == FAKE_SUCCESS && (s_index(b) < 0 || status == NULL))
        rc = FAKE_INVALID_ARGUMENT;
    if (rc == FAKE_SUCCESS)
        *status = caps == 2 && s_nvlinked(s_index(a), s_index(b)) ? 0 : 4;
    s_log("nvmlDeviceGetP2PStatus", rc, "%d %d %d", s_index(a), s_index(b), caps);
    return rc;
}

int nvmlDeviceGetCudaComputeCapability(void *dev, int *major, int *minor)
{
    int rc = s_check("nvmlDeviceGetCudaComputeCapability", dev);
    if (rc == FAKE_SUCCESS) {
        *major = 9;
        *minor = 0;
    }
    s_log("nvmlDeviceGetCudaComputeCapability", rc, NULL);
    return rc;
}

int nvmlDeviceSetGpuLockedClocks(void *dev, unsigned lo, unsigned hi)
{
    int rc = s_check("nvmlDeviceSetGpuLockedClocks", dev);
    if (rc == FAKE_SUCCESS && (lo > hi || hi > FAKE_MAX_MHZ || lo == 0))
        rc = FAKE_INVALID_ARGUMENT;
    if (rc == FAKE_SUCCESS)
        s_devs[s_index(dev)].locked = hi;
    s_log("nvmlDeviceSetGpuLockedClocks", rc, "%u %u", lo, hi);
    return rc;
}

int nvmlDeviceResetGpuLockedClocks(void *dev)
{
    int rc = s_check("nvmlDeviceResetGpuLockedClocks", dev);
    if (rc == FAKE_SUCCESS)
        s_devs[s_index(dev)].locked = 0;
    s_log("nvmlDeviceResetGpuLockedClocks", rc, NULL);
    return rc;
}
