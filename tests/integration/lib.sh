#!/usr/bin/env bash
# lib.sh: shared helpers of the proxy integration scenarios (proxy_*.sh).
#
# A scenario does:
#	. "$(dirname "$0")/lib.sh"	# with "$@" = PATH-TO-PINHOLE
#	ph_begin NAME TOOL...		# temp dir, cleanup trap, required tools
#	... start servers, run checks with ok/bad/expect/refuse ...
#	ph_end				# "NAME: N passed, M failed"; exit status
#
# Every server is started in its own session (setsid) and is killed by its
# process group at exit, on failure too.  All traffic stays on 127.0.0.1
# and [::1].  No sleep serves as synchronisation: the helpers wait for a
# condition (a port listening, a line in a file, a process gone) in a
# bounded loop with a short interval.  Works as root and as any other user:
# every file a server needs lives in the scenario's temp dir.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	echo "lib.sh: helpers sourced by proxy_*.sh; not a test of its own"
	exit 0
fi
set -uo pipefail
export LC_ALL=C
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY \
	no_proxy NO_PROXY CURL_CA_BUNDLE SSL_CERT_FILE

PINHOLE=${1:?usage: $0 PATH-TO-PINHOLE}
case $PINHOLE in
/*) ;;
*) PINHOLE=$(cd "$(dirname "$PINHOLE")" && pwd)/$(basename "$PINHOLE") ;;
esac
SRC=${PH_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PH_NAME=${PH_NAME:-$(basename "$0" .sh)}
T=
PH_PIDS=()
PX_PREFIX=()
passed=0
failed=0

# --- results ----------------------------------------------------------------

ok() { passed=$((passed + 1)); }
bad() {
	failed=$((failed + 1))
	echo "FAIL: $*"
}

# check NAME CMD...: passes when CMD succeeds.
check() {
	local name=$1
	shift
	if "$@"; then ok; else bad "$name (command: $*)"; fi
}

# expect NAME TEXT PATTERN: grep -E PATTERN in TEXT.
expect() {
	if grep -qE -- "$3" <<<"$2"; then ok; else
		bad "$1: no match for /$3/ in:"
		printf '%s\n' "$2" | head -40 | sed 's/^/  | /'
	fi
}

# refuse NAME TEXT PATTERN: PATTERN must not be in TEXT.
refuse() {
	if grep -qE -- "$3" <<<"$2"; then
		bad "$1: unexpected /$3/ in:"
		printf '%s\n' "$2" | head -40 | sed 's/^/  | /'
	else ok; fi
}

# equal NAME GOT WANT
equal() {
	if [ "$2" = "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi
}

# --- life cycle -------------------------------------------------------------

# ph_begin NAME TOOL...: makes the temp dir $T, arms the cleanup, and stops
# loudly (exit 77, "cannot run") when a tool is missing.
ph_begin() {
	local tool missing=()
	PH_NAME=$1
	shift
	for tool in "$@"; do
		command -v "$tool" >/dev/null 2>&1 ||
			[ -x "/usr/sbin/$tool" ] || missing+=("$tool")
	done
	if [ ! -x "$PINHOLE" ]; then
		echo "$PH_NAME: CANNOT RUN: $PINHOLE is not an executable" >&2
		exit 77
	fi
	if [ "${#missing[@]}" -gt 0 ]; then
		echo "$PH_NAME: CANNOT RUN (SKIPPED): missing ${missing[*]};" \
			"scripts/deps.sh installs them" >&2
		exit 77
	fi
	PATH=$PATH:/usr/sbin:/sbin
	T=$(mktemp -d "${TMPDIR:-/tmp}/ph-$PH_NAME.XXXXXX") || exit 1
	# pinhole run's tool caches in the scenario's directory, not in the
	# home of whoever runs the tests (run_home.sh checks the default).
	export XDG_CACHE_HOME=$T/xdg-cache
	trap ph_cleanup EXIT
	trap 'exit 130' INT TERM HUP
}

# Kills every process group started with spawn, then removes $T.
ph_cleanup() {
	local p i
	for p in "${PH_PIDS[@]}"; do
		kill -TERM -- "-$p" 2>/dev/null
	done
	for p in "${PH_PIDS[@]}"; do
		for ((i = 0; i < 100; i++)); do
			pid_done "$p" && break
			sleep 0.02
		done
		kill -KILL -- "-$p" 2>/dev/null	# stragglers of the group
	done
	[ "${#PH_PIDS[@]}" -eq 0 ] || wait "${PH_PIDS[@]}" 2>/dev/null
	if [ -n "$T" ] && [ -z "${PH_KEEP:-}" ]; then
		rm -rf "$T"
	elif [ -n "$T" ]; then
		echo "$PH_NAME: kept $T"
	fi
}

# ph_end: prints the summary line and exits 0 only when nothing failed.
ph_end() {
	echo "$PH_NAME: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

# spawn NAME CMD...: runs CMD in the background in a session of its own,
# stdout in $T/NAME.out, stderr in $T/NAME.err.  Sets SPAWNED to its pid
# (which is also its process group id).
spawn() {
	local name=$1
	shift
	setsid "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null &
	SPAWNED=$!
	PH_PIDS+=("$SPAWNED")
}

# --- waiting ----------------------------------------------------------------

# wait_for SECS CMD...: polls CMD every 20 ms until it succeeds; fails after
# SECS seconds.
wait_for() {
	local n=$(($1 * 50))
	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.02
		n=$((n - 1))
	done
	"$@"
}

# Is PID gone or a zombie (so `wait PID` will not block)?
pid_done() {
	local st
	[ -r "/proc/$1/stat" ] || return 0
	st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 0
	[ "$st" = Z ] || [ -z "$st" ]
}

# port_listening PORT [tcp|udp]: does anything listen on PORT (any address)?
port_listening() {
	local hex proto=${2:-tcp} state=0A
	hex=$(printf '%04X' "$1")
	[ "$proto" = udp ] && state=07
	awk -v p=":$hex" -v s="$state" '
		NR > 1 && substr($2, length($2) - 4) == p && $4 == s { f = 1 }
		END { exit !f }' "/proc/net/$proto" "/proc/net/${proto}6" 2>/dev/null
}

# rand_port: a port below the ephemeral range that nothing listens on.  A
# race with another program is possible; the start helpers retry on a
# failed bind.
rand_port() {
	local p i
	for ((i = 0; i < 50; i++)); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		if ! port_listening "$p" tcp && ! port_listening "$p" udp; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

have_ipv6() { grep -q '^00000000000000000000000000000001 ' /proc/net/if_inet6 2>/dev/null; }

# file_has FILE PATTERN: grep -E PATTERN in FILE.
file_has() { grep -qE -- "$2" "$1" 2>/dev/null; }

# count_in FILE PATTERN: number of lines matching.
count_in() { grep -cE -- "$2" "$1" 2>/dev/null || true; }

# --- certificates -------------------------------------------------------------

# make_ca KEY CERT CN: a self-signed P-256 CA valid for a day; openssl's
# messages are added to "log" beside KEY, and shown when it fails.
make_ca() {
	local log
	log=$(dirname "$1")/log
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -keyout "$1" -out "$2" -days 1 -subj "/CN=$3" \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign \
		>>"$log" 2>&1 || { tail -20 "$log"; return 1; }
}

# gen_pin_ca: the CA an intercepting `pinhole proxy` signs with, pinned
# in its policy as "ca cert $T/pin-ca.pem key $T/pin/ca.key" (the key
# 0600); the clients trust it, the origins (gen_certs' CA) never do.
gen_pin_ca() {
	mkdir -p "$T/pin" &&
		make_ca "$T/pin/ca.key" "$T/pin-ca.pem" "pinhole pinned test CA" &&
		chmod 600 "$T/pin/ca.key"
}

# gen_certs: a test CA ($T/ca.pem) and a server certificate
# ($T/server.pem, $T/server.key) for web.test, other.test, a.test, b.test,
# ok.test and 127.0.0.1 (and *.test, which OpenSSL does not match below a
# one-label suffix), valid for a day.
gen_certs() {
	local d=$T/pki
	mkdir -p "$d"
	make_ca "$d/ca.key" "$T/ca.pem" "pinhole test CA" || return 1
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$T/server.key" -out "$d/server.csr" \
		-subj "/CN=web.test" >>"$d/log" 2>&1 || { cat "$d/log"; return 1; }
	cat >"$d/ext" <<-'EOF'
		basicConstraints=CA:FALSE
		keyUsage=critical,digitalSignature
		extendedKeyUsage=serverAuth
		subjectAltName=DNS:web.test,DNS:other.test,DNS:a.test,DNS:b.test,DNS:ok.test,DNS:*.test,IP:127.0.0.1
	EOF
	openssl x509 -req -in "$d/server.csr" -CA "$T/ca.pem" \
		-CAkey "$d/ca.key" -CAcreateserial -out "$T/server.pem" -days 1 \
		-extfile "$d/ext" >>"$d/log" 2>&1 || { cat "$d/log"; return 1; }
}

# --- nginx --------------------------------------------------------------------

# nginx_serve [-k] NAME PIDVAR PORTVARS CONF-FN: nginx in the foreground
# as one process of the calling user (master_process off), so as root and
# as anyone else, and a child of the test (spawn NAME, its pid in PIDVAR),
# its files in $T/NAME (nginx.conf, error.log, access.log, stderr, temp
# directories).  Each variable named in PORTVARS (space-separated) gets a
# free port (rand_port, all different); CONF-FN DIR then prints what
# follows the preamble inside http { } (directives, server blocks) for
# those ports.  A bind that loses the race for a port is retried with
# others, 10 times at most; -k: the ports are set already (URLs name
# them), so that is a failure.  Fails, with nginx's messages, when nginx
# did not serve every port.
nginx_serve() {
	local keep='' name d pidvar conf_fn i v p pid taken
	local -a vars ports
	[ "$1" != -k ] || { keep=1 && shift; }
	name=$1 d=$T/$1 pidvar=$2 conf_fn=$4
	read -ra vars <<<"$3"
	mkdir -p "$d"
	for ((i = 0; i < 10; i++)); do
		ports=()
		for v in "${vars[@]}"; do
			[ -n "$keep" ] || { p=$(rand_port) && printf -v "$v" %s "$p"; } ||
				return 1
			ports+=("${!v}")
		done
		taken=$(printf '%s\n' "${ports[@]}" | sort | uniq -d)
		[ -z "$taken" ] || continue
		{
			cat <<-EOF
				daemon off;
				master_process off;
				pid $d/nginx.pid;
				error_log $d/error.log warn;
				events { worker_connections 1024; }
				http {
					access_log $d/access.log;
					client_body_temp_path $d/body;
					proxy_temp_path $d/proxy;
					fastcgi_temp_path $d/fastcgi;
					uwsgi_temp_path $d/uwsgi;
					scgi_temp_path $d/scgi;
			EOF
			"$conf_fn" "$d"
			echo "}"
		} >"$d/nginx.conf" || return 1
		spawn "$name" nginx -e "$d/stderr" -p "$d" -c "$d/nginx.conf"
		pid=$SPAWNED
		printf -v "$pidvar" %s "$pid"
		wait_for 10 nginx_up "$pid" "${ports[@]}"
		if ports_listening "${ports[@]}" && ! pid_done "$pid"; then
			return 0
		fi
		kill -- "-$pid" 2>/dev/null
		grep -q 'in use' "$d/stderr" "$d/error.log" "$T/$name.err" \
			2>/dev/null || break
		if [ -n "$keep" ]; then
			echo "$PH_NAME: port ${ports[*]} taken; URLs name it, giving up"
			break
		fi
	done
	echo "$PH_NAME: nginx $name did not start:"
	cat "$d/stderr" "$d/error.log" "$T/$name.err" 2>/dev/null | tail -20
	return 1
}

# ports_listening PORT...: does each PORT have a listener?
ports_listening() {
	local p
	for p; do port_listening "$p" || return 1; done
}

# nginx_up PID PORT...: are all the ports listening, or has PID died?
nginx_up() {
	local pid=$1
	shift
	ports_listening "$@" || pid_done "$pid"
}

# start_nginx: static HTTP on 127.0.0.1:$H_PORT (and [::1] when there is
# IPv6), HTTPS on 127.0.0.1:$S_PORT with $T/server.pem, serving $T/www.
# /whoami answers "host=HOST uri=REQUEST-URI"; /upload/ stores PUT bodies
# under $T/up/upload/.  Needs gen_certs first.  nginx_serve runs it; its
# pid is NGINX_PID.
start_nginx() {
	mkdir -p "$T/www" "$T/up"
	[ -e "$T/www/index.html" ] || echo "hello from nginx" >"$T/www/index.html"
	nginx_serve nginx NGINX_PID "H_PORT S_PORT" nginx_conf
}
nginx_conf() {
	local v6=
	have_ipv6 && v6="listen [::1]:$H_PORT;"
	# The benches load it: no access log (the last access_log wins here).
	cat <<-EOF
		access_log off;
		default_type application/octet-stream;
		keepalive_requests 100000;
		large_client_header_buffers 8 32k;
		server {
			listen 127.0.0.1:$H_PORT;
			$v6
			listen 127.0.0.1:$S_PORT ssl;
			ssl_certificate $T/server.pem;
			ssl_certificate_key $T/server.key;
			root $T/www;
			location /whoami { return 200 "host=\$host uri=\$request_uri\n"; }
			location /upload/ {
				root $T/up;
				dav_methods PUT;
				create_full_put_path on;
				client_max_body_size 100m;
			}
		}
	EOF
}

# --- ad-hoc servers -----------------------------------------------------------

# start_socat NAME [udp] SOCAT-ARGS...: starts socat listening on a free
# 127.0.0.1 port ("@PORT@" in the arguments is replaced by it), waits until
# it listens, and sets SOCAT_PORT.
start_socat() {
	local name=$1 proto=tcp i a args
	shift
	if [ "${1:-}" = udp ]; then
		proto=udp
		shift
	fi
	for ((i = 0; i < 10; i++)); do
		SOCAT_PORT=$(rand_port) || return 1
		args=()
		for a in "$@"; do args+=("${a//@PORT@/$SOCAT_PORT}"); done
		spawn "$name" socat "${args[@]}"
		wait_for 5 port_listening "$SOCAT_PORT" "$proto" && return 0
		pid_done "$SPAWNED" || kill -- "-$SPAWNED" 2>/dev/null
	done
	echo "$PH_NAME: socat $name did not start:"
	cat "$T/$name.err"
	return 1
}

# start_dnsmasq RECORD-OPTIONS...: an authoritative-only DNS server for
# *.test on 127.0.0.1:$DNS_PORT (UDP and TCP).
start_dnsmasq() {
	local i user=()
	[ "$(id -u)" -eq 0 ] && user=(--user=root)
	for ((i = 0; i < 10; i++)); do
		DNS_PORT=$(rand_port) || return 1
		spawn dnsmasq dnsmasq --no-resolv --no-hosts --no-daemon \
			--port="$DNS_PORT" --listen-address=127.0.0.1 \
			--bind-interfaces --conf-file=/dev/null --pid-file= \
			--log-facility=- --local=/test/ "${user[@]}" "$@"
		if wait_for 5 port_listening "$DNS_PORT" udp; then
			DNSMASQ_PID=$SPAWNED
			return 0
		fi
		pid_done "$SPAWNED" || kill -- "-$SPAWNED" 2>/dev/null
	done
	echo "$PH_NAME: dnsmasq did not start:"
	cat "$T/dnsmasq.err"
	return 1
}

# --- the proxy ----------------------------------------------------------------

# start_proxy NAME POLICY [PROXY-OPTIONS...]: runs `pinhole proxy` on
# 127.0.0.1:0 with its audit log in $T/NAME.log and stderr in
# $T/NAME.err, and waits for its "listening on" line.  Sets PX_PORT,
# PX_PID, PX_LOG, PX_ERR.  A command in the array PX_PREFIX (prlimit, say)
# runs it.
start_proxy() {
	local name=$1 policy=$2
	shift 2
	PX_LOG=$T/$name.log
	PX_ERR=$T/$name.err
	spawn "$name" "${PX_PREFIX[@]}" "$PINHOLE" proxy -p "$policy" --listen 127.0.0.1:0 \
		--log "$PX_LOG" "$@"
	PX_PID=$SPAWNED
	wait_for 10 proxy_up "$PX_ERR" "$PX_PID"
	if ! file_has "$PX_ERR" '^pinhole: listening on '; then
		echo "$PH_NAME: the proxy did not start:"
		sed 's/^/  | /' "$PX_ERR"
		return 1
	fi
	PX_PORT=$(sed -n 's/^pinhole: listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' \
		"$PX_ERR" | head -1)
	[ -n "$PX_PORT" ]
}

# proxy_up ERRFILE PID: has it printed where it listens, or died?
proxy_up() { file_has "$1" '^pinhole: listening on ' || pid_done "$2"; }

# sanitizer_clean NAME ERRFILE: no ASan/UBSan/LSan report in ERRFILE.
sanitizer_clean() {
	if file_has "$2" 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: (Address|Undefined|Leak)'; then
		bad "$1: sanitizer report in $2:"
		grep -E -A30 'ERROR: |runtime error:' "$2" | head -60 | sed 's/^/  | /'
	else
		ok
	fi
}

# wait_exit PID SECS: waits (bounded) for child PID to end; sets EXIT_STATUS
# (or 255 when it did not end in time).
wait_exit() {
	local p keep=()
	if wait_for "$2" pid_done "$1"; then
		wait "$1" 2>/dev/null
		EXIT_STATUS=$?
		# Reaped: its number may be reused, so cleanup must not kill it.
		for p in "${PH_PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
		PH_PIDS=("${keep[@]}")
	else
		EXIT_STATUS=255
	fi
}

# stop_proxy NAME [PID ERRFILE]: SIGTERM, then the proxy must exit 0 within
# 15 s with no sanitizer report.
stop_proxy() {
	local name=$1 pid=${2:-$PX_PID} err=${3:-$PX_ERR}
	kill -TERM "$pid" 2>/dev/null
	wait_exit "$pid" 15
	equal "$name: proxy exit status" "$EXIT_STATUS" 0
	[ "$EXIT_STATUS" -eq 0 ] || tail -20 "$err" | sed 's/^/  | /'
	sanitizer_clean "$name" "$err"
}

# px_curl ARGS...: curl through the proxy, quiet, bounded in time.
px_curl() {
	curl -q -sS --max-time 30 -x "http://127.0.0.1:$PX_PORT" "$@"
}

# fetch URL [CURL-ARGS...]: sets CODE, BODY and HEADERS (of the final
# response; with CONNECT also the proxy's), via the proxy.
fetch() {
	local url=$1
	shift
	CODE=$(px_curl -o "$T/fetch.body" -D "$T/fetch.head" \
		-w '%{http_code}' "$@" "$url" 2>"$T/fetch.err")
	CURL_RC=$?
	BODY=$(cat "$T/fetch.body" 2>/dev/null)
	HEADERS=$(tr -d '\r' <"$T/fetch.head" 2>/dev/null)
	rm -f "$T/fetch.body" "$T/fetch.head"
}

# raw OUTFILE SECS [PORT]: sends standard input to the proxy on a new
# connection (write side left open) and keeps what comes back until the
# proxy closes, for at most SECS seconds.  Returns 124 on timeout.
raw() {
	local out=$1 secs=$2 port=${3:-$PX_PORT} fd rc writer
	exec {fd}<>"/dev/tcp/127.0.0.1/$port" || return 1
	cat <&0 >&"$fd" 2>/dev/null &	# explicit <&0: not /dev/null
	writer=$!
	timeout "$secs" cat <&"$fd" >"$out" 2>/dev/null
	rc=$?
	wait "$writer" 2>/dev/null
	exec {fd}>&-
	return "$rc"
}

# rawreq FORMAT [ARG...]: printf FORMAT to the proxy on a new connection
# (see raw, 10 s at most); sets RAW (the reply, CR removed), RAW_STATUS
# (its first status code) and RAW_RC.
rawreq() {
	# shellcheck disable=SC2059
	printf "$@" | raw "$T/raw.out" 10
	RAW_RC=$?
	RAW_STATUS=$(raw_status "$T/raw.out")
	RAW=$(tr -d '\r' <"$T/raw.out")
}

# raw_status FILE: the status code of the first response in FILE.
raw_status() { head -1 "$1" | sed -n 's/^HTTP\/1\.[01] \([0-9]*\) .*/\1/p' | tr -d '\r'; }

# send FD FORMAT [ARG...]: printf to FD in a subshell, so that a peer that
# has closed costs an error status, not the script (SIGPIPE).
send() {
	local fd=$1
	shift
	# shellcheck disable=SC2059
	(printf "$@" >&"$fd") 2>/dev/null
}

# open_conn: a new connection to the proxy on fd $CONN.
open_conn() { exec {CONN}<>"/dev/tcp/127.0.0.1/${1:-$PX_PORT}"; }

# read_response FD SECS [nobody]: reads one response (head, then a
# Content-Length body unless "nobody", as for HEAD) from FD; sets
# RESP_STATUS, RESP_HEAD (CR removed) and RESP_BODY.  Fails when nothing
# complete arrives in SECS seconds.
read_response() {
	local fd=$1 secs=$2 line len=0
	RESP_STATUS='' RESP_HEAD='' RESP_BODY=''
	IFS= read -r -t "$secs" -u "$fd" line || return 1
	line=${line%$'\r'}
	RESP_STATUS=$(sed -n 's/^HTTP\/1\.[01] \([0-9]*\).*/\1/p' <<<"$line")
	RESP_HEAD=$line
	while IFS= read -r -t "$secs" -u "$fd" line; do
		line=${line%$'\r'}
		[ -z "$line" ] && break
		RESP_HEAD+=$'\n'$line
		case ${line,,} in
		content-length:*) len=${line#*:} len=${len// /} ;;
		esac
	done
	[ -z "$line" ] || return 1
	if [ "$len" -gt 0 ] && [ "${3:-}" != nobody ]; then
		IFS= read -r -t "$secs" -u "$fd" -N "$len" RESP_BODY || return 1
	fi
	return 0
}

# --- the audit log --------------------------------------------------------------

# log_query LOG JQ-FILTER: runs jq on every record (-c output).
log_query() { jq -c "$2" "$1" 2>/dev/null; }

# audit_wellformed NAME LOG: every line is one JSON object with the fields
# and types of the contract (DESIGN.md "Audit log").
audit_wellformed() {
	local name=$1 log=$2 lines objs badrec
	lines=$(wc -l <"$log")
	objs=$(jq -R -c 'try (fromjson | type) catch "unparsable"' "$log" |
		grep -c '^"object"$')
	if [ "$lines" -gt 0 ] && [ "$lines" -eq "$objs" ]; then ok; else
		bad "$name: $objs of $lines log lines are JSON objects"
		jq -R -c 'select((try fromjson catch null) == null)' "$log" |
			head -5 | sed 's/^/  | /'
	fi
	badrec=$(jq -c 'select(
		(.ts | type != "string" or (test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$") | not)) or
		(.sandbox | type != "string") or
		(.conn | type != "number") or
		(.event != "request" and .event != "end") or
		(has("port") and (.port | type != "number")) or
		(has("status") and (.status | type != "number")) or
		(has("bytes_up") and (.bytes_up | type != "number")) or
		(has("bytes_down") and (.bytes_down | type != "number")) or
		(has("ms") and (.ms | type != "number")) or
		(has("rule") and (.rule | type != "string" or (test("^.+:[0-9]+$") | not))) or
		(has("path") and (.path | type != "string" or contains("?"))) or
		(.event == "request" and .decision != "allow" and .decision != "deny") or
		(.event == "request" and .decision == "deny" and (.reason | type != "string")) or
		(.event == "end" and ((.bytes_up | type != "number") or (.bytes_down | type != "number"))))' \
		"$log" 2>&1 | head -5)
	if [ -z "$badrec" ]; then ok; else
		bad "$name: records break the audit contract:"
		printf '%s\n' "$badrec" | sed 's/^/  | /'
	fi
}

# --- pinhole run --------------------------------------------------------------

# prun ARGS...: `pinhole run --log $T/audit.jsonl ARGS...` started in $W
# (default $T/work) with stdin from /dev/null; sets RC, OUT and ERR.
prun() {
	local w=${W:-$T/work}
	mkdir -p "$w"
	(cd "$w" && "$PINHOLE" run --log "${RUN_LOG:-$T/audit.jsonl}" "$@") \
		>"$T/prun.out" 2>"$T/prun.err" </dev/null
	RC=$?
	OUT=$(cat "$T/prun.out")
	ERR=$(cat "$T/prun.err")
}

# last_line TEXT: its last line.
last_line() { printf '%s\n' "$1" | tail -1; }
