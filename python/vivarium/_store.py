"""The namespace store: one file under <workspace>/.vivarium/ holding the
globals of the previous run_python call, pickled value by value.

File layout (all offsets relative to the start of the data region):

    b"VIVNS\\x01\\r\\n"            8 bytes of magic
    header length              8 bytes, little endian
    header                     JSON, UTF-8
    data region                per value: its pickle, then its out-of-band
                               buffers, back to back

The header lists one entry per name:

    {"name": "df", "kind": "value", "type": "DataFrame", "size": N,
     "pickle": [off, len], "buffers": [[off, len], ...]}
    {"name": "pd", "kind": "module", "module": "pandas"}
    {"name": "b", "kind": "same", "as": "a"}     # b is a, at top level

Values are pickled with protocol 5 and out-of-band buffers, so the bytes of a
numpy array or a DataFrame's blocks go from the object's own memory to the
file and back into a fresh buffer without an intermediate copy.  Each value
has its own pickle, so one that can't be pickled (or unpickled) costs only
itself.  The file is written to a temporary name, fsynced and renamed over
the old one: a run killed mid-save leaves the previous store as it was.  A
save whose bytes equal the stored file's writes nothing.

Only the standard library is imported at module level; cloudpickle is
imported only for a value the standard pickler can't save correctly (a
function or class defined in the user's code, a module, ...).
"""
import io
import json
import os
import pickle
import struct
import sys
import time
import types
from collections import ChainMap

MAGIC = b"VIVNS\x01\r\n"
STORE_NAME = "namespace.store"
TMP_NAME = "namespace.store.tmp"
CORRUPT_PREFIX = "namespace.corrupt-"
CORRUPT_KEEP = 3
HEADER_MAX = 64 << 20
PROTOCOL = 5

# Code objects of functions restored from an earlier call get this file
# name, so a traceback through them does not show the current call's lines
# as if they were the old ones.
EARLIER_FILENAME = "<run_python: earlier call>"
CODE_FILENAME = "<run_python>"

# Test hook: when set, save() creates this file once the first value is on
# disk and then sleeps, so a test can SIGKILL it mid-write.
_PAUSE_ENV = "VIVARIUM_TEST_PAUSE_IN_SAVE"


class StoreError(Exception):
    """The store file exists but can't be read as a store."""


def is_stored_name(name):
    """True for names the store keeps: not dunders, not _vivarium*."""
    if name.startswith("_vivarium"):
        return False
    if len(name) > 4 and name.startswith("__") and name.endswith("__"):
        return False
    return True


# ------------------------------------------------------------------ loading

# The namespace being restored into.  Functions defined in user code are
# pickled with a reference to "the live namespace" instead of a copy of the
# globals they use, so after a restore they see the same globals as the
# code that calls them, exactly as in one long-lived interpreter.
_live = {"ns": None}


def _live_namespace():
    ns = _live["ns"]
    if ns is None:
        ns = {"__name__": "__main__"}
    return ns


def _alloc(n):
    """A writable buffer of n bytes.  A bytearray is zero-filled first, which
    costs as much as reading the bytes in; out-of-band buffers come from
    numpy (or pandas) objects, which will import numpy anyway, so big ones
    are allocated uninitialised with numpy."""
    if n >= (1 << 20):
        try:
            import numpy
            return numpy.empty(n, dtype=numpy.uint8)
        except ImportError:
            pass
    return bytearray(n)


def _read_exact(f, n, alloc=bytearray):
    buf = alloc(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = f.readinto(view[got:])
        if not k:
            raise StoreError("store is truncated")
        got += k
    return buf


def read_header(path):
    """Returns (header dict, data offset) or raises OSError/StoreError."""
    with open(path, "rb", buffering=0) as f:
        return _read_header(f)


def _read_header(f):
    head = f.read(16)
    if len(head) < 16 or head[:8] != MAGIC:
        raise StoreError("not a namespace store (bad magic)")
    (hlen,) = struct.unpack("<Q", head[8:])
    if hlen > HEADER_MAX:
        raise StoreError("header too large")
    raw = _read_exact(f, hlen)
    try:
        header = json.loads(raw.decode("utf-8"))
    except ValueError as e:
        raise StoreError("header is not JSON: %s" % e) from None
    if not isinstance(header, dict) or header.get("version") != 1 \
            or not isinstance(header.get("names"), list):
        raise StoreError("header has an unknown shape")
    return header, 16 + hlen


def workspace_reason(module):
    """Why a value of the workspace module `module` is not kept: the
    restore never imports workspace files, the code imports them again."""
    return "its module %s is a workspace file: import it again" % module


def load(path, ns, import_dep=None, local=None):
    """Restores the store at path into the dict ns.

    Returns a Restore with the names restored and the names that failed,
    each with a reason.  import_dep(name) imports cloudpickle when a value
    needs it (the runner's version keeps workspace files out of the way).
    local(name) says whether a module that was not found is a workspace
    file, which the caller keeps off sys.path meanwhile.  Raises StoreError
    (or OSError) when the file as a whole can't be read; the caller moves
    it aside.
    """
    res = Restore()
    _live["ns"] = ns
    try:
        with open(path, "rb", buffering=0) as f:
            size = os.fstat(f.fileno()).st_size
            header, base = _read_header(f)
            entries = header["names"]
            for e in entries:
                if not isinstance(e, dict) or not isinstance(e.get("name"), str):
                    raise StoreError("header entry has an unknown shape")
                _check_extents(e, base, size)
            res.imports = [m for m in header.get("imports", [])
                           if isinstance(m, str)]
            for e in entries:
                name = e["name"]
                kind = e.get("kind")
                if kind == "module":
                    _restore_module(e, ns, res, local)
                elif kind == "value":
                    _restore_value(f, base, e, ns, res, import_dep, local)
            for e in entries:
                if e.get("kind") == "same":
                    other = e.get("as")
                    if isinstance(other, str) and other in ns \
                            and other in res.restored:
                        ns[e["name"]] = ns[other]
                        res.restored.append(e["name"])
                    else:
                        res.failed.append((e["name"], "its value %s was not restored"
                                           % other))
            for m in res.imports:
                top = m.split(".", 1)[0]
                if isinstance(ns.get(top), types.ModuleType):
                    try:
                        __import__(m)
                    except Exception:
                        pass
    finally:
        _live["ns"] = None
    return res


def _check_extents(e, base, size):
    spans = []
    if e.get("kind") == "value":
        spans.append(e.get("pickle"))
        spans.extend(e.get("buffers") or [])
    for s in spans:
        if not (isinstance(s, list) and len(s) == 2
                and all(isinstance(x, int) and x >= 0 for x in s)
                and base + s[0] + s[1] <= size):
            raise StoreError("value %r lies outside the file (truncated store?)"
                             % e.get("name"))


def _local_module(exc, local):
    """The workspace module whose absence exc reports, or None."""
    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    return name if name and local is not None and local(name) else None


def _restore_module(e, ns, res, local):
    import importlib
    modname = e.get("module")
    try:
        ns[e["name"]] = importlib.import_module(modname)
        res.restored.append(e["name"])
        res.modules[e["name"]] = modname
    except BaseException as exc:  # a module's import can raise anything
        if _local_module(exc, local):
            why = workspace_reason(modname)
        else:
            why = "module %s: %s: %s" % (modname, type(exc).__name__, exc)
        res.failed.append((e["name"], why))


def _restore_value(f, base, e, ns, res, import_dep, local):
    name = e["name"]
    off, n = e["pickle"]
    f.seek(base + off)
    data = _read_exact(f, n)
    if import_dep is not None and b"cloudpickle" in data:
        try:
            import_dep("cloudpickle")
        except ImportError:
            pass        # loads() below names the problem
    bufs = []
    for boff, blen in e.get("buffers") or []:
        f.seek(base + boff)
        bufs.append(_read_exact(f, blen, _alloc))
    try:
        ns[name] = pickle.loads(data, buffers=bufs)
        res.restored.append(name)
    except BaseException as exc:  # __setstate__ and friends run user code
        mod = _local_module(exc, local)
        res.failed.append((name, workspace_reason(mod) if mod else
                           "%s: %s" % (type(exc).__name__, _short(exc))))


class Restore:
    def __init__(self):
        self.restored = []   # names now in the namespace
        self.modules = {}    # module aliases restored: name -> module name
        self.failed = []     # (name, reason)
        self.imports = []    # dotted submodules to keep imported


def count_names(path):
    """Number of names in the store at path (for fresh=True), or None."""
    try:
        header, _ = read_header(path)
        return len(header["names"])
    except (OSError, StoreError):
        return None


UNRESTORED_PREFIX = "namespace.unrestored-"


def keep_copy(state_dir, path):
    """Keeps the store as it is now under namespace.unrestored-<time> (a
    hard link: the store is replaced by rename, never written in place), so
    that values this Python could not load (a new image's pandas) are not
    lost when the next save leaves them out.  The same store kept already
    is not kept twice; the newest few are kept.  Returns the name, or None."""
    try:
        names = sorted(n for n in os.listdir(state_dir) if n.startswith(UNRESTORED_PREFIX))
        for n in names:
            if os.path.samefile(os.path.join(state_dir, n), path):
                return n
        dest = os.path.join(state_dir, UNRESTORED_PREFIX +
                            time.strftime("%Y%m%dT%H%M%S", time.gmtime()))
        if os.path.exists(dest):
            dest += "-%d" % len(names)
        os.link(path, dest)
        for n in names[:-(CORRUPT_KEEP - 1)] if CORRUPT_KEEP > 1 else names:
            os.unlink(os.path.join(state_dir, n))
        return os.path.basename(dest)
    except OSError:
        return None


def move_aside(state_dir, path):
    """Renames a bad store to namespace.corrupt-<time>; keeps the newest few.
    Returns the new name relative to the workspace-ish state dir, or None."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    dest = os.path.join(state_dir, CORRUPT_PREFIX + stamp)
    i = 1
    while os.path.exists(dest):
        i += 1
        dest = os.path.join(state_dir, "%s%s-%d" % (CORRUPT_PREFIX, stamp, i))
    try:
        os.replace(path, dest)
    except OSError:
        try:
            os.unlink(path)
        except OSError:
            pass
        return None
    try:
        old = sorted(n for n in os.listdir(state_dir) if n.startswith(CORRUPT_PREFIX))
        for n in old[:-CORRUPT_KEEP]:
            os.unlink(os.path.join(state_dir, n))
    except OSError:
        pass
    return os.path.basename(dest)


# ------------------------------------------------------------------- saving

class _NamespaceRef:
    """Stands in for a user function's globals inside its pickle."""

    def __reduce__(self):
        return (_live_namespace, ())


def _rename_code(code):
    """A copy of code (and the code objects nested in it) whose file name
    says it came from an earlier call."""
    if code.co_filename != CODE_FILENAME:
        return code
    consts = tuple(_rename_code(c) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_filename=EARLIER_FILENAME, co_consts=consts)


_pickler_class = None


def _refuse(obj):
    raise TypeError("cannot pickle '%s' object" % type(obj).__name__)


def _make_pickler_class():
    """A cloudpickle Pickler that pickles functions defined in the user's
    namespace with a reference to the live namespace as their globals,
    instead of a snapshot of the values they use.  Without this, restoring
    `def f(): return df.sum()` would carry a second copy of df inside f and
    f would keep using the old df after the user rebinds it."""
    global _pickler_class
    if _pickler_class is not None:
        return _pickler_class
    import cloudpickle
    base = getattr(cloudpickle, "Pickler", None) or cloudpickle.CloudPickler

    # cloudpickle saves a file opened for reading as a copy of its contents;
    # the next call would get a StringIO where it had a file.  An open file
    # is not something that carries over: say so instead.
    files = {t: _refuse for t in (io.TextIOWrapper, io.BufferedReader,
                                  io.BufferedWriter, io.BufferedRandom, io.FileIO)}

    class Pickler(base):
        dispatch_table = ChainMap(files, base.dispatch_table)

        def __init__(self, file, ns, buffer_callback=None):
            super().__init__(file, protocol=PROTOCOL,
                             buffer_callback=buffer_callback)
            self._vivarium_ns = ns
            refs = getattr(self, "globals_ref", None)
            if isinstance(refs, dict):
                refs[id(ns)] = _NamespaceRef()

        def _dynamic_function_reduce(self, func):
            rv = super()._dynamic_function_reduce(func)
            if func.__globals__ is not self._vivarium_ns:
                return rv
            try:
                rv = list(rv)
                args = list(rv[1])
                args[0] = _rename_code(args[0])
                rv[1] = tuple(args)
                state, slotstate = rv[2]
                slotstate = dict(slotstate)
                slotstate["__globals__"] = {}
                rv[2] = (state, slotstate)
                return tuple(rv)
            except (TypeError, ValueError, IndexError, AttributeError):
                return super()._dynamic_function_reduce(func)

    _pickler_class = Pickler
    return Pickler


class Pickled:
    """One value, pickled: its in-band bytes and out-of-band buffers."""

    __slots__ = ("name", "type", "data", "buffers", "size")

    def __init__(self, name, typename, data, buffers):
        self.name = name
        self.type = typename
        self.data = data
        self.buffers = buffers
        self.size = len(data) + sum(b.nbytes for b in buffers)


class _Dynamic(Exception):
    """The plain pickler met something only cloudpickle can save."""


def _by_reference(obj):
    """False for a function or class that pickle would save by a name the
    next call can't resolve: one defined in the user's code (module
    __main__, which starts empty) or inside a function.  pickle itself
    refuses names that don't lead back to the object."""
    mod = getattr(obj, "__module__", None)
    qual = getattr(obj, "__qualname__", None) or ""
    return bool(mod) and mod != "__main__" and "<locals>" not in qual \
        and "<lambda>" not in qual


class _PlainPickler(pickle.Pickler):
    """The C pickler, refusing what it would get wrong: a function or class
    defined in the user's code would be saved as a reference to __main__,
    which the next call's __main__ does not have yet."""

    def reducer_override(self, obj):
        if isinstance(obj, (types.FunctionType, type)) and not _by_reference(obj):
            raise _Dynamic()
        if isinstance(obj, (types.ModuleType, types.CodeType)):
            raise _Dynamic()
        return NotImplemented


def pickle_value(name, value, ns, import_dep=None):
    """Returns a Pickled, or raises whatever pickling raised.  Plain data
    (numbers, strings, containers, DataFrames, arrays, instances of
    importable classes) goes through the standard pickler; cloudpickle,
    which costs ~20 ms to import, is used only for what needs it."""
    out = io.BytesIO()
    raw = []
    try:
        _PlainPickler(out, protocol=PROTOCOL, buffer_callback=raw.append).dump(value)
    except Exception:
        out = None
    if out is None:
        if import_dep is not None:
            import_dep("cloudpickle")
        cls = _make_pickler_class()
        out = io.BytesIO()
        raw = []
        cls(out, ns, buffer_callback=raw.append).dump(value)
    bufs = []
    for pb in raw:
        try:
            bufs.append(pb.raw())
        except BufferError:  # not contiguous: take a contiguous copy
            bufs.append(memoryview(bytes(memoryview(pb))))
    return Pickled(name, type(value).__name__, out.getbuffer(), bufs)


def write(state_dir, entries, imports):
    """Writes the store atomically.  entries: list of Pickled, or dicts for
    the module/same kinds.  An empty list removes the store."""
    path = os.path.join(state_dir, STORE_NAME)
    if not entries:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return 0
    names = []
    chunks = []
    off = 0
    for e in entries:
        if isinstance(e, Pickled):
            d = {"name": e.name, "kind": "value", "type": e.type,
                 "size": e.size, "pickle": [off, len(e.data)], "buffers": []}
            chunks.append(e.data)
            off += len(e.data)
            for b in e.buffers:
                d["buffers"].append([off, b.nbytes])
                chunks.append(b)
                off += b.nbytes
            names.append(d)
        else:
            names.append(e)
    header = json.dumps({"version": 1, "python": "%d.%d" % sys.version_info[:2],
                         "names": names, "imports": imports},
                        separators=(",", ":")).encode("utf-8")
    head = MAGIC + struct.pack("<Q", len(header)) + header
    total = len(head) + off
    tmp = os.path.join(state_dir, TMP_NAME)
    if _same_as_stored(path, total, [head] + chunks):
        try:
            os.unlink(tmp)      # left by a run killed mid-save
        except FileNotFoundError:
            pass
        return total
    pause = os.environ.get(_PAUSE_ENV)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
                 | os.O_NOFOLLOW, 0o600)
    try:
        _write_all(fd, head)
        for i, c in enumerate(chunks):
            _write_all(fd, c)
            if pause and i == 0:
                open(pause, "w").close()
                time.sleep(120)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    os.close(fd)
    # No fsync of the directory: a rename lost to a power cut leaves the old
    # store, which is the same promise as a kill mid-save.  Skipping it
    # halves the cost of saving a small namespace here (~20 ms per fsync).
    os.replace(tmp, path)
    return total


def _same_as_stored(path, total, chunks):
    """True when the store at path already holds exactly these bytes: most
    calls leave most of the namespace as it was, and not rewriting it saves
    the write and the fsync.  Comparing costs a read from the page cache."""
    try:
        if os.stat(path).st_size != total:
            return False
        with open(path, "rb", buffering=0) as f:
            for c in chunks:
                view = memoryview(c).cast("B")
                pos = 0
                while pos < len(view):
                    part = view[pos:pos + (1 << 20)]
                    if f.read(len(part)) != bytes(part):
                        return False
                    pos += len(part)
            return f.read(1) == b""
    except OSError:
        return False


def _write_all(fd, data):
    view = memoryview(data).cast("B")
    while len(view):
        n = os.write(fd, view)
        view = view[n:]


def _short(exc, limit=120):
    s = str(exc).replace("\n", " ")
    return s if len(s) <= limit else s[:limit - 1] + "…"
