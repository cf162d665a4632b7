/* launch_check.c — the CUDA judge's launch checks (see cuda_int.h; §8):
 * CUPTI's callback API, dlopen'ed, counts and identifies every kernel a
 * verification call launches; no_kernel_launched and foreign_kernel are
 * decided here. */
#include "cuda_int.h"

#include <assert.h> /* static_assert */

/* CUPTI's callback API (cupti_callbacks.h, cupti_*_cbid.h), declared here so
 * that the judge builds without CUPTI's headers and links nothing new: the
 * library is dlopen'ed (§8). The layout and numbers are CUPTI's ABI;
 * where the headers are at hand the build checks them below. */
typedef struct {
    int site;                 /* CUpti_ApiCallbackSite */
    const char *function_name;
    const void *params;       /* the API call's arguments, in declaration order */
    void *ret;                /* cudaError_t * (runtime) or CUresult * (driver); exit only */
    const char *symbol_name;  /* the kernel's name, in launch callbacks */
    void *context;
    uint32_t context_uid;
    uint64_t *correlation_data;
    uint32_t correlation_id;
} s_cupti_data_t;
typedef void (*s_cupti_cb_fn)(void *userdata, int domain, uint32_t cbid, const void *data);
typedef int (*s_cupti_subscribe_fn)(void **sub, s_cupti_cb_fn cb, void *userdata);
typedef int (*s_cupti_unsubscribe_fn)(void *sub);
typedef int (*s_cupti_enable_fn)(uint32_t enable, void *sub, int domain, uint32_t cbid);
typedef int (*s_cupti_result_fn)(int result, const char **str);
enum { S_SITE_ENTER = 0, S_SITE_EXIT = 1, S_DOM_DRIVER = 1, S_DOM_RUNTIME = 2 };

/* The calls watched. field: which argument is the kernel's identity (-1:
 * none); kind: S_CB_LAUNCH a kernel launch, S_CB_GRAPH a graph launch
 * (counts as a launch; its kernels are unnamed), S_CB_GETKERNEL the
 * runtime looking up the handle of a host stub (arguments: the handle's
 * address, the stub), which tells whose object a handle's kernel is. */
enum { S_CB_LAUNCH = 1, S_CB_GRAPH = 2, S_CB_GETKERNEL = 3 };
typedef struct {
    int domain;
    uint32_t cbid;
    int field, kind;
    const char *name;
} s_watch_t;
static const s_watch_t s_watch[] = {
    {S_DOM_RUNTIME, 13, 0, S_CB_LAUNCH, "cudaLaunch"},
    {S_DOM_RUNTIME, 211, 0, S_CB_LAUNCH, "cudaLaunchKernel"},
    {S_DOM_RUNTIME, 213, 0, S_CB_LAUNCH, "cudaLaunch_ptsz"},
    {S_DOM_RUNTIME, 214, 0, S_CB_LAUNCH, "cudaLaunchKernel_ptsz"},
    {S_DOM_RUNTIME, 269, 0, S_CB_LAUNCH, "cudaLaunchCooperativeKernel"},
    {S_DOM_RUNTIME, 270, 0, S_CB_LAUNCH, "cudaLaunchCooperativeKernel_ptsz"},
    {S_DOM_RUNTIME, 272, -1, S_CB_LAUNCH, "cudaLaunchCooperativeKernelMultiDevice"},
    {S_DOM_RUNTIME, 311, -1, S_CB_GRAPH, "cudaGraphLaunch"},
    {S_DOM_RUNTIME, 312, -1, S_CB_GRAPH, "cudaGraphLaunch_ptsz"},
    {S_DOM_RUNTIME, 430, 1, S_CB_LAUNCH, "cudaLaunchKernelExC"},
    {S_DOM_RUNTIME, 431, 1, S_CB_LAUNCH, "cudaLaunchKernelExC_ptsz"},
    {S_DOM_RUNTIME, 505, 0, S_CB_LAUNCH, "__cudaLaunchKernel"}, /* nvcc 13's <<< >>> */
    {S_DOM_RUNTIME, 506, 0, S_CB_LAUNCH, "__cudaLaunchKernel_ptsz"},
    {S_DOM_RUNTIME, 439, 0, S_CB_GETKERNEL, "cudaGetKernel"},
    {S_DOM_RUNTIME, 504, 0, S_CB_GETKERNEL, "__cudaGetKernel"}, /* nvcc 13's stubs */
    {S_DOM_DRIVER, 115, 0, S_CB_LAUNCH, "cuLaunch"},
    {S_DOM_DRIVER, 116, 0, S_CB_LAUNCH, "cuLaunchGrid"},
    {S_DOM_DRIVER, 117, 0, S_CB_LAUNCH, "cuLaunchGridAsync"},
    {S_DOM_DRIVER, 307, 0, S_CB_LAUNCH, "cuLaunchKernel"},
    {S_DOM_DRIVER, 442, 0, S_CB_LAUNCH, "cuLaunchKernel_ptsz"},
    {S_DOM_DRIVER, 477, 0, S_CB_LAUNCH, "cuLaunchCooperativeKernel"},
    {S_DOM_DRIVER, 478, 0, S_CB_LAUNCH, "cuLaunchCooperativeKernel_ptsz"},
    {S_DOM_DRIVER, 480, -1, S_CB_LAUNCH, "cuLaunchCooperativeKernelMultiDevice"},
    {S_DOM_DRIVER, 514, -1, S_CB_GRAPH, "cuGraphLaunch"},
    {S_DOM_DRIVER, 515, -1, S_CB_GRAPH, "cuGraphLaunch_ptsz"},
    {S_DOM_DRIVER, 652, 1, S_CB_LAUNCH, "cuLaunchKernelEx"},
    {S_DOM_DRIVER, 653, 1, S_CB_LAUNCH, "cuLaunchKernelEx_ptsz"},
};
#define S_NWATCH (sizeof s_watch / sizeof s_watch[0])

#if defined(__has_include)
#if __has_include(<cupti_callbacks.h>) && __has_include(<cupti_runtime_cbid.h>) && \
    __has_include(<cupti_driver_cbid.h>) && __has_include(<cupti_version.h>)
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <cupti_version.h>
static_assert(offsetof(CUpti_CallbackData, functionParams) ==
                  offsetof(s_cupti_data_t, params), "CUPTI ABI");
static_assert(offsetof(CUpti_CallbackData, functionReturnValue) ==
                  offsetof(s_cupti_data_t, ret), "CUPTI ABI");
static_assert(offsetof(CUpti_CallbackData, symbolName) ==
                  offsetof(s_cupti_data_t, symbol_name), "CUPTI ABI");
static_assert((int)CUPTI_API_EXIT == (int)S_SITE_EXIT &&
                  (int)CUPTI_CB_DOMAIN_DRIVER_API == (int)S_DOM_DRIVER &&
                  (int)CUPTI_CB_DOMAIN_RUNTIME_API == (int)S_DOM_RUNTIME, "CUPTI ABI");
static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 == 211 &&
                  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 == 430 &&
                  CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 == 311 &&
                  CUPTI_RUNTIME_TRACE_CBID_cudaGetKernel_v12000 == 439 &&
                  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel == 307 &&
                  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx == 652 &&
                  CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch == 514, "CUPTI callback ids");
#if defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 130000
static_assert(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000 == 505 &&
                  CUPTI_RUNTIME_TRACE_CBID___cudaGetKernel_v13000 == 504, "CUPTI callback ids");
#endif
#endif
#endif

/* Kernels seen, by identity. Entries are only added (never freed: a
 * callback of a thread the candidate left behind may still read them). */
#define S_KERNELS 512 /* distinct kernels remembered; far above any candidate's */
typedef struct {
    const void *id;   /* host stub, cudaKernel_t or CUfunction */
    const void *stub; /* host stub of the kernel, when known; NULL otherwise */
    char *name;       /* as CUPTI names it (mangled); NULL when unknown; owned */
    unsigned who;     /* bit 1 << CR_CUDA_CAND, 1 << CR_CUDA_REF: whose calls launched it */
    int reported;     /* a finding about it was reported */
} s_kernel_t;

static struct {
    void *lib;                    /* libcupti, dlopen'ed; kept loaded */
    void *sub;                    /* the subscriber handle; NULL = not subscribed */
    s_cupti_unsubscribe_fn unsubscribe;
    s_cupti_enable_fn enable;
    int who;                      /* CR_CUDA_CAND, _REF while their call runs; -1 otherwise */
    unsigned long ok[2], failed[2]; /* launches in the current call, by side */
    s_kernel_t k[S_KERNELS];      /* guarded by s_lc_mu */
    int nk;
    int full;                     /* the table overflowed */
} s_lc;
static pthread_mutex_t s_lc_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int s_lc_depth; /* runtime launch calls in progress on this thread */

/* Finds or adds the entry of identity id (under s_lc_mu). NULL when full. */
static s_kernel_t *s_lc_find(const void *id)
{
    for (int i = 0; i < s_lc.nk; i++)
        if (s_lc.k[i].id == id)
            return &s_lc.k[i];
    if (s_lc.nk == S_KERNELS) {
        s_lc.full = 1;
        return NULL;
    }
    s_kernel_t *e = &s_lc.k[s_lc.nk++];
    memset(e, 0, sizeof *e);
    e->id = id;
    return e;
}

/* The callback: runs on whichever thread made the call, for the watched
 * calls only (cr__cuda_lc_start enables nothing else), so a call that launches
 * nothing pays nothing. */
static void s_lc_callback(void *userdata, int domain, uint32_t cbid, const void *data)
{
    (void)userdata;
    const s_cupti_data_t *d = (const s_cupti_data_t *)data;
    const s_watch_t *w = NULL;
    for (size_t i = 0; i < S_NWATCH && !w; i++)
        if (s_watch[i].domain == domain && s_watch[i].cbid == cbid)
            w = &s_watch[i];
    if (!w || !d)
        return;
    const void *const *args = (const void *const *)d->params;
    if (w->kind == S_CB_GETKERNEL) {
        /* (cudaKernel_t *handle, const void *stub): on exit the handle is set */
        if (d->site != S_SITE_EXIT || (d->ret && *(const int *)d->ret != 0) || !args ||
            !args[0] || !*(const void *const *)args[0])
            return;
        pthread_mutex_lock(&s_lc_mu);
        s_kernel_t *e = s_lc_find(*(const void *const *)args[0]);
        if (e && !e->stub)
            e->stub = args[1];
        pthread_mutex_unlock(&s_lc_mu);
        return;
    }
    int rt = domain == S_DOM_RUNTIME;
    if (d->site == S_SITE_ENTER) {
        s_lc_depth += rt;
        return;
    }
    if (rt)
        s_lc_depth -= s_lc_depth > 0;
    else if (s_lc_depth > 0)
        return; /* the driver half of a runtime launch: counted by the runtime's callback */
    int who = __atomic_load_n(&s_lc.who, __ATOMIC_ACQUIRE);
    if (who != CR_CUDA_CAND && who != CR_CUDA_REF)
        return;
    /* cudaSuccess and CUDA_SUCCESS are both 0 */
    if (d->ret && *(const int *)d->ret != 0) {
        __atomic_fetch_add(&s_lc.failed[who], 1, __ATOMIC_RELAXED);
        return;
    }
    __atomic_fetch_add(&s_lc.ok[who], 1, __ATOMIC_RELAXED);
    if (w->kind == S_CB_GRAPH)
        return; /* a graph launch counts; its kernels have no identity here */
    const void *id = w->field >= 0 && args ? args[w->field] : NULL;
    if (!id)
        return;
    pthread_mutex_lock(&s_lc_mu);
    s_kernel_t *e = s_lc_find(id);
    if (e) {
        e->who |= 1u << who;
        if (!e->name && d->symbol_name)
            e->name = strdup(d->symbol_name);
        /* the pre-13 runtime calls pass the host stub itself */
        Dl_info info;
        if (!e->stub && rt && w->cbid != 505 && w->cbid != 506 && dladdr(id, &info) &&
            info.dli_fbase)
            e->stub = id;
    }
    pthread_mutex_unlock(&s_lc_mu);
}

/* Load address and path of the object holding p; NULL when none does. */
static const void *s_obj_of(const void *p, const char **path)
{
    Dl_info info;
    if (path)
        *path = NULL;
    if (!p || !dladdr(p, &info) || !info.dli_fbase)
        return NULL;
    if (path)
        *path = info.dli_fname;
    return info.dli_fbase;
}

static int s_image_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    cr__cuda_image_t *im = (cr__cuda_image_t *)arg;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        mine = ph->p_type == PT_LOAD && (uintptr_t)im->base >= (lo & ~(uintptr_t)0xfff) &&
               (uintptr_t)im->base < lo + ph->p_memsz;
    }
    if (!mine)
        return 0;
    for (int i = 0; i < info->dlpi_phnum && im->nseg < CR_CUDA_SEGS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) || (ph->p_flags & PF_W))
            continue;
        im->p[im->nseg] = (const char *)(info->dlpi_addr + ph->p_vaddr);
        im->n[im->nseg++] = ph->p_filesz; /* beyond the file's bytes there are only zeros */
    }
    return 1;
}

/* Collects the read-only segments of the object loaded at base (writable
 * ones are left out: the candidate could write a name there at run time).
 * Returns how many. */
static int s_image(const void *base, cr__cuda_image_t *im)
{
    memset(im, 0, sizeof *im);
    im->base = base;
    if (base)
        dl_iterate_phdr(s_image_cb, im);
    return im->nseg;
}

static int s_in_image(const cr__cuda_image_t *im, const char *name)
{
    if (!name || !name[0])
        return 0;
    size_t len = strlen(name);
    for (int i = 0; i < im->nseg; i++)
        if (memmem(im->p[i], im->n[i], name, len))
            return 1;
    return 0;
}

static int s_find_cudart(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "/libcudart.so")) {
        snprintf((char *)arg, PATH_MAX, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

/* dlopens CUPTI: $CR_CUPTI_LIBRARY, else the one beside the libcudart.so
 * the objects loaded (same toolkit, so the same version), else the
 * loader's search path, else the toolkit's usual places. */
static void *s_cupti_open(char *used, size_t usedlen)
{
    char dir[PATH_MAX] = "", tries[6][PATH_MAX + 32];
    int n = 0;
    const char *env = getenv("CR_CUPTI_LIBRARY");
    if (env && env[0])
        snprintf(tries[n++], sizeof tries[0], "%s", env);
    if (dl_iterate_phdr(s_find_cudart, dir) && strrchr(dir, '/')) {
        *strrchr(dir, '/') = '\0';
        snprintf(tries[n++], sizeof tries[0], "%s/libcupti.so", dir);
        snprintf(tries[n++], sizeof tries[0], "%s/libcupti.so.%d", dir, CUDART_VERSION / 1000);
    }
    snprintf(tries[n++], sizeof tries[0], "libcupti.so.%d", CUDART_VERSION / 1000);
    snprintf(tries[n++], sizeof tries[0], "libcupti.so");
    snprintf(tries[n++], sizeof tries[0], "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
    for (int i = 0; i < n; i++) {
        void *h = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            snprintf(used, usedlen, "%.*s", (int)usedlen - 1, tries[i]);
            return h;
        }
    }
    const char *e = dlerror();
    snprintf(used, usedlen, "%s", e ? e : "libcupti.so not found");
    return NULL;
}

/* Loads CUPTI and subscribes (no callback enabled yet): 0 with the library
 * in used, or -1 with the reason there. */
int cr__cuda_lc_subscribe(char *used, size_t usedlen)
{
    s_lc.lib = s_cupti_open(used, usedlen);
    if (!s_lc.lib) {
        char why[PATH_MAX + 64];
        snprintf(why, sizeof why, "no CUPTI (%s)", used);
        snprintf(used, usedlen, "%s", why);
        return -1;
    }
    s_cupti_subscribe_fn subscribe = NULL;
    s_cupti_result_fn result = NULL;
    void *sym = dlsym(s_lc.lib, "cuptiSubscribe");
    memcpy(&subscribe, &sym, sizeof sym);
    sym = dlsym(s_lc.lib, "cuptiUnsubscribe");
    memcpy(&s_lc.unsubscribe, &sym, sizeof sym);
    sym = dlsym(s_lc.lib, "cuptiEnableCallback");
    memcpy(&s_lc.enable, &sym, sizeof sym);
    sym = dlsym(s_lc.lib, "cuptiGetResultString");
    memcpy(&result, &sym, sizeof sym);
    if (!subscribe || !s_lc.unsubscribe || !s_lc.enable) {
        snprintf(used + strlen(used), usedlen - strlen(used), " lacks the callback API");
        return -1;
    }
    __atomic_store_n(&s_lc.who, -1, __ATOMIC_RELEASE);
    void *sub = NULL;
    int rc = subscribe(&sub, s_lc_callback, NULL);
    if (rc != 0 || !sub) {
        const char *why = NULL;
        if (!result || result(rc, &why) != 0 || !why)
            why = "error";
        /* e.g. CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED under a profiler */
        snprintf(used, usedlen, "cuptiSubscribe: %s (%d)", why, rc);
        return -1;
    }
    s_lc.sub = sub;
    return 0;
}

/* Subscribes to the launch callbacks and reads the candidate's and the
 * reference's object files (§8). Whatever fails leaves the checks off,
 * logged: the verdict then rests on the other checks, as before them. */
void cr__cuda_lc_start(cr__cuda_judge_t *J)
{
    const char *path[3];
    for (int i = 0; i < 3; i++) {
        void *p;
        memcpy(&p, &J->fn[i], sizeof p);
        J->obj_base[i] = s_obj_of(p, &path[i]);
    }
    if (!J->obj_base[CR_CUDA_CAND] || !J->obj_base[CR_CUDA_REF]) {
        cr_warn("launch checks off: the candidate's or the reference's object is unknown");
        return;
    }
    /* Names are looked for in the objects as mapped, not in their files: a
     * sandboxed runner may not be able to open the reference's folder. */
    for (int i = CR_CUDA_CAND; i <= CR_CUDA_REF; i++)
        if (s_image(J->obj_base[i], &J->img[i]) == 0)
            cr_warn("launch checks: no read-only segment found in %s: kernel names not "
                    "checked", path[i] ? path[i] : "?");
    char used[PATH_MAX + 64] = "subscribed by the prestart";
    int64_t tl = cr_time_mono_ns();
    if (!s_lc.sub && cr__cuda_lc_subscribe(used, sizeof used) != 0) {
        cr_warn("launch checks off: %s", used);
        return;
    }
    int64_t tl1 = cr_time_mono_ns();
    void *sub = s_lc.sub;
    s_cupti_enable_fn enable = s_lc.enable;
    int launches = 0;
    for (size_t i = 0; i < S_NWATCH; i++)
        if (enable(1, sub, s_watch[i].domain, s_watch[i].cbid) == 0)
            launches += s_watch[i].kind != S_CB_GETKERNEL;
        else
            cr_debug("launch checks: CUPTI cannot watch %s", s_watch[i].name);
    if (launches == 0) {
        cr_warn("launch checks off: CUPTI enabled none of the launch callbacks");
        s_lc.unsubscribe(sub);
        s_lc.sub = NULL;
        return;
    }
    J->lc_on = 1;
    cr_info("launch checks on (%s, %d launch calls watched; %.3f s to load CUPTI and "
            "subscribe, %.3f s to enable)", used, launches, (double)(tl1 - tl) / 1e9,
            (double)(cr_time_mono_ns() - tl1) / 1e9);
}

/* Ends the subscription: no callback from here on, so none in a timed
 * window. CUPTI stays loaded (unloading a tool from a live context is not
 * something CUPTI promises to survive). */
void cr__cuda_lc_stop(cr__cuda_judge_t *J)
{
    __atomic_store_n(&s_lc.who, -1, __ATOMIC_RELEASE);
    if (s_lc.sub && s_lc.unsubscribe(s_lc.sub) != 0) {
        /* still subscribed: turn every callback off, so none fires while timing */
        int left = 0;
        for (size_t i = 0; i < S_NWATCH; i++)
            left += s_lc.enable(0, s_lc.sub, s_watch[i].domain, s_watch[i].cbid) != 0;
        cr_warn("launch checks: cuptiUnsubscribe failed; callbacks disabled%s",
                left ? " except some CUPTI refused to disable" : "");
    }
    s_lc.sub = NULL;
    J->lc_on = 0;
}

/* Around a verification call of who (cr__cuda_call). */
void cr__cuda_lc_begin(cr__cuda_judge_t *J, int who)
{
    if (!J->lc_on || (who != CR_CUDA_CAND && who != CR_CUDA_REF))
        return;
    __atomic_store_n(&s_lc.ok[who], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s_lc.failed[who], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s_lc.who, who, __ATOMIC_RELEASE);
}

void cr__cuda_lc_end(cr__cuda_judge_t *J, int who)
{
    if (!J->lc_on || (who != CR_CUDA_CAND && who != CR_CUDA_REF))
        return;
    __atomic_store_n(&s_lc.who, -1, __ATOMIC_RELEASE);
    J->lc_ok[who] = __atomic_load_n(&s_lc.ok[who], __ATOMIC_RELAXED);
    J->lc_failed[who] = __atomic_load_n(&s_lc.failed[who], __ATOMIC_RELAXED);
}

/* Whether the object at path is a library the task allows: its file name
 * starts with "lib<name>" for an allowed name ("cublas" also admits
 * libcublasLt, which cuBLAS itself calls). */
static int s_allowed_lib(const cr_task_t *t, const char *path)
{
    const char *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path;
    for (int i = 0; base && i < t->nallow; i++) {
        char want[96];
        snprintf(want, sizeof want, "lib%s", t->allow[i]);
        if (!strncmp(base, want, strlen(want)))
            return 1;
    }
    return 0;
}

/* The executor's report of its own launches since the last report
 * (executor.c, after a counted call): how many launched kernels have a name
 * and how many of those names its own object holds (the judge's
 * calibration, on the reference executor), and the first kernel not
 * reported before that is not the object's own: its host stub lies in
 * another object (path set, for the judge to check against the task's
 * libraries) or, with no stub known, its name occurs nowhere in the
 * object's read-only segments (path ""). Returns 1 when there is one. */
int cr__cuda_lc_self(cr__cuda_judge_t *J, unsigned *named, unsigned *found, char *name,
                     size_t namelen, char *path, size_t pathlen)
{
    int hit = 0;
    *named = *found = 0;
    name[0] = path[0] = '\0';
    pthread_mutex_lock(&s_lc_mu);
    for (int i = 0; i < s_lc.nk; i++) {
        s_kernel_t *e = &s_lc.k[i];
        if (!(e->who & (1u << CR_CUDA_CAND)))
            continue;
        if (e->name) {
            (*named)++;
            *found += s_in_image(&J->img[CR_CUDA_CAND], e->name);
        }
        if (hit || e->reported)
            continue;
        const char *owner_path = NULL;
        const void *owner = e->stub ? s_obj_of(e->stub, &owner_path) : NULL;
        int foreign = owner ? owner != J->obj_base[CR_CUDA_CAND]
                            : e->name && J->img[CR_CUDA_CAND].nseg &&
                                  !s_in_image(&J->img[CR_CUDA_CAND], e->name);
        if (foreign) {
            e->reported = 1;
            hit = 1;
            snprintf(name, namelen, "%s", e->name ? e->name : "(unnamed)");
            snprintf(path, pathlen, "%s", owner && owner_path ? owner_path : "");
        }
    }
    pthread_mutex_unlock(&s_lc_mu);
    return hit;
}

/* §8's verdict on the candidate call of this verification run, once
 * the reference has run on the same inputs; passed: its outputs and inputs
 * were right. Flags the record; returns 1 with a message in msg when a
 * check fired. */
int cr__cuda_lc_verdict(cr__cuda_judge_t *J, int c, int second, int passed, char *msg,
                        size_t msglen)
{
    if (!J->lc_on)
        return 0;
    const char *which = second ? " (second run)" : "";
    if (J->lc_ok[CR_CUDA_REF] == 0) {
        /* every task's reference launches a kernel: CUPTI sees nothing here */
        cr_warn("launch checks off: CUPTI saw no launch of the reference in case %d", c);
        cr__cuda_lc_off(J);
        return 0;
    }
    int fired = 0;
    msg[0] = '\0';
    if (J->lc_ok[CR_CUDA_CAND] == 0 && !passed) {
        /* Nothing ran and the outputs show it (a grid rounded down to zero
         * blocks, a launch that failed): the honest verdict, INCORRECT,
         * stands without a hack flag. */
        cr_info("case %d%s: the candidate launched no kernel%s", c, which,
                J->lc_failed[CR_CUDA_CAND] ? " (its launches failed)" : "");
    } else if (J->lc_ok[CR_CUDA_CAND] == 0 && J->t->gpus > 0) {
        /* A task with "gpus" (docs/multigpu.md): moving bytes is its work, and
         * copies (NCCL's on one rank, cudaMemcpyPeer, copy-engine collectives)
         * launch no kernel: not a finding */
        cr_debug("case %d%s: rank 0's candidate launched no kernel (copies only)", c, which);
    } else if (J->lc_ok[CR_CUDA_CAND] == 0) {
        /* Right answers and no kernel: the work was done another way (on
         * the host, by copies, by code the count does not see). */
        cr_judge_flag(J->rec, "no_kernel_launched");
        snprintf(msg, msglen,
                 "the outputs are right but the candidate launched no kernel%s: the work was "
                 "done some other way (docs/hacks.md #15)",
                 J->lc_failed[CR_CUDA_CAND] ? " (its launches failed)" : "");
        cr_judge_fail(J->rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "case %d%s: %s", c, which,
                      msg);
        fired = 1;
    }
    /* Calibration (the reference executor's report of its first calls):
     * names mean something once one of its kernel names was found in its
     * own object. */
    if (J->lc_names == 0 && J->lc_ref_found)
        J->lc_names = 1;
    else if (J->lc_names == 0 && J->lc_ref_named) {
        J->lc_names = -1;
        cr_warn("launch checks: none of the reference's %u kernel names occurs in its "
                "object: names not checked", J->lc_ref_named);
    }
    char why[400], name[256] = "";
    const char *found = NULL;
    if (J->lc_suspect[0]) { /* the candidate executor's report: evidence only */
        snprintf(name, sizeof name, "%s", J->lc_suspect);
        if (J->lc_suspect_path[0] && !s_allowed_lib(J->t, J->lc_suspect_path)) {
            snprintf(why, sizeof why, "it comes from %.300s, a library the task does not allow",
                     J->lc_suspect_path);
            found = why;
        } else if (!J->lc_suspect_path[0] && J->t->nallow == 0 && J->lc_names == 1) {
            snprintf(why, sizeof why, "its name occurs nowhere in the candidate's object, and "
                     "the task allows no library");
            found = why;
        }
        J->lc_suspect[0] = J->lc_suspect_path[0] = '\0';
    }
    if (found) {
        cr_judge_flag(J->rec, "foreign_kernel");
        char m[1024];
        snprintf(m, sizeof m, "the candidate launched kernel %s, which is not its own: %s "
                 "(docs/hacks.md #14)", name, found);
        cr_judge_fail(J->rec, CRUCIBLE__STATUS__STATUS_HACK_DETECTED, "case %d%s: %s", c, which,
                      m);
        if (!fired)
            snprintf(msg, msglen, "%.*s", (int)msglen - 1, m);
        fired = 1;
    }
    return fired;
}
