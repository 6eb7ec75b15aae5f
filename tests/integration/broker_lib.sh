#!/usr/bin/env bash
# broker_lib.sh: helpers of the broker scenarios (broker_*.sh), sourced
# after lib.sh (and ph_begin):
#	. "$(dirname "$0")/lib.sh"
#	. "$(dirname "$0")/broker_lib.sh"
#	ph_begin NAME setpriv python3 jq ...
#	bk_setup		$BK (the broker's directory), BK_UID, users
#	start_broker NAME CONF [ARGS...]	`pinhole proxy --broker` as BK_UID
#	brun UID DIR ARGS...	`pinhole run --broker` as UID in DIR: RC OUT ERR
#	brun_bg NAME UID DIR ARGS...	the same in the background: SPAWNED
#	as_uid UID CMD...	CMD as UID (root: setpriv), a clean environment
#
# As root the broker runs under its own uid (BK_UID=4243, no passwd entry:
# grants name users by number) and the clients under 4241 and 4242
# (BK_USERS); as anyone else everything runs as that user (BK_USERS holds
# one uid), and what needs distinct users is skipped by the scenario, said
# and counted (bk_skip).  Same rules as lib.sh: every file under $T, all
# traffic on loopback, readiness a polled condition.
# shellcheck disable=SC2034	# the variables set are for the scenarios
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	echo "broker_lib.sh: helpers sourced by broker_*.sh; not a test of its own"
	exit 0
fi

skipped=0

# bk_skip N WHY: N checks that cannot be made here, said.
bk_skip() {
	skipped=$((skipped + $1))
	echo "SKIP ($1 checks): $2"
}

# bk_end: ph_end, with the skipped checks counted on their own line;
# after a failure, the brokers' stderr first (why an engine's setup
# failed is said there, and the scratch directory goes with ph_end).
bk_end() {
	local f
	if [ "$failed" -ne 0 ]; then
		for f in "$T"/*.err; do
			[ -f "$f" ] || continue
			echo "--- $f (last 20 lines)"
			tail -20 "$f"
		done
	fi
	[ "$skipped" -eq 0 ] || echo "$PH_NAME: $skipped checks skipped (see SKIP lines)"
	ph_end
}

# bk_setup: $BK, the broker's own directory (its uid's, 0700) with
# secret/ (0700) for token files, run/ (0755) for the socket, log/ for
# the central log; conf/ (root's or the user's, 0755) for its
# configuration and policies; $T/u<UID> (0700) and $T/u<UID>/work for
# each client user.  $T itself is opened for traversal (0711).
bk_setup() {
	local u
	if [ "$(id -u)" -eq 0 ]; then
		BK_ROOT=1 BK_UID=4243 BK_USERS=(4241 4242)
	else
		BK_ROOT='' BK_UID=$(id -u) BK_USERS=("$(id -u)")
	fi
	chmod 711 "$T"
	BK=$T/broker
	mkdir -p "$BK/secret" "$BK/run" "$BK/log" "$T/conf"
	chmod 700 "$BK" "$BK/secret" "$BK/log"
	chmod 755 "$BK/run" "$T/conf"
	[ -z "$BK_ROOT" ] || chown -R "$BK_UID:$BK_UID" "$BK"
	# The broker reaches its socket's directory and nothing else of $BK:
	# the clients need run/ too, so $BK is 0711.
	chmod 711 "$BK"
	BK_SOCK=$BK/run/broker.sock
	BK_LOG=$BK/log/central.jsonl
	for u in "${BK_USERS[@]}"; do
		mkdir -p "$T/u$u/work" "$T/u$u/cache"
		chmod 700 "$T/u$u"
		[ -z "$BK_ROOT" ] || chown -R "$u:$u" "$T/u$u"
	done
}

# bk_secret NAME VALUE: $BK/secret/NAME holds VALUE, 0600, the broker's.
bk_secret() {
	(umask 077 && printf '%s\n' "$2" >"$BK/secret/$1")
	[ -z "$BK_ROOT" ] || chown "$BK_UID:$BK_UID" "$BK/secret/$1"
}

# asu UID: sets ASU to the command prefix that runs a program as UID (its
# gid the same number, no other groups; root: setpriv) with only PATH,
# HOME and a cache in the environment.  as_uid UID CMD...: runs CMD so.
asu() {
	ASU=()
	[ -z "$BK_ROOT" ] ||
		ASU=(setpriv --reuid="$1" --regid="$1" --clear-groups)
	ASU+=(env -i PATH=/usr/bin:/bin LC_ALL=C HOME="$T/u$1"
		XDG_CACHE_HOME="$T/u$1/cache")
}
as_uid() {
	asu "$1"
	shift
	"${ASU[@]}" "$@"
}

# broker_listening: does a Unix socket listen at $BK_SOCK (the kernel's
# table: no connection is made, so the broker sees no client)?
broker_listening() {
	awk -v p="$BK_SOCK" '$NF == p && $4 == "00010000" { f = 1 } END { exit !f }' \
		/proc/net/unix 2>/dev/null
}
broker_up() { broker_listening || pid_done "$BK_PID"; }

# start_broker NAME CONF [ARGS...]: `pinhole proxy -p CONF --broker
# $BK_SOCK --log $BK_LOG ARGS` as BK_UID, spawned (stderr $T/NAME.err);
# waits until it listens.  Sets BK_PID, BK_ERR.
start_broker() {
	local name=$1 conf=$2
	shift 2
	BK_ERR=$T/$name.err
	asu "$BK_UID"
	# From a directory the broker's uid can read.
	cd "$T/conf" || return 1
	spawn "$name" "${ASU[@]}" "$PINHOLE" proxy -p "$conf" \
		--broker "$BK_SOCK" --log "$BK_LOG" "$@"
	BK_PID=$SPAWNED
	cd - >/dev/null || return 1
	wait_for 10 broker_up
	if ! broker_listening || pid_done "$BK_PID"; then
		echo "$PH_NAME: the broker did not start:"
		sed 's/^/  | /' "$BK_ERR"
		return 1
	fi
}

# brun UID DIR ARGS...: `pinhole run --broker $BK_SOCK --log
# $T/u<UID>/audit.jsonl ARGS` as UID in DIR (stdin /dev/null, 120 s at
# most); sets RC, OUT, ERR (also in $T/u<UID>/run.out and run.err).
brun() {
	local u=$1 d=$2
	shift 2
	(cd "$d" && as_uid "$u" timeout 120 "$PINHOLE" run --broker "$BK_SOCK" \
		--log "$T/u$u/audit.jsonl" "$@") \
		>"$T/u$u/run.out" 2>"$T/u$u/run.err" </dev/null
	RC=$?
	OUT=$(cat "$T/u$u/run.out")
	ERR=$(cat "$T/u$u/run.err")
}

# brun_bg NAME UID DIR ARGS...: brun in the background, spawned as NAME
# ($T/NAME.out, $T/NAME.err; the log copy $T/u<UID>/NAME.jsonl).  Sets
# SPAWNED.
brun_bg() {
	local name=$1 u=$2 d=$3
	shift 3
	local here=$PWD
	cd "$d" || return 1
	asu "$u"
	spawn "$name" "${ASU[@]}" "$PINHOLE" run --broker "$BK_SOCK" \
		--log "$T/u$u/$name.jsonl" "$@"
	cd "$here" || return 1
}

# alive PID: not gone.
alive() { ! pid_done "$1"; }

# jq_has FILTER FILE: FILTER yields something for some line of FILE.
jq_has() { [ -n "$(jq -c "$1" "$2" 2>/dev/null)" ]; }
# jq_none FILTER FILE: FILTER runs and yields nothing for any line of FILE.
jq_none() { local o; o=$(jq -c "$1" "$2") && [ -z "$o" ]; }

# bk_scrape URL-OR-unix:PATH: GET /metrics from the broker; sets MBODY.
bk_scrape() {
	case $1 in
	unix:*) MBODY=$(curl -q -sS --max-time 10 --unix-socket "${1#unix:}" \
		http://localhost/metrics) ;;
	*) MBODY=$(curl -q -sS --max-time 10 "$1") ;;
	esac
}

# metric TEXT SERIES: the value of the sample SERIES (a name, or a name
# and its labels as the exposition writes them: a regular expression) in
# TEXT, or nothing.
metric() { grep -E -- "^$2 " <<<"$1" | head -1 | awk '{ print $2 }'; }
