/*
 * log.h: the one logging API of every vivarium program.
 *
 * Lines go to stderr as "prog: message" (journald and podman logs pick them
 * up).  log_warn and fatal append strerror(errno); the x variants do not.
 * errno is preserved across every call, so logging never hides an error.
 * A message is escaped as a whole (text_escape_line in text.h): control
 * characters, bytes that are not UTF-8 and invisible ones such as bidi
 * overrides show as \xNN, so a path, name or header from a client can be
 * logged as it is and still never forge, break or reorder a line.
 */
#ifndef VIVARIUM_LOG_H
#define VIVARIUM_LOG_H

#include <stdarg.h>

#define LOG_FMT(a, b) __attribute__((format(printf, a, b)))

/* progname is borrowed and must outlive the program; verbose enables log_debug. */
void	log_init(const char *progname, int verbose);
void	log_setverbose(int verbose);

void	log_warn(const char *, ...) LOG_FMT(1, 2);
void	log_warnx(const char *, ...) LOG_FMT(1, 2);
void	log_info(const char *, ...) LOG_FMT(1, 2);
void	log_debug(const char *, ...) LOG_FMT(1, 2);
void	vlog(int pri, const char *, va_list) LOG_FMT(2, 0);
__attribute__((noreturn)) void fatal(const char *, ...) LOG_FMT(1, 2);
__attribute__((noreturn)) void fatalx(const char *, ...) LOG_FMT(1, 2);

#endif
