// SPDX-License-Identifier: Apache-2.0
// The kernel's ServiceSet behind the dispatch's ServiceHandler interface.
#include <uaplex/server/service_handler.hpp>
#include <uaplex/services/service_set.hpp>

namespace uaplex::server {

namespace {

class ServiceSetHandler final : public ServiceHandler {
    // One ServiceSet service as a NodeServiceFn: a direct call, no type test.
    template <class Req,
              uaplex_status (services::ServiceSet::*Service)(services::ServiceCall&) noexcept>
    static uaplex_status thunk(void* self, enc::Arena& arena, void* sessionState,
                               const session::AccessView* access, const void* request,
                               const session::RequestContext* ctx, std::uint32_t returnDiagnostics,
                               const enc::DataType*& responseType, void*& response) noexcept {
        services::ServiceCall c{arena, static_cast<services::SessionState*>(sessionState),
                                enc::dataTypeOf<Req>(), request};
        c.access = access;
        c.ctx = ctx;
        c.returnDiagnostics = returnDiagnostics;
        uaplex_status st = (static_cast<services::ServiceSet*>(self)->*Service)(c);
        responseType = c.responseType;
        response = c.response;
        return st;
    }

  public:
    ServiceSetHandler(const config::ServerConfig& cfg, host::Host& host) : set_(cfg, host) {}
    void* createSessionState() override { return set_.createSessionState().release(); }
    void destroySessionState(void* state) noexcept override {
        services::SessionStateDeleter{}(static_cast<services::SessionState*>(state));
    }
    NodeServices nodeServices() noexcept override {
        using S = services::ServiceSet;
        NodeServices n;
        n.self = &set_;
        n.read = &thunk<ua::ReadRequest, &S::read>;
        n.write = &thunk<ua::WriteRequest, &S::write>;
        n.browse = &thunk<ua::BrowseRequest, &S::browse>;
        n.browseNext = &thunk<ua::BrowseNextRequest, &S::browseNext>;
        n.translateBrowsePaths =
            &thunk<ua::TranslateBrowsePathsToNodeIdsRequest, &S::translateBrowsePaths>;
        n.registerNodes = &thunk<ua::RegisterNodesRequest, &S::registerNodes>;
        n.unregisterNodes = &thunk<ua::UnregisterNodesRequest, &S::unregisterNodes>;
        n.call = &thunk<ua::CallRequest, &S::callMethods>;
        n.conditionCall = [](void* self, const ua::NodeId& object, std::uint32_t method,
                             std::span<const ua::Variant> inputs, std::string_view user) noexcept {
            return static_cast<S*>(self)->callCondition(object, method, inputs, user);
        };
        n.historyRead = &thunk<ua::HistoryReadRequest, &S::historyRead>;
        n.historyUpdate = &thunk<ua::HistoryUpdateRequest, &S::historyUpdate>;
        n.addNodes = &thunk<ua::AddNodesRequest, &S::addNodes>;
        n.addReferences = &thunk<ua::AddReferencesRequest, &S::addReferences>;
        n.deleteNodes = &thunk<ua::DeleteNodesRequest, &S::deleteNodes>;
        n.deleteReferences = &thunk<ua::DeleteReferencesRequest, &S::deleteReferences>;
        return n;
    }
    session::ServerCounters& counters() noexcept override { return set_.counters(); }
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
    void setEventRaised(EventRaisedFn fn, void* user) noexcept override {
        set_.setEventRaised(fn, user);
    }
    uaplex_status raiseEvent(const uaplex_event_spec& spec) noexcept override {
        return set_.raiseEvent(spec);
    }
    void setDiagnosticsArrays(DiagnosticsArrayFn fn, DiagnosedSessionsFn sessions,
                              void* user) noexcept override {
        set_.setDiagnosticsArrays(fn, sessions, user);
    }
    void setPubSubState(PubSubStateFn fn, void* user) noexcept override {
        set_.setPubSubState(fn, user);
    }
    std::uint32_t pubsubConfigurationVersion() const noexcept override {
        return set_.pubsubConfigurationVersion();
    }
    uaplex_status setValue(const ua::NodeId& node, const ua::DataValue& value) noexcept override {
        return set_.setValue(node, value);
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
