# Sourced by ci/setup.sh, ci/sanitize.sh and ci/fuzz.sh (from the repository root): when ccache
# is installed, compile through it, with paths made relative to the checkout and the working
# directory left out of the hash, so a second checkout (a clean clone, a worktree) reuses what
# the first compiled. Without ccache (as on a fresh CI machine: it is not in ci/packages.txt),
# `launcher` is empty and nothing changes.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
fi
