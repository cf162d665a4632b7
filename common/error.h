/* error.h — Crucible error codes.
 *
 * Every function that can fail returns int: 0 on success, a negative number
 * on failure. System errors are -errno; project errors come from the one
 * table below, which also drives cr_strerror(). Codes start at -10000 so
 * they never collide with errno values. */
#ifndef CR_ERROR_H
#define CR_ERROR_H

#define CR_ERRNO_MAP(X)                                                     \
    X(DECODE,      -10001, "message could not be decoded")                  \
    X(TOO_BIG,     -10002, "message exceeds the size limit")                \
    X(VERSION,     -10003, "protocol version not supported")                \
    X(TASK,        -10004, "invalid task")                                  \
    X(JSON,        -10005, "malformed JSON")                                \
    X(EXPR,        -10006, "invalid expression")                            \
    X(STORE,       -10007, "database error")                                \
    X(TIMEOUT,     -10008, "timed out")                                     \
    X(COMPILE,     -10009, "compilation failed")                            \
    X(DUPLICATE,   -10010, "already exists")                                \
    X(NOT_FOUND,   -10011, "not found")                                     \
    X(STATE,       -10012, "invalid state transition")                      \
    X(LIMIT,       -10013, "limit exceeded")                                \
    X(ZMQ,         -10014, "ZeroMQ error")                                  \
    X(USAGE,       -10015, "invalid usage")                                 \
    X(CHILD,       -10016, "child process failed")                          \
    X(EXEC,        -10017, "an executor stopped serving the judge")         \
    X(HTTP,        -10018, "HTTP request failed")

enum {
#define CR__ERR_ENUM(name, val, msg) CR_E_##name = (val),
    CR_ERRNO_MAP(CR__ERR_ENUM)
#undef CR__ERR_ENUM
};

/* Returns a static string for a negative error code (errno or CR_E_*). */
const char *cr_strerror(int err);

/* Returns the code's name, "E_DECODE" style, for wire Error.code. */
const char *cr_errname(int err);

#endif
