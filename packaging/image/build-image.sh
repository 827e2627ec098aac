#!/bin/sh
# Builds the ebprof VM disk image (see packaging/image.mk).
#   build-image.sh FULL_BINARY OUTDIR
# FULL_BINARY: the unstripped image link ($(BUILD)/image/ebprof.full);
# OUTDIR: where ebprof.debug, staging/ and ebprof.img go.
# IMAGE_VERSION: the version the image says it holds (its VERSION file and
# README), by default the binary's --version; the kernel matrix builds a
# second image with another one to swap in as an upgrade (vmtest/vmtest.mk).
# Needs no root: mkfs.ext4 -d fills the file system from staging/.
# Deterministic: file times are SOURCE_DATE_EPOCH (default: the last
# commit's time), the UUID and directory hash seed derive from the content,
# owners are 0:0.
set -eu

full=$1
mkdir -p "$2"
out=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
pkg=$(dirname "$here")
top=$(dirname "$pkg")
stage=$out/staging
img=$out/ebprof.img
mnt=/mnt/ebprof # where the image's unit expects it; install.sh adapts it
limit=20000000  # bytes: the image must stay under 20 MB

die() {
	echo "build-image: error: $*" >&2
	exit 1
}

epoch=${SOURCE_DATE_EPOCH:-$(git -C "$top" log -1 --format=%ct 2>/dev/null || echo 0)}
export SOURCE_DATE_EPOCH="$epoch"

# glibc's own libraries stay the VM's.
is_glibc() {
	case $1 in
	linux-vdso.so.* | linux-gate.so.* | ld-linux*.so.* | ld64.so.* | libc.so.* | libm.so.* | \
		libmvec.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | libutil.so.* | \
		libanl.so.* | libBrokenLocale.so.* | libnss_*.so.*)
		return 0
		;;
	esac
	return 1
}

# highest GLIBC_x.y symbol version FILE... need
glibc_min() {
	for f in "$@"; do
		objdump -T "$f" | grep -o 'GLIBC_[0-9][0-9.]*' || true
	done | sed 's/GLIBC_//' | sort -uV | tail -1
}

[ -x "$full" ] || die "$full missing"
for f in "$pkg/ebprof.service" "$pkg/ebprof.conf" "$here/README" "$here/install.sh"; do
	[ -f "$f" ] || die "$f missing"
done
grep -q '/usr/sbin/ebprof' "$pkg/ebprof.service" || die "no /usr/sbin/ebprof in $pkg/ebprof.service (ExecStart)"

umask 022
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib"

# --- the binary: stripped, debug info beside the image ---------------------
objcopy --only-keep-debug "$full" "$out/ebprof.debug"
objcopy --strip-all --add-gnu-debuglink="$out/ebprof.debug" "$full" "$stage/bin/ebprof"
chmod 0755 "$stage/bin/ebprof"

# --- the shared libraries it needs besides glibc ---------------------------
ldd "$full" >"$out/ldd.full" || die "ldd $full failed"
nlibs=0
while read -r name arrow path _; do
	[ "$arrow" = "=>" ] || continue
	is_glibc "$name" && continue
	[ -f "$path" ] || die "$name: not found on the build machine"
	cp -L "$path" "$stage/lib/$name"
	chmod 0644 "$stage/lib/$name"
	nlibs=$((nlibs + 1))
done <"$out/ldd.full"

# Every non-glibc library must now come from the image's lib/.
LD_LIBRARY_PATH='' ldd "$stage/bin/ebprof" >"$out/ldd.staging" || die "ldd of the staged binary failed"
if grep -q 'not found' "$out/ldd.staging"; then
	cat "$out/ldd.staging" >&2
	die "the staged binary misses libraries"
fi
while read -r name arrow path _; do
	[ "$arrow" = "=>" ] || continue
	is_glibc "$name" && continue
	case $path in
	"$stage/bin/../lib/"*) ;;
	*) die "$name resolves to $path, outside the image" ;;
	esac
done <"$out/ldd.staging"

glibc=$(glibc_min "$stage/bin/ebprof" "$stage"/lib/*)
version=$("$stage/bin/ebprof" --version) || die "the staged binary does not run"
version=${IMAGE_VERSION:-$version}

# --- unit, config, README, install.sh --------------------------------------
# The unit runs the binary where the image is mounted (install.sh rewrites
# $mnt for another mount point) and waits for that mount.
sed -e "s#/usr/sbin/ebprof#$mnt/bin/ebprof#g" \
	-e "/^\[Unit\]/a RequiresMountsFor=$mnt" \
	"$pkg/ebprof.service" >"$stage/ebprof.service"
cp "$pkg/ebprof.conf" "$stage/ebprof.conf"
cp "$here/install.sh" "$stage/install.sh"
echo "$version" >"$stage/VERSION"
chmod 0644 "$stage/ebprof.service" "$stage/ebprof.conf" "$stage/VERSION"
chmod 0755 "$stage/install.sh"
{
	cat "$here/README"
	echo
	echo "This image"
	echo "----------"
	echo "$version, $(uname -m)"
	echo "needs glibc >= $glibc"
	echo "bundled in lib/: $(cd "$stage/lib" && echo *)"
	echo "debug info: not in the image (ebprof.debug of the build, found by build-id or debuglink)"
} >"$stage/README"
chmod 0644 "$stage/README"

find "$stage" -exec touch -h -d "@$epoch" {} +

# --- the ext4 image --------------------------------------------------------
content_kb=$(du -sk --apparent-size "$stage" | cut -f1)
inodes=$(($(find "$stage" | wc -l) + 32))
# content + 5% + 512 KiB for the metadata (1 KiB blocks, no journal, no
# reserved blocks: a read-only disk; the metadata takes ~250 KiB), rounded
# up to 256 KiB
size_kb=$(((content_kb * 105 / 100 + 512 + 255) / 256 * 256))
h=$(cd "$stage" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-32)
uuid=$(echo "$h" | sed -E 's/^(.{8})(.{4}).(.{3}).(.{3})(.{12})$/\1-\2-4\3-8\4-\5/')
rm -f "$img" "$img.tmp"
E2FSPROGS_FAKE_TIME=$epoch mkfs.ext4 -q -F -t ext4 -b 1024 -L ebprof -U "$uuid" \
	-E root_owner=0:0,hash_seed="$uuid" -O ^has_journal -m 0 -N "$inodes" \
	-d "$stage" "$img.tmp" "${size_kb}k" >"$out/mkfs.log" 2>&1 || {
	cat "$out/mkfs.log" >&2
	die "mkfs.ext4 failed"
}
# mkfs.ext4 -d copies the owners of staging/ (not root's when the build
# did not run as root) and its access and change times: set them.
{
	echo /
	(cd "$stage" && find . -mindepth 1) | sed 's#^\.##'
	echo /lost+found
} | sort -u | while read -r p; do
	for f in "uid 0" "gid 0" "atime @$epoch" "ctime @$epoch" "mtime @$epoch" "crtime @$epoch"; do
		echo "sif \"$p\" $f"
	done
done >"$out/fixup.debugfs"
E2FSPROGS_FAKE_TIME=$epoch debugfs -w -f "$out/fixup.debugfs" "$img.tmp" >"$out/fixup.log" 2>&1 ||
	die "debugfs (owners, times) failed"
! grep -qi 'error\|invalid\|not found\|usage' "$out/fixup.log" || {
	cat "$out/fixup.log" >&2
	die "debugfs (owners, times) failed"
}
e2fsck -fn "$img.tmp" >"$out/e2fsck.log" 2>&1 || {
	cat "$out/e2fsck.log" >&2
	die "e2fsck found errors in the image"
}
mv "$img.tmp" "$img"

# --- report ----------------------------------------------------------------
img_size=$(stat -c %s "$img")
bin_size=$(stat -c %s "$stage/bin/ebprof")
full_size=$(stat -c %s "$full")
libs_size=$(cat "$stage"/lib/* | wc -c)
gz_size=$(gzip -9 -n -c "$img" | wc -c)
echo "disk image: $img ($version)"
echo "  image:        $img_size bytes ($((img_size / 1024)) KiB, ${gz_size} bytes gzip -9), limit $limit"
echo "  content:      ${content_kb} KiB"
echo "  binary:       $bin_size bytes stripped ($full_size unstripped; debug info in $out/ebprof.debug)"
echo "  bundled libs: $nlibs, $libs_size bytes: $(cd "$stage/lib" && echo *)"
echo "  needs:        glibc >= $glibc, a kernel with BTF (or --btf PATH)"
echo "  uuid:         $uuid, SOURCE_DATE_EPOCH=$epoch"
[ "$img_size" -lt "$limit" ] || die "image is $img_size bytes, over the $limit limit"
