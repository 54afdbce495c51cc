// security/safe_file.hpp: a file replaced through a fresh exclusive temporary name, with its
// mode from creation, never following or reusing what is planted at the path.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

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
