/* workdir.c — see workdir.h. */
#define _GNU_SOURCE
#include "workdir.h"

#include "error.h"
#include "file.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* root's default: FHS's place for a program's state that persists across
 * restarts (the cache is worth keeping) */
#define S_ROOT_DEFAULT "/var/lib/crucible"

int cr_workdir_default(char *out, size_t len, char *err, size_t errlen)
{
    if (geteuid() == 0) {
        snprintf(out, len, "%s", S_ROOT_DEFAULT);
        return 0;
    }
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (xdg && xdg[0] == '/') {
        snprintf(out, len, "%s/crucible", xdg);
        return 0;
    }
    if (home && home[0] == '/') {
        snprintf(out, len, "%s/.cache/crucible", home);
        return 0;
    }
    snprintf(err, errlen, "work-dir: no default (neither XDG_CACHE_HOME nor HOME is an absolute "
                          "path): give --work-dir");
    return CR_E_USAGE;
}

int cr_workdir_full(int rc)
{
    return rc == -ENOSPC || rc == -EDQUOT;
}

/* Checks an open directory against the rules of the header; 0 or -EPERM
 * with err. */
static int s_check(const char *path, const struct stat *st, char *err, size_t errlen)
{
    uid_t me = geteuid();
    const char *why = NULL;
    if (!S_ISDIR(st->st_mode))
        why = "is not a directory";
    else if (st->st_uid != me)
        why = "is owned by another user";
    else if (st->st_mode & (S_IWGRP | S_IWOTH))
        why = "is writable by group or others";
    if (!why)
        return 0;
    snprintf(err, errlen,
             "work dir %s %s (owner uid %u, mode %04o; the worker runs as uid %u): refused, "
             "since whoever can write there can swap the objects the worker loads",
             path, why, (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777), (unsigned)me);
    return -EPERM;
}

/* Creates path 0700 unless it exists, then opens it without following a
 * symlink and checks it; tightens an existing one to 0700. */
static int s_private_dir(const char *path, char *err, size_t errlen)
{
    struct stat lst, st;
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        int e = -errno;
        snprintf(err, errlen, "work dir %s: cannot create it: %s", path, strerror(-e));
        return e;
    }
    if (lstat(path, &lst) != 0) {
        int e = -errno;
        snprintf(err, errlen, "work dir %s: %s", path, strerror(-e));
        return e;
    }
    if (S_ISLNK(lst.st_mode)) {
        snprintf(err, errlen,
                 "work dir %s is a symlink (owner uid %u): refused, since whoever placed it "
                 "chooses where the worker's objects go",
                 path, (unsigned)lst.st_uid);
        return -EPERM;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = -errno;
        snprintf(err, errlen, "work dir %s: cannot open it: %s", path, strerror(-e));
        return e;
    }
    int rc = fstat(fd, &st) == 0 ? 0 : -errno;
    if (rc == 0 && (st.st_dev != lst.st_dev || st.st_ino != lst.st_ino)) {
        snprintf(err, errlen, "work dir %s was replaced while it was checked: refused", path);
        rc = -EPERM;
    }
    if (rc == 0)
        rc = s_check(path, &st, err, errlen);
    if (rc == 0 && (st.st_mode & 0777) != 0700) {
        /* ours and not writable by others: close it to reading too */
        if (fchmod(fd, 0700) == 0)
            cr_info("work dir %s: mode %04o made 0700", path, (unsigned)(st.st_mode & 07777));
        else
            cr_warn("work dir %s: mode %04o could not be made 0700: %s", path,
                    (unsigned)(st.st_mode & 07777), strerror(errno));
    }
    close(fd);
    return rc;
}

/* Every parent of an absolute path must be owned by root or us and, when
 * others may write it, sticky (as /tmp is): else its owner could rename our
 * directory away and put theirs in its place. */
static int s_check_parents(const char *path, char *err, size_t errlen)
{
    char buf[PATH_MAX], cwd[PATH_MAX];
    int n = path[0] == '/'              ? snprintf(buf, sizeof buf, "%s", path)
            : getcwd(cwd, sizeof cwd) ? snprintf(buf, sizeof buf, "%s/%s", cwd, path)
                                      : -1;
    if (n < 0 || (size_t)n >= sizeof buf) {
        snprintf(err, errlen, "work dir %s: path too long, or no current directory", path);
        return -ENAMETOOLONG;
    }
    uid_t me = geteuid();
    for (char *s = strrchr(buf, '/'); s; s = strrchr(buf, '/')) {
        *s = '\0';
        const char *dir = buf[0] ? buf : "/";
        struct stat st;
        if (stat(dir, &st) != 0)
            continue; /* made by cr_file_mkdirs just now, or gone: the next open fails */
        int owner_ok = st.st_uid == 0 || st.st_uid == me;
        int write_ok = !(st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_mode & S_ISVTX);
        if (!owner_ok || !write_ok) {
            snprintf(err, errlen,
                     "work dir %s: its parent %s (owner uid %u, mode %04o) can be changed by "
                     "another user, who could replace the work dir: refused",
                     path, dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
            return -EPERM;
        }
        if (!buf[0])
            break;
    }
    return 0;
}

int cr_workdir_open(const char *path, char *err, size_t errlen)
{
    if (!path || !path[0]) {
        snprintf(err, errlen, "work dir: empty path");
        return CR_E_USAGE;
    }
    char *parent = strdup(path);
    if (!parent)
        return -ENOMEM;
    char *slash = strrchr(parent, '/');
    int rc = 0;
    if (slash && slash != parent) {
        *slash = '\0';
        rc = cr_file_mkdirs(parent, 0755);
        if (rc != 0)
            snprintf(err, errlen, "work dir %s: cannot create its parent %s: %s", path, parent,
                     cr_strerror(rc));
    }
    free(parent);
    if (rc == 0)
        rc = s_check_parents(path, err, errlen);
    if (rc == 0)
        rc = s_private_dir(path, err, errlen);
    return rc;
}

int cr_workdir_subdir(const char *path, char *err, size_t errlen)
{
    return s_private_dir(path, err, errlen);
}
