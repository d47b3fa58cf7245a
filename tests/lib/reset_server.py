#!/usr/bin/python3
"""A test application for resets: on PORT, each connection is either watched (observe: reads until
the peer's FIN or reset and appends "eof" or "reset" to OUT) or aborted (abort: sends "bye" and
closes with SO_LINGER 0, so the peer gets a reset; abort-bulk: sends 2 MiB first, so the reset
arrives while the peer still has bytes of ours to read).
usage: reset_server.py PORT observe|abort|abort-bulk [OUT]"""
import socket
import struct
import sys

from tcp_server import serve_forever


def serve(conn, mode, out):
    if mode in ("abort", "abort-bulk"):
        conn.sendall(b"bye" if mode == "abort" else b"x" * (2 << 20))
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()
        return
    what = "eof"
    try:
        while conn.recv(65536):
            pass
    except ConnectionResetError:
        what = "reset"
    except OSError as e:
        what = "error %s" % e
    with open(out, "a") as f:
        f.write(what + "\n")
    conn.close()


def main():
    port, mode = int(sys.argv[1]), sys.argv[2]
    out = sys.argv[3] if len(sys.argv) > 3 else None
    serve_forever(port, serve, mode, out, backlog=64)


if __name__ == "__main__":
    main()
