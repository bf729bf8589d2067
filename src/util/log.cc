#include "util/log.h"

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <chrono>
#include <ctime>
#include <stdexcept>

namespace gpupack {
namespace {

constexpr std::array<std::string_view, 4> kNames = {"error", "warn", "info", "debug"};
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<std::FILE*> g_sink{nullptr};

void append_value(std::string& out, std::string_view v) {
  const bool quote = v.empty() || v.find_first_of(" \"=\n\t\\") != std::string_view::npos;
  if (!quote) {
    out += v;
    return;
  }
  out += '"';
  for (char c : v) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  out += '"';
}

}  // namespace

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }

void set_log_level(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return set_log_level(static_cast<LogLevel>(i));
  throw std::invalid_argument(fmt::format("unknown log level '{}' (known: error, warn, info, debug)", name));
}

LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }
bool log_enabled(LogLevel level) { return static_cast<int>(level) <= g_level.load(); }
std::string_view log_level_name(LogLevel level) { return kNames[static_cast<size_t>(level)]; }
void set_log_sink(std::FILE* sink) { g_sink.store(sink); }

std::string format_log_line(LogLevel level, std::string_view msg, const LogFields& fields) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::string out = fmt::format("ts={:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z level={} msg=", tm.tm_year + 1900,
                                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms, log_level_name(level));
  append_value(out, msg);
  for (const auto& [key, value] : fields) {
    out += ' ';
    out += key;
    out += '=';
    append_value(out, value);
  }
  return out;
}

void log_line(LogLevel level, std::string_view msg, const LogFields& fields) {
  if (!log_enabled(level)) return;
  std::string line = format_log_line(level, msg, fields);
  line += '\n';
  std::FILE* sink = g_sink.load();
  if (sink == nullptr) sink = stderr;
  std::fwrite(line.data(), 1, line.size(), sink);  // one write per line: no interleaving
  std::fflush(sink);
}

}  // namespace gpupack
