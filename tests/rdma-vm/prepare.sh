#!/usr/bin/env bash
# Makes, once per kernel and cached, what the soft-RoCE guest boots: Debian's stock kernel and an initramfs
# with busybox, the modules rxe and 9p need, and guest-init.sh as /init.
#
#   tests/rdma-vm/prepare.sh [--cache DIR]
# Prints "kernel=<path>" and "initrd=<path>" on stdout, progress on stderr. Exits 77 after "SKIP: <reason>"
# on stderr when the guest cannot be made here (a missing tool, the kernel package cannot be downloaded).
# The kernel is only downloaded and unpacked, never installed on the host.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
repo="$(cd "$here/../.." && pwd -P)"
cache="$repo/build/rdma-vm"

while (($#)); do
  case "$1" in
    --cache) cache="$2"; shift 2 ;;
    *) echo "usage: $0 [--cache DIR]" >&2; exit 2 ;;
  esac
done

skip() { echo "SKIP: $*" >&2; exit 77; }
say() { echo "rdma-vm: $*" >&2; }

# What the guest needs, in the order modprobe would load it (it adds each one's dependencies before it).
# crc32_generic is not a declared dependency, but without it rdma_rxe fails with "failed to init crc32".
modules=(virtio_pci 9pnet_virtio 9p overlay crc32_generic ib_core ib_uverbs rdma_rxe rdma_cm rdma_ucm dummy veth)

for tool in apt-get apt-cache dpkg-deb depmod modprobe cpio xz flock sha256sum; do
  command -v "$tool" >/dev/null || skip "$tool not found (scripts/dev.sh installs what the guest needs)"
done
busybox=/bin/busybox
[[ -x $busybox ]] || skip "$busybox not found: install busybox-static (scripts/dev.sh does)"
# The initramfs has no C library: a dynamically linked busybox (Debian's busybox, not busybox-static) cannot run.
if ldd "$busybox" >/dev/null 2>&1; then skip "$busybox is dynamically linked: install busybox-static"; fi

mkdir -p "$cache/kernels"
cache="$(cd "$cache" && pwd -P)"
# One preparation at a time: two test runs starting together would otherwise download and unpack twice.
exec 9>"$cache/.lock"
flock 9
work=""     # scratch trees, removed however this ends
staging=""
trap 'rm -rf "$work" "$staging"' EXIT

kernel_package() {  # the package linux-image-amd64 currently stands for, e.g. linux-image-6.1.0-56-amd64
  apt-cache depends linux-image-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }'
}

apt_update() {  # only root can, and only when the lists are missing or out of date
  [[ $(id -u) -eq 0 ]] || return 1
  say "apt-get update (package lists missing or stale)"
  apt-get update -q >&2
}

download() {  # download <package> <dir>: the .deb only, nothing is installed
  local opts=()
  # Root's apt hands downloads to the _apt user, who cannot write to a private cache: keep them as root.
  [[ $(id -u) -eq 0 ]] && opts=(-o APT::Sandbox::User=root)
  (cd "$2" && apt-get download -q "${opts[@]}" "$1" >&2)
}

unpack_kernel() {  # unpack_kernel <package>: the kernel and the guest's modules into $cache/kernels/<release>
  # Called as a condition, where set -e does not act: every step checks for itself.
  local package="$1" release="${1#linux-image-}"
  work="$(mktemp -d "$cache/.unpack.XXXXXX")" || return 1
  if ! download "$package" "$work"; then
    apt_update || return 1
    download "$package" "$work" || return 1
  fi
  say "unpacking $package"
  dpkg-deb -x "$work"/*.deb "$work/root" || return 1
  # The package has no modules.dep (its postinst makes it): make one in the scratch tree.
  depmod -b "$work/root" "$release" || return 1
  local dest="$cache/kernels/$release"
  rm -rf "$dest" && mkdir -p "$dest/modules" || return 1
  cp "$work/root/boot/vmlinuz-$release" "$dest/vmlinuz" || return 1
  # Decompressing the kernel is the slowest part of booting under emulation (xz, about 8 s here). The ELF
  # vmlinux inside boots directly through its PVH entry point and saves all of it; without one, vmlinuz does.
  local offset
  offset="$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$dest/vmlinuz" | head -1 | cut -d: -f1)"
  # Process substitution, not a pipe: xz stops after the stream and tail's SIGPIPE would fail a pipeline.
  if [[ -n $offset ]] && xz -dc --single-stream < <(tail -c +"$((offset + 1))" "$dest/vmlinuz") >"$dest/vmlinux" &&
    [[ $(head -c 4 "$dest/vmlinux" | od -An -c | tr -d ' ') == '177ELF' ]]; then
    rm "$dest/vmlinuz"
  else
    rm -f "$dest/vmlinux"
  fi
  # -C /dev/null: the host's modprobe.d must not change the guest's module parameters.
  local module verb file params name
  for module in "${modules[@]}"; do
    modprobe -C /dev/null -d "$work/root" -S "$release" --show-depends "$module" || return 1
  done >"$work/insmods" || return 1
  : >"$dest/modules.list"
  while read -r verb file params; do
    [[ $verb == insmod ]] || continue  # "builtin <name>" needs no loading
    name="$(basename "$file")"
    # Already loaded as an earlier one's dependency?
    awk -v name="$name" '$1 == name { found = 1 } END { exit !found }' "$dest/modules.list" && continue
    cp "$file" "$dest/modules/" || return 1
    echo "$name $params" >>"$dest/modules.list"
  done <"$work/insmods"
  rm -rf "$work"
  # Written last: its presence says the kernel is complete.
  echo "$package" >"$dest/package"
  # Older kernels are not used again once a newer one is here: about 75 MB each.
  local old
  for old in "$cache"/kernels/*; do
    if [[ $old != "$dest" ]]; then rm -rf "$old"; fi
  done
}

cached_release() {  # the newest kernel already prepared, for when the archive cannot be reached
  local dir
  dir="$(find "$cache/kernels" -mindepth 2 -maxdepth 2 -name package -printf '%h\n' 2>/dev/null | sort -V | tail -1)"
  [[ -n $dir ]] && basename "$dir"
}

# Empty when apt knows no such package (lists missing) or cannot run: then a cached kernel may still do.
package="$(kernel_package)" || package=""
if [[ -z $package ]] && apt_update; then package="$(kernel_package)" || package=""; fi
release=""
if [[ -n $package && -f $cache/kernels/${package#linux-image-}/package ]]; then
  release="${package#linux-image-}"
elif [[ -n $package ]] && unpack_kernel "$package"; then
  release="${package#linux-image-}"
else
  release="$(cached_release)" ||
    skip "cannot download Debian's kernel (${package:-linux-image-amd64 is not in the package lists})" \
      "and none is cached in $cache"
  say "cannot download ${package:-the kernel}: using the cached $release"
fi
dest="$cache/kernels/$release"

# The initramfs is named by a digest of what goes into it, so editing guest-init.sh or this script remakes it.
digest="$(cat "$here/guest-init.sh" "$here/prepare.sh" "$busybox" "$dest/modules.list" | sha256sum | cut -c1-16)"
initrd="$dest/initramfs-$digest.cpio"
if [[ ! -f $initrd ]]; then
  say "making $initrd"
  staging="$(mktemp -d "$cache/.initramfs.XXXXXX")"
  mkdir -p "$staging/bin" "$staging/lib/modules"
  cp "$busybox" "$staging/bin/busybox"
  cp "$here/guest-init.sh" "$staging/init"
  chmod 755 "$staging/init"
  cp "$dest"/modules/*.ko "$staging/lib/modules/"
  cp "$dest/modules.list" "$staging/modules.list"
  # Uncompressed: QEMU hands it to the kernel in memory, where size costs little and decompressing runs emulated.
  (cd "$staging" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) >"$initrd.tmp"
  rm -f "$dest"/initramfs-*.cpio
  mv "$initrd.tmp" "$initrd"
fi

if [[ -f $dest/vmlinux ]]; then echo "kernel=$dest/vmlinux"; else echo "kernel=$dest/vmlinuz"; fi
echo "initrd=$initrd"
