#!/usr/bin/env bash
# bench_capture.sh: what capture costs against the explicit proxy
# (issue 12), inside `pinhole run`, in one sitting.
#
#   bench/bench_capture.sh [PINHOLE]        # default: build/pinhole
#
# A local nginx (test CA made on the spot, 127.0.0.1 only) serves a tiny
# file over plain HTTP and a BIG_MB (256) MiB file over HTTPS; the policy
# pins web.test to 127.0.0.1 and allows both ports as opaque tunnels.
# Two rows, each figure the median of RUNS (3) runs, each run a `pinhole
# run` of its own, the two rows measured in turn, run by run:
#   capture  the program ignores the proxy variables: it looks web.test
#            up (the DNS stub's synthetic address) and connects to it;
#            the connection is captured
#   proxy    the same program through the explicit proxy: connect to
#            127.0.0.1:3128, CONNECT web.test:PORT, read the 200
# Columns:
#   conn/s c1, c16  new connections per second, 1 and 16 in flight for
#                   SECS (3) s: connect (+ CONNECT), GET the tiny file,
#                   read it to the close (a Python client, threads)
#   MB/s            the big file with curl (--noproxy '*' for capture,
#                   https_proxy for proxy), 10^6 bytes/s
#   first ms        capture: the first getaddrinfo of web.test in a fresh
#                   sandbox (the stub's answer); proxy: connect to 3128,
#                   CONNECT, the 200 (what the proxy path pays instead)
#   ttfb ms         from before that to the first byte of the tiny file's
#                   response, on the first connection of the run
# Before issue 12 is merged the capture row cannot run (the stub refuses
# every name: EAI_AGAIN); the script says so and exits 1.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PH=${1:-$ROOT/build/pinhole}
PH=$(cd "$(dirname "$PH")" && pwd)/$(basename "$PH")
RUNS=${RUNS:-3}
SECS=${SECS:-3}
BIG_MB=${BIG_MB:-256}
# shellcheck source=../tests/integration/lib.sh
. "$ROOT/tests/integration/lib.sh" "$PH"
# shellcheck source=../tests/integration/tls_lib.sh
. "$ROOT/tests/integration/tls_lib.sh"
ph_begin bench_capture nginx curl openssl python3
gen_certs >/dev/null || exit 1
mkdir -p "$T/www" "$T/work"
head -c $((BIG_MB << 20)) /dev/zero >"$T/www/big"
echo small >"$T/www/small"
start_nginx >/dev/null || exit 1
cat >"$T/p.conf" <<EOF
resolve web.test 127.0.0.1
allow web.test:$H_PORT { private }
allow web.test:$S_PORT { private }
EOF
# The sandbox has a fresh /tmp: what runs inside is in the work directory.
cp "$T/ca.pem" "$T/work/ca.pem"
cat >"$T/work/bench.py" <<'EOF'
import socket, sys, threading, time
mode, what, host, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
GET = ("GET /small HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n" % (host, port)).encode()

def fail(msg):
    print("FAILED %s: %s" % (mode, msg), flush=True)
    sys.exit(1)

def lookup():
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4]
    except OSError as e:
        fail("getaddrinfo(%s): %s (does the DNS stub answer? capture needs issue 12)" % (host, e))

def open_conn(addr):
    """A connected socket to host:port, the way MODE goes; its setup time."""
    t0 = time.perf_counter()
    if mode == "capture":
        s = socket.create_connection(addr[:2], timeout=10)
    else:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
        s.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host, port, host, port)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            b = s.recv(4096)
            if not b:
                fail("the proxy closed during CONNECT")
            head += b
        if not head.startswith(b"HTTP/1.1 200") and not head.startswith(b"HTTP/1.0 200"):
            fail("CONNECT: %r" % head.split(b"\r\n")[0])
    return s, time.perf_counter() - t0

def fetch(s):
    """GET /small on S, to the close; the time to its first byte."""
    t0 = time.perf_counter()
    s.sendall(GET)
    first = None
    data = b""
    while True:
        b = s.recv(65536)
        if first is None:
            first = time.perf_counter() - t0
        if not b:
            break
        data += b
    s.close()
    if not data.startswith(b"HTTP/1.1 200"):
        fail("GET: %r" % data[:60])
    return first

if what == "first":
    t0 = time.perf_counter()
    addr = lookup() if mode == "capture" else None
    t_lookup = time.perf_counter() - t0
    s, setup = open_conn(addr)
    fetch(s)
    ttfb = time.perf_counter() - t0
    print("%.3f %.3f" % (1000 * (t_lookup if mode == "capture" else setup), 1000 * ttfb))
else:
    conc, secs = int(sys.argv[5]), float(sys.argv[6])
    addr = lookup() if mode == "capture" else None
    fetch(open_conn(addr)[0])  # warm: the first connection is "first"'s
    done, errors, stop = [0], [], time.perf_counter() + secs
    def worker():
        n = 0
        try:
            while time.perf_counter() < stop:
                fetch(open_conn(addr)[0])
                n += 1
        except BaseException as e:  # fail() too
            errors.append(e)
        done[0] += n
    ts = [threading.Thread(target=worker) for _ in range(conc)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        fail("%d of %d clients failed: %s" % (len(errors), conc, errors[0]))
    print("%.0f" % (done[0] / (time.perf_counter() - t0)))
EOF

# inside ARGS...: ARGS in a fresh `pinhole run`, bounded; its output.
inside() {
	(cd "$T/work" && timeout 120 "$PH" run --log "$T/audit.jsonl" -p "$T/p.conf" -- "$@") \
		</dev/null 2>>"$T/inside.err"
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# one WHAT MODE: one run's figure ("first": two, first ms and ttfb ms).
one() {
	local what=$1 mode=$2 out noproxy=()
	case $what in
	c1 | c16)
		out=$(inside python3 bench.py "$mode" rate web.test "$H_PORT" "${what#c}" "$SECS") ;;
	first)
		out=$(inside python3 bench.py "$mode" first web.test "$H_PORT") ;;
	mbs)
		[ "$mode" = proxy ] || noproxy=(--noproxy '*')
		out=$(inside curl -q -sS --max-time 100 "${noproxy[@]}" --cacert ca.pem \
			-o /dev/null -w '%{speed_download}\n' "https://web.test:$S_PORT/big" 2>&1) ;;
	esac
	case $out in
	'' | FAILED* | *[!0-9.\ ]*)
		echo "bench_capture: $mode $what failed: ${out:-no output}" >&2
		tail -3 "$T/inside.err" | sed 's/^/  | /' >&2
		return 1 ;;
	esac
	[ "$what" != mbs ] || out=$(awk -v b="$out" 'BEGIN { printf "%.0f", b / 1e6 }')
	echo "$out"
}

echo "bench_capture $(date -u +%F) $(uname -sr), uid $(id -u), $RUNS runs each, $SECS s per rate, $BIG_MB MiB"
# The two rows measured in turn, run by run, so that the machine's load
# falls on both alike.
declare -A got
broken=()
for ((r = 0; r < RUNS; r++)); do
	for what in c1 c16 mbs first; do
		for mode in proxy capture; do
			[[ " ${broken[*]} " != *" $mode "* ]] || continue
			if v=$(one "$what" "$mode"); then
				if [ "$what" = first ]; then
					got["$mode first"]+=" ${v%% *}"
					got["$mode ttfb"]+=" ${v#* }"
				else
					got["$mode $what"]+=" $v"
				fi
			else
				broken+=("$mode")
			fi
		done
	done
done
printf '%-8s %10s %10s %8s %10s %9s\n' row 'conn/s c1' 'conn/s c16' 'MB/s' 'first ms' 'ttfb ms'
for mode in proxy capture; do
	if [[ " ${broken[*]} " == *" $mode "* ]]; then
		echo "$mode: cannot run (see above)"
		continue
	fi
	printf '%-8s %10s %10s %8s %10s %9s\n' "$mode" \
		"$(median <<<"${got["$mode c1"]}")" "$(median <<<"${got["$mode c16"]}")" \
		"$(median <<<"${got["$mode mbs"]}")" "$(median <<<"${got["$mode first"]}")" \
		"$(median <<<"${got["$mode ttfb"]}")"
done
[ "${#broken[@]}" -eq 0 ]
