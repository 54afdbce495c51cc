// SPDX-License-Identifier: Apache-2.0
// uaplex-bench: the load generator's options, results and entry point.
#pragma once

#include "histogram.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace uaplex::bench {

enum class Scenario { Probe, Read, Write, Read100, Browse, Subscribe };

// How requests leave a connection: coalesce writes every request queued since the last
// write in one send; perRequest gives each request message its own send() call, as a client
// that writes each request when it issues it.
enum class SendMode { Coalesce, PerRequest };

struct Options {
    std::string url = "opc.tcp://127.0.0.1:4840";
    Scenario scenario = Scenario::Read;
    int connections = 1;
    int inflight = 1;  // requests in flight per connection (closed loop) or at most (open)
    double rate = 0;   // open loop: requests/s over all connections; 0 = closed loop
    SendMode sendMode = SendMode::Coalesce;
    bool noDelay = true;  // TCP_NODELAY on every connection (false: Nagle's algorithm)
    // with serverPid: count the server's system calls (perf tracepoint). Off by default: the
    // traced path costs the server about 0.3 us per call, which its CPU figure then includes.
    bool countSyscalls = false;
    double warmup = 1;                // seconds
    double duration = 5;              // seconds of the measured window
    double connectTimeout = 10;       // seconds for connecting and opening every session
    double hardTimeout = 0;           // 0: warmup + duration + connectTimeout + 15 s
    std::string timestamps = "both";  // TimestampsToReturn of Read: source, server, both, neither
    std::uint32_t browseNode = 1000;  // ns=1;i=<n>, or 85 in ns 0 with --browse-objects
    // read: this node (ns=<readNodeNs>;s=<readNode>, or ;i=<readNodeNumeric> when that is
    // not 0) instead of a random ns=1;i=1001..1100.
    std::string readNode;
    std::uint16_t readNodeNs = 0;
    std::uint32_t readNodeNumeric = 0;
    bool browseObjects = false;
    int items = 100;            // subscribe: monitored items per subscription
    double samplingMs = 10;     // subscribe: sampling interval
    double publishingMs = 100;  // subscribe: publishing interval
    std::uint32_t queueSize = 10;
    double changeMs = 10;   // subscribe: one Write every changeMs (0 = off)
    int changeNodes = 100;  // subscribe: the writer changes ns=1;i=1001..1000+changeNodes
    // write: nodes per Write (writeBatch), taken in turn from ns=1;i=writeFirst.. (writeNodes
    // of them) when writeBatch > 1 or writeFirst is set, else one random node of 1001..1100
    int writeBatch = 1;
    int writeNodes = 100;
    std::uint32_t writeFirst = 0;
    // write: every value is the wall clock's microseconds modulo 2^31 at the Write's encoding,
    // so a receiver on the same machine (PubSub) measures write-to-receipt latency
    bool writeStamp = false;
    int changeBatch = 0;          // subscribe: nodes per Write, rotating over them (0 = all)
    int hotItems = 0;             // subscribe: only the first hotItems items monitor changed nodes
    int createBatch = 1000;       // subscribe: items per CreateMonitoredItems request
    bool deleteItems = false;     // subscribe: DeleteMonitoredItems (batches) after the window
    int subscribedSessions = -1;  // subscribe: only the first N sessions subscribe (-1: all)
    int connectWindow = 256;      // connections setting up at once (0: all at once)
    int serverPid = 0;            // read the server's CPU time at the window edges
    bool signalServer = false;    // send SIGUSR1 to serverPid at both window edges
    bool json = false;
    bool quiet = false;
    bool spin = false;  // busy-poll the event loop (lowest latency, burns its core)
    std::uint64_t seed = 1;
    std::uint32_t receiveBuffer = 65536;  // ReceiveBufferSize in Hello (chunk size)
};

struct Results {
    bool ok = false;
    int exitCode = 0;  // 0 ok, 2 no session, 3 unsupported by the server, 4 failed during the run
    std::string failure;
    double windowSeconds = 0;
    std::uint64_t completed = 0;   // good responses completed in the window
    std::uint64_t failed = 0;      // responses with a Bad service or operation result
    std::uint64_t operations = 0;  // nodes read/written/browsed in good responses
    std::uint64_t notifications = 0;
    std::uint64_t publishResponses = 0;
    std::uint64_t connectionErrors = 0;
    std::uint64_t maxBacklog = 0;  // open loop: largest number of requests behind schedule
    std::map<std::string, std::uint64_t> errors;  // status name -> count
    Histogram latency;                            // ns
    double serverCpuSeconds = -1;                 // -1: not measured
    // with --server-pid, over the window: context switches (voluntary + involuntary) of all
    // the server's threads, its system calls (-1: not measured; syscallCounter says why)
    long long serverCtxSwitches = -1, serverVoluntaryCtxSwitches = -1;
    long long serverSyscalls = -1;
    std::string syscallCounter;
    std::uint64_t sendCalls = 0;  // the generator's send operations in the window
    double generatorCpuSeconds = 0;
    std::string endpointPolicyId;
    // subscribe: latency is write-to-notification (from the Write's send to the Publish
    // response carrying the written value); the setup figures cover connecting, sessions,
    // subscriptions and items; RSS in kB of --server-pid (-1: not read)
    std::uint64_t changes = 0;  // Writes sent in the window
    std::uint64_t matched = 0;  // notifications matched to a Write
    double setupSeconds = 0, setupServerCpuSeconds = -1, createSeconds = 0;
    double setupGeneratorCpuSeconds = -1;
    long rssWindowKb = -1;  // at the window's start (after the warm-up: Publish queued)
    double deleteSeconds = -1, deleteServerCpuSeconds = -1;
    long rssStartKb = -1, rssReadyKb = -1, rssDeletedKb = -1;
    long rssBeforeItemsKb = -1;  // at the first CreateMonitoredItems
    std::uint64_t itemsCreated = 0;
    // CloseSession answered Bad other than BadServerTooBusy (retried), or still refused after
    // the retries: those sessions stay until their timeout
    std::uint64_t closeRefused = 0;
    // read: the integer value of the last good Read (e.g. a diagnostics counter read with
    // --read-node 0:i=2277); -1 when none was read
    long long lastValue = -1;
};

const char* scenarioName(Scenario s) noexcept;
Results run(const Options& options);

}  // namespace uaplex::bench
