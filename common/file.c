/* file.c — see file.h. */
#define _GNU_SOURCE
#include "file.h"

#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cr_file_read(const char *path, size_t max, char **out, size_t *len)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return -EISDIR;
    }
    if ((size_t)st.st_size > max) {
        close(fd);
        return CR_E_LIMIT;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    for (;;) {
        if (n + 1 >= cap) {
            if (cap > max + 1) {
                free(buf);
                close(fd);
                return CR_E_LIMIT;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                close(fd);
                return -ENOMEM;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = -errno;
            free(buf);
            close(fd);
            return e;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n > max) {
        free(buf);
        return CR_E_LIMIT;
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return 0;
}

int cr_file_write_atomic(const char *path, const void *data, size_t len)
{
    size_t plen = strlen(path) + 32;
    char *tmp = malloc(plen);
    if (!tmp)
        return -ENOMEM;
    snprintf(tmp, plen, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = -errno;
        free(tmp);
        return e;
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int e = -errno;
            close(fd);
            unlink(tmp);
            free(tmp);
            return e;
        }
        p += w;
        left -= (size_t)w;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = -errno;
        unlink(tmp);
        free(tmp);
        return e;
    }
    free(tmp);
    return 0;
}

int cr_file_mkdirs(const char *path, int mode)
{
    char *p = strdup(path);
    if (!p)
        return -ENOMEM;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, (mode_t)mode) != 0 && errno != EEXIST) {
            int e = -errno;
            free(p);
            return e;
        }
        *s = '/';
    }
    int rc = 0;
    if (mkdir(p, (mode_t)mode) != 0 && errno != EEXIST)
        rc = -errno;
    free(p);
    return rc;
}

static int s_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        return rmdir(path) != 0 ? -errno : 0;
    /* a directory we could not read: make it readable and let the caller retry */
    return unlink(path) != 0 && errno != ENOENT ? -errno : 0;
}

int cr_file_rmtree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode))
        return unlink(path) != 0 ? -errno : 0;
    int rc = nftw(path, s_rm_entry, 32, FTW_DEPTH | FTW_PHYS);
    return rc < 0 ? -errno : rc;
}

int cr_file_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

char *cr_file_join(const char *a, const char *b)
{
    size_t la = strlen(a);
    size_t n = la + strlen(b) + 2;
    char *s = malloc(n);
    if (!s)
        return NULL;
    if (la > 0 && a[la - 1] == '/')
        snprintf(s, n, "%s%s", a, b);
    else
        snprintf(s, n, "%s/%s", a, b);
    return s;
}

int cr_file_copy_fd(int in, int out)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : 0;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno != EINTR)
                return -errno;
            if (w > 0)
                off += w;
        }
    }
}
