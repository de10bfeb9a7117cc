"""The --- state --- footer, line by line, for a known namespace and
workspace; and its bounds."""
import os
import sys
import unittest

from runner_util import PYTHON_DIR, Workspace

sys.path.insert(0, PYTHON_DIR)
from vivarium import _footer  # noqa: E402


class FooterText(Workspace):

    def setUp(self):
        super().setUp()
        # Three older files, newest last.
        for i, name in enumerate(["ameco_rel.pkl", "ameco_all.pkl", "notes/readme.md"]):
            path = os.path.join(self.ws, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("x" * 10)
            os.utime(path, (1_600_000_000 + i, 1_600_000_000 + i))

    maxDiff = None

    def test_known_namespace(self):
        code = ("import os\n"
                "import pandas as pd\n"
                "import json as js\n"
                "from vivarium_charts import line_chart\n"
                "URL = 'https://api.db.nomics.world/v22/series/ECB/EXR/' + 'x' * 31\n"
                "df = pd.DataFrame({'GBP': [1.0] * 2306, 'USD': [2.0] * 2306})\n"
                "raw = {str(i): i for i in range(2306)}\n"
                "handle = open('notes/log.txt', 'w')\n"
                "n = 5\n"
                "with open('fx.png', 'wb') as f:\n"
                "    f.write(b'\\0' * 65536)\n"
                "del f\n"
                "os.utime('fx.png', (1_700_000_001, 1_700_000_001))\n"
                "os.utime('notes/log.txt', (1_700_000_000, 1_700_000_000))\n"
                "_vivarium_hidden = 1\n")
        r = self.ok(code)
        self.assertEqual(r.footer.split("\n"), [
            "--- state ---",
            "namespace: empty (nothing stored yet)",
            "vars: df 2306x2 [GBP, USD]  raw 2306 keys  line_chart line_chart()  "
            "URL 78 chars  n 5",
            "already imported (do not re-import): js=json  os=os  pd=pandas",
            "gone next call: handle (TextIOWrapper is not picklable)",
            "namespace size: 0.1 MB",
        ])
        r = self.ok("print(len(raw), URL[:5], js.dumps(n))")
        self.assertEqual(r.stdout, "2306 https 5\n")
        self.assertEqual(r.footer.split("\n"), [
            "--- state ---",
            "namespace: restored 8 name(s)",
            "vars: df 2306x2 [GBP, USD]  raw 2306 keys  line_chart line_chart()  "
            "URL 78 chars  n 5",
            "already imported (do not re-import): js=json  os=os  pd=pandas",
            "namespace size: 0.1 MB",
        ])

    def test_namespace_size_in_mb(self):
        r = self.ok("import numpy as np\na = np.zeros((300_000,), dtype='float64')\n")
        self.assertEqual(r.line("vars:"), "vars: a array 300000 float64")
        self.assertEqual(r.line("namespace size:"), "namespace size: 2.3 MB")

    def test_long_vars_line_is_cut_with_a_count(self):
        r = self.ok("for i in range(200):\n"
                    "    globals()['variable_number_%03d' % i] = i\n"
                    "del i\n")
        line = r.line("vars:")
        self.assertLessEqual(len(line), _footer.VARS_MAX)
        self.assertTrue(line.startswith("vars: variable_number_000 0  variable_number_001 1"))
        shown = line.count("variable_number_")
        self.assertTrue(line.endswith("  … %d more" % (200 - shown)), line)
        self.assertGreater(shown, 5)

    def test_the_frame_comes_before_a_loops_leftovers(self):
        # The case: 301 scalars left by a loop must not push the
        # DataFrame the model works on behind "… N more".
        r = self.ok("import numpy as np\n"
                    "import pandas as pd\n"
                    "sales = pd.DataFrame({'a': range(50), 'b': range(50)})\n"
                    "for i in range(300):\n"
                    "    globals()['v%d' % i] = i\n"
                    "arr = np.zeros(7)\n"
                    "big = list(range(40))\n"
                    "small = [1, 2]\n"
                    "def f(x):\n"
                    "    return x\n")
        line = r.line("vars:")
        self.assertLessEqual(len(line), _footer.VARS_MAX)
        self.assertTrue(line.startswith(
            "vars: sales 50x2 [a, b]  arr array 7 float64  big list of 40  f f()  "
            "small list of 2  i 299  v0 0  "), line)
        self.assertRegex(line, r"  … \d+ more$")

    def test_weight_orders_kinds_and_sizes(self):
        import numpy as np
        import pandas as pd
        values = [("s", "x"), ("t", "y" * 2000), ("n", 3), ("fn", len),
                  ("cls", dict), ("d", {i: i for i in range(20)}),
                  ("a_small", np.zeros(2)), ("a_big", np.zeros(20)),
                  ("df_small", pd.DataFrame({"a": [1]})),
                  ("df_big", pd.DataFrame({"a": range(10)})),
                  ("obj", object()), ("tiny", (1,))]
        ranked = [n for _, n, _ in sorted((( _footer.weight(v), n, v) for n, v in values),
                                          key=lambda t: (t[0], t[1]))]
        self.assertEqual(ranked, ["df_big", "df_small", "a_big", "a_small", "t", "d",
                                  "obj", "cls", "fn", "tiny", "n", "s"])

    def test_long_gone_line_is_bounded(self):
        r = self.ok("hs = [open('/dev/null') for _ in range(100)]\n"
                    "for i in range(100):\n"
                    "    globals()['handle_%03d' % i] = hs[i]\n"
                    "del i\n")
        line = r.line("gone next call:")
        self.assertLess(len(line), 400)
        self.assertRegex(line, r"… \d+ more$")

    def test_no_workspace_lines(self):
        # The agent adds them from its own walk (tests/unit/sandbox-agent/run.c).
        r = self.ok("open('new.txt', 'w').write('x')")
        self.assertNotIn("wrote:", r.footer)
        self.assertNotIn("workspace:", r.footer)


class Summaries(unittest.TestCase):

    def test_summaries(self):
        import numpy as np
        import pandas as pd
        S = _footer.summarize
        self.assertEqual(S("abc"), "3 chars")
        self.assertEqual(S(3), "3")
        self.assertEqual(S(2.5), "2.5")
        self.assertEqual(S(True), "True")
        self.assertEqual(S(None), "None")
        self.assertEqual(S(10 ** 40), "int")
        self.assertEqual(S([1, 2]), "list of 2")
        self.assertEqual(S((1,)), "tuple of 1")
        self.assertEqual(S({1}), "set of 1")
        self.assertEqual(S({"a": 1}), "1 keys")
        self.assertEqual(S(lambda: 1), "lambda")
        self.assertEqual(S(len), "len()")
        self.assertEqual(S(int), "class int")
        self.assertEqual(S(np.zeros((3, 4), dtype="int32")), "array 3x4 int32")
        df = pd.DataFrame({c: [1] for c in "abcdef"})
        self.assertEqual(S(df), "1x6 [a, b, c, d, …]")
        self.assertEqual(S(pd.Series([1.5], name="GBP")), "Series GBP 1 float64")

    def test_bounded_join(self):
        items = ["x" * 10] * 10
        s = _footer.bounded_join(items, 50)
        self.assertLessEqual(len(s), 50)
        self.assertTrue(s.endswith("… 7 more"), s)
        self.assertEqual(_footer.bounded_join(["a", "b"], 50), "a  b")


if __name__ == "__main__":
    unittest.main()
