#!/usr/bin/python3
"""Runs a CNI configuration list the way kubelet's runtime (libcni) does: each plugin is found in
CNI_PATH and executed with the CNI_* environment and its configuration on stdin (the list's name
and cniVersion added, and prevResult: the result of the plugin before it). ADD runs the plugins
in order and caches the final result; DEL runs them in reverse with the cached result; CHECK
runs them in order with it. Prints the final ADD result; on a plugin's failure prints its error
to stderr and exits with its exit code.

  cni_chain.py ADD|DEL|CHECK --conflist F --cni-path DIRS --cache DIR --container-id ID
               --netns PATH [--ifname eth0] [--pod-namespace NS --pod-name NAME]"""
import argparse
import json
import os
import subprocess
import sys


def run_plugin(args, conf, plugin, prev):
    stdin = dict(plugin)
    stdin["name"] = conf["name"]
    stdin["cniVersion"] = conf["cniVersion"]
    if prev is not None:
        stdin["prevResult"] = prev
    env = dict(os.environ)
    env.update({"CNI_COMMAND": args.command, "CNI_CONTAINERID": args.container_id,
                "CNI_NETNS": args.netns, "CNI_IFNAME": args.ifname, "CNI_PATH": args.cni_path})
    cni_args = ["IgnoreUnknown=1"]
    if args.pod_name:
        cni_args += ["K8S_POD_NAMESPACE=" + args.pod_namespace, "K8S_POD_NAME=" + args.pod_name,
                     "K8S_POD_INFRA_CONTAINER_ID=" + args.container_id]
    env["CNI_ARGS"] = ";".join(cni_args)
    exe = None
    for d in args.cni_path.split(":"):
        if os.access(os.path.join(d, plugin["type"]), os.X_OK):
            exe = os.path.join(d, plugin["type"])
            break
    if exe is None:
        sys.stderr.write("plugin %s not found in %s\n" % (plugin["type"], args.cni_path))
        sys.exit(127)
    p = subprocess.run([exe], input=json.dumps(stdin).encode(), env=env, capture_output=True)
    if p.returncode != 0:
        sys.stderr.write("%s %s failed (exit %d): %s\n" % (plugin["type"], args.command,
                                                           p.returncode, p.stdout.decode()))
        sys.exit(p.returncode)
    out = p.stdout.decode().strip()
    return json.loads(out) if out else prev


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["ADD", "DEL", "CHECK"])
    ap.add_argument("--conflist", required=True)
    ap.add_argument("--cni-path", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--container-id", required=True)
    ap.add_argument("--netns", default="")
    ap.add_argument("--ifname", default="eth0")
    ap.add_argument("--pod-namespace", default="")
    ap.add_argument("--pod-name", default="")
    args = ap.parse_args()
    with open(args.conflist) as f:
        conf = json.load(f)
    os.makedirs(args.cache, exist_ok=True)
    cached = os.path.join(args.cache, args.container_id + ".json")
    if args.command == "ADD":
        prev = None
        for plugin in conf["plugins"]:
            prev = run_plugin(args, conf, plugin, prev)
        with open(cached, "w") as f:
            json.dump(prev, f)
        print(json.dumps(prev))
        return
    prev = None
    if os.path.exists(cached):
        with open(cached) as f:
            prev = json.load(f)
    plugins = conf["plugins"][::-1] if args.command == "DEL" else conf["plugins"]
    for plugin in plugins:
        run_plugin(args, conf, plugin, prev)
    if args.command == "DEL" and os.path.exists(cached):
        os.unlink(cached)


if __name__ == "__main__":
    main()
