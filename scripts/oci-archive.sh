#!/usr/bin/env bash
# Sourced by scripts/image.sh and scripts/filter-image.sh (not run on its own): the steps both
# images take, so that both are built and kept reproducible the same way. The caller sets root
# (the repository), out (the output directory) and name (the image's file name); the functions
# set the globals their comments name, which the caller reads.
# shellcheck disable=SC2154 # root, out and name come from the caller

die() {
  echo "error: $*" >&2
  exit 1
}

# need_tools TOOL...: dies unless each TOOL is on PATH.
need_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is missing: run scripts/install-deps.sh"
  done
}

# image_metadata: sets version ([workspace.package] in Cargo.toml), epoch (SOURCE_DATE_EPOCH,
# default the last commit's time: every timestamp in the image, hence reproducible), created
# (epoch as RFC 3339) and source_url (IMAGE_SOURCE, default git remote origin; a placeholder
# when that is no http(s) address).
image_metadata() {
  version=$(sed -n '/^\[workspace\.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$root/Cargo.toml")
  [[ -n $version ]] || die "no [workspace.package] version in Cargo.toml"
  epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}
  created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
  source_url=${IMAGE_SOURCE:-$(git -C "$root" remote get-url origin 2>/dev/null || true)}
  if [[ ! $source_url =~ ^https?:// ]]; then
    # No web address for this checkout (no remote, or a local path or ssh one): a placeholder
    # rather than a label pointing nowhere; set IMAGE_SOURCE to fix it.
    source_url=https://git.example.com/email-verdict
    echo "$name: no http(s) git remote; org.opencontainers.image.source=$source_url (set IMAGE_SOURCE)" >&2
  fi
}

# start_bundle: an empty image (layout $work/$name, tagged $version) unpacked to a bundle: the
# caller fills $rootfs and repack_rootfs turns the difference into the one layer (paths relative
# to the root, as every runtime expects). Sets work (removed on exit), layout, image, rootfs and
# rootless (umoci's --rootless when not root: it cannot chown then).
start_bundle() {
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
}

# repack_rootfs CREATED_BY [DIR...]: $rootfs as the image's layer, every time $epoch, owned by
# root but the DIRs (relative to the root), owned by 65532 (the sidecar's nonroot user). As root,
# real owners; otherwise umoci's rootless mode reads the owner from the user.rootlesscontainers
# xattr (a protobuf message: field 1 uid, field 2 gid; 65532 = varint fc ff 03).
repack_rootfs() {
  local created_by=$1 d
  shift
  if ((${#rootless[@]} == 0)); then
    chown -R 0:0 "$rootfs"
    for d in "$@"; do chown 65532:65532 "$rootfs/$d"; done
  else
    for d in "$@"; do
      setfattr -n user.rootlesscontainers -v 0x08fcff0310fcff03 "$rootfs/$d" ||
        die "cannot set the user.rootlesscontainers xattr under $out: run as root, or on a file system with user xattrs"
    done
  fi
  chmod 0755 "$rootfs"
  find "$rootfs" -exec touch -h -d "@$epoch" {} +
  umoci repack --image "$image" --history.created "$created" --history.created_by "$created_by" "$work/bundle"
}

# finish_image CREATED_BY [CONFIG_ARG...]: `umoci config` with the CONFIG_ARGs and the labels
# both images carry, then writes $out/$name.tar (write_oci_archive) and $out/$name.digest, and
# keeps the layout as $out/$name/ for tools that take a directory (`umoci unpack`, `skopeo copy
# oci:...`). Sets archive and digest.
finish_image() {
  local created_by=$1
  shift
  umoci config --image "$image" --created "$created" --history.created "$created" \
    --history.created_by "$created_by" "$@" \
    --config.label "org.opencontainers.image.source=$source_url" \
    --config.label "org.opencontainers.image.version=$version" \
    --config.label "org.opencontainers.image.revision=$(git -C "$root" rev-parse HEAD)" \
    --config.label org.opencontainers.image.licenses=Apache-2.0
  # Drop the unreferenced blobs the steps above left behind (they would only bloat the archive).
  umoci gc --layout "$layout"
  archive=$out/$name.tar
  digest=$(write_oci_archive "$layout" "$archive" "$epoch")
  echo "$digest" >"$out/$name.digest"
  rm -rf "${out:?}/$name"
  mv "$layout" "$out/$name"
}

# write_oci_archive LAYOUT ARCHIVE EPOCH: writes the OCI layout LAYOUT as an oci-archive (a tar of
# the layout: what `skopeo copy oci-archive:...` reads) with fixed names, order, owners, modes and
# times. skopeo's own oci-archive writer stamps the time of the copy on every tar header, so two
# builds of the same image would differ in the archive although not in the image digest.
# Then checks that skopeo reads it back and sees the manifest the layout names, and prints that
# manifest's digest.
write_oci_archive() {
  local layout=$1 archive=$2 epoch=$3 tmp want got
  tmp=$archive.tmp
  tar --create --file "$tmp" --directory "$layout" --sort=name --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --mode=u+rw,go=rX \
    oci-layout index.json blobs
  touch -d "@$epoch" "$tmp"
  mv "$tmp" "$archive"
  want=$(jq -r '.manifests | if length == 1 then .[0].digest else error("not one manifest") end' "$layout/index.json")
  got=sha256:$(skopeo inspect --raw "oci-archive:$archive" | sha256sum | cut -d' ' -f1)
  if [[ $got != "$want" ]]; then
    echo "error: skopeo reads $got from $archive, the layout names $want" >&2
    return 1
  fi
  echo "$got"
}
