/*
 * policy.h: the policy engine: load a policy, decide requests.
 *
 * A policy is loaded from one or more files (policy_load), is immutable
 * afterwards, and answers two questions through policy_decide():
 *   - tunnel phase (req.method == NULL): may the sandbox open HOST:PORT,
 *     and must the proxy look inside (TLS interception) to decide the
 *     requests that follow?
 *   - request phase (req.method != NULL): may this one request pass, under
 *     which rule, with which credential?
 * Decisions cost a few hash look-ups, never a scan over all rules.
 */
#ifndef PH_POLICY_H
#define PH_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "secret.h"
#include "target.h"

struct policy;
struct policy_rule;

enum policy_verdict {
	POLICY_DENY = 0,
	POLICY_ALLOW = 1,
};

enum policy_inject_kind {
	POLICY_INJECT_BASIC, /* Authorization: Basic base64(user:value) */
	POLICY_INJECT_BEARER, /* Authorization: Bearer value */
	POLICY_INJECT_HEADER, /* NAME: value */
};

struct policy_inject {
	enum policy_inject_kind kind;
	const char *header; /* "Authorization" or NAME */
	const char *user; /* basic only, else NULL */
	const char *secret_name;
	struct secret *secret; /* value loaded by secret_store_load */
};

#define POLICY_PLACEHOLDER_HEADERS 8

struct policy_placeholder {
	const char *env; /* variable set in the sandbox */
	const char *secret_name;
	struct secret *secret;
	/* Fields besides Authorization where the stand-in is swapped. */
	const char *headers[POLICY_PLACEHOLDER_HEADERS];
	size_t nheaders;
};

enum policy_timeout {
	POLICY_TIMEOUT_CONNECT,
	POLICY_TIMEOUT_HEAD,
	POLICY_TIMEOUT_IDLE,
	POLICY_TIMEOUT_MAX,
};

struct policy_request {
	const struct target_host *host; /* normalised (target_host_parse) */
	uint16_t port;
	int tls; /* request phase: 1 inside TLS, 0 plain HTTP */
	const char *method; /* NULL: tunnel phase */
	const char *path; /* request phase: target_path_normalise'd */
	/*
	 * Request phase: the protocols of the Upgrade field(s), a comma-
	 * separated list ("websocket"), when the request asks to switch
	 * protocols (Connection: upgrade); NULL otherwise.  After a 101 the
	 * proxy relays raw bytes and polices nothing more: a rule with paths
	 * or methods admits an upgrade only to protocols it names.
	 */
	const char *upgrade;
};

struct policy_decision {
	enum policy_verdict verdict;
	const struct policy_rule *rule; /* deciding rule, NULL: default */
	const char *rule_file; /* as given on the command line */
	unsigned rule_line;
	char reason[256]; /* denials: one line; allows: "" */
	int intercept; /* tunnel phase: requests must be seen */
	int allow_private; /* private addresses may be connected to */
	const char *upstream_ca; /* NULL: system trust store */
	const struct policy_inject *inject;
	size_t ninject;
	const struct policy_placeholder *placeholder;
	size_t nplaceholder;
	char *const *upgrade; /* the rule's "upgrade" protocols */
	size_t nupgrade;
};

struct policy_diag {
	int warning; /* 0: error */
	const char *file;
	unsigned line, col; /* 1-based; 0 when not about a place */
	const char *msg;
};

/* Called for every diagnostic, in file order, errors and warnings mixed. */
typedef void policy_diag_fn(void *arg, const struct policy_diag *);

/*
 * Parses FILES (in order, as if each were included by the previous one)
 * into a policy, reporting every error and warning through DIAG.  No
 * secret value is read.  Returns 0 and *OUT, or PH_ERR_POLICY when there
 * were errors (*OUT is then NULL).
 */
int policy_load(const char *const *files, size_t nfiles, policy_diag_fn *diag,
    void *arg, struct policy **out);

/*
 * policy_load, then TEXT (NULL: none) as if it were one more file named
 * NAME: `pinhole run --allow` rules, named "--allow" in diagnostics and in
 * the audit log's "rule".
 */
int policy_load_extra(const char *const *files, size_t nfiles, const char *name,
    const char *text, policy_diag_fn *diag, void *arg, struct policy **out);

/*
 * Same, from a string, FILE being the name used in diagnostics; includes
 * are resolved relative to the current directory.  For tests and fuzzing.
 */
int policy_load_string(const char *file, const char *text, size_t len,
    policy_diag_fn *diag, void *arg, struct policy **out);

/*
 * The files the policy was read from, includes too, as named when read
 * (and "--allow" for policy_load_extra's text).
 */
size_t policy_file_count(const struct policy *);
const char *policy_file_at(const struct policy *, size_t i);

/* Frees the policy and wipes its secrets.  NULL does nothing. */
void policy_free(struct policy *);

/*
 * May some request to the name HOST be allowed, on any port (an allow
 * rule names it, or a wildcard over it, and no port-less deny covers
 * it)?  The DNS stub answers such a name with a synthetic address and
 * every other name with NXDOMAIN (issue 12).  Address targets: 0.
 * Implemented in match.c.
 */
int policy_host_may_allow(const struct policy *, const struct target_host *);

/*
 * The ports the sandbox captures connections on (issue 12): 80, 443 and
 * every port of an allow rule, ascending, at most MAX of them in PORTS.
 * A range of more than POLICY_CAPTURE_RANGE_MAX ports is not captured
 * (its connections need the proxy variables); *SKIPPED counts the ports
 * so left out.  Returns how many.  Implemented in policy.c.
 */
#define POLICY_CAPTURE_RANGE_MAX 256
size_t policy_capture_ports(
    const struct policy *, uint16_t *ports, size_t max, size_t *skipped);

/* Decides REQ; always fills *D.  Returns D->verdict. */
enum policy_verdict policy_decide(const struct policy *,
    const struct policy_request *req, struct policy_decision *d);

/* The secrets the policy defines, for secret_store_load(). */
struct secret_store *policy_secrets(const struct policy *);

/*
 * The CA of a "ca cert PATH key PATH" line: returns 1 and sets *CERT and
 * *KEY, or 0 when the policy has none (a run CA is made).
 */
int policy_ca(const struct policy *, const char **cert, const char **key);

/* A "trust FILE" line: a CA the sandbox trusts, and where it was written. */
struct policy_trust {
	char *path;
	const char *file;
	unsigned line, col;
};

/* The I-th "trust" line in file order, or NULL past the last. */
const struct policy_trust *policy_trust_at(const struct policy *, size_t i);

/* The audit log path, "stderr", or NULL when the policy names none. */
const char *policy_log_path(const struct policy *);

/* A timeout in milliseconds (defaults: connect 10 s, head 30 s, idle 300 s). */
unsigned policy_timeout(const struct policy *, enum policy_timeout);

/*
 * Static addresses for HOST from "resolve" lines: fills up to MAX entries
 * of OUT and returns how many the policy has (0 when none).
 */
size_t policy_resolve(const struct policy *, const char *host,
    struct target_host *out, size_t max);

/*
 * Calls FN with each target whose tunnels the proxy may intercept, typed
 * (its name borrowed from the policy): the targets of allow rules that
 * need the request (paths, methods, inject, placeholder) and of deny
 * rules with paths or methods: what the per-run CA may sign for
 * (ca_new_run_for).
 */
void policy_intercept_targets(const struct policy *,
    void (*fn)(void *arg, const struct target_pattern *), void *arg);

/* Calls FN with each rule's upstream-ca file (once per rule that has one). */
void policy_upstream_cas(
    const struct policy *, void (*fn)(void *arg, const char *path), void *arg);

/* Calls FN once for each placeholder variable (ENV and its secret). */
void policy_placeholders(const struct policy *,
    void (*fn)(void *arg, const struct policy_placeholder *), void *arg);

/* Number of rules (allow and deny). */
size_t policy_rule_count(const struct policy *);

/* The broker blocks of a broker's or gateway's configuration (grant.h);
 * NULL when it has none. */
struct grant_set;
const struct grant_set *policy_grants(const struct policy *);

/* Counts of errors-free warnings found while loading. */
size_t policy_warning_count(const struct policy *);

#ifdef POLICY_INTERNAL
/*
 * The rule model, filled by parse.c, read by match.c and check.c, and
 * seen by tests.
 */

struct port_range {
	uint16_t lo, hi;
};

enum rule_target_kind {
	RT_ANY, /* "*": every name and address */
	RT_EXACT, /* host name */
	RT_WILD, /* "*.suffix": names strictly under suffix */
	RT_CIDR, /* address block, v4 or v6 */
};

struct rule_target {
	enum rule_target_kind kind;
	uint32_t rule; /* index into policy.rules */
	char *host; /* EXACT name, WILD suffix */
	int family; /* CIDR: 4 or 6 */
	uint8_t addr[16]; /* CIDR: network, host bits zero */
	unsigned plen; /* CIDR: prefix length */
	struct port_range *ports; /* sorted, merged */
	size_t nports;
	unsigned col;
};

struct policy_loc {
	unsigned line, col;
};

struct policy_rule {
	int deny;
	const char *file;
	unsigned line, col;
	uint32_t index; /* file order */
	uint32_t first_target, ntargets; /* into policy.targets */
	char **paths;
	size_t npaths;
	char **methods;
	size_t nmethods;
	int private_ok;
	char *upstream_ca;
	unsigned upstream_ca_col;
	struct policy_inject *inject;
	size_t ninject;
	struct policy_placeholder *placeholder;
	size_t nplaceholder;
	char **upgrade; /* "upgrade PROTO...": protocol names */
	size_t nupgrade;
	unsigned upgrade_col;
	struct policy_loc *inject_loc; /* where each secret was named */
	struct policy_loc *placeholder_loc;
};

/* Adds a diagnostic (printf-style message). */
void
policy_diag_add(struct policy *, int warning, const char *file, unsigned line,
    unsigned col, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

struct policy *policy_new(void);
const char *policy_intern_file(struct policy *, const char *);
struct policy_rule *policy_rule_add(
    struct policy *, int deny, const char *file, unsigned line, unsigned col);
struct rule_target *policy_target_add(struct policy *, struct policy_rule *);
int policy_set_log(struct policy *, const char *path, const char *file,
    unsigned line, unsigned col);
void policy_set_timeout(struct policy *, enum policy_timeout, unsigned ms);
int policy_set_ca(struct policy *, const char *cert, const char *key,
    const char *file, unsigned line, unsigned col);
void policy_trust_add(struct policy *, const char *path, const char *file,
    unsigned line, unsigned col);
/* Returns 0, or PH_ERR_EXISTS when HOST already has addresses. */
int policy_resolve_add(struct policy *, const char *host,
    const struct target_host *addrs, size_t n);
/*
 * Defines a secret and remembers where.  Returns 0, or PH_ERR_EXISTS and
 * the earlier definition's place in *PREV_FILE / *PREV_LINE.
 */
int policy_secret_define(struct policy *, const char *name, enum secret_source,
    const char *const *argv, size_t argc, const char *file, unsigned line,
    unsigned col, const char **prev_file, unsigned *prev_line);
/* The broker blocks, made when the parser meets the first. */
struct grant_set *policy_grants_edit(struct policy *);
/* Puts the diagnostics in reading order (file, line, column). */
void policy_diag_sort(struct policy *);
size_t policy_error_count(const struct policy *);
void policy_report(const struct policy *, policy_diag_fn *, void *);
const struct policy_rule *policy_rule_at(const struct policy *, size_t i);
const struct rule_target *policy_target_at(const struct policy *, size_t i);
size_t policy_target_count(const struct policy *);
/* Rule I, to be completed by the second pass (check.c). */
struct policy_rule *policy_rule_edit(struct policy *, size_t i);
/* Where secret I (in policy_secrets order) was defined. */
void policy_secret_where(const struct policy *, size_t i, const char **file,
    unsigned *line, unsigned *col);

/*
 * The index (match.c) of a loaded policy.  The model does not know it:
 * whoever builds it hands over FREE_FN, which policy_free() calls, so
 * policy.c needs nothing from match.c.
 */
struct match;
void policy_set_index(
    struct policy *, struct match *, void (*free_fn)(struct match *));
const struct match *policy_index(const struct policy *);

/* Does the rule look at requests (paths or methods)? */
static inline int
policy_rule_constrained(const struct policy_rule *r)
{
	return r->npaths > 0 || r->nmethods > 0;
}

/* Must the proxy see the rule's requests (TLS interception)? */
static inline int
policy_rule_intercepts(const struct policy_rule *r)
{
	return policy_rule_constrained(r) || r->ninject > 0 ||
	    r->nplaceholder > 0;
}

/* Does the '*' glob PATTERN match the whole of PATH? */
int policy_path_match(const char *pattern, const char *path);
#endif

#endif
