"""The --- state --- footer: what the next call starts with, what this call
wrote, and what the workspace holds.

Every line is bounded: the footer rides along with every result, so a
namespace of a thousand names or a workspace of a million files still gives
a footer of a few hundred characters.
"""
import os
import time
import types

VARS_MAX = 400        # characters on the vars line
LIST_MAX = 300        # characters on the other list lines
NAME_MAX = 40
WALK_MAX = 20000      # directory entries looked at per workspace walk
WALK_DEPTH = 8
STATE_DIRNAME = ".vivarium"


# ------------------------------------------------------------- summaries

def _cut(s, n):
    return s if len(s) <= n else s[:n - 1] + "…"


def _is(obj, module_prefix, clsname):
    t = type(obj)
    return t.__name__ == clsname and (t.__module__ or "").startswith(module_prefix)


def summarize(value):
    """A few words on a value, in the shape the footer uses."""
    try:
        return _summarize(value)
    except Exception:
        return type(value).__name__


def _shape(shape):
    return "x".join(str(n) for n in shape)


def _summarize(v):
    if v is None or isinstance(v, (bool, int, float, complex)):
        s = repr(v)
        return s if len(s) <= 24 else type(v).__name__
    if isinstance(v, str):
        return "%d chars" % len(v)
    if isinstance(v, (bytes, bytearray)):
        return "%d bytes" % len(v)
    if _is(v, "pandas", "DataFrame"):
        cols = [str(c) for c in list(v.columns[:4])]
        more = ", …" if len(v.columns) > 4 else ""
        return "%s [%s%s]" % (_shape(v.shape), ", ".join(_cut(c, 20) for c in cols[:4]), more)
    if _is(v, "pandas", "Series"):
        name = "" if v.name is None else " %s" % _cut(str(v.name), 20)
        return "Series%s %d %s" % (name, len(v), v.dtype)
    if _is(v, "numpy", "ndarray"):
        return "array %s %s" % (_shape(v.shape), v.dtype)
    if isinstance(v, dict):
        return "%d keys" % len(v)
    if isinstance(v, list):
        return "list of %d" % len(v)
    if isinstance(v, tuple):
        return "tuple of %d" % len(v)
    if isinstance(v, (set, frozenset)):
        return "%s of %d" % (type(v).__name__, len(v))
    if isinstance(v, types.FunctionType):
        if v.__name__ == "<lambda>":
            return "lambda"
        return "%s()" % _cut(v.__name__, NAME_MAX)
    if isinstance(v, (types.BuiltinFunctionType, types.MethodType)):
        return "%s()" % _cut(getattr(v, "__name__", "?"), NAME_MAX)
    if isinstance(v, type):
        return "class %s" % _cut(v.__name__, NAME_MAX)
    return _cut(type(v).__name__, NAME_MAX)


def bounded_join(items, limit, sep="  "):
    """Joins items with sep; past limit characters, ends with a count of
    what was left out."""
    out = []
    used = 0
    for i, it in enumerate(items):
        add = len(it) + (len(sep) if out else 0)
        rest = len(items) - i
        tail = len(sep) + len("… %d more" % rest)
        if used + add + (tail if rest > 1 else 0) > limit and out:
            out.append("… %d more" % rest)
            return sep.join(out)
        out.append(it)
        used += add
    return sep.join(out)


LARGE = 10            # items from which a container counts as data
LONG_TEXT = 1000      # characters from which a string does


def weight(value):
    """(rank, -size) to sort a value by: what the model works on comes
    first, so a loop's leftovers (i, v0 ... v299) cannot hide the DataFrame
    behind "… N more".  Ranks: 0 frames, 1 arrays and Series, 2 large
    containers and long text, 3 other objects, 4 functions and classes,
    5 small containers, 6 scalars and short text."""
    try:
        return _weight(value)
    except Exception:
        return (3, 0)


def _weight(v):
    if v is None or isinstance(v, (bool, int, float, complex)):
        return (6, 0)
    if isinstance(v, (str, bytes, bytearray)):
        return (2, -len(v)) if len(v) >= LONG_TEXT else (6, 0)
    if _is(v, "pandas", "DataFrame"):
        return (0, -int(v.size))
    if _is(v, "pandas", "Series") or _is(v, "numpy", "ndarray"):
        return (1, -int(v.size))
    if isinstance(v, (dict, list, tuple, set, frozenset)):
        return (2, -len(v)) if len(v) >= LARGE else (5, 0)
    if isinstance(v, (types.FunctionType, types.BuiltinFunctionType,
                      types.MethodType, type)):
        return (4, 0)
    return (3, 0)


def vars_line(values):
    """values: (name, value) pairs of what the next call gets, heaviest
    first (see weight), then by name."""
    ranked = sorted(((weight(v), n, v) for n, v in values),
                    key=lambda t: (t[0], t[1]))
    items = ["%s %s" % (_cut(n, NAME_MAX), summarize(v)) for _, n, v in ranked]
    return "vars: " + bounded_join(items, VARS_MAX - 6)


def imports_line(modules):
    """modules: (alias, module name) pairs."""
    items = ["%s=%s" % (_cut(a, NAME_MAX), _cut(m, 60)) for a, m in sorted(modules)]
    return "already imported (do not re-import): " + bounded_join(items, LIST_MAX)


def human_size(n):
    """64K, 1.2M: the way ls -h says it."""
    for unit in ("B", "K", "M", "G"):
        if n < 1024 or unit == "G":
            if unit == "B":
                return "%dB" % n
            return ("%.1f%s" % (n, unit)) if n < 10 else ("%d%s" % (round(n), unit))
        n /= 1024.0
    return "%dB" % n


def mb(n):
    if not n:
        return "0 MB"
    if n < 0.05 * 1024 * 1024:
        return "<0.1 MB"
    return "%.1f MB" % (n / (1024.0 * 1024.0))


# ------------------------------------------------------------- workspace

class Snapshot:
    """A bounded walk of the workspace: path -> (mtime_ns, size)."""

    def __init__(self, root):
        self.files = {}
        self.truncated = False
        self.started_ns = time.time_ns()
        self._walk(root)

    def _walk(self, root):
        seen = 0
        stack = [("", 0)]
        while stack:
            rel, depth = stack.pop()
            try:
                it = os.scandir(os.path.join(root, rel) if rel else root)
            except OSError:
                continue
            with it:
                for de in it:
                    seen += 1
                    if seen > WALK_MAX:
                        self.truncated = True
                        return
                    p = de.name if not rel else rel + "/" + de.name
                    try:
                        if de.is_dir(follow_symlinks=False):
                            if p == STATE_DIRNAME:
                                continue
                            if depth + 1 < WALK_DEPTH:
                                stack.append((p, depth + 1))
                            else:
                                self.truncated = True
                            continue
                        if not de.is_file(follow_symlinks=False):
                            continue
                        st = de.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    self.files[p] = (st.st_mtime_ns, st.st_size)


def written(before, after):
    """Paths new or changed between two snapshots, newest first.  When the
    first walk stopped at its bound, a file it did not see counts only if
    it was modified after that walk began."""
    def changed_file(p, sig):
        old = before.files.get(p)
        if old is None and before.truncated:
            return sig[0] >= before.started_ns
        return old != sig
    changed = [p for p, sig in after.files.items() if changed_file(p, sig)]
    changed.sort(key=lambda p: (-after.files[p][0], p))
    return changed


def wrote_line(before, after, changed=None):
    """The footer's line for written(); None when there are none."""
    if changed is None:
        changed = written(before, after)
    if not changed:
        return None
    items = ["%s (%s)" % (_cut(p, 80), human_size(after.files[p][1])) for p in changed]
    return "wrote: " + bounded_join(items, LIST_MAX, sep=", ")


def workspace_line(snap):
    n = len(snap.files)
    count = "%d%s file%s" % (n, "+" if snap.truncated else "",
                             "" if n == 1 and not snap.truncated else "s")
    if not n:
        return "workspace: %s" % count
    newest = sorted(snap.files, key=lambda p: (-snap.files[p][0], p))[:3]
    return "workspace: %s, newest: %s" % (count, ", ".join(_cut(p, 60) for p in newest))


# ------------------------------------------------------------- file links

UPLOADED_NOTE = "uploaded"          # in the state dir; the agent appends
_IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".gif", ".webp")


def uploaded_line(root):
    """Files the user uploaded through a link since the last footer, from
    the agent's note (one "path<TAB>size" line each), which is taken so each
    upload is named once; None when there were none."""
    note = os.path.join(root, STATE_DIRNAME, UPLOADED_NOTE)
    taken = note + ".%d" % os.getpid()
    try:
        os.rename(note, taken)
    except OSError:
        return None
    try:
        with open(taken, "rb") as f:
            data = f.read(256 * 1024)
    except OSError:
        data = b""
    finally:
        try:
            os.unlink(taken)
        except OSError:
            pass
    items = []
    for raw in data.decode("utf-8", "replace").splitlines():
        path, _, size = raw.rpartition("\t")
        if path and size.isdigit():
            items.append("%s (%s)" % (_cut(path, 80), human_size(int(size))))
    if not items:
        return None
    return "uploaded by the user since the last call: " + bounded_join(items, LIST_MAX, sep=", ")


def share_hint(before, after):
    """A reminder of share_file when the run wrote a file that is not an
    image (images reach the model anyway); None otherwise."""
    for p, sig in after.files.items():
        if before.files.get(p) != sig and not p.lower().endswith(_IMAGE_EXTS):
            return ("to give the user a file: share_file(path) makes a "
                    "download link to put in your answer")
    return None
