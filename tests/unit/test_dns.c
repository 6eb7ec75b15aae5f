/*
 * test_dns.c: proxy/dns.c against a real dnsmasq.
 *
 * The group setup starts dnsmasq on 127.0.0.1 at a free high port, with
 * --no-resolv --no-hosts and records of its own, so that no query leaves
 * loopback, and waits until it answers a raw query.  A missing or broken
 * dnsmasq fails the whole group loudly (it is needed, not optional).  The
 * "silent" servers of the timeout cases are bound UDP sockets that nobody
 * reads.  Every loop run is bounded by a guard timer, so a bug fails a
 * test instead of hanging it.
 *
 * Records: a.test 127.0.0.1; dual.test 127.0.0.2 127.0.0.3 ::1 ::3;
 * v6only.test ::2; txtonly.test TXT only; short.test 127.0.0.5 TTL 1 s;
 * many.test 20 IPv4; big.test 120 IPv4, too many for one UDP answer
 * (c-ares retries over TCP); any other *.test is NXDOMAIN (--local); a name
 * outside .test is REFUSED (no upstream).  TTL 60 s unless said.
 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
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

#include <cmocka.h>
#include <event2/event.h>

#define DNS_INTERNAL
#include "proxy/dns.h"
#include "tests/unit/fixture.h"

#define TIMEOUT_MS 2000 /* resolver against dnsmasq */
#define GUARD_MS 5000 /* no single wait in a test may take longer */
#define START_MS 5000 /* dnsmasq start-up */
#define MAXARGS 256

struct fixture {
	struct event_base *base;
	struct dns *dns;
};

struct answer {
	int calls;
	enum dns_status status;
	size_t n;
	struct dns_addr addrs[DNS_ADDRS_MAX];
	struct dns *free_dns; /* dns_free() this from the callback */
	struct dns *dns; /* resolve_again: the resolver */
	int left; /* resolve_again: how many more */
};

static char tmpdir[PATH_MAX];
static char servers[64];
static pid_t dnsmasq_pid = -1;
static int guard_fired;

/* ---- helpers ------------------------------------------------------- */

static void
record(
    void *arg, enum dns_status status, const struct dns_addr *addrs, size_t n)
{
	struct answer *a = arg;

	assert_true(n <= DNS_ADDRS_MAX);
	a->calls++;
	a->status = status;
	a->n = n;
	memcpy(a->addrs, addrs, n * sizeof(*addrs));
	if (a->free_dns != NULL)
		dns_free(a->free_dns);
}

static void
on_guard(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	guard_fired = 1;
	event_base_loopbreak(arg);
}

static int
answered(const void *arg)
{
	const struct answer *a = arg;

	return a->calls > 0;
}

static int
cached(const void *arg)
{
	return dns_cache_count(arg) > 0;
}

static int
never(const void *arg)
{
	(void)arg;
	return 0;
}

/* Runs the loop until DONE(ARG), or for MS; returns 1 if DONE. */
static int
run(struct event_base *base, int (*done)(const void *), const void *arg,
    unsigned ms)
{
	struct event *guard;
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	int ok;

	guard = evtimer_new(base, on_guard, base);
	assert_non_null(guard);
	guard_fired = 0;
	evtimer_add(guard, &tv);
	while (!(ok = done(arg)) && !guard_fired)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(guard);
	return ok;
}

static void
wait_answer(struct event_base *base, const struct answer *a)
{
	if (!run(base, answered, a, GUARD_MS))
		fail_msg("no answer within %d ms", GUARD_MS);
}

static void
resolve(struct fixture *f, const char *host, struct answer *a)
{
	assert_non_null(dns_resolve(f->dns, host, record, a));
	assert_int_equal(a->calls, 0); /* never from inside dns_resolve */
}

static void
assert_addr(const struct dns_addr *a, const char *text)
{
	uint8_t buf[16];
	int family = strchr(text, ':') != NULL ? 6 : 4;

	assert_int_equal(
	    inet_pton(family == 4 ? AF_INET : AF_INET6, text, buf), 1);
	assert_int_equal(a->family, family);
	assert_memory_equal(a->addr, buf, family == 4 ? 4 : 16);
}

/* A bound UDP socket on 127.0.0.1 that nobody reads. */
static int
silent_server(char *csv, size_t len)
{
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	int fd;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &slen), 0);
	snprintf(csv + strlen(csv), len - strlen(csv), "%s127.0.0.1:%u",
	    csv[0] != '\0' ? "," : "", ntohs(sin.sin_port));
	return fd;
}

/* ---- dnsmasq ------------------------------------------------------- */

/* A port that was free for UDP a moment ago; dnsmasq may still lose it. */
static unsigned
free_port(void)
{
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	int fd;

	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return 0;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &slen) == -1)
		sin.sin_port = 0;
	close(fd);
	return ntohs(sin.sin_port);
}

/* Sends a raw A query for a.test; returns 1 if answered within 100 ms. */
static int
ping(unsigned port)
{
	static const uint8_t query[] = {0x70, 0x68, 0x01, 0x00, 0, 1, 0, 0, 0,
	    0, 0, 0, 1, 'a', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1};
	struct sockaddr_in sin;
	struct pollfd pfd;
	uint8_t buf[512];
	ssize_t n = -1;
	int fd;

	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return 0;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	pfd.fd = fd;
	pfd.events = POLLIN;
	if (sendto(fd, query, sizeof(query), 0, (struct sockaddr *)&sin,
	        sizeof(sin)) == (ssize_t)sizeof(query) &&
	    poll(&pfd, 1, 100) == 1)
		n = recv(fd, buf, sizeof(buf), 0);
	close(fd);
	return n >= 12 && buf[0] == query[0] && buf[1] == query[1] &&
	    (buf[2] & 0x80) != 0;
}

static void add_arg(char **, size_t *, const char *, ...)
    __attribute__((format(printf, 3, 4)));

static void
add_arg(char **argv, size_t *argc, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		s = NULL;
	va_end(ap);
	if (s == NULL || *argc + 1 >= MAXARGS)
		abort();
	argv[(*argc)++] = s;
	argv[*argc] = NULL;
}

static size_t
dnsmasq_args(char **argv, unsigned port)
{
	static const char *const fixed[] = {"-k", "--no-resolv", "--no-hosts",
	    "--listen-address=127.0.0.1", "--bind-interfaces",
	    "--conf-file=/dev/null", "--log-facility=-", "--local=/test/",
	    "--local-ttl=60", "--host-record=a.test,127.0.0.1",
	    "--host-record=dual.test,127.0.0.2,::1",
	    "--host-record=dual.test,127.0.0.3,::3",
	    "--host-record=v6only.test,::2", "--txt-record=txtonly.test,hi",
	    "--host-record=short.test,127.0.0.5,1"};
	struct passwd *pw = getpwuid(geteuid());
	size_t argc = 0, i;

	add_arg(argv, &argc, "dnsmasq");
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		add_arg(argv, &argc, "%s", fixed[i]);
	add_arg(argv, &argc, "--port=%u", port);
	add_arg(argv, &argc, "--pid-file=%s/dnsmasq.pid", tmpdir);
	/* As root, dnsmasq would switch to user "dnsmasq" or "nobody". */
	if (pw != NULL)
		add_arg(argv, &argc, "--user=%s", pw->pw_name);
	for (i = 1; i <= 20; i++)
		add_arg(argv, &argc, "--host-record=many.test,127.0.1.%zu", i);
	for (i = 1; i <= 120; i++)
		add_arg(argv, &argc, "--host-record=big.test,127.0.2.%zu", i);
	return argc;
}

/* In the child: dnsmasq's output to a log file, dies with the test. */
static void
exec_dnsmasq(char **argv, const char *log)
{
	const char *bin = getenv("DNSMASQ");
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if ((fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600)) != -1) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
	}
	if (bin != NULL)
		execv(bin, argv);
	else {
		execvp("dnsmasq", argv);
		execv("/usr/sbin/dnsmasq", argv);
	}
	fprintf(stderr, "exec dnsmasq: %s\n", strerror(errno));
	_exit(127);
}

static void
show_log(const char *log)
{
	char line[512];
	FILE *fp;

	if ((fp = fopen(log, "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), fp) != NULL)
		fprintf(stderr, "  dnsmasq: %s", line);
	fclose(fp);
}

/* Returns 1 once dnsmasq answers, 0 if it died, -1 if it never answered. */
static int
wait_dnsmasq(pid_t pid, unsigned port, int *wstatus)
{
	int64_t deadline = fixture_now_ms() + START_MS;

	while (fixture_now_ms() < deadline) {
		if (waitpid(pid, wstatus, WNOHANG) == pid)
			return 0;
		if (ping(port))
			return 1;
	}
	return -1;
}

/* Starts dnsmasq on PORT; returns 1 if it answers, 0 to try another port. */
static int
start_dnsmasq(unsigned port)
{
	char *argv[MAXARGS], log[PATH_MAX + 16];
	size_t argc, i;
	int r, wstatus = 0;
	pid_t pid;

	snprintf(log, sizeof(log), "%s/dnsmasq.log", tmpdir);
	argc = dnsmasq_args(argv, port);
	if ((pid = fork()) == 0)
		exec_dnsmasq(argv, log);
	for (i = 0; i < argc; i++)
		free(argv[i]);
	if (pid == -1)
		fail_msg("fork: %s", strerror(errno));
	if ((r = wait_dnsmasq(pid, port, &wstatus)) == 1) {
		dnsmasq_pid = pid;
		return 1;
	}
	if (r == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	show_log(log);
	if (r == 0 && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127)
		fail_msg("dnsmasq is missing: these tests need it "
		         "(apt-get install dnsmasq, or set DNSMASQ=path)");
	return 0;
}

static int
group_setup(void **state)
{
	const char *t = getenv("TMPDIR");
	unsigned port = 0;
	int tries;

	(void)state;
	if (t == NULL || *t == '\0')
		t = "/tmp";
	snprintf(tmpdir, sizeof(tmpdir), "%s/test_dns.XXXXXX", t);
	if (mkdtemp(tmpdir) == NULL)
		fail_msg("mkdtemp %s: %s", tmpdir, strerror(errno));
	for (tries = 0; tries < 5; tries++)
		if ((port = free_port()) != 0 && start_dnsmasq(port))
			break;
	if (dnsmasq_pid == -1)
		fail_msg("dnsmasq did not start on 127.0.0.1 (log above)");
	snprintf(servers, sizeof(servers), "127.0.0.1:%u", port);
	return 0;
}

static int
group_teardown(void **state)
{
	char path[PATH_MAX + 16];
	int64_t deadline = fixture_now_ms() + 2000;

	(void)state;
	if (dnsmasq_pid != -1) {
		kill(dnsmasq_pid, SIGTERM);
		while (waitpid(dnsmasq_pid, NULL, WNOHANG) == 0) {
			if (fixture_now_ms() > deadline)
				kill(dnsmasq_pid, SIGKILL);
			poll(NULL, 0, 10);
		}
	}
	snprintf(path, sizeof(path), "%s/dnsmasq.pid", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/dnsmasq.log", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	return 0;
}

static int
setup(void **state)
{
	struct fixture *f;
	char err[256];

	f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->base = event_base_new();
	assert_non_null(f->base);
	f->dns = dns_new(f->base, servers, TIMEOUT_MS, err, sizeof(err));
	if (f->dns == NULL)
		fail_msg("dns_new: %s", err);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	dns_free(f->dns);
	event_base_free(f->base);
	free(f);
	return 0;
}

/* ---- answers ------------------------------------------------------- */

static void
test_a(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0};

	resolve(f, "a.test", &a);
	wait_answer(f->base, &a);
	assert_int_equal(a.calls, 1);
	assert_int_equal(a.status, DNS_OK);
	assert_int_equal(a.n, 1);
	assert_addr(&a.addrs[0], "127.0.0.1");
	assert_int_equal(dns_lookup_count(f->dns), 1);
}

static void
test_dual_stack_order(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0};

	resolve(f, "dual.test", &a);
	wait_answer(f->base, &a);
	assert_int_equal(a.status, DNS_OK);
	assert_int_equal(a.n, 4);
	assert_int_equal(a.addrs[0].family, 4);
	assert_int_equal(a.addrs[1].family, 4);
	assert_int_equal(a.addrs[2].family, 6);
	assert_int_equal(a.addrs[3].family, 6);
	assert_int_equal(a.addrs[0].addr[3] + a.addrs[1].addr[3], 2 + 3);
	assert_int_equal(a.addrs[2].addr[15] + a.addrs[3].addr[15], 1 + 3);
}

static void
test_v6_only(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0};

	resolve(f, "v6only.test", &a);
	wait_answer(f->base, &a);
	assert_int_equal(a.status, DNS_OK);
	assert_int_equal(a.n, 1);
	assert_addr(&a.addrs[0], "::2");
}

static void
test_many_capped(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0};
	size_t i;

	resolve(f, "many.test", &a);
	wait_answer(f->base, &a);
	assert_int_equal(a.status, DNS_OK);
	assert_int_equal(a.n, DNS_ADDRS_MAX);
	for (i = 0; i < a.n; i++)
		assert_int_equal(a.addrs[i].family, 4);
}

/* Truncated over UDP: the TCP retry needs the socket's write event. */
static void
test_tcp_fallback(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0};
	size_t i;

	resolve(f, "big.test", &a);
	wait_answer(f->base, &a);
	assert_int_equal(a.status, DNS_OK);
	assert_int_equal(a.n, DNS_ADDRS_MAX);
	for (i = 0; i < a.n; i++) {
		assert_int_equal(a.addrs[i].family, 4);
		assert_int_equal(a.addrs[i].addr[2], 2);
	}
}

static void
test_nxdomain(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0}, b = {0};

	resolve(f, "nope.test", &a);
	wait_answer(f->base, &a);
	assert_int_equal(a.status, DNS_NXDOMAIN);
	assert_int_equal(a.n, 0);
	resolve(f, "nope.test", &b); /* cached for 5 s */
	wait_answer(f->base, &b);
	assert_int_equal(b.status, DNS_NXDOMAIN);
	assert_int_equal(dns_lookup_count(f->dns), 1);
	assert_non_null(strstr(dns_strerror(a.status), "NXDOMAIN"));
}

static void
test_nodata(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0}, b = {0};

	resolve(f, "txtonly.test", &a);
	wait_answer(f->base, &a);
	assert_int_equal(a.status, DNS_NODATA);
	assert_int_equal(a.n, 0);
	resolve(f, "txtonly.test", &b);
	wait_answer(f->base, &b);
	assert_int_equal(b.status, DNS_NODATA);
	assert_int_equal(dns_lookup_count(f->dns), 1);
}

/* dnsmasq without upstream refuses names outside .test; not cached. */
static void
test_refused(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0}, b = {0};

	resolve(f, "other.example", &a);
	wait_answer(f->base, &a);
	assert_int_equal(a.status, DNS_REFUSED);
	resolve(f, "other.example", &b);
	wait_answer(f->base, &b);
	assert_int_equal(b.status, DNS_REFUSED);
	assert_int_equal(dns_lookup_count(f->dns), 2);
}

static void
test_literal(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0}, b = {0};

	resolve(f, "127.0.0.9", &a);
	resolve(f, "::ffff:10.0.0.1", &b);
	wait_answer(f->base, &a);
	wait_answer(f->base, &b);
	assert_int_equal(a.status, DNS_OK);
	assert_int_equal(a.n, 1);
	assert_addr(&a.addrs[0], "127.0.0.9");
	assert_int_equal(b.n, 1);
	assert_addr(&b.addrs[0], "::ffff:10.0.0.1");
	assert_int_equal(dns_lookup_count(f->dns), 0);
}

static void
test_bad_name(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0}, b = {0};
	char longname[300];

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	resolve(f, "", &a);
	resolve(f, longname, &b);
	wait_answer(f->base, &a);
	wait_answer(f->base, &b);
	assert_int_equal(a.status, DNS_ERROR);
	assert_int_equal(b.status, DNS_ERROR);
	assert_int_equal(dns_lookup_count(f->dns), 0);
}

/* ---- timeouts ------------------------------------------------------ */

/* Resolves a.test against the silent servers CSV; returns the ms taken. */
static uint64_t
timed_out(struct event_base *base, const char *csv, unsigned timeout_ms,
    unsigned long lookups)
{
	struct answer a = {0}, b = {0};
	struct dns *d;
	char err[256];
	int64_t t0, ms;

	d = dns_new(base, csv, timeout_ms, err, sizeof(err));
	if (d == NULL)
		fail_msg("dns_new: %s", err);
	t0 = fixture_now_ms();
	assert_non_null(dns_resolve(d, "a.test", record, &a));
	wait_answer(base, &a);
	ms = fixture_now_ms() - t0;
	assert_int_equal(a.status, DNS_TIMEOUT);
	assert_int_equal(a.n, 0);
	/* Not cached: a second query asks again. */
	assert_non_null(dns_resolve(d, "a.test", record, &b));
	wait_answer(base, &b);
	assert_int_equal(b.status, DNS_TIMEOUT);
	assert_int_equal(dns_lookup_count(d), lookups);
	dns_free(d);
	return ms;
}

static void
test_timeout(void **state)
{
	struct fixture *f = *state;
	char csv[128] = "";
	int fd = silent_server(csv, sizeof(csv));
	uint64_t ms;

	ms = timed_out(f->base, csv, 300, 2);
	close(fd);
	assert_true(ms >= 250);
	assert_true(ms < 1000);
}

/* Two silent servers: c-ares alone would take twice the timeout. */
static void
test_timeout_bounds_lookup(void **state)
{
	struct fixture *f = *state;
	char csv[128] = "";
	int fd1 = silent_server(csv, sizeof(csv));
	int fd2 = silent_server(csv, sizeof(csv));
	uint64_t ms;

	ms = timed_out(f->base, csv, 400, 2);
	close(fd1);
	close(fd2);
	assert_true(ms >= 350);
	assert_true(ms < 700);
}

/* ---- cache and coalescing ------------------------------------------ */

static void
test_cache_hit(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0}, b = {0};

	resolve(f, "dual.test", &a);
	wait_answer(f->base, &a);
	resolve(f, "DUAL.Test.", &b); /* same name: case, final dot */
	wait_answer(f->base, &b);
	assert_int_equal(b.status, DNS_OK);
	assert_int_equal(b.n, a.n);
	assert_memory_equal(b.addrs, a.addrs, a.n * sizeof(a.addrs[0]));
	assert_int_equal(dns_lookup_count(f->dns), 1);
	assert_int_equal(dns_cache_count(f->dns), 1);
}

static void
test_ttl_expiry(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0}, b = {0};

	resolve(f, "short.test", &a);
	wait_answer(f->base, &a);
	assert_int_equal(a.status, DNS_OK);
	run(f->base, never, NULL, 1100); /* TTL 1 s */
	resolve(f, "short.test", &b);
	wait_answer(f->base, &b);
	assert_int_equal(b.status, DNS_OK);
	assert_int_equal(dns_lookup_count(f->dns), 2);
}

static void
test_coalesce(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0}, b = {0};

	resolve(f, "dual.test", &a);
	resolve(f, "dual.test", &b);
	wait_answer(f->base, &a);
	wait_answer(f->base, &b);
	assert_int_equal(a.calls, 1);
	assert_int_equal(b.calls, 1);
	assert_int_equal(a.status, DNS_OK);
	assert_int_equal(b.n, a.n);
	assert_memory_equal(b.addrs, a.addrs, a.n * sizeof(a.addrs[0]));
	assert_int_equal(dns_lookup_count(f->dns), 1);
}

/* Names nope-N.test, NXDOMAIN each, in rounds the socket buffers hold. */
static void
fill_cache(struct fixture *f, struct answer *ans, size_t from, size_t to)
{
	char name[64];
	size_t i;

	for (i = from; i < to; i++) {
		snprintf(name, sizeof(name), "nope-%zu.test", i);
		resolve(f, name, &ans[i]);
	}
	for (i = from; i < to; i++) {
		wait_answer(f->base, &ans[i]);
		assert_int_equal(ans[i].status, DNS_NXDOMAIN);
	}
}

static void
test_cache_bounded(void **state)
{
	struct fixture *f = *state;
	const size_t total = 4096 + 10, round = 64;
	struct answer *ans, first = {0};
	size_t i;

	ans = calloc(total, sizeof(*ans));
	assert_non_null(ans);
	for (i = 0; i < total; i += round)
		fill_cache(f, ans, i, i + round < total ? i + round : total);
	free(ans);
	assert_int_equal(dns_lookup_count(f->dns), total);
	assert_int_equal(dns_cache_count(f->dns), 4096);
	resolve(f, "nope-0.test", &first); /* the oldest went first */
	wait_answer(f->base, &first);
	assert_int_equal(dns_lookup_count(f->dns), total + 1);
}

/* ---- cancel and free ----------------------------------------------- */

static void
test_cancel_pending(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0}, b = {0};
	struct dns_query *q;

	q = dns_resolve(f->dns, "a.test", record, &a);
	assert_non_null(q);
	resolve(f, "a.test", &b);
	dns_cancel(q);
	wait_answer(f->base, &b); /* the shared lookup is done */
	assert_int_equal(b.status, DNS_OK);
	run(f->base, never, NULL, 50);
	assert_int_equal(a.calls, 0);
	assert_int_equal(dns_lookup_count(f->dns), 1);
}

/* The last waiter gone, the lookup still fills the cache. */
static void
test_cancel_last_waiter(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0}, b = {0};
	struct dns_query *q;

	q = dns_resolve(f->dns, "a.test", record, &a);
	assert_non_null(q);
	dns_cancel(q);
	if (!run(f->base, cached, f->dns, GUARD_MS))
		fail_msg("the lookup did not fill the cache");
	run(f->base, never, NULL, 50); /* room for a wrong delivery */
	assert_int_equal(a.calls, 0);
	assert_int_equal(dns_cache_count(f->dns), 1);
	resolve(f, "a.test", &b);
	wait_answer(f->base, &b);
	assert_int_equal(b.status, DNS_OK);
	assert_int_equal(dns_lookup_count(f->dns), 1);
}

static void
test_cancel_cache_hit(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0}, b = {0}, c = {0};
	struct dns_query *q;

	resolve(f, "a.test", &a);
	wait_answer(f->base, &a);
	q = dns_resolve(f->dns, "a.test", record, &b); /* queued */
	assert_non_null(q);
	resolve(f, "a.test", &c);
	dns_cancel(q);
	wait_answer(f->base, &c);
	run(f->base, never, NULL, 50);
	assert_int_equal(b.calls, 0);
	assert_int_equal(c.status, DNS_OK);
	assert_int_equal(dns_lookup_count(f->dns), 1);
}

/* Queued, waiting and shared queries: none is called back, none leaks. */
static void
test_free_pending(void **state)
{
	struct fixture *f = *state;
	struct answer a[6];
	static const char *const names[] = {"a.test", "dual.test", "dual.test",
	    "nope.test", "10.1.2.3", "a.test"};
	size_t i;

	memset(a, 0, sizeof(a));
	resolve(f, "a.test", &a[0]);
	wait_answer(f->base, &a[0]);
	memset(a, 0, sizeof(a));
	for (i = 0; i < 6; i++)
		resolve(f, names[i], &a[i]);
	dns_free(f->dns);
	f->dns = NULL;
	run(f->base, never, NULL, 300);
	for (i = 0; i < 6; i++)
		assert_int_equal(a[i].calls, 0);
}

/* A callback may free the resolver; the other queued one is dropped. */
static void
test_free_in_callback(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0}, b = {0}, c = {0}, d = {0};

	resolve(f, "a.test", &a);
	wait_answer(f->base, &a);
	memset(&a, 0, sizeof(a));
	a.free_dns = f->dns;
	resolve(f, "a.test", &a);
	resolve(f, "a.test", &b);
	resolve(f, "dual.test", &c);
	resolve(f, "dual.test", &d);
	f->dns = NULL;
	wait_answer(f->base, &a);
	run(f->base, never, NULL, 300);
	assert_int_equal(a.calls, 1);
	assert_int_equal(b.calls, 0);
	assert_int_equal(c.calls, 0);
	assert_int_equal(d.calls, 0);
}

static void
resolve_again(
    void *arg, enum dns_status status, const struct dns_addr *addrs, size_t n)
{
	struct answer *a = arg;
	int calls;

	record(arg, status, addrs, n);
	if (a->left > 0) {
		a->left--;
		calls = a->calls;
		assert_non_null(
		    dns_resolve(a->dns, "a.test", resolve_again, a));
		assert_int_equal(a->calls, calls);
	}
}

/* A callback resolving a cached name again is called back later. */
static void
test_resolve_from_callback(void **state)
{
	struct fixture *f = *state;
	struct answer a = {0}, b = {0};

	resolve(f, "a.test", &a);
	wait_answer(f->base, &a);
	b.dns = f->dns;
	b.left = 3;
	assert_non_null(dns_resolve(f->dns, "a.test", resolve_again, &b));
	run(f->base, never, NULL, 100);
	assert_int_equal(b.calls, 4);
	assert_int_equal(b.status, DNS_OK);
	assert_int_equal(dns_lookup_count(f->dns), 1);
}

/* ---- dns_new ------------------------------------------------------- */

/* c-ares 1.18's own parser would take several of these. */
static void
test_bad_servers(void **state)
{
	struct fixture *f = *state;
	static const char *const bad[] = {"not a server", "127.0.0.1:x", "",
	    ",", "127.0.0.1,", "127.1", "127.0.0.1:99999", "127.0.0.1:0",
	    "127.0.0.1:", " 127.0.0.1", "[::1", "[::1]x", "[1.2.3.4]:53",
	    "::1]:53", "127.0.0.1:53:53",
	    "127.0.0.1,127.0.0.1,127.0.0.1,127.0.0.1,127.0.0.1,127.0.0.1,"
	    "127.0.0.1,127.0.0.1,127.0.0.1,127.0.0.1,127.0.0.1,127.0.0.1,"
	    "127.0.0.1,127.0.0.1,127.0.0.1,127.0.0.1,127.0.0.1"};
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (dns_new(f->base, bad[i], 1000, err, sizeof(err)) != NULL)
			fail_msg("server list \"%s\" accepted", bad[i]);
		assert_non_null(strstr(err, "bad DNS server list"));
	}
	assert_null(dns_new(f->base, servers, 0, err, sizeof(err)));
	assert_non_null(strstr(err, "timeout"));
}

/* Accepted forms; no query is sent. */
static void
test_good_servers(void **state)
{
	struct fixture *f = *state;
	static const char *const good[] = {"127.0.0.1", "127.0.0.1:5353", "::1",
	    "[::1]", "[::1]:5353", "127.0.0.2:53,[::1]:53,::2"};
	struct dns *d;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		d = dns_new(f->base, good[i], 1000, err, sizeof(err));
		if (d == NULL)
			fail_msg("\"%s\": %s", good[i], err);
		dns_free(d);
	}
}

/* The system's resolv.conf: created and freed, no query sent. */
static void
test_system_servers(void **state)
{
	struct fixture *f = *state;
	struct dns *d;
	char err[256];

	d = dns_new(f->base, NULL, 1000, err, sizeof(err));
	if (d == NULL)
		fail_msg("dns_new(NULL): %s", err);
	dns_free(d);
	dns_free(NULL);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_a),
	    T(test_dual_stack_order),
	    T(test_v6_only),
	    T(test_many_capped),
	    T(test_tcp_fallback),
	    T(test_nxdomain),
	    T(test_nodata),
	    T(test_refused),
	    T(test_literal),
	    T(test_bad_name),
	    T(test_timeout),
	    T(test_timeout_bounds_lookup),
	    T(test_cache_hit),
	    T(test_ttl_expiry),
	    T(test_coalesce),
	    T(test_cache_bounded),
	    T(test_cancel_pending),
	    T(test_cancel_last_waiter),
	    T(test_cancel_cache_hit),
	    T(test_free_pending),
	    T(test_free_in_callback),
	    T(test_resolve_from_callback),
	    T(test_bad_servers),
	    T(test_good_servers),
	    T(test_system_servers),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
