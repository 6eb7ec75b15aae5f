#!/usr/bin/env bash
# capture_raw.sh: raw TCP clients inside `pinhole run` to a non-HTTP
# target (issue 12): a socat server on a loopback port stands in for a
# database (server-first: it greets, then echoes each line, as a psql-like
# client would see a server speak first and answer), allowed by
# `allow db.test:PORT { private }`.  nc (OpenBSD) and socat, with no proxy
# setting, are captured and get the greeting and their echo (both ways);
# nc through the SOCKS5 listener (-X 5 -x 127.0.0.1:1080) too.  Refused
# at once and logged: the allowed name on a port no rule names
# (ECONNREFUSED), a denied name (no such name), a numeric documentation
# address on the allowed port (no rule allows it: reset).  Byte counts in
# the audit log.
# usage: capture_raw.sh PATH-TO-PINHOLE
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/tls_lib.sh"
. "$(dirname "$0")/capture_lib.sh"
ph_begin capture_raw socat nc jq
W=$T/work
mkdir -p "$W"
# The database: a greeting, then every line back.
start_socat db "TCP-LISTEN:@PORT@,bind=127.0.0.1,reuseaddr,fork" \
	"SYSTEM:echo db-hello; exec cat" || exit 1
DB_PORT=$SOCAT_PORT
CLOSED_PORT=$(rand_port) || exit 1
got=$(printf 'select 1\n' | timeout 10 nc -N 127.0.0.1 "$DB_PORT" 2>&1)
equal "fixture: the database greets and echoes, directly" "$got" $'db-hello\nselect 1'
[ "$failed" -eq 0 ] || exit 1
cat >"$T/p.conf" <<EOF
resolve db.test 127.0.0.1
resolve denied.test 127.0.0.1
allow db.test:$DB_PORT { private }
EOF
# ms CMD...: CMD's output and status, then "ms=N" on a line of its own.
cat >"$W/ms.sh" <<'EOF'
t0=$(date +%s%N)
"$@"
rc=$?
echo "rc=$rc ms=$((($(date +%s%N) - t0) / 1000000))"
EOF

cap_run sh -c "
	echo '--- nc'; printf 'select 1\n' | nc -N -w 10 db.test $DB_PORT
	echo '--- socat'; printf 'select 2\n' | socat -t 5 - TCP:db.test:$DB_PORT
	echo '--- socks'; printf 'select 3\n' | nc -N -w 10 -X 5 -x 127.0.0.1:1080 db.test $DB_PORT
	echo '--- closed'; sh ms.sh nc -v -N -w 10 db.test $CLOSED_PORT </dev/null 2>&1
	echo '--- socat-closed'; sh ms.sh socat -T 10 - TCP:db.test:$CLOSED_PORT </dev/null 2>&1
	echo '--- denied'; sh ms.sh nc -v -N -w 10 denied.test $DB_PORT </dev/null 2>&1
	echo '--- numeric'; sh ms.sh nc -v -N -w 10 203.0.113.9 $DB_PORT </dev/null 2>&1
	echo '--- end'"
show_out raw
# section NAME: the lines of OUT between '--- NAME' and the next '---'.
section() { sed -n "/^--- $1\$/,/^---/p" <<<"$OUT" | sed '1d;$d'; }
equal "nc: the greeting and the echo" "$(section nc)" $'db-hello\nselect 1'
equal "socat: the greeting and the echo" "$(section socat)" $'db-hello\nselect 2'
equal "nc through SOCKS5: the greeting and the echo" "$(section socks)" $'db-hello\nselect 3'
# fails_fast NAME TEXT: the section's command failed within CAP_FAST_MS.
fails_fast() {
	local s ms
	s=$(section "$1")
	ms=$(sed -n 's/^rc=[1-9][0-9]* ms=\([0-9]*\)$/\1/p' <<<"$s")
	if [ -n "$ms" ] && [ "$ms" -lt "$CAP_FAST_MS" ]; then ok "$2 ($ms ms)"; else
		bad "$2: $(tr '\n' ' ' <<<"$s")"
	fi
}
fails_fast closed "nc to the allowed name on a port no rule names fails at once"
expect "nc: ... connection refused" "$(section closed)" 'refused'
fails_fast socat-closed "socat to the same fails at once"
expect "socat: ... connection refused" "$(section socat-closed)" 'refused'
fails_fast denied "nc to a denied name fails at once"
expect "nc: ... the name does not exist" "$(section denied)" \
	'Name or service not known|No address associated'
# The sandbox's kernel accepts the connection (every address is local);
# the engine resets it: nc may end with 0.  Nothing from the server.
s=$(section numeric)
ms=$(sed -n 's/^rc=[0-9]* ms=\([0-9]*\)$/\1/p' <<<"$s")
if [ -n "$ms" ] && [ "$ms" -lt "$CAP_FAST_MS" ] && ! grep -q db-hello <<<"$s"; then
	ok "nc to a numeric address no rule allows: ends at once, nothing from the server ($ms ms)"
else
	bad "nc to a numeric address no rule allows: $(tr '\n' ' ' <<<"$s")"
fi

jq_has "audit: the stub answered db.test" \
	'select(.event == "dns" and .host == "db.test" and .answer == "synthetic")'
jq_has "audit: denied.test: NXDOMAIN" \
	'select(.event == "dns" and .host == "denied.test" and .answer == "nxdomain")'
jq_has "audit: a captured tunnel to db.test, bytes both ways" \
	"select(.event == \"end\" and .via == \"capture\" and .host == \"db.test\" and .port == $DB_PORT and .bytes_up > 0 and .bytes_down > 0)"
n=$(jq -c "select(.event == \"request\" and .via == \"capture\" and .host == \"db.test\" and .port == $DB_PORT and .decision == \"allow\")" \
	"$T/audit.jsonl" 2>/dev/null | wc -l)
equal "audit: two captured connections to db.test allowed (nc, socat)" "$n" 2
jq_has "audit: the SOCKS5 tunnel to db.test, bytes both ways" \
	"select(.event == \"end\" and .via == \"socks\" and .host == \"db.test\" and .port == $DB_PORT and .bytes_up > 0 and .bytes_down > 0)"
jq_has "audit: the closed port refused, by name" \
	"select(.via == \"capture\" and .host == \"db.test\" and .port == $CLOSED_PORT and .decision == \"deny\")"
jq_has "audit: the numeric address denied" \
	"select(.via == \"capture\" and .host == \"203.0.113.9\" and .port == $DB_PORT and .decision == \"deny\")"
jq_none "audit: nothing through the explicit proxy" 'select(.via == "proxy")'
ph_end
