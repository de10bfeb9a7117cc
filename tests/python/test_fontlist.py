"""vivarium's package start puts the image's matplotlib font list in
MPLCONFIGDIR (python/vivarium/__init__.py): copied when missing, never over
one that is there, and nothing at all when it cannot."""
import os
import sys
import tempfile
import unittest

from runner_util import PYTHON_DIR

sys.path.insert(0, PYTHON_DIR)

import vivarium  # noqa: E402


class SeedFontList(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.seed = os.path.join(self.tmp.name, "_fontlist")
        os.mkdir(self.seed)
        with open(os.path.join(self.seed, "fontlist-v390.json"), "w") as f:
            f.write('{"_version": 390}')
        with open(os.path.join(self.seed, "other.txt"), "w") as f:
            f.write("not a font list")
        self.dest = os.path.join(self.tmp.name, "home", ".matplotlib")

    def tearDown(self):
        self.tmp.cleanup()

    def test_copied_when_missing(self):
        vivarium._seed_font_list(self.seed, self.dest)
        self.assertEqual(os.listdir(self.dest), ["fontlist-v390.json"])
        with open(os.path.join(self.dest, "fontlist-v390.json")) as f:
            self.assertEqual(f.read(), '{"_version": 390}')
        self.assertEqual(os.stat(self.dest).st_mode & 0o777, 0o700)

    def test_existing_list_kept(self):
        os.makedirs(self.dest)
        with open(os.path.join(self.dest, "fontlist-v390.json"), "w") as f:
            f.write("mine")
        vivarium._seed_font_list(self.seed, self.dest)
        with open(os.path.join(self.dest, "fontlist-v390.json")) as f:
            self.assertEqual(f.read(), "mine")

    def test_nothing_without_seed_or_dest(self):
        vivarium._seed_font_list(os.path.join(self.tmp.name, "none"), self.dest)
        self.assertFalse(os.path.exists(self.dest))
        vivarium._seed_font_list(self.seed, "")
        self.assertFalse(os.path.exists(self.dest))

    @unittest.skipIf(os.geteuid() == 0, "root writes anywhere")
    def test_unwritable_dest_is_quiet(self):
        os.chmod(self.tmp.name, 0o500)
        try:
            vivarium._seed_font_list(self.seed, self.dest)
        finally:
            os.chmod(self.tmp.name, 0o700)
        self.assertFalse(os.path.exists(self.dest))

    def test_dest_a_file_is_quiet(self):
        os.makedirs(os.path.dirname(self.dest))
        with open(self.dest, "w") as f:
            f.write("x")
        vivarium._seed_font_list(self.seed, self.dest)
        with open(self.dest) as f:
            self.assertEqual(f.read(), "x")


if __name__ == "__main__":
    unittest.main()
