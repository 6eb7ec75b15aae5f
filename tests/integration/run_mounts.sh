#!/usr/bin/env bash
# Scenario: the mount view of `pinhole run`: / read-only with the locked
# flags kept, the start directory writable (under /tmp too), fresh /tmp,
# /proc and a minimal /dev; --bind, --ro-bind, --tmpfs, --hide; what is
# hidden by default (policy, secret file, audit log, the user's credential
# files); a policy the sandbox could write refused; .git/hooks and
# .git/config read-only; seccomp refusing TIOCSTI; Landlock reported.
# usage: run_mounts.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin run_mounts git perl unshare
W=$T/work
mkdir -p "$W" "$T/conf" "$T/data" "$T/rodata"
echo "in conf" >"$T/conf/visible.txt"
echo "ro data" >"$T/rodata/r.txt"
printf 'secret key file %s\nallow example.test:443 { inject bearer key }\n' \
	"$T/conf/key" >"$T/conf/p.conf"
printf 'KEYVALUE%s\n' "$$" >"$T/conf/key"
chmod 600 "$T/conf/key"

# --- defaults -----------------------------------------------------------------
host_tmp=$(mktemp /tmp/ph-run-mounts.XXXXXX)
prun -- sh -c "
	touch /usr/pinhole-test 2>&1
	echo written >here.txt && echo cwd-ok
	[ -e $host_tmp ] && echo host-tmp-seen
	touch /tmp/t && echo tmp-ok
	ls /dev | tr '\n' ' '; echo
	ls /dev/pts | tr '\n' ' '; echo
	echo x >/dev/null && echo null-ok
	touch /dev/shm/s && echo shm-ok
	awk '\$5 == \"/\" { print \"root\", \$6 }' /proc/self/mountinfo"
rm -f "$host_tmp"
equal "defaults: status" "$RC" 0
expect "/ is read-only" "$OUT" 'Read-only file system'
expect "start directory writable" "$OUT" '^cwd-ok$'
check "start directory: the file is outside too" test -s "$W/here.txt"
refuse "fresh /tmp: the host's file is not there" "$OUT" 'host-tmp-seen'
expect "fresh /tmp writable" "$OUT" '^tmp-ok$'
expect "minimal /dev" "$OUT" '^fd full null ptmx pts random shm stderr stdin stdout tty urandom zero $'
expect "private devpts" "$OUT" '^ptmx $'
expect "/dev/null" "$OUT" '^null-ok$'
expect "/dev/shm" "$OUT" '^shm-ok$'
expect "root mount read-only" "$OUT" '^root ro'

# The flags the kernel locks stay: a nosuid,nodev,noexec mount made in a
# private mount namespace (unshare; nothing reaches the host) is seen
# read-only with all three inside.  unshare -r makes it work unprivileged.
mkdir -p "$T/flagged"
ushare=(unshare -m)
[ "$(id -u)" -eq 0 ] || ushare=(unshare -rm)
(cd "$W" && "${ushare[@]}" sh -c '
	mount -t tmpfs -o nosuid,nodev,noexec flagged "$1" || exit 99
	exec "$2" run --log "$3" --ro-bind "$1" -- grep " $1 " /proc/self/mountinfo' \
	sh "$T/flagged" "$PINHOLE" "$T/audit.jsonl") >"$T/flags" 2>&1 </dev/null
equal "flagged mount: status" "$?" 0
check "flagged mount: ro,nosuid,nodev,noexec kept" \
	grep -qE " $T/flagged ro,nosuid,nodev,noexec" "$T/flags"

# --- options ------------------------------------------------------------------
mkdir -p "$W/hidden-dir"
echo "hide me" >"$W/hidden-dir/f"
echo "hide me too" >"$W/hidden.txt"
prun --bind "$T/data" --ro-bind "$T/rodata" --tmpfs /tmp/scratch \
	--hide "$W/hidden-dir" --hide "$W/hidden.txt" -- sh -c "
	echo bound >$T/data/b.txt && echo bind-ok
	cat $T/rodata/r.txt
	echo no >$T/rodata/w.txt 2>/dev/null || echo ro-refused
	echo s >/tmp/scratch/s && echo tmpfs-ok
	echo dir=\$(ls -A $W/hidden-dir | wc -l) file=\$(wc -c <$W/hidden.txt)
	echo x >$W/hidden.txt 2>/dev/null || echo hidden-ro"
equal "options: status" "$RC" 0
expect "--bind: writable" "$OUT" '^bind-ok$'
check "--bind: written through" test -s "$T/data/b.txt"
expect "--ro-bind: readable" "$OUT" '^ro data$'
expect "--ro-bind: not writable" "$OUT" '^ro-refused$'
expect "--tmpfs" "$OUT" '^tmpfs-ok$'
expect "--hide: empty directory, empty file" "$OUT" '^dir=0 file=0$'
expect "--hide: read-only" "$OUT" '^hidden-ro$'
check "--hide: the real file is untouched" file_has "$W/hidden.txt" 'hide me too'

# --- hidden by default --------------------------------------------------------
RUN_LOG=$T/conf/audit.jsonl prun -p "$T/conf/p.conf" --ro-bind "$T/conf" -- sh -c "
	cat $T/conf/visible.txt
	echo policy=\$(wc -c <$T/conf/p.conf) key=\$(wc -c <$T/conf/key) log=\$(wc -c <$T/conf/audit.jsonl)"
equal "hidden files: status" "$RC" 0
expect "other files stay" "$OUT" '^in conf$'
expect "policy, secret file and log appear empty" "$OUT" '^policy=0 key=0 log=0$'
home=$(getent passwd "$(id -u)" | cut -d: -f6)
if [ -d "$home" ] && [ -w "$home" ]; then
	made=
	[ -d "$home/.ssh" ] || { mkdir -m 700 "$home/.ssh" && made=1; }
	touch "$home/.ssh/ph-test-$$"
	prun -- sh -c "ls -A '$home/.ssh' | wc -l"
	rm -f "$home/.ssh/ph-test-$$"
	[ -z "$made" ] || rmdir "$home/.ssh"
	equal "~/.ssh appears empty" "$OUT" 0
else
	echo "run_mounts: uid $(id -u) has no writable home ($home): ~/.ssh not checked"
fi
cp "$T/conf/p.conf" "$W/inside.conf"
prun -p "$W/inside.conf" -- true
equal "policy the sandbox could write: refused" "$RC" 125
expect "policy the sandbox could write: says why" "$ERR" 'inside\.conf lies in a directory the sandbox may write to'
rm -f "$W/inside.conf"
mkdir -p "$W/logs"
RUN_LOG=$W/logs/audit.jsonl prun -- true
equal "audit log the sandbox could replace: refused" "$RC" 125
expect "audit log: says why" "$ERR" 'audit log .*logs/audit\.jsonl: .*/logs lies in a directory the sandbox may write to'
rm -rf "$W/logs"
(cd / && "$PINHOLE" run --log "$T/audit.jsonl" -- true) >/dev/null 2>"$T/root.err"
equal "start directory /: refused" "$?" 125

# --- .git ---------------------------------------------------------------------
git init -q "$W"
prun -- sh -c '
	echo "#!/bin/sh" >.git/hooks/pre-commit 2>/dev/null || echo hooks-ro
	echo "[x]" >>.git/config 2>/dev/null || echo config-ro
	touch .git/other && echo git-dir-rw'
expect ".git/hooks read-only" "$OUT" '^hooks-ro$'
expect ".git/config read-only" "$OUT" '^config-ro$'
expect "the rest of .git writable" "$OUT" '^git-dir-rw$'
check "no hook planted" test ! -e "$W/.git/hooks/pre-commit"
# .git itself cannot be swapped for a repository the sandbox made...
prun -- sh -c 'mv .git .git-moved 2>/dev/null || echo pinned'
expect ".git cannot be renamed" "$OUT" '^pinned$'
check ".git still in place" test -d "$W/.git/hooks"
# ...and a commondir made inside (it would lead git to hooks the sandbox
# wrote) is moved aside once the command ends.
prun -- sh -c 'mkdir -p evil/hooks && echo "$PWD/evil" >.git/commondir'
check "planted commondir moved aside" test ! -e "$W/.git/commondir"
check "planted commondir kept for review" sh -c 'ls "$1"/.git/commondir.pinhole-quarantine-* >/dev/null' - "$W"
expect "planted commondir: said" "$ERR" 'git guard: .*\.git/commondir is new or changed since the run started.*moved to commondir\.pinhole-quarantine-[0-9a-f]{16}$'
rm -rf "$W/evil" "$W"/.git/commondir.pinhole-quarantine-*
prun --allow-git-config -- sh -c 'echo "#!/bin/sh" >.git/hooks/pre-commit && echo hooks-rw'
expect "--allow-git-config" "$OUT" '^hooks-rw$'

# --- seccomp, Landlock --------------------------------------------------------
# ioctl(0, TIOCSTI) is refused by the filter (EPERM) before any driver
# sees it; without the filter /dev/null would say ENOTTY.
prun -v -- perl -e '$c = "x"; syscall(16, 0, 0x5412, $c); print "tiocsti: $!\n";
	syscall(250, 0, 0, 0, 0); print "keyctl: $!\n"'
expect "TIOCSTI refused" "$OUT" '^tiocsti: Operation not permitted$'
expect "keyctl refused" "$OUT" '^keyctl: Operation not permitted$'
expect "-v: Landlock report" "$ERR" 'landlock: ABI [0-9]+'

ph_end
