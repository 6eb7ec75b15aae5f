#!/usr/bin/env bash
# Scenario: the fleet examples of conf/fleet/ (docs/fleet.md), each
# checked by its own tool and, where practical, run on what a real
# `pinhole proxy` wrote.
#  - policies/ci-github.conf: `pinhole check`, then `check --secrets` with
#    a stand-in for the vault CLI that gets exactly the environment the
#    line names (VAULT_ADDR, HOME with its .vault-token) and nothing else;
#  - pinhole-broker.service.d/fleet.conf: `systemd-analyze verify` of the
#    packaged units with the drop-in, silent;
#  - profile.d-pinhole.sh: sets PINHOLE_BROKER for a login shell;
#  - prometheus.yml: `promtool check config`; `promtool check metrics` on
#    a real scrape of `pinhole proxy --metrics`;
#  - rsyslog-pinhole.conf: `rsyslogd -N1` (the Elasticsearch output
#    included); then rsyslogd runs it with the output swapped for a file,
#    on the proxy's audit log (requests to a loopback nginx, allowed and
#    denied): the parsed records come out field by field;
#  - logrotate-pinhole: `logrotate -d`, then a forced rotation while the
#    proxy and rsyslogd run: the old records in the rotated file, the
#    next record at the start of the emptied log (O_APPEND: no hole), and
#    rsyslogd ships it after the truncation.
# vector.toml is not checked: Debian 12 has no Vector package.  No
# network but loopback; every daemon started here is stopped.
# usage: fleet_configs.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin fleet_configs nginx openssl curl jq rsyslogd promtool logrotate \
	systemd-analyze

F=$SRC/conf/fleet
# The packaged units: the source's dist/, or (an unprivileged run's stage
# has none) the build tree's source, as install.sh finds it.
DIST=$SRC/dist
if [ ! -d "$DIST/systemd" ]; then
	BUILD=${PH_BUILDDIR:-$(dirname "$PINHOLE")}
	DIST=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' \
		"$BUILD/CMakeCache.txt" 2>/dev/null)/dist
fi
check "the packaged units are there ($DIST/systemd)" test -d "$DIST/systemd"
ME=$(id -un)
MYGROUP=$(id -gn)

# --- the Vault secret line -------------------------------------------------------
out=$("$PINHOLE" check "$F/policies/ci-github.conf" 2>&1)
equal "ci-github.conf: pinhole check" "$?" 0
expect "ci-github.conf: one secret" "$out" 'ok, 1 rule, 1 secret, 0 warnings'

mkdir -p "$T/vault/bin" "$T/vault/home" "$T/vault/pol"
chmod 700 "$T/vault/home"
printf 's.test-vault-token\n' >"$T/vault/home/.vault-token"
chmod 600 "$T/vault/home/.vault-token"
# The stand-in records its arguments and environment, and answers as
# `vault kv get -field=token` does when its token file is there.
cat >"$T/vault/bin/vault" <<EOF
#!/bin/sh
printf '%s\n' "\$*" >"$T/vault/argv"
env | sort >"$T/vault/env"
[ -r "\$HOME/.vault-token" ] || { echo "no token" >&2; exit 2; }
echo ghp_fromvault0123456789
EOF
chmod 755 "$T/vault/bin/vault"
sed "s|/usr/bin/vault|$T/vault/bin/vault|" "$F/policies/ci-github.conf" \
	>"$T/vault/pol/ci-github.conf"
out=$(env -i PATH=/usr/bin:/bin HOME="$T/vault/home" \
	VAULT_ADDR=https://vault.example.com:8200 OTHER_TOKEN=not-for-helpers \
	"$PINHOLE" check --secrets "$T/vault/pol/ci-github.conf" 2>&1)
equal "vault line: check --secrets" "$?" 0
expect "vault line: loaded" "$out" 'secrets loaded'
refuse "vault line: value never printed" "$out" 'ghp_fromvault'
equal "vault line: arguments" "$(cat "$T/vault/argv" 2>/dev/null)" \
	'kv get -field=token secret/ci/github'
henv=$(cat "$T/vault/env" 2>/dev/null)
expect "vault helper: VAULT_ADDR" "$henv" '^VAULT_ADDR=https://vault\.example\.com:8200$'
expect "vault helper: HOME" "$henv" "^HOME=$T/vault/home\$"
refuse "vault helper: nothing else" "$henv" '^OTHER_TOKEN='

# --- the drop-in -------------------------------------------------------------
# verify checks ExecStart's binary: the copies name the one under test.
U=$T/units
mkdir -p "$U/pinhole-broker.service.d"
cp "$DIST/systemd/pinhole-broker.socket" "$U/"
sed "s|/usr/bin/pinhole|$PINHOLE|" "$DIST/systemd/pinhole-broker.service" \
	>"$U/pinhole-broker.service"
sed "s|/usr/bin/pinhole|$PINHOLE|" "$F/pinhole-broker.service.d/fleet.conf" \
	>"$U/pinhole-broker.service.d/fleet.conf"
(cd "$U" && systemd-analyze verify --man=no ./pinhole-broker.socket \
	./pinhole-broker.service) >"$T/verify.out" 2>&1
equal "drop-in: systemd-analyze verify" "$?" 0
equal "drop-in: verify silent" "$(cat "$T/verify.out")" ""
# The same check sees a mistake in a drop-in (so the one above counts).
echo 'NoSuchKey=1' >>"$U/pinhole-broker.service.d/fleet.conf"
(cd "$U" && systemd-analyze verify --man=no ./pinhole-broker.service) \
	>"$T/verify2.out" 2>&1
expect "drop-in: verify reads it" "$(cat "$T/verify2.out")" "NoSuchKey"

# --- profile.d ---------------------------------------------------------------------
check "profile.d: sh -n" sh -n "$F/profile.d-pinhole.sh"
equal "profile.d: PINHOLE_BROKER" \
	"$(env -i sh -c ". '$F/profile.d-pinhole.sh'; echo \$PINHOLE_BROKER")" \
	/run/pinhole/broker.sock

# --- prometheus.yml --------------------------------------------------------------
out=$(promtool check config "$F/prometheus.yml" 2>&1)
rc=$?
equal "prometheus.yml: promtool check config" "$rc" 0
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | sed 's/^/  | /'

# --- a real audit log and a real scrape ----------------------------------------
gen_certs || exit 1
start_nginx || exit 1
pol=$T/proxy.conf
cat >"$pol" <<EOF
resolve web.test 127.0.0.1
allow web.test:$H_PORT { private }
EOF
start_proxy px "$pol" --metrics 127.0.0.1:0 || exit 1
metrics_up() { file_has "$PX_ERR" '^pinhole: metrics on ' || pid_done "$PX_PID"; }
wait_for 10 metrics_up
M_PORT=$(sed -n 's/^pinhole: metrics on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$PX_ERR" | head -1)
fetch "http://web.test:$H_PORT/index.html"
equal "allowed GET" "$CODE" 200
fetch "http://denied.test/x"
equal "denied GET" "$CODE" 403
records() { [ "$(count_in "$PX_LOG" '"event":"end"')" -ge "$1" ]; }
check "two end records" wait_for 10 records 2
curl -q -sS --max-time 10 -o "$T/scrape.txt" "http://127.0.0.1:$M_PORT/metrics"
equal "scrape" "$?" 0
out=$(promtool check metrics <"$T/scrape.txt" 2>&1)
equal "promtool check metrics on a scrape" "$?" 0
[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/  | /'
expect "scrape has the requests" "$(cat "$T/scrape.txt")" \
	'^pinhole_requests_total\{decision="deny",host="denied.test"'

# --- rsyslog ------------------------------------------------------------------------
# As /etc/rsyslog.conf would include it: a work directory first.
RS=$T/rsyslog
mkdir -p "$RS/work"
printf 'global(workDirectory="%s")\ninclude(file="%s")\n' "$RS/work" \
	"$F/rsyslog-pinhole.conf" >"$RS/check.conf"
out=$(rsyslogd -N1 -f "$RS/check.conf" 2>&1)
rc=$?
equal "rsyslog-pinhole.conf: rsyslogd -N1" "$rc" 0
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | sed 's/^/  | /'

# The run: the proxy's log in, the Elasticsearch output (between its two
# marker lines) swapped for a file of the parsed fields as JSON.
SHIPPED=$RS/shipped.jsonl
{
	printf 'global(workDirectory="%s")\n' "$RS/work"
	printf 'template(name="test_out" type="list") { property(name="$!all-json") constant(value="\\n") }\n'
	sed -e "s|/var/log/pinhole/audit.jsonl|$PX_LOG|" \
		-e "s|/var/log/pinhole/unparsed.log|$RS/unparsed.log|" \
		-e '/# --- output: Elasticsearch/,/# --- end of output/c\
		action(type="omfile" file="'"$SHIPPED"'" template="test_out")' \
		-e '/module(load="omelasticsearch")/d' \
		"$F/rsyslog-pinhole.conf"
} >"$RS/run.conf"
check "the run config swaps the output" file_has "$RS/run.conf" 'type="omfile" file="'
spawn rsyslogd rsyslogd -n -f "$RS/run.conf" -i "$RS/rsyslogd.pid"
RS_PID=$SPAWNED
lines_in() { [ "$(wc -l 2>/dev/null <"$1" || echo 0)" -ge "$2" ]; }
want=$(wc -l <"$PX_LOG")
wait_for 20 lines_in "$SHIPPED" "$want"
equal "rsyslog: every record shipped" "$(wc -l 2>/dev/null <"$SHIPPED")" "$want"
equal "rsyslog: every line parsed JSON" \
	"$(jq -c 'type' "$SHIPPED" 2>/dev/null | sort -u)" '"object"'
expect "rsyslog: allowed request, by field" \
	"$(jq -c 'select(.event == "request" and .decision == "allow") | [.host, .port, .path]' "$SHIPPED")" \
	"^\\[\"web.test\",$H_PORT,\"/index.html\"\\]\$"
expect "rsyslog: denied request, by field" \
	"$(jq -c 'select(.event == "request" and .decision == "deny") | [.host, .reason]' "$SHIPPED")" \
	'^\["denied.test","no rule allows denied.test:80"\]$'
expect "rsyslog: end record, by field" \
	"$(jq -c 'select(.event == "end" and .host == "denied.test") | [.status, .bytes_down]' "$SHIPPED")" \
	'^\[403,0\]$'
expect "rsyslog: the shipper's host added" \
	"$(jq -r '.shipper_host' "$SHIPPED" | sort -u)" "^$(hostname)\$"
check "rsyslog: nothing unparsed" test ! -s "$RS/unparsed.log"

# --- logrotate -----------------------------------------------------------------------
LR=$T/logrotate
mkdir -p "$LR"
sed -e "s|/var/log/pinhole/audit.jsonl|$PX_LOG|" \
	-e "s|su pinhole pinhole|su $ME $MYGROUP|" \
	"$F/logrotate-pinhole" >"$LR/pinhole"
chmod 644 "$LR/pinhole"
out=$(logrotate -d -s "$LR/state" "$LR/pinhole" 2>&1)
equal "logrotate-pinhole: logrotate -d" "$?" 0
refuse "logrotate -d: no error" "$out" '^error:'
before=$(wc -l <"$PX_LOG")
logrotate -f -s "$LR/state" "$LR/pinhole" >"$LR/out" 2>&1
equal "logrotate -f" "$?" 0
rotated=$(find "$(dirname "$PX_LOG")" -maxdepth 1 -name "$(basename "$PX_LOG")-*" | head -1)
check "rotated file made" test -n "$rotated"
equal "rotated file holds the old records" "$(wc -l 2>/dev/null <"$rotated")" "$before"
equal "log emptied" "$(wc -c <"$PX_LOG")" 0
fetch "http://web.test:$H_PORT/index.html?after"
equal "GET after the rotation" "$CODE" 200
check "one end record in the emptied log" wait_for 10 records 1
equal "the next record starts the emptied log (no hole)" \
	"$(head -c 1 "$PX_LOG")" '{'
equal "no NUL bytes in the log" "$(tr -d '\000' <"$PX_LOG" | wc -c)" "$(wc -c <"$PX_LOG")"
audit_wellformed "log after rotation" "$PX_LOG"
after() { [ "$(jq -c 'select(.event == "request" and .path == "/index.html")' "$SHIPPED" 2>/dev/null | wc -l)" -eq 2 ]; }
wait_for 20 after
check "rsyslog ships the record written after the truncation" after

kill -TERM "$RS_PID" 2>/dev/null
wait_exit "$RS_PID" 10
check "rsyslogd stopped" test "$EXIT_STATUS" -ne 255
stop_proxy px
ph_end
