#!/usr/bin/env bash
# The sidecar as an OCI image, target/image/email-verdict-oci.tar (oci-archive), built from our
# own build output only: no base image is pulled (no registry is needed, nor a Docker engine).
# `make image` runs this; the layer holds
#
#   /usr/local/bin/email-verdict     target/release/email-verdict as built (the lists are in it)
#   the shared libraries it needs    found with ldd, at the paths ldd names, + the dynamic loader
#   /etc/ssl/certs/ca-certificates.crt, /etc/passwd, /etc/group (nonroot = 65532), /etc/nsswitch.conf
#   /var/lib/email-verdict           the state directory, owned by 65532; /tmp (1777)
#
# and is packaged with Debian's umoci (it builds the OCI layout, unprivileged if need be); the
# archive is that layout in a tar (scripts/oci-archive.sh), read back with skopeo. Reproducible:
# every timestamp is SOURCE_DATE_EPOCH (default: the last commit's time), file modes and owners are
# set explicitly, so the same binary gives the same image digest and the same archive bytes
# (tests/tests/image.rs builds twice and compares).
#
# Environment: EMAIL_VERDICT_BIN (the binary to package), IMAGE_OUT_DIR (default target/image),
# IMAGE_SOURCE (the org.opencontainers.image.source label; default: git remote origin),
# SOURCE_DATE_EPOCH. Prints the archive's size and the image (manifest) digest; writes the digest
# to <out>/email-verdict-oci.digest and keeps the OCI layout in <out>/email-verdict-oci/.
set -euo pipefail
umask 022

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${EMAIL_VERDICT_BIN:-$root/target/release/email-verdict}
out=${IMAGE_OUT_DIR:-$root/target/image}
name=email-verdict-oci

# shellcheck source=scripts/oci-archive.sh
source "$root/scripts/oci-archive.sh"

[[ -x $bin ]] || die "$bin does not exist: build it first (make build)"
need_tools umoci skopeo ldd jq
image_metadata
case $(uname -m) in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  *) arch=$(uname -m) ;;
esac

start_bundle

# The binary byte for byte as tested (not stripped: panics keep their symbol names).
install -D -m 0755 "$bin" "$rootfs/usr/local/bin/email-verdict"
# Each library at the path ldd resolved it to, as a regular file (install follows symlinks), so
# the loader finds it without /etc/ld.so.cache; the loader itself at the path in PT_INTERP.
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
[[ -n $libs ]] || die "ldd found no libraries in $bin (a static binary needs none: adjust this script)"
for lib in $libs; do
  install -D -m 0755 "$lib" "$rootfs$lib"
done
[[ -f /etc/ssl/certs/ca-certificates.crt ]] || die "/etc/ssl/certs/ca-certificates.crt is missing: run scripts/install-deps.sh"
install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
# A named user for tools that look the uid up; no shell exists to log in with.
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$work/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$work/group"
# glibc's own defaults without the file, written out: /etc/hosts (Kubernetes mounts one), then DNS.
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$work/nsswitch.conf"
for f in passwd group nsswitch.conf; do
  install -D -m 0644 "$work/$f" "$rootfs/etc/$f"
done
install -d -m 0755 "$rootfs/var/lib/email-verdict" "$rootfs/home/nonroot"
# Pingora's graceful-upgrade socket and SQLite's temporary files go to $TMPDIR (default /tmp).
install -d -m 1777 "$rootfs/tmp"
# Root everywhere but what the service writes.
repack_rootfs "scripts/image.sh: email-verdict $version + its libraries (ldd)" \
  var/lib/email-verdict home/nonroot

config=(
  --architecture "$arch" --os linux
  --config.user 65532:65532 --config.workingdir /var/lib/email-verdict
  --config.entrypoint /usr/local/bin/email-verdict --config.cmd serve
  --config.env PATH=/usr/local/bin:/usr/bin:/bin
  --config.env EMAIL_VERDICT_LISTEN=0.0.0.0:8080
  --config.env EMAIL_VERDICT_ADMIN_LISTEN=0.0.0.0:8081
  --config.env EMAIL_VERDICT_STATE=sqlite:/var/lib/email-verdict/state.db
  # Not EMAIL_VERDICT_ADMIN_TOKEN: it must come from a Secret at run time (serve refuses a
  # non-loopback admin listener without one).
  --config.exposedports 8080/tcp --config.exposedports 8081/tcp
  --config.volume /var/lib/email-verdict
  --config.stopsignal SIGTERM
  # + the source, version, revision and licenses labels (finish_image).
  --config.label "org.opencontainers.image.title=email-verdict"
  --config.label "org.opencontainers.image.description=Disposable-email verdicts for signups: the sidecar (API + admin)"
  --config.label "org.opencontainers.image.created=$created"
)
finish_image "scripts/image.sh: config" "${config[@]}"

size=$(stat -c %s "$archive")
rootfs_bytes=$(du -sb "$rootfs" | cut -f1)
echo "image: $archive"
echo "  size:   $size bytes ($((size / 1024 / 1024)) MiB); root file system $rootfs_bytes bytes uncompressed"
echo "  digest: $digest"
echo "  push:   skopeo copy oci-archive:$archive docker://REGISTRY/email-verdict:$version"
