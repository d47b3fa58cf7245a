#!/usr/bin/python3
"""An HBONE client for the tests, written apart from the tunnel (python3-h2 and ssl), sending as a
ztunnel does (../reference/hbone.md §4): TCP to ADDR:15008, TLS 1.3 with a client certificate,
ALPN h2, no SNI; one HTTP/2 connection carrying STREAMS CONNECT streams to AUTHORITY, each with
`baggage`, `forwarded` and `traceparent` headers (at most CONCURRENT open at once, opening more
as others end, as a pooling ztunnel does). Each stream sends SEND (then END_STREAM unless
--no-half-close) and reads until the server's END_STREAM, a reset or TIMEOUT.

Prints one line per stream: "stream N status S read R" (R: the bytes read, repr'd), "stream N
reset CODE", or "stream N timeout"; a connection that fails prints "error: WHY". Exit 0 when every
stream got a status."""
import argparse
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("--port", type=int, default=15008)
    ap.add_argument("--authority", required=True)
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--ca", required=True)
    ap.add_argument("--method", default="CONNECT")
    ap.add_argument("--send", default="")
    ap.add_argument("--streams", type=int, default=1)
    ap.add_argument("--no-half-close", action="store_true")
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--concurrent", type=int, default=0,
                    help="at most this many streams open at once, more as others end (0: all)")
    ap.add_argument("--baggage", default="k8s.namespace.name=mesh,k8s.pod.name=client")
    ap.add_argument("--show-baggage", action="store_true",
                    help="also print each response's baggage header: stream N baggage V")
    ap.add_argument("--hold", type=float, default=0.0,
                    help="keep each stream open this long, sending 'tick' every 0.5 s, then END_STREAM")
    ap.add_argument("--reset-after", type=float, default=0.0,
                    help="reset each stream (RST_STREAM CANCEL) this long after its 200")
    ap.add_argument("--show-serial", action="store_true",
                    help="first print the server certificate's serial: serial HEX")
    ap.add_argument("--show-cipher", action="store_true",
                    help="first print the suite negotiated: cipher NAME (this client lists AES-256 first, as a ztunnel does)")
    ap.add_argument("--summary", action="store_true",
                    help="print only how many streams ended each way: N status S / N reset CODE / N timeout")
    ap.add_argument("--read-after", type=float, default=0.0,
                    help="read nothing for this long after sending (a client that does not read)")
    a = ap.parse_args()

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.check_hostname = False  # ztunnel checks the server's SPIFFE id, not a host name
    ctx.load_verify_locations(a.ca)  # TLS 1.3 suites: OpenSSL's order, AES-256 first, as rustls
    if a.cert:
        ctx.load_cert_chain(a.cert, a.key)
    ctx.set_alpn_protocols(["h2"])
    try:
        raw = socket.create_connection((a.addr, a.port), timeout=a.timeout)
        tls = ctx.wrap_socket(raw)
        tls.settimeout(a.timeout)
        # TLS 1.3: a refused client certificate shows at the first read
        if tls.selected_alpn_protocol() != "h2":
            print("error: no ALPN h2")
            return 1
        if a.show_serial:
            print("serial %s" % (tls.getpeercert()["serialNumber"].lower().lstrip("0") or "0"))
        if a.show_cipher:
            print("cipher %s" % tls.cipher()[0])
    except (OSError, ssl.SSLError) as e:
        print("error: %s" % e)
        return 1
    # CONNECT carries no :path nor :scheme (RFC 9113 8.5), which h2 would refuse to send
    conn = h2.connection.H2Connection(h2.config.H2Configuration(
        client_side=True, validate_outbound_headers=False))
    conn.initiate_connection()
    ids = []

    def open_stream():
        i = len(ids)
        sid = conn.get_next_available_stream_id()
        ids.append(sid)
        data[sid] = b""
        extra = [] if a.method == "CONNECT" else [(":scheme", "https"), (":path", "/")]
        conn.send_headers(sid, [(":method", a.method), (":authority", a.authority)] + extra + [
                                ("baggage", a.baggage),
                                ("forwarded", 'for="10.0.0.1:40000"'),
                                ("traceparent", "00-%032x-%016x-00" % (i + 1, i + 1))])
        end = not a.no_half_close and not a.hold
        if a.send:
            conn.send_data(sid, a.send.encode(), end_stream=end)
        elif end:
            conn.end_stream(sid)

    status, data, done, baggage = {}, {}, {}, {}
    concurrent = a.concurrent or a.streams
    while len(ids) < min(a.streams, concurrent):
        open_stream()
    tls.sendall(conn.data_to_send())
    if a.read_after:
        time.sleep(a.read_after)
    deadline = time.time() + a.timeout + a.hold
    hold_until, next_tick = time.time() + a.hold, time.time() + 0.5
    reset_at = {}
    if a.hold or a.reset_after:
        tls.settimeout(0.1)
    try:
        while len(done) < a.streams and time.time() < deadline:
            if a.hold and time.time() >= next_tick:  # the held streams: a tick each, or their end
                for sid in ids:
                    if sid not in done and status.get(sid) == "200" and hold_until:
                        conn.send_data(sid, b"tick\n", end_stream=time.time() >= hold_until)
                hold_until = 0 if time.time() >= hold_until else hold_until
                next_tick = time.time() + 0.5
                tls.sendall(conn.data_to_send())
            for sid, t in list(reset_at.items()):  # --reset-after: the client resets
                if time.time() >= t and sid not in done:
                    conn.reset_stream(sid, error_code=8)
                    done[sid] = "reset-sent"
                    tls.sendall(conn.data_to_send())
            try:
                chunk = tls.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            for ev in conn.receive_data(chunk):
                if isinstance(ev, h2.events.ResponseReceived):
                    h = dict(ev.headers)
                    status[ev.stream_id] = h[b":status"].decode()
                    if a.reset_after:
                        reset_at[ev.stream_id] = time.time() + a.reset_after
                    if b"baggage" in h:
                        baggage[ev.stream_id] = h[b"baggage"].decode()
                elif isinstance(ev, h2.events.DataReceived):
                    data[ev.stream_id] += ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    done[ev.stream_id] = "end"
                elif isinstance(ev, h2.events.StreamReset):
                    done[ev.stream_id] = "reset %d" % ev.error_code
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    deadline = 0
            # as a pooling client: more streams as others end, at most `concurrent` open
            while len(ids) < a.streams and len(ids) - len(done) < concurrent:
                open_stream()
            out = conn.data_to_send()
            if out:
                tls.sendall(out)
    except (OSError, ssl.SSLError) as e:
        print("error: %s" % e)
    if a.summary:
        counts = {}
        for s in ids:
            k = ("status %s" % status[s] if s in status and done.get(s, "end") == "end"
                 else done.get(s, "timeout"))
            counts[k] = counts.get(k, 0) + 1
        for k in sorted(counts):
            print("%d %s" % (counts[k], k))
        return 0 if all(s in status for s in ids) and len(ids) == a.streams else 1
    ok = True
    for s in ids:
        if a.show_baggage and s in baggage:
            print("stream %d baggage %s" % (s, baggage[s]))
        if s in status and done.get(s, "end") == "end":
            print("stream %d status %s read %r" % (s, status[s], data[s].decode(errors="replace")))
        elif s in done:
            print("stream %d %s" % (s, done[s]))
        else:
            print("stream %d timeout" % s)
        ok = ok and s in status
    ok = ok and len(ids) == a.streams
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
