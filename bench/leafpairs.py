#!/usr/bin/env python3
"""(leaf, caller) pairs of ebprof's user stacks checked against perf's.

  leafpairs.py EBPROF_USTACKS PERF_SCRIPT [COMM [MIN]]

EBPROF_USTACKS: `bench/pprofutil ustacks FILE` ("COUNT<TAB>PID<TAB>root;...;leaf",
user frames only); PERF_SCRIPT: `perf script` of `perf record --call-graph
dwarf` on the same load, at the same time. Only samples of processes named
COMM (default postgres) count on the perf side.

A pair is the leaf function of a user stack and the function that called it
(the next frame out). DWARF unwinding (perf) gives the true caller; a pair
of ours that perf never produced is a caller we got wrong (frame pointers
skip the caller of a leaf that sets up no frame). Samples whose leaf or
caller has no name on our side (a bare address: Debian's PostgreSQL has
only .dynsym) are left out, as are perf samples with an unnamed frame.
Names are compared without compiler suffixes (.isra.0, .part.0, ...).

Sampling leaves rare pairs out of perf's set by chance, so a pair of ours
is right when perf saw that caller call that function anywhere in a stack
(not only with the callee as the leaf: a call perf caught a few frames up
is as real), and the figure that counts is over our samples whose leaf perf
sampled at least MIN times (default 20). Frame pointers' wrong callers stay
wrong: the caller they skip is always between the two, so the pair is never
adjacent in a DWARF stack.

Prints: samples=N (ours, with a named pair and a leaf perf knows) wrong=N
wrong_pct=P all_samples=N all_wrong_pct=P (every named pair) perf_samples=N
perf_pairs=N, then the ten pairs of ours perf never produced, most first.
"""
import collections
import re
import sys

SUFFIX = re.compile(r"\.(isra|part|constprop|cold|lto_priv)(\.\d+)*")
OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")
HEX = re.compile(r"^(0x)?[0-9a-fA-F]+$")


def norm(name):
    name = OFFSET.sub("", name.strip())
    if not name or name.startswith("[") or HEX.match(name):
        return None
    return SUFFIX.sub("", name)


def perf_pairs(path, comm):
    """Pairs (leaf, caller) of perf's samples of comm and their count, and
    every (callee, caller) edge of those stacks."""
    pairs = collections.Counter()
    edges = set()
    total = 0
    frames, keep = None, False

    def done():
        nonlocal total
        if frames is not None and keep:
            user = frames
            if len(user) >= 2 and user[0] and user[1]:
                pairs[(user[0], user[1])] += 1
                total += 1
            for callee, caller in zip(user, user[1:]):
                if callee and caller:
                    edges.add((callee, caller))

    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                done()
                frames = None
            elif line[0] in " \t":
                if frames is None:
                    continue
                parts = line.strip().split(None, 1)
                rest = parts[1] if len(parts) > 1 else ""
                m = re.match(r"(.*?)\s*\(([^()]*)\)\s*$", rest)
                sym, dso = (m.group(1), m.group(2)) if m else (rest, "")
                if "kernel.kallsyms" in dso or sym.endswith("(inlined)"):
                    continue
                frames.append(norm(sym))
            else:
                done()
                frames = []
                keep = line.split(None, 1)[0].startswith(comm) if line.strip() else False
    done()
    return pairs, edges, total


def ours(path):
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3 or not parts[2]:
                continue
            frames = [norm(x) for x in reversed(parts[2].split(";"))]
            yield int(parts[0]), frames


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    comm = sys.argv[3] if len(sys.argv) > 3 else "postgres"
    least = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    perf, edges, perf_total = perf_pairs(sys.argv[2], comm)
    leaves = collections.Counter()
    for (leaf, _), c in perf.items():
        leaves[leaf] += c
    wrong = collections.Counter()
    n = bad = n_all = bad_all = 0
    for count, frames in ours(sys.argv[1]):
        if len(frames) < 2 or not frames[0] or not frames[1]:
            continue
        miss = (frames[0], frames[1]) not in edges
        n_all += count
        bad_all += count if miss else 0
        if leaves[frames[0]] < least:
            continue
        n += count
        if miss:
            bad += count
            wrong[(frames[0], frames[1])] += count
    print("samples=%d wrong=%d wrong_pct=%.1f all_samples=%d all_wrong_pct=%.1f "
          "perf_samples=%d perf_pairs=%d" %
          (n, bad, 100.0 * bad / n if n else 0, n_all,
           100.0 * bad_all / n_all if n_all else 0, perf_total, len(perf)))
    try:
        for (leaf, caller), c in wrong.most_common(10):
            print("  %5d  %s <- %s" % (c, leaf, caller))
    except BrokenPipeError:
        pass


if __name__ == "__main__":
    main()
