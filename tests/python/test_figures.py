"""Figures are never lost: plt.show(), fig.show() and the figures left open
(after a normal end or an exception) become figure-N.png in the workspace,
named in report.json's figures member, never over an existing file and
never twice; a run that does not import matplotlib does not pay for it."""
import os
import unittest

from runner_util import WARM, Workspace, has

PNG = b"\x89PNG\r\n\x1a\n"


@unittest.skipUnless(has("matplotlib"), "needs matplotlib")
class Figures(Workspace):

    def pngs(self):
        return sorted(n for n in os.listdir(self.ws) if n.endswith(".png"))

    def assertPng(self, name):
        with open(os.path.join(self.ws, name), "rb") as f:
            self.assertEqual(f.read(8), PNG, name)

    def test_show_saves_and_closes(self):
        r = self.ok("import sys\n"
                    "print('matplotlib' in sys.modules)\n"
                    "import matplotlib\n"
                    "matplotlib.use('Agg')\n"
                    "import matplotlib.pyplot as plt\n"
                    "plt.plot([1, 3, 2])\n"
                    "plt.show()\n"
                    "print(plt.get_fignums())\n")
        # Nothing on stdout for the figure, and no "non-interactive" warning.
        self.assertEqual((r.stdout, r.stderr), ("%s\n[]\n" % WARM, ""))
        self.assertEqual(r.figures, [("figure-1.png", "plt.show()")])
        self.assertPng("figure-1.png")
        # No figure, no member.
        self.assertNotIn("figures", self.ok("print(1)").report)

    def test_fig_show(self):
        r = self.ok("import matplotlib.pyplot as plt\n"
                    "fig, ax = plt.subplots()\n"
                    "ax.plot([1, 2])\n"
                    "fig.show()\n"
                    "print(plt.get_fignums())\n")
        self.assertEqual((r.stdout, r.stderr), ("[]\n", ""))
        self.assertEqual(r.figures, [("figure-1.png", "fig.show()")])

    def test_left_open_after_an_end_or_an_exception(self):
        r = self.ok("import matplotlib.pyplot as plt\n"
                    "plt.figure(); plt.plot([1])\n"
                    "plt.figure(); plt.plot([2])\n")
        self.assertEqual(r.figures, [("figure-1.png", "left open"),
                                     ("figure-2.png", "left open")])
        r = self.run_code("import matplotlib.pyplot as plt\n"
                          "plt.plot([1, 2])\n"
                          "raise ValueError('after the plot')\n")
        self.assertEqual(r.status, 1)
        self.assertEqual(r.figures, [("figure-3.png", "left open")])
        self.assertEqual(self.pngs(), ["figure-1.png", "figure-2.png", "figure-3.png"])
        for name in self.pngs():
            self.assertPng(name)

    def test_never_overwrites(self):
        for name in ("figure-1.png", "figure-3.png"):
            with open(os.path.join(self.ws, name), "wb") as f:
                f.write(b"mine")
        r = self.ok("import matplotlib.pyplot as plt\n"
                    "plt.plot([1]); plt.show()\n"
                    "plt.plot([2]); plt.show()\n"
                    "plt.plot([3])\n")
        self.assertEqual(r.figures, [("figure-2.png", "plt.show()"),
                                     ("figure-4.png", "plt.show()"),
                                     ("figure-5.png", "left open")])
        for name in ("figure-1.png", "figure-3.png"):
            with open(os.path.join(self.ws, name), "rb") as f:
                self.assertEqual(f.read(), b"mine")

    def test_saved_figures_not_saved_again(self):
        r = self.ok("import matplotlib.pyplot as plt\n"
                    "plt.plot([1]); plt.savefig('mine.png'); plt.show()\n"
                    "fig, ax = plt.subplots(); ax.plot([2]); fig.savefig('two.png')\n"
                    "plt.figure(); plt.plot([3])\n")
        self.assertEqual(r.figures, [("figure-1.png", "left open")])
        self.assertEqual(self.pngs(), ["figure-1.png", "mine.png", "two.png"])

    @unittest.skipUnless(has("pandas"), "needs pandas")
    def test_chart_helpers_and_pandas(self):
        r = self.ok("import pandas as pd\n"
                    "from vivarium_charts import line_chart\n"
                    "df = pd.DataFrame({'a': [1, 3, 2]})\n"
                    "line_chart(df, filename='helper.png', describe=False)\n"
                    "import matplotlib.pyplot as plt\n"
                    "plt.figure(figsize=(8, 4))\n"
                    "df.plot()\n")
        # The helper's figure is its own, saved and not open; df.plot() is
        # pyplot's, left open, on a figure of its own: the empty one before
        # it is not saved.
        self.assertEqual(r.figures, [("figure-1.png", "left open")])
        self.assertEqual(self.pngs(), ["figure-1.png", "helper.png"])

    def test_figures_across_calls(self):
        r = self.ok("import matplotlib.pyplot as plt\n"
                    "fig, ax = plt.subplots()\n"
                    "ax.plot([1, 2])\n")
        self.assertEqual(r.figures, [("figure-1.png", "left open")])
        # Closed at the end of that call: kept in fig, not open again.
        r = self.ok("print(plt.get_fignums())")
        self.assertEqual((r.stdout, r.figures), ("[]\n", []))
        # A figure as the last line is shown, as a notebook shows it.
        r = self.ok("ax.set_title('again')\nfig")
        self.assertEqual((r.stdout, r.figures), ("", [("figure-2.png", "last line")]))
        # The restored alias is the patched pyplot.
        r = self.ok("plt.plot([3]); plt.show()")
        self.assertEqual(r.figures, [("figure-3.png", "plt.show()")])

    def test_show_imported_by_name(self):
        r = self.ok("from matplotlib.pyplot import plot, show\n"
                    "plot([1, 2])\n"
                    "show()\n")
        self.assertEqual(r.figures, [("figure-1.png", "plt.show()")])


if __name__ == "__main__":
    unittest.main()
