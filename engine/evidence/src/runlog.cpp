#include "evident/evidence/runlog.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <set>

#include "evident/core/clock.h"
#include "evident/core/fs.h"
#include "evident/core/sha256.h"
#include "evident/evidence/dsse.h"
#include "evident/receipts/jcs.h"

namespace evident {
namespace {

constexpr std::size_t kMaxStateBytes = 64 * 1024;

Error log_fs_error(const std::string& what, int err) {
  return make_error("fs-error", "run log: " + what + ": " + std::strerror(err), fs_retryable_errno(err));
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// flock on <dir>/lock for the lifetime of the object.
class LogLock {
 public:
  LogLock(const std::string& dir, bool exclusive)
      : fd_(::open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_.get() < 0) {
      err_ = errno;
      return;
    }
    while (::flock(fd_.get(), exclusive ? LOCK_EX : LOCK_SH) != 0) {
      if (errno != EINTR) {
        err_ = errno;
        return;
      }
    }
  }
  int error() const { return err_; }

 private:
  Fd fd_;
  int err_ = 0;
};

Status write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return log_fs_error("write", errno);
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return {};
}

bool is_rfc3339_ms(const Json& v) {
  std::int64_t ms = 0;
  return v.is_string() && parse_rfc3339_ms(v.get<std::string>(), &ms);
}

bool is_hex64(const Json& v) {
  return v.is_string() && is_lower_hex(v.get_ref<const std::string&>(), 64);
}

Json hashes_hex(const std::vector<Hash32>& v) {
  Json a = Json::array();
  for (const auto& h : v) a.push_back(hash_hex(h));
  return a;
}

}  // namespace

std::string log_entry_problem(const Json& e) {
  if (!e.is_object()) return "the entry is not an object";
  auto kind = e.find("kind");
  if (kind == e.end() || !kind->is_string()) return "kind is missing";
  const std::string& k = kind->get_ref<const std::string&>();
  std::string digest_key;
  if (k == "session") digest_key = "job_sha256";
  else if (k == "task") digest_key = "task_sha256";
  else return "kind must be session or task";
  if (e.size() != 7) return "the entry must have exactly 7 members";
  static const std::set<std::string> kOutcomes = {"closed", "aborted", "failed", "expired"};
  for (const char* key : {"id", "attempt_id", "outcome", "receipt_id", "ended_at"}) {
    if (!e.contains(key)) return std::string(key) + " is missing";
  }
  if (!e.contains(digest_key)) return digest_key + " is missing";
  const Json& id = e["id"];
  if (!id.is_string() || id.get_ref<const std::string&>().empty() ||
      id.get_ref<const std::string&>().size() > 64) {
    return "id must be a string of 1..64 bytes";
  }
  const Json& attempt = e["attempt_id"];
  if (!attempt.is_string() || attempt.get_ref<const std::string&>().empty() ||
      attempt.get_ref<const std::string&>().size() > 256) {
    return "attempt_id must be a string of 1..256 bytes";
  }
  if (!is_hex64(e[digest_key])) return digest_key + " must be 64 lowercase hex";
  const Json& outcome = e["outcome"];
  if (!outcome.is_string() || !kOutcomes.count(outcome.get<std::string>())) {
    return "outcome must be closed, aborted, failed or expired";
  }
  const Json& rid = e["receipt_id"];
  bool closed = outcome.get<std::string>() == "closed";
  if (closed) {
    if (!rid.is_string() || rid.get_ref<const std::string&>().size() != 68 ||
        rid.get_ref<const std::string&>().compare(0, 4, k == "task" ? "etr-" : "ecr-") != 0 ||
        !is_lower_hex(std::string_view(rid.get_ref<const std::string&>()).substr(4), 64)) {
      return "a closed run's receipt_id must be ecr- (session) or etr- (task) + 64 hex";
    }
  } else if (!rid.is_null()) {
    return "only a closed run has a receipt_id";
  }
  if (!is_rfc3339_ms(e["ended_at"])) return "ended_at must be an RFC 3339 time with ms and Z";
  return "";
}

Result<Json> sign_tree_head(const Ed25519Key& key, std::uint64_t tree_size, const Hash32& root,
                            const std::string& timestamp) {
  Json unsigned_head{{"tree_size", tree_size}, {"root_hash", hash_hex(root)}, {"timestamp", timestamp}};
  auto h = domain_digest(kDomainTreeHead, unsigned_head);
  if (!h.ok()) return h.error();
  Hash32 raw{};
  hash_from_hex(*h, &raw);
  auto sig = key.sign(std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size()));
  if (!sig.ok()) return sig.error();
  Json head = unsigned_head;
  head["key_id"] = key.key_id();
  head["signature"] = base64_encode(*sig);
  return head;
}

std::string tree_head_problem(const Json& head, const Ed25519Key& key) {
  if (!head.is_object() || head.size() != 5) return "the tree head must have exactly 5 members";
  for (const char* k : {"tree_size", "root_hash", "timestamp", "key_id", "signature"}) {
    if (!head.contains(k)) return std::string("tree head: ") + k + " is missing";
  }
  const Json& size = head["tree_size"];
  if (!size.is_number_unsigned() && !(size.is_number_integer() && size.get<std::int64_t>() >= 0)) {
    return "tree head: tree_size must be an integer >= 0";
  }
  if (!is_hex64(head["root_hash"])) return "tree head: root_hash must be 64 lowercase hex";
  if (!is_rfc3339_ms(head["timestamp"])) return "tree head: timestamp must be RFC 3339 with ms";
  if (!head["key_id"].is_string() || !head["signature"].is_string()) {
    return "tree head: key_id and signature must be strings";
  }
  if (head["key_id"].get<std::string>() != key.key_id()) return "tree head: signed by another key";
  auto sig = base64_decode(head["signature"].get<std::string>());
  if (!sig || sig->size() != kEd25519SignatureBytes) return "tree head: signature is not 64 bytes of base64";
  Json unsigned_head{{"tree_size", size}, {"root_hash", head["root_hash"]}, {"timestamp", head["timestamp"]}};
  auto h = domain_digest(kDomainTreeHead, unsigned_head);
  if (!h.ok()) return "tree head: not canonical";
  Hash32 raw{};
  hash_from_hex(*h, &raw);
  if (!key.verify(std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size()), *sig)) {
    return "tree head: the signature does not verify";
  }
  return "";
}

struct RunLog::State {
  std::uint64_t tree_size = 0;
  std::uint64_t entries_bytes = 0;
  CompactRange compact;
  Json head = nullptr;
};

RunLog::RunLog(std::string state_dir) : dir_(std::move(state_dir) + "/log") {}

Result<RunLog::State> RunLog::load_state() const {
  State s;
  struct stat st {};
  std::string path = dir_ + "/state.json";
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return s;
    return log_fs_error("stat state.json", errno);
  }
  auto text = read_file(path, kMaxStateBytes);
  if (!text.ok()) return make_error("log-corrupt", "run log: state.json is unreadable");
  auto j = parse_json_strict(*text, kMaxStateBytes, "log-corrupt");
  if (!j.ok()) return make_error("log-corrupt", "run log: state.json is not strict JSON");
  try {
    s.tree_size = (*j).at("tree_size").get<std::uint64_t>();
    s.entries_bytes = (*j).at("entries_bytes").get<std::uint64_t>();
    s.head = (*j).at("head");
    s.compact.size = s.tree_size;
    for (const auto& h : (*j).at("compact")) {
      Hash32 x{};
      if (!h.is_string() || !hash_from_hex(h.get<std::string>(), &x)) throw std::runtime_error("hash");
      s.compact.nodes.push_back(x);
    }
  } catch (const std::exception&) {
    return make_error("log-corrupt", "run log: state.json has the wrong shape");
  }
  if (static_cast<std::uint64_t>(std::popcount(s.tree_size)) != s.compact.nodes.size()) {
    return make_error("log-corrupt", "run log: state.json's right edge does not match its size");
  }
  return s;
}

std::uint64_t RunLog::size() const {
  auto s = load_state();
  return s.ok() ? s->tree_size : 0;
}

Result<Json> RunLog::head() const {
  auto s = load_state();
  if (!s.ok()) return s.error();
  return s->head;
}

Result<LogAppendResult> RunLog::append(const Json& entry, const Ed25519Key& key, bool sync) {
  if (std::string p = log_entry_problem(entry); !p.empty()) {
    return make_error("log-entry-invalid", "run log entry: " + p);
  }
  auto line = canonicalize(entry);
  if (!line.ok()) return make_error("log-entry-invalid", "run log entry is not canonical JSON");
  if (line->size() > kMaxLogEntryBytes) return make_error("log-entry-invalid", "run log entry is too large");
  if (auto st = make_private_dir(dir_); !st) return st.error();
  LogLock lock(dir_, true);
  if (lock.error()) return log_fs_error("lock", lock.error());
  auto s = load_state();
  if (!s.ok()) return s.error();
  if (s->tree_size >= kMaxLogEntries) return make_error("log-corrupt", "run log is full");

  Hash32 leaf = merkle_leaf_hash(*line);
  // Entries and leaves: cut anything a crashed append left beyond what state.json counts.
  Fd entries(::open((dir_ + "/entries.jsonl").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  Fd leaves(::open((dir_ + "/leaves.bin").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  if (entries.get() < 0 || leaves.get() < 0) return log_fs_error("open", errno);
  struct stat est {}, lst {};
  if (::fstat(entries.get(), &est) != 0 || ::fstat(leaves.get(), &lst) != 0) return log_fs_error("stat", errno);
  if (static_cast<std::uint64_t>(est.st_size) < s->entries_bytes ||
      static_cast<std::uint64_t>(lst.st_size) < s->tree_size * 32) {
    return make_error("log-corrupt", "run log: entries.jsonl or leaves.bin is shorter than state.json says");
  }
  if (::ftruncate(entries.get(), static_cast<off_t>(s->entries_bytes)) != 0 ||
      ::ftruncate(leaves.get(), static_cast<off_t>(s->tree_size * 32)) != 0) {
    return log_fs_error("truncate", errno);
  }
  if (::lseek(entries.get(), 0, SEEK_END) < 0 || ::lseek(leaves.get(), 0, SEEK_END) < 0) {
    return log_fs_error("seek", errno);
  }
  std::string with_nl = *line + "\n";
  EVIDENT_TRY(write_all(entries.get(), with_nl.data(), with_nl.size()));
  EVIDENT_TRY(write_all(leaves.get(), leaf.data(), leaf.size()));
  if (sync && (::fdatasync(entries.get()) != 0 || ::fdatasync(leaves.get()) != 0)) {
    return log_fs_error("fsync", errno);
  }

  LogAppendResult out;
  out.index = s->tree_size;
  out.entry = entry;
  out.inclusion_proof = s->compact.append(leaf);
  auto head = sign_tree_head(key, s->compact.size, s->compact.root(), format_rfc3339_ms(SystemClock::instance().wall_ms()));
  if (!head.ok()) return head.error();
  out.tree_head = *head;

  Json state{{"tree_size", s->compact.size},
             {"entries_bytes", s->entries_bytes + with_nl.size()},
             {"compact", hashes_hex(s->compact.nodes)},
             {"head", *head}};
  std::string bytes = dump_json(state) + "\n";
  if (sync) {
    EVIDENT_TRY(write_file_atomic(dir_ + "/state.json", bytes, 0600));
  } else {
    std::string tmp = dir_ + "/state.json.tmp";
    Fd f(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (f.get() < 0) return log_fs_error("open state", errno);
    EVIDENT_TRY(write_all(f.get(), bytes.data(), bytes.size()));
    if (::rename(tmp.c_str(), (dir_ + "/state.json").c_str()) != 0) return log_fs_error("rename", errno);
  }
  return out;
}

Result<Hash32> RunLog::leaf_at(std::uint64_t index) const {
  Fd f(::open((dir_ + "/leaves.bin").c_str(), O_RDONLY | O_CLOEXEC));
  if (f.get() < 0) return log_fs_error("open leaves.bin", errno);
  Hash32 h{};
  ssize_t n = ::pread(f.get(), h.data(), 32, static_cast<off_t>(index * 32));
  if (n != 32) return make_error("log-corrupt", "run log: leaves.bin is short");
  return h;
}

namespace {

// Reads the first `count` leaf hashes (one read; proofs at 10^6 leaves touch every one).
Result<std::vector<Hash32>> read_leaves(const std::string& dir, std::uint64_t count) {
  std::vector<Hash32> v;
  if (count == 0) return v;
  Fd f(::open((dir + "/leaves.bin").c_str(), O_RDONLY | O_CLOEXEC));
  if (f.get() < 0) return log_fs_error("open leaves.bin", errno);
  // state.json's count is checked against the file before anything is allocated for it: a
  // damaged state.json must not make a reader allocate what the disk does not hold.
  struct stat st {};
  if (::fstat(f.get(), &st) != 0) return log_fs_error("stat leaves.bin", errno);
  if (count > static_cast<std::uint64_t>(st.st_size) / 32) {
    return make_error("log-corrupt", "run log: leaves.bin is shorter than the tree");
  }
  v.resize(count);
  std::size_t want = count * 32;
  std::size_t got = 0;
  auto* p = reinterpret_cast<char*>(v.data());
  while (got < want) {
    ssize_t n = ::pread(f.get(), p + got, want - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error("log-corrupt", "run log: leaves.bin is shorter than the tree");
    got += static_cast<std::size_t>(n);
  }
  return v;
}

// Reads entries.jsonl lines [from, from+limit) (stops at the state's byte count).
Result<std::vector<std::string>> read_lines(const std::string& dir, std::uint64_t bytes_limit,
                                            std::uint64_t from, std::uint64_t limit) {
  std::vector<std::string> out;
  if (bytes_limit == 0) return out;
  // Exactly the bytes state.json counts: a crashed append may have left more.
  Fd f(::open((dir + "/entries.jsonl").c_str(), O_RDONLY | O_CLOEXEC));
  if (f.get() < 0) return make_error("log-corrupt", "run log: entries.jsonl is unreadable");
  struct stat st {};
  if (::fstat(f.get(), &st) != 0) return log_fs_error("stat entries.jsonl", errno);
  if (bytes_limit > static_cast<std::uint64_t>(st.st_size)) {
    return make_error("log-corrupt", "run log: entries.jsonl is short");
  }
  std::string text(static_cast<std::size_t>(bytes_limit), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::pread(f.get(), text.data() + got, text.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error("log-corrupt", "run log: entries.jsonl is short");
    got += static_cast<std::size_t>(n);
  }
  std::string_view all(text);
  std::uint64_t i = 0;
  std::size_t pos = 0;
  while (pos < all.size() && out.size() < limit) {
    std::size_t nl = all.find('\n', pos);
    if (nl == std::string_view::npos) return make_error("log-corrupt", "run log: a line has no end");
    if (i >= from) out.emplace_back(all.substr(pos, nl - pos));
    pos = nl + 1;
    ++i;
  }
  return out;
}

}  // namespace

Result<Json> RunLog::entries(std::uint64_t from, std::uint64_t limit) const {
  LogLock lock(dir_, false);
  auto s = load_state();
  if (!s.ok()) return s.error();
  Json out = Json::array();
  if (from >= s->tree_size) return out;
  auto lines = read_lines(dir_, s->entries_bytes, from, limit);
  if (!lines.ok()) return lines.error();
  for (std::size_t i = 0; i < lines->size(); ++i) {
    auto e = parse_json_strict((*lines)[i], kMaxLogEntryBytes + 1, "log-corrupt");
    if (!e.ok()) return make_error("log-corrupt", "run log: entry " + std::to_string(from + i) + " is not JSON");
    out.push_back(Json{{"index", from + i},
                       {"entry", *e},
                       {"leaf_hash", hash_hex(merkle_leaf_hash((*lines)[i]))}});
  }
  return out;
}

Result<std::uint64_t> RunLog::find(const std::string& id) const {
  auto all = entries(0, kMaxLogEntries);
  if (!all.ok()) return all.error();
  for (const auto& e : *all) {
    const Json& entry = e["entry"];
    if (entry.is_object() && entry.contains("id") && entry["id"] == id) return e["index"].get<std::uint64_t>();
  }
  return make_error("log-not-found", "no run-log entry has that id");
}

Result<Json> RunLog::prove(std::uint64_t index, std::uint64_t tree_size) const {
  LogLock lock(dir_, false);
  auto s = load_state();
  if (!s.ok()) return s.error();
  if (tree_size == 0) tree_size = s->tree_size;
  if (tree_size > s->tree_size) {
    return make_error("log-tree-size", "the log has only " + std::to_string(s->tree_size) + " entries");
  }
  if (index >= tree_size) {
    return make_error("log-not-found", "index " + std::to_string(index) + " is not in a tree of " +
                                           std::to_string(tree_size) + " entries");
  }
  auto leaves = read_leaves(dir_, tree_size);
  if (!leaves.ok()) return leaves.error();
  LeafSource src = [&](std::uint64_t i) { return (*leaves)[i]; };
  auto lines = read_lines(dir_, s->entries_bytes, index, 1);
  if (!lines.ok()) return lines.error();
  if (lines->size() != 1) return make_error("log-corrupt", "run log: entry missing");
  auto entry = parse_json_strict((*lines)[0], kMaxLogEntryBytes + 1, "log-corrupt");
  if (!entry.ok()) return make_error("log-corrupt", "run log: entry is not JSON");
  auto proof = merkle_inclusion_proof(src, index, tree_size);
  return Json{{"index", index},
              {"tree_size", tree_size},
              {"entry", *entry},
              {"leaf_hash", hash_hex((*leaves)[index])},
              {"root_hash", hash_hex(merkle_subtree_hash(src, 0, tree_size))},
              {"inclusion_proof", hashes_hex(proof)}};
}

Result<Json> RunLog::consistency(std::uint64_t old_size, std::uint64_t new_size) const {
  LogLock lock(dir_, false);
  auto s = load_state();
  if (!s.ok()) return s.error();
  if (old_size > new_size || new_size > s->tree_size) {
    return make_error("log-tree-size", "need OLD <= NEW <= " + std::to_string(s->tree_size));
  }
  auto leaves = read_leaves(dir_, new_size);
  if (!leaves.ok()) return leaves.error();
  LeafSource src = [&](std::uint64_t i) { return (*leaves)[i]; };
  return Json{{"old_size", old_size},
              {"new_size", new_size},
              {"old_root", hash_hex(merkle_subtree_hash(src, 0, old_size))},
              {"new_root", hash_hex(merkle_subtree_hash(src, 0, new_size))},
              {"proof", hashes_hex(merkle_consistency_proof(src, old_size, new_size))}};
}

Json RunLog::verify(const Ed25519Key& key) const {
  Json checks = Json::array();
  auto add = [&](const std::string& name, bool ok, const std::string& detail) {
    checks.push_back(Json{{"name", name}, {"ok", ok}, {"detail", detail}});
  };
  LogLock lock(dir_, false);
  auto s = load_state();
  if (!s.ok()) {
    add("log_state", false, s.error().message);
    return checks;
  }
  add("log_state", true, std::to_string(s->tree_size) + " entries");
  auto lines = read_lines(dir_, s->entries_bytes, 0, kMaxLogEntries);
  auto leaves = read_leaves(dir_, s->tree_size);
  if (!lines.ok() || !leaves.ok()) {
    add("log_entries", false, !lines.ok() ? lines.error().message : leaves.error().message);
    return checks;
  }
  std::string bad;
  if (lines->size() != s->tree_size) bad = "entries.jsonl has " + std::to_string(lines->size()) + " lines";
  CompactRange recomputed;
  for (std::size_t i = 0; i < lines->size() && bad.empty(); ++i) {
    const std::string& line = (*lines)[i];
    auto e = parse_json_strict(line, kMaxLogEntryBytes + 1, "log-corrupt");
    if (!e.ok()) bad = "entry " + std::to_string(i) + " is not strict JSON";
    else if (std::string p = log_entry_problem(*e); !p.empty()) bad = "entry " + std::to_string(i) + ": " + p;
    else if (auto c = canonicalize(*e); !c.ok() || *c != line) bad = "entry " + std::to_string(i) + " is not JCS";
    else if (merkle_leaf_hash(line) != (*leaves)[i]) bad = "entry " + std::to_string(i) + " does not match leaves.bin";
    else (void)recomputed.append((*leaves)[i]);
  }
  add("log_entries", bad.empty(), bad.empty() ? "every entry is a valid JCS entry with its leaf hash" : bad);
  bool edge_ok = bad.empty() && recomputed.nodes == s->compact.nodes;
  add("log_root", edge_ok, edge_ok ? "root " + hash_hex(recomputed.root()) : "the recomputed tree differs from state.json");
  if (s->tree_size == 0) {
    add("log_head", s->head.is_null(), s->head.is_null() ? "empty log" : "an empty log has a head");
    return checks;
  }
  std::string hp = tree_head_problem(s->head, key);
  if (hp.empty() && (s->head["tree_size"].get<std::uint64_t>() != s->tree_size ||
                     s->head["root_hash"].get<std::string>() != hash_hex(recomputed.root()))) {
    hp = "the signed head is not the current tree";
  }
  add("log_head", hp.empty(), hp.empty() ? "signed by " + key.key_id() : hp);
  return checks;
}

}  // namespace evident
