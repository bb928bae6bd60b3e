# Session 31 (H100/H200), not run in session 31 (no device lent): observe keeps CUDA buffers on the device up to
# twice the compiled step's peak (observed/replay.Keeping, observed/replay.device_budget) instead of copying every one
# to pinned host memory (issue 16: the observed step at hidden 1024 was 2.42-3.16x the compiled step, its 468 MiB of
# buffers crossing PCIe at ~56 GB/s; target 2x).
#   bash bench/gpu/session31.sh   # the replay/partition/observe CUDA tests, then observe at hidden 128 and 1024
export PYTHONPATH=$PWD/src:$PWD:$PWD/bench TORCHINDUCTOR_CACHE_DIR=/tmp/ind PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/gpu.txt 2>&1
timeout 240 python -m pytest -q -p no:cacheprovider -p no:logging tests/observed 2>&1 | tail -6 | tee $R/pytest-observed.log
timeout 150 python bench/observe.py --device cuda --repeats 10 --transcendentals inductor --partitioned --out $R/observe-cuda-partitioned 2>&1 | grep -v Warning | tail -4
timeout 400 python bench/observe.py --device cuda --repeats 5 --transcendentals inductor --partitioned --hidden 1024 --layers 4 --seq 512 --out $R/observe-cuda-partitioned-1024 2>&1 | grep -v Warning | tail -4
