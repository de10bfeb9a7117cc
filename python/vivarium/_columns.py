"""After a failed column lookup on a DataFrame (df["Reigon"], df.Reigon,
df.groupby("Reigon")), one line naming the frame's columns and the ones
closest to what was asked for:

    columns of df (12): 'Region', 'Units', ... (+N more); closest to 'Reigon': 'Region'

so the next call uses a name that exists instead of guessing again.  The
runner puts it at the end of stderr and in the footer.  Called only when
pandas is already imported; it never imports pandas itself.
"""
import sys

NAMES_MAX = 60        # column names on the line
NAMES_CHARS = 1500    # characters of column names on the line
NAME_MAX = 80         # characters of one name
KEYS_MAX = 3          # missing keys given their closest columns
CLOSE_MAX = 3         # closest columns per key
SEARCH_MAX = 10000    # columns compared with a key


def line_for(exc, ns):
    """The line for exc (a KeyError or AttributeError), or None when it
    was not about a DataFrame's columns."""
    pd = sys.modules.get("pandas")
    if pd is None:
        return None
    if isinstance(exc, KeyError):
        frame = _frame_of_keyerror(exc, pd)
        keys = _missing_keys(exc)
    elif isinstance(exc, AttributeError):
        frame = getattr(exc, "obj", None)
        keys = [exc.name] if isinstance(getattr(exc, "name", None), str) else []
    else:
        return None
    if not isinstance(frame, pd.DataFrame):
        return None
    return columns_line(frame, _name_of(frame, ns), keys)


def columns_line(frame, name, keys=()):
    cols = frame.columns
    shown = []
    used = 0
    for c in cols[:NAMES_MAX]:
        r = _cut(repr(c))
        if shown and used + len(r) > NAMES_CHARS:
            break
        shown.append(r)
        used += len(r) + 2
    text = "columns of %s (%d): %s" % (name, len(cols), ", ".join(shown))
    if len(shown) < len(cols):
        text += " (+%d more)" % (len(cols) - len(shown))
    for key in [k for k in keys if not _has(cols, k)][:KEYS_MAX]:
        close = _closest(key, cols)
        if close:
            text += "; closest to %s: %s" % (_cut(repr(key)), ", ".join(close))
    return text


def _frame_of_keyerror(exc, pd):
    """The DataFrame whose column lookup raised exc: the innermost frame
    of the traceback whose `self` is a DataFrame, when the KeyError was
    raised inside pandas (not by a dict in the user's lambda) and not by a
    lookup in the frame's row index (df.loc["x"])."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    if not frames or not str(frames[-1].f_globals.get("__name__")).startswith("pandas."):
        return None
    index = None
    for f in reversed(frames):
        this = f.f_locals.get("self")
        if index is None and isinstance(this, pd.Index):
            index = this
        if isinstance(this, pd.DataFrame):
            if index is not None and index is this.index and index is not this.columns:
                return None
            return this
    return None


def _missing_keys(exc):
    """The keys a KeyError says are missing: the key itself, or the list
    in pandas' "['a', 'b'] not in index" / "None of [...] are in the
    columns" messages."""
    if not exc.args:
        return []
    key = exc.args[0]
    if not isinstance(key, str):
        return [key]
    import re
    m = re.match(r"^(?:None of )?\[(.*)\] (?:not in index|not found in axis|are in the )",
                 key, re.S)
    if not m:
        return [key]
    inner = m.group(1)
    wrapped = re.match(r"^Index\(\[(.*)\],\s*dtype=.*\)$", inner, re.S)
    if wrapped:
        inner = wrapped.group(1)
    import ast
    try:
        keys = ast.literal_eval("[%s]" % inner)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    return keys if isinstance(keys, list) else []


def _has(cols, key):
    try:
        return key in cols
    except Exception:       # an unhashable key, an odd index
        return False


def _closest(key, cols):
    """Reprs of the columns that look like key: the same name but for case
    and surrounding blanks first, then difflib's close matches."""
    import difflib
    by_text = {}
    for c in cols[:SEARCH_MAX]:
        by_text.setdefault(str(c), c)
    k = str(key)
    fold = k.strip().casefold()
    found = [t for t in by_text if t.strip().casefold() == fold]
    for t in difflib.get_close_matches(k, list(by_text), n=CLOSE_MAX, cutoff=0.6):
        if t not in found:
            found.append(t)
    return [_cut(repr(by_text[t])) for t in found[:CLOSE_MAX]]


def _name_of(frame, ns):
    """The namespace's name for frame, by identity."""
    for k, v in ns.items():
        if v is frame and isinstance(k, str) and not k.startswith("__"):
            return k
    return "the DataFrame"


def _cut(s):
    return s if len(s) <= NAME_MAX else s[:NAME_MAX - 1] + "…"
