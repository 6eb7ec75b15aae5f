#!/usr/bin/env bash
# capture_python.sh: Python code that opens its sockets itself
# (socket.create_connection, ssl.create_default_context().wrap_socket,
# getaddrinfo through the sandbox's resolv.conf) inside `pinhole run`,
# which honours no proxy variable: captured (issue 12).  It reaches an
# allowed name over HTTPS (intercepted; the default context trusts the run
# CA through SSL_CERT_FILE, as pinhole sets it) and plain HTTP; a denied
# name does not exist (NXDOMAIN from the DNS stub), an allowed name on a
# port no rule names is refused by the sandbox's kernel, both at once and
# both in the audit log (capture_lib.sh's cap_four).  A POST, which the
# rule's `methods GET` does not allow, is answered 403 on the captured
# connection; a connection to a numeric documentation address is decided
# by the address rules (reset, logged).
# usage: capture_python.sh PATH-TO-PINHOLE
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/tls_lib.sh"
. "$(dirname "$0")/capture_lib.sh"
cap_begin capture_python nginx curl openssl jq python3
cap_web_policy
cap_urls
cat >"$W/client.py" <<'EOF'
import errno, socket, ssl, sys, time
from urllib.parse import urlsplit

def get(url, method="GET"):
    u = urlsplit(url)
    s = socket.create_connection((u.hostname, u.port), timeout=10)
    if u.scheme == "https":
        s = ssl.create_default_context().wrap_socket(s, server_hostname=u.hostname)
    s.sendall(("%s %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n"
               "Content-Length: 0\r\n\r\n" % (method, u.path, u.hostname, u.port)).encode())
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = body.decode(errors="replace").strip().splitlines()
    return int(head.split()[1]), lines[0] if lines else ""

def classify(e):
    if isinstance(e, socket.gaierror):
        return {socket.EAI_NONAME: "nxdomain", socket.EAI_AGAIN: "eai_again"}.get(
            e.errno, "other:%s" % e)
    if isinstance(e, ConnectionRefusedError):
        return "refused"
    if isinstance(e, socket.timeout):
        return "timeout"
    if isinstance(e, OSError) and e.errno == errno.ENETUNREACH:
        return "unreach"
    return "other:%s" % str(e).replace(" ", "_")

def case(name, url, method="GET"):
    t0 = time.monotonic()
    try:
        st, body = get(url, method)
        print("%s status=%d body=%s" % (name, st, body), flush=True)
    except Exception as e:
        print("%s error=%s ms=%d" % (name, classify(e), (time.monotonic() - t0) * 1000),
              flush=True)

case("https", sys.argv[1])
case("http", sys.argv[2])
case("denied", sys.argv[3])
case("port", sys.argv[4])
case("post", sys.argv[1], "POST")
# A numeric address the program chose itself: no rule allows it.
t0 = time.monotonic()
try:
    socket.create_connection(("203.0.113.7", int(sys.argv[5])), timeout=10).recv(1)
    print("numeric connected", flush=True)
except Exception as e:
    print("numeric error=%s ms=%d" % (classify(e), (time.monotonic() - t0) * 1000), flush=True)
EOF

cap_run /usr/bin/python3 client.py "${CAP_URLS[@]}" "$S_PORT"
show_out python
cap_four python
expect "python: a POST on the captured HTTPS connection: 403" "$OUT" '^post status=403 '
expect "python: a numeric address no rule allows: reset" "$OUT" \
	'^numeric error=(other:.*reset.*|refused) '
jq_has "python: audit: the numeric address denied, captured" \
	"select(.via == \"capture\" and .host == \"203.0.113.7\" and .decision == \"deny\")"
ph_end
