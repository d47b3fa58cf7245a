#!/usr/bin/python3
"""A steady test client: opens new TCP connections to HOST:PORT at RATE per second until it gets
SIGTERM (or DURATION passes), reading each answer, and prints "ok N failed M" plus the distinct
failures. Used to show that restarting kmesh processes fails no connection."""
import argparse
import collections
import signal
import socket
import time

from client import error_name

stop = False


def on_term(signum, frame):
    global stop
    stop = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("--rate", type=float, default=300)
    ap.add_argument("--duration", type=float, default=600)
    ap.add_argument("--out", required=True, help="file the totals are written to at the end")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    ok, failures = 0, collections.Counter()
    start = time.monotonic()
    n = 0
    while not stop and time.monotonic() - start < args.duration:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.connect((args.host, args.port))
            if s.recv(64):
                ok += 1
            else:
                failures["EMPTY"] += 1
        except OSError as e:
            failures[error_name(e)[len("error:"):]] += 1
        finally:
            s.close()
        n += 1
        delay = start + n / args.rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    elapsed = time.monotonic() - start
    with open(args.out, "w") as f:
        f.write("ok %d failed %d seconds %.1f %s\n" % (
            ok, sum(failures.values()), elapsed,
            " ".join("%s:%d" % kv for kv in sorted(failures.items()))))


if __name__ == "__main__":
    main()
