# tests/deploy/lib.sh: what the deploy tests share (source it after cd to
# the repository).  Counts checks and prints one line per check; call
# t_done at the end for the summary and the exit status.
#
#   t_ok NAME / t_fail NAME [DETAIL]   one result
#   t_check NAME CMD...                t_ok when CMD succeeds, else t_fail
#   t_eq NAME GOT WANT                 t_ok when the two strings are equal
#   t_grep NAME PATTERN FILE           t_ok when FILE matches PATTERN
#   t_port                             a free TCP port on 127.0.0.1
#   t_wait_for PATTERN FILE SECONDS    wait until FILE matches (0), or fail (1)
#   t_image                            the sandbox image the suite uses
t_pass=0
t_failed=0
t_ok() { t_pass=$((t_pass + 1)); echo "ok   $1"; }
t_fail() {
	t_failed=$((t_failed + 1)); echo "FAIL $1"
	[ $# -lt 2 ] || printf '%s\n' "$2" | sed 's/^/     /' | head -n 40
}
t_check() {
	_n=$1; shift
	if _out=$("$@" 2>&1); then t_ok "$_n"; else t_fail "$_n" "$_out"; fi
}
t_eq() {
	if [ "$2" = "$3" ]; then t_ok "$1"
	else t_fail "$1" "got \"$2\", want \"$3\""; fi
}
t_grep() {
	if grep -q -e "$2" "$3"; then t_ok "$1"
	else t_fail "$1" "no \"$2\" in $3:
$(head -c 2000 "$3")"; fi
}
t_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
t_wait_for() {
	_i=0
	while [ $_i -lt $(($3 * 10)) ]; do
		grep -q -e "$1" "$2" 2>/dev/null && return 0
		_i=$((_i + 1)); sleep 0.1
	done
	return 1
}
t_image() {
	echo "${VIVARIUM_SANDBOX_IMAGE:-localhost/vivarium-sandbox:${IMAGE_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}}"
}
t_done() {
	echo "$1: $t_pass passed, $t_failed failed"
	[ "$t_failed" = 0 ]
}
