"""KmeshNodeInfo objects for the fake Kubernetes API (fake_kube_api.py), kept the way an API
server keeps them: every write bumps one resourceVersion counter and is recorded as a watch event.

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
  POST   /test/expire                             end every open watch cleanly, and make every
                                                  resourceVersion so far too old (410)"""
import json
import re
import threading
import time
import urllib.parse

PREFIX = "/apis/kmesh.net/v1alpha1/namespaces/kmesh-system/kmeshnodeinfos"


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
