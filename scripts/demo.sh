#!/usr/bin/env bash
# The README's first command: install dependencies, build, and run the
# built-in demo (policy check and the decisions the proxy would make).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh build --log-level=WARNING
pinhole=./build/pinhole

show() {
	echo
	echo "\$ pinhole $*"
	"$pinhole" "$@" || echo "(exit status $?)"
}

echo "== pinhole demo: policies under conf/, decisions explained"
show check conf/pinhole.conf conf/profiles/github.conf \
	conf/profiles/pypi.conf conf/profiles/crates.conf \
	conf/profiles/golang.conf
show explain -p conf/pinhole.conf \
	https://github.com/acme/widgets.git/info/refs
show explain -p conf/pinhole.conf \
	https://github.com/acme/secret.git/info/refs
show explain -p conf/pinhole.conf \
	'https://github.com/acme/widgets.git/../secret.git/info/refs'
show explain -p conf/pinhole.conf https://gist.githubusercontent.com/acme/x
show explain -p conf/pinhole.conf https://api.github.com/repos/acme/widgets/hooks POST
show explain -p conf/pinhole.conf pypi.org:443
show explain -p conf/pinhole.conf http://0x7f.1/admin
printf 'alow pypi.org\nallow example.com:99999\nallow 10.0.0.1/8\n' \
	>build/demo-bad.conf
show check build/demo-bad.conf
echo
echo "== demo done: the sandboxed run and the proxy come in later versions"
