# Session 28 (H200): Triton's reduction kernels (prologue and epilogue reads) under the inductor-gpu plan.
#   bash bench/gpu/session28.sh   (results under $OUT/r)
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=/tmp/ind PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/gpu.txt 2>&1
timeout 60 python -m pytest -q -p no:cacheprovider tests/plan/test_plan_triton_kernels.py 2>&1 | tail -15 | tee $R/pytest-triton-kernels.log
timeout 120 python bench/gpu/session28_probe.py 2>&1 | grep -v Warning | tee $R/probe-cuda.log
timeout 90 python bench/reduction_loop_reads.py --device cuda --out $R/reduction-loop-reads-cuda 2>&1 | grep -v Warning | tail -2
timeout 60 python bench/gpu/session25_rules.py 2>&1 | grep -v Warning | tee $R/rules-cuda.log
