#!/usr/bin/env bash
# The README's first command: install dependencies, build, and run the
# built-in demo: policy check and decisions, then a sandboxed run whose
# only way out is the proxy (an allowed fetch, denials, direct
# connections captured and decided, the log review).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh build --log-level=WARNING
pinhole=$PWD/build/pinhole

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
echo "== pinhole run: a command in the sandbox; its only way out is the proxy"
echo "   (a local HTTPS server on 127.0.0.1 with a test CA made just now;"
echo "   nothing leaves this machine)"
demo_run() {
	set +e	# refusals are the point here; lib.sh reports what fails
	set -- "$pinhole"
	. tests/integration/lib.sh
	. tests/integration/tls_lib.sh
	ph_begin demo nginx openssl curl git fcgiwrap
	gen_certs && start_nginx && start_git_server || exit 1
	mkdir -p "$T/work"
	cp "$T/ca.pem" "$T/work/ca.pem"
	cat >"$T/demo.conf" <<-EOF
		resolve web.test 127.0.0.1
		resolve intranet.test 127.0.0.1
		# The demo server is on loopback, so its rule needs 'private'.
		allow web.test:$S_PORT { private }
		# Same address, no 'private': the proxy refuses to connect.
		allow intranet.test:$S_PORT
		deny evil.test
		# A Git server that wants a token: the proxy adds it, for one
		# repository only; the sandbox never sees it.
		secret git-token file $GIT_TOKEN_FILE
		resolve git.test 127.0.0.1
		allow git.test:$GIT_PORT { private  upstream-ca $T/ca.pem
		    paths /allowed.git/*  inject basic x-access-token git-token }
	EOF
	sed 's/^/    /' "$T/demo.conf"
	cat >"$T/work/job.sh" <<-EOF
		echo "inside: uid \$(id -u), proxy \$https_proxy"
		echo "1. allowed:  curl https://web.test:$S_PORT/"
		curl -sS --cacert ca.pem https://web.test:$S_PORT/ | sed 's/^/   /'
		echo "2. denied:   curl https://evil.test/"
		curl -sS -o /dev/null -w '   %{http_connect} ' https://evil.test/ 2>/dev/null
		curl -s -p -I https://evil.test/ 2>/dev/null | sed -n 's/^X-Pinhole-Reason: //p'
		echo "3. private:  curl https://intranet.test:$S_PORT/"
		curl -s -p -I https://intranet.test:$S_PORT/ 2>/dev/null | sed -n 's/^X-Pinhole-Reason: /   /p'
		echo "4. direct:   programs that ignore the proxy are captured"
		curl -sS --noproxy '*' --cacert ca.pem https://web.test:$S_PORT/ | sed 's/^/   captured: /'
		bash -c 'exec 3<>/dev/tcp/192.0.2.1/443 && cat <&3' 2>&1 | sed 's/^/   192.0.2.1:443: /'
		getent hosts evil.test || echo "   evil.test: no such name in the sandbox"
		echo "5. files:    / is read-only, the work directory writable"
		touch /usr/pinhole-demo 2>&1 | sed 's/^/   /'
		touch made-inside && echo "   wrote made-inside"
		echo "6. git:      clone a repository that needs a token nobody here has"
		git clone -q https://git.test:$GIT_PORT/allowed.git && ls allowed | sed 's/^/   cloned: /'
		env | grep -ci token | sed 's/^/   variables holding a token: /'
		git clone -q https://git.test:$GIT_PORT/other.git 2>&1 | sed 's/^/   /'
	EOF
	echo
	echo "\$ cd $T/work"
	echo "\$ pinhole run -p demo.conf --log audit.jsonl -- sh job.sh"
	(cd "$T/work" && "$pinhole" run -p "$T/demo.conf" --setenv HOME "$T/work" \
		--log "$T/audit.jsonl" -- sh job.sh </dev/null 2>&1) | sed 's/^/  /'
	echo "  (exit status ${PIPESTATUS[0]})"
	echo
	echo "\$ pinhole log audit.jsonl"
	"$pinhole" log "$T/audit.jsonl" | sed 's/^/  /'
}
(demo_run)
echo
echo "== demo done"
