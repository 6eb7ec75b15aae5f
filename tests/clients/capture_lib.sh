#!/usr/bin/env bash
# capture_lib.sh: the fixtures of the capture suite (issue 12: programs
# that ignore every proxy variable), sourced after
# tests/integration/lib.sh and tls_lib.sh:
#	. "$SRC/tests/integration/lib.sh"	# with "$@" = PATH-TO-PINHOLE
#	. "$SRC/tests/integration/tls_lib.sh"
#	. "$SRC/tests/clients/capture_lib.sh"
#	cap_begin NAME TOOL...	# ph_begin, test CA, nginx (HTTPS + HTTP)
#	cap_web_policy		# $T/p.conf: web.test, plain.test, denied.test
#	cap_run PROGRAM ...	# `pinhole run -p $T/p.conf -- timeout 30 ...`
#	cap_four NAME		# the four cases every client program prints
#	start_sshd		# OpenSSH on 127.0.0.1:$SSH_PORT (root or not)
#	ph_end
#
# The web fixture: nginx (start_nginx) serves $T/www over HTTPS on
# 127.0.0.1:$S_PORT (certificate for web.test from the test CA) and plain
# HTTP on 127.0.0.1:$H_PORT; /hello.txt is "hello-capture".  The policy
# pins web.test, plain.test and denied.test to 127.0.0.1 with `resolve`
# and allows web.test:$S_PORT (intercepted: `methods GET`, so that the
# program needs no trust but the run CA that pinhole installs) and
# plain.test:$H_PORT (`methods GET`: each request decided); denied.test
# is pinned but allowed nowhere, and $CLOSED_PORT is a port no rule names
# and nothing listens on.
#
# A client program takes four URLs (HTTPS, HTTP, the denied name, the
# allowed name on $CLOSED_PORT) and prints one line per case:
#	https status=200 body=hello-capture
#	http status=200 body=hello-capture
#	denied error=CLASS ms=N
#	port error=CLASS ms=N
# CLASS: nxdomain (the name does not exist), refused (ECONNREFUSED),
# eai_again (a temporary lookup failure: the stub before issue 12),
# unreach (ENETUNREACH), timeout, or other:MESSAGE.  A case that worked
# when it should not prints "... status=N".
# shellcheck disable=SC2034	# the variables set are for the scripts
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	echo "capture_lib.sh: helpers sourced by tests/clients/capture_*.sh; not a test of its own"
	exit 0
fi

# A refusal must come at once: a lookup answered by the stub, a reset
# from the sandbox's own kernel.  Generous for a loaded CI machine.
CAP_FAST_MS=${CAP_FAST_MS:-3000}

ok() {
	passed=$((passed + 1))
	[ -z "${1:-}" ] || echo "ok: $1"
}
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else bad "$name (command: $*)"; fi
}
# expect NAME TEXT PATTERN: the run's output is printed once by the
# script, so a failure names only the pattern.
expect() {
	if grep -qE -- "$3" <<<"$2"; then ok "$1"; else
		bad "$1: no line matches /$3/ (the output is above)"
	fi
}
equal() {
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi
}

# cap_begin NAME TOOL...: ph_begin, the test CA and server certificate,
# nginx on $H_PORT/$S_PORT serving /hello.txt (checked directly, outside
# the sandbox), $CLOSED_PORT, and the work directory $W.
cap_begin() {
	ph_begin "$@"
	gen_certs >/dev/null || exit 1
	mkdir -p "$T/www"
	echo hello-capture >"$T/www/hello.txt"
	start_nginx || exit 1
	CLOSED_PORT=$(rand_port) || exit 1
	W=$T/work
	mkdir -p "$W"
	cap_direct_ok
}

# cap_direct_ok: the servers answer directly (so that a failure later is
# pinhole's or the client's, not the fixture's).
cap_direct_ok() {
	local got
	got=$(curl -q -sS --max-time 10 --cacert "$T/ca.pem" \
		--resolve "web.test:$S_PORT:127.0.0.1" "https://web.test:$S_PORT/hello.txt" 2>&1)
	equal "fixture: nginx answers over HTTPS directly" "$got" hello-capture
	got=$(curl -q -sS --max-time 10 "http://127.0.0.1:$H_PORT/hello.txt" 2>&1)
	equal "fixture: nginx answers over HTTP directly" "$got" hello-capture
	[ "$failed" -eq 0 ] || exit 1
}

# cap_web_policy [LINE...]: $T/p.conf for the web fixture, LINEs added.
cap_web_policy() {
	{
		echo "resolve web.test 127.0.0.1"
		echo "resolve plain.test 127.0.0.1"
		echo "resolve denied.test 127.0.0.1"
		echo "allow web.test:$S_PORT { private upstream-ca $T/ca.pem methods GET }"
		echo "allow plain.test:$H_PORT { private methods GET }"
		printf '%s\n' "$@"
	} >"$T/p.conf"
}

# The four URLs of a client program.
cap_urls() {
	CAP_URLS=("https://web.test:$S_PORT/hello.txt" "http://plain.test:$H_PORT/hello.txt"
		"http://denied.test:$H_PORT/hello.txt" "http://web.test:$CLOSED_PORT/hello.txt")
}

# cap_run ARGS...: `pinhole run -p $T/p.conf -- timeout 30 ARGS...` in $W,
# the environment pinhole gives and nothing removed from it; the whole run
# bounded too.  Output (both streams) in OUT, status in RC; the audit log
# is $T/audit.jsonl.
cap_run() {
	(cd "$W" && timeout 90 "$PINHOLE" run --log "$T/audit.jsonl" -p "$T/p.conf" \
		-- timeout 30 "$@") >"$T/run.out" 2>"$T/run.err" </dev/null
	RC=$?
	OUT=$(cat "$T/run.out" "$T/run.err")
	if file_has "$T/run.err" 'ERROR: (Address|Leak)Sanitizer|runtime error:'; then
		bad "pinhole run $*: sanitizer report:"
		grep -E -A20 'ERROR: |runtime error:' "$T/run.err" | head -30 | sed 's/^/  | /'
	fi
}

# show_out PREFIX: the last run's output, each line after PREFIX.
show_out() { printf '%s\n' "$OUT" | sed "s/^/$1: /"; }

# jq_has NAME FILTER: a record of the audit log matches FILTER.
jq_has() {
	if [ -n "$(jq -c "$2" "$T/audit.jsonl" 2>/dev/null | head -1)" ]; then
		ok "$1"
	else
		bad "$1: no record matches $2"
		if [ -z "${CAP_LOG_SHOWN:-}" ]; then
			echo "  the audit log's last records:"
			tail -12 "$T/audit.jsonl" 2>/dev/null | cut -c1-300 | sed 's/^/  | /'
			CAP_LOG_SHOWN=1
		fi
	fi
}

# jq_none NAME FILTER: no record matches FILTER (and the log parses).
jq_none() {
	local o
	if o=$(jq -c "$2" "$T/audit.jsonl" 2>&1) && [ -z "$o" ]; then ok "$1"; else
		bad "$1: records match $2:"
		printf '%s\n' "$o" | head -5 | cut -c1-300 | sed 's/^/  | /'
	fi
}

# fast NAME CASE: the line "CASE error=... ms=N" of OUT says N < CAP_FAST_MS.
fast() {
	local ms
	ms=$(sed -n "s/^$2 error=[^ ]* ms=\([0-9]*\).*/\1/p" <<<"$OUT" | head -1)
	if [ -n "$ms" ] && [ "$ms" -lt "$CAP_FAST_MS" ]; then ok "$1 ($ms ms)"; else
		bad "$1: '${ms:-no time}' ms, want < $CAP_FAST_MS"
	fi
}

# cap_four NAME: the client's four lines, then the audit log: the names
# looked up at the stub (synthetic for the allowed ones, NXDOMAIN for the
# denied one), the connections captured (via "capture", none through the
# explicit proxy: the program ignored the variables), the closed port
# refused and logged.
cap_four() {
	local n=$1
	if [ "$RC" -ne 0 ]; then
		bad "$n: pinhole run's status is $RC (the output is above)"
	else ok "$n: exit status 0"; fi
	expect "$n: HTTPS to an allowed name, captured and intercepted" "$OUT" \
		'^https status=200 body=hello-capture$'
	expect "$n: plain HTTP to an allowed name, captured" "$OUT" \
		'^http status=200 body=hello-capture$'
	expect "$n: a denied name does not exist" "$OUT" '^denied error=nxdomain '
	fast "$n: ... at once" denied
	expect "$n: an allowed name on a port no rule names: connection refused" \
		"$OUT" '^port error=refused '
	fast "$n: ... at once" port
	jq_has "$n: audit: web.test answered with a synthetic address" \
		'select(.event == "dns" and .host == "web.test" and .answer == "synthetic")'
	jq_has "$n: audit: denied.test answered NXDOMAIN" \
		'select(.event == "dns" and .host == "denied.test" and .answer == "nxdomain")'
	jq_has "$n: audit: the HTTPS request, captured, 200" \
		"select(.via == \"capture\" and .host == \"web.test\" and .port == $S_PORT and .path == \"/hello.txt\" and .status == 200)"
	jq_has "$n: audit: the HTTP request, captured, 200" \
		"select(.via == \"capture\" and .host == \"plain.test\" and .port == $H_PORT and .path == \"/hello.txt\" and .status == 200)"
	jq_has "$n: audit: the closed port refused, by name" \
		"select(.via == \"capture\" and .host == \"web.test\" and .port == $CLOSED_PORT and .decision == \"deny\" and (.reason | type == \"string\"))"
	jq_none "$n: audit: nothing went through the explicit proxy" \
		'select(.via == "proxy")'
	jq_none "$n: audit: denied.test was never connected to" \
		'select(.event != "dns" and .host == "denied.test")'
}

# --- OpenSSH ------------------------------------------------------------------------
#
# start_sshd: an OpenSSH server (/usr/sbin/sshd, Debian's openssh-server)
# on 127.0.0.1:$SSH_PORT that lets the user "nobody" in with the key
# $SSH_DIR/id (ed25519, made here; $SSH_DIR/id.pub authorised) and runs
# its commands with /bin/sh; host key made here too, its known_hosts line
# (for [git.test]:PORT and [127.0.0.1]:PORT) in $SSH_DIR/known_hosts.
#
# As root and as uid 65534 alike, without touching the host's /etc: sshd
# runs in a user and mount namespace of its own, `unshare -r -m`, where
# copies of /etc/passwd and /etc/shadow are bind-mounted over the real
# ones, giving nobody a home ($SSH_DIR/home) and the shell /bin/sh (its
# real one is nologin, which would refuse every command) and an unlocked
# shadow entry ("*", read by sshd when it can); then, in a user namespace
# nested in it (`unshare --map-user=65534 --map-group=65534`), sshd runs
# as uid 65534: an unprivileged sshd, which can let in only the user it
# runs as, needs no privilege separation directory (/run/sshd) and no
# sshd user.  The caller's own uid maps to that 65534, so every file of
# the test belongs to it inside.  The repositories that `git clone
# ssh://` reads are files of the test ($T/git) for the same reason.
start_sshd() {
	local i
	SSH_DIR=$T/ssh
	mkdir -p "$SSH_DIR/home"
	chmod 755 "$SSH_DIR" "$SSH_DIR/home"
	ssh-keygen -q -t ed25519 -N '' -C 'pinhole test host' -f "$SSH_DIR/host_key" ||
		return 1
	ssh-keygen -q -t ed25519 -N '' -C 'pinhole test user' -f "$SSH_DIR/id" ||
		return 1
	cp "$SSH_DIR/id.pub" "$SSH_DIR/authorized_keys"
	sed "s#^nobody:[^:]*:.*#nobody:x:65534:65534:nobody:$SSH_DIR/home:/bin/sh#" \
		/etc/passwd >"$SSH_DIR/passwd"
	grep -q "^nobody:x:65534:65534:nobody:$SSH_DIR/home:/bin/sh$" "$SSH_DIR/passwd" ||
		{ echo "$PH_NAME: no user nobody in /etc/passwd" && return 1; }
	echo 'nobody:*:19000:0:99999:7:::' >"$SSH_DIR/shadow"
	chmod 644 "$SSH_DIR/passwd" "$SSH_DIR/shadow"
	for ((i = 0; i < 10; i++)); do
		SSH_PORT=$(rand_port) || return 1
		cat >"$SSH_DIR/sshd_config" <<-EOF
			Port $SSH_PORT
			ListenAddress 127.0.0.1
			HostKey $SSH_DIR/host_key
			PidFile none
			AuthorizedKeysFile $SSH_DIR/authorized_keys
			StrictModes no
			UsePAM no
			PasswordAuthentication no
			KbdInteractiveAuthentication no
			PermitUserEnvironment no
			X11Forwarding no
			LogLevel VERBOSE
		EOF
		# shellcheck disable=SC2016	# expanded by the inner sh
		spawn sshd unshare -r -m sh -c '
			mount --bind "$1/passwd" /etc/passwd &&
			mount --bind "$1/shadow" /etc/shadow &&
			exec unshare --map-user=65534 --map-group=65534 \
				/usr/sbin/sshd -D -e -f "$1/sshd_config"' - "$SSH_DIR"
		SSHD_PID=$SPAWNED
		if wait_for 10 sshd_up && ! pid_done "$SSHD_PID"; then
			break
		fi
		pid_done "$SSHD_PID" || kill -- "-$SSHD_PID" 2>/dev/null
		grep -q 'in use' "$T/sshd.err" 2>/dev/null || break
	done
	if ! port_listening "$SSH_PORT" || pid_done "$SSHD_PID"; then
		echo "$PH_NAME: sshd did not start:"
		sed 's/^/  | /' "$T/sshd.err"
		return 1
	fi
	printf '[git.test]:%s,[127.0.0.1]:%s %s\n' "$SSH_PORT" "$SSH_PORT" \
		"$(cut -d' ' -f1-2 "$SSH_DIR/host_key.pub")" >"$SSH_DIR/known_hosts"
}
sshd_up() { port_listening "$SSH_PORT" || pid_done "$SSHD_PID"; }

# ssh_opts DIR: the options of every ssh here, the key and known_hosts in
# DIR: no user or system configuration, the host key pinned, no prompt.
ssh_opts() {
	printf '%s ' -F /dev/null -i "$1/id" -o "UserKnownHostsFile=$1/known_hosts" \
		-o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=10 \
		-o GlobalKnownHostsFile=/dev/null -o LogLevel=ERROR
}
