# Session 25 (H200): session 24's rules on Triton (unrolled reductions, load-count realization, joint
# observe), the reduction-read rule on CUDA (session 23's script, never run), observe on the Llama
# (joint and partitioned) and the bit-level fidelity bench. Run from the repository root:
#   bash bench/gpu/session25.sh   (results in $OUT/session25.tar.gz)
set -x
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=/tmp/ind PYTHONUNBUFFERED=1
pip install -q -e . --no-deps >/dev/null 2>&1
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python -c "import torch, triton, transformers; print(torch.__version__, triton.__version__, transformers.__version__)" >> $R/gpu.txt 2>&1
git rev-parse HEAD >> $R/gpu.txt 2>/dev/null
timeout 120 python bench/gpu/session25_rules.py 2>&1 | grep -v Warning | tee $R/rules-cuda.log
timeout 120 python bench/reduction_loop_reads.py --device cuda --out $R/reduction-loop-reads-cuda 2>&1 | grep -v Warning | tail -30
timeout 170 python bench/observe.py --device cuda --repeats 2 --out $R/observe-cuda-session25 2>&1 | grep -v Warning | tail -5
timeout 120 python bench/observe.py --device cuda --repeats 2 --partitioned --out $R/observe-cuda-partitioned-session25 2>&1 | grep -v Warning | tail -5
(cd $OUT && tar czf session25.tar.gz r)
