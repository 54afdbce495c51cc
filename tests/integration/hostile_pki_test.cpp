// SPDX-License-Identifier: Apache-2.0
// Hostile clients against the real `uaplex`: the OpenSecureChannel certificate path. A flood
// of OPNs with ever new untrusted certificates and no valid signature writes nothing to
// rejected/certs and logs within its budget; certificates that proved their key are kept,
// within max_rejected_certificates; a constant client nonce is BadNonceInvalid. Legitimate
// clients are served throughout and the server's memory stays bounded.
#include <catch2/catch.hpp>

#include <chrono>
#include <sstream>

#include "support/client_services.hpp"
#include "support/raw_http.hpp"
#include "support/server_process.hpp"
#include "support/test_certificates.hpp"

using namespace uaplex;
using test::Client;
namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t kMaxRejected = 5;
constexpr std::uint32_t kLogsPerMinute = 10;

std::uint16_t adminPort() {
    static const std::uint16_t port = test::freePort();
    return port;
}

test::ServerProcess& pkiServer() {
    static test::ServerProcess s("hostile-pki", [](std::uint16_t port, const fs::path& dir) {
        std::ostringstream t;
        t << "[log]\nlevel = \"info\"\nsink = \"file\"\nfile = \"" << (dir / "uaplex.log").string()
          << "\"\n"
          << "[host]\nplugin_dirs = [\"" UAPLEX_PLUGIN_DIR "\"]\n"
          << "[server]\nendpoints = [\"opc.tcp://127.0.0.1:" << port << "\"]\n"
          << "application_uri = \"urn:hostile:pki\"\n"
          << "security = [{policy = \"None\"}, {policy = \"Basic256Sha256\"}]\n"
          << "pki_dir = \"" << (dir / "pki").string() << "\"\n"
          << "[server.limits]\nmax_rejected_certificates = " << kMaxRejected << "\n"
          << "max_certificate_refusal_logs_per_minute = " << kLogsPerMinute << "\n"
          << "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n[plugins.transport-tcp]\n"
          << "[admin]\nenabled = true\nlisten = \"127.0.0.1:" << adminPort() << "\"\n";
        return t.str();
    });
    return s;
}

std::shared_ptr<security::Certificate> serverCertificate(const test::ServerProcess& s) {
    auto c = security::readCertificate(s.dir / "pki/own/certs/uaplex.der");
    REQUIRE(c);
    return c;
}

std::size_t filesIn(const fs::path& dir) {
    std::size_t n = 0;
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir, ec); it != fs::directory_iterator();
         it.increment(ec))
        ++n;
    return n;
}

// Hello, then `chunk` as the first OPN: the ERR status, or Good when the server answered OPN.
uaplex_status openWith(std::uint16_t port, const std::vector<std::uint8_t>& chunk) {
    Client c;
    REQUIRE(c.connect(port, 10000));
    REQUIRE(c.sendRaw(Client::hello("opc.tcp://127.0.0.1:" + std::to_string(port))));
    auto ack = c.receive();
    REQUIRE(ack.size() == 28);
    REQUIRE(c.sendRaw(chunk));
    auto resp = c.receive();
    if (resp.size() >= 12 && std::memcmp(resp.data(), "ERR", 3) == 0) return Client::get(resp, 8);
    if (resp.size() >= 12 && std::memcmp(resp.data(), "OPN", 3) == 0) return UAPLEX_Good;
    return UAPLEX_BadConnectionClosed;
}

std::size_t logLines(const test::ServerProcess& s, const std::string& what) {
    std::ifstream in(s.dir / "uaplex.log");
    std::string line;
    std::size_t n = 0;
    while (std::getline(in, line)) n += line.find(what) != std::string::npos;
    return n;
}

// A sample of the admin listener's /metrics ("name{labels}" as served); -1 when absent.
double metric(const std::string& sample) {
    auto reply = test::httpGet(adminPort(), "/metrics");
    REQUIRE(reply.status == 200);
    auto at = reply.body.find("\n" + sample + " ");
    if (at == std::string::npos) return -1;
    return std::stod(reply.body.substr(at + sample.size() + 2));
}

std::vector<std::uint8_t> randomBytes(std::size_t n) {
    std::vector<std::uint8_t> v(n);
    REQUIRE(security::randomBytes(v));
    return v;
}

const security::PolicyInfo& basic256Sha256() {
    return *security::findPolicy("Basic256Sha256");
}

}  // namespace

TEST_CASE("hostile pki: an OPN flood with new untrusted certificates and no valid signature") {
    auto& s = pkiServer();
    REQUIRE(s.alive());
    auto server = serverCertificate(s);
    test::IssueOptions o;
    o.name = {{"O", "attacker"}, {"CN", "flood"}};
    o.keyUsage = "critical,digitalSignature,nonRepudiation,keyEncipherment,dataEncipherment";
    auto base = test::issueCertificate(o);
    REQUIRE(base.cert);
    test::legitimateClientServed(s.port);
    long rssBefore = s.rssKb();
    constexpr int kAttempts = 300;
    int refused = 0;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kAttempts; ++i) {
        // One signature byte changed: a new thumbprint each time, still a parseable
        // certificate; the "encrypted" part is noise.
        auto der = base.cert->der;
        der[der.size() - 1 - std::size_t(i % 200)] ^= std::uint8_t(1 + i / 200);
        auto chunk =
            test::opnChunk(basic256Sha256().uri, der, server->thumbprint, randomBytes(2 * 256));
        refused += openWith(s.port, chunk) == UAPLEX_BadSecurityChecksFailed;
        if (i % 50 == 49) test::legitimateClientServed(s.port);
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    long rssAfter = s.rssKb();
    INFO("flood of " << kAttempts << " OPNs took " << seconds << " s; VmRSS " << rssBefore << " -> "
                     << rssAfter << " kB");
    CHECK(refused == kAttempts);
    // Nothing proved possession of a key: nothing recorded.
    CHECK(filesIn(s.dir / "pki/rejected/certs") == 0);
    // The refusal log keeps to its budget: one minute's worth per minute the flood took (on a
    // loaded machine it may take longer than one).
    const std::size_t refusalLines = logLines(s, "refused client certificate");
    CHECK(refusalLines >= 1);  // logged at all: else the bound below holds whatever happens
    CHECK(refusalLines <= kLogsPerMinute * (1 + std::size_t(seconds / 60)));
    CHECK(rssAfter > 0);
    CHECK(rssAfter - rssBefore < 16 * 1024);
    test::legitimateClientServed(s.port);
    CHECK(s.alive());
}

TEST_CASE("hostile pki: proven untrusted certificates are kept, within the store's bound") {
    auto& s = pkiServer();
    REQUIRE(s.alive());
    auto server = serverCertificate(s);
    const fs::path rejected = s.dir / "pki/rejected/certs";
    const std::string untrusted =
        "uaplex_certificates_rejected_total{kind=\"application\",status="
        "\"BadCertificateUntrusted\"}";
    const double untrustedBefore = metric(untrusted);
    REQUIRE(untrustedBefore >= 0);
    std::vector<test::TestIdentity> clients;
    for (std::uint32_t i = 0; i < kMaxRejected + 3; ++i) {
        test::IssueOptions o;
        o.name = {{"O", "visitor"}, {"CN", "client-" + std::to_string(i)}};
        o.uri = "urn:hostile:visitor";
        o.keyUsage = "critical,digitalSignature,nonRepudiation,keyEncipherment,dataEncipherment";
        o.serial = 100 + i;
        clients.push_back(test::issueCertificate(o));
        REQUIRE(clients.back().cert);
        auto chunk = test::securedOpn(basic256Sha256(), clients.back(), server, randomBytes(32));
        REQUIRE(!chunk.empty());
        // The peer still sees only BadSecurityChecksFailed.
        CHECK(openWith(s.port, chunk) == UAPLEX_BadSecurityChecksFailed);
        CHECK(filesIn(rejected) == std::min<std::size_t>(i + 1, kMaxRejected));
    }
    // The newest are kept, the first evicted.
    CHECK(!fs::exists(rejected / (clients.front().cert->thumbprintHex() + ".der")));
    fs::path last = rejected / (clients.back().cert->thumbprintHex() + ".der");
    REQUIRE(fs::exists(last));
    auto stamp = fs::last_write_time(last);
    // The same certificate again: not rewritten.
    CHECK(openWith(s.port, test::securedOpn(basic256Sha256(), clients.back(), server,
                                            randomBytes(32))) == UAPLEX_BadSecurityChecksFailed);
    CHECK(fs::last_write_time(last) == stamp);
    CHECK(filesIn(rejected) == kMaxRejected);
    // Every refusal is counted, also of a certificate already recorded.
    CHECK(metric(untrusted) - untrustedBefore == kMaxRejected + 3 + 1);
    CHECK(metric("uaplex_certificates_rejected_total{kind=\"user\",status="
                 "\"BadCertificateUntrusted\"}") == 0);
    // Trusted by moving it from rejected/ to trusted/: the channel opens, no restart.
    fs::rename(last, s.dir / "pki/trusted/certs" / last.filename());
    CHECK(openWith(s.port, test::securedOpn(basic256Sha256(), clients.back(), server,
                                            randomBytes(32))) == UAPLEX_Good);
    test::legitimateClientServed(s.port);
}

TEST_CASE("hostile pki: a constant client nonce is BadNonceInvalid") {
    auto& s = pkiServer();
    REQUIRE(s.alive());
    auto server = serverCertificate(s);
    test::IssueOptions o;
    o.name = {{"O", "plant"}, {"CN", "trusted client"}};
    o.uri = "urn:hostile:trusted";
    o.keyUsage = "critical,digitalSignature,nonRepudiation,keyEncipherment,dataEncipherment";
    auto client = test::issueCertificate(o);
    REQUIRE(client.cert);
    test::writeBytes(s.dir / "pki/trusted/certs/client.der", client.cert->der);
    CHECK(openWith(s.port, test::securedOpn(basic256Sha256(), client, server,
                                            std::vector<std::uint8_t>(32, 0))) ==
          UAPLEX_BadNonceInvalid);
    CHECK(openWith(s.port, test::securedOpn(basic256Sha256(), client, server,
                                            std::vector<std::uint8_t>(32, 0x5a))) ==
          UAPLEX_BadNonceInvalid);
    CHECK(openWith(s.port, test::securedOpn(basic256Sha256(), client, server, randomBytes(32))) ==
          UAPLEX_Good);
    test::legitimateClientServed(s.port);
}
