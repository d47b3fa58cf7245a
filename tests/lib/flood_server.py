#!/usr/bin/python3
"""A test application that sends without end: on each connection it writes 64 KiB blocks until
the peer goes away (a client that does not read must not make anything between buffer it all).
usage: flood_server.py PORT"""
import socket
import sys
import threading


def serve(conn):
    block = b"x" * 65536
    try:
        while True:
            conn.sendall(block)
    except OSError:
        pass
    conn.close()


def main():
    srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    srv.bind(("::", int(sys.argv[1])))
    srv.listen(16)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
