/* log.h — one logging module for every Crucible process.
 *
 * A line is: timestamp, pid, role, level, message. The macros test the level
 * before any formatting, so a disabled debug line costs one comparison.
 * Output goes to stderr (unbuffered), one write(2) per line so lines from
 * several processes sharing a terminal do not interleave. */
#ifndef CR_LOG_H
#define CR_LOG_H

typedef enum {
    CR_LEVEL_DEBUG = 0,
    CR_LEVEL_INFO = 1,
    CR_LEVEL_WARN = 2,
    CR_LEVEL_ERROR = 3,
    CR_LEVEL_OFF = 4,
} cr_log_level_t;

extern cr_log_level_t cr__log_level;

/* Sets the role shown on each line ("coordinator", "worker w0", ...).
 * The string is copied (truncated to 31 bytes). */
void cr_log_set_role(const char *role);

void cr_log_set_level(cr_log_level_t level);

/* Parses "debug|info|warn|error|off"; returns 0 or CR_E_USAGE. */
int cr_log_parse_level(const char *s, cr_log_level_t *out);

void cr__log_write(cr_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define CR_LOG(level, ...)                                                  \
    do {                                                                    \
        if ((level) >= cr__log_level)                                       \
            cr__log_write((level), __VA_ARGS__);                            \
    } while (0)

#define cr_debug(...) CR_LOG(CR_LEVEL_DEBUG, __VA_ARGS__)
#define cr_info(...)  CR_LOG(CR_LEVEL_INFO, __VA_ARGS__)
#define cr_warn(...)  CR_LOG(CR_LEVEL_WARN, __VA_ARGS__)
#define cr_error(...) CR_LOG(CR_LEVEL_ERROR, __VA_ARGS__)

#endif
