#include "tables/trace_tables.h"

namespace tracecore {

const char* DeviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kExecutor: return "executor";
    case DeviceKind::kStream: return "stream";
    case DeviceKind::kStreamAll: return "stream_all";
    case DeviceKind::kMemcpy: return "memcpy";
    case DeviceKind::kOther: return "other";
  }
  return "other";
}

DeviceKind ClassifyDevice(std::string_view device) {
  const size_t stream = device.rfind("/stream:");
  if (stream != std::string_view::npos) {
    return device.substr(stream + 8) == "all" ? DeviceKind::kStreamAll : DeviceKind::kStream;
  }
  if (device.size() >= 7 && device.substr(device.size() - 7) == "/memcpy") {
    return DeviceKind::kMemcpy;
  }
  // Executor devices: "/job:x/replica:0/task:0/device:GPU:0", "/device:CPU:0", and the old
  // "/job:x/replica:0/task:0/gpu:0" spelling.
  if (device.find("/device:") != std::string_view::npos ||
      device.find("/job:") != std::string_view::npos) {
    return DeviceKind::kExecutor;
  }
  return DeviceKind::kOther;
}

}  // namespace tracecore
