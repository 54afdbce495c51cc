// SPDX-License-Identifier: Apache-2.0
// The NodeManagement services (Part 4 5.7) over the wire: user `admin` (role ConfigureAdmin,
// the default [access] node_management_roles; run_suite.sh adds it to the users file) adds a
// folder and a Variable with raw AddNodesRequests (node-opcua 2.182's client has no
// session.addNodes), browses, reads and writes them, adds and deletes a reference, deletes the
// nodes; an anonymous session is refused every item. node-opcua's server does not serve
// these services: skipped with --peer.
"use strict";

const { test } = require("node:test");
const { ua, assert, PEER, T_SHORT, makeClient, assertGood, assertStatus, ENDPOINT } = require("../lib/ua");
const { AttributeIds, BrowseDirection, DataType, NodeClass, StatusCodes, UserTokenType, coerceExpandedNodeId } = ua;
const {
    AddNodesRequest, AddReferencesRequest, DeleteNodesRequest, DeleteReferencesRequest,
    ObjectAttributes, VariableAttributes,
} = require("node-opcua-types");

const skip = PEER || !process.env.UAPLEX_WORK ? "needs run_suite.sh's admin user" : false;
const admin = { type: UserTokenType.UserName, userName: "admin", password: "admin-secret" };

async function withSession(identity, fn) {
    const client = makeClient();
    await client.connect(ENDPOINT);
    let session;
    try {
        session = await client.createSession(identity);
        return await fn(session);
    } finally {
        if (session) await session.close().catch(() => {});
        await client.disconnect().catch(() => {});
    }
}

// A raw service call: { status, response }; a ServiceFault gives its serviceResult.
function raw(session, request) {
    return new Promise((resolve, reject) => {
        session.performMessageTransaction(request, (err, response) => {
            const r = response || (err && err.response);
            if (r && r.responseHeader) resolve({ status: r.responseHeader.serviceResult, response: r });
            else reject(err || new Error("no response"));
        });
    });
}
async function transact(session, request) {
    const { status, response } = await raw(session, request);
    assertGood(status, request.constructor.name);
    return response;
}

const DisplayName = 64, Description = 32, AccessLevel = 1, DataTypeBit = 16, ValueRank = 1 << 19, Value = 1 << 21;

function folderItem(nodeId, name) {
    return {
        parentNodeId: coerceExpandedNodeId("i=85"),
        referenceTypeId: "i=35",  // Organizes
        requestedNewNodeId: coerceExpandedNodeId(nodeId),
        browseName: { namespaceIndex: 1, name },
        nodeClass: NodeClass.Object,
        nodeAttributes: new ObjectAttributes({
            specifiedAttributes: DisplayName | Description,
            displayName: { text: name }, description: { text: "added over the wire" },
        }),
        typeDefinition: coerceExpandedNodeId("i=61"),  // FolderType
    };
}

function variableItem(parent, name, value) {
    return {
        parentNodeId: coerceExpandedNodeId(parent),
        referenceTypeId: "i=47",  // HasComponent
        browseName: { namespaceIndex: 1, name },  // requestedNewNodeId null: the server's choice
        nodeClass: NodeClass.Variable,
        nodeAttributes: new VariableAttributes({
            specifiedAttributes: DisplayName | AccessLevel | DataTypeBit | ValueRank | Value,
            displayName: { text: name }, dataType: "i=11", valueRank: -1, accessLevel: 3,
            value: { dataType: DataType.Double, value },
        }),
        typeDefinition: coerceExpandedNodeId("i=63"),  // BaseDataVariableType
    };
}

const names = (results) => results.map((r) => (r.statusCode || r).name);

test("an admin adds a folder and a Variable, browses, reads, writes and deletes them", { skip, timeout: T_SHORT }, async () => {
    await withSession(admin, async (s) => {
        const folder = "ns=1;s=Interop.Folder";
        const added = await transact(s, new AddNodesRequest({ nodesToAdd: [folderItem(folder, "InteropFolder")] }));
        assert.deepEqual(names(added.results), ["Good"]);
        assert.equal(added.results[0].addedNodeId.toString(), folder);
        const v = await transact(s, new AddNodesRequest({ nodesToAdd: [variableItem(folder, "Setpoint", 21.5)] }));
        assert.deepEqual(names(v.results), ["Good"]);
        const variable = v.results[0].addedNodeId;
        assert.equal(variable.namespace, 1, "server-assigned in namespace 1");

        const objects = await s.browse({ nodeId: "i=85", browseDirection: BrowseDirection.Forward, referenceTypeId: "i=35", resultMask: 63 });
        const found = objects.references.find((r) => r.nodeId.toString() === folder);
        assert.ok(found, "Objects organizes the folder");
        assert.equal(found.browseName.name, "InteropFolder");
        assert.equal(found.typeDefinition.toString(), "ns=0;i=61");
        const children = await s.browse({ nodeId: folder, browseDirection: BrowseDirection.Forward, referenceTypeId: "i=33", includeSubtypes: true, resultMask: 63 });
        assert.deepEqual(children.references.map((r) => r.nodeId.toString()), [variable.toString()]);

        const dv = await s.read({ nodeId: variable, attributeId: AttributeIds.Value });
        assertGood(dv.statusCode, "read");
        assert.equal(dv.value.value, 21.5);
        assertGood(await s.write({ nodeId: variable, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Double, value: 42 } } }), "write");
        assert.equal((await s.read({ nodeId: variable, attributeId: AttributeIds.Value })).value.value, 42);
        assertStatus(await s.write({ nodeId: variable, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.String, value: "x" } } }),
            StatusCodes.BadTypeMismatch, "a String into a Double");

        // A second reference to the Variable from the Server object, and its deletion.
        const ref = { sourceNodeId: "i=2253", referenceTypeId: "i=35", isForward: true, targetNodeId: coerceExpandedNodeId(variable.toString()), targetNodeClass: NodeClass.Variable };
        assert.deepEqual(names((await transact(s, new AddReferencesRequest({ referencesToAdd: [ref, ref] }))).results),
            ["Good", "BadDuplicateReferenceNotAllowed"]);
        const del = { sourceNodeId: "i=2253", referenceTypeId: "i=35", isForward: true, targetNodeId: coerceExpandedNodeId(variable.toString()), deleteBidirectional: true };
        assert.deepEqual(names((await transact(s, new DeleteReferencesRequest({ referencesToDelete: [del] }))).results), ["Good"]);

        // Refusals: the folder again, a parent that is not there, namespace 0, Server deleted.
        const again = await transact(s, new AddNodesRequest({ nodesToAdd: [
            folderItem(folder, "Other"), { ...folderItem("ns=1;s=Orphan", "Orphan"), parentNodeId: coerceExpandedNodeId("ns=1;s=Nowhere") },
            folderItem("i=99999", "Zero")] }));
        assert.deepEqual(names(again.results), ["BadNodeIdExists", "BadParentNodeIdInvalid", "BadNodeIdRejected"]);
        const gone = await transact(s, new DeleteNodesRequest({ nodesToDelete: [
            { nodeId: variable, deleteTargetReferences: true }, { nodeId: folder, deleteTargetReferences: true },
            { nodeId: "i=2253", deleteTargetReferences: true }] }));
        assert.deepEqual(names(gone.results), ["Good", "Good", "BadUserAccessDenied"]);
        assertStatus((await s.read({ nodeId: variable, attributeId: AttributeIds.Value })).statusCode, StatusCodes.BadNodeIdUnknown, "deleted");
        const after = await s.browse({ nodeId: "i=85", browseDirection: BrowseDirection.Forward, referenceTypeId: "i=35" });
        assert.ok(!after.references.some((r) => r.nodeId.toString() === folder), "the folder is gone from Objects");
        assertStatus((await raw(s, new AddNodesRequest({ nodesToAdd: [] }))).status, StatusCodes.BadNothingToDo, "empty AddNodes");
    });
});

test("an anonymous session may not change the model: BadUserAccessDenied per item", { skip, timeout: T_SHORT }, async () => {
    await withSession(undefined, async (s) => {
        const added = await transact(s, new AddNodesRequest({ nodesToAdd: [folderItem("ns=1;s=Interop.Anonymous", "Anonymous")] }));
        assert.deepEqual(names(added.results), ["BadUserAccessDenied"]);
        assertStatus((await s.read({ nodeId: "ns=1;s=Interop.Anonymous", attributeId: AttributeIds.NodeClass })).statusCode,
            StatusCodes.BadNodeIdUnknown, "not added");
        const ref = { sourceNodeId: "i=2253", referenceTypeId: "i=35", isForward: true, targetNodeId: coerceExpandedNodeId("i=85"), targetNodeClass: 0 };
        assert.deepEqual(names((await transact(s, new AddReferencesRequest({ referencesToAdd: [ref] }))).results), ["BadUserAccessDenied"]);
        const del = { sourceNodeId: "i=84", referenceTypeId: "i=35", isForward: true, targetNodeId: coerceExpandedNodeId("i=85"), deleteBidirectional: true };
        assert.deepEqual(names((await transact(s, new DeleteReferencesRequest({ referencesToDelete: [del] }))).results), ["BadUserAccessDenied"]);
        assert.deepEqual(names((await transact(s, new DeleteNodesRequest({ nodesToDelete: [{ nodeId: "i=85", deleteTargetReferences: true }] }))).results),
            ["BadUserAccessDenied"]);
        // Objects still organized by Root.
        const root = await s.browse({ nodeId: "i=84", browseDirection: BrowseDirection.Forward, referenceTypeId: "i=35" });
        assert.ok(root.references.some((r) => r.nodeId.toString() === "ns=0;i=85"));
    });
});
