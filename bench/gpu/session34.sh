# Session 34 (H100/H200): after the extern-kernel change (91bf2cc: an extern matmul/convolution every reader
# reads from memory is rounded where it is made and runs as torch's own 16-bit kernel), the CUDA tests of
# the fidelity, triton-kernel, screen, deferred and observe suites; observe's per-kernel agreement on the
# transformers Llama (hidden 128, CUDA); and issue 15's every-node check of the H200 Llama.
#   bash bench/gpu/session34.sh
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=/tmp/ind PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/gpu.txt 2>&1
timeout 240 python -m pytest -q -p no:cacheprovider -p no:logging tests/execute/test_inductor_fidelity.py \
  tests/plan/test_plan_triton_kernels.py tests/analyze/test_output_judge.py tests/analyze/test_deferred.py \
  tests/lower/test_compiled_cuda.py tests/observed/test_replay.py 2>&1 | tail -6 | tee $R/pytest-cuda.log
timeout 150 python bench/observe.py --device cuda --repeats 3 --out $R/observe-cuda-session34 > $R/observe-cuda.log 2>&1
echo "observe exit $?" >> $R/observe-cuda.log
OUT=$R LIMIT_S=150 bash bench/gpu/check_llama_h200.sh check-every-node
tail -n 3 $R/check-cuda-llama-*.log
