#!/usr/bin/python3
"""A test backend "pod": answers every TCP connection with its name and closes it."""
import socket
import sys


def main():
    name, port = sys.argv[1], int(sys.argv[2])
    srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    srv.bind(("::", port))
    srv.listen(256)
    reply = (name + "\n").encode()
    while True:
        conn, _ = srv.accept()
        try:
            conn.sendall(reply)
        except OSError:
            pass
        conn.close()


if __name__ == "__main__":
    main()
