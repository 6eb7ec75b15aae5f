#!/usr/bin/env bash
# CLI tests of `pinhole check` and `pinhole explain`: output and exit codes.
# usage: cli_check_explain.sh PATH-TO-PINHOLE   (PH_SRCDIR: source tree)
. "$(dirname "$0")/cli_lib.sh"

# --- general --------------------------------------------------------------
run version 0 "$PINHOLE" --version && expect version "$out" '^pinhole [0-9]+\.'
run help 0 "$PINHOLE" --help && expect help "$out" 'check' &&
	expect help "$out" 'explain'
run no-command 2 "$PINHOLE"
run unknown-command 2 "$PINHOLE" frobnicate &&
	expect unknown-command "$err" "unknown command 'frobnicate'"
run check-help 0 "$PINHOLE" check --help && expect check-help "$out" '--secrets'
run explain-help 0 "$PINHOLE" explain --help && expect explain-help "$out" 'TARGET'

# --- check ----------------------------------------------------------------
run check-conf 0 "$PINHOLE" check conf/pinhole.conf conf/profiles/*.conf
expect check-conf "$out" '^conf/pinhole.conf: ok, [0-9]+ rules'
expect check-conf "$out" '^conf/profiles/github.conf: ok'
refuse check-conf "$err" 'warning|error'
# The commented organisation rule of the GitHub profile, enabled as its
# comment says: clean, and the token only on git's three requests for ORG.
sed -e 's/^# secret gh-token/secret gh-token/' -e 's/^# allow github.com:443 {/allow github.com:443 {/' \
	-e 's/^#     \(paths\|methods\|inject\)/    \1/' -e 's/^# }/}/' \
	-e "s|/etc/pinhole/gh-token|$tmp/gh-token|" conf/profiles/github.conf \
	>"$tmp/github-org.conf"
run check-github-org 0 "$PINHOLE" check "$tmp/github-org.conf"
refuse check-github-org "$err" 'warning|error'
for what in info/refs?service=git-upload-pack git-upload-pack git-receive-pack; do
	run "github-org-$what" 0 "$PINHOLE" explain -p "$tmp/github-org.conf" \
		"https://github.com/ORG/repo.git/$what" POST
	expect "github-org-$what" "$out" 'from secret gh-token'
done
run github-org-other 0 "$PINHOLE" explain -p "$tmp/github-org.conf" \
	https://github.com/someone/repo.git/info/refs
refuse github-org-other "$out" 'gh-token'
run github-org-web 0 "$PINHOLE" explain -p "$tmp/github-org.conf" \
	https://github.com/ORG/repo/settings
refuse github-org-web "$out" 'gh-token'
run check-combined 0 "$PINHOLE" check -p conf/profiles/pypi.conf \
	-p conf/profiles/crates.conf
expect check-combined "$out" 'pypi.conf \+ conf/profiles/crates.conf: ok, 6 rules'
run check-none 2 "$PINHOLE" check
run check-badopt 2 "$PINHOLE" check --bogus

cat >"$tmp/three.conf" <<'CONF'
alow pypi.org
allow example.com:99999
allow 10.0.0.1/8
CONF
run check-three 1 "$PINHOLE" check "$tmp/three.conf"
n=$(grep -cE "^$tmp/three.conf:[0-9]+:[0-9]+: " <<<"$err")
[ "$n" -eq 3 ] && ok || bad "check-three: $n diagnostics, want 3"
expect check-three "$err" "three.conf:1:1: unknown keyword 'alow'; did you mean 'allow'\?"
expect check-three "$err" "three.conf:2:7: bad port '99999'"
expect check-three "$err" "three.conf:3:7: '10.0.0.1/8' has host bits set; did you mean '10.0.0.0/8'\?"
expect check-three "$out" '3 errors'
run check-quiet 1 "$PINHOLE" check -q "$tmp/three.conf"
[ -z "$out" ] && ok || bad "check -q printed to stdout: $out"

cat >"$tmp/warn.conf" <<'CONF'
secret spare env SPARE_TOKEN
deny *.example.com
allow a.example.com
CONF
run check-warn 0 "$PINHOLE" check "$tmp/warn.conf"
expect check-warn "$err" 'warn.conf:3:1: warning: this allow can never match'
expect check-warn "$err" "warn.conf:1:8: warning: secret 'spare' is never used"
expect check-warn "$out" '2 warnings'
run check-missing 1 "$PINHOLE" check "$tmp/nonexistent.conf"
expect check-missing "$err" 'nonexistent.conf: cannot open: No such file'

# --secrets: permissions refused, value never printed
value="s3cr3t-$$-value"
printf '%s\n' "$value" >"$tmp/token"
chmod 644 "$tmp/token"
cat >"$tmp/sec.conf" <<CONF
secret tok file token
allow api.test:443 { inject bearer tok }
CONF
run check-nosecrets 0 "$PINHOLE" check "$tmp/sec.conf"
run check-secrets-perm 1 "$PINHOLE" check --secrets "$tmp/sec.conf"
expect check-secrets-perm "$err" 'secret tok: .*token is mode 0644; it must be 0600 or 0400'
chmod 600 "$tmp/token"
run check-secrets-ok 0 "$PINHOLE" check --secrets "$tmp/sec.conf"
expect check-secrets-ok "$out" 'secrets loaded'
refuse check-secrets-ok "$out$err" "$value"

# --- explain ----------------------------------------------------------------
ghline=$(grep -n '^allow github.com:443 {' conf/pinhole.conf | head -1 | cut -d: -f1)
run explain-github 0 "$PINHOLE" explain -p conf/pinhole.conf \
	https://github.com/acme/widgets.git/info/refs
[ "$(head -1 <<<"$out")" = allow ] && ok || bad "explain-github: first line"
expect explain-github "$out" "^rule: conf/pinhole.conf:$ghline\$"
expect explain-github "$out" '^intercept: yes'
expect explain-github "$out" 'from secret gh-token'
run explain-traversal 1 "$PINHOLE" explain -p conf/pinhole.conf \
	'https://github.com/acme/widgets.git/../secret.git/info/refs'
[ "$(head -1 <<<"$out")" = deny ] && ok || bad "explain-traversal: first line"
expect explain-traversal "$out" 'path /acme/secret.git/info/refs is not allowed'
run explain-encoded 2 "$PINHOLE" explain -p conf/pinhole.conf \
	'https://github.com/acme/widgets.git%2f..%2fsecret.git/info/refs'
expect explain-encoded "$err" 'encoded slash'

cat >"$tmp/ip.conf" <<'CONF'
allow 127.0.0.0/8:80 { private }
deny 127.0.0.2
secret k file /nonexistent/secret
allow api.example.com:443 { inject header X-Api-Key k }
allow *.example.com:443
CONF
for t in http://127.1/ http://0x7f.0.0.1/ http://0177.0.0.1/ \
	http://2130706433/ 'http://[::ffff:127.0.0.1]/'; do
	run "explain-ip $t" 0 "$PINHOLE" explain -p "$tmp/ip.conf" "$t"
	expect "explain-ip $t" "$out" '^target: 127.0.0.1:80 GET / \(http\)'
	expect "explain-ip $t" "$out" "^rule: $tmp/ip.conf:1\$"
	expect "explain-ip $t" "$out" '^private: yes'
done
run explain-denyip 1 "$PINHOLE" explain -p "$tmp/ip.conf" http://127.0.0.2/
expect explain-denyip "$out" "^reason: denied by rule $tmp/ip.conf:2"
run explain-apex 1 "$PINHOLE" explain -p "$tmp/ip.conf" example.com:443
expect explain-apex "$out" '^reason: no rule allows example.com:443'
run explain-tunnel 0 "$PINHOLE" explain -p "$tmp/ip.conf" WWW.Example.COM.:443
expect explain-tunnel "$out" '^target: www.example.com:443 \(tunnel\)'
expect explain-tunnel "$out" '^intercept: no'
run explain-port 1 "$PINHOLE" explain -p "$tmp/ip.conf" www.example.com:8443
expect explain-port "$out" 'port 8443 is not allowed'
# The secret file does not exist: explain must not try to read it.
run explain-nosecret 0 "$PINHOLE" explain -p "$tmp/ip.conf" https://api.example.com/v1
expect explain-nosecret "$out" '^rule: .*ip.conf:4$'
expect explain-nosecret "$out" '^inject: X-Api-Key \(header\) from secret k$'
refuse explain-nosecret "$err" 'warning'
run explain-method 0 "$PINHOLE" explain -p "$tmp/ip.conf" api.example.com:443 POST
expect explain-method "$out" '^target: api.example.com:443 POST / \(https\)'
run explain-plain 1 "$PINHOLE" explain -p "$tmp/ip.conf" http://api.example.com:443/
expect explain-plain "$out" 'credentials are never sent over plain HTTP'

run explain-idn 2 "$PINHOLE" explain -p "$tmp/ip.conf" 'https://b%C3%BCcher.de/'
run explain-idn2 2 "$PINHOLE" explain -p "$tmp/ip.conf" "https://bücher.de/"
expect explain-idn2 "$err" 'xn--'
run explain-noport 2 "$PINHOLE" explain -p "$tmp/ip.conf" example.com
expect explain-noport "$err" 'a port is needed'
run explain-nopolicy 2 "$PINHOLE" explain https://example.com/
run explain-badpolicy 2 "$PINHOLE" explain -p "$tmp/three.conf" https://example.com/
expect explain-badpolicy "$err" 'three.conf:1:1:'

# --- paths servers read otherwise, and switching protocols ----------------------
cat >"$tmp/ws.conf" <<'EOC'
allow app.example:443 { paths /allowed/* /ws; upgrade websocket }
allow api.example:443 { methods GET }
allow any.example:443 { upgrade websocket }
EOC
for p in '/allowed/..;/admin' '/allowed/%2e%2e;/admin' '/allowed/.;x/admin' \
	'/allowed/%C0%AE%C0%AE/admin' '/allowed/%E0%80%AE/admin' \
	'/allowed/%252e%252e/admin' '/allowed/%252fadmin'; do
	run "explain-ambiguous $p" 2 "$PINHOLE" explain -p "$tmp/ws.conf" \
		"https://app.example$p"
	expect "explain-ambiguous $p" "$err" "';' parameters|overlong or invalid UTF-8|double percent-encoding"
done
run explain-params 0 "$PINHOLE" explain -p "$tmp/ws.conf" \
	'https://app.example/allowed/a;v=1/b'
expect explain-params "$out" '^target: app.example:443 GET /allowed/a;v=1/b '
run explain-upgrade 0 "$PINHOLE" explain -p "$tmp/ws.conf" -u websocket \
	https://app.example/ws
expect explain-upgrade "$out" '^upgrade: websocket \(nothing is checked after the switch\)$'
run explain-upgrade-other 1 "$PINHOLE" explain -p "$tmp/ws.conf" --upgrade h2c \
	https://app.example/ws
expect explain-upgrade-other "$out" "^reason: upgrade to 'h2c' is not allowed by rule .*ws.conf:1"
run explain-upgrade-methods 1 "$PINHOLE" explain -p "$tmp/ws.conf" -u websocket \
	https://api.example/x
expect explain-upgrade-methods "$out" "upgrade to 'websocket' is not allowed"
run check-upgrade 0 "$PINHOLE" check "$tmp/ws.conf"
expect check-upgrade "$err" 'ws.conf:3:25: warning: upgrade has no effect'

# --- non-HTTP ports: request options are errors; explain names the tunnel ---
cat >"$tmp/plain.conf" <<'CONF'
allow github.com:22 { paths /org/* }
allow db.example.com:443,5432 { methods GET }
CONF
run check-plain 1 "$PINHOLE" check "$tmp/plain.conf"
expect check-plain "$err" 'plain.conf:1:7: github.com:22: port 22 carries ssh, not HTTP: pinhole cannot see requests there, so paths cannot apply; allow it without them \(an opaque tunnel\)$'
expect check-plain "$err" 'plain.conf:2:7: db.example.com:5432: port 5432 carries postgresql, not HTTP: .*move that port to a rule of its own without them'
expect check-plain "$out" '2 errors'
# The same errors stop every command that loads the policy.
run explain-plain-policy 2 "$PINHOLE" explain -p "$tmp/plain.conf" github.com:22
expect explain-plain-policy "$err" 'plain.conf:1:7: github.com:22: port 22 carries ssh'
cat >"$tmp/tcp.conf" <<'CONF'
allow github.com:22
allow db.example.com:5432 *.example.org
CONF
run check-tcp 0 "$PINHOLE" check "$tmp/tcp.conf"
refuse check-tcp "$err" 'warning|error'
run explain-ssh 0 "$PINHOLE" explain -p "$tmp/tcp.conf" github.com:22
expect explain-ssh "$out" '^target: github.com:22 \(tunnel\)$'
expect explain-ssh "$out" '^intercept: no \(opaque TCP tunnel: port 22 carries ssh, not HTTP\)$'
expect explain-ssh "$out" '^dns: .* lookup of github.com in the sandbox gets a synthetic address \(198\.18\.0\.0/15, 2001:2::/48\)'
run explain-db 0 "$PINHOLE" explain -p "$tmp/tcp.conf" DB.example.com:5432
expect explain-db "$out" 'port 5432 carries postgresql, not HTTP'
run explain-web 0 "$PINHOLE" explain -p "$tmp/tcp.conf" www.example.org:443
expect explain-web "$out" '^intercept: no \(opaque tunnel\)$'
run explain-ssh-denied 1 "$PINHOLE" explain -p "$tmp/tcp.conf" gitlab.example:22
expect explain-ssh-denied "$out" '^reason: no rule allows gitlab.example:22'
expect explain-ssh-denied "$out" '^dns: .*gitlab.example .*if an allow rule names it on some port and no deny rule covers all its ports, else NXDOMAIN$'
run explain-conf-ssh 0 "$PINHOLE" explain -p conf/pinhole.conf github.com:22
expect explain-conf-ssh "$out" '^intercept: no \(opaque TCP tunnel: port 22 carries ssh, not HTTP\)$'
run explain-ssh-address 1 "$PINHOLE" explain -p "$tmp/tcp.conf" 192.0.2.1:22
refuse explain-ssh-address "$out" '^dns:'

# --- include: an excerpt at most, never a file others cannot read ---------------
printf 'root:$6$saltsalt$0123456789abcdefghijklmnopqrstuvwxyz:19000::\n' >"$tmp/pw"
chmod 644 "$tmp/pw"
printf 'include %s\n' "$tmp/pw" >"$tmp/inc.conf"
run check-include-excerpt 1 "$PINHOLE" check "$tmp/inc.conf"
expect check-include-excerpt "$err" "pw:1:1: unknown keyword 'root:\\\$6\\\$saltsalt\\\$0123456789abcdefghijklm\\.\\.\\.'"
refuse check-include-excerpt "$err" 'nopqrstuvwxyz'
chmod 600 "$tmp/pw"
run check-include-withheld 1 "$PINHOLE" check "$tmp/inc.conf"
expect check-include-withheld "$err" 'pw:1:1: not valid policy here; its text is not quoted'
refuse check-include-withheld "$err" 'root|salt'

# --- broker configurations: checked with the policies they grant -----------
run check-broker 0 "$PINHOLE" check conf/broker.conf
expect check-broker "$out" '^conf/broker.conf: ok, broker configuration, 3 policies'
refuse check-broker "$err" 'warning|error'
mkdir -p "$tmp/broker"
printf 'allow a.test\n' >"$tmp/broker/good.conf"
printf 'allow a.test\nalow b.test\n' >"$tmp/broker/bad.conf"
printf 'broker {\n  policy good good.conf\n  policy bad bad.conf\n  users 1000\n}\n' \
	>"$tmp/broker/broker.conf"
run check-broker-bad 1 "$PINHOLE" check -p "$tmp/broker/broker.conf"
expect check-broker-bad "$err" "^$tmp/broker/bad.conf:2:1: unknown keyword 'alow'"
expect check-broker-bad "$err" "^$tmp/broker/broker.conf:3: policy bad: its files do not load"
refuse check-broker-bad "$err" 'policy good'
printf 'allow a.test\nbroker {\n  policy good good.conf\n  usres 1000\n}\n' \
	>"$tmp/broker/rules.conf"
run check-broker-rules 1 "$PINHOLE" check "$tmp/broker/rules.conf"
expect check-broker-rules "$err" "rules.conf:1:1: a broker configuration grants policies; rules go in the policy files"
expect check-broker-rules "$err" "rules.conf:4:3: unknown broker statement 'usres'; did you mean 'users'\?"
run explain-broker 2 "$PINHOLE" explain -p conf/broker.conf https://github.com/
expect explain-broker "$err" 'this is a broker configuration \(broker blocks\)'

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
