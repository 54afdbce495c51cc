// SPDX-License-Identifier: Apache-2.0
#include <uaplex/server/audit_trail.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <uaplex/node_manager.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <uaplex/encoding/guid_text.hpp>
#include <uaplex/security/crypto.hpp>
#include <uaplex/server/service_handler.hpp>
#include <uaplex/session/session_manager.hpp>
#include <uaplex/session/session_services.hpp>

namespace uaplex::server {

namespace ns0 = ua::ns0;

namespace {

// A client's string in a record is cut to this: the line limit then holds every field.
constexpr std::size_t kMaxFieldChars = 256;
// Room kept at the end of a line for the truncation mark, "}" and the newline.
constexpr std::size_t kMarkBytes = 24;
constexpr std::int64_t kUnixEpochTicks = 116444736000000000LL;  // 1970 in DateTime ticks

std::string isoTime(std::int64_t dt) {
    const std::int64_t ticks = dt - kUnixEpochTicks;
    std::time_t secs = std::time_t(ticks / 10000000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[80];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  int((ticks % 10000000) / 10000));
    return buf;
}

std::string nodeIdText(const ua::NodeId& id) {
    std::string out;
    if (id.namespace_index != 0) out = "ns=" + std::to_string(id.namespace_index) + ";";
    switch (id.identifier_type) {
        case UAPLEX_ID_NUMERIC:
            return out + "i=" + std::to_string(id.identifier.numeric);
        case UAPLEX_ID_STRING:
            return out +
                   "s=" + std::string(ua::view(id.identifier.string).substr(0, kMaxFieldChars));
        case UAPLEX_ID_GUID:
            return out + "g=" + enc::guidText(id.identifier.guid);
        default:
            return out + "b=(" + std::to_string(std::max(id.identifier.bytestring.length, 0)) +
                   " bytes)";
    }
}

// A client's text, cut, with what is not printable UTF-8 replaced: every line of the log
// stays one line and valid JSON.
std::string cleanText(std::string_view s) {
    std::string out;
    s = s.substr(0, kMaxFieldChars);
    for (std::size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = c < 0x80         ? 1
                        : (c >> 5) == 6  ? 2
                        : (c >> 4) == 14 ? 3
                        : (c >> 3) == 30 ? 4
                                         : 0;
        bool ok = n > 0 && i + n <= s.size();
        for (std::size_t k = 1; ok && k < n; ++k)
            ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
        if (!ok || c < 0x20 || c == 0x7F) {
            out += '?';
            ++i;
            continue;
        }
        out.append(s.substr(i, n));
        i += n;
    }
    return out;
}

std::string jsonString(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + '"';
}

const char* eventTypeName(std::uint32_t type) noexcept {
    switch (type) {
        case ns0::AuditCreateSessionEventType:
            return "AuditCreateSessionEventType";
        case ns0::AuditActivateSessionEventType:
            return "AuditActivateSessionEventType";
        case ns0::AuditCancelEventType:
            return "AuditCancelEventType";
        case ns0::AuditWriteUpdateEventType:
            return "AuditWriteUpdateEventType";
        case ns0::AuditHistoryValueUpdateEventType:
            return "AuditHistoryValueUpdateEventType";
        case ns0::AuditHistoryRawModifyDeleteEventType:
            return "AuditHistoryRawModifyDeleteEventType";
        case ns0::AuditHistoryAtTimeDeleteEventType:
            return "AuditHistoryAtTimeDeleteEventType";
        case ns0::AuditHistoryEventUpdateEventType:
            return "AuditHistoryEventUpdateEventType";
        case ns0::AuditHistoryEventDeleteEventType:
            return "AuditHistoryEventDeleteEventType";
        case ns0::AuditUpdateMethodEventType:
            return "AuditUpdateMethodEventType";
        case ns0::AuditAddNodesEventType:
            return "AuditAddNodesEventType";
        case ns0::AuditAddReferencesEventType:
            return "AuditAddReferencesEventType";
        case ns0::AuditDeleteNodesEventType:
            return "AuditDeleteNodesEventType";
        case ns0::AuditDeleteReferencesEventType:
            return "AuditDeleteReferencesEventType";
        case ns0::AuditUrlMismatchEventType:
            return "AuditUrlMismatchEventType";
        case ns0::AuditCertificateUntrustedEventType:
            return "AuditCertificateUntrustedEventType";
        case ns0::AuditCertificateExpiredEventType:
            return "AuditCertificateExpiredEventType";
        case ns0::AuditCertificateInvalidEventType:
            return "AuditCertificateInvalidEventType";
        case ns0::AuditCertificateRevokedEventType:
            return "AuditCertificateRevokedEventType";
        case ns0::AuditCertificateMismatchEventType:
            return "AuditCertificateMismatchEventType";
        case ns0::AuditConditionEnableEventType:
            return "AuditConditionEnableEventType";
        case ns0::AuditConditionCommentEventType:
            return "AuditConditionCommentEventType";
        case ns0::AuditConditionAcknowledgeEventType:
            return "AuditConditionAcknowledgeEventType";
        case ns0::AuditConditionConfirmEventType:
            return "AuditConditionConfirmEventType";
        case ns0::AuditConditionShelvingEventType:
            return "AuditConditionShelvingEventType";
        default:
            return "AuditCertificateEventType";
    }
}

std::uint32_t certificateEventType(uaplex_status st) noexcept {
    switch (st) {
        case UAPLEX_BadCertificateUntrusted:
        case UAPLEX_BadCertificateIssuerUseNotAllowed:
            return ns0::AuditCertificateUntrustedEventType;
        case UAPLEX_BadCertificateTimeInvalid:
        case UAPLEX_BadCertificateIssuerTimeInvalid:
            return ns0::AuditCertificateExpiredEventType;
        case UAPLEX_BadCertificateRevoked:
        case UAPLEX_BadCertificateIssuerRevoked:
        case UAPLEX_BadCertificateRevocationUnknown:
        case UAPLEX_BadCertificateIssuerRevocationUnknown:
            return ns0::AuditCertificateRevokedEventType;
        case UAPLEX_BadCertificateUriInvalid:
        case UAPLEX_BadCertificateHostNameInvalid:
            return ns0::AuditCertificateMismatchEventType;
        case UAPLEX_BadCertificateInvalid:
        case UAPLEX_BadCertificateUseNotAllowed:
        case UAPLEX_BadSecurityChecksFailed:
            return ns0::AuditCertificateInvalidEventType;
        default:
            return ns0::AuditCertificateEventType;
    }
}

// An endpoint URL's scheme, host and port, lower case; the port defaulted by the scheme.
struct UrlParts {
    std::string scheme, host, port;
};

bool parseUrl(std::string_view url, UrlParts& out) {
    auto lower = [](std::string_view s) {
        std::string r(s);
        for (char& c : r) c = char(std::tolower(static_cast<unsigned char>(c)));
        return r;
    };
    auto sep = url.find("://");
    if (sep == std::string_view::npos) return false;
    out.scheme = lower(url.substr(0, sep));
    std::string_view authority = url.substr(sep + 3);
    authority = authority.substr(0, authority.find('/'));
    std::size_t colon = std::string_view::npos;
    if (!authority.empty() && authority[0] == '[') {
        auto close = authority.find(']');
        if (close == std::string_view::npos) return false;
        if (close + 1 < authority.size() && authority[close + 1] == ':') colon = close + 1;
    } else {
        colon = authority.rfind(':');
    }
    out.host = lower(authority.substr(0, colon));
    out.port = colon == std::string_view::npos ? "" : std::string(authority.substr(colon + 1));
    if (out.port.empty()) out.port = out.scheme == "opc.https" ? "443" : "4840";
    return !out.host.empty();
}

bool isWildcardHost(std::string_view host) noexcept {
    return host == "0.0.0.0" || host == "[::]" || host == "[0:0:0:0:0:0:0:0]";
}

}  // namespace

std::string AuditTrail::userOf(const session::Session& s) {
    session::UserIdentity id = s.identity();
    return cleanText(id.name.empty() ? id.key : id.name);
}

// Every value a field points to lives in the record (deques keep addresses) or in the request
// the service is answering, for the duration of emit().
struct AuditTrail::Record {
    struct Field {
        ua::QualifiedName name;
        ua::Variant value;
        std::string text;  // the log's rendering
        bool quoted;       // text is a string (JSON quotes it)
    };
    std::uint32_t eventType;
    std::deque<Field> fields;
    std::deque<std::string> strings;
    std::deque<ua::NodeId> nodeIds;
    std::deque<std::vector<ua::ExtensionObject>> objects;  // a field's decoded structures

    explicit Record(std::uint32_t type) : eventType(type) {}
    ua::String keep(std::string s) {
        strings.push_back(std::move(s));
        return ua::makeString(strings.back());
    }
    void add(std::string_view name, const ua::Variant& v, std::string text, bool quoted) {
        fields.push_back({{0, keep(std::string(name))}, v, std::move(text), quoted});
    }
    void addString(std::string_view name, std::string_view value) {
        std::string clean = cleanText(value);
        ua::Variant v = ua::makeVariant(ua::BuiltinType::String);
        v.value.string = keep(clean);
        add(name, v, std::move(clean), true);
    }
    void addBool(std::string_view name, bool b) {
        add(name, ua::variantBoolean(b), b ? "true" : "false", false);
    }
    void addUInt32(std::string_view name, std::uint32_t x) {
        add(name, ua::variantUInt32(x), std::to_string(x), false);
    }
    void addDouble(std::string_view name, double x) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", x);
        add(name, ua::variantDouble(x), buf, false);
    }
    void addDateTime(std::string_view name, std::int64_t dt) {
        ua::Variant v = ua::makeVariant(ua::BuiltinType::DateTime);
        v.value.datetime = dt;
        add(name, v, isoTime(dt), true);
    }
    void addNodeId(std::string_view name, const ua::NodeId& id) {
        nodeIds.push_back(id);
        ua::Variant v = ua::makeVariant(ua::BuiltinType::NodeId);
        v.value.pointer = &nodeIds.back();
        add(name, v, nodeIdText(id), true);
    }
    // Structures of the request, as decoded ExtensionObjects: one (scalar) or an array.
    template <class T>
    void addStructures(std::string_view name, std::span<const T> items, bool scalar,
                       std::string text) {
        const enc::DataType* type = enc::dataTypeOf<T>();
        std::vector<ua::ExtensionObject>& eos = objects.emplace_back(items.size());
        for (std::size_t i = 0; i < items.size(); ++i) {
            eos[i] = ua::ExtensionObject{};
            eos[i].type_id = ua::numericNodeId(0, type->binaryEncodingId);
            eos[i].encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
            eos[i].data_type = type;
            eos[i].object = const_cast<T*>(&items[i]);
        }
        ua::Variant v;
        if (scalar) {
            v = ua::makeVariant(ua::BuiltinType::ExtensionObject);
            v.value.pointer = eos.data();
        } else {
            v = ua::variantArray(ua::BuiltinType::ExtensionObject, std::int32_t(eos.size()),
                                 eos.data());
        }
        add(name, v, std::move(text), true);
    }
    // Certificates: the event carries the DER, the log its SHA-1 thumbprint.
    void addCertificate(std::string_view name, std::span<const std::uint8_t> der) {
        ua::Variant v = ua::makeVariant(ua::BuiltinType::ByteString);
        v.value.bytestring =
            ua::ByteString{std::int32_t(der.size()), const_cast<std::uint8_t*>(der.data())};
        std::string text;
        if (!der.empty()) {
            try {
                if (auto c = security::Certificate::fromDer(der)) text = c->thumbprintHex();
            } catch (...) {
            }
            if (text.empty())
                text = "(" + std::to_string(der.size()) + " bytes, not a certificate)";
        }
        add(name, v, std::move(text), true);
    }
    // The common fields of AuditEventType (Part 5 6.4.3).
    void common(std::string_view serverId, bool status, uaplex_status code,
                std::string_view auditEntryId, std::string_view userId, std::int64_t utc) {
        addDateTime("ActionTimeStamp", utc);
        addBool("Status", status);
        addString("ServerId", serverId);
        addString("ClientAuditEntryId", auditEntryId);
        addString("ClientUserId", userId);
        ua::Variant sev = ua::makeVariant(ua::BuiltinType::UInt16);
        sev.value.uint16 = status ? 100 : 500;
        add("Severity", sev, std::to_string(sev.value.uint16), false);
        char buf[16];
        std::snprintf(buf, sizeof buf, "0x%08X", code);
        logOnly("StatusCode", buf);  // not a field of the type: the event has Status
    }
    // A field of the log line only (a null value is not raised).
    void logOnly(std::string_view name, std::string text) {
        add(name, ua::Variant{}, std::move(text), true);
    }
};

AuditTrail::AuditTrail(const config::ServerConfig& cfg, ServiceHandler& services)
    : cfg_(cfg.audit),
      serverId_(cfg.server.application_uri),
      endpoints_(cfg.server.endpoints),
      services_(services) {
    if (cfg_.file.empty()) return;
    if (!openLog())
        throw std::runtime_error("audit: cannot open " + cfg_.file.string() + ": " +
                                 std::strerror(errno));
    writer_ = std::thread([this] { writerLoop(); });
}

AuditTrail::~AuditTrail() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (writer_.joinable()) writer_.join();
    if (fd_ >= 0) ::close(fd_);
}

bool AuditTrail::openLog() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = ::open(cfg_.file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd_ < 0) return false;
    off_t end = ::lseek(fd_, 0, SEEK_END);
    fileBytes_ = end > 0 ? std::uint64_t(end) : 0;
    return true;
}

void AuditTrail::writeLine(const std::string& line) noexcept {
    if (fd_ >= 0 && fileBytes_ > 0 && fileBytes_ + line.size() > cfg_.max_file_bytes) {
        // One rotated file: the disk holds at most twice max_file_mib of audit log.
        std::error_code ec;
        std::filesystem::path old = cfg_.file;
        old += ".1";
        std::filesystem::rename(cfg_.file, old, ec);
        if (!openLog()) fd_ = -1;
    }
    if (fd_ < 0 && !openLog()) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        ssize_t n = ::write(fd_, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            dropped_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        p += n;
        left -= std::size_t(n);
    }
    fileBytes_ += line.size();
}

void AuditTrail::writerLoop() noexcept {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty() && stopping_) return;
        std::deque<std::string> batch;
        batch.swap(queue_);
        lock.unlock();
        // Drops are noted in the log itself, once per batch that follows them.
        std::uint64_t drops = dropped_.load(std::memory_order_relaxed);
        if (drops != reportedDrops_) {
            std::string note = cfg_.json ? "{\"droppedRecords\":" + std::to_string(drops) + "}\n"
                                         : "dropped records: " + std::to_string(drops) + "\n";
            writeLine(note);
            reportedDrops_ = drops;
        }
        for (const std::string& line : batch) writeLine(line);
        lock.lock();
    }
}

void AuditTrail::enqueue(std::string line) noexcept {
    try {
        {
            std::lock_guard lock(mutex_);
            if (queue_.size() >= cfg_.queue_records) {
                dropped_.fetch_add(1, std::memory_order_relaxed);
                return;
            }
            queue_.push_back(std::move(line));
        }
        wake_.notify_one();
    } catch (...) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
    }
}

void AuditTrail::emit(Record& r) noexcept {
    try {
        // The event: every field but the log's own, by its browse name, on the Server object.
        std::vector<uaplex_event_field> fields;
        fields.reserve(r.fields.size());
        for (const auto& f : r.fields)
            if (ua::variantType(f.value) != ua::BuiltinType::Null)
                fields.push_back({&f.name, 1, 0, &f.value});
        const ua::NodeId type = ua::numericNodeId(0, r.eventType);
        const ua::NodeId server = ua::numericNodeId(0, ns0::Server);
        std::string message = eventTypeName(r.eventType);
        ua::LocalizedText text = ua::makeLocalizedText("", message);
        ua::Variant mv = ua::makeVariant(ua::BuiltinType::LocalizedText);
        mv.value.pointer = &text;
        static const ua::QualifiedName kMessage{0, ua::makeString("Message")};
        fields.push_back({&kMessage, 1, 0, &mv});
        uaplex_event_spec spec{};
        spec.hdr = UAPLEX_HEADER_INIT(uaplex_event_spec, UAPLEX_STYPE_EVENT_SPEC);
        spec.field_count = std::uint32_t(fields.size());
        spec.event_type = &type;
        spec.source_node = &server;
        spec.fields = fields.data();
        services_.raiseEvent(spec);
        raised_.fetch_add(1, std::memory_order_relaxed);
        if (cfg_.file.empty()) return;

        // The log line: text "time EventType Name=value ...", or one JSON object.
        std::string line;
        const std::string time = isoTime(ua::utcNow());
        if (cfg_.json) {
            line = "{\"time\":" + jsonString(time) + ",\"EventType\":" + jsonString(message);
            for (const auto& f : r.fields) {
                std::string entry(1, ',');
                entry.append(jsonString(ua::view(f.name.name))).append(1, ':');
                entry.append(f.quoted ? jsonString(f.text) : f.text);
                if (line.size() + entry.size() + kMarkBytes > cfg_.max_line_bytes) {
                    line += ",\"truncated\":true";
                    break;
                }
                line += entry;
            }
            line += "}\n";
        } else {
            line = time + " " + message;
            for (const auto& f : r.fields) {
                std::string entry(1, ' ');
                entry.append(ua::view(f.name.name)).append(1, '=');
                entry.append(f.quoted ? jsonString(f.text) : f.text);
                if (line.size() + entry.size() + kMarkBytes > cfg_.max_line_bytes) {
                    line += " truncated";
                    break;
                }
                line += entry;
            }
            line += "\n";
        }
        enqueue(std::move(line));
    } catch (...) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
    }
}

bool AuditTrail::endpointKnown(std::string_view url) const {
    UrlParts client;
    if (!parseUrl(url, client)) return false;
    for (const std::string& e : endpoints_) {
        UrlParts own;
        if (parseUrl(e, own) && own.scheme == client.scheme && own.port == client.port &&
            (isWildcardHost(own.host) || own.host == client.host))
            return true;
    }
    return false;
}

void AuditTrail::createSession(const session::RequestContext& ctx,
                               const ua::CreateSessionRequest& req, uaplex_status status,
                               const ua::CreateSessionResponse* resp) noexcept {
    try {
        // A URL no endpoint has (Part 4 5.6.2): the more specific AuditUrlMismatchEventType.
        const std::string_view url = ua::view(req.endpointUrl);
        const bool mismatch = !url.empty() && !endpointKnown(url);
        Record r(mismatch ? ns0::AuditUrlMismatchEventType : ns0::AuditCreateSessionEventType);
        const bool ok = status == UAPLEX_Good && resp;
        r.common(serverId_, ok, status, ua::view(req.requestHeader.auditEntryId), "", ctx.utc);
        if (ok) r.addNodeId("SessionId", resp->sessionId);
        r.addString("SecureChannelId", std::to_string(ctx.channelId));
        r.addCertificate("ClientCertificate", ua::view(req.clientCertificate));
        std::string thumb = r.fields.back().text;
        r.addString("ClientCertificateThumbprint", thumb);
        if (ok) r.addDouble("RevisedSessionTimeout", resp->revisedSessionTimeout);
        if (mismatch) r.addString("EndpointUrl", url);
        emit(r);
    } catch (...) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
    }
}

void AuditTrail::activateSession(std::uint32_t channelId, const ua::ActivateSessionRequest& req,
                                 uaplex_status status, const session::Session* s) noexcept {
    try {
        Record r(ns0::AuditActivateSessionEventType);
        const bool ok = status == UAPLEX_Good;
        // Who asked: the session's identity once activated, else the user name of the token.
        const ua::ExtensionObject& token = req.userIdentityToken;
        const auto* userName =
            token.object && token.data_type == enc::dataTypeOf<ua::UserNameIdentityToken>()
                ? static_cast<const ua::UserNameIdentityToken*>(token.object)
                : nullptr;
        std::string user = ok && s    ? userOf(*s)
                           : userName ? std::string(ua::view(userName->userName))
                                      : std::string("anonymous");
        r.common(serverId_, ok, status, ua::view(req.requestHeader.auditEntryId), user,
                 ua::utcNow());
        if (s) r.addNodeId("SessionId", s->sessionId());
        r.addString("SecureChannelId", std::to_string(channelId));
        // Their number in the log only: the event's field is a SignedSoftwareCertificate array,
        // which ActivateSession leaves unchecked (Part 4 5.6.3 deprecates it).
        r.logOnly("ClientSoftwareCertificates",
                  std::to_string(std::max(req.clientSoftwareCertificates.length, 0)));
        // The token without its secret: a UserName token's password never leaves here.
        ua::UserNameIdentityToken safe{};
        ua::ExtensionObject eo = token;
        std::string kind = "anonymous";
        if (userName) {
            safe = *userName;
            safe.password = ua::nullByteString();
            eo.object = &safe;
            eo.body = ua::nullByteString();
            kind = "UserName " + cleanText(ua::view(userName->userName));
        } else if (token.object && token.data_type == enc::dataTypeOf<ua::X509IdentityToken>()) {
            kind = "X509";
        } else if (token.object &&
                   token.data_type != enc::dataTypeOf<ua::AnonymousIdentityToken>()) {
            kind = "other";
        }
        ua::Variant tv = ua::makeVariant(ua::BuiltinType::ExtensionObject);
        tv.value.pointer = &eo;
        if (!token.object) tv = ua::Variant{};  // not decoded: nothing to show
        r.add("UserIdentityToken", tv, kind, true);
        emit(r);
    } catch (...) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
    }
}

void AuditTrail::cancel(const session::Session& s, const ua::CancelRequest& req,
                        uaplex_status status) noexcept {
    try {
        Record r(ns0::AuditCancelEventType);
        r.common(serverId_, status == UAPLEX_Good, status, ua::view(req.requestHeader.auditEntryId),
                 userOf(s), ua::utcNow());
        r.addNodeId("SessionId", s.sessionId());
        r.addUInt32("RequestHandle", req.requestHandle);
        emit(r);
    } catch (...) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
    }
}

void AuditTrail::conditionMethod(const session::Session& s, const ua::CallRequest& req,
                                 const ua::CallMethodRequest& m, std::uint32_t method,
                                 uaplex_status status) noexcept {
    try {
        std::uint32_t type = 0;
        switch (method) {
            case 9027:  // Enable
            case 9028:  // Disable
                type = ns0::AuditConditionEnableEventType;
                break;
            case 9029:
                type = ns0::AuditConditionCommentEventType;
                break;
            case 9111:
                type = ns0::AuditConditionAcknowledgeEventType;
                break;
            case 9113:
                type = ns0::AuditConditionConfirmEventType;
                break;
            default:  // Unshelve, OneShotShelve, TimedShelve
                type = ns0::AuditConditionShelvingEventType;
                break;
        }
        Record r(type);
        r.common(serverId_, status == UAPLEX_Good, status, ua::view(req.requestHeader.auditEntryId),
                 userOf(s), ua::utcNow());
        r.addNodeId("SourceNode", m.objectId);
        r.addNodeId("MethodId", m.methodId);
        const std::size_t n = m.inputArguments.size();
        r.add("InputArguments",
              ua::variantArray(ua::BuiltinType::Variant, std::int32_t(n), m.inputArguments.data),
              std::to_string(n) + " arguments", true);
        const bool withComment = method == 9029 || method == 9111 || method == 9113;
        if (withComment && n == 2 &&
            ua::variantType(m.inputArguments[0]) == ua::BuiltinType::ByteString &&
            ua::variantType(m.inputArguments[1]) == ua::BuiltinType::LocalizedText &&
            m.inputArguments[1].value.pointer != nullptr) {
            r.add("ConditionEventId", m.inputArguments[0],
                  std::to_string(ua::view(m.inputArguments[0].value.bytestring).size()) + " bytes",
                  true);
            const auto* c =
                static_cast<const ua::LocalizedText*>(m.inputArguments[1].value.pointer);
            r.add("Comment", m.inputArguments[1], cleanText(std::string(ua::view(c->text))), true);
        }
        if (method == 2949 && n == 1 &&
            ua::variantType(m.inputArguments[0]) == ua::BuiltinType::Double)
            r.addDouble("ShelvingTime", m.inputArguments[0].value.double_);
        emit(r);
    } catch (...) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
    }
}

void AuditTrail::write(const session::Session& s, const ua::WriteRequest& req, uaplex_status status,
                       const ua::WriteResponse* resp,
                       std::span<const ua::DataValue> oldValues) noexcept {
    try {
        write(userOf(s), s.sessionId(), req, status, resp, oldValues);
    } catch (...) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
    }
}

void AuditTrail::methodCall(std::string_view user, const ua::NodeId& sessionId,
                            const ua::CallRequest& req, uaplex_status status,
                            const ua::CallResponse* resp, std::span<const bool> skip) noexcept {
    try {
        const std::int64_t utc = ua::utcNow();
        for (std::size_t i = 0; i < req.methodsToCall.size(); ++i) {
            if (i < skip.size() && skip[i]) continue;
            const ua::CallMethodRequest& m = req.methodsToCall[i];
            const ua::CallMethodResult* result =
                status == UAPLEX_Good && resp && i < resp->results.size() ? &resp->results[i]
                                                                          : nullptr;
            uaplex_status st = status;
            if (st == UAPLEX_Good) st = result ? result->statusCode : UAPLEX_BadInternalError;
            Record r(ns0::AuditUpdateMethodEventType);
            r.common(serverId_, st == UAPLEX_Good, st, ua::view(req.requestHeader.auditEntryId),
                     user, utc);
            r.addNodeId("SessionId", sessionId);
            r.addNodeId("SourceNode", m.objectId);
            r.addNodeId("MethodId", m.methodId);
            const std::size_t n = m.inputArguments.size();
            r.add(
                "InputArguments",
                ua::variantArray(ua::BuiltinType::Variant, std::int32_t(n), m.inputArguments.data),
                std::to_string(n) + " arguments", true);
            r.logOnly("OutputArguments",
                      std::to_string(result ? result->outputArguments.size() : 0) + " arguments");
            emit(r);
        }
    } catch (...) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
    }
}

void AuditTrail::historyUpdate(std::string_view user, const ua::NodeId& sessionId,
                               const ua::HistoryUpdateRequest& req, uaplex_status status,
                               const ua::HistoryUpdateResponse* resp) noexcept {
    try {
        const std::int64_t utc = ua::utcNow();
        for (std::size_t i = 0; i < req.historyUpdateDetails.size(); ++i) {
            const ua::ExtensionObject& eo = req.historyUpdateDetails[i];
            if (eo.object == nullptr) continue;
            std::uint32_t type = 0;
            const ua::NodeId* node = nullptr;
            const auto* t = static_cast<const enc::DataType*>(eo.data_type);
            if (t == enc::dataTypeOf<ua::UpdateDataDetails>()) {
                type = ns0::AuditHistoryValueUpdateEventType;
                node = &static_cast<const ua::UpdateDataDetails*>(eo.object)->nodeId;
            } else if (t == enc::dataTypeOf<ua::DeleteRawModifiedDetails>()) {
                type = ns0::AuditHistoryRawModifyDeleteEventType;
                node = &static_cast<const ua::DeleteRawModifiedDetails*>(eo.object)->nodeId;
            } else if (t == enc::dataTypeOf<ua::DeleteAtTimeDetails>()) {
                type = ns0::AuditHistoryAtTimeDeleteEventType;
                node = &static_cast<const ua::DeleteAtTimeDetails*>(eo.object)->nodeId;
            } else if (t == enc::dataTypeOf<ua::UpdateEventDetails>()) {
                type = ns0::AuditHistoryEventUpdateEventType;
                node = &static_cast<const ua::UpdateEventDetails*>(eo.object)->nodeId;
            } else if (t == enc::dataTypeOf<ua::DeleteEventDetails>()) {
                type = ns0::AuditHistoryEventDeleteEventType;
                node = &static_cast<const ua::DeleteEventDetails*>(eo.object)->nodeId;
            } else {
                continue;
            }
            uaplex_status st = status;
            if (st == UAPLEX_Good)
                st = resp && i < resp->results.size() ? resp->results[i].statusCode
                                                      : UAPLEX_BadInternalError;
            Record r(type);
            r.common(serverId_, (st & 0x80000000u) == 0, st,
                     ua::view(req.requestHeader.auditEntryId), user, utc);
            r.addNodeId("SessionId", sessionId);
            r.addNodeId("SourceNode", *node);
            r.addNodeId("UpdatedNode", *node);
            r.addNodeId("ParameterDataTypeId", ua::numericNodeId(0, t->typeId));
            if (type == ns0::AuditHistoryValueUpdateEventType) {
                const auto& d = *static_cast<const ua::UpdateDataDetails*>(eo.object);
                const auto perform = static_cast<std::int32_t>(d.performInsertReplace);
                r.add("PerformInsertReplace", ua::variantInt32(perform), std::to_string(perform),
                      false);
                // NewValues as given; the log shows their number only.
                ua::Variant nv = ua::variantArray(ua::BuiltinType::DataValue, d.updateValues.length,
                                                  const_cast<ua::DataValue*>(d.updateValues.data));
                r.add("NewValues", nv, std::to_string(d.updateValues.size()) + " values", true);
            } else if (type == ns0::AuditHistoryRawModifyDeleteEventType) {
                const auto& d = *static_cast<const ua::DeleteRawModifiedDetails*>(eo.object);
                r.addBool("IsDeleteModified", d.isDeleteModified);
                r.addDateTime("StartTime", d.startTime);
                r.addDateTime("EndTime", d.endTime);
            } else if (type == ns0::AuditHistoryEventUpdateEventType) {
                // OldValues are not raised: the store replaces events without returning them.
                const auto& d = *static_cast<const ua::UpdateEventDetails*>(eo.object);
                const auto perform = static_cast<std::int32_t>(d.performInsertReplace);
                r.add("PerformInsertReplace", ua::variantInt32(perform), std::to_string(perform),
                      false);
                r.addStructures<ua::EventFilter>(
                    "Filter", {&d.filter, 1}, true,
                    std::to_string(d.filter.selectClauses.size()) + " select clauses");
                r.addStructures<ua::HistoryEventFieldList>(
                    "NewValues", {d.eventData.data, d.eventData.size()}, false,
                    std::to_string(d.eventData.size()) + " events");
            } else if (type == ns0::AuditHistoryEventDeleteEventType) {
                const auto& d = *static_cast<const ua::DeleteEventDetails*>(eo.object);
                ua::Variant ids = ua::variantArray(ua::BuiltinType::ByteString, d.eventIds.length,
                                                   const_cast<ua::ByteString*>(d.eventIds.data));
                r.add("EventIds", ids, std::to_string(d.eventIds.size()) + " events", true);
            } else {
                const auto& d = *static_cast<const ua::DeleteAtTimeDetails*>(eo.object);
                ua::Variant times = ua::variantArray(ua::BuiltinType::DateTime, d.reqTimes.length,
                                                     const_cast<ua::DateTime*>(d.reqTimes.data));
                r.add("ReqTimes", times, std::to_string(d.reqTimes.size()) + " times", true);
            }
            emit(r);
        }
    } catch (...) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
    }
}

void AuditTrail::write(std::string_view user, const ua::NodeId& sessionId,
                       const ua::WriteRequest& req, uaplex_status status,
                       const ua::WriteResponse* resp,
                       std::span<const ua::DataValue> oldValues) noexcept {
    try {
        const std::int64_t utc = ua::utcNow();
        for (std::size_t i = 0; i < req.nodesToWrite.size(); ++i) {
            const ua::WriteValue& wv = req.nodesToWrite[i];
            uaplex_status st = status;
            if (st == UAPLEX_Good)
                st = resp && i < resp->results.size() ? resp->results[i] : UAPLEX_BadInternalError;
            Record r(ns0::AuditWriteUpdateEventType);
            r.common(serverId_, st == UAPLEX_Good, st, ua::view(req.requestHeader.auditEntryId),
                     user, utc);
            r.addNodeId("SessionId", sessionId);
            // The written node (Part 5 6.4.21); the event still reaches the Server's items.
            r.addNodeId("SourceNode", wv.nodeId);
            r.addUInt32("AttributeId", wv.attributeId);
            r.addString("IndexRange", ua::view(wv.indexRange));
            // NewValue as written; the log shows its type only (values may be large).
            ua::Variant nv = wv.value.value;
            r.add("NewValue", nv, "type " + std::to_string(nv.encoding & 0x3F), true);
            if (i < oldValues.size() && oldValues[i].status == UAPLEX_Good &&
                (oldValues[i].mask & UAPLEX_DATAVALUE_VALUE)) {
                const ua::Variant& ov = oldValues[i].value;
                r.add("OldValue", ov, "type " + std::to_string(ov.encoding & 0x3F), true);
            }
            emit(r);
        }
    } catch (...) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
    }
}

namespace {

// Status of a NodeManagement request: the service's, else the first failed item's.
template <class Results>
uaplex_status firstFailure(uaplex_status status, const Results* resp, std::size_t items) noexcept {
    if (status != UAPLEX_Good) return status;
    if (resp == nullptr || resp->results.size() != items) return UAPLEX_BadInternalError;
    for (std::size_t i = 0; i < items; ++i) {
        uaplex_status st;
        if constexpr (std::is_same_v<Results, ua::AddNodesResponse>)
            st = resp->results[i].statusCode;
        else
            st = resp->results[i];
        if (st & 0x80000000u) return st;
    }
    return UAPLEX_Good;
}

}  // namespace

template <class Item, class Results>
void AuditTrail::nodeManagement(std::uint32_t type, std::string_view field, std::string_view user,
                                const ua::RequestHeader& header, const ua::Array<Item>& items,
                                uaplex_status status, const Results* resp) noexcept {
    try {
        const uaplex_status st = firstFailure(status, resp, items.size());
        Record r(type);
        r.common(serverId_, st == UAPLEX_Good, st, ua::view(header.auditEntryId), user,
                 ua::utcNow());
        // The items as requested, when the service ran (a refused list may be any length).
        std::vector<ua::ExtensionObject> eos;
        if (status == UAPLEX_Good) {
            const enc::DataType* t = enc::dataTypeOf<Item>();
            eos.resize(items.size());
            for (std::size_t i = 0; i < items.size(); ++i) {
                eos[i].encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
                eos[i].type_id = ua::numericNodeId(0, t->binaryEncodingId);
                eos[i].data_type = t;
                eos[i].object = const_cast<Item*>(&items[i]);
            }
            r.add(field,
                  ua::variantArray(ua::BuiltinType::ExtensionObject, std::int32_t(eos.size()),
                                   eos.data()),
                  std::to_string(eos.size()) + " items", true);
        }
        emit(r);
    } catch (...) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
    }
}

void AuditTrail::addNodes(std::string_view user, const ua::AddNodesRequest& req,
                          uaplex_status status, const ua::AddNodesResponse* resp) noexcept {
    nodeManagement(ns0::AuditAddNodesEventType, "NodesToAdd", user, req.requestHeader,
                   req.nodesToAdd, status, resp);
}

void AuditTrail::addReferences(std::string_view user, const ua::AddReferencesRequest& req,
                               uaplex_status status,
                               const ua::AddReferencesResponse* resp) noexcept {
    nodeManagement(ns0::AuditAddReferencesEventType, "ReferencesToAdd", user, req.requestHeader,
                   req.referencesToAdd, status, resp);
}

void AuditTrail::deleteNodes(std::string_view user, const ua::DeleteNodesRequest& req,
                             uaplex_status status, const ua::DeleteNodesResponse* resp) noexcept {
    nodeManagement(ns0::AuditDeleteNodesEventType, "NodesToDelete", user, req.requestHeader,
                   req.nodesToDelete, status, resp);
}

void AuditTrail::deleteReferences(std::string_view user, const ua::DeleteReferencesRequest& req,
                                  uaplex_status status,
                                  const ua::DeleteReferencesResponse* resp) noexcept {
    nodeManagement(ns0::AuditDeleteReferencesEventType, "ReferencesToDelete", user,
                   req.requestHeader, req.referencesToDelete, status, resp);
}

void AuditTrail::certificate(std::span<const std::uint8_t> der, uaplex_status status,
                             std::string_view what) noexcept {
    try {
        Record r(certificateEventType(status));
        r.common(serverId_, false, status, "", "", ua::utcNow());
        r.addCertificate("Certificate", der);
        r.logOnly("Action", cleanText(what));
        emit(r);
    } catch (...) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
    }
}

void AuditTrail::sessionCertificate(std::span<const std::uint8_t> der, uaplex_status status,
                                    std::string_view applicationUri) noexcept {
    if (status != UAPLEX_BadCertificateUriInvalid) return certificate(der, status, "CreateSession");
    try {
        Record r(ns0::AuditCertificateDataMismatchEventType);
        r.common(serverId_, false, status, "", "", ua::utcNow());
        r.addCertificate("Certificate", der);
        r.addString("InvalidUri", applicationUri);
        r.logOnly("Action", "CreateSession");
        emit(r);
    } catch (...) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
    }
}

}  // namespace uaplex::server
