#!/usr/bin/env bash
# Builds drkernel's two images for one variant, pushes them and pins the overlay to their digests.
#
#   deploy/docker/build-images.sh cpu|cuda REGISTRY [OVERLAY_DIR]
#
# REGISTRY is where to push (registry.example.com/team); OVERLAY_DIR defaults to
# deploy/k8s/overlays/gpu for cuda and deploy/k8s/overlays/cpu for cpu. Needs docker with buildx,
# logged in to REGISTRY. Run it from anywhere; it builds from the repository root.
set -euo pipefail

usage() { echo "usage: $0 cpu|cuda REGISTRY [OVERLAY_DIR]" >&2; exit 2; }
[[ $# -ge 2 && $# -le 3 ]] || usage
variant=$1 registry=${2%/}
root=$(cd "$(dirname "$0")/../.." && pwd)
case $variant in
  cpu)
    overlay=${3:-$root/deploy/k8s/overlays/cpu} suffix=""
    common=(--build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu)
    policy=()
    ;;
  cuda)
    overlay=${3:-$root/deploy/k8s/overlays/gpu} suffix="-cuda"
    common=(--build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu130)
    policy=(--build-arg VLLM_CONSTRAINTS=constraints/vllm-cuda.txt --build-arg VLLM_PACKAGE=vllm --build-arg VLLM_DROP=)
    ;;
  *) usage ;;
esac
[[ -f $overlay/kustomization.yaml ]] || { echo "$0: no kustomization.yaml in $overlay" >&2; exit 2; }
version=$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' "$root/pyproject.toml")
metadata=$(mktemp -d)
trap 'rm -rf "$metadata"' EXIT

# target image-name extra-build-args...
build() {
  local target=$1 name=$2; shift 2
  local tag="$registry/$name:$version$suffix"
  docker buildx build --file "$root/deploy/docker/Dockerfile" --target "$target" "${common[@]}" "$@" \
    --tag "$tag" --push --metadata-file "$metadata/$name.json" "$root"
  local digest
  digest=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["containerimage.digest"])' "$metadata/$name.json")
  python3 "$root/deploy/docker/pin_images.py" "$overlay/kustomization.yaml" "$name" "$registry/$name@$digest"
  echo "pinned $name to $registry/$name@$digest (tag $tag) in $overlay"
}

build drkernel drkernel
build policy drkernel-policy "${policy[@]}"
