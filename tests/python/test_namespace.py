"""The persistent namespace: what carries over between run_python calls,
what is named as gone, and how the store survives kills and corruption."""
import os
import re
import signal
import time
import unittest

from runner_util import Workspace


class Persist(Workspace):

    def test_dataframe_persists(self):
        self.ok("import pandas as pd\n"
                "df = pd.DataFrame({'GBP': [1.5, 2.5, 3.5], 'USD': [1, 2, 3]})\n")
        r = self.ok("print(df.shape, list(df.columns), float(df.GBP.sum()))\n"
                    "df['EUR'] = df.GBP * 2\n")
        self.assertEqual(r.stdout, "(3, 2) ['GBP', 'USD'] 7.5\n")
        self.assertEqual(r.line("namespace:"), "namespace: restored 2 name(s)")
        self.assertEqual(r.line("vars:"), "vars: df 3x3 [GBP, USD, EUR]")
        r = self.ok("print(df.EUR.tolist(), df.values.flags.writeable)")
        self.assertEqual(r.stdout, "[3.0, 5.0, 7.0] True\n")

    def test_aliases_rebound(self):
        r = self.ok("import pandas as pd\n"
                    "import matplotlib.pyplot as plt\n"
                    "from os import path\n"
                    "import xml.dom.minidom\n"
                    "import json\n")
        self.assertEqual(r.line("already imported"),
                         "already imported (do not re-import): json=json  path=os.path  "
                         "pd=pandas  plt=matplotlib.pyplot  xml=xml")
        r = self.ok("print(pd.__name__, plt.__name__, path.join('a', 'b'), json.dumps(1))\n"
                    "print(xml.dom.minidom.parseString('<a/>').documentElement.tagName)\n"
                    "fig, ax = plt.subplots(); ax.plot([1, 2]); fig.savefig('p.png')\n")
        self.assertEqual(r.stdout, "pandas matplotlib.pyplot a/b 1\na\n")
        self.assertEqual(r.line("namespace:"), "namespace: restored 5 name(s)")
        self.assertTrue(os.path.exists(os.path.join(self.ws, "p.png")))
        # A third call still has them: the store kept the dotted import.
        r = self.ok("print(xml.dom.minidom.__name__)")
        self.assertEqual(r.stdout, "xml.dom.minidom\n")

    def test_lambda_local_function_and_class_persist(self):
        self.ok("scale = 10\n"
                "f = lambda x: x * scale\n"
                "def make_adder(n):\n"
                "    def add(x):\n"
                "        return x + n\n"
                "    return add\n"
                "add3 = make_adder(3)\n"
                "def total(xs):\n"
                "    return sum(f(x) for x in xs)\n"
                "class Point:\n"
                "    def __init__(self, x, y):\n"
                "        self.x, self.y = x, y\n"
                "    def norm2(self):\n"
                "        return self.x ** 2 + self.y ** 2\n"
                "p = Point(3, 4)\n")
        r = self.ok("print(f(2), add3(4), total([1, 2]), p.norm2(), isinstance(p, Point))\n"
                    "scale = 100\n"
                    "print(f(2), total([1]))\n")
        # The restored functions see the live globals, not a snapshot.
        self.assertEqual(r.stdout, "20 7 30 25 True\n200 100\n")
        r = self.ok("print(f(1), Point(1, 1).norm2())")
        self.assertEqual(r.stdout, "100 2\n")

    def test_function_does_not_carry_a_copy_of_big_globals(self):
        self.ok("big = b'x' * 3_000_000\n"
                "def size():\n"
                "    return len(big)\n")
        r = self.ok("big = b'y'\nprint(size())")
        self.assertEqual(r.stdout, "1\n")
        self.assertEqual(r.line("namespace size:"), "namespace size: <0.1 MB")

    def test_same_object_stays_the_same(self):
        self.ok("a = [1, 2]\nb = a\n")
        r = self.ok("b.append(3)\nprint(a, a is b)")
        self.assertEqual(r.stdout, "[1, 2, 3] True\n")

    def test_open_file_reported_gone(self):
        r = self.ok("handle = open('data.txt', 'w')\n"
                    "src = open('data.txt')\n"
                    "gen = (i for i in range(3))\n"
                    "items = [1, handle]\n"
                    "keep = 5\n")
        self.assertEqual(r.line("gone next call:"),
                         "gone next call: gen (generator is not picklable), "
                         "handle (TextIOWrapper is not picklable), "
                         "items (list is not picklable: holds a TextIOWrapper), "
                         "src (TextIOWrapper is not picklable)")
        r = self.ok("print(keep, 'handle' in globals(), 'items' in globals())")
        self.assertEqual(r.stdout, "5 False False\n")

    def test_private_and_dunder_names_not_stored(self):
        self.ok("_vivarium_x = 1\n_vivariumy = 2\n__weird__ = 3\n_private = 4\n")
        r = self.ok("print(sorted(k for k in globals() if not k.startswith('__') "
                    "or k == '__weird__'))")
        self.assertEqual(r.stdout, "['_private']\n")

    def test_saved_after_an_exception(self):
        r = self.run_code("x = 41\nraise ValueError('boom')\n")
        self.assertEqual(r.status, 1)
        self.assertEqual(r.report["exit_code"], 1)
        self.assertEqual(r.line("vars:"), "vars: x 41")
        r = self.ok("print(x + 1)")
        self.assertEqual(r.stdout, "42\n")

    def test_syntax_error_keeps_the_store(self):
        self.ok("x = 1")
        r = self.run_code("x = (")
        self.assertEqual(r.status, 1)
        self.assertIn('File "<run_python>", line 1', r.stderr)
        self.assertEqual(r.line("vars:"), "vars: x 1")
        self.assertEqual(self.ok("print(x)").stdout, "1\n")

    def test_value_that_no_longer_unpickles(self):
        # mylib is importable in the first call only (not a workspace
        # file: those are not kept at all, test_runner's Shadowing).
        lib = os.path.join(self.tmp, "lib")
        os.mkdir(lib)
        with open(os.path.join(lib, "mylib.py"), "w") as f:
            f.write("class Thing:\n    pass\n")
        self.ok("import sys\nsys.path.insert(0, %r)\n"
                "import mylib\nt = mylib.Thing()\nn = 1\ndel sys\n" % lib)
        r = self.ok("print(n)")
        self.assertEqual(r.stdout, "1\n")
        self.assertRegex(r.line("not restored:"),
                         r"^not restored: mylib \(module mylib: ModuleNotFoundError: .*\), "
                         r"t \(ModuleNotFoundError: .*\)$")
        self.assertEqual(r.line("namespace:"), "namespace: restored 1 name(s)")
        # What could not be loaded (a new image's Python, a module gone)
        # is not lost: the store as it was is kept, and said once.
        kept = re.match(r"^the store as it was is kept as \.vivarium/(namespace\.unrestored-\S+)$",
                        r.line("the store as it was") or "")
        self.assertIsNotNone(kept, r.stdout)
        with open(os.path.join(self.state_dir, kept.group(1)), "rb") as f:
            self.assertIn(b"Thing", f.read())
        r = self.ok("print(n + 1)")
        self.assertEqual(r.stdout, "2\n")
        self.assertIsNone(r.line("the store as it was"))

    def test_value_whose_unpickling_exits(self):
        self.ok("class Nasty:\n"
                "    def __setstate__(self, state):\n"
                "        raise SystemExit(9)\n"
                "x = Nasty()\n"
                "x.a = 1\n"
                "y = 2\n")
        r = self.ok("print(y, 'x' in globals())")
        self.assertEqual(r.stdout, "2 False\n")
        self.assertEqual(r.line("not restored:"), "not restored: x (SystemExit: 9)")

    def test_code_that_changes_directory(self):
        other = os.path.join(self.tmp, "elsewhere")
        os.mkdir(other)
        r = self.ok("import os\nos.chdir(%r)\nz = 1\nopen('here.txt', 'w').close()\n" % other)
        self.assertTrue(os.path.exists(self.store))
        self.assertNotIn("here.txt", r.footer)
        self.assertEqual(self.ok("print(z)").stdout, "1\n")

    def test_store_that_cannot_be_written(self):
        blocker = os.path.join(self.tmp, "not-a-dir")
        open(blocker, "w").close()
        r = self.ok("x = 1\nprint('ran')", VIVARIUM_STATE_DIR=os.path.join(blocker, "state"))
        self.assertEqual(r.stdout, "ran\n")
        self.assertRegex(r.line("namespace not saved"),
                         r"^namespace not saved \(the stored one is unchanged\): "
                         r"NotADirectoryError: ")
        self.assertIsNone(r.line("vars:"))


class Cap(Workspace):

    def test_size_cap_drops_largest_first(self):
        r = self.ok("a = b'a' * 2_000_000\n"
                    "b = b'b' * 1_500_000\n"
                    "c = b'c' * 100_000\n"
                    "d = b'd' * 1_000_000\n",
                    VIVARIUM_NAMESPACE_MAX_BYTES=2_000_000)
        # 4.6 MB would be over 2 MB: a goes first (2.6 MB left), then b.
        self.assertEqual(r.line("dropped"),
                         "dropped, namespace over 1.9 MB (largest first): a 1.9 MB, b 1.4 MB")
        self.assertEqual(r.line("vars:"), "vars: d 1000000 bytes  c 100000 bytes")
        r = self.ok("print(sorted(k for k in ('a', 'b', 'c', 'd') if k in globals()))")
        self.assertEqual(r.stdout, "['c', 'd']\n")

    def test_alias_of_a_dropped_value_is_dropped_too(self):
        r = self.ok("a = bytearray(2_000_000)\nb = a\nc = 1\n",
                    VIVARIUM_NAMESPACE_MAX_BYTES=1_000_000)
        self.assertEqual(r.line("dropped"),
                         "dropped, namespace over 1.0 MB (largest first): a 1.9 MB, "
                         "b (same object)")
        self.assertEqual(self.ok("print('a' in globals(), 'b' in globals(), c)").stdout,
                         "False False 1\n")


class Switches(Workspace):

    def test_fresh_discards_and_counts(self):
        self.ok("import os\nx = 1\ny = 2\n")
        r = self.ok("print('x' in globals(), 'os' in globals())", VIVARIUM_FRESH=1)
        self.assertEqual(r.stdout, "False False\n")
        self.assertEqual(r.line("namespace:"),
                         "namespace: fresh start, discarded 3 stored name(s)")
        r = self.ok("print('x' in globals())")
        self.assertEqual(r.stdout, "False\n")
        self.assertEqual(r.line("namespace:"), "namespace: empty (nothing stored yet)")

    def test_fresh_with_nothing_stored(self):
        r = self.ok("z = 3", VIVARIUM_FRESH=1)
        self.assertEqual(r.line("namespace:"), "namespace: fresh start (nothing was stored)")
        self.assertEqual(self.ok("print(z)").stdout, "3\n")

    def test_persist_off_is_stateless(self):
        r = self.ok("x = 1", VIVARIUM_PERSIST_NAMESPACE=0)
        self.assertEqual(r.line("namespace:"),
                         "namespace: not kept between calls (VIVARIUM_PERSIST_NAMESPACE=0)")
        self.assertFalse(os.path.exists(self.store))
        r = self.run_code("print(x)", VIVARIUM_PERSIST_NAMESPACE=0)
        self.assertEqual(r.status, 1)
        self.assertIn("NameError", r.stderr)

    def test_persist_off_leaves_an_existing_store_alone(self):
        self.ok("x = 1")
        self.ok("x = 2", VIVARIUM_PERSIST_NAMESPACE=0)
        self.assertEqual(self.ok("print(x)").stdout, "1\n")

    def test_summary_off_keeps_persistence(self):
        r = self.ok("x = 7", VIVARIUM_STATE_SUMMARY=0)
        self.assertIsNone(r.report["footer"])
        r = self.ok("print(x)", VIVARIUM_STATE_SUMMARY=0)
        self.assertEqual(r.stdout, "7\n")
        self.assertIsNone(r.report["footer"])


class Damage(Workspace):

    def corrupt_files(self):
        return sorted(n for n in os.listdir(self.state_dir)
                      if n.startswith("namespace.corrupt-"))

    def test_corrupt_store_moved_aside(self):
        self.ok("x = 1")
        with open(self.store, "wb") as f:
            f.write(b"this is not a namespace store")
        r = self.ok("print('x' in globals())\ny = 2\n")
        self.assertEqual(r.stdout, "False\n")
        moved = self.corrupt_files()
        self.assertEqual(len(moved), 1)
        self.assertEqual(r.line("namespace:"),
                         "namespace: the store was unreadable (StoreError: not a namespace "
                         "store (bad magic)); moved aside to .vivarium/%s; starting empty"
                         % moved[0])
        with open(os.path.join(self.state_dir, moved[0]), "rb") as f:
            self.assertEqual(f.read(), b"this is not a namespace store")
        self.assertEqual(self.ok("print(y)").stdout, "2\n")

    def test_truncated_store_moved_aside(self):
        self.ok("x = b'1' * 100000\ny = 2\n")
        size = os.path.getsize(self.store)
        with open(self.store, "r+b") as f:
            f.truncate(size - 10)
        r = self.ok("print('y' in globals())")
        self.assertEqual(r.stdout, "False\n")
        self.assertRegex(r.line("namespace:"),
                         r"^namespace: the store was unreadable \(StoreError: value 'x' lies "
                         r"outside the file .*\); moved aside to \.vivarium/namespace\.corrupt-")

    def test_bad_header_json(self):
        self.ok("x = 1")
        with open(self.store, "r+b") as f:
            f.seek(16)
            f.write(b"@@@@")
        r = self.ok("print(1)")
        self.assertIn("header is not JSON", r.line("namespace:"))
        self.assertEqual(len(self.corrupt_files()), 1)

    def test_killed_mid_save_leaves_old_store(self):
        self.ok("a = 1\nkeep = 'old'\n")
        with open(self.store, "rb") as f:
            before = f.read()
        hook = os.path.join(self.tmp, "paused")
        p, run_dir = self.start("a = 2\nbig = bytes(20_000_000)\nkeep = 'new'\n",
                                VIVARIUM_TEST_PAUSE_IN_SAVE=hook)
        try:
            self.assertTrue(self.wait_for(hook), "the runner never reached the save")
            tmp = os.path.join(self.state_dir, "namespace.store.tmp")
            # Caught in the middle: a partial temporary file, the old store intact.
            self.assertTrue(0 < os.path.getsize(tmp) < 20_000_000)
            self.kill_group(p)
        finally:
            self.kill_group(p)
            p.wait()
        r = self.finish(p, run_dir)
        self.assertEqual(r.status, -signal.SIGKILL)
        self.assertIsNone(r.report, "a killed run must write no report")
        with open(self.store, "rb") as f:
            self.assertEqual(f.read(), before)
        r = self.ok("print(a, keep, 'big' in globals())")
        self.assertEqual(r.stdout, "1 old False\n")
        self.assertEqual(r.line("namespace:"), "namespace: restored 2 name(s)")
        self.assertFalse(os.path.exists(os.path.join(self.state_dir, "namespace.store.tmp")))

    def test_killed_during_a_big_save_without_hook(self):
        # The real thing: SIGKILL as soon as the temporary file appears while
        # 200 MB are being written.  Whatever the timing, the store is either
        # the old one or the complete new one, never a torn mix.
        self.ok("a = 1")
        p, run_dir = self.start("import array\na = 2\n"
                                "big = array.array('d', bytes(200_000_000))\n")
        tmp = os.path.join(self.state_dir, "namespace.store.tmp")
        try:
            self.wait_for(tmp, timeout=120)
            self.kill_group(p)
        finally:
            self.kill_group(p)
            p.wait()
        self.finish(p, run_dir)
        r = self.ok("print(a)")
        self.assertIn(r.stdout, ("1\n", "2\n"))
        self.assertIsNone(r.line("not restored"))
        self.assertRegex(r.line("namespace:"), r"^namespace: restored [12] name\(s\)$")


if __name__ == "__main__":
    unittest.main()
