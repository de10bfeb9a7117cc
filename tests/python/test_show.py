"""The last expression is shown, as a notebook shows it: its repr after the
run's own output, bounded, never for None, an assignment, a line ending in
';' or matplotlib's return values; tracebacks and the namespace as if it
were an ordinary statement."""
import unittest

from runner_util import Workspace, has

CLIP_NOTE = ("[... the value's repr is 1,000,002 characters; 5,000 shown. "
             "print() a slice to see more]")


class LastExpression(Workspace):

    def test_value_shown_after_the_output(self):
        r = self.ok("x = 5\nprint('first')\nx * 2\n")
        self.assertEqual(r.stdout, "first\n10\n")
        r = self.ok("'text'")
        self.assertEqual(r.stdout, "'text'\n")
        # Several lines and comments after it.
        r = self.ok("d = {'a': [1,\n  2]}\nd['a'] + [\n  3]  # the list\n\n# end\n")
        self.assertEqual(r.stdout, "[1, 2, 3]\n")

    def test_not_shown(self):
        for code in ("y = 3", "y = 3\ny;", "y = 3\ny ;  # quiet", "None",
                     "def f():\n    pass\nf()", "import os", "for i in range(2):\n    i",
                     "y = 3\nprint(y);"):
            r = self.ok(code)
            self.assertEqual(r.stdout, "3\n" if code.endswith("print(y);") else "", code)
        # A ';' inside a comment or a string does not silence it.
        self.assertEqual(self.ok("7  # ;").stdout, "7\n")
        self.assertEqual(self.ok("'é;'").stdout, "'é;'\n")
        self.assertEqual(self.ok("x = 1; x").stdout, "1\n")

    def test_long_repr_is_clipped(self):
        r = self.ok("'x' * 1_000_000")
        self.assertEqual(r.stdout, "'" + "x" * 4999 + "\n" + CLIP_NOTE + "\n")

    def test_repr_that_raises(self):
        r = self.ok("class Bad:\n"
                    "    def __repr__(self):\n"
                    "        raise ValueError('no repr today')\n"
                    "print('ran')\n"
                    "Bad()\n")
        self.assertEqual(r.stdout, "ran\n")
        self.assertEqual(r.stderr, "(the last line's value can't be shown: repr() raised "
                                   "ValueError: no repr today)\n")

    def test_namespace_and_footer_unchanged(self):
        a = self.ok("x = 41\nx + 1")
        self.assertEqual(a.stdout, "42\n")
        self.assertEqual(a.line("vars:"), "vars: x 41")
        r = self.ok("print(sorted(k for k in globals() if not k.startswith('__')))")
        self.assertEqual(r.stdout, "['x']\n")

    def test_an_ordinary_statement_otherwise(self):
        # Shown when it succeeds; a normal error, with the source's line
        # numbers, when it raises; an exit when it exits.
        code = "def f(d):\n    return d['k']\nx = %s\nf(x)\n"
        self.assertEqual(self.ok(code % "{'k': 1}").stdout, "1\n")
        r = self.run_code(code % "{}")
        self.assertEqual((r.status, r.report["exit_code"]), (1, 1))
        self.assertEqual(r.stdout, "")
        self.assertEqual(r.report["error"], "KeyError: 'k'")
        lines = r.stderr.rstrip("\n").split("\n")
        self.assertEqual(lines[:3], ["Traceback (most recent call last):",
                                     '  File "<run_python>", line 4, in <module>',
                                     "    f(x)"])
        self.assertIn('  File "<run_python>", line 2, in f', lines)
        self.assertEqual(lines[-1], "KeyError: 'k'")
        self.assertNotIn("_runner", r.stderr)
        # The statements before it keep their line numbers too.
        r = self.run_code("x = 1\n1 / 0\nx\n")
        self.assertIn('  File "<run_python>", line 2, in <module>', r.stderr)
        r = self.run_code("import sys\nsys.exit(3)")
        self.assertEqual((r.status, r.stdout), (3, ""))

    @unittest.skipUnless(has("pandas"), "needs pandas")
    def test_dataframe_as_pandas_prints_it(self):
        self.ok("import pandas as pd\n"
                "df = pd.DataFrame({'Region': ['North', 'South'] * 50, 'Units': range(100)})\n")
        shown = self.ok("df").stdout
        printed = self.ok("print(repr(df))").stdout
        self.assertEqual(shown, printed)
        self.assertIn("[100 rows x 2 columns]", shown)
        self.assertEqual(self.ok("int(df.Units.sum())").stdout, "4950\n")

    @unittest.skipUnless(has("matplotlib"), "needs matplotlib")
    def test_matplotlib_values_not_shown(self):
        for code in ("plt.plot([1, 2])", "plt.subplots()", "plt.subplots(2, 2)",
                     "plt.hist([1, 2, 2])", "plt.bar([1, 2], [3, 4])",
                     "fig, ax = plt.subplots()\nax", "plt.plot([1])\nplt.gca().get_lines()",
                     "plt.pie([1, 2])"):
            r = self.ok("import matplotlib.pyplot as plt\n" + code)
            self.assertEqual((r.stdout, r.stderr), ("", ""), code)
        # What holds a figure, as seaborn's grids do (sns.relplot(...)).
        r = self.ok("import matplotlib.pyplot as plt\n"
                    "class FacetGrid:\n"
                    "    def __init__(self):\n"
                    "        self.figure = plt.figure()\n"
                    "FacetGrid()\n")
        self.assertEqual(r.stdout, "")
        # An empty list is just a list.
        self.assertEqual(self.ok("import matplotlib.pyplot as plt\n[]").stdout, "[]\n")
        if has("pandas"):
            r = self.ok("import pandas as pd\npd.DataFrame({'a': [1, 3, 2]}).plot()")
            self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    unittest.main()
