#!/usr/bin/env bash
# Issue 15's H200 measurement: bench/check.py on the transformers Llama (hidden 1024, 4 layers, seq 512,
# bf16, SDPA), one item per invocation so that one slow item cannot take the others with it.
# Usage (device machine): OUT=<dir> bash bench/gpu/check_llama_h200.sh [ITEM ...] ; per-item limit LIMIT_S.
set -u
export PYTHONPATH=$PWD/src:$PWD PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/ind}
items=${*:-check-screen-lowered check-every-node check-screen}
for item in $items; do
  timeout "${LIMIT_S:-170}" python bench/check.py --model llama --device cuda --sizes 1024:512:1:4 \
    --items "$item" --repeat 3 --out "$OUT/check-cuda-llama-$item.json" > "$OUT/check-cuda-llama-$item.log" 2>&1
  echo "$item: exit $?" | tee -a "$OUT/check-cuda-llama-exits.txt"
done
