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
# line as it finishes (tests/run.sh counts them), then the matrix, one line
# per kernel:
#   kernel 6.1.0-56-amd64  tcg    4 passed  0 failed  0 skipped   95 s
# and the console log of every failing kernel. Logs of every run:
# $BUILD/vmtest/logs/. Exit status 0 when every kernel passed.
#
# Acceleration: KVM only when a short probe boot under KVM reaches /init
# within VMTEST_KVM_PROBE_S seconds (the verdict is cached per host boot in
# $BUILD/vmtest/kvm-verdict); otherwise TCG with "-cpu max" (qemu's default
# CPU model panics 6.12 early under TCG). VMTEST_ACCEL=tcg|kvm forces one.
# Other knobs: VMTEST_TIMEOUT (s per guest), VMTEST_MEM (MiB), QEMU;
# VMTEST_ONLY and VMTEST_REPEAT narrow and repeat the suite (suite.sh).
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
VMTEST_TIMEOUT=${VMTEST_TIMEOUT:-1200}     # seconds per guest, boot included (5.10: 450-800)
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
results="$VM/results.$$"
: >"$results"
trap 'rm -f "$results"' EXIT

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
		report "$1" none 0 0 0 0 "$LOGS/kernels-$1.err" \
			"cannot get the kernel: $(tail -1 "$LOGS/kernels-$1.err")"
		return
	fi
	if [ "$guest_visible" != yes ]; then
		report "$1" none 0 0 0 0 - "the guest cannot see the tests ($guest_visible)"
		return
	fi
	kdir=${out#* }
	rel=$(cat "$kdir/release")
	choose_accel "$kdir"
	log="$LOGS/$rel.log"
	rm -f "$log.panicked" # a stale log must not vouch for this run
	boot "$kdir" "$log"
	again=""
	if [ -z "$res" ] && [ "$ACCEL" = tcg ] && grep -aq 'Kernel panic' "$log" &&
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
	report "$rel" "$ACCEL" "$p" "$f" "$s" "$secs" "$log" "$why" "$again"
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

# One boot of a guest kernel into the suite: sets res p f s why secs.
boot() { # KDIR LOG
	rm -f "$2" "$2.qemu" # a stale log must not vouch for this run
	echo "vmtest: booting $rel ($ACCEL), console log $2"
	t0=$(date +%s)
	rc=0
	# KVM: qemu's default CPU model, as probed (-cpu host aborts on an MSR
	# in a nested guest); TCG: -cpu max, with which 6.12 boots.
	cpu=""
	[ "$ACCEL" = kvm ] || cpu="-cpu max"
	# shellcheck disable=SC2086 # $cpu: zero or two words
	# --foreground: qemu stays in this process group, so Ctrl-C or a CI
	# cancel takes it down with the run. loglevel=5: an oops's trace
	# (logged at the default level, 4) reaches the console, notices do not.
	timeout --foreground -k 10 "$VMTEST_TIMEOUT" "$QEMU" -accel "$ACCEL" $cpu -smp 2 -m "$VMTEST_MEM" \
		-nodefaults -display none -no-reboot -serial "file:$2" \
		-kernel "$1/vmlinuz" -initrd "$1/initramfs.gz" \
		-append "console=ttyS0 panic=-1 loglevel=5 vmtest_dir=$ROOT vmtest_build=$BUILD_ABS$narrow" \
		-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
		>"$2.qemu" 2>&1 || rc=$?
	secs=$(($(date +%s) - t0))
	parse "$2"
	if [ -z "$res" ]; then
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

echo "PLAN: $(echo $kernels | wc -w)" # one PASS/FAIL line per kernel (tests/run.sh)
for k in $kernels; do
	case "$k" in
	host) run_host ;;
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
exit $status
