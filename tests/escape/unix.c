/*
 * unix.c: the prober of escape_unix.sh.  Tries to reach a Unix socket by
 * path in each way the kernel offers, or checks that the sandbox's own
 * Unix sockets work.
 *
 * usage: probe_unix stream|seqpacket|sendto|sendmsg|sendmmsg|dgram-connect
 *                   PATH
 *        probe_unix inside      (socketpair, bound inside, abstract, fds)
 *        probe_unix race PATH   (another thread swaps the address)
 *        probe_unix undumpable  (connect inside after PR_SET_DUMPABLE 0)
 *
 * Prints one line per attempt: "NAME: ok", or "NAME: refused ERRNO-NAME".
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MSG "probe-unix\n"

static socklen_t
mkaddr(struct sockaddr_un *a, const char *path, int abstract)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path + abstract, sizeof(a->sun_path) - 1, "%s", path);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + abstract +
	    strlen(path) + (abstract ? 0 : 1));
}

static void
say(const char *name, int ok)
{
	if (ok)
		printf("%s: ok\n", name);
	else
		printf("%s: refused %s\n", name, strerrorname_np(errno));
	fflush(stdout);
}

/* Connects a TYPE socket to PATH and sends a line. */
static int
try_connect(int type, const char *path)
{
	struct sockaddr_un a;
	socklen_t len = mkaddr(&a, path, 0);
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return 0;
	r = connect(fd, (struct sockaddr *)&a, len) == 0 &&
	    send(fd, MSG, strlen(MSG), MSG_NOSIGNAL) >= 0;
	close(fd);
	return r;
}

static int
try_dgram(const char *how, const char *path)
{
	struct sockaddr_un a;
	socklen_t len = mkaddr(&a, path, 0);
	struct iovec iov = {MSG, strlen(MSG)};
	struct mmsghdr mm;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = 0;

	if (fd < 0)
		return 0;
	memset(&mm, 0, sizeof(mm));
	mm.msg_hdr.msg_name = &a;
	mm.msg_hdr.msg_namelen = len;
	mm.msg_hdr.msg_iov = &iov;
	mm.msg_hdr.msg_iovlen = 1;
	if (strcmp(how, "sendto") == 0)
		r = sendto(fd, MSG, strlen(MSG), 0, (struct sockaddr *)&a,
		        len) >= 0;
	else if (strcmp(how, "sendmsg") == 0)
		r = sendmsg(fd, &mm.msg_hdr, 0) >= 0;
	else if (strcmp(how, "sendmmsg") == 0)
		r = sendmmsg(fd, &mm, 1, 0) == 1;
	else if (strcmp(how, "dgram-connect") == 0)
		r = connect(fd, (struct sockaddr *)&a, len) == 0 &&
		    send(fd, MSG, strlen(MSG), 0) >= 0;
	close(fd);
	return r;
}

/* A listener bound at NAME (abstract when ABSTRACT). */
static int
listener(int type, const char *name, int abstract)
{
	struct sockaddr_un a;
	socklen_t len = mkaddr(&a, name, abstract);
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	if (!abstract)
		unlink(name);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, len) != 0 ||
	    (type != SOCK_DGRAM && listen(fd, 8) != 0))
		return -1;
	return fd;
}

/* Stream or seqpacket bound inside: connect, accept, one line back. */
static int
inside_stream(int type, const char *name, int abstract)
{
	struct sockaddr_un a;
	socklen_t len = mkaddr(&a, name, abstract);
	int l = listener(type, name, abstract), c = -1, s = -1, ok = 0;
	char buf[64];

	if (l >= 0 && (c = socket(AF_UNIX, type | SOCK_CLOEXEC, 0)) >= 0 &&
	    connect(c, (struct sockaddr *)&a, len) == 0 &&
	    (s = accept(l, NULL, NULL)) >= 0 && send(c, "x", 1, 0) == 1)
		ok = recv(s, buf, sizeof(buf), 0) == 1;
	if (s >= 0)
		close(s);
	if (c >= 0)
		close(c);
	if (l >= 0)
		close(l);
	return ok;
}

static int
inside_dgram(const char *how, const char *name)
{
	int l = listener(SOCK_DGRAM, name, 0), ok;
	char buf[64];

	ok = l >= 0 && try_dgram(how, name) &&
	    recv(l, buf, sizeof(buf), MSG_DONTWAIT) == (ssize_t)strlen(MSG);
	if (l >= 0)
		close(l);
	return ok;
}

/* A descriptor passed over a socketpair with sendmsg (SCM_RIGHTS). */
static int
pass_fd(void)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char one[1] = {'f'};
	struct iovec iov = {one, 1};
	struct msghdr m = {0};
	struct cmsghdr *cm;
	int sv[2], p[2], got = -1, ok = 0;
	char c;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || pipe(p) != 0)
		return 0;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof(u.buf);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &p[1], sizeof(int));
	if (sendmsg(sv[0], &m, 0) != 1)
		return 0;
	memset(u.buf, 0, sizeof(u.buf));
	if (recvmsg(sv[1], &m, 0) == 1 && (cm = CMSG_FIRSTHDR(&m)) != NULL &&
	    cm->cmsg_type == SCM_RIGHTS) {
		memcpy(&got, CMSG_DATA(cm), sizeof(int));
		ok = write(got, "z", 1) == 1 && read(p[0], &c, 1) == 1 &&
		    c == 'z';
	}
	return ok;
}

static int
do_inside(void)
{
	int sv[2];
	char c = 0;

	say("socketpair",
	    socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 &&
	        write(sv[0], "y", 1) == 1 && read(sv[1], &c, 1) == 1 &&
	        c == 'y');
	say("inside-stream", inside_stream(SOCK_STREAM, "in-stream.sock", 0));
	say("inside-seqpacket",
	    inside_stream(SOCK_SEQPACKET, "in-seqpacket.sock", 0));
	say("inside-abstract", inside_stream(SOCK_STREAM, "ph-probe-abs", 1));
	say("inside-dgram-sendto", inside_dgram("sendto", "in-dgram.sock"));
	say("inside-dgram-sendmsg", inside_dgram("sendmsg", "in-dgram.sock"));
	say("inside-dgram-sendmmsg", inside_dgram("sendmmsg", "in-dgram.sock"));
	say("inside-sendmsg-fd", pass_fd());
	return 0;
}

/*
 * The time-of-check attack: one thread connects to the inside socket
 * over and over, another flips the address it names between that socket
 * and PATH.  A single connection that reaches PATH is an escape.
 */
static struct sockaddr_un race_addr;
static char race_good[108], race_bad[108];
static atomic_int race_stop;

static void *
flipper(void *arg)
{
	(void)arg;
	volatile int spin;

	while (!atomic_load(&race_stop)) {
		memcpy(race_addr.sun_path, race_bad, sizeof(race_bad));
		__asm__ volatile("" ::: "memory"); /* no dead store */
		for (spin = 0; spin < 2000; spin++)
			;
		memcpy(race_addr.sun_path, race_good, sizeof(race_good));
		__asm__ volatile("" ::: "memory");
		for (spin = 0; spin < 2000; spin++)
			;
	}
	return NULL;
}

static int
do_race(const char *path)
{
	int l = listener(SOCK_STREAM, "race.sock", 0), fd, i, bad = 0;
	socklen_t len = offsetof(struct sockaddr_un, sun_path) + 108, plen;
	struct sockaddr_un peer;
	pthread_t t;

	snprintf(race_good, sizeof(race_good), "race.sock");
	snprintf(race_bad, sizeof(race_bad), "%s", path);
	mkaddr(&race_addr, "race.sock", 0);
	if (l < 0 || fcntl(l, F_SETFL, O_NONBLOCK) != 0 ||
	    pthread_create(&t, NULL, flipper, NULL) != 0)
		return 1;
	for (i = 0; i < 2000; i++) {
		if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
			break;
		plen = sizeof(peer);
		memset(&peer, 0, sizeof(peer));
		/* The peer's address says which socket was reached. */
		if (connect(fd, (struct sockaddr *)&race_addr, len) == 0 &&
		    getpeername(fd, (struct sockaddr *)&peer, &plen) == 0 &&
		    strcmp(peer.sun_path, race_good) != 0)
			bad++;
		close(fd);
		while ((fd = accept(l, NULL, NULL)) >= 0)
			close(fd);
	}
	atomic_store(&race_stop, 1);
	pthread_join(t, NULL);
	printf("race: %d of %d reached %s\n", bad, i, path);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "", *path = argv[2];

	if (strcmp(how, "inside") == 0)
		return do_inside();
	if (strcmp(how, "undumpable") == 0) {
		/* Out of the supervisor's reach: refused, never hung. */
		if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
			return 1;
		say("undumpable", inside_stream(SOCK_STREAM, "und.sock", 0));
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: probe_unix MODE PATH | inside\n");
		return 2;
	}
	if (strcmp(how, "race") == 0)
		return do_race(path);
	if (strcmp(how, "stream") == 0)
		say("stream", try_connect(SOCK_STREAM, path));
	else if (strcmp(how, "seqpacket") == 0)
		say("seqpacket", try_connect(SOCK_SEQPACKET, path));
	else
		say(how, try_dgram(how, path));
	return 0;
}
