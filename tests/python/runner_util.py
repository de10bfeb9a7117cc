"""Drives the runner the way vivarium-agent does (docs/runner-contract.md):
a new interpreter per call, `-P -m vivarium._runner`, cwd = the workspace,
a private run dir holding code.py, the contract's environment, stdin from
/dev/null, its own process group."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(ROOT, "python")
PYTHON = os.environ.get("VIVARIUM_TEST_PYTHON", sys.executable)
# VIVARIUM_WARM=1: every run is forked from one warm zygote
# (vivarium._zygote), as the agent does by default.
WARM = os.environ.get("VIVARIUM_WARM", "0") == "1"
_zygote = [None]


def warm_start(cwd, env, hint=True):
    """Starts a run through the shared zygote; a Popen-like WarmProcess.
    hint: the workspace the spare restores ahead (True: cwd, as the
    agent's spares are told the last run's; None: none)."""
    if _zygote[0] is None:
        sys.path.insert(0, PYTHON_DIR)
        from vivarium._zygote import Zygote
        base = {k: v for k, v in os.environ.items() if not _agents(k)}
        base.update({"PYTHONPATH": PYTHON_DIR, "MPLBACKEND": "Agg"})
        _zygote[0] = Zygote(PYTHON, base)
    o_r, o_w = os.pipe()
    e_r, e_w = os.pipe()
    dn = os.open(os.devnull, os.O_RDWR)
    try:
        return _zygote[0].start(cwd, env, (dn, o_w, e_w),
                                os.fdopen(o_r, "rb"), os.fdopen(e_r, "rb"),
                                hint=cwd if hint is True else hint)
    finally:
        for fd in (dn, o_w, e_w):
            os.close(fd)


def _agents(name):
    """Variables the agent sets itself, kept out of the tests' environment.
    PYTHONUNBUFFERED too: the runner must deliver output unbuffered on its
    own (test_runner's Unbuffered)."""
    return name.startswith("VIVARIUM_") or name == "PYTHONUNBUFFERED"


class Result:
    def __init__(self, status, stdout, stderr, report):
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
        self.report = report

    @property
    def footer(self):
        return self.report["footer"] if self.report else None

    @property
    def figures(self):
        """report.json's figures member as (name, by) pairs."""
        return [(f["name"], f["by"]) for f in (self.report or {}).get("figures", [])]

    def line(self, prefix):
        """The footer line starting with prefix, or None."""
        for ln in (self.footer or "").split("\n"):
            if ln.startswith(prefix):
                return ln
        return None


class Workspace(unittest.TestCase):
    """A TestCase with a fresh workspace per test and run() to call the runner."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vivarium-py-")
        self.ws = os.path.join(self.tmp, "ws")
        os.mkdir(self.ws)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    @property
    def state_dir(self):
        return os.path.join(self.ws, ".vivarium")

    @property
    def store(self):
        return os.path.join(self.state_dir, "namespace.store")

    def env(self, **over):
        env = {k: v for k, v in os.environ.items() if not _agents(k)}
        env.update({
            "PYTHONPATH": PYTHON_DIR,
            "VIVARIUM_STATE_DIR": self.state_dir,
            "VIVARIUM_FRESH": "0",
            "VIVARIUM_PERSIST_NAMESPACE": "1",
            "VIVARIUM_NAMESPACE_MAX_BYTES": str(256 * 1024 * 1024),
            "VIVARIUM_STATE_SUMMARY": "1",
            "MPLBACKEND": "Agg",
        })
        env.update({k: str(v) for k, v in over.items()})
        return env

    def start(self, code, warm=WARM, hint=True, **over):
        """Starts a run (warm: through the zygote, its spare told hint);
        returns (Popen, run dir)."""
        run_dir = tempfile.mkdtemp(prefix="run-", dir=self.tmp)
        os.chmod(run_dir, 0o700)
        with open(os.path.join(run_dir, "code.py"), "w", encoding="utf-8") as f:
            f.write(code)
        env = self.env(VIVARIUM_RUN_DIR=run_dir, **over)
        if warm:
            return warm_start(self.ws, env, hint), run_dir
        p = subprocess.Popen([PYTHON, "-P", "-m", "vivarium._runner"], cwd=self.ws,
                             env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        return p, run_dir

    def finish(self, p, run_dir, timeout=120):
        out, err = p.communicate(timeout=timeout)
        report = None
        path = os.path.join(run_dir, "report.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                report = json.load(f)
        self.assertFalse(os.path.exists(path + ".tmp"), "report.json.tmp left behind")
        shutil.rmtree(run_dir)
        return Result(p.returncode, out.decode("utf-8", "replace"),
                      err.decode("utf-8", "replace"), report)

    def run_code(self, code, **over):
        p, run_dir = self.start(code, **over)
        return self.finish(p, run_dir)

    def ok(self, code, **over):
        """Runs code and asserts it exited 0 with a version-1 report."""
        r = self.run_code(code, **over)
        self.assertEqual(r.status, 0, "stderr:\n" + r.stderr)
        self.assertIsNotNone(r.report, "no report.json")
        self.assertEqual(r.report["version"], 1)
        self.assertEqual(r.report["exit_code"], 0)
        return r

    def kill_group(self, p):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    @staticmethod
    def wait_for(path, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if os.path.exists(path):
                return True
            time.sleep(0.01)
        return False


def has(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False
