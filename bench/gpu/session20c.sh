export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=$PWD/.inductor-cache
mkdir -p $OUT/r
timeout 250 python -m pytest -q -p no:cacheprovider tests/analyze/test_output_judge.py tests/analyze/test_screen.py tests/analyze/test_deferred.py tests/execute/test_captured_once.py -k "cuda or graphed or captured" 2>&1 | tail -3 | tee $OUT/r/pytest-captured-judge-cuda-final.log
timeout 330 python bench/every_node_graphed.py --device cuda --size 1024:512:1:4 --repeat 3 --out $OUT/r/every-node-graphed-cuda.json 2>&1 | grep -v Warn | tail -12 | tee $OUT/r/every-node-graphed-cuda.log
