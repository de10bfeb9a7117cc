/*
 * tarown.h: a tar on its way into a sandbox's workspace (vivariumctl
 * import), checked as it passes and given to the sandbox's user.
 */
#ifndef VIVARIUM_TAROWN_H
#define VIVARIUM_TAROWN_H

#include <sys/types.h>

struct tarown {
	int			 fd;
	char			 head[512];	/* read before anything changed */
	size_t			 headoff;
	unsigned long long	 pos;		/* bytes passed on so far */
	unsigned long long	 next;		/* where the next header starts */
	char			 block[512];	/* the header being collected */
	int			 zeros;		/* zero blocks in a row */
	int			 ended;
	unsigned long long	 pax_end;	/* PAX records run to here */
	unsigned int		 uid, gid;	/* the owner every member gets */
	char			 err[160];
};

/*
 * Reads the first header from fd and checks it, before anything is made
 * for the import: 0, or -1 with t->err (not a tar, or a read error).
 * Every member will be owned by uid:gid.
 */
int	tarown_open(struct tarown *t, int fd, unsigned int uid,
	    unsigned int gid);
/*
 * The stream for the backend's import (a source callback): up to len
 * bytes into dst, in whole 512-byte blocks but at the end; 0 at the end
 * of the archive, -1 with t->err when the input is corrupt, cut off or
 * unreadable.
 */
ssize_t	tarown_source(void *t, char *dst, size_t len);

#endif
