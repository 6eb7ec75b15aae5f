#!/usr/bin/env bash
# Scenario: the broker survives its clients and its administrator.  A
# broker (as root under uid 4243, its client 4241; otherwise both the
# calling user) with --max-per-user 3 and a policy `web` for a slow HTTP
# server on loopback:
# - a client killed mid-transfer (SIGKILL to `pinhole run` while a large
#   download runs): its engine ends, the next client is served;
# - malformed messages from raw clients (broker_raw.py: garbage, half a
#   header, a 2 GiB length, REQUEST twice, LISTENERS before REQUEST, a bad
#   version): each gets an ERROR or a close, and the broker serves on;
# - a client that sends nothing: others are served meanwhile, and it is
#   dropped after the request deadline (BROKER_REQUEST_MS, 10 s);
# - a flood: more connections than --max-per-user from one uid: the extra
#   ones get "too many sandboxes"; once they close a new one is served;
# - SIGHUP with a broken configuration: the broker says why, a running
#   long transfer goes on to its end, new clients get the old
#   configuration; SIGHUP with a fixed one that grants a new policy: it
#   is served;
# - the broker killed mid-run: `pinhole run --broker` says the broker
#   went away and exits 125, and no connection from inside gets through.
# usage: broker_faults.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/broker_lib.sh"
ph_begin broker_faults nginx curl jq setpriv python3 timeout
RAW=$(dirname "$0")/broker_raw.py
RAW=$(cd "$(dirname "$RAW")" && pwd)/broker_raw.py
bk_setup
U=${BK_USERS[0]}
W=$T/u$U/work

# The server: /small, and /slow/big (16 MiB at 2 MiB/s: 8 s).
mkdir -p "$T/www/slow"
echo "small body" >"$T/www/small"
head -c 16777216 /dev/zero >"$T/www/slow/big"
chmod -R a+rX "$T/www"
web_conf() {
	cat <<-EOF
		server {
			listen 127.0.0.1:$WEB_PORT;
			root $T/www;
			location /slow/ { limit_rate 2m; }
		}
	EOF
}
nginx_serve web WEB_PID WEB_PORT web_conf || exit 1

policy() {
	cat >"$T/conf/$1.conf" <<-EOC
		resolve big.test 127.0.0.1
		allow big.test:$WEB_PORT { private }
	EOC
	chmod 644 "$T/conf/$1.conf"
}
policy web
policy extra
grants() {
	local p
	for p in "$@"; do printf 'broker {\n\tpolicy %s %s.conf\n\tusers %s\n}\n' \
		"$p" "$p" "$U"; done
}
grants web >"$T/conf/broker.conf"
chmod 644 "$T/conf/broker.conf"
start_broker broker "$T/conf/broker.conf" --max-per-user 3 || exit 1
SMALL="curl -sS --max-time 20 http://big.test:$WEB_PORT/small"
BIG="curl -sS --max-time 60 -o big.bin http://big.test:$WEB_PORT/slow/big"

# served NAME [POLICY]: a client gets /small through policy web (or POLICY).
served() {
	brun "$U" "$W" -p "${2:-web}" -- sh -c "$SMALL"
	if [ "$RC" -eq 0 ] && [ "$OUT" = "small body" ]; then ok; else
		bad "$1: a client is not served (status $RC)"
		printf '%s\n' "$ERR" | tail -5 | sed 's/^/  | /'
	fi
}
# serves [POLICY]: the same, quietly, for wait_for.
serves() {
	brun "$U" "$W" -p "${1:-web}" -- sh -c "$SMALL"
	[ "$RC" -eq 0 ] && [ "$OUT" = "small body" ]
}
# engines: how many processes the broker has forked (its engines).
engines() { cat /proc/[0-9]*/stat 2>/dev/null | awk -v p="$BK_PID" '$4 == p { n++ } END { print n + 0 }'; }
no_engines() { [ "$(engines)" -eq 0 ]; }
# size FILE: its size in bytes (0 when missing).
size() { stat -c %s "$1" 2>/dev/null || echo 0; }
grown() { [ "$(size "$1")" -gt "$2" ]; }
rawc() { as_uid "$U" python3 "$RAW" "$BK_SOCK" "$@"; }

served "at start"
check "no engine left after a client" wait_for 10 no_engines

# --- a client killed mid-transfer -------------------------------------------------
rm -f "$W/big.bin"
brun_bg dl "$U" "$W" -p web -- sh -c "$BIG"
DL=$SPAWNED
check "the download runs" wait_for 30 grown "$W/big.bin" 1000000
kill -KILL "$DL"
wait_exit "$DL" 10
check "the killed client's engine ends" wait_for 20 no_engines
served "after a client was killed mid-transfer"
check "the broker is up" alive "$BK_PID"

# --- malformed messages ---------------------------------------------------------
for c in garbage trunc huge "twice web" listeners "badversion web"; do
	# shellcheck disable=SC2086	# the case and its argument
	r=$(rawc $c 2>&1)
	expect "malformed ($c): an ERROR or a close" "$r" '^(error: .+|closed)$'
	check "malformed ($c): the broker is up" alive "$BK_PID"
done
r=$(rawc badversion web 2>&1)
expect "a bad version: the ERROR says why" "$r" '^error: .*(version|malformed)'
served "after malformed messages"
check "no engine left after malformed messages" wait_for 15 no_engines

# --- a client that sends nothing ------------------------------------------------
asu "$U"
spawn silent "${ASU[@]}" python3 "$RAW" "$BK_SOCK" silent 25
SILENT=$SPAWNED
served "while a client sends nothing"
wait_exit "$SILENT" 30
r=$(cat "$T/silent.out")
expect "a silent client is dropped after the deadline (10 s)" "$r" \
	'^(error: .*|closed) after ([89]|1[0-9]|2[0-2])\.[0-9] s$'

# --- a flood ----------------------------------------------------------------------
check "no engine before the flood" wait_for 15 no_engines
r=$(rawc flood 5 2>&1)
equal "flood: 3 held" "$(grep -c ': open$' <<<"$r")" 3
equal "flood: 2 refused as too many" "$(grep -c ': error: .*too many sandboxes' <<<"$r")" 2
[ "$(grep -c 'too many' <<<"$r")" -eq 2 ] || printf '%s\n' "$r" | sed 's/^/  | /'
check "flood: once they closed, a new client is served" wait_for 20 serves
check "the broker is up after the flood" alive "$BK_PID"

# --- SIGHUP -----------------------------------------------------------------------
rm -f "$W/big.bin"
brun_bg long "$U" "$W" -p web -- sh -c "$BIG && echo complete"
LONG=$SPAWNED
check "reload: a long transfer runs" wait_for 30 grown "$W/big.bin" 1000000
printf 'broker {\n\tpolicy web web.conf\n\tusers %s\n}\nallow big.test:80\nbroker {\n' \
	"$U" >"$T/conf/broker.conf.new"
chmod 644 "$T/conf/broker.conf.new"
mv "$T/conf/broker.conf.new" "$T/conf/broker.conf"
lines=$(wc -l <"$BK_ERR")
kill -HUP "$BK_PID"
said() { [ "$(wc -l <"$BK_ERR")" -gt "$lines" ]; }
check "a broken configuration: the broker says why" wait_for 10 said
expect "a broken configuration: its line names the file" "$(tail -n +$((lines + 1)) "$BK_ERR")" \
	'broker\.conf'
check "a broken configuration: the broker is up" alive "$BK_PID"
at=$(size "$W/big.bin")
check "a broken configuration: the transfer goes on" wait_for 10 grown "$W/big.bin" "$((at + 1000000))"
served "a broken configuration: the old one serves new clients"
brun "$U" "$W" -p extra -- true
equal "before the fix, policy extra is refused" "$RC" 125
wait_exit "$LONG" 60
equal "a broken configuration: the long transfer's run" "$EXIT_STATUS" 0
expect "a broken configuration: the long transfer completed" "$(cat "$T/long.out")" '^complete$'
equal "a broken configuration: every byte came" "$(size "$W/big.bin")" 16777216

grants web extra >"$T/conf/broker.conf.new"
chmod 644 "$T/conf/broker.conf.new"
mv "$T/conf/broker.conf.new" "$T/conf/broker.conf"
kill -HUP "$BK_PID"
check "a fixed configuration: the new policy is served" wait_for 20 serves extra
served "a fixed configuration: the old policy still is" web

# --- the broker killed mid-run ------------------------------------------------------
# Inside: each attempt notes whether the test had said "killed" before it
# began; no attempt begun after the kill may get through.
cat >"$W/loop.sh" <<EOF
i=0
while [ \$i -lt 1500 ]; do
	k=0; [ -e killed ] && k=1
	if curl -sS --max-time 5 http://big.test:$WEB_PORT/small >/dev/null 2>&1
	then echo "ok \$k" >>attempts; else echo "fail \$k" >>attempts; fi
	[ \$k = 1 ] && [ -s attempts ] && grep -q 'fail 1' attempts && exit 0
	i=\$((i + 1))
done
EOF
[ -z "$BK_ROOT" ] || chown "$U:$U" "$W/loop.sh"
rm -f "$W/attempts" "$W/killed"
brun_bg victim "$U" "$W" -p web -- sh loop.sh
VICTIM=$SPAWNED
has_ok() { grep -q '^ok 0$' "$W/attempts" 2>/dev/null; }
check "the victim's connections get through first" wait_for 30 has_ok
kill -KILL -- "-$BK_PID"
group_left() { cat /proc/[0-9]*/stat 2>/dev/null | awk -v g="$BK_PID" '$5 == g && $3 != "Z" { n++ } END { print n + 0 }'; }
broker_gone() { pid_done "$BK_PID" && [ "$(group_left)" -eq 0 ]; }
check "the broker and its engines are gone" wait_for 10 broker_gone
touch "$W/killed"
wait_exit "$VICTIM" 30
equal "the broker gone: run's status" "$EXIT_STATUS" 125
expect "the broker gone: run says so" "$(cat "$T/victim.err")" 'broker went away'
sanitizer_clean broker "$BK_ERR"
refuse "the broker gone: nothing gets through" "$(cat "$W/attempts")" '^ok 1$'
if grep -q '^fail 1$' "$W/attempts"; then ok; else
	# The command was ended before it tried again: also closed.
	echo "note: the command was ended before a connection was tried after the kill"
	ok
fi
bk_end
