"""The line each chart helper prints about its chart: the numbers in it are
checked against the data, not against a stored copy of the line."""
import contextlib
import io
import os
import re
import shutil
import sys
import tempfile
import unittest

from runner_util import PYTHON_DIR

sys.path.insert(0, PYTHON_DIR)

import numpy as np          # noqa: E402
import pandas as pd         # noqa: E402

import vivarium_charts as vc  # noqa: E402


def parse(line):
    """chart NAME: KIND ["TITLE"]; x...; LABEL: N points, first A, last B,
    min C, max D; ... -> (head, x part, {label: (n, first, last, min, max)})"""
    parts = line.split("; ")
    series = {}
    xpart = None
    for p in parts[1:]:
        m = re.match(r"^(.*): (\d+) points?, first (\S+), last (\S+), min (\S+), max (\S+)$", p)
        if m:
            series[m.group(1)] = (int(m.group(2)),) + tuple(float(v) for v in m.group(3, 4, 5, 6))
        elif p.startswith("x"):
            xpart = p
    return parts[0], xpart, series


class ChartWords(unittest.TestCase):

    def setUp(self):
        self.old = os.getcwd()
        self.dir = tempfile.mkdtemp(prefix="vivarium-words-")
        os.chdir(self.dir)

    def tearDown(self):
        os.chdir(self.old)
        shutil.rmtree(self.dir, ignore_errors=True)

    def draw(self, fn, *a, **kw):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            name = fn(*a, **kw)
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), 1, lines)
        return name, lines[0]

    def check_series(self, series, label, values):
        """values in x order, NaN where missing."""
        v = np.asarray(values, dtype=float)
        v = v[~np.isnan(v)]
        n, first, last, lo, hi = series[label]
        self.assertEqual(n, len(v))
        for got, want in ((first, v[0]), (last, v[-1]), (lo, v.min()), (hi, v.max())):
            self.assertAlmostEqual(got, want, delta=abs(want) * 1e-5 + 1e-9)

    def test_line_chart_in_x_order(self):
        rng = np.random.default_rng(5)
        idx = pd.date_range("2020-01-01", periods=400, freq="D")
        df = pd.DataFrame({"GBP": rng.normal(0.85, 0.02, 400),
                           "USD": rng.normal(1.1, 0.03, 400)}, index=idx)
        df.iloc[0, 0] = np.nan          # the first GBP point is missing
        shuffled = df.sample(frac=1, random_state=1)    # x order is not row order
        name, line = self.draw(vc.line_chart, shuffled, title="Exchange rates")
        head, xpart, series = parse(line)
        self.assertEqual(head, 'chart %s: line chart "Exchange rates"' % name)
        self.assertEqual(xpart, "x: 2020-01-01 to 2021-02-03")
        self.check_series(series, "GBP", df["GBP"])
        self.check_series(series, "USD", df["USD"])

    def test_scatter_and_bar(self):
        df = pd.DataFrame({"invest": [3.5, 1.0, 2.25, 8.0], "growth": [1.5, -2.0, 0.5, 4.0]})
        name, line = self.draw(vc.scatter_chart, df, x="invest", y="growth")
        head, xpart, series = parse(line)
        self.assertEqual(head, "chart %s: scatter chart" % name)
        self.assertEqual(xpart, "x (invest): 1 to 8")
        self.check_series(series, "growth", df.sort_values("invest")["growth"])

        bars = pd.DataFrame({"country": ["DE", "FR", "IT"], "2022": [1.5, "n/a", 3.0],
                             "2023": [2, 4, 6]})
        name, line = self.draw(vc.bar_chart, bars, x="country", y=["2022", "2023"])
        head, xpart, series = parse(line)
        self.assertEqual(xpart, "x: 3 categories, 'DE' to 'IT'")
        self.check_series(series, "2022", [1.5, np.nan, 3.0])
        self.check_series(series, "2023", [2, 4, 6])

    def test_many_series_and_bounded(self):
        df = pd.DataFrame({("column_%02d" % i) * 5: np.arange(5.0) * i for i in range(30)})
        _, line = self.draw(vc.line_chart, df, title="t" * 500)
        self.assertLessEqual(len(line), vc.DESCRIBE_MAX)
        self.assertIn("… 22 more series", line)

    def test_describe_off_and_empty_series(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            vc.line_chart(pd.DataFrame({"a": [1.0, 2.0]}), describe=False)
        self.assertEqual(out.getvalue(), "")
        # b's only value sits where x is missing: nothing of b is drawn.
        df = pd.DataFrame({"x": [1.0, np.nan], "a": [1.0, 2.0], "b": [np.nan, 5.0]})
        _, line = self.draw(vc.line_chart, df, x="x", y=["a", "b"])
        self.assertIn("a: 1 point, first 1, last 1, min 1, max 1; b: no values", line)


if __name__ == "__main__":
    unittest.main()
