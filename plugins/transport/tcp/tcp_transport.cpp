// SPDX-License-Identifier: Apache-2.0
// transport-tcp: listens on opc.tcp endpoints, speaks UACP (Part 6 7.1) and hands whole
// secure-conversation chunks to the kernel. One io_context thread serves every socket, so
// connection state is touched only there. The io_context runs without Asio's locks (it is
// never touched by another thread): send/close/secure_channel_opened from other threads go
// through a lock-free inbox and an eventfd, so no lock shared by all connections is taken
// per request. A send on a quiet connection with nothing queued ahead of it is written by the
// sending thread itself; a pipelining connection's sends are batched into gathered writes by
// the io thread, as is what the socket does not take at once. Receive buffers are rented from
// the kernel's pool (one per chunk, given back by the kernel), so steady-state traffic does
// not allocate.
#include <utility>  // before Asio: 1.74 uses std::exchange without it under C++20

#include <boost/asio.hpp>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "uacp.hpp"
#include "uaplex/cpp/kinds.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace uaplex::tcp;

namespace {

class TcpTransport;

struct ReverseTarget {
    std::string clientUrl;
    std::string endpointUrl;
    std::string host;
    std::uint16_t port = 0;
    std::uint32_t backoffMs = 0;
    std::unique_ptr<asio::steady_timer> retry;
    std::thread resolver;  // the last name resolution; joined before the next and at stop
};

// Memory for one outstanding asynchronous operation's handler. Sized by the largest operation
// that used it (an unused slot costs nothing) and reused after; the heap per operation only
// when the slot is taken.
struct HandlerSlot {
    HandlerSlot() = default;
    explicit HandlerSlot(std::size_t size) : storage(new unsigned char[size]), capacity(size) {}
    std::unique_ptr<unsigned char[]> storage;  // new[] storage is suitably aligned
    std::size_t capacity = 0;
    std::atomic<bool> used{false};
};

template <class T>
struct SlotAllocator {
    using value_type = T;
    HandlerSlot* slot;
    explicit SlotAllocator(HandlerSlot* s) noexcept : slot(s) {}
    template <class U>
    SlotAllocator(const SlotAllocator<U>& o) noexcept : slot(o.slot) {}
    T* allocate(std::size_t n) {
        std::size_t bytes = n * sizeof(T);
        if (bytes > slot->capacity && !slot->used.load()) {  // first use, or a larger operation
            slot->capacity = (bytes + 63) & ~std::size_t{63};
            slot->storage.reset(new unsigned char[slot->capacity]);
        }
        if (bytes <= slot->capacity && !slot->used.exchange(true))
            return reinterpret_cast<T*>(slot->storage.get());
        return static_cast<T*>(::operator new(bytes));
    }
    void deallocate(T* p, std::size_t) noexcept {
        if (reinterpret_cast<unsigned char*>(p) == slot->storage.get())
            slot->used.store(false);
        else
            ::operator delete(p);
    }
    template <class U>
    bool operator==(const SlotAllocator<U>& o) const noexcept {
        return slot == o.slot;
    }
    template <class U>
    bool operator!=(const SlotAllocator<U>& o) const noexcept {
        return slot != o.slot;
    }
};

// A completion handler whose operation memory comes from a HandlerSlot (Asio allocates
// through the handler's associated allocator).
template <class F>
struct SlotHandler {
    HandlerSlot* slot;
    F f;
    using allocator_type = SlotAllocator<void>;
    allocator_type get_allocator() const noexcept { return allocator_type(slot); }
    template <class... A>
    void operator()(A&&... a) {
        f(std::forward<A>(a)...);
    }
};
template <class F>
SlotHandler<std::decay_t<F>> inSlot(HandlerSlot& slot, F&& f) {
    return {&slot, std::forward<F>(f)};
}

// Work another thread hands to the io thread. `run` is called on the io thread, or with
// `discard` set when the transport stops before it could run.
struct IoTask {
    IoTask* next = nullptr;
    void (*run)(IoTask*, bool discard) = nullptr;
};

// Multi-producer inbox of the io thread: a lock-free stack taken whole by the io thread,
// and an eventfd written only by the producer that finds the inbox unsignalled.
class IoInbox {
  public:
    IoInbox() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
    ~IoInbox() {
        if (fd_ >= 0) ::close(fd_);
    }
    int fd() const { return fd_; }
    void push(IoTask* t) noexcept {
        IoTask* h = head_.load();
        do {
            t->next = h;
        } while (!head_.compare_exchange_weak(h, t));
        if (!signalled_.exchange(true)) {
            std::uint64_t one = 1;
            [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
        }
    }
    // io thread: every task pushed so far, oldest first. The flag is cleared before the
    // stack is taken, so a push after the take signals again.
    IoTask* takeAll() noexcept {
        std::uint64_t count;
        [[maybe_unused]] auto n = ::read(fd_, &count, sizeof count);
        signalled_.store(false);
        IoTask* h = head_.exchange(nullptr);
        IoTask* fifo = nullptr;
        while (h) {
            IoTask* n2 = h->next;
            h->next = fifo;
            fifo = h;
            h = n2;
        }
        return fifo;
    }

  private:
    int fd_;
    std::atomic<IoTask*> head_{nullptr};
    std::atomic<bool> signalled_{false};
};

// A rare operation (close, handshake end, listen, stop) as an allocated task.
struct FnTask : IoTask {
    explicit FnTask(std::function<void()> f) : fn(std::move(f)) {
        run = [](IoTask* t, bool discard) {
            auto* self = static_cast<FnTask*>(t);
            if (!discard) self->fn();
            delete self;
        };
    }
    std::function<void()> fn;
};

struct Connection;

// Unfinished handshakes in deadline order, one timer for the list: before Hello (deadline
// accept + the Hello timeout) and between Hello and the first OPN (Hello + the handshake
// timeout). Each list is appended in the order its deadlines come, so its head expires first.
struct PendingList {
    PendingList(asio::io_context& io, HandlerSlot& s) : timer(io), slot(&s) {}
    Connection* head = nullptr;
    Connection* tail = nullptr;
    asio::steady_timer timer;
    bool armed = false;
    HandlerSlot* slot;  // the timer's wait (outlives the io_context): no allocation per wait
};

struct Connection : std::enable_shared_from_this<Connection> {
    Connection(TcpTransport& t, tcp::socket s);
    TcpTransport& transport;
    tcp::socket socket;
    void* user = nullptr;
    ReverseTarget* reverse = nullptr;
    bool helloDone = false;
    bool pending = true;  // counted in the unfinished handshakes
    // While pending: its place in one of the transport's handshake lists and when its
    // handshake times out.
    PendingList* pendingList = nullptr;
    Connection* pendingPrev = nullptr;
    Connection* pendingNext = nullptr;
    std::chrono::steady_clock::time_point handshakeDeadline{};
    std::string peerHost;  // counted in the per-peer connections; empty for reverse connects
    bool closed = false;   // io thread; on_closed was called
    bool closing = false;
    bool receiving = true;
    bool readParked = false;
    std::uint32_t receiveLimit = kMaxHelloSize;
    // Reads go into the transport's one staging buffer (see TcpTransport::stage_); all a
    // connection keeps between reads is the start of a header cut by the read (under 8
    // bytes) or, for a chunk cut after its header, the rented buffer `rx` it is completed in.
    std::uint8_t carry[kHeaderSize] = {};
    std::uint8_t carryLength = 0;
    bool wroteSinceSweep = false;  // io thread: a write since the last idle sweep
    uaplex_buffer rx{};
    uaplex_status closeReason = UAPLEX_Good;
    // Send queue: filled by any thread, drained by the io thread.
    std::mutex sendMutex;
    // A small chunk is copied into the connection's bytes and its pool buffer goes back at
    // once, so the pool holds no array per response waiting for the socket (a pipelining
    // client would otherwise keep one per request in flight). Large chunks are queued as is.
    struct Segment {
        uaplex_buffer buffer;  // data is null for copied bytes
        std::size_t offset, length;
    };
    static constexpr std::size_t kCopyLimit = 4096;
    std::vector<Segment> queued, writing;
    std::vector<std::uint8_t> queuedBytes, writingBytes;
    std::vector<asio::const_buffer> gather;
    bool writeActive = false;
    bool sendClosed = false;
    // Bytes in `queued` and in `writing` (under sendMutex): above the high-water mark the
    // connection stops being read (the peer reads nothing, so its requests must not pile up
    // answers), below half of it reading resumes; above the maximum it is closed.
    std::size_t queuedTotal = 0, writingTotal = 0;
    std::atomic<bool> throttled{false};
    // Closes a connection whose last write does not finish (a peer that reads nothing).
    std::unique_ptr<asio::steady_timer> linger;
    std::chrono::steady_clock::time_point lastSend{};  // the last send() (under sendMutex)
    // Requests (final MSG chunks) received, by the io thread, and responses sent (under
    // sendMutex): the difference is about how many answers are still to come.
    std::atomic<std::uint64_t> requestsIn{0};
    std::uint64_t responsesOut = 0;
    // The write kick: pushed to the io inbox by the send that finds no write active, so at
    // most one is outstanding; it keeps the connection alive until the io thread takes it.
    struct Kick : IoTask {
        Connection* owner = nullptr;
    } kick;
    std::shared_ptr<Connection> kickRef;
    // Handler memory: at most one read (or readiness wait) and one write are outstanding per
    // connection, so each has a slot and steady traffic allocates no handler.
    HandlerSlot readSlot, writeSlot;
};

uaplex_connection* handle(Connection* c) {
    return reinterpret_cast<uaplex_connection*>(c);
}
Connection* from(uaplex_connection* c) {
    return reinterpret_cast<Connection*>(c);
}

// Sends closer together than this on one connection are batched by the io thread; a send
// after a longer gap is written by the sending thread (see TcpTransport::send) ...
constexpr auto kQuietSendGap = std::chrono::milliseconds(1);
// ... and so is a send when at most this many requests of its connection are unanswered (a
// client that waits for each answer, a session with its Publish requests parked): only a
// pipelining client has answers following one another closely enough to batch.
constexpr std::int64_t kFewInFlight = 4;

// The last chunk of a request or response message (MSG, final): one per message.
inline bool isFinalMessageChunk(const uaplex_buffer& b) {
    return b.used >= 4 && b.data[0] == 'M' && b.data[1] == 'S' && b.data[2] == 'G' &&
           b.data[3] == 'F';
}

class TcpTransport final : public uaplex::sdk::Transport {
  public:
    TcpTransport(uaplex::sdk::Context ctx, const uaplex_transport_params& p)
        : Transport(ctx, p),
          io_(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE),
          inboxFd_(io_),
          work_(asio::make_work_guard(io_)) {
        if (inbox_.fd() < 0)
            throw uaplex::sdk::StatusError(UAPLEX_BadResourceUnavailable, "eventfd");
        inboxFd_.assign(::dup(inbox_.fd()));
        ctx.check_known_keys({});
        ctx.api()->metric_register(ctx.raw(), uaplex::sdk::to_str("sends_queued"),
                                   UAPLEX_METRIC_COUNTER, &sendsQueued_);
        ctx.api()->metric_register(ctx.raw(), uaplex::sdk::to_str("handshakes_evicted"),
                                   UAPLEX_METRIC_COUNTER, &evicted_);
        limits_.receiveBufferSize = std::max(params_.receive_buffer_size, kMinBufferSize);
        limits_.sendBufferSize = std::max(params_.send_buffer_size, kMinBufferSize);
        if (UAPLEX_HAS_FIELD(&p, uaplex_transport_params, on_hello)) {
            limits_.maxMessageSize = params_.max_message_size;
            limits_.maxChunkCount = params_.max_chunk_count;
            maxConnections_ = params_.max_connections ? params_.max_connections : maxConnections_;
            maxPending_ =
                params_.max_pending_handshakes ? params_.max_pending_handshakes : maxPending_;
            handshakeTimeoutMs_ =
                params_.handshake_timeout_ms ? params_.handshake_timeout_ms : handshakeTimeoutMs_;
            serverUri_.assign(params_.server_uri.data ? params_.server_uri.data : "",
                              params_.server_uri.len);
        } else {
            params_.on_hello = nullptr;
        }
        maxPerPeer_ = maxConnections_;
        helloTimeoutMs_ = handshakeTimeoutMs_;
        if (UAPLEX_HAS_FIELD(&p, uaplex_transport_params, max_send_queue_bytes)) {
            if (params_.max_connections_per_peer) maxPerPeer_ = params_.max_connections_per_peer;
            if (params_.hello_timeout_ms) helloTimeoutMs_ = params_.hello_timeout_ms;
            if (params_.send_queue_high_water_bytes)
                highWater_ = params_.send_queue_high_water_bytes;
            if (params_.max_send_queue_bytes) maxQueued_ = params_.max_send_queue_bytes;
        }
        helloTimeoutMs_ = std::min(helloTimeoutMs_, handshakeTimeoutMs_);
        maxQueued_ = std::max(maxQueued_, highWater_);
    }
    ~TcpTransport() override {
        stop();
        discardInbox();
    }

    uaplex_status start() override {
        if (thread_.joinable()) return UAPLEX_Good;
        waitInbox();
        onIo([this] {
            primeDescriptorStates();
            scheduleSweep();
        });
        thread_ = std::thread([this] { io_.run(); });
        return UAPLEX_Good;
    }

    uaplex_status stop() override {
        if (!thread_.joinable()) return UAPLEX_Good;
        std::promise<void> done;
        onIo([this, &done] {
            stopping_ = true;
            for (auto& a : acceptors_) {
                boost::system::error_code ec;
                a->close(ec);
            }
            for (auto& r : reverse_)
                if (r->retry) r->retry->cancel();
            sweepTimer_.cancel();
            beforeHello_.timer.cancel();
            afterHello_.timer.cancel();
            auto conns = connections_;
            for (auto& c : conns) finalize(c, UAPLEX_BadShutdown);
            // The io_context has no lock: it is stopped from its own thread.
            boost::system::error_code ec;
            inboxFd_.close(ec);
            work_.reset();
            io_.stop();
            done.set_value();
        });
        done.get_future().wait();
        thread_.join();
        for (auto& r : reverse_)
            if (r->resolver.joinable()) r->resolver.join();
        discardInbox();
        return UAPLEX_Good;
    }

    uaplex_status scheme(uaplex_str* out) override {
        static constexpr char kScheme[] = "opc.tcp";
        *out = {kScheme, sizeof kScheme - 1};
        return UAPLEX_Good;
    }

    uaplex_status listen(uaplex_str endpoint_url) override {
        std::string url(endpoint_url.data, endpoint_url.len);
        // Acceptors register with the io_context, which only its thread may touch.
        if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) {
            std::promise<uaplex_status> result;
            onIo([&] { result.set_value(listenOnIo(url)); });
            return result.get_future().get();
        }
        return listenOnIo(url);
    }

    uaplex_status listenOnIo(const std::string& url) {
        UrlParts parts;
        if (!parseUrl(url, "opc.tcp", parts)) {
            context().error("not an opc.tcp URL: " + url);
            return UAPLEX_BadTcpEndpointUrlInvalid;
        }
        std::vector<tcp::endpoint> endpoints;
        boost::system::error_code ec;
        auto addr = asio::ip::make_address(std::string(parts.host), ec);
        if (!ec) {
            endpoints.emplace_back(addr, parts.port);
        } else {
            tcp::resolver resolver(io_);
            auto results = resolver.resolve(std::string(parts.host), std::to_string(parts.port),
                                            tcp::resolver::passive, ec);
            if (ec) {
                context().error("cannot resolve " + std::string(parts.host) + ": " + ec.message());
                return UAPLEX_BadTcpEndpointUrlInvalid;
            }
            for (const auto& r : results) endpoints.push_back(r.endpoint());
        }
        std::size_t opened = 0;
        for (const auto& ep : endpoints) {
            auto a = std::make_unique<tcp::acceptor>(io_);
            a->open(ep.protocol(), ec);
            if (!ec) a->set_option(asio::socket_base::reuse_address(true), ec);
            // [::] and 0.0.0.0 on the same port are two listeners, not one dual-stack one.
            if (!ec && ep.address().is_v6()) a->set_option(asio::ip::v6_only(true), ec);
            if (!ec) a->bind(ep, ec);
            if (!ec) a->listen(asio::socket_base::max_listen_connections, ec);
            if (ec) {
                context().error("cannot listen on " + url + " (" + ep.address().to_string() +
                                "): " + ec.message());
                continue;
            }
            context().info("listening on " + url + " (" + ep.address().to_string() + ":" +
                           std::to_string(ep.port()) + ")");
            tcp::acceptor* raw = a.get();
            acceptors_.push_back(std::move(a));
            accept(raw, url);
            ++opened;
        }
        return opened ? UAPLEX_Good : UAPLEX_BadResourceUnavailable;
    }

    uaplex_status send(uaplex_connection* c, uaplex_buffer* buffers, size_t count) override {
        Connection* conn = from(c);
        bool kick = false, overflow = false;
        {
            std::lock_guard lock(conn->sendMutex);
            if (conn->sendClosed) {
                for (size_t i = 0; i < count; ++i) giveBack(buffers[i]);
                return UAPLEX_BadConnectionClosed;
            }
            // A connection that sends rarely (an idle session's keep-alive, a lone request)
            // with nothing ahead of these bytes: the sending thread writes what the socket
            // takes now, so the response does not wait for the io thread, is not copied and
            // leaves no send vector or write handler behind. One that sends often (pipelined
            // requests) queues, and the io thread writes many responses in one gathered
            // write: a syscall per response costs about 3 us of CPU each on loopback.
            const auto now = std::chrono::steady_clock::now();
            for (size_t i = 0; i < count; ++i)
                if (isFinalMessageChunk(buffers[i])) ++conn->responsesOut;
            const auto unanswered = static_cast<std::int64_t>(
                conn->requestsIn.load(std::memory_order_relaxed) - conn->responsesOut);
            const bool direct = now - conn->lastSend >= kQuietSendGap || unanswered <= kFewInFlight;
            conn->lastSend = now;
            size_t first = 0, sentInFirst = 0;
            if (direct && !conn->writeActive) directSend(*conn, buffers, count, first, sentInFirst);
            for (size_t i = first; i < count; ++i) {
                uaplex_buffer& b = buffers[i];
                std::size_t skip = i == first ? sentInFirst : 0;
                std::size_t left = b.used - skip;
                conn->queuedTotal += left;
                if (left > Connection::kCopyLimit) {
                    conn->queued.push_back({b, skip, left});
                    continue;
                }
                std::size_t offset = conn->queuedBytes.size();
                conn->queuedBytes.insert(conn->queuedBytes.end(), b.data + skip, b.data + b.used);
                conn->queued.push_back({uaplex_buffer{}, offset, left});
                giveBack(b);
            }
            if (conn->queued.empty()) return UAPLEX_Good;  // all written
            if (sendsQueued_) context().api()->metric_add(context().raw(), sendsQueued_, 1);
            const std::size_t held = conn->queuedTotal + conn->writingTotal;
            if (held > maxQueued_) {
                // The peer has not read for so long that its answers outgrow any large
                // response: nothing more is queued, and the io thread closes it.
                conn->sendClosed = true;
                overflow = true;
            } else if (held > highWater_ && !conn->throttled.load(std::memory_order_relaxed)) {
                conn->throttled.store(true, std::memory_order_relaxed);
            }
            kick = !conn->writeActive && !overflow;
            if (kick) conn->writeActive = true;
        }
        if (overflow) {
            onIo([this, self = conn->shared_from_this()] { closeOverflowed(self); });
            return UAPLEX_Good;
        }
        if (kick) {
            conn->kickRef = conn->shared_from_this();
            inbox_.push(&conn->kick);
        }
        return UAPLEX_Good;
    }

    // Under the connection's send mutex, with no write queued or active: writes `buffers`
    // without blocking. Those written whole go back to the pool; `first` is the first one
    // not written whole and `sentInFirst` how much of it was. The socket stays open while
    // the mutex is held and sendClosed is false (finalize sets it before closing); an error
    // leaves the bytes queued, and the io thread's write reports it.
    void directSend(Connection& c, uaplex_buffer* buffers, size_t count, size_t& first,
                    size_t& sentInFirst) {
        constexpr size_t kMaxIov = 16;
        if (count == 0 || count > kMaxIov || !c.queued.empty()) return;
        iovec iov[kMaxIov];
        for (size_t i = 0; i < count; ++i) iov[i] = {buffers[i].data, buffers[i].used};
        msghdr msg{};
        msg.msg_iov = iov;
        msg.msg_iovlen = count;
        ssize_t n;
        do {
            n = ::sendmsg(c.socket.native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        } while (n < 0 && errno == EINTR);
        if (n <= 0) return;
        auto sent = static_cast<std::size_t>(n);
        while (first < count && sent >= buffers[first].used) {
            sent -= buffers[first].used;
            giveBack(buffers[first]);
            ++first;
        }
        sentInFirst = first < count ? sent : 0;
    }

    // A Bad reason (the kernel failed the channel) reaches the peer as a UACP Error with it,
    // written after the pending sends: UACP framing is this transport's, not the kernel's.
    uaplex_status close(uaplex_connection* c, uaplex_status reason) override {
        onIo([this, self = from(c)->shared_from_this(), reason] {
            if ((reason & 0x80000000u) && !self->closed && !self->closing)
                fail(self, reason, {});
            else
                closeAfterSend(self, reason);
        });
        return UAPLEX_Good;
    }

    uaplex_status set_receiving(uaplex_connection* c, int32_t enabled) override {
        onIo([this, self = from(c)->shared_from_this(), enabled] {
            self->receiving = enabled != 0;
            if (self->receiving && self->readParked && !self->closed &&
                !self->throttled.load(std::memory_order_relaxed)) {
                self->readParked = false;
                receive(self);
            }
        });
        return UAPLEX_Good;
    }

    uaplex_status secure_channel_opened(uaplex_connection* c) override {
        onIo([this, self = from(c)->shared_from_this()] {
            if (self->closed || !self->pending) return;
            self->pending = false;
            --pendingCount_;
            unlinkPending(self.get());
        });
        return UAPLEX_Good;
    }

    uaplex_status reverse_connect(uaplex_str client_url, uaplex_str endpoint_url) override {
        auto r = std::make_unique<ReverseTarget>();
        r->clientUrl.assign(client_url.data, client_url.len);
        r->endpointUrl.assign(endpoint_url.data, endpoint_url.len);
        UrlParts parts;
        if (!parseUrl(r->clientUrl, "opc.tcp", parts)) return UAPLEX_BadTcpEndpointUrlInvalid;
        r->host = std::string(parts.host);
        r->port = parts.port;
        onIo([this, r = std::shared_ptr<ReverseTarget>(std::move(r))] {
            r->retry = std::make_unique<asio::steady_timer>(io_);
            reverse_.push_back(r);
            connectReverse(r.get());
        });
        return UAPLEX_Good;
    }

    // Tasks that came too late run nowhere; each still lets go of what it holds.
    void discardInbox() {
        for (IoTask* t = inbox_.takeAll(); t;) {
            IoTask* next = t->next;
            t->run(t, true);
            t = next;
        }
    }

    // io thread, first task: Asio's reactor keeps a state block (about 170 bytes) per socket
    // it ever had open at once, in a pool it reuses and never shrinks. Made one by one as a
    // burst of connections is accepted, each lands between that connection's own blocks and,
    // kept after they are freed, keeps its heap page resident. So the pool is filled here,
    // while the io thread's heap is empty, with as many states as there can be sockets
    // (max_channels, the refused ones in their handshake time and a few more), made
    // together: registered on duplicates of the inbox descriptor and released at once. The
    // duplicates leave 1024 descriptors of the open-file limit (half of a limit under 2048)
    // to the rest of the server starting meanwhile; a lower limit primes fewer.
    void primeDescriptorStates() {
        if (primed_) return;
        primed_ = true;
        rlimit rl{};
        std::size_t n = maxConnections_ + maxPending_ + 16;
        if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
            auto cur = std::size_t(rl.rlim_cur);
            n = std::min(n, cur > 2048 ? cur - 1024 : cur / 2);
        }
        std::vector<asio::posix::stream_descriptor> states;
        states.reserve(n);
        while (states.size() < n) {
            int fd = ::fcntl(inbox_.fd(), F_DUPFD_CLOEXEC, 0);
            if (fd < 0) break;
            boost::system::error_code ec;
            states.emplace_back(io_);
            states.back().assign(fd, ec);
            if (ec) {
                ::close(fd);
                states.pop_back();
                break;
            }
        }
    }

    // Runs `f` on the io thread (started or not: the inbox waits until it runs).
    void onIo(std::function<void()> f) { inbox_.push(new FnTask(std::move(f))); }

    // io thread: the inbox's eventfd became readable; every queued task runs, in order.
    void waitInbox() {
        inboxFd_.async_wait(asio::posix::stream_descriptor::wait_read,
                            inSlot(inboxSlot_, [this](boost::system::error_code ec) {
                                if (ec) return;
                                for (IoTask* t = inbox_.takeAll(); t;) {
                                    IoTask* next = t->next;
                                    t->run(t, false);
                                    t = next;
                                }
                                if (inboxFd_.is_open()) waitInbox();
                            }));
    }

    // --- io thread ---

    void write(const std::shared_ptr<Connection>& c) {
        bool idle = false, resume = false;
        {
            std::lock_guard lock(c->sendMutex);
            c->writingTotal = 0;  // the previous write, if any, is done
            if (c->queued.empty() || c->closed) {
                c->writeActive = false;
                idle = true;
            } else {
                c->writing.swap(c->queued);
                c->writingBytes.swap(c->queuedBytes);
                c->writingTotal = c->queuedTotal;
                c->queuedTotal = 0;
            }
            if (c->throttled.load(std::memory_order_relaxed) &&
                c->queuedTotal + c->writingTotal <= highWater_ / 2) {
                c->throttled.store(false, std::memory_order_relaxed);
                resume = true;
            }
        }
        if (idle) {
            if (c->closing && !c->closed) finishClose(c);
            if (resume) resumeReading(c);
            return;
        }
        c->wroteSinceSweep = true;
        c->gather.clear();
        // Copied segments are contiguous in writingBytes: neighbours make one descriptor.
        const std::uint8_t* bytes = c->writingBytes.data();
        for (const auto& seg : c->writing) {
            if (seg.buffer.data) {
                c->gather.emplace_back(seg.buffer.data + seg.offset, seg.length);
            } else if (!c->gather.empty() &&
                       static_cast<const std::uint8_t*>(c->gather.back().data()) +
                               c->gather.back().size() ==
                           bytes + seg.offset) {
                c->gather.back() = asio::const_buffer(c->gather.back().data(),
                                                      c->gather.back().size() + seg.length);
            } else {
                c->gather.emplace_back(bytes + seg.offset, seg.length);
            }
        }
        // A span, not the vector: the operation copies its buffer sequence.
        asio::async_write(c->socket, std::span<const asio::const_buffer>(c->gather),
                          inSlot(c->writeSlot, [this, c](boost::system::error_code ec, size_t) {
                              for (auto& seg : c->writing) giveBack(seg.buffer);
                              c->writing.clear();
                              c->writingBytes.clear();
                              if (ec) {
                                  {
                                      std::lock_guard lock(c->sendMutex);
                                      c->writeActive = false;
                                  }
                                  finalize(c, UAPLEX_BadConnectionClosed);
                                  return;
                              }
                              write(c);
                          }));
        if (resume) resumeReading(c);
    }

    // The send queue drained below half the high-water mark: a connection parked by it
    // reads again (unless the kernel paused it too).
    void resumeReading(const std::shared_ptr<Connection>& c) {
        if (!c->readParked || !c->receiving || c->closed || c->closing) return;
        c->readParked = false;
        receive(c);
    }

    // io thread: a connection whose queue passed max_send_queue_bytes. What is not being
    // written yet is dropped; an ERR Bad_TcpNotEnoughResources follows the write in progress
    // (if the peer ever reads again), and the close waits for it at most the linger time.
    void closeOverflowed(const std::shared_ptr<Connection>& c) {
        if (c->closed || c->closing) return;
        context().debug("connection closed: its send queue exceeds max_send_queue_bytes");
        bool start = false;
        {
            std::lock_guard lock(c->sendMutex);
            for (auto& seg : c->queued) giveBack(seg.buffer);
            c->queued.clear();
            c->queuedBytes.clear();
            std::uint8_t err[272];
            std::size_t n = writeError(err, UAPLEX_BadTcpNotEnoughResources, "send queue full");
            c->queuedBytes.assign(err, err + n);
            c->queued.push_back({uaplex_buffer{}, 0, n});
            c->queuedTotal = n;
            start = !c->writeActive;
            c->writeActive = true;
        }
        closeAfterSend(c, UAPLEX_BadTcpNotEnoughResources);
        if (start) write(c);
    }

  private:
    // Once a second: a connection that wrote nothing since the last sweep gives back what its
    // send vectors grew to, so idle connections keep no response-sized bytes. Busy ones keep
    // them, so steady traffic does not allocate.
    void scheduleSweep() {
        sweepTimer_.expires_after(std::chrono::seconds(1));
        sweepTimer_.async_wait(inSlot(sweepSlot_, [this](boost::system::error_code ec) {
            if (ec || stopping_) return;
            for (const auto& c : connections_) {
                if (c->wroteSinceSweep) {
                    c->wroteSinceSweep = false;
                    continue;
                }
                std::lock_guard lock(c->sendMutex);
                if (c->writeActive || !c->queued.empty()) continue;
                if (c->queuedBytes.capacity() == 0 && c->writingBytes.capacity() == 0 &&
                    c->gather.capacity() == 0 && !c->writeSlot.storage)
                    continue;
                std::vector<std::uint8_t>().swap(c->queuedBytes);
                std::vector<std::uint8_t>().swap(c->writingBytes);
                std::vector<Connection::Segment>().swap(c->queued);
                std::vector<Connection::Segment>().swap(c->writing);
                std::vector<asio::const_buffer>().swap(c->gather);
                // No write is outstanding: its handler memory goes too (the next write sizes it).
                if (!c->writeSlot.used.load()) {
                    c->writeSlot.storage.reset();
                    c->writeSlot.capacity = 0;
                }
            }
            scheduleSweep();
        }));
    }

    // The unfinished handshakes, in two lists: before Hello (deadline: accept plus the Hello
    // timeout) and after it (Hello plus the handshake timeout). Each list gets its entries in
    // deadline order, so its head expires first and one timer per list waits for it (a timer
    // and a wait per connection cost about 400 bytes each, the wait freed mid-life).
    void linkPending(PendingList& list, Connection* c, std::uint32_t timeoutMs) {
        c->handshakeDeadline =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
        c->pendingList = &list;
        c->pendingPrev = list.tail;
        c->pendingNext = nullptr;
        (list.tail ? list.tail->pendingNext : list.head) = c;
        list.tail = c;
        if (!list.armed) armHandshakeTimer(list);
    }
    void unlinkPending(Connection* c) noexcept {
        PendingList* list = c->pendingList;
        if (!list) return;  // not listed
        (c->pendingPrev ? c->pendingPrev->pendingNext : list->head) = c->pendingNext;
        (c->pendingNext ? c->pendingNext->pendingPrev : list->tail) = c->pendingPrev;
        c->pendingPrev = c->pendingNext = nullptr;
        c->pendingList = nullptr;
    }
    void armHandshakeTimer(PendingList& list) {
        if (!list.head || stopping_) return;
        list.armed = true;
        list.timer.expires_at(list.head->handshakeDeadline);
        list.timer.async_wait(inSlot(*list.slot, [this, &list](boost::system::error_code ec) {
            list.armed = false;
            if (ec || stopping_) return;
            auto now = std::chrono::steady_clock::now();
            while (list.head && list.head->handshakeDeadline <= now) {
                Connection* c = list.head;
                unlinkPending(c);
                if (!c->pending || c->closed) continue;
                context().debug(c->helloDone ? "handshake timeout" : "Hello timeout");
                finalize(c->shared_from_this(), UAPLEX_BadTimeout);
            }
            armHandshakeTimer(list);
        }));
    }

    // Slots are short: the unfinished handshake nearest its deadline goes (silent
    // connections first, their timeout is the shorter), with ERR Bad_TcpServerTooBusy, so that
    // connections that never open a channel cannot keep a new client out.
    bool evictPending() {
        Connection* victim = beforeHello_.head ? beforeHello_.head : afterHello_.head;
        if (!victim) return false;
        auto c = victim->shared_from_this();
        context().debug("evicting an unfinished handshake for a new connection");
        {
            std::lock_guard lock(c->sendMutex);
            if (!c->writeActive && c->queued.empty()) {
                std::uint8_t err[272];
                std::size_t n = writeError(err, UAPLEX_BadTcpServerTooBusy,
                                           "evicted: the handshake did not finish in time");
                [[maybe_unused]] auto sent =
                    ::send(c->socket.native_handle(), err, n, MSG_DONTWAIT | MSG_NOSIGNAL);
            }
        }
        if (evicted_) context().api()->metric_add(context().raw(), evicted_, 1);
        finalize(c, UAPLEX_BadTcpServerTooBusy);
        return true;
    }

    void giveBack(uaplex_buffer& b) {
        if (b.data) params_.pool->give_back(params_.pool_self, &b, this);
        b.data = nullptr;
    }

    bool rent(std::uint32_t size, uaplex_buffer& out) {
        out = uaplex_buffer{};
        out.hdr = UAPLEX_HEADER_INIT(uaplex_buffer, UAPLEX_STYPE_BUFFER);
        return params_.pool->take(params_.pool_self, params_.pool_manager, size, this, nullptr,
                                  &out) == UAPLEX_Good;
    }

    void accept(tcp::acceptor* a, const std::string& url) {
        a->async_accept([this, a, url](boost::system::error_code ec, tcp::socket s) {
            if (stopping_ || !a->is_open()) return;
            if (!ec) admit(std::move(s), url, nullptr);
            accept(a, url);
        });
    }

    // A new socket (accepted or reverse-connected) becomes a connection if limits allow.
    void admit(tcp::socket s, const std::string& url, ReverseTarget* reverse) {
        std::string host;
        if (!reverse) {
            boost::system::error_code ec;
            auto address = s.remote_endpoint(ec).address();
            // One peer, one key: an IPv4 client on a dual-stack socket counts as IPv4.
            if (address.is_v6() && address.to_v6().is_v4_mapped())
                address = asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6());
            if (!ec) host = address.to_string();
            auto it = peers_.find(host);
            if (it != peers_.end() && it->second >= maxPerPeer_) {
                context().debug("connection refused: max_channels_per_peer reached");
                refuse(std::move(s));
                return;
            }
        }
        while ((connections_.size() >= maxConnections_ || pendingCount_ >= maxPending_) &&
               evictPending()) {
        }
        if (connections_.size() >= maxConnections_ || pendingCount_ >= maxPending_) {
            context().debug("connection refused: limit of connections or pending handshakes");
            if (reverse) {
                boost::system::error_code ec;
                s.close(ec);
                scheduleReverse(reverse);
            } else {
                refuse(std::move(s));
            }
            return;
        }
        boost::system::error_code ec;
        s.set_option(tcp::no_delay(true), ec);
        s.non_blocking(true, ec);  // receive() reads until the socket has nothing
        std::string peer;
        auto remote = s.remote_endpoint(ec);
        if (!ec) peer = remote.address().to_string() + ":" + std::to_string(remote.port());
        auto c = std::make_shared<Connection>(*this, std::move(s));
        c->reverse = reverse;
        connections_.insert(c);
        ++pendingCount_;
        if (!host.empty()) {
            ++peers_[host];
            c->peerHost = std::move(host);
        }
        uaplex_status st =
            params_.on_accepted(params_.user, handle(c.get()), {url.data(), url.size()},
                                {peer.data(), peer.size()}, &c->user);
        if (st != UAPLEX_Good) {
            c->user = nullptr;
            finalize(c, st, false);
            return;
        }
        linkPending(beforeHello_, c.get(), helloTimeoutMs_);
        if (reverse) {
            reverse->backoffMs = 0;
            uaplex_buffer b;
            std::size_t n = reverseHelloSize(serverUri_, reverse->endpointUrl);
            if (n > limits_.sendBufferSize || !rent(std::uint32_t(n), b)) {
                finalize(c, UAPLEX_BadTcpInternalError);
                return;
            }
            b.used = writeReverseHello(b.data, serverUri_, reverse->endpointUrl);
            send(handle(c.get()), &b, 1);
        }
        receive(c);
    }

    // Reads what the socket holds into the transport's staging buffer and hands out every
    // whole chunk; waits for readability only after a read found nothing (the reactor is
    // edge-triggered). At most one read or wait is outstanding per connection: it is started
    // here only, and a parked connection (receiving off) starts none. One connection reads
    // at most kReadsPerTurn times in a row before it queues itself behind the others.
    void receive(const std::shared_ptr<Connection>& c, int turn = 0) {
        for (;;) {
            if (c->closed || c->closing) return;
            if (!c->receiving || c->throttled.load(std::memory_order_relaxed)) {
                c->readParked = true;
                return;
            }
            if (turn++ == kReadsPerTurn) {
                asio::post(io_, inSlot(c->readSlot, [this, c] {
                               if (!c->closed) receive(c);
                           }));
                return;
            }
            std::size_t have = c->carryLength;
            std::memcpy(stage_.get(), c->carry, have);
            boost::system::error_code ec;
            std::size_t n =
                c->socket.read_some(asio::buffer(stage_.get() + have, kStageSize - have), ec);
            if (ec == asio::error::would_block || ec == asio::error::try_again) {
                c->socket.async_wait(tcp::socket::wait_read,
                                     inSlot(c->readSlot, [this, c](boost::system::error_code ec) {
                                         if (c->closed) return;
                                         if (ec) return finalize(c, UAPLEX_BadConnectionClosed);
                                         receive(c);
                                     }));
                return;
            }
            if (ec) return finalize(c, UAPLEX_BadConnectionClosed);
            c->carryLength = 0;
            if (!parse(c, have + n)) return;  // a chunk continues in its own buffer, or closed
        }
    }

    // Hands out the whole chunks of stage_[0, length). True when everything was consumed
    // (a cut header is kept in carry); false when the rest of a chunk is being read into
    // its rented buffer or the connection is closing.
    bool parse(const std::shared_ptr<Connection>& c, std::size_t length) {
        std::size_t at = 0;
        for (;;) {
            if (c->closed || c->closing) return false;
            std::size_t avail = length - at;
            const std::uint8_t* p = stage_.get() + at;
            if (avail < kHeaderSize) {
                std::memcpy(c->carry, p, avail);
                c->carryLength = std::uint8_t(avail);
                return true;
            }
            Header h = parseHeader(p);
            uaplex_status st = checkHeader(h, c->helloDone, c->receiveLimit);
            if (st != UAPLEX_Good) {
                fail(c, st, "invalid message header");
                return false;
            }
            // Only what was checked above is allocated: at most the negotiated buffer size.
            if (!rent(h.size, c->rx)) {
                fail(c, UAPLEX_BadTcpNotEnoughResources, "no buffer");
                return false;
            }
            c->rx.used = h.size;
            if (avail < h.size) {
                std::memcpy(c->rx.data, p, avail);
                readRest(c, avail);
                return false;
            }
            std::memcpy(c->rx.data, p, h.size);
            at += h.size;
            deliver(c);
        }
    }

    // The rest of a chunk the stage held only the start of, straight into its buffer.
    void readRest(const std::shared_ptr<Connection>& c, std::size_t have) {
        auto body = asio::buffer(c->rx.data + have, c->rx.used - have);
        asio::async_read(c->socket, body,
                         inSlot(c->readSlot, [this, c](boost::system::error_code ec, size_t) {
                             if (c->closed) return giveBack(c->rx);
                             if (ec) {
                                 giveBack(c->rx);
                                 return finalize(c, UAPLEX_BadConnectionClosed);
                             }
                             deliver(c);
                             receive(c);
                         }));
    }

    // A whole chunk is in c->rx: the Hello is answered here, anything else goes to the kernel.
    void deliver(const std::shared_ptr<Connection>& c) {
        if (!c->helloDone) return onHello(c);
        uaplex_buffer chunk = c->rx;  // ownership passes to the kernel
        c->rx = uaplex_buffer{};
        if (isFinalMessageChunk(chunk)) c->requestsIn.fetch_add(1, std::memory_order_relaxed);
        params_.on_received(params_.user, c->user, &chunk);
    }

    void onHello(const std::shared_ptr<Connection>& c) {
        Hello hello;
        Negotiated n{};
        uaplex_status st = parseHello({c->rx.data, c->rx.used}, hello);
        if (st == UAPLEX_Good) st = negotiate(hello, limits_, n);
        uaplex_transport_negotiated info{};
        info.hdr =
            UAPLEX_HEADER_INIT(uaplex_transport_negotiated, UAPLEX_STYPE_TRANSPORT_NEGOTIATED);
        if (st == UAPLEX_Good) {
            info.protocol_version = hello.protocolVersion;
            info.receive_buffer_size = n.receiveBufferSize;
            info.send_buffer_size = n.sendBufferSize;
            info.max_message_size = n.clientMaxMessageSize;
            info.max_chunk_count = n.clientMaxChunkCount;
            info.endpoint_url = {hello.endpointUrl.data(), hello.endpointUrl.size()};
            if (params_.on_hello) st = params_.on_hello(params_.user, c->user, &info);
        }
        giveBack(c->rx);
        if (st != UAPLEX_Good) return fail(c, st, "Hello refused");
        uaplex_buffer ack;
        if (!rent(28, ack)) return fail(c, UAPLEX_BadTcpNotEnoughResources, "no buffer");
        ack.used = writeAcknowledge(ack.data, n);
        c->helloDone = true;
        c->receiveLimit = n.receiveBufferSize;
        if (c->pendingList == &beforeHello_) {
            unlinkPending(c.get());
            linkPending(afterHello_, c.get(), handshakeTimeoutMs_);
        }
        send(handle(c.get()), &ack, 1);
    }

    // A socket beyond the limits gets ERR Bad_TcpServerTooBusy (Part 6 7.1.5) and a graceful
    // close: our side shut after the ERR, the client's bytes read and dropped until it closes
    // (at most the handshake timeout), so that no reset overtakes the ERR. At most
    // max_pending_handshakes refusals are held; beyond, the socket is just closed.
    struct Refusal {
        explicit Refusal(tcp::socket s) : socket(std::move(s)), timer(socket.get_executor()) {}
        tcp::socket socket;
        asio::steady_timer timer;
        std::uint8_t message[272];
        std::uint8_t sink[512];
    };

    void refuse(tcp::socket s) {
        boost::system::error_code ec;
        if (refusals_ >= maxPending_ || stopping_) {
            s.close(ec);
            return;
        }
        ++refusals_;
        auto r = std::make_shared<Refusal>(std::move(s));
        std::size_t n = writeError(r->message, UAPLEX_BadTcpServerTooBusy, "too many connections");
        asio::async_write(
            r->socket, asio::buffer(r->message, n),
            [this, r](boost::system::error_code ec, std::size_t) {
                if (ec || stopping_) return endRefusal(r);
                r->socket.shutdown(tcp::socket::shutdown_send, ec);
                r->timer.expires_after(std::chrono::milliseconds(handshakeTimeoutMs_));
                r->timer.async_wait([r](boost::system::error_code ec) {
                    if (!ec) r->socket.close(ec);  // the pending read ends
                });
                drainRefused(r);
            });
    }

    void drainRefused(const std::shared_ptr<Refusal>& r) {
        r->socket.async_read_some(asio::buffer(r->sink),
                                  [this, r](boost::system::error_code ec, std::size_t) {
                                      if (ec || stopping_) return endRefusal(r);
                                      drainRefused(r);
                                  });
    }

    void endRefusal(const std::shared_ptr<Refusal>& r) {
        boost::system::error_code ec;
        r->timer.cancel();
        r->socket.close(ec);
        --refusals_;
    }

    // Sends ERR and closes once it is written.
    void fail(const std::shared_ptr<Connection>& c, uaplex_status st, std::string_view reason) {
        uaplex_buffer err;
        if (rent(272, err)) {
            err.used = writeError(err.data, st, reason);
            send(handle(c.get()), &err, 1);
        }
        closeAfterSend(c, st);
    }

    void closeAfterSend(const std::shared_ptr<Connection>& c, uaplex_status reason) {
        if (c->closed || c->closing) return;
        c->closing = true;
        c->closeReason = reason;
        bool idle;
        {
            std::lock_guard lock(c->sendMutex);
            idle = !c->writeActive;
        }
        if (idle) return finishClose(c);
        // A peer that reads nothing would keep the write, and the connection, for ever.
        c->linger = std::make_unique<asio::steady_timer>(io_);
        c->linger->expires_after(std::chrono::milliseconds(kCloseLingerMs));
        c->linger->async_wait([this, c](boost::system::error_code ec) {
            if (!ec && !c->closed) finalize(c, c->closeReason);
        });
    }

    void finishClose(const std::shared_ptr<Connection>& c) { finalize(c, c->closeReason); }

    // The one place a connection ends: socket closed, buffers back, kernel told once.
    void finalize(const std::shared_ptr<Connection>& c, uaplex_status reason, bool notify = true) {
        if (c->closed) return;
        c->closed = true;
        {
            std::lock_guard lock(c->sendMutex);
            c->sendClosed = true;
            for (auto& seg : c->queued) giveBack(seg.buffer);
            c->queued.clear();
            c->queuedBytes.clear();
        }
        boost::system::error_code ec;
        c->socket.shutdown(tcp::socket::shutdown_both, ec);
        c->socket.close(ec);
        if (c->linger) c->linger->cancel();
        if (!c->peerHost.empty()) {
            auto it = peers_.find(c->peerHost);
            if (it != peers_.end() && --it->second == 0) peers_.erase(it);
            c->peerHost.clear();
        }
        unlinkPending(c.get());
        if (c->pending) --pendingCount_;
        c->pending = false;
        connections_.erase(c);
        if (notify && c->user) params_.on_closed(params_.user, c->user, reason);
        if (c->reverse && !stopping_) scheduleReverse(c->reverse);
    }

    void connectReverse(ReverseTarget* r) {
        if (stopping_) return;
        // Asio's resolver would complete from its own thread into the lock-free io_context;
        // a thread of ours resolves and hands the result back through the inbox.
        if (r->resolver.joinable()) r->resolver.join();  // it ended with its last push
        r->resolver = std::thread([this, r, host = r->host, port = std::to_string(r->port)] {
            asio::io_context local;
            tcp::resolver resolver(local);
            boost::system::error_code ec;
            auto res = resolver.resolve(host, port, ec);
            onIo([this, r, ec, res] { onResolved(r, ec, res); });
        });
    }

    void onResolved(ReverseTarget* r, boost::system::error_code ec,
                    const tcp::resolver::results_type& res) {
        {
            if (stopping_) return;
            if (ec) return scheduleReverse(r);
            auto sock = std::make_shared<tcp::socket>(io_);
            asio::async_connect(
                *sock, res, [this, r, sock](boost::system::error_code ec, const tcp::endpoint&) {
                    if (stopping_) return;
                    if (ec) return scheduleReverse(r);
                    context().info("reverse connect: connected to " + r->clientUrl);
                    admit(std::move(*sock), r->endpointUrl, r);
                });
        }
    }

    // Backoff doubles from 1 s up to 30 s; a connection that got going resets it.
    void scheduleReverse(ReverseTarget* r) {
        r->backoffMs = r->backoffMs == 0 ? 1000 : std::min<std::uint32_t>(r->backoffMs * 2, 30000);
        r->retry->expires_after(std::chrono::milliseconds(r->backoffMs));
        r->retry->async_wait([this, r](boost::system::error_code ec) {
            if (!ec) connectReverse(r);
        });
    }

    HandlerSlot inboxSlot_{256};            // outlives io_, which may still hold the wait's handler
    uaplex_metric* sendsQueued_ = nullptr;  // sends that waited for the socket (backpressure)
    HandlerSlot sweepSlot_;                 // the sweep timer's wait: no allocation per second
    uaplex_metric* evicted_ = nullptr;      // unfinished handshakes evicted for new connections
    HandlerSlot beforeHelloSlot_, afterHelloSlot_;  // the handshake timers' waits
    // One staging buffer for every connection: only the io thread reads, and a read's bytes
    // are parsed before the next read, so no connection needs its own.
    static constexpr std::size_t kStageSize = 65536;
    static constexpr int kReadsPerTurn = 4;
    std::unique_ptr<std::uint8_t[]> stage_{new std::uint8_t[kStageSize]};
    asio::io_context io_;
    IoInbox inbox_;
    asio::posix::stream_descriptor inboxFd_;  // a dup of the inbox's eventfd, watched
    asio::executor_work_guard<asio::io_context::executor_type> work_;
    asio::steady_timer sweepTimer_{io_};              // io thread
    PendingList beforeHello_{io_, beforeHelloSlot_};  // io thread: handshakes without Hello
    PendingList afterHello_{io_, afterHelloSlot_};    // and those with Hello, without a channel
    std::thread thread_;
    std::vector<std::unique_ptr<tcp::acceptor>> acceptors_;
    std::vector<std::shared_ptr<ReverseTarget>> reverse_;          // io thread
    std::unordered_set<std::shared_ptr<Connection>> connections_;  // io thread
    std::size_t pendingCount_ = 0;                                 // io thread
    std::size_t refusals_ = 0;  // io thread; sockets refused and not yet closed
    bool stopping_ = false;
    ServerLimits limits_;
    bool primed_ = false;  // io thread: primeDescriptorStates ran
    std::size_t maxConnections_ = 1000;
    std::size_t maxPending_ = 100;
    std::uint32_t handshakeTimeoutMs_ = 10000;
    std::size_t maxPerPeer_ = 1000;
    std::uint32_t helloTimeoutMs_ = 10000;
    std::size_t highWater_ = 1u << 20;
    std::size_t maxQueued_ = 32u << 20;
    // A closing connection's last write (an ERR) gets this long before the socket is closed.
    static constexpr std::uint32_t kCloseLingerMs = 2000;
    std::unordered_map<std::string, std::uint32_t> peers_;  // io thread: connections per address
    std::string serverUri_;
};

Connection::Connection(TcpTransport& t, tcp::socket s) : transport(t), socket(std::move(s)) {
    kick.owner = this;
    kick.run = [](IoTask* task, bool discard) {
        std::shared_ptr<Connection> self = std::move(static_cast<Kick*>(task)->owner->kickRef);
        if (!discard) self->transport.write(self);
    };
}

}  // namespace

UAPLEX_PLUGIN(("transport-tcp", "0.1.0", "opc.tcp transport (UACP over TCP, Boost.Asio)"),
              uaplex::sdk::TransportFactory<TcpTransport>)
