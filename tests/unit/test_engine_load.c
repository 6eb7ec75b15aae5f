/*
 * test_engine_load.c: what proxy/engine_load.c loads and the sandbox view
 * it publishes: the order of the messages, what they hold (never a
 * secret value), the hooks (trusted files, the log's default, fallback
 * and check), and the failures (a missing secret, a refused file);
 * `pinhole proxy`'s load, with and without a pinned CA.
 */
#include <sys/stat.h>

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "common/xmalloc.h"
#include "policy/policy.h"
#include "audit/audit.h"
#include "proxy/engine_load.h"
#include "proxy/inject.h"
#include "tests/unit/fixture.h"

#define NPM_VALUE "npm_0123456789abcdefghijABCDEFGHIJ012345"
#define ENV_VALUE "env-secret-value-4711"
#define MSG_MAX 32

struct fixture {
	char dir[PATH_MAX];
	char path[PATH_MAX + 64]; /* the policy file */
	const char *policies[1];
	struct engine_load_config cf;
	struct engine_load_sink sink;
	char *msg[MSG_MAX]; /* "TYPE text", as published */
	size_t nmsg;
	char *trusted[MSG_MAX]; /* "what path", as offered */
	size_t ntrusted;
	const char *refuse; /* the trusted hook refuses this WHAT */
	char *next_log; /* what log_failed offers (once) */
	int defaulted; /* log_failed's argument, last time */
	int opened; /* log_opened was called */
	struct engine_load *l;
};

static void
add(char **v, size_t *n, const char *a, const char *b)
{
	assert_true(*n < MSG_MAX);
	v[(*n)++] = xasprintf("%s %s", a, b);
}

/* --- the sink: each message recorded ------------------------------------- */

static int
on_hello(void *arg, const char *run_id)
{
	struct fixture *f = arg;

	add(f->msg, &f->nmsg, "HELLO", run_id);
	return 0;
}

static int
on_envsecret(void *arg, const char *var, const char *name)
{
	struct fixture *f = arg;
	char both[256];

	snprintf(both, sizeof(both), "%s %s", var, name);
	add(f->msg, &f->nmsg, "ENVSECRET", both);
	return 0;
}

static int
on_hide(void *arg, const char *path)
{
	struct fixture *f = arg;

	add(f->msg, &f->nmsg, "HIDE", path);
	return 0;
}

static int
on_standin(void *arg, const char *var, const char *value)
{
	struct fixture *f = arg;

	/* The stand-in has the secret's shape, never its value. */
	assert_string_not_equal(value, NPM_VALUE);
	assert_int_equal(strlen(value), strlen(NPM_VALUE));
	add(f->msg, &f->nmsg, "STANDIN", var);
	return 0;
}

static int
on_ca(void *arg, const char *pem)
{
	struct fixture *f = arg;

	assert_non_null(strstr(pem, "-----BEGIN CERTIFICATE-----"));
	assert_null(strstr(pem, "PRIVATE KEY"));
	add(f->msg, &f->nmsg, "CA", "pem");
	return 0;
}

static int
on_log(void *arg, const char *path)
{
	struct fixture *f = arg;

	add(f->msg, &f->nmsg, "LOG", path);
	return 0;
}

static int
on_ready(void *arg)
{
	struct fixture *f = arg;

	add(f->msg, &f->nmsg, "READY", "");
	return 0;
}

/* --- the hooks ------------------------------------------------------------ */

static int
trusted(void *arg, const char *what, const char *path)
{
	struct fixture *f = arg;

	add(f->trusted, &f->ntrusted, what, path);
	return f->refuse != NULL && strcmp(what, f->refuse) == 0 ? -1 : 0;
}

static char *
log_default(void *arg)
{
	struct fixture *f = arg;

	/* A directory that does not exist: the open fails. */
	return xasprintf("%s/missing/audit.jsonl", f->dir);
}

static char *
log_failed(void *arg, const char *err, int defaulted)
{
	struct fixture *f = arg;
	char *next = f->next_log;

	assert_non_null(strstr(err, "audit log "));
	f->defaulted = defaulted;
	f->next_log = NULL;
	return next;
}

static int
log_opened(void *arg, const char *path, struct audit *a)
{
	struct fixture *f = arg;

	assert_non_null(path);
	assert_non_null(a);
	f->opened++;
	return 0;
}

/* --- set-up --------------------------------------------------------------- */

static void
write_in(struct fixture *f, const char *name, const char *text, int mode)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	fixture_write_file(path, text);
	assert_int_equal(chmod(path, (mode_t)mode), 0);
}

/* The policy file: a secret file, an env secret, a placeholder. */
static void
write_policy(struct fixture *f, const char *secret_file)
{
	char text[4 * PATH_MAX];

	snprintf(text, sizeof(text),
	    "secret npm file %s/%s\n"
	    "secret gh env PH_TEST_ENGINE_LOAD\n"
	    "allow registry.test { placeholder NPM_TOKEN npm }\n"
	    "allow api.test:443 { inject bearer gh }\n",
	    f->dir, secret_file);
	write_in(f, "p.conf", text, 0644);
}

static int
setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));

	if (fixture_tmpdir(f->dir, sizeof(f->dir), "test_engine_load") != 0)
		return -1;
	setenv("PH_TEST_ENGINE_LOAD", ENV_VALUE, 1);
	write_in(f, "npm", NPM_VALUE "\n", 0600);
	write_policy(f, "npm");
	snprintf(f->path, sizeof(f->path), "%s/p.conf", f->dir);
	f->policies[0] = f->path;
	f->cf.name = "test";
	f->cf.policies = f->policies;
	f->cf.npolicies = 1;
	f->cf.allow = "allow extra.test\n";
	f->cf.intercept = ENGINE_LOAD_INTERCEPT_RUN;
	f->cf.trusted = trusted;
	f->cf.log_default = log_default;
	f->cf.log_failed = log_failed;
	f->cf.log_opened = log_opened;
	f->cf.arg = f;
	f->sink = (struct engine_load_sink){on_hello, on_envsecret, on_hide,
	    on_standin, on_ca, NULL, on_log, on_ready, f, NULL};
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	size_t i;

	engine_load_free(f->l);
	for (i = 0; i < f->nmsg; i++)
		free(f->msg[i]);
	for (i = 0; i < f->ntrusted; i++)
		free(f->trusted[i]);
	free(f->next_log);
	fixture_rmtree(f->dir);
	unsetenv("PH_TEST_ENGINE_LOAD");
	free(f);
	return 0;
}

/* PREFIX, then NAME in the scratch directory. */
static char *
in_dir(const struct fixture *f, const char *prefix, const char *name)
{
	return xasprintf("%s%s/%s", prefix, f->dir, name);
}

static void
assert_msg(const struct fixture *f, size_t i, const char *want)
{
	assert_true(i < f->nmsg);
	assert_string_equal(f->msg[i], want);
}

static void
assert_msg_in(
    const struct fixture *f, size_t i, const char *fmt, const char *name)
{
	char *want = in_dir(f, fmt, name);

	assert_msg(f, i, want);
	free(want);
}

/* --- the tests ------------------------------------------------------------ */

/* A policy file and --allow rules: the whole view, in its order. */
static void
test_view(void **state)
{
	struct fixture *f = *state;
	char hello[64], *log = in_dir(f, "", "audit.jsonl");
	size_t i;

	f->cf.log = log;
	assert_int_equal(engine_load_new(&f->cf, &f->sink, &f->l), 0);
	assert_non_null(f->l);
	snprintf(hello, sizeof(hello), "HELLO %s", engine_load_run_id(f->l));
	assert_int_equal(strlen(engine_load_run_id(f->l)), 16);
	assert_msg(f, 0, hello);
	assert_msg(f, 1, "ENVSECRET PH_TEST_ENGINE_LOAD gh");
	assert_msg_in(f, 2, "HIDE ", "p.conf");
	assert_msg(f, 3, "HIDE --allow");
	assert_msg_in(f, 4, "HIDE ", "npm");
	assert_msg_in(f, 5, "HIDE ", "audit.jsonl");
	assert_msg(f, 6, "STANDIN NPM_TOKEN");
	assert_msg(f, 7, "CA pem");
	assert_msg_in(f, 8, "LOG ", "audit.jsonl");
	assert_msg(f, 9, "READY ");
	assert_int_equal(f->nmsg, 10);
	/* No secret value in any message. */
	for (i = 0; i < f->nmsg; i++) {
		assert_null(strstr(f->msg[i], NPM_VALUE));
		assert_null(strstr(f->msg[i], ENV_VALUE));
	}
	/* The files it trusts were offered first, the log last. */
	assert_int_equal(f->ntrusted, 3);
	assert_string_equal(f->trusted[0] + strlen("policy file "), f->path);
	assert_non_null(strstr(f->trusted[1], "secret file "));
	assert_non_null(strstr(f->trusted[2], "audit log "));
	assert_int_equal(f->opened, 1);
	/* What the engine runs on. */
	assert_non_null(engine_load_policy(f->l));
	assert_non_null(engine_load_audit(f->l));
	assert_non_null(engine_load_tls(f->l));
	assert_int_equal(inject_standins_count(engine_load_standins(f->l)), 1);
	assert_string_equal(engine_load_log_path(f->l), log);
	free(log);
}

static int
on_policy(void *arg, const struct policy *p)
{
	struct fixture *f = arg;
	char n[32];

	snprintf(n, sizeof(n), "%zu", policy_rule_count(p));
	add(f->msg, &f->nmsg, "POLICY", n);
	return strcmp(f->cf.name, "refuse") == 0 ? -1 : 0;
}

/* The policy hook: the loaded policy, after the CA and before the log. */
static void
test_policy_hook(void **state)
{
	struct fixture *f = *state;
	char *log = in_dir(f, "", "audit.jsonl");

	f->cf.log = log;
	f->sink.policy = on_policy;
	assert_int_equal(engine_load_new(&f->cf, &f->sink, &f->l), 0);
	assert_msg(f, 7, "CA pem");
	assert_msg(f, 8, "POLICY 3");
	assert_msg_in(f, 9, "LOG ", "audit.jsonl");
	assert_msg(f, 10, "READY ");
	engine_load_free(f->l);
	f->l = NULL;
	/* A hook that fails fails the load: no LOG, no READY. */
	f->cf.name = "refuse";
	while (f->nmsg > 0)
		free(f->msg[--f->nmsg]);
	assert_int_not_equal(engine_load_new(&f->cf, &f->sink, &f->l), 0);
	assert_null(f->l);
	assert_true(f->nmsg >= 1);
	assert_string_equal(f->msg[f->nmsg - 1], "POLICY 3");
	free(log);
}

/* A secret that cannot be read: the load fails with the secret's error. */
static void
test_missing_secret(void **state)
{
	struct fixture *f = *state;
	char err[PATH_MAX + 64], got[4096] = "";
	FILE *cap;
	int saved, rc;

	write_policy(f, "absent");
	snprintf(err, sizeof(err), "%s/stderr", f->dir);
	fflush(stderr);
	saved = dup(2);
	assert_non_null(cap = fopen(err, "w+"));
	dup2(fileno(cap), 2);
	rc = engine_load_new(&f->cf, &f->sink, &f->l);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(cap);
	(void)!fread(got, 1, sizeof(got) - 1, cap);
	fclose(cap);
	assert_int_equal(rc, ENGINE_LOAD_E_SECRETS);
	assert_null(f->l);
	/* The same words as before the move: secret.c's, naming the file. */
	assert_non_null(strstr(got, "secret npm"));
	assert_non_null(strstr(got, "/absent"));
	/* Only HELLO went out: nothing of a view that failed. */
	assert_int_equal(f->nmsg, 1);
	assert_non_null(strstr(f->msg[0], "HELLO "));
}

/* A file refused by the trusted hook: no secret is read at all. */
static void
test_refused_file(void **state)
{
	struct fixture *f = *state;

	/* The secret is missing too: a refusal comes before reading it. */
	write_policy(f, "absent");
	f->refuse = "secret file";
	assert_int_equal(
	    engine_load_new(&f->cf, &f->sink, &f->l), ENGINE_LOAD_FAILED);
	assert_null(f->l);
	assert_int_equal(f->nmsg, 1);
}

/* No log named: the default, and when it fails, the fallback offered. */
static void
test_log_fallback(void **state)
{
	struct fixture *f = *state;
	char *want = in_dir(f, "", "fallback.jsonl");

	f->next_log = xstrdup(want);
	assert_int_equal(engine_load_new(&f->cf, &f->sink, &f->l), 0);
	assert_int_equal(f->defaulted, 1);
	assert_int_equal(f->opened, 1);
	assert_string_equal(engine_load_log_path(f->l), want);
	assert_int_equal(access(want, F_OK), 0);
	assert_msg_in(f, f->nmsg - 2, "LOG ", "fallback.jsonl");
	free(want);
}

/* The fallback failing too: log_failed is asked again, not defaulted. */
static void
test_log_fails(void **state)
{
	struct fixture *f = *state;

	f->next_log = in_dir(f, "", "missing/again.jsonl");
	assert_int_equal(
	    engine_load_new(&f->cf, &f->sink, &f->l), ENGINE_LOAD_FAILED);
	assert_int_equal(f->defaulted, 0);
	assert_int_equal(f->opened, 0);
	assert_null(f->l);
}

static void
on_read(void *arg, const char *path)
{
	struct fixture *f = arg;

	add(f->msg, &f->nmsg, "READS", path);
}

/* `pinhole proxy`'s load: no sink, no hooks, no interception, stderr. */
static void
test_proxy(void **state)
{
	struct fixture *f = *state;
	struct engine_load_config cf = {0};
	struct policy *p;
	char *real;

	cf.name = "proxy";
	cf.policies = f->policies;
	cf.npolicies = 1;
	assert_int_equal(engine_load_new(&cf, NULL, &f->l), 0);
	assert_string_equal(engine_load_log_path(f->l), "stderr");
	assert_null(engine_load_tls(f->l));
	assert_null(engine_load_standins(f->l));
	/* What a reload reads: the policy's directory, the secret file. */
	real = realpath(f->dir, NULL);
	assert_non_null(real);
	assert_int_equal(engine_load_reads(f->l, on_read, f), 1);
	assert_int_equal(f->nmsg, 2);
	assert_string_equal(f->msg[0] + strlen("READS "), real);
	assert_msg_in(f, 1, "READS ", "npm");
	free(real);
	/* The policy can be taken once; a reload parses without secrets. */
	p = engine_load_take_policy(f->l);
	assert_non_null(p);
	assert_null(engine_load_take_policy(f->l));
	policy_free(p);
	assert_non_null(p = engine_load_parse(&cf));
	policy_free(p);
}

/* --- pinhole proxy with a pinned CA (ENGINE_LOAD_INTERCEPT_PINNED) ------- */

static void
add_ext(X509 *x, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *e;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	assert_non_null(e = X509V3_EXT_nconf_nid(NULL, &ctx, nid, value));
	assert_int_equal(X509_add_ext(x, e, -1), 1);
	X509_EXTENSION_free(e);
}

/* A self-signed CA in DIR/ca.pem, its key in DIR/ca.key with KEYMODE. */
static void
write_pinned_ca(struct fixture *f, mode_t keymode)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name;
	char path[PATH_MAX + 64];
	FILE *fp;

	assert_non_null(key);
	assert_non_null(x);
	assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), 9), 1);
	name = X509_get_subject_name(x);
	assert_int_equal(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	                     (const unsigned char *)"pinned CA", -1, -1, 0),
	    1);
	assert_int_equal(X509_set_issuer_name(x, name), 1);
	assert_int_equal(X509_set_pubkey(x, key), 1);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -60));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 3600));
	add_ext(x, NID_basic_constraints, "critical,CA:TRUE");
	add_ext(x, NID_key_usage, "critical,keyCertSign,cRLSign");
	add_ext(x, NID_subject_key_identifier, "hash");
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);
	snprintf(path, sizeof(path), "%s/ca.pem", f->dir);
	assert_non_null(fp = fopen(path, "w"));
	assert_int_equal(PEM_write_X509(fp, x), 1);
	assert_int_equal(fclose(fp), 0);
	snprintf(path, sizeof(path), "%s/ca.key", f->dir);
	assert_non_null(fp = fopen(path, "w"));
	assert_int_equal(
	    PEM_write_PrivateKey(fp, key, NULL, NULL, 0, NULL, NULL), 1);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(chmod(path, keymode), 0);
	X509_free(x);
	EVP_PKEY_free(key);
}

/* The policy of pinhole proxy: an inject rule, a pinned CA if CA. */
static void
write_gateway_policy(struct fixture *f, int ca)
{
	char text[4 * PATH_MAX];

	snprintf(text, sizeof(text),
	    "%s%s%s%s%s"
	    "secret npm file %s/npm\n"
	    "allow api.test:443 { inject bearer npm paths /v1/* }\n",
	    ca ? "ca cert " : "", ca ? f->dir : "", ca ? "/ca.pem key " : "",
	    ca ? f->dir : "", ca ? "/ca.key\n" : "", f->dir);
	write_in(f, "p.conf", text, 0644);
}

static void
proxy_config(struct fixture *f, struct engine_load_config *cf)
{
	memset(cf, 0, sizeof(*cf));
	cf->name = "proxy";
	cf->policies = f->policies;
	cf->npolicies = 1;
	cf->intercept = ENGINE_LOAD_INTERCEPT_PINNED;
}

/* A pinned CA: the TLS contexts are made, no stand-ins. */
static void
test_pinned(void **state)
{
	struct fixture *f = *state;
	struct engine_load_config cf;

	proxy_config(f, &cf);
	write_pinned_ca(f, 0600);
	write_gateway_policy(f, 1);
	assert_int_equal(engine_load_new(&cf, NULL, &f->l), 0);
	assert_non_null(engine_load_tls(f->l));
	assert_int_equal(inject_standins_count(engine_load_standins(f->l)), 0);
}

/* No pinned CA: loaded without interception (its rules answer 501). */
static void
test_pinned_none(void **state)
{
	struct fixture *f = *state;
	struct engine_load_config cf;

	proxy_config(f, &cf);
	write_gateway_policy(f, 0);
	assert_int_equal(engine_load_new(&cf, NULL, &f->l), 0);
	assert_null(engine_load_tls(f->l));
}

/* A CA key others may read is refused (the secret-file rules). */
static void
test_pinned_open_key(void **state)
{
	struct fixture *f = *state;
	struct engine_load_config cf;

	proxy_config(f, &cf);
	write_pinned_ca(f, 0644);
	write_gateway_policy(f, 1);
	assert_int_equal(engine_load_new(&cf, NULL, &f->l), ENGINE_LOAD_FAILED);
	assert_null(f->l);
}

/* A placeholder rule: refused at the load and at a reload's parse. */
static void
test_pinned_placeholder(void **state)
{
	struct fixture *f = *state;
	struct engine_load_config cf;
	struct policy *p;

	proxy_config(f, &cf);
	assert_int_equal(engine_load_new(&cf, NULL, &f->l), ENGINE_LOAD_FAILED);
	assert_null(f->l);
	assert_null(engine_load_parse(&cf));
	/* Under pinhole run the same policy parses. */
	cf.intercept = ENGINE_LOAD_INTERCEPT_RUN;
	assert_non_null(p = engine_load_parse(&cf));
	policy_free(p);
}

/* A broker's configuration: refused by a run (it has no rules to decide
 * by), left to pinhole proxy (a gateway's). */
static void
test_broker_config(void **state)
{
	struct fixture *f = *state;
	struct engine_load_config cf;
	struct policy *p;

	write_in(f, "p.conf",
	    "broker {\n policy default a.conf\n users 1000\n}\n", 0644);
	proxy_config(f, &cf);
	assert_non_null(p = engine_load_parse(&cf));
	policy_free(p);
	cf.name = "run";
	cf.intercept = ENGINE_LOAD_INTERCEPT_RUN;
	assert_null(engine_load_parse(&cf));
	assert_int_equal(engine_load_new(&cf, NULL, &f->l), ENGINE_LOAD_FAILED);
	assert_null(f->l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_view, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_policy_hook, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_missing_secret, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refused_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_fallback, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_fails, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_proxy, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pinned, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pinned_none, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_pinned_open_key, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_pinned_placeholder, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_broker_config, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
