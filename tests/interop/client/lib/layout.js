// SPDX-License-Identifier: Apache-2.0
// The demo layout of docs/nodemanagers.md: every built-in type by its ns0 DataType
// BrowseName and NodeId, with the Variant type its values travel as.
"use strict";

const { DataType } = require("node-opcua-client");

const DEMO_TYPES = [
    { name: "Boolean", id: 1, vt: DataType.Boolean },
    { name: "SByte", id: 2, vt: DataType.SByte },
    { name: "Byte", id: 3, vt: DataType.Byte },
    { name: "Int16", id: 4, vt: DataType.Int16 },
    { name: "UInt16", id: 5, vt: DataType.UInt16 },
    { name: "Int32", id: 6, vt: DataType.Int32 },
    { name: "UInt32", id: 7, vt: DataType.UInt32 },
    { name: "Int64", id: 8, vt: DataType.Int64 },
    { name: "UInt64", id: 9, vt: DataType.UInt64 },
    { name: "Float", id: 10, vt: DataType.Float },
    { name: "Double", id: 11, vt: DataType.Double },
    { name: "String", id: 12, vt: DataType.String },
    { name: "DateTime", id: 13, vt: DataType.DateTime },
    { name: "Guid", id: 14, vt: DataType.Guid },
    { name: "ByteString", id: 15, vt: DataType.ByteString },
    { name: "XmlElement", id: 16, vt: DataType.XmlElement },
    { name: "NodeId", id: 17, vt: DataType.NodeId },
    { name: "ExpandedNodeId", id: 18, vt: DataType.ExpandedNodeId },
    { name: "StatusCode", id: 19, vt: DataType.StatusCode },
    { name: "QualifiedName", id: 20, vt: DataType.QualifiedName },
    { name: "LocalizedText", id: 21, vt: DataType.LocalizedText },
    { name: "Structure", id: 22, vt: DataType.ExtensionObject },
    { name: "DataValue", id: 23, vt: DataType.DataValue },
    { name: "BaseDataType", id: 24, vt: DataType.Variant },
    { name: "DiagnosticInfo", id: 25, vt: DataType.DiagnosticInfo },
];

module.exports = { DEMO_TYPES };
