#!/usr/bin/python3
"""The application behind both HBONE servers of bench/hbone.sh (the tunnel, and nghttpx as the
same HTTP/2 CONNECT proxy): listens on PORT; a connection may start with an HTTP/1.1 CONNECT
preamble (nghttpx's backend connection carries the client's CONNECT so), answered 200 and
dropped; what follows depends on the target port the CONNECT named (or, without a preamble, the
port connected to: the tunnel connects to the application's own port):
  9000  sink: reads an 8-byte length L (big-endian), then discards L bytes, answers L and closes
        (no FIN needed: nghttpx does not pass a client's half-close to an HTTP/1 backend)
  9001  source: writes SOURCE_MB MiB of zeros, then closes
  9002  answer: writes "ok\\n" and closes (stream setup)
  9003  hold: keeps the connection until the client goes (memory per open stream)
usage: hbone_app.py PORT... [--source-mb N]"""
import socket
import sys
import threading

CHUNK = bytes(1 << 20)


def serve(conn, port, source_mb):
    try:
        head = b""
        if port in (9010,):  # nghttpx's backend: CONNECT host:port HTTP/1.1
            while b"\r\n\r\n" not in head:
                d = conn.recv(4096)
                if not d:
                    return
                head += d
            line, rest = head.split(b"\r\n", 1)
            port = int(line.split()[1].rsplit(b":", 1)[1])
            conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
            head = rest.split(b"\r\n\r\n", 1)[1]
        if port == 9000:
            while len(head) < 8:
                d = conn.recv(8 - len(head))
                if not d:
                    return
                head += d
            want, n = int.from_bytes(head[:8], "big"), len(head) - 8
            buf = bytearray(1 << 20)
            while n < want:
                k = conn.recv_into(buf)
                if not k:
                    break
                n += k
            conn.sendall(b"%d\n" % n)
        elif port == 9001:
            for _ in range(source_mb):
                conn.sendall(CHUNK)
        elif port == 9002:
            conn.sendall(b"ok\n")
        elif port == 9003:
            while conn.recv(4096):
                pass
    except OSError:
        pass
    finally:
        conn.close()


def listen(port, source_mb):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(4096)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c, port, source_mb), daemon=True).start()


def main():
    args = sys.argv[1:]
    source_mb = 512
    if "--source-mb" in args:
        i = args.index("--source-mb")
        source_mb = int(args[i + 1])
        del args[i:i + 2]
    for p in args[1:]:
        threading.Thread(target=listen, args=(int(p), source_mb), daemon=True).start()
    listen(int(args[0]), source_mb)


if __name__ == "__main__":
    main()
