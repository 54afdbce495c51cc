// The handler used when the kernel is built without its services: every session-bound
// service answers BadServiceUnsupported, sessions and discovery still work.
#include "server/service_handler.hpp"
#include "services/service_set.hpp"

namespace uaplex::server {

namespace {

class NoServices final : public ServiceHandler {
  public:
    void* createSessionState() override { return nullptr; }
    void destroySessionState(void*) noexcept override {}
    uaplex_status call(enc::Arena&, void*, const session::AccessView*, const enc::DataType*,
                       const void*, const enc::DataType*&, void*&) noexcept override {
        return UAPLEX_BadServiceUnsupported;
    }
    services::ServerCounters& counters() noexcept override { return counters_; }

  private:
    services::ServerCounters counters_;
};

}  // namespace

std::unique_ptr<ServiceHandler> makeServiceHandler(const config::ServerConfig&, host::Host&) {
    return std::make_unique<NoServices>();
}

}  // namespace uaplex::server
