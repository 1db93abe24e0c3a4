#!/usr/bin/env bash
# perf/gpu_campaign.sh [OUTDIR]: every GPU check and timing of tritongrad in one command.
#
# On a lent GPU machine (no network) it installs the project without an index, then runs,
# each step under its own timeout and within one overall budget (default 550 s, under the
# device tool's 10 minutes): the selfcheck, `pytest -m gpu`, the rest of the suite on the real
# device (parallel shards), the examples on cuda, emit_nvtx captured by the NVTX recorder of
# tests/nvtx, the benchmarks, compute-sanitizer memcheck over the GPU tests and `ncu --nvtx`
# where those tools work. Each step's log goes to OUTDIR/NN-step.log; OUTDIR/summary.md (the
# table of steps, the environment, the benchmark tables, the failures) is rewritten after
# every step and printed at the end.
#
#   perf/gpu_campaign.sh "$OUT"           # through the device tool: $OUT comes back
#   perf/gpu_campaign.sh                  # writes ./gpu-campaign-<date>-<time>
#   perf/gpu_campaign.sh --fetch-wheels   # on a machine WITH network: local wheels into .whl/
#   perf/gpu_campaign.sh --exec "$OUT" python -m pytest tests/x.py -q   # install, then one command
#
# Without a GPU it says so, runs what still makes sense (the selfcheck), marks the GPU steps
# SKIP and exits 0. With a GPU it exits 1 when any step FAILed or hit its TIMEOUT.
# Knobs (environment): PYTHON, CAMPAIGN_BUDGET (seconds), CAMPAIGN_ONLY / CAMPAIGN_SKIP
# (comma-separated step names), CAMPAIGN_SHARDS, CAMPAIGN_SUITE_PATHS (the suite's test paths),
# CAMPAIGN_NO_INSTALL=1 (never pip install), CAMPAIGN_FORCE_NO_GPU=1, CAMPAIGN_EMULATE=1 (rehearse
# the GPU path on the emulated device, for testing this script), CAMPAIGN_COMMIT, NVTX_WHEEL (a
# wheel file), WHEEL_DIR (a folder of wheels; default .whl/ then wheels/). See docs/gpu.md.

set -uo pipefail

CALLER_PWD=$(pwd)
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO" || exit 2

usage() { sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

# -- the interpreter ----------------------------------------------------------------------------
if [[ -n "${PYTHON:-}" ]]; then
    PY=$PYTHON
elif command -v python >/dev/null 2>&1; then
    PY=python
else
    PY=python3
fi

# -- --fetch-wheels: the one thing that needs the network, done on a developer's machine -------
if [[ "${1:-}" == "--fetch-wheels" ]]; then
    dir=${2:-$REPO/.whl}
    plat=${FETCH_PLATFORM:-x86_64}
    pyver=${FETCH_PYTHON:-3.12}
    abi="cp${pyver/./}"
    mkdir -p "$dir"
    echo "downloading wheels for CPython $pyver on manylinux $plat into $dir"
    # nvtx: a tritongrad dependency the GPU machines lack; scikit-learn (+ its pure-Python
    # dependencies): examples/train_digits.py. numpy/scipy are already on those machines.
    # cupti-python and nccl4py: the CUPTI profiler and the NCCL backend's gpu tests (their CUDA
    # libraries, nvidia-cuda-cupti and nvidia-nccl-cu13, are on those machines). cupti-python stays
    # on 13.0, the machines' CUDA: 13.4 wanted nvidia-cuda-cupti 13.4 (first GPU run, 2026-11-29).
    "$PY" -m pip download --no-deps --only-binary=:all: --python-version "$pyver" \
        --implementation cp --abi "$abi" --platform "manylinux2014_$plat" \
        --platform "manylinux_2_17_$plat" --platform "manylinux_2_27_$plat" \
        --platform "manylinux_2_28_$plat" -d "$dir" \
        "nvtx>=0.2.10" "scikit-learn>=1.3" joblib threadpoolctl "cupti-python~=13.0.0" pyelftools nccl4py \
        || exit 1
    ls -l "$dir"
    echo "carry it to the GPU machine with the device tool's carry: [\".whl\"]"
    exit 0
fi
EXEC_CMD=()
case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    --exec)  # --exec OUTDIR CMD...: the install step, then CMD alone (follow-ups on a lent GPU)
        if (( $# < 3 )); then echo "usage: $0 --exec OUTDIR CMD..." >&2; exit 2; fi
        shift
        EXEC_OUT=$1
        shift
        EXEC_CMD=("$@")
        set -- "$EXEC_OUT" ;;
    -*) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
esac

# -- output folder, scratch, clock --------------------------------------------------------------
OUTDIR=${1:-gpu-campaign-$(date +%Y%m%d-%H%M%S)}
[[ $OUTDIR == /* ]] || OUTDIR=$CALLER_PWD/$OUTDIR   # relative to where the caller stood
mkdir -p "$OUTDIR" || { echo "cannot create $OUTDIR" >&2; exit 2; }
OUTDIR=$(cd "$OUTDIR" && pwd)
SUMMARY=$OUTDIR/summary.md
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-campaign.XXXXXX")
SITE=$WORK/site            # local wheels installed with --target land here
mkdir -p "$SITE" "$WORK/examples"

BUDGET=${CAMPAIGN_BUDGET:-550}
RESERVE=8                  # seconds kept for the summary at the end
MIN_STEP=15                # a step given less than this is skipped ("no time left")
now_ms() { local t; t=$(date +%s%N); echo $((t / 1000000)); }
START_MS=$(now_ms)
elapsed_s() { echo $(( ($(now_ms) - START_MS) / 1000 )); }
remaining_s() { echo $(( BUDGET - $(elapsed_s) - RESERVE )); }
stamp() { date -u +%H:%M:%S; }
say() { echo "[campaign $(stamp) +$(elapsed_s)s] $*"; }

# The suite must run on the real device: the test conftest turns these on only without a GPU.
CALLER_EMULATION=""
for v in TRITON_INTERPRET TRITONGRAD_EMULATE_CUDA; do
    if [[ -n "${!v:-}" ]]; then CALLER_EMULATION+="$v=${!v} "; fi
    unset "$v"
done
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
# Matmul autotuning's results (Note [autotuning], kernels/triton/autotune.py) start empty in
# each campaign, so bench_kernels times the tuning itself, and come back in OUTDIR.
export TRITONGRAD_CACHE_DIR=${TRITONGRAD_CACHE_DIR:-$OUTDIR/autotune}
# The test steps check every cached kernel launch against the kernel Triton's own dispatch
# picks (Note [cached launches], kernels/triton/launcher.py); the benchmarks time them unchecked.
CHECKED=(env TRITONGRAD_CHECK_LAUNCHES=1)

# -- step records and the summary ----------------------------------------------------------------
R_NAME=() R_STATUS=() R_SECS=() R_KEY=() R_LOG=()
NOTES=()                   # lines for the summary's notes
STEP_N=0
CUR_LOG="" CUR_T=0 CUR_T0=0 CUR_IDX=-1
GPU=0 GPU_LINE="" EMULATED=0 TG_OK=0 NVTX_STUB=0 INSTALL_MODE="" SHARD_PIDS=()

cpus() {  # CPUs this process may use. GNU nproc obeys OMP_NUM_THREADS, which this script sets
    # to 1 (the first GPU run, 2026-11-29, got one suite shard on 16 cores that way)
    env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2
}

cell() {  # one table cell: no newlines or pipes, at most 200 characters
    local s=${1//$'\n'/ }
    s=${s//$'\r'/ }
    s=${s//|/\\|}
    [[ ${#s} -gt 200 ]] && s="${s:0:197}..."
    printf '%s' "$s"
}

last_line() {  # the log's last non-empty line (progress bars' \r redraws resolved)
    tr '\r' '\n' < "$1" 2>/dev/null | grep -v '^#campaign#' | grep -v '^[[:space:]]*$' | tail -n 1
}

pytest_line() {  # pytest's closing line ("12 passed, 3 skipped in 4.5s")
    tr '\r' '\n' < "$1" 2>/dev/null \
        | grep -E '[0-9]+ (passed|failed|errors?|skipped|deselected|xfailed|xpassed)|no tests ran' \
        | grep -vE '^(FAILED|ERROR|SKIPPED|XFAIL|XPASS) |^========= ' | tail -n 1 \
        | sed -E 's/^=+ //; s/ =+$//'
}

pt_key() {  # the key line of a pytest step: its closing line, else the log's last line
    local k
    k=$(pytest_line "$1")
    echo "${k:-$(last_line "$1")}"
}

step_index() {
    local i
    for i in "${!R_NAME[@]}"; do [[ "${R_NAME[$i]}" == "$1" ]] && { echo "$i"; return; }; done
    echo -1
}

selected() {  # is step $1 selected by CAMPAIGN_ONLY / CAMPAIGN_SKIP? (install always is)
    [[ $1 == install ]] && return 0
    local only=",${CAMPAIGN_ONLY:-},"
    local skip=",${CAMPAIGN_SKIP:-},"
    if [[ -n "${CAMPAIGN_ONLY:-}" && "$only" != *",$1,"* ]]; then return 1; fi
    [[ "$skip" == *",$1,"* ]] && return 1
    return 0
}

new_record() {  # new_record NAME STATUS KEY -> sets CUR_IDX, CUR_LOG
    STEP_N=$((STEP_N + 1))
    local nn
    nn=$(printf '%02d' "$STEP_N")
    CUR_LOG="$OUTDIR/$nn-$1.log"
    R_NAME+=("$1") R_STATUS+=("$2") R_SECS+=("") R_KEY+=("$3") R_LOG+=("$(basename "$CUR_LOG")")
    CUR_IDX=$(( ${#R_NAME[@]} - 1 ))
}

skip_step() {  # skip_step NAME REASON
    new_record "$1" SKIP "$2"
    R_LOG[CUR_IDX]=""
    say "$(printf '%02d' "$STEP_N") $1: SKIP ($2)"
    write_summary
}

# begin_step NAME MAX_SECONDS [needs: gpu|tg|nvtx ...]: returns 1 (and records a SKIP) when the
# step is not selected, lacks what it needs, or has no time left; else sets CUR_* and CUR_T.
begin_step() {
    local name=$1 max=$2 need
    local cap="CAMPAIGN_T_${name//-/_}"
    max=${!cap:-$max}  # e.g. CAMPAIGN_T_suite=300
    shift 2
    if ! selected "$name"; then skip_step "$name" "not selected (CAMPAIGN_ONLY/CAMPAIGN_SKIP)"; return 1; fi
    for need in "$@"; do
        case $need in
            gpu) if [[ $GPU != 1 ]]; then skip_step "$name" "no GPU"; return 1; fi ;;
            tg) if [[ $TG_OK != 1 ]]; then skip_step "$name" "tritongrad does not import (see install)"; return 1; fi ;;
            nvtx) if [[ $NVTX_STUB == 1 ]]; then skip_step "$name" "the nvtx package is missing (no wheel given): NVTX cannot be captured"; return 1; fi ;;
        esac
    done
    local left
    left=$(remaining_s)
    if (( left < MIN_STEP )); then skip_step "$name" "no time left in the ${BUDGET}s budget"; return 1; fi
    CUR_T=$max
    (( left < CUR_T )) && CUR_T=$left
    new_record "$name" RUNNING ""
    CUR_T0=$(now_ms)
    { echo "#campaign# step $name, timeout ${CUR_T}s, started $(date -u +%FT%TZ)"; } > "$CUR_LOG"
    say "$(printf '%02d' "$STEP_N") $name: running (timeout ${CUR_T}s)"
    write_summary
    return 0
}

end_step() {  # end_step STATUS KEY [INDEX]
    local i=${3:-$CUR_IDX} t0=${4:-$CUR_T0}
    local secs
    secs=$(awk -v a="$t0" -v b="$(now_ms)" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
    R_STATUS[i]=$1 R_KEY[i]=$2 R_SECS[i]=$secs
    say "$(printf '%02d' $((i + 1))) ${R_NAME[$i]}: $1 in ${secs}s  $2"
    write_summary
}

status_of() {  # status_of RC -> PASS / TIMEOUT / FAIL
    case $1 in
        0) echo PASS ;;
        124|137) echo TIMEOUT ;;
        *) echo FAIL ;;
    esac
}

run_logged() {  # run_logged TIMEOUT CMD...: runs CMD under timeout (SIGINT first, so pytest
    local t=$1      # still prints its summary), appending to CUR_LOG; returns its status
    shift
    echo "#campaign# \$ $*" >> "$CUR_LOG"
    timeout -s INT -k 20 "$t" "$@" >> "$CUR_LOG" 2>&1 < /dev/null
}

excerpt() {  # excerpt LOG N: the log's last N lines, campaign headers and \r redraws dropped
    tr '\r' '\n' < "$1" 2>/dev/null | grep -v '^#campaign#' | grep -v '^[[:space:]]*$' \
        | tail -n "$2" | cut -c1-160
}

before_traceback() {  # before_traceback LOG N: the N lines printed before the last traceback
    tr '\r' '\n' < "$1" 2>/dev/null | grep -v '^#campaign#' | grep -v '^[[:space:]]*$' \
        | awk -v n="$2" '{ a[NR] = $0 } /^Traceback \(most recent call last\)/ { t = NR }
                         END { e = t ? t - 1 : NR; for (i = (e - n + 1 > 1 ? e - n + 1 : 1); i <= e; i++) print a[i] }' \
        | cut -c1-160
}

key_of() {  # key_of STATUS LOG KEY: the key line, or for a TIMEOUT the last output before it
    if [[ $1 == TIMEOUT && ( -z $3 || $3 == KeyboardInterrupt ) ]]; then
        echo "timed out; last output: $(before_traceback "$2" 1)"
    else
        echo "$3"
    fi
}

write_summary() {
    local tmp=$SUMMARY.tmp i n_pass=0 n_fail=0 n_skip=0 n_to=0 verdict
    for i in "${!R_STATUS[@]}"; do
        case ${R_STATUS[$i]} in
            PASS) n_pass=$((n_pass + 1)) ;; FAIL) n_fail=$((n_fail + 1)) ;;
            SKIP) n_skip=$((n_skip + 1)) ;; TIMEOUT) n_to=$((n_to + 1)) ;;
        esac
    done
    if [[ $EMULATED == 1 ]]; then
        verdict="EMULATED, NOT A GPU: $GPU_LINE"
    elif [[ $GPU == 1 ]]; then
        verdict="GPU: $GPU_LINE"
    else
        verdict="NO GPU on this machine ($GPU_LINE): GPU steps skipped, a dry run only"
    fi
    {
        echo "# tritongrad GPU campaign, $(date -u +%F) ($(elapsed_s) s of a ${BUDGET} s budget)"
        echo
        echo "**$verdict**"
        echo
        echo "Steps: $n_pass PASS, $n_fail FAIL, $n_to TIMEOUT, $n_skip SKIP."
        echo
        echo "| # | step | status | seconds | key line | log |"
        echo "|---|---|---|---|---|---|"
        for i in "${!R_NAME[@]}"; do
            printf '| %02d | %s | %s | %s | %s | %s |\n' $((i + 1)) "${R_NAME[$i]}" \
                "${R_STATUS[$i]}" "${R_SECS[$i]:--}" "$(cell "${R_KEY[$i]}")" "${R_LOG[$i]:--}"
        done
        if ((${#NOTES[@]})); then
            echo
            echo "## Notes"
            echo
            printf -- '- %s\n' "${NOTES[@]}"
        fi
        if [[ -s $OUTDIR/01-env.log ]]; then
            echo
            echo "## Environment"
            echo
            echo '```text'
            grep -v '^#campaign#' "$OUTDIR/01-env.log" | cut -c1-200 | head -n 40
            echo '```'
        fi
        local name lines idx log
        local shown=0
        for name in bench-kernels bench-mlp bench-chain; do
            idx=$(step_index "$name")
            (( idx < 0 )) && continue
            log=${R_LOG[$idx]}
            [[ -z $log || ! -s $OUTDIR/$log ]] && continue
            if (( shown == 0 )); then echo; echo "## Benchmarks"; shown=1; fi
            lines=14
            [[ $name == bench-kernels || $name == bench-mlp ]] && lines=80  # (tables, profiles)
            echo
            echo "### $name (${R_STATUS[$idx]})"
            echo
            echo '```text'
            excerpt "$OUTDIR/$log" "$lines"
            echo '```'
        done
        shown=0
        for i in "${!R_NAME[@]}"; do
            [[ ${R_STATUS[$i]} == FAIL || ${R_STATUS[$i]} == TIMEOUT ]] || continue
            if (( shown >= 6 )); then echo; echo "(more failed steps: see their logs)"; break; fi
            log=${R_LOG[$i]}
            [[ -z $log ]] && continue
            if (( shown == 0 )); then echo; echo "## Failures (first lines; the logs have the rest)"; fi
            shown=$((shown + 1))
            echo
            echo "### ${R_NAME[$i]} (${R_STATUS[$i]}, $log)"
            echo
            echo '```text'
            local f
            f=$(cat "$OUTDIR/${log%.log}"*.log 2>/dev/null | tr '\r' '\n' \
                | grep -E '^(FAILED|ERROR) |^========= |^problem: ' \
                | grep -vE 'COMPUTE-SANITIZER|ERROR SUMMARY: 0 errors' | cut -c1-160 | head -n 12)
            if [[ -n $f ]]; then
                echo "$f"
            elif [[ ${R_STATUS[$i]} == TIMEOUT ]]; then
                before_traceback "$OUTDIR/$log" 6
            else
                excerpt "$OUTDIR/$log" 8
            fi
            echo '```'
        done
    } > "$tmp"
    mv -f "$tmp" "$SUMMARY"
}

# shellcheck disable=SC2329  # run by the EXIT trap
cleanup() {
    local p
    for p in "${SHARD_PIDS[@]+"${SHARD_PIDS[@]}"}"; do
        kill -INT "$p" 2>/dev/null
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'say "interrupted"; for i in "${!R_STATUS[@]}"; do [[ ${R_STATUS[$i]} == RUNNING ]] && R_STATUS[i]=TIMEOUT; done; write_summary; exit 130' INT TERM

# =================================================================================================
say "tritongrad GPU campaign: logs and summary.md in $OUTDIR (budget ${BUDGET}s)"

# -- 1. environment and GPU probe ----------------------------------------------------------------
GPU_PROBE='
import sys
try:
    from cuda.bindings import driver as d
except Exception as e:
    print(f"cuda.bindings does not import ({type(e).__name__}: {e})"); sys.exit(1)
try:
    (err,) = d.cuInit(0)
    if int(err) != 0:
        print(f"cuInit failed: {err}"); sys.exit(1)
    err, n = d.cuDeviceGetCount()
    if int(err) != 0 or n == 0:
        print(f"the CUDA driver sees no device ({err}, count {n})"); sys.exit(1)
    _, dev = d.cuDeviceGet(0)
    _, raw = d.cuDeviceGetName(128, dev)
    name = bytes(raw).split(b"\0")[0].decode()
    A = d.CUdevice_attribute
    _, ma = d.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    _, mi = d.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    _, sms = d.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
    _, ver = d.cuDriverGetVersion()
    print(f"{n} device(s); cuda:0 = {name}, sm_{ma}{mi}, {sms} SMs; driver CUDA {ver // 1000}.{ver % 1000 // 10}")
except Exception as e:
    print(f"the CUDA driver is not usable ({type(e).__name__}: {e})"); sys.exit(1)
'
ENV_INFO='
import importlib.metadata as md, platform, sys
print(f"python: {sys.executable} {platform.python_version()} ({platform.machine()})")
vs = []
for d in ("numpy", "triton", "cuda-bindings", "cuda-python", "torch", "nvtx", "nvidia-nvtx",
          "scikit-learn", "scipy", "pytest", "hypothesis", "setuptools", "pip"):
    try:
        vs.append(f"{d} {md.version(d)}")
    except md.PackageNotFoundError:
        vs.append(f"{d} -")
print("packages: " + ", ".join(vs[:7]))
print("packages: " + ", ".join(vs[7:]))
'

tool_path() {  # tool_path NAME: the first working path of an NVIDIA command-line tool, or ""
    local name=$1 c sp
    local cands=()
    c=$(command -v "$name" 2>/dev/null) && cands+=("$c")
    cands+=(/usr/local/cuda/bin/"$name" /usr/local/cuda-*/bin/"$name"
            /usr/local/cuda*/"$name"/"$name" /opt/nvidia/nsight-compute/*/"$name"
            /opt/nvidia/*/"$name" /usr/local/NVIDIA-Nsight-Compute*/"$name")
    for sp in $("$PY" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
        if [[ -d $sp/nvidia ]]; then
            while IFS= read -r c; do cands+=("$c"); done \
                < <(find "$sp/nvidia" -maxdepth 4 -type f -name "$name" 2>/dev/null)
        fi
    done
    for c in "${cands[@]}"; do
        if [[ -f $c && -x $c ]]; then echo "$c"; return 0; fi
    done
    echo ""
}

new_record env RUNNING ""
CUR_T0=$(now_ms)
ENV_IDX=$CUR_IDX
{
    echo "date: $(date -u +%FT%TZ); host: $(uname -srm); $(cpus) CPUs; $(awk '/MemTotal/ {printf "%.0f GiB RAM", $2 / 1048576}' /proc/meminfo 2>/dev/null)"
    if commit=$(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null); then
        echo "source: git $commit, $(git -C "$REPO" status --porcelain 2>/dev/null | wc -l) paths changed or untracked"
    else
        echo "source: not a git checkout${CAMPAIGN_COMMIT:+ (CAMPAIGN_COMMIT=$CAMPAIGN_COMMIT)}"
    fi
    echo "fingerprint of the Python sources: $(cd "$REPO" && find . -name '*.py' -not -path './.*' -not -path './build/*' | LC_ALL=C sort | xargs sha256sum 2>/dev/null | sha256sum | cut -c1-16)"
    timeout 60 "$PY" -c "$ENV_INFO" 2>&1 || echo "python: $PY does not run"
    if command -v nvidia-smi >/dev/null 2>&1; then
        echo "nvidia-smi -L: $(timeout 20 nvidia-smi -L 2>&1 | tr '\n' ' ')"
        echo "nvidia-smi: $(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm,power.limit --format=csv,noheader 2>&1 | tr '\n' ' ')"
    else
        echo "nvidia-smi: not found"
    fi
    echo "gcc: $(gcc --version 2>/dev/null | head -n 1 || echo 'not found')"
} > "$OUTDIR/01-env.log" 2>&1
R_LOG[ENV_IDX]=01-env.log

if [[ "${CAMPAIGN_FORCE_NO_GPU:-0}" == 1 ]]; then
    GPU_LINE="CAMPAIGN_FORCE_NO_GPU=1"
else
    GPU_LINE=$(timeout 60 "$PY" -c "$GPU_PROBE" 2>&1 | tail -n 1) && GPU=1
    [[ -z $GPU_LINE ]] && GPU_LINE="the GPU probe printed nothing"
fi
if [[ "${CAMPAIGN_EMULATE:-0}" == 1 && $GPU == 1 ]]; then
    NOTES+=("CAMPAIGN_EMULATE=1 ignored: a real GPU is present, and a real GPU always wins")
elif [[ "${CAMPAIGN_EMULATE:-0}" == 1 ]]; then
    # A rehearsal of the GPU path on the CPU (tests of this script): every step runs on the
    # emulated device through Triton's interpreter. Nothing it measures says anything about a GPU.
    export TRITON_INTERPRET=1 TRITONGRAD_EMULATE_CUDA=1
    GPU=1 EMULATED=1
    GPU_LINE="CAMPAIGN_EMULATE=1: the emulated CUDA device (Triton's interpreter on the CPU)"
    NOTES+=("CAMPAIGN_EMULATE=1: a rehearsal on the emulated device; no result here is a GPU result")
fi
SANITIZER=$(tool_path compute-sanitizer)
NCU=$(tool_path ncu)
{
    echo "GPU probe (cuda.bindings cuInit/cuDeviceGetCount): $([[ $GPU == 1 ]] && echo "$GPU_LINE" || echo "NO GPU: $GPU_LINE")"
    echo "compute-sanitizer: ${SANITIZER:-not found}; ncu: ${NCU:-not found}"
    [[ -n $CALLER_EMULATION ]] && echo "unset for a real-device run: $CALLER_EMULATION"
} >> "$OUTDIR/01-env.log"
if [[ $GPU == 1 ]]; then
    end_step PASS "$GPU_LINE" "$ENV_IDX"
else
    echo
    echo "=================================================================================="
    echo " NO GPU: $GPU_LINE"
    echo " Only the selfcheck runs; every GPU step is marked SKIP. This is a dry run."
    echo "=================================================================================="
    echo
    end_step PASS "no GPU: $GPU_LINE" "$ENV_IDX"
fi
if [[ $EMULATED == 1 ]]; then
    echo "REHEARSAL ON THE EMULATED DEVICE (CAMPAIGN_EMULATE=1): no result of this run is a GPU result"
fi

# -- 2. install, with no network ----------------------------------------------------------------
import_check() {  # prints where tritongrad imports from (run outside the repository)
    (cd "$WORK" && timeout 120 "$PY" -c 'import os, tritongrad; print(os.path.realpath(tritongrad.__file__))' 2>&1)
}

ours() { [[ "$1" == "$REPO"/* ]]; }


install_wheel() {  # install_wheel DIST IMPORT: from NVTX_WHEEL / the wheel folders, into $SITE
    local dist=$1 mod=$2 dir file pat=${1//-/_}
    if timeout 60 "$PY" -c "import $mod" >/dev/null 2>&1; then
        echo "$dist: already importable"
        return 0
    fi
    local files=()
    [[ $dist == nvtx && -n "${NVTX_WHEEL:-}" ]] && files+=("$NVTX_WHEEL")
    for dir in "${WHEEL_DIR:-}" "$REPO/.whl" "$REPO/wheels"; do
        [[ -n $dir && -d $dir ]] || continue
        for file in "$dir"/"$pat"-*.whl "$dir"/"$dist"-*.whl; do
            [[ -f $file ]] && files+=("$file")
        done
    done
    if ((${#files[@]} == 0)); then
        echo "$dist: not importable and no wheel for it (NVTX_WHEEL, WHEEL_DIR, .whl/, wheels/)"
        return 1
    fi
    for file in "${files[@]}"; do  # pip picks only a wheel that fits this interpreter
        echo "$dist: trying $file"
        if timeout 120 "$PY" -m pip install --no-index --no-deps --target "$SITE" "$file" 2>&1 | tail -n 3; then
            if timeout 60 "$PY" -c "import $mod" >/dev/null 2>&1; then
                echo "$dist: installed from $(basename "$file") into the campaign's site folder"
                return 0
            fi
        fi
        # no pip, or pip refused: a wheel is a zip; unpack it if its tags fit
        if "$PY" -c 'import sys, platform; f = sys.argv[1]; t = f"cp{sys.version_info[0]}{sys.version_info[1]}"; ok = ("py3-none-any" in f) or (t in f and platform.machine() in f); sys.exit(0 if ok else 1)' "$file"; then
            "$PY" -m zipfile -e "$file" "$SITE" && timeout 60 "$PY" -c "import $mod" >/dev/null 2>&1 \
                && { echo "$dist: unpacked $(basename "$file") into the campaign's site folder"; return 0; }
        fi
    done
    echo "$dist: no wheel found that installs here; the import says:"
    timeout 60 "$PY" -c "import $mod" 2>&1 | tail -n 2
    return 1
}

export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
if begin_step install 150; then
    install_status=PASS
    {
        install_wheel nvtx nvtx || NVTX_MISSING=1
        install_wheel joblib joblib
        install_wheel threadpoolctl threadpoolctl
        install_wheel scikit-learn sklearn
        install_wheel pyelftools elftools  # (cupti-python >= 13.2 needs it)
        install_wheel cupti-python cupti  # (optional: profile(use_cuda=True) on the GPU)
        install_wheel nccl4py nccl        # (optional: the NCCL backend's gpu tests)
    } >> "$CUR_LOG" 2>&1
    if [[ -n "${NVTX_MISSING:-}" ]]; then
        # tritongrad imports without the nvtx package (its ranges are then no-ops), but NVTX
        # cannot be captured: the NVTX steps and tests/nvtx are skipped, and the install FAILs
        # so that the summary says to bring the wheel.
        NVTX_STUB=1
        install_status=FAIL
        NOTES+=("the nvtx package was missing and no wheel was given: tests/nvtx was left out of the pytest steps and the NVTX steps were skipped. Bring the wheel: perf/gpu_campaign.sh --fetch-wheels, then carry .whl")
    fi
    where=$(import_check | tail -n 1)
    if ours "$where"; then
        INSTALL_MODE="tritongrad already installed from this checkout ($where)"
    else
        echo "tritongrad does not import from this checkout outside the repository: $where" >> "$CUR_LOG"
        if [[ "${CAMPAIGN_NO_INSTALL:-0}" != 1 ]] \
            && { "$PY" -c "import setuptools" >/dev/null 2>&1 \
                 || { echo "setuptools is not installed: no build without isolation" >> "$CUR_LOG"; false; }; } \
            && run_logged 180 "$PY" -m pip install --no-index --no-build-isolation --no-deps -e "$REPO" \
            && where=$(import_check | tail -n 1) && ours "$where"; then
            INSTALL_MODE="pip install --no-index --no-build-isolation --no-deps -e . ($where)"
        else
            echo "pip install -e skipped or failed: running from the source tree" >> "$CUR_LOG"
            # The repository's tritongrad/ finds runtime/, kernels/, ... beside it; perf/ for
            # the benchmarks' _common.
            export PYTHONPATH="$PYTHONPATH:$REPO:$REPO/perf"
            where=$(import_check | tail -n 1)
            INSTALL_MODE="source tree on PYTHONPATH ($where)"
        fi
    fi
    echo "tritongrad: $INSTALL_MODE" >> "$CUR_LOG"
    if [[ $where == /* ]]; then
        TG_OK=1
    else
        install_status=FAIL
        INSTALL_MODE="tritongrad does not import: $where"
    fi
    [[ $NVTX_STUB == 1 ]] && INSTALL_MODE="nvtx missing and no wheel; $INSTALL_MODE"
    NOTES+=("install: $INSTALL_MODE")
    [[ -n $CALLER_EMULATION ]] && NOTES+=("the caller had set $CALLER_EMULATION: unset, so the suite runs on the real device")
    end_step "$install_status" "$INSTALL_MODE"
fi

PYTEST_EXTRA=(-p no:cacheprovider)
[[ $NVTX_STUB == 1 ]] && PYTEST_EXTRA+=(--ignore=tests/nvtx)

if ((${#EXEC_CMD[@]})); then  # --exec: the one command, in the campaign's environment
    exec_rc=0
    if begin_step exec "${CAMPAIGN_T_exec:-$(remaining_s)}"; then
        run_logged "$CUR_T" "${EXEC_CMD[@]}"
        exec_rc=$?
        end_step "$(status_of $exec_rc)" "$(key_of "$(status_of $exec_rc)" "$CUR_LOG" "$(last_line "$CUR_LOG")")"
        echo
        excerpt "$CUR_LOG" 150
    fi
    echo
    cat "$SUMMARY"
    exit "$exec_rc"
fi

# -- 3. selfcheck ---------------------------------------------------------------------------------
if [[ ! -f $REPO/tritongrad/selfcheck.py ]]; then
    skip_step selfcheck "tritongrad/selfcheck.py is not in this checkout yet"
elif begin_step selfcheck 75 tg; then
    run_logged "$CUR_T" "$PY" -m tritongrad.selfcheck
    rc=$?
    st=$(status_of $rc)
    end_step "$st" "$(key_of "$st" "$CUR_LOG" "$(last_line "$CUR_LOG")")"
fi

# -- 4. the GPU-only tests --------------------------------------------------------------------------
if begin_step gpu-tests 100 gpu tg; then
    run_logged "$CUR_T" "${CHECKED[@]}" "$PY" -m pytest -m gpu -q "${PYTEST_EXTRA[@]}"
    rc=$?
    end_step "$(status_of $rc)" "$(pt_key "$CUR_LOG")"
fi

# -- 5. tests/runtime alone: its tests compare device-wide free memory, which other processes
#       would disturb -------------------------------------------------------------------------
if begin_step suite-runtime 100 gpu tg; then
    run_logged "$CUR_T" "${CHECKED[@]}" "$PY" -m pytest tests/runtime -m "not gpu" -q --durations=5 "${PYTEST_EXTRA[@]}"
    rc=$?
    end_step "$(status_of $rc)" "$(pt_key "$CUR_LOG")"
fi

# -- 6. benchmarks, on a quiet GPU (nothing else runs beside them) ------------------------------
if begin_step bench-kernels 160 gpu tg; then  # (with the first matmul tunings: ~1 min)
    run_logged "$CUR_T" "$PY" perf/bench_kernels.py
    rc=$?
    st=$(status_of $rc)
    key=$(awk '/^copy \(cuMemcpyDtoD\)/ { c = "copy " $4 " GB/s" }
               /^bfloat16 / && $2 == 4096 { m = "bfloat16 4096^3: " $4 " TFLOP/s tuned (fixed " $3 ")" ($5 ~ /^[0-9.]+$/ ? ", torch " $5 ", ratio " $6 : "") }
               END { print c (c && m ? "; " : "") m }' "$CUR_LOG")
    end_step "$st" "$(key_of "$st" "$CUR_LOG" "${key:-$(last_line "$CUR_LOG")}")"
fi

bench_key() {  # the tritongrad and torch rows of a perf/_common.py report table
    grep -E '^(tritongrad|torch) ' "$1" | tail -n 2 | tr -s ' ' | paste -sd ';' -
}
bench_step() {  # bench_step NAME CAP COMMAND...: a GPU benchmark keyed by its table's rows
    local name=$1 cap=$2 rc st k
    shift 2
    begin_step "$name" "$cap" gpu tg || return 0
    run_logged "$CUR_T" "$PY" "$@"
    rc=$?
    st=$(status_of $rc)
    k=$(bench_key "$CUR_LOG")
    end_step "$st" "$(key_of "$st" "$CUR_LOG" "${k:-$(last_line "$CUR_LOG")}")"
}
bench_step bench-mlp 60 perf/bench_mlp.py --device cuda --batch 4096 --profile
bench_step bench-chain 50 perf/bench_chain.py --device cuda
# host-to-device copies from pageable and pinned memory, against torch's
bench_step bench-transfer 30 perf/bench_transfer.py
# host microseconds per op from the Python call to the queued kernel, against torch eager, a
# CUDA-graph replay and a raw Triton launch
bench_step bench-launch 40 perf/bench_launch.py --repeat 7
# the fused kernels (flash attention, implicit-GEMM convolution) against torch's
if begin_step bench-attention 45 gpu tg; then
    run_logged "$CUR_T" "$PY" perf/bench_attention.py --device cuda --repeat 5
    rc=$?
    st=$(status_of $rc)
    end_step "$st" "$(key_of "$st" "$CUR_LOG" "$(last_line "$CUR_LOG")")"
fi
if begin_step bench-conv 45 gpu tg; then
    run_logged "$CUR_T" "$PY" perf/bench_conv.py --device cuda --repeat 5
    rc=$?
    st=$(status_of $rc)
    end_step "$st" "$(key_of "$st" "$CUR_LOG" "$(last_line "$CUR_LOG")")"
fi
# the GPT-style training step (the whole stack: attention, GELU, layer norm, AdamW, clipping)
bench_step bench-transformer 70 perf/bench_transformer.py --device cuda --repeat 5 --profile
# the GPT and MLP steps with each launch-path switch flipped (reductions always split, split-K,
# index checks that sync, TF32, the C launch through CudaLauncher.__call__): which of them the
# steps' time moves with
if begin_step bench-knobs 90 gpu tg; then
    run_logged "$CUR_T" "$PY" perf/bench_knobs.py --repeat 3
    rc=$?
    st=$(status_of $rc)
    key=$(grep '^key: ' "$CUR_LOG" | tail -n 1 | cut -c6-)
    end_step "$st" "$(key_of "$st" "$CUR_LOG" "${key:-$(last_line "$CUR_LOG")}")"
fi

# -- 7. the rest of the suite on the real device, in parallel shards, while the NVTX capture, the
#       examples and ncu run beside them (none of those measures time or device memory) ---------
SUITE_IDX=-1
if begin_step suite 240 gpu tg; then
    SUITE_IDX=$CUR_IDX SUITE_T0=$CUR_T0 SUITE_LOG=$CUR_LOG
    # three quarters of the CPUs, at most 12: on the H200 machine (16 cores) 12 shards ran the
    # suite in about 200 s (2026-11-29); the rest of the cores compile kernels and feed the GPU
    nshards=${CAMPAIGN_SHARDS:-$(( $(cpus) * 3 / 4 ))}
    (( nshards < 1 )) && nshards=1
    (( nshards > 12 )) && [[ -z "${CAMPAIGN_SHARDS:-}" ]] && nshards=12
    # largest files first, each to the shard with the fewest bytes so far
    # shellcheck disable=SC2086  # CAMPAIGN_SUITE_PATHS is a list of paths
    mapfile -t SHARD_FILES < <(find ${CAMPAIGN_SUITE_PATHS:-tests} \( -name 'test_*.py' -o -name '*_test.py' \) \
        -not -path 'tests/runtime/*' -printf '%s %p\n' | sort -rn \
        | awk -v n="$nshards" '{ best = 0; for (i = 1; i < n; i++) if (load[i] < load[best]) best = i;
                                 load[best] += $1; files[best] = files[best] " " $2 }
                               END { for (i = 0; i < n; i++) print files[i] }')
    k=0
    for files in "${SHARD_FILES[@]}"; do
        [[ -z ${files// /} ]] && continue
        # in path order, each folder's files together: pytest 9.1 loses a folder's conftest
        # fixtures for its files listed after a file of the parent folder (pytest-dev/pytest
        # #14971; the H200 run of 2026-11-30: "fixture 'rng' not found" in one shard)
        # shellcheck disable=SC2086  # the list splits on spaces on purpose
        files=" $(printf '%s\n' $files | sort | tr '\n' ' ')"
        k=$((k + 1))
        slog="${SUITE_LOG%.log}.shard$k.log"
        echo "#campaign# shard $k:$files" >> "$SUITE_LOG"
        # shellcheck disable=SC2086  # the file list splits on spaces on purpose
        timeout -s INT -k 20 "$CUR_T" "${CHECKED[@]}" "$PY" -m pytest $files -m "not gpu" -q \
            --durations=5 \
            "${PYTEST_EXTRA[@]}" > "$slog" 2>&1 < /dev/null &
        SHARD_PIDS+=($!)
    done
    say "suite: $k shards started in the background (the gpu-marked tests ran in gpu-tests)"
fi

if begin_step nvtx-capture 60 gpu tg nvtx; then
    req=(--require-gpu)
    [[ $EMULATED == 1 ]] && req=()
    run_logged "$CUR_T" "$PY" perf/nvtx_capture.py record --device cuda "${req[@]+"${req[@]}"}" --keep "$WORK/nvtx"
    rc=$?
    st=$(status_of $rc)
    [[ $rc == 2 ]] && st=SKIP  # the recorder cannot be built here (no gcc / headers)
    end_step "$st" "$(grep -h '^nvtx capture:' "$CUR_LOG" | tail -n 1)"
fi

example() {  # example NAME MAX KEY_REGEX SCRIPT ARGS...
    local name=$1 max=$2 key=$3
    shift 3
    if begin_step "$name" "$max" gpu tg; then
        (cd "$WORK/examples" && run_logged "$CUR_T" "$PY" "$@")
        local rc=$? k st
        st=$(status_of $rc)
        k=$(tr '\r' '\n' < "$CUR_LOG" | grep -E "$key" | tail -n 1)
        end_step "$st" "$(key_of "$st" "$CUR_LOG" "${k:-$(last_line "$CUR_LOG")}")"
    fi
}
example ex-mlp 45 'steps on ' "$REPO/examples/train_mlp.py" --device cuda --steps 200
if [[ $GPU == 1 && $TG_OK == 1 ]] && selected ex-digits \
    && ! "$PY" -c "import sklearn" >/dev/null 2>&1; then
    skip_step ex-digits "scikit-learn does not import here (carry its wheel: --fetch-wheels)"
else
    example ex-digits 75 'held-out accuracy' "$REPO/examples/train_digits.py" --device cuda --quick \
        --checkpoint "$WORK/examples/digits_mlp.tg" --plot "$OUTDIR/digits-loss.png"
fi
example ex-transformer 90 'loss over the whole text' "$REPO/examples/train_transformer.py" \
    --device cuda --steps 200

# emit_nvtx ranges in Nsight Compute (beside the suite: ncu profiles only its own process)
if [[ $GPU == 1 && -z $NCU ]] && selected ncu-nvtx; then
    skip_step ncu-nvtx "ncu (Nsight Compute) not found"
elif begin_step ncu-nvtx 90 gpu tg nvtx; then
    "$NCU" --version >> "$CUR_LOG" 2>&1
    run_logged "$CUR_T" "$NCU" --nvtx --print-nvtx-rename kernel --metrics gpu__time_duration.sum \
        --csv --launch-count 80 "$PY" perf/nvtx_capture.py workload --device cuda --steps 1
    rc=$?
    # with --csv, ncu prints one row per profiled kernel ("ID","Process ID",...) and, with
    # --print-nvtx-rename kernel, names a kernel launched inside a range "<range>/<kernel>"
    profiled=$(grep -cE '^"[0-9]+","[0-9]+",' "$CUR_LOG")
    named=$(grep -E '^"[0-9]+","[0-9]+",' "$CUR_LOG" | grep -cE 'seq = [0-9]+/')
    st=$(status_of "$rc")
    key="profiled $profiled kernels; $named output lines name an emit_nvtx range (seq = N)"
    if [[ $st == PASS ]] && (( named == 0 )); then
        st=FAIL
    elif [[ $st == FAIL ]] && (( profiled == 0 )) && grep -q '==ERROR==' "$CUR_LOG" \
        && ! grep -q 'Traceback' "$CUR_LOG"; then
        st=SKIP
        key="ncu cannot profile on this machine: $(grep -m 1 '==ERROR==' "$CUR_LOG")"
    fi
    end_step "$st" "$key"
fi

if (( SUITE_IDX >= 0 )); then
    say "waiting for the suite's shards"
    worst=0
    k=0
    for pid in "${SHARD_PIDS[@]}"; do
        k=$((k + 1))
        wait "$pid"
        rc=$?
        echo "#campaign# shard $k exited $rc: $(pytest_line "${SUITE_LOG%.log}.shard$k.log")" >> "$SUITE_LOG"
        if [[ $rc == 124 || $rc == 137 ]]; then
            worst=124
        elif (( rc != 0 && worst == 0 )); then
            worst=$rc
        fi
    done
    SHARD_PIDS=()
    totals=$(cat "${SUITE_LOG%.log}".shard*.log 2>/dev/null | tr '\r' '\n' \
        | grep -E '^=* ?[0-9]+ (passed|failed|errors?|skipped|deselected|xfailed|xpassed)' \
        | grep -oE '[0-9]+ (passed|failed|errors?|skipped|deselected|xfailed|xpassed)' \
        | awk '{ s = $2; sub(/s$/, "", s); if (s == "error") s = "errors"; n[s] += $1 }
               END { out = ""; split("passed failed errors skipped xfailed xpassed deselected", o, " ");
                     for (i = 1; i <= 7; i++) if (n[o[i]]) out = out (out ? ", " : "") n[o[i]] " " o[i];
                     print out }')
    end_step "$(status_of "$worst")" "$k shards: ${totals:-no pytest summary line}" "$SUITE_IDX" "$SUITE_T0"
fi

# -- 8. compute-sanitizer memcheck over the GPU tests, alone ----------------------------------------
SAN_TRIAL='
from cuda.bindings import driver as d
(err,) = d.cuInit(0); assert int(err) == 0, err
_, dev = d.cuDeviceGet(0)
_, ctx = d.cuDevicePrimaryCtxRetain(dev)
d.cuCtxSetCurrent(ctx)
err, p = d.cuMemAlloc(1 << 20); assert int(err) == 0, err
d.cuMemFree(p)
print("sanitizer trial: ok")
'
if [[ $GPU == 1 && -z $SANITIZER ]] && selected sanitizer; then
    skip_step sanitizer "compute-sanitizer not found (PATH, /usr/local/cuda*/bin, nvidia wheels)"
elif begin_step sanitizer 150 gpu tg; then
    trial=60
    (( CUR_T < trial )) && trial=$CUR_T
    run_logged "$trial" "$SANITIZER" --tool memcheck --error-exitcode 86 "$PY" -c "$SAN_TRIAL"
    rc=$?
    if (( rc != 0 )); then
        end_step SKIP "compute-sanitizer does not work on this machine (trial exited $rc): $(last_line "$CUR_LOG")"
    else
        left=$(( CUR_T - ($(now_ms) - CUR_T0) / 1000 ))
        (( left < 10 )) && left=10
        # API errors are not memory errors: cuda-bindings probes driver entry points the
        # driver lacks (34 cuGetProcAddress "invalid argument" reports on the H200,
        # 2026-12-04), which memcheck counts by default. No -x: a test failing under the
        # sanitizer's slowness should not end the memory check of the others.
        run_logged "$left" "$SANITIZER" --tool memcheck --report-api-errors no \
            --error-exitcode 86 "$PY" -m pytest -m gpu -q "${PYTEST_EXTRA[@]}"
        rc=$?
        st=$(status_of "$rc")
        errs=$(grep -h 'ERROR SUMMARY' "$CUR_LOG" | tail -n 1)
        [[ $rc == 0 && $errs != *"ERROR SUMMARY: 0 errors"* ]] && st=FAIL
        [[ $rc == 86 ]] && errs="memcheck found errors: $errs"
        end_step "$st" "$errs; $(pt_key "$CUR_LOG")"
    fi
fi

# -- summary ---------------------------------------------------------------------------------------
write_summary
echo
echo "================================ $SUMMARY ================================"
cat "$SUMMARY"
if (( $(wc -c < "$SUMMARY") > 9000 )); then  # the device tool shows only the output's tail
    echo
    echo "(summary.md is long: its table again)"
    grep -E '^\*\*|^Steps:|^\| ' "$SUMMARY"
fi
fail=0
for s in "${R_STATUS[@]}"; do
    [[ $s == FAIL || $s == TIMEOUT ]] && fail=1
done
if [[ $GPU != 1 ]]; then
    say "no GPU: dry run finished, exit 0"
    exit 0
fi
exit "$fail"
