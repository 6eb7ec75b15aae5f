#!/usr/bin/env bash
# Scenario: half-close through the proxy.  In a CONNECT tunnel the client
# sends 1 MiB and shuts down its write side; the server (socat) reads to
# EOF, then answers with the digest and closes: the client gets the answer.
# The other way round, the server shuts down first and the client goes on
# sending.  Bytes right behind the CONNECT head are not lost.  A plain-HTTP
# request followed by a half-close is answered.
# usage: proxy_halfclose.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin proxy_halfclose socat sha256sum jq nginx openssl

gen_certs || exit 1
start_nginx || exit 1
head -c $((1024 * 1024)) /dev/urandom >"$T/payload"
want=$(sha256sum <"$T/payload" | cut -d' ' -f1)
size=$(stat -c %s "$T/payload")

# (socat parses quotes and backslashes in its addresses: the servers'
# shell code lives in files.)
# Reads until EOF, then answers with the digest and a last line.
cat >"$T/digest.sh" <<'EOF'
sha256sum | cut -d' ' -f1
echo done
EOF
# Answers first and shuts its sending side, then reads to EOF and writes
# the digest of what it got to a file.
cat >"$T/early.sh" <<EOF
echo early
exec >&-
sha256sum | cut -d' ' -f1 >"$T/early.sha"
EOF
start_socat digest -t 10 "TCP-LISTEN:@PORT@,bind=127.0.0.1,reuseaddr,fork" \
	"EXEC:sh $T/digest.sh" || exit 1
DIGEST_PORT=$SOCAT_PORT
start_socat early -t 10 "TCP-LISTEN:@PORT@,bind=127.0.0.1,reuseaddr,fork" \
	"EXEC:sh $T/early.sh" || exit 1
EARLY_PORT=$SOCAT_PORT

pol=$T/policy.conf
cat >"$pol" <<EOF
resolve half.test 127.0.0.1
allow 127.0.0.1:$DIGEST_PORT,$EARLY_PORT
allow half.test:$DIGEST_PORT { private }
allow web.test:$H_PORT { private }
resolve web.test 127.0.0.1
EOF
start_proxy halfclose "$pol" || exit 1

# through HOST PORT OUT: payload through a CONNECT tunnel (socat's PROXY
# address sends the CONNECT), write side shut at EOF of the payload.
through() {
	timeout 20 socat -t 10 - \
		"PROXY:127.0.0.1:$1:$2,proxyport=$PX_PORT" <"$T/payload" >"$3" 2>"$3.err"
}

through 127.0.0.1 "$DIGEST_PORT" "$T/ans1"
equal "tunnel by address: client exit" "$?" 0
equal "tunnel by address: answer after half-close" "$(cat "$T/ans1")" "$want"$'\n'done
through half.test "$DIGEST_PORT" "$T/ans2"
equal "tunnel by name: client exit" "$?" 0
equal "tunnel by name: answer after half-close" "$(cat "$T/ans2")" "$want"$'\n'done

through 127.0.0.1 "$EARLY_PORT" "$T/ans3"
equal "server closes first: client exit" "$?" 0
equal "server closes first: its answer" "$(cat "$T/ans3")" early
wait_for 10 test -s "$T/early.sha"
equal "server closes first: the client's bytes all arrived" \
	"$(cat "$T/early.sha" 2>/dev/null)" "$want"

# Bytes sent right behind the CONNECT head, in the same write, reach the
# server (a client may send its TLS hello without waiting).
{
	printf 'CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' \
		"$DIGEST_PORT" "$DIGEST_PORT"
	printf 'early bytes\n'
} >"$T/early.req"
timeout 20 socat -t 10 - "TCP:127.0.0.1:$PX_PORT" <"$T/early.req" >"$T/ans5" 2>&1
early_sha=$(printf 'early bytes\n' | sha256sum | cut -d' ' -f1)
text=$(tr -d '\r' <"$T/ans5")
expect "data behind the CONNECT head: 200" "$text" '^HTTP/1\.1 200 '
expect "data behind the CONNECT head: reached the server" "$text" "^$early_sha\$"

# Plain HTTP: the request, then EOF from the client; the answer still comes
# (when the EOF is read, the answer may still wait in the proxy's output:
# it is to be sent, not dropped).
# Timing decides which the proxy sees first: try it ten times.
good=0
for ((i = 0; i < 10; i++)); do
	printf 'GET http://web.test:%s/index.html HTTP/1.1\r\nHost: web.test:%s\r\n\r\n' \
		"$H_PORT" "$H_PORT" |
		timeout 20 socat -t 10 - "TCP:127.0.0.1:$PX_PORT" >"$T/ans4" 2>&1
	text=$(tr -d '\r' <"$T/ans4")
	grep -q '^HTTP/1\.1 200 ' <<<"$text" && grep -q '^hello from nginx$' <<<"$text" &&
		good=$((good + 1))
done
equal "forward then half-close: answers received of 10" "$good" 10

# The log: each tunnel ends cleanly with the byte counts.
wait_for 5 test "$(count_in "$PX_LOG" '"event":"end"')" -ge 14
n=$(log_query "$PX_LOG" 'select(.event == "end" and .method == "CONNECT" and
	.port == '"$DIGEST_PORT"' and .status == 200 and .bytes_up == '"$size"' and
	.bytes_down == 70 and (has("error") | not))' | wc -l)
equal "log: both digest tunnels ended cleanly with their byte counts" "$n" 2
n=$(log_query "$PX_LOG" 'select(.event == "end" and .method == "CONNECT" and
	.port == '"$DIGEST_PORT"' and .bytes_up == 12)' | wc -l)
equal "log: the early bytes are counted" "$n" 1
n=$(log_query "$PX_LOG" 'select(.event == "end" and .method == "CONNECT" and
	.port == '"$EARLY_PORT"' and .bytes_up == '"$size"' and .bytes_down == 6)' | wc -l)
equal "log: the early-close tunnel counted every byte" "$n" 1

stop_proxy halfclose
audit_wellformed halfclose "$PX_LOG"
ph_end
