/*
 * test_broker_engine.c: the broker's child (cli/broker_engine.c) and a
 * run's engine in broker mode (run_engine_serve with the broker's hooks,
 * cli/run_setup.c), each forked on a socketpair whose other end is a fake
 * client: the REQUEST refused (not granted, malformed, too late), the
 * conversation of a granted one, the files the broker trusts.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define BROKER_ENGINE_INTERNAL
#include "cli/broker.h"
#include "cli/cli.h"
#include "cli/run.h"
#include "policy/policy.h"
#include "proxy/view.h"
#include "tests/unit/fixture.h"

static char dir[PATH_MAX];
static unsigned char buf[VIEW_MSG_MAX];
static int verbose; /* start_engine's engine: -v */

/* cli/main.c's, which the engine prints its policy's diagnostics with. */
void
cli_print_diag(void *arg, const struct policy_diag *d)
{
	(void)arg;
	fprintf(stderr, "%s:%u: %s\n", d->file, d->line, d->msg);
}

static const char *
path(const char *name)
{
	return fixture_path(name);
}

/* Does the file at P hold NEEDLE? */
static int
file_has(const char *p, const char *needle)
{
	static char text[65536];
	FILE *f = fopen(p, "r");
	size_t n = 0;

	if (f != NULL) {
		n = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
	}
	text[n] = '\0';
	return strstr(text, needle) != NULL;
}

/* The child's end: its stderr into DIR/err, the rest as the parent's. */
static void
child_stderr(void)
{
	int fd = open(path("err"), O_WRONLY | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0 && dup2(fd, 2) == 2);
	(void)close(fd);
}

/* A socketpair: ours in *MINE (reads bounded), the child's returned. */
static int
pair(int *mine)
{
	struct timeval tv = {20, 0};
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(
	    setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	*mine = sv[0];
	return sv[1];
}

/*
 * Forks broker_engine_main for a client of ours with CONFIG (a policy's
 * text), the central log DIR/central.jsonl, a deadline of DEADLINE ms.
 */
static pid_t
start_broker(const char *config, int deadline, int *mine)
{
	int theirs = pair(mine);
	struct broker_opts o;
	struct broker_client c;
	struct policy *p;
	pid_t pid;

	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		(void)close(*mine);
		child_stderr();
		p = fixture_policy_as(path("broker.conf"), config, 0);
		memset(&o, 0, sizeof(o));
		o.log = path("central.jsonl");
		o.dns = "127.0.0.1";
		c.conn = theirs;
		c.uid = getuid();
		c.gid = getgid();
		c.pid = getpid();
		c.relay = -1;
		broker_engine_set_deadline(deadline);
		broker_engine_main(&o, p, &c);
	}
	(void)close(theirs);
	return pid;
}

static int
wait_status(pid_t pid)
{
	int w = 0;

	assert_int_equal(waitpid(pid, &w, 0), pid);
	return w;
}

static void
send_request(int fd, const char *policy, int copy)
{
	unsigned char p[512];
	ssize_t n = view_put_request(p, sizeof(p), 0, policy, "curl");

	assert_true(n > 0);
	assert_int_equal(
	    view_send(fd, VIEW_REQUEST, p, (size_t)n, &copy, copy >= 0), 0);
}

/* ERROR with TEXT in it, after the view's first messages, if any. */
static void
expect_error(int fd, const char *text)
{
	struct view_order o;
	struct view_msg m;

	view_order_init(&o, VIEW_FROM_ENGINE);
	do
		assert_int_equal(view_recv(fd, &o, buf, &m), VIEW_OK);
	while (m.type != VIEW_ERROR && m.type != VIEW_READY);
	assert_int_equal(m.type, VIEW_ERROR);
	if (strstr(view_get_text(&m), text) == NULL)
		fail_msg("ERROR \"%s\", not \"%s\"", view_get_text(&m), text);
}

/* --- refusals ------------------------------------------------------------- */

static void
test_not_granted(void **state)
{
	int fd, copy;
	pid_t pid;

	(void)state;
	pid = start_broker("# no broker block\n", 0, &fd);
	copy = open(path("copy.jsonl"), O_WRONLY | O_CREAT | O_APPEND, 0600);
	assert_true(copy >= 0);
	send_request(fd, "nope", copy);
	(void)close(copy);
	expect_error(fd, "no policy nope here; ask your administrator");
	assert_int_equal(wait_status(pid), 1 << 8);
	/* One "client" record in the central log: deny, the reason. */
	assert_true(file_has(path("central.jsonl"), "\"client\""));
	assert_true(file_has(path("central.jsonl"), "\"deny\""));
	assert_true(file_has(path("central.jsonl"), "no policy nope here"));
	assert_true(file_has(path("err"), "refused: no policy nope here"));
	(void)close(fd);
}

static void
test_malformed(void **state)
{
	unsigned char p[512];
	uint32_t status = 0;
	ssize_t n;
	int fd;
	pid_t pid;

	(void)state;
	/* Another version. */
	pid = start_broker("", 0, &fd);
	n = view_put_request(p, sizeof(p), 0, "web", "curl");
	p[0] = VIEW_VERSION + 1;
	assert_int_equal(view_send(fd, VIEW_REQUEST, p, (size_t)n, NULL, 0), 0);
	expect_error(fd, "malformed request: ");
	assert_int_equal(wait_status(pid), 1 << 8);
	(void)close(fd);
	/* STOP first. */
	pid = start_broker("", 0, &fd);
	assert_int_equal(view_send(fd, VIEW_STOP, &status, 4, NULL, 0), 0);
	expect_error(fd, "malformed request: message out of order");
	assert_int_equal(wait_status(pid), 1 << 8);
	(void)close(fd);
	/* The client gone before it asked: nothing to tell it. */
	pid = start_broker("", 0, &fd);
	(void)close(fd);
	assert_int_equal(wait_status(pid), 1 << 8);
	assert_false(fixture_exists(path("central.jsonl")));
}

/* A client that holds the connection and says nothing. */
static void
test_deadline(void **state)
{
	struct pollfd p;
	int fd;
	pid_t pid;

	(void)state;
	pid = start_broker("", 200, &fd);
	p.fd = fd;
	p.events = POLLIN;
	/* Bounded: the broker's child answers by its deadline. */
	assert_int_equal(poll(&p, 1, 10000), 1);
	expect_error(fd, "malformed request: none came within 200 ms");
	assert_int_equal(wait_status(pid), 1 << 8);
	(void)close(fd);
}

/* --- a run's engine in broker mode ---------------------------------------- */

/* Fills R as broker_engine_main does for a client of ours. */
static void
broker_run(struct run *r, const char *policy, int esock, int copy)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	r->policies[0] = policy;
	r->npolicies = 1;
	r->esock = esock;
	r->sfd = -1;
	r->broker_engine = 1;
	r->client_uid = getuid();
	r->client_pid = getpid();
	snprintf(r->client_cmd, sizeof(r->client_cmd), "curl");
	snprintf(r->client_policy, sizeof(r->client_policy), "web");
	r->log = path("central.jsonl");
	r->dns = "127.0.0.1";
	r->client_copy = copy;
	r->verbose = verbose;
	view_order_init(&r->eorder, VIEW_FROM_USER);
}

static pid_t
start_engine(const char *policy, int copy, int *mine)
{
	static struct run r;
	int theirs = pair(mine);
	pid_t pid;

	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		(void)close(*mine);
		child_stderr();
		broker_run(&r, policy, theirs, copy);
		_exit(run_engine_serve(&r));
	}
	(void)close(theirs);
	if (copy >= 0)
		(void)close(copy);
	return pid;
}

/*
 * The view until READY, in order (view_recv checks it), into O: HELLO
 * with the broker's role first; NOTE lines counted in *NOTES.
 */
static void
take_view(int fd, struct view_order *o, int *notes)
{
	struct view_msg m;
	struct view_hello h;

	view_order_init(o, VIEW_FROM_ENGINE);
	*notes = 0;
	do {
		assert_int_equal(view_recv(fd, o, buf, &m), VIEW_OK);
		if (m.type == VIEW_HELLO) {
			view_get_hello(&m, &h);
			assert_int_equal(h.role, VIEW_ROLE_BROKER);
		}
		if (m.type == VIEW_NOTE)
			(*notes)++;
		assert_int_not_equal(m.type, VIEW_ERROR);
	} while (m.type != VIEW_READY);
}

/*
 * The sandbox's part: one listener (the supervisor's notes socket, which
 * the engine takes without capture or a port of its own), then STOP; the
 * summary, then BYE.
 */
static void
listen_and_stop(int fd, struct view_order *o)
{
	unsigned char p[8];
	uint32_t status = 0;
	struct view_msg m;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	(void)view_put_listeners(p, sizeof(p), 1, 1);
	assert_int_equal(view_send(fd, VIEW_LISTENERS, p, 8, &sv[0], 1), 0);
	(void)close(sv[0]);
	assert_int_equal(view_send(fd, VIEW_STOP, &status, 4, NULL, 0), 0);
	assert_int_equal(view_recv(fd, o, buf, &m), VIEW_OK);
	assert_int_equal(m.type, VIEW_DENIED);
	assert_int_equal(view_get_u64(&m), 0);
	assert_int_equal(view_recv(fd, o, buf, &m), VIEW_OK);
	assert_int_equal(m.type, VIEW_BYE);
	(void)close(sv[1]);
}

/*
 * A sandbox served: the broker's role, a NOTE for a copy that is no file
 * (a pipe: the user's, said, not fatal), the listeners, STOP, the
 * summary; an "allow" client record in the central log.
 */
static void
test_engine_serves(void **state)
{
	struct view_order o;
	int fd, notes, pp[2];
	pid_t pid;

	(void)state;
	fixture_mkdir("pol");
	fixture_mkfile("pol/web.conf", "allow example.test:443\n");
	assert_int_equal(pipe(pp), 0);
	verbose = 1;
	pid = start_engine(path("pol/web.conf"), pp[1], &fd);
	verbose = 0;
	take_view(fd, &o, &notes);
	assert_int_equal(notes, 1);
	listen_and_stop(fd, &o);
	assert_int_equal(wait_status(pid), 0);
	/* It shed what it holds, unprivileged too (-v says what). */
	assert_true(file_has(path("err"), "pinhole: proxy: "));
	assert_false(file_has(path("err"), "pinhole: run: proxy: "));
	assert_true(file_has(path("central.jsonl"), "\"client\""));
	assert_true(file_has(path("central.jsonl"), "\"allow\""));
	(void)close(pp[0]);
	(void)close(fd);
}

/*
 * A file the broker trusts in a directory another user may write to:
 * refused, the client told only that the policy did not load, the
 * broker's log saying which directory and why.
 */
static void
test_trusted(void **state)
{
	char want[PATH_MAX + 64];
	int fd;
	pid_t pid;

	(void)state;
	fixture_mkdir("gw");
	fixture_mkfile("gw/web.conf", "allow example.test:443\n");
	assert_int_equal(chmod(path("gw"), 0775), 0);
	pid = start_engine(path("gw/web.conf"), -1, &fd);
	expect_error(fd, "policy web did not load; the broker's log says why");
	assert_int_equal(wait_status(pid), 1 << 8);
	snprintf(want, sizeof(want), "%s: %s is writable by group",
	    path("gw/web.conf"), path("gw"));
	if (!file_has(path("err"), want))
		fail_msg("the broker's log does not say \"%s\"", want);
	/* And whose sandbox it was (the client's pid: the child's own). */
	snprintf(want, sizeof(want),
	    "broker: uid %u pid %u: policy web did not", (unsigned)getuid(),
	    (unsigned)pid);
	assert_true(file_has(path("err"), want));
	(void)close(fd);
	/* The file itself writable by others. */
	assert_int_equal(chmod(path("gw"), 0755), 0);
	assert_int_equal(chmod(path("gw/web.conf"), 0646), 0);
	pid = start_engine(path("gw/web.conf"), -1, &fd);
	expect_error(fd, "did not load");
	assert_int_equal(wait_status(pid), 1 << 8);
	assert_true(file_has(path("err"), "it is writable by others"));
	(void)close(fd);
}

/*
 * A symbolic link on the way owned by another user: refused even when
 * what it points to is safe, since its owner may retarget it after the
 * check.  Needs root (lchown to another uid); skipped, said, otherwise.
 */
static void
test_trusted_link(void **state)
{
	int fd;
	pid_t pid;

	(void)state;
	if (getuid() != 0)
		skip(); /* cmocka says SKIPPED: lchown needs root */
	fixture_mkdir("lk");
	fixture_mkfile("lk/web.conf", "allow example.test:443\n");
	assert_int_equal(symlink(path("lk/web.conf"), path("lk/link.conf")), 0);
	assert_int_equal(lchown(path("lk/link.conf"), 4242, 4242), 0);
	pid = start_engine(path("lk/link.conf"), -1, &fd);
	expect_error(fd, "did not load");
	assert_int_equal(wait_status(pid), 1 << 8);
	assert_true(file_has(path("err"),
	    "is a symbolic link owned by uid 4242, neither root nor the "
	    "broker's"));
	(void)close(fd);
	/* Ours: fine, and what it points to is checked. */
	assert_int_equal(lchown(path("lk/link.conf"), 0, 0), 0);
	pid = start_engine(path("lk/link.conf"), -1, &fd);
	(void)close(fd);
	(void)wait_status(pid);
}

/* --- through the grants ---------------------------------------------------- */

/*
 * A configuration that grants "web" (pol/web.conf) to us, and "other" to
 * a uid that is not ours.
 */
static const char *
grants(void)
{
	static char text[2 * PATH_MAX + 256];

	fixture_mkdir("pol");
	fixture_mkfile("pol/web.conf", "allow example.test:443\n");
	snprintf(text, sizeof(text),
	    "broker {\n  policy web %s\n  users %u\n}\n"
	    "broker {\n  policy other %s\n  users %u\n}\n",
	    path("pol/web.conf"), (unsigned)getuid(), path("pol/web.conf"),
	    (unsigned)getuid() + 4242);
	return text;
}

/* A policy that exists, not granted to us: said with our uid. */
static void
test_not_ours(void **state)
{
	char want[128];
	int fd;
	pid_t pid;

	(void)state;
	pid = start_broker(grants(), 0, &fd);
	send_request(fd, "other", -1);
	snprintf(want, sizeof(want), "policy other is not granted to uid %u",
	    (unsigned)getuid());
	expect_error(fd, want);
	assert_int_equal(wait_status(pid), 1 << 8);
	assert_true(file_has(path("central.jsonl"), "\"deny\""));
	assert_true(file_has(path("central.jsonl"), want));
	(void)close(fd);
}

/*
 * A granted policy: HELLO with the broker's role .. READY, the listeners,
 * STOP, the summary and BYE; the central log names who started it.
 */
static void
test_granted(void **state)
{
	struct view_order o;
	int fd, notes;
	pid_t pid;

	(void)state;
	pid = start_broker(grants(), 0, &fd);
	send_request(fd, "web", -1);
	take_view(fd, &o, &notes);
	assert_int_equal(notes, 0);
	listen_and_stop(fd, &o);
	assert_int_equal(wait_status(pid), 0);
	assert_true(file_has(path("central.jsonl"), "\"client\""));
	assert_true(file_has(path("central.jsonl"), "\"allow\""));
	(void)close(fd);
}

static int
setup(void **state)
{
	(void)state;
	if (fixture_tmpdir(dir, sizeof(dir), "broker_engine") != 0)
		return -1;
	fixture_tree_top(dir);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	return fixture_rmtree(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_not_granted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_deadline, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_engine_serves, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_trusted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_trusted_link, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_ours, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_granted, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
