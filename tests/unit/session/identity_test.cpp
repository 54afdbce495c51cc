// SPDX-License-Identifier: Apache-2.0
// The users file (PBKDF2 hashes, reload), the permission resolver of [access] rules, and the
// identity-token checks of ActivateSession (Anonymous, UserName, X509 through IdentityCrypto).
#include <catch2/catch.hpp>

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <uaplex/session/access_control.hpp>
#include <uaplex/session/identity_verifier.hpp>
#include <uaplex/session/user_store.hpp>

using namespace uaplex;
using namespace uaplex::session;
namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t kFast = 1000;  // iterations for tests; the default is slow on purpose

struct TempDir {
    fs::path path = fs::temp_directory_path() / ("uaplex-identity-" + std::to_string(::getpid()));
    TempDir() { fs::create_directories(path); }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ua::ExtensionObject wrap(const enc::DataType* type, void* object) {
    ua::ExtensionObject eo{};
    eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    eo.data_type = type;
    eo.object = object;
    return eo;
}

RoleMask role(std::string_view name) {
    return 1u << config::roleIndex(name);
}

// A self-signed certificate (DER) with the subject CN=`cn`.
std::vector<std::uint8_t> makeCertificate(const char* cn) {
    EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    X509* x = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("uaplex"), -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                               -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509_sign(x, key, EVP_sha256());
    unsigned char* der = nullptr;
    int n = i2d_X509(x, &der);
    std::vector<std::uint8_t> out(der, der + n);
    OPENSSL_free(der);
    X509_free(x);
    EVP_PKEY_free(key);
    return out;
}

// Stands in for the channel's security policies: "decrypts" by dropping a prefix and
// accepts a signature equal to "good".
struct FakeCrypto final : IdentityCrypto {
    int decrypts = 0;
    uaplex_status decryptPassword(std::string_view policy, std::string_view algorithm,
                                  std::span<const std::uint8_t> secret,
                                  std::span<const std::uint8_t> nonce,
                                  std::string& password) noexcept override {
        ++decrypts;
        if (algorithm != "http://www.w3.org/2001/04/xmlenc#rsa-oaep" || nonce.size() != 32 ||
            policy.empty() || secret.size() < 4)
            return UAPLEX_BadIdentityTokenInvalid;
        password.assign(reinterpret_cast<const char*>(secret.data()) + 4, secret.size() - 4);
        return UAPLEX_Good;
    }
    uaplex_status verifyX509TokenSignature(std::string_view, std::span<const std::uint8_t>,
                                           std::string_view, std::span<const std::uint8_t> sig,
                                           std::span<const std::uint8_t>,
                                           std::span<const std::uint8_t>) noexcept override {
        return std::string_view(reinterpret_cast<const char*>(sig.data()), sig.size()) == "good"
                   ? UAPLEX_Good
                   : UAPLEX_BadUserSignatureInvalid;
    }
    // The user trust list's verdict, and whether the last certificate was pinned.
    uaplex_status userVerdict = UAPLEX_Good;
    bool lastPinned = false;
    int validations = 0;
    uaplex_status validateUserCertificate(std::string_view, std::span<const std::uint8_t>,
                                          bool pinned) noexcept override {
        ++validations;
        lastPinned = pinned;
        return userVerdict;
    }
};

}  // namespace

TEST_CASE("users: PBKDF2 hashes carry scheme, iterations and a fresh salt, and compare exactly") {
    std::string a = hashPassword("secret", kFast), b = hashPassword("secret", kFast);
    CHECK(a.rfind("pbkdf2-sha256$1000$", 0) == 0);
    CHECK(a.size() == std::string("pbkdf2-sha256$1000$").size() + 32 + 1 + 64);
    CHECK(a != b);  // per-user random salt
    CHECK(a.find("secret") == std::string::npos);
    CHECK(verifyPassword("secret", a));
    CHECK(verifyPassword("secret", b));
    CHECK_FALSE(verifyPassword("Secret", a));
    CHECK_FALSE(verifyPassword("", a));
    CHECK_FALSE(verifyPassword("secret", "plain:secret"));
    CHECK_FALSE(verifyPassword("secret", "pbkdf2-sha256$1$00$00"));  // too few iterations
    std::set<std::string> salts;
    for (int i = 0; i < 20; ++i) salts.insert(hashPassword("x", kFast).substr(19, 32));
    CHECK(salts.size() == 20);
    CHECK_THROWS_AS(hashPassword("x", 10), UserStoreError);
}

TEST_CASE("users: the file holds hashes only, authenticates, and reloads") {
    TempDir dir;
    fs::path file = dir.path / "users.toml";
    writeUsersFile(file, {{"alice", {"Operator"}, hashPassword("wonder", kFast)}});
    CHECK((fs::status(file).permissions() & fs::perms::others_read) == fs::perms::none);
    std::string text = slurp(file);
    CHECK(text.find("wonder") == std::string::npos);
    CHECK(text.find("alice") != std::string::npos);

    UserStore store(file);
    std::vector<std::string> roles;
    CHECK(store.authenticate("alice", "wonder", roles));
    CHECK(roles == std::vector<std::string>{"Operator"});
    CHECK_FALSE(store.authenticate("alice", "wander", roles));
    CHECK_FALSE(store.authenticate("bob", "wonder", roles));

    auto users = readUsersFile(file);
    users.push_back({"bob", {}, hashPassword("builder", kFast)});
    writeUsersFile(file, users);
    CHECK_FALSE(store.authenticate("bob", "builder", roles));  // not before reload
    store.reload();
    CHECK(store.authenticate("bob", "builder", roles));
    CHECK(roles.empty());

    // A broken file is refused and the users stay.
    std::ofstream(file) << "[[users]]\nname = \"eve\"\npassword_hash = \"plain\"\n";
    CHECK_THROWS_AS(store.reload(), UserStoreError);
    CHECK(store.authenticate("bob", "builder", roles));
    std::ofstream(file) << "[[users]]\nname = \"eve\"\nroles = [\"Root\"]\npassword_hash = \"" +
                               hashPassword("x", kFast) + "\"\n";
    CHECK_THROWS_AS(store.reload(), UserStoreError);
    CHECK(readUsersFile(dir.path / "missing.toml").empty());
}

TEST_CASE("permissions: node rules over namespace rules over defaults, united over roles") {
    config::AccessSection cfg;
    cfg.default_permissions = kPermBrowse | kPermRead;
    config::AccessRule ns;
    ns.namespace_uri = "urn:a";
    ns.roles = {"Observer"};
    ns.permissions = kPermBrowse | kPermRead;
    config::AccessRule nsOp = ns;
    nsOp.roles = {"Operator"};
    nsOp.permissions = kPermBrowse | kPermWrite;
    config::AccessRule node;
    node.has_node = true;
    node.node_ns = 1;
    node.node_is_string = true;
    node.node_string = "secret";
    node.roles = {"Supervisor"};
    node.permissions = kPermBrowse | kPermRead | kPermWrite;
    config::AccessRule numeric = node;
    numeric.node_is_string = false;
    numeric.node_numeric = 7;
    numeric.node_string.clear();
    numeric.roles = {"Observer"};
    numeric.permissions = kPermCall;
    config::AccessRule unknown = ns;
    unknown.namespace_uri = "urn:nowhere";
    cfg.rules = {ns, nsOp, node, numeric, unknown};
    AccessPolicy p(cfg, {"http://opcfoundation.org/UA/", "urn:a", "urn:b"});
    CHECK(p.warnings().size() == 1);
    CHECK(p.restricts());

    auto obs = p.view(role("Observer"));
    auto op = p.view(role("Operator"));
    auto both = p.view(role("Observer") | role("Operator"));
    auto sup = p.view(role("Supervisor"));
    ua::NodeId plain = ua::numericNodeId(1, 1), secret = ua::stringNodeId(1, "secret");
    CHECK(obs->permissions(plain) == (kPermBrowse | kPermRead));
    CHECK(op->permissions(plain) == (kPermBrowse | kPermWrite));
    CHECK(both->permissions(plain) == (kPermBrowse | kPermRead | kPermWrite));
    CHECK(sup->permissions(plain) == 0);  // the namespace's rules name others
    CHECK(sup->permissions(ua::numericNodeId(2, 1)) == (kPermBrowse | kPermRead));  // defaults
    CHECK(sup->permissions(ua::numericNodeId(9, 1)) == (kPermBrowse | kPermRead));  // unknown ns
    CHECK(sup->permissions(secret) == (kPermBrowse | kPermRead | kPermWrite));
    CHECK(obs->permissions(secret) == 0);  // node rules replace the namespace's
    CHECK(obs->permissions(ua::numericNodeId(1, 7)) == kPermCall);
    CHECK(obs->permissions(ua::stringNodeId(1, "secreT")) == (kPermBrowse | kPermRead));
    CHECK(p.view(role("Observer")) == obs);  // shared per role set

    RolePermissionTable t;
    REQUIRE(p.rolePermissions(secret, t));
    CHECK(t[std::size_t(config::roleIndex("Supervisor"))] ==
          (kPermBrowse | kPermRead | kPermWrite));
    CHECK(t[std::size_t(config::roleIndex("Observer"))] == 0);
    CHECK_FALSE(p.rolePermissions(ua::numericNodeId(2, 1), t));

    // Without rules: Anonymous keeps anonymous_permissions outside namespace 0, the other
    // roles (and a session without roles) default_permissions.
    AccessPolicy defaults(config::AccessSection{}, {"http://opcfoundation.org/UA/", "urn:a"});
    CHECK(defaults.restricts());
    CHECK(defaults.view(0)->permissions(plain) == config::kAllPermissions);
    CHECK(defaults.view(role("Operator"))->permissions(plain) == config::kAllPermissions);
    CHECK(defaults.view(kAnonymousRole)->permissions(plain) ==
          config::AccessSection{}.anonymous_permissions);
    CHECK(defaults.view(kAnonymousRole)->permissions(ua::numericNodeId(0, 85)) ==
          config::kAllPermissions);
    CHECK(defaults.view(kAnonymousRole)->permissions(ua::numericNodeId(9, 1)) ==
          config::AccessSection{}.anonymous_permissions);  // a namespace added later
    CHECK(defaults.view(kAnonymousRole | role("Operator"))->permissions(plain) ==
          config::kAllPermissions);
    config::AccessSection all;
    all.anonymous_permissions = config::kAllPermissions;
    AccessPolicy open(all, {"http://opcfoundation.org/UA/"});
    CHECK_FALSE(open.restricts());
    CHECK(open.view(kAnonymousRole)->permissions(plain) == config::kAllPermissions);
}

TEST_CASE("identity: policies offered, anonymous switched off, policyId checked") {
    config::AccessSection cfg;
    IdentityVerifier open(cfg, nullptr);
    REQUIRE(open.policies().size() == 1);
    CHECK(open.policies()[0].policyId == "anonymous");
    ActivationContext ctx;
    UserIdentity id;
    ua::ExtensionObject null{};
    CHECK(open.verify(null, ctx, id) == UAPLEX_Good);
    CHECK(id.key == "anonymous");
    CHECK(id.roles == kAnonymousRole);
    ua::AnonymousIdentityToken anon{ua::makeString("other")};
    CHECK(open.verify(wrap(enc::dataTypeOf<ua::AnonymousIdentityToken>(), &anon), ctx, id) ==
          UAPLEX_BadIdentityTokenInvalid);
    ua::UserNameIdentityToken user{ua::makeString("username"), ua::makeString("a"),
                                   ua::nullByteString(), ua::nullString()};
    CHECK(open.verify(wrap(enc::dataTypeOf<ua::UserNameIdentityToken>(), &user), ctx, id) ==
          UAPLEX_BadIdentityTokenRejected);
    ua::IssuedIdentityToken issued{};
    CHECK(open.verify(wrap(enc::dataTypeOf<ua::IssuedIdentityToken>(), &issued), ctx, id) ==
          UAPLEX_BadIdentityTokenRejected);
    ua::ReadRequest notAToken{};
    CHECK(open.verify(wrap(enc::dataTypeOf<ua::ReadRequest>(), &notAToken), ctx, id) ==
          UAPLEX_BadIdentityTokenInvalid);

    cfg.anonymous = false;
    cfg.anonymous_roles = {"Observer"};
    IdentityVerifier closed(cfg, nullptr);
    CHECK(closed.policies().empty());
    anon.policyId = ua::makeString("anonymous");
    CHECK(closed.verify(wrap(enc::dataTypeOf<ua::AnonymousIdentityToken>(), &anon), ctx, id) ==
          UAPLEX_BadIdentityTokenRejected);
    CHECK(closed.verify(null, ctx, id) == UAPLEX_BadIdentityTokenRejected);
}

TEST_CASE("identity: UserName checks the password, clear text only under SecurityPolicy None") {
    TempDir dir;
    config::AccessSection cfg;
    cfg.users_file = dir.path / "users.toml";
    writeUsersFile(cfg.users_file, {{"op", {"Operator"}, hashPassword("pw", kFast)}});
    auto crypto = std::make_shared<FakeCrypto>();
    IdentityVerifier v(cfg, crypto);
    REQUIRE(v.policies().size() == 2);
    CHECK(v.policies()[1].policyId == "username");
    CHECK(v.policies()[1].kind == IdentityKind::UserName);

    std::uint8_t pw[] = {'p', 'w'};
    ua::UserNameIdentityToken t{ua::makeString("username"), ua::makeString("op"),
                                ua::ByteString{2, pw}, ua::nullString()};
    auto token = wrap(enc::dataTypeOf<ua::UserNameIdentityToken>(), &t);
    ActivationContext ctx;
    UserIdentity id;
    REQUIRE(v.verify(token, ctx, id) == UAPLEX_Good);
    CHECK(id.kind == IdentityKind::UserName);
    CHECK(id.key == "user:op");
    CHECK(id.roles == (role("Operator") | kAuthenticatedUserRole));
    std::uint8_t wrong[] = {'p', 'x'};
    t.password = ua::ByteString{2, wrong};
    CHECK(v.verify(token, ctx, id) == UAPLEX_BadUserAccessDenied);
    t.userName = ua::makeString("nobody");
    CHECK(v.verify(token, ctx, id) == UAPLEX_BadUserAccessDenied);  // same answer
    t.userName = ua::makeString("op");
    t.policyId = ua::makeString("anonymous");
    CHECK(v.verify(token, ctx, id) == UAPLEX_BadIdentityTokenInvalid);
    t.policyId = ua::makeString("username");
    t.password = ua::ByteString{2, pw};
    // Clear text is refused where the token policy is not None.
    ctx.channelSecurityPolicyUri = "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256";
    CHECK(v.verify(token, ctx, id) == UAPLEX_BadIdentityTokenInvalid);
    // An encrypted password goes through IdentityCrypto with the last server nonce.
    std::array<std::uint8_t, 32> nonce{};
    ctx.serverNonce = nonce;
    std::uint8_t secret[] = {2, 0, 0, 0, 'p', 'w'};
    t.password = ua::ByteString{6, secret};
    t.encryptionAlgorithm = ua::makeString("http://www.w3.org/2001/04/xmlenc#rsa-oaep");
    CHECK(v.verify(token, ctx, id) == UAPLEX_Good);
    CHECK(crypto->decrypts == 1);
    t.encryptionAlgorithm = ua::makeString("rot13");
    CHECK(v.verify(token, ctx, id) == UAPLEX_BadIdentityTokenInvalid);

    // Without the channel's cryptography nothing encrypted is accepted.
    IdentityVerifier none(cfg, nullptr);
    t.encryptionAlgorithm = ua::makeString("http://www.w3.org/2001/04/xmlenc#rsa-oaep");
    CHECK(none.verify(token, ctx, id) == UAPLEX_BadIdentityTokenInvalid);

    // The users file is re-read on reloadUsers (SIGHUP).
    writeUsersFile(cfg.users_file, {});
    v.reloadUsers();
    t.encryptionAlgorithm = ua::nullString();
    t.password = ua::ByteString{2, pw};
    ctx.channelSecurityPolicyUri = kSecurityPolicyNoneUri;
    CHECK(v.verify(token, ctx, id) == UAPLEX_BadUserAccessDenied);
}

TEST_CASE("identity: X509 maps certificates by thumbprint or subject, validated and signed") {
    auto mapped = makeCertificate("operator-1");
    auto bySubject = makeCertificate("engineer-1");
    auto stranger = makeCertificate("stranger");
    std::string thumb, subject;
    REQUIRE(certificateIdentity(mapped, thumb, subject));
    CHECK(thumb.size() == 40);
    CHECK(subject == "CN=operator-1,O=uaplex");
    config::AccessSection cfg;
    cfg.certificates.push_back({thumb, "", {"Operator"}});
    cfg.certificates.push_back({"", "CN=engineer-1,O=uaplex", {"Engineer"}});
    auto crypto = std::make_shared<FakeCrypto>();
    IdentityVerifier v(cfg, crypto);
    REQUIRE(v.policies().size() == 2);
    CHECK(v.policies()[1].policyId == "certificate");
    CHECK(v.policies()[1].securityPolicyUri == cfg.certificate_security_policy);

    ua::X509IdentityToken t{ua::makeString("certificate"),
                            ua::ByteString{std::int32_t(mapped.size()), mapped.data()}};
    auto token = wrap(enc::dataTypeOf<ua::X509IdentityToken>(), &t);
    std::uint8_t good[] = {'g', 'o', 'o', 'd'}, bad[] = {'b', 'a', 'd'};
    ua::SignatureData sig{ua::makeString("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"),
                          ua::ByteString{4, good}};
    ActivationContext ctx;
    ctx.userTokenSignature = &sig;
    UserIdentity id;
    REQUIRE(v.verify(token, ctx, id) == UAPLEX_Good);
    CHECK(id.key == "x509:" + thumb);
    CHECK(id.roles == (role("Operator") | kAuthenticatedUserRole));
    CHECK(crypto->lastPinned);
    t.certificateData = ua::ByteString{std::int32_t(bySubject.size()), bySubject.data()};
    REQUIRE(v.verify(token, ctx, id) == UAPLEX_Good);
    CHECK(id.roles == (role("Engineer") | kAuthenticatedUserRole));
    // A subject names a certificate of the user trust list, it pins nothing.
    CHECK(!crypto->lastPinned);
    // A certificate the user trust list refuses gets no roles, whatever its mapping.
    crypto->userVerdict = UAPLEX_BadCertificateUntrusted;
    CHECK(v.verify(token, ctx, id) == UAPLEX_BadIdentityTokenRejected);
    crypto->userVerdict = UAPLEX_BadCertificateTimeInvalid;
    t.certificateData = ua::ByteString{std::int32_t(mapped.size()), mapped.data()};
    CHECK(v.verify(token, ctx, id) == UAPLEX_BadIdentityTokenRejected);
    crypto->userVerdict = UAPLEX_Good;
    t.certificateData = ua::ByteString{std::int32_t(stranger.size()), stranger.data()};
    int validations = crypto->validations;
    CHECK(v.verify(token, ctx, id) == UAPLEX_BadIdentityTokenRejected);
    CHECK(crypto->validations == validations);  // unmapped: refused before any validation
    t.certificateData = ua::ByteString{std::int32_t(mapped.size()), mapped.data()};
    sig.signature = ua::ByteString{3, bad};
    CHECK(v.verify(token, ctx, id) == UAPLEX_BadUserSignatureInvalid);
    ctx.userTokenSignature = nullptr;
    CHECK(v.verify(token, ctx, id) == UAPLEX_BadUserSignatureInvalid);
    std::uint8_t junk[] = {0x30, 0x03, 1, 2, 3};
    t.certificateData = ua::ByteString{5, junk};
    CHECK(v.verify(token, ctx, id) == UAPLEX_BadIdentityTokenInvalid);
    // Without the certificate store no user certificate is trusted.
    IdentityVerifier none(cfg, nullptr);
    t.certificateData = ua::ByteString{std::int32_t(mapped.size()), mapped.data()};
    sig.signature = ua::ByteString{4, good};
    ctx.userTokenSignature = &sig;
    CHECK(none.verify(token, ctx, id) == UAPLEX_BadIdentityTokenRejected);
}

TEST_CASE("identity: oversized user names and passwords are invalid before any hashing") {
    TempDir dir;
    config::AccessSection cfg;
    cfg.users_file = dir.path / "users.toml";
    writeUsersFile(cfg.users_file, {});
    IdentityVerifier v(cfg, nullptr);
    std::vector<std::uint8_t> big(5000, 'x');
    ua::UserNameIdentityToken t{ua::makeString("username"), ua::makeString("op"),
                                ua::ByteString{std::int32_t(big.size()), big.data()},
                                ua::nullString()};
    ActivationContext ctx;
    UserIdentity id;
    CHECK(v.verify(wrap(enc::dataTypeOf<ua::UserNameIdentityToken>(), &t), ctx, id) ==
          UAPLEX_BadIdentityTokenInvalid);
    std::string longName(300, 'n');
    t.userName = ua::makeString(longName);
    t.password = ua::ByteString{2, big.data()};
    CHECK(v.verify(wrap(enc::dataTypeOf<ua::UserNameIdentityToken>(), &t), ctx, id) ==
          UAPLEX_BadIdentityTokenInvalid);
    t.userName = ua::makeString("");
    CHECK(v.verify(wrap(enc::dataTypeOf<ua::UserNameIdentityToken>(), &t), ctx, id) ==
          UAPLEX_BadIdentityTokenInvalid);
}
