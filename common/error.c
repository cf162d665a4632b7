/* error.c — cr_strerror over the CR_ERRNO_MAP table and errno. */
#include "error.h"

#include <string.h>

const char *cr_strerror(int err)
{
    switch (err) {
#define CR__ERR_CASE(name, val, msg) case val: return msg;
        CR_ERRNO_MAP(CR__ERR_CASE)
#undef CR__ERR_CASE
    default:
        break;
    }
    if (err < 0 && err > -4096)
        return strerror(-err);
    return "unknown error";
}

const char *cr_errname(int err)
{
    switch (err) {
#define CR__ERR_NAME(name, val, msg) case val: return "E_" #name;
        CR_ERRNO_MAP(CR__ERR_NAME)
#undef CR__ERR_NAME
    default:
        return "E_SYSTEM";
    }
}
