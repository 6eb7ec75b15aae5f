/*
 * ca.c: the run CA and the leaf certificates it issues (ca.h).
 *
 * Name constraints are built from OpenSSL's structures rather than from
 * "permitted;DNS:..." configuration strings, so that no host can inject
 * a separator into the extension.  Leaves are checked against the CA's
 * constraints with NAME_CONSTRAINTS_check(), OpenSSL's own verifier code,
 * so that ca_leaf() refuses exactly what a client would.
 *
 * The leaf cache is a hash map (common/hmap.h) of CA_CACHE_MAX entries at
 * most, plus a ring that remembers their order for eviction.  Hosts come
 * from the sandbox (any subdomain of a wildcard rule), so the map's hash
 * is seeded at random; even so, a chain can never be longer than the cap, which
 * bounds the worst case to a scan far cheaper than the signature that
 * follows a miss.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "common/fd.h"
#include "common/hmap.h"
#include "common/secfile.h"
#include "policy/target.h"

#define CA_INTERNAL
#include "ca.h"

#define BUCKETS (2 * CA_CACHE_MAX) /* a power of two */
#define SKEW_SECS (5 * 60) /* notBefore is this far in the past */
#define LEAF_SECS (24 * 60 * 60) /* longest leaf lifetime */
#define REFRESH_SECS (60 * 60) /* reissue a leaf this close to its end */
#define CN_MAX 64 /* ub-common-name, RFC 5280 */
#define KEY_FILE_MAX (64 * 1024) /* a 16384-bit RSA key is ~13 KiB */
#define SENTINEL_DNS "pinhole.invalid" /* RFC 2606: never resolves */

struct leaf {
	struct hmap_entry link; /* in the CA's cache */
	X509 *cert;
	time_t expires;
	size_t len;
	char host[]; /* canonical, NUL-terminated */
};

struct ca {
	X509 *cert;
	EVP_PKEY *key; /* the CA key: never leaves this file */
	EVP_PKEY *leaf_key; /* shared by every leaf */
	NAME_CONSTRAINTS *nc; /* decoded from cert; NULL when it has none */
	char *pem;
	time_t not_before, not_after;
	struct hmap *cache; /* struct leaf by host */
	struct leaf *ring[CA_CACHE_MAX]; /* insertion order */
	size_t oldest, count;
	int clone; /* the above but the cache are another CA's (ca_clone) */
};

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr_ssl(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes a one-line reason to ERR, which may be NULL. */
static void
seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* As seterr(), followed by ": " and OpenSSL's latest error, if any. */
static void
seterr_ssl(char *err, size_t errlen, const char *fmt, ...)
{
	unsigned long e = ERR_peek_last_error();
	char ssl[256];
	va_list ap;
	size_t len;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	if (e == 0)
		return;
	ERR_error_string_n(e, ssl, sizeof(ssl));
	len = strlen(err);
	snprintf(err + len, errlen - len, ": %s", ssl);
}

/* Copies at most 80 bytes of S to OUT, control and 8-bit bytes as '?'. */
static const char *
printable(char out[81], const char *s)
{
	size_t i;

	for (i = 0; i < 80 && s[i] != '\0'; i++)
		out[i] = s[i] < 0x20 || s[i] >= 0x7f ? '?' : s[i];
	out[i] = '\0';
	return out;
}

static struct leaf *
cache_find(struct ca *ca, const char *host, size_t len)
{
	return HMAP_ITEM(hmap_find(ca->cache, host, len), struct leaf, link);
}

static void
leaf_free(struct leaf *e)
{
	X509_free(e->cert);
	free(e);
}

/* Unlinks the oldest leaf from the map and frees it. */
static void
cache_evict(struct ca *ca)
{
	struct leaf *e = ca->ring[ca->oldest];

	hmap_remove(ca->cache, &e->link);
	leaf_free(e);
	ca->ring[ca->oldest] = NULL;
	ca->oldest = (ca->oldest + 1) % CA_CACHE_MAX;
	ca->count--;
}

/*
 * Caches CERT (taking its reference) under HOST.  Returns the entry, or
 * NULL when out of memory.
 */
static struct leaf *
cache_add(
    struct ca *ca, const char *host, size_t len, X509 *cert, time_t expires)
{
	struct leaf *e;

	/* The data path: no fatal on ENOMEM, the caller fails the session. */
	if ((e = malloc(sizeof(*e) + len + 1)) == NULL)
		return NULL;
	if (ca->count == CA_CACHE_MAX)
		cache_evict(ca);
	memcpy(e->host, host, len + 1);
	e->len = len;
	e->cert = cert;
	e->expires = expires;
	hmap_insert(ca->cache, &e->link, e->host, len);
	ca->ring[(ca->oldest + ca->count) % CA_CACHE_MAX] = e;
	ca->count++;
	return e;
}

static void
cache_clear(struct ca *ca)
{
	while (ca->count > 0)
		cache_evict(ca);
}

/* Sets a random positive 128-bit serial number.  Returns 0 or -1. */
static int
set_serial(X509 *x)
{
	unsigned char b[16];
	BIGNUM *bn = NULL;
	int r = -1;

	if (RAND_bytes(b, sizeof(b)) != 1 ||
	    (bn = BN_bin2bn(b, sizeof(b), NULL)) == NULL)
		goto out;
	/* Zero is not a valid serial; 2^-128 is still worth one line. */
	if (BN_is_zero(bn) && BN_set_word(bn, 1) != 1)
		goto out;
	if (BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL)
		r = 0;
out:
	BN_free(bn);
	return r;
}

/* An extension in OpenSSL's configuration syntax. */
struct ext {
	int nid;
	const char *value;
};

static const struct ext ca_exts[] = {
    {NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
    {NID_key_usage, "critical,keyCertSign,cRLSign"},
    {NID_subject_key_identifier, "hash"},
};

static const struct ext leaf_exts[] = {
    {NID_basic_constraints, "critical,CA:FALSE"},
    {NID_key_usage, "critical,digitalSignature"},
    {NID_ext_key_usage, "serverAuth"},
    /* The CA's subjectKeyIdentifier, else its name and serial. */
    {NID_authority_key_identifier, "keyid,issuer"},
};

/* Adds the N extensions EXTS to X, issued by ISSUER.  Returns 0 or -1. */
static int
add_exts(X509 *x, X509 *issuer, const struct ext *exts, size_t n)
{
	X509_EXTENSION *e;
	X509V3_CTX ctx;
	size_t i;
	int r;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	for (i = 0; i < n; i++) {
		e = X509V3_EXT_nconf_nid(
		    NULL, &ctx, exts[i].nid, exts[i].value);
		if (e == NULL)
			return -1;
		r = X509_add_ext(x, e, -1);
		X509_EXTENSION_free(e);
		if (r != 1)
			return -1;
	}
	return 0;
}

static GENERAL_NAME *
gn_dns(const char *name)
{
	GENERAL_NAME *gn = GENERAL_NAME_new();
	ASN1_IA5STRING *s = ASN1_IA5STRING_new();

	if (gn == NULL || s == NULL || ASN1_STRING_set(s, name, -1) != 1)
		goto fail;
	GENERAL_NAME_set0_value(gn, GEN_DNS, s);
	return gn;
fail:
	ASN1_IA5STRING_free(s);
	GENERAL_NAME_free(gn);
	return NULL;
}

/* An iPAddress: 4 or 16 bytes in a SAN, twice that (with mask) in a NC. */
static GENERAL_NAME *
gn_ip(const uint8_t *addr, size_t len)
{
	GENERAL_NAME *gn = GENERAL_NAME_new();
	ASN1_OCTET_STRING *s = ASN1_OCTET_STRING_new();

	if (gn == NULL || s == NULL ||
	    ASN1_OCTET_STRING_set(s, addr, (int)len) != 1)
		goto fail;
	GENERAL_NAME_set0_value(gn, GEN_IPADD, s);
	return gn;
fail:
	ASN1_OCTET_STRING_free(s);
	GENERAL_NAME_free(gn);
	return NULL;
}

/* Writes the mask of a PLEN-bit prefix over LEN bytes to MASK. */
static void
prefix_mask(uint8_t *mask, size_t len, unsigned plen)
{
	size_t i;

	for (i = 0; i < len; i++) {
		mask[i] = plen >= 8 ? 0xff : (uint8_t)(0xff00 >> plen);
		plen = plen > 8 ? plen - 8 : 0;
	}
}

/* An address block as iPAddress constraint: address then mask. */
static GENERAL_NAME *
gn_block(const uint8_t *addr, int family, unsigned plen)
{
	uint8_t ip[32];
	size_t alen = family == 4 ? 4 : 16;

	memcpy(ip, addr, alen);
	prefix_mask(ip + alen, alen, plen);
	return gn_ip(ip, 2 * alen);
}

/*
 * Returns the permitted subtree's base for pattern P: DNS name, ".suffix"
 * for "*.suffix", or address and mask (host bits cleared: a constraint
 * compares them as given).  Sets *IS_IP.  NULL when out of memory.
 */
static GENERAL_NAME *
pattern_subtree(const struct target_pattern *p, int *is_ip)
{
	char dot[TARGET_HOST_MAX + 1];

	*is_ip = p->kind == TARGET_PATTERN_BLOCK;
	if (*is_ip)
		return gn_block(p->addr, p->family, p->plen);
	snprintf(dot, sizeof(dot), "%s%s",
	    p->kind == TARGET_PATTERN_WILD ? "." : "", p->name);
	return gn_dns(dot);
}

/* Appends a permitted subtree of base GN (taken, even on error). */
static int
nc_permit(NAME_CONSTRAINTS *nc, GENERAL_NAME *gn)
{
	GENERAL_SUBTREE *st;

	if (gn == NULL || (st = GENERAL_SUBTREE_new()) == NULL) {
		GENERAL_NAME_free(gn);
		return -1;
	}
	GENERAL_NAME_free(st->base);
	st->base = gn;
	if (sk_GENERAL_SUBTREE_push(nc->permittedSubtrees, st) == 0) {
		GENERAL_SUBTREE_free(st);
		return -1;
	}
	return 0;
}

/*
 * Permits nothing of a name type that HOSTS did not mention: a
 * constraint restricts only the types it lists (RFC 5280 4.2.1.10).
 */
static int
nc_sentinels(NAME_CONSTRAINTS *nc, int dns, int ip)
{
	static const uint8_t none[8] = {0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};

	if (!dns && nc_permit(nc, gn_dns(SENTINEL_DNS)) != 0)
		return -1;
	if (!ip && nc_permit(nc, gn_ip(none, sizeof(none))) != 0)
		return -1;
	return 0;
}

/* Adds critical name constraints permitting exactly PATS to X. */
static int
add_constraints(X509 *x, const struct target_pattern *pats, size_t n)
{
	NAME_CONSTRAINTS *nc = NAME_CONSTRAINTS_new();
	GENERAL_NAME *gn;
	int r = -1, is_ip, dns = 0, ip = 0;
	size_t i;

	if (nc == NULL ||
	    (nc->permittedSubtrees = sk_GENERAL_SUBTREE_new_null()) == NULL)
		goto fail;
	for (i = 0; i < n; i++) {
		gn = pattern_subtree(&pats[i], &is_ip);
		if (nc_permit(nc, gn) != 0)
			goto fail;
		ip |= is_ip;
		dns |= !is_ip;
	}
	if (nc_sentinels(nc, dns, ip) != 0 ||
	    X509_add1_ext_i2d(x, NID_name_constraints, nc, 1, 0) != 1)
		goto fail;
	r = 0;
fail:
	NAME_CONSTRAINTS_free(nc);
	return r;
}

static EVP_PKEY *
p256_key(void)
{
	return EVP_EC_gen("P-256");
}

static time_t
asn1_time(const ASN1_TIME *t)
{
	struct tm tm;

	if (ASN1_TIME_to_tm(t, &tm) != 1)
		return (time_t)-1;
	return timegm(&tm);
}

/* Sets the run CA's subject (and issuer) "CN=pinhole run CA <hex>". */
static int
set_ca_name(X509 *x)
{
	unsigned char b[8];
	char hex[2 * sizeof(b) + 1], cn[64];
	X509_NAME *name = X509_get_subject_name(x);
	size_t i;

	if (RAND_bytes(b, sizeof(b)) != 1)
		return -1;
	for (i = 0; i < sizeof(b); i++)
		snprintf(hex + 2 * i, 3, "%02x", b[i]);
	snprintf(cn, sizeof(cn), "pinhole run CA %s", hex);
	if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	        (const unsigned char *)cn, -1, -1, 0) != 1)
		return -1;
	return X509_set_issuer_name(x, name) == 1 ? 0 : -1;
}

/* Everything of the run CA's certificate but constraints and signature. */
static int
build_ca_cert(X509 *x, EVP_PKEY *key, unsigned hours)
{
	time_t now = time(NULL);

	if (X509_set_version(x, X509_VERSION_3) != 1 || set_serial(x) != 0 ||
	    set_ca_name(x) != 0 || X509_set_pubkey(x, key) != 1 ||
	    X509_time_adj(X509_getm_notBefore(x), -SKEW_SECS, &now) == NULL ||
	    X509_time_adj_ex(X509_getm_notAfter(x), (int)(hours / 24),
	        (long)(hours % 24) * 3600, &now) == NULL)
		return -1;
	return add_exts(x, x, ca_exts, sizeof(ca_exts) / sizeof(ca_exts[0]));
}

/* Renders CA->cert as PEM into CA->pem.  Returns 0 or -1. */
static int
make_pem(struct ca *ca)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data;
	long len;
	int r = -1;

	if (b == NULL || PEM_write_bio_X509(b, ca->cert) != 1 ||
	    (len = BIO_get_mem_data(b, &data)) <= 0 ||
	    (ca->pem = malloc((size_t)len + 1)) == NULL)
		goto out;
	memcpy(ca->pem, data, (size_t)len);
	ca->pem[len] = '\0';
	r = 0;
out:
	BIO_free(b);
	return r;
}

/* The parts common to a run CA and a loaded one, once cert and key are set. */
static int
ca_finish(struct ca *ca, char *err, size_t errlen)
{
	int crit;

	ca->nc = X509_get_ext_d2i(ca->cert, NID_name_constraints, &crit, NULL);
	if (ca->nc == NULL && crit != -1) {
		seterr_ssl(
		    err, errlen, "the CA's name constraints are invalid");
		return -1;
	}
	ca->not_before = asn1_time(X509_get0_notBefore(ca->cert));
	ca->not_after = asn1_time(X509_get0_notAfter(ca->cert));
	if (ca->not_before == (time_t)-1 || ca->not_after == (time_t)-1) {
		seterr(err, errlen, "the CA's validity dates are invalid");
		return -1;
	}
	if (make_pem(ca) != 0 || (ca->leaf_key = p256_key()) == NULL) {
		seterr_ssl(err, errlen, "cannot set up the CA");
		return -1;
	}
	return 0;
}

static struct ca *
ca_alloc(char *err, size_t errlen)
{
	struct ca *ca;

	if ((ca = calloc(1, sizeof(*ca))) == NULL) {
		seterr(
		    err, errlen, "cannot allocate the CA: %s", strerror(errno));
		return NULL;
	}
	if ((ca->cache = hmap_new(BUCKETS)) == NULL) {
		seterr(err, errlen, "cannot allocate the CA's cache");
		free(ca);
		return NULL;
	}
	return ca;
}

static int
has_any(const struct target_pattern *pats, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (pats[i].kind == TARGET_PATTERN_ANY)
			return 1;
	return 0;
}

struct ca *
ca_new_run_for(const struct target_pattern *pats, size_t n,
    unsigned valid_hours, char *err, size_t errlen)
{
	struct ca *ca = NULL;

	ERR_set_mark();
	if (n > 0 && pats == NULL) {
		seterr(err, errlen, "no hosts given for the CA");
		goto out;
	}
	if ((ca = ca_alloc(err, errlen)) == NULL)
		goto out;
	if ((ca->key = p256_key()) == NULL || (ca->cert = X509_new()) == NULL ||
	    build_ca_cert(ca->cert, ca->key,
	        valid_hours != 0 ? valid_hours : CA_DEFAULT_HOURS) != 0) {
		seterr_ssl(err, errlen, "cannot make the run CA");
		goto fail;
	}
	if (!has_any(pats, n) && add_constraints(ca->cert, pats, n) != 0) {
		seterr_ssl(
		    err, errlen, "cannot build the CA's name constraints");
		goto fail;
	}
	if (X509_sign(ca->cert, ca->key, EVP_sha256()) <= 0) {
		seterr_ssl(err, errlen, "cannot sign the run CA");
		goto fail;
	}
	if (ca_finish(ca, err, errlen) == 0)
		goto out;
fail:
	ca_free(ca);
	ca = NULL;
out:
	ERR_pop_to_mark();
	return ca;
}

/*
 * Reads host text H ("name", "*.suffix", "addr", "addr/len" or "*") as a
 * pattern whose name is kept in *TH.  Returns 0, or -1 with ERR set.
 */
static int
text_pattern(const char *h, struct target_host *th, struct target_pattern *p,
    char *err, size_t errlen)
{
	struct target_cidr c;
	char shown[81];
	int wild = strncmp(h, "*.", 2) == 0, ok = 1;

	memset(p, 0, sizeof(*p));
	if (strcmp(h, "*") == 0)
		p->kind = TARGET_PATTERN_ANY;
	else if (strchr(h, '/') != NULL) {
		ok = target_cidr_parse(h, strlen(h), &c) == TARGET_CIDR_OK;
		target_pattern_block(p, c.family, c.addr, c.plen);
	} else if ((ok = target_host_parse(
	                     h + 2 * wild, strlen(h + 2 * wild), th) == 0 &&
	                   (!wild || th->kind == TARGET_NAME))) {
		if (th->kind != TARGET_NAME)
			target_pattern_block(p, th->kind == TARGET_V4 ? 4 : 6,
			    th->addr, th->kind == TARGET_V4 ? 32 : 128);
		else {
			p->kind =
			    wild ? TARGET_PATTERN_WILD : TARGET_PATTERN_NAME;
			p->name = th->name;
		}
	}
	if (!ok)
		seterr(err, errlen,
		    "cannot constrain the CA to '%s': not a host name, "
		    "*.suffix, address or CIDR",
		    printable(shown, h));
	return ok ? 0 : -1;
}

struct ca *
ca_new_run(const char *const *hosts, size_t n, unsigned valid_hours, char *err,
    size_t errlen)
{
	struct target_pattern *pats = NULL, any = {.kind = TARGET_PATTERN_ANY};
	struct target_host *ths = NULL;
	struct ca *ca = NULL;
	size_t i;

	if (n > 0 && hosts == NULL) {
		seterr(err, errlen, "no hosts given for the CA");
		goto out;
	}
	/* "*" leaves the CA unconstrained, whatever else is named. */
	for (i = 0; i < n; i++)
		if (strcmp(hosts[i], "*") == 0) {
			ca = ca_new_run_for(&any, 1, valid_hours, err, errlen);
			goto out;
		}
	if ((pats = calloc(n + 1, sizeof(*pats))) == NULL ||
	    (ths = calloc(n + 1, sizeof(*ths))) == NULL) {
		seterr(
		    err, errlen, "cannot allocate the CA: %s", strerror(errno));
		goto out;
	}
	for (i = 0; i < n; i++)
		if (text_pattern(hosts[i], &ths[i], &pats[i], err, errlen) != 0)
			goto out;
	ca = ca_new_run_for(pats, n, valid_hours, err, errlen);
out:
	free(pats);
	free(ths);
	return ca;
}

/*
 * The rule for secret files (secfile_check) applied to the open key
 * file FD, with messages that name the CA key.  The symlink refusal is
 * the caller's O_NOFOLLOW.
 */
static int
check_key_file(int fd, const char *path, char *err, size_t errlen)
{
	struct stat sb;

	switch (secfile_check(fd, &sb)) {
	case SECFILE_OK:
		return 0;
	case SECFILE_STAT:
		seterr(err, errlen, "cannot stat CA key %s: %s", path,
		    strerror(errno));
		break;
	case SECFILE_NOT_REGULAR:
		seterr(err, errlen, "CA key %s is not a regular file", path);
		break;
	case SECFILE_OWNER:
		seterr(err, errlen,
		    "CA key %s is owned by uid %u; it must be owned by you "
		    "(uid %u) or root",
		    path, (unsigned)sb.st_uid, (unsigned)getuid());
		break;
	case SECFILE_MODE:
		seterr(err, errlen,
		    "CA key %s is mode %04o; it must be 0600 or 0400 "
		    "(chmod 600 %s)",
		    path, (unsigned)(sb.st_mode & 07777), path);
		break;
	}
	return -1;
}

/* Opens the key file without following a final symlink, and checks it. */
static int
open_key_file(const char *path, char *err, size_t errlen)
{
	int fd, flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW;

	/* O_NONBLOCK: a FIFO must be refused by the check, not hang here. */
	if ((fd = open(path, flags | O_NONBLOCK)) == -1) {
		if (errno == ELOOP)
			seterr(err, errlen,
			    "CA key %s is a symbolic link; name the key file "
			    "itself",
			    path);
		else
			seterr(err, errlen, "cannot open CA key %s: %s", path,
			    strerror(errno));
		return -1;
	}
	if (check_key_file(fd, path, err, errlen) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Refuses encrypted keys instead of prompting on the terminal. */
static int
no_passphrase(char *buf, int size, int rwflag, void *arg)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	*(int *)arg = 1;
	return -1;
}

/* Decodes the PEM key in BUF.  Returns it, or NULL with ERR set. */
static EVP_PKEY *
decode_key(
    const char *buf, size_t len, const char *path, char *err, size_t errlen)
{
	BIO *b = BIO_new_mem_buf(buf, (int)len);
	EVP_PKEY *key = NULL;
	int asked = 0;

	if (b != NULL)
		key = PEM_read_bio_PrivateKey(b, NULL, no_passphrase, &asked);
	BIO_free(b);
	if (key == NULL && asked)
		seterr(err, errlen,
		    "CA key %s is encrypted; pinhole cannot prompt for a "
		    "passphrase (decrypt it with openssl pkey and keep it "
		    "mode 0600)",
		    path);
	else if (key == NULL)
		seterr_ssl(
		    err, errlen, "cannot read a PEM private key from %s", path);
	return key;
}

/* Loads the private key at PATH.  Returns it, or NULL with ERR set. */
static EVP_PKEY *
load_key(const char *path, char *err, size_t errlen)
{
	EVP_PKEY *key = NULL;
	char *buf = NULL;
	ssize_t n;
	int fd;

	if ((fd = open_key_file(path, err, errlen)) == -1)
		return NULL;
	if ((buf = malloc(KEY_FILE_MAX)) == NULL ||
	    (n = fd_read_all(fd, buf, KEY_FILE_MAX)) == -1) {
		seterr(err, errlen, "cannot read CA key %s: %s", path,
		    strerror(errno));
		goto out;
	}
	if (n == KEY_FILE_MAX)
		seterr(err, errlen, "CA key %s is larger than %d bytes", path,
		    KEY_FILE_MAX);
	else
		key = decode_key(buf, (size_t)n, path, err, errlen);
out:
	/* All of it: a failed read may have left part of the key behind. */
	if (buf != NULL)
		OPENSSL_cleanse(buf, KEY_FILE_MAX);
	free(buf);
	close(fd);
	return key;
}

/* Loads the first certificate in the PEM file PATH. */
static X509 *
load_cert(const char *path, char *err, size_t errlen)
{
	X509 *x = NULL;
	FILE *fp;

	if ((fp = fopen(path, "re")) == NULL) {
		seterr(err, errlen, "cannot open CA certificate %s: %s", path,
		    strerror(errno));
		return NULL;
	}
	if ((x = PEM_read_X509(fp, NULL, NULL, NULL)) == NULL)
		seterr_ssl(
		    err, errlen, "cannot read a PEM certificate from %s", path);
	fclose(fp);
	return x;
}

/* Checks that X, from PATH, may issue server certificates now. */
static int
check_ca_cert(X509 *x, const char *path, char *err, size_t errlen)
{
	uint32_t flags = X509_get_extension_flags(x);

	if (flags & EXFLAG_INVALID) {
		seterr(err, errlen, "CA certificate %s has invalid extensions",
		    path);
		return -1;
	}
	if (!(flags & EXFLAG_CA)) {
		seterr(err, errlen,
		    "%s is not a CA certificate (no basicConstraints CA:TRUE)",
		    path);
		return -1;
	}
	if ((flags & EXFLAG_KUSAGE) &&
	    !(X509_get_key_usage(x) & KU_KEY_CERT_SIGN)) {
		seterr(err, errlen,
		    "CA certificate %s does not allow keyCertSign", path);
		return -1;
	}
	if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0) {
		seterr(err, errlen, "CA certificate %s has expired", path);
		return -1;
	}
	/* Its leaves could not start before it, and clients refuse it. */
	if (X509_cmp_current_time(X509_get0_notBefore(x)) >= 0) {
		seterr(err, errlen, "CA certificate %s is not valid yet", path);
		return -1;
	}
	return 0;
}

/* Checks that KEY is of a type we sign with, and is the key of X. */
static int
check_pair(X509 *x, EVP_PKEY *key, const char *cert_path, const char *key_path,
    char *err, size_t errlen)
{
	int id = EVP_PKEY_get_base_id(key);

	if (id != EVP_PKEY_EC && id != EVP_PKEY_RSA) {
		seterr(err, errlen, "CA key %s is %s; use an EC or RSA key",
		    key_path, OBJ_nid2sn(id));
		return -1;
	}
	if (X509_check_private_key(x, key) != 1) {
		seterr(err, errlen, "CA key %s does not match certificate %s",
		    key_path, cert_path);
		return -1;
	}
	return 0;
}

struct ca *
ca_load(const char *cert_path, const char *key_path, char *err, size_t errlen)
{
	struct ca *ca = NULL;
	EVP_PKEY *key = NULL;
	X509 *x = NULL;

	ERR_set_mark();
	if ((x = load_cert(cert_path, err, errlen)) == NULL ||
	    check_ca_cert(x, cert_path, err, errlen) != 0 ||
	    (key = load_key(key_path, err, errlen)) == NULL ||
	    check_pair(x, key, cert_path, key_path, err, errlen) != 0 ||
	    (ca = ca_alloc(err, errlen)) == NULL)
		goto out;
	ca->cert = x;
	ca->key = key;
	x = NULL;
	key = NULL;
	if (ca_finish(ca, err, errlen) != 0) {
		ca_free(ca);
		ca = NULL;
	}
out:
	X509_free(x);
	EVP_PKEY_free(key);
	ERR_pop_to_mark();
	return ca;
}

struct ca *
ca_clone(const struct ca *ca)
{
	struct ca *c = ca_alloc(NULL, 0);

	if (c == NULL)
		return NULL;
	c->cert = ca->cert;
	c->key = ca->key;
	c->leaf_key = ca->leaf_key;
	c->nc = ca->nc;
	c->pem = ca->pem;
	c->not_before = ca->not_before;
	c->not_after = ca->not_after;
	c->clone = 1;
	return c;
}

void
ca_free(struct ca *ca)
{
	if (ca == NULL)
		return;
	cache_clear(ca);
	hmap_free(ca->cache);
	if (ca->clone) {
		free(ca);
		return;
	}
	/* EVP_PKEY_free clears the key material it frees. */
	EVP_PKEY_free(ca->key);
	EVP_PKEY_free(ca->leaf_key);
	X509_free(ca->cert);
	NAME_CONSTRAINTS_free(ca->nc);
	free(ca->pem); /* public */
	free(ca);
}

const char *
ca_cert_pem(const struct ca *ca)
{
	return ca->pem;
}

int
ca_constrained(const struct ca *ca)
{
	return ca->nc != NULL;
}

size_t
ca_cache_count(const struct ca *ca)
{
	return ca->count;
}

/*
 * Sets the leaf's subject and its one subjectAltName.  An address, or a
 * name too long for a CN, gets an empty subject, and then the SAN must
 * be critical (RFC 5280 4.1.2.6).  An address is never put in the CN:
 * with no DNS SAN, OpenSSL checks a CN that looks like a host name
 * against the CA's DNS constraints, and "127.0.0.1" would fail them.
 */
static int
leaf_names(X509 *x, const struct target_host *h)
{
	X509_NAME *name = X509_get_subject_name(x);
	GENERAL_NAMES *san = sk_GENERAL_NAME_new_null();
	GENERAL_NAME *gn;
	int cn = h->kind == TARGET_NAME && h->len <= CN_MAX, r = -1;

	if (cn &&
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	        (const unsigned char *)h->name, -1, -1, 0) != 1)
		goto out;
	if (h->kind == TARGET_NAME)
		gn = gn_dns(h->name);
	else
		gn = gn_ip(h->addr, h->kind == TARGET_V4 ? 4 : 16);
	if (san == NULL || gn == NULL || sk_GENERAL_NAME_push(san, gn) == 0) {
		GENERAL_NAME_free(gn);
		goto out;
	}
	if (X509_add1_ext_i2d(x, NID_subject_alt_name, san, !cn, 0) == 1)
		r = 0;
out:
	GENERAL_NAMES_free(san);
	return r;
}

/* Validity: from SKEW_SECS ago to LEAF_SECS ahead, within the CA's. */
static int
leaf_times(X509 *x, const struct ca *ca, time_t now, time_t *expires)
{
	time_t from = now - SKEW_SECS, to = now + LEAF_SECS;

	if (from < ca->not_before)
		from = ca->not_before;
	if (to > ca->not_after)
		to = ca->not_after;
	*expires = to;
	if (ASN1_TIME_set(X509_getm_notBefore(x), from) == NULL ||
	    ASN1_TIME_set(X509_getm_notAfter(x), to) == NULL)
		return -1;
	return 0;
}

/* Everything of a leaf but its names, constraint check and signature. */
static int
leaf_body(X509 *x, const struct ca *ca, time_t now, time_t *expires)
{
	if (X509_set_version(x, X509_VERSION_3) != 1 || set_serial(x) != 0 ||
	    X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) != 1 ||
	    X509_set_pubkey(x, ca->leaf_key) != 1 ||
	    leaf_times(x, ca, now, expires) != 0)
		return -1;
	return add_exts(
	    x, ca->cert, leaf_exts, sizeof(leaf_exts) / sizeof(leaf_exts[0]));
}

/*
 * Returns X509_V_OK if the signed leaf X is within the CA's constraints.
 * NAME_CONSTRAINTS_check() reads the names from X's extension cache,
 * which must only be filled once X is final, that is signed: the cache
 * also holds the certificate's hash.
 */
static int
leaf_permitted(const struct ca *ca, X509 *x)
{
	if (X509_get_extension_flags(x) & EXFLAG_INVALID)
		return X509_V_ERR_INVALID_EXTENSION;
	return NAME_CONSTRAINTS_check(x, ca->nc);
}

/*
 * Issues a leaf for the normalised host H; with CHECK, refuses one that
 * the CA's name constraints forbid.  Returns it, or NULL with ERR set.
 */
static X509 *
leaf_issue(struct ca *ca, const struct target_host *h, int check,
    time_t *expires, char *err, size_t errlen)
{
	time_t now = time(NULL);
	X509 *x = NULL;
	int v;

	if (now >= ca->not_after) {
		seterr(err, errlen, "the CA has expired");
		return NULL;
	}
	if ((x = X509_new()) == NULL || leaf_body(x, ca, now, expires) != 0 ||
	    leaf_names(x, h) != 0 || X509_sign(x, ca->key, EVP_sha256()) <= 0) {
		seterr_ssl(
		    err, errlen, "cannot make a certificate for %s", h->name);
		goto fail;
	}
	if (check && ca->nc != NULL &&
	    (v = leaf_permitted(ca, x)) != X509_V_OK) {
		seterr(err, errlen,
		    "%s is outside the CA's name constraints (%s)", h->name,
		    X509_verify_cert_error_string(v));
		goto fail;
	}
	return x;
fail:
	X509_free(x);
	return NULL;
}

static int
parse_host(const char *host, struct target_host *h, char *err, size_t errlen)
{
	char shown[81];
	int r;

	if (host == NULL) {
		seterr(err, errlen, "no certificate for a NULL host");
		return -1;
	}
	if ((r = target_host_parse(host, strlen(host), h)) != 0) {
		seterr(err, errlen, "no certificate for '%s': %s",
		    printable(shown, host), target_strerror(r));
		return -1;
	}
	return 0;
}

/* A cached leaf is reused unless a fresh one would outlive it by much. */
static int
leaf_fresh(const struct ca *ca, const struct leaf *e, time_t now)
{
	return e->expires - now > REFRESH_SECS || e->expires >= ca->not_after;
}

/*
 * Returns the cached leaf for H, issuing (or reissuing) it as needed, or
 * NULL with ERR set.
 */
static struct leaf *
leaf_get(struct ca *ca, const struct target_host *h, char *err, size_t errlen)
{
	struct leaf *e = cache_find(ca, h->name, h->len);
	time_t expires;
	X509 *x;

	if (e != NULL && leaf_fresh(ca, e, time(NULL)))
		return e;
	if ((x = leaf_issue(ca, h, 1, &expires, err, errlen)) == NULL)
		return NULL;
	if (e != NULL) {
		X509_free(e->cert);
		e->cert = x;
		e->expires = expires;
	} else if ((e = cache_add(ca, h->name, h->len, x, expires)) == NULL) {
		seterr(err, errlen, "cannot cache a certificate: %s",
		    strerror(errno));
		X509_free(x);
	}
	return e;
}

int
ca_leaf(struct ca *ca, const char *host, X509 **cert, EVP_PKEY **key, char *err,
    size_t errlen)
{
	struct target_host h;
	struct leaf *e;
	int r = -1;

	ERR_set_mark();
	if (parse_host(host, &h, err, errlen) != 0 ||
	    (e = leaf_get(ca, &h, err, errlen)) == NULL)
		goto out;
	*cert = e->cert;
	*key = ca->leaf_key;
	r = 0;
out:
	ERR_pop_to_mark();
	return r;
}

int
ca_leaf_unchecked(struct ca *ca, const char *host, X509 **cert, EVP_PKEY **key,
    char *err, size_t errlen)
{
	struct target_host h;
	time_t expires;
	int r = -1;

	ERR_set_mark();
	if (parse_host(host, &h, err, errlen) != 0 ||
	    (*cert = leaf_issue(ca, &h, 0, &expires, err, errlen)) == NULL)
		goto out;
	EVP_PKEY_up_ref(ca->leaf_key);
	*key = ca->leaf_key;
	r = 0;
out:
	ERR_pop_to_mark();
	return r;
}

/* One PEM block of a trust file: a certificate, written anew into OUT. */
static int
trust_block(const char *name, const unsigned char *data, long len, BIO *out,
    char *err, size_t errlen)
{
	const unsigned char *p = data;
	X509 *x = NULL;
	int rc = -1;

	if (strcmp(name, PEM_STRING_X509) != 0 &&
	    strcmp(name, PEM_STRING_X509_OLD) != 0)
		seterr(err, errlen,
		    "holds a %s block, not only certificates (the sandbox "
		    "would see it)",
		    name);
	else if ((x = d2i_X509(NULL, &p, len)) == NULL || p != data + len)
		seterr_ssl(err, errlen, "a certificate that cannot be parsed");
	else if (!PEM_write_bio_X509(out, x))
		seterr_ssl(err, errlen, "cannot write a certificate");
	else
		rc = 0;
	X509_free(x);
	return rc;
}

int
ca_read_certs(const char *path, char **pem, char *err, size_t errlen)
{
	BIO *in = BIO_new_file(path, "r"), *out = BIO_new(BIO_s_mem());
	char *name = NULL, *header = NULL, *p;
	unsigned char *data = NULL;
	long len, n = 0;
	int count = 0, rc = -1;

	*pem = NULL;
	if (in == NULL || out == NULL) {
		seterr(
		    err, errlen, "%s", in ? "out of memory" : strerror(errno));
		goto out;
	}
	for (; PEM_read_bio(in, &name, &header, &data, &len) == 1; count++) {
		rc = trust_block(name, data, len, out, err, errlen);
		OPENSSL_free(name);
		OPENSSL_free(header);
		OPENSSL_free(data);
		if (rc != 0)
			goto out;
		rc = -1;
	}
	if (ERR_GET_REASON(ERR_peek_last_error()) != PEM_R_NO_START_LINE)
		seterr_ssl(err, errlen, "a PEM block that cannot be decoded");
	else if (count == 0)
		seterr(err, errlen, "holds no PEM certificate");
	else if ((n = BIO_get_mem_data(out, &p)) <= 0 || n > CA_TRUST_MAX)
		seterr(err, errlen, "more than %d bytes of certificates",
		    CA_TRUST_MAX);
	else if ((*pem = malloc((size_t)n + 1)) == NULL)
		seterr(err, errlen, "out of memory");
	else {
		memcpy(*pem, p, (size_t)n);
		(*pem)[n] = '\0';
		rc = count;
	}
out:
	ERR_clear_error();
	BIO_free(in);
	BIO_free(out);
	return rc;
}
