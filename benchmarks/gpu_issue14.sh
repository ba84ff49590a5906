#!/usr/bin/env bash
# Issue 14's accelerator figures in one run (about 8 minutes on one H100): ResNet-50 v1
# through Module.fit against the Flax reference at bf16 batch 256 and fp32 batch 128 (img/s,
# first-step compile time, peak memory), the same bf16 run with the channel-last pass off, and
# the 784-512-512-10 MLP (batch 128) fit / fit(steps_per_dispatch=16) against the jitted
# JAX+optax loop. Every line is also written to $OUT/gpu_issue14.log when OUT is set.
#
# The Flax reference is the project's shared bench script resnet50_flax.py; the device
# machine sees only this repository, so copy it in first (an ignored folder, carried):
#   mkdir -p .gpu_ref && cp <shared>/bench/resnet50_flax.py .gpu_ref/
#   echo /.gpu_ref/ >> .git/info/exclude
# then run `bash benchmarks/gpu_issue14.sh` there with carry [".gpu_ref"].
set -u
cd "$(dirname "$0")/.."
REF=${FLAX_REF:-.gpu_ref/resnet50_flax.py}
LOG=${OUT:-/tmp}/gpu_issue14.log
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
step() { # step SECONDS COMMAND...: run one measurement, bounded, logged
    local limit=$1
    shift
    echo "== $*" | tee -a "$LOG"
    timeout "$limit" "$@" 2>&1 | grep -v -E '^\s*$|^WARNING' | tee -a "$LOG"
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$LOG"
python3 -c 'import jax, optax; print("jax", jax.__version__, "optax", optax.__version__)' |
    tee -a "$LOG"
step 170 python3 benchmarks/resnet50.py --batch 256 --dtype bfloat16 --flax-ref "$REF"
step 170 python3 benchmarks/resnet50.py --batch 128 --dtype float32 --flax-ref "$REF"
step 90 python3 benchmarks/mlp_dispatch.py --sizes 784,512,10 --batch 128 --n 65536 \
    --epochs 3 --rounds 2
MXMOD_CONV_LAYOUT=NCHW step 80 python3 benchmarks/resnet50.py --batch 256 --dtype bfloat16
