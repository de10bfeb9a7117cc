/*
 * fuzz_relay.c: the supervisor's parser of agent replies (forward.c) under
 * libFuzzer.  The agent runs next to model-written code as the same user,
 * so whatever answers on its socket is untrusted: status line, headers,
 * chunk sizes and bodies must never crash or overrun the supervisor.
 *
 * The input is served as the whole reply on a socketpair; the request goes
 * the other way and is ignored.
 */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../../supervisor/forward.c"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int		 init;
	struct agent_req	 r = { .method = "POST", .path = "/mcp",
	    .body = "{}", .body_len = 2 };
	struct agent_conn	 c;
	struct agent_addr	 a;
	char			 err[256], out[4096];
	int			 sp[2], cf, i;

	if (!init) {
		signal(SIGPIPE, SIG_IGN);
		init = 1;
	}
	if (size > 65536 || socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == -1)
		return 0;
	if (size > 0 && write(sp[1], data, size) != (ssize_t)size) {
		close(sp[0]);
		close(sp[1]);
		return 0;
	}
	shutdown(sp[1], SHUT_WR);
	/* The reply comes on sp[0]; a reconnect finds nobody there. */
	agent_addr_unix(&a, "/nonexistent/fuzz.sock");
	if (agent_open(&c, &a, &r, sp[0], 1000, &cf, err, sizeof(err)) == 0) {
		for (i = 0; i < 100000; i++)
			if (agent_read(&c, out, sizeof(out)) <= 0)
				break;
		(void)agent_reusable(&c);
		agent_close(&c);
	}
	close(sp[1]);
	return 0;
}
