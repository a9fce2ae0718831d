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

# shellcheck source=scripts/oci-archive.sh
source "$root/scripts/oci-archive.sh"

[[ -f $wasm ]] || die "$wasm does not exist: build it first (make filter)"
# A module is "\0asm" + version 1; Istio refuses anything else after the pull.
[[ $(head -c 8 "$wasm" | od -An -tx1 | tr -d ' \n') == 0061736d01000000 ]] || die "$wasm is not a Wasm module"
need_tools umoci skopeo jq
image_metadata

start_bundle
install -m 0644 "$wasm" "$rootfs/plugin.wasm"
repack_rootfs "scripts/filter-image.sh: plugin.wasm"
# The platform is fixed (a module runs anywhere): the same bytes whatever machine builds it.
finish_image "scripts/filter-image.sh: config" --architecture amd64 --os linux \
  --manifest.annotation module.wasm.image/variant=compat \
  --manifest.annotation "org.opencontainers.image.source=$source_url" \
  --manifest.annotation "org.opencontainers.image.version=$version" \
  --manifest.annotation org.opencontainers.image.licenses=Apache-2.0 \
  --config.label org.opencontainers.image.title=email-verdict-filter

wasm_sha=$(sha256sum "$wasm" | cut -d' ' -f1)

echo "filter image: $archive ($(stat -c %s "$archive") bytes)"
echo "  image digest:       $digest"
echo "      WasmPlugin / EnvoyExtensionPolicy sha256 for an oci:// URL: the hex after 'sha256:'"
echo "  plugin.wasm sha256: $wasm_sha"
echo "      sha256 for an http(s):// or file:// URL"
echo "  push:   skopeo copy oci-archive:$archive docker://REGISTRY/email-verdict/filter:$version"
