#!/usr/bin/env bash
# Scenario: many megabytes through an intercepted tunnel, byte for byte.
# Inside `pinhole run`, curl downloads a 24 MiB file of random bytes from
# nginx over HTTPS, twice on one connection (the upstream connection is
# kept between the two), and uploads 12 MiB with PUT, once with a length
# and once chunked; a header is injected on each, so every request goes
# through the proxy's own TLS on both sides.  Then the same file again
# from a server that ends its body by closing the connection (no length,
# not chunked): the proxy reads the upstream's records several a turn
# (intercept_up_drain), and the end met there must end the body whole.
# The files must come out identical, and the audit records count the
# bytes.
# usage: run_intercept_bulk.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls_lib.sh"
ph_begin run_intercept_bulk nginx curl openssl jq sha256sum
gen_certs >/dev/null || exit 1
mkdir -p "$T/www" "$T/work"
head -c $((24 << 20)) /dev/urandom >"$T/www/big"
head -c 40000 /dev/urandom >"$T/www/small"
head -c $((12 << 20)) /dev/urandom >"$T/work/up.bin"
start_nginx >/dev/null || exit 1
printf 'TOKEN%s\n' "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
	>"$T/tok"
chmod 600 "$T/tok"
# The close-delimited server: the request head, then the head of a body
# that ends with the connection, and the file the path names.
cat >"$T/close.sh" <<'EOF'
#!/bin/sh
IFS= read -r first
while IFS= read -r line; do [ "${line%?}" = "" ] && break; done
f=${first#GET /}
printf 'HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n'
exec cat "${0%/*}/www/${f%% *}"
EOF
chmod 755 "$T/close.sh"
gen_host_cert close.test >/dev/null || exit 1
start_socat close "OPENSSL-LISTEN:@PORT@,bind=127.0.0.1,reuseaddr,fork,cert=$T/close.test.pem,key=$T/close.test.key,verify=0" \
	"EXEC:$T/close.sh" || exit 1
CLOSE_PORT=$SOCAT_PORT
cat >"$T/p.conf" <<EOF
secret tok file $T/tok
resolve web.test 127.0.0.1
resolve close.test 127.0.0.1
allow web.test:$S_PORT { private upstream-ca $T/ca.pem inject bearer tok }
allow close.test:$CLOSE_PORT { private upstream-ca $T/ca.pem inject bearer tok }
EOF
URL=https://web.test:$S_PORT
sum() { sha256sum "$1" | cut -d' ' -f1; }
# jq_has FILTER FILE: FILTER yields something for some line of FILE.
jq_has() { [ -n "$(jq -c "$1" "$2" 2>/dev/null)" ]; }

# --- downloads: two on one connection -------------------------------------------
prun -p "$T/p.conf" -- curl -sS -o a.bin "$URL/big" -o b.bin "$URL/big" \
	-w '%{num_connects}\n'
equal "download: status" "$RC" 0
equal "download: one connection for both" "$(printf '%s\n' "$OUT" | tr -d '\n')" "10"
check "download 1: whole" test -s "$T/work/a.bin"
equal "download 1: byte for byte" "$(sum "$T/work/a.bin")" "$(sum "$T/www/big")"
equal "download 2: byte for byte" "$(sum "$T/work/b.bin")" "$(sum "$T/www/big")"
check "audit: the bytes down counted" jq_has \
	"select((.bytes_down // 0) >= $((24 << 20)))" \
	"$T/audit.jsonl"

# --- downloads whose body ends with the connection ------------------------------
# The small one is in the socket whole, with the end, when the proxy
# reads its first record: the rest and the end are met in one turn.
prun -p "$T/p.conf" -- curl -sS -o c.bin "https://close.test:$CLOSE_PORT/big" \
	-: -o s.bin "https://close.test:$CLOSE_PORT/small"
equal "close-delimited downloads: status" "$RC" 0
equal "close-delimited download: byte for byte" "$(sum "$T/work/c.bin")" \
	"$(sum "$T/www/big")"
equal "close-delimited, small: byte for byte" "$(sum "$T/work/s.bin")" \
	"$(sum "$T/www/small")"
refuse "close-delimited: each ended whole, not cut" \
	"$(grep -a close.test "$T/audit.jsonl")" 'mid-body|failed'

# --- uploads: with a length, then chunked ----------------------------------------
prun -p "$T/p.conf" -- sh -c "
	curl -sS -T up.bin -w 'length %{http_code}\n' $URL/upload/len.bin
	curl -sS -T - -w 'chunked %{http_code}\n' $URL/upload/chunked.bin <up.bin"
equal "upload: status" "$RC" 0
expect "upload with a length: stored" "$OUT" '^length 20[14]$'
expect "upload chunked: stored" "$OUT" '^chunked 20[14]$'
equal "upload with a length: byte for byte" \
	"$(sum "$T/up/upload/len.bin")" "$(sum "$T/work/up.bin")"
equal "upload chunked: byte for byte" \
	"$(sum "$T/up/upload/chunked.bin")" "$(sum "$T/work/up.bin")"
check "audit: the bytes up counted" jq_has \
	"select((.bytes_up // 0) >= $((12 << 20)))" \
	"$T/audit.jsonl"

ph_end
