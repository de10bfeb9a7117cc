#!/bin/sh
# tests/image/reference.sh: image/reference.txt (the reference's package
# list, flavour by flavour) agrees with image/packages.txt and the locks,
# docs/image.md carries the table made from them, and a wrong line or a
# stale table is refused.  Part of tests/image/run.sh; needs no container.
set -u
cd "$(dirname "$0")/../.."
fails=0
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if out=$(python3 image/reference.py check 2>&1); then
	ok "reference: image/reference.txt agrees with image/packages.txt and the locks"
else
	notok "reference: image/reference.txt disagrees: $out"
fi
if out=$(python3 image/reference.py table --diff docs/image.md 2>&1); then
	ok "reference: docs/image.md's table is the one image/reference.txt and the locks make"
else
	notok "reference: $out"
fi
n=$(grep -c '^[A-Za-z]' image/reference.txt)
rows=$(python3 image/reference.py table | grep -c '^| [^ ]* | `')
if [ "$n" = "$rows" ] && [ "$n" -ge 50 ]; then
	ok "reference: the table has a row for each of the $n packages"
else
	notok "reference: $n packages but $rows table rows"
fi

# A copy of image/ to break.
broken() {
	rm -rf "$tmp/image" "$tmp/docs"
	mkdir -p "$tmp/docs"
	cp -R image "$tmp/image"
	cp docs/image.md "$tmp/docs/"
}
broken
sed -i 's/^polars .*/polars polars python3-polars python3-polars/' "$tmp/image/reference.txt"
if out=$(python3 "$tmp/image/reference.py" check 2>&1); then
	notok "reference: a Debian package the image does not have went through"
elif echo "$out" | grep -q "packages.txt has no .runtime python3-polars polars. for trixie"; then
	ok "reference: a Debian package that is not in the image's list is refused"
else
	notok "reference: unclear error for a package not in the list: $out"
fi
broken
sed -i 's/^pandas .*/pandas pandas - -/' "$tmp/image/reference.txt"
if out=$(python3 "$tmp/image/reference.py" check 2>&1); then
	notok "reference: a package the image has, listed as absent, went through"
elif echo "$out" | grep -q "trixie has python3-pandas for pandas, but the line says -"; then
	ok "reference: a package the image has cannot be listed as missing"
else
	notok "reference: unclear error for a package listed as absent: $out"
fi
broken
sed -i 's/^python3-pandas=.*/python3-pandas=0.0-vivarium/' "$tmp/image/runtime.lock"
if out=$(python3 "$tmp/image/reference.py" table --diff "$tmp/docs/image.md" 2>&1); then
	notok "reference: a table with a stale version went through"
elif echo "$out" | grep -q "is not what image/reference.txt"; then
	ok "reference: a table whose versions the lock moved is stale"
else
	notok "reference: unclear error for a stale table: $out"
fi
broken
echo "lonely" >>"$tmp/image/reference.txt"
if out=$(python3 "$tmp/image/reference.py" check 2>&1); then
	notok "reference: a line without its columns went through"
elif echo "$out" | grep -q "want NAME IMPORT TRIXIE FORKY"; then
	ok "reference: a line without its columns is refused"
else
	notok "reference: unclear error for a short line: $out"
fi
exit $((fails > 0))
