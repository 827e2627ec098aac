#!/bin/sh
# Installs ebprof from this disk image where it is mounted now: a symlink
# on the PATH to the image's binary, the systemd unit running that binary,
# and the default config.
#   sh /mnt/ebprof/install.sh         then: systemctl enable --now ebprof
# Keeps an existing /etc/ebprof/ebprof.conf. Mount the image at boot for
# the unit to start (e.g. /etc/fstab: LABEL=ebprof /mnt/ebprof ext4 ro,nosuid,nodev,nofail 0 2).
# The symlink and the unit name the mount point, not the disk: an image
# swapped for a newer one at the same place is used without installing
# again.
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
bindir=${BINDIR:-/usr/local/sbin}
unitdir=${UNITDIR:-/etc/systemd/system}
confdir=${CONFDIR:-/etc/ebprof}

[ -x "$dir/bin/ebprof" ] || {
	echo "install.sh: $dir/bin/ebprof missing" >&2
	exit 1
}
mkdir -p "$bindir" "$unitdir" "$confdir"
ln -sfn "$dir/bin/ebprof" "$bindir/ebprof"
echo "installed $bindir/ebprof -> $dir/bin/ebprof"
sed "s#/mnt/ebprof#$dir#g" "$dir/ebprof.service" >"$unitdir/ebprof.service.tmp"
mv "$unitdir/ebprof.service.tmp" "$unitdir/ebprof.service"
echo "installed $unitdir/ebprof.service (ExecStart: $dir/bin/ebprof)"
if [ -e "$confdir/ebprof.conf" ]; then
	echo "kept $confdir/ebprof.conf"
else
	install -m 0640 "$dir/ebprof.conf" "$confdir/ebprof.conf" # may hold a password
	echo "installed $confdir/ebprof.conf"
fi
if [ "$unitdir" = /etc/systemd/system ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload
	echo "start it with: systemctl enable --now ebprof"
fi
