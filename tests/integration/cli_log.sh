#!/usr/bin/env bash
# CLI tests of `pinhole log`: the review of an audit log, from a file and
# from standard input, --denied, --host, --json (checked with jq), malformed
# and incomplete lines, the allow lines it suggests (checked with `pinhole
# explain`, and never every path of a host), hostile characters escaped,
# exit codes.
# usage: cli_log.sh PATH-TO-PINHOLE   (PH_SRCDIR: source tree)
. "$(dirname "$0")/cli_lib.sh"

same() {	# same NAME GOT WANT
	if [ "$2" = "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi
}

# Line number of the first line of TEXT matching PATTERN (0: none).
lineof() { grep -nE -- "$2" <<<"$1" | head -1 | cut -d: -f1 | grep . || echo 0; }

# rec EVENT HOST PORT [KEY JSON-VALUE]...: one audit record on stdout.
n=0
rec() {
	local ev=$1 host=$2 port=$3 extra=""
	shift 3
	while [ $# -ge 2 ]; do extra="$extra,\"$1\":$2"; shift 2; done
	n=$((n + 1))
	printf '{"ts":"2026-11-29T10:00:%02d.%03dZ","sandbox":"run1","conn":%d,"event":"%s","host":"%s","port":%s%s}\n' \
		$((n / 1000 % 60)) $((n % 1000)) "$n" "$ev" "$host" "$port" "$extra"
}

# --- a log with every kind of denial --------------------------------------
log=$tmp/audit.jsonl
{
	for i in 1 2 3; do
		rec request evil.example 443 method '"CONNECT"' decision '"deny"' \
			reason '"no rule allows evil.example:443"'
	done
	rec request github.com 443 method '"GET"' path '"/acme/tools/info/refs"' \
		decision '"deny"' rule '"p.conf:4"' \
		reason '"path /acme/tools/info/refs is not allowed by rule p.conf:4"'
	rec request api.github.com 443 method '"DELETE"' path '"/user/repos"' \
		decision '"deny"' rule '"p.conf:6"' \
		reason '"method DELETE is not allowed by rule p.conf:6"'
	rec request gist.github.com 443 method '"CONNECT"' decision '"deny"' \
		rule '"p.conf:9"' reason '"denied by rule p.conf:9"'
	rec request pypi.org 8443 method '"CONNECT"' decision '"deny"' \
		reason '"port 8443 is not allowed for pypi.org (rule p.conf:2)"'
	for i in 1 2 3 4; do
		rec request github.com 443 method '"GET"' \
			path '"/acme/widgets.git/info/refs"' decision '"allow"' \
			rule '"p.conf:4"' secret '"gh-token"'
		printf '{"ts":"2026-11-29T10:01:00.000Z","sandbox":"run1","conn":%d,"event":"end","status":200,"bytes_up":1024,"bytes_down":1048576,"ms":20}\n' "$n"
	done
	rec request files.pythonhosted.org 443 method '"CONNECT"' decision '"allow"'
	rec end files.pythonhosted.org 443 status 200 bytes_up 100 bytes_down 2048
	rec request tty.test 443 decision '"deny"' \
		reason '"evil \u001b]0;pwned\u0007 title"'
} >"$log"
nlines=$(wc -l <"$log")

# --- general ----------------------------------------------------------------
run help 0 "$PINHOLE" --help && expect help "$out" '^  log +review an audit log'
run log-help 0 "$PINHOLE" log --help && expect log-help "$out" '--denied' &&
	expect log-help "$out" '--host HOST' && expect log-help "$out" '--json'
run log-badopt 2 "$PINHOLE" log --bogus "$log"
run log-twofiles 2 "$PINHOLE" log "$log" "$log" &&
	expect log-twofiles "$err" 'one FILE at most'
run log-missing 1 "$PINHOLE" log "$tmp/nonexistent.jsonl" &&
	expect log-missing "$err" 'cannot open .*nonexistent.jsonl: No such file'
run log-dir 1 "$PINHOLE" log "$tmp" && expect log-dir "$err" 'cannot read'
[ -z "$out" ] && ok || bad "log-dir printed a review: $out"

# --- text review ------------------------------------------------------------
run text 0 "$PINHOLE" log "$log"
text=$out
[ -z "$err" ] && ok || bad "text: stderr: $err"
expect text "$out" '^Denied \(8 requests\):$'
expect text "$out" '^  3x  evil\.example:443  no rule allows evil\.example:443$'
l=$(lineof "$out" '^  3x  evil\.example:443 ')
same text-allow "$(sed -n "$((l + 1))p" <<<"$out")" '      allow evil.example:443'
expect text "$out" '^      allow github\.com:443 \{ paths /acme/tools/info/\* \}$'
expect text "$out" '^      allow api\.github\.com:443 \{ methods DELETE paths /user/\* \}$'
expect text "$out" '^      allow pypi\.org:8443$'
expect text "$out" 'denied by the deny rule at p\.conf:9: an allow cannot override a deny'
refuse text "$out" 'allow gist\.github\.com'
# Denied first, then the host table, then totals.
d=$(lineof "$out" '^Denied ')
h=$(lineof "$out" '^Hosts:')
t=$(lineof "$out" '^Totals:')
[ "$d" -eq 1 ] && [ "$h" -gt "$d" ] && [ "$t" -gt "$h" ] && ok ||
	bad "text: sections at lines $d, $h, $t"
hosts=$(sed -n "$h,$((t - 1))p" <<<"$out")
expect hosts "$hosts" '^  HOST:PORT +REQUESTS +ALLOWED +DENIED +BYTES UP +BYTES DOWN +SECRETS$'
expect hosts "$hosts" '^  github\.com:443 +5 +4 +1 +4\.0 KiB +4\.0 MiB +gh-token$'
expect hosts "$hosts" '^  files\.pythonhosted\.org:443 +1 +1 +0 +100 B +2\.0 KiB +-$'
# Sorted by denied, then requests: evil (3 denied) first, allowed-only last.
first=$(sed -n 3p <<<"$hosts")
expect hosts-order "$first" '^  evil\.example:443 '
last=$(grep -E '^  [a-z]' <<<"$hosts" | tail -1)
expect hosts-order "$last" '^  files\.pythonhosted\.org:443 '
expect totals "$out" "^  records    $nlines\$"
expect totals "$out" '^  requests   13 \(5 allowed, 8 denied\)$'
expect totals "$out" '^  bytes      4\.1 KiB up, 4\.0 MiB down$'
expect totals "$out" '^  malformed  0 lines$'
expect totals "$out" '^  first      2026-11-29T10:00:00\.001Z$'
expect totals "$out" '^  last       2026-11-29T10:01:00\.000Z$'
refuse totals "$out" 'incomplete'
# A terminal escape in the log is shown, not sent to the terminal.
expect escape "$out" 'evil \\x1b\]0;pwned\\x07 title'
if printf '%s' "$out" | LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]'; then
	bad "escape: control bytes in the review"
else ok; fi

# --- standard input -----------------------------------------------------------
run stdin 0 "$PINHOLE" log <"$log"
same stdin "$out" "$text"
run stdin-dash 0 "$PINHOLE" log - <"$log"
same stdin-dash "$out" "$text"
run stdin-pipe 0 bash -c "cat '$log' | '$PINHOLE' log"
same stdin-pipe "$out" "$text"

# --- --denied and --host --------------------------------------------------------
run denied 0 "$PINHOLE" log --denied "$log"
expect denied "$out" '^Denied \(8 requests\):$'
refuse denied "$out" '^Hosts:|^Totals:'
run host 0 "$PINHOLE" log --host GitHub.COM "$log"
expect host "$out" '^Denied \(1 request\):$'
expect host "$out" '^  github\.com:443 '
refuse host "$out" 'evil\.example|pypi\.org|api\.github\.com'
expect host "$out" '^  requests   5 \(4 allowed, 1 denied\)$'
run host2 0 "$PINHOLE" log --host github.com --host pypi.org --denied "$log"
expect host2 "$out" 'pypi\.org:8443'
expect host2 "$out" 'github\.com:443'
refuse host2 "$out" 'evil\.example'
run host-none 0 "$PINHOLE" log --host nowhere.test "$log"
expect host-none "$out" '^Denied: none$'
expect host-none "$out" '^Hosts: none$'

# --- --json -------------------------------------------------------------------
run json 0 "$PINHOLE" log --json "$log"
if jq -e . >/dev/null 2>&1 <<<"$out"; then ok; else bad "json: not JSON: $out"; fi
same json-keys "$(jq -c 'keys' <<<"$out")" '["denied","distrust","hosts","totals"]'
same json-top "$(jq -r '.denied[0] | "\(.count) \(.host):\(.port) \(.kind) \(.allow)"' <<<"$out")" \
	'3 evil.example:443 no-rule allow evil.example:443'
same json-deny "$(jq -r '.denied[] | select(.kind == "deny-rule") | .rule' <<<"$out")" 'p.conf:9'
same json-hosts "$(jq '.hosts | length' <<<"$out")" 7
same json-gh "$(jq -c '.hosts[] | select(.host == "github.com") | [.requests, .allowed, .denied, .bytes_up, .bytes_down, .secrets]' <<<"$out")" \
	'[5,4,1,4096,4194304,["gh-token"]]'
same json-totals "$(jq -c '.totals | [.records, .requests, .allowed, .denied, .malformed, .incomplete]' <<<"$out")" \
	"[$nlines,13,5,8,0,0]"
run json-denied 0 "$PINHOLE" log --json --denied "$log"
same json-denied "$(jq -c 'keys' <<<"$out")" '["denied"]'
run json-host 0 "$PINHOLE" log --json --host pypi.org "$log"
same json-host "$(jq -c '[.hosts[].host, .totals.requests]' <<<"$out")" '["pypi.org",1]'

# --- one request, one class: text and --json agree -----------------------------
# Each class once or more: allowed, denied (folded: count 2), refused after
# an allow (403), failed upstream (502 with the proxy's error), the client
# refusing the run CA; a server's own 502 stays allowed; a looked-up name
# is no request.
cls=$tmp/classes.jsonl
{
	rec request a.test 443 method '"GET"' decision '"allow"'
	printf '{"sandbox":"run1","conn":%d,"event":"end","status":200}\n' "$n"
	rec request a.test 443 method '"GET"' decision '"allow"'
	printf '{"sandbox":"run1","conn":%d,"event":"end","status":502}\n' "$n"
	rec request b.test 443 method '"CONNECT"' decision '"deny"' count 2 \
		reason '"no rule allows b.test:443"'
	rec request intranet.test 80 method '"GET"' decision '"allow"'
	printf '{"sandbox":"run1","conn":%d,"event":"end","status":403,"error":"intranet.test resolves to 10.0.0.1:80 (private): not allowed without '\''private'\'' in the rule"}\n' "$n"
	rec request down.test 80 method '"GET"' decision '"allow"'
	printf '{"sandbox":"run1","conn":%d,"event":"end","status":502,"error":"connect to down.test:80: Connection refused"}\n' "$n"
	rec request a.test 443 method '"CONNECT"' decision '"allow"'
	printf '{"sandbox":"run1","conn":%d,"event":"end","status":200,"error":"the client does not trust the run CA (alert unknown ca)"}\n' "$n"
	printf '{"sandbox":"run1","event":"dns","host":"x.test","qtype":"A","answer":"refused"}\n'
} >"$cls"
run classes 0 "$PINHOLE" log "$cls"
ctext=$out
run classes-json 0 "$PINHOLE" log --json "$cls"
cjson=$out
expect classes "$ctext" '^Denied \(3 requests\):$'
expect classes "$ctext" '^  requests   7 \(2 allowed, 2 denied, 1 refused, 1 failed, 1 distrust\)$'
expect classes "$ctext" '^  lookups    1 name looked up directly \(not requests\)$'
expect classes "$ctext" '^  HOST:PORT +REQUESTS +ALLOWED +DENIED +REFUSED +FAILED +DISTRUST +BYTES UP'
# The classes add up to the requests, per host and in the totals.
same classes-json-sum "$(jq -c '[.totals, .hosts[]] | map(.requests == .allowed + .denied + .refused + .failed + .distrust) | unique' <<<"$cjson")" '[true]'
same classes-json-denied "$(jq '[.denied[].count] | add' <<<"$cjson")" \
	"$(jq '.totals.denied + .totals.refused' <<<"$cjson")"
# The text shows what the JSON carries: totals, and each host's row.
same classes-totals "$(jq -r '.totals | "  requests   \(.requests) (\(.allowed) allowed, \(.denied) denied, \(.refused) refused, \(.failed) failed, \(.distrust) distrust)"' <<<"$cjson")" \
	"$(grep '^  requests ' <<<"$ctext")"
while read -r hp want; do
	got=$(grep -E "^  $hp " <<<"$ctext" | awk '{print $2, $3, $4, $5, $6, $7}')
	same "classes-host $hp" "$got" "$want"
done < <(jq -r '.hosts[] | "\(.host):\(.port) \(.requests) \(.allowed) \(.denied) \(.refused) \(.failed) \(.distrust)"' <<<"$cjson")
same classes-hosts "$(jq '.hosts | length' <<<"$cjson")" 4

# --- how connections arrived: via, captured connections, the stub's answers -----
# Crafted by hand: lines as the capture, SOCKS and DNS parts write them.
cap=$tmp/capture.jsonl
{
	rec request api.test 443 method '"CONNECT"' via '"capture"' decision '"allow"'
	printf '{"sandbox":"run1","conn":%d,"event":"end","via":"capture","status":200,"bytes_up":5}\n' "$n"
	rec request api.test 443 method '"CONNECT"' via '"proxy"' decision '"allow"'
	rec request github.com 22 method '"CONNECT"' via '"socks"' decision '"allow"'
	rec request db.test 5555 method '"CONNECT"' via '"capture"' decision '"deny"' \
		reason '"port 5555 is not captured: no allow rule names it"'
	rec request 192.0.2.9 5000 method '"UDP"' via '"capture"' decision '"deny"' \
		reason '"UDP to 192.0.2.9:5000 is not captured"'
	rec request evil.test 443 method '"CONNECT"' via '"capture"' decision '"deny"' \
		reason '"no rule allows evil.test:443"'
	printf '{"sandbox":"run1","event":"dns","host":"api.test","qtype":"A","answer":"synthetic"}\n'
	printf '{"sandbox":"run1","event":"dns","host":"api.test","qtype":"TXT","answer":"nodata"}\n'
	printf '{"sandbox":"run1","event":"dns","host":"nothere.test","qtype":"A","answer":"nxdomain"}\n'
} >"$cap"
run via 0 "$PINHOLE" log "$cap"
vtext=$out
expect via "$vtext" '^  api\.test:443 \(proxy, captured\) +2 +2 +0 '
expect via "$vtext" '^  github\.com:22 \(socks\) +1 +1 +0 '
expect via "$vtext" '^  1x  db\.test:5555 \(captured\)  port 5555 is not captured: no allow rule names it$'
expect via "$vtext" '^      no allow can permit this: UDP other than DNS never leaves the sandbox$'
expect via "$vtext" '^Looked up directly and denied \(1 name; '
expect via "$vtext" '^  1x  nothere\.test: the policy names no such host \(NXDOMAIN in the sandbox\)$'
refuse via "$vtext" 'x  api\.test: '
expect via "$vtext" '^Captured \(4 connections from programs that ignore the proxy variables\):$'
expect via "$vtext" '^      api\.test was resolved by a program that ignores the proxy variables; it was captured$'
expect via "$vtext" '^      to let it through: allow db\.test:5555$'
expect via "$vtext" '^      to let it through: allow evil\.test:443$'
# The suggested allow lines pass check, and let the captured ones through.
grep -E '^      allow ' <<<"$vtext" | sed 's/^ *//' >"$tmp/via-suggested.conf"
same via-suggest-count "$(wc -l <"$tmp/via-suggested.conf")" 2
run via-suggest-check 0 "$PINHOLE" check "$tmp/via-suggested.conf"
run via-suggest-db 0 "$PINHOLE" explain -p "$tmp/via-suggested.conf" db.test:5555
run via-json 0 "$PINHOLE" log --json "$cap"
same via-json-hosts "$(jq -c '[.hosts[] | select(.via) | "\(.host):\(.port)=\(.via | join(","))"] | sort' <<<"$out")" \
	'["192.0.2.9:5000=capture","api.test:443=proxy,capture","db.test:5555=capture","evil.test:443=capture","github.com:22=socks"]'
same via-json-captured "$(jq -c '[.captured[] | [.host, .count, .denied]] | sort' <<<"$out")" \
	'[["192.0.2.9",1,1],["api.test",1,0],["db.test",1,1],["evil.test",1,1]]'
same via-json-kinds "$(jq -c '[.denied[].kind] | sort' <<<"$out")" '["no-rule","not-captured","udp"]'
same via-json-answers "$(jq -c '[.looked_up[] | [.name, .denied, (.answers | join(","))]]' <<<"$out")" \
	'[["nothere.test",1,"nxdomain"],["api.test",0,"synthetic,nodata"]]'
# --denied: the captured denials stay in Denied, the Captured part goes.
run via-denied 0 "$PINHOLE" log --denied "$cap"
expect via-denied "$out" '^  1x  db\.test:5555 \(captured\)  port 5555 is not captured'
refuse via-denied "$out" '^Captured'
run via-denied-json 0 "$PINHOLE" log --denied --json "$cap"
same via-denied-json "$(jq -c 'has("captured")' <<<"$out")" false
# --host: the captured part of that host only.
run via-host 0 "$PINHOLE" log --host DB.test "$cap"
expect via-host "$out" '^Captured \(1 connection from programs that ignore the proxy variables\):$'
refuse via-host "$out" 'api\.test'
# An older log (no via, the stub refusing): no mark, no new section or key.
run via-old 0 "$PINHOLE" log "$cls"
refuse via-old "$out" 'Captured|\((proxy|socks|captured)'
run via-old-json 0 "$PINHOLE" log --json "$cls"
same via-old-json-keys "$(jq -c '[keys[], (.hosts[] | has("via")), (.looked_up[] | has("answers"))] | unique' <<<"$out")" \
	'[false,"denied","distrust","hosts","looked_up","totals"]'

# --- the suggested allow lines do allow the denied requests ---------------------
run suggest 0 "$PINHOLE" log --denied "$log"
grep -E '^      allow ' <<<"$out" | sed 's/^ *//' >"$tmp/suggested.conf"
same suggest-count "$(wc -l <"$tmp/suggested.conf")" 4
run suggest-check 0 "$PINHOLE" check "$tmp/suggested.conf"
run suggest-evil 0 "$PINHOLE" explain -p "$tmp/suggested.conf" evil.example:443
run suggest-path 0 "$PINHOLE" explain -p "$tmp/suggested.conf" \
	https://github.com/acme/tools/info/refs
run suggest-path-only 1 "$PINHOLE" explain -p "$tmp/suggested.conf" \
	https://github.com/acme/other/info/refs
run suggest-method 0 "$PINHOLE" explain -p "$tmp/suggested.conf" \
	https://api.github.com/user/repos DELETE
run suggest-port 0 "$PINHOLE" explain -p "$tmp/suggested.conf" pypi.org:8443

# --- suggestions stay narrow: never every path of a host ----------------------
narrow=$tmp/narrow.jsonl
{
	for p in /robots.txt / /acme/tools.git/info/refs /acme/tools.git/info/HEAD \
		'/a?b'; do
		rec request narrow.test 443 method '"GET"' path "\"$p\"" \
			decision '"deny"' rule '"p.conf:4"' \
			reason "\"path $p is not allowed by rule p.conf:4\""
	done
	rec request api.narrow.test 443 method '"DELETE"' path '"/user"' \
		decision '"deny"' rule '"p.conf:6"' \
		reason '"method DELETE is not allowed by rule p.conf:6"'
} >"$narrow"
run narrow 0 "$PINHOLE" log --denied "$narrow"
expect narrow "$out" '^      allow narrow\.test:443 \{ paths /robots\.txt \}$'
expect narrow "$out" '^      allow narrow\.test:443 \{ paths / \}$'
expect narrow "$out" '^      allow narrow\.test:443 \{ paths /acme/tools\.git/info/\* \}$'
expect narrow "$out" '^      allow api\.narrow\.test:443 \{ methods DELETE paths /user \}$'
expect narrow "$out" '^      no allow line: the log names no usable path$'
refuse narrow "$out" 'paths /\*'
grep -E '^      allow ' <<<"$out" | sed 's/^ *//' | sort -u >"$tmp/narrow.conf"
same narrow-count "$(wc -l <"$tmp/narrow.conf")" 4
run narrow-check 0 "$PINHOLE" check "$tmp/narrow.conf"
for u in /robots.txt / /acme/tools.git/info/refs /acme/tools.git/info/HEAD; do
	run "narrow-explain $u" 0 "$PINHOLE" explain -p "$tmp/narrow.conf" \
		"https://narrow.test$u"
done
for u in /robots.txt.bak /index.html /acme/tools.git/HEAD /acme/other; do
	run "narrow-explain-no $u" 1 "$PINHOLE" explain -p "$tmp/narrow.conf" \
		"https://narrow.test$u"
done
run narrow-method 0 "$PINHOLE" explain -p "$tmp/narrow.conf" \
	https://api.narrow.test/user DELETE
run narrow-method-no 1 "$PINHOLE" explain -p "$tmp/narrow.conf" \
	https://api.narrow.test/user/keys DELETE

# --- malformed lines --------------------------------------------------------------
bad_log=$tmp/bad.jsonl
{
	rec request a.test 443 decision '"allow"'
	echo 'this is not JSON'
	echo '[1,2,3]'
	echo '{"event":"request","host":"a.test","port":"443"}'
	echo '{"host":"a.test","port":443}'
	echo ''
	echo '{"event":"request","decision":"allow","decision":"deny"}'
	rec request a.test 443 decision '"deny"' reason '"no rule allows a.test:443"'
} >"$bad_log"
# Line 9: longer than 1 MiB.
{ printf '{"event":"end","error":"'; head -c 1100000 /dev/zero | tr '\0' x; printf '"}\n'; } >>"$bad_log"
rec request b.test 443 decision '"allow"' >>"$bad_log"
run malformed 0 "$PINHOLE" log "$bad_log"
expect malformed "$err" "^$bad_log:2: malformed record \(not JSON: "
expect malformed "$err" "^$bad_log:3: malformed record \(not an object\)\$"
expect malformed "$err" "^$bad_log:4: malformed record \(port is not an integer\)\$"
expect malformed "$err" "^$bad_log:5: malformed record \(no event\)\$"
expect malformed "$err" "^$bad_log:7: malformed record \(not JSON: duplicate object key"
expect malformed "$err" "^$bad_log:9: malformed record \(line longer than 1048576 bytes\)\$"
same malformed-n "$(grep -c 'malformed record' <<<"$err")" 6
expect malformed "$out" '^  records    3$'
expect malformed "$out" '^  malformed  6 lines \(first at line 2\)$'
expect malformed "$out" '^  1x  a\.test:443  no rule allows a\.test:443$'
run malformed-stdin 0 "$PINHOLE" log <"$bad_log"
expect malformed-stdin "$err" '^<stdin>:4: malformed record \(port is not an integer\)$'

# --- a file being appended to ---------------------------------------------------
grow=$tmp/grow.jsonl
rec request a.test 443 decision '"allow"' >"$grow"
printf '{"ts":"2026-11-29T10:05:00.000Z","event":"request","host":"b.te' >>"$grow"
run incomplete 0 "$PINHOLE" log "$grow"
[ -z "$err" ] && ok || bad "incomplete: reported: $err"
expect incomplete "$out" '^  records    1$'
expect incomplete "$out" '^  malformed  0 lines$'
expect incomplete "$out" '^  1 incomplete line at the end ignored$'
same incomplete-json "$("$PINHOLE" log --json "$grow" | jq .totals.incomplete)" 1
printf 'st","port":443,"decision":"deny","reason":"no rule allows b.test:443"}\n' >>"$grow"
run completed 0 "$PINHOLE" log "$grow"
expect completed "$out" '^  records    2$'
expect completed "$out" '^  1x  b\.test:443  no rule allows b\.test:443$'
refuse completed "$out" 'incomplete'
# A writer appending while the review reads: no crash, no malformed line.
(
	for i in $(seq 1 300); do
		rec request c.test 443 decision '"allow"' >>"$grow"
	done
) &
writer=$!
for i in 1 2 3 4 5; do
	"$PINHOLE" log "$grow" >/dev/null 2>"$tmp/err" || bad "concurrent: exit $?"
	grep -q malformed "$tmp/err" && bad "concurrent: $(cat "$tmp/err")"
done
wait "$writer"
ok

# --- hostile characters: escaped in the review, \u escapes in --json -----------
# Each code point with the bytes of its UTF-8 as the review must print them.
hostile_cps='202a:\xe2\x80\xaa 202b:\xe2\x80\xab 202c:\xe2\x80\xac
202d:\xe2\x80\xad 202e:\xe2\x80\xae 2066:\xe2\x81\xa6 2067:\xe2\x81\xa7
2068:\xe2\x81\xa8 2069:\xe2\x81\xa9 200e:\xe2\x80\x8e 200f:\xe2\x80\x8f
061c:\xd8\x9c 2028:\xe2\x80\xa8 2029:\xe2\x80\xa9 200b:\xe2\x80\x8b
200c:\xe2\x80\x8c 200d:\xe2\x80\x8d 2060:\xe2\x81\xa0 feff:\xef\xbb\xbf
00ad:\xc2\xad 009b:\xc2\x9b 0085:\xc2\x85 007f:\x7f 001b:\x1b'
hostile=$tmp/hostile.jsonl
for pair in $hostile_cps; do
	cp=${pair%%:*}
	rec request "h$cp.test" 443 decision '"deny"' \
		reason "\"a<\\u$cp>b caf\\u00e9\"" secret "\"s<\\u$cp>\""
done >"$hostile"
run hostile 0 "$PINHOLE" log "$hostile"
for pair in $hostile_cps; do
	cp=${pair%%:*}
	want="a<${pair#*:}>b café"
	if grep -qF -- "$want" <<<"$out"; then ok; else
		bad "hostile U+$cp: no '$want' in the review"
	fi
	grep -qF -- "s<${pair#*:}>" <<<"$out" && ok ||
		bad "hostile U+$cp: secret name not escaped"
done
# None of them raw: C0 but the newline, DEL, C1, the format characters.
if printf '%s' "$out" | LC_ALL=C grep -qP \
	'[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f\xad]|\xd8\x9c|\xe2\x80[\x8b-\x8f\xa8-\xae]|\xe2\x81[\xa0\xa6-\xa9]|\xef\xbb\xbf'; then
	bad "hostile: raw bytes in the review: $(printf '%s' "$out" | od -An -tx1 | head -5)"
else ok; fi
# Valid UTF-8 passes as it is: é is c3 a9, once per denial.
same hostile-utf8 "$(printf '%s' "$out" | LC_ALL=C grep -c $'caf\xc3\xa9$')" \
	"$(wc -l <"$hostile")"
run hostile-json 0 "$PINHOLE" log --json "$hostile"
if printf '%s' "$out" | LC_ALL=C grep -qP '[^\x0a\x20-\x7e]'; then
	bad "hostile-json: bytes outside printable ASCII: $(printf '%s' "$out" | LC_ALL=C grep -nP '[^\x0a\x20-\x7e]' | head -3)"
else ok; fi
expect hostile-json "$out" 'a<\\u2028>b caf\\u00E9'
expect hostile-json "$out" 'a<\\u007F>b'
# The same strings as the log, once decoded.
same hostile-json-text "$(jq -c '.denied[].reason' <<<"$out" | sort)" \
	"$(jq -c .reason "$hostile" | sort)"

# --- empty input -------------------------------------------------------------------
run empty 0 "$PINHOLE" log /dev/null
expect empty "$out" '^Denied: none$'
expect empty "$out" '^  records    0$'

echo "log: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
