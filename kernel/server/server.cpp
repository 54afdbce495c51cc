#include "server/server.hpp"

#include <uaplex/transport.h>
#include <uaplex/encoding/encoding.hpp>

#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include <uaplex/host/logging.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/securechannel/secure_channel.hpp>
#include <uaplex/security/channel_security.hpp>
#include <uaplex/security/crypto.hpp>
#include <uaplex/security/user_token_crypto.hpp>
#include <uaplex/session/access_control.hpp>
#include <uaplex/session/identity_verifier.hpp>
#include <uaplex/session/server_counters.hpp>
#include <uaplex/session/session_manager.hpp>
#include <uaplex/subscription/retransmission_queue.hpp>
#include "server/buffer_pool.hpp"
#include "server/connection.hpp"
#include "server/discovery.hpp"
#include "server/dispatcher.hpp"
#include "server/json_decode_pool.hpp"
#include "server/pki_identity_crypto.hpp"
#include "server/security_posture.hpp"
#include "server/service_table.hpp"
#include "server/subscription_service.hpp"

namespace uaplex::server {

namespace {

constexpr std::string_view kTokenPolicyOnNone =
    "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256";

constexpr std::uint32_t kHelloBufferSize = 8192;

}  // namespace

using host::logger;
using pipeline::PendingRequest;
using pipeline::RequestPool;
using pipeline::Worker;
using ua::utcNow;

std::size_t Server::pendingRequestObjects() noexcept {
    return pipeline::pendingRequestObjects();
}

// --- Server --------------------------------------------------------------------------------

Server::Server(const config::ServerConfig& cfg, host::Host& host, ServiceHandler& services)
    : cfg_(cfg),
      host_(host),
      services_(services),
      pool_(std::make_unique<KernelBufferPool>()),
      // Requests in flight at once: the queued ones, one per worker and the parked Publish
      // between dispatch and release; beyond the ring's size a released one is freed, and
      // past the reserve (a request per worker and some) housekeeping frees those a burst
      // left unused.
      requestPool_(std::make_unique<RequestPool>(
          std::bit_ceil(
              std::min<std::size_t>(std::size_t(cfg.server.request_threads) + 2048, 1u << 16)),
          std::size_t(cfg.server.request_threads) + 64)) {
    poolOps_ = pool_->ops();
    poolSelf_ = pool_->self();
    if (const auto& p = host_.buffer_pool()) {
        poolOps_ = p->ops<uaplex_buffer_pool_ops>();
        poolSelf_ = p->self();
    }
    if (const auto& a = host_.admission()) {
        admission_ = a->ops<uaplex_admission_ops>();
        admissionSelf_ = a->self();
    }
    const auto& l = cfg_.server.limits;
    session::SessionLimits sl{l.max_sessions,
                              l.min_session_timeout_ms,
                              l.max_session_timeout_ms,
                              l.max_unactivated_sessions_per_channel,
                              l.max_unactivated_sessions_per_peer,
                              l.unactivated_session_timeout_ms,
                              l.max_session_string_length};
    session::SessionStateHooks hooks{[this] { return services_.createSessionState(); },
                                     [this](void* p) { services_.destroySessionState(p); }};
    sessions_ =
        std::make_unique<session::SessionManager>(sl, &services_.counters(), std::move(hooks));
    if (admission_) {
        // CreateSession holds a session_establishment lease until the first activation.
        session::EstablishmentLeases leases;
        leases.user = this;
        leases.acquire = [](void* user, void* owner, uaplex_admission_lease& lease) {
            auto& self = *static_cast<Server*>(user);
            std::uint32_t reason = 0;
            return self.admission_->try_acquire(
                self.admissionSelf_, UAPLEX_STAGE_SESSION_ESTABLISHMENT,
                static_cast<uaplex_admission_owner*>(owner), 1, &lease, &reason);
        };
        leases.release = [](void* user, uaplex_admission_lease& lease) {
            auto& self = *static_cast<Server*>(user);
            self.admission_->release(self.admissionSelf_, &lease);
        };
        sessions_->setEstablishmentLeases(leases);
    }
    deadlines_ = std::make_unique<session::DeadlineMonitor>();
    sessions_->setDeadlineMonitor(deadlines_.get());
    sessions_->setTimeoutScheduled(
        [](void* user, std::int64_t dueMs) {
            // Its subscriptions may free messages: the heap check starts within a second.
            static_cast<Server*>(user)->scheduleSweep(
                std::min(dueMs, monotonicMs() + kHeapCheckMs));
        },
        this);
    setUpSecurity();
    discovery_ = std::make_unique<Discovery>(cfg_.server, pki_ ? pki_->own().get() : nullptr);
    // Identities and access control ([access]): the token policies the endpoints offer and
    // the rules compiled against the namespaces the services now have.
    std::shared_ptr<PkiIdentityCrypto> identityCrypto;
    if (pki_) {
        identityCrypto = std::make_shared<PkiIdentityCrypto>(*pki_);
        identityCrypto->onRefused = [budget = refusalLogBudget_](uaplex_status st,
                                                                 const security::Certificate& c) {
            std::uint64_t suppressed = 0;
            if (!budget->allow(monotonicMs(), suppressed)) return;
            logger()->warn("pki: refused user certificate {} ({}): 0x{:08X}{}", c.subject(),
                           c.thumbprintHex(), st,
                           suppressed ? fmt::format(" ({} more refusals not logged)", suppressed)
                                      : std::string());
        };
    }
    identity_ = std::make_unique<session::IdentityVerifier>(cfg_.access, identityCrypto);
    if (pki_ && pki_->own()) {
        // On None endpoints passwords and token signatures are secured with the server
        // certificate under Basic256Sha256 (Part 4 7.41), never sent in clear.
        identity_->setNoneTokenPolicyUri(std::string(kTokenPolicyOnNone));
        discovery_->setNoneTokenPolicyUri(std::string(kTokenPolicyOnNone));
    }
    accessPolicy_ = std::make_unique<session::AccessPolicy>(cfg_.access, services_.namespaceUris());
    for (const auto& w : accessPolicy_->warnings()) logger()->warn("{}", w);
    // One line per insecure setting in force (the strict profile leaves none).
    for (const auto& w : insecureSettings(cfg_, pki_ && pki_->own(), *accessPolicy_))
        logger()->warn("{}", w);
    discovery_->setTokenPolicies(identity_->policies());
    dispatcher_ = std::make_unique<Dispatcher>(cfg_, *sessions_, services_, *discovery_);
    dispatcher_->setPki(pki_.get());
    dispatcher_->setAccess(identity_.get(), accessPolicy_.get());
    if (auto* source = services_.valueSource()) {
        subscriptions_ = std::make_unique<SubscriptionService>(cfg_, *source);
        dispatcher_->setSubscriptions(subscriptions_.get());
        // Without a factory every data item keeps its last value only (queue size 1).
        if ((miQueues_ = host_.create_mi_queue_factory(subscriptions_->queueParams()))) {
            miQueues_->start();
            subscriptions_->setQueueFactory(miQueues_->ops<uaplex_mi_queue_factory_ops>(),
                                            miQueues_->self(), miQueues_);
        }
        services_.setValueChanged(
            [](void* user, std::uint64_t node, const ua::DataValue& v) {
                static_cast<SubscriptionService*>(user)->valueChanged(node, v);
            },
            subscriptions_.get());
        services_.setGetMonitoredItems(
            [](void* user, std::uint64_t session, std::uint32_t id, enc::Arena& arena,
               ua::Array<ua::UInt32>& server, ua::Array<ua::UInt32>& client) {
                return static_cast<SubscriptionService*>(user)->getMonitoredItems(
                    session, id, arena, server, client);
            },
            subscriptions_.get());
        services_.setEventRaised(
            [](void* user, std::span<const std::uint64_t> notifiers,
               const subscription::EventView& e) {
                static_cast<SubscriptionService*>(user)->eventRaised(notifiers, e);
            },
            subscriptions_.get());
    }
    session::QueuedCanceller canceller{&Server::unlinkQueued, this};
    dispatcher_->setCanceller(canceller);
    sessions_->setClosedHook([this, canceller](session::Session& s) {
        s.requests().cancelAll(UAPLEX_BadSessionClosed, canceller);
        if (subscriptions_)
            subscriptions_->closeSession(sessionKey(s), s.deleteSubscriptionsOnClose());
    });
    std::uint32_t bufferSize =
        std::max({l.receive_buffer_size, l.send_buffer_size, kHelloBufferSize});
    uaplex_buffer_manager* m = nullptr;
    static constexpr char kName[] = "uasc-chunks";
    if (poolOps_->manager_create(poolSelf_, {kName, sizeof kName - 1}, bufferSize, &m) !=
        UAPLEX_Good)
        throw std::runtime_error("buffer pool: cannot create the uasc-chunks manager");
    poolManager_ = m;
    if (host_.buffer_pool()) {
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

Server::~Server() {
    stop();
}

void Server::setUpSecurity() {
    std::vector<security::OfferedPolicy> offered;
    for (const auto& o : cfg_.server.security) {
        if (o.policy == "None") {
            offersNone_ = true;
            continue;
        }
        security::OfferedPolicy p{security::findPolicy(o.policy)};
        if (!p.policy) throw std::runtime_error("security: unknown policy " + o.policy);
        for (const auto& m : o.modes) (m == "Sign" ? p.sign : p.signAndEncrypt) = true;
        offered.push_back(p);
    }
    if (offered.empty()) return;
    // The application instance certificate: created at first start (Part 6 6.2.2).
    pki_ = std::make_unique<security::Pki>(cfg_.server.pki_dir);
    security::CertificateRequest request;
    request.applicationUri = cfg_.server.application_uri;
    request.commonName = cfg_.server.application_name;
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) == 0 && name[0]) request.dnsNames.push_back(name);
    request.dnsNames.push_back("localhost");
    bool existed = std::filesystem::exists(pki_->ownCertificateFile());
    pki_->loadOrCreateOwn(request);
    if (!existed)
        logger()->info("pki: created the application instance certificate {} ({})",
                       pki_->ownCertificateFile().string(), pki_->own()->thumbprintHex());
    const auto& limits = cfg_.server.limits;
    pki_->setRejectedLimits({limits.max_rejected_certificates, limits.max_rejected_bytes});
    securityProvider_ = std::make_unique<security::Provider>(*pki_, std::move(offered));
    // Every refused OPN may log, before any proof of possession: a budget per minute keeps a
    // flood from filling the log; what it drops is counted in the next line.
    refusalLogBudget_ = std::make_shared<security::EventBudget>(
        limits.max_certificate_refusal_logs_per_minute, 60000);
    securityProvider_->onRefused = [budget = refusalLogBudget_](uaplex_status st,
                                                                const security::Certificate& c) {
        std::uint64_t suppressed = 0;
        if (!budget->allow(monotonicMs(), suppressed)) return;
        logger()->warn(
            "pki: refused client certificate {} ({}): 0x{:08X}{}{}", c.subject(), c.thumbprintHex(),
            st, st == UAPLEX_BadCertificateUntrusted ? " BadCertificateUntrusted" : "",
            suppressed ? fmt::format(" ({} more refusals not logged)", suppressed) : std::string());
    };
    securityProvider_->onRecorded = [budget = refusalLogBudget_](const security::Certificate& c) {
        std::uint64_t suppressed = 0;
        if (!budget->allow(monotonicMs(), suppressed)) return;
        logger()->info("pki: {} ({}) proved its key: kept in rejected/certs for review",
                       c.subject(), c.thumbprintHex());
    };
}

std::size_t Server::connectionCount() const {
    std::lock_guard lock(connectionsMutex_);
    return connections_.size();
}

void Server::start() {
    if (started_) return;
    started_ = true;
    services_.setAccessPolicy(accessPolicy_.get());  // cleared by stop(): the policy is ours
    running_ = true;
    host_.request_queue().set_completion([this](uaplex_request_entry* e, uaplex_status st) {
        completeRefused(*static_cast<PendingRequest*>(e->kernel_private), st);
    });
    host_.request_queue().set_revalidation(&Server::revalidate, this);
    for (std::uint32_t i = 0; i < cfg_.server.request_threads; ++i) {
        workers_.push_back(std::make_unique<Worker>());
        if (messageAllocator_) {
            // Responses are encoded in pooled storage rented per response.
            workers_.back()->out.release();
            workers_.back()->out.setAllocator(messageAllocator_.get());
        }
        threads_.emplace_back([this, w = workers_.back().get()] { workerLoop(*w); });
    }
    housekeeping_ = std::thread([this] { housekeepingLoop(); });
    deadlineSweeper_ = std::thread([this] { deadlineLoop(); });
    if (subscriptions_) publishing_ = std::thread([this] { publishingLoop(); });

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
    for (const auto& name : host_.transport_plugins()) {
        auto b = std::make_unique<TransportBinding>();
        b->server = this;
        b->name = name;
        params.user = b.get();
        auto inst = host_.create_transport(name, params);
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
        std::string endpoint = discovery_->substituteHost(cfg_.server.endpoints.front(), "");
        uaplex_status st =
            reverse(b->self, {client.data(), client.size()}, {endpoint.data(), endpoint.size()});
        if (st != UAPLEX_Good)
            throw std::runtime_error("reverse_connect " + client + ": " +
                                     std::string(enc::statusName(st)));
        logger()->info("reverse connect to {}", client);
    }
}

void Server::stop() noexcept {
    if (!started_) return;
    started_ = false;
    running_ = false;
    // A JSON request being decoded finishes (and is refused BadServerHalted); queued ones go.
    if (jsonPool_) jsonPool_->stop();
    services_.setAccessPolicy(nullptr);
    // Logins waiting for the password pool are dropped (their clients see the channel close).
    dispatcher_->stopLogins();
    // Parked Publish requests are answered BadServerHalted while their channels still exist.
    if (subscriptions_) {
        subscriptions_->stop();
        services_.setEventRaised(nullptr, nullptr);
        services_.setValueChanged(nullptr, nullptr);  // node managers may still write; the
                                                      // service stays alive until ~Server
    }
    // Drain while the connections are still open: stopping the queue answers every queued
    // request BadServerHalted (and refuses new ones with it); the workers finish and answer
    // the executing ones before they exit.
    if (auto q = host_.request_queue().current()) q->stop();
    // Then the executing requests get a bounded wait (docs/pipeline.md, Request registry and
    // deadlines): they finish and are answered while their connections are open. Past the
    // budget this is logged and the shutdown goes on to join the workers (services are not
    // interrupted).
    {
        session::RequestDrain drain(monotonicMs(), drainGraceMs_);
        std::vector<std::shared_ptr<session::Session>> keep;
        sessions_->snapshotRequests(drain, keep);
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
    deadlines_->stop();
    if (deadlineSweeper_.joinable()) deadlineSweeper_.join();
    for (auto& t : transports_) t->stop();  // closes every connection (on_closed)
    {
        // Under the lock: the sweep either sees running_ false or is waiting already.
        std::lock_guard lock(housekeepingMutex_);
        sweepWake_.notify_all();
    }
    housekeepingWake_.notify_all();
    if (housekeeping_.joinable()) housekeeping_.join();
    if (publishing_.joinable()) publishing_.join();
    // Anything queued after the drain goes without an answer: its connection is closed.
    host_.request_queue().set_completion([](uaplex_request_entry* e, uaplex_status) {
        auto* r = static_cast<PendingRequest*>(e->kernel_private);
        auto c = std::move(r->connection);
        c->release(r);
    });
    uaplex_request_entry* e = nullptr;
    while (host_.request_queue().try_dequeue(&e) == UAPLEX_Good && e) {
        auto* r = static_cast<PendingRequest*>(e->kernel_private);
        auto c = std::move(r->connection);
        c->release(r);
    }
    sessions_->closeAll();
    services_.shutdown();
    transports_.clear();
    {
        std::lock_guard lock(connectionsMutex_);
        connections_.clear();
    }
    workers_.clear();
}

void Server::reloadUsers() {
    identity_->reloadUsers();
}

bool Server::unlinkQueued(void* user, session::TrackedRequest& t, uaplex_status status) {
    auto& server = *static_cast<Server*>(user);
    auto* r = static_cast<PendingRequest*>(t.owner);
    // On Good the queue has completed the entry (completeRefused) on this thread.
    return server.host_.request_queue().cancel(&r->entry, status) == UAPLEX_Good;
}

void Server::executeInline(Connection& c, std::span<const std::uint8_t> body,
                           std::uint32_t secureRequestId, std::uint32_t requestHandle) {
    RequestContext ctx{c.channelId(), monotonicMs(), utcNow(), c.endpointUrl, &c.sessionCache};
    ctx.channelSecurity = c.channel.security();
    ctx.peer = c.peer;
    ctx.sharedChannel = c.httpsChannelId != 0;
    ctx.securityMode = c.channel.securityMode();
    enc::Arena arena(64 * 1024, 4096);
    enc::ByteBuffer out(256);
    std::vector<uaplex_buffer> chunks;
    dispatcher_->handle(body, ctx, arena, out);
    uaplex_status st = c.sendResponse(secureRequestId, out.span(), chunks);
    if (st == UAPLEX_BadResponseTooLarge) {
        Dispatcher::encodeFault(requestHandle, UAPLEX_BadResponseTooLarge, ctx.utc, out);
        c.sendResponse(secureRequestId, out.span(), chunks);
    }
}

void Server::transcodeJson(Connection& c, std::vector<std::uint8_t>& text) noexcept {
    if (c.gone()) return;
    uaplex_status st = UAPLEX_Good;
    try {
        // The connection's channel assembly stays the I/O thread's: the binary body is
        // built here and handed to the request as it is.
        enc::ByteBuffer body;
        {
            enc::Arena arena(dispatcher_->decodeLimits().maxArenaBytes);
            enc::DecodedMessage m =
                enc::decodeJsonMessage(text, arena, dispatcher_->decodeLimits());
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

void Server::submit(Connection& c) {
    submit(c, c.channel.assembledBody(), c.channel.assembledRequestId());
}

void Server::submit(Connection& c, enc::ByteBuffer& body, std::uint32_t secureRequestId) {
    RequestPrefix prefix = Dispatcher::peekPrefix(body.span());
    const ServiceDescriptor* service = prefix.ok ? findService(prefix.encodingId) : nullptr;
    if (service && service->onIoThread) {
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
        sessions_->resolve(prefix.authenticationToken, c.channelId(), now, s, &c.sessionCache) ==
            UAPLEX_Good) {
        r->registry = &s->requests();
        r->session = std::move(s);
    } else {
        r->registry = &c.requests;
    }
    r->registry->add(r->tracked, prefix.requestHandle, deadline);
    if (admission_) classify(c, *r, prefix, service);
    uaplex_status st = host_.request_queue().enqueue(&e);
    if (st != UAPLEX_Good) completeRefused(*r, st);
}

void Server::completeRefused(PendingRequest& r, std::uint32_t status) noexcept {
    auto c = std::move(r.connection);
    if (c && !c->gone()) {
        enc::ByteBuffer out(256);
        std::vector<uaplex_buffer> chunks;
        Dispatcher::encodeFault(r.entry.request_handle, status, utcNow(), out);
        c->sendResponse(r.secureRequestId, out.span(), chunks);
    }
    if (c) c->release(&r);
}

namespace {

// What the provider sees of a request bound to `s` (or of the bare channel). The binding
// and, for anonymous sessions, the user id are the session's random Guid: each session is
// its own owner (the provider keys by verified user, docs/pipeline.md, Admission; an
// anonymous session is the finest key).
uaplex_admission_request_info admissionInfo(std::uint32_t channelId, std::uint32_t flags,
                                            const std::string& peer, const session::Session* s,
                                            ua::Guid& guid) noexcept {
    uaplex_admission_request_info info{};
    info.hdr =
        UAPLEX_HEADER_INIT(uaplex_admission_request_info, UAPLEX_STYPE_ADMISSION_REQUEST_INFO);
    info.secure_channel_id = channelId;
    info.flags = flags;
    info.peer_address = {peer.data(), peer.size()};
    if (s && !s->closed()) {
        guid = s->sessionId().identifier.guid;
        info.flags |= UAPLEX_ADMISSION_SESSION_VERIFIED;
        info.session_binding = {reinterpret_cast<const std::uint8_t*>(&guid), sizeof guid};
        info.user_id = {reinterpret_cast<const char*>(&guid), sizeof guid};
    }
    return info;
}

}  // namespace

void Server::classify(Connection& c, PendingRequest& r, const RequestPrefix& prefix,
                      const ServiceDescriptor* service) noexcept {
    const AdmissionClass admission = service ? service->admission : AdmissionClass::Request;
    unsigned kind = admission == AdmissionClass::Control                ? 2
                    : admission == AdmissionClass::SessionEstablishment ? 1
                                                                        : 0;
    std::uint32_t flags = kind == 2   ? UAPLEX_ADMISSION_CONTROL
                          : kind == 1 ? UAPLEX_ADMISSION_SESSION_ESTABLISHMENT
                                      : 0;
    // Session services name a session that need not be activated (yet) on this channel.
    std::shared_ptr<session::Session> bound = r.session;
    if (!bound && kind != 0 && prefix.ok &&
        prefix.authenticationToken.identifier_type == UAPLEX_ID_BYTESTRING)
        bound = sessions_->lookup(prefix.authenticationToken);
    if (!bound && c.channelOwner) {
        // Before a session exists the channel is the owner: the ingress (Bootstrap) class,
        // whose floors let a new client in on a saturated server.
        admission_->owner_retain(admissionSelf_, c.channelOwner);
        r.owner = c.channelOwner;
        r.entry.owner = c.channelOwner;
        r.admissionFlags = flags;
        r.bound = false;
        return;
    }
    if (kind != 0) {
        // Session establishment and control come a few times in a session's life: their
        // owner is classified per request and held by the request alone, so an idle
        // session's connection keeps one owner, not three.
        uaplex_admission_owner* once = nullptr;
        ua::Guid guid{};
        auto info = admissionInfo(c.channelId(), flags, c.peer, bound.get(), guid);
        uaplex_status st = bound ? admission_->classify(admissionSelf_, &info, &once)
                                 : admission_->classify_connection(admissionSelf_, &info, &once);
        if (st != UAPLEX_Good || !once) return;  // no owner: the queue refuses the request
        r.owner = once;                          // classify's reference passes to the request
        r.entry.owner = once;
        r.admissionFlags = flags;
        r.bound = bound != nullptr;
        if (bound && !r.session) r.session = std::move(bound);
        return;
    }
    auto& cache = c.ownerCache;
    if (cache.session != bound) {  // a new binding: classify again
        c.releaseOwners();
        cache.session = bound;
    }
    uaplex_admission_owner*& owner = cache.owners[kind];
    if (!owner) {
        ua::Guid guid{};
        auto info = admissionInfo(c.channelId(), flags, c.peer, bound.get(), guid);
        uaplex_status st = bound ? admission_->classify(admissionSelf_, &info, &owner)
                                 : admission_->classify_connection(admissionSelf_, &info, &owner);
        if (st != UAPLEX_Good) owner = nullptr;  // no owner: the queue refuses the request
    }
    if (!owner) return;
    admission_->owner_retain(admissionSelf_, owner);
    r.owner = owner;
    r.entry.owner = owner;
    r.admissionFlags = flags;
    r.bound = bound != nullptr;
    if (bound && !r.session) r.session = std::move(bound);  // kept alive for revalidation
}

uaplex_status Server::admitConnection(Connection& c) noexcept {
    ua::Guid guid{};
    auto info = admissionInfo(0, 0, c.peer, nullptr, guid);
    if (admission_->classify_connection(admissionSelf_, &info, &c.channelOwner) != UAPLEX_Good) {
        c.channelOwner = nullptr;
        return UAPLEX_BadServerTooBusy;
    }
    c.connectionLease.hdr =
        UAPLEX_HEADER_INIT(uaplex_admission_lease, UAPLEX_STYPE_ADMISSION_LEASE);
    std::uint32_t reason = 0;
    uaplex_status st = admission_->try_acquire(admissionSelf_, UAPLEX_STAGE_CONNECTION,
                                               c.channelOwner, 1, &c.connectionLease, &reason);
    if (st != UAPLEX_Good) return UAPLEX_BadServerTooBusy;
    c.connectionLeaseHeld = true;
    return UAPLEX_Good;
}

uaplex_status Server::revalidate(void* user, uaplex_request_entry* entry) {
    auto& server = *static_cast<Server*>(user);
    auto& r = *static_cast<PendingRequest*>(entry->kernel_private);
    if (!server.admission_ || !r.owner) return UAPLEX_Good;
    if (!r.bound) return UAPLEX_Good;  // a channel owner: its channel cannot change
    // The owner was classified from this session, channel and request kind; while the
    // session lives on this channel the provider would find the same key and class. Only a
    // change goes to the provider, which names the status (docs/pipeline.md, Admission): that
    // keeps hashing the key out of the per-request path.
    const std::uint32_t channelId = r.connection->channelId();
    if (!r.session->closed() && r.session->channelId() == channelId) return UAPLEX_Good;
    ua::Guid guid{};
    auto info =
        admissionInfo(channelId, r.admissionFlags, r.connection->peer, r.session.get(), guid);
    return server.admission_->revalidate(server.admissionSelf_, r.owner, &info);
}

void Server::workerLoop(Worker& w) {
    // OpenSSL sets up a thread's random generator on its first use: now, not inside the first
    // CreateSession this worker serves.
    std::uint8_t warm[1];
    security::randomBytes(warm);
    while (running_.load(std::memory_order_relaxed)) {
        uaplex_request_entry* e = nullptr;
        host::PluginInstance* from = nullptr;
        // Waits until a request comes, stop() stops the queue or a swap retires it (the slot
        // bounds the wait on a queue that cannot be woken): no wake-up while idle.
        uaplex_status st =
            host_.request_queue().dequeue(std::numeric_limits<uint32_t>::max(), &e, &from);
        if (st == UAPLEX_Good && e) {
            execute(*static_cast<PendingRequest*>(e->kernel_private), w, from);
        } else if (st == UAPLEX_BadServerHalted) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));  // no queue installed
        }
    }
}

// After a bulk deletion gave the heap back (trimHeap), the worker's arena
// drops the blocks its largest request made it grow; otherwise one relaxed load.
static void shrinkAfterHeapTrim(Worker& w) noexcept {
    std::uint32_t n = heapTrimCount();
    if (n == w.heapTrims) return;
    w.heapTrims = n;
    w.arena.shrink();
}

void Server::execute(PendingRequest& r, Worker& w, host::PluginInstance* queue) noexcept {
    auto c = std::move(r.connection);
    if (c->gone()) {
        host::RequestQueueSlot::dispose(queue, &r.entry);
        c->release(&r);
        return;
    }
    if (r.registry) r.registry->executing(r.tracked);
    RequestContext ctx{c->channelId(), monotonicMs(), utcNow(), c->endpointUrl, &c->sessionCache};
    ctx.channelSecurity = c->channel.security();
    ctx.peer = c->peer;
    ctx.sharedChannel = c->httpsChannelId != 0;
    ctx.securityMode = c->channel.securityMode();
    ctx.admissionOwner = r.owner;
    RouteSource route{&c, r.secureRequestId};
    ctx.makeRoute = &RouteSource::make;
    ctx.routeUser = &route;
    w.arena.reset();
    w.out.clear();
    std::uint32_t handle = r.entry.request_handle;
    bool handedOver = false;
    // Expired while queued but dequeued before the sweep could unlink it: not executed.
    if (r.tracked.cancelStatus.load(std::memory_order_acquire) != UAPLEX_BadTimeout) {
        handle = dispatcher_->handle(r.body.span(), ctx, w.arena, w.out);
        handedOver = w.out.size() == 0;  // Publish: answered later through its route
    }
    // A request past its deadline answers BadTimeout, also when it expired while executing
    // (services are short and not interrupted; the result is dropped).
    if (!handedOver && r.tracked.cancelStatus.load(std::memory_order_acquire) == UAPLEX_BadTimeout)
        Dispatcher::encodeFault(handle, UAPLEX_BadTimeout, ctx.utc, w.out);
    std::uint32_t requestId = r.secureRequestId;
    // Its leases go back before the response is sent, so that the next request can run.
    host::RequestQueueSlot::dispose(queue, &r.entry);
    if (handedOver) {
        c->release(&r);
        if (w.out.allocator()) w.out.release();
        shrinkAfterHeapTrim(w);
        return;
    }
    // The response is encoded: recycle the request before sending, so that the client's
    // next request finds it free (a request-response client then needs one per connection).
    c->release(&r);
    uaplex_status st = c->sendResponse(requestId, w.out.span(), w.chunks);
    if (st == UAPLEX_BadResponseTooLarge) {
        Dispatcher::encodeFault(handle, UAPLEX_BadResponseTooLarge, ctx.utc, w.out);
        c->sendResponse(requestId, w.out.span(), w.chunks);
    }
    // The chunks hold their own copy: the encoding goes back to the pool.
    if (w.out.allocator()) w.out.release();
    shrinkAfterHeapTrim(w);
}

void Server::reloadMonitoredItemQueues() {
    if (!subscriptions_) return;
    std::shared_ptr<host::PluginInstance> next =
        host_.create_mi_queue_factory(subscriptions_->queueParams());
    if (next) {
        next->start();
        subscriptions_->setQueueFactory(next->ops<uaplex_mi_queue_factory_ops>(), next->self(),
                                        next);
    } else {
        subscriptions_->setQueueFactory(nullptr, nullptr);
    }
    // The old instance lives on in the queues it made; the last one to go unloads it.
    miQueues_ = std::move(next);
}

void Server::publishingLoop() {
    // Wakes when a subscription's publishing timer expires (or a polled sampling group is due),
    // so that each subscription publishes at its own grid point and the subscriptions' bursts
    // stay apart, on their own phases; those ticks visit only the due subscriptions. The full
    // pass over every subscription and session (the backstops) runs on a fixed grid, not
    // `period` after the previous tick's end, and coarser than any publishing interval needs:
    // an idle server wakes only for its subscriptions.
    const auto period = std::max(std::chrono::milliseconds(subscriptions_->resolutionMs()),
                                 std::chrono::milliseconds(250));
    auto next = std::chrono::steady_clock::now() + period;
    std::unique_lock lock(housekeepingMutex_);
    std::int64_t lastDue = 0;
    while (running_.load()) {
        auto wake = next;
        lock.unlock();
        std::int64_t due = subscriptions_->nextDueMs();
        lock.lock();
        if (due != std::numeric_limits<std::int64_t>::max()) {
            // Exactly at the due millisecond (the engine's clock is steady_clock's), so that
            // samples keep their phase; 1 ms on if a tick did not move it (never a spin).
            auto at = std::chrono::steady_clock::time_point(std::chrono::milliseconds(due));
            if (due <= lastDue)
                at = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
            if (at < wake) wake = at;
        }
        if (housekeepingWake_.wait_until(lock, wake) != std::cv_status::timeout) continue;
        if (!running_.load()) break;
        const auto woke = std::chrono::steady_clock::now();
        const auto nowMs =
            std::chrono::duration_cast<std::chrono::milliseconds>(woke.time_since_epoch()).count();
        if (nowMs >= due) lastDue = due;  // this tick serves it
        // Only a full pass moves the grid on, so a due tick that ends past it never skips one.
        const bool full = woke >= next;
        if (full) next += ((woke - next) / period + 1) * period;  // missed passes collapse
        lock.unlock();
        subscriptions_->timerTick(full);
        lock.lock();
    }
}

void Server::deadlineLoop() {
    session::QueuedCanceller canceller{&Server::unlinkQueued, this};
    while (deadlines_->waitForDeadlines()) {
        std::int64_t now = monotonicMs();
        std::uint32_t n = sessions_->expireRequests(now, canceller);
        {
            // The connection table's lock is taken by accept/close and this sweep only.
            std::lock_guard lock(connectionsMutex_);
            for (auto& [p, c] : connections_) n += c->requests.expire(now, canceller);
        }
        if (n) logger()->debug("{} request(s) past their TimeoutHint", n);
        std::this_thread::sleep_for(std::chrono::milliseconds(session::DeadlineMonitor::kPeriodMs));
    }
}

// --- memory policy (housekeeping) ------------------------------------------------------------

namespace {
std::atomic<std::uint32_t> heapTrims{0};
}  // namespace

void trimHeap() noexcept {
#if defined(__GLIBC__)
    ::malloc_trim(0);
#endif
    heapTrims.fetch_add(1, std::memory_order_relaxed);
}

std::uint32_t heapTrimCount() noexcept {
    return heapTrims.load(std::memory_order_relaxed);
}

bool trimHeapAfterMessageBurst() noexcept {
    // Process-wide like the pools' count (two servers in one process share them).
    static std::atomic<std::uint64_t> seen{0}, trimmedAt{0};
    std::uint64_t freed = subscription::MessagePool::freedBytes();
    if (seen.exchange(freed, std::memory_order_relaxed) != freed)
        return false;  // still freeing: wait for a quiet tick
    std::uint64_t at = trimmedAt.load(std::memory_order_relaxed);
    if (freed - at < (std::uint64_t{256} << 10) ||
        !trimmedAt.compare_exchange_strong(at, freed, std::memory_order_relaxed))
        return false;
    trimHeap();
    return true;
}

void Server::scheduleSweep(std::int64_t dueMs) {
    std::lock_guard lock(housekeepingMutex_);
    if (dueMs >= sweepDueMs_) return;
    sweepDueMs_ = dueMs;
    sweepWake_.notify_all();
}

void Server::housekeepingLoop() {
    std::unique_lock lock(housekeepingMutex_);
    while (running_.load()) {
        // A session or channel made from here on lowers sweepDueMs_ (scheduleSweep).
        sweepDueMs_ = INT64_MAX;
        lock.unlock();
        std::int64_t now = monotonicMs();
        std::int64_t next = INT64_MAX;
        if (std::size_t n = sessions_->sweep(now, &next))
            logger()->info("{} session(s) timed out", n);
        // The heap trim after a burst of freed NotificationMessages needs a tick after the
        // burst: every 200 ms while messages are being freed, every second while sessions
        // (whose subscriptions free them) exist, not at all on a server without any.
        trimHeapAfterMessageBurst();
        std::uint64_t freed = subscription::MessagePool::freedBytes();
        if (freed != messagesFreedSeen_)
            next = std::min(next, now + kBurstTickMs);
        else if (next != INT64_MAX)
            next = std::min(next, now + kHeapCheckMs);
        messagesFreedSeen_ = freed;
        // Request records a burst left unused for a whole period go back, their mappings
        // with them; looked at again while spares exceed the reserve.
        if (now - recordsTrimmedMs_ >= kRecordTrimMs) {
            recordsTrimmedMs_ = now;
            requestPool_->free.trim();
        }
        if (requestPool_->free.spares() > requestPool_->free.reserve())
            next = std::min(next, now + kRecordTrimMs);
        std::vector<std::shared_ptr<Connection>> expired, stalled, idle;
        const auto& l = cfg_.server.limits;
        const auto stallMs = std::int64_t(l.reassembly_idle_timeout_ms);
        const auto idleMs = std::int64_t(l.idle_channel_timeout_ms);
        sessions_->boundChannels(boundChannels_);
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
        for (auto& c : expired)
            c->fail(UAPLEX_BadSecureChannelTokenUnknown, "security token expired");
        for (auto& c : stalled) {
            c->swept.store(true, std::memory_order_relaxed);
            c->fail(UAPLEX_BadTimeout, "an unfinished message got no chunk in time");
        }
        for (auto& c : idle) {
            c->swept.store(true, std::memory_order_relaxed);
            c->fail(UAPLEX_BadTimeout, "no session on the channel");
        }
        lock.lock();
        // Sleeps until the earliest timeout or expiry: no wake-up while nothing is due.
        sweepDueMs_ = std::min(sweepDueMs_, next);
        while (running_.load() && monotonicMs() < sweepDueMs_) {
            if (sweepDueMs_ == INT64_MAX)
                sweepWake_.wait(lock);
            else
                sweepWake_.wait_until(lock, std::chrono::steady_clock::time_point(
                                                std::chrono::milliseconds(sweepDueMs_)));
        }
    }
}

}  // namespace uaplex::server
