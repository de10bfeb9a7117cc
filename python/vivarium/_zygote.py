"""The warm interpreter ("zygote"): imports the data stack once, then forks
a new process for every run, so a run that uses pandas does not pay for
importing it.  docs/runner-contract.md ("Warm starts") is the protocol.

    python3 -P -m vivarium._zygote [--fd N]     (the control socket, default 3)

Three kinds of process run this file:

- the zygote: imports VIVARIUM_WARM_IMPORTS and the runner's modules, says
  "ready" on the control socket, then for each "spare" request (a request
  socket and a status socket arrive with SCM_RIGHTS) forks a waiter and
  forgets it (SIGCHLD is ignored, so waiters are reaped by the kernel).  It
  never runs user code, so nothing a run does reaches it.
- a waiter: forks the spare, reports its pid on the status socket, waits
  for it (without reaping: the group id stays reserved), kills what is left
  of its group, reports the raw wait status, and reaps it once the agent
  closes the status socket.  A waiter outlives the zygote, so a zygote
  killed mid-run costs that run nothing.
- the spare, which becomes the run: forked ahead of time, it leads its own
  process group and has the signal dispositions a fresh interpreter has
  from its start, then waits on the request socket.  Given a run (cwd,
  environment, stdio) it enters the cwd, takes the stdio, answers "k" and on
  the agent's "g" closes every other descriptor but the request socket,
  replaces the environment,
  re-seeds numpy's global generator (random re-seeds itself at fork), and
  calls vivarium._runner.main(), which restores the namespace from disk only
  now; it exits doing what interpreter shutdown does that code can see
  (threads, atexit, flushing, the user's globals released), without tearing
  down the modules the zygote imported (see _exit); then it closes its
  stdout and stderr and says "x<exit code>" on the request socket, so the
  agent answers without waiting for the kernel to tear the process down.

There is also a small client (Zygote, WarmProcess) for the Python tests and
the benchmark; the agent has its own, in C (sandbox-agent/warm.c).
"""
import gc
import os
import signal
import socket
import sys
import warnings

DEFAULT_IMPORTS = "numpy,pandas,matplotlib,matplotlib.pyplot"
# What the runner imports for itself (lazily, in a cold run).
RUNNER_MODULES = ("vivarium._runner", "vivarium._store", "vivarium._footer",
                  "vivarium._figures", "vivarium._columns",
                  "ast", "linecache", "traceback", "re", "json", "pickle", "difflib")
MSG_MAX = 1 << 20

# In a run's process: its request socket, where _exit says the run's end.
_end_fd = None


def _log(msg):
    try:
        os.write(2, ("vivarium-zygote[%d]: %s\n" % (os.getpid(), msg))
                 .encode("utf-8", "replace"))
    except OSError:
        pass


def _fork():
    # Python 3.12+ warns about fork() in a process with threads (OpenBLAS
    # starts some at import; it handles fork itself).  Not the user's concern.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def _signals():
    """The dispositions this interpreter started with (a cold run's)."""
    saved = {}
    for sig in signal.valid_signals():
        try:
            h = signal.getsignal(sig)
        except (OSError, ValueError):
            continue
        if h is not None:
            saved[sig] = h
    return saved


def _restore_signals(saved):
    for sig, h in saved.items():
        try:
            signal.signal(sig, h)
        except (OSError, ValueError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def _raw_status(info):
    if info.si_code == os.CLD_EXITED:
        return (info.si_status & 0xFF) << 8
    if info.si_code == os.CLD_DUMPED:
        return (info.si_status & 0x7F) | 0x80
    return info.si_status & 0x7F


def _warm_imports(names):
    for name in names.split(","):
        name = name.strip()
        if not name:
            continue
        try:
            __import__(name)
        except BaseException as e:   # a broken package must not stop the zygote
            _log("%s: not imported, runs import it themselves (%s: %s)"
                 % (name, type(e).__name__, str(e)[:200]))


def _keep_mpl_tempdir():
    """Without a writable config dir matplotlib makes a temporary one and
    registers its removal at exit; every run would inherit that and remove
    the directory the zygote (and the next runs) use.  Keep it instead."""
    mpl = sys.modules.get("matplotlib")
    if mpl is None:
        return
    try:
        import atexit
        import shutil
        import tempfile
        d = mpl.get_configdir()
        if os.path.basename(d).startswith("matplotlib-") and \
                os.path.dirname(d) == tempfile.gettempdir():
            atexit.unregister(shutil.rmtree)
    except Exception:
        pass


# ------------------------------------------------------------------ the run

def _request(req):
    """In the spare: waits for its run on the request socket.  Returns
    (cwd, env, stdio) or None when the agent gave up (EOF or garbage)."""
    cwd, env = None, {}
    while True:
        m, fds, _, _ = socket.recv_fds(req, MSG_MAX, 3)
        t, body = m[:1], m[1:]
        if t == b"r" and len(fds) == 3 and cwd is not None:
            return cwd, env, fds
        for fd in fds:
            os.close(fd)
        if t == b"w" and cwd is None:
            _prepare(body)
        elif t == b"c":
            cwd = body
        elif t in (b"E", b"e"):     # all of it, NUL-separated; or one
            for item in body.split(b"\0") if t == b"E" else (body,):
                k, eq, v = item.partition(b"=")
                if eq and k:
                    env[k] = v
        else:
            if m:
                _log("bad request message %r" % m[:40])
            return None


def _spare(reqfd, saved):
    """In the spare: returns when it may run the code, in the run's cwd
    with its stdio and environment; exits without running anything when the
    agent gives up on it first (closes the socket, or never says "g")."""
    os.setpgid(0, 0)                # the waiter sets it too: no race
    _restore_signals(saved)
    _before_run()
    req = socket.socket(fileno=reqfd)
    try:
        got = _request(req)
        if got is None:
            os._exit(0)
        cwd, env, stdio = got
        try:
            os.chdir(cwd)
        except OSError as e:
            req.send(b"f%d" % (e.errno or 0))
            os._exit(0)
        for i, fd in enumerate(stdio):
            os.dup2(fd, i)
        req.send(b"k")
        if req.recv(16) != b"g":
            os._exit(0)
    except OSError:
        os._exit(0)
    global _end_fd
    _end_fd = req.detach()
    os.set_inheritable(_end_fd, False)
    try:
        top = os.sysconf("SC_OPEN_MAX")
    except (OSError, ValueError):
        top = 65536
    os.closerange(3, _end_fd)
    os.closerange(_end_fd + 1, top)
    # Only what differs: every object touched after a fork copies its page
    # (~240 page faults to replace all ~60 variables, 12 ms on these VMs),
    # and the run's environment is mostly the zygote's.
    envb = os.environb
    for k in [k for k in envb if k not in env]:
        del envb[k]
    for k, v in env.items():
        if envb.get(k) != v:
            envb[k] = v


def _before_run():
    """In the spare, at its birth: what every run does first that need not
    wait for the run (and whose page copies then cost no run anything)."""
    np = sys.modules.get("numpy.random")
    if np is not None:
        try:
            np.seed()       # the legacy global RandomState, from OS entropy
        except Exception:
            pass
    try:
        from vivarium import _figures
        _figures.patch()
    except Exception:
        pass                # the run's _figures.start() tries again
    if os.environ.get("VIVARIUM_WARM_REHEARSE", "1") != "0":
        _rehearse()


# Two runs: the first stores, the second restores and stores again.  With
# pandas imported in the zygote they store a small frame, so pickling and
# unpickling one is rehearsed too.
REHEARSAL = ("x = 1\nprint(x)\n", "print(x)\n")
REHEARSAL_PANDAS = ("import pandas as pd\n"
                    "df = pd.DataFrame({'a': range(3), 'b': ['x', 'y', 'z']})\n"
                    "print(df.shape)\n", "print(df.shape)\n")


def _rehearse():
    """In the spare, at its birth: the runner runs a small piece of code
    once, in a scratch directory, its output thrown away.  A page is copied
    at its first write after a fork, at ~15-20 us a page fault on these
    VMs: the runner's objects, code paths and allocator pools are written
    now, while the spare waits, instead of during the run (a third of a
    warm print(1)).  Nothing of it is left for the run to see: the scratch
    directory is removed; sys.path, sys.argv, __main__, tempfile's cached
    directory, the warning filters and the descriptors are put back; main()
    sets the runner's own state anew for the run."""
    import shutil
    import tempfile
    from vivarium import _runner
    path, argv = list(sys.path), list(sys.argv)
    main = sys.modules.get("__main__")
    tempdir = tempfile.tempdir  # mkdtemp caches it; the run's TMPDIR decides
    tmp = None
    try:
        tmp = tempfile.mkdtemp(prefix="vivarium-rehearsal-")
        ws = os.path.join(tmp, "ws")
        os.mkdir(ws)
        os.chdir(ws)
        # Warnings ignored, and the registries forgotten on the way out:
        # one shown "once" here would never be shown to the run.
        env = {"VIVARIUM_RUN_DIR": tmp,
               "VIVARIUM_STATE_DIR": os.path.join(ws, ".vivarium")}
        runs = REHEARSAL_PANDAS if "pandas" in sys.modules else REHEARSAL
        with _Quiet(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for code in runs:
                with open(os.path.join(tmp, "code.py"), "w") as f:
                    f.write(code)
                _runner.main(env)
    except BaseException:
        pass                # the run works as well without it
    finally:
        try:
            os.chdir("/")
        except OSError:
            pass
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        tempfile.tempdir = tempdir
        sys.path[:] = path
        sys.argv[:] = argv
        if main is not None:
            sys.modules["__main__"] = main


class _Quiet:
    """Descriptors 1 and 2 onto an unnamed file while the spare works ahead
    of its run, put back on the way out; wrote() says whether anything was
    written there (what a run would have shown)."""

    def __enter__(self):
        self.keep = []
        self.fd = None
        _flush_std()
        try:
            fd = os.open(os.environ.get("TMPDIR") or "/tmp",
                         os.O_TMPFILE | os.O_RDWR, 0o600)
            self.known = True
        except OSError:     # no O_TMPFILE there: whether it wrote is unknown
            fd = os.open(os.devnull, os.O_WRONLY)
            self.known = False
        try:
            self.keep = [os.dup(1), os.dup(2)]
            os.dup2(fd, 1)
            os.dup2(fd, 2)
        except OSError:
            os.close(fd)
            self.__exit__()
            raise
        self.fd = fd
        return self

    def wrote(self):
        _flush_std()
        return not self.known or os.fstat(self.fd).st_size > 0

    def __exit__(self, *exc):
        _flush_std()
        for fd, saved in zip((1, 2), self.keep):
            os.dup2(saved, fd)
            os.close(saved)
        self.keep = []
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


_prepared = [None]


def _prepare(workspace):
    """In the spare, told the workspace of the last run ("w"): restores
    its namespace now, so that the run, most likely in the same workspace,
    starts with it (_runner.prepare says when it may not).  Anything the
    restore prints, it would have printed in the run: then the run restores
    for itself."""
    from vivarium import _runner
    _prepared[0] = None
    if os.environ.get("VIVARIUM_WARM_PRERESTORE", "1") == "0":
        return
    path = list(sys.path)
    try:
        with _Quiet() as q:
            p = _runner.prepare(os.fsdecode(workspace))
            if p is not None and not q.wrote():
                _prepared[0] = p
    except BaseException:
        pass
    finally:
        sys.path[:] = path
        try:
            os.chdir("/")
        except OSError:
            pass


def _waiter(reqfd, stfd, saved):
    """In the waiter: forks the spare and returns only in it."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    st = socket.socket(fileno=stfd)
    sys.stderr.flush()
    pid = _fork()
    if pid == 0:
        st.close()                  # the waiter's alone: EOF when it dies
        _spare(reqfd, saved)
        return
    os.close(reqfd)
    try:
        os.setpgid(pid, pid)        # both sides set it: no race
    except OSError:
        pass
    try:
        st.send(b"p%d" % pid)
    except OSError:
        pass                        # the agent has gone: the spare sees EOF
    info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    status = _raw_status(info)
    try:
        os.killpg(pid, signal.SIGKILL)  # what is left of its group
    except OSError:
        pass
    try:
        st.send(b"s%d" % status)
        while st.recv(16):
            pass
    except OSError:
        pass
    os.waitpid(pid, 0)              # only now may its pid (and pgid) be reused
    os._exit(0)


# --------------------------------------------------------------- the zygote

def serve(ctl_fd):
    """Returns True in a run's process (the caller runs the runner), None in
    the zygote when the agent has gone."""
    saved = _signals()
    ctl = socket.socket(fileno=ctl_fd)
    _warm_imports(os.environ.get("VIVARIUM_WARM_IMPORTS", DEFAULT_IMPORTS))
    for name in RUNNER_MODULES:
        try:
            __import__(name)
        except BaseException as e:
            _log("%s: %s: %s" % (name, type(e).__name__, e))
    _keep_mpl_tempdir()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # waiters reap themselves
    gc.collect()
    gc.freeze()     # forked runs need not touch these objects' pages for gc
    ctl.send(b"ready")
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(ctl, 64, 8)
        except OSError as e:
            _log("control socket: %s" % e)
            return None
        if not msg and not fds:
            return None             # the agent has gone
        if msg != b"spare" or len(fds) != 2:
            _log("bad request %r with %d descriptor(s)" % (msg[:40], len(fds)))
            for fd in fds:
                os.close(fd)
            continue
        sys.stderr.flush()
        pid = _fork()
        if pid == 0:
            try:
                ctl.close()
                _waiter(fds[0], fds[1], saved)
            except BaseException as e:
                if os.getpgid(0) == os.getpid():
                    raise           # the run's process: report as a run would
                _log("waiter: %s: %s" % (type(e).__name__, e))
                os._exit(0)
            return True
        for fd in fds:
            os.close(fd)


def _exit(status):
    """Ends the run's process: what interpreter shutdown does that code can
    see, in its order (wait for non-daemon threads, atexit handlers, flush
    stdio, the user's globals released so their __del__ run and unclosed
    files are flushed, a last collection), then os._exit.  The teardown of
    every module imported in the zygote is skipped: it would touch, and so
    copy, every page shared with the zygote (~50 ms with pandas loaded)."""
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    try:
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        pass
    if not _flush_std() and status == 0:
        status = 120            # as CPython does when stdout can't be flushed
    main = sys.modules.get("__main__")
    if main is not None:
        try:
            main.__dict__.clear()
        except BaseException:
            pass
    try:
        gc.collect()
    except BaseException:
        pass
    if not _flush_std() and status == 0:
        status = 120
    _say_end(status)
    os._exit(status)


def _say_end(status):
    """Tells the agent the run is over: its output is all in the pipes once
    stdout and stderr are closed here.  The agent then kills the group and
    answers; the kernel's teardown of this ~80 MB process (3 ms on these
    VMs) is no longer on the call's path."""
    if _end_fd is None:
        return
    for fd in (1, 2):
        try:
            os.close(fd)
        except OSError:
            pass
    try:
        with socket.socket(fileno=_end_fd) as s:
            s.send(b"x%d" % (status & 0xff), socket.MSG_NOSIGNAL)
    except OSError:
        pass


def _flush_std():
    ok = True
    for f in (sys.stdout, sys.stderr):
        try:
            if f is not None:
                f.flush()
        except BaseException:
            ok = False
    return ok


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    fd = 3
    if len(argv) == 2 and argv[0] == "--fd":
        fd = int(argv[1])
    if serve(fd) is None:
        return 0
    from vivarium import _runner
    # No reference kept here: once the run is over, what it restored must
    # be the run's __main__'s alone, for _exit to release it as a cold
    # interpreter's shutdown would (their __del__ run then).
    _exit(_runner.main(prepared=_prepared.pop()))


# ------------------------------------------------------------------ client

class WarmProcess:
    """A run started through a zygote, enough like subprocess.Popen for the
    tests: pid (which leads its group), wait(), returncode, communicate()."""

    def __init__(self, pid, sock, stdout=None, stderr=None):
        self.pid = pid
        self.returncode = None
        self._sock = sock
        self.stdout = stdout
        self.stderr = stderr

    def wait(self, timeout=None):
        if self.returncode is not None:
            return self.returncode
        self._sock.settimeout(timeout)
        try:
            m = self._sock.recv(64)
        except socket.timeout:
            import subprocess
            raise subprocess.TimeoutExpired("<warm run>", timeout)
        self._sock.close()
        if not m.startswith(b"s"):
            raise OSError("the waiter went away without a status")
        self.returncode = os.waitstatus_to_exitcode(int(m[1:]))
        return self.returncode

    def communicate(self, timeout=None):
        import selectors
        import time
        end = None if timeout is None else time.monotonic() + timeout
        bufs = {}
        sel = selectors.DefaultSelector()
        for f in (self.stdout, self.stderr):
            if f is not None:
                bufs[f] = []
                sel.register(f, selectors.EVENT_READ)
        while sel.get_map():
            left = None if end is None else max(0, end - time.monotonic())
            ready = sel.select(left)
            if not ready:
                import subprocess
                raise subprocess.TimeoutExpired("<warm run>", timeout)
            for key, _ in ready:
                data = os.read(key.fd, 65536)
                if data:
                    bufs[key.fileobj].append(data)
                else:
                    sel.unregister(key.fileobj)
        sel.close()
        self.wait(None if end is None else max(0.1, end - time.monotonic()))
        out = [b"".join(bufs[f]) if f in bufs else None
               for f in (self.stdout, self.stderr)]
        for f in (self.stdout, self.stderr):
            if f is not None:
                f.close()
        return out[0], out[1]


class Zygote:
    """Starts a zygote (python -P -m vivarium._zygote) and runs through it."""

    def __init__(self, python, env, ready_timeout=120):
        import subprocess
        self.ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            [python, "-P", "-m", "vivarium._zygote", "--fd", str(theirs.fileno())],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            pass_fds=[theirs.fileno()], start_new_session=True)
        theirs.close()
        self.ctl.settimeout(ready_timeout)
        if self.ctl.recv(64) != b"ready":
            raise OSError("the zygote did not get ready")
        self.ctl.settimeout(None)

    def start(self, cwd, env, fds, stdout=None, stderr=None, hint=None):
        """fds: the run's stdin, stdout, stderr descriptors (the caller
        closes its copies); stdout/stderr: file objects for communicate().
        Asks for a spare and runs in it at once (the agent keeps one ready
        ahead of time instead); hint: the workspace whose namespace the
        spare restores before it takes the run, as the agent's spares do."""
        req, req_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        st, st_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        socket.send_fds(self.ctl, [b"spare"], [req_theirs.fileno(), st_theirs.fileno()])
        req_theirs.close()
        st_theirs.close()
        m = st.recv(64)
        if not m.startswith(b"p"):
            req.close()
            st.close()
            raise OSError("warm start failed: %r" % m)
        if hint is not None:
            req.send(b"w" + os.fsencode(hint))
        req.send(b"c" + os.fsencode(cwd))
        for k, v in env.items():
            req.send(b"e" + os.fsencode(k) + b"=" + os.fsencode(v))
        socket.send_fds(req, [b"r"], list(fds))
        k = req.recv(64)
        if k != b"k":
            req.close()
            st.close()
            raise OSError("warm start failed: %r" % k)
        req.send(b"g")
        req.close()
        return WarmProcess(int(m[1:]), st, stdout, stderr)

    def close(self):
        self.ctl.close()
        try:
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


if __name__ == "__main__":
    sys.exit(main())
