#!/usr/bin/env bash
# Client: Node's fetch() and https.get() inside `pinhole run`, with no
# help: an nginx origin on loopback (api.test, TLS from a private test CA)
# wants a bearer token that pinhole injects (interception, the run CA
# trusted through NODE_EXTRA_CA_CERTS, the proxy through
# NODE_USE_ENV_PROXY=1 and https_proxy).  A Node >= 24.5 from
# scripts/deps-clients.sh (/opt/pinhole-node) reaches it; the audit log
# shows both requests with the secret by name; the scratch $HOME is byte
# for byte unchanged.  Debian's Node 20 ignores NODE_USE_ENV_PROXY: its
# fetch() and https.get() resolve api.test and connect themselves, and
# capture (the default) brings them to the same rule: the token is
# injected all the same, and the records say "via": "capture"; under
# --no-capture they fail without reaching the origin.
# usage: node.sh PATH-TO-PINHOLE
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/tls_lib.sh"
ph_begin node nginx openssl jq
NODE24=/opt/pinhole-node/bin/node
NODE20=/usr/bin/node
for n in "$NODE24" "$NODE20"; do
	if [ ! -x "$n" ]; then
		echo "node: CANNOT RUN: $n is missing; scripts/deps-clients.sh installs it" >&2
		exit 77
	fi
done
gen_host_cert api.test || exit 1

# The origin: /api/* only with the token, answering the path it served.
TOKEN=tok$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
(umask 077 && printf '%s\n' "$TOKEN" >"$T/token")
start_origin() {
	nginx_serve origin ORIGIN_PID API_PORT origin_conf
}
origin_conf() {
	cat <<-EOF
		default_type text/plain;
		server {
			listen 127.0.0.1:$API_PORT ssl;
			server_name api.test;
			ssl_certificate $T/api.test.pem;
			ssl_certificate_key $T/api.test.key;
			location /api/ {
				if (\$http_authorization != "Bearer $TOKEN") {
					return 401 "no token\n";
				}
				return 200 "served \$uri\n";
			}
		}
	EOF
}
start_origin || exit 1
: >"$T/origin/access.log"

cat >"$T/p.conf" <<EOC
secret tok file $T/token
resolve api.test 127.0.0.1
allow api.test:$API_PORT { private upstream-ca $T/ca.pem inject bearer tok }
EOC

# A scratch home with a few dotfiles, to be found unchanged.
H=$T/home
mkdir -p "$H/.config/app" "$H/.npm"
printf 'export EDITOR=vi\n' >"$H/.profile"
printf 'registry=https://api.test/\n' >"$H/.npmrc"
printf 'x=1\n' >"$H/.config/app/settings"
home_state() { (cd "$H" && find . -printf '%p %y %m %s\n' | sort && find . -type f -exec sha256sum {} + | sort); }
BEFORE=$(home_state)
export HOME=$H

W=$T/work
mkdir -p "$W"
cat >"$W/client.js" <<'EOJS'
const https = require('node:https');
const base = process.argv[2];
function get(url) {
	return new Promise((resolve, reject) => {
		https.get(url, (res) => {
			let body = '';
			res.on('data', (d) => { body += d; });
			res.on('end', () => resolve(`${res.statusCode} ${body.trim()}`));
		}).on('error', reject);
	});
}
(async () => {
	const r = await fetch(`${base}/api/fetch`);
	console.log(`fetch ${r.status} ${(await r.text()).trim()}`);
	console.log(`https.get ${await get(`${base}/api/get`)}`);
})().catch((e) => {
	console.log(`error ${e.cause ? (e.cause.code || e.cause.message) : e.message}`);
	process.exit(1);
});
EOJS
URL=https://api.test:$API_PORT

# --- Node >= 24.5: fetch and https.get through the proxy ---------------------
prun -p "$T/p.conf" -- "$NODE24" client.js "$URL"
equal "node 24: status" "$RC" 0
[ "$RC" -eq 0 ] || printf '%s\n' "$OUT" "$ERR" | tail -8 | sed 's/^/  | /'
expect "node 24: fetch() reached the origin with the token" "$OUT" \
	'^fetch 200 served /api/fetch$'
expect "node 24: https.get() reached the origin with the token" "$OUT" \
	'^https.get 200 served /api/get$'
for p in /api/fetch /api/get; do
	check "audit: $p allowed" test -n "$(jq -c "select(.event == \"request\"
		and .host == \"api.test\" and .path == \"$p\" and .decision == \"allow\")" \
		"$T/audit.jsonl" 2>/dev/null)"
	check "audit: $p answered 200, the secret by name" test -n "$(jq -c \
		"select(.event == \"end\" and .host == \"api.test\" and .path == \"$p\"
		and .status == 200 and .secret == \"tok\")" "$T/audit.jsonl" 2>/dev/null)"
done
if grep -q -- "$TOKEN" "$T/audit.jsonl" || grep -q -- "$TOKEN" <<<"$OUT$ERR"; then
	bad "the token's value is in the log or the output"
else ok; fi

# --- Node 20 ignores NODE_USE_ENV_PROXY: it goes direct, and is captured ------
: >"$T/audit.jsonl"
prun -p "$T/p.conf" -- "$NODE20" client.js "$URL"
equal "node 20: status" "$RC" 0
[ "$RC" -eq 0 ] || printf '%s\n' "$OUT" "$ERR" | tail -8 | sed 's/^/  | /'
expect "node 20: fetch() captured, the token injected" "$OUT" \
	'^fetch 200 served /api/fetch$'
expect "node 20: https.get() captured, the token injected" "$OUT" \
	'^https.get 200 served /api/get$'
equal "node 20: its lookup answered with a synthetic address" \
	"$(jq -c 'select(.event == "dns" and .host == "api.test"
		and .answer == "synthetic")' "$T/audit.jsonl" | wc -l)" 1
for p in /api/fetch /api/get; do
	check "node 20: $p allowed via capture" test -n "$(jq -c "select(
		.event == \"request\" and .host == \"api.test\" and .path == \"$p\"
		and .decision == \"allow\" and .via == \"capture\")" \
		"$T/audit.jsonl" 2>/dev/null)"
done
refuse "node 20: no lookup line (it resolved)" "$ERR" 'looked up api\.test'

# --- Node 20 under --no-capture: fetch goes direct and fails -------------------
SEEN=$(wc -l <"$T/origin/access.log")
: >"$T/audit.jsonl"
prun --no-capture -p "$T/p.conf" -- "$NODE20" client.js "$URL"
check "node 20, --no-capture: fails" test "$RC" -ne 0
expect "node 20, --no-capture: fetch() did not get through" "$OUT" '^error '
refuse "node 20, --no-capture: no answer" "$OUT" '^fetch '
equal "node 20, --no-capture: the origin saw nothing" \
	"$(wc -l <"$T/origin/access.log")" "$SEEN"
equal "node 20, --no-capture: the proxy saw no request" \
	"$(jq -c 'select(.host == "api.test" and .event != "dns")' "$T/audit.jsonl" | wc -l)" 0
# The sandbox's DNS stub refused its own lookup and said so (run_dns.sh).
equal "node 20, --no-capture: its lookup logged" \
	"$(jq -c 'select(.event == "dns" and .host == "api.test")' "$T/audit.jsonl" | wc -l)" 1
expect "node 20, --no-capture: pinhole names the lookup" "$ERR" \
	'looked up api\.test itself'


# --- the host's side ---------------------------------------------------------------
equal "the scratch home is unchanged" "$(home_state)" "$BEFORE"
ph_end
