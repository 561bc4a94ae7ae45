// A streaming DEFLATE decompressor (RFC 1951) for raw deflate, zlib (RFC 1950) and gzip
// (RFC 1952, multi-member) data, written from the RFCs.
//
// The caller feeds input and output space in pieces of any size; the Inflater stops when the
// input runs out or the output space is full and resumes exactly where it stopped. Every
// malformed input throws tracecore::TraceFormatError naming the offset of the compressed byte
// where the problem was found (counted from the stream's first byte over all calls) and what
// was expected, e.g. "byte offset 1234 of the gzip data: invalid distance code 31 (deflate's
// distance codes are 0-29)". gzip members are checked against their CRC-32 and ISIZE, zlib
// streams against their Adler-32.
//
// Two ways to give output space:
//   Inflate()         any buffer each call; the Inflater keeps the last 32 KiB of output in a
//                     window of its own for back-references (a 32 KiB copy at most per call).
//   InflateInPlace()  one growing buffer holding the whole output so far; back-references are
//                     read from it and nothing is copied. InflateAll (inflate_all.h) uses this.
// A stream uses one of the two from its first call to its end. After a throw the Inflater's
// state is undefined: Reset() it before decoding another stream.
//
// Typical loop (streaming a .gz file chunk by chunk):
//   Inflater inf;  // kAuto: gzip or zlib
//   for (;;) {
//     Inflater::Result r = inf.Inflate(in, in_size, out, out_size, /*input_ends=*/last_chunk);
//     consume(out, r.produced); in += r.consumed; in_size -= r.consumed;
//     if (r.status == Inflater::Status::kStreamEnd) break;
//     if (r.status == Inflater::Status::kNeedInput) { refill in/in_size, set last_chunk; }
//   }
//
// Memory: the Inflater allocates about 16 KiB of decoding tables when constructed and, in
// Inflate() mode, a 32 KiB window on first use; nothing is allocated per call or from sizes
// read in the input, and nothing recurses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tracecore {

enum class CompressionFormat : uint8_t {
  kAuto,  // gzip (starts 1f 8b) or zlib (a valid RFC 1950 header), told apart by the header
  kGzip,
  kZlib,
  kRaw,  // bare deflate blocks, no header or check value
};

// "gzip", "zlib", "deflate" (raw), or "gzip or zlib" (auto, before detection).
const char* CompressionFormatName(CompressionFormat format);

struct InflateOptions {
  CompressionFormat format = CompressionFormat::kAuto;
  // gzip: after a member, more input must be another member (zero bytes between or after
  // members are skipped, as gzip tools and Python's gzip module do). false: the stream ends
  // with the first member.
  bool multi_member = true;
  // What may follow the end of the stream. false: any byte there is an error ("trailing
  // data"). true: the stream ends before it; Result::consumed stops at the stream's last byte.
  bool allow_trailing_data = false;
};

class Inflater {
 public:
  enum class Status : uint8_t {
    kNeedInput,   // every input byte was used; call again with more (input_ends says if last)
    kNeedOutput,  // the output space is full; call again with more (and the unused input)
    kStreamEnd,   // the stream is complete (every gzip member with its trailer), and the
                  // input ended (input_ends) right after it unless trailing data is allowed
  };
  struct Result {
    size_t consumed = 0;  // input bytes used by this call (the caller passes the rest again)
    size_t produced = 0;  // output bytes written by this call
    Status status = Status::kNeedInput;
  };

  explicit Inflater(const InflateOptions& options = {});
  ~Inflater();
  Inflater(Inflater&&) noexcept;
  Inflater& operator=(Inflater&&) noexcept;

  // Decompresses from in[0, in_size) into out[0, out_size). `input_ends`: no input follows
  // this call's, so a stream that is not complete when it runs out is truncated (thrown).
  // May write anywhere in out[0, out_size): bytes past `produced` are unspecified.
  // After kStreamEnd, further calls return kStreamEnd with nothing consumed or produced
  // (or, when trailing data is not allowed, throw if given input). A complete stream whose
  // input has not ended yet returns kNeedInput: more members (gzip) or trailing data may come.
  Result Inflate(const uint8_t* in, size_t in_size, uint8_t* out, size_t out_size,
                 bool input_ends);

  // As Inflate, writing at out_base + out_pos, at most up to out_base + out_capacity, where
  // out_base[0, out_pos) holds everything this Inflater has produced, unchanged (the buffer
  // may have moved between calls: it is only read through out_base). `produced` counts from
  // out_pos. out_pos must equal total_out().
  Result InflateInPlace(const uint8_t* in, size_t in_size, uint8_t* out_base, size_t out_pos,
                        size_t out_capacity, bool input_ends);

  // Starts over on a new stream with the same options.
  void Reset();

  // kGzip/kZlib once the header is read in kAuto mode, else the format asked for.
  CompressionFormat format() const;
  uint64_t total_in() const;   // input bytes consumed since construction or Reset
  uint64_t total_out() const;  // output bytes produced since construction or Reset
  uint64_t members() const;    // complete gzip members (1 for a complete zlib/raw stream)
  bool finished() const;       // kStreamEnd was returned

  struct State;  // decoder state, defined in inflater.cc

 private:
  std::unique_ptr<State> state_;
};

}  // namespace tracecore
