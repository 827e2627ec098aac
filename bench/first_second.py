#!/usr/bin/env python3
"""One run of bench/first-second.sh: the children's samples and readiness.

  first_second.py FX_OUT PSTACKS LOG
      FX_OUT   fixtures/fork_burst's output ("child=PID" lines)
      PSTACKS  `bench/pprofutil pstacks` of the run's profiles
      LOG      the agent's or record's stderr at -vv
  prints one line of key=value figures:
      children      children the fixture reported
      samples       samples carrying one of their pids
      chain_pct     share of them with main below child_burn
      unknown       samples whose user frames are all unnamed ([truncated]
                    markers and kernel frames aside)
      truncated_pct share with a [truncated: ...] frame
      without_chain children none of whose samples has the chain
      ready         children whose mappings and tables the log says were
                    in place ("pid N: mappings and unwind tables ready X
                    ms after its exec|fork")
      ready_ms      their X, comma-separated (median and spread are the
                    caller's)
"""
import re
import sys

ADDR = re.compile(r"^0x[0-9a-f]+$")
READY = re.compile(r"pid (\d+): mappings and unwind tables ready ([0-9.]+) ms after its")


def main():
    kids = [int(line.split("=", 1)[1]) for line in open(sys.argv[1]) if line.startswith("child=")]
    per = {k: [0, 0, 0, 0] for k in kids}  # samples, chain, unknown, truncated
    for line in open(sys.argv[2]):
        count, pid, frames = line.rstrip("\n").split("\t")
        if int(pid) not in per:
            continue
        n = int(count)
        fr = frames.split(";")  # root first
        user = [f for f in fr if not f.endswith("_[k]") and not f.startswith("[")]
        p = per[int(pid)]
        p[0] += n
        if "main" in fr and "child_burn" in fr[fr.index("main"):]:
            p[1] += n
        if not [f for f in user if not ADDR.match(f)]:
            p[2] += n
        if any(f.startswith("[truncated") for f in fr):
            p[3] += n
    ready = {}
    for line in open(sys.argv[3], errors="replace"):
        m = READY.search(line)
        if m and int(m.group(1)) in per:
            ready.setdefault(int(m.group(1)), float(m.group(2)))
    tot = [sum(p[i] for p in per.values()) for i in range(4)]
    print(
        f"children={len(kids)} samples={tot[0]} "
        f"chain_pct={100.0 * tot[1] / max(tot[0], 1):.1f} unknown={tot[2]} "
        f"truncated_pct={100.0 * tot[3] / max(tot[0], 1):.1f} "
        f"without_chain={sum(1 for p in per.values() if not p[1])} ready={len(ready)} "
        f"ready_ms={','.join(f'{v:.1f}' for v in ready.values()) or '-'}"
    )


if __name__ == "__main__":
    main()
