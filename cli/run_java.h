/*
 * run_java.h: what Java needs to use pinhole's proxy in `pinhole run`.
 * The JVM reads no http_proxy variable and trusts only its own store, so
 * the sandbox gets JAVA_TOOL_OPTIONS (read by every JVM at start) with the
 * proxy properties and, when the sandbox trusts extra certificates (the
 * run CA), a PKCS12 trust store holding them and the system's CAs.
 */
#ifndef PH_RUN_JAVA_H
#define PH_RUN_JAVA_H

#include <stddef.h>

struct env;
struct mnt_plan;

/* The store's password: the file is public, the MAC only checks it. */
#define RUN_JAVA_PASSWORD "changeit"

/*
 * Where the store is put: over the JDK's system store (Debian's, which
 * every JDK of the distribution links to), so a JVM started without
 * JAVA_TOOL_OPTIONS trusts it too; in /tmp where there is none.
 */
#define RUN_JAVA_SYSTEM_STORE "/etc/ssl/certs/java/cacerts"
#define RUN_JAVA_TMP_STORE "/tmp/.pinhole-java-cacerts.p12"

/*
 * A PKCS12 trust store of every certificate in the PEM text PEM, each a
 * trusted certificate entry for Java (Oracle's trusted-key-usage
 * attribute, any extended key usage, as keytool writes it), with a
 * SHA-256 MAC under RUN_JAVA_PASSWORD.  Returns the DER bytes (*LEN of
 * them; the caller frees), or NULL with ERR (no certificate, or OpenSSL
 * failed).
 */
unsigned char *
run_java_store(const char *pem, size_t *len, char *err, size_t errlen);

/*
 * Builds the store from PEM and adds it to PLAN (RUN_JAVA_SYSTEM_STORE
 * when that is a file, else RUN_JAVA_TMP_STORE).  Returns the path it
 * is put at (static), or NULL with ERR.
 */
const char *
run_java_place(struct mnt_plan *, const char *pem, char *err, size_t errlen);

/*
 * The JAVA_TOOL_OPTIONS value: the proxy properties for 127.0.0.1:PORT
 * (http.nonProxyHosts as no_proxy), the trust store STORE when not NULL,
 * then USER (the user's own value, or NULL): the JVM takes the last of
 * properties given twice, so the user's win.  Returns a string to free.
 */
char *run_java_options(unsigned port, const char *store, const char *user);

/* Sets JAVA_TOOL_OPTIONS in ENV by run_java_options, from its own value. */
void run_java_env(struct env *, unsigned port, const char *store);

#endif /* PH_RUN_JAVA_H */
