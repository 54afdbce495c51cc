// SPDX-License-Identifier: Apache-2.0
// The NodeSet2 loader: reads the NodeSet2 XML files named in its TOML table at start and adds
// their nodes to the kernel's store. Namespace URIs are mapped to server indices, required
// models are checked (in file order, namespace 0 being the kernel's own), aliases resolved;
// Objects, Variables, Methods and the four type node classes come with their attributes,
// references and values, DataTypes with their StructureDefinition/EnumDefinition. Values
// of the files' structures are encoded by their definitions, and writes to Variables of
// such a DataType are decoded by the definition before the kernel stores them.
//
// All files are parsed and every value converted before the first node is added, so a bad
// file fails start with file:line and nothing of the files is in the address space; the
// host then refuses to start the server.
#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "uaplex/cpp/address_space.hpp"
#include "values.hpp"
#include "xml_reader.hpp"

#ifndef UAPLEX_NS0_MODEL_VERSION
#error "UAPLEX_NS0_MODEL_VERSION (the Version of schema/Opc.Ua.NodeSet2.xml) must be defined"
#endif

namespace {

using namespace uaplex::sdk;
using namespace uaplex::nodeset;

constexpr const char* kOpcUaUri = "http://opcfoundation.org/UA/";
constexpr uint32_t kHasTypeDefinition = 40, kHasSubtype = 45, kHasEncoding = 38;

// A failure with its place in a file.
struct LoadError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct RefV {
    NodeIdV type;
    NodeIdV source, target;  // normalized to the forward direction
    std::size_t file;
    uint32_t line;
};

struct NodeV {
    uint32_t node_class = 0;
    NodeIdV id;
    uint16_t browse_ns = 0;
    std::string browse_name;
    bool has_display = false, has_description = false, has_inverse = false;
    std::string display_locale, display, description_locale, description, inverse_locale,
        inverse_name;
    uint32_t write_mask = 0, event_notifier = 0, access_level = 1, user_access_level = 1;
    NodeIdV data_type = NodeIdV::numeric(0, 24);
    int32_t value_rank = -1;
    std::vector<uint32_t> array_dimensions;
    double minimum_sampling_interval = 0;
    bool is_abstract = false, symmetric = false, executable = true, historizing = false;
    const XmlElement* value = nullptr;
    const XmlElement* definition = nullptr;
    NodeIdV type_definition;
    std::size_t file = 0;
    uint32_t line = 0;
};

struct FileV {
    std::string path;
    XmlElement root;
    std::vector<uint16_t> ns_map;  // file namespace index -> server index
    std::unordered_map<std::string, std::string> aliases;
};

// "1.05.02" vs "1.04.0": numeric by component.
int compare_versions(std::string_view a, std::string_view b) {
    auto next = [](std::string_view& s) {
        std::size_t dot = s.find('.');
        std::string_view part = s.substr(0, dot);
        s = dot == std::string_view::npos ? std::string_view() : s.substr(dot + 1);
        uint64_t v = 0;
        for (char c : part)
            if (c >= '0' && c <= '9') v = v * 10 + uint64_t(c - '0');
        return v;
    };
    while (!a.empty() || !b.empty()) {
        uint64_t x = next(a), y = next(b);
        if (x != y) return x < y ? -1 : 1;
    }
    return 0;
}

template <class T>
T number_attr(const std::string* s, T fallback,
              const std::function<void(const std::string&)>& bad) {
    if (!s) return fallback;
    T v{};
    std::string_view t(*s);
    if constexpr (std::is_floating_point_v<T>) {
        char* end = nullptr;
        v = T(std::strtod(s->c_str(), &end));
        if (s->empty() || end != s->c_str() + s->size()) bad(*s);
    } else {
        auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
        if (ec != std::errc() || p != t.data() + t.size()) bad(*s);
    }
    return v;
}

class NodeSetLoader final : public StoreNodeManager {
  public:
    NodeSetLoader(Context ctx, const uaplex_node_manager_params& params)
        : StoreNodeManager(ctx, params) {
        ctx_.check_known_keys({"files", "max_file_bytes"});
        for (std::size_t i = 0; i < 1024; ++i) {
            auto f = ctx_.config_string("files[" + std::to_string(i) + "]");
            if (!f) break;
            paths_.emplace_back(*f);
        }
        if (paths_.empty())
            throw StatusError(UAPLEX_BadConfigurationError,
                              "'files' must list at least one NodeSet2 file");
        max_file_bytes_ = ctx_.config_int("max_file_bytes").value_or(64 << 20);
    }

    uaplex_status start() override {
        AddressSpace as = space();
        if (!as.available()) return UAPLEX_BadNotSupported;
        if (!UAPLEX_HAS_FIELD(ctx_.api(), uaplex_host_api, value_set))
            return UAPLEX_BadNotSupported;
        try {
            for (const std::string& p : paths_) parse_file(p);
            build_types();
            add_everything();
        } catch (const LoadError& e) {
            ctx_.error(e.what());
            return UAPLEX_BadConfigurationError;
        }
        return UAPLEX_Good;
    }

  private:
    [[noreturn]] void fail(std::size_t file, uint32_t line, const std::string& what) const {
        throw LoadError(files_[file]->path + ":" + std::to_string(line) + ": " + what);
    }

    // --- parsing -----------------------------------------------------------------------

    void parse_file(const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw LoadError(path + ":0: cannot open the file");
        std::string text;
        in.seekg(0, std::ios::end);
        auto size = in.tellg();
        if (size < 0 || int64_t(size) > max_file_bytes_)
            throw LoadError(path + ":0: larger than max_file_bytes (" +
                            std::to_string(max_file_bytes_) + ")");
        text.resize(std::size_t(size));
        in.seekg(0);
        in.read(text.data(), size);
        auto file = std::make_unique<FileV>();
        file->path = path;
        try {
            file->root = parse_xml(text);
        } catch (const XmlError& e) {
            throw LoadError(path + ":" + std::to_string(e.line()) + ": " + e.what());
        }
        files_.push_back(std::move(file));
        const std::size_t f = files_.size() - 1;
        FileV& fv = *files_[f];
        if (fv.root.name != "UANodeSet") fail(f, fv.root.line, "the root element is not UANodeSet");

        fv.ns_map.push_back(0);
        if (const XmlElement* uris = fv.root.child("NamespaceUris")) {
            for (const XmlElement& u : uris->children) {
                if (u.name != "Uri")
                    fail(f, u.line, "unexpected <" + u.name + "> in NamespaceUris");
                fv.ns_map.push_back(register_uri(f, u.line, u.text));
            }
        }
        check_models(f);
        if (const XmlElement* aliases = fv.root.child("Aliases")) {
            for (const XmlElement& a : aliases->children) {
                const std::string* alias = a.attribute("Alias");
                if (a.name != "Alias" || !alias) fail(f, a.line, "malformed alias");
                fv.aliases[*alias] = a.text;
            }
        }
        static const std::map<std::string, uint32_t, std::less<>> classes = {
            {"UAObject", 1},        {"UAVariable", 2},       {"UAMethod", 4},   {"UAObjectType", 8},
            {"UAVariableType", 16}, {"UAReferenceType", 32}, {"UADataType", 64}};
        for (const XmlElement& e : fv.root.children) {
            if (e.name == "NamespaceUris" || e.name == "Models" || e.name == "Aliases" ||
                e.name == "ServerUris" || e.name == "Extensions" || e.name == "LastModified")
                continue;
            auto it = classes.find(e.name);
            if (it == classes.end()) fail(f, e.line, "unsupported element <" + e.name + ">");
            parse_node(f, e, it->second);
        }
    }

    uint16_t register_uri(std::size_t f, uint32_t line, std::string_view uri) {
        if (uri == kOpcUaUri) return 0;
        auto it = uri_index_.find(std::string(uri));
        if (it != uri_index_.end()) return it->second;
        uint16_t index = 0;
        if (space().register_namespace(uri, &index) != UAPLEX_Good)
            fail(f, line, "cannot register namespace " + std::string(uri));
        uri_index_.emplace(std::string(uri), index);
        return index;
    }

    void check_models(std::size_t f) {
        const XmlElement* models = files_[f]->root.child("Models");
        if (!models) return;
        if (models_.empty()) models_[kOpcUaUri] = UAPLEX_NS0_MODEL_VERSION;
        for (const XmlElement& m : models->children) {
            const std::string* uri = m.attribute("ModelUri");
            if (m.name != "Model" || !uri) fail(f, m.line, "malformed <Model>");
            for (const XmlElement& r : m.children) {
                if (r.name != "RequiredModel") continue;
                const std::string* ruri = r.attribute("ModelUri");
                const std::string* rver = r.attribute("Version");
                if (!ruri) fail(f, r.line, "RequiredModel without ModelUri");
                auto have = models_.find(*ruri);
                if (have == models_.end())
                    fail(f, r.line,
                         "requires model " + *ruri +
                             ", which is not loaded before it (list it earlier in files)");
                if (rver && compare_versions(have->second, *rver) < 0)
                    fail(f, r.line,
                         "requires model " + *ruri + " version " + *rver + ", loaded is version " +
                             have->second);
            }
            const std::string* ver = m.attribute("Version");
            models_[*uri] = ver ? *ver : "0";
        }
    }

    NodeIdV node_id(std::size_t f, uint32_t line, std::string_view text) {
        const FileV& fv = *files_[f];
        auto alias = fv.aliases.find(std::string(text));
        if (alias != fv.aliases.end()) text = alias->second;
        try {
            return parse_node_id(
                text, [&](uint32_t i) { return remap(f, line, i); },
                [&](std::string_view uri) { return register_uri(f, line, uri); });
        } catch (const std::invalid_argument& e) {
            fail(f, line, e.what());
        }
    }

    uint16_t remap(std::size_t f, uint32_t line, uint32_t file_ns) const {
        const FileV& fv = *files_[f];
        if (file_ns >= fv.ns_map.size())
            fail(f, line,
                 "namespace index " + std::to_string(file_ns) + " is not in NamespaceUris");
        return fv.ns_map[file_ns];
    }

    void parse_node(std::size_t f, const XmlElement& e, uint32_t node_class) {
        NodeV n;
        n.node_class = node_class;
        n.file = f;
        n.line = e.line;
        auto bad = [&](const std::string& v) {
            fail(f, e.line, "invalid attribute value '" + v + "'");
        };
        const std::string* id = e.attribute("NodeId");
        const std::string* bn = e.attribute("BrowseName");
        if (!id || !bn) fail(f, e.line, "<" + e.name + "> needs NodeId and BrowseName");
        n.id = node_id(f, e.line, *id);
        if (n.id.ns == 0)
            fail(f, e.line, "node " + *id + " is in namespace 0, which the kernel owns");
        std::size_t colon = bn->find(':');
        if (colon != std::string::npos && colon > 0 &&
            std::all_of(bn->begin(), bn->begin() + colon,
                        [](char c) { return c >= '0' && c <= '9'; })) {
            const std::string prefix = bn->substr(0, colon);
            n.browse_ns = remap(f, e.line, number_attr<uint32_t>(&prefix, 0, bad));
            n.browse_name = bn->substr(colon + 1);
        } else {
            n.browse_name = *bn;
        }
        for (const XmlElement& c : e.children) {
            if (c.name == "DisplayName" && !n.has_display) {
                n.has_display = true;
                n.display = c.text;
                if (auto* l = c.attribute("Locale")) n.display_locale = *l;
            } else if (c.name == "Description" && !n.has_description) {
                n.has_description = true;
                n.description = c.text;
                if (auto* l = c.attribute("Locale")) n.description_locale = *l;
            } else if (c.name == "InverseName" && !n.has_inverse) {
                n.has_inverse = true;
                n.inverse_name = c.text;
                if (auto* l = c.attribute("Locale")) n.inverse_locale = *l;
            } else if (c.name == "Value") {
                if (c.children.size() > 1) fail(f, c.line, "<Value> holds more than one element");
                if (!c.children.empty()) n.value = &c.children[0];
            } else if (c.name == "Definition") {
                n.definition = &c;
            } else if (c.name == "References") {
                for (const XmlElement& r : c.children) parse_reference(f, n, r);
            }
        }
        n.write_mask = number_attr<uint32_t>(e.attribute("WriteMask"), 0, bad);
        n.event_notifier = number_attr<uint32_t>(e.attribute("EventNotifier"), 0, bad);
        n.access_level = number_attr<uint32_t>(e.attribute("AccessLevel"), 1, bad);
        n.user_access_level = number_attr<uint32_t>(e.attribute("UserAccessLevel"), 1, bad);
        n.value_rank = number_attr<int32_t>(e.attribute("ValueRank"), -1, bad);
        n.minimum_sampling_interval =
            number_attr<double>(e.attribute("MinimumSamplingInterval"), 0, bad);
        if (const std::string* dt = e.attribute("DataType")) n.data_type = node_id(f, e.line, *dt);
        if (const std::string* dims = e.attribute("ArrayDimensions")) {
            std::stringstream ss(*dims);
            std::string part;
            while (std::getline(ss, part, ','))
                n.array_dimensions.push_back(number_attr<uint32_t>(&part, 0, bad));
        }
        auto flag = [&](const char* name, bool fallback) {
            const std::string* v = e.attribute(name);
            if (!v) return fallback;
            if (*v == "true" || *v == "1") return true;
            if (*v == "false" || *v == "0") return false;
            bad(*v);
            return fallback;
        };
        n.is_abstract = flag("IsAbstract", false);
        n.historizing = flag("Historizing", false);
        n.symmetric = flag("Symmetric", false);
        n.executable = flag("Executable", true);
        const std::string key = n.id.key();
        if (index_.count(key)) fail(f, e.line, "node " + key + " is defined twice");
        index_[key] = nodes_.size();
        nodes_.push_back(std::move(n));
    }

    void parse_reference(std::size_t f, NodeV& n, const XmlElement& r) {
        const std::string* type = r.attribute("ReferenceType");
        if (r.name != "Reference" || !type) fail(f, r.line, "malformed <Reference>");
        RefV ref;
        ref.type = node_id(f, r.line, *type);
        NodeIdV target = node_id(f, r.line, std::string_view(r.text));
        const std::string* fwd = r.attribute("IsForward");
        bool forward = !fwd || *fwd == "true" || *fwd == "1";
        ref.source = forward ? n.id : target;
        ref.target = forward ? target : n.id;
        ref.file = f;
        ref.line = r.line;
        if (forward && ref.type.ns == 0 && ref.type.num == kHasTypeDefinition &&
            ref.type.kind == UAPLEX_ID_NUMERIC) {
            n.type_definition = target;
            return;
        }
        refs_.push_back(std::move(ref));
    }

    // --- DataTypes -----------------------------------------------------------------------

    const NodeV* node(const NodeIdV& id) const {
        auto it = index_.find(id.key());
        return it == index_.end() ? nullptr : &nodes_[it->second];
    }
    static bool is(const NodeIdV& id, uint32_t ns0) {
        return id.ns == 0 && id.kind == UAPLEX_ID_NUMERIC && id.num == ns0;
    }

    void build_types() {
        std::unordered_map<std::string, NodeIdV> base;
        std::unordered_map<std::string, std::pair<NodeIdV, NodeIdV>> enc;  // binary, xml
        for (const RefV& r : refs_) {
            if (is(r.type, kHasSubtype)) base[r.target.key()] = r.source;
            if (is(r.type, kHasEncoding)) {
                const NodeV* e = node(r.target);
                if (!e) continue;
                if (e->browse_name == "Default Binary") enc[r.source.key()].first = r.target;
                if (e->browse_name == "Default XML") enc[r.source.key()].second = r.target;
            }
        }
        std::vector<const NodeV*> pending;
        for (const NodeV& n : nodes_) {
            if (n.node_class != 64) continue;
            TypeDef t;
            t.id = n.id;
            t.name = n.browse_name;
            if (auto b = base.find(n.id.key()); b != base.end()) t.base = b->second;
            if (auto e = enc.find(n.id.key()); e != enc.end()) {
                t.binary_encoding = e->second.first;
                t.xml_encoding = e->second.second;
            }
            if (!n.definition) {
                pending.push_back(&n);
                continue;
            }
            const XmlElement& d = *n.definition;
            bool union_ = d.attribute("IsUnion") && *d.attribute("IsUnion") == "true";
            bool enumeration = false, structure = false;
            for (const XmlElement& fe : d.children) {
                if (fe.name != "Field") continue;
                FieldDef fd;
                auto badf = [&](const std::string& v) {
                    fail(n.file, fe.line, "invalid field attribute '" + v + "'");
                };
                const std::string* name = fe.attribute("Name");
                if (!name) fail(n.file, fe.line, "<Field> without Name");
                fd.name = *name;
                if (const std::string* v = fe.attribute("Value")) {
                    fd.value = number_attr<int64_t>(v, 0, badf);
                    enumeration = true;
                } else {
                    structure = true;
                }
                if (const std::string* dt = fe.attribute("DataType"))
                    fd.data_type = node_id(n.file, fe.line, *dt);
                else
                    fd.data_type = NodeIdV::numeric(0, 24);
                fd.value_rank = number_attr<int32_t>(fe.attribute("ValueRank"), -1, badf);
                fd.max_string_length =
                    number_attr<uint32_t>(fe.attribute("MaxStringLength"), 0, badf);
                fd.optional = fe.attribute("IsOptional") && *fe.attribute("IsOptional") == "true";
                if (const std::string* dims = fe.attribute("ArrayDimensions")) {
                    std::stringstream ss(*dims);
                    std::string part;
                    while (std::getline(ss, part, ','))
                        fd.array_dimensions.push_back(number_attr<uint32_t>(&part, 0, badf));
                }
                if (const XmlElement* dn = fe.child("DisplayName")) fd.display_name = dn->text;
                if (const XmlElement* ds = fe.child("Description")) {
                    fd.description = ds->text;
                    if (auto* l = ds->attribute("Locale")) fd.description_locale = *l;
                }
                t.fields.push_back(std::move(fd));
            }
            if (enumeration && structure)
                fail(n.file, d.line, "definition mixes enumeration and structure fields");
            if (enumeration ||
                (d.attribute("IsOptionSet") == nullptr && t.fields.empty() && is(t.base, 29))) {
                t.kind = TypeDef::Enumeration;
                definitions_[n.id.key()] = {NodeIdV::numeric(0, 123), enum_definition_body(t)};
            } else {
                t.kind = TypeDef::Structure;
                t.structure_type = union_ ? TypeDef::Union
                                   : std::any_of(t.fields.begin(), t.fields.end(),
                                                 [](const FieldDef& x) { return x.optional; })
                                       ? TypeDef::WithOptionalFields
                                       : TypeDef::Plain;
                definitions_[n.id.key()] = {NodeIdV::numeric(0, 122), structure_definition_body(t)};
            }
            types_.add(std::move(t));
        }
        // DataTypes without a definition are encoded as their supertype (a String subtype
        // as String); resolved until nothing changes, as files list them in any order.
        for (bool changed = true; changed;) {
            changed = false;
            for (auto it = pending.begin(); it != pending.end();) {
                auto b = base.find((*it)->id.key());
                const TypeDef* super = b == base.end() ? nullptr : types_.find(b->second);
                if (!super) {
                    ++it;
                    continue;
                }
                TypeDef t = *super;
                t.id = (*it)->id;
                t.name = (*it)->browse_name;
                t.base = b->second;
                if (auto e = enc.find(t.id.key()); e != enc.end()) {
                    t.binary_encoding = e->second.first;
                    t.xml_encoding = e->second.second;
                }
                types_.add(std::move(t));
                it = pending.erase(it);
                changed = true;
            }
        }
    }

    // --- adding ------------------------------------------------------------------------

    static uaplex_localizedtext text(const std::string& locale, const std::string& t) {
        uaplex_localizedtext l{};
        l.mask = UAPLEX_LOCALIZEDTEXT_TEXT | (locale.empty() ? 0 : UAPLEX_LOCALIZEDTEXT_LOCALE);
        l.locale = locale.empty() ? uaplex_string{-1, nullptr}
                                  : uaplex_string{int32_t(locale.size()), locale.data()};
        l.text = {int32_t(t.size()), t.data()};
        return l;
    }

    // Write callback of Variables whose DataType is a structure of the files: the body must
    // decode by the definition (the kernel already checked type, rank and access).
    static uaplex_status validate_write(void* user, const uaplex_nodeid*,
                                        const uaplex_datavalue* value) {
        auto* self = static_cast<const std::pair<NodeSetLoader*, const TypeDef*>*>(user);
        const TypeDef& t = *self->second;
        if (!(value->mask & UAPLEX_DATAVALUE_VALUE)) return UAPLEX_Good;
        const uaplex_variant& v = value->value;
        if ((v.encoding & UAPLEX_VARIANT_TYPE_MASK) == 0) return UAPLEX_Good;
        if ((v.encoding & UAPLEX_VARIANT_TYPE_MASK) != UAPLEX_TYPE_EXTENSIONOBJECT)
            return UAPLEX_BadTypeMismatch;
        const bool array = (v.encoding & UAPLEX_VARIANT_ARRAY) != 0;
        const int32_t n = array ? std::max<int32_t>(v.array_length, 0) : 1;
        const auto* eos = static_cast<const uaplex_extensionobject*>(v.value.pointer);
        if (n > 0 && !eos) return UAPLEX_BadTypeMismatch;
        const uaplex_nodeid enc = t.binary_encoding.raw();
        for (int32_t i = 0; i < n; ++i) {
            const uaplex_extensionobject& eo = eos[i];
            if (eo.encoding != UAPLEX_EXTENSIONOBJECT_BINARY || eo.object != nullptr ||
                eo.type_id.namespace_index != enc.namespace_index ||
                eo.type_id.identifier_type != enc.identifier_type ||
                (enc.identifier_type == UAPLEX_ID_NUMERIC &&
                 eo.type_id.identifier.numeric != enc.identifier.numeric))
                return UAPLEX_BadTypeMismatch;
            std::string why;
            if (!validate_structure(t, eo.body.data, std::size_t(std::max(eo.body.length, 0)),
                                    self->first->types_, why))
                return UAPLEX_BadDecodingError;
        }
        return UAPLEX_Good;
    }

    void add_everything() {
        // Values first: a value that does not convert fails before anything is added.
        Store store;
        std::vector<uaplex_datavalue> values(nodes_.size());
        std::vector<bool> has_value(nodes_.size());
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            const NodeV& n = nodes_[i];
            if (!n.value || (n.node_class != 2 && n.node_class != 16)) continue;
            ValueContext vc{
                types_, store, [&](uint32_t x) { return remap(n.file, n.value->line, x); },
                [&](std::string_view uri) { return register_uri(n.file, n.value->line, uri); }};
            try {
                values[i].mask = UAPLEX_DATAVALUE_VALUE;
                values[i].value = xml_to_variant(*n.value, vc);
            } catch (const ValueError& e) {
                fail(n.file, e.line ? e.line : n.value->line, e.what());
            }
            has_value[i] = true;
        }
        for (const RefV& r : refs_)
            if (r.type.ns != 0 && !node(r.type))
                fail(r.file, r.line, "reference type " + r.type.key() + " is not defined");

        AddressSpace as = space();
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            const NodeV& n = nodes_[i];
            uaplex_node_spec spec{};
            spec.hdr = UAPLEX_HEADER_INIT(uaplex_node_spec, UAPLEX_STYPE_NODE_SPEC);
            spec.node_class = n.node_class;
            uaplex_nodeid id = n.id.raw(), type_def = n.type_definition.raw(),
                          data_type = n.data_type.raw();
            uaplex_qualifiedname bn{n.browse_ns,
                                    {int32_t(n.browse_name.size()), n.browse_name.data()}};
            uaplex_localizedtext dn = text(n.display_locale, n.display),
                                 desc = text(n.description_locale, n.description),
                                 inverse = text(n.inverse_locale, n.inverse_name);
            spec.node_id = &id;
            spec.browse_name = &bn;
            if (n.has_display) spec.display_name = &dn;
            if (n.has_description) spec.description = &desc;
            if (!n.type_definition.null()) spec.type_definition = &type_def;
            spec.write_mask = n.write_mask;
            spec.event_notifier = n.event_notifier;
            spec.data_type = &data_type;
            spec.value_rank = n.value_rank;
            spec.array_dimensions_count = uint32_t(n.array_dimensions.size());
            spec.array_dimensions = n.array_dimensions.data();
            spec.access_level = n.access_level;
            spec.user_access_level = n.user_access_level;
            spec.minimum_sampling_interval = n.minimum_sampling_interval;
            spec.historizing = n.historizing ? 1u : 0u;
            if (has_value[i]) spec.value = &values[i];
            // Methods of a file have no implementation here: Call answers BadNotExecutable.
            if (n.node_class == 4) spec.method_flags = UAPLEX_METHOD_NOT_EXECUTABLE;
            spec.is_abstract = n.is_abstract;
            spec.symmetric = n.symmetric;
            if (n.has_inverse) spec.inverse_name = &inverse;
            uaplex_extensionobject definition{};
            if (auto d = definitions_.find(n.id.key()); d != definitions_.end()) {
                definition.type_id = d->second.first.raw();
                definition.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
                definition.body = {int32_t(d->second.second.size()),
                                   reinterpret_cast<const uint8_t*>(d->second.second.data())};
                spec.data_type_definition = &definition;
            }
            if (n.node_class == 2) {
                const TypeDef* t = types_.find(n.data_type);
                if (t && t->kind == TypeDef::Structure && !t->binary_encoding.null() &&
                    t->id.ns != 0) {
                    validators_.emplace_back(
                        std::make_unique<std::pair<NodeSetLoader*, const TypeDef*>>(this, t));
                    spec.write = &validate_write;
                    spec.user = validators_.back().get();
                }
            }
            if (uaplex_status st = as.add(spec); st != UAPLEX_Good)
                fail(n.file, n.line,
                     "node " + n.id.key() + " rejected by the kernel: 0x" + hex(st));
        }
        // Every node, ReferenceTypes included, is added above: a reference may use a type
        // the same file defines after it, or another loaded file defines.
        std::unordered_set<std::string> seen;
        std::size_t added = 0;
        for (const RefV& r : refs_) {
            std::string key = r.source.key() + "|" + r.type.key() + "|" + r.target.key();
            if (!seen.insert(key).second) continue;
            uaplex_nodeid s = r.source.raw(), t = r.type.raw(), g = r.target.raw();
            uaplex_status st = ctx_.api()->reference_add(ctx_.raw(), &s, &t, &g);
            if (st != UAPLEX_Good)
                fail(r.file, r.line, "reference " + key + " rejected by the kernel: 0x" + hex(st));
            ++added;
        }
        std::string names;
        for (const auto& f : files_) names += (names.empty() ? "" : ", ") + f->path;
        ctx_.info("loaded " + std::to_string(nodes_.size()) + " nodes and " +
                  std::to_string(added) + " references from " + names);
    }

    static std::string hex(uaplex_status st) {
        char b[12];
        std::snprintf(b, sizeof b, "%08X", st);
        return b;
    }

    std::vector<std::string> paths_;
    int64_t max_file_bytes_ = 64 << 20;
    std::vector<std::unique_ptr<FileV>> files_;
    std::map<std::string, std::string> models_;
    std::unordered_map<std::string, uint16_t> uri_index_;
    std::vector<NodeV> nodes_;
    std::unordered_map<std::string, std::size_t> index_;
    std::vector<RefV> refs_;
    TypeRegistry types_;
    std::unordered_map<std::string, std::pair<NodeIdV, std::string>> definitions_;
    std::vector<std::unique_ptr<std::pair<NodeSetLoader*, const TypeDef*>>> validators_;
};

}  // namespace

UAPLEX_PLUGIN(("nodeset", "1.0.0", "Loads NodeSet2 XML files (companion specifications)"),
              uaplex::sdk::NodeManagerFactory<NodeSetLoader>)
