/*
 * ev.c: sockets in this thread's epoll set.  loop.c makes the set, waits
 * on it and calls each ready ev's callback; the owners of the sockets say
 * here which events they want.  Nothing here calls back into the loop or
 * the relay, so relay code runs in a unit test with an epoll set of the
 * test's own.
 */
#include <sys/epoll.h>

#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "egress.h"
#include "log.h"
#include "banned.h"

_Thread_local int ev_epfd = -1;
_Thread_local uint64_t ev_turn;

uint64_t
now_ms(void)
{
	return (uint64_t)(clock_mono() * 1000);
}

void
ev_set(struct ev *ev, uint32_t mask)
{
	struct epoll_event e;

	if (ev->fd < 0 || (ev->reg && ev->mask == mask))
		return;
	memset(&e, 0, sizeof(e));
	e.events = mask;
	e.data.ptr = ev;
	if (epoll_ctl(ev_epfd, ev->reg ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, ev->fd,
	    &e) == -1) {
		log_warn("epoll_ctl fd %d", ev->fd);
		return;
	}
	if (!ev->reg)
		ev->added = ev_turn;
	ev->reg = 1;
	ev->mask = mask;
}

void
ev_dispatch(const struct epoll_event *evs, int n)
{
	int	 i;

	ev_turn++;
	for (i = 0; i < n; i++) {
		struct ev *ev = evs[i].data.ptr;

		/* A connection that replaced its upstream socket during this
		 * batch (a kept-alive client asking for another target, a
		 * retry) reuses the same ev: an event still in the batch for
		 * it was the closed socket's, and the new one, possibly on the
		 * same fd number, did not exist when epoll_wait returned. */
		if (ev->reg && ev->added == ev_turn)
			continue;
		ev->cb(ev, evs[i].events);
	}
}

void
ev_close(struct ev *ev)
{
	if (ev->fd < 0)
		return;
	/* close() drops the fd from the epoll set. */
	close(ev->fd);
	ev->fd = -1;
	ev->reg = 0;
	ev->mask = 0;
}
