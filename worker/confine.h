/* confine.h — the pieces of process confinement that the runner's sandbox
 * (worker/runner/sandbox.c) and the compilers' box (worker/box.c) share:
 * Landlock rules and dropping root.
 *
 * Every function here makes system calls only (no allocation, no stdio),
 * so it may run in a child between fork and exec of a multi-threaded
 * process. */
#ifndef CR_CONFINE_H
#define CR_CONFINE_H

#include <stdint.h>
#include <sys/types.h>

/* The Landlock ABI the kernel speaks; 0 = none (not built in, not enabled). */
int cr_confine_landlock_abi(void);

/* The Landlock rights that change the file tree (write, truncate, make,
 * remove, rename) on this abi. */
uint64_t cr_confine_landlock_write_rights(int abi);

/* The Landlock rights of reading and executing files and listing
 * directories (every abi has them). */
uint64_t cr_confine_landlock_read_rights(void);

/* Adds to ruleset a rule granting access beneath path. A path that is not a
 * directory gets the file rights of access only (Landlock refuses directory
 * rights on a file). Returns 0 or -errno. */
int cr_confine_landlock_rule(int ruleset, const char *path, uint64_t access);

/* Root only: no supplementary groups, then gid, then uid, all three of
 * each (real, effective, saved); then checks they took. Returns 0 or -errno
 * (-EPERM when an id did not change). */
int cr_confine_drop(uid_t uid, gid_t gid);

#endif
