// SPDX-License-Identifier: Apache-2.0
#include <uaplex/session/user_store.hpp>

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uaplex/encoding/hex.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>

#include <toml++/toml.h>

#include <uaplex/config/access_names.hpp>
#include <uaplex/security/safe_file.hpp>

namespace uaplex::session {

namespace {

constexpr std::string_view kScheme = "pbkdf2-sha256";
constexpr std::size_t kSaltSize = 16;
constexpr std::size_t kKeySize = 32;
constexpr std::uint32_t kMinIterations = 1000;
constexpr std::uint32_t kMaxIterations = 10000000;

bool derive(std::string_view password, const std::uint8_t* salt, std::uint32_t iterations,
            std::uint8_t* key) noexcept {
    return PKCS5_PBKDF2_HMAC(password.data(), int(password.size()), salt, int(kSaltSize),
                             int(iterations), EVP_sha256(), int(kKeySize), key) == 1;
}

struct Parsed {
    std::uint32_t iterations = 0;
    std::uint8_t salt[kSaltSize];
    std::uint8_t key[kKeySize];
};

bool parseHash(std::string_view encoded, Parsed& p) noexcept {
    std::string_view parts[4];
    for (int i = 0; i < 3; ++i) {
        auto d = encoded.find('$');
        if (d == std::string_view::npos) return false;
        parts[i] = encoded.substr(0, d);
        encoded = encoded.substr(d + 1);
    }
    parts[3] = encoded;
    if (parts[0] != kScheme || parts[1].empty() || parts[1].size() > 9) return false;
    std::uint64_t it = 0;
    for (char c : parts[1]) {
        if (c < '0' || c > '9') return false;
        it = it * 10 + std::uint64_t(c - '0');
    }
    if (it < kMinIterations || it > kMaxIterations) return false;
    p.iterations = std::uint32_t(it);
    return enc::fromHex(parts[2], p.salt) && enc::fromHex(parts[3], p.key);
}

// The whole users file, read through one descriptor: opened without following a symlink
// and without blocking on a FIFO, then checked on that descriptor (no race with a rename).
std::string readPrivateText(const std::filesystem::path& file, bool& missing) {
    missing = false;
    std::string text;
    struct stat st {};
    switch (security::readWholeFile(file, {kMaxUsersFileSize, false, 077}, text, &st)) {
        case security::ReadStatus::Ok:
            return text;
        case security::ReadStatus::Missing:
            missing = true;
            return {};
        case security::ReadStatus::Link:
            throw UserStoreError(file.string() +
                                 ": is a symbolic link; users_file must name the file itself");
        case security::ReadStatus::NotRegular:
            throw UserStoreError(file.string() + ": is not a regular file");
        case security::ReadStatus::Exposed: {
            char mode[8];
            std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
            throw UserStoreError(file.string() + ": mode " + mode +
                                 " lets the group or others read the password hashes; "
                                 "`chmod 600` it (refused)");
        }
        case security::ReadStatus::TooLarge:
            throw UserStoreError(file.string() + ": larger than " +
                                 std::to_string(kMaxUsersFileSize >> 20) + " MiB");
        case security::ReadStatus::OpenFailed:
            break;
        case security::ReadStatus::ReadFailed:
            throw UserStoreError(file.string() + ": cannot read: " + std::strerror(errno));
    }
    throw UserStoreError(file.string() + ": cannot open the users file: " + std::strerror(errno));
}

}  // namespace

bool validUserName(std::string_view name) noexcept {
    if (name.empty() || name.size() > 256) return false;
    for (unsigned char c : name)
        if (c < 0x20 || c == 0x7F) return false;
    return true;
}

std::string hashPassword(std::string_view password, std::uint32_t iterations) {
    if (iterations < kMinIterations || iterations > kMaxIterations)
        throw UserStoreError("iterations must be from 1000 to 10000000");
    std::uint8_t salt[kSaltSize], key[kKeySize];
    if (RAND_bytes(salt, int(kSaltSize)) != 1) throw UserStoreError("RAND_bytes failed");
    if (!derive(password, salt, iterations, key)) throw UserStoreError("PBKDF2 failed");
    std::string s(kScheme);
    s += '$' + std::to_string(iterations) + '$' + enc::toHex({salt, kSaltSize}) + '$' +
         enc::toHex({key, kKeySize});
    OPENSSL_cleanse(key, sizeof key);
    return s;
}

bool verifyPassword(std::string_view password, std::string_view encoded) noexcept {
    Parsed p;
    if (!parseHash(encoded, p)) return false;
    std::uint8_t key[kKeySize];
    if (!derive(password, p.salt, p.iterations, key)) return false;
    bool same = CRYPTO_memcmp(key, p.key, kKeySize) == 0;
    OPENSSL_cleanse(key, sizeof key);
    return same;
}

std::vector<UserRecord> readUsersFile(const std::filesystem::path& file) {
    bool missing = false;
    std::string text = readPrivateText(file, missing);
    if (missing) return {};
    toml::table root;
    try {
        root = toml::parse(text, file.string());
    } catch (const toml::parse_error& e) {
        throw UserStoreError(file.string() + ":" + std::to_string(e.source().begin.line) + ": " +
                             std::string(e.description()));
    }
    std::vector<UserRecord> out;
    const toml::node* users = root.get("users");
    if (!users) return out;
    const toml::array* arr = users->as_array();
    if (!arr) throw UserStoreError(file.string() + ": users must be an array of tables");
    for (const toml::node& n : *arr) {
        const toml::table* t = n.as_table();
        auto where = file.string() + ":" + std::to_string(n.source().begin.line);
        if (!t) throw UserStoreError(where + ": [[users]] must be tables");
        UserRecord r;
        auto name = (*t)["name"].value<std::string>();
        auto hash = (*t)["password_hash"].value<std::string>();
        if (!name || !validUserName(*name)) throw UserStoreError(where + ": a user needs a name");
        if (!hash) throw UserStoreError(where + ": user '" + *name + "' has no password_hash");
        Parsed p;
        if (!parseHash(*hash, p))
            throw UserStoreError(where + ": user '" + *name + "': malformed password_hash");
        r.name = *name;
        r.passwordHash = *hash;
        if (const toml::node* roles = t->get("roles")) {
            const toml::array* ra = roles->as_array();
            if (!ra) throw UserStoreError(where + ": roles must be an array of strings");
            for (const toml::node& x : *ra) {
                auto role = x.value<std::string>();
                if (!role || config::roleIndex(*role) < 0)
                    throw UserStoreError(where + ": user '" + *name +
                                         "': roles must name well-known roles");
                r.roles.push_back(*role);
            }
        }
        for (const auto& o : out)
            if (o.name == r.name) throw UserStoreError(where + ": user '" + r.name + "' twice");
        out.push_back(std::move(r));
    }
    return out;
}

void writeUsersFile(const std::filesystem::path& file, const std::vector<UserRecord>& users) {
    toml::array arr;
    for (const auto& u : users) {
        toml::array roles;
        for (const auto& r : u.roles) roles.push_back(r);
        arr.push_back(toml::table{
            {"name", u.name}, {"roles", std::move(roles)}, {"password_hash", u.passwordHash}});
    }
    toml::table root{{"users", std::move(arr)}};
    std::stringstream out;
    out << "# uaplex users (edit with `uaplex users`); password hashes only, never passwords\n"
        << toml::toml_formatter(root) << "\n";
    std::string text = out.str();
    std::string error;
    if (!security::replaceFile(file, text, security::kPrivateFileMode, error))
        throw UserStoreError(file.string() + ": cannot write (" + error + ")");
}

struct UserStore::Snapshot {
    std::map<std::string, UserRecord, std::less<>> users;
    std::vector<std::uint32_t> iterations;  // each user's count, in name order
    std::uint8_t key[32] = {};              // picks a user's count for an unknown name
};

UserStore::UserStore(std::filesystem::path file)
    : file_(std::move(file)), users_(std::make_shared<const Snapshot>()) {
    if (RAND_bytes(dummySalt_, int(sizeof dummySalt_)) != 1)
        throw UserStoreError("RAND_bytes failed");
    if (!file_.empty()) reload();
}

void UserStore::reload() {
    auto next = std::make_shared<Snapshot>();
    for (auto& u : readUsersFile(file_)) {
        std::string key = u.name;
        next->users.emplace(std::move(key), std::move(u));
    }
    // The key is a digest of every hash (salts included): the same file gives the same choice
    // for a name after a restart, and a client cannot predict it.
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    EVP_MD_CTX* md = ctx.get();
    bool ok = md && EVP_DigestInit_ex(md, EVP_sha256(), nullptr) == 1;
    for (const auto& [name, u] : next->users) {
        Parsed p;
        if (!parseHash(u.passwordHash, p))
            throw UserStoreError(file_.string() + ": user '" + name + "': malformed hash");
        next->iterations.push_back(p.iterations);
        ok = ok && EVP_DigestUpdate(md, u.passwordHash.data(), u.passwordHash.size()) == 1 &&
             EVP_DigestUpdate(md, "\n", 1) == 1;
    }
    unsigned int n = 0;
    ok = ok && EVP_DigestFinal_ex(md, next->key, &n) == 1;
    if (!ok) throw UserStoreError("SHA-256 failed");
    std::lock_guard lock(mutex_);
    users_ = std::move(next);
}

std::uint32_t UserStore::iterationsFor(const Snapshot& s, std::string_view name) const noexcept {
    if (auto it = s.users.find(name); it != s.users.end()) {
        Parsed p;
        return parseHash(it->second.passwordHash, p) ? p.iterations : kDefaultHashIterations;
    }
    if (s.iterations.empty()) return kDefaultHashIterations;
    std::uint8_t mac[32];
    unsigned int len = 0;
    if (!HMAC(EVP_sha256(), s.key, int(sizeof s.key),
              reinterpret_cast<const unsigned char*>(name.data()), name.size(), mac, &len))
        return s.iterations[0];
    std::uint64_t pick = 0;
    for (int i = 0; i < 8; ++i) pick = pick << 8 | mac[i];
    return s.iterations[std::size_t(pick % s.iterations.size())];
}

std::uint32_t UserStore::iterationsFor(std::string_view name) const {
    std::shared_ptr<const Snapshot> s;
    {
        std::lock_guard lock(mutex_);
        s = users_;
    }
    return iterationsFor(*s, name);
}

bool UserStore::authenticate(std::string_view name, std::string_view password,
                             std::vector<std::string>& roles) const {
    std::shared_ptr<const Snapshot> s;
    {
        std::lock_guard lock(mutex_);
        s = users_;
    }
    auto it = s->users.find(name);
    if (it == s->users.end()) {
        // The same work as a real user's check: a derivation and a comparison.
        std::uint8_t key[kKeySize], other[kKeySize] = {};
        (void)derive(password, dummySalt_, iterationsFor(*s, name), key);
        (void)CRYPTO_memcmp(key, other, kKeySize);
        OPENSSL_cleanse(key, sizeof key);
        return false;
    }
    if (!verifyPassword(password, it->second.passwordHash)) return false;
    roles = it->second.roles;
    return true;
}

std::size_t UserStore::size() const {
    std::lock_guard lock(mutex_);
    return users_->users.size();
}

}  // namespace uaplex::session
