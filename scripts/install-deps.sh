#!/usr/bin/env bash
# Installs what recbench needs from Debian/Ubuntu: OpenBLAS + LAPACKE to build; with
# --with-chromium also headless Chromium for the HTML report check (CI).
# Idempotent: installs only what is missing.
set -euo pipefail

packages=()
if ! { [ -f /usr/include/x86_64-linux-gnu/cblas.h ] || [ -f /usr/include/cblas.h ] || ls /usr/include/*/cblas.h >/dev/null 2>&1; } \
   || [ ! -f /usr/include/lapacke.h ]; then
  packages+=(libopenblas-dev liblapacke-dev)
fi
if [ "${1:-}" = "--with-chromium" ] && ! command -v chromium >/dev/null; then
  packages+=(chromium)
fi
if [ ${#packages[@]} -eq 0 ]; then
  echo "install-deps: everything needed is already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${packages[@]}" >/dev/null
echo "install-deps: installed ${packages[*]}"
