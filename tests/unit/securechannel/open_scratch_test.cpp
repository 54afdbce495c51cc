// SPDX-License-Identifier: Apache-2.0
// OpenSecureChannel on a thread that already served one: the decode arena and the response
// bytes are the thread's scratch, so a handshake allocates no block of its own for them
// (a burst of handshakes would otherwise leave 8 KiB per handshake between the connections'
// long-lived blocks).
#include <cstdio>
#include <memory>

#include "support/counting_new.hpp"
#include "support/fake_channel.hpp"

using namespace uaplex;
using namespace uaplex::securechannel;

namespace {

// One channel's OPN Issue; the heap bytes allocated while the channel handles it.
std::size_t issueBytes() {
    test::FakeOutput out;
    ChannelLimits limits{1 << 20, 16, 10000, 60000, {}};
    auto ch = std::make_unique<SecureChannel>(limits, out);
    Negotiated n;
    n.sendBufferSize = 8192;
    ch->setNegotiated(n);
    auto chunk = test::openChunk(0, 1, 1, ua::SecurityTokenRequestType::Issue, 30000);
    out.sent.reserve(4);
    test::HeapScope heap;
    auto ev = ch->onChunk(chunk, Clock{0, 0}, 42);
    std::size_t bytes = heap.bytes();
    if (ev != SecureChannel::Event::None || out.failed != UAPLEX_Good || out.sent.size() != 1) {
        std::fprintf(stderr, "OPN Issue failed\n");
        std::exit(2);
    }
    return bytes;
}

}  // namespace

int main() {
    issueBytes();  // the thread's first handshake sizes its scratch
    std::size_t bytes = issueBytes();
    std::printf("second OPN Issue: %zu heap bytes\n", bytes);
    // What is left is the channel's own state and the test output's copy of the response
    // (a few hundred bytes); the arena block and the encode buffer were 4 KiB each.
    if (bytes >= 4096) {
        std::fprintf(stderr, "FAIL: OPN allocates per handshake what a scratch serves\n");
        return 1;
    }
    return 0;
}
