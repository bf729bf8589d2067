// Fast reader of the extender's filter / prioritize request (ExtenderArgs)
// for large node lists, on simdjson.
//
// Contract:
// - parse_extender_args_fast(body) accepts and rejects the same bodies as
//   parse_extender_args() (the nlohmann reference in extender_wire.h) and
//   gives the same meaning: the same Pod object, the same candidate names in
//   order, and the same node objects. Key matching is the reference's: an
//   exact key first, else one differing only in case; the last duplicate wins.
// - Full Nodes form: instead of `nodes`, it fills `node_texts` with each
//   item's metadata.name and its exact JSON text (views into `source`, which
//   the result owns), so that filter replies can splice the text back without
//   re-serialising. NodeNames form: `node_names` as the reference does.
// - Every value of the body is checked (strings, numbers, literals, nesting
//   up to kMaxJsonDepth, UTF-8), so malformed JSON anywhere is a WireError
//   naming the JSON path where it was found; never throws, never crashes on
//   any input.
// - A body that ends with the same bytes as the last one read quickly, from
//   its first field after the Pod (a scheduler sends the same node list call
//   after call, the Pod first), is read by reading its head alone: the names
//   and item texts are the last body's (that one body is kept, not copied).
// - Otherwise one On-Demand pass for a body of the common shape: the chosen
//   keys, the Pod's text, each node item's text, the NodeNames. What it
//   steps over is validated apart: a node item equal to the last body's item
//   in the same place, or to an item read whole before under the same name
//   (a process-wide memo, at most 64 MiB of texts), is known valid and keeps
//   the name read then; a new or changed item is read whole, and the Pod and
//   every other value validated, by simdjson's DOM parser. Any other body
//   (or any semantic error) is read by the thorough walk, which reads every
//   value and whose answer is the reference; parse_extender_args_thorough()
//   is that walk alone (tests and the fuzzer check that both agree).
// - Thread-safe (parsers per thread, reused up to 8 MB bodies; the kept body
//   and the memo behind mutexes). Cost: a memcmp of the tail for a repeated
//   list, else one structural scan at simdjson speed plus a memcmp per known
//   node item; the std::string&& form takes the body over without a copy
//   when its capacity leaves kExtenderBodyPadding spare bytes.
#pragma once

#include <cstdint>
#include <string_view>

#include "server/extender_wire.h"

namespace gpupack {

// How bodies were read since the process started: the repeated tail, one
// quick pass, or the thorough walk (malformed or unusual bodies).
struct ExtenderArgsReads {
  uint64_t repeated = 0, quick = 0, thorough = 0;
};
ExtenderArgsReads extender_args_reads();

// Spare capacity a body needs for the reader to take it over uncopied.
constexpr size_t kExtenderBodyPadding = 64;

WireResult<ExtenderArgs> parse_extender_args_fast(std::string&& body);
WireResult<ExtenderArgs> parse_extender_args_fast(std::string_view body);
inline WireResult<ExtenderArgs> parse_extender_args_fast(const char* body) {
  return parse_extender_args_fast(std::string_view(body));
}
WireResult<ExtenderArgs> parse_extender_args_thorough(std::string_view body);

}  // namespace gpupack
