// SPDX-License-Identifier: Apache-2.0
// uaplex-bench: command line and report. See tools/bench/README.md.
#include "loadgen.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

using namespace uaplex::bench;

namespace {

const char* kUsage =
    "usage: uaplex-bench [options]\n"
    "  --url URL            opc.tcp://host:port (default opc.tcp://127.0.0.1:4840)\n"
    "  --scenario S         read | write | read100 | browse | subscribe | probe (default read)\n"
    "  -c, --connections C  connections, each with its own session (default 1)\n"
    "  -m, --inflight M     requests in flight per connection (default 1); in open loop the\n"
    "                       most that may be outstanding (also --in-flight)\n"
    "  --send-mode S        coalesce: every request queued since the last write goes out in\n"
    "                       one send (default); per-request: one send() per request message\n"
    "  --nodelay on|off     TCP_NODELAY on the connections (default on; off = Nagle)\n"
    "  --rate R             open loop: R requests/s over all connections, latency measured\n"
    "                       from each request's intended send time (default 0: closed loop)\n"
    "  --warmup S           seconds before the measured window (default 1)\n"
    "  --duration S         seconds of the measured window (default 5)\n"
    "  --connect-timeout S  for connecting and opening every session (default 10)\n"
    "  --connect-window N   connections setting up (connect to last setup response) at once\n"
    "                       (default 256; 0 = all at once)\n"
    "  --hard-timeout S     stop whatever happens (default warmup+duration+connect+15)\n"
    "  --timestamps T       TimestampsToReturn of Read: both | source | server | neither\n"
    "                       (default both)\n"
    "  --browse-node N      browse ns=1;i=N (default 1000, the Benchmark folder)\n"
    "  --browse-objects     browse the Objects folder (i=85) instead\n"
    "  --read-node NS:ID    read: the String NodeId ns=NS;s=ID instead of random nodes;\n"
    "                       NS:i=N reads the numeric NodeId ns=NS;i=N (the last integer\n"
    "                       value read is reported: last_value)\n"
    "  --items N            subscribe: monitored items per session (default 100)\n"
    "  --sampling-ms X      subscribe: sampling interval (default 10)\n"
    "  --publishing-ms X    subscribe: publishing interval (default 100)\n"
    "  --queue-size N       subscribe: monitored item queue size (default 10)\n"
    "  --change-ms X        subscribe: one Write every X ms (default 10, 0 = off); each carries\n"
    "                       a fresh counter, so notifications give write-to-notification latency\n"
    "  --write-batch B      write: B nodes per Write, in turn over the --write-nodes\n"
    "                       (default 1: one random node of ns=1;i=1001..1100)\n"
    "  --write-first N      write: the nodes are ns=1;i=N..N+K-1 (default 1001)\n"
    "  --write-nodes K      write: how many (default 100)\n"
    "  --write-stamp        write: each value is the wall clock's us modulo 2^31 (PubSub latency)\n"
    "  --change-nodes K     subscribe: the writer changes ns=1;i=1001..1000+K (default 100)\n"
    "  --change-batch B     subscribe: nodes per Write, rotating over the K (default 0: all K)\n"
    "  --hot-items H        subscribe: items 0..H-1 monitor the changed nodes, the others the\n"
    "                       nodes never written (default 0: item i monitors 1001 + i % 100)\n"
    "  --create-batch N     subscribe: items per CreateMonitoredItems request (default 1000,\n"
    "                       fewer when the request would not fit the server's receive buffer)\n"
    "  --subscribed-sessions N  subscribe: only the first N sessions create a subscription\n"
    "                       (the others stay open, idle; default: all)\n"
    "  --delete-items       subscribe: delete every item (same batches) after the window and\n"
    "                       report the time and the server's RSS after it\n"
    "  --server-pid P       read the CPU time and the context switches (all threads) of\n"
    "                       process P at the window edges\n"
    "  --syscalls on|off    also count P's system calls (perf raw_syscalls:sys_enter;\n"
    "                       default off: tracing adds to P's CPU time)\n"
    "  --signal-server      send SIGUSR1 to --server-pid at both window edges (allocshim)\n"
    "  --seed N             random node selection seed (default 1)\n"
    "  --receive-buffer N   ReceiveBufferSize in Hello, the largest response chunk (default\n"
    "                       65536; 8192 makes large responses arrive in several chunks)\n"
    "  --spin               busy-poll instead of sleeping between events: lowest latency;\n"
    "                       the generator's CPU figure then means nothing\n"
    "  --json               print one JSON line instead of the text report\n"
    "  --quiet              no progress messages on stderr\n"
    "Exit status: 0 measured, 1 usage, 2 no session (server unreachable or refused),\n"
    "3 scenario not supported by the server, 4 failed during the run.\n";

[[noreturn]] void usage(const std::string& error) {
    if (!error.empty()) std::fprintf(stderr, "uaplex-bench: %s\n", error.c_str());
    std::fputs(kUsage, error.empty() ? stdout : stderr);
    std::exit(error.empty() ? 0 : 1);
}

double number(const char* flag, const char* text, double min, double max) {
    char* end = nullptr;
    double v = std::strtod(text, &end);
    if (end == text || *end != '\0' || !(v >= min && v <= max))
        usage(std::string("bad value for ") + flag + ": " + text);
    return v;
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) usage("missing value after " + std::string(a));
            return argv[++i];
        };
        if (a == "--help" || a == "-h")
            usage("");
        else if (a == "--url")
            o.url = value();
        else if (a == "--scenario") {
            std::string_view s = value();
            if (s == "read")
                o.scenario = Scenario::Read;
            else if (s == "write")
                o.scenario = Scenario::Write;
            else if (s == "read100")
                o.scenario = Scenario::Read100;
            else if (s == "browse")
                o.scenario = Scenario::Browse;
            else if (s == "subscribe")
                o.scenario = Scenario::Subscribe;
            else if (s == "probe")
                o.scenario = Scenario::Probe;
            else
                usage("unknown scenario " + std::string(s));
        } else if (a == "-c" || a == "--connections")
            o.connections = int(number("--connections", value(), 1, 100000));
        else if (a == "-m" || a == "--inflight" || a == "--in-flight")
            o.inflight = int(number("--inflight", value(), 1, 10000));
        else if (a == "--send-mode") {
            std::string_view v = value();
            if (v == "coalesce")
                o.sendMode = SendMode::Coalesce;
            else if (v == "per-request")
                o.sendMode = SendMode::PerRequest;
            else
                usage("bad --send-mode " + std::string(v));
        } else if (a == "--nodelay" || a == "--syscalls") {
            std::string_view v = value();
            if (v != "on" && v != "off") usage("bad " + std::string(a) + " " + std::string(v));
            (a == "--nodelay" ? o.noDelay : o.countSyscalls) = v == "on";
        } else if (a == "--rate")
            o.rate = number("--rate", value(), 0, 1e8);
        else if (a == "--warmup")
            o.warmup = number("--warmup", value(), 0, 3600);
        else if (a == "--duration")
            o.duration = number("--duration", value(), 0.1, 3600);
        else if (a == "--connect-timeout")
            o.connectTimeout = number("--connect-timeout", value(), 0.1, 600);
        else if (a == "--hard-timeout")
            o.hardTimeout = number("--hard-timeout", value(), 1, 1e5);
        else if (a == "--timestamps") {
            o.timestamps = value();
            if (o.timestamps != "both" && o.timestamps != "source" && o.timestamps != "server" &&
                o.timestamps != "neither")
                usage("bad --timestamps " + o.timestamps);
        } else if (a == "--browse-node")
            o.browseNode = std::uint32_t(number("--browse-node", value(), 1, 4e9));
        else if (a == "--browse-objects")
            o.browseObjects = true;
        else if (a == "--read-node") {
            // NS:ID, a String NodeId (e.g. 2:Delayed)
            std::string v = value();
            auto colon = v.find(':');
            if (colon == std::string::npos || colon == 0 || colon + 1 == v.size())
                usage("bad --read-node " + v);
            o.readNodeNs =
                std::uint16_t(number("--read-node", v.substr(0, colon).c_str(), 0, 65535));
            o.readNode = v.substr(colon + 1);
            if (o.readNode.size() > 2 && o.readNode.compare(0, 2, "i=") == 0)
                o.readNodeNumeric =
                    std::uint32_t(number("--read-node", o.readNode.c_str() + 2, 1, 4294967295.0));
        } else if (a == "--items")
            o.items = int(number("--items", value(), 1, 2000000));
        else if (a == "--write-batch")
            o.writeBatch = int(number("--write-batch", value(), 1, 100000));
        else if (a == "--write-first")
            o.writeFirst = std::uint32_t(number("--write-first", value(), 1, 4000000000.0));
        else if (a == "--write-nodes")
            o.writeNodes = int(number("--write-nodes", value(), 1, 10000000));
        else if (a == "--write-stamp")
            o.writeStamp = true;
        else if (a == "--change-nodes")
            o.changeNodes = int(number("--change-nodes", value(), 1, 100));
        else if (a == "--change-batch")
            o.changeBatch = int(number("--change-batch", value(), 0, 100));
        else if (a == "--hot-items")
            o.hotItems = int(number("--hot-items", value(), 0, 2000000));
        else if (a == "--create-batch")
            o.createBatch = int(number("--create-batch", value(), 1, 100000));
        else if (a == "--subscribed-sessions")
            o.subscribedSessions = int(number("--subscribed-sessions", value(), 0, 1000000));
        else if (a == "--connect-window")
            o.connectWindow = int(number("--connect-window", value(), 0, 1000000));
        else if (a == "--delete-items")
            o.deleteItems = true;
        else if (a == "--sampling-ms")
            o.samplingMs = number("--sampling-ms", value(), 0, 1e6);
        else if (a == "--publishing-ms")
            o.publishingMs = number("--publishing-ms", value(), 0, 1e6);
        else if (a == "--queue-size")
            o.queueSize = std::uint32_t(number("--queue-size", value(), 0, 1e6));
        else if (a == "--change-ms")
            o.changeMs = number("--change-ms", value(), 0, 1e6);
        else if (a == "--server-pid")
            o.serverPid = int(number("--server-pid", value(), 1, 4e6));
        else if (a == "--signal-server")
            o.signalServer = true;
        else if (a == "--seed")
            o.seed = std::uint64_t(number("--seed", value(), 0, 1e18));
        else if (a == "--receive-buffer")
            o.receiveBuffer = std::uint32_t(number("--receive-buffer", value(), 8192, 1 << 24));
        else if (a == "--spin")
            o.spin = true;
        else if (a == "--json")
            o.json = true;
        else if (a == "--quiet")
            o.quiet = true;
        else
            usage("unknown argument " + std::string(a));
    }
    if (o.writeBatch > o.writeNodes) usage("--write-batch above --write-nodes");
    if (o.signalServer && o.serverPid == 0) usage("--signal-server needs --server-pid");
    if (o.scenario == Scenario::Subscribe && o.rate > 0) usage("subscribe has no open loop");
    if (o.hotItems > 0 && o.changeNodes >= 100) usage("--hot-items needs --change-nodes below 100");
    return o;
}

void jsonString(std::string& out, std::string_view s) {
    out += '"';
    for (char ch : s) {
        if (ch == '"' || ch == '\\') out += '\\';
        if (std::uint8_t(ch) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", ch);
            out += buf;
            continue;
        }
        out += ch;
    }
    out += '"';
}

std::string fmt(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    // One descriptor per connection: the soft open-file limit goes up to the hard one.
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rlim_t(o.connections) + 32 > rl.rlim_cur)
        std::fprintf(stderr,
                     "uaplex-bench: %d connections need more descriptors than the "
                     "open file limit of %llu\n",
                     o.connections, (unsigned long long)rl.rlim_cur);
    // the last resort behind --hard-timeout: the kernel ends the process
    double hard = o.hardTimeout > 0
                      ? o.hardTimeout
                      : o.warmup + o.duration + o.connectTimeout * (o.deleteItems ? 2 : 1) + 15;
    alarm(unsigned(hard) + 10);

    Results r = run(o);

    const double window = r.windowSeconds > 0 ? r.windowSeconds : 1;
    const double perSecond = double(r.completed) / window;
    const double notifPerSecond = double(r.notifications) / window;
    // the request count CPU time is divided by: notifications for subscribe
    const double units = o.scenario == Scenario::Subscribe ? double(r.notifications)
                                                           : double(r.completed + r.failed);
    auto us = [](std::uint64_t ns) { return double(ns) / 1000.0; };
    const double serverCpuPerReq =
        r.serverCpuSeconds >= 0 && units > 0 ? r.serverCpuSeconds * 1e6 / units : -1;
    const double genCpuPerReq = units > 0 ? r.generatorCpuSeconds * 1e6 / units : -1;
    auto perReq = [&](long long n) { return n >= 0 && units > 0 ? double(n) / units : -1.0; };
    const double ctxPerReq = perReq(r.serverCtxSwitches);
    const double syscallsPerReq = perReq(r.serverSyscalls);
    const double sendsPerReq = perReq((long long)r.sendCalls);

    if (o.json) {
        std::string j = "{";
        auto field = [&](const char* k) {
            if (j.size() > 1) j += ',';
            jsonString(j, k);
            j += ':';
        };
        field("scenario"), jsonString(j, scenarioName(o.scenario));
        field("url"), jsonString(j, o.url);
        field("ok"), j += r.ok ? "true" : "false";
        field("exit_code"), j += std::to_string(r.exitCode);
        field("failure"), jsonString(j, r.failure);
        field("connections"), j += std::to_string(o.connections);
        field("inflight"), j += std::to_string(o.inflight);
        field("rate"), j += fmt("%.0f", o.rate);
        field("window_s"), j += fmt("%.3f", r.windowSeconds);
        field("requests"), j += std::to_string(r.completed);
        field("errors"), j += std::to_string(r.failed);
        field("operations"), j += std::to_string(r.operations);
        field("req_per_s"), j += fmt("%.1f", perSecond);
        field("notifications"), j += std::to_string(r.notifications);
        field("notifications_per_s"), j += fmt("%.1f", notifPerSecond);
        field("publish_responses"), j += std::to_string(r.publishResponses);
        field("p50_us"), j += fmt("%.1f", us(r.latency.quantile(0.50)));
        field("p90_us"), j += fmt("%.1f", us(r.latency.quantile(0.90)));
        field("p99_us"), j += fmt("%.1f", us(r.latency.quantile(0.99)));
        field("max_us"), j += fmt("%.1f", us(r.latency.max()));
        field("server_cpu_s"), j += fmt("%.3f", r.serverCpuSeconds);
        field("server_cpu_us_per_req"), j += fmt("%.3f", serverCpuPerReq);
        field("generator_cpu_s"), j += fmt("%.3f", r.generatorCpuSeconds);
        field("generator_cpu_us_per_req"), j += fmt("%.3f", genCpuPerReq);
        field("max_backlog"), j += std::to_string(r.maxBacklog);
        field("send_mode"),
            jsonString(j, o.sendMode == SendMode::PerRequest ? "per-request" : "coalesce");
        field("nodelay"), j += o.noDelay ? "true" : "false";
        field("client_sends"), j += std::to_string(r.sendCalls);
        field("client_sends_per_req"), j += fmt("%.3f", sendsPerReq);
        field("server_ctx_switches"), j += std::to_string(r.serverCtxSwitches);
        field("server_voluntary_ctx_switches"), j += std::to_string(r.serverVoluntaryCtxSwitches);
        field("server_ctx_switches_per_req"), j += fmt("%.3f", ctxPerReq);
        field("server_syscalls"), j += std::to_string(r.serverSyscalls);
        field("server_syscalls_per_req"), j += fmt("%.3f", syscallsPerReq);
        field("syscall_counter"), jsonString(j, r.syscallCounter);
        field("connection_errors"), j += std::to_string(r.connectionErrors);
        field("anonymous_policy_id"), jsonString(j, r.endpointPolicyId);
        field("changes"), j += std::to_string(r.changes);
        field("matched"), j += std::to_string(r.matched);
        field("setup_s"), j += fmt("%.3f", r.setupSeconds);
        field("setup_server_cpu_s"), j += fmt("%.3f", r.setupServerCpuSeconds);
        field("create_s"), j += fmt("%.3f", r.createSeconds);
        field("items_created"), j += std::to_string(r.itemsCreated);
        field("delete_s"), j += fmt("%.3f", r.deleteSeconds);
        field("delete_server_cpu_s"), j += fmt("%.3f", r.deleteServerCpuSeconds);
        field("rss_start_kb"), j += std::to_string(r.rssStartKb);
        field("rss_ready_kb"), j += std::to_string(r.rssReadyKb);
        field("rss_window_kb"), j += std::to_string(r.rssWindowKb);
        field("setup_generator_cpu_s"), j += fmt("%.3f", r.setupGeneratorCpuSeconds);
        field("rss_deleted_kb"), j += std::to_string(r.rssDeletedKb);
        field("rss_before_items_kb"), j += std::to_string(r.rssBeforeItemsKb);
        field("close_refused"), j += std::to_string(r.closeRefused);
        field("last_value"), j += std::to_string(r.lastValue);
        field("errors_by_status"), j += '{';
        bool first = true;
        for (const auto& [name, n] : r.errors) {
            if (!first) j += ',';
            first = false;
            jsonString(j, name);
            j += ':' + std::to_string(n);
        }
        j += "}}";
        std::puts(j.c_str());
    } else {
        std::printf(
            "uaplex-bench %s %s: %d connection(s) x %d in flight, %s, %s, %s, window %.2f s\n",
            scenarioName(o.scenario), o.url.c_str(), o.connections, o.inflight,
            o.rate > 0 ? fmt("open loop at %.0f req/s", o.rate).c_str() : "closed loop",
            o.sendMode == SendMode::PerRequest ? "one send per request" : "coalesced sends",
            o.noDelay ? "TCP_NODELAY" : "Nagle", r.windowSeconds);
        if (!r.ok) std::printf("  FAILED (exit %d): %s\n", r.exitCode, r.failure.c_str());
        if (o.scenario == Scenario::Subscribe) {
            std::printf("  notifications  %llu (%.0f/s) in %llu Publish responses\n",
                        (unsigned long long)r.notifications, notifPerSecond,
                        (unsigned long long)r.publishResponses);
            std::printf(
                "  setup          %llu items in %.3f s (CreateMonitoredItems %.3f s), "
                "server CPU %.3f s, generator CPU %.3f s, RSS %ld -> %ld kB (%ld kB with the "
                "Publish requests queued)\n",
                (unsigned long long)r.itemsCreated, r.setupSeconds, r.createSeconds,
                r.setupServerCpuSeconds, r.setupGeneratorCpuSeconds, r.rssStartKb, r.rssReadyKb,
                r.rssWindowKb);
            if (r.changes)
                std::printf(
                    "  write->notif   p50 %.1f us  p90 %.1f us  p99 %.1f us  max %.1f us "
                    "(%llu matched, %llu Writes)\n",
                    us(r.latency.quantile(0.5)), us(r.latency.quantile(0.9)),
                    us(r.latency.quantile(0.99)), us(r.latency.max()),
                    (unsigned long long)r.matched, (unsigned long long)r.changes);
            if (r.deleteSeconds >= 0)
                std::printf("  delete         %.3f s, server CPU %.3f s, RSS after %ld kB\n",
                            r.deleteSeconds, r.deleteServerCpuSeconds, r.rssDeletedKb);
        } else if (o.scenario != Scenario::Probe) {
            std::printf("  requests       %llu ok, %llu failed: %.0f req/s (%llu operations)\n",
                        (unsigned long long)r.completed, (unsigned long long)r.failed, perSecond,
                        (unsigned long long)r.operations);
            std::printf("  latency        p50 %.1f us  p90 %.1f us  p99 %.1f us  max %.1f us\n",
                        us(r.latency.quantile(0.5)), us(r.latency.quantile(0.9)),
                        us(r.latency.quantile(0.99)), us(r.latency.max()));
            if (o.rate > 0)
                std::printf("  backlog        at most %llu requests behind schedule\n",
                            (unsigned long long)r.maxBacklog);
        }
        if (serverCpuPerReq >= 0)
            std::printf("  server CPU     %.2f us per %s (%.2f s)\n", serverCpuPerReq,
                        o.scenario == Scenario::Subscribe ? "notification" : "request",
                        r.serverCpuSeconds);
        const char* unit = o.scenario == Scenario::Subscribe ? "notification" : "request";
        if (ctxPerReq >= 0)
            std::printf("  server ctxsw   %.3f per %s (%lld, %lld voluntary)\n", ctxPerReq, unit,
                        r.serverCtxSwitches, r.serverVoluntaryCtxSwitches);
        if (syscallsPerReq >= 0)
            std::printf("  server sys     %.3f system calls per %s (%lld)\n", syscallsPerReq, unit,
                        r.serverSyscalls);
        else if (o.serverPid > 0)
            std::printf("  server sys     not counted (%s)\n", r.syscallCounter.c_str());
        if (genCpuPerReq >= 0)
            std::printf("  generator CPU  %.2f us per %s (%.2f s)\n", genCpuPerReq, unit,
                        r.generatorCpuSeconds);
        if (sendsPerReq >= 0)
            std::printf("  generator sent %.3f sends per %s\n", sendsPerReq, unit);
        for (const auto& [name, n] : r.errors)
            std::printf("  error          %s: %llu\n", name.c_str(), (unsigned long long)n);
        if (r.connectionErrors)
            std::printf("  connections    %llu lost\n", (unsigned long long)r.connectionErrors);
    }
    return r.exitCode;
}
