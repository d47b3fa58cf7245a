#!/usr/bin/python3
"""A test application for half-closes: on each connection it reads until the client's FIN, then
answers with what it read in capitals and closes. A client that never half-closes gets nothing.
usage: halfclose_server.py PORT"""
import sys

from tcp_server import serve_forever


def serve(conn):
    data = b""
    try:
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        conn.sendall(data.upper())
    except OSError:
        pass
    conn.close()


def main():
    serve_forever(int(sys.argv[1]), serve)


if __name__ == "__main__":
    main()
