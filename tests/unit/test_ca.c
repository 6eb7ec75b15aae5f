/*
 * test_ca.c: unit tests of proxy/ca.c, the interception CA.
 *
 * Every leaf is judged by OpenSSL's own verifier (X509_verify_cert with a
 * store that holds only the CA, the TLS server purpose and the expected
 * host or address), as a client in the sandbox would judge it.  Leaves
 * outside the name constraints are forged with ca_leaf_unchecked(), the
 * CA_INTERNAL hook that skips ca_leaf()'s own check, to show that the
 * constraints hold even against a leaf the CA key did sign.
 *
 * CAs for ca_load() are made here with the OpenSSL API and written to a
 * mkdtemp directory under $TMPDIR (or /tmp).
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#define CA_INTERNAL
#include "common/xmalloc.h"
#include "policy/target.h"
#include "proxy/ca.h"
#include "tests/unit/fixture.h"

#define ERRLEN 512
/* An uid that is neither root nor, in the unprivileged run, ours. */
#define OTHER_UID 4321

struct fixture {
	char dir[PATH_MAX];
	char cert[PATH_MAX + 32];
	char key[PATH_MAX + 32];
	char err[ERRLEN];
};

static const char *const hosts4[] = {
    "example.com", "*.pkg.test", "127.0.0.1", "10.0.0.0/8"};

static int
setup(void **state)
{
	struct fixture *f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return -1;
	if (fixture_tmpdir(f->dir, sizeof(f->dir), "test_ca") != 0)
		return -1;
	snprintf(f->cert, sizeof(f->cert), "%s/ca.pem", f->dir);
	snprintf(f->key, sizeof(f->key), "%s/ca.key", f->dir);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	fixture_rmtree(f->dir);
	free(f);
	/* Each test must leave OpenSSL's error queue as it found it. */
	if (ERR_peek_error() != 0) {
		ERR_print_errors_fp(stderr);
		return -1;
	}
	return 0;
}

static struct ca *
new_run(struct fixture *f, const char *const *hosts, size_t n, unsigned hours)
{
	struct ca *ca = ca_new_run(hosts, n, hours, f->err, sizeof(f->err));

	if (ca == NULL)
		fail_msg("ca_new_run: %s", f->err);
	return ca;
}

/* The CA certificate, parsed back from ca_cert_pem(); the caller frees. */
static X509 *
ca_x509(const struct ca *ca)
{
	const char *pem = ca_cert_pem(ca);
	BIO *b = BIO_new_mem_buf(pem, (int)strlen(pem));
	X509 *x;

	assert_non_null(b);
	x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	assert_non_null(x);
	return x;
}

static int
is_ip(const char *s)
{
	return strchr(s, ':') != NULL || strspn(s, "0123456789.") == strlen(s);
}

/* HOST without the brackets of an IPv6 literal, in BUF. */
static const char *
bare(const char *host, char *buf, size_t len)
{
	size_t n = strlen(host);

	if (host[0] != '[' || n < 2 || host[n - 1] != ']')
		return host;
	snprintf(buf, len, "%.*s", (int)(n - 2), host + 1);
	return buf;
}

/*
 * Verifies LEAF against a store holding only ROOT, as a TLS client that
 * asked for NAME would.  Returns X509_V_OK or the verifier's error.
 */
static int
verify(X509 *root, X509 *leaf, const char *name)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_VERIFY_PARAM *vp;
	int r;

	assert_non_null(store);
	assert_non_null(ctx);
	assert_int_equal(X509_STORE_add_cert(store, root), 1);
	assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
	assert_int_equal(
	    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER), 1);
	vp = X509_STORE_CTX_get0_param(ctx);
	if (is_ip(name))
		assert_int_equal(X509_VERIFY_PARAM_set1_ip_asc(vp, name), 1);
	else
		assert_int_equal(X509_VERIFY_PARAM_set1_host(vp, name, 0), 1);
	r = X509_verify_cert(ctx) == 1 ? X509_V_OK
	                               : X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	ERR_clear_error();
	return r;
}

/*
 * Checks that the hash OpenSSL caches in X (X509_cmp compares it) is that
 * of the signed certificate, as decoding it again gives.
 */
static void
check_hash(X509 *x)
{
	unsigned char *der = NULL, *p;
	const unsigned char *q;
	X509 *y;
	int len;

	assert_true((len = i2d_X509(x, &der)) > 0);
	q = p = der;
	assert_non_null(y = d2i_X509(NULL, &q, len));
	assert_int_equal(X509_cmp(x, y), 0);
	X509_free(y);
	OPENSSL_free(p);
}

/* Gets a leaf for HOST and checks that it verifies for NAME. */
static X509 *
leaf_ok(struct fixture *f, struct ca *ca, const char *host, const char *name)
{
	X509 *root = ca_x509(ca), *cert = NULL;
	EVP_PKEY *key = NULL;
	int v;

	if (ca_leaf(ca, host, &cert, &key, f->err, sizeof(f->err)) != 0)
		fail_msg("ca_leaf %s: %s", host, f->err);
	assert_non_null(cert);
	assert_non_null(key);
	assert_int_equal(X509_check_private_key(cert, key), 1);
	check_hash(cert);
	if ((v = verify(root, cert, name)) != X509_V_OK)
		fail_msg("leaf %s does not verify for %s: %s", host, name,
		    X509_verify_cert_error_string(v));
	X509_free(root);
	return cert;
}

/* Checks that ca_leaf() refuses HOST for the CA's name constraints. */
static void
leaf_refused(struct fixture *f, struct ca *ca, const char *host)
{
	X509 *cert = NULL;
	EVP_PKEY *key = NULL;

	if (ca_leaf(ca, host, &cert, &key, f->err, sizeof(f->err)) == 0)
		fail_msg("ca_leaf %s succeeded outside the constraints", host);
	assert_null(cert);
	assert_non_null(strstr(f->err, "outside the CA's name constraints"));
}

/*
 * Forges a leaf for HOST, signed by the CA key but not checked, and
 * returns what the verifier says of it for HOST.
 */
static int
forged(struct fixture *f, struct ca *ca, const char *host)
{
	X509 *root = ca_x509(ca), *cert;
	EVP_PKEY *key;
	char buf[64];
	int r;

	if (ca_leaf_unchecked(ca, host, &cert, &key, f->err, sizeof(f->err)) !=
	    0)
		fail_msg("ca_leaf_unchecked %s: %s", host, f->err);
	r = verify(root, cert, bare(host, buf, sizeof(buf)));
	X509_free(cert);
	EVP_PKEY_free(key);
	X509_free(root);
	return r;
}

static void
forged_violates(struct fixture *f, struct ca *ca, const char *host)
{
	int v = forged(f, ca, host);

	if (v != X509_V_ERR_PERMITTED_VIOLATION)
		fail_msg("forged leaf %s: %s, not a permitted subtree "
		         "violation",
		    host, X509_verify_cert_error_string(v));
}

/* Returns extension NID of X, checking it is there once; sets *CRIT. */
static void *
ext(X509 *x, int nid, int *crit)
{
	void *p = X509_get_ext_d2i(x, nid, crit, NULL);

	if (p == NULL)
		fail_msg(
		    "extension %s missing (crit %d)", OBJ_nid2sn(nid), *crit);
	return p;
}

/* The GENERAL_NAME as text: "DNS:name" or "IP:hex" (address, mask). */
static void
gn_text(const GENERAL_NAME *gn, char *out, size_t outlen)
{
	const ASN1_STRING *s;
	int i, o;

	if (gn->type == GEN_DNS) {
		s = gn->d.dNSName;
		snprintf(out, outlen, "DNS:%.*s", ASN1_STRING_length(s),
		    (const char *)ASN1_STRING_get0_data(s));
		return;
	}
	assert_int_equal(gn->type, GEN_IPADD);
	s = gn->d.iPAddress;
	o = snprintf(out, outlen, "IP:");
	for (i = 0; i < ASN1_STRING_length(s) && (size_t)o + 3 < outlen; i++)
		o += snprintf(out + o, outlen - (size_t)o, "%02x",
		    ASN1_STRING_get0_data(s)[i]);
}

/* Checks that X's name constraints permit exactly WANT, in order. */
static void
check_permitted(X509 *x, const char *const *want, size_t n)
{
	NAME_CONSTRAINTS *nc;
	GENERAL_SUBTREE *st;
	char text[300];
	int crit, i;

	nc = ext(x, NID_name_constraints, &crit);
	assert_int_equal(crit, 1);
	assert_null(nc->excludedSubtrees);
	assert_int_equal(sk_GENERAL_SUBTREE_num(nc->permittedSubtrees), n);
	for (i = 0; i < (int)n; i++) {
		st = sk_GENERAL_SUBTREE_value(nc->permittedSubtrees, i);
		assert_null(st->minimum);
		assert_null(st->maximum);
		gn_text(st->base, text, sizeof(text));
		assert_string_equal(text, want[i]);
	}
	NAME_CONSTRAINTS_free(nc);
}

/* Checks that X's subjectAltName is exactly WANT; returns its crit. */
static int
check_san(X509 *x, const char *want)
{
	GENERAL_NAMES *san;
	char text[300];
	int crit;

	san = ext(x, NID_subject_alt_name, &crit);
	assert_int_equal(sk_GENERAL_NAME_num(san), 1);
	gn_text(sk_GENERAL_NAME_value(san, 0), text, sizeof(text));
	assert_string_equal(text, want);
	GENERAL_NAMES_free(san);
	return crit;
}

static time_t
to_time(const ASN1_TIME *t)
{
	struct tm tm;

	assert_int_equal(ASN1_TIME_to_tm(t, &tm), 1);
	return timegm(&tm);
}

static void
test_run_ca_cert(void **state)
{
	static const char *const want[] = {"DNS:example.com", "DNS:.pkg.test",
	    "IP:7f000001ffffffff", "IP:0a000000ff000000"};
	struct fixture *f = *state;
	struct ca *ca = new_run(f, hosts4, 4, 0);
	X509 *x = ca_x509(ca);
	char cn[128];
	BASIC_CONSTRAINTS *bc;
	ASN1_BIT_STRING *ku;
	ASN1_OCTET_STRING *ski;
	BIGNUM *serial;
	int crit;

	assert_int_equal(ca_constrained(ca), 1);
	/* Self-signed by an EC P-256 key, with SHA-256. */
	assert_int_equal(X509_check_issued(x, x), X509_V_OK);
	assert_int_equal(X509_verify(x, X509_get0_pubkey(x)), 1);
	assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
	assert_int_equal(
	    EVP_PKEY_get_base_id(X509_get0_pubkey(x)), EVP_PKEY_EC);
	assert_int_equal(EVP_PKEY_get_bits(X509_get0_pubkey(x)), 256);
	assert_true(X509_get_extension_flags(x) & EXFLAG_SS);
	/* Subject "pinhole run CA " and 16 hex digits. */
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x),
	                NID_commonName, cn, sizeof(cn)) > 0);
	assert_int_equal(strlen(cn), 15 + 16);
	assert_int_equal(strncmp(cn, "pinhole run CA ", 15), 0);
	assert_int_equal(strspn(cn + 15, "0123456789abcdef"), 16);
	/* A random 128-bit serial (fewer than 65 bits: p = 2^-64). */
	serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	assert_true(BN_num_bits(serial) > 64 && BN_num_bits(serial) <= 128);
	BN_free(serial);
	bc = ext(x, NID_basic_constraints, &crit);
	assert_int_equal(crit, 1);
	assert_true(bc->ca);
	assert_int_equal(ASN1_INTEGER_get(bc->pathlen), 0);
	BASIC_CONSTRAINTS_free(bc);
	ku = ext(x, NID_key_usage, &crit);
	assert_int_equal(crit, 1);
	assert_int_equal(X509_get_key_usage(x), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
	ASN1_BIT_STRING_free(ku);
	ski = ext(x, NID_subject_key_identifier, &crit);
	assert_int_equal(crit, 0);
	ASN1_OCTET_STRING_free(ski);
	check_permitted(x, want, 4);
	X509_free(x);
	ca_free(ca);
}

static void
test_cert_pem(void **state)
{
	struct fixture *f = *state;
	struct ca *ca = new_run(f, hosts4, 4, 0);
	const char *pem = ca_cert_pem(ca);
	const char *end = "-----END CERTIFICATE-----\n";

	assert_int_equal(strncmp(pem, "-----BEGIN CERTIFICATE-----\n", 28), 0);
	assert_null(strstr(pem, "PRIVATE KEY"));
	assert_null(strstr(pem, "PRIVATE"));
	/* One certificate, and nothing after it. */
	assert_non_null(strstr(pem, end));
	assert_string_equal(strstr(pem, end), end);
	assert_ptr_equal(strstr(pem + 1, "-----BEGIN"), NULL);
	ca_free(ca);
}

/* Checks the fixed parts of a leaf: CA:FALSE, usages, AKI, signature. */
static void
check_leaf_exts(X509 *leaf, X509 *root)
{
	const ASN1_OCTET_STRING *aki = X509_get0_authority_key_id(leaf);
	const ASN1_OCTET_STRING *ski = X509_get0_subject_key_id(root);
	BASIC_CONSTRAINTS *bc;
	ASN1_BIT_STRING *ku;
	int crit;

	bc = ext(leaf, NID_basic_constraints, &crit);
	assert_int_equal(crit, 1);
	assert_false(bc->ca);
	BASIC_CONSTRAINTS_free(bc);
	ku = ext(leaf, NID_key_usage, &crit);
	assert_int_equal(crit, 1);
	ASN1_BIT_STRING_free(ku);
	assert_int_equal(X509_get_key_usage(leaf), KU_DIGITAL_SIGNATURE);
	assert_int_equal(X509_get_extended_key_usage(leaf), XKU_SSL_SERVER);
	assert_non_null(aki);
	assert_non_null(ski);
	assert_int_equal(ASN1_OCTET_STRING_cmp(aki, ski), 0);
	assert_int_equal(X509_get_version(leaf), X509_VERSION_3);
}

static void
test_leaf_verifies(void **state)
{
	struct fixture *f = *state;
	struct ca *ca = new_run(f, hosts4, 4, 0);
	X509 *root = ca_x509(ca), *leaf;
	char cn[128];

	leaf = leaf_ok(f, ca, "example.com", "example.com");
	assert_int_equal(check_san(leaf, "DNS:example.com"), 0);
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(leaf),
	                NID_commonName, cn, sizeof(cn)) > 0);
	assert_string_equal(cn, "example.com");
	check_leaf_exts(leaf, root);
	leaf = leaf_ok(f, ca, "a.pkg.test", "a.pkg.test");
	assert_int_equal(check_san(leaf, "DNS:a.pkg.test"), 0);
	leaf = leaf_ok(f, ca, "x.y.pkg.test", "x.y.pkg.test");
	/* An address: SAN IP, empty subject, so the SAN is critical. */
	leaf = leaf_ok(f, ca, "127.0.0.1", "127.0.0.1");
	assert_int_equal(check_san(leaf, "IP:7f000001"), 1);
	assert_int_equal(X509_NAME_entry_count(X509_get_subject_name(leaf)), 0);
	check_leaf_exts(leaf, root);
	leaf = leaf_ok(f, ca, "10.20.30.40", "10.20.30.40");
	assert_int_equal(check_san(leaf, "IP:0a141e28"), 1);
	/* The leaf is for that name only. */
	assert_int_equal(
	    verify(root, leaf, "10.20.30.41"), X509_V_ERR_IP_ADDRESS_MISMATCH);
	leaf = leaf_ok(f, ca, "example.com", "example.com");
	assert_int_equal(verify(root, leaf, "www.example.com"),
	    X509_V_ERR_HOSTNAME_MISMATCH);
	X509_free(root);
	ca_free(ca);
}

static void
test_leaf_cache(void **state)
{
	struct fixture *f = *state;
	struct ca *ca = new_run(f, hosts4, 4, 0);
	X509 *a, *b;
	EVP_PKEY *ka, *kb;

	assert_int_equal(ca_leaf(ca, "example.com", &a, &ka, NULL, 0), 0);
	assert_int_equal(ca_leaf(ca, "example.com", &b, &kb, NULL, 0), 0);
	assert_ptr_equal(a, b);
	assert_ptr_equal(ka, kb);
	/* Case and a trailing dot do not make a new leaf. */
	assert_int_equal(ca_leaf(ca, "EXAMPLE.Com.", &b, &kb, NULL, 0), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(ca_cache_count(ca), 1);
	/* Nor do other spellings of one address. */
	assert_int_equal(ca_leaf(ca, "127.0.0.1", &a, &ka, NULL, 0), 0);
	assert_int_equal(ca_leaf(ca, "127.1", &b, &kb, NULL, 0), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(
	    ca_leaf(ca, "[::ffff:127.0.0.1]", &b, &kb, NULL, 0), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(ca_cache_count(ca), 2);
	/* Every leaf shares one EC P-256 key. */
	assert_int_equal(ca_leaf(ca, "b.pkg.test", &b, &kb, NULL, 0), 0);
	assert_ptr_not_equal(a, b);
	assert_ptr_equal(ka, kb);
	assert_int_equal(EVP_PKEY_get_base_id(kb), EVP_PKEY_EC);
	assert_int_equal(EVP_PKEY_get_bits(kb), 256);
	assert_int_equal(ca_cache_count(ca), 3);
	ca_free(ca);
}

static void
test_outside_constraints(void **state)
{
	static const char *const out[] = {"evil.test", "pkg.test",
	    "example.com.evil.test", "notexample.com", "11.0.0.1", "127.0.0.2",
	    "9.255.255.255", "::1", "[2001:db8::1]"};
	struct fixture *f = *state;
	struct ca *ca = new_run(f, hosts4, 4, 0);
	size_t i;

	for (i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
		leaf_refused(f, ca, out[i]);
		forged_violates(f, ca, out[i]);
	}
	assert_int_equal(ca_cache_count(ca), 0);
	ca_free(ca);
}

/*
 * RFC 5280 4.2.1.10: a constraint without a leading dot, "example.com",
 * also permits every name under it.  The policy's exact host is the
 * narrower rule; ca_leaf() follows the certificate semantics.
 */
static void
test_exact_host_permits_subdomains(void **state)
{
	struct fixture *f = *state;
	struct ca *ca = new_run(f, hosts4, 4, 0);

	(void)leaf_ok(f, ca, "www.example.com", "www.example.com");
	assert_int_equal(forged(f, ca, "deep.www.example.com"), X509_V_OK);
	ca_free(ca);
}

static void
test_star_unconstrained(void **state)
{
	static const char *const hosts[] = {"example.com", "*"};
	struct fixture *f = *state;
	struct ca *ca = new_run(f, hosts, 2, 0);
	X509 *x = ca_x509(ca);
	int crit;

	assert_int_equal(ca_constrained(ca), 0);
	assert_null(X509_get_ext_d2i(x, NID_name_constraints, &crit, NULL));
	assert_int_equal(crit, -1);
	(void)leaf_ok(f, ca, "evil.test", "evil.test");
	(void)leaf_ok(f, ca, "192.0.2.1", "192.0.2.1");
	(void)leaf_ok(f, ca, "::1", "::1");
	X509_free(x);
	ca_free(ca);
}

static void
test_no_hosts(void **state)
{
	static const char *const want[] = {
	    "DNS:pinhole.invalid", "IP:00000000ffffffff"};
	static const char *const out[] = {
	    "example.com", "evil.test", "127.0.0.1", "::1", "10.0.0.1"};
	struct fixture *f = *state;
	struct ca *ca = new_run(f, NULL, 0, 0);
	X509 *x = ca_x509(ca);
	size_t i;

	assert_int_equal(ca_constrained(ca), 1);
	check_permitted(x, want, 2);
	for (i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
		leaf_refused(f, ca, out[i]);
		forged_violates(f, ca, out[i]);
	}
	X509_free(x);
	ca_free(ca);
}

/* With only names (or only addresses), the other type permits nothing. */
static void
test_one_type_sentinel(void **state)
{
	static const char *const names[] = {"*.pkg.test"};
	static const char *const addrs[] = {"192.0.2.0/24"};
	static const char *const want_n[] = {
	    "DNS:.pkg.test", "IP:00000000ffffffff"};
	static const char *const want_a[] = {
	    "IP:c0000200ffffff00", "DNS:pinhole.invalid"};
	struct fixture *f = *state;
	struct ca *ca = new_run(f, names, 1, 0);
	X509 *x = ca_x509(ca);

	check_permitted(x, want_n, 2);
	(void)leaf_ok(f, ca, "a.pkg.test", "a.pkg.test");
	leaf_refused(f, ca, "127.0.0.1");
	forged_violates(f, ca, "127.0.0.1");
	forged_violates(f, ca, "::1");
	X509_free(x);
	ca_free(ca);
	ca = new_run(f, addrs, 1, 0);
	x = ca_x509(ca);
	check_permitted(x, want_a, 2);
	(void)leaf_ok(f, ca, "192.0.2.77", "192.0.2.77");
	leaf_refused(f, ca, "evil.test");
	forged_violates(f, ca, "evil.test");
	X509_free(x);
	ca_free(ca);
}

static void
test_ipv6(void **state)
{
	static const char *const hosts[] = {"2001:db8::/32", "[::1]"};
	static const char *const want[] = {"IP:20010db8000000000000000000000000"
	                                   "ffffffff000000000000000000000000",
	    "IP:00000000000000000000000000000001"
	    "ffffffffffffffffffffffffffffffff",
	    "DNS:pinhole.invalid"};
	struct fixture *f = *state;
	struct ca *ca = new_run(f, hosts, 2, 0);
	X509 *x = ca_x509(ca), *leaf;

	check_permitted(x, want, 3);
	leaf = leaf_ok(f, ca, "2001:DB8::5", "2001:db8::5");
	assert_int_equal(
	    check_san(leaf, "IP:20010db8000000000000000000000005"), 1);
	(void)leaf_ok(f, ca, "[::1]", "::1");
	leaf_refused(f, ca, "2001:db9::1");
	forged_violates(f, ca, "2001:db9::1");
	/* An IPv4 address never matches an IPv6 constraint. */
	leaf_refused(f, ca, "127.0.0.1");
	forged_violates(f, ca, "127.0.0.1");
	X509_free(x);
	ca_free(ca);
}

/* Typed targets, as the policy hands them, give the text's constraints. */
static void
test_typed_targets(void **state)
{
	static const char *const hosts[] = {
	    "example.com", "*.pkg.test", "127.0.0.1", "10.0.0.0/8", "::1"};
	static const char *const want[] = {"DNS:example.com", "DNS:.pkg.test",
	    "IP:7f000001ffffffff", "IP:0a000000ff000000",
	    "IP:00000000000000000000000000000001"
	    "ffffffffffffffffffffffffffffffff"};
	static const uint8_t lo[4] = {127, 0, 0, 1}, ten[4] = {10};
	static const uint8_t lo6[16] = {[15] = 1};
	struct target_pattern p[6] = {
	    {.kind = TARGET_PATTERN_NAME, .name = "example.com"},
	    {.kind = TARGET_PATTERN_WILD, .name = "pkg.test"},
	};
	struct fixture *f = *state;
	struct ca *ca, *text;
	X509 *x, *y;

	target_pattern_block(&p[2], 4, lo, 32);
	target_pattern_block(&p[3], 4, ten, 8);
	target_pattern_block(&p[4], 6, lo6, 128);
	if ((ca = ca_new_run_for(p, 5, 0, f->err, sizeof(f->err))) == NULL)
		fail_msg("ca_new_run_for: %s", f->err);
	text = new_run(f, hosts, 5, 0);
	x = ca_x509(ca);
	y = ca_x509(text);
	check_permitted(x, want, 5);
	check_permitted(y, want, 5);
	X509_free(x);
	X509_free(y);
	ca_free(ca);
	ca_free(text);
	/* "*" among them: no constraints at all. */
	p[5].kind = TARGET_PATTERN_ANY;
	if ((ca = ca_new_run_for(p, 6, 0, f->err, sizeof(f->err))) == NULL)
		fail_msg("ca_new_run_for: %s", f->err);
	assert_int_equal(ca_constrained(ca), 0);
	ca_free(ca);
}

static void
test_cidr_host_bits(void **state)
{
	static const char *const hosts[] = {
	    "10.1.2.3/8", "192.0.2.255/25", "HOST.Example.", "0.0.0.0/0"};
	static const char *const want[] = {"IP:0a000000ff000000",
	    "IP:c0000280ffffff80", "DNS:host.example", "IP:0000000000000000"};
	struct fixture *f = *state;
	struct ca *ca = new_run(f, hosts, 4, 0);
	X509 *x = ca_x509(ca);

	check_permitted(x, want, 4);
	X509_free(x);
	ca_free(ca);
}

static void
test_bad_hosts(void **state)
{
	static const char *const bad[] = {"exa mple.com", "", "*.",
	    "*.10.0.0.1", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/x", "::/129",
	    "a..b", "caf\xc3\xa9.test", "*.*.example.com", "example.com:443"};
	struct fixture *f = *state;
	struct ca *ca;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ca = ca_new_run(&bad[i], 1, 0, f->err, sizeof(f->err));
		if (ca != NULL)
			fail_msg("ca_new_run accepted '%s'", bad[i]);
		assert_non_null(strstr(f->err, "cannot constrain the CA"));
		assert_null(strchr(f->err, '\n'));
	}
}

static void
test_bad_leaf_hosts(void **state)
{
	static const char *const bad[] = {
	    "", "a b", "a..b", "x\n.com", "example.com:443", "*.pkg.test"};
	struct fixture *f = *state;
	struct ca *ca = new_run(f, hosts4, 4, 0);
	X509 *cert = NULL;
	EVP_PKEY *key = NULL;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (ca_leaf(ca, bad[i], &cert, &key, f->err, sizeof(f->err)) ==
		    0)
			fail_msg("ca_leaf accepted '%s'", bad[i]);
		assert_non_null(strstr(f->err, "no certificate for"));
		assert_null(strchr(f->err, '\n'));
	}
	assert_int_equal(ca_leaf(ca, NULL, &cert, &key, f->err, 8), -1);
	assert_int_equal(strlen(f->err), 7);
	assert_null(cert);
	ca_free(ca);
}

static void
test_validity(void **state)
{
	struct fixture *f = *state;
	struct ca *ca = new_run(f, hosts4, 4, 3);
	X509 *x = ca_x509(ca), *leaf;
	time_t now = time(NULL), ca_from, ca_to;

	ca_from = to_time(X509_get0_notBefore(x));
	ca_to = to_time(X509_get0_notAfter(x));
	assert_true(llabs((long long)(ca_from - (now - 300))) <= 5);
	assert_true(llabs((long long)(ca_to - (now + 3 * 3600))) <= 5);
	/* A 3-hour CA caps its leaves. */
	leaf = leaf_ok(f, ca, "example.com", "example.com");
	assert_true(to_time(X509_get0_notAfter(leaf)) == ca_to);
	assert_true(to_time(X509_get0_notBefore(leaf)) >= ca_from);
	X509_free(x);
	ca_free(ca);
	/* 0 hours is 24; a long-lived CA gives leaves of 24 hours. */
	ca = new_run(f, hosts4, 4, 0);
	x = ca_x509(ca);
	ca_to = to_time(X509_get0_notAfter(x));
	assert_true(llabs((long long)(ca_to - (now + 24 * 3600))) <= 5);
	X509_free(x);
	ca_free(ca);
	ca = new_run(f, hosts4, 4, 24 * 400);
	x = ca_x509(ca);
	ca_to = to_time(X509_get0_notAfter(x));
	assert_true(llabs((long long)(ca_to - (now + 400 * 86400))) <= 5);
	leaf = leaf_ok(f, ca, "a.pkg.test", "a.pkg.test");
	assert_true(to_time(X509_get0_notAfter(leaf)) <= ca_to);
	assert_true(llabs((long long)(to_time(X509_get0_notAfter(leaf)) -
	                (now + 86400))) <= 5);
	assert_true(llabs((long long)(to_time(X509_get0_notBefore(leaf)) -
	                (now - 300))) <= 5);
	X509_free(x);
	ca_free(ca);
}

static void
test_long_name(void **state)
{
	static const char *const hosts[] = {"*.test"};
	struct fixture *f = *state;
	struct ca *ca = new_run(f, hosts, 1, 0);
	char name[200], san[210];
	X509 *leaf;

	/* 3 labels of 60 bytes: 183 bytes, too long for a CN. */
	memset(name, 'a', sizeof(name));
	name[60] = name[121] = '.';
	memcpy(name + 182, ".test", 6);
	leaf = leaf_ok(f, ca, name, name);
	snprintf(san, sizeof(san), "DNS:%s", name);
	assert_int_equal(check_san(leaf, san), 1);
	assert_int_equal(X509_NAME_entry_count(X509_get_subject_name(leaf)), 0);
	/* 64 bytes still fit in the CN. */
	memset(name, 'b', 59);
	memcpy(name + 59, ".test", 6);
	leaf = leaf_ok(f, ca, name, name);
	assert_int_equal(X509_NAME_entry_count(X509_get_subject_name(leaf)), 1);
	ca_free(ca);
}

/* The cache holds CA_CACHE_MAX leaves; the oldest goes first. */
static void
test_eviction(void **state)
{
	static const char *const hosts[] = {"*.evict.test"};
	struct fixture *f = *state;
	struct ca *ca = new_run(f, hosts, 1, 0);
	ASN1_INTEGER *first = NULL, *second = NULL;
	char name[64];
	X509 *cert;
	EVP_PKEY *key;
	int i;

	for (i = 0; i <= CA_CACHE_MAX; i++) {
		snprintf(name, sizeof(name), "h%d.evict.test", i);
		assert_int_equal(ca_leaf(ca, name, &cert, &key, NULL, 0), 0);
		if (i == 0)
			first = ASN1_INTEGER_dup(X509_get0_serialNumber(cert));
		if (i == 1)
			second = ASN1_INTEGER_dup(X509_get0_serialNumber(cert));
		assert_int_equal(ca_cache_count(ca),
		    i < CA_CACHE_MAX ? i + 1 : CA_CACHE_MAX);
	}
	/* h1 is still cached; h0 was dropped and comes back new. */
	assert_int_equal(ca_leaf(ca, "h1.evict.test", &cert, &key, NULL, 0), 0);
	assert_int_equal(
	    ASN1_INTEGER_cmp(second, X509_get0_serialNumber(cert)), 0);
	assert_int_equal(ca_leaf(ca, "h0.evict.test", &cert, &key, NULL, 0), 0);
	assert_int_not_equal(
	    ASN1_INTEGER_cmp(first, X509_get0_serialNumber(cert)), 0);
	assert_int_equal(ca_cache_count(ca), CA_CACHE_MAX);
	ASN1_INTEGER_free(first);
	ASN1_INTEGER_free(second);
	ca_free(ca);
}

static double
elapsed_ms(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 +
	    (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A figure for the record, not a limit: sanitizers slow it down a lot. */
static void
test_speed(void **state)
{
	static const char *const hosts[] = {"*.speed.test"};
	struct fixture *f = *state;
	struct timespec t0;
	struct ca *ca;
	X509 *cert;
	EVP_PKEY *key;
	char name[64];
	double run_ms, new_ms, hit_ms;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ca = new_run(f, hosts, 1, 0);
	run_ms = elapsed_ms(&t0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "n%d.speed.test", i);
		assert_int_equal(ca_leaf(ca, name, &cert, &key, NULL, 0), 0);
	}
	new_ms = elapsed_ms(&t0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "n%d.speed.test", i % 100);
		assert_int_equal(ca_leaf(ca, name, &cert, &key, NULL, 0), 0);
	}
	hit_ms = elapsed_ms(&t0);
	fprintf(stderr,
	    "test_speed: run CA %.2f ms; 100 new leaves %.1f ms (%.0f us "
	    "each); 1000 cached %.2f ms (%.2f us each)\n",
	    run_ms, new_ms, new_ms * 10, hit_ms, hit_ms);
	ca_free(ca);
}

/* ca_load() fixtures: a CA made here, written where the test says. */

struct made {
	X509 *cert;
	EVP_PKEY *key;
};

static void
add_test_ext(X509 *x, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *e;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	e = X509V3_EXT_nconf_nid(NULL, &ctx, nid, value);
	assert_non_null(e);
	assert_int_equal(X509_add_ext(x, e, -1), 1);
	X509_EXTENSION_free(e);
}

/*
 * Makes a self-signed certificate: a CA unless BC says otherwise, with
 * the name constraints NC (or none), valid from FROM to TO seconds from
 * now.
 */
static struct made
make_ca(int rsa, const char *bc, const char *nc, long from, long to)
{
	struct made m;
	time_t now = time(NULL);
	X509_NAME *name;

	m.key = rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-384");
	assert_non_null(m.key);
	assert_non_null(m.cert = X509_new());
	assert_int_equal(X509_set_version(m.cert, X509_VERSION_3), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(m.cert), 7), 1);
	name = X509_get_subject_name(m.cert);
	assert_int_equal(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	                     (const unsigned char *)"test CA", -1, -1, 0),
	    1);
	assert_int_equal(X509_set_issuer_name(m.cert, name), 1);
	assert_int_equal(X509_set_pubkey(m.cert, m.key), 1);
	assert_non_null(X509_time_adj(X509_getm_notBefore(m.cert), from, &now));
	assert_non_null(X509_time_adj(X509_getm_notAfter(m.cert), to, &now));
	add_test_ext(m.cert, NID_basic_constraints, bc);
	add_test_ext(m.cert, NID_subject_key_identifier, "hash");
	if (nc != NULL)
		add_test_ext(m.cert, NID_name_constraints, nc);
	assert_true(X509_sign(m.cert, m.key, EVP_sha256()) > 0);
	return m;
}

static void
made_free(struct made *m)
{
	X509_free(m->cert);
	EVP_PKEY_free(m->key);
}

static void
write_cert(const char *path, X509 *x)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(PEM_write_X509(fp, x), 1);
	assert_int_equal(fclose(fp), 0);
}

/* Writes KEY to PATH with MODE; encrypted with a passphrase if ENC. */
static void
write_key(const char *path, EVP_PKEY *key, mode_t mode, int enc)
{
	FILE *fp;

	(void)remove(path);
	assert_non_null(fp = fopen(path, "w"));
	assert_int_equal(
	    PEM_write_PrivateKey(fp, key, enc ? EVP_aes_256_cbc() : NULL,
	        enc ? (unsigned char *)"pass" : NULL, enc ? 4 : 0, NULL, NULL),
	    1);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static void
write_made(struct fixture *f, const struct made *m, mode_t mode)
{
	write_cert(f->cert, m->cert);
	write_key(f->key, m->key, mode, 0);
}

static struct ca *
load_ok(struct fixture *f)
{
	struct ca *ca = ca_load(f->cert, f->key, f->err, sizeof(f->err));

	if (ca == NULL)
		fail_msg("ca_load: %s", f->err);
	return ca;
}

/* Checks that ca_load fails with a message holding WANT and WANT2. */
static void
load_fails(struct fixture *f, const char *want, const char *want2)
{
	struct ca *ca = ca_load(f->cert, f->key, f->err, sizeof(f->err));

	if (ca != NULL)
		fail_msg("ca_load succeeded; expected '%s'", want);
	if (strstr(f->err, want) == NULL ||
	    (want2 != NULL && strstr(f->err, want2) == NULL))
		fail_msg("'%s' lacks '%s' / '%s'", f->err, want,
		    want2 != NULL ? want2 : "");
	assert_null(strchr(f->err, '\n'));
}

static void
test_load_ok(void **state)
{
	static const mode_t modes[] = {0600, 0400};
	struct fixture *f = *state;
	struct made m;
	struct ca *ca;
	X509 *root;
	size_t i;
	int rsa;

	for (rsa = 0; rsa <= 1; rsa++) {
		m = make_ca(rsa, "critical,CA:TRUE", NULL, -60, 3600);
		for (i = 0; i < 2; i++) {
			write_made(f, &m, modes[i]);
			ca = load_ok(f);
			assert_int_equal(ca_constrained(ca), 0);
			root = ca_x509(ca);
			assert_int_equal(X509_cmp(root, m.cert), 0);
			assert_null(strstr(ca_cert_pem(ca), "PRIVATE"));
			/* The leaf verifies against the pinned certificate. */
			(void)leaf_ok(
			    f, ca, "anything.example", "anything.example");
			(void)leaf_ok(f, ca, "192.0.2.9", "192.0.2.9");
			X509_free(root);
			ca_free(ca);
		}
		made_free(&m);
	}
}

static void
test_load_key_mode(void **state)
{
	static const mode_t bad[] = {0644, 0640, 0604, 0660, 0700 | 0004};
	struct fixture *f = *state;
	struct made m = make_ca(0, "critical,CA:TRUE", NULL, -60, 3600);
	char mode[16];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_made(f, &m, bad[i]);
		snprintf(mode, sizeof(mode), "mode %04o", (unsigned)bad[i]);
		load_fails(f, f->key, mode);
	}
	made_free(&m);
}

static void
test_load_key_symlink(void **state)
{
	struct fixture *f = *state;
	struct made m = make_ca(0, "critical,CA:TRUE", NULL, -60, 3600);
	char real[PATH_MAX + 32];

	write_made(f, &m, 0600);
	snprintf(real, sizeof(real), "%s/real.key", f->dir);
	assert_int_equal(rename(f->key, real), 0);
	assert_int_equal(symlink(real, f->key), 0);
	load_fails(f, f->key, "symbolic link");
	made_free(&m);
}

static void
test_load_key_not_file(void **state)
{
	struct fixture *f = *state;
	struct made m = make_ca(0, "critical,CA:TRUE", NULL, -60, 3600);

	write_cert(f->cert, m.cert);
	assert_int_equal(mkdir(f->key, 0700), 0);
	load_fails(f, f->key, "not a regular file");
	assert_int_equal(rmdir(f->key), 0);
	load_fails(f, f->key, "No such file");
	made_free(&m);
}

static void
test_load_key_owner(void **state)
{
	struct fixture *f = *state;
	struct made m;

	if (geteuid() != 0) {
		fprintf(stderr,
		    "test_load_key_owner: skipped: needs root to chown a "
		    "file to uid %d\n",
		    OTHER_UID);
		skip();
	}
	m = make_ca(0, "critical,CA:TRUE", NULL, -60, 3600);
	write_made(f, &m, 0600);
	assert_int_equal(chown(f->key, OTHER_UID, OTHER_UID), 0);
	load_fails(f, f->key, "owned by uid 4321");
	made_free(&m);
}

static void
test_load_mismatch(void **state)
{
	struct fixture *f = *state;
	struct made a = make_ca(0, "critical,CA:TRUE", NULL, -60, 3600);
	struct made b = make_ca(0, "critical,CA:TRUE", NULL, -60, 3600);

	write_cert(f->cert, a.cert);
	write_key(f->key, b.key, 0600, 0);
	load_fails(f, "does not match", f->cert);
	made_free(&a);
	made_free(&b);
}

static void
test_load_not_ca(void **state)
{
	struct fixture *f = *state;
	struct made m = make_ca(0, "critical,CA:FALSE", NULL, -60, 3600);

	write_made(f, &m, 0600);
	load_fails(f, "is not a CA certificate", f->cert);
	made_free(&m);
}

static void
test_load_expired(void **state)
{
	struct fixture *f = *state;
	struct made m = make_ca(0, "critical,CA:TRUE", NULL, -7200, -3600);

	write_made(f, &m, 0600);
	load_fails(f, "has expired", f->cert);
	made_free(&m);
	m = make_ca(0, "critical,CA:TRUE", NULL, 3600, 7200);
	write_made(f, &m, 0600);
	load_fails(f, "is not valid yet", f->cert);
	made_free(&m);
}

/* An encrypted key is refused at once: no passphrase prompt. */
static void
test_load_encrypted(void **state)
{
	struct fixture *f = *state;
	struct made m = make_ca(0, "critical,CA:TRUE", NULL, -60, 3600);

	write_cert(f->cert, m.cert);
	write_key(f->key, m.key, 0600, 1);
	load_fails(f, "is encrypted", f->key);
	made_free(&m);
}

static void
test_load_garbage(void **state)
{
	struct fixture *f = *state;
	struct made m = make_ca(0, "critical,CA:TRUE", NULL, -60, 3600);
	FILE *fp;

	write_made(f, &m, 0600);
	assert_non_null(fp = fopen(f->key, "w"));
	fputs("not a key\n", fp);
	fclose(fp);
	load_fails(f, "cannot read a PEM private key from", f->key);
	write_cert(f->key, m.cert);
	load_fails(f, "cannot read a PEM private key from", f->key);
	write_key(f->cert, m.key, 0600, 0);
	load_fails(f, "cannot read a PEM certificate from", f->cert);
	made_free(&m);
}

/*
 * A loaded CA keeps its own constraints, and they show why a run CA
 * needs the sentinels: with DNS constraints only, any address passes.
 */
static void
test_load_constrained(void **state)
{
	struct fixture *f = *state;
	struct made m = make_ca(
	    0, "critical,CA:TRUE", "critical,permitted;DNS:ok.test", -60, 3600);
	struct ca *ca;

	write_made(f, &m, 0600);
	ca = load_ok(f);
	assert_int_equal(ca_constrained(ca), 1);
	(void)leaf_ok(f, ca, "ok.test", "ok.test");
	(void)leaf_ok(f, ca, "www.ok.test", "www.ok.test");
	leaf_refused(f, ca, "evil.test");
	forged_violates(f, ca, "evil.test");
	(void)leaf_ok(f, ca, "203.0.113.1", "203.0.113.1");
	ca_free(ca);
	made_free(&m);
}

static void
test_free_null(void **state)
{
	(void)state;
	ca_free(NULL);
}

#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

/* ca_read_certs: certificates only, written anew; anything else refused. */
static void
test_read_certs(void **state)
{
	struct fixture *f = *state;
	struct ca *a = new_run(f, hosts4, 1, 0), *b = new_run(f, hosts4, 2, 0);
	char *pem = NULL, *text;

	/* Two certificates with text around them: both, nothing else. */
	text =
	    xasprintf("comment\n%sbetween\n%s", ca_cert_pem(a), ca_cert_pem(b));
	fixture_write_file(f->cert, text);
	free(text);
	assert_int_equal(ca_read_certs(f->cert, &pem, f->err, ERRLEN), 2);
	assert_non_null(strstr(pem, ca_cert_pem(a)));
	assert_non_null(strstr(pem, ca_cert_pem(b)));
	assert_null(strstr(pem, "comment"));
	free(pem);
	/* A private key with it: refused, the key never read out. */
	text = xasprintf("%s-----BEGIN PRIVATE KEY-----\nMC4CAQAw\n"
	                 "-----END PRIVATE KEY-----\n",
	    ca_cert_pem(a));
	fixture_write_file(f->cert, text);
	free(text);
	assert_int_equal(ca_read_certs(f->cert, &pem, f->err, ERRLEN), -1);
	assert_null(pem);
	assert_non_null(strstr(f->err, "PRIVATE KEY block"));
	/* No certificate; a broken one; no file. */
	fixture_write_file(f->cert, "just text\n");
	assert_int_equal(ca_read_certs(f->cert, &pem, f->err, ERRLEN), -1);
	assert_non_null(strstr(f->err, "no PEM certificate"));
	fixture_write_file(f->cert,
	    "-----BEGIN CERTIFICATE-----\nAAAA\n"
	    "-----END CERTIFICATE-----\n");
	assert_int_equal(ca_read_certs(f->cert, &pem, f->err, ERRLEN), -1);
	assert_non_null(strstr(f->err, "cannot be parsed"));
	assert_int_equal(
	    ca_read_certs("/nonexistent/x.pem", &pem, f->err, ERRLEN), -1);
	assert_non_null(strstr(f->err, "No such file"));
	ca_free(a);
	ca_free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_read_certs),
	    T(test_run_ca_cert),
	    T(test_cert_pem),
	    T(test_leaf_verifies),
	    T(test_leaf_cache),
	    T(test_outside_constraints),
	    T(test_exact_host_permits_subdomains),
	    T(test_star_unconstrained),
	    T(test_no_hosts),
	    T(test_one_type_sentinel),
	    T(test_ipv6),
	    T(test_cidr_host_bits),
	    T(test_typed_targets),
	    T(test_bad_hosts),
	    T(test_bad_leaf_hosts),
	    T(test_validity),
	    T(test_long_name),
	    T(test_eviction),
	    T(test_speed),
	    T(test_load_ok),
	    T(test_load_key_mode),
	    T(test_load_key_symlink),
	    T(test_load_key_not_file),
	    T(test_load_key_owner),
	    T(test_load_mismatch),
	    T(test_load_not_ca),
	    T(test_load_expired),
	    T(test_load_encrypted),
	    T(test_load_garbage),
	    T(test_load_constrained),
	    T(test_free_null),
	};

	return cmocka_run_group_tests_name("ca", tests, NULL, NULL);
}
