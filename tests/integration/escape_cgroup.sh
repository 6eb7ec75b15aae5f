#!/usr/bin/env bash
# Scenario: the sandbox's own cgroup (issue 9, item 20): where the caller
# may make one (root here: the cgroup v1 pids and memory hierarchies),
#   bomb      forkers together stop at --limit-pids, root too (the PID
#             namespace's pid_max alone lets root have N + 299)
#   hog       processes each under RLIMIT_AS together meet the memory
#             limit of the cgroup: the OOM killer ends some
#   raise     the command cannot write its cgroup's limits, nor move
#             itself to the parent: /sys is read-only inside
#   gone      the cgroup directories are gone after the run, also when
#             pinhole run is killed (its keeper removes them)
# and everywhere (uid 65534 too):
#   ns        /proc/self/cgroup inside says "/" and nothing of the host
#   verbose   -v says which cgroup, or that the rlimits are the only limits
# usage: escape_cgroup.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin escape_cgroup timeout
PROBE=$(dirname "$PINHOLE")/probe_cgroup
if [ ! -x "$PROBE" ]; then
	echo "$PH_NAME: CANNOT RUN: no $PROBE (ph_probe(cgroup))" >&2
	exit 77
fi
SEE_PROBE=(--ro-bind "$(dirname "$PROBE")")
# LeakSanitizer, in a sanitized build, would need a thread at exit.
NOLSAN=(--setenv ASAN_OPTIONS detect_leaks=0)

# Can this caller make a cgroup, as pinhole should find?  Said here by the
# shell alone: v2 delegated with pids, or the v1 pids cgroup writable.
usable() {
	local v1 v2
	v2=$(sed -n 's/^0:://p' /proc/self/cgroup)
	v1=$(sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}pids\(,[^:]*\)\{0,1\}:\(.*\)$/\3/p' /proc/self/cgroup)
	if [ -n "$v2" ] && [ -d /sys/fs/cgroup/unified ]; then
		v2=/sys/fs/cgroup/unified$v2
	elif [ -n "$v2" ]; then
		v2=/sys/fs/cgroup$v2
	fi
	{ [ -n "$v2" ] && grep -qw pids "$v2/cgroup.controllers" 2>/dev/null &&
		[ -w "$v2/cgroup.procs" ] && [ -w "$v2/cgroup.subtree_control" ]; } ||
		{ [ -n "$v1" ] && [ -w "/sys/fs/cgroup/pids$v1/cgroup.procs" ]; }
}

# The directories of the -v line "pinhole: cgroup: v1 pids in DIR, ...".
cg_dirs() {
	sed -n 's/^pinhole: cgroup: //p' <<<"$1" | tr ',;' '\n\n' |
		sed -n 's/^ *v[12] [a-z ]* in \(\/.*\)$/\1/p'
}

# --- everywhere ---------------------------------------------------------------
prun -- cat /proc/self/cgroup
equal "ns: status" "$RC" 0
expect "ns: the v2 line says /" "$OUT" '^0::/$'
refuse "ns: no host path" "$OUT" '^[0-9]+:[^:]*:/.'
prun -v --limit-pids none -- true
refuse "verbose: no limit, no cgroup" "$ERR" '^pinhole: cgroup:'

if ! usable; then
	# --- no cgroup: the rlimits alone --------------------------------------
	echo "$PH_NAME: no cgroup can be made by uid $(id -u) here: only the" \
		"rlimits are checked (the cgroup checks run as root)"
	prun -v --limit-pids 4096 --limit-memory 64M -- true
	equal "verbose: status" "$RC" 0
	expect "verbose: no pids cgroup, said why" "$ERR" \
		'^pinhole: cgroup: no pids cgroup \(.+\)'
	expect "verbose: the rlimits only" "$ERR" \
		'^pinhole: cgroup: .*; the limits are the rlimits only$'
	prun "${SEE_PROBE[@]}" -- "$PROBE" raise
	expect "raise: no cgroup of its own" "$OUT" '^raise: no cgroup found$'
	ph_end
fi

# --- a cgroup -----------------------------------------------------------------
prun -v --limit-pids 4096 --limit-memory 64M -- true
equal "verbose: status" "$RC" 0
expect "verbose: the pids cgroup" "$ERR" '^pinhole: cgroup: v[12] pids( and memory)? in /'
expect "verbose: the memory cgroup" "$ERR" '^pinhole: cgroup: .*v[12] (pids and )?memory in /'
dirs=$(cg_dirs "$ERR")
check "gone: the -v line names directories" test -n "$dirs"
for d in $dirs; do
	check "gone: $d after the run" test ! -e "$d"
done

# bomb: 4 forkers together; the cgroup counts PID 1, the prober and them.
prun "${SEE_PROBE[@]}" "${NOLSAN[@]}" --limit-pids 50 -- timeout 60 "$PROBE" bomb 4
equal "bomb: the run ends" "$RC" 0
got=$(sed -n 's/^bomb: [0-9]* forkers held //p' <<<"$OUT")
check "bomb: at most 50 processes in the sandbox (held ${got:-none} + 6)" \
	test "${got:-9999}" -le 44

# hog: 3 x 40 MiB, each under RLIMIT_AS (64M), together over the cgroup's.
if grep -q __asan_init "$PROBE"; then
	echo "$PH_NAME: probe_cgroup is built with AddressSanitizer, which" \
		"cannot start under RLIMIT_AS: the hog checks are left out"
else
	prun "${SEE_PROBE[@]}" --limit-memory 64M -- "$PROBE" hog 40 1
	expect "hog: 40 MiB alone is allowed" "$OUT" '^hog: held 1 of 1, killed 0$'
	prun "${SEE_PROBE[@]}" --limit-memory 64M -- "$PROBE" hog 40 3
	expect "hog: 3 x 40 MiB together are not" "$OUT" \
		'^hog: held [01] of 3, killed [1-3]$'
fi

# raise: the limits and the parent's cgroup.procs, read-only (a memory
# cgroup too, unless the prober is sanitized: see above).
MEM=(--limit-memory 64M)
grep -q __asan_init "$PROBE" && MEM=()
prun -v "${SEE_PROBE[@]}" "${NOLSAN[@]}" --limit-pids 4096 "${MEM[@]}" -- \
	"$PROBE" raise
expect "raise: its pids cgroup is seen" "$OUT" '^found /sys/fs/cgroup/.*/pinhole-[0-9]+$'
expect "raise: pids.max tried" "$OUT" '^write pids.max: '
refuse "raise: nothing written" "$OUT" ': ok$'
expect "raise: the parent's cgroup.procs refused" "$OUT" '^write cgroup.procs: refused '
for d in $(cg_dirs "$ERR"); do
	check "gone: $d after the raise run" test ! -e "$d"
done

# gone: pinhole run killed; the keeper still removes the cgroup.
W=$T/work
mkdir -p "$W"
cd "$W" || exit 1 # the run's start directory: the git guard looks there
spawn killed "$PINHOLE" run -v --limit-pids 4096 --log "$T/killed.jsonl" -- \
	sleep 600
killed=$SPAWNED
wait_for 10 file_has "$T/killed.err" '^pinhole: cgroup: v'
dirs=$(cg_dirs "$(cat "$T/killed.err")")
check "gone: the killed run had a cgroup" test -n "$dirs"
{
	kill -KILL "$killed"
	wait "$killed"
} 2>/dev/null # bash's "Killed" notice
for d in $dirs; do
	wait_for 10 test ! -e "$d"
	check "gone: $d after pinhole run was killed" test ! -e "$d"
done

ph_end
