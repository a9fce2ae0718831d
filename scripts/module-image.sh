#!/usr/bin/env bash
# The dynamic module (target/libemail_verdict_filter.so, `make module`) as an OCI image for the
# proxies that load it from a file: target/image/email-verdict-module-oci.tar (oci-archive).
# `make module-image` runs this. One layer holding /libemail_verdict_filter.so, nothing else (no
# shell, no entry point): mounted as a Kubernetes image volume into istio-proxy
# (envoy/istio/app-proxy-module.yaml) or Envoy Gateway's Envoy pods (envoy/gateway/module.yaml),
# or unpacked wherever the proxy reads files.
#
# The module is native x86-64 code for Linux: the image is linux/amd64 (this script refuses any
# other module). It must match the proxy's Envoy: the labels say which (scripts/module-version.sh),
# so `skopeo inspect` shows it before anything runs:
#   io.email-verdict.envoy-version    the Envoy release the module is built for (1.40.0)
#   io.email-verdict.envoy-abi        the dynamic-module ABI version it hands Envoy (v0.2.0)
#   io.email-verdict.envoy-loads-in   the Envoy minor releases that load it (1.40 1.41)
#
# Reproducible like scripts/image.sh and scripts/filter-image.sh (SOURCE_DATE_EPOCH, default the
# last commit's time; no Docker engine, Debian's umoci and skopeo). Environment:
# EMAIL_VERDICT_FILTER_MODULE (the module), IMAGE_OUT_DIR (default target/image), IMAGE_SOURCE,
# SOURCE_DATE_EPOCH. Prints the archive, the image digest and the push command.
set -euo pipefail
umask 022

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
module=${EMAIL_VERDICT_FILTER_MODULE:-$root/target/libemail_verdict_filter.so}
out=${IMAGE_OUT_DIR:-$root/target/image}
name=email-verdict-module-oci
file=libemail_verdict_filter.so

# shellcheck source=scripts/oci-archive.sh
source "$root/scripts/oci-archive.sh"

[[ -f $module ]] || die "$module does not exist: build it first (make module)"
# ELF (7f 45 4c 46), 64-bit (02), little-endian (01), e_machine 0x3e (x86-64).
[[ $(head -c 6 "$module" | od -An -tx1 | tr -d ' \n') == 7f454c460201 ]] || die "$module is not a 64-bit little-endian ELF file"
[[ $(od -An -tx1 -j 18 -N 2 "$module" | tr -d ' \n') == 3e00 ]] || die "$module is not x86-64 code: this image is linux/amd64"
need_tools umoci skopeo jq
image_metadata
read -r _ envoy_version < <("$root/scripts/module-version.sh" | grep '^envoy ')
read -r _ abi_version < <("$root/scripts/module-version.sh" | grep '^abi ')
read -r _ loads_in < <("$root/scripts/module-version.sh" | grep '^loads-in ')

start_bundle
install -m 0755 "$module" "$rootfs/$file"
repack_rootfs "scripts/module-image.sh: $file"
finish_image "scripts/module-image.sh: config" --architecture amd64 --os linux \
  --manifest.annotation "org.opencontainers.image.source=$source_url" \
  --manifest.annotation "org.opencontainers.image.version=$version" \
  --manifest.annotation org.opencontainers.image.licenses=Apache-2.0 \
  --config.label org.opencontainers.image.title=email-verdict-module \
  --config.label "org.opencontainers.image.description=The email-verdict filter as an Envoy dynamic module (/$file), for Envoy $loads_in" \
  --config.label "io.email-verdict.envoy-version=$envoy_version" \
  --config.label "io.email-verdict.envoy-abi=$abi_version" \
  --config.label "io.email-verdict.envoy-loads-in=$loads_in"

echo "module image: $archive ($(stat -c %s "$archive") bytes)"
echo "  image digest:  $digest"
echo "  $file sha256: $(sha256sum "$module" | cut -d' ' -f1)"
echo "  for Envoy $envoy_version (dynamic-module ABI $abi_version; loads in Envoy ${loads_in// / and })"
echo "  push:   skopeo copy oci-archive:$archive docker://REGISTRY/email-verdict/module:$version"
