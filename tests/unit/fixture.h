/*
 * fixture.h: what several unit tests need and used to copy: a scratch
 * directory under $TMPDIR (or /tmp) and its removal, files and trees
 * written into it, checks in a forked child, a self-signed certificate,
 * a loopback listener, a policy loaded from a string with its secrets'
 * values, the rows of pinhole doctor, and the proxy core between a
 * socketpair and a loopback upstream.  Linked into every unit test
 * (ph_unit_test in CMakeLists.txt).
 */
#ifndef PH_TEST_FIXTURE_H
#define PH_TEST_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <errno.h>

#include "netns/doctor.h"
#include "proxy/session.h"

struct policy;

/*
 * In a child (cmocka's asserts do not cross a fork): ends it with status
 * 1 when C is false, saying which check and errno.
 */
#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "%s:%d: %s (errno: %s)\n", __FILE__,   \
			    __LINE__, #c, strerror(errno));                    \
			_exit(1);                                              \
		}                                                              \
	} while (0)

/*
 * In a forked child: crash signals back to their default action.  The
 * test's process has cmocka's handlers, which would otherwise take the
 * child back into the test runner (running the next tests and the
 * group's teardown there, which removes the shared directory).
 */
void fixture_child_signals(void);

/* Runs FN in a forked child; returns its wait status, or -1. */
int fixture_in_child(void (*fn)(void));

/* Runs FN in a forked child; fails the test unless it exits 0. */
void fixture_child_ok(void (*fn)(void));

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
 * A scratch tree: fixture_tree_top() names its top, and the rest take
 * paths relative to it.  fixture_path returns TOP/NAME in one of 16
 * static buffers (enough for the paths of one check).
 */
void fixture_tree_top(const char *top);
const char *fixture_path(const char *name);
/* Makes the directory NAME (0755), or the file NAME (0644, new) with TEXT. */
void fixture_mkdir(const char *name);
void fixture_mkfile(const char *name, const char *text);

/* Is there an entry at PATH (a dangling link counts)? */
int fixture_exists(const char *path);

/*
 * A self-signed EC (P-256) X.509 v3 certificate for CN with SERIAL, valid
 * for an hour, as PEM text (malloc'd).  Fails the test if it can't.
 */
char *fixture_cert_pem(const char *cn, long serial);

/*
 * A TCP listener on 127.0.0.1 at a port the kernel picks, written to
 * *PORT.  Returns its descriptor, or -1.
 */
int fixture_listen(uint16_t *port);

/*
 * Loads the policy TEXT (named "p.conf" in messages) and, with SECRETS,
 * its secrets' values; an error fails the test, after printing what the
 * parser said.
 */
struct policy *fixture_policy(const char *text, int secrets);

/* The same, named NAME in messages. */
struct policy *
fixture_policy_as(const char *name, const char *text, int secrets);

/*
 * A policy_diag_fn: prints an error (not a warning) to stderr and counts
 * it in *(size_t *)ARG.
 */
struct policy_diag;
void fixture_diag(void *arg, const struct policy_diag *d);

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
	struct session_shared shared; /* ctx's: 1 MiB of heads, 64 MiB */
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

/* A cmocka test FN on a fresh struct fixture_proxy. */
#define FIXTURE_PROXY_TEST(fn)                                                 \
	cmocka_unit_test_setup_teardown(                                       \
	    fn, fixture_proxy_setup, fixture_proxy_teardown)

/* A proxy_policy (refs 1) of TEXT, each "@PORT@" the listener's port. */
struct proxy_policy *
fixture_proxy_policy(struct fixture_proxy *f, const char *text);

/* Makes TEXT the context's policy (no session may hold the old one). */
void fixture_proxy_use(struct fixture_proxy *f, const char *text);

/* Starts a session on a new socketpair; f->cfd is the client's end. */
void fixture_client(struct fixture_proxy *f);

/*
 * Sends "GET http://up.test:PORT" PATH, with HEADERS (each ending in
 * CRLF, or "") after the Host line, on the client's end, and runs the
 * loop until the upstream has read the whole head (f->ugot, emptied
 * first).
 */
void
fixture_get(struct fixture_proxy *f, const char *path, const char *headers);

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

/* The kernel probes of pinhole doctor, in the order it prints them. */
#define FIXTURE_KERNEL_FEATURES 8
extern const char *const fixture_kernel_features[FIXTURE_KERNEL_FEATURES];

/* A fabricated set of doctor rows: one of each status, one required failure. */
#define FIXTURE_DOCTOR_FAKE 3
extern const struct doctor_result fixture_doctor_fake[FIXTURE_DOCTOR_FAKE];

/*
 * Fails the test unless R is a well-formed doctor row: a known status,
 * terminated texts, a detail, and advice wherever a required row fails.
 */
void fixture_doctor_well_formed(const struct doctor_result *r);

/* ...and says "yes" (else the failure quotes the row). */
void fixture_doctor_yes(const struct doctor_result *r);

#if defined(__x86_64__) && defined(__LP64__)
/* An i386 system call from this 64-bit process.  Returns -errno or >= 0. */
long fixture_int80(long nr, long a, long b, long c);

/*
 * Is there an i386 ABI?  Asked in a child (getpid through int $0x80): 1 it
 * works, 0 it kills the caller with SIGSEGV (a kernel without IA32
 * emulation, where no i386 call can escape anything), -1 neither (an
 * unexpected answer: the caller fails).  Under a filter, the child has it.
 */
int fixture_i386_abi(void);

#define FIXTURE_I386_ABSENT                                                    \
	"i386 ABI: absent (the kernel has no IA32 emulation): int $0x80 "      \
	"kills "                                                               \
	"the caller"
#endif

#endif /* PH_TEST_FIXTURE_H */
