"""Figures are never lost.  Code written for notebooks ends with plt.show()
or simply leaves its figure open, expecting a notebook's inline backend to
draw it; under Agg that draws nothing.  So, as the inline backend does:

- plt.show() and fig.show() save the figures they show as figure-N.png in
  the workspace and close them;
- at the end of the run (a normal end or an exception) every pyplot figure
  still open is saved the same way, and then every pyplot figure is closed.

A figure the code saved itself with savefig during the run is not saved
again.  N is the smallest number from 1 whose file does not exist; the name
is taken with O_EXCL, so no file is ever overwritten.  What was saved goes
into report.json's "figures" member, for the agent to mention.

Closing everything at the end also keeps a figure held in a variable from
coming back open in the next call (a Figure pickled while open in pyplot
re-registers itself with pyplot when unpickled), where it would be saved
again.

matplotlib is never imported here: a run that does not import it must not
pay for it.  When pyplot is already loaded (a warm run: the zygote imported
it) it is patched at start(); otherwise a sys.meta_path hook patches
matplotlib.figure and matplotlib.pyplot right after they are imported.
"""
import os
import sys

FIGURE_MODULE = "matplotlib.figure"
PYPLOT_MODULE = "matplotlib.pyplot"


class _Run:
    """The current run's figures."""

    def __init__(self, workspace):
        self.workspace = workspace
        self.report = []        # [(file name, by)], in the order saved
        self._saved = None      # the figures saved this run, not kept alive

    @property
    def saved(self):
        if self._saved is None:
            import weakref      # only once matplotlib is in use
            self._saved = weakref.WeakSet()
        return self._saved


_run = [None]


def start(workspace):
    """Called once per run, before the namespace is restored (restoring
    `plt` imports pyplot)."""
    _run[0] = _Run(workspace)
    patch()


def patch():
    """Patches matplotlib where it is imported, and hooks its import where
    not yet; idempotent.  A warm run's process does it before its run is
    known (vivarium._zygote), never the zygote itself."""
    pending = [m for m in (FIGURE_MODULE, PYPLOT_MODULE) if m not in sys.modules]
    for name in (FIGURE_MODULE, PYPLOT_MODULE):
        if name not in pending:
            _PATCHES[name](sys.modules[name])
    if pending and not any(isinstance(f, _ImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _ImportHook())


def finish():
    """At the end of the run: saves the pyplot figures still open, closes
    every pyplot figure, and returns [(file name, by)] of all the figures
    saved during the run."""
    run = _run[0]
    if run is None:
        return []
    pyplot = sys.modules.get(PYPLOT_MODULE)
    if pyplot is not None and _real_savefig[0] is not None:
        _show_open(pyplot, "left open")
    _run[0] = None
    return run.report


def is_figure(value):
    mod = sys.modules.get(FIGURE_MODULE)
    return mod is not None and isinstance(value, mod.Figure)


def show(fig, by):
    """What showing a figure does here: saves it, then closes it."""
    save(fig, by)
    pyplot = sys.modules.get(PYPLOT_MODULE)
    if pyplot is not None:
        try:
            pyplot.close(fig)
        except Exception:
            pass


def save(fig, by):
    """Saves fig as figure-N.png unless it was saved during this run or
    has nothing drawn on it."""
    run = _run[0]
    if run is None or _real_savefig[0] is None or fig in run.saved or _empty(fig):
        return
    name = _reserve(run.workspace)
    if name is None:
        _warn("no free figure-N.png name; the figure was not saved")
        return
    path = os.path.join(run.workspace, name)
    try:
        # The inline backend's choice: the figure cropped to what is drawn.
        _real_savefig[0](fig, path, format="png", bbox_inches="tight")
    except Exception as e:
        try:
            os.unlink(path)
        except OSError:
            pass
        _warn("a figure could not be saved as %s (%s: %s)"
              % (name, type(e).__name__, str(e)[:200]))
        return
    run.saved.add(fig)
    run.report.append((name, by))


def _empty(fig):
    """Nothing but the background: `plt.figure(figsize=...)` before
    `df.plot()`, which draws on a figure of its own.  A notebook shows such
    a figure as text (<Figure size 640x480 with 0 Axes>), not as an image."""
    try:
        return len(fig.get_children()) <= 1
    except Exception:
        return False


def _show_open(pyplot, by):
    """Saves every open pyplot figure in number order, then closes them."""
    try:
        from matplotlib._pylab_helpers import Gcf
        managers = sorted(Gcf.get_all_fig_managers(), key=lambda m: m.num)
    except Exception:
        return
    for m in managers:
        save(m.canvas.figure, by)
    try:
        pyplot.close("all")
    except Exception:
        pass


def _reserve(workspace):
    """The first figure-N.png that does not exist yet, created empty."""
    for n in range(1, 100000):
        name = "figure-%d.png" % n
        try:
            fd = os.open(os.path.join(workspace, name),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            continue
        except OSError:
            return None
        os.close(fd)
        return name
    return None


def _warn(msg):
    try:
        sys.stderr.write("vivarium: %s\n" % msg)
    except Exception:
        pass


# ---------------------------------------------------------------- patching

_real_savefig = [None]


def _patch_figure(mod):
    """Figure.savefig notes the figures the code saved itself; Figure.show
    saves instead of warning that Agg can't show anything."""
    Figure = mod.Figure
    if getattr(Figure.savefig, "_vivarium", False):
        return
    real = Figure.savefig
    _real_savefig[0] = real

    def savefig(self, *args, **kwargs):
        result = real(self, *args, **kwargs)
        run = _run[0]
        if run is not None:
            run.saved.add(self)
        return result

    def fig_show(self, warn=True):
        show(self, "fig.show()")

    for f, orig in ((savefig, real), (fig_show, Figure.show)):
        f.__name__, f.__qualname__, f.__doc__ = orig.__name__, orig.__qualname__, orig.__doc__
        f._vivarium = True
    Figure.savefig = savefig
    Figure.show = fig_show


def _patch_pyplot(pyplot):
    if getattr(pyplot.show, "_vivarium", False):
        return

    def plt_show(*args, **kwargs):
        _show_open(pyplot, "plt.show()")

    plt_show.__name__, plt_show.__doc__ = "show", pyplot.show.__doc__
    plt_show._vivarium = True
    pyplot.show = plt_show


_PATCHES = {FIGURE_MODULE: _patch_figure, PYPLOT_MODULE: _patch_pyplot}


class _ImportHook:
    """A meta path finder that finds nothing itself: for the modules in
    _PATCHES it asks the other finders for the spec and has the loader
    patch the module right after executing it.  It leaves sys.meta_path
    once both are patched."""

    def find_spec(self, name, path=None, target=None):
        patch = _PATCHES.get(name)
        if patch is None:
            return None
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec

        # An attribute of this one loader instance, made for this spec; it
        # deletes itself so a reload runs the loader's own method.
        def exec_module(module):
            del loader.exec_module
            loader.exec_module(module)
            patch(module)
            if all(m in sys.modules for m in _PATCHES):
                try:
                    sys.meta_path.remove(self)
                except ValueError:
                    pass

        loader.exec_module = exec_module
        return spec
