#!/usr/bin/env bash
# Scenario: the upstream TLS connection of an intercepted request is kept
# for the next client connection (proxy/uppool.c).  An HTTPS origin
# (python3 ssl) numbers its connections and answers with the number:
# client connections in turn are served by one upstream connection per
# event loop (the pool is each loop's; which loop serves a connection is
# the kernel's choice), whether the one before ended with "Connection:
# close" or by closing; a rule
# with another upstream-ca (same host and port, other paths) never gets
# that connection; an origin that closes a kept connection costs no
# request; a reload (SIGHUP) empties the pool; the audit records are the
# same as for a new connection (addr is the address connected to).
# usage: proxy_uppool.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls_lib.sh"
ph_begin proxy_uppool openssl curl jq python3

gen_certs >/dev/null || exit 1
gen_host_cert a.test || exit 1
chmod 600 "$T/pki/ca.key"
cp "$T/ca.pem" "$T/ca-copy.pem" # the same CA under another upstream-ca

# The origin: one line "conn N" per TLS connection accepted; each answer
# is "conn=N"; GET /close answers, then closes the connection as a
# server's keep-alive timeout would (no Connection: close said).
cat >"$T/origin.py" <<'EOF'
import socket, ssl, sys, threading
port, cert, key, log = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
lock, count = threading.Lock(), [0]
def serve(raw):
    try:
        c = ctx.wrap_socket(raw, server_side=True)
    except Exception:
        raw.close()
        return
    with lock:
        count[0] += 1
        n = count[0]
        with open(log, "a") as f:
            f.write("conn %d\n" % n)
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            head, buf = buf.split(b"\r\n\r\n", 1)
            path = head.split(b" ")[1]
            body = b"conn=%d\n" % n
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            if path == b"/close":
                return
    except Exception:
        pass
    finally:
        c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(64)
while True:
    raw, _ = s.accept()
    threading.Thread(target=serve, args=(raw,), daemon=True).start()
EOF
O_PORT=$(rand_port) || exit 1
spawn origin python3 "$T/origin.py" "$O_PORT" "$T/a.test.pem" "$T/a.test.key" "$T/origin.log"
wait_for 10 port_listening "$O_PORT" || { bad "the origin did not start"; cat "$T/origin.err"; exit 1; }
conns() { count_in "$T/origin.log" '^conn '; }

rules() {
	cat <<-EOC
		ca cert $T/ca.pem key $T/pki/ca.key
		resolve a.test 127.0.0.1
		allow a.test:$O_PORT { private  paths /x/* /close  upstream-ca $T/ca.pem }
		allow a.test:$O_PORT { private  paths /y/*  upstream-ca $T/ca-copy.pem }
	EOC
}
rules >"$T/p.conf"
start_proxy uppool "$T/p.conf" || exit 1

# get PATH [CURL-ARGS...]: one client connection, one request; BODY.
get() {
	local p=$1
	shift
	BODY=$(px_curl --cacert "$T/ca.pem" "$@" "https://a.test:$O_PORT$p" 2>"$T/curl.err")
	CURL_RC=$?
}

# The pool is each event loop's (one per CPU by default), and the kernel
# spreads client connections over the loops (SO_REUSEPORT): which loop
# serves a connection is not known.  So the checks are on sets: K = W + 2
# client connections in turn use at most W upstream connections (one per
# loop), so at least two reuse one, whichever loops they land on.
W=$(ls "/proc/$PX_PID/task" | wc -l)
K=$((W + 2))
echo "$PH_NAME: $W event loops, $K client connections per step"
# run NAME PREFIX [CURL-ARGS...]: K client connections, each one request
# PREFIX/N (every other one ending with Connection: close); their
# upstream connections' numbers, sorted and unique, in SEEN; counts
# the requests in NREQ_<x|y>.
NREQ_x=0
NREQ_y=0
run() {
	local name=$1 prefix=$2 i bodies=() failed=0
	shift 2
	for ((i = 0; i < K; i++)); do
		if ((i % 2)); then get "$prefix/$i" "$@"; else
			get "$prefix/$i" -H 'Connection: close' "$@"
		fi
		[ "$CURL_RC" = 0 ] || failed=$((failed + 1))
		bodies+=("${BODY#conn=}")
	done
	equal "$name: every request served" "$failed" 0
	SEEN=$(printf '%s\n' "${bodies[@]}" | sort -n -u | tr '\n' ' ')
	[ "${prefix:1:1}" = x ] && NREQ_x=$((NREQ_x + K)) || NREQ_y=$((NREQ_y + K))
}
# at_most NAME N SET: SET has at most N numbers.
at_most() {
	local n
	n=$(wc -w <<<"$3")
	[ "$n" -le "$2" ] && ok || bad "$1: $n upstream connections ($3), want at most $2"
}
# disjoint NAME SET1 SET2: no number in both.
disjoint() {
	local both
	both=$(comm -12 <(tr ' ' '\n' <<<"$2" | sort) <(tr ' ' '\n' <<<"$3" | sort) | grep . | tr '\n' ' ')
	[ -z "$both" ] && ok || bad "$1: shared upstream connections: $both"
}

# --- K client connections, one upstream connection per loop ---------------------
run "first upstream-ca" /x
X=$SEEN
at_most "first upstream-ca: kept for the next client connection" "$W" "$X"
equal "origin: at most one TLS connection per loop" "$(($(conns) <= W))" 1

# --- another upstream-ca: never the same connection -------------------------
run "other upstream-ca" /y
Y=$SEEN
at_most "other upstream-ca: connections of its own, kept" "$W" "$Y"
disjoint "other upstream-ca: never the first's connections" "$X" "$Y"
# (A kept connection idle for UPPOOL_IDLE_MS, 4 s, goes: on a busy
# machine the step before may take that long, so no check against X.)
run "first upstream-ca again" /x
disjoint "first upstream-ca again: never the other's connections" "$SEEN" "$Y"
at_most "first upstream-ca again: one per loop" "$W" "$SEEN"

# --- an origin that closes a kept connection ---------------------------------
get /close
NREQ_x=$((NREQ_x + 1))
equal "the origin closes after answering" "$CURL_RC" 0
closed=${BODY#conn=}
run "after the origin closed" /x
expect "after the origin closed: never the closed connection" " $SEEN" "^( [0-9]+)* $"
refuse "after the origin closed: never the closed connection" " $SEEN " " $closed "

# --- a reload empties the pool ----------------------------------------------
before=$(conns)
kill -HUP "$PX_PID"
wait_for 10 file_has "$PX_ERR" 'reload: policy reloaded' || bad "no reload"
run "after the reload" /y
first=$(awk '{ print $1 }' <<<"$SEEN")
[ "$first" -gt "$before" ] && ok ||
	bad "after the reload: an upstream connection of before was used ($SEEN; $before before)"
at_most "after the reload: kept again" "$W" "$SEEN"
equal "origin: the connections counted" "$(conns)" "$((before + $(wc -w <<<"$SEEN")))"

# --- the audit records -------------------------------------------------------
stop_proxy uppool
audit_wellformed uppool "$PX_LOG"
n=$(log_query "$PX_LOG" 'select(.event == "end" and .method == "GET") | .addr' | sort | uniq -c)
equal "audit: every end record names the address connected to" \
	"$(awk '{print $2}' <<<"$n")" "\"127.0.0.1:$O_PORT\""
n=$(log_query "$PX_LOG" 'select(.event == "end" and .status == 200 and (.path | startswith("/"))) | .conn' | wc -l)
equal "audit: one end record per request" "$n" "$((NREQ_x + NREQ_y))"
n=$(log_query "$PX_LOG" 'select(.event == "request" and .decision == "allow" and .path != null) | .rule' | sort | uniq -c | awk '{print $1}' | tr '\n' ' ')
equal "audit: the rules that decided (x: $NREQ_x, y: $NREQ_y)" "$n" "$NREQ_x $NREQ_y "
ph_end
