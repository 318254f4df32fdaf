// SHA-256 against the FIPS 180-2 published vectors, and random ids' shape.
#include <gtest/gtest.h>

#include "evident/core/json.h"
#include "evident/core/random.h"
#include "evident/core/sha256.h"

TEST(Sha256, FipsVectors) {
  EXPECT_EQ(evident::sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(evident::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  evident::Sha256 h;
  h.update("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq");
  EXPECT_EQ(h.finish_hex(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(RandomId, ShapeAndUniqueness) {
  auto a = evident::random_id("gen");
  auto b = evident::random_id("gen");
  EXPECT_EQ(a.size(), 36u);
  EXPECT_EQ(a.substr(0, 4), "gen-");
  EXPECT_TRUE(evident::is_lower_hex(a.substr(4), 32));
  EXPECT_NE(a, b);
}
