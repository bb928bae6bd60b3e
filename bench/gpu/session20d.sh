export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=$PWD/.inductor-cache
mkdir -p $OUT/r
timeout 200 python -m pytest -q -p no:cacheprovider tests/analyze/test_output_judge.py tests/analyze/test_screen.py tests/analyze/test_deferred.py tests/execute/test_captured_once.py -k "cuda or graphed or captured" 2>&1 | tail -3 | tee $OUT/r/pytest-captured-judge-cuda-oracle.log
timeout 200 python bench/gpu/screen_equivalence.py --size 1024:512:1:4 2>&1 | grep -v Warn | tail -4 | tee $OUT/r/screen-equivalence-cuda-oracle.log
timeout 190 python bench/check.py --model llama --device cuda --sizes 1024:512:1:4 --items eager check-screen check-screen-oracle --repeat 3 --out $OUT/r/check-screen-cuda-oracle.json 2>&1 | tail -4 | tee $OUT/r/check-screen-cuda-oracle.log
