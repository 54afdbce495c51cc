// SPDX-License-Identifier: Apache-2.0
// Asynchronous node-manager operations (docs/pipeline.md "Asynchronous operations"): a Read,
// Write or Call whose items go to read_async/write_async/call_async entries parks its request,
// hands the worker's arena to an AsyncRequest and returns; the last operation to complete, on
// whatever thread, answers it.
#pragma once

#include <vector>

#include <uaplex/session/deferred_request.hpp>
#include <uaplex/session/session_services.hpp>

#include "services_internal.hpp"

namespace uaplex::services {

class AsyncRequest;

// An owned namespace's browse_async of one node (Browse or BrowseNext): the references its sink
// collects, paged when it completes.
struct PendingBrowse {
    PendingBrowse() = default;
    PendingBrowse(const PendingBrowse&) = delete;
    PendingBrowse& operator=(const PendingBrowse&) = delete;
    ~PendingBrowse() {
        if (session != nullptr) session->release();
    }
    AsyncRequest* request = nullptr;
    ContinuationPoint cp;
    const ua::NodeId* nodeId = nullptr;         // in the request's arena
    const ua::NodeId* referenceType = nullptr;  // cp.referenceType, or null for all
    bool isNewBrowse = true;
    SessionState* session = nullptr;  // holds a reference (SessionState::acquire)
    std::optional<session::AccessView> access;
    std::vector<BrowseHit> hits;
    std::size_t limit = 0;
    bool faulty = false;
    bool done = false;  // completed: the sink takes nothing more
    // Collects into `hits` (ServiceSet::Impl::collectAsyncReference), for a blocking lane.
    uaplex_reference_sink sink = nullptr;
};

// One operation: a call of an owned namespace's entry with the request's items for it, or of
// a store node's callback for one item.
struct AsyncPart {
    // PersistWrite: a Write of a persistent stored variable, committed by the persistence
    // thread before the value is stored (persistence.hpp).
    enum class Kind : std::uint8_t {
        OwnerRead,
        StoreRead,
        OwnerWrite,
        StoreWrite,
        PersistWrite,
        OwnerCall,
        OwnerBrowse
    };
    Kind kind = Kind::OwnerRead;
    const NamespaceOwner* owner = nullptr;
    Node* node = nullptr;     // store parts
    std::uint32_t first = 0;  // owner parts: items [first, first + count) of AsyncBatch::items
    std::uint32_t count = 0;
    std::uint32_t index = 0;  // store parts and calls: the request's item
    IndexRange range;         // store reads
    std::int32_t timestamps = 0;
    // Store writes: what is stored after the callback (or after the commit).
    ua::DataValue value{};
    // Owner parts: `count` entries (the plugin's); calls: the `count` input results.
    uaplex_status* statuses = nullptr;
    // Owner parts: uaplex_read_item / uaplex_write_item; calls: the ua::CallMethodRequest.
    const void* items = nullptr;
    ua::DataValue** results = nullptr;  // owner reads: the results the plugin fills
    std::size_t outCount = 0;           // calls: the outputs the plugin sets
    ua::Variant* outputs = nullptr;
    std::shared_ptr<PendingBrowse> browse;  // browses
    uaplex_completion completion{};
    bool issued = false;
};

// One owned-namespace item of the request: where its result goes and how it is finished.
struct AsyncItem {
    const NamespaceOwner* owner;
    std::uint32_t index;  // in the request
    std::uint32_t attributeId;
    std::uint32_t perms;
};

// A request answered when its last operation completes. Pooled by the CompletionTable.
class AsyncRequest {
  public:
    AsyncRequest(CompletionTable& table) : table_(table) {}

    // The request's memory: the worker's arena, taken over when the operations start. After
    // that every allocation goes through alloc (under the mutex).
    enc::Arena arena{64u << 20, 64 * 1024};
    std::mutex mutex;
    std::shared_ptr<session::DeferredRequest> deferred;
    ServiceSet::Impl* impl = nullptr;
    const enc::DataType* responseType = nullptr;
    void* response = nullptr;
    ua::DataValue* readResults = nullptr;         // Read
    ua::StatusCode* writeResults = nullptr;       // Write
    ua::CallMethodResult* callResults = nullptr;  // Call
    ua::BrowseResult* browseResults = nullptr;    // Browse, BrowseNext
    std::vector<AsyncPart> parts;
    std::vector<AsyncItem> items;
    std::atomic<std::uint32_t> outstanding{0};
    uaplex_value_alloc alloc{};
    // Parked: the store nodes of its parts stay allocated until it is answered.
    addressspace::Pin pin;

    // Operation `part` completed with `status` (its slot already taken back).
    void completed(std::uint32_t part, uaplex_status status) noexcept;
    // One reference less; the last answers the request and recycles this record.
    void release() noexcept;
    void reset() noexcept;

  private:
    CompletionTable& table_;
};

// The asynchronous items of one request, gathered while its other items are served.
class AsyncBatch {
  public:
    AsyncBatch(ServiceSet::Impl& impl, ServiceCall& call) noexcept;
    ~AsyncBatch();
    // False when the request cannot wait (no deferral, or no record left): items are then
    // served synchronously.
    bool enabled() const noexcept { return enabled_; }
    bool empty() const noexcept {
        return request_ == nullptr || (request_->parts.empty() && request_->items.empty());
    }
    // Items left to the batch; false (nothing recorded) when out of memory.
    bool addOwnerRead(const NamespaceOwner& owner, std::uint32_t index, std::uint32_t attributeId,
                      std::uint32_t perms) noexcept;
    bool addStoreRead(Node& node, std::uint32_t index, const IndexRange& range,
                      std::int32_t timestamps) noexcept;
    bool addOwnerWrite(const NamespaceOwner& owner, std::uint32_t index) noexcept;
    bool addStoreWrite(Node& node, std::uint32_t index, const ua::DataValue& value) noexcept {
        return addValueWrite(AsyncPart::Kind::StoreWrite, node, index, value);
    }
    bool addPersistWrite(Node& node, std::uint32_t index, const ua::DataValue& value) noexcept {
        return addValueWrite(AsyncPart::Kind::PersistWrite, node, index, value);
    }
    // A Write part of `kind` (a store node's write callback, or the persistence thread).
    bool addValueWrite(AsyncPart::Kind kind, Node& node, std::uint32_t index,
                       const ua::DataValue& value) noexcept;
    // Method `index` of a CallRequest to the owner's call_async; `inputResults` (arena,
    // `m.inputArguments` entries) are filled by the plugin.
    bool addOwnerCall(const NamespaceOwner& owner, std::uint32_t index,
                      const ua::CallMethodRequest& m, uaplex_status* inputResults) noexcept;
    // Parks the request and starts the operations: GoodCompletesAsynchronously. Read:
    // `results` are the response's; `request` the decoded ReadRequest (WriteRequest).
    uaplex_status startRead(ua::ReadResponse* response, ua::DataValue* results,
                            const ua::ReadRequest& request, std::int32_t timestamps) noexcept;
    uaplex_status startWrite(ua::WriteResponse* response, ua::StatusCode* results,
                             const ua::WriteRequest& request) noexcept;
    uaplex_status startCall(ua::CallResponse* response, ua::CallMethodResult* results) noexcept;
    // Node `index` of a Browse (BrowseNext) to the owner's browse_async, `result` answered
    // when it completes.
    bool addOwnerBrowse(const NamespaceOwner& owner, std::uint32_t index,
                        const ContinuationPoint& cp, const ua::NodeId& nodeId,
                        const ua::NodeId* referenceType, bool isNewBrowse,
                        std::size_t limit) noexcept;
    uaplex_status startBrowse(const enc::DataType* responseType, void* response,
                              ua::BrowseResult* results) noexcept;

  private:
    AsyncRequest* record() noexcept;
    // Appends a store part to the request's record; false when out of memory.
    bool addPart(const AsyncPart& part) noexcept;
    // Parks the request; false when it was cancelled or expired already (its items then get
    // `failed`).
    bool park() noexcept;
    // Takes the worker's arena, acquires a slot for each part and issues them; the request
    // answers when the last completes.
    uaplex_status run() noexcept;
    void fail(uaplex_status status) noexcept;

    ServiceSet::Impl& impl_;
    ServiceCall& call_;
    AsyncRequest* request_ = nullptr;
    bool enabled_;
    bool started_ = false;
    std::int32_t timestamps_ = 0;
};

}  // namespace uaplex::services
