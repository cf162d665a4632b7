/* log.c — see log.h. */
#include "log.h"

#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

cr_log_level_t cr__log_level = CR_LEVEL_INFO;
static char s_role[32] = "crucible";

static const char *const s_level_names[] = {"debug", "info", "warn", "error", "off"};

void cr_log_set_role(const char *role)
{
    snprintf(s_role, sizeof s_role, "%s", role);
}

void cr_log_set_level(cr_log_level_t level)
{
    cr__log_level = level;
}

int cr_log_parse_level(const char *s, cr_log_level_t *out)
{
    for (int i = 0; i <= CR_LEVEL_OFF; i++) {
        if (strcmp(s, s_level_names[i]) == 0) {
            *out = (cr_log_level_t)i;
            return 0;
        }
    }
    return CR_E_USAGE;
}

void cr__log_write(cr_log_level_t level, const char *fmt, ...)
{
    char line[2048];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%02d:%02d:%02d.%03d %d %s %s: ", tm.tm_hour,
                     tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000), (int)getpid(), s_role,
                     s_level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}
