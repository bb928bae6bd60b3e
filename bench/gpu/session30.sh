# Session 30 (H100/H200): Inductor's op-count realization rule on Triton (plan/realize.py REALIZE_OPS, measured
# on CPU only in session 29) and the transformers Llama per-kernel tables after it (issue 16).
#   bash bench/gpu/session30.sh small    # the Triton tests, observe joint and partitioned at hidden 128
#   bash bench/gpu/session30.sh large    # observe partitioned at hidden 1024, 4 layers, seq 512
#   bash bench/gpu/session30.sh chain    # the op-count chain's code on Triton, node n511 of the joint graph, then large
#   bash bench/gpu/session30.sh verify   # after the fixes: the Triton tests and the three tables again
#   bash bench/gpu/session30.sh realize  # which Inductor rule stores n464 (bench/gpu/session30_realize.py); tests/observed
#   bash bench/gpu/session30.sh views    # after the view rule (plan/realize._viewed): the three tables, the Triton tests
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=/tmp/ind PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/gpu.txt 2>&1
if [ "$1" = small ]; then
  timeout 150 python -m pytest -q -p no:cacheprovider tests/plan/test_plan_triton_kernels.py 2>&1 | tail -25 | tee $R/pytest-triton-kernels.log
  timeout 180 python bench/observe.py --device cuda --repeats 1 --transcendentals inductor --out $R/observe-cuda-joint 2>&1 | grep -v Warning | tail -5
  timeout 180 python bench/observe.py --device cuda --repeats 1 --transcendentals inductor --partitioned --out $R/observe-cuda-partitioned 2>&1 | grep -v Warning | tail -5
elif [ "$1" = large ]; then
  timeout 560 python bench/observe.py --device cuda --repeats 1 --transcendentals inductor --partitioned --hidden 1024 --layers 4 --seq 512 --out $R/observe-cuda-partitioned-1024 2>&1 | grep -v Warning | tail -8
fi
if [ "$1" = chain ]; then
  timeout 120 python bench/gpu/session30_chain.py cuda 13 14 > $R/chain-cuda.log 2>&1
  timeout 150 python bench/gpu/session29_node.py n511 > $R/node-n511.log 2>&1
  timeout 400 python bench/observe.py --device cuda --repeats 1 --transcendentals inductor --partitioned --hidden 1024 --layers 4 --seq 512 --out $R/observe-cuda-partitioned-1024 2>&1 | grep -v Warning | tail -8
fi
if [ "$1" = verify ]; then  # after the in-order prologue rule (plan/triton_kernels._in_order) and observe's copy rule
  timeout 150 python -m pytest -q -p no:cacheprovider -p no:logging tests/plan/test_plan_triton_kernels.py 2>&1 | tail -6 | tee $R/pytest-triton-kernels.log
  timeout 120 python bench/observe.py --device cuda --repeats 1 --transcendentals inductor --out $R/observe-cuda-joint 2>&1 | grep -v Warning | tail -2
  timeout 120 python bench/observe.py --device cuda --repeats 1 --transcendentals inductor --partitioned --out $R/observe-cuda-partitioned 2>&1 | grep -v Warning | tail -2
  timeout 200 python bench/observe.py --device cuda --repeats 1 --transcendentals inductor --partitioned --hidden 1024 --layers 4 --seq 512 --out $R/observe-cuda-partitioned-1024 2>&1 | grep -v Warning | tail -2
fi
if [ "$1" = realize ]; then  # why Inductor stores the joint graph's n464 (loaded by n511's kernel); observe's CUDA tests
  timeout 200 python bench/gpu/session30_realize.py n464 n511 2>&1 | grep -v Warn | grep "^graph\|^plan\|^inductor\|while" > $R/realize-n464.log
  timeout 200 python -m pytest -q -p no:cacheprovider -p no:logging tests/observed 2>&1 | tail -4 | tee $R/pytest-observed.log
fi
if [ "$1" = views ]; then  # after plan/realize._viewed (a view read by mm stores what it views): the three tables again
  timeout 120 python bench/observe.py --device cuda --repeats 1 --transcendentals inductor --out $R/observe-cuda-joint 2>&1 | grep -v Warning | tail -1
  timeout 120 python bench/observe.py --device cuda --repeats 1 --transcendentals inductor --partitioned --out $R/observe-cuda-partitioned 2>&1 | grep -v Warning | tail -1
  timeout 200 python bench/observe.py --device cuda --repeats 1 --transcendentals inductor --partitioned --hidden 1024 --layers 4 --seq 512 --out $R/observe-cuda-partitioned-1024 2>&1 | grep -v Warning | tail -1
  timeout 100 python -m pytest -q -p no:cacheprovider -p no:logging tests/plan/test_plan_triton_kernels.py 2>&1 | tail -2 | tee $R/pytest-triton-kernels.log
fi
