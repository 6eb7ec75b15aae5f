#!/usr/bin/env bash
# bench_proxy.sh: pinhole proxy against no proxy, squid and tinyproxy, on
# loopback (issue 3).  One command: installs what is missing, builds
# pinhole, bench/loadgen.c and bench/refrelay.c, starts nginx and the
# proxies in a temporary directory on /dev/shm, runs the three benchmarks,
# prints a table, stops everything it started and removes the directory.
#
#   bench/bench_proxy.sh            # full run, 6 to 10 minutes
#   bench/bench_proxy.sh -q         # quick: 1 run, 2 s, 256 MiB, 1,000 tunnels
#   PIN=0 bench/bench_proxy.sh      # unpinned: as users run it, no taskset
#
# 1. bulk  1 GiB through a CONNECT tunnel (curl -p, plain HTTP inside),
#          MB/s (10^6 bytes), median of RUNS runs.
# 2. rate  a new connection per request: connect, CONNECT, read the 200,
#          GET a tiny file, read it, close; CONC connections in flight for
#          RATE_SECS s: connections/s, latency p50/p99, and the proxy's
#          CPU time (utime + stime of /proc/PID/stat) per connection.
# 3. idle  RSS per established, idle tunnel at 1,000 and 9,000 tunnels:
#          (VmRSS with N tunnels - VmRSS before) / N, fresh process each.
# 4. limit the proxy started under a descriptor limit of NOFILE (20000,
#          soft and hard, by prlimit) with its default session limit
#          (pinhole: no --max-sessions): how many of LIMIT_N (10000) idle
#          tunnels it holds within LIMIT_WAIT (20) s, and RSS per tunnel.
#
# Placement (2 cores): the proxy on CPU 1 (PROXY_CPU); curl or loadgen and
# nginx on CPU 0 (LOAD_CPU).  "direct" (no proxy) keeps that placement, so
# that a proxy's ratio to it is what putting the proxy in the path costs;
# "direct-split" moves nginx to CPU 1, both cores for client and server.
# PIN=0: no taskset at all, the scheduler places everything on every core
# (as users run a proxy); there is no direct-split row then.
# Traffic stays on 127.0.0.0/8.
# Logs: pinhole's audit log, squid's access log and tinyproxy's log
# (LogLevel Info) are real files in the work directory, on tmpfs.
#
# Noise: the proxy's core is watched (/proc/stat); a run during which more
# than QUIET (0.08) of it went to other processes is tried again, up to
# TRIES (3) times, and the quietest is kept; "other" in the table says how
# quiet it was.  PIN=0 watches every core: "other" is then the busy time,
# in cores, that went neither to the proxy, nor to nginx, nor to the
# client (curl or loadgen, counted as this shell's reaped children).
# Bulk runs are interleaved (run 1 of every configuration, then run 2...);
# rate rows go concurrency by concurrency.
#
# Environment: RUNS (5), RATE_SECS (10), CONCS ("1 16 256"),
# HOLDS ("1000 9000"), BULK_MIB (1024), NOFILE (20000), LIMIT_N (10000),
# LIMIT_WAIT (20),
# PROXIES ("pinhole squid tinyproxy refcopy refsplice": the last two are
# refrelay.c, the floor of what a relay costs, not peers),
# TESTS ("bulk rate idle limit"), TRIES, QUIET, PROXY_CPU (1), LOAD_CPU (0),
# PINHOLE (a prebuilt binary), PINHOLE_BASE (another, for the "base"
# entry of PROXIES: before and after a change in one sitting), PINHOLE2
# (the "pinhole2" entry: default PINHOLE, run with PINHOLE2_ARGS, so that
# two settings of one binary are rows side by side), PINHOLE_ARGS,
# PINHOLE_BASE_ARGS, PINHOLE2_ARGS ("--workers 2"): extra arguments of
# "pinhole proxy" for those rows, split on blanks; PIN (1; 0: unpinned),
# KEEP=1 (keep the work directory), OUT (also write the report to this
# file).
set -euo pipefail

RUNS=${RUNS:-5}
RATE_SECS=${RATE_SECS:-10}
CONCS=${CONCS:-"1 16 256"}
HOLDS=${HOLDS:-"1000 9000"}
BULK_MIB=${BULK_MIB:-1024}
PROXIES=${PROXIES:-"pinhole squid tinyproxy refcopy refsplice"}
TESTS=${TESTS:-"bulk rate idle limit"}
NOFILE=${NOFILE:-20000}
LIMIT_N=${LIMIT_N:-10000}
LIMIT_WAIT=${LIMIT_WAIT:-20}
PH_SESSIONS=(--max-sessions 20000) # the limit test: none (the default)
LIMITED=()                         # the limit test: prlimit --nofile
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
PIN=${PIN:-1}
read -ra PH_ARGS <<<"${PINHOLE_ARGS:-}"
read -ra PH_BASE_ARGS <<<"${PINHOLE_BASE_ARGS:-}"
read -ra PH2_ARGS <<<"${PINHOLE2_ARGS---workers 2}"
NCPU=$(grep -c '^cpu[0-9]' /proc/stat)
# Command prefixes: "${ON_PROXY[@]}" COMMAND runs COMMAND on the proxy's
# core, "${ON_LOAD[@]}" on the client's; empty when unpinned.  Prefixes
# that exec (never a shell function), so that $! is the process itself.
ON_PROXY=(taskset -c "$PROXY_CPU")
ON_LOAD=(taskset -c "$LOAD_CPU")
if [ "$PIN" = 0 ]; then
	ON_PROXY=() ON_LOAD=()
fi
TRIES=${TRIES:-3}
QUIET=${QUIET:-0.08}
NSRC=8 # client source addresses 127.0.0.1-8 (loadgen -s)

if [ "${1:-}" = "-q" ]; then
	RUNS=1 RATE_SECS=2 BULK_MIB=256 HOLDS=1000 LIMIT_WAIT=10
elif [ $# -gt 0 ]; then
	sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2
	exit 2
fi

case $PIN in
0 | 1) ;;
*) echo "bench_proxy: PIN is 0 or 1" >&2 && exit 2 ;;
esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY \
	no_proxy NO_PROXY
W=
PIDS=() # everything started here, stopped by cleanup

say() { printf '%s\n' "$*" >&2; }
die() {
	say "bench_proxy: $*"
	exit 1
}

cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	if [ -n "$W" ] && [ "${KEEP:-0}" != 1 ]; then
		rm -rf "$W"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- setup ------------------------------------------------------------------

pkg_installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"
}

install_deps() {
	local p missing=() sudo=
	"$ROOT/scripts/deps.sh"
	# squid-openssl (the same squid with TLS interception, which
	# bench_intercept.sh's ssl-bump peer needs) conflicts with squid and
	# serves here as well: either will do; squid-openssl when neither.
	pkg_installed squid || pkg_installed squid-openssl ||
		missing+=(squid-openssl)
	for p in tinyproxy nginx curl util-linux; do
		pkg_installed "$p" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	say "bench_proxy: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -q </dev/null >&2
	$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" \
		</dev/null >&2
}

build() {
	PINHOLE_BUILT=0
	if [ -z "${PINHOLE:-}" ]; then
		PINHOLE_BUILT=1
		cmake -S "$ROOT" -B "$ROOT/build-bench" \
			-DCMAKE_BUILD_TYPE=Release >/dev/null
		cmake --build "$ROOT/build-bench" -j2 --target pinhole >/dev/null
		PINHOLE=$ROOT/build-bench/pinhole
	fi
	cc -O2 -Wall -Wextra -o "$W/loadgen" "$ROOT/bench/loadgen.c"
	cc -O2 -Wall -Wextra -o "$W/refrelay" "$ROOT/bench/refrelay.c"
}

# Descriptors: 9,000 tunnels are 18,000 sockets in the proxy.
raise_nofile() {
	ulimit -Hn 65536 2>/dev/null || true
	ulimit -n "$(ulimit -Hn)"
	[ "$(ulimit -n)" -ge 20000 ] ||
		say "bench_proxy: ulimit -n is $(ulimit -n): 9,000 tunnels may fail"
}

make_files() {
	mkdir -p "$W/www" "$W/logs" "$W/squid" "$W/tinyproxy"
	chmod 755 "$W" "$W/www"
	chmod 777 "$W/logs" "$W/squid" "$W/tinyproxy" # proxy, nobody
	# Random bytes, in the page cache: nothing compresses or skips them.
	# Only the bulk test reads them.
	if has_test bulk; then
		head -c "$((BULK_MIB * 1024 * 1024))" /dev/urandom >"$W/www/1g"
	else
		: >"$W/www/1g"
	fi
	printf 'pinhole bench: a tiny file\n' >"$W/www/tiny"
	chmod 644 "$W/www/1g" "$W/www/tiny"
}

free_port() { "$W/loadgen" port; }

# Waits until URL answers through PROXY (or directly: PROXY empty).
wait_http() {
	local url=$1 proxy=${2:-} i
	for i in $(seq 100); do
		if curl -sf -o /dev/null ${proxy:+-x "$proxy"} "$url"; then
			return 0
		fi
		sleep 0.1
	done
	die "no answer from $url ${proxy:+through $proxy}"
}

# --- servers ----------------------------------------------------------------

start_nginx() {
	NGINX_PORT=$(free_port)
	cat >"$W/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile 65536;
pid $W/logs/nginx.pid;
error_log $W/logs/nginx-error.log;
daemon off;
events { worker_connections 30000; }
http {
	access_log off;
	sendfile on;
	keepalive_requests 1000000;
	keepalive_timeout 600s;
	client_header_timeout 600s;
	server {
		listen 127.0.0.1:$NGINX_PORT backlog=4096;
		root $W/www;
	}
}
EOF
	"${ON_LOAD[@]}" nginx -p "$W/" -c "$W/nginx.conf" \
		-e "$W/logs/nginx-error.log" &
	NGINX_PID=$!
	PIDS+=("$NGINX_PID")
	TARGET=127.0.0.1:$NGINX_PORT
	wait_http "http://$TARGET/tiny"
}

# Puts every nginx process on CPU (PIN=0: leaves them where they are).
nginx_cpu() {
	local p
	[ "$PIN" = 1 ] || return 0
	for p in "$NGINX_PID" $(pgrep -P "$NGINX_PID"); do
		taskset -acp "$1" "$p" >/dev/null
	done
}

nginx_worker() { pgrep -P "$NGINX_PID" | head -1; }

# start_NAME sets PROXY_PID and PROXY_PORT; stop_proxy ends it.
# run_pinhole NAME BINARY [ARG...]: "pinhole" is $PINHOLE, "base"
# $PINHOLE_BASE (an older build, to compare in the same sitting),
# "pinhole2" $PINHOLE2; ARGs are added to "pinhole proxy" (PINHOLE_ARGS...).
run_pinhole() {
	local name=$1 bin=$2
	shift 2
	set -- "$name" "$bin" "$@"
	cat >"$W/$1.conf" <<EOF
allow 127.0.0.1:$NGINX_PORT
timeout idle 10m
EOF
	: >"$W/logs/$1.err"
	"${LIMITED[@]}" "${ON_PROXY[@]}" "$2" proxy \
		-p "$W/$1.conf" --listen 127.0.0.1:0 \
		--log "$W/logs/$1-audit.jsonl" "${PH_SESSIONS[@]}" \
		--dns 127.0.0.1 "${@:3}" 2>"$W/logs/$1.err" &
	PROXY_PID=$!
	PIDS+=("$PROXY_PID")
	local i
	for i in $(seq 100); do
		PROXY_PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' \
			"$W/logs/$1.err")
		[ -n "$PROXY_PORT" ] && break
		sleep 0.1
	done
	[ -n "$PROXY_PORT" ] || die "$1 did not start: $(cat "$W/logs/$1.err")"
}
start_pinhole() { run_pinhole pinhole "$PINHOLE" "${PH_ARGS[@]}"; }
start_base() {
	run_pinhole base "${PINHOLE_BASE:?PROXIES has base: set PINHOLE_BASE}" \
		"${PH_BASE_ARGS[@]}"
}
start_pinhole2() { run_pinhole pinhole2 "${PINHOLE2:-$PINHOLE}" "${PH2_ARGS[@]}"; }

# The reference relays (refrelay.c): the floor of what a relay costs.
start_ref() {
	: >"$W/logs/$1.err"
	"${LIMITED[@]}" "${ON_PROXY[@]}" "$W/refrelay" -m "$2" \
		2>"$W/logs/$1.err" &
	PROXY_PID=$!
	PIDS+=("$PROXY_PID")
	local i
	for i in $(seq 100); do
		PROXY_PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' \
			"$W/logs/$1.err")
		[ -n "$PROXY_PORT" ] && break
		sleep 0.1
	done
	[ -n "$PROXY_PORT" ] || die "refrelay did not start"
}
start_refcopy() { start_ref refcopy copy; }
start_refsplice() { start_ref refsplice splice; }

start_squid() {
	local i
	PROXY_PORT=$(free_port)
	# Squid looks up the name of each client address: answer from a hosts
	# file (127.0.0.1 is in /etc/hosts, .2 to .8 are not), or the lookups
	# pile up unanswered and slow it down more with every connection.
	for i in $(seq "$NSRC"); do
		echo "127.0.0.$i bench-client-$i"
	done >"$W/squid/hosts"
	chmod 644 "$W/squid/hosts"
	cat >"$W/squid/squid.conf" <<EOF
http_port 127.0.0.1:$PROXY_PORT
visible_hostname bench
acl bench_client src 127.0.0.0/8
acl bench_port port $NGINX_PORT
acl CONNECT method CONNECT
http_access allow CONNECT bench_client bench_port
http_access allow bench_client bench_port
http_access deny all
cache deny all
cache_mem 0 MB
pinger_enable off
dns_nameservers 127.0.0.1
hosts_file $W/squid/hosts
access_log stdio:$W/squid/access.log
cache_log $W/squid/cache.log
cache_store_log none
pid_filename $W/squid/squid.pid
coredump_dir $W/squid
max_filedescriptors 65536
shutdown_lifetime 0 seconds
EOF
	"${LIMITED[@]}" "${ON_PROXY[@]}" squid -N -f "$W/squid/squid.conf" \
		>"$W/squid/stderr" 2>&1 &
	PROXY_PID=$!
	PIDS+=("$PROXY_PID")
}

start_tinyproxy() {
	PROXY_PORT=$(free_port)
	cat >"$W/tinyproxy/tinyproxy.conf" <<EOF
User nobody
Group nogroup
Port $PROXY_PORT
Listen 127.0.0.1
Timeout 600
MaxClients 20000
Allow 127.0.0.0/8
ConnectPort $NGINX_PORT
LogFile "$W/tinyproxy/tinyproxy.log"
LogLevel Info
PidFile "$W/tinyproxy/tinyproxy.pid"
DisableViaHeader Yes
EOF
	"${LIMITED[@]}" "${ON_PROXY[@]}" tinyproxy -d -c "$W/tinyproxy/tinyproxy.conf" \
		>"$W/tinyproxy/stderr" 2>&1 &
	PROXY_PID=$!
	PIDS+=("$PROXY_PID")
}

start_proxy() {
	local i
	"start_$1"
	for i in $(seq 100); do
		if curl -sf -p -x "http://127.0.0.1:$PROXY_PORT" -o /dev/null \
			"http://$TARGET/tiny"; then
			return 0
		fi
		sleep 0.1
	done
	die "$1: no CONNECT tunnel to $TARGET"
}

stop_proxy() {
	local p keep=()
	kill "$PROXY_PID" 2>/dev/null || true
	wait "$PROXY_PID" 2>/dev/null || true
	for p in "${PIDS[@]}"; do # a reaped pid may be reused: forget it
		[ "$p" = "$PROXY_PID" ] || keep+=("$p")
	done
	PIDS=("${keep[@]}")
}

# --- the benchmarks ---------------------------------------------------------

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# Clock ticks, "BUSY TOTAL OWN": busy and total of /proc/stat for core
# PROXY_CPU (PIN=0: the sum of every core), then the CPU time of the
# processes PID... (utime + stime of /proc/PID/stat: that of the whole
# thread group, threads that have exited included) plus, if SHELL is not
# "-", the children that shell has reaped (cutime + cstime: the client).
# ticks SHELL [PID...]
ticks() {
	local shell=$1 line=cpu p own=0
	shift
	[ "$PIN" = 1 ] && line=cpu$PROXY_CPU
	awk -v c="$line" '$1 == c {
		t = 0; for (i = 2; i <= 9; i++) t += $i
		printf "%d %d ", t - $5 - $6, t; exit }' /proc/stat
	for p in "$@"; do
		own=$((own + $(sed 's/.*) //' "/proc/$p/stat" | awk '{ print $12 + $13 }')))
	done
	if [ "$shell" != - ]; then
		own=$((own + $(sed 's/.*) //' "/proc/$shell/stat" | awk '{ print $14 + $15 }')))
	fi
	echo "$own"
}

# The busy time between two ticks outputs that went to none of the
# measured processes: other load, noise.  Pinned: a share of core
# PROXY_CPU; unpinned: in cores (0 to NCPU).
other_load() {
	awk -v a="$1" -v b="$2" -v n="$([ "$PIN" = 1 ] && echo 1 || echo "$NCPU")" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		t = y[2] - x[2]
		printf "%.2f\n", (t > 0 ? n * ((y[1] - x[1]) - (y[3] - x[3])) / t : 0) }'
}

# CONFIG NAME: the proxy port (empty: direct), the process whose CPU time
# counts (direct: the nginx worker), and the one of those on the proxy's
# core (direct: none).
port_of() { case $1 in direct*) ;; *) echo "${PORT[$1]}" ;; esac; }
pid_of() { case $1 in direct*) nginx_worker ;; *) echo "${PID[$1]}" ;; esac; }
core_pid_of() { [ "$1" = direct ] || pid_of "$1"; }
# Unpinned, every process of the test counts as its own: the proxy and nginx.
own_pids_of() {
	case $1 in
	direct*) nginx_worker ;;
	*) echo "${PID[$1]} $(nginx_worker)" ;;
	esac
}

# The arguments of ticks for CONFIG $1 in the shell $2 that runs the client.
watched() {
	if [ "$PIN" = 1 ]; then
		echo "- $(core_pid_of "$1")"
	else
		echo "$2 $(own_pids_of "$1")"
	fi
}

# One bulk download through CONFIG $1; prints "MB/s OTHER".
bulk_once() {
	local port out t0 t1 w me
	port=$(port_of "$1")
	me=$BASHPID # here: inside $(), it would be that subshell's
	read -ra w <<<"$(watched "$1" "$me")"
	t0=$(ticks "${w[@]}")
	out=$("${ON_LOAD[@]}" curl -sf ${port:+-p -x "http://127.0.0.1:$port"} \
		-o /dev/null -w '%{size_download} %{speed_download}' \
		"http://$TARGET/1g") || die "bulk download failed ($1)"
	t1=$(ticks "${w[@]}")
	set -- $out
	[ "$1" -eq "$((BULK_MIB * 1024 * 1024))" ] || die "short download: $1"
	echo "$(awk -v s="$2" 'BEGIN { printf "%.1f", s / 1e6 }') $(other_load "$t0" "$t1")"
}

# One rate run: CONFIG $1, concurrency $2; prints loadgen's line + other=.
# Pinned, loadgen watches the proxy's core itself (-C); unpinned, the
# script watches every core around it.
rate_once() {
	local port line t0 t1 w me
	port=$(port_of "$1")
	if [ "$PIN" = 0 ]; then
		me=$BASHPID # here: inside $(), it would be that subshell's
		read -ra w <<<"$(watched "$1" "$me")"
		t0=$(ticks "${w[@]}")
		line=$("$W/loadgen" rate ${port:+-x 127.0.0.1:$port} \
			-t "$TARGET" -g /tiny -c "$2" -d "$RATE_SECS" \
			-p "$(pid_of "$1")" -s "$NSRC")
		t1=$(ticks "${w[@]}")
		echo "$line other=$(other_load "$t0" "$t1")"
		return 0
	fi
	line=$(taskset -c "$LOAD_CPU" "$W/loadgen" rate ${port:+-x 127.0.0.1:$port} \
		-t "$TARGET" -g /tiny -c "$2" -d "$RATE_SECS" -p "$(pid_of "$1")" \
		-s "$NSRC" -C "$PROXY_CPU")
	echo "$line other=$(awk -v l="$line" -v c="$PROXY_CPU" -v d="$1" 'BEGIN {
		n = split(l, f, " "); for (i = 1; i <= n; i++) { split(f[i], kv, "="); v[kv[1]] = kv[2] }
		printf "%.2f", v["core" c "_busy"] - (d == "direct" ? 0 : v["cpu_util"]) }')"
}

# Runs "$@" (a *_once) up to TRIES times, until the other load on the
# proxy's core is at most QUIET; prints the quietest output.  The other
# engineers' builds share these 2 cores.
quietest() {
	local out other best="" best_other=9 try
	for try in $(seq "$TRIES"); do
		out=$("$@")
		other=$(echo "$out" | sed -n 's/.*other=\([-0-9.]*\).*/\1/p')
		[ -n "$other" ] || other=$(echo "$out" | awk '{ print $2 }')
		if awk -v a="$other" -v b="$best_other" 'BEGIN { exit !(a < b) }'; then
			best=$out best_other=$other
		fi
		awk -v a="$other" -v q="$QUIET" 'BEGIN { exit !(a <= q) }' && break
		[ "$try" -lt "$TRIES" ] || break # the last: keep the quietest
		say "  ($* : other load $other on $(watching), again)"
		sleep 2
	done
	echo "$best"
}

# What "other" is measured on.
watching() {
	if [ "$PIN" = 1 ]; then
		echo "CPU $PROXY_CPU"
	else
		echo "$NCPU cores, in cores"
	fi
}

# Sets CPU placement for CONFIG $1: for direct-split, nginx takes the
# proxy's core; everywhere else it shares the client's (PIN=0: nothing).
place() {
	if [ "$1" = direct-split ]; then
		nginx_cpu "$PROXY_CPU"
	else
		nginx_cpu "$LOAD_CPU"
	fi
}

CONFIGS="direct direct-split" # then $PROXIES
[ "$PIN" = 1 ] || CONFIGS=direct # no placement to split

declare -A PORT PID

start_all() {
	local p
	for p in $PROXIES; do
		start_proxy "$p"
		PORT[$p]=$PROXY_PORT
		PID[$p]=$PROXY_PID
	done
}

stop_all() {
	local p
	for p in $PROXIES; do
		PROXY_PID=${PID[$p]}
		stop_proxy
	done
}

# Interleaved: run r of every configuration, then run r + 1.
bulk() {
	local r p v
	declare -A vals others
	for r in $(seq "$RUNS"); do
		for p in $CONFIGS $PROXIES; do
			place "$p"
			v=$(quietest bulk_once "$p")
			vals[$p]+="${v% *} "
			others[$p]+="${v#* } "
			say "  bulk run $r $p: $v"
		done
	done
	for p in $CONFIGS $PROXIES; do
		echo "bulk $p $(printf '%s\n' ${vals[$p]} | median)" \
			"$(printf '%s\n' ${others[$p]} | sort -g | tail -1)" >>"$W/results"
	done
}

rate() {
	local c p line
	for c in $CONCS; do
		for p in $CONFIGS $PROXIES; do
			place "$p"
			line=$(quietest rate_once "$p" "$c")
			say "  rate $p c=$c: $line"
			echo "rate $p $line" >>"$W/results"
			sleep 1
		done
	done
	nginx_cpu "$LOAD_CPU"
}

# A fresh process for each N: RSS before is the idle process.
idle() {
	local n line
	for n in $HOLDS; do
		start_proxy "$1"
		sleep 0.5
		line=$("${ON_LOAD[@]}" "$W/loadgen" hold \
			-x "127.0.0.1:$PROXY_PORT" -t "$TARGET" -n "$n" \
			-p "$PROXY_PID" -s "$NSRC" -w 120)
		say "  idle $1 n=$n: $line"
		echo "idle $1 $line" >>"$W/results"
		stop_proxy
		sleep 1
	done
}

# Under a descriptor limit of NOFILE, with the proxy's default session
# limit: tunnels held of LIMIT_N, and RSS per held tunnel.
limit() {
	local line
	LIMITED=(prlimit "--nofile=$NOFILE:$NOFILE")
	PH_SESSIONS=()
	start_proxy "$1"
	sleep 0.5
	line=$("${ON_LOAD[@]}" "$W/loadgen" hold \
		-x "127.0.0.1:$PROXY_PORT" -t "$TARGET" -n "$LIMIT_N" \
		-p "$PROXY_PID" -s "$NSRC" -w "$LIMIT_WAIT")
	say "  limit $1 nofile=$NOFILE: $line"
	echo "limit $1 $line" >>"$W/results"
	stop_proxy
	LIMITED=()
	PH_SESSIONS=(--max-sessions 20000)
	sleep 1
}

has_test() { case " $TESTS " in *" $1 "*) return 0 ;; esac; return 1; }

run_all() {
	local p
	if has_test bulk || has_test rate; then
		start_all
		if has_test bulk; then
			say "bulk: $BULK_MIB MiB, $RUNS interleaved runs"
			bulk
		fi
		if has_test rate; then
			say "rate: $RATE_SECS s at concurrency $CONCS"
			rate
		fi
		stop_all
	fi
	if has_test idle; then
		say "idle: $HOLDS tunnels"
		for p in $PROXIES; do
			idle "$p"
		done
	fi
	if has_test limit; then
		say "limit: $LIMIT_N tunnels under ulimit -n $NOFILE"
		for p in $PROXIES; do
			limit "$p"
		done
	fi
}

# --- the report -------------------------------------------------------------

pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo '?'; }
# squid or squid-openssl, whichever is installed, and its version.
squid_version() {
	local p
	for p in squid squid-openssl; do
		pkg_installed "$p" && { echo "$p $(pkg_version "$p")"; return; }
	done
	echo 'squid ?'
}

header() {
	local rev
	rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')
	# Read-only: no index refresh (GIT_OPTIONAL_LOCKS=0).
	GIT_OPTIONAL_LOCKS=0 git -C "$ROOT" diff-index --quiet HEAD -- . \
		':!bench' 2>/dev/null || rev="$rev+local changes"
	echo "bench_proxy $(date -u +%Y-%m-%d) $(uname -sr) $(uname -m)," \
		"$(nproc) x $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
	local what="pinhole $rev (build-bench, Release)"
	[ "$PINHOLE_BUILT" = 1 ] || what="pinhole $PINHOLE (prebuilt; tree $rev)"
	echo "$what; nginx $(pkg_version nginx)," \
		"$(squid_version), tinyproxy $(pkg_version tinyproxy)," \
		"curl $(pkg_version curl)"
	case " $PROXIES " in *" pinhole "*)
		echo "pinhole: $PINHOLE ${PH_ARGS[*]}" ;;
	esac
	case " $PROXIES " in *" pinhole2 "*)
		echo "pinhole2: ${PINHOLE2:-$PINHOLE} ${PH2_ARGS[*]}" ;;
	esac
	case " $PROXIES " in *" base "*)
		echo "base: $PINHOLE_BASE ${PH_BASE_ARGS[*]}" ;;
	esac
	if [ "$PIN" = 1 ]; then
		echo "placement: pinned (PIN=1): proxy on CPU $PROXY_CPU; client and" \
			"nginx on CPU $LOAD_CPU (direct-split: nginx on CPU $PROXY_CPU);"
	else
		echo "placement: unpinned (PIN=0): no taskset, proxy, client and" \
			"nginx wherever the scheduler puts them on the $NCPU cores;"
	fi
	echo "logs on tmpfs; tcp_tw_reuse=$(cat /proc/sys/net/ipv4/tcp_tw_reuse);" \
		"load before: $LOAD_BEFORE; after: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# Prints the table from $W/results (see report.awk below).
report() {
	header
	awk -v runs="$RUNS" -v secs="$RATE_SECS" -v mib="$BULK_MIB" \
		-v core="$PROXY_CPU" -v limn="$LIMIT_N" -v nofile="$NOFILE" \
		-v pin="$PIN" -v ncpu="$NCPU" '
	function kv(line, key,   m) {
		if (match(line, " " key "=[^ ]*")) {
			m = substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 2)
			return m
		}
		return ""
	}
	function ratio(a, b) { return (b > 0 && a != "") ? sprintf("%.2fx", a / b) : "-" }
	$1 == "bulk" { bulk[$2] = $3; bother[$2] = $4; if (!($2 in seenb)) { seenb[$2] = 1; border[++nb] = $2 } }
	$1 == "rate" {
		c = kv($0, "conc"); k = $2 SUBSEP c
		rate[k] = kv($0, "rate"); p50[k] = kv($0, "p50_us"); p99[k] = kv($0, "p99_us")
		cpu[k] = kv($0, "cpu_us_per_conn"); usr[k] = kv($0, "user_us")
		sys[k] = kv($0, "sys_us"); util[k] = kv($0, "cpu_util"); err[k] = kv($0, "errors")
		other[k] = kv($0, "other")
		if (!($2 in seenr)) { seenr[$2] = 1; rorder[++nr] = $2 }
		if (!(c in seenc)) { seenc[c] = 1; corder[++nc] = c }
	}
	$1 == "limit" {
		lper[$2] = kv($0, "per_tunnel_b"); lest[$2] = kv($0, "established")
		lorder[++nl] = $2
	}
	$1 == "idle" {
		n = kv($0, "n"); k = $2 SUBSEP n
		per[k] = kv($0, "per_tunnel_b"); est[k] = kv($0, "established")
		if (!($2 in seeni)) { seeni[$2] = 1; iorder[++ni] = $2 }
		if (!(n in seenn)) { seenn[n] = 1; norder[++nn] = n }
	}
	END {
		if (nb) {
			printf "\n1. bulk: %d MiB through a CONNECT tunnel, median of %d, MB/s\n", mib, runs
			if (pin) printf "   other: the largest other load on the proxy'"'"'s core in the kept runs\n"
			else printf "   other: the largest other load in the kept runs, cores of %d (unpinned)\n", ncpu
			printf "%-12s %8s %8s %8s %8s %8s %6s\n", "", "MB/s", "/direct", "/d-split", "/squid",
			    "/tinyprx", "other"
			for (i = 1; i <= nb; i++) {
				p = border[i]
				printf "%-12s %8.1f %8s %8s %8s %8s %6s\n", p, bulk[p], ratio(bulk[p], bulk["direct"]),
				    ratio(bulk[p], bulk["direct-split"]), ratio(bulk[p], bulk["squid"]),
				    ratio(bulk[p], bulk["tinyproxy"]), bother[p]
			}
			printf "target: pinhole >= 0.90x direct (issue 15) and >= 2x squid\n"
		}
		if (nr) {
			printf "\n2. rate: new connection + CONNECT + GET /tiny, %s s per row\n", secs
			printf "   cpu: proxy utime+stime per connection, us, all its threads (direct: the nginx worker);\n"
			if (pin) {
				printf "   util: proxy CPU time / wall time (1.00 = its core is saturated);\n"
				printf "   other: the rest of the proxy core'"'"'s busy time (noise if > 0.05)\n"
			} else {
				printf "   util: proxy CPU time / wall time, in cores (unpinned, %d cores);\n", ncpu
				printf "   other: busy time of the %d cores, in cores, not the proxy'"'"'s, nginx'"'"'s or loadgen'"'"'s\n", ncpu
			}
			printf "%-12s %5s %8s %8s %8s %8s %7s %7s %5s %5s %5s\n", "", "conc", "conn/s", "p50 ms", "p99 ms",
			    "cpu us", "user", "sys", "util", "other", "errs"
			for (j = 1; j <= nc; j++) for (i = 1; i <= nr; i++) {
				p = rorder[i]; k = p SUBSEP corder[j]
				if (!(k in rate)) continue
				printf "%-12s %5s %8s %8.2f %8.2f %8s %7s %7s %5s %5s %5s\n", p, corder[j], rate[k],
				    p50[k] / 1000, p99[k] / 1000, cpu[k], usr[k], sys[k], util[k], other[k], err[k]
			}
			for (m = 1; m <= nr; m++) {
			me = rorder[m]
			if (me != "pinhole" && me != "pinhole2" && me != "base") continue
			printf "%s conn/s against:\n", me
			for (j = 1; j <= nc; j++) {
				c = corder[j]; k = me SUBSEP c
				best = 0; bname = "-"
				for (i = 1; i <= nr; i++) {
					p = rorder[i]
					if (p != "squid" && p != "tinyproxy") continue
					if (rate[p SUBSEP c] + 0 > best) { best = rate[p SUBSEP c] + 0; bname = p }
				}
				printf "  conc %-4s direct %s (split %s), best peer (%s) %s; cpu per connection %s of %s\n", c,
				    ratio(rate[k], rate["direct" SUBSEP c]), ratio(rate[k], rate["direct-split" SUBSEP c]),
				    bname, ratio(rate[k], best),
				    ratio(cpu[k], cpu[bname SUBSEP c]), bname
			}
			}
			printf "target: >= 1.5x the better peer at every concurrency, < 40 us CPU per connection\n"
		}
		if (ni) {
			printf "\n3. idle: RSS per established idle tunnel, bytes ((RSS(N) - RSS(0)) / N)\n"
			printf "%-12s", ""
			for (j = 1; j <= nn; j++) printf " %9s %7s", "N=" norder[j], "open"
			printf "\n"
			for (i = 1; i <= ni; i++) {
				p = iorder[i]; printf "%-12s", p
				for (j = 1; j <= nn; j++) printf " %9s %7s", per[p SUBSEP norder[j]], est[p SUBSEP norder[j]]
				printf "\n"
			}
			printf "target: <= 4096 bytes per tunnel\n"
		}
		if (nl) {
			printf "\n4. limit: idle tunnels held of %s asked, under ulimit -n %s, default session limit\n", limn, nofile
			printf "%-12s %8s %12s\n", "", "held", "B/tunnel"
			for (i = 1; i <= nl; i++)
				printf "%-12s %8s %12s\n", lorder[i], lest[lorder[i]], lper[lorder[i]]
			printf "target: >= 9000 held, <= 4096 bytes each\n"
		}
	}' "$W/results"
}

main() {
	install_deps
	W=$(mktemp -d /dev/shm/pinhole-bench.XXXXXX)
	build
	raise_nofile
	make_files
	: >"$W/results"
	LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
	start_nginx
	run_all
	if [ -n "${OUT:-}" ]; then
		report | tee "$OUT"
	else
		report
	fi
}

main
