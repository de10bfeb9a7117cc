#!/bin/sh
# image/python-install.sh SRC DEST: runs in the builder stage.  Copies the
# packages under SRC (python/: every folder with an __init__.py, not tests)
# into DEST, which the image puts on the interpreter's own path, and
# byte-compiles them: the image's root is read-only, so no .pyc could be
# written at run time.
set -eu
src=$1 dest=$2
mkdir -p "$dest"
n=0
for d in "$src"/*/; do
	name=$(basename "$d")
	case "$name" in tests|test|__pycache__) continue ;; esac
	[ -f "$d/__init__.py" ] || continue
	cp -R "$d" "$dest/$name"
	n=$((n + 1))
done
find "$dest" \( -name __pycache__ -o -name tests \) -prune -exec rm -rf {} +
if [ "$n" = 0 ]; then
	echo "python-install: no packages under $src" >&2
	exit 1
fi
python3 -m compileall -q --invalidation-mode checked-hash "$dest"
echo "python-install: $n package(s): $(ls "$dest" | tr '\n' ' ')" >&2
