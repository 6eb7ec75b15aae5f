/*
 * fixture.h: what several unit tests need and used to copy: a scratch
 * directory under $TMPDIR (or /tmp) and its removal, files written into
 * it, a policy loaded from a string with its secrets' values, and the
 * proxy core between a socketpair and a loopback upstream.  Linked
 * into every unit test (ph_unit_test in CMakeLists.txt).
 */
#ifndef PH_TEST_FIXTURE_H
#define PH_TEST_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/session.h"

struct policy;

/*
 * Makes a new directory NAME.XXXXXX under $TMPDIR (or /tmp) and writes its
 * path into DIR (LEN bytes).  Returns 0, or -1 (for cmocka's setup).
 */
int fixture_tmpdir(char *dir, size_t len, const char *name);

/*
 * Removes DIR and everything below it, each entry made writable first
 * (a test may leave one that is not).  Returns nftw's result.
 */
int fixture_rmtree(const char *dir);

/* Writes TEXT to PATH (created or truncated); fails the test if it can't. */
void fixture_write_file(const char *path, const char *text);

/*
 * Loads the policy TEXT (named "p.conf" in messages) and, with SECRETS,
 * its secrets' values; an error fails the test, after printing what the
 * parser said.
 */
struct policy *fixture_policy(const char *text, int secrets);

/*
 * The proxy core under test, with no network: a session context on its
 * own libevent base, the client one end of a socketpair handed to
 * request_new(), and the upstream a listener on 127.0.0.1 that the
 * policy's "resolve up.test 127.0.0.1" line names (the static resolver:
 * no DNS).  The default policy allows up.test at the listener's port.
 */
struct fixture_proxy {
	struct event_base *base;
	struct session_ctx ctx;
	int lfd; /* the upstream's listener */
	uint16_t port;
	int cfd; /* the client's end */
	int ufd; /* the upstream's accepted end, or -1 */
	char got[8192]; /* what the client read */
	size_t ngot;
	char ugot[8192]; /* what the upstream read */
	size_t nugot;
	unsigned denied, ended;
	int ceof, ueof;
	const char *want; /* for fixture_client_has, fixture_upstream_has */
};

/* cmocka setup and teardown of a struct fixture_proxy in *STATE. */
int fixture_proxy_setup(void **state);
int fixture_proxy_teardown(void **state);

/* A proxy_policy (refs 1) of TEXT, each "@PORT@" the listener's port. */
struct proxy_policy *
fixture_proxy_policy(struct fixture_proxy *f, const char *text);

/* Makes TEXT the context's policy (no session may hold the old one). */
void fixture_proxy_use(struct fixture_proxy *f, const char *text);

/* Starts a session on a new socketpair; f->cfd is the client's end. */
void fixture_client(struct fixture_proxy *f);

/* Writes all of S to FD (a socket with room for it). */
void fixture_send(int fd, const char *s);

/* Milliseconds of CLOCK_MONOTONIC. */
int64_t fixture_now_ms(void);

/*
 * Runs the loop, accepting the upstream connection (f->ufd) and reading
 * both ends into f->got and f->ugot, until DONE(F) or two seconds pass.
 * Returns DONE(F).
 */
int fixture_pump(struct fixture_proxy *f, int (*done)(struct fixture_proxy *));

/* Conditions for fixture_pump(); the _has ones look for f->want. */
int fixture_client_head(struct fixture_proxy *f);
int fixture_client_eof(struct fixture_proxy *f);
int fixture_no_session(struct fixture_proxy *f);
int fixture_client_has(struct fixture_proxy *f);
int fixture_upstream_has(struct fixture_proxy *f);
int fixture_upstream_eof(struct fixture_proxy *f);

/* Opens a CONNECT tunnel to up.test through a new session; checks the 200. */
void fixture_tunnel(struct fixture_proxy *f);

#endif /* PH_TEST_FIXTURE_H */
