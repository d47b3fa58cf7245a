#!/usr/bin/python3
"""admission_checks.py RENDERED.yaml USERNAME — the chart's node-scoped-writes policy, rendered:
a ValidatingAdmissionPolicy matching pod UPDATEs and KmeshNodeInfo writes by USERNAME only, with a
validation for each rule (node bound in the token, own node's pods, the one annotation, own
node's KmeshNodeInfo), and a binding that denies. Exit 0 if all hold; says what is missing."""
import sys

import yaml

docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
user = sys.argv[2]
policies = [d for d in docs if d.get("kind") == "ValidatingAdmissionPolicy"]
bindings = [d for d in docs if d.get("kind") == "ValidatingAdmissionPolicyBinding"]
roles = [d for d in docs if d.get("kind") == "ClusterRole"]
problems = []
if len(policies) != 1 or len(bindings) != 1:
    problems.append("want one policy and one binding, got %d and %d" % (len(policies), len(bindings)))
else:
    p, b = policies[0]["spec"], bindings[0]["spec"]
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"])): set(r["operations"])
             for r in p["matchConstraints"]["resourceRules"]}
    if "UPDATE" not in rules.get((("",), ("pods",)), set()):
        problems.append("pod UPDATEs (patches) not matched")
    if not {"CREATE", "UPDATE", "DELETE"} <= rules.get((("kmesh.net",), ("kmeshnodeinfos",)), set()):
        problems.append("KmeshNodeInfo writes not all matched")
    if p.get("failurePolicy") != "Fail":
        problems.append("failurePolicy is not Fail")
    conds = " ".join(c["expression"] for c in p.get("matchConditions", []))
    if '"%s"' % user not in conds:
        problems.append("not limited to %s: %s" % (user, conds))
    exprs = " ".join(v["expression"] for v in p["validations"])
    for want in ("authentication.kubernetes.io/node-name", "object.spec.nodeName == variables.node",
                 "kmesh.net/redirection", "object.spec == oldObject.spec",
                 "object.metadata.name) == variables.node"):
        if want not in exprs + " ".join(v["expression"] for v in p.get("variables", [])):
            problems.append("no validation on: " + want)
    if b.get("policyName") != policies[0]["metadata"]["name"] or b.get("validationActions") != ["Deny"]:
        problems.append("the binding does not deny with this policy")
# RBAC itself stays minimal: pods get/list/watch/patch (the CNI agent's cache and annotation),
# namespaces get/list/watch (and nodes get with IPsec)
for r in roles:
    for rule in r["rules"]:
        if "pods" in rule["resources"] and set(rule["verbs"]) != {"get", "list", "watch", "patch"}:
            problems.append("pods verbs widened: %s" % rule["verbs"])
for m in problems:
    print("# " + m)
sys.exit(1 if problems else 0)
