#!/usr/bin/env bash
# Record tiny offline Cosmos-RL GRPO scenarios on a GPU machine with the genuine launcher (fixture recorder).
# usage: record.sh VERSION WHEEL_DIR OUT_DIR [SCENARIO ...]
#   VERSION: 0.4.4 | 0.4.7 (cosmos-rl from PyPI, transformers 5 of the machine) | 747d1bd (built wheel,
#            transformers 4.57.1)
#   Scenarios run side by side in mode colocated_separated (MODE=... to change); each ends up as OUT_DIR/<name>/.
#   CAP / GATE (seconds) bound the driver; see run_scenarios.py. FIRST_SLOT=K moves this driver's ports (two
#   record.sh side by side on one machine need disjoint slots: K >= the other's first slot + its scenario count).
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; VERSION="$1"; WHEELS="$(cd "$2" && pwd)"; OUT="$3"; shift 3
MODE="${MODE:-colocated_separated}"
case "$VERSION" in 0.4.4|0.4.7|747d1bd) ;; *) echo "record.sh: unknown VERSION '$VERSION' (0.4.4, 0.4.7 or 747d1bd)"; exit 2;; esac
mkdir -p "$OUT"; OUT="$(cd "$OUT" && pwd)"; SCR="$(mktemp -d -t crl_run.XXXX)"
exec > >(tee "$OUT/driver.log") 2>&1
PYBIN="$(python3 -c 'import sys,os;print(os.path.join(sys.prefix,"bin"))')"
export PATH="$SCR/site/bin:$PYBIN:$PATH" PYTHONPATH="$SCR/site${PYTHONPATH:+:$PYTHONPATH}"
# 1) carried wheels -> private target dir (the machine's venv untouched). --no-deps bypasses cosmos-rl 0.4.4's
#    transformers<5 pin; for 747d1bd the wheels shadow transformers 5 / tokenizers / huggingface_hub / datasets /
#    diffusers / torchao with versions that fit transformers 4.57.1.
python -m pip install -q --no-deps --no-index --no-compile --target "$SCR/site" "$WHEELS"/*.whl || exit 10
# 2) preflight
nvidia-smi -L; NGPU=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
python -c 'import torch,transformers,tokenizers,huggingface_hub,socket;print(torch.__version__,torch.version.cuda,torch.cuda.is_available(),torch.cuda.device_count(),"transformers",transformers.__version__,"tokenizers",tokenizers.__version__,"hf_hub",huggingface_hub.__version__,socket.gethostname())' || exit 11
python -c 'import importlib.metadata as m;print("cosmos_rl",m.version("cosmos_rl"))' || exit 11
command -v redis-server redis-cli torchrun cosmos-rl || exit 12
[ -d /opt ] || mkdir -p /opt || exit 13            # cosmos writes 'dir /opt' into the redis config
env | grep -E '^(NCCL|TORCH_SYMM|NVSHMEM|CUDA_VISIBLE)' | sort
# 3) environment
unset PYTORCH_CUDA_ALLOC_CONF                        # CUDA IPC (P2R in colocated_separated) needs non-expandable segments
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=disabled PYTHONUNBUFFERED=1
if [ "$VERSION" != 747d1bd ]; then                   # 0.4.4 and 0.4.7 alike
  export COSMOS_REDIS_NO_TLS=1                       # pip-shipped redis-server has no TLS: drop 'tls-port 0'
  # Controller SIGTERMs itself once no policy replica is left (the *_killed scenarios need it to end); scenarios
  # that must exit cleanly set it to 0 (see shutdown_hang in run_scenarios.py).
  export COSMOS_SHUTDOWN_ON_NO_POLICY_REPLICAS=1
else
  # 747d1bd always writes 'tls-port 0' into its redis config and the pip-shipped redis-server (no TLS) rejects it:
  # a redis-server shim first on PATH drops only that line and execs the real binary (cosmos-rl unchanged).
  REAL_REDIS="$(command -v redis-server)"; mkdir -p "$SCR/shim"
  cat > "$SCR/shim/redis-server" <<SHIM
#!/bin/sh
cfg="\$1"; shift
sed '/^tls-port 0\$/d' "\$cfg" > "\$cfg.notls" && exec "$REAL_REDIS" "\$cfg.notls" "\$@"
SHIM
  chmod +x "$SCR/shim/redis-server"; export PATH="$SCR/shim:$PATH"
  export CRL_TOKENIZER_NO_TTI=1                      # see make_tiny_model.py
fi
# 4) tiny random model + local tokenizer
python "$HERE/make_tiny_model.py" "$SCR/tiny-qwen2" || exit 14
# 5) the scenarios (genuine launcher per scenario; logs under OUT/<name>/logs_<ts>/)
python "$HERE/run_scenarios.py" --version "$VERSION" --out "$OUT" --scratch "$SCR" --model "$SCR/tiny-qwen2" \
    --mode "$MODE" --ngpu "$NGPU" ${CAP:+--cap "$CAP"} ${GATE:+--gate "$GATE"} ${FIRST_SLOT:+--first-slot "$FIRST_SLOT"} "$@"
echo "driver exit code: $?"
du -sh "$OUT"/*/ 2>/dev/null
