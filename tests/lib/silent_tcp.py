#!/usr/bin/python3
"""A TCP server that accepts connections and never answers (a stuck istiod, or a port that is
not istiod): every accepted connection is held open, unread, and counted.
  silent_tcp.py PORT-FILE COUNT-FILE
Listens on a free port of 127.0.0.1 (written to PORT-FILE once listening) and appends a line
to COUNT-FILE per accepted connection."""
import os
import socket
import sys


def main():
    port_file, count_file = sys.argv[1], sys.argv[2]
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(srv.getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    held = []
    while True:
        conn, _ = srv.accept()
        held.append(conn)  # open, unread, until the process ends
        with open(count_file, "a") as f:
            f.write("accepted\n")


if __name__ == "__main__":
    sys.exit(main())
