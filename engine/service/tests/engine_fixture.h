// The in-process Engine that the service tests call: its own state and runtime dirs under a
// temporary directory, an in-process actor, and calls by text or by op and args.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <string_view>

#include "evident/service/engine.h"
#include "evident/testing/files.h"

namespace evident::testing {

class InProcessEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions o;
    o.state_dir = dir_ + "/state";
    o.runtime_dir = dir_ + "/rt";
    engine_ = std::make_unique<Engine>(o);
    actor_.kind = Actor::Kind::kInProcess;
    actor_.uid = ::geteuid();
    actor_.pid = ::getpid();
  }
  Json call(const std::string& text) { return engine_->call(actor_, std::string_view(text)); }
  Json call(const std::string& op, Json args) {
    return engine_->call(actor_, Json{{"op", op}, {"args", std::move(args)}});
  }
  // "ok", or the error code of a reply.
  static std::string code(const Json& r) {
    return r.value("ok", false) ? "ok" : r["error"]["code"].get<std::string>();
  }

  TempDir tmp_;  // declared first: removed after the engine is gone
  const std::string dir_ = tmp_.path();
  std::unique_ptr<Engine> engine_;
  Actor actor_;
};

}  // namespace evident::testing
