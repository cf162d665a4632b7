/* Reads the worker (its parent): environment, memory, mappings, open
 * descriptors, working directory and root through /proc/<ppid>/, and the
 * local cluster's database beside the work dirs. Anything it manages to
 * read turns the answer wrong, so a leak cannot pass as OK. The worker is
 * not dumpable and root's, and the runner runs as nobody: all refused. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static const struct {
    const char *leaf; /* under /proc/<ppid>/, or a path when it starts with '.' */
    int dir;          /* opening it at all is the leak */
} s_targets[] = {
    {"environ", 0}, {"mem", 0}, {"maps", 0}, {"fd", 1}, {"cwd", 1}, {"root", 1},
    {"../../../crucible.db", 0}, /* work-wN/scratch/<job> -> the cluster's folder */
};

void solve(const float *a, const float *b, float *c, int n)
{
    char path[128], buf[64];
    int leaked = 0;
    for (unsigned i = 0; i < sizeof s_targets / sizeof s_targets[0]; i++) {
        if (s_targets[i].leaf[0] == '.')
            snprintf(path, sizeof path, "%s", s_targets[i].leaf);
        else
            snprintf(path, sizeof path, "/proc/%d/%s", (int)getppid(), s_targets[i].leaf);
        int fd = open(path, O_RDONLY);
        if (fd >= 0) {
            if (s_targets[i].dir || read(fd, buf, sizeof buf) > 0)
                leaked = 1;
            close(fd);
        }
    }
    for (int i = 0; i < n; i++)
        c[i] = leaked ? 0 : a[i] + b[i];
}
