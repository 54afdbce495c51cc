// SPDX-License-Identifier: Apache-2.0
// security/safe_file.hpp: a file replaced through a fresh exclusive temporary name, with its
// mode from creation, never following or reusing what is planted at the path.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <string>
#include <thread>

#include <uaplex/security/pki.hpp>
#include <uaplex/security/safe_file.hpp>

using namespace uaplex::security;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path path = fs::temp_directory_path() / ("uaplex-safe-file-" + std::to_string(::getpid()));
    TempDir() {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::set<std::string> entries(const fs::path& dir) {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename());
    return out;
}

}  // namespace

TEST_CASE("safe file: the temporary file is 0600 before its first byte, whatever the umask") {
    TempDir dir;
    mode_t old = ::umask(0);
    ReplacementFile f;
    REQUIRE(f.create(dir.path / "key.pem", kPrivateFileMode));
    struct stat st {};
    REQUIRE(::fstat(f.fd(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(st.st_size == 0);
    CHECK(f.temporaryPath().parent_path() == dir.path);
    REQUIRE(f.write("secret", 6));
    REQUIRE(f.commit());
    ::umask(old);
    REQUIRE(::stat((dir.path / "key.pem").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(slurp(dir.path / "key.pem") == "secret");
    CHECK(entries(dir.path) == std::set<std::string>{"key.pem"});
}

TEST_CASE("safe file: a symlink at the target is replaced, its target is not written") {
    TempDir dir;
    fs::path victim = dir.path / "victim.txt", key = dir.path / "key.pem";
    std::ofstream(victim) << "victim";
    fs::create_symlink(victim, key);
    std::string err;
    REQUIRE(replaceFile(key, "-----BEGIN PRIVATE KEY-----", kPrivateFileMode, err));
    CHECK(slurp(victim) == "victim");
    CHECK((fs::status(victim).permissions() & fs::perms::others_read) != fs::perms::none);
    CHECK_FALSE(fs::is_symlink(key));
    CHECK(slurp(key) == "-----BEGIN PRIVATE KEY-----");
}

TEST_CASE("safe file: a file planted at the target keeps its inode and does not get the bytes") {
    TempDir dir;
    fs::path key = dir.path / "key.pem", kept = dir.path / "planted";
    std::ofstream(key) << "planted";
    fs::permissions(key, fs::perms(0666), fs::perm_options::replace);
    fs::create_hard_link(key, kept);
    if (::geteuid() == 0) REQUIRE(::chown(key.c_str(), 65534, 65534) == 0);  // nobody
    std::string err;
    REQUIRE(replaceFile(key, "secret", kPrivateFileMode, err));
    CHECK(slurp(kept) == "planted");
    struct stat st {};
    REQUIRE(::stat(key.c_str(), &st) == 0);
    CHECK(st.st_uid == ::geteuid());
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(st.st_nlink == 1);
}

TEST_CASE("safe file: a failed replacement leaves the target and no temporary file") {
    TempDir dir;
    fs::path target = dir.path / "key.pem";
    fs::create_directories(target / "inside");  // rename over a non-empty directory fails
    std::string err;
    CHECK_FALSE(replaceFile(target, "secret", kPrivateFileMode, err));
    CHECK(err.find("key.pem") != std::string::npos);
    CHECK(entries(dir.path) == std::set<std::string>{"key.pem"});
    CHECK(fs::is_directory(target / "inside"));
    // An uncommitted replacement is discarded.
    {
        ReplacementFile f;
        REQUIRE(f.create(dir.path / "other.pem", kPrivateFileMode));
        REQUIRE(f.write("x", 1));
    }
    CHECK(entries(dir.path) == std::set<std::string>{"key.pem"});
    // A missing directory is an error, not a crash.
    CHECK_FALSE(replaceFile(dir.path / "no" / "such", "x", kPrivateFileMode, err));
}

TEST_CASE("safe file: the own key of a new PKI is written 0600 and not through a symlink") {
    TempDir dir;
    Pki pki(dir.path / "pki");
    pki.ensureLayout();
    fs::path victim = dir.path / "victim.txt";
    std::ofstream(victim) << "victim";
    fs::create_symlink(victim, pki.ownKeyFile());
    mode_t old = ::umask(0);
    CertificateRequest r;
    r.applicationUri = "urn:safe-file:test";
    r.dnsNames = {"localhost"};
    // The certificate is missing, so a new pair is created over the planted key path.
    pki.loadOrCreateOwn(r);
    ::umask(old);
    CHECK(slurp(victim) == "victim");
    CHECK_FALSE(fs::is_symlink(pki.ownKeyFile()));
    struct stat st {};
    REQUIRE(::stat(pki.ownKeyFile().c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    REQUIRE(::stat(pki.ownCertificateFile().c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0644);
}

namespace {
std::atomic<int> interruptions{0};
extern "C" void countInterruption(int) {
    interruptions.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

TEST_CASE("safe file: writeAll goes on through EINTR and short writes") {
    // A pipe that the reader drains slowly, and a signal without SA_RESTART sent to the writer
    // again and again: its write() calls return early (short) or fail with EINTR.
    struct sigaction sa {
    }, old{};
    sa.sa_handler = countInterruption;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    REQUIRE(::sigaction(SIGUSR1, &sa, &old) == 0);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    std::string data(1 << 20, '\0');
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = char(i * 7);
    std::atomic<bool> done{false};
    bool ok = false;
    interruptions = 0;
    std::thread writer([&] {
        ok = writeAll(fds[1], data.data(), data.size());
        ::close(fds[1]);
        done = true;
    });
    std::string got;
    char buf[4096];
    for (;;) {
        if (!done) ::pthread_kill(writer.native_handle(), SIGUSR1);
        ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got.append(buf, std::size_t(n));
        if (got.size() % (64 * 1024) == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    writer.join();
    ::close(fds[0]);
    ::sigaction(SIGUSR1, &old, nullptr);
    CHECK(interruptions > 0);
    CHECK(ok);
    CHECK(got == data);
}

TEST_CASE(
    "safe file: readWholeFile never blocks on a FIFO, bounds the size, follows links only "
    "when asked") {
    TempDir dir;
    std::string out;
    fs::path file = dir.path / "file";
    std::ofstream(file) << "0123456789";
    CHECK(readWholeFile(file, {10}, out) == ReadStatus::Ok);
    CHECK(out == "0123456789");
    CHECK(readWholeFile(file, {9}, out) == ReadStatus::TooLarge);
    CHECK(out.empty());
    CHECK(readWholeFile(dir.path / "missing", {10}, out) == ReadStatus::Missing);
    fs::path fifo = dir.path / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK(readWholeFile(fifo, {10}, out) == ReadStatus::NotRegular);  // returns, no writer needed
    CHECK(readWholeFile(dir.path, {10}, out) == ReadStatus::NotRegular);
    fs::path link = dir.path / "link";
    fs::create_symlink(file, link);
    CHECK(readWholeFile(link, {10}, out) == ReadStatus::Link);
    CHECK(readWholeFile(link, {10, true}, out) == ReadStatus::Ok);
    CHECK(out == "0123456789");
    ::chmod(file.c_str(), 0640);
    struct stat st {};
    CHECK(readWholeFile(file, {10, false, 077}, out, &st) == ReadStatus::Exposed);
    CHECK((st.st_mode & 07777) == 0640);
    ::chmod(file.c_str(), 0600);
    CHECK(readWholeFile(file, {10, false, 077}, out) == ReadStatus::Ok);
}

TEST_CASE("safe file: the PKI reads no FIFO at its own certificate and no symlinked own key") {
    TempDir dir;
    CertificateRequest r;
    r.applicationUri = "urn:safe-file:test";
    r.dnsNames = {"localhost"};
    {
        Pki pki(dir.path / "pki");
        pki.loadOrCreateOwn(r);
    }
    Pki pki(dir.path / "pki");
    // A symlink to the real key: a secret is read only from the file itself.
    fs::path moved = dir.path / "moved.pem";
    fs::rename(pki.ownKeyFile(), moved);
    fs::create_symlink(moved, pki.ownKeyFile());
    CHECK_THROWS_WITH(pki.loadOrCreateOwn(r), Catch::Contains("cannot read"));
    fs::remove(pki.ownKeyFile());
    fs::rename(moved, pki.ownKeyFile());
    pki.loadOrCreateOwn(r);  // the file itself is fine
    // A FIFO at the certificate's path would block a blocking open until a writer came.
    fs::remove(pki.ownCertificateFile());
    REQUIRE(::mkfifo(pki.ownCertificateFile().c_str(), 0644) == 0);
    auto load = std::async(std::launch::async, [&] {
        try {
            pki.loadOrCreateOwn(r);
            return std::string("loaded");
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
    });
    bool returned = load.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
    if (!returned) {  // unblock the reader so that the test ends
        int fd = ::open(pki.ownCertificateFile().c_str(), O_WRONLY | O_NONBLOCK);
        if (fd >= 0) ::close(fd);
    }
    CHECK(returned);
    CHECK_THAT(load.get(), Catch::Contains("cannot read"));
}
