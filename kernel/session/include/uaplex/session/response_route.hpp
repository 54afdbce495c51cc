// SPDX-License-Identifier: Apache-2.0
// Where a response that is sent later goes (a parked Publish, a login answered from the login
// pool): the connection and the request's secure id.
#pragma once

#include <cstdint>
#include <span>

namespace uaplex::session {

class ResponseRoute {
  public:
    virtual ~ResponseRoute() = default;
    virtual void send(std::span<const std::uint8_t> body) noexcept = 0;
    virtual std::uint32_t channelId() const noexcept = 0;
    // False once the connection is gone: a parked Publish on it is dropped, not answered.
    virtual bool open() const noexcept { return true; }
};

}  // namespace uaplex::session
