#!/usr/bin/env bash
# The torch matrix, one tox env at a time: create it, run it (the bundled corpus,
# then the project's tests), print its wall time and size, delete it. Each env is
# a CUDA build of torch of 5-7 GB; the nine of tox.ini's envlist side by side
# (~50 GB) do not fit on a CI disk, one at a time they need ~8 GB free.
#
#   benchmarks/torch_matrix.sh                       # every env of tox.ini's envlist
#   benchmarks/torch_matrix.sh torch211 torch212     # some of them
#   benchmarks/torch_matrix.sh -- --exportcheck-update   # and record each minor's section
#   KEEP_ENVS=1 benchmarks/torch_matrix.sh ...       # keep the envs (re-runs skip creation)
#   PROGRAMS=DIR benchmarks/torch_matrix.sh          # programs across versions, below
#   CORPUS_ONLY=1 benchmarks/torch_matrix.sh ...     # the bundled corpus only, not the tests
#
# PROGRAMS=DIR: each env saves its exports' programs under DIR/torch-<minor>/ and loads
# every program an older env saved there (--exportcheck-save-programs/-load-programs),
# so with the envs oldest first one matrix run answers "does 2.14 load what 2.6-2.13
# saved?"; then `python -m pytest_exportcheck versions --programs DIR --write
# docs/versions.md` writes the table. DIR is made empty first: a program saved by an
# earlier matrix run under the same minor would otherwise be loaded as this one's.
#
# Arguments after -- go to both pytest commands (tox's posargs). Exits non-zero if
# any env failed; a summary line per env goes to stdout and to torch_matrix.log.
set -uo pipefail
cd "$(dirname "$0")/.."

envs=()
while [[ $# -gt 0 && $1 != "--" ]]; do
  envs+=("$1")
  shift
done
[[ ${1:-} == "--" ]] && shift
if [[ ${#envs[@]} -eq 0 ]]; then
  mapfile -t envs < <(tox -l)
fi

extra=()
if [[ -n ${PROGRAMS:-} ]]; then
  rm -rf "$PROGRAMS" && mkdir -p "$PROGRAMS"
  PROGRAMS=$(cd "$PROGRAMS" && pwd)
  # With "=": pytest would read a separate existing path as a test path for its rootdir.
  extra=("--exportcheck-save-programs=$PROGRAMS" "--exportcheck-load-programs=$PROGRAMS")
fi

log=torch_matrix.log
status=0
for env in "${envs[@]}"; do
  started=$(date +%s)
  if [[ -n ${CORPUS_ONLY:-} ]]; then  # make the env as tox does, run its first command only
    tox -e "$env" --notest &&
      ".tox/$env/bin/python" -m pytest --exportcheck -p no:cacheprovider -n 2 "${extra[@]}" "$@"
  else
    # The options mean nothing to the project's tests (no --exportcheck there): harmless.
    tox -e "$env" -- "${extra[@]}" "$@"
  fi
  rc=$?
  size=$(du -sh ".tox/$env" 2>/dev/null | cut -f1)
  line="$env: rc=$rc, $(($(date +%s) - started)) s, env ${size:-?}"
  echo "torch matrix: $line" | tee -a "$log"
  [[ -z ${KEEP_ENVS:-} ]] && rm -rf ".tox/$env"
  [[ $rc -ne 0 ]] && status=1
done
exit $status
