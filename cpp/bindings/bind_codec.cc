// Binds the DEFLATE decompressor (cpp/src/codec) for tests and benchmarks: inflate() returns the
// owned output buffer without copying it (buffer protocol), inflate_stream() drives the
// streaming Inflater in pieces of given sizes. The GIL is released while decompressing.
// crc32c() is not only for tests: it is the content checksum of the cache and the Parquet export
// (python/tracecore/stored.py), over any buffer in place.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "bindings.h"
#include "codec/crc32c.h"
#include "codec/inflate_all.h"
#include "codec/inflater.h"

namespace py = pybind11;

namespace tracecore::bindings {
namespace {

InflateOptions Options(const std::string& format, bool multi_member, bool allow_trailing_data) {
  InflateOptions o;
  if (format == "auto") {
    o.format = CompressionFormat::kAuto;
  } else if (format == "gzip") {
    o.format = CompressionFormat::kGzip;
  } else if (format == "zlib") {
    o.format = CompressionFormat::kZlib;
  } else if (format == "raw" || format == "deflate") {
    o.format = CompressionFormat::kRaw;
  } else {
    throw py::value_error("format must be 'auto', 'gzip', 'zlib' or 'raw', not '" + format + "'");
  }
  o.multi_member = multi_member;
  o.allow_trailing_data = allow_trailing_data;
  return o;
}

struct Input {
  explicit Input(const py::buffer& b) : info(b.request()) {
    if (info.ndim > 1 || (info.ndim == 1 && info.strides[0] != info.itemsize)) {
      throw py::value_error("the data must be a contiguous buffer");
    }
  }
  const uint8_t* data() const { return static_cast<const uint8_t*>(info.ptr); }
  size_t size() const { return static_cast<size_t>(info.size * info.itemsize); }
  py::buffer_info info;
};

}  // namespace

void RegisterCodec(py::module_& m) {
  m.def(
      "crc32c",
      [](const py::buffer& data, uint32_t seed) {
        const Input in(data);  // a view of the caller's bytes: nothing is copied
        py::gil_scoped_release release;
        return Crc32cExtend(seed, in.data(), in.size());
      },
      py::arg("data"), py::arg("seed") = 0,
      "CRC-32C (Castagnoli) of a contiguous buffer, read in place with the GIL released; "
      "`seed`: the CRC of the bytes before these (crc32c(b, crc32c(a)) == crc32c(a + b)).");

  py::class_<InflatedBuffer>(m, "InflatedBuffer", py::buffer_protocol(),
                             "Decompressed bytes in an owned memory mapping (read-only buffer).")
      .def_buffer([](InflatedBuffer& b) {
        static uint8_t empty = 0;  // a zero-length view still needs an address
        return py::buffer_info(b.size() ? b.mutable_data() : &empty, 1,
                               py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(b.size())}, {1}, true);
      })
      .def("__len__", &InflatedBuffer::size);

  m.def(
      "inflate",
      [](const py::buffer& data, std::optional<uint64_t> max_output_bytes,
         std::optional<double> max_ratio, const std::string& format, bool multi_member,
         bool allow_trailing_data) {
        const Input in(data);
        InflateLimits limits;
        if (max_output_bytes) limits.max_output_bytes = *max_output_bytes;
        if (max_ratio) limits.max_ratio = *max_ratio;
        limits.raise_hint = "raise max_output_bytes / max_ratio to allow more";
        const InflateOptions options = Options(format, multi_member, allow_trailing_data);
        py::gil_scoped_release release;
        return InflateAll(in.data(), in.size(), limits, options);
      },
      py::arg("data"), py::arg("max_output_bytes") = py::none(), py::kw_only(),
      py::arg("max_ratio") = py::none(), py::arg("format") = "auto",
      py::arg("multi_member") = true, py::arg("allow_trailing_data") = false,
      "Decompresses a whole gzip / zlib / raw deflate input (tracecore::InflateAll).");

  m.def(
      "inflate_stream",
      [](const py::buffer& data, const std::string& format, size_t in_chunk, size_t out_chunk,
         bool in_place, bool multi_member, bool allow_trailing_data) {
        if (in_chunk == 0 || out_chunk == 0) throw py::value_error("chunk sizes must be > 0");
        const Input in(data);
        Inflater inflater(Options(format, multi_member, allow_trailing_data));
        std::string out;
        {
          py::gil_scoped_release release;
          size_t pos = 0;
          for (;;) {
            const size_t n = std::min(in_chunk, in.size() - pos);
            const bool last = pos + n == in.size();
            Inflater::Result r;
            const size_t used = out.size();
            if (in_place) {
              out.resize(used + out_chunk);
              r = inflater.InflateInPlace(in.data() + pos, n, reinterpret_cast<uint8_t*>(&out[0]),
                                          used, used + out_chunk, last);
            } else {
              std::string piece(out_chunk, '\0');
              r = inflater.Inflate(in.data() + pos, n, reinterpret_cast<uint8_t*>(&piece[0]),
                                   out_chunk, last);
              out.append(piece, 0, r.produced);
            }
            if (in_place) out.resize(used + r.produced);
            pos += r.consumed;
            if (r.status == Inflater::Status::kStreamEnd) break;
            if (r.status == Inflater::Status::kNeedInput && r.consumed != n) {
              throw std::logic_error("Inflater: kNeedInput with input left");
            }
            if (r.consumed == 0 && r.produced == 0) {
              throw std::logic_error("Inflater: a call made no progress");
            }
          }
        }
        return py::make_tuple(py::bytes(out), inflater.total_in());
      },
      py::arg("data"), py::arg("format") = "auto", py::arg("in_chunk") = size_t{1} << 20,
      py::arg("out_chunk") = size_t{1} << 20, py::arg("in_place") = false,
      py::arg("multi_member") = true, py::arg("allow_trailing_data") = false,
      "Test helper: decompresses through the streaming Inflater, feeding `in_chunk` input bytes "
      "and `out_chunk` bytes of output space per call; returns (output, stream length).");
}

}  // namespace tracecore::bindings
