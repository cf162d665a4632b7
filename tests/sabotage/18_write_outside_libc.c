/* Writes outside its scratch dir: /tmp, the worker's scratch root, work dir
 * and compile cache (reached through .. from the working directory). Any
 * write that lands turns the answer wrong, so a leak cannot pass as OK;
 * Landlock and the uid drop refuse them all. /dev/shm is writable but
 * private to the runner, so a file there proves nothing and is not counted. */
#include <fcntl.h>
#include <unistd.h>

static const char *const s_targets[] = {
    "/tmp/crucible-sabotage-written",        /* the host's /tmp */
    "../crucible-sabotage-written",          /* the worker's scratch root */
    "../../crucible-sabotage-written",       /* the worker's work dir */
    "../../cache/crucible-sabotage-written", /* the compile cache */
};

void solve(const float *a, const float *b, float *c, int n)
{
    int leaked = 0;
    for (unsigned i = 0; i < sizeof s_targets / sizeof s_targets[0]; i++) {
        int fd = open(s_targets[i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            leaked = 1;
            close(fd);
        }
    }
    int fd = open("/dev/shm/crucible-sabotage-written", O_WRONLY | O_CREAT, 0644);
    if (fd >= 0)
        close(fd);
    for (int i = 0; i < n; i++)
        c[i] = leaked ? 0 : a[i] + b[i];
}
