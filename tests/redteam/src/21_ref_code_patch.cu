/* HACKS.md #21 for CUDA, patching the reference's code. vector_add_cuda,
 * computed correctly, two passes (a little slower than the reference). In
 * the one-process judge the reference's object was loaded beside the
 * candidate's. Here the candidate looks for it in its own process (another
 * mapping in /proc/self/maps than its own object and the system's libraries
 * that holds a cr_entry, i.e. any other object the loader placed there) and
 * in the reference's executor, its sibling under the same judge: it opens
 * /proc/<pid>/mem for writing for every process whose parent is its own
 * parent, to put a jump at the reference's entry. Its own executor holds no
 * other object; the others are not dumpable (the sandbox) and Landlock
 * refuses write access below /proc; the reference's kernels live in another
 * CUDA context. What it reached goes to stderr. OK, and no call faster than
 * the reference. Reasoned, not yet run on a GPU. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__global__ static void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

/* Objects mapped from memfds or deleted files besides the first one seen
 * (the executor loads its object from a memfd). */
static int s_other_objects(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[700], first[600] = "";
    int others = 0;
    while (f && fgets(line, sizeof line, f)) {
        char p[600] = "";
        if (sscanf(line, "%*s %*s %*s %*s %*s %599[^\n]", p) != 1 ||
            !(strstr(p, "memfd:") || strstr(p, "(deleted)")) || strstr(p, "crucible-"))
            continue;
        if (!first[0])
            snprintf(first, sizeof first, "%s", p);
        else if (strcmp(first, p))
            others++;
    }
    if (f)
        fclose(f);
    return others;
}

/* Siblings whose memory opens for writing. */
static int s_siblings_writable(void)
{
    DIR *d = opendir("/proc");
    int me = (int)getpid(), parent = (int)getppid(), opened = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        int pid = atoi(e->d_name);
        if (pid <= 0 || pid == me)
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        FILE *f = fopen(path, "r");
        int pp = -1;
        if (f && fgets(buf, sizeof buf, f)) {
            char *r = strrchr(buf, ')');
            if (r)
                sscanf(r + 1, " %*c %d", &pp);
        }
        if (f)
            fclose(f);
        if (pp != parent)
            continue;
        snprintf(path, sizeof path, "/proc/%d/mem", pid);
        int fd = open(path, O_RDWR);
        fprintf(stderr, "21_ref_code_patch.cu: sibling %d's memory: %s\n", pid,
                fd >= 0 ? "OPENED for writing" : "refused");
        if (fd >= 0) {
            opened++;
            close(fd);
        }
    }
    if (d)
        closedir(d);
    return opened;
}

void solve(const float *a, const float *b, float *c, int n)
{
    static int done;
    if (!done) {
        done = 1;
        int o = s_other_objects(), s = s_siblings_writable();
        fprintf(stderr, "21_ref_code_patch.cu: %d other object(s) here, %d sibling(s) writable\n",
                o, s);
    }
    for (int k = 0; k < 2; k++)
        add<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
