#!/bin/bash
# What a GPU node needs for benchmarks/device/perf.sh, made here (the node has no network): wheels of the
# core dependencies for its Python, this checkout's C scanner built for it, and a baseline checkout with its
# own scanner. `bash benchmarks/device/prepare.sh [BASE_COMMIT] [PYVER]` writes .device/ (git-ignored), then
# on the device: `run` with carry [".device"] and
#   cp .device/_scan.*.so diagnostics/ && OUT=$OUT BASE=.device/base bash benchmarks/device/perf.sh .device/perf vs_grep
# Rebuild after any change to a1x_diagnostics/_scan.c (the .so is of the C source at the time of this script).
set -eu
cd "$(dirname "$0")/../.."
BASE_COMMIT=${1:-}; PYVER=${2:-3.12}
PY=""
for candidate in "$HOME"/.pyenv/versions/"$PYVER".*/bin/python3 "$(command -v "python$PYVER" || true)"; do
  if [ -x "$candidate" ] && "$candidate" -c pass 2>/dev/null; then PY=$candidate; break; fi
done
[ -n "$PY" ] || { echo "no Python $PYVER here to build the scanner with" >&2; exit 1; }
INC=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
SUFFIX=$("$PY" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
rm -rf .device && mkdir -p .device/perf
python3 -m pip download -q --only-binary=:all: --python-version "$PYVER" --dest .device/perf \
  pydantic tomlkit watchdog psutil rich
gcc -shared -fPIC -O2 -I"$INC" a1x_diagnostics/_scan.c -o ".device/_scan$SUFFIX"
if [ -n "$BASE_COMMIT" ]; then
  mkdir -p .device/base
  git archive "$BASE_COMMIT" | tar -x -C .device/base
  gcc -shared -fPIC -O2 -I"$INC" .device/base/diagnostics/_scan.c -o ".device/base/diagnostics/_scan$SUFFIX"
fi
du -sh .device
