#!/usr/bin/env python3
"""perf's [unknown] frames of one binary, for bench/fde-names.sh.

  unknown_frames.py PERF_SCRIPT BINARY TEXT_START TEXT_OFFSET

PERF_SCRIPT: `perf script -F ip,sym,dso` output of a recording with call
chains; BINARY: the binary's path as perf names its dso; TEXT_START and
TEXT_OFFSET (hex): where its executable mapping starts in the recorded
processes and at which file offset (from /proc/PID/maps; the processes of
one postmaster share them), for an ip perf prints as the process's
address (perf 6.1 prints a frame in a dso at its ELF address, which the
PT_LOAD headers turn into a file offset). Prints key=value figures, every frame counted
once per sample: frames (of BINARY), unknown_frames (perf found no symbol:
"[unknown]"), unknown_addresses (distinct addresses among them),
unknown_functions (distinct FDEs of the binary's .eh_frame holding them,
as readelf lists them: the functions perf's one [unknown] stands for),
unknown_outside (addresses, or the byte before for return addresses, in no
FDE).
"""
import bisect
import re
import subprocess
import sys


def loads(binary):
    """[(vaddr, offset, filesz)] of the PT_LOAD headers."""
    out = []
    for line in subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            out.append((int(f[2], 16), int(f[1], 16), int(f[4], 16)))
    return out


def fdes(binary, segs):
    """Sorted [(start, end)] of .eh_frame's FDEs, file offsets."""
    out, eh = [], False
    for line in subprocess.run(["readelf", "-wN", "--debug-dump=frames", binary],
                               capture_output=True, text=True).stdout.splitlines():
        if line.startswith("Contents of the "):
            eh = line.startswith("Contents of the .eh_frame section")
        m = re.search(r" FDE .*pc=([0-9a-f]+)\.\.([0-9a-f]+)", line)
        if not eh or not m:
            continue
        s, e = int(m.group(1), 16), int(m.group(2), 16)
        for vaddr, off, size in segs:
            if vaddr <= s < vaddr + size and e > s:
                out.append((s - vaddr + off, e - vaddr + off))
    out.sort()
    return out


def main():
    path, binary = sys.argv[1], sys.argv[2]
    start, offset = int(sys.argv[3], 16), int(sys.argv[4], 16)
    segs = loads(binary)
    ranges = fdes(binary, segs)
    starts = [r[0] for r in ranges]

    def fde_of(off):
        i = bisect.bisect_right(starts, off) - 1
        return i if i >= 0 and off < ranges[i][1] else None

    frames = unknown = outside = 0
    addrs, funcs = set(), set()
    first = True  # the first frame of a sample is the sampled ip
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                first = True
                continue
            m = re.match(r"\s*([0-9a-f]+) (.*) \((.*)\)\s*$", line)
            if not m:
                continue
            ip, sym, dso = int(m.group(1), 16), m.group(2), m.group(3)
            leaf, first = first, False
            if dso != binary:
                continue
            frames += 1
            if sym != "[unknown]":
                continue
            unknown += 1
            off = ip - start + offset if ip >= start else None
            for vaddr, foff, size in segs if off is None else []:
                if vaddr <= ip < vaddr + size:
                    off = ip - vaddr + foff
            if off is None:
                outside += 1
                continue
            addrs.add(off)
            i = fde_of(off) if leaf else fde_of(off - 1)
            if i is None:
                outside += 1
            else:
                funcs.add(i)
    print(f"frames={frames} unknown_frames={unknown} unknown_addresses={len(addrs)} "
          f"unknown_functions={len(funcs)} unknown_outside={outside}")


if __name__ == "__main__":
    main()
