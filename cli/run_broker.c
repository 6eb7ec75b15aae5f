/*
 * run_broker.c: pinhole run --broker PATH, the launcher's side of a
 * broker (cli/broker.c): the connection, the user's copy of the records,
 * the REQUEST, and the broker's words said to the user.  After it, the
 * conversation is run_engine.c's and run_setup.c's, as with an engine of
 * the run's own, with r->engine 0: there is no process of ours to wait
 * for.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/logview.h"
#include "cli/run.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "proxy/view.h"

#define COPY_FLAGS (O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY)

void
run_broker_note(const char *text)
{
	char esc[4 * VIEW_NOTE_MAX + 16], line[sizeof(esc) + 16];
	int n;

	logview_esc_buf(esc, sizeof(esc), text); /* control bytes */
	n = snprintf(line, sizeof(line), "pinhole: %s\n", esc);
	/* One write: the line stays whole among the command's output. */
	if (n > 0)
		(void)!write(STDERR_FILENO, line,
		    (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

void
run_broker_error(const struct run *r, const char *text)
{
	char esc[4 * 512 + 16];

	logview_esc_buf(esc, sizeof(esc), text); /* control bytes */
	log_warnx("run: broker %s: %s", r->broker, esc);
}

/* connect(2) to the broker's socket; a failure said in one line. */
static int
dial(const char *path)
{
	struct sockaddr_un sa;
	const char *why = NULL;
	int fd = -1;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_warnx("run: broker %s: the path is too long for a Unix "
		          "socket (at most %zu bytes)",
		    path, sizeof(sa.sun_path) - 1);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		log_warn("run: broker %s: socket", path);
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	if (errno == ENOENT)
		why = "no broker there (is pinhole-broker.socket running? see "
		      "pinhole(1) BROKER)";
	else if (errno == ECONNREFUSED)
		why = "no broker listens there (a stale socket, or not a "
		      "socket; is pinhole-broker.socket running? see "
		      "pinhole(1) BROKER)";
	else if (errno == EACCES || errno == EPERM)
		why = "permission denied (the socket, or a directory on its "
		      "way, is closed to this user; see pinhole(1) BROKER)";
	else if (errno == ENOTDIR)
		why = "not a path to a socket (a part of it is not a "
		      "directory)";
	if (why != NULL)
		log_warnx("run: broker %s: %s", path, why);
	else
		log_warn("run: broker %s", path);
	(void)close(fd);
	return -1;
}

/* Opens PATH for the copy; -1 with errno set. */
static int
open_copy(const char *path)
{
	return open(path, COPY_FLAGS, 0600);
}

/*
 * The user's copy of its sandbox's records: --log FILE, else the run's
 * default log (its private fallback when that cannot be opened), opened
 * here with the user's rights and refused where a run refuses its log.
 * *PATH gets its path.  Returns the descriptor, or -1 (said).
 */
static int
user_copy(struct run *r, char **path)
{
	int fd, e;

	if (r->log != NULL && strcmp(r->log, "stderr") == 0) {
		log_warnx("run: the audit log stderr is standard error, which "
		          "the sandboxed command writes to as well (it could "
		          "forge records); give --log FILE");
		return -1;
	}
	*path = r->log != NULL ? xstrdup(r->log) : run_setup_default_log();
	if (*path == NULL)
		return -1;
	if ((fd = open_copy(*path)) < 0 && r->log == NULL) {
		e = errno;
		free(*path);
		if ((*path = run_setup_private_log()) == NULL)
			return -1;
		log_warnx("run: audit log: %s; using a private file instead, "
		          "%s (--log FILE chooses)",
		    strerror(e), *path);
		fd = open_copy(*path);
	}
	if (fd < 0)
		log_warn("run: audit log %s", *path);
	else if (run_setup_copy_ok(r, *path, fd) != 0) {
		(void)close(fd);
		fd = -1;
	}
	if (fd < 0) {
		free(*path);
		*path = NULL;
	}
	return fd;
}

/*
 * REQUEST with the copy.  A broker that refused at once (too many
 * sandboxes) may have closed already: the send fails, and its ERROR is
 * still there to read, so that is not an error here.
 */
static int
request(const struct run *r, int sock, int copy)
{
	unsigned char p[8 + VIEW_POLICY_NAME_MAX + 1 + VIEW_CMD_MAX + 1];
	const char *cmd = strrchr(r->argv[0], '/');
	uint32_t flags = r->no_capture ? VIEW_REQ_NO_CAPTURE : 0;
	ssize_t n;

	cmd = cmd != NULL ? cmd + 1 : r->argv[0];
	if ((n = view_put_request(p, sizeof(p), flags, r->policies[0], cmd)) <
	    0) {
		log_warnx("run: -p %s: not a policy's name", r->policies[0]);
		return -1;
	}
	if (view_send(sock, VIEW_REQUEST, p, (size_t)n, &copy, 1) != 0 &&
	    errno != EPIPE && errno != ECONNRESET) {
		log_warn("run: broker %s", r->broker);
		return -1;
	}
	return 0;
}

int
run_broker_connect(struct run *r)
{
	char *path = NULL;
	int sock, copy, rc = -1;

	/* The copy first: a refused one costs the broker nothing. */
	if ((copy = user_copy(r, &path)) < 0)
		return -1;
	if ((sock = dial(r->broker)) >= 0 && request(r, sock, copy) == 0)
		rc = 0;
	/* The broker has its own descriptor of the copy now. */
	(void)close(copy);
	if (rc != 0) {
		if (sock >= 0)
			(void)close(sock);
		free(path);
		return -1;
	}
	r->esock = sock;
	r->engine = 0;
	free(r->logpath);
	r->logpath = path;
	return 0;
}
