"""A warm spare restores the namespace before its run comes (_zygote.py's
_prepare, _runner.prepare): the run must see exactly what it would have
restored itself.  Every run here goes through the zygote; a hint is the
workspace the spare is told to restore ahead, as the agent tells it the
last run's."""
import os
import shutil
import unittest

from runner_util import Workspace

# Values whose unpickling shows where and when it happens: Probe becomes
# the value of $VIVARIUM_PROBE at restore (the run's environment has it,
# the spare's, before its run, does not); Loud prints; Touch creates a
# file, so a test knows the spare's restore has begun; Noisy says when it
# is released.
CLASSES = """import os
class Probe:
    def __reduce__(self):
        return (os.getenv, ('VIVARIUM_PROBE',))
class Loud:
    def __reduce__(self):
        return (print, ('said while restoring',))
class Noisy:
    def __del__(self):
        print('del Noisy', flush=True)
class Touch:
    def __init__(self, path):
        self.path = path
    def __reduce__(self):
        return (open, (self.path, 'a'))
"""


class Prepare(Workspace):

    def warm(self, code, hint=True, **over):
        r = self.ok(code, warm=True, hint=hint, VIVARIUM_PROBE="run", **over)
        return r

    def test_restored_ahead(self):
        self.warm(CLASSES + "x = 41\ne = Probe()\n")
        # Told this workspace, the spare restored it before the run, in its
        # own environment: the probe found no VIVARIUM_PROBE.
        r = self.warm("print(x + 1, e)")
        self.assertEqual(r.stdout, "42 None\n")
        self.assertTrue(r.line("namespace:").startswith("namespace: restored "))
        # Not told: the run restored it, in its environment.
        self.warm(CLASSES + "e = Probe()\n")
        r = self.warm("print(x + 1, e)", hint=None)
        self.assertEqual(r.stdout, "42 run\n")

    def test_other_workspace(self):
        other = os.path.join(self.tmp, "other")
        os.mkdir(other)
        self.warm(CLASSES + "x = 1\ne = Probe()\n")
        r = self.warm("print(x, e)", hint=other)
        self.assertEqual(r.stdout, "1 run\n")

    def test_output_while_restoring_is_the_runs(self):
        self.warm(CLASSES + "x = 1\nsaid = Loud()\ne = Probe()\n")
        r = self.warm("print(x, e)")
        # The spare's restore printed: it was dropped and the run
        # restored for itself, so the run shows what the restore said.
        self.assertEqual(r.stdout, "said while restoring\n1 run\n")

    def test_store_replaced_after_the_restore(self):
        touched = os.path.join(self.tmp, "touched")
        self.warm(CLASSES + "x = 1\nn = Noisy()\nt = Touch(%r)\n" % touched)
        # Another store, with x = 2, made in another workspace.
        other = os.path.join(self.tmp, "other")
        os.mkdir(other)
        ws, self.ws = self.ws, other
        self.warm("x = 2\n", hint=None)
        self.ws = ws
        new = os.path.join(other, ".vivarium", "namespace.store")
        # The spare begins its restore of x = 1 (Touch opens the file);
        # then the store is replaced before the run comes.
        self.assertFalse(os.path.exists(touched))
        p, run_dir = self.start("print(x)", warm=True, hint=self.ws,
                                VIVARIUM_PROBE="run")
        self.assertTrue(self.wait_for(touched, 30))
        shutil.copy(new, self.store + ".new")
        os.replace(self.store + ".new", self.store)
        r = self.finish(p, run_dir)
        self.assertEqual(r.status, 0, r.stderr)
        # Nothing of the restore it did not use: not even a __del__.
        self.assertEqual(r.stdout, "2\n")

    def test_released_at_exit_as_cold(self):
        self.warm(CLASSES + "n = Noisy()\n")
        cold = self.ok("print(1)", warm=False)
        warm = self.warm("print(1)")
        self.assertEqual(cold.stdout, "1\ndel Noisy\n")
        self.assertEqual(warm.stdout, cold.stdout)

    def test_fresh(self):
        self.warm("x = 1\n")
        r = self.warm("print('x' in dir())", VIVARIUM_FRESH="1")
        self.assertEqual(r.stdout, "False\n")
        self.assertEqual(r.line("namespace:"),
                         "namespace: fresh start, discarded 1 stored name(s)")

    def test_unreadable_store(self):
        self.warm("x = 1\n")
        with open(self.store, "r+b") as f:
            f.seek(8)
            f.write(b"\xff" * 32)
        r = self.warm("print('x' in dir())")
        self.assertEqual(r.stdout, "False\n")
        self.assertIn("the store was unreadable", r.line("namespace:"))


if __name__ == "__main__":
    unittest.main()
