/*
 * view.h: the messages between the engine (the process that holds the
 * policy, the secrets and the CA key, and runs the proxy) and the process
 * that uses it: `pinhole run`'s launcher today, a broker client later.
 *
 * The engine publishes the sandbox view: what a sandbox may know of the
 * run (the CA certificate to trust, the placeholder stand-ins, the paths
 * to hide, the log path) and nothing secret, as engine_load.c loads
 * (its sink: one callback per message).  The user hands it the
 * listeners and, at the end, asks it to stop; the engine answers with the
 * denied summary.  Each message is a fixed header (type, length) and a
 * payload; each type has a size range, a count limit and a phase it may
 * come in, checked on both sides (OpenSSH monitor.c MON_ONCE,
 * IMSG_SIZE_CHECK): a violation ends the conversation.
 *
 *   engine -> user    HELLO            version, role, run id (once, first)
 *   engine -> user    ENVSECRET name   a variable that holds a secret:
 *                                      the user wipes its copy at once
 *   engine -> user    CA pem           the certificate to trust (0 or 1)
 *   engine -> user    STANDIN n\0v\0   a placeholder variable
 *   engine -> user    HIDE path        a file the sandbox must not see
 *                                      (relative: to the shared cwd)
 *   engine -> user    TRUST pem        certificates of a `trust` line,
 *                                      for the sandbox to trust (0..64)
 *   engine -> user    LOG path         where the audit log is (once)
 *   engine -> user    CAPTURE          the ports the sandbox captures
 *                     skipped,ports..  (uint32 ports left out, then
 *                                      uint16 ports, ascending; 0 or 1)
 *   engine -> user    READY            the view is complete
 *   user -> engine    LISTENERS t,n    + SCM_RIGHTS: accept on these N
 *                                      (1..VIEW_FDS_MAX), of T in all
 *                                      (1..VIEW_LISTENERS_MAX): repeated
 *                                      until T came
 *   user -> engine    STOP status      the command ended
 *   engine -> user    DENIED total     the summary begins
 *   engine -> user    DENIED_ITEM n,hp one host:port and its count
 *   engine -> user    DISTRUST n,hp    clients that refused the run CA,
 *                                      the first's host:port (0 or 1)
 *   engine -> user    BYE              the engine has closed its log
 *   either way        ERROR text       failed; nothing follows
 *   engine -> user    NOTE text        a line for the user's stderr (a
 *                                      broker's engine has no terminal);
 *                                      any time after HELLO
 *
 * A broker (`pinhole proxy --broker`) speaks the same messages with role
 * VIEW_ROLE_BROKER in HELLO, one conversation per client, after the
 * client's first message:
 *
 *   client -> broker  REQUEST          version, flags, policy name, the
 *                                      command's name; with 0 or 1
 *                                      descriptor (SCM_RIGHTS): a regular
 *                                      file of the client's, opened for
 *                                      appending, that gets a copy of its
 *                                      sandbox's records
 *   broker -> client  ERROR reason     refused (the reason is for the
 *                                      user: which policy, whose uid)
 *                     or HELLO ..      as above, role VIEW_ROLE_BROKER
 *
 * The broker checks a client's messages with VIEW_FROM_CLIENT: REQUEST
 * first and once, then the user's (LISTENERS.., STOP).
 */
#ifndef PH_VIEW_H
#define PH_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VIEW_VERSION 2 /* 2: REQUEST and NOTE (the broker) */
#define VIEW_HDR_SIZE 8 /* uint32 type, uint32 payload length */
#define VIEW_MSG_MAX 65536 /* the largest payload of any type */
#define VIEW_TEXT_MAX 8192 /* a path, a name, a stand-in */
#define VIEW_COUNT_MAX 65536 /* of one repeatable type: no policy has more */
#define VIEW_ID_LEN 16 /* the run id, hex digits */
#define VIEW_FDS_MAX 64 /* listeners in one LISTENERS message */
#define VIEW_LISTENERS_MAX 1024 /* in all: one per captured port, and room */
#define VIEW_CAPTURE_MAX 512 /* ports in CAPTURE (sandbox.h SBX_CAPTURE_MAX) */
#define VIEW_TRUST_MAX 64 /* TRUST messages: `trust` lines of a policy */
#define VIEW_NOTE_MAX 1024 /* a NOTE's text, its NUL included */
#define VIEW_POLICY_NAME_MAX 64 /* REQUEST: [A-Za-z0-9._-], 1..64 bytes */
#define VIEW_CMD_MAX 255 /* REQUEST: the command's name, printable */

/* REQUEST's flags. */
#define VIEW_REQ_NO_CAPTURE 0x1u /* pinhole run --no-capture */
#define VIEW_REQ_FLAGS (VIEW_REQ_NO_CAPTURE) /* every flag there is */

enum view_type {
	VIEW_HELLO = 1,
	VIEW_ENVSECRET,
	VIEW_CA,
	VIEW_STANDIN,
	VIEW_HIDE,
	VIEW_LOG,
	VIEW_READY,
	VIEW_LISTENERS,
	VIEW_STOP,
	VIEW_DENIED,
	VIEW_DENIED_ITEM,
	VIEW_BYE,
	VIEW_ERROR,
	VIEW_DISTRUST,
	VIEW_TRUST,
	VIEW_CAPTURE,
	VIEW_REQUEST,
	VIEW_NOTE,
	VIEW_TYPE_END
};

enum view_role {
	VIEW_ROLE_RUN = 1,
	VIEW_ROLE_BROKER,
};

/* Who sends: the engine's messages are checked by the user and back. */
enum view_side {
	VIEW_FROM_ENGINE,
	VIEW_FROM_USER,
	VIEW_FROM_CLIENT, /* a broker's client: REQUEST, then as the user */
};

/* Why a message was refused. */
enum view_result {
	VIEW_OK = 0,
	VIEW_E_TYPE = -1, /* unknown, or not this side's */
	VIEW_E_SIZE = -2, /* payload outside the type's range */
	VIEW_E_ORDER = -3, /* not allowed in this phase */
	VIEW_E_COUNT = -4, /* more of this type than allowed */
	VIEW_E_FORM = -5, /* payload malformed (NULs, names, numbers) */
	VIEW_E_TRUNC = -6, /* the stream ended inside a message */
	VIEW_E_FDS = -7, /* descriptors where none belong, or none */
	VIEW_E_SYS = -8, /* a system call failed, see errno */
};

/* One conversation's state on one side, for the messages it receives. */
struct view_order {
	enum view_side from; /* whose messages this checks */
	int phase;
	unsigned count[VIEW_TYPE_END];
	uint32_t fds_total, fds_got; /* LISTENERS: announced, and came */
};

/* A message received, its payload in the caller's buffer. */
struct view_msg {
	uint32_t type;
	uint32_t len;
	const unsigned char *data;
	int fds[VIEW_FDS_MAX];
	int nfds;
};

/* Payloads, decoded. */
struct view_hello {
	uint32_t version, role;
	char run_id[VIEW_ID_LEN + 1];
};

/* REQUEST, decoded: the strings point into the message. */
struct view_request {
	uint32_t version, flags;
	const char *policy; /* [A-Za-z0-9._-]{1,64} */
	const char *cmd; /* printable ASCII, 0..VIEW_CMD_MAX bytes */
};

void view_order_init(struct view_order *, enum view_side from);

/* True once the conversation has ended (BYE, ERROR, or STOP seen). */
int view_order_done(const struct view_order *);

/*
 * Checks one message's type, payload and descriptor count against the
 * order O and advances it.  Returns VIEW_OK or a VIEW_E_* code; after an
 * error the conversation is over.
 */
int view_check(struct view_order *o, const struct view_msg *m);

/* A static description of a VIEW_E_* code. */
const char *view_strerror(int);

/*
 * Writes TYPE's header and LEN bytes of P into OUT (OUTLEN bytes).
 * Returns the bytes written, or -1 when LEN exceeds the largest payload
 * or OUT is too small.
 */
ssize_t view_encode(uint32_t type, const void *p, size_t len,
    unsigned char *out, size_t outlen);

/*
 * Reads one message from the N bytes of BUF into M (its data points into
 * BUF).  Returns the bytes it used, 0 when BUF holds only part of one, or
 * VIEW_E_SIZE when the header announces more than VIEW_MSG_MAX.
 */
ssize_t view_decode(const unsigned char *buf, size_t n, struct view_msg *m);

/* The payloads: each fills OUT and returns its length, or -1. */
ssize_t view_put_hello(
    unsigned char *out, size_t outlen, uint32_t role, const char *run_id);
ssize_t view_put_standin(
    unsigned char *out, size_t outlen, const char *name, const char *value);
ssize_t
view_put_item(unsigned char *out, size_t outlen, uint32_t n, const char *what);
/* CAPTURE: N ports (ascending, none 0, at most VIEW_CAPTURE_MAX). */
ssize_t view_put_capture(unsigned char *out, size_t outlen, uint32_t skipped,
    const uint16_t *ports, size_t n);
/*
 * REQUEST: FLAGS (VIEW_REQ_*), the policy POLICY, the command's name CMD
 * (cut to VIEW_CMD_MAX bytes, bytes outside printable ASCII made '?').
 * Returns -1 for a policy name outside its form.
 */
ssize_t view_put_request(unsigned char *out, size_t outlen, uint32_t flags,
    const char *policy, const char *cmd);
/* LISTENERS: N descriptors in this message, TOTAL in all. */
ssize_t view_put_listeners(
    unsigned char *out, size_t outlen, uint32_t total, uint32_t n);

/*
 * Readers of payloads that view_check accepted: they point into M's data
 * and need no more checks.
 */
void view_get_hello(const struct view_msg *m, struct view_hello *h);
void view_get_request(const struct view_msg *m, struct view_request *r);
const char *view_get_text(const struct view_msg *m);
void view_get_standin(
    const struct view_msg *m, const char **name, const char **value);
uint64_t view_get_u64(const struct view_msg *m);
uint32_t view_get_u32(const struct view_msg *m);
const char *view_get_item(const struct view_msg *m, uint32_t *n);
/* CAPTURE: the ports left out; returns how many ports, PORTS filled
 * (room for VIEW_CAPTURE_MAX). */
size_t
view_get_capture(const struct view_msg *m, uint32_t *skipped, uint16_t *ports);

/*
 * Sends one message (header, payload, and NFDS descriptors with it) on
 * the stream socket SOCK.  Returns 0, or -1 with errno set.
 */
int view_send(int sock, uint32_t type, const void *p, size_t len,
    const int *fds, int nfds);

/*
 * Receives one message on SOCK into M, its payload in BUF (VIEW_MSG_MAX
 * bytes), and checks it against O.  Descriptors that came with it are
 * in M (close-on-exec); on an error they are closed.  Returns VIEW_OK or
 * a VIEW_E_* code (VIEW_E_TRUNC: the peer closed, even between messages).
 */
int view_recv(
    int sock, struct view_order *o, unsigned char *buf, struct view_msg *m);

#endif /* PH_VIEW_H */
