// Timestamps round-trip in the protocol's RFC 3339 form; private files are private and atomic.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/core/random.h"

TEST(Clock, Rfc3339Milliseconds) {
  EXPECT_EQ(evident::format_rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(evident::format_rfc3339_ms(1767225600123), "2026-01-01T00:00:00.123Z");
  std::int64_t v = 0;
  ASSERT_TRUE(evident::parse_rfc3339_ms("2026-01-01T00:00:00.123Z", &v));
  EXPECT_EQ(v, 1767225600123);
  EXPECT_FALSE(evident::parse_rfc3339_ms("2026-01-01T00:00:00Z", &v));
  EXPECT_FALSE(evident::parse_rfc3339_ms("2026-13-01T00:00:00.000Z", &v));
}

TEST(Clock, FakeClockAdvances) {
  evident::FakeClock c(10, 20);
  c.advance_ms(5);
  EXPECT_EQ(c.monotonic_ms(), 15);
  EXPECT_EQ(c.wall_ms(), 25);
}

TEST(Fs, PrivateDirAndAtomicWrite) {
  std::string dir = "/tmp/evident-core-test-" + evident::random_hex(6);
  ASSERT_TRUE(evident::make_private_dir(dir + "/a/b").ok());
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/a/b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::string f = dir + "/a/b/file";
  ASSERT_TRUE(evident::write_file_atomic(f, "hello").ok());
  ASSERT_TRUE(evident::write_file_atomic(f, "world!").ok());
  ASSERT_EQ(::stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(*evident::read_file(f, 100), "world!");
  EXPECT_EQ(evident::read_file(f, 3).error().code, "fs-too-large");
  EXPECT_FALSE(evident::read_file(dir + "/none", 3).ok());
  EXPECT_TRUE(evident::remove_tree(dir).ok());
}
