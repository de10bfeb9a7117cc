"""The runner: runs one run_python call's code the way `python3 script.py`
would, with the namespace of the previous call restored before and saved
after, and writes report.json for the agent.  docs/runner-contract.md is the
interface; docs/python.md says what carries over and what the footer means.

main() does all the work and returns the exit status without exiting, so a
warm fork server can call it in a forked child as well as `python3 -m
vivarium._runner` does.  Only the standard library's light modules are
imported up front: a call that prints "hi" with nothing stored never loads
cloudpickle or pandas (nor matplotlib: _figures patches it only once the
code imports it).  The workspace is the agent's to walk (the footer's
workspace lines are its), so the runner does not.
"""
import builtins
import os
import sys
import types
import warnings

from vivarium import _figures

CODE_FILENAME = "<run_python>"
STORE_NAME = "namespace.store"   # the same as _store.STORE_NAME
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
SHOW_MAX = 5000                  # characters of the last expression's repr


class Config:
    """The VIVARIUM_* variables of the contract.  The agent validates them;
    a bad value here falls back to the default rather than failing the run."""

    def __init__(self, env):
        self.run_dir = env.get("VIVARIUM_RUN_DIR", "")
        self.workspace = os.getcwd()
        self.state_dir = env.get("VIVARIUM_STATE_DIR") or \
            os.path.join(self.workspace, ".vivarium")
        self.fresh = env.get("VIVARIUM_FRESH", "0") == "1"
        self.persist = env.get("VIVARIUM_PERSIST_NAMESPACE", "1") != "0"
        self.summary = env.get("VIVARIUM_STATE_SUMMARY", "1") != "0"
        try:
            self.max_bytes = int(env.get("VIVARIUM_NAMESPACE_MAX_BYTES",
                                         DEFAULT_MAX_BYTES))
            if self.max_bytes < 0:
                raise ValueError
        except ValueError:
            self.max_bytes = DEFAULT_MAX_BYTES


class State:
    """What the footer reports about the namespace."""

    def __init__(self):
        self.first = None          # the namespace: line
        self.not_restored = []     # (name, reason)
        self.kept_store = None     # the store kept aside for them
        self.modules = {}          # alias -> module name, as restored
        self.imports = []          # dotted submodules kept imported
        self.values = []           # (name, value) stored for the next call
        self.aliases = []          # (alias, module name) for the next call
        self.gone = []             # (name, reason)
        self.dropped = []          # (name, size)
        self.size = None           # bytes stored
        self.save_error = None
        self.columns = None        # the columns line after a failed lookup


# ------------------------------------------------------------------ running

_workspace = [None]     # the workspace of the current run, for _import


class _WorkspaceOffPath:
    """With this, sys.path holds no entry that means the workspace (or the
    current directory): what is imported meanwhile can't be a file the
    user saved or uploaded."""

    def __enter__(self):
        self.saved = list(sys.path)
        try:
            here = os.getcwd()
        except OSError:
            here = None
        skip = ("", ".", here, _workspace[0])
        sys.path[:] = [p for p in self.saved if p not in skip]

    def __exit__(self, *exc):
        sys.path[:] = self.saved


def _import(name):
    """Imports one of the runner's own dependencies with the workspace off
    sys.path: a json.py or re.py the user saved must not stand in for the
    module the runner needs (the user's code still sees its own files)."""
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    with _WorkspaceOffPath():
        __import__(name)
    return sys.modules[name]


def _workspace_module(name):
    """True when the module name would be found in the workspace: a
    helpers.py, or a folder, named like its top-level package."""
    ws = _workspace[0]
    if not ws or not isinstance(name, str):
        return False
    top = os.path.join(ws, name.split(".", 1)[0])
    return os.path.isfile(top + ".py") or os.path.isdir(top)


def _user_traceback(exc):
    """The exception's traceback starting at the user's first frame: the
    runner's own frames say nothing to the reader."""
    tb = exc.__traceback__
    t = tb
    while t is not None and t.tb_frame.f_code.co_filename != CODE_FILENAME:
        t = t.tb_next
    return t if t is not None else tb


_error = [None]      # what the code ended with, for report.json's "error"
_full = [False]      # it ended with "no space left" (the workspace is full)
# No space left, or over a quota: the workspace is full either way.
_FULL_ERRNOS = (28, 122)        # ENOSPC, EDQUOT


def _is_full(exc):
    """Whether exc, or one it was raised from or while handling, says the
    disk is full."""
    seen = 0
    while exc is not None and seen < 32:
        if getattr(exc, "errno", None) in _FULL_ERRNOS:
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def _error_line(exc):
    """'KeyError: 'missing'' as the traceback's last line says it, on one
    line and short: the agent puts it first in the result."""
    t = type(exc)
    name = t.__qualname__ if t.__module__ in ("builtins", "__main__") \
        else "%s.%s" % (t.__module__, t.__qualname__)
    try:
        msg = str(exc)
    except Exception:
        msg = ""
    line = ("%s: %s" % (name, msg) if msg else name).replace("\n", " ")
    return line if len(line) <= 200 else line[:199] + "…"


def _print_exception(exc, tb):
    try:
        _full[0] = _is_full(exc)
        _error[0] = _error_line(exc)
    except Exception:
        _error[0] = type(exc).__name__
    traceback = _import("traceback")
    try:
        traceback.print_exception(type(exc), exc, tb, file=sys.stderr)
    except Exception:
        sys.stderr.write("%s: %s\n" % (type(exc).__name__, exc))


def _exit_status(code):
    """SystemExit's code as the process status, as the interpreter does it."""
    if code is None:
        return 0
    if isinstance(code, bool) or not isinstance(code, int):
        try:
            _error[0] = _error_line(SystemExit(code))
            sys.stderr.write("%s\n" % (code,))
        except Exception:
            pass
        return 1
    return code & 0xFF


def _run(source, ns, st):
    """Compiles and runs source in ns, showing the value of a last
    expression.  Returns (status, ran): ran is False when the code did not
    even compile."""
    linecache = _import("linecache")
    lines = source.splitlines(True)
    linecache.cache[CODE_FILENAME] = (len(source), None, lines, CODE_FILENAME)
    try:
        code, last = _compile(source)
    except (SyntaxError, ValueError) as e:
        _print_exception(e, None)
        return 1, False
    try:
        exec(code, ns)
        if last is not None:
            _show(eval(last, ns))
    except SystemExit as e:
        return _exit_status(e.code), True
    except BaseException as e:
        _print_exception(e, _user_traceback(e))
        st.columns = _columns_line(e, ns)
        if st.columns:
            sys.stderr.write(st.columns + "\n")
        return 1, True
    return 0, True


# ----------------------------------------------------- the last expression

def _compile(source):
    """(module code, last expression code or None).  As in a notebook, the
    value of a last top-level expression is shown, unless a ';' ends it.
    Both parts come from one parse of the source, so tracebacks give the
    source's line numbers either way.  _ast, not ast: importing ast costs
    a cold run ~8 ms."""
    import _ast
    tree = compile(source, CODE_FILENAME, "exec", _ast.PyCF_ONLY_AST,
                   dont_inherit=True)
    node = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr) \
            and not _silenced(source, tree.body[-1]):
        node = tree.body.pop()
    code = compile(tree, CODE_FILENAME, "exec", dont_inherit=True)
    if node is None:
        return code, None
    return code, compile(_ast.Expression(node.value), CODE_FILENAME, "eval",
                         dont_inherit=True)


def _silenced(source, node):
    """Whether a ';' follows the statement (`plt.plot(x);`).  Column
    offsets count UTF-8 bytes."""
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    try:
        line = lines[node.end_lineno - 1].encode("utf-8", "surrogatepass")
    except (IndexError, TypeError):
        return False
    return line[node.end_col_offset:].lstrip().startswith(b";")


def _show(value):
    """Prints the last expression's value as a notebook would, bounded."""
    if value is None:
        return
    if _drawing(value):
        if _figures.is_figure(value):
            _figures.show(value, "last line")
        return          # the figure says it; the repr would not
    try:
        text = repr(value)
    except Exception as e:
        try:
            why = "%s: %s" % (type(e).__name__, str(e).replace("\n", " ")[:150])
        except Exception:
            why = type(e).__name__
        sys.stderr.write("(the last line's value can't be shown: repr() raised %s)\n"
                         % why)
        return
    if len(text) > SHOW_MAX:
        note = ("[... the value's repr is {:,} characters; {:,} shown. "
                "print() a slice to see more]").format(len(text), SHOW_MAX)
        text = text[:SHOW_MAX] + "\n" + note
    sys.stdout.write(text + "\n")


def _drawing(value):
    """Whether value is one of matplotlib's return values: an Axes, a list
    of Line2D, a BarContainer, (fig, ax), plt.hist's (counts, bins,
    patches), an array of Axes; or an object holding a figure in its
    `figure` attribute (seaborn's FacetGrid from sns.relplot)."""
    if "matplotlib" not in sys.modules:
        return False
    try:
        from matplotlib.artist import Artist
        from matplotlib.container import Container
        return _is_drawing(value, (Artist, Container), 0) or \
            _figures.is_figure(getattr(value, "figure", None))
    except Exception:       # an odd container or attribute; then it is shown
        return False


def _is_drawing(value, kinds, depth):
    """A list, dict or object array counts when all its items are drawings;
    a short tuple when any one is."""
    if isinstance(value, kinds):
        return True
    if depth >= 2:
        return False
    if isinstance(value, tuple):
        return 0 < len(value) <= 8 and \
            any(_is_drawing(v, kinds, depth + 1) for v in value)
    if isinstance(value, dict):
        items = value.values()
    elif isinstance(value, list):
        items = value
    elif type(value).__name__ == "ndarray" and getattr(value, "dtype", None) == object:
        items = value.flat
    else:
        return False
    seen = False
    for v in items:
        if not _is_drawing(v, kinds, depth + 1):
            return False
        seen = True
    return seen


# ---------------------------------------------------------- failed lookups

def _columns_line(exc, ns):
    """After a KeyError or AttributeError on a DataFrame, the line naming
    its columns (see _columns), or None."""
    if not isinstance(exc, (KeyError, AttributeError)) or "pandas" not in sys.modules:
        return None
    try:
        return _import("vivarium._columns").line_for(exc, ns)
    except Exception:
        return None     # a hint must never cost the result


def _flush():
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            pass


# ------------------------------------------------------------ the namespace

def _restore(cfg, ns, st):
    path = os.path.join(cfg.state_dir, STORE_NAME)
    if cfg.fresh:
        if not os.path.exists(path):
            st.first = "namespace: fresh start (nothing was stored)"
            return
        _store = _import("vivarium._store")
        n = _store.count_names(path)
        try:
            os.unlink(path)
        except OSError as e:
            st.save_error = "could not discard the stored namespace: %s" % e
        if n is None:
            st.first = "namespace: fresh start, discarded an unreadable store"
        else:
            st.first = "namespace: fresh start, discarded %d stored name(s)" % n
        return
    if not os.path.exists(path):
        st.first = "namespace: empty (nothing stored yet)"
        return
    _store = _import("vivarium._store")
    before = set(ns)
    try:
        res = _load(path, ns, _workspace_module)
    except Exception as e:
        for k in list(ns):
            if k not in before:
                del ns[k]
        moved = _store.move_aside(cfg.state_dir, path)
        where = (" moved aside to .vivarium/%s;" % moved) if moved else " removed;"
        st.first = "namespace: the store was unreadable (%s: %s);%s starting empty" \
            % (type(e).__name__, _store._short(e, 80), where)
        return
    _restored(cfg, st, res, path)


def _load(path, ns, workspace_module):
    # Nothing the store names may come from the workspace: an uploaded
    # pandas.py must not run in place of pandas, and a workspace module
    # (helpers.py) is the code's to import again.
    with _WorkspaceOffPath():
        return _import("vivarium._store").load(path, ns, _import, workspace_module)


def _restored(cfg, st, res, path):
    _store = _import("vivarium._store")
    st.first = "namespace: restored %d name(s)" % len(res.restored)
    st.not_restored = res.failed
    if res.failed:
        st.kept_store = _store.keep_copy(cfg.state_dir, path)
    st.imports = res.imports
    st.modules = dict(res.modules)


def _spelled_imports(source):
    """From the code's import statements: alias -> the dotted name it was
    imported as (so `from os import path` says os.path, not posixpath), and
    the dotted `import a.b.c` forms, whose submodules must stay imported."""
    spelled = {}
    dotted = []
    if "import" not in source:
        return spelled, dotted
    ast = _import("ast")
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return spelled, dotted
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    spelled[a.asname] = a.name
                elif "." in a.name:
                    dotted.append(a.name)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                if a.name != "*":
                    spelled[a.asname or a.name] = node.module + "." + a.name
    return spelled, dotted


def _pickle_failure(name, value, exc):
    """Why a value can't be kept, in the footer's words."""
    re = _import("re")
    t = type(value).__name__
    msg = str(exc)
    m = re.search(r"cannot pickle '([^']+)' object", msg)
    if m:
        inner = m.group(1).rsplit(".", 1)[-1]
        if inner == t:
            return "%s is not picklable" % t
        return "%s is not picklable: holds a %s" % (t, inner)
    _short = _import("vivarium._store")._short
    return "%s is not picklable: %s: %s" % (t, type(exc).__name__, _short(exc, 80))


def _save(cfg, ns, st, source):
    if not any(isinstance(n, str) and _stored_name(n) for n in ns) and \
            not os.path.exists(os.path.join(cfg.state_dir, STORE_NAME)):
        st.size = 0
        return      # nothing to keep and nothing to remove
    _store = _import("vivarium._store")
    spelled, dotted = _spelled_imports(source)
    modules = []         # header entries for module aliases
    pickled = []         # _store.Pickled
    same = []            # (name, first name bound to the same object)
    first_of = {}
    simple = (str, int, float, bool, bytes, type(None))
    local = _LocalModules(cfg.workspace)
    for name, value in list(ns.items()):
        if not isinstance(name, str) or not _store.is_stored_name(name):
            continue
        mod = local.of(value)
        if mod is not None:
            st.gone.append((name, _store.workspace_reason(mod)))
            continue
        if isinstance(value, types.ModuleType):
            target = None
            for cand in (spelled.get(name), st.modules.get(name)):
                if cand and sys.modules.get(cand) is value:
                    target = cand
                    break
            if target is None:
                target = getattr(value, "__name__", None)
            if not isinstance(target, str) or sys.modules.get(target) is not value:
                st.gone.append((name, "module %s can't be re-imported by name" % target))
                continue
            modules.append({"name": name, "kind": "module", "module": target})
            st.aliases.append((name, target))
            continue
        if not isinstance(value, simple):
            other = first_of.get(id(value))
            if other is not None:
                same.append((name, other))
                continue
            first_of[id(value)] = name
        try:
            pickled.append(_store.pickle_value(name, value, ns, _import))
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            st.gone.append((name, _pickle_failure(name, value, e)))
    total = sum(p.size for p in pickled)
    if total > cfg.max_bytes:
        for p in sorted(pickled, key=lambda p: -p.size):
            if total <= cfg.max_bytes:
                break
            st.dropped.append((p.name, p.size))
            total -= p.size
        dropped = {n for n, _ in st.dropped}
        pickled = [p for p in pickled if p.name not in dropped]
    kept = {p.name for p in pickled}
    entries = list(pickled) + modules
    for name, other in same:
        if other in kept:
            entries.append({"name": name, "kind": "same", "as": other})
            kept.add(name)
        else:
            why = [r for n, r in st.gone if n == other]
            if why:
                st.gone.append((name, why[0]))
            else:
                st.dropped.append((name, 0))
    bound = {name for name, _ in st.aliases}
    imports = []
    for m in list(st.imports) + dotted:
        top = m.split(".", 1)[0]
        if top in bound and m in sys.modules and m not in imports:
            imports.append(m)
    _store.write(cfg.state_dir, entries, imports)
    st.values = [(n, ns[n]) for n in kept]
    st.size = total


class _LocalModules:
    """Which values come from a module in the workspace.  The next call's
    restore would not import it (the workspace is off sys.path then), so
    the footer says so now instead of keeping what can't come back."""

    def __init__(self, workspace):
        self.root = os.path.join(os.path.realpath(workspace), "")
        self.known = {}         # module name -> in the workspace

    def of(self, value):
        """The workspace module value is, or is defined in, or None."""
        if isinstance(value, types.ModuleType):
            name = value.__name__
        elif isinstance(value, (types.FunctionType, type)):
            name = getattr(value, "__module__", None)
        else:
            name = type(value).__module__
        if not isinstance(name, str) or name in ("builtins", "__main__"):
            return None
        local = self.known.get(name)
        if local is None:
            local = self.known[name] = self._in_workspace(sys.modules.get(name))
        return name if local else None

    def _in_workspace(self, mod):
        where = getattr(mod, "__file__", None)
        if not isinstance(where, str):
            where = next(iter(getattr(mod, "__path__", None) or []), None)
        return isinstance(where, str) and \
            os.path.realpath(where).startswith(self.root)


def _stored_name(name):
    # As _store.is_stored_name, without importing _store for a plain call.
    return not name.startswith("_vivarium") and \
        not (len(name) > 4 and name.startswith("__") and name.endswith("__"))


def _ensure_state_dir(path):
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        pass


# ------------------------------------------------------------------ footer

def _full_line(cfg, st, F):
    """Said when the workspace has (almost) no room left: a sandbox's
    workspace is a filesystem of its quota's size, and a run that fills
    it gets ENOSPC on every write, which a traceback shows but does not
    explain."""
    try:
        v = os.statvfs(cfg.workspace)
    except OSError:
        return None
    size, free = v.f_blocks * v.f_frsize, v.f_bavail * v.f_frsize
    said = _full[0] or (st.save_error or "").startswith("the workspace is full")
    if not size or (not said and free >= max(1 << 20, size // 100)):
        return None
    return ("workspace full: %s free of %s; writes fail with \"No space left "
            "on device\" until files are deleted (os.remove, shutil.rmtree)"
            % (F.mb(free), F.mb(size)))


def _footer(cfg, st):
    F = _import("vivarium._footer")
    lines = ["--- state ---"]
    if not cfg.persist:
        lines.append("namespace: not kept between calls (VIVARIUM_PERSIST_NAMESPACE=0)")
    else:
        lines.append(st.first or "namespace: empty")
        if st.not_restored:
            items = ["%s (%s)" % (n, r) for n, r in sorted(st.not_restored)]
            lines.append("not restored: " + F.bounded_join(items, F.LIST_MAX, sep=", "))
            if st.kept_store:
                lines.append("the store as it was is kept as .vivarium/%s"
                             % st.kept_store)
        if st.values:
            lines.append(F.vars_line(st.values))
        if st.aliases:
            lines.append(F.imports_line(st.aliases))
        if st.gone:
            items = ["%s (%s)" % (n, r) for n, r in sorted(st.gone)]
            lines.append("gone next call: " + F.bounded_join(items, F.LIST_MAX, sep=", "))
        if st.dropped:
            items = ["%s %s" % (n, F.mb(s)) if s else "%s (same object)" % n
                     for n, s in st.dropped]
            lines.append("dropped, namespace over %s (largest first): %s"
                         % (F.mb(cfg.max_bytes),
                            F.bounded_join(items, F.LIST_MAX, sep=", ")))
        if st.save_error:
            lines.append("namespace not saved (the stored one is unchanged): "
                         + st.save_error)
        elif st.size is not None:
            lines.append("namespace size: " + F.mb(st.size))
    if st.columns:
        lines.append(st.columns)
    full = _full_line(cfg, st, F)
    if full:
        lines.append(full)
    # The workspace lines (wrote:, uploads, workspace:) are the agent's: it
    # walks the workspace before and after the run for the images anyway.
    return "\n".join(lines)


def _json_str(s):
    """A JSON string literal (the json module costs more to import than the
    whole report needs)."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif o < 0x20:
            out.append("\\u%04x" % o)
        elif 0xD800 <= o <= 0xDFFF:
            out.append("\ufffd")  # a lone surrogate (an undecodable file name)
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _write_report(run_dir, exit_code, footer, error=None, figures=()):
    extra = ""
    if error is not None:
        extra += ', "error": ' + _json_str(error)
    if figures:
        extra += ', "figures": [%s]' % ", ".join(
            '{"name": %s, "by": %s}' % (_json_str(n), _json_str(b)) for n, b in figures)
    text = '{"version": 1, "exit_code": %d, "footer": %s%s}\n' % (
        exit_code, "null" if footer is None else _json_str(footer), extra)
    tmp = os.path.join(run_dir, "report.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, os.path.join(run_dir, "report.json"))


# ------------------------------------------------------------------ ahead

# A warm spare restores the namespace while it waits for its run
# (_zygote.py), so that the run starts with it.  Not for a store over this:
# the idle spare would hold the values, and the run waits while it loads.
PREPARE_MAX_BYTES = 8 << 20


class Prepared:
    """A namespace restored ahead of its run: what main() would restore, as
    long as the run is in the same workspace and the store is the same file,
    unchanged (identity)."""

    def __init__(self, workspace, identity, main_mod, st):
        self.workspace = workspace
        self.identity = identity
        self.main_mod = main_mod
        self.st = st

    def serves(self, cfg):
        """Whether it is what this run would restore."""
        return cfg.persist and not cfg.fresh and \
            self.workspace == cfg.workspace and self.identity == \
            _identity(os.path.join(cfg.state_dir, STORE_NAME))


_unused = []


def _identity(path):
    try:
        s = os.stat(path)
    except OSError:
        return None
    return (s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns)


def prepare(workspace):
    """Restores the namespace a run in workspace would start with.  None
    when there is nothing to restore, or when the run must restore for
    itself to see what a restore says: an unreadable store (the run moves it
    aside and says so), a warning, a module from the workspace (its file may
    change before the run), or a store over PREPARE_MAX_BYTES.  The caller
    checks the restore printed nothing (the run would have shown it)."""
    os.chdir(workspace)
    cfg = Config({})
    path = os.path.join(cfg.state_dir, STORE_NAME)
    ident = _identity(path)
    if ident is None or ident[2] > PREPARE_MAX_BYTES:
        return None
    _workspace[0] = cfg.workspace
    main_mod = types.ModuleType("__main__")
    ns = main_mod.__dict__
    ns["__builtins__"] = builtins
    local = []

    def workspace_module(name):
        local.append(name)
        return _workspace_module(name)

    with warnings.catch_warnings(record=True) as caught:
        try:
            res = _load(path, ns, workspace_module)
        except Exception:
            return None
    if caught or local or _identity(path) != ident:
        return None
    st = State()
    _restored(cfg, st, res, path)
    return Prepared(cfg.workspace, ident, main_mod, st)


# --------------------------------------------------------------------- main

def _unbuffered_stdio():
    """sys.stdout and sys.stderr straight onto descriptors 1 and 2, every
    write a write(2), as `python -u` makes them: stdout to a pipe is
    block-buffered otherwise, and a run killed at its timeout would lose
    what it printed last, the part that says where it got to."""
    io = sys.modules["io"]
    for name, fd in (("stdout", 1), ("stderr", 2)):
        old = getattr(sys, name)
        if old is None:
            continue
        try:
            old.flush()
            raw = io.FileIO(fd, "w", closefd=False)
            new = io.TextIOWrapper(raw, encoding=old.encoding, errors=old.errors,
                                   newline="\n", write_through=True)
        except (OSError, ValueError, AttributeError):
            continue
        raw.name = "<%s>" % name
        setattr(sys, name, new)
        setattr(sys, "__%s__" % name, new)


def main(env=None, prepared=None):
    _unbuffered_stdio()
    env = os.environ if env is None else env
    cfg = Config(env)
    _workspace[0] = cfg.workspace
    _error[0] = None
    _full[0] = False
    if not cfg.run_dir:
        sys.stderr.write("vivarium runner: VIVARIUM_RUN_DIR is not set\n")
        return 2
    try:
        with open(os.path.join(cfg.run_dir, "code.py"), encoding="utf-8") as f:
            source = f.read()
    except (OSError, UnicodeDecodeError) as e:
        sys.stderr.write("vivarium runner: can't read code.py: %s\n" % e)
        _write_report(cfg.run_dir, 2, None)
        return 2

    sys.argv = [CODE_FILENAME]
    main_mod = types.ModuleType("__main__")
    ns = main_mod.__dict__
    ns["__builtins__"] = builtins
    sys.modules["__main__"] = main_mod

    st = State()
    _figures.start(cfg.workspace)
    if prepared is not None and prepared.serves(cfg):
        main_mod, st = prepared.main_mod, prepared.st
        ns = main_mod.__dict__
        sys.modules["__main__"] = main_mod
    else:
        if prepared is not None:
            # Never released: its values' __del__ would speak in this run,
            # which never restored them.  os._exit ends it with the rest.
            _unused.append(prepared)
        if cfg.persist:
            _restore(cfg, ns, st)
    if cfg.persist:
        ns["__builtins__"] = builtins
        ns["__name__"] = "__main__"
    # The workspace last on sys.path, so `import helpers` finds helpers.py
    # but an uploaded pandas.py, wave.py or vivarium_charts.py never stands
    # in for the module of that name.  -P kept it off the path at startup,
    # so a sitecustomize.py there never ran either.
    if cfg.workspace not in sys.path:
        sys.path.append(cfg.workspace)

    status, ran = _run(source, ns, st)
    try:
        figures = _figures.finish()
    except Exception as e:      # a figure must never cost the result
        figures = []
        sys.stderr.write("vivarium: open figures not saved: %s: %s\n"
                         % (type(e).__name__, e))
    _flush()

    if cfg.persist and st.save_error is None and (ran or cfg.fresh):
        try:
            _ensure_state_dir(cfg.state_dir)
            _save(cfg, ns, st, source)
        except Exception as e:
            if getattr(e, "errno", None) in _FULL_ERRNOS:
                st.save_error = "the workspace is full (%s)" % os.strerror(e.errno)
            else:
                st.save_error = "%s: %s" % (type(e).__name__, e)
    elif cfg.persist and not ran:
        # The code did not compile: the stored namespace stays as it was.
        is_stored_name = _import("vivarium._store").is_stored_name
        st.values = [(n, v) for n, v in ns.items() if isinstance(n, str)
                     and is_stored_name(n) and n not in st.modules]
        st.aliases = list(st.modules.items())
    _flush()

    footer = None
    if cfg.summary:
        try:
            footer = _footer(cfg, st)
        except Exception as e:  # the footer must never cost the result
            footer = "--- state ---\n(footer failed: %s: %s)" % (type(e).__name__, e)
    _write_report(cfg.run_dir, status, footer, _error[0] if status else None, figures)
    return status


if __name__ == "__main__":
    # Run as `python3 -m vivarium._runner`: this file is __main__ now, but
    # the user's code must be __main__, so work from the imported module.
    from vivarium import _runner
    sys.exit(_runner.main())
