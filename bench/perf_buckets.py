#!/usr/bin/env python3
# The agent's perf samples in buckets (bench/agent_perf.sh): by the first known
# function on each stack, split into seconds with a flush (more than 20
# samples) and the others.
import collections,re,sys
# usage: perf_buckets.py PERF_SCRIPT_OUTPUT HZ (perf script -F time,ip,sym)
path=sys.argv[1]; hz=float(sys.argv[2]); f=path
stacks=[];cur=None;t=None
for line in open(path):
    s=line.strip()
    if re.match(r'^\d+\.\d+:$', s):
        if cur is not None: stacks.append((t,cur))
        t=int(float(s[:-1])); cur=[]; continue
    if s and cur is not None:
        parts=s.split(None,1)
        cur.append((parts[1] if len(parts)>1 else parts[0]).split('+')[0].replace(' (inlined)',''))
if cur is not None: stacks.append((t,cur))
per=collections.Counter(t for t,_ in stacks)
span=max(per)-min(per)+1
flush={k for k,v in per.items() if v>20}
# a flush may spill into the next second
flush|={k+1 for k in flush if per.get(k+1,0)>5}
rules=[
 ('ksyms_load','kernel symbols: all of /proc/kallsyms (first non-core address, once)'),
 ('kallsyms_expand','kernel symbols: all of /proc/kallsyms (first non-core address, once)'),
 ('kraw_cmp','kernel symbols: all of /proc/kallsyms (first non-core address, once)'),
 ('s_show','kernel symbols: all of /proc/kallsyms (first non-core address, once)'),
 ('symdw_resolve','symbolizer: resolve addresses (libdw, symtab)'),
 ('build_funcs','symbolizer: sort symbol tables'),
 ('fdex','symbolizer: FDE index'),
 ('sym_elf_get','symbolizer: open binaries'),
 ('tdestroy','symbolizer: libdw trees (open/close)'),('tsearch','symbolizer: libdw trees (open/close)'),('tfind','symbolizer: libdw trees (open/close)'),
 ('sym_release','symbolizer: budget release'),
 ('sym_kernel_resolve','symbolizer: kernel addresses'),
 ('write_profile','profile: encode, gzip, write, fsync'),('store_write','profile: encode, gzip, write, fsync'),
 ('pprof','profile: encode, gzip, write, fsync'),('deflate','profile: encode, gzip, write, fsync'),
 ('builder_add','profile: build (locations, labels)'),('session_groups_emit','profile: build (locations, labels)'),
 ('sampler_drain_map','sampling: drain counts map'),('sampler_gc','sampling: stack GC'),
 ('jit_check','process: JIT perf-map probe per new process'),
 ('unwind_tables_forget','sampling: unwind set removed at exit (BPF map delete)'),
 ('session_unwind_process','sampling: unwind tables of a new process'),
 ('procs_on_fork','process: registry on fork'),('procs_on_exit','process: registry on exit'),
 ('procs_on_sampled','process: maps snapshot on first sample'),('read_parent','process: maps snapshot on first sample'),
 ('pg_attach','sampling: PostgreSQL attach/forget per process'),
 ('query_table_add','events: statement texts'),
 ('handle_ustack','events: unwound stacks'),
 ('handle_event','events: other'),
 ('malloc_trim','interval end: malloc_trim'),
 ('epoll_wait','wake-ups: epoll_wait, scheduling'),('ring_buffer__poll','wake-ups: epoll_wait, scheduling'),
 ('sampler_poll','wake-ups: poll loop'),('session_run','wake-ups: poll loop'),
 ('_int_malloc','malloc/free (unattributed)'),('_int_free','malloc/free (unattributed)'),('malloc','malloc/free (unattributed)'),('cfree','malloc/free (unattributed)'),('unlink_chunk','malloc/free (unattributed)'),
 ('proc_pid_status','process: /proc/PID/status reads'),
]
def cat(s):
    j=' '.join(s)
    for k,n in rules:
        if k in j: return n
    return 'other / unattributed'
ms=1000.0/hz
bg=collections.Counter(); fl=collections.Counter()
for t,s in stacks:
    (fl if t in flush else bg)[cat(s)]+=1
nfl=len([k for k in flush if per.get(k,0)>20])
print(f"{f}: {len(stacks)} samples at {hz:.0f} Hz = {len(stacks)*ms:.1f} ms over {span} s ({len(stacks)*ms/span/10:.3f}% of a core incl. perf's own cost); flushes: {nfl}")
print(f"  between flushes: {sum(bg.values())*ms:.1f} ms ({sum(bg.values())*ms/span*60:.1f} ms per 60 s)")
for k,v in bg.most_common(12): print(f"    {v*ms:7.1f} ms  {k}")
print(f"  flushes: {sum(fl.values())*ms:.1f} ms ({sum(fl.values())*ms/max(nfl,1):.1f} ms per flush)")
for k,v in fl.most_common(14): print(f"    {v*ms:7.1f} ms  {k}")
