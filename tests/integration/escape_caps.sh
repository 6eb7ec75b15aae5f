#!/usr/bin/env bash
# Escape scenario, capabilities: the command holds none in any set
# (effective, permitted, inheritable, bounding, ambient), as root too; the
# securebits are set and locked and no_new_privs is on, so nothing it runs
# gets any back: not capset, not ambient raising, not a set-user-ID root
# binary or a file with capabilities (made here when the scenario runs as
# root, with a control run outside that shows they do grant them there);
# what only a capability allows (chown to another user, mknod, setuid to
# another uid, setgroups) is refused.  Prober: tests/escape/escape.c.
# usage: escape_caps.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/probe_lib.sh"
ph_begin escape_caps setpriv
W=$T/work
probe_init "$W"
echo data >"$W/mine"

prun -- "$PROBE" caps capset privileged "$W/mine"
equal "status" "$RC" 0
for a in caps-held bounding-held ambient-held; do refused "$a" NONE; done
for a in capset-all capset-inheritable ambient-raise securebits-clear \
	keepcaps-set; do
	refused "$a" EPERM
done
refused no-new-privs-clear EINVAL
# NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE and the
# locks: 0xef.
expect "securebits set and locked" "$OUT" '^securebits: 239$'
expect "no_new_privs" "$OUT" '^no-new-privs: 1$'
refused setuid-other 'EPERM|EINVAL'
refused setgid-other 'EPERM|EINVAL'
refused setgroups EPERM
refused chown-other 'EPERM|EINVAL'
refused mknod-mem EPERM
refused setpriority-raise 'EACCES|EPERM'
check "the file keeps its owner" test "$(stat -c %u "$W/mine")" = "$(id -u)"
none_through "capabilities"

# Regaining them by exec: a set-user-ID root copy of the prober and one
# with file capabilities.  Only root can make them; outside, run by
# nobody, they do grant privilege (the control), inside they grant none.
if [ "$(id -u)" -eq 0 ] && ! command -v setcap >/dev/null; then
	bad "setcap missing (libcap2-bin, scripts/deps.sh): file capabilities not checked"
elif [ "$(id -u)" -eq 0 ]; then
	mkdir -p "$W/bin"
	chmod 755 "$W" "$W/bin"
	cp "$PROBE" "$W/bin/suid"
	chmod 4755 "$W/bin/suid"
	# +p: permitted only; +ep: a "capability-dumb" binary, whose exec
	# the kernel refuses (EPERM) when it could not have them all.
	cp "$PROBE" "$W/bin/fcap"
	cp "$PROBE" "$W/bin/fcap-e"
	chmod 755 "$W/bin/fcap" "$W/bin/fcap-e"
	setcap cap_sys_admin,cap_setuid,cap_net_raw+p "$W/bin/fcap"
	setcap cap_sys_admin,cap_setuid,cap_net_raw+ep "$W/bin/fcap-e"
	ctl=$(for b in suid fcap fcap-e; do
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$W/bin/$b" caps 2>&1
	done)
	equal "control: outside, all three grant capabilities" \
		"$(grep -c '^caps-held: got through' <<<"$ctl")" 3
	prun -- sh -c "for b in suid fcap fcap-e; do
		$W/bin/\$b caps || echo \"exec-\$b: refused\"; done"
	equal "setuid and file caps: status" "$RC" 0
	# Each either runs with none, or is not run at all.
	equal "setuid and file caps: none held after exec" \
		"$(grep -cE '^(caps-held: refused NONE|exec-[a-z-]+: refused)$' <<<"$OUT")" 3
	none_through "setuid and file caps"
	prun -- sh -c "$W/bin/suid raw"
	refused raw-inet EPERM
else
	echo "escape_caps: uid $(id -u) cannot make set-user-ID root or" \
		"file-capability binaries: that part runs as root only"
fi

ph_end
