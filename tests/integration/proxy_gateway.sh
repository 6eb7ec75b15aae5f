#!/usr/bin/env bash
# Scenario: `pinhole proxy` as a gateway that intercepts.  With a CA the
# clients trust pinned in the policy (`ca cert PATH key PATH`, key 0600),
# curl and git through the proxy get the credential injected (the origin
# sees it, the client never does), `paths` refuses with 403, a git clone
# of the allowed repository works and the other gets 403; the token's
# value is in no log, output or error.  Without a pinned CA such a rule
# answers 501 saying how to get interception; a placeholder rule and a
# CA key others may read are refused at the start, a reload that adds a
# placeholder keeps the old policy.
# usage: proxy_gateway.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls_lib.sh"
ph_begin proxy_gateway nginx fcgiwrap git curl openssl socat jq timeout
gen_certs >/dev/null || exit 1
start_git_server || exit 1
gen_host_cert echo.test || exit 1
start_echo_server || exit 1

# The pinned CA: made here, trusted by the clients below (--cacert,
# GIT_SSL_CAINFO), never by the origins (they use the test CA).
gen_pin_ca || exit 1

# rules: the rules both policies share.
rules() {
	cat <<EOC
secret gh file $GIT_TOKEN_FILE
resolve git.test 127.0.0.1
resolve echo.test 127.0.0.1
allow git.test:$GIT_PORT { private upstream-ca $T/ca.pem
	paths /allowed.git/* inject basic x-access-token gh }
allow echo.test:$ECHO_PORT { private upstream-ca $T/ca.pem
	paths /ok/* inject bearer gh }
EOC
}
{ echo "ca cert $T/pin-ca.pem key $T/pin/ca.key"; rules; } >"$T/gw.conf"
rules >"$T/nopin.conf"

# --- curl: injection and paths ------------------------------------------------
start_proxy gw "$T/gw.conf" || exit 1
GW_PORT=$PX_PORT GW_PID=$PX_PID
echo_seen >/dev/null
fetch "https://echo.test:$ECHO_PORT/ok/hello" --cacert "$T/pin-ca.pem" \
	-H "Authorization: Bearer client-guess"
SEEN=$(echo_seen)
expect "curl: the proxy's CONNECT answer" "$HEADERS" '^HTTP/1\.1 200 Connection established'
expect "curl: the origin got the request" "$SEEN" '^GET /ok/hello HTTP/1\.1$'
expect "curl: the origin got the injected token" "$SEEN" "^Authorization: Bearer $GIT_TOKEN\$"
refuse "curl: the client's own header replaced" "$SEEN" 'client-guess'
refuse "curl: the client never sees the token" "$BODY$HEADERS" "$GIT_TOKEN"
refuse "curl: nor in its errors" "$(cat "$T/fetch.err")" "$GIT_TOKEN"

fetch "https://echo.test:$ECHO_PORT/secret" --cacert "$T/pin-ca.pem"
equal "curl: paths refuse another path" "$CODE" 403
expect "curl: the refusal says why" "$HEADERS" '^X-Pinhole-Reason: '
equal "curl: nothing reached the origin" "$(echo_seen)" ""

fetch "https://echo.test:$ECHO_PORT/ok/hello" --cacert "$T/ca.pem"
check "curl: a client that does not trust the pinned CA fails" \
	test "$CURL_RC" -ne 0

# --- git ----------------------------------------------------------------------
(
	git_env
	export GIT_SSL_CAINFO=$T/pin-ca.pem https_proxy=http://127.0.0.1:$GW_PORT
	cd "$T" || exit 1
	git clone -q "https://git.test:$GIT_PORT/allowed.git" clone-ok \
		>"$T/git-ok.out" 2>&1
	echo "ok=$?" >"$T/git.rc"
	git clone -q "https://git.test:$GIT_PORT/other.git" clone-other \
		>"$T/git-other.out" 2>&1
	echo "other=$?" >>"$T/git.rc"
)
expect "git: the allowed repository cloned" "$(cat "$T/git.rc")" '^ok=0$'
check "git: its commit is there" test -n "$(git -C "$T/clone-ok" log -1 --format=%H 2>/dev/null)"
refuse "git: the other repository refused" "$(cat "$T/git.rc")" '^other=0$'
expect "git: with 403" "$(cat "$T/git-other.out")" '403'
check "git: the token's value nowhere in git's config" \
	sh -c "! grep -rqF -- '$GIT_TOKEN' '$T/clone-ok/.git/config' '$T/home'"

# jq_true FILTER FILE: FILTER over FILE's lines (slurped) yields true.
jq_true() { jq -e -s "$1" "$2" >/dev/null; }
# --- a reload that adds a placeholder: refused, the old policy serves --------
printf 'npm-stand\n' >"$T/npm"
chmod 600 "$T/npm"
{ cat "$T/gw.conf"; echo "secret npm file $T/npm"
	echo "allow reg.test:443 { placeholder NPM_TOKEN npm }"; } >"$T/ph.conf"
cp "$T/gw.conf" "$T/gw.orig"
cp "$T/ph.conf" "$T/gw.conf"
kill -HUP "$GW_PID"
wait_for 10 file_has "$PX_ERR" 'reload: the policy has errors; the old one stays'
expect "reload: the placeholder said" "$(cat "$PX_ERR")" \
	'placeholder NPM_TOKEN \(secret npm\): pinhole proxy has no sandbox'
expect "reload: refused" "$(cat "$PX_ERR")" 'reload: the policy has errors; the old one stays'
cp "$T/gw.orig" "$T/gw.conf"
fetch "https://echo.test:$ECHO_PORT/ok/again" --cacert "$T/pin-ca.pem"
expect "reload: the old policy still injects" "$(echo_seen)" \
	"^Authorization: Bearer $GIT_TOKEN\$"

check "audit: the injection by name" \
	jq_true 'map(select(.secret == "gh")) | length > 0' "$PX_LOG"
check "audit: the refused path" \
	jq_true 'map(select(.status == 403)) | length > 0' "$PX_LOG"
stop_proxy gw
for f in "$PX_LOG" "$PX_ERR" "$T/git-ok.out" "$T/git-other.out"; do
	if grep -qF -- "$GIT_TOKEN" "$f"; then
		bad "the token's value is in $f"
	else ok; fi
done

# --- no pinned CA: 501 and how to get interception ----------------------------
start_proxy nopin "$T/nopin.conf" || exit 1
expect "no pinned CA: said at the start" "$(cat "$PX_ERR")" 'no pinned CA \(ca cert PATH key PATH\)'
C=$(px_curl -o /dev/null -D "$T/nopin.head" -w '%{http_connect}' \
	--cacert "$T/pin-ca.pem" "https://echo.test:$ECHO_PORT/ok/x" 2>/dev/null)
equal "no pinned CA: CONNECT status" "$C" 501
expect "no pinned CA: the reason says how" "$(tr -d '\r' <"$T/nopin.head")" \
	'^X-Pinhole-Reason: .*ca cert PATH key PATH'
equal "no pinned CA: nothing reached the origin" "$(echo_seen)" ""
stop_proxy nopin

# --- refused at the start -----------------------------------------------------
# start_fails NAME POLICY PATTERN: the proxy exits non-zero at once,
# saying PATTERN, with no listener.
start_fails() {
	timeout 20 "$PINHOLE" proxy -p "$2" --listen 127.0.0.1:0 \
		--log "$T/$1.log" >"$T/$1.out" 2>"$T/$1.err"
	RC=$?
	check "$1: refused at the start" test "$RC" -ne 0 -a "$RC" -ne 124
	expect "$1: says why" "$(cat "$T/$1.err")" "$3"
	refuse "$1: never listened" "$(cat "$T/$1.err")" '^pinhole: listening on '
}
start_fails placeholder "$T/ph.conf" 'placeholder NPM_TOKEN \(secret npm\): pinhole proxy has no sandbox'

cp "$T/pin/ca.key" "$T/pin/open.key"
chmod 644 "$T/pin/open.key"
sed "s|key $T/pin/ca.key|key $T/pin/open.key|" "$T/gw.conf" >"$T/open.conf"
start_fails open-key "$T/open.conf" 'open\.key'

for f in "$T"/*.out "$T"/*.err; do
	if grep -qF -- "$GIT_TOKEN" "$f"; then
		bad "the token's value is in $f"
	else ok; fi
done
ph_end
