/*
 * tls.c: OpenSSL contexts for interception (see tls.h).
 *
 * The server side picks its certificate in the ClientHello callback, so
 * the SNI check comes before anything is signed or sent: a hello that
 * does not name the CONNECT target ends with an unrecognized_name alert.
 * Each SSL carries a small state (what it must be, why it failed) in its
 * ex_data, freed with it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "policy/target.h"
#include "proxy/ca.h"
#include "proxy/tls.h"

#define SESSIONS_MAX 64
#define CAFILES_MAX 16

struct cafile_ctx {
	char *path;
	SSL_CTX *ctx;
};

/* host:port/trust: TRUST is -1 (system store) or a CA file's index. */
#define SESSION_KEY_MAX (TARGET_HOST_MAX + 24)

struct saved_session {
	char key[SESSION_KEY_MAX];
	SSL_SESSION *sess;
};

struct tls {
	struct ca *ca;
	SSL_CTX *server;
	SSL_CTX *client; /* the system trust store */
	int client_loaded; /* ...read at the first use (a 25 ms parse) */
	struct cafile_ctx cafiles[CAFILES_MAX];
	size_t ncafiles;
	struct saved_session sessions[SESSIONS_MAX];
	size_t next_session;
	int owns_ca; /* a clone's own copy of the CA (tls_clone) */
};

/* Per SSL. */
struct tls_state {
	struct tls *t;
	char host[TARGET_HOST_MAX];
	char key[SESSION_KEY_MAX];
	int is_ip;
	char why[256];
};

static int state_index = -1;

static void
seterr(char *err, size_t len, const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[160];

	if (e != 0) {
		ERR_error_string_n(e, buf, sizeof(buf));
		snprintf(err, len, "%s: %s", what, buf);
	} else
		snprintf(err, len, "%s", what);
	ERR_clear_error();
}

static void
state_free(
    void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	(void)parent;
	(void)ad;
	(void)idx;
	(void)argl;
	(void)argp;
	free(ptr);
}

static struct tls_state *
state_new(struct tls *t, SSL *ssl, const char *host)
{
	struct tls_state *st = calloc(1, sizeof(*st));

	if (st == NULL || SSL_set_ex_data(ssl, state_index, st) != 1) {
		free(st);
		return NULL;
	}
	st->t = t;
	snprintf(st->host, sizeof(st->host), "%s", host);
	return st;
}

/* Printable, for a log line: the SNI is the sandbox's text. */
static void
printable(char *out, size_t outlen, const unsigned char *in, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len && n + 1 < outlen; i++)
		out[n++] = in[i] >= ' ' && in[i] < 0x7f ? (char)in[i] : '?';
	out[n] = '\0';
}

/* The host_name of a server_name extension; 0 and *NAME, or -1. */
static int
sni_name(const unsigned char *p, size_t len, const unsigned char **name,
    size_t *namelen)
{
	size_t list;

	if (len < 5)
		return -1;
	list = (size_t)p[0] << 8 | p[1];
	if (list + 2 != len || p[2] != 0 /* host_name */)
		return -1;
	*namelen = (size_t)p[3] << 8 | p[4];
	if (*namelen == 0 || *namelen + 5 > len)
		return -1;
	*name = p + 5;
	return 0;
}

/* Does the ClientHello name the CONNECT target?  0, or -1 with st->why. */
static int
check_sni(SSL *ssl, struct tls_state *st)
{
	const unsigned char *ext, *name;
	struct target_host h;
	size_t len, namelen;
	char shown[80];

	if (!SSL_client_hello_get0_ext(
	        ssl, TLSEXT_TYPE_server_name, &ext, &len)) {
		if (st->is_ip)
			return 0; /* clients send no SNI for an address */
		snprintf(st->why, sizeof(st->why),
		    "the TLS ClientHello names no server (no SNI); "
		    "CONNECT named %.120s",
		    st->host);
		return -1;
	}
	if (sni_name(ext, len, &name, &namelen) != 0) {
		snprintf(st->why, sizeof(st->why), "malformed SNI");
		return -1;
	}
	if (target_host_parse((const char *)name, namelen, &h) != 0 ||
	    strcmp(h.name, st->host) != 0) {
		printable(shown, sizeof(shown), name, namelen);
		snprintf(st->why, sizeof(st->why),
		    "SNI '%s' differs from the CONNECT target %.120s", shown,
		    st->host);
		return -1;
	}
	return 0;
}

static int
hello_cb(SSL *ssl, int *alert, void *arg)
{
	struct tls_state *st = SSL_get_ex_data(ssl, state_index);
	X509 *cert;
	EVP_PKEY *key;
	char err[200];

	(void)arg;
	if (st == NULL) {
		*alert = SSL_AD_INTERNAL_ERROR;
		return SSL_CLIENT_HELLO_ERROR;
	}
	if (check_sni(ssl, st) != 0) {
		*alert = SSL_AD_UNRECOGNIZED_NAME;
		return SSL_CLIENT_HELLO_ERROR;
	}
	if (ca_leaf(st->t->ca, st->host, &cert, &key, err, sizeof(err)) != 0 ||
	    SSL_use_certificate(ssl, cert) != 1 ||
	    SSL_use_PrivateKey(ssl, key) != 1) {
		snprintf(st->why, sizeof(st->why),
		    "no certificate for %.60s: %.160s", st->host, err);
		*alert = SSL_AD_INTERNAL_ERROR;
		return SSL_CLIENT_HELLO_ERROR;
	}
	return SSL_CLIENT_HELLO_SUCCESS;
}

/* HTTP/1.1 only: h2 would need a parser pinhole does not have. */
static int
alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned inlen, void *arg)
{
	unsigned i;

	(void)ssl;
	(void)arg;
	for (i = 0; i < inlen; i += 1 + in[i])
		if (in[i] == 8 && i + 9 <= inlen &&
		    memcmp(in + i + 1, "http/1.1", 8) == 0) {
			*out = in + i + 1;
			*outlen = 8;
			return SSL_TLSEXT_ERR_OK;
		}
	return SSL_TLSEXT_ERR_NOACK;
}

static int
new_session_cb(SSL *ssl, SSL_SESSION *sess)
{
	struct tls_state *st = SSL_get_ex_data(ssl, state_index);
	struct saved_session *slot;
	struct tls *t;
	size_t i;

	if (st == NULL || !SSL_SESSION_is_resumable(sess))
		return 0;
	t = st->t;
	for (i = 0; i < SESSIONS_MAX; i++)
		if (strcmp(t->sessions[i].key, st->key) == 0)
			break;
	if (i == SESSIONS_MAX) {
		i = t->next_session;
		t->next_session = (t->next_session + 1) % SESSIONS_MAX;
	}
	slot = &t->sessions[i];
	SSL_SESSION_free(slot->sess);
	snprintf(slot->key, sizeof(slot->key), "%s", st->key);
	/*
	 * A copy: libevent frees upstream SSLs without a close_notify, and
	 * OpenSSL then marks that very session not resumable.
	 */
	slot->sess = SSL_SESSION_dup(sess);
	return 0;
}

static SSL_CTX *
client_ctx(char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (ctx == NULL) {
		seterr(err, errlen, "TLS client context");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_alpn_protos(ctx, (const unsigned char *)"\x08http/1.1", 9);
	SSL_CTX_set_session_cache_mode(
	    ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, new_session_cb);
	return ctx;
}

static SSL_CTX *
server_ctx(struct tls *t, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL) {
		seterr(err, errlen, "TLS server context");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* No resumption toward the sandbox: every hello is checked anew. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(ctx,
	    SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_client_hello_cb(ctx, hello_cb, t);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_cb, NULL);
	return ctx;
}

struct tls *
tls_new(struct ca *ca, char *err, size_t errlen)
{
	struct tls *t;

	if (state_index < 0)
		state_index =
		    SSL_get_ex_new_index(0, NULL, NULL, NULL, state_free);
	if (state_index < 0 || (t = calloc(1, sizeof(*t))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->ca = ca;
	if ((t->server = server_ctx(t, err, errlen)) == NULL ||
	    (t->client = client_ctx(err, errlen)) == NULL)
		goto fail;
	return t;
fail:
	tls_free(t);
	return NULL;
}

struct tls *
tls_clone(struct tls *t, char *err, size_t errlen)
{
	struct tls *c;
	struct ca *ca;
	size_t i;

	if ((ca = ca_clone(t->ca)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((c = tls_new(ca, err, errlen)) == NULL) {
		ca_free(ca);
		return NULL;
	}
	c->owns_ca = 1;
	for (i = 0; i < t->ncafiles; i++) {
		/* Their sessions are kept by the SSL's state: C's cache. */
		if ((c->cafiles[i].path = strdup(t->cafiles[i].path)) == NULL) {
			snprintf(err, errlen, "out of memory");
			tls_free(c);
			return NULL;
		}
		SSL_CTX_up_ref(t->cafiles[i].ctx);
		c->cafiles[i].ctx = t->cafiles[i].ctx;
		c->ncafiles++;
	}
	return c;
}

void
tls_free(struct tls *t)
{
	size_t i;

	if (t == NULL)
		return;
	if (t->owns_ca)
		ca_free(t->ca);
	SSL_CTX_free(t->server);
	SSL_CTX_free(t->client);
	for (i = 0; i < t->ncafiles; i++) {
		free(t->cafiles[i].path);
		SSL_CTX_free(t->cafiles[i].ctx);
	}
	for (i = 0; i < SESSIONS_MAX; i++)
		SSL_SESSION_free(t->sessions[i].sess);
	free(t);
}

/* An SSL of CTX with its state for HOST, or NULL with ERR. */
static SSL *
ssl_new(struct tls *t, SSL_CTX *ctx, const char *host, struct tls_state **st,
    char *err, size_t errlen)
{
	SSL *ssl;

	if ((ssl = SSL_new(ctx)) == NULL) {
		seterr(err, errlen, "TLS");
		return NULL;
	}
	if ((*st = state_new(t, ssl, host)) == NULL) {
		SSL_free(ssl);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	return ssl;
}

SSL *
tls_server_ssl(struct tls *t, const char *host, char *err, size_t errlen)
{
	struct tls_state *st;
	struct target_host h;
	SSL *ssl;

	if ((ssl = ssl_new(t, t->server, host, &st, err, errlen)) == NULL)
		return NULL;
	st->is_ip = target_host_parse(host, strlen(host), &h) == 0 &&
	    h.kind != TARGET_NAME;
	return ssl;
}

/* "WHAT: OpenSSL's reason", or WHAT alone. */
static void
explain(char *buf, size_t len, const char *what, unsigned long e)
{
	char reason[160];

	if (e == 0) {
		seterr(buf, len, what);
		return;
	}
	ERR_error_string_n(e, reason, sizeof(reason));
	snprintf(buf, len, "%s: %s", what, reason);
}

void
tls_server_error(SSL *ssl, unsigned long e, char *buf, size_t len)
{
	struct tls_state *st = SSL_get_ex_data(ssl, state_index);

	if (st != NULL && st->why[0] != '\0')
		snprintf(buf, len, "%s", st->why);
	else
		explain(buf, len, "TLS handshake with the client failed", e);
}

/*
 * The context that verifies against CAFILE, loaded by tls_add_trust; *IDX
 * its index.  A file not loaded then is never read now: by now the sandbox
 * runs and could have written it.
 */
static SSL_CTX *
cafile_ctx(
    struct tls *t, const char *cafile, int *idx, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < t->ncafiles; i++)
		if (strcmp(t->cafiles[i].path, cafile) == 0) {
			*idx = (int)i;
			return t->cafiles[i].ctx;
		}
	snprintf(err, errlen,
	    "upstream-ca %.200s was not loaded when the proxy started", cafile);
	return NULL;
}

int
tls_add_trust(struct tls *t, const char *cafile, char *err, size_t errlen)
{
	SSL_CTX *ctx;
	int idx;

	if (cafile_ctx(t, cafile, &idx, err, errlen) != NULL)
		return 0;
	if (t->ncafiles == CAFILES_MAX) {
		snprintf(err, errlen, "too many upstream-ca files (at most %d)",
		    CAFILES_MAX);
		return -1;
	}
	if ((ctx = client_ctx(err, errlen)) == NULL)
		return -1;
	if (SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1) {
		seterr(err, errlen, "upstream-ca");
		SSL_CTX_free(ctx);
		return -1;
	}
	t->cafiles[t->ncafiles].path = strdup(cafile);
	if (t->cafiles[t->ncafiles].path == NULL) {
		SSL_CTX_free(ctx);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	t->cafiles[t->ncafiles++].ctx = ctx;
	return 0;
}

static int
client_setup(SSL *ssl, struct tls_state *st, int is_ip)
{
	size_t i;

	st->is_ip = is_ip;
	if (is_ip) {
		if (X509_VERIFY_PARAM_set1_ip_asc(
		        SSL_get0_param(ssl), st->host) != 1)
			return -1;
	} else if (SSL_set_tlsext_host_name(ssl, st->host) != 1 ||
	    SSL_set1_host(ssl, st->host) != 1)
		return -1;
	for (i = 0; i < SESSIONS_MAX; i++)
		if (st->t->sessions[i].sess != NULL &&
		    strcmp(st->t->sessions[i].key, st->key) == 0)
			return SSL_set_session(ssl, st->t->sessions[i].sess) ==
			        1
			    ? 0
			    : -1;
	return 0;
}

SSL *
tls_client_ssl(struct tls *t, const char *host, uint16_t port, int is_ip,
    const char *cafile, char *err, size_t errlen)
{
	struct tls_state *st;
	SSL_CTX *ctx;
	SSL *ssl;
	int trust = -1;

	ctx = cafile ? cafile_ctx(t, cafile, &trust, err, errlen) : t->client;

	if (ctx == NULL)
		return NULL;
	/* Read when first needed (the proxy may still read /etc then). */
	if (cafile == NULL && !t->client_loaded) {
		if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
			seterr(err, errlen, "system trust store");
			return NULL;
		}
		t->client_loaded = 1;
	}
	if ((ssl = ssl_new(t, ctx, host, &st, err, errlen)) == NULL)
		return NULL;
	/* Sessions are kept per trust too: another CA file, another key. */
	snprintf(st->key, sizeof(st->key), "%s:%u/%d", host, port, trust);
	if (client_setup(ssl, st, is_ip) != 0) {
		seterr(err, errlen, "TLS client setup");
		SSL_free(ssl);
		return NULL;
	}
	return ssl;
}

void
tls_client_error(SSL *ssl, unsigned long e, char *buf, size_t len)
{
	struct tls_state *st = SSL_get_ex_data(ssl, state_index);
	long v = SSL_get_verify_result(ssl);

	if (v != X509_V_OK)
		snprintf(buf, len, "the certificate of %s does not verify: %s",
		    st ? st->host : "the upstream",
		    X509_verify_cert_error_string(v));
	else
		explain(buf, len, "TLS handshake with the upstream failed", e);
}
