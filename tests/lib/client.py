#!/usr/bin/python3
"""A test client "pod": connects COUNT times to HOST:PORT and prints one line per distinct answer,
"<count> <answer>" or "<count> error:<ERRNO>", so a shell test can count where traffic went.
--send TEXT sends TEXT first (the answer is whatever comes back); --hold SECONDS keeps every
connection open that long after printing; --watch SECONDS keeps the (one) connection open and
then prints how it ended, "end error:<ERRNO> <unix time>" or "end eof <unix time>", or "end open"
if it lasted SECONDS; --half-close shuts its sending side down after --send and reads until the
server closes before closing itself; --udp sends one datagram per count and the answer is
"<reply> from <source address> <source port>" (the source as recvfrom reports it)."""
import argparse
import collections
import errno
import socket
import sys
import time


def error_name(e):
    return "error:" + (errno.errorcode.get(e.errno, "TIMEOUT") if e.errno else "TIMEOUT")


def tcp_once(args, family, held):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(args.timeout)
    try:
        s.connect((args.host, args.port))
        if args.send:
            s.sendall(args.send.encode() + b"\n")
        if args.half_close:
            s.shutdown(socket.SHUT_WR)
        data = s.recv(512).decode().strip()
        if args.half_close:
            while s.recv(512):
                pass
        if args.hold or args.watch:
            held.append(s)
            s = None
        return data or "error:EMPTY"
    except OSError as e:
        return error_name(e)
    finally:
        if s:
            s.close()


def udp_once(args, family):
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.settimeout(args.timeout)
    try:
        s.sendto((args.send or "ping").encode(), (args.host, args.port))
        data, src = s.recvfrom(512)
        return "%s from %s %d" % (data.decode().strip(), src[0], src[1])
    except OSError as e:
        return error_name(e)
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=2.0)
    ap.add_argument("--ipv6", action="store_true", help="use an AF_INET6 socket")
    ap.add_argument("--send", help="text sent after connecting (a newline is added)")
    ap.add_argument("--hold", type=float, default=0, help="keep connections open SECONDS")
    ap.add_argument("--watch", type=float, default=0,
                    help="after the answer, wait up to SECONDS for the connection to end")
    ap.add_argument("--half-close", action="store_true",
                    help="shutdown(SHUT_WR) after sending, then read until the server closes")
    ap.add_argument("--udp", action="store_true")
    args = ap.parse_args()
    seen = collections.Counter()
    held = []
    family = socket.AF_INET6 if args.ipv6 or ":" in args.host else socket.AF_INET
    for _ in range(args.count):
        seen[udp_once(args, family) if args.udp else tcp_once(args, family, held)] += 1
    for name, n in sorted(seen.items()):
        print(n, name)
    sys.stdout.flush()
    if args.hold:
        time.sleep(args.hold)
    if args.watch:
        print(watch_end(held[0], args.watch) if held else "end error:NOCONN")


def watch_end(s, seconds):
    s.settimeout(seconds)
    try:
        data = s.recv(512)
        return "end %s %.3f" % ("eof" if not data else "data", time.time())
    except socket.timeout:
        return "end open"
    except OSError as e:
        return "%s %.3f" % ("end " + error_name(e), time.time())


if __name__ == "__main__":
    main()
