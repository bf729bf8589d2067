#include "alloc/trace_io.h"

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "util/files.h"
#include "util/nesting.h"
#include "util/strings.h"

namespace gpupack {
namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error(msg); }

std::string read_all(const std::string& path) { return read_file_bounded(path); }

template <typename T>
bool parse_int(std::string_view s, T& out) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && ptr == s.data() + s.size();
}

nlohmann::json parse_json_file(const std::string& path) {
  std::string text = read_all(path);
  check_json_depth(text, path);  // a deeper tree would be recursed into
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(fmt::format("{}: invalid JSON: {} (near: '{}')", path, error_text(e.what()),
                     excerpt_around(text, e.byte > 0 ? e.byte - 1 : 0)));
  } catch (const nlohmann::json::exception& e) {  // out_of_range for numbers too large
    fail(fmt::format("{}: invalid JSON: {}", path, error_text(e.what())));
  }
}

}  // namespace

void finalize_trace(Trace& trace, const std::string& source) {
  std::unordered_map<std::uint64_t, std::uint32_t> live;
  live.reserve(1024);
  std::vector<std::uint32_t> free_slots;
  std::uint32_t next_slot = 0;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    TraceEvent& e = trace.events[i];
    if (e.action == TraceAction::kAlloc) {
      if (e.size_bytes == 0) fail(fmt::format("{}: event {}: alloc of id {} has size_bytes 0", source, i, e.id));
      std::uint32_t slot;
      if (!free_slots.empty()) {
        slot = free_slots.back();
        free_slots.pop_back();
      } else {
        slot = next_slot++;
      }
      auto [it, inserted] = live.emplace(e.id, slot);
      if (!inserted) fail(fmt::format("{}: event {}: id {} allocated again while still live", source, i, e.id));
      e.slot = slot;
    } else {
      auto it = live.find(e.id);
      if (it == live.end()) fail(fmt::format("{}: event {}: free of id {} that is not live", source, i, e.id));
      e.slot = it->second;
      free_slots.push_back(it->second);
      live.erase(it);
    }
  }
  trace.slots = next_slot;
}

Trace read_trace_csv(const std::string& path) {
  const std::string text = read_all(path);
  Trace trace;
  std::string_view rest(text);
  std::size_t line_no = 0;
  bool header_seen = false;
  std::vector<std::size_t> lines;  // line number of each event, for errors
  while (!rest.empty()) {
    std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    ++line_no;
    line = trim(line, " \t\r");
    if (line.empty() || line.front() == '#') continue;
    std::string_view fields[5];
    int n = 0;
    std::string_view cur = line;
    while (true) {
      std::size_t comma = cur.find(',');
      if (n == 5) fail(fmt::format("{}:{}: expected 5 fields (time_us,action,id,size_bytes,stream)", path, line_no));
      fields[n++] = trim(cur.substr(0, comma), " \t\r");
      if (comma == std::string_view::npos) break;
      cur = cur.substr(comma + 1);
    }
    if (!header_seen) {
      if (n != 5 || fields[0] != "time_us" || fields[1] != "action" || fields[2] != "id" || fields[3] != "size_bytes" ||
          fields[4] != "stream") {
        fail(fmt::format("{}:{}: expected the header 'time_us,action,id,size_bytes,stream'", path, line_no));
      }
      header_seen = true;
      continue;
    }
    if (n != 5)
      fail(fmt::format("{}:{}: expected 5 fields (time_us,action,id,size_bytes,stream), got {}", path, line_no, n));
    TraceEvent e;
    if (!fields[0].empty() && !parse_int(fields[0], e.time_us)) {
      fail(fmt::format("{}:{}: field time_us: '{}' is not an integer", path, line_no, excerpt(fields[0])));
    }
    if (fields[1] == "alloc")
      e.action = TraceAction::kAlloc;
    else if (fields[1] == "free")
      e.action = TraceAction::kFree;
    else
      fail(fmt::format("{}:{}: field action: '{}' is not alloc or free", path, line_no, excerpt(fields[1])));
    if (!parse_int(fields[2], e.id))
      fail(fmt::format("{}:{}: field id: '{}' is not a non-negative integer", path, line_no, excerpt(fields[2])));
    if (e.action == TraceAction::kAlloc) {
      if (!parse_int(fields[3], e.size_bytes) || e.size_bytes == 0) {
        fail(fmt::format("{}:{}: field size_bytes: '{}' is not a positive integer", path, line_no, excerpt(fields[3])));
      }
    }
    if (!fields[4].empty() && !parse_int(fields[4], e.stream)) {
      fail(fmt::format("{}:{}: field stream: '{}' is not an integer", path, line_no, excerpt(fields[4])));
    }
    trace.events.push_back(e);
    lines.push_back(line_no);
  }
  if (!header_seen) fail(fmt::format("{}: empty trace (no header line)", path));
  try {
    finalize_trace(trace, path);
  } catch (const std::runtime_error& err) {
    // Re-point the error at the line instead of the event index.
    std::string msg = err.what();
    const std::string tag = path + ": event ";
    if (msg.rfind(tag, 0) == 0) {
      std::size_t idx = std::stoul(msg.substr(tag.size()));
      std::size_t colon = msg.find(':', tag.size());
      fail(fmt::format("{}:{}{}", path, lines.at(idx), msg.substr(colon)));
    }
    throw;
  }
  return trace;
}

Trace read_snapshot_json(const std::string& path, int device) { return read_trace_json(path, device); }

namespace {

Trace snapshot_events(const nlohmann::json& doc, const std::string& path, int device) {
  const auto& traces = doc.at("device_traces");
  if (!traces.is_array()) fail(fmt::format("{}: device_traces is not a list", path));
  if (device < 0 || static_cast<std::size_t>(device) >= traces.size()) {
    fail(fmt::format("{}: device {} not in device_traces ({} devices)", path, device, traces.size()));
  }
  Trace trace;
  std::unordered_map<std::uint64_t, bool> live;
  const auto& list = traces[static_cast<std::size_t>(device)];
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& entry = list[i];
    auto where = [&](const char* field) {
      return fmt::format("{}: device_traces[{}][{}] field {}", path, device, i, field);
    };
    if (!entry.is_object() || !entry.contains("action") || !entry["action"].is_string()) {
      fail(where("action") + ": missing or not a string");
    }
    const std::string action = entry["action"].get<std::string>();
    const bool is_alloc = action == "alloc";
    const bool is_free = action == "free_completed" || action == "free";
    if (!is_alloc && !is_free) {
      ++trace.skipped_entries;
      continue;
    }
    TraceEvent e;
    e.action = is_alloc ? TraceAction::kAlloc : TraceAction::kFree;
    if (!entry.contains("addr") || !entry["addr"].is_number_integer())
      fail(where("addr") + ": missing or not an integer");
    e.id = entry["addr"].get<std::uint64_t>();
    if (entry.contains("stream")) {
      if (!entry["stream"].is_number_integer()) fail(where("stream") + ": not an integer");
      e.stream = static_cast<std::int32_t>(entry["stream"].get<std::int64_t>());
    }
    if (entry.contains("time_us") && entry["time_us"].is_number()) e.time_us = entry["time_us"].get<std::int64_t>();
    if (is_alloc) {
      if (!entry.contains("size") || !entry["size"].is_number_unsigned() || entry["size"].get<std::uint64_t>() == 0) {
        fail(where("size") + ": missing or not a positive integer");
      }
      e.size_bytes = entry["size"].get<std::uint64_t>();
      if (live.count(e.id) != 0) {
        fail(fmt::format("{}: device_traces[{}][{}]: alloc at address {} that is still live", path, device, i, e.id));
      }
      live[e.id] = true;
    } else {
      if (live.erase(e.id) == 0) {
        ++trace.skipped_frees;  // allocated before the trace began
        continue;
      }
    }
    trace.events.push_back(e);
  }
  finalize_trace(trace, path);
  return trace;
}

}  // namespace

Trace read_trace_json(const std::string& path, int device) {
  const nlohmann::json doc = parse_json_file(path);
  if (doc.is_object() && doc.contains("device_traces")) return snapshot_events(doc, path, device);
  if (!doc.is_object() || !doc.contains("events") || !doc["events"].is_array()) {
    fail(fmt::format("{}: expected an object with \"events\" (a list) or \"device_traces\"", path));
  }
  Trace trace;
  const auto& events = doc["events"];
  trace.events.reserve(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& ev = events[i];
    auto where = [&](const char* field) { return fmt::format("{}: events[{}] field {}", path, i, field); };
    if (!ev.is_object()) fail(fmt::format("{}: events[{}] is not an object", path, i));
    TraceEvent e;
    const auto action = ev.value("action", std::string{});
    if (action == "alloc")
      e.action = TraceAction::kAlloc;
    else if (action == "free")
      e.action = TraceAction::kFree;
    else
      fail(where("action") + fmt::format(": '{}' is not alloc or free", excerpt(action)));
    if (!ev.contains("id") || !ev["id"].is_number_unsigned())
      fail(where("id") + ": missing or not a non-negative integer");
    e.id = ev["id"].get<std::uint64_t>();
    if (ev.contains("time_us")) {
      if (!ev["time_us"].is_number_integer()) fail(where("time_us") + ": not an integer");
      e.time_us = ev["time_us"].get<std::int64_t>();
    }
    if (ev.contains("stream")) {
      if (!ev["stream"].is_number_integer()) fail(where("stream") + ": not an integer");
      e.stream = static_cast<std::int32_t>(ev["stream"].get<std::int64_t>());
    }
    if (e.action == TraceAction::kAlloc) {
      if (!ev.contains("size_bytes") || !ev["size_bytes"].is_number_unsigned() ||
          ev["size_bytes"].get<std::uint64_t>() == 0) {
        fail(where("size_bytes") + ": missing or not a positive integer");
      }
      e.size_bytes = ev["size_bytes"].get<std::uint64_t>();
    }
    trace.events.push_back(e);
  }
  finalize_trace(trace, path);
  return trace;
}

Trace read_trace_file(const std::string& path, int device) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0) return read_trace_csv(path);
  return read_trace_json(path, device);
}

void write_trace_csv(const Trace& trace, const std::string& path) {
  std::ofstream out(path);
  if (!out) fail(fmt::format("{}: cannot open for writing", path));
  out << "time_us,action,id,size_bytes,stream\n";
  std::string buf;
  for (const TraceEvent& e : trace.events) {
    buf.clear();
    fmt::format_to(std::back_inserter(buf), "{},{},{},{},{}\n", e.time_us,
                   e.action == TraceAction::kAlloc ? "alloc" : "free", e.id,
                   e.action == TraceAction::kAlloc ? e.size_bytes : 0, e.stream);
    out << buf;
  }
  if (!out) fail(fmt::format("{}: write failed", path));
}

}  // namespace gpupack
