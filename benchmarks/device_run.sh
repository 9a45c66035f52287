#!/usr/bin/env bash
# The GPU machine's record in one call (DEVELOPERS.md): the bundled corpus on every
# device and the project's tests under -n 14, the lowering targets on the GPU, then
# the scaling curve of the corpus on CPU (-n 14 with and without the GPU visible,
# serial, 8, 4, 2). Everything lands in
# OUTDIR/device.tgz plus OUTDIR/walls.txt (the device tool returns at most 8 files), and
# the corpus's JSON report on every device, OUTDIR/corpus-report.json, to commit beside
# the record's Markdown (DEVELOPERS.md).
#
#   bash benchmarks/device_run.sh "$OUT" 540
#
# Steps run in the order they are owed; each only while the budget leaves room for it.
# CORPUS_PATHS narrows the corpus (a smoke run of this script: cases/basics.yaml).
set -u
out=${1:?usage: device_run.sh OUTDIR [BUDGET_SECONDS]}
budget=${2:-540}
t0=$(date +%s)
work=$(mktemp -d)
left() { echo $((budget - ($(date +%s) - t0))); }

python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null || exit
rm -rf .pytest_cache
{
    echo "date $(date -u +%FT%TZ)"
    echo "cores $(nproc)"
    python3 - <<'EOF'
import importlib.metadata as md, platform, torch
print("python", platform.python_version())
print("torch", torch.__version__, "cuda", torch.version.cuda)
print("gpus", [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])
for name in ("transformers", "pytest", "pytest-xdist"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "absent")
EOF
} >"$out/walls.txt" 2>&1

# step NAME SECONDS_NEEDED COMMAND...: run it if the budget leaves SECONDS_NEEDED.
step() {
    local name=$1 need=$2
    shift 2
    if [ "$(left)" -lt "$need" ]; then
        echo "$name: skipped, $(left) s left" >>"$out/walls.txt"
        return
    fi
    local start end rc
    start=$(date +%s.%N)
    timeout "$(($(left) - 10))" "$@" >"$work/$name.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    printf '%s: rc %s, wall %.1f s, %s\n' "$name" "$rc" "$(awk "BEGIN {print $end - $start}")" \
        "$(tail -1 "$work/$name.log")" >>"$out/walls.txt"
}

corpus() {  # corpus NAME WORKERS [more pytest args]
    local name=$1 n=$2
    shift 2
    mkdir -p "$work/timeline-$name"
    EXPORTCHECK_TIMELINE="$work/timeline-$name" PYTHONPATH="/tmp/site:benchmarks" \
        python3 -m pytest -q -p no:hypothesispytest -p timeline --exportcheck -n "$n" \
        --exportcheck-report="$work/$name.json" "$@" ${CORPUS_PATHS:-}
}

export -f corpus
export work
# The owed record first (DEVELOPERS.md): the corpus on every device and the project's
# tests, both under -n 14; the first run also fills pytest's cache with item durations,
# so the later corpus runs schedule longest first as a CI job with a restored cache would.
step gpu 90 bash -c 'corpus "$@"' corpus gpu 14 --exportcheck-devices all
# Its report on its own, at once (a later step cut off by the call's limit must not take
# it along): every item's outcome, stage and message, so the next GPU run is compared item
# by item (--exportcheck-compare). Gzipped only past the 16 MiB a returned file may have.
if [ -f "$work/gpu.json" ]; then
    if [ "$(stat -c %s "$work/gpu.json")" -lt $((15 << 20)) ]; then
        cp "$work/gpu.json" "$out/corpus-report.json"
    else
        gzip -c "$work/gpu.json" >"$out/corpus-report.json.gz"
    fi
fi
# worksteal: the suite's slowest tests (pytester subprocesses) otherwise queue behind one
# worker at the end. A test past 150 s is stopped with its stack (pytest-timeout, in the
# machine's image) rather than silently eating the budget, as on 2026-11-27.
timeout_flag=$(python3 -c 'import pytest_timeout' 2>/dev/null && echo --timeout=150)
step tests 60 python3 -m pytest tests -n 14 --dist worksteal -v -p no:cacheprovider \
    --durations=25 $timeout_flag
# AOTInductor on cuda:0 in plain torch (benchmarks/aoti_plain.py): the 2026-11-27 record
# saw workers die in aoti_load_package; does torch alone?
step aoti-plain 70 python3 benchmarks/aoti_plain.py cuda
# Lowering targets on the GPU (docs/lowering.md): AOTInductor and Inductor with Triton
# kernels, the export capture of three case files, cuda:0 items only. Each worker's
# Inductor gets 2 compile threads, not 16: 14 workers share the 16 cores.
step lowered-cuda 120 env TORCHINDUCTOR_COMPILE_THREADS=2 bash -c 'corpus "$@"' corpus \
    lowered-cuda 14 --exportcheck-devices all --exportcheck-lower aoti,inductor \
    -k "lowered and export-cuda" cases/basics.yaml cases/state.yaml cases/layers.yaml
step n14 60 bash -c 'corpus "$@"' corpus n14 14 --exportcheck-devices cpu
# The same with the GPU hidden: what 14 CUDA contexts cost a CPU-only run (docs/devices.md,
# "A CPU-only run on a GPU machine": torch's capture starts one per process).
step n14-hidden-gpu 60 env CUDA_VISIBLE_DEVICES= bash -c 'corpus "$@"' corpus n14-hidden-gpu 14 \
    --exportcheck-devices cpu
step serial 200 bash -c 'corpus "$@"' corpus serial 0 --exportcheck-devices cpu
step n8 60 bash -c 'corpus "$@"' corpus n8 8 --exportcheck-devices cpu
step n4 80 bash -c 'corpus "$@"' corpus n4 4 --exportcheck-devices cpu
step n2 110 bash -c 'corpus "$@"' corpus n2 2 --exportcheck-devices cpu

cp .pytest_cache/v/exportcheck/durations "$work/durations.json" 2>/dev/null
tar czf "$out/device.tgz" -C "$work" .
echo "total $(($(date +%s) - t0)) s" >>"$out/walls.txt"
