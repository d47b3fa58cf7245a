#!/usr/bin/python3
"""Slow clients against the agent's HTTP endpoint (tests/security/http_test.sh).
  slow_http.py hold HOST PORT SRC N SECONDS
      N connections from source address SRC, each sending a request one byte per second (never
      finishing it); after SECONDS prints "open K of N, refused R": K still open."""
import socket
import sys
import time


def main():
    cmd, host, port, src, n, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], \
        int(sys.argv[5]), float(sys.argv[6])
    assert cmd == "hold"
    conns, refused = [], 0
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((src, 0))
        try:
            s.connect((host, port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            conns.append(s)
        except OSError:
            refused += 1
    print("connected %d of %d" % (len(conns), n), flush=True)
    end = time.monotonic() + seconds
    open_ = list(conns)
    while time.monotonic() < end:
        time.sleep(1)
        still = []
        for s in open_:
            try:
                s.sendall(b"X")  # a header that never ends
                s.setblocking(False)
                try:
                    if s.recv(4096) == b"":
                        raise OSError("closed")
                except BlockingIOError:
                    pass
                s.setblocking(True)
                still.append(s)
            except OSError:
                s.close()
        open_ = still
    # a server that refused at its limit closes at once: those count as refused, not open
    print("open %d of %d, refused %d" % (len(open_), n, refused + n - len(conns)), flush=True)


if __name__ == "__main__":
    main()
