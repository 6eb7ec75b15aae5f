#!/usr/bin/env bash
# Scenario: credentials that never enter the sandbox.  Inside `pinhole
# run`, real git clones, fetches and pushes over HTTPS to a Git server
# (nginx, git-http-backend, Basic auth) that needs a token no process in
# the sandbox can read; `paths` refuses the other repository (also through
# ".."); the token is nowhere inside.  An HTTPS echo server shows `inject`
# replacing the client's header, once; `placeholder` swaps the stand-in
# only toward its own host.  Refused: a missing or different SNI, a Host
# other than the CONNECT target, an upstream certificate for another name
# or from an unknown CA; a client that does not trust the run CA fails and
# the proxy logs why.
# usage: run_intercept.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls_lib.sh"
ph_begin run_intercept nginx fcgiwrap git curl openssl socat jq
gen_certs >/dev/null || exit 1
gen_other_ca || exit 1
start_git_server || exit 1
gen_host_cert echo.test reg.test other.test ws.test || exit 1
start_echo_server || exit 1
start_echo_server plain || exit 1
start_echo_server wrong || exit 1
WRONG_PORT=$ECHO_LAST_PORT
start_echo_server untrusted || exit 1
UNTRUSTED_PORT=$ECHO_LAST_PORT
W=$T/work
mkdir -p "$W"
# jq_has FILTER FILE: FILTER yields something for some line of FILE.
jq_has() { [ -n "$(jq -c "$1" "$2" 2>/dev/null)" ]; }
# jq_none FILTER FILE: FILTER runs and yields nothing for any line of FILE.
jq_none() { local o; o=$(jq -c "$1" "$2") && [ -z "$o" ]; }

NPM_VALUE=npm_$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$NPM_VALUE" >"$T/npm-token"
chmod 600 "$T/npm-token"
cat >"$T/p.conf" <<EOC
secret gh file $GIT_TOKEN_FILE
secret npm file $T/npm-token
resolve git.test 127.0.0.1
resolve echo.test 127.0.0.1
resolve reg.test 127.0.0.1
resolve other.test 127.0.0.1
resolve misnamed.test 127.0.0.1
resolve ws.test 127.0.0.1
resolve plain.test 127.0.0.1
allow plain.test:$ECHO_HTTP_PORT { private }
allow git.test:$GIT_PORT { private upstream-ca $T/ca.pem
	paths /allowed.git/* inject basic x-access-token gh }
allow echo.test:$ECHO_PORT { private upstream-ca $T/ca.pem inject bearer gh }
allow reg.test:$ECHO_PORT { private upstream-ca $T/ca.pem placeholder NPM_TOKEN npm }
allow other.test:$ECHO_PORT { private upstream-ca $T/ca.pem methods GET }
allow misnamed.test:$WRONG_PORT { private upstream-ca $T/ca.pem methods GET }
allow git.test:$UNTRUSTED_PORT { private upstream-ca $T/ca.pem methods GET }
allow ws.test:$ECHO_PORT { private upstream-ca $T/ca.pem
	paths /allowed/* /upgrade; upgrade echo }
EOC
# Git inside: no credential anywhere, a home in the work directory.
GITENV=(--setenv HOME "$W" --setenv GIT_CONFIG_NOSYSTEM 1
	--setenv GIT_TERMINAL_PROMPT 0)
G="git -c user.name=t -c user.email=t@t"
URL=https://git.test:$GIT_PORT

# --- git clone, fetch, push ---------------------------------------------------
prun -p "$T/p.conf" "${GITENV[@]}" -- sh -c "
	$G clone -q $URL/allowed.git && echo cloned
	cd allowed && echo change >pushed.txt &&
	head -c 3000000 /dev/urandom >big.bin && $G add pushed.txt big.bin &&
	$G commit -qm 'from the sandbox' && $G push -q origin HEAD:main &&
	echo pushed && $G fetch -q && echo fetched"
equal "git: status" "$RC" 0
expect "git clone" "$OUT" '^cloned$'
expect "git push" "$OUT" '^pushed$'
expect "git fetch" "$OUT" '^fetched$'
check "the push reached the server" \
	sh -c "git --git-dir='$T/git/allowed.git' log -1 --format=%s main | grep -q 'from the sandbox'"
check "audit: the token by name" jq_has 'select(.secret == "gh")' "$T/audit.jsonl"
if grep -q -- "$GIT_TOKEN" "$T/audit.jsonl"; then
	bad "audit: the token's value is in the log"
else ok; fi

prun -p "$T/p.conf" "${GITENV[@]}" -- sh -c "
	$G clone -q $URL/other.git 2>&1 || echo refused
	$G clone -q $URL/allowed.git/../other.git other2 2>&1 || echo refused-dotdot"
expect "other repository: refused by paths" "$OUT" '^refused$'
expect "other repository: the reason reaches git" "$OUT" 'remote: path /other\.git/info/refs is not allowed'
expect "allowed.git/../other.git: refused" "$OUT" '^refused-dotdot$'
check "other repository: nothing cloned" test ! -d "$W/other"

# --- the token is nowhere inside ----------------------------------------------
# Everything the sandbox can see is copied out and searched outside, so
# that the token never has to be named inside.
prun -p "$T/p.conf" "${GITENV[@]}" -- sh -c "
	cat /proc/[0-9]*/environ >dump-environ 2>/dev/null
	cat $GIT_TOKEN_FILE >dump-secret-file 2>/dev/null
	tar cf dump-tmp.tar /tmp 2>/dev/null
	$G clone -q $URL/allowed.git again && echo cloned-again"
expect "token check: git works meanwhile" "$OUT" '^cloned-again$'
if grep -r -q -a -- "$GIT_TOKEN" "$W"; then
	bad "the token is inside: $(grep -r -l -a -- "$GIT_TOKEN" "$W")"
else ok; fi
check "the secret file appears empty inside" test ! -s "$W/dump-secret-file"
check "environments were read" test -s "$W/dump-environ"

# --- inject -------------------------------------------------------------------
# What the server got is in its log: the echo of the value is cut.
echo_seen >/dev/null
prun -p "$T/p.conf" -- curl -sS -H 'Authorization: Bearer from-the-client' \
	"https://echo.test:$ECHO_PORT/inject"
SEEN=$(echo_seen)
equal "inject: one Authorization arrives" "$(grep -c '^Authorization:' <<<"$SEEN")" 1
expect "inject: the secret's value" "$SEEN" "^Authorization: Bearer $GIT_TOKEN\$"
refuse "inject: the client's value is gone" "$SEEN" 'from-the-client'
refuse "inject: its echo does not come back" "$OUT" "$GIT_TOKEN"

# --- framing inside the tunnel --------------------------------------------------
# Expect: 100-continue goes through; two pipelined requests are answered
# in order (the echo server closes after each: the second takes a new
# upstream connection).  On reg.test: no credential goes there unless
# the stand-in is used, so the echo is not cut.
head -c 200000 /dev/urandom >"$W/body.bin"
prun -p "$T/p.conf" -- sh -c "
	curl -sS -H 'Expect: 100-continue' --data-binary @body.bin \
		-w 'expect %{http_code}\n' https://reg.test:$ECHO_PORT/upload
	printf 'GET /first HTTP/1.1\r\nHost: reg.test:$ECHO_PORT\r\n\r\nGET /second HTTP/1.1\r\nHost: reg.test:$ECHO_PORT\r\nConnection: close\r\n\r\n' |
		openssl s_client -quiet -proxy 127.0.0.1:3128 -connect reg.test:$ECHO_PORT \
		-servername reg.test -CAfile \$SSL_CERT_FILE 2>/dev/null | grep -a '^GET /'
	printf 'GET /upgrade HTTP/1.1\r\nHost: reg.test:$ECHO_PORT\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nafter-the-switch\n' |
		openssl s_client -quiet -ign_eof -proxy 127.0.0.1:3128 -connect reg.test:$ECHO_PORT \
		-servername reg.test -CAfile \$SSL_CERT_FILE 2>/dev/null | tr -d '\r' | grep -a -e '^HTTP/' -e '^echo:'"
expect "Expect: 100-continue: answered" "$OUT" '^expect 200$'
expect "Upgrade: 101 passed on" "$OUT" '^HTTP/1.1 101 '
expect "Upgrade: then a tunnel both ways" "$OUT" '^echo:after-the-switch$'
expect "Expect: 100-continue: forwarded" "$OUT" '^Expect: 100-continue$'
equal "pipelined: both, in order" "$(grep '^GET /' <<<"$OUT" | grep -v upload | tr '\n' ' ')" \
	"GET /first HTTP/1.1 GET /second HTTP/1.1 "

# --- paths servers read otherwise -------------------------------------------------
# Tomcat, Jetty and Spring drop ';' parameters, then resolve "..": a rule
# for /allowed/* must not pass /allowed/..;/admin; nor overlong UTF-8
# (%C0%AE is '.' to some servers) nor double encoding (%252e).  Real curl,
# --path-as-is so that it sends the path as written.
prun -p "$T/p.conf" -- sh -c '
	for p in "/allowed/..;/admin" "/allowed/%2e%2e;x/admin" \
		"/allowed/%C0%AE%C0%AE/admin" "/allowed/%E0%80%AE%E0%80%AE/admin" \
		"/allowed/%252e%252e/admin" "/allowed/a;v=1/b" "/allowed/caf%C3%A9"; do
		curl -sS --path-as-is -o /dev/null -D h \
			-w "$p %{http_code}\n" "https://ws.test:'"$ECHO_PORT"'$p"
		grep -i "^X-Pinhole-Reason:" h
	done'
expect "..;: refused" "$OUT" '^/allowed/\.\.;/admin 400$'
expect "..;: the reason" "$OUT" "X-Pinhole-Reason: a '\.', '\.\.' or empty path segment with ';' parameters"
expect "%2e%2e;x: refused" "$OUT" '^/allowed/%2e%2e;x/admin 400$'
expect "%C0%AE: refused" "$OUT" '^/allowed/%C0%AE%C0%AE/admin 400$'
expect "%C0%AE: the reason" "$OUT" 'X-Pinhole-Reason: overlong or invalid UTF-8'
expect "%E0%80%AE: refused" "$OUT" '^/allowed/%E0%80%AE%E0%80%AE/admin 400$'
expect "%252e: refused" "$OUT" '^/allowed/%252e%252e/admin 400$'
expect "%252e: the reason" "$OUT" 'X-Pinhole-Reason: double percent-encoding'
expect "';' on a named segment: passes" "$OUT" '^/allowed/a;v=1/b 200$'
expect "UTF-8: passes" "$OUT" '^/allowed/caf%C3%A9 200$'

# --- switching protocols ---------------------------------------------------------
# Nothing is policed after a 101: a rule with paths or methods lets the
# request switch only to a protocol it names ("upgrade echo" on ws.test;
# other.test has "methods GET" and no upgrade).
prun -p "$T/p.conf" -- sh -c "
	for t in 'ws.test echo' 'ws.test websocket' 'other.test echo' 'ws.test echo,h2c'; do
		set -- \$t
		echo \"try \$1 \$2\"
		printf 'GET /upgrade HTTP/1.1\r\nHost: %s:$ECHO_PORT\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\nraw-bytes\n' \$1 \$2 |
			openssl s_client -quiet -ign_eof -proxy 127.0.0.1:3128 -connect \$1:$ECHO_PORT \
			-servername \$1 -CAfile \$SSL_CERT_FILE 2>/dev/null | tr -d '\r' |
			grep -a -e '^HTTP/' -e '^echo:' -e '^X-Pinhole-Reason:' | sed \"s/^/\$1 \$2 /\"
	done"
expect "upgrade named by the rule: 101" "$OUT" '^ws\.test echo HTTP/1\.1 101 '
expect "upgrade named by the rule: raw bytes pass" "$OUT" '^ws\.test echo echo:raw-bytes$'
expect "upgrade not named: 403" "$OUT" '^ws\.test websocket HTTP/1\.1 403 '
expect "upgrade not named: the reason" "$OUT" "^ws\.test websocket X-Pinhole-Reason: upgrade to 'websocket' is not allowed by rule"
expect "methods without upgrade: 403" "$OUT" '^other\.test echo HTTP/1\.1 403 '
expect "one protocol of two not named: 403" "$OUT" '^ws\.test echo,h2c HTTP/1\.1 403 '
refuse "refused upgrades: no raw bytes through" "$OUT" '(websocket|other\.test echo|h2c) echo:'

# --- placeholder --------------------------------------------------------------
echo_seen >/dev/null
prun -p "$T/p.conf" -- sh -c '
	echo "standin=$NPM_TOKEN"
	curl -sS -o /dev/null -H "Authorization: Bearer $NPM_TOKEN" https://reg.test:'"$ECHO_PORT"'/pkg
	curl -sS -o /dev/null -D leak.h -w "leak %{http_code}\n" \
		-H "Authorization: Bearer $NPM_TOKEN" https://other.test:'"$ECHO_PORT"'/x
	cat leak.h
	curl -sS -o /dev/null -w "plain-leak %{http_code}\n" \
		"http://plain.test:'"$ECHO_HTTP_PORT"'/q?t=$NPM_TOKEN"
	curl -sS -o /dev/null -w "plain-clean %{http_code}\n" \
		"http://plain.test:'"$ECHO_HTTP_PORT"'/q"'
standin=$(sed -n 's/^standin=//p' <<<"$OUT")
check "placeholder: the sandbox holds a stand-in" test -n "$standin"
refuse "placeholder: not the value" "$standin" "$NPM_VALUE"
expect "placeholder: same shape" "$standin" '^npm_'
equal "placeholder: same length" "${#standin}" "${#NPM_VALUE}"
expect "placeholder: the bound host gets the value" "$(echo_seen)" "^Authorization: Bearer $NPM_VALUE\$"
expect "placeholder: elsewhere refused" "$OUT" '^leak 403$'
expect "placeholder: over plain HTTP refused" "$OUT" '^plain-leak 403$'
expect "placeholder: plain HTTP without it passes" "$OUT" '^plain-clean 200$'
expect "placeholder: elsewhere, the reason" "$OUT" '^X-Pinhole-Reason: leak attempt: the stand-in for NPM_TOKEN'
check "placeholder: leak attempt logged" jq_has \
	'select(.event == "request" and .decision == "deny" and (.reason | startswith("leak attempt")))' \
	"$T/audit.jsonl"

# --- what is refused ----------------------------------------------------------
prun -p "$T/p.conf" -- sh -c "
	curl -sS -o /dev/null -D host.h -w 'host %{http_code}\n' -H 'Host: other.test' https://echo.test:$ECHO_PORT/
	grep -i '^X-Pinhole-Reason' host.h
	openssl s_client -proxy 127.0.0.1:3128 -connect echo.test:$ECHO_PORT \
		-servername other.test </dev/null >/dev/null 2>&1 && echo sni-other-ok || echo sni-other-refused
	openssl s_client -proxy 127.0.0.1:3128 -connect echo.test:$ECHO_PORT \
		-noservername </dev/null >/dev/null 2>&1 && echo sni-none-ok || echo sni-none-refused
	curl -sS -o /dev/null -D wrong.h -w 'wrong %{http_code}\n' https://misnamed.test:$WRONG_PORT/
	grep -i '^X-Pinhole-Reason' wrong.h
	curl -sS -o /dev/null -D untrusted.h -w 'untrusted %{http_code}\n' https://git.test:$UNTRUSTED_PORT/
	grep -i '^X-Pinhole-Reason' untrusted.h
	curl -sS --cacert /dev/null https://echo.test:$ECHO_PORT/ >/dev/null 2>&1 || echo distrust-failed"
expect "Host other than the CONNECT target: 421" "$OUT" '^host 421$'
expect "Host: the reason" "$OUT" 'X-Pinhole-Reason: the Host field names another host'
expect "SNI of another host: refused" "$OUT" '^sni-other-refused$'
expect "no SNI: refused" "$OUT" '^sni-none-refused$'
expect "upstream certificate for another name: 502" "$OUT" '^wrong 502$'
expect "another name: the reason" "$OUT" 'X-Pinhole-Reason: the certificate of misnamed\.test does not verify'
expect "upstream from an unknown CA: 502" "$OUT" '^untrusted 502$'
expect "unknown CA: the reason" "$OUT" 'X-Pinhole-Reason: the certificate of git\.test does not verify'
expect "a client that does not trust the run CA fails" "$OUT" '^distrust-failed$'
check "SNI refusal logged" jq_has 'select(.error != null and (.error | test("SNI .other\\.test. differs")))' "$T/audit.jsonl"
check "missing SNI logged" jq_has 'select(.error != null and (.error | test("no SNI")))' "$T/audit.jsonl"
check "client distrust logged" jq_has 'select(.error != null and (.error | test("unknown ca|certificate unknown|bad certificate|trust the run CA"; "i")))' "$T/audit.jsonl"

# --- a client that refuses the run CA ---------------------------------------------
# curl told to trust another CA sends the alert "unknown ca": the log says
# so, run's last lines count it, pinhole log lists it apart, not allowed.
cp "$T/other-ca.pem" "$W/other-ca.pem"
RUN_LOG=$T/distrust.jsonl prun -p "$T/p.conf" -- \
	curl -sS -o /dev/null --cacert other-ca.pem "https://echo.test:$ECHO_PORT/"
check "distrust: curl fails" test "$RC" -ne 0
expect "distrust: run says so" "$(last_line "$ERR")" \
	"^pinhole: 1 client refused the run CA \\(echo\\.test:$ECHO_PORT\\): does it trust PINHOLE_CA_FILE\\? see .*distrust\\.jsonl$"
check "distrust: the alert logged" jq_has \
	'select(.event == "end" and .error == "the client does not trust the run CA (alert unknown ca)")' \
	"$T/distrust.jsonl"
LOGOUT=$("$PINHOLE" log "$T/distrust.jsonl")
expect "distrust: pinhole log lists it" "$LOGOUT" \
	"^  1x  echo\\.test:$ECHO_PORT  the client does not trust the run CA \\(alert unknown ca\\)$"
expect "distrust: not counted as allowed" "$LOGOUT" '^  requests   1 \(0 allowed, 0 denied, 1 distrust\)$'
expect "distrust: counted apart" "$LOGOUT" '^  distrust   1 allowed, then the client refused the run CA$'

# --- bad input inside the tunnel -------------------------------------------------
# Each gets its status, and the next good request on a new tunnel works.
prun -p "$T/p.conf" -- sh -c '
	S="openssl s_client -quiet -ign_eof -proxy 127.0.0.1:3128 -connect echo.test:'"$ECHO_PORT"' -servername echo.test -CAfile $SSL_CERT_FILE"
	req() { printf "$@" | $S 2>/dev/null | head -1 | tr -d "\r"; }
	echo "absolute: $(req "GET https://echo.test/abs HTTP/1.1\r\nHost: echo.test\r\n\r\n")"
	echo "connect: $(req "CONNECT echo.test:443 HTTP/1.1\r\nHost: echo.test\r\n\r\n")"
	echo "garbage: $(req "GARBAGE\r\n\r\n")"
	echo "huge: $(req "GET / HTTP/1.1\r\nHost: echo.test\r\nX: %070000d\r\n\r\n" 0)"
	echo "smuggle: $(req "POST / HTTP/1.1\r\nHost: echo.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n")"
	echo "good: $(req "GET /ok HTTP/1.1\r\nHost: echo.test\r\n\r\n")"'
expect "inside: absolute-form refused" "$OUT" '^absolute: HTTP/1.1 400 '
expect "inside: CONNECT refused" "$OUT" '^connect: HTTP/1.1 400 '
expect "inside: garbage refused" "$OUT" '^garbage: HTTP/1.1 400 '
expect "inside: a 70 KB head refused" "$OUT" '^huge: HTTP/1.1 431 '
expect "inside: length and chunked together refused" "$OUT" '^smuggle: HTTP/1.1 400 '
expect "inside: then a good request is served" "$OUT" '^good: HTTP/1.1 200 '

# --- a CA the user pins -------------------------------------------------------
# "ca cert PATH key PATH": leaves come from that CA, whose key file is
# checked like a secret's and hidden from the sandbox, and must lie out of
# its reach.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$T/pinned.key" -out "$T/pinned.pem" -days 1 \
	-subj "/CN=pinned test CA" -addext basicConstraints=critical,CA:TRUE \
	-addext keyUsage=critical,keyCertSign,cRLSign >/dev/null 2>&1
chmod 600 "$T/pinned.key"
cat >"$T/pinned.conf" <<EOC
ca cert $T/pinned.pem key $T/pinned.key
resolve echo.test 127.0.0.1
allow echo.test:$ECHO_PORT { private upstream-ca $T/ca.pem inject bearer gh }
secret gh file $GIT_TOKEN_FILE
EOC
prun -p "$T/pinned.conf" -- sh -c "
	curl -sS -v https://echo.test:$ECHO_PORT/pinned 2>&1 | grep -i 'issuer:'
	wc -c <$T/pinned.key 2>/dev/null || echo unseen"
expect "pinned CA: the leaf is its" "$OUT" 'issuer: CN=pinned test CA'
expect "pinned CA: its key is hidden" "$OUT" '^(0|unseen)$'
cp -p "$T/pinned.key" "$W/pinned.key"
sed "s|key $T/pinned.key|key $W/pinned.key|" "$T/pinned.conf" >"$T/pinned-w.conf"
prun -p "$T/pinned-w.conf" -- true
equal "pinned CA with its key in the work directory: refused" "$RC" 125
expect "pinned CA in the work directory: says why" "$ERR" 'CA key .*pinned\.key.*sandbox may write'
rm -f "$W/pinned.key"
chmod 644 "$T/pinned.key"
prun -p "$T/pinned.conf" -- true
equal "pinned CA with a readable key: refused" "$RC" 125
expect "pinned CA: says why" "$ERR" 'pinned\.key'

# --- the audit log ------------------------------------------------------------
check "audit: every line parses" sh -c "jq -e . '$T/audit.jsonl' >/dev/null"
if grep -q -e "$NPM_VALUE" -e "$GIT_TOKEN" -e "$standin" "$T/audit.jsonl"; then
	bad "audit: a secret value or stand-in is in the log"
else ok; fi
# The secret's name on the decision record too, not only on "end": every
# request an injecting rule allowed names it, and the swapped placeholder's.
INJ='.event == "request" and .decision == "allow" and .method != "CONNECT" and
	((.host == "git.test" and .port == '$GIT_PORT') or
	 (.host == "echo.test" and .port == '$ECHO_PORT'))'
check "audit: injecting rules' requests were logged" jq_has "select($INJ)" "$T/audit.jsonl"
check "audit: every one names the secret" jq_none \
	"select($INJ and .secret != \"gh\")" "$T/audit.jsonl"
check "audit: the swapped placeholder's request names it" jq_has \
	'select(.event == "request" and .host == "reg.test" and .secret == "npm")' \
	"$T/audit.jsonl"

ph_end
