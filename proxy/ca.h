/*
 * ca.h: the certificate authority behind TLS interception (DESIGN.md,
 * "Semantics").
 *
 * A run CA is made in memory at start: an EC P-256 key and a self-signed
 * certificate whose X.509 name constraints permit only the intercepted
 * hosts, so that even a leaked CA could not vouch for anything else.  A
 * user may instead pin a persistent CA of their own (ca_load).  Either
 * way the CA issues one leaf certificate per host, on demand, cached.
 *
 * Neither the CA key nor the leaf key is ever written anywhere, and no
 * function returns the CA key.  ca_cert_pem() is the only thing meant to
 * leave the process: the certificate the sandbox trusts.
 *
 * A struct ca is not thread-safe: the proxy uses it from its event loop.
 * Another loop's thread gets a clone (ca_clone): the same certificate and
 * keys, read only, and a leaf cache of its own.
 */
#ifndef PH_CA_H
#define PH_CA_H

#include <stddef.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

struct ca;
struct target_pattern;

/* Leaves cached per CA; the oldest is dropped to make room. */
#define CA_CACHE_MAX 1024
/* Lifetime of a run CA when ca_new_run() is given 0 hours. */
#define CA_DEFAULT_HOURS 24

/*
 * Makes a run CA valid from 5 minutes ago (clock skew) for VALID_HOURS
 * (CA_DEFAULT_HOURS when 0), whose name constraints (critical) permit
 * exactly the N HOSTS, in policy syntax:
 *   "example.com"    DNS:example.com (RFC 5280: subdomains match too)
 *   "*.example.com"  DNS:.example.com (subdomains only, not the apex)
 *   "127.0.0.1"      IP:127.0.0.1/255.255.255.255 (IPv6: /128)
 *   "10.0.0.0/8"     IP:10.0.0.0/255.0.0.0 (host bits are cleared)
 * A constraint only restricts the name types it lists, so when HOSTS has
 * no name (or no address), the sentinel DNS:pinhole.invalid (or
 * IP:0.0.0.0/32) is added, which names no reachable server; N == 0 gets
 * both, so that no real name verifies.  A host "*" (intercept everything)
 * leaves the CA unconstrained; ca_constrained() then returns 0 so that
 * the caller can warn.
 * Returns the CA, or NULL with a one-line reason in ERR (a host that is
 * not a valid name, address or CIDR is named in it).
 */
struct ca *ca_new_run(const char *const *hosts, size_t n, unsigned valid_hours,
    char *err, size_t errlen);

/*
 * ca_new_run for the N typed targets PATS (policy_intercept_targets), the
 * way pinhole makes its run CA: nothing is parsed again.  A pattern
 * TARGET_PATTERN_ANY leaves the CA unconstrained.  Returns the CA, or NULL
 * with a one-line reason in ERR.
 */
struct ca *ca_new_run_for(const struct target_pattern *pats, size_t n,
    unsigned valid_hours, char *err, size_t errlen);

/*
 * Loads a persistent CA: the first certificate in the PEM file CERT_PATH
 * and the PEM private key (EC or RSA, not encrypted) in KEY_PATH.  The
 * key file is checked as secret files are: not a symbolic link, a regular
 * file, owned by the real uid or root, mode without group or other bits
 * (0600 or 0400).  The certificate must carry basicConstraints CA:TRUE,
 * allow keyCertSign if it has a keyUsage, be valid now, and match the
 * key.  No name constraints are added: it is the user's CA.
 * Returns the CA, or NULL with a one-line reason naming the file in ERR.
 */
struct ca *
ca_load(const char *cert_path, const char *key_path, char *err, size_t errlen);

/*
 * A CA for another thread: CA's certificate and keys (shared, read only:
 * OpenSSL 3 signs with one key from several threads) and an empty leaf
 * cache of its own.  CA must outlive it.  Returns NULL (ENOMEM).
 */
struct ca *ca_clone(const struct ca *ca);

/*
 * Frees the CA, its keys and its cached leaves (a clone: its leaves
 * only).  NULL does nothing.
 */
void ca_free(struct ca *);

/*
 * Returns the CA certificate in PEM, NUL-terminated, owned by the CA:
 * the trust anchor for the sandbox.  It never contains a key.
 */
const char *ca_cert_pem(const struct ca *);

/* Returns 1 if the CA certificate has name constraints, else 0. */
int ca_constrained(const struct ca *);

/*
 * Sets *CERT and *KEY to a leaf certificate for HOST (a DNS name, or an
 * IPv4/IPv6 literal, brackets optional) and its private key.  HOST is
 * normalised as policy targets are (target.h: case, trailing dot, IPv4
 * spellings), and the leaf is cached under that form.  The leaf has
 * subject CN=HOST for names of up to 64 bytes (else an empty subject),
 * a subjectAltName of exactly HOST (DNS or IP), CA:FALSE, keyUsage
 * digitalSignature, extendedKeyUsage serverAuth, and validity from 5
 * minutes ago to 24 hours ahead, within the CA's.  It is reissued when
 * it is about to expire.  All leaves of a CA share one EC P-256 key made
 * at start: generating a key is most of the cost of a leaf, and this one
 * never leaves memory either.
 * Both are borrowed: valid until the next ca_leaf() on this CA (which may
 * drop the leaf from the cache) or ca_free(); take a reference to keep
 * them (X509_up_ref, EVP_PKEY_up_ref; SSL_use_certificate and
 * SSL_use_PrivateKey take their own).
 * Returns 0, or -1 with a one-line reason in ERR: HOST is invalid, falls
 * outside the CA's name constraints, the CA has expired, or OpenSSL
 * failed.
 */
int ca_leaf(struct ca *, const char *host, X509 **cert, EVP_PKEY **key,
    char *err, size_t errlen);

/* The most certificate text one `trust` file may hold (a view message). */
#define CA_TRUST_MAX 65535

/*
 * The certificates of PEM file PATH (a `trust` line), checked and written
 * anew as PEM into *PEM (malloc'd, NUL-terminated, at most CA_TRUST_MAX
 * bytes), so that nothing but certificates leaves it.  Returns the number
 * of certificates, or -1 with a one-line reason in ERR: PATH cannot be
 * read, holds no certificate, a PEM block that is not one (a private key:
 * the sandbox would see it), a certificate OpenSSL cannot parse, or too
 * much.
 */
int ca_read_certs(const char *path, char **pem, char *err, size_t errlen);

#ifdef CA_INTERNAL
/*
 * For tests: a leaf as ca_leaf() makes it, but without the check against
 * the CA's name constraints and without the cache, so that a test can
 * show that clients refuse it.  The caller frees both.  Returns 0 or -1.
 */
int ca_leaf_unchecked(struct ca *, const char *host, X509 **cert,
    EVP_PKEY **key, char *err, size_t errlen);

/* For tests: leaves in the cache now. */
size_t ca_cache_count(const struct ca *);
#endif

#endif
