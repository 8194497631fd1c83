#!/usr/bin/env bash
# ci/fresh_debian.sh [ROOT_DIR]: proves README's two commands on a fresh Debian 12.
# Builds a minimal Debian 12 root (debootstrap --variant=minbase bookworm) from the apt
# sources of this machine, clones this repository's committed HEAD into it, and runs
# README's two commands there exactly as written, printing each one's result and time.
# Needs root (debootstrap, chroot, bind mounts).  ROOT_DIR defaults to /tmp/hy4-fresh-debian
# and is rebuilt from scratch each run.  Uncommitted changes are not part of the test.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "ci/fresh_debian.sh: must run as root (debootstrap, chroot and bind mounts need it); stopping." >&2
  exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/tmp/hy4-fresh-debian}
sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || { echo "ci/fresh_debian.sh: no $sources on this machine (the apt sources to use)" >&2; exit 2; }
mirror=$(awk '/^URIs:/ { print $2; exit }' "$sources")
command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; }

cleanup() {
  for m in sys proc dev/pts dev; do umount -l "$root/$m" 2>/dev/null || true; done
}
trap cleanup EXIT
cleanup
rm -rf "$root"
echo "=== debootstrap --variant=minbase bookworm $root $mirror"
t0=$(date +%s)
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
  { tail -20 "$root.debootstrap.log"; exit 1; }
echo "root built in $(( $(date +%s) - t0 )) s"
cp "$sources" "$root/etc/apt/sources.list.d/debian.sources"
rm -f "$root/etc/apt/sources.list"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount -t proc proc "$root/proc"
mount --bind /sys "$root/sys"
git clone -q "$repo" "$root/src"
tested=$(git -C "$root/src" rev-parse --short HEAD)  # what the root runs, whatever HEAD is later
echo "cloned $tested into $root/src"

# README's two commands, read from README.md itself so they are exactly as written.
mapfile -t cmds < <(awk '/^## The two commands/ { on = 1; next } on && /^## / { exit } on && /^    bash / { sub(/^    /, ""); sub(/[ \t]+#.*$/, ""); print }' "$repo/README.md")
[ ${#cmds[@]} -eq 2 ] || { echo "ci/fresh_debian.sh: expected README's two commands, found ${#cmds[@]}" >&2; exit 1; }
status=0
results=()
for c in "${cmds[@]}"; do
  echo "=== in the fresh root: $c"
  t0=$(date +%s)
  if chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 bash -c "cd /src && $c"; then
    r=PASS
  else
    r=FAIL; status=1
  fi
  results+=("$r  $(( $(date +%s) - t0 )) s  $c")
done
echo "=== ci/fresh_debian.sh results (Debian 12 minbase, $tested)"
for r in "${results[@]}"; do echo "$r"; done
exit $status
