#!/bin/sh
# vmtest/kernels.sh: fetch one of Debian's kernels and build what qemu boots.
#
# Usage: BUILD=build vmtest/kernels.sh LABEL...     LABEL: 5.10 | 6.1 | 6.12
#
# Prints, per label, one line "LABEL DIR" where DIR holds vmlinuz,
# initramfs.gz and release (the kernel's uname -r). Exit 1 with one
# "error: ..." line on stderr when a kernel cannot be had.
#
# Which package: the one a Debian metapackage depends on today
#   5.10 -> linux-image-amd64      (bullseye: linux-image-5.10.0-NN-amd64; no
#                                   bpf_loop: the tail-call unwinder runs)
#   6.1  -> linux-image-amd64      (bookworm: linux-image-6.1.0-NN-amd64)
#   6.12 -> linux-image-6.12-amd64 (linux-image-6.12.NN+deb12-amd64)
# or a pinned name: VMTEST_PKG_6_1=linux-image-6.1.0-56-amd64 (VMTEST_PKG_5_10,
# VMTEST_PKG_6_12). Bullseye's packages come through an apt configuration of
# their own under $BUILD/vmtest/apt-bullseye (the host's apt is not touched).
#
# Everything is cached under $BUILD/vmtest/ (never committed):
#   debs/PKG_*.deb               apt-get download
#   kernels/PKG/root/            dpkg-deb -x, plus modules.dep from depmod
#   kernels/PKG/vmlinuz          the kernel
#   kernels/PKG/initramfs.gz     busybox-static, vmtest/init as /init, and the
#                                modules a 9p root needs (virtio PCI,
#                                9pnet_virtio, 9p) and those of the disk image
#                                case (vmtest/image.sh: virtio_blk, ext4 with
#                                the crc32c its checksums ask the crypto API
#                                for by name, overlay), with what they depend
#                                on, in modules.dep order, decompressed:
#                                busybox insmod reads neither .ko.xz nor .ko.zst
# The initramfs is rebuilt when vmtest/init or this script changes.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
VM="$BUILD/vmtest"
BUSYBOX=${BUSYBOX:-/bin/busybox}
# Modules to load for the root over 9p and the disks of the image case
# (dependencies are added from modules.dep; a module built into the kernel
# is skipped).
VMTEST_MODULES=${VMTEST_MODULES:-"virtio_pci 9pnet_virtio 9p virtio_blk ext4 crc32c_generic overlay"}

die() {
	echo "error: $*" >&2
	exit 1
}

# apt's lists may be missing or stale on a machine whose packages were all
# installed already (make deps then skips apt-get update): refresh once.
apt_refreshed=no
apt_refresh() {
	[ "$apt_refreshed" = no ] && [ "$(id -u)" = 0 ] || return 1
	apt_refreshed=yes
	echo "vmtest: apt-get update" >&2
	apt-get update -qq >/dev/null 2>&1
}

# apt options of another Debian suite ($1: bullseye): its own sources and
# lists under $VM/apt-$1, refreshed once a day.
APT_OPTS=""
suite_apt() {
	d="$VM/apt-$1"
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	k=/usr/share/keyrings/debian-archive-keyring.gpg
	printf '%s\n' "deb [signed-by=$k] http://deb.debian.org/debian $1 main" \
		"deb [signed-by=$k] http://deb.debian.org/debian-security $1-security main" \
		>"$d/sources.list"
	APT_OPTS="-o Dir::Etc::sourcelist=$d/sources.list -o Dir::Etc::sourceparts=- \
-o Dir::State::Lists=$d/lists -o Dir::Cache=$d/cache -o Dir::State::status=/dev/null"
	if [ -z "$(find "$d/lists" -name '*Packages*' -mtime -1 2>/dev/null | head -1)" ]; then
		echo "vmtest: apt-get update ($1)" >&2
		# shellcheck disable=SC2086
		apt-get $APT_OPTS update -qq >/dev/null 2>&1 || die "cannot reach Debian's $1 suite"
	fi
}

# The kernel package for a label: pinned, or the metapackage's dependency.
package_for() {
	case "$1" in
	5.10) pin=${VMTEST_PKG_5_10:-} meta=linux-image-amd64 ;;
	6.1) pin=${VMTEST_PKG_6_1:-} meta=linux-image-amd64 ;;
	6.12) pin=${VMTEST_PKG_6_12:-} meta=linux-image-6.12-amd64 ;;
	*) die "unknown kernel '$1' (known: 5.10 6.1 6.12)" ;;
	esac
	if [ -n "$pin" ]; then
		echo "$pin"
		return
	fi
	# shellcheck disable=SC2086
	pkg=$(apt-cache $APT_OPTS depends "$meta" 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -1)
	if [ -z "$pkg" ] && [ -z "$APT_OPTS" ] && apt_refresh; then
		pkg=$(apt-cache depends "$meta" 2>/dev/null |
			sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -1)
	fi
	[ -n "$pkg" ] || die "kernel $1: apt-cache knows no package behind $meta (apt-get update?)"
	case "$pkg" in
	linux-image-$1[.-]*) echo "$pkg" ;;
	*) die "kernel $1: $meta points at $pkg, not a $1 kernel; pin one with VMTEST_PKG_$(echo "$1" | tr . _)" ;;
	esac
}

fetch() { # PKG -> path of the .deb; 1 when apt-get download fails
	mkdir -p "$VM/debs"
	deb=$(ls "$VM/debs/$1"_*.deb 2>/dev/null | head -1)
	if [ -z "$deb" ]; then
		echo "vmtest: downloading $1" >&2
		# shellcheck disable=SC2086
		(cd "$VM/debs" && apt-get $APT_OPTS download -q "$1" >/dev/null 2>"$1.err") || return 1
		rm -f "$VM/debs/$1.err"
		deb=$(ls "$VM/debs/$1"_*.deb | head -1)
	fi
	echo "$deb"
}

unpack() { # DEB DIR: the package tree and its modules.dep
	if [ ! -f "$2/release" ]; then
		echo "vmtest: unpacking $(basename "$1")" >&2
		rm -rf "$2"
		mkdir -p "$2"
		dpkg-deb -x "$1" "$2/root"
		rel=$(ls "$2/root/lib/modules" | head -1)
		[ -n "$rel" ] && [ -f "$2/root/boot/vmlinuz-$rel" ] ||
			die "$(basename "$1") has no kernel/modules"
		# Debian's postinst runs depmod; the package has no modules.dep.
		depmod -b "$2/root" "$rel"
		echo "$rel" >"$2/release"
	fi
	ln -sf "root/boot/vmlinuz-$(cat "$2/release")" "$2/vmlinuz"
}

initramfs() { # DIR
	dir=$1
	rel=$(cat "$dir/release")
	out="$dir/initramfs.gz"
	if [ -f "$out" ] && [ "$out" -nt "$ROOT/vmtest/init" ] && [ "$out" -nt "$0" ]; then
		return
	fi
	[ -x "$BUSYBOX" ] || die "$BUSYBOX missing (apt-get install busybox-static)"
	stage="$dir/initramfs.d"
	rm -rf "$stage"
	mkdir -p "$stage/bin" "$stage/dev" "$stage/proc" "$stage/sys" "$stage/mnt/root" \
		"$stage/lib/modules"
	cp "$BUSYBOX" "$stage/bin/busybox"
	ln -s busybox "$stage/bin/sh"
	cp "$ROOT/vmtest/init" "$stage/init"
	chmod 755 "$stage/init"
	mknod -m 600 "$stage/dev/console" c 5 1
	: >"$stage/modules.list"
	: >"$dir/modules.deps"
	for m in $VMTEST_MODULES; do # (not in a pipeline: die must end the script)
		modprobe -d "$dir/root" -S "$rel" --show-depends "$m" >>"$dir/modules.deps" ||
			die "kernel $rel: no module $m"
	done
	awk '$1 == "insmod" && !seen[$2]++ { print $2 }' "$dir/modules.deps" >"$dir/modules.paths"
	while read -r ko; do
		name=$(basename "$ko")
		case "$name" in
		*.ko.xz) name=${name%.xz} && xz -dc "$ko" >"$stage/lib/modules/$name" ;;
		*.ko.zst) name=${name%.zst} && zstd -qdc "$ko" >"$stage/lib/modules/$name" ;;
		*.ko.gz) name=${name%.gz} && gzip -dc "$ko" >"$stage/lib/modules/$name" ;;
		*) cp "$ko" "$stage/lib/modules/$name" ;;
		esac
		echo "$name" >>"$stage/modules.list"
	done <"$dir/modules.paths"
	(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp"
	mv "$out.tmp" "$out"
	rm -rf "$stage"
}

[ $# -gt 0 ] || die "usage: vmtest/kernels.sh 5.10|6.1|6.12..."
for label in "$@"; do
	APT_OPTS=""
	[ "$label" = 5.10 ] && suite_apt bullseye
	pkg=$(package_for "$label")
	if ! deb=$(fetch "$pkg"); then
		# Stale lists name a package the mirror no longer has (an ABI or
		# point-release bump): refresh them, ask again, fetch the new one.
		apt_refresh || die "apt-get download $pkg failed: $(tail -1 "$VM/debs/$pkg.err")"
		pkg=$(package_for "$label")
		deb=$(fetch "$pkg") || die "apt-get download $pkg failed: $(tail -1 "$VM/debs/$pkg.err")"
	fi
	dir="$VM/kernels/$pkg"
	unpack "$deb" "$dir"
	initramfs "$dir"
	echo "$label $dir"
done
