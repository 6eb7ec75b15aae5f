#!/usr/bin/env bash
# Escape scenario, namespaces, as the command inside sees them: its user,
# mount, PID, network, IPC and UTS namespaces are its own; it cannot see
# or signal a host process (even by its pid number), cannot join the
# host's namespaces, cannot reach the host's SysV IPC objects, and cannot
# set the hostname.  Prober: tests/escape/escape.c.
# usage: escape_ns.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/probe_lib.sh"
ph_begin escape_ns setsid
W=$T/work
probe_init "$W"

# A host process and SysV objects the sandbox must not reach.
spawn host-sleep sleep 120
host_pid=$SPAWNED
key=$((0x50480000 + $$ % 65536))
made=$("$PROBE" sysv-make "$key")
shm_id=$(sed -n 's/^sysv-make: shm \([0-9-]*\) .*/\1/p' <<<"$made")
check "SysV objects made outside ($made)" test "${shm_id:--1}" -ge 0

nsnames="user mnt pid net ipc uts"
outside=$(for n in $nsnames; do echo "$n $(readlink "/proc/self/ns/$n")"; done)
prun -- sh -c "
	for n in $nsnames; do echo \"\$n \$(readlink /proc/self/ns/\$n)\"; done
	[ -e /proc/$host_pid ] && echo host-pid-seen
	$PROBE kill $host_pid 15 kill $host_pid 0 sysv $key shmat ${shm_id:-0} \
		sethostname setns /proc/self/ns/net setns /proc/self/ns/uts \
		setns /proc/1/ns/mnt setns /proc/1/ns/net"
"$PROBE" sysv-rm "$key"
equal "status" "$RC" 0
for n in $nsnames; do
	in=$(sed -n "s/^$n //p" <<<"$OUT")
	out=$(sed -n "s/^$n //p" <<<"$outside")
	check "$n namespace of its own ($in, host $out)" \
		test -n "$in" -a "$in" != "$out"
done
refuse "host process not in /proc" "$OUT" '^host-pid-seen$'
refused "kill:$host_pid" ESRCH "$(grep -m1 "^kill:$host_pid:" <<<"$OUT")"
refused "kill:$host_pid" ESRCH "$(grep "^kill:$host_pid:" <<<"$OUT" | sed -n 2p)"
check "host process alive after the attempt" test "$(pid_done "$host_pid"; echo $?)" = 1
refused shmget ENOENT
refused msgget ENOENT
refused semget ENOENT
refused shmat 'EINVAL|EIDRM|EACCES'
refused sethostname EPERM
refused setns:/proc/self/ns/net EPERM
refused setns:/proc/self/ns/uts EPERM
refused setns:/proc/1/ns/mnt 'EACCES|EPERM'
refused setns:/proc/1/ns/net 'EACCES|EPERM'
none_through "namespaces"

ph_end
