#!/usr/bin/env bash
# Scenario: escape probes at the sandbox's edges (issue 9, items 6, 7, 12,
# 14, 20, 21, 22), each tried as the command inside would:
#   home      the start directory is the home, or holds it: refused
#   proc      /proc/sys is read-only by mount (EROFS, not Landlock's
#             EACCES): core_pattern cannot be written, even as root
#   stdio     a directory as standard input or output: refused (it would
#             open the host's tree through /proc/self/fd/0); closed: /dev/null
#   hidden    every default credential file appears empty; a hidden link
#             hides its target
#   binds     a bind onto a planted symbolic link stops the run (125);
#             behind a directory pinhole may not search, a hide is skipped
#             and the command cannot reach the file either
#   limits    a bounded fork bomb stops at --limit-pids and the run ends;
#             --limit-memory holds; the default limit is set
#   hostinfo  hostname, machine-id and PID 1's command line are neutral
# usage: escape_sandbox.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin escape_sandbox timeout
PROBE=$(dirname "$PINHOLE")/probe_limits
if [ ! -x "$PROBE" ]; then
	echo "$PH_NAME: CANNOT RUN: no $PROBE (ph_probe(limits))" >&2
	exit 77
fi
W=$T/work
mkdir -p "$W"
me=$(id -u)
# The prober's directory may lie under /tmp, which the view replaces.
SEE_PROBE=(--ro-bind "$(dirname "$PROBE")")

# --- home ---------------------------------------------------------------------
H=$T/home
mkdir -p "$H/proj"
HOME=$H W=$H prun -- sh -c 'echo in-home >.bashrc'
equal "home: start directory is the home: 125" "$RC" 125
expect "home: says why and what to do" "$ERR" 'holds the home directory.*~/\.bashrc.*--bind'
check "home: nothing planted" test ! -e "$H/.bashrc"
HOME=$H W=$T prun -- true
equal "home: a directory holding the home: 125" "$RC" 125
HOME=$H W=$H/proj prun -- true
equal "home: a project below the home runs" "$RC" 0
HOME=$H W=$H prun --bind "$H" -- sh -c 'echo on-purpose >.bashrc'
equal "home: --bind of it, on purpose" "$RC" 0
check "home: written on purpose" grep -q on-purpose "$H/.bashrc"
rm -f "$H/.bashrc"

# --- shared directories -----------------------------------------------------------
# /tmp itself (not a directory below it) would let the command plant or
# replace other users' and services' files; the command is only `true`.
W=/tmp prun -- true
equal "shared: /tmp as the start directory: 125" "$RC" 125
expect "shared: says why" "$ERR" '/tmp, which every user and service shares'
W=/var prun -- true
equal "shared: a directory holding /var/tmp: 125" "$RC" 125

# --- /proc ----------------------------------------------------------------------
# The write repeats the current value: harmless even where it got through.
prun -- sh -c '
	awk "\$5 ~ /^\/proc\/(sys|irq|bus|sysrq-trigger)\$/ { print \"mnt\", \$5, \$6 }" /proc/self/mountinfo
	v=$(cat /proc/sys/kernel/core_pattern)
	(printf "%s\n" "$v" >/proc/sys/kernel/core_pattern) 2>&1 && echo core-written
	exit 0'
equal "proc: status" "$RC" 0
expect "proc: /proc/sys is a read-only mount" "$OUT" '^mnt /proc/sys ro,'
for d in irq bus; do
	[ -d /proc/$d ] && expect "proc: /proc/$d read-only" "$OUT" "^mnt /proc/$d ro,"
done
refuse "proc: core_pattern not written" "$OUT" 'core-written'
if [ "$me" -eq 0 ]; then
	# EROFS is the mount's answer; Landlock would say EACCES.
	expect "proc: root stopped by the mount, not Landlock" "$OUT" 'Read-only file system'
fi

# --- stdio ------------------------------------------------------------------------
mkdir -p "$T/host-only"
echo HOSTSECRET >"$T/host-only/s"
(cd "$W" && "$PINHOLE" run --log "$T/audit.jsonl" -- \
	cat "/proc/self/fd/0$T/host-only/s") </ >"$T/stdio.out" 2>&1
equal "stdio: a directory as stdin: 125" "$?" 125
refuse "stdio: nothing read through it" "$(cat "$T/stdio.out")" HOSTSECRET
expect "stdio: says which and why" "$(cat "$T/stdio.out")" 'standard input is a directory'
(cd "$W" && "$PINHOLE" run --log "$T/audit.jsonl" -- \
	cat "/proc/self/fd/1$T/host-only/s") 1</ 2>"$T/stdio.err" </dev/null
equal "stdio: a directory as stdout: 125" "$?" 125
expect "stdio: stdout named" "$(cat "$T/stdio.err")" 'standard output is a directory'
(cd "$W" && "$PINHOLE" run --log "$T/audit.jsonl" -- \
	readlink /proc/self/fd/0) <&- >"$T/stdio.out" 2>&1
equal "stdio: closed stdin runs" "$?" 0
expect "stdio: closed stdin is /dev/null" "$(cat "$T/stdio.out")" '^/dev/null$'

# --- hidden credential files -------------------------------------------------------
# The table in netns/mount.c (default_hidden), in a home bound into the
# view ($T is under /tmp, which the view replaces).  D: a directory.
FH=$T/fakehome
hidden_files=(.netrc .git-credentials .docker/config.json .npmrc .pypirc
	.vault-token .cargo/credentials.toml .cargo/credentials .pgpass .my.cnf
	.terraform.d/credentials.tfrc.json)
hidden_dirs=(.ssh .aws .gnupg .config/gh .kube .config/gcloud .azure .config/hub)
for f in "${hidden_files[@]}"; do
	mkdir -p "$(dirname "$FH/$f")"
	echo HIDDENVALUE >"$FH/$f"
done
for d in "${hidden_dirs[@]}"; do
	mkdir -p "$FH/$d"
	echo HIDDENVALUE >"$FH/$d/key"
done
echo visible >"$FH/.profile"
# A hidden name that is a link: its target, as the host sees it, is hidden.
mkdir -p "$T/elsewhere/aws"
echo HIDDENVALUE >"$T/elsewhere/aws/credentials"
rm -rf "$FH/.aws"
ln -s "$T/elsewhere/aws" "$FH/.aws"
HOME=$FH prun --ro-bind "$FH" --ro-bind "$T/elsewhere" -- sh -c '
	cd "$HOME" || exit 9
	for f in "$@"; do printf "%s %s\n" "$f" "$(cat "$f" 2>&1 | tr "\n" " ")"; done
	cat .profile
	cat '"$T"'/elsewhere/aws/credentials; echo end-of-link
	ls -A .gnupg | wc -l
	stat -c "shadow %s" /etc/shadow /etc/gshadow 2>/dev/null
	for k in /etc/ssh/*_key; do [ -e "$k" ] && stat -c "sshkey %s %n" "$k"; done
	true' sh "${hidden_files[@]}" "${hidden_dirs[@]/%//key}"
equal "hidden: status" "$RC" 0
refuse "hidden: no credential value inside" "$OUT" HIDDENVALUE
for f in "${hidden_files[@]}"; do
	expect "hidden: ~/$f empty" "$OUT" "^$(sed 's/\./\\./g' <<<"$f") \$"
done
for d in "${hidden_dirs[@]}"; do
	expect "hidden: ~/$d empty" "$OUT" "^$(sed 's/\./\\./g' <<<"$d")/key cat: .*No such file"
done
expect "hidden: other files stay" "$OUT" '^visible$'
expect "hidden: a link's target hidden" "$OUT" '^end-of-link$'
for f in /etc/shadow /etc/gshadow; do
	[ -e "$f" ] && expect "hidden: $f empty" "$OUT" "^shadow 0\$"
done
for k in /etc/ssh/*_key; do
	[ -e "$k" ] && expect "hidden: $k empty" "$OUT" "^sshkey 0 $k\$"
done

# --- binds and hides that cannot apply ------------------------------------------------
# The link points into the view (the start directory), where a followed
# bind would land.
mkdir -p "$T/src" "$W/target"
ln -s "$W/target" "$W/planted"
prun --bind "$T/src" "$W/planted" -- sh -c 'echo through >planted/x'
equal "binds: onto a planted link: 125" "$RC" 125
expect "binds: names the destination" "$ERR" "$W/planted"
check "binds: nothing written through it" test ! -e "$T/src/x"
rm -rf "$W/planted" "$W/target"
if [ "$me" -eq 0 ]; then
	# Another owner's closed directory: the command cannot reach it, so
	# the hide is skipped (EACCES), and the run goes on.
	mkdir -p "$W/closed"
	echo CLOSEDVALUE >"$W/closed/s"
	chown -R 12345:12345 "$W/closed"
	chmod 700 "$W/closed"
	prun --hide "$W/closed/s" -- sh -c 'cat closed/s; chmod 755 closed'
	equal "binds: a hide behind a closed directory: status" "$RC" 1
	refuse "binds: the file stays out of reach" "$OUT" CLOSEDVALUE
	expect "binds: and so does its directory" "$ERR" 'Operation not permitted'
	rm -rf "$W/closed"
else
	echo "$PH_NAME: the closed-directory check needs root (runs as root too)"
fi

# --- limits ---------------------------------------------------------------------------
host_max=$(cat /proc/sys/kernel/pid_max)
# LeakSanitizer, in a sanitized build, would need a thread at exit.
prun "${SEE_PROBE[@]}" --setenv ASAN_OPTIONS detect_leaks=0 \
	--limit-pids 50 -- timeout 60 "$PROBE" fork 1000
equal "limits: the fork bomb run ends" "$RC" 0
expect "limits: the fork bomb is refused" "$OUT" '^fork: refused EAGAIN after [0-9]+$'
got=$(sed -n 's/^fork: refused EAGAIN after //p' <<<"$OUT")
max=$((me == 0 ? 349 : 50))
check "limits: at most $max processes (got ${got:-none})" test "${got:-9999}" -lt "$max"
equal "limits: the host's pid_max stays" "$(cat /proc/sys/kernel/pid_max)" "$host_max"
check "limits: the host still forks" true
prun -- sh -c 'cat /proc/sys/kernel/pid_max; ulimit -p 2>/dev/null; cat /proc/self/limits | grep "Max processes"'
expect "limits: the default RLIMIT_NPROC is 4096" "$OUT" '^Max processes +4096 +4096'
case $(uname -r) in
[0-5].* | 6.[0-9].* | 6.1[0-3].*) ;;
*) expect "limits: the default pid_max of the PID namespace" "$OUT" '^4396$' ;;
esac
prun --limit-memory 64M -- grep "Max address space" /proc/self/limits
expect "limits: RLIMIT_AS is 64M" "$OUT" '^Max address space +67108864 +67108864 '
if grep -q __asan_init "$PROBE"; then
	# AddressSanitizer reserves terabytes of shadow at start: under any
	# RLIMIT_AS it cannot run at all, so only the limit above is checked.
	echo "$PH_NAME: probe_limits is built with AddressSanitizer: the" \
		"allocation checks under --limit-memory are left out"
else
	prun "${SEE_PROBE[@]}" --limit-memory 64M -- "$PROBE" alloc 128
	expect "limits: 128 MiB refused under 64M" "$OUT" '^alloc: refused ENOMEM$'
	prun "${SEE_PROBE[@]}" --limit-memory 64M -- "$PROBE" alloc 16
	expect "limits: 16 MiB allowed under 64M" "$OUT" '^alloc: ok$'
fi
prun --limit-pids 0 -- true
equal "limits: a bad value: 125" "$RC" 125

# --- what the sandbox learns about the host --------------------------------------------
printf 'allow example.test:443\n' >"$T/secret-named-policy.conf"
prun -p "$T/secret-named-policy.conf" -- sh -c '
	hostname; cat /etc/machine-id; tr "\0" "|" </proc/1/cmdline; echo; cat /proc/1/comm
	[ -f /etc/hostname ] && echo "file $(cat /etc/hostname)"; true'
equal "hostinfo: status" "$RC" 0
expect "hostinfo: hostname" "$OUT" '^pinhole$'
refuse "hostinfo: not the host's name" "$OUT" "^$(hostname)\$"
refuse "hostinfo: PID 1 does not name the policy" "$OUT" 'secret-named-policy'
expect "hostinfo: PID 1's command line" "$OUT" '^pinhole-init\|+$'
expect "hostinfo: PID 1's name" "$OUT" '^pinhole-init$'
[ -f /etc/hostname ] && expect "hostinfo: /etc/hostname" "$OUT" '^file pinhole$'
id1=$(sed -n 2p <<<"$OUT")
if [ -r /etc/machine-id ]; then
	expect "hostinfo: a machine id" "$id1" '^[0-9a-f]{32}$'
	refuse "hostinfo: not the host's machine id" "$id1" "^$(cat /etc/machine-id)\$"
	prun -- cat /etc/machine-id
	refuse "hostinfo: a new one each run" "$OUT" "^$id1\$"
fi

ph_end
