/*
 * logprint.h: the printers of pinhole log, over a struct logview.
 */
#ifndef PH_LOGPRINT_H
#define PH_LOGPRINT_H

#include <stdio.h>

struct logview;

struct logprint_opts {
	int denied_only; /* print the denied requests only */
	int json; /* one JSON object instead of text */
};

/*
 * Prints the view to F: the denied requests first (policy denials, and
 * allowed requests that the proxy refused with 403, such as a private
 * address), each with the allow line that would permit it where one can,
 * then the names programs looked up themselves through the sandbox's DNS
 * stub and were denied (only when there are some), then the connections
 * that arrived by capture, each with a hint (only when there are some),
 * then a broker's clients and refusals (only when the log holds several
 * clients or a refusal: logview_clients_shown), then the per-host table
 * (each host marked with how its requests arrived when not all through
 * the proxy), then the totals (or a JSON object: "denied", "looked_up"
 * when there are some, "captured" when there are some, "hosts",
 * "totals", "clients" and "refusals" when shown; "via" on hosts and
 * denials when the log says).  Returns 0,
 * or -1 when out of memory or when writing failed.
 */
int
logprint_view(const struct logview *, FILE *f, const struct logprint_opts *);

#endif
