#!/usr/bin/python3
"""bench/egress: vivarium-egress beside Debian's tinyproxy, on loopback.

usage: run.py PATH/TO/vivarium-egress PATH/TO/egress-load

What is compared is the proxy, so the method keeps everything else equal and
out of the proxy's way (the method is printed with the figures):

  - pinning: the proxy under test (ours or tinyproxy) runs alone, among this
    benchmark's processes, on PROXY_CPU; the load generator and the origin
    share LOAD_CPU.  The direct baseline uses the same pinning for the
    generator and the origin.  Our proxy runs one event loop (it picks that
    itself when it may use one CPU); tinyproxy spawns a thread per client.
  - the load generator (egress-load rate) is one epoll thread driving
    CLIENTS connections, registered once, edge-triggered; its own CPU time
    and the origin's are reported so that a saturated load core shows.
  - tinyproxy gets a fair configuration: MaxClients far above the clients
    in flight, and logging per connection (LogLevel Connect) like ours;
    both log to files on tmpfs, as tinyproxy fsync()s every line.
  - every process of the benchmark runs at nice BENCH_NICE (-10 as root):
    on a machine shared with other work, pinning alone does not keep a
    busy process of someone else off the proxy's core.
  - ROUNDS rounds interleave the targets, rotating their order, so that
    load from elsewhere on the machine hits them alike; medians are
    compared, the spread (min-max over rounds) is shown.
  - per round, the proxy's CPU time (user + system, all threads, from
    /proc) divided by the tunnels it carried: its cost per tunnel, which
    does not depend on how much of its core the scheduler gave it.

  - each target has its own origin process (same code, same core), so the
    TIME_WAIT sockets one proxy leaves behind do not slow another's
    connect(2) to the same address and port.
  - as root the whole run happens in a network namespace of its own with
    only loopback in it (BENCH_NETNS=0 turns that off): the host's
    firewall rules and connection tracking, which come and go with the
    containers Podman runs, and other programs' sockets stay out of the
    figures.  Every target pays the same kernel path.
  - a reference relay runs beside them when Debian's haproxy is installed:
    haproxy in plain TCP mode (one thread, splice, no logging) relaying to
    its own origin.  It does less per tunnel than either proxy (no CONNECT
    to parse, no 200 to send, no policy, no log line), so its figures show
    what the best relay we know of reaches on this machine: a bound the
    targets can be read against.

Measured, each against its origin on 127.0.0.1:
  - CONNECT tunnels set up per second with CLIENTS concurrent clients (one
    byte round trip through each tunnel, then an abortive close), and the
    same loop straight to the origin;
  - bulk throughput pulling BULK_BYTES through one tunnel, and directly;
  - memory per idle tunnel: the proxy's RSS with IDLE_N tunnels open minus
    its RSS before, divided by IDLE_N.
Everything is bounded: RATE_SECS per rate run, BULK_BYTES per bulk run,
IDLE_N tunnels, ROUNDS rounds.  VIVARIUM_BENCH_SHORT=1 (the short mode
make test runs) makes each of them tiny, to show that the benchmark runs.
"""
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

PROXY = os.path.abspath(sys.argv[1])
LOAD = os.path.abspath(sys.argv[2])
SHORT = os.environ.get("VIVARIUM_BENCH_SHORT") == "1"
RATE_SECS = float(os.environ.get("RATE_SECS", "0.5" if SHORT else "3"))
CLIENTS = int(os.environ.get("CLIENTS", "16" if SHORT else "64"))
BULK_BYTES = int(os.environ.get("BULK_BYTES", str(32 << 20 if SHORT else 1 << 30)))
IDLE_N = int(os.environ.get("IDLE_N", "100" if SHORT else "1000"))
ROUNDS = int(os.environ.get("ROUNDS", "1" if SHORT else "5"))
NCPU = len(os.sched_getaffinity(0))
PROXY_CPU = os.environ.get("PROXY_CPU", "0" if NCPU >= 2 else "")
LOAD_CPU = os.environ.get("LOAD_CPU", "1" if NCPU >= 2 else "")
# Both proxies log to files here.  tinyproxy fsync()s every log line; on
# tmpfs that costs a system call, not a wait for the disk, like our write.
SHM = "/dev/shm" if os.path.isdir("/dev/shm") else None
TMP = tempfile.mkdtemp(prefix="egress-bench-", dir=SHM)
# Every process of the benchmark (both proxies, the generator, the origins)
# runs at this nice level, so that other work on a shared machine takes
# less of the pinned cores from them; -10 (as root) for the ~70 s it runs.
NICE = int(os.environ.get("BENCH_NICE", "-10" if os.geteuid() == 0 else "0"))
TINY_LOGLEVEL = os.environ.get("TINY_LOGLEVEL", "Connect")
# BASELINE=path/to/another/vivarium-egress adds it as a fourth target, run
# the same way, for a before/after comparison under the same conditions.
BASELINE = os.environ.get("BASELINE")
HZ = os.sysconf("SC_CLK_TCK")
# The reference relay, when installed (/usr/sbin may be off a user's PATH).
HAPROXY = shutil.which("haproxy") or (
    "/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy") else None)


def pin(cpu):
    pre = ["nice", "-n", str(NICE)] if NICE else []
    return pre + (["taskset", "-c", cpu] if cpu else [])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, proc, what):
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    sys.exit("bench: %s did not start" % what)


def rss_kb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid):
    """User + system seconds of a process, all its threads."""
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / HZ


def core_ticks(cpu):
    """(busy, total) jiffies of one CPU from /proc/stat: busy counts user,
    system, irq and softirq time of every process, so it includes the
    loopback packet processing that is not charged to any process."""
    if not cpu:
        return (0, 0)
    for line in open("/proc/stat"):
        f = line.split()
        if f[0] == "cpu" + cpu:
            v = [int(x) for x in f[1:]]
            return (sum(v[:8]) - v[3] - v[4], sum(v[:8]))
    return (0, 0)


def core_util(before, after):
    b, t = after[0] - before[0], after[1] - before[1]
    return b / t if t > 0 else 0.0


def load(*args):
    out = subprocess.run(pin(LOAD_CPU) + [LOAD] + [str(a) for a in args],
                         capture_output=True, text=True, timeout=600)
    if out.returncode not in (0, 1):
        sys.exit("bench: egress-load %s failed: %s" % (args, out.stderr))
    return out.stdout.split()


def loadavg():
    return os.getloadavg()[0]


class Target:
    def __init__(self, name, port, proc):
        self.name, self.port, self.proc = name, port, proc
        self.rate, self.cpu_us, self.proxy_util, self.load_util = [], [], [], []
        self.p50, self.p99, self.bulk, self.bulk_cpu = [], [], [], []
        self.bulk_proxy_util, self.bulk_load_util = [], []
        self.pcore, self.lcore, self.bulk_pcore, self.bulk_lcore = [], [], [], []
        self.errors = 0
        self.tunnels = 0
        self.idle = None


def rate_run(t):
    echo, origin = t.echo, t.origin
    t0 = time.monotonic()
    p0 = cpu_s(t.proc.pid) if t.proc else 0
    o0 = cpu_s(origin.pid)
    c0 = core_ticks(PROXY_CPU), core_ticks(LOAD_CPU)
    f = load("rate", t.port, echo, CLIENTS, RATE_SECS)
    wall = time.monotonic() - t0
    t.pcore.append(core_util(c0[0], core_ticks(PROXY_CPU)))
    t.lcore.append(core_util(c0[1], core_ticks(LOAD_CPU)))
    count, errors, gen_cpu = int(f[2]), int(f[3]), float(f[4])
    t.rate.append(float(f[1]))
    t.errors += errors
    t.tunnels += count
    t.p50.append(int(f[5]))
    t.p99.append(int(f[6]))
    t.load_util.append((gen_cpu + cpu_s(origin.pid) - o0) / wall)
    if t.proc:
        used = cpu_s(t.proc.pid) - p0
        t.cpu_us.append(1e6 * used / max(count, 1))
        t.proxy_util.append(used / wall)


def bulk_run(t):
    source, origin = t.source, t.origin
    t0 = time.monotonic()
    p0 = cpu_s(t.proc.pid) if t.proc else 0
    o0 = cpu_s(origin.pid)
    c0 = core_ticks(PROXY_CPU), core_ticks(LOAD_CPU)
    f = load("bulk", t.port, source, BULK_BYTES)
    wall = time.monotonic() - t0
    t.bulk_pcore.append(core_util(c0[0], core_ticks(PROXY_CPU)))
    t.bulk_lcore.append(core_util(c0[1], core_ticks(LOAD_CPU)))
    t.bulk.append(float(f[1]))
    t.bulk_load_util.append((float(f[3]) + cpu_s(origin.pid) - o0) / wall)
    if t.proc:
        used = cpu_s(t.proc.pid) - p0
        t.bulk_cpu.append(used / (BULK_BYTES / 1e9))   # s per GB carried
        t.bulk_proxy_util.append(used / wall)


def idle_run(t):
    echo = t.echo
    pid = t.proc.pid
    time.sleep(0.5)
    before = rss_kb(pid)
    p = subprocess.Popen(pin(LOAD_CPU) + [LOAD, "idle", str(t.port), str(echo),
                                          str(IDLE_N), "120"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().split()
    opened = int(line[1]) if len(line) == 2 else 0
    time.sleep(0.5)
    during = rss_kb(pid)
    p.stdin.close()
    p.wait(30)
    t.idle = (opened, (during - before) / max(opened, 1))


def measure(targets):
    for t in targets:
        load("rate", t.port, t.echo, 8, 0.5)                # warm up
    n = len(targets)
    for r in range(ROUNDS):
        order = [targets[(r + i) % n] for i in range(n)]
        for t in order:
            rate_run(t)
        for t in order:
            bulk_run(t)
    for t in targets:
        if t.proc:
            idle_run(t)


def med(xs):
    return statistics.median(xs) if xs else 0.0


def spread(xs, fmt="%.0f"):
    if not xs:
        return "-"
    return (fmt + "-" + fmt) % (min(xs), max(xs))


def isolate():
    """Re-runs this script in a network namespace of its own, loopback up.
    Returns whether the run is isolated."""
    if os.environ.get("_EGRESS_BENCH_NETNS") == "1":
        return True
    if (os.environ.get("BENCH_NETNS", "1") == "0" or os.geteuid() != 0 or
            shutil.which("unshare") is None or shutil.which("ip") is None):
        return False
    os.environ["_EGRESS_BENCH_NETNS"] = "1"
    argv = ["unshare", "--net", "--", "sh", "-c",
            'ip link set lo up && exec "$@"', "sh",
            sys.executable] + sys.argv
    sys.stdout.flush()
    os.execvp(argv[0], argv)


def haproxy_start(echo, source, nofile):
    """haproxy as a plain TCP relay to one origin: two frontends, one to
    its echo port and one to its source port.  (proc, echo, source) or
    None when haproxy is not installed."""
    if HAPROXY is None:
        return None
    fe, fs = free_port(), free_port()
    conf = os.path.join(TMP, "haproxy.cfg")
    with open(conf, "w") as f:
        f.write("global\n    nbthread 1\n    maxconn %d\n"
                "    tune.pipesize %d\n"
                "defaults\n    mode tcp\n    timeout connect 10s\n"
                "    timeout client 600s\n    timeout server 600s\n"
                "    option splice-request\n    option splice-response\n"
                "listen echo\n    bind 127.0.0.1:%d\n"
                "    server o 127.0.0.1:%d\n"
                "listen source\n    bind 127.0.0.1:%d\n"
                "    server o 127.0.0.1:%d\n"
                % (2 * IDLE_N + 4 * CLIENTS + 256, 1 << 20, fe, echo, fs,
                   source))
    p = subprocess.Popen(pin(PROXY_CPU) + ["prlimit", nofile, HAPROXY, "-db",
                                           "-f", conf],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(fe, p, "haproxy")
    return p, fe, fs


def version(exe, word):
    """Word number `word` of what `exe -v` prints, or "?"."""
    try:
        return subprocess.run([exe, "-v"], capture_output=True, text=True,
                              timeout=10).stdout.split()[word]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "?"


def main():
    isolated = isolate()
    load_before = loadavg()
    origins = []
    for _ in range(5 if BASELINE else 4):
        echo, source = free_port(), free_port()
        o = subprocess.Popen(pin(LOAD_CPU) + [LOAD, "origin", str(echo),
                                               str(source)],
                             stdout=subprocess.PIPE, text=True)
        o.stdout.readline()
        origins.append((echo, source, o))
    nofile = "--nofile=%d" % max(4 * IDLE_N + 1024, 8192)

    # vivarium-egress: release build, loopback allowed for the bench only.
    # It logs its one line per connection to a file, as in production.
    vport = free_port()
    # It needs a host address list; on the host its own addresses are the
    # host's, so one address nothing dials does (a file, not "none",
    # which a BASELINE from before the list was required refuses).
    hosts = os.path.join(TMP, "host-addresses")
    with open(hosts, "w") as f:
        f.write("192.0.2.1\n")
    env = dict(os.environ,
               VIVARIUM_EGRESS_HOST_ADDRESSES=hosts,
               VIVARIUM_EGRESS_LISTEN="127.0.0.1:%d" % vport,
               VIVARIUM_EGRESS_PORTS="%d,%d" % origins[1][:2],
               VIVARIUM_EGRESS_ALLOW_CIDRS="127.0.0.0/8",
               VIVARIUM_EGRESS_MAX_CONNECTIONS="100000",
               VIVARIUM_EGRESS_MAX_PER_CLIENT="100000")
    vlogpath = os.path.join(TMP, "egress.log")
    vlog = open(vlogpath, "w")
    viv = subprocess.Popen(pin(PROXY_CPU) + ["prlimit", nofile, PROXY], env=env,
                           stdout=vlog, stderr=vlog)
    wait_port(vport, viv, "vivarium-egress")

    # tinyproxy from Debian (a thread per client), on loopback, with room
    # for every client and one log line per connection like ours.
    tport = free_port()
    conf = os.path.join(TMP, "tinyproxy.conf")
    tlogpath = os.path.join(TMP, "tinyproxy.log")
    with open(conf, "w") as f:
        f.write("Port %d\nListen 127.0.0.1\nTimeout 600\nMaxClients %d\n"
                "Allow 127.0.0.1\nConnectPort %d\nConnectPort %d\n"
                "LogLevel %s\nLogFile \"%s\"\n"
                "DisableViaHeader Yes\n"
                % (tport, IDLE_N + 4 * CLIENTS + 256, origins[2][0], origins[2][1],
                   TINY_LOGLEVEL, tlogpath))
        if os.geteuid() == 0:
            f.write("User nobody\nGroup nogroup\n")
    os.chmod(TMP, 0o777)
    tiny = subprocess.Popen(pin(PROXY_CPU) + ["prlimit", nofile, "tinyproxy",
                                              "-d", "-c", conf],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(tport, tiny, "tinyproxy")

    base = None
    if BASELINE:
        bport = free_port()
        benv = dict(env, VIVARIUM_EGRESS_LISTEN="127.0.0.1:%d" % bport,
                    VIVARIUM_EGRESS_PORTS="%d,%d" % origins[4][:2])
        blog = open(os.path.join(TMP, "baseline.log"), "w")
        base = subprocess.Popen(pin(PROXY_CPU) + ["prlimit", nofile,
                                                  os.path.abspath(BASELINE)],
                                env=benv, stdout=blog, stderr=blog)
        wait_port(bport, base, "baseline vivarium-egress")

    # The reference relay: its own origin, reached through its frontends,
    # so the generator dials it like a direct connection (port 0).
    hap = haproxy_start(origins[3][0], origins[3][1], nofile)

    d = Target("direct", 0, None)
    v = Target("vivarium-egress", vport, viv)
    t = Target("tinyproxy", tport, tiny)
    all_t = [d, v, t]
    for x, (echo, source, o) in zip(all_t, origins):
        x.echo, x.source, x.origin = echo, source, o
    h = None
    if hap:
        h = Target("haproxy (TCP)", 0, hap[0])
        h.echo, h.source, h.origin = hap[1], hap[2], origins[3][2]
        all_t.append(h)
    if base:
        b = Target("baseline", bport, base)
        b.echo, b.source, b.origin = origins[4]
        all_t.append(b)
    try:
        measure(all_t)
    finally:
        procs = ([viv, tiny] + ([hap[0]] if hap else []) +
                 ([base] if base else []) + [o for _, _, o in origins])
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        vlog.close()
    vlines = sum(1 for _ in open(vlogpath, errors="replace"))
    tlines = (sum(1 for _ in open(tlogpath, errors="replace"))
              if os.path.exists(tlogpath) else 0)

    print("\nbench/egress on loopback, %d CPUs, load average %.1f before, "
          "%.1f after%s" % (NCPU, load_before, loadavg(),
                            "; SHORT mode: the figures only show that it runs"
                            if SHORT else ""))
    print("method: %s; nice %d; proxy under test pinned to CPU %s, load generator and origin "
          "to CPU %s (direct: same), each target its own origin; one epoll "
          "generator thread, %d concurrent "
          "clients; %d interleaved rounds (order rotated) of %.0f s rate + "
          "%d MiB bulk per target; median [min-max] over rounds; "
          "vivarium-egress: 1 event loop; tinyproxy %s: thread per client, "
          "LogLevel %s; logs in %s: %d lines / %d tunnels (ours), %d / %d (tinyproxy)"
          % ("own network namespace, loopback only" if isolated else
             "host network namespace (BENCH_NETNS=0 or not root)",
             NICE, PROXY_CPU or "any", LOAD_CPU or "any", CLIENTS, ROUNDS, RATE_SECS,
             BULK_BYTES >> 20, version("tinyproxy", -1), TINY_LOGLEVEL, TMP, vlines, v.tunnels + IDLE_N,
             tlines, t.tunnels + IDLE_N))
    if h:
        print("reference: haproxy %s as a plain TCP relay (1 thread, splice, "
              "no log), its own origin: no CONNECT, no 200, no policy, so "
              "less work per tunnel than either proxy" % version(HAPROXY, 2))
    else:
        print("reference: haproxy not installed (apt-get install haproxy), "
              "no reference row")
    print("  proxy% = the proxy's own CPU time / wall time; load% = generator + "
          "origin CPU / wall; Pcore% / Lcore% = how busy the proxy's / the load's "
          "core was (/proc/stat: every process plus softirq, where loopback\n"
          "  packet processing lands uncharged to any process; near 100 = "
          "saturated)")
    print("\nCONNECT rate, %d clients" % CLIENTS)
    print("%-16s %-20s %-15s %6s %6s %6s %6s %s" % (
        "", "tunnels/s", "CPU us/tunnel", "proxy%", "load%", "Pcore%",
        "Lcore%", "p50/p99 ms"))
    for x in all_t:
        print("%-16s %-20s %-15s %6s %6.0f %6.0f %6.0f %s" % (
            x.name,
            "%.0f [%s]" % (med(x.rate), spread(x.rate)),
            "%.0f [%s]" % (med(x.cpu_us), spread(x.cpu_us)) if x.proc else "-",
            "%.0f" % (100 * med(x.proxy_util)) if x.proc else "-",
            100 * med(x.load_util), 100 * med(x.pcore), 100 * med(x.lcore),
            "%.1f/%.1f" % (med(x.p50) / 1000, med(x.p99) / 1000))
            + (" %d errors" % x.errors if x.errors else ""))
    print("\nbulk, one connection, %d MiB; memory per idle tunnel, %d tunnels"
          % (BULK_BYTES >> 20, IDLE_N))
    print("%-16s %-20s %-10s %6s %6s %6s %6s %s" % (
        "", "MB/s", "CPU s/GB", "proxy%", "load%", "Pcore%", "Lcore%",
        "KB/idle tunnel"))
    for x in all_t:
        print("%-16s %-20s %-10s %6s %6.0f %6.0f %6.0f %s" % (
            x.name,
            "%.0f [%s]" % (med(x.bulk), spread(x.bulk)),
            "%.2f" % med(x.bulk_cpu) if x.proc else "-",
            "%.0f" % (100 * med(x.bulk_proxy_util)) if x.proc else "-",
            100 * med(x.bulk_load_util), 100 * med(x.bulk_pcore),
            100 * med(x.bulk_lcore),
            "%.1f (%d open)" % (x.idle[1], x.idle[0]) if x.idle else "-"))
    rr = med(v.rate) / max(med(t.rate), 1)
    cr = med(t.cpu_us) / max(med(v.cpu_us), 1e-9)
    br = med(v.bulk) / max(med(d.bulk), 1)
    print("\nCONNECT rate vivarium/tinyproxy:        %.2fx  (target >= 2x)  %s"
          % (rr, "ok" if rr >= 2 else "MISSED"))
    print("proxy CPU per tunnel tinyproxy/vivarium: %.2fx  (tunnels per "
          "proxy CPU-second: %.0f vs %.0f)"
          % (cr, 1e6 / max(med(v.cpu_us), 1e-9), 1e6 / max(med(t.cpu_us), 1e-9)))
    print("tunnel throughput vivarium/direct:      %.0f%%   (target >= 80%%) %s"
          % (100 * br, "ok" if br >= 0.8 else "MISSED"))
    print("memory per idle tunnel:                 %.1f KB (target <= 64 KB) %s"
          % (v.idle[1], "ok" if v.idle[1] <= 64 else "MISSED"))
    print("(tinyproxy: %.0f%% of direct throughput, %.1f KB per idle tunnel)"
          % (100 * med(t.bulk) / max(med(d.bulk), 1), t.idle[1]))
    if h:
        print("reference haproxy (TCP): %.2fx tinyproxy's rate, %.0f%% of "
              "direct throughput; vivarium-egress: %.0f%% of its rate, "
              "%.0f%% of its throughput"
              % (med(h.rate) / max(med(t.rate), 1),
                 100 * med(h.bulk) / max(med(d.bulk), 1),
                 100 * med(v.rate) / max(med(h.rate), 1),
                 100 * med(v.bulk) / max(med(h.bulk), 1)))
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
