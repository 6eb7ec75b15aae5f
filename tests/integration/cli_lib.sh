#!/usr/bin/env bash
# cli_lib.sh: the small harness of the CLI scenarios (cli_*.sh), sourced
# with "$@" = PATH-TO-PINHOLE.  Sets PINHOLE (absolute), changes to the
# source tree, makes $tmp (removed at exit), and counts with ok/bad.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	echo "cli_lib.sh: helpers sourced by cli_*.sh; not a test of its own"
	exit 0
fi
set -uo pipefail
PINHOLE=${1:?usage: $0 PATH-TO-PINHOLE}
case $PINHOLE in /*) ;; */*) PINHOLE=$PWD/$PINHOLE ;; esac
SRC=${PH_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$SRC" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# run NAME WANT-STATUS CMD...: runs CMD, keeps stdout/stderr in $out/$err.
run() {
	local name=$1 want=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	status=$?
	out=$(cat "$tmp/out")
	err=$(cat "$tmp/err")
	if [ "$status" -ne "$want" ]; then
		bad "$name: exit $status, want $want"
		echo "  stdout: $out"
		echo "  stderr: $err"
		return 1
	fi
	ok
}

expect() {	# expect NAME TEXT PATTERN: grep -E PATTERN in TEXT
	if grep -qE -- "$3" <<<"$2"; then ok; else
		bad "$1: no match for /$3/ in:"
		echo "$2" | sed 's/^/  | /'
	fi
}

refuse() {	# refuse NAME TEXT PATTERN: PATTERN must not be in TEXT
	if grep -qE -- "$3" <<<"$2"; then
		bad "$1: unexpected /$3/ in:"
		echo "$2" | sed 's/^/  | /'
	else ok; fi
}
