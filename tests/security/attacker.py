#!/usr/bin/python3
"""A hostile local process against a kmesh Unix socket (tests/security/). Each command prints one
line a shell test can check:
  bigframe SOCKET           announce a 16 MiB frame without a hello and send it:
                            "closed after N bytes" or "accepted N bytes"
  shortframes SOCKET N      N connections, each announcing a 16 MiB frame and sending all but
                            its last byte: "closed K of N"
  idle SOCKET SECONDS       connect and send nothing: "closed after S s" or "open after S s"
  emptyops SOCKET ROLE MB   hello as ROLE, then one TableBatch of empty ops of about MB MiB:
                            "reply CODE" or "closed"
  enroll SOCKET COOKIE PATH hello as cni, enroll netns COOKIE naming PATH as its namespace:
                            "reply CODE" or "no reply in 5 s"
  backends SOCKET N         hello as xds, write N backend rows (a legitimate batch):
                            "reply CODE"
  sync SOCKET PHASE...      hello as xds (or "hello refused: MESSAGE"), then each Sync phase
                            (begin, end) in turn: "begin CODE end CODE ..."; then it leaves
  hold SOCKET N SECONDS [ROLE]
                            keep N connections open for SECONDS (each with a hello as ROLE
                            if given, else none), reopening any the server closes; after the
                            first fill prints "held H of N, refused R: MESSAGE", at the end
                            "end held H"
  dumps SOCKET N TABLE      hello as admin, send N dump requests of TABLE at once and read
                            nothing for 20 s; then read what is there: "replies K of N,
                            closed after S s" (or "open")
  badrows SOCKET            hello as xds, then the row orders the tables refuse: a service
                            count of 10 with only slot 9 written, the delete of a slot that
                            count exposes, the delete of a backend a slot names:
                            "count CODE slot CODE backend CODE"
  forge SOCKET              hello as cni with a process name carrying a newline and a fake log
                            line, then enroll a pod whose name carries one: "enroll CODE"
PYTHONPATH must reach kmesh_ipc_pb2 (protoc --python_out of ipc/kmesh_ipc.proto)."""
import socket
import struct
import sys
import time

import kmesh_ipc_pb2 as ipc

MIB = 1 << 20


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def closed_by_peer(s, wait):
    """True if the peer closed (or reset) the connection within wait seconds."""
    s.settimeout(wait)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except socket.timeout:
        return False
    except OSError:
        return True


def send_until_closed(s, total):
    sent = 0
    chunk = b"\x00" * MIB
    try:
        while sent < total:
            n = s.send(chunk[: min(len(chunk), total - sent)])
            sent += n
    except OSError:
        return sent, True
    return sent, False


def bigframe(path):
    s = connect(path)
    s.sendall(struct.pack(">I", 16 * MIB))
    sent, closed = send_until_closed(s, 16 * MIB)
    if closed or closed_by_peer(s, 2):
        print("closed after %d bytes" % sent)
    else:
        print("accepted %d bytes" % sent)


def shortframes(path, n):
    conns = []
    for _ in range(n):
        s = connect(path)
        s.sendall(struct.pack(">I", 16 * MIB))
        send_until_closed(s, 16 * MIB - 1)
        conns.append(s)
    closed = sum(1 for s in conns if closed_by_peer(s, 0.5))
    print("closed %d of %d" % (closed, n))


def idle(path, seconds):
    s = connect(path)
    t0 = time.monotonic()
    if closed_by_peer(s, seconds):
        print("closed after %.1f s" % (time.monotonic() - t0))
    else:
        print("open after %.1f s" % seconds)


def frame(env):
    body = env.SerializeToString()
    return struct.pack(">I", len(body)) + body


def read_reply(s, timeout=10):
    s.settimeout(timeout)
    head = b""
    while len(head) < 4:
        c = s.recv(4 - len(head))
        if not c:
            return None
        head += c
    (n,) = struct.unpack(">I", head)
    body = b""
    while len(body) < n:
        c = s.recv(n - len(body))
        if not c:
            return None
        body += c
    env = ipc.Envelope()
    env.ParseFromString(body)
    return env


def emptyops(path, role, mb):
    s = session(path, role)
    if not s:
        return
    # an empty TableOp is two bytes on the wire (tag, length 0): about mb MiB of them
    n = mb * MIB // 2 - 16
    payload = b"\x0a\x00" * n  # TableBatch.ops (field 1), each empty
    # Envelope: request_id 2, then the batch (built by hand: protobuf would take seconds)
    env_body = b"\x08\x02" + field(ipc.Envelope.DESCRIPTOR.fields_by_name["batch"].number,
                                   payload)
    try:
        s.sendall(struct.pack(">I", len(env_body)) + env_body)
        r = read_reply(s)
    except OSError:
        r = None
    print("closed" if r is None else "reply %s" % ipc.Code.Name(r.reply.code))


def batch(s, rid, ops):
    env = ipc.Envelope(request_id=rid)
    for op in ops:
        env.batch.ops.append(op)
    s.sendall(frame(env))
    r = read_reply(s)
    return "closed" if r is None else ipc.Code.Name(r.reply.code)


def badrows(path):
    s = session(path, "xds")
    if not s:
        return
    be = ipc.TableOp(kind=ipc.TableOp.UPSERT)
    be.backend.id = 4242
    be.backend.addresses.append(bytes([10, 201, 0, 1]))
    slots = []
    for i in range(10):
        op = ipc.TableOp(kind=ipc.TableOp.UPSERT)
        op.endpoint.service_id, op.endpoint.index, op.endpoint.backend_id = 4243, i, 4242
        slots.append(op)
    svc = ipc.TableOp(kind=ipc.TableOp.UPSERT)
    svc.service.id = 4243
    svc.service.endpoint_count.append(10)
    out = ["count", batch(s, 2, [be, slots[9], svc])]  # only slot 9 of 0..9
    batch(s, 3, slots + [svc])  # written whole: accepted
    dslot = ipc.TableOp(kind=ipc.TableOp.DELETE)
    dslot.endpoint.service_id, dslot.endpoint.index = 4243, 3
    out += ["slot", batch(s, 4, [dslot])]
    dbe = ipc.TableOp(kind=ipc.TableOp.DELETE)
    dbe.backend.id = 4242
    out += ["backend", batch(s, 5, [dbe])]
    print(" ".join(out))


FORGED = "\n2026-01-01T00:00:00.000Z error kmesh-map-writer: FORGED LINE"


def forge(path):
    s = session(path, "cni", "attacker" + FORGED)
    if not s:
        return
    env = ipc.Envelope(request_id=2)
    env.enroll.netns_cookie = 4242
    env.enroll.pod = "ns/pod" + FORGED
    s.sendall(frame(env))
    r = read_reply(s)
    print("closed" if r is None else "enroll %s" % ipc.Code.Name(r.reply.code))


def session(path, role, process="attacker"):
    """A connection whose hello for role was accepted, or None (said on stdout)."""
    s = connect(path)
    env = ipc.Envelope(request_id=1)
    env.hello.role = getattr(ipc, "ROLE_" + role.upper())
    env.hello.protocol_version = 1
    env.hello.process = process
    s.sendall(frame(env))
    r = read_reply(s)
    if r is None or r.reply.code != ipc.OK:
        print("hello refused: %s" % (r.reply.message if r else "closed"))
        return None
    return s


def enroll(path, cookie, ns_path):
    s = session(path, "cni")
    if not s:
        return
    env = ipc.Envelope(request_id=2)
    env.enroll.netns_cookie = cookie
    env.enroll.pod = "attacker/fifo"
    env.enroll.netns_path = ns_path
    s.sendall(frame(env))
    try:
        r = read_reply(s, 5)
    except socket.timeout:
        print("no reply in 5 s")
        return
    print("closed" if r is None else "reply %s" % ipc.Code.Name(r.reply.code))


def backends(path, n):
    s = session(path, "xds")
    if not s:
        return
    env = ipc.Envelope(request_id=2)
    for i in range(1, n + 1):
        op = env.batch.ops.add()
        op.kind = ipc.TableOp.UPSERT
        op.backend.id = i
        op.backend.addresses.append(bytes([10, 200, i >> 8 & 255, i & 255]))
    s.sendall(frame(env))
    r = read_reply(s)
    print("closed" if r is None else "reply %s" % ipc.Code.Name(r.reply.code))


def sync(path, phases):
    s = session(path, "xds")
    if not s:
        return
    out = []
    for i, phase in enumerate(phases):
        env = ipc.Envelope(request_id=10 + i)
        env.sync.phase = getattr(ipc.Sync, phase.upper())
        s.sendall(frame(env))
        r = read_reply(s)
        out.append("%s %s" % (phase, "closed" if r is None else ipc.Code.Name(r.reply.code)))
    print(" ".join(out))


def open_held(path, role):
    """One held connection: (socket, None) or (None, why it was refused)."""
    try:
        s = connect(path)
    except OSError as e:
        return None, "connect: %s" % e.strerror
    if role:
        env = ipc.Envelope(request_id=1)
        env.hello.role = getattr(ipc, "ROLE_" + role.upper())
        env.hello.protocol_version = 1
        env.hello.process = "attacker"
        try:
            s.sendall(frame(env))
        except OSError:
            pass
    # a refusal comes at once: RESOURCE_EXHAUSTED, request id 0
    s.settimeout(0.05 if not role else 2)
    try:
        r = read_reply(s, s.gettimeout())
    except socket.timeout:
        return s, None
    except OSError as e:
        return None, str(e)
    if r is None:
        return None, "closed"
    if r.request_id == 0 or r.reply.code != ipc.OK:
        s.close()
        return None, "%s %s" % (ipc.Code.Name(r.reply.code), r.reply.message)
    return s, None


def hold(path, n, seconds, role):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    conns, refused, why = [], 0, ""
    for _ in range(n):
        s, w = open_held(path, role)
        if s:
            conns.append(s)
        else:
            refused += 1
            why = w
    print("held %d of %d, refused %d: %s" % (len(conns), n, refused, why), flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.5)
        alive = []
        for s in conns:
            s.setblocking(False)
            try:
                gone = s.recv(1) == b""
            except BlockingIOError:
                gone = False
            except OSError:
                gone = True
            if gone:
                s.close()
            else:
                alive.append(s)
        conns = alive
        while len(conns) < n and time.monotonic() < end:
            s, _ = open_held(path, role)
            if not s:
                break
            conns.append(s)
    print("end held %d" % len(conns), flush=True)


def dumps(path, n, table):
    s = session(path, "admin")
    if not s:
        return
    out = b""
    for i in range(n):
        env = ipc.Envelope(request_id=10 + i)
        env.dump.table = getattr(ipc, "TABLE_" + table.upper())
        out += frame(env)
    s.sendall(out)
    t0 = time.monotonic()
    time.sleep(20)
    got, closed_at = 0, None
    try:
        while True:
            r = read_reply(s, 1)
            if r is None:
                closed_at = time.monotonic() - t0
                break
            got += 1
    except socket.timeout:
        pass
    except OSError:
        closed_at = time.monotonic() - t0
    print("replies %d of %d, %s" % (got, n, "closed" if closed_at is not None else "open"))


def encode_varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(number, payload):
    return encode_varint(number << 3 | 2) + encode_varint(len(payload)) + payload


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    if cmd == "bigframe":
        bigframe(path)
    elif cmd == "shortframes":
        shortframes(path, int(sys.argv[3]))
    elif cmd == "idle":
        idle(path, float(sys.argv[3]))
    elif cmd == "emptyops":
        emptyops(path, sys.argv[3], int(sys.argv[4]))
    elif cmd == "enroll":
        enroll(path, int(sys.argv[3]), sys.argv[4])
    elif cmd == "backends":
        backends(path, int(sys.argv[3]))
    elif cmd == "sync":
        sync(path, sys.argv[3:])
    elif cmd == "badrows":
        badrows(path)
    elif cmd == "forge":
        forge(path)
    elif cmd == "hold":
        hold(path, int(sys.argv[3]), float(sys.argv[4]), sys.argv[5] if len(sys.argv) > 5 else "")
    elif cmd == "dumps":
        dumps(path, int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
