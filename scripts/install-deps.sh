#!/usr/bin/env bash
# Installs the C libraries recbench links against (OpenBLAS + LAPACKE) on Debian/Ubuntu.
# Idempotent: does nothing when the headers are already present.
set -euo pipefail

have() { [ -f /usr/include/x86_64-linux-gnu/cblas.h ] || [ -f /usr/include/cblas.h ] || \
         ls /usr/include/*/cblas.h >/dev/null 2>&1; }

if have && [ -f /usr/include/lapacke.h ]; then
  echo "install-deps: libopenblas-dev and liblapacke-dev already present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq libopenblas-dev liblapacke-dev >/dev/null
echo "install-deps: installed libopenblas-dev and liblapacke-dev"
