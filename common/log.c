/*
 * log.c: stderr logging in the OpenSMTPD manner.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"
#include "banned.h"

static const char	*log_prog = "vivarium";
static int		 log_verbose;

void
log_init(const char *progname, int verbose)
{
	if (progname != NULL)
		log_prog = progname;
	log_verbose = verbose;
}

void
log_setverbose(int verbose)
{
	log_verbose = verbose;
}

void
vlog(int pri, const char *fmt, va_list ap)
{
	char	 line[4096];
	int	 saved = errno;

	if (pri == LOG_DEBUG && !log_verbose) {
		errno = saved;
		return;
	}
	/* One write per line so lines from concurrent threads do not interleave. */
	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "%s: %s\n", log_prog, line);
	fflush(stderr);
	errno = saved;
}

static void
log_errno(int pri, int code, const char *fmt, va_list ap)
{
	char	 msg[3800];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (code != 0)
		fprintf(stderr, "%s: %s: %s\n", log_prog, msg, strerror(code));
	else
		fprintf(stderr, "%s: %s\n", log_prog, msg);
	fflush(stderr);
	(void)pri;
}

void
log_warn(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	log_errno(LOG_WARNING, saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(LOG_WARNING, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(LOG_INFO, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(LOG_DEBUG, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	log_errno(LOG_CRIT, saved, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(LOG_CRIT, fmt, ap);
	va_end(ap);
	exit(1);
}
