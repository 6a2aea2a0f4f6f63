#!/usr/bin/env bash
# The one command that checks everything, on a fresh machine as in CI:
# installs what is missing (cargo-nextest, the moto S3 test server, cmake for librdkafka,
# nats-server for the NATS tests, etcd and redis-server for the coordinators' leader election,
# clang, lld and llvm for the UDF template's build, Chromium for the web UI's browser test), then runs rustfmt, clippy (warnings are errors), every test (unit,
# scenario, end-to-end against golden outputs) and the doctests.
#
#   scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

# A fresh clone gains nothing from incremental compilation, and its caches doubled the target
# directory (about 11 GB instead of about 5.5): CI's disk ran out while linking. Set
# CARGO_INCREMENTAL=1 to keep them when running this repeatedly in one checkout.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

if ! command -v cargo >/dev/null 2>&1; then
  echo "scripts/test.sh: cargo is missing: install Rust with rustup (https://rustup.rs), then run this again" >&2
  exit 1
fi
if command -v rustup >/dev/null 2>&1; then
  for c in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c"
  done
fi
if ! cargo nextest --version >/dev/null 2>&1; then
  step "installing cargo-nextest"
  cargo install cargo-nextest --locked
fi
# The S3-compatible server that the tests of checkpoints in an object store start on
# loopback: moto, from PyPI. Those tests fail (never skip) without it. A Python whose
# packages the OS manages (Debian's) refuses a plain pip install: then it is installed with
# --break-system-packages. ANDUIN_TEST_PYTHON picks another Python (the tests use it too).
python="${ANDUIN_TEST_PYTHON:-python3}"
if ! command -v "$python" >/dev/null 2>&1; then
  echo "scripts/test.sh: $python is missing: install Python 3 with pip (the S3 tests run moto on it), then run this again" >&2
  exit 1
fi
# The Kubernetes manifests of deploy/kubernetes/ are validated against Kubernetes' schemas
# by kubernetes-validate, from PyPI (its schemas ship with it: no cluster, no network).
if ! "$python" -c 'import kubernetes_validate' >/dev/null 2>&1; then
  step "installing kubernetes-validate (checks deploy/kubernetes/) with pip"
  "$python" -m pip install --quiet kubernetes-validate \
    || "$python" -m pip install --quiet --break-system-packages kubernetes-validate
  "$python" -c 'import kubernetes_validate'
fi
if ! "$python" -c 'import moto.server' >/dev/null 2>&1; then
  step "installing moto[server] (the S3-compatible test server) with pip"
  "$python" -m pip install --quiet 'moto[server]' \
    || "$python" -m pip install --quiet --break-system-packages 'moto[server]'
  "$python" -c 'import moto.server'
fi
# The cluster's two-hosts test makes network namespaces with `ip` (Debian's iproute2), as
# root.
if ! command -v ip >/dev/null 2>&1; then
  step "installing iproute2 (the two-hosts test's network namespaces)"
  apt-get install -y iproute2 || { apt-get update && apt-get install -y iproute2; }
fi

# The Kafka connector's librdkafka is built from the C sources the rdkafka crate ships, with
# CMake (Debian's cmake; the C build adds about 25 s to a cold debug build on 2 cores).
if ! command -v cmake >/dev/null 2>&1; then
  step "installing cmake (builds librdkafka for the Kafka connector)"
  as_root=""
  if [ "$(id -u)" -ne 0 ]; then as_root="sudo"; fi
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -q cmake >/dev/null \
    || { $as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -q cmake >/dev/null; }
fi

# `anduin udf new`'s test builds its template with Debian's clang, wasm-ld (lld) and
# llvm-objcopy (llvm), as its users do.
if ! command -v clang >/dev/null 2>&1 || ! command -v wasm-ld >/dev/null 2>&1 \
  || ! command -v llvm-objcopy >/dev/null 2>&1; then
  step "installing clang, lld and llvm (the WebAssembly UDF template's build)"
  as_root=""
  if [ "$(id -u)" -ne 0 ]; then as_root="sudo"; fi
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -q clang lld llvm >/dev/null \
    || { $as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -q clang lld llvm >/dev/null; }
fi

# The NATS connector's tests start Debian's nats-server (2.9, with JetStream) on loopback.
# Debian installs it as /usr/sbin/nats-server (its systemd unit is not needed).
if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/sbin/nats-server ]; then
  step "installing nats-server (the NATS connector's tests)"
  as_root=""
  if [ "$(id -u)" -ne 0 ]; then as_root="sudo"; fi
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -q nats-server >/dev/null \
    || { $as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -q nats-server >/dev/null; }
fi

# The leader election's tests start Debian's etcd (package etcd-server, 3.4) on loopback.
if [ -z "${ANDUIN_ETCD:-}" ] && ! command -v etcd >/dev/null 2>&1; then
  step "installing etcd-server (the coordinators' leader election tests)"
  as_root=""
  if [ "$(id -u)" -ne 0 ]; then as_root="sudo"; fi
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -q etcd-server >/dev/null \
    || { $as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -q etcd-server >/dev/null; }
fi
# ... and Redis servers for Redlock (the tests start their own; the package's service is not
# needed).
if ! command -v redis-server >/dev/null 2>&1; then
  step "installing redis-server (the coordinators' Redlock election tests)"
  as_root=""
  if [ "$(id -u)" -ne 0 ]; then as_root="sudo"; fi
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -q redis-server >/dev/null \
    || { $as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -q redis-server >/dev/null; }
fi

if [ -z "${ANDUIN_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  # The web UI's browser test drives Debian's headless Chromium (no browser download).
  step "installing chromium (for the web UI's browser test)"
  if command -v apt-get >/dev/null 2>&1; then
    as_root=""
    if [ "$(id -u)" -ne 0 ]; then as_root="sudo"; fi
    $as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -q chromium >/dev/null
  else
    echo "scripts/test.sh: chromium is missing and there is no apt-get: install Chromium, or set ANDUIN_CHROMIUM to its binary, then run this again" >&2
    exit 1
  fi
fi
step "deploy/kubernetes: schemas (kubernetes-validate) and what anduin relies on"
"$python" -m kubernetes_validate --strict --quiet deploy/kubernetes/namespace.yaml \
  deploy/kubernetes/rbac.yaml deploy/kubernetes/secret.yaml deploy/kubernetes/coordinator.yaml \
  deploy/kubernetes/worker-pod.json
"$python" scripts/check_kubernetes_manifests.py deploy/kubernetes
"$python" scripts/check_kubernetes_manifests.py deploy/kubernetes/ha

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo nextest run (every test)"
cargo nextest run --workspace --locked

step "cargo test --doc"
cargo test --workspace --doc --locked

step "all checks passed"
