/*
 * clock.h: the monotonic clock and a sleep, for deadlines and polling.
 */
#ifndef VIVARIUM_CLOCK_H
#define VIVARIUM_CLOCK_H

/* Seconds on CLOCK_MONOTONIC (not wall time: never jumps). */
double	clock_mono(void);
/* Sleeps ms milliseconds, through signals. */
void	clock_sleep_ms(long ms);

#endif
