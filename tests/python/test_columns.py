"""A failed column lookup on a DataFrame names the frame's columns and the
closest ones, at the end of stderr and as the footer's last runner line;
nothing is said for lookups that were not about columns."""
import unittest

from runner_util import Workspace, has

FRAME = ("import pandas as pd\n"
         "df = pd.DataFrame({'Region': ['N', 'S'], 'Units': [1, 2], 'Unit price': [3., 4.]})\n")
LINE = ("columns of df (3): 'Region', 'Units', 'Unit price'; "
        "closest to 'Reigon': 'Region'")


@unittest.skipUnless(has("pandas"), "needs pandas")
class Columns(Workspace):

    def said(self, r):
        """The columns line from stderr, checked against the footer's."""
        self.assertEqual(r.status, 1)
        last = r.stderr.rstrip("\n").split("\n")[-1]
        if not last.startswith("columns of "):
            self.assertIsNone(r.line("columns of "), r.footer)
            return None
        self.assertEqual(r.footer.split("\n")[-1], last)
        return last

    def test_key_error(self):
        r = self.run_code(FRAME + "df['Reigon']\n")
        self.assertEqual(self.said(r), LINE)
        self.assertEqual(r.report["error"], "KeyError: 'Reigon'")
        # The traceback comes first, whole.
        self.assertIn("KeyError: 'Reigon'\n" + LINE + "\n", r.stderr)

    def test_the_ways_a_column_is_missed(self):
        self.ok(FRAME)
        for code in ("df.Reigon", "df[df.Reigon > 1]", "df[['Units', 'Reigon']]",
                     "df.groupby('Reigon').Units.sum()", "df.sort_values('Reigon')",
                     "df.loc[:, 'Reigon']", "df.drop(columns=['Reigon'])",
                     "df.set_index('Reigon')",
                     "df.apply(lambda row: row['Reigon'], axis=1)"):
            self.assertEqual(self.said(self.run_code(code)), LINE, code)
        # Case and blanks first, then what difflib finds.
        r = self.run_code("df['unit_price']")
        self.assertEqual(self.said(r), "columns of df (3): 'Region', 'Units', 'Unit price'; "
                                       "closest to 'unit_price': 'Unit price'")
        r = self.run_code("df['units ']")
        self.assertEqual(self.said(r), "columns of df (3): 'Region', 'Units', 'Unit price'; "
                                       "closest to 'units ': 'Units'")

    def test_not_about_columns(self):
        self.ok(FRAME + "m = {'N': 1}\n")
        for code in ("df.loc[7]", "m['S']", "df.apply(lambda row: m[row.Region], axis=1)",
                     "df.Units.nope", "df.Units[7]", "raise KeyError('Reigon')"):
            r = self.run_code(code)
            self.assertIsNone(self.said(r), code)
        self.assertEqual(self.said(self.run_code("df['Reigon']")), LINE)

    def test_bounded_and_unnamed(self):
        r = self.run_code("import pandas as pd\n"
                          "wide = pd.DataFrame({'c%03d' % i: [i] for i in range(300)})\n"
                          "wide['c1000']\n")
        line = self.said(r)
        self.assertTrue(line.startswith("columns of wide (300): 'c000', 'c001', "), line)
        self.assertIn("'c059' (+240 more); closest to 'c1000': ", line)
        self.assertLess(len(line), 1600)
        r = self.run_code("import pandas as pd\n"
                          "long = pd.DataFrame({('x' * 100 + str(i)): [i] for i in range(60)})\n"
                          "long['y']\n")
        line = self.said(r)
        self.assertLess(len(line), 1600)
        self.assertRegex(line, r"\(\+\d+ more\)$")
        r = self.run_code("import pandas as pd\npd.DataFrame({'a': [1]})['b']\n")
        self.assertEqual(self.said(r), "columns of the DataFrame (1): 'a'")

    def test_said_without_the_footer(self):
        r = self.run_code(FRAME + "df['Reigon']\n", VIVARIUM_STATE_SUMMARY=0)
        self.assertIsNone(r.footer)
        self.assertEqual(r.stderr.rstrip("\n").split("\n")[-1], LINE)


if __name__ == "__main__":
    unittest.main()
