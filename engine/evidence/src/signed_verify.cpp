#include "evident/evidence/signed_verify.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>

#include "evident/core/fs.h"
#include "evident/core/sha256.h"
#include "evident/evidence/dsse.h"
#include "evident/receipts/task_receipt.h"
#include "evident/evidence/merkle.h"
#include "evident/evidence/runlog.h"
#include "evident/receipts/jcs.h"
#include "evident/receipts/receipt.h"

namespace evident {
namespace {

bool is_string(const Json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string();
}

bool exact_keys(const Json& o, std::initializer_list<const char*> keys) {
  if (!o.is_object() || o.size() != keys.size()) return false;
  for (const char* k : keys) {
    if (!o.contains(k)) return false;
  }
  return true;
}

const Json* member(const Json& o, const char* key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}


}  // namespace

Result<std::vector<Ed25519Key>> load_trusted_keys(const AuthOptions& options) {
  std::vector<Ed25519Key> keys;
  for (const auto& path : options.key_files) {
    auto k = load_public_key_file(path);
    if (!k.ok()) return k.error();
    keys.push_back(std::move(*k));
  }
  if (!options.trusted_keys_dir.empty()) {
    DIR* d = ::opendir(options.trusted_keys_dir.c_str());
    if (d == nullptr) return make_error("verify-usage", "--trusted-keys is not a readable directory");
    std::vector<std::string> names;
    bool too_many = false;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() < 5) continue;
      std::string ext = n.substr(n.size() - 4);
      if (ext != ".pub" && ext != ".pem") continue;
      if (names.size() >= kMaxTrustedKeys) {
        too_many = true;
        break;
      }
      names.push_back(n);
    }
    ::closedir(d);
    if (too_many) return make_error("verify-usage", "--trusted-keys holds more than 256 key files");
    std::sort(names.begin(), names.end());
    std::size_t before = keys.size();
    for (const auto& n : names) {
      auto k = load_public_key_file(options.trusted_keys_dir + "/" + n);
      if (!k.ok()) return k.error();
      keys.push_back(std::move(*k));
    }
    if (keys.size() == before) return make_error("verify-usage", "--trusted-keys holds no *.pub or *.pem key");
  }
  return keys;
}

AuthResult verify_receipt_envelope(const std::string& receipt_bytes, const Json& receipt,
                                   const std::string& envelope_path,
                                   const std::vector<Ed25519Key>& keys) {
  AuthResult out;
  auto add = [&](const char* name, bool ok, std::string detail) {
    out.checks.push_back(VerifyCheck{name, ok, std::move(detail)});
  };
  auto skip_rest = [&](std::size_t from) {
    static const char* kNames[] = {"envelope", "payload_type", "signature", "statement", "subjects", "log_inclusion"};
    for (std::size_t i = from; i < 6; ++i) add(kNames[i], false, "not checked: the envelope is unusable");
  };

  // 1. envelope: readable strict JSON of the DSSE shape, payload base64.
  struct stat st {};
  if (::stat(envelope_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    add("envelope", false, "no envelope file (receipt.dsse.json) beside the receipt");
    skip_rest(1);
    return out;
  }
  auto text = read_file(envelope_path, kMaxEnvelopeFileBytes);
  if (!text.ok()) {
    add("envelope", false, "the envelope is unreadable or larger than 1 MiB");
    skip_rest(1);
    return out;
  }
  auto env = parse_json_strict(*text, kMaxEnvelopeFileBytes, "envelope-json");
  if (!env.ok()) {
    add("envelope", false, "the envelope is not strict JSON: " + env.error().message);
    skip_rest(1);
    return out;
  }
  const Json& e = *env;
  std::optional<std::string> payload;
  std::string problem;
  if (!exact_keys(e, {"payload", "payloadType", "signatures"})) {
    problem = "the envelope must have exactly payload, payloadType and signatures";
  } else if (!e["payload"].is_string() || !e["payloadType"].is_string() || !e["signatures"].is_array()) {
    problem = "payload and payloadType must be strings and signatures an array";
  } else if (!(payload = base64_decode(e["payload"].get<std::string>()))) {
    problem = "payload is not standard padded base64";
  } else if (e["signatures"].empty()) {
    problem = "signatures is empty";
  } else {
    for (const auto& s : e["signatures"]) {
      if (!exact_keys(s, {"keyid", "sig"}) || !s["keyid"].is_string() || !s["sig"].is_string()) {
        problem = "each signature must be exactly {\"keyid\",\"sig\"} strings";
        break;
      }
    }
  }
  if (!problem.empty()) {
    add("envelope", false, problem);
    skip_rest(1);
    return out;
  }
  add("envelope", true, "a DSSE envelope");

  // 2. payload_type
  const std::string payload_type = e["payloadType"].get<std::string>();
  bool type_ok = payload_type == kDssePayloadType;
  add("payload_type", type_ok, type_ok ? std::string(kDssePayloadType) : "payloadType is not " + std::string(kDssePayloadType));

  // 3. signature: exactly one, 64 bytes, verifying over PAE with a trusted key.
  const Ed25519Key* signer = nullptr;
  {
    std::string detail;
    const Json& sigs = e["signatures"];
    if (sigs.size() != 1) {
      detail = "the envelope must carry exactly one signature (it has " + std::to_string(sigs.size()) + ")";
    } else {
      auto sig = base64_decode(sigs[0]["sig"].get<std::string>());
      if (!sig || sig->size() != kEd25519SignatureBytes) {
        detail = "sig is not 64 bytes of standard base64 (truncated or padded)";
      } else {
        std::string pae = dsse_pae(payload_type, *payload);
        // keyid is an unauthenticated hint: try the key it names first, then every trusted key.
        const std::string hint = sigs[0]["keyid"].get<std::string>();
        std::vector<const Ed25519Key*> order;
        for (const auto& k : keys) if (k.key_id() == hint) order.push_back(&k);
        for (const auto& k : keys) if (k.key_id() != hint) order.push_back(&k);
        for (const auto* k : order) {
          if (k->verify(pae, *sig)) {
            signer = k;
            break;
          }
        }
        if (signer == nullptr) detail = "the signature does not verify with any trusted key";
      }
    }
    add("signature", signer != nullptr, signer ? "Ed25519 over the DSSE PAE by " + signer->key_id() : detail);
  }

  // 4. statement
  Json statement;
  {
    std::string detail;
    auto st_json = parse_json_strict(*payload, kMaxEnvelopeFileBytes, "statement-json");
    if (!st_json.ok()) {
      detail = "the payload is not strict JSON";
    } else {
      statement = *st_json;
      const Json* pred = member(statement, "predicate");
      if (!exact_keys(statement, {"_type", "subject", "predicateType", "predicate"})) {
        detail = "the statement must have exactly _type, subject, predicateType and predicate";
      } else if (statement["_type"] != std::string(kStatementType)) {
        detail = "_type is not " + std::string(kStatementType);
      } else if (statement["predicateType"] != std::string(predicate_type_for(receipt))) {
        // A task receipt must be signed as one, a session receipt as one: a statement about the
        // other kind is refused.
        detail = "predicateType is not " + std::string(predicate_type_for(receipt)) +
                 " (the receipt's schema)";
      } else if (!exact_keys(*pred, {"receipt_id", "log"})) {
        detail = "the predicate must have exactly receipt_id and log";
      } else if (!receipt.is_object() || !receipt.contains("receipt_id") ||
                 (*pred)["receipt_id"] != receipt["receipt_id"]) {
        detail = "the predicate's receipt_id is not this receipt's";
      }
    }
    add("statement", detail.empty(), detail.empty() ? "in-toto Statement v1 about this receipt" : detail);
  }

  // 5. subjects: receipt.json = SHA-256 of the exact file bytes; then exactly the frames.
  {
    std::string detail;
    const Json* subj = member(statement, "subject");
    if (subj == nullptr || !subj->is_array() || subj->empty()) {
      detail = "the statement has no subjects";
    } else {
      const std::vector<std::pair<std::string, std::string>> want =
          receipt_subjects(receipt, sha256_hex(receipt_bytes));
      if (subj->size() != want.size()) {
        detail = "the statement names " + std::to_string(subj->size()) + " subjects; the receipt has " +
                 std::to_string(want.size()) + " (receipt.json and its frames)";
      }
      for (std::size_t i = 0; detail.empty() && i < want.size(); ++i) {
        const Json& s = (*subj)[i];
        const Json* digest = member(s, "digest");
        if (!exact_keys(s, {"name", "digest"}) || digest == nullptr || !exact_keys(*digest, {"sha256"}) ||
            !is_string(s, "name") || !is_string(*digest, "sha256")) {
          detail = "subject " + std::to_string(i) + " is not {\"name\",\"digest\":{\"sha256\"}}";
        } else if (s["name"] != want[i].first) {
          detail = "subject " + std::to_string(i) + " has the wrong name";
        } else if ((*digest)["sha256"] != want[i].second) {
          detail = i == 0 ? "receipt.json's SHA-256 differs from the signed one (the file was changed)"
                          : "subject " + std::to_string(i) + " has the wrong digest";
        }
      }
    }
    add("subjects", detail.empty(),
        detail.empty() ? "receipt.json bytes and " + std::to_string(subj->size() - 1) + " frame digests as signed" : detail);
  }

  // 6. log_inclusion: the entry describes this receipt, its leaf is in the signed tree head.
  {
    std::string detail;
    const Json* pred = member(statement, "predicate");
    const Json* log = pred ? member(*pred, "log") : nullptr;
    if (log == nullptr || log->is_null()) {
      detail = "the envelope carries no run-log entry";
    } else if (!exact_keys(*log, {"index", "tree_head", "entry", "inclusion_proof"}) ||
               !(*log)["index"].is_number_integer() || (*log)["index"].get<std::int64_t>() < 0 ||
               !(*log)["inclusion_proof"].is_array() || (*log)["inclusion_proof"].size() > 64) {
      detail = "log must be exactly {index, tree_head, entry, inclusion_proof}";
    } else if (signer == nullptr) {
      detail = "not checked: no trusted signature";
    } else if (std::string p = log_entry_problem((*log)["entry"]); !p.empty()) {
      detail = "log entry: " + p;
    } else if (std::string hp = tree_head_problem((*log)["tree_head"], *signer); !hp.empty()) {
      detail = hp;
    } else {
      const Json& entry = (*log)["entry"];
      const Json* binding = member(receipt, "binding");
      // A session's entry: kind "session", id session_id, job_sha256 of the binding; a task's:
      // kind "task", id task_id, task_sha256 of the receipt (docs/receipts.md §9, §12).
      const bool task = is_task_receipt(receipt);
      const bool digest_ok =
          task ? entry.value("task_sha256", Json()) == receipt.value("task_sha256", Json()) &&
                     !entry.contains("job_sha256")
               : binding != nullptr &&
                     entry.value("job_sha256", Json()) == binding->value("job_sha256", Json()) &&
                     !entry.contains("task_sha256");
      if (entry["kind"] != (task ? "task" : "session") || entry["outcome"] != "closed" ||
          entry["id"] != receipt.value(task ? "task_id" : "session_id", Json()) ||
          binding == nullptr || entry["attempt_id"] != binding->value("attempt_id", Json()) ||
          !digest_ok || entry["receipt_id"] != receipt.value("receipt_id", Json())) {
        detail = "the log entry does not describe this receipt (kind, id, attempt, job or task digest, outcome, receipt_id)";
      } else {
        std::vector<Hash32> proof;
        for (const auto& h : (*log)["inclusion_proof"]) {
          Hash32 x{};
          if (!h.is_string() || !hash_from_hex(h.get<std::string>(), &x)) {
            detail = "inclusion_proof holds a value that is not 64 lowercase hex";
            break;
          }
          proof.push_back(x);
        }
        if (detail.empty()) {
          auto jcs = canonicalize(entry);
          Hash32 root{};
          hash_from_hex((*log)["tree_head"]["root_hash"].get<std::string>(), &root);
          std::uint64_t index = (*log)["index"].get<std::uint64_t>();
          std::uint64_t size = (*log)["tree_head"]["tree_size"].get<std::uint64_t>();
          if (!jcs.ok() || !merkle_verify_inclusion(index, size, merkle_leaf_hash(*jcs), proof, root)) {
            detail = "the inclusion proof does not lead to the signed tree head's root";
          } else {
            detail = "";
            out.checks.push_back(VerifyCheck{"log_inclusion", true,
                                             "entry " + std::to_string(index) + " of a signed tree of " +
                                                 std::to_string(size)});
          }
        }
      }
    }
    if (!detail.empty()) add("log_inclusion", false, detail);
  }

  out.authenticated = std::all_of(out.checks.begin(), out.checks.end(), [](const VerifyCheck& c) { return c.ok; });
  if (signer != nullptr) out.key_id = signer->key_id();
  return out;
}

Status SignedVerifyExtension::prepare() {
  auto keys = load_trusted_keys(options_);
  if (!keys.ok()) return keys.error();
  keys_ = std::move(*keys);
  return {};
}

void SignedVerifyExtension::run(const std::string& receipt_path, const std::string& receipt_bytes,
                                const Json& receipt, VerifyReport& report, Json& extra,
                                std::string& note) {
  if (keys_.empty()) return;  // the command's default: unauthenticated, with its note
  std::string envelope = options_.envelope_path;
  if (envelope.empty()) {
    auto slash = receipt_path.rfind('/');
    envelope = (slash == std::string::npos ? std::string(".") : receipt_path.substr(0, slash)) + "/" +
               std::string(kEnvelopeFileName);
  }
  bool receipt_ok = report.ok;
  AuthResult auth = verify_receipt_envelope(receipt_bytes, receipt, envelope, keys_);
  for (auto& c : auth.checks) report.checks.push_back(std::move(c));
  bool authenticated = receipt_ok && auth.authenticated;
  extra["authenticated"] = authenticated;
  extra["key_id"] = authenticated ? auth.key_id : Json(nullptr);
  note = authenticated ? "authenticated: signed by " + auth.key_id.get<std::string>() +
                             " (a key you trust; see docs/receipts.md, threat model)"
                       : "NOT AUTHENTICATED: the signature, subject or log checks failed";
}

}  // namespace evident
