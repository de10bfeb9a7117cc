/*
 * clock.c: clock_mono and clock_sleep_ms (clock.h).
 */
#include <errno.h>
#include <time.h>

#include "clock.h"
#include "banned.h"

double
clock_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void
clock_sleep_ms(long ms)
{
	struct timespec	 ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}
