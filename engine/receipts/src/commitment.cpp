#include "evident/receipts/commitment.h"

#include "evident/core/random.h"
#include "evident/protocol/protocol.h"
#include "evident/receipts/jcs.h"

namespace evident {

bool action_has_commitment(std::string_view action_type) {
  for (const auto& k : protocol::kActionKinds) {
    if (k.name == action_type) return k.projection != protocol::Projection::kAsSent;
  }
  return false;
}

Result<std::string> commitment_digest(std::string_view salt_hex, std::string_view value) {
  if (!is_lower_hex(salt_hex, kCommitmentSaltBytes * 2)) {
    return make_error("receipt-invalid", "a commitment salt must be 64 lowercase hex");
  }
  return domain_digest(kDomainCommitment,
                       Json{{"salt", std::string(salt_hex)}, {"value", std::string(value)}});
}

std::string new_commitment_salt() { return random_hex(kCommitmentSaltBytes); }

Json make_disclosure(const std::string& receipt_id, std::int64_t action_index,
                     const std::string& action, const std::string& salt, const std::string& value) {
  return Json{{"schema", kDisclosureSchema}, {"receipt_id", receipt_id},
              {"action_index", action_index}, {"action", action},
              {"salt", salt},                 {"value", value}};
}

std::string disclosure_shape_problem(const Json& d) {
  if (!d.is_object()) return "the disclosure is not a JSON object";
  for (const char* k : {"schema", "receipt_id", "action_index", "action", "salt", "value"}) {
    if (!d.contains(k)) return "the disclosure lacks a required member";
  }
  if (d.size() != 6) return "the disclosure has members beyond the six of evident.disclosure/v1";
  if (d["schema"] != kDisclosureSchema) return "the disclosure's schema is not evident.disclosure/v1";
  const Json& rid = d["receipt_id"];
  // ecr- (a session receipt) or etr- (a task receipt, task_receipt.h).
  if (!rid.is_string() || rid.get_ref<const std::string&>().size() != 68 ||
      (rid.get_ref<const std::string&>().compare(0, 4, "ecr-") != 0 &&
       rid.get_ref<const std::string&>().compare(0, 4, "etr-") != 0) ||
      !is_lower_hex(std::string_view(rid.get_ref<const std::string&>()).substr(4), 64)) {
    return "receipt_id is not ecr-<64 hex> or etr-<64 hex>";
  }
  const Json& idx = d["action_index"];
  if (!(idx.is_number_unsigned() || idx.is_number_integer()) || idx.get<std::int64_t>() < 0 ||
      idx.get<std::int64_t>() > kMaxSafeInteger) {
    return "action_index is not an integer >= 0";
  }
  if (!d["action"].is_string()) return "action is not a string";
  if (!d["salt"].is_string() ||
      !is_lower_hex(d["salt"].get_ref<const std::string&>(), kCommitmentSaltBytes * 2)) {
    return "salt is not 64 lowercase hex";
  }
  if (!d["value"].is_string() ||
      d["value"].get_ref<const std::string&>().size() > kMaxDisclosedValueBytes) {
    return "value is not a string of at most 4096 bytes";
  }
  return "";
}

std::vector<DisclosureCheck> check_disclosure(const Json& r, const Json& d) {
  std::vector<DisclosureCheck> out;
  const bool same_receipt = r.contains("receipt_id") && r["receipt_id"] == d["receipt_id"];
  out.push_back({"disclosure_receipt", same_receipt,
                 same_receipt ? "names this receipt" : "names another receipt"});
  // The action event: the action_index-th (0-based) event of kind "action" (a session's are
  // transcript[1..]; a task's sit after their turn events).
  const Json* event = nullptr;
  std::string detail;
  const std::int64_t index = d["action_index"].get<std::int64_t>();
  const Json& t = r["transcript"];
  const std::int64_t actions = r["action_count"].is_number() ? r["action_count"].get<std::int64_t>() : 0;
  const Json* found = nullptr;
  std::int64_t seen = 0;
  for (const Json& e : t) {
    if (e.is_object() && e.value("kind", "") == "action" && seen++ == index) {
      found = &e;
      break;
    }
  }
  if (index >= actions || found == nullptr) {
    detail = "action_index is beyond the receipt's actions";
  } else {
    const Json& e = *found;
    if (!e.contains("commitment")) {
      detail = "that action carries no commitment";
    } else if (e["action"] != d["action"]) {
      detail = "that action is of another kind";
    } else {
      event = &e;
    }
  }
  out.push_back({"disclosure_action", event != nullptr,
                 event ? "action " + std::to_string(index) + " carries a commitment" : detail});
  if (event == nullptr) {
    out.push_back({"disclosure_commitment", false, "not checked: no committed action"});
    return out;
  }
  auto c = commitment_digest(d["salt"].get_ref<const std::string&>(),
                             d["value"].get_ref<const std::string&>());
  const bool ok = c.ok() && (*event)["commitment"] == *c;
  out.push_back({"disclosure_commitment", ok,
                 ok ? "salt and value recompute the commitment"
                    : "salt and value do not recompute the commitment"});
  return out;
}

}  // namespace evident
