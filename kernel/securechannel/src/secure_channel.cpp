// SPDX-License-Identifier: Apache-2.0
#include <uaplex/securechannel/secure_channel.hpp>

#include <uaplex/encoding/encoding.hpp>

#include <algorithm>
#include <cstring>

namespace uaplex::securechannel {

namespace {

constexpr std::size_t kHeaderSize = 8;
constexpr std::size_t kSymmetricHeaderSize = 16;  // header + SecureChannelId + TokenId
constexpr std::size_t kSequenceHeaderSize = 8;    // SequenceNumber + RequestId

std::uint32_t readU32(const std::uint8_t* p) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
void writeU32(std::uint8_t* p, std::uint32_t v) noexcept {
    std::memcpy(p, &v, 4);
}

}  // namespace

// --- TokenState ----------------------------------------------------------------------------

const TokenState::Token& TokenState::issue(std::int64_t nowMs, std::uint32_t requestedMs) noexcept {
    previous_ = Token{};
    current_ = Token{nextId_++, nowMs, revise(requestedMs)};
    sendToken_ = current_.id;
    return current_;
}

const TokenState::Token& TokenState::renew(std::int64_t nowMs, std::uint32_t requestedMs) noexcept {
    previous_ = current_;
    current_ = Token{nextId_++, nowMs, revise(requestedMs)};
    return current_;
}

uaplex_status TokenState::use(std::uint32_t tokenId, std::int64_t nowMs) noexcept {
    if (tokenId == current_.id && current_.id != 0) {
        if (nowMs >= current_.expiresMs()) return UAPLEX_BadSecureChannelTokenUnknown;
        // The client switched to the renewed token: the old one is done (Part 6 6.7.4).
        previous_ = Token{};
        sendToken_ = current_.id;
        return UAPLEX_Good;
    }
    if (tokenId == previous_.id && previous_.id != 0 && nowMs < previous_.expiresMs())
        return UAPLEX_Good;
    return UAPLEX_BadSecureChannelTokenUnknown;
}

// --- ChunkAssembler ------------------------------------------------------------------------

ChunkAssembler::Result ChunkAssembler::add(char chunkType, std::uint32_t requestId,
                                           std::span<const std::uint8_t> body) {
    if (active_ && requestId != requestId_) return Result::Mismatch;
    if (!active_) {
        active_ = true;
        discarding_ = false;
        requestId_ = requestId;
        chunks_ = 0;
        body_.clear();
        if (body_.allocator() != allocator_) {
            body_.release();
            body_.setAllocator(allocator_);
        }
    }
    if (chunkType == 'A') {
        active_ = false;
        dropMessage();
        return discarding_ ? Result::Discarded : Result::Aborted;
    }
    if (discarding_) {
        if (chunkType == 'F') active_ = false;
        return Result::Discarded;
    }
    ++chunks_;
    bool tooMany = maxChunkCount_ != 0 && chunks_ > maxChunkCount_;
    bool tooLarge = maxMessageSize_ != 0 && body_.size() + body.size() > maxMessageSize_;
    if (tooMany || tooLarge) {
        discarding_ = true;
        if (chunkType == 'F') active_ = false;
        dropMessage();
        return Result::TooLarge;
    }
    // Only an intermediate chunk leaves bytes held for later; the final one completes the
    // message, which the request queue accounts from then on.
    if (chunkType == 'C' && budget_ && body_.size() + body.size() > charged_ &&
        !chargeFor(body_.size() + body.size())) {
        discarding_ = true;
        dropMessage();
        return Result::NoResources;
    }
    if (!body.empty()) {
        enc::BinaryWriter w(body_, std::size_t(-1));
        w.writeBytes(body.data(), body.size());
        if (!w.ok()) {
            discarding_ = true;
            if (chunkType == 'F') active_ = false;
            dropMessage();
            return Result::TooLarge;
        }
    }
    if (chunkType == 'F') {
        active_ = false;
        releaseCharge();
        return Result::Complete;
    }
    return Result::Incomplete;
}

// Charges in steps that at least double, as a growing buffer does, so that a message of
// n chunks takes about log2(n) grants; near the end of the budget only what is needed. The
// storage is sized to what was charged, so the buffer does not grow past it on its own.
bool ChunkAssembler::chargeFor(std::size_t need) noexcept {
    const std::size_t limit = maxMessageSize_ != 0 ? maxMessageSize_ : need;
    const std::size_t step = std::max(need, std::min(2 * charged_, std::max(limit, need)));
    if (step > need && budget_->charge(step - charged_)) {
        charged_ = step;
    } else if (budget_->charge(need - charged_)) {
        charged_ = need;
    } else {
        return false;
    }
    try {
        body_.reserve(charged_);
    } catch (...) {
        return false;
    }
    return true;
}

// --- SecureChannel -------------------------------------------------------------------------

SecureChannel::SecureChannel(ChannelLimits limits, ChunkOutput& output) noexcept
    : limits_(limits),
      output_(output),
      tokens_(limits.minTokenLifetimeMs, limits.maxTokenLifetimeMs),
      assembler_(limits.maxMessageSize, limits.maxChunkCount) {}

void SecureChannel::fail(uaplex_status status, std::string_view reason) noexcept {
    if (failed_) return;
    failed_ = true;
    output_.fail(status, reason);
}

void SecureChannel::markClosed() noexcept {
    std::lock_guard lock(sendMutex_);
    closed_ = true;
}

SecureChannel::Event SecureChannel::onChunk(std::span<std::uint8_t> chunk, const Clock& now,
                                            std::uint32_t newChannelId) {
    if (failed_) return Event::None;
    if (chunk.size() < kHeaderSize + 4) {
        fail(UAPLEX_BadTcpMessageTypeInvalid, "chunk too short");
        return Event::None;
    }
    std::string_view type(reinterpret_cast<const char*>(chunk.data()), 3);
    if (type == "OPN") return onOpen(chunk, now, newChannelId);
    if (type == "MSG") return onMessage(chunk, now, false);
    if (type == "CLO") return onMessage(chunk, now, true);
    fail(UAPLEX_BadTcpMessageTypeInvalid, "unexpected message type");
    return Event::None;
}

namespace {

// OpenSecureChannel comes once or twice per connection, on the thread that reads it: its
// decode arena and response bytes are one scratch per thread, so a burst of handshakes frees
// no 8 KiB per handshake between the long-lived blocks the new connections allocate.
struct OpenScratch {
    enc::Arena arena{std::size_t(1) << 20};
    enc::ByteBuffer out{4096};
};

// One onOpen's use; at its end what a large certificate grew goes back, the first block stays.
struct OpenScratchUse {
    OpenScratch& s;
    ~OpenScratchUse() {
        s.arena.shrink();
        s.out.clear();
    }
};

}  // namespace

SecureChannel::Event SecureChannel::onOpen(std::span<std::uint8_t> chunk, const Clock& now,
                                           std::uint32_t newChannelId) {
    thread_local OpenScratch scratch;  // onOpen never runs inside another onOpen
    OpenScratchUse use{scratch};
    enc::Arena& arena = scratch.arena;
    enc::DecodeLimits limits = limits_.decodeLimits;
    enc::BinaryReader r(std::span<const std::uint8_t>(chunk.data(), chunk.size()), arena, limits);
    r.take(kHeaderSize);
    std::uint32_t channelId = r.readRaw<std::uint32_t>();
    ua::String policyUri;
    ua::ByteString senderCertificate, receiverThumbprint;
    enc::decode(r, policyUri);
    enc::decode(r, senderCertificate);
    enc::decode(r, receiverThumbprint);
    if (!r.ok() || r.remaining() < kSequenceHeaderSize) {
        fail(UAPLEX_BadDecodingError, "malformed OpenSecureChannel header");
        return Event::None;
    }
    const std::size_t encryptedOffset = r.position();
    std::string_view uri = ua::view(policyUri);
    if (!policyChosen_) {
        if (uri == kSecurityPolicyNone) {
            if (!limits_.offersNone) {
                fail(UAPLEX_BadSecurityPolicyRejected, "security policy None not offered");
                return Event::None;
            }
        } else {
            try {
                if (limits_.security) security_ = limits_.security->create(uri);
            } catch (...) {
                fail(UAPLEX_BadOutOfMemory, "cannot create the channel security");
                return Event::None;
            }
            if (!security_) {
                fail(UAPLEX_BadSecurityPolicyRejected, "security policy not offered");
                return Event::None;
            }
        }
        policyChosen_ = true;
    } else if (uri != (security_ ? security_->uri() : kSecurityPolicyNone)) {
        fail(UAPLEX_BadSecurityPolicyRejected, "renewal with another security policy");
        return Event::None;
    }
    std::size_t bodyEnd = chunk.size();
    if (security_) {
        auto bytes = [](const ua::ByteString& b) {
            return std::span<const std::uint8_t>(b.data, b.length > 0 ? std::size_t(b.length) : 0);
        };
        uaplex_status st = security_->openAsymmetric(
            chunk, encryptedOffset, bytes(senderCertificate), bytes(receiverThumbprint), bodyEnd);
        if (st != UAPLEX_Good) {
            fail(st, "OpenSecureChannel failed the security checks");
            return Event::None;
        }
    }
    std::uint32_t seq = readU32(chunk.data() + encryptedOffset);
    std::uint32_t requestId = readU32(chunk.data() + encryptedOffset + 4);
    if (!received_.accept(seq)) {
        fail(UAPLEX_BadSequenceNumberInvalid, "sequence number out of order");
        return Event::None;
    }
    std::span<const std::uint8_t> rest(chunk.data() + encryptedOffset + kSequenceHeaderSize,
                                       bodyEnd - encryptedOffset - kSequenceHeaderSize);
    enc::DecodedMessage m = enc::decodeMessage(rest, arena, limits);
    if (m.status != UAPLEX_Good || m.type != enc::dataTypeOf<ua::OpenSecureChannelRequest>()) {
        fail(UAPLEX_BadDecodingError, "malformed OpenSecureChannelRequest");
        return Event::None;
    }
    const auto& req = *static_cast<const ua::OpenSecureChannelRequest*>(m.object);
    const auto mode = SecurityMode(std::uint8_t(req.securityMode));
    bool modeOk = security_ ? (limits_.security && limits_.security->offers(uri, mode))
                            : mode == SecurityMode::None;
    if (!modeOk || (isOpen() && mode != mode_)) {
        fail(UAPLEX_BadSecurityModeRejected, "security mode not offered with this policy");
        return Event::None;
    }
    std::uint8_t serverNonce[64];
    std::size_t nonceLength = security_ ? security_->nonceLength() : 0;
    if (security_ &&
        (std::size_t(std::max(req.clientNonce.length, 0)) != nonceLength ||
         nonceLength > sizeof serverNonce || !security_->randomNonce({serverNonce, nonceLength}))) {
        fail(UAPLEX_BadNonceInvalid, "client nonce of the wrong length");
        return Event::None;
    }
    const TokenState::Token* token = nullptr;
    if (req.requestType == ua::SecurityTokenRequestType::Issue) {
        if (isOpen()) {
            fail(UAPLEX_BadSecureChannelIdInvalid, "channel already open");
            return Event::None;
        }
        mode_ = mode;
        token = &tokens_.issue(now.monotonicMs, req.requestedLifetime);
    } else if (req.requestType == ua::SecurityTokenRequestType::Renew) {
        if (!isOpen() || channelId != id()) {
            fail(UAPLEX_BadSecureChannelIdInvalid, "renew of an unknown channel");
            return Event::None;
        }
        token = &tokens_.renew(now.monotonicMs, req.requestedLifetime);
    } else {
        fail(UAPLEX_BadRequestTypeInvalid, "unknown SecurityTokenRequestType");
        return Event::None;
    }
    if (security_) {
        // Keys of the new token; the send mutex keeps a sender off the slot being replaced.
        std::lock_guard lock(sendMutex_);
        uaplex_status st = security_->deriveKeys(token->id, {req.clientNonce.data, nonceLength},
                                                 {serverNonce, nonceLength});
        if (st != UAPLEX_Good) {
            fail(st, "cannot derive the channel keys");
            return Event::None;
        }
    }
    if (req.requestType == ua::SecurityTokenRequestType::Issue) {
        channelId_.store(newChannelId, std::memory_order_release);
        sendTokenId_.store(token->id, std::memory_order_relaxed);
    }
    // The later of the tokens decides when the channel dies unrenewed.
    expiresMs_.store(token->expiresMs(), std::memory_order_relaxed);

    ua::OpenSecureChannelResponse resp{};
    resp.responseHeader.timestamp = now.utc;
    resp.responseHeader.requestHandle = req.requestHeader.requestHandle;
    resp.responseHeader.serviceResult = UAPLEX_Good;
    resp.serverProtocolVersion = 0;
    resp.securityToken.channelId = id();
    resp.securityToken.tokenId = token->id;
    resp.securityToken.createdAt = now.utc;
    resp.securityToken.revisedLifetime = token->lifetimeMs;
    resp.serverNonce = security_ ? ua::ByteString{std::int32_t(nonceLength), serverNonce}
                                 : ua::ByteString{0, nullptr};  // None: no nonce

    enc::ByteBuffer& out = scratch.out;
    enc::BinaryWriter w(out);
    w.writeBytes("OPNF", 4);
    w.writeRaw<std::uint32_t>(0);  // size, patched below
    w.writeRaw<std::uint32_t>(id());
    if (security_) {
        auto cert = security_->localCertificate();
        auto thumb = security_->remoteThumbprint();
        enc::encode(w, ua::makeString(security_->uri()));
        enc::encode(
            w, ua::ByteString{std::int32_t(cert.size()), const_cast<std::uint8_t*>(cert.data())});
        enc::encode(
            w, ua::ByteString{std::int32_t(thumb.size()), const_cast<std::uint8_t*>(thumb.data())});
    } else {
        enc::encode(w, ua::makeString(kSecurityPolicyNone));
        enc::encode(w, ua::nullByteString());
        enc::encode(w, ua::nullByteString());
    }
    std::size_t seqOffset = w.size();
    w.writeRaw<std::uint32_t>(0);  // sequence number, under the send mutex below
    w.writeRaw<std::uint32_t>(requestId);
    enc::encodeMessage(w, resp);
    std::size_t plainLength = out.size();
    std::size_t finalSize =
        security_ ? security_->asymmetricSize(seqOffset, plainLength - seqOffset) : plainLength;
    if (!w.ok() || finalSize > negotiated_.sendBufferSize) {
        fail(UAPLEX_BadTcpInternalError, "cannot encode OpenSecureChannelResponse");
        return Event::None;
    }
    w.patchInt32(4, std::int32_t(plainLength));
    bool first = req.requestType == ua::SecurityTokenRequestType::Issue;
    {
        std::lock_guard lock(sendMutex_);
        if (closed_) return Event::None;
        w.patchInt32(seqOffset, std::int32_t(sent_.next()));
        uaplex_buffer b;
        if (!output_.rent(std::uint32_t(finalSize), b)) {
            fail(UAPLEX_BadOutOfMemory, "no buffer");
            return Event::None;
        }
        std::memcpy(b.data, out.data(), plainLength);
        std::size_t length = plainLength;
        if (security_) {
            uaplex_status st = security_->secureAsymmetric({b.data, finalSize}, seqOffset, length);
            if (st != UAPLEX_Good) {
                output_.giveBack(b);
                fail(st, "cannot secure OpenSecureChannelResponse");
                return Event::None;
            }
        }
        b.used = length;
        output_.send(&b, 1);
    }
    if (first) output_.opened();
    return Event::None;
}

SecureChannel::Event SecureChannel::onMessage(std::span<std::uint8_t> chunk, const Clock& now,
                                              bool close) {
    if (!isOpen()) {
        fail(UAPLEX_BadSecureChannelIdInvalid, "no secure channel open");
        return Event::None;
    }
    if (chunk.size() < kSymmetricHeaderSize + kSequenceHeaderSize) {
        fail(UAPLEX_BadTcpMessageTypeInvalid, "chunk too short");
        return Event::None;
    }
    if (readU32(chunk.data() + 8) != id()) {
        fail(UAPLEX_BadSecureChannelIdInvalid, "wrong SecureChannelId");
        return Event::None;
    }
    const std::uint32_t tokenId = readU32(chunk.data() + 12);
    std::size_t bodyLength = chunk.size() - kSymmetricHeaderSize;
    if (security_) {
        uaplex_status st =
            security_->verifySymmetric(tokenId, mode_, chunk, kSymmetricHeaderSize, bodyLength);
        if (st == UAPLEX_BadSecureChannelTokenUnknown) {
            fail(st, "unknown security token");
            return Event::None;
        }
        if (st != UAPLEX_Good || bodyLength < kSequenceHeaderSize) {
            fail(UAPLEX_BadSecurityChecksFailed, "chunk failed the security checks");
            return Event::None;
        }
    }
    // Only a verified chunk may switch the channel to a renewed token.
    uaplex_status st = tokens_.use(tokenId, now.monotonicMs);
    if (st != UAPLEX_Good) {
        fail(st, "unknown or expired security token");
        return Event::None;
    }
    sendTokenId_.store(tokens_.sendTokenId(), std::memory_order_relaxed);
    const std::uint8_t* seqHeader = chunk.data() + kSymmetricHeaderSize;
    if (!received_.accept(readU32(seqHeader))) {
        fail(UAPLEX_BadSequenceNumberInvalid, "sequence number out of order");
        return Event::None;
    }
    if (close) {
        output_.close();
        return Event::Closed;
    }
    std::uint32_t requestId = readU32(seqHeader + 4);
    std::span<const std::uint8_t> body(seqHeader + kSequenceHeaderSize,
                                       bodyLength - kSequenceHeaderSize);
    const ChunkAssembler::Result result = assembler_.add(char(chunk[3]), requestId, body);
    assemblyActivityMs_.store(result == ChunkAssembler::Result::Incomplete ? now.monotonicMs : 0,
                              std::memory_order_relaxed);
    switch (result) {
        case ChunkAssembler::Result::Complete:
            return Event::Message;
        case ChunkAssembler::Result::TooLarge:
            sendAbort(requestId, UAPLEX_BadRequestTooLarge,
                      "request exceeds MaxMessageSize or MaxChunkCount");
            return Event::None;
        case ChunkAssembler::Result::NoResources:
            // A server-wide shortage, not this request's fault: the message is aborted and
            // the channel stays usable (Part 6 6.7.3 abort; Bad_TcpNotEnoughResources).
            sendAbort(requestId, UAPLEX_BadTcpNotEnoughResources,
                      "the server's reassembly budget is spent");
            return Event::None;
        case ChunkAssembler::Result::Mismatch:
            fail(UAPLEX_BadTcpMessageTypeInvalid, "chunks of two requests interleaved");
            return Event::None;
        default:
            return Event::None;
    }
}

namespace {
constexpr std::size_t kMinChunkRent = 4096;
}  // namespace

uaplex_status SecureChannel::sendMessage(std::uint32_t requestId,
                                         std::span<const std::uint8_t> body,
                                         std::vector<uaplex_buffer>& scratch) noexcept {
    const std::size_t prefix = kSymmetricHeaderSize + kSequenceHeaderSize;
    const std::size_t chunkSize = negotiated_.sendBufferSize;
    const std::size_t overhead = security_ ? security_->symmetricOverhead(mode_) : 0;
    if (chunkSize <= prefix + overhead) return UAPLEX_BadResponseTooLarge;
    const std::size_t room = chunkSize - prefix - overhead;
    std::size_t chunks = body.empty() ? 1 : (body.size() + room - 1) / room;
    if ((negotiated_.clientMaxMessageSize != 0 && body.size() > negotiated_.clientMaxMessageSize) ||
        (negotiated_.clientMaxChunkCount != 0 && chunks > negotiated_.clientMaxChunkCount) ||
        (limits_.maxChunkCount != 0 && chunks > limits_.maxChunkCount) ||
        (limits_.maxMessageSize != 0 && body.size() > limits_.maxMessageSize))
        return UAPLEX_BadResponseTooLarge;
    scratch.clear();
    for (std::size_t i = 0; i < chunks; ++i) {
        // Each chunk rents what it will hold (at least kMinChunkRent), not the negotiated
        // size, so the pool keeps no 64 KiB array per response it has seen in flight. The
        // floor keeps responses out of the small buckets the transport rents requests from:
        // a worker giving back a request then never races the I/O thread for an array.
        const std::size_t n = std::min(room, body.size() - std::min(body.size(), i * room));
        const std::size_t rentSize =
            std::min(chunkSize, std::max(prefix + n + overhead, kMinChunkRent));
        uaplex_buffer b;
        if (!output_.rent(std::uint32_t(rentSize), b)) {
            for (auto& s : scratch) output_.giveBack(s);
            scratch.clear();
            return UAPLEX_BadOutOfMemory;
        }
        scratch.push_back(b);
    }
    std::lock_guard lock(sendMutex_);
    if (closed_) {
        for (auto& s : scratch) output_.giveBack(s);
        scratch.clear();
        return UAPLEX_BadSecureChannelClosed;
    }
    std::uint32_t token = sendTokenId_.load(std::memory_order_relaxed);
    std::size_t offset = 0;
    for (std::size_t i = 0; i < chunks; ++i) {
        std::size_t n = std::min(room, body.size() - offset);
        uaplex_buffer& b = scratch[i];
        std::memcpy(b.data, i + 1 == chunks ? "MSGF" : "MSGC", 4);
        writeU32(b.data + 8, id());
        writeU32(b.data + 12, token);
        writeU32(b.data + 16, sent_.next());
        writeU32(b.data + 20, requestId);
        if (n) std::memcpy(b.data + prefix, body.data() + offset, n);
        std::size_t length = prefix + n;
        writeU32(b.data + 4, std::uint32_t(length));
        if (security_ && security_->secureSymmetric(token, mode_, {b.data, b.length},
                                                    kSymmetricHeaderSize, length) != UAPLEX_Good) {
            for (auto& s : scratch) output_.giveBack(s);
            scratch.clear();
            return UAPLEX_BadSecurityChecksFailed;
        }
        b.used = length;
        offset += n;
    }
    output_.send(scratch.data(), scratch.size());
    scratch.clear();
    return UAPLEX_Good;
}

void SecureChannel::sendAbort(std::uint32_t requestId, uaplex_status status,
                              std::string_view reason) noexcept {
    reason = reason.substr(0, 256);
    std::size_t size = kSymmetricHeaderSize + kSequenceHeaderSize + 8 + reason.size();
    const std::size_t overhead = security_ ? security_->symmetricOverhead(mode_) : 0;
    uaplex_buffer b;
    std::lock_guard lock(sendMutex_);
    if (closed_ || !output_.rent(std::uint32_t(size + overhead), b)) return;
    std::memcpy(b.data, "MSGA", 4);
    writeU32(b.data + 4, std::uint32_t(size));
    writeU32(b.data + 8, id());
    writeU32(b.data + 12, sendTokenId_.load(std::memory_order_relaxed));
    writeU32(b.data + 16, sent_.next());
    writeU32(b.data + 20, requestId);
    writeU32(b.data + 24, status);
    writeU32(b.data + 28, std::uint32_t(reason.size()));
    std::memcpy(b.data + 32, reason.data(), reason.size());
    if (security_ && security_->secureSymmetric(readU32(b.data + 12), mode_, {b.data, b.length},
                                                kSymmetricHeaderSize, size) != UAPLEX_Good) {
        output_.giveBack(b);
        return;
    }
    b.used = size;
    output_.send(&b, 1);
}

}  // namespace uaplex::securechannel
