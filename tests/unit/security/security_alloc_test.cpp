// SPDX-License-Identifier: Apache-2.0
// The steady path of a secured channel allocates nothing: securing and checking symmetric
// chunks (AES-CBC + HMAC with the channel's contexts) in both modes, counted with OpenSSL's
// allocator hooks and operator new. A plain executable: the hooks must be set before OpenSSL
// allocates anything.
#include <openssl/crypto.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <uaplex/security/channel_security.hpp>
#include <uaplex/security/pki.hpp>
#include "support/counting_new.hpp"

using namespace uaplex;
using namespace uaplex::security;
using securechannel::SecurityMode;

namespace {

std::atomic<std::size_t> gOpenSsl{0};
void* countMalloc(std::size_t n, const char*, int) {
    gOpenSsl.fetch_add(1);
    return std::malloc(n);
}
void* countRealloc(void* p, std::size_t n, const char*, int) {
    gOpenSsl.fetch_add(1);
    return std::realloc(p, n);
}
void countFree(void* p, const char*, int) {
    std::free(p);
}

}  // namespace

int main() {
    if (CRYPTO_set_mem_functions(countMalloc, countRealloc, countFree) != 1) {
        std::fprintf(stderr, "cannot hook OpenSSL's allocator\n");
        return 1;
    }
    CertificateRequest r;
    r.applicationUri = "urn:test:alloc";
    PkeyPtr key;
    std::vector<std::uint8_t> der;
    std::string error;
    if (!createSelfSigned(r, key, der, error)) return 1;
    auto cert = Certificate::fromDer(der);
    int failures = 0;
    for (const auto& policy : policies()) {
        for (SecurityMode mode : {SecurityMode::Sign, SecurityMode::SignAndEncrypt}) {
            auto server = makeChannelSecurity(policy, cert, key.get(), nullptr);
            auto client = makeClientChannelSecurity(policy, cert, key.get(), cert);
            // Random nonces: the channel refuses constant ones.
            std::vector<std::uint8_t> cn(policy.nonceLength), sn(policy.nonceLength);
            randomBytes(cn);
            randomBytes(sn);
            server->deriveKeys(1, cn, sn);
            client->deriveKeys(1, cn, sn);
            std::vector<std::uint8_t> chunk(8192);
            auto once = [&] {
                std::memcpy(chunk.data(), "MSGF", 4);
                std::uint32_t token = 1;
                std::memcpy(chunk.data() + 12, &token, 4);
                std::size_t length = 24 + 1000;
                std::size_t body = 0;
                if (client->secureSymmetric(1, mode, chunk, 16, length) != UAPLEX_Good ||
                    server->verifySymmetric(1, mode, {chunk.data(), length}, 16, body) !=
                        UAPLEX_Good ||
                    body != 1008)
                    return false;
                length = 24 + 500;
                return server->secureSymmetric(1, mode, chunk, 16, length) == UAPLEX_Good &&
                       client->verifySymmetric(1, mode, {chunk.data(), length}, 16, body) ==
                           UAPLEX_Good &&
                       body == 508;
            };
            if (!once()) {  // warm-up
                std::printf("FAIL %s: round trip\n", policy.uri.data());
                ++failures;
                continue;
            }
            std::size_t ssl0 = gOpenSsl.load();
            test::HeapScope heap;
            bool ok = true;
            for (int i = 0; i < 100; ++i) ok = ok && once();
            std::size_t ssl = gOpenSsl.load() - ssl0;
            std::size_t news = heap.allocations();
            std::printf("%.*s %s: %zu OpenSSL + %zu new allocations in 100 round trips\n",
                        int(policy.name.size()), policy.name.data(),
                        mode == SecurityMode::Sign ? "Sign" : "SignAndEncrypt", ssl, news);
            if (!ok) std::printf("FAIL: a round trip failed\n");
            if (!ok || ssl != 0 || news != 0) ++failures;
        }
    }
    std::printf(failures ? "FAILED\n" : "ok\n");
    return failures ? 1 : 0;
}
