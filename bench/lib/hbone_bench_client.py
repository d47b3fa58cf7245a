#!/usr/bin/python3
"""The client of bench/hbone.sh: HTTP/2 CONNECT over mutual TLS 1.3 as a ztunnel sends it (ALPN
h2, its settings: stream window 4 MiB, connection window 16 MiB, frames up to 1 MiB), the same
for both servers measured. Modes (each prints one line of key=value):
  setup N      one pooled connection, N CONNECT streams one after another to AUTHORITY (an
               application that answers and closes): each stream's time from HEADERS to its
               END_STREAM; p50/p90/p99 in microseconds
  upload MB    one stream: MB MiB to a sink (after their length), its byte count back; seconds, MB/s
  download     one stream from a source until its END_STREAM; bytes, seconds, MB/s
  idle N       N connections, each through its handshake and SETTINGS, then held (prints
               "ready" and waits for SIGTERM)
  hold C S     C connections of S streams each to an application that holds them; "ready" once
               every stream has its 200, then waits for SIGTERM
usage: hbone_bench_client.py ADDR PORT AUTHORITY CERT KEY CA MODE [ARGS]"""
import signal
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.settings

WINDOW, CONN_WINDOW, FRAME = 4 << 20, 16 << 20, 1 << 20


def connect(a):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.check_hostname = False
    ctx.load_verify_locations(a["ca"])
    ctx.load_cert_chain(a["cert"], a["key"])
    ctx.set_alpn_protocols(["h2"])
    raw = socket.create_connection((a["addr"], a["port"]))
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    tls = ctx.wrap_socket(raw)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(
        client_side=True, validate_outbound_headers=False, validate_inbound_headers=False))
    conn.local_settings = h2.settings.Settings(client=True, initial_values={
        h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: WINDOW,
        h2.settings.SettingCodes.MAX_FRAME_SIZE: FRAME,
        h2.settings.SettingCodes.ENABLE_PUSH: 0})
    # frames up to FRAME from the first one (h2 would wait for our SETTINGS' ACK to take them)
    conn.max_inbound_frame_size = FRAME
    conn.incoming_buffer.max_frame_size = FRAME
    # h2 appends each read to an immutable bytes buffer: a frame of many TLS records (1 MiB frames
    # are 64) would be copied once per record. A bytearray appends in place, so the client's cost
    # does not depend on the server's frame size (it measures the servers, not h2's buffer).
    conn.incoming_buffer.data = bytearray()
    conn.initiate_connection()
    conn.increment_flow_control_window(CONN_WINDOW - 65535)
    tls.sendall(conn.data_to_send())
    return tls, conn


def pump(tls, conn, until):
    """Read and answer frames until until(events) is true; returns every event seen."""
    seen = []
    while True:
        out = conn.data_to_send()
        if out:
            tls.sendall(out)
        if until(seen):
            return seen
        chunk = tls.recv(1 << 20)
        if not chunk:
            raise OSError("the server closed the connection")
        for ev in conn.receive_data(chunk):
            if isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            seen.append(ev)


def open_stream(conn, authority):
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [(":method", "CONNECT"), (":authority", authority),
                            ("baggage", "k8s.namespace.name=mesh,k8s.deployment.name=bench"),
                            ("forwarded", 'for="10.0.0.1:40000"')])
    return sid


def ended(sid):
    return lambda seen: any(isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset)) and
                            e.stream_id == sid for e in seen)


def settled(seen):
    return any(isinstance(e, h2.events.RemoteSettingsChanged) for e in seen)


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))]


def main():
    keys = ["addr", "port", "authority", "cert", "key", "ca", "mode"]
    a = dict(zip(keys, sys.argv[1:8]))
    a["port"] = int(a["port"])
    rest = sys.argv[8:]
    mode = a["mode"]
    if mode == "idle":
        conns = []
        for _ in range(int(rest[0])):
            tls, conn = connect(a)
            pump(tls, conn, settled)
            conns.append((tls, conn))
        print("ready", flush=True)
        signal.sigwait([signal.SIGTERM, signal.SIGINT])
        return 0
    if mode == "hold":
        conns, n = [], 0
        for _ in range(int(rest[0])):
            tls, conn = connect(a)
            pump(tls, conn, settled)
            sids = [open_stream(conn, a["authority"]) for _ in range(int(rest[1]))]
            got = pump(tls, conn, lambda seen: sum(isinstance(e, h2.events.ResponseReceived)
                                                    for e in seen) >= len(sids))
            n += sum(1 for e in got if isinstance(e, h2.events.ResponseReceived) and
                     dict(e.headers).get(b":status") == b"200")
            conns.append((tls, conn))
        print("ready %d" % n, flush=True)
        signal.sigwait([signal.SIGTERM, signal.SIGINT])
        return 0
    tls, conn = connect(a)
    pump(tls, conn, settled)
    cipher = tls.cipher()[0]
    if mode == "setup":
        lat = []
        for _ in range(int(rest[0])):
            t = time.perf_counter()
            sid = open_stream(conn, a["authority"])
            conn.end_stream(sid)
            pump(tls, conn, ended(sid))
            lat.append((time.perf_counter() - t) * 1e6)
        print("cipher=%s streams=%d p50_us=%.0f p90_us=%.0f p99_us=%.0f" %
              (cipher, len(lat), pct(lat, 50), pct(lat, 90), pct(lat, 99)))
    elif mode == "upload":
        total = int(rest[0]) << 20
        chunk = bytes(FRAME)
        sid = open_stream(conn, a["authority"])
        pump(tls, conn, lambda seen: any(isinstance(e, h2.events.ResponseReceived) for e in seen))
        conn.send_data(sid, total.to_bytes(8, "big"))  # the sink reads this many
        t, sent = time.perf_counter(), 0
        while sent < total:
            room = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size,
                       total - sent)
            if room <= 0:
                pump(tls, conn, lambda seen: any(isinstance(e, h2.events.WindowUpdated)
                                                 for e in seen))
                continue
            conn.send_data(sid, chunk[:room])
            sent += room
            tls.sendall(conn.data_to_send())
        conn.end_stream(sid)
        got = pump(tls, conn, ended(sid))
        secs = time.perf_counter() - t
        body = b"".join(e.data for e in got if isinstance(e, h2.events.DataReceived))
        print("cipher=%s bytes=%d acked=%s seconds=%.3f mbps=%.0f" %
              (cipher, sent, body.decode().strip(), secs, sent / secs / 1e6))
    elif mode == "download":
        sid = open_stream(conn, a["authority"])
        conn.end_stream(sid)
        t, n = time.perf_counter(), 0
        done = False
        while not done:
            for e in pump(tls, conn, lambda seen: len(seen) > 0):
                if isinstance(e, h2.events.DataReceived):
                    n += len(e.data)
                elif isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset)):
                    done = True
        secs = time.perf_counter() - t
        print("cipher=%s bytes=%d seconds=%.3f mbps=%.0f" % (cipher, n, secs, n / secs / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
