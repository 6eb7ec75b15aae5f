/*
 * decide.c: the proxy's policy questions on a CONNECT or a request head
 * (see decide.h).  No I/O and no session: what to answer (403, the audit
 * record) is the caller's.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define DECIDE_INTERNAL
#include "policy/target.h"
#include "proxy/decide.h"
#include "proxy/http.h"
#include "proxy/inject.h"

void
decide_connect(const struct policy *p, const struct target_host *host,
    uint16_t port, struct policy_decision *d)
{
	struct policy_request q = {0};

	q.host = host;
	q.port = port;
	q.tls = 1;
	policy_decide(p, &q, d);
}

/*
 * The protocols every Upgrade field asks for, joined by commas, into BUF:
 * all of them are forwarded, so all of them are decided.  A list too long
 * for BUF becomes "(too long)", which no rule can name.
 */
const char *
decide_upgrade_list(const struct http_head *h, char *buf, size_t len)
{
	size_t i, o = 0;
	int n;

	if (!h->upgrade)
		return NULL;
	buf[0] = '\0';
	for (i = 0; i < h->nfields; i++) {
		if (h->fields[i].name_len != 7 ||
		    strncasecmp(h->fields[i].name, "upgrade", 7) != 0)
			continue;
		n = snprintf(buf + o, len - o, "%s%.*s", o ? "," : "",
		    (int)h->fields[i].value_len, h->fields[i].value);
		if (n < 0 || (size_t)n >= len - o)
			return "(too long)";
		o += n;
	}
	return buf;
}

/*
 * TRACE (and TRACK, its IIS twin) makes a server send the request back:
 * on a rule that injects or swaps credentials, that is their echo.
 */
static void
check_trace(const char *m, struct policy_decision *d)
{
	if (d->verdict != POLICY_ALLOW ||
	    (d->ninject == 0 && d->nplaceholder == 0) ||
	    (strcasecmp(m, "TRACE") != 0 && strcasecmp(m, "TRACK") != 0))
		return;
	d->verdict = POLICY_DENY;
	snprintf(d->reason, sizeof(d->reason),
	    "%.8s is refused on a rule that injects or swaps credentials: "
	    "the server would echo them",
	    m);
}

/*
 * A stand-in anywhere but where its rule swaps it (another target, plain
 * HTTP, a denied request, the path, another field, an encoding) is a
 * leak attempt: denied, and said so.  Else TRACE and TRACK are checked.
 */
static void
check_leak(const struct inject_standins *si, const struct http_head *h,
    const struct decide_request *r, struct policy_decision *d)
{
	const char *where = "";
	long i = inject_leak(
	    si, h, d->verdict == POLICY_ALLOW ? d : NULL, r->tls, &where);

	if (i == -1) {
		check_trace(r->method, d); /* after: a leak's reason wins */
		return;
	}
	d->verdict = POLICY_DENY;
	if (i == INJECT_LEAK_NOMEM)
		snprintf(d->reason, sizeof(d->reason),
		    "out of memory checking for stand-ins");
	else
		snprintf(d->reason, sizeof(d->reason),
		    DECIDE_LEAK_PREFIX
		    " the stand-in for %.32s %.40s, to %.64s:%u; "
		    "swapped only in Authorization or listed fields, for its "
		    "rule's hosts",
		    inject_standin_env(si, (size_t)i), where, r->host->name,
		    r->port);
}

void
decide_request(const struct policy *p, const struct inject_standins *si,
    const struct http_head *h, const struct decide_request *r,
    struct policy_decision *d)
{
	struct policy_request q = {0};
	char up[256];

	q.host = r->host;
	q.port = r->port;
	q.tls = r->tls;
	q.method = r->method;
	q.path = r->path;
	q.upgrade = decide_upgrade_list(h, up, sizeof(up));
	policy_decide(p, &q, d);
	check_leak(si, h, r, d);
}

int
decide_still_allowed(const struct policy *p, const char *method,
    const char *host, uint16_t port, const char *path, int tls)
{
	struct policy_request q = {0};
	struct policy_decision d;
	struct target_host th;
	int connect = strcmp(method, "CONNECT") == 0;

	if (target_host_parse(host, strlen(host), &th) != 0)
		return 0;
	q.host = &th;
	q.port = port;
	q.tls = connect || tls;
	q.method = connect ? NULL : method;
	q.path = connect ? NULL : path;
	policy_decide(p, &q, &d);
	return d.verdict == POLICY_ALLOW && !(connect && d.intercept);
}
