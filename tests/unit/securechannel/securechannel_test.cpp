// SPDX-License-Identifier: Apache-2.0
// Secure channel: sequence numbers, tokens (renew, expiry) with a fake clock, chunk assembly
// (C/F/A and limits), OPN Issue/Renew, MSG/CLO handling and chunked sending.
#include <catch2/catch.hpp>

#include "support/fake_channel.hpp"

using namespace uaplex;
using namespace uaplex::securechannel;
using test::FakeOutput;

TEST_CASE("sequence numbers must increase by one; wrap only past UInt32.MaxValue - 1024") {
    SequenceChecker s;
    CHECK(s.accept(51));
    CHECK(s.accept(52));
    CHECK_FALSE(s.accept(52));  // replay
    SequenceChecker t;
    CHECK(t.accept(100));
    CHECK_FALSE(t.accept(102));  // gap
    SequenceChecker w;
    CHECK(w.accept(4294967000u));
    CHECK(w.accept(4294967001u));
    CHECK(w.accept(5));  // wrap to a value below 1024
    CHECK(w.accept(6));
    SequenceChecker early;
    CHECK(early.accept(1000));
    CHECK_FALSE(early.accept(3));  // no wrap before the limit
    SequenceChecker late;
    CHECK(late.accept(4294967200u));
    CHECK_FALSE(late.accept(2000));  // after a wrap the number must be below 1024

    SequenceCounter c;
    CHECK(c.next() == 1);
    CHECK(c.next() == 2);
    c.set(SequenceChecker::kWrapLimit + 1);
    c.next();
    CHECK(c.next() == 1);
}

TEST_CASE("tokens: lifetime revised into bounds, renew overlap, expiry") {
    TokenState t(10000, 600000);
    CHECK(t.revise(1) == 10000);
    CHECK(t.revise(1u << 31) == 600000);
    auto first = t.issue(0, 20000);
    CHECK(first.id == 1);
    CHECK(first.lifetimeMs == 20000);
    CHECK(t.use(1, 1000) == UAPLEX_Good);
    CHECK(t.use(9, 1000) == UAPLEX_BadSecureChannelTokenUnknown);
    // Renewed at 75%: the old token stays valid until the client uses the new one.
    auto second = t.renew(15000, 20000);
    CHECK(second.id == 2);
    CHECK(t.sendTokenId() == 1);
    CHECK(t.use(1, 15001) == UAPLEX_Good);
    CHECK(t.use(2, 15002) == UAPLEX_Good);
    CHECK(t.sendTokenId() == 2);
    CHECK(t.use(1, 15003) == UAPLEX_BadSecureChannelTokenUnknown);  // superseded
    // Expiry: lifetime plus a quarter of grace.
    CHECK_FALSE(t.expired(15000 + 25000 - 1));
    CHECK(t.expired(15000 + 25000));
    CHECK(t.use(2, 40000) == UAPLEX_BadSecureChannelTokenUnknown);
}

TEST_CASE("chunk assembly: intermediate, final, abort and limits") {
    ChunkAssembler a(100, 3);
    std::vector<std::uint8_t> ten(10, 1);
    CHECK(a.add('C', 5, ten) == ChunkAssembler::Result::Incomplete);
    CHECK(a.add('C', 5, ten) == ChunkAssembler::Result::Incomplete);
    CHECK(a.add('F', 5, ten) == ChunkAssembler::Result::Complete);
    CHECK(a.body().size() == 30);
    CHECK(a.requestId() == 5);
    // Abort: discarded, nothing to answer.
    CHECK(a.add('C', 6, ten) == ChunkAssembler::Result::Incomplete);
    CHECK(a.add('A', 6, {}) == ChunkAssembler::Result::Aborted);
    // Too many chunks: refused once, then the rest is discarded until the final chunk.
    CHECK(a.add('C', 7, ten) == ChunkAssembler::Result::Incomplete);
    CHECK(a.add('C', 7, ten) == ChunkAssembler::Result::Incomplete);
    CHECK(a.add('C', 7, ten) == ChunkAssembler::Result::Incomplete);
    CHECK(a.add('C', 7, ten) == ChunkAssembler::Result::TooLarge);
    CHECK(a.add('C', 7, ten) == ChunkAssembler::Result::Discarded);
    CHECK(a.add('F', 7, ten) == ChunkAssembler::Result::Discarded);
    // Too large a message.
    std::vector<std::uint8_t> big(101, 2);
    CHECK(a.add('F', 8, big) == ChunkAssembler::Result::TooLarge);
    // Interleaving another request id.
    CHECK(a.add('C', 9, ten) == ChunkAssembler::Result::Incomplete);
    CHECK(a.add('F', 10, ten) == ChunkAssembler::Result::Mismatch);
}

namespace {

struct Fixture {
    FakeOutput out;
    ChannelLimits limits;
    SecureChannel ch;
    std::uint32_t seq = 1;
    std::uint32_t token = 0;
    Fixture(std::uint32_t maxMessage = 1 << 20, std::uint32_t maxChunks = 16)
        : limits{maxMessage, maxChunks, 10000, 60000, {}}, ch(limits, out) {
        Negotiated n;
        n.sendBufferSize = 8192;
        ch.setNegotiated(n);
    }
    SecureChannel::Event feed(std::vector<std::uint8_t> chunk, std::int64_t now = 0) {
        return ch.onChunk(chunk, Clock{now, 0}, 42);
    }
    void open() {
        REQUIRE(feed(test::openChunk(0, seq++, 1, ua::SecurityTokenRequestType::Issue, 30000)) ==
                SecureChannel::Event::None);
        REQUIRE(out.failed == UAPLEX_Good);
        REQUIRE(out.sent.size() == 1);
        enc::Arena arena;
        auto resp = test::decodeOpenResponse(out.sent.back(), arena);
        token = resp.securityToken.tokenId;
        REQUIRE(resp.securityToken.channelId == 42);
        REQUIRE(token != 0);
    }
};

}  // namespace

TEST_CASE("OPN Issue opens the channel with a revised lifetime; Renew gives a new token") {
    Fixture f;
    f.feed(test::openChunk(0, f.seq++, 1, ua::SecurityTokenRequestType::Issue, 1));
    REQUIRE(f.out.sent.size() == 1);
    CHECK(std::memcmp(f.out.sent[0].data(), "OPNF", 4) == 0);
    CHECK(test::get32(f.out.sent[0], 8) == 42);
    enc::Arena arena;
    auto resp = test::decodeOpenResponse(f.out.sent[0], arena);
    CHECK(resp.responseHeader.requestHandle == 7);
    CHECK(resp.securityToken.revisedLifetime == 10000);  // raised to the minimum
    CHECK(f.out.wasOpened);
    CHECK(f.ch.id() == 42);
    f.feed(test::openChunk(42, f.seq++, 2, ua::SecurityTokenRequestType::Renew, 90000));
    REQUIRE(f.out.sent.size() == 2);
    auto renewed = test::decodeOpenResponse(f.out.sent[1], arena);
    CHECK(renewed.securityToken.tokenId == resp.securityToken.tokenId + 1);
    CHECK(renewed.securityToken.revisedLifetime == 60000);  // lowered to the maximum
    CHECK(f.out.failed == UAPLEX_Good);
}

TEST_CASE("OPN with another policy or mode, or a second Issue, closes the connection") {
    Fixture a;
    a.feed(test::openChunk(0, 1, 1, ua::SecurityTokenRequestType::Issue, 30000,
                           "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256"));
    CHECK(a.out.failed == UAPLEX_BadSecurityPolicyRejected);
    Fixture b;
    b.feed(test::openChunk(0, 1, 1, ua::SecurityTokenRequestType::Issue, 30000, kSecurityPolicyNone,
                           ua::MessageSecurityMode::SignAndEncrypt));
    CHECK(b.out.failed == UAPLEX_BadSecurityModeRejected);
    Fixture c;
    c.open();
    c.feed(test::openChunk(0, c.seq++, 2, ua::SecurityTokenRequestType::Issue, 30000));
    CHECK(c.out.failed == UAPLEX_BadSecureChannelIdInvalid);
}

TEST_CASE("MSG before OPN, wrong channel, unknown token and bad sequence close the channel") {
    Fixture a;
    a.feed(test::msgChunk("MSGF", 42, 1, 1, 1, {1, 2, 3}));
    CHECK(a.out.failed == UAPLEX_BadSecureChannelIdInvalid);
    Fixture b;
    b.open();
    b.feed(test::msgChunk("MSGF", 43, b.token, b.seq++, 2, {1}));
    CHECK(b.out.failed == UAPLEX_BadSecureChannelIdInvalid);
    Fixture c;
    c.open();
    c.feed(test::msgChunk("MSGF", 42, c.token + 5, c.seq++, 2, {1}));
    CHECK(c.out.failed == UAPLEX_BadSecureChannelTokenUnknown);
    Fixture d;
    d.open();
    d.feed(test::msgChunk("MSGF", 42, d.token, d.seq + 3, 2, {1}));
    CHECK(d.out.failed == UAPLEX_BadSequenceNumberInvalid);
}

TEST_CASE(
    "MSG chunks are assembled; abort is silent; too large is aborted with BadRequestTooLarge") {
    Fixture f(100, 4);
    f.open();
    std::vector<std::uint8_t> part(40, 9);
    CHECK(f.feed(test::msgChunk("MSGC", 42, f.token, f.seq++, 5, part)) ==
          SecureChannel::Event::None);
    CHECK(f.feed(test::msgChunk("MSGF", 42, f.token, f.seq++, 5, part)) ==
          SecureChannel::Event::Message);
    CHECK(f.ch.assembledBody().size() == 80);
    CHECK(f.ch.assembledRequestId() == 5);
    std::size_t sent = f.out.sent.size();
    CHECK(f.feed(test::msgChunk("MSGC", 42, f.token, f.seq++, 6, part)) ==
          SecureChannel::Event::None);
    CHECK(f.feed(test::msgChunk("MSGA", 42, f.token, f.seq++, 6, {})) ==
          SecureChannel::Event::None);
    CHECK(f.out.sent.size() == sent);
    // 3 x 40 > 100 bytes.
    f.feed(test::msgChunk("MSGC", 42, f.token, f.seq++, 7, part));
    f.feed(test::msgChunk("MSGC", 42, f.token, f.seq++, 7, part));
    f.feed(test::msgChunk("MSGC", 42, f.token, f.seq++, 7, part));
    REQUIRE(f.out.sent.size() == sent + 1);
    const auto& abort = f.out.sent.back();
    CHECK(std::memcmp(abort.data(), "MSGA", 4) == 0);
    CHECK(test::get32(abort, 20) == 7);
    CHECK(test::get32(abort, 24) == UAPLEX_BadRequestTooLarge);
    CHECK(f.feed(test::msgChunk("MSGF", 42, f.token, f.seq++, 7, part)) ==
          SecureChannel::Event::None);
    CHECK(f.out.failed == UAPLEX_Good);
}

TEST_CASE("CLO closes without a response") {
    Fixture f;
    f.open();
    CHECK(f.feed(test::msgChunk("CLOF", 42, f.token, f.seq++, 3, {})) ==
          SecureChannel::Event::Closed);
    CHECK(f.out.closed);
    CHECK(f.out.failed == UAPLEX_Good);
}

TEST_CASE("responses are chunked to the send buffer size and refused beyond the client's limits") {
    Fixture f;
    f.open();
    f.out.sent.clear();
    std::vector<uaplex_buffer> scratch;
    std::vector<std::uint8_t> body(20000);
    for (std::size_t i = 0; i < body.size(); ++i) body[i] = std::uint8_t(i);
    REQUIRE(f.ch.sendMessage(11, body, scratch) == UAPLEX_Good);
    REQUIRE(f.out.sent.size() == 3);  // 8168 bytes of body per 8192-byte chunk
    std::vector<std::uint8_t> joined;
    std::uint32_t lastSeq = 0;
    for (std::size_t i = 0; i < 3; ++i) {
        const auto& c = f.out.sent[i];
        CHECK(c.size() <= 8192);
        CHECK(c[3] == (i == 2 ? 'F' : 'C'));
        CHECK(test::get32(c, 4) == c.size());
        CHECK(test::get32(c, 20) == 11);
        if (i) CHECK(test::get32(c, 16) == lastSeq + 1);
        lastSeq = test::get32(c, 16);
        joined.insert(joined.end(), c.begin() + 24, c.end());
    }
    CHECK(joined == body);
    Negotiated n;
    n.sendBufferSize = 8192;
    n.clientMaxChunkCount = 2;
    f.ch.setNegotiated(n);
    CHECK(f.ch.sendMessage(12, body, scratch) == UAPLEX_BadResponseTooLarge);
    n.clientMaxChunkCount = 0;
    n.clientMaxMessageSize = 10000;
    f.ch.setNegotiated(n);
    CHECK(f.ch.sendMessage(12, body, scratch) == UAPLEX_BadResponseTooLarge);
    CHECK(f.out.sent.size() == 3);
    CHECK(f.out.outstanding == 0);
    f.ch.markClosed();
    CHECK(f.ch.sendMessage(13, std::vector<std::uint8_t>(10), scratch) ==
          UAPLEX_BadSecureChannelClosed);
    CHECK(f.out.outstanding == 0);
}

TEST_CASE("a channel whose token expired without renewal reports expiry") {
    Fixture f;
    f.open();  // lifetime 30000 at t=0
    CHECK_FALSE(f.ch.expired(30000));
    CHECK(f.ch.expired(37500));
    f.feed(test::openChunk(42, f.seq++, 2, ua::SecurityTokenRequestType::Renew, 30000), 20000);
    CHECK_FALSE(f.ch.expired(37500));
    CHECK(f.ch.expired(57500));
}

namespace {

// One server-wide budget shared by several channels, each with its own account of what its
// unfinished message holds (as the kernel's connections keep theirs).
struct SharedBudget {
    std::int64_t limit;
    std::int64_t used = 0;
    int grants = 0;
};
struct ChannelBudget final : ReassemblyBudget {
    explicit ChannelBudget(SharedBudget& s) : shared(s) {}
    bool charge(std::size_t bytes) noexcept override {
        if (shared.used + std::int64_t(bytes) > shared.limit) return false;
        shared.used += std::int64_t(bytes);
        held += bytes;
        ++shared.grants;
        return true;
    }
    void releaseAll() noexcept override {
        shared.used -= std::int64_t(held);
        held = 0;
    }
    SharedBudget& shared;
    std::size_t held = 0;
};

}  // namespace

TEST_CASE("chunk assembly: intermediate chunks are charged to the budget, released when done") {
    SharedBudget shared{1000};
    ChannelBudget budget(shared);
    ChunkAssembler a(10000, 100);
    a.setBudget(&budget);
    std::vector<std::uint8_t> hundred(100, 3);
    // A single-chunk message is complete at once: never charged.
    CHECK(a.add('F', 1, hundred) == ChunkAssembler::Result::Complete);
    CHECK(shared.grants == 0);
    // Intermediate chunks are charged in doubling steps; the final chunk gives it all back.
    for (int i = 0; i < 4; ++i) CHECK(a.add('C', 2, hundred) == ChunkAssembler::Result::Incomplete);
    CHECK(budget.held >= 400);
    CHECK(shared.grants <= 3);  // 100, 200, 400: log2 of the chunks, not one per chunk
    CHECK(a.add('F', 2, hundred) == ChunkAssembler::Result::Complete);
    CHECK(a.body().size() == 500);
    CHECK(shared.used == 0);
    CHECK(a.charged() == 0);
    // Beyond the budget: refused once, the rest of the message discarded, nothing held.
    for (int i = 0; i < 10; ++i)
        CHECK(a.add('C', 3, hundred) == ChunkAssembler::Result::Incomplete);
    CHECK(a.add('C', 3, hundred) == ChunkAssembler::Result::NoResources);
    CHECK(shared.used == 0);
    CHECK(a.add('C', 3, hundred) == ChunkAssembler::Result::Discarded);
    CHECK(a.add('F', 3, hundred) == ChunkAssembler::Result::Discarded);
    CHECK(shared.used == 0);
    // An aborted message and a closed connection give their charge back too.
    CHECK(a.add('C', 4, hundred) == ChunkAssembler::Result::Incomplete);
    CHECK(shared.used > 0);
    CHECK(a.add('A', 4, {}) == ChunkAssembler::Result::Aborted);
    CHECK(shared.used == 0);
    CHECK(a.add('C', 5, hundred) == ChunkAssembler::Result::Incomplete);
    a.releaseBody();
    CHECK(shared.used == 0);
}

TEST_CASE(
    "reassembly budget: once spent, the next channel's partial message is aborted with "
    "BadTcpNotEnoughResources and its channel stays open") {
    // Each channel may hold a message of 1 MiB; the budget across channels is 200 KiB.
    SharedBudget shared{200 * 1024};
    constexpr int kChannels = 4;
    std::vector<std::unique_ptr<Fixture>> f;
    std::vector<std::unique_ptr<ChannelBudget>> budgets;
    for (int i = 0; i < kChannels; ++i) {
        f.push_back(std::make_unique<Fixture>(1 << 20, 64));
        budgets.push_back(std::make_unique<ChannelBudget>(shared));
        f.back()->ch.setReassemblyBudget(budgets.back().get());
        f.back()->open();
    }
    std::vector<std::uint8_t> part(60000, 1);
    // Channel 0 and 1 hold 120 KB and 60 KB of unfinished messages.
    for (int i = 0; i < 2; ++i)
        CHECK(f[0]->feed(test::msgChunk("MSGC", 42, f[0]->token, f[0]->seq++, 9, part), 1000) ==
              SecureChannel::Event::None);
    CHECK(f[0]->ch.assemblyActivityMs() == 1000);
    CHECK(f[1]->feed(test::msgChunk("MSGC", 42, f[1]->token, f[1]->seq++, 9, part)) ==
          SecureChannel::Event::None);
    // Channel 2 gets nothing: its message is aborted, nothing held, the channel still open.
    const std::size_t before = f[2]->out.sent.size();
    CHECK(f[2]->feed(test::msgChunk("MSGC", 42, f[2]->token, f[2]->seq++, 9, part)) ==
          SecureChannel::Event::None);
    REQUIRE(f[2]->out.sent.size() == before + 1);
    const auto& abort = f[2]->out.sent.back();
    CHECK(std::memcmp(abort.data(), "MSGA", 4) == 0);
    CHECK(test::get32(abort, 20) == 9);
    CHECK(test::get32(abort, 24) == UAPLEX_BadTcpNotEnoughResources);
    CHECK(f[2]->out.failed == UAPLEX_Good);
    CHECK(budgets[2]->held == 0);
    CHECK(f[2]->ch.assemblyActivityMs() == 0);
    // Its following chunks are dropped; a single-chunk request is still served.
    CHECK(f[2]->feed(test::msgChunk("MSGF", 42, f[2]->token, f[2]->seq++, 9, part)) ==
          SecureChannel::Event::None);
    CHECK(f[2]->feed(test::msgChunk("MSGF", 42, f[2]->token, f[2]->seq++, 10, part)) ==
          SecureChannel::Event::Message);
    CHECK(shared.used <= shared.limit);
    // Channel 0 completes its message: the budget is back for channel 3.
    CHECK(f[0]->feed(test::msgChunk("MSGF", 42, f[0]->token, f[0]->seq++, 9, part)) ==
          SecureChannel::Event::Message);
    CHECK(f[0]->ch.assembledBody().size() == 3 * part.size());
    CHECK(budgets[0]->held == 0);
    CHECK(f[3]->feed(test::msgChunk("MSGC", 42, f[3]->token, f[3]->seq++, 9, part)) ==
          SecureChannel::Event::None);
    CHECK(f[3]->feed(test::msgChunk("MSGF", 42, f[3]->token, f[3]->seq++, 9, part)) ==
          SecureChannel::Event::Message);
    // Closing a connection mid-message gives its share back.
    f[1]->ch.releaseAssembly();
    CHECK(shared.used == 0);
}
