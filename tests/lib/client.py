#!/usr/bin/python3
"""A test client "pod": connects COUNT times to HOST:PORT and prints one line per distinct answer,
"<count> <backend name>" or "<count> error:<ERRNO>", so a shell test can count where traffic went."""
import argparse
import collections
import errno
import socket


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=2.0)
    ap.add_argument("--ipv6", action="store_true", help="use an AF_INET6 socket")
    args = ap.parse_args()
    seen = collections.Counter()
    family = socket.AF_INET6 if args.ipv6 else socket.AF_INET
    for _ in range(args.count):
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(args.timeout)
        try:
            s.connect((args.host, args.port))
            data = s.recv(256).decode().strip()
            seen[data or "error:EMPTY"] += 1
        except OSError as e:
            seen["error:" + (errno.errorcode.get(e.errno, "TIMEOUT") if e.errno else "TIMEOUT")] += 1
        finally:
            s.close()
    for name, n in sorted(seen.items()):
        print(n, name)


if __name__ == "__main__":
    main()
