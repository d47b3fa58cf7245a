#!/usr/bin/python3
"""Talk to fake_istiod.py's control socket.
  istiod_ctl.py SOCKET send JSON          send one command, print the answer
  istiod_ctl.py SOCKET query EXPR         evaluate EXPR over the state (as `s`), print the result
  istiod_ctl.py SOCKET wait EXPR [SECS]   until EXPR over the state is true (exit 1 on timeout)
Helpers usable in EXPR: last(s) = the newest stream, reqs(st, type) = its requests of a type."""
import json
import socket
import sys
import time

ADDRESS = "type.googleapis.com/istio.workload.Address"
AUTHZ = "type.googleapis.com/istio.security.Authorization"


def call(path, cmd):
    with socket.socket(socket.AF_UNIX) as c:
        c.connect(path)
        c.sendall((json.dumps(cmd) + "\n").encode())
        return json.loads(c.makefile().readline())


def last(s):
    return s["streams"][-1] if s["streams"] else {"requests": [], "open": False}


def reqs(st, type_url):
    return [r for r in st["requests"] if r["type_url"] == type_url]


def evaluate(path, expr):
    s = call(path, {"cmd": "state"})
    return eval(expr, {"s": s, "last": last, "reqs": reqs, "ADDRESS": ADDRESS, "AUTHZ": AUTHZ,
                       "len": len, "any": any, "all": all, "sum": sum})


def main():
    path, verb, arg = sys.argv[1], sys.argv[2], sys.argv[3]
    if verb == "send":
        answer = call(path, json.loads(arg))
        print(json.dumps(answer))
        return 1 if "error" in answer else 0
    if verb == "query":
        print(json.dumps(evaluate(path, arg)))
        return 0
    deadline = time.time() + (float(sys.argv[4]) if len(sys.argv) > 4 else 10)
    while time.time() < deadline:
        try:
            if evaluate(path, arg):
                return 0
        except (IndexError, KeyError):
            pass
        time.sleep(0.05)
    print("timed out waiting for: " + arg, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
