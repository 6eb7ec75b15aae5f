/*
 * forward.h: plain-HTTP forwarding, and the requests inside an
 * intercepted tunnel (forward.c).  Internal to proxy/: the session hands
 * a parsed request head over, and asks two things at its close and
 * timeouts.
 */
#ifndef PH_FORWARD_H
#define PH_FORWARD_H

struct http_head;
struct session;

/* Starts the plain-HTTP exchange for the parsed head H. */
void forward_start(struct session *s, const struct http_head *h);

/* Is a forwarded request still waiting for its response head? */
int forward_waiting(const struct session *s);

/* Frees forward state. */
void forward_free(struct session *s);

#endif /* PH_FORWARD_H */
