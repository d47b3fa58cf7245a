"""Objects of the fake Kubernetes API (fake_kube_api.py), kept the way an API server keeps them:
every write bumps one resourceVersion counter, and KmeshNodeInfo writes are recorded as watch
events. Collections:
  /apis/kmesh.net/v1alpha1/namespaces/kmesh-system/kmeshnodeinfos     (with watch, below)
  /api/v1/namespaces/NS/secrets
  /apis/gateway.networking.k8s.io/v1/namespaces/NS/gateways         (and .../v1/gateways: all)
A PUT that carries a metadata.resourceVersion must carry the current one (409 Conflict
otherwise); every create sets creationTimestamp. A server-side apply (PATCH of type
application/apply-patch+yaml) creates the object, or replaces its labels, annotations and spec
(this fake's single field manager owns them all).

  GET    .../kmeshnodeinfos                       list (resourceVersion of the collection)
  GET    .../kmeshnodeinfos?watch=1&resourceVersion=N[&timeoutSeconds=T]
                                                  events after N, streamed (chunked), then new
                                                  ones as they happen, until T; an N older than
                                                  the last compaction gets an ERROR 410 event
  GET    .../kmeshnodeinfos/NAME                  one object
  POST   .../kmeshnodeinfos                       create (409 when it exists)
  PATCH  .../kmeshnodeinfos/NAME                  JSON merge patch (application/merge-patch+json)
  PUT    .../kmeshnodeinfos/NAME                  replace
  DELETE .../kmeshnodeinfos/NAME                  delete
  POST   /test/pause-watches                      break every open watch (no end chunk), and
                                                  answer new ones 503 (lists still work)
  POST   /test/resume-watches                     watches work again
  POST   /test/slow-lists {"seconds": S, "count": N}
                                                  the next N lists of KmeshNodeInfo answer S
                                                  seconds late (the objects as they are then),
                                                  as a loaded API server's first list can
  POST   /test/expire                             end every open watch cleanly, and make every
                                                  resourceVersion so far too old (410)
  POST   /test/gateway-crds-missing               the Gateway API answers as without its CRDs:
                                                  404, text/plain "404 page not found"
  POST   /test/program/NS/NAME                    the Gateway gets Programmed=True in its status"""
import json
import re
import threading
import time
import urllib.parse

PREFIX = "/apis/kmesh.net/v1alpha1/namespaces/kmesh-system/kmeshnodeinfos"
# (path pattern, collection key template, kind): a collection's objects live under its key
COLLECTIONS = [
    (re.escape(PREFIX) + r"(?:/([^/]+))?", "kni", "KmeshNodeInfo"),
    (r"/api/v1/namespaces/([^/]+)/secrets(?:/([^/]+))?", "secrets/{ns}", "Secret"),
    (r"/apis/gateway\.networking\.k8s\.io/v1/namespaces/([^/]+)/gateways(?:/([^/]+))?",
     "gateways/{ns}", "Gateway"),
]
ALL_GATEWAYS = "/apis/gateway.networking.k8s.io/v1/gateways"


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": message}


def merge(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge(out.get(k), v)
    return out


class Store:
    def __init__(self):
        self.cond = threading.Condition()
        self.objects = {}
        self.events = []      # (resourceVersion, type, object)
        self.rv = 100
        self.compacted = 0    # watches from a resourceVersion below this get 410
        self.drops = 0        # bumped by /test/pause-watches: open watches break
        self.ends = 0         # bumped by /test/expire: open watches end cleanly
        self.paused = False
        self.other = {}       # (collection key, name) -> object, for the other collections
        self.no_gateway_crds = False
        self.slow_lists = (0.0, 0)  # (seconds, how many lists still to slow down)

    def _write(self, kind, obj):
        self.rv += 1
        obj = json.loads(json.dumps(obj))
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        if kind == "DELETED":
            self.objects.pop(obj["metadata"]["name"], None)
        else:
            self.objects[obj["metadata"]["name"]] = obj
        self.events.append((self.rv, kind, obj))
        self.cond.notify_all()
        return obj

    def handle(self, req, body):
        url = urllib.parse.urlsplit(req.path)
        query = urllib.parse.parse_qs(url.query)
        if url.path == "/test/gateway-crds-missing":
            self.no_gateway_crds = True
            return req.reply(200, {})
        m = re.fullmatch(r"/test/program/([^/]+)/([^/]+)", url.path)
        if m:
            with self.cond:
                gw = self.other.get(("gateways/" + m.group(1), m.group(2)))
                if gw is None:
                    return req.reply(404, status(404, "NotFound", "no such gateway"))
                self.rv += 1
                gw["metadata"]["resourceVersion"] = str(self.rv)
                gw["status"] = {"conditions": [{"type": "Programmed", "status": "True",
                                                "reason": "Programmed", "message": "deployed"}]}
            return req.reply(200, gw)
        if "gateway.networking.k8s.io" in url.path and self.no_gateway_crds:
            data = b"404 page not found\n"  # Go's http.NotFound: not a Status
            req.send_response(404)
            req.send_header("Content-Type", "text/plain; charset=utf-8")
            req.send_header("Content-Length", str(len(data)))
            req.end_headers()
            return req.wfile.write(data)
        if url.path == ALL_GATEWAYS and req.command == "GET":
            with self.cond:
                items = [o for (k, _), o in sorted(self.other.items()) if k.startswith("gateways/")]
                return req.reply(200, {"kind": "GatewayList", "apiVersion": "gateway.networking.k8s.io/v1",
                                       "metadata": {"resourceVersion": str(self.rv)}, "items": items})
        for pattern, key, kind in COLLECTIONS[1:]:
            m = re.fullmatch(pattern, url.path)
            if m:
                return self.handle_other(req, body, key.format(ns=m.group(1)), m.group(1),
                                         m.group(2), kind)
        if url.path == "/test/slow-lists":
            ask = json.loads(body or "{}")
            with self.cond:
                self.slow_lists = (float(ask.get("seconds", 2)), int(ask.get("count", 1)))
            return req.reply(200, {})
        if url.path in ("/test/pause-watches", "/test/resume-watches", "/test/expire"):
            with self.cond:
                if url.path == "/test/pause-watches":
                    self.paused = True
                    self.drops += 1
                elif url.path == "/test/resume-watches":
                    self.paused = False
                else:  # the store moves on (as etcd's revision does) and forgets the past
                    self.rv += 1
                    self.compacted = self.rv
                    self.ends += 1
                self.cond.notify_all()
            return req.reply(200, {})
        m = re.fullmatch(re.escape(PREFIX) + r"(?:/([^/]+))?", url.path)
        if not m:
            return req.reply(404, status(404, "NotFound", "no such path " + url.path))
        name, cmd = m.group(1), req.command
        if cmd == "GET" and name is None and query.get("watch") == ["1"]:
            if self.paused:
                return req.reply(503, status(503, "ServiceUnavailable", "watches paused by the test"))
            return self.watch(req, int(query.get("resourceVersion", ["0"])[0] or 0),
                              int(query.get("timeoutSeconds", ["300"])[0]))
        if cmd == "GET" and name is None:
            with self.cond:
                delay, left = self.slow_lists
                if left:
                    self.slow_lists = (delay, left - 1)
            if left:
                time.sleep(delay)  # outside the lock: writes and watches go on meanwhile
        with self.cond:
            if cmd == "GET" and name is None:
                return req.reply(200, {"kind": "KmeshNodeInfoList", "apiVersion": "kmesh.net/v1alpha1",
                                       "metadata": {"resourceVersion": str(self.rv)},
                                       "items": list(self.objects.values())})
            if cmd == "POST" and name is None:
                obj = json.loads(body)
                n = obj.get("metadata", {}).get("name")
                if n in self.objects:
                    return req.reply(409, status(409, "AlreadyExists", 'kmeshnodeinfos "%s" already exists' % n))
                return req.reply(201, self._write("ADDED", obj))
            if name is None or name not in self.objects:
                return req.reply(404, status(404, "NotFound", 'kmeshnodeinfos "%s" not found' % name))
            if cmd == "GET":
                return req.reply(200, self.objects[name])
            if cmd == "PATCH":
                if req.headers.get("Content-Type") != "application/merge-patch+json":
                    return req.reply(415, status(415, "UnsupportedMediaType", "merge patch only"))
                return req.reply(200, self._write("MODIFIED", merge(self.objects[name], json.loads(body))))
            if cmd == "PUT":
                return req.reply(200, self._write("MODIFIED", json.loads(body)))
            if cmd == "DELETE":
                return req.reply(200, self._write("DELETED", self.objects[name]))
        return req.reply(405, status(405, "MethodNotAllowed", cmd))

    def handle_other(self, req, body, key, ns, name, kind):
        """Secrets and Gateways: list, get, create, replace (with resourceVersion), merge patch,
        delete."""
        cmd = req.command
        plural = key.split("/")[0]
        with self.cond:
            if cmd == "GET" and name is None:
                items = [o for (k, _), o in sorted(self.other.items()) if k == key]
                return req.reply(200, {"kind": kind + "List", "metadata": {"resourceVersion": str(self.rv)},
                                       "items": items})
            if cmd == "POST" and name is None:
                obj = json.loads(body)
                n = obj.get("metadata", {}).get("name")
                if (key, n) in self.other:
                    return req.reply(409, status(409, "AlreadyExists", '%s "%s" already exists' % (plural, n)))
                self.rv += 1
                obj["metadata"].update({"namespace": ns, "resourceVersion": str(self.rv),
                                        "creationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
                self.other[(key, n)] = obj
                return req.reply(201, obj)
            cur = self.other.get((key, name))
            apply = cmd == "PATCH" and req.headers.get("Content-Type") == "application/apply-patch+yaml"
            if apply and name is not None:
                obj = json.loads(body)  # JSON is YAML
                self.rv += 1
                if cur is None:
                    obj["metadata"].update({"namespace": ns, "resourceVersion": str(self.rv),
                                            "creationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
                    self.other[(key, name)] = obj
                    return req.reply(201, obj)
                for f in ("labels", "annotations"):
                    if f in obj["metadata"]:
                        cur["metadata"][f] = obj["metadata"][f]
                    else:
                        cur["metadata"].pop(f, None)
                cur["spec"] = obj.get("spec")
                cur["metadata"]["resourceVersion"] = str(self.rv)
                return req.reply(200, cur)
            if name is None or cur is None:
                return req.reply(404, status(404, "NotFound", '%s "%s" not found' % (plural, name)))
            if cmd == "GET":
                return req.reply(200, cur)
            if cmd == "DELETE":  # a real server answers the object (or a Success Status)
                del self.other[(key, name)]
                return req.reply(200, cur)
            self.rv += 1
            if cmd == "PUT":
                obj = json.loads(body)
                rv = obj.get("metadata", {}).get("resourceVersion")
                if rv and rv != cur["metadata"]["resourceVersion"]:
                    return req.reply(409, status(409, "Conflict", "the object has been modified"))
            elif cmd == "PATCH":
                if req.headers.get("Content-Type") != "application/merge-patch+json":
                    return req.reply(415, status(415, "UnsupportedMediaType", "merge patch only"))
                obj = merge(cur, json.loads(body))
            else:
                return req.reply(405, status(405, "MethodNotAllowed", cmd))
            obj["metadata"].update({"namespace": ns, "resourceVersion": str(self.rv),
                                    "creationTimestamp": cur["metadata"]["creationTimestamp"]})
            self.other[(key, name)] = obj
            return req.reply(200, obj)

    def watch(self, req, since, timeout):
        req.send_response(200)
        req.send_header("Content-Type", "application/json")
        req.send_header("Transfer-Encoding", "chunked")
        req.end_headers()
        req.wfile.flush()

        def chunk(obj):
            data = (json.dumps(obj) + "\n").encode()
            req.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            req.wfile.flush()

        deadline = time.monotonic() + timeout
        with self.cond:
            drops, ends = self.drops, self.ends
            if since < self.compacted:
                chunk({"type": "ERROR", "object": status(410, "Expired", "too old resource version: %d" % since)})
                req.wfile.write(b"0\r\n\r\n")
                return
            while time.monotonic() < deadline:
                for rv, kind, obj in self.events:
                    if rv > since:
                        chunk({"type": kind, "object": obj})
                        since = rv
                self.cond.wait(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
                if self.drops != drops:  # broken: the connection goes without an end chunk
                    req.close_connection = True
                    req.connection.close()
                    return
                if self.ends != ends:
                    break
        req.wfile.write(b"0\r\n\r\n")
        req.wfile.flush()


STORE = Store()
