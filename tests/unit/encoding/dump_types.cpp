// Prints the generated structure descriptors, one field per line, for check_nodeset.py:
//   <type> <kind> <field> <fieldKind> <fieldTypeName> <isArray> <optionalBit>
#include <uaplex/encoding/encoding.hpp>

#include <cstdio>
#include <string>

int main() {
    using namespace uaplex::enc;
    for (const DataType& t : allDataTypes()) {
        if (t.kind == TypeKind::BuiltIn || t.kind == TypeKind::Enumeration) continue;
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
