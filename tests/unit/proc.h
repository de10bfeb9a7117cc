/*
 * proc.h: what the unit tests that start processes ask of /proc and the
 * clock.  Header-only, static inline, for tests that #include the .c they
 * test and so are one translation unit each.
 */
#ifndef TESTS_PROC_H
#define TESTS_PROC_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline double
mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Is pid gone (or a zombie nobody reaped yet)? */
static inline int
pid_dead(pid_t pid)
{
	char	 path[64], buf[512], *p;
	FILE	*f;
	size_t	 n;

	if (kill(pid, 0) == -1 && errno == ESRCH)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p != NULL && (p[2] == 'Z' || p[2] == 'X');
}

/* Waits up to secs for pid to be gone; whether it is. */
static inline int
wait_dead(pid_t pid, double secs)
{
	double	 end = mono_now() + secs;

	while (mono_now() < end) {
		if (pid_dead(pid))
			return 1;
		usleep(10000);
	}
	return pid_dead(pid);
}

#endif
