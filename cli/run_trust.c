/*
 * run_trust.c: the certificates the sandbox trusts, in the launcher
 * (run_trust.h): the run CA and the policy's trust files, added to the
 * system bundle, to a hashed SSL_CERT_DIR and to every bundle a variable
 * names, the user's own included.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#define RUN_TRUST_INTERNAL
#include "cli/run_trust.h"
#include "common/ph_err.h"
#include "common/xmalloc.h"
#include "netns/env.h"
#include "netns/mount.h"

/* Where distributions keep the system's CA bundle; the first one found. */
static const char *const system_bundles[] = {
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
};

/* What a variable names, so what it gets. */
enum var_kind {
	V_BUNDLE, /* a file that replaces the roots: the whole bundle */
	V_BUNDLE_USER, /* the same, set only when the user did */
	V_EXTRA, /* a file of certificates added to the tool's own roots */
	V_DIR, /* a hashed directory */
	V_CA, /* the run CA alone */
};

/*
 * The variables, each checked against its tool's documentation:
 * GIT_SSL_CAINFO and PIP_CERT beat git's http.sslCAInfo and pip's
 * `cert =`, so they are left to the user; git and pip read the system
 * bundle's path otherwise, which holds the run CA.  npm reads its
 * npm_config_* variables in any case: the upper-case spelling of the
 * user's is taken and replaced.
 */
static const struct {
	const char *name, *alias;
	enum var_kind kind;
} vars[] = {
    {"PINHOLE_CA_FILE", NULL, V_CA},
    {"SSL_CERT_FILE", NULL, V_BUNDLE},
    {"SSL_CERT_DIR", NULL, V_DIR},
    {"CURL_CA_BUNDLE", NULL, V_BUNDLE},
    {"REQUESTS_CA_BUNDLE", NULL, V_BUNDLE},
    {"GIT_SSL_CAINFO", NULL, V_BUNDLE_USER},
    {"PIP_CERT", NULL, V_BUNDLE_USER},
    {"AWS_CA_BUNDLE", NULL, V_BUNDLE},
    {"HTTPLIB2_CA_CERTS", NULL, V_BUNDLE},
    {"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", NULL, V_BUNDLE},
    {"NIX_SSL_CERT_FILE", NULL, V_BUNDLE},
    {"CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE", NULL, V_BUNDLE},
    {"BUNDLE_SSL_CA_CERT", NULL, V_BUNDLE},
    {"CARGO_HTTP_CAINFO", NULL, V_BUNDLE},
    {"npm_config_cafile", "NPM_CONFIG_CAFILE", V_BUNDLE},
    {"NODE_EXTRA_CA_CERTS", NULL, V_EXTRA},
    {"DENO_CERT", NULL, V_EXTRA},
};

struct buf {
	char *p;
	size_t len, cap;
};

/* A certificate of the hashed directory, to find duplicates. */
struct hashed {
	X509 *x; /* NULL: copied from the system's directory */
	unsigned long h;
	int k; /* its N */
};

struct run_trust {
	char *ca; /* the run CA, or NULL */
	struct buf extra; /* the run CA and the trust files */
	char *system; /* the system bundle to read (tests), or NULL */
	char *sysdir; /* the system's hashed directory (tests), or NULL */
	char *syspath; /* the system bundle found, or NULL */
	struct buf bundle; /* system + extra */
	struct mnt_file *files; /* the tree, names and data owned */
	size_t nfiles;
	struct mnt_file *over; /* configured CA files: host path, new data */
	size_t nover;
	struct buf pip; /* the certificates of pip's `cert =` files */
	int built;
};

static void
buf_add(struct buf *b, const void *p, size_t len)
{
	if (b->len + len + 1 > b->cap) {
		b->cap = (b->len + len + 1) * 2;
		b->p = xreallocarray(b->p, b->cap, 1);
	}
	memcpy(b->p + b->len, p, len);
	b->len += len;
	b->p[b->len] = '\0';
}

/* Adds S with a newline after it when it has none. */
static void
buf_add_text(struct buf *b, const char *s, size_t len)
{
	buf_add(b, s, len);
	if (len > 0 && s[len - 1] != '\n')
		buf_add(b, "\n", 1);
}

struct run_trust *
run_trust_new(void)
{
	return xcalloc(1, sizeof(struct run_trust));
}

void
run_trust_free(struct run_trust *t)
{
	size_t i;

	if (t == NULL)
		return;
	for (i = 0; i < t->nfiles; i++) {
		free((void *)(uintptr_t)t->files[i].name);
		free((void *)(uintptr_t)t->files[i].data);
	}
	free(t->files);
	for (i = 0; i < t->nover; i++) {
		free((void *)(uintptr_t)t->over[i].name);
		free((void *)(uintptr_t)t->over[i].data);
	}
	free(t->over);
	free(t->pip.p);
	free(t->ca);
	free(t->extra.p);
	free(t->system);
	free(t->sysdir);
	free(t->syspath);
	free(t->bundle.p);
	free(t);
}

void
run_trust_set_ca(struct run_trust *t, const char *pem)
{
	if (t->ca != NULL)
		return;
	t->ca = xstrdup(pem);
	buf_add_text(&t->extra, pem, strlen(pem));
}

void
run_trust_add_pem(struct run_trust *t, const char *pem)
{
	buf_add_text(&t->extra, pem, strlen(pem));
}

int
run_trust_active(const struct run_trust *t)
{
	return t->extra.len > 0;
}

void
run_trust_add_file(
    struct run_trust *t, const char *name, const void *data, size_t len)
{
	struct mnt_file *f;

	t->files = xreallocarray(t->files, t->nfiles + 1, sizeof(*t->files));
	f = &t->files[t->nfiles++];
	f->name = xstrdup(name);
	f->data = memcpy(xmalloc(len ? len : 1), data, len);
	f->len = len;
}

/* --- reading -------------------------------------------------------------- */

/*
 * PATH opened for reading if it is a regular file (a FIFO or a device
 * named in a configuration file would hang the launcher), or NULL with
 * errno (ENOTSUP: not a regular file).
 */
static FILE *
open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	FILE *f = NULL;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		errno = ENOTSUP;
	else
		f = fdopen(fd, "r");
	if (f == NULL)
		close(fd);
	return f;
}

/* The whole of regular file PATH into B.  Returns 0, or -1 with errno. */
static int
read_file(const char *path, struct buf *b)
{
	char chunk[16384];
	size_t n;
	FILE *f;
	int rc = 0;

	if ((f = open_regular(path)) == NULL)
		return -1;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(b, chunk, n);
	if (ferror(f)) {
		errno = EIO;
		rc = -1;
	}
	fclose(f);
	return rc;
}

/*
 * Every certificate in file PATH, as PEM, into B (none: nothing); only
 * certificates, so that a file named by mistake (a key, credentials) is
 * never copied into the sandbox.  Returns 0, or -1 (errno) when PATH
 * cannot be opened.
 */
static int
file_certs(const char *path, struct buf *b)
{
	FILE *f = open_regular(path);
	BIO *in, *out;
	X509 *x;
	char *p;
	long n;

	if (f == NULL)
		return -1;
	in = BIO_new_fp(f, BIO_CLOSE);
	out = BIO_new(BIO_s_mem());
	if (in == NULL)
		fclose(f);
	while (in != NULL && out != NULL &&
	    (x = PEM_read_bio_X509(in, NULL, NULL, NULL)) != NULL) {
		(void)PEM_write_bio_X509(out, x);
		X509_free(x);
	}
	ERR_clear_error();
	if (out != NULL && (n = BIO_get_mem_data(out, &p)) > 0)
		buf_add(b, p, (size_t)n);
	BIO_free(in);
	BIO_free(out);
	return 0;
}

/* The certificates of the files in directory PATH.  0, or -1 (errno). */
static int
dir_certs(const char *path, struct buf *b)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char *f;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		f = xasprintf("%s/%s", path, e->d_name);
		(void)file_certs(f, b);
		free(f);
	}
	closedir(d);
	return 0;
}

/*
 * The certificates of what the user's VALUE names: a file, or a
 * directory's files (REQUESTS_CA_BUNDLE, BUNDLE_SSL_CA_CERT take one;
 * SSL_CERT_DIR a list of them, colon-separated).  Returns 0, or -1 with
 * errno (EINVAL: not one certificate in it).
 */
static int
read_user(const char *value, int list, struct buf *b)
{
	char *copy = xstrdup(value), *p, *next;
	struct stat st;
	int rc = 0;

	for (p = copy; rc == 0 && p != NULL; p = next) {
		next = list ? strchr(p, ':') : NULL;
		if (next != NULL)
			*next++ = '\0';
		if (*p == '\0' && list)
			continue;
		if (stat(p, &st) != 0)
			rc = -1;
		else if (S_ISDIR(st.st_mode))
			rc = dir_certs(p, b);
		else
			rc = file_certs(p, b);
	}
	free(copy);
	if (rc == 0 && b->len == 0) {
		errno = EINVAL;
		rc = -1;
	}
	return rc;
}

/* The system bundle, the first found: into B, its path kept. */
static void
read_system(struct run_trust *t, struct buf *b)
{
	size_t i, n = sizeof(system_bundles) / sizeof(system_bundles[0]);
	const char *path;

	for (i = 0; t->syspath == NULL && i < (t->system ? 1 : n); i++) {
		path = t->system ? t->system : system_bundles[i];
		if (read_file(path, b) == 0)
			t->syspath = xstrdup(path);
	}
	if (b->len > 0 && b->p[b->len - 1] != '\n')
		buf_add(b, "\n", 1);
}

/* --- the hashed directory ------------------------------------------------- */

/* The entries of the hashed directory so far. */
struct hashset {
	struct hashed *v;
	size_t n, cap;
};

static void
hashset_add(struct hashset *s, unsigned long h, int k, X509 *x)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->v = xreallocarray(s->v, s->cap, sizeof(*s->v));
	}
	s->v[s->n].h = h;
	s->v[s->n].k = k;
	s->v[s->n++].x = x;
}

static void
hashset_free(struct hashset *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		X509_free(s->v[i].x);
	free(s->v);
}

/* X's entry certs/HASH.N (N past those taken), unless X is there. */
static void
hash_one(struct run_trust *t, X509 *x, struct hashset *s)
{
	unsigned long h = X509_subject_name_hash(x);
	BIO *out = BIO_new(BIO_s_mem());
	char name[32], *p;
	size_t i;
	long n;
	int k = 0;

	for (i = 0; i < s->n; i++)
		if (s->v[i].h == h) {
			if (s->v[i].x != NULL && X509_cmp(s->v[i].x, x) == 0)
				goto out;
			if (s->v[i].k >= k)
				k = s->v[i].k + 1;
		}
	if (out == NULL || !PEM_write_bio_X509(out, x) ||
	    (n = BIO_get_mem_data(out, &p)) <= 0)
		goto out;
	snprintf(name, sizeof(name), "certs/%08lx.%d", h, k);
	run_trust_add_file(t, name, p, (size_t)n);
	hashset_add(s, h, k, x);
	x = NULL;
out:
	X509_free(x);
	BIO_free(out);
}

/* The certificates of the PEM text IN, into the hashed directory. */
static void
hash_pem(struct run_trust *t, const struct buf *in, struct hashset *s)
{
	BIO *bio = BIO_new_mem_buf(in->p, (int)in->len);
	X509 *x;

	while (bio != NULL &&
	    (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL)
		hash_one(t, x, s);
	ERR_clear_error();
	BIO_free(bio);
}

/*
 * The system's own hashed directory (OpenSSL's default, /etc/ssl/certs
 * on Debian), its HASH.N entries copied as they are: decoding the 150
 * certificates of a system bundle takes OpenSSL 3 some 60 ms.  Returns
 * how many were copied (none: the bundle is decoded instead).
 */
static size_t
hash_system(struct run_trust *t, struct hashset *s)
{
	const char *dir = t->sysdir ? t->sysdir : X509_get_default_cert_dir();
	struct buf b = {NULL, 0, 0};
	struct dirent *e;
	char *path, *end, name[NAME_MAX + 8];
	unsigned long h;
	long k;
	DIR *d;

	if ((t->system != NULL && t->sysdir == NULL) ||
	    (d = opendir(dir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		h = strtoul(e->d_name, &end, 16);
		if (end != e->d_name + 8 || *end != '.' ||
		    (k = strtol(end + 1, &end, 10)) < 0 || *end != '\0' ||
		    !(end[-1] >= '0' && end[-1] <= '9'))
			continue;
		path = xasprintf("%s/%s", dir, e->d_name);
		b.len = 0;
		if (read_file(path, &b) == 0 && b.len > 0) {
			snprintf(name, sizeof(name), "certs/%s", e->d_name);
			run_trust_add_file(t, name, b.p, b.len);
			hashset_add(s, h, (int)k, NULL);
		}
		free(path);
	}
	closedir(d);
	free(b.p);
	return s->n;
}

/* --- CA files in git's and pip's configuration ---------------------------- */

/*
 * The configuration files read, system and user level only: a
 * repository's or a virtual environment's may lie where the sandbox
 * writes, and would name a file for pinhole to read.  "~/" is the
 * sandbox's HOME.  Only certificates are ever taken from the files they
 * name.
 */
static const struct {
	const char *path;
	int pip; /* else git's */
} confs[] = {
    {"/etc/gitconfig", 0},
    {"~/.gitconfig", 0},
    {"~/.config/git/config", 0},
    {"/etc/pip.conf", 1},
    {"/etc/xdg/pip/pip.conf", 1},
    {"~/.pip/pip.conf", 1},
    {"~/.config/pip/pip.conf", 1},
};

/* PATH with a leading "~/" made HOME's; NULL when it cannot be. */
static char *
expand(const char *path, const char *home)
{
	if (strncmp(path, "~/", 2) != 0)
		return path[0] == '/' ? xstrdup(path) : NULL;
	return home != NULL && home[0] == '/'
	    ? xasprintf("%s/%s", home, path + 2)
	    : NULL;
}

/* S without blanks around it (in place), and without one pair of quotes. */
static char *
trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && strchr(" \t\r\n", end[-1]) != NULL)
		*--end = '\0';
	if (end - s >= 2 && s[0] == '"' && end[-1] == '"') {
		end[-1] = '\0';
		s++;
	}
	return s;
}

/*
 * The CA file that one configuration line names, or NULL: git's
 * sslCAInfo in an [http] or [http "URL"] section, pip's cert in any.
 */
static const char *
conf_value(char *line, int pip, int *in_http)
{
	char *eq, *key;

	line = trim(line);
	if (line[0] == '[') {
		*in_http = strncasecmp(line, "[http", 5) == 0 &&
		    (line[5] == ']' || line[5] == ' ');
		return NULL;
	}
	if (line[0] == '#' || line[0] == ';' ||
	    (eq = strchr(line, '=')) == NULL)
		return NULL;
	*eq = '\0';
	key = trim(line);
	if (pip ? strcmp(key, "cert") == 0
	        : *in_http && strcasecmp(key, "sslcainfo") == 0)
		return trim(eq + 1);
	return NULL;
}

/*
 * Over the configured file PATH, a copy holding its certificates and the
 * added ones, so that the setting stays in force and trusts the run CA
 * too; pip's go to requests.pem as well (REQUESTS_CA_BUNDLE beats
 * pip's `cert =`).
 */
static void
overlay(struct run_trust *t, const char *path, int pip)
{
	struct buf b = {NULL, 0, 0};
	struct mnt_file *o;
	size_t i;

	for (i = 0; i < t->nover; i++)
		if (strcmp(t->over[i].name, path) == 0)
			return;
	if (t->syspath != NULL && strcmp(path, t->syspath) == 0)
		return;
	if (file_certs(path, &b) != 0 || b.len == 0) {
		free(b.p);
		return;
	}
	if (pip)
		buf_add(&t->pip, b.p, b.len);
	buf_add(&b, t->extra.p, t->extra.len);
	t->over = xreallocarray(t->over, t->nover + 1, sizeof(*t->over));
	o = &t->over[t->nover++];
	o->name = xstrdup(path);
	o->data = b.p;
	o->len = b.len;
}

/* The CA files the user's git and pip configuration name. */
static void
read_confs(struct run_trust *t, const struct env *e)
{
	const char *home = env_get(e, "HOME"), *v;
	char *path, *file, *line = NULL;
	size_t i, cap = 0;
	int in_http;
	FILE *f;

	for (i = 0; i < sizeof(confs) / sizeof(confs[0]); i++) {
		file = NULL;
		/* A test's system bundle: the host's own files are not read. */
		if ((t->system != NULL && confs[i].path[0] == '/') ||
		    (file = expand(confs[i].path, home)) == NULL ||
		    (f = open_regular(file)) == NULL) {
			free(file);
			continue;
		}
		in_http = 0;
		while (getline(&line, &cap, f) > 0)
			if ((v = conf_value(line, confs[i].pip, &in_http)) !=
			        NULL &&
			    (path = expand(v, home)) != NULL) {
				overlay(t, path, confs[i].pip);
				free(path);
			}
		fclose(f);
		free(file);
	}
	free(line);
}

/* --- the variables -------------------------------------------------------- */

/* Why read_user failed, from its errno. */
static const char *
why(int e)
{
	if (e == EINVAL)
		return "it holds no PEM certificate";
	return e == ENOTSUP ? "not a regular file" : strerror(e ? e : ENOENT);
}

/* NAME's value as the user gave it (or its alias's), copied, or NULL. */
static char *
user_value(struct env *e, size_t v)
{
	const char *s = env_get(e, vars[v].name);

	if (s == NULL && vars[v].alias != NULL)
		s = env_get(e, vars[v].alias);
	return s != NULL ? xstrdup(s) : NULL;
}

/* The user's VALUE of variable V plus the extra certificates. */
static int
user_bundle(struct run_trust *t, struct env *e, size_t v, const char *value,
    char *err, size_t errlen)
{
	struct buf b = {NULL, 0, 0};
	char name[128], *path;

	errno = 0;
	if (read_user(value, 0, &b) != 0) {
		ph_errf(err, errlen,
		    "%s=%s: cannot read it to add the run's certificates to "
		    "it: %s",
		    vars[v].name, value, why(errno));
		free(b.p);
		return -1;
	}
	buf_add(&b, t->extra.p, t->extra.len);
	snprintf(name, sizeof(name), "env/%s.pem", vars[v].name);
	run_trust_add_file(t, name, b.p, b.len);
	path = xasprintf("%s/%s", RUN_TRUST_DIR, name);
	env_set(e, vars[v].name, path);
	if (vars[v].alias != NULL)
		env_unset(e, vars[v].alias);
	free(path);
	free(b.p);
	return 0;
}

/* SSL_CERT_DIR: the user's directories or the system's, and the extra. */
static int
cert_dir(struct run_trust *t, struct env *e, const char *value, char *err,
    size_t errlen)
{
	struct hashset hs = {NULL, 0, 0};
	struct buf b = {NULL, 0, 0};
	int rc = 0;

	errno = 0;
	if (value == NULL && hash_system(t, &hs) > 0)
		buf_add(&b, t->extra.p, t->extra.len);
	else if (value == NULL)
		buf_add(&b, t->bundle.p, t->bundle.len);
	else if (read_user(value, 1, &b) != 0) {
		ph_errf(err, errlen,
		    "SSL_CERT_DIR=%s: cannot read it to add the run's "
		    "certificates to it: %s",
		    value, why(errno));
		rc = -1;
	} else
		buf_add(&b, t->extra.p, t->extra.len);
	if (rc == 0) {
		hash_pem(t, &b, &hs);
		env_set(e, "SSL_CERT_DIR", RUN_TRUST_DIR "/certs");
	}
	hashset_free(&hs);
	free(b.p);
	return rc;
}

/*
 * What variable V names when the user set nothing: the added
 * certificates, or the whole bundle; for requests (which beats pip's
 * `cert =`) and curl, pip's configured certificates too.
 */
static const char *
default_file(const struct run_trust *t, size_t v)
{
	if (vars[v].kind == V_EXTRA)
		return RUN_TRUST_DIR "/extra.pem";
	if (t->pip.len > 0 &&
	    (strcmp(vars[v].name, "REQUESTS_CA_BUNDLE") == 0 ||
	        strcmp(vars[v].name, "CURL_CA_BUNDLE") == 0))
		return RUN_TRUST_DIR "/requests.pem";
	return RUN_TRUST_BUNDLE;
}

/* Variable V: its value in the sandbox, and any file it needs. */
static int
set_var(struct run_trust *t, struct env *e, size_t v, char *err, size_t errlen)
{
	char *user = user_value(e, v);
	int rc = 0;

	switch (vars[v].kind) {
	case V_CA:
		if (t->ca != NULL)
			env_set(e, vars[v].name, RUN_TRUST_DIR "/ca.pem");
		break;
	case V_DIR:
		rc = cert_dir(t, e, user, err, errlen);
		break;
	case V_BUNDLE_USER:
		if (user == NULL && t->syspath != NULL)
			break;
		/* FALLTHROUGH */
	case V_BUNDLE:
	case V_EXTRA:
		if (user != NULL)
			rc = user_bundle(t, e, v, user, err, errlen);
		else
			env_set(e, vars[v].name, default_file(t, v));
		break;
	}
	free(user);
	return rc;
}

int
run_trust_build(struct run_trust *t, struct env *e, char *err, size_t errlen)
{
	char *req;
	size_t i;

	if (!run_trust_active(t) || t->built)
		return 0;
	t->built = 1;
	read_system(t, &t->bundle);
	buf_add(&t->bundle, t->extra.p, t->extra.len);
	run_trust_add_file(t, "bundle.pem", t->bundle.p, t->bundle.len);
	run_trust_add_file(t, "extra.pem", t->extra.p, t->extra.len);
	if (t->ca != NULL)
		run_trust_add_file(t, "ca.pem", t->ca, strlen(t->ca));
	read_confs(t, e);
	if (t->pip.len > 0) {
		req = xasprintf("%s%s", t->bundle.p, t->pip.p);
		run_trust_add_file(t, "requests.pem", req, strlen(req));
		free(req);
	}
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (set_var(t, e, i, err, errlen) != 0)
			return -1;
	return 0;
}

const char *
run_trust_pem(const struct run_trust *t, size_t *len)
{
	*len = t->bundle.len;
	return t->built ? t->bundle.p : NULL;
}

int
run_trust_plan(
    const struct run_trust *t, struct mnt_plan *p, char *err, size_t errlen)
{
	size_t i;

	if (!t->built)
		return 0;
	/* Tools that read only the system's path see the run CA there. */
	if (t->syspath != NULL && t->system == NULL &&
	    mnt_plan_add_file(
	        p, t->syspath, t->bundle.p, t->bundle.len, err, errlen) != 0)
		return -1;
	for (i = 0; i < t->nover; i++)
		if (mnt_plan_add_file(p, t->over[i].name, t->over[i].data,
		        t->over[i].len, err, errlen) != 0)
			return -1;
	return mnt_plan_add_tree(
	    p, RUN_TRUST_DIR, t->files, t->nfiles, err, errlen);
}

void
run_trust_set_system(struct run_trust *t, const char *path)
{
	free(t->system);
	t->system = xstrdup(path);
}

size_t
run_trust_nfiles(const struct run_trust *t)
{
	return t->nfiles;
}

const struct mnt_file *
run_trust_file(const struct run_trust *t, size_t i)
{
	return i < t->nfiles ? &t->files[i] : NULL;
}

size_t
run_trust_noverlays(const struct run_trust *t)
{
	return t->nover;
}

const struct mnt_file *
run_trust_overlay(const struct run_trust *t, size_t i)
{
	return i < t->nover ? &t->over[i] : NULL;
}

void
run_trust_set_system_dir(struct run_trust *t, const char *dir)
{
	free(t->sysdir);
	t->sysdir = xstrdup(dir);
}
