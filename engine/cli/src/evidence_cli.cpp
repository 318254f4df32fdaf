#include "evidence_cli.h"

#include <iostream>

#include "evident/core/fs.h"
#include "evident/core/error_json.h"
#include "evident/core/json.h"
#include "evident/evidence/commitments.h"
#include "evident/receipts/jcs.h"
#include "evident/evidence/keys.h"
#include "evident/receipts/receipt.h"
#include "evident/receipts/verify.h"
#include "evident/evidence/runlog.h"

namespace evident {
namespace {

constexpr std::uint64_t kMaxShowLimit = 100000;

int emit_error(bool json, const Error& e, int status) {
  if (json) {
    std::cout << dump_json(error_response(e))
              << std::endl;
  } else {
    std::cerr << "evident: error [" << e.code << "]: " << e.message << std::endl;
  }
  return status;
}

int emit_ok(bool json, Json result, const std::string& human) {
  if (json) {
    Json out{{"ok", true}};
    for (auto it = result.begin(); it != result.end(); ++it) out[it.key()] = it.value();
    std::cout << dump_json(out) << std::endl;
  } else {
    std::cout << human;
  }
  return 0;
}

std::string state_dir_of(const EvidenceCli& cli) {
  return cli.state_dir.empty() ? default_state_dir() : cli.state_dir;
}

Json key_json(const Ed25519Key& k, const std::string& state_dir) {
  KeyPaths p = key_paths(state_dir);
  return Json{{"key_id", k.key_id()},
              {"public_key_pem", k.public_pem()},
              {"private_key_path", p.private_path},
              {"public_key_path", p.public_path}};
}

void add_state_dir(CLI::App* c, EvidenceCli& cli) {
  c->add_option("--state-dir", cli.state_dir, "the state directory (default " + default_state_dir() + ")");
}

// evident disclose: the receipt must verify (a disclosure of a receipt that does not is
// worthless), then the private record gives salt and value, checked against the commitment.
// The value is printed only when asked for on stdout; with -o it goes to the file alone.
int run_disclose(const EvidenceCli& cli, const std::string& state, bool json) {
  if (cli.disclose_action < 0) {
    return emit_error(json, make_error("disclosure-action", "--action must be an integer >= 0"), 2);
  }
  auto receipt = load_receipt_file(cli.disclose_receipt);
  if (!receipt.ok()) return emit_error(json, receipt.error(), 1);
  VerifyReport report = verify_receipt(*receipt, VerifyOptions{});
  if (!report.ok) {
    std::string failed;
    for (const auto& n : report.failed_names()) failed += (failed.empty() ? "" : ", ") + n;
    return emit_error(json, make_error("verify-failed", "the receipt does not verify (failed checks: " +
                                                            failed + "); nothing disclosed"), 1);
  }
  auto d = disclose_action(state, *receipt, cli.disclose_action);
  if (!d.ok()) return emit_error(json, d.error(), 1);
  auto bytes = canonicalize(*d);
  if (!bytes.ok()) return emit_error(json, bytes.error(), 1);
  bytes->push_back('\n');
  if (cli.disclose_out.empty()) {
    if (json) return emit_ok(json, Json{{"disclosure", *d}}, "");
    std::cout << *bytes;
    return 0;
  }
  if (auto st = write_file_atomic(cli.disclose_out, *bytes, 0600); !st) {
    return emit_error(json, make_error("fs-error", "cannot write the disclosure file", st.error().retryable),
                      1);
  }
  Json result{{"path", cli.disclose_out},
              {"receipt_id", (*d)["receipt_id"]},
              {"action_index", (*d)["action_index"]},
              {"action", (*d)["action"]}};
  return emit_ok(json, result,
                 "wrote the disclosure of action " + std::to_string(cli.disclose_action) + " to " +
                     cli.disclose_out + "\n");
}

}  // namespace

void add_evidence_commands(CLI::App& app, EvidenceCli& cli) {
  auto* key = app.add_subcommand("key", "the signing key (Ed25519) in the state directory");
  key->require_subcommand(1);
  cli.key_init = key->add_subcommand("init", "create the signing key if there is none; print it");
  cli.key_show = key->add_subcommand("show", "print the signing key's id and public key");
  add_state_dir(cli.key_init, cli);
  add_state_dir(cli.key_show, cli);

  auto* log = app.add_subcommand("log", "the run log: every ended session, a signed Merkle log");
  log->require_subcommand(1);
  cli.log_show = log->add_subcommand("show", "the signed tree head and the entries");
  cli.log_show->add_option("--from", cli.from, "the first index")->capture_default_str();
  cli.log_show->add_option("--limit", cli.limit, "at most this many entries (<= 100000)")->capture_default_str();
  cli.log_show->add_option("--attempt", cli.attempt, "only entries of this attempt_id");
  cli.log_show->add_option("--job", cli.job, "only entries of this job_sha256");
  cli.log_prove = log->add_subcommand("prove", "inclusion proof of an entry: ID|INDEX [--tree-size N]");
  cli.log_prove->add_option("TARGET", cli.target, "a session id or an index")->required();
  cli.log_prove->add_option("--tree-size", cli.tree_size, "prove against this older tree size");
  cli.log_consistency = log->add_subcommand("consistency", "consistency proof between two tree sizes");
  cli.log_consistency->add_option("OLD", cli.old_size)->required();
  cli.log_consistency->add_option("NEW", cli.new_size)->required();
  cli.log_verify = log->add_subcommand("verify", "recompute the whole log and check the signed head");
  for (auto* c : {cli.log_show, cli.log_prove, cli.log_consistency, cli.log_verify}) add_state_dir(c, cli);

  cli.disclose = app.add_subcommand(
      "disclose", "reveal one committed action (salt and value) of a receipt this state dir closed");
  cli.disclose->add_option("RECEIPT", cli.disclose_receipt, "the receipt (receipt.json)")->required();
  cli.disclose->add_option("--action", cli.disclose_action,
                           "the action's 0-based index among the receipt's actions")->required();
  cli.disclose->add_option("-o,--out", cli.disclose_out,
                           "write the disclosure here (0600) instead of stdout");
  add_state_dir(cli.disclose, cli);

}

std::optional<int> run_evidence_commands(EvidenceCli& cli, bool json) {
  const std::string state = state_dir_of(cli);
  if (cli.key_init->parsed()) {
    bool created = false;
    auto k = load_or_create_signing_key(state, &created);
    if (!k.ok()) return emit_error(json, k.error(), 1);
    Json j = key_json(*k, state);
    j["created"] = created;
    return emit_ok(json, j, std::string(created ? "created " : "exists  ") + k->key_id() + "\n" + k->public_pem());
  }
  if (cli.key_show->parsed()) {
    auto k = load_signing_key(state);
    if (!k.ok()) return emit_error(json, k.error(), 1);
    return emit_ok(json, key_json(*k, state), k->key_id() + "\n" + k->public_pem());
  }
  if (cli.disclose->parsed()) return run_disclose(cli, state, json);
  if (!cli.log_show->parsed() && !cli.log_prove->parsed() && !cli.log_consistency->parsed() &&
      !cli.log_verify->parsed()) {
    return std::nullopt;
  }
  RunLog log(state);
  if (cli.log_show->parsed()) {
    if (cli.limit > kMaxShowLimit) return emit_error(json, make_error("usage", "--limit is at most 100000"), 2);
    auto head = log.head();
    if (!head.ok()) return emit_error(json, head.error(), 1);
    auto entries = log.entries(cli.from, cli.attempt.empty() && cli.job.empty() ? cli.limit : kMaxLogEntries);
    if (!entries.ok()) return emit_error(json, entries.error(), 1);
    Json shown = Json::array();
    for (const auto& e : *entries) {
      const Json& en = e["entry"];
      if (!cli.attempt.empty() && en.value("attempt_id", Json()) != cli.attempt) continue;
      if (!cli.job.empty() && en.value("job_sha256", Json()) != cli.job && en.value("task_sha256", Json()) != cli.job) continue;
      if (shown.size() >= cli.limit) break;
      shown.push_back(e);
    }
    std::string human = head->is_null() ? "empty log\n"
                                         : "tree_size " + std::to_string((*head)["tree_size"].get<std::uint64_t>()) +
                                               " root " + (*head)["root_hash"].get<std::string>() + " at " +
                                               (*head)["timestamp"].get<std::string>() + "\n";
    for (const auto& e : shown) {
      const Json& en = e["entry"];
      human += std::to_string(e["index"].get<std::uint64_t>()) + "  " + en.value("ended_at", "") + "  " +
               en.value("outcome", "") + "  " + en.value("id", "") + "  attempt=" + en.value("attempt_id", "") +
               "  receipt=" + (en.value("receipt_id", Json()).is_string() ? en["receipt_id"].get<std::string>() : "-") + "\n";
    }
    return emit_ok(json, Json{{"tree_head", *head}, {"entries", shown}}, human);
  }
  if (cli.log_prove->parsed()) {
    std::uint64_t index = 0;
    bool numeric = !cli.target.empty() && cli.target.size() <= 15 &&
                   cli.target.find_first_not_of("0123456789") == std::string::npos;
    if (numeric) {
      index = std::stoull(cli.target);
    } else {
      auto found = log.find(cli.target);
      if (!found.ok()) return emit_error(json, found.error(), 1);
      index = *found;
    }
    auto proof = log.prove(index, cli.tree_size);
    if (!proof.ok()) return emit_error(json, proof.error(), 1);
    std::string human = "entry " + std::to_string(index) + " in a tree of " +
                        std::to_string((*proof)["tree_size"].get<std::uint64_t>()) + " (root " +
                        (*proof)["root_hash"].get<std::string>() + "), leaf " +
                        (*proof)["leaf_hash"].get<std::string>() + "\n";
    for (const auto& h : (*proof)["inclusion_proof"]) human += "  " + h.get<std::string>() + "\n";
    return emit_ok(json, *proof, human);
  }
  if (cli.log_consistency->parsed()) {
    auto proof = log.consistency(cli.old_size, cli.new_size);
    if (!proof.ok()) return emit_error(json, proof.error(), 1);
    std::string human = "tree " + std::to_string(cli.old_size) + " (" + (*proof)["old_root"].get<std::string>() +
                        ") is a prefix of tree " + std::to_string(cli.new_size) + " (" +
                        (*proof)["new_root"].get<std::string>() + ")\n";
    for (const auto& h : (*proof)["proof"]) human += "  " + h.get<std::string>() + "\n";
    return emit_ok(json, *proof, human);
  }
  // log verify
  auto key = load_signing_key(state);
  if (!key.ok()) return emit_error(json, key.error(), 1);
  Json checks = log.verify(*key);
  bool ok = true;
  std::string failed, human;
  for (const auto& c : checks) {
    bool cok = c["ok"].get<bool>();
    ok = ok && cok;
    if (!cok) failed += (failed.empty() ? "" : ", ") + c["name"].get<std::string>();
    human += std::string("  ") + (cok ? "ok  " : "FAIL") + "  " + c["name"].get<std::string>() + ": " +
             c["detail"].get<std::string>() + "\n";
  }
  if (!ok) {
    if (json) {
      Json refused = error_response(make_error("log-verify-failed", "failed checks: " + failed));
      refused["checks"] = checks;
      std::cout << dump_json(refused)
                << std::endl;
    } else {
      std::cout << human << "run log verification failed: " << failed << "\n";
    }
    return 1;
  }
  return emit_ok(json, Json{{"checks", checks}}, human + "run log verified\n");
}

}  // namespace evident
