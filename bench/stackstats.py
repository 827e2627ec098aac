#!/usr/bin/env python3
"""Stack-quality figures and symbolizer agreement for bench/compare.sh.

  stackstats.py stats FORMAT FILE
      FORMAT: ebprof   "COUNT<TAB>root;...;leaf" (bench/pprofutil stacks)
              folded   "comm;root;...;leaf COUNT" (bcc profile -f; '-' separators
                       between user and kernel frames are dropped; only lines
                       of comm postgres are counted)
              perf     `perf script` output (one sample per block)
              bpftrace the printed map of `@[kstack, ustack] = count()`
      prints: samples=N leaf_symbolized_pct=P reaches_main_pct=P median_depth=D
              frames_symbolized_pct=P

  stackstats.py table RAW_TSV PHASE [bcc:STATUS]
  stackstats.py raw RAW_TSV
  stackstats.py pair RAW_TSV PHASE A B
      the markdown tables of bench/compare.sh from its raw runs (medians and
      ranges per configuration; TPS ratios to the neighbouring baselines).

  stackstats.py agree NAMES ADDR2LINE_OUT EU_ADDR2LINE_OUT [SYMBOLS]
      NAMES from bench/symbench; the two others from `addr2line -a -f -i` and
      `eu-addr2line -a -f -i` on the same addresses. Prints key=value figures
      and a few disagreements. SYMBOLS (`readelf -sW BINARY`)
      checks the names only one side gives: is the address inside that
      function symbol's extent [st_value, st_value + st_size)?

The definitions are the same for every tool. A stack is the sampled thread's
kernel frames followed by its user frames; a frame is one physical frame (the
sampled instruction pointer or one return address; inlined functions that a
tool expands are not counted separately).
  - symbolized frame: it has a function name; "[unknown]", an empty name, a
    bare hex address and pseudo-frames such as "[lost user stack]" or
    "[Missed User Stack]" are not names.
  - leaf symbolized: the innermost frame of the stack is symbolized.
  - reaches main: some frame is the function `main` (for these processes,
    PostgreSQL's main in /usr/lib/postgresql/*/bin/postgres).
  - depth: the number of frames of the stack; its median over samples.
Every figure is weighted by sample count.
"""
import re
import sys

HEX = re.compile(r"^(0x)?[0-9a-fA-F]+$")
OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$|\+\d+$")


def frame_name(raw):
    """Function name of a frame as a tool prints it, or None."""
    name = raw.strip()
    if name.endswith("_[k]"):
        name = name[:-4]
    name = OFFSET.sub("", name)
    if not name or name.startswith("[") or HEX.match(name):
        return None
    return name


def parse_ebprof(path):
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            count, _, frames = line.partition("\t")
            # root first -> leaf first
            yield int(count), list(reversed(frames.split(";"))) if frames else []


def parse_folded(path):
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            parts = stack.split(";")
            if parts[0] != "postgres":  # bcc profiles every process
                continue
            frames = [x for x in parts[1:] if x != "-"]
            yield int(count), list(reversed(frames))


def parse_perf(path):
    # perf script: a header line ("comm pid time: period event:"), then one
    # line per frame "\t ADDR SYMBOL+OFF (DSO)", leaf first, blank line.
    frames = None
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                if frames is not None:
                    yield 1, frames
                frames = None
            elif line[0] in " \t":
                if frames is None:
                    continue
                parts = line.strip().split(None, 1)
                sym = parts[1] if len(parts) > 1 else ""
                sym = re.sub(r"\s*\([^()]*\)\s*$", "", sym)  # the DSO
                if sym.endswith("(inlined)"):
                    continue  # an inline expansion, not a physical frame
                frames.append(sym)
            else:
                if frames is not None:
                    yield 1, frames
                frames = []
    if frames is not None:
        yield 1, frames


def parse_bpftrace(path):
    # @[
    #     kframe+off      (leaf first; none for samples in user mode)
    # ,
    #     uframe+off      (leaf first)
    # ]: COUNT
    frames = None
    with open(path, errors="replace") as f:
        for line in f:
            s = line.strip()
            if s.startswith("@["):
                frames = []
                rest = s[2:].strip().lstrip(",").strip()
                if rest:
                    frames.append(rest)
            elif frames is None:
                continue
            elif s.startswith("]:"):
                yield int(s[2:].strip()), frames
                frames = None
            elif s in (",", ""):
                continue
            else:
                frames.append(s.rstrip(",").strip())


PARSERS = {"ebprof": parse_ebprof, "folded": parse_folded, "perf": parse_perf,
           "bpftrace": parse_bpftrace}


def stats(fmt, path):
    total = leaf = main = frames_all = frames_named = 0
    depths = {}
    for count, frames in PARSERS[fmt](path):
        names = [frame_name(x) for x in frames]
        total += count
        if names and names[0]:
            leaf += count
        if "main" in names:
            main += count
        depths[len(names)] = depths.get(len(names), 0) + count
        frames_all += count * len(names)
        frames_named += count * sum(1 for n in names if n)
    median = 0
    seen = 0
    for d in sorted(depths):
        seen += depths[d]
        if seen * 2 >= total:
            median = d
            break
    pct = lambda a, b: 100.0 * a / b if b else 0.0
    print("samples=%d leaf_symbolized_pct=%.1f reaches_main_pct=%.1f median_depth=%d "
          "frames_symbolized_pct=%.1f" % (total, pct(leaf, total), pct(main, total), median,
                                          pct(frames_named, frames_all)))


def read_addr2line(path):
    """Innermost function name per address of `[eu-]addr2line -a -f -i`."""
    out = []
    addr_line = re.compile(r"^0x[0-9a-f]+$")
    with open(path, errors="replace") as f:
        lines = [l.rstrip("\n") for l in f]
    i = 0
    while i < len(lines):
        if addr_line.match(lines[i]):
            name = lines[i + 1] if i + 1 < len(lines) else "??"
            out.append(name if name and name != "??" else None)
            i += 2
        else:
            i += 1
    return out


def read_symbols(path):
    """name -> list of (start, size) of FUNC symbols in readelf -sW output."""
    syms = {}
    if not path:
        return syms
    with open(path, errors="replace") as f:
        for line in f:
            p = line.split()
            if len(p) >= 8 and p[3] == "FUNC" and p[0].endswith(":"):
                try:
                    start, size = int(p[1], 16), int(p[2], 0)
                except ValueError:
                    continue
                syms.setdefault(p[7].split("@")[0], []).append((start, size))
    return syms


def inside(syms, name, vaddr):
    return any(s <= vaddr < s + n for s, n in syms.get(name, []))


def agree(names_path, a2l_path, eu_path, symbols_path=None):
    syms = read_symbols(symbols_path)
    ours = []
    with open(names_path) as f:
        for line in f:
            off, vaddr, inner, _outer = line.rstrip("\n").split("\t")
            ours.append((off, vaddr, None if inner == "??" else inner))
    for label, path in (("addr2line", a2l_path), ("eu_addr2line", eu_path)):
        theirs = read_addr2line(path)
        if len(theirs) != len(ours):
            print("%s_error=answers:%d,addresses:%d" % (label, len(theirs), len(ours)))
            continue
        same = both_none = differ = only_ours = only_theirs = theirs_outside = 0
        examples = []
        for (off, vaddr, a), b in zip(ours, theirs):
            if a == b:
                if a is None:
                    both_none += 1
                else:
                    same += 1
                continue
            if a and b:
                differ += 1
            elif a:
                only_ours += 1
            else:
                only_theirs += 1
                if syms and not inside(syms, b, int(vaddr, 16)):
                    theirs_outside += 1
            if len(examples) < 6:
                examples.append("%s:ebprof=%s,%s=%s" % (vaddr, a or "??", label, b or "??"))
        n = len(ours)
        print("%s_agree_pct=%.1f %s_same_name=%d %s_both_unknown=%d %s_different_name=%d "
              "%s_only_ebprof_named=%d %s_only_%s_named=%d" % (
                  label, 100.0 * (same + both_none) / n, label, same, label, both_none, label,
                  differ, label, only_ours, label, label, only_theirs))
        if syms:
            print("%s_only_%s_named_outside_symbol=%d" % (label, label, theirs_outside))
        print("%s_examples=%s" % (label, " ".join(examples) or "none"))


ORDER = ["baseline", "agent", "record", "perf", "perf_dwarf", "bpftrace", "bpftrace_default", "bcc"]
LABEL = {
    "baseline": "no profiler (baseline)",
    "agent": "ebprof agent, 19 Hz",
    "record": "ebprof record, 99 Hz",
    "perf": "perf record -F 99 -g + perf script",
    "perf_dwarf": "perf record -F 99 --call-graph dwarf + perf script",
    "bpftrace": "bpftrace profile:hz:99 kstack+ustack (user symbol cache on)",
    "bpftrace_default": "bpftrace, the same on its defaults (1 run, not interleaved; no TPS)",
    "bcc": "bcc profile-bpfcc -F 99 -f",
}


def read_raw(path):
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        rows = [dict(zip(head, l.rstrip("\n").split("\t"))) for l in f if l.strip()]
    # ratio to the mean of the baselines before and after the run's round
    base = {}
    for r in rows:
        if r["config"] == "baseline" and r["tps"] not in ("-", "", "0"):
            base[(r["phase"], int(r["round"]))] = float(r["tps"])
    for r in rows:
        r["tps_ratio"] = "-"
        if r["config"] == "baseline" or r["status"] != "ok":
            continue
        rd = int(r["round"])
        around = [base[k] for k in ((r["phase"], rd), (r["phase"], rd + 1)) if k in base]
        if around and r["tps"] not in ("-", ""):
            r["tps_ratio"] = "%.3f" % (float(r["tps"]) / (sum(around) / len(around)))
    return head, rows


def med(vals):
    v = sorted(vals)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def cell(rows, key, fmt, scale=1.0):
    vals = [float(r[key]) * scale for r in rows if r.get(key) not in (None, "", "-")]
    if not vals:
        return "–"
    m = fmt % med(vals)
    if len(vals) == 1:
        return m
    return "%s (%s–%s)" % (m, fmt % min(vals), fmt % max(vals))


def table(path, phase, extra):
    _, rows = read_raw(path)
    status = dict(x.split(":", 1) for x in extra)
    print("| configuration | runs ok | pgbench TPS | TPS / baseline | CPU, % of one core | "
          "peak RSS, MiB | output, KiB per min | end of sampling → usable profile, ms | "
          "samples per run | leaf symbolized, % | reaches main, % | median depth |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in ORDER:
        rs = [r for r in rows if r["phase"] == phase and r["config"] == c]
        if not rs:
            if c in status:
                print("| %s | 0 | **failed**: %s | | | | | | | | | |" % (LABEL[c], status[c]))
            continue
        ok = [r for r in rs if r["status"] == "ok"]
        if not ok:
            # runs that started and stopped but gave no usable profile still
            # have their cost figures
            ran = [r for r in rs if r.get("cpu_pct") not in (None, "", "-")]
            failed = "**failed**: %s" % rs[0]["note"].replace("|", "/")
            if not ran:
                print("| %s | 0 of %d | %s | | | | | | | | | |" % (LABEL[c], len(rs), failed))
                continue
            print("| %s | 0 of %d | %s | – | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                LABEL[c], len(rs), failed, cell(ran, "cpu_pct", "%.2f"),
                cell(ran, "rss_kb", "%.1f", 1 / 1024.0), cell(ran, "out_kib_per_min", "%.0f"),
                cell(ran, "stop_to_usable_ms", "%.0f"), cell(ran, "samples", "%.0f"),
                cell(ran, "leaf_symbolized_pct", "%.1f"), cell(ran, "reaches_main_pct", "%.1f"),
                cell(ran, "median_depth", "%.0f")))
            continue
        if c == "baseline":
            print("| %s | %d | %s | 1 | – | – | – | – | – | – | – | – |" % (
                LABEL[c], len(ok), cell(ok, "tps", "%.0f")))
            continue
        print("| %s | %d of %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            LABEL[c], len(ok), len(rs), cell(ok, "tps", "%.0f"), cell(ok, "tps_ratio", "%.3f"),
            cell(ok, "cpu_pct", "%.2f"), cell(ok, "rss_kb", "%.1f", 1 / 1024.0),
            cell(ok, "out_kib_per_min", "%.0f"), cell(ok, "stop_to_usable_ms", "%.0f"),
            cell(ok, "samples", "%.0f"), cell(ok, "leaf_symbolized_pct", "%.1f"),
            cell(ok, "reaches_main_pct", "%.1f"), cell(ok, "median_depth", "%.0f")))


def pair(path, phase, a, b):
    """ebprof's configuration a against the peer b: the cost and stack
    truth figures side by side, medians over their ok runs, and b / a."""
    _, rows = read_raw(path)
    ra = [r for r in rows if r["phase"] == phase and r["config"] == a and r["status"] == "ok"]
    rb = [r for r in rows if r["phase"] == phase and r["config"] == b and r["status"] == "ok"]
    if not ra or not rb:
        print("(no ok runs of %s or %s in phase -%s: see the raw runs)" % (a, b, phase))
        return
    print("| figure | %s | %s | %s / %s |" % (LABEL[a], LABEL[b], b, a))
    print("| --- | --- | --- | --- |")

    def figure(name, key, fmt, scale=1.0, inverse=False):
        va = [float(r[key]) * scale for r in ra if r.get(key) not in (None, "", "-")]
        vb = [float(r[key]) * scale for r in rb if r.get(key) not in (None, "", "-")]
        if inverse:
            va = [100.0 - v for v in va]
            vb = [100.0 - v for v in vb]
        ma, mb = (med(va) if va else None), (med(vb) if vb else None)
        ratio = "%.2f" % (mb / ma) if ma and mb is not None else "–"

        def one(vals, m):
            if m is None:
                return "–"
            if len(vals) == 1:
                return fmt % m
            return "%s (%s–%s)" % (fmt % m, fmt % min(vals), fmt % max(vals))
        print("| %s | %s | %s | %s |" % (name, one(va, ma), one(vb, mb), ratio))

    print("| runs ok | %d | %d | |" % (len(ra), len(rb)))
    print("| TPS / baseline | %s | %s | |" % (cell(ra, "tps_ratio", "%.3f"),
                                              cell(rb, "tps_ratio", "%.3f")))
    figure("CPU, % of one core (perf: record + script)", "cpu_pct", "%.2f")
    figure("peak RSS, MiB", "rss_kb", "%.1f", 1 / 1024.0)
    figure("output, KiB per minute of sampling", "out_kib_per_min", "%.0f")
    figure("end of sampling → usable profile, ms", "stop_to_usable_ms", "%.0f")
    figure("samples per run", "samples", "%.0f")
    figure("stacks reaching main, %", "reaches_main_pct", "%.1f")
    figure("stacks cut (not reaching main), %", "reaches_main_pct", "%.1f", inverse=True)
    figure("leaf symbolized, %", "leaf_symbolized_pct", "%.1f")
    figure("median depth, frames", "median_depth", "%.0f")


def raw(path):
    head, rows = read_raw(path)
    cols = head[:5] + ["tps_ratio"] + head[5:]
    print("| " + " | ".join(cols) + " |")
    print("|" + " --- |" * len(cols))
    for r in rows:
        print("| " + " | ".join(r.get(c, "").replace("|", "/") for c in cols) + " |")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "stats" and sys.argv[2] in PARSERS:
        stats(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == "table":
        table(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) == 6 and sys.argv[1] == "pair":
        pair(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "raw":
        raw(sys.argv[2])
    elif len(sys.argv) in (5, 6) and sys.argv[1] == "agree":
        agree(*sys.argv[2:])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
