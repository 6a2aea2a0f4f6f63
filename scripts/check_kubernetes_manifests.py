#!/usr/bin/env python3
"""Checks deploy/kubernetes/ beyond its schemas (scripts/test.sh validates those with
kubernetes-validate): what anduin's coordinator and its scheduler rely on.

  python3 scripts/check_kubernetes_manifests.py [DIR]

DIR may be an overlay (deploy/kubernetes/ha): a kustomization whose resources are its parent
and whose patches are JSON patches or strategic-merge deletions (`$patch: delete`), applied
here as kustomize would.
"""
import json
import pathlib
import sys

import yaml

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "deploy/kubernetes")
failures = []


def load(directory):
    """The resources of `directory`'s YAML files, and its kustomization."""
    docs, kustomization = {}, None
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "Kustomization":
                kustomization = doc
            elif doc:
                docs[(doc["kind"], doc["metadata"]["name"])] = doc
    return docs, kustomization


def apply(doc, ops):
    """JSON patch operations (add, replace) on `doc`."""
    for op in ops:
        *parents, last = [p for p in op["path"].split("/")[1:]]
        at = doc
        for p in parents:
            at = at[int(p)] if isinstance(at, list) else at[p]
        if isinstance(at, list):
            if op["op"] == "add" and last == "-":
                at.append(op["value"])
            else:
                at[int(last)] = op["value"]
        else:
            at[last] = op["value"]


docs, kustomization = load(root)
overlay = bool(kustomization) and kustomization.get("resources") == ["../"]
if overlay:
    docs, _ = load(root.parent)
    for patch in kustomization.get("patches", []):
        body = yaml.safe_load(patch["patch"])
        if isinstance(body, dict) and body.get("$patch") == "delete":
            del docs[(body["kind"], body["metadata"]["name"])]
            continue
        target = patch["target"]
        apply(docs[(target["kind"], target["name"])], body)


def check(ok, what):
    if not ok:
        failures.append(what)


def flag(args, name):
    return args[args.index(name) + 1] if name in args else None


deployment = docs[("Deployment", "anduin-coordinator")]
service = docs[("Service", "anduin-coordinator")]
role = docs[("Role", "anduin-coordinator")]
binding = docs[("RoleBinding", "anduin-coordinator")]
account = docs[("ServiceAccount", "anduin-coordinator")]
secret = docs[("Secret", "anduin")]
namespace = account["metadata"]["namespace"]

for (kind, name), doc in docs.items():
    if kind != "Namespace":
        check(doc["metadata"].get("namespace") == namespace, f"{kind} {name} is not in namespace {namespace}")

spec = deployment["spec"]
pod = spec["template"]
labels = pod["metadata"]["labels"]
for k, v in spec["selector"]["matchLabels"].items():
    check(labels.get(k) == v, f"the Deployment's selector {k}={v} does not match its pods' labels")
for k, v in service["spec"]["selector"].items():
    check(labels.get(k) == v, f"the Service's selector {k}={v} does not match the coordinator's labels")
args = pod["spec"]["containers"][0]["command"]
volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
if spec["replicas"] == 1:
    check(spec.get("strategy", {}).get("type") == "Recreate", "one coordinator's Deployment must be Recreate (one catalog, one writer)")
    claim = volumes.get("state", {}).get("persistentVolumeClaim", {}).get("claimName")
    check(("PersistentVolumeClaim", claim) in docs, "one coordinator keeps its catalog on a claim of its own")
else:
    election = flag(args, "--leader-election") or ""
    check(election.startswith(("etcd://", "redlock://", "kubernetes://")),
          "several coordinator replicas without --leader-election etcd://, redlock:// or kubernetes:// (a lock file elects on one machine only)")
    # Elected by a lease with an object store, they keep the catalog in it: no volume shared.
    check("emptyDir" in volumes.get("state", {}),
          "several coordinator replicas keep their catalog in the checkpoint store: each its own state directory (an emptyDir)")
    check(not any(kind == "PersistentVolumeClaim" for kind, _ in docs),
          "several coordinator replicas share no volume: the base's claim must go")

check(pod["spec"].get("serviceAccountName") == account["metadata"]["name"], "the coordinator does not run as its service account")
check(binding["roleRef"]["name"] == role["metadata"]["name"], "the RoleBinding does not bind the Role")
check(any(s["kind"] == "ServiceAccount" and s["name"] == account["metadata"]["name"] and s.get("namespace") == namespace
          for s in binding["subjects"]), "the RoleBinding does not bind the coordinator's service account")
rules = role["rules"]
check(rules[0]["apiGroups"] == [""] and rules[0]["resources"] == ["pods"],
      "the Role's first rule must grant pods")
check(sorted(rules[0]["verbs"]) == ["create", "delete", "get", "list", "watch"],
      "the Role must grant exactly create, delete, get, list, watch on pods")
# An election by a Lease needs exactly get, create and update on leases; nothing else does.
by_lease = (flag(pod["spec"]["containers"][0]["command"], "--leader-election") or "").startswith("kubernetes://")
lease_rules = [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}]
check(rules[1:] == (lease_rules if by_lease else []),
      "the Role must grant get, create, update on leases (coordination.k8s.io) with --leader-election kubernetes://, and nothing else")

container = pod["spec"]["containers"][0]
args = container["command"]
check(args[:2] == ["anduin", "coordinator"], "the coordinator's container does not run `anduin coordinator`")
check(flag(args, "--scheduler") == "kubernetes", "the coordinator does not use --scheduler kubernetes")
check(flag(args, "--kube-worker-image") == container["image"], "the workers' image is not the coordinator's")
check(flag(args, "--kube-worker-secret") == secret["metadata"]["name"], "--kube-worker-secret does not name the Secret")
check(any(e.get("secretRef", {}).get("name") == secret["metadata"]["name"] for e in container.get("envFrom", [])),
      "the coordinator does not take its environment from the Secret")
check((flag(args, "--checkpoint-store") or "").startswith("s3://"), "the checkpoint store is not on S3")
host, port = flag(args, "--kube-coordinator-address").rsplit(":", 1)
check(host == service["metadata"]["name"], "--kube-coordinator-address is not the Service")
check(any(p["port"] == int(port) for p in service["spec"]["ports"]), "the Service does not expose the coordinator's port")
check(flag(args, "--listen").endswith(":" + port), "the coordinator does not listen on the Service's port")
for key in ["ANDUIN_CLUSTER_SECRET", "ANDUIN_API_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"]:
    check(key in secret.get("stringData", {}), f"the Secret lacks {key}")

# The pod the scheduler creates (written by its unit test, the same bytes).
worker = json.loads(((root.parent if overlay else root) / "worker-pod.json").read_text())
wlabels = worker["metadata"]["labels"]
check(wlabels.get("app.kubernetes.io/managed-by") == "anduin" and "anduin.io/coordinator" in wlabels
      and wlabels.get("anduin.io/worker") == worker["metadata"]["name"], "the worker pod's labels")
check(worker["spec"]["containers"][0]["command"][:2] == ["anduin", "worker"], "the worker pod does not run `anduin worker`")

if failures:
    for f in failures:
        print(f"{root}: {f}", file=sys.stderr)
    sys.exit(1)
print(f"{root}: {len(docs)} resources and the worker pod checked")
