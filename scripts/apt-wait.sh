# shellcheck shell=bash
# apt_get ARGS...: apt-get that waits (bounded) for another apt or dpkg process to release its
# lock instead of failing at once. Sourced by scripts/test.sh.
#   APT_LOCK_TIMEOUT  seconds to wait in all (default 300)
#   APT_LOCK_POLL_S   seconds between tries (default 10)
apt_get() {
  local timeout="${APT_LOCK_TIMEOUT:-300}" poll="${APT_LOCK_POLL_S:-10}" waited=0 err status
  err="$(mktemp)"
  while true; do
    # DPkg::Lock::Timeout makes apt itself wait for the dpkg lock; the loop also covers the
    # lists lock of `apt-get update` and apt versions without the option.
    status=0
    ${SUDO:-} env DEBIAN_FRONTEND=noninteractive apt-get -o "DPkg::Lock::Timeout=$timeout" \
      "$@" 2>"$err" || status=$?
    if [ "$status" -eq 0 ]; then
      cat "$err" >&2
      rm -f "$err"
      return 0
    fi
    if grep -qiE 'could not get lock|unable to lock|is another process using it' "$err" \
      && [ "$waited" -lt "$timeout" ]; then
      echo "apt-get: another apt/dpkg process holds the lock; waiting (${waited}s of ${timeout}s)" >&2
      sleep "$poll"
      waited=$((waited + (poll > 0 ? poll : 1)))
      continue
    fi
    cat "$err" >&2
    rm -f "$err"
    if [ "$waited" -ge "$timeout" ]; then
      echo "apt-get: gave up after ${timeout}s waiting for the apt lock (APT_LOCK_TIMEOUT)" >&2
    fi
    return "$status"
  done
}
