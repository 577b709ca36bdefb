#!/usr/bin/env bash
# Installs the system packages the sandbox uses when they are missing and we may install them:
# bubblewrap (namespaces for the candidate sandbox). Without root or apt it only warns: the
# sandbox then reports the mechanism as missing (SandboxService/Describe) and tests that need it skip.
# Also prometheus, for promtool (tests/deploy check the scrape config and test the alert rules;
# about 15 s and 320 MB here; they skip without it).
set -euo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
# kubectl (>= 1.27, for kustomize components) renders deploy/k8s in tests/deploy. The project's
# machines ship it; Debian's kubernetes-client is far too old to stand in for it.
command -v kubectl >/dev/null 2>&1 || echo "warning: kubectl missing: tests/deploy cannot render deploy/k8s" >&2
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} (apt-get)"
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "warning: ${missing[*]} missing and cannot be installed here; without bubblewrap the sandbox runs without namespaces, without prometheus the promtool tests skip" >&2
fi
