export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=$PWD/.inductor-cache
mkdir -p $OUT/r
timeout 280 python -m pytest -q -p no:cacheprovider tests/analyze/test_output_judge.py tests/analyze/test_screen.py tests/analyze/test_deferred.py tests/execute/test_captured_once.py -k "cuda or graphed or captured" 2>&1 | tail -3 | tee $OUT/r/pytest-captured-judge-cuda-session-final.log
