#!/usr/bin/env bash
# Scenario: the audit log against the sandbox (issue 9, items 9, 13, 18).
# - A log that cannot be written fails closed: with --log /dev/full every
#   request gets 503 (X-Pinhole-Reason says why) and pinhole says so once
#   on stderr; a log that fills up (a file size limit stands for a full
#   disk) refuses until it can be written again, then serves again.
# usage: escape_log.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin escape_log nginx openssl curl jq prlimit script
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

# --- item 13: the log is not a stream the sandbox writes ---------------------
uid=$(id -u)
RUN_LOG=stderr prun -p "$T/p.conf" -- sh -c 'echo ran'
equal "--log stderr: refused" "$RC" 125
refuse "--log stderr: the command did not run" "$OUT" ran
expect "--log stderr: why" "$ERR" 'audit log stderr is standard error.*forge records'
cat >"$T/stderr.conf" <<EOC
log stderr
allow web.test:$H_PORT
EOC
(cd "$W" && "$PINHOLE" run -p "$T/stderr.conf" -- true) >"$T/o" 2>"$T/e" </dev/null
equal "policy 'log stderr': refused" "$?" 125
expect "policy 'log stderr': why" "$(cat "$T/e")" 'is standard error'
(cd "$W" && "$PINHOLE" run --log "$T/shared.log" -- true) >/dev/null 2>>"$T/shared.log" </dev/null
equal "log = the command's stderr file: refused" "$?" 125
expect "log = the command's stderr file: why" "$(cat "$T/shared.log")" 'behind the command.s standard streams'

# No usable home: XDG_STATE_HOME where nothing can be made (as root too),
# and for uid 65534 a home that does not exist.
nohome() {
	(cd "$W" && env XDG_STATE_HOME=/proc/pinhole-no-such-dir TMPDIR="$1" \
		"$PINHOLE" run -p "$T/p.conf" -- sh -c "$2") \
		>"$T/nh.out" 2>"$T/nh.err" </dev/null
	RC=$?
	OUT=$(cat "$T/nh.out")
	ERR=$(cat "$T/nh.err")
}
mkdir -p "$T/tmpd"
forged='{"ts":"2026-01-01T00:00:00.000Z","sandbox":"x","conn":1,"event":"request","method":"GET","host":"forged.test","port":80,"decision":"allow"}'
nohome "$T/tmpd" "echo '$forged' >&2; curl -sS -o /dev/null -w 'code %{http_code}\n' http://deny.test/"
plog=$T/tmpd/pinhole-$uid/audit.jsonl
equal "no home: the run works" "$RC" 0
expect "no home: the denial" "$OUT" '^code 403$'
check "no home: a private log file" test -f "$plog"
equal "no home: its directory is 0700" "$(stat -c %a "$T/tmpd/pinhole-$uid")" 700
equal "no home: the log has the denial" "$(log_query "$plog" 'select(.host == "deny.test" and .event == "request") | .decision')" '"deny"'
refuse "no home: no record on stderr but the command's" "$(grep -v forged <<<"$ERR")" '"event"'
expect "no home: the last line names the private log" "$(last_line "$ERR")" "^pinhole: 1 denied: deny\.test:80 \(x1\); see $plog\$"
"$PINHOLE" log "$plog" >"$T/review" 2>&1
refuse "no home: pinhole log does not count the forged record" "$(cat "$T/review")" forged
# A directory someone else could have made: a symlink, or open to others.
mkdir -p "$T/tmpl" "$T/elsewhere" "$T/tmpo/pinhole-$uid"
ln -s "$T/elsewhere" "$T/tmpl/pinhole-$uid"
nohome "$T/tmpl" 'echo ran'
equal "no home, symlinked directory: refused" "$RC" 125
expect "no home, symlinked directory: why" "$ERR" 'is not a private directory'
chmod 755 "$T/tmpo/pinhole-$uid"
nohome "$T/tmpo" 'echo ran'
equal "no home, directory open to others: refused" "$RC" 125
refuse "no home, directory open to others: did not run" "$OUT" ran

# The summary line after an unterminated OSC: on a terminal, CAN and ST
# end the string first; in a file, nothing is added.
prun -p "$T/p.conf" -- sh -c "curl -sS -o /dev/null http://deny.test/; printf '\033]0;swallow'"
expect "not a terminal: the last line" "$(last_line "$ERR")" '^pinhole: 1 denied: deny\.test:80'
# (Counted, not matched: the temp dir's random name may hold any letter.)
equal "not a terminal: no CAN added" "$(tr -cd '\030' <<<"$ERR" | wc -c)" 0
cat >"$T/tty.sh" <<EOS
cd "$W" && exec "$PINHOLE" run --log "$T/audit.jsonl" -p "$T/p.conf" -- sh -c "curl -sS -o /dev/null http://deny.test/; printf '\\033]0;swallow'"
EOS
timeout 60 script -qec "bash $T/tty.sh" /dev/null </dev/null >"$T/tty.out" 2>&1
tty=$(od -An -c "$T/tty.out" | tr -d ' \n')
expect "terminal: CAN and ST end the OSC before the line" "$tty" 'swallow.*030033\\.*pinhole:1denied:deny\.test:80'

# --- item 18: what one sandbox can make pinhole write -----------------------
# 300 denied requests with 8 KB URLs (the proxy takes up to 8 KiB), through one curl: identical ones,
# then distinct ones under a 64 KiB limit.
N=300
long=$(head -c 8000 /dev/zero | tr '\0' a)
for ((i = 0; i < N; i++)); do echo "url = \"http://deny.test/$long\""; done >"$W/same.curl"
for ((i = 0; i < N; i++)); do echo "url = \"http://deny.test/$i/$long\""; done >"$W/distinct.curl"
RUN_LOG=$T/same.jsonl prun -p "$T/p.conf" -- sh -c 'curl -sS -K same.curl -o /dev/null -w "%{http_code}\n" | sort | uniq -c'
expect "identical denials: all refused" "$OUT" "^ *$N 403$"
size=$(stat -c %s "$T/same.jsonl")
[ "$size" -lt 20000 ] && ok || bad "identical denials: the log has $size bytes, want < 20000"
n=$(log_query "$T/same.jsonl" 'select(.event == "request") | .count // 1' | jq -s add)
equal "identical denials: the counts add up" "$n" "$N"
"$PINHOLE" log --json "$T/same.jsonl" >"$T/review.json" 2>&1
equal "identical denials: pinhole log counts them" "$(jq .totals.denied "$T/review.json")" "$N"
p=$(log_query "$T/same.jsonl" 'select(.event == "request") | .path | length' | sort -n | tail -1)
[ "$p" -le 1024 ] && ok || bad "identical denials: a path of $p bytes, want <= 1024"
expect "identical denials: a cut path ends in ..." "$(head -1 "$T/same.jsonl")" '"path":"/aaa*\.\.\."'
expect "identical denials: the summary line" "$(last_line "$ERR")" "^pinhole: $N denied: deny\.test:80 \(x$N\)"
audit_wellformed same "$T/same.jsonl"

RUN_LOG=$T/distinct.jsonl prun -p "$T/p.conf" --log-limit 64K -- sh -c 'curl -sS -K distinct.curl -o /dev/null -w "%{http_code}\n" | sort | uniq -c'
expect "distinct denials: all refused" "$OUT" "^ *$N 403$"
size=$(stat -c %s "$T/distinct.jsonl")
[ "$size" -le $((64 * 1024 + 4096)) ] && ok || bad "distinct denials: the log has $size bytes, want <= 64 KiB + summaries"
expect "distinct denials: the run says the limit was reached" "$ERR" 'audit log: this run reached its limit'
expect "distinct denials: the summary line is still last" "$(last_line "$ERR")" "^pinhole: $N denied: deny\.test:80 \(x$N\)"
n=$(log_query "$T/distinct.jsonl" 'select(.summary == true and .host == "deny.test") | .count')
[ "${n:-0}" -gt 200 ] && ok || bad "distinct denials: a summary record counts ${n:-none}"
"$PINHOLE" log --json "$T/distinct.jsonl" >"$T/review.json" 2>&1
equal "distinct denials: pinhole log counts them all" "$(jq .totals.denied "$T/review.json")" "$N"
audit_wellformed distinct "$T/distinct.jsonl"
RUN_LOG=$T/x.jsonl prun --log-limit 12Q -- true
equal "--log-limit: a bad size is refused" "$RC" 125

ph_end
