// SPDX-License-Identifier: Apache-2.0
// The single include for the OPC UA binary encoding: arena, reader/writer, built-in and
// generated types, descriptors, message framing and status names.
#pragma once

#include <uaplex/encoding/arena.hpp>
#include <uaplex/encoding/binary.hpp>
#include <uaplex/encoding/builtin.hpp>
#include <uaplex/encoding/datatype.hpp>
#include <uaplex/encoding/generated/ns0.hpp>
#include <uaplex/encoding/generated/types.hpp>
#include <uaplex/encoding/json.hpp>
#include <uaplex/encoding/message.hpp>
