// Operator logs: one line per event on stderr, with a UTC timestamp and a
// level, in logfmt (`ts=2026-12-01T08:00:00.123Z level=info msg="..." k=v`)
// so that log collectors split the fields.
//
// Contract:
// - Levels, least to most verbose: error, warn, info (default), debug. A
//   line above the current level is dropped before it is formatted
//   (log_enabled() lets a caller skip building an expensive message).
// - set_log_level() takes a level name and throws std::invalid_argument
//   naming the known levels for anything else.
// - Each line is written with one write to the sink (stderr by default), so
//   lines from several threads never interleave. Thread-safe.
// - Values are quoted when they contain a space, a quote or '=', with quotes
//   and backslashes escaped, and newlines written as \n.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpupack {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

void set_log_level(std::string_view name);
void set_log_level(LogLevel level);
LogLevel log_level();
bool log_enabled(LogLevel level);
std::string_view log_level_name(LogLevel level);

// Where lines go (stderr when null); for tests.
void set_log_sink(std::FILE* sink);

using LogFields = std::vector<std::pair<std::string, std::string>>;

// The line as it would be written, without the trailing newline.
std::string format_log_line(LogLevel level, std::string_view msg, const LogFields& fields);
void log_line(LogLevel level, std::string_view msg, const LogFields& fields = {});

inline void log_error(std::string_view msg, const LogFields& fields = {}) { log_line(LogLevel::kError, msg, fields); }
inline void log_warn(std::string_view msg, const LogFields& fields = {}) { log_line(LogLevel::kWarn, msg, fields); }
inline void log_info(std::string_view msg, const LogFields& fields = {}) { log_line(LogLevel::kInfo, msg, fields); }
inline void log_debug(std::string_view msg, const LogFields& fields = {}) { log_line(LogLevel::kDebug, msg, fields); }

}  // namespace gpupack
