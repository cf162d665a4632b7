/* test_metrics.c — common/metrics.c: the text format, histograms, label
 * escaping, and the listener answering real HTTP over loopback while the
 * test plays the owner's zmq_poll loop. */
#include "metrics.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

Test(metrics, counter_gauge_text)
{
    cr_metrics_t *m = cr_metrics_new();
    cr_assert_eq(cr_metrics_declare(m, "x_total", CR_METRIC_COUNTER, "things\nseen", NULL, 0), 0);
    cr_assert_eq(cr_metrics_declare(m, "x_total", CR_METRIC_COUNTER, "again", NULL, 0), -EEXIST);
    cr_assert_eq(cr_metrics_declare(m, "9bad", CR_METRIC_GAUGE, "", NULL, 0), -EINVAL);
    cr_assert_eq(cr_metrics_declare(m, "depth", CR_METRIC_GAUGE, "queue", NULL, 0), 0);
    cr_assert_eq(cr_metrics_add(m, "x_total", "status=\"OK\"", 2), 0);
    cr_assert_eq(cr_metrics_add(m, "x_total", "status=\"OK\"", 1), 0);
    cr_assert_eq(cr_metrics_add(m, "x_total", "status=\"OK\"", -5), 0); /* ignored */
    cr_assert_eq(cr_metrics_set(m, "x_total", NULL, 1), -EINVAL);     /* a counter is not set */
    cr_assert_eq(cr_metrics_set(m, "nope", NULL, 1), -ENOENT);
    cr_assert_eq(cr_metrics_set(m, "depth", NULL, 7.5), 0);
    double v = 0;
    cr_assert_eq(cr_metrics_get(m, "x_total", "status=\"OK\"", &v), 0);
    cr_assert_float_eq(v, 3, 1e-12);
    char *t = cr_metrics_render(m, NULL);
    cr_assert_not_null(t);
    cr_assert(strstr(t, "# HELP x_total things\\nseen\n# TYPE x_total counter\n"), "%s", t);
    cr_assert(strstr(t, "x_total{status=\"OK\"} 3\n"), "%s", t);
    cr_assert(strstr(t, "# TYPE depth gauge\ndepth 7.5\n"), "%s", t);
    free(t);
    cr_assert_eq(cr_metrics_clear(m, "depth"), 0);
    t = cr_metrics_render(m, NULL);
    cr_assert_null(strstr(t, "depth 7.5"), "%s", t);
    free(t);
    cr_metrics_destroy(&m);
    cr_assert_null(m);
    cr_metrics_destroy(&m); /* safe on NULL */
}

Test(metrics, histogram_cumulative)
{
    cr_metrics_t *m = cr_metrics_new();
    const double b[] = {0.1, 1, 10};
    const double unsorted[] = {1, 0.1};
    cr_assert_eq(cr_metrics_declare(m, "h", CR_METRIC_HISTOGRAM, "", unsorted, 2), -EINVAL);
    cr_assert_eq(cr_metrics_declare(m, "lat_seconds", CR_METRIC_HISTOGRAM, "lat", b, 3), 0);
    cr_assert_eq(cr_metrics_add(m, "lat_seconds", NULL, 1), -EINVAL);
    double obs[] = {0.05, 0.1, 0.5, 5, 50};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(cr_metrics_observe(m, "lat_seconds", "stage=\"compile\"", obs[i]), 0);
    char *t = cr_metrics_render(m, NULL);
    cr_assert(strstr(t, "lat_seconds_bucket{stage=\"compile\",le=\"0.10000000000000001\"} 2\n") ||
                  strstr(t, "lat_seconds_bucket{stage=\"compile\",le=\"0.1\"} 2\n"),
              "%s", t);
    cr_assert(strstr(t, "lat_seconds_bucket{stage=\"compile\",le=\"1\"} 3\n"), "%s", t);
    cr_assert(strstr(t, "lat_seconds_bucket{stage=\"compile\",le=\"10\"} 4\n"), "%s", t);
    cr_assert(strstr(t, "lat_seconds_bucket{stage=\"compile\",le=\"+Inf\"} 5\n"), "%s", t);
    cr_assert(strstr(t, "lat_seconds_count{stage=\"compile\"} 5\n"), "%s", t);
    cr_assert(strstr(t, "lat_seconds_sum{stage=\"compile\"} 55.649999999999999\n") ||
                  strstr(t, "lat_seconds_sum{stage=\"compile\"} 55.65\n"),
              "%s", t);
    free(t);
    cr_metrics_destroy(&m);
}

Test(metrics, label_escape)
{
    char out[16];
    cr_assert_str_eq(cr_metrics_label_escape("a\"b\\c\nd", out, sizeof out), "a\\\"b\\\\c\\nd");
    /* truncation never splits a UTF-8 character: "é" is 2 bytes */
    cr_assert_str_eq(cr_metrics_label_escape("abcdefghijklmn\xc3\xa9", out, sizeof out),
                     "abcdefghijklmn");
    cr_assert_str_eq(cr_metrics_label_escape(NULL, out, sizeof out), "");
}

/* Plays the owner's loop: poll the listener's items, handle, until the
 * client socket fd has read everything (EOF). */
static char *s_fetch(cr_metrics_http_t *h, const char *req)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(cr_metrics_http_port(h))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    cr_assert_eq(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
    static char buf[65536];
    size_t n = 0;
    for (int turn = 0; turn < 400; turn++) {
        zmq_pollitem_t items[1 + CR_METRICS_HTTP_CONNS];
        int k = cr_metrics_http_pollitems(h, items, 1 + CR_METRICS_HTTP_CONNS);
        cr_assert_geq(k, 1);
        zmq_poll(items, k, 10);
        cr_metrics_http_handle(h);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 0) == 1) {
            ssize_t r = recv(fd, buf + n, sizeof buf - 1 - n, 0);
            if (r <= 0)
                break;
            n += (size_t)r;
        }
    }
    close(fd);
    buf[n] = '\0';
    return buf;
}

Test(metrics, http_listener, .timeout = 30)
{
    cr_metrics_t *m = cr_metrics_new();
    cr_metrics_declare(m, "up_gauge", CR_METRIC_GAUGE, "up", NULL, 0);
    cr_metrics_set(m, "up_gauge", "worker=\"w1\"", 1);
    char err[256];
    cr_assert_null(cr_metrics_http_new("nonsense", m, err, sizeof err));
    cr_assert_null(cr_metrics_http_new("127.0.0.1:99999", m, err, sizeof err));
    cr_metrics_http_t *h = cr_metrics_http_new("127.0.0.1:0", m, err, sizeof err);
    cr_assert_not_null(h, "%s", err);
    cr_assert_gt(cr_metrics_http_port(h), 0);
    char *r = s_fetch(h, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    cr_assert(strncmp(r, "HTTP/1.0 200 OK\r\n", 17) == 0, "%s", r);
    cr_assert(strstr(r, "text/plain; version=0.0.4"), "%s", r);
    cr_assert(strstr(r, "up_gauge{worker=\"w1\"} 1\n"), "%s", r);
    r = s_fetch(h, "GET /healthz HTTP/1.0\r\n\r\n");
    cr_assert(strstr(r, "200 OK") && strstr(r, "\r\n\r\nok\n"), "%s", r);
    r = s_fetch(h, "GET /other HTTP/1.0\r\n\r\n");
    cr_assert(strncmp(r, "HTTP/1.0 404", 12) == 0, "%s", r);
    r = s_fetch(h, "POST /metrics HTTP/1.0\r\n\r\n");
    cr_assert(strncmp(r, "HTTP/1.0 405", 12) == 0, "%s", r);
    /* a silent peer holds a slot until its deadline, and never the loop */
    int idle = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(cr_metrics_http_port(h))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(idle, (struct sockaddr *)&sa, sizeof sa), 0);
    r = s_fetch(h, "GET /metrics HTTP/1.0\r\n\r\n");
    cr_assert(strstr(r, "up_gauge"), "a scrape is answered beside a silent peer: %s", r);
    close(idle);
    cr_metrics_http_destroy(&h);
    cr_assert_null(h);
    cr_metrics_destroy(&m);
}
