/*
 * shell.h: sh(fmt, ...) runs a shell command for a test's fixtures and
 * fails the test when it fails.  For unit tests that set up files.
 */
#ifndef VIVARIUM_TEST_SHELL_H
#define VIVARIUM_TEST_SHELL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
sh(const char *fmt, ...)
{
	char	 cmd[8192];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

#endif
