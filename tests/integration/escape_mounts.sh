#!/usr/bin/env bash
# Escape scenario, mounts: the command cannot make / writable again
# (remount, mount_setattr), cannot unmount what the view is made of,
# cannot mount (mount(2), fsopen, open_tree, move_mount), cannot leave its
# root (pivot_root, chroot), cannot write the host's files through
# /proc/self/root or PID 1's root and cwd, and cannot open a file by
# handle (name_to_handle_at, open_by_handle_at).  Writes under / must be
# refused by the read-only mount itself (EROFS), before Landlock.
# Prober: tests/escape/escape.c.
# usage: escape_mounts.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/probe_lib.sh"
ph_begin escape_mounts
W=$T/work
probe_init "$W"
# A host directory of ours outside the work directory and outside /tmp
# (the sandbox has a fresh /tmp): /var/tmp.
VT=$(mktemp -d /var/tmp/ph-escape-mounts.XXXXXX) || exit 1
trap 'rm -rf "$VT"; ph_cleanup' EXIT
echo host >"$VT/host.txt"

prun -- "$PROBE" remount / remount "$W" umount / umount "$W" umount /proc \
	umount /tmp mount /tmp mount "$W" pivot \
	create /etc/escape-$$ create /usr/escape-$$ \
	create "/proc/self/root/etc/escape-$$" \
	create "$VT/new" write "$VT/host.txt" \
	create "/proc/self/root$VT/new" write "/proc/self/root$VT/host.txt" \
	create "/proc/1/root$VT/new" write "/proc/1/root$VT/host.txt" \
	create "/proc/1/cwd/escape-$$" handles /
equal "status" "$RC" 0
for p in / "$W"; do
	refused "remount-rw:$p" EPERM
	refused "setattr-rw:$p" EPERM
done
for p in / "$W" /proc /tmp; do refused "umount:$p" EPERM; done
for p in /tmp "$W"; do
	refused "mount-tmpfs:$p" EPERM
	refused "mount-bind:$p" EPERM
done
for a in fsopen-tmpfs open-tree-clone move-mount pivot-root chroot; do
	refused "$a" EPERM
done
for p in /etc/escape-$$ /usr/escape-$$ /proc/self/root/etc/escape-$$; do
	refused "create:$p" EROFS
done
# /var/tmp may one day be hidden or replaced (ENOENT): still refused.
refused "create:$VT/new" 'EROFS|ENOENT'
refused "write:$VT/host.txt" 'EROFS|ENOENT'
refused "create:/proc/self/root$VT/new" 'EROFS|ENOENT'
refused "write:/proc/self/root$VT/host.txt" 'EROFS|ENOENT'
# PID 1 is not dumpable: its root and cwd are out of reach.
refused "create:/proc/1/root$VT/new" EACCES
refused "write:/proc/1/root$VT/host.txt" EACCES
refused "create:/proc/1/cwd/escape-$$" EACCES
refused name-to-handle-at EPERM
refused open-by-handle-at EPERM
none_through "mounts"
check "nothing created on the host" test ! -e "$VT/new" -a ! -e /etc/escape-$$ \
	-a ! -e /usr/escape-$$
equal "host file unchanged" "$(cat "$VT/host.txt")" host

ph_end
