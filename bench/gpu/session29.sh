# Session 29 (H100/H200): split reductions under the inductor-gpu plan (plan/triton_kernels.split) and the
# transformers Llama per-kernel agreement table under Triton's reduction-kernel model (issue 16).
#   bash bench/gpu/session29.sh   (results under $OUT/r)
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=/tmp/ind PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/gpu.txt 2>&1
git rev-parse HEAD >> $R/gpu.txt 2>/dev/null
timeout 90 python -m pytest -q -p no:cacheprovider tests/plan/test_plan_triton_kernels.py 2>&1 | tail -25 | tee $R/pytest-triton-kernels.log
timeout 150 python bench/gpu/session28_probe.py 2>&1 | grep -v Warning | tee $R/probe-cuda.log
timeout 240 python bench/observe.py --device cuda --repeats 3 --out $R/observe-cuda 2>&1 | grep -v Warning | tail -5
timeout 120 python bench/gpu/session29_addmm.py 2>&1 | grep -v Warning | tee $R/addmm-cuda.log
