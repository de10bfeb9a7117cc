"""vivarium: what runs inside the sandbox's Python interpreter."""
import os


def _seed_font_list(seed=None, dest=None):
    """Puts the font list the image was built with (_fontlist/, made by
    the Containerfile) in matplotlib's cache directory, unless one is
    there.  MPLCONFIGDIR is on the tmpfs, empty at every sandbox start, and
    without the list matplotlib's first import scans every font again
    (0.3-0.9 s of a core on the 2-core machines, in the zygote of each
    sandbox started).  The list names fonts by their paths in the image,
    which it was made from.  Anything amiss leaves matplotlib to make its
    own, as before."""
    if seed is None:
        seed = os.path.join(os.path.dirname(__file__), "_fontlist")
    if dest is None:
        dest = os.environ.get("MPLCONFIGDIR")
    if not dest:
        return
    try:
        names = [n for n in os.listdir(seed)
                 if n.startswith("fontlist-") and n.endswith(".json")]
    except OSError:
        return          # not an image build (the tests, the host)
    for name in names:
        target = os.path.join(dest, name)
        if os.path.exists(target):
            continue
        tmp = "%s.%d.tmp" % (target, os.getpid())
        try:
            os.makedirs(dest, mode=0o700, exist_ok=True)
            with open(os.path.join(seed, name), "rb") as src, \
                    open(tmp, "wb") as out:
                out.write(src.read())
            os.replace(tmp, target)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass


_seed_font_list()
