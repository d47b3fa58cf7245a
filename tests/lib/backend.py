#!/usr/bin/python3
"""A test backend "pod": answers every TCP connection with its name and closes it; with a third
argument "keep", it keeps each connection open until the client closes it (or it is reset); with
"peer", it answers with the address it sees its client at instead (IPv4 as a.b.c.d)."""
import socket
import sys
import threading


def drain(conn):
    try:
        while conn.recv(512):
            pass
    except OSError:
        pass
    conn.close()


def main():
    name, port = sys.argv[1], int(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else ""
    keep = mode == "keep"
    srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    srv.bind(("::", port))
    srv.listen(256)
    reply = (name + "\n").encode()
    while True:
        conn, peer = srv.accept()
        try:
            if mode == "peer":
                ip = peer[0][7:] if peer[0].startswith("::ffff:") else peer[0]
                reply = (ip + "\n").encode()
            conn.sendall(reply)
        except OSError:
            pass
        if keep:
            threading.Thread(target=drain, args=(conn,), daemon=True).start()
        else:
            conn.close()


if __name__ == "__main__":
    main()
