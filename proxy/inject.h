/*
 * inject.h: credentials added to intercepted requests.
 *
 * inject: the deciding rule's header (Authorization for basic and bearer,
 * or a named header) is set on each request it allows, replacing any the
 * client sent.
 *
 * placeholder: each variable gets a random stand-in of the secret's shape
 * for the sandbox's environment; the proxy swaps a stand-in for the real
 * value only where credentials travel (Authorization, and the fields the
 * placeholder lists), only in requests whose deciding rule binds that
 * variable, inside TLS.  Never in the target: a server echoes paths and
 * queries, and logs them.  A stand-in found anywhere else is a leak
 * attempt: the request is refused.
 */
#ifndef PH_INJECT_H
#define PH_INJECT_H

#include <stddef.h>

struct evbuffer;
struct http_field;
struct http_head;
struct policy;
struct policy_decision;
struct inject_standins;

/*
 * Makes a stand-in for each placeholder variable of P, whose secrets are
 * loaded.  Returns NULL only when out of memory.
 */
struct inject_standins *inject_standins_new(const struct policy *p);
void inject_standins_free(struct inject_standins *);

size_t inject_standins_count(const struct inject_standins *);
const char *inject_standin_env(const struct inject_standins *, size_t i);
const char *inject_standin_value(const struct inject_standins *, size_t i);

/*
 * The tripwire.  A stand-in is swapped only in Authorization (Bearer,
 * token, any scheme; in Basic, inside the decoded user:password) and in
 * the fields its placeholder lists, of a request inside TLS whose rule
 * binds it.  Returns the index of a stand-in H carries anywhere else, or
 * -1: in the target (as is or percent-decoded, twice), in a field name,
 * in a field value, cut across fields (names run together, values run
 * together, names and values in turn, also decoded), in upper or lower
 * case, or Base64-encoded at any alignment (so a Basic field toward
 * another host).  DEC is the allowing decision, NULL for a denied
 * request; with TLS 0 (plain HTTP) nothing is bound.  *WHERE, unless
 * NULL, gets words for the reason.  INJECT_LEAK_NOMEM when out of memory
 * (the request must not go).
 */
#define INJECT_LEAK_NOMEM (-2)
long inject_leak(const struct inject_standins *si, const struct http_head *h,
    const struct policy_decision *dec, int tls, const char **where);

/* Does DEC inject a field named NAME (so the client's copy goes)? */
int inject_replaces(
    const struct policy_decision *dec, const char *name, size_t len);

/*
 * Appends S (LEN bytes) to OUT with every stand-in that DEC binds
 * replaced by its secret's value; *USED is set to the name of a secret
 * swapped in (left alone when none).  Returns 0, or -1 when a secret has
 * no value or holds a control character.
 */
int inject_add_swapped(struct evbuffer *out, const char *s, size_t len,
    const struct inject_standins *si, const struct policy_decision *dec,
    const char **used);

/*
 * Appends field F ("Name: value\r\n") to OUT, with the stand-ins that
 * DEC binds swapped for their values when F is a swap site (see
 * inject_leak; Basic credentials are decoded, swapped and encoded again).
 * *USED as inject_add_swapped.  Returns 0, or -1 (no value, control
 * character, out of memory).
 */
int inject_add_field(struct evbuffer *out, const struct http_field *f,
    const struct inject_standins *si, const struct policy_decision *dec,
    const char **used);

/*
 * Appends DEC's injected fields ("Name: value\r\n") to OUT.  Returns 0,
 * or -1 when a secret has no value or holds a control character (the
 * request must not go).
 */
int inject_add_fields(struct evbuffer *out, const struct policy_decision *dec);

#endif /* PH_INJECT_H */
