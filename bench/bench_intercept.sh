#!/usr/bin/env bash
# bench_intercept.sh: what the sandbox and an intercepted tunnel cost on
# bulk transfers and on many small requests, for one or more pinhole
# binaries measured in one sitting (to compare a change with its base),
# and against other intercepting proxies and the floor of any.
#
#   bench/bench_intercept.sh [PINHOLE...]    # default: build/pinhole
#
# Each PINHOLE is a binary, optionally followed (in the same argument) by
# words for its `pinhole run`, to compare settings of one binary in one
# sitting: bench/bench_intercept.sh build/pinhole 'build/pinhole
# --workers 1'.
#
# A local nginx serves a 256 MiB file over HTTPS (test CA made on the
# spot, 127.0.0.1 only).  Rows, each the median of RUNS (5) runs:
#   direct        curl on the host, no proxy, no sandbox
#   opaque        pinhole run, the host allowed as a plain CONNECT tunnel
#   intercepted   pinhole run, the host intercepted with `inject bearer`
#                 (TLS terminated and re-made, the token added, and
#                 responses scanned for it)
# for the 256 MiB download (MB/s) and for 200 small requests on one
# connection (requests/s, curl's --parallel-max 1 over a URL list).
# Then the issue-15 rows, with bench/tlsload.c (one thread per
# connection, OpenSSL, certificates not verified) inside the same
# sandbox, through the proxy's CONNECT (127.0.0.1:3128):
#   ka/s     KA_CONC (16) connections x KA_N (200) keep-alive GETs of
#            the small file: requests/s
#   new/s    KA_CONC threads for NEW_SECS (3) s, each a new connection,
#            full handshake, one GET, close: connections/s
#   bulk     one GET of the 256 MiB file: MB/s
# and the same through each of PEERS ("mitmproxy squid srt reftls"; empty
# for none), each an intercepting CONNECT proxy on 127.0.0.1 started once
# for the sitting, tlsload on the host (no sandbox) asking it for
# CONNECT 127.0.0.1:PORT with SNI and Host web.test:
#   mitmproxy  mitmdump -q, its own CA (made in the work directory),
#              upstream verified against the test CA, bodies over 1 MiB
#              streamed, -H "/~q/Authorization/Bearer TOKEN"
#   squid      squid-openssl, ssl-bump (bump all, leaves from the test CA
#              by security_file_certgen, upstream verified against the
#              test CA), request_header_add Authorization, access log on
#   srt        sandbox-runtime's HTTP proxy (npm @anthropic-ai/
#              sandbox-runtime) with its in-process TLS termination
#              (bench/srt_proxy.mjs), Authorization set by its
#              mutateHeaders hook
#   reftls     bench/reftls.c: terminate, re-encrypt, relay; nothing else
#              (no header): the floor of an intercepting relay here
#   pinhole    `pinhole proxy` itself on the host (the first binary,
#              PINHOLE_PROXY_ARGS), the test CA pinned for its leaves,
#              the intercepted row's rule: pinhole as the peers run,
#              without the sandbox (not in the default PEERS)
# Rows are interleaved: run 1 of every row, then run 2, and so on, each
# binary's intercepted row before its opaque one (an opaque row right
# after direct's measured at half its rate with two loops, in every run:
# bench/README.md, "The opaque row after direct").  For
# each row, CPU per request (ka), per connection (new) and per MB (bulk)
# of the proxy (pinhole: the run's engine; a peer: its process and its
# children), of the client (tlsload's own rusage) and of the origin
# (nginx), in microseconds.  Then pinhole's ratios to direct, to reftls
# and to each peer.  A peer that is missing is installed (apt-get:
# mitmproxy, squid-openssl; npm: the package into SRT_CACHE, default a
# directory of the run; SRT_DIR: an installed package directory to use
# instead); one that does not start is left out, said so.
# Nothing leaves the machine.  LOAD_ONLY=1 runs only the tlsload rows.
# RUN_ARGS: words given to `pinhole run` in the sandbox's tlsload rows
# (e.g. "--workers 2"; every binary must take them).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$ROOT/build/pinhole"
RUNS=${RUNS:-5}
KA_CONC=${KA_CONC:-16}
KA_N=${KA_N:-200}
NEW_SECS=${NEW_SECS:-3}
LOAD_ONLY=${LOAD_ONLY:-0}
PEERS=${PEERS-"mitmproxy squid srt reftls"}
RUN_ARGS=${RUN_ARGS:-}
# PERF=DIR: only the intercepted tlsload rows of the first binary, each
# under `perf record -a` (DIR/ka.data, new.data, bulk.data); read them
# with perf report --comm pinhole.  No peers.
PERF=${PERF:-}
PERF_ARGS=${PERF_ARGS:---call-graph dwarf,16384 -F 997}
[ -z "$PERF" ] || PEERS=
# bins: each PINHOLE as shown; binpath: its binary; binargs: its run words
bins=() binpath=() binargs=()
for b in "$@"; do
	read -r b a <<<"$b"
	b=$(cd "$(dirname "$b")" && pwd)/$(basename "$b")
	binpath+=("$b")
	binargs+=("$a")
	bins+=("$b${a:+ $a}")
done
set -- "${binpath[@]}"
PINHOLE=$1
# shellcheck source=../tests/integration/lib.sh
. "$ROOT/tests/integration/lib.sh" "$PINHOLE"
# shellcheck source=../tests/integration/tls_lib.sh
. "$ROOT/tests/integration/tls_lib.sh"
ph_begin bench_intercept nginx curl openssl
# lib.sh's cleanup is written for scripts without errexit: under set -e
# its first kill of a process group already gone ended it, leaving the
# other servers running and $T (256 MiB) behind.
trap 'set +e; ph_cleanup' EXIT
gen_certs >/dev/null
head -c $((256 << 20)) /dev/zero >"$T/www_big"
mkdir -p "$T/www"
mv "$T/www_big" "$T/www/big"
echo small >"$T/www/small"
start_nginx >/dev/null
printf 'TOKEN%s\n' "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
	>"$T/tok"
chmod 600 "$T/tok"
cat >"$T/opaque.conf" <<EOF
resolve web.test 127.0.0.1
allow web.test:$S_PORT { private }
EOF
cat >"$T/icpt.conf" <<EOF
secret tok file $T/tok
resolve web.test 127.0.0.1
allow web.test:$S_PORT { private upstream-ca $T/ca.pem inject bearer tok }
EOF
# The sandbox has a fresh /tmp: what curl reads inside is in its work
# directory.
mkdir -p "$T/work"
cp "$T/ca.pem" "$T/work/ca.pem"
cc -O2 -o "$T/work/tlsload" "$ROOT/bench/tlsload.c" -lssl -lcrypto -lpthread
urls=$T/work/urls
for ((i = 0; i < 200; i++)); do
	echo "url = \"https://web.test:$S_PORT/small\""
	echo "output = /dev/null"
done >"$urls"

# median of the numbers on standard input
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# one KIND I: prints "MB/s req/s" of one run of the I-th PINHOLE
one() {
	local kind=$1 i=$2 pre=() ca=(--cacert "$T/work/ca.pem") big t0 t1
	case $kind in
	direct) pre=(env) ;;
	*)
		# shellcheck disable=SC2206 # binargs are lists of words
		pre=("${binpath[$i]}" run ${binargs[$i]} --log "$T/a.jsonl"
			-p "$T/$kind.conf" --)
		;;
	esac
	# Intercepted, the client trusts the run CA (pinhole's bundle).
	[ "$kind" != icpt ] || ca=()
	big=$(cd "$T/work" && "${pre[@]}" curl -q -sS "${ca[@]}" \
		--resolve "web.test:$S_PORT:127.0.0.1" -o /dev/null \
		-w '%{speed_download}' "https://web.test:$S_PORT/big" </dev/null)
	t0=$(date +%s%N)
	(cd "$T/work" && "${pre[@]}" curl -q -sS "${ca[@]}" \
		--resolve "web.test:$S_PORT:127.0.0.1" -K "$urls" </dev/null)
	t1=$(date +%s%N)
	awk -v b="$big" -v ns=$((t1 - t0)) \
		'BEGIN { printf "%.0f %.0f\n", b / 1e6, 200 / (ns / 1e9) }'
}

# --- CPU accounting -----------------------------------------------------------

# ticks PID...: utime + stime (clock ticks) of each PID and all its
# descendants, summed (threads are in their process's figure).
ticks() {
	local p s sum=0 f kids
	for p in "$@"; do
		s=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		read -ra f <<<"${s##*) }"
		sum=$((sum + f[11] + f[12]))
		kids=$(pgrep -P "$p" | tr '\n' ' ') || true
		# shellcheck disable=SC2086 # a list of pids
		[ -z "$kids" ] || sum=$((sum + $(ticks $kids)))
	done
	echo "$sum"
}

# engine_cpu CMD...: runs CMD (a `pinhole run`) in the background, prints
# its standard output, and then "px=TICKS": the CPU time the run's engine
# (the first child of `run`) had used when last seen,
# sampled every 20 ms while it lives.  The sampling forks nothing (bash's
# own read, and a read that times out on a FIFO nobody writes as the
# pause): the `cut` and `sleep` it forked before, 100 a second, took a
# quarter to a third of the sandbox rows' rate on this VM (2026-12-02,
# bench/README.md), a cost the peer rows, read only before and after,
# never paid.
engine_cpu() {
	local pid eng='' ticks=0 i kids s f nap
	[ -p "$T/nap" ] || mkfifo "$T/nap"
	exec {nap}<>"$T/nap"
	"$@" >"$T/load.out" &
	pid=$!
	for ((i = 0; i < 500; i++)); do
		[ -z "$eng" ] || break
		# The engine is forked first: the first child listed (the
		# sandbox's may not have its name pinhole-init yet).
		kids=''
		read -r kids 2>/dev/null <"/proc/$pid/task/$pid/children" || true
		eng=${kids%% *}
		[ -n "$eng" ] || read -r -t 0.01 -u "$nap" s || true
	done
	while [ -n "$eng" ] && read -r s 2>/dev/null <"/proc/$eng/stat"; do
		read -ra f <<<"${s##*) }"
		ticks=$((f[11] + f[12]))
		read -r -t 0.02 -u "$nap" s || true
	done
	exec {nap}<&-
	wait "$pid"
	echo "$(cat "$T/load.out") px=$ticks"
}

# peer_cpu PID CMD...: runs CMD, prints its standard output and
# "px=TICKS", what PID and its descendants used meanwhile.
peer_cpu() {
	local pid=$1 t0 out
	shift
	t0=$(ticks "$pid")
	out=$("$@")
	echo "$out px=$(($(ticks "$pid") - t0))"
}

# --- peers ----------------------------------------------------------------------

pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo '?'; }
pkg_installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"
}

apt_install() {
	local sudo=
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	echo "bench_intercept: installing $*" >&2
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q \
		--no-install-recommends "$@" </dev/null >&2 || {
		$sudo apt-get update -q </dev/null >&2 &&
			DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y \
				-q --no-install-recommends "$@" </dev/null >&2
	}
}

# srt_package: the sandbox-runtime package directory (SRT_DIR, or
# installed with npm into SRT_CACHE when not there yet).
srt_package() {
	local c=${SRT_CACHE:-$T/srt-cache} d
	if [ -n "${SRT_DIR:-}" ]; then
		echo "$SRT_DIR"
		return
	fi
	d=$c/node_modules/@anthropic-ai/sandbox-runtime
	if [ ! -s "$d/package.json" ]; then
		command -v npm >/dev/null || apt_install npm
		echo "bench_intercept: npm install @anthropic-ai/sandbox-runtime" \
			"into $c" >&2
		mkdir -p "$c"
		npm install --prefix "$c" --no-audit --no-fund --loglevel=error \
			@anthropic-ai/sandbox-runtime </dev/null >&2
	fi
	echo "$d"
}

# listened NAME FILE: the port in FILE's "NAME: listening on
# 127.0.0.1:PORT", once it is there (10 s at most).
listened() {
	wait_for 10 file_has "$2" "^$1: listening on 127\.0\.0\.1:[0-9]+" ||
		return 1
	sed -n "s/^$1: listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p" "$2" |
		head -1
}

# start_PEER: starts the peer with spawn, sets PEER_PORT and PEER_PID,
# and PEER_WHAT (its version and what it was told to do).
start_mitmproxy() {
	command -v mitmdump >/dev/null || apt_install mitmproxy
	mkdir -p "$T/mitm"
	printf 'Bearer %s' "$(cat "$T/tok")" >"$T/mitm/bearer"
	PEER_PORT=$(rand_port)
	spawn mitmproxy mitmdump -q --listen-host 127.0.0.1 \
		--listen-port "$PEER_PORT" --set confdir="$T/mitm" \
		--set ssl_verify_upstream_trusted_ca="$T/ca.pem" \
		--set stream_large_bodies=1m \
		-H "/~q/Authorization/@$T/mitm/bearer"
	PEER_PID=$SPAWNED
	wait_for 30 port_listening "$PEER_PORT"
	PEER_WHAT="mitmproxy $(pkg_version mitmproxy)"
}

start_squid() {
	local d=$T/squid u=proxy
	pkg_installed squid-openssl || apt_install squid-openssl
	mkdir -p "$d"
	cp "$T/ca.pem" "$d/ca.pem"
	cp "$T/pki/ca.key" "$d/ca.key"
	# The bumped requests go where their Host field says: web.test.
	echo "127.0.0.1 localhost web.test" >"$d/hosts"
	/usr/lib/squid/security_file_certgen -c -s "$d/ssl_db" -M 16MB \
		>"$d/certgen.log" 2>&1
	PEER_PORT=$(rand_port)
	cat >"$d/squid.conf" <<EOF
http_port 127.0.0.1:$PEER_PORT ssl-bump generate-host-certificates=on dynamic_cert_mem_cache_size=16MB tls-cert=$d/ca.pem tls-key=$d/ca.key
sslcrtd_program /usr/lib/squid/security_file_certgen -s $d/ssl_db -M 16MB
sslcrtd_children 4 startup=1 idle=1
ssl_bump bump all
tls_outgoing_options cafile=$d/ca.pem
request_header_add Authorization "Bearer $(cat "$T/tok")" all
acl bench_client src 127.0.0.0/8
http_access allow bench_client
http_access deny all
visible_hostname bench
cache deny all
cache_mem 0 MB
pinger_enable off
dns_nameservers 127.0.0.1
hosts_file $d/hosts
access_log stdio:$d/access.log
cache_log $d/cache.log
cache_store_log none
pid_filename $d/squid.pid
coredump_dir $d
shutdown_lifetime 0 seconds
EOF
	# As root squid runs as its effective user (proxy): the work
	# directory must let it through, and its own files be its own.
	if [ "$(id -u)" -eq 0 ]; then
		chmod 711 "$T"
		chown -R "$u:" "$d"
	fi
	chmod 600 "$d/ca.key" "$d/squid.conf"
	spawn squid squid -N -f "$d/squid.conf"
	PEER_PID=$SPAWNED
	wait_for 30 port_listening "$PEER_PORT"
	PEER_WHAT="squid-openssl $(pkg_version squid-openssl)"
}

start_srt() {
	local pkg
	command -v node >/dev/null || apt_install nodejs
	pkg=$(srt_package)
	mkdir -p "$T/srt-tmp"
	# Its CA and per-connection sockets go to TMPDIR.
	spawn srt env TMPDIR="$T/srt-tmp" node "$ROOT/bench/srt_proxy.mjs" \
		"$pkg" "$T/ca.pem" "$T/tok"
	PEER_PID=$SPAWNED
	PEER_PORT=$(listened srt "$T/srt.out")
	PEER_WHAT="sandbox-runtime $(sed -n \
		's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkg/package.json" |
		head -1), node $(node --version)"
}

start_reftls() {
	gen_host_cert reftls localhost >/dev/null
	cat "$T/reftls.pem" "$T/ca.pem" >"$T/reftls-chain.pem"
	cc -O2 -Wall -Wextra -o "$T/reftls" "$ROOT/bench/reftls.c" -lssl \
		-lcrypto
	spawn reftls "$T/reftls" "$T/reftls-chain.pem" "$T/reftls.key"
	PEER_PID=$SPAWNED
	PEER_PORT=$(listened reftls "$T/reftls.err")
	PEER_WHAT="bench/reftls.c, OpenSSL $(openssl version | cut -d' ' -f2)"
}

# pinhole as the peers run: `pinhole proxy` on the host (the first
# binary, PINHOLE_PROXY_ARGS, default none: as many workers as CPUs),
# the test CA pinned for its leaves, the same rule as the sandbox's
# intercepted row.  Its row against reftls and the peers has no sandbox
# on either side.
start_pinhole() {
	local d=$T/phproxy
	mkdir -p "$d"
	cp "$T/pki/ca.key" "$d/ca.key"
	chmod 600 "$d/ca.key"
	PEER_PORT=$(rand_port)
	cat >"$d/pinhole.conf" <<EOF
ca cert $T/ca.pem key $d/ca.key
secret tok file $T/tok
resolve web.test 127.0.0.1
allow web.test:$S_PORT { private upstream-ca $T/ca.pem inject bearer tok }
EOF
	# shellcheck disable=SC2086 # PINHOLE_PROXY_ARGS is a list of words
	spawn pinhole "$PINHOLE" proxy -p "$d/pinhole.conf" \
		--listen "127.0.0.1:$PEER_PORT" --log "$d/audit.jsonl" \
		${PINHOLE_PROXY_ARGS:-}
	PEER_PID=$SPAWNED
	wait_for 30 port_listening "$PEER_PORT"
	PEER_WHAT="pinhole proxy $PINHOLE ${PINHOLE_PROXY_ARGS:-}($(awk \
		'/^Threads:/ { print $2 }' "/proc/$PEER_PID/status") threads)"
}

# leaf_key PORT [HOST]: the type and size of the key of the certificate
# that the peer on PORT presents for web.test when asked to CONNECT to
# HOST (default 127.0.0.1): the handshake's signature, and an RSA leaf
# costs a new connection far more than an EC one.
leaf_key() {
	echo | timeout 10 openssl s_client -proxy "127.0.0.1:$1" \
		-connect "${2:-127.0.0.1}:$S_PORT" -servername web.test 2>/dev/null |
		sed -n 's/^Peer signature type: //p; s/^Server public key is //p' |
		tr '\n' ' '
}

# Starts every peer of PEERS; one that fails is left out.
declare -A peer_port peer_pid
started=()
for p in $PEERS; do
	PEER_PORT='' PEER_PID='' PEER_WHAT=''
	if ! declare -F "start_$p" >/dev/null; then
		echo "bench_intercept: no peer $p (PEERS: mitmproxy squid srt reftls pinhole)"
		exit 2
	fi
	if "start_$p" && [ -n "$PEER_PORT" ] && port_listening "$PEER_PORT" &&
		! pid_done "$PEER_PID"; then
		peer_port[$p]=$PEER_PORT
		peer_pid[$p]=$PEER_PID
		started+=("$p")
		echo "peer $p: $PEER_WHAT, 127.0.0.1:$PEER_PORT, leaf key" \
			"$(leaf_key "$PEER_PORT" "$([ "$p" != pinhole ] || echo web.test)")"
	else
		echo "peer $p: did not start; left out"
		tail -5 "$T/$p.err" 2>/dev/null | sed 's/^/  | /'
	fi
done

# --- the tlsload rows -----------------------------------------------------------

# load ROW: one run of the three tlsload figures for ROW (direct,
# opaque:N, icpt:N with N the binary's index, or a peer), three lines of
# tlsload's output, each followed by "px=TICKS og=TICKS" (the proxy's CPU
# and nginx's meanwhile; px=0 for direct).
load() {
	local row=$1 kind=${1%%:*} ph pre=(env) p=() m args out o0
	case $kind in
	direct) ;;
	opaque | icpt)
		ph=${binpath[${row#*:}]}
		# shellcheck disable=SC2206 # RUN_ARGS, binargs: lists of words
		pre=("$ph" run $RUN_ARGS ${binargs[${row#*:}]} --log "$T/a.jsonl"
			-p "$T/$kind.conf" -- env TLSLOAD_PROXY=127.0.0.1:3128)
		# shellcheck disable=SC2206 # PERF_ARGS is a list of words
		if [ -n "$PERF" ]; then
			p=(perf record -q -a $PERF_ARGS -o "$PERF/ka.data" --)
		else
			p=(engine_cpu)
		fi
		;;
	pinhole)
		# Its policy names web.test, and the CONNECT target must agree
		# with the SNI and Host: tlsload's default, web.test:PORT.
		pre=(env "TLSLOAD_PROXY=127.0.0.1:${peer_port[$kind]}")
		p=(peer_cpu "${peer_pid[$kind]}")
		;;
	*)
		pre=(env "TLSLOAD_PROXY=127.0.0.1:${peer_port[$kind]}"
			"TLSLOAD_CONNECT=127.0.0.1:$S_PORT")
		p=(peer_cpu "${peer_pid[$kind]}")
		;;
	esac
	for m in ka new bulk; do
		case $m in
		ka) args=("$KA_CONC" "$KA_N" /small) ;;
		new) args=("$KA_CONC" "$NEW_SECS" /small) ;;
		bulk) args=(1 1 /big) ;;
		esac
		[ -z "$PERF" ] || p[-2]=$PERF/$m.data
		o0=$(ticks "$NGINX_PID")
		out=$(cd "$T/work" && "${p[@]}" "${pre[@]}" ./tlsload "$m" \
			web.test "$S_PORT" "${args[@]}") || true
		[[ $out == *px=* ]] || out+=" px=0"
		echo "$m $out og=$(($(ticks "$NGINX_PID") - o0))"
	done
}

# figures: reads load's lines of a row's runs, prints the medians of
# "ka/s new/s MB/s" and of the CPU per request, connection and MB of the
# proxy, the client and the origin (microseconds), 12 numbers.
figures() {
	awk -v hz="$(getconf CLK_TCK)" '
	function kv(k,   i) {
		for (i = 1; i <= NF; i++)
			if (index($i, k "=") == 1)
				return substr($i, length(k) + 2)
		return 0
	}
	{
		m = $1; n[m]++
		if (m == "bulk") units = kv("bytes") / 1e6
		else units = kv("requests")
		if (units <= 0) units = 1
		rate[m, n[m]] = $2
		px[m, n[m]] = kv("px") * 1e6 / hz / units
		cl[m, n[m]] = kv("cpu") / units
		og[m, n[m]] = kv("og") * 1e6 / hz / units
	}
	function med(a, m,   k, v, i, j, t) {
		k = n[m]
		for (i = 1; i <= k; i++) v[i] = a[m, i]
		for (i = 2; i <= k; i++)
			for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
				t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
			}
		return k ? v[int((k + 1) / 2)] : 0
	}
	END {
		printf "%.0f %.0f %.1f", med(rate, "ka"), med(rate, "new"),
		    med(rate, "bulk")
		printf " %.0f %.0f %.0f", med(px, "ka"), med(px, "new"),
		    med(px, "bulk")
		printf " %.0f %.0f %.0f", med(cl, "ka"), med(cl, "new"),
		    med(cl, "bulk")
		printf " %.0f %.0f %.0f\n", med(og, "ka"), med(og, "new"),
		    med(og, "bulk")
	}'
}

echo "bench_intercept $(date -u +%F) $(uname -sr), uid $(id -u), $RUNS runs each"
if [ "$LOAD_ONLY" != 1 ] && [ -z "$PERF" ]; then
	printf '%-44s %-12s %10s %10s\n' binary row 'MB/s' 'req/s'
	for ((i = 0; i < ${#bins[@]}; i++)); do
		for kind in direct opaque icpt; do
			[ "$kind" != direct ] || [ "$i" = 0 ] || continue
			res=$(for ((r = 0; r < RUNS; r++)); do one "$kind" "$i"; done)
			printf '%-44s %-12s %10s %10s\n' "${bins[$i]}" \
				"${kind/icpt/intercepted}" \
				"$(cut -d' ' -f1 <<<"$res" | median)" \
				"$(cut -d' ' -f2 <<<"$res" | median)"
		done
	done
fi

rows=()
if [ -n "$PERF" ]; then
	mkdir -p "$PERF"
	rows=(icpt:0)
else
	rows=(direct)
	for ((i = 0; i < ${#bins[@]}; i++)); do rows+=("icpt:$i" "opaque:$i"); done
	rows+=("${started[@]}")
fi
echo "tlsload: $KA_CONC connections; ka: $KA_N requests each; new: $NEW_SECS s; ${RUN_ARGS:+run $RUN_ARGS; }$(uptime)"
mkdir -p "$T/res"
for ((r = 0; r < RUNS; r++)); do
	for row in "${rows[@]}"; do
		load "$row" >>"$T/res/$row"
	done
done
[ -z "$PERF" ] || exit 0
echo "after: $(uptime)"

# row_name ROW: the binary (or nothing), a tab, and the row's name
row_name() {
	case $1 in
	opaque:* | icpt:*)
		local k=${1%%:*}
		printf '%s\t%s' "${bins[${1#*:}]}" "${k/icpt/intercepted}"
		;;
	*) printf -- '-\t%s' "$1" ;;
	esac
}
declare -A fig
for row in "${rows[@]}"; do fig[$row]=$(figures <"$T/res/$row"); done
printf '%-44s %-12s %9s %7s %7s | %7s %7s %7s\n' binary row 'ka/s' 'new/s' \
	'MB/s' 'ka-us' 'new-us' 'MB-us'
for row in "${rows[@]}"; do
	read -r a b c d e f _ <<<"${fig[$row]}"
	IFS=$'\t' read -r rb rn <<<"$(row_name "$row")"
	printf '%-44s %-12s %9s %7s %7s | %7s %7s %7s\n' "$rb" "$rn" \
		"$a" "$b" "$c" "$d" "$e" "$f"
done
echo "client (tlsload) and origin (nginx) CPU, us per request / connection / MB:"
printf '%-44s %-12s %7s %7s %7s | %7s %7s %7s\n' binary row 'cl-ka' \
	'cl-new' 'cl-MB' 'og-ka' 'og-new' 'og-MB'
for row in "${rows[@]}"; do
	read -r _ _ _ _ _ _ g h i j k l <<<"${fig[$row]}"
	IFS=$'\t' read -r rb rn <<<"$(row_name "$row")"
	printf '%-44s %-12s %7s %7s %7s | %7s %7s %7s\n' "$rb" "$rn" \
		"$g" "$h" "$i" "$j" "$k" "$l"
done
echo "ratios (ka/s, new/s, MB/s):"
ratio() {
	local x y
	read -ra x <<<"${fig[$1]}"
	read -ra y <<<"${fig[$2]}"
	awk -v a="${x[0]}" -v b="${x[1]}" -v c="${x[2]}" -v d="${y[0]}" \
		-v e="${y[1]}" -v f="${y[2]}" 'function r(p, q) {
			return q > 0 ? sprintf("%.2f", p / q) : "-" }
		BEGIN { printf "%6s %6s %6s\n", r(a, d), r(b, e), r(c, f) }'
}
for ((i = 0; i < ${#bins[@]}; i++)); do
	for other in direct "${started[@]}"; do
		printf '%-44s %-30s %s\n' "${bins[$i]}" "intercepted / $other" \
			"$(ratio "icpt:$i" "$other")"
	done
done
for other in "${started[@]}"; do
	printf '%-44s %-30s %s\n' - "$other / direct" "$(ratio "$other" direct)"
done
if [[ " ${started[*]} " == *" reftls "* ]]; then
	for ((i = 0; i < ${#bins[@]}; i++)); do
		printf '%-44s %-30s %s\n' "${bins[$i]}" "opaque / direct" \
			"$(ratio "opaque:$i" direct)"
	done
fi
# A run with failed requests or connections is a figure to distrust.
grep -H 'errors=[1-9]' "$T"/res/* 2>/dev/null | sed "s|^$T/res/|errors: |" || true
