// The `evident` adapter: plain §4 actions, {"calls":[{"id","actions":[...]}]} or
// {"result":{...}}; coordinates are display pixels. docs/agents.md.
#include "common.h"
#include "evident/agents/convert.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/receipt.h"

namespace evident::agents::detail {
namespace {

class EvidentAdapter : public Adapter {
 public:
  std::string_view name() const override { return "evident"; }

  Result<ParsedTurn> parse(const Json& response, const AdapterInput& in) const override {
    const std::string where = "evident response";
    EVIDENT_TRY(only_keys(response, {"calls", "result"}, where));
    const bool has_calls = response.contains("calls"), has_result = response.contains("result");
    if (has_calls == has_result) return response_error(where + ": exactly one of \"calls\" and \"result\" is required");
    if (has_result) {
      const Json& r = response.at("result");
      ParsedTurn t;
      t.kind = TurnKind::kFinal;
      if (!r.is_object()) {
        t.result_error = make_error(kResultInvalid, "final answer: \"result\" is not a JSON object");
        return t;
      }
      auto canon = canonicalize(r);
      if (!canon || canon->size() > kMaxClaimsCanonicalBytes) {
        t.result_error = make_error(kResultInvalid, "final answer: \"result\" is over " +
                                                        std::to_string(kMaxClaimsCanonicalBytes) +
                                                        " bytes in canonical form");
        return t;
      }
      t.result = r;
      return t;
    }
    const Json& calls = response.at("calls");
    if (!calls.is_array() || calls.empty()) return response_error(where + ": \"calls\" must be a non-empty array");
    if (calls.size() > kMaxActionsPerTurn) {
      return make_error(kActionLimit, where + ": more than " + std::to_string(kMaxActionsPerTurn) + " calls");
    }
    TurnBuilder b("evident", in);
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const std::string cw = where + ": calls[" + std::to_string(i) + "]";
      EVIDENT_TRY(only_keys(calls[i], {"id", "actions"}, cw));
      auto id = get_string(calls[i], "id");
      if (!id) return make_error(kCallId, cw + ": field \"id\" must be a string");
      EVIDENT_TRY(b.begin_call(*id, "evident"));
      const Json* actions = get_array(calls[i], "actions");
      if (!actions || actions->empty()) return response_error(cw + ": field \"actions\" must be a non-empty array");
      if (actions->size() > kMaxActionsPerTurn) {
        return make_error(kActionLimit, cw + ": more than " + std::to_string(kMaxActionsPerTurn) + " actions");
      }
      for (const Json& a : *actions) {
        auto type = a.is_object() ? get_string(a, "type") : std::nullopt;
        b.native(type ? *type : std::string("invalid"));
        EVIDENT_TRY(b.add(a));
      }
    }
    return b.finish();
  }

  Json tool_results(const ParsedTurn& turn, const std::vector<CallOutcome>& outcomes) const override {
    Json results = Json::array();
    for (std::size_t i = 0; i < turn.calls.size() && i < outcomes.size(); ++i) {
      const CallOutcome& o = outcomes[i];
      Json r{{"id", turn.calls[i].id},
             {"status", o.status == CallStatus::kOk ? "ok" : o.status == CallStatus::kFailed ? "failed" : "not_run"},
             {"detail", outcome_text(o)}};
      if (o.png) r["png_base64"] = base64_encode(*o.png);
      results.push_back(std::move(r));
    }
    return Json{{"results", std::move(results)}};
  }

  Json retry_prompt(const Error& why) const override {
    return Json{{"retry", {{"code", why.code}, {"message", why.message}}}};
  }
};

}  // namespace

const Adapter& evident_adapter() {
  static const EvidentAdapter adapter;
  return adapter;
}

}  // namespace evident::agents::detail
