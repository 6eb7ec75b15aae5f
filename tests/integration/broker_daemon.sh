#!/usr/bin/env bash
# Scenario: the broker's parent (pinhole proxy --broker PATH, cli/broker.c)
# on its own, with raw clients that never send a REQUEST (each holds its
# engine until BROKER_REQUEST_MS or until it closes).  Start and stop; a
# stale socket at PATH replaced, a file that is not a socket refused;
# PATH's mode 0666; the per-uid and total limits (the client over the
# limit gets one ERROR naming it; once the others close, a new client is
# served); SIGHUP with a broken configuration keeps serving and a good
# one is taken; SIGTERM ends the engines and removes the socket; systemd
# socket activation (systemd-socket-activate, package systemd); a
# configuration without broker blocks, or without a log, refused at the
# start; --listen with --broker refused; --metrics served; the broker
# killed (SIGKILL): its engines die with it, and the next broker replaces
# the socket it left.
# usage: broker_daemon.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin broker_daemon python3 curl systemd-socket-activate

# A policy the broker grants, and the broker's configuration.
cat >"$T/dev.conf" <<EOF
allow example.test:443
EOF
chmod 644 "$T/dev.conf"
uid=$(id -u)
write_conf() {
	cat >"$T/broker.conf.new" <<-EOF
		log $T/audit.jsonl
		broker {
		    policy dev dev.conf
		    users $uid
		}
	EOF
	mv "$T/broker.conf.new" "$T/broker.conf"
}
write_conf

# client.py PATH N [hold]: connects N clients (in order), says
# "connected N", then waits on the last for one message: prints "type T
# TEXT" (13: ERROR), or "closed" when the broker closed without one;
# then holds every connection open until it is killed.  With "hold" it
# reads nothing.
cat >"$T/client.py" <<'EOF'
import signal, socket, struct, sys
path, n = sys.argv[1], int(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else "read-last"
socks = []
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    socks.append(s)
print("connected", n, flush=True)
if mode == "read-last":
    s = socks[-1]
    s.settimeout(20)
    hdr = b""
    try:
        while len(hdr) < 8:
            b = s.recv(8 - len(hdr))
            if not b:
                break
            hdr += b
    except socket.timeout:
        print("timeout", flush=True)
        sys.exit(1)
    if len(hdr) < 8:
        print("closed", flush=True)
    else:
        typ, ln = struct.unpack("=II", hdr)
        body = b""
        while len(body) < ln:
            b = s.recv(ln - len(body))
            if not b:
                break
            body += b
        print("type", typ, body.rstrip(b"\0").decode(errors="replace"),
              flush=True)
while True:
    signal.pause()
EOF

B=$T/broker.sock
# start_broker NAME ARGS...: the broker on $B (stderr in $T/NAME.err).
start_broker() {
	local name=$1
	shift
	spawn "$name" "$PINHOLE" proxy -v -p "$T/broker.conf" --broker "$B" "$@"
	BR_PID=$SPAWNED
	BR_ERR=$T/$name.err
	wait_for 10 serving
}
serving() { grep -qs 'broker: serving' "$BR_ERR" || pid_done "$BR_PID"; }
# kids PID: how many children PID has.
kids() {
	cat /proc/[0-9]*/stat 2>/dev/null |
		awk -v p="$1" '$4 == p { n++ } END { print n + 0 }'
}
kids_are() { [ "$(kids "$BR_PID")" = "$1" ]; }
has_line() { grep -qE -- "$2" "$1" 2>/dev/null; }
# client NAME N [hold]: client.py in the background; waits until connected.
client() {
	spawn "$1" python3 "$T/client.py" "$B" "$2" "${3:-read-last}"
	CL_PID=$SPAWNED
	wait_for 10 has_line "$T/$1.out" '^connected'
}
client_said() { has_line "$T/$1.out" '^(type|closed|timeout)'; }
stop_client() {
	kill -TERM -- "-$1" 2>/dev/null
	wait_for 10 pid_done "$1"
}
# stop_broker: SIGTERM; waits for the end; sets BR_RC.
stop_broker() {
	kill -TERM "$BR_PID"
	wait_for 15 pid_done "$BR_PID"
	wait "$BR_PID"
	BR_RC=$?
}
mode_of() { stat -c %a "$1"; }

# --- refused at the start ---------------------------------------------------
printf 'log %s/audit.jsonl\n' "$T" >"$T/plain.conf"
out=$("$PINHOLE" proxy -p "$T/plain.conf" --broker "$B" 2>&1)
equal "no broker block: status" "$?" 1
expect "no broker block: said" "$out" "plain.conf has no broker block"
check "no broker block: no socket left" test ! -e "$B"
sed '/^log /d' "$T/broker.conf" >"$T/nolog.conf"
out=$("$PINHOLE" proxy -p "$T/nolog.conf" --broker "$B" 2>&1)
equal "no log: status" "$?" 1
expect "no log: said" "$out" "no audit log"
out=$("$PINHOLE" proxy -p "$T/broker.conf" --broker "$B" --listen 127.0.0.1:0 2>&1)
equal "--listen with --broker: usage error" "$?" 2
expect "--listen with --broker: said" "$out" "do not go with --broker"
out=$("$PINHOLE" proxy -p "$T/broker.conf" -p "$T/dev.conf" --broker "$B" 2>&1)
equal "two -p with --broker: usage error" "$?" 2
out=$("$PINHOLE" proxy -p "$T/broker.conf" --listen 127.0.0.1:0 --max-per-user 2 2>&1)
equal "--max-per-user without --broker: usage error" "$?" 2

# A file that is not a socket is never replaced.
echo keep >"$B"
out=$("$PINHOLE" proxy -p "$T/broker.conf" --broker "$B" 2>&1)
equal "not a socket: status" "$?" 1
expect "not a socket: said" "$out" "is not a socket"
equal "not a socket: the file kept" "$(cat "$B")" keep
rm -f "$B"

# A stale socket (nothing listening) is replaced.
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$B"
check "stale socket made" test -S "$B"
start_broker b1 --max-per-user 2 --max-sandboxes 3
check "stale socket: the broker serves" grep -q "broker: serving 1 policy on $B" "$BR_ERR"
equal "socket mode" "$(mode_of "$B")" 666
# A second broker on the same PATH is refused (the first one listens).
out=$("$PINHOLE" proxy -p "$T/broker.conf" --broker "$B" 2>&1)
equal "second broker: status" "$?" 1
expect "second broker: said" "$out" "listens there already"
check "second broker: the first still serves" test -S "$B"
# (its probe was a client: its engine ends when it closes)
wait_for 10 kids_are 0

# --- limits -----------------------------------------------------------------
# Two clients of this uid hold engines; the third gets the per-uid ERROR.
client c1 3
wait_for 20 client_said c1
expect "per-uid limit: ERROR" "$(cat "$T/c1.out")" \
	"^type 13 too many sandboxes for uid $uid \(limit 2\)$"
equal "per-uid limit: two engines" "$(kids "$BR_PID")" 2
expect "per-uid limit: said on stderr" "$(cat "$BR_ERR")" \
	"refused client pid [0-9]+: too many sandboxes for uid $uid"
# Once they close, a new client is served (an engine forked for it).
stop_client "$CL_PID"
wait_for 15 kids_are 0
check "after close: engines reaped" kids_are 0
client c2 1 hold
wait_for 10 kids_are 1
check "after close: a new client is served" kids_are 1
stop_client "$CL_PID"
wait_for 15 kids_are 0
stop_broker
equal "SIGTERM: exit 0" "$BR_RC" 0
check "SIGTERM: socket removed" test ! -e "$B"

# The total limit, with a per-uid limit above it.
start_broker b2 --max-per-user 5 --max-sandboxes 2
client c3 3
C3_PID=$CL_PID
wait_for 20 client_said c3
expect "total limit: ERROR" "$(cat "$T/c3.out")" \
	"^type 13 the broker serves its limit of 2 sandboxes$"
# A burst over the limit: one line, then a count.
client c4 6
wait_for 20 client_said c4
wait_for 5 has_line "$BR_ERR" 'refused [0-9]+ more clients? in the last second'
expect "refusals rate-limited: a count" "$(cat "$BR_ERR")" \
	'refused [0-9]+ more clients? in the last second: the broker serves its limit'
n=$(count_in "$BR_ERR" 'refused client pid')
check "refusals rate-limited: few lines ($n)" test "$n" -le 3
stop_client "$CL_PID"
# --- SIGTERM with engines running: they end, the socket goes --------------
wait_for 10 kids_are 2
stop_broker
equal "SIGTERM with engines: exit 0" "$BR_RC" 0
check "SIGTERM with engines: socket removed" test ! -e "$B"
expect "SIGTERM with engines: said" "$(cat "$BR_ERR")" "stopping; 2 sandboxes told to end"
stop_client "$C3_PID"

# --- SIGHUP (and --metrics) ---------------------------------------------------
start_broker b3 --metrics 127.0.0.1:0
mport=$(sed -n 's/^pinhole: metrics on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$BR_ERR")
m=$(curl -sS --max-time 10 "http://127.0.0.1:$mport/metrics" 2>&1)
expect "metrics: served" "$m" '^process_start_time_seconds [0-9]'
printf 'broker {\n    policy dev dev.conf\n    bogus line\n}\n' >"$T/broker.conf"
kill -HUP "$BR_PID"
wait_for 10 has_line "$BR_ERR" 'SIGHUP: .*keeping the configuration in use'
n=$(count_in "$BR_ERR" 'SIGHUP')
equal "broken reload: one line" "$n" 1
client c5 1 hold
wait_for 10 kids_are 1
check "broken reload: new clients still served" kids_are 1
stop_client "$CL_PID"
wait_for 15 kids_are 0
write_conf
kill -HUP "$BR_PID"
wait_for 10 has_line "$BR_ERR" 'reloaded .*broker.conf: 1 policy'
check "good reload: said" has_line "$BR_ERR" 'reloaded .*broker.conf: 1 policy'
stop_broker
equal "after reloads: exit 0" "$BR_RC" 0

# --- the broker killed: its engines die with it (PR_SET_PDEATHSIG) ----------
start_broker b4
client c7 1 hold
wait_for 10 kids_are 1
engine=$(cat /proc/[0-9]*/stat 2>/dev/null | awk -v p="$BR_PID" '$4 == p { print $1; exit }')
{
	kill -KILL "$BR_PID"
	wait_for 10 pid_done "$BR_PID"
	wait "$BR_PID"
} 2>/dev/null # (bash's "Killed")
wait_for 10 pid_done "$engine"
check "SIGKILL: the engine died with the broker" pid_done "$engine"
stop_client "$CL_PID"
# The socket it left is stale: the next broker replaces it.
check "SIGKILL: the socket left behind" test -S "$B"
start_broker b5
check "after SIGKILL: a new broker serves" grep -q "broker: serving" "$BR_ERR"
stop_broker
equal "after SIGKILL: the new broker exits 0" "$BR_RC" 0

# --- systemd socket activation ---------------------------------------------
# systemd-socket-activate (package systemd) binds PATH and passes it as
# fd 3 with LISTEN_PID and LISTEN_FDS; the broker takes it, binds nothing.
spawn sd systemd-socket-activate -l "$B" \
	"$PINHOLE" proxy -v -p "$T/broker.conf" --broker "$B"
BR_PID=$SPAWNED
BR_ERR=$T/sd.err
wait_for 10 test -S "$B"
client c6 1 hold
wait_for 10 serving
check "systemd: the broker serves" grep -q "broker: serving" "$BR_ERR"
wait_for 10 kids_are 1
check "systemd: a client served" kids_are 1
stop_client "$CL_PID"
stop_broker
equal "systemd: exit 0" "$BR_RC" 0

ph_end
