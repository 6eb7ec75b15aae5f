/*
 * run_trust.h: what the sandbox trusts, in the launcher of `pinhole run`.
 *
 * The certificates to add are the run CA (when a rule intercepts, from
 * the view's CA message) and those of the policy's `trust FILE` lines
 * (the view's TRUST messages); the launcher adds them to every place a
 * tool looks, all in one read-only tree at RUN_TRUST_DIR in the
 * sandbox's own /tmp:
 *
 *   ca.pem            the run CA alone (PINHOLE_CA_FILE)
 *   bundle.pem        the system bundle + the run CA + the trust files,
 *                     also put over the system bundle's own path
 *   extra.pem         the run CA + the trust files (NODE_EXTRA_CA_CERTS,
 *                     DENO_CERT: tools that add them to their own roots)
 *   certs/HASH.N      SSL_CERT_DIR: the system's hashed directory's
 *                     entries (or its bundle's certificates) and the
 *                     added ones, named by OpenSSL's subject-name hash
 *   env/VAR.pem       VAR's own bundle (the user's --setenv or
 *                     --keep-env) + the run CA + the trust files
 *
 *   requests.pem      bundle.pem + the certificates of pip's `cert =`
 *                     (REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE beat it)
 *
 * A variable the user set keeps its bundle (its certificates, nothing
 * else): the sandbox gets a combined file under it, never the system
 * bundle instead.  GIT_SSL_CAINFO and
 * PIP_CERT are set only when the user set them (or there is no system
 * bundle to put the run CA in), so that git's http.sslCAInfo and pip's
 * `cert =` stay in force; the files those name in the system's and the
 * user's configuration get a copy put over them holding their
 * certificates and the added ones.
 */
#ifndef PH_RUN_TRUST_H
#define PH_RUN_TRUST_H

#include <stddef.h>

#define RUN_TRUST_DIR "/tmp/.pinhole-trust"
#define RUN_TRUST_BUNDLE RUN_TRUST_DIR "/bundle.pem"

struct env;
struct mnt_plan;
struct run_trust;

struct run_trust *run_trust_new(void);
void run_trust_free(struct run_trust *);

/* The run CA's certificate (PEM), copied; at most once. */
void run_trust_set_ca(struct run_trust *, const char *pem);

/* The certificates (PEM) of one `trust FILE` line, copied. */
void run_trust_add_pem(struct run_trust *, const char *pem);

/* 1 when there is something to add (a run CA or a trust file), else 0. */
int run_trust_active(const struct run_trust *);

/*
 * Reads the system bundle and the bundles that E's variables name, makes
 * the files of the tree and sets E's variables to them (PINHOLE_CA_FILE,
 * SSL_CERT_DIR and the bundle variables).  Nothing when nothing is to be
 * added.  Returns 0, or -1 with ERR (a bundle the user named that cannot
 * be read: the run stops rather than drop it).
 */
int
run_trust_build(struct run_trust *, struct env *e, char *err, size_t errlen);

/*
 * After run_trust_build: every certificate the sandbox trusts by default,
 * as PEM (the system bundle, then the run CA and the trust files:
 * bundle.pem's contents), its length in *LEN; NULL when nothing is
 * added.  For other trust stores (a Java PKCS12 one).
 */
const char *run_trust_pem(const struct run_trust *, size_t *len);

/*
 * Adds a file NAME (e.g. "java.p12") of LEN bytes of DATA (copied) to the
 * tree, at RUN_TRUST_DIR/NAME; after run_trust_build, before
 * run_trust_plan.
 */
void run_trust_add_file(
    struct run_trust *, const char *name, const void *data, size_t len);

/*
 * Adds the tree and the combined bundle over the system bundle's path to
 * PLAN.  Returns 0, or -1 with ERR.
 */
int run_trust_plan(
    const struct run_trust *, struct mnt_plan *p, char *err, size_t errlen);

#ifdef RUN_TRUST_INTERNAL
struct mnt_file;

/*
 * The system bundle to read instead of the distributions' paths; the
 * system-level git and pip configuration is not read then.
 */
void run_trust_set_system(struct run_trust *, const char *path);

/* The system's hashed directory to copy (tests: none unless set). */
void run_trust_set_system_dir(struct run_trust *, const char *dir);

/* The configured CA files put over (NAME: the host path), for tests. */
size_t run_trust_noverlays(const struct run_trust *);
const struct mnt_file *run_trust_overlay(const struct run_trust *, size_t i);

/* The tree's files, for tests. */
size_t run_trust_nfiles(const struct run_trust *);
const struct mnt_file *run_trust_file(const struct run_trust *, size_t i);
#endif

#endif /* PH_RUN_TRUST_H */
