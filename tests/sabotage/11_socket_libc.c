/* Opens a TCP socket (to send what it saw, or to fetch an answer). The
 * link audit sees the import of socket and rejects the object before it
 * runs. */
#include <sys/socket.h>
#include <unistd.h>

void solve(const float *a, const float *b, float *c, int n)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0)
        close(fd);
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}
