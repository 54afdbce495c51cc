// SPDX-License-Identifier: Apache-2.0
// One secure channel over one transport connection (Part 6 6.7): OPN Issue/Renew with
// tokens and lifetimes, sequence-number checks, MSG chunk assembly (C/F/A) within the
// negotiated limits, CLO, and chunking of outgoing messages.
//
// Threads: onChunk runs on the transport's I/O thread (one at a time per channel);
// sendMessage/sendAbort run on any thread and serialise on the channel's own send mutex;
// expired() and id() may be read from any thread.
#pragma once

#include <uaplex/buffer_pool.h>
#include <uaplex/encoding/binary.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include <uaplex/securechannel/security_policy.hpp>

namespace uaplex::securechannel {

// Where a channel's outgoing chunks go (the kernel's view of a transport connection).
class ChunkOutput {
  public:
    virtual ~ChunkOutput() = default;
    // Rents a buffer of at least `size` bytes.
    virtual bool rent(std::uint32_t size, uaplex_buffer& out) noexcept = 0;
    virtual void giveBack(uaplex_buffer& buffer) noexcept = 0;
    // Sends buffers in order; ownership passes. Called with the channel's send mutex held.
    virtual void send(uaplex_buffer* buffers, std::size_t count) noexcept = 0;
    // Sends ERR with `status` (Part 6 7.1.2.5) and closes the connection.
    virtual void fail(uaplex_status status, std::string_view reason) noexcept = 0;
    // Closes without ERR (after CLO).
    virtual void close() noexcept = 0;
    // The first OPN succeeded: the connection is no longer a pending handshake.
    virtual void opened() noexcept = 0;
};

// Sequence numbers of received chunks (Part 6 6.7.2.4): each is the previous plus one; after
// UInt32.MaxValue - 1024 the numbering may wrap to a value below 1024.
class SequenceChecker {
  public:
    static constexpr std::uint32_t kWrapLimit = 4294966271u;  // UInt32.MaxValue - 1024
    bool accept(std::uint32_t seq) noexcept {
        if (!started_) {
            started_ = true;
            last_ = seq;
            return true;
        }
        bool ok = seq == last_ + 1 || (last_ > kWrapLimit && seq < 1024);
        if (ok) last_ = seq;
        return ok;
    }

  private:
    bool started_ = false;
    std::uint32_t last_ = 0;
};

// Sequence numbers of sent chunks: start at 1, wrap to 1 after UInt32.MaxValue - 1024.
class SequenceCounter {
  public:
    std::uint32_t next() noexcept {
        std::uint32_t v = next_;
        next_ = next_ > SequenceChecker::kWrapLimit ? 1 : next_ + 1;
        return v;
    }
    void set(std::uint32_t v) noexcept { next_ = v; }

  private:
    std::uint32_t next_ = 1;
};

// Security tokens of one channel. A renewed token becomes current at once for the server;
// the previous one stays valid until the client uses the new one or the old one expires.
// A token expires at createdAt + revisedLifetime * 1.25 (the client renews at 75%; the
// extra quarter is the grace the server gives a late renewal).
class TokenState {
  public:
    struct Token {
        std::uint32_t id = 0;
        std::int64_t createdMs = 0;  // monotonic
        std::uint32_t lifetimeMs = 0;
        std::int64_t expiresMs() const noexcept {
            return createdMs + std::int64_t(lifetimeMs) + std::int64_t(lifetimeMs) / 4;
        }
    };
    TokenState(std::uint32_t minLifetimeMs, std::uint32_t maxLifetimeMs) noexcept
        : min_(minLifetimeMs), max_(maxLifetimeMs) {}

    std::uint32_t revise(std::uint32_t requested) const noexcept {
        return requested < min_ ? min_ : requested > max_ ? max_ : requested;
    }
    const Token& issue(std::int64_t nowMs, std::uint32_t requestedMs) noexcept;
    // Renewal keeps the current token as `previous` until the client switches.
    const Token& renew(std::int64_t nowMs, std::uint32_t requestedMs) noexcept;
    // A received chunk's token: Good (and the switch to a new token), or
    // BadSecureChannelTokenUnknown for an unknown or expired token.
    uaplex_status use(std::uint32_t tokenId, std::int64_t nowMs) noexcept;
    // The token the server signs with: the newest the client has used.
    std::uint32_t sendTokenId() const noexcept { return sendToken_; }
    bool expired(std::int64_t nowMs) const noexcept {
        return current_.id != 0 && nowMs >= current_.expiresMs();
    }
    const Token& current() const noexcept { return current_; }
    const Token& previous() const noexcept { return previous_; }

  private:
    std::uint32_t min_, max_;
    Token current_, previous_;
    std::uint32_t nextId_ = 1;
    std::uint32_t sendToken_ = 0;
};

// The server-wide account of the bytes held in unfinished messages: the intermediate chunks
// of a message whose final chunk has not come yet (Part 6 6.7.2.2). Each connection holds
// one partial message at most, but without a budget across connections a peer with many
// connections holds max_message_size on each. One per channel; I/O thread of the channel.
class ReassemblyBudget {
  public:
    // `bytes` more for the channel's unfinished message; false: the budget is spent.
    virtual bool charge(std::size_t bytes) noexcept = 0;
    // Everything the channel's message was charged goes back (done, refused, closed).
    virtual void releaseAll() noexcept = 0;

  protected:
    ~ReassemblyBudget() = default;
};

// Reassembles MSG chunks into one message body (Part 6 6.7.2.2, 6.7.3).
class ChunkAssembler {
  public:
    enum class Result {
        Incomplete,   // an intermediate chunk was stored
        Complete,     // the final chunk arrived: body() holds the message
        Aborted,      // the client aborted the message: discard, no response
        TooLarge,     // limits exceeded: answer BadRequestTooLarge, discard the rest
        NoResources,  // the reassembly budget is spent: abort, discard the rest
        Discarded,    // a chunk of a message already refused
        Mismatch,     // a chunk of another request while one is being assembled
    };
    ChunkAssembler(std::uint32_t maxMessageSize, std::uint32_t maxChunkCount) noexcept
        : maxMessageSize_(maxMessageSize), maxChunkCount_(maxChunkCount) {}
    Result add(char chunkType, std::uint32_t requestId, std::span<const std::uint8_t> body);
    std::uint32_t requestId() const noexcept { return requestId_; }
    enc::ByteBuffer& body() noexcept { return body_; }
    // Messages are assembled in storage rented from `allocator` (the server's buffer pool)
    // from the next message on; the body handed out by a swap takes its storage along.
    void setAllocator(enc::BufferAllocator* allocator) noexcept { allocator_ = allocator; }
    // Gives back the storage of a message left unfinished (the connection closed).
    void releaseBody() noexcept {
        releaseCharge();
        body_.release();
    }
    // Intermediate chunks are charged to `budget` (null: no budget; a single-chunk message
    // is never charged, it is complete at once). Before the first chunk.
    void setBudget(ReassemblyBudget* budget) noexcept { budget_ = budget; }
    // What the unfinished message holds in the budget.
    std::size_t charged() const noexcept { return charged_; }

  private:
    bool chargeFor(std::size_t need) noexcept;
    void releaseCharge() noexcept {
        if (charged_ != 0 && budget_) budget_->releaseAll();
        charged_ = 0;
    }
    // A refused or aborted message gives its storage back too, when it was charged for it.
    void dropMessage() noexcept {
        if (charged_ != 0) body_.release();
        releaseCharge();
    }

    std::uint32_t maxMessageSize_, maxChunkCount_;
    enc::BufferAllocator* allocator_ = nullptr;
    ReassemblyBudget* budget_ = nullptr;
    std::size_t charged_ = 0;
    enc::ByteBuffer body_;
    std::uint32_t chunks_ = 0;
    std::uint32_t requestId_ = 0;
    bool active_ = false;
    bool discarding_ = false;
};

struct ChannelLimits {
    std::uint32_t maxMessageSize = 16u << 20;  // requests we accept
    std::uint32_t maxChunkCount = 512;
    std::uint32_t minTokenLifetimeMs = 10000;
    std::uint32_t maxTokenLifetimeMs = 3600000;
    enc::DecodeLimits decodeLimits;
    // The policies other than None; null: only None is offered.
    SecurityProvider* security = nullptr;
    // Whether None is offered (an endpoint with SecurityPolicy None).
    bool offersNone = true;
};

// What the client negotiated in Hello (from the transport).
struct Negotiated {
    std::uint32_t sendBufferSize = 8192;     // chunks we send
    std::uint32_t clientMaxMessageSize = 0;  // 0 = no limit
    std::uint32_t clientMaxChunkCount = 0;   // 0 = no limit
};

struct Clock {
    std::int64_t monotonicMs;
    std::int64_t utc;  // OPC UA DateTime
};

class SecureChannel {
  public:
    enum class Event { None, Message, Closed };

    SecureChannel(ChannelLimits limits, ChunkOutput& output) noexcept;

    void setNegotiated(const Negotiated& n) noexcept { negotiated_ = n; }
    const Negotiated& negotiated() const noexcept { return negotiated_; }

    // One received chunk (header included). Message: a request is complete in
    // assembledBody() with assembledRequestId(). Errors are handled inside (ERR/close or an
    // abort chunk); `id` is the server-wide channel id to give on OPN Issue.
    Event onChunk(std::span<std::uint8_t> chunk, const Clock& now, std::uint32_t newChannelId);
    enc::ByteBuffer& assembledBody() noexcept { return assembler_.body(); }
    // Request bodies are assembled in storage from `allocator` (I/O thread, before the
    // first MSG); releaseAssembly gives back what an unfinished message holds (I/O thread).
    void setAssemblyAllocator(enc::BufferAllocator* allocator) noexcept {
        assembler_.setAllocator(allocator);
    }
    void releaseAssembly() noexcept {
        assembler_.releaseBody();
        assemblyActivityMs_.store(0, std::memory_order_relaxed);
    }
    std::uint32_t assembledRequestId() const noexcept { return assembler_.requestId(); }
    // The server-wide reassembly budget (I/O thread, before the first MSG).
    void setReassemblyBudget(ReassemblyBudget* budget) noexcept { assembler_.setBudget(budget); }
    // When the unfinished message's last chunk came (monotonic ms); 0: no message is
    // unfinished. Any thread: the server closes a channel whose message stalls.
    std::int64_t assemblyActivityMs() const noexcept {
        return assemblyActivityMs_.load(std::memory_order_relaxed);
    }

    // Sends one response message body in as many MSG chunks as it needs. Bad:
    // BadResponseTooLarge (nothing sent; answer a ServiceFault instead), BadSecureChannelClosed,
    // BadOutOfMemory. `scratch` is the caller's reusable vector of chunk buffers.
    uaplex_status sendMessage(std::uint32_t requestId, std::span<const std::uint8_t> body,
                              std::vector<uaplex_buffer>& scratch) noexcept;
    // Sends a MSG abort chunk ('A') with status and reason for requestId.
    void sendAbort(std::uint32_t requestId, uaplex_status status, std::string_view reason) noexcept;

    // The transport closed: nothing is sent any more.
    void markClosed() noexcept;
    std::uint32_t id() const noexcept { return channelId_.load(std::memory_order_acquire); }
    // The negotiated security (set by the first OPN, before id() becomes non-zero).
    SecurityMode securityMode() const noexcept { return mode_; }
    // Null for SecurityPolicy None.
    const ChannelSecurity* security() const noexcept { return security_.get(); }
    bool isOpen() const noexcept { return id() != 0; }
    bool expired(std::int64_t nowMs) const noexcept {
        std::int64_t e = expiresMs_.load(std::memory_order_relaxed);
        return e != 0 && nowMs >= e;
    }
    // When expired() becomes true unless the token is renewed; 0: no token yet.
    std::int64_t expiresAtMs() const noexcept { return expiresMs_.load(std::memory_order_relaxed); }

  private:
    Event onOpen(std::span<std::uint8_t> chunk, const Clock& now, std::uint32_t newChannelId);
    Event onMessage(std::span<std::uint8_t> chunk, const Clock& now, bool close);
    void fail(uaplex_status status, std::string_view reason) noexcept;

    ChannelLimits limits_;
    ChunkOutput& output_;
    Negotiated negotiated_;
    std::unique_ptr<ChannelSecurity> security_;
    SecurityMode mode_ = SecurityMode::None;
    bool policyChosen_ = false;
    std::atomic<std::uint32_t> channelId_{0};
    std::atomic<std::int64_t> expiresMs_{0};
    std::atomic<std::uint32_t> sendTokenId_{0};
    TokenState tokens_;
    SequenceChecker received_;
    ChunkAssembler assembler_;
    std::atomic<std::int64_t> assemblyActivityMs_{0};
    bool failed_ = false;  // I/O thread
    // Sending side.
    std::mutex sendMutex_;
    SequenceCounter sent_;
    bool closed_ = false;
};

}  // namespace uaplex::securechannel
