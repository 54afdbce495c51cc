// SPDX-License-Identifier: Apache-2.0
// One base class per plugin kind, and the factory adapters that UAPLEX_PLUGIN takes.
// A plugin overrides the entries it supports; the defaults answer BadNotSupported.
#pragma once

#include <algorithm>
#include <cstring>

#include "uaplex/cpp/completion.hpp"
#include "uaplex/cpp/plugin.hpp"
#include "uaplex/history.h"

namespace uaplex::sdk {
namespace detail {

// Copies an ABI struct written by a peer that may be older (shorter) than this header. Fields
// the peer did not have stay zero (absent), and the copy keeps the peer's struct_size, so
// UAPLEX_HAS_FIELD on the copy answers as on the original.
template <typename T>
T copy_sized(const T& src) noexcept {
    T dst{};
    std::memcpy(&dst, &src, std::min<size_t>(sizeof(T), src.hdr.struct_size));
    return dst;
}

// A noexcept C trampoline for a member function M of the kind's base class, dispatched to T.
template <auto M>
struct Call;
template <typename C, typename... A, uaplex_status (C::*M)(A...)>
struct Call<M> {
    template <typename T>
    static uaplex_status fn(void* self, A... a) noexcept {
        auto* o = static_cast<T*>(self);
        return guard(&o->context(), "plugin entry", [&] { return (o->*M)(a...); });
    }
};

}  // namespace detail

// --- request queue ---------------------------------------------------------------------
class RequestQueue : public Instance {
  public:
    RequestQueue(Context ctx, const uaplex_request_queue_params& params)
        : Instance(ctx), params_(detail::copy_sized(params)) {}
    virtual uaplex_status enqueue(uaplex_request_entry* entry) = 0;
    virtual uaplex_status try_dequeue(uaplex_request_entry** out_entry) = 0;
    virtual uaplex_status dequeue(uint32_t timeout_ms, uaplex_request_entry** out_entry) = 0;
    virtual uaplex_status cancel(uaplex_request_entry* entry, uaplex_status status) = 0;
    virtual uaplex_status count(uint64_t* out_count) = 0;
    virtual uaplex_status release_execution(uaplex_request_entry*) {
        return UAPLEX_BadNotSupported;
    }
    virtual uaplex_status dispose(uaplex_request_entry*) { return UAPLEX_Good; }
    // Returns every waiting dequeue with BadTimeout; without it the host never waits
    // without a timeout on this queue.
    virtual uaplex_status wake_waiters() { return UAPLEX_BadNotSupported; }

  protected:
    // Completes an entry this queue unlinked itself (cancel, stop).
    uaplex_status complete(uaplex_request_entry* entry, uaplex_status status) noexcept {
        return params_.complete ? params_.complete(params_.user, entry, status)
                                : UAPLEX_BadInternalError;
    }
    uaplex_request_queue_params params_;
};

template <typename T>
struct RequestQueueFactory {
    using B = RequestQueue;
    static constexpr uaplex_request_queue_ops ops{
        .hdr = UAPLEX_HEADER_INIT(uaplex_request_queue_ops, UAPLEX_STYPE_REQUEST_QUEUE_OPS),
        .start = &detail::Lifecycle<T>::start,
        .stop = &detail::Lifecycle<T>::stop,
        .destroy = &detail::Lifecycle<T>::destroy,
        .enqueue = &detail::Call<&B::enqueue>::template fn<T>,
        .try_dequeue = &detail::Call<&B::try_dequeue>::template fn<T>,
        .dequeue = &detail::Call<&B::dequeue>::template fn<T>,
        .cancel = &detail::Call<&B::cancel>::template fn<T>,
        .count = &detail::Call<&B::count>::template fn<T>,
        .release_execution = &detail::Call<&B::release_execution>::template fn<T>,
        .dispose = &detail::Call<&B::dispose>::template fn<T>,
        .wake_waiters = &detail::Call<&B::wake_waiters>::template fn<T>,
    };
    static constexpr uaplex_request_queue_factory factory{
        .hdr = UAPLEX_HEADER_INIT(uaplex_request_queue_factory, UAPLEX_STYPE_REQUEST_QUEUE_FACTORY),
        .ops = &ops,
        .create = &detail::create<T, uaplex_request_queue_params>,
    };
    static void describe(uaplex_plugin_descriptor& d) noexcept { d.request_queue = &factory; }
};

// --- admission provider ----------------------------------------------------------------
class AdmissionProvider : public Instance {
  public:
    AdmissionProvider(Context ctx, const uaplex_admission_params& params)
        : Instance(ctx), params_(detail::copy_sized(params)) {}
    virtual uaplex_status use_fair_scheduling(int32_t* out) = 0;
    virtual uaplex_status classify_connection(const uaplex_admission_request_info* info,
                                              uaplex_admission_owner** out) = 0;
    virtual uaplex_status classify(const uaplex_admission_request_info* info,
                                   uaplex_admission_owner** out) = 0;
    virtual uaplex_status revalidate(uaplex_admission_owner* owner,
                                     const uaplex_admission_request_info* info) = 0;
    virtual uaplex_status try_acquire(uint32_t stage, uaplex_admission_owner* owner, int64_t amount,
                                      uaplex_admission_lease* lease, uint32_t* out_reason) = 0;
    virtual uaplex_status release(uaplex_admission_lease* lease) = 0;
    virtual uaplex_status usage(uint32_t stage, int64_t* out) = 0;
    virtual uaplex_status owner_retain(uaplex_admission_owner* owner) = 0;
    virtual uaplex_status owner_release(uaplex_admission_owner* owner) = 0;
    virtual uaplex_status owner_info(uaplex_admission_owner* owner, uint32_t* out_class,
                                     uint32_t* out_weight) = 0;
    virtual uaplex_status tracked_owners(uint64_t*) { return UAPLEX_BadNotSupported; }
    virtual uaplex_status owner_usage(uaplex_admission_owner*, uint32_t, int64_t*) {
        return UAPLEX_BadNotSupported;
    }
    virtual uaplex_status owner_group(uaplex_admission_owner*, uint64_t*) {
        return UAPLEX_BadNotSupported;
    }

  protected:
    uaplex_admission_params params_;
};

template <typename T>
struct AdmissionFactory {
    using B = AdmissionProvider;
    static constexpr uaplex_admission_ops ops{
        .hdr = UAPLEX_HEADER_INIT(uaplex_admission_ops, UAPLEX_STYPE_ADMISSION_OPS),
        .start = &detail::Lifecycle<T>::start,
        .stop = &detail::Lifecycle<T>::stop,
        .destroy = &detail::Lifecycle<T>::destroy,
        .use_fair_scheduling = &detail::Call<&B::use_fair_scheduling>::template fn<T>,
        .classify_connection = &detail::Call<&B::classify_connection>::template fn<T>,
        .classify = &detail::Call<&B::classify>::template fn<T>,
        .revalidate = &detail::Call<&B::revalidate>::template fn<T>,
        .try_acquire = &detail::Call<&B::try_acquire>::template fn<T>,
        .release = &detail::Call<&B::release>::template fn<T>,
        .usage = &detail::Call<&B::usage>::template fn<T>,
        .owner_retain = &detail::Call<&B::owner_retain>::template fn<T>,
        .owner_release = &detail::Call<&B::owner_release>::template fn<T>,
        .owner_info = &detail::Call<&B::owner_info>::template fn<T>,
        .tracked_owners = &detail::Call<&B::tracked_owners>::template fn<T>,
        .owner_usage = &detail::Call<&B::owner_usage>::template fn<T>,
        .owner_group = &detail::Call<&B::owner_group>::template fn<T>,
    };
    static constexpr uaplex_admission_factory factory{
        .hdr = UAPLEX_HEADER_INIT(uaplex_admission_factory, UAPLEX_STYPE_ADMISSION_FACTORY),
        .ops = &ops,
        .create = &detail::create<T, uaplex_admission_params>,
    };
    static void describe(uaplex_plugin_descriptor& d) noexcept { d.admission = &factory; }
};

// --- buffer pool -------------------------------------------------------------------------
class BufferPool : public Instance {
  public:
    BufferPool(Context ctx, const uaplex_buffer_pool_params& params)
        : Instance(ctx), params_(detail::copy_sized(params)) {}
    virtual uaplex_status manager_create(uaplex_str name, uint32_t max_buffer_size,
                                         uaplex_buffer_manager** out) = 0;
    virtual uaplex_status manager_destroy(uaplex_buffer_manager* manager) = 0;
    virtual uaplex_status suggested_size(uaplex_buffer_manager* m, uint32_t size,
                                         uint32_t* out) = 0;
    virtual uaplex_status expected_size(uaplex_buffer_manager* m, uint32_t size, uint32_t* out) = 0;
    virtual uaplex_status take(uaplex_buffer_manager* m, uint32_t size, const void* owner,
                               const uaplex_cancel_token* cancel, uaplex_buffer* out) = 0;
    virtual uaplex_status transfer(uaplex_buffer*, const void*) { return UAPLEX_Good; }
    virtual uaplex_status lock(uaplex_buffer*) { return UAPLEX_Good; }
    virtual uaplex_status unlock(uaplex_buffer*) { return UAPLEX_Good; }
    virtual uaplex_status give_back(uaplex_buffer* buffer, const void* owner) = 0;
    virtual uaplex_status stats(uint64_t*, uint64_t*) { return UAPLEX_BadNotSupported; }

  protected:
    uaplex_buffer_pool_params params_;
};

template <typename T>
struct BufferPoolFactory {
    using B = BufferPool;
    static constexpr uaplex_buffer_pool_ops ops{
        .hdr = UAPLEX_HEADER_INIT(uaplex_buffer_pool_ops, UAPLEX_STYPE_BUFFER_POOL_OPS),
        .start = &detail::Lifecycle<T>::start,
        .stop = &detail::Lifecycle<T>::stop,
        .destroy = &detail::Lifecycle<T>::destroy,
        .manager_create = &detail::Call<&B::manager_create>::template fn<T>,
        .manager_destroy = &detail::Call<&B::manager_destroy>::template fn<T>,
        .suggested_size = &detail::Call<&B::suggested_size>::template fn<T>,
        .expected_size = &detail::Call<&B::expected_size>::template fn<T>,
        .take = &detail::Call<&B::take>::template fn<T>,
        .transfer = &detail::Call<&B::transfer>::template fn<T>,
        .lock = &detail::Call<&B::lock>::template fn<T>,
        .unlock = &detail::Call<&B::unlock>::template fn<T>,
        .give_back = &detail::Call<&B::give_back>::template fn<T>,
        .stats = &detail::Call<&B::stats>::template fn<T>,
    };
    static constexpr uaplex_buffer_pool_factory factory{
        .hdr = UAPLEX_HEADER_INIT(uaplex_buffer_pool_factory, UAPLEX_STYPE_BUFFER_POOL_FACTORY),
        .ops = &ops,
        .create = &detail::create<T, uaplex_buffer_pool_params>,
    };
    static void describe(uaplex_plugin_descriptor& d) noexcept { d.buffer_pool = &factory; }
};

// --- transport ---------------------------------------------------------------------------
class Transport : public Instance {
  public:
    Transport(Context ctx, const uaplex_transport_params& params)
        : Instance(ctx), params_(detail::copy_sized(params)) {}
    virtual uaplex_status scheme(uaplex_str* out) = 0;
    virtual uaplex_status listen(uaplex_str endpoint_url) = 0;
    virtual uaplex_status send(uaplex_connection* c, uaplex_buffer* buffers, size_t count) = 0;
    virtual uaplex_status close(uaplex_connection* c, uaplex_status reason) = 0;
    // Reserved: not called by the kernel yet (transport.h).
    virtual uaplex_status set_receiving(uaplex_connection*, int32_t) {
        return UAPLEX_BadNotSupported;
    }
    virtual uaplex_status secure_channel_opened(uaplex_connection*) {
        return UAPLEX_BadNotSupported;
    }
    virtual uaplex_status reverse_connect(uaplex_str, uaplex_str) { return UAPLEX_BadNotSupported; }

  protected:
    uaplex_transport_params params_;
};

template <typename T>
struct TransportFactory {
    using B = Transport;
    static constexpr uaplex_transport_ops ops{
        .hdr = UAPLEX_HEADER_INIT(uaplex_transport_ops, UAPLEX_STYPE_TRANSPORT_OPS),
        .start = &detail::Lifecycle<T>::start,
        .stop = &detail::Lifecycle<T>::stop,
        .destroy = &detail::Lifecycle<T>::destroy,
        .scheme = &detail::Call<&B::scheme>::template fn<T>,
        .listen = &detail::Call<&B::listen>::template fn<T>,
        .send = &detail::Call<&B::send>::template fn<T>,
        .close = &detail::Call<&B::close>::template fn<T>,
        .set_receiving = &detail::Call<&B::set_receiving>::template fn<T>,
        .secure_channel_opened = &detail::Call<&B::secure_channel_opened>::template fn<T>,
        .reverse_connect = &detail::Call<&B::reverse_connect>::template fn<T>,
    };
    static constexpr uaplex_transport_factory factory{
        .hdr = UAPLEX_HEADER_INIT(uaplex_transport_factory, UAPLEX_STYPE_TRANSPORT_FACTORY),
        .ops = &ops,
        .create = &detail::create<T, uaplex_transport_params>,
    };
    static void describe(uaplex_plugin_descriptor& d) noexcept { d.transport = &factory; }
};

// --- monitored-item queue factory ------------------------------------------------------
// The queues themselves are C objects with static ops tables (one per queue type).
class MonitoredItemQueueFactory : public Instance {
  public:
    MonitoredItemQueueFactory(Context ctx, const uaplex_mi_queue_params& params)
        : Instance(ctx), params_(detail::copy_sized(params)) {}
    virtual uaplex_status supports_durable(int32_t* out) = 0;
    virtual uaplex_status create_data_change_queue(int32_t durable, uint32_t item_id,
                                                   void** out_queue,
                                                   const uaplex_data_change_queue_ops** ops) = 0;
    virtual uaplex_status create_event_queue(int32_t durable, uint32_t item_id, void** out_queue,
                                             const uaplex_event_queue_ops** ops) = 0;

  protected:
    uaplex_mi_queue_params params_;
};

template <typename T>
struct MonitoredItemQueueFactoryOf {
    using B = MonitoredItemQueueFactory;
    static constexpr uaplex_mi_queue_factory_ops ops{
        .hdr = UAPLEX_HEADER_INIT(uaplex_mi_queue_factory_ops, UAPLEX_STYPE_MI_QUEUE_FACTORY_OPS),
        .start = &detail::Lifecycle<T>::start,
        .stop = &detail::Lifecycle<T>::stop,
        .destroy = &detail::Lifecycle<T>::destroy,
        .supports_durable = &detail::Call<&B::supports_durable>::template fn<T>,
        .create_data_change_queue = &detail::Call<&B::create_data_change_queue>::template fn<T>,
        .create_event_queue = &detail::Call<&B::create_event_queue>::template fn<T>,
    };
    static constexpr uaplex_mi_queue_factory factory{
        .hdr = UAPLEX_HEADER_INIT(uaplex_mi_queue_factory, UAPLEX_STYPE_MI_QUEUE_FACTORY),
        .ops = &ops,
        .create = &detail::create<T, uaplex_mi_queue_params>,
    };
    static void describe(uaplex_plugin_descriptor& d) noexcept {
        d.monitored_item_queue = &factory;
    }
};

// --- node manager ------------------------------------------------------------------------
class NodeManager : public Instance {
  public:
    NodeManager(Context ctx, const uaplex_node_manager_params& params)
        : Instance(ctx), params_(detail::copy_sized(params)) {}
    virtual uaplex_status namespace_count(size_t* out) = 0;
    virtual uaplex_status namespace_uri(size_t index, uaplex_str* out) = 0;
    // The owned-namespace entries. A node manager that only adds nodes to the kernel's store
    // (uaplex/cpp/address_space.hpp) keeps these defaults and reports no namespaces.
    virtual uaplex_status read(size_t, const uaplex_read_item*, uaplex_datavalue* const*,
                               uaplex_status*) {
        return UAPLEX_BadNotSupported;
    }
    virtual uaplex_status write(size_t, const uaplex_write_item*, uaplex_status*) {
        return UAPLEX_BadNotSupported;
    }
    virtual uaplex_status browse(const uaplex_nodeid*, uint32_t, const uaplex_nodeid*, int32_t,
                                 uaplex_reference_sink, void*) {
        return UAPLEX_BadNotSupported;
    }
    // Good: the node's changes come through params_.value_changed (node_manager.h; called on
    // the sampling thread since 1.9); the default lets the kernel sample with read.
    virtual uaplex_status monitor(const uaplex_nodeid*, uint32_t, int32_t) {
        return UAPLEX_BadNotSupported;
    }
    virtual uaplex_status call(const uaplex_nodeid*, const uaplex_nodeid*, size_t,
                               const uaplex_variant*, const uaplex_value_alloc*, uaplex_status*,
                               size_t*, uaplex_variant**) {
        return UAPLEX_BadNotImplemented;
    }

  protected:
    uaplex_node_manager_params params_;
};

namespace detail {
// The `_async` entries of a node manager that declares them (ABI 1.8), NULL otherwise, so that
// one without them keeps the synchronous path:
//   uaplex_status read_async(size_t, const uaplex_read_item*, uaplex_datavalue* const*,
//                            uaplex_status*, Completion&);
//   uaplex_status write_async(size_t, const uaplex_write_item*, uaplex_status*, Completion&);
//   uaplex_status call_async(const uaplex_nodeid* object_id, const uaplex_nodeid* method_id,
//                            size_t input_count, const uaplex_variant* inputs,
//                            const uaplex_value_alloc* alloc, uaplex_status* input_results,
//                            size_t* out_output_count, uaplex_variant** out_outputs,
//                            Completion&);
//   uaplex_status browse_async(const uaplex_nodeid* node_id, uint32_t direction,
//                              const uaplex_nodeid* reference_type_id, int32_t include_subtypes,
//                              ReferenceSink sink, Completion&);
// (the pointers stay valid until the Completion completes; the sink may be used from any
// thread until then).
// Move the Completion away and return GoodCompletesAsynchronously, or return another status
// to finish at once. Worker threads; must not block.
template <typename T>
constexpr auto read_async_entry() noexcept {
    using Fn = decltype(uaplex_node_manager_ops::read_async);
    if constexpr (requires(T & t, Completion & c) {
                      t.read_async(size_t{}, (const uaplex_read_item*)nullptr,
                                   (uaplex_datavalue* const*)nullptr, (uaplex_status*)nullptr, c);
                  })
        return Fn(+[](void* self, size_t n, const uaplex_read_item* items,
                      uaplex_datavalue* const* results, uaplex_status* statuses,
                      const uaplex_completion* c) noexcept -> uaplex_status {
            return run_async(*c, [&](Completion& done) {
                return static_cast<T*>(self)->read_async(n, items, results, statuses, done);
            });
        });
    else
        return Fn(nullptr);
}
template <typename T>
constexpr auto write_async_entry() noexcept {
    using Fn = decltype(uaplex_node_manager_ops::write_async);
    if constexpr (requires(T & t, Completion & c) {
                      t.write_async(size_t{}, (const uaplex_write_item*)nullptr,
                                    (uaplex_status*)nullptr, c);
                  })
        return Fn(+[](void* self, size_t n, const uaplex_write_item* items, uaplex_status* statuses,
                      const uaplex_completion* c) noexcept -> uaplex_status {
            return run_async(*c, [&](Completion& done) {
                return static_cast<T*>(self)->write_async(n, items, statuses, done);
            });
        });
    else
        return Fn(nullptr);
}
template <typename T>
constexpr auto call_async_entry() noexcept {
    using Fn = decltype(uaplex_node_manager_ops::call_async);
    if constexpr (requires(T & t, Completion & c) {
                      t.call_async((const uaplex_nodeid*)nullptr, (const uaplex_nodeid*)nullptr,
                                   size_t{}, (const uaplex_variant*)nullptr,
                                   (const uaplex_value_alloc*)nullptr, (uaplex_status*)nullptr,
                                   (size_t*)nullptr, (uaplex_variant**)nullptr, c);
                  })
        return Fn(+[](void* self, const uaplex_nodeid* object_id, const uaplex_nodeid* method_id,
                      size_t n, const uaplex_variant* inputs, const uaplex_value_alloc* alloc,
                      uaplex_status* input_results, size_t* out_count, uaplex_variant** out,
                      const uaplex_completion* c) noexcept -> uaplex_status {
            return run_async(*c, [&](Completion& done) {
                return static_cast<T*>(self)->call_async(object_id, method_id, n, inputs, alloc,
                                                         input_results, out_count, out, done);
            });
        });
    else
        return Fn(nullptr);
}
template <typename T>
constexpr auto browse_async_entry() noexcept {
    using Fn = decltype(uaplex_node_manager_ops::browse_async);
    if constexpr (requires(T & t, Completion & c) {
                      t.browse_async((const uaplex_nodeid*)nullptr, uint32_t{},
                                     (const uaplex_nodeid*)nullptr, int32_t{}, ReferenceSink{}, c);
                  })
        return Fn(+[](void* self, const uaplex_nodeid* node_id, uint32_t direction,
                      const uaplex_nodeid* reference_type_id, int32_t include_subtypes,
                      uaplex_reference_sink sink, void* sink_user,
                      const uaplex_completion* c) noexcept -> uaplex_status {
            return run_async(*c, [&](Completion& done) {
                return static_cast<T*>(self)->browse_async(node_id, direction, reference_type_id,
                                                           include_subtypes,
                                                           ReferenceSink(sink, sink_user), done);
            });
        });
    else
        return Fn(nullptr);
}
}  // namespace detail

template <typename T>
struct NodeManagerFactory {
    using B = NodeManager;
    static constexpr uaplex_node_manager_ops ops{
        .hdr = UAPLEX_HEADER_INIT(uaplex_node_manager_ops, UAPLEX_STYPE_NODE_MANAGER_OPS),
        .start = &detail::Lifecycle<T>::start,
        .stop = &detail::Lifecycle<T>::stop,
        .destroy = &detail::Lifecycle<T>::destroy,
        .namespace_count = &detail::Call<&B::namespace_count>::template fn<T>,
        .namespace_uri = &detail::Call<&B::namespace_uri>::template fn<T>,
        .read = &detail::Call<&B::read>::template fn<T>,
        .write = &detail::Call<&B::write>::template fn<T>,
        .browse = &detail::Call<&B::browse>::template fn<T>,
        .monitor = &detail::Call<&B::monitor>::template fn<T>,
        .call = &detail::Call<&B::call>::template fn<T>,
        .read_async = detail::read_async_entry<T>(),
        .write_async = detail::write_async_entry<T>(),
        .call_async = detail::call_async_entry<T>(),
        .browse_async = detail::browse_async_entry<T>(),
    };
    static constexpr uaplex_node_manager_factory factory{
        .hdr = UAPLEX_HEADER_INIT(uaplex_node_manager_factory, UAPLEX_STYPE_NODE_MANAGER_FACTORY),
        .ops = &ops,
        .create = &detail::create<T, uaplex_node_manager_params>,
    };
    static void describe(uaplex_plugin_descriptor& d) noexcept { d.node_manager = &factory; }
};

// --- pubsub (since 1.10) -------------------------------------------------------------------
// A PubSub transport: moves the kernel's encoded NetworkMessages to a broker (pubsub.h).
class PubSub : public Instance {
  public:
    PubSub(Context ctx, const uaplex_pubsub_params& params)
        : Instance(ctx), params_(detail::copy_sized(params)) {}
    virtual uaplex_status publish(const uaplex_pubsub_message* msg) = 0;
    virtual uaplex_status stats(uaplex_pubsub_stats*) { return UAPLEX_BadNotSupported; }
    // Since 1.14: receive the topics topic_filter matches; renew it on every connect.
    virtual uaplex_status subscribe(uaplex_str, uint32_t) { return UAPLEX_BadNotSupported; }

  protected:
    // Tells the kernel that the connection came up (true) or went down (false).
    void connection_changed(bool connected) const noexcept {
        if (params_.connection_changed) params_.connection_changed(params_.user, connected ? 1 : 0);
    }
    // Since 1.14: whether the kernel takes received messages (a 1.13 kernel does not).
    bool receives() const noexcept { return params_.message_received != nullptr; }
    // Since 1.14: hands one received message to the kernel (borrowed for the call).
    void message_received(const uaplex_pubsub_message& msg) const noexcept {
        if (params_.message_received) params_.message_received(params_.message_user, &msg);
    }
    uaplex_pubsub_params params_;
};

template <typename T>
struct PubSubFactory {
    using B = PubSub;
    static constexpr uaplex_pubsub_ops ops{
        .hdr = UAPLEX_HEADER_INIT(uaplex_pubsub_ops, UAPLEX_STYPE_PUBSUB_OPS),
        .start = &detail::Lifecycle<T>::start,
        .stop = &detail::Lifecycle<T>::stop,
        .destroy = &detail::Lifecycle<T>::destroy,
        .publish = &detail::Call<&B::publish>::template fn<T>,
        .stats = &detail::Call<&B::stats>::template fn<T>,
        .subscribe = &detail::Call<&B::subscribe>::template fn<T>,
    };
    static constexpr uaplex_pubsub_factory factory{
        .hdr = UAPLEX_HEADER_INIT(uaplex_pubsub_factory, UAPLEX_STYPE_PUBSUB_FACTORY),
        .ops = &ops,
        .create = &detail::create<T, uaplex_pubsub_params>,
    };
    static void describe(uaplex_plugin_descriptor& d) noexcept { d.pubsub = &factory; }
};

// --- history store (since 1.11) ----------------------------------------------------------
// read_raw, update and delete_raw get a Completion: move it to the store's own thread and
// return GoodCompletesAsynchronously, or return another status to finish at once. The request
// and its result stay valid until the Completion completes. update and delete_raw answer
// BadHistoryOperationUnsupported unless overridden.
class HistoryStore : public Instance {
  public:
    HistoryStore(Context ctx, const uaplex_history_params& params)
        : Instance(ctx), params_(detail::copy_sized(params)) {}
    virtual uaplex_status store(size_t count, const uaplex_history_value* values,
                                size_t* out_accepted) = 0;
    virtual uaplex_status read_raw(const uaplex_history_read& read,
                                   uaplex_history_read_result& result, Completion& done) = 0;
    virtual uaplex_status update(const uaplex_history_update&, Completion&) {
        return UAPLEX_BadHistoryOperationUnsupported;
    }
    virtual uaplex_status delete_raw(uaplex_history_delete&, Completion&) {
        return UAPLEX_BadHistoryOperationUnsupported;
    }
    // Events (since 1.14): a store that keeps them overrides these and says
    // `static constexpr bool kStoresEvents = true;` (else its table has no event entries and
    // the kernel answers event history with BadHistoryOperationUnsupported).
    virtual uaplex_status store_events(size_t, const uaplex_history_event*, size_t* out_accepted) {
        if (out_accepted) *out_accepted = 0;
        return UAPLEX_BadHistoryOperationUnsupported;
    }
    virtual uaplex_status read_events(const uaplex_history_event_read&,
                                      uaplex_history_event_read_result&, Completion&) {
        return UAPLEX_BadHistoryOperationUnsupported;
    }
    virtual uaplex_status update_events(const uaplex_history_event_update&, Completion&) {
        return UAPLEX_BadHistoryOperationUnsupported;
    }
    virtual uaplex_status delete_events(const uaplex_history_event_delete&, Completion&) {
        return UAPLEX_BadHistoryOperationUnsupported;
    }

  protected:
    uaplex_history_params params_;
};

template <typename T>
struct HistoryFactory {
    using B = HistoryStore;
    static constexpr bool kEvents = requires { requires T::kStoresEvents; };
    static constexpr uaplex_history_ops ops{
        .hdr = UAPLEX_HEADER_INIT(uaplex_history_ops, UAPLEX_STYPE_HISTORY_OPS),
        .start = &detail::Lifecycle<T>::start,
        .stop = &detail::Lifecycle<T>::stop,
        .destroy = &detail::Lifecycle<T>::destroy,
        .store = &detail::Call<&B::store>::template fn<T>,
        .read_raw =
            +[](void* self, const uaplex_history_read* read, uaplex_history_read_result* result,
                const uaplex_completion* c) noexcept -> uaplex_status {
            return run_async(*c, [&](Completion& done) {
                return static_cast<T*>(self)->read_raw(*read, *result, done);
            });
        },
        .update = +[](void* self, const uaplex_history_update* update,
                      const uaplex_completion* c) noexcept -> uaplex_status {
            return run_async(
                *c, [&](Completion& done) { return static_cast<T*>(self)->update(*update, done); });
        },
        .delete_raw = +[](void* self, uaplex_history_delete* del,
                          const uaplex_completion* c) noexcept -> uaplex_status {
            return run_async(*c, [&](Completion& done) {
                return static_cast<T*>(self)->delete_raw(*del, done);
            });
        },
        .store_events = kEvents ? &detail::Call<&B::store_events>::template fn<T> : nullptr,
        .read_events = !kEvents ? nullptr
                                : +[](void* self, const uaplex_history_event_read* read,
                                      uaplex_history_event_read_result* result,
                                      const uaplex_completion* c) noexcept -> uaplex_status {
            return run_async(*c, [&](Completion& done) {
                return static_cast<T*>(self)->read_events(*read, *result, done);
            });
        },
        .update_events = !kEvents ? nullptr
                                  : +[](void* self, const uaplex_history_event_update* update,
                                        const uaplex_completion* c) noexcept -> uaplex_status {
            return run_async(*c, [&](Completion& done) {
                return static_cast<T*>(self)->update_events(*update, done);
            });
        },
        .delete_events = !kEvents ? nullptr
                                  : +[](void* self, const uaplex_history_event_delete* del,
                                        const uaplex_completion* c) noexcept -> uaplex_status {
            return run_async(*c, [&](Completion& done) {
                return static_cast<T*>(self)->delete_events(*del, done);
            });
        },
    };
    static constexpr uaplex_history_factory factory{
        .hdr = UAPLEX_HEADER_INIT(uaplex_history_factory, UAPLEX_STYPE_HISTORY_FACTORY),
        .ops = &ops,
        .create = &detail::create<T, uaplex_history_params>,
    };
    static void describe(uaplex_plugin_descriptor& d) noexcept { d.history = &factory; }
};

}  // namespace uaplex::sdk
