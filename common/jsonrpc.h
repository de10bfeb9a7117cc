/*
 * jsonrpc.h: the one JSON-RPC 2.0 error body, for the agent's MCP answers
 * and the supervisor's refusals alike.
 */
#ifndef VIVARIUM_JSONRPC_H
#define VIVARIUM_JSONRPC_H

#include <stdarg.h>

#include <jansson.h>

/*
 * {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": ...}}
 * (new reference; id borrowed, NULL for null).  The message is made valid
 * UTF-8 first (bad bytes as \xNN): it may quote what a client sent (a URL,
 * jansson's parse errors) or be cut inside a character, and json_pack
 * refuses a string that is not UTF-8, which would leave the client with no
 * answer at all.  NULL only when out of memory.
 */
json_t	*jsonrpc_error(json_t *id, int code, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
json_t	*jsonrpc_verror(json_t *id, int code, const char *fmt, va_list ap)
	    __attribute__((format(printf, 3, 0)));

#endif
