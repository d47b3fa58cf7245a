"""chart_checks.py — checks of the objects `helm template` rendered from charts/kmesh.

usage: chart_checks.py default|all RENDERED.yaml COMMANDS.json
Prints "ok   - ..." / "FAIL - ..." per check (as tests/lib/check.sh does) and writes every
container's command line (and each probe's) to COMMANDS.json, for the shell test to run against
the real binaries. Exit status: the number of failed checks (at most 100)."""
import json
import sys

import yaml

mode, rendered, commands_out = sys.argv[1:4]
docs = [d for d in yaml.safe_load_all(open(rendered)) if d]
failed = 0


def check(what, ok):
    global failed
    print(("ok   - " if ok else "FAIL - ") + what)
    failed += 0 if ok else 1


def kinds(kind):
    return [d for d in docs if d["kind"] == kind]


ds = kinds("DaemonSet")[0]
pod = ds["spec"]["template"]["spec"]
inits, mains = pod.get("initContainers", []), pod["containers"]
by_name = {c["name"]: c for c in inits + mains}


def mounts_of(name):
    return {m["mountPath"]: m for m in by_name[name].get("volumeMounts", [])}


caps = {n: c.get("securityContext", {}).get("capabilities", {}) for n, c in by_name.items()}
ipsec = mode == "all"

expect = ["map-writer", "xds-agent"] + (["ipsec-agent", "tunnel"] if ipsec else []) + ["cni-installer"]
check(f"{mode}: one container per process: {expect}", [c["name"] for c in inits + mains] == expect)
check("only the map writer has CAP_BPF",
      [n for n, c in caps.items() if "BPF" in c.get("add", [])] == ["map-writer"])
check("the map writer adds exactly BPF, PERFMON, NET_ADMIN, SYS_ADMIN",
      sorted(caps["map-writer"].get("add", [])) == ["BPF", "NET_ADMIN", "PERFMON", "SYS_ADMIN"])
check("every container drops ALL capabilities first", all(c.get("drop") == ["ALL"] for c in caps.values()))
xs = by_name["xds-agent"]["securityContext"]
check("the xDS agent: runAsNonRoot, a non-zero uid, no capabilities added",
      xs.get("runAsNonRoot") is True and xs.get("runAsUser", 0) > 0 and not caps["xds-agent"].get("add"))
check("every container: read-only root file system, no privilege escalation, not privileged",
      all(c["securityContext"].get("readOnlyRootFilesystem") is True
          and c["securityContext"].get("allowPrivilegeEscalation") is False
          and not c["securityContext"].get("privileged") for c in by_name.values()))
check("no hostPID or hostIPC; hostNetwork (IPsec and the node's metrics port)",
      not pod.get("hostPID") and not pod.get("hostIPC") and pod.get("hostNetwork") is True)
if ipsec:
    check("the IPsec agent adds NET_ADMIN only, and runs the in-cluster kubeconfig",
          caps["ipsec-agent"].get("add") == ["NET_ADMIN"]
          and "--kubeconfig=in-cluster" in by_name["ipsec-agent"]["args"])
if ipsec:
    ts = by_name["tunnel"]["securityContext"]
    targs = dict(a[2:].split("=", 1) for a in by_name["tunnel"]["args"] if "=" in a)
    cargs = dict(a[2:].split("=", 1) for a in by_name["cni-installer"]["args"] if "=" in a)
    check("the tunnel: non-root, a uid and gid of its own (not the xDS agent's), no capabilities",
          ts.get("runAsNonRoot") is True and ts.get("runAsUser", 0) > 0 and not caps["tunnel"].get("add")
          and ts["runAsUser"] != xs["runAsUser"] and ts["runAsGroup"] != xs["runAsGroup"])
    check("the tunnel asks istiod's CA (the xDS address, its root, the istio-ca token) for the trust domain",
          targs["ca-address"] == "istiod.istio-system.svc:15012"
          and targs["ca-root-file"] == "/var/run/secrets/istio/root-cert.pem"
          and targs["ca-token-file"] == "/var/run/secrets/tokens/istio-token"
          and targs["trust-domain"] == "td.example" and targs["cert-ttl"] == "3600"
          and {"/var/run/secrets/istio", "/var/run/secrets/tokens"} <= set(mounts_of("tunnel")))
    check("the CNI agent tells the tunnel's socket the pods (their shared run dir), and advertises HBONE",
          cargs["tunnel-socket"] == targs["socket"] == "/run/kmesh-tunnel/tunnel.sock"
          and cargs["hbone"] == "on"
          and mounts_of("cni-installer")["/run/kmesh-tunnel"]["name"] == "tunnel-run"
          and ts["runAsGroup"] in pod["securityContext"]["supplementalGroups"])
    check("HBONE inbound with the advertisement, through the map writer, which lets the tunnel's uid "
          "take the role tunnel",
          targs["hbone-inbound"] == "on" and targs["map-writer-socket"] == "/run/kmesh/map-writer.sock"
          and f"--allow=tunnel:uid={ts['runAsUser']}" in by_name["map-writer"]["args"]
          and f"--tunnel-uid={ts['runAsUser']}" in by_name["xds-agent"]["args"]
          and targs["xds-socket"] == "/run/kmesh-xds/admin.sock"
          and mounts_of("tunnel")["/run/kmesh"].get("readOnly") is True)
    margs, xargs = by_name["map-writer"]["args"], by_name["xds-agent"]["args"]
    check("HBONE outbound: the tunnel listens on the address the map writer puts on its interface "
          "and the agent sends to; the map writer takes the tunnel's cgroup from it (auto)",
          targs["hbone-outbound-address"] == "169.254.20.15"
          and "--tunnel-address=169.254.20.15" in margs and "--tunnel-cgroup=auto" in margs
          and any(a.startswith("--dns-interface=") for a in margs)
          and "--tunnel-address=169.254.20.15" in xargs)
    check("the tunnel's liveness: kmeshctl ready tunnel on its socket",
          by_name["tunnel"]["livenessProbe"]["exec"]["command"]
          == ["kmeshctl", "--tunnel-socket=/run/kmesh-tunnel/tunnel.sock", "ready", "tunnel"])
else:
    check("no tunnel by default, and the CNI agent neither feeds one nor advertises HBONE",
          "tunnel" not in by_name and not any(a.startswith(("--tunnel-socket", "--hbone"))
                                              for a in by_name["cni-installer"]["args"])
          and not any(a.startswith(("--allow=tunnel", "--tunnel-")) for a in by_name["map-writer"]["args"])
          and not any(a.startswith("--tunnel-address") for a in by_name["xds-agent"]["args"]))
daemons = [n for n in ("map-writer", "xds-agent", "ipsec-agent", "tunnel", "cni-installer") if n in by_name]
check(f"logAsJson: --log-format=json on every daemon ({mode} values: {'on' if mode == 'all' else 'off'})",
      all(("--log-format=json" in by_name[n]["args"]) == (mode == "all") for n in daemons)
      and len(daemons) >= 3)
if mode == "all":
    check("affinity: as given, in the pod spec",
          pod.get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution")
          is not None)
    check("env: every container gets the extra variables, as strings, after its own",
          all({"name": "HTTPS_PROXY", "value": "http://proxy.example:3128"} in by_name[n].get("env", [])
              and {"name": "KMESH_TEST_NUMBER", "value": "7"} in by_name[n]["env"] for n in daemons))
    check("volumes and volumeMounts: the extra volume in the pod, mounted in every container",
          any(v["name"] == "site-ca" for v in pod["volumes"])
          and all(any(m["name"] == "site-ca" and m["mountPath"] == "/etc/site-ca"
                      for m in by_name[n]["volumeMounts"]) for n in daemons))
else:
    check("no affinity, extra env or volumes by default",
          "affinity" not in pod and not any(v["name"] == "site-ca" for v in pod["volumes"])
          and all(all(e["name"] != "HTTPS_PROXY" for e in by_name[n].get("env", [])) for n in daemons))
xa = by_name["xds-agent"]["args"]
xds_run = next(v for v in pod["volumes"] if v["name"] == "xds-run")["emptyDir"]
if mode == "all":
    check("xds.onDemand: the agent on demand, its bound, its keys kept in its run dir, sized for them",
          "--xds-on-demand" in xa and "--xds-on-demand-max=4096" in xa
          and "--xds-on-demand-refresh=30" in xa
          and "--xds-on-demand-file=/run/kmesh-xds/on-demand.keys" in xa
          and int(xds_run["sizeLimit"]) == 1048576 + 4096 * 321)
else:
    check("not on demand by default; the run dir 1Mi",
          not any(a.startswith("--xds-on-demand") for a in xa) and xds_run["sizeLimit"] == "1Mi")
mw = by_name["map-writer"]
check("the map writer is a native sidecar (init, restartPolicy Always) gated by a startup probe",
      mw in inits and mw.get("restartPolicy") == "Always"
      and mw["startupProbe"]["exec"]["command"] == ["kmeshctl", "ready", "map-writer"])
mwargs = dict(a[2:].split("=", 1) for a in mw["args"] if "=" in a)
allows = [a.split("=", 1)[1] for a in mw["args"] if a.startswith("--allow=")]
check("the map writer lets exactly the xDS agent's uid take the xds role, its gid own the socket",
      [a for a in allows if a.startswith("xds:")] == [f"xds:uid={xs['runAsUser']}"]
      and mwargs["socket-group"] == str(xs["runAsGroup"]))
check("the pod's supplemental groups hold that gid (root without CAP_CHOWN gives a file only to its own groups)",
      int(mwargs["socket-group"]) in pod.get("securityContext", {}).get("supplementalGroups", []))
cni_args = dict(a[2:].split("=", 1) for a in by_name["cni-installer"]["args"] if "=" in a)
run_host = next(v["hostPath"]["path"] for v in pod["volumes"] if v["name"] == "run")
check("the CNI plugin (on the host) is told the host's path of the map writer's socket and its state dir",
      cni_args["map-writer-socket"] == run_host + "/map-writer.sock" and cni_args["state-dir"] == run_host + "/cni"
      and mounts_of("map-writer")["/run/kmesh"]["name"] == "run")
ci = by_name["cni-installer"]
check("the CNI agent mounts that run dir at its host path (the map writer's socket, its own in the state dir) "
      "and watches its node's pods (NODE_NAME from spec.nodeName)",
      ci["command"] == ["kmesh-cni-agent", "install"] and mounts_of("cni-installer")[run_host]["name"] == "run"
      and any(e["name"] == "NODE_NAME" and e["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
              for e in ci["env"]))
port = int(next(a.split(":")[-1] for a in by_name["xds-agent"]["args"] if a.startswith("--metrics-address=")))
xa = by_name["xds-agent"]
# over the admin socket, not HTTP: slow HTTP clients cannot starve them (docs/security.md)
admin_sock = next(a.split("=", 1)[1] for a in xa["args"] if a.startswith("--admin-socket="))
check("xDS agent probes: kmeshctl ready (readiness) and ready --live (liveness) over its admin "
      "socket, not the HTTP port",
      xa["readinessProbe"].get("exec", {}).get("command") ==
      ["kmeshctl", "--xds-socket=" + admin_sock, "ready", "xds-agent"]
      and xa["livenessProbe"].get("exec", {}).get("command") ==
      ["kmeshctl", "--xds-socket=" + admin_sock, "ready", "--live", "xds-agent"])
xaargs = dict(a[2:].split("=", 1) for a in xa["args"] if "=" in a)
if mode == "all":
    check("DNS on: the map writer makes the link-local address on its own interface and sends pods' "
          "DNS there; the xDS agent's proxy listens on that address and port alone",
          mwargs.get("dns-interface") == "kmesh-dns" and mwargs.get("dns-resolver") == "169.254.20.53"
          and mwargs.get("dns-port") == "15053" and xaargs.get("dns-address") == "169.254.20.53:15053"
          and xaargs.get("dns-upstream") == "10.96.0.10" and xaargs.get("dns-domain") == "cluster.local")
else:
    check("DNS off by default: no redirect, no proxy",
          not any(k.startswith("dns-") for k in list(mwargs) + list(xaargs)))
check("plaintext keeps its address's identity (STRICT met by pods of the mesh) unless set otherwise",
      xaargs.get("plaintext-identity") == "address")
ann = ds["spec"]["template"]["metadata"]["annotations"]
check("Prometheus scrape annotations name the same port and /metrics",
      ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == str(port)
      and ann.get("prometheus.io/path") == "/metrics")

mounts = {n: {m["mountPath"]: m for m in c.get("volumeMounts", [])} for n, c in by_name.items()}
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
check("no automounted API token; it is mounted only where the API is called",
      pod.get("automountServiceAccountToken") is False
      and sorted(n for n, m in mounts.items() if sa in m) == sorted(["cni-installer"] + (["ipsec-agent"] if ipsec else [])))
check("the xDS agent gets the istio-ca token and Istio's root CA, and the run dir read-only",
      "/var/run/secrets/tokens" in mounts["xds-agent"] and "/var/run/secrets/istio" in mounts["xds-agent"]
      and mounts["xds-agent"]["/run/kmesh"].get("readOnly") is True)
vols = {v["name"]: v for v in pod["volumes"]}
token = vols["istio-token"]["projected"]["sources"][0]["serviceAccountToken"]
check("the istio token is projected with audience istio-ca", token["audience"] == "istio-ca")
check("one metrics directory shared by the map writer, the xDS agent (and the IPsec agent, the tunnel)",
      all("/run/kmesh-metrics" in mounts[n] for n in expect if n != "cni-installer")
      and "emptyDir" in vols["metrics"])
check("the map writer sees the host's cgroup root, bpffs, run dir and pod netns mounts",
      {"/host/cgroup", "/sys/fs/bpf", "/run/kmesh", "/run/netns"} <= set(mounts["map-writer"])
      and mounts["map-writer"]["/run/netns"].get("mountPropagation") == "HostToContainer")
if ipsec:
    check("the kmesh-ipsec Secret is mounted (optional, mode 0400: root's alone) at the key file's directory",
          vols["ipsec-key"]["secret"] == {"secretName": "kmesh-ipsec", "optional": True,
                                          "defaultMode": 0o400}
          and "/etc/kmesh/ipsec" in mounts["ipsec-agent"])

rules = {(tuple(r["apiGroups"]), tuple(r["resources"])): sorted(r["verbs"]) for r in kinds("ClusterRole")[0]["rules"]}
want = {(("",), ("pods",)): ["get", "list", "patch", "watch"],
        (("",), ("namespaces",)): ["get", "list", "watch"]}
if ipsec:
    want[(("",), ("nodes",))] = ["get"]
check("ClusterRole: exactly pods get/list/watch/patch, namespaces get/list/watch (the CNI agent's cache)"
      + (", nodes get" if ipsec else ""), rules == want)
roles = kinds("Role")
if ipsec:
    r = roles[0]
    check("Role in kmesh-system: kmeshnodeinfos get, list, watch, create, patch (no delete, no update)",
          r["metadata"]["namespace"] == "kmesh-system"
          and r["rules"] == [{"apiGroups": ["kmesh.net"], "resources": ["kmeshnodeinfos"],
                              "verbs": ["get", "list", "watch", "create", "patch"]}])
else:
    check("no KmeshNodeInfo Role without IPsec", roles == [])
check("nothing may read Secrets", all("secrets" not in r["resources"]
                                       for role in kinds("ClusterRole") + roles for r in role["rules"]))
crds = kinds("CustomResourceDefinition")
check("the KmeshNodeInfo CRD: kmesh.net/v1alpha1, namespaced, spec fields as Kmesh names them",
      len(crds) == 1 and crds[0]["spec"]["scope"] == "Namespaced"
      and sorted(crds[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"])
      == ["addresses", "bootID", "podCIDRS", "spi"])

cmds = []
for c in inits + mains:
    cmds.append({"name": c["name"], "argv": c["command"] + c.get("args", [])})
    for p in ("startupProbe", "livenessProbe", "readinessProbe"):
        if "exec" in c.get(p, {}):
            cmds.append({"name": f"{c['name']} {p}", "argv": c[p]["exec"]["command"]})
json.dump(cmds, open(commands_out, "w"))
print("# checks done")
sys.exit(min(failed, 100))
