#!/usr/bin/env bash
# Escape probe: host Unix sockets.  A read-only mount does not stop
# connect() on a socket file, so the sandbox's supervisor decides every
# address: from inside, a Unix socket the host made (under a directory
# bound in, under $HOME, /var/tmp, /run, in the work directory before the
# run, by a symlink or a relative path) cannot be reached by connect,
# sendto, sendmsg or sendmmsg, stream, datagram or seqpacket: each fails
# with ECONNREFUSED and the host server receives nothing, even when
# another thread swaps the address during the call.  socketpair, sockets
# bound and reached inside (stream, seqpacket, datagram, abstract) and
# descriptor passing keep working; --unix-socket PATH lets that one
# socket through, and only it.
# usage: escape_unix.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin escape_unix socat
PROBE=$(dirname "$PINHOLE")/probe_unix
if [ ! -x "$PROBE" ]; then
	echo "escape_unix: CANNOT RUN: no $PROBE" >&2
	exit 77
fi
W=$T/work
mkdir -p "$W" "$T/host"
cp "$PROBE" "$W/probe_unix"
EXTRA=()	# directories outside $T made for a case, removed at exit
cleanup_extra() { [ "${#EXTRA[@]}" -eq 0 ] || rm -rf "${EXTRA[@]}"; }
trap 'cleanup_extra; ph_cleanup' EXIT

# host_server NAME KIND PATH: a socat server at PATH (stream, seqpacket or
# dgram) that appends whatever reaches it to $T/NAME.got.
host_server() {
	local name=$1 kind=$2 path=$3 addr
	case $kind in
	stream) addr="UNIX-LISTEN:$path,fork" ;;
	seqpacket) addr="UNIX-LISTEN:$path,fork,type=5" ;;
	dgram) addr="UNIX-RECV:$path" ;;
	esac
	: >"$T/$name.got"
	spawn "$name" socat -u "$addr" "OPEN:$T/$name.got,append"
	wait_for 5 test -S "$path" || { bad "server $name did not start"; return 1; }
}

# A socket the host placed in the work directory before the run, one in
# a directory bound in read-only, and the datagram and seqpacket kinds.
host_server work stream "$W/host.sock"
host_server bound stream "$T/host/s.sock"
host_server dgram dgram "$T/host/d.sock"
host_server seq seqpacket "$T/host/q.sock"
host_server allowed stream "$T/host/allowed.sock"
# Elsewhere in the view the sandbox sees: /var/tmp, $HOME, /run (root).
places=()
if d=$(mktemp -d /var/tmp/ph-escape.XXXXXX); then
	chmod 755 "$d"
	EXTRA+=("$d")
	host_server vartmp stream "$d/s.sock" && places+=("vartmp:$d/s.sock")
fi
if [ -n "${HOME:-}" ] && [ -d "$HOME" ] && [ -w "$HOME" ] &&
	d=$(mktemp -d "$HOME/.ph-escape.XXXXXX"); then
	chmod 755 "$d"
	EXTRA+=("$d")
	host_server home stream "$d/s.sock" && places+=("home:$d/s.sock")
else
	echo "escape_unix: NOTE: no writable \$HOME for $(id -un); the \$HOME case runs as root" >&2
fi
if [ -w /run ] && d=$(mktemp -d /run/ph-escape.XXXXXX); then
	chmod 755 "$d"
	EXTRA+=("$d")
	host_server run stream "$d/s.sock" && places+=("run:$d/s.sock")
else
	echo "escape_unix: NOTE: /run not writable for $(id -un); the /run case runs as root" >&2
fi

RO=(--ro-bind "$T/host" "$T/host")
script="./probe_unix stream '$T/host/s.sock'
./probe_unix stream host.sock
./probe_unix stream '$W/host.sock'
ln -s '$T/host/s.sock' link.sock && ./probe_unix stream link.sock
./probe_unix seqpacket '$T/host/q.sock'
for how in sendto sendmsg sendmmsg dgram-connect; do
	./probe_unix \$how '$T/host/d.sock'
done"
for p in "${places[@]}"; do
	script="$script
echo '${p%%:*}:'; ./probe_unix stream '${p#*:}'"
done
prun "${RO[@]}" -- sh -c "$script"
equal "status" "$RC" 0
equal "bound dir, work dir (abs., relative), symlink: refused" \
	"$(grep -c '^stream: refused ECONNREFUSED$' <<<"$OUT")" \
	$((4 + ${#places[@]}))
refuse "no stream connect got through" "$OUT" '^stream: ok$'
expect "seqpacket: refused" "$OUT" '^seqpacket: refused ECONNREFUSED$'
for how in sendto sendmsg sendmmsg dgram-connect; do
	expect "datagram by $how: refused" "$OUT" "^$how: refused ECONNREFUSED$"
done
for n in work bound dgram seq "${places[@]%%:*}"; do
	equal "host server $n received nothing" "$(cat "$T/$n.got")" ""
done

# Another thread swaps the address between an inside socket and a host
# one while connect runs: the supervisor's single copy decides.
prun "${RO[@]}" -- ./probe_unix race "$T/host/s.sock"
expect "address swapped during connect: never reached" "$OUT" \
	'^race: 0 of 2000 reached '
equal "race: host server received nothing" "$(cat "$T/bound.got")" ""

# What must keep working inside.
prun -- ./probe_unix inside
equal "inside: status" "$RC" 0
for c in socketpair inside-stream inside-seqpacket inside-abstract \
	inside-dgram-sendto inside-dgram-sendmsg inside-dgram-sendmmsg \
	inside-sendmsg-fd; do
	expect "$c works" "$OUT" "^$c: ok$"
done

# A process that makes itself undumpable is out of the supervisor's
# reach (pidfd_getfd needs ptrace access): its calls fail, never hang.
prun -- ./probe_unix undumpable
expect "undumpable: refused (EPERM), not hung" "$OUT" \
	'^undumpable: refused EPERM$'

# --unix-socket PATH: that socket, and no other.
prun "${RO[@]}" --unix-socket "$T/host/allowed.sock" -- sh -c "
	./probe_unix stream '$T/host/allowed.sock'
	./probe_unix stream '$T/host/s.sock'"
expect "--unix-socket: that one reached" "$OUT" '^stream: ok$'
expect "--unix-socket: the others still refused" "$OUT" \
	'^stream: refused ECONNREFUSED$'
check "--unix-socket: the server got the line" \
	wait_for 5 file_has "$T/allowed.got" '^probe-unix$'
equal "--unix-socket: nothing else reached" "$(cat "$T/bound.got")" ""
prun --unix-socket "$T/host/nothere.sock" -- true
equal "--unix-socket of a missing file: 125" "$RC" 125
prun --unix-socket "$T/host" -- true
equal "--unix-socket of a directory: 125" "$RC" 125
expect "--unix-socket of a directory: why" "$ERR" 'not a socket|Socket operation'
ph_end
