#include "io/csv.h"

#include <fmt/format.h>

#include <charconv>
#include "io/input_error.h"
#include "util/files.h"
#include "util/strings.h"

namespace gpupack {
namespace {

// Splits one logical record starting at `pos`; advances pos past the record's
// line break. Returns false at end of input.
bool next_record(std::string_view text, size_t& pos, int& line, std::vector<std::string>& out,
                 const std::string& source) {
  out.clear();
  if (pos >= text.size()) return false;
  std::string field;
  bool quoted = false, was_quoted = false;
  const int start_line = line;
  while (pos < text.size()) {
    char c = text[pos++];
    if (quoted) {
      if (c == '"') {
        if (pos < text.size() && text[pos] == '"') {
          field += '"';
          ++pos;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && field.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(field));
      field.clear();
      was_quoted = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && pos < text.size() && text[pos] == '\n') ++pos;
      ++line;
      out.push_back(std::move(field));
      return true;
    } else {
      field += c;
    }
  }
  if (quoted) throw InputError(fmt::format("{}:{}: unterminated quoted field", source, start_line));
  ++line;
  out.push_back(std::move(field));
  return true;
}

}  // namespace

CsvTable CsvTable::read(const std::string& path) { return parse(read_file_bounded(path), path); }

CsvTable CsvTable::parse(std::string_view text, const std::string& source_name) {
  CsvTable t;
  t.source_ = source_name;
  size_t pos = 0;
  int line = 1;
  std::vector<std::string> rec;
  // Header: first non-empty record.
  while (true) {
    const int rec_line = line;
    if (!next_record(text, pos, line, rec, source_name))
      throw InputError(fmt::format("{}: empty file, expected a header row", source_name));
    if (rec.size() == 1 && rec[0].empty()) continue;
    t.header_ = rec;
    for (size_t i = 0; i < rec.size(); ++i) {
      if (!t.index_.emplace(rec[i], static_cast<int>(i)).second)
        throw InputError(fmt::format("{}:{}: duplicate column '{}'", source_name, rec_line, excerpt(rec[i])));
    }
    break;
  }
  while (true) {
    const int rec_line = line;
    if (!next_record(text, pos, line, rec, source_name)) break;
    if (rec.size() == 1 && rec[0].empty()) continue;
    if (rec.size() != t.header_.size())
      throw InputError(
          fmt::format("{}:{}: {} fields, header has {}", source_name, rec_line, rec.size(), t.header_.size()));
    t.rows_.push_back(Row{rec_line, std::move(rec)});
  }
  return t;
}

bool CsvTable::has_column(std::string_view name) const { return index_.count(std::string(name)) > 0; }

std::optional<int> CsvTable::find_column(std::string_view name) const {
  auto it = index_.find(std::string(name));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

int CsvTable::column(std::string_view name) const {
  auto c = find_column(name);
  if (!c) throw InputError(fmt::format("{}:1: missing column '{}'", source_, excerpt(name)));
  return *c;
}

const std::string& CsvTable::field(const Row& row, int column) const { return row.fields[column]; }

void CsvTable::fail(const Row& row, int column, const std::string& what) const {
  throw InputError(fmt::format("{}:{}: column '{}': {} (value '{}')", source_, row.line, excerpt(header_[column]),
                               excerpt(what, 300), excerpt(row.fields[column])));
}

int64_t CsvTable::int_field(const Row& row, int column, int64_t min_value, int64_t max_value) const {
  const std::string& s = row.fields[column];
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) fail(row, column, "not an integer");
  if (v < min_value || v > max_value) fail(row, column, fmt::format("out of range {}..{}", min_value, max_value));
  return v;
}

}  // namespace gpupack
