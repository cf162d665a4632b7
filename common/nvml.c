/* nvml.c — NVML through dlopen; see nvml.h.
 *
 * The NVML types are re-declared here (an opaque device pointer, int return
 * codes, unsigned clocks) so the build needs no nvml.h: the ABI of these
 * entry points has been stable since the _v2 names of R319. */
#include "nvml.h"

#include "error.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nv_ret_t;        /* nvmlReturn_t */
typedef void *nv_dev_t;      /* nvmlDevice_t */

/* nvmlReturn_t values we tell apart (nvml.h). */
#define NV_SUCCESS 0
#define NV_ERROR_NOT_SUPPORTED 3
#define NV_ERROR_NO_PERMISSION 4
#define NV_ERROR_NOT_FOUND 6
#define NV_ERROR_FUNCTION_NOT_FOUND 13
/* nvmlGpuP2PCapsIndex_t NVML_P2P_CAPS_INDEX_NVLINK, nvmlGpuP2PStatus_t NVML_P2P_STATUS_OK */
#define NV_P2P_CAPS_NVLINK 2
#define NV_P2P_STATUS_OK 0
/* nvmlClockType_t */
#define NV_CLOCK_GRAPHICS 0
#define NV_CLOCK_SM 1

/* Strings NVML writes: its own buffer-size constants are 96 (name, uuid). */
#define NV_STR 96

struct cr_nvml {
    void *lib;                /* dlopen handle; owned */
    nv_dev_t dev;             /* NVML's handle of our GPU */
    char last_error[160];     /* message of the last failed call */
    nv_ret_t (*init)(void);
    nv_ret_t (*shutdown)(void);
    const char *(*error_string)(nv_ret_t);
    nv_ret_t (*by_bus)(const char *, nv_dev_t *);
    nv_ret_t (*by_index)(unsigned, nv_dev_t *);                  /* may be NULL */
    nv_ret_t (*pci_info)(nv_dev_t, void *);                        /* v3; may be NULL */
    nv_ret_t (*clock_info)(nv_dev_t, int, unsigned *);
    nv_ret_t (*max_clock)(nv_dev_t, int, unsigned *);
    nv_ret_t (*default_app_clock)(nv_dev_t, int, unsigned *);
    nv_ret_t (*event_reasons)(nv_dev_t, unsigned long long *);    /* R535+; may be NULL */
    nv_ret_t (*throttle_reasons)(nv_dev_t, unsigned long long *); /* older name; may be NULL */
    nv_ret_t (*get_name)(nv_dev_t, char *, unsigned);
    nv_ret_t (*get_uuid)(nv_dev_t, char *, unsigned);
    nv_ret_t (*get_cc)(nv_dev_t, int *, int *);
    nv_ret_t (*mem_info)(nv_dev_t, unsigned long long *); /* nvmlMemory_t: 3 x u64 */
    nv_ret_t (*set_locked)(nv_dev_t, unsigned, unsigned);
    nv_ret_t (*reset_locked)(nv_dev_t);
};

int cr_clock_policy_parse(const char *s, cr_clock_policy_t *out)
{
    out->lock = 0;
    out->mhz = 0;
    if (s == NULL || s[0] == '\0' || strcmp(s, "observe") == 0)
        return 0;
    if (strncmp(s, "lock:", 5) != 0)
        return CR_E_USAGE;
    const char *v = s + 5;
    if (strcmp(v, "base") == 0) {
        out->lock = 1;
        return 0;
    }
    char *end = NULL;
    errno = 0;
    long mhz = strtol(v, &end, 10);
    /* 10 GHz: far above any GPU clock, so only typos are refused. */
    if (errno != 0 || end == v || *end != '\0' || mhz < 1 || mhz > 10000)
        return CR_E_USAGE;
    out->lock = 1;
    out->mhz = (unsigned)mhz;
    return 0;
}

/* Records NVML's message for rc and maps it to a negative errno. */
static int s_fail(cr_nvml_t *n, const char *what, nv_ret_t rc)
{
    const char *msg = n->error_string ? n->error_string(rc) : NULL;
    snprintf(n->last_error, sizeof n->last_error, "%s: %s (%d)", what, msg ? msg : "error",
             rc);
    switch (rc) {
    case NV_ERROR_NOT_SUPPORTED:
        return -ENOTSUP;
    case NV_ERROR_NO_PERMISSION:
        return -EPERM;
    case NV_ERROR_NOT_FOUND:
        return -ENODEV;
    case NV_ERROR_FUNCTION_NOT_FOUND:
        return -ENOENT;
    default:
        return -EIO;
    }
}

static void *s_sym(void *lib, const char *name)
{
    return dlsym(lib, name);
}

/* Opens the library and finds the device by bus id or, when pci_bus_id is
 * NULL, by NVML index. */
static int s_open(const char *lib, const char *pci_bus_id, unsigned index, cr_nvml_t **out,
                  char *err, size_t errlen)
{
    char dummy[8];
    if (err == NULL) {
        err = dummy;
        errlen = sizeof dummy;
    }
    *out = NULL;
    err[0] = '\0';
    cr_nvml_t *n = calloc(1, sizeof *n);
    if (n == NULL)
        return -ENOMEM;
    int rc = -ENOENT;
    n->lib = dlopen(lib ? lib : CR_NVML_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (n->lib == NULL) {
        const char *e = dlerror();
        snprintf(err, errlen, "nvml: %s", e ? e : "cannot load library");
        goto fail;
    }
    *(void **)&n->init = s_sym(n->lib, "nvmlInit_v2");
    *(void **)&n->shutdown = s_sym(n->lib, "nvmlShutdown");
    *(void **)&n->error_string = s_sym(n->lib, "nvmlErrorString");
    *(void **)&n->by_bus = s_sym(n->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&n->by_index = s_sym(n->lib, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&n->pci_info = s_sym(n->lib, "nvmlDeviceGetPciInfo_v3");
    *(void **)&n->clock_info = s_sym(n->lib, "nvmlDeviceGetClockInfo");
    *(void **)&n->max_clock = s_sym(n->lib, "nvmlDeviceGetMaxClockInfo");
    *(void **)&n->default_app_clock = s_sym(n->lib, "nvmlDeviceGetDefaultApplicationsClock");
    *(void **)&n->event_reasons = s_sym(n->lib, "nvmlDeviceGetCurrentClocksEventReasons");
    *(void **)&n->throttle_reasons = s_sym(n->lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    *(void **)&n->get_name = s_sym(n->lib, "nvmlDeviceGetName");
    *(void **)&n->get_uuid = s_sym(n->lib, "nvmlDeviceGetUUID");
    *(void **)&n->get_cc = s_sym(n->lib, "nvmlDeviceGetCudaComputeCapability");
    *(void **)&n->mem_info = s_sym(n->lib, "nvmlDeviceGetMemoryInfo");
    *(void **)&n->set_locked = s_sym(n->lib, "nvmlDeviceSetGpuLockedClocks");
    *(void **)&n->reset_locked = s_sym(n->lib, "nvmlDeviceResetGpuLockedClocks");
    /* The few without which nothing works; the rest are checked per call. */
    if (!n->init || !n->shutdown || !n->by_bus || !n->clock_info) {
        snprintf(err, errlen, "nvml: %s lacks nvmlInit_v2/nvmlDeviceGetHandleByPciBusId_v2",
                 lib ? lib : CR_NVML_LIBRARY);
        goto fail;
    }
    nv_ret_t r = n->init();
    if (r != NV_SUCCESS) {
        rc = s_fail(n, "nvmlInit_v2", r);
        snprintf(err, errlen, "nvml: %s", n->last_error);
        goto fail_lib;
    }
    if (pci_bus_id) {
        r = n->by_bus(pci_bus_id, &n->dev);
        if (r != NV_SUCCESS) {
            rc = s_fail(n, "nvmlDeviceGetHandleByPciBusId_v2", r);
            snprintf(err, errlen, "nvml: device %s: %s", pci_bus_id, n->last_error);
            goto fail_init;
        }
    } else {
        r = n->by_index ? n->by_index(index, &n->dev) : NV_ERROR_FUNCTION_NOT_FOUND;
        if (r != NV_SUCCESS) {
            rc = s_fail(n, "nvmlDeviceGetHandleByIndex_v2", r);
            snprintf(err, errlen, "nvml: device index %u: %s", index, n->last_error);
            goto fail_init;
        }
    }
    *out = n;
    return 0;

fail_init:
    n->shutdown();
fail_lib:
fail:
    if (n->lib)
        dlclose(n->lib);
    free(n);
    return rc;
}

int cr_nvml_open(const char *lib, const char *pci_bus_id, cr_nvml_t **out, char *err,
                 size_t errlen)
{
    if (pci_bus_id == NULL || pci_bus_id[0] == '\0') {
        *out = NULL;
        if (err)
            snprintf(err, errlen, "nvml: no PCI bus id given");
        return -EINVAL;
    }
    return s_open(lib, pci_bus_id, 0, out, err, errlen);
}

int cr_nvml_open_index(const char *lib, unsigned index, cr_nvml_t **out, char *err,
                       size_t errlen)
{
    return s_open(lib, NULL, index, out, err, errlen);
}

int cr_nvml_count(const char *lib, unsigned *n, char *err, size_t errlen)
{
    *n = 0;
    if (err && errlen)
        err[0] = '\0';
    const char *name = lib ? lib : CR_NVML_LIBRARY;
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        if (err)
            snprintf(err, errlen, "nvml: %s", e ? e : "cannot load library");
        return -ENOENT;
    }
    /* a handle of our own, for s_fail's message mapping */
    cr_nvml_t t = {.lib = h};
    nv_ret_t (*count)(unsigned *) = NULL;
    *(void **)&t.init = s_sym(h, "nvmlInit_v2");
    *(void **)&t.shutdown = s_sym(h, "nvmlShutdown");
    *(void **)&t.error_string = s_sym(h, "nvmlErrorString");
    *(void **)&count = s_sym(h, "nvmlDeviceGetCount_v2");
    int rc = -ENOENT;
    if (!t.init || !t.shutdown || !count) {
        if (err)
            snprintf(err, errlen, "nvml: %s lacks nvmlInit_v2/nvmlDeviceGetCount_v2", name);
        goto out;
    }
    nv_ret_t r = t.init();
    if (r != NV_SUCCESS) {
        rc = s_fail(&t, "nvmlInit_v2", r);
        goto out_msg;
    }
    unsigned c = 0;
    r = count(&c);
    t.shutdown();
    if (r != NV_SUCCESS) {
        rc = s_fail(&t, "nvmlDeviceGetCount_v2", r);
        goto out_msg;
    }
    *n = c;
    rc = 0;
    goto out;
out_msg:
    if (err)
        snprintf(err, errlen, "nvml: %s", t.last_error);
out:
    dlclose(h);
    return rc;
}

int cr_nvml_pci_bus_id(cr_nvml_t *n, char *buf, size_t len)
{
    /* nvmlPciInfo_t (v3): busIdLegacy[16], five unsigned, busId[32] */
    struct {
        char legacy[16];
        unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
        char bus_id[32];
    } info;
    memset(&info, 0, sizeof info);
    if (!n->pci_info) {
        snprintf(n->last_error, sizeof n->last_error, "no nvmlDeviceGetPciInfo_v3");
        return -ENOENT;
    }
    nv_ret_t r = n->pci_info(n->dev, &info);
    if (r != NV_SUCCESS)
        return s_fail(n, "nvmlDeviceGetPciInfo_v3", r);
    info.bus_id[sizeof info.bus_id - 1] = '\0';
    snprintf(buf, len, "%s", info.bus_id);
    return 0;
}

void cr_nvml_close(cr_nvml_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cr_nvml_t *n = *self_p;
    n->shutdown();
    dlclose(n->lib);
    free(n);
    *self_p = NULL;
}

int cr_nvml_sm_clock(cr_nvml_t *n, unsigned *mhz)
{
    nv_ret_t r = n->clock_info(n->dev, NV_CLOCK_SM, mhz);
    return r == NV_SUCCESS ? 0 : s_fail(n, "nvmlDeviceGetClockInfo", r);
}

int cr_nvml_throttle_reasons(cr_nvml_t *n, uint64_t *reasons)
{
    unsigned long long v = 0;
    nv_ret_t r;
    const char *what;
    if (n->event_reasons) {
        r = n->event_reasons(n->dev, &v);
        what = "nvmlDeviceGetCurrentClocksEventReasons";
    } else if (n->throttle_reasons) {
        r = n->throttle_reasons(n->dev, &v);
        what = "nvmlDeviceGetCurrentClocksThrottleReasons";
    } else {
        snprintf(n->last_error, sizeof n->last_error, "no clocks-event-reasons function");
        return -ENOENT;
    }
    if (r != NV_SUCCESS)
        return s_fail(n, what, r);
    *reasons = v;
    return 0;
}

int cr_nvml_info(cr_nvml_t *n, cr_nvml_info_t *info)
{
    memset(info, 0, sizeof *info);
    if (!n->get_name)
        return -ENOENT;
    nv_ret_t r = n->get_name(n->dev, info->name, sizeof info->name);
    if (r != NV_SUCCESS)
        return s_fail(n, "nvmlDeviceGetName", r);
    info->name[sizeof info->name - 1] = '\0';
    if (n->get_uuid && n->get_uuid(n->dev, info->uuid, sizeof info->uuid) != NV_SUCCESS)
        info->uuid[0] = '\0';
    info->uuid[sizeof info->uuid - 1] = '\0';
    if (n->get_cc && n->get_cc(n->dev, &info->cc_major, &info->cc_minor) != NV_SUCCESS)
        info->cc_major = info->cc_minor = 0;
    if (n->max_clock && n->max_clock(n->dev, NV_CLOCK_SM, &info->max_sm_mhz) != NV_SUCCESS)
        info->max_sm_mhz = 0;
    if (n->default_app_clock &&
        n->default_app_clock(n->dev, NV_CLOCK_GRAPHICS, &info->base_mhz) != NV_SUCCESS)
        info->base_mhz = 0;
    unsigned long long mem[3] = {0, 0, 0}; /* nvmlMemory_t: total, free, used */
    if (n->mem_info && n->mem_info(n->dev, mem) == NV_SUCCESS) {
        info->mem_total = mem[0];
        info->mem_free = mem[1];
    }
    return 0;
}

int cr_nvml_lock(cr_nvml_t *n, unsigned mhz, unsigned *locked_mhz)
{
    if (!n->set_locked) {
        snprintf(n->last_error, sizeof n->last_error, "no nvmlDeviceSetGpuLockedClocks");
        return -ENOENT;
    }
    if (mhz == 0) {
        nv_ret_t r = -1;
        if (n->default_app_clock)
            r = n->default_app_clock(n->dev, NV_CLOCK_GRAPHICS, &mhz);
        if (r != NV_SUCCESS || mhz == 0) {
            r = n->max_clock ? n->max_clock(n->dev, NV_CLOCK_GRAPHICS, &mhz) : -1;
            if (r != NV_SUCCESS || mhz == 0)
                return s_fail(n, "no base clock (nvmlDeviceGetDefaultApplicationsClock, "
                                 "nvmlDeviceGetMaxClockInfo)", r);
        }
    }
    nv_ret_t r = n->set_locked(n->dev, mhz, mhz);
    if (r != NV_SUCCESS)
        return s_fail(n, "nvmlDeviceSetGpuLockedClocks", r);
    if (locked_mhz)
        *locked_mhz = mhz;
    return 0;
}

int cr_nvml_reset(cr_nvml_t *n)
{
    if (!n->reset_locked) {
        snprintf(n->last_error, sizeof n->last_error, "no nvmlDeviceResetGpuLockedClocks");
        return -ENOENT;
    }
    nv_ret_t r = n->reset_locked(n->dev);
    return r == NV_SUCCESS ? 0 : s_fail(n, "nvmlDeviceResetGpuLockedClocks", r);
}

const char *cr_nvml_last_error(const cr_nvml_t *n)
{
    return n ? n->last_error : "";
}

int cr_nvml_reset_clocks_at(const char *lib, unsigned index, char *err, size_t errlen)
{
    cr_nvml_t *n = NULL;
    int rc = cr_nvml_open_index(lib, index, &n, err, errlen);
    if (rc != 0)
        return rc;
    rc = cr_nvml_reset(n);
    if (rc != 0 && err)
        snprintf(err, errlen, "%s", cr_nvml_last_error(n));
    cr_nvml_close(&n);
    return rc;
}

int cr_nvml_nvlink_matrix(const char *lib, const unsigned *idx, int n, unsigned char *joined,
                          char *err, size_t errlen)
{
    char dummy[8];
    if (!err) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (n < 1 || n > 64)
        return -EINVAL;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            joined[i * n + j] = i == j;
    if (n == 1)
        return 0;
    cr_nvml_t *h = NULL;
    int rc = s_open(lib, NULL, idx[0], &h, err, errlen);
    if (rc != 0)
        return rc;
    nv_ret_t (*p2p)(nv_dev_t, nv_dev_t, int, int *) = NULL;
    *(void **)&p2p = s_sym(h->lib, "nvmlDeviceGetP2PStatus");
    nv_dev_t dev[64];
    if (!p2p || !h->by_index) {
        snprintf(err, errlen, "nvml: no nvmlDeviceGetP2PStatus in this driver");
        rc = -ENOENT;
        goto out;
    }
    for (int i = 0; i < n; i++) {
        nv_ret_t r = h->by_index(idx[i], &dev[i]);
        if (r != NV_SUCCESS) {
            rc = s_fail(h, "nvmlDeviceGetHandleByIndex_v2", r);
            snprintf(err, errlen, "nvml: device index %u: %s", idx[i], h->last_error);
            goto out;
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            int st = -1;
            nv_ret_t r = p2p(dev[i], dev[j], NV_P2P_CAPS_NVLINK, &st);
            /* a pair NVML cannot tell about is not NVLink: the group is then
             * formed as if over PCIe, which is never wrong, only slower */
            joined[i * n + j] = joined[j * n + i] = r == NV_SUCCESS && st == NV_P2P_STATUS_OK;
        }
out:
    if (rc != 0)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                joined[i * n + j] = i == j;
    cr_nvml_close(&h);
    return rc;
}
