// SPDX-License-Identifier: Apache-2.0
// A small blocking opc.tcp client on our encoder, for integration tests: UACP Hello, OPN with
// SecurityPolicy None, single- or multi-chunk requests, chunked responses, CLO, raw bytes.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uaplex/encoding/encoding.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace uaplex::test {

class Client {
  public:
    ~Client() { disconnect(); }

    bool connect(std::uint16_t port, int timeoutMs = 3000) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        timeval tv{timeoutMs / 1000, (timeoutMs % 1000) * 1000};
        setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        int one = 1;
        setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    // Takes over a connected socket (reverse connect: the server connected to us).
    void adopt(int fd, int timeoutMs = 3000) {
        fd_ = fd;
        timeval tv{timeoutMs / 1000, (timeoutMs % 1000) * 1000};
        setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    void disconnect() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    int fd() const { return fd_; }

    bool sendRaw(const std::vector<std::uint8_t>& bytes) {
        std::size_t off = 0;
        while (off < bytes.size()) {
            ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
            if (n <= 0) return false;
            off += std::size_t(n);
        }
        return true;
    }
    // One whole message or chunk (header included); empty on close, timeout or error.
    std::vector<std::uint8_t> receive() {
        std::vector<std::uint8_t> m(8);
        if (!readAll(m.data(), 8)) return {};
        std::uint32_t size;
        std::memcpy(&size, m.data() + 4, 4);
        if (size < 8 || size > (64u << 20)) return {};
        m.resize(size);
        if (!readAll(m.data() + 8, size - 8)) return {};
        return m;
    }
    // True when the server closed the connection (EOF) within the receive timeout.
    bool closedByServer() {
        std::uint8_t b[512];
        for (;;) {
            ssize_t n = ::recv(fd_, b, sizeof b, 0);
            if (n == 0) return true;
            if (n < 0) return errno == ECONNRESET;
        }
    }

    static std::vector<std::uint8_t> hello(std::string_view url, std::uint32_t recv = 8192,
                                           std::uint32_t send = 8192, std::uint32_t maxMessage = 0,
                                           std::uint32_t maxChunks = 0) {
        std::vector<std::uint8_t> m(32 + url.size());
        std::memcpy(m.data(), "HELF", 4);
        put(m, 4, std::uint32_t(m.size()));
        put(m, 8, 0);
        put(m, 12, recv);
        put(m, 16, send);
        put(m, 20, maxMessage);
        put(m, 24, maxChunks);
        put(m, 28, std::uint32_t(url.size()));
        std::memcpy(m.data() + 32, url.data(), url.size());
        return m;
    }
    static void put(std::vector<std::uint8_t>& v, std::size_t at, std::uint32_t x) {
        std::memcpy(v.data() + at, &x, 4);
    }
    static std::uint32_t get(const std::vector<std::uint8_t>& v, std::size_t at) {
        std::uint32_t x;
        std::memcpy(&x, v.data() + at, 4);
        return x;
    }

    // Hello + OPN Issue. The client accepts chunks of 8192 bytes.
    bool open(std::uint16_t port, std::uint32_t maxMessage = 0) {
        return connect(port) &&
               openOnConnected("opc.tcp://127.0.0.1:" + std::to_string(port), maxMessage);
    }
    bool openOnConnected(const std::string& url, std::uint32_t maxMessage = 0) {
        url_ = url;
        if (!sendRaw(hello(url_, 8192, 8192, maxMessage, 0))) return false;
        auto ack = receive();
        if (ack.size() != 28 || std::memcmp(ack.data(), "ACK", 3) != 0) return false;
        sendBufferSize_ = get(ack, 12);  // the server's ReceiveBufferSize
        return openSecureChannel(ua::SecurityTokenRequestType::Issue);
    }
    // OPN Issue (on a fresh connection) or Renew; takes the new token at once.
    bool openSecureChannel(ua::SecurityTokenRequestType type) {
        enc::ByteBuffer b;
        enc::BinaryWriter w(b);
        w.writeBytes("OPNF", 4);
        w.writeRaw<std::uint32_t>(0);
        w.writeRaw<std::uint32_t>(channelId_);
        enc::encode(w, ua::makeString("http://opcfoundation.org/UA/SecurityPolicy#None"));
        enc::encode(w, ua::nullByteString());
        enc::encode(w, ua::nullByteString());
        w.writeRaw<std::uint32_t>(seq_++);
        w.writeRaw<std::uint32_t>(requestId_++);
        ua::OpenSecureChannelRequest req{};
        req.requestHeader.authenticationToken = ua::numericNodeId(0, 0);
        req.requestType = type;
        req.securityMode = ua::MessageSecurityMode::None_;
        req.clientNonce = ua::nullByteString();
        req.requestedLifetime = 60000;
        enc::encodeMessage(w, req);
        auto v = b.toVector();
        put(v, 4, std::uint32_t(v.size()));
        if (!sendRaw(v)) return false;
        auto resp = receive();
        if (resp.size() < 12 || std::memcmp(resp.data(), "OPNF", 4) != 0) return false;
        channelId_ = get(resp, 8);
        // Skip the asymmetric and sequence headers (policy None: empty certificates).
        std::size_t off = 12 + 4 + get(resp, 12) + 4 + 4 + 8;
        enc::DecodeLimits limits;
        auto m = enc::decodeMessage({resp.data() + off, resp.size() - off}, arena_, limits);
        if (m.status != UAPLEX_Good) return false;
        tokenId_ = static_cast<ua::OpenSecureChannelResponse*>(m.object)->securityToken.tokenId;
        return true;
    }

    // Sends a request (split into chunks of the server's receive buffer size) and returns
    // the reassembled response message (or status Bad* with a null object).
    template <class T>
    enc::DecodedMessage call(T& request, std::uint32_t handle = 1) {
        if (!send(request, handle)) return {UAPLEX_BadConnectionClosed, nullptr, nullptr};
        return receiveResponse();
    }
    // Sends a request without waiting for its response (pipelining); false when the
    // connection is gone.
    template <class T>
    bool send(T& request, std::uint32_t handle) {
        return sendMessage(encodeRequest(request, handle));
    }
    // The message body of `request` with this client's session header (for callRaw).
    template <class T>
    std::vector<std::uint8_t> encodeRequest(T& request, std::uint32_t handle) {
        request.requestHeader.authenticationToken = token_;
        request.requestHeader.requestHandle = handle;
        request.requestHeader.timeoutHint = timeoutHint_;
        enc::ByteBuffer body;
        enc::BinaryWriter w(body);
        enc::encodeMessage(w, request);
        return body.toVector();
    }
    enc::DecodedMessage callRaw(const std::vector<std::uint8_t>& body, std::size_t chunkBody = 0) {
        if (!sendMessage(body, chunkBody)) return {UAPLEX_BadConnectionClosed, nullptr, nullptr};
        return receiveResponse();
    }
    bool sendMessage(const std::vector<std::uint8_t>& body, std::size_t chunkBody = 0) {
        std::uint32_t rid = requestId_++;
        if (chunkBody == 0) chunkBody = sendBufferSize_ - 24;
        std::size_t off = 0;
        do {
            std::size_t n = std::min(chunkBody, body.size() - off);
            bool last = off + n == body.size();
            std::vector<std::uint8_t> c(24 + n);
            std::memcpy(c.data(), last ? "MSGF" : "MSGC", 4);
            put(c, 4, std::uint32_t(c.size()));
            put(c, 8, channelId_);
            put(c, 12, tokenId_);
            put(c, 16, seq_++);
            put(c, 20, rid);
            std::memcpy(c.data() + 24, body.data() + off, n);
            if (!sendRaw(c)) return false;
            off += n;
        } while (off < body.size());
        return true;
    }
    enc::DecodedMessage receiveResponse() {
        responseBytes_.clear();
        lastAbort_ = UAPLEX_Good;
        chunksReceived_ = 0;
        for (;;) {
            auto c = receive();
            if (c.empty()) return {UAPLEX_BadConnectionClosed, nullptr, nullptr};
            if (std::memcmp(c.data(), "ERR", 3) == 0) return {get(c, 8), nullptr, nullptr};
            ++chunksReceived_;
            if (c[3] == 'A') {
                lastAbort_ = get(c, 24);
                return {lastAbort_, nullptr, nullptr};
            }
            responseBytes_.insert(responseBytes_.end(), c.begin() + 24, c.end());
            if (c[3] == 'F') break;
        }
        arena_.reset();
        enc::DecodeLimits limits;
        return enc::decodeMessage(responseBytes_, arena_, limits);
    }

    static uaplex_status result(const enc::DecodedMessage& m) {
        if (m.status != UAPLEX_Good) return m.status;
        return static_cast<const ua::ResponseHeader*>(m.object)->serviceResult;
    }

    // CreateSession + ActivateSession (anonymous).
    uaplex_status createSession() { return createSessionAs(nullptr); }
    // CreateSession + ActivateSession with `token` (null: anonymous).
    uaplex_status createSessionAs(const ua::ExtensionObject* token) {
        if (uaplex_status st = createSessionOnly(); st != UAPLEX_Good) return st;
        return token ? activateAs(*token) : activateSession();
    }
    // CreateSession alone; serverNonce() and serverCertificate() keep what it returned.
    uaplex_status createSessionOnly() {
        ua::CreateSessionRequest cs{};
        cs.endpointUrl = ua::makeString(url_);
        cs.sessionName = ua::makeString("integration");
        cs.requestedSessionTimeout = 60000;
        auto m = call(cs);
        if (result(m) != UAPLEX_Good) return result(m);
        auto& r = *static_cast<ua::CreateSessionResponse*>(m.object);
        auto& t = r.authenticationToken;
        tokenBytes_.assign(t.identifier.bytestring.data,
                           t.identifier.bytestring.data + t.identifier.bytestring.length);
        token_ = t;
        token_.identifier.bytestring.data = tokenBytes_.data();
        auto keep = [](const ua::ByteString& b) {
            return b.length > 0 ? std::vector<std::uint8_t>(b.data, b.data + b.length)
                                : std::vector<std::uint8_t>{};
        };
        serverNonce_ = keep(r.serverNonce);
        serverCertificate_ = keep(r.serverCertificate);
        if (r.sessionId.identifier_type == UAPLEX_ID_GUID)
            sessionGuid_ = r.sessionId.identifier.guid;
        return UAPLEX_Good;
    }
    // The SessionId of the last CreateSession (ns=1, a Guid on this server).
    const ua::Guid& sessionGuid() const { return sessionGuid_; }
    const std::vector<std::uint8_t>& serverNonce() const { return serverNonce_; }
    const std::vector<std::uint8_t>& serverCertificate() const { return serverCertificate_; }
    // ActivateSession with a user identity token (ExtensionObject of a *IdentityToken).
    uaplex_status activateAs(const ua::ExtensionObject& token) {
        ua::ActivateSessionRequest as{};
        as.userIdentityToken = token;
        return result(call(as));
    }
    // A UserNameIdentityToken with the password in clear (SecurityPolicy None).
    struct UserName {
        ua::UserNameIdentityToken token{};
        ua::ExtensionObject eo{};
        UserName(std::string_view policyId, std::string_view user, std::string_view password) {
            token.policyId = ua::makeString(policyId);
            token.userName = ua::makeString(user);
            token.password = ua::ByteString{
                std::int32_t(password.size()),
                const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(password.data()))};
            token.encryptionAlgorithm = ua::nullString();
            eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
            eo.type_id = ua::numericNodeId(0, 324);
            eo.data_type = enc::dataTypeOf<ua::UserNameIdentityToken>();
            eo.object = &token;
        }
        UserName(const UserName&) = delete;
    };
    // Uses another client's session (its AuthenticationToken) on this channel.
    void adoptSession(const Client& other) {
        tokenBytes_ = other.tokenBytes_;
        token_ = other.token_;
        token_.identifier.bytestring.data = tokenBytes_.data();
    }
    uaplex_status activateSession() {
        ua::ActivateSessionRequest as{};
        ua::AnonymousIdentityToken anon{ua::makeString("anonymous")};
        as.userIdentityToken.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        as.userIdentityToken.type_id = ua::numericNodeId(0, 321);
        as.userIdentityToken.data_type = enc::dataTypeOf<ua::AnonymousIdentityToken>();
        as.userIdentityToken.object = &anon;
        return result(call(as));
    }

    bool closeChannel() {
        std::vector<std::uint8_t> c(24);
        std::memcpy(c.data(), "CLOF", 4);
        put(c, 4, 24);
        put(c, 8, channelId_);
        put(c, 12, tokenId_);
        put(c, 16, seq_++);
        put(c, 20, requestId_++);
        return sendRaw(c);
    }

    std::uint32_t chunksReceived() const { return chunksReceived_; }
    std::uint32_t tokenId() const { return tokenId_; }
    void useToken(std::uint32_t id) { tokenId_ = id; }
    // RequestHeader.timeoutHint of the following requests (ms, 0 = none).
    void setTimeoutHint(std::uint32_t ms) { timeoutHint_ = ms; }
    std::uint32_t channelId() const { return channelId_; }
    const std::string& url() const { return url_; }

  private:
    bool readAll(std::uint8_t* p, std::size_t n) {
        while (n) {
            ssize_t r = ::recv(fd_, p, n, 0);
            if (r <= 0) return false;
            p += r;
            n -= std::size_t(r);
        }
        return true;
    }

    int fd_ = -1;
    std::string url_;
    std::uint32_t sendBufferSize_ = 8192;
    std::uint32_t channelId_ = 0, tokenId_ = 0, seq_ = 1, requestId_ = 1;
    std::uint32_t timeoutHint_ = 10000;
    ua::NodeId token_ = ua::numericNodeId(0, 0);
    std::vector<std::uint8_t> tokenBytes_;
    std::vector<std::uint8_t> serverNonce_, serverCertificate_;
    std::vector<std::uint8_t> responseBytes_;
    std::uint32_t chunksReceived_ = 0;
    ua::Guid sessionGuid_{};
    uaplex_status lastAbort_ = UAPLEX_Good;
    enc::Arena arena_;
};

// A Read of the Value of Server_ServerStatus_State once per element of `ids` (which the
// request points into, so it must outlive it).
inline ua::ReadRequest readServerState(std::vector<ua::ReadValueId>& ids) {
    for (auto& id : ids) {
        id.nodeId = ua::numericNodeId(0, 2259);
        id.attributeId = 13;  // Value
    }
    ua::ReadRequest read{};
    read.nodesToRead = {std::int32_t(ids.size()), ids.data()};
    return read;
}

}  // namespace uaplex::test
