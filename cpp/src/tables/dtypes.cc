#include "tables/dtypes.h"

namespace tracecore {
namespace {

// Index = enum value, from tensorflow/core/framework/types.proto.
constexpr const char* kNames[] = {
    "DT_INVALID",   "DT_FLOAT",          "DT_DOUBLE",          "DT_INT32",
    "DT_UINT8",     "DT_INT16",          "DT_INT8",            "DT_STRING",
    "DT_COMPLEX64", "DT_INT64",          "DT_BOOL",            "DT_QINT8",
    "DT_QUINT8",    "DT_QINT32",         "DT_BFLOAT16",        "DT_QINT16",
    "DT_QUINT16",   "DT_UINT16",         "DT_COMPLEX128",      "DT_HALF",
    "DT_RESOURCE",  "DT_VARIANT",        "DT_UINT32",          "DT_UINT64",
    "DT_FLOAT8_E5M2", "DT_FLOAT8_E4M3FN", "DT_FLOAT8_E4M3FNUZ", "DT_FLOAT8_E4M3B11FNUZ",
    "DT_FLOAT8_E5M2FNUZ", "DT_INT4",     "DT_UINT4",
};
constexpr int32_t kCount = static_cast<int32_t>(sizeof(kNames) / sizeof(kNames[0]));

}  // namespace

std::string DataTypeName(int32_t value) {
  if (value >= 0 && value < kCount) return kNames[value];
  // DT_INVALID has no _REF variant.
  if (value > 100 && value < 100 + kCount) return std::string(kNames[value - 100]) + "_REF";
  return "DT_" + std::to_string(value);
}

bool DataTypeFromName(std::string_view name, int32_t* value) {
  int32_t offset = 0;
  if (name.size() > 4 && name.substr(name.size() - 4) == "_REF") {
    name.remove_suffix(4);
    offset = 100;
  }
  for (int32_t i = offset == 100 ? 1 : 0; i < kCount; ++i) {
    if (name == kNames[i]) {
      *value = i + offset;
      return true;
    }
  }
  return false;
}

}  // namespace tracecore
