#!/bin/sh
# vmtest/image.sh: the VM disk image as the platform uses it, inside a guest
# of the kernel matrix (vmtest/init runs it after the suite). vmtest/run.sh
# boots the guest with two more virtio disks: $BUILD/image/ebprof.img,
# read-only (label ebprof), and a fresh writable disk (label ebprof-state),
# the VM's own; and, when this script asks on the console, swaps the image
# for $BUILD/vmtest/next/ebprof.img (another version string) through qemu's
# monitor, as the platform upgrades it under a running VM.
#
# The VM: the host's root (read-only over 9p) under an overlay whose upper
# layer is on the writable disk, so that /etc, /usr/local and /mnt are the
# VM's own; /var/lib/ebprof and /var/cache/ebprof are directories of the
# writable disk (what the unit's StateDirectory and CacheDirectory would
# create); /proc, /sys, cgroup2, /dev, fresh /tmp and /run; no bpffs,
# debugfs or tracefs. In it:
#   0. a throwaway PostgreSQL under pgbench -S (first: the time from
#      mounting the image to the first profile is the agent's)
#   then as the image's README says:
#   1. mount -o ro,nosuid,nodev LABEL=ebprof /mnt/ebprof
#   2. sh /mnt/ebprof/install.sh (the symlink, the unit, the config), and
#      the platform's settings appended to /etc/ebprof/ebprof.conf: a 5 s
#      interval, a profefe remote that is down for now
#   3. kernel.perf_event_paranoid at 2 if it is higher (Debian's 3)
#   4. the unit's command line as systemd would run it: its capabilities
#      only, LimitMEMLOCK, every file system read-only but the unit's
#      ReadWritePaths, StateDirectory and CacheDirectory (/tmp too: the
#      agent needs no other writable place), for two intervals
#   5. its HTTP API: POST /profile/cpu (the compute contract) and
#      GET /profile/cpu?format=svg
#   6. the upgrade: stop the agent, unmount, the image swapped, mount,
#      start it again (the unit untouched), the collector up now: the
#      store and the queue survive and the queue drains into it; only
#      where VMTEST_IMAGE_UPGRADE=yes (vmtest/run.sh picks the guests):
#      elsewhere the agent stops after step 5 and `ebprof ls` of the same
#      image lists its store
# Every wait is bounded. Prints "vmtest: image: ..." lines, and last
#   VMTEST-IMAGE-RESULT: ok mount_to_profile=S upgrade_mount_to_profile=S
#   VMTEST-IMAGE-RESULT: fail WHY
# The host (vmtest/image-check.sh) reads what this leaves on the writable
# disk (results/, the store and the queue) after the guest powered off and
# checks the profiles with go tool pprof.
#
# Inside the VM this script also runs itself as `image.sh unit`: step 4.
set -u

SERVICE=vmtest-image
SERVE=127.0.0.1:10190 # the collector the agent pushes to
API=127.0.0.1:3080    # the agent's HTTP API (its default)
PATH_VM=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

say() { echo "vmtest: image: [$(cut -d' ' -f1 /proc/uptime)] $*"; }

# --- inside the VM: the unit's command line as systemd runs it ------------
if [ "${1:-}" = unit ]; then
	unit=/etc/systemd/system/ebprof.service
	key() { sed -n "s/^$1=//p" "$unit" | tail -1; }
	caps() { # "CAP_A CAP_B" -> "-all,+a,+b" (setpriv)
		printf '%s' '-all'
		for c in $1; do printf ',+%s' "$(echo "${c#CAP_}" | tr A-Z a-z)"; done
	}
	[ -r "$unit" ] || { echo "image.sh unit: no $unit" >&2; exit 1; }
	[ "$(key ProtectSystem)" = strict ] || { echo "image.sh unit: not ProtectSystem=strict" >&2; exit 1; }
	writable="$(key ReadWritePaths) /var/lib/$(key StateDirectory) /var/cache/$(key CacheDirectory)"
	for d in $writable; do
		mount --bind "$d" "$d" || exit 1
	done
	# ProtectSystem=strict, ReadOnlyPaths=/proc/sys /sys,
	# ProtectControlGroups; /tmp and /run read-only as well (the unit has
	# PrivateTmp): the agent writes nowhere else.
	mount --bind /proc/sys /proc/sys || exit 1
	for m in / /tmp /run /dev/shm /proc/sys /sys /sys/fs/cgroup; do
		mount -o remount,bind,ro "$m" || exit 1
	done
	# shellcheck disable=SC3045 # dash's ulimit has -l
	[ "$(key LimitMEMLOCK)" = infinity ] && ulimit -l unlimited
	cd "$(key WorkingDirectory)" || exit 1
	bounding=$(key CapabilityBoundingSet)
	ambient=$(key AmbientCapabilities)
	# shellcheck disable=SC2046 # the unit's command line: word splitting wanted
	exec setpriv --bounding-set="$(caps "$bounding")" --inh-caps="$(caps "$ambient")" \
		--ambient-caps="$(caps "$ambient")" --no-new-privs -- $(key ExecStart | sed 's/^[-@+!:]*//')
fi

[ "${VMTEST_GUEST:-0}" = 1 ] || {
	echo "vmtest/image.sh runs inside a vmtest guest only (it mounts disks and overlays)" >&2
	exit 2
}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
STATE=/run/image-state # the writable disk
VM=/run/image-vm       # the VM's root
R=$STATE/results       # what the host reads back
apid="" bpid="" spid="" pgdir="" mounted=""
t_case=$(cut -d' ' -f1 /proc/uptime)

vm() { # COMMAND...: run in the VM
	chroot "$VM" /usr/bin/env -i PATH=$PATH_VM HOME=/root LANG=C.UTF-8 "$@"
}
vm_bg() { # COMMAND...: run in the VM, in the background; $! is its pid
	(exec chroot "$VM" /usr/bin/env -i PATH=$PATH_VM HOME=/root LANG=C.UTF-8 "$@") &
}
now() { cut -d' ' -f1 /proc/uptime; }
since() { echo "$(now) $1" | awk '{ printf "%.1f", $1 - $2 }'; }

cleanup() {
	for p in $apid $bpid $spid; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	[ -z "$pgdir" ] || vm sh /root/pgcluster.sh stop "$pgdir" >/dev/null 2>&1
	cp /tmp/image-serve.log "$R/serve.log" 2>/dev/null
	for m in $mounted; do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	sync
}

end() { # RESULT...
	cleanup
	say "the case took $(since "$t_case") s"
	echo "VMTEST-IMAGE-RESULT: $*"
	exit 0
}

die() {
	say "FAIL: $*"
	end fail "$*"
}

mnt() { # mount ARGS... (the last one the mount point), undone by cleanup
	mount "$@" || return 1
	for m; do :; done
	mounted="$m $mounted"
}

# wait_for SECONDS WHAT COMMAND...: until COMMAND succeeds
wait_for() {
	t=$1 what=$2
	shift 2
	end_t=$(echo "$(now) $t" | awk '{ print $1 + $2 }')
	until "$@"; do
		if [ "$(echo "$(now) $end_t" | awk '{ print ($1 > $2) }')" = 1 ]; then
			say "no $what after $t s"
			return 1
		fi
		sleep 0.5
	done
}

# --- the VM: its writable disk, its root ------------------------------------
dev=$(blkid -c /dev/null -L ebprof-state) || die "no disk labelled ebprof-state (vmtest/run.sh attaches it)"
mkdir -p "$STATE" "$VM"
mnt "$dev" "$STATE" || die "cannot mount the writable disk $dev"
mkdir -p "$STATE/upper" "$STATE/work" "$STATE/lib" "$STATE/cache" "$R"
mnt -t overlay overlay -o "lowerdir=/,upperdir=$STATE/upper,workdir=$STATE/work" "$VM" ||
	die "cannot mount the VM's root (an overlay of the 9p root)"
mnt -t proc proc "$VM/proc" && mnt -t sysfs sysfs "$VM/sys" &&
	mnt -t cgroup2 cgroup2 "$VM/sys/fs/cgroup" && mnt --rbind /dev "$VM/dev" &&
	mnt -t tmpfs -o mode=1777 tmpfs "$VM/tmp" && mnt -t tmpfs -o mode=755 tmpfs "$VM/run" ||
	die "cannot mount the VM's /proc, /sys, /dev, /tmp or /run"
# A VM that never had ebprof: nothing of the host's shows through.
rm -rf "$VM/etc/ebprof" "$VM/etc/systemd/system/ebprof.service" "$VM/usr/local/sbin/ebprof" \
	"$VM/mnt/ebprof"
mkdir -p "$VM/var/lib/ebprof" "$VM/var/cache/ebprof"
mnt --bind "$STATE/lib" "$VM/var/lib/ebprof" && mnt --bind "$STATE/cache" "$VM/var/cache/ebprof" ||
	die "cannot bind /var/lib/ebprof or /var/cache/ebprof"
cp "$0" "$VM/root/image.sh" && cp "$ROOT/tools/pgcluster.sh" "$VM/root/pgcluster.sh" ||
	die "cannot copy the scripts into the VM"
say "the VM's root is up on $dev"

# --- 0. a PostgreSQL under pgbench -S ---------------------------------------
# (from the template the host made: initdb and pgbench -i, vmtest/run.sh;
# copied in from here: the VM's /tmp is its own, and the build may be
# under the host's)
pgdir=/tmp/pg
cp -a "$BUILD/vmtest/pgtemplate" "$VM/tmp/pgtemplate" || die "cannot copy the PostgreSQL template into the VM"
out=$(vm env EBPROF_PG_TEMPLATE=/tmp/pgtemplate sh /root/pgcluster.sh start "$pgdir" 2>&1) ||
	die "PostgreSQL did not start: $out"
port=$(echo "$out" | sed -n 's/^port=\([0-9]*\).*/\1/p')
say "PostgreSQL started"
vm_bg pgbench -n -S -c 2 -T 3600 -h "$pgdir" -p "$port" -U postgres postgres >"$R/pgbench.log" 2>&1
bpid=$!
say "PostgreSQL on port $port under pgbench -S (pid $bpid)"

# --- 1. mount the image by its label, as its README says --------------------
store=$VM/var/lib/ebprof/profiles
queue=$VM/var/lib/ebprof/queue
profiles() { find "$store" -name '*.pb.gz' 2>/dev/null; }
t_mount=$(now)
vm sh -c 'mkdir -p /mnt/ebprof && mount -o ro,nosuid,nodev LABEL=ebprof /mnt/ebprof' ||
	die "mount -o ro,nosuid,nodev LABEL=ebprof /mnt/ebprof failed"
mounted="$VM/mnt/ebprof $mounted"
grep " $VM/mnt/ebprof ext4 ro," /proc/mounts >/dev/null || die "/mnt/ebprof is not an ext4 mounted read-only"
v1=$(cat "$VM/mnt/ebprof/VERSION")
say "mounted $(blkid -c /dev/null -L ebprof) ($v1) at /mnt/ebprof"

# --- 2. install.sh, the platform's settings ------------------------------
vm sh /mnt/ebprof/install.sh >"$R/install.log" 2>&1 || die "install.sh failed: $(tail -1 "$R/install.log")"
[ "$(readlink "$VM/usr/local/sbin/ebprof")" = /mnt/ebprof/bin/ebprof ] ||
	die "install.sh made no /usr/local/sbin/ebprof -> /mnt/ebprof/bin/ebprof"
vm ebprof --version >/dev/null 2>&1 || die "ebprof through the symlink on the PATH does not run"
say "installed: $(head -1 "$R/install.log")"
cat >>"$VM/etc/ebprof/ebprof.conf" <<EOF

# the platform's settings for this VM (vmtest/image.sh)
interval = 5
service = $SERVICE
push-profefe = http://$SERVE
EOF

# The agent's start and stop (systemctl start and stop): this script as
# `image.sh unit` in a mount namespace of its own; SIGTERM, whose exit
# status must be 0 (the time it takes is said, not checked: under TCG it
# can pass the unit's TimeoutStopSec).
start_agent() { # LOG
	vm_bg unshare -m sh /root/image.sh unit >"$1" 2>&1
	apid=$!
}
stopped() { ! kill -0 "$apid" 2>/dev/null; }
stop_agent() { # LOG
	t_stop=$(now)
	kill -TERM "$apid" 2>/dev/null
	wait_for 300 "stop of the agent after SIGTERM" stopped || die "the agent did not stop after SIGTERM: $(tail -2 "$1")"
	wait "$apid"
	rc=$?
	apid=""
	[ "$rc" = 0 ] || die "the agent exited $rc on SIGTERM: $(tail -2 "$1")"
	say "the agent stopped $(since "$t_stop") s after SIGTERM"
}
intervals() { profiles | sed 's|.*/\([0-9]\{6\}\)-[^/]*$|\1|' | sort -u | wc -l; }
alive() { kill -0 "$apid" 2>/dev/null || die "the agent exited: $(tail -3 "$1" | tr '\n' ' ')"; }

# --- 3. Debian's kernels default to kernel.perf_event_paranoid=3, at which
# their patch allows perf_event_open(2) to CAP_SYS_ADMIN alone: the unit's
# CAP_PERFMON needs 2 (the image's README says so).
p=$(cat /proc/sys/kernel/perf_event_paranoid)
if [ "$p" -gt 2 ]; then
	echo 2 >/proc/sys/kernel/perf_event_paranoid || die "cannot set kernel.perf_event_paranoid to 2"
	say "kernel.perf_event_paranoid $p -> 2"
fi

# --- 4. the agent, from the unit's command line, for two intervals --------
start_agent "$R/agent1.log"
say "the agent started from the unit's command line (pid $apid)"
first() { alive "$R/agent1.log" && [ -n "$(profiles | head -1)" ]; }
wait_for 300 "profile in /var/lib/ebprof/profiles" first || die "no profile written after 300 s: $(tail -2 "$R/agent1.log" | tr '\n' ' ')"
mount_to_profile=$(since "$t_mount")
say "mount to first profile: $mount_to_profile s"

# --- 5. the HTTP API (the platform calls it from outside: curl of the host root)
code=$(curl -sS --max-time 300 -o "$R/compute.pb" -w '%{http_code}' -X POST "http://$API/profile/cpu" \
	-H 'Content-Type: application/json' \
	-d '{"profiler": {"BccProfile": null}, "sampling_frequency": 99, "timeout_seconds": 3, "archive": false}' 2>&1)
[ "$code" = 200 ] || die "POST /profile/cpu answered $code"
code=$(curl -sS --max-time 300 -o "$R/cpu.svg" -w '%{http_code}' "http://$API/profile/cpu?seconds=3&format=svg" 2>&1)
[ "$code" = 200 ] || die "GET /profile/cpu?seconds=3&format=svg answered $code"
say "HTTP API: POST /profile/cpu $(wc -c <"$R/compute.pb") bytes, svg $(wc -c <"$R/cpu.svg") bytes"

two() { alive "$R/agent1.log" && [ "$(intervals)" -ge 2 ]; }
wait_for 300 "second interval" two || die "profiles of 2 intervals not written"
stop_agent "$R/agent1.log"
profiles | sed "s|^$store/||" | sort >"$R/run1-store.txt"
# each queued file's header: its second line (remote_queue.h)
find "$queue" -name 'p-*.ebpq' -exec awk 'FNR == 2 { print; nextfile }' {} + >"$R/queued.jsonl"
say "first image: $(wc -l <"$R/run1-store.txt") profiles stored, $(wc -l <"$R/queued.jsonl") queued for the collector (down)"
[ -s "$R/queued.jsonl" ] || die "nothing queued while the collector was down"
if [ "${VMTEST_IMAGE_UPGRADE:-yes}" != yes ]; then
	vm ebprof ls --service "$SERVICE" --json >"$R/ls.jsonl" 2>"$R/ls.err" || die "ebprof ls failed: $(head -1 "$R/ls.err")"
	end ok "mount to the first profile $mount_to_profile s; the case took $(since "$t_case") s"
fi

# --- 6. the upgrade: unmount, swap the disk, mount, start ------------------
vm umount /mnt/ebprof || die "cannot unmount /mnt/ebprof"
mounted=$(echo "$mounted" | sed "s| $VM/mnt/ebprof | |")
uuid() { blkid -c /dev/null -s UUID -o value "$(blkid -c /dev/null -L ebprof)" 2>/dev/null; }
old=$(uuid)
t_swap=$(now)
echo "VMTEST-IMAGE-SWAP: detach the image, attach the next one"
swapped() { u=$(uuid) && [ -n "$u" ] && [ "$u" != "$old" ]; }
wait_for 300 "new disk labelled ebprof" swapped || die "the image was not swapped (host: its .swap log)"
swap=$(since "$t_swap")
say "the next image is attached after $swap s"
t_mount2=$(now)
vm sh -c 'mkdir -p /mnt/ebprof && mount -o ro,nosuid,nodev LABEL=ebprof /mnt/ebprof' ||
	die "mount of the next image failed"
mounted="$VM/mnt/ebprof $mounted"
v2=$(cat "$VM/mnt/ebprof/VERSION")
[ "$v2" != "$v1" ] || die "the image mounted after the swap is the old one ($v1)"
printf '%s\n%s\n' "$v1" "$v2" >"$R/versions.txt"

"$BUILD/ebprof" serve --listen "$SERVE" --store /tmp/image-serve >/tmp/image-serve.log 2>&1 &
spid=$!
up() { curl -sf "http://$SERVE/api/0/version" >/dev/null; }
wait_for 120 "collector" up || die "ebprof serve did not come up: $(tail -2 /tmp/image-serve.log)"

n1=$(wc -l <"$R/run1-store.txt")
start_agent "$R/agent2.log"
newer() { alive "$R/agent2.log" && [ "$(profiles | wc -l)" -gt "$n1" ]; }
wait_for 300 "profile of the next image's agent" newer || die "the next image's agent wrote no profile"
upgrade_to_profile=$(since "$t_mount2")
say "next image: mount to first profile: $upgrade_to_profile s"
drained() { alive "$R/agent2.log" && [ -z "$(find "$queue" -name 'p-*.ebpq' 2>/dev/null)" ]; }
wait_for 300 "empty queue" drained || die "the queue did not drain: $(find "$queue" -name 'p-*' | wc -l) left"
curl -sf -o "$R/serve-list.json" \
	"http://$SERVE/api/0/profiles?service=$SERVICE&type=cpu&from=2000-01-01T00:00:00&to=2100-01-01T00:00:00&limit=100000" ||
	die "the collector's list failed"
vm ebprof ls --service "$SERVICE" --json >"$R/ls.jsonl" 2>"$R/ls.err" || die "ebprof ls failed: $(head -1 "$R/ls.err")"
stop_agent "$R/agent2.log"
find "$queue" -type f | sed "s|^$queue/||" >"$R/queue-at-end.txt"
say "next image: $(wc -l <"$R/ls.jsonl") profiles in the store, the queue empty"
end ok "mount to the first profile $mount_to_profile s, after the upgrade $upgrade_to_profile s (the swap $swap s); the case took $(since "$t_case") s"
