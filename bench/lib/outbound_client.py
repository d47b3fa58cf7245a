#!/usr/bin/python3
"""The application client of bench/hbone_outbound.sh: plain TCP from a pod, as an application
connects, either straight to HOST:PORT (the kernel decides: to the pod, or through the tunnel's
HBONE) or through an HTTP/1.1 CONNECT proxy (--proxy PHOST:PPORT, nghttpx as the HBONE client).
Against bench/lib/hbone_app.py:
  setup N     N connections one after the other to the "answer" port (9002): each timed from
              before connect() to the application's "ok" read; prints "p50_us p99_us"
  download    one connection to the "source" port (9001) read to its end; prints "MB/s bytes"
  upload MB   one connection to the "sink" port (9000): an 8-byte length, MB MiB, the answer;
              prints "MB/s bytes"
  rate        --conc K connections at a time to the "answer" port (9002), each replaced once its
              "ok" is read, for --seconds S (straight only: no proxy); prints "conns/s failed"
  hold        --n N connections to the "hold" port (9003), opened --conc at a time; prints
              "ready N" once all are open, then holds them until killed
"""
import argparse
import errno
import selectors
import signal
import socket
import struct
import time


def connect(a, port):
    """A connected socket and the application's bytes already read with the proxy's answer."""
    if not a.proxy:
        return socket.create_connection((a.host, port), timeout=10), b""
    ph, pp = a.proxy.rsplit(":", 1)
    s = socket.create_connection((ph, int(pp)), timeout=10)
    target = "%s:%d" % (a.host, port)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(4096)
        if not d:
            raise OSError("the proxy closed")
        head += d
    if not head.split(b"\r\n", 1)[0].split()[1] == b"200":
        raise OSError("the proxy answered " + head.split(b"\r\n", 1)[0].decode())
    return s, head.split(b"\r\n\r\n", 1)[1]


def setup(a):
    times = []
    for _ in range(a.n):
        t0 = time.perf_counter()
        s, got = connect(a, 9002)
        while not got.endswith(b"\n"):
            d = s.recv(64)
            if not d:
                break
            got += d
        times.append((time.perf_counter() - t0) * 1e6)
        s.close()
        if got != b"ok\n":
            raise SystemExit("unexpected answer %r" % got)
    times.sort()
    print("%.0f %.0f" % (times[len(times) // 2], times[min(len(times) - 1, len(times) * 99 // 100)]))


def download(a):
    s, early = connect(a, 9001)
    buf = bytearray(1 << 20)
    n, t0 = len(early), time.perf_counter()
    while True:
        k = s.recv_into(buf)
        if not k:
            break
        n += k
    dt = time.perf_counter() - t0
    print("%.1f %d" % (n / dt / 1e6, n))


def upload(a):
    total = a.mb << 20
    chunk = bytes(1 << 20)
    s, got = connect(a, 9000)
    t0 = time.perf_counter()
    s.sendall(struct.pack(">Q", total))
    for _ in range(a.mb):
        s.sendall(chunk)
    while True:
        d = s.recv(64)
        if not d:
            break
        got += d
    dt = time.perf_counter() - t0
    if int(got.strip() or b"0") != total:
        raise SystemExit("the sink answered %r" % got)
    print("%.1f %d" % (total / dt / 1e6, total))


def rate(a):
    """Non-blocking, one thread: the client's own cost per connection stays small."""
    sel = selectors.DefaultSelector()
    done = failed = 0
    end = time.perf_counter() + a.seconds

    def start():
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        rc = s.connect_ex((a.host, 9002))
        if rc not in (0, errno.EINPROGRESS):
            s.close()
            return False
        sel.register(s, selectors.EVENT_READ, bytearray())
        return True

    for _ in range(a.conc):
        start()
    while time.perf_counter() < end:
        for key, _ in sel.select(timeout=1):
            s, got = key.fileobj, key.data
            try:
                d = s.recv(64)
            except OSError:
                d = None
            if d:
                got += d
                if not got.endswith(b"\n"):
                    continue
            sel.unregister(s)
            s.close()
            if got == b"ok\n":
                done += 1
            else:
                failed += 1
            start()
    print("%.0f %d" % (done / a.seconds, failed))


def hold(a):
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM, signal.SIGINT])
    socks = []
    for _ in range(a.n):
        socks.append(socket.create_connection((a.host, 9003), timeout=10))
    print("ready %d" % len(socks), flush=True)
    signal.sigwait([signal.SIGTERM, signal.SIGINT])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["setup", "download", "upload", "rate", "hold"])
    ap.add_argument("host")
    ap.add_argument("--proxy")
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--conc", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=5)
    a = ap.parse_args()
    {"setup": setup, "download": download, "upload": upload, "rate": rate, "hold": hold}[a.mode](a)


if __name__ == "__main__":
    main()
