#!/usr/bin/env bash
# The README's second command, and what CI runs: unit and CLI tests, the
# same under AddressSanitizer + UndefinedBehaviorSanitizer, a bounded
# fuzz run of every libFuzzer target, then style and man page checks.
# PH_FUZZ_SECONDS sets the time per fuzz target (default 30).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/deps-clients.sh
fuzz_seconds=${PH_FUZZ_SECONDS:-30}

echo "== 1/6 build and unit tests"
scripts/build.sh build --log-level=WARNING
ctest --test-dir build --output-on-failure

echo "== 2/6 unit and CLI tests as an unprivileged user"
scripts/unprivileged.sh build

echo "== 3/6 the same under ASan + UBSan"
scripts/build.sh build-asan --log-level=WARNING -DPINHOLE_SANITIZE=ON \
	-DCMAKE_BUILD_TYPE=Debug
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ctest --test-dir build-asan --output-on-failure

echo "== 4/6 fuzz targets, ${fuzz_seconds}s each"
CC=clang scripts/build.sh build-fuzz --log-level=WARNING -DPINHOLE_FUZZ=ON \
	-DCMAKE_BUILD_TYPE=Debug
for f in tests/fuzz/fuzz_*.c; do
	name=$(basename "$f" .c)
	seeds=tests/fuzz/corpus/${name#fuzz_}
	work=build-fuzz/corpus-$name
	mkdir -p "$work"
	echo "-- $name (seeds: $seeds)"
	"build-fuzz/$name" -max_total_time="$fuzz_seconds" -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix=build-fuzz/ "$work" "$seeds" 2>build-fuzz/$name.log ||
		{ tail -50 build-fuzz/$name.log; exit 1; }
	grep -E 'stat::number_of_executed_units' build-fuzz/$name.log
done

echo "== 5/6 style (clang-format)"
git ls-files -z '*.c' '*.h' | xargs -0 clang-format --dry-run -Werror

echo "== 6/6 man pages"
for m in docs/*.[0-9]; do
	out=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$m" 2>&1)
	if [ -n "$out" ]; then
		echo "$m: $out"
		exit 1
	fi
	echo "$m renders cleanly"
done
echo "== all tests passed"
