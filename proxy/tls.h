/*
 * tls.h: the proxy's TLS contexts for interception.
 *
 * Toward the sandbox, the proxy is the server: it checks that the
 * ClientHello names the CONNECT target (SNI), then presents a leaf for it
 * from the run CA (ca.h), and speaks only HTTP/1.1 (ALPN).  Toward the
 * real server, it is a client that verifies the certificate and the name
 * against the system trust store or the rule's upstream-ca, with TLS 1.2
 * at least, and resumes sessions per host and port.
 */
#ifndef PH_TLS_H
#define PH_TLS_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

struct ca;
struct tls;

/*
 * Contexts that sign leaves with CA (borrowed).  The system trust store
 * is read at the first upstream connection that needs it (the files
 * under /etc must stay readable).  Returns NULL with the reason in ERR.
 */
struct tls *tls_new(struct ca *ca, char *err, size_t errlen);
void tls_free(struct tls *);

/*
 * Contexts for another event loop's thread: T's CA cloned (ca_clone: a
 * leaf cache of its own), T's upstream-ca trust stores shared (read
 * only), a session cache of its own, the system trust store read at its
 * own first use.  No lock is shared with T on any connection.  T must
 * outlive it.  Returns NULL with the reason in ERR.
 */
struct tls *tls_clone(struct tls *t, char *err, size_t errlen);

/*
 * A server-side SSL for a tunnel to HOST (canonical, as CONNECT named
 * it): the handshake fails with an alert when the SNI is absent (for a
 * name) or differs.  Returns NULL with the reason in ERR.
 */
SSL *tls_server_ssl(struct tls *, const char *host, char *err, size_t errlen);

/*
 * Why the server-side handshake of SSL failed, one line, for the log:
 * the SNI check's reason, else OpenSSL's error E (0: none known).
 */
void tls_server_error(SSL *, unsigned long e, char *buf, size_t len);

/*
 * Reads the CA file CAFILE (a rule's upstream-ca) into a trust store of
 * its own, now and once: called before the sandbox starts, so that what
 * the sandbox could write later is never read.  Loading a file twice does
 * nothing.  Returns 0, or -1 with the reason in ERR.
 */
int tls_add_trust(struct tls *, const char *cafile, char *err, size_t errlen);

/*
 * A client-side SSL to HOST:PORT (IS_IP: HOST is an address literal) that
 * verifies against CAFILE (NULL: the system store), which tls_add_trust
 * must have loaded.  Returns NULL with the reason in ERR (e.g. a CAFILE
 * never loaded).
 */
SSL *tls_client_ssl(struct tls *, const char *host, uint16_t port, int is_ip,
    const char *cafile, char *err, size_t errlen);

/* Why the client-side handshake of SSL failed (OpenSSL's E), one line. */
void tls_client_error(SSL *, unsigned long e, char *buf, size_t len);

#endif /* PH_TLS_H */
