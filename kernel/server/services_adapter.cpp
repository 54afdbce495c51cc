// The kernel's ServiceSet behind the dispatch's ServiceHandler interface.
#include "server/service_handler.hpp"
#include "services/service_set.hpp"

namespace uaplex::server {

namespace {

class ServiceSetHandler final : public ServiceHandler {
  public:
    ServiceSetHandler(const config::ServerConfig& cfg, host::Host& host) : set_(cfg, host) {}
    void* createSessionState() override { return set_.createSessionState().release(); }
    void destroySessionState(void* state) noexcept override {
        services::SessionStateDeleter{}(static_cast<services::SessionState*>(state));
    }
    uaplex_status call(enc::Arena& arena, void* sessionState, const session::AccessView* access,
                       const enc::DataType* requestType, const void* request,
                       const enc::DataType*& responseType, void*& response) noexcept override {
        services::ServiceCall c{arena, static_cast<services::SessionState*>(sessionState),
                                requestType, request};
        c.access = access;
        uaplex_status st = set_.call(c);
        responseType = c.responseType;
        response = c.response;
        return st;
    }
    services::ServerCounters& counters() noexcept override { return set_.counters(); }
    std::vector<std::string> namespaceUris() const override { return set_.namespaceUris(); }
    void setAccessPolicy(const session::AccessPolicy* policy) noexcept override {
        set_.setAccessPolicy(policy);
    }
    subscription::NodeValueSource* valueSource() noexcept override {
        try {
            return &set_.valueSource();
        } catch (...) {
            return nullptr;
        }
    }
    void setValueChanged(ValueChangedFn fn, void* user) noexcept override {
        set_.setValueChanged(fn, user);
    }
    void setGetMonitoredItems(GetMonitoredItemsFn fn, void* user) noexcept override {
        set_.setGetMonitoredItems(fn, user);
    }
    void shutdown() noexcept override { set_.setState(services::ServerState::Shutdown); }

  private:
    services::ServiceSet set_;
};

}  // namespace

std::unique_ptr<ServiceHandler> makeServiceHandler(const config::ServerConfig& cfg,
                                                   host::Host& host) {
    return std::make_unique<ServiceSetHandler>(cfg, host);
}

}  // namespace uaplex::server
