#!/usr/bin/env bash
# Sourced by scripts/image.sh and scripts/filter-image.sh (not run on its own).
#
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
