set -x
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=$PWD/.inductor-cache
pip install -q -e . --no-deps >/dev/null 2>&1
python -c "import transformers" 2>/dev/null || pip install -q 'transformers>=4.55' >/dev/null 2>&1
mkdir -p $OUT/r
timeout 200 python -m pytest -q -p no:cacheprovider tests/analyze/test_output_judge.py tests/analyze/test_screen.py tests/analyze/test_deferred.py tests/execute/test_captured_once.py -k "cuda or graphed or captured" 2>&1 | tail -15 | tee $OUT/r/pytest-captured-judge-cuda.log
timeout 330 python bench/check.py --model llama --device cuda --sizes 1024:512:1:4 --items eager check-screen --repeat 3 --out $OUT/r/check-screen-cuda.json 2>&1 | tail -5 | tee $OUT/r/check-screen-cuda.log
