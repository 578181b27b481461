# Sourced by the scripts' bad-argument tests: check EXPECTED_RC WHAT_STDERR_NAMES ARGS...
# runs "$script" ARGS, and on a wrong exit code or a stderr that does not name
# WHAT_STDERR_NAMES prints a FAIL line and sets fail=1.
fail=0
check() {
  local want="$1" names="$2"; shift 2
  local err rc
  err=$("$script" "$@" 2>&1 >/dev/null); rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qF -- "$names" <<<"$err"; then
    echo "FAIL: $(basename "$script") $* -> exit $rc (want $want), stderr: $err"
    fail=1
  fi
}
