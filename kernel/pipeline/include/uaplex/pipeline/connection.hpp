// SPDX-License-Identifier: Apache-2.0
// The kernel's side of one transport connection (its SecureChannel, its admission owners,
// its reassembly charges and the way out) and the transport callbacks that feed the request
// pipeline. The pipeline's own: everything a connection uses is the pipeline's state.
#pragma once

#include <uaplex/admission.h>
#include <uaplex/transport.h>
#include <uaplex/pipeline/pipeline.hpp>
#include <uaplex/pipeline/request.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <uaplex/securechannel/secure_channel.hpp>

#include <uaplex/session/deferred_request.hpp>
#include <uaplex/session/request_registry.hpp>
#include <uaplex/session/response_route.hpp>
#include <uaplex/session/session_manager.hpp>

namespace uaplex::pipeline {

// A transport instance as the callbacks see it (the params' `user`).
struct TransportBinding {
    Pipeline* pipeline = nullptr;
    const uaplex_transport_ops* ops = nullptr;
    void* self = nullptr;
    std::string name;
    std::string scheme;
    // opc.https: no UASC; every connection of the endpoint shares one SecureChannel id (Part 6
    // 7.4.1: all HTTPS communication via a URL is a single SecureChannel).
    std::uint32_t httpsChannelId = 0;
};

// The kernel's side of one transport connection: its SecureChannel and the way out.
class Connection final : public securechannel::ChunkOutput,
                         public securechannel::ReassemblyBudget,
                         public std::enable_shared_from_this<Connection> {
  public:
    Connection(Pipeline& pipeline, TransportBinding& transport, uaplex_connection* handle,
               securechannel::ChannelLimits limits)
        : pipeline_(pipeline), transport_(transport), handle_(handle), channel(limits, *this) {
        requests.setDeadlineMonitor(&pipeline.deadlines_);
        channel.setReassemblyBudget(this);
    }

    ~Connection() override;

    // ReassemblyBudget (I/O thread): with an admission provider, leases at its
    // ReassemblyBytes stage for the channel's owner (keyed by the peer, so one peer's
    // connections share its owner limit); without one, the kernel's own budget.
    bool charge(std::size_t bytes) noexcept override;
    void releaseAll() noexcept override;

    bool rent(std::uint32_t size, uaplex_buffer& out) noexcept override {
        out = uaplex_buffer{};
        return pipeline_.poolOps_->take(pipeline_.poolSelf_,
                                        static_cast<uaplex_buffer_manager*>(pipeline_.poolManager_),
                                        size, this, nullptr, &out) == UAPLEX_Good;
    }
    void giveBack(uaplex_buffer& b) noexcept override {
        pipeline_.poolOps_->give_back(pipeline_.poolSelf_, &b, this);
    }
    void send(uaplex_buffer* buffers, std::size_t count) noexcept override {
        std::lock_guard lock(transportMutex_);
        if (gone_) {
            for (std::size_t i = 0; i < count; ++i) giveBack(buffers[i]);
            return;
        }
        transport_.ops->send(transport_.self, handle_, buffers, count);
    }
    // The transport tells the peer why, in its own protocol (opc.tcp: a UACP Error message
    // with the status; opc.https has no such message): the kernel only names the status.
    void fail(uaplex_status status, std::string_view reason) noexcept override;
    void close() noexcept override {
        std::lock_guard lock(transportMutex_);
        if (!gone_) transport_.ops->close(transport_.self, handle_, UAPLEX_Good);
    }
    void opened() noexcept override {
        std::lock_guard lock(transportMutex_);
        if (gone_) return;
        if (auto fn = UAPLEX_FIELD_OR(transport_.ops, uaplex_transport_ops, secure_channel_opened,
                                      nullptr))
            fn(transport_.self, handle_);
    }
    // The SecureChannel the requests of this connection belong to.
    std::uint32_t channelId() const noexcept {
        return httpsChannelId ? httpsChannelId : channel.id();
    }
    // Sends one response: as UASC chunks, or (opc.https) as the whole body in the request's
    // encoding. BadResponseTooLarge when it exceeds the limits.
    uaplex_status sendResponse(std::uint32_t requestId, std::span<const std::uint8_t> body,
                               std::vector<uaplex_buffer>& chunks) noexcept;
    // on_closed: the handle is invalid from now on.
    void transportClosed() noexcept {
        {
            std::lock_guard lock(transportMutex_);
            gone_ = true;
        }
        channel.markClosed();
    }
    bool gone() noexcept {
        std::lock_guard lock(transportMutex_);
        return gone_;
    }

    PendingRequest* acquire() { return pipeline_.requestPool_.acquire(); }
    void release(PendingRequest* r) {
        if (r->registry) {
            r->registry->remove(r->tracked);
            r->registry = nullptr;
        }
        r->session.reset();
        r->parked.reset();
        // A pooled body goes back now; the assembler rents the next message's storage. So
        // does a large heap body: a record kept for reuse must not pin a multi-chunk message.
        if (r->body.allocator() || r->body.capacity() > kKeptBodyBytes) r->body.release();
        if (r->owner) {
            pipeline_.admission_->owner_release(pipeline_.admissionSelf_, r->owner);
            r->owner = nullptr;
            r->entry.owner = nullptr;
        }
        pipeline_.requestPool_.release(r);
    }

  private:
    Pipeline& pipeline_;
    TransportBinding& transport_;
    uaplex_connection* handle_;

  public:
    // The admission owner of this connection's plain requests, classified once per session
    // binding instead of per request (session establishment and control requests, rare,
    // are classified each time). Only the connection's I/O thread (submit) touches it.
    struct OwnerCache {
        std::shared_ptr<session::Session> session;  // the binding it was classified for
        uaplex_admission_owner* owners[1] = {nullptr};
    } ownerCache;
    void releaseOwners() noexcept {
        for (auto*& o : ownerCache.owners)
            if (o) {
                pipeline_.admission_->owner_release(pipeline_.admissionSelf_, o);
                o = nullptr;
            }
    }

    // The channel's own owner, classified at accept (the Bootstrap class): it holds the
    // Connection lease while the transport connection lives and owns the requests sent
    // before a session exists.
    uaplex_admission_owner* channelOwner = nullptr;
    uaplex_admission_lease connectionLease{};
    bool connectionLeaseHeld = false;
    void releaseConnectionLease() noexcept {
        if (connectionLeaseHeld)
            pipeline_.admission_->release(pipeline_.admissionSelf_, &connectionLease);
        connectionLeaseHeld = false;
    }

    std::uint32_t httpsChannelId = 0;  // non-zero on an opc.https connection
    bool httpsJson = false;            // the request in flight came as JSON
    std::string peer;                  // "ip:port", for admission
    std::string endpointUrl;           // from Hello; written before any request of the connection
    securechannel::SecureChannel channel;
    session::SessionCache sessionCache;
    // The requests sent without a usable session, so that their TimeoutHint is honoured by
    // the same deadline sweep; per connection, so no server-wide lock on the request path.
    session::RequestRegistry requests;

    // The housekeeping sweep closed the channel (a stalled message, no session): once.
    std::atomic<bool> swept{false};
    // When the sweep last saw a session on the channel (monotonic ms; housekeeping thread).
    std::int64_t sessionSeenMs = 0;
    std::int64_t acceptedMs = 0;

  private:
    std::mutex transportMutex_;  // orders calls into the transport with on_closed
    bool gone_ = false;
    // Charges held for the unfinished message: chargeFor doubles its steps, so a message of
    // max_chunk_count chunks needs about log2 of that; the rest is for a budget near its end.
    struct ReassemblyLeases {
        std::array<uaplex_admission_lease, 16> leases{};
        std::size_t count = 0;
        std::size_t total = 0;  // what the leases hold together
    };
    std::unique_ptr<ReassemblyLeases> reassemblyLeases_;
    std::size_t kernelCharged_ = 0;
};

// A response sent after its worker moved on (Publish): the connection and the secure id.
class ChannelRoute final : public session::ResponseRoute {
  public:
    ChannelRoute(std::shared_ptr<Connection> c, std::uint32_t requestId)
        : c_(std::move(c)), requestId_(requestId) {}
    void send(std::span<const std::uint8_t> body) noexcept override {
        if (c_->gone()) return;
        std::vector<uaplex_buffer> chunks;
        c_->sendResponse(requestId_, body, chunks);
    }
    std::uint32_t channelId() const noexcept override { return c_->channelId(); }
    bool open() const noexcept override { return !c_->gone(); }

  private:
    std::shared_ptr<Connection> c_;
    std::uint32_t requestId_;
};

struct RouteSource {
    const std::shared_ptr<Connection>* connection;
    std::uint32_t requestId;
    static std::shared_ptr<session::ResponseRoute> make(void* user);
};

// A request an asynchronous node-manager operation answers after its worker moved on. It
// stays in its registry (Cancel, TimeoutHint, session close reach it through abandon()) and
// keeps its queue entry and admission owner until the first of answer() and abandon().
class ParkedRequest final : public session::DeferredRequest {
  public:
    ParkedRequest(PendingRequest& r, std::shared_ptr<Connection> c, host::PluginInstance* queue,
                  std::uint32_t returnDiagnostics) noexcept
        : r_(&r),
          c_(std::move(c)),
          queue_(queue),
          requestHandle_(r.entry.request_handle),
          returnDiagnostics_(returnDiagnostics) {}
    bool answer(uaplex_status status, const enc::DataType* responseType, void* response,
                enc::Arena& arena) noexcept override;
    uaplex_status status() const noexcept override {
        return status_.load(std::memory_order_acquire);
    }
    // Cancel, the deadline sweep, session close (with the registry's lock held): answers a
    // ServiceFault with `status` unless the answer came first; true when it did.
    bool abandon(uaplex_status status) noexcept;

  private:
    // The first of answer() and abandon() takes the request; null for the second.
    PendingRequest* take(uaplex_status status, std::shared_ptr<Connection>& c) noexcept;
    // Sends `body` and releases the request (its queue entry and leases first).
    void finish(PendingRequest& r, std::shared_ptr<Connection>& c, enc::ByteBuffer& body) noexcept;

    std::mutex mutex_;  // a leaf: held only to take the request
    PendingRequest* r_;
    std::shared_ptr<Connection> c_;
    host::PluginInstance* queue_;
    const std::uint32_t requestHandle_;
    const std::uint32_t returnDiagnostics_;
    std::atomic<uaplex_status> status_{UAPLEX_Good};
};

// What a worker's request offers its service to park it (RequestContext::defer).
struct DeferSource {
    PendingRequest* request;
    const std::shared_ptr<Connection>* connection;
    host::PluginInstance* queue;
    bool parked = false;  // the worker must not touch the request any more
    static std::shared_ptr<session::DeferredRequest> make(void* user,
                                                          std::uint32_t returnDiagnostics);
};

// The transport callbacks (I/O threads): the params' `user` is the TransportBinding, a
// connection's user the Connection.
struct Pipeline::Callbacks {
    static uaplex_status onAccepted(void* user, uaplex_connection* handle, uaplex_str url,
                                    uaplex_str peer, void** out);
    static uaplex_status onHello(void*, void* cuser, const uaplex_transport_negotiated* n);
    static uaplex_status onReceived(void* user, void* cuser, uaplex_buffer* buffer);
    // opc.https: one whole request body (binary, or JSON for the decode threads).
    static uaplex_status onRequest(void* user, void* cuser, uint32_t encoding,
                                   uaplex_buffer* buffers, size_t count);
    // A body that does not decode is answered with a ServiceFault carrying the decoder's
    // status (HTTP 200); the connection stays usable.
    static void answerUndecodable(Connection& c, uaplex_status st) noexcept;
    // GET /metrics of transport-https: the host's metrics in the Prometheus text format.
    static uaplex_status writeMetrics(void* user, char* out, size_t capacity, size_t* outLen);
    static uaplex_status onClosed(void* user, void* cuser, uaplex_status);
};

}  // namespace uaplex::pipeline
