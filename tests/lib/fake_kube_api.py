#!/usr/bin/python3
"""A small fake Kubernetes API server over HTTPS, for the CNI tests and benchmark.

It answers what the CNI agent asks: GET /api/v1/namespaces/NS, GET /api/v1/namespaces/NS/pods/NAME,
a JSON merge PATCH of a pod, and lists and watches of /api/v1/namespaces and of
/api/v1/pods?fieldSelector=spec.nodeName=NODE (the watch looks at the state file every 50 ms and
streams what changed); and what kmeshctl asks: a merge PATCH of a namespace's labels, and lists
of /api/v1/namespaces/NS/pods?labelSelector=K=V&fieldSelector=spec.nodeName=NODE. Objects
come from a JSON state file, re-read on every request so a test changes them by rewriting it:
  {"namespaces": {"NS": {"labels": {...}}},
   "pods": {"NS/NAME": {"labels": {...}, "annotations": {...}, "hostNetwork": false,
                        "node": "node-1",      # default node-1
                        "phase": "Pending",    # default Running
                        "serviceAccount": "sa", # spec.serviceAccountName (default: none)
                        "ips": ["10.0.0.5"],   # status.podIPs (default: none)
                        "unwatched": true}},   # GET finds it; lists and watches do not (yet)
   "fail": {"PATCH": 500, "GET": 503}}          # optional: answer these methods with an error
Patched annotations are kept in memory and show in later GETs. Every request is appended to the
--log file as one JSON line (method, path, content_type, body, authorized, and time: when it
arrived, in seconds since the epoch). A request without the bearer token of --token gets 401.

KmeshNodeInfo objects (kmesh.net/v1alpha1, namespace kmesh-system), Secrets and Gateways live in
memory, as an API server keeps them (fake_kube_objects.py): list, watch (KmeshNodeInfo: streamed,
from a resourceVersion, with 410 Gone for a compacted one), get, create, merge patch, replace,
delete; and test controls that break, pause and expire watches, slow the next lists down, take
the Gateway CRDs away and mark a Gateway Programmed (see that file)."""
import argparse
import json
import re
import socket
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fake_kube_objects import STORE

PATCHED = {}
NS_LABELS = {}
LOCK = threading.Lock()


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": message}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the API server does
    wbufsize = 65536  # headers and body leave in one write (no Nagle/delayed-ACK stall)

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def state(self):
        with open(self.server.args.state) as f:
            return json.load(f)

    def record(self, body, authorized):
        entry = {"method": self.command, "path": self.path,
                 "content_type": self.headers.get("Content-Type"), "body": body,
                 "authorized": authorized, "time": time.time()}
        with LOCK, open(self.server.args.log, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else None
        authorized = self.headers.get("Authorization") == "Bearer " + self.server.args.token
        self.record(body, authorized)
        if not authorized:
            return self.reply(401, status(401, "Unauthorized", "Unauthorized"))
        if (self.path.startswith("/test/") or self.path.startswith("/apis/")
                or re.match(r"/api/v1/namespaces/[^/]+/secrets", self.path)):
            return STORE.handle(self, body)
        st = self.state()
        fail = st.get("fail", {}).get(self.command)
        if fail:
            return self.reply(fail, status(fail, "InternalError", "injected failure"))
        path, _, query = self.path.partition("?")
        if self.command == "GET" and path in ("/api/v1/pods", "/api/v1/namespaces"):
            return self.collection(path.endswith("pods"), urllib.parse.parse_qs(query))
        m = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods", path)
        if self.command == "GET" and m:  # a namespace's pods, by label and node
            q = urllib.parse.parse_qs(query)
            node = None
            for sel in q.get("fieldSelector", []):
                if sel.startswith("spec.nodeName="):
                    node = sel.split("=", 1)[1]
            want = dict(kv.split("=", 1) for sel in q.get("labelSelector", [])
                        for kv in sel.split(","))
            items = [o for k, o in pod_objects(st, node).items()
                     if k.startswith(m.group(1) + "/")
                     and all(o["metadata"]["labels"].get(k2) == v for k2, v in want.items())]
            return self.reply(200, {"kind": "PodList", "apiVersion": "v1",
                                    "metadata": {"resourceVersion": str(time.time_ns())},
                                    "items": items})
        m = re.fullmatch(r"/api/v1/nodes/([^/]+)", self.path)
        if m:  # a Node: its spec from the state file's "nodes"
            spec = st.get("nodes", {}).get(m.group(1))
            if self.command != "GET" or spec is None:
                return self.reply(404, status(404, "NotFound", 'nodes "%s" not found' % m.group(1)))
            return self.reply(200, {"kind": "Node", "apiVersion": "v1",
                                    "metadata": {"name": m.group(1)}, "spec": spec})
        m = re.fullmatch(r"/api/v1/namespaces/([^/]+)(?:/pods/([^/]+))?", self.path)
        if not m:
            return self.reply(404, status(404, "NotFound", "no such path " + self.path))
        ns, pod = m.group(1), m.group(2)
        if pod is None:
            if self.command not in ("GET", "PATCH") or ns not in st.get("namespaces", {}):
                return self.reply(404, status(404, "NotFound", 'namespaces "%s" not found' % ns))
            if self.command == "PATCH":  # labels only, kept in memory like patched annotations
                if self.headers.get("Content-Type") != "application/merge-patch+json":
                    return self.reply(415, status(415, "UnsupportedMediaType", "merge patch only"))
                with LOCK:  # a null label value removes it (merge patch)
                    for k, v in json.loads(body).get("metadata", {}).get("labels", {}).items():
                        NS_LABELS.setdefault(ns, {})[k] = v
            return self.reply(200, ns_object(st, ns))
        key = ns + "/" + pod
        if key not in st.get("pods", {}):
            return self.reply(404, status(404, "NotFound", 'pods "%s" not found' % pod))
        p = st["pods"][key]
        if self.command == "PATCH":
            if self.headers.get("Content-Type") != "application/merge-patch+json":
                return self.reply(415, status(415, "UnsupportedMediaType", "merge patch only"))
            patch = json.loads(body)
            with LOCK:
                PATCHED.setdefault(key, {}).update(patch["metadata"]["annotations"])
        return self.reply(200, pod_object(st, key))

    def collection(self, pods, q):
        """A list, or a watch that streams the differences it sees in the state file."""
        node = None
        for sel in q.get("fieldSelector", []):
            if sel.startswith("spec.nodeName="):
                node = sel.split("=", 1)[1]
        objs = lambda: (pod_objects(self.state(), node) if pods else ns_objects(self.state()))
        if q.get("watch") != ["1"]:
            items = list(objs().values())
            return self.reply(200, {"kind": "List", "apiVersion": "v1",
                                    "metadata": {"resourceVersion": str(time.time_ns())},
                                    "items": items})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

        def chunk(obj):
            data = (json.dumps(obj) + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        deadline = time.monotonic() + float(q.get("timeoutSeconds", ["30"])[0])
        seen = objs()
        try:
            while time.monotonic() < deadline:
                time.sleep(0.05)
                try:
                    now = objs()
                except (OSError, ValueError):  # the state file being rewritten
                    continue
                for k, o in now.items():
                    if k not in seen:
                        chunk({"type": "ADDED", "object": o})
                    elif seen[k] != o:
                        chunk({"type": "MODIFIED", "object": o})
                for k, o in seen.items():
                    if k not in now:
                        chunk({"type": "DELETED", "object": o})
                seen = now
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            pass

    do_GET = do_PATCH = do_POST = do_PUT = do_DELETE = handle_any


def pod_object(st, key):
    ns, name = key.split("/", 1)
    p = st["pods"][key]
    annotations = dict(p.get("annotations", {}))
    annotations.update(PATCHED.get(key, {}))
    return {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": name, "namespace": ns, "labels": p.get("labels", {}),
                         "annotations": annotations, "uid": "uid-" + key,
                         "resourceVersion": str(time.time_ns())},
            "spec": dict({"hostNetwork": p.get("hostNetwork", False), "nodeName": p.get("node", "node-1")},
                         **({"serviceAccountName": p["serviceAccount"]} if "serviceAccount" in p else {})),
            "status": dict({"phase": p.get("phase", "Running")},
                           **({"podIPs": [{"ip": ip} for ip in p["ips"]]} if "ips" in p else {}))}


def pod_objects(st, node):
    """The pods a list or watch shows (by key), resourceVersion aside for comparing."""
    out = {}
    for key, p in st.get("pods", {}).items():
        if p.get("unwatched") or (node and p.get("node", "node-1") != node):
            continue
        o = pod_object(st, key)
        o["metadata"].pop("resourceVersion")
        out[key] = o
    return out


def ns_object(st, ns):
    labels = dict(st["namespaces"][ns].get("labels", {}))
    labels.update(NS_LABELS.get(ns, {}))
    labels = {k: v for k, v in labels.items() if v is not None}
    return {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": ns, "labels": labels}}


def ns_objects(st):
    return {ns: ns_object(st, ns) for ns in st.get("namespaces", {})}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--port-file", required=True)
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.args = args
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
