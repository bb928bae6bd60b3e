# Session 43 (H100/H200): the CUDA tests at the current code (they skip in CI; last run on a GPU in
# session 36, before sessions 37-42 changed capture, observe and the report), and issue 15's every-node
# check of the transformers Llama (hidden 1024, 4 layers, seq 512, bf16, CUDA SDPA) against one eager step.
#   PART=tests|interleaved bash bench/gpu/session43.sh
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/ind PYTHONPATH=$PWD/src:$PWD:$PWD/bench
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python -c "import torch, triton, transformers; print(torch.__version__, triton.__version__, transformers.__version__)" >> $R/gpu.txt 2>&1
case ${PART:-tests} in
tests)
  files=$(grep -rl cuda tests --include='test_*.py' | xargs grep -l -E 'skipif|cuda.is_available' | sort)
  timeout ${LIMIT_S:-500} python -m pytest -q -n 12 -p no:cacheprovider -rf -W ignore $files > $R/pytest-cuda.log 2>&1
  grep -E "^FAILED|passed|failed" $R/pytest-cuda.log ;;
interleaved)
  timeout 200 python bench/gpu/every_node_interleaved.py current 2>&1 | grep -v Warn | tail -3 | tee $R/interleaved.txt ;;
esac
