// TensorFlow's DataType enum: names for the dtype column, and name lookup for the text parser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tracecore {

// "DT_FLOAT", "DT_FLOAT_REF" (value + 100), or "DT_<n>" for values TensorFlow does not define.
std::string DataTypeName(int32_t value);

// Parses an enum name ("DT_HALF", "DT_INT32_REF"); false if the name is not a DataType.
bool DataTypeFromName(std::string_view name, int32_t* value);

}  // namespace tracecore
