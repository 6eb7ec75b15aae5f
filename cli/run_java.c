/*
 * run_java.c: JAVA_TOOL_OPTIONS and the PKCS12 trust store of `pinhole
 * run` (run_java.h).  Java 17 takes a certificate of a PKCS12 store as a
 * trust anchor only when its bag carries Oracle's trusted-key-usage
 * attribute; OpenSSL 3.2 writes it (pkcs12 -jdktrust), 3.0 has no name
 * for it, so the attribute is added here by its number.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>

#include "cli/run_java.h"
#include "common/ph_err.h"
#include "common/xmalloc.h"
#include "netns/env.h"
#include "netns/mount.h"

/* Oracle's trusted-key-usage bag attribute, and anyExtendedKeyUsage. */
#define JDK_TRUST_OID "2.16.840.1.113894.746875.1.1"
#define ANY_EKU_OID "2.5.29.37.0"
#define MAC_ITER 2048

/* ERR plus OpenSSL's first queued reason, the queue emptied. */
static void
ssl_err(char *err, size_t errlen, const char *what)
{
	char buf[256];
	unsigned long e = ERR_get_error();

	if (e != 0)
		ERR_error_string_n(e, buf, sizeof(buf));
	else
		snprintf(buf, sizeof(buf), "no detail");
	ph_errf(err, errlen, "java trust store: %s: %s", what, buf);
	ERR_clear_error();
}

/*
 * DER (LEN bytes) as a certificate bag of BAGS, named I (Java's alias,
 * which must be unique) and marked trusted for any purpose.  The bytes go
 * in as they are, through ASN1_ANY: parsing each certificate (its key
 * above all) took twenty times longer than the rest, on every run.
 */
static int
add_cert(STACK_OF(PKCS12_SAFEBAG) * *bags, const unsigned char *der, long len,
    size_t i, const ASN1_OBJECT *any)
{
	ASN1_TYPE *t = ASN1_TYPE_new();
	ASN1_STRING *seq = ASN1_STRING_new();
	PKCS12_SAFEBAG *bag = NULL;
	char alias[32];
	int rc = -1;

	if (t == NULL || seq == NULL || !ASN1_STRING_set(seq, der, (int)len))
		goto out;
	ASN1_TYPE_set(t, V_ASN1_SEQUENCE, seq); /* t owns seq now */
	seq = NULL;
	if ((bag = PKCS12_item_pack_safebag(t, ASN1_ITEM_rptr(ASN1_ANY),
	         NID_x509Certificate, NID_certBag)) == NULL)
		goto out;
	snprintf(alias, sizeof(alias), "ca-%zu", i);
	/* len -1: the attribute's data is the ASN1_OBJECT itself, copied. */
	if (!PKCS12_add_friendlyname_asc(bag, alias, -1) ||
	    !PKCS12_add1_attr_by_txt(
	        bag, JDK_TRUST_OID, V_ASN1_OBJECT, (const void *)any, -1) ||
	    (*bags == NULL && (*bags = sk_PKCS12_SAFEBAG_new_null()) == NULL) ||
	    !sk_PKCS12_SAFEBAG_push(*bags, bag))
		goto out;
	bag = NULL;
	rc = 0;
out:
	PKCS12_SAFEBAG_free(bag);
	ASN1_STRING_free(seq);
	ASN1_TYPE_free(t);
	return rc;
}

/*
 * DER's shape is a certificate's: one SEQUENCE of exactly LEN bytes
 * holding two SEQUENCEs (to be signed, algorithm) and a BIT STRING.  A
 * bag Java cannot read would make it refuse the whole store.
 */
static int
cert_shaped(const unsigned char *der, long len)
{
	static const int inner[] = {
	    V_ASN1_SEQUENCE, V_ASN1_SEQUENCE, V_ASN1_BIT_STRING};
	const unsigned char *p = der, *end;
	long l;
	int tag, cls;
	size_t i;

	if ((ASN1_get_object(&p, &l, &tag, &cls, len) & 0x80) ||
	    tag != V_ASN1_SEQUENCE || p + l != der + len)
		return 0;
	end = p + l;
	for (i = 0; i < sizeof(inner) / sizeof(inner[0]); i++) {
		if ((ASN1_get_object(&p, &l, &tag, &cls, end - p) & 0x80) ||
		    tag != inner[i] || l > end - p)
			return 0;
		p += l;
	}
	return p == end;
}

/*
 * The next certificate of B as DER (*DER, *LEN; the caller frees), 1; or
 * 0 at the end.  A block that is not a certificate, or does not decode,
 * is passed over (the run CA comes last in the bundle and must not be
 * lost to a bad system certificate); the end reads as "no start line".
 */
static int
next_cert(BIO *b, unsigned char **der, long *len)
{
	char *name = NULL, *header = NULL;
	unsigned long e;
	size_t before;
	int ok;

	for (;;) {
		before = BIO_ctrl_pending(b);
		ok = PEM_read_bio(b, &name, &header, der, len);
		e = ERR_peek_last_error();
		ERR_clear_error();
		if (ok &&
		    (strcmp(name, PEM_STRING_X509) == 0 ||
		        strcmp(name, PEM_STRING_X509_OLD) == 0) &&
		    cert_shaped(*der, *len))
			break;
		if (ok)
			OPENSSL_free(*der);
		OPENSSL_free(name);
		OPENSSL_free(header);
		name = header = NULL;
		if (!ok &&
		    (ERR_GET_REASON(e) == PEM_R_NO_START_LINE ||
		        BIO_ctrl_pending(b) >= before ||
		        BIO_ctrl_pending(b) == 0))
			return 0;
	}
	OPENSSL_free(name);
	OPENSSL_free(header);
	return 1;
}

/* The certificate bags of PEM; *N of them.  Returns 0, or -1 (ERR). */
static int
read_bags(const char *pem, STACK_OF(PKCS12_SAFEBAG) * *bags, size_t *n,
    char *err, size_t errlen)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	ASN1_OBJECT *any = OBJ_txt2obj(ANY_EKU_OID, 1);
	unsigned char *der;
	long len;
	int rc = -1;

	*n = 0;
	if (b == NULL || any == NULL) {
		ssl_err(err, errlen, "setup");
		goto out;
	}
	while (next_cert(b, &der, &len)) {
		rc = add_cert(bags, der, len, *n, any);
		OPENSSL_free(der);
		if (rc != 0) {
			ssl_err(err, errlen, "a certificate bag");
			goto out;
		}
		(*n)++;
	}
	rc = -1;
	if (*n == 0)
		ph_errf(err, errlen, "java trust store: no certificate");
	else
		rc = 0;
out:
	ASN1_OBJECT_free(any);
	BIO_free(b);
	return rc;
}

unsigned char *
run_java_store(const char *pem, size_t *len, char *err, size_t errlen)
{
	STACK_OF(PKCS12_SAFEBAG) *bags = NULL;
	STACK_OF(PKCS7) *safes = NULL;
	PKCS12 *p12 = NULL;
	unsigned char *der = NULL, *out = NULL;
	size_t n;
	int dlen;

	if (read_bags(pem, &bags, &n, err, errlen) != 0)
		goto out;
	/* -1: certificates in the clear, as they are public. */
	if (!PKCS12_add_safe(&safes, bags, -1, 0, NULL) ||
	    (p12 = PKCS12_add_safes(safes, 0)) == NULL ||
	    !PKCS12_set_mac(
	        p12, RUN_JAVA_PASSWORD, -1, NULL, 0, MAC_ITER, EVP_sha256()) ||
	    (dlen = i2d_PKCS12(p12, &der)) <= 0) {
		ssl_err(err, errlen, "PKCS12");
		goto out;
	}
	out = xmalloc((size_t)dlen);
	memcpy(out, der, (size_t)dlen);
	*len = (size_t)dlen;
out:
	OPENSSL_free(der);
	PKCS12_free(p12);
	sk_PKCS7_pop_free(safes, PKCS7_free);
	sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
	return out;
}

const char *
run_java_place(struct mnt_plan *plan, const char *pem, char *err, size_t errlen)
{
	const char *dst = RUN_JAVA_TMP_STORE;
	unsigned char *der;
	struct stat sb;
	size_t len;
	int rc;

	if ((der = run_java_store(pem, &len, err, errlen)) == NULL)
		return NULL;
	/* A link is refused where it is attached: only a plain file. */
	if (lstat(RUN_JAVA_SYSTEM_STORE, &sb) == 0 && S_ISREG(sb.st_mode))
		dst = RUN_JAVA_SYSTEM_STORE;
	rc = mnt_plan_add_file(plan, dst, der, len, err, errlen);
	free(der);
	return rc == 0 ? dst : NULL;
}

char *
run_java_options(unsigned port, const char *store, const char *user)
{
	char *proxy, *trust, *all;

	/* https.* for TLS through CONNECT; http.nonProxyHosts is both's. */
	proxy = xasprintf("-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=%u "
	                  "-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=%u "
	                  "-Dhttp.nonProxyHosts=localhost|127.*|[::1]",
	    port, port);
	trust = store == NULL
	    ? xstrdup("")
	    : xasprintf(" -Djavax.net.ssl.trustStore=%s "
	                "-Djavax.net.ssl.trustStoreType=PKCS12 "
	                "-Djavax.net.ssl.trustStorePassword=%s",
	          store, RUN_JAVA_PASSWORD);
	all = xasprintf("%s%s%s%s", proxy, trust,
	    user != NULL && *user != '\0' ? " " : "", user != NULL ? user : "");
	free(proxy);
	free(trust);
	return all;
}

void
run_java_env(struct env *e, unsigned port, const char *store)
{
	const char *user = env_get(e, "JAVA_TOOL_OPTIONS");
	char *v = run_java_options(port, store, user);

	env_set(e, "JAVA_TOOL_OPTIONS", v);
	free(v);
}
