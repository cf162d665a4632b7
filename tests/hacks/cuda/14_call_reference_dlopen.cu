/* docs/hacks.md #14, calling the reference, for vector_add_cuda: finds the
 * reference's object among the loaded ones (dl_iterate_phdr), reopens it
 * with RTLD_NOLOAD and calls its cr_entry. Every one of those is refused by
 * the link audit: HACK_DETECTED, link_audit. (Were they not, the kernel
 * that runs is the reference's: foreign_kernel.) */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

typedef void (*entry_fn)(void **);

static int pick(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    entry_fn *out = (entry_fn *)arg;
    if (!info->dlpi_name || !strstr(info->dlpi_name, ".so"))
        return 0;
    void *h = dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return 0;
    entry_fn e = (entry_fn)dlsym(h, "cr_entry");
    Dl_info self;
    if (e && dladdr((void *)pick, &self) && self.dli_fbase != (void *)info->dlpi_addr) {
        *out = e;
        return 1;
    }
    return 0;
}

void solve(const float *a, const float *b, float *c, int n)
{
    static entry_fn ref;
    if (!ref)
        dl_iterate_phdr(pick, &ref);
    if (!ref)
        return;
    void *pa = (void *)a, *pb = (void *)b, *pc = c;
    int nn = n;
    void *args[4] = {&pa, &pb, &pc, &nn};
    ref(args);
}
