/*
 * test_run_trust.c: unit tests of cli/run_trust.c, what the sandbox
 * trusts: the files of the tree (combined bundles, the run CA alone, the
 * hashed SSL_CERT_DIR with OpenSSL's subject-name hash) and the
 * variables, the user's own bundles kept and added to.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#define RUN_TRUST_INTERNAL
#include "cli/run_trust.h"
#include "common/xmalloc.h"
#include "netns/env.h"
#include "netns/mount.h"
#include "tests/unit/fixture.h"

struct fixture {
	char dir[256];
	char *sys, *ca, *user, *trusted, *twin; /* PEM certificates */
	struct env *env;
	struct run_trust *t;
};

static unsigned long
hash_of(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	unsigned long h;

	assert_non_null(x);
	h = X509_subject_name_hash(x);
	X509_free(x);
	BIO_free(b);
	return h;
}

static char *
path_in(struct fixture *f, const char *name)
{
	return xasprintf("%s/%s", f->dir, name);
}

static void
write_in(struct fixture *f, const char *name, const char *text)
{
	char *p = path_in(f, name);

	fixture_write_file(p, text);
	free(p);
}

/*
 * A new, empty environment and run_trust with system.pem as the system
 * bundle (the old ones freed): setup's, and a fresh start within a test.
 */
static void
fresh(struct fixture *f)
{
	char *sys = path_in(f, "system.pem");

	run_trust_free(f->t);
	env_free(f->env);
	f->env = env_new((char *[]){NULL});
	f->t = run_trust_new();
	run_trust_set_system(f->t, sys);
	free(sys);
}

static int
setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));

	assert_int_equal(fixture_tmpdir(f->dir, sizeof(f->dir), "trust"), 0);
	f->sys = fixture_cert_pem("system root", 1);
	f->ca = fixture_cert_pem("pinhole run CA", 2);
	f->user = fixture_cert_pem("user root", 3);
	f->trusted = fixture_cert_pem("private root", 4);
	f->twin =
	    fixture_cert_pem("pinhole run CA", 5); /* same subject as ca */
	write_in(f, "system.pem", f->sys);
	write_in(f, "user.pem", f->user);
	fresh(f);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	run_trust_free(f->t);
	env_free(f->env);
	fixture_rmtree(f->dir);
	free(f->sys);
	free(f->ca);
	free(f->user);
	free(f->trusted);
	free(f->twin);
	free(f);
	return 0;
}

/* The tree's file NAME, as a string (NULL when absent). */
static const char *
file(struct fixture *f, const char *name)
{
	const struct mnt_file *m;
	static char *last;
	size_t i;

	for (i = 0; (m = run_trust_file(f->t, i)) != NULL; i++)
		if (strcmp(m->name, name) == 0) {
			free(last);
			last = xstrndup(m->data, m->len);
			return last;
		}
	return NULL;
}

static int
contains(const char *hay, const char *needle)
{
	return hay != NULL && strstr(hay, needle) != NULL;
}

static void
build(struct fixture *f)
{
	char err[512];

	assert_int_equal(run_trust_build(f->t, f->env, err, sizeof(err)), 0);
}

/* Nothing to add: no file, no variable. */
static void
test_nothing(void **state)
{
	struct fixture *f = *state;

	assert_false(run_trust_active(f->t));
	build(f);
	assert_int_equal(run_trust_nfiles(f->t), 0);
	assert_null(env_get(f->env, "SSL_CERT_FILE"));
	assert_null(env_get(f->env, "PINHOLE_CA_FILE"));
}

/* The run CA: the files and the variables of the contract. */
static void
test_run_ca(void **state)
{
	struct fixture *f = *state;
	const char *b;
	size_t len;

	run_trust_set_ca(f->t, f->ca);
	build(f);
	b = file(f, "bundle.pem");
	assert_true(contains(b, f->sys) && contains(b, f->ca));
	assert_true(strstr(b, f->sys) < strstr(b, f->ca));
	assert_string_equal(file(f, "ca.pem"), f->ca);
	assert_string_equal(file(f, "extra.pem"), f->ca);
	assert_string_equal(run_trust_pem(f->t, &len), file(f, "bundle.pem"));
	assert_int_equal(len, strlen(file(f, "bundle.pem")));
	assert_string_equal(
	    env_get(f->env, "PINHOLE_CA_FILE"), RUN_TRUST_DIR "/ca.pem");
	assert_string_equal(
	    env_get(f->env, "SSL_CERT_DIR"), RUN_TRUST_DIR "/certs");
	assert_string_equal(
	    env_get(f->env, "NODE_EXTRA_CA_CERTS"), RUN_TRUST_DIR "/extra.pem");
	assert_string_equal(
	    env_get(f->env, "DENO_CERT"), RUN_TRUST_DIR "/extra.pem");
	assert_string_equal(env_get(f->env, "SSL_CERT_FILE"), RUN_TRUST_BUNDLE);
	assert_string_equal(
	    env_get(f->env, "CURL_CA_BUNDLE"), RUN_TRUST_BUNDLE);
	assert_string_equal(
	    env_get(f->env, "npm_config_cafile"), RUN_TRUST_BUNDLE);
	assert_string_equal(
	    env_get(f->env, "CARGO_HTTP_CAINFO"), RUN_TRUST_BUNDLE);
	/* git's and pip's own settings stay in force: the system path has it. */
	assert_null(env_get(f->env, "GIT_SSL_CAINFO"));
	assert_null(env_get(f->env, "PIP_CERT"));
}

/* certs/HASH.N: OpenSSL's subject-name hash; same subject, next N. */
static void
test_hash_dir(void **state)
{
	struct fixture *f = *state;
	char name[64];

	run_trust_set_ca(f->t, f->ca);
	run_trust_add_pem(f->t, f->twin);
	run_trust_add_pem(f->t, f->ca); /* a duplicate: once */
	build(f);
	snprintf(name, sizeof(name), "certs/%08lx.0", hash_of(f->sys));
	assert_string_equal(file(f, name), f->sys);
	snprintf(name, sizeof(name), "certs/%08lx.0", hash_of(f->ca));
	assert_string_equal(file(f, name), f->ca);
	assert_int_equal(hash_of(f->ca), hash_of(f->twin));
	snprintf(name, sizeof(name), "certs/%08lx.1", hash_of(f->ca));
	assert_string_equal(file(f, name), f->twin);
	snprintf(name, sizeof(name), "certs/%08lx.2", hash_of(f->ca));
	assert_null(file(f, name));
}

/*
 * The system's hashed directory is copied as it is (decoding every system
 * certificate is slow); the added ones take the next free N.
 */
static void
test_system_dir(void **state)
{
	struct fixture *f = *state;
	char *dir = path_in(f, "sysdir"), name[64];

	mkdir(dir, 0700);
	snprintf(name, sizeof(name), "sysdir/%08lx.0", hash_of(f->ca));
	write_in(f, name, f->sys); /* taken: the run CA must go to .1 */
	write_in(f, "sysdir/0badcafe.3", f->sys);
	write_in(f, "sysdir/README", "not a certificate\n");
	write_in(f, "sysdir/0badcafe.x", f->sys);
	run_trust_set_system_dir(f->t, dir);
	run_trust_set_ca(f->t, f->ca);
	build(f);
	snprintf(name, sizeof(name), "certs/%08lx.0", hash_of(f->ca));
	assert_string_equal(file(f, name), f->sys);
	snprintf(name, sizeof(name), "certs/%08lx.1", hash_of(f->ca));
	assert_string_equal(file(f, name), f->ca);
	assert_string_equal(file(f, "certs/0badcafe.3"), f->sys);
	assert_null(file(f, "certs/README"));
	assert_null(file(f, "certs/0badcafe.x"));
	/* The bundle's certificates are not decoded again. */
	snprintf(name, sizeof(name), "certs/%08lx.0", hash_of(f->sys));
	assert_null(file(f, name));
	free(dir);
}

/* A trust file alone: trusted everywhere, but no PINHOLE_CA_FILE. */
static void
test_trust_only(void **state)
{
	struct fixture *f = *state;

	run_trust_add_pem(f->t, f->trusted);
	assert_true(run_trust_active(f->t));
	build(f);
	assert_null(env_get(f->env, "PINHOLE_CA_FILE"));
	assert_null(file(f, "ca.pem"));
	assert_true(contains(file(f, "bundle.pem"), f->trusted));
	assert_string_equal(file(f, "extra.pem"), f->trusted);
	assert_string_equal(env_get(f->env, "SSL_CERT_FILE"), RUN_TRUST_BUNDLE);
}

/* The user's bundles win: each gets a combined file of its own. */
static void
test_user_wins(void **state)
{
	struct fixture *f = *state;
	char *user = path_in(f, "user.pem"), *dir = path_in(f, "userdir");
	const char *b;

	mkdir(dir, 0700);
	write_in(f, "userdir/a.pem", f->user);
	env_set(f->env, "CURL_CA_BUNDLE", user);
	env_set(f->env, "GIT_SSL_CAINFO", user);
	env_set(f->env, "NODE_EXTRA_CA_CERTS", user);
	env_set(f->env, "NPM_CONFIG_CAFILE", user);
	env_set(f->env, "REQUESTS_CA_BUNDLE", dir);
	env_set(f->env, "SSL_CERT_DIR", dir);
	run_trust_set_ca(f->t, f->ca);
	run_trust_add_pem(f->t, f->trusted);
	build(f);
	b = file(f, "env/CURL_CA_BUNDLE.pem");
	assert_true(contains(b, f->user) && contains(b, f->ca) &&
	    contains(b, f->trusted));
	assert_false(contains(b, f->sys));
	assert_string_equal(env_get(f->env, "CURL_CA_BUNDLE"),
	    RUN_TRUST_DIR "/env/CURL_CA_BUNDLE.pem");
	assert_string_equal(env_get(f->env, "GIT_SSL_CAINFO"),
	    RUN_TRUST_DIR "/env/GIT_SSL_CAINFO.pem");
	assert_true(contains(file(f, "env/NODE_EXTRA_CA_CERTS.pem"), f->user));
	assert_true(contains(file(f, "env/REQUESTS_CA_BUNDLE.pem"), f->user));
	/* npm's upper-case spelling is taken, and the one set is ours. */
	assert_null(env_get(f->env, "NPM_CONFIG_CAFILE"));
	assert_string_equal(env_get(f->env, "npm_config_cafile"),
	    RUN_TRUST_DIR "/env/npm_config_cafile.pem");
	/* The user's directory, not the system's, in SSL_CERT_DIR. */
	{
		char name[64];

		snprintf(name, sizeof(name), "certs/%08lx.0", hash_of(f->user));
		assert_string_equal(file(f, name), f->user);
		snprintf(name, sizeof(name), "certs/%08lx.0", hash_of(f->sys));
		assert_null(file(f, name));
	}
	/* Untouched: the variables the user did not set. */
	assert_string_equal(env_get(f->env, "SSL_CERT_FILE"), RUN_TRUST_BUNDLE);
	assert_null(env_get(f->env, "PIP_CERT"));
	free(user);
	free(dir);
}

/* A bundle the user named that cannot be read stops the run. */
static void
test_user_unreadable(void **state)
{
	struct fixture *f = *state;
	char err[512];

	env_set(f->env, "AWS_CA_BUNDLE", "/nonexistent/bundle.pem");
	run_trust_set_ca(f->t, f->ca);
	assert_int_equal(run_trust_build(f->t, f->env, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "AWS_CA_BUNDLE=/nonexistent/bundle.pem"));
	assert_non_null(strstr(err, "No such file"));
}

/* Only certificates are taken from the user's file: never a key. */
static void
test_user_certs_only(void **state)
{
	struct fixture *f = *state;
	char err[512], *p = path_in(f, "mixed.pem"), *text;

	text = xasprintf("secret=1\n%s-----BEGIN PRIVATE KEY-----\nAAAA\n"
	                 "-----END PRIVATE KEY-----\n",
	    f->user);
	write_in(f, "mixed.pem", text);
	write_in(f, "creds", "aws_secret_access_key = x\n");
	free(text);
	env_set(f->env, "AWS_CA_BUNDLE", p);
	run_trust_set_ca(f->t, f->ca);
	build(f);
	text = xstrndup(file(f, "env/AWS_CA_BUNDLE.pem"),
	    strlen(file(f, "env/AWS_CA_BUNDLE.pem")));
	assert_true(contains(text, f->user) && contains(text, f->ca));
	assert_false(
	    contains(text, "PRIVATE KEY") || contains(text, "secret="));
	free(text);
	free(p);
	/* A file with no certificate at all: refused, said why. */
	fresh(f);
	run_trust_set_ca(f->t, f->ca);
	p = path_in(f, "creds");
	env_set(f->env, "AWS_CA_BUNDLE", p);
	assert_int_equal(run_trust_build(f->t, f->env, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "holds no PEM certificate"));
	free(p);
	/* Nor a FIFO, which would hang the launcher. */
	fresh(f);
	run_trust_set_ca(f->t, f->ca);
	p = path_in(f, "fifo");
	assert_int_equal(mkfifo(p, 0600), 0);
	env_set(f->env, "CURL_CA_BUNDLE", p);
	assert_int_equal(run_trust_build(f->t, f->env, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a regular file"));
	free(p);
}

/* No system bundle: GIT_SSL_CAINFO and PIP_CERT get ours after all. */
static void
test_no_system(void **state)
{
	struct fixture *f = *state;

	run_trust_set_system(f->t, "/nonexistent/system.pem");
	run_trust_set_ca(f->t, f->ca);
	build(f);
	assert_string_equal(file(f, "bundle.pem"), f->ca);
	assert_string_equal(
	    env_get(f->env, "GIT_SSL_CAINFO"), RUN_TRUST_BUNDLE);
	assert_string_equal(env_get(f->env, "PIP_CERT"), RUN_TRUST_BUNDLE);
}

/* An extra file (a Java trust store) goes into the same tree. */
static void
test_add_file(void **state)
{
	struct fixture *f = *state;
	struct mnt_plan *p;
	char err[512];

	run_trust_set_ca(f->t, f->ca);
	build(f);
	run_trust_add_file(f->t, "java.p12", "\0\1\2", 3);
	assert_non_null(file(f, "java.p12"));
	p = mnt_plan_new(f->dir, err, sizeof(err));
	assert_non_null(p);
	assert_int_equal(run_trust_plan(f->t, p, err, sizeof(err)), 0);
	mnt_plan_free(p);
}

/*
 * git's http.sslCAInfo and pip's cert = in the user's configuration stay
 * in force: the files they name get a copy with the added certificates
 * put over them; requests' variables hold pip's too.
 */
static void
test_configured(void **state)
{
	struct fixture *f = *state;
	const struct mnt_file *o;
	char *git = path_in(f, "git-ca.pem"), *pip = path_in(f, "pip-ca.pem");
	char *conf;
	size_t i;
	int seen = 0;

	conf = path_in(f, ".config");
	mkdir(conf, 0700);
	free(conf);
	conf = path_in(f, ".config/pip");
	mkdir(conf, 0700);
	free(conf);
	write_in(f, "git-ca.pem", f->user);
	write_in(f, "pip-ca.pem", f->trusted);
	write_in(f, ".gitconfig",
	    "[user]\n\tname = x\n[http \"https://git.test\"]\n"
	    "\tsslCAInfo = ~/git-ca.pem\n[core]\n\tsslcainfo = /nope\n");
	conf = xasprintf("# pip\n[global]\ncert = %s\n", pip);
	write_in(f, ".config/pip/pip.conf", conf);
	free(conf);
	env_set(f->env, "HOME", f->dir);
	run_trust_set_ca(f->t, f->ca);
	build(f);
	for (i = 0; (o = run_trust_overlay(f->t, i)) != NULL; i++) {
		conf = xstrndup(o->data, o->len);
		if (strcmp(o->name, git) == 0) {
			assert_true(contains(conf, f->user));
			assert_true(contains(conf, f->ca));
			seen |= 1;
		} else if (strcmp(o->name, pip) == 0) {
			assert_true(contains(conf, f->trusted));
			assert_true(contains(conf, f->ca));
			seen |= 2;
		}
		assert_string_not_equal(o->name, "/nope");
		free(conf);
	}
	assert_int_equal(seen, 3);
	assert_true(contains(file(f, "requests.pem"), f->trusted));
	assert_true(contains(file(f, "requests.pem"), f->sys));
	assert_string_equal(env_get(f->env, "REQUESTS_CA_BUNDLE"),
	    RUN_TRUST_DIR "/requests.pem");
	assert_string_equal(
	    env_get(f->env, "CURL_CA_BUNDLE"), RUN_TRUST_DIR "/requests.pem");
	assert_string_equal(env_get(f->env, "SSL_CERT_FILE"), RUN_TRUST_BUNDLE);
	assert_null(env_get(f->env, "GIT_SSL_CAINFO"));
	assert_null(env_get(f->env, "PIP_CERT"));
	free(git);
	free(pip);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_run_ca, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hash_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_system_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_trust_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_user_wins, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_user_unreadable, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_system, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_user_certs_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_add_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_configured, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
