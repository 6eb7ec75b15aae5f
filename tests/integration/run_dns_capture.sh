#!/usr/bin/env bash
# Scenario: the sandbox's DNS stub under capture (issue 12, the default of
# `pinhole run`).  A name the policy may allow resolves to a synthetic
# address (198.18.0.0/15, 2001:2::/48), the same one each time and in any
# case; other types of it get an empty answer (NODATA); a denied or
# unknown name fails at once (NXDOMAIN); TCP and a query sent to any
# address (192.0.2.53: every destination is local in the sandbox) are
# answered by the stub; the audit log has one "dns" record per name with
# its answer.  No real server is asked: nothing here leaves the sandbox.
# usage: run_dns_capture.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin run_dns_capture getent dig python3 jq
W=$T/work
mkdir -p "$W"
cat >"$T/p.conf" <<'EOF'
allow allowed.test
allow *.wild.test
allow db.test:5432
deny bad.wild.test
EOF
LOG=$T/audit.jsonl

# A label of 64 bytes (dig will not send one): FORMERR, no question.
cat >"$W/long.py" <<'EOF'
import socket, struct
q = struct.pack(">HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0)
for label in ("a" * 64, "wild", "test"):
    q += bytes([len(label)]) + label.encode()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.sendto(q + b"\0\0\1\0\1", ("127.0.0.1", 53))
r = s.recv(600)
print("rcode=%d qd=%d an=%d" % (r[3] & 15, struct.unpack(">H", r[4:6])[0],
      struct.unpack(">H", r[6:8])[0]))
EOF

# dig with a bound: one try, 2 s (the stub answers at once).
D='dig +tries=1 +time=2'

prun -p "$T/p.conf" -- sh -c "
	echo '--- getent'
	getent ahosts allowed.test
	timeout 3 getent hosts denied.test
	echo denied=\$?
	echo '--- a'; $D +short @127.0.0.1 allowed.test A
	echo '--- a2'; $D +short @127.0.0.1 allowed.test A
	echo '--- aaaa'; $D +short @127.0.0.1 allowed.test AAAA
	echo '--- wild'; $D +short @127.0.0.1 x.wild.test A
	echo '--- port'; $D +short @127.0.0.1 db.test A
	echo '--- mx'; $D @127.0.0.1 mx.wild.test MX
	echo '--- txt'; $D @127.0.0.1 txt.wild.test TXT
	echo '--- nx'; $D @127.0.0.1 denied.test A
	echo '--- bad'; $D @127.0.0.1 bad.wild.test AAAA
	echo '--- tcp'; $D +tcp +short @127.0.0.1 tcp.wild.test A
	echo '--- case'; $D +noall +question +answer @127.0.0.1 AlLoWeD.TeSt A
	echo '--- doc'; $D @192.0.2.53 doc.wild.test A
	echo '--- long'; python3 long.py
	echo '--- end'"
equal "run: status" "$RC" 0
# section NAME: the lines of OUT between '--- NAME' and the next '---'.
section() { awk -v s="--- $1" '$0 == s {on = 1; next} /^--- / {on = 0} on' <<<"$OUT"; }

G=$(section getent)
# (which family comes first depends on the routes: RFC 6724)
expect "getent ahosts: the name" "$G" ' STREAM allowed\.test$'
expect "getent ahosts: a synthetic IPv4 address" "$G" \
	'^198\.1[89]\.[0-9]+\.[0-9]+ +STREAM'
if have_ipv6; then
	expect "getent ahosts: a synthetic IPv6 address" "$G" '^2001:2:[0-9a-f:]+ +STREAM'
fi
expect "getent: a denied name fails (status 2)" "$G" '^denied=2$'

A=$(section a)
expect "dig A: 198.18.0.0/15" "$A" '^198\.1[89]\.[0-9]+\.[0-9]+$'
equal "dig A: the same address again" "$(section a2)" "$A"
check "dig A: getent gave it too" grep -qF -- "$A " <<<"$G"
expect "dig AAAA: 2001:2::/48" "$(section aaaa)" '^2001:2:0?:'
expect "dig A under a wildcard" "$(section wild)" '^198\.1[89]\.'
expect "dig A of a name allowed on one port" "$(section port)" '^198\.1[89]\.'
refuse "two names, two addresses" "$(section wild)" "^$A\$"
for s in mx txt; do
	S=$(section $s)
	expect "dig ${s^^}: NOERROR" "$S" 'status: NOERROR'
	expect "dig ${s^^}: no answer (NODATA)" "$S" 'ANSWER: 0,'
done
expect "dig: a denied name is NXDOMAIN" "$(section nx)" 'status: NXDOMAIN'
expect "dig: a wildcard's denied name is NXDOMAIN" "$(section bad)" \
	'status: NXDOMAIN'
expect "dig +tcp: answered" "$(section tcp)" '^198\.1[89]\.'
C=$(section case)
expect "another case: the question as sent" "$C" '^;AlLoWeD\.TeSt\.[[:space:]]+IN[[:space:]]+A$'
expect "another case: the answer named so" "$C" \
	"^AlLoWeD\.TeSt\.[[:space:]]+60[[:space:]]+IN[[:space:]]+A[[:space:]]+$A\$"
S=$(section doc)
expect "dig @192.0.2.53: answered by the stub" "$S" 'status: NOERROR'
expect "dig @192.0.2.53: from 192.0.2.53" "$S" 'SERVER: 192\.0\.2\.53#53'
expect "dig @192.0.2.53: a synthetic address" "$S" \
	'^doc\.wild\.test\.[[:space:]]+60[[:space:]]+IN[[:space:]]+A[[:space:]]+198\.1[89]\.'
expect "a label over 63 bytes: FORMERR" "$(section long)" '^rcode=1 qd=0 an=0$'
expect "the script ran to its end" "$OUT" '^--- end$'

# --- the audit log: one dns record per name, with its answer ---------------
check "audit: every line parses" jq -e . "$LOG" >/dev/null
answers() {
	jq -r "select(.event==\"dns\" and .host==\"$1\") | .answer" "$LOG" |
		sort | uniq -c | awk '{print $1, $2}'
}
for n in allowed.test x.wild.test db.test tcp.wild.test doc.wild.test; do
	equal "audit: one dns record for $n" "$(answers $n)" "1 synthetic"
done
for n in mx.wild.test txt.wild.test; do
	equal "audit: one dns record for $n" "$(answers $n)" "1 nodata"
done
for n in denied.test bad.wild.test; do
	equal "audit: one dns record for $n" "$(answers $n)" "1 nxdomain"
done
equal "audit: the qtype of the first query" \
	"$(jq -r 'select(.host=="mx.wild.test") | .qtype' "$LOG")" MX
sanitizer_clean "the engine" "$T/prun.err"

# --- a Python program resolves by itself ------------------------------------
prun -p "$T/p.conf" -- python3 -c '
import socket
for fam in (socket.AF_INET, socket.AF_INET6):
    try:
        print(socket.getaddrinfo("py.wild.test", 443, fam)[0][4][0])
    except socket.gaierror as e:
        print("gaierror", e.errno)
try:
    socket.getaddrinfo("nope.test", 443)
except socket.gaierror as e:
    print("nope", e.errno == socket.EAI_NONAME)'
equal "python: status" "$RC" 0
expect "python: a synthetic IPv4 address" "$OUT" '^198\.1[89]\.'
if have_ipv6; then
	expect "python: a synthetic IPv6 address" "$OUT" '^2001:2:'
fi
expect "python: a denied name is EAI_NONAME" "$OUT" '^nope True$'

ph_end
