/*
 * fileweb.h: the web side of file links -- what a person's browser sees.
 *
 * One implementation serves the links (link.h) wherever they are served:
 * by the supervisor for per-user sandboxes and by the standalone agent on
 * its own port.  It checks the link, renders the pages (upload, workspace,
 * refusals), sets every security header, parses multipart uploads as they
 * stream in, and leaves the files themselves to a backend: the agent's own
 * workspace code, or a relay to the agent's unix socket.  The backend
 * never decides a header or writes a byte of HTML, so an agent the sandbox
 * has replaced cannot make our origin run a script.
 *
 *	GET  /f/<token>/<name>		a download link: one file, attachment
 *	GET  /up/<token>		an upload page; POST: multipart, field "file"
 *	GET  /ws/<token>		the workspace page; POST: as /up/
 *	GET  /ws/<token>/file/<path>	a file from it, attachment
 *	GET  /ws/<token>/view/<path>	an image from it, inline (PNG, JPEG, GIF, WebP)
 */
#ifndef VIVARIUM_FILEWEB_H
#define VIVARIUM_FILEWEB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>
#include <microhttpd.h>

#include "berr.h"
#include "link.h"

/*
 * A file being read: a descriptor (MHD sends it with sendfile), or a
 * reader.  With a descriptor, close (if set) is called with cookie once
 * the request is over: a backend holds what the file needs until then.
 */
struct fw_reader {
	int		 fd;		/* >= 0: owned, closed by the response */
	uint64_t	 size;
	void		*cookie;
	ssize_t		(*read)(void *cookie, char *dst, size_t max);
	void		(*close)(void *cookie);
};

/*
 * The most the workspace page reads of a listing, as JSON: a relay
 * refuses a longer answer (a sandbox writes it), and the agent stops its
 * listing (marked truncated) before it would be this long.
 */
#define FW_LIST_MAX	(1u << 20)

/*
 * What a backend does for the pages.  It says what went wrong in a struct
 * berr (berr.h): status, the HTTP status of the page, and msg, a sentence
 * for whoever holds the link; cause is not used.
 */
struct fw_backend {
	/* The workspace file at path (checked as read_text_file checks it). */
	int	(*open)(void *arg, const char *user, const char *path,
		    struct fw_reader *, struct berr *);
	/* New {"files": [{"path", "size", "mtime"}...], "truncated": bool},
	 * under FW_LIST_MAX bytes as JSON. */
	json_t	*(*list)(void *arg, const char *user, struct berr *);
	/*
	 * One uploaded file, name already cleaned (fw_clean_name).  begin
	 * returns a handle (NULL with the error); end puts the file in place
	 * and returns new {"name", "path", "size", "renamed"}, or NULL; the
	 * handle is gone after end or abort.  Nothing is in the workspace
	 * until end succeeds.
	 */
	void	*(*put_begin)(void *arg, const char *user, const char *name,
		    struct berr *);
	int	(*put_write)(void *h, const char *data, size_t len,
		    struct berr *);
	json_t	*(*put_end)(void *h, struct berr *);
	void	(*put_abort)(void *h);
	void	*arg;
};

struct fileweb {
	const struct link_keys	*keys;
	const struct fw_backend	*be;
	long			 max_lifetime;	/* seconds; longer links refused */
	unsigned long long	 upload_max;	/* bytes per upload request */
	/* Once an upload's body is in, the connection may be silent this
	 * long while the backend puts the files in place (http_guard_trust;
	 * 0: leave its timeout). */
	unsigned		 work_timeout;
};

/* 1 when url is one of the routes above (then fileweb_access answers). */
int	fileweb_match(const char *url);
/* An MHD access handler for those routes; owns *con_cls through http.h. */
enum MHD_Result fileweb_access(const struct fileweb *,
	    struct MHD_Connection *, const char *url, const char *method,
	    const char *upload_data, size_t *upload_data_size, void **con_cls);

/*
 * An uploaded file's name made safe for the workspace's top level: the part
 * after the last / or \, without control characters (C0, DEL, C1),
 * invisible ones (bidi controls, zero-width characters, the BOM: every
 * format character, unicode_invisible in text.h), invalid UTF-8 (each bad
 * byte becomes '_'), leading dots and blanks or trailing dots and blanks;
 * at most 200 bytes (cut on a character boundary, the extension kept);
 * "upload" when nothing is left.  Unicode letters are kept.
 */
void	fw_clean_name(const char *in, char *out, size_t outlen);
/*
 * Writes a piece of an upload to fd, the temporary file it is saved in,
 * and counts it in *written: refused past max (413), short writes retried,
 * a full disk or quota a 507 a user can act on.  Every FW_FLUSH_AHEAD
 * bytes the kernel is asked to start writing them out (not waited for).
 */
#define FW_FLUSH_AHEAD	(8u << 20)
int	fw_upload_write(int fd, const char *name, const char *data, size_t len,
	    unsigned long long *written, unsigned long long max, struct berr *e);
/* The Content-Type for a file name, by its extension. */
const char *fw_content_type(const char *name);
/* 1 for the image types shown inline on the workspace page. */
int	fw_previewable(const char *name);

#endif
