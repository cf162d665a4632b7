/* workdir.h — the worker's private work directory (docs/security.md, "The
 * worker's files").
 *
 * Everything a worker builds, caches and hands to its runners lives under
 * one directory that nobody else can write: a local user who could swap a
 * cached object there would have it loaded by the next job, as root. So the
 * directory is created mode 0700, and an existing one is used only when it
 * is a real directory (not a symlink), owned by the worker's effective uid
 * and writable by no one else, under parents that only root or the worker
 * can change. */
#ifndef CR_WORKDIR_H
#define CR_WORKDIR_H

#include <stddef.h>

/* Writes the default work dir into out: /var/lib/crucible for root, else
 * $XDG_CACHE_HOME/crucible, else $HOME/.cache/crucible. Returns 0, or
 * CR_E_USAGE with err saying why there is none (no HOME). */
int cr_workdir_default(char *out, size_t len, char *err, size_t errlen);

/* Makes path the worker's private directory: creates it (and missing
 * parents, 0755) with mode 0700, or checks the one that is there. Refuses
 * a symlink, a non-directory, one owned by another uid, one that group or
 * others may write, and one whose parent another uid could replace it in;
 * err then names the path, its owner and mode and what is wrong. Takes
 * group and other read access away from an existing directory of ours
 * (logged). Returns 0 or a negative code (-EPERM for a refused one). */
int cr_workdir_open(const char *path, char *err, size_t errlen);

/* As cr_workdir_open for a directory inside the work dir (build, cache,
 * scratch): created 0700, or checked the same way; its parents are not
 * walked again. */
int cr_workdir_subdir(const char *path, char *err, size_t errlen);

/* 1 when rc (a negative errno) means the file system is full or over quota
 * (ENOSPC, EDQUOT): the worker's fault, never the candidate's. */
int cr_workdir_full(int rc);

#endif
