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
 * X as a certificate bag of BAGS, named (Java's alias, which must be
 * unique: the index first) and marked trusted for any purpose.
 */
static int
add_cert(
    STACK_OF(PKCS12_SAFEBAG) * *bags, X509 *x, size_t i, const ASN1_OBJECT *any)
{
	PKCS12_SAFEBAG *bag;
	char cn[128], alias[160];

	if (X509_NAME_get_text_by_NID(
	        X509_get_subject_name(x), NID_commonName, cn, sizeof(cn)) < 0)
		cn[0] = '\0';
	snprintf(alias, sizeof(alias), "%zu %s", i, cn);
	if ((bag = PKCS12_add_cert(bags, x)) == NULL ||
	    !PKCS12_add_friendlyname_asc(bag, alias, -1))
		return -1;
	/* len -1: the data is the ASN1_OBJECT itself, copied. */
	return PKCS12_add1_attr_by_txt(
	           bag, JDK_TRUST_OID, V_ASN1_OBJECT, (const void *)any, -1)
	    ? 0
	    : -1;
}

/*
 * The next certificate of B, or NULL at the end.  A block that does not
 * parse is passed over (the run CA comes last in the bundle and must not
 * be lost to a bad system certificate); the end reads as "no start line".
 */
static X509 *
next_cert(BIO *b)
{
	X509 *x = NULL;
	unsigned long e;
	size_t before;

	do {
		before = BIO_ctrl_pending(b);
		x = PEM_read_bio_X509(b, NULL, NULL, NULL);
		e = ERR_peek_last_error();
		ERR_clear_error();
	} while (x == NULL && ERR_GET_REASON(e) != PEM_R_NO_START_LINE &&
	    BIO_ctrl_pending(b) < before && BIO_ctrl_pending(b) > 0);
	return x;
}

/* The certificate bags of PEM; *N of them.  Returns 0, or -1 (ERR). */
static int
read_bags(const char *pem, STACK_OF(PKCS12_SAFEBAG) * *bags, size_t *n,
    char *err, size_t errlen)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	ASN1_OBJECT *any = OBJ_txt2obj(ANY_EKU_OID, 1);
	X509 *x = NULL;
	int rc = -1;

	*n = 0;
	if (b == NULL || any == NULL) {
		ssl_err(err, errlen, "setup");
		goto out;
	}
	while ((x = next_cert(b)) != NULL) {
		if (add_cert(bags, x, *n, any) != 0) {
			ssl_err(err, errlen, "a certificate bag");
			goto out;
		}
		X509_free(x);
		x = NULL;
		(*n)++;
	}
	if (*n == 0)
		ph_errf(err, errlen, "java trust store: no certificate");
	else
		rc = 0;
out:
	X509_free(x);
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
