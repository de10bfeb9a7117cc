/*
 * jsonrpc.c: JSON-RPC error bodies (jsonrpc.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "jsonrpc.h"
#include "text.h"
#include "banned.h"

json_t *
jsonrpc_verror(json_t *id, int code, const char *fmt, va_list ap)
{
	char		 msg[1024];
	struct buf	 b = BUF_INIT(sizeof(msg) * 4);
	json_t		*e;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	(void)text_escape(&b, msg, strlen(msg), 0);
	e = json_pack("{s:s, s:O?, s:{s:i, s:s%}}", "jsonrpc", "2.0",
	    "id", id, "error", "code", code, "message", buf_str(&b), b.len);
	buf_release(&b);
	return e;
}

json_t *
jsonrpc_error(json_t *id, int code, const char *fmt, ...)
{
	va_list	 ap;
	json_t	*e;

	va_start(ap, fmt);
	e = jsonrpc_verror(id, code, fmt, ap);
	va_end(ap);
	return e;
}
