// A tiny fork-join pool for the PNG bands. The calling thread always works on its own job too,
// so concurrent encodes (several sessions) never wait for each other to make progress.
#pragma once

#include <functional>

namespace evident::detail {

// Runs fn(0..n-1), each index exactly once, on the calling thread plus the shared workers
// (hardware_concurrency - 1 of them, at least one). Returns when all indices are done.
void parallel_for(int n, const std::function<void(int)>& fn);

}  // namespace evident::detail
