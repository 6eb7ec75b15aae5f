/*
 * cmd_explain.c: pinhole explain.  Runs the very decision the proxy makes
 * and prints it, so a user can see why a request passes or not.  Never
 * reads secret values.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
#include "common/ph_err.h"
#include "policy/check.h"
#include "policy/grant.h"
#include "policy/policy.h"

#define PATH_BUF 8192

struct explain_req {
	struct target_host host;
	uint16_t port;
	int tls;
	const char *method; /* NULL: tunnel decision */
	const char *upgrade; /* --upgrade PROTO, or NULL */
	char path[PATH_BUF];
};

static void
explain_usage(FILE *f)
{
	fprintf(f,
	    "usage: pinhole explain -p FILE [-p FILE]... [-u PROTO] TARGET "
	    "[METHOD]\n\n"
	    "Shows how the policy decides TARGET, which is a URL "
	    "(http[s]://host[:port]/path)\n"
	    "or HOST:PORT.  For a URL, METHOD defaults to GET and the request "
	    "is decided;\nfor HOST:PORT alone, the tunnel (CONNECT) is "
	    "decided; HOST:PORT METHOD decides\na request for / (TLS unless "
	    "the port is 80).\n\n"
	    "  -p, --policy FILE  policy file (repeatable; combined in "
	    "order)\n"
	    "  -u, --upgrade PROTO  decide the request as one asking to "
	    "switch to PROTO\n"
	    "                     (Upgrade: PROTO, e.g. websocket)\n"
	    "  -h, --help         this text\n\n"
	    "Exit status: 0 allow, 1 deny, 2 usage or policy error.\n");
}

/* Fills R from TARGET and METHOD; returns 0 or prints why and -1. */
static int
parse_request(const char *target, const char *method, struct explain_req *r)
{
	struct target_url u;
	int e;

	r->method = method;
	if (strstr(target, "://") != NULL) {
		if ((e = target_url_parse(target, strlen(target), &u, r->path,
		         sizeof(r->path))) != 0) {
			log_warnx("explain: bad URL '%s': %s", target,
			    target_strerror(e));
			return -1;
		}
		r->host = u.host;
		r->port = u.port;
		r->tls = u.tls;
		if (r->method == NULL)
			r->method = "GET";
		return 0;
	}
	if ((e = target_authority_parse(
	         target, strlen(target), &r->host, &r->port)) != 0 ||
	    r->port == 0) {
		log_warnx("explain: bad target '%s': %s", target,
		    e ? target_strerror(e)
		      : "a port is needed (HOST:PORT), or "
		        "give a URL");
		return -1;
	}
	strcpy(r->path, "/");
	r->tls = r->port != 80;
	return 0;
}

static const char *
inject_kind(enum policy_inject_kind k)
{
	return k == POLICY_INJECT_BASIC ? "basic"
	    : k == POLICY_INJECT_BEARER ? "bearer"
	                                : "header";
}

/*
 * How the sandbox finds a name (issue 12): with capture on, the DNS stub
 * answers a name some allow rule names (on any port) with a synthetic
 * address that leads back to it, and every other name with NXDOMAIN.
 * An allow here settles it; a deny on this port does not (another port
 * may be allowed), so explain says what decides instead of guessing.
 */
static void
print_dns(const struct explain_req *r, const struct policy_decision *d)
{
	if (r->host.kind != TARGET_NAME)
		return;
	if (d->verdict == POLICY_ALLOW)
		printf("dns: with capture (the default), a lookup of %s in "
		       "the sandbox gets a synthetic address (198.18.0.0/15, "
		       "2001:2::/48) that leads back to this name\n",
		    r->host.name);
	else
		printf("dns: with capture (the default), a lookup of %s in "
		       "the sandbox gets a synthetic address if an allow rule "
		       "names it on some port and no deny rule covers all its "
		       "ports, else NXDOMAIN\n",
		    r->host.name);
}

/* The intercept line: what the proxy does with the tunnel's bytes. */
static void
print_intercept(const struct explain_req *r, int intercept)
{
	const char *proto = check_port_protocol(r->port);

	if (proto != NULL && !intercept)
		printf("intercept: no (opaque TCP tunnel: port %u carries %s, "
		       "not HTTP)\n",
		    r->port, proto);
	else
		printf("intercept: %s\n",
		    !r->tls         ? "no (plain HTTP is read directly)"
		        : intercept ? "yes"
		                    : "no (opaque tunnel)");
}

static void
print_decision(
    const struct explain_req *r, const struct policy_decision *d, int intercept)
{
	size_t i, k;

	printf("%s\n", d->verdict == POLICY_ALLOW ? "allow" : "deny");
	if (d->rule_file != NULL)
		printf("rule: %s:%u\n", d->rule_file, d->rule_line);
	else
		printf("rule: none (default deny)\n");
	if (d->verdict == POLICY_ALLOW)
		printf("reason: allowed by rule %s:%u\n", d->rule_file,
		    d->rule_line);
	else
		printf("reason: %s\n", d->reason);
	if (r->method != NULL)
		printf("target: %s:%u %s %s (%s)\n", r->host.name, r->port,
		    r->method, r->path, r->tls ? "https" : "http");
	else
		printf("target: %s:%u (tunnel)\n", r->host.name, r->port);
	print_dns(r, d);
	if (d->verdict != POLICY_ALLOW)
		return;
	print_intercept(r, intercept);
	for (i = 0; i < d->ninject; i++) {
		printf("inject: %s (%s", d->inject[i].header,
		    inject_kind(d->inject[i].kind));
		if (d->inject[i].user != NULL)
			printf(", user %s", d->inject[i].user);
		printf(") from secret %s\n", d->inject[i].secret_name);
	}
	if (d->ninject == 0)
		printf("inject: none\n");
	for (i = 0; i < d->nplaceholder; i++) {
		printf("placeholder: %s stands in for secret %s (swapped in "
		       "Authorization",
		    d->placeholder[i].env, d->placeholder[i].secret_name);
		for (k = 0; k < d->placeholder[i].nheaders; k++)
			printf(", %s", d->placeholder[i].headers[k]);
		printf(")\n");
	}
	printf("private: %s\n",
	    d->allow_private ? "yes (private addresses "
	                       "allowed)"
	                     : "no (private addresses refused)");
	if (d->upstream_ca != NULL)
		printf("upstream-ca: %s\n", d->upstream_ca);
	for (i = 0; i < d->nupgrade; i++)
		printf("upgrade: %s (nothing is checked after the switch)\n",
		    d->upgrade[i]);
}

static int
explain(const struct policy *p, struct explain_req *r)
{
	struct policy_request q = {&r->host, r->port, r->tls, NULL, NULL, NULL};
	struct policy_decision tunnel, d;

	/* The tunnel decision tells whether requests would be intercepted. */
	policy_decide(p, &q, &tunnel);
	if (r->method != NULL) {
		q.method = r->method;
		q.path = r->path;
		q.upgrade = r->upgrade;
		policy_decide(p, &q, &d);
	} else
		d = tunnel;
	print_decision(r, &d, tunnel.intercept);
	return d.verdict == POLICY_ALLOW ? 0 : 1;
}

/* A broker's configuration decides nothing: its policies do. */
static int
broker_refused(const struct policy *p)
{
	const struct grant_set *g = policy_grants(p);
	const char *const *files;
	size_t n;

	if (g == NULL)
		return 0;
	files = grant_files(g, 0, &n);
	log_warnx("explain: this is a broker configuration (broker blocks); "
	          "explain one of the policies it grants, as in "
	          "pinhole explain -p %s (policy %s)",
	    n > 0 ? files[0] : "FILE", grant_name(g, 0));
	return -1;
}

int
cmd_explain(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"policy", required_argument, NULL, 'p'},
	    {"upgrade", required_argument, NULL, 'u'},
	    {NULL, 0, NULL, 0},
	};
	struct cli_diag_count c = {0, 0, 0, 0};
	const char **pfiles = calloc(argc, sizeof(*pfiles));
	struct explain_req *r = calloc(1, sizeof(*r));
	struct policy *p = NULL;
	size_t np = 0;
	int ch, status = CLI_EXIT_USAGE;

	if (pfiles == NULL || r == NULL)
		fatal("calloc");
	while ((ch = getopt_long(argc, argv, "hp:u:", opts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			explain_usage(stdout);
			status = 0;
			goto out;
		case 'p':
			pfiles[np++] = optarg;
			break;
		case 'u':
			r->upgrade = optarg;
			break;
		default:
			explain_usage(stderr);
			goto out;
		}
	}
	if (np == 0 || argc - optind < 1 || argc - optind > 2) {
		log_warnx("explain: %s",
		    np == 0 ? "no policy given (-p FILE)"
		            : "give one TARGET and at most one METHOD");
		explain_usage(stderr);
		goto out;
	}
	if (parse_request(argv[optind],
	        argc - optind == 2 ? argv[optind + 1] : NULL, r) != 0)
		goto out;
	if (policy_load(pfiles, np, cli_print_diag, &c, &p) != 0 ||
	    broker_refused(p) != 0)
		goto out;
	status = explain(p, r);
out:
	policy_free(p);
	free(r);
	free(pfiles);
	return status;
}
