#!/usr/bin/env bash
# Mutation testing of the pure core with mutmut (pinned in pyproject's dev extra): each mutant is
# a one-token change of the source (`<` for `<=`, `and` for `or`, a constant off by one, a
# dropped argument...); a mutant that no unit test kills is a bug the tests would not see.
#
#   hack/mutation.sh status            # one package of the core: status, sizing, render, observe
#   hack/mutation.sh sizing/reserve.py # one module, or several: sizing/cache.py sizing/memory.py
#   hack/mutation.sh status --no-golden  # without the golden byte-diffs: behaviour only
#   MUTATION_FROM_COMMIT=d7746bf hack/mutation.sh render  # the core and its tests at a commit
#
# Slow (minutes to an hour a package on 2 cores), so not part of hack/test.sh: run it before a
# release of the core and after changing it. It runs niced, with one worker unless
# MUTATION_JOBS says otherwise. Each target gets a scratch copy of the repository in
# .cache/mutation/<target>/ (src/ layout, which mutmut expects); results stay there, and
# `hack/mutation.sh TARGET --show` lists the survivors again with their diffs.
# docs/testing.md records the scores and explains every surviving mutant.
source "$(dirname "$0")/lib.sh"
ensure_venv
cd "$ROOT"

mode=""
targets=()
for arg in "$@"; do
  case "$arg" in
    --no-golden|--show) mode="$arg" ;;
    *) targets+=("$arg") ;;
  esac
done
[ "${#targets[@]}" -gt 0 ] || {
  echo "usage: hack/mutation.sh status|sizing|render|observe|PKG/MODULE.py... [--no-golden|--show]" >&2
  exit 2
}
patterns=()
for target in "${targets[@]}"; do
  case "$target" in
    status|sizing|render|observe) patterns+=("src/nemotron_operator/$target/*") ;;
    */*.py) patterns+=("src/nemotron_operator/$target") ;;
    *) echo "hack/mutation.sh: unknown target $target" >&2; exit 2 ;;
  esac
  [ -n "${MUTATION_FROM_COMMIT:-}" ] || [ -e "operator/nemotron_operator/$target" ] \
    || { echo "no such path: $target" >&2; exit 2; }
done
target="${targets[*]}"
name="$(echo "$target" | tr '/. ' '__+')"
[ "$mode" = "--no-golden" ] && name="$name-no-golden"
work="$ROOT/.cache/mutation/$name"

if [ "$mode" = "--show" ]; then
  cd "$work" && mutmut results --all true 2>/dev/null | grep -v ': killed$' || true
  exit 0
fi

# The unit tier only: pure functions, fast, no processes. Goldens excluded on request, to see what
# the behavioural tests alone kill (a regenerated golden approves whatever the code now does).
# Tests that start a subprocess run the installed, unmutated package and cannot kill a mutant;
# the simulator's, the telemetry's and the benchmark helpers' tests (hack/opbench, not copied)
# do not reach the core.
tests=(tests/unit --ignore=tests/unit/test_cli.py --ignore=tests/unit/test_crd_generation.py
  --ignore=tests/unit/sim_cluster --ignore=tests/unit/sim_vllm --ignore=tests/unit/telemetry
  --ignore=tests/unit/bench)
deselect=()
if [ "$mode" = "--no-golden" ]; then
  deselect=(--ignore=tests/unit/render/test_golden.py --ignore=tests/unit/sizing/test_golden.py)
fi

# MUTATION_FROM_COMMIT=REV: the core *and* its tests as they were at REV (git archive), for a
# "before" score of code that has changed since; the scratch copy is named after the commit.
source_root="$ROOT"
if [ -n "${MUTATION_FROM_COMMIT:-}" ]; then
  rev="$(git rev-parse --short "$MUTATION_FROM_COMMIT")"
  work="$work-at-$rev"
  source_root="$work.export"
  rm -rf "$source_root" && mkdir -p "$source_root"
  git archive "$rev" operator tests docs crds charts examples pyproject.toml hack \
    | tar -x -C "$source_root"
fi
rm -rf "$work"
mkdir -p "$work/src"
cp -r "$source_root"/operator/nemotron_operator "$source_root"/operator/nemotron_sim "$work/src/"
# The simulated cluster (hack/sim_cluster since issue 40; tests/kube.py imports it).
[ -d "$source_root/hack/sim_cluster" ] && cp -r "$source_root/hack/sim_cluster" "$work/src/"
for dir in docs crds charts examples; do cp -r "$source_root/$dir" "$work/"; done
# MUTATION_TESTS_FROM=DIR: another copy of tests/ (how docs/testing.md's "before" was measured).
cp -r "${MUTATION_TESTS_FROM:-$source_root/tests}" "$work/tests"
find "$work" -name __pycache__ -prune -exec rm -rf {} +
# A suite older than the mutation profile gets it, so that the same options run either suite.
grep -q 'register_profile("mutation"' "$work/tests/conftest.py" || printf '%s\n' '' \
  'from hypothesis import settings as _mutation_settings  # added by hack/mutation.sh' \
  '_mutation_settings.register_profile("mutation", max_examples=25, deadline=None)' \
  >> "$work/tests/conftest.py"
# A pyproject of its own: pytest's settings without pythonpath=operator (mutmut puts mutants/src
# first on sys.path and must be the only copy the tests can import), and mutmut's.
"$PY" - "$source_root" "$work/pyproject.toml" "${patterns[*]}" "${tests[@]}" "${deselect[@]}" <<'EOF'
import json, sys, tomllib
from pathlib import Path

source_root, out, patterns, *selection = sys.argv[1:]
pytest_opts = tomllib.loads((Path(source_root) / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
lines = ["[tool.pytest.ini_options]"]
for key, value in pytest_opts.items():
    if key == "pythonpath":
        value = ["."]
    if key == "addopts":
        value = "-p no:cacheprovider -p no:randomly"
    lines.append(f"{key} = {json.dumps(value)}")
lines += [
    "",
    "[tool.mutmut]",
    'source_paths = ["src"]',
    f"only_mutate = {json.dumps(patterns.split())}",
    f"pytest_add_cli_args_test_selection = {json.dumps(selection)}",
    'pytest_add_cli_args = ["-q", "-x", "-p", "no:cacheprovider", "--hypothesis-profile=mutation"]',
    "use_git_change_detection = false",
    'also_copy = ["docs", "crds", "charts", "examples"]',
]
Path(out).write_text("\n".join(lines) + "\n")
EOF
cd "$work"
start=$(date +%s)
nice -n 15 mutmut run --max-children "${MUTATION_JOBS:-1}" > run.log 2>&1 || {
  tail -40 run.log >&2; exit 1; }
elapsed=$(( $(date +%s) - start ))
mutmut results --all true > results.txt 2>/dev/null || true
total=$(grep -c ': ' results.txt || true)
killed=$(grep -c ': killed$' results.txt || true)
echo "mutation $target${mode:+ $mode}: $killed of $total mutants killed in ${elapsed}s"
grep -v ': killed$' results.txt || true
