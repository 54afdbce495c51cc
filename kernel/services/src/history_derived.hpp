// SPDX-License-Identifier: Apache-2.0
// The values a HistoryRead computes from raw history (history.cpp): ReadProcessedDetails (the
// Part 13 aggregates, kernel/aggregates) and ReadAtTimeDetails (Part 11 6.5.5), one node at a
// time. A DerivedRead asks the store for raw values page by page (nextRead / onPage), never
// holding more than [history] max_processed_values of them, and computes its results from
// them: at most max_intervals_per_node intervals (or max_values_per_node times) per call,
// the rest behind a continuation point.
#pragma once

#include <uaplex/history.h>

#include <cstdint>
#include <span>
#include <vector>

#include <uaplex/aggregates/aggregates.hpp>
#include <uaplex/encoding/arena.hpp>
#include <uaplex/encoding/builtin.hpp>

namespace uaplex::services {

// A stored Variant that is a numeric scalar (Boolean, the integers, Float, Double), decoded in
// place (little-endian host, as the encoder assumes); false for anything else.
bool decodeNumericScalar(uaplex_bytes in, ua::Variant& out) noexcept;

class DerivedRead {
  public:
    struct Limits {
        std::uint32_t pageValues = 1000;      // max_values of one store read
        std::uint32_t maxResults = 1000;      // intervals or times answered per call
        std::uint32_t maxRawValues = 100000;  // raw values held at once
    };

    // Intervals [first, total) of `rq` with `function` (total: aggregates::intervalCount).
    DerivedRead(aggregates::AggregateFunction function, const aggregates::ProcessedRequest& rq,
                std::size_t total, std::size_t first, const Limits& limits);
    // The values at times[first..] (borrowed: they outlive the read).
    DerivedRead(std::span<const ua::DateTime> times, bool simpleBounds,
                const aggregates::ProcessedRequest& rq, std::size_t first, const Limits& limits);
    DerivedRead(const DerivedRead&) = delete;
    DerivedRead& operator=(const DerivedRead&) = delete;

    // The next store read into `read` (its node_key, hdr and alloc are the caller's; the
    // continuation and the result's memory are this read's page arena).
    void nextRead(uaplex_history_read& read) noexcept;
    const uaplex_value_alloc* alloc() const noexcept { return &alloc_; }
    // The store's answer to the last nextRead: true when another read is needed.
    bool onPage(uaplex_status st, const uaplex_history_read_result& res) noexcept;
    // Ends the read with `st` (a cancelled or timed-out request).
    void fail(uaplex_status st) noexcept { status_ = st; }

    // Once done: the node's status (Good, or the operation's Bad status), its results (they own
    // nothing but may point into nothing: numeric scalars), and the index of the first interval
    // or time of the next call (== total: none left).
    uaplex_status status() const noexcept { return status_; }
    std::span<const ua::DataValue> results() const noexcept { return results_; }
    std::size_t next() const noexcept { return next_; }
    std::size_t total() const noexcept { return total_; }

  private:
    bool processedPage(const uaplex_history_read_result& res) noexcept;
    bool atTimePage(const uaplex_history_read_result& res) noexcept;
    bool startTime() noexcept;
    bool keepCursor(const uaplex_history_read_result&
                        res) noexcept;  // another page: true  // at-time: sets up the reads of
                                        // times_[next_]; false: none left
    // Appends the page's values to raw_ (decoded; placeholders of missing bounds skipped):
    // how many non-Bad ones, -1 for a Good or Uncertain value that is no numeric scalar
    // (Bad_AggregateInvalidInputs), -2 out of memory (status_ set).
    int append(const uaplex_history_read_result& res, bool forward) noexcept;
    ua::DateTime edge(std::size_t k) const noexcept;  // processed: the interval edge k
    bool nonBad(const ua::DataValue& dv) const noexcept;

    enum class Kind : std::uint8_t { Processed, AtTime } kind_;
    aggregates::AggregateFunction function_{};
    aggregates::ProcessedRequest rq_;
    std::span<const ua::DateTime> times_;
    bool simple_ = false;
    Limits limits_;
    std::size_t total_ = 0;
    std::size_t next_ = 0;
    std::int64_t step_ = 0;  // processed: the interval in ticks
    // The store read under way.
    std::int64_t readStart_ = 0;
    std::int64_t readEnd_ = 0;
    std::uint32_t readFlags_ = 0;
    std::uint32_t readMax_ = 0;
    std::vector<std::uint8_t> cursor_;
    std::size_t chunk_ = 0;  // processed: intervals of this call
    int phase_ = 0;          // at-time: 0 at or before the time (backward), 1 after it
    std::size_t found_ = 0;  // at-time: non-Bad values found in this phase
    bool truncated_ = false;
    std::vector<ua::DataValue> raw_;
    std::vector<ua::DataValue> results_;
    uaplex_status status_ = UAPLEX_Good;
    enc::Arena page_{std::size_t(256) << 20, 64 * 1024};  // one store page at a time
    enc::Arena scratch_{std::size_t(1) << 20, 4096};      // a value that is no numeric scalar
    uaplex_value_alloc alloc_{};
};

}  // namespace uaplex::services
