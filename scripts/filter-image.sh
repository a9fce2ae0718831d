#!/usr/bin/env bash
# The filter (target/email_verdict_filter.wasm, `make filter`) as an OCI image that Istio's
# WasmPlugin (`url: oci://...`) and Envoy Gateway's EnvoyExtensionPolicy (`type: Image`) both
# pull: target/image/email-verdict-filter-oci.tar (oci-archive). `make filter-image` runs this.
#
# Format: the "compat" variant of the Wasm image spec (github.com/solo-io/wasm, spec-compat.md):
# one application/vnd.oci.image.layer.v1.tar+gzip layer holding /plugin.wasm, with the manifest
# annotation module.wasm.image/variant=compat. Both fetchers (istio pkg/wasm/imagefetcher.go,
# envoyproxy/gateway internal/wasm/imagefetcher.go: the same code) take the last layer of that
# media type and read the file named plugin.wasm from it; Envoy Gateway's "Build a Wasm image"
# task documents exactly this (one layer with plugin.wasm, built with buildah from scratch).
# Not the "oci" artifact variant: both fetchers demand exactly two layers for it (Wasm +
# runtime config) and it needs a registry that stores custom media types; and not the newer
# CNCF Wasm artifact (application/wasm layer): neither fetcher reads it.
#
# What WasmPlugin's (and EnvoyExtensionPolicy image's) sha256 field wants for an oci:// URL is
# the IMAGE (manifest) digest, not the .wasm's: both compare it with the manifest digest before
# pulling the layer (istio pkg/wasm/cache.go; http/file URLs are checked against the binary's
# sha256). This prints both.
#
# Reproducible like scripts/image.sh (SOURCE_DATE_EPOCH, default the last commit's time).
# Environment: EMAIL_VERDICT_FILTER_WASM (the module), IMAGE_OUT_DIR (default target/image),
# IMAGE_SOURCE, SOURCE_DATE_EPOCH.
set -euo pipefail
umask 022

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
wasm=${EMAIL_VERDICT_FILTER_WASM:-$root/target/email_verdict_filter.wasm}
out=${IMAGE_OUT_DIR:-$root/target/image}
name=email-verdict-filter-oci

die() {
  echo "error: $*" >&2
  exit 1
}
[[ -f $wasm ]] || die "$wasm does not exist: build it first (make filter)"
# A module is "\0asm" + version 1; Istio refuses anything else after the pull.
[[ $(head -c 8 "$wasm" | od -An -tx1 | tr -d ' \n') == 0061736d01000000 ]] || die "$wasm is not a Wasm module"
for tool in umoci skopeo jq; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing: run scripts/install-deps.sh"
done

version=$(sed -n '/^\[workspace\.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$root/Cargo.toml")
[[ -n $version ]] || die "no [workspace.package] version in Cargo.toml"
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
source_url=${IMAGE_SOURCE:-$(git -C "$root" remote get-url origin 2>/dev/null || true)}
[[ -n $source_url ]] || source_url=https://git.example.com/email-verdict

# shellcheck source=scripts/oci-archive.sh
source "$root/scripts/oci-archive.sh"

mkdir -p "$out"
work=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
layout=$work/$name
image=$layout:$version
umoci init --layout "$layout"
umoci new --image "$image"
rootless=()
if [[ $(id -u) -ne 0 ]]; then rootless=(--rootless); fi
umoci unpack "${rootless[@]}" --image "$image" "$work/bundle"
rootfs=$work/bundle/rootfs
install -m 0644 "$wasm" "$rootfs/plugin.wasm"
if ((${#rootless[@]} == 0)); then chown -R 0:0 "$rootfs"; fi
chmod 0755 "$rootfs"
find "$rootfs" -exec touch -h -d "@$epoch" {} +
umoci repack --image "$image" --history.created "$created" \
  --history.created_by "scripts/filter-image.sh: plugin.wasm" "$work/bundle"
# The platform is fixed (a module runs anywhere): the same bytes whatever machine builds it.
umoci config --image "$image" --created "$created" --history.created "$created" \
  --history.created_by "scripts/filter-image.sh: config" --architecture amd64 --os linux \
  --manifest.annotation module.wasm.image/variant=compat \
  --manifest.annotation "org.opencontainers.image.source=$source_url" \
  --manifest.annotation "org.opencontainers.image.version=$version" \
  --manifest.annotation org.opencontainers.image.licenses=Apache-2.0 \
  --config.label org.opencontainers.image.title=email-verdict-filter \
  --config.label "org.opencontainers.image.source=$source_url" \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.revision=$(git -C "$root" rev-parse HEAD)" \
  --config.label org.opencontainers.image.licenses=Apache-2.0
umoci gc --layout "$layout"

archive=$out/$name.tar
digest=$(write_oci_archive "$layout" "$archive" "$epoch")
echo "$digest" >"$out/$name.digest"
rm -rf "${out:?}/$name"
mv "$layout" "$out/$name"
wasm_sha=$(sha256sum "$wasm" | cut -d' ' -f1)

echo "filter image: $archive ($(stat -c %s "$archive") bytes)"
echo "  image digest:       $digest"
echo "      WasmPlugin / EnvoyExtensionPolicy sha256 for an oci:// URL: the hex after 'sha256:'"
echo "  plugin.wasm sha256: $wasm_sha"
echo "      sha256 for an http(s):// or file:// URL"
echo "  push:   skopeo copy oci-archive:$archive docker://REGISTRY/email-verdict/filter:$version"
