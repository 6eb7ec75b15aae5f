#!/usr/bin/env bash
# Scenario: the TLS test servers of tls_lib.sh, checked directly with real
# clients (curl, git) and no pinhole in between: the Git smart-HTTP server
# (Basic auth with the token, clone, push, fetch, protocol v2, /echo-auth),
# the echo server over TLS and plain HTTP (request head as received,
# duplicate fields kept), and the certificates of the untrusted CA and of
# the wrong name, which a verifying client refuses.
# usage: tls_servers.sh PATH-TO-PINHOLE (not used)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls_lib.sh"
ph_begin tls_servers nginx fcgiwrap git curl openssl socat

gen_certs || exit 1
gen_other_ca || exit 1
start_git_server || exit 1
start_echo_server || exit 1
start_echo_server plain || exit 1
start_echo_server untrusted || exit 1
UNTRUSTED_PORT=$ECHO_LAST_PORT
start_echo_server wrong || exit 1
WRONG_PORT=$ECHO_LAST_PORT
git_env

G=git.test:$GIT_PORT
GURL=https://$G
RESOLVE=(--resolve "$G:127.0.0.1")

# tcurl ARGS...: curl trusting the test CA, quiet, bounded; sets CODE (the
# status, 000 when none), CURL_RC and BODY.
tcurl() {
	CODE=$(curl -q -sS --max-time 20 --cacert "$T/ca.pem" -o "$T/tcurl.body" \
		-w '%{http_code}' "$@" 2>"$T/tcurl.err")
	CURL_RC=$?
	BODY=$(tr -d '\0' 2>/dev/null <"$T/tcurl.body")
	rm -f "$T/tcurl.body"
}

# tgit ARGS...: git trusting the test CA, bounded in time; sets RC and OUT
# (stdout and stderr).
tgit() {
	OUT=$(timeout 60 git -c http.sslCAInfo="$T/ca.pem" "$@" 2>&1)
	RC=$?
}

# --- Git over HTTPS: Basic auth ---------------------------------------------
refs='/allowed.git/info/refs?service=git-upload-pack'
tcurl "${RESOLVE[@]}" "$GURL$refs"
equal "info/refs without credentials: status" "$CODE" 401
tcurl "${RESOLVE[@]}" -u "x-access-token:$GIT_TOKEN" "$GURL$refs"
equal "info/refs with the token: status" "$CODE" 200
expect "info/refs with the token: advertisement" "$BODY" '# service=git-upload-pack'
expect "info/refs with the token: main" "$BODY" 'refs/heads/main'
tcurl "${RESOLVE[@]}" -H "$GIT_AUTH_HEADER" "$GURL$refs"
equal "info/refs with GIT_AUTH_HEADER: status" "$CODE" 200
tcurl "${RESOLVE[@]}" -u "x-access-token:${GIT_TOKEN}x" "$GURL$refs"
equal "info/refs with a wrong token: status" "$CODE" 401
tcurl "${RESOLVE[@]}" -u "someone:$GIT_TOKEN" "$GURL$refs"
equal "info/refs with a wrong user: status" "$CODE" 401
tcurl "${RESOLVE[@]}" "$GURL/other.git/info/refs?service=git-upload-pack"
equal "other.git without credentials: status" "$CODE" 401
tcurl "${RESOLVE[@]}" -u "x-access-token:$GIT_TOKEN" \
	"$GURL/other.git/info/refs?service=git-receive-pack"
equal "other.git receive-pack advertisement: status" "$CODE" 200
tcurl "${RESOLVE[@]}" -u "x-access-token:$GIT_TOKEN" "$GURL/nope.git/info/refs?service=git-upload-pack"
equal "a missing repository: status" "$CODE" 404
equal "token file" "$(cat "$GIT_TOKEN_FILE")" "$GIT_TOKEN"
equal "token file mode" "$(stat -c %a "$GIT_TOKEN_FILE")" 600
expect "token: 40 hex digits" "$GIT_TOKEN" '^[0-9a-f]{40}$'

# --- /echo-auth ---------------------------------------------------------------
tcurl "${RESOLVE[@]}" -H 'Authorization: Bearer abc def' "$GURL/echo-auth"
equal "echo-auth: status" "$CODE" 200
equal "echo-auth: the field seen" "$BODY" "Bearer abc def"
tcurl "${RESOLVE[@]}" "$GURL/echo-auth"
equal "echo-auth without the field: status" "$CODE" 200
equal "echo-auth without the field: empty" "$BODY" ""
tcurl "https://127.0.0.1:$GIT_PORT/echo-auth" -u "x-access-token:$GIT_TOKEN"
equal "by IP (SAN 127.0.0.1): status" "$CODE" 200
equal "by IP: Basic credentials seen" "$BODY" "${GIT_AUTH_HEADER#Authorization: }"

# --- git clone, push, fetch -------------------------------------------------
hdr=http.$GURL/.extraHeader
tgit -c "http.curloptResolve=$G:127.0.0.1" -c "$hdr=$GIT_AUTH_HEADER" \
	clone -q "$GURL/allowed.git" "$T/c1"
equal "clone with extraHeader (git.test): status" "$RC" 0
[ "$RC" -eq 0 ] || printf '%s\n' "$OUT" | head -20 | sed 's/^/  | /'
equal "clone: content" "$(cat "$T/c1/README" 2>/dev/null)" "allowed repository"
equal "clone: branch" "$(git -C "$T/c1" symbolic-ref --short HEAD 2>/dev/null)" main

echo "change $$" >>"$T/c1/README"
head -c 3000000 /dev/urandom >"$T/c1/big.bin"	# > http.postBuffer: chunked
git -C "$T/c1" add README big.bin && git -C "$T/c1" commit -q -m "second commit"
tgit -C "$T/c1" -c "http.curloptResolve=$G:127.0.0.1" -c "$hdr=$GIT_AUTH_HEADER" \
	push -q origin main
equal "push (chunked body): status" "$RC" 0
[ "$RC" -eq 0 ] || printf '%s\n' "$OUT" | head -20 | sed 's/^/  | /'
equal "push reached the bare repository" \
	"$(git --git-dir="$T/git/allowed.git" log -1 --format=%s main 2>/dev/null)" \
	"second commit"

url=https://x-access-token:$GIT_TOKEN@127.0.0.1:$GIT_PORT/allowed.git
tgit clone -q "$url" "$T/c2"
equal "clone with the token in the URL (127.0.0.1): status" "$RC" 0
equal "second clone sees the push" "$(git -C "$T/c2" log -1 --format=%s 2>/dev/null)" \
	"second commit"
if cmp -s "$T/c1/big.bin" "$T/c2/big.bin"; then ok; else bad "big file differs after push and clone"; fi
git -C "$T/c2" commit -q --allow-empty -m "third commit" &&
	tgit -C "$T/c2" push -q origin main
equal "push with the token in the URL: status" "$RC" 0
tgit -C "$T/c1" -c "http.curloptResolve=$G:127.0.0.1" -c "$hdr=$GIT_AUTH_HEADER" \
	fetch -q origin
equal "fetch: status" "$RC" 0
equal "fetch brought the third commit" \
	"$(git -C "$T/c1" log -1 --format=%s origin/main 2>/dev/null)" "third commit"

OUT=$(GIT_TRACE_PACKET=1 timeout 60 git -c http.sslCAInfo="$T/ca.pem" \
	-c protocol.version=2 ls-remote "$url" 2>&1)
RC=$?
equal "ls-remote protocol v2: status" "$RC" 0
expect "ls-remote protocol v2: the server speaks v2 (GIT_PROTOCOL passed)" "$OUT" \
	'< version 2'
expect "ls-remote: main" "$OUT" $'\trefs/heads/main$'

tgit clone -q "https://x-access-token:$GIT_TOKEN@127.0.0.1:$GIT_PORT/other.git" "$T/c3"
equal "clone of other.git: status" "$RC" 0
equal "other.git content" "$(cat "$T/c3/README" 2>/dev/null)" "other repository"

tgit clone -q "https://x-access-token:${GIT_TOKEN}0@127.0.0.1:$GIT_PORT/allowed.git" "$T/c4"
if [ "$RC" -ne 0 ]; then ok; else bad "clone with a wrong token succeeded"; fi
expect "clone with a wrong token: refused" "$OUT" 'Authentication failed|401'
tgit clone -q "https://127.0.0.1:$GIT_PORT/allowed.git" "$T/c5"
if [ "$RC" -ne 0 ]; then ok; else bad "clone without credentials succeeded"; fi
expect "clone without credentials: no prompt" "$OUT" 'terminal prompts disabled|Authentication failed|401'
tgit -C "$T/c3" push -q "https://x-access-token:${GIT_TOKEN}0@127.0.0.1:$GIT_PORT/other.git" main
if [ "$RC" -ne 0 ]; then ok; else bad "push with a wrong token succeeded"; fi

# --- the echo server ----------------------------------------------------------
tcurl --resolve "echo.test:$ECHO_PORT:127.0.0.1" -H 'Authorization: Bearer one' \
	-H 'Authorization: Bearer two' -H 'X-Dup: a' -H 'X-Dup: b' \
	"https://echo.test:$ECHO_PORT/some/path?q=1"
equal "echo TLS: status" "$CODE" 200
equal "echo TLS: request line" "$(head -1 <<<"$BODY")" "GET /some/path?q=1 HTTP/1.1"
expect "echo TLS: Host" "$BODY" "^Host: echo\.test:$ECHO_PORT\$"
equal "echo TLS: both Authorization lines, in order" \
	"$(grep '^Authorization:' <<<"$BODY")" $'Authorization: Bearer one\nAuthorization: Bearer two'
equal "echo TLS: duplicates of another field" "$(grep -c '^X-Dup:' <<<"$BODY")" 2
refuse "echo TLS: no CR" "$BODY" $'\r'
tcurl --resolve "echo.test:$ECHO_PORT:127.0.0.1" -d 'posted body' \
	-H 'Authorization: Basic eDp5' "https://echo.test:$ECHO_PORT/post"
equal "echo TLS POST: status" "$CODE" 200
expect "echo TLS POST: request line" "$BODY" '^POST /post HTTP/1\.1$'
expect "echo TLS POST: Content-Length field" "$BODY" '^Content-Length: 11$'
refuse "echo TLS POST: body not echoed" "$BODY" 'posted body'
# Two requests on one connection: the server closes after the first,
# curl opens another; both answered.
CODE=$(curl -q -sS --max-time 20 --cacert "$T/ca.pem" \
	--resolve "echo.test:$ECHO_PORT:127.0.0.1" -o /dev/null -o /dev/null \
	-w '%{http_code}' "https://echo.test:$ECHO_PORT/1" \
	"https://echo.test:$ECHO_PORT/2" 2>&1)
equal "echo TLS: two requests" "$CODE" 200200

tcurl -H 'Authorization: one' -H 'Authorization: two' -H 'Authorization: one' \
	"http://127.0.0.1:$ECHO_HTTP_PORT/plain"
equal "echo plain: status" "$CODE" 200
equal "echo plain: request line" "$(head -1 <<<"$BODY")" "GET /plain HTTP/1.1"
equal "echo plain: three Authorization lines, in order" \
	"$(grep '^Authorization:' <<<"$BODY")" \
	$'Authorization: one\nAuthorization: two\nAuthorization: one'
# Exactly the head: request line, header lines, nothing else.
head=$(printf 'GET /raw HTTP/1.0\r\nA: 1\r\nb:2\r\nA: 1\r\n\r\n' |
	raw "$T/raw.out" 10 "$ECHO_HTTP_PORT"; tr -d '\r' <"$T/raw.out")
expect "echo plain raw: status line" "$head" '^HTTP/1\.1 200 OK$'
expect "echo plain raw: Content-Length" "$head" '^Content-Length: 32$'
equal "echo plain raw: body" "$(sed '1,/^$/d' <<<"$head")" \
	$'GET /raw HTTP/1.0\nA: 1\nb:2\nA: 1'

# --- certificates a client must refuse ---------------------------------------
tcurl --resolve "git.test:$UNTRUSTED_PORT:127.0.0.1" "https://git.test:$UNTRUSTED_PORT/"
equal "untrusted CA: curl refuses (exit 60)" "$CURL_RC" 60
equal "untrusted CA: no status" "$CODE" 000
CODE=$(curl -q -sS --max-time 20 --cacert "$T/other-ca.pem" \
	--resolve "git.test:$UNTRUSTED_PORT:127.0.0.1" -o /dev/null -w '%{http_code}' \
	"https://git.test:$UNTRUSTED_PORT/" 2>&1)
equal "untrusted CA: fine with the other CA (so the CA is the reason)" "$CODE" 200
tcurl "https://127.0.0.1:$UNTRUSTED_PORT/"
equal "untrusted CA by IP: curl refuses" "$CURL_RC" 60

tcurl --resolve "git.test:$WRONG_PORT:127.0.0.1" "https://git.test:$WRONG_PORT/"
equal "wrong name: curl refuses (exit 60)" "$CURL_RC" 60
expect "wrong name: the reason" "$(cat "$T/tcurl.err")" 'subject name|does not match|no alternative'
tcurl "https://127.0.0.1:$WRONG_PORT/"
equal "wrong name by IP: curl refuses" "$CURL_RC" 60
tcurl --resolve "wrong.test:$WRONG_PORT:127.0.0.1" "https://wrong.test:$WRONG_PORT/"
equal "wrong-name certificate: fine for wrong.test (so the name is the reason)" "$CODE" 200
tgit ls-remote "https://x-access-token:$GIT_TOKEN@127.0.0.1:$WRONG_PORT/allowed.git"
if [ "$RC" -ne 0 ]; then ok; else bad "git accepted the wrong-name certificate"; fi
expect "git refuses the wrong-name certificate" "$OUT" 'SSL|certificate|subject'

# --- the servers' own health --------------------------------------------------
# (401s are logged as [error]: only worse counts.)
refuse "nginx for git: nothing critical" "$(cat "$T/git-nginx/error.log" 2>/dev/null)" '\[(crit|alert|emerg)\]'
if pid_done "$GIT_NGINX_PID"; then bad "nginx for git died"; else ok; fi
if pid_done "$FCGIWRAP_PID"; then bad "fcgiwrap died"; else ok; fi
ph_end
