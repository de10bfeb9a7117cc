"""bench/namespace: save + restore round trip of a namespace holding a
1,000,000-row, 3-column float DataFrame and a dict of 10,000 keys, through
the runner's store, against a naive baseline measured in the same run (one
cloudpickle.dumps of the whole namespace, written with the same tmp + fsync
+ rename, read back with one pickle.loads).

Prints the median of several rounds for each, the stored size, the ratio
and whether the store's round trip meets its target (100 ms): a missed
target is printed, not a failure.  Exit status 1 only when the restored
namespace differs from the saved one (or the benchmark breaks).
VIVARIUM_BENCH_SHORT=1 (the short mode make test runs): one round of a
10,000-row frame, to show that it runs.
"""
import os
import pickle
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import numpy as np      # noqa: E402
import pandas as pd     # noqa: E402
import cloudpickle      # noqa: E402

from vivarium import _store   # noqa: E402

SHORT = os.environ.get("VIVARIUM_BENCH_SHORT") == "1"
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "1" if SHORT else "7"))
ROWS = 10_000 if SHORT else 1_000_000
TARGET_MS = 100.0


def make_namespace():
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.standard_normal((ROWS, 3)), columns=["a", "b", "c"])
    d = {"key%05d" % i: float(i) for i in range(10_000)}
    return {"__name__": "__main__", "df": df, "d": d}


def store_round_trip(state_dir, ns):
    # A store with the same bytes would not be rewritten (see _store.write):
    # remove it so that every round pays for the whole save.
    try:
        os.unlink(os.path.join(state_dir, _store.STORE_NAME))
    except FileNotFoundError:
        pass
    t0 = time.perf_counter()
    entries = [_store.pickle_value(n, v, ns) for n, v in ns.items()
               if _store.is_stored_name(n)]
    size = _store.write(state_dir, entries, [])
    t1 = time.perf_counter()
    out = {"__name__": "__main__"}
    res = _store.load(os.path.join(state_dir, _store.STORE_NAME), out)
    t2 = time.perf_counter()
    assert not res.failed, res.failed
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3, size, out


def naive_round_trip(state_dir, ns):
    path = os.path.join(state_dir, "naive.pkl")
    t0 = time.perf_counter()
    data = cloudpickle.dumps({k: v for k, v in ns.items() if _store.is_stored_name(k)})
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    t1 = time.perf_counter()
    with open(path, "rb") as f:
        out = pickle.loads(f.read())
    t2 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3, len(data), out


def check(ns, out):
    pd.testing.assert_frame_equal(ns["df"], out["df"])
    assert ns["d"] == out["d"]
    assert out["df"]["a"].values.flags.writeable


def main():
    ns = make_namespace()
    base = os.environ.get("BENCH_DIR") or os.getcwd()
    with tempfile.TemporaryDirectory(dir=base, prefix="bench-namespace-") as d:
        runs = {"store": [], "naive": []}
        for _ in range(ROUNDS):
            for name, fn in (("store", store_round_trip), ("naive", naive_round_trip)):
                save, load, size, out = fn(d, ns)
                check(ns, out)
                runs[name].append((save + load, save, load, size))
                del out
    print("bench/namespace: %sx3 float DataFrame + dict of 10,000 keys, "
          "median of %d rounds, files in %s%s"
          % (format(ROWS, ","), ROUNDS, base,
             "; SHORT mode: the figures only show that it runs" if SHORT else ""))
    med = {}
    for name in ("store", "naive"):
        rt = statistics.median(r[0] for r in runs[name])
        sv = statistics.median(r[1] for r in runs[name])
        ld = statistics.median(r[2] for r in runs[name])
        size = runs[name][-1][3]
        med[name] = rt
        print("  %-5s round trip %6.1f ms (save %5.1f ms incl. fsync, restore %5.1f ms), "
              "size %.1f MB" % (name, rt, sv, ld, size / 1e6))
    print("  ratio naive/store: %.2fx" % (med["naive"] / med["store"]))
    with tempfile.TemporaryDirectory(dir=base, prefix="bench-namespace-") as d:
        unchanged = []
        for i in range(ROUNDS + 1):
            t0 = time.perf_counter()
            entries = [_store.pickle_value(n, v, ns) for n, v in ns.items()
                       if _store.is_stored_name(n)]
            _store.write(d, entries, [])
            if i:
                unchanged.append((time.perf_counter() - t0) * 1e3)
    print("  store save of an unchanged namespace (compared, not rewritten): %.1f ms"
          % statistics.median(unchanged))
    ok = med["store"] <= TARGET_MS
    print("  target: store round trip <= %.0f ms: %s" % (TARGET_MS, "met" if ok else "MISSED"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
