# The C++ reduction-loop rule's counterpart on Triton (inductor-gpu): which stored fp16 values a
# reduction kernel reads unrounded under real torch.compile on CUDA, against the inductor-gpu plan.
# Not yet run (no device in session 23). Run from the repository root:
#   bash bench/gpu/session23.sh   (results under $OUT/r)
set -x
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=$PWD/.inductor-cache
pip install -q -e . --no-deps >/dev/null 2>&1
mkdir -p $OUT/r
timeout 400 python bench/reduction_loop_reads.py --device cuda --out $OUT/r/reduction-loop-reads-cuda 2>&1 | grep -v Warning | tail -30
