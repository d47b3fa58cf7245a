#!/usr/bin/python3
"""A fake istiod for tests: a real gRPC server (Debian's python3-grpcio) serving Envoy Delta ADS
(DeltaAggregatedResources) over TLS or plaintext, with istiod's delta behaviour:

  - resources carry a content-hash version; the first request of a type on a stream gets every
    resource whose version differs from initial_resource_versions, and removed_resources for
    names the client holds that no longer exist;
  - changes are pushed to every open stream; ACKs and NACKs are recorded, never answered;
  - like istiod (ISTIO_GPRC_MAXRECVMSGSIZE), it refuses a request larger than 4 MiB with
    grpc-status 8 RESOURCE_EXHAUSTED (--max-receive-bytes).

A test drives it over a Unix socket, one JSON command per line, one JSON answer per line:
  {"cmd": "set", "resources": [Address...]}          replace the Address state (the kmesh JSON
                                                       mapping: IP text allowed for addresses;
                                                       {"bad_workload_uid": U} is an invalid one)
  {"cmd": "set-authz", "policies": [Authorization...]}  replace the Authorization state
  {"cmd": "push-raw", "type": URL, "name": N, "payload_b64": B}  push one resource as is
  {"cmd": "push-removals", "count": N, "name": S}    push one Address response of N removed
                                                       names, each S ("" for empty): an attack
                                                       on the client's memory
  {"cmd": "add", "resources": [Address...]}          add or replace these, push them
  {"cmd": "drop", "names": [N...]}                    remove Address resources without telling
                                                       anyone (as if gone while no stream was
                                                       open: only a new stream learns it)
  {"cmd": "end-stream", "code": 0, "message": ""}     end every open stream with that status
  {"cmd": "ca", "tokens": {TOKEN: ID}, "cluster": C, "trusted": [ID], "allowed": [ID],
   "max_ttl": S, "wrong_san": ID|null, "wrong_key": B,
   "fail": STATUS|null, "delay_ms": N}                the CA's rules (fake_ca.py; --ca-cert)
  {"cmd": "ca-state"}                                  the CreateCertificate calls seen
  {"cmd": "state"}                                     streams, headers and requests seen
                                                       (a request's initial_resource_versions
                                                       listed only up to 10000; its size and
                                                       count always; Address names up to 10000)
  {"cmd": "prepare", "workloads": N, "services": M, "dump": PATH}  build a synthetic mesh (not
                                                       pushed; PATH gets the response's bytes)
  {"cmd": "push-prepared"}                             make it the state and push it at once
  {"cmd": "flap", "count": K, "interval_ms": I}        K one-workload changes, one per response
  {"cmd": "require-token", "token": T|null}           streams whose authorization is not
                                                       "Bearer T" end at once with grpc-status
                                                       16 UNAUTHENTICATED, as istiod's (counted
                                                       in "rejected"); null: any token
  {"cmd": "delay-demand", "ms": N}                     answer on-demand subscriptions N ms late
  {"cmd": "hold", "on": true|false}                    while on, first responses on new streams
                                                       wait (a slow istiod); off sends them
On demand (istio-wire §3.8), as istiod's generateDeltasOndemand: a stream whose first Address
request subscribes and unsubscribes "*" gets only what it names (the resources in its
initial_resource_versions) and the workloads on its node (node metadata NODE_NAME); then, for
each key of a later spontaneous subscription, what istiod's index answers ("<ns>/<hostname>" or
"<network>/<vip>": the service and its workloads; "<network>/<ip>": the workloads holding it;
a uid: that workload), all added to its subscription, and a key that answers nothing in
removed_resources. An unsubscription drops names (nothing is sent for them). Pushes to such a
stream carry only subscribed names and the workloads on its node: a new workload of a
subscribed service is not pushed (istiod's own test says so). A spontaneous request that changes
no subscription is counted in "mismatches" and not answered (istiod logs it as an error).
Started with --state FILE, it serves that state ({"resources": [...], "policies": [...]}, as
"set" and "set-authz" take them) from its first stream, as a restarted istiod does; with --port it
listens on that port (a restart on the same address).
Generated protobuf modules must be importable (protoc --python_out of proto/*.proto)."""
import argparse
import base64
import hashlib
import ipaddress
import json
import os
import queue
import socketserver
import sys
import threading
from concurrent import futures

import grpc
from google.protobuf import json_format

import authorization_pb2
import workload_pb2
import xds_pb2

ADDRESS = "type.googleapis.com/istio.workload.Address"
AUTHZ = "type.googleapis.com/istio.security.Authorization"
METHOD = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"
END = object()


def ip_text_to_base64(obj):
    """Our JSON files allow IP text where proto JSON wants base64 bytes; convert before parsing."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k == "address" and isinstance(v, str):
                out[k] = to_b64(v)
            elif k == "addresses" and isinstance(v, list) and all(isinstance(x, str) for x in v):
                out[k] = [to_b64(x) for x in v]
            else:
                out[k] = ip_text_to_base64(v)
        return out
    if isinstance(obj, list):
        return [ip_text_to_base64(x) for x in obj]
    return obj


def to_b64(s):
    try:
        return base64.b64encode(ipaddress.ip_address(s).packed).decode()
    except ValueError:
        return s


def address_name(addr):
    if addr.HasField("workload"):
        return addr.workload.uid
    return "%s/%s" % (addr.service.namespace, addr.service.hostname)


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.resources = {ADDRESS: {}, AUTHZ: {}}  # type -> name -> (version, payload bytes)
        self.streams = []
        self.nonce = 0
        self.hold = False
        self.require_token = None
        self.rejected = 0
        self.mismatches = 0  # spontaneous requests that changed no subscription
        self.demand_delay_ms = 0  # on-demand subscriptions answered this late

    def next_nonce(self):
        self.nonce += 1
        return "n%d" % self.nonce


STATE = State()


class Stream:
    def __init__(self, metadata):
        self.queue = queue.Queue()
        self.metadata = {k: v for k, v in metadata}
        self.requests = []
        self.open = True
        self.held = []  # first responses kept back while STATE.hold
        self.subs = None  # on demand: the Address names subscribed (None: everything)
        self.opened = set()  # types whose first request came
        self.node = None  # the client's NODE_NAME (on demand: its node's workloads are pushed)

    def describe(self):
        return {"authorization": self.metadata.get("authorization"),
                "clusterid": self.metadata.get("clusterid"),
                "open": self.open, "requests": self.requests}


def response(type_url, items, removed):
    r = xds_pb2.DeltaDiscoveryResponse(type_url=type_url, nonce=STATE.next_nonce(),
                                       system_version_info="fake")
    for name, (version, payload) in items:
        r.resources.add(name=name, version=version,
                        resource=xds_pb2.Any(type_url=type_url, value=payload))
    r.removed_resources.extend(removed)
    return r


LIST_MAX = 10000  # longer lists are left out of "state" answers (a count stays)


def record(stream, req):
    n = len(req.initial_resource_versions)
    entry = {"type_url": req.type_url, "nonce": req.response_nonce,
             "initial": dict(req.initial_resource_versions) if n <= LIST_MAX else None,
             "initial_count": n, "bytes": req.ByteSize(),
             "subscribe": list(req.resource_names_subscribe)[:LIST_MAX],
             "unsubscribe": list(req.resource_names_unsubscribe)[:LIST_MAX]}
    if req.HasField("error_detail"):
        entry["error"] = req.error_detail.message
        entry["error_code"] = req.error_detail.code
    if req.HasField("node"):
        entry["node_id"] = req.node.id
        entry["metadata"] = {k: v.string_value for k, v in req.node.metadata.fields.items()}
        entry["metadata_kinds"] = {k: v.WhichOneof("kind") for k, v in req.node.metadata.fields.items()}
    stream.requests.append(entry)


def reader(stream, requests):
    try:
        for req in requests:
            with STATE.lock:
                record(stream, req)
                initial = not req.response_nonce and req.type_url not in stream.opened
                stream.opened.add(req.type_url)
                if req.HasField("node") and stream.node is None:
                    stream.node = req.node.metadata.fields["NODE_NAME"].string_value \
                        if "NODE_NAME" in req.node.metadata.fields else ""
                if (not initial and not req.response_nonce and req.type_url == ADDRESS and
                        stream.subs is not None):
                    r = subscription_changed(stream, req)
                    if r is not None and STATE.demand_delay_ms:
                        threading.Timer(STATE.demand_delay_ms / 1000.0, stream.queue.put, [r]).start()
                    elif r is not None:
                        stream.queue.put(r)
                    continue
                if initial and req.type_url in STATE.resources:
                    held = dict(req.initial_resource_versions)
                    have = STATE.resources[req.type_url]
                    missing = []
                    if (req.type_url == ADDRESS and "*" in req.resource_names_subscribe and
                            "*" in req.resource_names_unsubscribe):
                        # on demand: what it holds, the workloads of its node, and what the
                        # keys it subscribes name
                        keys = [k for k in req.resource_names_subscribe if k != "*"]
                        stream.subs = set(held) | INDEX.on_node(stream.node) | set(keys)
                        for k in keys:
                            found = {n for n in INDEX.lookup(k) if n in have}
                            stream.subs |= found
                            if not found:
                                missing.append(k)
                    pool = sorted(have.items()) if stream.subs is None else \
                        [(n, have[n]) for n in sorted(stream.subs) if n in have]
                    items = [(n, vp) for n, vp in pool if held.get(n) != vp[0] or not vp[0]]
                    removed = sorted(set(n for n in held if n not in have) | set(missing))
                    r = response(req.type_url, items, removed)
                    if STATE.hold:
                        stream.held.append(r)
                    else:
                        stream.queue.put(r)
    except Exception:  # the stream ended
        pass
    finally:
        stream.open = False
        stream.queue.put(END)


def delta_ads(requests, context):
    stream = Stream(context.invocation_metadata())
    with STATE.lock:
        want = STATE.require_token
        if want is not None and stream.metadata.get("authorization") != "Bearer " + want:
            STATE.rejected += 1
            refused = True
        else:
            refused = False
            STATE.streams.append(stream)
    if refused:  # as istiod: before any message is read
        context.abort(grpc.StatusCode.UNAUTHENTICATED, "authentication failure")
    threading.Thread(target=reader, args=(stream, requests), daemon=True).start()
    while True:
        item = stream.queue.get()
        if item is END:
            stream.open = False
            return
        if isinstance(item, tuple):  # ("end", code, message)
            stream.open = False
            if item[1] != 0:
                context.abort(next(c for c in grpc.StatusCode if c.value[0] == item[1]), item[2])
            return
        yield item


def serialize(response):
    """Responses are messages, or bytes serialized beforehand (the prepared bulk push, so the
    benchmark does not time Python's encoder)."""
    return response if isinstance(response, bytes) else response.SerializeToString()


class Index:
    """What istiod's ambient index answers an on-demand key with (its Lookup): the names behind
    "<ns>/<hostname>" and "<network>/<ip>" keys, and each service's workloads."""

    def __init__(self):
        self.keys = {}      # key -> set of resource names
        self.members = {}   # service name -> set of workload uids
        self.of = {}        # resource name -> (keys, services it is a member of, node)
        self.nodes = {}     # node -> set of workload uids

    def add(self, name, keys, services, node=""):
        self.remove(name)
        self.of[name] = (keys, services, node)
        for k in keys:
            self.keys.setdefault(k, set()).add(name)
        for svc in services:
            self.members.setdefault(svc, set()).add(name)
        if node:
            self.nodes.setdefault(node, set()).add(name)

    def add_payload(self, name, payload):
        a = workload_pb2.Address.FromString(payload)
        if a.HasField("workload"):
            w = a.workload
            keys = ["%s/%s" % (w.network, ipaddress.ip_address(x)) for x in w.addresses
                    if len(x) in (4, 16)]
            self.add(name, keys, list(w.services.keys()), w.node)
        else:
            sv = a.service
            keys = [name] + ["%s/%s" % (x.network, ipaddress.ip_address(x.address))
                             for x in sv.addresses if len(x.address) in (4, 16)]
            self.add(name, keys, [])

    def remove(self, name):
        keys, services, node = self.of.pop(name, ((), (), ""))
        for k in keys:
            self.keys.get(k, set()).discard(name)
        for svc in services:
            self.members.get(svc, set()).discard(name)
        self.nodes.get(node, set()).discard(name)

    def lookup(self, key):
        names = set(self.keys.get(key, ()))
        if key in STATE.resources[ADDRESS]:
            names.add(key)  # a uid, or a service's own name
        for n in list(names):
            names |= self.members.get(n, set())
        return names

    def node_of(self, name):
        return self.of.get(name, ((), (), ""))[2]

    def on_node(self, node):
        return set(self.nodes.get(node, ())) if node else set()


INDEX = Index()


def subscription_changed(stream, req):
    """A spontaneous request on an on-demand stream: the names it unsubscribes go, and the keys it
    subscribes are answered with everything they name (now subscribed), keys that name nothing
    in removed_resources. None when it changed nothing (istiod: a mismatch, no answer)."""
    have = STATE.resources[ADDRESS]
    changed = False
    for n in req.resource_names_unsubscribe:
        if n in stream.subs:
            stream.subs.discard(n)
            changed = True
    names, missing = set(), []
    for k in req.resource_names_subscribe:
        if k not in stream.subs:
            stream.subs.add(k)
            changed = True
        found = {n for n in INDEX.lookup(k) if n in have}
        if not found:
            missing.append(k)
        names |= found
    if not changed:
        STATE.mismatches += 1
        return None
    names |= INDEX.on_node(stream.node)
    stream.subs |= names
    return response(ADDRESS, [(n, have[n]) for n in sorted(names)], sorted(missing))


def deliver(type_url, changed, removed):
    """Push a change to every open stream: whole to a wildcard stream, to one on demand only
    what it subscribed to and the new workloads of the services it subscribed to."""
    for s in STATE.streams:
        if not s.open:
            continue
        if type_url != ADDRESS or s.subs is None:
            s.queue.put(response(type_url, changed, removed))
            continue
        mine = []
        for n, vp in changed:
            if n not in s.subs and INDEX.node_of(n) == s.node and s.node:
                s.subs.add(n)  # a workload of its node
            if n in s.subs:
                mine.append((n, vp))
        gone = [n for n in removed if n in s.subs]
        if mine or gone:
            s.queue.put(response(type_url, mine, gone))


def reindex(changed, removed):
    for n in removed:
        INDEX.remove(n)
    for n, (_, payload) in changed:
        INDEX.add_payload(n, payload)


def set_type(type_url, new, index=None):
    """Replace a type's state and push the difference to every open stream (index: the new
    state's on-demand index, if built already)."""
    global INDEX
    old = STATE.resources[type_url]
    changed = [(n, vp) for n, vp in sorted(new.items()) if old.get(n) != vp]
    removed = sorted(n for n in old if n not in new)
    STATE.resources[type_url] = new
    if index is not None:
        INDEX = index
    elif type_url == ADDRESS:
        reindex(changed, removed)
    if changed or removed:
        deliver(type_url, changed, removed)
    return {"changed": len(changed), "removed": len(removed)}


def versioned(payload, with_version=True):
    return (hashlib.sha256(payload).hexdigest()[:16] if with_version else "", payload)


PREPARED = {}


def synthetic(n_workloads, n_services, variant=0):
    """n_services services with one VIP and port each; workloads spread evenly over them. A
    different variant changes every workload (its node's name). Returns the items and their
    on-demand index (built here: parsing a million payloads back would take Python minutes)."""
    items = {}
    index = Index()
    for i in range(n_services):
        svc = workload_pb2.Service(name="s%d" % i, namespace="bench", hostname="s%d.bench" % i,
                                   addresses=[workload_pb2.NetworkAddress(address=bytes([10, 96, i >> 8 & 255, i & 255]))],
                                   ports=[workload_pb2.Port(service_port=80, target_port=8080)])
        items["bench/s%d.bench" % i] = versioned(workload_pb2.Address(service=svc).SerializeToString())
        index.add("bench/s%d.bench" % i, ["bench/s%d.bench" % i,
                                          "/10.96.%d.%d" % (i >> 8 & 255, i & 255)], [])
    for i in range(n_workloads):
        uid = "Kubernetes//Pod/bench/w%d" % i
        wl = workload_pb2.Workload(uid=uid, name="w%d" % i, namespace="bench", node="v%d-n%d" % (variant, i % 100),
                                   addresses=[bytes([10, 128 + (i >> 16 & 63), i >> 8 & 255, i & 255])])
        wl.services["bench/s%d.bench" % (i % n_services)].ports.add(service_port=80, target_port=8080)
        items[uid] = versioned(workload_pb2.Address(workload=wl).SerializeToString())
        index.add(uid, ["/10.%d.%d.%d" % (128 + (i >> 16 & 63), i >> 8 & 255, i & 255)],
                  ["bench/s%d.bench" % (i % n_services)], "v%d-n%d" % (variant, i % 100))
    return items, index


def flap(count, interval):
    """One workload goes UNHEALTHY and back, one change per response."""
    import time
    name = "Kubernetes//Pod/bench/w0"
    base = workload_pb2.Address.FromString(STATE.resources[ADDRESS][name][1])
    for k in range(count):
        base.workload.status = workload_pb2.UNHEALTHY if k % 2 == 0 else workload_pb2.HEALTHY
        with STATE.lock:
            set_one(ADDRESS, name, versioned(base.SerializeToString()))
        time.sleep(interval / 1000.0)


def set_one(type_url, name, vp):
    STATE.resources[type_url][name] = vp
    if type_url == ADDRESS:
        reindex([(name, vp)], [])
    deliver(type_url, [(name, vp)], [])


def parse_addresses(resources):
    new = {}
    for item in resources:
        if "bad_workload_uid" in item:  # a workload whose address has 3 bytes
            addr = workload_pb2.Address(workload=workload_pb2.Workload(
                uid=item["bad_workload_uid"], addresses=[b"\x01\x02\x03"]))
        else:
            addr = json_format.ParseDict(ip_text_to_base64(item), workload_pb2.Address())
        new[address_name(addr)] = versioned(addr.SerializeToString())
    return new


CA = None  # fake_ca.CA, with --ca-cert and --ca-key


def handle(cmd):
    if cmd["cmd"] in ("ca", "ca-state"):  # the CA keeps its own lock
        if CA is None:
            return {"error": "no CA: start with --ca-cert and --ca-key"}
        if cmd["cmd"] == "ca":
            CA.configure(cmd)
            return {"ok": True}
        return CA.state()
    if cmd["cmd"] == "flap":  # runs without the lock held between changes
        threading.Thread(target=flap, args=(cmd["count"], cmd.get("interval_ms", 5)), daemon=True).start()
        return {"started": True}
    with STATE.lock:
        c = cmd["cmd"]
        if c == "set":
            return set_type(ADDRESS, parse_addresses(cmd["resources"]))
        if c == "add":
            new = dict(STATE.resources[ADDRESS])
            new.update(parse_addresses(cmd["resources"]))
            return set_type(ADDRESS, new)
        if c == "drop":
            have = STATE.resources[ADDRESS]
            gone = [n for n in cmd["names"] if have.pop(n, None)]
            return {"dropped": len(gone)}
        if c == "set-authz":
            new = {}
            for item in cmd["policies"]:
                pol = json_format.ParseDict(ip_text_to_base64(item), authorization_pb2.Authorization())
                # istiod sets no version for this type
                new["%s/%s" % (pol.namespace, pol.name)] = versioned(pol.SerializeToString(), False)
            return set_type(AUTHZ, new)
        if c == "push-raw":
            payload = base64.b64decode(cmd["payload_b64"])
            for s in STATE.streams:
                if s.open:
                    s.queue.put(response(cmd["type"], [(cmd["name"], versioned(payload))], []))
            return {"pushed": True}
        if c == "push-removals":
            name = cmd["name"].encode()
            # removed_resources is field 6 (wire type 2): built as bytes, Python's encoder
            # would take minutes for millions
            data = response(ADDRESS, [], []).SerializeToString() + \
                (bytes([0x32, len(name)]) + name) * cmd["count"]
            for s in STATE.streams:
                if s.open:
                    s.queue.put(data)
            return {"bytes": len(data)}
        if c == "prepare":
            PREPARED["items"], PREPARED["index"] = synthetic(cmd["workloads"], cmd["services"],
                                                             cmd.get("variant", 0))
            r = response(ADDRESS, sorted(PREPARED["items"].items()), [])
            data = r.SerializeToString()
            PREPARED["response"] = data
            if cmd.get("dump"):
                with open(cmd["dump"], "wb") as f:
                    f.write(data)
            return {"resources": len(PREPARED["items"]), "bytes": len(data)}
        if c == "set-prepared":  # the prepared state, sent as the difference from the current one
            return set_type(ADDRESS, PREPARED["items"], PREPARED["index"])
        if c == "push-prepared":
            import time
            global INDEX
            STATE.resources[ADDRESS] = PREPARED["items"]
            INDEX = PREPARED["index"]
            t0 = time.time()
            for s in STATE.streams:
                if s.open and s.subs is None:
                    s.queue.put(PREPARED["response"])
                elif s.open:  # on demand: what it subscribed to
                    mine = [(n, PREPARED["items"][n]) for n in sorted(s.subs) if n in PREPARED["items"]]
                    if mine:
                        s.queue.put(response(ADDRESS, mine, []))
            return {"t0": t0}
        if c == "end-stream":
            n = 0
            for s in STATE.streams:
                if s.open:
                    s.queue.put(("end", cmd.get("code", 0), cmd.get("message", "")))
                    n += 1
            return {"ended": n}
        if c == "require-token":
            STATE.require_token = cmd.get("token")
            return {"require_token": STATE.require_token}
        if c == "delay-demand":
            STATE.demand_delay_ms = int(cmd["ms"])
            return {"delay_ms": STATE.demand_delay_ms}
        if c == "hold":
            STATE.hold = bool(cmd["on"])
            n = 0
            if not STATE.hold:
                for s in STATE.streams:
                    for r in s.held:
                        s.queue.put(r)
                        n += 1
                    s.held = []
            return {"hold": STATE.hold, "released": n}
        if c == "state":
            names = STATE.resources[ADDRESS]
            return {"streams": [s.describe() for s in STATE.streams], "rejected": STATE.rejected,
                    "mismatches": STATE.mismatches,
                    "address": sorted(names) if len(names) <= LIST_MAX else None,
                    "address_count": len(names),
                    "authz": sorted(STATE.resources[AUTHZ])}
        return {"error": "unknown command %s" % c}


class Control(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            try:
                answer = handle(json.loads(line))
            except Exception as e:  # report, keep serving
                answer = {"error": repr(e)}
            self.wfile.write((json.dumps(answer) + "\n").encode())
            self.wfile.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--control", required=True, help="Unix socket for test commands")
    ap.add_argument("--port-file", required=True, help="where the chosen port is written")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--max-connection-age-ms", type=int, default=0)
    ap.add_argument("--max-receive-bytes", type=int, default=4 << 20,
                    help="largest request accepted (istiod's default: 4 MiB)")
    ap.add_argument("--port", type=int, default=0, help="listen on this port (0: a free one)")
    ap.add_argument("--state", help="JSON file with the initial resources and policies")
    ap.add_argument("--ca-cert", help="serve CreateCertificate, signing with this CA (fake_ca.py)")
    ap.add_argument("--ca-key")
    args = ap.parse_args()
    if args.state:  # a restarted istiod serves its whole state from its first stream
        try:
            with open(args.state) as f:
                initial = json.load(f)
            handle({"cmd": "set", "resources": initial["resources"]})
            handle({"cmd": "set-authz", "policies": initial.get("policies", [])})
        except Exception as e:  # an empty state would tell the agent to remove everything
            sys.exit("--state %s: %r" % (args.state, e))

    options = [("grpc.max_receive_message_length", args.max_receive_bytes),
               ("grpc.max_send_message_length", 1024 << 20)]
    if args.port:  # a restart on the same port: never share it with a server still alive
        options.append(("grpc.so_reuseport", 0))
    if args.max_connection_age_ms:
        options += [("grpc.max_connection_age_ms", args.max_connection_age_ms),
                    ("grpc.max_connection_age_grace_ms", 500)]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=options)
    handler = grpc.method_handlers_generic_handler(
        "envoy.service.discovery.v3.AggregatedDiscoveryService",
        {"DeltaAggregatedResources": grpc.stream_stream_rpc_method_handler(
            delta_ads, request_deserializer=xds_pb2.DeltaDiscoveryRequest.FromString,
            response_serializer=serialize)})
    server.add_generic_rpc_handlers((handler,))
    if args.ca_cert:
        import fake_ca
        global CA
        CA = fake_ca.CA(args.ca_cert, args.ca_key)
        server.add_generic_rpc_handlers((fake_ca.handler(CA),))
    if args.cert:
        creds = grpc.ssl_server_credentials([(open(args.key, "rb").read(), open(args.cert, "rb").read())])
        port = server.add_secure_port("127.0.0.1:%d" % args.port, creds)
    else:
        port = server.add_insecure_port("127.0.0.1:%d" % args.port)
    if not port or (args.port and port != args.port):
        sys.exit("cannot listen on 127.0.0.1:%d" % args.port)
    server.start()
    if os.path.exists(args.control):
        os.unlink(args.control)
    control = socketserver.ThreadingUnixStreamServer(args.control, Control)
    threading.Thread(target=control.serve_forever, daemon=True).start()
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(port))
    os.rename(args.port_file + ".tmp", args.port_file)
    server.wait_for_termination()


if __name__ == "__main__":
    sys.exit(main())
