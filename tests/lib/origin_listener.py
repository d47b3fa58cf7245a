#!/usr/bin/python3
"""A stand-in for the tunnel's outbound listener (tests only): listens on ADDRESS:15001 and, for
each connection, asks the kernel where it was for, getsockopt(SOL_IP, KM_SO_TUNNEL_ORIGIN), as
kmesh-tunnel does, then answers the client with one line and closes:
    "orig A:P via B:Q"       (the original destination, and the workload the kernel picked)
    "error ERRNO_NAME"       (no answer: no record, or not the tunnel's cgroup)
The same line goes to stdout with the peer's address first. --twice asks a second time (the
record is deleted once read: the second ask fails)."""
import argparse
import errno
import socket
import struct

KM_SO_TUNNEL_ORIGIN = 0x4B4D
ORIGIN_LEN = 40  # struct km_tunnel_origin (kmesh_maps.h)


def origin(c):
    try:
        b = c.getsockopt(socket.SOL_IP, KM_SO_TUNNEL_ORIGIN, ORIGIN_LEN)
    except OSError as e:
        return "error " + errno.errorcode.get(e.errno, str(e.errno))
    if len(b) != ORIGIN_LEN:
        return "error length %d" % len(b)
    op, vp = struct.unpack("!HH", b[32:36])
    return "orig %s:%d via %s:%d" % (socket.inet_ntoa(b[12:16]), op, socket.inet_ntoa(b[28:32]), vp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("address")
    ap.add_argument("--twice", action="store_true")
    args = ap.parse_args()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((args.address, 15001))
    s.listen(64)
    print("listening", flush=True)
    while True:
        c, peer = s.accept()
        line = origin(c)
        if args.twice:
            line += "; again: " + origin(c)
        print("%s:%d %s" % (peer[0], peer[1], line), flush=True)
        try:
            c.sendall((line + "\n").encode())
        except OSError:
            pass
        c.close()


if __name__ == "__main__":
    main()
