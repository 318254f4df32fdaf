// Keys, PAE, base64 and statements against published vectors (RFC 8032, RFC 4648, the DSSE
// spec) and the openssl command line — never against values this module computed.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "evident/core/sha256.h"
#include "evident/evidence/dsse.h"
#include "evident/evidence/keys.h"
#include "evident/testing/files.h"
#include "evident/testing/process.h"

namespace evident {
namespace {

using testing::run_command;
using testing::shell_quote;
using testing::TempDir;

std::string unhex(const std::string& h) {
  std::string out;
  for (std::size_t i = 0; i < h.size(); i += 2) out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

TEST(Dsse, PaeMatchesTheSpecVector) {
  // github.com/secure-systems-lab/dsse protocol.md, "Test Vectors".
  EXPECT_EQ(dsse_pae("http://example.com/HelloWorld", "hello world"),
            "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
  EXPECT_EQ(dsse_pae("", ""), "DSSEv1 0  0 ");
}

TEST(Base64, Rfc4648VectorsAndStrictDecoding) {
  const std::pair<const char*, const char*> kVectors[] = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, enc] : kVectors) {
    EXPECT_EQ(base64_encode(plain), enc);
    auto d = base64_decode(enc);
    ASSERT_TRUE(d.has_value()) << enc;
    EXPECT_EQ(*d, plain);
  }
  for (const char* bad : {"Zg=", "Zg", "Zh==", "Zm9=", "Z===", "Zm9v\n", "Zm-v", "Zm_v", "====", "Zg==Zg==", " Zg=="}) {
    EXPECT_FALSE(base64_decode(bad).has_value()) << bad;
  }
}

TEST(Base64, DecodingIsCanonicalAndInvertsEncoding) {
  // Every length 0..70 of bytes from a fixed LCG round-trips; every one-character change of an
  // encoding is refused or decodes to bytes whose encoding is the changed text (one text per
  // byte string: no second spelling, no ignored pad bits).
  std::uint32_t x = 12345;
  const std::string digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \n";
  for (std::size_t n = 0; n <= 70; ++n) {
    std::string plain;
    for (std::size_t i = 0; i < n; ++i) {
      x = x * 1664525u + 1013904223u;
      plain.push_back(static_cast<char>(x >> 24));
    }
    const std::string enc = base64_encode(plain);
    auto d = base64_decode(enc);
    ASSERT_TRUE(d.has_value()) << n;
    ASSERT_EQ(*d, plain) << n;
    for (std::size_t i = 0; i < enc.size(); ++i) {
      for (char c : digits) {
        std::string changed = enc;
        changed[i] = c;
        auto back = base64_decode(changed);
        if (back) {
          EXPECT_EQ(base64_encode(*back), changed) << n << " " << i << " " << c;
        }
      }
    }
  }
}

TEST(Keys, Rfc8032Vector1VerifiesAndForgeriesDoNot) {
  // RFC 8032 §7.1 TEST 1: public key, empty message, signature.
  const std::string spki = unhex("302a300506032b6570032100") +
                           unhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
  TempDir dir;
  testing::write_text(dir / "pub.der", spki);
  auto pem = run_command("openssl pkey -pubin -inform DER -in " + shell_quote(dir / "pub.der") + " 2>/dev/null");
  ASSERT_EQ(pem.exit_status, 0);
  auto key = Ed25519Key::from_public_pem(pem.out);
  ASSERT_TRUE(key.ok()) << key.error().message;
  const std::string sig = unhex(
      "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b");
  EXPECT_TRUE(key->verify("", sig));
  EXPECT_FALSE(key->verify("x", sig));
  std::string flipped = sig;
  flipped[10] ^= 1;
  EXPECT_FALSE(key->verify("", flipped));
  EXPECT_FALSE(key->verify("", sig.substr(0, 63)));
  EXPECT_FALSE(key->verify("", sig + "x"));
  EXPECT_FALSE(key->sign("m").ok());
  // key_id = "ed25519:" + SHA-256(SPKI DER)
  EXPECT_EQ(key->key_id(), "ed25519:" + sha256_hex(spki));
}

TEST(Keys, InitCreatesPrivateFilesOnceAndOpensslAgreesOnKeyId) {
  TempDir dir;
  bool created = false;
  auto k1 = load_or_create_signing_key(dir.path(), &created);
  ASSERT_TRUE(k1.ok()) << k1.error().message;
  EXPECT_TRUE(created);
  KeyPaths p = key_paths(dir.path());
  struct stat st {};
  ASSERT_EQ(::stat(p.private_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(p.dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_NE(testing::read_text(p.private_path).find("BEGIN PRIVATE KEY"), std::string::npos);  // PKCS#8
  EXPECT_NE(testing::read_text(p.public_path).find("BEGIN PUBLIC KEY"), std::string::npos);    // SPKI
  auto id = run_command("openssl pkey -pubin -in " + shell_quote(p.public_path) + " -outform DER | sha256sum");
  ASSERT_EQ(id.exit_status, 0);
  EXPECT_EQ(k1->key_id(), "ed25519:" + id.out.substr(0, 64));
  auto k2 = load_or_create_signing_key(dir.path(), &created);
  ASSERT_TRUE(k2.ok());
  EXPECT_FALSE(created);
  EXPECT_EQ(k2->key_id(), k1->key_id());
  // A deleted public file is rewritten from the private key.
  ::unlink(p.public_path.c_str());
  ASSERT_TRUE(load_or_create_signing_key(dir.path()).ok());
  EXPECT_EQ(load_public_key_file(p.public_path)->key_id(), k1->key_id());
  // A signature made here verifies with openssl pkeyutl -rawin.
  auto sig = k1->sign("hello");
  ASSERT_TRUE(sig.ok());
  testing::write_text(dir / "msg", "hello");
  testing::write_text(dir / "sig", *sig);
  auto v = run_command("openssl pkeyutl -verify -pubin -inkey " + shell_quote(p.public_path) +
                       " -rawin -in " + shell_quote(dir / "msg") + " -sigfile " + shell_quote(dir / "sig"));
  EXPECT_EQ(v.exit_status, 0) << v.out;
}

TEST(Keys, BadKeyFilesAreNamedErrors) {
  TempDir dir;
  KeyPaths p = key_paths(dir.path());
  ASSERT_TRUE(load_or_create_signing_key(dir.path()).ok());
  ::chmod(p.private_path.c_str(), 0640);
  auto r = load_signing_key(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "key-permissions");
  ::chmod(p.private_path.c_str(), 0600);
  testing::write_text(p.private_path, "not a key");
  ::chmod(p.private_path.c_str(), 0600);
  r = load_or_create_signing_key(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "key-invalid");
  TempDir empty;
  EXPECT_EQ(load_signing_key(empty.path()).error().code, "key-missing");
  EXPECT_EQ(load_public_key_file(empty / "nope.pem").error().code, "key-unreadable");
  testing::write_text(empty / "x.pem", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n");
  EXPECT_EQ(load_public_key_file(empty / "x.pem").error().code, "key-invalid");
  // An RSA key is not accepted.
  auto rsa = run_command("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 2>/dev/null");
  ASSERT_EQ(rsa.exit_status, 0);
  EXPECT_EQ(Ed25519Key::from_private_pem(rsa.out).error().code, "key-invalid");
}

TEST(HostId, DerivedWithADomainNeverRaw) {
  TempDir dir;
  const std::string mid = "0123456789abcdef0123456789abcdef";
  testing::write_text(dir / "machine-id", mid + "\n");
  auto h = host_id(dir / "state", dir / "machine-id");
  ASSERT_TRUE(h.ok());
  // Independently: printf 'evident/host-id/v1\0{"machine_id":"…"}' | sha256sum
  auto want = run_command("printf 'evident/host-id/v1\\000{\"machine_id\":\"" + mid + "\"}' | sha256sum");
  EXPECT_EQ(*h, "hst-" + want.out.substr(0, 32));
  EXPECT_EQ(h->find(mid), std::string::npos);
  // No usable machine-id: a generated one, kept, stable.
  auto g1 = host_id(dir / "state", dir / "missing");
  auto g2 = host_id(dir / "state", dir / "missing");
  ASSERT_TRUE(g1.ok());
  EXPECT_EQ(*g1, *g2);
  EXPECT_NE(*g1, *h);
  struct stat st {};
  ASSERT_EQ(::stat((dir / "state/keys/machine-id").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(Statement, SubjectsAreTheReceiptBytesAndEveryFrameOnce) {
  Json receipt{{"receipt_id", "ecr-x"},
               {"transcript", Json::array({Json{{"frame_sha256", std::string(64, 'b')}},
                                           Json{{"frame_sha256", std::string(64, 'a')}},
                                           Json{{"frame_sha256", std::string(64, 'b')}}})},
               {"observation", {{"sha256", std::string(64, 'c')}}}};
  Json s = make_receipt_statement("bytes\n", receipt, nullptr);
  EXPECT_EQ(s["_type"], "https://in-toto.io/Statement/v1");
  EXPECT_EQ(s["predicateType"], "urn:evident:session-receipt:v3");
  ASSERT_EQ(s["subject"].size(), 4u);
  EXPECT_EQ(s["subject"][0]["name"], "receipt.json");
  auto want = run_command("printf 'bytes\\n' | sha256sum");
  EXPECT_EQ(s["subject"][0]["digest"]["sha256"], want.out.substr(0, 64));
  EXPECT_EQ(s["subject"][1]["name"], std::string(64, 'a') + ".png");
  EXPECT_EQ(s["subject"][3]["digest"]["sha256"], std::string(64, 'c'));
  EXPECT_EQ(s["predicate"], (Json{{"receipt_id", "ecr-x"}, {"log", nullptr}}));
}

}  // namespace
}  // namespace evident
