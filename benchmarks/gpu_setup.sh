#!/usr/bin/env bash
# Prepares a bare lent GPU machine (no network) for the project: Python wheels the image lacks
# and bubblewrap, carried in .whl/ (see docs/BENCHMARKS.md for how they are downloaded).
# Source it: `. benchmarks/gpu_setup.sh` (exports PYTHONPATH for the installed wheels).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD
for deb in .whl/*.deb; do dpkg -x "$deb" /tmp/debs; done
export PATH=/tmp/debs/usr/bin:$PATH
export TRITON_DEFAULT_FP_FUSION=1
