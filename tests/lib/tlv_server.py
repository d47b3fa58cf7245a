#!/usr/bin/python3
"""A test waypoint "pod": reads what a client sends up to its newline and answers
"<name>:<hex of the bytes before the client's text>", so a test sees the metadata the data plane
prepended (and that it came exactly once: the text must follow it directly)."""
import socket
import sys


def main():
    name, port, text = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
    srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    srv.bind(("::", port))
    srv.listen(64)
    while True:
        conn, _ = srv.accept()
        conn.settimeout(2)
        data = b""
        try:
            while not data.endswith(b"\n"):
                chunk = conn.recv(512)
                if not chunk:
                    break
                data += chunk
            at = data.find(text)
            prefix = data[:at] if at >= 0 else b"NO-TEXT:" + data
            conn.sendall(("%s:%s\n" % (name, prefix.hex() or "none")).encode())
        except OSError:
            pass
        conn.close()


if __name__ == "__main__":
    main()
