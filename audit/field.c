/*
 * field.c: the one table of audit record fields.  Changing a field here
 * changes what audit.c writes and what logview.c accepts, together.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "audit/field.h"

#define PORT_MAX 65535
#define STATUS_MAX 999

static const struct field fields[FIELD_N] = {
    [FIELD_TS] = {"ts", FIELD_STRING, 0, "", 0},
    [FIELD_SANDBOX] = {"sandbox", FIELD_STRING, 0, "", 0},
    /* a broker's records: the client whose sandbox made them, from
       SO_PEERCRED (uid, pid) and as it named its command */
    [FIELD_CLIENT_UID] = {"client_uid", FIELD_INTEGER, 0, NULL, UINT32_MAX},
    [FIELD_CLIENT_PID] = {"client_pid", FIELD_INTEGER, 0, NULL, UINT32_MAX},
    [FIELD_CLIENT_CMD] = {"client_cmd", FIELD_STRING, 0, "", 0},
    [FIELD_CONN] = {"conn", FIELD_INTEGER, 0, NULL, LLONG_MAX},
    [FIELD_EVENT] = {"event", FIELD_STRING, FIELD_REQUIRED, "", 0},
    [FIELD_METHOD] = {"method", FIELD_STRING, 0, "", 0},
    /* how the connection arrived: "proxy", "socks" or "capture" */
    [FIELD_VIA] = {"via", FIELD_STRING, 0, "", 8},
    [FIELD_HOST] = {"host", FIELD_STRING, FIELD_CUT, "", FIELD_HOST_MAX},
    [FIELD_PORT] = {"port", FIELD_INTEGER, 0, NULL, PORT_MAX},
    /* a query string or fragment may hold a token: never logged */
    [FIELD_PATH] = {"path", FIELD_STRING, FIELD_CUT, "?#", 0},
    [FIELD_DECISION] = {"decision", FIELD_STRING, 0, "", 0},
    [FIELD_RULE] = {"rule", FIELD_STRING, 0, "", 0},
    /* a "client" record: the policy the client asked the broker for */
    [FIELD_POLICY] = {"policy", FIELD_STRING, 0, "", 0},
    [FIELD_REASON] = {"reason", FIELD_STRING, FIELD_CUT, "", 0},
    [FIELD_ADDR] = {"addr", FIELD_STRING, 0, "", 0},
    /* a "dns" record: what the sandbox asked its stub, and the answer */
    [FIELD_QTYPE] = {"qtype", FIELD_STRING, 0, "", 16},
    [FIELD_ANSWER] = {"answer", FIELD_STRING, 0, "", 16},
    [FIELD_STATUS] = {"status", FIELD_INTEGER, 0, NULL, STATUS_MAX},
    [FIELD_BYTES_UP] = {"bytes_up", FIELD_INTEGER, 0, NULL, LLONG_MAX},
    [FIELD_BYTES_DOWN] = {"bytes_down", FIELD_INTEGER, 0, NULL, LLONG_MAX},
    [FIELD_MS] = {"ms", FIELD_NUMBER, 0, NULL, LLONG_MAX},
    [FIELD_SECRET] = {"secret", FIELD_STRING, 0, "", 0},
    [FIELD_ERROR] = {"error", FIELD_STRING, FIELD_CUT, "", 0},
    [FIELD_COUNT] = {"count", FIELD_INTEGER, 0, NULL, LLONG_MAX},
    /* "count" already says how many requests a summary stands for */
    [FIELD_SUMMARY] = {"summary", FIELD_BOOLEAN, FIELD_UNCHECKED, NULL, 1},
};

const struct field *
field_get(enum field_id id)
{
	return &fields[id];
}

const struct field *
field_find(const char *name)
{
	const struct field *f = NULL;
	size_t i;

	for (i = 0; i < FIELD_N && f == NULL; i++)
		if (strcmp(fields[i].name, name) == 0)
			f = &fields[i];
	return f;
}

const char *
field_type_name(enum field_type t)
{
	static const char *const names[] = {
	    "string", "integer", "number", "boolean"};

	return names[t];
}

int
field_is_distrust(const char *error)
{
	return error != NULL &&
	    (strncmp(error, FIELD_ERR_DISTRUST,
	         sizeof(FIELD_ERR_DISTRUST) - 1) == 0 ||
	        strncmp(error, FIELD_ERR_HANGUP,
	            sizeof(FIELD_ERR_HANGUP) - 1) == 0);
}
