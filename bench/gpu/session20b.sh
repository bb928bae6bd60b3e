export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=$PWD/.inductor-cache
mkdir -p $OUT/r
timeout 400 python bench/gpu/screen_equivalence.py --size 1024:512:1:4 2>&1 | grep -v Warn | tail -8 | tee $OUT/r/screen-equivalence-cuda.log
timeout 180 python -m pytest -q -p no:cacheprovider tests/analyze/test_output_judge.py tests/analyze/test_check_and_demo.py -x 2>&1 | tail -3 | tee $OUT/r/pytest-output-judge-cuda.log
