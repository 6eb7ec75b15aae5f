#!/usr/bin/env bash
# Scenario: decisions of `pinhole proxy` seen by a real client (curl and
# raw requests) against nginx on 127.0.0.1: allowed plain HTTP and CONNECT,
# denials and their reasons, deny over allow, ports, private addresses,
# numeric and IPv4-mapped spellings of 127.0.0.1, origin-form requests,
# the Host field, interception rules (501), plain-HTTP `methods`, `paths`
# and `inject`; then the audit log (no query, credential or secret).
# usage: proxy_allow_deny.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin proxy_allow_deny nginx openssl curl jq

gen_certs || exit 1
mkdir -p "$T/www/allowed"
echo "allowed file" >"$T/www/allowed/a.txt"
echo "secret file" >"$T/www/secret.txt"
start_nginx || exit 1

pol=$T/main.conf
cat >"$pol" <<EOF
# proxy_allow_deny: main policy
resolve web.test 127.0.0.1
resolve priv.test 127.0.0.1
resolve ok.zone.test 127.0.0.1
resolve bad.zone.test 127.0.0.1
resolve files.test 127.0.0.1
allow web.test:$H_PORT,$S_PORT { private }
allow priv.test:$H_PORT
allow *.zone.test:$H_PORT { private }
deny bad.zone.test
allow files.test:$H_PORT { private paths /allowed/* }
allow api.test:$S_PORT { private paths /v1/* }
allow methods.test:$H_PORT { private methods GET HEAD }
secret key file $T/key
allow inject.test:$H_PORT,$S_PORT { private inject header X-Api-Key key }
resolve methods.test 127.0.0.1
resolve inject.test 127.0.0.1
EOF
KEY=KEYVALUE$$z
printf '%s\n' "$KEY" >"$T/key"
chmod 600 "$T/key"
start_proxy main "$pol" || exit 1
MAIN_PORT=$PX_PORT MAIN_PID=$PX_PID MAIN_LOG=$PX_LOG MAIN_ERR=$PX_ERR

# reason_is NAME PATTERN: the last response carries X-Pinhole-Reason
# matching PATTERN.
reason_is() {
	expect "$1 reason" "$HEADERS" "^X-Pinhole-Reason: .*$2"
}

# --- allowed ----------------------------------------------------------------
fetch "http://web.test:$H_PORT/index.html"
equal "plain GET status" "$CODE" 200
equal "plain GET body" "$BODY" "hello from nginx"
refuse "plain GET is not proxy-made" "$HEADERS" '^X-Pinhole-Reason'

fetch "https://web.test:$S_PORT/index.html" --cacert "$T/ca.pem"
equal "CONNECT GET status" "$CODE" 200
equal "CONNECT GET body" "$BODY" "hello from nginx"
expect "CONNECT answer" "$HEADERS" '^HTTP/1\.1 200 Connection established'

fetch "http://web.test:$H_PORT/whoami?a=1&b=2"
equal "query passed upstream" "$BODY" "host=web.test uri=/whoami?a=1&b=2"

# --- denied -----------------------------------------------------------------
fetch "http://evil.test:$H_PORT/"
equal "unknown host status" "$CODE" 403
reason_is "unknown host" "no rule allows evil.test:$H_PORT"

rawreq 'CONNECT evil.test:%s HTTP/1.1\r\nHost: evil.test:%s\r\n\r\n' "$S_PORT" "$S_PORT"
equal "unknown host CONNECT status" "$RAW_STATUS" 403
expect "unknown host CONNECT reason" "$RAW" "^X-Pinhole-Reason: no rule allows evil.test:$S_PORT"
equal "unknown host CONNECT: closed after the reply (raw status)" "$RAW_RC" 0
CONNECT_CODE=$(px_curl -o /dev/null -w '%{http_connect}' --cacert "$T/ca.pem" \
	"https://evil.test:$S_PORT/" 2>/dev/null)
equal "unknown host CONNECT status (curl)" "$CONNECT_CODE" 403

fetch "http://ok.zone.test:$H_PORT/index.html"
equal "wildcard allow status" "$CODE" 200
fetch "http://bad.zone.test:$H_PORT/index.html"
equal "deny over earlier allow status" "$CODE" 403
reason_is "deny over earlier allow" "denied by rule $pol:10\$"

fetch "http://web.test:9/"
equal "port not allowed status" "$CODE" 403
reason_is "port not allowed" "port 9 is not allowed for web.test"

fetch "http://priv.test:$H_PORT/"
equal "private refusal status" "$CODE" 403
reason_is "private refusal" "priv.test resolves to 127.0.0.1:$H_PORT \(loopback\): not allowed without 'private' in the rule"

# curl rewrites numeric hosts itself: the spellings go out raw.
rawreq 'GET http://[::ffff:127.0.0.1]:%s/ HTTP/1.1\r\nHost: [::ffff:127.0.0.1]:%s\r\n\r\n' "$H_PORT" "$H_PORT"
equal "mapped IPv6 literal status" "$RAW_STATUS" 403
expect "mapped IPv6 literal reason" "$RAW" "^X-Pinhole-Reason: no rule allows 127\.0\.0\.1:$H_PORT"
rawreq 'GET http://[::1]:%s/ HTTP/1.1\r\nHost: [::1]:%s\r\n\r\n' "$H_PORT" "$H_PORT"
equal "IPv6 loopback literal status" "$RAW_STATUS" 403
expect "IPv6 loopback literal reason" "$RAW" "^X-Pinhole-Reason: no rule allows \[::1\]:$H_PORT"
rawreq 'GET http://2130706433:%s/ HTTP/1.1\r\nHost: 2130706433:%s\r\n\r\n' "$H_PORT" "$H_PORT"
equal "decimal IPv4 without a rule status" "$RAW_STATUS" 403
expect "decimal IPv4 without a rule reason" "$RAW" "^X-Pinhole-Reason: no rule allows 127\.0\.0\.1:$H_PORT"

# --- not for a proxy --------------------------------------------------------
rawreq 'GET /index.html HTTP/1.1\r\nHost: web.test\r\n\r\n'
equal "origin-form status" "$RAW_STATUS" 400
expect "origin-form reason" "$RAW" '^X-Pinhole-Reason: .*absolute URL'

rawreq 'CONNECT api.test:%s HTTP/1.1\r\nHost: api.test:%s\r\n\r\n' "$S_PORT" "$S_PORT"
equal "CONNECT to an interception rule status" "$RAW_STATUS" 501
expect "CONNECT to an interception rule reason" "$RAW" '^X-Pinhole-Reason: .*interception'

# --- the upstream sees the URL's host; names are normalised ----------------
rawreq 'GET http://web.test:%s/whoami HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n' "$H_PORT"
equal "Host field differing from the URL: status" "$RAW_STATUS" 200
expect "Host field differing from the URL: upstream sees the URL's" "$RAW" \
	"^host=web.test uri=/whoami\$"
fetch "http://WEB.Test.:$H_PORT/whoami"
equal "upper case and trailing dot: status" "$CODE" 200
open_conn
send "$CONN" 'CONNECT WEB.TEST.:%s HTTP/1.1\r\nHost: WEB.TEST.:%s\r\n\r\n' "$S_PORT" "$S_PORT"
read_response "$CONN" 10
equal "CONNECT upper case and trailing dot: status" "$RESP_STATUS" 200
exec {CONN}>&-

# --- plain-HTTP methods; credentials never over plain HTTP -------------------
fetch "http://methods.test:$H_PORT/index.html"
equal "allowed method status" "$CODE" 200
fetch "http://methods.test:$H_PORT/index.html" -X DELETE
equal "other method status" "$CODE" 403
reason_is "other method" "method DELETE is not allowed by rule $pol:13"
fetch "http://inject.test:$H_PORT/index.html"
equal "inject rule over plain HTTP status" "$CODE" 403
reason_is "inject rule over plain HTTP" "credentials are never sent over plain HTTP"
CONNECT_CODE=$(px_curl -o /dev/null -w '%{http_connect}' --cacert "$T/ca.pem" \
	"https://inject.test:$S_PORT/" 2>/dev/null)
equal "inject rule through CONNECT status" "$CONNECT_CODE" 501

# --- plain-HTTP paths -------------------------------------------------------
fetch "http://files.test:$H_PORT/allowed/a.txt"
equal "allowed path status" "$CODE" 200
equal "allowed path body" "$BODY" "allowed file"
fetch "http://files.test:$H_PORT/secret.txt"
equal "other path status" "$CODE" 403
reason_is "other path" "path /secret.txt is not allowed by rule $pol:11"
fetch "http://files.test:$H_PORT/allowed/../secret.txt" --path-as-is
equal "dot-dot path status" "$CODE" 403
reason_is "dot-dot path" "path /secret.txt is not allowed"
refuse "dot-dot path body" "$BODY" "secret file"
fetch "http://files.test:$H_PORT/allowed/%2e%2e/secret.txt" --path-as-is
case $CODE in 400 | 403) ok ;; *) bad "encoded dot-dot path: status $CODE, want 400 or 403" ;; esac
refuse "encoded dot-dot path body" "$BODY" "secret file"

# --- query strings never reach the log --------------------------------------
qs=token=SECRETQ$$x
fetch "http://web.test:$H_PORT/whoami?$qs"
equal "query request status" "$CODE" 200
equal "query request upstream" "$BODY" "host=web.test uri=/whoami?$qs"
fetch "http://files.test:$H_PORT/allowed/a.txt?$qs"
equal "query on a paths rule status" "$CODE" 200
fetch "http://web.test:$H_PORT/index.html" -H "Authorization: Bearer SECRETQ-auth" \
	-H "Cookie: c=SECRETQ-cookie" -H "Proxy-Authorization: Basic SECRETQ-pa"
equal "credentials in headers status" "$CODE" 200
fetch "http://evil.test:$H_PORT/x?$qs"
equal "query on a denied host status" "$CODE" 403
refuse "query in the reason" "$HEADERS" "SECRETQ"

# --- address rules: numeric spellings decided as 127.0.0.1 ------------------
pol2=$T/addr.conf
printf 'allow 127.0.0.1:%s\n' "$H_PORT" >"$pol2"
start_proxy addr "$pol2" || exit 1
for spelling in 2130706433 127.1 0x7f.0.0.1 '[::ffff:127.0.0.1]'; do
	rawreq 'GET http://%s:%s/index.html HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n' \
		"$spelling" "$H_PORT" "$spelling" "$H_PORT"
	equal "address rule, $spelling: status" "$RAW_STATUS" 200
	expect "address rule, $spelling: body" "$RAW" '^hello from nginx$'
done
hosts=$(log_query "$PX_LOG" 'select(.event == "request") | .host' | sort -u)
equal "address rule: hosts in the log" "$hosts" '"127.0.0.1"'
rules=$(log_query "$PX_LOG" 'select(.event == "request") | .rule' | sort -u)
equal "address rule: rule in the log" "$rules" "\"$pol2:1\""
stop_proxy addr
audit_wellformed addr "$PX_LOG"

# --- the audit log ----------------------------------------------------------
stop_proxy main "$MAIN_PID" "$MAIN_ERR"
log=$MAIN_LOG
audit_wellformed main "$log"
n=$(log_query "$log" 'select(.via != "proxy")' | wc -l)
equal "log: every record says via proxy" "$n" 0
refuse "no query string or credential header in the log" "$(cat "$log")" 'SECRETQ|token='
refuse "no secret value in the log or on stderr" "$(cat "$log" "$MAIN_ERR")" "$KEY"
n=$(log_query "$log" 'select(.event == "request" and .method == "CONNECT" and
	.host == "web.test" and .decision == "allow" and .rule == "'"$pol"':7")' | wc -l)
[ "$n" -ge 1 ] && ok || bad "log: no allowed CONNECT record for web.test"
n=$(log_query "$log" 'select(.event == "end" and .method == "CONNECT" and
	.host == "web.test" and .status == 200 and .addr == "127.0.0.1:'"$S_PORT"'"
	and .bytes_up > 0 and .bytes_down > 0)' | wc -l)
[ "$n" -ge 1 ] && ok || bad "log: no end record of the CONNECT tunnel"
n=$(log_query "$log" 'select(.event == "request" and .host == "bad.zone.test" and
	.decision == "deny" and .rule == "'"$pol"':10")' | wc -l)
equal "log: deny record names the deny rule" "$n" 1
n=$(log_query "$log" 'select(.event == "request" and .host == "files.test" and
	.path == "/secret.txt" and .decision == "deny")' | wc -l)
[ "$n" -ge 2 ] && ok || bad "log: paths denials with the normalised path ($n)"
n=$(log_query "$log" 'select(.event == "end" and .host == "web.test" and
	.path == "/whoami" and .status == 200)' | wc -l)
[ "$n" -ge 2 ] && ok || bad "log: end records of /whoami have the path without query ($n)"
n=$(log_query "$log" 'select(.event == "request" and .decision == "deny" and
	.status == 400)' | wc -l)
[ "$n" -ge 1 ] && ok || bad "log: the origin-form request has a record"
n=$(log_query "$log" 'select(.event == "request" and .method == "CONNECT" and
	.host == "api.test")' | wc -l)
equal "log: the interception CONNECT has a record" "$n" 1
ph_end
