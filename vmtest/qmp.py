#!/usr/bin/env python3
"""A QMP client for the kernel matrix: runs commands on a running qemu.

  qmp.py SOCKET STEP...

SOCKET is qemu's QMP socket (-qmp unix:SOCKET,server=on,wait=off). Each
STEP is either a command as JSON ('{"execute": "device_del", "arguments":
{"id": "disk0"}}'), sent and answered in turn, or wait:EVENT[:DEVICE],
which waits for that event (for DEVICE_DELETED: of that device id).
Prints one line per step: its answer, or the event. Exit status 0 when
every command succeeded and every event came; 1 at the first error answer
or after TIMEOUT seconds (environment QMP_TIMEOUT, default 60) without
the answer or event awaited.

vmtest/run.sh swaps the disk image under a running guest with it:
device_del of the old disk, wait for DEVICE_DELETED (the guest has let
it go), blockdev-add of the new image, device_add of a virtio-blk-pci
device on it.
"""
import json
import os
import socket
import sys
import time


class Qmp:
    def __init__(self, path, timeout):
        self.deadline = time.monotonic() + timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        self.events = []
        greeting = self.read()
        if "QMP" not in greeting:
            raise RuntimeError("no QMP greeting: %s" % greeting)
        self.execute({"execute": "qmp_capabilities"})

    def read(self):
        """The next message qemu sends (a command's answer or an event)."""
        while b"\n" not in self.buf:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("qemu sent nothing in time")
            self.sock.settimeout(left)
            data = self.sock.recv(65536)
            if not data:
                raise RuntimeError("qemu closed the QMP socket")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def execute(self, cmd):
        self.sock.sendall(json.dumps(cmd).encode() + b"\n")
        while True:
            msg = self.read()
            if "event" in msg:
                self.events.append(msg)
            elif "error" in msg:
                raise RuntimeError("%s: %s" % (cmd.get("execute"), msg["error"]))
            elif "return" in msg:
                return msg

    def wait(self, name, device):
        def match(msg):
            if msg.get("event") != name:
                return False
            return device is None or msg.get("data", {}).get("device") == device

        while True:
            for i, msg in enumerate(self.events):
                if match(msg):
                    return self.events.pop(i)
            self.events.append(self.read())


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    timeout = float(os.environ.get("QMP_TIMEOUT", "60"))
    try:
        qmp = Qmp(sys.argv[1], timeout)
        for step in sys.argv[2:]:
            if step.startswith("wait:"):
                parts = step.split(":")
                msg = qmp.wait(parts[1], parts[2] if len(parts) > 2 else None)
            else:
                msg = qmp.execute(json.loads(step))
            print(json.dumps(msg), flush=True)
    except (OSError, RuntimeError, ValueError) as e:
        print("qmp: %s" % e, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
