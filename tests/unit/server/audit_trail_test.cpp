// SPDX-License-Identifier: Apache-2.0
// AuditTrail alone, with a fake ServiceHandler that records the raised events: a refused
// ActivateSession is raised with Status false and its token without the password; a client's
// long or hostile strings keep every line within max_line_bytes and valid; the log rotates at
// max_file_mib keeping one file; a writer that cannot write (a pipe nobody reads) makes the
// services drop and count records, never wait.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uaplex/node_manager.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <uaplex/server/audit_trail.hpp>
#include <uaplex/server/service_handler.hpp>
#include <uaplex/session/server_counters.hpp>
#include <uaplex/session/session_services.hpp>

using namespace uaplex;
using namespace uaplex::server;

namespace {

namespace fs = std::filesystem;

// What one raised event carried, by field name.
struct Raised {
    std::uint32_t type = 0;
    bool status = true;
    std::string user;
    bool hasToken = false;
    std::int32_t tokenPasswordLength = -2;
    std::int32_t items = -1;  // NodesToAdd, ReferencesToAdd, NodesToDelete, ReferencesToDelete
};

struct FakeServices final : ServiceHandler {
    std::vector<Raised> events;
    session::ServerCounters c;
    void* createSessionState() override { return nullptr; }
    void destroySessionState(void*) noexcept override {}
    session::ServerCounters& counters() noexcept override { return c; }
    uaplex_status raiseEvent(const uaplex_event_spec& spec) noexcept override {
        Raised r;
        r.type = spec.event_type->identifier.numeric;
        for (std::uint32_t i = 0; i < spec.field_count; ++i) {
            const auto& f = spec.fields[i];
            std::string_view name = ua::view(f.browse_path[0].name);
            if (name == "Status") r.status = f.value->value.boolean;
            if (name == "ClientUserId") r.user = std::string(ua::view(f.value->value.string));
            if (name == "NodesToAdd" || name == "ReferencesToAdd" || name == "NodesToDelete" ||
                name == "ReferencesToDelete")
                r.items = f.value->array_length;
            if (name == "UserIdentityToken") {
                const auto* eo = static_cast<const ua::ExtensionObject*>(f.value->value.pointer);
                r.hasToken = true;
                if (eo->data_type == enc::dataTypeOf<ua::UserNameIdentityToken>())
                    r.tokenPasswordLength =
                        static_cast<const ua::UserNameIdentityToken*>(eo->object)->password.length;
            }
        }
        events.push_back(r);
        return UAPLEX_Good;
    }
};

fs::path tempDir(const std::string& tag) {
    fs::path d =
        fs::temp_directory_path() / ("uaplex-audit-" + tag + "-" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

config::ServerConfig configWith(const fs::path& file, bool json) {
    config::ServerConfig cfg;
    cfg.audit.enabled = true;
    cfg.audit.file = file;
    cfg.audit.json = json;
    return cfg;
}

std::vector<std::string> lines(const fs::path& f) {
    std::ifstream in(f);
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

// An ActivateSession with a UserName token.
struct Login {
    ua::UserNameIdentityToken token{};
    ua::ActivateSessionRequest req{};
    Login(std::string_view user, std::string_view password, std::string_view auditEntryId = "") {
        token.policyId = ua::makeString("username");
        token.userName = ua::makeString(user);
        token.password = ua::ByteString{
            std::int32_t(password.size()),
            const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(password.data()))};
        token.encryptionAlgorithm = ua::nullString();
        req.requestHeader.auditEntryId = ua::makeString(auditEntryId);
        req.userIdentityToken.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        req.userIdentityToken.type_id = ua::numericNodeId(0, 324);
        req.userIdentityToken.data_type = enc::dataTypeOf<ua::UserNameIdentityToken>();
        req.userIdentityToken.object = &token;
    }
};

}  // namespace

TEST_CASE("audit trail: a refused ActivateSession is raised with Status false, no password") {
    fs::path dir = tempDir("refused");
    FakeServices services;
    {
        AuditTrail trail(configWith(dir / "audit.log", false), services);
        Login login("alice", "s3cret-password");
        trail.activateSession(5, login.req, UAPLEX_BadUserAccessDenied, nullptr);
        trail.certificate({}, UAPLEX_BadCertificateUntrusted, "OpenSecureChannel");
    }
    REQUIRE(services.events.size() == 2);
    const Raised& a = services.events[0];
    CHECK(a.type == 2075);  // AuditActivateSessionEventType
    CHECK_FALSE(a.status);
    CHECK(a.user == "alice");
    CHECK(a.hasToken);
    CHECK(a.tokenPasswordLength <= 0);
    CHECK(services.events[1].type == 2087);  // AuditCertificateUntrustedEventType
    CHECK_FALSE(services.events[1].status);
    auto log = lines(dir / "audit.log");
    REQUIRE(log.size() == 2);
    CHECK_THAT(log[0], Catch::Contains("AuditActivateSessionEventType") &&
                           Catch::Contains("Status=false") && Catch::Contains("0x801F0000"));
    CHECK(log[0].find("s3cret") == std::string::npos);
    CHECK_THAT(log[1], Catch::Contains("AuditCertificateUntrustedEventType"));
    CHECK((fs::status(dir / "audit.log").permissions() & fs::perms::others_read) ==
          fs::perms::none);
    fs::remove_all(dir);
}

TEST_CASE("audit trail: hostile strings keep each line within max_line_bytes and one line") {
    fs::path dir = tempDir("lines");
    FakeServices services;
    config::ServerConfig cfg = configWith(dir / "audit.jsonl", true);
    cfg.audit.max_line_bytes = 256;
    {
        AuditTrail trail(cfg, services);
        std::string longName(100000, 'x');
        Login login(longName, "pw", "entry\n\"}{\x01\xff");
        for (int i = 0; i < 10; ++i) trail.activateSession(1, login.req, UAPLEX_Good, nullptr);
    }
    auto log = lines(dir / "audit.jsonl");
    REQUIRE(log.size() == 10);
    for (const auto& l : log) {
        CHECK(l.size() + 1 <= 256);
        CHECK(l.front() == '{');
        CHECK(l.back() == '}');
        CHECK_THAT(l, Catch::Contains("\"truncated\":true"));
    }
    fs::remove_all(dir);
}

TEST_CASE("audit trail: the log rotates at max_file_mib and keeps one older file") {
    fs::path dir = tempDir("rotate");
    FakeServices services;
    config::ServerConfig cfg = configWith(dir / "audit.log", false);
    cfg.audit.max_file_bytes = 1u << 20;
    cfg.audit.queue_records = 1u << 20;
    {
        AuditTrail trail(cfg, services);
        Login login("bob", "pw");
        for (int i = 0; i < 12000; ++i) trail.activateSession(1, login.req, UAPLEX_Good, nullptr);
    }
    REQUIRE(fs::exists(dir / "audit.log"));
    REQUIRE(fs::exists(dir / "audit.log.1"));
    CHECK(fs::file_size(dir / "audit.log") <= cfg.audit.max_file_bytes);
    CHECK(fs::file_size(dir / "audit.log.1") <= cfg.audit.max_file_bytes);
    CHECK(fs::file_size(dir / "audit.log.1") > cfg.audit.max_file_bytes / 2);
    fs::remove_all(dir);
}

TEST_CASE("audit trail: a writer that cannot write drops and counts, the services go on") {
    fs::path dir = tempDir("drops");
    const fs::path fifo = dir / "audit.pipe";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    // A reader that reads nothing yet: the pipe fills and the writer blocks in write().
    int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    REQUIRE(reader >= 0);
    FakeServices services;
    config::ServerConfig cfg = configWith(fifo, false);
    cfg.audit.queue_records = 16;
    constexpr int kRecords = 5000;
    std::uint64_t dropped = 0;
    std::thread drain;
    {
        AuditTrail trail(cfg, services);
        Login login("carol", "pw");
        for (int i = 0; i < kRecords; ++i)
            trail.activateSession(1, login.req, UAPLEX_Good, nullptr);
        dropped = trail.dropped();
        CHECK(trail.raised() == kRecords);  // every event was raised
        // The pipe holds 64 KiB (a few hundred lines), the queue 16: the rest was dropped.
        CHECK(dropped >= kRecords - 1000);
        // Drained so that the writer can finish and the trail go.
        ::fcntl(reader, F_SETFL, 0);
        drain = std::thread([reader] {
            char buf[65536];
            while (::read(reader, buf, sizeof buf) > 0) {
            }
        });
    }
    drain.join();  // the trail closed its end: the reader saw the end of the pipe
    CHECK(services.events.size() == kRecords);
    ::close(reader);
    fs::remove_all(dir);
}

TEST_CASE("audit trail: one Audit*Nodes/References event per NodeManagement request") {
    fs::path dir = tempDir("nodes");
    FakeServices services;
    {
        AuditTrail trail(configWith(dir / "audit.log", true), services);
        ua::AddNodesItem items[2]{};
        ua::AddNodesRequest add{};
        add.requestHeader.auditEntryId = ua::makeString("entry-1");
        add.nodesToAdd = {2, items};
        ua::AddNodesResult results[2]{};
        ua::AddNodesResponse resp{};
        resp.results = {2, results};
        trail.addNodes("admin", add, UAPLEX_Good, &resp);
        results[1].statusCode = UAPLEX_BadBrowseNameDuplicated;  // one item refused
        trail.addNodes("admin", add, UAPLEX_Good, &resp);
        trail.addNodes("anonymous", add, UAPLEX_BadTooManyOperations, nullptr);
        ua::DeleteNodesItem del{};
        ua::DeleteNodesRequest dn{};
        dn.nodesToDelete = {1, &del};
        ua::StatusCode denied = UAPLEX_BadUserAccessDenied;
        ua::DeleteNodesResponse dresp{};
        dresp.results = {1, &denied};
        trail.deleteNodes("anonymous", dn, UAPLEX_Good, &dresp);
        ua::AddReferencesItem ar{};
        ua::AddReferencesRequest arq{};
        arq.referencesToAdd = {1, &ar};
        ua::StatusCode good = UAPLEX_Good;
        ua::AddReferencesResponse arr{};
        arr.results = {1, &good};
        trail.addReferences("admin", arq, UAPLEX_Good, &arr);
        ua::DeleteReferencesItem dr{};
        ua::DeleteReferencesRequest drq{};
        drq.referencesToDelete = {1, &dr};
        ua::DeleteReferencesResponse drr{};
        drr.results = {1, &good};
        trail.deleteReferences("admin", drq, UAPLEX_Good, &drr);
    }
    REQUIRE(services.events.size() == 6);
    const auto& e = services.events;
    CHECK(e[0].type == 2091);  // AuditAddNodesEventType
    CHECK(e[0].status);
    CHECK(e[0].items == 2);
    CHECK(e[0].user == "admin");
    CHECK_FALSE(e[1].status);  // an item failed
    CHECK_FALSE(e[2].status);  // the request failed: no items
    CHECK(e[2].items == -1);
    CHECK(e[3].type == 2093);  // AuditDeleteNodesEventType
    CHECK_FALSE(e[3].status);
    CHECK(e[3].user == "anonymous");
    CHECK(e[4].type == 2095);  // AuditAddReferencesEventType
    CHECK(e[4].status);
    CHECK(e[4].items == 1);
    CHECK(e[5].type == 2097);  // AuditDeleteReferencesEventType
    std::vector<std::string> log = lines(dir / "audit.log");
    REQUIRE(log.size() == 6);
    CHECK(log[0].find("AuditAddNodesEventType") != std::string::npos);
    CHECK(log[0].find("entry-1") != std::string::npos);
    CHECK(log[1].find("0x80610000") != std::string::npos);  // BadBrowseNameDuplicated
    fs::remove_all(dir);
}
