#include "session/user_store.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <toml++/toml.h>

#include "config/access_names.hpp"

namespace uaplex::session {

namespace {

constexpr std::string_view kScheme = "pbkdf2-sha256";
constexpr std::size_t kSaltSize = 16;
constexpr std::size_t kKeySize = 32;
constexpr std::uint32_t kMinIterations = 1000;
constexpr std::uint32_t kMaxIterations = 10000000;

std::string toHex(const std::uint8_t* p, std::size_t n) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s(2 * n, '0');
    for (std::size_t i = 0; i < n; ++i) {
        s[2 * i] = digits[p[i] >> 4];
        s[2 * i + 1] = digits[p[i] & 15];
    }
    return s;
}

bool fromHex(std::string_view s, std::uint8_t* out, std::size_t n) noexcept {
    if (s.size() != 2 * n) return false;
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    for (std::size_t i = 0; i < n; ++i) {
        int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = std::uint8_t(hi << 4 | lo);
    }
    return true;
}

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
    return fromHex(parts[2], p.salt, kSaltSize) && fromHex(parts[3], p.key, kKeySize);
}

bool validName(std::string_view name) noexcept {
    if (name.empty() || name.size() > 256) return false;
    for (unsigned char c : name)
        if (c < 0x20 || c == 0x7F) return false;
    return true;
}

}  // namespace

std::string hashPassword(std::string_view password, std::uint32_t iterations) {
    if (iterations < kMinIterations || iterations > kMaxIterations)
        throw UserStoreError("iterations must be from 1000 to 10000000");
    std::uint8_t salt[kSaltSize], key[kKeySize];
    if (RAND_bytes(salt, int(kSaltSize)) != 1) throw UserStoreError("RAND_bytes failed");
    if (!derive(password, salt, iterations, key)) throw UserStoreError("PBKDF2 failed");
    std::string s(kScheme);
    s += '$' + std::to_string(iterations) + '$' + toHex(salt, kSaltSize) + '$' +
         toHex(key, kKeySize);
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
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        if (!std::filesystem::exists(file)) return {};
        throw UserStoreError(file.string() + ": cannot open the users file");
    }
    std::stringstream buf;
    buf << in.rdbuf();
    toml::table root;
    try {
        root = toml::parse(buf.str(), file.string());
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
        if (!name || !validName(*name)) throw UserStoreError(where + ": a user needs a name");
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
    std::filesystem::path tmp = file;
    tmp += ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) throw UserStoreError(tmp.string() + ": cannot write");
    bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
    ok = ::fsync(fd) == 0 && ok;
    ::close(fd);
    std::error_code ec;
    if (ok) std::filesystem::rename(tmp, file, ec);
    if (!ok || ec) {
        std::filesystem::remove(tmp, ec);
        throw UserStoreError(file.string() + ": cannot write");
    }
}

UserStore::UserStore(std::filesystem::path file)
    : file_(std::move(file)), users_(std::make_shared<const Users>()) {
    dummyHash_ = hashPassword("uaplex-unknown-user");
    if (!file_.empty()) reload();
}

void UserStore::reload() {
    auto next = std::make_shared<Users>();
    for (auto& u : readUsersFile(file_)) {
        std::string key = u.name;
        next->emplace(std::move(key), std::move(u));
    }
    std::lock_guard lock(mutex_);
    users_ = std::move(next);
}

bool UserStore::authenticate(std::string_view name, std::string_view password,
                             std::vector<std::string>& roles) const {
    std::shared_ptr<const Users> users;
    {
        std::lock_guard lock(mutex_);
        users = users_;
    }
    auto it = users->find(name);
    if (it == users->end()) {
        (void)verifyPassword(password, dummyHash_);
        return false;
    }
    if (!verifyPassword(password, it->second.passwordHash)) return false;
    roles = it->second.roles;
    return true;
}

std::size_t UserStore::size() const {
    std::lock_guard lock(mutex_);
    return users_->size();
}

}  // namespace uaplex::session
