// Identifiers from OpenSSL's CSPRNG.
#pragma once

#include <cstddef>
#include <string>

namespace evident {

// `bytes` random bytes as lowercase hex. Aborts if the CSPRNG fails (a broken invariant).
std::string random_hex(std::size_t bytes);

// prefix + "-" + 32 lowercase hex (16 random bytes), e.g. "gen-…", "ses-…", "app-…".
std::string random_id(const std::string& prefix);

}  // namespace evident
