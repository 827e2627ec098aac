#!/bin/sh
# vmtest/run.sh: the kernel matrix. Boots Debian's kernels under qemu and
# runs the focused BPF integration tests (vmtest/suite.sh) inside each; runs
# the same tests natively on the host's kernel.
#
# Usage: BUILD=build vmtest/run.sh [5.10] [6.1] [6.12] [host]   (default: all four)
#
# Needs, built on the host: $BUILD/ebprof, $BUILD/tests/integration/*,
# $BUILD/fixtures/* (make vmtest builds them). Kernels: vmtest/kernels.sh.
#
# Output: per kernel one "PASS: kernel R: ..." or "FAIL: kernel R: why"
# line as it finishes (tests/run.sh counts them), and per guest kernel one
# more for the disk image case ("PASS: image on kernel R: ..."; the guest
# boots with the image attached, vmtest/image.sh uses it there as the
# platform does, vmtest/image-check.sh checks what it left); then the
# matrix, one line per kernel and one per image case:
#   kernel 6.1.0-56-amd64  tcg    4 passed  0 failed  0 skipped   95 s
#   image on kernel 6.1.0-56-amd64  ok
# and the console log of every failing kernel. Logs of every run:
# $BUILD/vmtest/logs/. Exit status 0 when every kernel passed.
#
# Acceleration: KVM only when a short probe boot under KVM reaches /init
# within VMTEST_KVM_PROBE_S seconds (the verdict is cached per host boot in
# $BUILD/vmtest/kvm-verdict); otherwise TCG with "-cpu max" (qemu's default
# CPU model panics 6.12 early under TCG). VMTEST_ACCEL=tcg|kvm forces one.
# Other knobs: VMTEST_TIMEOUT (s per guest), VMTEST_MEM (MiB), QEMU;
# VMTEST_ONLY and VMTEST_REPEAT narrow and repeat the suite (suite.sh);
# VMTEST_ONLY=image runs the disk image case alone, any other VMTEST_ONLY
# leaves it out.
#
# A guest that panics under TCG with an oops naming no BPF code boots once
# more (the README says why); its first log is kept as LOG.panicked.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
case "$BUILD" in /*) BUILD_ABS=$BUILD ;; *) BUILD_ABS="$ROOT/$BUILD" ;; esac
VM="$BUILD_ABS/vmtest"
LOGS="$VM/logs"
QEMU=${QEMU:-qemu-system-x86_64}
VMTEST_TIMEOUT=${VMTEST_TIMEOUT:-1800}     # seconds per guest, boot included (5.10: 450-800, the image case 150-500 more)
VMTEST_KVM_PROBE_S=${VMTEST_KVM_PROBE_S:-20}
VMTEST_MEM=${VMTEST_MEM:-2048}
mkdir -p "$LOGS"

kernels=${*:-"5.10 6.1 6.12 host"}
# VMTEST_ONLY / VMTEST_REPEAT (vmtest/suite.sh) reach the guests on the
# kernel command line, which cannot carry white space.
narrow=""
case "${VMTEST_ONLY:-}${VMTEST_REPEAT:-}" in *[[:space:]]*)
	echo "FAIL: kernel matrix: VMTEST_ONLY and VMTEST_REPEAT cannot hold white space"
	exit 1
	;;
esac
[ -z "${VMTEST_ONLY:-}" ] || narrow="$narrow vmtest_only=$VMTEST_ONLY"
[ -z "${VMTEST_REPEAT:-}" ] || narrow="$narrow vmtest_repeat=$VMTEST_REPEAT"
suite_case=yes image_case=yes
case "${VMTEST_ONLY:-}" in
'') ;;
image) suite_case=no ;;
*) image_case=no ;;
esac
# The disk image case: the image, and the one swapped in for the upgrade
# (vmtest/vmtest.mk builds both).
IMAGE=$BUILD_ABS/image/ebprof.img
NEXT_IMAGE=$BUILD_ABS/vmtest/next/ebprof.img
# The upgrade (a swap of the image under the running guest, the queue
# drained by the next image's agent) is userspace's, not the kernel's: it
# runs in the guests of VMTEST_IMAGE_UPGRADE (5.10 by default, the oldest
# the image claims), the others mount, install and profile (3 minutes a
# guest less under TCG).
VMTEST_IMAGE_UPGRADE=${VMTEST_IMAGE_UPGRADE:-5.10}
images_built=yes
for f in "$IMAGE" "$NEXT_IMAGE"; do
	[ -f "$f" ] || images_built="no: $f is not built (make vmtest builds it)"
done
# Its PostgreSQL, initdb'd and pgbench -i'd here once (2 s) rather than
# in each guest (a minute and a half under TCG); image.sh copies it.
if [ "$image_case" = yes ] && [ "$images_built" = yes ] &&
	! sh tools/pgcluster.sh template "$VM/pgtemplate" 1 >"$VM/pgtemplate.log" 2>&1; then
	images_built="no: the PostgreSQL template was not made ($(tail -1 "$VM/pgtemplate.log"))"
fi
results="$VM/results.$$"
: >"$results"
: >"$results.image"
trap 'rm -f "$results" "$results.image"' EXIT

# One result: "kernel-release mode passed failed skipped seconds log status [why]"
record() {
	echo "$*" >>"$results"
}

report() { # release mode p f s secs log why [note]
	why=$8 note=${9:-}
	if [ -z "$why" ] && [ "$4" != 0 ]; then
		why="$4 of $(($3 + $4 + $5)) tests failed"
		first=$(grep -a '^ebprof: error: ' "$7" 2>/dev/null | head -1 | tr -d '\r' | cut -c16-140) || true
		[ -z "$first" ] || why="$why; first error: $first"
	elif [ -z "$why" ] && [ "$3" = 0 ]; then
		why="no test passed ($5 skipped)"
	fi
	if [ -z "$why" ]; then
		fl=$(grep -a '^vmtest: FLAKY ' "$7" 2>/dev/null | sed 's/^vmtest: FLAKY \([^ ]*\).*/\1/' | tr -d '\r' | tr '\n' ' ' | sed 's/ $//') || true
		[ -z "$fl" ] || fl=" (flaky, passed on a second run: $fl)"
		echo "PASS: kernel $1 ($2): $3 passed, $4 failed, $5 skipped in $6 s$fl$note"
		record "$1" "$2" "$3" "$4" "$5" "$6" "$7" ok
	else
		echo "FAIL: kernel $1 ($2): $why (log: $7)$note"
		record "$1" "$2" "$3" "$4" "$5" "$6" "$7" fail
	fi
}

# The disk image case's line: "PASS: image on kernel R (mode): ..." or FAIL.
report_image() { # release mode log verdict
	case "$4" in
	"ok "*)
		echo "PASS: image on kernel $1 ($2): ${4#ok }"
		echo "$1 ok $3" >>"$results.image"
		;;
	*)
		echo "FAIL: image on kernel $1 ($2): ${4#fail } (log: $3)"
		echo "$1 fail $3" >>"$results.image"
		;;
	esac
}

# Counts from a suite log: sets p f s and why ("" when the suite finished).
parse() {
	res=$(grep -a '^VMTEST-RESULT:' "$1" | tail -1 | tr -d '\r') || true
	p=0 f=0 s=0 why=""
	if [ -n "$res" ]; then
		p=$(echo "$res" | sed -n 's/.*passed=\([0-9]*\).*/\1/p')
		f=$(echo "$res" | sed -n 's/.*failed=\([0-9]*\).*/\1/p')
		s=$(echo "$res" | sed -n 's/.*skipped=\([0-9]*\).*/\1/p')
	fi
}

for f in ebprof tests/integration/test_record tests/integration/test_agent \
	tests/integration/test_http_pprof tests/integration/test_postgres fixtures/work_split fixtures/fork_tree fixtures/forker; do
	if [ ! -x "$BUILD_ABS/$f" ]; then
		echo "FAIL: kernel matrix: $BUILD/$f is not built (make vmtest builds it)"
		exit 1
	fi
done

# The guest sees the host's root with its own tmpfs on /tmp, /run and
# /var/tmp (vmtest/init binds the checkout and the build directory back
# into them when they live there), and its own /dev.
guest_visible=yes
for d in "$ROOT" "$BUILD_ABS"; do
	case "$d" in
	/dev/*) guest_visible="no: $d is under the guest's /dev" ;;
	*[[:space:]]*) guest_visible="no: the path '$d' has white space, which the kernel command line cannot carry" ;;
	esac
done

# --- acceleration: probe KVM once, on the first guest kernel -------------
ACCEL="" ACCEL_NOTE=""
choose_accel() { # KDIR
	if [ -n "$ACCEL" ]; then
		return
	fi
	case "${VMTEST_ACCEL:-}" in
	tcg | kvm)
		ACCEL=$VMTEST_ACCEL ACCEL_NOTE="KVM: not probed, VMTEST_ACCEL=$VMTEST_ACCEL"
		echo "$ACCEL_NOTE"
		return
		;;
	esac
	boot_id=$(cat /proc/sys/kernel/random/boot_id)
	if [ -f "$VM/kvm-verdict" ] && [ "$(head -1 "$VM/kvm-verdict")" = "$boot_id" ]; then
		ACCEL=$(sed -n 2p "$VM/kvm-verdict")
		ACCEL_NOTE="$(sed -n 3p "$VM/kvm-verdict") (verdict cached for this host boot)"
		echo "$ACCEL_NOTE"
		return
	fi
	if [ ! -w /dev/kvm ]; then
		ACCEL=tcg ACCEL_NOTE="KVM: no usable /dev/kvm: using TCG"
	else
		plog="$LOGS/kvm-probe.log"
		rm -f "$plog" "$plog.qemu" # a stale log must not vouch for this run
		t0=$(date +%s)
		rc=0
		timeout --foreground -k 5 "$VMTEST_KVM_PROBE_S" "$QEMU" -accel kvm -smp 2 -m 512 \
			-nodefaults -display none -no-reboot -serial "file:$plog" \
			-kernel "$1/vmlinuz" -initrd "$1/initramfs.gz" \
			-append "console=ttyS0 panic=-1 vmtest_probe=1" >"$plog.qemu" 2>&1 || rc=$?
		secs=$(($(date +%s) - t0))
		if grep -q VMTEST-PROBE-OK "$plog" 2>/dev/null; then
			ACCEL=kvm ACCEL_NOTE="KVM: probe boot reached /init in $secs s: using KVM"
		elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			ACCEL=tcg ACCEL_NOTE="KVM: /dev/kvm present but the probe boot hung after $VMTEST_KVM_PROBE_S s: using TCG"
		else
			ACCEL=tcg ACCEL_NOTE="KVM: /dev/kvm present but the probe boot failed ($(grep -v '^$' "$plog.qemu" | tail -1 | cut -c1-100)): using TCG"
		fi
	fi
	printf '%s\n%s\n%s\n' "$boot_id" "$ACCEL" "$ACCEL_NOTE" >"$VM/kvm-verdict"
	echo "$ACCEL_NOTE"
}

# --- one guest kernel ------------------------------------------------------
run_guest() { # LABEL
	if ! out=$(BUILD="$BUILD_ABS" sh vmtest/kernels.sh "$1" 2>"$LOGS/kernels-$1.err"); then
		guest_failed "$1" "$LOGS/kernels-$1.err" "cannot get the kernel: $(tail -1 "$LOGS/kernels-$1.err")"
		return
	fi
	if [ "$guest_visible" != yes ]; then
		guest_failed "$1" - "the guest cannot see the tests ($guest_visible)"
		return
	fi
	kdir=${out#* }
	rel=$(cat "$kdir/release")
	choose_accel "$kdir"
	log="$LOGS/$rel.log"
	state="$VM/state-$1.img" # the guest's writable disk (vmtest/image.sh)
	upgrade=no
	case " $VMTEST_IMAGE_UPGRADE " in *" $1 "*) upgrade=yes ;; esac
	rm -f "$log.panicked" # a stale log must not vouch for this run
	boot "$kdir" "$log"
	again=""
	if [ -n "$why" ] && [ "$ACCEL" = tcg ] && grep -aq 'Kernel panic' "$log" &&
		! oops_of "$log" | grep -aq -e 'bpf' -e 'kprobe'; then
		# A panic whose oops names no BPF code under TCG: the emulation's
		# (see the README), so the guest boots once more; its log is kept
		# and the oops printed, and a second panic fails the kernel.
		mv "$log" "$log.panicked"
		echo "vmtest: $rel panicked outside BPF code during $(panicked_in "$log.panicked"); booting it once more"
		oops_of "$log.panicked" | head -n 30 | sed 's/^/  | /'
		again=" (a first boot panicked outside BPF code: $log.panicked)"
		first=$secs
		boot "$kdir" "$log"
		secs=$((secs + first))
	fi
	iv=$(image_verdict)
	[ "$suite_case" = no ] || report "$rel" "$ACCEL" "$p" "$f" "$s" "$secs" "$log" "$suite_why" "$again"
	[ "$image_case" = no ] || report_image "$rel" "$ACCEL" "$log" "$iv"
}

# Both lines of a guest that did not boot.
guest_failed() { # LABEL LOG WHY
	[ "$suite_case" = no ] || report "$1" none 0 0 0 0 "$2" "$3"
	[ "$image_case" = no ] || report_image "$1" none "$2" "fail $3"
}

# The disk image case's verdict, once the guest is off: "ok ..." or
# "fail why" (vmtest/image-check.sh reads what the guest left).
image_verdict() {
	if [ "$image_case" = no ]; then
		return
	elif [ "$images_built" != yes ]; then
		echo "fail $images_built"
	elif [ -z "$image_res" ] && [ -n "$why" ]; then
		echo "fail $why"
	else
		sh vmtest/image-check.sh "$state" "$log" "$NEXT_IMAGE" "$VM/image-$rel" "$upgrade" 2>&1 | tail -1
	fi
}

# The oops of a panicked guest's console log, from its first line to the
# panic (loglevel=5 lets its trace out).
oops_of() { # LOG
	tr -d '\r' <"$1" | awk '/BUG:|Oops|general protection|WARNING:|Unable to handle|invalid opcode|stack-protector|double fault|Kernel panic/ { on = 1 }
		on && n++ < 80'
}

# The test a guest was running when it panicked.
panicked_in() { # LOG
	grep -a '^vmtest: running ' "$1" | tail -1 | tr -d '\r' | cut -c17-
}

# The disk image case's disks, with qemu's monitor on a socket for the
# swap: the image read-only, a fresh writable disk (label ebprof-state).
# Sets disks (qemu's arguments) and qmp (the socket).
image_disks() {
	disks="" qmp=""
	[ "$image_case" = yes ] && [ "$images_built" = yes ] || return 0
	rm -f "$state"
	truncate -s 1G "$state" && mkfs.ext4 -q -F -L ebprof-state -O ^has_journal "$state" || return 0
	qmp="$VM/qmp-$rel.sock"
	rm -f "$qmp"
	disks="-drive file=$IMAGE,if=none,id=ebprof,format=raw,readonly=on
		-device virtio-blk-pci,drive=ebprof,id=ebprofdisk
		-drive file=$state,if=none,id=vmstate,format=raw -device virtio-blk-pci,drive=vmstate
		-qmp unix:$qmp,server=on,wait=off"
}

# The platform's upgrade, when the guest asks for it on its console
# ("VMTEST-IMAGE-SWAP", the old image unmounted): the image's disk
# unplugged (the guest lets it go), the next image plugged in its place.
# qemu's monitor answers in LOG.swap.
swap_when_asked() { # LOG
	while sleep 1; do
		grep -aq '^VMTEST-IMAGE-SWAP' "$1" 2>/dev/null || continue
		python3 vmtest/qmp.py "$qmp" \
			'{"execute": "device_del", "arguments": {"id": "ebprofdisk"}}' \
			wait:DEVICE_DELETED:ebprofdisk \
			'{"execute": "blockdev-add", "arguments": {"driver": "raw", "node-name": "ebprofnext", "read-only": true,
			  "file": {"driver": "file", "filename": "'"$NEXT_IMAGE"'", "read-only": true}}}' \
			'{"execute": "device_add", "arguments": {"driver": "virtio-blk-pci", "drive": "ebprofnext", "id": "ebprofdisk2"}}' \
			>"$1.swap" 2>&1
		echo "exit $?" >>"$1.swap"
		return
	done
}

# One boot of a guest kernel into the suite and the disk image case: sets
# res p f s (the suite's counts), suite_why, image_res, why (the guest did
# not get through what it had to run) and secs.
boot() { # KDIR LOG
	rm -f "$2" "$2.qemu" "$2.swap" # a stale log must not vouch for this run
	echo "vmtest: booting $rel ($ACCEL), console log $2"
	image_disks
	wpid=""
	if [ -n "$qmp" ]; then
		swap_when_asked "$2" &
		wpid=$!
	fi
	t0=$(date +%s)
	rc=0
	# KVM: qemu's default CPU model, as probed (-cpu host aborts on an MSR
	# in a nested guest); TCG: -cpu max, with which 6.12 boots.
	cpu=""
	[ "$ACCEL" = kvm ] || cpu="-cpu max"
	# shellcheck disable=SC2086 # $cpu: zero or two words; $disks: zero or more
	# --foreground: qemu stays in this process group, so Ctrl-C or a CI
	# cancel takes it down with the run. loglevel=5: an oops's trace
	# (logged at the default level, 4) reaches the console, notices do not.
	timeout --foreground -k 10 "$VMTEST_TIMEOUT" "$QEMU" -accel "$ACCEL" $cpu -smp 2 -m "$VMTEST_MEM" \
		-nodefaults -display none -no-reboot -serial "file:$2" \
		-kernel "$1/vmlinuz" -initrd "$1/initramfs.gz" \
		-append "console=ttyS0 panic=-1 loglevel=5 vmtest_dir=$ROOT vmtest_build=$BUILD_ABS vmtest_upgrade=$upgrade$narrow" \
		-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
		$disks >"$2.qemu" 2>&1 || rc=$?
	secs=$(($(date +%s) - t0))
	[ -z "$wpid" ] || kill "$wpid" 2>/dev/null || true
	parse "$2"
	image_res=$(grep -a '^VMTEST-IMAGE-RESULT:' "$2" | tail -1 | tr -d '\r') || true
	if { [ "$suite_case" = yes ] && [ -z "$res" ]; } || { [ "$image_case" = yes ] && [ -z "$image_res" ]; }; then
		if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			why="no result after $VMTEST_TIMEOUT s (guest hung or too slow)"
		elif grep -aq 'Kernel panic' "$2"; then
			why="kernel panic during $(panicked_in "$2"): $(grep -a 'Kernel panic' "$2" | head -1 | tr -d '\r' | cut -c1-120)"
		elif grep -aq '^vmtest: FAIL:' "$2"; then
			why="guest setup: $(sed -n 's/^vmtest: FAIL: //p' "$2" | head -1 | tr -d '\r')"
		elif [ -s "$2.qemu" ]; then
			why="qemu exited $rc: $(grep -v '^$' "$2.qemu" | tail -1 | cut -c1-120)"
		else
			why="the guest ended without a result (qemu exit $rc)"
		fi
	fi
	suite_why=""
	[ -n "$res" ] || suite_why=$why
}

# --- the host kernel, natively --------------------------------------------
run_host() {
	rel=$(uname -r)
	log="$LOGS/host-$rel.log"
	echo "vmtest: running on the host kernel $rel, log $log"
	t0=$(date +%s)
	BUILD="$BUILD_ABS" sh vmtest/suite.sh >"$log" 2>&1 || true
	secs=$(($(date +%s) - t0))
	parse "$log"
	[ -n "$res" ] || why="the suite ended without a result"
	report "$rel" native "$p" "$f" "$s" "$secs" "$log" "$why"
}

# One PASS/FAIL line per kernel and one per guest kernel for the image
# case (tests/run.sh); VMTEST_ONLY may leave out either.
n=$(echo $kernels | wc -w)
guests=$(echo $kernels | tr ' ' '\n' | grep -Ec '^(5\.10|6\.1|6\.12)$') || true
lines=0
[ "$suite_case" = no ] || lines=$n
[ "$image_case" = no ] || lines=$((lines + guests))
echo "PLAN: $lines"
for k in $kernels; do
	case "$k" in
	host) [ "$suite_case" = no ] || run_host ;;
	5.10 | 6.1 | 6.12) run_guest "$k" ;;
	*)
		echo "FAIL: kernel $k: unknown (known: 5.10 6.1 6.12 host)"
		record "$k" none 0 1 0 0 - fail
		;;
	esac
done

echo "kernel matrix (${ACCEL_NOTE:-no guest booted}):"
status=0
while read -r rel mode p f s secs log st; do
	printf '  kernel %-24s %-6s %3s passed %3s failed %3s skipped %5s s\n' \
		"$rel" "$mode" "$p" "$f" "$s" "$secs"
	[ "$st" = ok ] || status=1
done <"$results"
while read -r rel st log; do
	printf '  image on kernel %-15s %s\n' "$rel" "$st"
	[ "$st" = ok ] || status=1
done <"$results.image"
while read -r rel mode p f s secs log st; do
	if [ "$st" != ok ]; then
		echo "failing kernel $rel: log $log"
		# What failed and the first messages that say why.
		[ -f "$log" ] && grep -a -e '^vmtest: FAIL' -e '^VMTEST-' -e '^ebprof: error' \
			-e '^libbpf: .*\(failed\|unexpected\|error\)' -e 'Kernel panic' "$log" |
			tr -d '\r' | awk '!seen[$0]++' | head -n 12 | sed 's/^/  | /'
		# A panic: the test it ended and its oops.
		if [ -f "$log" ] && grep -aq 'Kernel panic' "$log"; then
			echo "  | during: $(panicked_in "$log")"
			oops_of "$log" | sed 's/^/  | /'
		fi
	fi
done <"$results"
while read -r rel st log; do
	if [ "$st" != ok ] && [ -f "$log" ]; then
		echo "failing image case on kernel $rel: log $log"
		grep -a -e '^vmtest: image' -e '^VMTEST-IMAGE' "$log" | tr -d '\r' | tail -n 12 | sed 's/^/  | /'
	fi
done <"$results.image"
exit $status
