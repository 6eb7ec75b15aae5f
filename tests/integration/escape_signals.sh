#!/usr/bin/env bash
# Escape scenario, signals and abstract Unix sockets, scoped by the
# network namespace and Landlock (ABI 6 scopes): the command cannot
# signal a host process, even by its pid number (not in its PID
# namespace), nor the sandbox's PID 1, which is outside its Landlock
# domain; it cannot connect to a host process's abstract socket (another
# network namespace), nor to an abstract socket made in its own network
# namespace by a process outside its domain (nsenter from the host).
# Controls: it can signal its own child and reach its own abstract
# socket, and the host's socket answers on the host.
# Prober: tests/escape/escape.c.
# usage: escape_signals.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/probe_lib.sh"
ph_begin escape_signals nsenter pgrep setsid
W=$T/work
probe_init "$W"
tag=ph-escape-$$-$RANDOM

# Outside: a host process and a listener on an abstract name (host netns).
spawn host-sleep sleep 120
host_pid=$SPAWNED
spawn host-listen "$PROBE" abstract-listen "$tag-host" "$T/host.ready"
wait_for 10 test -e "$T/host.ready"
ctl=$("$PROBE" abstract-connect "$tag-host")
got_through "abstract-connect:$tag-host" "$ctl"

cat >"$W/inside.sh" <<EOS
P=$PROBE
\$P abstract-listen $tag-inside inside.ready >/dev/null & l=\$!
\$P wait-file inside.ready 10
\$P abstract-connect $tag-inside
\$P wait-file go 20
\$P abstract-connect $tag-outside abstract-connect $tag-host
\$P kill 1 0 kill $host_pid 0 kill $host_pid 9
sleep 30 & k=\$!
\$P kill \$k 0 | sed "s/:\$k:/:child:/"
kill \$k \$l
EOS
cd "$W" || exit 1
spawn run "$PINHOLE" run --log "$T/audit.jsonl" -- sh inside.sh
run_pid=$SPAWNED
cd "$T" || exit 1
wait_for 10 test -e "$W/inside.ready"
# The command: a child of the sandbox's PID 1, itself pinhole run's child.
cmd=
find_cmd() {
	local c
	for c in $(pgrep -P "$run_pid"); do
		cmd=$(pgrep -P "$c" | head -1)
		[ -n "$cmd" ] && return 0
	done
	return 1
}
wait_for 10 find_cmd
check "the command found on the host ($cmd)" test -n "$cmd"
# In its user and network namespaces, not in its Landlock domain.
spawn ns-listen nsenter -t "${cmd:-0}" -U -n --preserve-credentials \
	"$PROBE" abstract-listen "$tag-outside" "$T/outside.ready"
wait_for 10 test -e "$T/outside.ready"
check "listener in the sandbox's network namespace" test -e "$T/outside.ready"
touch "$W/go"
wait_exit "$run_pid" 30
equal "status" "$EXIT_STATUS" 0
OUT=$(cat "$T/run.out")

got_through "abstract-connect:$tag-inside"
refused "abstract-connect:$tag-outside" EPERM
refused "abstract-connect:$tag-host" ECONNREFUSED
got_through kill:child
refused kill:1 EPERM
refused "kill:$host_pid" ESRCH "$(grep "^kill:$host_pid:" <<<"$OUT" | sed -n 1p)"
refused "kill:$host_pid" ESRCH "$(grep "^kill:$host_pid:" <<<"$OUT" | sed -n 2p)"
check "host process alive" test "$(pid_done "$host_pid"; echo $?)" = 1
none_through "signals and abstract sockets" \
	"$(grep -vE "^(abstract-connect:$tag-inside|kill:child):" <<<"$OUT")"

ph_end
