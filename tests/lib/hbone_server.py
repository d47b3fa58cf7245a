#!/usr/bin/python3
"""An HBONE server for the tests, written apart from the tunnel (python3-h2 and ssl), answering as
a ztunnel or a stock waypoint does (../reference/hbone.md §4): TLS 1.3 on ADDR:PORT (15008)
requiring a client certificate of the test CA, ALPN h2; each CONNECT stream is answered with
--status (200 by default). On a 200 the stream is the "application": it first sends
"NAME <authority>\\n", then echoes what the client sends, upper-cased, and ends its side when the
client's ends (--close-first: ends its side at once after the greeting).

Modes for the tests of a client: --no-alpn (no h2 offered back: the handshake carries no ALPN),
--stall (accepts TCP, never answers the handshake).

Each stream is logged to --log as one JSON line: the client's certificate URI SANs, the request's
headers, the status sent, and the bytes read; the connection count too, so a test can see that
streams shared one connection."""
import argparse
import json
import socket
import ssl
import sys
import threading

import h2.config
import h2.connection
import h2.events

LOCK = threading.Lock()


def log(path, rec):
    with LOCK, open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")


def peer_uris(tls):
    cert = tls.getpeercert()
    return [v for k, v in cert.get("subjectAltName", ()) if k == "URI"] if cert else []


def serve(conn_no, tls, a):
    uris = peer_uris(tls)
    # (this h2 wants a :path in every request; CONNECT has none)
    cfg = h2.config.H2Configuration(client_side=False, header_encoding="utf-8",
                                    validate_inbound_headers=False)
    h = h2.connection.H2Connection(config=cfg)
    h.initiate_connection()
    tls.sendall(h.data_to_send())
    streams = {}
    try:
        while True:
            data = tls.recv(65536)
            if not data:
                break
            for ev in h.receive_data(data):
                if isinstance(ev, h2.events.RequestReceived):
                    hd = dict(ev.headers)
                    st = {"conn": conn_no, "uris": uris, "headers": hd, "read": ""}
                    streams[ev.stream_id] = st
                    status = a.status if hd.get(":method") == "CONNECT" else 400
                    st["status"] = status
                    h.send_headers(ev.stream_id, [(":status", str(status))],
                                   end_stream=status != 200)
                    if status == 200:
                        h.send_data(ev.stream_id, ("%s %s\n" % (a.name, hd.get(":authority"))).encode(),
                                    end_stream=a.close_first)
                    else:
                        log(a.log, st)
                elif isinstance(ev, h2.events.DataReceived):
                    h.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                    st = streams.get(ev.stream_id)
                    if st is None:
                        continue
                    st["read"] += ev.data.decode(errors="replace")
                    if not a.close_first:
                        try:
                            h.send_data(ev.stream_id, ev.data.upper())
                        except Exception:
                            pass
                elif isinstance(ev, h2.events.StreamEnded):
                    st = streams.get(ev.stream_id)
                    if st and st["status"] == 200:
                        st["ended"] = "end_stream"
                        log(a.log, st)
                        if not a.close_first:
                            try:
                                h.end_stream(ev.stream_id)
                            except Exception:
                                pass
                elif isinstance(ev, h2.events.StreamReset):
                    st = streams.get(ev.stream_id)
                    if st and st["status"] == 200:
                        st["ended"] = "reset %d" % ev.error_code
                        log(a.log, st)
            out = h.data_to_send()
            if out:
                tls.sendall(out)
    except (OSError, ssl.SSLError):
        pass
    finally:
        tls.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("--port", type=int, default=15008)
    ap.add_argument("--name", default="hbone-server")
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--status", type=int, default=200)
    ap.add_argument("--no-alpn", action="store_true")
    ap.add_argument("--stall", action="store_true")
    ap.add_argument("--close-first", action="store_true")
    ap.add_argument("--log", required=True)
    a = ap.parse_args()

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(a.ca)
    ctx.load_cert_chain(a.cert, a.key)
    if not a.no_alpn:
        ctx.set_alpn_protocols(["h2"])
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((a.addr, a.port))
    ls.listen(64)
    print("listening", flush=True)
    held, n = [], 0
    while True:
        s, _ = ls.accept()
        if a.stall:
            held.append(s)
            continue
        n += 1
        try:
            tls = ctx.wrap_socket(s, server_side=True)
        except (OSError, ssl.SSLError) as e:
            log(a.log, {"conn": n, "handshake_error": str(e)})
            s.close()
            continue
        threading.Thread(target=serve, args=(n, tls, a), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
