// SPDX-License-Identifier: Apache-2.0
// SecurityPolicy (Part 7 / Part 6 6.7.2): what a secure channel needs from a policy to secure
// and check chunks. The channel owns one ChannelSecurity per connection (keys and cipher
// contexts are per channel); a SecurityProvider (kernel/security) makes them for the policies
// the server offers. Policy None needs no provider.
#pragma once

#include <uaplex/statuscodes.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

namespace uaplex::securechannel {

inline constexpr std::string_view kSecurityPolicyNone =
    "http://opcfoundation.org/UA/SecurityPolicy#None";

// MessageSecurityMode values (Part 4 7.20).
enum class SecurityMode : std::uint8_t { None = 1, Sign = 2, SignAndEncrypt = 3 };

// The per-channel security of one policy. Asymmetric calls run on the channel's I/O thread;
// the symmetric ones on the I/O thread (verify) and under the channel's send mutex (secure),
// so an implementation keeps separate contexts for the two directions.
class ChannelSecurity {
  public:
    virtual ~ChannelSecurity() = default;
    virtual std::string_view uri() const noexcept = 0;
    virtual std::size_t nonceLength() const noexcept = 0;

    // --- OpenSecureChannel (Part 6 6.7.4): always signed and encrypted ---
    // Checks the sender certificate (trust and validity) and the receiver thumbprint, decrypts
    // chunk[encryptedOffset..] in place and verifies the signature. bodyEnd: the end of the
    // plaintext body (padding and signature removed). Bad statuses are the channel's error.
    virtual uaplex_status openAsymmetric(std::span<std::uint8_t> chunk, std::size_t encryptedOffset,
                                         std::span<const std::uint8_t> senderCertificate,
                                         std::span<const std::uint8_t> receiverThumbprint,
                                         std::size_t& bodyEnd) noexcept = 0;
    // The server certificate and the client certificate's thumbprint for the response header.
    virtual std::span<const std::uint8_t> localCertificate() const noexcept = 0;
    virtual std::span<const std::uint8_t> remoteThumbprint() const noexcept = 0;
    // The peer's certificate (DER) as received in the first OPN.
    virtual std::span<const std::uint8_t> remoteCertificate() const noexcept = 0;
    // Bytes secureAsymmetric may add after a plaintext of `plainLength` bytes that start at
    // encryptedOffset (padding, signature, ciphertext expansion).
    virtual std::size_t asymmetricSize(std::size_t encryptedOffset,
                                       std::size_t plainLength) const noexcept = 0;
    // Pads, signs and encrypts the chunk in buffer[0..length) (plaintext from
    // encryptedOffset); writes the final MessageSize into the header. `buffer` has at least
    // asymmetricSize bytes.
    virtual uaplex_status secureAsymmetric(std::span<std::uint8_t> buffer,
                                           std::size_t encryptedOffset,
                                           std::size_t& length) noexcept = 0;
    // Fills `out` with random bytes (the server nonce).
    virtual bool randomNonce(std::span<std::uint8_t> out) noexcept = 0;
    // Derives the symmetric keys of `tokenId` from the nonces (Part 6 6.7.5). The channel
    // keeps the keys of at most two tokens (current and previous).
    virtual uaplex_status deriveKeys(std::uint32_t tokenId,
                                     std::span<const std::uint8_t> clientNonce,
                                     std::span<const std::uint8_t> serverNonce) noexcept = 0;

    // --- MSG / CLO (symmetric) ---
    // Bytes a symmetric chunk needs after its body at most (padding worst case + signature).
    virtual std::size_t symmetricOverhead(SecurityMode mode) const noexcept = 0;
    // Checks (and decrypts in place) a received chunk; `chunk` is the whole chunk, the
    // sequence header starts at bodyOffset. bodyLength: from bodyOffset to the end of the body.
    virtual uaplex_status verifySymmetric(std::uint32_t tokenId, SecurityMode mode,
                                          std::span<std::uint8_t> chunk, std::size_t bodyOffset,
                                          std::size_t& bodyLength) noexcept = 0;
    // Signs (and encrypts) a chunk whose header and body are written in chunk[0..length);
    // `chunk` is the whole buffer (room for the overhead). Writes MessageSize.
    virtual uaplex_status secureSymmetric(std::uint32_t tokenId, SecurityMode mode,
                                          std::span<std::uint8_t> chunk, std::size_t bodyOffset,
                                          std::size_t& length) noexcept = 0;
};

// Makes ChannelSecurity objects for the policies the server offers.
class SecurityProvider {
  public:
    virtual ~SecurityProvider() = default;
    // A new channel security for `policyUri`, or null when no endpoint offers the policy.
    virtual std::unique_ptr<ChannelSecurity> create(std::string_view policyUri) = 0;
    // Whether an endpoint offers `policyUri` with `mode`.
    virtual bool offers(std::string_view policyUri, SecurityMode mode) const noexcept = 0;
};

}  // namespace uaplex::securechannel
