#!/bin/bash
# Device run for issue 6 (one call). Writes at most 7 files to $OUT.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
L=$OUT/log.txt
{
  date -u; uname -r; nvidia-smi; nvidia-smi -q -d MEMORY | head -30
  python3 -c "import sys, pynvml, psutil, pydantic, torch; print(sys.version); print('nvidia-ml-py', getattr(pynvml, '__version__', '?'), 'psutil', psutil.__version__, 'pydantic', pydantic.__version__, 'torch', torch.__version__)"
  echo "pid ns: $(readlink /proc/self/ns/pid) ; pid1: $(cat /proc/1/cmdline | tr '\0' ' ')"
} > $L 2>&1
python3 benchmarks/gpu_sampler.py --seconds 60 --out $OUT > /tmp/bench.log 2>&1 &
B=$!
timeout 300 python3 benchmarks/gpu_proof/proof.py --out $OUT > /tmp/proof.log 2>&1; echo "proof rc=$?" >> $L
wait $B; echo "bench rc=$?" >> $L
timeout 180 python3 -m pytest tests/gpu -m gpu -q -p no:cacheprovider --noconftest -rs > /tmp/pytest_gpu.log 2>&1; echo "gpu pytest rc=$?" >> $L
timeout 60 python3 -m pytest tests/gpu -q -p no:cacheprovider --noconftest -m "not gpu" > /tmp/pytest_cpu.log 2>&1; echo "cpu pytest rc=$?" >> $L
mkdir -p /tmp/agentrun
{
  echo "=== gpu-agent --once"; python3 -m a1x_tui.cli gpu-agent /tmp/agentrun --once --host agent; echo "rc=$?"
  echo "=== gpu-agent loop, SIGTERM after 4 s"; timeout --preserve-status -s TERM 4 python3 -m a1x_tui.cli gpu-agent /tmp/agentrun --host agent; echo "rc=$?"
  wc -l /tmp/agentrun/gpu/agent.jsonl; tail -n 2 /tmp/agentrun/gpu/agent.jsonl | cut -c1-400
} > /tmp/agent.log 2>&1
for f in /tmp/proof.log /tmp/bench.log /tmp/pytest_gpu.log /tmp/pytest_cpu.log /tmp/agent.log; do echo "=== $f" >> $L; cat $f >> $L; done
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> $L 2>&1
ls -la $OUT
tail -c 6000 $L
