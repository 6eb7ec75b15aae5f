#!/usr/bin/env bash
# bench_clients.sh: the real clients of tests/clients/ timed direct and
# through `pinhole run`, against the same local registries, a first run
# (empty cache) and a second run of the same project (warm cache): pip
# download, npm ci, cargo fetch, go mod download, git clone, curl.  Prints
# one table: milliseconds and the requests the registries served.
#
# Direct runs reach the registries' names through a private /etc/hosts
# (unshare -m, so as root) and trust the test CA by their own options;
# the registries are open (REG_OPEN) so that they need no token, while
# pinhole still injects one.  Through pinhole the clients run as they are:
# their caches are pinhole's tool caches (a fresh --cache directory of the
# bench's, empty before the first run, kept for the second).
# usage: bench/bench_clients.sh PATH-TO-PINHOLE	(as root)
SRC=$(cd "$(dirname "$0")/.." && pwd)
export PH_SRCDIR=$SRC
RUSTUP_CARGO=$(rustup which cargo 2>/dev/null) || RUSTUP_CARGO=
. "$SRC/tests/integration/lib.sh"
. "$SRC/tests/integration/tls_lib.sh"
. "$SRC/tests/clients/lib.sh"
if [ "$(id -u)" -ne 0 ]; then
	echo "bench_clients: run as root (direct runs use unshare -m for /etc/hosts)" >&2
	exit 1
fi
cl_begin bench_clients nginx fcgiwrap git curl openssl jq npm go unshare
export REG_OPEN=1
# Packages of a realistic size served at a WAN's pace, so that what a
# second run saves is the download, not the start of the client.
export REG_PAD=${PH_BENCH_PAD:-2000000} REG_RATE=${PH_BENCH_RATE:-4m}
reg_port
make_pypi && make_npm && make_cargo && make_goproxy && make_files || exit 1
start_registries || exit 1
start_git_server || exit 1
cl_policy
CARGO=/usr/bin/cargo
[ -n "$RUSTUP_CARGO" ] && CARGO=$RUSTUP_CARGO
PATH=$(dirname "$CARGO"):$PATH
CMINOR=$("$CARGO" --version | sed -n 's/^cargo 1\.\([0-9]*\)\..*/\1/p')
{
	cat /etc/hosts
	for h in "${REG_HOSTS[@]}" git.test; do echo "127.0.0.1 $h"; done
} >"$T/hosts"

# project DIR: the projects of the clients in DIR (pip venv, npm app with
# its lock, cargo app, go app).
project() {
	local d=$1
	mkdir -p "$d/npm" "$d/cargo/src" "$d/cargo/.cargo" "$d/go"
	"$PY" -m venv "$d/venv"
	printf '{"name": "app", "version": "1.0.0", "private": true, "dependencies": {"phright": "^1.0.0"}}\n' \
		>"$d/npm/package.json"
	printf 'registry=https://npm.test:%s/\n' "$REG_PORT" >"$d/npm/.npmrc"
	printf '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2018"\n\n[dependencies]\nphcrate = { version = "0.1", registry = "ph" }\n' \
		>"$d/cargo/Cargo.toml"
	printf 'fn main() {}\n' >"$d/cargo/src/main.rs"
	if [ "$CMINOR" -ge 68 ]; then
		printf '[registries.ph]\nindex = "sparse+https://crates.test:%s/index/"\n' "$REG_PORT"
	else
		printf '[registries.ph]\nindex = "https://git.test:%s/crates-index.git"\n' "$GIT_PORT"
	fi >"$d/cargo/.cargo/config.toml"
	printf 'module example.test/app\n\ngo 1.19\n\nrequire example.test/greet v0.1.0\n' >"$d/go/go.mod"
	printf 'package main\n\nimport _ "example.test/greet"\n\nfunc main() {}\n' >"$d/go/main.go"
}

# direct DIR CMD...: CMD in DIR with the registries' names in /etc/hosts.
direct() {
	local d=$1
	shift
	unshare -m --propagation private sh -c \
		'mount --bind "$0" /etc/hosts && cd "$1" && shift && exec "$@"' \
		"$T/hosts" "$d" "$@" >"$T/direct.out" 2>&1
}

# The clients: NAME, then the command in the project (run by sh -c).
# pip has no cache on purpose (a pip cache is an HTTP cache, pip asks the
# index again whatever it holds): --no-cache-dir both ways.
URL_PIP=https://pypi.test:$REG_PORT/simple/
read -r -a CLIENTS <<<"${PH_BENCH_CLIENTS:-pip npm cargo go git curl}"
cmd_of() {
	case $1 in
	pip) echo "rm -rf dl && venv/bin/pip download -q --no-cache-dir --index-url $URL_PIP -d dl phbeta" ;;
	npm) echo "cd npm && rm -rf node_modules && if [ -f package-lock.json ]; then npm ci --no-audit --no-fund; else npm install --no-audit --no-fund; fi" ;;
	cargo) echo "cd cargo && '$CARGO' fetch" ;;
	go) echo "cd go && go mod download" ;;
	git) echo "rm -rf allowed && git clone -q https://git.test:$GIT_PORT/allowed.git" ;;
	curl) echo "curl -sS -f -o data.bin https://files.test:$REG_PORT/data.bin" ;;
	esac
}

D=$T/direct
W=$T/work
project "$D"
project "$W"
# The direct runs' own trust and caches (what a user sets without pinhole).
DENV=(env HOME="$D/home" SSL_CERT_FILE="$T/ca.pem" REQUESTS_CA_BUNDLE="$T/ca.pem"
	npm_config_cafile="$T/ca.pem" npm_config_cache="$D/.npmc"
	CARGO_HOME="$D/.cargo-home" CARGO_HTTP_CAINFO="$T/ca.pem"
	GOPATH="$D/.gopath" GOCACHE="$D/.gocache"
	GOPROXY="https://goproxy.test:$REG_PORT" GONOSUMDB=example.test
	GOFLAGS=-mod=mod GIT_SSL_CAINFO="$T/ca.pem" CURL_CA_BUNDLE="$T/ca.pem"
	"GIT_CONFIG_COUNT=1" "GIT_CONFIG_KEY_0=http.extraHeader"
	"GIT_CONFIG_VALUE_0=$GIT_AUTH_HEADER")
mkdir -p "$D/home"
PENV=(--setenv GOPROXY "https://goproxy.test:$REG_PORT"
	--setenv GONOSUMDB example.test --setenv GOFLAGS -mod=mod)
mkdir -m 700 "$T/pcache"
PENV+=(--cache "$T/pcache")

# now_ms, served: the clock, and the requests the servers answered.
now_ms() { echo $(($(date +%s%N) / 1000000)); }
served() {
	cat "$T/reg-nginx/access.log" "$T/git-nginx/access.log" 2>/dev/null | wc -l
}

# timed WHERE NAME: one run; prints "ms requests status".
timed() {
	local where=$1 name=$2 t0 t1 r0 r1 rc c
	c=$(cmd_of "$name")
	r0=$(served)
	t0=$(now_ms)
	if [ "$where" = direct ]; then
		direct "$D" "${DENV[@]}" sh -c "$c"
		rc=$?
	else
		prun -p "$T/p.conf" "${PENV[@]}" -- sh -c "$c"
		rc=$RC
	fi
	t1=$(now_ms)
	r1=$(served)
	if [ "$rc" -ne 0 ]; then
		echo "bench_clients: $name $where failed ($rc):" >&2
		if [ "$where" = direct ]; then tail -5 "$T/direct.out"; else tail -5 "$T/prun.out" "$T/prun.err"; fi >&2
	fi
	echo "$((t1 - t0)) $((r1 - r0)) $rc"
}

echo "clients direct and through pinhole run; ms (requests served), second run = same project again"
echo "each package padded to $REG_PAD bytes, served at $REG_RATE bytes/s per response"
echo "cargo: $("$CARGO" --version) ($([ "$CMINOR" -ge 68 ] && echo sparse || echo git) index)"
printf '%-6s %16s %16s %16s %16s\n' client "direct 1st" "direct 2nd" "pinhole 1st" "pinhole 2nd"
declare -A MS REQ
for n in "${CLIENTS[@]}"; do
	row=()
	for where in direct pinhole; do
		for k in 1 2; do
			read -r ms req rc < <(timed "$where" "$n")
			cell="$ms ($req)"
			[ "$rc" -eq 0 ] || cell="FAIL $rc"
			row+=("$cell")
			MS[$n.$where.$k]=$ms REQ[$n.$where.$k]=$req
			[ "$rc" -eq 0 ] || REQ[$n.$where.$k]=fail
		done
	done
	printf '%-6s %16s %16s %16s %16s\n' "$n" "${row[@]}"
done
# Issue 11's target: the second cargo fetch / npm ci / go mod download
# through pinhole fetches nothing and takes under a third of the first.
for n in npm cargo go; do
	[ -n "${MS[$n.pinhole.1]:-}" ] || continue
	if [ "${REQ[$n.pinhole.2]}" = 0 ] && [ "${REQ[$n.pinhole.1]}" != fail ] &&
		[ $((3 * MS[$n.pinhole.2])) -lt "${MS[$n.pinhole.1]}" ]; then
		v=met
	else
		v="NOT met"
	fi
	echo "cache target ($n, pinhole): 2nd run ${REQ[$n.pinhole.2]} requests, ${MS[$n.pinhole.2]} ms vs ${MS[$n.pinhole.1]} ms: $v"
done
