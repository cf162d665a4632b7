/* file.h — small filesystem helpers. */
#ifndef CR_FILE_H
#define CR_FILE_H

#include <stddef.h>

/* Reads a whole file into a NUL-terminated heap buffer.
 * On success returns 0, *out is the buffer (caller frees with free()) and
 * *len its length without the NUL (len may be NULL). Fails with -errno, or
 * CR_E_LIMIT when the file is larger than max bytes; *out is then NULL. */
int cr_file_read(const char *path, size_t max, char **out, size_t *len);

/* Writes len bytes to path through a temporary file and rename(2), so a
 * reader sees the old file or the new one, never a part. Returns 0 or -errno. */
int cr_file_write_atomic(const char *path, const void *data, size_t len);

/* mkdir -p with the given mode. Returns 0 or -errno. */
int cr_file_mkdirs(const char *path, int mode);

/* rm -rf: removes path and everything below it without following symlinks.
 * Returns 0 (also when path does not exist) or -errno of the first failure. */
int cr_file_rmtree(const char *path);

/* Copies what is left of descriptor in (from its offset to its end) to out
 * at out's offset. Returns 0 or -errno. */
int cr_file_copy_fd(int in, int out);

/* 1 when path exists (any type), 0 otherwise. */
int cr_file_exists(const char *path);

/* Joins a and b with one '/', into a heap string the caller frees. */
char *cr_file_join(const char *a, const char *b);

#endif
