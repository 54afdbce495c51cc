// SPDX-License-Identifier: Apache-2.0
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

// A name the users file may hold: 1 to 256 bytes, no control characters.
bool validUserName(std::string_view name) noexcept;

// The users file holds password hashes: whoever reads it can guess offline.
inline constexpr std::uintmax_t kMaxUsersFileSize = 16u << 20;

// Reads and writes the users file. read() of a missing file is an empty list. It refuses
// (UserStoreError) a symlink (the file is opened without following one), anything but a
// regular file, a file the group or others may access (mode 0600 or stricter), and a file
// above kMaxUsersFileSize.
std::vector<UserRecord> readUsersFile(const std::filesystem::path& file);
// Writes atomically, mode 0600 from creation: a fresh temporary name created with
// O_EXCL|O_NOFOLLOW, fsync, renamed over the old file (security/safe_file.hpp).
void writeUsersFile(const std::filesystem::path& file, const std::vector<UserRecord>& users);

class UserStore {
  public:
    explicit UserStore(std::filesystem::path file);
    // Reads the file again; on error throws and keeps the users it had.
    void reload();
    // True and the user's roles when `name` exists and `password` matches. An unknown name
    // costs a hash of iterationsFor(name) iterations, so that timing does not tell which
    // names exist.
    bool authenticate(std::string_view name, std::string_view password,
                      std::vector<std::string>& roles) const;
    // The PBKDF2 iterations authenticate() spends on `name`: the user's own count, or for an
    // unknown name the count of one of the users, chosen by a keyed hash of the name. An
    // unknown name thus costs what some real user costs, always the same for the same name,
    // and the counts of unknown names follow those of the users (the key is a digest of the
    // file's hashes: stable across restarts, unknown to clients). No users: the default.
    std::uint32_t iterationsFor(std::string_view name) const;
    std::size_t size() const;
    const std::filesystem::path& file() const noexcept { return file_; }

  private:
    struct Snapshot;
    std::uint32_t iterationsFor(const Snapshot& s, std::string_view name) const noexcept;
    std::filesystem::path file_;
    mutable std::mutex mutex_;
    std::shared_ptr<const Snapshot> users_;
    std::uint8_t dummySalt_[16];  // hashed for unknown names
};

}  // namespace uaplex::session
