#include "evident/evidence/commitments.h"

#include <unistd.h>

#include "evident/core/fs.h"
#include "evident/receipts/commitment.h"
#include "evident/receipts/jcs.h"

namespace evident {

Result<CommittedValue> commit_value(std::int64_t action_index, const std::string& action,
                                    const std::string& value) {
  CommittedValue c{action_index, action, new_commitment_salt(), value, ""};
  auto digest = commitment_digest(c.salt, c.value);
  if (!digest.ok()) return digest.error();
  c.commitment = std::move(*digest);
  return c;
}

std::string commitments_path(const std::string& state_dir, const std::string& session_id) {
  return state_dir + "/commitments/" + session_id + ".json";
}

Status write_session_commitments(const std::string& state_dir, const std::string& session_id,
                                 const std::string& receipt_id,
                                 const std::vector<CommittedValue>& values) {
  if (auto st = make_private_dir(state_dir + "/commitments"); !st) return st;
  Json actions = Json::array();
  for (const auto& v : values) {
    actions.push_back(Json{{"action_index", v.action_index},
                           {"action", v.action},
                           {"salt", v.salt},
                           {"value", v.value},
                           {"commitment", v.commitment}});
  }
  Json doc{{"schema", kCommitmentsSchema},
           {"session_id", session_id},
           {"receipt_id", receipt_id},
           {"actions", std::move(actions)}};
  auto bytes = canonicalize(doc);
  if (!bytes.ok()) return make_error("fs-error", "the commitments record cannot be encoded", false);
  bytes->push_back('\n');
  if (auto st = write_file_atomic(commitments_path(state_dir, session_id), *bytes, 0600); !st) {
    return make_error("fs-error", "cannot write the private commitments record: " + st.error().message,
                      st.error().retryable);
  }
  return {};
}

void remove_session_commitments(const std::string& state_dir, const std::string& session_id) {
  ::unlink(commitments_path(state_dir, session_id).c_str());
}

Result<Json> disclose_action(const std::string& state_dir, const Json& receipt,
                             std::int64_t action_index) {
  const Json& t = receipt["transcript"];
  const std::int64_t actions = receipt["action_count"].get<std::int64_t>();
  // The action_index-th (0-based) action event: a session's is transcript[i+1]; a task's actions
  // follow their turn events (docs/receipts.md §11, §12).
  const Json* found = nullptr;
  std::int64_t seen = 0;
  for (const Json& e : t) {
    if (e.is_object() && e.value("kind", "") == "action" && seen++ == action_index) {
      found = &e;
      break;
    }
  }
  if (action_index < 0 || action_index >= actions || found == nullptr) {
    return make_error("disclosure-action", "--action names no action of this receipt (it has " +
                                               std::to_string(actions) + ")");
  }
  const Json& event = *found;
  if (!event.contains("commitment")) {
    return make_error("disclosure-action",
                      "action " + std::to_string(action_index) +
                          " carries no commitment (only type, key, paste and hold_key do, in v3 receipts)");
  }
  // The record is keyed by the run's id: session_id, or a task receipt's task_id.
  const std::string session_id =
      receipt.contains("task_id") ? receipt["task_id"].get<std::string>()
                                  : receipt["session_id"].get<std::string>();
  const std::string path = commitments_path(state_dir, session_id);
  auto unavailable = [](const std::string& why) {
    return make_error("disclosure-unavailable",
                      why + "; disclose on the machine and state dir that closed the session");
  };
  auto text = read_file(path, kMaxCommitmentsFileBytes);
  if (!text.ok()) return unavailable("no private commitments record for this receipt here");
  auto doc = parse_json_strict(*text, kMaxCommitmentsFileBytes, "disclosure-unavailable");
  if (!doc.ok() || !doc->is_object() || doc->value("schema", "") != kCommitmentsSchema ||
      !doc->contains("actions") || !(*doc)["actions"].is_array()) {
    return unavailable("the private commitments record is damaged");
  }
  if ((*doc)["receipt_id"] != receipt["receipt_id"] || (*doc)["session_id"] != session_id) {
    return unavailable("the private commitments record is for another receipt");
  }
  // The record is outside input too (a file in the state dir): a member is read only after it is
  // known to be there (operator[] on a const object with a missing key is undefined behaviour).
  auto string_member = [](const Json& o, const char* key) -> const std::string* {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
  };
  for (const Json& a : (*doc)["actions"]) {
    if (!a.is_object() || a.value("action_index", Json(-1)) != action_index) continue;
    const std::string* salt = string_member(a, "salt");
    const std::string* value = string_member(a, "value");
    const std::string* kind = string_member(a, "action");
    if (!salt || !value || !kind) break;
    auto c = commitment_digest(*salt, *value);
    if (!c.ok() || event.value("commitment", Json()) != *c || event.value("action", Json()) != *kind) break;
    return make_disclosure(receipt["receipt_id"].get<std::string>(), action_index, *kind, *salt, *value);
  }
  return unavailable("the private commitments record does not recompute this action's commitment");
}

}  // namespace evident
