#!/bin/sh
# Installs the ebprof systemd unit and default config from this disk image,
# the unit running the binary where the image is mounted now.
#   sh /mnt/ebprof/install.sh         then: systemctl enable --now ebprof
# Keeps an existing /etc/ebprof/ebprof.conf. Mount the image at boot for
# the unit to start (e.g. /etc/fstab: LABEL=ebprof /mnt/ebprof ext4 ro,nofail 0 2).
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
unitdir=${UNITDIR:-/etc/systemd/system}
confdir=${CONFDIR:-/etc/ebprof}

[ -x "$dir/bin/ebprof" ] || {
	echo "install.sh: $dir/bin/ebprof missing" >&2
	exit 1
}
mkdir -p "$unitdir" "$confdir"
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
