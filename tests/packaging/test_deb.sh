#!/bin/sh
# The Debian package (packaging/deb.mk, `make deb`; built first as a
# TEST_PREREQS): lintian (no error; its other messages are printed),
# control data (version, dpkg-shlibdeps Depends, conffiles, md5sums),
# contents (binary, unit, man page, config, state directory), the unit
# (systemd-analyze verify), the man page (renders without a warning and
# names every flag of every command), then the package extracted into a
# scratch root and the agent started from the unit's ExecStart line (paths
# moved into the scratch root, the shipped config unchanged, flags added to
# target a workload), with the unit's capabilities (setpriv: bounding,
# inheritable and ambient sets from CapabilityBoundingSet= and
# AmbientCapabilities=, no-new-privs): a busy loop run by user nobody from
# a 0700 directory must show up in a profile that go tool pprof reads, with
# its user and kernel frames symbolized; SIGHUP (ExecReload) and SIGTERM.
# Last, dpkg -i, the installed binary and config, and dpkg --purge leaving
# nothing behind, on every host, in a scratch copy of this machine (an
# overlay of / in private namespaces) that leaves the machine untouched.
# Needs root, BPF, perf events and overlayfs. Prints PLAN: and PASS:/FAIL:
# lines for tests/run.sh.
set -u
BUILD=${BUILD:-build}
VERSION=$(cat VERSION)
ARCH=$(dpkg --print-architecture)
DEB=$BUILD/packaging/ebprof_${VERSION}_${ARCH}.deb

. "$(dirname "$0")/../lib/testlib.sh"
# Every check below prints one PASS: or FAIL: line (tests/run.sh counts them).
echo "PLAN: 32"

tmp=$(mktemp -d /tmp/ebprof-deb-test.XXXXXX)
wpid='' apid=''
cleanup() {
	[ -n "$apid" ] && kill -KILL "$apid" 2>/dev/null
	[ -n "$wpid" ] && kill -KILL "$wpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if [ ! -f "$DEB" ]; then
	fail deb_exists "$DEB missing (make BUILD=$BUILD deb)"
	exit 1
fi
pass "deb_exists ($(basename "$DEB"): $((($(stat -c %s "$DEB") + 1023) / 1024)) KiB)"

# --- lintian -----------------------------------------------------------------
lintian --fail-on error "$DEB" >"$tmp/lintian.log" 2>&1
rc=$?
sed -e '/running with root privileges/d' -e 's/^/  lintian: /' "$tmp/lintian.log"
if [ "$rc" = 0 ] && ! grep -q '^E: ' "$tmp/lintian.log"; then
	pass "lintian_no_errors ($(grep -c '^W: ' "$tmp/lintian.log") warnings)"
else
	fail lintian_no_errors "$(grep '^E: ' "$tmp/lintian.log" | head -5 | tr '\n' ' ')(exit $rc)"
fi

# --- control data ------------------------------------------------------------
v=$(dpkg-deb -f "$DEB" Version)
[ "$v" = "$VERSION" ] && pass package_version || fail package_version "$v, VERSION says $VERSION"
deps=$(dpkg-deb -f "$DEB" Depends)
case "$deps" in
*libbpf1*libc6*libdw1*) pass "depends_from_shlibdeps ($deps)" ;;
*) fail depends_from_shlibdeps "Depends: $deps" ;;
esac
# Resolvable from the archive (not only here, where the build installed
# them): apt's solver on the package file, without installing anything.
if apt-get install --simulate -o Debug::NoLocking=1 "$(realpath "$DEB")" >"$tmp/sim" 2>&1 &&
	grep -q '^Inst ebprof ' "$tmp/sim"; then
	pass depends_installable
else
	fail depends_installable "apt-get install --simulate: $(grep -E '^E:|Depends:' "$tmp/sim" | head -2 | tr '\n' ' ')"
fi
mkdir -p "$tmp/control"
dpkg-deb -e "$DEB" "$tmp/control"
if grep -qx /etc/ebprof/ebprof.conf "$tmp/control/conffiles" 2>/dev/null; then
	pass conffile_marked
else
	fail conffile_marked "conffiles: $(cat "$tmp/control/conffiles" 2>/dev/null)"
fi
if [ -s "$tmp/control/md5sums" ] && grep -q ' usr/sbin/ebprof$' "$tmp/control/md5sums"; then
	pass md5sums
else
	fail md5sums "no md5sums for usr/sbin/ebprof"
fi
bad=
for s in postinst prerm postrm; do
	[ -f "$tmp/control/$s" ] && ! sh -n "$tmp/control/$s" && bad="$bad $s"
done
[ -z "$bad" ] && pass maintainer_scripts_parse || fail maintainer_scripts_parse "$bad"

# --- contents ------------------------------------------------------------------
root=$tmp/root
dpkg-deb -x "$DEB" "$root"
unit=
for u in "$root/lib/systemd/system/ebprof.service" "$root/usr/lib/systemd/system/ebprof.service"; do
	[ -f "$u" ] && unit=$u
done
bad=
for f in usr/sbin/ebprof etc/ebprof/ebprof.conf usr/share/man/man8/ebprof.8.gz \
	usr/share/doc/ebprof/copyright; do
	[ -f "$root/$f" ] || bad="$bad $f"
done
ls "$root"/usr/share/doc/ebprof/changelog*.gz >/dev/null 2>&1 || bad="$bad changelog"
[ -d "$root/var/lib/ebprof" ] || bad="$bad var/lib/ebprof/"
[ -n "$unit" ] || bad="$bad ebprof.service"
[ -z "$bad" ] && pass package_contents || fail package_contents "missing:$bad"
[ -z "$unit" ] && exit 1

# --- the unit --------------------------------------------------------------------
if systemd-analyze --man=no verify "$unit" >"$tmp/verify.log" 2>&1; then
	pass unit_verify
elif ! grep -v 'is not executable: No such file or directory' "$tmp/verify.log" | grep -q .; then
	pass "unit_verify (only /usr/sbin/ebprof missing: not installed on this machine)"
else
	fail unit_verify "$(tr '\n' ' ' <"$tmp/verify.log")"
fi
key() { sed -n "s/^$1=//p" "$unit" | tail -1; }
exec_start=$(key ExecStart | sed 's/^[-@+!:]*//')
bounding=$(key CapabilityBoundingSet)
ambient=$(key AmbientCapabilities)
bad=
case "$exec_start" in /usr/sbin/ebprof\ agent*) ;; *) bad="$bad ExecStart" ;; esac
[ "$(key StateDirectory)" = ebprof ] || bad="$bad StateDirectory"
key ExecReload | grep -q HUP || bad="$bad ExecReload"
[ "$(key NoNewPrivileges)" = yes ] || bad="$bad NoNewPrivileges"
[ "$(key ProtectSystem)" = strict ] || bad="$bad ProtectSystem"
key ProtectHome | grep -Eq '^(yes|read-only)$' || bad="$bad ProtectHome"
for c in CAP_BPF CAP_PERFMON; do
	echo " $bounding " | grep -q " $c " || bad="$bad $c"
done
echo "$bounding" | grep -q CAP_SYS_ADMIN && bad="$bad CAP_SYS_ADMIN"
grep -Eq '^(ProtectProc=invisible|ProcSubset=pid|ProtectKernelTunables=yes|ProtectKernelLogs=yes)' "$unit" &&
	bad="$bad hides-proc-or-kallsyms"
[ -z "$bad" ] && pass "unit_settings ($bounding)" || fail unit_settings "$bad"

# --- the man page ------------------------------------------------------------------
man=$root/usr/share/man/man8/ebprof.8.gz
if MANWIDTH=80 man --warnings -l "$man" >"$tmp/man.txt" 2>"$tmp/man.err" && [ ! -s "$tmp/man.err" ] &&
	[ "$(wc -l <"$tmp/man.txt")" -gt 100 ]; then
	pass man_renders
else
	fail man_renders "$(head -5 "$tmp/man.err" | tr '\n' ' ')"
fi
# Every long flag the commands know, as the help of each prints them.
zcat "$man" >"$tmp/ebprof.8"
bad=
for cmd in record agent ls merge flamegraph top symbolize serve; do
	for flag in $("$root/usr/sbin/ebprof" help $cmd | grep -o -- '--[a-z][a-z-]*' | sort -u); do
		esc=$(echo "$flag" | sed 's/-/\\\\-/g')
		grep -q -- "$esc" "$tmp/ebprof.8" || bad="$bad $cmd:$flag"
	done
	grep -q "^\\.SH.*$(echo $cmd | tr a-z A-Z)" "$tmp/ebprof.8" || bad="$bad section:$cmd"
done
[ -z "$bad" ] && pass man_covers_every_flag || fail man_covers_every_flag "$bad"

# --- the agent from the unit's command line -----------------------------------------
# A workload of another user whose binary root may not read by ownership.
mkdir -p "$tmp/home"
cat >"$tmp/spin.c" <<'EOF'
#include <sys/syscall.h>
#include <unistd.h>
static volatile unsigned long sink;
__attribute__((noinline)) void ebprof_deb_spin(void)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < 2000000; i++)
		x = x * 6364136223846793005UL + 1;
	sink = x;
}
__attribute__((noinline)) void ebprof_deb_syscalls(void)
{
	for (int i = 0; i < 20000; i++)
		syscall(SYS_getppid);
}
int main(void)
{
	for (;;) {
		ebprof_deb_spin();
		ebprof_deb_syscalls();
	}
}
EOF
if ! gcc -O0 -g -fno-omit-frame-pointer -o "$tmp/home/debspin" "$tmp/spin.c"; then
	fail workload_build "gcc failed"
	exit 1
fi
chmod 711 "$tmp"
chown -R nobody "$tmp/home"
chmod 700 "$tmp/home"
setpriv --reuid=nobody --regid=nogroup --clear-groups "$tmp/home/debspin" &
wpid=$!

# ExecStart with the scratch root's paths; the shipped config as it is.
state=$tmp/state
mkdir -p "$state"
cmd=$(echo "$exec_start" | sed -e "s|/usr/sbin/ebprof|$root/usr/sbin/ebprof|" \
	-e "s|/etc/ebprof/|$root/etc/ebprof/|g" -e "s|/var/lib/ebprof|$state|g")
port=$((20000 + $$ % 20000))
caps() { # "CAP_A CAP_B" -> "-all,+a,+b"
	printf '%s' '-all'
	for c in $1; do printf ',+%s' "$(echo "${c#CAP_}" | tr A-Z a-z)"; done
}
# shellcheck disable=SC2086 # $cmd is the unit's command line: word splitting wanted
(cd "$state" && exec setpriv --bounding-set="$(caps "$bounding")" --inh-caps="$(caps "$ambient")" \
	--ambient-caps="$(caps "$ambient")" --no-new-privs -- $cmd \
	--comm debspin --frequency 99 --interval 2 --output-dir "$state/profiles" \
	--queue-dir "$state/queue" --http-listen "127.0.0.1:$port") >"$tmp/agent.log" 2>&1 &
apid=$!
echo "  agent: $cmd --comm debspin --frequency 99 --interval 2 --output-dir ... (pid $apid)"

sleep 1
if [ -r "/proc/$apid/status" ]; then
	eff=$(capsh --decode="$(sed -n 's/^CapEff:[[:space:]]*//p' "/proc/$apid/status")" | sed 's/^[^=]*=//')
	want=$(echo "$bounding" | tr 'A-Z' 'a-z' | tr ' ' '\n' | grep . | sort | tr '\n' ',')
	got=$(echo "$eff" | tr ',' '\n' | grep . | sort | tr '\n' ',')
	[ "$got" = "$want" ] && pass "agent_capabilities ($eff)" || fail agent_capabilities "has $got, unit says $want"
else
	fail agent_capabilities "the agent is not running: $(tail -3 "$tmp/agent.log" | tr '\n' ' ')"
fi

if kill -0 "$apid" 2>/dev/null && ! grep -q 'ebprof.conf:' "$tmp/agent.log"; then
	pass shipped_config_accepted
else
	fail shipped_config_accepted "$(grep -m1 'error' "$tmp/agent.log")"
fi
bad=
for k in $("$root/usr/sbin/ebprof" help agent | grep -o -- '--[a-z][a-z-]*' | sed 's/^--//' | sort -u); do
	case $k in config | verbose | help | version) continue ;; esac
	grep -Eq "^#? ?$k = " "$root/etc/ebprof/ebprof.conf" || bad="$bad $k"
done
[ -z "$bad" ] && pass config_documents_every_key || fail config_documents_every_key "missing:$bad"

# Wait for two whole intervals.
i=0
while [ $i -lt 30 ] && [ "$(find "$state/profiles" -name '*.pb.gz' 2>/dev/null | wc -l)" -lt 3 ]; do
	kill -0 "$apid" 2>/dev/null || break
	sleep 0.5
	i=$((i + 1))
done
if curl -sf "http://127.0.0.1:$port/metrics" | grep -q '^ebprof_intervals_total'; then
	pass http_metrics
else
	fail http_metrics "no ebprof_intervals_total from 127.0.0.1:$port/metrics"
fi
# SIGHUP (ExecReload): with nothing edited, nothing restarts; an edited
# file is reloaded (a key the command line does not set).
kill -HUP "$apid" 2>/dev/null
sleep 1
unchanged=$(grep -c 'configuration unchanged' "$tmp/agent.log")
cp "$root/etc/ebprof/ebprof.conf" "$tmp/conf.orig"
echo 'retention-age = 6d' >>"$root/etc/ebprof/ebprof.conf"
kill -HUP "$apid" 2>/dev/null
sleep 1
cp "$tmp/conf.orig" "$root/etc/ebprof/ebprof.conf"
if kill -0 "$apid" 2>/dev/null && [ "$unchanged" = 1 ] &&
	grep -q 'reloading the configuration' "$tmp/agent.log"; then
	pass agent_reload_sighup
else
	fail agent_reload_sighup "$(tail -3 "$tmp/agent.log" | tr '\n' ' ')"
fi
kill -TERM "$apid" 2>/dev/null
i=0
while kill -0 "$apid" 2>/dev/null && [ $i -lt 30 ]; do
	sleep 0.5
	i=$((i + 1))
done
if kill -0 "$apid" 2>/dev/null; then
	fail agent_sigterm "still running 15 s after SIGTERM"
else
	wait "$apid"
	rc=$?
	[ "$rc" = 0 ] && pass agent_sigterm_exit0 || fail agent_sigterm_exit0 "exit $rc: $(tail -3 "$tmp/agent.log" | tr '\n' ' ')"
fi
apid=
kill "$wpid" 2>/dev/null
wpid=
sed 's/^/  agent: /' "$tmp/agent.log" | head -20

profiles=$(find "$state/profiles" -name '*.pb.gz' 2>/dev/null)
if [ -z "$profiles" ]; then
	fail profile_written "no profile under $state/profiles"
	exit 1
fi
pass "profile_written ($(echo "$profiles" | wc -l) files)"
bad='' n=0
for f in $profiles; do
	if go tool pprof -symbolize=none -raw "$f" >>"$tmp/raw.txt" 2>"$tmp/pprof.err"; then
		n=$((n + 1))
	else
		bad="$bad $(basename "$f"): $(head -1 "$tmp/pprof.err")"
	fi
done
[ -z "$bad" ] && pass "pprof_reads_profiles ($n)" || fail pprof_reads_profiles "$bad"
grep -q 'ebprof_deb_spin' "$tmp/raw.txt" && pass user_frames_symbolized ||
	fail user_frames_symbolized "no ebprof_deb_spin frame (CAP_DAC_READ_SEARCH, CAP_PERFMON?)"
grep -q 'sys_getppid' "$tmp/raw.txt" && pass kernel_frames_symbolized ||
	fail kernel_frames_symbolized "no *sys_getppid frame (CAP_SYSLOG?)"
grep -q "exe=$tmp/home/debspin" "$tmp/raw.txt" && pass exe_label ||
	fail exe_label "no exe label (CAP_SYS_PTRACE?)"

# --- dpkg -i / --purge in a scratch copy of this machine ------------------------------
# The package installed, run and purged by this machine's own dpkg and
# maintainer scripts, on every host (systemd or not, ebprof installed or
# not) without touching it: in a private mount and pid namespace (unshare),
# an overlay whose lower layer is / (never written) and whose upper layer
# is a tmpfs, chroot'ed into, with /tmp, /run and /dev of its own (an empty
# /run: postinst enables the unit but starts nothing). Whatever purge
# leaves behind is in the upper layer: compared with it before the install,
# only dpkg's own database and log and man-db's cache may differ. The
# namespaces, their mounts and every process in them end with the check;
# the host's dpkg state and ebprof paths are compared before and after.
scratch_checks="dpkg_install dpkg_conffile_registered installed_binary_runs postinst_enables_unit
unit_verify_installed installed_config_parses dpkg_purge_clean"
host_state() {
	dpkg-query -W -f='${Status} ${Version}\n' ebprof 2>&1
	for f in /usr/sbin/ebprof /etc/ebprof /var/lib/ebprof /lib/systemd/system/ebprof.service \
		/etc/systemd/system/multi-user.target.wants/ebprof.service \
		/var/lib/systemd/deb-systemd-helper-enabled/ebprof.service.dsh-also; do
		# not the times: an agent of this machine's may be writing there
		if [ -e "$f" ] || [ -L "$f" ]; then stat -c '%n %F %i %U %a' "$f"; else echo "absent $f"; fi
	done
}
host_state >"$tmp/host.before"
mkdir -p "$tmp/scratch"
cp "$DEB" "$tmp/ebprof.deb"
cat >"$tmp/scratch.sh" <<'SCRATCH'
# Runs in the private namespaces: $1 the test's directory, $2 the version,
# $3 testlib.sh, env CHECKS the names of its checks. Prints their PASS:/FAIL:
# lines.
set -u
t=$1 VERSION=$2
. "$3"
s=$t/scratch m=$t/scratch/root
note() { echo "  scratch: $*"; }
setup_fail() {
	for c in $CHECKS; do fail "$c" "no scratch root: $1"; done
	exit 1
}
mount -t tmpfs -o mode=0755 scratch "$s" || setup_fail "cannot mount a tmpfs on $s"
mkdir -p "$s/upper" "$s/work" "$m"
mount -t overlay overlay -o "lowerdir=/,upperdir=$s/upper,workdir=$s/work" "$m" ||
	setup_fail "cannot mount an overlay of / (no overlayfs in this kernel?)"
{ mount -t tmpfs -o mode=1777 tmp "$m/tmp" && mount -t tmpfs -o mode=0755 run "$m/run" &&
	mount -t tmpfs -o mode=0755 dev "$m/dev" &&
	mount -t proc -o nosuid,nodev,noexec proc "$m/proc"; } ||
	setup_fail "cannot mount /tmp, /run, /dev or /proc in the scratch root"
# A /dev of its own: the machine's device nodes stay out of reach.
for d in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
	n=${d%%:*} mami=${d#*:}
	mknod -m 666 "$m/dev/$n" c "${mami%:*}" "${mami#*:}" || setup_fail "cannot mknod /dev/$n"
done
ln -s /proc/self/fd "$m/dev/fd"
cp "$t/ebprof.deb" "$m/tmp/" || setup_fail "cannot copy the package into the scratch root"
in_root() { chroot "$m" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }
# Every entry of the upper layer, "type path", but what dpkg itself and
# the man-db trigger keep, and the directories the lower layer has (copied
# up for a change inside them).
upper_state() {
	(cd "$s/upper" && find . -mindepth 1 -printf '%y %P\n') | sort |
		grep -Ev ' (var/lib/dpkg|var/log|var/cache/man|var/cache/debconf)(/|$)' |
		while read -r y p; do
			if [ "$y" = d ] && [ -d "/$p" ] && [ ! -L "/$p" ]; then continue; fi
			echo "$y $p"
		done
}
# An ebprof of this machine's is purged from the scratch copy first: what
# is tested is a fresh installation.
if in_root dpkg-query -W ebprof >/dev/null 2>&1; then
	note "ebprof is known to this machine's dpkg: purged from the scratch root first"
	in_root dpkg --purge ebprof >"$t/prepurge.log" 2>&1 || note "$(tail -2 "$t/prepurge.log" | tr '\n' ' ')"
fi
# Nor does the package find what an unpackaged ebprof of this machine's
# left (a `make run` writes /var/lib/ebprof): a purge removing it would
# show as a whiteout in the upper layer.
for d in /var/lib/ebprof /etc/ebprof; do
	if [ -e "$m$d" ]; then
		note "$d exists on this machine: removed from the scratch root first"
		rm -rf "${m:?}$d"
	fi
done
upper_state >"$t/upper.before"

in_root dpkg -i /tmp/ebprof.deb >"$t/dpkg.log" 2>&1
if in_root dpkg-query -W -f='${Status}' ebprof 2>/dev/null | grep -q 'install ok installed'; then
	pass dpkg_install
else
	fail dpkg_install "$(tail -3 "$t/dpkg.log" | tr '\n' ' ')"
fi
in_root dpkg-query -W -f='${Conffiles}\n' ebprof 2>/dev/null | grep -q '/etc/ebprof/ebprof.conf' &&
	pass dpkg_conffile_registered || fail dpkg_conffile_registered "not in dpkg's Conffiles"
v=$(in_root /usr/sbin/ebprof --version 2>&1)
echo "$v" | grep -q "$VERSION" && pass "installed_binary_runs ($v)" ||
	fail installed_binary_runs "/usr/sbin/ebprof --version: $v"
[ -L "$m/etc/systemd/system/multi-user.target.wants/ebprof.service" ] &&
	pass postinst_enables_unit ||
	fail postinst_enables_unit "no multi-user.target.wants/ebprof.service link"
in_root systemd-analyze --man=no verify /lib/systemd/system/ebprof.service >"$t/verify2.log" 2>&1 &&
	pass unit_verify_installed || fail unit_verify_installed "$(tr '\n' ' ' <"$t/verify2.log")"
in_root /usr/sbin/ebprof agent --config /etc/ebprof/ebprof.conf --frequency 0 >"$t/conf.log" 2>&1
grep -q -- '--frequency' "$t/conf.log" && ! grep -q 'ebprof.conf:' "$t/conf.log" &&
	pass installed_config_parses || fail installed_config_parses "$(head -2 "$t/conf.log" | tr '\n' ' ')"

if in_root dpkg --purge ebprof >"$t/purge.log" 2>&1; then
	upper_state >"$t/upper.after"
	left=$(comm -13 "$t/upper.before" "$t/upper.after" | tr '\n' ' ')
	if in_root dpkg-query -W ebprof >/dev/null 2>&1; then
		fail dpkg_purge_clean "dpkg still knows ebprof: $(in_root dpkg-query -W -f='${Status}' ebprof)"
	elif [ -n "$left" ]; then
		fail dpkg_purge_clean "left behind (type path): $left"
	else
		pass dpkg_purge_clean
	fi
else
	fail dpkg_purge_clean "$(tail -3 "$t/purge.log" | tr '\n' ' ')"
fi
exit $failed
SCRATCH
# --pid --fork --kill-child: nothing started in the scratch root outlives
# the check (a timeout included).
CHECKS=$scratch_checks timeout -k 10 600 unshare --mount --pid --fork --kill-child --propagation private \
	sh "$tmp/scratch.sh" "$tmp" "$VERSION" "$(dirname "$0")/../lib/testlib.sh" >"$tmp/scratch.out" 2>&1
rc=$?
cat "$tmp/scratch.out"
for c in $scratch_checks; do
	grep -Eq "^(PASS|FAIL): $c( |:|\$)" "$tmp/scratch.out" ||
		fail "$c" "not reached (exit $rc): $(grep -Ev '^(PASS|FAIL): ' "$tmp/scratch.out" | tail -3 | tr '\n' ' ')"
done
[ "$rc" = 0 ] || failed=1
host_state >"$tmp/host.after"
if cmp -s "$tmp/host.before" "$tmp/host.after"; then
	pass host_untouched
else
	fail host_untouched "$(diff "$tmp/host.before" "$tmp/host.after" | grep '^[<>]' | tr '\n' ' ')"
fi

exit $failed
