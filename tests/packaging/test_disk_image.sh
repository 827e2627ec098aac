#!/bin/sh
# The VM disk image (packaging/image.mk, `make disk-image`; built first as a
# TEST_PREREQS): size, read back without mounting (debugfs rdump), layout,
# libraries (nothing outside glibc and the image's lib/), and the binary run
# from the extracted copy: --version and a 2 s record of a busy workload
# whose profile go tool pprof reads, with samples and symbolized frames.
# Needs root, BPF and perf events for the record (fails without them).
# Prints PASS:/FAIL: lines for tests/run.sh.
set -u
BUILD=${BUILD:-build}
IMG=$BUILD/image/ebprof.img
LIMIT=20000000 # bytes

. "$(dirname "$0")/../lib/testlib.sh"
plan 18

tmp=$(mktemp -d /tmp/ebprof-image-test.XXXXXX)
wpid=
cleanup() {
	[ -n "$wpid" ] && kill "$wpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# --- the image -------------------------------------------------------------
if [ ! -f "$IMG" ]; then
	fail image_exists "$IMG missing (make BUILD=$BUILD disk-image)"
	exit 1
fi
pass image_exists
size=$(stat -c %s "$IMG")
if [ "$size" -lt "$LIMIT" ]; then
	pass "image_under_20MB ($size bytes)"
else
	fail image_under_20MB "$size bytes, limit $LIMIT"
fi
if e2fsck -fn "$IMG" >"$tmp/fsck.log" 2>&1; then
	pass image_fsck_clean
else
	fail image_fsck_clean "$(tail -3 "$tmp/fsck.log" | tr '\n' ' ')"
fi
label=$(dumpe2fs -h "$IMG" 2>/dev/null | sed -n 's/^Filesystem volume name: *//p')
if [ "$label" = ebprof ]; then pass image_label; else fail image_label "label '$label', want ebprof"; fi

# --- read it back: debugfs, no mount ----------------------------------------
root=$tmp/root
mkdir -p "$root"
if debugfs -R "rdump / $root" "$IMG" >"$tmp/debugfs.log" 2>&1 && [ -f "$root/bin/ebprof" ]; then
	pass image_read_back
else
	fail image_read_back "debugfs rdump: $(tail -3 "$tmp/debugfs.log" | tr '\n' ' ')"
	exit 1
fi

missing=
for f in bin/ebprof ebprof.service ebprof.conf README install.sh VERSION; do
	[ -s "$root/$f" ] || missing="$missing $f"
done
[ -x "$root/bin/ebprof" ] || missing="$missing bin/ebprof(executable)"
nlibs=$(find "$root/lib" -name '*.so*' -type f 2>/dev/null | wc -l)
[ "$nlibs" -gt 0 ] || missing="$missing lib/*.so*"
if [ -z "$missing" ]; then
	pass "image_layout (bin/ebprof, $nlibs libs in lib/, unit, conf, README, install.sh, VERSION)"
else
	fail image_layout "missing:$missing"
fi

if grep -q '^ExecStart=/mnt/ebprof/bin/ebprof agent' "$root/ebprof.service" &&
	grep -q '^RequiresMountsFor=/mnt/ebprof' "$root/ebprof.service"; then
	pass image_unit_points_into_image
else
	fail image_unit_points_into_image "$(grep -E '^(ExecStart|RequiresMountsFor)=' "$root/ebprof.service" | tr '\n' ' ')"
fi
if grep -q 'BTF' "$root/README" && grep -q -- '--btf' "$root/README" &&
	grep -q 'glibc >= [0-9]' "$root/README"; then
	pass image_readme
else
	fail image_readme "README does not name BTF, --btf and the minimum glibc"
fi

# install.sh into a scratch root: the symlink and the unit name the binary
# where the image is
if BINDIR=$tmp/sbin UNITDIR=$tmp/unit CONFDIR=$tmp/etc sh "$root/install.sh" >"$tmp/install.log" 2>&1 &&
	[ "$(readlink "$tmp/sbin/ebprof")" = "$root/bin/ebprof" ] &&
	grep -q "^ExecStart=$root/bin/ebprof agent" "$tmp/unit/ebprof.service" &&
	grep -q "^RequiresMountsFor=$root\$" "$tmp/unit/ebprof.service" &&
	cmp -s "$root/ebprof.conf" "$tmp/etc/ebprof.conf"; then
	pass image_install_sh
else
	fail image_install_sh "$(tr '\n' ' ' <"$tmp/install.log")"
fi

# --- the binary: stripped, $ORIGIN rpath, no library outside glibc + lib/ --
bin=$root/bin/ebprof
if readelf -S "$bin" | grep -q '\.debug_info'; then
	fail image_binary_stripped "has .debug_info"
else
	pass "image_binary_stripped ($(stat -c %s "$bin") bytes)"
fi
if readelf -d "$bin" | grep -E '\((RPATH|RUNPATH)\)' | grep -qF '[$ORIGIN/../lib]'; then
	pass image_binary_origin_rpath
else
	fail image_binary_origin_rpath "$(readelf -d "$bin" | grep -E 'RPATH|RUNPATH')"
fi

LD_LIBRARY_PATH='' ldd "$bin" >"$tmp/ldd.txt" 2>&1
bad=
while read -r name arrow path _; do
	case $name in
	linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | \
		librt.so.* | libresolv.so.*)
		continue
		;;
	esac
	case $name in
	/*) continue ;; # the interpreter line
	esac
	[ "$arrow" = "=>" ] || {
		bad="$bad $name"
		continue
	}
	case $path in
	"$root/bin/../lib/"*) ;;
	*) bad="$bad $name=>$path" ;;
	esac
done <"$tmp/ldd.txt"
if grep -q 'not found' "$tmp/ldd.txt"; then
	fail image_binary_libraries "not found: $(grep 'not found' "$tmp/ldd.txt" | tr '\n' ' ')"
elif [ -n "$bad" ]; then
	fail image_binary_libraries "outside glibc and the image's lib/:$bad"
else
	pass "image_binary_libraries (glibc + $(grep -c "$root/bin/../lib/" "$tmp/ldd.txt") from lib/)"
fi

ver=$("$bin" --version 2>&1)
case $ver in
"ebprof "[0-9]*) pass "image_binary_version ($ver)" ;;
*) fail image_binary_version "got '$ver'" ;;
esac

# In a chroot holding nothing but glibc and the image (at /mnt/ebprof), in
# a mount namespace of its own for the /proc that $ORIGIN needs.
jail=$tmp/jail
mkdir -p "$jail/proc" "$jail/mnt"
cp -a "$root" "$jail/mnt/ebprof"
for p in $(awk '$2 == "=>" && $3 !~ /\/bin\/\.\.\/lib\// { print $3 } $1 ~ /^\// { print $1 }' "$tmp/ldd.txt"); do
	mkdir -p "$jail$(dirname "$p")"
	cp -L "$p" "$jail$p"
done
jver=$(unshare -m sh -c 'mount -t proc proc "$1/proc" && chroot "$1" /mnt/ebprof/bin/ebprof --version' sh "$jail" 2>&1)
case $jver in
"ebprof "[0-9]*) pass "image_binary_runs_with_only_glibc ($(find "$jail" -name '*.so*' ! -path "$jail/mnt/*" | wc -l) glibc files)" ;;
*) fail image_binary_runs_with_only_glibc "$jver" ;;
esac

# --- a 2 s record of a busy workload, read back by go tool pprof ----------
cat >"$tmp/burn.c" <<'EOF'
volatile unsigned long sink;
__attribute__((noinline)) void image_test_burn(void)
{
	for (;;)
		for (unsigned long i = 0; i < 1000000; i++)
			sink += i;
}
int main(void)
{
	image_test_burn();
	return 0;
}
EOF
if ! cc -O0 -g -fno-omit-frame-pointer -o "$tmp/burn" "$tmp/burn.c" 2>"$tmp/cc.log"; then
	fail image_record "cannot build the workload: $(tr '\n' ' ' <"$tmp/cc.log")"
	exit 1
fi
"$tmp/burn" &
wpid=$!
if "$bin" record -p "$wpid" -d 2 -o "$tmp/x.pb.gz" >"$tmp/record.log" 2>&1 && [ -s "$tmp/x.pb.gz" ]; then
	pass image_record
else
	fail image_record "$(tail -5 "$tmp/record.log" | tr '\n' ' ')"
	exit 1
fi
kill "$wpid" 2>/dev/null
wait "$wpid" 2>/dev/null
wpid=

if HOME=${HOME:-/tmp} GOCACHE=${GOCACHE:-/tmp/ebprof-gocache} GOFLAGS=-mod=mod \
	go tool pprof -raw "$tmp/x.pb.gz" >"$tmp/raw.txt" 2>&1 && ! grep -qi warning "$tmp/raw.txt"; then
	pass image_profile_valid
else
	fail image_profile_valid "go tool pprof -raw: $(head -5 "$tmp/raw.txt" | tr '\n' ' ')"
	exit 1
fi
# "Samples:" / the header line / "   COUNT   NANOS: LOCATION-IDS", up to "Locations"
samples=$(awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && $2 ~ /:$/ { n += $1 } END { print n + 0 }' "$tmp/raw.txt")
if [ "$samples" -gt 0 ]; then
	pass "image_profile_samples ($samples)"
else
	fail image_profile_samples "no samples"
fi
if grep -q ' image_test_burn ' "$tmp/raw.txt" && grep -q ' main ' "$tmp/raw.txt"; then
	pass image_profile_symbolized
else
	fail image_profile_symbolized "no image_test_burn/main frame: $(sed -n '/^Locations/,$p' "$tmp/raw.txt" | head -5 | tr '\n' ' ')"
fi

exit "$failed"
