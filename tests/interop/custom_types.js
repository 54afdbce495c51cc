// SPDX-License-Identifier: Apache-2.0
"use strict";
// node-opcua's view of schema/Interop.Optional.bsd: structures with optional fields and a
// union, built by node-opcua's own schema parser (independent of our generator).

const fs = require("fs");
const path = require("path");
const { parseBinaryXSD, getOrCreateConstructor } = require("node-opcua-schemas");
const { DataTypeFactory, getStandardDataTypeFactory } = require("node-opcua-factory");
const { NodeId, NodeIdType } = require("node-opcua-nodeid");

const BSD = path.join(__dirname, "schema", "Interop.Optional.bsd");
const NAMES = ["InteropOptional", "InteropUnion", "InteropContainer"];

/** Resolves to { InteropOptional, InteropUnion, InteropContainer } constructors. */
async function loadCustomTypes() {
    const factory = new DataTypeFactory([getStandardDataTypeFactory()]);
    // The types never travel in ExtensionObjects here; any distinct ids will do.
    let next = 1000;
    const ids = {
        getDataTypeAndEncodingId() {
            const id = (k) => new NodeId(NodeIdType.NUMERIC, next + k, 1);
            const r = {
                dataTypeNodeId: id(0),
                binaryEncodingNodeId: id(1),
                xmlEncodingNodeId: id(2),
                jsonEncodingNodeId: id(3),
            };
            next += 4;
            return r;
        },
    };
    await parseBinaryXSD(fs.readFileSync(BSD, "utf8"), ids, factory);
    const out = {};
    for (const name of NAMES) out[name] = getOrCreateConstructor(name, factory);
    return out;
}

module.exports = { loadCustomTypes };
