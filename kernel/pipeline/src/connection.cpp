// SPDX-License-Identifier: Apache-2.0
#include "uaplex/pipeline/connection.hpp"

#include <uaplex/encoding/encoding.hpp>
#include <uaplex/pipeline/buffer_pool.hpp>
#include <uaplex/pipeline/json_decode_pool.hpp>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>

#include <uaplex/host/logging.hpp>
#include <uaplex/host/plugin_host.hpp>

#include <uaplex/session/session_services.hpp>

namespace uaplex::pipeline {

using host::logger;
using ua::utcNow;

Connection::~Connection() {
    releaseAll();
    releaseOwners();
    releaseConnectionLease();
    if (channelOwner) pipeline_.admission_->owner_release(pipeline_.admissionSelf_, channelOwner);
}

bool Connection::charge(std::size_t bytes) noexcept {
    if (pipeline_.admission_ && channelOwner) {
        if (!reassemblyLeases_) {
            // The first multi-chunk message of the connection: the lease slots are made
            // once and kept (a single-chunk message is never charged).
            reassemblyLeases_.reset(new (std::nothrow) ReassemblyLeases());
            if (!reassemblyLeases_) return false;
        }
        auto& set = *reassemblyLeases_;
        const bool full = set.count == set.leases.size();
        // Out of slots (many small grants near the end of the budget): one lease for the
        // whole charge replaces them, counted twice for a moment.
        uaplex_admission_lease lease{};
        lease.hdr = UAPLEX_HEADER_INIT(uaplex_admission_lease, UAPLEX_STYPE_ADMISSION_LEASE);
        const std::size_t amount = full ? set.total + bytes : bytes;
        std::uint32_t reason = 0;
        if (pipeline_.admission_->try_acquire(pipeline_.admissionSelf_,
                                              UAPLEX_STAGE_REASSEMBLY_BYTES, channelOwner,
                                              std::int64_t(amount), &lease, &reason) != UAPLEX_Good)
            return false;
        if (full) {
            for (std::size_t i = 0; i < set.count; ++i)
                pipeline_.admission_->release(pipeline_.admissionSelf_, &set.leases[i]);
            set.count = 0;
        }
        set.leases[set.count++] = lease;
        set.total += bytes;
        return true;
    }
    auto& used = pipeline_.reassemblyUsed_;
    const auto limit = std::int64_t(pipeline_.cfg_.server.limits.max_reassembly_bytes);
    std::int64_t v = used.load(std::memory_order_relaxed);
    do {
        if (v + std::int64_t(bytes) > limit) return false;
    } while (!used.compare_exchange_weak(v, v + std::int64_t(bytes), std::memory_order_relaxed));
    kernelCharged_ += bytes;
    return true;
}

void Connection::releaseAll() noexcept {
    if (reassemblyLeases_) {
        auto& set = *reassemblyLeases_;
        for (std::size_t i = 0; i < set.count; ++i)
            pipeline_.admission_->release(pipeline_.admissionSelf_, &set.leases[i]);
        set.count = 0;
        set.total = 0;
    }
    if (kernelCharged_) {
        pipeline_.reassemblyUsed_.fetch_sub(std::int64_t(kernelCharged_),
                                            std::memory_order_relaxed);
        kernelCharged_ = 0;
    }
}

void Connection::fail(uaplex_status status, std::string_view reason) noexcept {
    logger()->debug("channel {}: closing with 0x{:08X}: {}", channel.id(), status, reason);
    std::lock_guard lock(transportMutex_);
    if (!gone_) transport_.ops->close(transport_.self, handle_, status);
}

uaplex_status Connection::sendResponse(std::uint32_t requestId, std::span<const std::uint8_t> body,
                                       std::vector<uaplex_buffer>& chunks) noexcept {
    if (httpsChannelId == 0) return channel.sendMessage(requestId, body, chunks);
    enc::ByteBuffer json;
    if (httpsJson) {
        // The response in the request's encoding. One the JSON encoding cannot carry is
        // answered like an oversized one (the caller sends a ServiceFault instead).
        enc::Arena arena;
        enc::DecodeLimits own;  // our own encoder's output: only the size bounds it
        own.maxStringLength = own.maxByteStringLength = own.maxArrayLength = INT32_MAX;
        own.maxArenaBytes = std::size_t(1) << 31;
        own.maxMessageSize = body.size();
        enc::DecodedMessage m = enc::decodeMessage(body, arena, own);
        try {
            if (m.status != UAPLEX_Good ||
                enc::encodeJsonMessage(json, *m.type, m.object) != UAPLEX_Good)
                return UAPLEX_BadResponseTooLarge;
        } catch (...) {
            return UAPLEX_BadResponseTooLarge;
        }
        body = json.span();
    }
    std::uint32_t max = pipeline_.cfg_.server.limits.max_message_size;
    if (max != 0 && body.size() > max) return UAPLEX_BadResponseTooLarge;
    try {
        chunks.clear();
        std::size_t at = 0;
        do {
            std::size_t n = std::min<std::size_t>(pipeline_.poolBufferSize_, body.size() - at);
            uaplex_buffer b;
            if (!rent(std::uint32_t(std::max<std::size_t>(n, 1)), b)) {
                for (auto& x : chunks) giveBack(x);
                chunks.clear();
                return UAPLEX_BadOutOfMemory;
            }
            if (n) std::memcpy(b.data, body.data() + at, n);
            b.used = n;
            chunks.push_back(b);
            at += n;
        } while (at < body.size());
    } catch (...) {
        for (auto& x : chunks) giveBack(x);
        chunks.clear();
        return UAPLEX_BadOutOfMemory;
    }
    // One send per response: the transport frames it as one HTTP response.
    send(chunks.data(), chunks.size());
    chunks.clear();
    return UAPLEX_Good;
}

std::shared_ptr<session::ResponseRoute> RouteSource::make(void* user) {
    auto& r = *static_cast<RouteSource*>(user);
    try {
        return std::make_shared<ChannelRoute>(*r.connection, r.requestId);
    } catch (...) {
        return nullptr;
    }
}

// --- parked requests (asynchronous node-manager operations) -----------------------------------

std::shared_ptr<session::DeferredRequest> DeferSource::make(void* user,
                                                            std::uint32_t returnDiagnostics) {
    auto& d = *static_cast<DeferSource*>(user);
    PendingRequest& r = *d.request;
    if (d.parked || r.registry == nullptr) return nullptr;
    std::shared_ptr<ParkedRequest> p;
    try {
        p = std::make_shared<ParkedRequest>(r, *d.connection, d.queue, returnDiagnostics);
    } catch (...) {
        return nullptr;
    }
    // Its execution lease goes while the request is still only this worker's: once parked,
    // the canceller or a completion may finish and recycle the entry on another thread.
    host::RequestQueueSlot::releaseExecution(d.queue, &r.entry);
    // Set before the registry can hand the request to the canceller.
    r.parked = p;
    if (!r.registry->park(r.tracked)) {
        r.parked.reset();
        return nullptr;  // cancelled or expired while executing: the worker answers that
    }
    d.parked = true;
    return p;
}

PendingRequest* ParkedRequest::take(uaplex_status status, std::shared_ptr<Connection>& c) noexcept {
    std::lock_guard lock(mutex_);
    PendingRequest* r = r_;
    if (r == nullptr) return nullptr;
    r_ = nullptr;
    c = std::move(c_);
    status_.store(status == UAPLEX_Good ? UAPLEX_GoodCompletesAsynchronously : status,
                  std::memory_order_release);
    return r;
}

void ParkedRequest::finish(PendingRequest& r, std::shared_ptr<Connection>& c,
                           enc::ByteBuffer& body) noexcept {
    std::uint32_t requestId = r.secureRequestId;
    // As a worker does: the leases go back before the response is sent.
    host::RequestQueueSlot::dispose(queue_, &r.entry);
    c->release(&r);
    if (!c->gone()) {
        std::vector<uaplex_buffer> chunks;
        if (c->sendResponse(requestId, body.span(), chunks) == UAPLEX_BadResponseTooLarge) {
            session::encodeFault(requestHandle_, UAPLEX_BadResponseTooLarge, utcNow(), body);
            c->sendResponse(requestId, body.span(), chunks);
        }
    }
    c.reset();
}

bool ParkedRequest::answer(uaplex_status status, const enc::DataType* responseType, void* response,
                           enc::Arena& arena) noexcept {
    std::shared_ptr<Connection> c;
    PendingRequest* r = take(status, c);
    if (r == nullptr) return false;
    enc::ByteBuffer out(256);
    if (status == UAPLEX_Good && response && responseType)
        session::sizeDiagnostics(returnDiagnostics_, *responseType, response, arena);
    session::encodeResponse(requestHandle_, status, responseType, response, utcNow(), out);
    finish(*r, c, out);
    return true;
}

bool ParkedRequest::abandon(uaplex_status status) noexcept {
    std::shared_ptr<Connection> c;
    PendingRequest* r = take(status, c);
    if (r == nullptr) return false;
    enc::ByteBuffer out(256);
    session::encodeFault(requestHandle_, status, utcNow(), out);
    finish(*r, c, out);
    return true;
}

// --- transport callbacks (I/O threads) -------------------------------------------------------

uaplex_status Pipeline::Callbacks::onAccepted(void* user, uaplex_connection* handle, uaplex_str url,
                                              uaplex_str peer, void** out) {
    auto& binding = *static_cast<TransportBinding*>(user);
    Pipeline& s = *binding.pipeline;
    if (!s.running_.load()) return UAPLEX_BadServerHalted;
    const auto& l = s.cfg_.server.limits;
    securechannel::ChannelLimits limits;
    limits.maxMessageSize = l.max_message_size;
    limits.maxChunkCount = l.max_chunk_count;
    limits.minTokenLifetimeMs = l.min_token_lifetime_ms;
    limits.maxTokenLifetimeMs = l.max_token_lifetime_ms;
    limits.decodeLimits = s.limits_;
    limits.security = s.security_.provider;
    limits.offersNone = s.security_.offersNone;
    try {
        auto c = std::make_shared<Connection>(s, binding, handle, limits);
        c->channel.setAssemblyAllocator(s.messageAllocator_.get());
        c->acceptedMs = monotonicMs();
        c->peer.assign(peer.data ? peer.data : "", peer.len);
        if (binding.httpsChannelId) {
            // No Hello on opc.https: the endpoint is the URL the connection came in on.
            c->httpsChannelId = binding.httpsChannelId;
            c->endpointUrl.assign(url.data ? url.data : "", url.len);
        }
        if (s.admission_) {
            uaplex_status st = s.admitConnection(*c);
            if (st != UAPLEX_Good) return st;  // the transport refuses the connection
        }
        *out = c.get();
        std::lock_guard lock(s.connectionsMutex_);
        s.connections_.emplace(c.get(), std::move(c));
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
    logger()->debug("{}: connection from {}", binding.name, std::string_view(peer.data, peer.len));
    return UAPLEX_Good;
}

uaplex_status Pipeline::Callbacks::onHello(void*, void* cuser,
                                           const uaplex_transport_negotiated* n) {
    auto& c = *static_cast<Connection*>(cuser);
    securechannel::Negotiated neg;
    neg.sendBufferSize = n->send_buffer_size;
    neg.clientMaxMessageSize = n->max_message_size;
    neg.clientMaxChunkCount = n->max_chunk_count;
    c.channel.setNegotiated(neg);
    c.endpointUrl.assign(n->endpoint_url.data ? n->endpoint_url.data : "", n->endpoint_url.len);
    return UAPLEX_Good;
}

uaplex_status Pipeline::Callbacks::onReceived(void* user, void* cuser, uaplex_buffer* buffer) {
    auto& binding = *static_cast<TransportBinding*>(user);
    Pipeline& s = *binding.pipeline;
    auto& c = *static_cast<Connection*>(cuser);
    uaplex_buffer chunk = *buffer;
    std::uint32_t newId = 0;
    const bool opn = chunk.used >= 3 && std::memcmp(chunk.data, "OPN", 3) == 0;
    if (!c.channel.isOpen() && opn) {
        newId = s.nextChannelId_.fetch_add(1);
        if (newId == 0) newId = s.nextChannelId_.fetch_add(1);
    }
    const bool assembling = c.channel.assemblyActivityMs() != 0;
    const std::int64_t now = monotonicMs();
    auto ev =
        c.channel.onChunk({chunk.data, chunk.used}, securechannel::Clock{now, utcNow()}, newId);
    if (ev == securechannel::SecureChannel::Event::Message) s.submit(c);
    const auto& l = s.cfg_.server.limits;
    // An issued or renewed token expires at a time the housekeeping sweep may not wait for,
    // and so does a new channel that never gets a session.
    if (opn && c.channel.expiresAtMs() != 0)
        s.scheduleSweep(newId != 0 && c.channel.isOpen()
                            ? std::min(c.channel.expiresAtMs(),
                                       c.acceptedMs + std::int64_t(l.idle_channel_timeout_ms))
                            : c.channel.expiresAtMs());
    // A message that starts to be assembled must not stall for ever (only its first
    // chunk wakes the sweep: single-chunk requests never get here).
    if (!assembling && c.channel.assemblyActivityMs() != 0)
        s.scheduleSweep(now + std::int64_t(l.reassembly_idle_timeout_ms));
    c.giveBack(chunk);
    return UAPLEX_Good;
}

// opc.https: one whole request body (binary, or JSON for the decode threads).
uaplex_status Pipeline::Callbacks::onRequest(void* user, void* cuser, uint32_t encoding,
                                             uaplex_buffer* buffers, size_t count) {
    Pipeline& s = *static_cast<TransportBinding*>(user)->pipeline;
    auto& c = *static_cast<Connection*>(cuser);
    c.httpsJson = encoding == UAPLEX_TRANSPORT_BODY_JSON;
    enc::ByteBuffer& body = c.channel.assembledBody();
    body.clear();
    uaplex_status st = UAPLEX_Good;
    bool posted = false;
    try {
        std::size_t total = 0;
        for (size_t i = 0; i < count; ++i) total += buffers[i].used;
        if (total > s.limits_.maxMessageSize) {
            st = UAPLEX_BadRequestTooLarge;
        } else if (!c.httpsJson) {
            enc::BinaryWriter w(body);
            for (size_t i = 0; i < count; ++i) w.writeBytes(buffers[i].data, buffers[i].used);
            st = w.status();
        } else {
            // JSON is for scripts and browsers, not the steady path: the kernel works in
            // the binary encoding, so the request is transcoded once, by a decode thread,
            // while this I/O thread serves the transport's other connections.
            std::vector<std::uint8_t> text;
            text.reserve(total);
            for (size_t i = 0; i < count; ++i)
                text.insert(text.end(), buffers[i].data, buffers[i].data + buffers[i].used);
            auto self = c.shared_from_this();
            auto r = s.jsonPool_ ? s.jsonPool_->post(total,
                                                     [&s, self, text = std::move(text)]() mutable {
                                                         s.transcodeJson(*self, text);
                                                     })
                                 : JsonDecodePool::Posted::Stopped;
            posted = r == JsonDecodePool::Posted::Queued;
            if (!posted)
                st = r == JsonDecodePool::Posted::Full ? UAPLEX_BadServerTooBusy
                                                       : UAPLEX_BadServerHalted;
        }
    } catch (...) {
        st = UAPLEX_BadOutOfMemory;
    }
    for (size_t i = 0; i < count; ++i) c.giveBack(buffers[i]);
    if (posted) return UAPLEX_Good;
    if (st != UAPLEX_Good) {
        answerUndecodable(c, st);
        return UAPLEX_Good;
    }
    s.submit(c);
    return UAPLEX_Good;
}

// A body that does not decode is answered with a ServiceFault carrying the decoder's
// status (HTTP 200); the connection stays usable.
void Pipeline::Callbacks::answerUndecodable(Connection& c, uaplex_status st) noexcept {
    if (st != UAPLEX_BadEncodingLimitsExceeded && st != UAPLEX_BadRequestTooLarge &&
        st != UAPLEX_BadOutOfMemory && st != UAPLEX_BadServerTooBusy &&
        st != UAPLEX_BadServerHalted)
        st = UAPLEX_BadDecodingError;
    try {
        enc::ByteBuffer out(256);
        std::vector<uaplex_buffer> chunks;
        session::encodeFault(0, st, utcNow(), out);
        c.sendResponse(0, out.span(), chunks);
    } catch (...) {
        c.close();  // no memory for the fault: the connection ends instead
    }
}

// GET /metrics of transport-https: the server's metrics text (Server::writeMetrics), or
// without one the host's metrics as plain lines.
uaplex_status Pipeline::Callbacks::writeMetrics(void* user, char* out, size_t capacity,
                                                size_t* outLen) {
    Pipeline& s = *static_cast<TransportBinding*>(user)->pipeline;
    std::string text;
    try {
        auto line = [&text](std::string_view name, std::int64_t v) {
            std::string n = "uaplex_";
            for (char ch : name)
                n += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') ? ch : '_';
            text += n + " " + std::to_string(v) + "\n";
        };
        if (s.metricsText_) {
            s.metricsText_(text);
        } else {
            for (const auto& [name, value] : s.host_.services().metrics.snapshot())
                line(name, value);
            line("server_connections", std::int64_t(s.connectionCount()));
        }
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
    *outLen = text.size();
    if (text.size() > capacity) return UAPLEX_BadOutOfRange;
    std::memcpy(out, text.data(), text.size());
    return UAPLEX_Good;
}

uaplex_status Pipeline::Callbacks::onClosed(void* user, void* cuser, uaplex_status) {
    Pipeline& s = *static_cast<TransportBinding*>(user)->pipeline;
    auto* c = static_cast<Connection*>(cuser);
    c->transportClosed();
    c->channel.releaseAssembly();  // an unfinished message's pooled storage
    c->releaseConnectionLease();   // the I/O thread of this connection, as at accept
    // Sessions never activated end with their channel (an opc.https channel id stands
    // for every connection of its endpoint and never closes).
    if (!c->httpsChannelId && c->channel.id() != 0) s.sessions_.channelClosed(c->channel.id());
    std::shared_ptr<Connection> last;
    {
        std::lock_guard lock(s.connectionsMutex_);
        auto it = s.connections_.find(c);
        if (it != s.connections_.end()) {
            last = std::move(it->second);
            s.connections_.erase(it);
            ++s.connectionsClosed_;
        }
    }
    return UAPLEX_Good;
}

}  // namespace uaplex::pipeline
