#!/usr/bin/python3
"""broker_raw.py: raw clients of `pinhole proxy --broker` for broker_*.sh.

usage: broker_raw.py SOCKET CASE [ARG]

Each case connects to SOCKET, sends what its name says (proxy/view.h's
framing: uint32 type, uint32 length, native byte order), then reads what
the broker answers until it closes or SECS (5) pass, and prints one line:
"error: TEXT" (an ERROR came, then the close), "closed" (a close without
an ERROR), or "timeout" (neither in time); "messages: T,T,..." first when
other messages came.

  garbage          bytes that are no message
  trunc            half a header, then the write side shut
  huge             a REQUEST header announcing 2 GiB, nothing after it
  twice POLICY     a valid REQUEST, then another
  listeners        LISTENERS (with no descriptor) before any REQUEST
  badversion POL   a REQUEST of version 1
  request POL      a valid REQUEST, then silence: prints the first reply
  silent SECS      nothing; waits up to SECS for the broker to close
  flood N          N connections at once, each silent: prints, for each,
                   "N: error: TEXT" when an ERROR came within 1.5 s, else
                   "N: open"; then closes them all
"""
import socket
import struct
import sys
import time

ERROR, LISTENERS, REQUEST, HELLO = 13, 8, 17, 1
VERSION = 2


def msg(t, payload=b""):
    return struct.pack("=II", t, len(payload)) + payload


def request(policy, version=VERSION, flags=0, cmd=b"broker_raw"):
    return msg(REQUEST, struct.pack("=II", version, flags) +
               policy.encode() + b"\0" + cmd + b"\0")


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def replies(s, secs, first_only=False):
    """Reads messages until a close, an ERROR or SECS; returns the line."""
    s.settimeout(0.05)
    buf, types, end = b"", [], time.monotonic() + secs
    while time.monotonic() < end:
        try:
            b = s.recv(65536)
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            b = b""
        if not b:
            return prefix(types) + "closed"
        buf += b
        while len(buf) >= 8:
            t, n = struct.unpack("=II", buf[:8])
            if len(buf) < 8 + n:
                break
            body, buf = buf[8:8 + n], buf[8 + n:]
            if t == ERROR:
                return prefix(types) + "error: " + \
                    body.rstrip(b"\0").decode("utf-8", "replace")
            types.append(t)
            if first_only:
                return prefix(types) + "open"
    return prefix(types) + "timeout"


def prefix(types):
    return "messages: %s\n" % ",".join(map(str, types)) if types else ""


def send(s, data):
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def main():
    path, case = sys.argv[1], sys.argv[2]
    arg = sys.argv[3] if len(sys.argv) > 3 else ""
    if case == "flood":
        conns = [connect(path) for _ in range(int(arg))]
        for i, s in enumerate(conns):
            r = replies(s, 1.5, first_only=True)
            print("%d: %s" % (i, "open" if r == "timeout" else r))
        for s in conns:
            s.close()
        return
    s = connect(path)
    secs = 5
    if case == "garbage":
        send(s, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(range(256)))
    elif case == "trunc":
        send(s, struct.pack("=II", REQUEST, 20)[:5])
        s.shutdown(socket.SHUT_WR)
    elif case == "huge":
        send(s, struct.pack("=II", REQUEST, 0x7FFFFFFF))
    elif case == "twice":
        send(s, request(arg) + request(arg))
        secs = 15
    elif case == "listeners":
        send(s, msg(LISTENERS, struct.pack("=II", 1, 1)))
    elif case == "badversion":
        send(s, request(arg, version=1))
    elif case == "request":
        send(s, request(arg))
        print(replies(s, 15, first_only=True))
        return
    elif case == "silent":
        t0 = time.monotonic()
        r = replies(s, float(arg))
        print("%s after %.1f s" % (r, time.monotonic() - t0))
        return
    else:
        sys.exit("broker_raw.py: no case " + case)
    print(replies(s, secs))


if __name__ == "__main__":
    main()
