// What the dispatch hands session-bound services to: the kernel's ServiceSet in the server,
// a fake in tests. Kept abstract so that the protocol stack builds and is tested without the
// address space.
#pragma once

#include <uaplex/statuscodes.h>

#include <memory>

namespace uaplex::enc {
class Arena;
struct DataType;
}  // namespace uaplex::enc
namespace uaplex::services {
struct ServerCounters;
}
namespace uaplex::config {
struct ServerConfig;
}
namespace uaplex::host {
class Host;
}

namespace uaplex::server {

class ServiceHandler {
  public:
    virtual ~ServiceHandler() = default;
    // Per-session state of the services (created with the session, destroyed with it).
    virtual void* createSessionState() = 0;
    virtual void destroySessionState(void* state) noexcept = 0;
    // Read, Write, Browse, BrowseNext, TranslateBrowsePathsToNodeIds, RegisterNodes,
    // UnregisterNodes, Call: Good with the response set (allocated in `arena`, its
    // ResponseHeader left for the caller), or a Bad status answered as a ServiceFault.
    // Any worker thread; never throws.
    virtual uaplex_status call(enc::Arena& arena, void* sessionState,
                               const enc::DataType* requestType, const void* request,
                               const enc::DataType*& responseType, void*& response) noexcept = 0;
    // The ServerDiagnosticsSummary counters the session layer updates (never null).
    virtual services::ServerCounters& counters() noexcept = 0;
    // The server is stopping (ServerState Shutdown).
    virtual void shutdown() noexcept {}
};

// The handler the `uaplex` executable uses: the kernel's ServiceSet when the services are
// built in, otherwise one that answers BadServiceUnsupported. Construct after host.start().
std::unique_ptr<ServiceHandler> makeServiceHandler(const config::ServerConfig& cfg,
                                                   host::Host& host);

}  // namespace uaplex::server
