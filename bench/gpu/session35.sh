# Session 35 (H200): issue 15's check of the transformers Llama (hidden 1024, 4 layers, seq 512, bf16, CUDA
# SDPA) against one eager step, every node and the screen, each item in its own process with a limit long
# enough for its first (compiling) call (150 s was not, session 34).
#   bash bench/gpu/session35.sh
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=/tmp/ind PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/gpu.txt 2>&1
OUT=$R LIMIT_S=${LIMIT_S:-280} bash bench/gpu/check_llama_h200.sh ${ITEMS:-check-every-node check-screen}
tail -n 12 $R/check-cuda-llama-*.log
