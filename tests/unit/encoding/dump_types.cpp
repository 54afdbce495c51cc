// SPDX-License-Identifier: Apache-2.0
// Prints the generated structure descriptors, one field per line, for check_nodeset.py:
//   <type> <kind> <field> <fieldKind> <fieldTypeName> <isArray> <optionalBit>
// and the enumerations, one value per line:
//   = <enumeration> <width> <valueName> <value>
#include <uaplex/encoding/encoding.hpp>

#include <cstdio>
#include <string>

int main() {
    using namespace uaplex::enc;
    for (const DataType& t : allDataTypes()) {
        if (t.kind == TypeKind::BuiltIn) continue;
        if (t.kind == TypeKind::Enumeration) {
            for (const EnumValue& v : t.enumSpan())
                std::printf("= %s %d %s %lld\n", std::string(t.name).c_str(), int(t.builtinId),
                            std::string(v.name).c_str(), static_cast<long long>(v.value));
            continue;
        }
        std::string type(t.name);
        std::printf("%s %d - - - - -\n", type.c_str(), int(t.kind));
        for (const FieldDescriptor& f : t.fieldSpan()) {
            std::string field(f.name);
            std::string typeName = f.type ? std::string(f.type->name)
                                          : std::string(allDataTypes()[int(f.kind) - 1].name);
            std::printf("%s %d %s %d %s %d %d\n", type.c_str(), int(t.kind), field.c_str(),
                        int(f.kind), typeName.c_str(), f.isArray ? 1 : 0, int(f.optionalBit));
        }
    }
    return 0;
}
