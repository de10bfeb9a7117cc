"""Chart helpers for run_python: one short call per chart instead of a page
of matplotlib, and clean_numeric for the "NA" / ":" columns that statistics
offices publish.

    from vivarium_charts import line_chart, bar_chart, scatter_chart, clean_numeric
    line_chart(df, title="GDP")                 # x = the index, y = every numeric column
    bar_chart(df, x="country", y=["2022", "2023"], horizontal=True)
    scatter_chart(df, x="invest", y="growth")
    df = clean_numeric(df)

Every helper draws on its own Figure with the Agg canvas (no pyplot state,
whatever MPLBACKEND says), writes a PNG and returns its file name.  Without
filename= the name comes from the title (or the chart kind) and never
overwrites an existing file: a second chart with the same title gets -2.

Each helper also prints one line that says in words what it drew (file,
title, x range, and each series' first, last, min and max value and number
of points), so the model can reason about a chart it cannot see: not every
provider passes images on, and later turns only have the text.
describe=False turns the line off.
"""
import os
import re

__all__ = ["line_chart", "bar_chart", "scatter_chart", "clean_numeric"]

FIGSIZE = (8.0, 4.5)     # inches; at DPI this is 960x540 pixels
DPI = 120
MAX_XTICKS = 12          # category labels shown on a crowded axis
DESCRIBE_SERIES = 8      # series named in a chart's description line
DESCRIBE_MAX = 1000      # characters in that line

# Strings that mean "no value" in the data sources the model reads: AMECO and
# DBnomics write NA, Eurostat ":", others n/a, "-", "..", or nothing.
_MISSING = frozenset(["", "na", "n/a", "n.a.", "nan", "none", "null", ":", "-",
                      "\u2013", "\u2014", "..", "...", "#n/a", "#na", "nd", "n.d."])
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?:([,'\u00a0\u202f ])\d{3})(?:\1\d{3})*(?:\.\d+)?$")
_DECIMAL_COMMA = re.compile(r"^[+-]?\d{1,3}(?:\.\d{3})*,\d+$|^[+-]?\d+,\d+$")
# Eurostat flags a value with letters after it: "123.4 p", "56 bep".
_FLAGGED = re.compile(r"^([+-]?[\d.,]+)\s*[a-z]{1,3}$")


# ----------------------------------------------------------- clean_numeric

def _text(values):
    """values as a new Series of str; values itself is left as it was.
    The copy is needed: on pandas 1.5, astype(str) can write its strings
    into the very array it converts (pandas bug 54654), and a frame
    restored from the namespace store (or any copy of one) has such
    arrays, so the caller's None and NaN would become 'None' and 'nan'."""
    import pandas as pd
    return pd.Series(values).copy().astype(str)


def _parse(series, decimal_comma=False):
    """(numbers, parsed count, candidate count) for an object series."""
    import pandas as pd
    t = _text(series).str.strip()
    missing = t.str.lower().isin(_MISSING) | series.isna()
    t = t.str.replace("\u2212", "-", regex=False)
    t = t.str.replace(_FLAGGED, r"\1", regex=True)
    if decimal_comma:
        dc = t.str.match(_DECIMAL_COMMA)
        t = t.where(~dc, t.str.replace(".", "", regex=False).str.replace(",", ".", regex=False))
    else:
        th = t.str.match(_THOUSANDS)
        t = t.where(~th, t.str.replace(r"[,'\u00a0\u202f ]", "", regex=True))
    num = pd.to_numeric(t.where(~missing), errors="coerce")
    return num, int(num.notna().sum()), int((~missing).sum())


def _coerce(series, explicit):
    """The series as numbers, or None when it should be left alone."""
    import pandas as pd
    from pandas.api import types as pt
    if pt.is_bool_dtype(series) or pt.is_datetime64_any_dtype(series) \
            or isinstance(series.dtype, pd.CategoricalDtype):
        return None
    if pt.is_numeric_dtype(series):
        return series
    num, parsed, cand = _parse(series)
    if cand and parsed < cand / 2:
        num2, parsed2, _ = _parse(series, decimal_comma=True)
        if parsed2 > parsed:
            num, parsed = num2, parsed2
    if parsed == 0:
        return None                 # nothing numeric: never destroy the column
    if not explicit and parsed < cand / 2:
        return None                 # mostly text: a label column with a few numbers
    return num


def clean_numeric(df, columns=None):
    """Turns number-like text columns into numbers: "NA", ":", "n/a", "-",
    "" and friends become NaN, thousands separators ("1,234", "1 234") and
    Eurostat flags ("12.5 p") are removed.  Returns a new frame.

    columns: the columns to convert (default: every column that is mostly
    numbers).  A column with nothing numeric in it is always left as it was.
    A Series is converted the same way and returned.
    """
    import pandas as pd
    if isinstance(df, pd.Series):
        num = _coerce(df, explicit=True)
        return df.copy() if num is None else num
    if not isinstance(df, pd.DataFrame):
        raise TypeError("clean_numeric expects a DataFrame or a Series, not %s"
                        % type(df).__name__)
    if isinstance(columns, str):
        columns = [columns]
    if columns is not None:
        missing = [c for c in columns if c not in df.columns]
        if missing:
            raise KeyError("clean_numeric: no column %s; the columns are: %s"
                           % (", ".join(map(repr, missing)), _colnames(df)))
    out = df.copy()
    explicit = columns is not None
    for c in (columns if explicit else list(df.columns)):
        col = out[c]
        if isinstance(col, pd.DataFrame):   # duplicate column names
            continue
        num = _coerce(col, explicit)
        if num is not None and num is not col:
            out[c] = num
    return out


def _colnames(df, limit=12):
    names = [repr(c) for c in list(df.columns[:limit])]
    if len(df.columns) > limit:
        names.append("… %d more" % (len(df.columns) - limit))
    return ", ".join(names)


# ------------------------------------------------------------------ data

class _Data:
    """What a chart plots: x values, their kind, and named y series."""

    def __init__(self, xvals, xkind, xname, series):
        self.x = xvals          # list-like
        self.kind = xkind       # "date", "number" or "category"
        self.xname = xname
        self.series = series    # [(label, float ndarray)]


def _frame(data):
    import pandas as pd
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, pd.Series):
        return data.to_frame(name=data.name if data.name is not None else "value")
    try:
        return pd.DataFrame(data)
    except Exception as e:
        raise TypeError("expected a DataFrame (or something pandas can make one "
                        "of), got %s: %s" % (type(data).__name__, e)) from None


def _as_dates(values):
    """values as datetimes when they look like dates, else None."""
    import pandas as pd
    from pandas.api import types as pt
    if pt.is_datetime64_any_dtype(values):
        return pd.Series(values)
    if isinstance(values, pd.PeriodIndex) or isinstance(getattr(values, "dtype", None),
                                                        pd.PeriodDtype):
        return pd.Series(pd.PeriodIndex(values).to_timestamp())
    if pt.is_numeric_dtype(values) or pt.is_bool_dtype(values):
        return None
    s = _text(values).str.strip()
    looks = s.str.match(r"^\d{4}([-/.]\d{1,2}([-/.]\d{1,2})?|-?Q[1-4]|-?M\d{2})([ T].*)?$")
    if len(s) == 0 or looks.mean() < 0.8:
        return None
    s = s.str.replace(r"^(\d{4})-?M(\d{2})$", r"\1-\2", regex=True)
    s = s.str.replace(r"^(\d{4})-Q([1-4])$", r"\1Q\2", regex=True)
    import warnings
    try:
        with warnings.catch_warnings():
            # pandas 2 warns when it has to guess the format per element:
            # guessing is the point here, and the warning would land in the
            # model's stderr.
            warnings.simplefilter("ignore")
            d = pd.to_datetime(s, errors="coerce")
    except Exception:
        return None
    if d.notna().mean() < 0.8:
        return None
    return d


def _prepare(df, x, y, need_numeric_x=False):
    import numpy as np
    import pandas as pd
    df = _frame(df)
    if x is not None and x not in df.columns:
        raise KeyError("no column %r for x; the columns are: %s" % (x, _colnames(df)))
    if isinstance(y, str) or (y is not None and not isinstance(y, (list, tuple))):
        y = [y]
    if y is not None:
        bad = [c for c in y if c not in df.columns]
        if bad:
            raise KeyError("no column %s for y; the columns are: %s"
                           % (", ".join(map(repr, bad)), _colnames(df)))
        if not y:
            raise ValueError("y is an empty list")
    if x is None:
        xraw, xname = df.index, (df.index.name if df.index.name is not None else None)
    else:
        xraw, xname = df[x], str(x)
    if y is None:
        cleaned = clean_numeric(df.drop(columns=[x]) if x is not None else df)
        y = [c for c in cleaned.columns
             if pd.api.types.is_numeric_dtype(cleaned[c])
             and not pd.api.types.is_bool_dtype(cleaned[c])]
        if not y:
            raise ValueError("no numeric column to plot; the columns are: %s"
                             % _colnames(df))
        cols = {c: cleaned[c] for c in y}
    else:
        cols = {}
        for c in y:
            num = _coerce(df[c], explicit=True)
            if num is None:
                raise ValueError("column %r has no numeric values to plot" % (c,))
            cols[c] = num
    series = [(str(c), np.asarray(cols[c], dtype=float)) for c in y]

    dates = _as_dates(xraw)
    if dates is not None:
        xvals, kind = np.asarray(pd.to_datetime(pd.Series(dates)).values), "date"
    else:
        from pandas.api import types as pt
        if pt.is_numeric_dtype(xraw) and not pt.is_bool_dtype(xraw):
            xvals, kind = np.asarray(xraw, dtype=float), "number"
        else:
            num = _coerce(pd.Series(xraw), explicit=False) if need_numeric_x else None
            if num is not None:
                xvals, kind = np.asarray(num, dtype=float), "number"
            else:
                xvals, kind = [str(v) for v in xraw], "category"
    if need_numeric_x and kind == "category":
        raise ValueError("x %s is not numeric or dates; a scatter chart needs numbers"
                         % (repr(x) if x is not None else "(the index)"))
    return _Data(xvals, kind, xname, series)


# ---------------------------------------------------------------- drawing

def _figure():
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    fig = Figure(figsize=FIGSIZE, dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig, ax


def _thousands_formatter():
    from matplotlib.ticker import Formatter

    class Thousands(Formatter):
        """1,234,567 on the axis, with as many decimals as the tick step needs."""

        def _decimals(self):
            # The fewest decimals that tell every tick apart exactly: 0.25
            # steps need two, 0.5 steps one, 1,000 steps none.
            locs = getattr(self, "locs", None)
            locs = [float(v) for v in (locs if locs is not None else [])]
            scale = max([abs(v) for v in locs] + [1e-12])
            for d in range(0, 7):
                if all(abs(round(v, d) - v) <= 1e-9 * scale for v in locs):
                    return d
            return 6

        def __call__(self, v, pos=None):
            s = "{:,.{d}f}".format(v, d=self._decimals())
            return "0" if s.strip("-0.,") == "" else s

    return Thousands()


def _style(fig, ax, d, title, xlabel, ylabel, value_axis="y", legend=None):
    if title:
        ax.set_title(str(title), loc="left", fontsize=12, fontweight="bold")
    xl = xlabel if xlabel is not None else d.xname
    if xl:
        (ax.set_ylabel if value_axis == "x" else ax.set_xlabel)(str(xl))
    yl = ylabel if ylabel is not None else (d.series[0][0] if len(d.series) == 1 else None)
    if yl:
        (ax.set_xlabel if value_axis == "x" else ax.set_ylabel)(str(yl))
    axis = ax.xaxis if value_axis == "x" else ax.yaxis
    axis.set_major_formatter(_thousands_formatter())
    ax.grid(True, axis=value_axis, alpha=0.3)
    if legend if legend is not None else len(d.series) > 1:
        ax.legend(frameon=False, fontsize=9)
    if d.kind == "date" and value_axis == "y":
        fig.autofmt_xdate()


def _category_ticks(ax, labels, axis="x"):
    n = len(labels)
    step = max(1, -(-n // MAX_XTICKS))
    pos = list(range(0, n, step))
    if axis == "x":
        ax.set_xticks(pos)
        long = any(len(labels[i]) > 6 for i in pos)
        ax.set_xticklabels([labels[i] for i in pos], rotation=30 if long else 0,
                           ha="right" if long else "center")
    else:
        ax.set_yticks(pos)
        ax.set_yticklabels([labels[i] for i in pos])


_SLUG = re.compile(r"[^a-z0-9]+")


def _filename(filename, title, kind):
    """The caller's name as given, or a new file that does not exist yet."""
    if filename:
        return os.fspath(filename)
    slug = _SLUG.sub("_", str(title).lower()).strip("_")[:48].rstrip("_") if title else ""
    stem = slug or kind
    for i in range(1, 10000):
        name = "%s.png" % stem if i == 1 else "%s-%d.png" % (stem, i)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        os.close(fd)
        return name
    raise FileExistsError("no free file name for %s-N.png" % stem)


def _save(fig, filename, title, kind):
    name = _filename(filename, title, kind)
    try:
        fig.tight_layout()
    except Exception:
        pass        # a layout that can't be tightened is still a chart
    try:
        fig.savefig(name, dpi=DPI)
    except BaseException:
        if not filename:        # don't leave the empty file we reserved
            try:
                os.unlink(name)
            except OSError:
                pass
        raise
    return name


# ------------------------------------------------------------ describing

def _num(v):
    """A value for the description: short, but exact enough to check."""
    v = float(v)
    if v.is_integer() and abs(v) < 1e15:
        return "%d" % v
    return "%.6g" % v


def _xtext(v, kind):
    if kind == "date":
        import pandas as pd
        t = pd.Timestamp(v)
        return t.strftime("%Y-%m-%d" if t == t.normalize() else "%Y-%m-%d %H:%M")
    if kind == "number":
        return _num(v)
    return repr(str(v)[:40])


def _description(kind, name, title, d):
    """The one line a helper prints about its chart: the file, the title,
    the x range and, per series in x order, points, first, last, min and max."""
    import numpy as np
    n = len(d.x)
    if d.kind == "category":
        order = np.arange(n)
        xbad = np.zeros(n, dtype=bool)
    else:
        xv = np.asarray(d.x)
        xbad = np.isnat(xv) if d.kind == "date" else np.isnan(xv)
        order = np.argsort(xv, kind="stable")
    parts = ["chart %s: %s" % (name, kind)]
    if title:
        parts[0] += ' "%s"' % str(title)[:80]
    ok_x = [i for i in order if not xbad[i]]
    if d.kind == "category":
        if n:
            parts.append("x: %d categor%s, %s to %s" % (
                n, "y" if n == 1 else "ies", _xtext(d.x[0], "category"),
                _xtext(d.x[-1], "category")))
    elif ok_x:
        parts.append("x%s: %s to %s" % (" (%s)" % d.xname if d.xname else "",
                                        _xtext(d.x[ok_x[0]], d.kind),
                                        _xtext(d.x[ok_x[-1]], d.kind)))
    for label, v in d.series[:DESCRIBE_SERIES]:
        vals = np.asarray(v, dtype=float)[ok_x] if ok_x else np.array([])
        vals = vals[~np.isnan(vals)]
        if len(vals) == 0:
            parts.append("%s: no values" % label[:40])
            continue
        parts.append("%s: %d point%s, first %s, last %s, min %s, max %s" % (
            label[:40], len(vals), "" if len(vals) == 1 else "s", _num(vals[0]),
            _num(vals[-1]), _num(vals.min()), _num(vals.max())))
    if len(d.series) > DESCRIBE_SERIES:
        parts.append("… %d more series" % (len(d.series) - DESCRIBE_SERIES))
    line = "; ".join(parts)
    return line if len(line) <= DESCRIBE_MAX else line[:DESCRIBE_MAX - 1] + "…"


def _print_description(kind, name, title, d):
    try:
        line = _description(kind, name, title, d)
    except Exception as e:      # a description must never cost the chart
        line = "chart %s: %s (no description: %s)" % (name, kind, type(e).__name__)
    print(line, flush=True)


# ----------------------------------------------------------------- charts

def line_chart(df, x=None, y=None, title=None, xlabel=None, ylabel=None,
               filename=None, marker=None, describe=True):
    """A line per y column against x (default: the index) and returns the PNG's
    file name.  y: a column or a list of columns (default: every numeric column
    but x).  Junk values ("NA", "n/a", "") are gaps the line steps over."""
    import numpy as np
    d = _prepare(df, x, y)
    fig, ax = _figure()
    if d.kind == "category":
        xs = np.arange(len(d.x), dtype=float)
    else:
        xs = d.x
        order = np.argsort(xs, kind="stable")
        xs = xs[order]
        d.series = [(lab, v[order]) for lab, v in d.series]
        d.x = xs
    many = len(d.x) > 60
    xok = np.isnat(xs) if d.kind == "date" else np.isnan(xs)
    for label, v in d.series:
        ok = ~np.isnan(v) & ~xok
        ax.plot(xs[ok], v[ok], label=label, linewidth=1.8,
                marker=marker if marker is not None else (None if many else "o"),
                markersize=3)
    if d.kind == "category":
        _category_ticks(ax, d.x)
    _style(fig, ax, d, title, xlabel, ylabel)
    name = _save(fig, filename, title, "line_chart")
    if describe:
        _print_description("line chart", name, title, d)
    return name


def bar_chart(df, x=None, y=None, title=None, xlabel=None, ylabel=None,
              filename=None, horizontal=False, describe=True):
    """Bars for y against the categories in x (default: the index); grouped
    bars when y names several columns; horizontal=True lays them sideways.
    Returns the PNG's file name."""
    import numpy as np
    import pandas as pd
    d = _prepare(df, x, y)
    if d.kind == "date":
        ts = pd.to_datetime(pd.Series(d.x))
        fmt = "%Y-%m-%d" if (ts.dt.normalize() == ts).all() else "%Y-%m-%d %H:%M"
        if (ts.dt.day == 1).all() and fmt == "%Y-%m-%d":
            fmt = "%Y" if (ts.dt.month == 1).all() else "%Y-%m"
        labels = list(ts.dt.strftime(fmt))
        d.kind = "category"
    elif d.kind == "number":
        labels = [("%d" % v) if float(v).is_integer() else ("%g" % v) for v in d.x]
    else:
        labels = list(d.x)
    fig, ax = _figure()
    n, k = len(labels), len(d.series)
    pos = np.arange(n, dtype=float)
    width = 0.8 / k
    for i, (label, v) in enumerate(d.series):
        off = pos - 0.4 + width * (i + 0.5)
        vals = np.nan_to_num(v, nan=0.0)
        if horizontal:
            ax.barh(off, vals, height=width, label=label)
        else:
            ax.bar(off, vals, width=width, label=label)
    if horizontal:
        _category_ticks(ax, labels, axis="y")
        ax.invert_yaxis()           # first category on top, as in a table
        ax.axvline(0, color="0.3", linewidth=0.8)
    else:
        _category_ticks(ax, labels, axis="x")
        ax.axhline(0, color="0.3", linewidth=0.8)
    _style(fig, ax, d, title, xlabel, ylabel, value_axis="x" if horizontal else "y")
    name = _save(fig, filename, title, "bar_chart")
    if describe:
        d.x, d.kind = labels, "category"
        _print_description("bar chart", name, title, d)
    return name


def scatter_chart(df, x=None, y=None, title=None, xlabel=None, ylabel=None,
                  filename=None, describe=True):
    """A scatter of y against x (default: the index); one colour per y
    column.  Returns the PNG's file name."""
    import numpy as np
    d = _prepare(df, x, y, need_numeric_x=True)
    fig, ax = _figure()
    for label, v in d.series:
        ok = ~np.isnan(v) & ~(np.isnat(d.x) if d.kind == "date" else np.isnan(d.x))
        ax.scatter(d.x[ok], v[ok], s=18, alpha=0.75, label=label)
    _style(fig, ax, d, title, xlabel, ylabel)
    name = _save(fig, filename, title, "scatter_chart")
    if describe:
        _print_description("scatter chart", name, title, d)
    return name
