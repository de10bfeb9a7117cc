/*
 * log.c: stderr logging in the OpenSMTPD manner.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"
#include "text.h"
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

/*
 * Writes one line: msg (and the text of errno code) escaped, so that no
 * path, name or header a client sent can break the line, start one of
 * its own or hide part of it (text_escape_line).  Every message goes
 * through here: no caller has to remember which of its strings came from
 * outside.  One write per line so lines of concurrent threads do not
 * interleave.
 */
static void
log_line(int code, const char *fmt, va_list ap)
{
	char	 msg[4096], line[8192];
	size_t	 n;

	/* Room for the error's text, however long the message. */
	vsnprintf(msg, code != 0 ? sizeof(msg) - 128 : sizeof(msg), fmt, ap);
	if (code != 0 && (n = strlen(msg)) + 3 < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - n, ": %s", strerror(code));
	text_escape_line(line, sizeof(line), msg);
	fprintf(stderr, "%s: %s\n", log_prog, line);
	fflush(stderr);
}

void
vlog(int pri, const char *fmt, va_list ap)
{
	int	 saved = errno;

	if (pri == LOG_DEBUG && !log_verbose) {
		errno = saved;
		return;
	}
	log_line(0, fmt, ap);
	errno = saved;
}

static void
log_errno(int pri, int code, const char *fmt, va_list ap)
{
	(void)pri;
	log_line(code, fmt, ap);
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
