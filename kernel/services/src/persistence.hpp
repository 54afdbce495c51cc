// SPDX-License-Identifier: Apache-2.0
// Persistent stored values ([persistence], docs/configuration.md "State across restarts"):
// the values of the configured stored Variables kept in an SQLite database (WAL mode), one
// row per node, the DataValue in the kernel's binary encoding.
//
// A Write to a persistent variable parks its request (AsyncPart::Kind::PersistWrite); the
// persistence thread commits every write pending at that moment in one transaction, and only
// then stores the values in memory and completes the operations: Good after the commit, Bad
// (and the value unchanged in memory) when it failed. value_set on a persistent node marks it;
// the thread writes the node's current value with the next transaction (no promise).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <uaplex/cpp/mpmc_ring.hpp>

#include "services_internal.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace uaplex::services {

struct AsyncPart;

class Persistence {
  public:
    struct Entry {
        Node* node = nullptr;
        std::string uri;               // the node's namespace URI
        std::vector<std::uint8_t> id;  // its NodeId, binary encoded with namespace index 0
        std::string label;             // nsu=<uri>;<id> for messages
        std::atomic<bool> marked{false};
    };

    // Opens (or creates) the database, resolves the persistent nodes against the sealed
    // address space, puts the persisted values back into them and starts the thread.
    // `pending` bounds the writes waiting at once (the asynchronous operations' limit).
    // Throws std::runtime_error with a one-line message (a database that cannot be opened,
    // is not an SQLite database or fails its integrity check, too many nodes).
    // `fits` tells whether a restored value fits the node (DataType and ValueRank).
    using Fits = std::function<bool(const Node& node, const ua::Variant& value)>;
    Persistence(const config::PersistenceSection& cfg, AddressSpace& space,
                CompletionTable& completions, Fits fits, std::uint32_t pending);
    ~Persistence();
    Persistence(const Persistence&) = delete;
    Persistence& operator=(const Persistence&) = delete;

    // The node's record when it is persistent; any thread, no allocation.
    Entry* entryOf(const Node* node) const noexcept {
        auto it = byNode_.find(node);
        return it == byNode_.end() ? nullptr : it->second;
    }
    // A Write's operation for the thread; false when the queue is full.
    bool submit(AsyncPart* part) noexcept;
    // A node manager set the node's value (value_set): written with the next transaction.
    void mark(Entry& e) noexcept;
    std::size_t size() const noexcept { return entries_.size(); }

  private:
    void resolve(const config::PersistenceSection& cfg);
    void open(const config::PersistenceSection& cfg);
    void restore();
    void run() noexcept;
    // One transaction: the marked nodes' current values, then the writes (over the size
    // limit: BadEncodingLimitsExceeded, not written); `statuses` per write. False when the
    // transaction failed (nothing of it is in the database).
    bool commit(std::vector<AsyncPart*>& jobs, std::vector<Entry*>& marked,
                std::vector<uaplex_status>& statuses) noexcept;
    bool upsert(const Entry& e, const ua::DataValue& dv, enc::ByteBuffer& buf,
                uaplex_status& status) noexcept;
    bool exec(const char* sql) noexcept;
    void wake() noexcept {
        seq_.fetch_add(1, std::memory_order_release);
        seq_.notify_one();
    }

    AddressSpace& space_;
    CompletionTable& completions_;
    Fits fits_;
    std::string file_;
    std::uint32_t maxValueBytes_;
    sqlite3* db_ = nullptr;
    sqlite3_stmt* upsert_ = nullptr;
    std::vector<std::unique_ptr<Entry>> entries_;
    std::unordered_map<const Node*, Entry*> byNode_;
    std::unique_ptr<sdk::MpmcRing<AsyncPart*>> jobs_;
    std::unique_ptr<sdk::MpmcRing<Entry*>> marks_;
    std::atomic<std::uint32_t> seq_{0};
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace uaplex::services
