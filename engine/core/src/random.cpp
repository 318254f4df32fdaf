#include "evident/core/random.h"

#include <openssl/rand.h>

#include <cstdlib>
#include <vector>

#include "evident/core/sha256.h"

namespace evident {

std::string random_hex(std::size_t bytes) {
  std::vector<std::uint8_t> buf(bytes);
  if (RAND_bytes(buf.data(), static_cast<int>(buf.size())) != 1) std::abort();
  return to_hex(buf);
}

std::string random_id(const std::string& prefix) { return prefix + "-" + random_hex(16); }

}  // namespace evident
