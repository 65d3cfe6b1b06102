#!/usr/bin/env bash
# Validates the Kubernetes manifests (deploy/k8s/*.yaml) against the Kubernetes API's JSON
# schemas, strictly (no unknown field), offline: `kubernetes-validate` from PyPI bundles
# the schemas. Installs it (pip --user) where missing. Exit 0 when every resource passes.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v kubernetes-validate >/dev/null 2>&1; then
    python3 -m pip install --quiet --user kubernetes-validate >/dev/null 2>&1 \
        || python3 -m pip install --quiet --break-system-packages --user kubernetes-validate
    export PATH="$HOME/.local/bin:$PATH"
fi
kubernetes-validate --strict --quiet ./*.yaml
echo "deploy/k8s: every resource of $(ls ./*.yaml | tr '\n' ' ')passes kubernetes-validate --strict"
