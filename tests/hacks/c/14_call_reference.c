/* docs/hacks.md #14, calling the reference: finds the reference's shared object
 * among the loaded ones (its path is in /proc/self/maps), opens it with
 * dlopen and calls its entry point, so it is exactly as fast and exactly as
 * right as the reference. The link audit rejects an object that imports
 * dlopen/dlsym: HACK_DETECTED, link_audit. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef void (*entry_fn)(void **args);
static entry_fn ref;

static void find_reference(void)
{
    Dl_info me;
    if (!dladdr((void *)find_reference, &me))
        return;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024], path[900];
    while (f && !ref && fgets(line, sizeof line, f)) {
        if (sscanf(line, "%*s %*s %*s %*s %*s %899s", path) != 1 || !strstr(path, ".so") ||
            strcmp(path, me.dli_fname) == 0)
            continue;
        void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        void *sym = h ? dlsym(h, "cr_entry") : NULL;
        if (sym)
            memcpy(&ref, &sym, sizeof ref);
    }
    if (f)
        fclose(f);
}

void solve(const float *a, const float *b, float *c, int n)
{
    if (!ref)
        find_reference();
    if (ref) {
        void *args[4] = {&a, &b, &c, &n};
        ref(args);
        return;
    }
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}
