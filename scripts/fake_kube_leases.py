#!/usr/bin/env python3
"""A stand-in for the Kubernetes API's Leases (coordination.k8s.io/v1), for
scripts/bench_failover.sh ELECTION=kubernetes: GET, POST and PUT of the Leases of any
namespace, kept in memory, a PUT taken only with the current resourceVersion (409 otherwise),
as the API server does. Plain HTTP on loopback; no pods, no authentication. Prints the port it
listens on, then serves until killed.

usage: scripts/fake_kube_leases.py
"""
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LEASES = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases(?:/([^/?]+))?$")
state = {"version": 0, "leases": {}}
lock = threading.Lock()


def status(code, reason, message):
    return code, {"kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": message}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_lease(self, method):
        m = LEASES.match(self.path.split("?")[0])
        if not m:
            return self.answer(*status(404, "NotFound", "the server could not find the requested resource"))
        namespace, name = m.group(1), m.group(2)
        length = int(self.headers.get("Content-Length") or 0)
        sent = json.loads(self.rfile.read(length) or b"null") if length else None
        with lock:
            leases = state["leases"]
            if method == "GET" and name:
                key = (namespace, name)
                if key not in leases:
                    return self.answer(*status(404, "NotFound", f'leases "{name}" not found'))
                return self.answer(200, leases[key])
            if method == "POST" and not name:
                name = sent["metadata"]["name"]
                if (namespace, name) in leases:
                    return self.answer(*status(409, "AlreadyExists", f'leases "{name}" already exists'))
                state["version"] += 1
                sent["metadata"]["resourceVersion"] = str(state["version"])
                leases[(namespace, name)] = sent
                return self.answer(201, sent)
            if method == "PUT" and name:
                current = leases.get((namespace, name))
                if current is None or current["metadata"].get("resourceVersion") != sent["metadata"].get("resourceVersion"):
                    return self.answer(*status(409, "Conflict", f'Operation cannot be fulfilled on leases.coordination.k8s.io "{name}": the object has been modified'))
                state["version"] += 1
                sent["metadata"]["resourceVersion"] = str(state["version"])
                leases[(namespace, name)] = sent
                return self.answer(200, sent)
        return self.answer(*status(405, "MethodNotAllowed", "not served by this fake"))

    def do_GET(self):
        self.handle_lease("GET")

    def do_POST(self):
        self.handle_lease("POST")

    def do_PUT(self):
        self.handle_lease("PUT")


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
