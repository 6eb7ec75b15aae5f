#!/usr/bin/env bash
# Scenario: programs that ignore the proxy variables and resolve names
# themselves inside `pinhole run --no-capture` (run_dns_capture.sh has
# the stub under capture, the default).  The sandbox's /etc/resolv.conf names
# its DNS stub (127.0.0.1:53, served by the engine outside), which
# refuses every name at once and asks no real resolver: getent, Python's
# getaddrinfo and Node's fetch fail fast; pinhole's stderr names the name
# and the proxy variables, once per name; the audit log has one "dns"
# record per name, and `pinhole log` a "Looked up directly" section;
# /etc/hosts still answers localhost; TCP queries are answered; a flood
# of 10,000 names is bounded (records, stderr lines).  Nothing here
# leaves the sandbox's loopback.
# usage: run_dns.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin run_dns getent python3 node jq
W=$T/work
mkdir -p "$W"
echo 'allow example.test' >"$T/p.conf"
LOG=$T/audit.jsonl

# A query of NAME (type QTYPE) over TRANSPORT to ADDR:53 from inside, in
# Python: prints the answer's rcode.  Used for TCP and [::1].
cat >"$W/q.py" <<'EOF'
import socket, struct, sys
transport, addr, qtype = sys.argv[1], sys.argv[2], int(sys.argv[4])
name = sys.argv[3].encode().decode("unicode_escape")  # "\x07": a BEL
q = struct.pack(">HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0)
for label in name.split("."):
    q += bytes([len(label)]) + label.encode()
q += b"\0" + struct.pack(">HH", qtype, 1)
fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
if transport == "tcp":
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect((addr, 53))
    s.sendall(struct.pack(">H", len(q)) + q)
    n = struct.unpack(">H", s.recv(2, socket.MSG_WAITALL))[0]
    r = s.recv(n, socket.MSG_WAITALL)
else:
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.settimeout(3)
    s.sendto(q, (addr, 53))
    r = s.recv(600)
print("id=%x rcode=%d qd=%d an=%d" % (struct.unpack(">H", r[:2])[0], r[3] & 15,
      struct.unpack(">H", r[4:6])[0], struct.unpack(">H", r[6:8])[0]))
EOF

# 10,000 names, each asked once over UDP, answers awaited in windows.
cat >"$W/flood.py" <<'EOF'
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.connect(("127.0.0.1", 53))
got = 0
for base in range(0, 10000, 50):
    for i in range(base, base + 50):
        q = struct.pack(">HHHHHH", i & 0xffff, 0x0100, 1, 0, 0, 0)
        for label in ("n%d" % i, "flood", "test"):
            q += bytes([len(label)]) + label.encode()
        s.send(q + b"\0\0\1\0\1")
    try:
        for i in range(50):
            if s.recv(600)[3] & 15 == 5:
                got += 1
    except socket.timeout:
        pass
print("refused", got)
EOF

# run_bg NAME CMD...: `pinhole run` in the background in $W.
run_bg() {
	local name=$1
	shift
	spawn "$name" bash -c 'cd "$1" && shift && exec "$@"' - "$W" \
		"$PINHOLE" run --no-capture --log "$LOG" -p "$T/p.conf" -- "$@"
}

# finished NAME PID SECS: the run ends within SECS (polled, not slept).
# A run still going then is killed (it would have hung).
finished() {
	check "$1: ends within $3 s" wait_for "$3" pid_done "$2"
	pid_done "$2" || kill -KILL -- "-$2" 2>/dev/null
	wait "$2"
}

# --- getent: fails fast, is named once --------------------------------------
run_bg getent getent hosts some.name.test
pid=$SPAWNED
finished getent "$pid" 5
equal "getent: no address (status 2)" "$?" 2
ERR=$(cat "$T/getent.err")
expect "getent: pinhole names the name" "$ERR" \
	'^pinhole: a program looked up some\.name\.test itself \(port 53\)'
expect "getent: and the proxy variables" "$ERR" 'http_proxy/https_proxy'
equal "getent: said once" "$(grep -c 'looked up some\.name\.test' <<<"$ERR")" 1

# --- the resolver's file, /etc/hosts, Python, TCP, [::1] ----------------------
prun --no-capture -p "$T/p.conf" -- sh -c '
	cat /etc/resolv.conf
	getent hosts localhost
	echo hosts=$?
	python3 -c "import socket; socket.getaddrinfo(\"py.test\", 443)" 2>&1 | tail -1
	python3 q.py tcp 127.0.0.1 tcp.test 1
	python3 q.py udp 127.0.0.1 txt.test 16
	python3 q.py udp 127.0.0.1 "bad\x07name.test" 1'
equal "run: status" "$RC" 0
expect "resolv.conf: the stub" "$OUT" '^nameserver 127\.0\.0\.1$'
equal "resolv.conf: one nameserver" "$(grep -c '^nameserver' <<<"$OUT")" 1
expect "resolv.conf: gives up fast" "$OUT" '^options timeout:1 attempts:1$'
expect "/etc/hosts: localhost resolves" "$OUT" '^127\.0\.0\.1 +localhost'
expect "/etc/hosts: status 0" "$OUT" '^hosts=0$'
expect "python getaddrinfo: fails" "$OUT" 'gaierror'
expect "TCP query: REFUSED" "$OUT" '^id=4242 rcode=5 qd=1 an=0$'
equal "REFUSED twice (TCP, TXT)" "$(grep -c 'rcode=5' <<<"$OUT")" 2
expect "bad label: FORMERR" "$OUT" '^id=4242 rcode=1 qd=0 an=0$'
expect "python: named" "$ERR" 'looked up py\.test itself'
expect "TCP: named" "$ERR" 'looked up tcp\.test itself'
refuse "localhost: not named" "$ERR" 'looked up localhost'
refuse "bad name: never raw" "$ERR" $'bad\x07'
if have_ipv6; then
	prun --no-capture -p "$T/p.conf" -- python3 q.py udp ::1 v6.test 28
	expect "[::1]:53 answers" "$OUT" '^id=4242 rcode=5'
	prun --no-capture -p "$T/p.conf" -- python3 q.py tcp ::1 v6.test 28
	expect "[::1]:53 TCP answers" "$OUT" '^id=4242 rcode=5'
else
	echo "run_dns: no IPv6 on this host: [::1]:53 not checked"
fi

# --- Node's fetch ignores the proxy variables ---------------------------------
run_bg node /usr/bin/node -e '
	fetch("https://x.test/").then(() => process.exit(0),
	    (e) => { console.error("node:", e.cause && e.cause.code); process.exit(3); })'
pid=$SPAWNED
finished node "$pid" 10
equal "node fetch: fails" "$?" 3
ERR=$(cat "$T/node.err")
expect "node: EAI_AGAIN" "$ERR" 'node: EAI_AGAIN'
expect "node: pinhole names x.test and the variables" "$ERR" \
	'looked up x\.test itself .*http_proxy/https_proxy.*allow x\.test'

# --- the audit log: one dns record per name -----------------------------------
check "audit: every line parses" jq -e . "$LOG" >/dev/null
for n in some.name.test py.test tcp.test txt.test x.test; do
	c=$(jq -r "select(.event==\"dns\" and .host==\"$n\") | .answer" "$LOG" |
		sort | uniq -c | awk '{print $1, $2}')
	equal "audit: one dns record for $n" "$c" "1 refused"
done
equal "audit: localhost not logged" \
	"$(jq -r 'select(.event=="dns" and .host=="localhost")' "$LOG")" ""
check "audit: qtype" test "$(jq -r 'select(.host=="txt.test") | .qtype' "$LOG")" = TXT
"$PINHOLE" log "$LOG" >"$T/review" 2>&1
equal "pinhole log: status" "$?" 0
check "pinhole log: the section" file_has "$T/review" '^Looked up directly'
check "pinhole log: x.test listed" file_has "$T/review" '^ +[0-9]+x +x\.test$'
refuse "pinhole log: nothing malformed" "$(cat "$T/review")" 'malformed record'

# --- a flood: answered, bounded -----------------------------------------------
RUN_LOG=$T/flood.jsonl
LOG=$RUN_LOG
run_bg flood python3 flood.py
pid=$SPAWNED
finished flood "$pid" 60
equal "flood: status" "$?" 0
got=$(awk '/^refused/ {print $2}' "$T/flood.out")
check "flood: most queries answered ($got)" test "${got:-0}" -ge 9000
lines=$(grep -c 'looked up' "$T/flood.err")
check "flood: stderr bounded ($lines lines)" test "$lines" -le 9
check "flood: stderr says there are more" file_has "$T/flood.err" \
	'more names were looked up directly'
recs=$(jq -r 'select(.event=="dns") | .host // "others"' "$LOG" | wc -l)
check "flood: dns records bounded ($recs)" test "$recs" -le 257
others=$(jq -r 'select(.event=="dns" and .host==null) | .count' "$LOG")
check "flood: the rest counted ($others)" test "${others:-0}" -ge 9000
for f in getent node flood; do
	sanitizer_clean "$f: the engine" "$T/$f.err"
done

ph_end
