#!/usr/bin/env bash
# Runs the unit and CLI tests of build DIR as uid/gid 65534, so that what
# only root may do (read another user's secret file, say) is not taken for
# granted.  The binaries and the files the tests read are staged in a fresh
# directory that user can reach, wherever this checkout lives.
# usage: scripts/unprivileged.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
bdir=$(cd "$dir" && pwd) # absolute: the tests run from the stage
if [ "$(id -u)" -ne 0 ]; then
	echo "unprivileged: already uid $(id -u); step 1 ran the tests as that user"
	exit 0
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
chmod 755 "$stage"
cp "$dir"/test_* "$dir"/pinhole "$stage"/
# Probers of the escape_*.sh scenarios, when there are any.
find "$dir" -maxdepth 1 -name 'probe_*' -type f -exec cp {} "$stage"/ \;
cp -r conf "$stage"/conf
mkdir -p "$stage"/tests
cp -r tests/integration "$stage"/tests/integration
[ ! -d tests/clients ] || cp -r tests/clients "$stage"/tests/clients
# The sources, for layers.sh (who includes whom).
cp -r common policy proxy audit netns cli "$stage"/
run_as() {
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		env -i PATH=/usr/bin:/bin TMPDIR=/tmp PH_SRCDIR="$stage" \
		PH_BUILDDIR="$bdir" "$@"
}
# Exactly the tests ctest knows: unit test binaries and integration scripts.
names=$(ctest --test-dir "$dir" -N | sed -n 's/^ *Test *#[0-9]*: //p')
passed=0
failed=0
for name in $names; do
	if [ -x "$stage/$name" ]; then
		t=$stage/$name
		cmd=("$t")
	elif [ -f "$stage/tests/clients/$name.sh" ]; then
		t=$stage/tests/clients/$name.sh
		cmd=("$t" "$stage/pinhole")
	else
		t=$stage/tests/integration/$name.sh
		cmd=("$t" "$stage/pinhole")
	fi
	if (cd "$stage" && run_as "${cmd[@]}") >"$stage/log" 2>&1; then
		passed=$((passed + 1))
		echo "uid 65534: $(basename "$t"): ok"
	else
		failed=$((failed + 1))
		echo "uid 65534: $(basename "$t"): FAILED"
		tail -30 "$stage/log"
	fi
done
echo "unprivileged: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
