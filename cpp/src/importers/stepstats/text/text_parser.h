// Protobuf text format importer for StepStats and RunMetadata dumps.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sink/trace_sink.h"

namespace tracecore {

// Thrown by a chunk parse whose boundaries are not record boundaries in the parser's state
// (an unusual layout): the caller falls back to one sequential parse.
struct SplitMismatch {};

struct TextChunkInfo {
  bool reached_split = false;
  char first_closer = 0;  // RunMetadata chunk that began inside step_stats: the closer it met
  char open_at_end = 0;   // the closer owed by a step_stats still open at the chunk's end
};

// Parses [begin, end) as a text-format StepStats or RunMetadata (decided by the first known
// top-level field) into `builder`, and sets the tables' kind. Throws TraceFormatError.
void ParseTextProto(const char* begin, const char* end, TraceSink& builder);

// The kind named by the first known top-level field (kUnknown if none). May throw.
TraceKind DetectTextKind(const char* begin, const char* end);

// Up to chunks-1 split points near equal fractions of the input, each the first byte of a
// device block line in TensorFlow's print layout. Candidates only: chunk parses verify them.
std::vector<const char*> FindTextSplits(const char* begin, const char* end, TraceKind kind,
                                        size_t chunks);

// Parses [start, stop_at) (stop_at null: to the end) of a text dump of `kind`.
void ParseTextChunk(const char* begin, const char* end, const char* start, const char* stop_at,
                    TraceKind kind, TraceSink& builder, TextChunkInfo* info);

}  // namespace tracecore
