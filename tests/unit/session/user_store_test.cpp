// SPDX-License-Identifier: Apache-2.0
// The users file as a file: written without following what is planted at its path or its
// temporary name, mode 0600 from creation, refused when the group or others may read it or
// when it is a symlink or no regular file; and the PBKDF2 cost of unknown user names.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <uaplex/session/user_store.hpp>

using namespace uaplex::session;
namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t kFast = 1000;

struct TempDir {
    fs::path path = fs::temp_directory_path() / ("uaplex-user-store-" + std::to_string(::getpid()));
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

unsigned modeOf(const fs::path& p) {
    struct stat st {};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    return unsigned(st.st_mode & 07777);
}

std::string refusal(const fs::path& file) {
    try {
        readUsersFile(file);
    } catch (const UserStoreError& e) {
        return e.what();
    }
    return {};
}

std::vector<UserRecord> one(const std::string& name, std::uint32_t iterations = kFast) {
    return {{name, {"Operator"}, hashPassword("pw-" + name, iterations)}};
}

}  // namespace

TEST_CASE("users file: a symlink planted at the temporary or the file itself is not followed") {
    TempDir dir;
    fs::path file = dir.path / "users.toml", victim = dir.path / "victim.txt";
    std::ofstream(victim) << "victim";
    // The name the earlier writer used for its temporary file, and the file itself.
    fs::create_symlink(victim, dir.path / "users.toml.tmp");
    writeUsersFile(file, one("alice"));
    CHECK(slurp(victim) == "victim");
    fs::remove(file);
    fs::create_symlink(victim, file);
    writeUsersFile(file, one("alice"));
    CHECK(slurp(victim) == "victim");
    CHECK_FALSE(fs::is_symlink(file));
    CHECK(readUsersFile(file).at(0).name == "alice");
    // No temporary file is left behind.
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir.path)) names.insert(e.path().filename());
    CHECK(names == std::set<std::string>{"users.toml", "users.toml.tmp", "victim.txt"});
}

TEST_CASE("users file: a file someone created at the path keeps its inode and gets nothing") {
    TempDir dir;
    fs::path file = dir.path / "users.toml", kept = dir.path / "attacker-link";
    std::ofstream(file) << "# planted\n";
    fs::permissions(file, fs::perms(0666), fs::perm_options::replace);
    fs::create_hard_link(file, kept);  // what the planter still holds
    writeUsersFile(file, one("alice"));
    CHECK(slurp(kept) == "# planted\n");
    CHECK(modeOf(file) == 0600);
    CHECK(fs::hard_link_count(file) == 1);
}

TEST_CASE("users file: mode 0600 from creation, whatever the umask") {
    TempDir dir;
    fs::path file = dir.path / "users.toml";
    mode_t old = ::umask(0);
    writeUsersFile(file, one("alice"));
    ::umask(old);
    CHECK(modeOf(file) == 0600);
}

TEST_CASE("users file: refused when the group or others may access it, a symlink, or no file") {
    TempDir dir;
    fs::path file = dir.path / "users.toml";
    writeUsersFile(file, one("alice"));
    CHECK(refusal(file).empty());
    for (unsigned mode : {0644u, 0640u, 0604u, 0620u, 0602u}) {
        fs::permissions(file, fs::perms(mode), fs::perm_options::replace);
        INFO("mode " << std::oct << mode);
        CHECK(refusal(file).find("chmod 600") != std::string::npos);
    }
    fs::permissions(file, fs::perms(0400), fs::perm_options::replace);
    CHECK(refusal(file).empty());
    fs::permissions(file, fs::perms(0600), fs::perm_options::replace);

    fs::path link = dir.path / "link.toml";
    fs::create_symlink(file, link);
    CHECK(refusal(link).find("symbolic link") != std::string::npos);

    // A FIFO would block a reader forever: it is refused without waiting for a writer.
    fs::path fifo = dir.path / "fifo.toml";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK(refusal(fifo).find("not a regular file") != std::string::npos);
    CHECK(refusal(dir.path).find("not a regular file") != std::string::npos);

    // Missing is still an empty list (a server without users yet).
    CHECK(readUsersFile(dir.path / "missing.toml").empty());
}

TEST_CASE("users file: one larger than 16 MiB is refused before it is read") {
    TempDir dir;
    fs::path file = dir.path / "users.toml";
    writeUsersFile(file, one("alice"));
    // Sparse: the size is what is checked, so the test needs no 17 MiB of disk.
    REQUIRE(::truncate(file.c_str(), (17 << 20)) == 0);
    CHECK(refusal(file).find("larger than 16 MiB") != std::string::npos);
    REQUIRE(::truncate(file.c_str(), (16 << 20)) == 0);
    CHECK(refusal(file).find("larger than") == std::string::npos);
}

TEST_CASE("users file: a reload of a readable file throws and keeps the users") {
    TempDir dir;
    fs::path file = dir.path / "users.toml";
    writeUsersFile(file, one("alice"));
    UserStore store(file);
    std::vector<std::string> roles;
    CHECK(store.authenticate("alice", "pw-alice", roles));
    writeUsersFile(file, one("bob"));
    fs::permissions(file, fs::perms(0644), fs::perm_options::replace);
    CHECK_THROWS_AS(store.reload(), UserStoreError);
    CHECK(store.authenticate("alice", "pw-alice", roles));
    CHECK_FALSE(store.authenticate("bob", "pw-bob", roles));
    // A server does not start on it either.
    CHECK_THROWS_AS(UserStore(file), UserStoreError);
}

TEST_CASE("users: names the server refuses at load are refused by validUserName") {
    CHECK(validUserName("operator"));
    CHECK(validUserName("Jürgen Müller"));
    CHECK(validUserName(std::string(256, 'a')));
    CHECK_FALSE(validUserName(""));
    CHECK_FALSE(validUserName(std::string(257, 'a')));
    CHECK_FALSE(validUserName("bad\nname"));
    CHECK_FALSE(validUserName(std::string("nul\0x", 5)));
    CHECK_FALSE(validUserName("del\x7f"));
}

TEST_CASE("users: an unknown name costs the iterations of one of the users, stable per name") {
    TempDir dir;
    fs::path file = dir.path / "users.toml";
    // No users: the default count (what a new user gets).
    {
        UserStore empty(file);
        CHECK(empty.iterationsFor("nobody") == kDefaultHashIterations);
    }
    // One user with a count other than the default: every unknown name costs that count
    // (before, unknown names cost the default and so told this user's name apart).
    writeUsersFile(file, one("slow", 3000));
    UserStore single(file);
    CHECK(single.iterationsFor("slow") == 3000);
    for (const char* n : {"nobody", "admin", "root", "operator", ""})
        CHECK(single.iterationsFor(n) == 3000);

    // Several counts: each unknown name gets one of them, the same each time and after a
    // reload of the same file; over many names, each count turns up.
    std::vector<UserRecord> users;
    users.push_back({"a", {}, hashPassword("x", 1000)});
    users.push_back({"b", {}, hashPassword("x", 2000)});
    users.push_back({"c", {}, hashPassword("x", 4000)});
    writeUsersFile(file, users);
    UserStore store(file);
    CHECK(store.iterationsFor("a") == 1000);
    CHECK(store.iterationsFor("b") == 2000);
    CHECK(store.iterationsFor("c") == 4000);
    std::map<std::uint32_t, int> seen;
    std::map<std::string, std::uint32_t> first;
    for (int i = 0; i < 300; ++i) {
        std::string name = "guess-" + std::to_string(i);
        std::uint32_t n = store.iterationsFor(name);
        CHECK((n == 1000 || n == 2000 || n == 4000));
        CHECK(store.iterationsFor(name) == n);
        first[name] = n;
        ++seen[n];
    }
    CHECK(seen.size() == 3);
    for (const auto& [n, count] : seen) CHECK(count > 50);  // about 100 each
    UserStore again(file);
    for (const auto& [name, n] : first) CHECK(again.iterationsFor(name) == n);

    // The unknown name is still refused, whichever count it costs.
    std::vector<std::string> roles;
    CHECK_FALSE(store.authenticate("guess-1", "x", roles));
    CHECK(store.authenticate("a", "x", roles));
}
