// SPDX-License-Identifier: Apache-2.0
// The Audit events of [audit] (Part 5 6.4.3, AuditEventType and its subtypes): raised on the
// Server object with the standard fields of their type and written as the same record to the
// audit log. Raising runs on the thread of the service; the log is written by one thread of its
// own from a bounded queue, so no worker waits for the disk (a full queue drops and counts).
// Without [audit] enabled the server makes none and the services skip every call.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <uaplex/config/config.hpp>

namespace uaplex::session {
class Session;
struct RequestContext;
}  // namespace uaplex::session

namespace uaplex::server {

class ServiceHandler;

class AuditTrail {
  public:
    // Opens the log (cfg.audit.file, when set) and starts its writer. Throws
    // std::runtime_error when the file cannot be opened.
    AuditTrail(const config::ServerConfig& cfg, ServiceHandler& services);
    ~AuditTrail();
    AuditTrail(const AuditTrail&) = delete;
    AuditTrail& operator=(const AuditTrail&) = delete;

    // AuditCreateSessionEventType, or AuditUrlMismatchEventType when the request's
    // endpointUrl matches no endpoint (scheme, port, and the host unless it is a wildcard);
    // `response` null on failure.
    void createSession(const session::RequestContext& ctx, const ua::CreateSessionRequest& request,
                       uaplex_status status, const ua::CreateSessionResponse* response) noexcept;
    // AuditActivateSessionEventType; `session` null when the token named none.
    void activateSession(std::uint32_t channelId, const ua::ActivateSessionRequest& request,
                         uaplex_status status, const session::Session* session) noexcept;
    // AuditCancelEventType.
    void cancel(const session::Session& session, const ua::CancelRequest& request,
                uaplex_status status) noexcept;
    // A condition method (Part 9 5.10): AuditConditionEnableEventType (Enable, Disable),
    // AuditConditionCommentEventType, AuditConditionAcknowledgeEventType,
    // AuditConditionConfirmEventType, AuditConditionShelvingEventType, with the condition as
    // SourceNode, MethodId, InputArguments and, where the type has them, ConditionEventId and
    // Comment (ShelvingTime). `method` is the ns0 method id the call named.
    void conditionMethod(const session::Session& session, const ua::CallRequest& request,
                         const ua::CallMethodRequest& call, std::uint32_t method,
                         uaplex_status status) noexcept;
    // AuditWriteUpdateEventType, one per WriteValue; `response` null when the whole request
    // failed; `oldValues` what was read before the write (one per WriteValue, or empty).
    void write(const session::Session& session, const ua::WriteRequest& request,
               uaplex_status status, const ua::WriteResponse* response,
               std::span<const ua::DataValue> oldValues = {}) noexcept;
    // The same for a Write answered later (write_async, the blocking lanes): the session's
    // user and SessionId as they were when it was parked.
    void write(std::string_view user, const ua::NodeId& sessionId, const ua::WriteRequest& request,
               uaplex_status status, const ua::WriteResponse* response,
               std::span<const ua::DataValue> oldValues) noexcept;
    // AuditUpdateMethodEventType (Part 5 6.4.27), one per method called: the Object as
    // SourceNode, MethodId, InputArguments; the log adds the number of output arguments
    // (StatusCodeId and OutputArguments of 1.05 are not in this namespace-0 image). `response`
    // null when the whole request failed; `skip[i]` true for a call already reported by its
    // own Audit event (the condition methods').
    void methodCall(std::string_view user, const ua::NodeId& sessionId,
                    const ua::CallRequest& request, uaplex_status status,
                    const ua::CallResponse* response, std::span<const bool> skip = {}) noexcept;
    // A HistoryUpdate (Part 11 5.6): per UpdateDataDetails an AuditHistoryValueUpdateEventType
    // (UpdatedNode, PerformInsertReplace, NewValues), per DeleteRawModifiedDetails an
    // AuditHistoryRawModifyDeleteEventType (IsDeleteModified, StartTime, EndTime), per
    // DeleteAtTimeDetails an AuditHistoryAtTimeDeleteEventType (ReqTimes), each with
    // ParameterDataTypeId; other details are not reported. OldValues are not read. `response`
    // null when the whole request failed.
    void historyUpdate(std::string_view user, const ua::NodeId& sessionId,
                       const ua::HistoryUpdateRequest& request, uaplex_status status,
                       const ua::HistoryUpdateResponse* response) noexcept;
    // The NodeManagement services (Part 5 6.4.23-6.4.26): one AuditAddNodesEventType
    // (NodesToAdd), AuditAddReferencesEventType (ReferencesToAdd), AuditDeleteNodesEventType
    // (NodesToDelete) or AuditDeleteReferencesEventType (ReferencesToDelete) per request, its
    // Status true when the service and every item succeeded; `response` null on a fault;
    // `user` as userOf() names the session.
    void addNodes(std::string_view user, const ua::AddNodesRequest& request, uaplex_status status,
                  const ua::AddNodesResponse* response) noexcept;
    void addReferences(std::string_view user, const ua::AddReferencesRequest& request,
                       uaplex_status status, const ua::AddReferencesResponse* response) noexcept;
    void deleteNodes(std::string_view user, const ua::DeleteNodesRequest& request,
                     uaplex_status status, const ua::DeleteNodesResponse* response) noexcept;
    void deleteReferences(std::string_view user, const ua::DeleteReferencesRequest& request,
                          uaplex_status status,
                          const ua::DeleteReferencesResponse* response) noexcept;
    // The session's user as the Audit events name it (ClientUserId).
    static std::string userOf(const session::Session& session);
    // AuditCertificate*EventType by `status` (Untrusted, Expired, Invalid, Revoked, Mismatch,
    // or the base type) for a client certificate refused with it.
    void certificate(std::span<const std::uint8_t> der, uaplex_status status,
                     std::string_view what) noexcept;

    // CreateSession's client certificate refused: AuditCertificateDataMismatchEventType with
    // InvalidUri for an ApplicationUri the certificate does not name, otherwise as certificate().
    void sessionCertificate(std::span<const std::uint8_t> der, uaplex_status status,
                            std::string_view applicationUri) noexcept;

    // Log records dropped because the writer fell behind (queue full) or could not write.
    std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
    std::uint64_t raised() const noexcept { return raised_.load(std::memory_order_relaxed); }

    // One record: its fields raised as the event and formatted as the log line.
    struct Record;

  private:
    template <class Item, class Results>
    void nodeManagement(std::uint32_t type, std::string_view field, std::string_view user,
                        const ua::RequestHeader& header, const ua::Array<Item>& items,
                        uaplex_status status, const Results* response) noexcept;
    void emit(Record& record) noexcept;
    void enqueue(std::string line) noexcept;
    void writerLoop() noexcept;
    bool openLog();
    bool endpointKnown(std::string_view url) const;
    void writeLine(const std::string& line) noexcept;

    const config::AuditConfig cfg_;
    const std::string serverId_;
    const std::vector<std::string> endpoints_;  // [server] endpoints
    ServiceHandler& services_;
    std::atomic<std::uint64_t> dropped_{0};
    std::atomic<std::uint64_t> raised_{0};
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::string> queue_;
    bool stopping_ = false;
    int fd_ = -1;
    std::uint64_t fileBytes_ = 0;
    std::uint64_t reportedDrops_ = 0;  // the writer's: drops already noted in the log
    std::thread writer_;
};

}  // namespace uaplex::server
