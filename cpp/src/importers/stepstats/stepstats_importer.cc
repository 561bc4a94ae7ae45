#include "importers/stepstats/stepstats_importer.h"

#include <exception>
#include <optional>
#include <stdexcept>
#include <thread>

#include "containers/column_budget.h"
#include "core/error.h"
#include "core/parallel.h"
#include "importers/stepstats/binary/binary_parser.h"
#include "importers/stepstats/text/text_parser.h"
#include "sink/trace_merge.h"
#include "sink/trace_sink.h"

namespace tracecore {
namespace {

// Below this, a chunk is not worth a thread.
constexpr size_t kMinChunkBytes = size_t{4} << 20;
constexpr int kMaxThreads = 64;

// Runs fn(i) for i in [0, n) on n threads, one chunk each, and rethrows the first exception in
// chunk order. Every chunk's columns are charged to the caller's ColumnBudget.
template <class Fn>
void RunChunks(size_t n, const Fn& fn) {
  ColumnBudget* budget = ColumnBudget::Active();
  ForEachOnThreads(n, n, [&](size_t i, size_t) {
    ColumnBudget::Scope scope(budget);
    fn(i);
  });
}

// Releases pages of `file` (nothing when it is not mapped): for ReleaseBehind.
ReleaseBehind::Release FileRelease(const MappedFile& file) { return file.ConsumedRelease(); }

// Gives a builder that parses [begin, ...) of `file` the means to release consumed pages.
void ReleaseAsConsumed(const MappedFile& file, const char* begin, TraceSink& builder) {
  builder.SetReleaser(begin, FileRelease(file));
}

std::shared_ptr<TraceTables> NewTables(Encoding format, size_t bytes) {
  auto tables = std::make_shared<TraceTables>();
  tables->format = format;
  tables->input_bytes = bytes;
  return tables;
}

// `binary_kind`: StepStats or RunMetadata for binary input (text input names its own kind).
std::shared_ptr<TraceTables> ParseSequential(const MappedFile& file, Encoding format,
                                             TraceKind binary_kind) {
  auto tables = NewTables(format, file.size());
  TraceSink builder(*tables);
  builder.Reserve(file.data(), file.size(), format == Encoding::kText);
  ReleaseAsConsumed(file, file.data(), builder);
  if (format == Encoding::kText) {
    ParseTextProto(file.data(), file.data() + file.size(), builder);
  } else {
    const auto* bytes = reinterpret_cast<const uint8_t*>(file.data());
    ParseBinaryProto(bytes, file.size(), binary_kind, builder);
  }
  builder.Finish();
  return tables;
}

// Parses chunk by chunk on `threads` threads. Returns null when the input cannot be split or a
// split turns out not to fall on a record boundary; throws TraceFormatError for bad input.
std::shared_ptr<TraceTables> ParseParallel(const MappedFile& file, Encoding format,
                                           TraceKind binary_kind, int threads) {
  const char* begin = file.data();
  const char* end = begin + file.size();
  std::vector<std::unique_ptr<TraceTables>> parts;
  if (format == Encoding::kText) {
    const TraceKind kind = DetectTextKind(begin, end);
    if (kind == TraceKind::kUnknown) return nullptr;
    const std::vector<const char*> splits = FindTextSplits(begin, end, kind, static_cast<size_t>(threads));
    if (splits.empty()) return nullptr;
    const size_t n = splits.size() + 1;
    std::vector<TextChunkInfo> infos(n);
    parts.resize(n);
    bool mismatch = false;
    std::vector<char> chunk_mismatch(n, 0);
    RunChunks(n, [&](size_t i) {
      const char* start = i == 0 ? begin : splits[i - 1];
      const char* stop = i + 1 == n ? nullptr : splits[i];
      parts[i] = std::make_unique<TraceTables>();
      TraceSink builder(*parts[i], false);
      // The first chunk's columns become the merged ones: room for the whole input (address
      // space only until written), so the merge appends the others in place.
      builder.Reserve(start, i == 0 ? file.size() : static_cast<size_t>((stop ? stop : end) - start), true);
      ReleaseAsConsumed(file, start, builder);
      try {
        ParseTextChunk(begin, end, start, stop, kind, builder, &infos[i]);
      } catch (const SplitMismatch&) {
        chunk_mismatch[i] = 1;
      }
    });
    for (char m : chunk_mismatch) mismatch = mismatch || m;
    // A step_stats opened in one chunk must be closed by the same bracket in a later one.
    char open = 0;
    for (size_t i = 0; i < n && !mismatch; ++i) {
      if (infos[i].first_closer != 0) {
        if (open != 0 && infos[i].first_closer != open) mismatch = true;
        open = 0;
      }
      if (infos[i].open_at_end != 0) open = infos[i].open_at_end;
    }
    if (mismatch) return nullptr;
  } else {
    const auto* data = reinterpret_cast<const uint8_t*>(begin);
    const TraceKind kind = binary_kind;
    std::vector<BinaryUnit> units;
    bool any_device = false;
    if (!PlanBinaryUnits(data, file.size(), kind, &units, &any_device, FileRelease(file)) ||
        units.size() < 2) {
      return nullptr;
    }
    file.ReleaseConsumed(0, file.size());  // what the walk mapped last (see ParseBinaryEitherKind)
    if (!any_device) return nullptr;  // the sequential parse checks for known fields
    // Contiguous runs of units of about equal byte size.
    std::vector<size_t> cuts{0};
    const size_t target = file.size() / static_cast<size_t>(threads);
    size_t acc = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      acc += static_cast<size_t>(units[u].end - units[u].begin);
      if (acc >= target && cuts.size() < static_cast<size_t>(threads) && u + 1 < units.size()) {
        cuts.push_back(u + 1);
        acc = 0;
      }
    }
    cuts.push_back(units.size());
    const size_t n = cuts.size() - 1;
    if (n < 2) return nullptr;
    parts.resize(n);
    RunChunks(n, [&](size_t i) {
      parts[i] = std::make_unique<TraceTables>();
      TraceSink builder(*parts[i], false);
      const BinaryUnit* first = units.data() + cuts[i];
      const BinaryUnit* last = units.data() + cuts[i + 1];
      builder.Reserve(reinterpret_cast<const char*>(first->begin),
                      i == 0 ? file.size() : static_cast<size_t>(last[-1].end - first->begin), false);  // as above
      ReleaseAsConsumed(file, reinterpret_cast<const char*>(first->begin), builder);
      ParseBinaryUnits(data, first, last, kind, builder);
    });
  }
  auto tables = NewTables(format, file.size());
  MergeTables(parts, tables.get());
  tables->threads_used = static_cast<int>(parts.size());
  TraceSink(*tables).Finish();
  return tables;
}


// A binary dump carries no type: the same bytes may be a valid StepStats and a valid
// RunMetadata. The kind guessed from the wire structure (DetectBinaryKind) is parsed first. A
// guess that fails on a bad value (a string that is not UTF-8) is reported as it is; unless it
// is sound with no unknown fields, the other kind is read too. A reading is sound when it
// parses, or fails only on a value out of range (a time whose nanoseconds overflow int64:
// protobuf reads it, a column cannot hold it; its unknown fields are then counted by a parse
// that lets such values through). The sound reading with fewer unknown fields wins, ties going
// to the guess, and a winner that failed on a value out of range reports it. With no sound
// reading, the guess's error is reported, unless the other kind failed on a bad value (its
// structure sound up to there) and the guess did not.
//
// The guess is first taken from the start of the dump only (DetectBinaryKind's `complete`
// false). A RunMetadata guess is the whole walk's too, and so is a StepStats guess whose reading
// is sound with no unknown fields: it has no top-level field but 1. Otherwise the whole walk
// makes the guess, as the rule above says, before any reading is chosen.
template <class Parse>
std::shared_ptr<TraceTables> ParseBinaryEitherKind(const MappedFile& file, const Parse& parse) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(file.data());
  bool complete = false;
  TraceKind guess = DetectBinaryKind(bytes, file.size(), FileRelease(file), &complete);
  // That walk maps nearly every page it passes (the kernel maps a page's neighbours along with
  // it), and unmapped them as it went, 32 MB at a time; unmap the rest until the parse reaches
  // them, or they would stay resident on top of the columns.
  file.ReleaseConsumed(0, file.size());
  struct Reading {
    std::shared_ptr<TraceTables> tables;
    std::exception_ptr error;
    bool bad_value = false;
    std::optional<uint64_t> unknown_fields;  // set when the reading is sound
  };
  const auto read = [&](TraceKind kind) {
    Reading r;
    try {
      r.tables = parse(kind);
      r.unknown_fields = r.tables->unknown_fields;
    } catch (const TraceFormatError& e) {
      if (file.ShrankSinceOpen()) throw;
      r.error = std::current_exception();
      r.bad_value = e.bad_value;
      if (e.out_of_range) {
        try {
          r.unknown_fields = CountBinaryUnknownFields(bytes, file.size(), kind, FileRelease(file));
        } catch (const TraceFormatError&) {
          if (file.ShrankSinceOpen()) throw;
        }
      }
    }
    return r;
  };
  const auto other = [](TraceKind kind) {
    return kind == TraceKind::kStepStats ? TraceKind::kRunMetadata : TraceKind::kStepStats;
  };
  Reading first = read(guess);
  std::optional<Reading> second;
  if (!complete && guess == TraceKind::kStepStats && first.unknown_fields != 0u) {
    const TraceKind whole = DetectBinaryKind(bytes, file.size(), FileRelease(file), nullptr);
    file.ReleaseConsumed(0, file.size());
    if (whole != guess) {  // the reading already made is the other one
      second = std::move(first);
      guess = whole;
      first = read(guess);
    }
  }
  if (first.unknown_fields == 0u) {
    if (first.tables) return first.tables;
    std::rethrow_exception(first.error);  // no other reading can fit better
  }
  // A guess whose structure held up to a bad value other than one out of range (a string that
  // is not UTF-8) is reported as it is: more use than another reading of the same bytes.
  if (first.bad_value && !first.unknown_fields) std::rethrow_exception(first.error);
  if (!second) second = read(other(guess));
  const Reading* pick = &first;
  if (first.unknown_fields) {
    if (second->unknown_fields && *second->unknown_fields < *first.unknown_fields) pick = &*second;
  } else if (second->unknown_fields || (second->bad_value && !first.bad_value)) {
    pick = &*second;
  }
  if (pick->tables) return pick->tables;
  std::rethrow_exception(pick->error);
}

}  // namespace

int ParseThreads(int threads, size_t bytes) {
  if (threads < 0) throw std::invalid_argument("threads must be >= 0");
  if (threads == 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  if (threads < 1) threads = 1;
  if (threads > kMaxThreads) threads = kMaxThreads;
  const size_t by_size = bytes / kMinChunkBytes;
  if (static_cast<size_t>(threads) > by_size) threads = static_cast<int>(by_size < 1 ? 1 : by_size);
  return threads;
}

std::shared_ptr<TraceTables> ReadStepStats(const MappedFile& file, Encoding encoding, int threads) {
  threads = ParseThreads(threads, file.size());
  const auto parse = [&](TraceKind binary_kind) {
    std::shared_ptr<TraceTables> tables;
    if (threads > 1) {
      try {
        tables = ParseParallel(file, encoding, binary_kind, threads);
      } catch (const TraceFormatError&) {
        if (file.ShrankSinceOpen()) throw;
        // Bad input: the sequential parse reports the first error in file order.
        tables = nullptr;
      }
    }
    if (!tables) tables = ParseSequential(file, encoding, binary_kind);
    return tables;
  };
  return encoding == Encoding::kText ? parse(TraceKind::kUnknown) : ParseBinaryEitherKind(file, parse);
}

}  // namespace tracecore
