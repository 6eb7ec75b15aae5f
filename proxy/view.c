/*
 * view.c: the engine's messages, encoded, decoded and checked (view.h).
 *
 * One table says, for each type, who sends it, its payload's size range,
 * how many may come, in which phase, the phase it leads to and the form
 * of its payload.  view_check applies the table to every message, on
 * whichever side receives it; nothing else decides what is allowed.
 */
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "proxy/view.h"

/* The phases of the engine's messages, then of the user's. */
enum {
	P_START,
	P_ENV, /* after HELLO: environment secrets first */
	P_VIEW,
	P_RUN,
	P_SUMMARY,
	P_DONE,
};

#define PH(p) (1u << (p))
#define STAY (-1)

enum form {
	F_NONE, /* empty payload */
	F_HELLO,
	F_TEXT, /* one string, its NUL last and only */
	F_NAME, /* F_TEXT, a variable name */
	F_STANDIN, /* name NUL value NUL */
	F_U32,
	F_U64,
	F_ITEM, /* uint32 count, then F_TEXT */
	F_PORTS, /* uint32, then uint16 ports ascending, none 0 */
	F_LISTENERS, /* uint32 total, uint32 in this message */
	F_REQUEST, /* uint32 version, uint32 flags, policy NUL, cmd NUL */
};

struct rule {
	uint32_t type;
	enum view_side from;
	uint32_t min, max;
	unsigned maxcount;
	unsigned phases; /* PH() of the phases it may come in */
	int next; /* the phase after it, or STAY */
	enum form form;
	uint32_t need; /* a type that must have come before, or 0 */
};

#define HELLO_LEN (8 + VIEW_ID_LEN)
#define ANY_LIVE (PH(P_START) | PH(P_ENV) | PH(P_VIEW) | PH(P_RUN))
#define REQUEST_MIN (8 + 2 + 1) /* a one-byte name, an empty command */
#define REQUEST_MAX (8 + VIEW_POLICY_NAME_MAX + 1 + VIEW_CMD_MAX + 1)

static const struct rule rules[] = {
    {VIEW_HELLO, VIEW_FROM_ENGINE, HELLO_LEN, HELLO_LEN, 1, PH(P_START), P_ENV,
        F_HELLO, 0},
    {VIEW_ENVSECRET, VIEW_FROM_ENGINE, 2, VIEW_TEXT_MAX, VIEW_COUNT_MAX,
        PH(P_ENV), STAY, F_NAME, 0},
    {VIEW_CA, VIEW_FROM_ENGINE, 2, VIEW_MSG_MAX, 1, PH(P_ENV) | PH(P_VIEW),
        P_VIEW, F_TEXT, 0},
    {VIEW_STANDIN, VIEW_FROM_ENGINE, 4, VIEW_TEXT_MAX, VIEW_COUNT_MAX,
        PH(P_ENV) | PH(P_VIEW), P_VIEW, F_STANDIN, 0},
    {VIEW_HIDE, VIEW_FROM_ENGINE, 2, VIEW_TEXT_MAX, VIEW_COUNT_MAX,
        PH(P_ENV) | PH(P_VIEW), P_VIEW, F_TEXT, 0},
    {VIEW_TRUST, VIEW_FROM_ENGINE, 2, VIEW_MSG_MAX, VIEW_TRUST_MAX,
        PH(P_ENV) | PH(P_VIEW), P_VIEW, F_TEXT, 0},
    {VIEW_LOG, VIEW_FROM_ENGINE, 2, VIEW_TEXT_MAX, 1, PH(P_ENV) | PH(P_VIEW),
        P_VIEW, F_TEXT, 0},
    {VIEW_CAPTURE, VIEW_FROM_ENGINE, 4 + 2, 4 + 2 * VIEW_CAPTURE_MAX, 1,
        PH(P_ENV) | PH(P_VIEW), P_VIEW, F_PORTS, 0},
    {VIEW_READY, VIEW_FROM_ENGINE, 0, 0, 1, PH(P_VIEW), P_RUN, F_NONE,
        VIEW_LOG},
    {VIEW_DENIED, VIEW_FROM_ENGINE, 8, 8, 1, PH(P_RUN), P_SUMMARY, F_U64, 0},
    {VIEW_DENIED_ITEM, VIEW_FROM_ENGINE, 6, 4 + 320, 64, PH(P_SUMMARY), STAY,
        F_ITEM, 0},
    {VIEW_DISTRUST, VIEW_FROM_ENGINE, 6, 4 + 320, 1, PH(P_SUMMARY), STAY,
        F_ITEM, 0},
    {VIEW_BYE, VIEW_FROM_ENGINE, 0, 0, 1, PH(P_SUMMARY), P_DONE, F_NONE, 0},
    {VIEW_ERROR, VIEW_FROM_ENGINE, 2, 512, 1, ANY_LIVE | PH(P_SUMMARY), P_DONE,
        F_TEXT, 0},
    {VIEW_NOTE, VIEW_FROM_ENGINE, 2, VIEW_NOTE_MAX, VIEW_COUNT_MAX,
        PH(P_ENV) | PH(P_VIEW) | PH(P_RUN) | PH(P_SUMMARY), STAY, F_TEXT,
        VIEW_HELLO},
    /* A broker's client: REQUEST first, then the user's messages. */
    {VIEW_REQUEST, VIEW_FROM_CLIENT, REQUEST_MIN, REQUEST_MAX, 1, PH(P_START),
        STAY, F_REQUEST, 0},
    /* The user's: LISTENERS (repeated until their total came), STOP. */
    {VIEW_LISTENERS, VIEW_FROM_USER, 8, 8, VIEW_LISTENERS_MAX, PH(P_START),
        STAY, F_LISTENERS, 0},
    {VIEW_STOP, VIEW_FROM_USER, 4, 4, 1, PH(P_RUN), P_DONE, F_U32, 0},
    {VIEW_ERROR, VIEW_FROM_USER, 2, 512, 1, PH(P_START) | PH(P_RUN), P_DONE,
        F_TEXT, 0},
};

/*
 * A broker's client sends REQUEST, then what a user sends (whose rules
 * then also need REQUEST first).
 */
static const struct rule *
find_rule(enum view_side from, uint32_t type)
{
	size_t i;

	if (from == VIEW_FROM_CLIENT && type != VIEW_REQUEST)
		from = VIEW_FROM_USER;
	for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (rules[i].type == type && rules[i].from == from)
			return &rules[i];
	return NULL;
}

static uint32_t
get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* LEN bytes ending in their only NUL, after at least one other byte. */
static int
is_text(const unsigned char *p, size_t len)
{
	return len >= 2 && p[len - 1] == '\0' &&
	    memchr(p, '\0', len - 1) == NULL;
}

/* A variable name: [A-Za-z_][A-Za-z0-9_]*, NUL-terminated. */
static int
is_name(const unsigned char *p, size_t len)
{
	size_t i;

	if (!is_text(p, len) || (p[0] >= '0' && p[0] <= '9'))
		return 0;
	for (i = 0; i + 1 < len; i++)
		if (!(p[i] == '_' || (p[i] >= '0' && p[i] <= '9') ||
		        ((p[i] | 0x20) >= 'a' && (p[i] | 0x20) <= 'z')))
			return 0;
	return 1;
}

static int
is_hello(const unsigned char *p)
{
	size_t i;

	if (get32(p) != VIEW_VERSION ||
	    (get32(p + 4) != VIEW_ROLE_RUN && get32(p + 4) != VIEW_ROLE_BROKER))
		return 0;
	for (i = 8; i < HELLO_LEN; i++)
		if (!((p[i] >= '0' && p[i] <= '9') ||
		        (p[i] >= 'a' && p[i] <= 'f')))
			return 0;
	return 1;
}

/* A policy's name as a client asks for it: [A-Za-z0-9._-]{1,64}. */
static int
is_policy_name(const unsigned char *p, size_t len)
{
	size_t i;

	if (len < 1 || len > VIEW_POLICY_NAME_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!((p[i] >= '0' && p[i] <= '9') ||
		        ((p[i] | 0x20) >= 'a' && (p[i] | 0x20) <= 'z') ||
		        p[i] == '.' || p[i] == '_' || p[i] == '-'))
			return 0;
	return 1;
}

/*
 * REQUEST: this version, known flags, a policy name NUL, then the
 * command's name (printable ASCII, maybe empty) NUL, and nothing after.
 */
static int
is_request(const unsigned char *p, size_t len)
{
	const unsigned char *name = p + 8, *nul, *cmd;
	size_t i, rest;

	if (get32(p) != VIEW_VERSION || (get32(p + 4) & ~VIEW_REQ_FLAGS) != 0 ||
	    (nul = memchr(name, '\0', len - 8)) == NULL ||
	    !is_policy_name(name, (size_t)(nul - name)))
		return 0;
	cmd = nul + 1;
	rest = len - (size_t)(cmd - p);
	if (rest < 1 || rest > VIEW_CMD_MAX + 1 || cmd[rest - 1] != '\0')
		return 0;
	for (i = 0; i + 1 < rest; i++)
		if (cmd[i] < 0x20 || cmd[i] > 0x7e)
			return 0;
	return 1;
}

/* LEN bytes of uint16 ports, ascending, none 0. */
static int
is_ports(const unsigned char *p, size_t len)
{
	uint16_t prev = 0, port;
	size_t i;

	if (len % 2 != 0)
		return 0;
	for (i = 0; i < len; i += 2) {
		memcpy(&port, p + i, 2);
		if (port <= prev)
			return 0;
		prev = port;
	}
	return 1;
}

/*
 * LISTENERS: T in all (the same each time), N here (as many as came
 * with it), no more than T so far.  The last one moves on to P_RUN.
 */
static int
listeners_ok(struct view_order *o, const struct view_msg *m)
{
	uint32_t total = get32(m->data), n = get32(m->data + 4);

	if (m->nfds < 1 || m->nfds > VIEW_FDS_MAX || n != (uint32_t)m->nfds ||
	    total < 1 || total > VIEW_LISTENERS_MAX ||
	    (o->fds_total != 0 && total != o->fds_total) ||
	    n > total - o->fds_got)
		return 0;
	o->fds_total = total;
	o->fds_got += n;
	return 1;
}

/* Descriptors: LISTENERS has them, REQUEST may have one, no other. */
static int
fds_ok(struct view_order *o, const struct rule *r, const struct view_msg *m)
{
	if (r->type == VIEW_LISTENERS)
		return listeners_ok(o, m);
	if (r->type == VIEW_REQUEST)
		return m->nfds <= 1;
	return m->nfds == 0;
}

static int
form_ok(enum form f, const unsigned char *p, size_t len)
{
	const unsigned char *nul;

	switch (f) {
	case F_HELLO:
		return is_hello(p);
	case F_TEXT:
		return is_text(p, len);
	case F_NAME:
		return is_name(p, len);
	case F_STANDIN:
		nul = memchr(p, '\0', len);
		return nul != NULL && is_name(p, (size_t)(nul - p) + 1) &&
		    is_text(nul + 1, len - (size_t)(nul + 1 - p));
	case F_ITEM:
		return get32(p) > 0 && is_text(p + 4, len - 4);
	case F_PORTS:
		return is_ports(p + 4, len - 4);
	case F_REQUEST:
		return is_request(p, len);
	default:
		return 1; /* sizes alone */
	}
}

void
view_order_init(struct view_order *o, enum view_side from)
{
	memset(o, 0, sizeof(*o));
	o->from = from;
	o->phase = P_START;
}

int
view_order_done(const struct view_order *o)
{
	return o->phase == P_DONE;
}

int
view_check(struct view_order *o, const struct view_msg *m)
{
	const struct rule *r = find_rule(o->from, m->type);
	int rc = VIEW_OK;

	if (r == NULL)
		rc = VIEW_E_TYPE;
	else if (o->phase == P_DONE || !(r->phases & PH(o->phase)) ||
	    (r->need != 0 && o->count[r->need] == 0))
		rc = VIEW_E_ORDER;
	else if (o->count[r->type] >= r->maxcount)
		rc = VIEW_E_COUNT;
	else if (m->len < r->min || m->len > r->max)
		rc = VIEW_E_SIZE;
	else if (o->from == VIEW_FROM_CLIENT && r->type != VIEW_REQUEST &&
	    r->type != VIEW_ERROR && o->count[VIEW_REQUEST] == 0)
		rc = VIEW_E_ORDER;
	else if (!fds_ok(o, r, m))
		rc = VIEW_E_FDS;
	else if (!form_ok(r->form, m->data, m->len))
		rc = VIEW_E_FORM;
	if (rc != VIEW_OK) {
		o->phase = P_DONE;
		return rc;
	}
	o->count[r->type]++;
	if (r->next != STAY)
		o->phase = r->next;
	else if (r->type == VIEW_LISTENERS && o->fds_got == o->fds_total)
		o->phase = P_RUN;
	return VIEW_OK;
}

const char *
view_strerror(int rc)
{
	switch (rc) {
	case VIEW_OK:
		return "no error";
	case VIEW_E_TYPE:
		return "unknown message type";
	case VIEW_E_SIZE:
		return "message of the wrong size";
	case VIEW_E_ORDER:
		return "message out of order";
	case VIEW_E_COUNT:
		return "message repeated too often";
	case VIEW_E_FORM:
		return "malformed message";
	case VIEW_E_TRUNC:
		return "the peer closed the connection";
	case VIEW_E_FDS:
		return "descriptors where none belong";
	default:
		return "system error";
	}
}

ssize_t
view_encode(
    uint32_t type, const void *p, size_t len, unsigned char *out, size_t outlen)
{
	uint32_t hdr[2] = {type, (uint32_t)len};

	if (len > VIEW_MSG_MAX || outlen < VIEW_HDR_SIZE + len)
		return -1;
	memcpy(out, hdr, VIEW_HDR_SIZE);
	if (len > 0)
		memcpy(out + VIEW_HDR_SIZE, p, len);
	return (ssize_t)(VIEW_HDR_SIZE + len);
}

ssize_t
view_decode(const unsigned char *buf, size_t n, struct view_msg *m)
{
	if (n < VIEW_HDR_SIZE)
		return 0;
	m->type = get32(buf);
	m->len = get32(buf + 4);
	m->nfds = 0;
	if (m->len > VIEW_MSG_MAX)
		return VIEW_E_SIZE;
	if (n - VIEW_HDR_SIZE < m->len)
		return 0;
	m->data = buf + VIEW_HDR_SIZE;
	return (ssize_t)(VIEW_HDR_SIZE + m->len);
}

/* --- payloads ------------------------------------------------------------- */

ssize_t
view_put_hello(
    unsigned char *out, size_t outlen, uint32_t role, const char *run_id)
{
	uint32_t v[2] = {VIEW_VERSION, role};

	if (outlen < HELLO_LEN || strlen(run_id) != VIEW_ID_LEN)
		return -1;
	memcpy(out, v, sizeof(v));
	memcpy(out + 8, run_id, VIEW_ID_LEN);
	return HELLO_LEN;
}

ssize_t
view_put_standin(
    unsigned char *out, size_t outlen, const char *name, const char *value)
{
	size_t a = strlen(name) + 1, b = strlen(value) + 1;

	if (outlen < a + b)
		return -1;
	memcpy(out, name, a);
	memcpy(out + a, value, b);
	return (ssize_t)(a + b);
}

ssize_t
view_put_item(unsigned char *out, size_t outlen, uint32_t n, const char *what)
{
	size_t len = strlen(what) + 1;

	if (outlen < 4 + len)
		return -1;
	memcpy(out, &n, 4);
	memcpy(out + 4, what, len);
	return (ssize_t)(4 + len);
}

ssize_t
view_put_capture(unsigned char *out, size_t outlen, uint32_t skipped,
    const uint16_t *ports, size_t n)
{
	if (n < 1 || n > VIEW_CAPTURE_MAX || outlen < 4 + 2 * n)
		return -1;
	memcpy(out, &skipped, 4);
	memcpy(out + 4, ports, 2 * n);
	return (ssize_t)(4 + 2 * n);
}

ssize_t
view_put_request(unsigned char *out, size_t outlen, uint32_t flags,
    const char *policy, const char *cmd)
{
	uint32_t v[2] = {VIEW_VERSION, flags};
	size_t a = strlen(policy), b = strlen(cmd), i;

	if (b > VIEW_CMD_MAX)
		b = VIEW_CMD_MAX;
	if (!is_policy_name((const unsigned char *)policy, a) ||
	    outlen < 8 + a + 1 + b + 1)
		return -1;
	memcpy(out, v, sizeof(v));
	memcpy(out + 8, policy, a + 1);
	for (i = 0; i < b; i++)
		out[8 + a + 1 + i] = cmd[i] >= 0x20 && cmd[i] <= 0x7e
		    ? (unsigned char)cmd[i]
		    : '?';
	out[8 + a + 1 + b] = '\0';
	return (ssize_t)(8 + a + 1 + b + 1);
}

ssize_t
view_put_listeners(
    unsigned char *out, size_t outlen, uint32_t total, uint32_t n)
{
	if (outlen < 8)
		return -1;
	memcpy(out, &total, 4);
	memcpy(out + 4, &n, 4);
	return 8;
}

size_t
view_get_capture(const struct view_msg *m, uint32_t *skipped, uint16_t *ports)
{
	size_t n = (m->len - 4) / 2;

	*skipped = get32(m->data);
	memcpy(ports, m->data + 4, 2 * n);
	return n;
}

void
view_get_hello(const struct view_msg *m, struct view_hello *h)
{
	h->version = get32(m->data);
	h->role = get32(m->data + 4);
	memcpy(h->run_id, m->data + 8, VIEW_ID_LEN);
	h->run_id[VIEW_ID_LEN] = '\0';
}

void
view_get_request(const struct view_msg *m, struct view_request *r)
{
	r->version = get32(m->data);
	r->flags = get32(m->data + 4);
	r->policy = (const char *)m->data + 8;
	r->cmd = r->policy + strlen(r->policy) + 1;
}

const char *
view_get_text(const struct view_msg *m)
{
	return (const char *)m->data;
}

void
view_get_standin(
    const struct view_msg *m, const char **name, const char **value)
{
	*name = (const char *)m->data;
	*value = *name + strlen(*name) + 1;
}

uint64_t
view_get_u64(const struct view_msg *m)
{
	uint64_t v;

	memcpy(&v, m->data, sizeof(v));
	return v;
}

uint32_t
view_get_u32(const struct view_msg *m)
{
	return get32(m->data);
}

const char *
view_get_item(const struct view_msg *m, uint32_t *n)
{
	*n = get32(m->data);
	return (const char *)m->data + 4;
}

/* --- the socket ----------------------------------------------------------- */

int
view_send(int sock, uint32_t type, const void *p, size_t len, const int *fds,
    int nfds)
{
	uint32_t hdr[2] = {type, (uint32_t)len};
	char cbuf[CMSG_SPACE(sizeof(int) * VIEW_FDS_MAX)];
	struct iovec iov[2] = {
	    {hdr, VIEW_HDR_SIZE}, {(void *)(uintptr_t)p, len}};
	struct msghdr msg;
	struct cmsghdr *cm;
	size_t want = VIEW_HDR_SIZE + len;
	ssize_t n;

	if (len > VIEW_MSG_MAX || nfds < 0 || nfds > VIEW_FDS_MAX) {
		errno = EINVAL;
		return -1;
	}
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = iov;
	msg.msg_iovlen = 2;
	if (nfds > 0) {
		memset(cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n >= 0 && (size_t)n != want) {
		errno = EPIPE; /* a stream socket of ours never sends short */
		n = -1;
	}
	return n < 0 ? -1 : 0;
}

/* Takes the SCM_RIGHTS descriptors of MSG into M, closing any extra. */
static int
take_fds(struct msghdr *msg, struct view_msg *m)
{
	struct cmsghdr *cm;
	int *fd, i, n, bad = 0;

	for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		fd = (int *)(void *)CMSG_DATA(cm);
		n = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (i = 0; i < n; i++)
			if (m->nfds < VIEW_FDS_MAX)
				m->fds[m->nfds++] = fd[i];
			else {
				(void)close(fd[i]);
				bad = 1;
			}
	}
	return bad || (msg->msg_flags & MSG_CTRUNC) ? VIEW_E_FDS : VIEW_OK;
}

/* Reads exactly LEN bytes (descriptors come with the first byte). */
static int
read_full(int sock, unsigned char *buf, size_t len, struct view_msg *m)
{
	char cbuf[CMSG_SPACE(sizeof(int) * VIEW_FDS_MAX)];
	struct iovec iov;
	struct msghdr msg;
	size_t got = 0;
	ssize_t n;
	int rc = VIEW_OK;

	while (got < len) {
		memset(&msg, 0, sizeof(msg));
		iov.iov_base = buf + got;
		iov.iov_len = len - got;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? VIEW_E_TRUNC : VIEW_E_SYS;
		if (take_fds(&msg, m) != VIEW_OK)
			rc = VIEW_E_FDS;
		got += (size_t)n;
	}
	return rc;
}

static void
close_fds(struct view_msg *m)
{
	int i;

	for (i = 0; i < m->nfds; i++)
		(void)close(m->fds[i]);
	m->nfds = 0;
}

int
view_recv(
    int sock, struct view_order *o, unsigned char *buf, struct view_msg *m)
{
	unsigned char hdr[VIEW_HDR_SIZE];
	int rc;

	memset(m, 0, sizeof(*m));
	m->data = buf;
	if ((rc = read_full(sock, hdr, sizeof(hdr), m)) != VIEW_OK)
		goto fail;
	memcpy(&m->type, hdr, 4);
	memcpy(&m->len, hdr + 4, 4);
	if (m->len > VIEW_MSG_MAX) {
		rc = VIEW_E_SIZE;
		goto fail;
	}
	if (m->len > 0 && (rc = read_full(sock, buf, m->len, m)) != VIEW_OK)
		goto fail;
	if ((rc = view_check(o, m)) == VIEW_OK)
		return VIEW_OK;
fail:
	o->phase = P_DONE;
	close_fds(m);
	return rc;
}
