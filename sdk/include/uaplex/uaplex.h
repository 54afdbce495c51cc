// SPDX-License-Identifier: Apache-2.0
/* Everything a plugin author needs: every ABI header. */
#ifndef UAPLEX_UAPLEX_H
#define UAPLEX_UAPLEX_H

#include "uaplex/abi.h"
#include "uaplex/admission.h"
#include "uaplex/buffer_pool.h"
#include "uaplex/history.h"
#include "uaplex/host.h"
#include "uaplex/monitored_item_queue.h"
#include "uaplex/node_manager.h"
#include "uaplex/plugin.h"
#include "uaplex/pubsub.h"
#include "uaplex/request_queue.h"
#include "uaplex/transport.h"

#endif /* UAPLEX_UAPLEX_H */
