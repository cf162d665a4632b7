/* timeutil.h — clocks. */
#ifndef CR_TIMEUTIL_H
#define CR_TIMEUTIL_H

#include <stdint.h>

/* Milliseconds since the Unix epoch (wall clock): for records and logs. */
int64_t cr_time_now_ms(void);

/* Monotonic nanoseconds: for durations and deadlines, never for records. */
int64_t cr_time_mono_ns(void);

/* Monotonic milliseconds. */
int64_t cr_time_mono_ms(void);

/* Sleeps for ms milliseconds, restarting after signals. */
void cr_time_sleep_ms(int64_t ms);

#endif
