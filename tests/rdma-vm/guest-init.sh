#!/bin/busybox sh
# /init of the soft-RoCE guest: builds a root from the host's (read-only, tmpfs overlay), sets up rxe0 on a
# dummy netdev, runs the command that run-in-guest.sh left in the run share, reports its exit code, powers off.
#
# Runs as PID 1 from the initramfs that prepare.sh makes, under busybox's sh. It stays in the initramfs and
# runs the command through chroot, so whatever the command does, this script is still there to power off.
# Protocol with the host, all files in the run share (mounted at /run/daqx-vm in the guest root):
#   guest.env   written by the host: DAQX_VM_ADDRESS (CIDR of dummy0)
#   shares      written by the host: "<9p tag> <absolute path>" per line, mounted read-write in that order
#   command.sh  written by the host: bash script that sets the environment and directory, then runs the command
#   started     written here just before the command runs (its absence tells the host the guest failed)
#   setup-failed  written here with the reason when the guest could not be made ready
#   exit-code   written here with the command's exit code
# shellcheck shell=dash # busybox's ash, checked as its nearest kin
set -u
/bin/busybox --install -s /bin
export PATH=/bin

run=/run-share   # the run share while we are still in the initramfs
run_mounted=0    # whether a reason for failing can be left for the host yet
root=/newroot    # the guest's root: host root read-only with a tmpfs overlay

power_off() {
  sync
  poweroff -f
  # Only reached if ACPI power-off did not work: with QEMU's -no-reboot a reboot ends QEMU as well.
  reboot -f
}

fail() {  # fail <reason>: tell the host why the guest is not usable, then stop
  echo "rdma-vm guest: $*" >&2
  if [ "$run_mounted" = 1 ]; then echo "$*" >"$run/setup-failed"; fi
  power_off
}

mkdir -p /proc /sys /dev "$run"
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

# A line of its own: the firmware may have left its last one unfinished.
echo

# Kernel messages would interleave with the command's output on the one console: keep only emergencies.
dmesg -n 1

# modules.list comes from modprobe --show-depends at prepare time: dependency order, one "file [params]" a line.
while read -r module params; do
  # shellcheck disable=SC2086 # module parameters are separate words
  insmod "/lib/modules/$module" $params || fail "insmod $module failed"
done </modules.list

# Large 9p messages: fewer trips through the emulated device when programs and libraries are read.
p9="trans=virtio,version=9p2000.L,msize=512000"
mount -t 9p -o "$p9,cache=mmap" daqxrun "$run" || fail "cannot mount the run share"
run_mounted=1
# shellcheck disable=SC1091 # written by run-in-guest.sh
. "$run/guest.env" || fail "no guest.env in the run share"

# The host's root, read-only; cache=loose because nothing on it changes while the guest runs.
mkdir -p /lower /upper "$root"
mount -t 9p -o "$p9,ro,cache=loose" hostroot /lower || fail "cannot mount the host root over 9p"
mount -t tmpfs -o mode=755 tmpfs /upper
mkdir -p /upper/data /upper/work
mount -t overlay -o lowerdir=/lower,upperdir=/upper/data,workdir=/upper/work overlay "$root" ||
  fail "cannot mount the overlay over the host root"

# The guest's own kernel file systems hide the host's /proc, /sys and /dev that 9p would show.
mount --move /proc "$root/proc"
mount --move /sys "$root/sys"
mount --move /dev "$root/dev"
mkdir -p "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"
mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
# Fresh /tmp and /run: the host's would show through read-only and other builds' files with them.
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
mount -t tmpfs -o mode=755 tmpfs "$root/run"
mkdir -p "$root/run/daqx-vm"
mount --bind "$run" "$root/run/daqx-vm"
run="$root/run/daqx-vm"

# The project's trees, read-write, at the same absolute paths as on the host so built programs run unchanged.
while read -r tag path; do
  [ -n "$tag" ] || continue
  mkdir -p "$root$path" || fail "cannot make the mount point $path"
  mount -t 9p -o "$p9,cache=mmap" "$tag" "$root$path" || fail "cannot mount the share $path"
done <"$run/shares"

# A name that resolves, to the address the tests use, for programs that look their own host up.
hostname rdma-vm
echo "${DAQX_VM_ADDRESS%/*} rdma-vm" >>"$root/etc/hosts"
in_root() { chroot "$root" "$@"; }
in_root ip link set lo up || fail "cannot bring lo up"
# rxe sits on a dummy netdev with an address: on lo plain verbs work but rdma_cm cannot resolve a route.
# The dummy module makes dummy0 itself unless told numdummies=0; make it only if it is not there.
in_root ip link show dummy0 >/dev/null 2>&1 || in_root ip link add dummy0 type dummy || fail "cannot create dummy0"
in_root ip addr add "$DAQX_VM_ADDRESS" dev dummy0 || fail "cannot give dummy0 $DAQX_VM_ADDRESS"
# Jumbo frames, as a RoCE fabric is set up: rxe then runs at an active MTU of 4096 instead of 1024, a quarter of
# the packets per message (the 2x2 event builder over ptibv: 35 s at 1500, 24 s at 9000 in one boot).
in_root ip link set dummy0 mtu 9000 || fail "cannot give dummy0 an MTU of 9000"
in_root ip link set dummy0 up || fail "cannot bring dummy0 up"
in_root rdma link add rxe0 type rxe netdev dummy0 || fail "rdma link add rxe0 failed"

# Memory registration pins pages: without this, registering more than 8 MiB fails.
# shellcheck disable=SC3045 # busybox's sh has ulimit -l
ulimit -l unlimited

echo "rdma-vm guest: rxe0 on dummy0 ($DAQX_VM_ADDRESS) is up; running the command"
: >"$run/started"
sync
# A clean environment; command.sh adds what the host asked for. stdin is /dev/null: nobody types here.
in_root /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  TERM=dumb LANG=C.UTF-8 /bin/bash /run/daqx-vm/command.sh </dev/null
echo "$?" >"$run/exit-code"
power_off
