/* audit.c — see audit.h. The policy is the table s_rules, read top down:
 * the first row that matches a symbol decides it, so a narrower row goes
 * above a wider one (cublasLt above cublas). docs/audit.md explains it. */
#include "audit.h"

#include "error.h"

#include <elf.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef enum {
    S_EXACT,  /* the whole name */
    S_PREFIX, /* the name starts with the pattern */
    S_SUBSTR, /* the pattern is inside the name (C++ mangled names) */
    S_API,    /* the pattern, then an upper-case letter: "cu" is cuLaunchKernel, not cumsum */
} s_match_t;

enum { S_IMPORTS = 1, S_DEFINES = 2, S_BOTH = 3 };

typedef struct {
    const char *pattern;
    s_match_t match;
    int scope;             /* S_IMPORTS, S_DEFINES or S_BOTH */
    const char *lifted_by; /* a cr_task_libs name the task's "allow" may list, "threads"
                              (task "threads": true), S_PERMIT (always), or NULL: never */
    const char *reason;    /* completes "imports 'name': " */
} s_rule_t;

#define S_THREADS "threads"
#define S_PERMIT "*" /* lifted_by: always lifted, i.e. a permitted name above a wider rule */

#define S_WHY_TIMER "timers are forbidden in candidates: the judge alone measures time"
#define S_WHY_EVENT "CUDA events are timers, forbidden in candidates: the judge alone measures time"
#define S_WHY_CHRONO "std::chrono clocks are timers, forbidden in candidates"
#define S_WHY_VDSO "the vDSO holds the kernel's clocks: reading it is a timer"
#define S_WHY_DL "dynamic loading and symbol lookup reach code the link audit cannot see"
#define S_WHY_AUXV "getauxval finds the vDSO's clocks without importing them"
#define S_WHY_TRACE "tracing or reading other processes is forbidden"
#define S_WHY_PROT "changing memory protection is forbidden (executable memory cannot be checked)"
#define S_WHY_PROC "starting processes or programs is forbidden"
#define S_WHY_NET "network access is forbidden"
#define S_WHY_SIG "signalling other threads or processes is forbidden"
#define S_WHY_SYSCALL "raw system calls bypass the link audit"
#define S_WHY_PRCTL "process attributes the judge relies on are not the candidate's to change"
#define S_WHY_THREAD "starting threads is forbidden unless the task allows them"
#define S_WHY_IPC "CUDA IPC shares device memory with other processes"
#define S_WHY_RESET "cudaDeviceReset destroys the judge's device context and buffers"
#define S_WHY_DRIVER "the CUDA driver API is not linked for candidates, only the runtime (cuda*)"
#define S_WHY_DEF_CUDA "defining a CUDA API name would interpose on the runtime the judge uses"
#define S_WHY_VENDOR "vendor libraries are forbidden unless the task allows them"
#define S_WHY_JUDGE "the judge's own libraries are not for candidates"

static const s_rule_t s_rules[] = {
    /* timers and events (docs/hacks.md #10) */
    {"clock_gettime", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"__clock_gettime", S_PREFIX, S_BOTH, NULL, S_WHY_TIMER},
    {"clock_gettime64", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"gettimeofday", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"__gettimeofday", S_PREFIX, S_BOTH, NULL, S_WHY_TIMER},
    {"time", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"clock", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"timespec_get", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"ftime", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"times", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"getrusage", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"clock_getcpuclockid", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"pthread_getcpuclockid", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"timer_", S_PREFIX, S_IMPORTS, NULL, S_WHY_TIMER},   /* timer_create, timer_gettime */
    {"timerfd_", S_PREFIX, S_IMPORTS, NULL, S_WHY_TIMER}, /* timerfd_create, _gettime */
    {"setitimer", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"getitimer", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"alarm", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"ualarm", S_EXACT, S_BOTH, NULL, S_WHY_TIMER},
    {"__vdso_", S_PREFIX, S_BOTH, NULL, S_WHY_VDSO},
    {"__kernel_clock", S_PREFIX, S_BOTH, NULL, S_WHY_VDSO}, /* aarch64's vDSO names */
    {"__kernel_gettimeofday", S_EXACT, S_BOTH, NULL, S_WHY_VDSO},
    {"6chrono", S_SUBSTR, S_IMPORTS, NULL, S_WHY_CHRONO}, /* _ZNSt6chrono3_V212steady_clock */
    /* Events that only order work across streams (fork/join with
     * cudaStreamWaitEvent) time nothing: imports allowed. Reading a time or
     * a completion from them (ElapsedTime, Synchronize, Query) is not. */
    {"cudaEventCreate", S_PREFIX, S_IMPORTS, S_PERMIT, NULL}, /* ..., ...WithFlags */
    {"cudaEventRecord", S_PREFIX, S_IMPORTS, S_PERMIT, NULL}, /* ..., ...WithFlags */
    {"cudaEventDestroy", S_EXACT, S_IMPORTS, S_PERMIT, NULL},
    {"cudaEvent", S_PREFIX, S_BOTH, NULL, S_WHY_EVENT},
    {"cuEvent", S_PREFIX, S_BOTH, NULL, S_WHY_EVENT},

    /* dynamic loading: everything found through it escapes this audit */
    {"dlopen", S_EXACT, S_BOTH, NULL, S_WHY_DL},
    {"dlmopen", S_EXACT, S_BOTH, NULL, S_WHY_DL},
    {"dlsym", S_EXACT, S_BOTH, NULL, S_WHY_DL},
    {"dlvsym", S_EXACT, S_BOTH, NULL, S_WHY_DL},
    {"dladdr", S_EXACT, S_BOTH, NULL, S_WHY_DL},
    {"dladdr1", S_EXACT, S_BOTH, NULL, S_WHY_DL},
    {"dlinfo", S_EXACT, S_BOTH, NULL, S_WHY_DL},
    {"dlclose", S_EXACT, S_BOTH, NULL, S_WHY_DL},
    {"dlerror", S_EXACT, S_BOTH, NULL, S_WHY_DL},
    {"dl_iterate_phdr", S_EXACT, S_BOTH, NULL, S_WHY_DL},
    {"_dl_", S_PREFIX, S_BOTH, NULL, S_WHY_DL},
    {"__libc_dl", S_PREFIX, S_BOTH, NULL, S_WHY_DL},
    {"_r_debug", S_EXACT, S_BOTH, NULL, S_WHY_DL},
    {"getauxval", S_EXACT, S_BOTH, NULL, S_WHY_AUXV},
    {"__getauxval", S_EXACT, S_BOTH, NULL, S_WHY_AUXV},
    {"cudaGetDriverEntryPoint", S_PREFIX, S_BOTH, NULL, S_WHY_DL},
    {"cudaGetExportTable", S_PREFIX, S_BOTH, NULL, S_WHY_DL},
    {"cuGetProcAddress", S_PREFIX, S_BOTH, NULL, S_WHY_DL},
    {"cuGetExportTable", S_PREFIX, S_BOTH, NULL, S_WHY_DL},

    /* other processes, memory protection, raw system calls */
    {"ptrace", S_EXACT, S_BOTH, NULL, S_WHY_TRACE},
    {"process_vm_", S_PREFIX, S_BOTH, NULL, S_WHY_TRACE},
    {"pidfd_", S_PREFIX, S_IMPORTS, NULL, S_WHY_TRACE},
    {"mprotect", S_EXACT, S_BOTH, NULL, S_WHY_PROT},
    {"__mprotect", S_EXACT, S_BOTH, NULL, S_WHY_PROT},
    {"pkey_mprotect", S_EXACT, S_BOTH, NULL, S_WHY_PROT},
    {"syscall", S_EXACT, S_BOTH, NULL, S_WHY_SYSCALL},
    {"prctl", S_EXACT, S_BOTH, NULL, S_WHY_PRCTL},

    /* processes and programs */
    {"fork", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"_Fork", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"__fork", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"vfork", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"__vfork", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"clone", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"clone3", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"__clone", S_PREFIX, S_BOTH, NULL, S_WHY_PROC}, /* __clone, __clone2, __clone3 */
    {"execve", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"execveat", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"fexecve", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"execv", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"execvp", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"execvpe", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"execl", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"execlp", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"execle", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"posix_spawn", S_PREFIX, S_BOTH, NULL, S_WHY_PROC},
    {"system", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"popen", S_EXACT, S_BOTH, NULL, S_WHY_PROC},
    {"daemon", S_EXACT, S_BOTH, NULL, S_WHY_PROC},

    /* network */
    {"socket", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"socketpair", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"connect", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"bind", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"listen", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"accept", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"accept4", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"getaddrinfo", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"getnameinfo", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"gethostby", S_PREFIX, S_IMPORTS, NULL, S_WHY_NET},
    {"send", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"sendto", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"sendmsg", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"sendmmsg", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"recv", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"recvfrom", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"recvmsg", S_EXACT, S_BOTH, NULL, S_WHY_NET},
    {"recvmmsg", S_EXACT, S_BOTH, NULL, S_WHY_NET},

    /* signals to others (raise and abort end only the candidate's own run) */
    {"kill", S_EXACT, S_BOTH, NULL, S_WHY_SIG},
    {"killpg", S_EXACT, S_BOTH, NULL, S_WHY_SIG},
    {"tgkill", S_EXACT, S_BOTH, NULL, S_WHY_SIG},
    {"tkill", S_EXACT, S_BOTH, NULL, S_WHY_SIG},
    {"pthread_kill", S_EXACT, S_BOTH, NULL, S_WHY_SIG},
    {"sigqueue", S_EXACT, S_BOTH, NULL, S_WHY_SIG},
    {"pthread_sigqueue", S_EXACT, S_BOTH, NULL, S_WHY_SIG},

    /* threads (docs/hacks.md #8), unless the task sets "threads": true */
    {"pthread_create", S_EXACT, S_BOTH, S_THREADS, S_WHY_THREAD},
    {"thrd_create", S_EXACT, S_BOTH, S_THREADS, S_WHY_THREAD},
    {"St6thread", S_SUBSTR, S_IMPORTS, S_THREADS, S_WHY_THREAD}, /* std::thread, std::jthread */
    {"aio_", S_PREFIX, S_IMPORTS, S_THREADS, S_WHY_THREAD},      /* glibc runs AIO on threads */
    {"lio_listio", S_PREFIX, S_IMPORTS, S_THREADS, S_WHY_THREAD},
    {"mq_notify", S_EXACT, S_IMPORTS, S_THREADS, S_WHY_THREAD}, /* SIGEV_THREAD */
    {"GOMP_", S_PREFIX, S_IMPORTS, S_THREADS, S_WHY_THREAD},
    {"omp_", S_PREFIX, S_IMPORTS, S_THREADS, S_WHY_THREAD},
    {"__kmpc_", S_PREFIX, S_IMPORTS, S_THREADS, S_WHY_THREAD},

    /* the CUDA runtime's process-wide calls, the driver API, interposition */
    {"cudaIpc", S_PREFIX, S_BOTH, NULL, S_WHY_IPC},
    {"cudaMemPoolExport", S_PREFIX, S_BOTH, NULL, S_WHY_IPC},
    {"cudaMemPoolImport", S_PREFIX, S_BOTH, NULL, S_WHY_IPC},
    {"cudaDeviceReset", S_EXACT, S_BOTH, NULL, S_WHY_RESET},
    {"cuda", S_API, S_DEFINES, NULL, S_WHY_DEF_CUDA},
    {"__cuda", S_PREFIX, S_DEFINES, NULL, S_WHY_DEF_CUDA},
    {"cu", S_API, S_BOTH, NULL, S_WHY_DRIVER},
    {"nvml", S_API, S_BOTH, NULL, S_WHY_DRIVER},
    {"cupti", S_API, S_BOTH, NULL, S_WHY_DRIVER},

    /* vendor libraries (docs/hacks.md #14): the narrower name first */
    {"cublasLt", S_PREFIX, S_BOTH, "cublasLt", S_WHY_VENDOR},
    {"cublas", S_PREFIX, S_BOTH, "cublas", S_WHY_VENDOR},
    {"cudnn", S_PREFIX, S_BOTH, NULL, S_WHY_VENDOR},
    {"cufft", S_PREFIX, S_BOTH, NULL, S_WHY_VENDOR},
    {"curand", S_API, S_BOTH, NULL, S_WHY_VENDOR}, /* host API; curand_kernel.h is device code */
    {"cusparse", S_PREFIX, S_BOTH, NULL, S_WHY_VENDOR},
    {"cusolver", S_PREFIX, S_BOTH, NULL, S_WHY_VENDOR},
    {"nvjpeg", S_PREFIX, S_BOTH, NULL, S_WHY_VENDOR},
    {"cblas_", S_PREFIX, S_BOTH, NULL, S_WHY_VENDOR},
    {"openblas_", S_PREFIX, S_IMPORTS, NULL, S_WHY_VENDOR},
    {"mkl_", S_PREFIX, S_IMPORTS, NULL, S_WHY_VENDOR},

    /* what the runner itself links: in its process, so importable by name */
    {"zmq_", S_PREFIX, S_IMPORTS, NULL, S_WHY_JUDGE},
    {"sodium_", S_PREFIX, S_IMPORTS, NULL, S_WHY_JUDGE},
    {"crypto_", S_PREFIX, S_IMPORTS, NULL, S_WHY_JUDGE},
    {"randombytes", S_PREFIX, S_IMPORTS, NULL, S_WHY_JUDGE},
    {"json_", S_PREFIX, S_IMPORTS, NULL, S_WHY_JUDGE},
    {"hwloc_", S_PREFIX, S_IMPORTS, NULL, S_WHY_JUDGE},
    {"protobuf_c_", S_PREFIX, S_IMPORTS, NULL, S_WHY_JUDGE},
    {"crucible__", S_PREFIX, S_IMPORTS, NULL, S_WHY_JUDGE},
};
#define S_NRULES (sizeof s_rules / sizeof s_rules[0])

/* Weak, unversioned references every gcc/nvcc object carries from crt
 * files; they resolve to libc's or to nothing. */
static const char *const s_toolchain_weak[] = {
    "__gmon_start__", "_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable",
    "__cxa_finalize", "_Jv_RegisterClasses", "__register_frame_info",
    "__deregister_frame_info", NULL};

/* DT_NEEDED libraries any candidate may have, by name up to ".so": the C
 * and C++ runtimes, the CUDA runtime (-cudart shared), and glibc's split
 * pieces (libpthread, libdl, libmvec) that older toolchains and -lm's
 * linker script add. libdl is harmless: its symbols are refused above. */
static const char *const s_needed_ok[] = {"libc", "libm", "libmvec", "libgcc_s", "libstdc++",
                                          "libpthread", "libdl", "libcudart", NULL};
#define S_LOADER_PREFIX "ld-linux" /* ld-linux-x86-64.so.2, ld-linux-aarch64.so.1 */

static int s_match(const s_rule_t *r, const char *name)
{
    size_t n = strlen(r->pattern);
    switch (r->match) {
    case S_EXACT: return strcmp(name, r->pattern) == 0;
    case S_PREFIX: return strncmp(name, r->pattern, n) == 0;
    case S_SUBSTR: return strstr(name, r->pattern) != NULL;
    case S_API: return strncmp(name, r->pattern, n) == 0 && name[n] >= 'A' && name[n] <= 'Z';
    }
    return 0;
}

/* 1 when the task lifts rule r. */
static int s_lifted(const s_rule_t *r, const cr_task_t *task)
{
    if (!r->lifted_by)
        return 0;
    if (strcmp(r->lifted_by, S_PERMIT) == 0)
        return 1;
    if (strcmp(r->lifted_by, S_THREADS) == 0)
        return task->threads_allowed;
    for (int i = 0; i < task->nallow; i++)
        if (strcmp(task->allow[i], r->lifted_by) == 0)
            return 1;
    return 0;
}

/* Findings of one kind: the first one's text, and how many there are. */
typedef struct {
    char why[1024];
    int n;
} s_findings_t;

static void s_found(s_findings_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_found(s_findings_t *f, const char *fmt, ...)
{
    if (f->n++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(f->why, sizeof f->why, fmt, ap);
        va_end(ap);
    }
}

/* Copies f's first finding to why, with "(and N more)" when there are more. */
static void s_report(const s_findings_t *f, char *why, size_t whylen)
{
    if (!why || !whylen)
        return;
    if (f->n > 1)
        snprintf(why, whylen, "%s (and %d more)", f->why, f->n - 1);
    else
        snprintf(why, whylen, "%s", f->why);
}

/* Names are printed up to this: a crafted name can be as long as the file. */
#define S_NAME_SHOWN 200

/* A forbidden symbol goes to f; an import no linked library provides, to
 * unresolved. */
static void s_check_symbol(const cr_elfsym_sym_t *s, const cr_task_t *task, s_findings_t *f,
                           s_findings_t *unresolved)
{
    const char *verb = s->defined ? "defines" : "imports";
    int scope = s->defined ? S_DEFINES : S_IMPORTS;
    for (size_t i = 0; i < S_NRULES; i++) {
        const s_rule_t *r = &s_rules[i];
        if (!(r->scope & scope) || !s_match(r, s->name))
            continue;
        if (s_lifted(r, task))
            return;
        if (!r->lifted_by)
            s_found(f, "%s '%.*s': %s", verb, S_NAME_SHOWN, s->name, r->reason);
        else if (strcmp(r->lifted_by, S_THREADS) == 0)
            s_found(f, "%s '%.*s': %s (the task does not set \"threads\": true)", verb,
                    S_NAME_SHOWN, s->name, r->reason);
        else
            s_found(f, "%s '%.*s': %s (the task's \"allow\" does not list \"%s\")", verb,
                    S_NAME_SHOWN, s->name, r->reason, r->lifted_by);
        return;
    }
    if (s->defined || s->versioned)
        return;
    for (int i = 0; i < task->nallow; i++) { /* libnccl versions none of its symbols */
        const cr_task_lib_t *l = cr_task_lib_find(task->allow[i]);
        if (l && l->unversioned && !strncmp(s->name, l->unversioned, strlen(l->unversioned)))
            return;
    }
    for (const char *const *w = s_toolchain_weak; *w; w++)
        if (strcmp(*w, s->name) == 0)
            return;
    /* Every library a candidate may link versions its symbols (glibc,
     * libstdc++, libgcc_s, libcudart, libcublas), so an unversioned import
     * was found in none of them at link time: ld.so would bind it to
     * whatever the judge's process has loaded. Usually an honest mistake (a
     * helper declared, never defined), so it is not called a hack. */
    s_found(unresolved, "undefined symbol '%.*s': no library the object links provides it (the "
                        "loader would bind it to whatever the judge's process has loaded)",
            S_NAME_SHOWN, s->name);
}

static void s_check_needed(const char *lib, const cr_task_t *task, s_findings_t *f)
{
    size_t base = strlen(lib);
    const char *so = strstr(lib, ".so");
    if (so)
        base = (size_t)(so - lib);
    int ok = !strchr(lib, '/') && strncmp(lib, S_LOADER_PREFIX, strlen(S_LOADER_PREFIX)) == 0;
    for (const char *const *n = s_needed_ok; *n && !ok; n++)
        ok = !strchr(lib, '/') && strlen(*n) == base && strncmp(lib, *n, base) == 0;
    for (int i = 0; i < task->nallow && !ok; i++) {
        const cr_task_lib_t *l = cr_task_lib_find(task->allow[i]);
        ok = l && !strchr(lib, '/') && strlen(l->soname) == base &&
             strncmp(lib, l->soname, base) == 0;
    }
    if (!ok)
        s_found(f, "links '%.*s': only the C, C++ and CUDA runtimes and the libraries the task's "
                   "\"allow\" lists may be linked",
                S_NAME_SHOWN, lib);
}

int cr_audit_check_elf(const cr_elfsym_t *e, const cr_task_t *task, char *why, size_t whylen)
{
    s_findings_t forbidden = {"", 0}, unresolved = {"", 0};
    if (why && whylen)
        why[0] = '\0';
    for (size_t i = 1; i < cr_elfsym_count(e); i++) { /* 0 is the null symbol */
        cr_elfsym_sym_t s;
        if (cr_elfsym_symbol(e, i, &s) != 0 || s.bind == STB_LOCAL || !s.name[0])
            continue;
        s_check_symbol(&s, task, &forbidden, &unresolved);
    }
    for (size_t i = 0; i < cr_elfsym_needed_count(e); i++)
        s_check_needed(cr_elfsym_needed(e, i), task, &forbidden);
    if (forbidden.n) {
        s_report(&forbidden, why, whylen);
        return 1;
    }
    if (unresolved.n) {
        s_report(&unresolved, why, whylen);
        return CR_E_NOT_FOUND;
    }
    return 0;
}

int cr_audit_check(const char *so_path, const cr_task_t *task, char *why, size_t whylen)
{
    cr_elfsym_t *e = NULL;
    int rc = cr_elfsym_open(so_path, &e, why, whylen);
    if (rc)
        return rc;
    rc = cr_audit_check_elf(e, task, why, whylen);
    cr_elfsym_destroy(&e);
    return rc;
}

int cr_audit_selfcheck(char *why, size_t whylen)
{
    for (size_t i = 0; i < S_NRULES; i++) {
        const s_rule_t *r = &s_rules[i];
        int permit = r->lifted_by && strcmp(r->lifted_by, S_PERMIT) == 0;
        if (!r->pattern[0] || !(r->scope & S_BOTH) || (!permit && !(r->reason && r->reason[0]))) {
            snprintf(why, whylen, "rule %zu ('%s'): empty pattern, reason or scope", i,
                     r->pattern);
            return -1;
        }
        if (r->lifted_by && !permit && strcmp(r->lifted_by, S_THREADS) != 0 &&
            !cr_task_lib_find(r->lifted_by)) {
            snprintf(why, whylen, "rule %zu ('%s'): lifted by '%s', which is not in cr_task_libs",
                     i, r->pattern, r->lifted_by);
            return -1;
        }
        /* An earlier row that matches this row's own pattern (as a name)
         * decides those names first; with a different lift it hides this
         * row's. */
        for (size_t k = 0; k < i; k++) {
            const s_rule_t *q = &s_rules[k];
            int same = (!q->lifted_by && !r->lifted_by) ||
                       (q->lifted_by && r->lifted_by && !strcmp(q->lifted_by, r->lifted_by));
            if ((q->scope & r->scope) && s_match(q, r->pattern) && !same) {
                snprintf(why, whylen, "rule %zu ('%s') is hidden by rule %zu ('%s')", i,
                         r->pattern, k, q->pattern);
                return -1;
            }
        }
    }
    return 0;
}
