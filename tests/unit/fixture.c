/*
 * fixture.c: the shared helpers of the unit tests (see fixture.h).
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>

#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>
#include <event2/event.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "policy/policy.h"
#include "policy/secret.h"
#include "proxy/request.h"
#include "tests/unit/fixture.h"

int
fixture_tmpdir(char *dir, size_t len, const char *name)
{
	const char *tmp = getenv("TMPDIR");
	int n;

	n = snprintf(dir, len, "%s/%s.XXXXXX",
	    tmp != NULL && *tmp != '\0' ? tmp : "/tmp", name);
	if (n < 0 || (size_t)n >= len)
		return -1;
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	chmod(path, 0700);
	return remove(path);
}

int
fixture_rmtree(const char *dir)
{
	return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void
fixture_write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	if (fp == NULL || fputs(text, fp) == EOF || fclose(fp) != 0)
		fail_msg("cannot write %s", path);
}

/* --- scratch trees -------------------------------------------------------- */

static const char *tree_top;
static char pathbuf[16][PATH_MAX + 64];
static unsigned pathnext;

void
fixture_tree_top(const char *top)
{
	tree_top = top;
}

const char *
fixture_path(const char *name)
{
	char *b = pathbuf[pathnext++ % 16];

	snprintf(b, sizeof(pathbuf[0]), "%s/%s", tree_top, name);
	return b;
}

void
fixture_mkdir(const char *name)
{
	assert_int_equal(mkdir(fixture_path(name), 0755), 0);
}

void
fixture_mkfile(const char *name, const char *text)
{
	int fd = open(
	    fixture_path(name), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

int
fixture_exists(const char *path)
{
	struct stat sb;

	return lstat(path, &sb) == 0;
}

char *
fixture_cert_pem(const char *cn, long serial)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	BIO *b = BIO_new(BIO_s_mem());
	char *p, *s;
	long n;

	assert_non_null(k);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	X509_set_pubkey(x, k);
	assert_true(X509_sign(x, k, EVP_sha256()) > 0);
	assert_true(PEM_write_bio_X509(b, x));
	n = BIO_get_mem_data(b, &p);
	s = strndup(p, (size_t)n);
	assert_non_null(s);
	BIO_free(b);
	X509_free(x);
	EVP_PKEY_free(k);
	return s;
}

/* --- children -------------------------------------------------------------- */

void
fixture_child_signals(void)
{
	static const int crash[] = {SIGFPE, SIGILL, SIGSEGV, SIGBUS, SIGSYS};
	size_t i;

	for (i = 0; i < sizeof(crash) / sizeof(crash[0]); i++)
		signal(crash[i], SIG_DFL);
}

int
fixture_in_child(void (*fn)(void))
{
	pid_t pid;
	int w;

	fflush(NULL);
	if ((pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		fixture_child_signals();
		fn();
		_exit(0);
	}
	while (waitpid(pid, &w, 0) < 0)
		if (errno != EINTR)
			return -1;
	return w;
}

void
fixture_child_ok(void (*fn)(void))
{
	int w = fixture_in_child(fn);

	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
}

#if defined(__x86_64__) && defined(__LP64__)
long
fixture_int80(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("int $0x80"
	                 : "=a"(ret)
	                 : "a"(nr), "b"(a), "c"(b), "d"(c)
	                 : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

/* The child of fixture_i386_abi: getpid (20) the i386 way, no core file. */
static void
i386_abi_child(void)
{
	struct rlimit nocore = {0, 0};

	fixture_child_signals();
	setrlimit(RLIMIT_CORE, &nocore);
	_exit(fixture_int80(20, 0, 0, 0) == (long)getpid() ? 0 : 1);
}

int
fixture_i386_abi(void)
{
	pid_t pid;
	int st = 0;

	fflush(NULL);
	if ((pid = fork()) == 0)
		i386_abi_child();
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV)
		return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 1 : -1;
}
#endif

/* --- doctor rows ------------------------------------------------------------ */

const char *const fixture_kernel_features[FIXTURE_KERNEL_FEATURES] = {"userns",
    "apparmor", "namespaces", "network", "capture", "mounts", "landlock",
    "seccomp"};

/* A fabricated set: one of each status, one required failure. */
const struct doctor_result fixture_doctor_fake[FIXTURE_DOCTOR_FAKE] = {
    {"userns", 1, DOCTOR_YES, "unshare(CLONE_NEWUSER) and uid/gid maps work",
        ""},
    {"network", 1, DOCTOR_NO, "bringing lo up: socket: Operation not permitted",
        "an outer seccomp filter or LSM may refuse netlink sockets: allow "
        "socket(AF_NETLINK)"},
    {"landlock", 0, DOCTOR_PARTIAL, "landlock_restrict_self: EPERM",
        "boot with lsm=landlock"},
};

void
fixture_doctor_well_formed(const struct doctor_result *r)
{
	assert_non_null(r->feature);
	assert_true(r->status == DOCTOR_YES || r->status == DOCTOR_PARTIAL ||
	    r->status == DOCTOR_NO);
	assert_non_null(memchr(r->detail, '\0', sizeof(r->detail)));
	assert_non_null(memchr(r->advice, '\0', sizeof(r->advice)));
	assert_true(r->detail[0] != '\0');
	/* Whatever fails says what to do about it. */
	if (r->status != DOCTOR_YES && r->required)
		assert_true(r->advice[0] != '\0');
}

void
fixture_doctor_yes(const struct doctor_result *r)
{
	fixture_doctor_well_formed(r);
	if (r->status != DOCTOR_YES)
		fail_msg("%s: %s: %s (advice: %s)", r->feature,
		    doctor_status_name(r->status), r->detail, r->advice);
}

/* --- policies ---------------------------------------------------------------- */

void
fixture_diag(void *arg, const struct policy_diag *d)
{
	size_t *nerr = arg;

	if (d->warning)
		return;
	(*nerr)++;
	fprintf(stderr, "  %s:%u:%u: %s\n", d->file ? d->file : "-", d->line,
	    d->col, d->msg);
}

static void
on_report(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "  %s\n", msg);
}

struct policy *
fixture_policy(const char *text, int secrets)
{
	return fixture_policy_as("p.conf", text, secrets);
}

struct policy *
fixture_policy_as(const char *name, const char *text, int secrets)
{
	struct policy *p = NULL;
	size_t nerr = 0;

	if (policy_load_string(
	        name, text, strlen(text), fixture_diag, &nerr, &p) != 0 ||
	    nerr != 0)
		fail_msg("policy does not load:\n%s", text);
	if (secrets &&
	    secret_store_load(policy_secrets(p), on_report, NULL) != 0)
		fail_msg("secrets do not load:\n%s", text);
	return p;
}

/* --- the proxy core ------------------------------------------------------ */

static void
on_denied(void *arg, const char *host, unsigned port)
{
	struct fixture_proxy *f = arg;

	(void)host;
	(void)port;
	f->denied++;
}

static void
on_ended(void *arg, void *owner)
{
	struct fixture_proxy *f = arg;

	(void)owner;
	f->ended++;
}

/* A proxy_policy holding TEXT, with "@PORT@" the upstream's port. */
struct proxy_policy *
fixture_proxy_policy(struct fixture_proxy *f, const char *text)
{
	struct proxy_policy *pp = calloc(1, sizeof(*pp));
	char buf[1024], *at;

	assert_non_null(pp);
	snprintf(buf, sizeof(buf), "%s", text);
	while ((at = strstr(buf, "@PORT@")) != NULL) {
		char rest[1024];

		snprintf(rest, sizeof(rest), "%s", at + 6);
		snprintf(at, sizeof(buf) - (size_t)(at - buf), "%u%s", f->port,
		    rest);
	}
	pp->p = fixture_policy(buf, 0);
	pp->refs = 1;
	return pp;
}

static void
nonblock(int fd)
{
	assert_int_equal(
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

int
fixture_listen(uint16_t *port)
{
	struct sockaddr_in sin = {0};
	socklen_t len = sizeof(sin);
	int fd;

	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    listen(fd, 8) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) != 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

int
fixture_proxy_setup(void **state)
{
	struct fixture_proxy *f = calloc(1, sizeof(*f));

	if (f == NULL || (f->base = event_base_new()) == NULL)
		return -1;
	*state = f;
	f->cfd = f->ufd = -1;
	if ((f->lfd = fixture_listen(&f->port)) < 0)
		return -1;
	nonblock(f->lfd);
	f->ctx.base = f->base;
	f->ctx.run_id = "test";
	TAILQ_INIT(&f->ctx.sessions);
	session_shared_init(&f->shared, 1 << 20, 64 << 20);
	f->ctx.shared = &f->shared;
	f->ctx.ended = on_ended;
	f->ctx.ended_arg = f;
	f->ctx.denied = on_denied;
	f->ctx.denied_arg = f;
	f->ctx.policy = fixture_proxy_policy(f,
	    "resolve up.test 127.0.0.1\n"
	    "allow up.test:@PORT@ { private }\n");
	return 0;
}

int
fixture_proxy_teardown(void **state)
{
	struct fixture_proxy *f = *state;

	session_close_all(&f->ctx);
	if (f->ctx.policy != NULL) {
		policy_free(f->ctx.policy->p);
		free(f->ctx.policy);
	}
	if (f->cfd >= 0)
		close(f->cfd);
	if (f->ufd >= 0)
		close(f->ufd);
	close(f->lfd);
	event_base_free(f->base);
	free(f);
	return 0;
}

/* Starts a session on a new socketpair; the client keeps one end. */
void
fixture_client(struct fixture_proxy *f)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	nonblock(sv[0]);
	nonblock(sv[1]);
	f->cfd = sv[0];
	assert_non_null(request_new(&f->ctx, sv[1], 1, PROXY_VIA_PROXY));
}

void
fixture_get(struct fixture_proxy *f, const char *path, const char *headers)
{
	char req[512];

	snprintf(req, sizeof(req),
	    "GET http://up.test:%u%s HTTP/1.1\r\nHost: up.test\r\n%s\r\n",
	    f->port, path, headers);
	f->nugot = 0;
	f->ugot[0] = '\0';
	fixture_send(f->cfd, req);
	f->want = "\r\n\r\n";
	assert_true(fixture_pump(f, fixture_upstream_has));
}

void
fixture_send(int fd, const char *s)
{
	size_t n = strlen(s);

	assert_int_equal(write(fd, s, n), (ssize_t)n);
}

/* Reads what is there from FD into BUF (at *N); sets *EOF at its end. */
static void
drain(int fd, char *buf, size_t *n, size_t max, int *eof)
{
	ssize_t r = -1;

	if (fd < 0 || *eof)
		return;
	while (*n < max - 1 && (r = read(fd, buf + *n, max - 1 - *n)) > 0)
		*n += (size_t)r;
	if (r == 0)
		*eof = 1;
	buf[*n] = '\0';
}

int64_t
fixture_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Runs the loop, accepting the upstream connection and reading both
 * ends, until DONE(F) or two seconds pass.  Returns DONE(F).
 */
int
fixture_pump(struct fixture_proxy *f, int (*done)(struct fixture_proxy *))
{
	int64_t end = fixture_now_ms() + 2000;

	while (!done(f) && fixture_now_ms() < end) {
		event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		if (f->ufd < 0 && (f->ufd = accept(f->lfd, NULL, NULL)) >= 0)
			nonblock(f->ufd);
		drain(f->cfd, f->got, &f->ngot, sizeof(f->got), &f->ceof);
		drain(f->ufd, f->ugot, &f->nugot, sizeof(f->ugot), &f->ueof);
		usleep(1000);
	}
	return done(f);
}

int
fixture_client_head(struct fixture_proxy *f)
{
	return strstr(f->got, "\r\n\r\n") != NULL || f->ceof;
}

int
fixture_client_eof(struct fixture_proxy *f)
{
	return f->ceof;
}

int
fixture_no_session(struct fixture_proxy *f)
{
	return f->ctx.nsessions == 0;
}

int
fixture_client_has(struct fixture_proxy *f)
{
	return strstr(f->got, f->want) != NULL || f->ceof;
}

int
fixture_upstream_has(struct fixture_proxy *f)
{
	return strstr(f->ugot, f->want) != NULL || f->ueof;
}

int
fixture_upstream_eof(struct fixture_proxy *f)
{
	return f->ueof;
}

/* Opens a CONNECT tunnel to up.test and checks the 200. */
void
fixture_tunnel(struct fixture_proxy *f)
{
	char req[128];

	fixture_client(f);
	snprintf(req, sizeof(req),
	    "CONNECT up.test:%u HTTP/1.1\r\nHost: up.test\r\n\r\n", f->port);
	fixture_send(f->cfd, req);
	assert_true(fixture_pump(f, fixture_client_head));
	assert_string_equal(
	    f->got, "HTTP/1.1 200 Connection established\r\n\r\n");
	f->ngot = 0;
	f->got[0] = '\0';
	assert_true(f->ufd >= 0);
}

void
fixture_proxy_use(struct fixture_proxy *f, const char *text)
{
	struct proxy_policy *old = f->ctx.policy;

	f->ctx.policy = fixture_proxy_policy(f, text);
	policy_free(old->p);
	free(old);
}
