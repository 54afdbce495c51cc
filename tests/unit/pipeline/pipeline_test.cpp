// SPDX-License-Identifier: Apache-2.0
// The request pipeline alone: this executable links uaplex_pipeline without the server, so a
// reference from the pipeline to the server, the services or the subscription engine fails to
// link; and the request prefix the I/O thread reads before queueing, on hostile input.
#include <catch2/catch.hpp>

#include <uaplex/pipeline/dispatch.hpp>
#include <uaplex/pipeline/pipeline.hpp>

#include <cstdint>
#include <vector>

using namespace uaplex;

namespace {

void u32(std::vector<std::uint8_t>& m, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) m.push_back(std::uint8_t(v >> (8 * i)));
}

// A request message's start: the encoding NodeId (four-byte form), a ByteString
// AuthenticationToken, timestamp, RequestHandle, returnDiagnostics, auditEntryId, TimeoutHint.
std::vector<std::uint8_t> requestStart(std::uint32_t encodingId, std::uint32_t handle,
                                       std::uint32_t timeoutHint) {
    std::vector<std::uint8_t> m{0x01, 0x00, std::uint8_t(encodingId),
                                std::uint8_t(encodingId >> 8)};
    m.push_back(0x05);  // ByteString NodeId
    m.push_back(0x00);
    m.push_back(0x00);
    u32(m, 4);
    for (std::uint8_t b : {1, 2, 3, 4}) m.push_back(b);
    for (int i = 0; i < 8; ++i) m.push_back(0);  // timestamp
    u32(m, handle);
    u32(m, 0);           // returnDiagnostics
    u32(m, 0xFFFFFFFF);  // auditEntryId: null
    u32(m, timeoutHint);
    return m;
}

}  // namespace

TEST_CASE("the part links without the server") {
    // Taking the entry points pulls their objects, and everything they call, into this
    // executable, which has only uaplex_pipeline and what it links below it.
    void (pipeline::Pipeline::*start)(std::string_view) = &pipeline::Pipeline::start;
    std::int64_t (pipeline::Pipeline::*housekeep)(std::int64_t) = &pipeline::Pipeline::housekeep;
    CHECK(start != nullptr);
    CHECK(housekeep != nullptr);
}

TEST_CASE("request prefix: encoding id, token, handle and TimeoutHint") {
    auto m = requestStart(631, 77, 1500);  // ReadRequest_Encoding_DefaultBinary
    pipeline::RequestPrefix p = pipeline::peekPrefix(m);
    REQUIRE(p.ok);
    CHECK(p.encodingId == 631);
    CHECK(p.requestHandle == 77);
    CHECK(p.timeoutHint == 1500);
    REQUIRE(p.authenticationToken.identifier_type == UAPLEX_ID_BYTESTRING);
    CHECK(p.authenticationToken.identifier.bytestring.length == 4);
    // The token points into the message: nothing was copied or allocated.
    CHECK(p.authenticationToken.identifier.bytestring.data == m.data() + 11);
}

TEST_CASE("request prefix: every truncation is refused or read without the missing part") {
    const auto m = requestStart(631, 77, 1500);
    for (std::size_t n = 0; n < m.size(); ++n) {
        std::vector<std::uint8_t> cut(m.begin(), m.begin() + std::ptrdiff_t(n));
        pipeline::RequestPrefix p = pipeline::peekPrefix(cut);
        // Up to the RequestHandle the prefix is all or nothing; past it the TimeoutHint
        // is 0 unless all of it arrived.
        CHECK(p.ok == (n >= 4 + 11 + 12));
        CHECK(p.timeoutHint == 0);
        if (!p.ok) CHECK(p.requestHandle == 0);
    }
}

TEST_CASE("request prefix: a token longer than the message is refused") {
    auto m = requestStart(631, 77, 1500);
    m[7] = 0xFF;  // the ByteString's length: far past the end
    m[8] = 0xFF;
    CHECK_FALSE(pipeline::peekPrefix(m).ok);
}
