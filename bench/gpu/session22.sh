set -x
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=$PWD/.inductor-cache
pip install -q -e . --no-deps >/dev/null 2>&1
mkdir -p $OUT/r
timeout 300 python -m pytest -q -p no:cacheprovider tests/analyze/test_deferred.py tests/analyze/test_screen.py tests/analyze/test_output_judge.py tests/observed -k "cuda or graphed or deferred or codegen_dropped" 2>&1 | tail -8 | tee $OUT/r/pytest-cuda-session22.log
timeout 200 python bench/gpu/session22_overflow_reads.py 2>&1 | grep -v Warning | tail -20 | tee $OUT/r/overflow-reads-cuda.log
