/*
 * test_run_java.c: unit tests of cli/run_java.c, Java's trust store and
 * JAVA_TOOL_OPTIONS.  Two self-signed certificates are made in memory;
 * the store built from their PEM text is read back with OpenSSL (MAC,
 * PKCS12_parse, every bag's attributes).  keytool and a real JVM read it
 * in tests/clients/java.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>

#include "cli/run_java.h"
#include "netns/env.h"
#include "tests/unit/fixture.h"

#define JDK_TRUST_OID "2.16.840.1.113894.746875.1.1"
#define ANY_EKU_OID "2.5.29.37.0"

/* A self-signed certificate for CN, as PEM text appended to OUT. */
static void
self_signed(const char *cn, char **out)
{
	char *pem = fixture_cert_pem(cn, 1), *all;

	assert_true(asprintf(&all, "%s%s", *out ? *out : "", pem) > 0);
	free(pem);
	free(*out);
	*out = all;
}

static PKCS12 *
parse_der(const unsigned char *der, size_t len)
{
	const unsigned char *p = der;
	PKCS12 *p12 = d2i_PKCS12(NULL, &p, (long)len);

	assert_non_null(p12);
	return p12;
}

/* The number of certificate bags of P12 that carry Java's trust. */
static int
trusted_bags(PKCS12 *p12)
{
	STACK_OF(PKCS7) *safes = PKCS12_unpack_authsafes(p12);
	STACK_OF(PKCS12_SAFEBAG) * bags;
	ASN1_OBJECT *oid = OBJ_txt2obj(JDK_TRUST_OID, 1);
	ASN1_OBJECT *any = OBJ_txt2obj(ANY_EKU_OID, 1);
	const STACK_OF(X509_ATTRIBUTE) * attrs;
	X509_ATTRIBUTE *a;
	ASN1_TYPE *t;
	char *name;
	int i, j, k, n = 0;

	assert_non_null(safes);
	for (i = 0; i < sk_PKCS7_num(safes); i++) {
		bags = PKCS12_unpack_p7data(sk_PKCS7_value(safes, i));
		assert_non_null(bags);
		for (j = 0; j < sk_PKCS12_SAFEBAG_num(bags); j++) {
			PKCS12_SAFEBAG *bag = sk_PKCS12_SAFEBAG_value(bags, j);
			assert_int_equal(
			    PKCS12_SAFEBAG_get_nid(bag), NID_certBag);
			attrs = PKCS12_SAFEBAG_get0_attrs(bag);
			k = X509at_get_attr_by_OBJ(attrs, oid, -1);
			if (k < 0)
				continue;
			a = X509at_get_attr(attrs, k);
			t = X509_ATTRIBUTE_get0_type(a, 0);
			assert_non_null(t);
			assert_int_equal(ASN1_TYPE_get(t), V_ASN1_OBJECT);
			assert_int_equal(OBJ_cmp(t->value.object, any), 0);
			/* Java names the entry by it: there must be one. */
			name = PKCS12_get_friendlyname(bag);
			assert_non_null(name);
			OPENSSL_free(name);
			n++;
		}
		sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
	}
	sk_PKCS7_pop_free(safes, PKCS7_free);
	ASN1_OBJECT_free(oid);
	ASN1_OBJECT_free(any);
	return n;
}

/* Two PEM certificates: both in the store, both trusted, MAC good. */
static void
test_store_two(void **state)
{
	char *pem = NULL, err[256];
	unsigned char *der;
	size_t len = 0;
	PKCS12 *p12;
	EVP_PKEY *pkey = NULL;
	X509 *cert = NULL;
	STACK_OF(X509) *ca = NULL;

	(void)state;
	self_signed("system root", &pem);
	self_signed("pinhole run CA", &pem);
	der = run_java_store(pem, &len, err, sizeof(err));
	assert_non_null(der);
	p12 = parse_der(der, len);
	assert_true(PKCS12_verify_mac(p12, RUN_JAVA_PASSWORD, -1));
	assert_false(PKCS12_verify_mac(p12, "wrong", -1));
	assert_true(PKCS12_parse(p12, RUN_JAVA_PASSWORD, &pkey, &cert, &ca));
	assert_null(pkey);
	assert_null(cert);
	assert_int_equal(sk_X509_num(ca), 2);
	assert_int_equal(trusted_bags(p12), 2);
	sk_X509_pop_free(ca, X509_free);
	PKCS12_free(p12);
	free(der);
	free(pem);
}

/*
 * A block that does not parse between two good ones is passed over: the
 * run CA comes last and must not be lost.
 */
static void
test_store_bad_block(void **state)
{
	char *pem = NULL, *mid, err[256];
	unsigned char *der;
	size_t len = 0;
	PKCS12 *p12;

	(void)state;
	self_signed("first", &pem);
	assert_true(asprintf(&mid,
	                "%s-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n"
	                "-----END CERTIFICATE-----\n",
	                pem) > 0);
	free(pem);
	pem = mid;
	self_signed("last", &pem);
	der = run_java_store(pem, &len, err, sizeof(err));
	assert_non_null(der);
	p12 = parse_der(der, len);
	assert_int_equal(trusted_bags(p12), 2);
	PKCS12_free(p12);
	free(der);
	free(pem);
}

static void
test_store_empty(void **state)
{
	char err[256];
	size_t len = 0;

	(void)state;
	assert_null(
	    run_java_store("no certificate here\n", &len, err, sizeof(err)));
	assert_non_null(strstr(err, "no certificate"));
	assert_null(run_java_store("", &len, err, sizeof(err)));
}

static void
test_options(void **state)
{
	char *s;

	(void)state;
	s = run_java_options(3128, NULL, NULL);
	assert_string_equal(s,
	    "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=3128 "
	    "-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128 "
	    "-Dhttp.nonProxyHosts=localhost|127.*|[::1]");
	free(s);
	s = run_java_options(3128, "/tmp/s.p12", "");
	assert_non_null(strstr(s,
	    "[::1] -Djavax.net.ssl.trustStore=/tmp/s.p12 "
	    "-Djavax.net.ssl.trustStoreType=PKCS12 "
	    "-Djavax.net.ssl.trustStorePassword=" RUN_JAVA_PASSWORD));
	assert_int_equal(s[strlen(s) - 1], RUN_JAVA_PASSWORD[7]);
	free(s);
	/* The user's options last: the JVM takes the last of a property. */
	s = run_java_options(3128, "/s", "-Dhttps.proxyHost=mine -Xmx1g");
	assert_non_null(strstr(s, "=changeit -Dhttps.proxyHost=mine -Xmx1g"));
	assert_true(strstr(s, "-Dhttps.proxyHost=127.0.0.1") <
	    strstr(s, "-Dhttps.proxyHost=mine"));
	free(s);
}

/* The user's value (--setenv, --keep-env) is kept, after ours. */
static void
test_env(void **state)
{
	char *const from[] = {"PATH=/usr/bin", NULL};
	struct env *e = env_new(from);
	const char *v;

	(void)state;
	run_java_env(e, 3128, NULL);
	v = env_get(e, "JAVA_TOOL_OPTIONS");
	assert_non_null(v);
	assert_non_null(strstr(v, "-Dhttps.proxyPort=3128"));
	assert_null(strstr(v, "trustStore"));
	env_free(e);
	e = env_new(from);
	env_set(e, "JAVA_TOOL_OPTIONS", "-Dfoo=bar");
	run_java_env(e, 3128, RUN_JAVA_TMP_STORE);
	v = env_get(e, "JAVA_TOOL_OPTIONS");
	assert_non_null(strstr(v, "trustStore=" RUN_JAVA_TMP_STORE));
	assert_non_null(strstr(v, " -Dfoo=bar"));
	assert_int_equal(strlen(strstr(v, " -Dfoo=bar")), strlen(" -Dfoo=bar"));
	env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_store_two),
	    cmocka_unit_test(test_store_bad_block),
	    cmocka_unit_test(test_store_empty),
	    cmocka_unit_test(test_options),
	    cmocka_unit_test(test_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
