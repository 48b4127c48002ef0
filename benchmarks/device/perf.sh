#!/bin/bash
# The CPU benchmarks of docs/parsing.md and docs/live.md on a GPU node, in one call of the device
# machine (no network there): `bash benchmarks/device/perf.sh WHEELS check|live|both|vs_grep`.
# vs_grep: issue 14's table (docs/parsing.md, "Any mix of lines"): the three 1 GiB workloads generated,
# then `--check` against `grep -c`, and against the checkout in $BASE if set (ROUNDS, default 5).
# WHEELS: a folder of wheels for the node's Python (pydantic, tomlkit, watchdog, psutil, rich, hyperscan),
# made here with `pip download --only-binary=:all: --python-version 3.12 ...`. Results go to $OUT.
set -u
WHEELS=${1:?wheel folder}; WHAT=${2:-both}; OUT=${OUT:-/tmp/perf_out}
mkdir -p "$OUT"
# With their bytecode, as an install has it: the node sets PYTHONDONTWRITEBYTECODE=1, so wheels installed
# with --no-compile (as before 2026-12-02) compiled pydantic from source in every timed run.
python3 -m pip install -q --no-index --no-deps --target /tmp/site "$WHEELS"/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m compileall -q a1x_tui a1x_diagnostics a1x_supervisor a1x_configs > /dev/null  # this checkout's too
{
  date -u; uname -r; python3 -V; nproc; grep -m1 "model name" /proc/cpuinfo; uptime
  python3 -c "from a1x_diagnostics.parsing._scan import ENGINE; print('line search:', ENGINE)"
  grep --version | head -1; command -v /usr/bin/time || echo "no GNU time: RSS not measured by check_scale"
} > "$OUT/machine.txt" 2>&1
if [ "$WHAT" = check ] || [ "$WHAT" = both ]; then
  timeout 400 python3 benchmarks/check_scale.py /tmp/a1x_bench --repeat "${CHECK_REPEAT:-3}" > "$OUT/check_scale.md" 2> "$OUT/check_scale.err"
  echo "check_scale rc=$?" >> "$OUT/machine.txt"
fi
if [ "$WHAT" = live ] || [ "$WHAT" = both ]; then
  timeout 560 python3 benchmarks/live_follow.py --modes "${MODES:-inotify,polling,tail-only}" --repeat "${REPEAT:-1}" --out "$OUT" > "$OUT/live_follow.log" 2>&1
  echo "live_follow rc=$?" >> "$OUT/machine.txt"
fi
if [ "$WHAT" = vs_grep ]; then
  for mix in sparse dense noisy; do
    python3 benchmarks/check_scale.py "/tmp/w_$mix" --mix "$mix" --generate-only >> "$OUT/vs_grep.err" 2>&1
  done
  base=(); [ -n "${BASE:-}" ] && base=(--base "$BASE")
  timeout 540 python3 benchmarks/vs_grep.py --rounds "${ROUNDS:-5}" ${base[@]+"${base[@]}"} /tmp/w_sparse /tmp/w_dense /tmp/w_noisy \
    > "$OUT/vs_grep.md" 2>> "$OUT/vs_grep.err"
  echo "vs_grep rc=$?" >> "$OUT/machine.txt"
fi
uptime >> "$OUT/machine.txt"
cat "$OUT/machine.txt"; cat "$OUT"/*.md 2>/dev/null | tail -60
