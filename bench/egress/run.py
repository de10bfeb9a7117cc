#!/usr/bin/python3
"""bench/egress: vivarium-egress beside Debian's tinyproxy, on loopback.

usage: run.py PATH/TO/vivarium-egress PATH/TO/egress-load

Measured in one run, each against the same origin on 127.0.0.1:
  - CONNECT tunnels set up per second with 64 concurrent clients (one byte
    round trip through each tunnel, then close), and the same loop straight
    to the origin;
  - bulk throughput pulling BULK_BYTES through one tunnel, and directly;
  - memory per idle tunnel: the proxy's RSS with IDLE_N tunnels open minus
    its RSS before, divided by IDLE_N.
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
RATE_SECS = float(os.environ.get("RATE_SECS", "4"))
CLIENTS = int(os.environ.get("CLIENTS", "64"))
BULK_BYTES = int(os.environ.get("BULK_BYTES", str(1 << 30)))
IDLE_N = int(os.environ.get("IDLE_N", "1000"))
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


def measure(name, port, pid, echo, source):
    r = {}
    load("rate", port, echo, 8, 0.5)                  # warm up
    f = load("rate", port, echo, CLIENTS, RATE_SECS)
    r["rate"], r["rate_errors"] = float(f[1]), int(f[3])
    f = load("bulk", port, source, BULK_BYTES)
    r["bulk"] = float(f[1])
    if pid:
        time.sleep(0.5)
        before = rss_kb(pid)
        p = subprocess.Popen([LOAD, "idle", str(port), str(echo), str(IDLE_N), "120"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
        line = p.stdout.readline().split()
        opened = int(line[1]) if len(line) == 2 else 0
        time.sleep(0.5)
        during = rss_kb(pid)
        p.stdin.close()
        p.wait(30)
        r["idle_open"] = opened
        r["idle_kb"] = (during - before) / max(opened, 1)
        r["rss_before"], r["rss_during"] = before, during
    return r


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
        direct = measure("direct", 0, None, echo, source)
        v = measure("vivarium-egress", vport, viv.pid, echo, source)
        t = measure("tinyproxy", tport, tiny.pid, echo, source)
    finally:
        for p in (viv, tiny, origin):
            p.terminate()
        for p in (viv, tiny, origin):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()

    print("\nbench/egress on loopback, %d concurrent clients, %.0f s per rate run"
          % (CLIENTS, RATE_SECS))
    print("%-18s %14s %14s %16s" % ("", "tunnels/s", "bulk MB/s", "KB/idle tunnel"))
    print("%-18s %14.0f %14.0f %16s" % ("direct", direct["rate"], direct["bulk"], "-"))
    for name, r in (("vivarium-egress", v), ("tinyproxy", t)):
        print("%-18s %14.0f %14.0f %16.1f   (errors %d, %d idle tunnels, RSS %d -> %d KB)"
              % (name, r["rate"], r["bulk"], r["idle_kb"], r["rate_errors"],
                 r["idle_open"], r["rss_before"], r["rss_during"]))
    rr = v["rate"] / max(t["rate"], 1)
    br = v["bulk"] / max(direct["bulk"], 1)
    print("\nCONNECT rate vivarium/tinyproxy: %.2fx   (target >= 2x)   %s"
          % (rr, "ok" if rr >= 2 else "MISSED"))
    print("tunnel throughput vivarium/direct: %.0f%%  (target >= 80%%)  %s"
          % (100 * br, "ok" if br >= 0.8 else "MISSED"))
    print("memory per idle tunnel: %.1f KB      (target <= 64 KB)  %s"
          % (v["idle_kb"], "ok" if v["idle_kb"] <= 64 else "MISSED"))
    print("(tinyproxy: %.0f%% of direct throughput, %.1f KB per idle tunnel)"
          % (100 * t["bulk"] / max(direct["bulk"], 1), t["idle_kb"]))
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
