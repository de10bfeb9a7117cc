"""The runner's side of the contract: code runs as __main__ with the
workspace last on sys.path (no workspace file stands in for a module),
tracebacks point at the user's lines, exit codes, report.json, output that
survives a kill, and main() callable in-process (as a fork server would)."""
import json
import os
import subprocess
import sys
import time
import unittest

from runner_util import PYTHON, PYTHON_DIR, WARM, Workspace, has


class Running(Workspace):

    def test_traceback_points_at_user_lines(self):
        r = self.run_code("def f(x):\n"
                          "    return 1 / x\n"
                          "print('before')\n"
                          "f(0)\n")
        self.assertEqual(r.status, 1)
        self.assertEqual(r.report["exit_code"], 1)
        self.assertEqual(r.stdout, "before\n")
        lines = r.stderr.rstrip("\n").split("\n")
        self.assertEqual(lines[0], "Traceback (most recent call last):")
        self.assertEqual(lines[1], '  File "<run_python>", line 4, in <module>')
        self.assertEqual(lines[2], "    f(0)")
        self.assertIn('  File "<run_python>", line 2, in f', lines)
        self.assertIn("    return 1 / x", lines)
        self.assertEqual(lines[-1], "ZeroDivisionError: division by zero")
        self.assertNotIn("_runner", r.stderr)
        self.assertNotIn("vivarium", r.stderr)

    def test_traceback_through_a_library(self):
        r = self.run_code("import json\njson.loads('{')\n")
        self.assertEqual(r.status, 1)
        lines = r.stderr.split("\n")
        self.assertEqual(lines[1], '  File "<run_python>", line 2, in <module>')
        self.assertIn("json", r.stderr)
        self.assertNotIn("_runner", r.stderr)
        self.assertTrue(lines[-2].startswith("json.decoder.JSONDecodeError"))

    def test_error_in_report(self):
        r = self.run_code("d = {}\nd['missing']\n")
        self.assertEqual(r.report["error"], "KeyError: 'missing'")
        r = self.run_code("import json\njson.loads('{')\n")
        self.assertTrue(r.report["error"].startswith("json.decoder.JSONDecodeError: "))
        r = self.run_code("x = (\n")
        self.assertTrue(r.report["error"].startswith("SyntaxError: "), r.report)
        r = self.run_code("raise RuntimeError('a\\nb' * 300)")
        self.assertNotIn("\n", r.report["error"])
        self.assertLessEqual(len(r.report["error"]), 200)
        r = self.run_code("import sys; sys.exit('bad input')")
        self.assertEqual(r.report["error"], "SystemExit: bad input")
        # No error member when the code succeeded or chose its exit code.
        self.assertNotIn("error", self.run_code("print(1)").report)
        self.assertNotIn("error", self.run_code("import sys; sys.exit(3)").report)

    def test_syntax_error(self):
        r = self.run_code("x = 1\nprint(x\n")
        self.assertEqual(r.status, 1)
        self.assertIn('File "<run_python>", line 2', r.stderr)
        self.assertIn("SyntaxError", r.stderr)
        self.assertNotIn("_runner", r.stderr)

    def test_function_from_an_earlier_call_in_a_traceback(self):
        self.ok("def g():\n    raise KeyError('k')\n")
        r = self.run_code("x = 1\ng()\n")
        self.assertIn('File "<run_python>", line 2, in <module>', r.stderr)
        # Not the current call's line 2 shown as if it were g's.
        self.assertIn('File "<run_python: earlier call>", line 2, in g', r.stderr)

    def test_exit_codes(self):
        self.assertEqual(self.run_code("import sys; sys.exit(3)").report["exit_code"], 3)
        r = self.run_code("import sys; sys.exit(3)")
        self.assertEqual(r.status, 3)
        r = self.run_code("raise SystemExit")
        self.assertEqual((r.status, r.report["exit_code"]), (0, 0))
        r = self.run_code("import sys; sys.exit('bad input')")
        self.assertEqual((r.status, r.report["exit_code"]), (1, 1))
        self.assertEqual(r.stderr, "bad input\n")
        r = self.run_code("raise KeyboardInterrupt")
        self.assertEqual(r.status, 1)

    def test_runs_as_main(self):
        r = self.ok("import sys, pickle\n"
                    "class A:\n"
                    "    pass\n"
                    "a = pickle.loads(pickle.dumps(A()))\n"
                    "print(__name__, sys.modules['__main__'].__dict__ is globals(),\n"
                    "      type(a).__name__, sys.argv)\n"
                    "if __name__ == '__main__':\n"
                    "    print('main block')\n")
        self.assertEqual(r.stdout, "__main__ True A ['<run_python>']\nmain block\n")

    def test_workspace_last_on_sys_path(self):
        with open(os.path.join(self.ws, "helpers.py"), "w") as f:
            f.write("def hello():\n    return 'hello from the workspace'\n")
        r = self.ok("import sys, os, sysconfig\n"
                    "print(sys.path[-1] == os.getcwd(), sys.path.count(os.getcwd()))\n"
                    "print(sys.path.index(sysconfig.get_paths()['stdlib']) <"
                    " sys.path.index(os.getcwd()))\n"
                    "import helpers\nprint(helpers.hello())\n")
        self.assertEqual(r.stdout, "True 1\nTrue\nhello from the workspace\n")

    def test_workspace_files_do_not_shadow_the_runner(self):
        for mod in ("json", "re", "ast", "traceback", "cloudpickle", "importlib"):
            with open(os.path.join(self.ws, mod + ".py"), "w") as f:
                f.write("raise ImportError('the runner imported the workspace file')\n")
        self.ok("x = [1]\nf = lambda: 2\n")
        r = self.ok("print(x, f())\nx = 1 / 0 if False else 5\n")
        self.assertEqual(r.stdout, "[1] 2\n")
        r = self.run_code("import os.path as p\nprint(x)\nraise ValueError('v')\n")
        self.assertEqual(r.stdout, "5\n")
        self.assertTrue(r.stderr.strip().endswith("ValueError: v"), r.stderr)

    def test_report_is_json_with_awkward_text(self):
        name = "naïve \"q\"\\ \t tab"
        r = self.ok("import pandas as pd\ndf = pd.DataFrame({%r: [1]})\n" % name)
        self.assertIn("df 1x1 [%s]" % name, r.footer)
        # A name that is not UTF-8 (a lone surrogate) still gives a valid report.
        r = self.ok("globals()['bad\\udcff'] = 1\n")
        self.assertIn("bad\ufffd 1", r.footer)

    def test_report_has_no_file_list(self):
        # files_written is the agent's, from its workspace walk.
        r = self.ok("open('c.txt', 'w').write('3')")
        self.assertNotIn("files_written", r.report)

    def test_stdout_and_stderr_untouched(self):
        r = self.ok("import sys\nprint('out')\nprint('err', file=sys.stderr)\n")
        self.assertEqual((r.stdout, r.stderr), ("out\n", "err\n"))

    def test_missing_code(self):
        run_dir = os.path.join(self.tmp, "empty-run")
        os.mkdir(run_dir)
        import subprocess
        p = subprocess.run([sys.executable, "-P", "-m", "vivarium._runner"], cwd=self.ws,
                           env=self.env(VIVARIUM_RUN_DIR=run_dir), capture_output=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"can't read code.py", p.stderr)
        with open(os.path.join(run_dir, "report.json")) as f:
            self.assertEqual(json.load(f)["exit_code"], 2)

    def test_main_callable_in_a_forked_child(self):
        # What a warm fork server would do: import once, fork, call main().
        sys.path.insert(0, PYTHON_DIR)
        try:
            from vivarium import _runner
        finally:
            sys.path.remove(PYTHON_DIR)
        run_dir = os.path.join(self.tmp, "fork-run")
        os.mkdir(run_dir, 0o700)
        out = os.path.join(self.tmp, "fork-out")
        with open(os.path.join(run_dir, "code.py"), "w") as f:
            f.write("import sys\nx = 6 * 7\nprint(__name__, x)\nsys.exit(4)\n")
        env = self.env(VIVARIUM_RUN_DIR=run_dir)
        pid = os.fork()
        if pid == 0:
            status = 99
            try:
                os.chdir(self.ws)
                fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(fd, 1)
                os.environ.clear()
                os.environ.update(env)
                status = _runner.main()
                sys.stdout.flush()
            finally:
                os._exit(status)
        _, st = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(st), 4)
        with open(out) as f:
            self.assertEqual(f.read(), "__main__ 42\n")
        with open(os.path.join(run_dir, "report.json")) as f:
            rep = json.load(f)
        self.assertEqual(rep["exit_code"], 4)
        self.assertIn("vars: x 42", rep["footer"])
        self.assertEqual(self.ok("print(x)").stdout, "42\n")


class Shadowing(Workspace):
    """Files in the workspace named like modules: uploaded, or written by
    the model.  They must never run in place of the module, whether the
    code imports it, a chart helper does, or the namespace restore does."""

    IMPOSTORS = ("vivarium_charts", "wave", "pandas", "sitecustomize", "usercustomize")

    def plant(self, names):
        for name in names:
            with open(os.path.join(self.ws, name + ".py"), "w") as f:
                f.write("open(%r, 'w').close()\n" % os.path.join(self.tmp, "ran-" + name))

    def ran(self):
        return sorted(n[4:] for n in os.listdir(self.tmp) if n.startswith("ran-"))

    @unittest.skipUnless(has("pandas") and has("matplotlib"), "needs pandas and matplotlib")
    def test_impostors_never_run(self):
        self.ok("import pandas as pd\n"
                "import vivarium_charts as vc\n"
                "import wave\n"
                "from vivarium_charts import line_chart\n"
                "df = pd.DataFrame({'a': [1, 2]})\n")
        # Planted after the first call: the restore imports pd, vc and wave.
        self.plant(self.IMPOSTORS)
        r = self.ok("import sys, os\n"
                    "line_chart(df, filename='a.png', describe=False)\n"
                    "vc.bar_chart(df, filename='b.png', describe=False)\n"
                    "import wave, pandas, vivarium_charts\n"
                    "print([m.__file__.startswith(os.getcwd()) for m in (wave, pandas, vc)])\n")
        self.assertEqual(r.stdout, "[False, False, False]\n")
        self.assertEqual(r.line("namespace:"), "namespace: restored 5 name(s)")
        self.assertEqual(self.ran(), [])
        # A new interpreter started in the workspace runs neither
        # customization file either.
        r = self.ok("import sys, os\n"
                    "print('sitecustomize' in sys.modules and "
                    "sys.modules['sitecustomize'].__file__.startswith(os.getcwd()))")
        self.assertEqual(r.stdout, "False\n")
        self.assertEqual(self.ran(), [])

    def test_the_restore_never_imports_a_workspace_module(self):
        # A store from before this rule, holding an alias of a workspace
        # module and a value pickled by reference to one.
        sys.path.insert(0, PYTHON_DIR)
        try:
            from vivarium import _store
        finally:
            sys.path.remove(PYTHON_DIR)
        import types
        helpers = types.ModuleType("helpers")
        exec("class Thing:\n    pass\n", helpers.__dict__)
        sys.modules["helpers"] = helpers
        try:
            thing = _store.pickle_value("t", helpers.Thing(), {})
        finally:
            del sys.modules["helpers"]
        os.makedirs(self.state_dir)
        _store.write(self.state_dir, [thing, _store.pickle_value("n", 1, {}),
                                      {"name": "h", "kind": "module", "module": "helpers"}],
                     [])
        self.plant(["helpers"])
        r = self.ok("print(sorted(k for k in ('h', 't', 'n') if k in globals()))")
        self.assertEqual(r.stdout, "['n']\n")
        self.assertEqual(r.line("not restored:"),
                         "not restored: h (its module helpers is a workspace file: import "
                         "it again), t (its module helpers is a workspace file: import it "
                         "again)")
        self.assertEqual(self.ran(), [])
        # The code imports it, from the workspace.
        self.ok("import helpers")
        self.assertEqual(self.ran(), ["helpers"])

    def test_workspace_modules_are_not_kept(self):
        with open(os.path.join(self.ws, "helpers.py"), "w") as f:
            f.write("class Thing:\n    pass\ndef hello():\n    return 'hello'\n")
        r = self.ok("import helpers as h\nfrom helpers import hello\n"
                    "t = h.Thing()\nn = 1\nimport json\n")
        why = "its module helpers is a workspace file: import it again"
        self.assertEqual(r.line("gone next call:"),
                         "gone next call: h (%s), hello (%s), t (%s)" % (why, why, why))
        self.assertEqual(r.line("already imported"), "already imported (do not re-import): "
                                                     "json=json")
        r = self.ok("print(sorted(k for k in ('h', 'hello', 't', 'n') if k in globals()))")
        self.assertEqual(r.stdout, "['n']\n")
        self.assertIsNone(r.line("not restored:"))


class Unbuffered(Workspace):

    def test_output_survives_a_kill(self):
        mark = os.path.join(self.tmp, "printed")
        p, run_dir = self.start("import sys, time\n"
                                "print('got to step 3')\n"
                                "sys.stdout.write('no newline yet')\n"
                                "print('a warning', file=sys.stderr)\n"
                                "open(%r, 'w').close()\n"
                                "time.sleep(120)\n" % mark)
        try:
            self.assertTrue(self.wait_for(mark), "the run never got there")
        finally:
            self.kill_group(p)
        r = self.finish(p, run_dir)
        self.assertIsNone(r.report)
        self.assertEqual(r.stdout, "got to step 3\nno newline yet")
        self.assertEqual(r.stderr, "a warning\n")

    def test_encoding_and_errors_kept(self):
        probe = ("import sys\n"
                 "print(sys.stdout.encoding, sys.stdout.errors, sys.stderr.encoding,"
                 " sys.stderr.errors)\n")
        plain = subprocess.run([PYTHON, "-c", probe], env=self.env(), capture_output=True,
                               text=True, check=True).stdout
        r = self.ok(probe + "print(sys.stdout.write_through, sys.stdout is sys.__stdout__,"
                    " sys.stdout.name, sys.stderr.name)\nprint('naïve ✓')\n")
        self.assertEqual(r.stdout, plain + "True True <stdout> <stderr>\nnaïve ✓\n")


@unittest.skipUnless(os.geteuid() == 0, "mounts a small tmpfs as the workspace")
class FullWorkspace(Workspace):
    """A workspace with no room left, as a sandbox's quota makes it: the
    footer says so, and a namespace that does not fit leaves the stored
    one as it was."""

    def setUp(self):
        super().setUp()
        import subprocess
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", self.ws],
                       check=True)

    def tearDown(self):
        import subprocess
        subprocess.run(["umount", self.ws], check=False)
        super().tearDown()

    def test_full_said_and_store_kept(self):
        self.ok("x = 41")
        before = open(self.store, "rb").read()
        r = self.run_code("f = open('big', 'wb')\nfor i in range(8): f.write(b'x' * (1 << 20))")
        self.assertIn("No space left on device", r.stderr)
        self.assertIsNotNone(r.line("workspace full: "), r.footer)
        r = self.run_code("import os\ny = os.urandom(3 << 20)")
        self.assertIn("namespace not saved (the stored one is unchanged): the workspace is full",
                      r.footer)
        self.assertEqual(open(self.store, "rb").read(), before)
        r = self.ok("import os; os.remove('big'); print(x + 1, 'y' in globals())")
        self.assertEqual(r.stdout, "42 False\n")
        self.assertIsNone(r.line("workspace full: "), r.footer)


class Speed(Workspace):

    # About the cold path's cost; a warm run has them imported already, free.
    @unittest.skipIf(WARM, "warm runs fork from an interpreter that imported them")
    def test_plain_print_does_not_load_heavy_modules(self):
        r = self.ok("import sys\n"
                    "print(sorted(m for m in ('cloudpickle', 'pandas', 'numpy', 'json',"
                    " 'vivarium._store') if m in sys.modules))")
        self.assertEqual(r.stdout, "[]\n")

    def test_plain_data_does_not_need_cloudpickle(self):
        self.ok("import pandas as pd\nx = 1\nraw = {'a': [1, 2]}\n"
                "df = pd.DataFrame({'a': [1.5]})\n")
        r = self.ok("import sys\nprint('cloudpickle' in sys.modules)")
        self.assertEqual(r.stdout, "False\n")
        self.ok("f = lambda: 1")
        r = self.ok("import sys\nprint('cloudpickle' in sys.modules, f())")
        self.assertEqual(r.stdout, "True 1\n")

    def test_unchanged_namespace_is_not_rewritten(self):
        self.ok("x = [1, 2, 3]\nimport os\n")
        st1 = os.stat(self.store)
        self.ok("print(x)")
        st2 = os.stat(self.store)
        self.assertEqual((st1.st_ino, st1.st_mtime_ns), (st2.st_ino, st2.st_mtime_ns))
        self.ok("x.append(4)")
        st3 = os.stat(self.store)
        self.assertNotEqual(st1.st_ino, st3.st_ino)
        self.assertEqual(self.ok("print(x)").stdout, "[1, 2, 3, 4]\n")

    def test_plain_print_is_quick(self):
        # Generous bound: the interpreter itself takes ~25 ms here.
        self.ok("pass")
        t = time.monotonic()
        self.ok("print('hi')")
        self.assertLess(time.monotonic() - t, 1.0)


if __name__ == "__main__":
    unittest.main()
