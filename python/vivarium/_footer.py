"""The --- state --- footer's namespace part: what the next call starts
with.  The agent adds the workspace lines (what the call wrote, uploads,
what the workspace holds) from its own walk, the one that finds the images.

Every line is bounded: the footer rides along with every result, so a
namespace of a thousand names still gives a footer of a few hundred
characters.
"""
import types

VARS_MAX = 400        # characters on the vars line
LIST_MAX = 300        # characters on the other list lines
NAME_MAX = 40


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


def mb(n):
    if not n:
        return "0 MB"
    if n < 0.05 * 1024 * 1024:
        return "<0.1 MB"
    return "%.1f MB" % (n / (1024.0 * 1024.0))
