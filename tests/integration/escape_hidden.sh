#!/usr/bin/env bash
# Escape scenario, what pinhole run hides today: the policy, the secret
# file and the audit log, in a directory the command otherwise sees, and
# the user's credential files of DESIGN.md's list (~/.ssh, ~/.aws, ...).
# Each appears empty and read-only, and stays so through the ways around
# a mount that need no privilege: /proc/self/root, the directory opened
# first, an O_PATH descriptor reopened through /proc/self/fd, and
# umount.  A file beside them stays readable (the control).
# Prober: tests/escape/escape.c.
# usage: escape_hidden.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/probe_lib.sh"
ph_begin escape_hidden unshare
W=$T/work
probe_init "$W"
mkdir -p "$T/conf"
echo "visible" >"$T/conf/visible.txt"
printf 'secret key file %s\nallow example.test:443 { inject bearer key }\n' \
	"$T/conf/key" >"$T/conf/p.conf"
printf 'KEYVALUE%s\n' "$$" >"$T/conf/key"
chmod 600 "$T/conf/key"
echo '{"old":"record"}' >"$T/conf/audit.jsonl"

# hidden_file TEXT PATH: every way of reading PATH in TEXT found it empty
# (or gone), writing refused, umount refused.
hidden_file() {
	local p=$1 t=${2-$OUT} a
	for a in read unhide-proc-root unhide-openat unhide-proc-fd; do
		refused "$a:$p" 'EMPTY|ENOENT' "$t"
	done
	refused "write:$p" 'EROFS|EACCES' "$t"
	refused "unhide-umount:$p" EPERM "$t"
}

args=()
for f in p.conf key audit.jsonl; do
	args+=(read "$T/conf/$f" unhide "$T/conf/$f" write "$T/conf/$f")
done
RUN_LOG=$T/conf/audit.jsonl prun -p "$T/conf/p.conf" --ro-bind "$T/conf" \
	-- "$PROBE" read "$T/conf/visible.txt" "${args[@]}"
equal "policy, secret, log: status" "$RC" 0
got_through "read:$T/conf/visible.txt"
for f in p.conf key audit.jsonl; do hidden_file "$T/conf/$f"; done
none_through "policy, secret, log" "$(grep -v '^read:.*/visible.txt: ' <<<"$OUT")"
check "secret file untouched" file_has "$T/conf/key" "^KEYVALUE$$\$"

# The home list (netns/mount.c home_secrets, DESIGN.md), in a home of our
# own: a tmpfs over the home of uid 0 in a private mount namespace (and a
# user namespace when not root), so the user's real files are not
# touched.
dirs=".ssh .aws .gnupg .config/gh .kube"
files=".netrc .git-credentials .docker/config.json .npmrc .pypirc"
ushare=(unshare -m)
[ "$(id -u)" -eq 0 ] || ushare=(unshare -rm)
cat >"$T/home.sh" <<EOS
home=\$(getent passwd 0 | cut -d: -f6)
mount -t tmpfs -o mode=0700 home "\$home" || exit 99
cd "\$home" || exit 99
mkdir -p .config .docker
for d in $dirs; do mkdir -p "\$d" && echo secret >"\$d/inner"; done
for f in $files; do echo secret >"\$f"; done
echo visible >.profile-test
echo "home \$home"
args="read \$home/.profile-test"
for d in $dirs; do args="\$args read \$home/\$d/inner unhide \$home/\$d/inner umount \$home/\$d"; done
for f in $files; do args="\$args read \$home/\$f unhide \$home/\$f write \$home/\$f"; done
cd "$W" && exec "$PINHOLE" run --log "$T/audit2.jsonl" -- sh -c "
	for d in $dirs; do echo \"ls \\\$d \\\$(ls -A \$home/\\\$d | wc -l)\"; done
	$PROBE \$args"
EOS
out=$("${ushare[@]}" sh "$T/home.sh" 2>&1 </dev/null)
equal "home list: status" "$?" 0
home=$(sed -n 's/^home //p' <<<"$out")
check "home list: a home ($home)" test -n "$home"
got_through "read:$home/.profile-test" "$out"
for d in $dirs; do
	expect "home/$d appears empty" "$out" "^ls $(re "$d") 0\$"
	refused "read:$home/$d/inner" ENOENT "$out"
	refused "unhide-proc-root:$home/$d/inner" ENOENT "$out"
	refused "umount:$home/$d" EPERM "$out"
done
for f in $files; do hidden_file "$home/$f" "$out"; done
none_through "home list" "$(grep -v '^read:.*/.profile-test: ' <<<"$out")"

ph_end
