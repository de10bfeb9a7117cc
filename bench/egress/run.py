#!/usr/bin/python3
"""bench/egress: vivarium-egress beside Debian's tinyproxy, on loopback.

usage: run.py PATH/TO/vivarium-egress PATH/TO/egress-load

Measured in one run, each against the same origin on 127.0.0.1:
  - CONNECT tunnels set up per second with 64 concurrent clients (one byte
    round trip through each tunnel, then close), and the same loop straight
    to the origin;
  - bulk throughput pulling BULK_BYTES through one tunnel, and directly;
  - memory per idle tunnel: the proxy's RSS with IDLE_N tunnels open minus
    its RSS before, divided by IDLE_N;
  - the proxy's CPU time (user + system, all threads) per tunnel during the
    rate runs, which shows the proxy's own cost apart from the load
    generator and the origin that share the machine's CPUs.
ROUNDS rounds interleave the targets; the best round of each is compared.
Prints the figures and the ratios the issue sets targets for.  Everything
is bounded: RATE_SECS per rate run, BULK_BYTES per bulk run, IDLE_N tunnels.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

PROXY = os.path.abspath(sys.argv[1])
LOAD = os.path.abspath(sys.argv[2])
RATE_SECS = float(os.environ.get("RATE_SECS", "3"))
CLIENTS = int(os.environ.get("CLIENTS", "64"))
BULK_BYTES = int(os.environ.get("BULK_BYTES", str(1 << 30)))
IDLE_N = int(os.environ.get("IDLE_N", "1000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
TMP = tempfile.mkdtemp(prefix="egress-bench-")


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


def load(*args):
    out = subprocess.run([LOAD] + [str(a) for a in args], capture_output=True,
                         text=True, timeout=600)
    if out.returncode not in (0, 1):
        sys.exit("bench: egress-load %s failed: %s" % (args, out.stderr))
    return out.stdout.split()


def cpu_ticks(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def rate_run(port, pid, echo):
    t0 = cpu_ticks(pid) if pid else 0
    f = load("rate", port, echo, CLIENTS, RATE_SECS)
    count = int(f[2])
    used = (cpu_ticks(pid) - t0) / os.sysconf("SC_CLK_TCK") if pid else 0
    return float(f[1]), int(f[3]), 1e6 * used / max(count, 1)


def idle_run(port, pid, echo):
    time.sleep(0.5)
    before = rss_kb(pid)
    p = subprocess.Popen([LOAD, "idle", str(port), str(echo), str(IDLE_N), "120"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().split()
    opened = int(line[1]) if len(line) == 2 else 0
    time.sleep(0.5)
    during = rss_kb(pid)
    p.stdin.close()
    p.wait(30)
    return opened, before, during


def measure(targets, echo, source):
    """Rounds interleave the three targets so that load from elsewhere on
    the machine hits them alike; the best round of each counts."""
    res = {name: {"rate": [], "cpu": [], "bulk": [], "errors": 0}
           for name, _, _ in targets}
    for name, port, _ in targets:
        load("rate", port, echo, 8, 0.5)                  # warm up
    for _ in range(ROUNDS):
        for name, port, pid in targets:
            r, e, cpu = rate_run(port, pid, echo)
            res[name]["rate"].append(r)
            res[name]["errors"] += e
            res[name]["cpu"].append(cpu)
        for name, port, pid in targets:
            res[name]["bulk"].append(float(load("bulk", port, source,
                                                BULK_BYTES)[1]))
    for name, port, pid in targets:
        if pid:
            res[name]["idle"] = idle_run(port, pid, echo)
    return res


def main():
    echo, source = free_port(), free_port()
    origin = subprocess.Popen([LOAD, "origin", str(echo), str(source)],
                              stdout=subprocess.PIPE, text=True)
    origin.stdout.readline()
    nofile = "--nofile=%d" % max(4 * IDLE_N + 1024, 8192)

    # vivarium-egress: release build, loopback allowed for the bench only
    vport = free_port()
    env = dict(os.environ,
               VIVARIUM_EGRESS_LISTEN="127.0.0.1:%d" % vport,
               VIVARIUM_EGRESS_PORTS="%d,%d" % (echo, source),
               VIVARIUM_EGRESS_ALLOW_CIDRS="127.0.0.0/8",
               VIVARIUM_EGRESS_MAX_CONNECTIONS="100000",
               VIVARIUM_EGRESS_MAX_PER_CLIENT="100000")
    vlog = open(os.path.join(TMP, "egress.log"), "w")
    viv = subprocess.Popen(["prlimit", nofile, PROXY], env=env,
                           stdout=vlog, stderr=vlog)
    wait_port(vport, viv, "vivarium-egress")

    # tinyproxy from Debian, with a generated config on loopback
    tport = free_port()
    conf = os.path.join(TMP, "tinyproxy.conf")
    with open(conf, "w") as f:
        f.write("Port %d\nListen 127.0.0.1\nTimeout 600\nMaxClients %d\n"
                "Allow 127.0.0.1\nConnectPort %d\nConnectPort %d\n"
                "LogLevel Critical\nLogFile \"%s/tinyproxy.log\"\n"
                "DisableViaHeader Yes\n"
                % (tport, IDLE_N + 2 * CLIENTS + 64, echo, source, TMP))
        if os.geteuid() == 0:
            f.write("User nobody\nGroup nogroup\n")
    os.chmod(TMP, 0o777)
    tiny = subprocess.Popen(["prlimit", nofile, "tinyproxy", "-d", "-c", conf],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(tport, tiny, "tinyproxy")

    try:
        res = measure([("direct", 0, None), ("vivarium-egress", vport, viv.pid),
                       ("tinyproxy", tport, tiny.pid)], echo, source)
    finally:
        for p in (viv, tiny, origin):
            p.terminate()
        for p in (viv, tiny, origin):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()

    print("\nbench/egress on loopback (%d CPUs, load %.1f): %d concurrent clients, "
          "%d rounds of %.0f s; best round shown, all rounds in brackets"
          % (os.cpu_count(), os.getloadavg()[0], CLIENTS, ROUNDS, RATE_SECS))
    print("%-16s %10s %12s %10s %14s" % ("", "tunnels/s", "CPU us/tunnel",
                                         "bulk MB/s", "KB/idle tunnel"))
    for name in ("direct", "vivarium-egress", "tinyproxy"):
        r = res[name]
        idle = "-"
        if "idle" in r:
            opened, before, during = r["idle"]
            r["idle_kb"] = (during - before) / max(opened, 1)
            idle = "%.1f (%d open)" % (r["idle_kb"], opened)
        print("%-16s %10.0f %12s %10.0f %14s   rates %s, MB/s %s%s" % (
            name, max(r["rate"]),
            "%.0f" % min(r["cpu"]) if name != "direct" else "-",
            max(r["bulk"]), idle,
            [int(x) for x in r["rate"]], [int(x) for x in r["bulk"]],
            ", %d errors" % r["errors"] if r["errors"] else ""))
    v, t, d = res["vivarium-egress"], res["tinyproxy"], res["direct"]
    rr = max(v["rate"]) / max(max(t["rate"]), 1)
    cr = min(t["cpu"]) / max(min(v["cpu"]), 1e-9)
    br = max(v["bulk"]) / max(max(d["bulk"]), 1)
    print("\nCONNECT rate vivarium/tinyproxy:     %.2fx  (target >= 2x)  %s"
          % (rr, "ok" if rr >= 2 else "MISSED"))
    print("proxy CPU per tunnel tinyproxy/vivarium: %.2fx  (how much cheaper each tunnel is)"
          % cr)
    print("tunnel throughput vivarium/direct:  %.0f%%   (target >= 80%%) %s"
          % (100 * br, "ok" if br >= 0.8 else "MISSED"))
    print("memory per idle tunnel:             %.1f KB (target <= 64 KB) %s"
          % (v["idle_kb"], "ok" if v["idle_kb"] <= 64 else "MISSED"))
    print("(tinyproxy: %.0f%% of direct throughput, %.1f KB per idle tunnel)"
          % (100 * max(t["bulk"]) / max(max(d["bulk"]), 1), t["idle_kb"]))
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
