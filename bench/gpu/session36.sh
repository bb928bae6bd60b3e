# Session 36 (H100/H200): issue 15's every-node check of the transformers Llama (hidden 1024, 4 layers,
# seq 512, bf16, CUDA SDPA) before (_gpu_base: a worktree of the session's starting commit, 10edb2b) and
# after the session's changes (fewer kernels per node: `same`'s scale and the policies' difference read
# from figures already gathered, a leaner finite range; the host decisions from rows without an
# accumulator), each tree's warm every-node check and one eager step in one process, and the kernels of
# one replay; the CUDA tests of the deferred, screen and output-judge suites.
#   PART=tests|profile|interleaved|check bash bench/gpu/session36.sh
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/ind
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/gpu.txt 2>&1
case ${PART:-profile} in
tests)
  PYTHONPATH=$PWD/src:$PWD:$PWD/bench timeout 400 python -m pytest -q -p no:cacheprovider -p no:logging \
    tests/analyze/test_deferred.py tests/analyze/test_screen.py tests/analyze/test_output_judge.py \
    tests/execute/test_captured_once.py 2>&1 | tail -8 | tee $R/pytest-cuda.log ;;
profile)
  for tree in _gpu_base .; do
    name=$([ "$tree" = . ] && echo after || echo before)
    (cd $tree && PYTHONPATH=$PWD/src:$PWD:$PWD/bench timeout 250 python bench/gpu/profile_every_node.py --kernels) \
      > $R/every-node-kernels-$name.txt 2>&1
    echo "$name exit $?" >> $R/every-node-kernels-$name.txt
    head -2 $R/every-node-kernels-$name.txt; grep "kernels" $R/every-node-kernels-$name.txt | head -1
  done ;;
check)
  export PYTHONPATH=$PWD/src:$PWD:$PWD/bench
  OUT=$R LIMIT_S=${LIMIT_S:-280} bash bench/gpu/check_llama_h200.sh ${ITEMS:-check-every-node check-screen}
  tail -n 12 $R/check-cuda-llama-*.log ;;
esac
# PART=interleaved: the base tree's and this tree's warm every-node check against one eager step, each
# in its own process (bench/gpu/every_node_interleaved.py, copied into the base tree)
if [ "${PART:-}" = interleaved ]; then
  (cd _gpu_base && PYTHONPATH=$PWD/src:$PWD:$PWD/bench timeout 150 python bench/gpu/every_node_interleaved.py before \
    2>&1 | grep -v Warn | tail -2) | tee $R/interleaved.txt
  PYTHONPATH=$PWD/src:$PWD:$PWD/bench timeout 150 python bench/gpu/every_node_interleaved.py after 2>&1 \
    | grep -v Warn | tail -2 | tee -a $R/interleaved.txt
fi
