#!/usr/bin/env bash
# Scenario: the upstream TLS connection of an intercepted request is kept
# for the next client connection (proxy/uppool.c).  An HTTPS origin
# (python3 ssl) numbers its connections and answers with the number:
# two client connections in turn are served by one upstream connection,
# whether the first ended with "Connection: close" or by closing; a rule
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

# --- two client connections, one upstream connection -------------------------
get /x/1 -H 'Connection: close'
equal "first request" "$BODY" "conn=1"
get /x/2
equal "second client connection: the kept upstream connection" "$BODY" "conn=1"
get /x/3 # the previous client connection ended by closing
equal "third client connection: still the same" "$BODY" "conn=1"
equal "origin: one TLS connection for three client connections" "$(conns)" 1

# --- another upstream-ca: never the same connection -------------------------
get /y/1
equal "other upstream-ca: a connection of its own" "$BODY" "conn=2"
get /y/2
equal "other upstream-ca: its own kept connection" "$BODY" "conn=2"
get /x/4
equal "first upstream-ca: its kept connection" "$BODY" "conn=1"

# --- an origin that closes a kept connection ---------------------------------
get /close
equal "the origin closes after answering" "$BODY" "conn=1"
get /x/5
equal "after the origin closed: no failed request" "$CURL_RC" 0
equal "after the origin closed: a new connection" "$BODY" "conn=3"

# --- a reload empties the pool ----------------------------------------------
get /y/3
equal "before the reload: kept" "$BODY" "conn=2"
kill -HUP "$PX_PID"
wait_for 10 file_has "$PX_ERR" 'reload: policy reloaded' || bad "no reload"
get /y/4
equal "after the reload: a new connection" "$BODY" "conn=4"
get /y/5
equal "after the reload: kept again" "$BODY" "conn=4"
equal "origin: four TLS connections in all" "$(conns)" 4

# --- the audit records -------------------------------------------------------
stop_proxy uppool
audit_wellformed uppool "$PX_LOG"
n=$(log_query "$PX_LOG" 'select(.event == "end" and .method == "GET") | .addr' | sort | uniq -c)
equal "audit: every end record names the address connected to" \
	"$(awk '{print $2}' <<<"$n")" "\"127.0.0.1:$O_PORT\""
n=$(log_query "$PX_LOG" 'select(.event == "end" and .status == 200 and (.path | startswith("/"))) | .conn' | wc -l)
equal "audit: one end record per request" "$n" 11
n=$(log_query "$PX_LOG" 'select(.event == "request" and .decision == "allow" and .path != null) | .rule' | sort | uniq -c | awk '{print $1}' | tr '\n' ' ')
equal "audit: the rules that decided (x: 6, y: 5)" "$n" "6 5 "
ph_end
