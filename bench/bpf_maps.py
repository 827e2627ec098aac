#!/usr/bin/env python3
"""The BPF maps and programs a process holds, from bpftool (run as root).

  bpf_maps.py PID
      one line per map: "map ID TYPE NAME MEMLOCK_BYTES MAX_ENTRIES", the
      maps of its descriptors, of its programs and inside its maps of maps
      (unwind tables); then one line per program: "prog ID TYPE NAME
      MEMLOCK_BYTES". bpftool's memlock: a hash map allocated as used
      counts its buckets and the entries it holds.
"""
import glob
import json
import subprocess
import sys


def bpftool(*args):
    return json.loads(subprocess.run(["bpftool", "-j"] + list(args), capture_output=True,
                                     text=True, check=True).stdout or "[]")


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    pid = sys.argv[1]
    maps, progs = bpftool("map", "show"), bpftool("prog", "show")
    mine_maps, mine_progs = set(), set()
    for f in glob.glob("/proc/%s/fdinfo/*" % pid):
        try:
            for line in open(f):
                if line.startswith("map_id:"):
                    mine_maps.add(int(line.split()[1]))
                elif line.startswith("prog_id:"):
                    mine_progs.add(int(line.split()[1]))
        except OSError:
            pass
    by_id = {m["id"]: m for m in maps}
    for p in progs:
        if p["id"] in mine_progs:
            mine_maps.update(p.get("map_ids", []))
    for mid in list(mine_maps):
        m = by_id.get(mid)
        if not m or m.get("type") not in ("array_of_maps", "hash_of_maps"):
            continue
        try:
            for e in bpftool("map", "dump", "id", str(mid)):
                v = e.get("inner_map_id", e.get("value"))
                if isinstance(v, list):  # the inner map's id, raw bytes (LE)
                    v = int.from_bytes(bytes(int(b, 16) for b in v), "little")
                if isinstance(v, int) and v:
                    mine_maps.add(v)
        except (subprocess.CalledProcessError, ValueError):
            pass
    for i in sorted(mine_maps):
        m = by_id.get(i)
        if m:
            print("map %d %s %s %d %d" % (i, m.get("type", "?"), m.get("name") or "-",
                                          m.get("bytes_memlock", 0), m.get("max_entries", 0)))
    for p in progs:
        if p["id"] in mine_progs:
            print("prog %d %s %s %d" % (p["id"], p.get("type", "?"), p.get("name") or "-",
                                        p.get("bytes_memlock", 0)))


if __name__ == "__main__":
    main()
