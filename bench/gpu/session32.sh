# Session 32 (H100/H200): issue 15's H200 figures at the current code (bench/gpu/check_llama_h200.sh: the screen,
# the screen on the lowered graph and every node of the transformers Llama, hidden 1024, 4 layers, seq 512),
# the CUDA tests of the output judge and the observer first.
#   bash bench/gpu/session32.sh
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=/tmp/ind PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/gpu.txt 2>&1
timeout 120 python -m pytest -q -p no:cacheprovider -p no:logging tests/analyze/test_output_judge.py tests/analyze/test_deferred.py 2>&1 | tail -4 | tee $R/pytest-judge.log
OUT=$R LIMIT_S=140 bash bench/gpu/check_llama_h200.sh check-screen check-every-node check-screen-lowered
tail -n 3 $R/check-cuda-llama-*.log
