/* topo.c — see topo.h. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include "topo.h"

#include <errno.h>
#include <hwloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/utsname.h>

/* Loads a topology of this machine (no I/O devices: we only need CPUs and
 * caches, and PCI discovery is the slow part). Returns 0 or -ENOENT. */
static int s_load(hwloc_topology_t *topo)
{
    if (hwloc_topology_init(topo) != 0)
        return -ENOENT;
    if (hwloc_topology_load(*topo) != 0) {
        hwloc_topology_destroy(*topo);
        return -ENOENT;
    }
    return 0;
}

int cr_topo_llc_bytes(uint64_t *out)
{
    *out = CR_TOPO_LLC_FALLBACK;
    hwloc_topology_t topo;
    if (s_load(&topo) != 0)
        return -ENOENT;
    unsigned best_depth = 0;
    uint64_t best = 0;
    hwloc_obj_t o = NULL;
    /* Walk every object: caches sit at different tree depths on different
     * machines (per core, per CCX, per package). Instruction caches do not
     * hold the data we must evict. */
    int ndepth = hwloc_topology_get_depth(topo);
    for (int d = 0; d < ndepth; d++) {
        while ((o = hwloc_get_next_obj_by_depth(topo, d, o)) != NULL) {
            if (!hwloc_obj_type_is_dcache(o->type) || !o->attr)
                continue;
            unsigned cd = o->attr->cache.depth;
            uint64_t sz = o->attr->cache.size;
            if (cd > best_depth || (cd == best_depth && sz > best)) {
                best_depth = cd;
                best = sz;
            }
        }
    }
    hwloc_topology_destroy(topo);
    if (best == 0)
        return -ENOENT;
    *out = best;
    return 0;
}

int cr_topo_pin_self(int cpu)
{
    cpu_set_t cur, want;
    if (sched_getaffinity(0, sizeof cur, &cur) != 0)
        return -errno;
    if (cpu < 0) {
        for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &cur); cpu++) {
        }
        if (cpu == CPU_SETSIZE)
            return -EINVAL;
    } else if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &cur)) {
        return -EINVAL;
    }
    CPU_ZERO(&want);
    CPU_SET(cpu, &want);
    /* pid 0 is the calling thread on Linux, not the whole process. */
    return sched_setaffinity(0, sizeof want, &want) == 0 ? 0 : -errno;
}

/* "model name : X" from /proc/cpuinfo (x86), or "Model : X" / "cpu model"
 * (ARM, MIPS). Returns 0 when found. */
static int s_cpuinfo_model(char *buf, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "re");
    if (!f)
        return -ENOENT;
    char line[512];
    int rc = -ENOENT;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0 && strncmp(line, "Model", 5) != 0 &&
            strncmp(line, "cpu model", 9) != 0)
            continue;
        char *v = strchr(line, ':');
        if (!v)
            continue;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        v[strcspn(v, "\n")] = '\0';
        if (*v) {
            snprintf(buf, len, "%s", v);
            rc = 0;
            break;
        }
    }
    fclose(f);
    return rc;
}

/* CPUID brand strings are often padded with blanks. */
static void s_trim(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
}

int cr_topo_cpu_model(char *buf, size_t len)
{
    if (len == 0)
        return -EINVAL;
    buf[0] = '\0';
    hwloc_topology_t topo;
    if (s_load(&topo) == 0) {
        /* hwloc puts CPUModel on packages (x86) or on the root object. */
        hwloc_obj_t o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, NULL);
        const char *m = o ? hwloc_obj_get_info_by_name(o, "CPUModel") : NULL;
        if (!m)
            m = hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), "CPUModel");
        if (m && *m)
            snprintf(buf, len, "%s", m);
        hwloc_topology_destroy(topo);
        s_trim(buf);
        if (buf[0])
            return 0;
    }
    if (s_cpuinfo_model(buf, len) == 0) {
        s_trim(buf);
        return 0;
    }
    struct utsname u;
    snprintf(buf, len, "%s", uname(&u) == 0 ? u.machine : "unknown");
    return -ENOENT;
}

int cr_topo_bind_to_pci(const char *pci_bus_id, char *desc, size_t len)
{
    if (desc && len)
        desc[0] = '\0';
    unsigned dom = 0, bus, dev, fn;
    /* both "dddd:bb:dd.f" (any domain width) and "bb:dd.f" */
    if (!pci_bus_id || (sscanf(pci_bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4 &&
                        (dom = 0, sscanf(pci_bus_id, "%x:%x.%x", &bus, &dev, &fn) != 3)))
        return -EINVAL;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return -ENOENT;
    /* PCI devices are only in the tree when I/O discovery is asked for */
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return -ENOENT;
    }
    int rc = -ENODEV;
    hwloc_obj_t pci = hwloc_get_pcidev_by_busid(topo, dom, bus, dev, fn);
    hwloc_obj_t anc = pci ? hwloc_get_non_io_ancestor_obj(topo, pci) : NULL;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set) {
        rc = -ENOMEM;
        goto out;
    }
    if (!anc || !anc->cpuset)
        goto out;
    /* the loaded topology holds only allowed CPUs; intersect anyway so a
     * cgroup narrowed since never yields an impossible mask */
    hwloc_bitmap_and(set, anc->cpuset, hwloc_topology_get_allowed_cpuset(topo));
    if (hwloc_bitmap_iszero(set))
        goto out;
    if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) != 0) {
        rc = errno ? -errno : -EIO;
        goto out;
    }
    rc = 0;
    if (desc && len) {
        char cpus[256], nodes[128] = "";
        hwloc_bitmap_list_snprintf(cpus, sizeof cpus, set);
        if (anc->nodeset && !hwloc_bitmap_iszero(anc->nodeset))
            hwloc_bitmap_list_snprintf(nodes, sizeof nodes, anc->nodeset);
        snprintf(desc, len, "CPUs %s (NUMA node%s %s)", cpus,
                 anc->nodeset && hwloc_bitmap_weight(anc->nodeset) > 1 ? "s" : "",
                 nodes[0] ? nodes : "?");
    }
out:
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
    return rc;
}

int cr_topo_copy_bw(double *bw)
{
    unsigned char *a = malloc(CR_TOPO_BW_BYTES), *b = malloc(CR_TOPO_BW_BYTES);
    *bw = 0;
    if (!a || !b) {
        free(a);
        free(b);
        return -ENOMEM;
    }
    memset(a, 1, CR_TOPO_BW_BYTES);
    memset(b, 2, CR_TOPO_BW_BYTES);
    for (int r = 0; r < CR_TOPO_BW_ROUNDS; r++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        memcpy(r & 1 ? a : b, r & 1 ? b : a, CR_TOPO_BW_BYTES);
        __asm__ __volatile__("" : : "r"(a), "r"(b) : "memory");
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        double v = s > 0 ? 2.0 * CR_TOPO_BW_BYTES / s : 0;
        if (v > *bw)
            *bw = v;
    }
    free(a);
    free(b);
    return 0;
}
