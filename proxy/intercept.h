/*
 * intercept.h: CONNECT tunnels whose requests the policy must see (paths,
 * methods, inject, placeholder): TLS toward the client with a leaf of the
 * run CA, TLS of the proxy's own toward the real server.
 */
#ifndef PH_INTERCEPT_H
#define PH_INTERCEPT_H

struct bufferevent;
struct session;

/* Called when the upstream TLS handshake is over: BEV, or NULL and why. */
typedef void
intercept_up_cb(struct session *, struct bufferevent *bev, const char *error);

/*
 * Answers S's CONNECT to its tunnel target with 200 and starts the TLS
 * handshake with the client; once it is done, S reads requests from
 * inside the tunnel (session_next_request).  A failed handshake closes S,
 * logged with the reason (an SNI that is missing or names another host).
 */
void intercept_start(struct session *s);

/*
 * Puts TLS over PLAIN, a connection to S's target (taken over), verifying
 * against CAFILE (NULL: the system store); calls CB when done.
 */
void intercept_upstream(struct session *s, struct bufferevent *plain,
    const char *cafile, intercept_up_cb *cb);

/*
 * Reads what BEV, an upstream TLS bufferevent of intercept_upstream(),
 * can read without waiting, into its input, until the input holds a few
 * records' worth.  libevent 2.1 takes one record a readable event; this
 * takes the rest in the same turn of the loop, so the client gets them
 * in one write.  An end or error met on the way is BEV's event callback's
 * (deferred), as if libevent had met it.  Does nothing for a bufferevent
 * without TLS or not reading, or after a read of under 4 KiB.
 */
void intercept_up_drain(struct bufferevent *bev);

/* A response was cut: the tunnel ends with no close_notify (a truncation). */
void intercept_cut(struct session *s);

/*
 * Ends S's interception: a close_notify to the client, whose socket
 * stays until what is queued for it is sent.  Leaves s->client.bev NULL.
 */
void intercept_free(struct session *s);

#endif /* PH_INTERCEPT_H */
