#include "importers/tfevents/record_reader.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "codec/crc32c.h"
#include "core/error.h"

namespace tracecore::tfevents {
namespace {

// TFRecord fields are little-endian.
uint64_t Load64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint32_t Load32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

uint32_t MaskedCrc(const uint8_t* p, size_t n) { return MaskCrc32c(Crc32c(p, n)); }

template <class... Args>
std::string Format(const char* format, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

}  // namespace

const char* ProblemName(RecordProblem problem) {
  switch (problem) {
    case RecordProblem::kLengthCrc:
      return "length CRC mismatch";
    case RecordProblem::kAbsurdLength:
      return "absurd record length";
    case RecordProblem::kDataCrc:
      return "data CRC mismatch";
    case RecordProblem::kTruncated:
      return "truncated record";
  }
  return "?";
}

RecordReader::RecordReader(std::string_view input, RecordReaderOptions options)
    : data_(reinterpret_cast<const uint8_t*>(input.data())),
      size_(input.size()),
      options_(options) {}

RecordReader::Framing RecordReader::Check(uint64_t at, uint64_t* length) const {
  const uint64_t left = size_ - at;
  if (left == 0) return Framing::kEnd;
  if (left < kHeaderBytes) return Framing::kHeaderCut;
  const uint8_t* p = data_ + at;
  const uint64_t n = Load64(p);
  if (MaskedCrc(p, 8) != Load32(p + 8)) return Framing::kLengthCrc;
  *length = n;
  const uint64_t after_header = left - kHeaderBytes;
  if (n > after_header || after_header - n < kFooterBytes) {
    return n > kMaxTailRecordBytes ? Framing::kAbsurdLength : Framing::kTruncated;
  }
  if (MaskedCrc(p + kHeaderBytes, n) != Load32(p + kHeaderBytes + n)) return Framing::kDataCrc;
  return Framing::kOk;
}

bool RecordReader::Next(Record* record) {
  for (;;) {
    uint64_t length = 0;
    const Framing framing = Check(pos_, &length);
    switch (framing) {
      case Framing::kOk:
        record->offset = pos_;
        record->data = std::string_view(reinterpret_cast<const char*>(data_ + pos_ + kHeaderBytes),
                                        static_cast<size_t>(length));
        pos_ += kHeaderBytes + length + kFooterBytes;
        ++records_;
        return true;
      case Framing::kEnd:
        return false;
      case Framing::kHeaderCut:
      case Framing::kTruncated:
        truncated_tail_ = true;
        tail_offset_ = pos_;
        tail_header_cut_ = framing == Framing::kHeaderCut;
        tail_length_ = length;
        pos_ = size_;
        return false;
      case Framing::kDataCrc:
        if (options_.strict) Throw(framing, pos_, length);
        Skip(pos_, kHeaderBytes + length + kFooterBytes, RecordProblem::kDataCrc);
        pos_ += kHeaderBytes + length + kFooterBytes;
        break;
      case Framing::kLengthCrc:
      case Framing::kAbsurdLength: {
        if (options_.strict) Throw(framing, pos_, length);
        const uint64_t next = Resync(pos_);
        Skip(pos_, next - pos_,
             framing == Framing::kLengthCrc ? RecordProblem::kLengthCrc
                                            : RecordProblem::kAbsurdLength);
        pos_ = next;
        break;
      }
    }
  }
}

uint64_t RecordReader::Resync(uint64_t from) {
  // A candidate needs a length whose CRC matches and, unless it is the tail, a payload whose CRC
  // matches too: a stray match of both is a 2^-64 event. Payload checks of candidates that fail
  // are bounded (crafted input could make them quadratic); past the budget a matching length
  // CRC is trusted, and a bad payload then costs one skipped record.
  for (uint64_t at = from + 1; size_ - at >= kHeaderBytes; ++at) {
    const uint8_t* p = data_ + at;
    if (MaskedCrc(p, 8) != Load32(p + 8)) continue;
    const uint64_t length = Load64(p);
    const uint64_t after_header = size_ - at - kHeaderBytes;
    if (length > after_header || after_header - length < kFooterBytes) {
      if (length <= kMaxTailRecordBytes) return at;  // a truncated tail
      continue;
    }
    if (resync_budget_ < length) return at;
    resync_budget_ -= length;
    if (MaskedCrc(p + kHeaderBytes, length) == Load32(p + kHeaderBytes + length)) return at;
  }
  return size_;
}

void RecordReader::Skip(uint64_t at, uint64_t bytes, RecordProblem problem) {
  ++skipped_records_;
  skipped_bytes_ += bytes;
  if (skipped_.size() < kMaxSkippedKept) skipped_.push_back({at, bytes, problem});
}

void RecordReader::Throw(Framing framing, uint64_t at, uint64_t length) const {
  const uint8_t* p = data_ + at;
  const uint64_t left = size_ - at - kHeaderBytes;
  switch (framing) {
    case Framing::kLengthCrc:
      throw TraceFormatError::AtByte(
          at, Format("record length CRC mismatch: length field %" PRIu64 " (0x%016" PRIx64
                     "), stored masked CRC 0x%08x, computed 0x%08x: the file "
                     "is corrupt from here, or not a TFRecord / event file",
                     Load64(p), Load64(p), Load32(p + 8), MaskedCrc(p, 8)));
    case Framing::kAbsurdLength:
      throw TraceFormatError::AtByte(
          at, Format("absurd record length %" PRIu64 ": past the end of the input (%" PRIu64
                     " bytes left after the record header) and beyond the 2 GiB an Event holds",
                     length, left));
    case Framing::kDataCrc:
      throw TraceFormatError::AtByte(
          at, Format("record data CRC mismatch: the %" PRIu64 "-byte payload at byte %" PRIu64
                     " has stored masked CRC 0x%08x, computed 0x%08x",
                     length, at + kHeaderBytes, Load32(p + kHeaderBytes + length),
                     MaskedCrc(p + kHeaderBytes, length)));
    default:
      throw TraceFormatError::AtByte(at, "record framing error");
  }
}

std::string RecordReader::TruncatedTailMessage() const {
  const uint64_t left = size_ - tail_offset_;
  if (tail_header_cut_) {
    return Format("truncated record at the end of the input: %" PRIu64
                  " bytes left, a record header needs %zu (a file still being written?)",
                  left, kHeaderBytes);
  }
  return Format("truncated record at the end of the input: %" PRIu64 " of the %" PRIu64
                " bytes of a record with a %" PRIu64 "-byte payload (a file still being written?)",
                left, tail_length_ + kHeaderBytes + kFooterBytes, tail_length_);
}

}  // namespace tracecore::tfevents
