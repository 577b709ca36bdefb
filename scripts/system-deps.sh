#!/usr/bin/env bash
# Installs the system packages the sandbox uses when they are missing and we may install them:
# bubblewrap (namespaces for the candidate sandbox). Without root or apt it only warns: the
# sandbox then reports the mechanism as missing (SandboxService/Describe) and tests that need it skip.
set -euo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} (apt-get)"
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "warning: ${missing[*]} missing and cannot be installed here; the sandbox runs without namespaces" >&2
fi
