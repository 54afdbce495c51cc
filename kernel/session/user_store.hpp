// The users of UserName identity tokens: a TOML file of names, roles and password hashes
// (never passwords). Hashes are PBKDF2-HMAC-SHA256 with a random 16-byte salt per user and
// the iteration count stored with the hash:
//   "pbkdf2-sha256$<iterations>$<salt, hex>$<32-byte key, hex>"
// The file is read at start and again on SIGHUP (reload); `uaplex users` edits it.
//
// Threads: authenticate() from any worker; reload() from the main thread swaps a snapshot.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace uaplex::session {

class UserStoreError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct UserRecord {
    std::string name;
    std::vector<std::string> roles;  // well-known role names
    std::string passwordHash;        // the encoded form above
};

// Enough to make each guess cost milliseconds; stored per hash, so it can grow later.
inline constexpr std::uint32_t kDefaultHashIterations = 100000;

// A new encoded hash of `password` with a fresh random salt. Throws UserStoreError when the
// CSPRNG or the KDF fails.
std::string hashPassword(std::string_view password,
                         std::uint32_t iterations = kDefaultHashIterations);
// True when `password` matches `encoded` (compared in constant time); false for a malformed
// hash too.
bool verifyPassword(std::string_view password, std::string_view encoded) noexcept;

// Reads and writes the users file. read() of a missing file is an empty list.
std::vector<UserRecord> readUsersFile(const std::filesystem::path& file);
// Writes atomically (a temporary file renamed over the old one), mode 0600.
void writeUsersFile(const std::filesystem::path& file, const std::vector<UserRecord>& users);

class UserStore {
  public:
    explicit UserStore(std::filesystem::path file);
    // Reads the file again; on error throws and keeps the users it had.
    void reload();
    // True and the user's roles when `name` exists and `password` matches. An unknown name
    // costs a hash too, so that timing does not tell which names exist.
    bool authenticate(std::string_view name, std::string_view password,
                      std::vector<std::string>& roles) const;
    std::size_t size() const;
    const std::filesystem::path& file() const noexcept { return file_; }

  private:
    using Users = std::map<std::string, UserRecord, std::less<>>;
    std::filesystem::path file_;
    mutable std::mutex mutex_;
    std::shared_ptr<const Users> users_;
    std::string dummyHash_;  // hashed for unknown names
};

}  // namespace uaplex::session
