#!/usr/bin/env bash
# probe_lib.sh: helpers of the escape_*.sh scenarios that run the C prober
# tests/escape/escape.c (build/probe_escape, and probe_escape32 built with
# gcc -m32) inside `pinhole run`.  Sourced after lib.sh and ph_begin:
#	. "$(dirname "$0")/lib.sh"
#	. "$(dirname "$0")/probe_lib.sh"
#	ph_begin NAME TOOL...
#	probe_init "$T/work"
# The prober prints "ATTEMPT: got through" or "ATTEMPT: refused ERRNO" and
# decides nothing; these helpers decide.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	echo "probe_lib.sh: helpers sourced by escape_*.sh; not a test of its own"
	exit 0
fi

# probe_init DIR: copies the probers into DIR (the work directory: the
# command's own files are what an attacker runs, and /tmp, where a staged
# build lives, is not the host's inside) and sets PROBE, and PROBE32 when
# it was built.  A missing prober stops the scenario loudly (exit 77: a
# failure under ctest).
probe_init() {
	local from
	from=$(dirname "$PINHOLE")
	mkdir -p "$1"
	if [ ! -x "$from/probe_escape" ]; then
		echo "$PH_NAME: CANNOT RUN: no prober at $from/probe_escape" \
			"(ph_probe(escape))" >&2
		exit 77
	fi
	cp "$from/probe_escape" "$1/" || exit 1
	PROBE=$1/probe_escape
	PROBE32=
	if [ -x "$from/probe_escape32" ]; then
		cp "$from/probe_escape32" "$1/" || exit 1
		PROBE32=$1/probe_escape32
	fi
}

# probe32_built: is there an i386 prober?  On x86_64 its absence is a
# counted failure (scripts/deps.sh installs gcc-multilib); elsewhere there
# is no i386 ABI to check, which is said, not counted.
probe32_built() {
	[ -n "$PROBE32" ] && return 0
	case $(uname -m) in
	x86_64)
		bad "i386 prober NOT BUILT ($(dirname "$PINHOLE")/probe_escape32):" \
			"gcc -m32 does not link; scripts/deps.sh installs gcc-multilib"
		;;
	*) echo "$PH_NAME: $(uname -m) has no i386 ABI: 32-bit checks not applicable" ;;
	esac
	return 1
}

# i386_abi_host: sets I386_ABI to "present" or "absent": whether this
# kernel has an i386 system call ABI at all, asked outside the sandbox
# (probe_escape i386-abi; see tests/escape/i386abi.h).  Without IA32
# emulation int $0x80 kills the caller with SIGSEGV: there is no i386 ABI
# to escape through, and the i386 checks become i386_absent_checked.
# Anything but a clear answer is a counted failure (and "present").
i386_abi_host() {
	local line
	line=$("$(dirname "$PINHOLE")/probe_escape" i386-abi 2>&1)
	case $line in
	"i386 ABI: present") I386_ABI=present ;;
	"i386 ABI: absent (the kernel has no IA32 emulation): int \$0x80 kills the caller")
		I386_ABI=absent ;;
	*)
		bad "i386 ABI on the host: no clear answer: $line"
		I386_ABI=present
		;;
	esac
}

# i386_present_checked WHAT [TEXT]: the prober inside found the i386 ABI
# the host has (it made its i386 calls; the caller checks their refusals).
i386_present_checked() {
	expect "$1: i386 ABI present inside too" "${2-$OUT}" '^i386 ABI: present$'
}

# i386_absent_checked WHAT [TEXT]: on a kernel with no i386 ABI, the
# prober inside found int $0x80 killing its caller too (the ABI is as
# unreachable inside as outside) and made no i386 call; said, not skipped.
i386_absent_checked() {
	expect "$1: int \$0x80 kills the caller inside too" "${2-$OUT}" \
		'^i386 ABI: absent \(the kernel has no IA32 emulation\): int \$0x80 kills the caller$'
	refuse "$1: no i386 call made" "$(grep -v '^i386 ABI: ' <<<"${2-$OUT}")" \
		'^i386'
	echo "$PH_NAME: NOTE: $1: i386 ABI absent (the kernel has no IA32" \
		"emulation): checked that int \$0x80 kills the caller inside the" \
		"sandbox too, instead of the per-call i386 refusals"
}

# i386_program_absent_checked WHAT: with no i386 ABI an i386 program
# cannot even start: its exec fails inside (nonzero status, no attempt
# line) as it does outside.  Said, not skipped.
i386_program_absent_checked() {
	local host
	host=$("$PROBE32" newuser 2>&1)
	check "$1: the i386 program does not start outside" test $? -ne 0
	refuse "$1: no attempt outside" "$host" ': (got through|refused )'
	check "$1: the i386 program does not start inside (status $RC)" \
		test "$RC" -ne 0
	refuse "$1: no attempt inside" "$OUT" ': (got through|refused )'
	echo "$PH_NAME: NOTE: $1: i386 ABI absent: checked that an i386" \
		"program cannot run, outside or inside the sandbox"
}

# re TEXT: TEXT with the characters of an extended regex escaped.
re() { sed 's/[][\.*^$+?(){}|/]/\\&/g' <<<"$1"; }

# refused ATTEMPT ERRNO-RE [TEXT]: "ATTEMPT: refused E" is in TEXT
# (default $OUT) with E matching ERRNO-RE (e.g. 'EPERM|EACCES').
refused() {
	expect "$1 refused ($2)" "${3-$OUT}" "^$(re "$1"): refused ($2)\$"
}

# got_through ATTEMPT [TEXT]: the control case, "ATTEMPT: got through".
got_through() {
	expect "$1 got through (control)" "${2-$OUT}" "^$(re "$1"): got through"
}

# none_through WHAT [TEXT]: no attempt in TEXT got through, and there were
# some (a prober that printed nothing proves nothing).
none_through() {
	local text=${2-$OUT} n
	n=$(grep -cE '^[^ ]+: (got through|refused )' <<<"$text")
	refuse "$1: nothing got through" "$text" ': got through'
	check "$1: attempts made ($n)" test "$n" -gt 0
}
