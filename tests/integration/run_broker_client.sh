#!/usr/bin/env bash
# Scenario: `pinhole run --broker PATH` (and PINHOLE_BROKER) against a
# fake broker in python3 that speaks proxy/view.h's messages: the
# REQUEST as the broker sees it (policy name, command name, flags, the
# user's copy: a regular file opened for appending), the broker's
# refusal said and exit 125, the options refused under a broker, no
# broker at PATH, a peer that is not a broker, a broker that closes at
# once, NOTE lines printed as they come, the last line naming the user's
# copy, and a broker gone mid-run (the command stopped, 125).  End to end
# with the real broker: tests/integration/broker_*.sh.
# usage: run_broker_client.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin run_broker_client python3
W=$T/work
mkdir -p "$W"

# The fake: one connection, then it exits.  MODE: refuse (ERROR after
# REQUEST), hello-run (HELLO with role RUN), close (closes at once),
# serve (a whole conversation: NOTE, READY, the listeners, a NOTE, STOP,
# a summary with one denied target, BYE), vanish (closes once the
# listeners came).  What it saw goes to OUT, one KEY=VALUE a line.
cat >"$T/fake_broker.py" <<'EOF'
import array, os, socket, stat, struct, sys, fcntl

path, mode, out = sys.argv[1], sys.argv[2], sys.argv[3]
(HELLO, ENVSECRET, CA, STANDIN, HIDE, LOG, READY, LISTENERS, STOP, DENIED,
 DENIED_ITEM, BYE, ERROR, DISTRUST, TRUST, CAPTURE, REQUEST, NOTE) = range(1, 19)
VERSION, ROLE_RUN, ROLE_BROKER = 2, 1, 2

def recv_exact(c, n, fds):
    buf = b""
    while len(buf) < n:
        data, anc, _, _ = c.recvmsg(n - len(buf), socket.CMSG_SPACE(64 * 4))
        if not data:
            return None
        for level, kind, cdata in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(cdata[: len(cdata) - len(cdata) % 4])
                fds.extend(a)
        buf += data
    return buf

def recv_msg(c):
    fds = []
    hdr = recv_exact(c, 8, fds)
    if hdr is None:
        return None, None, fds
    t, n = struct.unpack("=II", hdr)
    body = recv_exact(c, n, fds) if n else b""
    return t, body, fds

def send(c, t, body=b""):
    c.sendall(struct.pack("=II", t, len(body)) + body)

def text(s):
    return s.encode() + b"\0"

srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path + ".new")
os.rename(path + ".new", path)
srv.listen(4)
c, _ = srv.accept()
log = open(out, "w")
if mode == "close":
    c.close()
    sys.exit(0)
t, body, fds = recv_msg(c)
log.write("type=%s\n" % t)
if t == REQUEST:
    version, flags = struct.unpack("=II", body[:8])
    policy, cmd = body[8:].split(b"\0")[:2]
    log.write("version=%d\nflags=%d\npolicy=%s\ncmd=%s\nnfds=%d\n" %
              (version, flags, policy.decode(), cmd.decode(), len(fds)))
    for fd in fds:
        st = os.fstat(fd)
        fl = fcntl.fcntl(fd, fcntl.F_GETFL)
        log.write("copy=%s%s%s\n" % (
            "regular" if stat.S_ISREG(st.st_mode) else "other",
            ",append" if fl & os.O_APPEND else "",
            ",wronly" if fl & os.O_ACCMODE == os.O_WRONLY else ""))
        os.write(fd, b'{"fake":"a record from the broker"}\n')
        os.close(fd)
log.flush()
if mode == "refuse":
    send(c, ERROR, text("policy %s is not granted to uid %d\x1b[2J" %
                        (policy.decode(), os.getuid())))
elif mode == "hello-run":
    send(c, HELLO, struct.pack("=II", VERSION, ROLE_RUN) + b"0123456789abcdef")
elif mode in ("serve", "vanish"):
    send(c, HELLO, struct.pack("=II", VERSION, ROLE_BROKER) + b"0123456789abcdef")
    send(c, NOTE, text("a note from the broker\x07"))
    send(c, LOG, text("/var/log/pinhole/broker.jsonl"))
    send(c, READY)
    got = total = 0
    while True:
        t, body, fds = recv_msg(c)
        if t != LISTENERS:
            break
        total, n = struct.unpack("=II", body)
        got += len(fds)
        for fd in fds:
            os.close(fd)
        if got >= total:
            break
    log.write("listeners=%d of %d\n" % (got, total))
    log.flush()
    if mode == "vanish":
        send(c, NOTE, text("going away"))
        c.close()
        sys.exit(0)
    send(c, NOTE, text("while it runs"))
    t, body, fds = recv_msg(c)
    log.write("stop=%s status=%d\n" % (t == STOP, struct.unpack("=I", body)[0]))
    send(c, NOTE, text("after the command"))
    send(c, DENIED, struct.pack("=Q", 1))
    send(c, DENIED_ITEM, struct.pack("=I", 1) + text("denied.example:443"))
    send(c, BYE)
log.close()
c.close()
EOF

# fake NAME MODE: starts a fake broker at $T/NAME.sock, its record in
# $T/NAME.seen; waits for its socket.
fake() {
	spawn "fake-$1" python3 "$T/fake_broker.py" "$T/$1.sock" "$2" "$T/$1.seen"
	FAKE=$SPAWNED
	wait_for 10 test -S "$T/$1.sock" || bad "fake $1: no socket"
}

# brun ARGS...: `pinhole run ARGS` in $W; RC, OUT, ERR.
brun() {
	(cd "$W" && "$PINHOLE" run "$@") >"$T/brun.out" 2>"$T/brun.err" </dev/null
	RC=$?
	OUT=$(cat "$T/brun.out")
	ERR=$(cat "$T/brun.err")
}

seen() { sed -n "s/^$2=//p" "$T/$1.seen"; }

# --- the refusal, and the REQUEST as the broker saw it -------------------------
fake refuse refuse
brun --broker "$T/refuse.sock" --log "$T/copy.jsonl" -p ci-policy_1.x -- /bin/true arg
equal "refused: status" "$RC" 125
expect "refused: the broker's reason, escaped" "$ERR" \
	"^pinhole: run: broker $T/refuse.sock: policy ci-policy_1.x is not granted to uid $(id -u)\\\\x1b\\[2J$"
equal "refused: one line" "$(wc -l <<<"$ERR")" 1
wait_for 10 pid_done "$FAKE"
equal "REQUEST: type" "$(seen refuse type)" 17
equal "REQUEST: version" "$(seen refuse version)" 2
equal "REQUEST: policy" "$(seen refuse policy)" ci-policy_1.x
equal "REQUEST: the command's name" "$(seen refuse cmd)" true
equal "REQUEST: no flags" "$(seen refuse flags)" 0
equal "REQUEST: one descriptor" "$(seen refuse nfds)" 1
equal "REQUEST: the copy, a regular file opened for appending" \
	"$(seen refuse copy)" regular,append,wronly
check "the copy: the broker's line in --log's file" \
	file_has "$T/copy.jsonl" '^\{"fake":"a record from the broker"\}$'
check "the copy: private" test "$(stat -c %a "$T/copy.jsonl")" = 600

# PINHOLE_BROKER without --broker; the default policy; --no-capture.
fake env refuse
(cd "$W" && PINHOLE_BROKER=$T/env.sock "$PINHOLE" run --no-capture \
	--log "$T/copy2.jsonl" -- sh -c true) >/dev/null 2>"$T/env.err" </dev/null
equal "PINHOLE_BROKER: status" "$?" 125
check "PINHOLE_BROKER: refused by that broker" \
	file_has "$T/env.err" "^pinhole: run: broker $T/env.sock: policy default is not granted"
wait_for 10 pid_done "$FAKE"
equal "PINHOLE_BROKER: policy default" "$(seen env policy)" default
equal "PINHOLE_BROKER: cmd" "$(seen env cmd)" sh
equal "--no-capture: flag 1" "$(seen env flags)" 1
# Without --log: the copy is the run's default log.
fake deflog refuse
(cd "$W" && XDG_STATE_HOME=$T/state "$PINHOLE" run --broker "$T/deflog.sock" \
	-- true) >/dev/null 2>&1 </dev/null
equal "default copy: status" "$?" 125
wait_for 10 pid_done "$FAKE"
check "default copy: the broker's line in the default log" \
	file_has "$T/state/pinhole/audit.jsonl" '^\{"fake":"a record from the broker"\}$'
# An empty PINHOLE_BROKER is no broker: -p is a file again.
(cd "$W" && PINHOLE_BROKER='' "$PINHOLE" run -p "$T/no-such.conf" \
	--log "$T/copy3.jsonl" -- true) >/dev/null 2>"$T/empty.err" </dev/null
equal "empty PINHOLE_BROKER: status" "$?" 125
check "empty PINHOLE_BROKER: -p is a file" file_has "$T/empty.err" "no-such.conf"
refuse "empty PINHOLE_BROKER: no broker" "$(cat "$T/empty.err")" 'run: broker'

# --- options refused under a broker (before any connection) ------------------
S=$T/nobody-here.sock
for args in "-a example.org:443" "--allow example.org:443" "--dns 127.0.0.1" \
	"--log-limit 1M" "-p one -p two"; do
	# shellcheck disable=SC2086 # the words are the options
	brun --broker "$S" --log "$T/copy.jsonl" $args -- true
	equal "refused with --broker: $args: status" "$RC" 125
	expect "refused with --broker: $args: says why" "$ERR" \
		"^pinhole: run: (-a/--allow|--dns|--log-limit|a second -p) cannot be used with --broker"
done
for p in ./x.conf x/y "" "$(printf 'a%.0s' {1..65})" 'a b'; do
	brun --broker "$S" --log "$T/copy.jsonl" -p "$p" -- true
	equal "-p '$p' under --broker: status" "$RC" 125
	expect "-p '$p' under --broker: a policy, not a file" "$ERR" \
		'under --broker -p names a policy the broker grants, not a file'
done
PINHOLE_BROKER=$S brun --dns 127.0.0.1 -- true
equal "PINHOLE_BROKER with --dns: status" "$RC" 125
"$PINHOLE" run --help >"$T/help" 2>&1
check "--help: --broker" file_has "$T/help" '--broker PATH'

# --- no broker there -----------------------------------------------------------
brun --broker "$T/none.sock" --log "$T/copy.jsonl" -- true
equal "no broker: status" "$RC" 125
expect "no broker: says so" "$ERR" \
	"^pinhole: run: broker $T/none.sock: no broker there \\(is pinhole-broker.socket running"
: >"$T/plain-file"
brun --broker "$T/plain-file" --log "$T/copy.jsonl" -- true
equal "not a socket: status" "$RC" 125
expect "not a socket: says so" "$ERR" "broker $T/plain-file: no broker listens there"
brun --broker "$T/$(printf 'd%.0s' {1..120})" --log "$T/copy.jsonl" -- true
equal "path too long: status" "$RC" 125
expect "path too long: says so" "$ERR" 'the path is too long for a Unix socket'

# --- the copy refused where a run refuses its log ------------------------------
# shellcheck disable=SC2094 # the copy is the command's stdout, on purpose
(cd "$W" && "$PINHOLE" run --broker "$S" --log "$T/same" -- true) \
	>"$T/same" 2>"$T/same.err" </dev/null
equal "copy is stdout: status" "$?" 125
check "copy is stdout: says so" file_has "$T/same.err" "standard streams"
brun --broker "$S" --log stderr -- true
equal "copy is stderr: status" "$RC" 125
brun --broker "$S" --log "$W/inside.jsonl" -- true
equal "copy where the sandbox writes: status" "$RC" 125
expect "copy where the sandbox writes: says so" "$ERR" 'the sandbox may write to'
brun --broker "$S" --log /dev/null -- true
equal "copy not a regular file: status" "$RC" 125
expect "copy not a regular file: says so" "$ERR" 'is not a regular file'

# --- peers that are not brokers ------------------------------------------------
fake run hello-run
brun --broker "$T/run.sock" --log "$T/copy.jsonl" -- true
equal "HELLO with role RUN: status" "$RC" 125
expect "HELLO with role RUN: not a broker" "$ERR" "$T/run.sock is not a pinhole broker"
fake close close
brun --broker "$T/close.sock" --log "$T/copy.jsonl" -- true
equal "closed at once: status" "$RC" 125
expect "closed at once: says so" "$ERR" \
	'^pinhole: run: the broker closed the connection before the sandbox started$'

# --- a whole conversation ------------------------------------------------------
fake serve serve
brun --broker "$T/serve.sock" --log "$T/serve.jsonl" -- sh -c 'echo ran; exit 3'
equal "served: the command's status" "$RC" 3
equal "served: the command ran" "$OUT" ran
expect "served: NOTE before the start, escaped" "$ERR" '^pinhole: a note from the broker\\x07$'
expect "served: NOTE while it runs" "$ERR" '^pinhole: while it runs$'
expect "served: NOTE in the summary" "$ERR" '^pinhole: after the command$'
equal "served: the last line names the user's copy" "$(last_line "$ERR")" \
	"pinhole: 1 denied: denied.example:443 (x1); see $T/serve.jsonl"
wait_for 10 pid_done "$FAKE"
expect "served: the listeners came" "$(cat "$T/serve.seen")" '^listeners=([1-9][0-9]*) of \1$'
expect "served: STOP with the status" "$(cat "$T/serve.seen")" '^stop=True status=3$'

# --- the broker gone mid-run ---------------------------------------------------
fake vanish vanish
start=$SECONDS
brun --broker "$T/vanish.sock" --log "$T/vanish.jsonl" -- sleep 60
equal "gone: status 125" "$RC" 125
check "gone: the command stopped at once" test $((SECONDS - start)) -lt 30
expect "gone: its last NOTE" "$ERR" '^pinhole: going away$'
expect "gone: says so" "$ERR" \
	"^pinhole: run: the broker went away: the sandbox's connections fail closed; the command was stopped$"

ph_end
