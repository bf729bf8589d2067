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
// - Two passes for a well-formed body: simdjson's DOM parser validates the
//   whole text and gives the chosen keys and the node names, then one
//   On-Demand pass cuts out the Pod's text and each node item's text,
//   stepping over everything else unread. Any other body (or any
//   semantic error) is read by the thorough walk, which reads every value and
//   whose answer is the reference; parse_extender_args_thorough() is that walk
//   alone (tests and the fuzzer check that both agree).
// - Thread-safe (parsers per thread, reused up to 8 MB bodies). Cost: one
//   copy of the body plus two linear scans at simdjson speed.
#pragma once

#include <string_view>

#include "server/extender_wire.h"

namespace gpupack {

WireResult<ExtenderArgs> parse_extender_args_fast(std::string_view body);
WireResult<ExtenderArgs> parse_extender_args_thorough(std::string_view body);

}  // namespace gpupack
