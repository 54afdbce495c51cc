// SPDX-License-Identifier: Apache-2.0
// Writing files that hold secrets (private keys, password hashes), and the files written next
// to them, so that nothing planted at the path can redirect, read or keep them:
//   - the bytes go into a fresh temporary name in the target's directory, created with
//     O_CREAT|O_EXCL|O_NOFOLLOW and the final mode: a symlink or a file someone planted under
//     that name makes the open fail instead of being followed or reused, and the mode holds
//     from the first byte on (the umask can only take bits away; fchmod then sets it exactly);
//   - fsync, then rename over the target: rename replaces the directory entry, so a symlink
//     at the target is replaced, never followed, and a file someone else created there keeps
//     its own inode and contents and never receives ours;
//   - the directory is fsynced so that the rename survives a crash.
// Reading such files (and those a peer may have planted) goes through one descriptor opened
// without blocking, checked on that descriptor, and bounded in size (readWholeFile).
// Header-only: the security, session and CLI code all use it, without a library between them.
#pragma once

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uaplex/encoding/hex.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

namespace uaplex::security {

inline constexpr mode_t kPrivateFileMode = 0600;  // keys, users file
inline constexpr mode_t kPublicFileMode = 0644;   // certificates

// Writes all `size` bytes to `fd`, through short writes and EINTR. False: errno says why.
inline bool writeAll(int fd, const void* data, std::size_t size) noexcept {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
        ssize_t n = ::write(fd, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        if (n == 0) {  // nothing taken and no error: do not spin
            errno = EIO;
            return false;
        }
        p += n;
        size -= std::size_t(n);
    }
    return true;
}

struct ReadOptions {
    std::uintmax_t maxBytes;     // larger files are refused before a byte is read
    bool followLinks = false;    // false: a symlink at the path is refused (ELOOP)
    mode_t refusedModeBits = 0;  // a file with any of these mode bits is refused (077: private)
};

enum class ReadStatus : std::uint8_t {
    Ok,
    Missing,     // no such file
    Link,        // a symlink, and followLinks is false
    NotRegular,  // a FIFO, directory, device or socket
    Exposed,     // has one of refusedModeBits
    TooLarge,    // above maxBytes
    OpenFailed,  // open or fstat failed: errno says why
    ReadFailed,  // read failed: errno says why
};

// The whole file at `path` into `out`, read through one descriptor: opened with O_NONBLOCK
// (a FIFO planted at the path cannot block the caller) and, unless followLinks, O_NOFOLLOW;
// the type and size are checked on that descriptor, so a rename meanwhile cannot swap them.
// `info` (optional) receives its fstat (the mode of an Exposed file). A file that shrinks while it
// is read gives what is there.
inline ReadStatus readWholeFile(const std::filesystem::path& path, const ReadOptions& options,
                                std::string& out, struct stat* info = nullptr) {
    out.clear();
    int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (options.followLinks ? 0 : O_NOFOLLOW);
    int fd = ::open(path.c_str(), flags);
    if (fd < 0) {
        if (errno == ENOENT) return ReadStatus::Missing;
        if (errno == ELOOP && !options.followLinks) return ReadStatus::Link;
        return ReadStatus::OpenFailed;
    }
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return ReadStatus::OpenFailed;
    if (info) *info = st;
    if (!S_ISREG(st.st_mode)) return ReadStatus::NotRegular;
    if (st.st_mode & options.refusedModeBits) return ReadStatus::Exposed;
    if (std::uintmax_t(st.st_size) > options.maxBytes) return ReadStatus::TooLarge;
    out.resize(std::size_t(st.st_size));
    std::size_t got = 0;
    while (got < out.size()) {
        ssize_t n = ::read(fd, out.data() + got, out.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            out.clear();
            return ReadStatus::ReadFailed;
        }
        if (n == 0) break;  // shrunk meanwhile
        got += std::size_t(n);
    }
    out.resize(got);
    return ReadStatus::Ok;
}

// A ReplacementFile's temporary name (`<target>.<random>.tmp`): a process killed before
// commit() leaves one behind, complete or not, which readers of a directory must skip.
inline bool isReplacementTemporary(const std::filesystem::path& p) {
    return p.extension() == ".tmp";
}

// fsync of a directory, so that a rename or an unlink in it survives a power loss too.
inline void syncDirectory(std::filesystem::path dir) {
    if (dir.empty()) dir = ".";
    int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d >= 0) {
        (void)::fsync(d);
        ::close(d);
    }
}

// One replacement of `target`: create(), write(), commit(). Until commit() succeeds, the
// destructor removes the temporary file and the target is untouched.
class ReplacementFile {
  public:
    ReplacementFile() = default;
    ReplacementFile(const ReplacementFile&) = delete;
    ReplacementFile& operator=(const ReplacementFile&) = delete;
    ~ReplacementFile() { discard(); }

    // Creates the temporary file `<target>.<random>.tmp` with `mode`. False: error() says why.
    bool create(const std::filesystem::path& target, mode_t mode) {
        discard();
        target_ = target;
        for (int attempt = 0; attempt < 8; ++attempt) {
            std::uint8_t r[8];
            if (::getrandom(r, sizeof r, 0) != ssize_t(sizeof r)) return fail("getrandom");
            std::string suffix(".", 1);
            enc::appendHex(suffix, r);
            std::filesystem::path name = target;
            name += suffix + ".tmp";
            fd_ = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
            // Only a name this call created is ours to remove later.
            if (fd_ >= 0) {
                temp_ = std::move(name);
                break;
            }
            if (errno != EEXIST) return fail("cannot create " + name.string());
        }
        if (fd_ < 0) return fail("cannot create a temporary file next to " + target.string());
        if (::fchmod(fd_, mode) != 0) return fail("cannot set the mode of " + temp_.string());
        return true;
    }

    bool write(const void* data, std::size_t size) {
        if (fd_ < 0) return false;
        if (!writeAll(fd_, data, size)) return fail("cannot write " + temp_.string());
        return true;
    }

    // fsync, rename over the target, fsync the directory.
    bool commit() {
        if (fd_ < 0) return false;
        bool synced = ::fsync(fd_) == 0;
        bool closed = ::close(fd_) == 0;
        fd_ = -1;
        if (!synced || !closed) return fail("cannot write " + temp_.string());
        if (::rename(temp_.c_str(), target_.c_str()) != 0)
            return fail("cannot replace " + target_.string());
        temp_.clear();
        syncDirectory(target_.parent_path());
        return true;
    }

    int fd() const noexcept { return fd_; }
    const std::filesystem::path& temporaryPath() const noexcept { return temp_; }
    const std::string& error() const noexcept { return error_; }

  private:
    bool fail(const std::string& what) {
        error_ = what + ": " + std::strerror(errno);
        discard();
        return false;
    }
    void discard() noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
        if (!temp_.empty()) ::unlink(temp_.c_str());
        temp_.clear();
    }

    std::filesystem::path target_, temp_;
    int fd_ = -1;
    std::string error_;
};

// Replaces `target` with `size` bytes in one step (see above). False: `error` says why, and
// the target is as it was.
inline bool replaceFile(const std::filesystem::path& target, const void* data, std::size_t size,
                        mode_t mode, std::string& error) {
    ReplacementFile f;
    if (f.create(target, mode) && f.write(data, size) && f.commit()) return true;
    error = f.error();
    return false;
}

inline bool replaceFile(const std::filesystem::path& target, std::string_view bytes, mode_t mode,
                        std::string& error) {
    return replaceFile(target, bytes.data(), bytes.size(), mode, error);
}

}  // namespace uaplex::security
