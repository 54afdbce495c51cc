// SPDX-License-Identifier: Apache-2.0
// The pipeline's composition and lifecycle, and the way a request enters it: submit (or the
// inline path), the JSON transcoding, the refused completion and the queue's cancel.
#include <uaplex/pipeline/pipeline.hpp>

#include <uaplex/transport.h>
#include <uaplex/pipeline/buffer_pool.hpp>
#include <uaplex/pipeline/connection.hpp>
#include <uaplex/pipeline/json_decode_pool.hpp>

#include <algorithm>
#include <bit>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include <uaplex/host/logging.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/session/request_registry.hpp>
#include <uaplex/session/session_manager.hpp>
#include <uaplex/session/session_services.hpp>

namespace uaplex::pipeline {

namespace {
constexpr std::uint32_t kHelloBufferSize = 8192;
}  // namespace

using host::logger;
using ua::utcNow;

Pipeline::Pipeline(const config::ServerConfig& cfg, host::Host& host,
                   session::SessionManager& sessions, session::DeadlineMonitor& deadlines,
                   Dispatch dispatch, ChannelSecurity security, SweepHook sweep)
    : cfg_(cfg),
      host_(host),
      sessions_(sessions),
      deadlines_(deadlines),
      dispatch_(dispatch),
      limits_(session::decodeLimitsOf(cfg)),
      security_(security),
      sweep_(sweep),
      pool_(std::make_unique<KernelBufferPool>()),
      // Requests in flight at once: the queued ones, one per worker and the parked Publish
      // between dispatch and release; beyond the ring's size a released one is freed, and
      // past the reserve (a request per worker and some) housekeeping frees those a burst
      // left unused.
      requestPool_(std::bit_ceil(std::min<std::size_t>(
                       std::size_t(cfg.server.request_threads) + 2048, 1u << 16)),
                   std::size_t(cfg.server.request_threads) + 64) {
    poolOps_ = pool_->ops();
    poolSelf_ = pool_->self();
    if (const auto& p = host_.bufferPool()) {
        // The plugin is used through the checked table, by the kernel and the transports.
        checkedPool_ =
            std::make_unique<CheckedBufferPool>(p->ops<uaplex_buffer_pool_ops>(), p->self());
        poolOps_ = CheckedBufferPool::ops();
        poolSelf_ = checkedPool_->self();
    }
    if (const auto& a = host_.admission()) {
        admission_ = a->ops<uaplex_admission_ops>();
        admissionSelf_ = a->self();
        // CreateSession holds a session_establishment lease until the first activation.
        session::EstablishmentLeases leases;
        leases.user = this;
        leases.acquire = [](void* user, void* owner, uaplex_admission_lease& lease) {
            auto& self = *static_cast<Pipeline*>(user);
            std::uint32_t reason = 0;
            return self.admission_->try_acquire(
                self.admissionSelf_, UAPLEX_STAGE_SESSION_ESTABLISHMENT,
                static_cast<uaplex_admission_owner*>(owner), 1, &lease, &reason);
        };
        leases.release = [](void* user, uaplex_admission_lease& lease) {
            auto& self = *static_cast<Pipeline*>(user);
            self.admission_->release(self.admissionSelf_, &lease);
        };
        sessions_.setEstablishmentLeases(leases);
    }
    const auto& l = cfg_.server.limits;
    std::uint32_t bufferSize =
        std::max({l.receive_buffer_size, l.send_buffer_size, kHelloBufferSize});
    uaplex_buffer_manager* m = nullptr;
    static constexpr char kName[] = "uasc-chunks";
    if (poolOps_->manager_create(poolSelf_, {kName, sizeof kName - 1}, bufferSize, &m) !=
        UAPLEX_Good)
        throw std::runtime_error("buffer pool: cannot create the uasc-chunks manager");
    poolManager_ = m;
    if (host_.bufferPool()) {
        static constexpr char kMessages[] = "uasc-messages";
        uaplex_buffer_manager* mm = nullptr;
        // The chunks' bucket limit: the pool then keeps as many message arrays per bucket as
        // chunk arrays (a limit of MaxMessageSize would leave a handful per bucket and send
        // most rents to the heap). Larger messages are assembled and encoded on the heap.
        if (poolOps_->manager_create(poolSelf_, {kMessages, sizeof kMessages - 1}, bufferSize,
                                     &mm) != UAPLEX_Good)
            throw std::runtime_error("buffer pool: cannot create the uasc-messages manager");
        messageAllocator_ = std::make_unique<PoolBufferAllocator>(poolOps_, poolSelf_, mm);
    }
    poolBufferSize_ = bufferSize;
}

Pipeline::~Pipeline() {
    // The server stops the pipeline in its own order; this is for one it did not stop.
    stopAccepting();
    drain(session::RequestDrain::kDefaultGraceMs);
    discardQueued();
    clear();
}

session::QueuedCanceller Pipeline::canceller() noexcept {
    return {&Pipeline::unlinkQueued, this};
}

std::size_t Pipeline::connectionCount() const {
    std::lock_guard lock(connectionsMutex_);
    return connections_.size();
}

std::uint64_t Pipeline::connectionsClosed() const {
    std::lock_guard lock(connectionsMutex_);
    return connectionsClosed_;
}

void Pipeline::start(std::string_view reverseEndpoint) {
    started_ = true;
    running_ = true;
    host_.requestQueue().setCompletion([this](uaplex_request_entry* e, uaplex_status st) {
        completeRefused(*static_cast<PendingRequest*>(e->kernel_private), st);
    });
    host_.requestQueue().setRevalidation(&Pipeline::revalidate, this);
    for (std::uint32_t i = 0; i < cfg_.server.request_threads; ++i) {
        workers_.push_back(std::make_unique<Worker>());
        workers_.back()->index = workers_.size() - 1;
        if (messageAllocator_) {
            // Responses are encoded in pooled storage rented per response.
            workers_.back()->out.release();
            workers_.back()->out.setAllocator(messageAllocator_.get());
        }
        threads_.emplace_back([this, w = workers_.back().get()] { workerLoop(*w); });
    }
    deadlineSweeper_ = std::thread([this] { deadlineLoop(); });

    const auto& l = cfg_.server.limits;
    jsonPool_ = std::make_unique<JsonDecodePool>(l.json_decode_threads, l.json_decode_queue_bytes);
    uaplex_transport_params params{};
    params.hdr = UAPLEX_HEADER_INIT(uaplex_transport_params, UAPLEX_STYPE_TRANSPORT_PARAMS);
    params.receive_buffer_size = l.receive_buffer_size;
    params.send_buffer_size = l.send_buffer_size;
    params.pool_self = poolSelf_;
    params.pool = poolOps_;
    params.pool_manager = static_cast<uaplex_buffer_manager*>(poolManager_);
    params.on_accepted = &Callbacks::onAccepted;
    params.on_received = &Callbacks::onReceived;
    params.on_closed = &Callbacks::onClosed;
    params.max_message_size = l.max_message_size;
    params.max_chunk_count = l.max_chunk_count;
    params.max_connections = l.max_channels;
    params.max_pending_handshakes = l.max_pending_handshakes;
    params.handshake_timeout_ms = l.handshake_timeout_ms;
    params.server_uri = {cfg_.server.application_uri.data(), cfg_.server.application_uri.size()};
    params.on_hello = &Callbacks::onHello;
    params.on_request = &Callbacks::onRequest;
    params.write_metrics = &Callbacks::writeMetrics;
    params.max_connections_per_peer = l.max_channels_per_peer;
    params.hello_timeout_ms = l.hello_timeout_ms;
    params.send_queue_high_water_bytes = l.send_queue_high_water_bytes;
    params.max_send_queue_bytes = l.max_send_queue_bytes;

    std::vector<TransportBinding*> bindings;
    for (const auto& name : host_.transportPlugins()) {
        auto b = std::make_unique<TransportBinding>();
        b->pipeline = this;
        b->name = name;
        params.user = b.get();
        auto inst = host_.createTransport(name, params);
        b->ops = inst->ops<uaplex_transport_ops>();
        b->self = inst->self();
        uaplex_str scheme{};
        if (b->ops->scheme(b->self, &scheme) == UAPLEX_Good)
            b->scheme.assign(scheme.data, scheme.len);
        if (b->scheme == "opc.https") b->httpsChannelId = nextChannelId_.fetch_add(1);
        inst->start();
        transports_.push_back(std::move(inst));
        bindings.push_back(b.get());
        bindings_.push_back(std::move(b));
    }
    auto transportFor = [&](std::string_view url) -> TransportBinding* {
        auto colon = url.find("://");
        std::string_view scheme = url.substr(0, colon);
        for (auto* b : bindings)
            if (b->scheme == scheme) return b;
        return nullptr;
    };
    for (const auto& url : cfg_.server.endpoints) {
        auto* b = transportFor(url);
        if (!b)
            throw std::runtime_error("endpoint " + url +
                                     ": no enabled transport plugin serves its scheme (enable "
                                     "[plugins.transport-tcp] for opc.tcp)");
        uaplex_status st = b->ops->listen(b->self, {url.data(), url.size()});
        if (st != UAPLEX_Good)
            throw std::runtime_error("endpoint " + url + ": cannot listen (" +
                                     std::string(enc::statusName(st)) + ")");
        logger()->info("serving {}", url);
    }
    for (const auto& client : cfg_.server.reverse_connect) {
        auto* b = transportFor(client);
        const auto reverse =
            b ? UAPLEX_FIELD_OR(b->ops, uaplex_transport_ops, reverse_connect, nullptr) : nullptr;
        if (!reverse)
            throw std::runtime_error("reverse_connect " + client + ": no transport supports it");
        uaplex_status st = reverse(b->self, {client.data(), client.size()},
                                   {reverseEndpoint.data(), reverseEndpoint.size()});
        if (st != UAPLEX_Good)
            throw std::runtime_error("reverse_connect " + client + ": " +
                                     std::string(enc::statusName(st)));
        logger()->info("reverse connect to {}", client);
    }
}

void Pipeline::stopAccepting() noexcept {
    running_ = false;
    // A JSON request being decoded finishes (and is refused BadServerHalted); queued ones go.
    if (jsonPool_) jsonPool_->stop();
}

void Pipeline::drain(std::int64_t graceMs) noexcept {
    if (!started_) return;
    // Drain while the connections are still open: stopping the queue answers every queued
    // request BadServerHalted (and refuses new ones with it); the workers finish and answer
    // the executing ones before they exit.
    if (auto q = host_.requestQueue().current()) q->stop();
    // Then the executing requests get a bounded wait (docs/pipeline.md, Request registry and
    // deadlines): they finish and are answered while their connections are open. Past the
    // budget this is logged and the shutdown goes on to join the workers (services are not
    // interrupted).
    {
        session::RequestDrain drain(monotonicMs(), graceMs);
        std::vector<std::shared_ptr<session::Session>> keep;
        sessions_.snapshotRequests(drain, keep);
        std::vector<std::shared_ptr<Connection>> keepConnections;
        {
            std::lock_guard lock(connectionsMutex_);
            for (auto& [p, c] : connections_) {
                drain.snapshot(c->requests);
                keepConnections.push_back(c);
            }
        }
        session::RequestDrain::Result result;
        while ((result = drain.poll(monotonicMs())) == session::RequestDrain::Result::Pending)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (result == session::RequestDrain::Result::Timeout)
            logger()->warn("shutdown: requests still executing after the drain budget");
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
    for (auto& w : workers_) w->out.release();  // before the pool plugin can go
    deadlines_.stop();
    if (deadlineSweeper_.joinable()) deadlineSweeper_.join();
    for (auto& t : transports_) t->stop();  // closes every connection (on_closed)
}

void Pipeline::discardQueued() noexcept {
    if (!started_) return;
    // Anything queued after the drain goes without an answer: its connection is closed.
    host_.requestQueue().setCompletion([](uaplex_request_entry* e, uaplex_status) {
        auto* r = static_cast<PendingRequest*>(e->kernel_private);
        auto c = std::move(r->connection);
        c->release(r);
    });
    uaplex_request_entry* e = nullptr;
    while (host_.requestQueue().tryDequeue(&e) == UAPLEX_Good && e) {
        auto* r = static_cast<PendingRequest*>(e->kernel_private);
        auto c = std::move(r->connection);
        c->release(r);
    }
}

void Pipeline::clear() noexcept {
    if (!started_) return;
    started_ = false;
    transports_.clear();
    {
        std::lock_guard lock(connectionsMutex_);
        connections_.clear();
    }
    workers_.clear();
}

std::int64_t Pipeline::housekeep(std::int64_t now) {
    std::int64_t next = INT64_MAX;
    // Request records a burst left unused for a whole period go back, their mappings with
    // them; looked at again while spares exceed the reserve.
    if (now - recordsTrimmedMs_ >= kRecordTrimMs) {
        recordsTrimmedMs_ = now;
        requestPool_.free.trim();
    }
    if (requestPool_.free.spares() > requestPool_.free.reserve()) next = now + kRecordTrimMs;
    std::vector<std::shared_ptr<Connection>> expired, stalled, idle;
    const auto& l = cfg_.server.limits;
    const auto stallMs = std::int64_t(l.reassembly_idle_timeout_ms);
    const auto idleMs = std::int64_t(l.idle_channel_timeout_ms);
    sessions_.boundChannels(boundChannels_);
    {
        std::lock_guard cl(connectionsMutex_);
        for (auto& [p, c] : connections_) {
            if (c->swept.load(std::memory_order_relaxed)) continue;
            if (c->channel.expired(now)) {
                expired.push_back(c);
                continue;
            }
            if (std::int64_t e = c->channel.expiresAtMs(); e != 0) next = std::min(next, e);
            // A message whose next chunk does not come within the timeout: its bytes
            // would stay held in the reassembly budget.
            if (std::int64_t a = c->channel.assemblyActivityMs(); a != 0) {
                if (now - a >= stallMs) {
                    stalled.push_back(c);
                    continue;
                }
                next = std::min(next, a + stallMs);
            }
            // A channel that carries no session holds a connection slot for nothing
            // (opc.https connections have their own keep-alive timeout).
            if (c->httpsChannelId == 0 && c->channel.isOpen()) {
                if (std::binary_search(boundChannels_.begin(), boundChannels_.end(),
                                       c->channel.id())) {
                    c->sessionSeenMs = now;
                    next = std::min(next, now + idleMs);
                } else if (std::int64_t since = std::max(c->acceptedMs, c->sessionSeenMs);
                           now - since >= idleMs) {
                    idle.push_back(c);
                } else {
                    next = std::min(next, since + idleMs);
                }
            }
        }
    }
    for (auto& c : expired) c->fail(UAPLEX_BadSecureChannelTokenUnknown, "security token expired");
    for (auto& c : stalled) {
        c->swept.store(true, std::memory_order_relaxed);
        c->fail(UAPLEX_BadTimeout, "an unfinished message got no chunk in time");
    }
    for (auto& c : idle) {
        c->swept.store(true, std::memory_order_relaxed);
        c->fail(UAPLEX_BadTimeout, "no session on the channel");
    }
    return next;
}

bool Pipeline::unlinkQueued(void* user, session::TrackedRequest& t, uaplex_status status) {
    auto& self = *static_cast<Pipeline*>(user);
    auto* r = static_cast<PendingRequest*>(t.owner);
    if (t.state == session::TrackedRequest::State::Parked) {
        // Held here: the answer path drops the request's reference only after it left the
        // registry, whose lock this thread holds.
        std::shared_ptr<ParkedRequest> p = r->parked;
        return p && p->abandon(status);
    }
    // On Good the queue has completed the entry (completeRefused) on this thread.
    return self.host_.requestQueue().cancel(&r->entry, status) == UAPLEX_Good;
}

void Pipeline::executeInline(Connection& c, std::span<const std::uint8_t> body,
                             std::uint32_t secureRequestId, std::uint32_t requestHandle) {
    session::RequestContext ctx{c.channelId(), monotonicMs(), utcNow(), c.endpointUrl,
                                &c.sessionCache};
    ctx.channelSecurity = c.channel.security();
    ctx.peer = c.peer;
    ctx.sharedChannel = c.httpsChannelId != 0;
    ctx.securityMode = c.channel.securityMode();
    enc::Arena arena(64 * 1024, 4096);
    enc::ByteBuffer out(256);
    std::vector<uaplex_buffer> chunks;
    dispatch_.execute(dispatch_.self, body, ctx, arena, out);
    uaplex_status st = c.sendResponse(secureRequestId, out.span(), chunks);
    if (st == UAPLEX_BadResponseTooLarge) {
        session::encodeFault(requestHandle, UAPLEX_BadResponseTooLarge, ctx.utc, out);
        c.sendResponse(secureRequestId, out.span(), chunks);
    }
}

void Pipeline::transcodeJson(Connection& c, std::vector<std::uint8_t>& text) noexcept {
    if (c.gone()) return;
    uaplex_status st = UAPLEX_Good;
    try {
        // The connection's channel assembly stays the I/O thread's: the binary body is
        // built here and handed to the request as it is.
        enc::ByteBuffer body;
        {
            enc::Arena arena(limits_.maxArenaBytes);
            enc::DecodedMessage m = enc::decodeJsonMessage(text, arena, limits_);
            st = m.status;
            if (st == UAPLEX_Good) {
                enc::BinaryWriter w(body);
                st = enc::encodeMessage(w, *m.type, m.object);
            }
        }
        std::vector<std::uint8_t>().swap(text);  // the text is not needed past this point
        if (st == UAPLEX_Good) {
            submit(c, body, 0);
            return;
        }
    } catch (...) {
        st = UAPLEX_BadOutOfMemory;
    }
    Callbacks::answerUndecodable(c, st);
}

void Pipeline::submit(Connection& c) {
    submit(c, c.channel.assembledBody(), c.channel.assembledRequestId());
}

void Pipeline::submit(Connection& c, enc::ByteBuffer& body, std::uint32_t secureRequestId) {
    RequestPrefix prefix = peekPrefix(body.span());
    const ServiceTraits traits =
        prefix.ok ? dispatch_.traits(dispatch_.self, prefix.encodingId) : ServiceTraits{};
    if (traits.onIoThread) {
        executeInline(c, body.span(), secureRequestId, prefix.requestHandle);
        return;
    }
    PendingRequest* r = c.acquire();
    std::swap(r->body, body);  // both buffers keep their capacity
    r->secureRequestId = secureRequestId;
    r->tracked.cancelStatus.store(UAPLEX_Good, std::memory_order_relaxed);  // may be untracked
    r->connection = c.shared_from_this();
    auto& e = r->entry;
    e = uaplex_request_entry{};
    e.hdr = UAPLEX_HEADER_INIT(uaplex_request_entry, UAPLEX_STYPE_REQUEST_ENTRY);
    e.request_id = nextRequestId_.fetch_add(1);
    if (e.request_id == 0) e.request_id = nextRequestId_.fetch_add(1);
    e.request_handle = prefix.requestHandle;
    e.service_type = prefix.encodingId;
    e.cost = r->body.size();
    e.kernel_private = r;
    if (!running_.load(std::memory_order_relaxed)) {
        completeRefused(*r, UAPLEX_BadServerHalted);
        return;
    }
    std::int64_t now = monotonicMs();
    // TimeoutHint counts from arrival (Part 4 7.32); the deadline sweep enforces it.
    std::int64_t deadline = prefix.timeoutHint ? now + std::int64_t(prefix.timeoutHint) : 0;
    // Registered before it is queued, so that a Cancel finds it as soon as it can be queued.
    // Requests without a usable session are tracked by the connection (deadlines, drains).
    std::shared_ptr<session::Session> s;
    if (prefix.ok && prefix.authenticationToken.identifier_type == UAPLEX_ID_BYTESTRING &&
        sessions_.resolve(prefix.authenticationToken, c.channelId(), now, s, &c.sessionCache) ==
            UAPLEX_Good) {
        r->registry = &s->requests();
        r->session = std::move(s);
    } else {
        r->registry = &c.requests;
    }
    r->registry->add(r->tracked, prefix.requestHandle, deadline);
    if (admission_) classify(c, *r, prefix, traits);
    r->queuedNs = steadyNs();
    uaplex_status st = host_.requestQueue().enqueue(&e);
    if (st != UAPLEX_Good) completeRefused(*r, st);
}

void Pipeline::completeRefused(PendingRequest& r, std::uint32_t status) noexcept {
    // A queue's refusal or completion that is not Bad (a plugin's garbage) is answered as the
    // kernel's own failure: a ServiceFault carries a Bad status.
    if ((status & 0xC0000000u) != 0x80000000u) status = UAPLEX_BadInternalError;
    auto c = std::move(r.connection);
    if (c && !c->gone()) {
        enc::ByteBuffer out(256);
        std::vector<uaplex_buffer> chunks;
        session::encodeFault(r.entry.request_handle, status, utcNow(), out);
        c->sendResponse(r.secureRequestId, out.span(), chunks);
    }
    if (c) c->release(&r);
}

}  // namespace uaplex::pipeline
