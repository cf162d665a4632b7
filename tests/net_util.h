/* net_util.h — loopback helpers the cluster tests share (header-only:
 * test_chaos.c, test_security.c and test_hostile_cluster.c). */
#ifndef CR_TEST_NET_UTIL_H
#define CR_TEST_NET_UTIL_H

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

/* A TCP port free on 127.0.0.1 right now (bound, read back, released). */
static inline int cr_test_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
              getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

#endif
