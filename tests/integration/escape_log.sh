#!/usr/bin/env bash
# Scenario: the audit log against the sandbox (issue 9, items 9, 13, 18).
# - A log that cannot be written fails closed: with --log /dev/full every
#   request gets 503 (X-Pinhole-Reason says why) and pinhole says so once
#   on stderr; a log that fills up (a file size limit stands for a full
#   disk) refuses until it can be written again, then serves again.
# usage: escape_log.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin escape_log nginx openssl curl jq prlimit
gen_certs || exit 1
mkdir -p "$T/www"
echo "allowed file" >"$T/www/a.txt"
start_nginx || exit 1
W=$T/work
mkdir -p "$W"
cat >"$T/p.conf" <<EOC
resolve web.test 127.0.0.1
allow web.test:$H_PORT { private }
EOC

# --- item 9: a log that cannot be written -------------------------------------
RUN_LOG=/dev/full prun -p "$T/p.conf" -- sh -c "
	for i in 1 2 3; do
		curl -sS -o /dev/null -D h\$i -w 'code %{http_code}\n' http://web.test:$H_PORT/a.txt
	done
	cat h1"
equal "/dev/full: every request refused" "$(grep -c '^code 503$' <<<"$OUT")" 3
expect "/dev/full: the reason" "$OUT" '^X-Pinhole-Reason: the audit log cannot be written'
equal "/dev/full: said once on stderr" "$(grep -c 'audit log: cannot write' <<<"$ERR")" 1
expect "/dev/full: the errno" "$ERR" 'audit log: cannot write \(No space left on device\)'

# pinhole proxy with a file size limit on its log: requests are served
# until the log is full, refused (503) while it is, served again once it
# has room (here: emptied).
trap '' XFSZ
PX_PREFIX=(prlimit --fsize=3000)
start_proxy full "$T/p.conf" || exit 1
codes=''
for ((i = 0; i < 30; i++)); do
	c=$(px_curl -o /dev/null -w '%{http_code}' "http://web.test:$H_PORT/a.txt")
	codes+=" $c"
	[ "$c" = 503 ] && break
done
expect "full log: served, then refused" "$codes" '^ 200( 200)* 503$'
for ((i = 0; i < 3; i++)); do
	fetch "http://web.test:$H_PORT/a.txt"
	equal "full log: refused while full ($i)" "$CODE" 503
done
expect "full log: the reason" "$HEADERS" 'X-Pinhole-Reason: the audit log cannot be written'
equal "full log: said once" "$(count_in "$PX_ERR" 'audit log: cannot write')" 1
: >"$PX_LOG"
fetch "http://web.test:$H_PORT/a.txt"
equal "log with room again: served" "$CODE" 200
equal "log with room again: said once" "$(count_in "$PX_ERR" 'audit log: writable again')" 1
n=$(log_query "$PX_LOG" 'select(.event == "request" and .decision == "allow")' | wc -l)
equal "log with room again: the request is logged" "$n" 1
PX_PREFIX=()
trap - XFSZ
stop_proxy full

ph_end
