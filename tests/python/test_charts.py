"""vivarium_charts: every helper writes a chat-sized PNG for the frames the
model meets (dates, junk strings, several y columns), and clean_numeric
gets through the statistics offices' traps."""
import math
import os
import shutil
import struct
import sys
import tempfile
import unittest

from runner_util import PYTHON_DIR, Workspace

sys.path.insert(0, PYTHON_DIR)

import numpy as np          # noqa: E402
import pandas as pd         # noqa: E402

import vivarium_charts as vc  # noqa: E402
from vivarium_charts import bar_chart, clean_numeric, line_chart, scatter_chart  # noqa: E402

WIDTH, HEIGHT = 960, 540


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


def colours(path):
    from PIL import Image
    with Image.open(path) as im:
        return len(im.convert("RGB").getcolors(1 << 20) or [])


def dated():
    return pd.DataFrame({
        "date": pd.date_range("2019-01-01", periods=36, freq="MS"),
        "GBP": np.linspace(1000, 250000, 36),
        "USD": ["NA" if i % 3 == 0 else "{:,}".format(1200 + i * 1000) for i in range(36)],
    })


def with_gaps():
    """Text columns with real missing values, as read_csv gives them."""
    return pd.DataFrame({
        "country": ["DE", None, "FR", np.nan],
        "when": ["2020-01", None, "2020-03", "2020-04"],
        "v": ["1", "NA", "3", "4"],
    })


def restored(df):
    """df through protocol 5 with out-of-band buffers, as the namespace
    store saves and restores it."""
    import pickle
    bufs = []
    data = pickle.dumps(df, protocol=5, buffer_callback=bufs.append)
    return pickle.loads(data, buffers=[bytearray(b.raw()) for b in bufs])


def gaps(values):
    """values with None and NaN spelled out; the strings 'None' and 'nan'
    stay strings, so the two can't be confused."""
    return ["<None>" if v is None else "<NaN>" if isinstance(v, float) and math.isnan(v)
            else v for v in values]


def junk():
    return pd.DataFrame({
        "country": ["DE", "FR", "IT", "ES", "PL"],
        "ulc": ["1,234", "n/a", "", "2,345.5", ":"],
        "mrc": [":", "12", "-", "15", "NA"],
    })


class Charts(unittest.TestCase):

    def setUp(self):
        self.old = os.getcwd()
        self.dir = tempfile.mkdtemp(prefix="vivarium-charts-")
        os.chdir(self.dir)

    def tearDown(self):
        os.chdir(self.old)
        shutil.rmtree(self.dir, ignore_errors=True)

    def assertChart(self, name):
        self.assertTrue(os.path.isfile(name), name)
        self.assertEqual(png_size(name), (WIDTH, HEIGHT))
        self.assertGreater(colours(name), 20, "the chart looks empty")

    def capture(self):
        """Replaces the saver to look at the figure a helper drew."""
        figs = []
        real = vc._save

        def grab(fig, filename, title, kind):
            figs.append(fig)
            return real(fig, filename, title, kind)
        vc._save = grab
        self.addCleanup(setattr, vc, "_save", real)
        return figs

    # ---------------------------------------------------------- line

    def test_line_chart_with_dates(self):
        figs = self.capture()
        name = line_chart(dated(), x="date", title="Exchange rates, 2019=100")
        self.assertEqual(name, "exchange_rates_2019_100.png")
        self.assertChart(name)
        ax = figs[0].axes[0]
        self.assertEqual([ln.get_label() for ln in ax.get_lines()], ["GBP", "USD"])
        # Junk "NA" rows are stepped over, not plotted and not fatal.
        self.assertEqual(len(ax.get_lines()[1].get_xdata()), 24)
        self.assertFalse(ax.spines["top"].get_visible())
        self.assertFalse(ax.spines["right"].get_visible())
        self.assertTrue(all(t.get_rotation() == 30 for t in ax.get_xticklabels()))
        labels = [t.get_text() for t in ax.get_yticklabels()]
        self.assertIn("100,000", labels)

    def test_line_chart_defaults_to_index_and_numeric_columns(self):
        figs = self.capture()
        df = dated().set_index("date")
        df["note"] = "text"
        name = line_chart(df)
        self.assertEqual(name, "line_chart.png")
        self.assertChart(name)
        self.assertEqual([ln.get_label() for ln in figs[0].axes[0].get_lines()],
                         ["GBP", "USD"])

    def test_x_column_is_not_plotted_against_itself(self):
        figs = self.capture()
        df = pd.DataFrame({"year": [2000, 2001, 2002], "de": [1, 2, 3], "fr": [2, 3, 1]})
        line_chart(df, x="year")
        ax = figs[0].axes[0]
        self.assertEqual([ln.get_label() for ln in ax.get_lines()], ["de", "fr"])
        self.assertEqual(list(ax.get_lines()[0].get_xdata()), [2000, 2001, 2002])

    def test_string_dates_and_quarters(self):
        figs = self.capture()
        df = pd.DataFrame({"q": ["2020-Q1", "2020-Q2", "2020-Q3", "2020-Q4"],
                           "v": ["1", "2", "NA", "4"]})
        self.assertChart(line_chart(df, x="q", y="v"))
        xs = figs[0].axes[0].get_lines()[0].get_xdata()
        self.assertEqual(len(xs), 3)
        self.assertEqual(str(pd.Timestamp(xs[-1]).date()), "2020-10-01")

    def test_default_names_never_overwrite(self):
        a = line_chart(dated(), x="date", title="Same")
        b = line_chart(dated(), x="date", title="Same")
        c = bar_chart(junk(), x="country")
        d = bar_chart(junk(), x="country")
        self.assertEqual([a, b, c, d], ["same.png", "same-2.png", "bar_chart.png",
                                        "bar_chart-2.png"])
        for n in (a, b, c, d):
            self.assertChart(n)

    def test_named_file_is_overwritten(self):
        with open("mine.png", "wb") as f:
            f.write(b"old")
        self.assertEqual(line_chart(dated(), x="date", filename="mine.png"), "mine.png")
        self.assertChart("mine.png")

    def test_data_left_alone(self):
        # On pandas 1.5 a restored frame is where astype(str) used to write
        # 'None' and 'nan' over the caller's missing values.
        for df in (with_gaps(), restored(with_gaps())):
            out = clean_numeric(df)
            self.assertEqual(gaps(out["country"]), ["DE", "<None>", "FR", "<NaN>"])
            self.assertEqual(gaps(out["v"]), [1.0, "<NaN>", 3.0, 4.0])
            bar_chart(df, x="country", y="v", describe=False)
            line_chart(df, x="when", y="v", describe=False)
            line_chart(df, describe=False)
            pd.testing.assert_frame_equal(df, with_gaps())
            self.assertEqual(gaps(df["country"]), ["DE", "<None>", "FR", "<NaN>"])
            self.assertEqual(gaps(df["when"]), ["2020-01", "<None>", "2020-03", "2020-04"])

    def test_pyplot_state_untouched(self):
        import matplotlib.pyplot as plt
        before = plt.get_fignums()
        line_chart(dated(), x="date")
        self.assertEqual(plt.get_fignums(), before)

    # ----------------------------------------------------------- bar

    def test_grouped_bars_from_junk_strings(self):
        figs = self.capture()
        name = bar_chart(junk(), x="country", y=["ulc", "mrc"], title="Grouped")
        self.assertChart(name)
        ax = figs[0].axes[0]
        self.assertEqual(len(ax.patches), 10)
        widths = {round(p.get_width(), 3) for p in ax.patches}
        self.assertEqual(widths, {0.4})
        self.assertEqual([t.get_text() for t in ax.get_xticklabels()],
                         ["DE", "FR", "IT", "ES", "PL"])
        self.assertEqual(ax.get_legend().get_texts()[1].get_text(), "mrc")

    def test_horizontal_bars(self):
        figs = self.capture()
        name = bar_chart(junk(), x="country", y="ulc", horizontal=True)
        self.assertChart(name)
        ax = figs[0].axes[0]
        self.assertEqual(len(ax.patches), 5)
        self.assertEqual(ax.patches[0].get_width(), 1234.0)
        self.assertIn("1,000", [t.get_text() for t in ax.get_xticklabels()])

    def test_bars_over_dates_label_periods(self):
        figs = self.capture()
        df = pd.DataFrame({"y": pd.to_datetime(["2021-01-01", "2022-01-01", "2023-01-01"]),
                           "v": [1, 2, 3]})
        self.assertChart(bar_chart(df, x="y"))
        self.assertEqual([t.get_text() for t in figs[0].axes[0].get_xticklabels()],
                         ["2021", "2022", "2023"])

    # ------------------------------------------------------- scatter

    def test_scatter_with_junk(self):
        figs = self.capture()
        df = pd.DataFrame({"invest": [1, 2, 3, "n/a", 5, 6],
                           "growth": ["0.1", "0.2", "NA", "0.4", "0.5", ""]})
        name = scatter_chart(df, x="invest", y="growth")
        self.assertEqual(name, "scatter_chart.png")
        self.assertChart(name)
        self.assertEqual(len(figs[0].axes[0].collections[0].get_offsets()), 3)

    def test_scatter_several_y(self):
        figs = self.capture()
        df = pd.DataFrame({"x": range(20), "a": np.arange(20) ** 2, "b": np.arange(20) * 3})
        self.assertChart(scatter_chart(df, x="x"))
        self.assertEqual(len(figs[0].axes[0].collections), 2)

    def test_scatter_needs_numbers(self):
        with self.assertRaisesRegex(ValueError, "scatter chart needs numbers"):
            scatter_chart(junk(), x="country", y="ulc")

    # -------------------------------------------------------- errors

    def test_clear_errors(self):
        with self.assertRaisesRegex(KeyError, "no column 'nope' for x; the columns are: "
                                    "'country', 'ulc', 'mrc'"):
            line_chart(junk(), x="nope")
        with self.assertRaisesRegex(KeyError, "no column 'zz' for y"):
            bar_chart(junk(), y=["ulc", "zz"])
        with self.assertRaisesRegex(ValueError, "no numeric column to plot"):
            line_chart(pd.DataFrame({"a": ["x", "y"]}))
        with self.assertRaisesRegex(ValueError, "column 'country' has no numeric values"):
            bar_chart(junk(), y="country")
        self.assertEqual(os.listdir("."), [], "a failed chart left a file behind")

    def test_series_input(self):
        s = pd.Series([1, 2, 3], index=pd.date_range("2020", periods=3, freq="D"), name="v")
        self.assertChart(line_chart(s))

    # ---------------------------------------------------- formatter

    def test_thousands_formatter(self):
        f = vc._thousands_formatter()
        f.set_locs([0, 50000, 100000])
        self.assertEqual([f(v) for v in (0, 50000, 100000)], ["0", "50,000", "100,000"])
        f.set_locs([1.0, 1.25, 1.5])
        self.assertEqual([f(v) for v in (1.0, 1.25)], ["1.00", "1.25"])
        f.set_locs([-0.5, 0.0, 0.5])
        self.assertEqual([f(v) for v in (-0.5, -0.0, 0.5)], ["-0.5", "0", "0.5"])


class CleanNumeric(unittest.TestCase):

    def test_reference_traps(self):
        df = pd.DataFrame({
            "ameco": ["1.5", "NA", "2.5", "NA"],
            "eurostat": ["12.5", ":", "13.1 p", "1 234"],
            "misc": ["n/a", "", "-", "1,234,567.5"],
            "label": ["DE", "FR", "IT", "ES"],
            "nothing": ["NA", ":", "", "n/a"],
            "already": [1, 2, 3, 4],
            "when": pd.date_range("2020", periods=4, freq="D"),
        })
        orig = df.copy()
        out = clean_numeric(df)
        self.assertEqual(out["ameco"].tolist()[0::2], [1.5, 2.5])
        self.assertTrue(out["ameco"].isna().tolist()[1::2] == [True, True])
        self.assertEqual(out["eurostat"].tolist()[0], 12.5)
        self.assertTrue(math.isnan(out["eurostat"][1]))
        self.assertEqual(out["eurostat"].tolist()[2:], [13.1, 1234.0])
        self.assertTrue(out["misc"][:3].isna().all())
        self.assertEqual(out["misc"][3], 1234567.5)
        # Never destroys a column with nothing numeric in it.
        self.assertEqual(out["label"].tolist(), ["DE", "FR", "IT", "ES"])
        self.assertEqual(out["nothing"].tolist(), ["NA", ":", "", "n/a"])
        self.assertTrue((out["already"] == df["already"]).all())
        self.assertEqual(out["when"].dtype, df["when"].dtype)
        for c in ("ameco", "eurostat", "misc"):
            self.assertEqual(out[c].dtype, np.float64, c)
        pd.testing.assert_frame_equal(df, orig)     # the input is left alone

    def test_arithmetic_works_after(self):
        df = pd.DataFrame({"PLCM": ["100", "NA", "110"], "PLCDQ": ["1,000", ":", "2,000"]})
        df = clean_numeric(df, ["PLCM", "PLCDQ"])
        self.assertEqual((df.PLCM * 2).sum(), 420.0)
        self.assertEqual(df.PLCDQ.sum(), 3000.0)

    def test_only_the_named_columns(self):
        df = pd.DataFrame({"a": ["1", "NA"], "b": ["2", "NA"]})
        out = clean_numeric(df, "a")
        self.assertEqual(out["a"].dtype, np.float64)
        self.assertEqual(out["b"].tolist(), ["2", "NA"])

    def test_mostly_text_column_untouched_unless_named(self):
        df = pd.DataFrame({"code": ["DE", "FR", "IT", "1"]})
        self.assertEqual(clean_numeric(df)["code"].tolist(), ["DE", "FR", "IT", "1"])
        named = clean_numeric(df, ["code"])["code"]
        self.assertEqual(named.isna().sum(), 3)
        self.assertEqual(named.iloc[3], 1.0)

    def test_decimal_comma(self):
        df = pd.DataFrame({"x": ["3,14", "2,5", "NA", "1.234,5"]})
        self.assertEqual(clean_numeric(df)["x"].tolist()[:2], [3.14, 2.5])
        self.assertEqual(clean_numeric(df)["x"].tolist()[3], 1234.5)

    def test_thousands_not_mistaken_for_decimal(self):
        df = pd.DataFrame({"x": ["1,234", "12,345", "999"]})
        self.assertEqual(clean_numeric(df)["x"].tolist(), [1234.0, 12345.0, 999.0])

    def test_series_and_bad_input(self):
        s = clean_numeric(pd.Series(["1", "NA", "3"]))
        self.assertEqual(s.dropna().tolist(), [1.0, 3.0])
        with self.assertRaises(TypeError):
            clean_numeric([1, 2])
        with self.assertRaisesRegex(KeyError, "no column 'zz'"):
            clean_numeric(pd.DataFrame({"a": [1]}), ["zz"])


class StoredFrame(Workspace):
    """The same through the runner: a frame saved by one call and restored
    by the next."""

    def test_restored_frame_left_alone(self):
        self.ok("import numpy as np, pandas as pd\n"
                "df = pd.DataFrame({'country': ['DE', None, 'FR', np.nan],"
                " 'v': ['1', 'NA', '3', '4']})\n")
        r = self.ok("from vivarium_charts import bar_chart, clean_numeric\n"
                    "out = clean_numeric(df)\n"
                    "bar_chart(df, x='country', y='v', describe=False)\n"
                    "print(out.country.tolist(), out.v.tolist())\n"
                    "print(df.country.tolist(), df.v.tolist())\n")
        self.assertEqual(r.stdout, "['DE', None, 'FR', nan] [1.0, nan, 3.0, 4.0]\n"
                                   "['DE', None, 'FR', nan] ['1', 'NA', '3', '4']\n")
        r = self.ok("print(df.country.tolist())")
        self.assertEqual(r.stdout, "['DE', None, 'FR', nan]\n")


if __name__ == "__main__":
    unittest.main()
