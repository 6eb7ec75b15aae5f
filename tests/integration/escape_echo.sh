#!/usr/bin/env bash
# Scenario (issue 9, items 4, 5, 15): real values never come back, and
# stand-ins never leave but where they are swapped.  Inside `pinhole
# run`, curl and git talk to an HTTPS server (tests/escape/echo_server.c
# under socat) that echoes what it receives: as is, chunked in 3-byte
# pieces, in a chunked trailer or chunk extension, after 300 KB of filler
# (close-delimited), Base64,
# percent-encoded, in a response field, a Location, the status line, the
# decoded Basic credentials, and (to a request without one) the heads of
# earlier requests.  Everything the client received is
# searched outside for every form of the real values: none may be there,
# each cut is logged as a leak, and the server did get the values.  A
# placeholder works inside Basic (git clone https://x-access-token:$TOK@,
# curl -u user:$TOK) and in a field a rule lists; TRACE and TRACK are
# refused on injecting rules; a stand-in split across two fields, in a
# field name, percent-encoded in the path, Base64 in a field, in the
# query or an unlisted field of its own host is refused and logged.
# usage: escape_echo.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls_lib.sh"
ph_begin escape_echo nginx fcgiwrap git curl openssl socat jq base64 od
PROBE=$(dirname "$PINHOLE")/probe_echo_server
if [ ! -x "$PROBE" ]; then
	echo "escape_echo: CANNOT RUN: no $PROBE (ph_probe echo_server)" >&2
	exit 77
fi
gen_certs >/dev/null || exit 1
start_git_server || exit 1
gen_host_cert echo.test reg.test other.test || exit 1
start_socat echo-probe \
	"OPENSSL-LISTEN:@PORT@,bind=127.0.0.1,reuseaddr,fork,cert=$T/echo.test.pem,key=$T/echo.test.key,verify=0" \
	"EXEC:$PROBE $T/received.log" || exit 1
PORT=$SOCAT_PORT
W=$T/work
mkdir -p "$W"
jq_count() { jq -c "$1" "$T/audit.jsonl" 2>/dev/null | wc -l; }

NPM_VALUE=npm_$(od -An -tx1 -N18 /dev/urandom | tr -d ' \n')
(umask 077 && printf '%s\n' "$NPM_VALUE" >"$T/npm-token")
common="secret gh file $GIT_TOKEN_FILE
secret npm file $T/npm-token
resolve echo.test 127.0.0.1
resolve reg.test 127.0.0.1
resolve other.test 127.0.0.1
resolve git.test 127.0.0.1
allow echo.test:$PORT { private upstream-ca $T/ca.pem inject bearer gh }
allow other.test:$PORT { private upstream-ca $T/ca.pem methods GET TRACE }
allow git.test:$GIT_PORT { private upstream-ca $T/ca.pem placeholder GIT_TOKEN gh }"
printf '%s\n%s\n' "$common" \
	"allow reg.test:$PORT { private upstream-ca $T/ca.pem placeholder NPM_TOKEN npm }" \
	>"$T/p.conf"
printf '%s\n%s\n' "$common" \
	"allow reg.test:$PORT { private upstream-ca $T/ca.pem placeholder NPM_TOKEN npm header X-Api-Key }" \
	>"$T/p2.conf"

# forms VALUE: the value as is, percent-encoded, its Base64 at the three
# alignments (what any Base64 holding it, "user:VALUE" too, contains),
# and its first 8 bytes (a prefix let through at a buffer boundary).
forms() {
	local v=$1 a enc first last
	printf '%s\n' "$v" "${v:0:8}"
	printf '%s' "$v" | od -An -tx1 | tr -d ' \n' | sed 's/../%&/g' |
		tr a-f A-F
	echo
	for a in 0 1 2; do
		enc=$({ head -c "$a" /dev/zero; printf '%s' "$v"; } | base64 -w0)
		first=$(((8 * a + 5) / 6))
		last=$(((8 * a + 8 * ${#v}) / 6))
		printf '%s\n' "${enc:first:last-first}"
	done
}
{ forms "$GIT_TOKEN"; forms "$NPM_VALUE"; } >"$T/forms"
PATHS="plain chunked trailer chunkext close b64 pct header location status"

# --- item 4: echoes of real values are cut -----------------------------------
: >"$T/received.log"
prun -p "$T/p.conf" -- sh -c '
	mkdir -p got
	for p in '"$PATHS"'; do
		curl -sS -D got/e-$p.h -o got/e-$p.b -w "echo $p %{http_code}\n" \
			https://echo.test:'"$PORT"'/$p 2>got/e-$p.err ||
			echo "echo $p cut"
		curl -sS -D got/r-$p.h -o got/r-$p.b -w "reg $p %{http_code}\n" \
			-H "Authorization: Bearer $NPM_TOKEN" \
			https://reg.test:'"$PORT"'/$p 2>got/r-$p.err ||
			echo "reg $p cut"
	done
	curl -sS -D got/u.h -o got/u.b -u "__token__:$NPM_TOKEN" \
		https://reg.test:'"$PORT"'/basic 2>/dev/null || echo "basic cut"
	curl -sS -o got/q.b -w "basic-quiet %{http_code}\n" \
		"https://__token__:$NPM_TOKEN@reg.test:'"$PORT"'/quiet" 2>&1
	curl -sS -o got/q2.b -w "basic-user %{http_code}\n" \
		-u "$NPM_TOKEN:x" https://reg.test:'"$PORT"'/quiet 2>&1
	curl -sS -o got/q3.b -w "proxy-auth %{http_code}\n" \
		-H "Proxy-Authorization: Basic cHJveHk6c2VjcmV0" \
		https://reg.test:'"$PORT"'/quiet 2>&1
	curl -sS -o got/last.b https://reg.test:'"$PORT"'/last 2>/dev/null ||
		echo "last cut"'
# A close-delimited body cut at the value may look whole to the client
# (its end is the connection's): what it got is searched below, and the
# log says it was cut.
for p in ${PATHS/close/}; do
	for h in echo reg; do
		if grep -qE "^$h $p (cut|502)\$" <<<"$OUT"; then ok; else
			bad "$h /$p: the echo was not cut: $(grep "^$h $p" <<<"$OUT")"
		fi
	done
done
check "something was received (the search below means something)" \
	test -s "$W/got/e-close.b"
expect "the cut after the filler: what went before got through" \
	"$(head -c 100 "$W/got/e-close.b")" '^\.\.\.\.'
if grep -rFa -f "$T/forms" "$W" >"$T/found" 2>&1; then
	bad "a real value (or a form of it) reached the sandbox: $(cut -c1-200 "$T/found" | head -5)"
else ok; fi
expect "the status-line echo is a 502 with a reason" \
	"$(cat "$W/got/e-status.h")" '^X-Pinhole-Reason: leak: the response from echo\.test'
equal "each cut is logged as a leak (with the secret's name)" \
	"$(jq_count 'select(.event == "end" and (.error // "" | test("^leak: .* secret (gh|npm); cut")))')" 22
refuse "the log never holds a value" "$(cat "$T/audit.jsonl")" "$GIT_TOKEN|$NPM_VALUE"
SEEN=$(cat "$T/received.log")
expect "the injecting upstream got the value" "$SEEN" "^Authorization: Bearer $GIT_TOKEN"
expect "the placeholder upstream got the value" "$SEEN" "^Authorization: Bearer $NPM_VALUE"
basic=$(printf '__token__:%s' "$NPM_VALUE" | base64 -w0)
expect "Basic: the stand-in as password is swapped (curl -u)" "$SEEN" \
	"^Authorization: Basic $basic"
expect "Basic: user:token@ in the URL: the request goes" "$OUT" '^basic-quiet 200$'
check "Basic: user:token@ in the URL is swapped (as curl -u: two such heads)" \
	test "$(grep -c "^Authorization: Basic $basic" <<<"$SEEN")" -ge 2
expect "Basic: as the user too" "$SEEN" \
	"^Authorization: Basic $(printf '%s:x' "$NPM_VALUE" | base64 -w0)"
expect "Basic: its echo is cut" "$OUT" '^basic cut$'
expect "an earlier request's value echoed to a request without one: cut" \
	"$OUT" '^last cut$'
expect "Proxy-Authorization: the request goes" "$OUT" '^proxy-auth 200$'
refuse "Proxy-Authorization is never forwarded" "$SEEN" '^Proxy-Authorization'

# --- item 4: git clone with the stand-in in the URL ----------------------------
prun -p "$T/p.conf" --setenv HOME "$W" --setenv GIT_CONFIG_NOSYSTEM 1 \
	--setenv GIT_TERMINAL_PROMPT 0 -- sh -c '
	git clone -q "https://x-access-token:$GIT_TOKEN@git.test:'"$GIT_PORT"'/allowed.git" clone 2>&1 &&
		echo cloned'
expect "git clone https://x-access-token:\$STANDIN@ works" "$OUT" '^cloned$'
check "git clone: the files are there" test -f "$W/clone/README"

# --- item 5: TRACE and TRACK --------------------------------------------------
prun -p "$T/p.conf" -- sh -c '
	for m in TRACE TRACK; do
		curl -sS -X $m -D - -o /dev/null -w "echo $m %{http_code}\n" https://echo.test:'"$PORT"'/t
		curl -sS -X $m -o /dev/null -w "reg $m %{http_code}\n" \
			-H "Authorization: Bearer $NPM_TOKEN" https://reg.test:'"$PORT"'/t
	done
	curl -sS -X TRACE -o /dev/null -w "other TRACE %{http_code}\n" https://other.test:'"$PORT"'/t'
expect "TRACE on an injecting rule: 403" "$OUT" '^echo TRACE 403$'
expect "TRACK on an injecting rule: 403" "$OUT" '^echo TRACK 403$'
expect "TRACE on a placeholder rule: 403" "$OUT" '^reg TRACE 403$'
expect "TRACK on a placeholder rule: 403" "$OUT" '^reg TRACK 403$'
expect "TRACE: the reason" "$OUT" '^X-Pinhole-Reason: TRACE is refused on a rule that injects'
expect "TRACE elsewhere: allowed by its rule" "$OUT" '^other TRACE 200$'
check "TRACE refusals logged" test "$(jq_count \
	'select(.event == "request" and .decision == "deny" and (.reason // "" | test("^TRAC[EK] is refused")))')" -ge 4

# --- item 15: the tripwire's forms ---------------------------------------------
: >"$T/received.log"
n0=$(jq_count 'select(.event == "request" and (.reason // "" | startswith("leak attempt")))')
prun -p "$T/p.conf" -- sh -c '
	O=https://other.test:'"$PORT"'
	R=https://reg.test:'"$PORT"'
	t=$NPM_TOKEN
	h=$((${#t} / 2))
	try() { name=$1; shift; curl -sS -o /dev/null -w "$name %{http_code}\n" "$@"; }
	try split-fields -H "X-A: $(printf %s "$t" | cut -c1-$h)" -H "X-B: $(printf %s "$t" | cut -c$((h + 1))-)" $O/quiet
	try split-name -H "$(printf %s "$t" | cut -c1-$h): $(printf %s "$t" | cut -c$((h + 1))-)" $O/quiet
	try header-name -H "X-$t: 1" $O/quiet
	try lower-name -H "$(printf %s "$t" | tr A-Z a-z): 1" $O/quiet
	try pct-path "$O/a/$(printf %s "$t" | od -An -tx1 | tr -d " \n" | sed "s/../%&/g")"
	try pct2-query "$O/quiet?q=$(printf %s "$t" | od -An -tx1 | tr -d " \n" | sed "s/../%25&/g")"
	try b64-field -H "X-C: $(printf %s "$t" | base64 -w0)" $O/quiet
	try basic-other -u "u:$t" $O/quiet
	try own-query "$R/quiet?token=$t"
	try own-other-field -H "X-Other: $t" $R/quiet
	try own-auth -H "Authorization: token $t" $R/quiet'
for k in split-fields split-name header-name lower-name pct-path pct2-query \
	b64-field basic-other own-query own-other-field; do
	expect "tripwire: $k refused" "$OUT" "^$k 403\$"
done
expect "tripwire: Authorization toward its own host swapped" "$OUT" '^own-auth 200$'
n1=$(jq_count 'select(.event == "request" and (.reason // "" | startswith("leak attempt")))')
equal "tripwire: each refusal logged as a leak attempt" "$((n1 - n0))" 10
refuse "tripwire: nothing reached the server but the swap" \
	"$(grep -v '^Authorization: token' "$T/received.log")" "$NPM_VALUE"

# --- a field the rule lists ---------------------------------------------------
: >"$T/received.log"
prun -p "$T/p2.conf" -- sh -c '
	curl -sS -o /dev/null -w "listed %{http_code}\n" -H "X-Api-Key: $NPM_TOKEN" https://reg.test:'"$PORT"'/quiet
	curl -sS -o got/listed.b -H "X-Api-Key: $NPM_TOKEN" https://reg.test:'"$PORT"'/plain 2>/dev/null ||
		echo "listed-echo cut"
	curl -sS -o /dev/null -w "unlisted %{http_code}\n" -H "X-Other-Key: $NPM_TOKEN" https://reg.test:'"$PORT"'/quiet'
expect "placeholder header X-Api-Key: swapped" "$(cat "$T/received.log")" "^X-Api-Key: $NPM_VALUE"
expect "placeholder header: the request passes" "$OUT" '^listed 200$'
expect "placeholder header: its echo is cut" "$OUT" '^listed-echo cut$'
expect "placeholder header: another field refused" "$OUT" '^unlisted 403$'
if grep -rFa -f "$T/forms" "$W" >"$T/found" 2>&1; then
	bad "a real value reached the sandbox: $(cut -c1-200 "$T/found" | head -5)"
else ok; fi
audit_wellformed audit "$T/audit.jsonl"
ph_end
