/*
 * link.h: capability links -- signed, per user, per purpose, expiring.
 *
 * A link's token is  base64url(payload) "." base64url(mac)  where
 *
 *	payload = "v1\n" purpose "\n" user "\n" expiry "\n" path
 *	mac     = HMAC-SHA256(user key, payload)
 *	user key = HMAC-SHA256(master key, "vivarium user key\n" user)
 *
 * The supervisor holds the master key and so can check any user's links; a
 * sandbox is handed only its own user's key, so whatever it reads it can
 * mint links to its own workspace and to nobody else's.  Replacing the
 * master key revokes every link.  The checker also refuses any expiry
 * further away than its maximum lifetime, so a sandbox cannot mint a link
 * that outlives the operator's setting.
 */
#ifndef VIVARIUM_LINK_H
#define VIVARIUM_LINK_H

#include <stddef.h>
#include <time.h>

#include "buf.h"
#include "sha256.h"

#define LINK_USER_MAX	64
#define LINK_PATH_MAX	4096
#define LINK_KEY_HEX	(SHA256_LEN * 2)

enum link_purpose {
	LINK_DOWNLOAD = 'd',	/* one file, read-only */
	LINK_UPLOAD = 'u',	/* add files to the workspace */
	LINK_WORKSPACE = 'w',	/* list and read every file, and add files */
};

/* What a process can sign and check with. */
struct link_keys {
	int		 have_master;
	unsigned char	 master[SHA256_LEN];
	/* Without the master key: the one user whose key we were handed. */
	char		 user[LINK_USER_MAX + 1];
	unsigned char	 user_key[SHA256_LEN];
};

struct link {
	enum link_purpose purpose;
	char		 user[LINK_USER_MAX + 1];
	time_t		 expires;
	char		 path[LINK_PATH_MAX + 1];	/* "" unless a download */
};

enum link_check {
	LINK_OK,
	LINK_MALFORMED,		/* not a token of ours, or cut short */
	LINK_FORGED,		/* well formed, but the signature is wrong */
	LINK_EXPIRED,
	LINK_TOO_LONG,		/* expires beyond the maximum lifetime */
	LINK_OTHER_USER,	/* a user we hold no key for */
};

/*
 * The master key from path, made (32 random bytes as hex, mode 0600) when
 * the file does not exist.  A file that is not a regular file, is readable
 * by others, or does not hold a key is refused.  0, or -1 with err.
 */
int	link_keys_load(struct link_keys *, const char *path, char *err,
	    size_t errlen);
/* One user's key, as 64 hex digits (VIVARIUM_LINK_KEY).  0 or -1. */
int	link_keys_set_user(struct link_keys *, const char *user,
	    const char *hex, char *err, size_t errlen);
/* The user's key (from the master key, or the one we hold); 0 or -1. */
int	link_user_key(const struct link_keys *, const char *user,
	    unsigned char out[SHA256_LEN]);
/* The same as 64 hex digits and a NUL. */
int	link_user_key_hex(const struct link_keys *, const char *user,
	    char out[LINK_KEY_HEX + 1]);

/* Appends the token for l to out; 0, or -1 (no key for l->user, ENOSPC). */
int	link_mint(const struct link_keys *, const struct link *l,
	    struct buf *out);
/* Checks token (len bytes) at time now; fills *l on LINK_OK. */
enum link_check link_verify(const struct link_keys *, const char *token,
	    size_t len, time_t now, long max_lifetime, struct link *l);
const char *link_purpose_name(enum link_purpose);

/* len bytes as 2 * len lowercase hex digits and a NUL. */
void	hex_encode(const unsigned char *in, size_t len, char *out);
/* Percent-encodes all but A-Z a-z 0-9 - . _ ~ and (when keep_slash) '/'. */
int	url_escape(const char *, int keep_slash, struct buf *out);

#endif
