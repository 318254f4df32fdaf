// make_error takes `retryable` from protocol/evident.json for every code declared true or false;
// the caller's answer counts only for a code declared "depends" (and an undeclared one).
#include <gtest/gtest.h>

#include <cerrno>

#include "evident/core/fs.h"
#include "evident/core/status.h"
#include "evident/protocol/protocol.h"

namespace {

using evident::make_error;
using evident::protocol::Retryable;

TEST(MakeError, TheProtocolFileDecidesRetryableForCodesDeclaredTrueOrFalse) {
  int yes = 0, no = 0, depends = 0;
  for (const auto& e : evident::protocol::kErrorCodes) {
    const std::string code(e.code);
    switch (e.retryable) {
      case Retryable::kYes:
        ++yes;
        EXPECT_TRUE(make_error(code, "m").retryable) << code;
        EXPECT_TRUE(make_error(code, "m", false).retryable) << code;
        break;
      case Retryable::kNo:
        ++no;
        EXPECT_FALSE(make_error(code, "m").retryable) << code;
        EXPECT_FALSE(make_error(code, "m", true).retryable) << code;
        break;
      case Retryable::kDepends:
        ++depends;
        EXPECT_TRUE(make_error(code, "m", true).retryable) << code;
        EXPECT_FALSE(make_error(code, "m", false).retryable) << code;
        break;
    }
  }
  // The file has codes of each kind, so each branch above ran.
  EXPECT_GT(yes, 0);
  EXPECT_GT(no, 0);
  EXPECT_GT(depends, 0);
}

TEST(MakeError, ExamplesFromTheProtocolFile) {
  // Written out from protocol/evident.json, so a change there shows here too.
  EXPECT_TRUE(make_error("browser-element-not-found", "m").retryable);
  EXPECT_TRUE(make_error("daemon-busy", "m").retryable);
  EXPECT_FALSE(make_error("request-args", "m", true).retryable);
  EXPECT_FALSE(make_error("browser-cdp-timeout", "m", true).retryable);
  // An undeclared code keeps the caller's answer.
  EXPECT_TRUE(make_error("not-a-declared-code", "m", true).retryable);
  EXPECT_FALSE(make_error("not-a-declared-code", "m").retryable);
}

TEST(FsError, RetryableExactlyForTransientErrnos) {
  for (int err : {ENOSPC, EDQUOT, EMFILE, ENFILE, ENOMEM, EAGAIN, EINTR}) {
    auto e = evident::fs_error("cannot write", "/x", err);
    EXPECT_EQ(e.code, "fs-error");
    EXPECT_TRUE(e.retryable) << err;
  }
  for (int err : {EACCES, ENOENT, EROFS, EISDIR, EIO}) {
    EXPECT_FALSE(evident::fs_error("cannot write", "/x", err).retryable) << err;
  }
}

}  // namespace
