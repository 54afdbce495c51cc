// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the server side of OpenSecureChannel under the RSA policies (Part 6
// 6.7.4): the asymmetric security header (policy URI, sender certificate, receiver
// thumbprint), the RSA decryption, the padding, the signature and the OpenSecureChannel
// request behind them, then MSG/CLO chunks on the channel that opened. The server offers
// Basic256Sha256, Aes128_Sha256_RsaOaep and Aes256_Sha256_RsaPss (Sign and SignAndEncrypt)
// with a certificate and key made at start (RSA 2048, and 4096 for the two-byte padding
// count); the client's certificate and key are made at start too.
//
// Random bytes rarely survive RSA-OAEP decryption, so most inputs describe the plaintext and
// the target seals it for this run's server key (input format below). What is checked:
// no crash, leak or sanitizer report; a refused chunk closes the channel with a status; every
// OpenSecureChannelResponse the server sends opens for the client (decrypts and verifies
// with the client's key and the server certificate) and is a valid response.
//
// Input: byte 0 = flags, then up to 8 records [kind][length u16 LE][length bytes], each one
// chunk given to the channel in turn.
//   flags bit 0: the server key is RSA 4096 (else 2048)
//         bit 1: every certificate that parses is trusted (else only the client's)
//         bit 2: SecurityPolicy None is offered too
//         bit 3: an untrusted certificate is "recorded" once its OPN proves the key
//         bit 4: the server's own Provider with its Pki (own/, the client's certificate in
//                trusted/certs, rejected/ recording nothing) decides instead (bits 1, 3 unused)
//   kind & 3 == 0 (raw): the bytes are the chunk as received (MessageSize is set to its
//         length, as the transport frames chunks by it); kind bit 3 sets a 20-byte receiver
//         thumbprint to the server's, bit 4 a sender certificate of 0 to 3 bytes to the
//         client's certificate.
//   kind & 3 == 1 (sealed): byte 0 of the record picks the policy (low 2 bits: Basic256Sha256,
//         Aes128_Sha256_RsaOaep, Aes256_Sha256_RsaPss, Basic256Sha256) and, with bit 2, the
//         SecureChannelId 7 (a renewal) instead of 0; the rest is the plaintext from the
//         sequence header on, signature included, which is only encrypted.
//   kind & 3 == 2 (signed): as 1, but the target appends the client's signature (the input
//         supplies the padding).
//   kind & 3 == 3 (valid): as 1, but the target pads, signs and encrypts (the input is the
//         sequence header and the message).
// UAPLEX_FUZZ_OPN_VERBOSE=1 prints what each input reached (opened, responses, status).
// UAPLEX_FUZZ_OPN_SEEDS=<dir> writes the seed corpus (valid OPNs and a few others) to <dir>
// and exits: `fuzz_opn` with it set regenerates tests/fuzz/corpus/opn.
#include <openssl/sha.h>

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <uaplex/encoding/hex.hpp>
#include <uaplex/securechannel/secure_channel.hpp>
#include <uaplex/security/channel_security.hpp>
#include <uaplex/security/crypto.hpp>
#include <uaplex/security/pki.hpp>
#include <uaplex/security/safe_file.hpp>
#include "fuzz_common.hpp"

using namespace uaplex;
using uaplex::fuzz::violated;
using namespace uaplex::security;

namespace {

constexpr std::uint32_t kChannelId = 7;
constexpr std::size_t kMaxRecords = 8;
constexpr std::size_t kMaxSealed = 2048;  // plaintext per sealed record: bounds RSA work

struct Identity {
    PkeyPtr key;
    std::shared_ptr<Certificate> cert;
};

Identity makeIdentity(const char* uri, std::uint32_t bits) {
    CertificateRequest r;
    r.applicationUri = uri;
    r.commonName = "fuzz";
    r.dnsNames = {"localhost"};
    r.keyBits = bits;
    Identity id;
    std::vector<std::uint8_t> der;
    std::string error;
    if (!createSelfSigned(r, id.key, der, error)) {
        std::fprintf(stderr, "fuzz_opn: cannot create a certificate: %s\n", error.c_str());
        std::abort();
    }
    id.cert = Certificate::fromDer(der);
    if (!id.cert) std::abort();
    return id;
}

// The server's certificate store as the server has it: own/ holds the server identity,
// trusted/certs the client's certificate; nothing is ever recorded in rejected/.
struct ServerPki {
    std::filesystem::path root;
    std::unique_ptr<Pki> pki;
    ServerPki(const Identity& server, const Identity& client, const char* name) {
        char dir[] = "/tmp/uaplex-fuzz-opn-XXXXXX";
        if (!::mkdtemp(dir)) std::abort();
        root = std::filesystem::path(dir) / name;
        pki = std::make_unique<Pki>(root);
        pki->ensureLayout();
        std::string err, pem = privateKeyPem(server.key.get());
        const auto& trusted = client.cert->der;
        if (!replaceFile(pki->ownKeyFile(), pem, kPrivateFileMode, err) ||
            !replaceFile(pki->ownCertificateFile(), server.cert->der.data(),
                         server.cert->der.size(), kPublicFileMode, err) ||
            !replaceFile(root / "trusted/certs" / (client.cert->thumbprintHex() + ".der"),
                         trusted.data(), trusted.size(), kPublicFileMode, err)) {
            std::fprintf(stderr, "fuzz_opn: %s\n", err.c_str());
            std::abort();
        }
        pki->loadOrCreateOwn(CertificateRequest{});
        pki->setRejectedLimits(RejectedStoreLimits{0, 0});
    }
    ~ServerPki() {
        std::error_code ec;
        std::filesystem::remove_all(root.parent_path(), ec);
    }
};

struct World {
    Identity server2048 = makeIdentity("urn:uaplex:fuzz:server", 2048);
    Identity server4096 = makeIdentity("urn:uaplex:fuzz:server4096", 4096);
    Identity client = makeIdentity("urn:uaplex:fuzz:client", 2048);
    const PolicyInfo* policies[4] = {
        findPolicy("Basic256Sha256"), findPolicy("Aes128_Sha256_RsaOaep"),
        findPolicy("Aes256_Sha256_RsaPss"), findPolicy("Basic256Sha256")};
    ServerPki pki2048{server2048, client, "pki2048"};
    ServerPki pki4096{server4096, client, "pki4096"};
};

World& world() {
    static World w;
    return w;
}

// The server's security: the offered RSA policies with this run's server certificate.
class FuzzProvider final : public securechannel::SecurityProvider {
  public:
    FuzzProvider(const Identity& server, bool trustAll, bool record)
        : server_(server), trustAll_(trustAll), record_(record) {}
    std::unique_ptr<securechannel::ChannelSecurity> create(std::string_view uri) override {
        for (const PolicyInfo* p : world().policies) {
            if (p->uri != uri) continue;
            return makeChannelSecurity(
                *p, server_.cert, server_.key.get(),
                [this](const Certificate& c) -> PeerVerdict {
                    if (trustAll_ || c.der == world().client.cert->der) return UAPLEX_Good;
                    return PeerVerdict(UAPLEX_BadSecurityChecksFailed, record_);
                },
                [this](const Certificate&) { ++recorded; });
        }
        return nullptr;
    }
    bool offers(std::string_view uri, securechannel::SecurityMode mode) const noexcept override {
        if (mode == securechannel::SecurityMode::None) return false;
        for (const PolicyInfo* p : world().policies)
            if (p->uri == uri) return true;
        return false;
    }
    int recorded = 0;

  private:
    const Identity& server_;
    bool trustAll_, record_;
};

std::uint32_t readU32(const std::uint8_t* p) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
void writeU32(std::uint8_t* p, std::uint32_t v) {
    std::memcpy(p, &v, 4);
}

// Every OpenSecureChannelResponse must open for the client: decrypt, verify, decode.
void checkResponse(std::vector<std::uint8_t> chunk, const Identity& server) {
    enc::Arena arena(1 << 16);
    enc::DecodeLimits limits;
    enc::BinaryReader r(std::span<const std::uint8_t>(chunk), arena, limits);
    r.take(12);
    ua::String uri;
    ua::ByteString cert, thumb;
    enc::decode(r, uri);
    enc::decode(r, cert);
    enc::decode(r, thumb);
    if (!r.ok()) violated("the server's OpenSecureChannelResponse header does not decode");
    if (readU32(chunk.data() + 4) != chunk.size()) violated("response MessageSize is wrong");
    std::string_view u = ua::view(uri);
    if (u == securechannel::kSecurityPolicyNone) return;  // None: nothing to open
    const PolicyInfo* policy = findPolicy(u);
    if (!policy) violated("the response names an unknown policy");
    auto client = makeClientChannelSecurity(*policy, world().client.cert, world().client.key.get(),
                                            server.cert);
    std::size_t bodyEnd = 0;
    std::size_t offset = r.position();
    uaplex_status st =
        client->openAsymmetric(chunk, offset, {cert.data, std::size_t(std::max(cert.length, 0))},
                               {thumb.data, std::size_t(std::max(thumb.length, 0))}, bodyEnd);
    if (st != UAPLEX_Good) violated("the server's OpenSecureChannelResponse does not open", st);
    if (bodyEnd < offset + 8) violated("the response has no sequence header");
    enc::Arena arena2(1 << 16);
    enc::DecodedMessage m = enc::decodeMessage(
        std::span<const std::uint8_t>(chunk.data() + offset + 8, bodyEnd - offset - 8), arena2,
        limits);
    if (m.status != UAPLEX_Good || m.type != enc::dataTypeOf<ua::OpenSecureChannelResponse>())
        violated("the response body is no OpenSecureChannelResponse", m.status);
    const auto& resp = *static_cast<const ua::OpenSecureChannelResponse*>(m.object);
    if (std::size_t(std::max(resp.serverNonce.length, 0)) != policy->nonceLength)
        violated("the server nonce has the wrong length");
}

// The kernel's view of the connection: buffers from the heap, responses checked.
class Output final : public securechannel::ChunkOutput {
  public:
    explicit Output(const Identity& server) : server_(server) {}
    bool rent(std::uint32_t size, uaplex_buffer& out) noexcept override {
        out = uaplex_buffer{};
        out.data = static_cast<std::uint8_t*>(std::malloc(size ? size : 1));
        out.length = size;
        return out.data != nullptr;
    }
    void giveBack(uaplex_buffer& b) noexcept override {
        std::free(b.data);
        b.data = nullptr;
    }
    void send(uaplex_buffer* buffers, std::size_t count) noexcept override {
        for (std::size_t i = 0; i < count; ++i) {
            uaplex_buffer& b = buffers[i];
            if (b.used > b.length) violated("a sent buffer is overfilled");
            if (b.used >= 4 && std::memcmp(b.data, "OPN", 3) == 0) {
                checkResponse(std::vector<std::uint8_t>(b.data, b.data + b.used), server_);
                ++responses;
            }
            giveBack(b);
        }
    }
    void fail(uaplex_status status, std::string_view) noexcept override {
        if (status == UAPLEX_Good) violated("a channel failed with Good");
        failed = status;
    }
    void close() noexcept override { closed = true; }
    void opened() noexcept override { wasOpened = true; }

    uaplex_status failed = UAPLEX_Good;
    bool closed = false, wasOpened = false;
    int responses = 0;

  private:
    const Identity& server_;
};

// The asymmetric security header of a chunk the target seals.
std::vector<std::uint8_t> header(const PolicyInfo& policy, std::uint32_t channelId,
                                 const Identity& server) {
    enc::ByteBuffer b;
    enc::BinaryWriter w(b);
    w.writeBytes("OPNF", 4);
    w.writeRaw<std::uint32_t>(0);
    w.writeRaw<std::uint32_t>(channelId);
    const auto& cert = world().client.cert->der;
    enc::encode(w, ua::makeString(policy.uri));
    enc::encode(w,
                ua::ByteString{std::int32_t(cert.size()), const_cast<std::uint8_t*>(cert.data())});
    enc::encode(w, ua::ByteString{20, const_cast<std::uint8_t*>(server.cert->thumbprint.data())});
    return b.toVector();
}

// Kinds 1 and 2: encrypt `plain` (plus the client's signature for kind 2) for the server.
std::vector<std::uint8_t> seal(const PolicyInfo& policy, std::uint32_t channelId,
                               std::span<const std::uint8_t> plain, bool sign,
                               const Identity& server) {
    std::vector<std::uint8_t> v = header(policy, channelId, server);
    const std::size_t offset = v.size();
    const std::size_t keyBytes = server.cert->keyBytes();
    const std::size_t block = plainBlockSize(policy.encryption, keyBytes);
    const std::size_t sigSize = sign ? world().client.cert->keyBytes() : 0;
    if (block == 0) return v;
    std::size_t total = plain.size() + sigSize;
    std::size_t cipherTotal = (total + block - 1) / block * keyBytes;
    v.insert(v.end(), plain.begin(), plain.end());
    writeU32(v.data() + 4, std::uint32_t(offset + cipherTotal));
    if (sign) {
        v.resize(offset + total);
        if (!rsaSign(policy.signature, world().client.key.get(),
                     {std::span(v).first(offset + plain.size())},
                     std::span(v).subspan(offset + plain.size(), sigSize)))
            violated("the client cannot sign");
    }
    std::vector<std::uint8_t> out(offset + cipherTotal);
    std::memcpy(out.data(), v.data(), offset);
    std::size_t written = 0;
    if (total > 0 &&
        !rsaEncrypt(policy.encryption, server.cert->publicKey.get(), std::span(v).subspan(offset),
                    std::span(out).subspan(offset), written))
        violated("the client cannot encrypt");
    out.resize(offset + written);
    return out;
}

// Kind 3: padded, signed and encrypted as a client does it.
std::vector<std::uint8_t> sealValid(const PolicyInfo& policy, std::uint32_t channelId,
                                    std::span<const std::uint8_t> content, const Identity& server) {
    auto client = makeClientChannelSecurity(policy, world().client.cert, world().client.key.get(),
                                            server.cert);
    std::vector<std::uint8_t> v = header(policy, channelId, server);
    const std::size_t offset = v.size();
    v.insert(v.end(), content.begin(), content.end());
    std::size_t length = v.size();
    v.resize(client->asymmetricSize(offset, length - offset));
    if (client->secureAsymmetric(v, offset, length) != UAPLEX_Good)
        violated("the client cannot secure an OPN");
    v.resize(length);
    return v;
}

// Kind 0 with bits 3/4: the raw chunk's thumbprint or certificate replaced.
std::vector<std::uint8_t> patchRaw(std::span<const std::uint8_t> in, bool thumbprint,
                                   bool certificate, const Identity& server) {
    std::vector<std::uint8_t> v(in.begin(), in.end());
    if (v.size() < 12) return v;
    std::size_t p = 12;
    auto field = [&](std::size_t& start, std::int32_t& len) {
        if (p + 4 > v.size()) return false;
        std::memcpy(&len, v.data() + p, 4);
        start = p;
        std::size_t n = len > 0 ? std::size_t(len) : 0;
        if (n > v.size() - p - 4) return false;
        p += 4 + n;
        return true;
    };
    std::size_t uriAt, certAt, thumbAt;
    std::int32_t uriLen, certLen, thumbLen;
    if (!field(uriAt, uriLen) || !field(certAt, certLen) || !field(thumbAt, thumbLen)) return v;
    std::vector<std::uint8_t> out(v.begin(), v.begin() + std::ptrdiff_t(certAt));
    auto put = [&](std::span<const std::uint8_t> bytes) {
        std::uint8_t len[4];
        writeU32(len, std::uint32_t(bytes.size()));
        out.insert(out.end(), len, len + 4);
        out.insert(out.end(), bytes.begin(), bytes.end());
    };
    std::size_t certEnd = certAt + 4 + std::size_t(certLen > 0 ? certLen : 0);
    std::size_t thumbEnd = thumbAt + 4 + std::size_t(thumbLen > 0 ? thumbLen : 0);
    if (certificate && certLen >= 0 && certLen <= 3)
        put(world().client.cert->der);
    else
        out.insert(out.end(), v.begin() + std::ptrdiff_t(certAt),
                   v.begin() + std::ptrdiff_t(certEnd));
    if (thumbprint && thumbLen == 20)
        put(server.cert->thumbprint);
    else
        out.insert(out.end(), v.begin() + std::ptrdiff_t(thumbAt),
                   v.begin() + std::ptrdiff_t(thumbEnd));
    out.insert(out.end(), v.begin() + std::ptrdiff_t(thumbEnd), v.end());
    return out;
}

void runOne(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return;
    const std::uint8_t flags = data[0];
    const Identity& server = (flags & 1) ? world().server4096 : world().server2048;
    FuzzProvider provider(server, (flags & 2) != 0, (flags & 8) != 0);
    // Flag bit 4: the server's own provider and PKI validation instead of the callback.
    std::vector<OfferedPolicy> offered;
    for (int i = 0; i < 3; ++i) offered.push_back({world().policies[i], true, true});
    if (flags & 4) offered.push_back({nullptr, false, false});
    Pki& pki = (flags & 1) ? *world().pki4096.pki : *world().pki2048.pki;
    Provider production(pki, std::move(offered));
    securechannel::ChannelLimits limits;
    limits.security =
        (flags & 16) ? static_cast<securechannel::SecurityProvider*>(&production) : &provider;
    limits.offersNone = (flags & 4) != 0;
    limits.maxMessageSize = 1u << 20;
    limits.maxChunkCount = 64;
    Output out(server);
    securechannel::SecureChannel channel(limits, out);
    securechannel::Negotiated n;
    n.sendBufferSize = 65535;
    channel.setNegotiated(n);

    std::size_t pos = 1;
    std::int64_t now = 1000;
    for (std::size_t rec = 0; rec < kMaxRecords && pos + 3 <= size; ++rec) {
        const std::uint8_t kind = data[pos];
        std::size_t len = std::size_t(data[pos + 1]) | std::size_t(data[pos + 2]) << 8;
        pos += 3;
        len = std::min(len, size - pos);
        std::span<const std::uint8_t> body(data + pos, len);
        pos += len;
        std::vector<std::uint8_t> chunk;
        if ((kind & 3) == 0) {
            chunk = (kind & 0x18) ? patchRaw(body, kind & 8, kind & 16, server)
                                  : std::vector<std::uint8_t>(body.begin(), body.end());
            if (chunk.size() >= 8) writeU32(chunk.data() + 4, std::uint32_t(chunk.size()));
        } else {
            if (body.empty()) continue;
            const PolicyInfo& policy = *world().policies[body[0] & 3];
            std::uint32_t channelId = (body[0] & 4) ? kChannelId : 0;
            auto plain = body.subspan(1, std::min(body.size() - 1, kMaxSealed));
            if ((kind & 3) == 3)
                chunk = sealValid(policy, channelId, plain, server);
            else
                chunk = seal(policy, channelId, plain, (kind & 3) == 2, server);
        }
        // The transport hands over whole chunks of at least the header (tcp_transport).
        if (chunk.size() < 8) continue;
        now += 10;
        channel.onChunk(chunk, securechannel::Clock{now, now * 10000}, kChannelId);
        if (out.failed != UAPLEX_Good || out.closed) break;
    }
    channel.markClosed();
    channel.releaseAssembly();
    static const bool verbose = std::getenv("UAPLEX_FUZZ_OPN_VERBOSE") != nullptr;
    if (verbose)
        std::fprintf(stderr, "fuzz_opn: opened %d, responses %d, status 0x%08X, recorded %d\n",
                     int(out.wasOpened), out.responses, unsigned(out.failed), provider.recorded);
}

// --- the seed corpus ---------------------------------------------------------------------

std::vector<std::uint8_t> openRequest(ua::SecurityTokenRequestType type,
                                      ua::MessageSecurityMode mode, std::size_t nonceLength,
                                      std::uint32_t seq) {
    enc::ByteBuffer b;
    enc::BinaryWriter w(b);
    w.writeRaw<std::uint32_t>(seq);
    w.writeRaw<std::uint32_t>(seq);  // RequestId
    std::vector<std::uint8_t> nonce(nonceLength);
    for (std::size_t i = 0; i < nonce.size(); ++i) nonce[i] = std::uint8_t(i * 37 + 11 + seq * 101);
    ua::OpenSecureChannelRequest req{};
    req.requestHeader.authenticationToken = ua::numericNodeId(0, 0);
    req.requestHeader.auditEntryId = ua::nullString();
    req.requestHeader.requestHandle = seq;
    req.requestType = type;
    req.securityMode = mode;
    req.clientNonce = nonceLength ? ua::ByteString{std::int32_t(nonce.size()), nonce.data()}
                                  : ua::nullByteString();
    req.requestedLifetime = 600000;
    enc::encodeMessage(w, req);
    return b.toVector();
}

struct Seed {
    std::vector<std::uint8_t> bytes;
    explicit Seed(std::uint8_t flags) { bytes.push_back(flags); }
    Seed& record(std::uint8_t kind, std::span<const std::uint8_t> payload) {
        bytes.push_back(kind);
        bytes.push_back(std::uint8_t(payload.size() & 0xff));
        bytes.push_back(std::uint8_t(payload.size() >> 8));
        bytes.insert(bytes.end(), payload.begin(), payload.end());
        return *this;
    }
    Seed& sealed(std::uint8_t kind, std::uint8_t selector, std::span<const std::uint8_t> plain) {
        std::vector<std::uint8_t> p{selector};
        p.insert(p.end(), plain.begin(), plain.end());
        return record(kind, p);
    }
};

void writeSeeds(const std::filesystem::path& dir) {
    using T = ua::SecurityTokenRequestType;
    using M = ua::MessageSecurityMode;
    std::vector<Seed> seeds;
    auto issue = openRequest(T::Issue, M::SignAndEncrypt, 32, 1);
    auto issueSign = openRequest(T::Issue, M::Sign, 32, 1);
    auto renew = openRequest(T::Renew, M::SignAndEncrypt, 32, 2);
    // Valid OPNs: each policy and mode, 2048 and 4096 bit server keys, Issue then Renew.
    for (std::uint8_t policy = 0; policy < 3; ++policy) {
        seeds.emplace_back(0).sealed(3, policy, issue);
        seeds.emplace_back(0).sealed(3, policy, issueSign);
        seeds.emplace_back(1).sealed(3, policy, issue);
    }
    seeds.emplace_back(0).sealed(3, 0, issue).sealed(3, 4, renew);
    // The same through the server's own Provider and PKI validation.
    seeds.emplace_back(16).sealed(3, 0, issue).sealed(3, 4, renew);
    seeds.emplace_back(17).sealed(3, 2, issueSign);
    // The padding given by the input: Basic256Sha256 with a 2048-bit server key (OAEP-SHA1:
    // 214-byte blocks) and the client's 256-byte signature.
    {
        std::vector<std::uint8_t> plain = issue;
        std::size_t x = plain.size() + 1 + 256;
        std::size_t pad = (214 - x % 214) % 214;
        plain.insert(plain.end(), pad + 1, std::uint8_t(pad));
        seeds.emplace_back(0).sealed(2, 0, plain);
        // A signature of zeros: only encrypted.
        std::vector<std::uint8_t> unsigned_ = plain;
        unsigned_.insert(unsigned_.end(), 256, 0);
        seeds.emplace_back(0).sealed(1, 0, unsigned_);
    }
    // A valid Issue followed by a MSG chunk and a CLO chunk (their MACs are not valid).
    {
        std::vector<std::uint8_t> msg(16 + 8 + 64, 0);
        std::memcpy(msg.data(), "MSGF", 4);
        writeU32(msg.data() + 8, kChannelId);
        writeU32(msg.data() + 12, 1);
        writeU32(msg.data() + 16, 2);
        std::vector<std::uint8_t> clo = msg;
        std::memcpy(clo.data(), "CLOF", 4);
        seeds.emplace_back(0).sealed(3, 0, issue).record(4, msg).record(4, clo);
    }
    // Raw: SecurityPolicy None offered and used; then an RSA policy header with the real
    // thumbprint and client certificate but ciphertext of the wrong kind.
    {
        enc::ByteBuffer b;
        enc::BinaryWriter w(b);
        w.writeBytes("OPNF", 4);
        w.writeRaw<std::uint32_t>(0);
        w.writeRaw<std::uint32_t>(0);
        enc::encode(w, ua::makeString(securechannel::kSecurityPolicyNone));
        enc::encode(w, ua::nullByteString());
        enc::encode(w, ua::nullByteString());
        auto none = openRequest(T::Issue, M::None_, 0, 1);
        w.writeBytes(none.data(), none.size());
        seeds.emplace_back(4).record(4, b.toVector());

        enc::ByteBuffer c;
        enc::BinaryWriter wc(c);
        wc.writeBytes("OPNF", 4);
        wc.writeRaw<std::uint32_t>(0);
        wc.writeRaw<std::uint32_t>(0);
        enc::encode(wc, ua::makeString(world().policies[0]->uri));
        std::uint8_t stub = 0;
        enc::encode(wc, ua::ByteString{1, &stub});
        std::uint8_t thumb[20] = {};
        enc::encode(wc, ua::ByteString{20, thumb});
        std::vector<std::uint8_t> junk(256, 0x5a);
        wc.writeBytes(junk.data(), junk.size());
        seeds.emplace_back(0).record(4 | 8 | 16, c.toVector());
    }
    std::filesystem::create_directories(dir);
    for (const Seed& s : seeds) {
        std::uint8_t digest[SHA_DIGEST_LENGTH];
        SHA1(s.bytes.data(), s.bytes.size(), digest);
        std::string name = enc::toHex(std::span<const std::uint8_t>(digest, sizeof digest));
        std::ofstream(dir / name, std::ios::binary)
            .write(reinterpret_cast<const char*>(s.bytes.data()), std::streamsize(s.bytes.size()));
    }
    std::fprintf(stderr, "fuzz_opn: %zu seeds in %s\n", seeds.size(), dir.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    world();  // the keys, once
    if (const char* dir = std::getenv("UAPLEX_FUZZ_OPN_SEEDS")) {
        writeSeeds(dir);
        std::exit(0);
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    runOne(data, size);
    return 0;
}
