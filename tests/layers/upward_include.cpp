// A header of the subscription layer: compiles against uaplex_subscription, not against
// uaplex_session, which sits below it (tests/layers/probe.cmake).
#include <uaplex/subscription/subscription_manager.hpp>
