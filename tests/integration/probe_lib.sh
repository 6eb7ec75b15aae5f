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
