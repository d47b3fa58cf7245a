#!/usr/bin/python3
"""A test application that sends without end: on each connection it writes 64 KiB blocks until
the peer goes away (a client that does not read must not make anything between buffer it all).
usage: flood_server.py PORT"""
import sys

from tcp_server import serve_forever


def serve(conn):
    block = b"x" * 65536
    try:
        while True:
            conn.sendall(block)
    except OSError:
        pass
    conn.close()


def main():
    serve_forever(int(sys.argv[1]), serve, backlog=16)


if __name__ == "__main__":
    main()
