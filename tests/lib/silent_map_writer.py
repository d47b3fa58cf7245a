#!/usr/bin/python3
"""A map writer that answers hello and then never answers again: the CNI plugin's requests
time out after they were sent, so it cannot know whether they were applied.
  silent_map_writer.py SOCKET PYTHONPATH-WITH-kmesh_ipc_pb2"""
import os
import socket
import struct
import sys

sys.path.insert(0, sys.argv[2])
import kmesh_ipc_pb2 as ipc  # noqa: E402


def read_frame(conn):
    head = b""
    while len(head) < 4:
        chunk = conn.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    (n,) = struct.unpack(">I", head)
    body = b""
    while len(body) < n:
        chunk = conn.recv(n - len(body))
        if not chunk:
            return None
        body += chunk
    env = ipc.Envelope()
    env.ParseFromString(body)
    return env


def main():
    path = sys.argv[1]
    if os.path.exists(path):
        os.unlink(path)
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(16)
    held = []
    while True:
        conn, _ = srv.accept()
        env = read_frame(conn)
        if env is None or not env.HasField("hello"):
            conn.close()
            continue
        reply = ipc.Envelope(request_id=env.request_id)
        reply.reply.code = ipc.OK
        reply.reply.hello.protocol_version = env.hello.protocol_version
        reply.reply.hello.server = "silent"
        data = reply.SerializeToString()
        conn.sendall(struct.pack(">I", len(data)) + data)
        held.append(conn)  # read nothing more, answer nothing more


if __name__ == "__main__":
    main()
