/*
 * inject.h: credentials added to intercepted requests.
 *
 * inject: the deciding rule's header (Authorization for basic and bearer,
 * or a named header) is set on each request it allows, replacing any the
 * client sent.
 *
 * placeholder: each variable gets a random stand-in of the secret's shape
 * for the sandbox's environment; the proxy swaps a stand-in for the real
 * value (in header values and in the request target) only in requests
 * whose deciding rule binds that variable, inside TLS.  A stand-in found
 * anywhere else is a leak attempt: the request is refused.
 */
#ifndef PH_INJECT_H
#define PH_INJECT_H

#include <stddef.h>

struct evbuffer;
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
 * The first stand-in of SI that H carries (in its target or a field
 * value) and that DEC does not bind, or -1.  With TLS 0 (plain HTTP),
 * every stand-in found is one.
 */
long inject_leak(const struct inject_standins *si, const struct http_head *h,
    const struct policy_decision *dec, int tls);

/* Does DEC inject a field named NAME (so the client's copy goes)? */
int inject_replaces(
    const struct policy_decision *dec, const char *name, size_t len);

/*
 * Appends S (LEN bytes) to OUT with every stand-in that DEC binds
 * replaced by its secret's value, percent-encoded when IN_TARGET (the
 * request target); *USED is set to the name of a secret swapped in (left
 * alone when none).  Returns 0, or -1 when a secret has no value, or one
 * swapped into a field holds a control character.
 */
int inject_add_swapped(struct evbuffer *out, const char *s, size_t len,
    const struct inject_standins *si, const struct policy_decision *dec,
    const char **used, int in_target);

/*
 * Appends DEC's injected fields ("Name: value\r\n") to OUT.  Returns 0,
 * or -1 when a secret has no value or holds a control character (the
 * request must not go).
 */
int inject_add_fields(struct evbuffer *out, const struct policy_decision *dec);

#endif /* PH_INJECT_H */
