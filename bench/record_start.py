#!/usr/bin/env python3
"""One run of bench/record-start.sh: when does `ebprof record` sample?

  record_start.py start EBPROF ARGS...
      runs EBPROF record ARGS... -v, reads its standard error as it comes
      and prints one line of key=value figures:
        setup_ms   from the start (just before exec) to its "sampling at"
                   line: programs loaded and verified, maps made, perf
                   events attached; the first sample follows within one
                   period (1/F s) on a busy target
        setup_cpu_ms  CPU (user + system, every thread: schedstat, in ns)
                   it had used by then
        wall_ms, cpu_ms  the same at its exit (the whole run)
  record_start.py insns PID
      "NAME VERIFIED_INSNS" of each BPF program PID holds (its fdinfo's
      prog_id, then bpf_prog_info from the kernel: bpftool 7.1 does not
      print verified_insns)
"""
import ctypes
import os
import re
import struct
import subprocess
import sys
import time


def cpu_ns(pid):
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return -1
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # exited meanwhile
    return total


SYS_BPF = 321  # x86_64
BPF_PROG_GET_FD_BY_ID = 13
BPF_OBJ_GET_INFO_BY_FD = 15
INFO_LEN = 232  # struct bpf_prog_info up to attach_btf_id (5.16+)


def prog_info(libc, prog_id):
    attr = ctypes.create_string_buffer(struct.pack("III", prog_id, 0, 0), 128)
    fd = libc.syscall(SYS_BPF, BPF_PROG_GET_FD_BY_ID, attr, 128)
    if fd < 0:
        return None
    info = ctypes.create_string_buffer(INFO_LEN)
    attr = ctypes.create_string_buffer(struct.pack("IIQ", fd, INFO_LEN, ctypes.addressof(info)), 128)
    ret = libc.syscall(SYS_BPF, BPF_OBJ_GET_INFO_BY_FD, attr, 128)
    os.close(fd)
    if ret < 0:
        return None
    name = info.raw[64:80].split(b"\0", 1)[0].decode()
    (verified,) = struct.unpack_from("I", info.raw, 216)
    return name, verified


def insns(pid):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    ids = set()
    fddir = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fddir):
        try:
            with open(f"{fddir}/{fd}") as f:
                m = re.search(r"^prog_id:\s*(\d+)", f.read(), re.M)
        except OSError:
            continue
        if m and int(m.group(1)):
            ids.add(int(m.group(1)))
    for i in sorted(ids):
        info = prog_info(libc, i)
        if info:
            print(*info)


def start(argv):
    t0 = time.monotonic()
    p = subprocess.Popen(argv + ["-v"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    setup_ms = setup_cpu = -1.0
    for line in p.stderr:
        if setup_ms < 0 and "sampling at" in line:
            setup_ms = (time.monotonic() - t0) * 1000
            setup_cpu = cpu_ns(p.pid) / 1e6
    # the whole run's CPU: the kernel's accounting of the reaped child
    _, status, ru = os.wait4(p.pid, 0)
    wall_ms = (time.monotonic() - t0) * 1000
    cpu_ms = (ru.ru_utime + ru.ru_stime) * 1000
    if status:
        sys.exit(f"record_start: {argv[0]} exited with status {status}")
    print(f"setup_ms={setup_ms:.1f} setup_cpu_ms={setup_cpu:.1f} wall_ms={wall_ms:.1f} cpu_ms={cpu_ms:.1f}")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "start":
        start(sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "insns":
        insns(int(sys.argv[2]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
