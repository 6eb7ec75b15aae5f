/*
 * logprint.c: the printers of pinhole log -- the text review and the JSON
 * object -- over what logview.c aggregated and advises.  Every string
 * that came from the log goes out through logview_esc_put() or
 * logview_esc_buf() (text) or jansson (JSON).
 */
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "audit/field.h"
#include "audit/logprint.h"
#include "audit/logview.h"

/* --- text output -------------------------------------------------------- */

/* What an entry of the host table counts as denied: as the denials do. */
static uint64_t
denied_of(const uint64_t *n)
{
	return n[LOGVIEW_CLASS_DENIED] + n[LOGVIEW_CLASS_REFUSED];
}

/*
 * Whether the review shows class C apart: allowed and denied always, the
 * classes of what became of an allowed request when the log has any.
 */
static int
shown(const struct logview_totals *t, enum logview_class c)
{
	return c == LOGVIEW_CLASS_ALLOWED || c == LOGVIEW_CLASS_DENIED ||
	    t->n[c] > 0;
}

/* Most first, then by host, port and reason: denials and distrust alike. */
static int
cmp_denial(const void *pa, const void *pb)
{
	const struct logview_entry *a =
	    *(const struct logview_entry *const *)pa;
	const struct logview_entry *b =
	    *(const struct logview_entry *const *)pb;
	int c;

	if (logview_entry_count(a) != logview_entry_count(b))
		return logview_entry_count(a) > logview_entry_count(b) ? -1 : 1;
	if ((c = strcmp(a->host, b->host)) != 0)
		return c;
	if (a->port != b->port)
		return a->port < b->port ? -1 : 1;
	return strcmp(a->reason, b->reason);
}

static int
cmp_host(const void *pa, const void *pb)
{
	const struct logview_entry *a =
	    *(const struct logview_entry *const *)pa;
	const struct logview_entry *b =
	    *(const struct logview_entry *const *)pb;
	int c;

	if (denied_of(a->n) != denied_of(b->n))
		return denied_of(a->n) > denied_of(b->n) ? -1 : 1;
	if (a->requests != b->requests)
		return a->requests > b->requests ? -1 : 1;
	if ((c = strcmp(a->host, b->host)) != 0)
		return c;
	return a->port < b->port ? -1 : a->port > b->port;
}

/* "host:port" for display, escaped. */
static void
label(const struct logview_entry *a, char *buf, size_t n)
{
	char h[4 * FIELD_HOST_MAX + 1];
	size_t o;

	if (a->host == NULL) {
		snprintf(buf, n, "(others)");
		return;
	}
	logview_esc_buf(h, sizeof(h), a->host);
	snprintf(buf, n,
	    strchr(a->host, ':') != NULL ? "[%s]"
	        : a->host[0] == '\0'     ? "(no host)%s"
	                                 : "%s",
	    h);
	o = strlen(buf);
	if (a->port >= 0)
		snprintf(buf + o, n - o, ":%d", a->port);
}

/*
 * " (captured)", " (socks)", " (proxy, captured)": how the requests of an
 * entry arrived, when not all through the explicit proxy; "" when the
 * log does not say (older logs) or when they all did.
 */
static void
vias_text(unsigned vias, char *buf, size_t n)
{
	static const struct {
		unsigned bit;
		const char *word;
	} w[] = {{LOGVIEW_VIA_PROXY, "proxy"}, {LOGVIEW_VIA_SOCKS, "socks"},
	    {LOGVIEW_VIA_CAPTURE, "captured"}};
	size_t i, o;

	buf[0] = '\0';
	if ((vias & ~LOGVIEW_VIA_PROXY) == 0)
		return;
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		if (!(vias & w[i].bit))
			continue;
		o = strlen(buf);
		snprintf(
		    buf + o, n - o, "%s%s", o == 0 ? " (" : ", ", w[i].word);
	}
	o = strlen(buf);
	snprintf(buf + o, n - o, ")");
}

/* label() and how the entry's requests arrived (vias_text). */
static void
label_via(const struct logview_entry *a, char *buf, size_t n)
{
	char v[32];
	size_t o;

	label(a, buf, n);
	vias_text(a->vias, v, sizeof(v));
	o = strlen(buf);
	snprintf(buf + o, n - o, "%s", v);
}

static void
human(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = {"KiB", "MiB", "GiB"};
	double v = (double)n;
	size_t u = 0;

	if (n < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", n);
		return;
	}
	for (v /= 1024; v >= 1024 && u < 2; u++)
		v /= 1024;
	snprintf(buf, len, "%.1f %s", v, units[u]);
}

static int
digits(uint64_t n)
{
	int d = 1;

	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

/* Prints TEXT, if any, under the reason of a denial. */
static void
advice_line(FILE *f, int w, const char *text)
{
	if (text[0] == '\0')
		return;
	fprintf(f, "  %*s   ", w, "");
	logview_esc_put(f, text);
	fputc('\n', f);
}

static void
print_denial(FILE *f, const struct logview_entry *d, int w)
{
	char lab[4 * FIELD_HOST_MAX + 32];
	struct logview_advice a;

	label_via(d, lab, sizeof(lab));
	fprintf(f, "  %*" PRIu64 "x  %s  ", w, logview_entry_count(d), lab);
	if (d->host == NULL)
		fputs("other denials", f);
	else
		logview_esc_put(
		    f, d->reason[0] != '\0' ? d->reason : "(no reason given)");
	fputs(d->reason_cut ? "...\n" : "\n", f);
	logview_advise(d, &a);
	advice_line(f, w, a.allow);
	advice_line(f, w, a.note);
}

static int
print_denied(const struct logview *lv, FILE *f)
{
	const struct logview_entry **v;
	struct logview_totals t;
	size_t i, n = 0;
	uint64_t max = 0;

	logview_totals(lv, &t);
	if ((v = logview_sorted(lv, LOGVIEW_DENIALS, cmp_denial, &n)) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		if (logview_entry_count(v[i]) > max)
			max = logview_entry_count(v[i]);
	/* Denied by the policy and refused by the proxy, as in the totals. */
	if (n == 0)
		fprintf(f, "Denied: none\n");
	else
		fprintf(f, "Denied (%" PRIu64 " request%s):\n", denied_of(t.n),
		    denied_of(t.n) == 1 ? "" : "s");
	for (i = 0; i < n; i++)
		print_denial(f, v[i], digits(max));
	free(v);
	return 0;
}

/* Most denied lookups first, then by name. */
static int
cmp_lookup(const void *pa, const void *pb)
{
	const struct logview_entry *a =
	    *(const struct logview_entry *const *)pa;
	const struct logview_entry *b =
	    *(const struct logview_entry *const *)pb;
	uint64_t na = a->n[LOGVIEW_CLASS_DENIED],
	         nb = b->n[LOGVIEW_CLASS_DENIED];

	if (na != nb)
		return na > nb ? -1 : 1;
	if (a->requests != b->requests)
		return a->requests > b->requests ? -1 : 1;
	return strcmp(a->host, b->host);
}

/* Lookups the stub denied, in the N entries of V; *NX: any NXDOMAIN. */
static uint64_t
lookups_denied(const struct logview_entry **v, size_t n, int *nx)
{
	uint64_t d = 0;
	size_t i;

	*nx = 0;
	for (i = 0; i < n; i++) {
		d += v[i]->n[LOGVIEW_CLASS_DENIED];
		*nx |= (v[i]->answers & LOGVIEW_ANSWER_NXDOMAIN) != 0;
	}
	return d;
}

/* One denied name; NX: the log has NXDOMAIN answers (capture on). */
static void
print_lookup(FILE *f, const struct logview_entry *e, int w, int nx)
{
	char lab[4 * FIELD_HOST_MAX + 32];

	label(e, lab, sizeof(lab));
	fprintf(f, "  %*" PRIu64 "x  %s", w, e->n[LOGVIEW_CLASS_DENIED], lab);
	if (e->host != NULL && (e->answers & LOGVIEW_ANSWER_NXDOMAIN))
		fputs(": the policy names no such host (NXDOMAIN in the "
		      "sandbox)",
		    f);
	else if (e->host != NULL && nx && (e->answers & LOGVIEW_ANSWER_REFUSED))
		fputs(": refused (capture was off)", f);
	fputc('\n', f);
}

/*
 * The names programs looked up themselves, through the sandbox's DNS
 * stub, and were denied: they ignore the proxy variables.  Without
 * capture the stub refuses every name (older logs, --no-capture); with
 * it, a name the policy names gets a synthetic address (not listed
 * here: its connections are) and any other NXDOMAIN.  Nothing when no
 * lookup was denied.
 */
static int
print_lookups(const struct logview *lv, FILE *f)
{
	const struct logview_entry **v;
	size_t i, n = 0;
	uint64_t max = 0, denied;
	int nx;

	if ((v = logview_sorted(lv, LOGVIEW_LOOKUPS, cmp_lookup, &n)) == NULL)
		return -1;
	denied = lookups_denied(v, n, &nx);
	for (i = 0; i < n; i++)
		if (v[i]->n[LOGVIEW_CLASS_DENIED] > max)
			max = v[i]->n[LOGVIEW_CLASS_DENIED];
	if (denied > 0)
		fprintf(f,
		    nx ? "\nLooked up directly and denied (%" PRIu64
		         " name%s; programs that do this ignore "
		         "http_proxy/https_proxy):\n"
		       : "\nLooked up directly and refused (%" PRIu64
		         " name%s; programs that do this ignore "
		         "http_proxy/https_proxy):\n",
		    denied, denied == 1 ? "" : "s");
	for (i = 0; i < n; i++)
		if (v[i]->n[LOGVIEW_CLASS_DENIED] > 0)
			print_lookup(f, v[i], digits(max), nx);
	if (denied > 0)
		fprintf(f, "  %*s   %s\n", digits(max), "",
		    nx ? "to let a program reach a name: allow NAME:PORT (its "
		         "lookups then get an address, its connections are "
		         "captured)"
		       : "allow the name and make the program use the "
		         "proxy: see pinhole(1) ENVIRONMENT");
	free(v);
	return 0;
}

/* Most captured first, then by host and port. */
static int
cmp_captured(const void *pa, const void *pb)
{
	const struct logview_entry *a =
	    *(const struct logview_entry *const *)pa;
	const struct logview_entry *b =
	    *(const struct logview_entry *const *)pb;
	int c;

	if (a->captured != b->captured)
		return a->captured > b->captured ? -1 : 1;
	if ((c = strcmp(a->host, b->host)) != 0)
		return c;
	return a->port < b->port ? -1 : a->port > b->port;
}

/*
 * The hosts reached by capture (programs that ignore the proxy
 * variables), each with what let it through or what would.  Nothing
 * when the log has none (older logs have no "via").
 */
static int
print_captured(const struct logview *lv, FILE *f)
{
	char lab[4 * FIELD_HOST_MAX + 32], ok[LOGVIEW_ADVICE_MAX],
	    no[LOGVIEW_ADVICE_MAX];
	const struct logview_entry **v;
	size_t i, n = 0;
	uint64_t max = 0, total = 0;

	if ((v = logview_sorted(lv, LOGVIEW_CAPTURED, cmp_captured, &n)) ==
	    NULL)
		return -1;
	for (i = 0; i < n; i++) {
		max = v[i]->captured > max ? v[i]->captured : max;
		total += v[i]->captured;
	}
	if (n > 0)
		fprintf(f,
		    "\nCaptured (%" PRIu64 " connection%s from programs that "
		    "ignore the proxy variables):\n",
		    total, total == 1 ? "" : "s");
	for (i = 0; i < n; i++) {
		label(v[i], lab, sizeof(lab));
		fprintf(
		    f, "  %*" PRIu64 "x  %s", digits(max), v[i]->captured, lab);
		if (v[i]->captured_denied > 0)
			fprintf(
			    f, "  (%" PRIu64 " denied)", v[i]->captured_denied);
		fputc('\n', f);
		logview_capture_hint(v[i], ok, no);
		advice_line(f, digits(max), ok);
		advice_line(f, digits(max), no);
	}
	free(v);
	return 0;
}

/*
 * Connections whose client refused the run CA, after the denials: the
 * policy allowed them, yet nothing went through.  Nothing when none.
 */
static int
print_distrust(const struct logview *lv, FILE *f)
{
	char lab[4 * FIELD_HOST_MAX + 32];
	const struct logview_entry **v;
	size_t i, n = 0;
	uint64_t max = 0;

	if ((v = logview_sorted(lv, LOGVIEW_DISTRUST, cmp_denial, &n)) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		if (logview_entry_count(v[i]) > max)
			max = logview_entry_count(v[i]);
	if (n > 0)
		fprintf(f,
		    "\nRefused the run CA (clients that do not trust "
		    "PINHOLE_CA_FILE):\n");
	for (i = 0; i < n; i++) {
		label(v[i], lab, sizeof(lab));
		fprintf(f, "  %*" PRIu64 "x  %s  ", digits(max),
		    logview_entry_count(v[i]), lab);
		if (v[i]->host == NULL)
			fputs("other connections", f);
		else
			logview_esc_put(f, v[i]->reason);
		fputs(v[i]->reason_cut ? "...\n" : "\n", f);
	}
	free(v);
	return 0;
}

static void
print_secrets(FILE *f, const struct logview_entry *h)
{
	size_t i;

	if (h->nsecrets == 0)
		fputc('-', f);
	for (i = 0; i < h->nsecrets; i++) {
		if (i > 0)
			fputc(',', f);
		logview_esc_put(f, h->secrets[i]);
	}
	if (h->more_secrets)
		fputs(",...", f);
}

/* A class's column: as wide as its name, upper case, and at least 6. */
static int
col_width(enum logview_class c)
{
	int n = (int)strlen(logview_class_name(c));

	return n > 6 ? n : 6;
}

static void
print_head(FILE *f, const struct logview_totals *t, int w)
{
	char name[16];
	int c;
	size_t i;

	fprintf(f, "\nHosts:\n  %-*s  %8s", w, "HOST:PORT", "REQUESTS");
	for (c = 0; c < LOGVIEW_CLASS_NCLASSES; c++) {
		if (!shown(t, c))
			continue;
		snprintf(name, sizeof(name), "%s", logview_class_name(c));
		for (i = 0; name[i] != '\0'; i++)
			name[i] = (char)(name[i] - 'a' + 'A');
		fprintf(f, "  %*s", col_width(c), name);
	}
	fprintf(f, "  %10s  %10s  %s\n", "BYTES UP", "BYTES DOWN", "SECRETS");
}

static void
print_host(FILE *f, const struct logview_entry *h,
    const struct logview_totals *t, int w)
{
	char lab[4 * FIELD_HOST_MAX + 32], up[32], down[32];
	int c;

	label_via(h, lab, sizeof(lab));
	human(h->bytes_up, up, sizeof(up));
	human(h->bytes_down, down, sizeof(down));
	fprintf(f, "  %-*s  %8" PRIu64, w, lab, h->requests);
	for (c = 0; c < LOGVIEW_CLASS_NCLASSES; c++)
		if (shown(t, c))
			fprintf(f, "  %*" PRIu64, col_width(c), h->n[c]);
	fprintf(f, "  %10s  %10s  ", up, down);
	print_secrets(f, h);
	fputc('\n', f);
}

static int
print_hosts(const struct logview *lv, FILE *f)
{
	char lab[4 * FIELD_HOST_MAX + 32];
	const struct logview_entry **v;
	struct logview_totals t;
	size_t i, n = 0;
	int w = 9;

	logview_totals(lv, &t);
	if ((v = logview_sorted(lv, LOGVIEW_HOSTS, cmp_host, &n)) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		label_via(v[i], lab, sizeof(lab));
		if (strlen(lab) > (size_t)w)
			w = strlen(lab) > 60 ? 60 : (int)strlen(lab);
	}
	if (n == 0)
		fprintf(f, "\nHosts: none\n");
	else
		print_head(f, &t, w);
	for (i = 0; i < n; i++)
		print_host(f, v[i], &t, w);
	free(v);
	return 0;
}

/*
 * A broker's central log: per client uid, its sandboxes, requests,
 * denials and commands, then the clients the broker refused.  Nothing
 * unless the log holds several clients or a refusal
 * (logview_clients_shown).
 */
static void
print_cmds(FILE *f, const struct logview_client *c)
{
	size_t i;

	if (c->ncmds == 0)
		fputc('-', f);
	for (i = 0; i < c->ncmds; i++) {
		if (i > 0)
			fputc(',', f);
		logview_esc_put(f, c->cmds[i]);
	}
	if (c->more_cmds)
		fputs(",...", f);
}

/* "not granted" when the reason says so, else the reason. */
static const char *
refusal_words(const struct logview_refusal *r)
{
	if (r->reason == NULL)
		return "refused";
	if (strstr(r->reason, LOGVIEW_NOT_GRANTED) != NULL)
		return LOGVIEW_NOT_GRANTED;
	return r->reason;
}

static void
print_refusal(FILE *f, const struct logview_refusal *r, int w)
{
	fprintf(f, "  %*" PRIu64 "x  ", w, r->count);
	if (r->has_uid)
		fprintf(f, "uid %" PRIu32, r->uid);
	else
		fputs("a client", f);
	if (r->policy != NULL) {
		fputs(" asked for policy ", f);
		logview_esc_put(f, r->policy);
	} else
		fputs(" was refused", f);
	fputs(": ", f);
	logview_esc_put(f, refusal_words(r));
	fputc('\n', f);
}

static int
print_refusals(const struct logview *lv, FILE *f)
{
	const struct logview_refusal **v;
	uint64_t others, max = 0;
	size_t i, n = 0;

	if ((v = logview_refusals(lv, &n, &others)) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		max = v[i]->count > max ? v[i]->count : max;
	if (n > 0 || others > 0)
		fprintf(f, "  refused by the broker:\n");
	for (i = 0; i < n; i++)
		print_refusal(f, v[i], digits(max));
	if (others > 0)
		fprintf(f, "  %" PRIu64 "x  other refusals\n", others);
	free(v);
	return 0;
}

static int
print_clients(const struct logview *lv, FILE *f)
{
	const struct logview_client **v;
	uint64_t sandboxes = 0;
	size_t i, n = 0;
	char uid[16];

	if (!logview_clients_shown(lv))
		return 0;
	if ((v = logview_clients(lv, &n)) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		sandboxes += v[i]->sandboxes;
	fprintf(f, "\nClients (%zu uid%s, %" PRIu64 " sandbox%s):\n", n,
	    n == 1 ? "" : "s", sandboxes, sandboxes == 1 ? "" : "es");
	if (n > 0)
		fprintf(f, "  %-10s  %9s  %8s  %8s  %s\n", "UID", "SANDBOXES",
		    "REQUESTS", "DENIED", "COMMANDS");
	for (i = 0; i < n; i++) {
		if (v[i]->others)
			snprintf(uid, sizeof(uid), "(others)");
		else
			snprintf(uid, sizeof(uid), "%" PRIu32, v[i]->uid);
		fprintf(f,
		    "  %-10s  %9" PRIu64 "  %8" PRIu64 "  %8" PRIu64 "  ", uid,
		    v[i]->sandboxes, v[i]->requests, v[i]->denied);
		print_cmds(f, v[i]);
		fputc('\n', f);
	}
	free(v);
	return print_refusals(lv, f);
}

/*
 * "requests N (A allowed, D denied, ...)": every class shown, so that
 * they add up to N; then a line for each class past allowed and denied.
 */
static void
print_classes(FILE *f, const struct logview_totals *t)
{
	int c;

	fprintf(f, "  requests   %" PRIu64 " (", t->requests);
	for (c = 0; c < LOGVIEW_CLASS_NCLASSES; c++)
		if (shown(t, c))
			fprintf(f, "%s%" PRIu64 " %s", c > 0 ? ", " : "",
			    t->n[c], logview_class_name(c));
	fputs(")\n", f);
	for (c = LOGVIEW_CLASS_DENIED + 1; c < LOGVIEW_CLASS_NCLASSES; c++)
		if (t->n[c] > 0)
			fprintf(f, "  %-9s  %" PRIu64 " %s\n",
			    logview_class_name(c), t->n[c],
			    logview_class_words(c));
}

static void
print_totals(const struct logview *lv, FILE *f)
{
	struct logview_totals tt;
	const struct logview_totals *t = &tt;
	char up[32], down[32];

	logview_totals(lv, &tt);

	human(t->bytes_up, up, sizeof(up));
	human(t->bytes_down, down, sizeof(down));
	fprintf(f, "\nTotals:\n  records    %" PRIu64 "\n", t->records);
	print_classes(f, t);
	if (t->lookups > 0)
		fprintf(f,
		    "  lookups    %" PRIu64 " name%s looked up directly (not "
		    "requests)\n",
		    t->lookups, t->lookups == 1 ? "" : "s");
	fprintf(f, "  bytes      %s up, %s down\n", up, down);
	fprintf(f, "  malformed  %" PRIu64 " line%s", t->malformed,
	    t->malformed == 1 ? "" : "s");
	if (t->malformed > 0)
		fprintf(f, " (first at line %" PRIu64 ")", t->first_malformed);
	fputc('\n', f);
	if (t->first_ts != NULL) {
		fputs("  first      ", f);
		logview_esc_put(f, t->first_ts);
		fputs("\n  last       ", f);
		logview_esc_put(f, t->last_ts);
		fputc('\n', f);
	}
	if (t->incomplete > 0)
		fprintf(f, "  1 incomplete line at the end ignored\n");
}

/* --- JSON output -------------------------------------------------------- */

static json_int_t
jint(uint64_t n)
{
	return n > LLONG_MAX ? LLONG_MAX : (json_int_t)n;
}

static json_t *
jport(int port)
{
	return port >= 0 ? json_integer(port) : json_null();
}

static const char *
jhost(const struct logview_entry *a)
{
	return a->host != NULL && a->host[0] != '\0' ? a->host : NULL;
}

/*
 * Adds "KEY": [names of the bits of MASK] to O when MASK has some (older
 * logs say nothing, and their output stays as it was).  NULL: ENOMEM.
 */
static json_t *
json_bits(
    json_t *o, const char *key, unsigned mask, const char *(*name)(unsigned))
{
	json_t *arr;
	unsigned b;

	if (o == NULL || mask == 0)
		return o;
	if ((arr = json_array()) == NULL ||
	    json_object_set_new(o, key, arr) != 0) {
		json_decref(o);
		return NULL;
	}
	for (b = 1; b != 0 && b <= mask; b <<= 1)
		if ((mask & b) &&
		    json_array_append_new(arr, json_string(name(b))) != 0) {
			json_decref(o);
			return NULL;
		}
	return o;
}

static json_t *
json_denial(const struct logview_entry *d)
{
	struct logview_advice a;

	logview_advise(d, &a);
	return json_bits(
	    json_pack("{s:I, s:s?, s:o, s:s?, s:b, s:s?, s:s, s:s?, s:s?}",
	        "count", jint(logview_entry_count(d)), "host", jhost(d), "port",
	        jport(d->port), "reason", d->reason, "reason_cut",
	        d->reason_cut, "rule", d->rule, "kind",
	        logview_kind_name(a.kind), "allow",
	        a.allow[0] != '\0' ? a.allow : NULL, "note",
	        a.note[0] != '\0' ? a.note : NULL),
	    "via", d->vias, logview_via_name);
}

static json_t *
json_distrust(const struct logview_entry *d)
{
	return json_pack("{s:I, s:s?, s:o, s:s?, s:b}", "count",
	    jint(logview_entry_count(d)), "host", jhost(d), "port",
	    jport(d->port), "reason", d->reason, "reason_cut", d->reason_cut);
}

/* Adds every class of N to O by name ("allowed": 3, ...); NULL: ENOMEM. */
static json_t *
json_classes(json_t *o, const uint64_t *n)
{
	int c;

	for (c = 0; o != NULL && c < LOGVIEW_CLASS_NCLASSES; c++)
		if (json_object_set_new(o, logview_class_name(c),
		        json_integer(jint(n[c]))) != 0) {
			json_decref(o);
			o = NULL;
		}
	return o;
}

static json_t *
json_host(const struct logview_entry *h)
{
	json_t *s = json_array();
	size_t i;

	for (i = 0; s != NULL && i < h->nsecrets; i++)
		json_array_append_new(s, json_string(h->secrets[i]));
	return json_bits(
	    json_classes(
	        json_pack("{s:s?, s:o, s:I, s:I, s:I, s:o, s:b}", "host",
	            jhost(h), "port", jport(h->port), "requests",
	            jint(h->requests), "bytes_up", jint(h->bytes_up),
	            "bytes_down", jint(h->bytes_down), "secrets", s, "others",
	            h->host == NULL),
	        h->n),
	    "via", h->vias, logview_via_name);
}

/* An array of list WHICH sorted by CMP, each made by FN; NULL: ENOMEM. */
static json_t *
json_table(const struct logview *lv, enum logview_list which,
    int (*cmp)(const void *, const void *),
    json_t *(*fn)(const struct logview_entry *))
{
	json_t *arr = json_array();
	const struct logview_entry **v;
	size_t i, n = 0;

	if (arr == NULL || (v = logview_sorted(lv, which, cmp, &n)) == NULL) {
		json_decref(arr);
		return NULL;
	}
	for (i = 0; arr != NULL && i < n; i++)
		if (json_array_append_new(arr, fn(v[i])) != 0) {
			json_decref(arr);
			arr = NULL;
		}
	free(v);
	return arr;
}

static json_t *
json_totals(const struct logview *lv)
{
	struct logview_totals t0;
	const struct logview_totals *t = &t0;

	logview_totals(lv, &t0);
	return json_classes(
	    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s?, s:s?}",
	        "records", jint(t->records), "requests", jint(t->requests),
	        "lookups", jint(t->lookups), "bytes_up", jint(t->bytes_up),
	        "bytes_down", jint(t->bytes_down), "malformed",
	        jint(t->malformed), "incomplete", jint(t->incomplete),
	        "first_ts", t->first_ts, "last_ts", t->last_ts),
	    t->n);
}

static uint64_t
lookups_total(const struct logview *lv)
{
	struct logview_totals t;

	logview_totals(lv, &t);
	return t.lookups;
}

/*
 * A looked-up name; "answers" and "denied" when the stub answered it as
 * capture does (a synthetic address, no data, NXDOMAIN): a log without
 * capture refuses every name, and its output stays as it was.
 */
static json_t *
json_lookup(const struct logview_entry *e)
{
	json_t *o = json_pack("{s:I, s:s?, s:b}", "count", jint(e->requests),
	    "name", jhost(e), "others", e->host == NULL);

	if (o == NULL ||
	    (e->answers & ~(LOGVIEW_ANSWER_REFUSED | LOGVIEW_ANSWER_OTHER)) ==
	        0)
		return o;
	if (json_object_set_new(o, "denied",
	        json_integer(jint(e->n[LOGVIEW_CLASS_DENIED]))) != 0) {
		json_decref(o);
		return NULL;
	}
	return json_bits(o, "answers", e->answers, logview_answer_name);
}

static json_t *
json_captured(const struct logview_entry *h)
{
	char ok[LOGVIEW_ADVICE_MAX], no[LOGVIEW_ADVICE_MAX];

	logview_capture_hint(h, ok, no);
	return json_pack("{s:s?, s:o, s:I, s:I, s:b, s:s?, s:s?, s:b}", "host",
	    jhost(h), "port", jport(h->port), "count", jint(h->captured),
	    "denied", jint(h->captured_denied), "udp", h->udp, "hint",
	    ok[0] != '\0' ? ok : NULL, "denied_hint", no[0] != '\0' ? no : NULL,
	    "others", h->host == NULL);
}

/* Whether some request of the log arrived by capture. */
static int
any_captured(const struct logview *lv)
{
	const struct logview_entry **v;
	size_t n = 0;

	if ((v = logview_sorted(lv, LOGVIEW_CAPTURED, cmp_captured, &n)) ==
	    NULL)
		return -1;
	free(v);
	return n > 0;
}

/*
 * Writes a chunk of jansson's output to the FILE DATA.  The output is
 * ASCII (JSON_ENSURE_ASCII: every other character, U+2028 and U+2029
 * among them, as \uXXXX), but jansson leaves DEL raw; DEL can only be
 * inside a string, where \u007F means the same.  So the JSON carries no
 * byte a terminal acts on but the newlines of its layout.
 */
static int
put_json(const char *buf, size_t n, void *data)
{
	FILE *f = data;
	const char *del;
	size_t k;

	while (n > 0) {
		del = memchr(buf, 0x7f, n);
		k = del != NULL ? (size_t)(del - buf) : n;
		if (fwrite(buf, 1, k, f) != k ||
		    (del != NULL && fputs("\\u007F", f) == EOF))
			return -1;
		k += del != NULL;
		buf += k;
		n -= k;
	}
	return 0;
}

static json_t *
json_client(const struct logview_client *c)
{
	json_t *cmds = json_array();
	size_t i;

	for (i = 0; cmds != NULL && i < c->ncmds; i++)
		json_array_append_new(cmds, json_string(c->cmds[i]));
	return json_pack("{s:o, s:b, s:I, s:I, s:I, s:o}", "uid",
	    c->others ? json_null() : json_integer(c->uid), "others", c->others,
	    "sandboxes", jint(c->sandboxes), "requests", jint(c->requests),
	    "denied", jint(c->denied), "commands", cmds);
}

static json_t *
json_refusal(const struct logview_refusal *r)
{
	return json_pack("{s:I, s:o, s:s?, s:s?}", "count", jint(r->count),
	    "uid", r->has_uid ? json_integer(r->uid) : json_null(), "policy",
	    r->policy, "reason", r->reason);
}

/*
 * Adds "clients" and "refusals" to ROOT when the review shows them
 * (logview_clients_shown).  0 or -1.
 */
static int
json_clients(const struct logview *lv, json_t *root)
{
	const struct logview_client **c = NULL;
	const struct logview_refusal **r = NULL;
	json_t *ca = json_array(), *ra = json_array();
	size_t i, nc = 0, nr = 0;
	uint64_t others;
	int ret = -1;

	if (!logview_clients_shown(lv)) {
		ret = 0;
		goto out;
	}
	if (ca == NULL || ra == NULL ||
	    (c = logview_clients(lv, &nc)) == NULL ||
	    (r = logview_refusals(lv, &nr, &others)) == NULL)
		goto out;
	for (i = 0; i < nc; i++)
		if (json_array_append_new(ca, json_client(c[i])) != 0)
			goto out;
	for (i = 0; i < nr; i++)
		if (json_array_append_new(ra, json_refusal(r[i])) != 0)
			goto out;
	if (json_object_set(root, "clients", ca) != 0 ||
	    json_object_set(root, "refusals", ra) != 0)
		goto out;
	ret = 0;
out:
	json_decref(ca);
	json_decref(ra);
	free(c);
	free(r);
	return ret;
}

static int
print_json(const struct logview *lv, FILE *f, const struct logprint_opts *o)
{
	json_t *root;
	int ret = -1, cap;

	root = json_pack("{s:o}", "denied",
	    json_table(lv, LOGVIEW_DENIALS, cmp_denial, json_denial));
	if (root == NULL)
		goto out;
	if (lookups_total(lv) > 0 &&
	    json_object_set_new(root, "looked_up",
	        json_table(lv, LOGVIEW_LOOKUPS, cmp_lookup, json_lookup)) != 0)
		goto out;
	if (!o->denied_only &&
	    ((cap = any_captured(lv)) < 0 ||
	        (cap > 0 &&
	            json_object_set_new(root, "captured",
	                json_table(lv, LOGVIEW_CAPTURED, cmp_captured,
	                    json_captured)) != 0) ||
	        json_object_set_new(root, "distrust",
	            json_table(lv, LOGVIEW_DISTRUST, cmp_denial,
	                json_distrust)) != 0 ||
	        json_object_set_new(root, "hosts",
	            json_table(lv, LOGVIEW_HOSTS, cmp_host, json_host)) != 0 ||
	        json_object_set_new(root, "totals", json_totals(lv)) != 0 ||
	        json_clients(lv, root) != 0))
		goto out;
	if (json_dump_callback(
	        root, put_json, f, JSON_INDENT(2) | JSON_ENSURE_ASCII) != 0)
		goto out;
	fputc('\n', f);
	ret = 0;
out:
	json_decref(root);
	return ret;
}

int
logprint_view(const struct logview *lv, FILE *f, const struct logprint_opts *o)
{
	int ret = -1;

	if (o->json) {
		if (print_json(lv, f, o) != 0)
			goto out;
	} else {
		if (print_denied(lv, f) != 0 || print_distrust(lv, f) != 0 ||
		    print_lookups(lv, f) != 0)
			goto out;
		if (!o->denied_only) {
			/* The denied ones are in Denied already. */
			if (print_captured(lv, f) != 0 ||
			    print_clients(lv, f) != 0 ||
			    print_hosts(lv, f) != 0)
				goto out;
			print_totals(lv, f);
		}
	}
	ret = fflush(f) == 0 && !ferror(f) ? 0 : -1;
out:
	return ret;
}
