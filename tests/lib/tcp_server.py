"""tcp_server.py — what the threaded test applications (flood_server.py, halfclose_server.py,
reset_server.py) share: a dual-stack listener on [::]:PORT (IPv4 clients arrive v4-mapped) and a
thread per connection running handler(conn, *args). Imported from the scripts' own folder."""
import socket
import threading


def serve_forever(port, handler, *args, backlog=256):
    srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    srv.bind(("::", port))
    srv.listen(backlog)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=handler, args=(conn,) + args, daemon=True).start()
