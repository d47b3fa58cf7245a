#!/usr/bin/python3
"""A test application for half-closes: on each connection it reads until the client's FIN, then
answers with what it read in capitals and closes. A client that never half-closes gets nothing.
usage: halfclose_server.py PORT"""
import socket
import sys
import threading


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
    srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    srv.bind(("::", int(sys.argv[1])))
    srv.listen(256)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
