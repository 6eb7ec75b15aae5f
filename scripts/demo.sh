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
echo "== pinhole proxy in front of a local HTTPS server (nginx on 127.0.0.1,"
echo "   with a test CA made just now; nothing leaves this machine)"
demo_proxy() {
	set +e	# refusals are the point here; lib.sh reports what fails
	set -- "$pinhole"
	. tests/integration/lib.sh
	ph_begin demo nginx openssl curl
	gen_certs && start_nginx || exit 1
	cat >"$T/demo.conf" <<-EOF
		resolve web.test 127.0.0.1
		resolve intranet.test 127.0.0.1
		# The demo server is on loopback, so its rule needs 'private'.
		allow web.test:$S_PORT { private }
		# Same address, no 'private': the proxy refuses to connect.
		allow intranet.test:$S_PORT
		deny evil.test
	EOF
	sed 's/^/    /' "$T/demo.conf"
	start_proxy proxy "$T/demo.conf" || exit 1
	echo "  proxy listening on 127.0.0.1:$PX_PORT, audit log $PX_LOG"
	say() {
		echo
		echo "\$ curl -x http://127.0.0.1:$PX_PORT $*"
	}
	reason() {
		curl -q -s -v --max-time 10 -x "http://127.0.0.1:$PX_PORT" \
			--cacert "$T/ca.pem" -o /dev/null "$@" 2>&1 |
			sed -n 's/^< X-Pinhole-Reason: /  refused: /p' | tr -d '\r'
	}
	say "https://web.test:$S_PORT/"
	curl -q -sS --max-time 10 -x "http://127.0.0.1:$PX_PORT" \
		--cacert "$T/ca.pem" "https://web.test:$S_PORT/" | sed 's/^/  /'
	say "https://evil.test/"
	reason https://evil.test/
	say "https://intranet.test:$S_PORT/"
	reason "https://intranet.test:$S_PORT/"
	say "http://elsewhere.test/"
	reason http://elsewhere.test/
	echo
	echo "\$ pinhole log $PX_LOG"
	"$pinhole" log "$PX_LOG" | sed 's/^/  /'
	kill -TERM "$PX_PID"
}
(demo_proxy)
echo
echo "== demo done: the sandboxed run (pinhole run) comes in the next version"
