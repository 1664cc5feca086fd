#!/usr/bin/env bash
# setup.sh: installs bellows' Debian dependencies (only those missing), then configures and
# builds into build/. Idempotent: run it again after pulling. Needs root (or sudo) only when a
# package is missing.
#   scripts/setup.sh              release build in build/
#   scripts/setup.sh --sanitize   AddressSanitizer + UBSan build in build-asan/
#   scripts/setup.sh --werror     warnings are errors (CI)
#   scripts/setup.sh --tests      also what the tests need (python3-torch and python3-torchvision
#                                 for the trace recorder,
#                                 valgrind for scripts/valgrind.sh, munge, Slurm and GNU parallel
#                                 for tests/test_slurm.sh, which starts its own Slurm: on a host
#                                 with systemd, Debian also enables the packages' services)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake pkg-config libsimgrid-dev libgsl-dev libopenblas-dev
          libcmocka-dev zlib1g-dev libdeflate-dev libjansson-dev gnuplot-nox dataset-fashion-mnist
          libpython3-dev python3-numpy)  # the last two: Python policies (--policy ./x.py)

build_dir=build
cmake_args=()
for arg in "$@"; do
  case "$arg" in
    --sanitize) build_dir=build-asan; cmake_args+=(-DBELLOWS_SANITIZE=ON) ;;
    --werror) cmake_args+=(-DBELLOWS_WERROR=ON) ;;
    --tests) PACKAGES+=(python3-torch python3-torchvision valgrind      # trace recorder, valgrind.sh
                        munge slurmd slurmctld slurm-client parallel) ;;  # test_slurm.sh
    *) echo "setup.sh: unknown option '$arg' (expected --sanitize, --werror or --tests)" >&2
       exit 2 ;;
  esac
done

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  t0=$(date +%s)
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  # Beside the download, a 216-package install here spent 19 s unpacking and 17 s configuring
  # (/var/log/dpkg.log): no fsync per unpacked file (--force-unsafe-io: a crash mid-install
  # means installing again), and the package lists fetched only when needed.
  apt_install() {
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      -o Dpkg::Options::=--force-unsafe-io "${missing[@]}"
  }
  # the package lists: fetched when there are none, or when the install fails on stale ones
  if ! compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null || ! apt_install; then
    $sudo apt-get update -qq
    apt_install
  fi
  echo "setup.sh: packages installed in $(( $(date +%s) - t0 )) s"
fi

cmake -S . -B "$build_dir" "${cmake_args[@]}" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
