#!/usr/bin/env bash
# Scenario: `pinhole proxy` as a gateway for several clients.  One
# configuration with `broker` blocks maps each client to its own policy:
# alice and bob by proxy login (Proxy-Authorization Basic, checked against
# a secret), a third policy by source address (`from 127.0.0.2/32`).  With
# a pinned CA the clients trust (made here as proxy_gateway.sh does), each
# policy injects its own header and has its own paths; git clone with
# http.proxy=http://alice:PW@... gets alice's injected token; a wrong or
# missing password gets 407 with the Basic challenge, logged with the
# login but never the password; a client from 127.0.0.1 without a login
# is refused; the origin never sees Proxy-Authorization; SIGHUP reloads
# the policies and the passwords.
# usage: proxy_gateway_auth.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls_lib.sh"
ph_begin proxy_gateway_auth nginx fcgiwrap git curl openssl socat jq timeout
gen_certs >/dev/null || exit 1
start_git_server || exit 1
gen_host_cert echo.test || exit 1
start_echo_server || exit 1
start_echo_server plain || exit 1

gen_pin_ca || exit 1

# The passwords (random, so that a grep for them means something) and
# each policy's own injected value.
rnd() { od -An -tx1 -N12 /dev/urandom | tr -d ' \n'; }
PW1=pw1-$(rnd) PW2=pw2-$(rnd) WRONG=wrong-$(rnd)
ALICE_TAG=alice-$(rnd) BOB_TAG=bob-$(rnd) LOCAL_TAG=local-$(rnd)
(
	umask 077
	printf '%s\n' "$PW1" >"$T/alice.pw"
	printf '%s\n' "$PW2" >"$T/bob.pw"
	printf '%s\n' "$ALICE_TAG" >"$T/alice.tag"
	printf '%s\n' "$BOB_TAG" >"$T/bob.tag"
	printf '%s\n' "$LOCAL_TAG" >"$T/local.tag"
)

# policy WHO HEADER: a policy that injects HEADER with $T/WHO.tag's value
# on echo.test under /WHO/ (TLS, intercepted) and on the plain echo
# server; alice's also clones allowed.git with the token.
policy() {
	cat <<EOC
ca cert $T/pin-ca.pem key $T/pin/ca.key
secret tag file $T/$1.tag
resolve git.test 127.0.0.1
resolve echo.test 127.0.0.1
allow echo.test:$ECHO_PORT { private upstream-ca $T/ca.pem
	paths /$1/* inject header $2 tag }
allow echo.test:$ECHO_HTTP_PORT { private }
EOC
	[ "$1" = alice ] && cat <<EOC
secret gh file $GIT_TOKEN_FILE
allow git.test:$GIT_PORT { private upstream-ca $T/ca.pem
	paths /allowed.git/* inject basic x-access-token gh }
EOC
}
policy alice X-Alice >"$T/alice.conf"
policy bob X-Bob >"$T/bob.conf"
policy local X-Local >"$T/local.conf"
cat >"$T/gw.conf" <<EOC
secret alice-pw file $T/alice.pw
secret bob-pw file $T/bob.pw
broker {
	policy alice $T/alice.conf
	login alice alice-pw
}
broker {
	policy bob $T/bob.conf
	login bob bob-pw
}
broker {
	policy local $T/local.conf
	from 127.0.0.2/32
}
EOC

start_proxy gw "$T/gw.conf" || exit 1
echo_seen >/dev/null
https=https://echo.test:$ECHO_PORT
plain=http://echo.test:$ECHO_HTTP_PORT

# --- two logins, two policies ---------------------------------------------------
fetch "$https/alice/x" --cacert "$T/pin-ca.pem" --proxy-user "alice:$PW1"
SEEN=$(echo_seen)
equal "alice: 200" "$CODE" 200
expect "alice: her header injected" "$SEEN" "^X-Alice: $ALICE_TAG\$"
refuse "alice: not bob's" "$SEEN" "X-Bob"
fetch "$https/bob/x" --cacert "$T/pin-ca.pem" --proxy-user "alice:$PW1"
equal "alice: bob's path refused" "$CODE" 403
equal "alice: nothing reached the origin" "$(echo_seen)" ""

fetch "$https/bob/y" --cacert "$T/pin-ca.pem" --proxy-user "bob:$PW2"
SEEN=$(echo_seen)
equal "bob: 200" "$CODE" 200
expect "bob: his header injected" "$SEEN" "^X-Bob: $BOB_TAG\$"
refuse "bob: not alice's" "$SEEN" "X-Alice"
fetch "$https/alice/y" --cacert "$T/pin-ca.pem" --proxy-user "bob:$PW2"
equal "bob: alice's path refused" "$CODE" 403

# Plain HTTP: the login rides on every request; the origin never sees it.
fetch "$plain/p" --proxy-user "alice:$PW1" -H "Proxy-Connection: keep-alive"
SEEN=$(echo_seen)
equal "plain: 200" "$CODE" 200
expect "plain: the request arrived" "$SEEN" '^GET /p HTTP/1\.1$'
refuse "plain: no Proxy-Authorization upstream" "$SEEN" '^[Pp]roxy-[Aa]uthorization'
refuse "plain: no Proxy-Connection upstream" "$SEEN" '^[Pp]roxy-[Cc]onnection'

# --- git with the login in http.proxy ---------------------------------------------
(
	git_env
	export GIT_SSL_CAINFO=$T/pin-ca.pem
	cd "$T" || exit 1
	git -c "http.proxy=http://alice:$PW1@127.0.0.1:$PX_PORT" clone -q \
		"https://git.test:$GIT_PORT/allowed.git" clone-ok >"$T/git.out" 2>&1
	echo "ok=$?" >"$T/git.rc"
	git -c "http.proxy=http://bob:$PW2@127.0.0.1:$PX_PORT" clone -q \
		"https://git.test:$GIT_PORT/allowed.git" clone-bob >>"$T/git.out" 2>&1
	echo "bob=$?" >>"$T/git.rc"
)
expect "git: alice cloned with the injected token" "$(cat "$T/git.rc")" '^ok=0$'
check "git: the commit is there" test -n "$(git -C "$T/clone-ok" log -1 --format=%H 2>/dev/null)"
refuse "git: bob's policy has no git.test" "$(cat "$T/git.rc")" '^bob=0$'

# --- refusals: 407, logged without the password ------------------------------------
fetch "$plain/w" --proxy-user "alice:$WRONG"
equal "wrong password: 407" "$CODE" 407
expect "wrong password: the challenge" "$HEADERS" '^Proxy-Authenticate: Basic realm="pinhole"$'
expect "wrong password: the reason" "$HEADERS" '^X-Pinhole-Reason: proxy authentication failed$'
fetch "$plain/w" --proxy-user "bob:$PW1"
equal "alice's password for bob: 407" "$CODE" 407
C=$(px_curl -o /dev/null -w '%{http_connect}' --cacert "$T/pin-ca.pem" \
	--proxy-user "alice:$WRONG" "$https/alice/w" 2>/dev/null)
equal "wrong password on CONNECT: 407" "$C" 407
fetch "$plain/m"
equal "no login from 127.0.0.1: 407" "$CODE" 407
expect "no login: the reason" "$HEADERS" '^X-Pinhole-Reason: no policy for this client$'
equal "refusals: nothing reached the origin" "$(echo_seen)" ""

# --- by address: 127.0.0.2 ---------------------------------------------------------
fetch "$https/local/z" --cacert "$T/pin-ca.pem" --interface 127.0.0.2
SEEN=$(echo_seen)
equal "127.0.0.2: admitted without a login" "$CODE" 200
expect "127.0.0.2: the local policy's header" "$SEEN" "^X-Local: $LOCAL_TAG\$"
fetch "$https/alice/z" --cacert "$T/pin-ca.pem" --interface 127.0.0.2
equal "127.0.0.2: the local policy's paths" "$CODE" 403

# --- SIGHUP: every policy reloads, and the gateway's passwords ----------------------
PW1B=pw1b-$(rnd)
(umask 077 && printf '%s\n' "$PW1B" >"$T/alice.pw")
sed -i "s|paths /alice/\*|paths /alice/* /alice2/*|" "$T/alice.conf"
kill -HUP "$PX_PID"
wait_for 10 file_has "$PX_ERR" 'gateway: the configuration reloaded'
ok2() {
	fetch "$https/alice2/r" --cacert "$T/pin-ca.pem" --proxy-user "alice:$PW1B"
	[ "$CODE" = 200 ]
}
check "reload: alice's new password and path" wait_for 10 ok2
fetch "$plain/old" --proxy-user "alice:$PW1"
equal "reload: alice's old password refused" "$CODE" 407

# A configuration that names another policy needs a restart: the old stays.
cp "$T/gw.conf" "$T/gw.orig"
printf 'broker {\n\tpolicy extra %s\n\tfrom 127.0.0.3/32\n}\n' "$T/bob.conf" >>"$T/gw.conf"
kill -HUP "$PX_PID"
wait_for 10 file_has "$PX_ERR" 'names other policies, files or an exec secret now: restart'
check "reload: another policy needs a restart" \
	file_has "$PX_ERR" 'the old grants and passwords stay'
fetch "$plain/still" --proxy-user "alice:$PW1B"
equal "reload: the old grants still serve" "$CODE" 200
fetch "$plain/extra" --interface 127.0.0.3
equal "reload: the new block not applied" "$CODE" 407
cp "$T/gw.orig" "$T/gw.conf"
echo_seen >/dev/null

# --- the log ------------------------------------------------------------------------
jq_true() { jq -e -s "$1" "$2" >/dev/null; }
check "audit: a 407 for alice's wrong password, with the login" jq_true \
	'map(select(.status == 407 and .reason == "proxy authentication failed (login alice)")) | length >= 3' "$PX_LOG"
check "audit: a 407 names what was asked" jq_true \
	'map(select(.status == 407 and .method == "CONNECT" and .host == "echo.test" and .port == '"$ECHO_PORT"')) | length >= 1' "$PX_LOG"
check "audit: a 407 for bob" jq_true \
	'map(select(.status == 407 and .reason == "proxy authentication failed (login bob)")) | length == 1' "$PX_LOG"
check "audit: a 407 without a login" jq_true \
	'map(select(.status == 407 and .reason == "no policy for this client")) | length >= 1' "$PX_LOG"
check "audit: alice's injection" jq_true \
	'map(select(.secret == "tag" and (.path // "" | startswith("/alice/")))) | length >= 1' "$PX_LOG"
stop_proxy gw
for f in "$PX_LOG" "$PX_ERR" "$T/git.out" "$T/fetch.err"; do
	for v in "$PW1" "$PW1B" "$PW2" "$WRONG" "$GIT_TOKEN" "$ALICE_TAG" "$BOB_TAG"; do
		if grep -qF -- "$v" "$f" 2>/dev/null; then
			bad "a secret value is in $f"
		else ok; fi
	done
done
ph_end
