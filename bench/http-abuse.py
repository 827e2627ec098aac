#!/usr/bin/env python3
# Driver of bench/http-abuse.sh: against the agent's HTTP API on PORT, hold
# IDLE connections open (reopening those the server closes), send a flood of
# malformed requests from FLOODERS threads, and time PROBES well-formed
# GET /metrics requests spread over the run. Prints "key value" lines.
import os, random, socket, statistics, sys, threading, time

port = int(sys.argv[1])
agent = int(sys.argv[2])
IDLE = int(os.environ.get("IDLE", 500))
PROBES = int(os.environ.get("PROBES", 200))
FLOODERS = int(os.environ.get("FLOODERS", 4))
stop = threading.Event()
sent = [0]
lock = threading.Lock()

def conn():
    s = socket.socket()
    s.settimeout(2)
    s.connect(("127.0.0.1", port))
    return s

def malformed(i, rng):
    k = i % 8
    if k == 0:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 2048)))
    if k == 1:
        return b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n"
    if k == 2:
        return b"FOO /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    if k == 3:
        return (b"POST /profile/cpu HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 500\r\n\r\n{\"prof")
    if k == 4:
        return (b"POST /profile/cpu HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 3\r\n\r\n{\"profiler\": {\"Perf\": null}}")
    if k == 5:
        return b"GET /" + b"u" * 20000 + b" HTTP/1.1\r\n\r\n"
    if k == 6:
        return b"GET /healthz HTTP/1.1\r\n" + b"".join(b"H%d: v\r\n" % j for j in range(3000)) + b"\r\n"
    return (b"POST /profile/cpu HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"fffffffffffffffff\r\nxx\r\n")

def flooder(n):
    rng = random.Random(n)
    i = n
    while not stop.is_set():
        try:
            s = conn()
            s.sendall(malformed(i, rng))
            if i % 3:
                s.shutdown(socket.SHUT_WR)
                s.settimeout(1)
                s.recv(256)
            s.close()
        except OSError:
            pass
        with lock:
            sent[0] += 1
        i += FLOODERS

def holder(held):
    # Keep IDLE connections open: the server closes silent ones, reopen them.
    socks = []
    while not stop.is_set():
        socks = [s for s in socks if s.fileno() >= 0]
        alive = []
        for s in socks:
            try:
                s.setblocking(False)
                if s.recv(1) == b"":
                    s.close()
                    continue
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                continue
            alive.append(s)
        socks = alive
        while len(socks) < IDLE and not stop.is_set():
            try:
                socks.append(conn())
            except OSError:
                break
        held.append(len(socks))
        time.sleep(0.2)
    for s in socks:
        s.close()

def probe():
    t0 = time.monotonic()
    s = conn()
    s.settimeout(10)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    s.close()
    return time.monotonic() - t0, data.split(b" ", 2)[1] if data else b"none"

def status(key):
    for line in open("/proc/%d/status" % agent):
        if line.startswith(key):
            return line.split()[1]

quiet = [probe()[0] for _ in range(20)]
print("quiet_median_ms %.2f" % (statistics.median(quiet) * 1000))
print("quiet_max_ms %.2f" % (max(quiet) * 1000))
print("threads_before %s" % status("Threads:"))
print("rss_before_kib %s" % status("VmRSS:"))
held = []
ths = [threading.Thread(target=holder, args=(held,))]
ths += [threading.Thread(target=flooder, args=(n,)) for n in range(FLOODERS)]
for t in ths:
    t.start()
deadline = time.monotonic() + 10
while (not held or held[-1] < IDLE) and time.monotonic() < deadline:
    time.sleep(0.1)
lat, bad, threads, rss = [], 0, [], []
for i in range(PROBES):
    try:
        dt, st = probe()
        if st == b"200":
            lat.append(dt)
        else:
            bad += 1
    except (OSError, IndexError):
        bad += 1
    threads.append(int(status("Threads:")))
    rss.append(int(status("VmRSS:")))
    time.sleep(0.05)
stop.set()
for t in ths:
    t.join()
time.sleep(7)  # past the server's idle timeout
print("rss_after_kib %s" % status("VmRSS:"))
print("threads_after %s" % status("Threads:"))
print("probes %d" % PROBES)
print("probes_failed %d" % bad)
lat = lat or [float("nan")]
print("median_ms %.2f" % (statistics.median(lat) * 1000))
print("p99_ms %.2f" % (sorted(lat)[max(int(len(lat) * 0.99) - 1, 0)] * 1000))
print("max_ms %.2f" % (max(lat) * 1000))
print("malformed_sent %d" % sent[0])
print("held_min %d" % min(held[len(held) // 4:]))
print("threads_max %d" % max(threads))
print("rss_max_kib %d" % max(rss))
