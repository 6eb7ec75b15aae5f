#!/usr/bin/env bash
# Escape scenario, terminals: TIOCSTI (push input into a terminal, which
# the shell that reads it then runs) and TIOCLINUX are refused by the
# seccomp filter (EPERM, before any driver sees them) on every ABI: the
# native one, with bits above 32 set in the request, i386 (int $0x80 from
# a 64-bit process, and an i386 program built with gcc -m32) and x32.
# They are tried on a pty the command opens as its own controlling
# terminal, where TIOCSTI needs no privilege, so nothing but the filter
# stops it; and on the host terminal given as stdin (under script(1)).
# Prober: tests/escape/escape.c.
# usage: escape_tty.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/probe_lib.sh"
ph_begin escape_tty script
W=$T/work
probe_init "$W"
i386_abi_host
# Four ABIs per request (native, high bits, i386, x32); three without i386.
abis=4
[ "$I386_ABI" = absent ] && abis=3

# tty_refused TEXT WHAT: every TIOCSTI/TIOCLINUX attempt of WHAT in TEXT
# refused with EPERM, and N of them made.
tty_refused() {
	local text=$1 what=$2 n
	n=$(grep -cE '(tiocsti|tioclinux)[a-z-]*: ' <<<"$text")
	check "$what: attempts made ($n)" test "$n" -ge "$3"
	refuse "$what: all refused with EPERM" "$text" \
		'^[^ ]*(tiocsti|tioclinux)[^ ]*: (got through|refused E([^P]|P[^E]))'
	none_through "$what" "$text"
}

# In a pty of its own (64-bit prober: native, high bits, i386, x32).
prun -- "$PROBE" tty -
equal "own pty: status" "$RC" 0
refuse "own pty: set up" "$OUT" '^tty-setup:'
for a in tiocsti tioclinux; do
	refused "$a" EPERM
	refused "$a-high-bits" EPERM
	[ "$I386_ABI" = absent ] || refused "i386:$a" EPERM
	refused "x32:$a" EPERM
done
if [ "$I386_ABI" = absent ]; then
	i386_absent_checked "own pty"
else
	i386_present_checked "own pty"
fi
tty_refused "$OUT" "own pty" $((2 * abis))

# The host's terminal as stdin: script(1) gives pinhole run a pty.
(cd "$W" && script -qec "'$PINHOLE' run --log '$T/audit.jsonl' -- \
	'$PROBE' tty 0" /dev/null) </dev/null >"$T/script.out" 2>&1
out=$(tr -d '\r' <"$T/script.out")
tty_refused "$out" "host terminal" $((4 * abis))
refused stdin-tiocsti EPERM "$out"
if [ "$I386_ABI" = absent ]; then
	i386_absent_checked "host terminal" "$out"
else
	i386_present_checked "host terminal" "$out"
	refused i386:stdin-tiocsti EPERM "$out"
fi

# An i386 program: the filter's i386 rules, as a 32-bit program meets them.
if probe32_built; then
	prun -- "$PROBE32" tty -
	if [ "$I386_ABI" = absent ]; then
		i386_program_absent_checked "i386 program"
	else
		equal "i386 program: status" "$RC" 0
		refused tiocsti EPERM
		refused tioclinux EPERM
		tty_refused "$OUT" "i386 program" 2
	fi
fi

ph_end
