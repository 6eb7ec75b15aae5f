#!/usr/bin/env bash
# Escape scenario, the system calls the filter refuses: no new user
# namespace (unshare(1) -U, unshare(2), clone with CLONE_NEWUSER; clone3,
# whose flags the filter cannot read, says ENOSYS so that libc falls back
# to clone), no other namespace either (no capability), and keyctl,
# add_key, request_key, bpf, perf_event_open, userfaultfd, io_uring and
# name_to_handle_at/open_by_handle_at all refused with the filter's
# EPERM, through the i386 ABI too (int $0x80, and an i386 program).
# Prober: tests/escape/escape.c.
# usage: escape_syscalls.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/probe_lib.sh"
ph_begin escape_syscalls unshare
W=$T/work
probe_init "$W"
i386_abi_host

filtered="keyctl add-key request-key bpf perf-event-open userfaultfd
	io-uring-setup io-uring-enter io-uring-register name-to-handle-at
	open-by-handle-at"

prun -- sh -c "
	try() {
		name=\$1; shift
		if e=\$(\"\$@\" 2>&1); then echo \"\$name: got through\"
		elif echo \"\$e\" | grep -q 'Operation not permitted'; then
			echo \"\$name: refused EPERM\"
		else echo \"\$name: refused OTHER (\$e)\"; fi
	}
	try unshare-cmd unshare -U true
	try unshare-cmd-map unshare -Ur true
	$PROBE newuser syscalls handles / syscalls32"
equal "status" "$RC" 0
refused unshare-cmd EPERM
refused unshare-cmd-map EPERM
for a in clone-newuser unshare-user unshare-user-mount unshare-net \
	unshare-mount; do
	refused "$a" EPERM
done
refused clone3-newuser ENOSYS
for a in $filtered; do refused "$a" EPERM; done
if [ "$I386_ABI" = absent ]; then
	i386_absent_checked "int \$0x80 calls"
else
	i386_present_checked "int \$0x80 calls"
	for a in unshare-user keyctl bpf perf-event-open userfaultfd \
		io-uring-setup name-to-handle-at open-by-handle-at; do
		refused "i386:$a" EPERM
	done
	refused i386:clone3 ENOSYS
fi
none_through "refused calls"

if probe32_built; then
	prun -- "$PROBE32" newuser syscalls handles /
	if [ "$I386_ABI" = absent ]; then
		i386_program_absent_checked "i386 program"
	else
		equal "i386 program: status" "$RC" 0
		refused clone-newuser EPERM
		refused unshare-user EPERM
		refused clone3-newuser ENOSYS
		for a in $filtered; do refused "$a" EPERM; done
		none_through "i386 program"
	fi
fi

ph_end
